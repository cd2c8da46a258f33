//! The test files of Fujinoki, Sanjay, Shah (Table 2): groups of 10 sets of
//! 100 text files with mean size 4, 16 and 32 KB, sizes from a bounded
//! Pareto distribution (shape 0.63, after Arlitt and Williamson), and for
//! each set the bundles served as one response: the object package (the
//! paper's groups #4-#6), a multipart/related (MHTML-style) body and a tar
//! stream. All deterministic from a seed; written to disk because the paper's
//! servers read every file from the disk per request.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use pagewire_objpack::{Attributes, Entry, Limits, Manifest};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Files per set (Table 2).
pub const FILES_PER_SET: usize = 100;
/// Mean file sizes of the three groups, bytes (Table 2: 4, 16, 32 KB).
pub const GROUP_MEANS: [usize; 3] = [4 << 10, 16 << 10, 32 << 10];
/// Pareto shape (the paper, after Arlitt and Williamson: alpha = 0.63).
pub const ALPHA: f64 = 0.63;
/// Bounds of the bounded Pareto relative to the group mean. The paper does
/// not give its k and p; these are assumed. Each set is then scaled to the
/// group mean exactly, so every set of a group carries the same bytes (the
/// paper does not say it did this), and the scaled sizes leave these bounds
/// (a set whose draws sum below the target is scaled up: maxima 18-24 x
/// the mean in the 2026-11-22 sets).
pub const MIN_OVER_MEAN: f64 = 1.0 / 16.0;
pub const MAX_OVER_MEAN: f64 = 16.0;

/// One set of 100 files on disk, with its bundles.
#[derive(Clone, Debug)]
pub struct FileSet {
    pub group_mean: usize,
    pub index: usize,
    pub dir: PathBuf,
    /// (name, size, CRC-32) in order.
    pub files: Vec<(String, usize, u32)>,
    pub objp: PathBuf,
    /// The package with the paper-sized attribute record (1 byte per file).
    pub objp1: PathBuf,
    pub tar: PathBuf,
    pub mhtml: PathBuf,
    /// The multipart boundary (not in any file).
    pub boundary: String,
}

impl FileSet {
    pub fn total_bytes(&self) -> usize {
        self.files.iter().map(|f| f.1).sum()
    }
}

/// Version field of the paper-sized package (a bench-only variant of
/// format version 1: the same 16-byte header and CRC-checked object
/// information field, but each attribute record is 1 byte).
pub const PAPER_VERSION: u16 = 0xFF01;

/// The paper-sized package: header, then count (u32), the NUL-terminated
/// names, the sizes (u64), one attribute byte per file (bit 0 text, bit 1
/// executable, bit 2 read-only), then the data. Big-endian like version 1.
pub fn paper_package(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut info = Vec::new();
    info.extend_from_slice(&(files.len() as u32).to_be_bytes());
    for (n, _) in files {
        info.extend_from_slice(n.as_bytes());
        info.push(0);
    }
    for (_, b) in files {
        info.extend_from_slice(&(b.len() as u64).to_be_bytes());
    }
    info.extend(std::iter::repeat_n(0b101u8, files.len()));
    let mut out =
        Vec::with_capacity(16 + info.len() + files.iter().map(|f| f.1.len()).sum::<usize>());
    out.extend_from_slice(b"OBJP");
    out.extend_from_slice(&PAPER_VERSION.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&(info.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&info).to_be_bytes());
    out.extend_from_slice(&info);
    for (_, b) in files {
        out.extend_from_slice(b);
    }
    out
}

/// The (name, size) rows of a paper-sized object information field.
pub fn parse_paper_table(info: &[u8]) -> Result<Vec<(String, u64)>> {
    anyhow::ensure!(info.len() >= 4, "table shorter than its count");
    let count = u32::from_be_bytes(info[..4].try_into().expect("4")) as usize;
    anyhow::ensure!(count <= info.len(), "count {count} too large for the table");
    let mut at = 4;
    let mut names = Vec::with_capacity(count);
    for _ in 0..count {
        let end = info[at..]
            .iter()
            .position(|&b| b == 0)
            .context("name without its NUL")?;
        names.push(String::from_utf8(info[at..at + end].to_vec()).context("name not UTF-8")?);
        at += end + 1;
    }
    anyhow::ensure!(
        info.len() == at + 9 * count,
        "table length does not match its count"
    );
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let o = at + 8 * i;
            (n, u64::from_be_bytes(info[o..o + 8].try_into().expect("8")))
        })
        .collect())
}

/// Inverse-CDF draw from a bounded Pareto on [lo, hi] with shape `alpha`.
pub fn bounded_pareto(u: f64, lo: f64, hi: f64, alpha: f64) -> f64 {
    let r = (lo / hi).powf(alpha);
    lo / (1.0 - u * (1.0 - r)).powf(1.0 / alpha)
}

/// Sizes of one set: bounded Pareto, scaled so the mean is `mean` exactly.
pub fn set_sizes(rng: &mut ChaCha8Rng, mean: usize) -> Vec<usize> {
    let (lo, hi) = (mean as f64 * MIN_OVER_MEAN, mean as f64 * MAX_OVER_MEAN);
    let raw: Vec<f64> = (0..FILES_PER_SET)
        .map(|_| bounded_pareto(rng.random::<f64>(), lo, hi, ALPHA))
        .collect();
    let total = (mean * FILES_PER_SET) as f64;
    let scale = total / raw.iter().sum::<f64>();
    let mut sizes: Vec<usize> = raw.iter().map(|x| ((x * scale) as usize).max(1)).collect();
    // Put the rounding remainder on the largest file.
    let sum: usize = sizes.iter().sum();
    let (imax, _) = sizes
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| **s)
        .expect("100 files");
    sizes[imax] = (sizes[imax] + mean * FILES_PER_SET)
        .saturating_sub(sum)
        .max(1);
    sizes
}

/// Printable text (the paper's "Text Files"): words and newlines.
fn text(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz      ,.ETAOIN";
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        if out.len() % 72 == 71 {
            out.push(b'\n');
        } else {
            out.push(ALPHABET[rng.random_range(0..ALPHABET.len())]);
        }
    }
    out
}

/// A POSIX ustar header block for a regular file.
fn tar_header(name: &str, size: usize) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// The generator of set `set` of group `group` (index into
/// [`GROUP_MEANS`]): its sizes are [`set_sizes`] of it, drawn first.
pub fn set_rng(seed: u64, group: usize, set: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ ((group as u64) << 32) ^ set as u64)
}

/// Writes every set of every group under `dir` (deterministic from `seed`).
pub fn generate(dir: &Path, seed: u64, sets: usize) -> Result<Vec<FileSet>> {
    let mut out = Vec::new();
    for (g, &mean) in GROUP_MEANS.iter().enumerate() {
        for s in 0..sets {
            let mut rng = set_rng(seed, g, s);
            let set_dir = dir.join(format!("{}k", mean >> 10)).join(format!("set{s}"));
            fs::create_dir_all(&set_dir)
                .with_context(|| format!("create {}", set_dir.display()))?;
            let sizes = set_sizes(&mut rng, mean);
            let bodies: Vec<(String, Vec<u8>)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| (format!("f{i:03}.txt"), text(&mut rng, n)))
                .collect();
            let boundary = format!("pw-{:016x}", rng.random::<u64>());
            for (name, body) in &bodies {
                fs::write(set_dir.join(name), body)?;
                anyhow::ensure!(
                    !body
                        .windows(boundary.len())
                        .any(|w| w == boundary.as_bytes()),
                    "boundary in a file"
                );
            }
            let attrs = Attributes {
                text: true,
                read_only: true,
                media_type: "text/plain".into(),
                ..Attributes::default()
            };
            let entries = bodies
                .iter()
                .map(|(n, b)| Entry {
                    name: n.clone(),
                    size: b.len() as u64,
                    attrs: attrs.clone(),
                })
                .collect();
            let m = Manifest::new(entries, &Limits::default())?;
            let objp = set_dir.join("set.objp");
            fs::write(&objp, m.assemble(bodies.iter().map(|(_, b)| b.as_slice())))?;
            let objp1 = set_dir.join("set.objp1");
            fs::write(&objp1, paper_package(&bodies))?;
            let mut tar = Vec::new();
            for (n, b) in &bodies {
                tar.extend_from_slice(&tar_header(n, b.len()));
                tar.extend_from_slice(b);
                tar.resize(tar.len().div_ceil(512) * 512, 0);
            }
            tar.resize(tar.len() + 1024, 0);
            let tar_path = set_dir.join("set.tar");
            fs::write(&tar_path, tar)?;
            let mut mh = Vec::new();
            for (n, b) in &bodies {
                mh.extend_from_slice(
                    format!(
                        "--{boundary}\r\nContent-Type: text/plain\r\nContent-Location: {n}\r\n\r\n"
                    )
                    .as_bytes(),
                );
                mh.extend_from_slice(b);
                mh.extend_from_slice(b"\r\n");
            }
            mh.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            let mhtml = set_dir.join("set.mhtml");
            fs::write(&mhtml, mh)?;
            out.push(FileSet {
                group_mean: mean,
                index: s,
                dir: set_dir,
                files: bodies
                    .iter()
                    .map(|(n, b)| (n.clone(), b.len(), crc32fast::hash(b)))
                    .collect(),
                objp,
                objp1,
                tar: tar_path,
                mhtml,
                boundary,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_have_the_group_mean_and_a_heavy_tail() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for mean in GROUP_MEANS {
            let s = set_sizes(&mut rng, mean);
            assert_eq!(s.len(), 100);
            assert_eq!(s.iter().sum::<usize>(), 100 * mean);
            let mut sorted = s.clone();
            sorted.sort();
            // Heavy tail: the median is well below the mean.
            assert!(sorted[50] < mean, "{mean}: median {}", sorted[50]);
        }
        let x = bounded_pareto(0.0, 10.0, 1000.0, ALPHA);
        assert!((x - 10.0).abs() < 1e-9);
        let x = bounded_pareto(1.0, 10.0, 1000.0, ALPHA);
        assert!((x - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn paper_package_table_round_trips_and_is_127_bytes_per_file_smaller() {
        let files: Vec<(String, Vec<u8>)> = (0..100)
            .map(|i| (format!("f{i:03}.txt"), vec![b'a'; i * 7 + 1]))
            .collect();
        let p = paper_package(&files);
        let info_len = u32::from_be_bytes(p[8..12].try_into().unwrap()) as usize;
        let rows = parse_paper_table(&p[16..16 + info_len]).unwrap();
        assert_eq!(rows.len(), 100);
        assert_eq!(rows[3], ("f003.txt".to_string(), 22));
        let attrs = Attributes {
            text: true,
            read_only: true,
            media_type: "text/plain".into(),
            ..Attributes::default()
        };
        let entries = files
            .iter()
            .map(|(n, b)| Entry {
                name: n.clone(),
                size: b.len() as u64,
                attrs: attrs.clone(),
            })
            .collect();
        let v1 = Manifest::new(entries, &Limits::default())
            .unwrap()
            .assemble(files.iter().map(|(_, b)| b.as_slice()));
        assert_eq!(v1.len() - p.len(), 127 * 100);
        // A table cut short or with a wrong count is refused.
        assert!(parse_paper_table(&p[16..16 + info_len - 1]).is_err());
        assert!(parse_paper_table(&[0, 0, 0, 9]).is_err());
    }

    #[test]
    fn tar_header_checksum_is_valid() {
        let h = tar_header("f000.txt", 1234);
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut c = h;
        c[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, c.iter().map(|&b| u32::from(b)).sum::<u32>());
    }
}
