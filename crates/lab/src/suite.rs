//! The shape every experiment suite shares: plan -> runs -> summaries ->
//! claims -> report.
//!
//! A suite is a paper's experiment. It implements [`Suite`]: its name and
//! paper (the claims engine's [`claims::Suite`]), one line on what it
//! reproduces, and its claim table (the paper's sentences as data,
//! [`ClaimSpec`]). Its results implement [`crate::results::Report`], which
//! judges them and writes them in one way for all. Suites whose runs are
//! independent jobs on their own links share [`crate::pool::run`].
//!
//! [`catalogue`] lists every suite for `pagewire bench list`.

use serde::Serialize;

use crate::claims::{self, spec::ClaimSpec};

/// A paper's experiment, as `pagewire bench <name>` runs it and
/// `pagewire claims` judges it.
pub trait Suite {
    /// Name and paper (`bench <name>`; `results.json` is judged as this).
    const KIND: claims::Suite;
    /// What it reproduces, one line (`bench list`).
    const RUNS: &'static str;
    /// What the claims read: the suite's summaries of its runs.
    type Ctx: 'static;
    /// The paper's sentences this suite checks.
    fn claims() -> &'static [ClaimSpec<Self::Ctx>];
}

/// A suite in `bench list`.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub suite: &'static str,
    pub paper: &'static str,
    pub runs: &'static str,
    pub claims: Vec<ClaimRow>,
}

/// One claim of a suite's table: id, where in the paper, the sentence.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimRow {
    pub id: &'static str,
    pub source: &'static str,
    pub quote: &'static str,
}

/// The catalogue entry of suite `S`.
pub fn entry<S: Suite>() -> Entry {
    Entry {
        suite: S::KIND.name(),
        paper: S::KIND.paper(),
        runs: S::RUNS,
        claims: S::claims()
            .iter()
            .map(|c| ClaimRow {
                id: c.id,
                source: c.section,
                quote: c.quote,
            })
            .collect(),
    }
}

/// Every suite, in `bench list`'s order; section 9 is paper 001's
/// comparison of two finished microscape runs (its claims are printed with
/// it), listed so it can be found.
pub fn catalogue() -> Vec<Entry> {
    vec![
        entry::<crate::microscape::Microscape>(),
        Entry {
            suite: "section9",
            paper: "001",
            runs:
                "section 9 (CSS and PNG) from two finished microscape runs; claims printed with it",
            claims: Vec::new(),
        },
        entry::<crate::objpack::Objpack>(),
        entry::<crate::connlen::ConnLength>(),
        entry::<crate::loadtime::Getall>(),
        entry::<crate::prefetch::Prefetch>(),
        entry::<crate::surge::Surge>(),
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
