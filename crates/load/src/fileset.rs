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

/// One file of the set: its URL path and exact size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub path: String,
    pub size: u64,
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
        if m.objects.is_empty() || m.objects.iter().any(|o| o.files.is_empty()) {
            bail!("{}: no objects, or an object without files", path.display());
        }
        for f in m.objects.iter().flat_map(|o| &o.files) {
            if !f.path.starts_with('/') || f.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
                bail!("{}: bad path {:?}", path.display(), f.path);
            }
        }
        Ok(m)
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
            }];
            for e in 1..n {
                f.push(File {
                    path: format!("/o{id:04}/e{e:02}.bin"),
                    size: size(&embedded, &mut rng),
                });
            }
            objects.push(WebObject { files: f });
            left -= n;
        }
    }
    let mut m = Manifest {
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
