//! `pagewire replay ARCHIVE`: serve a recorded page with its recorded
//! server think times, fetch it again with the robot, and say how close the
//! replayed waterfall comes to the recorded one (the replay-fidelity
//! score). Server think times are what `pagewire record` derives per
//! response (see [`timings`]); the replay server waits each one before the
//! response's first byte (`serve --replay-server-time`).
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use pagewire_client::{ConnectTo, FetchConfig, FetchReport, Outcome, Strategy, Timeouts};
use pagewire_replay::{Archive, Timing};
use pagewire_server::replay::ReplaySite;
use serde::Serialize;

#[derive(clap::Args)]
#[command(after_help = "Example:\n  \
    pagewire record --strategy http11 http://127.0.0.1:8080/ --out page.warc\n  \
    pagewire replay page.warc --strategy http11\n\
    Exit status 1 when a recorded server time is not reproduced within the tolerance.")]
pub struct Args {
    /// The archive `pagewire record` wrote (WARC with timings).
    pub archive: PathBuf,
    /// The page to fetch (default: the archive's first exchange, the page
    /// `record` fetched).
    #[arg(long, value_name = "URL")]
    pub page: Option<String>,
    /// How the robot fetches: pipeline, http11 or http10 (use the strategy
    /// the page was recorded with: the waterfall depends on it).
    #[arg(long, default_value = "pipeline", value_parser = super::recording_strategy)]
    pub strategy: Strategy,
    /// Absolute part of the tolerance, milliseconds: a replayed time
    /// within max(this, --tolerance-pct of the recorded time) of the
    /// recorded one is reproduced.
    #[arg(long, value_name = "MS", default_value_t = 15.0, value_parser = non_negative)]
    pub tolerance_ms: f64,
    /// Relative part of the tolerance, percent of the recorded time.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, value_parser = non_negative)]
    pub tolerance_pct: f64,
    /// Serve without the recorded server times (as WprGo and Mahimahi
    /// replay): to see what they are worth.
    #[arg(long)]
    pub no_server_time: bool,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The whole fetch's deadline.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
}

fn non_negative(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if !x.is_finite() || x < 0.0 {
        return Err(format!("{s}: must be a finite number, 0 or more"));
    }
    Ok(x)
}

/// Each object's [`Timing`] in a robot fetch (same order as
/// `report.objects`; `None` for an object that did not cross the wire, or
/// whose connection's round trip was not measured).
///
/// Server think time = first byte − max(request sent + RTT, previous
/// response on the connection done), at least 0: the earliest the first
/// byte could have come without any think time is one round trip after
/// the request left (for a request sent on an idle connection), or right
/// after the previous response (for a pipelined one, which reached the
/// server while it was still sending). The RTT is the connection's TCP
/// handshake.
pub fn timings(report: &FetchReport) -> Vec<Option<Timing>> {
    report
        .objects
        .iter()
        .map(|o| {
            if o.status == 0 || o.outcome != Outcome::Fetched || o.first_byte_ms <= 0.0 {
                return None;
            }
            let c = report.connections.get(o.connection)?;
            let rtt = c.connect_ms?;
            let sent = o.sent_ms.unwrap_or(o.requested_ms).max(c.opened_ms);
            let prev_done = report
                .objects
                .iter()
                .filter(|p| {
                    p.connection == o.connection
                        && p.status != 0
                        && p.first_byte_ms < o.first_byte_ms
                })
                .map(|p| p.done_ms)
                .fold(0.0, f64::max);
            let earliest = (sent + rtt).max(prev_done);
            Some(Timing {
                sent_ms: sent,
                first_byte_ms: o.first_byte_ms,
                done_ms: o.done_ms,
                rtt_ms: rtt,
                server_ms: (o.first_byte_ms - earliest).max(0.0),
            })
        })
        .collect()
}

/// One object in the comparison.
#[derive(Debug, Serialize)]
pub struct Row {
    pub url: String,
    pub recorded: Option<TimingJson>,
    pub replayed: Option<TimingJson>,
    /// |replayed − recorded| server think time, ms.
    pub server_error_ms: Option<f64>,
    /// |replayed − recorded| first byte and last byte, ms from the page's start.
    pub first_byte_error_ms: Option<f64>,
    pub done_error_ms: Option<f64>,
    /// Server time within the tolerance.
    pub server_ok: bool,
    /// First and last byte both within the tolerance.
    pub waterfall_ok: bool,
}

#[derive(Debug, Serialize, Clone, Copy)]
pub struct TimingJson {
    pub sent_ms: f64,
    pub first_byte_ms: f64,
    pub done_ms: f64,
    pub rtt_ms: f64,
    pub server_ms: f64,
}

impl From<Timing> for TimingJson {
    fn from(t: Timing) -> TimingJson {
        TimingJson {
            sent_ms: t.sent_ms,
            first_byte_ms: t.first_byte_ms,
            done_ms: t.done_ms,
            rtt_ms: t.rtt_ms,
            server_ms: t.server_ms,
        }
    }
}

/// The whole comparison (`--json`).
#[derive(Debug, Serialize)]
pub struct Fidelity {
    pub archive: String,
    pub page: String,
    pub strategy: String,
    pub server_times: bool,
    pub tolerance_ms: f64,
    pub tolerance_pct: f64,
    pub objects: Vec<Row>,
    /// Objects compared (recorded and replayed timing both known).
    pub compared: usize,
    /// Of those, server time within the tolerance.
    pub server_within: usize,
    /// Of those, first and last byte within the tolerance: the
    /// replay-fidelity score is `waterfall_within / compared`, in percent.
    pub waterfall_within: usize,
    pub fidelity_pct: f64,
    /// Mean absolute error of first-byte and last-byte times, ms.
    pub mean_first_byte_error_ms: f64,
    pub mean_done_error_ms: f64,
    /// Last byte of the page's objects, recorded and replayed, ms.
    pub recorded_page_ms: f64,
    pub replayed_page_ms: f64,
    /// Requests the replay server had no recorded answer for.
    pub misses: u64,
    /// Requests answered by a fuzzy query match.
    pub fuzzy_matches: u64,
}

fn within(err: f64, recorded: f64, abs_ms: f64, pct: f64) -> bool {
    err <= abs_ms.max(recorded.abs() * pct / 100.0)
}

/// Compares replayed with recorded timings, object by object (matched by
/// URL; each recorded exchange is used once).
pub fn compare(
    recorded: &[(String, Option<Timing>)],
    replayed: &[(String, Option<Timing>)],
    abs_ms: f64,
    pct: f64,
) -> (Vec<Row>, usize, usize, usize) {
    let mut by_url: BTreeMap<&str, Vec<Option<Timing>>> = BTreeMap::new();
    for (u, t) in recorded.iter().rev() {
        by_url.entry(u.as_str()).or_default().push(*t);
    }
    let (mut compared, mut server_within, mut waterfall_within) = (0, 0, 0);
    let rows = replayed
        .iter()
        .map(|(url, rep)| {
            let rec = by_url.get_mut(url.as_str()).and_then(Vec::pop).flatten();
            let mut row = Row {
                url: url.clone(),
                recorded: rec.map(Into::into),
                replayed: rep.map(Into::into),
                server_error_ms: None,
                first_byte_error_ms: None,
                done_error_ms: None,
                server_ok: false,
                waterfall_ok: false,
            };
            if let (Some(a), Some(b)) = (rec, rep) {
                compared += 1;
                let se = (b.server_ms - a.server_ms).abs();
                let fe = (b.first_byte_ms - a.first_byte_ms).abs();
                let de = (b.done_ms - a.done_ms).abs();
                row.server_error_ms = Some(se);
                row.first_byte_error_ms = Some(fe);
                row.done_error_ms = Some(de);
                row.server_ok = within(se, a.server_ms, abs_ms, pct);
                row.waterfall_ok =
                    within(fe, a.first_byte_ms, abs_ms, pct) && within(de, a.done_ms, abs_ms, pct);
                server_within += usize::from(row.server_ok);
                waterfall_within += usize::from(row.waterfall_ok);
            }
            row
        })
        .collect();
    (rows, compared, server_within, waterfall_within)
}

/// A replay server on 127.0.0.1 (its own thread and runtime), stopped on drop.
struct LocalServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LocalServer {
    fn start(site: Arc<ReplaySite>) -> anyhow::Result<LocalServer> {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("pagewire-replay-server".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(anyhow::Error::new(e)));
                        return;
                    }
                };
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(anyhow::Error::new(e)));
                            return;
                        }
                    };
                    let _ = addr_tx.send(listener.local_addr().map_err(anyhow::Error::new));
                    let config = pagewire_server::ServerConfig {
                        threads: 1,
                        ..Default::default()
                    };
                    let handler = pagewire_server::Handler::from(site);
                    if let Err(e) = pagewire_server::serve(listener, handler, config, async {
                        let _ = stop_rx.await;
                    })
                    .await
                    {
                        eprintln!("pagewire replay: the replay server failed: {e}");
                    }
                });
            })?;
        let addr = addr_rx
            .recv()
            .context("the replay server thread ended before binding")??;
        Ok(LocalServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let archive = Archive::load(&args.archive).map_err(anyhow::Error::new)?;
    let timed = archive
        .exchanges
        .iter()
        .filter(|e| e.timing.is_some())
        .count();
    if timed == 0 {
        anyhow::bail!(
            "{} has no recorded timings (record the page with `pagewire record` to have them)",
            args.archive.display()
        );
    }
    let page = match &args.page {
        Some(p) => p.clone(),
        None => archive
            .exchanges
            .first()
            .map(|e| e.url.clone())
            .context("the archive is empty")?,
    };
    if !page.starts_with("http://") {
        anyhow::bail!("{page}: the robot replays http:// pages only");
    }
    let mut site = ReplaySite::new(&archive, false);
    if !args.no_server_time {
        site = site.with_server_times();
    }
    let site = Arc::new(site);
    let server = LocalServer::start(site.clone())?;

    let mut cfg = FetchConfig::new(page.clone(), args.strategy);
    // Every recorded name is this server (as Mahimahi's replay shell).
    cfg.connect_to = vec![ConnectTo {
        host: None,
        port: None,
        addr: server.addr,
    }];
    cfg.timeouts = Timeouts {
        total: args.timeout,
        ..Timeouts::default()
    };
    let report = pagewire_client::fetch_blocking(cfg).map_err(anyhow::Error::new)?;
    drop(server);

    let recorded: Vec<(String, Option<Timing>)> = archive
        .exchanges
        .iter()
        .filter(|e| e.method.eq_ignore_ascii_case("GET"))
        .map(|e| (e.url.clone(), e.timing))
        .collect();
    let replayed: Vec<(String, Option<Timing>)> = report
        .objects
        .iter()
        .map(|o| o.url.clone())
        .zip(timings(&report))
        .collect();
    let (objects, compared, server_within, waterfall_within) =
        compare(&recorded, &replayed, args.tolerance_ms, args.tolerance_pct);
    let mean = |f: fn(&Row) -> Option<f64>| {
        let xs: Vec<f64> = objects.iter().filter_map(f).collect();
        if xs.is_empty() {
            f64::NAN
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    let page_end = |xs: &mut dyn Iterator<Item = f64>| xs.fold(0.0, f64::max);
    let fidelity = Fidelity {
        archive: args.archive.display().to_string(),
        page,
        strategy: args.strategy.to_string(),
        server_times: !args.no_server_time,
        tolerance_ms: args.tolerance_ms,
        tolerance_pct: args.tolerance_pct,
        compared,
        server_within,
        waterfall_within,
        fidelity_pct: if compared == 0 {
            0.0
        } else {
            100.0 * waterfall_within as f64 / compared as f64
        },
        mean_first_byte_error_ms: mean(|r| r.first_byte_error_ms),
        mean_done_error_ms: mean(|r| r.done_error_ms),
        recorded_page_ms: page_end(
            &mut objects.iter().filter_map(|r| r.recorded.map(|t| t.done_ms)),
        ),
        replayed_page_ms: page_end(
            &mut objects.iter().filter_map(|r| r.replayed.map(|t| t.done_ms)),
        ),
        misses: site.misses(),
        fuzzy_matches: site.fuzzy_matches(),
        objects,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&fidelity)?);
    } else {
        print!("{}", render(&fidelity));
    }
    let all_server = compared > 0 && server_within == compared;
    if fidelity.misses > 0 {
        eprintln!(
            "pagewire replay: {} requests had no recorded answer (404)",
            fidelity.misses
        );
    }
    Ok(if all_server && fidelity.misses == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.1}"))
}

/// The comparison as a table and its summary lines.
pub fn render(f: &Fidelity) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "replay of {} ({}), --strategy {}, server times {}",
        f.page,
        f.archive,
        f.strategy,
        if f.server_times { "replayed" } else { "off" }
    );
    let _ = writeln!(
        s,
        "{:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | ok  object   (ms; server = think time; first/last byte from the page's start)",
        "rec srv", "rec 1st", "rec last", "rep srv", "rep 1st", "rep last"
    );
    for r in &f.objects {
        let _ = writeln!(
            s,
            "{:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {}{}  {}",
            ms(r.recorded.map(|t| t.server_ms)),
            ms(r.recorded.map(|t| t.first_byte_ms)),
            ms(r.recorded.map(|t| t.done_ms)),
            ms(r.replayed.map(|t| t.server_ms)),
            ms(r.replayed.map(|t| t.first_byte_ms)),
            ms(r.replayed.map(|t| t.done_ms)),
            if r.server_ok { 's' } else { '-' },
            if r.waterfall_ok { 'w' } else { '-' },
            r.url
        );
    }
    let _ = writeln!(
        s,
        "tolerance: max({} ms, {}% of the recorded time)",
        f.tolerance_ms, f.tolerance_pct
    );
    let _ = writeln!(
        s,
        "server times reproduced: {}/{} objects",
        f.server_within, f.compared
    );
    let _ = writeln!(
        s,
        "page: recorded {:.1} ms, replayed {:.1} ms; mean |error| first byte {:.1} ms, last byte {:.1} ms",
        f.recorded_page_ms, f.replayed_page_ms, f.mean_first_byte_error_ms, f.mean_done_error_ms
    );
    if f.misses > 0 || f.fuzzy_matches > 0 {
        let _ = writeln!(
            s,
            "misses: {} requests without a recorded answer (404); {} answered by a fuzzy query match",
            f.misses, f.fuzzy_matches
        );
    }
    let _ = writeln!(
        s,
        "replay fidelity: {:.0}% ({}/{} objects with first and last byte within the tolerance)",
        f.fidelity_pct, f.waterfall_within, f.compared
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(first: f64, done: f64, server: f64) -> Option<Timing> {
        Some(Timing {
            sent_ms: 0.0,
            first_byte_ms: first,
            done_ms: done,
            rtt_ms: 0.1,
            server_ms: server,
        })
    }

    #[test]
    fn compare_matches_by_url_and_scores_against_the_tolerance() {
        let rec = vec![
            ("http://a/".to_string(), t(100.0, 101.0, 99.0)),
            ("http://a/x".to_string(), t(300.0, 310.0, 198.0)),
            ("http://a/y".to_string(), None),
        ];
        let rep = vec![
            ("http://a/".to_string(), t(104.0, 105.0, 103.0)),
            // 60 ms late: out of max(15, 10% of 300 = 30).
            ("http://a/x".to_string(), t(360.0, 372.0, 200.0)),
            ("http://a/y".to_string(), t(400.0, 401.0, 0.0)),
            ("http://a/z".to_string(), t(1.0, 2.0, 0.0)),
        ];
        let (rows, compared, server, waterfall) = compare(&rec, &rep, 15.0, 10.0);
        assert_eq!((compared, server, waterfall), (2, 2, 1));
        assert!(rows[0].waterfall_ok && rows[0].server_ok);
        assert!(!rows[1].waterfall_ok && rows[1].server_ok);
        assert!(rows[2].recorded.is_none() && rows[3].recorded.is_none());
        // A tighter tolerance fails the first object's server time (4 ms).
        let (_, _, server, _) = compare(&rec, &rep, 3.0, 1.0);
        assert_eq!(server, 1);
    }
}
