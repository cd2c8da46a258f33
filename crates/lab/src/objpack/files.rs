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
/// group mean exactly, so every set of a group carries the same bytes.
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

/// Writes every set of every group under `dir` (deterministic from `seed`).
pub fn generate(dir: &Path, seed: u64, sets: usize) -> Result<Vec<FileSet>> {
    let mut out = Vec::new();
    for (g, &mean) in GROUP_MEANS.iter().enumerate() {
        for s in 0..sets {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((g as u64) << 32) ^ s as u64);
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
    fn tar_header_checksum_is_valid() {
        let h = tar_header("f000.txt", 1234);
        let stored = u32::from_str_radix(std::str::from_utf8(&h[148..154]).unwrap(), 8).unwrap();
        let mut c = h;
        c[148..156].copy_from_slice(b"        ");
        assert_eq!(stored, c.iter().map(|&b| u32::from(b)).sum::<u32>());
    }
}
