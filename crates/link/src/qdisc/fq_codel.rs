//! FQ-CoDel, "The Flow Queue CoDel Packet Scheduler and Active Queue
//! Management Algorithm" (T. Hoeiland-Joergensen et al., RFC 8290, 2018).
//!
//! Packets are hashed by flow (5-tuple, with a seeded perturbation) into
//! `flows` queues (1024), each run by its own CoDel ([`super::codel`]).
//! A deficit round robin with `quantum` bytes (1514) serves them, with two
//! lists: a flow that becomes active joins the *new* list, which is served
//! first; a flow that has used its quantum moves to the tail of the *old*
//! list; an emptied new flow moves to the old list (so it cannot regain
//! priority at once), an emptied old flow leaves. A sparse flow (one packet
//! now and then) thus stays on the new list and waits only for the packet
//! in service, whatever a bulk flow has queued. When the hard limit is hit,
//! the head of the flow with the largest backlog is dropped, not the
//! arrival (RFC 8290 section 4.1).

use std::collections::VecDeque;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::codel::{CodelParams, CodelQueue, CodelState};
use super::{invalid_aqm, kv_duration, kv_usize, Packet, Qdisc};
use crate::config::ConfigError;

/// FQ-CoDel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FqCodelParams {
    /// Every flow's CoDel (target 5 ms, interval 100 ms).
    pub codel: CodelParams,
    /// Bytes a flow may send per round (RFC 8290: 1514).
    pub quantum: usize,
    /// Number of flow queues (RFC 8290: 1024).
    pub flows: usize,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        Self {
            codel: CodelParams::default(),
            quantum: 1514,
            flows: 1024,
        }
    }
}

impl FqCodelParams {
    pub(crate) fn from_kv(whole: &str, kv: &[(String, String)]) -> Result<Self, ConfigError> {
        let mut p = Self::default();
        for (k, v) in kv {
            match k.as_str() {
                "target" => p.codel.target = kv_duration(whole, v)?,
                "interval" => p.codel.interval = kv_duration(whole, v)?,
                "quantum" => p.quantum = kv_usize(whole, v)?,
                "flows" => p.flows = kv_usize(whole, v)?,
                _ => {
                    return Err(invalid_aqm(
                        whole,
                        "fq-codel parameters are target, interval, quantum and flows",
                    ))
                }
            }
        }
        Ok(p)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.codel.validate()?;
        if !(64..=1_048_576).contains(&self.quantum) {
            return Err(invalid_aqm(
                "fq-codel",
                "quantum must be 64..=1048576 bytes",
            ));
        }
        if !(1..=65_536).contains(&self.flows) {
            return Err(invalid_aqm("fq-codel", "flows must be 1..=65536"));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow<P> {
    q: VecDeque<Packet<P>>,
    bytes: usize,
    deficit: i64,
    codel: CodelState,
    list: List,
}

/// One flow's queue as CoDel sees it: the backlog it checks against one
/// maximum packet is the whole scheduler's (as Linux's `fq_codel`).
struct FlowView<'a, P> {
    flow: &'a mut Flow<P>,
    total_bytes: &'a mut usize,
    total_len: &'a mut usize,
}

impl<P> CodelQueue<P> for FlowView<'_, P> {
    fn pop(&mut self) -> Option<Packet<P>> {
        let p = self.flow.q.pop_front()?;
        self.flow.bytes -= p.size;
        *self.total_bytes -= p.size;
        *self.total_len -= 1;
        Some(p)
    }

    fn backlog(&self) -> usize {
        *self.total_bytes
    }
}

pub struct FqCodel<P> {
    params: FqCodelParams,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    bytes: usize,
    len: usize,
    maxpacket: usize,
    /// Seeded hash perturbation.
    perturb: u64,
}

/// SplitMix64's finalizer: a fast, well-mixed 64-bit hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<P> FqCodel<P> {
    pub fn new(params: FqCodelParams, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(0x4651); // "FQ"
        let flows = (0..params.flows)
            .map(|_| Flow {
                q: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                codel: CodelState::default(),
                list: List::None,
            })
            .collect();
        Self {
            params,
            flows,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            bytes: 0,
            len: 0,
            maxpacket: 0,
            perturb: rng.random(),
        }
    }

    fn bucket(&self, flow: u64) -> usize {
        (mix(flow ^ self.perturb) % self.flows.len() as u64) as usize
    }

    /// Flow queues holding packets.
    pub fn active_flows(&self) -> usize {
        self.flows.iter().filter(|f| !f.q.is_empty()).count()
    }
}

impl<P: Send> Qdisc<P> for FqCodel<P> {
    fn enqueue(&mut self, _now: Duration, pkt: Packet<P>) -> Result<(), Packet<P>> {
        let i = self.bucket(pkt.flow);
        self.maxpacket = self.maxpacket.max(pkt.size);
        self.bytes += pkt.size;
        self.len += 1;
        let quantum = self.params.quantum as i64;
        let f = &mut self.flows[i];
        f.bytes += pkt.size;
        f.q.push_back(pkt);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = quantum;
            self.new_flows.push_back(i);
        }
        Ok(())
    }

    fn overflow(&mut self, now: Duration, pkt: Packet<P>) -> Packet<P> {
        let _ = self.enqueue(now, pkt);
        let fattest = (0..self.flows.len())
            .max_by_key(|&i| self.flows[i].bytes)
            .expect("at least one flow");
        let f = &mut self.flows[fattest];
        let p =
            f.q.pop_front()
                .expect("the fattest flow holds the arrival at least");
        f.bytes -= p.size;
        self.bytes -= p.size;
        self.len -= 1;
        // An emptied flow stays on its list; the scheduler removes it when
        // it finds it empty.
        p
    }

    fn dequeue(&mut self, now: Duration, dropped: &mut u64) -> Option<Packet<P>> {
        let quantum = self.params.quantum as i64;
        // Bound: each turn either serves a packet, drops one or more, or
        // moves a flow between lists; a flow can be moved for its deficit
        // at most once per queued packet before it is served.
        loop {
            let from_new = !self.new_flows.is_empty();
            let i = *if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            }?;
            let f = &mut self.flows[i];
            if f.deficit <= 0 {
                f.deficit += quantum;
                f.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(i);
                continue;
            }
            let mut view = FlowView {
                flow: f,
                total_bytes: &mut self.bytes,
                total_len: &mut self.len,
            };
            let mut codel = std::mem::take(&mut view.flow.codel);
            let got = codel.dequeue(&self.params.codel, self.maxpacket, now, &mut view, dropped);
            f.codel = codel;
            match got {
                Some(p) => {
                    f.deficit -= p.size as i64;
                    return Some(p);
                }
                None => {
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if from_new && !self.old_flows.is_empty() {
                        f.list = List::Old;
                        self.old_flows.push_back(i);
                    } else {
                        f.list = List::None;
                    }
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::codel::Codel;
    use super::super::droptail::DropTail;
    use super::super::testutil::*;
    use super::*;

    /// A bulk flow offered 1.5x a 12 Mbit/s link (1500 packets/s of 1500
    /// bytes) and a sparse flow of 100-byte packets every 50 ms, for 20 s.
    fn mixed() -> Vec<(Duration, u64, usize, u64)> {
        let mut a: Vec<_> = (0..30_000u64)
            .map(|i| (Duration::from_nanos(i * 1_000_000_000 / 1500), i, 1500, 1))
            .collect();
        a.extend((0..400u64).map(|i| (ms(i * 50 + 7), 1_000_000 + i, 100, 2)));
        a.sort_by_key(|x| (x.0, x.1));
        a
    }

    fn sparse_delays_ms(q: &mut dyn Qdisc<u64>) -> Vec<f64> {
        let (deps, _, _) = run(q, 12_000_000, &mixed());
        let mut d: Vec<f64> = deps
            .iter()
            .filter(|d| d.flow == 2 && d.at >= Duration::from_secs(5))
            .map(|d| d.sojourn.as_secs_f64() * 1000.0)
            .collect();
        d.sort_by(f64::total_cmp);
        d
    }

    #[test]
    fn isolates_a_sparse_flow_from_a_bulk_flow() {
        let fq = sparse_delays_ms(&mut FqCodel::new(FqCodelParams::default(), 1));
        // The sparse flow waits at most for the bulk packet in service
        // (1 ms at 12 Mbit/s).
        let worst = *fq.last().unwrap();
        assert!(worst <= 1.0 + 1e-9, "fq-codel sparse worst {worst} ms");
        assert!(fq.len() >= 290, "sparse packets served: {}", fq.len());
        // Plain CoDel shares its one queue: the sparse flow sees the bulk
        // flow's standing delay (about target).
        let codel = sparse_delays_ms(&mut Codel::new(CodelParams::default()));
        let median = codel[codel.len() / 2];
        assert!(median > 2.0, "codel sparse median {median} ms");
        // A deep drop-tail queue: hundreds of ms (bounded only by the
        // 1000-packet limit the pipe would enforce; unbounded here).
        let dt = sparse_delays_ms(&mut DropTail::new());
        assert!(
            dt[dt.len() / 2] > 1000.0,
            "drop-tail sparse median {}",
            dt[dt.len() / 2]
        );
    }

    #[test]
    fn drr_shares_bytes_between_bulk_flows() {
        // Two backlogged flows of 1500- and 500-byte packets: DRR gives each
        // the same bytes per round, not the same packets.
        let mut q = FqCodel::new(FqCodelParams::default(), 1);
        for i in 0..300u64 {
            q.enqueue(ms(0), pkt(i, 1500, 10, ms(0))).unwrap();
        }
        for i in 0..900u64 {
            q.enqueue(ms(0), pkt(1000 + i, 500, 20, ms(0))).unwrap();
        }
        let mut bytes = [0usize; 2];
        let mut d = 0;
        // Serve 150 kB at a time stamp where CoDel cannot drop yet.
        let mut served = 0;
        while served < 150_000 {
            let p = q.dequeue(ms(1), &mut d).unwrap();
            bytes[usize::from(p.flow == 20)] += p.size;
            served += p.size;
        }
        assert_eq!(d, 0);
        let ratio = bytes[0] as f64 / bytes[1] as f64;
        assert!((0.95..1.05).contains(&ratio), "{bytes:?}");
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let mut q = FqCodel::new(FqCodelParams::default(), 1);
        for i in 0..10u64 {
            q.enqueue(ms(0), pkt(i, 1500, 1, ms(0))).unwrap();
        }
        q.enqueue(ms(0), pkt(100, 100, 2, ms(0))).unwrap();
        let dropped = q.overflow(ms(0), pkt(101, 100, 2, ms(0)));
        assert_eq!(dropped.item, 0, "head of the bulk flow");
        assert_eq!(q.len(), 11);
        assert_eq!(q.bytes(), 9 * 1500 + 200);
    }

    #[test]
    fn params_parse_and_validate() {
        let a: super::super::Aqm = "fq-codel:quantum=300,flows=16,target=2ms".parse().unwrap();
        let super::super::Aqm::FqCodel(p) = a else {
            panic!("{a:?}")
        };
        assert_eq!((p.quantum, p.flows, p.codel.target), (300, 16, ms(2)));
        for bad in [
            "fq-codel:flows=0",
            "fq-codel:quantum=1.5",
            "fq-codel:bands=3",
        ] {
            assert!(bad.parse::<super::super::Aqm>().is_err(), "{bad}");
        }
    }
}
