//! The registry of suites, on top of them all: every suite in `bench
//! list`'s order ([`catalogue`]), which suite made a results.json
//! ([`detect`]), and judging any results directory of any suite by the
//! suite's own [`Suite::judge`] ([`judge_value`], [`judge_dir`]: the
//! `pagewire claims` command; [`pool`]: several directories' runs pooled).
//!
//! The suites register by implementing [`Suite`]; the claims engine below
//! them ([`crate::claims`]) and the results writer ([`crate::results`])
//! name none of them. This is the one module that names every suite.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde_json::Value;

use crate::claims::{read_json, Judged, Suite as Kind};
use crate::connlen::ConnLength;
use crate::loadtime::Getall;
use crate::microscape::Microscape;
use crate::objpack::Objpack;
use crate::prefetch::Prefetch;
use crate::suite::{entry, Entry, Suite};
use crate::surge::Surge;

pub mod pool;

/// Which suite made a results.json.
pub fn detect(v: &Value) -> Result<Kind> {
    let made_by = v.get("made_by").and_then(Value::as_str).unwrap_or("");
    let has = |k: &str| v.get(k).is_some();
    let css = crate::microscape::claims::is_css_page(v);
    Ok(
        if made_by.contains("--suite objpack") || (has("rows") && has("group_sizes")) {
            Kind::Objpack
        } else if made_by.contains("--suite surge") || has("per_connection_memory") {
            Kind::Surge
        } else if made_by.contains("--suite conn-length") || has("points") {
            Kind::ConnLength
        } else if made_by.contains("--suite getall") || has("cells") {
            Kind::Getall
        } else if has("runs") && css {
            Kind::MicroscapeCss
        } else if has("runs") {
            Kind::Microscape
        } else {
            bail!("results.json of no known suite (expected runs, rows, points or cells)")
        },
    )
}

/// The judge of each kind of results.json: its suite's [`Suite::judge`]
/// (the one a suite's bench writes its results.json's `claims` with).
pub fn judge_of(kind: Kind) -> fn(&Value, Option<&Path>) -> Result<Judged> {
    match kind {
        Kind::Microscape | Kind::MicroscapeCss => Microscape::judge,
        Kind::Objpack => Objpack::judge,
        Kind::ConnLength => ConnLength::judge,
        Kind::Getall => Getall::judge,
        Kind::Surge => Surge::judge,
        Kind::Prefetch => Prefetch::judge,
    }
}

/// Re-judge a results value of a known suite (`dir`: where it lives, for
/// a baseline run beside it) by the suite that made it.
pub fn judge_value(v: &Value, dir: Option<&Path>) -> Result<Judged> {
    judge_of(detect(v)?)(v, dir)
}

/// Re-judge a results directory (or a results.json path) of any suite.
pub fn judge_dir(path: &Path) -> Result<Judged> {
    let (dir, file): (PathBuf, PathBuf) = if path.is_dir() {
        (path.to_path_buf(), path.join("results.json"))
    } else {
        (
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            path.to_path_buf(),
        )
    };
    if !file.is_file() && dir.join("summary.json").is_file() && dir.join("results.jsonl").is_file()
    {
        return crate::prefetch::claims::judge_dir(&dir);
    }
    if !file.is_file() {
        bail!(
            "{}: no results.json (nor a prefetch simulator's summary.json and results.jsonl)",
            dir.display()
        );
    }
    judge_value(&read_json(&file)?, Some(&dir))
}

/// Every suite, in `bench list`'s order; section 9 is paper 001's
/// comparison of two finished microscape runs (its claims are printed with
/// it), listed so it can be found.
pub fn catalogue() -> Vec<Entry> {
    vec![
        entry::<Microscape>(),
        Entry {
            suite: "section9",
            paper: "001",
            runs:
                "section 9 (CSS and PNG) from two finished microscape runs; claims printed with it",
            claims: Vec::new(),
        },
        entry::<Objpack>(),
        entry::<ConnLength>(),
        entry::<Getall>(),
        entry::<Prefetch>(),
        entry::<Surge>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_is_listed_once_with_its_claims() {
        let c = catalogue();
        let names: Vec<&str> = c.iter().map(|e| e.suite).collect();
        for n in [
            "microscape",
            "objpack",
            "conn-length",
            "getall",
            "prefetch",
            "surge",
        ] {
            assert_eq!(names.iter().filter(|&&x| x == n).count(), 1, "{n}");
            let e = c.iter().find(|e| e.suite == n).unwrap();
            assert!(!e.claims.is_empty(), "{n} lists no claims");
        }
        // Claim ids are unique across suites (pagewire claims reads them).
        let mut ids: Vec<&str> = c
            .iter()
            .flat_map(|e| e.claims.iter().map(|r| r.id))
            .collect();
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}
