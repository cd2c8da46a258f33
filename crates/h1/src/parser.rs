//! A stateful request-head parser for connections: same verdicts as
//! [`parse_request`], but it remembers how far it has looked, so a head
//! that arrives in many small reads costs O(head) in total instead of
//! O(head²) (each stateless call re-parses the whole partial head; with a
//! 64 KiB head limit and 1-byte reads that is ~2 G byte-steps per
//! connection: a cheap slow-sender DoS).
//!
//! It scans only new bytes for line ends and asks the full parser for a
//! verdict only when one can change: the request line completed, the end
//! of the head arrived, a line or the whole head passed its limit, or a
//! bare CR appeared among leading empty lines. Because the full parser's
//! error kind depends only on the bytes up to the fault (see
//! `head::diagnose`), asking later never changes the answer; it can only
//! delay an error until the next trigger.

use bytes::BytesMut;

use crate::error::Error;
use crate::head::{parse_request, RequestHead};
use crate::limits::Limits;

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

/// The state of a [`RequestParser`] without the limits (16 bytes), for
/// callers that keep one per connection and the limits once elsewhere (the
/// server: every open connection's state is part of its task).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeadScanner {
    /// Bytes at the front of the buffer already scanned (at most
    /// `max_head_bytes + 1`, which is clamped below 2^30: fits `u32`).
    scanned: u32,
    /// Start of the current line.
    line_start: u32,
    /// Complete lines seen since the request line started.
    lines: u32,
    /// Whether the request line has started (leading empty lines skipped).
    started: bool,
}

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

    /// Whether part of a head has been seen (a request line started).
    pub fn in_head(&self) -> bool {
        self.started
    }

    /// [`RequestParser::parse`] with the limits passed in; pass the same
    /// limits on every call.
    pub fn parse(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<RequestHead>, Error> {
        if self.scanned as usize > buf.len() {
            self.reset();
        }
        if self.scanned == 0 && !self.started {
            // Fresh start (the common case: a whole head in one read): ask
            // the full parser at once; only if the head is incomplete, scan
            // it to remember how far we got.
            let result = parse_request(buf, limits);
            if matches!(result, Ok(None)) {
                self.scan(buf, limits);
            }
            return result;
        }
        if !self.scan(buf, limits) {
            return Ok(None);
        }
        let result = parse_request(buf, limits);
        if !matches!(result, Ok(None)) {
            self.reset();
        }
        result
    }

    /// Scans the bytes not seen yet; returns whether a verdict is due.
    fn scan(&mut self, buf: &BytesMut, limits: &Limits) -> bool {
        let max_head = limits.head_bytes();
        // Never scan past the head limit: beyond it the verdict is due.
        let cap = buf.len().min(max_head + 1);
        let mut verdict_due = buf.len() > max_head;
        let mut i = self.scanned as usize;
        let mut line_start = self.line_start as usize;
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
                // Request line complete (reject garbage early), or the
                // blank line ending the head.
                verdict_due = true;
            }
            line_start = lf + 1;
            i = lf + 1;
            if empty {
                break;
            }
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
