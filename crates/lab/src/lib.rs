//! Experiment suites, run matrix, statistics, reference values and reports.
//!
//! Every suite implements [`suite::Suite`] (plan -> runs -> summaries ->
//! claims -> report): [`microscape`] (paper 001, the default of `pagewire
//! bench`), [`objpack`] (002), [`connlen`], [`loadtime`] and [`prefetch`]
//! (003), [`surge`] (004). [`claims`] judges them all; [`results`] writes
//! every suite's results.json and reports; [`pool`] is the run pool of the
//! suites whose runs are independent links, [`server`] the one server
//! launcher; [`stats`] summarises
//! repetitions.

// `unsafe` only where a system call has no safe wrapper in our dependencies:
// `objpack::methods` (getrusage(RUSAGE_THREAD) and poll(2)) and `connlen::wire`
// (TCP_INFO's tcpi_rcv_wnd), allowed there alone.
#![deny(unsafe_code)]

pub mod claims;
pub mod connlen;
pub mod expect;
pub mod html;
pub mod interrupt;
pub mod loadtime;
pub mod microscape;
pub mod objpack;
pub mod pcapread;
pub mod plots;
pub mod pool;
pub mod prefetch;
pub mod results;
pub mod server;
pub mod stats;
pub mod suite;
pub mod surge;
pub mod throttle;

// Paper 001's model, reference values and section-9 comparison, where the
// claims engine names them.
pub use microscape::{model, reference, section9};
pub use model::{Net, RunRecord, Strategy, Test};
