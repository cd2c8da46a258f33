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
    /// The same sets run with every file dropped from the page cache first
    /// (results.json `cold_rows`), per set; empty when the run made none.
    pub cold_per_set: BTreeMap<(Metric, usize, Method), BTreeMap<usize, f64>>,
}

impl Ctx {
    fn get(&self, m: Metric, g: usize, method: Method) -> Option<Estimate> {
        self.cells.get(&(m, g, method)).copied()
    }

    /// Per set, `f(cold, warm)` for `method`'s `m` in group `g` (the same
    /// set run cold and warm), as an interval over the sets; `None` when
    /// either side is absent.
    fn cold_vs_warm(
        &self,
        m: Metric,
        g: usize,
        method: Method,
        f: impl Fn(f64, f64) -> Option<f64>,
    ) -> Option<BTreeMap<usize, f64>> {
        let (cold, warm) = (
            self.cold_per_set.get(&(m, g, method))?,
            self.per_set.get(&(m, g, method))?,
        );
        let per: BTreeMap<usize, f64> = cold
            .iter()
            .filter_map(|(set, c)| warm.get(set).and_then(|w| f(*c, *w)).map(|x| (*set, x)))
            .collect();
        (!per.is_empty()).then_some(per)
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

/// "The significance of disk I/O overhead for web servers in high speed
/// networks", read in the paper's server overhead measure (server response
/// time) for the methods that read each file on its own (HTTP 1.0 and HTTP
/// 1.1 Persistent Connection): cold / warm - 1, paired by set, per group.
fn disk_io_significant(ctx: &Ctx) -> Measured {
    if ctx.cold_per_set.is_empty() {
        return Measured::missing(format!(
            "{}: no cold runs (results.json cold_rows)",
            ctx.net
        ));
    }
    let mut m = Measured::new();
    for method in [Method::Http10, Method::Http11] {
        for &g in GROUP_MEANS.iter() {
            let g = g >> 10;
            let label = format!("{} {g} KB {}", ctx.net, method.label());
            let per = ctx.cold_vs_warm(Metric::ServerTime, g, method, |c, w| {
                (w > 0.0).then(|| c / w - 1.0)
            });
            match per {
                Some(p) => m.push(
                    0,
                    label,
                    estimate(&p.into_values().collect::<Vec<_>>()).interval(),
                ),
                None => m.absent(label),
            }
        }
    }
    m
}

/// "Eliminating some disk I/O calls reduced CPU utilization at the
/// server": the server CPU that reading cold files adds (cold - warm, per
/// set) is larger for HTTP 1.0 and for HTTP 1.1 Persistent Connection (100
/// files read) than for Object Packaging (one package read), per group.
fn disk_io_cpu(ctx: &Ctx) -> Measured {
    if ctx.cold_per_set.is_empty() {
        return Measured::missing(format!(
            "{}: no cold runs (results.json cold_rows)",
            ctx.net
        ));
    }
    let mut m = Measured::new();
    let diff = |c: f64, w: f64| Some(c - w);
    for base in [Method::Http10, Method::Http11] {
        for &g in GROUP_MEANS.iter() {
            let g = g >> 10;
            let label = format!(
                "{} {g} KB {} vs {}",
                ctx.net,
                base.label(),
                Method::Objpack.label()
            );
            let (b, o) = (
                ctx.cold_vs_warm(Metric::ServerCpu, g, base, diff),
                ctx.cold_vs_warm(Metric::ServerCpu, g, Method::Objpack, diff),
            );
            match (b, o) {
                (Some(b), Some(o)) => {
                    let d: Vec<f64> = b
                        .iter()
                        .filter_map(|(set, x)| o.get(set).map(|y| x - y))
                        .collect();
                    if d.is_empty() {
                        m.absent(label);
                    } else {
                        m.push(0, label, estimate(&d).interval());
                    }
                }
                _ => m.absent(label),
            }
        }
    }
    m
}

/// Where the disk I/O rule's band comes from (written before any run was
/// judged by it, 2026-11-26).
const DISK_SOURCE: &str = "hedge table: significant = at least 10%. The paper's own numbers give no tighter floor: it measured no cold/warm pair, and its one figure for what disk I/O costs is Object Packaging's server-time saving over HTTP 1.1 (Table 4: 124.5 -> 44.2, 266.8 -> 176.0, 465.2 -> 392.9 ms, 64.5/34.0/15.5%), which it credits to disk I/O and fewer packets together: an upper bound of the disk share, whose smallest value (15.5%) the 10% floor stays below";
const DISK_SENTENCE: &str = "The results of the experiments also suggest the significance of disk I/O overhead for web server in high speed networks.";
const DISK_CPU_SENTENCE: &str = "Regarding the relationship between disk I/O overhead and CPU utilization, our speculation is that eliminating some disk I/O calls reduced CPU utilization at the server.";

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

/// A figure the paper states bare ("reduced 77.4%", "51% of HTTP 1.0"):
/// read as "about X", the hedge table's X × [0.75, 1.25].
macro_rules! about_q {
    ($name:expr, $x:expr, $hedge:expr) => {
        Quantity {
            name: $name,
            band: Band::new($x * 0.75, $x * 1.25, $hedge, BARE),
        }
    };
}

const BARE: &str = "a figure stated bare reads as about X: hedge table, X × [0.75, 1.25]";

/// One quantity per (metric, group), in that order: `method`'s saving over
/// `base` (`ratio` false) or `method / base` (`ratio` true), paired by set.
fn per_group(ctx: &Ctx, metrics: &[(Metric, bool)], method: Method, base: Method) -> Measured {
    let mut m = Measured::new();
    for (mi, &(metric, ratio)) in metrics.iter().enumerate() {
        let savings = ctx.savings(metric, method, base);
        for (gi, &g) in GROUP_MEANS.iter().enumerate() {
            let g = g >> 10;
            let label = format!("{} {g} KB {}", ctx.net, metric.label());
            match savings.iter().find(|s| s.0 == g) {
                Some((_, s)) => m.push(
                    mi * GROUP_MEANS.len() + gi,
                    label,
                    if ratio { s.one_minus() } else { *s },
                ),
                None => m.absent(label),
            }
        }
    }
    m
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
    ClaimSpec {
        id: "http11-server-time-vs-http10",
        aliases: &[],
        paper: "002",
        section: "Section 4.2 (Table 4, Figure 10)",
        quote: "It was observed that Object Packaging and HTTP 1.1 Persistent Connection reduced 92.0 and 77.4% of the server response time from HTTP 1.0 when a group of 100 files of 4 KB were used (see Figure 10). The reduction was 75.0 and 62.1% for Object Packaging and HTTP 1.1 Persistent Connection, respectively for 16KB files and they were 55.9 and 47.7%, respectively for 32KB files.",
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN, HTTP 1.1 Persistent Connection vs HTTP 1.0 (the sentence's Object Packaging half: server-time-vs-http10)",
        quantities: &[
            about_q!("saving of HTTP 1.1 over HTTP 1.0 (server response time), 4 KB", 0.774, "reduced 77.4%"),
            about_q!("saving of HTTP 1.1 over HTTP 1.0 (server response time), 16 KB", 0.621, "reduced 62.1%"),
            about_q!("saving of HTTP 1.1 over HTTP 1.0 (server response time), 32 KB", 0.477, "reduced 47.7%"),
        ],
        kind: ClaimKind::Claim,
        rule: |c| per_group(c, &[(Metric::ServerTime, false)], Method::Http11, Method::Http10),
    },
    ClaimSpec {
        id: "http11-table7-vs-http10",
        aliases: &[],
        paper: "002",
        section: "Section 4.4 (Table 7)",
        quote: "HTTP 1.1 Persistent Connection resulted in 51, 92 and 68% of HTTP 1.0 in the accumulated CPU utilization at the server for 4KB, 16KB and 32KB files, respectively. [...] For the accumulated CPU utilization at the client, HTTP 1.1 Persistent Connection resulted in 7, 14 and 18% of HTTP 1.0, while the client response times were 18, 34 and 50% of HTTP 1.0.",
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN, HTTP 1.1 Persistent Connection / HTTP 1.0 (the server response time: http11-server-time-vs-http10)",
        quantities: &[
            about_q!("HTTP 1.1 / HTTP 1.0 server CPU, 4 KB", 0.51, "51% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 server CPU, 16 KB", 0.92, "92% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 server CPU, 32 KB", 0.68, "68% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client CPU, 4 KB", 0.07, "7% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client CPU, 16 KB", 0.14, "14% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client CPU, 32 KB", 0.18, "18% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client response time, 4 KB", 0.18, "18% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client response time, 16 KB", 0.34, "34% of HTTP 1.0"),
            about_q!("HTTP 1.1 / HTTP 1.0 client response time, 32 KB", 0.50, "50% of HTTP 1.0"),
        ],
        kind: ClaimKind::Claim,
        rule: |c| {
            per_group(
                c,
                &[
                    (Metric::ServerCpu, true),
                    (Metric::ClientCpu, true),
                    (Metric::ClientTime, true),
                ],
                Method::Http11,
                Method::Http10,
            )
        },
    },
    ClaimSpec {
        id: "disk-io-significant",
        aliases: &[],
        paper: "002",
        section: "Abstract; Section 5",
        quote: DISK_SENTENCE,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN, HTTP 1.0 and HTTP 1.1 Persistent Connection (the methods that read each file on its own), every file dropped from the page cache before the cold run",
        quantities: &[Quantity {
            name: "server response time, cold / warm - 1 (paired by set)",
            band: Band::new(0.10, INF, "the significance of disk I/O overhead", DISK_SOURCE),
        }],
        kind: ClaimKind::Claim,
        rule: disk_io_significant,
    },
    ClaimSpec {
        id: "disk-io-cpu",
        aliases: &[],
        paper: "002",
        section: "Section 5",
        quote: DISK_CPU_SENTENCE,
        cells: "4, 16 and 32 KB groups on the 100 Mbit/s LAN, HTTP 1.0 and HTTP 1.1 Persistent Connection each against Object Packaging",
        quantities: &[Quantity {
            name: "server CPU added by a cold cache (cold - warm, ms per set): per-file method's - Object Packaging's",
            band: Band::new(0.0, INF, "eliminating some disk I/O calls reduced CPU utilization", src::DIRECTION),
        }],
        kind: ClaimKind::Claim,
        rule: disk_io_cpu,
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
                cold_per_set: BTreeMap::new(),
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
            cold_per_set: BTreeMap::new(),
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

/// Re-judge an objpack results.json from its rows (and its cold rows,
/// where the run made them: absent in results written before them).
pub fn judge_value(v: &Value) -> Result<Judged> {
    let all = crate::claims::records(v, "rows")?;
    let (keep, mut out) = crate::claims::kept(all);
    let mut ctxs = contexts_from_rows(&keep)?;
    let mut n = all.len();
    if let Some(cold) = v.get("cold_rows").and_then(Value::as_array) {
        let (keep, cold_out) = crate::claims::kept(cold);
        n += cold.len();
        out += cold_out;
        for c in contexts_from_rows(&keep)? {
            if let Some(w) = ctxs.iter_mut().find(|w| w.net == c.net) {
                w.cold_per_set = c.per_set;
            }
        }
    }
    Ok(Judged::new(Suite::Objpack, n, out, judge(&ctxs)))
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
        cold_per_set: BTreeMap::new(),
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

    /// Every rule on the paper's own Tables 3-6 confirms its sentence; the
    /// disk I/O rules need a cold/warm pair the paper never measured, and
    /// say so.
    #[test]
    fn the_papers_tables_confirm_every_sentence() {
        for c in decide_all(CLAIMS, &paper_ctx()) {
            if c.id.starts_with("disk-io") {
                assert_eq!(c.verdict, Verdict::Inconclusive, "{}", c.id);
                assert!(c.reason.contains("cold_rows"), "{}", c.reason);
                continue;
            }
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
            cold_per_set: BTreeMap::new(),
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

    /// HTTP 1.1 against HTTP 1.0 in every metric, as `h11` times HTTP 1.0's
    /// (server time, server CPU, client CPU, client time), the server time
    /// at `st` times instead per group, 10 sets, 1% spread.
    fn h11_ctx(h11: [f64; 4], st: [f64; 3]) -> Ctx {
        let mut cells = BTreeMap::new();
        let metrics = [
            Metric::ServerTime,
            Metric::ServerCpu,
            Metric::ClientCpu,
            Metric::ClientTime,
        ];
        for (gi, g) in [4, 16, 32].into_iter().enumerate() {
            for (i, m) in metrics.into_iter().enumerate() {
                let r = if i == 0 { st[gi] } else { h11[i] };
                let e = |mean: f64| Estimate {
                    mean,
                    sd: mean * 0.01,
                    n: 10,
                };
                cells.insert((m, g, Method::Http10), e(100.0));
                cells.insert((m, g, Method::Http11), e(100.0 * r));
            }
        }
        Ctx {
            net: "lan100".into(),
            cells,
            per_set: BTreeMap::new(),
            cold_per_set: BTreeMap::new(),
        }
    }

    fn by_id(id: &str, c: &Ctx) -> Claim {
        let spec = CLAIMS.iter().find(|s| s.id == id).unwrap();
        crate::claims::spec::decide(spec, (spec.rule)(c))
    }

    /// "HTTP 1.1 Persistent Connection reduced 77.4 ... 62.1 ... 47.7% of
    /// the server response time from HTTP 1.0": each group's saving in
    /// X × [0.75, 1.25]. Savings of 75, 60 and 50% fit; ours (about 30, 20
    /// and 10%) do not; one 70% saving everywhere is too much at 32 KB.
    #[test]
    fn http11_server_time_vs_http10_by_the_rule_text() {
        let id = "http11-server-time-vs-http10";
        let c = |st| by_id(id, &h11_ctx([1.0; 4], st)).verdict;
        assert_eq!(c([0.25, 0.4, 0.5]), Verdict::Confirmed);
        assert_eq!(c([0.7, 0.8, 0.9]), Verdict::Contradicted);
        assert_eq!(c([0.3, 0.3, 0.3]), Verdict::Contradicted);
    }

    /// Table 7's HTTP 1.1 / HTTP 1.0 ratios: 0.6 of the server's CPU fits
    /// 51% and 68% but not 92%: contradicted; a client CPU at 66% of HTTP
    /// 1.0's (ours) is far from 7-18%.
    #[test]
    fn http11_table7_by_the_rule_text() {
        let id = "http11-table7-vs-http10";
        let c = by_id(id, &h11_ctx([0.3, 0.6, 0.66, 0.3], [0.3; 3]));
        assert_eq!(c.verdict, Verdict::Contradicted, "{}", c.reason);
        // Two sets: n < 3 decides nothing.
        let mut c2 = h11_ctx([0.3, 0.6, 0.12, 0.3], [0.3; 3]);
        for e in c2.cells.values_mut() {
            e.n = 2;
        }
        assert_eq!(by_id(id, &c2).verdict, Verdict::Inconclusive);
    }

    /// Warm server time and CPU 100 ms per set for every method; cold
    /// `per_file` times warm for HTTP 1.0 and 1.1, `package` times warm for
    /// Object Packaging, with set `k`'s cold value off by `spread * (k - 4.5)`.
    fn disk_ctx(per_file: f64, package: f64, spread: f64) -> Ctx {
        let mut c = Ctx {
            net: "lan100".into(),
            cells: BTreeMap::new(),
            per_set: BTreeMap::new(),
            cold_per_set: BTreeMap::new(),
        };
        for g in [4, 16, 32] {
            for m in [Metric::ServerTime, Metric::ServerCpu] {
                for method in [Method::Http10, Method::Http11, Method::Objpack] {
                    let f = if method == Method::Objpack {
                        package
                    } else {
                        per_file
                    };
                    for k in 0..10 {
                        let off = spread * (k as f64 - 4.5);
                        c.per_set
                            .entry((m, g, method))
                            .or_default()
                            .insert(k, 100.0);
                        c.cold_per_set
                            .entry((m, g, method))
                            .or_default()
                            .insert(k, 100.0 * (f + off));
                    }
                }
            }
        }
        c
    }

    /// Disk I/O: 30% slower cold for the per-file methods, 1% for the
    /// package, confirms both sentences; 3% for the per-file methods and 5%
    /// for the package contradicts both ("significance": the interval lies
    /// below 10%; the package loses more CPU cold than the rest); a 10% mean with a wide spread
    /// straddles the floor; without cold runs, nothing is decided.
    #[test]
    fn disk_io_by_the_rule_text() {
        let v = |id: &str, c: &Ctx| by_id(id, c).verdict;
        let ok = disk_ctx(1.3, 1.01, 0.001);
        assert_eq!(v("disk-io-significant", &ok), Verdict::Confirmed);
        assert_eq!(v("disk-io-cpu", &ok), Verdict::Confirmed);
        let small = disk_ctx(1.03, 1.05, 0.001);
        assert_eq!(v("disk-io-significant", &small), Verdict::Contradicted);
        assert_eq!(v("disk-io-cpu", &small), Verdict::Contradicted);
        let noisy = disk_ctx(1.1, 1.0, 0.02);
        assert_eq!(v("disk-io-significant", &noisy), Verdict::Inconclusive);
        let mut none = disk_ctx(1.3, 1.0, 0.0);
        none.cold_per_set.clear();
        let c = by_id("disk-io-significant", &none);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.reason.contains("cold_rows"), "{}", c.reason);
    }
}
