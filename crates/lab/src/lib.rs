//! Experiment suites, run matrix, statistics, reference values and reports.
//!
//! `pagewire bench` (suite `microscape`) reproduces paper 001's Tables 3-9:
//! [`plan`] lays out the matrix, [`runner`] runs it over emulated links,
//! [`stats`] summarises repetitions, [`reference`] holds the paper's values,
//! [`tables`] and [`claims`] compare, [`report`] writes the files.

// `unsafe` only where a system call has no safe wrapper in our dependencies:
// `objpack::methods` (getrusage(RUSAGE_THREAD) and poll(2)) and `connlen::wire`
// (TCP_INFO's tcpi_rcv_wnd), allowed there alone.
#![deny(unsafe_code)]

pub mod chromium;
pub mod claims;
pub mod connlen;
pub mod extras;
pub mod html;
pub mod interrupt;
pub mod loadtime;
pub mod model;
pub mod objpack;
pub mod pcapread;
pub mod plan;
pub mod plots;
pub mod reference;
pub mod replay;
pub mod report;
pub mod runner;
pub mod section9;
pub mod stats;
pub mod surge;
pub mod tables;
pub mod wanfit;

pub use model::{Net, RunRecord, Strategy, Test};
