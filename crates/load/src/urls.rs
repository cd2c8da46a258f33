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
//! An open run goes to the tick engine ([`crate::tick`]) unless `engine`
//! says tokio; closed runs and `Engine::Tokio` run here.
//!
//! The connections are tasks of one current-thread runtime, not of a
//! `LocalSet`: a `LocalSet` woken by the I/O driver wakes the runtime's
//! `block_on` through its eventfd, one `write` system call per wake-up,
//! nearly one per GET; the runtime's own tasks are queued without one.
//! Their shared metrics are behind a mutex that is never contended.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{bail, Context as _};
use pagewire_h1::Version;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::client::{self, Conn, ANY_SIZE};
use crate::metrics::{ErrorKind, Metrics, RunInfo, Summary};
use crate::run::{cpu_times, ensure_fd_limit, parse_target, Live};
pub use crate::schedule::Schedule;

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
    /// Which engine runs an open (`rate`) run; closed runs are always tokio's.
    pub engine: Engine,
}

/// The engine of an open run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The tick engine ([`crate::tick`]): one loop that wakes once per
    /// tick, not once per response (the default).
    #[default]
    Tick,
    /// Connection tasks on a current-thread tokio runtime with one pacer.
    Tokio,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tick => "tick",
            Engine::Tokio => "tokio",
        }
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        match s {
            "tick" => Ok(Engine::Tick),
            "tokio" => Ok(Engine::Tokio),
            _ => Err(format!("{s:?}: expected tick or tokio")),
        }
    }
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

/// What the pacer has released to one connection: `due` of its requests
/// (counting from its first) are due; `notify` wakes it when more are.
#[derive(Default)]
struct Slot {
    due: AtomicU64,
    notify: Notify,
}

impl Slot {
    /// Waits until the connection's request `k` (0-based) is released.
    async fn wait(&self, k: u64) {
        while self.due.load(Ordering::Acquire) <= k {
            self.notify.notified().await;
        }
    }
}

/// The open model's one timer: sleeps until the next request is due, then
/// releases every request due by then to its connection (each connection
/// computes its requests' intended times from the same `Schedule`, so the
/// send lag and latency still count from each request's own time).
/// Replaces a timer per request with one per tick of the runtime's timer
/// wheel (1 ms), whatever the rate.
async fn pacer(sched: Schedule, slots: Arc<[Slot]>) {
    let n = sched.connections;
    let mut next = 0u64;
    let timer = tokio::time::sleep_until(sched.start);
    tokio::pin!(timer);
    while sched.has(next) {
        timer.as_mut().reset(sched.intended(next));
        timer.as_mut().await;
        let due = sched.due(next, Instant::now());
        // Each connection is told once per tick, however many it got.
        for g in due.clone() {
            slots[(g % n) as usize].due.fetch_add(1, Ordering::Release);
        }
        for g in due.start..due.start + (due.end - due.start).min(n) {
            slots[(g % n) as usize].notify.notify_one();
        }
        next = due.end.max(next);
    }
}

/// One connection's loop. Closed (`slot` None): a request as soon as the
/// previous response ended. Open: request `k` when the pacer says it is due.
async fn connection(ctx: Arc<Ctx>, i: u64, slot: Option<(Schedule, Arc<[Slot]>)>) {
    let url = &ctx.urls[(i % ctx.urls.len() as u64) as usize];
    let mut conn: Option<Conn> = None;
    let mut k = 0u64;
    loop {
        let intended = match &slot {
            Some((sched, slots)) => {
                let intended = sched.intended_on(i, k);
                if intended >= ctx.end {
                    break;
                }
                slots[i as usize].wait(k).await;
                intended
            }
            None => {
                let now = Instant::now();
                if now >= ctx.end {
                    break;
                }
                now
            }
        };
        k += 1;
        // Closed and no connect in between: the request goes now, at its
        // intended time (one clock read per GET fewer; the lag, under a
        // microsecond either way, records as the histogram's floor).
        let mut sent_at_intended = slot.is_none();
        if conn.is_none() {
            sent_at_intended = false;
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
                    let mut c = Conn::new(s);
                    // A busy connection keeps its read buffer between responses.
                    c.keep_buffer = true;
                    conn = Some(c);
                }
                Err(f) => {
                    ctx.error(f.kind);
                    // Closed mode: do not spin on a refusing address.
                    if slot.is_none() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    continue;
                }
            }
        }
        let c = conn.as_mut().expect("just set");
        let (sent, lag) = if sent_at_intended {
            (intended, 0)
        } else {
            let sent = Instant::now();
            (
                sent,
                sent.saturating_duration_since(intended).as_micros() as u64,
            )
        };
        let deadline = sent + ctx.cfg.timeout;
        // The status of this request's response: `read_response` sets it;
        // a failed send reads none, and the previous response's status
        // must not be counted again (as the tick engine, whose reader is
        // new for every request).
        c.last_status = 0;
        let mut r = c.send(&url.req, deadline).await.map(|()| None);
        if r.is_ok() {
            r = c.read_response(ANY_SIZE, deadline).await.map(Some);
        }
        // One lock per GET: lateness, status and outcome together.
        let done = Instant::now();
        let mut m = ctx.metrics();
        m.record_send_lag(lag);
        if c.last_status != 0 {
            m.record_status(c.last_status);
        }
        let lat = done.saturating_duration_since(intended).as_micros() as u64;
        match r {
            Ok(Some(resp)) => {
                if ctx.in_window(done) {
                    m.record_get(ctx.sec(done), lat, resp.body_bytes);
                } else {
                    m.gets_outside_window += 1;
                }
                drop(m);
                ctx.live.gets.fetch_add(1, Ordering::Relaxed);
                if c.closing {
                    conn = None;
                }
            }
            Ok(None) => unreachable!("a sent request is read"),
            Err(f) => {
                // 2xx only: a non-2xx status is an error.
                if f.kind == ErrorKind::BadStatus && (200..300).contains(&c.last_status) {
                    if ctx.in_window(done) {
                        m.record_get(ctx.sec(done), lat, 0);
                    }
                } else {
                    m.record_error(ctx.sec(done), f.kind);
                    drop(m);
                    ctx.live.errors.fetch_add(1, Ordering::Relaxed);
                }
                conn = None;
            }
        }
    }
}

/// Checks the configuration, parses the URLs and raises the descriptor
/// limit for the connections: what every run does first, on either engine.
fn prepare(cfg: &UrlConfig) -> anyhow::Result<Vec<Url>> {
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
    Ok(urls)
}

/// Runs the URLs; the summary has `mode` "closed" or "open R/s" and
/// `ues` = connections.
pub fn run_urls(cfg: UrlConfig, live: Arc<Live>) -> anyhow::Result<(Summary, Metrics)> {
    let urls = prepare(&cfg)?;
    let started_utc = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let cpu0 = cpu_times();
    let wall0 = std::time::Instant::now();
    let engine = match cfg.rate {
        Some(_) => cfg.engine,
        None => Engine::Tokio,
    };
    let (metrics, start_unix) = if engine == Engine::Tick {
        let (m, _, start_unix) = run_tick(&cfg, &urls, &live, crate::tick::TickOptions::default())?;
        (m, start_unix)
    } else {
        run_tokio(&cfg, urls, live)?
    };
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
        engine: engine.name().into(),
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

fn unix_now_plus(d: Duration) -> f64 {
    (std::time::SystemTime::now() + d)
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An open run on the tick engine: its metrics, the engine's own counts,
/// and the start (Unix seconds).
fn run_tick(
    cfg: &UrlConfig,
    urls: &[Url],
    live: &Live,
    opts: crate::tick::TickOptions,
) -> anyhow::Result<(Metrics, crate::tick::TickStats, f64)> {
    let rate = cfg.rate.context("the tick engine runs open runs")?;
    let urls: Vec<_> = urls.iter().map(|u| (u.addr, u.req.clone())).collect();
    let start_unix = unix_now_plus(Duration::from_millis(20));
    let start = Instant::now() + Duration::from_millis(20);
    let sched = Schedule {
        start,
        end: start + cfg.duration,
        rate,
        connections: cfg.connections,
    };
    let (m, stats) = crate::tick::run(crate::tick::TickRun {
        sched,
        measure_from: start + cfg.warmup,
        urls: &urls,
        timeout: cfg.timeout,
        live,
        opts,
    })?;
    Ok((m, stats, start_unix))
}

/// [`run_urls`] on the tick engine with `opts` (for tests and
/// experiments), with the engine's own counts.
pub fn run_urls_tick(
    cfg: UrlConfig,
    opts: crate::tick::TickOptions,
) -> anyhow::Result<(Metrics, crate::tick::TickStats)> {
    let urls = prepare(&cfg)?;
    let (m, stats, _) = run_tick(&cfg, &urls, &Live::default(), opts)?;
    Ok((m, stats))
}

fn run_tokio(cfg: &UrlConfig, urls: Vec<Url>, live: Arc<Live>) -> anyhow::Result<(Metrics, f64)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cfg2 = cfg.clone();
    let start_unix = unix_now_plus(Duration::from_millis(20));
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
        let paced = ctx.cfg.rate.map(|rate| {
            let sched = Schedule {
                start,
                end: ctx.end,
                rate,
                connections: ctx.cfg.connections,
            };
            let slots: Arc<[Slot]> = (0..ctx.cfg.connections).map(|_| Slot::default()).collect();
            (sched, slots)
        });
        let mut tasks: Vec<_> = (0..ctx.cfg.connections)
            .map(|i| tokio::spawn(connection(ctx.clone(), i, paced.clone())))
            .collect();
        if let Some((sched, slots)) = paced {
            tasks.push(tokio::spawn(pacer(sched, slots)));
        }
        for t in tasks {
            let _ = t.await;
        }
        let m = ctx.metrics().clone();
        m
    });
    Ok((metrics, start_unix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(rate: f64, connections: u64, run: Duration) -> Schedule {
        let start = Instant::now();
        Schedule {
            start,
            end: start + run,
            rate,
            connections,
        }
    }

    #[test]
    fn every_request_due_in_one_tick_is_released_and_none_early() {
        let s = schedule(20_000.0, 50, Duration::from_secs(1));
        // 1 ms in: requests 0..=20 (20 / 20,000 s = 1 ms exactly).
        let first = s.due(0, s.start + Duration::from_millis(1));
        assert_eq!(first, 0..21);
        for g in first.clone() {
            assert!(s.intended(g) <= s.start + Duration::from_millis(1));
        }
        // Nothing new at the same instant; a tick 2 ms late releases all 40.
        assert_eq!(s.due(21, s.start + Duration::from_millis(1)), 21..21);
        assert_eq!(s.due(21, s.start + Duration::from_millis(3)), 21..61);
        assert!(s.intended(61) > s.start + Duration::from_millis(3));
    }

    #[test]
    fn nothing_due_at_or_after_the_end_is_released() {
        let s = schedule(20_000.0, 50, Duration::from_secs(1));
        // Request 20,000 is due exactly at the end: not sent.
        assert_eq!(s.due(0, s.end + Duration::from_secs(5)), 0..20_000);
        assert!(s.has(19_999));
        assert!(!s.has(20_000));
    }

    #[test]
    fn connection_i_owns_every_nth_request_at_its_own_time() {
        let s = schedule(1_000.0, 7, Duration::from_secs(1));
        for i in 0..7 {
            for k in 0..20 {
                assert_eq!(s.intended_on(i, k), s.intended(k * 7 + i));
            }
        }
        assert_eq!(
            s.intended_on(3, 2) - s.start,
            Duration::from_secs_f64(17.0 / 1000.0)
        );
    }

    /// The pacer on a real runtime: every request of the schedule reaches
    /// its connection exactly once, in order, and never before it is due.
    #[test]
    fn the_pacer_releases_each_request_once_and_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let n = 7u64;
            let s = schedule(5_000.0, n, Duration::from_millis(200));
            let slots: Arc<[Slot]> = (0..n).map(|_| Slot::default()).collect();
            let pacer = tokio::spawn(pacer(s, slots.clone()));
            let conns: Vec<_> = (0..n)
                .map(|i| {
                    let slots = slots.clone();
                    tokio::spawn(async move {
                        let mut seen = Vec::new();
                        let mut k = 0;
                        while s.intended_on(i, k) < s.end {
                            slots[i as usize].wait(k).await;
                            seen.push((k * n + i, Instant::now()));
                            k += 1;
                        }
                        seen
                    })
                })
                .collect();
            pacer.await.unwrap();
            let mut all = Vec::new();
            for c in conns {
                all.extend(c.await.unwrap());
            }
            all.sort_by_key(|&(g, _)| g);
            // 200 ms at 5,000/s: requests 0..1000, each once.
            assert_eq!(all.len(), 1000);
            for (j, &(g, at)) in all.iter().enumerate() {
                assert_eq!(g, j as u64);
                assert!(at >= s.intended(g), "request {g} released early");
            }
            // The pacer released no more than the schedule holds.
            let released: u64 = slots.iter().map(|x| x.due.load(Ordering::Relaxed)).sum();
            assert_eq!(released, 1000);
        });
    }
}
