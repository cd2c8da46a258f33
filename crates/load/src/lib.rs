#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod calibration;
pub mod client;
pub mod fileset;
pub mod metrics;
pub mod model;
pub mod run;
pub mod schedule;
pub mod stream;
pub mod streamcheck;
pub mod tick;
pub mod urls;
