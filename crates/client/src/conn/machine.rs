//! One HTTP/1 connection of the robot without its socket, shaped like
//! `link::Pipe`: events in (bytes read, the server closed or reset, writing
//! failed, a timer fired), effects out (request bytes to send, objects for
//! the HTTP/1.0 dispatcher, the connection's end), the time passed in with
//! every event, and [`Machine::next_deadline`] for the caller's one timer.
//! Nothing here reads a clock or touches a socket: `conn::drive` applies the
//! effects on a TCP stream and the scripted tests (`conn/tests.rs`) apply
//! them in virtual time.
//!
//! What the bytes mean is the session's (`crate::session`); this machine
//! decides when requests are built and flushed (the output buffer and the
//! paper's three flush triggers), frames the responses in order, and
//! enforces the read timeout, the object deadline and the minimum rate.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::BytesMut;
use pagewire_h1::{Decoded, Decoder, Limits, ResponseParser};

use super::{busy_after, End, Plan, MAX_INTERIM_RESPONSES};
use crate::error::FetchError;
use crate::outbuf::{Batch, FlushReason, OutBuffer};
use crate::session::{ObjId, Session, PAGE};

/// What the caller must do for the machine.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect {
    /// Write these request bytes (one flush of the output buffer) to the
    /// connection, in one write if the socket has room: the batch is what
    /// the paper wants in one segment.
    Send { bytes: Vec<u8>, reason: FlushReason },
    /// Objects found while reading, for the HTTP/1.0 dispatcher (which
    /// opens a connection for each); persistent strategies queue them on
    /// this connection instead.
    Dispatch(Vec<ObjId>),
}

/// Where the connection stands after [`Machine::step`].
#[derive(Debug)]
pub enum Step {
    /// Waiting for bytes, for the socket to take bytes, or for
    /// [`Machine::next_deadline`].
    Wait,
    /// Close the connection: it ended this way.
    Close(End),
}

/// The state of one connection between its open and its close.
pub struct Machine {
    id: usize,
    plan: Plan,
    /// Found objects go onto `queue` (true) or out as [`Effect::Dispatch`].
    own: bool,
    /// Requests still to send on this connection (handed back at the end).
    queue: VecDeque<ObjId>,
    effects: VecDeque<Effect>,
    /// Response heads, scanned incrementally: a head dripped a byte per
    /// read costs O(head), not O(head²).
    heads: ResponseParser,
    rbuf: BytesMut,
    out: OutBuffer,
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
    /// The page just completed; flush once its last requests are buffered
    /// (`FetchConfig::flush_at_page_end`).
    page_end_flush: bool,
    /// The imitated host is busy until then (`HostCost::per_object`):
    /// nothing is sent or read before.
    busy_until: Option<Instant>,
    /// When the head of the response being read arrived.
    head_at: Instant,
}

impl Machine {
    /// Connection `id` (the session's number for it), open at `now`, to
    /// send the requests of `queue`.
    pub fn new(
        sess: &Session,
        id: usize,
        queue: VecDeque<ObjId>,
        plan: Plan,
        own: bool,
        now: Instant,
    ) -> Machine {
        Machine {
            id,
            plan,
            own,
            queue,
            effects: VecDeque::new(),
            heads: ResponseParser::new(Limits::default()),
            rbuf: BytesMut::new(),
            out: OutBuffer::new(sess.cfg.out_buffer_bytes, sess.cfg.flush_after),
            in_flight: VecDeque::new(),
            resp: None,
            answered: 0,
            closing: false,
            eof: false,
            write_closed: false,
            reset: false,
            last_progress: now,
            awaited_since: now,
            awaited_bytes: 0,
            window_start: now,
            window_bytes: 0,
            last_answered: None,
            interim: 0,
            page_end_flush: false,
            busy_until: None,
            head_at: now,
        }
    }

    /// The requests not sent on this connection (after it ended).
    pub fn into_queue(self) -> VecDeque<ObjId> {
        self.queue
    }

    /// The next effect to apply, oldest first.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The imitated host is busy: neither read nor write before
    /// [`Machine::next_deadline`].
    pub fn busy(&self) -> bool {
        self.busy_until.is_some()
    }

    /// When [`Machine::on_timer`] has something to do: the end of the host's
    /// busy time; else the flush timer, and while a response is owed the
    /// read timeout, the object deadline and the end of the minimum-rate
    /// window.
    pub fn next_deadline(&self, sess: &Session) -> Option<Instant> {
        if let Some(t) = self.busy_until {
            return Some(t);
        }
        let mut next = self.out.deadline();
        if self.awaiting() {
            let t = &sess.cfg.timeouts;
            let mut guard = (self.last_progress + t.read).min(self.awaited_since + t.object);
            if t.min_rate > 0 {
                guard = guard.min(self.window_start + t.read);
            }
            next = Some(next.map_or(guard, |n| n.min(guard)));
        }
        next
    }

    fn awaiting(&self) -> bool {
        !self.in_flight.is_empty() || self.resp.is_some()
    }

    /// Issues what can be issued and says whether the connection is over.
    /// Call after every event (and once after `new`).
    pub fn step(&mut self, sess: &mut Session, now: Instant) -> Result<Step, FetchError> {
        // Bounded: every pass issues requests or returns.
        loop {
            if self.busy_until.is_some() {
                return Ok(Step::Wait);
            }
            self.issue(sess, now)?;
            let idle = !self.awaiting();
            if idle && self.queue.is_empty() {
                if self.own {
                    let more = sess.take_prefetch_work();
                    if !more.is_empty() {
                        self.queue.extend(more);
                        continue;
                    }
                }
                if !self.rbuf.is_empty() {
                    return Err(self.unexpected_bytes(sess));
                }
                return Ok(Step::Close(End::Done));
            }
            // Requests left and the server will not take them here; or the
            // server is gone with requests unanswered: reconnect.
            let gone = self.eof || (self.closing && self.resp.is_none());
            if gone || (idle && self.write_closed) {
                return Ok(Step::Close(self.end_closed(sess)));
            }
            return Ok(Step::Wait);
        }
    }

    fn end_closed(&mut self, sess: &mut Session) -> End {
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
            sess.forget_partial(id);
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
    fn issue(&mut self, sess: &mut Session, now: Instant) -> Result<(), FetchError> {
        let plan = self.plan;
        let depth = if !plan.pipeline || (plan.cautious && self.answered == 0) {
            1
        } else {
            usize::MAX
        };
        while !self.closing && !self.eof && !self.write_closed && self.in_flight.len() < depth {
            let Some(id) = self.queue.pop_front() else {
                break;
            };
            let req = sess.request(id, self.id, now)?;
            if !self.awaiting() {
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
                sess.conn_pipelined(self.id);
            }
            for batch in self.out.push(&req, now) {
                self.emit(sess, batch, now);
            }
            if depth == 1 || (id == PAGE && sess.cfg.explicit_flush) {
                // Not pipelining: the response is awaited, so waiting for the
                // timer would only add latency. The page request: paper 001
                // "Buffer Tuning" — "force a flush after issuing the first
                // request on the HTML document".
                self.flush(sess, FlushReason::Explicit, now);
            }
        }
        if self.page_end_flush {
            self.page_end_flush = false;
            self.flush(sess, FlushReason::Explicit, now);
        }
        Ok(())
    }

    fn flush(&mut self, sess: &mut Session, reason: FlushReason, now: Instant) {
        if let Some(b) = self.out.flush(reason) {
            self.emit(sess, b, now);
        }
    }

    fn emit(&mut self, sess: &mut Session, batch: Batch, now: Instant) {
        sess.flushed(self.id, batch.reason, batch.bytes.len(), now);
        if self.write_closed {
            return;
        }
        self.effects.push_back(Effect::Send {
            bytes: batch.bytes,
            reason: batch.reason,
        });
    }

    /// `n` bytes of an [`Effect::Send`] left for the server.
    pub fn on_written(&self, sess: &mut Session, n: usize) {
        sess.wrote(self.id, n);
    }

    /// Writing failed (EPIPE, ECONNRESET, a zero-length write): the server
    /// is gone. What it already answered may still be readable.
    pub fn on_write_closed(&mut self) {
        self.write_closed = true;
    }

    /// The timer asked for by [`Machine::next_deadline`] fired (or any time
    /// at or after it: what is due at `now` is done).
    pub fn on_timer(&mut self, sess: &mut Session, now: Instant) -> Result<(), FetchError> {
        if let Some(t) = self.busy_until {
            if now >= t {
                // The imitated host handled what it received; it sends and
                // reads again.
                self.busy_until = None;
                sess.busy_until(t);
            }
            return Ok(());
        }
        if self.out.deadline().is_some_and(|t| now >= t) {
            self.flush(sess, FlushReason::Timer, now);
        }
        if self.awaiting() {
            self.check_guards(sess, now)?;
        }
        Ok(())
    }

    /// The object whose response is awaited.
    fn awaited(&self) -> ObjId {
        self.resp
            .as_ref()
            .map(|r| r.0)
            .or(self.in_flight.front().copied())
            .unwrap_or(PAGE)
    }

    /// Enforces the object deadline and the minimum rate (a byte
    /// every few seconds, or endless `100 Continue`s, must not hold a fetch).
    fn check_guards(&mut self, sess: &Session, now: Instant) -> Result<(), FetchError> {
        let t = sess.cfg.timeouts;
        let id = self.awaited();
        if now >= self.awaited_since + t.object {
            return Err(FetchError::ObjectDeadline {
                url: sess.url_of(id),
                after: t.object,
                received: self.awaited_bytes,
            });
        }
        if now >= self.last_progress + t.read {
            // Silence, not slowness: the read timeout's error.
            return Err(FetchError::ReadTimeout {
                url: sess.url_of(id),
                after: t.read,
            });
        }
        if t.min_rate > 0 && now >= self.window_start + t.read {
            let window = now.saturating_duration_since(self.window_start);
            let need = (t.min_rate as f64 * window.as_secs_f64()) as u64;
            if self.window_bytes < need {
                return Err(FetchError::TooSlow {
                    url: sess.url_of(id),
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

    /// Where the caller reads into (no copy); then [`Machine::on_read`].
    pub fn read_buf(&mut self) -> &mut BytesMut {
        &mut self.rbuf
    }

    /// `data` arrived (the scripted tests' way; the driver reads into
    /// [`Machine::read_buf`]).
    #[cfg(test)]
    pub fn on_bytes(
        &mut self,
        sess: &mut Session,
        data: &[u8],
        now: Instant,
    ) -> Result<(), FetchError> {
        self.rbuf.extend_from_slice(data);
        self.on_read(sess, data.len(), now)
    }

    /// `n` more bytes are at the end of [`Machine::read_buf`].
    pub fn on_read(
        &mut self,
        sess: &mut Session,
        n: usize,
        now: Instant,
    ) -> Result<(), FetchError> {
        self.last_progress = now;
        self.window_bytes += n as u64;
        self.awaited_bytes += n as u64;
        sess.read(self.id, n, now);
        self.process(sess, now)?;
        // The guards are checked here, on the read path, and not only when
        // the timer fires: a socket that is always readable (a 1xx flood,
        // an endless chunked body) may never let the timer run.
        if !self.eof && self.awaiting() {
            self.check_guards(sess, now)?;
        }
        Ok(())
    }

    /// Reading failed with a reset (paper 001 "Connection Management": the
    /// server closed both halves while our requests were arriving). Data
    /// the kernel discarded is gone: the partial response, if any, is
    /// forgotten and re-requested.
    pub fn on_reset(&mut self) {
        self.eof = true;
        self.reset = true;
    }

    /// The socket failed in a way that is neither a FIN nor a reset: treat
    /// it as the end of the stream without delivering anything more.
    pub fn on_lost(&mut self) {
        self.eof = true;
    }

    fn route(&mut self, ids: Vec<ObjId>) {
        if self.own {
            self.queue.extend(ids);
        } else if !ids.is_empty() {
            self.effects.push_back(Effect::Dispatch(ids));
        }
    }

    /// Parses and delivers everything complete in the read buffer.
    fn process(&mut self, sess: &mut Session, now: Instant) -> Result<(), FetchError> {
        // Bounded: each pass consumes a head or body bytes from `rbuf`, or
        // stops.
        loop {
            if self.resp.is_none() {
                if self.rbuf.is_empty() || self.closing {
                    if self.closing && !self.rbuf.is_empty() {
                        // Bytes after a `Connection: close` response.
                        return Err(self.unexpected_bytes(sess));
                    }
                    return Ok(());
                }
                let Some(&id) = self.in_flight.front() else {
                    return Err(self.unexpected_bytes(sess));
                };
                if !self.on_head(sess, id, now)? {
                    return Ok(());
                }
                continue;
            }
            let (id, dec) = self.resp.as_mut().expect("checked above");
            let id = *id;
            match dec.decode(&mut self.rbuf) {
                Ok(Decoded::Data(b)) => {
                    let new = sess.on_body(id, &b, now)?;
                    self.route(new);
                }
                Ok(Decoded::NeedMore) => return Ok(()),
                Ok(Decoded::Done) => self.complete(sess, id, now)?,
                Err(e) => {
                    return Err(FetchError::object(
                        &sess.url_of(id),
                        format!("the server sent a malformed body: {}", e.reason()),
                    ))
                }
            }
        }
    }

    /// Reads the head of `id`'s response if it is complete: false if more
    /// bytes are needed.
    fn on_head(&mut self, sess: &mut Session, id: ObjId, now: Instant) -> Result<bool, FetchError> {
        let method = sess.method_of(id);
        let head = match self.heads.parse(&mut self.rbuf, &method) {
            Ok(None) => return Ok(false),
            Ok(Some(h)) => h,
            Err(e) => {
                let hint = if self.answered > 0 {
                    " (the previous response may have had a wrong length)"
                } else {
                    ""
                };
                return Err(FetchError::object(
                    &sess.url_of(id),
                    // What the server did; never the status a server
                    // would answer with (`e`'s Display has one).
                    format!(
                        "the server sent a malformed response head: {}{hint}",
                        e.reason()
                    ),
                ));
            }
        };
        let (info, new) = sess.on_head(id, self.id, &head, now)?;
        self.route(new);
        if info.interim {
            // Interim heads are not progress toward the response.
            let n = head.raw().len() as u64;
            self.window_bytes = self.window_bytes.saturating_sub(n);
            self.awaited_bytes = self.awaited_bytes.saturating_sub(n);
            self.interim += 1;
            if self.interim > MAX_INTERIM_RESPONSES {
                return Err(FetchError::object(
                    &sess.url_of(id),
                    format!(
                        "the server sent more than {MAX_INTERIM_RESPONSES} interim (1xx) responses and no final one"
                    ),
                ));
            }
            return Ok(true);
        }
        if info.closing {
            self.closing = true;
        }
        self.head_at = now;
        self.resp = Some((id, Decoder::new(head.body_framing(), self.heads.limits())));
        Ok(true)
    }

    fn complete(&mut self, sess: &mut Session, id: ObjId, now: Instant) -> Result<(), FetchError> {
        self.resp = None;
        // The next response is awaited from now; bytes of it already read
        // are not counted (small, and only ever in its favour).
        self.awaited_since = now;
        self.awaited_bytes = 0;
        self.interim = 0;
        let front = self.in_flight.pop_front();
        debug_assert_eq!(front, Some(id));
        self.answered += 1;
        self.last_answered = Some(id);
        if id == PAGE && sess.cfg.flush_at_page_end {
            self.page_end_flush = true;
        }
        let per_object = sess.cfg.host_cost.per_object;
        // Every object this response carried is a part the host handles:
        // those it completes now (a GETALL's parts, the page) and those it
        // completed while it streamed in (a package's files).
        let before = if per_object.is_zero() {
            0
        } else {
            sess.records_done().saturating_sub(sess.parts_streamed(id))
        };
        let new = sess.on_end(id, now)?;
        if !per_object.is_zero() {
            let parts = sess.records_done().saturating_sub(before);
            self.busy_until = Some(busy_after(
                self.busy_until,
                self.head_at,
                now,
                parts.max(1) as u32,
                per_object,
            ));
        }
        self.route(new);
        Ok(())
    }

    /// The server closed its side (FIN).
    pub fn on_eof(&mut self, sess: &mut Session, now: Instant) -> Result<(), FetchError> {
        self.eof = true;
        // No more bytes will come: the head parser's verdict on a partial
        // head is due now (a fault it had not been asked about yet).
        self.heads.reset();
        self.process(sess, now)?;
        // Bounded: each pass consumes buffered body bytes or ends the response.
        while let Some((id, dec)) = self.resp.as_mut() {
            let id = *id;
            let remaining = dec.remaining();
            match dec.decode_eof(&mut self.rbuf) {
                Ok(Decoded::Data(b)) => {
                    let new = sess.on_body(id, &b, now)?;
                    self.route(new);
                }
                Ok(Decoded::Done) => self.complete(sess, id, now)?,
                Ok(Decoded::NeedMore) => break,
                Err(_) => {
                    let detail = match remaining {
                        Some(n) => {
                            format!("{n} bytes of its body missing (Content-Length promised more)")
                        }
                        None => "its chunked body unfinished".to_string(),
                    };
                    return Err(FetchError::object(
                        &sess.url_of(id),
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
                    &sess.url_of(id),
                    "truncated response: the server closed the connection in the middle of the response head",
                ),
                None => self.unexpected_bytes(sess),
            });
        }
        Ok(())
    }

    fn unexpected_bytes(&self, sess: &Session) -> FetchError {
        let n = self.rbuf.len();
        match self.last_answered {
            Some(id) => FetchError::object(
                &sess.url_of(id),
                format!("{n} unexpected bytes after its response (wrong Content-Length?)"),
            ),
            None => FetchError::object(
                &sess.url_of(PAGE),
                format!("{n} bytes arrived before any request was sent"),
            ),
        }
    }
}
