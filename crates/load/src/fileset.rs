//! The SURGE file set: web objects (a base HTML page and its embedded
//! files, or a single file) with sizes from Table 8's models, written as a
//! directory any web server can serve, plus `manifest.json` that the load
//! generator reads.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::model::{Model, Params};

/// Paper 004: "Surge was configured with 2000 unique files".
pub const DEFAULT_FILES: usize = 2000;
pub const DEFAULT_SEED: u64 = 4;
pub const MANIFEST: &str = "manifest.json";
/// Manifest format: 2 = every file carries its popularity rank, and sizes
/// are matched to popularity (older manifests must be regenerated).
pub const FORMAT: u32 = 2;

/// One file of the set: its URL path and exact size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub path: String,
    pub size: u64,
    /// Popularity rank over all files of the set (1 = most requested):
    /// the Zipf rank of the request stream. 0 in old manifests.
    #[serde(default)]
    pub rank: u32,
}

/// A web object: `files[0]` is the base page (or the single file), the
/// rest are its embedded files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebObject {
    pub files: Vec<File>,
}

impl WebObject {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`]; 0 or 1 in manifests written before popularity per file.
    #[serde(default)]
    pub format: u32,
    pub generator: String,
    pub seed: u64,
    pub files: usize,
    pub bytes: u64,
    pub objects: Vec<WebObject>,
}

impl Manifest {
    /// Reads and checks `DIR/manifest.json`.
    pub fn load(dir: &Path) -> anyhow::Result<Manifest> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {} (make the site with `pagewire site surge --out {}`)",
                path.display(),
                dir.display()
            )
        })?;
        let m: Manifest =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if m.format != FORMAT {
            bail!(
                "{}: manifest format {} (this pagewire reads format {FORMAT}: popularity per file); \
                 regenerate it with `pagewire site surge --out {}`",
                path.display(),
                m.format,
                dir.display()
            );
        }
        if m.objects.is_empty() || m.objects.iter().any(|o| o.files.is_empty()) {
            bail!("{}: no objects, or an object without files", path.display());
        }
        let n = m.objects.iter().map(|o| o.files.len()).sum::<usize>();
        let mut seen = vec![false; n];
        for f in m.objects.iter().flat_map(|o| &o.files) {
            let r = f.rank as usize;
            if r == 0 || r > n || std::mem::replace(&mut seen[r - 1], true) {
                bail!(
                    "{}: {}: popularity rank {} is not a permutation of 1..={n}",
                    path.display(),
                    f.path,
                    f.rank
                );
            }
            if !f.path.starts_with('/') || f.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
                bail!("{}: bad path {:?}", path.display(), f.path);
            }
        }
        Ok(m)
    }
}

impl Manifest {
    /// Every file's size, in manifest order (the flat file index).
    pub fn sizes(&self) -> Vec<u64> {
        self.objects
            .iter()
            .flat_map(|o| o.files.iter().map(|f| f.size))
            .collect()
    }

    /// For every popularity rank (0-based), the flat indices of the files a
    /// reference to it fetches: a base page and its embedded files, or one
    /// file.
    pub fn references(&self) -> Vec<Vec<u32>> {
        let n: usize = self.objects.iter().map(|o| o.files.len()).sum();
        let mut refs = vec![Vec::new(); n];
        let mut id = 0u32;
        for o in &self.objects {
            let first = id;
            for f in &o.files {
                refs[f.rank as usize - 1] = vec![id];
                id += 1;
            }
            if o.files.len() > 1 {
                refs[o.files[0].rank as usize - 1] = (first..id).collect();
            }
        }
        refs
    }
}

/// What one body-content generator writes.
enum Body {
    Html {
        embedded: Vec<String>,
        title: String,
    },
    Binary,
}

/// Generates the set (sizes and names; contents are written by `write`).
pub fn generate(files: usize, seed: u64, params: &Params) -> Manifest {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let base = Model::hybrid(params.base_body, params.base_tail);
    let embedded = Model::lognormal(params.embedded);
    let single1 = Model::lognormal(params.single1);
    let single2 = Model::lognormal(params.single2);
    let refs = Model::pareto(params.embedded_refs);
    let size = |m: &Model, rng: &mut ChaCha8Rng| -> u64 {
        (m.sample(rng).round() as u64).clamp(1, params.max_file_bytes)
    };
    let mut objects = Vec::new();
    let mut left = files;
    while left > 0 {
        let id = objects.len();
        let single = rng.random::<f64>() < params.single_share || left == 1;
        if single {
            let m = if rng.random::<f64>() < params.single2_weight {
                &single2
            } else {
                &single1
            };
            objects.push(WebObject {
                files: vec![File {
                    path: format!("/s{id:04}.bin"),
                    size: size(m, &mut rng),
                    rank: 0,
                }],
            });
            left -= 1;
        } else {
            // Files in the object, base included (paper 004 Appendix A).
            let n = (refs.sample(&mut rng).floor() as usize)
                .clamp(2, params.max_files_per_object)
                .min(left);
            let mut f = vec![File {
                path: format!("/o{id:04}.html"),
                size: size(&base, &mut rng),
                rank: 0,
            }];
            for e in 1..n {
                f.push(File {
                    path: format!("/o{id:04}/e{e:02}.bin"),
                    size: size(&embedded, &mut rng),
                    rank: 0,
                });
            }
            objects.push(WebObject { files: f });
            left -= n;
        }
    }
    match_popularity(&mut objects, seed, params);
    let mut m = Manifest {
        format: FORMAT,
        generator: format!("pagewire site surge --files {files} --seed {seed}"),
        seed,
        files,
        bytes: 0,
        objects,
    };
    // HTML pages can be no smaller than their markup: fix sizes to what is written.
    for (i, o) in m.objects.iter_mut().enumerate() {
        if o.files[0].path.ends_with(".html") {
            let embedded: Vec<String> = o.files[1..].iter().map(|f| f.path.clone()).collect();
            let min =
                html_page(&embedded, &title(i), 0, &mut ChaCha8Rng::seed_from_u64(0)).len() as u64;
            o.files[0].size = o.files[0].size.max(min);
        }
    }
    m.bytes = m.objects.iter().map(WebObject::bytes).sum();
    m
}

/// What a file is in its web object (its size model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Base,
    Embedded,
    Single,
}

/// The role of file `j` of object `o`.
pub fn role(o: &WebObject, j: usize) -> Role {
    if o.files.len() == 1 {
        Role::Single
    } else if j == 0 {
        Role::Base
    } else {
        Role::Embedded
    }
}

/// Zipf weight of popularity rank `r` (unnormalised).
pub fn zipf_weight(rank: u32, s: f64) -> f64 {
    (rank.max(1) as f64).powf(-s)
}

/// A uniform random permutation of `0..n` (Fisher-Yates).
fn permutation(n: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..=i);
        v.swap(i, j);
    }
    v
}

/// Popularity per file, and file sizes matched to it (SURGE's approach:
/// "Popularity is the distribution of requests on a per-file basis").
///
/// 1. Zipf ranks are dealt to the files in a random order (its own seed),
///    independently of size and of the object a file belongs to.
/// 2. A reference to a base page fetches its embedded files too, so a
///    file's share of the GETs is its own Zipf weight plus, for an
///    embedded file, its base page's.
/// 3. The files, in a random order, are laid along [0, 1] with widths equal
///    to those GET shares; each file's target size is Table 8's request-size
///    model's quantile at the middle of its interval, so that the GET-weighted
///    targets follow the request-size model.
/// 4. Within each size model (base, embedded, single) the drawn sizes are
///    dealt out again, the file with the largest GET share first, each file
///    taking the remaining size closest (in log) to its target. The server's
///    sizes per model are unchanged (a permutation); the requested bytes
///    approach the request-size model as far as those sizes allow.
fn match_popularity(objects: &mut [WebObject], seed: u64, params: &Params) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x9090_0B0B_7070_0A0A);
    let ids: Vec<(usize, usize)> = objects
        .iter()
        .enumerate()
        .flat_map(|(i, o)| (0..o.files.len()).map(move |j| (i, j)))
        .collect();
    let n = ids.len();
    let deal = permutation(n, &mut rng);
    for (k, &f) in deal.iter().enumerate() {
        let (i, j) = ids[f];
        objects[i].files[j].rank = k as u32 + 1;
    }
    let own: Vec<f64> = ids
        .iter()
        .map(|&(i, j)| zipf_weight(objects[i].files[j].rank, params.zipf_s))
        .collect();
    let mut share: Vec<f64> = ids
        .iter()
        .enumerate()
        .map(|(f, &(i, j))| {
            let base = if role(&objects[i], j) == Role::Embedded {
                zipf_weight(objects[i].files[0].rank, params.zipf_s)
            } else {
                0.0
            };
            own[f] + base
        })
        .collect();
    let total: f64 = share.iter().sum();
    share.iter_mut().for_each(|g| *g /= total);
    let req = Model::hybrid(params.request_body, params.request_tail);
    let mut target = vec![0.0; n];
    let mut acc = 0.0;
    for f in permutation(n, &mut rng) {
        target[f] = req.quantile((acc + share[f] / 2.0).clamp(1e-12, 1.0 - 1e-12));
        acc += share[f];
    }
    for r in [Role::Base, Role::Embedded, Role::Single] {
        let mut members: Vec<usize> = (0..n)
            .filter(|&f| role(&objects[ids[f].0], ids[f].1) == r)
            .collect();
        let mut pool: Vec<u64> = members
            .iter()
            .map(|&f| objects[ids[f].0].files[ids[f].1].size)
            .collect();
        pool.sort_unstable();
        members.sort_by(|&a, &b| share[b].total_cmp(&share[a]).then(a.cmp(&b)));
        for f in members {
            let t = target[f].ln();
            let at = pool.partition_point(|&s| (s as f64).ln() < t);
            let pick = [at.checked_sub(1), (at < pool.len()).then_some(at)]
                .into_iter()
                .flatten()
                .min_by(|&a, &b| {
                    ((pool[a] as f64).ln() - t)
                        .abs()
                        .total_cmp(&((pool[b] as f64).ln() - t).abs())
                })
                .expect("pool holds one size per member");
            objects[ids[f].0].files[ids[f].1].size = pool.remove(pick);
        }
    }
}

/// Writes every file and the manifest into `dir` (created if missing).
pub fn write(manifest: &Manifest, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut rng = ChaCha8Rng::seed_from_u64(manifest.seed ^ 0x00B0_D1E5);
    for (i, o) in manifest.objects.iter().enumerate() {
        for (j, f) in o.files.iter().enumerate() {
            let body = if j == 0 && f.path.ends_with(".html") {
                Body::Html {
                    embedded: o.files[1..].iter().map(|f| f.path.clone()).collect(),
                    title: title(i),
                }
            } else {
                Body::Binary
            };
            let bytes = match body {
                Body::Html { embedded, title } => {
                    let page = html_page(&embedded, &title, f.size as usize, &mut rng);
                    assert_eq!(page.len() as u64, f.size, "page size is exact");
                    page.into_bytes()
                }
                Body::Binary => {
                    let mut b = vec![0u8; f.size as usize];
                    rng.fill_bytes(&mut b);
                    b
                }
            };
            let path = dir.join(&f.path[1..]);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    let json = serde_json::to_string_pretty(manifest)?;
    std::fs::write(dir.join(MANIFEST), json + "\n")
        .with_context(|| format!("writing {}", dir.join(MANIFEST).display()))?;
    Ok(())
}

fn title(object: usize) -> String {
    format!("SURGE web object {object}")
}

const WORDS: &[&str] = &[
    "web",
    "server",
    "object",
    "page",
    "user",
    "request",
    "file",
    "session",
    "latency",
    "link",
    "connection",
    "persistent",
    "pipeline",
    "cache",
    "popular",
    "locality",
    "think",
    "time",
];

/// A real HTML page of exactly `size` bytes (or its minimal markup if
/// larger) that references `embedded` with `<img>` tags.
fn html_page(embedded: &[String], title: &str, size: usize, rng: &mut ChaCha8Rng) -> String {
    let mut head = String::new();
    let _ = write!(
        head,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n"
    );
    for e in embedded {
        let _ = writeln!(head, "<img src=\"{e}\" alt=\"\">");
    }
    let tail = "</body></html>\n";
    let mut filler = String::new();
    let budget = size.saturating_sub(head.len() + tail.len());
    if budget >= 8 {
        filler.push_str("<p>");
        while filler.len() + 5 < budget {
            let w = WORDS[rng.random_range(0..WORDS.len())];
            filler.push_str(w);
            filler.push(if rng.random_range(0..12) == 0 {
                '\n'
            } else {
                ' '
            });
        }
        filler.truncate(budget - 5);
        filler.push_str("</p>\n");
        while filler.len() < budget {
            filler.insert(filler.len() - 5, ' ');
        }
    } else {
        filler = "\n".repeat(budget);
    }
    head + &filler + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_set_has_the_papers_shape() {
        let m = generate(DEFAULT_FILES, DEFAULT_SEED, &Params::default());
        let files: usize = m.objects.iter().map(|o| o.files.len()).sum();
        assert_eq!(files, 2000);
        // "about 50 MB" (paper 004 section 3).
        assert!((35e6..70e6).contains(&(m.bytes as f64)), "{}", m.bytes);
    }

    #[test]
    fn pages_have_exact_sizes() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for size in [0, 10, 200, 201, 5000, 77_777] {
            let p = html_page(&["/o1/e01.bin".into()], "t", size, &mut rng);
            let min = html_page(&["/o1/e01.bin".into()], "t", 0, &mut rng).len();
            assert_eq!(p.len(), size.max(min), "size {size}");
        }
    }
}
