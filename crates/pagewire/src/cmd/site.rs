//! `pagewire site`: generate a test site.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use pagewire_site::microscape;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub site: Site,
    /// Print what was written as one JSON object (instead of the tables).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(clap::Subcommand)]
pub enum Site {
    /// The Microscape page of paper 001 (synthetic: one 42 KB HTML page and
    /// 42 inline GIFs matching the published composition).
    Microscape {
        /// Directory to write index.html, images/ and MICROSCAPE.txt into.
        #[arg(long)]
        out: PathBuf,
        /// Seed; the same seed gives the same bytes everywhere.
        #[arg(long, default_value_t = super::DEFAULT_SEED)]
        seed: u64,
        /// Write every HTML tag and attribute name in lower case (paper 001
        /// section 8.3: tag case changes how well the page compresses).
        #[arg(long)]
        lowercase: bool,
        /// `original` (the paper's test page) or `css`: the page after paper
        /// 001 section 9 (22 images replaced by HTML+CSS, 3 half replaced,
        /// every other GIF converted to PNG, the animations to APNG).
        #[arg(long, default_value = "original")]
        variant: microscape::Variant,
    },
    /// The SURGE file set of paper 004 (Barford & Crovella): web objects
    /// (HTML base pages with their embedded files, and single files) with
    /// sizes from Table 8's models, plus manifest.json for `pagewire load`.
    Surge {
        /// Directory to write the files and manifest.json into.
        #[arg(long)]
        out: PathBuf,
        /// Number of files (the paper: 2000, about 50 MB).
        #[arg(long, default_value_t = pagewire_load::fileset::DEFAULT_FILES)]
        files: usize,
        /// Seed of the file set; the same seed gives the same bytes
        /// everywhere. Its default (4) is the file set's, the one `bench
        /// surge` serves, not the seed of the other commands (1997): that
        /// one seeds the request stream (`load --seed`).
        #[arg(long, default_value_t = pagewire_load::fileset::DEFAULT_SEED)]
        seed: u64,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.site {
        Site::Surge { out, files, seed } => {
            use pagewire_load::fileset;
            if !(1..=1_000_000).contains(&files) {
                crate::usage_bail!("--files must be between 1 and 1000000");
            }
            let m = fileset::generate(files, seed, &pagewire_load::model::Params::default());
            fileset::write(&m, &out)
                .with_context(|| format!("writing the SURGE site to {}", out.display()))?;
            let composite = m.objects.iter().filter(|o| o.files.len() > 1).count();
            let embedded: usize = m.objects.iter().map(|o| o.files.len() - 1).sum();
            if args.json {
                let doc = serde_json::json!({
                    "site": "surge",
                    "seed": seed,
                    "out": out.display().to_string(),
                    "web_objects": m.objects.len(),
                    "base_pages": composite,
                    "embedded_files": embedded,
                    "single_files": m.objects.len() - composite,
                    "files": m.files,
                    "bytes": m.bytes,
                    "manifest": fileset::MANIFEST,
                });
                println!("{doc}");
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "SURGE file set, seed {seed}: {} web objects ({composite} base pages with {embedded} embedded files, {} single files)",
                m.objects.len(),
                m.objects.len() - composite
            );
            println!(
                "wrote {} files ({} bytes, {:.1} MB) and {} to {}",
                m.files,
                m.bytes,
                m.bytes as f64 / 1e6,
                fileset::MANIFEST,
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Site::Microscape {
            out,
            seed,
            lowercase,
            variant,
        } => {
            let options = microscape::Options { seed, lowercase };
            let (site, table) = match variant {
                microscape::Variant::Original => {
                    let site = microscape::generate(options);
                    let table = site.composition().table();
                    (site, table)
                }
                microscape::Variant::Css => {
                    let (site, c) = microscape::css::generate(options)?;
                    (site, c.table())
                }
            };
            site.write_to_dir(&out)
                .with_context(|| format!("writing the Microscape site to {}", out.display()))?;
            if args.json {
                let doc = serde_json::json!({
                    "site": "microscape",
                    "seed": seed,
                    "variant": variant.name(),
                    "lowercase": lowercase,
                    "out": out.display().to_string(),
                    "files": 1 + site.images.len(),
                    "bytes": site.html.len() + site.images.iter().map(|i| i.bytes.len()).sum::<usize>(),
                    "html_bytes": site.html.len(),
                    "images": site.images.iter().map(|i| serde_json::json!({
                        "path": i.path, "bytes": i.bytes.len()
                    })).collect::<Vec<_>>(),
                });
                println!("{doc}");
                return Ok(ExitCode::SUCCESS);
            }
            print!("{table}");
            println!(
                "wrote {} files ({} bytes) to {}",
                1 + site.images.len(),
                site.html.len() + site.images.iter().map(|i| i.bytes.len()).sum::<usize>(),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
