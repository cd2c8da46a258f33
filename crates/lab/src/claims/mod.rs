//! Claims checks: each suite's findings of its paper as a table of
//! [`spec::ClaimSpec`]s, evaluated against the suite's measurements.
//!
//! [`spec`] is the shared machinery (estimates with 95% intervals, the
//! noise rule, verdicts); [`microscape`] holds paper 001's table.

use std::fmt::Write as _;

pub mod microscape;
pub mod spec;

pub use microscape::{check, PageFacts};
pub use spec::{Claim, ClaimKind, Verdict};

/// Paper 001's claims as text (the microscape suite's report).
pub fn render(claims: &[Claim]) -> String {
    render_titled("Claims of paper 001 checked against these runs:", claims)
}

/// One line per claim under `title`, then the counts; page checks (true by
/// construction) listed apart and not counted.
pub fn render_titled(title: &str, claims: &[Claim]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let line = |s: &mut String, c: &Claim| {
        let _ = writeln!(
            s,
            "  [{:<12}] {} ({})",
            c.verdict.to_string(),
            c.claim,
            c.source
        );
        let _ = writeln!(s, "                 {}", c.evidence);
    };
    let (found, page): (Vec<&Claim>, Vec<&Claim>) =
        claims.iter().partition(|c| c.kind == ClaimKind::Claim);
    for c in &found {
        line(&mut s, c);
    }
    let count = |v: Verdict| found.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        s,
        "  {} confirmed, {} contradicted, {} inconclusive",
        count(Verdict::Confirmed),
        count(Verdict::Contradicted),
        count(Verdict::Inconclusive)
    );
    if !page.is_empty() {
        let _ = writeln!(
            s,
            "Page checks (true by construction of the generated page; not counted as claims):"
        );
        for c in page {
            line(&mut s, c);
        }
    }
    s
}
