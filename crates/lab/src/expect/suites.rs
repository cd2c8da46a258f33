//! The model beside the suites that are not paper 001's Microscape page:
//! the objpack suite (paper 002's file sets; [`super::files`]) and the
//! getall suite (paper 003's pages of N images; [`super::Page::getall`]).
//! Each suite's own module reads its results and builds the cells; this is
//! the common shape of the evaluation, its error per network and overall,
//! and its text.

use std::fmt::Write as _;

use serde::Serialize;

use super::eval::{fmt_pct, mean, scope_of, Scope, ScopeRow, MODEL};
use super::{Breakdown, Cost};

/// A second time a suite measures beside its main one (the objpack
/// suite's client response time).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Timed {
    pub measured_s: f64,
    pub predicted_s: f64,
    pub error_pct: f64,
}

/// One measured cell and its prediction.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteCell {
    pub net: String,
    pub method: String,
    /// objpack: the group's mean file size, KB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_kb: Option<usize>,
    /// objpack: sets moved in one run (1, or a window of 5).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sets: Option<usize>,
    /// getall: the image size, bytes, and the number of images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<usize>,
    /// Runs (or repetitions) measured.
    pub runs: usize,
    /// Measured packets, IP bytes, payload and seconds (NaN, written as
    /// null, where the suite does not record one).
    pub measured: Cost,
    pub predicted: Cost,
    pub lower_bound_s: f64,
    pub lower_bound_round_trips: u32,
    pub breakdown: Breakdown,
    /// (predicted - measured) / measured, percent.
    pub error_pct: Cost,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<Timed>,
}

impl SuiteCell {
    /// The row's name in the text table.
    pub fn label(&self) -> String {
        let mut s = String::new();
        if let Some(g) = self.group_kb {
            let _ = write!(s, "{g} KB ");
        }
        if let Some(n) = self.sets.filter(|&n| n > 1) {
            let _ = write!(s, "x{n} sets ");
        }
        if let (Some(size), Some(n)) = (self.size, self.images) {
            let _ = write!(s, "{size} B x {n} ");
        }
        s.push_str(&self.method);
        s
    }
}

/// (predicted - measured) / measured, percent (NaN without a measure).
pub fn pct(p: f64, m: f64) -> f64 {
    if m > 0.0 && m.is_finite() {
        (p - m) / m * 100.0
    } else {
        f64::NAN
    }
}

/// The error of every quantity of `predicted` against `measured`.
pub fn errors(predicted: &Cost, measured: &Cost) -> Cost {
    Cost {
        packets: pct(predicted.packets, measured.packets),
        bytes: pct(predicted.bytes, measured.bytes),
        payload: pct(predicted.payload, measured.payload),
        seconds: pct(predicted.seconds, measured.seconds),
    }
}

/// The mean of several costs (of the runs of one cell).
pub fn mean_cost(v: &[Cost]) -> Cost {
    Cost {
        packets: mean(v.iter().map(|c| c.packets)),
        bytes: mean(v.iter().map(|c| c.bytes)),
        payload: mean(v.iter().map(|c| c.payload)),
        seconds: mean(v.iter().map(|c| c.seconds)),
    }
}

/// The mean of several breakdowns.
pub fn mean_breakdown(v: &[Breakdown]) -> Breakdown {
    Breakdown {
        round_trips_s: mean(v.iter().map(|b| b.round_trips_s)),
        serialisation_s: mean(v.iter().map(|b| b.serialisation_s)),
        slow_start_s: mean(v.iter().map(|b| b.slow_start_s)),
        server_s: mean(v.iter().map(|b| b.server_s)),
        loss_s: mean(v.iter().map(|b| b.loss_s)),
    }
}

/// A suite's results with the model beside them.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteEval {
    pub model: &'static str,
    /// `objpack` or `getall`.
    pub suite: &'static str,
    /// What "seconds" is in this suite.
    pub seconds: &'static str,
    /// The server time per response the predictions assumed, s.
    pub server_s: f64,
    pub cells: Vec<SuiteCell>,
    pub scopes: Vec<Scope>,
    /// Cells or runs left out and why.
    pub skipped: Vec<String>,
}

impl SuiteEval {
    /// The evaluation of `cells`: the error over all and per network (in
    /// the order the networks first appear).
    pub fn new(
        suite: &'static str,
        seconds: &'static str,
        server_s: f64,
        cells: Vec<SuiteCell>,
        skipped: Vec<String>,
    ) -> SuiteEval {
        let row = |c: &SuiteCell| ScopeRow {
            error_pct: c.error_pct,
            measured_s: c.measured.seconds,
            predicted_s: c.predicted.seconds,
            lower_bound_s: c.lower_bound_s,
            client_error_pct: c.client.map(|t| t.error_pct),
        };
        let all: Vec<ScopeRow> = cells.iter().map(row).collect();
        let mut scopes = vec![scope_of("all", &all)];
        let mut nets: Vec<&str> = Vec::new();
        for c in &cells {
            if !nets.contains(&c.net.as_str()) {
                nets.push(&c.net);
            }
        }
        for net in nets {
            let rows: Vec<ScopeRow> = cells.iter().filter(|c| c.net == net).map(row).collect();
            scopes.push(scope_of(net, &rows));
        }
        SuiteEval {
            model: MODEL,
            suite,
            seconds,
            server_s,
            cells,
            scopes,
            skipped,
        }
    }

    /// The text report: per network, measured, predicted and lower bound
    /// with the errors, where the time goes, and the error per scope.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "The model beside the measurement, {} suite ({}; server time {:.1} ms per response)",
            self.suite,
            self.model,
            self.server_s * 1e3
        );
        let _ = writeln!(s, "Sec: {}", self.seconds);
        let has_client = self.cells.iter().any(|c| c.client.is_some());
        let has_packets = self.cells.iter().any(|c| c.measured.packets.is_finite());
        let mut nets: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !nets.contains(&c.net.as_str()) {
                nets.push(&c.net);
            }
        }
        for net in nets {
            let _ = writeln!(
                s,
                "{net} — Sec measured, predicted, lower bound; where the time goes: seconds saved without the round trips (RTT), serialisation (ser), slow start (ss), server time (srv)"
            );
            let mut h = format!(
                "  {:<26} {:>9} {:>9} {:>9} {:>6}",
                "", "Sec", "model", "bound", "err"
            );
            if has_client {
                let _ = write!(h, " | {:>9} {:>9} {:>6}", "client", "model", "err");
            }
            if has_packets {
                let _ = write!(
                    h,
                    " | {:>7} {:>7} {:>6} | {:>9} {:>9} {:>6}",
                    "Pa", "model", "err", "Bytes", "model", "err"
                );
            }
            let _ = write!(h, " | {:>7} {:>7} {:>7} {:>7}", "RTT", "ser", "ss", "srv");
            let _ = writeln!(s, "{}", h.trim_end());
            for c in self.cells.iter().filter(|c| c.net == net) {
                let d = if c.measured.seconds >= 1.0 { 2 } else { 4 };
                let mut r = format!(
                    "  {:<26} {:>9.d$} {:>9.d$} {:>9.d$} {:>6}",
                    c.label(),
                    c.measured.seconds,
                    c.predicted.seconds,
                    c.lower_bound_s,
                    fmt_pct(c.error_pct.seconds),
                );
                if has_client {
                    match c.client {
                        Some(t) => {
                            let _ = write!(
                                r,
                                " | {:>9.d$} {:>9.d$} {:>6}",
                                t.measured_s,
                                t.predicted_s,
                                fmt_pct(t.error_pct)
                            );
                        }
                        None => {
                            let _ = write!(r, " | {:>9} {:>9} {:>6}", "-", "-", "-");
                        }
                    }
                }
                if has_packets {
                    let _ = write!(
                        r,
                        " | {:>7.0} {:>7.0} {:>6} | {:>9.0} {:>9.0} {:>6}",
                        c.measured.packets,
                        c.predicted.packets,
                        fmt_pct(c.error_pct.packets),
                        c.measured.bytes,
                        c.predicted.bytes,
                        fmt_pct(c.error_pct.bytes),
                    );
                }
                let b = &c.breakdown;
                let _ = write!(
                    r,
                    " | {:>7.d$} {:>7.d$} {:>7.d$} {:>7.d$}",
                    b.round_trips_s, b.serialisation_s, b.slow_start_s, b.server_s
                );
                let _ = writeln!(s, "{r}");
            }
        }
        let _ = writeln!(
            s,
            "Model error (mean absolute percentage error; Spearman rank correlation of seconds):"
        );
        let num = |x: f64| {
            if x.is_finite() {
                format!("{x:>5.1}%")
            } else {
                "    -".into()
            }
        };
        for sc in &self.scopes {
            let mut line = format!(
                "  {:<6} {:>3} cells: seconds {}",
                sc.scope,
                sc.cells,
                num(sc.mape_seconds)
            );
            if let Some(c) = sc.mape_client_seconds {
                let _ = write!(line, ", client seconds {}", num(c));
            }
            if has_packets {
                let _ = write!(
                    line,
                    ", packets {}, bytes {}",
                    num(sc.mape_packets),
                    num(sc.mape_bytes)
                );
            }
            let _ = write!(
                line,
                "; Spearman {}; measured below the bound: {}",
                sc.spearman_seconds
                    .map_or("-".into(), |r| format!("{r:.2}")),
                sc.below_lower_bound
            );
            let _ = writeln!(s, "{line}");
        }
        for k in &self.skipped {
            let _ = writeln!(s, "  skipped: {k}");
        }
        s
    }
}
