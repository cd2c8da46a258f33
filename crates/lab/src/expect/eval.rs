//! The model beside the measurement: predictions for every measured cell of
//! a Microscape-suite results directory (or of a bench run's records), the
//! error per cell, and per suite and network the mean absolute percentage
//! error and Spearman's rank correlation of predicted against measured
//! seconds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context};
use pagewire_client::Revalidation;
use serde::Serialize;

use super::{predict, Client, Cost, Inputs, LinkSpec, Page, Prediction};
use crate::model::{Net, Revalidating, RunRecord, Strategy, Test, Tuning};

/// The model's name and version, recorded with every evaluation.
pub const MODEL: &str = "pagewire expected-time model 1 (first principles, nothing fitted)";

/// One measured cell and its prediction.
#[derive(Clone, Debug, Serialize)]
pub struct CellEval {
    pub net: Net,
    pub strategy: Strategy,
    pub test: Test,
    /// Runs averaged (ok, not flagged, tuned robot, not a sweep run).
    pub runs: usize,
    pub measured: Cost,
    #[serde(flatten)]
    pub prediction: Prediction,
    /// (predicted - measured) / measured, percent.
    pub error_pct: Cost,
}

/// The error over a set of cells.
#[derive(Clone, Debug, Serialize)]
pub struct Scope {
    /// "all" or a network's name.
    pub scope: String,
    pub cells: usize,
    /// Mean absolute percentage error of seconds, packets, IP bytes.
    pub mape_seconds: f64,
    pub mape_packets: f64,
    pub mape_bytes: f64,
    /// Spearman's rank correlation of predicted and measured seconds
    /// (None with fewer than 3 cells).
    pub spearman_seconds: Option<f64>,
    /// Cells measured faster than the lower bound (should be 0).
    pub below_lower_bound: usize,
    /// Mean absolute percentage error of a second time the suite measures
    /// (the objpack suite's client response time); absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mape_client_seconds: Option<f64>,
}

/// A results directory (or a bench run) with the model beside it.
#[derive(Clone, Debug, Serialize)]
pub struct ModelEval {
    pub model: &'static str,
    /// The server time per response the predictions assumed, s.
    pub server_s: f64,
    pub cells: Vec<CellEval>,
    pub scopes: Vec<Scope>,
    /// Cells left out and why.
    pub skipped: Vec<String>,
}

pub(crate) fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// Predicts every tuned cell of `runs` (all on `page`).
pub fn eval_runs(runs: &[RunRecord], page: &Page, server_s: f64) -> ModelEval {
    let mut groups: BTreeMap<(Net, Strategy, Test), Vec<&RunRecord>> = BTreeMap::new();
    let mut skipped = Vec::new();
    for r in runs {
        if !r.ok() || r.is_sweep() || r.link_lateness.flagged || r.robot.tuning != Tuning::Tuned {
            continue;
        }
        // What the model does not describe: Nagle's algorithm, range
        // requests, a compressing line.
        let compressing = r
            .link
            .get("compression")
            .and_then(|c| c.as_str())
            .is_some_and(|c| c != "none");
        let unmodelled = if r.robot.nagle {
            Some("Nagle's algorithm on")
        } else if r.robot.range_first.is_some() {
            Some("range requests")
        } else if compressing {
            Some("a compressing line")
        } else {
            None
        };
        if let Some(why) = unmodelled {
            let k = format!("{}/{}/{}: {why} (not modelled)", r.net, r.strategy, r.test);
            if !skipped.contains(&k) {
                skipped.push(k);
            }
            continue;
        }
        groups
            .entry((r.net, r.strategy, r.test))
            .or_default()
            .push(r);
    }
    let mut cells = Vec::new();
    for ((net, strategy, test), rs) in groups {
        let first = rs[0];
        let link = match LinkSpec::from_config(&first.link) {
            Ok(l) => l,
            Err(e) => {
                skipped.push(format!("{net}/{strategy}/{test}: {e}"));
                continue;
            }
        };
        let request_bytes = mean(
            rs.iter()
                .map(|r| r.mean_request_bytes)
                .filter(|x| x.is_finite()),
        );
        let client = Client {
            request_bytes: if request_bytes.is_finite() {
                request_bytes
            } else {
                Client::default().request_bytes
            },
            revalidation: match first.robot.revalidation {
                Revalidating::Robot(r) => r,
                _ => Revalidation::Conditional,
            },
            out_buffer: if first.robot.out_buffer_bytes > 0 {
                first.robot.out_buffer_bytes as u64
            } else {
                1024
            },
            flush_after_s: if first.robot.flush_after_ms > 0.0 {
                first.robot.flush_after_ms / 1e3
            } else {
                0.050
            },
            explicit_flush: first.robot.explicit_flush,
            ..Client::default()
        };
        let inp = Inputs {
            page,
            link,
            client,
            server_s,
        };
        let prediction = predict(&inp, strategy, test);
        let measured = Cost {
            packets: mean(rs.iter().map(|r| r.packets_total as f64)),
            bytes: mean(rs.iter().map(|r| r.bytes_total as f64)),
            payload: mean(rs.iter().map(|r| r.payload_bytes_total as f64)),
            seconds: mean(rs.iter().map(|r| r.elapsed_s)),
        };
        let pct = |p: f64, m: f64| {
            if m > 0.0 {
                (p - m) / m * 100.0
            } else {
                f64::NAN
            }
        };
        let p = prediction.predicted;
        let error_pct = Cost {
            packets: pct(p.packets, measured.packets),
            bytes: pct(p.bytes, measured.bytes),
            payload: pct(p.payload, measured.payload),
            seconds: pct(p.seconds, measured.seconds),
        };
        cells.push(CellEval {
            net,
            strategy,
            test,
            runs: rs.len(),
            measured,
            prediction,
            error_pct,
        });
    }
    let mut scopes = vec![scope("all", cells.iter().collect())];
    for net in Net::ALL {
        let c: Vec<&CellEval> = cells.iter().filter(|c| c.net == net).collect();
        if !c.is_empty() {
            scopes.push(scope(net.name(), c));
        }
    }
    ModelEval {
        model: MODEL,
        server_s,
        cells,
        scopes,
        skipped,
    }
}

fn scope(name: &str, cells: Vec<&CellEval>) -> Scope {
    let rows: Vec<ScopeRow> = cells
        .iter()
        .map(|c| ScopeRow {
            error_pct: c.error_pct,
            measured_s: c.measured.seconds,
            predicted_s: c.prediction.predicted.seconds,
            lower_bound_s: c.prediction.lower_bound_s,
            client_error_pct: None,
        })
        .collect();
    scope_of(name, &rows)
}

/// What a scope reads of one cell.
pub(crate) struct ScopeRow {
    pub error_pct: Cost,
    pub measured_s: f64,
    pub predicted_s: f64,
    pub lower_bound_s: f64,
    pub client_error_pct: Option<f64>,
}

/// The error over a set of cells: MAPE of each quantity (cells without
/// it left out), Spearman's rank correlation of seconds.
pub(crate) fn scope_of(name: &str, rows: &[ScopeRow]) -> Scope {
    let mape = |f: fn(&Cost) -> f64| {
        mean(
            rows.iter()
                .map(|c| f(&c.error_pct).abs())
                .filter(|x| x.is_finite()),
        )
    };
    let meas: Vec<f64> = rows.iter().map(|c| c.measured_s).collect();
    let pred: Vec<f64> = rows.iter().map(|c| c.predicted_s).collect();
    let client: Vec<f64> = rows
        .iter()
        .filter_map(|c| c.client_error_pct)
        .filter(|x| x.is_finite())
        .map(f64::abs)
        .collect();
    Scope {
        scope: name.to_string(),
        cells: rows.len(),
        mape_seconds: mape(|c| c.seconds),
        mape_packets: mape(|c| c.packets),
        mape_bytes: mape(|c| c.bytes),
        spearman_seconds: spearman(&meas, &pred),
        below_lower_bound: rows
            .iter()
            .filter(|c| c.measured_s < c.lower_bound_s)
            .count(),
        mape_client_seconds: (!client.is_empty()).then(|| mean(client.into_iter())),
    }
}

/// Ranks with ties sharing their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            r[k] = rank;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation (Pearson's of the ranks); None with fewer
/// than 3 values or no spread.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    if va == 0.0 || vb == 0.0 {
        return None;
    }
    Some(cov / (va * vb).sqrt())
}

/// Reads a Microscape-suite results directory (or its results.json) and
/// puts the model beside every tuned cell.
pub fn eval_dir(path: &Path, server_s: f64) -> anyhow::Result<ModelEval> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("read {}", file.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let made_by = v.get("made_by").and_then(|m| m.as_str()).unwrap_or("");
    if !made_by.contains("--suite microscape") {
        bail!(
            "{}: made by {made_by:?}; the model reads the Microscape, objpack and getall suites' results (pagewire bench --suite microscape, objpack or getall)",
            file.display()
        );
    }
    let runs: Vec<RunRecord> = serde_json::from_value(v.get("runs").cloned().unwrap_or_default())
        .with_context(|| format!("{}: runs", file.display()))?;
    let seed = 1997;
    let page = Page::microscape(seed);
    match v
        .pointer("/page_facts/html_bytes")
        .and_then(serde_json::Value::as_u64)
    {
        Some(h) if h == page.html.body => {}
        Some(h) => bail!(
            "{}: the page has {h} HTML bytes, the Microscape page of seed {seed} {}: \
             another page (the section-9 CSS page?) is not modelled",
            file.display(),
            page.html.body
        ),
        None => bail!(
            "{}: no page_facts (a replayed page?): the model knows the generated Microscape page only",
            file.display()
        ),
    }
    Ok(eval_runs(&runs, &page, server_s))
}

pub(crate) fn fmt_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.0}%")
    } else {
        "-".into()
    }
}

impl ModelEval {
    /// The text report: per network, measured, predicted and lower bound
    /// with the errors; where the time goes; the error per scope.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "The model beside the measurement ({}; server time {:.1} ms per response)",
            self.model,
            self.server_s * 1e3
        );
        for net in Net::ALL {
            let cells: Vec<&CellEval> = self.cells.iter().filter(|c| c.net == net).collect();
            if cells.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                "{} — Sec measured, predicted, lower bound; where the time goes: seconds saved without the round trips (RTT), serialisation (ser), slow start (ss), server time (srv)",
                net.describe()
            );
            let _ = writeln!(
                s,
                "  {:<46} {:>9} {:>9} {:>9} {:>6} | {:>7} {:>7} {:>6} | {:>8} {:>8} {:>6} | {:>7} {:>7} {:>7} {:>7}",
                "", "Sec", "model", "bound", "err", "Pa", "model", "err", "Bytes", "model", "err", "RTT", "ser", "ss", "srv"
            );
            for c in cells {
                let p = &c.prediction;
                let d = if net == Net::Ppp { 1 } else { 3 };
                let _ = writeln!(
                    s,
                    "  {:<46} {:>9.d$} {:>9.d$} {:>9.d$} {:>6} | {:>7.1} {:>7.0} {:>6} | {:>8.0} {:>8.0} {:>6} | {:>7.d$} {:>7.d$} {:>7.d$} {:>7.d$}",
                    format!("{} {}", c.strategy.paper_label(), c.test),
                    c.measured.seconds,
                    p.predicted.seconds,
                    p.lower_bound_s,
                    fmt_pct(c.error_pct.seconds),
                    c.measured.packets,
                    p.predicted.packets,
                    fmt_pct(c.error_pct.packets),
                    c.measured.bytes,
                    p.predicted.bytes,
                    fmt_pct(c.error_pct.bytes),
                    p.breakdown.round_trips_s,
                    p.breakdown.serialisation_s,
                    p.breakdown.slow_start_s,
                    p.breakdown.server_s,
                );
            }
        }
        let _ = writeln!(
            s,
            "Model error (mean absolute percentage error; Spearman rank correlation of seconds):"
        );
        for sc in &self.scopes {
            let _ = writeln!(
                s,
                "  {:<4} {:>3} cells: seconds {:>5.1}%, packets {:>5.1}%, bytes {:>5.1}%; Spearman {}; measured below the bound: {}",
                sc.scope,
                sc.cells,
                sc.mape_seconds,
                sc.mape_packets,
                sc.mape_bytes,
                sc.spearman_seconds
                    .map_or("-".into(), |r| format!("{r:.2}")),
                sc.below_lower_bound
            );
        }
        for k in &self.skipped {
            let _ = writeln!(s, "  skipped: {k}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_by_hand() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // Ranks 1,2,3,4 against 1,3,2,4: d² = 0+1+1+0 = 2, 1 - 6·2/(4·15).
        let r = spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((r - 0.8).abs() < 1e-12);
        assert_eq!(spearman(&[1.0, 2.0], &[1.0, 2.0]), None);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
    }
}
