//! SURGE (Barford & Crovella) for pagewire: the workload model of user
//! equivalents, the file set, the request stream and a load generator that
//! speaks HTTP/1.0, persistent HTTP/1.1, pipelined HTTP/1.1 and HTTP/1.1
//! with the early-close policy, on the `pagewire-h1` codec.
//!
//! | module     | what                                                          |
//! |------------|---------------------------------------------------------------|
//! | [`model`]  | Table 8's distributions: samplers, CDFs, KS and Zipf checks    |
//! | [`fileset`]| the file set (web objects), HTML pages, `manifest.json`       |
//! | [`stream`] | the name sequence (Zipf + stack distance) and ON/OFF users    |
//! | [`client`] | HTTP/1.x exchanges on one connection, errors by kind          |
//! | [`metrics`]| HDR histograms, counters, the per-second series, merge        |
//! | [`run`]    | the user-equivalent tasks, runtime, limits, progress          |
//! | [`calibration`] | the run beside the paper's load: per UE, per connection |

pub mod calibration;
pub mod client;
pub mod fileset;
pub mod metrics;
pub mod model;
pub mod run;
pub mod stream;
pub mod streamcheck;
pub mod urls;
