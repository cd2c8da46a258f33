//! Stateful head parsers for connections: same verdicts as
//! [`parse_request`] and [`parse_response`], but they remember how far they
//! have looked, so a head that arrives in many small reads costs O(head) in
//! total instead of O(head²) (each stateless call re-parses the whole
//! partial head; with a 64 KiB head limit and 1-byte reads that is ~2 G
//! byte-steps per head: a cheap slow-sender DoS on a server, and a slow
//! server's cost on the robot and the load generator).
//!
//! They scan only new bytes for line ends and ask the full parser for a
//! verdict only when one can change: the start line completed, the end of
//! the head arrived, a line or the whole head passed its limit, or a bare
//! CR appeared among leading empty lines; for a response also once when
//! the status line holds its version and code (13 bytes), so a peer that
//! does not speak HTTP is named before its first line ends. Because the
//! full parser's error kind depends only on the bytes up to the fault (see
//! `head::diagnose`), asking later never changes the answer; it can only
//! delay an error until the next trigger. At the end of the stream,
//! [`ResponseParser::parse_at_eof`] asks at once.
//!
//! Cost: every byte of a head is scanned once for line ends, and the full
//! parser runs at most five times per head (first read, status-line prefix,
//! start line complete, end of head, a limit passed), each over at most the
//! head limit: a bounded number of looks per byte, however the head is
//! split (`tests::each_byte_is_examined_a_bounded_number_of_times`;
//! `benches/head_scan.rs` times it).

use bytes::BytesMut;

use crate::error::Error;
use crate::head::{
    consume_response_into, parse_request, parse_request_into, parse_response, parse_response_into,
    RequestHead, ResponseHead,
};
use crate::limits::Limits;
use crate::types::Method;

/// Incremental request-head parser. One per connection; after it returns
/// a head or an error it starts afresh.
#[derive(Debug, Clone)]
pub struct RequestParser {
    limits: Limits,
    scan: HeadScanner,
}

impl RequestParser {
    /// A parser applying `limits`.
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            scan: HeadScanner::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets any partial progress (e.g. after the caller cleared `buf`).
    pub fn reset(&mut self) {
        self.scan.reset();
    }

    /// Same contract as [`parse_request`]: `Ok(None)` consumes nothing; a
    /// head is split off `buf`; an error means answer `status()` and close.
    /// `buf` must only have grown at its end since the last call (or call
    /// `reset`).
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<RequestHead>, Error> {
        self.scan.parse(buf, &self.limits)
    }
}

/// Incremental response-head parser, for the robot and the load generator:
/// one per connection; after it returns a head (interim 1xx heads too) or
/// an error it starts afresh.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    limits: Limits,
    scan: HeadScanner,
}

impl ResponseParser {
    /// A parser applying `limits`.
    pub fn new(limits: Limits) -> Self {
        ResponseParser {
            limits,
            scan: HeadScanner::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets any partial progress (e.g. after the caller cleared `buf`).
    pub fn reset(&mut self) {
        self.scan.reset();
    }

    /// Same contract as [`parse_response`] for a request made with
    /// `request_method`; `buf` must only have grown at its end since the
    /// last call (or call `reset`).
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        request_method: &Method,
    ) -> Result<Option<ResponseHead>, Error> {
        self.scan.parse_response(buf, &self.limits, request_method)
    }

    /// The stream ended: the full parser's verdict on what `buf` holds now
    /// (an error in a partial head is named here, not left to a trigger
    /// that can no longer come). Still `Ok(None)` for a sound partial head.
    pub fn parse_at_eof(
        &mut self,
        buf: &mut BytesMut,
        request_method: &Method,
    ) -> Result<Option<ResponseHead>, Error> {
        self.scan.reset();
        self.parse(buf, request_method)
    }
}

/// The state of a [`RequestParser`] or [`ResponseParser`] without the
/// limits (16 bytes), for callers that keep one per connection and the
/// limits once elsewhere (the server: every open connection's state is part
/// of its task; the load generator: 10,000 connections).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeadScanner {
    /// Bytes at the front of the buffer already scanned (at most
    /// `max_head_bytes + 1`, which is clamped below 2^30: fits `u32`).
    scanned: u32,
    /// Start of the current line.
    line_start: u32,
    /// Complete lines seen since the start line started.
    lines: u32,
    /// Whether the start line has started (leading empty lines skipped).
    started: bool,
}

/// A status line's bytes up to and including its code and the space after
/// it (`HTTP/1.1 200 `): all that httparse checks before the reason phrase.
const STATUS_LINE_PREFIX: usize = 13;

impl HeadScanner {
    /// A scanner at the start of a head.
    pub const fn new() -> Self {
        HeadScanner {
            scanned: 0,
            line_start: 0,
            lines: 0,
            started: false,
        }
    }

    /// Forgets any partial progress.
    pub fn reset(&mut self) {
        *self = HeadScanner::new();
    }

    /// Whether part of a head has been seen (a start line started).
    pub fn in_head(&self) -> bool {
        self.started
    }

    /// [`RequestParser::parse`] with the limits passed in; pass the same
    /// limits on every call. Inlined: the head (~350 bytes) is then built in
    /// the caller's frame instead of being copied out through each return.
    #[inline]
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<RequestHead>, Error> {
        self.verdict(buf, limits, 0, |buf| parse_request(buf, limits))
    }

    /// [`HeadScanner::parse`] into a head the caller holds (see
    /// [`parse_request_into`](crate::head::parse_request_into)): `Ok(true)`
    /// when a head was parsed into `head`. Same verdicts, same state.
    #[inline]
    pub fn parse_into(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        head: &mut RequestHead,
    ) -> Result<bool, Error> {
        self.verdict_into(buf, limits, 0, |buf| parse_request_into(buf, limits, head))
    }

    /// [`ResponseParser::parse`] with the limits passed in; pass the same
    /// limits on every call.
    pub fn parse_response(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        request_method: &Method,
    ) -> Result<Option<ResponseHead>, Error> {
        self.verdict(buf, limits, STATUS_LINE_PREFIX, |buf| {
            parse_response(buf, limits, request_method)
        })
    }

    /// [`HeadScanner::parse_response`] into a head the caller holds (see
    /// [`parse_response_into`](crate::head::parse_response_into)):
    /// `Ok(true)` when a head was parsed into `head`. Same verdicts, same
    /// state.
    #[inline]
    pub fn parse_response_into(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        request_method: &Method,
        head: &mut ResponseHead,
    ) -> Result<bool, Error> {
        self.verdict_into(buf, limits, STATUS_LINE_PREFIX, |buf| {
            parse_response_into(buf, limits, request_method, head)
        })
    }

    /// [`HeadScanner::parse_response_into`] dropping the head's bytes (see
    /// [`consume_response_into`](crate::head::consume_response_into)): for
    /// a caller that needs only the status, framing and keep-alive
    /// decision. Same verdicts, same state.
    #[inline]
    pub fn consume_response_into(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        request_method: &Method,
        head: &mut ResponseHead,
    ) -> Result<bool, Error> {
        self.verdict_into(buf, limits, STATUS_LINE_PREFIX, |buf| {
            consume_response_into(buf, limits, request_method, head)
        })
    }

    /// [`HeadScanner::verdict`] for a parser that fills a head the caller
    /// holds and answers whether it did.
    #[inline]
    fn verdict_into(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        start_prefix: usize,
        full: impl FnOnce(&mut BytesMut) -> Result<bool, Error>,
    ) -> Result<bool, Error> {
        self.verdict(buf, limits, start_prefix, |buf| {
            full(buf).map(|done| done.then_some(()))
        })
        .map(|done| done.is_some())
    }

    /// Scans what is new and asks `full` when a verdict is due.
    /// `start_prefix`: a start-line length at which to ask once (0: never).
    #[inline]
    fn verdict<T>(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        start_prefix: usize,
        full: impl FnOnce(&mut BytesMut) -> Result<Option<T>, Error>,
    ) -> Result<Option<T>, Error> {
        if self.scanned as usize > buf.len() {
            self.reset();
        }
        if buf.is_empty() {
            // Nothing to look at (a caller asking before its first read):
            // the state is fresh (a scanned byte would be in `buf`), the
            // full parser would answer `Ok(None)` and a scan would find
            // nothing.
            return Ok(None);
        }
        if self.scanned == 0 && !self.started {
            // Fresh start (the common case: a whole head in one read): ask
            // the full parser at once; only if the head is incomplete, scan
            // it to remember how far we got.
            count::full(buf.len(), limits);
            let result = full(buf);
            if matches!(result, Ok(None)) {
                self.scan(buf, limits, start_prefix);
            }
            return result;
        }
        if !self.scan(buf, limits, start_prefix) {
            return Ok(None);
        }
        count::full(buf.len(), limits);
        let result = full(buf);
        if !matches!(result, Ok(None)) {
            self.reset();
        }
        result
    }

    /// Scans the bytes not seen yet; returns whether a verdict is due.
    fn scan(&mut self, buf: &BytesMut, limits: &Limits, start_prefix: usize) -> bool {
        let max_head = limits.head_bytes();
        // Never scan past the head limit: beyond it the verdict is due.
        let cap = buf.len().min(max_head + 1);
        let mut verdict_due = buf.len() > max_head;
        let mut i = self.scanned as usize;
        let mut line_start = self.line_start as usize;
        // How much of the start line had been seen before this call.
        let start_seen = if self.started && self.lines == 0 {
            i - line_start
        } else {
            0
        };
        let first = i;
        // Bounded by `cap`: every iteration advances `i` or breaks.
        while i < cap {
            if !self.started {
                match buf[i] {
                    b'\n' => i += 1,
                    b'\r' => match buf.get(i + 1).filter(|_| i + 1 < cap) {
                        Some(b'\n') => i += 2,
                        Some(_) => {
                            verdict_due = true; // bare CR: let the parser name it
                            i = cap;
                        }
                        None => break, // wait for the byte after CR
                    },
                    _ => {
                        self.started = true;
                        line_start = i;
                    }
                }
                continue;
            }
            let Some(off) = memchr::memchr(b'\n', &buf[i..cap]) else {
                i = cap;
                break;
            };
            let lf = i + off;
            self.lines += 1;
            let line = &buf[line_start..lf];
            let empty = line.is_empty() || line == b"\r";
            if self.lines == 1 || empty {
                // Start line complete (reject garbage early), or the blank
                // line ending the head.
                verdict_due = true;
            }
            line_start = lf + 1;
            i = lf + 1;
            if empty {
                break;
            }
        }
        count::scanned(i - first);
        if start_prefix > 0
            && self.started
            && self.lines == 0
            && start_seen < start_prefix
            && i - line_start >= start_prefix
        {
            verdict_due = true; // the status line's version and code are in
        }
        // Both are at most `max_head + 1` <= 2^30 + 1.
        self.scanned = i as u32;
        self.line_start = line_start as u32;
        let line_limit = limits
            .max_request_line_bytes
            .min(limits.max_header_line_bytes);
        if self.started && i.saturating_sub(line_start) > line_limit {
            verdict_due = true;
        }
        verdict_due
    }
}

/// Work counters for the unit tests: bytes the scanner looked at and bytes
/// handed to the full parser (an upper bound: it stops at the head's end or
/// its first fault). Free in a normal build.
#[cfg(not(test))]
mod count {
    use crate::limits::Limits;

    #[inline(always)]
    pub(super) fn full(_buf_len: usize, _limits: &Limits) {}
    #[inline(always)]
    pub(super) fn scanned(_n: usize) {}
}

#[cfg(test)]
mod count {
    use std::cell::Cell;

    use crate::limits::Limits;

    thread_local! {
        static EXAMINED: Cell<u64> = const { Cell::new(0) };
        static FULL_PARSES: Cell<u64> = const { Cell::new(0) };
    }

    pub(super) fn full(buf_len: usize, limits: &Limits) {
        let window = buf_len.min(limits.head_bytes() + 1) as u64;
        EXAMINED.with(|c| c.set(c.get() + window));
        FULL_PARSES.with(|c| c.set(c.get() + 1));
    }

    pub(super) fn scanned(n: usize) {
        EXAMINED.with(|c| c.set(c.get() + n as u64));
    }

    /// (bytes examined, full parses) since the last call.
    pub(super) fn take() -> (u64, u64) {
        (
            EXAMINED.with(|c| c.replace(0)),
            FULL_PARSES.with(|c| c.replace(0)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response head of exactly `size` bytes: a status line, `X-Fill`
    /// field lines of at most 1,000 bytes, `Content-Length: 0`, blank line.
    fn response_head(size: usize) -> Vec<u8> {
        fill_head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", size)
    }

    /// A request head of exactly `size` bytes.
    fn request_head(size: usize) -> Vec<u8> {
        fill_head(b"GET /index.html HTTP/1.1\r\nHost: a\r\n", size)
    }

    fn fill_head(start: &[u8], size: usize) -> Vec<u8> {
        let mut out = start.to_vec();
        // Field lines "X-Fill-NNN: aaa...\r\n" of 15 to 1,000 bytes.
        let mut left = size - out.len() - 2;
        let mut n = 0;
        while left > 0 {
            let mut line = left.min(1000);
            if left > line && left - line < 20 {
                line -= 20;
            }
            let prefix = format!("X-Fill-{n:03}: ");
            assert!(line > prefix.len() + 2);
            out.extend_from_slice(prefix.as_bytes());
            out.resize(out.len() + line - prefix.len() - 2, b'a');
            out.extend_from_slice(b"\r\n");
            left -= line;
            n += 1;
        }
        out.extend_from_slice(b"\r\n");
        assert_eq!(out.len(), size);
        out
    }

    /// Feeds `input` in `piece`-byte reads; returns the head's length and
    /// the work counters.
    fn feed<T>(
        input: &[u8],
        piece: usize,
        mut parse: impl FnMut(&mut BytesMut) -> Result<Option<T>, Error>,
    ) -> (usize, u64, u64) {
        count::take();
        let mut buf = BytesMut::new();
        for chunk in input.chunks(piece) {
            buf.extend_from_slice(chunk);
            match parse(&mut buf) {
                Ok(None) => {}
                Ok(Some(_)) => {
                    let (examined, full) = count::take();
                    return (input.len() - buf.len(), examined, full);
                }
                Err(e) => panic!("{} bytes in {piece}-byte pieces: {e}", input.len()),
            }
        }
        panic!("no head after {} bytes", input.len());
    }

    #[test]
    fn each_byte_is_examined_a_bounded_number_of_times() {
        let limits = Limits::default();
        for kib in [1, 2, 4, 8, 16, 32, 64] {
            let size = kib * 1024;
            for piece in [1, 1460] {
                let head = response_head(size);
                let mut p = ResponseParser::new(limits.clone());
                let (n, examined, full) = feed(&head, piece, |b| p.parse(b, &Method::Get));
                assert_eq!(n, size);
                // Scanned once, plus the full parser on the first read, the
                // status line and the whole head: under 3 looks per byte.
                assert!(
                    examined <= 3 * size as u64,
                    "response {size} B in {piece} B pieces: {examined} bytes examined"
                );
                assert!(full <= 5, "response {size} B: {full} full parses");

                let head = request_head(size);
                let mut p = RequestParser::new(limits.clone());
                let (n, examined, full) = feed(&head, piece, |b| p.parse(b));
                assert_eq!(n, size);
                assert!(
                    examined <= 3 * size as u64,
                    "request {size} B in {piece} B pieces: {examined} bytes examined"
                );
                assert!(full <= 5, "request {size} B: {full} full parses");
            }
        }
    }

    #[test]
    fn interim_heads_and_pipelined_responses_start_afresh() {
        let limits = Limits::default();
        let stream = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nA: b\r\n\r\nHTTP/1.0 304 Not Modified\r\n\r\n";
        let expected = [100, 204, 304];
        let mut p = ResponseParser::new(limits.clone());
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for b in stream.chunks(1) {
            buf.extend_from_slice(b);
            while let Some(h) = p.parse(&mut buf, &Method::Get).unwrap() {
                got.push(h.status());
            }
        }
        assert_eq!(got, expected);
        assert!(buf.is_empty());
    }

    #[test]
    fn a_peer_that_does_not_speak_http_is_named_before_its_line_ends() {
        let limits = Limits::default();
        let mut p = ResponseParser::new(limits);
        let mut buf = BytesMut::new();
        let mut verdict = None;
        for (i, b) in b"SSH-2.0-OpenSSH_9.2p1 Debian-2".chunks(1).enumerate() {
            buf.extend_from_slice(b);
            if let Err(e) = p.parse(&mut buf, &Method::Get) {
                verdict = Some((i, e.kind()));
                break;
            }
        }
        let (at, kind) = verdict.expect("garbage named before a line end");
        assert!(at < STATUS_LINE_PREFIX, "named at byte {at}");
        assert_eq!(kind, crate::ErrorKind::InvalidStatusLine);
    }

    #[test]
    fn a_fault_in_a_partial_head_is_named_at_eof() {
        let limits = Limits::default();
        let input = b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 3\r\n";
        let whole = parse_response(&mut BytesMut::from(&input[..]), &limits, &Method::Get)
            .unwrap_err()
            .kind();
        let mut p = ResponseParser::new(limits);
        let mut buf = BytesMut::new();
        for b in input.chunks(1) {
            buf.extend_from_slice(b);
            // Not named yet: no trigger after the status line (the
            // documented delay), until the stream ends.
            assert!(p.parse(&mut buf, &Method::Get).unwrap().is_none());
        }
        let at_eof = p.parse_at_eof(&mut buf, &Method::Get).unwrap_err().kind();
        assert_eq!(at_eof, whole);
    }
}
