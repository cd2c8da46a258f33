//! Paper 001 (Nielsen, Gettys et al., "Network Performance Effects of
//! HTTP/1.1, CSS1, and PNG", SIGCOMM '97): the Microscape suite behind
//! `pagewire bench`. [`plan`] lays out the matrix, [`runner`] runs it over
//! emulated links, [`reference`] holds the paper's values, [`tables`]
//! compares, [`claims`] holds the paper's sentences and judges a results.json,
//! [`section9`] is the CSS+PNG page's comparison, [`report`] writes the files.

pub mod bulk;
pub mod chromium;
pub mod claims;
pub mod config;
pub mod extras;
pub mod plan;
pub mod reference;
pub mod replay;
pub mod report;
pub mod runner;
pub mod section9;
pub mod tables;
pub mod wanfit;

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use crate::claims::{self as engine, spec::ClaimSpec, Judged};
use crate::suite::Suite;

/// The Microscape suite.
pub struct Microscape;

impl Suite for Microscape {
    const KIND: engine::Suite = engine::Suite::Microscape;
    const RUNS: &'static str =
        "Nielsen, Gettys et al., SIGCOMM '97: Tables 3-9 on lan, wan, ppp (default)";
    type Ctx = claims::MicroscapeCtx;
    fn claims() -> &'static [ClaimSpec<Self::Ctx>] {
        claims::CLAIMS
    }
    fn judge(results: &Value, dir: Option<&Path>) -> Result<Judged> {
        claims::judge_value(results, dir)
    }
}
