//! Prefetching: access-log reader, dependency-graph predictor and log-driven
//! simulator of Padmanabhan and Mogul, "Improving HTTP Latency" (paper 003,
//! sections 7 and 8).
//!
//! * [`graph`]: the dependency graph (one node per URL, per-client lookahead
//!   windows, arc weights, candidates) — the one predictor core.
//! * [`OnlinePredictor`]: that core behind a mutex for `pagewire serve --prefetch`.
//! * [`log`]: the Common Log Format reader (plain or gzip).
//! * [`sim`]: the simulator; [`run`]: a whole `pagewire prefetch simulate`
//!   job (read, sweep, print, write files); [`report`]: tables, CSV, JSON,
//!   SVG plots.
//! * [`MaxCandidates`]: the predictor's `i`, a number or `all`.
//! * [`variant`]: readings of the paper's open points; [`stats`]: log
//!   statistics that bear on prediction; [`markov`]: a log with a known answer.

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]

pub mod fit;
pub mod graph;
pub mod log;
pub mod markov;
pub mod online;
pub mod params;
pub mod report;
pub mod run;
pub mod sim;
pub mod spec;
pub mod stats;
pub mod synth;
pub mod variant;

pub use graph::{DependencyGraph, GraphLimits, NodeId, Window};
pub use online::{OnlineLimits, OnlinePredictor};
pub use params::{MaxCandidates, ParamsError, PrefetchParams};
