//! The claims engine: a paper's findings as data ([`ClaimSpec`]: id,
//! paper, section, the sentence verbatim, the cells it reads, each
//! quantity with its band and the band's source) and the one decision rule
//! every suite follows ([`decide`]), written down in `docs/claims.md`:
//!
//! * every measured quantity carries its 95% interval (Student t) from its
//!   repetitions; a quantity from fewer than 3 repetitions decides nothing
//!   (the claim is **inconclusive**, reason "n < 3");
//! * **confirmed** when every cell the sentence covers was measured and
//!   each cell's interval lies inside its band;
//! * **contradicted** when any covered cell's interval lies wholly outside
//!   its band (no "mixed" escape: one clear failure of an "every network"
//!   sentence contradicts it);
//! * otherwise **inconclusive** (an interval straddles a band's edge, or a
//!   covered cell was not measured);
//! * **not testable here** when the set-up cannot meet a precondition of the
//!   sentence (the rule says which); never counted as either of the first
//!   two.
//!
//! Page checks (true by construction of the generated page) are listed apart
//! and never count as confirmations.
//!
//! ```
//! use pagewire_lab::claims::spec::{
//!     decide_all, Band, ClaimKind, ClaimSpec, Estimate, Measured, Quantity, Verdict,
//! };
//!
//! struct Ctx { packed: Estimate, http10: Estimate }
//!
//! static Q: &[Quantity] = &[Quantity {
//!     name: "packed / http10 seconds",
//!     band: Band::below(1.0, "faster", "the sentence (direction only)"),
//! }];
//!
//! static CLAIMS: &[ClaimSpec<Ctx>] = &[ClaimSpec {
//!     id: "packed-faster",
//!     aliases: &[],
//!     paper: "000",
//!     section: "Section 5",
//!     quote: "Packing is faster.",
//!     cells: "one cell",
//!     quantities: Q,
//!     kind: ClaimKind::Claim,
//!     rule: |c: &Ctx| {
//!         let mut m = Measured::new();
//!         m.push(0, "lan", c.packed.interval() / c.http10.interval());
//!         m
//!     },
//! }];
//!
//! let est = |mean| Estimate { mean, sd: 0.05, n: 5 };
//! let claims = decide_all(CLAIMS, &Ctx { packed: est(0.6), http10: est(1.0) });
//! assert_eq!(claims[0].verdict, Verdict::Confirmed);
//! let claims = decide_all(CLAIMS, &Ctx { packed: est(0.98), http10: est(1.0) });
//! assert_eq!(claims[0].verdict, Verdict::Inconclusive); // straddles 1
//! let claims = decide_all(CLAIMS, &Ctx { packed: est(0.6), http10: Estimate { n: 2, ..est(1.0) } });
//! assert_eq!(claims[0].reason, "n < 3: lan");
//! ```

use std::fmt;
use std::ops::Div;

use serde::{Deserialize, Serialize};

use crate::stats::MeanSd;

/// What a claims check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "confirmed")]
    Confirmed,
    #[serde(rename = "contradicted")]
    Contradicted,
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// A precondition of the sentence the set-up cannot meet.
    #[serde(rename = "not testable here")]
    NotTestable,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Confirmed,
        Verdict::Contradicted,
        Verdict::Inconclusive,
        Verdict::NotTestable,
    ];
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Contradicted => "CONTRADICTED",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotTestable => "not testable here",
        })
    }
}

/// A finding about the measured system, or a check of something true by
/// construction (e.g. the generated page's deflate ratio), which is listed
/// apart and never counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimKind {
    Claim,
    PageCheck,
}

/// The fewest repetitions a quantity needs before it decides anything.
pub const MIN_REPS: u32 = 3;

/// A band: the values a quantity may take for the sentence to hold
/// (inclusive; an open side is infinite), the hedge word it reads and
/// where its numbers come from.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Band {
    pub lo: f64,
    pub hi: f64,
    /// The sentence's words the band reads ("about 16%", "less than 1/10").
    pub hedge: &'static str,
    /// Where the numbers come from (the hedge table's default, the
    /// sentence's own bounds, or the paper's table values).
    pub source: &'static str,
}

impl Band {
    pub const fn new(lo: f64, hi: f64, hedge: &'static str, source: &'static str) -> Band {
        Band {
            lo,
            hi,
            hedge,
            source,
        }
    }
    /// At most `hi`.
    pub const fn below(hi: f64, hedge: &'static str, source: &'static str) -> Band {
        Band::new(f64::NEG_INFINITY, hi, hedge, source)
    }
    /// At least `lo`.
    pub const fn above(lo: f64, hedge: &'static str, source: &'static str) -> Band {
        Band::new(lo, f64::INFINITY, hedge, source)
    }
    pub fn contains(&self, x: f64) -> bool {
        x >= self.lo && x <= self.hi
    }
    /// `[lo, hi]`, `<= hi` or `>= lo`.
    pub fn show(&self) -> String {
        let f = |x: f64| fmt_num(x);
        match (self.lo.is_finite(), self.hi.is_finite()) {
            (true, true) => format!("[{}, {}]", f(self.lo), f(self.hi)),
            (false, true) => format!("<= {}", f(self.hi)),
            (true, false) => format!(">= {}", f(self.lo)),
            (false, false) => "any".into(),
        }
    }
}

/// Up to 4 significant decimals, without trailing zeros.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let d = if x.abs() >= 1000.0 {
        0
    } else if x.abs() >= 10.0 {
        2
    } else {
        4
    };
    let s = format!("{x:.d$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// One quantity a claim reads, and its band.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Quantity {
    pub name: &'static str,
    pub band: Band,
}

/// What a rule measured: the covered cells with their intervals, or why
/// there is nothing to judge.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub cells: Vec<Cell>,
    /// A precondition the set-up cannot meet (the claim is not testable
    /// here, whatever the cells say).
    pub not_testable: Option<String>,
    /// Covered cells the results lack (the claim cannot be confirmed).
    pub missing: Vec<String>,
    /// Context printed with the verdict (never changes it).
    pub note: Option<String>,
}

impl Measured {
    pub fn new() -> Measured {
        Measured::default()
    }
    /// Nothing to judge: the named inputs are absent.
    pub fn missing(what: impl Into<String>) -> Measured {
        Measured {
            missing: vec![what.into()],
            ..Measured::default()
        }
    }
    /// Not testable here, for `why`.
    pub fn not_testable(why: impl Into<String>) -> Measured {
        Measured {
            not_testable: Some(why.into()),
            ..Measured::default()
        }
    }
    /// Quantity `q` of the spec measured in cell `label`.
    pub fn push(&mut self, q: usize, label: impl Into<String>, value: Interval) {
        self.cells.push(Cell {
            q,
            label: label.into(),
            value,
            lower_bound: false,
        });
    }
    /// Quantity `q` is the largest of `xs` ("sometimes as much as X"). While
    /// a covered cell is missing ([`Measured::absent`] was called before),
    /// the largest measured cell is only a lower bound of the sentence's
    /// largest: it can contradict from above, never from below.
    pub fn push_largest(&mut self, q: usize, label: impl Into<String>, xs: &[Interval]) {
        if let Some(value) = Interval::max_of(xs) {
            self.cells.push(Cell {
                q,
                label: label.into(),
                value,
                lower_bound: !self.missing.is_empty(),
            });
        }
    }
    /// A covered cell that was not measured.
    pub fn absent(&mut self, label: impl Into<String>) {
        self.missing.push(label.into());
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Measured {
        self.note = Some(note.into());
        self
    }
}

/// One measured cell: which quantity, where, and its interval.
#[derive(Clone, Debug)]
pub struct Cell {
    pub q: usize,
    pub label: String,
    pub value: Interval,
    /// The value is a lower bound of the quantity (see
    /// [`Measured::push_largest`]).
    pub lower_bound: bool,
}

/// How one cell's interval lies against its band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Position {
    Inside,
    Outside,
    Straddles,
    /// Fewer than [`MIN_REPS`] repetitions: decides nothing.
    FewReps,
    /// Below the band, but only a lower bound (the largest of an incomplete
    /// set of cells): decides nothing.
    LowerBoundBelow,
}

impl Position {
    pub fn of(v: &Interval, b: &Band) -> Position {
        if v.n < MIN_REPS {
            Position::FewReps
        } else if v.lo >= b.lo && v.hi <= b.hi {
            Position::Inside
        } else if v.hi < b.lo || v.lo > b.hi {
            Position::Outside
        } else {
            Position::Straddles
        }
    }
    pub fn mark(self) -> &'static str {
        match self {
            Position::Inside => "inside",
            Position::Outside => "OUTSIDE",
            Position::Straddles => "straddles",
            Position::FewReps => "n < 3",
            Position::LowerBoundBelow => "below, cells missing",
        }
    }
}

/// One claim of a paper and the rule that measures it in a suite's
/// context `C`.
pub struct ClaimSpec<C> {
    /// Stable id (results.json, docs); never reused.
    pub id: &'static str,
    /// Earlier ids of the same claim.
    pub aliases: &'static [&'static str],
    /// "001" .. "004".
    pub paper: &'static str,
    pub section: &'static str,
    /// The paper's whole sentence, verbatim.
    pub quote: &'static str,
    /// Which cells the sentence covers.
    pub cells: &'static str,
    pub quantities: &'static [Quantity],
    pub kind: ClaimKind,
    pub rule: fn(&C) -> Measured,
}

/// One cell as reports and results.json show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellOut {
    pub quantity: String,
    pub cell: String,
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    /// Repetitions behind it (the fewest of its inputs); null when exact.
    pub n: Option<u32>,
    pub position: Position,
}

/// A band as reports and results.json show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandOut {
    pub quantity: String,
    /// null: open side.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub hedge: String,
    pub source: String,
}

/// One judged claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub id: String,
    pub paper: String,
    pub section: String,
    /// The paper's whole sentence.
    pub claim: String,
    pub covers: String,
    pub kind: ClaimKind,
    pub verdict: Verdict,
    /// Why this verdict (which cell decided, or what is missing).
    pub reason: String,
    pub bands: Vec<BandOut>,
    pub cells: Vec<CellOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Claim {
    /// One line: the reason, each band and each cell with its interval.
    pub fn evidence(&self) -> String {
        let bands: Vec<String> = self
            .bands
            .iter()
            .map(|b| {
                let f = |x: Option<f64>, d: &str| x.map(fmt_num).unwrap_or_else(|| d.into());
                format!(
                    "{} in [{}, {}] (\"{}\"; {})",
                    b.quantity,
                    f(b.lo, "-inf"),
                    f(b.hi, "+inf"),
                    b.hedge,
                    b.source
                )
            })
            .collect();
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|c| {
                let n = c.n.map_or("exact".to_string(), |n| format!("n={n}"));
                format!(
                    "{}: {} [{}, {}] ({n}) {}",
                    c.cell,
                    fmt_num(c.value),
                    fmt_num(c.lo),
                    fmt_num(c.hi),
                    c.position.mark()
                )
            })
            .collect();
        format!(
            "{}. Bands: {}. Cells: {}",
            self.reason,
            bands.join("; "),
            cells.join("; ")
        )
    }
}

/// The decision rule, once for every suite.
pub fn decide<C>(spec: &ClaimSpec<C>, m: Measured) -> Claim {
    let band = |q: usize| spec.quantities[q].band;
    let cells: Vec<CellOut> = m
        .cells
        .iter()
        .map(|c| CellOut {
            quantity: spec.quantities[c.q].name.to_string(),
            cell: c.label.clone(),
            value: c.value.value,
            lo: c.value.lo,
            hi: c.value.hi,
            n: (c.value.n != u32::MAX).then_some(c.value.n),
            position: match Position::of(&c.value, &band(c.q)) {
                Position::Outside if c.lower_bound && c.value.hi < band(c.q).lo => {
                    Position::LowerBoundBelow
                }
                p => p,
            },
        })
        .collect();
    let which = |p: Position| {
        let mut v: Vec<String> = Vec::new();
        for c in cells.iter().filter(|c| c.position == p) {
            if !v.contains(&c.cell) {
                v.push(c.cell.clone());
            }
        }
        v
    };
    let (verdict, reason) = if let Some(why) = &m.not_testable {
        (Verdict::NotTestable, why.clone())
    } else if cells.is_empty() {
        (
            Verdict::Inconclusive,
            format!(
                "not measured: {}",
                if m.missing.is_empty() {
                    "no cell of the sentence in these results".to_string()
                } else {
                    m.missing.join("; ")
                }
            ),
        )
    } else if !which(Position::Outside).is_empty() {
        (
            Verdict::Contradicted,
            format!("outside the band: {}", which(Position::Outside).join(", ")),
        )
    } else if !which(Position::FewReps).is_empty() {
        (
            Verdict::Inconclusive,
            format!("n < 3: {}", which(Position::FewReps).join(", ")),
        )
    } else if !which(Position::LowerBoundBelow).is_empty() {
        (
            Verdict::Inconclusive,
            format!(
                "largest of the measured cells below the band while covered cells are missing: {}",
                which(Position::LowerBoundBelow).join(", ")
            ),
        )
    } else if !which(Position::Straddles).is_empty() {
        (
            Verdict::Inconclusive,
            format!(
                "interval straddles the band's edge: {}",
                which(Position::Straddles).join(", ")
            ),
        )
    } else if !m.missing.is_empty() {
        (
            Verdict::Inconclusive,
            format!("not measured: {}", m.missing.join("; ")),
        )
    } else {
        (
            Verdict::Confirmed,
            "every covered cell inside its band".into(),
        )
    };
    let opt = |x: f64| x.is_finite().then_some(x);
    Claim {
        id: spec.id.into(),
        paper: spec.paper.into(),
        section: spec.section.into(),
        claim: spec.quote.into(),
        covers: spec.cells.into(),
        kind: spec.kind,
        verdict,
        reason,
        bands: spec
            .quantities
            .iter()
            .map(|q| BandOut {
                quantity: q.name.into(),
                lo: opt(q.band.lo),
                hi: opt(q.band.hi),
                hedge: q.band.hedge.into(),
                source: q.band.source.into(),
            })
            .collect(),
        cells,
        note: m.note,
    }
}

/// Judge every spec of a table.
pub fn decide_all<C>(specs: &[ClaimSpec<C>], ctx: &C) -> Vec<Claim> {
    specs.iter().map(|s| decide(s, (s.rule)(ctx))).collect()
}

/// Counted claims per verdict (page checks left out), in [`Verdict::ALL`]
/// order.
pub fn tally(claims: &[Claim]) -> [usize; 4] {
    let mut t = [0; 4];
    for c in claims.iter().filter(|c| c.kind == ClaimKind::Claim) {
        t[Verdict::ALL.iter().position(|v| *v == c.verdict).unwrap()] += 1;
    }
    t
}

/// "3 confirmed, 1 contradicted, 2 inconclusive, 0 not testable here".
pub fn tally_line(claims: &[Claim]) -> String {
    let t = tally(claims);
    format!(
        "{} confirmed, {} contradicted, {} inconclusive, {} not testable here",
        t[0], t[1], t[2], t[3]
    )
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

/// A summary of repetitions, for claims checks (a 95% interval from mean,
/// sd and n).
impl From<MeanSd> for Estimate {
    fn from(m: MeanSd) -> Estimate {
        Estimate {
            mean: m.mean,
            sd: m.sd,
            n: u32::try_from(m.n).unwrap_or(u32::MAX),
        }
    }
}

impl Estimate {
    /// Mean, sample standard deviation and count of `xs` (NaN for none).
    pub fn of(xs: &[f64]) -> Estimate {
        Estimate::from(MeanSd::of(xs.iter().copied()))
    }

    /// A value known exactly (a constant of the page, a deterministic
    /// simulation's output).
    pub fn exact(x: f64) -> Estimate {
        Estimate {
            mean: x,
            sd: 0.0,
            n: u32::MAX,
        }
    }

    /// The 95% confidence interval of the mean (Student t, n - 1 degrees of
    /// freedom); the mean itself for a single run.
    pub fn ci95(&self) -> (f64, f64) {
        if self.n < 2 || self.sd == 0.0 {
            return (self.mean, self.mean);
        }
        if self.n == u32::MAX {
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
            n: self.n,
        }
    }
}

/// `#[serde(deserialize_with)]` for a number JSON may carry as null (serde
/// writes NaN as null): null reads as NaN, which no band contains.
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// `#[serde(serialize_with)]` for an [`Estimate`]: `{mean, sd, n}`.
pub fn ser_estimate<S: serde::Serializer>(e: &Estimate, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut st = s.serialize_struct("Estimate", 3)?;
    st.serialize_field("mean", &e.mean)?;
    st.serialize_field("sd", &e.sd)?;
    st.serialize_field("n", &e.n)?;
    st.end()
}

/// A value with its 95% interval, from [`Estimate`]s by interval arithmetic
/// (each input's interval carried through, so the result's interval is at
/// least as wide as the truth's: conservative towards "inconclusive"), and
/// the fewest repetitions behind any input (`u32::MAX`: exact).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: u32,
}

/// `a / b` with an interval.
pub fn ratio(a: Estimate, b: Estimate) -> Interval {
    a.interval() / b.interval()
}

/// `a / b` (both positive quantities; `b`'s interval must stay above 0,
/// else the upper bound is infinite).
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
            n: self.n.min(o.n),
        }
    }
}

impl Interval {
    pub fn exact(x: f64) -> Interval {
        Interval {
            value: x,
            lo: x,
            hi: x,
            n: u32::MAX,
        }
    }

    /// `1 - self`: a saving from a ratio.
    pub fn one_minus(self) -> Interval {
        Interval {
            value: 1.0 - self.value,
            lo: 1.0 - self.hi,
            hi: 1.0 - self.lo,
            n: self.n,
        }
    }

    /// `self - 1`: an increase from a ratio.
    pub fn minus_one(self) -> Interval {
        Interval {
            value: self.value - 1.0,
            lo: self.lo - 1.0,
            hi: self.hi - 1.0,
            n: self.n,
        }
    }

    /// `self - o` (both intervals carried through).
    pub fn minus(self, o: Interval) -> Interval {
        Interval {
            value: self.value - o.value,
            lo: self.lo - o.hi,
            hi: self.hi - o.lo,
            n: self.n.min(o.n),
        }
    }

    /// The largest of several (its interval: the largest lower and upper
    /// bounds).
    pub fn max_of(xs: &[Interval]) -> Option<Interval> {
        let best = xs.iter().max_by(|a, b| a.value.total_cmp(&b.value))?;
        Some(Interval {
            value: best.value,
            lo: xs.iter().map(|x| x.lo).fold(f64::NEG_INFINITY, f64::max),
            hi: xs.iter().map(|x| x.hi).fold(f64::NEG_INFINITY, f64::max),
            n: xs.iter().map(|x| x.n).min().unwrap_or(0),
        })
    }

    /// `value [lo, hi]` with `digits` decimals (`value` alone when exact).
    pub fn show(&self, digits: usize) -> String {
        if format!("{:.digits$}", self.lo) == format!("{:.digits$}", self.hi) {
            format!("{:.digits$}", self.value)
        } else {
            format!(
                "{:.digits$} [{:.digits$}, {:.digits$}]",
                self.value, self.lo, self.hi
            )
        }
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
        let r = ratio(e, Estimate::exact(2.0));
        assert_eq!(r.n, 5);
        assert!((r.lo - 4.379).abs() < 1e-3);
    }

    #[test]
    fn positions() {
        let b = Band::new(1.0, 2.0, "about", "test");
        let iv = |lo, hi, n| Interval {
            value: (lo + hi) / 2.0,
            lo,
            hi,
            n,
        };
        assert_eq!(Position::of(&iv(1.1, 1.9, 3), &b), Position::Inside);
        assert_eq!(Position::of(&iv(2.1, 2.9, 3), &b), Position::Outside);
        assert_eq!(Position::of(&iv(0.1, 0.9, 3), &b), Position::Outside);
        assert_eq!(Position::of(&iv(1.5, 2.5, 3), &b), Position::Straddles);
        // Far outside, but from two runs: decides nothing.
        assert_eq!(Position::of(&iv(5.0, 6.0, 2), &b), Position::FewReps);
        assert_eq!(Position::of(&Interval::exact(1.5), &b), Position::Inside);
    }
}
