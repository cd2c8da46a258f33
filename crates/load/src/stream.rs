//! The request stream: which web object each user equivalent asks for and
//! when.
//!
//! Like SURGE, the references are one "name sequence" built ahead of time
//! over the files' popularity ranks (popularity is per file, paper 004
//! Appendix A), in which each rank appears as often as its Zipf weight
//! says, ordered by the stack-distance model of temporal locality: keep the
//! not-yet-exhausted ranks in an LRU stack (most popular on top at the
//! start), draw a stack distance from the lognormal, emit the rank at that
//! depth and move it to the top. A reference to a base page fetches the
//! page and its embedded files (one web object); a reference to any other
//! file fetches that file alone. Every UE walks the same sequence from its
//! own seeded starting point, so a UE's stream depends only on the stream
//! seed and its index (the same in any shard), never on the file set's seed.
//!
//! Each UE is an ON/OFF user: a session of `round(IG(3.86, 6.08))` objects
//! (at least one), a Pareto OFF time between objects (and between
//! sessions), and Weibull "active OFF" times between the files of one
//! object. The think process is drawn the same way in every mode (see
//! [`User::active_offs`]); only the transfer differs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};

use crate::model::{Model, Params};

/// The shared, read-only name sequence (object indices).
#[derive(Debug, Clone)]
pub struct NameSequence {
    seq: Arc<[u32]>,
}

impl NameSequence {
    /// `len` Zipf draws over `objects` objects (every object at least once,
    /// as in SURGE), ordered by the stack-distance model.
    pub fn generate(objects: usize, len: usize, params: &Params, seed: u64) -> NameSequence {
        assert!(objects > 0);
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EC0_0E5E);
        let zipf = Zipf::new(objects as f64, params.zipf_s).expect("valid Zipf");
        let mut counts = vec![0u32; objects];
        for _ in 0..len {
            let r: f64 = zipf.sample(&mut rng);
            let idx = (r as usize).clamp(1, objects) - 1;
            counts[idx] += 1;
        }
        for c in counts.iter_mut() {
            *c = (*c).max(1);
        }
        // Initial stack: most popular on top.
        let mut stack: Vec<u32> = (0..objects as u32).collect();
        stack.sort_by_key(|&o| std::cmp::Reverse(counts[o as usize]));
        let dist = Model::lognormal(params.stack_distance);
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut seq = Vec::with_capacity(total);
        while !stack.is_empty() {
            let d = (dist.sample(&mut rng) as usize).min(stack.len() - 1);
            let o = stack.remove(d);
            seq.push(o);
            counts[o as usize] -= 1;
            if counts[o as usize] > 0 {
                stack.insert(0, o);
            }
        }
        NameSequence { seq: seq.into() }
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.seq
    }
}

/// One user equivalent's random choices (never its timing state).
#[derive(Debug)]
pub struct User {
    rng: ChaCha8Rng,
    names: NameSequence,
    pos: usize,
    session_left: u32,
    off: Model,
    off_params: (f64, f64),
    active_off: Model,
    session: Model,
}

/// The next object and whether it starts a new session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next {
    pub object: u32,
    pub new_session: bool,
}

impl User {
    /// UE number `ue` (global across shards) of a run with `seed`.
    pub fn new(ue: u64, seed: u64, names: NameSequence, params: &Params) -> User {
        let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ ue);
        let pos = rng.random_range(0..names.seq.len());
        User {
            rng,
            names,
            pos,
            session_left: 0,
            off: Model::pareto(params.off),
            off_params: params.off,
            active_off: Model::Weibull {
                scale: params.active_off.0,
                shape: params.active_off.1,
            },
            session: Model::InverseGaussian {
                mu: params.session.0,
                lambda: params.session.1,
            },
        }
    }

    pub fn next_object(&mut self) -> Next {
        let new_session = self.session_left == 0;
        if new_session {
            self.session_left = session_objects(self.session.sample(&mut self.rng));
        }
        self.session_left -= 1;
        let object = self.names.seq[self.pos];
        self.pos = (self.pos + 1) % self.names.seq.len();
        Next {
            object,
            new_session,
        }
    }

    /// True when the object just returned by `next_object` was the last of its session.
    pub fn session_ends(&self) -> bool {
        self.session_left == 0
    }

    /// Think time after an object (Pareto, seconds).
    pub fn off_time(&mut self) -> Duration {
        secs(self.off.sample(&mut self.rng))
    }

    /// Time between the files of one object (Weibull, seconds).
    pub fn active_off_time(&mut self) -> Duration {
        secs(self.active_off.sample(&mut self.rng))
    }

    /// The active OFF times of an object of `files` files: one before each
    /// file after the first, drawn when the object starts, in every mode
    /// (sequential modes wait each before its file; pipelined modes wait the
    /// first before the batch and the rest after it), so that the think
    /// process, and with it the offered load, is the same in every mode.
    pub fn active_offs(&mut self, files: usize) -> VecDeque<Duration> {
        (1..files).map(|_| self.active_off_time()).collect()
    }

    /// Where this UE starts in its ON/OFF cycle: the residual of an OFF
    /// period in the stationary state (the equilibrium distribution of the
    /// Pareto OFF time: with probability (a-1)/a uniform on [0, k], else
    /// Pareto(k, a-1)). The ON periods are short beside the OFF periods
    /// (seconds of active OFF against a mean OFF of 3.5 s), so every UE
    /// starts in an OFF period, at a random phase.
    pub fn stationary_start(&mut self) -> Duration {
        let (k, a) = self.off_params;
        let u: f64 = self.rng.random();
        let v: f64 = self.rng.random();
        if u < (a - 1.0) / a {
            secs(v * k)
        } else {
            // Inverse CDF of Pareto(k, a-1).
            secs(k * (1.0 - v).powf(-1.0 / (a - 1.0)))
        }
    }

    /// A uniform draw for start-time jitter.
    pub fn unit(&mut self) -> f64 {
        self.rng.random::<f64>()
    }
}

/// Web objects in a session of inverse-Gaussian length `x`: `x` rounded to
/// the nearest integer, at least 1. (`ceil` would add about 0.5 to the
/// mean: 4.37 instead of the model's 3.86, 13 % more objects per session
/// and per persistent connection; rounding keeps the mean within 1 %.)
pub fn session_objects(x: f64) -> u32 {
    x.round().max(1.0) as u32
}

/// Seconds to a Duration, saturating at one day (the Pareto's tail is
/// unbounded; a run never lasts that long).
fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 86_400.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_is_deterministic_and_covers_every_object() {
        let p = Params::default();
        let a = NameSequence::generate(50, 5000, &p, 7);
        let b = NameSequence::generate(50, 5000, &p, 7);
        assert_eq!(a.as_slice(), b.as_slice());
        let mut seen = [false; 50];
        for &o in a.as_slice() {
            seen[o as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn session_rounding_keeps_the_models_mean_and_ceil_would_not() {
        use rand::SeedableRng;
        let m = Model::InverseGaussian {
            mu: 3.86,
            lambda: 6.08,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let n = 200_000;
        let (mut rounded, mut ceiled) = (0u64, 0u64);
        for _ in 0..n {
            let x = m.sample(&mut rng);
            rounded += session_objects(x) as u64;
            ceiled += x.ceil().max(1.0) as u64;
        }
        let (r, c) = (rounded as f64 / n as f64, ceiled as f64 / n as f64);
        assert!((r / 3.86 - 1.0).abs() < 0.02, "round: {r}");
        assert!(c / 3.86 > 1.10, "ceil: {c}");
    }

    #[test]
    fn stationary_start_has_the_residual_offs_median() {
        // Equilibrium residual of Pareto(1, 1.4): P(R <= x) = x / 3.5 below
        // k = 1, so P(R <= 0.5) = 0.143 and P(R <= 1) = 0.286.
        let p = Params::default();
        let names = NameSequence::generate(50, 5000, &p, 7);
        let n = 50_000;
        let (mut half, mut one) = (0, 0);
        for ue in 0..n {
            let mut u = User::new(ue, 3, names.clone(), &p);
            let d = u.stationary_start().as_secs_f64();
            half += (d <= 0.5) as u32;
            one += (d <= 1.0) as u32;
        }
        let (h, o) = (half as f64 / n as f64, one as f64 / n as f64);
        assert!((h - 0.5 / 3.5).abs() < 0.01, "{h}");
        assert!((o - 1.0 / 3.5).abs() < 0.01, "{o}");
    }

    #[test]
    fn users_are_independent_of_each_other() {
        let p = Params::default();
        let names = NameSequence::generate(50, 5000, &p, 7);
        let mut u1 = User::new(3, 9, names.clone(), &p);
        let mut u1b = User::new(3, 9, names.clone(), &p);
        let _u2 = User::new(4, 9, names, &p);
        for _ in 0..100 {
            assert_eq!(u1.next_object(), u1b.next_object());
            assert_eq!(u1.off_time(), u1b.off_time());
        }
    }
}
