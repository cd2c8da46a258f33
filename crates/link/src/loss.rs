//! Loss models: the stage a packet meets first when it enters the link.
//!
//! - Bernoulli: each packet is lost independently with probability `p`
//!   (`--loss 2%`);
//! - Gilbert-Elliott: a two-state Markov chain (E. N. Gilbert, "Capacity of
//!   a burst-noise channel", Bell System Technical Journal, 1960;
//!   E. O. Elliott, 1963), in the parameterisation of netem's `gemodel` and
//!   of Hasslinger & Hohlfeld, "The Gilbert-Elliott Model for Packet Loss in
//!   Real Time Services on the Internet" (MMB 2008): from the good state the
//!   chain moves to the bad one with probability `p`, back with `r`; a packet
//!   is delivered with probability `k` in the good state and `h` in the bad
//!   one. The defaults `k = 1`, `h = 0` give Gilbert's simple model: loss
//!   bursts of geometric length with mean `1/r`, a long-run loss rate of
//!   `p / (p + r)` (in general `(1-k) * r/(p+r) + (1-h) * p/(p+r)`).
//!
//! Each packet first moves the chain one step, then meets the new state's
//! loss probability.

use rand::RngExt;
use serde::Serialize;

use crate::units::ConfigError;

/// A loss model (`--loss`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// Independent loss with this probability in [0, 1).
    Bernoulli(f64),
    GilbertElliott(GilbertElliott),
}

impl Default for LossModel {
    fn default() -> Self {
        LossModel::Bernoulli(0.0)
    }
}

/// Serialized as a bare probability (as before Gilbert-Elliott existed) or
/// as `{"model": "gilbert-elliott", "p": .., "r": .., "h": .., "k": ..}`.
impl Serialize for LossModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LossModel::Bernoulli(p) => s.serialize_f64(*p),
            LossModel::GilbertElliott(g) => g.serialize(s),
        }
    }
}

/// Gilbert-Elliott parameters (probabilities in [0, 1]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "model", rename = "gilbert-elliott")]
pub struct GilbertElliott {
    /// Good -> bad transition probability per packet.
    pub p: f64,
    /// Bad -> good transition probability per packet.
    pub r: f64,
    /// Delivery probability in the bad state.
    pub h: f64,
    /// Delivery probability in the good state.
    pub k: f64,
}

impl GilbertElliott {
    /// Stationary probability of the bad state, `p / (p + r)`.
    pub fn bad_share(&self) -> f64 {
        if self.p + self.r == 0.0 {
            0.0
        } else {
            self.p / (self.p + self.r)
        }
    }

    /// Long-run loss rate.
    pub fn loss_rate(&self) -> f64 {
        let b = self.bad_share();
        (1.0 - self.k) * (1.0 - b) + (1.0 - self.h) * b
    }
}

fn invalid(value: &str, why: &'static str) -> ConfigError {
    ConfigError::Invalid {
        what: "loss",
        value: value.to_string(),
        why,
    }
}

/// A probability: `0.02` or `2%`.
fn probability(whole: &str, v: &str) -> Result<f64, ConfigError> {
    let t = v.trim();
    let x = if let Some(pc) = t.strip_suffix('%') {
        pc.trim().parse::<f64>().map(|x| x / 100.0)
    } else {
        t.parse::<f64>()
    }
    .map_err(|_| invalid(whole, "expected e.g. 0.02 or 2%"))?;
    if !(0.0..=1.0).contains(&x) {
        return Err(invalid(whole, "probabilities must be in [0, 1]"));
    }
    Ok(x)
}

impl LossModel {
    /// Parses `--loss`: `0.02`, `2%` (Bernoulli) or
    /// `ge:p=0.01,r=0.25[,h=0][,k=1]` (Gilbert-Elliott; `gilbert-elliott:`
    /// works too; each value a probability or a percentage).
    pub fn parse(s: &str) -> Result<Self, ConfigError> {
        let t = s.trim().to_ascii_lowercase();
        let Some(params) = t
            .strip_prefix("ge:")
            .or(t.strip_prefix("gilbert-elliott:"))
            .or(t.strip_prefix("gilbert:"))
        else {
            if t.contains(':') || t.contains('=') {
                return Err(invalid(
                    s,
                    "expected a probability (0.02, 2%) or ge:p=..,r=..[,h=..][,k=..]",
                ));
            }
            let p = probability(s, &t)?;
            if p >= 1.0 {
                return Err(invalid(s, "must be in [0, 1)"));
            }
            return Ok(LossModel::Bernoulli(p));
        };
        let (mut p, mut r, mut h, mut k) = (None, None, None, None);
        let parts: Vec<&str> = params
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .collect();
        // Positional (`ge:1%,25%[,h[,k]]`, in the keys' order) or all
        // key=value; not mixed.
        let positional = parts.iter().all(|x| !x.contains('='));
        if positional && parts.len() > 4 {
            return Err(invalid(
                s,
                "Gilbert-Elliott takes at most four values: p, r, h, k",
            ));
        }
        for (i, part) in parts.into_iter().enumerate() {
            let (key, v) = if positional {
                (["p", "r", "h", "k"][i], part)
            } else {
                let Some(kv) = part.split_once('=') else {
                    return Err(invalid(
                        s,
                        "Gilbert-Elliott parameters are all key=value (p, r, h, k) or all \
                         positional (p,r[,h[,k]])",
                    ));
                };
                kv
            };
            let slot = match key.trim() {
                "p" => &mut p,
                "r" => &mut r,
                "h" => &mut h,
                "k" => &mut k,
                _ => return Err(invalid(s, "Gilbert-Elliott parameters are p, r, h and k")),
            };
            if slot.is_some() {
                return Err(invalid(s, "a parameter is given twice"));
            }
            *slot = Some(probability(s, v)?);
        }
        let (Some(p), Some(r)) = (p, r) else {
            return Err(invalid(
                s,
                "Gilbert-Elliott needs p (good->bad) and r (bad->good), e.g. ge:p=1%,r=25%",
            ));
        };
        let g = GilbertElliott {
            p,
            r,
            h: h.unwrap_or(0.0),
            k: k.unwrap_or(1.0),
        };
        LossModel::GilbertElliott(g)
            .validate()
            .map_err(|e| match e {
                ConfigError::Invalid { why, .. } => invalid(s, why),
                e => e,
            })?;
        Ok(LossModel::GilbertElliott(g))
    }

    /// Checks ranges (also for values set in code).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match *self {
            LossModel::Bernoulli(p) => {
                if !(0.0..1.0).contains(&p) {
                    return Err(invalid(&p.to_string(), "must be in [0, 1)"));
                }
            }
            LossModel::GilbertElliott(g) => {
                for x in [g.p, g.r, g.h, g.k] {
                    if !(0.0..=1.0).contains(&x) {
                        return Err(invalid(&x.to_string(), "probabilities must be in [0, 1]"));
                    }
                }
                if g.r == 0.0 && g.p > 0.0 {
                    return Err(invalid(
                        "r=0",
                        "r must be > 0 (with r = 0 the bad state is never left)",
                    ));
                }
                if g.loss_rate() >= 1.0 {
                    return Err(invalid("ge", "the long-run loss rate must be below 1"));
                }
            }
        }
        Ok(())
    }

    /// Whether this model never loses anything.
    pub fn is_none(&self) -> bool {
        match *self {
            LossModel::Bernoulli(p) => p == 0.0,
            LossModel::GilbertElliott(g) => g.loss_rate() == 0.0,
        }
    }

    /// Short text for labels: `2%` or `ge(p=..,r=..,h=..,k=..)`.
    pub fn label(&self) -> String {
        match *self {
            LossModel::Bernoulli(p) => format!("{}%", p * 100.0),
            LossModel::GilbertElliott(g) => {
                format!("ge(p={},r={},h={},k={})", g.p, g.r, g.h, g.k)
            }
        }
    }
}

/// The loss stage's state.
#[derive(Clone, Debug)]
pub struct LossStage {
    model: LossModel,
    bad: bool,
}

impl LossStage {
    pub fn new(model: LossModel) -> Self {
        Self { model, bad: false }
    }

    /// Whether the next packet is lost. Bernoulli draws once per packet only
    /// when its probability is > 0 (the draw sequence of the pipe's seeded
    /// stream is the same as before this stage existed).
    pub fn lose<R: RngExt>(&mut self, rng: &mut R) -> bool {
        match self.model {
            LossModel::Bernoulli(p) => p > 0.0 && rng.random::<f64>() < p,
            LossModel::GilbertElliott(g) => {
                let u: f64 = rng.random();
                self.bad = if self.bad { u >= g.r } else { u < g.p };
                let deliver = if self.bad { g.h } else { g.k };
                rng.random::<f64>() >= deliver
            }
        }
    }

    /// Whether the chain is in its bad state.
    pub fn in_bad_state(&self) -> bool {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Loss pattern over `n` packets.
    fn pattern(g: GilbertElliott, seed: u64, n: usize) -> Vec<bool> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut s = LossStage::new(LossModel::GilbertElliott(g));
        (0..n).map(|_| s.lose(&mut rng)).collect()
    }

    fn bursts(v: &[bool]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut run = 0;
        for &lost in v {
            if lost {
                run += 1;
            } else if run > 0 {
                out.push(run);
                run = 0;
            }
        }
        if run > 0 {
            out.push(run);
        }
        out
    }

    #[test]
    fn simple_gilbert_matches_loss_rate_and_burst_length() {
        // p = 1%, r = 25%: loss rate p/(p+r) = 3.85%, mean burst 1/r = 4.
        let g = GilbertElliott {
            p: 0.01,
            r: 0.25,
            h: 0.0,
            k: 1.0,
        };
        let n = 1_000_000;
        let v = pattern(g, 11, n);
        let rate = v.iter().filter(|&&x| x).count() as f64 / n as f64;
        let want = 0.01 / 0.26;
        // ~9600 bursts of variance (1-r)/r^2 = 12: the rate's standard
        // error is ~1.4% of it; the bounds are ~4 standard errors.
        assert!(
            (rate - want).abs() / want < 0.06,
            "loss rate {rate}, want {want}"
        );
        let b = bursts(&v);
        let mean = b.iter().sum::<usize>() as f64 / b.len() as f64;
        assert!((mean - 4.0).abs() < 0.15, "mean burst {mean}, want 4");
        // Burst lengths are geometric: P(len = 1) = r.
        let ones = b.iter().filter(|&&l| l == 1).count() as f64 / b.len() as f64;
        assert!((ones - 0.25).abs() < 0.02, "P(burst = 1) {ones}");
        // Same seed, same pattern; another seed, another.
        assert_eq!(v[..10_000], pattern(g, 11, 10_000)[..]);
        assert_ne!(v[..10_000], pattern(g, 12, 10_000)[..]);
    }

    #[test]
    fn general_model_loss_rate() {
        // Loss in both states: 1% in good, 60% in bad; bad share 1/6.
        let g = GilbertElliott {
            p: 0.02,
            r: 0.10,
            h: 0.4,
            k: 0.99,
        };
        let n = 1_000_000;
        let v = pattern(g, 5, n);
        let rate = v.iter().filter(|&&x| x).count() as f64 / n as f64;
        let want = g.loss_rate();
        assert!((want - (0.01 * 5.0 / 6.0 + 0.6 / 6.0)).abs() < 1e-12);
        assert!(
            (rate - want).abs() / want < 0.05,
            "loss {rate}, want {want}"
        );
        // Bursty: losses cluster, so P(loss | previous lost) is far above
        // the mean rate (it would equal it for independent loss).
        let pairs = v.windows(2).filter(|w| w[0]).count() as f64;
        let both = v.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(both / pairs > 3.0 * rate, "{} vs {rate}", both / pairs);
    }

    #[test]
    fn parse_and_errors() {
        assert_eq!(LossModel::parse("2%").unwrap(), LossModel::Bernoulli(0.02));
        assert_eq!(LossModel::parse("0.5").unwrap(), LossModel::Bernoulli(0.5));
        assert_eq!(
            LossModel::parse("ge:p=1%,r=25%").unwrap(),
            LossModel::GilbertElliott(GilbertElliott {
                p: 0.01,
                r: 0.25,
                h: 0.0,
                k: 1.0
            })
        );
        assert_eq!(
            LossModel::parse("ge:1%,25%").unwrap(),
            LossModel::parse("ge:p=1%,r=25%").unwrap()
        );
        assert_eq!(
            LossModel::parse("ge:0.01,0.3,0.2,0.99").unwrap(),
            LossModel::parse("ge:p=0.01,r=0.3,h=0.2,k=0.99").unwrap()
        );
        assert_eq!(
            LossModel::parse("GE:p=0.01, r=0.3, h=0.2, k=0.99").unwrap(),
            LossModel::GilbertElliott(GilbertElliott {
                p: 0.01,
                r: 0.3,
                h: 0.2,
                k: 0.99
            })
        );
        for bad in [
            "1",
            "150%",
            "ge:p=0.01",
            "ge:p=0.01,r=0",
            "ge:p=2,r=0.1",
            "ge:p=0.1,r=0.1,x=3",
            "ge:1%",
            "ge:1%,r=25%",
            "ge:1%,25%,0,1,0",
            "ge:p=0.1,r=0.1,p=0.2",
            "ge:p",
            "ge:p=0.1,r=0.1,h=0,k=0",
            "bursty",
            "x:p=1",
        ] {
            let e = LossModel::parse(bad).unwrap_err().to_string();
            assert!(e.contains("loss"), "{bad}: {e}");
        }
    }
}
