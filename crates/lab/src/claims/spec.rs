//! Claims as data: a suite's findings are a table of [`ClaimSpec`]s, each a
//! quote from the paper and one small rule over the suite's measurements.
//!
//! The comparison helpers here carry the noise rule every claims check
//! follows: each quantity is an [`Estimate`] over a cell's repetitions
//! (mean, sample sd, n) with a 95% Student-t interval, and a comparison
//! whose intervals overlap (or a threshold inside an interval) is
//! [`Outcome::WithinNoise`], which makes the claim inconclusive. A cell
//! measured once has no interval: its rule compares the means and the
//! evidence says "1 run".
//!
//! A suite adds its paper's claims as a table:
//!
//! ```
//! use pagewire_lab::claims::spec::{
//!     check_all, ratio, Cells, ClaimKind, ClaimSpec, Estimate, Evaluation, Verdict,
//! };
//!
//! /// What the rules read (here: seconds of two strategies, 5 runs each).
//! struct MyCtx {
//!     packed: Estimate,
//!     http10: Estimate,
//! }
//!
//! fn faster(c: &MyCtx) -> Evaluation {
//!     let mut cells = Cells::new();
//!     let f = ratio(c.packed, c.http10);
//!     cells.push(format!("packed/http10 seconds = {}", f.show(2)), f.below(1.0));
//!     cells.evaluate(Verdict::Contradicted, "packed/http10 seconds < 1")
//! }
//!
//! static CLAIMS: &[ClaimSpec<MyCtx>] = &[ClaimSpec {
//!     id: "packed-faster",
//!     quote: "The whole sentence of the paper, bounds included.",
//!     source: "Section 5",
//!     kind: ClaimKind::Claim,
//!     rule: faster,
//! }];
//!
//! let est = |mean| Estimate { mean, sd: 0.05, n: 5 };
//! let claims = check_all(CLAIMS, &MyCtx { packed: est(0.6), http10: est(1.0) });
//! assert_eq!(claims[0].verdict, Verdict::Confirmed);
//! let claims = check_all(CLAIMS, &MyCtx { packed: est(0.98), http10: est(1.0) });
//! assert_eq!(claims[0].verdict, Verdict::Inconclusive); // within noise
//! ```

use std::fmt;
use std::ops::{Div, RangeInclusive};

use serde::Serialize;

/// What a claims check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Confirmed,
    Contradicted,
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Contradicted => "CONTRADICTED",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// A finding about the measured system, or a check of something true by
/// construction (e.g. the generated page's deflate ratio), which is listed
/// apart and never counted as a confirmed claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimKind {
    Claim,
    PageCheck,
}

/// One checked claim, as reports and results.json show it.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    pub id: &'static str,
    /// The paper's whole sentence.
    pub claim: &'static str,
    /// The paper's section.
    pub source: &'static str,
    pub kind: ClaimKind,
    pub verdict: Verdict,
    /// How the sentence was read and our numbers that decided it.
    pub evidence: String,
}

/// A rule's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub verdict: Verdict,
    pub evidence: String,
}

impl Evaluation {
    pub fn new(verdict: Verdict, evidence: impl Into<String>) -> Evaluation {
        Evaluation {
            verdict,
            evidence: evidence.into(),
        }
    }
}

/// One claim of a paper and the rule that checks it against a suite's
/// context `C` (its measured cells, its page facts, ...).
pub struct ClaimSpec<C> {
    pub id: &'static str,
    /// The paper's whole sentence, bounds included.
    pub quote: &'static str,
    /// Where in the paper.
    pub source: &'static str,
    pub kind: ClaimKind,
    pub rule: fn(&C) -> Evaluation,
}

/// Evaluate every spec of a table.
pub fn check_all<C>(specs: &[ClaimSpec<C>], ctx: &C) -> Vec<Claim> {
    specs
        .iter()
        .map(|s| {
            let e = (s.rule)(ctx);
            Claim {
                id: s.id,
                claim: s.quote,
                source: s.source,
                kind: s.kind,
                verdict: e.verdict,
                evidence: e.evidence,
            }
        })
        .collect()
}

/// Two-sided 95% quantile of Student's t with `df` degrees of freedom
/// (standard table; between rows, interpolated in 1/df, which is exact to
/// the table's three decimals).
pub fn t975(df: u32) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    const TAIL: [(f64, f64); 4] = [(30.0, 2.042), (40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df as usize - 1],
        _ => {
            let x = 1.0 / df as f64;
            for w in TAIL.windows(2) {
                let ((d0, t0), (d1, t1)) = (w[0], w[1]);
                if df as f64 <= d1 {
                    let (x0, x1) = (1.0 / d0, 1.0 / d1);
                    return t1 + (t0 - t1) * (x - x1) / (x0 - x1);
                }
            }
            // 120 .. infinity: towards the normal 1.960 at 1/df = 0.
            1.960 + (1.980 - 1.960) * x * 120.0
        }
    }
}

/// One quantity over a cell's repetitions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for a single run.
    pub sd: f64,
    pub n: u32,
}

impl Estimate {
    /// Mean, sample standard deviation and count of `xs` (NaN for none).
    pub fn of(xs: &[f64]) -> Estimate {
        crate::stats::MeanSd::of(xs.iter().copied()).estimate()
    }

    /// A value known exactly (a constant of the page, a count that is the
    /// same every run).
    pub fn exact(x: f64) -> Estimate {
        Estimate {
            mean: x,
            sd: 0.0,
            n: u32::MAX,
        }
    }

    /// Whether there is an interval at all (two runs or more).
    pub fn has_interval(&self) -> bool {
        self.n >= 2
    }

    /// The 95% confidence interval of the mean (Student t, n - 1 degrees of
    /// freedom); the mean itself for a single run.
    pub fn ci95(&self) -> (f64, f64) {
        if !self.has_interval() || self.sd == 0.0 {
            return (self.mean, self.mean);
        }
        let h = t975(self.n - 1) * self.sd / (self.n as f64).sqrt();
        (self.mean - h, self.mean + h)
    }

    /// As an [`Interval`] for arithmetic.
    pub fn interval(&self) -> Interval {
        let (lo, hi) = self.ci95();
        Interval {
            value: self.mean,
            lo,
            hi,
            single: !self.has_interval(),
        }
    }
}

/// A value with its 95% interval, from [`Estimate`]s by interval arithmetic
/// (each input's interval carried through, so the result's interval is at
/// least as wide as the truth's: conservative towards "within noise").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    /// Some input was measured once: `lo..hi` is not a real interval.
    pub single: bool,
}

/// A ratio of two estimates, with its interval.
pub type RatioEstimate = Interval;

/// `a / b` with an interval (`b`'s interval must stay above 0, else the
/// upper bound is infinite).
pub fn ratio(a: Estimate, b: Estimate) -> RatioEstimate {
    a.interval() / b.interval()
}

impl Interval {
    pub fn exact(x: f64) -> Interval {
        Interval {
            value: x,
            lo: x,
            hi: x,
            single: false,
        }
    }
}

/// `a / b` (both positive quantities).
impl Div for Interval {
    type Output = Interval;
    fn div(self, o: Interval) -> Interval {
        let hi = if o.lo > 0.0 {
            self.hi / o.lo
        } else {
            f64::INFINITY
        };
        Interval {
            value: self.value / o.value,
            lo: self.lo / o.hi,
            hi,
            single: self.single || o.single,
        }
    }
}

impl Interval {
    /// `1 - self`: a saving from a ratio.
    pub fn one_minus(self) -> Interval {
        Interval {
            value: 1.0 - self.value,
            lo: 1.0 - self.hi,
            hi: 1.0 - self.lo,
            single: self.single,
        }
    }

    /// The mean of several intervals (bounds averaged).
    pub fn mean(xs: &[Interval]) -> Option<Interval> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        Some(Interval {
            value: xs.iter().map(|x| x.value).sum::<f64>() / n,
            lo: xs.iter().map(|x| x.lo).sum::<f64>() / n,
            hi: xs.iter().map(|x| x.hi).sum::<f64>() / n,
            single: xs.iter().any(|x| x.single),
        })
    }

    /// At least `x`: the whole interval at or above it passes, the whole
    /// interval below it fails, otherwise within noise. With no interval
    /// (a single run) the value decides.
    pub fn at_least(&self, x: f64) -> Outcome {
        self.decide(self.value >= x, self.lo >= x, self.hi < x)
    }

    /// Below `x`.
    pub fn below(&self, x: f64) -> Outcome {
        self.decide(self.value < x, self.hi < x, self.lo >= x)
    }

    /// Inside `r`: the whole interval inside passes, disjoint fails.
    pub fn within(&self, r: RangeInclusive<f64>) -> Outcome {
        let (a, b) = (*r.start(), *r.end());
        self.decide(
            r.contains(&self.value),
            self.lo >= a && self.hi <= b,
            self.hi < a || self.lo > b,
        )
    }

    /// Greater than `o`: intervals apart decide, overlapping is noise.
    pub fn greater(&self, o: &Interval) -> Outcome {
        Interval {
            single: self.single || o.single,
            ..*self
        }
        .decide(self.value > o.value, self.lo > o.hi, self.hi < o.lo)
    }

    /// Less than `o`.
    pub fn less(&self, o: &Interval) -> Outcome {
        o.greater(self)
    }

    fn decide(&self, value_passes: bool, pass: bool, fail: bool) -> Outcome {
        if self.single {
            Outcome::from_bool(value_passes)
        } else if pass {
            Outcome::Pass
        } else if fail {
            Outcome::Fail
        } else {
            Outcome::WithinNoise
        }
    }

    /// `value [lo, hi]` with `digits` decimals, or `value (1 run)`.
    pub fn show(&self, digits: usize) -> String {
        self.show_unit(digits, "")
    }

    /// As [`Interval::show`] with a unit after the value (`3.1x [3.0, 3.2]`).
    pub fn show_unit(&self, digits: usize, unit: &str) -> String {
        if self.single {
            format!("{:.digits$}{unit} (1 run)", self.value)
        } else if format!("{:.digits$}", self.lo) == format!("{:.digits$}", self.hi) {
            format!("{:.digits$}{unit}", self.value)
        } else {
            format!(
                "{:.digits$}{unit} [{:.digits$}, {:.digits$}]",
                self.value, self.lo, self.hi
            )
        }
    }
}

/// One cell's test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail,
    /// The intervals overlap (or the threshold lies inside the interval).
    WithinNoise,
}

impl Outcome {
    /// Pass if `b` (for tests on exact values).
    pub fn from_bool(b: bool) -> Outcome {
        if b {
            Outcome::Pass
        } else {
            Outcome::Fail
        }
    }

    /// Both must pass; a failure of either fails; else within noise.
    pub fn and(self, o: Outcome) -> Outcome {
        use Outcome::*;
        match (self, o) {
            (Pass, Pass) => Pass,
            (Fail, _) | (_, Fail) => Fail,
            _ => WithinNoise,
        }
    }
}

/// The cells a rule tested, each with the text that shows its numbers.
#[derive(Clone, Debug, Default)]
pub struct Cells(pub Vec<(String, Outcome)>);

impl Cells {
    pub fn new() -> Cells {
        Cells(Vec::new())
    }

    pub fn push(&mut self, text: impl Into<String>, o: Outcome) {
        self.0.push((text.into(), o));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Verdict over the cells: none measured -> inconclusive; all pass ->
    /// confirmed; all fail -> contradicted; some fail -> `mixed`
    /// (contradicted for "in every environment" claims); passes with
    /// some within noise -> inconclusive.
    pub fn verdict(&self, mixed: Verdict) -> Verdict {
        let all = |o: Outcome| self.0.iter().all(|c| c.1 == o);
        if self.0.is_empty() {
            Verdict::Inconclusive
        } else if all(Outcome::Pass) {
            Verdict::Confirmed
        } else if all(Outcome::Fail) {
            Verdict::Contradicted
        } else if self.0.iter().any(|c| c.1 == Outcome::Fail) {
            mixed
        } else {
            Verdict::Inconclusive
        }
    }

    /// `reading: cell; cell ✗; cell (within noise)`.
    pub fn evidence(&self, reading: &str) -> String {
        if self.0.is_empty() {
            return format!(
                "{reading}: not measured (needs the strategies and networks named in the claim)"
            );
        }
        let cells = self
            .0
            .iter()
            .map(|(t, o)| {
                format!(
                    "{t}{}",
                    match o {
                        Outcome::Pass => "",
                        Outcome::Fail => " ✗",
                        Outcome::WithinNoise => " (within noise)",
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        format!("{reading}: {cells}")
    }

    /// Verdict and evidence at once.
    pub fn evaluate(&self, mixed: Verdict, reading: &str) -> Evaluation {
        Evaluation::new(self.verdict(mixed), self.evidence(reading))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_quantiles() {
        assert_eq!(t975(1), 12.706);
        assert_eq!(t975(4), 2.776);
        assert!((t975(40) - 2.021).abs() < 1e-9);
        assert!((t975(50) - 2.009).abs() < 2e-3);
        assert!((t975(1_000_000) - 1.960).abs() < 1e-3);
        assert!(t975(0).is_infinite());
    }

    #[test]
    fn interval_of_five_runs() {
        // mean 10, sd 1, n 5: 10 +- 2.776 / sqrt(5).
        let e = Estimate {
            mean: 10.0,
            sd: 1.0,
            n: 5,
        };
        let (lo, hi) = e.ci95();
        assert!((lo - 8.7585).abs() < 1e-3 && (hi - 11.2415).abs() < 1e-3);
        let one = Estimate {
            mean: 10.0,
            sd: 0.0,
            n: 1,
        };
        assert_eq!(one.ci95(), (10.0, 10.0));
        assert_eq!(one.interval().show(1), "10.0 (1 run)");
    }

    #[test]
    fn noise_rule() {
        let a = Estimate {
            mean: 10.0,
            sd: 1.0,
            n: 5,
        };
        let b = Estimate { mean: 11.0, ..a };
        let c = Estimate { mean: 14.0, ..a };
        assert_eq!(b.interval().greater(&a.interval()), Outcome::WithinNoise);
        assert_eq!(c.interval().greater(&a.interval()), Outcome::Pass);
        assert_eq!(a.interval().greater(&c.interval()), Outcome::Fail);
        // Threshold inside the ratio's interval: within noise.
        let r = ratio(c, a);
        assert!(r.lo < 1.3 && r.hi > 1.3);
        assert_eq!(r.at_least(1.3), Outcome::WithinNoise);
        assert_eq!(r.at_least(1.0), Outcome::Pass);
        // One run on either side: the means decide.
        let one = Estimate {
            mean: 10.5,
            sd: 0.0,
            n: 1,
        };
        assert_eq!(one.interval().greater(&a.interval()), Outcome::Pass);
    }

    #[test]
    fn cells_verdict() {
        let mut c = Cells::new();
        assert_eq!(c.verdict(Verdict::Contradicted), Verdict::Inconclusive);
        c.push("a", Outcome::Pass);
        assert_eq!(c.verdict(Verdict::Contradicted), Verdict::Confirmed);
        c.push("b", Outcome::WithinNoise);
        assert_eq!(c.verdict(Verdict::Contradicted), Verdict::Inconclusive);
        c.push("c", Outcome::Fail);
        assert_eq!(c.verdict(Verdict::Contradicted), Verdict::Contradicted);
        assert_eq!(c.verdict(Verdict::Inconclusive), Verdict::Inconclusive);
        assert_eq!(c.evidence("r"), "r: a; b (within noise); c ✗");
    }
}
