//! One TCP connection of the robot: when request bytes move (output buffer
//! and flush policy), reading and framing responses in order, and what to do
//! when the server closes early. The meaning of the bytes is `session`'s.
//!
//! Reads and writes are both non-blocking on one task, so a pipelining
//! client never stops reading while it has requests to write (a server
//! blocked on a full send buffer must always be drained, or both stall).

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pagewire_h1::{Decoded, Decoder, Limits, ResponseParser};
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::FetchError;
use crate::outbuf::{Batch, FlushReason, OutBuffer};
use crate::report::ConnEnd;
use crate::session::{ObjId, Session, PAGE};

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

struct Conn<'s> {
    sess: &'s Session,
    id: usize,
    stream: TcpStream,
    /// Response heads, scanned incrementally: a head dripped a byte per
    /// read costs O(head), not O(head²).
    heads: ResponseParser,
    rbuf: BytesMut,
    out: OutBuffer,
    /// Flushed bytes not yet accepted by the kernel.
    wire: Vec<u8>,
    wire_off: usize,
    /// Requests sent or buffered, oldest first; responses come in this order
    /// (RFC 9112 §9.3.2).
    in_flight: VecDeque<ObjId>,
    /// The response being received: its object and body decoder.
    resp: Option<(ObjId, Decoder)>,
    answered: u32,
    /// The server announced it will close (Connection: close).
    closing: bool,
    /// The server closed (EOF) or reset.
    eof: bool,
    /// Writing failed (the server is gone); only reading remains.
    write_closed: bool,
    /// Reading failed with a reset (ECONNRESET), not a FIN.
    reset: bool,
    last_progress: Instant,
    /// When the response now awaited (front of `in_flight`) became so: its
    /// object deadline counts from here.
    awaited_since: Instant,
    /// Bytes of the awaited response so far (final heads and body).
    awaited_bytes: u64,
    /// The current minimum-rate window: its start and the bytes of final
    /// responses received in it.
    window_start: Instant,
    window_bytes: u64,
    last_answered: Option<ObjId>,
    /// Interim heads received for the awaited response.
    interim: u32,
    /// Reads since the last voluntary yield.
    reads_since_yield: u32,
    /// The page just completed; flush once its last requests are buffered
    /// (`FetchConfig::flush_at_page_end`).
    page_end_flush: bool,
    /// The imitated host is busy until then (`HostCost::per_object`).
    busy_until: Option<Instant>,
    /// When the head of the response being read arrived.
    head_at: Instant,
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
/// all answered or the server closes.
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
    let mut conn = Conn {
        sess,
        id,
        stream,
        heads: ResponseParser::new(Limits::default()),
        rbuf: BytesMut::with_capacity(READ_CHUNK_BYTES),
        out: OutBuffer::new(sess.cfg.out_buffer_bytes, sess.cfg.flush_after),
        wire: Vec::new(),
        wire_off: 0,
        in_flight: VecDeque::new(),
        resp: None,
        answered: 0,
        closing: false,
        eof: false,
        write_closed: false,
        reset: false,
        last_progress: Instant::now(),
        awaited_since: Instant::now(),
        awaited_bytes: 0,
        window_start: Instant::now(),
        window_bytes: 0,
        last_answered: None,
        interim: 0,
        reads_since_yield: 0,
        page_end_flush: false,
        busy_until: None,
        head_at: Instant::now(),
    };
    let result = conn.run(queue, plan, sink).await;
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

impl Conn<'_> {
    async fn run(
        &mut self,
        queue: &mut VecDeque<ObjId>,
        plan: Plan,
        sink: &Sink,
    ) -> Result<End, FetchError> {
        let own = matches!(sink, Sink::Own);
        // Bounded: every pass issues a request, moves bytes, fires the
        // timer, or returns; the read timeout bounds waiting.
        loop {
            if let Some(t) = self.busy_until.take() {
                // The imitated host handles what it received before it
                // sends or reads again.
                tokio::time::sleep_until(tokio::time::Instant::from_std(t)).await;
                self.sess.busy_until(t);
            }
            self.issue(queue, plan)?;
            if self.wire_off < self.wire.len() {
                self.try_write();
            }
            let idle = self.in_flight.is_empty() && self.resp.is_none();
            if idle && queue.is_empty() {
                if own {
                    let more = self.sess.take_prefetch_work();
                    if !more.is_empty() {
                        queue.extend(more);
                        continue;
                    }
                }
                if !self.rbuf.is_empty() {
                    return Err(self.unexpected_bytes());
                }
                return Ok(End::Done);
            }
            // Requests left and the server will not take them here; or the
            // server is gone with requests unanswered: reconnect.
            let gone = self.eof || (self.closing && self.resp.is_none());
            if gone || (idle && self.write_closed) {
                return Ok(self.end_closed());
            }
            self.wait(queue, sink).await?;
        }
    }

    fn end_closed(&mut self) -> End {
        let verb = if self.reset {
            "connection reset by the server"
        } else {
            "the server closed the connection"
        };
        let how = match &self.resp {
            Some(_) => format!(
                "{verb} in the middle of the response ({} bytes of it received)",
                self.awaited_bytes
            ),
            None if self.in_flight.is_empty() => verb.to_string(),
            None => format!("{verb} before the response"),
        };
        let mut unanswered: Vec<ObjId> = self.in_flight.drain(..).collect();
        if let Some((id, _)) = self.resp.take() {
            // Reached only when a reset discarded a partial response.
            self.sess.forget_partial(id);
            if unanswered.first() != Some(&id) {
                unanswered.insert(0, id);
            }
        }
        self.out.clear();
        End::Closed {
            unanswered,
            answered: self.answered,
            how,
        }
    }

    /// Moves requests from the queue into the output buffer as far as the
    /// plan allows.
    fn issue(&mut self, queue: &mut VecDeque<ObjId>, plan: Plan) -> Result<(), FetchError> {
        let depth = if !plan.pipeline || (plan.cautious && self.answered == 0) {
            1
        } else {
            usize::MAX
        };
        while !self.closing && !self.eof && !self.write_closed && self.in_flight.len() < depth {
            let Some(id) = queue.pop_front() else { break };
            let now = Instant::now();
            let req = self.sess.request(id, self.id, now)?;
            if self.in_flight.is_empty() && self.resp.is_none() {
                // The read timeout, the object deadline and the rate window
                // count from when an answer is first owed.
                self.last_progress = now;
                self.awaited_since = now;
                self.awaited_bytes = 0;
                self.window_start = now;
                self.window_bytes = 0;
                self.interim = 0;
            }
            self.in_flight.push_back(id);
            if self.in_flight.len() > 1 {
                self.sess.conn_pipelined(self.id);
            }
            for batch in self.out.push(&req, now) {
                self.emit(batch);
            }
            if depth == 1 || (id == PAGE && self.sess.cfg.explicit_flush) {
                // Not pipelining: the response is awaited, so waiting for the
                // timer would only add latency. The page request: paper 001
                // "Buffer Tuning" — "force a flush after issuing the first
                // request on the HTML document".
                if let Some(b) = self.out.flush(FlushReason::Explicit) {
                    self.emit(b);
                }
            }
        }
        if self.page_end_flush {
            self.page_end_flush = false;
            if let Some(b) = self.out.flush(FlushReason::Explicit) {
                self.emit(b);
            }
        }
        Ok(())
    }

    fn emit(&mut self, batch: Batch) {
        self.sess
            .flushed(self.id, batch.reason, batch.bytes.len(), Instant::now());
        if self.write_closed {
            return;
        }
        if self.wire_off == self.wire.len() {
            self.wire.clear();
            self.wire_off = 0;
        }
        self.wire.extend_from_slice(&batch.bytes);
        // One write per batch when the socket has room: the batch is what
        // the paper wants in one segment.
        self.try_write();
    }

    fn try_write(&mut self) {
        // Bounded: each pass writes bytes or stops.
        while self.wire_off < self.wire.len() && !self.write_closed {
            match self.stream.try_write(&self.wire[self.wire_off..]) {
                Ok(0) => {
                    self.write_closed = true;
                }
                Ok(n) => {
                    self.sess.wrote(self.id, n);
                    self.wire_off += n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    // EPIPE / ECONNRESET: the server is gone. What it already
                    // answered may still be readable.
                    self.write_closed = true;
                }
            }
        }
        if self.write_closed {
            self.wire.clear();
            self.wire_off = 0;
        }
    }

    async fn wait(&mut self, queue: &mut VecDeque<ObjId>, sink: &Sink) -> Result<(), FetchError> {
        let flush_at = self.out.deadline().map(tokio::time::Instant::from_std);
        let awaiting = !self.in_flight.is_empty() || self.resp.is_some();
        let read_deadline =
            tokio::time::Instant::from_std(self.last_progress + self.sess.cfg.timeouts.read);
        let want_write = self.wire_off < self.wire.len() && !self.write_closed;
        let guard_at = tokio::time::Instant::from_std(self.guard_deadline());
        tokio::select! {
            r = self.stream.readable() => {
                if r.is_err() {
                    self.eof = true;
                    return Ok(());
                }
                self.read(queue, sink)?;
                // The guards are checked here, on the read path, and not
                // only in the timer branches below: a socket that is always
                // readable (a 1xx flood, an endless chunked body) may never
                // let those branches run.
                if !self.eof && (!self.in_flight.is_empty() || self.resp.is_some()) {
                    self.check_guards(Instant::now())?;
                }
                self.reads_since_yield += 1;
                if self.reads_since_yield >= READS_PER_YIELD {
                    self.reads_since_yield = 0;
                    tokio::task::yield_now().await;
                }
                Ok(())
            }
            r = self.stream.writable(), if want_write => {
                if r.is_err() {
                    self.write_closed = true;
                }
                self.try_write();
                Ok(())
            }
            _ = tokio::time::sleep_until(flush_at.unwrap_or(read_deadline)), if flush_at.is_some() => {
                if let Some(b) = self.out.flush(FlushReason::Timer) {
                    self.emit(b);
                }
                Ok(())
            }
            _ = tokio::time::sleep_until(read_deadline), if awaiting => {
                let id = self.resp.as_ref().map(|r| r.0).or(self.in_flight.front().copied()).unwrap_or(PAGE);
                Err(FetchError::ReadTimeout {
                    url: self.sess.url_of(id),
                    after: self.sess.cfg.timeouts.read,
                })
            }
            _ = tokio::time::sleep_until(guard_at), if awaiting => self.check_guards(Instant::now()),
        }
    }

    /// The awaited response's object deadline or the end of the current
    /// minimum-rate window, whichever comes first.
    fn guard_deadline(&self) -> Instant {
        let t = &self.sess.cfg.timeouts;
        let deadline = self.awaited_since + t.object;
        if t.min_rate > 0 {
            deadline.min(self.window_start + t.read)
        } else {
            deadline
        }
    }

    /// Enforces the object deadline and the minimum rate (a byte
    /// every few seconds, or endless `100 Continue`s, must not hold a fetch).
    fn check_guards(&mut self, now: Instant) -> Result<(), FetchError> {
        let t = self.sess.cfg.timeouts;
        let id = self
            .resp
            .as_ref()
            .map(|r| r.0)
            .or(self.in_flight.front().copied())
            .unwrap_or(PAGE);
        if now >= self.awaited_since + t.object {
            return Err(FetchError::ObjectDeadline {
                url: self.sess.url_of(id),
                after: t.object,
                received: self.awaited_bytes,
            });
        }
        if now >= self.last_progress + t.read {
            // Silence, not slowness: the read timeout's error.
            return Err(FetchError::ReadTimeout {
                url: self.sess.url_of(id),
                after: t.read,
            });
        }
        if t.min_rate > 0 && now >= self.window_start + t.read {
            let window = now.saturating_duration_since(self.window_start);
            let need = (t.min_rate as f64 * window.as_secs_f64()) as u64;
            if self.window_bytes < need {
                return Err(FetchError::TooSlow {
                    url: self.sess.url_of(id),
                    received: self.window_bytes,
                    window,
                    min_rate: t.min_rate,
                });
            }
            self.window_start = now;
            self.window_bytes = 0;
        }
        Ok(())
    }

    fn read(&mut self, queue: &mut VecDeque<ObjId>, sink: &Sink) -> Result<(), FetchError> {
        self.rbuf.reserve(READ_CHUNK_BYTES);
        match self.stream.try_read_buf(&mut self.rbuf) {
            Ok(0) => {
                self.eof = true;
                self.on_eof(queue, sink)
            }
            Ok(n) => {
                let now = Instant::now();
                self.last_progress = now;
                self.window_bytes += n as u64;
                self.awaited_bytes += n as u64;
                self.sess.read(self.id, n, now);
                self.process(queue, sink)
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(()),
            Err(_) => {
                // A reset (paper 001 "Connection Management": the server
                // closed both halves while our requests were arriving). Data
                // the kernel discarded is gone: the partial response, if any,
                // is forgotten and re-requested.
                self.eof = true;
                self.reset = true;
                Ok(())
            }
        }
    }

    fn route(&self, ids: Vec<ObjId>, queue: &mut VecDeque<ObjId>, sink: &Sink) {
        match sink {
            Sink::Own => queue.extend(ids),
            Sink::Channel(tx) => {
                for id in ids {
                    // The dispatcher outlives every connection task.
                    let _ = tx.send(id);
                }
            }
        }
    }

    /// Parses and delivers everything complete in the read buffer.
    fn process(&mut self, queue: &mut VecDeque<ObjId>, sink: &Sink) -> Result<(), FetchError> {
        // Bounded: each pass consumes a head or body bytes from `rbuf`, or
        // stops.
        loop {
            if self.resp.is_none() {
                if self.rbuf.is_empty() || self.closing {
                    if self.closing && !self.rbuf.is_empty() {
                        // Bytes after a `Connection: close` response.
                        return Err(self.unexpected_bytes());
                    }
                    return Ok(());
                }
                let Some(&id) = self.in_flight.front() else {
                    return Err(self.unexpected_bytes());
                };
                let method = self.sess.method_of(id);
                let head = match self.heads.parse(&mut self.rbuf, &method) {
                    Ok(None) => return Ok(()),
                    Ok(Some(h)) => h,
                    Err(e) => {
                        let hint = if self.answered > 0 {
                            " (the previous response may have had a wrong length)"
                        } else {
                            ""
                        };
                        return Err(FetchError::object(
                            &self.sess.url_of(id),
                            // What the server did; never the status a server
                            // would answer with (`e`'s Display has one).
                            format!(
                                "the server sent a malformed response head: {}{hint}",
                                e.reason()
                            ),
                        ));
                    }
                };
                let (info, new) = self.sess.on_head(id, self.id, &head, Instant::now())?;
                self.route(new, queue, sink);
                if info.interim {
                    // Interim heads are not progress toward the response.
                    let n = head.raw().len() as u64;
                    self.window_bytes = self.window_bytes.saturating_sub(n);
                    self.awaited_bytes = self.awaited_bytes.saturating_sub(n);
                    self.interim += 1;
                    if self.interim > MAX_INTERIM_RESPONSES {
                        return Err(FetchError::object(
                            &self.sess.url_of(id),
                            format!(
                                "the server sent more than {MAX_INTERIM_RESPONSES} interim (1xx) responses and no final one"
                            ),
                        ));
                    }
                    continue;
                }
                if info.closing {
                    self.closing = true;
                }
                self.head_at = Instant::now();
                self.resp = Some((id, Decoder::new(head.body_framing(), self.heads.limits())));
            }
            let (id, dec) = self.resp.as_mut().expect("set above");
            let id = *id;
            match dec.decode(&mut self.rbuf) {
                Ok(Decoded::Data(b)) => {
                    let new = self.sess.on_body(id, &b, Instant::now())?;
                    self.route(new, queue, sink);
                }
                Ok(Decoded::NeedMore) => return Ok(()),
                Ok(Decoded::Done) => self.complete(id, queue, sink)?,
                Err(e) => {
                    return Err(FetchError::object(
                        &self.sess.url_of(id),
                        format!("the server sent a malformed body: {}", e.reason()),
                    ))
                }
            }
        }
    }

    fn complete(
        &mut self,
        id: ObjId,
        queue: &mut VecDeque<ObjId>,
        sink: &Sink,
    ) -> Result<(), FetchError> {
        self.resp = None;
        // The next response is awaited from now; bytes of it already read
        // are not counted (small, and only ever in its favour).
        self.awaited_since = Instant::now();
        self.awaited_bytes = 0;
        self.interim = 0;
        let front = self.in_flight.pop_front();
        debug_assert_eq!(front, Some(id));
        self.answered += 1;
        self.last_answered = Some(id);
        if id == PAGE && self.sess.cfg.flush_at_page_end {
            self.page_end_flush = true;
        }
        let per_object = self.sess.cfg.host_cost.per_object;
        let before = if per_object.is_zero() {
            0
        } else {
            self.sess.records_done()
        };
        let end = Instant::now();
        let new = self.sess.on_end(id, end)?;
        if !per_object.is_zero() {
            let parts = self.sess.records_done().saturating_sub(before);
            self.busy_until = Some(busy_after(
                self.busy_until,
                self.head_at,
                end,
                parts.max(1) as u32,
                per_object,
            ));
        }
        self.route(new, queue, sink);
        Ok(())
    }

    /// The server closed its side (FIN).
    fn on_eof(&mut self, queue: &mut VecDeque<ObjId>, sink: &Sink) -> Result<(), FetchError> {
        // No more bytes will come: the head parser's verdict on a partial
        // head is due now (a fault it had not been asked about yet).
        self.heads.reset();
        self.process(queue, sink)?;
        // Bounded: each pass consumes buffered body bytes or ends the response.
        while let Some((id, dec)) = self.resp.as_mut() {
            let id = *id;
            let remaining = dec.remaining();
            match dec.decode_eof(&mut self.rbuf) {
                Ok(Decoded::Data(b)) => {
                    let new = self.sess.on_body(id, &b, Instant::now())?;
                    self.route(new, queue, sink);
                }
                Ok(Decoded::Done) => self.complete(id, queue, sink)?,
                Ok(Decoded::NeedMore) => break,
                Err(_) => {
                    let detail = match remaining {
                        Some(n) => {
                            format!("{n} bytes of its body missing (Content-Length promised more)")
                        }
                        None => "its chunked body unfinished".to_string(),
                    };
                    return Err(FetchError::object(
                        &self.sess.url_of(id),
                        format!(
                            "truncated response: the server closed the connection with {detail}"
                        ),
                    ));
                }
            }
        }
        if !self.rbuf.is_empty() {
            return Err(match self.in_flight.front().copied() {
                Some(id) => FetchError::object(
                    &self.sess.url_of(id),
                    "truncated response: the server closed the connection in the middle of the response head",
                ),
                None => self.unexpected_bytes(),
            });
        }
        Ok(())
    }

    fn unexpected_bytes(&self) -> FetchError {
        let n = self.rbuf.len();
        match self.last_answered {
            Some(id) => FetchError::object(
                &self.sess.url_of(id),
                format!("{n} unexpected bytes after its response (wrong Content-Length?)"),
            ),
            None => FetchError::object(
                &self.sess.url_of(PAGE),
                format!("{n} bytes arrived before any request was sent"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// One object: handled after it arrives, or after the host is free.
    #[test]
    fn busy_after_one_object() {
        let t0 = Instant::now();
        let end = t0 + 10 * MS;
        assert_eq!(busy_after(None, t0, end, 1, 5 * MS), end + 5 * MS);
        // Still busy with an earlier object until 20 ms: 20 + 5.
        assert_eq!(
            busy_after(Some(t0 + 20 * MS), t0, end, 1, 5 * MS),
            t0 + 25 * MS
        );
    }

    /// Four parts over 40 ms: a cost below the spacing hides behind the
    /// arrivals (only the last part's cost shows); a cost above it adds up
    /// (the first part's arrival plus four costs).
    #[test]
    fn busy_after_parts_overlap_arrival() {
        let t0 = Instant::now();
        let end = t0 + 40 * MS;
        assert_eq!(busy_after(None, t0, end, 4, 5 * MS), end + 5 * MS);
        assert_eq!(busy_after(None, t0, end, 4, 20 * MS), t0 + 90 * MS);
    }
}
