//! The open model's schedule: when each request of a fixed-rate URL run
//! is due and on which connection. Shared by both engines (`urls` on
//! tokio, `tick` on its own loop), below both.

use std::time::Duration;

use tokio::time::Instant;

/// The open model's arrival times: request `g` of the run (0-based, over
/// all connections) is due at `start + g / rate`, and is connection
/// `g mod connections`'s. Requests due at or after `end` are not sent.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub start: Instant,
    pub end: Instant,
    pub rate: f64,
    pub connections: u64,
}

impl Schedule {
    /// When request `g` is due.
    pub fn intended(&self, g: u64) -> Instant {
        self.start + Duration::from_secs_f64(g as f64 / self.rate)
    }
    /// When connection `i`'s `k`-th request (0-based) is due.
    pub fn intended_on(&self, i: u64, k: u64) -> Instant {
        self.intended(k * self.connections + i)
    }
    /// The requests from `from` on that are due at `now` (and before the
    /// end): `from..to`, every one of them, however many a late tick finds.
    pub fn due(&self, from: u64, now: Instant) -> std::ops::Range<u64> {
        let mut to = from;
        loop {
            let t = self.intended(to);
            if t > now || t >= self.end {
                return from..to;
            }
            to += 1;
        }
    }
    /// Whether any request from `g` on is still to come.
    pub fn has(&self, g: u64) -> bool {
        self.intended(g) < self.end
    }
}
