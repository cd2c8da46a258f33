//! `pagewire claims DIR [--json] [--write]`: re-judge any results directory
//! of any suite (microscape, its section-9 CSS page, objpack, conn-length,
//! getall, surge, a prefetch simulator's output) from its run records
//! alone, by the one decision rule of docs/claims.md, and print the claims
//! table the bench prints (or the same as JSON).
//!
//! With `--write`, the re-judged claims replace the `claims` recorded in
//! results.json, beside a `judged_by` record (the build, command and date
//! of this judgement; the run's own `provenance` is left as it was: it
//! says what measured), and the table is written to `claims.txt`. That is
//! how a results directory made before a rule changed is brought under the
//! current rule without pretending it was re-measured.
//!
//! With `--pool DIR1 DIR2 ...`, paper 001's claims are judged on the run
//! records of several runs of the same plan, link configurations and
//! commit at once (more repetitions, narrower intervals); runs that differ
//! in anything that changes what is measured are refused, naming the
//! difference.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct Args {
    /// A results directory (with results.json, or a prefetch simulator's
    /// summary.json and results.jsonl), or a results.json file; with
    /// --pool, two or more.
    #[arg(required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Print the judged claims as JSON (suite, records, runs left out,
    /// claims with cells, bands and verdicts, the four-number tally).
    #[arg(long)]
    pub json: bool,
    /// Record the verdicts: replace results.json's `claims` with the ones
    /// judged now, add `judged_by` (this build's commit, the command, the
    /// date), and write the table to claims.txt in the directory. Not for
    /// a prefetch simulator's directory (re-run the simulator instead).
    #[arg(long, conflicts_with = "pool")]
    pub write: bool,
    /// Judge paper 001's claims on the repetitions of every DIR together:
    /// runs of `pagewire bench` with the same plan, link configurations,
    /// page, server, options and commit, from clean trees (anything else
    /// is refused, naming the difference). The output lists the runs
    /// pooled and their load averages.
    #[arg(long)]
    pub pool: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.pool {
        return pool(&args);
    }
    let [dir] = args.dirs.as_slice() else {
        return Err(super::usage(format!(
            "claims: {} directories given: judge one at a time, or pool runs of the same plan with --pool",
            args.dirs.len()
        )));
    };
    // A directory that cannot be judged (missing, not a results
    // directory) is a failure (exit 1), as a missing input of any command;
    // --write on a directory that records no claims is a usage error (2).
    let judged = pagewire_lab::registry::judge_dir(dir)
        .with_context(|| format!("claims: {}", dir.display()))?;
    if args.write {
        write(dir, &judged).map_err(|e| {
            if super::is_usage(&e) {
                super::usage(format!("claims: {}: {e:#}", dir.display()))
            } else {
                e.context(format!("claims: {}", dir.display()))
            }
        })?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&judged)?);
    } else {
        print!("{}", judged.render());
    }
    Ok(ExitCode::SUCCESS)
}

/// `--pool`: judge the runs together, or say why they cannot be.
fn pool(args: &Args) -> anyhow::Result<ExitCode> {
    let pooled = match pagewire_lab::registry::pool::judge_pooled(&args.dirs) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pagewire claims --pool: {e:#}");
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pooled)?);
    } else {
        print!("{}", pooled.render());
    }
    Ok(ExitCode::SUCCESS)
}

/// Replace the recorded claims of the results.json at (or in) `path` by
/// `judged`'s, with the judgement's own provenance; the file is replaced
/// atomically (written beside it, then renamed), so an interrupted write
/// loses nothing.
fn write(path: &Path, judged: &pagewire_lab::claims::Judged) -> anyhow::Result<()> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    if !file.is_file() {
        anyhow::bail!(
            "--write needs a results.json; a prefetch simulator's directory records no claims \
             (re-run `pagewire prefetch simulate` to refresh it)"
        );
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let mut v: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let obj = v
        .as_object_mut()
        .with_context(|| format!("{} is not a JSON object", file.display()))?;
    let p = pagewire_provenance::Provenance::begin("claims", pagewire_provenance::command_line());
    obj.insert("claims".into(), serde_json::to_value(&judged.claims)?);
    obj.insert(
        "judged_by".into(),
        json!({
            "pagewire_version": p.pagewire_version,
            "git_commit": p.git_commit,
            "git_dirty": p.git_dirty,
            "command": p.command,
            "date_utc": p.date_utc,
            "tally": judged.tally,
        }),
    );
    let tmp = dir.join(".results.json.claims-tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&v)? + "\n")
        .with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, &file).with_context(|| format!("replace {}", file.display()))?;
    let table = dir.join("claims.txt");
    std::fs::write(&table, judged.render())
        .with_context(|| format!("write {}", table.display()))?;
    Ok(())
}
