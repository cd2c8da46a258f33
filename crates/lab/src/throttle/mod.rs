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

use crate::claims::spec::{Estimate, Interval};
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
    /// Loads per (page, link, protocol, method): each cell's mean with its
    /// 95% interval is compared (the model: one prediction per unthrottled
    /// load).
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

/// A cell's load times over its repetitions: the mean and its 95%
/// confidence interval (Student t, n - 1 degrees of freedom; the value
/// alone for one load).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct MeanCi {
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub lo: f64,
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub hi: f64,
    pub n: u32,
}

impl MeanCi {
    pub fn of(xs: &[f64]) -> MeanCi {
        let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        let e = Estimate::of(&xs);
        let (lo, hi) = e.ci95();
        MeanCi {
            mean: e.mean,
            lo,
            hi,
            n: e.n,
        }
    }

    fn interval(&self) -> Interval {
        Interval {
            value: self.mean,
            lo: self.lo,
            hi: self.hi,
            n: self.n,
        }
    }

    /// `mean [lo, hi]` (the mean alone for one load).
    pub fn show(&self, digits: usize) -> String {
        if self.n < 2 {
            format!("{:.digits$}", self.mean)
        } else {
            self.interval().show(digits)
        }
    }
}

/// One method's error against the packet-level loads of the same cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellError {
    pub page: String,
    pub net: String,
    pub proto: Proto,
    pub method: Method,
    /// Mean load time of the cell's good packet-level loads and of the
    /// method's (the model: of its predictions, one per unthrottled
    /// trace), s.
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub packet_load_s: f64,
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub method_load_s: f64,
    /// Each good repetition's load time, s, in repetition order.
    #[serde(default)]
    pub packet_loads_s: Vec<f64>,
    #[serde(default)]
    pub method_loads_s: Vec<f64>,
    /// The two means with their 95% intervals.
    #[serde(default)]
    pub packet_load: Option<MeanCi>,
    #[serde(default)]
    pub method_load: Option<MeanCi>,
    /// (method - packet) / packet of the means, %.
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub load_error_pct: f64,
    /// Its 95% interval, %: the ratio of the two means' intervals less
    /// one (interval arithmetic, as every claims check; conservative).
    /// None with one load on either side.
    #[serde(default)]
    pub load_error_lo_pct: Option<f64>,
    #[serde(default)]
    pub load_error_hi_pct: Option<f64>,
    /// The interval includes 0: the method cannot be told from
    /// packet-level at these repetitions. None with one load on either side.
    #[serde(default)]
    pub within_noise: Option<bool>,
    /// Mean absolute difference of the objects' first bytes and last
    /// bytes, s (objects matched by path), between the loads whose load
    /// times are the medians of their cells, and how many matched.
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub first_byte_mae_s: f64,
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub last_byte_mae_s: f64,
    pub objects_matched: usize,
}

impl CellError {
    /// `+12.3 [+4.0, +20.1]` (%), with `~` after it when within noise.
    pub fn show_error(&self) -> String {
        match (self.load_error_lo_pct, self.load_error_hi_pct) {
            (Some(lo), Some(hi)) => format!(
                "{:+.1} [{:+.1}, {:+.1}]{}",
                self.load_error_pct,
                lo,
                hi,
                if self.within_noise == Some(true) {
                    " ~"
                } else {
                    ""
                }
            ),
            _ => format!("{:+.1}", self.load_error_pct),
        }
    }
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
    /// The unthrottled load's repetition (0 in runs before repetitions).
    #[serde(default)]
    pub rep: u32,
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
        // Repetition by repetition, so that a slow drift of the machine's
        // load reaches every method alike: the unshaped link (the
        // unthrottled trace, then DevTools throttling for each target
        // link), then each packet-level link.
        for rep in 0..cfg.reps {
            {
                let link = Link::start(none.clone()).context("start the unshaped link")?;
                let _servers =
                    start_servers(cfg, &link, &site.root, &tls, &format!("{page}-none-r{rep}"))?;
                for &proto in &cfg.protos {
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
                        if crate::interrupt::signalled() {
                            bail!("interrupted");
                        }
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
            for (n, lc) in &lcs {
                let link =
                    Link::start(lc.clone()).with_context(|| format!("start the {n} link"))?;
                let _servers =
                    start_servers(cfg, &link, &site.root, &tls, &format!("{page}-{n}-r{rep}"))?;
                for &proto in &cfg.protos {
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
        // The model: one prediction from every good unthrottled trace (a
        // repetition of the model is a repetition of its input).
        for &proto in &cfg.protos {
            for rep in 0..cfg.reps {
                let f = cfg.out_dir.join("traces").join(format!(
                    "{page}-none-{}-unthrottled-r{rep}.json",
                    proto.name()
                ));
                let Some(l) = fs::read(f)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<PageLoad>(&b).ok())
                else {
                    continue;
                };
                let tr = trace_of(&l, proto);
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
                        rep,
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
                    rep,
                    trace: tr,
                });
            }
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
        let times = |ls: &[&Load]| -> Vec<f64> {
            let mut v: Vec<(u32, f64)> = ls
                .iter()
                .filter(|l| l.load_s.is_finite())
                .map(|l| (l.rep, l.load_s))
                .collect();
            v.sort_by_key(|x| x.0);
            v.into_iter().map(|x| x.1).collect()
        };
        let (pt, mt) = (times(pk), times(ls));
        let (pc, mc) = (MeanCi::of(&pt), MeanCi::of(&mt));
        let err = (mc.mean - pc.mean) / pc.mean * 100.0;
        let (lo, hi, noise) = if pc.n >= 2 && mc.n >= 2 {
            let iv = (mc.interval() / pc.interval()).minus_one();
            let (lo, hi) = (iv.lo * 100.0, iv.hi * 100.0);
            (Some(lo), Some(hi), Some(lo <= 0.0 && hi >= 0.0))
        } else {
            (None, None, None)
        };
        out.push(CellError {
            page: page.clone(),
            net: net.clone(),
            proto: *proto,
            method: *method,
            packet_load_s: pc.mean,
            method_load_s: mc.mean,
            packet_loads_s: pt,
            method_loads_s: mt,
            packet_load: Some(pc),
            method_load: Some(mc),
            load_error_pct: err,
            load_error_lo_pct: lo,
            load_error_hi_pct: hi,
            within_noise: noise,
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
         Load = the load event, s from navigation: mean [95% CI] over the repetitions (the \
         model: one prediction per unthrottled trace); err = (method - packet) / packet of the \
         means, % [95% CI by interval arithmetic], \"~\" = the interval includes 0 (within \
         noise); FB/LB MAE = mean absolute error of the objects' first/last bytes against \
         packet, s, between the median loads."
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
                "  {:<9} {:<7} {:>5} {:>26} {:>9} {:>26} {:>9} {:>9}",
                "protocol",
                "method",
                "loads",
                "load s [95% CI]",
                "lastbyte",
                "err % [95% CI]",
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
                    let times: Vec<f64> = ls.iter().map(|l| l.load_s).collect();
                    let last: Vec<f64> = ls.iter().map(|l| l.last_byte_s).collect();
                    let _ = writeln!(
                        s,
                        "  {:<9} {:<7} {:>5} {:>26} {} {:>26} {} {}",
                        proto.label(),
                        method.name(),
                        if failed > 0 {
                            format!("{}+{failed}x", ls.len())
                        } else {
                            ls.len().to_string()
                        },
                        MeanCi::of(&times).show(3),
                        f(Some(MeanCi::of(&last).mean), 9, 3),
                        e.map_or("-".into(), CellError::show_error),
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
    // Overall: each method's mean absolute load error, and how many of
    // its cells are within noise.
    let _ = writeln!(
        s,
        "\nMean absolute load-time error against packet-level (of the cells' mean errors; \
         \"within noise\": the error's 95% interval includes 0):"
    );
    for m in [Method::Cdp, Method::Model] {
        let mut rows: Vec<(String, Vec<&CellError>)> = Proto::ALL
            .iter()
            .map(|p| {
                (
                    p.label().to_string(),
                    r.errors
                        .iter()
                        .filter(|e| e.method == m && e.proto == *p)
                        .collect(),
                )
            })
            .collect();
        for net in r.link_configs.keys().filter(|n| n.as_str() != "none") {
            rows.push((
                net.to_uppercase(),
                r.errors
                    .iter()
                    .filter(|e| e.method == m && &e.net == net)
                    .collect(),
            ));
        }
        rows.push((
            "all".into(),
            r.errors.iter().filter(|e| e.method == m).collect(),
        ));
        for (label, es) in rows {
            let es: Vec<&CellError> = es
                .into_iter()
                .filter(|e| e.load_error_pct.is_finite())
                .collect();
            if es.is_empty() {
                continue;
            }
            let noise = es.iter().filter(|e| e.within_noise == Some(true)).count();
            let judged = es.iter().filter(|e| e.within_noise.is_some()).count();
            let _ = writeln!(
                s,
                "  {:<6} {:<9} {:>6.1} % over {} cells{}",
                m.name(),
                label,
                es.iter().map(|e| e.load_error_pct.abs()).sum::<f64>() / es.len() as f64,
                es.len(),
                if judged > 0 {
                    format!(", {noise} of {judged} within noise")
                } else {
                    String::new()
                }
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(net: &str, method: Method, rep: u32, load_s: f64) -> Load {
        Load {
            page: "p".into(),
            net: net.into(),
            proto: Proto::H1,
            method,
            rep,
            load_s,
            last_byte_s: load_s,
            objects: vec![ObjectTimes {
                path: "/".into(),
                start_s: 0.0,
                first_byte_s: load_s / 2.0,
                last_byte_s: load_s,
                bytes: 1,
            }],
            objects_ok: 1,
            objects_expected: 1,
            packets: None,
            foreign_packets: None,
            connections: 1,
            protocols: vec![],
            load_avg: None,
            error: None,
        }
    }

    fn error_of<'a>(es: &'a [CellError], net: &str, m: Method) -> &'a CellError {
        es.iter().find(|e| e.net == net && e.method == m).unwrap()
    }

    /// A method 50% slower with little spread is an error whose interval
    /// leaves 0 out; one whose loads overlap packet-level's is within
    /// noise; the means, their intervals and every repetition's load time
    /// are kept, and a failed load counts in none of them.
    #[test]
    fn errors_carry_intervals_and_tell_noise_from_error() {
        let mut ls = Vec::new();
        for (rep, (p, c, m)) in [(1.0, 1.5, 0.9), (1.02, 1.52, 1.1), (0.98, 1.49, 1.0)]
            .into_iter()
            .enumerate()
        {
            let rep = rep as u32;
            ls.push(load("wan", Method::Packet, rep, p));
            ls.push(load("wan", Method::Cdp, rep, c));
            ls.push(load("wan", Method::Model, rep, m));
        }
        let mut failed = load("wan", Method::Cdp, 3, 9.0);
        failed.error = Some("timeout".into());
        ls.push(failed);
        let es = cell_errors(&ls);
        assert_eq!(es.len(), 2);
        let cdp = error_of(&es, "wan", Method::Cdp);
        assert_eq!(cdp.method_loads_s, vec![1.5, 1.52, 1.49]);
        assert_eq!(cdp.packet_loads_s, vec![1.0, 1.02, 0.98]);
        assert!((cdp.packet_load_s - 1.0).abs() < 1e-9);
        assert!((cdp.load_error_pct - 50.33).abs() < 0.01, "{cdp:?}");
        let (lo, hi) = (
            cdp.load_error_lo_pct.unwrap(),
            cdp.load_error_hi_pct.unwrap(),
        );
        assert!(
            lo > 0.0 && lo < cdp.load_error_pct && hi > cdp.load_error_pct,
            "{cdp:?}"
        );
        assert_eq!(cdp.within_noise, Some(false));
        assert!(
            cdp.show_error().starts_with("+50.3 ["),
            "{}",
            cdp.show_error()
        );
        let pc = cdp.packet_load.unwrap();
        assert_eq!(pc.n, 3);
        assert!(pc.lo < 1.0 && pc.hi > 1.0);
        let model = error_of(&es, "wan", Method::Model);
        assert!(model.load_error_pct.abs() < 1e-9);
        assert_eq!(model.within_noise, Some(true));
        assert!(model.show_error().ends_with(" ~"), "{}", model.show_error());
    }

    /// With one load a side there is no interval and no noise verdict.
    #[test]
    fn one_load_per_cell_has_no_interval() {
        let ls = vec![
            load("lan", Method::Packet, 0, 0.5),
            load("lan", Method::Cdp, 0, 0.6),
        ];
        let es = cell_errors(&ls);
        assert_eq!(es.len(), 1);
        assert!((es[0].load_error_pct - 20.0).abs() < 1e-9);
        assert_eq!(es[0].load_error_lo_pct, None);
        assert_eq!(es[0].within_noise, None);
        assert_eq!(es[0].show_error(), "+20.0");
    }
}
