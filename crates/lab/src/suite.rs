//! The shape every experiment suite shares: plan -> runs -> summaries ->
//! claims -> report.
//!
//! A suite is a paper's experiment. It implements [`Suite`]: its name and
//! paper (the claims engine's [`claims::Suite`]), one line on what it
//! reproduces, its claim table (the paper's sentences as data,
//! [`ClaimSpec`]) and how its results.json is judged ([`Suite::judge`]).
//! Its results implement [`crate::results::Report`], which judges them and
//! writes them in one way for all. Suites whose runs are independent jobs
//! on their own links share [`crate::pool::run`].
//!
//! This module names no suite: each suite registers here by implementing
//! the trait, and [`crate::registry`] lists them (`bench list`, `pagewire
//! claims`).

use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::claims::{self, spec::ClaimSpec, Judged};

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
    /// Judges a results.json of this suite from its run records alone
    /// (`dir`: where it lives, for a baseline run beside it).
    fn judge(results: &Value, dir: Option<&Path>) -> Result<Judged>;
}

/// Judges suite `S`'s results as they will be written (serialized to JSON
/// text and read back, exactly as `pagewire claims` reads the file), so a
/// results.json's `claims` are what `pagewire claims` prints for it.
pub fn judge_serialized<S: Suite, T: Serialize + ?Sized>(results: &T) -> Judged {
    let judged = serde_json::to_string(results)
        .map_err(anyhow::Error::from)
        .and_then(|t| Ok(serde_json::from_str::<Value>(&t)?))
        .and_then(|v| S::judge(&v, None));
    judged.unwrap_or_else(|e| Judged {
        error: Some(format!("{e:#}")),
        ..Judged::new(S::KIND, 0, 0, Vec::new())
    })
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
