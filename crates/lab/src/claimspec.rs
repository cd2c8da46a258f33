//! Claims as data (issue 10's shape): a suite's claims are a static table of
//! [`ClaimSpec`]s, each holding the paper's whole sentence and a rule that
//! turns the suite's measurements into a verdict with its evidence.
//!
//! This is a local stand-in with the same names and shape as the shared
//! `claims::spec` module, so that switching to it is a rename.

use crate::claims::{Claim, Verdict};

/// A quantity measured over repetitions.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub mean: f64,
    pub sd: f64,
    pub n: u32,
}

/// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
fn t975(df: u32) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df as usize - 1],
        _ => 1.96,
    }
}

impl Estimate {
    pub fn of(xs: &[f64]) -> Estimate {
        let n = xs.len();
        if n == 0 {
            return Estimate {
                mean: f64::NAN,
                sd: f64::NAN,
                n: 0,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Estimate {
            mean,
            sd,
            n: n as u32,
        }
    }

    /// 95 % confidence interval of the mean (Student t). A single
    /// observation has an unbounded interval.
    pub fn ci95(&self) -> (f64, f64) {
        if self.n < 2 {
            return (f64::NEG_INFINITY, f64::INFINITY);
        }
        let h = t975(self.n - 1) * self.sd / (self.n as f64).sqrt();
        (self.mean - h, self.mean + h)
    }
}

/// A ratio of two estimates with an interval from the ends of theirs
/// (conservative: the widest ratio the two intervals allow).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RatioEstimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

pub fn ratio(a: Estimate, b: Estimate) -> RatioEstimate {
    let (alo, ahi) = a.ci95();
    let (blo, bhi) = b.ci95();
    let lo = if bhi > 0.0 {
        alo / bhi
    } else {
        f64::NEG_INFINITY
    };
    let hi = if blo > 0.0 { ahi / blo } else { f64::INFINITY };
    RatioEstimate {
        value: a.mean / b.mean,
        lo,
        hi,
    }
}

/// Whether a claim is about the world or only a check that the experiment
/// was set up as the paper's (true by construction, never counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    Claim,
    PageCheck,
}

#[derive(Clone, Debug)]
pub struct Evaluation {
    pub verdict: Verdict,
    pub evidence: String,
}

impl Evaluation {
    pub fn new(verdict: Verdict, evidence: impl Into<String>) -> Self {
        Self {
            verdict,
            evidence: evidence.into(),
        }
    }
    pub fn unmeasured(what: &str) -> Self {
        Self::new(Verdict::Inconclusive, format!("not measured: {what}"))
    }
}

pub struct ClaimSpec<C> {
    pub id: &'static str,
    /// The paper's whole sentence.
    pub quote: &'static str,
    pub source: &'static str,
    pub kind: ClaimKind,
    pub rule: fn(&C) -> Evaluation,
}

/// A claim's record with its kind (page checks are listed, never counted).
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckedClaim {
    #[serde(flatten)]
    pub claim: Claim,
    pub kind: ClaimKind,
}

pub fn check_all<C>(specs: &[ClaimSpec<C>], ctx: &C) -> Vec<CheckedClaim> {
    specs
        .iter()
        .map(|s| {
            let e = (s.rule)(ctx);
            CheckedClaim {
                claim: Claim {
                    id: s.id,
                    claim: s.quote,
                    source: s.source,
                    verdict: e.verdict,
                    evidence: e.evidence,
                },
                kind: s.kind,
            }
        })
        .collect()
}

/// `value`'s interval against an upper bound: all below -> confirmed, all
/// at or above -> contradicted, straddling -> inconclusive.
pub fn below(r: RatioEstimate, bound: f64) -> Verdict {
    if r.hi < bound {
        Verdict::Confirmed
    } else if r.lo >= bound {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    }
}

/// `value`'s interval against a band [lo, hi] ("about X"): inside ->
/// confirmed, disjoint -> contradicted, overlapping an edge -> inconclusive.
pub fn within(r: RatioEstimate, lo: f64, hi: f64) -> Verdict {
    if r.lo >= lo && r.hi <= hi {
        Verdict::Confirmed
    } else if r.hi < lo || r.lo > hi {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    }
}

/// Tally of counted claims (page checks left out).
pub fn tally(claims: &[CheckedClaim]) -> (usize, usize, usize) {
    let mut t = (0, 0, 0);
    for c in claims.iter().filter(|c| c.kind == ClaimKind::Claim) {
        match c.claim.verdict {
            Verdict::Confirmed => t.0 += 1,
            Verdict::Contradicted => t.1 += 1,
            Verdict::Inconclusive => t.2 += 1,
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_decide_verdicts() {
        let a = Estimate::of(&[1.0, 1.1, 0.9, 1.0]);
        let b = Estimate::of(&[20.0, 20.5, 19.5, 20.0]);
        let r = ratio(a, b);
        assert!(r.lo < r.value && r.value < r.hi);
        assert_eq!(below(r, 0.10), Verdict::Confirmed);
        assert_eq!(below(r, 0.02), Verdict::Contradicted);
        assert_eq!(within(r, 0.04, 0.06), Verdict::Confirmed);
        assert_eq!(within(r, 0.055, 0.2), Verdict::Inconclusive);
        let one = Estimate::of(&[1.0]);
        assert_eq!(below(ratio(one, b), 0.5), Verdict::Inconclusive);
    }
}
