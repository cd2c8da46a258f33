//! The paper's findings as a table of claim specifications, checked on the
//! emulated 100 Mbit/s LAN (the paper's testbed: two PCs on a Fast Ethernet
//! switch). A saving "up to X %" is read as: Object Packaging is faster (or
//! cheaper) than the baseline in every file group, and the largest saving
//! over the groups is X within 10 percentage points. A saving whose 95 %
//! interval is disjoint from that band contradicts the number (larger or
//! smaller, the evidence says which); an interval touching it, or a
//! direction within noise, is inconclusive.

use std::collections::BTreeMap;

use crate::claims::spec::{Cells, ClaimKind, ClaimSpec, Estimate, Evaluation, Interval, Outcome};
use crate::claims::Verdict;

use super::files::GROUP_MEANS;
use super::methods::Method;

/// Which measured quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    ServerCpu,
    ServerTime,
    ClientCpu,
    ClientTime,
    Packets,
    Bytes,
}

impl Metric {
    pub fn label(self) -> &'static str {
        match self {
            Metric::ServerCpu => "server CPU",
            Metric::ServerTime => "server response time",
            Metric::ClientCpu => "client CPU",
            Metric::ClientTime => "client response time",
            Metric::Packets => "packets",
            Metric::Bytes => "bytes",
        }
    }
}

/// Estimates per (metric, group KB, method) on one network, and the
/// per-set values behind them (every method moved the same sets, so
/// comparisons are paired by set).
pub struct Ctx {
    pub net: String,
    pub cells: BTreeMap<(Metric, usize, Method), Estimate>,
    pub per_set: BTreeMap<(Metric, usize, Method), BTreeMap<usize, f64>>,
}

impl Ctx {
    fn get(&self, m: Metric, g: usize, method: Method) -> Option<Estimate> {
        self.cells.get(&(m, g, method)).copied()
    }

    /// 1 - method/base per group: the mean of the per-set savings with its
    /// 95% interval (paired by set: the sets' own size differences cancel).
    /// Without per-set values, the ratio of the two estimates.
    fn savings(&self, m: Metric, method: Method, base: Method) -> Vec<(usize, Interval)> {
        GROUP_MEANS
            .iter()
            .filter_map(|&g| {
                let g = g >> 10;
                let (a, b) = (
                    self.per_set.get(&(m, g, method)),
                    self.per_set.get(&(m, g, base)),
                );
                if let (Some(a), Some(b)) = (a, b) {
                    let s: Vec<f64> = a
                        .iter()
                        .filter_map(|(set, x)| {
                            b.get(set).filter(|y| **y > 0.0).map(|y| 1.0 - x / y)
                        })
                        .collect();
                    if !s.is_empty() {
                        return Some((g, estimate(&s).interval()));
                    }
                }
                let a = self.get(m, g, method)?;
                let b = self.get(m, g, base)?;
                Some((g, (a.interval() / b.interval()).one_minus()))
            })
            .collect()
    }
}

/// Mean, sample standard deviation and count (an empty cell reads 0, 0, 0).
pub fn estimate(xs: &[f64]) -> Estimate {
    if xs.is_empty() {
        return Estimate {
            mean: 0.0,
            sd: 0.0,
            n: 0,
        };
    }
    Estimate::of(xs)
}

fn pct(i: &Interval) -> String {
    Interval {
        value: i.value * 100.0,
        lo: i.lo * 100.0,
        hi: i.hi * 100.0,
        single: i.single,
    }
    .show_unit(1, " %")
}

/// "Object Packaging reduced up to `paper` % of `metric` from `base`".
fn up_to(ctx: &Ctx, metric: Metric, base: Method, paper: f64) -> Evaluation {
    let savings = ctx.savings(metric, Method::Objpack, base);
    let reading = format!(
        "{} on {}: saving of Object Packaging over {} per group, then the largest against {paper} % ± 10",
        metric.label(),
        ctx.net,
        base.label()
    );
    if savings.len() < GROUP_MEANS.len() {
        return Cells::new().evaluate(Verdict::Inconclusive, &reading);
    }
    let mut cells = Cells::new();
    for (g, s) in &savings {
        cells.push(
            format!("{g} KB {}", pct(s)),
            s.at_least(0.0).and(
                // A saving must be above zero, not merely not negative.
                if s.lo > 0.0 || s.single && s.value > 0.0 {
                    Outcome::Pass
                } else if s.hi < 0.0 {
                    Outcome::Fail
                } else {
                    Outcome::WithinNoise
                },
            ),
        );
    }
    let (g, best) = savings
        .iter()
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value))
        .expect("three groups");
    let band = (paper - 10.0) / 100.0..=(paper + 10.0) / 100.0;
    let magnitude = best.within(band);
    let side = if best.value * 100.0 > paper {
        "larger"
    } else {
        "smaller"
    };
    cells.push(
        format!(
            "largest {} at {g} KB vs paper {paper} %{}",
            pct(best),
            if magnitude == Outcome::Fail {
                format!(" ({side})")
            } else {
                String::new()
            }
        ),
        match magnitude {
            // Touching the band's edge is not a mismatch.
            Outcome::WithinNoise => Outcome::Pass,
            o => o,
        },
    );
    cells.evaluate(Verdict::Contradicted, &reading)
}

fn small_files_gain_most(ctx: &Ctx) -> Evaluation {
    let reading = format!(
        "{}: saving of Object Packaging over HTTP 1.0 and over HTTP 1.1 (server response time and server CPU) is larger for 4 KB than for 32 KB files",
        ctx.net
    );
    let mut cells = Cells::new();
    for base in [Method::Http10, Method::Http11] {
        for m in [Metric::ServerTime, Metric::ServerCpu] {
            let s = ctx.savings(m, Method::Objpack, base);
            let (Some(small), Some(large)) =
                (s.iter().find(|x| x.0 == 4), s.iter().find(|x| x.0 == 32))
            else {
                continue;
            };
            cells.push(
                format!(
                    "{} vs {}: 4 KB {} / 32 KB {}",
                    m.label(),
                    base.label(),
                    pct(&small.1),
                    pct(&large.1)
                ),
                small.1.greater(&large.1),
            );
        }
    }
    cells.evaluate(Verdict::Contradicted, &reading)
}

const ABSTRACT: &str = "It is found that Object Packaging reduces the response time and CPU workload at the server by up to 92.0 and 91.1% from HTTP 1.0 and 64.5 and 82.4% from HTTP 1.1 Persistent Connection, respectively.";

/// The paper's findings.
pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
    ClaimSpec {
        id: "server-time-vs-http10",
        quote: ABSTRACT,
        source: "Abstract (server response time vs HTTP 1.0: 92.0 %)",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerTime, Method::Http10, 92.0),
    },
    ClaimSpec {
        id: "server-cpu-vs-http10",
        quote: ABSTRACT,
        source: "Abstract (server CPU vs HTTP 1.0: 91.1 %)",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerCpu, Method::Http10, 91.1),
    },
    ClaimSpec {
        id: "server-time-vs-http11",
        quote: "Object Packaging reduced up to 64.5% of the server response time from HTTP 1.1 Persistent Connection.",
        source: "Section 5",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerTime, Method::Http11, 64.5),
    },
    ClaimSpec {
        id: "server-cpu-vs-http11",
        quote: "It was also demonstrated that Object Packaging transmitted the same amount of data with less accumulated CPU utilization (up to 82.4% of the server accumulated CPU utilization was reduced from HTTP 1.1 Persistent Connection).",
        source: "Section 5",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerCpu, Method::Http11, 82.4),
    },
    ClaimSpec {
        id: "client-time-vs-http11",
        quote: "As for the client overhead, Object Packaging resulted in less client response time and client accumulated CPU utilization than those for HTTP 1.1 Persistent Connection by up to 48.6% and 57.1%, respectively.",
        source: "Section 5 (client response time: 48.6 %)",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ClientTime, Method::Http11, 48.6),
    },
    ClaimSpec {
        id: "client-cpu-vs-http11",
        quote: "As for the client overhead, Object Packaging resulted in less client response time and client accumulated CPU utilization than those for HTTP 1.1 Persistent Connection by up to 48.6% and 57.1%, respectively.",
        source: "Section 5 (client CPU: 57.1 %)",
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ClientCpu, Method::Http11, 57.1),
    },
    ClaimSpec {
        id: "small-files-gain-most",
        quote: "As can be seen in common in all the experiments, Object Packaging was efficient when the file size was small.",
        source: "Section 4.3",
        kind: ClaimKind::Claim,
        rule: small_files_gain_most,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn est(mean: f64) -> Estimate {
        Estimate {
            mean,
            sd: mean * 0.01,
            n: 10,
        }
    }

    fn ctx(op: [f64; 3], p11: [f64; 3]) -> Ctx {
        let mut cells = BTreeMap::new();
        for (i, g) in [4, 16, 32].into_iter().enumerate() {
            cells.insert((Metric::ServerTime, g, Method::Objpack), est(op[i]));
            cells.insert((Metric::ServerTime, g, Method::Http11), est(p11[i]));
        }
        Ctx {
            net: "lan100".into(),
            cells,
            per_set: BTreeMap::new(),
        }
    }

    #[test]
    fn up_to_reads_direction_and_magnitude() {
        // The paper's own Table 4 confirms its sentence.
        let c = ctx([44.2, 176.0, 392.9], [124.5, 266.8, 465.2]);
        assert_eq!(
            up_to(&c, Metric::ServerTime, Method::Http11, 64.5).verdict,
            Verdict::Confirmed
        );
        // A much smaller saving contradicts the number.
        let c = ctx([90.0, 250.0, 450.0], [100.0, 266.8, 465.2]);
        let e = up_to(&c, Metric::ServerTime, Method::Http11, 64.5);
        assert_eq!(e.verdict, Verdict::Contradicted, "{}", e.evidence);
        assert!(e.evidence.contains("smaller"));
        // Slower in one group: the direction fails there.
        let c = ctx([44.0, 300.0, 392.9], [124.5, 266.8, 465.2]);
        assert_eq!(
            up_to(&c, Metric::ServerTime, Method::Http11, 64.5).verdict,
            Verdict::Contradicted
        );
    }
}
