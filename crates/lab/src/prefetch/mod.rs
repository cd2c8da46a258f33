//! Paper 003 section 8 (Padmanabhan & Mogul, "Improving HTTP Latency"):
//! the prefetching simulator over an access log. The simulator is the
//! `pagewire-prefetch` crate (no network: no links, no run pool); its
//! claims are [`claims`], judged from the directory the simulator writes
//! (summary.json, results.jsonl).

pub mod claims;

use std::path::Path;

use anyhow::{bail, Result};
use serde_json::Value;

use crate::claims::{self as engine, spec::ClaimSpec, Judged};
use crate::suite::Suite;

/// The prefetch suite.
pub struct Prefetch;

impl Suite for Prefetch {
    const KIND: engine::Suite = engine::Suite::Prefetch;
    const RUNS: &'static str =
        "Padmanabhan & Mogul section 8: prefetching simulator over an access log";
    type Ctx = claims::Ctx;
    fn claims() -> &'static [ClaimSpec<Self::Ctx>] {
        claims::CLAIMS
    }
    /// Its results are a directory, not a results.json: `claims::judge_dir`.
    fn judge(_results: &Value, _dir: Option<&Path>) -> Result<Judged> {
        bail!("prefetch results are a directory (summary.json, results.jsonl)")
    }
}
