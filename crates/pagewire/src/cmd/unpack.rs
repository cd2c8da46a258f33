//! `pagewire unpack`: unpack an object package into a directory, each file
//! appearing under its final name when it is complete.
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use pagewire_objpack::unpack::unpack_to_dir;
use pagewire_objpack::Limits;

#[derive(clap::Args)]
pub struct Args {
    /// The package file, or `-` for standard input.
    pub package: PathBuf,
    /// Directory to unpack into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Print each file as it completes.
    #[arg(long, short)]
    pub verbose: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let input: Box<dyn Read> = if args.package.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(
            std::fs::File::open(&args.package)
                .map_err(|e| anyhow::anyhow!("{}: {e}", args.package.display()))?,
        )
    };
    let verbose = args.verbose;
    let result = unpack_to_dir(input, &args.out, Limits::default(), |entry, path| {
        if verbose {
            println!("{} {}", entry.size, path.display());
        }
    });
    match result {
        Ok(n) => {
            eprintln!("unpacked {n} files into {}", args.out.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // "incomplete file" only where the package ended inside one; a
            // refused table or a failed write says so in its own words.
            match e.incomplete_file() {
                Some(name) => eprintln!("pagewire: unpack: incomplete file {name:?}: {e}"),
                None => eprintln!("pagewire: unpack: {e}"),
            }
            Ok(ExitCode::from(1))
        }
    }
}
