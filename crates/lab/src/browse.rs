//! `pagewire browse`: headless Chromium on any page over the emulated link,
//! live (through `pagewire shell`'s gateway to the host and its network)
//! or replayed from an archive ([`crate::webreplay`]), with the page's own
//! load, DOMContentLoaded, first and largest contentful paint, and the
//! link's bytes, packets and connections per repetition; a HAR per
//! repetition (and one for all of them with `--har`), `browse.json` and a
//! `report.html` with a waterfall per repetition.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use pagewire_chromium::{find_chromium, Browser, PageLoad, PaintTimes, Protocol, Visit};
use pagewire_emu::gateway::{self, Gateway, GatewayConfig};
use pagewire_emu::{Datapath, Link, LinkConfig, StartOptions};
use pagewire_replay::Archive;
use serde::Serialize;
use serde_json::{json, Value};

use crate::claims::spec::Estimate;
use crate::stats::MeanSd;
use crate::webreplay::{self, Origin, ReplayServers, ReplayTotals};

/// How the browser speaks to `https` origins (`http` ones are always
/// HTTP/1.1, as in any browser).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowseProtocol {
    /// HTTP/1.1 only (`--disable-http2`); live pages only: pagewire's TLS
    /// server speaks HTTP/2 and HTTP/3.
    H1,
    /// HTTP/2 over TLS, no QUIC (the default).
    H2,
    /// HTTP/3 forced on every https origin (replay only: QUIC does not
    /// cross the shell's gateway).
    H3,
}

impl std::str::FromStr for BrowseProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "h1" => Ok(Self::H1),
            "h2" => Ok(Self::H2),
            "h3" => Ok(Self::H3),
            o => Err(format!("expected h1, h2 or h3, got {o:?}")),
        }
    }
}

/// What `pagewire browse` does.
pub struct BrowseConfig {
    /// The page; with `replay` it may be left out (the archive's first
    /// recorded HTML page).
    pub url: Option<String>,
    /// A recorded site (WARC or HAR) to replay instead of the network.
    pub replay: Option<PathBuf>,
    /// Replay each response's recorded server think time.
    pub replay_server_time: bool,
    pub link: LinkConfig,
    pub datapath: Option<Datapath>,
    pub protocol: BrowseProtocol,
    pub reps: u32,
    pub out_dir: PathBuf,
    /// One HAR with every repetition's page, beside the per-rep ones.
    pub har: Option<PathBuf>,
    /// The `pagewire` binary (runs the replay servers).
    pub exe: PathBuf,
    /// Longest one page load may take.
    pub timeout: Duration,
    /// The gateway's DNS upstream and host target (live only).
    pub gateway: Option<GatewayConfig>,
}

/// One repetition.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Rep {
    pub rep: u32,
    /// Seconds from the navigation's start, as the page measured them.
    pub load_s: Option<f64>,
    pub dcl_s: Option<f64>,
    pub fcp_s: Option<f64>,
    pub lcp_s: Option<f64>,
    /// Requests the browser made; those that failed; replay misses (404s
    /// carrying `X-Pagewire-Replay: miss`).
    pub requests: u64,
    pub failed: u64,
    pub misses: u64,
    /// Bytes Chromium received (heads and bodies as they crossed).
    pub received_bytes: u64,
    /// The link's counters over the repetition (IP bytes, both ways).
    pub link_bytes: u64,
    pub packets: u64,
    pub connections: u64,
    pub retransmissions: u64,
    pub protocols: Vec<String>,
    /// The repetition's HAR and pcap, relative to the output directory.
    pub har: String,
    pub pcap: String,
    pub error: Option<String>,
}

/// Mean and 95 % confidence interval (Student t) over the good reps.
#[derive(Clone, Debug, Serialize)]
pub struct Stat {
    pub metric: String,
    pub n: usize,
    pub mean: f64,
    pub ci95: (f64, f64),
}

/// What a browse run found.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub url: String,
    pub product: String,
    pub net: String,
    pub protocol: BrowseProtocol,
    pub replay: Option<PathBuf>,
    pub origins: Vec<String>,
    pub reps: Vec<Rep>,
    pub summary: Vec<Stat>,
    /// What the replay servers counted (replay only).
    pub replay_totals: Option<ReplayTotals>,
    pub load_avg: Option<[f64; 3]>,
    pub report: PathBuf,
}

impl Outcome {
    /// Whether every repetition loaded.
    pub fn ok(&self) -> bool {
        self.reps.iter().all(|r| r.error.is_none())
    }
}

/// The archive's page: `url` if given (it must be recorded), else the first
/// recorded 200 GET whose Content-Type is HTML.
pub fn replay_page(archive: &Archive, url: Option<&str>) -> Result<String> {
    let ok = |e: &&pagewire_replay::Exchange| e.status == 200 && e.method == "GET";
    match url {
        Some(u) => Ok(u.to_string()),
        None => archive
            .exchanges
            .iter()
            .filter(ok)
            .find(|e| {
                e.header("content-type").is_some_and(|v| {
                    String::from_utf8_lossy(v)
                        .to_ascii_lowercase()
                        .contains("html")
                })
            })
            .map(|e| e.url.clone())
            .context("the archive has no recorded 200 GET of an HTML page: name the page URL"),
    }
}

/// Runs the browser `cfg.reps` times and writes the outputs.
pub fn run(cfg: &BrowseConfig) -> Result<Outcome> {
    let chromium = find_chromium().context(
        "no Chromium found: install Debian's `chromium` with scripts/setup-deps.sh, \
         or set PAGEWIRE_CHROMIUM to the browser binary",
    )?;
    if cfg.reps == 0 {
        bail!("--reps must be at least 1");
    }
    // Everything that can be refused is refused before the link starts.
    let replay = match &cfg.replay {
        Some(path) => {
            let archive = Archive::load(path)
                .map_err(anyhow::Error::new)
                .with_context(|| format!("--replay {}: not a usable archive", path.display()))?;
            if archive.exchanges.is_empty() {
                bail!(
                    "--replay {}: the archive holds no exchange{}",
                    path.display(),
                    if archive.skipped.is_empty() {
                        String::new()
                    } else {
                        format!(" (skipped: {})", archive.skipped.join("; "))
                    }
                );
            }
            let origins = webreplay::origins(&archive)
                .with_context(|| format!("--replay {}", path.display()))?;
            let url = replay_page(&archive, cfg.url.as_deref())?;
            let page = Origin::of_url(&url)?;
            if !origins.iter().any(|o| o.host_port() == page.host_port()) {
                bail!(
                    "{url}: the archive has no origin {} (recorded: {})",
                    page.host_port(),
                    origins
                        .iter()
                        .map(|o| format!("{}://{}", o.scheme, o.host_port()))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            let https: Vec<&Origin> = origins.iter().filter(|o| o.is_https()).collect();
            if cfg.protocol == BrowseProtocol::H1 && !https.is_empty() {
                bail!(
                    "--protocol h1: pagewire's TLS server speaks HTTP/2 and HTTP/3 only, and the \
                     archive has https origins ({}); use h2 or h3",
                    https
                        .iter()
                        .map(|o| o.host_port())
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            Some((path.clone(), origins, url))
        }
        None => {
            let url = cfg
                .url
                .clone()
                .context("name the page URL (or --replay ARCHIVE)")?;
            Origin::of_url(&url)?;
            if cfg.protocol == BrowseProtocol::H3 {
                bail!(
                    "--protocol h3 needs --replay: QUIC (UDP) does not cross the gateway to the \
                     host that live pages take"
                );
            }
            None
        }
    };
    let url = match &replay {
        Some((_, _, u)) => u.clone(),
        None => cfg.url.clone().unwrap_or_default(),
    };
    fs::create_dir_all(cfg.out_dir.join("har"))?;
    fs::create_dir_all(cfg.out_dir.join("pcaps"))?;
    fs::create_dir_all(cfg.out_dir.join("logs"))?;

    let link = Link::start_with(
        cfg.link.clone(),
        StartOptions {
            datapath: cfg.datapath,
            client_default_route: replay.is_none(),
        },
    )
    .context("start the emulated link")?;

    // Replay: the servers and what the browser is told; live: the gateway.
    let mut servers = None;
    let mut _gateway = None;
    let mut _resolv = None;
    let mut extra: Vec<String> = Vec::new();
    let protocol = match &replay {
        Some((archive, origins, _)) => {
            let s = ReplayServers::start(
                &link,
                origins,
                &webreplay::ServeOptions {
                    exe: &cfg.exe,
                    archive,
                    dir: &cfg.out_dir.join("logs"),
                    h3: cfg.protocol == BrowseProtocol::H3,
                    server_time: cfg.replay_server_time,
                },
            )?;
            extra.push(webreplay::resolver_rules(origins, link.server_addr()));
            let https: Vec<String> = origins
                .iter()
                .filter(|o| o.is_https())
                .map(Origin::host_port)
                .collect();
            let p = match (&s.spki, cfg.protocol) {
                (None, _) => {
                    extra.push("--disable-quic".into());
                    Protocol::H1
                }
                (Some(spki), BrowseProtocol::H3) => Protocol::H3 {
                    spki: spki.clone(),
                    origin: https.join(","),
                },
                (Some(spki), _) => Protocol::H2 { spki: spki.clone() },
            };
            servers = Some(s);
            p
        }
        None => {
            let gw_cfg = match &cfg.gateway {
                Some(g) => g.clone(),
                None => GatewayConfig::from_env()?,
            };
            _gateway =
                Some(Gateway::start(&link, gw_cfg).context("start the gateway to the host")?);
            let mut resolv = tempfile_in(&cfg.out_dir.join("logs"), "resolv.conf")?;
            resolv
                .1
                .write_all(gateway::shell_resolv_conf().as_bytes())?;
            resolv.1.flush()?;
            _resolv = Some(resolv);
            extra.push("--disable-quic".into());
            if cfg.protocol == BrowseProtocol::H1 {
                extra.push("--disable-http2".into());
            }
            Protocol::H1
        }
    };
    let resolv_path = _resolv.as_ref().map(|r| r.0.clone());
    let spawn = |c: std::process::Command| -> Result<std::process::Child> {
        let mut c = c;
        if let Some(p) = &resolv_path {
            pagewire_emu::shell::prepare(&mut c, p, pagewire_emu::privilege::outside_ids(), false)?;
        }
        link.spawn_in_client(c)
    };

    let load_avg = pagewire_provenance::load_avg();
    let mut reps = Vec::new();
    let mut product = String::new();
    let mut hars = Vec::new();
    for rep in 1..=cfg.reps {
        if let Some(sig) = pagewire_emu::cli::terminated_by() {
            bail!("stopped by signal {sig} after {} repetitions", rep - 1);
        }
        let profile = cfg.out_dir.join(format!("profile-r{rep}"));
        if profile.exists() {
            fs::remove_dir_all(&profile)?;
        }
        let pcap_rel = format!("pcaps/r{rep}.pcap");
        let har_rel = format!("har/r{rep}.har");
        let log = cfg.out_dir.join(format!("logs/chromium-r{rep}.log"));
        link.begin_run_with(
            Some(&cfg.out_dir.join(&pcap_rel)),
            json!({"made_by": format!("pagewire {} browse", env!("CARGO_PKG_VERSION")),
                   "url": url, "rep": rep}),
        )?;
        let loaded = (|| -> Result<(PageLoad, Option<PaintTimes>, String)> {
            let mut b = Browser::launch_with(&chromium, &profile, &protocol, &extra, &log, spawn)?;
            let l = b.load(&url, Visit::First, cfg.timeout)?;
            let p = b.paint_times().ok();
            let product = b.product.clone();
            b.close()?;
            Ok((l, p, product))
        })();
        let c = link.end_run()?;
        let _ = fs::remove_dir_all(&profile);
        let mut r = Rep {
            rep,
            link_bytes: c.bytes_total,
            packets: c.packets_total,
            connections: c.connections_opened,
            retransmissions: c.retransmissions,
            pcap: pcap_rel,
            ..Rep::default()
        };
        match loaded {
            Ok((l, paint, prod)) => {
                product = prod;
                let paint = paint.unwrap_or_default();
                r.load_s = paint.load_s.or(Some(l.load_s));
                r.dcl_s = paint.dcl_s.or(l.dcl_s);
                r.fcp_s = paint.fcp_s;
                r.lcp_s = paint.lcp_s;
                let mut protos = std::collections::BTreeSet::new();
                for e in l.entries.iter().filter(|e| !e.from_cache) {
                    r.requests += 1;
                    r.received_bytes += e.encoded_bytes;
                    if e.failed.is_some() {
                        r.failed += 1;
                    }
                    if e.response_headers
                        .iter()
                        .any(|(k, v)| k.eq_ignore_ascii_case(MISS_FIELD) && v == "miss")
                    {
                        r.misses += 1;
                    }
                    if !e.protocol.is_empty() {
                        protos.insert(e.protocol.clone());
                    }
                }
                r.protocols = protos.into_iter().collect();
                let mut har = l.har(
                    &product,
                    &format!(
                        "pagewire browse {url} ({} link, rep {rep}{})",
                        cfg.link.profile,
                        match &cfg.replay {
                            Some(a) => format!(", replayed from {}", a.display()),
                            None => String::new(),
                        }
                    ),
                );
                har["log"]["pages"][0]["pageTimings"]["_firstContentfulPaint"] =
                    json!(r.fcp_s.map(|s| s * 1e3));
                har["log"]["pages"][0]["pageTimings"]["_largestContentfulPaint"] =
                    json!(r.lcp_s.map(|s| s * 1e3));
                fs::write(
                    cfg.out_dir.join(&har_rel),
                    serde_json::to_string_pretty(&har)?,
                )?;
                r.har = har_rel;
                hars.push((rep, har));
            }
            Err(e) => {
                let msg = format!("{e:#}");
                if rep == 1 {
                    bail!(
                        "could not load {url}: {msg}{}",
                        if replay.is_none() {
                            " (is it reachable from this host? the browser goes out through \
                             the link's gateway)"
                        } else {
                            ""
                        }
                    );
                }
                r.error = Some(msg);
            }
        }
        reps.push(r);
    }
    let replay_totals = servers.take().map(ReplayServers::stop);
    drop(_gateway);
    drop(link);

    if let Some(path) = &cfg.har {
        fs::write(path, serde_json::to_string_pretty(&combined_har(&hars))?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    let out = Outcome {
        url,
        product,
        net: cfg.link.profile.clone(),
        protocol: cfg.protocol,
        replay: cfg.replay.clone(),
        origins: replay
            .as_ref()
            .map(|(_, os, _)| {
                os.iter()
                    .map(|o| format!("{}://{}", o.scheme, o.host_port()))
                    .collect()
            })
            .unwrap_or_default(),
        summary: summarize(&reps),
        reps,
        replay_totals,
        load_avg,
        report: cfg.out_dir.join("report.html"),
    };
    fs::write(
        cfg.out_dir.join("browse.json"),
        serde_json::to_string_pretty(&out)?,
    )?;
    fs::write(&out.report, report_html(&out, &hars))?;
    Ok(out)
}

/// The field a replay miss's 404 carries (`pagewire serve --replay`).
const MISS_FIELD: &str = "x-pagewire-replay";

/// A named file in `dir` (removed with the run's output, not before).
fn tempfile_in(dir: &Path, name: &str) -> Result<(PathBuf, fs::File)> {
    let p = dir.join(name);
    let f = fs::File::create(&p).with_context(|| format!("create {}", p.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644))?;
    }
    Ok((p, f))
}

/// Mean and 95 % CI of each metric over the reps that have it.
pub fn summarize(reps: &[Rep]) -> Vec<Stat> {
    type Get = fn(&Rep) -> Option<f64>;
    let metrics: [(&str, Get); 9] = [
        ("load_s", |r| r.load_s),
        ("dcl_s", |r| r.dcl_s),
        ("fcp_s", |r| r.fcp_s),
        ("lcp_s", |r| r.lcp_s),
        ("link_bytes", |r| Some(r.link_bytes as f64)),
        ("packets", |r| Some(r.packets as f64)),
        ("connections", |r| Some(r.connections as f64)),
        ("requests", |r| Some(r.requests as f64)),
        ("misses", |r| Some(r.misses as f64)),
    ];
    metrics
        .iter()
        .map(|(name, get)| {
            let m = MeanSd::of(reps.iter().filter(|r| r.error.is_none()).filter_map(get));
            let ci = if m.n >= 2 {
                Estimate::from(m).ci95()
            } else {
                (f64::NAN, f64::NAN)
            };
            Stat {
                metric: name.to_string(),
                n: m.n,
                mean: m.mean,
                ci95: ci,
            }
        })
        .collect()
}

/// One HAR with every repetition as its own page.
fn combined_har(hars: &[(u32, Value)]) -> Value {
    let mut pages = Vec::new();
    let mut entries = Vec::new();
    let mut base = hars.first().map(|h| h.1.clone()).unwrap_or_else(
        || json!({"log": {"version": "1.2", "creator": {"name": "pagewire"}, "pages": [], "entries": []}}),
    );
    for (rep, h) in hars {
        let id = format!("rep_{rep}");
        if let Some(p) = h["log"]["pages"].get(0) {
            let mut p = p.clone();
            p["id"] = json!(id);
            pages.push(p);
        }
        for e in h["log"]["entries"].as_array().into_iter().flatten() {
            let mut e = e.clone();
            e["pageref"] = json!(id);
            entries.push(e);
        }
    }
    base["log"]["pages"] = json!(pages);
    base["log"]["entries"] = json!(entries);
    base
}

fn fmt_s(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

/// The terminal's table: one line per rep, then mean [95 % CI].
pub fn render_text(o: &Outcome) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "pagewire browse {} -- {} link, {:?}, {}{}",
        o.url,
        o.net,
        o.protocol,
        o.product,
        match &o.replay {
            Some(a) => format!(", replayed from {}", a.display()),
            None => ", live".into(),
        }
    );
    let _ = writeln!(
        s,
        "{:>4} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>6} {:>5} {:>6} {:>7}  protocols",
        "rep",
        "load s",
        "DCL s",
        "FCP s",
        "LCP s",
        "KB (link)",
        "packets",
        "conns",
        "reqs",
        "failed",
        "misses"
    );
    for r in &o.reps {
        if let Some(e) = &r.error {
            let _ = writeln!(s, "{:>4} failed: {e}", r.rep);
            continue;
        }
        let _ = writeln!(
            s,
            "{:>4} {:>8} {:>8} {:>8} {:>8} {:>9.1} {:>8} {:>6} {:>5} {:>6} {:>7}  {}",
            r.rep,
            fmt_s(r.load_s),
            fmt_s(r.dcl_s),
            fmt_s(r.fcp_s),
            fmt_s(r.lcp_s),
            r.link_bytes as f64 / 1e3,
            r.packets,
            r.connections,
            r.requests,
            r.failed,
            r.misses,
            r.protocols.join(",")
        );
    }
    let _ = writeln!(s, "mean [95% CI] over the good repetitions:");
    for st in &o.summary {
        let _ = writeln!(s, "  {:<12} {}", st.metric, fmt_stat(st));
    }
    if let Some(t) = &o.replay_totals {
        let _ = writeln!(
            s,
            "replay: {} misses (404, no recorded answer), {} fuzzy query matches, over all repetitions",
            t.misses, t.fuzzy_matches
        );
    }
    let _ = writeln!(s, "report: {}", o.report.display());
    s
}

fn fmt_stat(st: &Stat) -> String {
    if st.n == 0 {
        return "-".into();
    }
    if st.ci95.0.is_finite() {
        format!(
            "{:.4} [{:.4}, {:.4}] (n={})",
            st.mean, st.ci95.0, st.ci95.1, st.n
        )
    } else {
        format!("{:.4} (n={})", st.mean, st.n)
    }
}

/// report.html: the summary, the reps, a waterfall per rep.
pub fn report_html(o: &Outcome, hars: &[(u32, Value)]) -> String {
    use crate::html::{esc, table, waterfall, CSS};
    let mut h = format!(
        "<!doctype html><html><head><meta charset=utf-8><title>pagewire browse {}</title>\
         <style>{CSS}</style></head><body>\n<h1>pagewire browse {}</h1>\n<p class=prov>{} link, \
         protocol {:?}, {}; {}; load average at start {}</p>\n",
        esc(&o.url),
        esc(&o.url),
        esc(&o.net),
        o.protocol,
        esc(&o.product),
        match &o.replay {
            Some(a) => format!(
                "replayed from {} (origins: {})",
                esc(&a.display().to_string()),
                esc(&o.origins.join(" "))
            ),
            None => "live".into(),
        },
        o.load_avg
            .map(|l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]))
            .unwrap_or_else(|| "?".into())
    );
    let rows: Vec<Vec<String>> = o
        .summary
        .iter()
        .map(|s| vec![s.metric.clone(), fmt_stat(s)])
        .collect();
    h.push_str(&table(
        "Mean [95% CI] over the good repetitions",
        &["metric".into(), "value".into()],
        &rows,
    ));
    let head: Vec<String> = [
        "rep",
        "load s",
        "DCL s",
        "FCP s",
        "LCP s",
        "link bytes",
        "packets",
        "conns",
        "requests",
        "failed",
        "misses",
        "error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows: Vec<Vec<String>> = o
        .reps
        .iter()
        .map(|r| {
            vec![
                r.rep.to_string(),
                fmt_s(r.load_s),
                fmt_s(r.dcl_s),
                fmt_s(r.fcp_s),
                fmt_s(r.lcp_s),
                r.link_bytes.to_string(),
                r.packets.to_string(),
                r.connections.to_string(),
                r.requests.to_string(),
                r.failed.to_string(),
                r.misses.to_string(),
                r.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    h.push_str(&table("Repetitions", &head, &rows));
    for (rep, har) in hars {
        let _ = write!(
            h,
            "<details open><summary>Waterfall, repetition {rep} (<a href=\"har/r{rep}.har\">HAR</a>)</summary>\n{}</details>\n",
            waterfall(har)
        );
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_has_a_ci_from_two_reps_and_skips_failed_ones() {
        let rep = |load: f64| Rep {
            load_s: Some(load),
            packets: 100,
            ..Rep::default()
        };
        let mut bad = rep(99.0);
        bad.error = Some("x".into());
        let s = summarize(&[rep(1.0), rep(3.0), bad]);
        let load = s.iter().find(|s| s.metric == "load_s").unwrap();
        assert_eq!(load.n, 2);
        assert!((load.mean - 2.0).abs() < 1e-12);
        assert!(load.ci95.0 < 1.0 && load.ci95.1 > 3.0, "{:?}", load.ci95);
        let fcp = s.iter().find(|s| s.metric == "fcp_s").unwrap();
        assert_eq!(fcp.n, 0);
    }

    #[test]
    fn combined_har_has_a_page_per_rep() {
        let h = |n: usize| {
            json!({"log": {"version": "1.2", "pages": [{"id": "page_1"}],
                   "entries": vec![json!({"request": {"url": "http://a/"}}); n]}})
        };
        let c = combined_har(&[(1, h(2)), (2, h(3))]);
        assert_eq!(c["log"]["pages"].as_array().unwrap().len(), 2);
        let es = c["log"]["entries"].as_array().unwrap();
        assert_eq!(es.len(), 5);
        assert_eq!(es[4]["pageref"], "rep_2");
    }
}
