//! Connection I/O buffering: the output queue that turns many responses into
//! one `writev`, and the per-worker buffer pools that let idle connections
//! hold no buffers at all.
//!
//! The output queue has two parts (hyper's "flatten" and "queue" write
//! strategies, combined): small pieces — heads and small bodies — are copied
//! into one flat `Vec<u8>`; large bodies are queued by reference (`Bytes`,
//! shared with the site store) and written without copying. A flush hands the
//! kernel everything queued in one vectored write.

use std::cell::{Cell, RefCell};
use std::io::{self, IoSlice};

use bytes::{Bytes, BytesMut};
use tokio::net::TcpStream;

use crate::policy::{BUFFER_POOL_MAX, COPY_BODY_MAX_BYTES, MAX_IOVECS, READ_CHUNK_BYTES};

/// Pools of read and write buffers, one per worker thread.
#[derive(Default)]
pub struct Pools {
    read: RefCell<Vec<BytesMut>>,
    write: RefCell<Vec<Vec<u8>>>,
    /// Buffers handed out and not yet returned (for the memory accounting).
    pub outstanding: Cell<usize>,
}

impl Pools {
    pub fn take_read(&self) -> BytesMut {
        self.outstanding.set(self.outstanding.get() + 1);
        let mut b = self.read.borrow_mut().pop().unwrap_or_default();
        b.clear();
        // Reclaims the whole allocation when no split-off head still refers
        // to it, so a recycled buffer is not reallocated.
        b.reserve(READ_CHUNK_BYTES);
        b
    }

    pub fn give_read(&self, b: BytesMut) {
        self.outstanding
            .set(self.outstanding.get().saturating_sub(1));
        let mut pool = self.read.borrow_mut();
        // A buffer grown far beyond the read chunk (a big pipelined burst)
        // is freed rather than kept.
        if pool.len() < BUFFER_POOL_MAX && b.capacity() <= 8 * READ_CHUNK_BYTES {
            pool.push(b);
        }
    }

    pub fn take_write(&self, capacity: usize) -> Vec<u8> {
        self.outstanding.set(self.outstanding.get() + 1);
        let mut v = self.write.borrow_mut().pop().unwrap_or_default();
        v.clear();
        v.reserve(capacity.min(16 * 1024));
        v
    }

    pub fn give_write(&self, v: Vec<u8>, flush_bytes: usize) {
        self.outstanding
            .set(self.outstanding.get().saturating_sub(1));
        let mut pool = self.write.borrow_mut();
        if pool.len() < BUFFER_POOL_MAX && v.capacity() <= 2 * flush_bytes {
            pool.push(v);
        }
    }
}

enum Seg {
    /// `flat[start..end]`
    Flat(usize, usize),
    Shared(Bytes),
}

/// The per-connection output queue.
pub struct WriteBuf {
    flat: Vec<u8>,
    /// Start of the flat bytes not yet closed into a segment.
    open_from: usize,
    /// Closed segments, in order. Bounded by `MAX_IOVECS` (the caller
    /// flushes when `should_flush` says so).
    segs: Vec<Seg>,
    /// Index of the first segment not completely written, and how much of
    /// it was written.
    head_seg: usize,
    head_off: usize,
    queued: usize,
    has_buffers: bool,
}

/// What one write attempt achieved.
pub enum WriteStep {
    /// Everything queued is written.
    Done,
    /// Some bytes written, more remain.
    Partial,
}

impl WriteBuf {
    pub const fn new() -> Self {
        WriteBuf {
            flat: Vec::new(),
            open_from: 0,
            segs: Vec::new(),
            head_seg: 0,
            head_off: 0,
            queued: 0,
            has_buffers: false,
        }
    }

    /// Borrows the flat buffer from the pool if this connection holds none.
    pub fn ensure(&mut self, pools: &Pools, flush_bytes: usize) {
        if !self.has_buffers {
            self.flat = pools.take_write(flush_bytes);
            self.segs = Vec::with_capacity(8);
            self.has_buffers = true;
        }
    }

    /// Returns the buffers to the pool (only when empty: before going idle).
    pub fn release(&mut self, pools: &Pools, flush_bytes: usize) {
        if self.has_buffers && self.is_empty() {
            pools.give_write(std::mem::take(&mut self.flat), flush_bytes);
            self.segs = Vec::new();
            self.has_buffers = false;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.queued
    }

    /// Whether the queue is "full": enough bytes, or enough iovec entries.
    pub fn should_flush(&self, flush_bytes: usize) -> bool {
        self.queued >= flush_bytes || self.segs.len() + 2 >= MAX_IOVECS
    }

    /// Appends bytes to the flat buffer.
    pub fn put(&mut self, b: &[u8]) {
        self.flat.extend_from_slice(b);
        self.queued += b.len();
    }

    /// The flat buffer itself, for writers that format into it; call
    /// `note_appended` with the number of bytes added.
    pub fn flat_mut(&mut self) -> &mut Vec<u8> {
        &mut self.flat
    }

    pub fn note_appended(&mut self, n: usize) {
        self.queued += n;
    }

    /// Appends a body: copied when small, queued by reference when large.
    pub fn put_body(&mut self, body: &Bytes) {
        if body.len() <= COPY_BODY_MAX_BYTES {
            self.put(body);
        } else {
            self.close_flat();
            self.queued += body.len();
            self.segs.push(Seg::Shared(body.clone()));
        }
    }

    fn close_flat(&mut self) {
        if self.flat.len() > self.open_from {
            self.segs.push(Seg::Flat(self.open_from, self.flat.len()));
            self.open_from = self.flat.len();
        }
    }

    /// One vectored write of everything queued (up to `MAX_IOVECS` entries).
    /// Never blocks: `WouldBlock` comes back as an error for the caller to
    /// wait on writability. Synchronous on purpose, so the iovec array on the
    /// stack is never part of the connection's future.
    pub fn write_once(&mut self, stream: &TcpStream) -> io::Result<(WriteStep, usize)> {
        self.close_flat();
        let mut iov = [IoSlice::new(&[]); MAX_IOVECS];
        let mut n_iov = 0;
        for (i, seg) in self.segs[self.head_seg..].iter().enumerate() {
            if n_iov == MAX_IOVECS {
                break;
            }
            let bytes: &[u8] = match seg {
                Seg::Flat(s, e) => &self.flat[*s..*e],
                Seg::Shared(b) => b,
            };
            let bytes = if i == 0 {
                &bytes[self.head_off..]
            } else {
                bytes
            };
            iov[n_iov] = IoSlice::new(bytes);
            n_iov += 1;
        }
        let written = stream.try_write_vectored(&iov[..n_iov])?;
        self.advance(written);
        Ok((
            if self.queued == 0 {
                WriteStep::Done
            } else {
                WriteStep::Partial
            },
            written,
        ))
    }

    fn advance(&mut self, mut n: usize) {
        self.queued -= n;
        while n > 0 {
            let len = match &self.segs[self.head_seg] {
                Seg::Flat(s, e) => e - s,
                Seg::Shared(b) => b.len(),
            } - self.head_off;
            if n >= len {
                n -= len;
                self.head_seg += 1;
                self.head_off = 0;
            } else {
                self.head_off += n;
                n = 0;
            }
        }
        if self.queued == 0 {
            self.segs.clear();
            self.flat.clear();
            self.open_from = 0;
            self.head_seg = 0;
            self.head_off = 0;
        }
    }
}

impl Default for WriteBuf {
    fn default() -> Self {
        Self::new()
    }
}
