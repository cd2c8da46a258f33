//! A real browser as a Microscape strategy (`chromium-h1`, `-h2`, `-h3`):
//! one bench run of it, the counterpart of the robot's run in `runner`,
//! measured the same way (the link's counters from the start of the run to
//! a quiet link after the browser has closed; one pcap), and the browser
//! rows of the report. The browser itself is driven by the
//! `pagewire-chromium` crate; this is all the lab uses of it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};
use pagewire_emu::Link;
use pagewire_site::microscape;

pub use pagewire_chromium::{find_chromium, BrowserRevalidation, BrowserSummary};
use pagewire_chromium::{pcap_audit_ports, Browser, PageLoad, Protocol, Visit};

use super::config::{BenchConfig, SERVER_PORT, TLS_PORT};
use super::plan::RunSpec;
use crate::model::{Net, Requests, Revalidating, RobotConfig, RunRecord, Strategy, Test};

/// The protocol of a browser strategy. `tls`: the run's throwaway CA
/// (`ca.pem` beside the server's key) and the TLS listener's `host:port`,
/// which `chromium-h2` and `chromium-h3` need.
pub fn protocol(strategy: Strategy, tls: Option<(&Path, &str)>) -> Result<Protocol> {
    let spki = || -> Result<String> {
        use base64::Engine as _;
        use sha2::Digest as _;
        let Some((ca, _)) = tls else {
            bail!("{strategy}: needs the server's TLS listener (pagewire serve --tls)");
        };
        let dir = ca.parent().unwrap_or(Path::new("."));
        let der = pagewire_tls::server_spki_der(&pagewire_tls::Files::in_dir(dir))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&der)))
    };
    match strategy {
        Strategy::ChromiumH1 => Ok(Protocol::H1),
        Strategy::ChromiumH2 => Ok(Protocol::H2 { spki: spki()? }),
        Strategy::ChromiumH3 => Ok(Protocol::H3 {
            spki: spki()?,
            origin: tls.map(|t| t.1.to_string()).unwrap_or_default(),
        }),
        other => bail!("{other} is not a browser strategy"),
    }
}

/// Longest a page load may take (the load event and every request done).
pub fn load_timeout(net: Net) -> Duration {
    match net.like() {
        Net::Lan => Duration::from_secs(60),
        Net::Wan => Duration::from_secs(120),
        // ~200 KB at 28.8 kbit/s is ~60 s; allow for a slow machine.
        _ => Duration::from_secs(400),
    }
}

/// Checks up front that a bench with `strategies` can run its browser ones.
pub fn preflight(strategies: &[Strategy]) -> Result<()> {
    for &s in strategies.iter().filter(|s| s.is_browser()) {
        if find_chromium().is_none() {
            bail!(
                "{s}: no Chromium found (install Debian's `chromium` with scripts/setup-deps.sh, \
                 or set PAGEWIRE_CHROMIUM to the browser binary)"
            );
        }
    }
    Ok(())
}

/// One browser run; infrastructure failures (the link) are errors, a
/// failed load is a record with `error` set.
#[allow(clippy::too_many_arguments)]
pub fn one_run(
    cfg: &BenchConfig,
    link: &Link,
    url: &str,
    tls_ca: Option<std::path::PathBuf>,
    caches: &Path,
    spec: RunSpec,
    expected: &BTreeMap<String, String>,
    link_json: &serde_json::Value,
) -> Result<RunRecord> {
    let origin = format!("{}:{TLS_PORT}", link.server_addr());
    let mut proto = protocol(
        spec.strategy,
        tls_ca.as_deref().map(|ca| (ca, origin.as_str())),
    )?;
    let mut ports = vec![if spec.strategy == Strategy::ChromiumH1 {
        SERVER_PORT
    } else {
        TLS_PORT
    }];
    // A replayed site: every recorded host:port mapped to the server's
    // listeners (http to SERVER_PORT, https to TLS_PORT), as
    // `pagewire browse --replay` does; https origins pinned by the TLS
    // listener's key whatever the strategy (pagewire's TLS server speaks
    // HTTP/2 and HTTP/3, so chromium-h1 speaks HTTP/2 to them).
    let mut switches = Vec::new();
    if let Some(r) = &cfg.replay {
        switches.push(crate::webreplay::resolver_rules(
            &r.origins,
            link.server_addr(),
        ));
        ports = vec![SERVER_PORT, TLS_PORT];
        let https: Vec<String> = r
            .origins
            .iter()
            .filter(|o| o.is_https())
            .map(crate::webreplay::Origin::host_port)
            .collect();
        if !https.is_empty() {
            let Some(ca) = tls_ca.as_deref() else {
                bail!(
                    "{}: the archive's https origins need the TLS listener",
                    spec.strategy
                );
            };
            let spki = crate::webreplay::spki_of(ca.parent().unwrap_or(Path::new(".")))?;
            proto = match proto {
                Protocol::H3 { .. } => Protocol::H3 {
                    spki,
                    origin: https.join(","),
                },
                _ => Protocol::H2 { spki },
            };
        }
    }
    let page_path = match &cfg.replay {
        Some(_) => pagewire_chromium::url_path(url).to_string(),
        None => microscape::PAGE_PATH.to_string(),
    };
    let exe = find_chromium().ok_or_else(|| anyhow::anyhow!("no Chromium found"))?;
    let profile = caches.join(format!(
        "{}-{}-r{}-profile",
        spec.net, spec.strategy, spec.rep
    ));
    if spec.test == Test::First && profile.exists() {
        fs::remove_dir_all(&profile)?;
    }
    let name = format!("{}-{}-{}-r{}", spec.net, spec.strategy, spec.test, spec.rep);
    let pcap_rel = format!("pcaps/{name}.pcap");
    let pcap = cfg.out_dir.join(&pcap_rel);
    let har_rel = format!("har/{name}.har");
    fs::create_dir_all(cfg.out_dir.join("har"))?;
    fs::create_dir_all(cfg.out_dir.join("logs"))?;
    let log = cfg
        .out_dir
        .join("logs")
        .join(format!("chromium-{name}.log"));
    let robot = RobotConfig {
        request_profile: Requests::Chromium,
        revalidation: match spec.test {
            Test::First => Revalidating::BrowserFreshProfile,
            Test::Revalidate => match cfg.browser_revalidation {
                BrowserRevalidation::Validate => Revalidating::BrowserMaxAge0,
                BrowserRevalidation::Heuristic => Revalidating::BrowserHeuristic,
            },
        },
        ..RobotConfig::default()
    };
    let extra = serde_json::json!({
        "made_by": format!("pagewire {} bench", env!("CARGO_PKG_VERSION")),
        "strategy": spec.strategy, "test": spec.test, "net": spec.net, "rep": spec.rep,
        "server": cfg.server.label(), "seed": cfg.seed, "browser": exe.file_name().map(|n| n.to_string_lossy().to_string()),
    });
    // The run starts before the browser does, so anything it sends at
    // start-up is counted (and found by the audit below).
    let load_avg = pagewire_provenance::load_avg();
    link.begin_run_with(Some(&pcap), extra)?;
    let visit = match spec.test {
        Test::First => Visit::First,
        Test::Revalidate => match cfg.browser_revalidation {
            BrowserRevalidation::Validate => Visit::Revalidate,
            BrowserRevalidation::Heuristic => Visit::Revisit,
        },
    };
    let loaded = (|| -> Result<(PageLoad, String)> {
        let mut b = Browser::launch_with(&exe, &profile, &proto, &switches, &log, |c| {
            link.spawn_in_client(c)
        })?;
        let load = b.load(url, visit, load_timeout(spec.net))?;
        let product = b.product.clone();
        b.close()?;
        Ok((load, product))
    })();
    let c = link.end_run()?;
    let (packets, bytes, foreign) =
        pcap_audit_ports(&pcap, link.client_addr(), link.server_addr(), &ports)?;
    let mut errors = Vec::new();
    if packets != c.packets_total || bytes != c.bytes_total {
        errors.push(format!(
            "counters ({} packets, {} bytes) differ from the pcap ({packets}, {bytes})",
            c.packets_total, c.bytes_total
        ));
    }
    if foreign > 0 {
        errors.push(format!(
            "{foreign} packets on the link were not page traffic (browser background traffic)"
        ));
    }
    let (elapsed_s, objects, body, requests, mean_req, browser) = match &loaded {
        Ok((load, product)) => {
            let (ok, bad) = load.check(expected, &page_path, spec.test == Test::Revalidate);
            if ok as usize != expected.len() {
                errors.push(format!(
                    "{ok} of {} objects ok; not ok: {}{}",
                    expected.len(),
                    bad.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                    if bad.len() > 5 { ", ..." } else { "" }
                ));
            }
            let har = load.har(
                product,
                &format!(
                    "pagewire bench --strategy {} ({} {}, rep {})",
                    spec.strategy, spec.net, spec.test, spec.rep
                ),
            );
            fs::write(
                cfg.out_dir.join(&har_rel),
                serde_json::to_string_pretty(&har)?,
            )?;
            let mut sum = load.summary(product);
            sum.foreign_packets = foreign;
            sum.har = har_rel.clone();
            // Body bytes as they crossed (compressed if so), like the
            // robot's: what Chromium received minus the response heads.
            let body: u64 = load
                .entries
                .iter()
                .filter(|e| !e.from_cache && e.wire_status == Some(200))
                .map(|e| {
                    e.encoded_bytes
                        .saturating_sub(e.response_head_bytes.unwrap_or(0))
                })
                .sum();
            let (n, mean) = load.mean_request_bytes();
            (load.load_s, ok, body, n, mean, Some(sum))
        }
        Err(e) => {
            errors.push(format!("{e:#}"));
            (f64::NAN, 0, 0, 0, f64::NAN, None)
        }
    };
    Ok(RunRecord {
        strategy: spec.strategy,
        test: spec.test,
        net: spec.net,
        rep: spec.rep,
        server: cfg.server.label(),
        seed: cfg.seed,
        pagewire_version: env!("CARGO_PKG_VERSION").to_string(),
        packets_total: c.packets_total,
        packets_client_to_server: c.client_to_server.packets,
        packets_server_to_client: c.server_to_client.packets,
        bytes_total: c.bytes_total,
        payload_bytes_total: c.payload_bytes_total,
        line_bytes_total: c.client_to_server.line_bytes + c.server_to_client.line_bytes,
        link_lateness: c.link_lateness,
        elapsed_s,
        metadata_s: None,
        overhead_pct: c.overhead_pct,
        sockets_total: c.connections_opened,
        sockets_max: c.max_open_connections,
        retransmissions: c.retransmissions,
        objects_ok: objects,
        objects_expected: expected.len() as u64,
        body_bytes: body,
        requests,
        mean_request_bytes: mean_req,
        robot,
        pcap: pcap_rel,
        har: cfg.out_dir.join(&har_rel).exists().then(|| har_rel.clone()),
        link: link_json.clone(),
        sweep_rtt_ms: None,
        cross_traffic: None,
        server_nagle: Some(cfg.nagle.server()),
        server_flush: cfg.server_flush.clone(),
        load_avg,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        browser,
    })
}

/// The browser rows' own numbers for one network (printed under its
/// table): Sec is the load event; here also DOMContentLoaded, the last
/// byte, and what Chromium sent (means over the good runs).
pub fn render_browser_rows(net: Net, runs: &[RunRecord]) -> String {
    use std::fmt::Write as _;
    let mut groups: BTreeMap<(Strategy, Test), Vec<&BrowserSummary>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.net == net && r.ok()) {
        if let Some(b) = &r.browser {
            groups.entry((r.strategy, r.test)).or_default().push(b);
        }
    }
    let mut s = String::new();
    if groups.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "Browser rows, {} (Sec above = the load event; means over good runs):",
        net.name().to_uppercase()
    );
    let _ = writeln!(
        s,
        "  {:<34} {:>4} {:>8} {:>8} {:>9} {:>6} {:>5} {:>5} {:>6} {:>6}  product",
        "", "runs", "load s", "DCL s", "lastbyte", "sent", "200", "304", "cache", "conns"
    );
    for ((st, t), bs) in groups {
        let n = bs.len() as f64;
        let mean = |f: &dyn Fn(&BrowserSummary) -> f64| bs.iter().map(|b| f(b)).sum::<f64>() / n;
        let _ = writeln!(
            s,
            "  {:<34} {:>4} {:>8.3} {:>8.3} {:>9.3} {:>6.1} {:>5.1} {:>5.1} {:>6.1} {:>6.1}  {}",
            format!("{} {}", st.name(), t.name()),
            bs.len(),
            mean(&|b| b.load_s),
            mean(&|b| b.dcl_s.unwrap_or(f64::NAN)),
            mean(&|b| b.last_byte_s.unwrap_or(f64::NAN)),
            mean(&|b| f64::from(b.requests_sent)),
            mean(&|b| f64::from(b.status_200)),
            mean(&|b| f64::from(b.status_304)),
            mean(&|b| f64::from(b.from_cache)),
            mean(&|b| f64::from(b.connections)),
            bs[0].product
        );
    }
    s
}
