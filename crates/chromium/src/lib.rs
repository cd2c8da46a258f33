//! A real browser on the emulated link: headless Chromium in the client
//! namespace, driven over the DevTools protocol ([`cdp`], on
//! `--remote-debugging-pipe`), loading a page with a fresh profile
//! (first-time retrieval) or with the profile a first load filled
//! (revalidation), recording every request as HAR and the load and
//! DOMContentLoaded times, and checking every body against the site's file.
//!
//! Revalidation is a new browser process on the same profile (its disk
//! cache, as a user coming back), navigating with `Cache-Control:
//! max-age=0` added to every request, which makes Chromium's HTTP cache
//! validate every cached object (a conditional GET each, as the reload of
//! Chromium before version 54 did and as paper 001's robot does). Without
//! it Chromium applies heuristic freshness (10% of the time since
//! `Last-Modified`) and sends nothing at all for objects it deems fresh:
//! see docs/chromium.md.

// `unsafe` only in `cdp`, for the DevTools pipe's file descriptors
// (pipe2(2) and placing them at fds 3/4 of the child): allowed there alone.
#![deny(unsafe_code)]

pub mod cdp;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::BufReader;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use cdp::{Cdp, PipeFds};

/// Packets a pcap may hold before [`pcap_audit`] refuses it (the lab's pcap
/// reader's bound).
pub const MAX_PCAP_PACKETS: usize = 1_000_000;

/// How long the browser may take to start and answer its first command.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// One DevTools command's reply (not the page load).
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// A clean `Browser.close` (the disk cache is written out) before the
/// process group is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The protocol Chromium is to use towards the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Plain `http://`: HTTP/1.1, up to 6 connections per host.
    H1,
    /// `https://` with ALPN h2; `spki` is the base64 SHA-256 of the
    /// throwaway certificate's public key, trusted by
    /// `--ignore-certificate-errors-spki-list`.
    H2 { spki: String },
    /// HTTP/3 forced on `origin` (`host:port`) by `--origin-to-force-quic-on`.
    H3 { spki: String, origin: String },
}

/// The browser binary: `$PAGEWIRE_CHROMIUM`, else `chromium`,
/// `chromium-browser` or `google-chrome` on the PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PAGEWIRE_CHROMIUM") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The command line: headless, no sandbox (we are root in a namespace),
/// DevTools on fds 3/4, and every background service that would put
/// packets on the measured link switched off.
pub fn command(exe: &Path, profile: &Path, protocol: &Protocol) -> Command {
    command_with(exe, profile, protocol, &[])
}

/// [`command`] with `extra` switches added before the start URL.
pub fn command_with(exe: &Path, profile: &Path, protocol: &Protocol, extra: &[String]) -> Command {
    let mut c = Command::new(exe);
    c.arg("--headless=new")
        .arg("--no-sandbox")
        .arg("--remote-debugging-pipe")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--disable-breakpad",
            "--disable-crash-reporter",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--metrics-recording-only",
            "--no-pings",
            "--dns-prefetch-disable",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=1024,768",
            "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,\
             AutofillServerCommunication,CertificateTransparencyComponentUpdater,\
             InterestFeedContentSuggestions,NetworkTimeServiceQuerying,PrivacySandboxSettings4",
        ]);
    match protocol {
        Protocol::H1 => {}
        Protocol::H2 { spki } => {
            // No QUIC: the h2 rows measure HTTP/2 over TCP only.
            c.arg(format!("--ignore-certificate-errors-spki-list={spki}"))
                .arg("--disable-quic");
        }
        Protocol::H3 { spki, origin } => {
            c.arg(format!("--ignore-certificate-errors-spki-list={spki}"))
                .arg("--enable-quic")
                .arg(format!("--origin-to-force-quic-on={origin}"));
        }
    }
    c.args(extra);
    c.arg("about:blank");
    c
}

/// `--host-resolver-rules` sending each `host:port` to `to` (an
/// `addr:port`), every other name to nowhere (`~NOTFOUND`: no DNS query
/// leaves the browser). Chromium keeps the URL, so `Host` and TLS SNI
/// still name the recorded origin.
pub fn host_resolver_rules<'a>(maps: impl IntoIterator<Item = (&'a str, String)>) -> String {
    let mut rules: Vec<String> = maps
        .into_iter()
        .map(|(from, to)| format!("MAP {from} {to}"))
        .collect();
    rules.push("MAP * ~NOTFOUND".to_string());
    format!("--host-resolver-rules={}", rules.join(", "))
}

/// Paint and navigation times of the page, seconds from the navigation's
/// start (the page's `performance.timeOrigin`), as the page itself saw
/// them (`PerformanceNavigationTiming`, `paint` and
/// `largest-contentful-paint` entries).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PaintTimes {
    pub load_s: Option<f64>,
    pub dcl_s: Option<f64>,
    pub fcp_s: Option<f64>,
    pub lcp_s: Option<f64>,
}

/// What the page is asked for [`PaintTimes`] (milliseconds; `null` when
/// the page has none; LCP waits at most 500 ms for its buffered entries).
const PAINT_SCRIPT: &str = r#"(async () => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');
  const lcp = await new Promise(resolve => {
    let last = null;
    try {
      const po = new PerformanceObserver(list => {
        const es = list.getEntries();
        if (es.length) last = es[es.length - 1].startTime;
      });
      po.observe({type: 'largest-contentful-paint', buffered: true});
      setTimeout(() => { po.disconnect(); resolve(last); }, 500);
    } catch (e) { resolve(null); }
  });
  return JSON.stringify({
    load: nav && nav.loadEventStart > 0 ? nav.loadEventStart : null,
    dcl: nav && nav.domContentLoadedEventStart > 0 ? nav.domContentLoadedEventStart : null,
    fcp: fcp ? fcp.startTime : null,
    lcp: last_or(lcp),
  });
  function last_or(x) { return x === null || x === undefined ? null : x; }
})()"#;

/// A running browser and the DevTools session of its page.
pub struct Browser {
    child: Option<Child>,
    cdp: Cdp,
    session: String,
    /// `Browser.getVersion`'s product, e.g. `HeadlessChrome/156.0.8078.79`.
    pub product: String,
    /// Request-level throttling applied before each load (DevTools
    /// `Network.emulateNetworkConditions`), if any.
    conditions: Option<Conditions>,
}

/// DevTools' request-level network emulation (what Chrome DevTools'
/// throttling presets and Lighthouse's "applied" throttling set): Chromium
/// delays each response by `latency_ms` and meters bodies at the given
/// rates inside the browser; the packets themselves are not shaped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    /// Added to each request's time to its response head, ms.
    pub latency_ms: f64,
    /// Download and upload throughput, bytes/s.
    pub down_bytes_per_s: f64,
    pub up_bytes_per_s: f64,
}

impl Conditions {
    /// The same RTT and rates as a link: latency = RTT, throughput = the
    /// link's bit rates / 8.
    pub fn like_link(rtt_ms: f64, down_bps: f64, up_bps: f64) -> Conditions {
        Conditions {
            latency_ms: rtt_ms,
            down_bytes_per_s: down_bps / 8.0,
            up_bytes_per_s: up_bps / 8.0,
        }
    }

    /// The `Network.emulateNetworkConditions` parameters (-1: no limit).
    pub fn params(&self) -> Value {
        let rate = |r: f64| if r.is_finite() && r > 0.0 { r } else { -1.0 };
        json!({
            "offline": false,
            "latency": self.latency_ms.max(0.0),
            "downloadThroughput": rate(self.down_bytes_per_s),
            "uploadThroughput": rate(self.up_bytes_per_s),
        })
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            pagewire_emu::cli::stop_process_group(&mut c, Duration::from_millis(500));
        }
    }
}

/// First-time retrieval or revalidation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// Empty cache (a fresh profile; the cache is also cleared).
    First,
    /// Same profile, every object validated (`Cache-Control: max-age=0`).
    Revalidate,
    /// Same profile, nothing added: Chromium's own choice (heuristic
    /// freshness may leave objects unrequested).
    Revisit,
}

/// How a browser's revalidation run visits the page again
/// (`bench --browser-revalidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BrowserRevalidation {
    /// Every object validated, as paper 001's robot does (default).
    #[default]
    Validate,
    /// A plain new visit: what Chromium itself decides to send.
    Heuristic,
}

impl std::str::FromStr for BrowserRevalidation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "validate" => Ok(Self::Validate),
            "heuristic" => Ok(Self::Heuristic),
            o => Err(format!("expected validate or heuristic, got {o:?}")),
        }
    }
}

impl Browser {
    /// Starts the browser with `spawn` (e.g. `Link::spawn_in_client`), its
    /// stderr in `log`, and attaches to its page.
    pub fn launch(
        exe: &Path,
        profile: &Path,
        protocol: &Protocol,
        log: &Path,
        spawn: impl FnOnce(Command) -> Result<Child>,
    ) -> Result<Browser> {
        Self::launch_with(exe, profile, protocol, &[], log, spawn)
    }

    /// [`Browser::launch`] with more switches on the command line (before
    /// the start URL), e.g. `--host-resolver-rules=...`.
    pub fn launch_with(
        exe: &Path,
        profile: &Path,
        protocol: &Protocol,
        extra: &[String],
        log: &Path,
        spawn: impl FnOnce(Command) -> Result<Child>,
    ) -> Result<Browser> {
        fs::create_dir_all(profile)
            .with_context(|| format!("create the profile {}", profile.display()))?;
        let mut cmd = command_with(exe, profile, protocol, extra);
        let pipes = PipeFds::new()?;
        pipes.attach(&mut cmd);
        let logf = File::create(log).with_context(|| format!("create {}", log.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf);
        let child = spawn(cmd).with_context(|| format!("start {}", exe.display()))?;
        let cdp = pipes.into_client(log.display().to_string())?;
        let mut b = Browser {
            child: Some(child),
            cdp,
            session: String::new(),
            product: String::new(),
            conditions: None,
        };
        let v = b
            .cdp
            .call(None, "Browser.getVersion", json!({}), START_TIMEOUT)
            .context("the browser did not answer on its DevTools pipe")?;
        b.product = v["product"].as_str().unwrap_or("?").to_string();
        let targets = b
            .cdp
            .call(None, "Target.getTargets", json!({}), CALL_TIMEOUT)?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|ts| ts.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .map(str::to_string);
        let target = match page {
            Some(t) => t,
            None => b.cdp.call(
                None,
                "Target.createTarget",
                json!({"url": "about:blank"}),
                CALL_TIMEOUT,
            )?["targetId"]
                .as_str()
                .context("Target.createTarget gave no targetId")?
                .to_string(),
        };
        let att = b.cdp.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            CALL_TIMEOUT,
        )?;
        b.session = att["sessionId"]
            .as_str()
            .context("Target.attachToTarget gave no sessionId")?
            .to_string();
        Ok(b)
    }

    /// Throttles every later load at the request level (DevTools network
    /// emulation), as `conditions` say.
    pub fn emulate(&mut self, conditions: Conditions) {
        self.conditions = Some(conditions);
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let s = self.session.clone();
        self.cdp.call(Some(&s), method, params, CALL_TIMEOUT)
    }

    /// Loads `url` and waits for its load event (at most `timeout`) and for
    /// every request to finish; then reads every response body.
    pub fn load(&mut self, url: &str, visit: Visit, timeout: Duration) -> Result<PageLoad> {
        // Buffers big enough that no body is evicted before we read it.
        self.call(
            "Network.enable",
            json!({"maxTotalBufferSize": 200_000_000, "maxResourceBufferSize": 50_000_000}),
        )?;
        self.call("Page.enable", json!({}))?;
        if let Some(c) = self.conditions {
            self.call("Network.emulateNetworkConditions", c.params())
                .context("Network.emulateNetworkConditions")?;
        }
        match visit {
            Visit::First => {
                self.call("Network.clearBrowserCache", json!({}))?;
            }
            Visit::Revalidate => {
                self.call(
                    "Network.setExtraHTTPHeaders",
                    json!({"headers": {"Cache-Control": "max-age=0"}}),
                )?;
            }
            Visit::Revisit => {}
        }
        self.cdp.clear_events();
        let nav = self.call("Page.navigate", json!({"url": url}))?;
        if let Some(e) = nav.get("errorText").and_then(Value::as_str) {
            bail!("Page.navigate {url}: {e}");
        }
        let deadline = Instant::now() + timeout;
        let sid = self.session.clone();
        let mine = move |e: &Value, m: &str| e["method"] == m && e["sessionId"] == sid.as_str();
        let load = self
            .cdp
            .wait_event(deadline, |e| mine(e, "Page.loadEventFired"))?
            .with_context(|| format!("no load event within {timeout:?} for {url}"))?;
        // Every request seen must have finished or failed (bounded).
        loop {
            let log = EventLog::from_events(self.cdp.events(), &self.session);
            if log.unfinished() == 0 {
                break;
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} requests still unfinished {timeout:?} after navigating to {url}",
                    log.unfinished()
                );
            }
            self.cdp.drain_for(Duration::from_millis(50))?;
        }
        // Late ExtraInfo events (they may follow loadingFinished).
        self.cdp.drain_for(Duration::from_millis(100))?;
        let log = EventLog::from_events(self.cdp.events(), &self.session);
        let mut entries = log.entries();
        for e in entries.iter_mut() {
            if e.failed.is_some() || e.method != "GET" {
                continue;
            }
            let body = self.call(
                "Network.getResponseBody",
                json!({"requestId": e.request_id}),
            );
            match body {
                Ok(b) => {
                    let text = b["body"].as_str().unwrap_or("");
                    let bytes = if b["base64Encoded"].as_bool() == Some(true) {
                        base64::engine::general_purpose::STANDARD
                            .decode(text)
                            .context("decode a response body")?
                    } else {
                        text.as_bytes().to_vec()
                    };
                    e.body_len = Some(bytes.len() as u64);
                    e.body_sha256 = Some(sha256_hex(&bytes));
                }
                Err(err) => e.body_error = Some(format!("{err:#}")),
            }
        }
        let t0 = entries
            .first()
            .map(|e| e.start_ts)
            .context("the browser made no request")?;
        let ts = |v: &Value| v["params"]["timestamp"].as_f64();
        let dcl = self
            .cdp
            .events()
            .find(|e| mine(e, "Page.domContentEventFired"))
            .and_then(ts);
        let last_byte = entries
            .iter()
            .filter(|e| !e.from_cache)
            .filter_map(|e| e.end_ts)
            .fold(f64::NAN, f64::max);
        Ok(PageLoad {
            url: url.to_string(),
            load_s: ts(&load).context("loadEventFired without timestamp")? - t0,
            dcl_s: dcl.map(|d| d - t0),
            last_byte_s: (!last_byte.is_nan()).then_some(last_byte - t0),
            started_wall: entries.first().map(|e| e.start_wall).unwrap_or(0.0),
            entries,
        })
    }

    /// The page's own paint and navigation times ([`PaintTimes`]), read
    /// after [`Browser::load`].
    pub fn paint_times(&mut self) -> Result<PaintTimes> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": PAINT_SCRIPT, "awaitPromise": true, "returnByValue": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            bail!("reading the page's paint times failed: {ex}");
        }
        let text = r["result"]["value"]
            .as_str()
            .context("the page's paint times were not a string")?;
        let v: Value = serde_json::from_str(text).context("parse the page's paint times")?;
        let s = |k: &str| v[k].as_f64().map(|ms| ms / 1e3);
        Ok(PaintTimes {
            load_s: s("load"),
            dcl_s: s("dcl"),
            fcp_s: s("fcp"),
            lcp_s: s("lcp"),
        })
    }

    /// Closes the browser cleanly (so its disk cache is on disk for a
    /// revalidation), then makes sure its process group is gone.
    pub fn close(mut self) -> Result<()> {
        let _ = self
            .cdp
            .call(None, "Browser.close", json!({}), Duration::from_secs(3));
        if let Some(mut c) = self.child.take() {
            let until = Instant::now() + CLOSE_GRACE;
            // Bounded by CLOSE_GRACE, then the group is killed.
            while Instant::now() < until {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            pagewire_emu::cli::stop_process_group(&mut c, Duration::from_millis(500));
        }
        Ok(())
    }
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// One request of a page load, as the DevTools events describe it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Entry {
    pub request_id: String,
    pub url: String,
    pub method: String,
    /// Status as the page saw it (200 also for a cached or validated copy).
    pub status: u16,
    pub status_text: String,
    /// Status line that crossed the wire (`Network.responseReceivedExtraInfo`):
    /// 304 for a validated object; `None` when nothing was sent.
    pub wire_status: Option<u16>,
    /// `http/1.1`, `h2`, `h3`.
    pub protocol: String,
    pub connection_id: Option<u64>,
    pub connection_reused: bool,
    /// Served from the cache without a request on the wire.
    pub from_cache: bool,
    pub resource_type: String,
    pub mime_type: String,
    /// Headers as sent on the wire (ExtraInfo), else as the page asked.
    pub request_headers: Vec<(String, String)>,
    pub response_headers: Vec<(String, String)>,
    /// Request line plus headers as HTTP/1.1 text, bytes (`None` for a
    /// request that never went out).
    pub request_bytes: Option<u64>,
    /// Bytes received for it on the wire (headers and body, as Chromium
    /// counts them: `loadingFinished.encodedDataLength`).
    pub encoded_bytes: u64,
    /// Length of the response head as received (HTTP/1.x `headersText`).
    pub response_head_bytes: Option<u64>,
    /// Monotonic seconds (DevTools clock) and wall-clock seconds of the start.
    pub start_ts: f64,
    pub start_wall: f64,
    /// When the response head reached the page (`Network.responseReceived`'s
    /// timestamp, after any DevTools throttling), monotonic seconds.
    #[serde(default)]
    pub response_ts: Option<f64>,
    /// The URL whose parsing (or script) started this request
    /// (`initiator.url`; none for the navigation).
    #[serde(default)]
    pub initiator: Option<String>,
    pub end_ts: Option<f64>,
    pub timing: Value,
    pub failed: Option<String>,
    pub body_len: Option<u64>,
    pub body_sha256: Option<String>,
    pub body_error: Option<String>,
}

/// One page load.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PageLoad {
    pub url: String,
    /// Load event, seconds from the page request's start.
    pub load_s: f64,
    pub dcl_s: Option<f64>,
    /// End of the last response that crossed the wire.
    pub last_byte_s: Option<f64>,
    pub started_wall: f64,
    pub entries: Vec<Entry>,
}

fn headers_vec(h: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = h
        .as_object()
        .map(|m| {
            m.iter()
                .flat_map(|(k, v)| {
                    // Repeated headers come joined by '\n'.
                    let s = v.as_str().unwrap_or("").to_string();
                    s.split('\n')
                        .map(|x| (k.clone(), x.to_string()))
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The Network events of one session, folded per request id.
struct EventLog {
    order: Vec<String>,
    by_id: BTreeMap<String, Entry>,
    finished: std::collections::BTreeSet<String>,
}

impl EventLog {
    fn from_events<'a>(events: impl Iterator<Item = &'a Value>, session: &str) -> EventLog {
        let mut log = EventLog {
            order: Vec::new(),
            by_id: BTreeMap::new(),
            finished: Default::default(),
        };
        // Two passes: the ExtraInfo events may arrive before the
        // requestWillBeSent they belong to.
        let events: Vec<&Value> = events.filter(|e| e["sessionId"] == session).collect();
        for ev in &events {
            let p = &ev["params"];
            let Some(id) = p["requestId"].as_str() else {
                continue;
            };
            if ev["method"] == "Network.requestWillBeSent" && !log.by_id.contains_key(id) {
                log.order.push(id.to_string());
                log.by_id.insert(
                    id.to_string(),
                    Entry {
                        request_id: id.to_string(),
                        url: p["request"]["url"].as_str().unwrap_or("").to_string(),
                        method: p["request"]["method"].as_str().unwrap_or("").to_string(),
                        resource_type: p["type"].as_str().unwrap_or("").to_string(),
                        request_headers: headers_vec(&p["request"]["headers"]),
                        start_ts: p["timestamp"].as_f64().unwrap_or(f64::NAN),
                        start_wall: p["wallTime"].as_f64().unwrap_or(f64::NAN),
                        initiator: p["initiator"]["url"].as_str().map(str::to_string),
                        ..Entry::default()
                    },
                );
            }
        }
        for ev in &events {
            let p = &ev["params"];
            let Some(id) = p["requestId"].as_str() else {
                continue;
            };
            let method = ev["method"].as_str().unwrap_or("");
            let Some(e) = log.by_id.get_mut(id) else {
                continue;
            };
            match method {
                "Network.requestWillBeSentExtraInfo" => {
                    e.request_headers = headers_vec(&p["headers"]);
                    let path = e
                        .url
                        .find("://")
                        .and_then(|i| e.url[i + 3..].find('/').map(|j| &e.url[i + 3 + j..]))
                        .unwrap_or("/");
                    // "GET /p HTTP/1.1\r\n" + "k: v\r\n"... + "\r\n"
                    let n = e.method.len()
                        + 1
                        + path.len()
                        + 11
                        + e.request_headers
                            .iter()
                            .map(|(k, v)| k.len() + 2 + v.len() + 2)
                            .sum::<usize>()
                        + 2;
                    e.request_bytes = Some(n as u64);
                }
                "Network.responseReceived" => {
                    let r = &p["response"];
                    e.status = r["status"].as_u64().unwrap_or(0) as u16;
                    e.status_text = r["statusText"].as_str().unwrap_or("").to_string();
                    e.protocol = r["protocol"].as_str().unwrap_or("").to_string();
                    e.connection_id = r["connectionId"].as_f64().map(|x| x as u64);
                    e.connection_reused = r["connectionReused"].as_bool().unwrap_or(false);
                    e.from_cache |= r["fromDiskCache"].as_bool().unwrap_or(false)
                        || r["fromMemoryCache"].as_bool().unwrap_or(false)
                        || r["fromPrefetchCache"].as_bool().unwrap_or(false);
                    e.mime_type = r["mimeType"].as_str().unwrap_or("").to_string();
                    if e.response_headers.is_empty() {
                        e.response_headers = headers_vec(&r["headers"]);
                    }
                    e.timing = r["timing"].clone();
                    e.response_ts = p["timestamp"].as_f64();
                }
                "Network.responseReceivedExtraInfo" => {
                    e.wire_status = p["statusCode"].as_u64().map(|s| s as u16);
                    e.response_head_bytes = p["headersText"].as_str().map(|t| t.len() as u64);
                    e.response_headers = headers_vec(&p["headers"]);
                }
                "Network.requestServedFromCache" => e.from_cache = true,
                "Network.loadingFinished" => {
                    e.end_ts = p["timestamp"].as_f64();
                    e.encoded_bytes = p["encodedDataLength"].as_f64().unwrap_or(0.0) as u64;
                    log.finished.insert(id.to_string());
                }
                "Network.loadingFailed" => {
                    e.end_ts = p["timestamp"].as_f64();
                    e.failed = Some(p["errorText"].as_str().unwrap_or("failed").to_string());
                    log.finished.insert(id.to_string());
                }
                _ => {}
            }
        }
        log
    }

    fn unfinished(&self) -> usize {
        self.order
            .iter()
            .filter(|id| !self.finished.contains(*id))
            .count()
    }

    fn entries(&self) -> Vec<Entry> {
        self.order
            .iter()
            .filter_map(|id| self.by_id.get(id).cloned())
            .collect()
    }
}

/// The path of an absolute URL (`/` if none).
pub fn url_path(url: &str) -> &str {
    url.find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| &url[i + 3 + j..]))
        .unwrap_or("/")
}

/// What a browser run adds to its run record.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BrowserSummary {
    /// e.g. `HeadlessChrome/156.0.8078.79`.
    pub product: String,
    /// Load event, s from the page request (this is the row's Sec).
    pub load_s: f64,
    pub dcl_s: Option<f64>,
    /// End of the last response that crossed the wire, s.
    pub last_byte_s: Option<f64>,
    /// Requests on the wire; answered 200; answered 304; served from the
    /// cache with nothing sent.
    pub requests_sent: u32,
    pub status_200: u32,
    pub status_304: u32,
    pub from_cache: u32,
    /// Distinct connections Chromium used (its connection ids).
    pub connections: u32,
    /// Protocols seen (`http/1.1`, `h2`, `h3`).
    pub protocols: Vec<String>,
    /// Packets on the link that were not page traffic (0 required).
    pub foreign_packets: u64,
    /// The run's HAR, relative to the results directory.
    pub har: String,
}

impl PageLoad {
    /// Summary numbers (the HAR path and foreign packets filled by the caller).
    pub fn summary(&self, product: &str) -> BrowserSummary {
        let mut conns = std::collections::BTreeSet::new();
        let mut protos = std::collections::BTreeSet::new();
        let mut s = BrowserSummary {
            product: product.to_string(),
            load_s: self.load_s,
            dcl_s: self.dcl_s,
            last_byte_s: self.last_byte_s,
            ..Default::default()
        };
        for e in &self.entries {
            if e.from_cache {
                s.from_cache += 1;
                continue;
            }
            if e.request_bytes.is_some() || e.wire_status.is_some() {
                s.requests_sent += 1;
            }
            match e.wire_status.unwrap_or(e.status) {
                200 => s.status_200 += 1,
                304 => s.status_304 += 1,
                _ => {}
            }
            if let Some(c) = e.connection_id {
                conns.insert(c);
            }
            if !e.protocol.is_empty() {
                protos.insert(e.protocol.clone());
            }
        }
        s.connections = conns.len() as u32;
        s.protocols = protos.into_iter().collect();
        s
    }

    /// Mean size of the requests that went out (HTTP/1.1 text), bytes.
    pub fn mean_request_bytes(&self) -> (u32, f64) {
        let xs: Vec<u64> = self
            .entries
            .iter()
            .filter(|e| !e.from_cache)
            .filter_map(|e| e.request_bytes)
            .collect();
        let n = xs.len() as u32;
        (
            n,
            if n == 0 {
                f64::NAN
            } else {
                xs.iter().sum::<u64>() as f64 / f64::from(n)
            },
        )
    }

    /// Checks every expected object (path -> sha256 of the site's file):
    /// present, not failed, body byte-exact; first-time: 200 on the wire;
    /// revalidation: 304 on the wire or served from the cache. Returns the
    /// paths that are ok and those that are not, with why.
    pub fn check(
        &self,
        expected: &BTreeMap<String, String>,
        page_path: &str,
        revalidate: bool,
    ) -> (u64, Vec<String>) {
        let mut ok = std::collections::BTreeSet::new();
        let mut why = BTreeMap::new();
        for e in &self.entries {
            let p = url_path(&e.url);
            let p = if p == "/" { page_path } else { p };
            let Some(sha) = expected.get(p) else {
                continue;
            };
            let fault = if let Some(f) = &e.failed {
                Some(format!("failed: {f}"))
            } else if e.body_sha256.as_deref() != Some(sha.as_str()) {
                Some(match &e.body_error {
                    Some(err) => format!("no body: {err}"),
                    None => format!("body differs ({} bytes)", e.body_len.unwrap_or(0)),
                })
            } else if !revalidate && (e.from_cache || e.wire_status.unwrap_or(e.status) != 200) {
                Some(format!(
                    "first-time load not a 200 from the wire (status {:?}, from cache {})",
                    e.wire_status, e.from_cache
                ))
            } else if revalidate && !(e.from_cache || e.wire_status == Some(304)) {
                Some(format!("revalidation got {:?}, not 304", e.wire_status))
            } else {
                None
            };
            match fault {
                None => {
                    ok.insert(p.to_string());
                }
                Some(f) => {
                    why.insert(p.to_string(), f);
                }
            }
        }
        let bad = expected
            .keys()
            .filter(|p| !ok.contains(*p))
            .map(|p| match why.get(p) {
                Some(w) => format!("{p} ({w})"),
                None => format!("{p} (never requested)"),
            })
            .collect();
        (ok.len() as u64, bad)
    }

    /// HAR 1.2 of this load.
    pub fn har(&self, product: &str, comment: &str) -> Value {
        let iso = |wall: f64| -> String {
            if !wall.is_finite() || wall <= 0.0 {
                return "1970-01-01T00:00:00.000Z".into();
            }
            humantime::format_rfc3339_millis(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(wall))
                .to_string()
        };
        let hdrs = |h: &[(String, String)]| -> Value {
            h.iter()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect::<Vec<_>>()
                .into()
        };
        let ms = |a: f64, b: f64| if a >= 0.0 && b >= a { b - a } else { -1.0 };
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let t = &e.timing;
                let f = |k: &str| t[k].as_f64().unwrap_or(-1.0);
                let total_ms = e
                    .end_ts
                    .map(|end| (end - e.start_ts) * 1e3)
                    .unwrap_or(0.0)
                    .max(0.0);
                let req_start_ms = t["requestTime"]
                    .as_f64()
                    .map(|rt| (rt - e.start_ts) * 1e3)
                    .unwrap_or(0.0)
                    .max(0.0);
                let dns = ms(f("dnsStart"), f("dnsEnd"));
                let connect = ms(f("connectStart"), f("connectEnd"));
                let ssl = ms(f("sslStart"), f("sslEnd"));
                let send = ms(f("sendStart"), f("sendEnd")).max(0.0);
                let wait = ms(f("sendEnd"), f("receiveHeadersEnd")).max(0.0);
                // HAR 1.2: `time` is the sum of the timings (ssl is inside
                // connect). Everything before the request went out that is
                // not DNS or connect is `blocked` (queueing, stalls), and
                // `receive` is the rest of the entry's span, so the parts
                // add up to the span CDP reported.
                let before_send = req_start_ms + f("sendStart").max(0.0);
                let blocked = (before_send - dns.max(0.0) - connect.max(0.0)).max(0.0);
                let receive = (total_ms - before_send - send - wait).max(0.0);
                let time = blocked + dns.max(0.0) + connect.max(0.0) + send + wait + receive;
                let http_version = match e.protocol.as_str() {
                    "h2" => "HTTP/2",
                    "h3" => "HTTP/3",
                    "http/1.1" => "HTTP/1.1",
                    "" => "unknown",
                    other => other,
                };
                json!({
                    "pageref": "page_1",
                    "startedDateTime": iso(e.start_wall),
                    "time": time,
                    "request": {
                        "method": e.method, "url": e.url, "httpVersion": http_version,
                        "cookies": [], "headers": hdrs(&e.request_headers), "queryString": [],
                        "headersSize": e.request_bytes.map(|b| b as i64).unwrap_or(-1),
                        "bodySize": 0,
                    },
                    "response": {
                        "status": e.wire_status.unwrap_or(e.status),
                        "statusText": e.status_text, "httpVersion": http_version,
                        "cookies": [], "headers": hdrs(&e.response_headers),
                        "content": {"size": e.body_len.unwrap_or(0), "mimeType": e.mime_type},
                        "redirectURL": "",
                        "headersSize": e.response_head_bytes.map(|b| b as i64).unwrap_or(-1),
                        "bodySize": if e.from_cache {
                            0
                        } else {
                            e.encoded_bytes.saturating_sub(e.response_head_bytes.unwrap_or(0)) as i64
                        },
                    },
                    "cache": {},
                    "timings": {
                        "blocked": blocked,
                        "dns": dns,
                        "connect": connect,
                        "ssl": ssl,
                        "send": send, "wait": wait, "receive": receive,
                    },
                    "connection": e.connection_id.map(|c| c.to_string()).unwrap_or_default(),
                    "_fromCache": e.from_cache,
                    "_wireStatus": e.wire_status,
                    "_resourceType": e.resource_type,
                    "_sha256": e.body_sha256,
                    "_failed": e.failed,
                })
            })
            .collect();
        json!({"log": {
            "version": "1.2",
            "creator": {"name": "pagewire", "version": env!("CARGO_PKG_VERSION"), "comment": comment},
            "browser": {"name": "Chromium", "version": product},
            "pages": [{
                "startedDateTime": iso(self.started_wall),
                "id": "page_1", "title": self.url,
                "pageTimings": {
                    "onContentLoad": self.dcl_s.map(|d| d * 1e3).unwrap_or(-1.0),
                    "onLoad": self.load_s * 1e3,
                },
            }],
            "entries": entries,
        }})
    }
}

/// Packets and IP bytes of a pcap, and how many packets were not TCP/UDP
/// between `client` and `server:port` (background traffic).
pub fn pcap_audit(
    path: &Path,
    client: Ipv4Addr,
    server: Ipv4Addr,
    port: u16,
) -> Result<(u64, u64, u64)> {
    pcap_audit_ports(path, client, server, &[port])
}

/// [`pcap_audit`] with page traffic on any of the server's `ports` (a
/// replayed site's HTTP and HTTPS listeners).
pub fn pcap_audit_ports(
    path: &Path,
    client: Ipv4Addr,
    server: Ipv4Addr,
    ports: &[u16],
) -> Result<(u64, u64, u64)> {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    let f = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = pcap_file::pcap::PcapReader::new(BufReader::new(f))
        .with_context(|| format!("read pcap header of {}", path.display()))?;
    let (mut n, mut bytes, mut foreign) = (0u64, 0u64, 0u64);
    while let Some(p) = r.next_packet() {
        let p = p.with_context(|| format!("pcap record of {}", path.display()))?;
        n += 1;
        if n as usize > MAX_PCAP_PACKETS {
            bail!("{} has too many packets", path.display());
        }
        bytes += u64::from(p.orig_len);
        let page = match SlicedPacket::from_ip(&p.data) {
            Ok(sp) => match (sp.net, sp.transport) {
                (Some(NetSlice::Ipv4(ip)), Some(t)) => {
                    let (s, d) = (ip.header().source_addr(), ip.header().destination_addr());
                    let (sp_, dp) = match &t {
                        TransportSlice::Tcp(t) => (t.source_port(), t.destination_port()),
                        TransportSlice::Udp(u) => (u.source_port(), u.destination_port()),
                        _ => (0, 0),
                    };
                    // ICMP between the two ends is about the page's own
                    // packets (a port unreachable for a QUIC datagram that
                    // arrives after the server closed the connection).
                    let icmp = matches!(t, TransportSlice::Icmpv4(_))
                        && ((s == client && d == server) || (s == server && d == client));
                    icmp || (s == client && d == server && ports.contains(&dp))
                        || (s == server && d == client && ports.contains(&sp_))
                }
                _ => false,
            },
            Err(_) => false,
        };
        if !page {
            foreign += 1;
        }
    }
    Ok((n, bytes, foreign))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(method: &str, params: Value) -> Value {
        json!({"method": method, "sessionId": "S", "params": params})
    }

    /// A load of a page and one image, with the ExtraInfo events before
    /// the requestWillBeSent they belong to (as Chromium may send them).
    fn events(image_status: u16) -> Vec<Value> {
        let mut v = Vec::new();
        for (id, url, ts) in [
            ("1", "http://198.18.0.2/index.html", 10.0),
            ("2", "http://198.18.0.2/a.gif", 10.1),
        ] {
            v.push(ev(
                "Network.requestWillBeSentExtraInfo",
                json!({"requestId": id, "headers": {"Host": "198.18.0.2", "User-Agent": "x"}}),
            ));
            v.push(ev(
                "Network.requestWillBeSent",
                json!({"requestId": id, "timestamp": ts, "wallTime": 1.7e9, "type": "Image",
                       "request": {"url": url, "method": "GET", "headers": {}}}),
            ));
            let status = if id == "2" { image_status } else { 200 };
            v.push(ev(
                "Network.responseReceived",
                json!({"requestId": id, "response": {"status": 200, "statusText": "OK",
                       "protocol": "http/1.1", "connectionId": 7, "headers": {},
                       "mimeType": "image/gif", "timing": {"requestTime": ts, "sendStart": 0.1,
                       "sendEnd": 0.2, "receiveHeadersEnd": 1.0}}}),
            ));
            v.push(ev(
                "Network.responseReceivedExtraInfo",
                json!({"requestId": id, "statusCode": status, "headers": {"ETag": "\"e\""}}),
            ));
            v.push(ev(
                "Network.loadingFinished",
                json!({"requestId": id, "timestamp": ts + 0.05, "encodedDataLength": 300}),
            ));
        }
        // Another session's events are not ours.
        v.push(json!({"method": "Network.requestWillBeSent", "sessionId": "T",
                      "params": {"requestId": "9", "request": {"url": "http://x/", "method": "GET"}}}));
        v
    }

    fn load(image_status: u16) -> PageLoad {
        let evs = events(image_status);
        let log = EventLog::from_events(evs.iter(), "S");
        assert_eq!(log.unfinished(), 0);
        let mut entries = log.entries();
        for e in &mut entries {
            let body: &[u8] = if e.url.ends_with(".gif") {
                b"GIF"
            } else {
                b"<p>"
            };
            e.body_len = Some(body.len() as u64);
            e.body_sha256 = Some(sha256_hex(body));
        }
        PageLoad {
            url: "http://198.18.0.2/index.html".into(),
            load_s: 0.2,
            dcl_s: Some(0.1),
            last_byte_s: Some(0.15),
            started_wall: 1.7e9,
            entries,
        }
    }

    #[test]
    fn folds_events_in_either_order_and_checks_bodies() {
        let l = load(200);
        assert_eq!(l.entries.len(), 2);
        let e = &l.entries[1];
        assert_eq!(e.wire_status, Some(200));
        assert_eq!(e.connection_id, Some(7));
        // "GET /a.gif HTTP/1.1\r\n" + "Host: 198.18.0.2\r\n" + "User-Agent: x\r\n" + "\r\n"
        assert_eq!(e.request_bytes, Some(21 + 18 + 15 + 2));
        let mut expected = BTreeMap::new();
        expected.insert("/index.html".to_string(), sha256_hex(b"<p>"));
        expected.insert("/a.gif".to_string(), sha256_hex(b"GIF"));
        expected.insert("/b.gif".to_string(), sha256_hex(b"B"));
        let (ok, bad) = l.check(&expected, "/index.html", false);
        assert_eq!(ok, 2);
        assert_eq!(bad, vec!["/b.gif (never requested)".to_string()]);
        // A 200 is no revalidation; a wrong body is never ok.
        assert_eq!(l.check(&expected, "/index.html", true).0, 0);
        let mut l2 = load(304);
        assert_eq!(l2.summary("p").status_304, 1);
        l2.entries[1].body_sha256 = Some(sha256_hex(b"other"));
        let (ok, bad) = l2.check(&expected, "/index.html", true);
        assert_eq!(ok, 0, "{bad:?}");
        assert!(bad.iter().any(|b| b.contains("body differs")), "{bad:?}");
    }

    #[test]
    fn har_has_the_entries_and_timings() {
        let h = load(200).har("HeadlessChrome/1", "test");
        assert_eq!(h["log"]["version"], "1.2");
        assert_eq!(h["log"]["pages"][0]["pageTimings"]["onLoad"], 200.0);
        let es = h["log"]["entries"].as_array().unwrap();
        assert_eq!(es.len(), 2);
        assert_eq!(es[1]["response"]["status"], 200);
        assert_eq!(es[1]["request"]["httpVersion"], "HTTP/1.1");
        assert_eq!(es[1]["connection"], "7");
        assert!(es[1]["time"].as_f64().unwrap() > 49.0);
        assert!(es[0]["startedDateTime"]
            .as_str()
            .unwrap()
            .starts_with("2023-"));
    }

    /// A "browser" that dies, or speaks no DevTools, fails the launch at
    /// once with a clear error (no wait for the start timeout), and leaves
    /// no process behind.
    #[test]
    fn a_dead_or_garbled_browser_fails_fast_and_clearly() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        for (name, body, want) in [
            ("dies", "exit 3\n", "closed its pipe"),
            (
                "garbles",
                "printf 'nonsense\\000' >&4; sleep 20\n",
                "unparsable DevTools message",
            ),
        ] {
            let exe = dir.path().join(name);
            fs::write(&exe, format!("#!/bin/sh\n{body}")).unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
            let t = Instant::now();
            let err = Browser::launch(
                &exe,
                &dir.path().join(format!("profile-{name}")),
                &Protocol::H1,
                &dir.path().join(format!("{name}.log")),
                |mut c| {
                    c.process_group(0);
                    Ok(c.spawn()?)
                },
            )
            .err()
            .unwrap_or_else(|| panic!("{name}: launched"));
            let msg = format!("{err:#}");
            assert!(msg.contains(want), "{name}: {msg}");
            assert!(msg.contains(&format!("{name}.log")), "{name}: {msg}");
            assert!(t.elapsed() < Duration::from_secs(10), "{name}: slow");
        }
    }

    #[test]
    fn the_command_line_keeps_background_traffic_off() {
        let c = command(Path::new("chromium"), Path::new("/p"), &Protocol::H1);
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().to_string())
            .collect();
        for want in [
            "--headless=new",
            "--no-sandbox",
            "--remote-debugging-pipe",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-pings",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        let h3 = command(
            Path::new("chromium"),
            Path::new("/p"),
            &Protocol::H3 {
                spki: "abc=".into(),
                origin: "198.18.0.2:443".into(),
            },
        );
        let args: Vec<String> = h3
            .get_args()
            .map(|a| a.to_string_lossy().to_string())
            .collect();
        assert!(args.contains(&"--origin-to-force-quic-on=198.18.0.2:443".to_string()));
        assert!(args.contains(&"--ignore-certificate-errors-spki-list=abc=".to_string()));
    }
}
