//! Measures what the store's compression levels cost at load time, to back
//! the choice of `CompressionLevels::default()` (docs/server.md).
//!
//! cargo run --release -p pagewire-server --example store_load
use std::time::Instant;

use pagewire_site::microscape;
use pagewire_site::store::{CompressionLevels, Encoding, LoadOptions, Site};

fn main() {
    let m = microscape::generate(microscape::Options::default());
    let html = m.html.clone();
    println!("Microscape page: {} bytes", html.len());
    for brotli in [5u32, 9, 11] {
        for zstd in [9i32, 19] {
            let levels = CompressionLevels {
                zlib: 6,
                brotli,
                zstd,
            };
            let files = m.site_files();
            let t = Instant::now();
            let reps = 5;
            let mut site = None;
            for _ in 0..reps {
                site = Some(Site::from_files_with(
                    files.clone(),
                    &LoadOptions {
                        levels,
                        no_compression: false,
                    },
                ));
            }
            let per_load = t.elapsed() / reps;
            let site = site.expect("loaded");
            let page = site.get("/index.html").expect("page");
            let size = |e| page.variant(e).map_or(0, |b| b.len());
            println!(
                "zlib 6 brotli q{brotli:>2} zstd {zstd:>2}: load {:>8.1?}  page br {} B, zstd {} B, gzip {} B, deflate {} B",
                per_load,
                size(Encoding::Br),
                size(Encoding::Zstd),
                size(Encoding::Gzip),
                size(Encoding::Deflate)
            );
        }
    }
    // A SURGE-sized text load: 2000 files of 10-40 KB of HTML-like text.
    let files: Vec<_> = (0..2000)
        .map(|i| pagewire_site::store::SiteFile {
            path: format!("/f{i}.html"),
            body: html.slice(..(10_000 + (i * 37) % 30_000).min(html.len())),
            modified: std::time::SystemTime::now(),
        })
        .collect();
    let total: usize = files.iter().map(|f| f.body.len()).sum();
    for (zlib, brotli, zstd) in [(6u32, 5u32, 9i32), (6, 5, 19), (9, 9, 19)] {
        let levels = CompressionLevels { zlib, brotli, zstd };
        let t = Instant::now();
        let site = Site::from_files_with(
            files.clone(),
            &LoadOptions {
                levels,
                no_compression: false,
            },
        );
        let bytes = |e| {
            site.iter()
                .map(|r| r.variant(e).map_or(0, |b| b.len()))
                .sum::<usize>()
        };
        println!(
            "2000 text files, {:.1} MB, zlib {zlib} brotli q{brotli} zstd {zstd}: load {:.2?}; deflate {:.2} MB, br {:.2} MB, zstd {:.2} MB ({} threads)",
            total as f64 / 1e6,
            t.elapsed(),
            bytes(Encoding::Deflate) as f64 / 1e6,
            bytes(Encoding::Br) as f64 / 1e6,
            bytes(Encoding::Zstd) as f64 / 1e6,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
}
