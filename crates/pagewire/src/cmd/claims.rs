//! `pagewire claims DIR [--json]`: re-judge any results directory of any
//! suite (microscape, its section-9 CSS page, objpack, conn-length, getall,
//! surge, a prefetch simulator's output) from its run records alone, by the
//! one decision rule of docs/claims.md, and print the claims table the
//! bench prints (or the same as JSON).
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A results directory (with results.json, or a prefetch simulator's
    /// summary.json and results.jsonl), or a results.json file.
    pub dir: PathBuf,
    /// Print the judged claims as JSON (suite, records, runs left out,
    /// claims with cells, bands and verdicts, the four-number tally).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let judged = match pagewire_lab::claims::judge_dir(&args.dir) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("pagewire claims: {}: {e:#}", args.dir.display());
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&judged)?);
    } else {
        print!("{}", judged.render());
    }
    Ok(ExitCode::SUCCESS)
}
