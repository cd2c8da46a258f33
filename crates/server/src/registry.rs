//! The connection registry: one slot per open connection holding its phase
//! and since when, so one sweeper thread can enforce every deadline (idle,
//! header, send, shutdown grace) and the acceptor can close the least
//! recently active idle connection when at `max_conns` (paper 003 §4).
//!
//! A connection records a phase change with one atomic store (no timer armed
//! per request). To end a connection, the sweeper sets a reason and shuts the
//! socket's read side down: the connection's pending read then returns EOF
//! (or the bytes that raced in, which are answered with `Connection: close`),
//! and the connection closes itself, still on its own thread.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::time::CoarseClock;

/// What a connection is doing, for the sweeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Processing; never timed out, never evicted.
    Busy = 0,
    /// Accepted, no byte received yet: header timeout; evictable.
    Fresh = 1,
    /// Between requests, nothing buffered: idle timeout; evictable.
    Idle = 2,
    /// Part of a request head received: header timeout.
    ReadingHead = 3,
    /// Blocked writing to a client that does not read: send timeout.
    Writing = 4,
    /// Half-closed, discarding input; bounded by its own timer.
    Lingering = 5,
    /// A complete head whose body the server needs is still arriving: the
    /// body deadline, counted from a start the connection moves forward as
    /// bytes arrive (`Slot::set` with the credited time), i.e. a minimum
    /// rate.
    ReadingBody = 6,
}

/// Why the server ended a connection (0 = it did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reason {
    None = 0,
    IdleTimeout = 1,
    HeaderTimeout = 2,
    SendTimeout = 3,
    Evicted = 4,
    Shutdown = 5,
    BodyTimeout = 6,
}

impl Reason {
    fn from_u8(v: u8) -> Reason {
        match v {
            1 => Reason::IdleTimeout,
            2 => Reason::HeaderTimeout,
            3 => Reason::SendTimeout,
            4 => Reason::Evicted,
            5 => Reason::Shutdown,
            6 => Reason::BodyTimeout,
            _ => Reason::None,
        }
    }
}

/// How long a request head must have been incomplete before a new
/// connection at `max_conns` may take its place (a head that slow is
/// slowloris or a dead client; a younger one is a request on its way).
pub const INCOMPLETE_HEAD_EVICT_MS: u64 = 500;

const PHASE_SHIFT: u32 = 56;
/// `Registry::counts`: open connections in the low 32 bits, evicting ones
/// in the high 32.
const OPEN_MASK: u64 = (1 << 32) - 1;
const EVICTING_ONE: u64 = 1 << 32;

fn effective(counts: u64) -> usize {
    (counts & OPEN_MASK).saturating_sub(counts >> 32) as usize
}
const SINCE_MASK: u64 = (1 << PHASE_SHIFT) - 1;

/// One connection's shared state.
#[derive(Debug)]
pub struct Slot {
    /// phase << 56 | since (coarse ms)
    state: AtomicU64,
    /// The connection's socket; -1 while the slot is free. Written only
    /// under the registry's lock (register, unregister), and read under it.
    fd: AtomicI32,
    reason: AtomicU8,
}

/// Slots per chunk: 256 x 16 bytes, one 4 KiB allocation.
const CHUNK_SLOTS: usize = 256;

/// Slots are allocated a chunk at a time and reused, never one per
/// connection: a small allocation of its own made at every accept would sit
/// between the connection's task memory on the heap, and those pages would
/// stay resident after a parked connection's task is freed (`park`).
#[derive(Debug)]
struct Chunk([Slot; CHUNK_SLOTS]);

impl Chunk {
    fn new() -> Arc<Chunk> {
        Arc::new(Chunk(std::array::from_fn(|_| Slot {
            state: AtomicU64::new(0),
            fd: AtomicI32::new(-1),
            reason: AtomicU8::new(0),
        })))
    }
}

/// A connection's handle on its slot: its chunk and its registry key (no
/// allocation of its own).
#[derive(Debug, Clone)]
pub struct SlotRef {
    chunk: Arc<Chunk>,
    key: u32,
}

impl SlotRef {
    /// The registry key (for `Registry::unregister`).
    pub fn key(&self) -> usize {
        self.key as usize
    }
}

impl std::ops::Deref for SlotRef {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        &self.chunk.0[self.key as usize % CHUNK_SLOTS]
    }
}

/// The slots: chunks, and the free ones' keys (a key is
/// `chunk * CHUNK_SLOTS + index`).
#[derive(Debug, Default)]
struct Table {
    chunks: Vec<Arc<Chunk>>,
    free: Vec<u32>,
}

impl Table {
    fn get(&self, key: usize) -> Option<&Slot> {
        let slot = &self.chunks.get(key / CHUNK_SLOTS)?.0[key % CHUNK_SLOTS];
        (slot.fd.load(Ordering::Relaxed) >= 0).then_some(slot)
    }

    /// Every slot in use.
    fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.chunks
            .iter()
            .flat_map(|c| c.0.iter())
            .filter(|s| s.fd.load(Ordering::Relaxed) >= 0)
    }

    fn insert(&mut self, fd: RawFd, state: u64) -> SlotRef {
        let key = match self.free.pop() {
            Some(k) => k as usize,
            None => {
                let first = self.chunks.len() * CHUNK_SLOTS;
                self.chunks.push(Chunk::new());
                // Lowest keys first.
                self.free
                    .extend((first as u32 + 1..(first + CHUNK_SLOTS) as u32).rev());
                first
            }
        };
        let slot = SlotRef {
            chunk: self.chunks[key / CHUNK_SLOTS].clone(),
            key: key as u32,
        };
        slot.reason.store(0, Ordering::Relaxed);
        slot.state.store(state, Ordering::Release);
        slot.fd.store(fd, Ordering::Release);
        slot
    }

    /// Frees a slot; its reason, if it was in use.
    fn remove(&mut self, key: usize) -> Option<Reason> {
        let slot = self.get(key)?;
        let reason = slot.reason();
        slot.fd.store(-1, Ordering::Release);
        self.free.push(key as u32);
        Some(reason)
    }
}

impl Slot {
    pub fn set(&self, phase: Phase, now_ms: u64) {
        self.state.store(
            (phase as u64) << PHASE_SHIFT | (now_ms & SINCE_MASK),
            Ordering::Release,
        );
    }

    /// Changes the phase and keeps its start time (a fresh connection whose
    /// first head started: the head deadline still counts from the accept).
    /// Only the connection's own thread writes `state`.
    pub fn relabel(&self, phase: Phase) {
        let since = self.state.load(Ordering::Acquire) & SINCE_MASK;
        self.state
            .store((phase as u64) << PHASE_SHIFT | since, Ordering::Release);
    }

    /// How long the connection has been idle at `now_ms` (`None`: not idle).
    pub fn idle_for(&self, now_ms: u64) -> Option<u64> {
        let (phase, since) = self.load();
        (phase == Phase::Idle as u8).then(|| now_ms.saturating_sub(since))
    }

    /// Marks busy (no timestamp needed: busy is never timed).
    pub fn set_busy(&self) {
        self.state.store(0, Ordering::Release);
    }

    pub fn reason(&self) -> Reason {
        Reason::from_u8(self.reason.load(Ordering::Acquire))
    }

    fn load(&self) -> (u8, u64) {
        let s = self.state.load(Ordering::Acquire);
        ((s >> PHASE_SHIFT) as u8, s & SINCE_MASK)
    }

    /// Sets the reason (first one wins) and pokes the socket.
    fn end(&self, reason: Reason, how: libc::c_int) -> bool {
        if self
            .reason
            .compare_exchange(0, reason as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        // SAFETY-free: shutdown(2) on an fd the registry guarantees is open
        // (a connection removes its slot before closing its socket, under
        // the same lock this is called with).
        unsafe { libc::shutdown(self.fd.load(Ordering::Relaxed), how) };
        true
    }
}

/// Deadlines the sweeper enforces.
#[derive(Debug, Clone, Copy)]
pub struct Deadlines {
    pub idle: Duration,
    pub header: Duration,
    pub send: Duration,
    /// A request body: longest time without enough progress (see
    /// `Phase::ReadingBody`).
    pub body: Duration,
    pub grace: Duration,
}

/// All open connections.
#[derive(Debug)]
pub struct Registry {
    slots: Mutex<Table>,
    pub clock: CoarseClock,
    /// Admitted connections (low 32 bits) and, of those, the ones told to
    /// close for eviction and not closed yet (high 32 bits), in one word so
    /// that the admission check and its increment are one compare-and-swap:
    /// two accept threads can never both take the last place.
    counts: AtomicU64,
    /// Most connections counted against the cap at once (evicted ones on
    /// their way out are not), for the counters.
    peak: AtomicUsize,
    shutting_down: AtomicBool,
    shutdown_at_ms: AtomicU64,
    deadlines: Deadlines,
    /// Wakes an acceptor waiting for a free connection slot.
    pub freed: tokio::sync::Notify,
}

impl Registry {
    pub fn new(deadlines: Deadlines) -> Registry {
        Registry {
            slots: Mutex::new(Table::default()),
            clock: CoarseClock::new(),
            counts: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
            shutting_down: AtomicBool::new(false),
            shutdown_at_ms: AtomicU64::new(0),
            deadlines,
            freed: tokio::sync::Notify::new(),
        }
    }

    /// Most connections counted against the cap at once so far.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Takes a place for a new connection if fewer than `max` count against
    /// the limit; exact across threads (one compare-and-swap). A connection
    /// admitted must `register` and later `unregister`.
    pub fn admit(&self, max: usize) -> bool {
        let admitted = self
            .counts
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                (effective(c) < max).then_some(c + 1)
            });
        match admitted {
            Ok(c) => {
                self.peak.fetch_max(effective(c) + 1, Ordering::Relaxed);
                true
            }
            Err(_) => false,
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    pub fn register(&self, fd: RawFd) -> SlotRef {
        let state = (Phase::Fresh as u64) << PHASE_SHIFT | (self.clock.now_ms() & SINCE_MASK);
        self.slots.lock().expect("registry lock").insert(fd, state)
    }

    /// Must be called before the socket is closed.
    pub fn unregister(&self, key: usize) {
        let reason = self.slots.lock().expect("registry lock").remove(key);
        let evicted = reason == Some(Reason::Evicted);
        // One word: the place and, if evicted, its eviction mark go together.
        self.counts
            .fetch_sub(1 + if evicted { EVICTING_ONE } else { 0 }, Ordering::AcqRel);
        self.freed.notify_waiters();
    }

    /// Closes the least recently active idle (or fresh) connection.
    pub fn evict_oldest_idle(&self) -> bool {
        self.evict(&[(&[Phase::Idle, Phase::Fresh], 0)])
    }

    /// At `max_conns`: closes the connection whose request head has been
    /// incomplete longest (accepted and silent, or a head still arriving:
    /// slowloris holds its places this way) if that has lasted
    /// `INCOMPLETE_HEAD_EVICT_MS`, or else the least recently active idle
    /// one. A connection being answered is never closed, nor
    /// one accepted a moment ago whose request is still on its way.
    pub fn evict_for_new(&self) -> bool {
        self.evict(&[
            (
                &[Phase::Fresh, Phase::ReadingHead],
                INCOMPLETE_HEAD_EVICT_MS,
            ),
            (&[Phase::Idle], 0),
        ])
    }

    /// Closes the oldest connection (by `since`) of the first class of
    /// phases that has one at least as old as the class's minimum age (ms).
    fn evict(&self, classes: &[(&[Phase], u64)]) -> bool {
        let now = self.clock.now_ms();
        let slots = self.slots.lock().expect("registry lock");
        let mut best: Option<(u64, &Slot)> = None;
        for (class, min_age) in classes {
            for slot in slots.iter() {
                let (phase, since) = slot.load();
                if class.iter().any(|&p| p as u8 == phase)
                    && now.saturating_sub(since) >= *min_age
                    && slot.reason() == Reason::None
                    && best.is_none_or(|(b, _)| since < b)
                {
                    best = Some((since, slot));
                }
            }
            if best.is_some() {
                break;
            }
        }
        match best {
            Some((_, slot)) => {
                // Marked before poking: the place is free for `admit` now.
                self.counts.fetch_add(EVICTING_ONE, Ordering::AcqRel);
                if !slot.end(Reason::Evicted, libc::SHUT_RD) {
                    self.counts.fetch_sub(EVICTING_ONE, Ordering::AcqRel);
                    return false;
                }
                true
            }
            None => false,
        }
    }

    pub fn begin_shutdown(&self) {
        self.shutdown_at_ms
            .store(self.clock.tick(), Ordering::Release);
        self.shutting_down.store(true, Ordering::Release);
        self.sweep();
    }

    /// One pass over every connection; called every `SWEEP_INTERVAL`.
    pub fn sweep(&self) {
        let now = self.clock.tick();
        let d = self.deadlines;
        let shutting_down = self.is_shutting_down();
        let grace_over = shutting_down
            && now.saturating_sub(self.shutdown_at_ms.load(Ordering::Acquire))
                > d.grace.as_millis() as u64;
        let slots = self.slots.lock().expect("registry lock");
        for slot in slots.iter() {
            if grace_over {
                // Past the grace period everything goes, busy or not.
                unsafe { libc::shutdown(slot.fd.load(Ordering::Relaxed), libc::SHUT_RDWR) };
                continue;
            }
            if slot.reason() != Reason::None {
                continue;
            }
            let (phase, since) = slot.load();
            let age = now.saturating_sub(since);
            let over = |limit: Duration| age > limit.as_millis() as u64;
            let fresh = phase == Phase::Fresh as u8;
            let idle = phase == Phase::Idle as u8;
            if (fresh || idle) && shutting_down {
                slot.end(Reason::Shutdown, libc::SHUT_RD);
            } else if (fresh || phase == Phase::ReadingHead as u8) && over(d.header) {
                slot.end(Reason::HeaderTimeout, libc::SHUT_RD);
            } else if phase == Phase::ReadingBody as u8 && over(d.body) {
                slot.end(Reason::BodyTimeout, libc::SHUT_RD);
            } else if idle && over(d.idle) {
                slot.end(Reason::IdleTimeout, libc::SHUT_RD);
            } else if phase == Phase::Writing as u8 && over(d.send) {
                // A write blocked on a peer that does not read only wakes
                // up if the write side is shut too.
                slot.end(Reason::SendTimeout, libc::SHUT_RDWR);
            }
        }
    }
}
