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
        // No reserve here: the reader reserves when less than half a chunk
        // is free, and that reserve reclaims the whole allocation when no
        // split-off head still refers to it (so a recycled buffer is not
        // reallocated). Reserving on every take cost ~50 instructions per
        // keep-alive request.
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

    /// Frees pooled buffers beyond `keep` of each kind (after a burst, when
    /// many connections have gone idle: `park`).
    pub fn shrink(&self, keep: usize) {
        self.read.borrow_mut().truncate(keep);
        self.read.borrow_mut().shrink_to_fit();
        self.write.borrow_mut().truncate(keep);
        self.write.borrow_mut().shrink_to_fit();
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

/// Where a flush writes: a socket, or a scripted writer in tests.
pub trait Writev {
    /// One non-blocking vectored write (`WouldBlock` when the socket is full).
    fn try_writev(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;
}

impl Writev for TcpStream {
    /// One slice (a keep-alive response, or a pipelined batch of small ones,
    /// all in the flat buffer) goes out by `send`, which enters the socket
    /// layer directly; several go by `writev`, which passes through the
    /// file layer first (`vfs_writev`: 3.5 % of the server's samples under
    /// keep-alive load when every response took it). Same bytes, same one
    /// system call.
    fn try_writev(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match bufs {
            [one] => self.try_write(one),
            _ => self.try_write_vectored(bufs),
        }
    }
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
            // `segs` allocates on its first push only: a response copied
            // whole into `flat` and sent in one slice (`write_once`'s fast
            // path, every keep-alive request) never needs it.
            self.has_buffers = true;
        }
    }

    /// Returns the buffers to the pool (only when empty: before going idle).
    pub fn release(&mut self, pools: &Pools, flush_bytes: usize) {
        if self.has_buffers && self.is_empty() {
            pools.give_write(std::mem::take(&mut self.flat), flush_bytes);
            if self.segs.capacity() > 0 {
                self.segs = Vec::new();
            }
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
    pub fn write_once<W: Writev>(&mut self, stream: &W) -> io::Result<(WriteStep, usize)> {
        if self.segs.is_empty() && self.queued > 0 && self.queued == self.flat.len() {
            // Everything queued is the flat buffer, from its start, and none
            // of it was written yet (the keep-alive case: one response
            // copied whole): one slice, no segment bookkeeping. A short
            // write falls back to the segments below.
            let written = stream.try_writev(&[IoSlice::new(&self.flat)])?;
            if written == self.queued {
                self.flat.clear();
                self.open_from = 0;
                self.queued = 0;
                return Ok((WriteStep::Done, written));
            }
            self.close_flat();
            self.advance(written);
            return Ok((WriteStep::Partial, written));
        }
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
        let written = stream.try_writev(&iov[..n_iov])?;
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
            if let Seg::Shared(b) = &self.segs[self.head_seg] {
                if b.len() as u64 >= pagewire_site::mapped::MAP_MIN_BYTES {
                    // A large body is mapped from its file: what was sent
                    // leaves the resident set.
                    let sent = n.min(len);
                    pagewire_site::mapped::release(&b[self.head_off..self.head_off + sent]);
                }
            }
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

/// The `pagewire-h1` writers append response heads straight into the
/// flat buffer (and undo a refused field with `truncate`).
impl pagewire_h1::Output for WriteBuf {
    fn put(&mut self, bytes: &[u8]) {
        WriteBuf::put(self, bytes);
    }
    fn len(&self) -> usize {
        self.flat.len()
    }
    fn truncate(&mut self, len: usize) {
        // Only ever undoes bytes just appended, never closed segments.
        let len = len.max(self.open_from);
        if len < self.flat.len() {
            self.queued -= self.flat.len() - len;
            self.flat.truncate(len);
        }
    }
}

impl Default for WriteBuf {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    //! The output queue against a scripted writer, the way hyper tests its
    //! `WriteBuf`: every write call's bytes (and iovec count) are asserted,
    //! writes may be cut short or refused with `WouldBlock`, and each test
    //! says how many writes a flush takes (paper 001 counts packets: a
    //! pipelined batch must leave in one write, not one per response).
    use super::*;
    use std::collections::VecDeque;

    /// What the scripted writer does on one call.
    enum Ret {
        /// Accepts everything offered.
        All,
        /// Accepts only this many bytes.
        Part(usize),
        /// The socket is full.
        WouldBlock,
    }

    /// One expected write call: the bytes offered (all iovecs
    /// concatenated), how many iovecs, and what to answer.
    struct Expect {
        bytes: Vec<u8>,
        iovecs: usize,
        ret: Ret,
    }

    /// Asserts every call against its script; unexpected or missing calls fail.
    struct Scripted {
        script: RefCell<VecDeque<Expect>>,
        calls: Cell<usize>,
    }

    impl Scripted {
        fn new(script: Vec<Expect>) -> Scripted {
            Scripted {
                script: RefCell::new(script.into()),
                calls: Cell::new(0),
            }
        }
    }

    impl Writev for Scripted {
        fn try_writev(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let call = self.calls.get() + 1;
            self.calls.set(call);
            let e = self
                .script
                .borrow_mut()
                .pop_front()
                .unwrap_or_else(|| panic!("unexpected write #{call}"));
            let offered: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(
                String::from_utf8_lossy(&offered),
                String::from_utf8_lossy(&e.bytes),
                "bytes of write #{call}"
            );
            assert_eq!(bufs.len(), e.iovecs, "iovecs of write #{call}");
            match e.ret {
                Ret::All => Ok(offered.len()),
                Ret::Part(n) => {
                    assert!(n < offered.len(), "a partial write is shorter");
                    Ok(n)
                }
                Ret::WouldBlock => Err(io::ErrorKind::WouldBlock.into()),
            }
        }
    }

    impl Drop for Scripted {
        fn drop(&mut self) {
            if !std::thread::panicking() {
                assert!(
                    self.script.borrow().is_empty(),
                    "{} scripted writes never happened",
                    self.script.borrow().len()
                );
            }
        }
    }

    fn expect(bytes: &[u8], iovecs: usize, ret: Ret) -> Expect {
        Expect {
            bytes: bytes.to_vec(),
            iovecs,
            ret,
        }
    }

    /// Flushes as the connection loop does: write until done, "waiting"
    /// (here: nothing) on `WouldBlock`. Returns (writes, waits).
    fn flush(out: &mut WriteBuf, w: &Scripted) -> (usize, usize) {
        let (mut writes, mut waits) = (0, 0);
        // Bounded: the script panics when it runs out.
        loop {
            match out.write_once(w) {
                Ok((WriteStep::Done, _)) => return (writes + 1, waits),
                Ok((WriteStep::Partial, _)) => writes += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => waits += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn buf() -> (WriteBuf, Pools) {
        let pools = Pools::default();
        let mut out = WriteBuf::new();
        out.ensure(&pools, 64 * 1024);
        (out, pools)
    }

    fn big(byte: u8) -> Bytes {
        Bytes::from(vec![byte; COPY_BODY_MAX_BYTES + 1])
    }

    #[test]
    fn pipelined_small_responses_leave_in_one_write() {
        let (mut out, _pools) = buf();
        for i in 0..3 {
            out.put(format!("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n{i}").as_bytes());
        }
        let all = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n0HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2";
        assert_eq!(out.queued_bytes(), all.len());
        let w = Scripted::new(vec![expect(all, 1, Ret::All)]);
        assert_eq!(flush(&mut out, &w), (1, 0));
        assert!(out.is_empty());
    }

    #[test]
    fn large_bodies_are_queued_by_reference_in_the_same_write() {
        let (mut out, _pools) = buf();
        let body = big(b'x');
        out.put(b"H1\r\n\r\n");
        out.put_body(&body);
        out.put(b"H2\r\n\r\n");
        out.put_body(&Bytes::from_static(b"small"));
        let mut all = b"H1\r\n\r\n".to_vec();
        all.extend_from_slice(&body);
        all.extend_from_slice(b"H2\r\n\r\nsmall");
        // flat, shared body, flat (second head and the copied small body).
        let w = Scripted::new(vec![expect(&all, 3, Ret::All)]);
        assert_eq!(flush(&mut out, &w), (1, 0));
    }

    #[test]
    fn partial_writes_resume_at_the_exact_byte() {
        let (mut out, _pools) = buf();
        let body = big(b'b');
        out.put(b"HEAD-1\r\n\r\n"); // 10 bytes
        out.put_body(&body);
        out.put(b"HEAD-2\r\n\r\n");
        let mut all = b"HEAD-1\r\n\r\n".to_vec();
        all.extend_from_slice(&body);
        all.extend_from_slice(b"HEAD-2\r\n\r\n");
        let cut1 = 4; // inside the first head
        let cut2 = 10 + 100 - cut1; // then inside the shared body
        let cut3 = all.len() - 3 - cut1 - cut2; // then inside the last head
        let w = Scripted::new(vec![
            expect(&all, 3, Ret::Part(cut1)),
            expect(&all[cut1..], 3, Ret::WouldBlock),
            // Refused: the same bytes are offered again.
            expect(&all[cut1..], 3, Ret::Part(cut2)),
            expect(&all[cut1 + cut2..], 2, Ret::Part(cut3)),
            expect(&all[all.len() - 3..], 1, Ret::All),
        ]);
        assert_eq!(flush(&mut out, &w), (4, 1));
        assert!(out.is_empty());
        assert_eq!(w.calls.get(), 5);
    }

    #[test]
    fn a_partial_write_ending_on_a_segment_boundary() {
        let (mut out, _pools) = buf();
        let body = big(b'c');
        out.put(b"HEAD\r\n\r\n");
        out.put_body(&body);
        let w = Scripted::new(vec![
            expect(
                &[b"HEAD\r\n\r\n".as_slice(), &body].concat(),
                2,
                Ret::Part(8),
            ),
            expect(&body, 1, Ret::All),
        ]);
        assert_eq!(flush(&mut out, &w), (2, 0));
        // Reused after a complete flush: starts from an empty flat buffer.
        out.put(b"next");
        let w = Scripted::new(vec![expect(b"next", 1, Ret::All)]);
        assert_eq!(flush(&mut out, &w), (1, 0));
    }

    #[test]
    fn the_queue_is_full_before_one_writev_cannot_take_it() {
        let (mut out, _pools) = buf();
        let body = big(b'd');
        let mut all = Vec::new();
        let mut responses = 0;
        // A head and a large body per response: two segments each.
        while !out.should_flush(usize::MAX) {
            out.put(b"H\r\n\r\n");
            out.put_body(&body);
            all.extend_from_slice(b"H\r\n\r\n");
            all.extend_from_slice(&body);
            responses += 1;
        }
        assert_eq!(responses, MAX_IOVECS / 2 - 1);
        let w = Scripted::new(vec![expect(&all, MAX_IOVECS - 2, Ret::All)]);
        assert_eq!(flush(&mut out, &w), (1, 0));
    }

    #[test]
    fn more_segments_than_iovecs_take_two_writes() {
        // A caller that ignores `should_flush` still gets every byte, in
        // order: one writev per MAX_IOVECS segments.
        let (mut out, _pools) = buf();
        let body = big(b'e');
        let mut all = Vec::new();
        for _ in 0..40 {
            out.put(b"H\r\n\r\n");
            out.put_body(&body);
            all.extend_from_slice(b"H\r\n\r\n");
            all.extend_from_slice(&body);
        }
        let first = (MAX_IOVECS / 2) * (5 + body.len());
        let w = Scripted::new(vec![
            expect(&all[..first], MAX_IOVECS, Ret::All),
            expect(&all[first..], 80 - MAX_IOVECS, Ret::All),
        ]);
        assert_eq!(flush(&mut out, &w), (2, 0));
    }

    #[test]
    fn full_at_the_flush_threshold() {
        let (mut out, _pools) = buf();
        out.put(&[b'a'; 1000]);
        assert!(!out.should_flush(1001));
        out.put(b"b");
        assert!(out.should_flush(1001));
        let mut all = vec![b'a'; 1000];
        all.push(b'b');
        let w = Scripted::new(vec![expect(&all, 1, Ret::All)]);
        assert_eq!(flush(&mut out, &w), (1, 0));
    }

    #[test]
    fn a_refused_header_leaves_nothing_queued() {
        let (mut out, pools) = buf();
        pagewire_h1::write_status_line(&mut out, pagewire_h1::Version::Http11, 200).unwrap();
        let before = out.queued_bytes();
        assert!(pagewire_h1::write_response_head(
            &mut out,
            pagewire_h1::Version::Http11,
            200,
            [("X-Split", &b"a\r\nSet-Cookie: x"[..])],
        )
        .is_err());
        assert_eq!(out.queued_bytes(), before);
        pagewire_h1::write_header(&mut out, "X-Ok", b"1").unwrap();
        pagewire_h1::end_head(&mut out);
        let w = Scripted::new(vec![expect(
            b"HTTP/1.1 200 OK\r\nX-Ok: 1\r\n\r\n",
            1,
            Ret::All,
        )]);
        assert_eq!(flush(&mut out, &w), (1, 0));
        // Empty again: the buffers go back to the pool.
        out.release(&pools, 64 * 1024);
        assert_eq!(pools.outstanding.get(), 0);
    }
}
