//! `pagewire load URL...`: load on given URLs as wrk, k6 or h2load users
//! expect, no SURGE file set needed. `connections` persistent HTTP/1.1
//! connections (connection *i* asks for URL *i* mod the number of URLs):
//!
//! - **closed** (no rate): each connection sends its next request as soon
//!   as the previous response ended (maximum rate);
//! - **open** (`rate` requests/s over all connections): request *k* of the
//!   run is due at `k / rate`; connection *i* sends requests `i, i + N, ...`
//!   when due, and their latency counts from that intended time, so a slow
//!   server cannot hide behind a late send (no coordinated omission).
//!
//! Any 2xx response with a whole body counts as a GET; other statuses are
//! `bad_status` errors, and every status is counted by code.
//!
//! The connections are tasks of one current-thread runtime, not of a
//! `LocalSet`: a `LocalSet` woken by the I/O driver wakes the runtime's
//! `block_on` through its eventfd, one `write` system call per wake-up,
//! nearly one per GET; the runtime's own tasks are queued without one.
//! Their shared metrics are behind a mutex that is never contended.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Context as _};
use pagewire_h1::Version;
use tokio::time::{sleep_until, Instant};

use crate::client::{self, Conn, ANY_SIZE};
use crate::metrics::{ErrorKind, Metrics, RunInfo, Summary};
use crate::run::{cpu_times, ensure_fd_limit, parse_target, Live};

/// A URL run's configuration.
#[derive(Debug, Clone)]
pub struct UrlConfig {
    pub urls: Vec<String>,
    pub connections: u64,
    pub duration: Duration,
    pub warmup: Duration,
    /// Requests per second over all connections; `None`: closed, maximum rate.
    pub rate: Option<f64>,
    pub timeout: Duration,
    pub command_line: String,
}

struct Url {
    addr: SocketAddr,
    req: Vec<u8>,
}

fn parse_url(u: &str) -> anyhow::Result<Url> {
    let rest = u.strip_prefix("http://").with_context(|| {
        format!("{u:?}: expected http://HOST[:PORT]/PATH (https is not supported)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        bail!("{u:?}: the path holds a space or control character");
    }
    let t = parse_target(&format!("http://{authority}"))?;
    Ok(Url {
        addr: t.addr,
        req: client::request_bytes(path, &t.host, Version::Http11, false),
    })
}

struct Ctx {
    cfg: UrlConfig,
    urls: Vec<Url>,
    start: Instant,
    measure_from: Instant,
    end: Instant,
    metrics: Mutex<Metrics>,
    live: Arc<Live>,
}

impl Ctx {
    fn metrics(&self) -> MutexGuard<'_, Metrics> {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn sec(&self, t: Instant) -> usize {
        t.saturating_duration_since(self.start).as_secs() as usize
    }
    fn in_window(&self, t: Instant) -> bool {
        t >= self.measure_from && t < self.end
    }
    fn error(&self, kind: ErrorKind) {
        self.metrics().record_error(self.sec(Instant::now()), kind);
        self.live.errors.fetch_add(1, Ordering::Relaxed);
    }
}

async fn connection(ctx: Arc<Ctx>, i: u64) {
    let url = &ctx.urls[(i % ctx.urls.len() as u64) as usize];
    let n = ctx.cfg.connections;
    let mut conn: Option<Conn> = None;
    let mut k = 0u64;
    loop {
        let intended = match ctx.cfg.rate {
            Some(r) => ctx.start + Duration::from_secs_f64((k * n + i) as f64 / r),
            None => Instant::now(),
        };
        if intended >= ctx.end {
            break;
        }
        if ctx.cfg.rate.is_some() {
            sleep_until(intended).await;
        }
        k += 1;
        if conn.is_none() {
            match client::connect(url.addr, Instant::now() + ctx.cfg.timeout).await {
                Ok(s) => {
                    let now = Instant::now();
                    let mut m = ctx.metrics();
                    if ctx.in_window(now) {
                        m.record_connection(ctx.sec(now));
                    } else {
                        m.conns_outside_window += 1;
                    }
                    ctx.live.connections.fetch_add(1, Ordering::Relaxed);
                    conn = Some(Conn::new(s));
                }
                Err(f) => {
                    ctx.error(f.kind);
                    // Closed mode: do not spin on a refusing address.
                    if ctx.cfg.rate.is_none() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("just set");
        let sent = Instant::now();
        ctx.metrics()
            .record_send_lag(sent.saturating_duration_since(intended).as_micros() as u64);
        let deadline = sent + ctx.cfg.timeout;
        let mut r = c.send(&url.req, deadline).await.map(|()| None);
        if r.is_ok() {
            r = c.read_response(ANY_SIZE, deadline).await.map(Some);
        }
        if c.last_status != 0 {
            ctx.metrics().record_status(c.last_status);
        }
        match r {
            Ok(Some(resp)) => {
                let done = Instant::now();
                let lat = done.saturating_duration_since(intended).as_micros() as u64;
                let mut m = ctx.metrics();
                if ctx.in_window(done) {
                    m.record_get(ctx.sec(done), lat, resp.body_bytes);
                } else {
                    m.gets_outside_window += 1;
                }
                ctx.live.gets.fetch_add(1, Ordering::Relaxed);
                if c.closing {
                    conn = None;
                }
            }
            Ok(None) => unreachable!("a sent request is read"),
            Err(f) => {
                // 2xx only: a non-2xx status is an error.
                let kind = if f.kind == ErrorKind::BadStatus && (200..300).contains(&c.last_status)
                {
                    None
                } else {
                    Some(f.kind)
                };
                match kind {
                    Some(k) => ctx.error(k),
                    None => {
                        let done = Instant::now();
                        if ctx.in_window(done) {
                            let lat = done.saturating_duration_since(intended).as_micros() as u64;
                            ctx.metrics().record_get(ctx.sec(done), lat, 0);
                        }
                    }
                }
                conn = None;
            }
        }
    }
}

/// Runs the URLs; the summary has `mode` "closed" or "open R/s" and
/// `ues` = connections.
pub fn run_urls(cfg: UrlConfig, live: Arc<Live>) -> anyhow::Result<(Summary, Metrics)> {
    if cfg.urls.is_empty() {
        bail!("give at least one URL");
    }
    if cfg.connections == 0 {
        bail!("-c/--connections must be at least 1");
    }
    if cfg.duration.is_zero() {
        bail!("--duration must be positive");
    }
    if cfg.warmup >= cfg.duration {
        bail!("--warmup must be shorter than --duration");
    }
    if cfg.timeout.is_zero() {
        bail!("--timeout must be positive");
    }
    if let Some(r) = cfg.rate {
        if !(r.is_finite() && r > 0.0) {
            bail!("--rate must be a positive number of requests per second");
        }
    }
    let urls = cfg
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    ensure_fd_limit(cfg.connections + 64)?;
    let started_utc = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let cpu0 = cpu_times();
    let wall0 = std::time::Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cfg2 = cfg.clone();
    let start_unix = (std::time::SystemTime::now() + Duration::from_millis(20))
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let metrics = rt.block_on(async move {
        let start = Instant::now() + Duration::from_millis(20);
        let ctx = Arc::new(Ctx {
            end: start + cfg2.duration,
            measure_from: start + cfg2.warmup,
            cfg: cfg2,
            urls,
            start,
            metrics: Mutex::new(Metrics::default()),
            live,
        });
        let tasks: Vec<_> = (0..ctx.cfg.connections)
            .map(|i| tokio::spawn(connection(ctx.clone(), i)))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        let m = ctx.metrics().clone();
        m
    });
    let cpu1 = cpu_times();
    let info = RunInfo {
        tool: "pagewire load".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: cfg.command_line.clone(),
        started_utc,
        target: cfg.urls.join(" "),
        mode: "urls".into(),
        model: match cfg.rate {
            Some(r) => format!("open {r} requests/s"),
            None => "closed".into(),
        },
        conns_per_ue: 1,
        ues_total: cfg.connections,
        ues: cfg.connections,
        shards: "0/1".into(),
        seed: 0,
        duration_s: cfg.duration.as_secs_f64(),
        start_unix,
        warmup_s: cfg.warmup.as_secs_f64(),
        ramp_s: 0.0,
        threads: 1,
        site_files: 0,
        site_bytes: 0,
    };
    let summary = Summary::new(
        info,
        &metrics,
        cpu1.0 - cpu0.0,
        cpu1.1 - cpu0.1,
        wall0.elapsed().as_secs_f64(),
    );
    Ok((summary, metrics))
}
