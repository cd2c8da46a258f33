//! The loopback-only command-line tests of pagewire in one binary: one build
//! and link instead of one per file (docs/ci.md); run one with
//! `--test cli MODULE::`. The tests over emulated links, namespaces and
//! Chromium keep a binary each, so they still run one file at a time.

#[path = "../common/mod.rs"]
mod common;
#[path = "../schema/mod.rs"]
mod schema;

mod claims_cli;
mod doc_figures;
mod durations_cli;
mod fetch_cli;
mod getall_cli;
mod h2spec_cli;
mod hostile_cli;
mod json_cli;
mod load_cli;
mod module_cycles;
mod objpack_cli;
mod prefetch_e2e;
mod reliability_cli;
mod site_cli;
mod standalone;
mod tls_cli;
