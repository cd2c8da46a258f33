//! The model beside a contradicted claim: is the contradiction what the
//! expected-time model ([`crate::expect`]) predicts for this set-up, or is
//! it unexplained?
//!
//! One rule, computed and never hand-written: every kept run's measured
//! packets, IP bytes, payload bytes and seconds are replaced by the model's
//! prediction for its cell (network, strategy, test); the claims are judged
//! again by the same rule on these model runs. A claim our measurement
//! contradicts is then
//!
//! - **explained** when the model's runs contradict it too;
//! - **unexplained** when the model's runs confirm it (or leave it
//!   inconclusive): the model predicts the paper's result, the measurement
//!   does not;
//! - **not modelled** when the claim reads nothing the model predicts (its
//!   cells come out the same on the model's runs), or the model has no
//!   prediction for its cells (another page, Nagle, range requests, a
//!   compressing line; see `expect::eval`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::spec::{CellOut, Claim, Position, Verdict};
use crate::expect::{eval::eval_runs, Page};
use crate::model::{Net, RunRecord, Strategy, Test};

/// The model's word on one contradicted claim.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelNote {
    pub id: String,
    /// `explained`, `unexplained` or `not modelled`.
    pub model: String,
    /// The claim's verdict on the model's runs (None: not judged).
    pub verdict_on_model: Option<Verdict>,
    pub why: String,
}

/// The notes for `claims`' contradicted ones. `judge` judges a set of runs
/// by the suite's rule; `page` is the page the runs loaded (None: not the
/// modelled Microscape page).
pub fn notes(
    runs: &[RunRecord],
    claims: &[Claim],
    page: Option<&Page>,
    judge: impl Fn(&[RunRecord]) -> Vec<Claim>,
) -> Vec<ModelNote> {
    let contradicted: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Contradicted)
        .collect();
    if contradicted.is_empty() {
        return Vec::new();
    }
    let Some(page) = page else {
        return beside(
            &contradicted,
            None,
            "the runs loaded a page the model does not describe",
        );
    };
    let eval = eval_runs(runs, page, 0.0);
    let pred: BTreeMap<(Net, Strategy, Test), crate::expect::Cost> = eval
        .cells
        .iter()
        .map(|c| ((c.net, c.strategy, c.test), c.prediction.predicted))
        .collect();
    // The kept runs of modelled cells, with the model's numbers.
    let model_runs: Vec<RunRecord> = runs
        .iter()
        .filter_map(|r| {
            let p = pred.get(&(r.net, r.strategy, r.test))?;
            if !r.ok() || r.link_lateness.flagged {
                return None;
            }
            let mut m = r.clone();
            m.packets_total = p.packets.round() as u64;
            m.bytes_total = p.bytes.round() as u64;
            m.payload_bytes_total = p.payload.round() as u64;
            m.elapsed_s = p.seconds;
            Some(m)
        })
        .collect();
    let on_model = judge(&model_runs);
    beside(&contradicted, Some(&on_model), "")
}

/// The notes for `claims`' contradicted ones, given the same claims
/// judged on the model's runs (`on_model`; None: the model has nothing
/// for these runs, for the reason `why_none`). The rule of the module
/// note, read cell by cell: of the cells that put the measured claim
/// outside its band, those the model changed decide; one of them outside
/// on the model's runs too explains the contradiction; none outside
/// leaves it unexplained; none changed (the contradiction lies in what
/// the model does not predict) is not modelled.
pub fn notes_on(claims: &[Claim], on_model: Option<&[Claim]>, why_none: &str) -> Vec<ModelNote> {
    let contradicted: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Contradicted)
        .collect();
    beside(&contradicted, on_model, why_none)
}

fn beside(contradicted: &[&Claim], on_model: Option<&[Claim]>, why_none: &str) -> Vec<ModelNote> {
    let Some(on_model) = on_model else {
        return contradicted
            .iter()
            .map(|c| ModelNote {
                id: c.id.clone(),
                model: "not modelled".into(),
                verdict_on_model: None,
                why: why_none.to_string(),
            })
            .collect();
    };
    contradicted
        .iter()
        .map(|c| {
            let m = on_model.iter().find(|m| m.id == c.id);
            let (model, why) = match m {
                None => (
                    "not modelled",
                    "the claim is not judged on the model's runs".to_string(),
                ),
                Some(m) if same_cells(c, m) => (
                    "not modelled",
                    "the claim reads nothing the model predicts (its cells are unchanged)".into(),
                ),
                Some(m) if m.verdict == Verdict::NotTestable => (
                    "not modelled",
                    format!("not testable on the model's runs: {}", m.reason),
                ),
                Some(m) => by_cells(c, m),
            };
            ModelNote {
                id: c.id.clone(),
                model: model.into(),
                verdict_on_model: m.map(|m| m.verdict),
                why,
            }
        })
        .collect()
}

/// The measured claim's outside cells against the model's copies.
fn by_cells(c: &Claim, m: &Claim) -> (&'static str, String) {
    let outside: Vec<&CellOut> = c
        .cells
        .iter()
        .filter(|x| x.position == Position::Outside)
        .collect();
    if outside.is_empty() {
        // No cell outside (a contradiction by another route): the
        // claim's verdict on the model's runs decides.
        return match m.verdict {
            Verdict::Contradicted => (
                "explained",
                format!("the model's runs contradict it too: {}", first_cells(m)),
            ),
            Verdict::Confirmed => (
                "unexplained",
                format!("the model's runs confirm it: {}", first_cells(m)),
            ),
            _ => (
                "unexplained",
                format!("the model's runs leave it inconclusive: {}", first_cells(m)),
            ),
        };
    }
    let copies: Vec<(&CellOut, Option<&CellOut>)> = outside
        .iter()
        .map(|x| {
            (
                *x,
                m.cells
                    .iter()
                    .find(|y| y.quantity == x.quantity && y.cell == x.cell),
            )
        })
        .collect();
    let changed: Vec<&CellOut> = copies
        .iter()
        .filter_map(|(x, y)| y.filter(|y| !same_value(x.value, y.value)))
        .collect();
    if changed.is_empty() {
        let why = if copies.iter().all(|(_, y)| y.is_none()) {
            "the model has no prediction for the cells that contradict it (Nagle, range requests, a compressing line or another page)"
        } else {
            "the cells that contradict it read nothing the model predicts (unchanged on the model's runs)"
        };
        return ("not modelled", why.into());
    }
    let out: Vec<&CellOut> = changed
        .iter()
        .copied()
        .filter(|y| y.position == Position::Outside)
        .collect();
    let show = |v: &[&CellOut]| -> String {
        v.iter()
            .take(3)
            .map(|x| format!("{} {}", x.cell, super::spec::fmt_num(x.value)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if out.is_empty() {
        let verb = match m.verdict {
            Verdict::Confirmed => "confirm it",
            Verdict::Contradicted => "put these cells inside or across the band",
            _ => "leave it inconclusive",
        };
        (
            "unexplained",
            format!("the model's runs {verb}: {}", show(&changed)),
        )
    } else {
        (
            "explained",
            format!("the model's runs contradict it too: {}", show(&out)),
        )
    }
}

fn same_value(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

fn same_cells(a: &Claim, b: &Claim) -> bool {
    !a.cells.is_empty()
        && a.cells.len() == b.cells.len()
        && a.cells
            .iter()
            .zip(&b.cells)
            .all(|(x, y)| x.cell == y.cell && same_value(x.value, y.value))
}

fn first_cells(c: &Claim) -> String {
    let cells: Vec<String> = c
        .cells
        .iter()
        .take(3)
        .map(|x| format!("{} {}", x.cell, super::spec::fmt_num(x.value)))
        .collect();
    if cells.is_empty() {
        c.reason.clone()
    } else {
        cells.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::ClaimKind;
    use super::*;

    /// The WAN HTTP/1.1 first-time runs of the committed main Microscape
    /// run, each measured at `secs`.
    fn runs(secs: f64) -> Vec<RunRecord> {
        let path = format!(
            "{}/../../docs/bench-results/2026-11-25/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let all: Vec<RunRecord> = serde_json::from_value(v["runs"].clone()).unwrap();
        let mut out: Vec<RunRecord> = all
            .into_iter()
            .filter(|r| {
                r.net == Net::Wan
                    && r.strategy == Strategy::Http11
                    && r.test == Test::First
                    && r.ok()
                    && !r.link_lateness.flagged
            })
            .collect();
        assert!(out.len() >= 3);
        for r in &mut out {
            r.elapsed_s = secs;
        }
        out
    }

    fn claim(id: &str, verdict: Verdict, value: f64) -> Claim {
        Claim {
            id: id.into(),
            paper: "001".into(),
            section: String::new(),
            claim: String::new(),
            covers: String::new(),
            kind: ClaimKind::Claim,
            verdict,
            reason: String::new(),
            bands: Vec::new(),
            cells: vec![CellOut {
                quantity: "seconds".into(),
                cell: "wan http11 first".into(),
                value,
                lo: value,
                hi: value,
                n: Some(3),
                position: if verdict == Verdict::Contradicted {
                    Position::Outside
                } else {
                    Position::Inside
                },
            }],
            note: None,
        }
    }

    /// A rule: "the load takes at most `limit` seconds" (contradicted
    /// above it); "runs" counts the runs, which no model changes; "gone"
    /// is judged only on the measured runs (elapsed `measured`).
    fn judge(runs: &[RunRecord], p: f64, measured: f64) -> Vec<Claim> {
        let secs = runs.iter().map(|r| r.elapsed_s).sum::<f64>() / runs.len() as f64;
        let at_most = |id: &str, limit: f64| {
            let v = if secs > limit {
                Verdict::Contradicted
            } else {
                Verdict::Confirmed
            };
            claim(id, v, secs)
        };
        let mut out = vec![
            // Both the measurement (2p) and the model (p) exceed p/2.
            at_most("explained", 0.5 * p),
            // The measurement exceeds 1.5p; the model does not.
            at_most("unexplained", 1.5 * p),
            // Nothing the model predicts.
            claim("runs", Verdict::Contradicted, runs.len() as f64),
            // Confirmed: no note.
            at_most("confirmed", 10.0 * p),
        ];
        if (secs - measured).abs() < 1e-12 {
            out.push(claim("gone", Verdict::Contradicted, secs));
        }
        out
    }

    /// The model's WAN HTTP/1.1 prediction is p; the measurement is set
    /// to 2p. A claim the model's runs contradict too is explained, one
    /// they confirm is unexplained, one whose cells they leave unchanged
    /// or do not judge is not modelled, a confirmed claim gets no note,
    /// and without the modelled page every contradicted claim is not
    /// modelled.
    #[test]
    fn explained_unexplained_and_not_modelled() {
        let page = Page::microscape(1997);
        let probe = runs(1.0);
        let p = eval_runs(&probe, &page, 0.0).cells[0]
            .prediction
            .predicted
            .seconds;
        assert!(p > 0.0);
        let measured = runs(2.0 * p);
        let claims = judge(&measured, p, 2.0 * p);
        let got = notes(&measured, &claims, Some(&page), |r| judge(r, p, 2.0 * p));
        let by = |id: &str| got.iter().find(|n| n.id == id).map(|n| n.model.as_str());
        assert_eq!(by("explained"), Some("explained"), "{got:?}");
        assert_eq!(by("unexplained"), Some("unexplained"), "{got:?}");
        assert_eq!(by("runs"), Some("not modelled"), "{got:?}");
        assert_eq!(by("gone"), Some("not modelled"), "{got:?}");
        assert_eq!(by("confirmed"), None, "{got:?}");
        let e = got.iter().find(|n| n.id == "explained").unwrap();
        assert_eq!(e.verdict_on_model, Some(Verdict::Contradicted));
        let u = got.iter().find(|n| n.id == "unexplained").unwrap();
        assert_eq!(u.verdict_on_model, Some(Verdict::Confirmed));
        // Another page: nothing is modelled.
        let none = super::notes(&measured, &claims, None, |r| judge(r, p, 2.0 * p));
        assert_eq!(none.len(), 4);
        assert!(none.iter().all(|n| n.model == "not modelled"), "{none:?}");
    }
}
