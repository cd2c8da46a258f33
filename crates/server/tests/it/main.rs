//! The integration tests of pagewire-server in one binary (docs/ci.md); run one
//! with `--test it MODULE::`. fd_limit.rs stays its own binary: it raises the
//! process's open-file limit, which no other test may share.

#[path = "../common/mod.rs"]
mod common;

mod access_log;
mod connections;
mod getall;
mod hardening;
mod http2_frames;
mod objpack;
mod peer_checkers;
mod pipelining;
mod semantics;
