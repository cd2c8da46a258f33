//! The open model's tick engine (`pagewire load URL... --rate R`, the
//! default for plain `http://` URLs at a fixed rate): one thread, its own
//! loop, no async runtime. Each tick (1 ms) it
//!
//! 1. harvests every response that has arrived (`epoll_wait` with timeout
//!    0, then `recvmsg` on the ready sockets) and records it;
//! 2. sends every request now due (the same [`Schedule`] and per-connection
//!    order as the tokio engine; a connection whose previous response is
//!    still out sends once it has arrived, its lag recorded);
//! 3. sleeps until the next tick (`clock_nanosleep`, absolute), or, while
//!    some response is only partly read, blocks in `epoll_wait` until then,
//!    so a large response is not throttled to one socket buffer per tick;
//!    likewise while a connection has a due request waiting behind its
//!    outstanding one (the generator is behind: it sends as each response
//!    ends, as a closed loop would, instead of one request per connection
//!    per tick).
//!
//! The thread is not woken once per response as the responses trickle
//! back: it wakes once per tick and finds them all. Deferring the read does
//! not add to the latency: a response's completion time is the kernel's
//! receive timestamp (`SO_TIMESTAMPNS`) of the segment that carried its last
//! byte, converted from `CLOCK_REALTIME` to the schedule's monotonic clock
//! by one offset pair taken at the start (read back to back, the narrowest
//! of three: an error of two clock reads). A step of the wall clock during the run
//! (`settimeofday`, an NTP step, a leap second) shifts every later latency
//! by the step; NTP's slewing changes both clocks' rate alike and leaves
//! the offset alone.
//!
//! Responses are decoded by [`ResponseReader`], the same `pagewire-h1`
//! decoding and failure verdicts as the tokio client.

use std::io::{IoSliceMut, Write as _};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};
use nix::sys::socket::{
    recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};
use pagewire_h1::Limits;
use tokio::time::Instant;

use crate::client::{io_kind, Failure, ResponseReader, Step};
use crate::metrics::{ErrorKind, Metrics};
use crate::run::Live;
use crate::schedule::Schedule;

/// What the engine needs of the run (filled in by `urls::run_urls`).
pub struct TickRun<'a> {
    pub sched: Schedule,
    /// Requests ended at or after `measure_from` and before `end` count.
    pub measure_from: Instant,
    /// Per URL: its address and request bytes.
    pub urls: &'a [(std::net::SocketAddr, Vec<u8>)],
    pub timeout: Duration,
    pub live: &'a Live,
    pub opts: TickOptions,
}

/// Knobs for tests and experiments.
#[derive(Debug, Clone, Copy)]
pub struct TickOptions {
    pub tick: Duration,
    /// `SO_RCVBUF` for every connection (`None`: the kernel's autotuning).
    pub rcvbuf: Option<usize>,
}

impl Default for TickOptions {
    fn default() -> Self {
        TickOptions {
            tick: Duration::from_millis(1),
            rcvbuf: None,
        }
    }
}

/// What the engine itself did (for tests and the curious).
#[derive(Debug, Clone, Copy, Default)]
pub struct TickStats {
    /// Passes of the loop (one per tick, or more when a tick ran late).
    pub ticks: u64,
    /// The most ticks any one response spanned, from its send to its end.
    pub max_response_ticks: u64,
    /// Responses whose completion time came from a kernel timestamp (the
    /// others: the time they were read).
    pub kernel_stamped: u64,
    /// Requests sent (written, or met a closed connection).
    pub sent: u64,
    /// Requests sent before they were due (never, unless the engine errs).
    pub early: u64,
}

/// A request on the wire.
struct Out {
    intended: Instant,
    lag_us: u64,
    deadline: Instant,
    tick: u64,
    /// Request bytes not yet written (a full send buffer).
    unsent: usize,
}

struct Conn {
    url: usize,
    sock: Option<TcpStream>,
    buf: BytesMut,
    reader: ResponseReader,
    /// Requests of this connection released so far, and sent (or failed) so far.
    released: u64,
    taken: u64,
    out: Option<Out>,
    /// The server closed (or broke) the connection while no request was out:
    /// the next request meets it (as a write then a read would).
    dead: Option<ErrorKind>,
    /// The receive time of the last segment read.
    stamp: Option<TimeSpec>,
}

/// The offset pair: `CLOCK_REALTIME` and the monotonic clock of `Instant`,
/// read back to back (the narrowest of three tries).
struct Clocks {
    real: Duration,
    mono: Instant,
    mono_ts: Duration,
}

fn ts_dur(t: TimeSpec) -> Duration {
    Duration::new(t.tv_sec().max(0) as u64, t.tv_nsec().max(0) as u32)
}

impl Clocks {
    fn take() -> Clocks {
        let mut best: Option<(Duration, Clocks)> = None;
        for _ in 0..3 {
            let a = Instant::now();
            let real = clock_gettime(ClockId::CLOCK_REALTIME).map(ts_dur);
            let mono_ts = clock_gettime(ClockId::CLOCK_MONOTONIC).map(ts_dur);
            let b = Instant::now();
            let (Ok(real), Ok(mono_ts)) = (real, mono_ts) else {
                continue;
            };
            let width = b - a;
            if best.as_ref().is_none_or(|(w, _)| width < *w) {
                best = Some((
                    width,
                    Clocks {
                        real,
                        mono: a + width / 2,
                        mono_ts,
                    },
                ));
            }
        }
        best.map(|b| b.1).unwrap_or_else(|| Clocks {
            real: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
            mono: Instant::now(),
            mono_ts: Duration::ZERO,
        })
    }
    /// A kernel receive timestamp (`CLOCK_REALTIME`) as an `Instant`.
    fn instant(&self, t: TimeSpec) -> Instant {
        let t = ts_dur(t);
        if t >= self.real {
            self.mono + (t - self.real)
        } else {
            self.mono.checked_sub(self.real - t).unwrap_or(self.mono)
        }
    }
    /// An `Instant` as a `CLOCK_MONOTONIC` time for `clock_nanosleep`.
    fn mono_ts(&self, t: Instant) -> TimeSpec {
        let d = if t >= self.mono {
            self.mono_ts + (t - self.mono)
        } else {
            self.mono_ts.saturating_sub(self.mono - t)
        };
        TimeSpec::from_duration(d)
    }
}

struct Engine<'a> {
    run: TickRun<'a>,
    conns: Vec<Conn>,
    epoll: Epoll,
    limits: Limits,
    metrics: Metrics,
    clocks: Clocks,
    stats: TickStats,
    scratch: Vec<u8>,
    cmsg: Vec<u8>,
}

impl Engine<'_> {
    fn sec(&self, t: Instant) -> usize {
        t.saturating_duration_since(self.run.sched.start).as_secs() as usize
    }
    fn in_window(&self, t: Instant) -> bool {
        t >= self.run.measure_from && t < self.run.sched.end
    }
    fn error_now(&mut self, kind: ErrorKind) {
        let s = self.sec(Instant::now());
        self.metrics.record_error(s, kind);
        self.run.live.errors.fetch_add(1, Ordering::Relaxed);
    }

    fn count_send(&mut self, sent: Instant, intended: Instant) {
        self.stats.sent += 1;
        self.stats.early += u64::from(sent < intended);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(s) = c.sock.take() {
            let _ = self.epoll.delete(&s);
        }
        c.buf.clear();
        c.dead = None;
        c.stamp = None;
    }

    /// Opens connection `i` (blocking, bounded by the timeout), classified
    /// as the tokio client's `connect`.
    fn open(&mut self, i: usize) -> Result<(), ErrorKind> {
        let addr = self.run.urls[self.conns[i].url].0;
        let s = TcpStream::connect_timeout(&addr, self.run.timeout).map_err(|e| io_kind(&e))?;
        let _ = s.set_nodelay(true);
        s.set_nonblocking(true).map_err(|e| io_kind(&e))?;
        let _ = setsockopt(&s, sockopt::ReceiveTimestampns, &true);
        if let Some(b) = self.run.opts.rcvbuf {
            let _ = setsockopt(&s, sockopt::RcvBuf, &b);
        }
        self.epoll
            .add(&s, EpollEvent::new(EpollFlags::EPOLLIN, i as u64))
            .map_err(|e| io_kind(&e.into()))?;
        let now = Instant::now();
        if self.in_window(now) {
            let sec = self.sec(now);
            self.metrics.record_connection(sec);
        } else {
            self.metrics.conns_outside_window += 1;
        }
        self.run.live.connections.fetch_add(1, Ordering::Relaxed);
        let c = &mut self.conns[i];
        c.sock = Some(s);
        Ok(())
    }

    /// Sends connection `i`'s released requests while none is out.
    fn send(&mut self, i: usize) {
        while self.conns[i].out.is_none() && self.conns[i].taken < self.conns[i].released {
            let c = &mut self.conns[i];
            let intended = self.run.sched.intended_on(i as u64, c.taken);
            c.taken += 1;
            if let Some(kind) = c.dead.take() {
                // The server closed while the connection was idle: the
                // write may pass, the read meets the closed stream.
                let sent = Instant::now();
                self.stats.sent += 1;
                self.stats.early += u64::from(sent < intended);
                let c = &mut self.conns[i];
                c.reader = ResponseReader::new();
                c.out = Some(Out {
                    intended,
                    lag_us: sent.saturating_duration_since(intended).as_micros() as u64,
                    deadline: sent + self.run.timeout,
                    tick: self.stats.ticks,
                    unsent: 0,
                });
                let f = Failure {
                    kind,
                    before_response: true,
                };
                self.finish(i, Step::Failed(f), sent);
                continue;
            }
            if c.sock.is_none() {
                if let Err(kind) = self.open(i) {
                    self.error_now(kind);
                    continue;
                }
            }
            let sent = Instant::now();
            self.count_send(sent, intended);
            let lag_us = sent.saturating_duration_since(intended).as_micros() as u64;
            let c = &mut self.conns[i];
            c.reader = ResponseReader::new();
            c.out = Some(Out {
                intended,
                lag_us,
                deadline: sent + self.run.timeout,
                tick: self.stats.ticks,
                unsent: self.run.urls[c.url].1.len(),
            });
            self.flush(i);
            // Bytes the server sent early are this response's start.
            if self.conns[i].out.is_some() && !self.conns[i].buf.is_empty() {
                let c = &mut self.conns[i];
                let step = c.reader.step(&mut c.buf, &self.limits);
                if step != Step::NeedMore {
                    self.finish(i, step, Instant::now());
                }
            }
        }
    }

    /// Writes what is left of connection `i`'s request.
    fn flush(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let (Some(out), Some(s)) = (c.out.as_mut(), c.sock.as_mut()) else {
            return;
        };
        let req = &self.run.urls[c.url].1;
        while out.unsent > 0 {
            match s.write(&req[req.len() - out.unsent..]) {
                Ok(n) => out.unsent -= n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let f = Failure {
                        kind: io_kind(&e),
                        before_response: true,
                    };
                    self.finish(i, Step::Failed(f), Instant::now());
                    return;
                }
            }
        }
    }

    /// Records connection `i`'s response (or failure), ended at `done`.
    fn finish(&mut self, i: usize, step: Step, done: Instant) {
        let Some(out) = self.conns[i].out.take() else {
            return;
        };
        let ticks = self.stats.ticks - out.tick;
        self.stats.max_response_ticks = self.stats.max_response_ticks.max(ticks);
        let status = self.conns[i].reader.status;
        let closing = self.conns[i].reader.closing;
        let sec = self.sec(done);
        let in_window = self.in_window(done);
        let m = &mut self.metrics;
        m.record_send_lag(out.lag_us);
        if status != 0 {
            m.record_status(status);
        }
        let lat = done.saturating_duration_since(out.intended).as_micros() as u64;
        match step {
            Step::NeedMore => unreachable!("finish is called with a verdict"),
            Step::Done(resp) => {
                if in_window {
                    m.record_get(sec, lat, resp.body_bytes);
                } else {
                    m.gets_outside_window += 1;
                }
                self.run.live.gets.fetch_add(1, Ordering::Relaxed);
                if closing {
                    self.close(i);
                }
            }
            Step::Failed(f) => {
                // 2xx only: a non-2xx status is an error (as the tokio path).
                if f.kind == ErrorKind::BadStatus && (200..300).contains(&status) {
                    if in_window {
                        m.record_get(sec, lat, 0);
                    }
                } else {
                    m.record_error(sec, f.kind);
                    self.run.live.errors.fetch_add(1, Ordering::Relaxed);
                }
                self.close(i);
            }
        }
    }

    /// The completion time of a response just read on connection `i`.
    fn done_at(&mut self, i: usize) -> Instant {
        match self.conns[i].stamp {
            Some(t) => {
                self.stats.kernel_stamped += 1;
                // Never before the request was due nor after now.
                self.clocks.instant(t).min(Instant::now())
            }
            None => Instant::now(),
        }
    }

    /// Reads what connection `i` has (bounded: a socket that is always
    /// readable is read again on the next pass, after the others).
    fn read(&mut self, i: usize) {
        for _ in 0..64 {
            let Some(s) = self.conns[i].sock.as_ref() else {
                return;
            };
            let fd = s.as_raw_fd();
            let mut iov = [IoSliceMut::new(&mut self.scratch)];
            let r = recvmsg::<SockaddrStorage>(
                fd,
                &mut iov,
                Some(&mut self.cmsg),
                MsgFlags::MSG_DONTWAIT,
            );
            let (n, stamp) = match r {
                Ok(msg) => {
                    let mut stamp = None;
                    if let Ok(cm) = msg.cmsgs() {
                        for c in cm {
                            if let ControlMessageOwned::ScmTimestampns(t) = c {
                                stamp = Some(t);
                            }
                        }
                    }
                    (msg.bytes, stamp)
                }
                Err(nix::errno::Errno::EAGAIN) => return,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    let kind = io_kind(&e.into());
                    let c = &mut self.conns[i];
                    if c.out.is_some() {
                        let step = c.reader.eof(&mut c.buf, &self.limits, Some(kind));
                        self.finish(i, step, Instant::now());
                    } else {
                        self.close(i);
                        self.conns[i].dead = Some(kind);
                    }
                    return;
                }
            };
            let c = &mut self.conns[i];
            if stamp.is_some() {
                c.stamp = stamp;
            }
            if n == 0 {
                if c.out.is_some() {
                    let step = c.reader.eof(&mut c.buf, &self.limits, None);
                    let done = Instant::now();
                    self.finish(i, step, done);
                }
                if self.conns[i].sock.is_some() {
                    // Closed while idle: the next request meets a reset.
                    self.close(i);
                    self.conns[i].dead = Some(ErrorKind::Reset);
                }
                self.send(i);
                return;
            }
            c.buf.extend_from_slice(&self.scratch[..n]);
            if c.out.is_some() {
                let step = c.reader.step(&mut c.buf, &self.limits);
                if step != Step::NeedMore {
                    let done = self.done_at(i);
                    self.finish(i, step, done);
                    self.send(i);
                }
            }
            if n < self.scratch.len() {
                // Most likely drained: epoll says when there is more.
                return;
            }
        }
    }

    /// Reads every ready socket; `timeout_ms` as epoll_wait's.
    fn harvest(&mut self, timeout_ms: u16, events: &mut [EpollEvent]) -> usize {
        let n = self.epoll.wait(events, timeout_ms).unwrap_or(0);
        for e in &events[..n] {
            self.read(e.data() as usize);
        }
        n
    }

    /// Whether to block on the sockets rather than sleep until the next
    /// tick: some response is partly read (read the rest as it comes, not
    /// a socket buffer per tick), or some connection has a due request
    /// waiting behind its outstanding one (send it when the response ends,
    /// or a connection could never exceed one request per tick).
    fn watch_sockets(&self) -> bool {
        self.conns.iter().any(|c| {
            c.out.is_some() && (c.reader.got_any || !c.buf.is_empty() || c.taken < c.released)
        })
    }
}

/// Runs the open model's schedule on the tick engine.
pub fn run(run: TickRun<'_>) -> anyhow::Result<(Metrics, TickStats)> {
    let n = run.sched.connections;
    let conns = (0..n)
        .map(|i| Conn {
            url: (i % run.urls.len() as u64) as usize,
            sock: None,
            buf: BytesMut::with_capacity(16 * 1024),
            reader: ResponseReader::new(),
            released: 0,
            taken: 0,
            out: None,
            dead: None,
            stamp: None,
        })
        .collect();
    let tick = run.opts.tick.max(Duration::from_micros(10));
    let mut e = Engine {
        conns,
        epoll: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?,
        limits: Limits::default(),
        metrics: Metrics::default(),
        clocks: Clocks::take(),
        stats: TickStats::default(),
        scratch: vec![0u8; 256 * 1024],
        cmsg: nix::cmsg_space!(TimeSpec),
        run,
    };
    let mut events = vec![EpollEvent::empty(); 256];
    let sched = e.run.sched;
    let mut next = 0u64;
    let mut wake = sched.start;
    loop {
        e.sleep_until(wake, &mut events);
        e.stats.ticks += 1;
        // 1. What has arrived.
        while e.harvest(0, &mut events) == events.len() {}
        let now = Instant::now();
        // Deadlines (checked here, not only when bytes come: a socket that
        // is always readable must still end at its deadline).
        for i in 0..e.conns.len() {
            if e.conns[i].out.as_ref().is_some_and(|o| now >= o.deadline) {
                let got_any = e.conns[i].reader.got_any;
                let f = Failure {
                    kind: ErrorKind::Timeout,
                    before_response: !got_any,
                };
                e.finish(i, Step::Failed(f), now);
                e.close(i);
            }
        }
        // 2. What is due.
        let due = sched.due(next, now);
        for g in due.clone() {
            e.conns[(g % n) as usize].released += 1;
        }
        next = due.end.max(next);
        for i in 0..e.conns.len() {
            if e.conns[i].out.as_ref().is_some_and(|o| o.unsent > 0) {
                e.flush(i);
            }
            e.send(i);
        }
        let busy = e.conns.iter().any(|c| c.out.is_some());
        if !sched.has(next) && !busy {
            break;
        }
        // 3. The next tick: on the tick grid; when nothing is out, the
        // tick of the next request.
        let after = now.saturating_duration_since(sched.start);
        let k = after.as_nanos() / tick.as_nanos() + 1;
        let mut t = sched.start + tick * k as u32;
        if !busy && sched.has(next) {
            t = t.max(sched.intended(next));
        }
        wake = t;
    }
    for i in 0..e.conns.len() {
        e.close(i);
    }
    Ok((e.metrics, e.stats))
}

impl Engine<'_> {
    /// Sleeps until `wake`: on the clock, or in `epoll_wait` while
    /// [`Engine::watch_sockets`] (reading what comes).
    fn sleep_until(&mut self, wake: Instant, events: &mut [EpollEvent]) {
        loop {
            let now = Instant::now();
            if now >= wake {
                return;
            }
            if self.watch_sockets() {
                let ms = (wake - now)
                    .as_micros()
                    .div_ceil(1000)
                    .min(u16::MAX as u128) as u16;
                self.harvest(ms, events);
            } else {
                let ts = self.clocks.mono_ts(wake);
                let _ = clock_nanosleep(
                    ClockId::CLOCK_MONOTONIC,
                    ClockNanosleepFlags::TIMER_ABSTIME,
                    &ts,
                );
            }
        }
    }
}
