//! Every integration test of pagewire-h1 in one binary: one build and link
//! instead of one per file (docs/ci.md). Run one with `--test it MODULE::`.

mod chunked;
mod framing;
mod httparse_baseline;
mod response;
mod response_into;
mod roundtrip;
mod smoke;
mod split;
