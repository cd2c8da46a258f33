//! One TCP connection of the robot. [`Machine`] (`machine.rs`) decides when
//! request bytes move (output buffer and flush policy), frames responses in
//! order, keeps the guards and says what to do when the server closes
//! early, with no socket and no clock; [`drive`] here owns the socket,
//! applies the machine's effects and sleeps until its next deadline. The
//! meaning of the bytes is `session`'s.
//!
//! Reads and writes are both non-blocking on one task, so a pipelining
//! client never stops reading while it has requests to write (a server
//! blocked on a full send buffer must always be drained, or both stall).

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::FetchError;
use crate::report::ConnEnd;
use crate::session::{ObjId, Session};

mod machine;
#[cfg(test)]
mod tests;

pub use machine::{Effect, Machine, Step};

/// Bytes asked of the kernel per read. 64 KiB drains a LAN burst in one
/// call; paper 001 ("Implementation Experience") notes that reading
/// urgently matters: data left in the socket buffer delays ACKs.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Interim (1xx) responses accepted before one final response. RFC 9110
/// §15.2 sets no limit; a server that sends more than this is flooding
/// (a fast `103` flood must not hold the robot forever). A real server
/// sends one `100 Continue` or a few `103 Early Hints`.
pub const MAX_INTERIM_RESPONSES: u32 = 100;

/// Reads between two voluntary yields to the runtime: a socket that never
/// drains must not starve the connection's timers or other tasks.
const READS_PER_YIELD: u32 = 16;

/// Where requests found while reading go.
pub enum Sink {
    /// Onto this connection's own queue (persistent strategies).
    Own,
    /// To the HTTP/1.0 dispatcher, which opens a connection for each.
    Channel(UnboundedSender<ObjId>),
}

/// How a connection behaves.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Send requests ahead of responses through the output buffer.
    pub pipeline: bool,
    /// A reconnection after an early close: one request at a time until a
    /// response has been seen on this connection (the server may be one that
    /// closes after every response; don't pile up requests it will drop).
    pub cautious: bool,
}

/// How a connection ended.
#[derive(Debug)]
pub enum End {
    /// Every queued request was answered and nothing more is expected.
    Done,
    /// The server closed first; `unanswered` must be sent again (GET and
    /// HEAD are idempotent, RFC 9110 §9.2.2, so re-sending is safe).
    Closed {
        unanswered: Vec<ObjId>,
        answered: u32,
        /// What the server did, for an error if it keeps doing it.
        how: String,
    },
}

/// When a host that spends `cost` on every object is done with the `parts`
/// objects of one response whose head arrived at `head_at` and whose last
/// byte at `end`, if it was busy until `busy` before: each object handled
/// after it arrives and after the previous one, the parts of a multi-part
/// response (GETALL, a package) taken as arriving evenly over the response.
pub fn busy_after(
    busy: Option<Instant>,
    head_at: Instant,
    end: Instant,
    parts: u32,
    cost: Duration,
) -> Instant {
    let parts = parts.max(1);
    let spacing = end.saturating_duration_since(head_at) / parts;
    // Part k (1-based) arrives at head_at + k * spacing (the last at end).
    let mut t = busy.unwrap_or(head_at);
    for k in 1..=parts {
        let arrived = if k == parts {
            end
        } else {
            head_at + spacing * k
        };
        t = t.max(arrived) + cost;
    }
    t
}

/// The TCP connection to the server, within the connect timeout.
async fn connect(sess: &Session) -> Result<TcpStream, FetchError> {
    let addr = sess.addr;
    let connect = tokio::time::timeout(sess.cfg.timeouts.connect, TcpStream::connect(addr));
    match connect.await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(FetchError::Connect {
            addr: addr.to_string(),
            reason: e.to_string(),
        }),
        Err(_) => Err(FetchError::Connect {
            addr: addr.to_string(),
            reason: format!(
                "no answer within {:.1} s (connect timeout)",
                sess.cfg.timeouts.connect.as_secs_f64()
            ),
        }),
    }
}

/// Opens a connection and runs requests from `queue` on it until they are
/// all answered or the server closes: the socket side of [`Machine`], which
/// decides everything else. What was not sent stays in `queue`.
pub async fn drive(
    sess: &Session,
    queue: &mut VecDeque<ObjId>,
    plan: Plan,
    sink: &Sink,
) -> Result<End, FetchError> {
    let connect_started = Instant::now();
    let stream = connect(sess).await?;
    if sess.cfg.nodelay {
        // Paper 001 "Nagle Interaction": the robot does its own buffering.
        let _ = stream.set_nodelay(true);
    }
    let connected = Instant::now();
    let id = sess.conn_opened(connected);
    sess.conn_handshake(id, connected - connect_started, None);
    let per_connection = sess.cfg.host_cost.per_connection;
    if !per_connection.is_zero() {
        // The imitated server forks and accepts before it reads.
        tokio::time::sleep(per_connection).await;
    }
    let own = matches!(sink, Sink::Own);
    let mut m = Machine::new(sess, id, std::mem::take(queue), plan, own, Instant::now());
    m.read_buf().reserve(READ_CHUNK_BYTES);
    let mut io = Io {
        stream,
        wire: Vec::new(),
        wire_off: 0,
        reads_since_yield: 0,
    };
    let result = io.run(sess, &mut m, sink).await;
    *queue = m.into_queue();
    let end = match &result {
        Ok(End::Done) => ConnEnd::Done,
        Ok(End::Closed { unanswered, .. }) => {
            sess.conn_unanswered(id, unanswered.len());
            ConnEnd::ServerClosed {
                unanswered: unanswered.len(),
            }
        }
        Err(e) => ConnEnd::Error(e.to_string()),
    };
    sess.conn_closed(id, end, Instant::now());
    result
}

/// The socket of one connection and the bytes flushed to it and not yet
/// accepted by the kernel.
struct Io {
    stream: TcpStream,
    wire: Vec<u8>,
    wire_off: usize,
    /// Reads since the last voluntary yield.
    reads_since_yield: u32,
}

impl Io {
    /// Feeds the machine events until it closes the connection.
    async fn run(
        &mut self,
        sess: &Session,
        m: &mut Machine,
        sink: &Sink,
    ) -> Result<End, FetchError> {
        // Bounded: every pass moves bytes, fires the timer, or returns; the
        // machine's read timeout bounds waiting.
        loop {
            let step = m.step(sess, Instant::now());
            self.apply(sess, m, sink);
            if let Step::Close(end) = step? {
                return Ok(end);
            }
            self.wait(sess, m).await?;
            self.apply(sess, m, sink);
        }
    }

    /// Applies the machine's effects in order.
    fn apply(&mut self, sess: &Session, m: &mut Machine, sink: &Sink) {
        while let Some(effect) = m.poll_effect() {
            match effect {
                Effect::Send { bytes, .. } => {
                    if self.wire_off == self.wire.len() {
                        self.wire.clear();
                        self.wire_off = 0;
                    }
                    self.wire.extend_from_slice(&bytes);
                    // One write per batch when the socket has room: the
                    // batch is what the paper wants in one segment.
                    self.try_write(sess, m);
                }
                Effect::Dispatch(ids) => {
                    if let Sink::Channel(tx) = sink {
                        for id in ids {
                            // The dispatcher outlives every connection task.
                            let _ = tx.send(id);
                        }
                    }
                }
            }
        }
    }

    fn try_write(&mut self, sess: &Session, m: &mut Machine) {
        // Bounded: each pass writes bytes or stops.
        while self.wire_off < self.wire.len() {
            match self.stream.try_write(&self.wire[self.wire_off..]) {
                Ok(0) => m.on_write_closed(),
                Ok(n) => {
                    m.on_written(sess, n);
                    self.wire_off += n;
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // EPIPE / ECONNRESET: the server is gone. What it already
                // answered may still be readable.
                Err(_) => m.on_write_closed(),
            }
            // Writing is over: nothing more will be sent.
            self.wire.clear();
            self.wire_off = 0;
            return;
        }
    }

    /// Waits for one event and hands it to the machine.
    async fn wait(&mut self, sess: &Session, m: &mut Machine) -> Result<(), FetchError> {
        let busy = m.busy();
        let deadline = m.next_deadline(sess).map(tokio::time::Instant::from_std);
        let want_write = !busy && self.wire_off < self.wire.len();
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            r = self.stream.readable(), if !busy => {
                if r.is_err() {
                    m.on_lost();
                    return Ok(());
                }
                self.read(sess, m)?;
                self.reads_since_yield += 1;
                if self.reads_since_yield >= READS_PER_YIELD {
                    self.reads_since_yield = 0;
                    tokio::task::yield_now().await;
                }
                Ok(())
            }
            r = self.stream.writable(), if want_write => {
                if r.is_err() {
                    m.on_write_closed();
                    self.wire.clear();
                    self.wire_off = 0;
                    return Ok(());
                }
                self.try_write(sess, m);
                Ok(())
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                m.on_timer(sess, Instant::now())
            }
        }
    }

    fn read(&mut self, sess: &Session, m: &mut Machine) -> Result<(), FetchError> {
        let buf = m.read_buf();
        buf.reserve(READ_CHUNK_BYTES);
        match self.stream.try_read_buf(buf) {
            Ok(0) => m.on_eof(sess, Instant::now()),
            Ok(n) => m.on_read(sess, n, Instant::now()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(_) => {
                m.on_reset();
                Ok(())
            }
        }
    }
}
