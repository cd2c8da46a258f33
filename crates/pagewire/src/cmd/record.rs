//! `pagewire record`: fetch a page and its objects with the robot and write
//! every exchange to a WARC file, for `pagewire serve --replay`,
//! `pagewire replay` and `pagewire bench --replay`. Each response record
//! carries its place in the waterfall and its server think time
//! (`WARC-Pagewire-Timing`; `replay::timings`).
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use pagewire_client::{ConnectTo, FetchConfig, Outcome, Strategy, Timeouts};
use pagewire_replay::{Archive, Exchange};
use pagewire_server::replay::ReplaySite;

#[derive(clap::Args)]
pub struct Args {
    /// Page URL (http://host[:port]/path).
    pub url: String,
    /// The WARC file to write (`.warc`, or `.warc.gz` for gzip per record).
    /// (`--out` is an alias.)
    #[arg(long = "out-file", alias = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// How the robot fetches: pipeline, http11 or http10 (no content coding
    /// is asked for, so bodies are recorded as the server sends them).
    #[arg(long, default_value = "pipeline", value_parser = super::recording_strategy)]
    pub strategy: Strategy,
    /// Connect to ADDR for HOST:PORT (curl's --resolve HOST:PORT:ADDR).
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = ConnectTo::parse_resolve)]
    pub resolve: Vec<ConnectTo>,
    /// Connect to ADDR:PORT2 for HOST1:PORT1 (curl's --connect-to).
    #[arg(long, value_name = "HOST1:PORT1:ADDR:PORT2", value_parser = ConnectTo::parse_connect_to)]
    pub connect_to: Vec<ConnectTo>,
    /// Follow up to N redirects of the page (the final page is recorded).
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=20))]
    pub max_redirects: u8,
    /// The whole fetch's deadline, e.g. 10m.
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
    /// Print what was recorded as one JSON object (instead of the lines).
    #[arg(long)]
    pub json: bool,
}

/// One recorded exchange, as `--json` prints it.
#[derive(serde::Serialize)]
struct RecordedJson<'a> {
    url: &'a str,
    status: u16,
    body_bytes: usize,
    server_ms: Option<f64>,
    sha256: &'a str,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut cfg = FetchConfig::new(args.url.clone(), args.strategy);
    cfg.keep_bodies = true;
    cfg.connect_to = args
        .resolve
        .iter()
        .chain(&args.connect_to)
        .cloned()
        .collect();
    cfg.max_redirects = args.max_redirects.into();
    cfg.timeouts = Timeouts {
        total: args.timeout,
        ..Timeouts::default()
    };
    let report = pagewire_client::fetch_blocking(cfg).map_err(anyhow::Error::new)?;
    let timings = super::replay::timings(&report);
    let mut exchanges = Vec::with_capacity(report.objects.len());
    let mut not_recorded = Vec::new();
    let mut recorded = Vec::new();
    for (o, timing) in report.objects.iter().zip(timings) {
        let (Some(body), true) = (&o.body, o.status != 0 && o.outcome == Outcome::Fetched) else {
            not_recorded.push(format!("{} ({:?})", o.url, o.outcome));
            continue;
        };
        exchanges.push(Exchange {
            method: o.method.as_str().to_string(),
            url: o.url.clone(),
            request_head: (!o.request_head.is_empty()).then(|| bytes_of(o.request_head.as_bytes())),
            status: o.status,
            reason: pagewire_h1::reason_phrase(o.status).to_string(),
            headers: o
                .response_headers
                .iter()
                .filter(|(n, _)| !n.eq_ignore_ascii_case("transfer-encoding"))
                .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
                .collect(),
            body: body.clone(),
            timing,
        });
        recorded.push(RecordedJson {
            url: &o.url,
            status: o.status,
            body_bytes: body.len(),
            server_ms: timing.map(|t| t.server_ms),
            sha256: &o.sha256,
        });
        if !args.json {
            println!(
                "  {} {:>8} {:>9} {} {}",
                o.status,
                body.len(),
                timing.map_or("-".into(), |t| format!("{:.1}ms", t.server_ms)),
                o.sha256,
                o.url
            );
        }
    }
    if exchanges.is_empty() {
        anyhow::bail!(
            "nothing to record: the robot got no response from {}",
            args.url
        );
    }
    let software = format!("pagewire {} record", env!("CARGO_PKG_VERSION"));
    let bytes = pagewire_replay::warc_io::write(&args.out, &exchanges, &software)
        .map_err(anyhow::Error::new)?;
    let body: usize = exchanges.iter().map(|e| e.body.len()).sum();
    if args.json {
        let doc = serde_json::json!({
            "page": report.url,
            "strategy": args.strategy.to_string(),
            "out": args.out.display().to_string(),
            "archive_bytes": bytes,
            "exchanges": recorded.len(),
            "body_bytes": body,
            "recorded": recorded,
            "not_recorded": not_recorded,
            "redirects": report.redirects,
            "warnings": report.warnings,
        });
        println!("{doc}");
    } else {
        println!(
            "recorded {} exchanges ({} body bytes) of {} with --strategy {} into {} ({} bytes)",
            exchanges.len(),
            body,
            report.url,
            args.strategy,
            args.out.display(),
            bytes
        );
    }
    if !report.redirects.is_empty() {
        eprintln!(
            "pagewire record: the page's redirects ({}) are not recorded; replay from {}",
            report.redirects.join(" -> "),
            report.url
        );
    }
    for w in &report.warnings {
        eprintln!("pagewire record: warning: {w}");
    }
    if !not_recorded.is_empty() {
        eprintln!(
            "pagewire record: {} objects without a response not recorded: {}",
            not_recorded.len(),
            not_recorded.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn bytes_of(b: &[u8]) -> pagewire_replay::Bytes {
    pagewire_replay::Bytes::copy_from_slice(b)
}

/// Loads an archive for `serve --replay`, saying on stderr what it holds
/// and what it skipped.
pub fn load_replay(file: &Path, deflate: bool, server_time: bool) -> anyhow::Result<ReplaySite> {
    let archive = Archive::load(file).map_err(anyhow::Error::new)?;
    let mut site = ReplaySite::new(&archive, deflate);
    if server_time {
        site = site.with_server_times();
        eprintln!(
            "pagewire serve: replaying recorded server think times ({} of {} requests have one)",
            site.timed(),
            site.len()
        );
    }
    let origins: std::collections::BTreeSet<String> = archive
        .exchanges
        .iter()
        .filter_map(|e| e.key().map(|k| k.authority))
        .collect();
    eprintln!(
        "pagewire serve: replaying {} ({} exchanges, {} distinct requests, origins: {})",
        file.display(),
        archive.exchanges.len(),
        site.len(),
        origins.into_iter().collect::<Vec<_>>().join(" ")
    );
    if archive.skipped_total > 0 {
        eprintln!(
            "pagewire serve: {} records skipped: {}{}",
            archive.skipped_total,
            archive.skipped.join("; "),
            if archive.skipped_total > archive.skipped.len() {
                " ..."
            } else {
                ""
            }
        );
    }
    if site.refused_fields > 0 {
        eprintln!(
            "pagewire serve: {} recorded fields dropped (bytes a header may not carry)",
            site.refused_fields
        );
    }
    Ok(site)
}
