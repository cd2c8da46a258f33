//! Three ways to make a page load slow, side by side (`pagewire
//! throttle`): the same page loaded by headless Chromium
//!
//! - **packet**: over the packet-level emulated link (the reference);
//! - **cdp**: over the unshaped link (`none`: the forwarder alone) with
//!   request-level throttling through DevTools'
//!   `Network.emulateNetworkConditions` at the same RTT (as its latency)
//!   and the same rates;
//! - **model**: predicted from one unthrottled trace (the `none` link, no
//!   emulation) by [`lantern`], Lighthouse's simulated throttling rebuilt
//!   on the expected-time model's TCP;
//!
//! for each page, link profile and protocol, with every object's first and
//! last byte, and each method's error against the packet-level load.

pub mod lantern;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use pagewire_chromium::{
    find_chromium, pcap_audit, url_path, Browser, Conditions, PageLoad, Visit,
};
use pagewire_emu::Link;
use pagewire_link::LinkConfig;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::Strategy;
use lantern::{Setup, Target, Trace, TraceRequest};

/// Plain HTTP's port and the TLS listener's (h2 over TCP, h3 over UDP).
const HTTP_PORT: u16 = 80;
const TLS_PORT: u16 = 443;
const SERVER_START: Duration = Duration::from_secs(20);

/// The pages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PageSource {
    /// Paper 001's Microscape page, generated from the seed.
    Microscape { seed: u64 },
    /// A recorded page (WARC or HAR): its origin's recorded 200 GETs are
    /// written into a directory and served like the Microscape site.
    Recorded { archive: PathBuf, name: String },
}

impl PageSource {
    pub fn name(&self) -> String {
        match self {
            PageSource::Microscape { .. } => "microscape".into(),
            PageSource::Recorded { name, .. } => name.clone(),
        }
    }
}

/// The protocol Chromium speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    H1,
    H2,
    H3,
}

impl Proto {
    pub const ALL: [Proto; 3] = [Proto::H1, Proto::H2, Proto::H3];
    pub fn name(self) -> &'static str {
        match self {
            Proto::H1 => "h1",
            Proto::H2 => "h2",
            Proto::H3 => "h3",
        }
    }
    fn strategy(self) -> Strategy {
        match self {
            Proto::H1 => Strategy::ChromiumH1,
            Proto::H2 => Strategy::ChromiumH2,
            Proto::H3 => Strategy::ChromiumH3,
        }
    }
    fn label(self) -> &'static str {
        match self {
            Proto::H1 => "HTTP/1.1",
            Proto::H2 => "HTTP/2",
            Proto::H3 => "HTTP/3",
        }
    }
}

impl std::str::FromStr for Proto {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "h1" | "http/1.1" => Ok(Proto::H1),
            "h2" => Ok(Proto::H2),
            "h3" => Ok(Proto::H3),
            o => Err(format!("unknown protocol {o:?} (expected h1, h2 or h3)")),
        }
    }
}

/// How a load was slowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Packet-level emulated link (the reference).
    Packet,
    /// DevTools request-level throttling on the unshaped link.
    Cdp,
    /// Predicted from the unthrottled trace (Lantern-style).
    Model,
    /// The unthrottled trace itself (the model's input).
    Unthrottled,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Packet => "packet",
            Method::Cdp => "cdp",
            Method::Model => "model",
            Method::Unthrottled => "unthrottled",
        }
    }
}

/// What `pagewire throttle` runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The pagewire binary that serves (`pagewire serve`).
    pub exe: PathBuf,
    pub out_dir: PathBuf,
    pub pages: Vec<PageSource>,
    /// Link profiles (`lan`, `wan`, `ppp`, ...).
    pub nets: Vec<String>,
    pub protos: Vec<Proto>,
    /// Loads per (page, link, protocol, method); the medians are compared.
    pub reps: u32,
    pub command: Vec<String>,
}

/// One object of one load, s from the navigation's start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ObjectTimes {
    pub path: String,
    pub start_s: f64,
    pub first_byte_s: f64,
    pub last_byte_s: f64,
    pub bytes: u64,
}

/// One load (measured or predicted).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Load {
    pub page: String,
    /// The target link profile (the unthrottled trace: `none`).
    pub net: String,
    pub proto: Proto,
    pub method: Method,
    pub rep: u32,
    pub load_s: f64,
    pub last_byte_s: f64,
    pub objects: Vec<ObjectTimes>,
    /// Expected objects that arrived byte-exact with a 200.
    pub objects_ok: u64,
    pub objects_expected: u64,
    /// Packets on the link during the load (packet and cdp loads), and
    /// packets that were not the page's.
    pub packets: Option<u64>,
    pub foreign_packets: Option<u64>,
    /// Connections Chromium used; protocols it reported.
    pub connections: u32,
    pub protocols: Vec<String>,
    pub load_avg: Option<[f64; 3]>,
    pub error: Option<String>,
}

impl Load {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// One method's error against the packet-level load of the same cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellError {
    pub page: String,
    pub net: String,
    pub proto: Proto,
    pub method: Method,
    pub packet_load_s: f64,
    pub method_load_s: f64,
    /// (method - packet) / packet, %.
    pub load_error_pct: f64,
    /// Mean absolute difference of the objects' first bytes and last
    /// bytes, s (objects matched by path), and how many matched.
    pub first_byte_mae_s: f64,
    pub last_byte_mae_s: f64,
    pub objects_matched: usize,
}

/// The whole comparison (results.json).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub what: String,
    pub provenance: pagewire_provenance::Provenance,
    pub browser: String,
    pub pages: Vec<PageInfo>,
    pub link_configs: BTreeMap<String, serde_json::Value>,
    pub loads: Vec<Load>,
    pub traces: Vec<TraceRecord>,
    pub errors: Vec<CellError>,
    pub wall_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageInfo {
    pub name: String,
    pub path: String,
    pub objects: usize,
    pub bytes: u64,
}

/// The trace the model was given, per page and protocol.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceRecord {
    pub page: String,
    pub proto: Proto,
    pub trace: Trace,
}

/// A served site: the files and what each must hash to.
struct Site {
    root: PathBuf,
    page_path: String,
    expected: BTreeMap<String, String>,
    bytes: u64,
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn write_site(src: &PageSource, root: &Path) -> Result<Site> {
    fs::create_dir_all(root)?;
    let (files, page_path): (Vec<(String, Vec<u8>)>, String) = match src {
        PageSource::Microscape { seed } => {
            let m = pagewire_site::microscape::generate(pagewire_site::microscape::Options {
                seed: *seed,
                lowercase: false,
            });
            (
                m.files()
                    .into_iter()
                    .map(|(p, b)| (p, b.to_vec()))
                    .collect(),
                pagewire_site::microscape::PAGE_PATH.to_string(),
            )
        }
        PageSource::Recorded { archive, .. } => {
            let rp = crate::microscape::replay::ReplayPage::load(archive, None)?;
            let a = pagewire_replay::Archive::load(archive).map_err(anyhow::Error::new)?;
            let mut files = Vec::new();
            for target in rp.expected.keys() {
                let ex = a
                    .exchanges
                    .iter()
                    .find(|e| {
                        e.status == 200
                            && e.method.eq_ignore_ascii_case("GET")
                            && e.key().is_some_and(|k| &k.target == target)
                    })
                    .with_context(|| format!("{target}: not in {}", archive.display()))?;
                let path = target.split(['?', '#']).next().unwrap_or(target);
                files.push((path.to_string(), ex.body.to_vec()));
            }
            (files, url_path(&rp.url).to_string())
        }
    };
    let mut expected = BTreeMap::new();
    let mut bytes = 0;
    for (p, b) in &files {
        let rel = p.trim_start_matches('/');
        if rel.is_empty() || rel.split('/').any(|c| c == ".." || c.is_empty()) {
            bail!("refusing to write the object path {p:?}");
        }
        let f = root.join(rel);
        if let Some(d) = f.parent() {
            fs::create_dir_all(d)?;
        }
        fs::write(&f, b).with_context(|| format!("write {}", f.display()))?;
        expected.insert(p.clone(), sha256_hex(b));
        bytes += b.len() as u64;
    }
    Ok(Site {
        root: root.canonicalize()?,
        page_path,
        expected,
        bytes,
    })
}

/// A server process in the server namespace, stopped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        pagewire_emu::cli::stop_process_group(&mut self.0, Duration::from_millis(500));
    }
}

fn start_servers(
    cfg: &Config,
    link: &Link,
    root: &Path,
    tls: &pagewire_tls::Files,
    tag: &str,
) -> Result<(Server, Server)> {
    let logs = cfg.out_dir.join("logs");
    fs::create_dir_all(&logs)?;
    let spawn = |extra: &[String], log: &Path| -> Result<Server> {
        let f = fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
        let mut c = Command::new(&cfg.exe);
        c.arg("serve").arg("--root").arg(root).args(extra);
        c.stdin(Stdio::null()).stdout(f.try_clone()?).stderr(f);
        Ok(Server(
            link.spawn_in_server(c).context("start pagewire serve")?,
        ))
    };
    let h1_log = logs.join(format!("server-{tag}.log"));
    let mut h1 = spawn(
        &[
            "--addr".into(),
            format!("{}:{HTTP_PORT}", link.server_addr()),
        ],
        &h1_log,
    )?;
    if !link.wait_server_listening(SERVER_START)? {
        bail!("the server did not listen; its log is {}", h1_log.display());
    }
    if let Ok(Some(st)) = h1.0.try_wait() {
        bail!("the server exited ({st}); its log is {}", h1_log.display());
    }
    let tls_log = logs.join(format!("server-tls-{tag}.log"));
    let dir = tls.ca.parent().unwrap_or(Path::new("."));
    let mut t = spawn(
        &[
            "--addr".into(),
            format!("{}:{TLS_PORT}", link.server_addr()),
            "--tls".into(),
            dir.display().to_string(),
        ],
        &tls_log,
    )?;
    let until = Instant::now() + SERVER_START;
    // Bounded by SERVER_START; 10 ms steps.
    loop {
        if fs::read_to_string(&tls_log)
            .unwrap_or_default()
            .contains("listening on https://")
        {
            break;
        }
        if let Ok(Some(st)) = t.0.try_wait() {
            bail!(
                "the TLS server exited ({st}); its log is {}",
                tls_log.display()
            );
        }
        if Instant::now() >= until {
            bail!(
                "the TLS server did not listen; its log is {}",
                tls_log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok((h1, t))
}

/// Longest one load may take.
fn load_timeout(lc: &LinkConfig, site_bytes: u64, cdp: Option<&Conditions>) -> Duration {
    let rate = |r: &pagewire_link::Rate| match r {
        pagewire_link::Rate::Bps(b) => *b as f64,
        _ => f64::INFINITY,
    };
    let mut bps = rate(&lc.down_rate);
    if let Some(c) = cdp {
        if c.down_bytes_per_s > 0.0 {
            bps = bps.min(c.down_bytes_per_s * 8.0);
        }
    }
    let line = site_bytes as f64 * 8.0 / bps;
    // Three times the line time plus a minute for the machine.
    Duration::from_secs_f64(60.0 + 3.0 * line.min(3600.0))
}

/// The times of a Chromium load, from its DevTools events.
fn object_times(load: &PageLoad, page_path: &str) -> Vec<ObjectTimes> {
    let Some(t0) = load.entries.first().map(|e| e.start_ts) else {
        return Vec::new();
    };
    load.entries
        .iter()
        .filter(|e| !e.from_cache && e.failed.is_none())
        .filter_map(|e| {
            let end = e.end_ts?;
            let fb = first_byte(e, end);
            let p = url_path(&e.url);
            Some(ObjectTimes {
                path: if p == "/" { page_path } else { p }.to_string(),
                start_s: e.start_ts - t0,
                first_byte_s: fb - t0,
                last_byte_s: end - t0,
                bytes: e.encoded_bytes,
            })
        })
        .collect()
}

/// When a response's head arrived: the network stack's own timing
/// (`requestTime` + `receiveHeadersEnd`), else the `responseReceived`
/// event; never after the response's end.
fn first_byte(e: &pagewire_chromium::Entry, end: f64) -> f64 {
    let t = &e.timing;
    let net = t["requestTime"]
        .as_f64()
        .zip(t["receiveHeadersEnd"].as_f64().filter(|x| *x >= 0.0))
        .map(|(rt, h)| rt + h / 1e3);
    net.or(e.response_ts).unwrap_or(end).min(end)
}

/// The RTT the trace's link had: the shortest handshake round trip.
fn trace_rtt(load: &PageLoad) -> f64 {
    let mut best = f64::INFINITY;
    for e in &load.entries {
        let t = &e.timing;
        let f = |k: &str| t[k].as_f64().unwrap_or(-1.0);
        let (cs, ss, ce) = (f("connectStart"), f("sslStart"), f("connectEnd"));
        if cs < 0.0 || ce < cs {
            continue;
        }
        // TCP alone: to the TLS start when there is one.
        let tcp = if ss >= cs { ss - cs } else { ce - cs };
        best = best.min(tcp / 1e3);
    }
    if best.is_finite() {
        best
    } else {
        0.0
    }
}

/// The model's input from an unthrottled load.
pub fn trace_of(load: &PageLoad, proto: Proto) -> Trace {
    let rtt = trace_rtt(load);
    let t0 = load.entries.first().map_or(0.0, |e| e.start_ts);
    let entries: Vec<_> = load
        .entries
        .iter()
        .filter(|e| !e.from_cache && e.failed.is_none() && e.end_ts.is_some())
        .collect();
    let mut requests = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let parent = if i == 0 {
            None
        } else {
            // The initiator's (first) request, else the navigation.
            Some(
                e.initiator
                    .as_deref()
                    .and_then(|u| entries[..i].iter().position(|p| p.url == u))
                    .unwrap_or(0),
            )
        };
        let end = e.end_ts.unwrap_or(e.start_ts);
        let fb = first_byte(e, end);
        // The request left at requestTime + sendEnd (ms).
        let sent = e.timing["requestTime"]
            .as_f64()
            .map(|rt| rt + e.timing["sendEnd"].as_f64().unwrap_or(0.0).max(0.0) / 1e3)
            .unwrap_or(e.start_ts);
        requests.push(TraceRequest {
            url: e.url.clone(),
            parent,
            start_s: e.start_ts - t0,
            first_byte_s: fb - t0,
            end_s: end - t0,
            bytes: e.encoded_bytes,
            request_bytes: e.request_bytes.unwrap_or(300),
            connection: e.connection_id.unwrap_or(0),
            server_s: (fb - sent - rtt).max(0.0),
        });
    }
    Trace {
        requests,
        setup: match proto {
            Proto::H1 => Setup::Tcp,
            Proto::H2 => Setup::Tls,
            Proto::H3 => Setup::Quic,
        },
        multiplexed: proto != Proto::H1,
        tail_s: load
            .last_byte_s
            .map_or(0.0, |lb| (load.load_s - lb).max(0.0)),
        rtt_s: rtt,
    }
}

fn paths_of(
    urls: impl Iterator<Item = (String, f64, f64, f64)>,
    page_path: &str,
) -> Vec<ObjectTimes> {
    urls.map(|(u, s, fb, e)| {
        let p = url_path(&u);
        ObjectTimes {
            path: if p == "/" { page_path } else { p }.to_string(),
            start_s: s,
            first_byte_s: fb,
            last_byte_s: e,
            bytes: 0,
        }
    })
    .collect()
}

/// Everything one Chromium load needs.
struct LoadCtx<'a> {
    cfg: &'a Config,
    link: &'a Link,
    site: &'a Site,
    tls: &'a pagewire_tls::Files,
    exe: &'a Path,
    page: &'a str,
    /// The link configuration the load is slowed to.
    target_lc: &'a LinkConfig,
}

fn one_load(
    ctx: &LoadCtx<'_>,
    proto: Proto,
    method: Method,
    net: &str,
    rep: u32,
    conditions: Option<Conditions>,
) -> Result<(Load, String)> {
    let link = ctx.link;
    let origin = format!("{}:{TLS_PORT}", link.server_addr());
    let p = crate::microscape::chromium::protocol(
        proto.strategy(),
        Some((ctx.tls.ca.as_path(), origin.as_str())),
    )?;
    let url = match proto {
        Proto::H1 => format!(
            "http://{}:{HTTP_PORT}{}",
            link.server_addr(),
            ctx.site.page_path
        ),
        _ => format!("https://{origin}{}", ctx.site.page_path),
    };
    let port = if proto == Proto::H1 {
        HTTP_PORT
    } else {
        TLS_PORT
    };
    let name = format!(
        "{}-{net}-{}-{}-r{rep}",
        ctx.page,
        proto.name(),
        method.name()
    );
    let profile = ctx.cfg.out_dir.join("profiles").join(&name);
    if profile.exists() {
        fs::remove_dir_all(&profile)?;
    }
    let log = ctx
        .cfg
        .out_dir
        .join("logs")
        .join(format!("chromium-{name}.log"));
    let pcap = ctx.cfg.out_dir.join("pcaps").join(format!("{name}.pcap"));
    fs::create_dir_all(pcap.parent().unwrap_or(Path::new(".")))?;
    let load_avg = pagewire_provenance::load_avg();
    link.begin_run_with(Some(&pcap), serde_json::json!({"load": name}))?;
    let timeout = load_timeout(ctx.target_lc, ctx.site.bytes, conditions.as_ref());
    let mut product = String::new();
    let loaded = (|| -> Result<PageLoad> {
        let mut b = Browser::launch(ctx.exe, &profile, &p, &log, |c| link.spawn_in_client(c))?;
        product = b.product.clone();
        if let Some(c) = conditions {
            b.emulate(c);
        }
        let l = b.load(&url, Visit::First, timeout)?;
        b.close()?;
        Ok(l)
    })();
    let c = link.end_run()?;
    let (packets, _, foreign) = pcap_audit(&pcap, link.client_addr(), link.server_addr(), port)?;
    // The pcaps are for the audit; the loads' times are the result.
    let _ = fs::remove_file(&pcap);
    let _ = fs::remove_dir_all(&profile);
    let mut errors = Vec::new();
    if packets != c.packets_total {
        errors.push(format!(
            "the link counted {} packets, the pcap {packets}",
            c.packets_total
        ));
    }
    if foreign > 0 {
        errors.push(format!("{foreign} packets on the link were not the page's"));
    }
    let mut rec = Load {
        page: ctx.page.to_string(),
        net: net.to_string(),
        proto,
        method,
        rep,
        load_s: f64::NAN,
        last_byte_s: f64::NAN,
        objects: Vec::new(),
        objects_ok: 0,
        objects_expected: ctx.site.expected.len() as u64,
        packets: Some(packets),
        foreign_packets: Some(foreign),
        connections: 0,
        protocols: Vec::new(),
        load_avg,
        error: None,
    };
    match loaded {
        Ok(l) => {
            let (ok, bad) = l.check(&ctx.site.expected, &ctx.site.page_path, false);
            if ok != rec.objects_expected {
                errors.push(format!(
                    "{ok} of {} objects ok: {}",
                    rec.objects_expected,
                    bad.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            let want = match proto {
                Proto::H1 => "http/1.1",
                Proto::H2 => "h2",
                Proto::H3 => "h3",
            };
            let s = l.summary("");
            if !s.protocols.iter().all(|p| p == want) {
                errors.push(format!("protocols {:?}, not {want}", s.protocols));
            }
            rec.objects_ok = ok;
            rec.load_s = l.load_s;
            rec.last_byte_s = l.last_byte_s.unwrap_or(f64::NAN);
            rec.objects = object_times(&l, &ctx.site.page_path);
            rec.connections = s.connections;
            rec.protocols = s.protocols;
            // Every load's DevTools record, whole (the unthrottled ones are
            // the model's input).
            let dir = ctx.cfg.out_dir.join(if method == Method::Unthrottled {
                "traces"
            } else {
                "loads"
            });
            fs::create_dir_all(&dir)?;
            if method != Method::Unthrottled || errors.is_empty() {
                fs::write(dir.join(format!("{name}.json")), serde_json::to_string(&l)?)?;
            }
        }
        Err(e) => errors.push(format!("{e:#}")),
    }
    rec.error = (!errors.is_empty()).then(|| errors.join("; "));
    if let Some(e) = &rec.error {
        eprintln!("  load failed: {name}: {e}");
    }
    Ok((rec, product))
}

fn rate_bps(r: &pagewire_link::Rate) -> f64 {
    match r {
        pagewire_link::Rate::Bps(b) => *b as f64,
        pagewire_link::Rate::Unlimited => f64::INFINITY,
        #[allow(unreachable_patterns)]
        _ => f64::NAN,
    }
}

/// Runs the comparison; writes results.json and report.txt into
/// `cfg.out_dir` and returns the results.
pub fn run(cfg: &Config) -> Result<Results> {
    let started = Instant::now();
    let exe = find_chromium().context(
        "no Chromium found (install Debian's `chromium` with scripts/setup-deps.sh, or set \
         PAGEWIRE_CHROMIUM)",
    )?;
    if cfg.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let mut lcs = BTreeMap::new();
    for n in &cfg.nets {
        let lc = LinkConfig::profile(n).with_context(|| format!("link profile {n:?}"))?;
        if rate_bps(&lc.down_rate).is_nan() || rate_bps(&lc.up_rate).is_nan() {
            bail!("{n}: only constant-rate links can be matched by DevTools throttling");
        }
        lcs.insert(n.clone(), lc);
    }
    let none = LinkConfig::profile("none")?;
    fs::create_dir_all(&cfg.out_dir)?;
    let mut prov = pagewire_provenance::Provenance::begin("throttle", cfg.command.clone());
    prov.made_by = format!("pagewire {} throttle", env!("CARGO_PKG_VERSION"));
    prov.note = "one Chromium load per cell and repetition; machine shared with other builds \
                 (see load_avg)"
        .into();
    let tls = pagewire_tls::ensure(
        &cfg.out_dir.join("tls"),
        &[pagewire_emu::SERVER_ADDR.to_string().as_str(), "localhost"],
    )?;
    let mut link_configs = BTreeMap::new();
    link_configs.insert("none".to_string(), serde_json::to_value(&none)?);
    for (n, lc) in &lcs {
        link_configs.insert(n.clone(), serde_json::to_value(lc)?);
    }
    let mut loads = Vec::new();
    let mut traces = Vec::new();
    let mut pages = Vec::new();
    let mut product = String::new();
    crate::interrupt::install();
    for src in &cfg.pages {
        let page = src.name();
        let site = write_site(src, &cfg.out_dir.join("site").join(&page))?;
        pages.push(PageInfo {
            name: page.clone(),
            path: site.page_path.clone(),
            objects: site.expected.len(),
            bytes: site.bytes,
        });
        // The unshaped link: the unthrottled traces, then DevTools throttling.
        {
            let link = Link::start(none.clone()).context("start the unshaped link")?;
            let _servers = start_servers(cfg, &link, &site.root, &tls, &format!("{page}-none"))?;
            for &proto in &cfg.protos {
                for rep in 0..cfg.reps {
                    if crate::interrupt::signalled() {
                        bail!("interrupted");
                    }
                    let ctx = LoadCtx {
                        cfg,
                        link: &link,
                        site: &site,
                        tls: &tls,
                        exe: &exe,
                        page: &page,
                        target_lc: &none,
                    };
                    eprintln!("{page} none {} unthrottled rep {rep}", proto.name());
                    let (l, pr) = one_load(&ctx, proto, Method::Unthrottled, "none", rep, None)?;
                    if product.is_empty() {
                        product = pr;
                    }
                    loads.push(l);
                    for (n, lc) in &lcs {
                        let cond = Conditions::like_link(
                            lc.rtt.as_secs_f64() * 1e3,
                            rate_bps(&lc.down_rate),
                            rate_bps(&lc.up_rate),
                        );
                        let ctx = LoadCtx {
                            target_lc: lc,
                            ..ctx
                        };
                        eprintln!("{page} {n} {} cdp rep {rep}", proto.name());
                        loads.push(one_load(&ctx, proto, Method::Cdp, n, rep, Some(cond))?.0);
                    }
                }
            }
        }
        for (n, lc) in &lcs {
            let link = Link::start(lc.clone()).with_context(|| format!("start the {n} link"))?;
            let _servers = start_servers(cfg, &link, &site.root, &tls, &format!("{page}-{n}"))?;
            for &proto in &cfg.protos {
                for rep in 0..cfg.reps {
                    if crate::interrupt::signalled() {
                        bail!("interrupted");
                    }
                    let ctx = LoadCtx {
                        cfg,
                        link: &link,
                        site: &site,
                        tls: &tls,
                        exe: &exe,
                        page: &page,
                        target_lc: lc,
                    };
                    eprintln!("{page} {n} {} packet rep {rep}", proto.name());
                    loads.push(one_load(&ctx, proto, Method::Packet, n, rep, None)?.0);
                }
            }
        }
        // The model: from the first good unthrottled trace per protocol.
        for &proto in &cfg.protos {
            let Some(tr) = (0..cfg.reps).find_map(|rep| {
                let f = cfg.out_dir.join("traces").join(format!(
                    "{page}-none-{}-unthrottled-r{rep}.json",
                    proto.name()
                ));
                let l: PageLoad = serde_json::from_slice(&fs::read(f).ok()?).ok()?;
                Some(trace_of(&l, proto))
            }) else {
                continue;
            };
            for (n, lc) in &lcs {
                let pred = lantern::predict(
                    &tr,
                    Target {
                        rtt_s: lc.rtt.as_secs_f64(),
                        down_bps: rate_bps(&lc.down_rate),
                        up_bps: rate_bps(&lc.up_rate),
                    },
                );
                loads.push(Load {
                    page: page.clone(),
                    net: n.clone(),
                    proto,
                    method: Method::Model,
                    rep: 0,
                    load_s: pred.load_s,
                    last_byte_s: pred.last_byte_s,
                    objects: paths_of(
                        pred.requests
                            .iter()
                            .map(|r| (r.url.clone(), r.start_s, r.first_byte_s, r.end_s)),
                        &site.page_path,
                    ),
                    objects_ok: site.expected.len() as u64,
                    objects_expected: site.expected.len() as u64,
                    packets: None,
                    foreign_packets: None,
                    connections: 0,
                    protocols: vec![],
                    load_avg: None,
                    error: None,
                });
            }
            traces.push(TraceRecord {
                page: page.clone(),
                proto,
                trace: tr,
            });
        }
    }
    prov.finish();
    prov.link_configs = link_configs.clone();
    let errors = cell_errors(&loads);
    let res = Results {
        what: "three throttling methods on one page: packet-level link, DevTools request-level \
               throttling, and the Lantern-style model from an unthrottled trace (pagewire \
               throttle)"
            .into(),
        provenance: prov,
        browser: product,
        pages,
        link_configs,
        loads,
        traces,
        errors,
        wall_s: started.elapsed().as_secs_f64(),
    };
    fs::write(
        cfg.out_dir.join("results.json"),
        serde_json::to_string_pretty(&res)? + "\n",
    )?;
    fs::write(cfg.out_dir.join("report.txt"), render(&res))?;
    // The served copies and the throwaway keys are not results.
    let _ = fs::remove_dir_all(cfg.out_dir.join("site"));
    let _ = fs::remove_dir_all(cfg.out_dir.join("profiles"));
    let _ = fs::remove_dir_all(cfg.out_dir.join("pcaps"));
    Ok(res)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The load of a cell whose load time is the median of its good loads.
fn median_load<'a>(loads: &[&'a Load]) -> Option<&'a Load> {
    let m = median(loads.iter().map(|l| l.load_s).collect());
    loads
        .iter()
        .filter(|l| l.load_s.is_finite())
        .min_by(|a, b| (a.load_s - m).abs().total_cmp(&(b.load_s - m).abs()))
        .copied()
}

/// Objects matched by path (the n-th request of a path with the n-th).
fn matched<'a>(
    a: &'a [ObjectTimes],
    b: &'a [ObjectTimes],
) -> Vec<(&'a ObjectTimes, &'a ObjectTimes)> {
    let mut used = vec![false; b.len()];
    let mut out = Vec::new();
    for x in a {
        if let Some(j) = (0..b.len()).find(|&j| !used[j] && b[j].path == x.path) {
            used[j] = true;
            out.push((x, &b[j]));
        }
    }
    out
}

/// Each method's error against packet-level, per page, link and protocol.
pub fn cell_errors(loads: &[Load]) -> Vec<CellError> {
    let mut cells: BTreeMap<(String, String, Proto, Method), Vec<&Load>> = BTreeMap::new();
    for l in loads.iter().filter(|l| l.ok()) {
        cells
            .entry((l.page.clone(), l.net.clone(), l.proto, l.method))
            .or_default()
            .push(l);
    }
    let mut out = Vec::new();
    for ((page, net, proto, method), ls) in &cells {
        if !matches!(method, Method::Cdp | Method::Model) {
            continue;
        }
        let Some(pk) = cells.get(&(page.clone(), net.clone(), *proto, Method::Packet)) else {
            continue;
        };
        let (Some(p), Some(m)) = (median_load(pk), median_load(ls)) else {
            continue;
        };
        let pairs = matched(&p.objects, &m.objects);
        let mae = |f: &dyn Fn(&ObjectTimes) -> f64| {
            if pairs.is_empty() {
                f64::NAN
            } else {
                pairs.iter().map(|(a, b)| (f(a) - f(b)).abs()).sum::<f64>() / pairs.len() as f64
            }
        };
        out.push(CellError {
            page: page.clone(),
            net: net.clone(),
            proto: *proto,
            method: *method,
            packet_load_s: p.load_s,
            method_load_s: m.load_s,
            load_error_pct: (m.load_s - p.load_s) / p.load_s * 100.0,
            first_byte_mae_s: mae(&|o| o.first_byte_s),
            last_byte_mae_s: mae(&|o| o.last_byte_s),
            objects_matched: pairs.len(),
        });
    }
    out
}

/// The report: per page and link, the load times and each method's error;
/// then per object the first and last bytes of the median loads.
pub fn render(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Three throttling methods (pagewire throttle)");
    let _ = writeln!(s, "{}", r.provenance.line());
    let _ = writeln!(s, "Browser: {}", r.browser);
    let _ = writeln!(
        s,
        "packet = the packet-level emulated link (reference); cdp = DevTools \
         Network.emulateNetworkConditions on the unshaped link (latency = RTT, throughput = \
         rate); model = predicted from the unthrottled trace (Lantern-style, IW 10, MSS 1460).\n\
         Load = the load event, s from navigation; FB/LB MAE = mean absolute error of the \
         objects' first/last bytes against packet, s; err = (method - packet) / packet."
    );
    let good = |l: &&Load| l.ok();
    for p in &r.pages {
        let nets: Vec<&String> = r
            .link_configs
            .keys()
            .filter(|n| n.as_str() != "none")
            .collect();
        let _ = writeln!(
            s,
            "\nPage {} ({}, {} objects, {} bytes)",
            p.name, p.path, p.objects, p.bytes
        );
        let unthr: Vec<&Load> = r
            .loads
            .iter()
            .filter(good)
            .filter(|l| l.page == p.name && l.method == Method::Unthrottled)
            .collect();
        for l in &unthr {
            let _ = writeln!(
                s,
                "  unthrottled trace, {} rep {}: load {:.3} s, last byte {:.3} s, {} connections",
                l.proto.label(),
                l.rep,
                l.load_s,
                l.last_byte_s,
                l.connections
            );
        }
        for net in nets {
            let _ = writeln!(s, "\n  {} link", net.to_uppercase());
            let _ = writeln!(
                s,
                "  {:<9} {:<7} {:>5} {:>9} {:>9} {:>8} {:>9} {:>9}",
                "protocol",
                "method",
                "loads",
                "load s",
                "lastbyte",
                "err %",
                "FB MAE s",
                "LB MAE s"
            );
            for proto in Proto::ALL {
                for method in [Method::Packet, Method::Cdp, Method::Model] {
                    let ls: Vec<&Load> = r
                        .loads
                        .iter()
                        .filter(good)
                        .filter(|l| {
                            l.page == p.name
                                && &l.net == net
                                && l.proto == proto
                                && l.method == method
                        })
                        .collect();
                    let failed = r
                        .loads
                        .iter()
                        .filter(|l| {
                            l.page == p.name
                                && &l.net == net
                                && l.proto == proto
                                && l.method == method
                                && !l.ok()
                        })
                        .count();
                    if ls.is_empty() && failed == 0 {
                        continue;
                    }
                    let e = r.errors.iter().find(|e| {
                        e.page == p.name && &e.net == net && e.proto == proto && e.method == method
                    });
                    let f = |x: Option<f64>, w: usize, d: usize| match x {
                        Some(v) if v.is_finite() => format!("{v:>w$.d$}"),
                        _ => format!("{:>w$}", "-"),
                    };
                    let _ = writeln!(
                        s,
                        "  {:<9} {:<7} {:>5} {} {} {} {} {}",
                        proto.label(),
                        method.name(),
                        if failed > 0 {
                            format!("{}+{failed}x", ls.len())
                        } else {
                            ls.len().to_string()
                        },
                        f(Some(median(ls.iter().map(|l| l.load_s).collect())), 9, 3),
                        f(
                            Some(median(ls.iter().map(|l| l.last_byte_s).collect())),
                            9,
                            3
                        ),
                        f(e.map(|e| e.load_error_pct), 8, 1),
                        f(e.map(|e| e.first_byte_mae_s), 9, 3),
                        f(e.map(|e| e.last_byte_mae_s), 9, 3),
                    );
                }
            }
        }
    }
    // Per object: first / last byte of the median load of each method.
    let _ = writeln!(s, "\nPer object (first byte / last byte, s; median loads):");
    for p in &r.pages {
        for net in r.link_configs.keys().filter(|n| n.as_str() != "none") {
            for proto in Proto::ALL {
                let pick = |m: Method| -> Option<&Load> {
                    let ls: Vec<&Load> = r
                        .loads
                        .iter()
                        .filter(good)
                        .filter(|l| {
                            l.page == p.name && &l.net == net && l.proto == proto && l.method == m
                        })
                        .collect();
                    median_load(&ls)
                };
                let Some(pk) = pick(Method::Packet) else {
                    continue;
                };
                let (cdp, model) = (pick(Method::Cdp), pick(Method::Model));
                let _ = writeln!(
                    s,
                    "\n  {} {} {}: {:<28} {:>15} {:>15} {:>15}",
                    p.name,
                    net,
                    proto.label(),
                    "object",
                    "packet",
                    "cdp",
                    "model"
                );
                let find = |l: Option<&Load>, path: &str, k: usize| -> String {
                    l.and_then(|l| l.objects.iter().filter(|o| o.path == path).nth(k))
                        .map_or("-".into(), |o| {
                            format!("{:.3}/{:.3}", o.first_byte_s, o.last_byte_s)
                        })
                };
                let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
                for o in &pk.objects {
                    let k = seen.entry(o.path.as_str()).or_default();
                    let _ = writeln!(
                        s,
                        "  {:<40} {:>15} {:>15} {:>15}",
                        o.path,
                        format!("{:.3}/{:.3}", o.first_byte_s, o.last_byte_s),
                        find(cdp, &o.path, *k),
                        find(model, &o.path, *k)
                    );
                    *k += 1;
                }
            }
        }
    }
    // Overall: each method's mean absolute load error.
    let _ = writeln!(s, "\nMean absolute load-time error against packet-level:");
    for m in [Method::Cdp, Method::Model] {
        for proto in Proto::ALL {
            let es: Vec<f64> = r
                .errors
                .iter()
                .filter(|e| e.method == m && e.proto == proto && e.load_error_pct.is_finite())
                .map(|e| e.load_error_pct.abs())
                .collect();
            if es.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "  {:<6} {:<9} {:>6.1} % over {} cells",
                m.name(),
                proto.label(),
                es.iter().sum::<f64>() / es.len() as f64,
                es.len()
            );
        }
    }
    s
}
