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
    /// Print the result as one JSON object on stdout: the files written
    /// (name, size, path), and the error if the package was refused.
    #[arg(long)]
    pub json: bool,
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
    let (verbose, json) = (args.verbose, args.json);
    let mut files = Vec::new();
    let result = unpack_to_dir(input, &args.out, Limits::default(), |entry, path| {
        if json {
            files.push(serde_json::json!({
                "name": entry.name, "size": entry.size, "path": path.display().to_string()
            }));
        } else if verbose {
            println!("{} {}", entry.size, path.display());
        }
    });
    if json {
        let (error, incomplete) = match &result {
            Ok(_) => (None, None),
            Err(e) => (Some(e.to_string()), e.incomplete_file().map(str::to_string)),
        };
        let doc = serde_json::json!({
            "out": args.out.display().to_string(),
            "files": files.len(),
            "entries": files,
            "error": error,
            "incomplete_file": incomplete,
        });
        println!("{doc}");
        return Ok(if result.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
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
