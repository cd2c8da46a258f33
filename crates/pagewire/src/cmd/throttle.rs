//! `pagewire throttle`: one page loaded by headless Chromium three ways —
//! over the packet-level emulated link, with DevTools request-level
//! throttling at the same RTT and rate on an unshaped link, and predicted
//! from one unthrottled trace by the Lantern-style model — per link and
//! protocol, with each method's error against packet-level
//! (`pagewire_lab::throttle`; docs/throttling.md).
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pagewire_lab::throttle::{self, PageSource, Proto};

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    pagewire throttle --quick --out t            # Microscape, LAN, HTTP/1.1: 3 loads\n  \
    pagewire throttle --recorded docs/real-pages/libxslt-internals.warc.gz --out t\n\n\
    Needs root (network namespaces) and Chromium. Writes results.json (with provenance), \
    report.txt and the unthrottled traces into --out.")]
pub struct Args {
    /// Results directory.
    #[arg(long, default_value = "throttle-results")]
    pub out: PathBuf,
    /// Link profiles to compare (comma-separated; constant-rate profiles).
    #[arg(long, value_delimiter = ',', default_value = "lan,wan,ppp")]
    pub net: Vec<String>,
    /// Protocols (comma-separated: h1, h2, h3).
    #[arg(long, value_delimiter = ',', default_value = "h1,h2,h3")]
    pub proto: Vec<Proto>,
    /// A recorded page (WARC or HAR) to load beside the Microscape page.
    #[arg(long, value_name = "ARCHIVE")]
    pub recorded: Option<PathBuf>,
    /// Leave the Microscape page out (only --recorded).
    #[arg(long)]
    pub no_microscape: bool,
    /// The Microscape page's seed.
    #[arg(long, default_value_t = 1997)]
    pub seed: u64,
    /// Loads per page, link, protocol and method: means with 95% intervals
    /// are compared, and each method's error against packet-level with its
    /// interval (the model predicts once from each unthrottled load).
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
    /// The Microscape page on the LAN over HTTP/1.1 only (3 loads); an
    /// explicit --net or --proto still applies.
    #[arg(long)]
    pub quick: bool,
    /// Print the results as JSON rather than the report.
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut a: Args) -> anyhow::Result<ExitCode> {
    let argv: Vec<String> = std::env::args().collect();
    let given = |f: &str| {
        argv.iter()
            .any(|x| x == f || x.starts_with(&format!("{f}=")))
    };
    if a.quick {
        if !given("--net") {
            a.net = vec!["lan".into()];
        }
        if !given("--proto") {
            a.proto = vec![Proto::H1];
        }
    }
    if a.reps == 0 {
        crate::usage_bail!("--reps must be at least 1");
    }
    let mut pages = Vec::new();
    if !a.no_microscape {
        pages.push(PageSource::Microscape { seed: a.seed });
    }
    if let Some(r) = &a.recorded {
        if !r.is_file() {
            crate::usage_bail!("--recorded {}: no such file", r.display());
        }
        let name = r
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let name = name.split('.').next().unwrap_or("recorded").to_string();
        pages.push(PageSource::Recorded {
            archive: r.clone(),
            name,
        });
    }
    if pages.is_empty() {
        crate::usage_bail!("--no-microscape needs --recorded ARCHIVE");
    }
    for n in &a.net {
        if n == "none" {
            crate::usage_bail!("--net none: the unshaped link is the comparison's own baseline");
        }
        pagewire_link::LinkConfig::profile(n)
            .map_err(|e| crate::cmd::usage(format!("--net {n}: {e}")))?;
    }
    let cfg = throttle::Config {
        exe: std::env::current_exe().context("find this pagewire binary")?,
        out_dir: a.out.clone(),
        pages,
        nets: a.net.clone(),
        protos: a.proto.clone(),
        reps: a.reps,
        command: pagewire_provenance::command_line(),
    };
    let res = throttle::run(&cfg)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&res)?);
    } else {
        print!("{}", throttle::render(&res));
    }
    let failed = res.loads.iter().filter(|l| !l.ok()).count();
    if failed > 0 {
        eprintln!("pagewire throttle: {failed} loads failed (see results.json)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
