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
    /// Bytes at the front of the buffer already scanned.
    scanned: usize,
    /// Whether the request line has started (leading empty lines skipped).
    started: bool,
    /// Start of the current line.
    line_start: usize,
    /// Complete lines seen since the request line started.
    lines: usize,
}

impl RequestParser {
    /// A parser applying `limits`.
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            scanned: 0,
            started: false,
            line_start: 0,
            lines: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Forgets any partial progress (e.g. after the caller cleared `buf`).
    pub fn reset(&mut self) {
        self.scanned = 0;
        self.started = false;
        self.line_start = 0;
        self.lines = 0;
    }

    /// Same contract as [`parse_request`]: `Ok(None)` consumes nothing; a
    /// head is split off `buf`; an error means answer `status()` and close.
    /// `buf` must only have grown at its end since the last call (or call
    /// `reset`).
    pub fn parse(&mut self, buf: &mut BytesMut) -> Result<Option<RequestHead>, Error> {
        if self.scanned > buf.len() {
            self.reset();
        }
        if self.scanned == 0 && !self.started {
            // Fresh start (the common case: a whole head in one read): ask
            // the full parser at once; only if the head is incomplete, scan
            // it to remember how far we got.
            let result = parse_request(buf, &self.limits);
            if matches!(result, Ok(None)) {
                self.scan(buf);
            }
            return result;
        }
        if !self.scan(buf) {
            return Ok(None);
        }
        let result = parse_request(buf, &self.limits);
        if !matches!(result, Ok(None)) {
            self.reset();
        }
        result
    }

    /// Scans the bytes not seen yet; returns whether a verdict is due.
    fn scan(&mut self, buf: &BytesMut) -> bool {
        let max_head = self.limits.head_bytes();
        // Never scan past the head limit: beyond it the verdict is due.
        let cap = buf.len().min(max_head + 1);
        let mut verdict_due = buf.len() > max_head;
        let mut i = self.scanned;
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
                        self.line_start = i;
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
            let line = &buf[self.line_start..lf];
            let empty = line.is_empty() || line == b"\r";
            if self.lines == 1 || empty {
                // Request line complete (reject garbage early), or the
                // blank line ending the head.
                verdict_due = true;
            }
            self.line_start = lf + 1;
            i = lf + 1;
            if empty {
                break;
            }
        }
        self.scanned = i;
        let line_limit = self
            .limits
            .max_request_line_bytes
            .min(self.limits.max_header_line_bytes);
        if self.started && i.saturating_sub(self.line_start) > line_limit {
            verdict_due = true;
        }
        verdict_due
    }
}
