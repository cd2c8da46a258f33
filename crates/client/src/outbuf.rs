//! The pipelining output buffer and its flush policy (paper 001,
//! "Pipelining" and "Buffer Tuning").
//!
//! Requests are appended to a fixed-size buffer. It is flushed
//! 1. when full: exactly `capacity` bytes leave in one write, and a request
//!    that did not fit continues in the next batch, as libwww's buffered
//!    stream did ("1024 bytes ... if the MTU is 1460 then we can nicely fit
//!    into one segment");
//! 2. by a timer, `flush_after` after the first byte entered an empty buffer
//!    (1 s in the paper's first trial, 50 ms later);
//! 3. explicitly, when the application knows better: the robot flushes
//!    right after the page request ("force a flush after issuing the first
//!    request on the HTML document and then buffer the following requests").
//!
//! Pure logic: time is passed in and the caller asks for the next deadline
//! (smoltcp style), so the policy is tested without sockets or sleeps.

use std::time::{Duration, Instant};

/// Why a batch of request bytes was handed to the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushReason {
    /// The buffer reached its capacity.
    Full,
    /// The flush timer expired.
    Timer,
    /// The robot asked (after the page request; after every request when
    /// not pipelining, since it then waits for the response anyway).
    Explicit,
}

/// Bytes leaving the buffer together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub bytes: Vec<u8>,
    pub reason: FlushReason,
}

/// A request output buffer with the paper's three flush triggers.
#[derive(Debug)]
pub struct OutBuffer {
    capacity_bytes: usize,
    flush_after: Duration,
    buf: Vec<u8>,
    /// When the oldest byte now in `buf` was buffered; the timer runs from it.
    armed_at: Option<Instant>,
}

impl OutBuffer {
    pub fn new(capacity_bytes: usize, flush_after: Duration) -> Self {
        assert!(capacity_bytes > 0, "output buffer needs a capacity");
        OutBuffer {
            capacity_bytes,
            flush_after,
            buf: Vec::with_capacity(capacity_bytes),
            armed_at: None,
        }
    }

    /// Appends `bytes`; returns the batches that filled the buffer (each
    /// exactly `capacity` bytes, reason `Full`). Whatever is left stays
    /// buffered for the timer or an explicit flush.
    pub fn push(&mut self, mut bytes: &[u8], now: Instant) -> Vec<Batch> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            if self.buf.is_empty() {
                self.armed_at = Some(now);
            }
            let space = self.capacity_bytes - self.buf.len();
            let take = space.min(bytes.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.buf.len() == self.capacity_bytes {
                out.push(self.take_batch(FlushReason::Full));
            }
        }
        out
    }

    /// Flushes whatever is buffered (`None` if empty).
    pub fn flush(&mut self, reason: FlushReason) -> Option<Batch> {
        (!self.buf.is_empty()).then(|| self.take_batch(reason))
    }

    /// When the timer will flush, if anything is buffered.
    pub fn deadline(&self) -> Option<Instant> {
        self.armed_at.map(|t| t + self.flush_after)
    }

    /// Flushes by timer if the deadline has passed.
    pub fn poll_timer(&mut self, now: Instant) -> Option<Batch> {
        match self.deadline() {
            Some(d) if now >= d => self.flush(FlushReason::Timer),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Drops buffered bytes (the connection is gone).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.armed_at = None;
    }

    fn take_batch(&mut self, reason: FlushReason) -> Batch {
        self.armed_at = None;
        let bytes = std::mem::replace(&mut self.buf, Vec::with_capacity(self.capacity_bytes));
        Batch { bytes, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn full_batches_are_exactly_the_capacity() {
        let t0 = Instant::now();
        let mut b = OutBuffer::new(1024, 50 * MS);
        let req = vec![b'x'; 190];
        let mut batches = Vec::new();
        for _ in 0..11 {
            batches.extend(b.push(&req, t0));
        }
        // 11 * 190 = 2090 = 2 * 1024 + 42
        assert_eq!(batches.len(), 2);
        assert!(batches
            .iter()
            .all(|x| x.bytes.len() == 1024 && x.reason == FlushReason::Full));
        assert_eq!(b.len(), 42);
        assert_eq!(b.deadline(), Some(t0 + 50 * MS));
    }

    #[test]
    fn timer_runs_from_the_first_buffered_byte() {
        let t0 = Instant::now();
        let mut b = OutBuffer::new(1024, 50 * MS);
        assert_eq!(b.deadline(), None);
        b.push(b"GET /a HTTP/1.1\r\n\r\n", t0);
        b.push(b"GET /b HTTP/1.1\r\n\r\n", t0 + 30 * MS);
        assert_eq!(b.deadline(), Some(t0 + 50 * MS));
        assert!(b.poll_timer(t0 + 49 * MS).is_none());
        let batch = b.poll_timer(t0 + 50 * MS).unwrap();
        assert_eq!(batch.reason, FlushReason::Timer);
        assert_eq!(batch.bytes.len(), 38);
        assert_eq!(b.deadline(), None);
        assert!(b.flush(FlushReason::Explicit).is_none());
    }

    #[test]
    fn leftover_after_a_full_flush_rearms_the_timer() {
        let t0 = Instant::now();
        let mut b = OutBuffer::new(10, 50 * MS);
        b.push(b"12345", t0);
        let out = b.push(b"678901234", t0 + 20 * MS);
        assert_eq!(out.len(), 1);
        assert_eq!(b.deadline(), Some(t0 + 70 * MS));
        let e = b.flush(FlushReason::Explicit).unwrap();
        assert_eq!(e.bytes, b"1234");
    }
}
