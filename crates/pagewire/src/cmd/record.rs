//! `pagewire record`: load a page and write every exchange to a WARC file,
//! for `pagewire serve --replay`, `pagewire replay` and `pagewire bench
//! --replay`. Each response record carries its place in the waterfall and
//! its server think time (`WARC-Pagewire-Timing`).
//!
//! By default headless Chromium loads the page through a recording proxy
//! ([`proxy`]): `http://` and `https://` pages, every origin, every request
//! a script makes. `--with robot` fetches with pagewire's robot instead
//! (plain HTTP, the page and the objects its HTML names; timings from
//! `replay::timings`).
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use pagewire_client::{ConnectTo, FetchConfig, Outcome, Strategy, Timeouts};
use pagewire_emu::{Datapath, Link, LinkConfig, StartOptions};
use pagewire_replay::{Archive, Exchange};
use pagewire_server::replay::ReplaySite;

mod proxy;

/// Who loads the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum With {
    /// Headless Chromium through the recording proxy (HTTP and HTTPS).
    Chromium,
    /// pagewire's robot (plain HTTP; the objects the HTML names).
    Robot,
}

#[derive(clap::Args)]
pub struct Args {
    /// Page URL (http[s]://host[:port]/path; https needs the default --with chromium).
    pub url: String,
    /// The WARC file to write (`.warc`, or `.warc.gz` for gzip per record).
    /// (`--out` is an alias.)
    #[arg(long = "out-file", alias = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Who loads the page: chromium (headless, through a recording proxy)
    /// or robot.
    #[arg(long = "with", value_enum, default_value = "chromium")]
    pub with: With,
    /// With --with robot: how it fetches, pipeline (default), http11 or
    /// http10 (no content coding is asked for, so bodies are recorded as
    /// the server sends them).
    #[arg(long, value_parser = super::recording_strategy)]
    pub strategy: Option<Strategy>,
    /// Connect to ADDR for HOST:PORT (curl's --resolve HOST:PORT:ADDR).
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = ConnectTo::parse_resolve)]
    pub resolve: Vec<ConnectTo>,
    /// Connect to ADDR:PORT2 for HOST1:PORT1 (curl's --connect-to).
    #[arg(long, value_name = "HOST1:PORT1:ADDR:PORT2", value_parser = ConnectTo::parse_connect_to)]
    pub connect_to: Vec<ConnectTo>,
    /// With --with chromium: also trust the CA certificates in FILE (PEM)
    /// for origins' TLS, besides the system's trust anchors (a local test
    /// site's CA).
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Option<PathBuf>,
    /// With --with chromium: after the page's load event, record until no
    /// request has been in flight for this long (requests a script makes
    /// late), within --timeout.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub quiet: Duration,
    /// With --with robot: follow up to N redirects of the page (the final
    /// page is recorded). Chromium follows redirects itself and records
    /// each.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=20))]
    pub max_redirects: u8,
    /// The whole recording's deadline, e.g. 10m.
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
    /// Print what was recorded as one JSON object (instead of the lines).
    #[arg(long)]
    pub json: bool,
    /// With --with chromium: put the recording browser behind an emulated
    /// link (lan, lan100, t1, wan, ppp, none, with optional +codel / +pie /
    /// +fq-codel), as `pagewire browse --net` does. The browser runs in the
    /// link's client namespace and the recording proxy listens on the far
    /// side, so every byte the browser sends or receives crosses the link,
    /// while the proxy reaches the origins from this host (and times their
    /// answers there: server times do not include the link). The link's
    /// configuration and counters go into the archive's warcinfo record.
    /// Any link flag (--rtt, --rate, --loss, ...) implies `--net none`
    /// under it.
    #[arg(long, value_name = "PROFILE")]
    pub net: Option<String>,
    #[command(flatten)]
    pub link: super::linkopts::LinkOptions,
    /// With --net: seed for loss and jitter.
    #[arg(long, default_value_t = super::DEFAULT_SEED)]
    pub seed: u64,
    /// With --net: write what crossed the link to this pcap (+ FILE.json).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// With --net: how packets reach the forwarder: tun, packet or auto
    /// (default: $PAGEWIRE_DATAPATH, else auto).
    #[arg(long, value_name = "tun|packet|auto")]
    pub datapath: Option<String>,
}

/// The emulated link a recording is made on (`--net` and the link flags).
struct OnLink {
    config: LinkConfig,
    datapath: Option<Datapath>,
}

impl Args {
    /// `None` without --net and link flags (the browser reaches the proxy
    /// on loopback); bad values are usage errors, found before anything
    /// starts.
    fn on_link(&self) -> anyhow::Result<Option<OnLink>> {
        let overrides = self.link.parse().map_err(super::usage_from)?;
        if self.net.is_none() && !self.link.any() {
            if self.pcap.is_some() || self.datapath.is_some() {
                crate::usage_bail!(
                    "--pcap and --datapath are for a recording on a link: add --net PROFILE"
                );
            }
            return Ok(None);
        }
        let profile = self.net.as_deref().unwrap_or("none");
        let config = overrides
            .config(profile, self.seed)
            .map_err(super::usage_from)?;
        let datapath = match self.datapath.as_deref() {
            Some(d) => Datapath::parse(d).map_err(super::usage_from)?,
            None => Datapath::from_env().map_err(super::usage_from)?,
        };
        Ok(Some(OnLink { config, datapath }))
    }
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
    match args.with {
        With::Robot => run_robot(args),
        With::Chromium => {
            if let Some(s) = args.strategy {
                anyhow::bail!("--strategy {s} is the robot's: add --with robot, or leave it out");
            }
            if args.max_redirects > 0 {
                anyhow::bail!(
                    "--max-redirects is the robot's: Chromium follows redirects itself (add --with robot)"
                );
            }
            run_chromium(args)
        }
    }
}

fn run_robot(args: Args) -> anyhow::Result<ExitCode> {
    if args.upstream_ca.is_some() {
        anyhow::bail!("--upstream-ca is for --with chromium (the robot records plain HTTP)");
    }
    if args.on_link()?.is_some() {
        anyhow::bail!(
            "--net and the link flags are for --with chromium (the robot records from this host; \
             `pagewire bench --replay` puts it on a link)"
        );
    }
    let strategy = args.strategy.unwrap_or(Strategy::Pipeline);
    let mut cfg = FetchConfig::new(args.url.clone(), strategy);
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
            "strategy": strategy.to_string(),
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
            strategy,
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

/// Records with headless Chromium through the recording proxy: a CA for
/// this recording only (the browser trusts it by SPKI hash, nothing is
/// installed), a fresh profile, the page's load event plus `--quiet`; the
/// browser and the proxy are torn down on every path out.
fn run_chromium(args: Args) -> anyhow::Result<ExitCode> {
    let scheme = args
        .url
        .split_once("://")
        .map(|(s, _)| s.to_ascii_lowercase());
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        anyhow::bail!("{}: record takes an http:// or https:// URL", args.url);
    }
    let on_link = args.on_link()?;
    if let Some(l) = &on_link {
        // Still single-threaded (the proxy's runtime is not started yet):
        // the only moment a user namespace can be entered (a no-op as
        // root). Checked before any file is written.
        pagewire_emu::privilege::enter_user_namespace()?;
        pagewire_emu::privilege::check_for(Datapath::resolve(l.datapath))?;
    }
    let exe = pagewire_chromium::find_chromium().context(
        "no Chromium found: install chromium (scripts/setup-deps.sh does), set PAGEWIRE_CHROMIUM, \
         or record with --with robot",
    )?;
    let ca = Arc::new(pagewire_tls::MintingCa::new(&[pagewire_tls::ALPN_HTTP11])?);
    let upstream_tls = Arc::new(pagewire_tls::upstream_client_config(
        args.upstream_ca.as_deref(),
        &[pagewire_tls::ALPN_H2, pagewire_tls::ALPN_HTTP11],
    )?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("pw-record-proxy")
        .enable_all()
        .build()
        .context("start the proxy's runtime")?;
    let link = match &on_link {
        Some(l) => Some(
            Link::start_with(
                l.config.clone(),
                StartOptions {
                    datapath: l.datapath,
                    client_default_route: false,
                },
            )
            .context("start the emulated link")?,
        ),
        None => None,
    };
    let opts = proxy::Options {
        upstream_tls,
        connect_to: args
            .resolve
            .iter()
            .chain(&args.connect_to)
            .cloned()
            .collect(),
        ca: ca.clone(),
    };
    let proxy = match &link {
        // The proxy's listening socket is made in the server namespace;
        // its connections to origins are made by the runtime's threads,
        // in this process's own network namespace.
        Some(link) => {
            let server = link.server_addr();
            let listener = link
                .run_in_server(move || std::net::TcpListener::bind((server, 0)))?
                .with_context(|| format!("listen on {server} in the link's server namespace"))?;
            rt.block_on(proxy::Proxy::start_on(listener, opts))
                .context("start the recording proxy behind the link")?
        }
        None => rt
            .block_on(proxy::Proxy::start(opts))
            .context("start the recording proxy on 127.0.0.1")?,
    };
    let work = tempfile::Builder::new()
        .prefix("pagewire-record-")
        .tempdir()
        .context("make a directory for the browser profile")?;
    let log = work.path().join("chromium.log");
    if let Some(link) = &link {
        link.begin_run_with(
            args.pcap.as_deref(),
            serde_json::json!({
                "made_by": format!("pagewire {} record", env!("CARGO_PKG_VERSION")),
                "url": args.url,
            }),
        )?;
    }
    let loaded = load_through(&exe, work.path(), &log, &proxy, &ca, &args, link.as_ref());
    let counters = link.as_ref().map(Link::end_run).transpose()?;
    // The proxy stops with its runtime: no task outlives the recording.
    let recorded = proxy.take_log();
    rt.shutdown_timeout(Duration::from_secs(1));
    let realtime = link.as_ref().is_some_and(Link::realtime_forwarder);
    drop(link);
    let exe_log = std::fs::read_to_string(&log).unwrap_or_default();
    let mut failed = false;
    if let Err(e) = &loaded {
        failed = true;
        let tail: Vec<&str> = exe_log.lines().rev().take(8).collect();
        eprintln!("pagewire record: the page did not load whole: {e:#}");
        if !tail.is_empty() {
            eprintln!(
                "pagewire record: the browser's last words:\n  {}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n  ")
            );
        }
    }
    if !args.json {
        for e in &recorded.exchanges {
            let server = e
                .timing
                .map_or("-".to_string(), |t| format!("{:.1}ms", t.server_ms));
            println!("  {} {:>8} {:>9} {}", e.status, e.body.len(), server, e.url);
        }
    }
    if recorded.exchanges.is_empty() {
        anyhow::bail!("nothing to record: no response came back for {}", args.url);
    }
    let software = format!("pagewire {} record (chromium)", env!("CARGO_PKG_VERSION"));
    let conditions = conditions(on_link.as_ref(), counters.as_ref(), realtime);
    let bytes = pagewire_replay::warc_io::write_with_info(
        &args.out,
        &recorded.exchanges,
        &software,
        &conditions.fields(),
    )
    .map_err(anyhow::Error::new)?;
    let origins: std::collections::BTreeSet<&str> = recorded
        .exchanges
        .iter()
        .filter_map(|e| pagewire_replay::split_url(&e.url).map(|(_, a, _)| a))
        .collect();
    let body: usize = recorded.exchanges.iter().map(|e| e.body.len()).sum();
    if args.json {
        let list: Vec<_> = recorded
            .exchanges
            .iter()
            .map(|e| {
                serde_json::json!({
                    "url": e.url,
                    "status": e.status,
                    "body_bytes": e.body.len(),
                    "server_ms": e.timing.map(|t| t.server_ms),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "page": args.url,
            "with": "chromium",
            "browser": loaded.as_ref().ok(),
            "out": args.out.display().to_string(),
            "archive_bytes": bytes,
            "exchanges": recorded.exchanges.len(),
            "body_bytes": body,
            "h2_exchanges": recorded.h2,
            "link": conditions.link,
            "link_counters": conditions.counters,
            "origins": origins,
            "recorded": list,
            "not_recorded": recorded.errors,
        });
        println!("{doc}");
    } else {
        println!(
        "recorded {} exchanges ({} body bytes, {} over HTTP/2) of {} from {} origins ({}) with {} into {} ({} bytes)",
        recorded.exchanges.len(),
        body,
        recorded.h2,
        args.url,
        origins.len(),
        origins.into_iter().collect::<Vec<_>>().join(" "),
        loaded.as_ref().map_or("Chromium", |p| p.as_str()),
        args.out.display(),
        bytes
    );
        if let (Some(l), Some(c)) = (&on_link, &counters) {
            println!(
                "on the {} link (rtt {:.1} ms): {} bytes in {} packets, {} connections, {} retransmissions crossed it",
                l.config.profile,
                l.config.rtt.as_secs_f64() * 1e3,
                c.bytes_total,
                c.packets_total,
                c.connections_opened,
                c.retransmissions
            );
        }
    }
    if !recorded.errors.is_empty() {
        eprintln!(
            "pagewire record: {} requests without a whole response not recorded:",
            recorded.errors.len()
        );
        for e in &recorded.errors {
            eprintln!("  {e}");
        }
        failed = true;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The conditions a recording was made under, for the archive's warcinfo
/// record and `--json`.
struct Conditions {
    /// The link's configuration (`none`: no emulated link).
    link: serde_json::Value,
    /// What crossed the link during the recording.
    counters: serde_json::Value,
}

fn conditions(
    on_link: Option<&OnLink>,
    counters: Option<&pagewire_emu::LinkCounters>,
    realtime: bool,
) -> Conditions {
    let link = match on_link {
        None => serde_json::Value::String("none".into()),
        Some(l) => {
            let mut v = serde_json::to_value(&l.config).unwrap_or(serde_json::Value::Null);
            v["forwarder_realtime"] = realtime.into();
            v
        }
    };
    let counters = counters.map_or(serde_json::Value::Null, |c| {
        serde_json::json!({
            "bytes": c.bytes_total,
            "packets": c.packets_total,
            "connections": c.connections_opened,
            "retransmissions": c.retransmissions,
        })
    });
    Conditions { link, counters }
}

impl Conditions {
    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut f = vec![
            (
                pagewire_replay::RECORDED_LINK_FIELD,
                match &self.link {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
            ),
            (
                "pagewire-server-time",
                "measured by the recording proxy on the origins' side of the link: first \
                 response byte less request sent less the TCP connect time"
                    .to_string(),
            ),
        ];
        if !self.counters.is_null() {
            f.push(("pagewire-recorded-link-counters", self.counters.to_string()));
        }
        f
    }
}

/// Hosts Chromium itself calls (component updates, account checks, safe
/// browsing) that no page loads from: they go around the proxy, so they are
/// neither recorded nor counted as the page's failures.
const BROWSER_SERVICES: &str = "update.googleapis.com;accounts.google.com;clients2.google.com;\
     clientservices.googleapis.com;safebrowsing.googleapis.com;optimizationguide-pa.googleapis.com;\
     content-autofill.googleapis.com;*.gvt1.com;edgedl.me.gvt1.com";

/// Starts Chromium on the proxy, loads the page, waits for `--quiet`
/// without requests, closes the browser; returns its product name. The
/// browser's process group is killed on every path out (`Browser`'s drop).
fn load_through(
    exe: &Path,
    work: &Path,
    log: &Path,
    proxy: &proxy::Proxy,
    ca: &pagewire_tls::MintingCa,
    args: &Args,
    link: Option<&Link>,
) -> anyhow::Result<String> {
    let started = Instant::now();
    let deadline = started + args.timeout;
    let protocol = pagewire_chromium::Protocol::H2 {
        spki: ca.spki_sha256_base64(),
    };
    let proxy_addr = proxy.addr;
    let mut browser = pagewire_chromium::Browser::launch(
        exe,
        &work.join("profile"),
        &protocol,
        log,
        |mut cmd| {
            use std::os::unix::process::CommandExt as _;
            // Every request through the proxy, loopback origins included
            // (Chromium bypasses proxies for them unless told otherwise),
            // except the browser's own services, which it calls even with
            // background networking off and which are no page's.
            cmd.arg(format!("--proxy-server=http://{proxy_addr}"))
                .arg(format!(
                    "--proxy-bypass-list=<-loopback>;{BROWSER_SERVICES}"
                ));
            match link {
                // In the client namespace (own process group, killed with
                // the link): its one route is the link.
                Some(link) => link.spawn_in_client(cmd),
                None => {
                    cmd.process_group(0);
                    Ok(cmd.spawn()?)
                }
            }
        },
    )?;
    let product = browser.product.clone();
    let loaded = browser.load(&args.url, pagewire_chromium::Visit::First, args.timeout);
    // Requests a script makes after the load event: wait until none has
    // been in flight for --quiet (bounded by --timeout).
    let mut quiet_reached = false;
    while Instant::now() < deadline {
        if proxy.idle_for().is_some_and(|d| d >= args.quiet) {
            quiet_reached = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = browser.close();
    let page = loaded?;
    if !quiet_reached {
        anyhow::bail!(
            "requests were still in flight {:?} after the start (--timeout); {} seen",
            args.timeout,
            proxy.requests()
        );
    }
    eprintln!(
        "pagewire record: {} loaded {} in {:.0} ms (load event), recorded until {:?} without requests",
        product,
        args.url,
        page.load_s * 1e3,
        args.quiet
    );
    Ok(product)
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
