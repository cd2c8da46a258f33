//! Drop-tail: first in, first out; when the hard limit is reached the
//! arriving packet is dropped (the pipe's default, as in Mahimahi's
//! `DroppingPacketQueue` and Linux's `pfifo`).

use std::collections::VecDeque;
use std::time::Duration;

use super::{Packet, Qdisc};

pub struct DropTail<P> {
    q: VecDeque<Packet<P>>,
    bytes: usize,
}

impl<P> DropTail<P> {
    pub fn new() -> Self {
        Self {
            q: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<P> Default for DropTail<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Send> Qdisc<P> for DropTail<P> {
    fn enqueue(&mut self, _now: Duration, pkt: Packet<P>) -> Result<(), Packet<P>> {
        self.bytes += pkt.size;
        self.q.push_back(pkt);
        Ok(())
    }

    fn dequeue(&mut self, _now: Duration, _dropped: &mut u64) -> Option<Packet<P>> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size;
        Some(p)
    }

    fn len(&self) -> usize {
        self.q.len()
    }

    fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn fifo_order_and_backlog() {
        let mut q = DropTail::new();
        for i in 0..5 {
            q.enqueue(ms(i), pkt(i, 100 * (i as usize + 1), 0, ms(i)))
                .unwrap();
        }
        assert_eq!((q.len(), q.bytes()), (5, 1500));
        let mut d = 0;
        let ids: Vec<_> =
            std::iter::from_fn(|| q.dequeue(ms(10), &mut d).map(|p| p.item)).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4]);
        assert_eq!((q.len(), q.bytes(), d), (0, 0, 0));
        // Overflow drops the arrival.
        let arrival = pkt(9, 100, 0, ms(11));
        assert_eq!(Qdisc::overflow(&mut q, ms(11), arrival).item, 9);
    }
}
