//! The load generator: one task per user equivalent on a single-threaded
//! tokio runtime (or several, `threads`), each an ON/OFF user following
//! `stream::User`, fetching web objects in one of the four modes of
//! Barford & Crovella's study.
//!
//! Latency is measured from the *intended* send time: the instant the user
//! model says the request is due (the end of the previous response plus
//! the drawn OFF or active OFF time; for pipelined embedded files, the
//! moment the batch is due). Time the generator spends late (a slow
//! runtime, a connect, a queue behind a slow response) is inside the
//! latency, so overload cannot hide it (no coordinated omission); how late
//! the generator itself was is reported separately as `send_lag`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use pagewire_h1::Version;
use tokio::time::{sleep_until, Instant};

use crate::client::{self, Conn, Failure};
use crate::fileset::Manifest;
use crate::metrics::{ErrorKind, Metrics, RunInfo, Summary};
use crate::model::Params;
use crate::stream::{NameSequence, User};

/// How each UE moves files (paper 004 section 4.4 lists the first, third and fourth).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// HTTP/1.0: a connection per file, files requested one after another
    /// (paper 004 section 2.1), or over `conns_per_ue` parallel connections.
    Http10,
    /// HTTP/1.1: one persistent connection per UE, kept across OFF times
    /// (until the session ends or the server closes it), requests in turn.
    Http11,
    /// HTTP/1.1 persistent, the embedded files of an object pipelined.
    Pipeline,
    /// HTTP/1.1 pipelined within a web object, the connection closed after
    /// each object: the paper's "early close" policy.
    EarlyClose,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Http10 => "http10",
            Mode::Http11 => "http11",
            Mode::Pipeline => "pipeline",
            Mode::EarlyClose => "early-close",
        }
    }
    fn pipelined(self) -> bool {
        matches!(self, Mode::Pipeline | Mode::EarlyClose)
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        Ok(match s {
            "http10" => Mode::Http10,
            "http11" => Mode::Http11,
            "pipeline" => Mode::Pipeline,
            "early-close" => Mode::EarlyClose,
            _ => {
                return Err(format!(
                    "unknown mode {s:?} (http10, http11, pipeline, early-close)"
                ))
            }
        })
    }
}

/// Who the users are (paper 004's UEs are closed: a fixed population).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadModel {
    /// `ues` users, each an endless ON/OFF process (the paper's SURGE).
    Closed,
    /// Sessions arrive as a Poisson process (`sessions_per_s`); a session's
    /// web objects are due when its think process says, whether or not the
    /// previous one has finished (each object on its own connection(s):
    /// overlapping objects cannot share one).
    Open { sessions_per_s: f64 },
    /// Sessions arrive as a Poisson process; each is a closed UE for its
    /// session length (waits for every object before thinking), then leaves.
    PartlyOpen { sessions_per_s: f64 },
}

impl LoadModel {
    pub fn name(self) -> &'static str {
        match self {
            LoadModel::Closed => "closed",
            LoadModel::Open { .. } => "open",
            LoadModel::PartlyOpen { .. } => "partly-open",
        }
    }
}

/// A run's configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `http://host[:port]` (paths come from the manifest).
    pub target: String,
    pub ues: u64,
    pub model: LoadModel,
    pub duration: Duration,
    /// The first part of `duration` not measured (UEs already run in it).
    pub warmup: Duration,
    pub ramp: Duration,
    pub mode: Mode,
    /// Connections a UE may use at once for embedded files (1 or 2; paper 004 Figure 10 used 2).
    pub conns_per_ue: usize,
    pub seed: u64,
    /// `(k, n)`: run UEs `[k*ues/n, (k+1)*ues/n)`.
    pub shard: (u64, u64),
    pub threads: usize,
    /// Per request: connect, and each response, must finish within this.
    pub timeout: Duration,
    pub params: Params,
    pub command_line: String,
    /// Wall-clock start (all shards of a distributed run begin together);
    /// `None`: 50 ms from now.
    pub start_at: Option<std::time::SystemTime>,
}

/// Live counters for the progress line (relaxed atomics, one add per event).
#[derive(Debug, Default)]
pub struct Live {
    pub gets: AtomicU64,
    pub errors: AtomicU64,
    pub connections: AtomicU64,
    pub open: AtomicU64,
    pub active_ues: AtomicU64,
}

/// The target, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub host: String,
}

pub fn parse_target(url: &str) -> anyhow::Result<Target> {
    let rest = url.strip_prefix("http://").with_context(|| {
        format!("--target {url:?}: expected http://HOST[:PORT] (https is not supported)")
    })?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        bail!("--target {url:?}: no host");
    }
    if rest.len() > authority.len() + 1 {
        bail!("--target {url:?}: give only scheme, host and port; paths come from the site's manifest");
    }
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        && !authority.ends_with(']')
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .with_context(|| format!("resolving {with_port}"))?
        .next()
        .with_context(|| format!("{with_port} resolves to no address"))?;
    Ok(Target {
        addr,
        host: authority.to_string(),
    })
}

/// Raises RLIMIT_NOFILE's soft limit to the hard limit and checks that
/// `needed` descriptors fit; says so before the run, not midway.
pub fn ensure_fd_limit(needed: u64) -> anyhow::Result<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    // `None` is RLIM_INFINITY, which the kernel reports as the largest value.
    let value = |v: Option<u64>| v.unwrap_or(u64::MAX);
    let mut lim = getrlimit(Resource::Nofile);
    if value(lim.current) < value(lim.maximum) {
        let raised = Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        // A refusal leaves the soft limit as it was: checked below.
        let _ = setrlimit(Resource::Nofile, raised);
        lim = getrlimit(Resource::Nofile);
    }
    let have = value(lim.current);
    if needed > have {
        bail!(
            "these UEs need up to {needed} open files at once but the limit is {have} (hard limit {}): \
             raise it (ulimit -n, LimitNOFILE=) or split the UEs with --shard K/N over processes or machines",
            value(lim.maximum)
        );
    }
    Ok(have)
}

/// Local ports available for outgoing connections.
fn local_port_range() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.saturating_sub(lo) + 1)
}

/// The flattened site: file sizes, request bytes, and for every
/// popularity rank (0-based) the files a reference to it fetches: a base
/// page with its embedded files, or one file.
struct Site {
    sizes: Vec<u64>,
    req: Vec<Vec<u8>>,
    req_close: Vec<Vec<u8>>,
    refs: Vec<Vec<u32>>,
}

impl Site {
    fn new(m: &Manifest, host: &str, mode: Mode) -> Site {
        let version = if mode == Mode::Http10 {
            Version::Http10
        } else {
            Version::Http11
        };
        let mut s = Site {
            sizes: Vec::new(),
            req: Vec::new(),
            req_close: Vec::new(),
            refs: Vec::new(),
        };
        s.refs = m.references();
        for o in &m.objects {
            for f in &o.files {
                s.sizes.push(f.size);
                s.req
                    .push(client::request_bytes(&f.path, host, version, false));
                s.req_close
                    .push(client::request_bytes(&f.path, host, version, true));
            }
        }
        s
    }
}

struct Ctx {
    cfg: Config,
    target: Target,
    site: Site,
    start: Instant,
    /// Start of the measurement window (after the warm-up).
    measure_from: Instant,
    end: Instant,
    metrics: RefCell<Metrics>,
    live: Arc<Live>,
}

impl Ctx {
    fn sec(&self, t: Instant) -> usize {
        t.saturating_duration_since(self.start).as_secs() as usize
    }
    fn in_window(&self, t: Instant) -> bool {
        t >= self.measure_from && t < self.end
    }
    fn deadline(&self) -> Instant {
        Instant::now() + self.cfg.timeout
    }
    fn error(&self, kind: ErrorKind) {
        self.metrics
            .borrow_mut()
            .record_error(self.sec(Instant::now()), kind);
        self.live.errors.fetch_add(1, Ordering::Relaxed);
    }
    async fn connect(&self) -> Result<Conn, Failure> {
        let s = client::connect(self.target.addr, self.deadline()).await?;
        let now = Instant::now();
        if self.in_window(now) {
            self.metrics.borrow_mut().record_connection(self.sec(now));
        } else {
            self.metrics.borrow_mut().conns_outside_window += 1;
        }
        self.live.connections.fetch_add(1, Ordering::Relaxed);
        self.live.open.fetch_add(1, Ordering::Relaxed);
        Ok(Conn::new(s))
    }
    fn lifetime(&self, c: &Conn) {
        // Connections opened in the window; closed at the latest when the UE stops.
        if self.in_window(c.opened) {
            let us = Instant::now()
                .saturating_duration_since(c.opened)
                .as_micros() as u64;
            self.metrics.borrow_mut().record_close(us);
        }
    }
    fn closed(&self, c: Conn) -> impl std::future::Future<Output = ()> {
        self.live.open.fetch_sub(1, Ordering::Relaxed);
        self.lifetime(&c);
        c.finish()
    }
    fn drop_conn(&self, c: Conn) {
        self.live.open.fetch_sub(1, Ordering::Relaxed);
        self.lifetime(&c);
        drop(c);
    }
}

/// One GET to do: file index and intended send time.
#[derive(Clone, Copy)]
struct Get {
    file: u32,
    intended: Instant,
}

/// Runs `gets` on the connection in `slot` (opening one when empty):
/// pipelined (one write) or one at a time. Requests the server did not
/// answer because it closed the connection first are re-sent once on a
/// fresh connection. Returns the completion time of the last GET, or the
/// failure's kind (already recorded).
async fn exchange(
    ctx: &Ctx,
    slot: &mut Option<Conn>,
    gets: &[Get],
    pipelined: bool,
    close_last: bool,
) -> Result<Instant, ()> {
    let mut i = 0;
    let mut retried = vec![false; gets.len()];
    let mut done = Instant::now();
    while i < gets.len() {
        let fresh = slot.is_none();
        if fresh {
            match ctx.connect().await {
                Ok(c) => *slot = Some(c),
                Err(f) => {
                    ctx.error(f.kind);
                    return Err(());
                }
            }
        }
        let conn = slot.as_mut().expect("just set");
        let batch = if pipelined { gets.len() - i } else { 1 };
        let mut bytes = Vec::new();
        for (j, g) in gets[i..i + batch].iter().enumerate() {
            let last = close_last && i + j + 1 == gets.len();
            let req = if last {
                &ctx.site.req_close[g.file as usize]
            } else {
                &ctx.site.req[g.file as usize]
            };
            bytes.extend_from_slice(req);
        }
        let sent_at = Instant::now();
        {
            let mut m = ctx.metrics.borrow_mut();
            for g in &gets[i..i + batch] {
                m.record_send_lag(sent_at.saturating_duration_since(g.intended).as_micros() as u64);
            }
        }
        let reused = conn.responses > 0;
        let mut result = conn.send(&bytes, ctx.deadline()).await;
        let mut answered = 0;
        if result.is_ok() {
            for g in &gets[i..i + batch] {
                let r = conn
                    .read_response(ctx.site.sizes[g.file as usize], ctx.deadline())
                    .await;
                if conn.last_status != 0 {
                    ctx.metrics.borrow_mut().record_status(conn.last_status);
                }
                match r {
                    Ok(r) => {
                        done = Instant::now();
                        let lat = done.saturating_duration_since(g.intended).as_micros() as u64;
                        {
                            let mut m = ctx.metrics.borrow_mut();
                            if ctx.in_window(done) {
                                m.record_get(ctx.sec(done), lat, r.body_bytes);
                            } else {
                                m.gets_outside_window += 1;
                            }
                        }
                        ctx.live.gets.fetch_add(1, Ordering::Relaxed);
                        answered += 1;
                        if conn.closing {
                            break;
                        }
                    }
                    Err(f) => {
                        result = Err(f);
                        break;
                    }
                }
            }
        }
        i += answered;
        let conn = slot.take().expect("set");
        match result {
            Ok(()) => {
                if conn.closing {
                    // The server closes: wait for its FIN.
                    ctx.closed(conn).await;
                } else if ctx.cfg.mode == Mode::Http10 {
                    // A server that kept an HTTP/1.0 connection open anyway.
                    ctx.drop_conn(conn);
                } else {
                    *slot = Some(conn);
                }
            }
            Err(f) => {
                ctx.drop_conn(conn);
                // A persistent connection the server closed before answering:
                // re-send once on a new connection (RFC 9112 §9.3.1).
                let retryable = f.before_response && (reused || answered > 0) && !retried[i];
                if retryable && f.kind == ErrorKind::Reset {
                    retried[i] = true;
                    ctx.metrics.borrow_mut().retries += 1;
                    continue;
                }
                ctx.error(f.kind);
                return Err(());
            }
        }
    }
    Ok(done)
}

/// Why an object was not completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// A GET failed (the error is recorded).
    Failed,
    /// The run ended before the next file was due.
    Ended,
}

/// Fetches one web object starting at `t0`; returns its completion time
/// and when the user's think process lets the next OFF time start (the
/// completion plus the object's active OFF times not yet spent: in the
/// pipelined modes all but the first, so that every mode has the same
/// think process).
async fn fetch_object(
    ctx: &Ctx,
    actives: VecDeque<Duration>,
    slots: &mut [Option<Conn>],
    object: &[u32],
    t0: Instant,
    session_ends: bool,
) -> Result<(Instant, Instant), Stop> {
    let mode = ctx.cfg.mode;
    let single = object.len() == 1;
    let base = [Get {
        file: object[0],
        intended: t0,
    }];
    // `session_ends`: the object's last request asks the server to close
    // (the open models, whose sessions leave after their last object; a
    // closed UE keeps its connection through the following OFF time and
    // passes false). In early close the client closes
    // after every web object, as the paper's clients did ("having clients
    // close their HTTP connections after the transfer of each Web object",
    // section 4.4): no `Connection: close`; the caller drops the connection.
    let close_at_end = session_ends && !matches!(mode, Mode::Http10 | Mode::EarlyClose);
    let mut done = exchange(ctx, &mut slots[0], &base, false, close_at_end && single)
        .await
        .map_err(|()| Stop::Failed)?;
    if single {
        return Ok((done, done));
    }
    let embedded = &object[1..];
    let mut actives = actives;
    if mode.pipelined() {
        // Parse the page, then ask for every embedded file at once.
        let t1 = done + actives.pop_front().unwrap_or_default();
        if t1 >= ctx.end {
            return Err(Stop::Ended);
        }
        sleep_until(t1).await;
        let gets: Vec<Get> = embedded
            .iter()
            .map(|&file| Get { file, intended: t1 })
            .collect();
        let done = exchange(ctx, &mut slots[0], &gets, true, close_at_end)
            .await
            .map_err(|()| Stop::Failed)?;
        let rest: Duration = actives.iter().sum();
        return Ok((done, done + rest));
    }
    // One at a time, on `slots.len()` connections in parallel.
    let queue = RefCell::new(
        embedded
            .iter()
            .copied()
            .zip(actives)
            .collect::<VecDeque<(u32, Duration)>>(),
    );
    let failed: Cell<Option<Stop>> = Cell::new(None);
    let (first, rest) = slots.split_at_mut(1);
    if let Some(second) = rest.first_mut() {
        let (a, b) = tokio::join!(
            sequential(ctx, &queue, &failed, &mut first[0], done, close_at_end),
            sequential(ctx, &queue, &failed, second, done, close_at_end)
        );
        done = a.max(b);
    } else {
        done = sequential(ctx, &queue, &failed, &mut first[0], done, close_at_end).await;
    }
    match failed.get() {
        Some(stop) => Err(stop),
        None => Ok((done, done)),
    }
}

/// One connection's share of an object's embedded files, one GET at a
/// time, each due an active OFF time after the previous one ended.
async fn sequential(
    ctx: &Ctx,
    queue: &RefCell<VecDeque<(u32, Duration)>>,
    failed: &Cell<Option<Stop>>,
    slot: &mut Option<Conn>,
    mut prev: Instant,
    close_at_end: bool,
) -> Instant {
    loop {
        let (file, active) = match queue.borrow_mut().pop_front() {
            Some(f) if failed.get().is_none() => f,
            _ => return prev,
        };
        let t = prev + active;
        if t >= ctx.end {
            failed.set(Some(Stop::Ended));
            return prev;
        }
        sleep_until(t).await;
        let last = close_at_end && queue.borrow().is_empty();
        match exchange(ctx, slot, &[Get { file, intended: t }], false, last).await {
            Ok(d) => prev = d,
            Err(()) => {
                failed.set(Some(Stop::Failed));
                return prev;
            }
        }
    }
}

/// Waits until `t` as an idle user: a persistent connection stays open
/// through the OFF time (the paper's HTTP/1.1 connection "is open during
/// Web object transfers and OFF times", section 4.4) unless the server
/// closes it first (its keep-alive timeout), which is noticed when it
/// happens, so that the connection's duration ends there.
async fn idle_until(ctx: &Ctx, slots: &mut [Option<Conn>], t: Instant) {
    loop {
        let which = {
            let (a, b) = slots.split_at_mut(1.min(slots.len()));
            let first = async {
                match a.first_mut().and_then(Option::as_mut) {
                    Some(c) => c.peer_closed().await,
                    None => std::future::pending().await,
                }
            };
            let second = async {
                match b.first_mut().and_then(Option::as_mut) {
                    Some(c) => c.peer_closed().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep_until(t) => return,
                _ = first => 0,
                _ = second => 1,
            }
        };
        if let Some(c) = slots[which].take() {
            ctx.drop_conn(c);
        }
    }
}

/// One user equivalent until the end of the run.
async fn ue_task(ctx: Rc<Ctx>, ue: u64, names: NameSequence) {
    let mut user = User::new(ue, ctx.cfg.seed, names, &ctx.cfg.params);
    let mut slots: Vec<Option<Conn>> = (0..ctx.cfg.conns_per_ue).map(|_| None).collect();
    // Start times spread over the ramp by global UE number, each UE then at
    // a random phase of its ON/OFF cycle (the stationary state).
    let ramp = ctx.cfg.ramp.mul_f64(ue as f64 / ctx.cfg.ues.max(1) as f64);
    let mut t = ctx.start + ramp + user.stationary_start();
    ctx.live.active_ues.fetch_add(1, Ordering::Relaxed);
    while t < ctx.end {
        idle_until(&ctx, &mut slots, t).await;
        let next = user.next_object();
        if next.new_session {
            // A session's connection lasts through the OFF time after its
            // last web object: the user closes it when it starts the next
            // session (SURGE's loop: fetch, think, ..., then close).
            for s in slots.iter_mut() {
                if let Some(c) = s.take() {
                    ctx.drop_conn(c);
                }
            }
        }
        let object = ctx.site.refs[next.object as usize % ctx.site.refs.len()].clone();
        let actives = user.active_offs(object.len());
        match fetch_object(&ctx, actives, &mut slots, &object, t, false).await {
            Ok((done, resume)) => {
                if ctx.in_window(done) {
                    let lat = done.saturating_duration_since(t).as_micros() as u64;
                    ctx.metrics
                        .borrow_mut()
                        .record_object(ctx.sec(done), lat, object.len() as u64);
                }
                t = resume;
            }
            Err(stop) => {
                if stop == Stop::Failed {
                    ctx.metrics.borrow_mut().objects_failed += 1;
                }
                t = Instant::now();
                for s in slots.iter_mut() {
                    if let Some(c) = s.take() {
                        ctx.drop_conn(c);
                    }
                }
            }
        }
        if ctx.cfg.mode == Mode::EarlyClose {
            for s in slots.iter_mut() {
                if let Some(c) = s.take() {
                    ctx.drop_conn(c);
                }
            }
        }
        t += user.off_time();
    }
    // Connections idle at the end stay open until the run ends.
    idle_until(&ctx, &mut slots, t.min(ctx.end)).await;
    for s in slots.iter_mut() {
        if let Some(c) = s.take() {
            ctx.drop_conn(c);
        }
    }
    ctx.live.active_ues.fetch_sub(1, Ordering::Relaxed);
}

/// One arriving session (open and partly-open models): user number `id`
/// (its choices depend only on the seed and `id`), starting at `t0`.
async fn session_task(ctx: Rc<Ctx>, id: u64, t0: Instant, names: NameSequence, open: bool) {
    let mut user = User::new(id, ctx.cfg.seed, names, &ctx.cfg.params);
    let mut slots: Vec<Option<Conn>> = (0..ctx.cfg.conns_per_ue).map(|_| None).collect();
    let mut t = t0;
    let mut objects = Vec::new();
    ctx.live.active_ues.fetch_add(1, Ordering::Relaxed);
    while t < ctx.end {
        sleep_until(t).await;
        let next = user.next_object();
        let object = ctx.site.refs[next.object as usize % ctx.site.refs.len()].clone();
        let last = user.session_ends();
        let actives = user.active_offs(object.len());
        if open {
            // Due when the think process says; nobody waits for it.
            let think: Duration = actives.iter().sum();
            let c = ctx.clone();
            objects.push(tokio::task::spawn_local(async move {
                let mut own: Vec<Option<Conn>> = (0..c.cfg.conns_per_ue).map(|_| None).collect();
                let r = fetch_object(&c, actives, &mut own, &object, t, true).await;
                finish_object(&c, r, t, object.len());
                for s in own.iter_mut() {
                    if let Some(x) = s.take() {
                        c.drop_conn(x);
                    }
                }
            }));
            t += think;
        } else {
            let r = fetch_object(&ctx, actives, &mut slots, &object, t, last).await;
            t = match finish_object(&ctx, r, t, object.len()) {
                Some(resume) => resume,
                None => {
                    for s in slots.iter_mut() {
                        if let Some(c) = s.take() {
                            ctx.drop_conn(c);
                        }
                    }
                    Instant::now()
                }
            };
            if ctx.cfg.mode == Mode::EarlyClose {
                for s in slots.iter_mut() {
                    if let Some(c) = s.take() {
                        ctx.drop_conn(c);
                    }
                }
            }
        }
        if last {
            break;
        }
        t += user.off_time();
    }
    for s in slots.iter_mut() {
        if let Some(c) = s.take() {
            ctx.drop_conn(c);
        }
    }
    for o in objects {
        let _ = o.await;
    }
    ctx.live.active_ues.fetch_sub(1, Ordering::Relaxed);
}

/// Records an object's outcome; returns when the user may go on (None: it failed or the run ended).
fn finish_object(
    ctx: &Ctx,
    r: Result<(Instant, Instant), Stop>,
    t: Instant,
    files: usize,
) -> Option<Instant> {
    match r {
        Ok((done, resume)) => {
            if ctx.in_window(done) {
                let lat = done.saturating_duration_since(t).as_micros() as u64;
                ctx.metrics
                    .borrow_mut()
                    .record_object(ctx.sec(done), lat, files as u64);
            }
            Some(resume)
        }
        Err(stop) => {
            if stop == Stop::Failed {
                ctx.metrics.borrow_mut().objects_failed += 1;
            }
            None
        }
    }
}

/// Poisson session arrivals for runtime thread `t` of `threads` (every
/// thread draws the same arrivals and takes every `threads`-th).
async fn arrivals(ctx: Rc<Ctx>, rate: f64, open: bool, names: NameSequence, t: u64, threads: u64) {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(ctx.cfg.seed ^ 0x0A22_1BA1_5E55_1025);
    let mut at = ctx.start;
    let mut tasks = Vec::new();
    for id in 0u64.. {
        let u: f64 = rng.random();
        at += Duration::from_secs_f64(-(1.0 - u).ln() / rate);
        if at >= ctx.end {
            break;
        }
        if id % threads == t {
            tasks.push(tokio::task::spawn_local(session_task(
                ctx.clone(),
                id,
                at,
                names.clone(),
                open,
            )));
        }
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// The UEs of this process (global numbers).
pub fn local_ues(cfg: &Config) -> std::ops::Range<u64> {
    let (k, n) = cfg.shard;
    (k * cfg.ues / n)..((k + 1) * cfg.ues / n)
}

/// Checks limits, then runs; `on_tick` is called once a second with the live counters.
pub fn run(
    cfg: Config,
    manifest: &Manifest,
    live: Arc<Live>,
) -> anyhow::Result<(Summary, Metrics)> {
    if cfg.shard.1 == 0 || cfg.shard.0 >= cfg.shard.1 {
        bail!("--shard K/N needs 0 <= K < N");
    }
    if cfg.ues == 0 {
        bail!("--ues must be at least 1");
    }
    if let LoadModel::Open { sessions_per_s: r } | LoadModel::PartlyOpen { sessions_per_s: r } =
        cfg.model
    {
        if !(r.is_finite() && r > 0.0) {
            bail!("--session-rate must be a positive number of sessions per second");
        }
        if cfg.shard.1 > 1 {
            bail!(
                "--model {} cannot be sharded (one arrival process)",
                cfg.model.name()
            );
        }
    }
    if cfg.duration.is_zero() {
        bail!("--duration must be positive");
    }
    if cfg.warmup >= cfg.duration {
        bail!(
            "--warmup ({:?}) must be shorter than --duration ({:?})",
            cfg.warmup,
            cfg.duration
        );
    }
    if cfg.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if cfg.timeout.is_zero() {
        bail!("--timeout must be positive");
    }
    if !(1..=2).contains(&cfg.conns_per_ue) {
        bail!("--conns-per-ue must be 1 or 2");
    }
    if cfg.conns_per_ue == 2 && cfg.mode.pipelined() {
        bail!("--conns-per-ue 2 applies to http10 and http11 (pipelined modes use one connection)");
    }
    let target = parse_target(&cfg.target)?;
    let ues = local_ues(&cfg);
    let n_local = ues.end - ues.start;
    if n_local == 0 {
        bail!(
            "shard {}/{} of {} UEs holds no UE",
            cfg.shard.0,
            cfg.shard.1,
            cfg.ues
        );
    }
    // Descriptors: every UE's connections at once, plus the runtime's own.
    let needed = n_local * cfg.conns_per_ue as u64 + 64;
    ensure_fd_limit(needed)?;
    if let Some(ports) = local_port_range() {
        if n_local * cfg.conns_per_ue as u64 > ports {
            bail!(
                "these UEs may hold {} connections to one address but only {ports} local ports exist \
                 (net.ipv4.ip_local_port_range): use --shard over several source addresses or machines",
                n_local * cfg.conns_per_ue as u64
            );
        }
    }
    let files = manifest
        .objects
        .iter()
        .map(|o| o.files.len())
        .sum::<usize>();
    let names = NameSequence::generate(files, (files * 100).max(100_000), &cfg.params, cfg.seed);
    let threads = cfg.threads;
    let started_utc = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let cpu0 = cpu_times();
    let wall0 = std::time::Instant::now();
    let (start_std, start_unix) = match cfg.start_at {
        None => (
            std::time::Instant::now() + Duration::from_millis(50),
            std::time::SystemTime::now() + Duration::from_millis(50),
        ),
        Some(at) => match at.duration_since(std::time::SystemTime::now()) {
            Ok(wait) if wait <= Duration::from_secs(3600) => (std::time::Instant::now() + wait, at),
            Ok(_) => bail!("--start-at is more than an hour away"),
            Err(_) => bail!("--start-at is in the past"),
        },
    };
    let start_unix = start_unix
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let mut handles = Vec::new();
    for t in 0..threads {
        let cfg = cfg.clone();
        let target = target.clone();
        let site = Site::new(manifest, &target.host, cfg.mode);
        let live = live.clone();
        let names = names.clone();
        let ues = ues.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("load-{t}"))
                .spawn(move || -> anyhow::Result<Metrics> {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()?;
                    let local = tokio::task::LocalSet::new();
                    let metrics = local.block_on(&rt, async move {
                        let start = Instant::from_std(start_std);
                        let ctx = Rc::new(Ctx {
                            end: start + cfg.duration,
                            measure_from: start + cfg.warmup,
                            cfg,
                            target,
                            site,
                            start,
                            metrics: RefCell::new(Metrics::default()),
                            live,
                        });
                        let mut tasks = Vec::new();
                        match ctx.cfg.model {
                            LoadModel::Closed => {}
                            LoadModel::Open { sessions_per_s: r }
                            | LoadModel::PartlyOpen { sessions_per_s: r } => {
                                let open = matches!(ctx.cfg.model, LoadModel::Open { .. });
                                arrivals(
                                    ctx.clone(),
                                    r,
                                    open,
                                    names.clone(),
                                    t as u64,
                                    threads as u64,
                                )
                                .await;
                            }
                        }
                        let closed = ctx.cfg.model == LoadModel::Closed;
                        for ue in ues.filter(|u| closed && u % threads as u64 == t as u64) {
                            tasks.push(tokio::task::spawn_local(ue_task(
                                ctx.clone(),
                                ue,
                                names.clone(),
                            )));
                        }
                        // Bounded: UEs stop at the end; in-flight requests end by their timeout.
                        for task in tasks {
                            let _ = task.await;
                        }
                        let m = ctx.metrics.borrow().clone();
                        m
                    });
                    Ok(metrics)
                })?,
        );
    }
    let mut metrics = Metrics::default();
    for h in handles {
        let m = h
            .join()
            .map_err(|_| anyhow::anyhow!("a load thread panicked"))??;
        metrics.merge(&m);
    }
    let cpu1 = cpu_times();
    let info = RunInfo {
        tool: "pagewire load".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command_line: cfg.command_line.clone(),
        started_utc,
        target: cfg.target.clone(),
        mode: cfg.mode.name().into(),
        model: match cfg.model {
            LoadModel::Closed => "closed".into(),
            LoadModel::Open { sessions_per_s } => format!("open {sessions_per_s} sessions/s"),
            LoadModel::PartlyOpen { sessions_per_s } => {
                format!("partly-open {sessions_per_s} sessions/s")
            }
        },
        conns_per_ue: cfg.conns_per_ue,
        ues_total: cfg.ues,
        ues: n_local,
        shards: format!("{}/{}", cfg.shard.0, cfg.shard.1),
        seed: cfg.seed,
        duration_s: cfg.duration.as_secs_f64(),
        start_unix,
        warmup_s: cfg.warmup.as_secs_f64(),
        ramp_s: cfg.ramp.as_secs_f64(),
        threads,
        site_files: manifest.files,
        site_bytes: manifest.bytes,
        engine: String::new(),
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

/// Parses an RFC 3339 UTC time (`--start-at`).
pub fn parse_rfc3339(s: &str) -> Result<std::time::SystemTime, String> {
    humantime::parse_rfc3339(s)
        .map_err(|e| format!("{s:?}: {e} (expected e.g. 2026-11-22T15:00:00Z)"))
}

/// (user, system) CPU seconds of this process.
pub fn cpu_times() -> (f64, f64) {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(ru) = getrusage(UsageWho::RUSAGE_SELF) else {
        return (0.0, 0.0);
    };
    let s = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
    (s(ru.user_time()), s(ru.system_time()))
}
