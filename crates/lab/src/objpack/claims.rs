//! Paper 002's findings (Fujinoki, Sanjay, Shah, "Web File Transmission by
//! Object Packaging") as claims of the shared engine, judged on the
//! emulated 100 Mbit/s LAN (the paper's testbed: two PCs on a Fast Ethernet
//! switch). Every saving is paired by file set (each method moved the same
//! sets), so its 95% interval is over the sets. "Up to X %" reads through
//! the hedge table: the largest group's saving in X × [0.75, 1.25] (capped
//! at 100%), and "reduces" asks every group's saving to be above zero.

use std::collections::BTreeMap;

use anyhow::{anyhow, Result};
use serde_json::Value;

use crate::claims::bands::source as src;
use crate::claims::spec::{
    decide_all, Band, Claim, ClaimKind, ClaimSpec, Estimate, Interval, Measured, Quantity,
};
use crate::claims::{Judged, Suite};

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

/// "Object Packaging reduced up to X % of `metric` from `base`": every
/// group's saving above zero, the largest in the band.
fn up_to(ctx: &Ctx, metric: Metric, base: Method) -> Measured {
    let savings = ctx.savings(metric, Method::Objpack, base);
    let mut m = Measured::new();
    for &g in GROUP_MEANS.iter() {
        let g = g >> 10;
        match savings.iter().find(|s| s.0 == g) {
            Some((_, s)) => m.push(0, format!("{} {g} KB", ctx.net), *s),
            None => m.absent(format!(
                "{} {g} KB {} and {}",
                ctx.net,
                metric.label(),
                base.label()
            )),
        }
    }
    let all: Vec<Interval> = savings.iter().map(|s| s.1).collect();
    m.push_largest(1, format!("{} largest group", ctx.net), &all);
    m
}

fn small_files_gain_most(ctx: &Ctx) -> Measured {
    let mut m = Measured::new();
    for base in [Method::Http10, Method::Http11] {
        for metric in [Metric::ServerTime, Metric::ServerCpu] {
            let s = ctx.savings(metric, Method::Objpack, base);
            let label = format!("{} {} vs {}", ctx.net, metric.label(), base.label());
            match (s.iter().find(|x| x.0 == 4), s.iter().find(|x| x.0 == 32)) {
                (Some(small), Some(large)) => m.push(0, label, small.1.minus(large.1)),
                _ => m.absent(label),
            }
        }
    }
    m
}

const ABSTRACT: &str = "It is found that Object Packaging reduces the response time and CPU workload at the server by up to 92.0 and 91.1% from HTTP 1.0 and 64.5 and 82.4% from HTTP 1.1 Persistent Connection, respectively.";
const CLIENT: &str = "As for the client overhead, Object Packaging resulted in less client response time and client accumulated CPU utilization than those for HTTP 1.1 Persistent Connection by up to 48.6% and 57.1%, respectively.";
const UP_TO: &str = "hedge table: up to X = the largest cell in X × [0.75, 1.25], capped at 100%";
const INF: f64 = f64::INFINITY;

macro_rules! up_to_q {
    ($metric:expr, $base:expr, $x:expr, $hedge:expr) => {
        &[
            Quantity {
                name: concat!(
                    "saving of Object Packaging over ",
                    $base,
                    " (",
                    $metric,
                    "), per group"
                ),
                band: Band::new(0.0, INF, "reduces", src::DIRECTION),
            },
            Quantity {
                name: concat!("largest saving over the groups (", $metric, ")"),
                band: Band::new(
                    $x * 0.75,
                    if $x * 1.25 > 1.0 { 1.0 } else { $x * 1.25 },
                    $hedge,
                    UP_TO,
                ),
            },
        ]
    };
}

/// The paper's findings.
pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
    ClaimSpec {
        id: "server-time-vs-http10",
        aliases: &[],
        paper: "002",
        section: "Abstract (server response time vs HTTP 1.0: 92.0 %)",
        quote: ABSTRACT,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("server response time", "HTTP 1.0", 0.920, "up to 92.0%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerTime, Method::Http10),
    },
    ClaimSpec {
        id: "server-cpu-vs-http10",
        aliases: &[],
        paper: "002",
        section: "Abstract (server CPU vs HTTP 1.0: 91.1 %)",
        quote: ABSTRACT,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("server CPU", "HTTP 1.0", 0.911, "up to 91.1%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerCpu, Method::Http10),
    },
    ClaimSpec {
        id: "server-time-vs-http11",
        aliases: &[],
        paper: "002",
        section: "Section 5",
        quote: "Object Packaging reduced up to 64.5% of the server response time from HTTP 1.1 Persistent Connection.",
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("server response time", "HTTP 1.1", 0.645, "up to 64.5%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerTime, Method::Http11),
    },
    ClaimSpec {
        id: "server-cpu-vs-http11",
        aliases: &[],
        paper: "002",
        section: "Section 5",
        quote: "It was also demonstrated that Object Packaging transmitted the same amount of data with less accumulated CPU utilization (up to 82.4% of the server accumulated CPU utilization was reduced from HTTP 1.1 Persistent Connection).",
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("server CPU", "HTTP 1.1", 0.824, "up to 82.4%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ServerCpu, Method::Http11),
    },
    ClaimSpec {
        id: "client-time-vs-http11",
        aliases: &[],
        paper: "002",
        section: "Section 5 (client response time: 48.6 %)",
        quote: CLIENT,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("client response time", "HTTP 1.1", 0.486, "up to 48.6%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ClientTime, Method::Http11),
    },
    ClaimSpec {
        id: "client-cpu-vs-http11",
        aliases: &[],
        paper: "002",
        section: "Section 5 (client CPU: 57.1 %)",
        quote: CLIENT,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN",
        quantities: up_to_q!("client CPU", "HTTP 1.1", 0.571, "up to 57.1%"),
        kind: ClaimKind::Claim,
        rule: |c| up_to(c, Metric::ClientCpu, Method::Http11),
    },
    ClaimSpec {
        id: "small-files-gain-most",
        aliases: &[],
        paper: "002",
        section: "Section 4.3",
        quote: "As can be seen in common in all the experiments, Object Packaging was efficient when the file size was small.",
        cells: "server response time and server CPU, vs HTTP 1.0 and vs HTTP 1.1, on the 100 Mbit/s LAN",
        quantities: &[Quantity {
            name: "saving at 4 KB - saving at 32 KB",
            band: Band::new(0.0, INF, "efficient when the file size was small", src::DIRECTION),
        }],
        kind: ClaimKind::Claim,
        rule: small_files_gain_most,
    },
];

/// Judge the claims on the LAN contexts (the paper's testbed).
pub fn judge(ctxs: &[Ctx]) -> Vec<Claim> {
    let lan: Vec<&Ctx> = ctxs.iter().filter(|c| c.net.starts_with("lan")).collect();
    match lan.as_slice() {
        [one] => decide_all(CLAIMS, *one),
        _ => decide_all(
            CLAIMS,
            &Ctx {
                net: "lan100 (not measured)".into(),
                cells: BTreeMap::new(),
                per_set: BTreeMap::new(),
            },
        ),
    }
}

fn metric_value(r: &Value, m: Metric) -> Option<f64> {
    match m {
        Metric::ServerCpu => r.get("server")?.get("cpu_ms")?.as_f64(),
        Metric::ServerTime => r.get("server")?.get("response_ms")?.as_f64(),
        Metric::ClientCpu => r.get("client")?.get("cpu_ms")?.as_f64(),
        Metric::ClientTime => r.get("client")?.get("response_ms")?.as_f64(),
        Metric::Packets => r.get("packets")?.as_f64(),
        Metric::Bytes => r.get("bytes")?.as_f64(),
    }
}

/// Per network, the cells of the rows of a results.json (as the report's
/// own contexts).
pub fn contexts_from_rows(rows: &[&Value]) -> Result<Vec<Ctx>> {
    let mut by_net: BTreeMap<String, Ctx> = BTreeMap::new();
    let mut groups: BTreeMap<(String, Metric, usize, Method), Vec<f64>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let bad = || anyhow!("row {i} of results.json lacks net, group_kb, set or method");
        let net = r
            .get("net")
            .and_then(Value::as_str)
            .ok_or_else(bad)?
            .to_string();
        let g = r.get("group_kb").and_then(Value::as_u64).ok_or_else(bad)? as usize;
        let set = r.get("set").and_then(Value::as_u64).ok_or_else(bad)? as usize;
        let name = r.get("method").and_then(Value::as_str).ok_or_else(bad)?;
        let method = Method::ALL
            .into_iter()
            // "objpack-paper": the same method as results.json spelled it
            // before its JSON name was made its CSV name.
            .find(|m| m.name() == name || (name == "objpack-paper" && m.name() == "objpack-1b"))
            .ok_or_else(|| anyhow!("row {i}: unknown method {name:?}"))?;
        let ctx = by_net.entry(net.clone()).or_insert_with(|| Ctx {
            net: net.clone(),
            cells: BTreeMap::new(),
            per_set: BTreeMap::new(),
        });
        for m in [
            Metric::ServerCpu,
            Metric::ServerTime,
            Metric::ClientCpu,
            Metric::ClientTime,
            Metric::Packets,
            Metric::Bytes,
        ] {
            if let Some(x) = metric_value(r, m) {
                groups
                    .entry((net.clone(), m, g, method))
                    .or_default()
                    .push(x);
                ctx.per_set
                    .entry((m, g, method))
                    .or_default()
                    .insert(set, x);
            }
        }
    }
    for ((net, m, g, method), xs) in groups {
        if let Some(c) = by_net.get_mut(&net) {
            c.cells.insert((m, g, method), estimate(&xs));
        }
    }
    Ok(by_net.into_values().collect())
}

/// Re-judge an objpack results.json from its rows.
pub fn judge_value(v: &Value) -> Result<Judged> {
    let all = crate::claims::records(v, "rows")?;
    let (keep, out) = crate::claims::kept(all);
    let ctxs = contexts_from_rows(&keep)?;
    Ok(Judged::new(Suite::Objpack, all.len(), out, judge(&ctxs)))
}

/// The paper's own Tables 3-6 as a context (exact values; 1 KB = group).
pub fn paper_ctx() -> Ctx {
    let mut cells = BTreeMap::new();
    for (metric, _, rows) in PAPER {
        for (mi, method) in [Method::Http10, Method::Http11, Method::Objpack]
            .into_iter()
            .enumerate()
        {
            for (gi, g) in [4, 16, 32].into_iter().enumerate() {
                cells.insert((metric, g, method), Estimate::exact(rows[mi][gi]));
            }
        }
    }
    Ctx {
        net: "lan (paper's Tables 3-6)".into(),
        cells,
        per_set: BTreeMap::new(),
    }
}

/// The self-test as text.
pub fn render_self_test() -> String {
    crate::claims::render_self_test(
        "paper 002",
        &[("Tables 3-6".to_string(), decide_all(CLAIMS, &paper_ctx()))],
    )
}

/// The paper's Tables 3-6 (rows HTTP 1.0, HTTP 1.1 persistent, Object
/// Packaging; columns 4, 16, 32 KB). Units: Tables 3 and 5 "accumulated CPU
/// utilization" (sums of 100 ms utilization readings in %, i.e. about 1 ms
/// of CPU per unit); Tables 4 and 6 milliseconds.
pub const PAPER: [(Metric, &str, [[f64; 3]; 3]); 4] = [
    (
        Metric::ServerCpu,
        "Table 3 - Accumulated CPU utilization at the server to complete requests for groups of 100 files",
        [[730.0, 770.0, 1170.0], [370.0, 710.0, 800.0], [65.0, 280.0, 418.0]],
    ),
    (
        Metric::ServerTime,
        "Table 4 - The average server response time to complete requests for groups of 100 files (in milliseconds)",
        [[550.3, 703.5, 890.2], [124.5, 266.8, 465.2], [44.2, 176.0, 392.9]],
    ),
    (
        Metric::ClientCpu,
        "Table 5 - Client accumulated CPU utilization to receive groups of 100 files (average for 10 sets)",
        [[2080.0, 2410.0, 3190.0], [140.0, 340.0, 580.0], [60.0, 200.0, 204.0]],
    ),
    (
        Metric::ClientTime,
        "Table 6 - The average client response time to receive groups of 100 files (in milliseconds)",
        [[499.1, 688.5, 875.3], [88.0, 225.4, 437.5], [45.2, 113.3, 245.1]],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Verdict;

    /// Every rule on the paper's own Tables 3-6 confirms its sentence.
    #[test]
    fn the_papers_tables_confirm_every_sentence() {
        for c in decide_all(CLAIMS, &paper_ctx()) {
            assert_eq!(c.verdict, Verdict::Confirmed, "{}: {}", c.id, c.reason);
        }
    }

    fn ctx(op: [f64; 3], p11: [f64; 3], sd: f64, n: u32) -> Ctx {
        let mut cells = BTreeMap::new();
        for (i, g) in [4, 16, 32].into_iter().enumerate() {
            let e = |mean: f64| Estimate {
                mean,
                sd: mean * sd,
                n,
            };
            cells.insert((Metric::ServerTime, g, Method::Objpack), e(op[i]));
            cells.insert((Metric::ServerTime, g, Method::Http11), e(p11[i]));
        }
        Ctx {
            net: "lan100".into(),
            cells,
            per_set: BTreeMap::new(),
        }
    }

    fn v(c: &Ctx) -> Claim {
        crate::claims::spec::decide(&CLAIMS[2], (CLAIMS[2].rule)(c))
    }

    /// "up to 64.5%" by the rule's text: band 48.4-80.6% for the largest
    /// group, every group above 0.
    #[test]
    fn up_to_by_the_rule_text() {
        // 60% / 30% / 10% savings, 1% spread over 10 sets: confirmed.
        assert_eq!(
            v(&ctx([40.0, 70.0, 90.0], [100.0; 3], 0.01, 10)).verdict,
            Verdict::Confirmed
        );
        // Largest saving 10%: far below the band: contradicted.
        assert_eq!(
            v(&ctx([90.0, 95.0, 97.0], [100.0; 3], 0.01, 10)).verdict,
            Verdict::Contradicted
        );
        // A straddling interval (largest 50% with a wide spread): inconclusive.
        let c = v(&ctx([50.0, 95.0, 97.0], [100.0; 3], 0.2, 10));
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        // Two sets: n < 3.
        let c = v(&ctx([40.0, 70.0, 90.0], [100.0; 3], 0.01, 2));
        assert_eq!(
            (c.verdict, c.reason.starts_with("n < 3")),
            (Verdict::Inconclusive, true)
        );
    }
}
