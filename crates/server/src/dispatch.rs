//! The connection loop: when bytes move. Reads requests, lets the handler
//! write responses into the output queue, and applies the flush and close
//! policies of paper 001:
//!
//! * flush when the queue is full, when no complete request is left in the
//!   input buffer, or before going idle — never per response unless
//!   `FlushPolicy::EachResponse` says so;
//! * pipelined requests are answered in order, from one input buffer;
//! * close with `Connection: close` on the last response, then half-close and
//!   drain (lingering close) so requests still in flight cannot make the
//!   kernel reset the connection and destroy responses already sent.
//!
//! An idle connection owns no buffers: they go back to the worker's pool
//! before the connection waits for its next request.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;

use bytes::{Buf, BytesMut};
use pagewire_h1::{BodyFraming, Decoded, Decoder, HeadScanner, Method, RequestHead, Version};
use tokio::net::TcpStream;

use crate::context::Worker;
use crate::io::{WriteBuf, WriteStep};
use crate::park::{self, Parked};
use crate::policy::{
    ClosePolicy, FlushPolicy, FlushReason, MAX_PREFETCH_HINTS, MAX_SKIPPED_BODY_BYTES,
    READ_CHUNK_BYTES,
};
use crate::registry::{Phase, Reason, SlotRef};
use crate::respond::{self, Answered, ConnHeader, Ctx};
use crate::stats::bump;
use crate::target::{self, Target};

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The server sent `Connection: close` and closed.
    ServerClosed,
    /// The client closed between requests.
    ClientClosed,
    /// Ended by the sweeper or eviction (reason in the slot).
    Ended(Reason),
    IoError,
    /// Idle long enough to be parked (`park`): not ended.
    Parked,
}

/// What `next_step` did.
enum Step {
    /// No complete request in the input buffer.
    Drained,
    /// A response was queued; the connection stays open.
    Answered,
    /// A response saying `Connection: close` was queued.
    Close,
    /// A prefetch request, to be answered after other connections had a turn.
    LowPriority(Box<RequestHead>),
    /// A complete head whose body (GETLIST's uri-list) is still arriving.
    AwaitBody,
    /// A request whose answer waits a recorded server think time first.
    Think(Box<RequestHead>, std::time::Duration),
}

struct Conn {
    w: Rc<Worker>,
    stream: TcpStream,
    peer: SocketAddr,
    /// The registry's slot (and key) for this connection.
    slot: SlotRef,
    inbuf: Option<BytesMut>,
    /// How far the head in `inbuf` has been scanned (16 bytes): a head that
    /// arrives a byte per read costs O(head), not O(head²) (docs/h1.md).
    scanner: HeadScanner,
    out: WriteBuf,
    /// Responses written on this connection.
    served: u64,
    /// The phase last recorded in the slot (to keep a head's start time).
    phase: Phase,
    scratch: String,
    /// Prefetch `Link` field for the current response.
    link: Vec<u8>,
    /// While a request body is awaited: the input bytes already credited
    /// toward the body minimum rate (0: no body awaited) ...
    body_counted: u64,
    /// ... and the credited start of the body deadline (coarse ms).
    body_anchor_ms: u64,
    /// The park's tick this task's waker was last registered for
    /// (`wait_idle`), so it registers once per tick.
    tick_seen: u32,
}

/// A new connection's task: registered at once, then run.
pub(crate) fn run_conn(
    w: Rc<Worker>,
    stream: TcpStream,
    peer: SocketAddr,
) -> impl std::future::Future<Output = ()> {
    let slot = w.shared.registry.register(stream.as_raw_fd());
    drive(Conn::new(w, stream, peer, slot, 0, Phase::Fresh))
}

/// Takes up a parked connection whose socket became readable: a new task.
fn resume_conn(w: Rc<Worker>, p: Parked) {
    let Parked {
        stream,
        slot,
        served,
    } = p;
    let stream = match TcpStream::from_std(stream) {
        Ok(s) => s,
        Err(_) => {
            // Registration failed (rare: out of memory) and `from_std`
            // closed the socket; the slot goes now.
            return lost_in_handover(&w, slot.key());
        }
    };
    let peer = stream
        .peer_addr()
        .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    tokio::task::spawn_local(drive(Conn::new(w, stream, peer, slot, served, Phase::Idle)));
}

/// The park task's view of the worker: a resumed connection is a new
/// connection task.
impl park::Host for Worker {
    fn park(&self) -> &park::Park {
        &self.park
    }
    fn shrink_pools(&self, keep: usize) {
        self.pools.shrink(keep);
    }
    fn resume(self: Rc<Self>, p: Parked) {
        resume_conn(self, p);
    }
}

/// A socket that failed to move between tokio and the parking epoll: an
/// I/O error, and the connection is gone with its registry slot.
fn lost_in_handover(w: &Worker, key: usize) {
    bump(&w.stats.io_errors, 1);
    w.shared.registry.unregister(key);
    w.conn_closed();
}

/// Runs a connection until it ends or is parked. (An `async` block, not an
/// `async fn`: a moved-in parameter would be stored twice in the future.)
#[allow(clippy::manual_async_fn)]
fn drive(mut conn: Conn) -> impl std::future::Future<Output = ()> {
    async move {
        let end = conn.run().await;
        let w = conn.w.clone();
        if end == End::Parked {
            // Idle, no buffers held (`wait_idle` checked): only the socket and
            // the registry slot stay.
            let Conn {
                stream,
                slot,
                served,
                ..
            } = conn;
            let key = slot.key();
            let parked = stream.into_std().map(|stream| Parked {
                stream,
                slot,
                served,
            });
            match parked {
                Ok(p) => {
                    if let Err(p) = w.park.park(p) {
                        // The kernel refused the park: stay a task.
                        resume_conn(w.clone(), p);
                    }
                }
                Err(_) => lost_in_handover(&w, key),
            }
            return;
        }
        let stats = &w.stats;
        match end {
            End::ServerClosed | End::Parked => {}
            End::ClientClosed => bump(&stats.closed_by_client, 1),
            End::IoError => match conn.slot.reason() {
                Reason::SendTimeout => bump(&stats.send_timeouts, 1),
                Reason::None => bump(&stats.io_errors, 1),
                r => count_reason(&w, r),
            },
            End::Ended(r) => count_reason(&w, r),
        }
        conn.release_buffers(true);
        // Unregister before the socket is closed (drop), so the sweeper never
        // pokes a file descriptor number that was reused.
        w.shared.registry.unregister(conn.slot.key());
        drop(conn);
        w.conn_closed();
    }
}

fn count_reason(w: &Worker, r: Reason) {
    let s = &w.stats;
    match r {
        Reason::IdleTimeout => bump(&s.idle_timeouts, 1),
        Reason::HeaderTimeout => bump(&s.header_timeouts, 1),
        Reason::SendTimeout => bump(&s.send_timeouts, 1),
        Reason::BodyTimeout => bump(&s.body_timeouts, 1),
        Reason::Evicted => bump(&s.evictions, 1),
        Reason::Shutdown => bump(&s.closed_by_shutdown, 1),
        Reason::None => bump(&s.closed_by_client, 1),
    }
}

/// Whether a request is a prefetch (Sec-Purpose: prefetch, Fetch Metadata;
/// also the older `Purpose: prefetch`).
/// `Link: <a>; rel=prefetch, <b>; rel=prefetch` field value (at most
/// `MAX_PREFETCH_HINTS` targets), appended to `link`.
fn write_link_hints<'a>(link: &mut Vec<u8>, hints: impl Iterator<Item = &'a String>) {
    for (n, hint) in hints.take(MAX_PREFETCH_HINTS).enumerate() {
        link.extend_from_slice(if n == 0 { b"<" } else { b", <" });
        respond::encode_link_target(hint, link);
        link.extend_from_slice(b">; rel=prefetch");
    }
}

fn is_prefetch(head: &RequestHead) -> bool {
    let has = |name: &str| {
        head.headers(name).any(|v| {
            v.split(|&b| b == b';' || b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"prefetch"))
        })
    };
    has("sec-purpose") || has("purpose")
}

impl Conn {
    fn new(
        w: Rc<Worker>,
        stream: TcpStream,
        peer: SocketAddr,
        slot: SlotRef,
        served: u64,
        phase: Phase,
    ) -> Conn {
        Conn {
            w,
            stream,
            peer,
            slot,
            inbuf: None,
            scanner: HeadScanner::new(),
            out: WriteBuf::new(),
            served,
            phase,
            scratch: String::new(),
            link: Vec::new(),
            body_counted: 0,
            body_anchor_ms: 0,
            tick_seen: u32::MAX,
        }
    }

    fn release_buffers(&mut self, closing: bool) {
        let pools = &self.w.pools;
        if let Some(b) = self.inbuf.take() {
            if closing || b.is_empty() {
                pools.give_read(b);
            } else {
                self.inbuf = Some(b);
            }
        }
        self.out
            .release(pools, self.w.shared.config.out_buffer_bytes);
    }

    fn set_phase(&mut self, phase: Phase) {
        if self.phase != phase {
            self.phase = phase;
            self.slot.set(phase, self.w.shared.registry.clock.now_ms());
        }
    }

    /// Bytes arrived. A head deadline runs for the whole head from its
    /// first byte (from the accept for a connection's first request): once
    /// reading a head, more bytes of the same head never restart it. The
    /// connection becomes busy only when a complete head is parsed.
    fn note_input(&mut self) {
        match self.phase {
            // A body's deadline is credited when the input is parsed again.
            Phase::ReadingHead | Phase::ReadingBody => {}
            // The first head's deadline counts from the accept, like the
            // silent connection's.
            Phase::Fresh => {
                self.phase = Phase::ReadingHead;
                self.slot.relabel(Phase::ReadingHead);
            }
            _ => self.set_phase(Phase::ReadingHead),
        }
    }

    /// A request body is awaited and `buffered` bytes are in the input
    /// buffer: every `body_min_rate` bytes that arrived since the last call
    /// move the deadline's start one second forward, never past now, so the
    /// sweeper ends a body slower than the rate (like the head deadline,
    /// no timer per request).
    fn note_body_wait(&mut self, buffered: u64) {
        let now = self.w.shared.registry.clock.now_ms();
        let rate = self.w.shared.config.body_min_rate;
        if self.body_counted == 0 {
            self.body_anchor_ms = now;
        } else {
            // Rate 0: no credit, the whole body within the timeout.
            let new = buffered.saturating_sub(self.body_counted);
            let credit = new.saturating_mul(1000).checked_div(rate).unwrap_or(0);
            self.body_anchor_ms = self.body_anchor_ms.saturating_add(credit).min(now);
        }
        self.body_counted = buffered.max(1);
        self.phase = Phase::ReadingBody;
        self.slot.set(Phase::ReadingBody, self.body_anchor_ms);
    }

    fn set_busy(&mut self) {
        if self.phase != Phase::Busy {
            self.phase = Phase::Busy;
            self.slot.set_busy();
        }
    }

    async fn run(&mut self) -> End {
        let flush_bytes = self.w.shared.config.out_buffer_bytes;
        let flush_policy = self.w.shared.config.flush;
        let prefetch_on = self.w.shared.predictor.is_some();
        loop {
            // 1. Answer every complete request in the input buffer, in order.
            let mut closing = false;
            let mut awaiting_body = false;
            loop {
                match self.next_step(prefetch_on, flush_bytes) {
                    Step::Drained => break,
                    Step::AwaitBody => {
                        awaiting_body = true;
                        break;
                    }
                    Step::Close => {
                        closing = true;
                        break;
                    }
                    Step::Answered => {}
                    Step::LowPriority(head) => {
                        // Lower priority: first send what is queued, then let
                        // every other ready connection run.
                        if Box::pin(self.yield_for_low_priority()).await.is_err() {
                            return End::IoError;
                        }
                        if self.respond(&head) {
                            closing = true;
                            break;
                        }
                    }
                    Step::Think(head, wait) => {
                        // Send what is queued, wait (other connections of
                        // this worker run meanwhile), then answer.
                        if Box::pin(self.think(wait)).await.is_err() {
                            return End::IoError;
                        }
                        if self.respond(&head) {
                            closing = true;
                            break;
                        }
                    }
                }
                let flush = match flush_policy {
                    FlushPolicy::EachResponse => Some(FlushReason::EachResponse),
                    FlushPolicy::WhenIdle if self.out.should_flush(flush_bytes) => {
                        Some(FlushReason::Full)
                    }
                    FlushPolicy::WhenIdle => None,
                };
                if let Some(reason) = flush {
                    if self.flush(reason).await.is_err() {
                        return End::IoError;
                    }
                }
            }
            if closing {
                // Boxed, like every rare path: it would otherwise enlarge the
                // future of every connection, idle ones included.
                return Box::pin(self.close_after_response()).await;
            }
            // 2. No complete request left: flush (paper 001's second rule).
            if !self.out.is_empty() && self.flush(FlushReason::InputDrained).await.is_err() {
                return End::IoError;
            }
            // 3. Wait for more input.
            let buffered = self.inbuf.as_ref().map_or(0, BytesMut::len);
            if buffered == 0 {
                let reason = self.slot.reason();
                if reason != Reason::None {
                    return self.close_quietly(End::Ended(reason));
                }
                if self.w.shared.registry.is_shutting_down() {
                    return self.close_quietly(End::Ended(Reason::Shutdown));
                }
                // Idle: give the buffers back before waiting.
                self.release_buffers(false);
                if self.served > 0 {
                    self.set_phase(Phase::Idle);
                }
            } else if awaiting_body {
                self.note_body_wait(buffered as u64);
            } else {
                self.set_phase(Phase::ReadingHead);
            }
            if !awaiting_body {
                self.body_counted = 0;
            }
            let mut readable = false;
            if buffered == 0 && self.phase == Phase::Idle && self.inbuf.is_none() {
                match self.wait_idle().await {
                    Ok(true) => return End::Parked,
                    Ok(false) => readable = true,
                    Err(_) => return End::IoError,
                }
            }
            match self.read(readable).await {
                Ok(0) => {
                    let reason = self.slot.reason();
                    let late = match reason {
                        Reason::HeaderTimeout => Some("request head not received in time\n"),
                        Reason::BodyTimeout => Some("request body not received in time\n"),
                        _ => None,
                    };
                    if let (Some(why), true) = (late, buffered > 0) {
                        // RFC 9110 §15.5.9: 408 tells the client why.
                        self.out.ensure(&self.w.pools, flush_bytes);
                        let a =
                            respond::simple(&mut self.out, 408, ConnHeader::Close, &[], why, false);
                        self.account(&a, b"-");
                        let counter = if reason == Reason::BodyTimeout {
                            &self.w.stats.body_timeouts
                        } else {
                            &self.w.stats.header_timeouts
                        };
                        bump(counter, 1);
                        let _ = Box::pin(self.close_after_response()).await;
                        return End::ServerClosed;
                    }
                    let end = if reason == Reason::None {
                        End::ClientClosed
                    } else {
                        End::Ended(reason)
                    };
                    return self.close_quietly(end);
                }
                Ok(_) => self.note_input(),
                Err(_) => return End::IoError,
            }
        }
    }

    /// Parses the next request from the input buffer and answers it. Sync on
    /// purpose: a parsed head (~350 bytes with its inline field index) never
    /// lives across an `.await`, so it is not part of every connection's future.
    ///
    /// The head is parsed into a local of this frame and answered from
    /// there by reference: it is never copied (only the rare prefetch and
    /// think-time paths move it into a box).
    fn next_step(&mut self, prefetch_on: bool, flush_bytes: usize) -> Step {
        let Some(buf) = self.inbuf.as_mut().filter(|b| !b.is_empty()) else {
            return Step::Drained;
        };
        let mut head = RequestHead::empty();
        let parsed = self
            .scanner
            .parse_into(buf, &self.w.shared.config.limits, &mut head);
        match parsed {
            Ok(false) => return Step::Drained,
            Ok(true) => self.set_busy(),
            Err(e) => {
                self.set_busy();
                self.out.ensure(&self.w.pools, flush_bytes);
                self.answer_error(&e, b"-");
                return Step::Close;
            }
        }
        if let Some(buf) = self.inbuf.as_mut() {
            if crate::getall::wait_for_body(&head, buf) {
                return Step::AwaitBody; // GETLIST's uri-list is still arriving
            }
        }
        self.out.ensure(&self.w.pools, flush_bytes);
        if prefetch_on && is_prefetch(&head) {
            return Step::LowPriority(Box::new(head));
        }
        let think = self.w.shared.handler.think_time(&head);
        if !think.is_zero() {
            return Step::Think(Box::new(head), think);
        }
        if self.respond(&head) {
            Step::Close
        } else {
            Step::Answered
        }
    }

    /// Queues the answer to a malformed request (its status, a one-line
    /// reason, `Connection: close`).
    fn answer_error(&mut self, e: &pagewire_h1::Error, request: &[u8]) {
        let mut body = String::with_capacity(64);
        body.push_str(e.reason());
        body.push('\n');
        let a = respond::simple(
            &mut self.out,
            e.status(),
            ConnHeader::Close,
            &[],
            &body,
            false,
        );
        bump(&self.w.stats.malformed, 1);
        self.account(&a, request);
    }

    /// Waits, idle and holding no buffer, for input; true when the
    /// connection has been idle for the park's `park_after` instead (it is
    /// then parked: `park`).
    async fn wait_idle(&mut self) -> io::Result<bool> {
        use std::task::Poll;
        let (stream, slot, out) = (&self.stream, &self.slot, &self.out);
        let (park, clock) = (&self.w.park, &self.w.shared.registry.clock);
        let tick_seen = &mut self.tick_seen;
        let park_after = park.park_after.as_millis() as u64;
        let start = park.epoch.get();
        // No waiter lives in this future (the socket's readiness keeps its
        // own): a waiting connection's future stays small.
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = stream.poll_read_ready(cx) {
                return Poll::Ready(r.map(|()| false));
            }
            let epoch = park.epoch.get();
            // Only at a tick during this wait: a connection just taken up
            // from the park has not seen its socket's readiness yet.
            if epoch != start
                && slot.reason() == Reason::None
                && out.is_empty()
                && slot
                    .idle_for(clock.now_ms())
                    .is_some_and(|t| t >= park_after)
            {
                return Poll::Ready(Ok(true));
            }
            if *tick_seen != epoch {
                // Registered once per tick (the waker stays valid for
                // every wait of this task).
                *tick_seen = epoch;
                park.wakers.borrow_mut().push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Reads once into the input buffer (borrowed from the pool if needed).
    ///
    /// Waits for readiness *before* taking a buffer, so an idle connection
    /// holds none. The read itself goes through `AsyncRead`, whose short-read
    /// rule clears the readiness flag when the kernel returned less than asked:
    /// the next wait then goes straight to epoll instead of costing one more
    /// `read` that would only say EAGAIN (one system call per keep-alive
    /// request saved). `readable`: the caller has just seen the socket
    /// readable (`wait_idle`), so there is nothing to wait for.
    async fn read(&mut self, readable: bool) -> io::Result<usize> {
        use tokio::io::AsyncReadExt as _;
        if !readable {
            self.stream.readable().await?;
        }
        let buf = match &mut self.inbuf {
            Some(b) => b,
            None => self.inbuf.insert(self.w.pools.take_read()),
        };
        if buf.capacity() - buf.len() < READ_CHUNK_BYTES / 2 {
            buf.reserve(READ_CHUNK_BYTES);
        }
        self.stream.read_buf(buf).await
    }

    /// Before a prefetch request: send what is queued, then let every other
    /// ready connection of this worker run first.
    async fn yield_for_low_priority(&mut self) -> io::Result<()> {
        self.flush(FlushReason::BeforeLowPriority).await?;
        tokio::task::yield_now().await;
        Ok(())
    }

    /// Before a response with a recorded server think time: send what is
    /// queued, then wait that long.
    async fn think(&mut self, wait: std::time::Duration) -> io::Result<()> {
        self.flush(FlushReason::BeforeThink).await?;
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Writes the whole output queue, one vectored write per attempt.
    async fn flush(&mut self, reason: FlushReason) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.w.stats.flush(reason);
        loop {
            match self.out.write_once(&self.stream) {
                Ok((step, n)) => {
                    bump(&self.w.stats.writes, 1);
                    bump(&self.w.stats.bytes_written, n as u64);
                    if let WriteStep::Done = step {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.set_phase(Phase::Writing);
                    self.stream.writable().await?;
                    self.set_busy();
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Answers one request; returns true when it was the last one.
    fn respond(&mut self, head: &RequestHead) -> bool {
        self.served += 1;
        // The next body awaited starts its own deadline.
        self.body_counted = 0;
        let w = Rc::clone(&self.w);
        let shared = &w.shared;
        bump(&w.stats.requests, 1);

        // A body we do not want: skip it if it is small and already here,
        // otherwise answer and close (reading it would be waste).
        let mut body_left_behind = false;
        let mut body_error = None;
        let mut body = Vec::new();
        match head.body_framing() {
            Ok(BodyFraming::Empty) => {}
            Ok(framing) => {
                let buf = self
                    .inbuf
                    .as_mut()
                    .expect("a parsed head came from the buffer");
                match framing {
                    BodyFraming::Length(n)
                        if n <= MAX_SKIPPED_BODY_BYTES && (buf.len() as u64) >= n =>
                    {
                        body = buf[..n as usize].to_vec(); // GETLIST's uri-list (getall.rs)
                        buf.advance(n as usize);
                    }
                    BodyFraming::Chunked => {
                        let mut dec = Decoder::new(framing, &shared.config.limits);
                        let mut skipped = 0u64;
                        loop {
                            match dec.decode(buf) {
                                Ok(Decoded::Data(d)) => {
                                    skipped += d.len() as u64;
                                    if skipped > MAX_SKIPPED_BODY_BYTES {
                                        body_left_behind = true;
                                        break;
                                    }
                                }
                                Ok(Decoded::Done) => break,
                                Ok(Decoded::NeedMore) => {
                                    body_left_behind = true;
                                    break;
                                }
                                Err(e) => {
                                    body_error = Some(e);
                                    break;
                                }
                            }
                        }
                    }
                    _ => body_left_behind = true,
                }
            }
            Err(_) => body_left_behind = true,
        }

        if let Some(e) = body_error {
            // The request is malformed, not only its body: answer that,
            // like nginx (400), rather than the resource.
            self.out.ensure(&w.pools, shared.config.out_buffer_bytes);
            self.answer_error(&e, head.raw());
            return true;
        }

        let cfg = &shared.config;
        let keep_alive = head.wants_keep_alive()
            && !body_left_behind
            && cfg.max_requests.is_none_or(|max| self.served < max)
            && !shared.registry.is_shutting_down()
            && self.slot.reason() == Reason::None;
        let conn = if !keep_alive {
            ConnHeader::Close
        } else if head.version() == Version::Http10 {
            ConnHeader::KeepAlive
        } else {
            ConnHeader::None
        };

        self.link.clear();
        if let Some(predictor) = &shared.predictor {
            if let Some(sent) = shared.handler.getall_sent_paths(head, &body) {
                // Paper 003 §7.3: "In case of a GETALL or GETLIST request,
                // the modified httpd will convey this fact to prefetchd so
                // that the latter is aware that all the files corresponding
                // to the GETALL or GETLIST have already been sent to the
                // client and hence need not be considered as candidates for
                // being prefetched": every object of the answer is an access
                // the predictor learns from, and none of them is hinted.
                let mut hints: Vec<String> = Vec::new();
                for p in &sent {
                    for h in predictor.observe(self.peer.ip(), p) {
                        if !hints.contains(&h) {
                            hints.push(h);
                        }
                    }
                }
                let hints = hints
                    .iter()
                    .filter(|h| !sent.contains(h) && shared.handler.contains(h));
                write_link_hints(&mut self.link, hints);
            } else if matches!(head.method(), Method::Get | Method::Head) {
                let mut scratch = String::new();
                if let Ok(Target::Path { path, .. }) = target::parse(head.target(), &mut scratch) {
                    if shared.handler.contains(path) {
                        let hints = if is_prefetch(head) {
                            predictor.advise(path)
                        } else {
                            predictor.observe(self.peer.ip(), path)
                        };
                        let hints = hints
                            .iter()
                            .filter(|h| h.as_str() != path && shared.handler.contains(h));
                        write_link_hints(&mut self.link, hints);
                    }
                }
            }
        }

        let ctx = Ctx {
            conn,
            extra: &self.link,
            scratch: &mut self.scratch,
            body: &body,
        };
        let answered = shared.handler.answer(head, ctx, &mut self.out);
        self.account(&answered, head.raw());
        !keep_alive
    }

    /// Counts an answer, and logs it when an access log is on. `request`
    /// is the request's head (or a placeholder such as `-`); only its first
    /// line is logged, found only when there is a log to write.
    fn account(&self, a: &Answered, request: &[u8]) {
        let s = &self.w.stats;
        bump(&s.status[(a.status / 100).min(5) as usize], 1);
        bump(&s.body_bytes, a.body_bytes);
        if let Some(log) = self.w.log.borrow_mut().as_mut() {
            let line_end = request
                .iter()
                .position(|&b| b == b'\r' || b == b'\n')
                .unwrap_or(request.len());
            let request_line = &request[..line_end];
            let dropped = log.line(self.peer.ip(), request_line, a.status, a.body_bytes);
            bump(&s.log_dropped, dropped);
        }
    }

    /// After a response that said `Connection: close`.
    async fn close_after_response(&mut self) -> End {
        if self.flush(FlushReason::Closing).await.is_err() {
            return End::IoError;
        }
        match self.w.shared.config.close {
            ClosePolicy::Abrupt => {
                // Both halves at once: any unread pipelined request still in
                // the receive queue makes close(2) send RST.
                bump(&self.w.stats.closes_abrupt, 1);
            }
            ClosePolicy::Linger => {
                // Boxed: the lingering state (a timer) is rare and should not
                // enlarge every connection's future.
                Box::pin(self.linger()).await;
                bump(&self.w.stats.closes_lingering, 1);
            }
        }
        End::ServerClosed
    }

    /// Half-close, then read and discard until EOF, the time bound or the
    /// byte bound (paper 001, "Connection Management").
    async fn linger(&mut self) {
        let _ = socket2::SockRef::from(&self.stream).shutdown(std::net::Shutdown::Write);
        self.set_phase(Phase::Lingering);
        let bounds = self.w.shared.config.linger;
        let deadline = tokio::time::Instant::now() + bounds.timeout;
        let mut discarded = 0u64;
        let buf = match &mut self.inbuf {
            Some(b) => b,
            None => self.inbuf.insert(self.w.pools.take_read()),
        };
        discarded += buf.len() as u64;
        buf.clear();
        loop {
            match tokio::time::timeout_at(deadline, self.stream.readable()).await {
                Err(_) | Ok(Err(_)) => break,
                Ok(Ok(())) => {}
            }
            buf.clear();
            buf.reserve(READ_CHUNK_BYTES);
            match self.stream.try_read_buf(buf) {
                Ok(0) => break,
                Ok(n) => {
                    discarded += n as u64;
                    if discarded > bounds.max_bytes {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => break,
            }
        }
        buf.clear();
        bump(&self.w.stats.linger_discarded_bytes, discarded);
    }

    /// Closing with nothing pending (client EOF, idle timeout, eviction):
    /// shut the write side (FIN) and let the drop close the socket.
    fn close_quietly(&mut self, end: End) -> End {
        let _ = socket2::SockRef::from(&self.stream).shutdown(std::net::Shutdown::Write);
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::Handler;
    use crate::context::Shared;
    use crate::io::Pools;
    use crate::policy::ServerConfig;
    use crate::registry::{Deadlines, Registry};
    use crate::stats::WorkerStats;
    use std::sync::Arc;
    use std::time::Duration;

    /// Every open connection that is not parked costs one task holding this
    /// future, its socket registration and its registry slot. (A parsed
    /// head held across an await once made this 1472 bytes; 672 with the
    /// 16-byte head scanner; 576 once the connection stopped being stored
    /// twice, as an `async fn` parameter and as its local.) A parked
    /// connection holds none of it: see `parked_connection_is_small`.
    #[test]
    fn connection_future_stays_small() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _client = std::net::TcpStream::connect(addr).unwrap();
            let (stream, peer) = listener.accept().await.unwrap();
            let d = Duration::from_secs(1);
            let shared = Arc::new(Shared {
                handler: Handler::from(Arc::new(pagewire_site::store::Site::default())),
                config: ServerConfig::default(),
                registry: Registry::new(Deadlines {
                    idle: d,
                    header: d,
                    send: d,
                    body: d,
                    grace: d,
                }),
                predictor: None,
                max_conns: 1,
                totals: Default::default(),
            });
            let w = Rc::new(Worker::new_for_test(shared, WorkerStats::default(), Pools::default()));
            let fut = run_conn(w, stream, peer);
            let size = std::mem::size_of_val(&fut);
            eprintln!(
                "connection future: {size} bytes (Conn {}, TcpStream {}, WriteBuf {}, SocketAddr {})",
                std::mem::size_of::<Conn>(),
                std::mem::size_of::<TcpStream>(),
                std::mem::size_of::<WriteBuf>(),
                std::mem::size_of::<SocketAddr>()
            );
            assert!(size <= 640, "connection future is {size} bytes");
        });
    }

    /// What a parked connection keeps besides its socket and registry slot.
    #[test]
    fn parked_connection_is_small() {
        let size = std::mem::size_of::<Parked>();
        eprintln!("parked connection: {size} bytes");
        assert!(size <= 32, "a parked connection is {size} bytes");
    }

    fn test_shared(idle: Duration) -> Arc<Shared> {
        let d = Duration::from_secs(5);
        Arc::new(Shared {
            handler: Handler::from(Arc::new(pagewire_site::store::Site::default())),
            config: ServerConfig::default(),
            registry: Registry::new(Deadlines {
                idle,
                header: d,
                send: d,
                body: d,
                grace: d,
            }),
            predictor: None,
            max_conns: 4,
            totals: Default::default(),
        })
    }

    /// Reads one response (head and Content-Length body) and returns its
    /// status line.
    async fn read_response(client: &mut tokio::net::TcpStream) -> String {
        use tokio::io::AsyncReadExt as _;
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        // Bounded by the server's answer (the test's caller times it out).
        loop {
            if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&got[..end]).to_string();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + len {
                    return head.lines().next().unwrap_or("").to_string();
                }
            }
            let n = client.read(&mut chunk).await.unwrap();
            assert!(n > 0, "server closed before a whole response");
            got.extend_from_slice(&chunk[..n]);
        }
    }

    /// Yields until `done` holds (bounded by five seconds).
    async fn until(what: &str, done: impl Fn() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting: {what}"
            );
            tokio::task::yield_now().await;
        }
    }

    /// An idle keep-alive connection stops being a task (parked), its next
    /// request brings it back and is answered on the same connection, and
    /// the idle timeout still ends a parked connection (the sweeper's
    /// shutdown wakes it), counted as such, with its slot unregistered.
    #[test]
    fn idle_connection_is_parked_resumed_and_timed_out() {
        use tokio::io::AsyncWriteExt as _;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let shared = test_shared(Duration::from_millis(1));
            let w = Rc::new(Worker::new_for_test(
                shared.clone(),
                WorkerStats::default(),
                Pools::default(),
            ));
            tokio::task::spawn_local(crate::park::run(w.clone()));
            let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (stream, peer) = listener.accept().await.unwrap();
            tokio::task::spawn_local(run_conn(w.clone(), stream, peer));
            let request = b"GET /missing HTTP/1.1\r\nHost: a\r\n\r\n";

            client.write_all(request).await.unwrap();
            assert!(read_response(&mut client).await.starts_with("HTTP/1.1 404"));
            until("parked", || w.park.len() == 1).await;
            assert_eq!(w.park.parks.get(), 1);
            assert_eq!(w.conns.get(), 1, "a parked connection is still open");

            client.write_all(request).await.unwrap();
            assert!(read_response(&mut client).await.starts_with("HTTP/1.1 404"));
            assert_eq!(w.park.resumes.get(), 1);
            assert_eq!(w.stats.requests.get(), 2);

            // Parked again; the idle timeout (1 ms) ends it from there.
            until("parked again", || w.park.len() == 1).await;
            until("idle timeout", || {
                shared.registry.sweep();
                w.conns.get() == 0
            })
            .await;
            assert_eq!(w.stats.idle_timeouts.get(), 1);
            assert_eq!(w.park.len(), 0);
            let mut rest = Vec::new();
            use tokio::io::AsyncReadExt as _;
            let n = tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut rest))
                .await
                .expect("the server closes the connection")
                .unwrap();
            assert_eq!(n, 0, "nothing after the responses");
        });
    }
}
