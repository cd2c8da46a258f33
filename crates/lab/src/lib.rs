//! Experiment suites, run matrix, statistics, reference values and reports.
//!
//! In layers, each naming only the ones below it:
//! - shared data: [`model`] (the run record), [`stats`] (repetitions
//!   summarised), [`html`] and [`plots`] (report pieces), [`pool`] (the run
//!   pool of the suites whose runs are independent links), [`server`] (the
//!   one server launcher), [`expect`] (the expected-time model);
//! - engines: [`claims`] (claims as data, the one decision rule),
//!   [`suite::Suite`] (the trait every suite implements: plan -> runs ->
//!   summaries -> claims -> report) and [`results`] (every suite's
//!   results.json and reports);
//! - suites, each with its claim table and report: [`microscape`] (paper
//!   001, the default of `pagewire bench`), [`objpack`] (002), [`connlen`],
//!   [`loadtime`] and [`prefetch`] (003), [`surge`] (004);
//! - on top, [`registry`]: every suite listed (`bench list`), and any
//!   results directory judged by the suite that made it (`pagewire claims`).

// `unsafe` only where a system call has no safe wrapper in our
// dependencies, allowed in these alone, each call with its SAFETY note:
// `connlen::wire` (TCP_INFO's tcpi_rcv_wnd, past the libc crate's struct),
// `objpack::methods` (poll(2) for a bounded accept wait, the TIOCOUTQ
// send-queue ioctl, prctl's timer slack) and `objpack::sys` (posix_fadvise,
// mincore over an mmap for the page-cache state, sysconf,
// pthread_getcpuclockid for another thread's CPU clock). getrusage goes
// through nix's safe call.
#![deny(unsafe_code)]

pub mod browse;
pub mod claims;
pub mod connlen;
pub mod expect;
pub mod html;
pub mod interrupt;
pub mod loadtime;
pub mod microscape;
pub mod model;
pub mod objpack;
pub mod pcapread;
pub mod plots;
pub mod pool;
pub mod prefetch;
pub mod registry;
pub mod results;
pub mod server;
pub mod stats;
pub mod suite;
pub mod surge;
pub mod throttle;
pub mod webreplay;

pub use model::{Net, RunRecord, Strategy, Test};
