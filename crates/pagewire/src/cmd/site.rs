//! `pagewire site`: generate a test site.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use pagewire_site::microscape;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub site: Site,
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
        #[arg(long, default_value_t = microscape::DEFAULT_SEED)]
        seed: u64,
        /// Write every HTML tag and attribute name in lower case (paper 001
        /// section 8.3: tag case changes how well the page compresses).
        #[arg(long)]
        lowercase: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.site {
        Site::Microscape {
            out,
            seed,
            lowercase,
        } => {
            let site = microscape::generate(microscape::Options { seed, lowercase });
            site.write_to_dir(&out)
                .with_context(|| format!("writing the Microscape site to {}", out.display()))?;
            print!("{}", site.composition().table());
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
