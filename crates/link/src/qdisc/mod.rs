//! Queue disciplines: the one contract every queue of the link keeps, and
//! one file per discipline (as Mahimahi keeps one class per queue).
//!
//! A discipline holds the packets waiting for the serializer. The pipe
//! ([`crate::pipe`]) offers it each packet that survived the loss stage
//! ([`Qdisc::enqueue`]), asks it for the next packet whenever the serializer
//! is free ([`Qdisc::dequeue`], at that exact virtual time), and enforces the
//! hard `--queue` limit itself, calling [`Qdisc::overflow`] when it is hit.
//! Nothing here reads a clock: `now` is passed in, and every call comes in
//! non-decreasing time order, so a discipline with a periodic timer (PIE)
//! runs its missed ticks lazily and still exactly.
//!
//! - [`droptail`]: first in, first out; the arriving packet is dropped when
//!   the queue is full (the link's behaviour before AQM, and the default);
//! - [`codel`]: CoDel (Nichols & Jacobson, "Controlling Queue Delay", ACM
//!   Queue 2012; RFC 8289);
//! - [`pie`]: PIE (RFC 8033);
//! - [`fq_codel`]: FQ-CoDel (RFC 8290).

use std::time::Duration;

use serde::Serialize;

use crate::config::ConfigError;

pub mod codel;
pub mod droptail;
pub mod fq_codel;
pub mod pie;

/// A packet while the link holds it.
#[derive(Debug)]
pub struct Packet<P> {
    /// Unique within one pipe (the order packets were accepted).
    pub id: u64,
    pub item: P,
    /// IP bytes: what queue limits, backlogs and DRR deficits count.
    pub size: usize,
    /// Octets on the line (compressed with `--link-compress`): what the
    /// serializer counts.
    pub line: usize,
    /// Flow identity (a hash of the 5-tuple; 0 when unknown). Only FQ-CoDel
    /// looks at it.
    pub flow: u64,
    /// When it entered the queue (for sojourn times).
    pub enqueued: Duration,
    /// Its jitter, drawn when it was accepted (the draw order of the seeded
    /// stream does not depend on the discipline).
    pub jitter: Duration,
}

/// The contract of a queue discipline.
pub trait Qdisc<P>: Send {
    /// Takes a packet arriving at `now` (the pipe has checked the hard limit
    /// first). `Err(packet)`: the discipline dropped it on arrival (PIE).
    fn enqueue(&mut self, now: Duration, pkt: Packet<P>) -> Result<(), Packet<P>>;

    /// The queue is at the hard limit and `pkt` arrives: returns the packet
    /// dropped. The default (drop-tail) drops the arrival; FQ-CoDel takes it
    /// and drops the head of its fattest flow (RFC 8290 section 4.1).
    fn overflow(&mut self, _now: Duration, pkt: Packet<P>) -> Packet<P> {
        pkt
    }

    /// The packet to serialize next, the serializer being free at `now`.
    /// Packets the discipline drops on the way out (CoDel) are counted in
    /// `dropped` and freed.
    fn dequeue(&mut self, now: Duration, dropped: &mut u64) -> Option<Packet<P>>;

    /// Packets waiting.
    fn len(&self) -> usize;

    /// IP bytes waiting.
    fn bytes(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Which discipline a direction of the link runs, with its parameters
/// (`--aqm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Aqm {
    #[default]
    DropTail,
    Codel(codel::CodelParams),
    Pie(pie::PieParams),
    FqCodel(fq_codel::FqCodelParams),
}

impl Aqm {
    pub const fn name(&self) -> &'static str {
        match self {
            Aqm::DropTail => "droptail",
            Aqm::Codel(_) => "codel",
            Aqm::Pie(_) => "pie",
            Aqm::FqCodel(_) => "fq-codel",
        }
    }

    /// Builds the discipline; `seed` feeds its own random stream (PIE's
    /// drops, FQ-CoDel's hash perturbation).
    pub fn build<P: Send + 'static>(&self, seed: u64) -> Box<dyn Qdisc<P>> {
        match *self {
            Aqm::DropTail => Box::new(droptail::DropTail::new()),
            Aqm::Codel(p) => Box::new(codel::Codel::new(p)),
            Aqm::Pie(p) => Box::new(pie::Pie::new(p, seed)),
            Aqm::FqCodel(p) => Box::new(fq_codel::FqCodel::new(p, seed)),
        }
    }

    /// Checks the parameters' ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            Aqm::DropTail => Ok(()),
            Aqm::Codel(p) => p.validate(),
            Aqm::Pie(p) => p.validate(),
            Aqm::FqCodel(p) => p.validate(),
        }
    }
}

impl std::str::FromStr for Aqm {
    type Err = ConfigError;

    /// `droptail`, `codel`, `pie`, `fq-codel`, each optionally followed by
    /// `:key=value,...` (e.g. `codel:target=5ms,interval=100ms`,
    /// `pie:target=15ms,tupdate=15ms,alpha=0.125,beta=1.25,burst=150ms`,
    /// `fq-codel:target=5ms,interval=100ms,quantum=1514,flows=1024`).
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let t = s.trim().to_ascii_lowercase();
        let (name, params) = match t.split_once(':') {
            Some((n, p)) => (n.trim().to_string(), p.to_string()),
            None => (t.clone(), String::new()),
        };
        let kv = parse_kv(s, &params)?;
        let aqm = match name.as_str() {
            "droptail" | "drop-tail" | "fifo" | "none" => {
                if !kv.is_empty() {
                    return Err(invalid_aqm(s, "droptail takes no parameters"));
                }
                Aqm::DropTail
            }
            "codel" => Aqm::Codel(codel::CodelParams::from_kv(s, &kv)?),
            "pie" => Aqm::Pie(pie::PieParams::from_kv(s, &kv)?),
            "fq-codel" | "fq_codel" | "fqcodel" => {
                Aqm::FqCodel(fq_codel::FqCodelParams::from_kv(s, &kv)?)
            }
            _ => {
                return Err(invalid_aqm(
                    s,
                    "expected droptail, codel, pie or fq-codel (optionally :key=value,...)",
                ))
            }
        };
        aqm.validate().map_err(|e| match e {
            ConfigError::Invalid { why, .. } => invalid_aqm(s, why),
            e => e,
        })?;
        Ok(aqm)
    }
}

pub(crate) fn invalid_aqm(value: &str, why: &'static str) -> ConfigError {
    ConfigError::Invalid {
        what: "aqm",
        value: value.to_string(),
        why,
    }
}

/// Splits `k=v,k=v`; an empty string gives no pairs.
pub(crate) fn parse_kv(whole: &str, s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(invalid_aqm(
                whole,
                "parameters are key=value, comma-separated",
            ));
        };
        let k = k.trim().to_string();
        if out.iter().any(|(o, _)| *o == k) {
            return Err(invalid_aqm(whole, "a parameter is given twice"));
        }
        out.push((k, v.trim().to_string()));
    }
    Ok(out)
}

/// A duration parameter of a discipline.
pub(crate) fn kv_duration(whole: &str, v: &str) -> Result<Duration, ConfigError> {
    crate::config::parse_duration(v).map_err(|_| {
        invalid_aqm(
            whole,
            "a time parameter needs a unit (e.g. target=5ms, interval=100ms)",
        )
    })
}

/// A number parameter of a discipline.
pub(crate) fn kv_f64(whole: &str, v: &str) -> Result<f64, ConfigError> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(invalid_aqm(whole, "a numeric parameter is not a number")),
    }
}

/// An integer parameter of a discipline.
pub(crate) fn kv_usize(whole: &str, v: &str) -> Result<usize, ConfigError> {
    v.parse::<usize>()
        .map_err(|_| invalid_aqm(whole, "an integer parameter is not a whole number"))
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    pub fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    pub fn pkt(id: u64, size: usize, flow: u64, now: Duration) -> Packet<u64> {
        Packet {
            id,
            item: id,
            size,
            line: size,
            flow,
            enqueued: now,
            jitter: Duration::ZERO,
        }
    }

    /// One departure of a bottleneck simulation.
    pub struct Departure {
        pub at: Duration,
        pub flow: u64,
        pub sojourn: Duration,
    }

    /// Drives `q` as a link of `rate_bps` would in virtual time: arrivals
    /// `(time, id, size, flow)` (sorted by time) are enqueued, the
    /// serializer dequeues whenever it is free. Returns departures (when
    /// each packet started serialization), drop times at dequeue, and the
    /// ids dropped on arrival.
    pub fn run(
        q: &mut dyn Qdisc<u64>,
        rate_bps: u64,
        arrivals: &[(Duration, u64, usize, u64)],
    ) -> (Vec<Departure>, Vec<Duration>, Vec<u64>) {
        let mut deps = Vec::new();
        let mut drop_times = Vec::new();
        let mut arrival_drops = Vec::new();
        let mut free_at = Duration::ZERO;
        let mut busy = false;
        let mut i = 0;
        let tx = |size: usize| Duration::from_nanos((size as u64 * 8 * 1_000_000_000) / rate_bps);
        loop {
            // Next event: serializer free (if busy) or the next arrival.
            let next_arrival = arrivals.get(i).map(|a| a.0);
            let serve_first = busy && next_arrival.is_none_or(|a| free_at <= a);
            if serve_first || (!busy && !q.is_empty()) {
                let now = free_at;
                let mut dropped = 0;
                let got = q.dequeue(now, &mut dropped);
                for _ in 0..dropped {
                    drop_times.push(now);
                }
                match got {
                    Some(p) => {
                        deps.push(Departure {
                            at: now,
                            flow: p.flow,
                            sojourn: now - p.enqueued,
                        });
                        free_at = now + tx(p.size);
                        busy = true;
                    }
                    None => busy = false,
                }
                continue;
            }
            let Some(&(t, id, size, flow)) = arrivals.get(i) else {
                break;
            };
            i += 1;
            if let Err(p) = q.enqueue(t, pkt(id, size, flow, t)) {
                arrival_drops.push(p.item);
            }
            if !busy {
                free_at = t;
                busy = true;
                // Serializer idle: it takes the packet at once (the next
                // loop turn dequeues at `free_at` = t).
                let mut dropped = 0;
                let got = q.dequeue(t, &mut dropped);
                for _ in 0..dropped {
                    drop_times.push(t);
                }
                match got {
                    Some(p) => {
                        deps.push(Departure {
                            at: t,
                            flow: p.flow,
                            sojourn: t - p.enqueued,
                        });
                        free_at = t + tx(p.size);
                    }
                    None => busy = false,
                }
            }
        }
        (deps, drop_times, arrival_drops)
    }
}
