//! Helpers the paper-003 suites (`connlen`, `loadtime`) put on top of the
//! shared claims-as-data module, [`crate::claims::spec`]: an [`Estimate`]
//! from raw trials, its JSON form, and the two comparisons their sentences
//! need ("less than X", "about X" read as a band).

pub use crate::claims::spec::{
    check_all, ratio, Claim, ClaimKind, ClaimSpec, Estimate, Evaluation, RatioEstimate,
};
use crate::claims::Verdict;

/// The evaluation of a claim whose inputs this run did not measure.
pub fn unmeasured(what: &str) -> Evaluation {
    Evaluation::new(Verdict::Inconclusive, format!("not measured: {what}"))
}

/// Mean, sample standard deviation and count of `xs`.
pub fn estimate_of(xs: &[f64]) -> Estimate {
    Estimate::of(xs)
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

/// The interval against an upper bound: all below -> confirmed, all at or
/// above -> contradicted, straddling (or a single run) -> inconclusive.
pub fn below(r: RatioEstimate, bound: f64) -> Verdict {
    if r.single {
        Verdict::Inconclusive
    } else if r.hi < bound {
        Verdict::Confirmed
    } else if r.lo >= bound {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    }
}

/// The interval against a band [lo, hi] ("about X"): inside -> confirmed,
/// disjoint -> contradicted, overlapping an edge (or a single run) ->
/// inconclusive.
pub fn within(r: RatioEstimate, lo: f64, hi: f64) -> Verdict {
    if r.single {
        Verdict::Inconclusive
    } else if r.lo >= lo && r.hi <= hi {
        Verdict::Confirmed
    } else if r.hi < lo || r.lo > hi {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    }
}

/// Tally of counted claims (page checks left out).
pub fn tally(claims: &[Claim]) -> (usize, usize, usize) {
    let mut t = (0, 0, 0);
    for c in claims.iter().filter(|c| c.kind == ClaimKind::Claim) {
        match c.verdict {
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
        let a = estimate_of(&[1.0, 1.1, 0.9, 1.0]);
        let b = estimate_of(&[20.0, 20.5, 19.5, 20.0]);
        let r = ratio(a, b);
        assert!(r.lo < r.value && r.value < r.hi);
        assert_eq!(below(r, 0.10), Verdict::Confirmed);
        assert_eq!(below(r, 0.02), Verdict::Contradicted);
        assert_eq!(within(r, 0.04, 0.06), Verdict::Confirmed);
        assert_eq!(within(r, 0.055, 0.2), Verdict::Inconclusive);
        let one = estimate_of(&[1.0]);
        assert_eq!(below(ratio(one, b), 0.5), Verdict::Inconclusive);
    }
}
