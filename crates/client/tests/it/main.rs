//! Every integration test of pagewire-client in one binary: one build and link
//! instead of one per file (a clean build is most of CI's time; docs/ci.md).
//! Each module is one former test file; run one with `--test it MODULE::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../har_schema/mod.rs"]
mod har_schema;

mod css_streaming;
mod fn_length;
mod getall;
mod har;
mod hostile;
mod hostile_h2;
mod hostile_h3;
mod multiplex;
mod objpack;
mod peers;
mod range_first;
mod request_streams;
mod scripted;
