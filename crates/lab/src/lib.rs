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
pub mod results;
pub mod server;
pub mod stats;
pub mod suite;
pub mod surge;
pub mod throttle;
pub mod webreplay;

// Paper 001's reference values and section-9 comparison, where the
// claims engine names them.
pub use microscape::{reference, section9};
pub use model::{Net, RunRecord, Strategy, Test};
