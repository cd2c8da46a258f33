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

use super::spec::{Claim, Verdict};
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
        return contradicted
            .iter()
            .map(|c| ModelNote {
                id: c.id.clone(),
                model: "not modelled".into(),
                verdict_on_model: None,
                why: "the runs loaded a page the model does not describe".into(),
            })
            .collect();
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
                Some(m) => match m.verdict {
                    Verdict::Contradicted => (
                        "explained",
                        format!("the model's runs contradict it too: {}", first_cells(m)),
                    ),
                    Verdict::Confirmed => (
                        "unexplained",
                        format!("the model's runs confirm it: {}", first_cells(m)),
                    ),
                    Verdict::Inconclusive => (
                        "unexplained",
                        format!("the model's runs leave it inconclusive: {}", first_cells(m)),
                    ),
                    Verdict::NotTestable => (
                        "not modelled",
                        format!("not testable on the model's runs: {}", m.reason),
                    ),
                },
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

fn same_cells(a: &Claim, b: &Claim) -> bool {
    !a.cells.is_empty()
        && a.cells.len() == b.cells.len()
        && a.cells.iter().zip(&b.cells).all(|(x, y)| {
            x.cell == y.cell && (x.value - y.value).abs() <= 1e-9 * x.value.abs().max(1.0)
        })
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
