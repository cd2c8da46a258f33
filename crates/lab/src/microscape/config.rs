//! What a Microscape bench run is given: the server to run, the ports it
//! listens on, and the whole configuration ([`BenchConfig`]). Plain data,
//! shared by the robot's runner ([`super::runner`]) and the browser's
//! ([`super::chromium`]).

use std::path::PathBuf;

use anyhow::Result;
use pagewire_chromium::BrowserRevalidation;
use pagewire_client::{RequestProfile, Revalidation};
use pagewire_emu::LinkConfig;
use pagewire_site::microscape;

use super::bulk::BulkSpec;
use super::plan::Plan;
use super::replay::ReplayPage;
use crate::model::{NagleSides, Net};

/// Port the server listens on inside the server namespace.
pub const SERVER_PORT: u16 = 80;

/// Port of the TLS server (HTTP/2 on TCP, HTTP/3 on UDP) that answers the
/// `h2` and `h3` runs, beside the HTTP/1 server on `SERVER_PORT`.
pub const TLS_PORT: u16 = 443;

/// Which origin server answers.
#[derive(Clone, Debug)]
pub enum ServerKind {
    /// `pagewire serve --root DIR --addr ADDR`, this very binary.
    Pagewire { exe: PathBuf },
    /// nginx with a generated configuration (gzip_static; no deflate).
    Nginx,
    /// Apache httpd 2.4 with the prefork MPM (a process per connection, as
    /// the paper's Apache 1.2b10) and a generated configuration; no deflate.
    Apache,
    /// Any server: `sh -c CMD` with `{root}` and `{port}` substituted.
    Command(String),
}

impl ServerKind {
    pub fn label(&self) -> String {
        match self {
            ServerKind::Pagewire { .. } => "pagewire".into(),
            ServerKind::Nginx => "nginx".into(),
            ServerKind::Apache => "apache".into(),
            ServerKind::Command(c) => format!("custom: {c}"),
        }
    }
}

/// Everything a bench run needs.
pub struct BenchConfig {
    pub plan: Plan,
    pub server: ServerKind,
    pub out_dir: PathBuf,
    pub seed: u64,
    /// The command line, for provenance.
    pub command: Vec<String>,
    /// Link configuration for a network (profile plus the user's overrides).
    pub link_config: Box<dyn Fn(Net) -> Result<LinkConfig> + Send + Sync>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// The robot's request headers (the bench's default: libwww-1997).
    pub request_profile: RequestProfile,
    /// HTTP/1.0 revalidation style of the tuned runs (default get-head,
    /// as libwww 4.1D).
    pub http10_revalidation: Revalidation,
    /// Where Nagle's algorithm is left on: the robot (no TCP_NODELAY), the
    /// server (`serve --nagle`; nginx `tcp_nodelay off`), or both.
    pub nagle: NagleSides,
    /// The pagewire server's flush policy when not the default
    /// (`serve --flush each-response`).
    pub server_flush: Option<String>,
    /// How browser strategies revalidate (every object, or Chromium's own
    /// heuristic).
    pub browser_revalidation: BrowserRevalidation,
    /// A recorded site in place of the Microscape page (`bench --replay`):
    /// served by `pagewire serve --replay`, every recorded name connected
    /// to the server namespace.
    pub replay: Option<ReplayPage>,
    /// The page: the paper's test page or its section-9 CSS+PNG variant.
    pub page: microscape::Variant,
    /// Range mode of the pipelining strategies (`--range-first N`).
    pub range_first: Option<u64>,
    /// Competing bulk downloads during every load (`--bulk`; robot
    /// strategies only).
    pub bulk: Option<BulkSpec>,
}
