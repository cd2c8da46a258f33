//! The one task of the HTTP/1 strategies. It owns the [`Session`] (by
//! `&mut`: no lock), every connection's [`Machine`] and socket, and the
//! objects waiting for a connection. It waits for whichever comes first — a
//! connect completing, a socket readable or writable, a machine's or a
//! starting connection's deadline — hands that event with the time to the
//! machine, and applies the effects: bytes to write, objects for new
//! connections (HTTP/1.0), a connection's end and what to do after it
//! (reconnect with what was not answered, or give up).
//!
//! HTTP/1.0 runs up to `max_conns` connections at once, one object each
//! (re-sent on a new connection after an early close, up to
//! `MAX_ATTEMPTS_PER_OBJECT` times); the persistent strategies run one
//! connection at a time, a new one only when the server closed the previous
//! one early.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::net::TcpStream;

use super::{Effect, End, Machine, Plan, Step, READS_PER_YIELD, READ_CHUNK_BYTES};
use crate::config::Strategy;
use crate::error::FetchError;
use crate::report::ConnEnd;
use crate::session::{ObjId, Session, PAGE};
use crate::store::Store;

/// Requests sent for one object at most (first try plus re-sends after
/// early closes) under HTTP/1.0, where each try is its own connection.
const MAX_ATTEMPTS_PER_OBJECT: u32 = 4;

/// Persistent strategies give up after this many reconnections in a row
/// that got no response at all (a server that accepts and closes).
const MAX_FRUITLESS_RECONNECTS: usize = 3;

type Connecting = Pin<Box<dyn Future<Output = Result<TcpStream, FetchError>> + Send>>;

/// Requests that go over one connection at a time: one object under
/// HTTP/1.0, the whole page under the persistent strategies.
struct Job {
    queue: VecDeque<ObjId>,
    /// The object it started with (named if it fails).
    first: ObjId,
    /// Connections made for it.
    tries: u32,
    /// Persistent: reconnections in a row that got no response.
    fruitless: usize,
    /// What the server did last time it closed early.
    last: String,
    phase: Phase,
}

enum Phase {
    Connecting {
        fut: Connecting,
        started: Instant,
    },
    /// Connected; the imitated server accepts at `ready_at`
    /// (`HostCost::per_connection`).
    Starting {
        stream: TcpStream,
        id: usize,
        ready_at: Instant,
    },
    Live(Box<Live>),
}

/// A running connection: its machine and socket, and the bytes flushed to
/// it and not yet accepted by the kernel.
struct Live {
    id: usize,
    m: Machine,
    stream: TcpStream,
    wire: Vec<u8>,
    wire_off: usize,
}

/// What woke the driver.
enum Event {
    Connected(usize, Result<TcpStream, FetchError>),
    Readable(usize),
    /// The socket failed in a way that is neither a FIN nor a reset.
    Lost(usize),
    Writable(usize),
    WriteFailed(usize),
    Timer,
}

struct Driver {
    http10: bool,
    pipeline: bool,
    jobs: Vec<Job>,
    /// Objects waiting for a connection (HTTP/1.0).
    pending: VecDeque<ObjId>,
    /// The job polled first next time (a socket that is always readable
    /// must not starve the others).
    turn: usize,
    events_since_yield: u32,
}

/// Runs an HTTP/1 strategy's fetch to its end: every object answered, or
/// the first error.
pub async fn run(sess: &mut Session, store: &mut Store) -> Result<(), FetchError> {
    let http10 = sess.cfg.strategy == Strategy::Http10;
    let mut d = Driver {
        http10,
        pipeline: !http10 && sess.cfg.strategy.pipelines(),
        jobs: Vec::new(),
        pending: VecDeque::new(),
        turn: 0,
        events_since_yield: 0,
    };
    if http10 {
        d.pending.push_back(PAGE);
    } else {
        d.jobs.push(Job::new(VecDeque::from([PAGE]), sess));
    }
    // Bounded: HTTP/1.0 dispatches every object at most
    // MAX_ATTEMPTS_PER_OBJECT times, the persistent strategies reconnect at
    // most max_reconnects times, the object table is bounded
    // (discover::MAX_REFERENCES), and the machines' guards bound waiting.
    loop {
        while d.http10 && d.jobs.len() < sess.cfg.max_conns {
            let Some(id) = d.pending.pop_front() else {
                break;
            };
            d.jobs.push(Job::new(VecDeque::from([id]), sess));
        }
        if d.jobs.is_empty() {
            if !d.http10 {
                // The persistent machine took prefetch work itself.
                return Ok(());
            }
            let more = sess.take_prefetch_work();
            if more.is_empty() {
                return Ok(());
            }
            d.pending.extend(more);
            continue;
        }
        let deadline = d.next_deadline(sess);
        let event = d.wait(deadline).await;
        d.handle(sess, event)?;
        crate::drain_writes(sess, store);
        d.events_since_yield += 1;
        if d.events_since_yield >= READS_PER_YIELD {
            // A socket that never drains must not starve other tasks.
            d.events_since_yield = 0;
            tokio::task::yield_now().await;
        }
    }
}

/// The TCP connection to the server, within the connect timeout.
async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, FetchError> {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(FetchError::Connect {
            addr: addr.to_string(),
            reason: e.to_string(),
        }),
        Err(_) => Err(FetchError::Connect {
            addr: addr.to_string(),
            reason: format!(
                "no answer within {:.1} s (connect timeout)",
                timeout.as_secs_f64()
            ),
        }),
    }
}

fn connecting(sess: &Session) -> Phase {
    Phase::Connecting {
        fut: Box::pin(connect(sess.addr, sess.cfg.timeouts.connect)),
        started: Instant::now(),
    }
}

impl Job {
    fn new(queue: VecDeque<ObjId>, sess: &Session) -> Job {
        Job {
            first: queue[0],
            queue,
            tries: 0,
            fruitless: 0,
            last: String::new(),
            phase: connecting(sess),
        }
    }
}

impl Driver {
    /// When the driver must wake without a socket event.
    fn next_deadline(&self, sess: &Session) -> Option<Instant> {
        self.jobs
            .iter()
            .filter_map(|j| match &j.phase {
                Phase::Connecting { .. } => None,
                Phase::Starting { ready_at, .. } => Some(*ready_at),
                Phase::Live(l) => l.m.next_deadline(sess),
            })
            .min()
    }

    /// Waits for the next event of any connection, or `deadline`.
    async fn wait(&mut self, deadline: Option<Instant>) -> Event {
        let far = Instant::now() + Duration::from_secs(86_400);
        let sleep = tokio::time::sleep_until(deadline.unwrap_or(far).into());
        tokio::pin!(sleep);
        let turn = self.turn;
        let jobs = &mut self.jobs;
        let event = poll_fn(|cx| {
            let n = jobs.len();
            for k in 0..n {
                let j = (turn + k) % n;
                if let Poll::Ready(e) = poll_job(j, &mut jobs[j], cx) {
                    return Poll::Ready(e);
                }
            }
            if deadline.is_some() && sleep.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Event::Timer);
            }
            Poll::Pending
        })
        .await;
        self.turn = self.turn.wrapping_add(1);
        event
    }

    fn handle(&mut self, sess: &mut Session, event: Event) -> Result<(), FetchError> {
        let now = Instant::now();
        match event {
            Event::Connected(j, r) => self.connected(sess, j, r?, now),
            Event::Timer => {
                // Every job whose deadline has come (indices stay valid:
                // a job ends only in `settle`, from the back).
                for j in (0..self.jobs.len()).rev() {
                    self.on_deadline(sess, j, now)?;
                }
                Ok(())
            }
            Event::Readable(j) => {
                let l = self.live(j);
                let buf = l.m.read_buf();
                buf.reserve(READ_CHUNK_BYTES);
                let r = match l.stream.try_read_buf(buf) {
                    Ok(0) => l.m.on_eof(sess, now),
                    Ok(n) => l.m.on_read(sess, n, now),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
                    Err(_) => {
                        l.m.on_reset();
                        Ok(())
                    }
                };
                self.after(sess, j, r)
            }
            Event::Lost(j) => {
                self.live(j).m.on_lost();
                self.after(sess, j, Ok(()))
            }
            Event::Writable(j) => {
                try_write(self.live(j), sess);
                self.after(sess, j, Ok(()))
            }
            Event::WriteFailed(j) => {
                let l = self.live(j);
                l.m.on_write_closed();
                l.wire.clear();
                l.wire_off = 0;
                self.after(sess, j, Ok(()))
            }
        }
    }

    fn live(&mut self, j: usize) -> &mut Live {
        match &mut self.jobs[j].phase {
            Phase::Live(l) => l,
            _ => unreachable!("socket events come from live connections only"),
        }
    }

    /// A connect completed: the connection is open (the imitated server
    /// then forks and accepts before it reads).
    fn connected(
        &mut self,
        sess: &mut Session,
        j: usize,
        stream: TcpStream,
        now: Instant,
    ) -> Result<(), FetchError> {
        let Phase::Connecting { started, .. } = self.jobs[j].phase else {
            unreachable!("connect events come from connecting jobs only");
        };
        if sess.cfg.nodelay {
            // Paper 001 "Nagle Interaction": the robot does its own buffering.
            let _ = stream.set_nodelay(true);
        }
        let id = sess.conn_opened(now);
        sess.conn_handshake(id, now - started, None);
        let per_connection = sess.cfg.host_cost.per_connection;
        if per_connection.is_zero() {
            return self.start(sess, j, stream, id, now);
        }
        self.jobs[j].phase = Phase::Starting {
            stream,
            id,
            ready_at: now + per_connection,
        };
        Ok(())
    }

    /// The connection starts sending its job's requests.
    fn start(
        &mut self,
        sess: &mut Session,
        j: usize,
        stream: TcpStream,
        id: usize,
        now: Instant,
    ) -> Result<(), FetchError> {
        let job = &mut self.jobs[j];
        let plan = Plan {
            pipeline: self.pipeline,
            cautious: !self.http10 && job.tries > 0,
        };
        job.tries += 1;
        let queue = std::mem::take(&mut job.queue);
        let mut m = Machine::new(sess, id, queue, plan, !self.http10, now);
        m.read_buf().reserve(READ_CHUNK_BYTES);
        job.phase = Phase::Live(Box::new(Live {
            id,
            m,
            stream,
            wire: Vec::new(),
            wire_off: 0,
        }));
        self.after(sess, j, Ok(()))
    }

    fn on_deadline(
        &mut self,
        sess: &mut Session,
        j: usize,
        now: Instant,
    ) -> Result<(), FetchError> {
        match &self.jobs[j].phase {
            Phase::Starting { ready_at, .. } if *ready_at <= now => {
                let phase = std::mem::replace(&mut self.jobs[j].phase, connecting(sess));
                let Phase::Starting { stream, id, .. } = phase else {
                    unreachable!("matched above");
                };
                self.start(sess, j, stream, id, now)
            }
            Phase::Live(l) if l.m.next_deadline(sess).is_some_and(|t| t <= now) => {
                let r = self.live(j).m.on_timer(sess, now);
                self.after(sess, j, r)
            }
            _ => Ok(()),
        }
    }

    /// After an event of live connection `j` (its result `r`): the
    /// machine's effects applied, then what it can issue now, and its end.
    fn after(
        &mut self,
        sess: &mut Session,
        j: usize,
        r: Result<(), FetchError>,
    ) -> Result<(), FetchError> {
        let step = r.and_then(|()| {
            self.apply(sess, j);
            let step = self.live(j).m.step(sess, Instant::now());
            self.apply(sess, j);
            step
        });
        match step {
            Ok(Step::Wait) => Ok(()),
            Ok(Step::Close(end)) => self.settle(sess, j, end),
            Err(e) => {
                let id = self.live(j).id;
                sess.conn_closed(id, ConnEnd::Error(e.to_string()), Instant::now());
                Err(e)
            }
        }
    }

    /// Applies live connection `j`'s effects in order.
    fn apply(&mut self, sess: &mut Session, j: usize) {
        let Phase::Live(l) = &mut self.jobs[j].phase else {
            return;
        };
        while let Some(effect) = l.m.poll_effect() {
            match effect {
                Effect::Send { bytes, .. } => {
                    if l.wire_off == l.wire.len() {
                        l.wire.clear();
                        l.wire_off = 0;
                    }
                    l.wire.extend_from_slice(&bytes);
                    // One write per batch when the socket has room: the
                    // batch is what the paper wants in one segment.
                    try_write(l, sess);
                }
                Effect::Dispatch(ids) => self.pending.extend(ids),
            }
        }
    }

    /// Connection `j` ended: recorded, then its job reconnects with what
    /// was not answered, ends, or fails the fetch.
    fn settle(&mut self, sess: &mut Session, j: usize, end: End) -> Result<(), FetchError> {
        let phase = std::mem::replace(&mut self.jobs[j].phase, connecting(sess));
        let Phase::Live(l) = phase else {
            unreachable!("only live connections end");
        };
        let Live { id, m, stream, .. } = *l;
        let job = &mut self.jobs[j];
        job.queue = m.into_queue();
        let conn_end = match &end {
            End::Done => ConnEnd::Done,
            End::Closed { unanswered, .. } => {
                sess.conn_unanswered(id, unanswered.len());
                ConnEnd::ServerClosed {
                    unanswered: unanswered.len(),
                }
            }
        };
        sess.conn_closed(id, conn_end, Instant::now());
        drop(stream);
        let again = match end {
            End::Done => false,
            End::Closed {
                unanswered,
                answered,
                how,
            } => {
                // Unanswered requests go first, in their original order.
                for id in unanswered.into_iter().rev() {
                    job.queue.push_front(id);
                }
                job.last = how;
                let left = !job.queue.is_empty();
                left && self.retry(sess, j, answered)?
            }
        };
        if !again {
            self.jobs.remove(j);
        }
        Ok(())
    }

    /// Whether job `j` may reconnect after an early close with `answered`
    /// responses; an error when it has tried too often.
    fn retry(&mut self, sess: &Session, j: usize, answered: u32) -> Result<bool, FetchError> {
        let job = &mut self.jobs[j];
        if self.http10 {
            if job.tries >= MAX_ATTEMPTS_PER_OBJECT {
                return Err(FetchError::TooManyReconnects {
                    reconnects: MAX_ATTEMPTS_PER_OBJECT as usize,
                    url: sess.url_of(job.first),
                    last: std::mem::take(&mut job.last),
                });
            }
            return Ok(true);
        }
        job.fruitless = if answered == 0 { job.fruitless + 1 } else { 0 };
        let reconnects = job.tries as usize;
        if job.fruitless >= MAX_FRUITLESS_RECONNECTS || reconnects > sess.cfg.max_reconnects {
            return Err(FetchError::TooManyReconnects {
                reconnects,
                url: sess.url_of(job.queue[0]),
                last: std::mem::take(&mut job.last),
            });
        }
        Ok(true)
    }
}

/// Job `j`'s next event, if one is ready.
fn poll_job(j: usize, job: &mut Job, cx: &mut Context<'_>) -> Poll<Event> {
    match &mut job.phase {
        Phase::Connecting { fut, .. } => fut.as_mut().poll(cx).map(|r| Event::Connected(j, r)),
        Phase::Starting { .. } => Poll::Pending,
        Phase::Live(l) => {
            if l.m.busy() {
                // The imitated host neither reads nor writes before its
                // deadline.
                return Poll::Pending;
            }
            if let Poll::Ready(r) = l.stream.poll_read_ready(cx) {
                return Poll::Ready(match r {
                    Ok(()) => Event::Readable(j),
                    Err(_) => Event::Lost(j),
                });
            }
            if l.wire_off < l.wire.len() {
                if let Poll::Ready(r) = l.stream.poll_write_ready(cx) {
                    return Poll::Ready(match r {
                        Ok(()) => Event::Writable(j),
                        Err(_) => Event::WriteFailed(j),
                    });
                }
            }
            Poll::Pending
        }
    }
}

fn try_write(l: &mut Live, sess: &mut Session) {
    // Bounded: each pass writes bytes or stops.
    while l.wire_off < l.wire.len() {
        match l.stream.try_write(&l.wire[l.wire_off..]) {
            Ok(0) => l.m.on_write_closed(),
            Ok(n) => {
                l.m.on_written(sess, n);
                l.wire_off += n;
                continue;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            // EPIPE / ECONNRESET: the server is gone. What it already
            // answered may still be readable.
            Err(_) => l.m.on_write_closed(),
        }
        // Writing is over: nothing more will be sent.
        l.wire.clear();
        l.wire_off = 0;
        return;
    }
}
