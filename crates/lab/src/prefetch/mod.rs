//! Paper 003 section 8 (Padmanabhan & Mogul, "Improving HTTP Latency"):
//! the prefetching simulator over an access log. The simulator is the
//! `pagewire-prefetch` crate (no network: no links, no run pool); its
//! claims are [`crate::claims::prefetch`], judged from the directory the
//! simulator writes (summary.json, results.jsonl).

use crate::claims::{self, spec::ClaimSpec};
use crate::suite::Suite;

/// The prefetch suite.
pub struct Prefetch;

impl Suite for Prefetch {
    const KIND: claims::Suite = claims::Suite::Prefetch;
    const RUNS: &'static str =
        "Padmanabhan & Mogul section 8: prefetching simulator over an access log";
    type Ctx = claims::prefetch::Ctx;
    fn claims() -> &'static [ClaimSpec<Self::Ctx>] {
        claims::prefetch::CLAIMS
    }
}
