//! `pagewire model DIR [--json] [--write] [--server-ms MS]`: the
//! expected-time model beside a Microscape-, objpack- or getall-suite
//! results directory's measurement, from its run records alone (no new runs): measured,
//! predicted and lower bound per cell, where the time goes, and the
//! model's error (mean absolute percentage error, Spearman's rank
//! correlation) per network and over the directory.
//!
//! With `--write`, the table goes to `model.txt` and the evaluation (with
//! the command and this build's commit) to `model.json` in the directory;
//! results.json is left as it was.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    /// A Microscape-, objpack- or getall-suite results directory (with
    /// results.json), or its results.json.
    pub dir: PathBuf,
    /// Print the evaluation as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write model.txt and model.json into the directory.
    #[arg(long)]
    pub write: bool,
    /// The server's time per response the model assumes, ms (an input,
    /// never fitted).
    #[arg(long, default_value_t = 0.0, value_name = "MS")]
    pub server_ms: f64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !(args.server_ms.is_finite() && args.server_ms >= 0.0) {
        eprintln!("pagewire model: --server-ms must be a number >= 0");
        return Ok(ExitCode::from(2));
    }
    // A directory that cannot be read is a failure (1), as in `claims`.
    let eval = evaluate(&args.dir, args.server_ms / 1e3).map_err(|e| e.context("model"))?;
    let text = eval.render();
    if args.write {
        let dir = if args.dir.is_dir() {
            args.dir.clone()
        } else {
            args.dir.parent().map(PathBuf::from).unwrap_or_default()
        };
        let prov =
            pagewire_provenance::Provenance::begin("model", pagewire_provenance::command_line());
        let doc = json!({
            "what": "the expected-time model beside this directory's measurement (pagewire model)",
            "made_by": {
                "pagewire_version": prov.pagewire_version,
                "command": prov.command,
                "git_commit": prov.git_commit,
                "git_dirty": prov.git_dirty,
                "date_utc": prov.date_utc,
            },
            "evaluation": eval,
        });
        write_atomic(&dir.join("model.txt"), text.as_bytes())?;
        write_atomic(
            &dir.join("model.json"),
            (serde_json::to_string_pretty(&doc)? + "\n").as_bytes(),
        )?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&eval)?);
    } else {
        print!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The evaluation of one suite's results directory.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Eval {
    Microscape(pagewire_lab::expect::eval::ModelEval),
    Suite(pagewire_lab::expect::suites::SuiteEval),
}

impl Eval {
    fn render(&self) -> String {
        match self {
            Eval::Microscape(e) => e.render(),
            Eval::Suite(e) => e.render(),
        }
    }
}

/// Reads `path`'s results.json and puts the model of its suite beside it:
/// the Microscape suite, the objpack suite or the getall suite.
fn evaluate(path: &std::path::Path, server_s: f64) -> anyhow::Result<Eval> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let made_by = v.get("made_by").and_then(|m| m.as_str()).unwrap_or("");
    let with = |e: anyhow::Error| e.context(file.display().to_string());
    if made_by.contains("--suite objpack") {
        pagewire_lab::objpack::model::eval_value(&v, server_s)
            .map(Eval::Suite)
            .map_err(with)
    } else if made_by.contains("--suite getall") {
        pagewire_lab::loadtime::model::eval_value(&v, server_s)
            .map(Eval::Suite)
            .map_err(with)
    } else {
        pagewire_lab::expect::eval::eval_dir(path, server_s).map(Eval::Microscape)
    }
}

fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("write {}", path.display()))?;
    Ok(())
}
