//! Experiment suites, run matrix, statistics, reference values and reports.
//!
//! `pagewire bench` (suite `microscape`, in [`microscape`]) reproduces
//! paper 001's Tables 3-9; [`objpack`], [`connlen`], [`loadtime`] and
//! [`surge`] are the other papers' suites; [`claims`] judges them all,
//! [`stats`] summarises repetitions.

// `unsafe` only where a system call has no safe wrapper in our dependencies:
// `objpack::methods` (getrusage(RUSAGE_THREAD) and poll(2)) and `connlen::wire`
// (TCP_INFO's tcpi_rcv_wnd), allowed there alone.
#![deny(unsafe_code)]

pub mod chromium;
pub mod claims;
pub mod connlen;
pub mod html;
pub mod interrupt;
pub mod loadtime;
pub mod microscape;
pub mod objpack;
pub mod pcapread;
pub mod plots;
pub mod stats;
pub mod surge;

// Paper 001's model, reference values and section-9 comparison, where the
// claims engine and the other suites' writers name them.
pub use microscape::{model, reference, report, section9};
pub use model::{Net, RunRecord, Strategy, Test};
