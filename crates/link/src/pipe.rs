//! One direction of the link, in virtual time.
//!
//! Stages, in the order a packet meets them (as in Mahimahi's shells):
//! random loss -> drop-tail queue + serialization (constant rate or a
//! delivery-opportunity trace) -> propagation delay (+ jitter, never
//! reordering). Every packet's departure and release times are fixed when it
//! enters: they depend only on the packets ahead of it, so the model is exact
//! however late the caller polls. The caller passes `now` in and asks for
//! `next_deadline()`; nothing here reads a clock (smoltcp's style).

use std::collections::VecDeque;
use std::time::Duration;

use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::{
    LinkCompression, PipeConfig, QueueLimit, Rate, Trace, TRACE_OPPORTUNITY_BYTES,
};
use crate::v42bis::V42bis;

/// What happened to a packet offered to the pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; it leaves the link at `release`.
    Queued { release: Duration },
    /// Tail-dropped: the queue was full.
    DroppedQueue,
    /// Lost at random (`loss`).
    DroppedLoss,
}

struct InFlight<P> {
    item: P,
    size_bytes: usize,
    /// When its last bit has been serialized.
    tx_done: Duration,
    /// When it leaves the link (after propagation delay and jitter).
    release: Duration,
}

/// Counts of what the pipe did since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipeStats {
    pub offered: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub delivered: u64,
    /// IP octets offered to the compressor and octets it put on the line
    /// (equal without compression).
    pub ip_bytes: u64,
    pub line_bytes: u64,
}

/// Trace-driven serialization state: the last opportunity used and how many
/// of its bytes are still free.
struct TraceCursor {
    /// Global opportunity index (cycle * len + position).
    index: u64,
    bytes_left: usize,
    /// Whether `index` has been used at all yet.
    started: bool,
}

/// One direction of the link. Generic over the item carried so the model can
/// be tested with plain numbers and the forwarder can carry buffers.
pub struct Pipe<P> {
    cfg: PipeConfig,
    rng: ChaCha8Rng,
    /// Packets still being serialized or waiting to be (the drop-tail queue).
    /// Bounded by `cfg.queue`.
    serializing: VecDeque<InFlight<P>>,
    serializing_bytes: usize,
    /// Packets serialized and propagating. Bounded by rate x delay (a packet
    /// only gets here after serialization) or, with an unlimited rate, by how
    /// fast the caller can offer packets during one delay.
    propagating: VecDeque<InFlight<P>>,
    /// When the serializer is free again (constant rate).
    busy_until: Duration,
    trace: TraceCursor,
    /// The release time of the packet last queued: nothing leaves before it.
    last_release: Duration,
    stats: PipeStats,
    /// The modem's compressor (`cfg.compression`).
    compressor: Option<Box<V42bis>>,
}

impl<P> Pipe<P> {
    pub fn new(cfg: PipeConfig, seed: u64) -> Self {
        let compressor = match cfg.compression {
            LinkCompression::None => None,
            LinkCompression::V42bis => Some(Box::new(V42bis::new())),
        };
        Self {
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            serializing: VecDeque::new(),
            serializing_bytes: 0,
            propagating: VecDeque::new(),
            busy_until: Duration::ZERO,
            trace: TraceCursor {
                index: 0,
                bytes_left: 0,
                started: false,
            },
            last_release: Duration::ZERO,
            stats: PipeStats::default(),
            compressor,
        }
    }

    pub fn config(&self) -> &PipeConfig {
        &self.cfg
    }

    pub fn stats(&self) -> PipeStats {
        self.stats
    }

    /// Packets and bytes in the drop-tail queue at `now` (including the one
    /// being serialized).
    pub fn queued(&mut self, now: Duration) -> (usize, usize) {
        self.advance(now);
        (self.serializing.len(), self.serializing_bytes)
    }

    /// Nothing in the pipe.
    pub fn is_empty(&self) -> bool {
        self.serializing.is_empty() && self.propagating.is_empty()
    }

    /// Offers a packet of `size_bytes` (IP bytes) entering the link at `now`.
    /// `now` must not go backwards between calls.
    pub fn enqueue(&mut self, now: Duration, size_bytes: usize, item: P) -> Verdict {
        self.enqueue_line(now, size_bytes, None, item)
    }

    /// Octets `data` takes on the line: compressed by the link's compressor
    /// (which this call feeds: call it once per packet, in order, before
    /// [`Pipe::enqueue_line`]), else its length. A packet the pipe then
    /// drops has still passed through the compressor, as on a modem whose
    /// line loses a frame.
    pub fn line_size(&mut self, data: &[u8]) -> usize {
        match self.compressor.as_mut() {
            Some(c) => c.packet(data),
            None => data.len(),
        }
    }

    /// [`Pipe::enqueue`] with the serialization counted on `line_bytes`
    /// octets (from [`Pipe::line_size`]) instead of the IP size.
    pub fn enqueue_line(
        &mut self,
        now: Duration,
        size_bytes: usize,
        line_bytes: Option<usize>,
        item: P,
    ) -> Verdict {
        self.stats.offered += 1;
        self.advance(now);
        if self.cfg.loss > 0.0 && self.rng.random::<f64>() < self.cfg.loss {
            self.stats.dropped_loss += 1;
            return Verdict::DroppedLoss;
        }
        let full = match self.cfg.queue {
            QueueLimit::Packets(n) => self.serializing.len() >= n,
            QueueLimit::Bytes(n) => self.serializing_bytes + size_bytes > n,
        };
        if full {
            self.stats.dropped_queue += 1;
            return Verdict::DroppedQueue;
        }
        let line = line_bytes.unwrap_or(size_bytes);
        self.stats.ip_bytes += size_bytes as u64;
        self.stats.line_bytes += line as u64;
        let tx_done = self.serialize(now, line);
        let jitter = if self.cfg.jitter > Duration::ZERO {
            self.cfg.jitter.mul_f64(self.rng.random::<f64>())
        } else {
            Duration::ZERO
        };
        let release = (tx_done + self.cfg.delay + jitter).max(self.last_release);
        self.last_release = release;
        let f = InFlight {
            item,
            size_bytes,
            tx_done,
            release,
        };
        if tx_done > now {
            self.serializing_bytes += size_bytes;
            self.serializing.push_back(f);
        } else {
            self.propagating.push_back(f);
        }
        Verdict::Queued { release }
    }

    /// When the serializer finishes a packet of `size_bytes` entering at `now`.
    fn serialize(&mut self, now: Duration, size_bytes: usize) -> Duration {
        match &self.cfg.rate {
            Rate::Unlimited => now,
            Rate::Bps(bps) => {
                let bits = (size_bytes as u128 + u128::from(self.cfg.framing_bytes)) * 8;
                // Round up to whole nanoseconds so the long-run rate never
                // exceeds the configured one.
                let ns = (bits * 1_000_000_000).div_ceil(u128::from(*bps));
                let start = now.max(self.busy_until);
                let done = start + Duration::from_nanos(ns as u64);
                self.busy_until = done;
                done
            }
            Rate::Trace(trace) => {
                let trace = trace.clone();
                self.serialize_trace(&trace, now, size_bytes + self.cfg.framing_bytes as usize)
            }
        }
    }

    /// Mahimahi's delivery-opportunity model: each opportunity lets up to
    /// 1500 bytes leave; a packet larger than what is left spans several
    /// opportunities and leaves at the one carrying its last byte; bytes of
    /// an opportunity nobody is queued for are lost. A packet entering at `t`
    /// can use opportunities at times >= `t`.
    fn serialize_trace(&mut self, trace: &Trace, now: Duration, size_bytes: usize) -> Duration {
        let n = trace.opportunities_ms.len() as u64;
        let period = trace.period_ms();
        let time_of = |index: u64| -> Duration {
            let cycle = index / n;
            let pos = (index % n) as usize;
            Duration::from_millis(cycle * period + trace.opportunities_ms[pos])
        };
        // Continue in the current opportunity if it is not past and has room.
        let cur = &mut self.trace;
        if !(cur.started && cur.bytes_left > 0 && time_of(cur.index) >= now) {
            // First opportunity at or after `now`, after the current one.
            let now_ms = now.as_nanos().div_ceil(1_000_000) as u64;
            let cycle = now_ms / period;
            let within = now_ms % period;
            let pos = trace.opportunities_ms.partition_point(|&t| t < within) as u64;
            let mut index = cycle * n + pos;
            if cur.started && index <= cur.index {
                index = cur.index + 1;
            }
            cur.index = index;
            cur.bytes_left = TRACE_OPPORTUNITY_BYTES;
            cur.started = true;
        }
        let mut remaining = size_bytes;
        // Bound: at most size / 1500 + 1 iterations.
        loop {
            let take = remaining.min(cur.bytes_left);
            cur.bytes_left -= take;
            remaining -= take;
            if remaining == 0 {
                break;
            }
            cur.index += 1;
            cur.bytes_left = TRACE_OPPORTUNITY_BYTES;
        }
        time_of(cur.index)
    }

    /// Moves serialized packets to the propagation stage.
    fn advance(&mut self, now: Duration) {
        while self.serializing.front().is_some_and(|f| f.tx_done <= now) {
            let f = self.serializing.pop_front().expect("checked");
            self.serializing_bytes -= f.size_bytes;
            self.propagating.push_back(f);
        }
    }

    /// The next packet due at or before `now`, with the time it left the link.
    pub fn poll(&mut self, now: Duration) -> Option<(Duration, P)> {
        self.advance(now);
        if self.propagating.front().is_some_and(|f| f.release <= now) {
            let f = self.propagating.pop_front().expect("checked");
            self.stats.delivered += 1;
            return Some((f.release, f.item));
        }
        None
    }

    /// When the next packet leaves, if any (release times are monotone, so
    /// it is the front of the first non-empty stage).
    pub fn next_deadline(&self) -> Option<Duration> {
        self.propagating
            .front()
            .or(self.serializing.front())
            .map(|f| f.release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Trace;
    use std::sync::Arc;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn cfg(delay: Duration, rate: Rate) -> PipeConfig {
        PipeConfig {
            delay,
            rate,
            queue: QueueLimit::Packets(1000),
            loss: 0.0,
            jitter: Duration::ZERO,
            framing_bytes: 0,
            compression: LinkCompression::None,
        }
    }

    /// Drains everything, stepping virtual time to each deadline.
    fn drain<P>(p: &mut Pipe<P>) -> Vec<(Duration, P)> {
        let mut out = Vec::new();
        while let Some(t) = p.next_deadline() {
            while let Some(x) = p.poll(t) {
                out.push(x);
            }
        }
        out
    }

    #[test]
    fn pure_delay() {
        let mut p = Pipe::new(cfg(ms(45), Rate::Unlimited), 1);
        assert_eq!(
            p.enqueue(ms(10), 1500, 'a'),
            Verdict::Queued { release: ms(55) }
        );
        assert_eq!(p.next_deadline(), Some(ms(55)));
        assert!(p.poll(ms(54)).is_none());
        assert_eq!(p.poll(ms(55)), Some((ms(55), 'a')));
        assert!(p.is_empty());
        assert_eq!(p.next_deadline(), None);
    }

    #[test]
    fn serialization_back_to_back() {
        // 1.5 Mbit/s: a 1500-byte packet takes exactly 8 ms.
        let mut p = Pipe::new(cfg(ms(45), Rate::Bps(1_500_000)), 1);
        for i in 0..3 {
            p.enqueue(ms(0), 1500, i);
        }
        assert_eq!(p.queued(ms(0)), (3, 4500));
        assert_eq!(p.queued(ms(8)), (2, 3000));
        let out = drain(&mut p);
        let times: Vec<_> = out.iter().map(|x| x.0).collect();
        assert_eq!(times, vec![ms(53), ms(61), ms(69)]);
        // An idle link starts the next packet when it arrives.
        assert_eq!(
            p.enqueue(ms(100), 1500, 9),
            Verdict::Queued { release: ms(153) }
        );
    }

    #[test]
    fn framing_counts_in_serialization() {
        let mut c = cfg(Duration::ZERO, Rate::Bps(8_000));
        c.framing_bytes = 10;
        let mut p = Pipe::new(c, 1);
        // (990 + 10) bytes * 8 / 8000 bit/s = 1 s.
        assert_eq!(
            p.enqueue(ms(0), 990, ()),
            Verdict::Queued { release: ms(1000) }
        );
    }

    #[test]
    fn drop_tail_packets_and_bytes() {
        let mut c = cfg(ms(1), Rate::Bps(1_500_000));
        c.queue = QueueLimit::Packets(2);
        let mut p = Pipe::new(c.clone(), 1);
        assert!(matches!(p.enqueue(ms(0), 1500, 0), Verdict::Queued { .. }));
        assert!(matches!(p.enqueue(ms(0), 1500, 1), Verdict::Queued { .. }));
        assert_eq!(p.enqueue(ms(0), 1500, 2), Verdict::DroppedQueue);
        // After the first packet is serialized (8 ms) there is room again.
        assert!(matches!(p.enqueue(ms(8), 1500, 3), Verdict::Queued { .. }));
        assert_eq!(p.stats().dropped_queue, 1);
        let ids: Vec<_> = drain(&mut p).into_iter().map(|x| x.1).collect();
        assert_eq!(ids, vec![0, 1, 3]);

        c.queue = QueueLimit::Bytes(2000);
        let mut p = Pipe::new(c, 1);
        assert!(matches!(p.enqueue(ms(0), 1500, 0), Verdict::Queued { .. }));
        assert!(matches!(p.enqueue(ms(0), 500, 1), Verdict::Queued { .. }));
        assert_eq!(p.enqueue(ms(0), 1, 2), Verdict::DroppedQueue);
    }

    #[test]
    fn seeded_loss_is_reproducible_and_near_rate() {
        let mut c = cfg(ms(1), Rate::Unlimited);
        c.loss = 0.02;
        let run = |seed| {
            let mut p = Pipe::new(c.clone(), seed);
            (0..100_000u64)
                .filter(|&i| p.enqueue(Duration::from_micros(i), 100, i) == Verdict::DroppedLoss)
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        let rate = a.len() as f64 / 100_000.0;
        assert!((0.018..0.022).contains(&rate), "loss rate {rate}");
    }

    #[test]
    fn jitter_never_reorders() {
        let mut c = cfg(ms(10), Rate::Unlimited);
        c.jitter = ms(5);
        let mut p = Pipe::new(c, 3);
        for i in 0..1000u64 {
            p.enqueue(Duration::from_micros(i * 100), 100, i);
        }
        let out = drain(&mut p);
        assert_eq!(out.len(), 1000);
        for w in out.windows(2) {
            assert!(w[0].1 < w[1].1 && w[0].0 <= w[1].0);
        }
        let first = out[0].0;
        assert!(first >= ms(10) && first <= ms(15));
    }

    #[test]
    fn trace_replay_mahimahi_semantics() {
        // Opportunities at 0, 10, 10, 20 ms; period 20 ms.
        let t = Arc::new(Trace::parse("t", "0\n10\n10\n20\n").unwrap());
        let mut p = Pipe::new(cfg(Duration::ZERO, Rate::Trace(t)), 1);
        // Two 750-byte packets share the opportunity at 0 ms.
        assert_eq!(p.enqueue(ms(0), 750, 0), Verdict::Queued { release: ms(0) });
        assert_eq!(p.enqueue(ms(0), 750, 1), Verdict::Queued { release: ms(0) });
        // The next waits for 10 ms; a 3000-byte packet needs two
        // opportunities (the second 10 and the 20); the loop then restarts at
        // 20 + 0 = 20 ms (Mahimahi too has both a last line and a looped
        // first line at the period boundary), then 20 + 10 = 30 ms.
        assert_eq!(
            p.enqueue(ms(1), 1500, 2),
            Verdict::Queued { release: ms(10) }
        );
        assert_eq!(
            p.enqueue(ms(1), 3000, 3),
            Verdict::Queued { release: ms(20) }
        );
        assert_eq!(
            p.enqueue(ms(1), 1500, 4),
            Verdict::Queued { release: ms(20) }
        );
        assert_eq!(
            p.enqueue(ms(1), 1500, 5),
            Verdict::Queued { release: ms(30) }
        );
        // Idle until 95 ms: opportunities at 80, 90, 90 are wasted; next is
        // 100 (= cycle 5 position 0 / cycle 4 position 3).
        assert_eq!(
            p.enqueue(ms(95), 100, 6),
            Verdict::Queued { release: ms(100) }
        );
        // A packet arriving exactly at an opportunity can use it.
        let t = Arc::new(Trace::parse("t", "5\n10\n").unwrap());
        let mut p = Pipe::new(cfg(ms(1), Rate::Trace(t)), 1);
        assert_eq!(
            p.enqueue(ms(25), 100, ()),
            Verdict::Queued { release: ms(26) }
        );
    }

    #[test]
    fn trace_long_run_rate() {
        // One opportunity per ms = 12 Mbit/s; 10 s of backlog.
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let t = Arc::new(Trace::parse("t", &text).unwrap());
        let mut c = cfg(Duration::ZERO, Rate::Trace(t));
        c.queue = QueueLimit::Packets(20_000);
        let mut p = Pipe::new(c, 1);
        let mut last = Duration::ZERO;
        for i in 0..10_000 {
            if let Verdict::Queued { release } = p.enqueue(ms(0), 1500, i) {
                last = release;
            }
        }
        assert_eq!(last, ms(10_000));
    }
}
