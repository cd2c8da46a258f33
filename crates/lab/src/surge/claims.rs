//! Paper 004's results (Barford & Crovella, "A Performance Evaluation of
//! HTTP/1.1") as claims of the shared engine, judged on the surge suite's
//! run records. A cell is one (server, memory, mode, UEs) point; its
//! interval is over the runs of that point (repetitions), never over the
//! seconds inside one run: a point run once decides nothing (n < 3).
//! The CPU- and disk-bound sentences have preconditions the run must meet
//! (the counters say whether it did); unmet, they are not testable here.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::claims::bands::{self, source as src};
use crate::claims::spec::{
    decide_all, Band, Claim, ClaimKind, ClaimSpec, Estimate, Interval, Measured, Quantity,
};
use crate::claims::{Judged, Suite};

use crate::claims::spec::nan_if_null as nn;
use pagewire_load::run::Mode;

/// A mode by its results.json name (`http10`, `early-close`, ...).
fn mode_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
    String::deserialize(d)?
        .parse()
        .map_err(serde::de::Error::custom)
}

/// One run as results.json records it (the fields the rules read).
#[derive(Clone, Debug, Deserialize)]
pub struct R {
    pub memory: String,
    pub limit_bytes: Option<u64>,
    #[serde(deserialize_with = "mode_name")]
    pub mode: Mode,
    pub ues: u64,
    pub gets: u64,
    #[serde(deserialize_with = "nn")]
    pub gets_per_second: f64,
    pub packets: Pk,
    #[serde(deserialize_with = "nn")]
    pub usr: f64,
    #[serde(deserialize_with = "nn")]
    pub kern: f64,
    #[serde(deserialize_with = "nn")]
    pub idle: f64,
    #[serde(default, deserialize_with = "nn")]
    pub iowait: f64,
    #[serde(default, deserialize_with = "nn")]
    pub pages_read: f64,
    #[serde(default)]
    pub oom_kills: u64,
    /// Read IOPS limit of the server's disk (the disk-bound regime).
    #[serde(default)]
    pub disk_iops: Option<u32>,
    #[serde(default, deserialize_with = "nn")]
    pub disk_reads_per_s: f64,
    /// CPU quota of the server's cgroup, cores (the CPU-bound regime).
    #[serde(default)]
    pub cpu_quota: Option<f64>,
    #[serde(default, deserialize_with = "nn")]
    pub server_cpu_cores: f64,
    #[serde(default)]
    pub cpu_throttled: Option<f64>,
    #[serde(default, deserialize_with = "nn")]
    pub cwnd_mean: f64,
    #[serde(default)]
    pub cwnd_n: u64,
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct Pk {
    pub total: u64,
    pub connections: u64,
}

/// A least-squares fit of server memory against established connections.
#[derive(Clone, Debug, Deserialize)]
pub struct F {
    pub memory: String,
    #[serde(deserialize_with = "mode_name")]
    pub mode: Mode,
    pub n: u64,
    #[serde(deserialize_with = "nn")]
    pub slope_kb_per_conn: f64,
    #[serde(deserialize_with = "nn")]
    pub slope_se_kb: f64,
}

pub struct Ctx {
    pub runs: Vec<R>,
    pub fits: Vec<F>,
    /// Why the workload is off the paper's calibration (results.json
    /// `calibration.within_bands` false): then no claim is testable.
    pub off_calibration: Option<String>,
}

impl R {
    fn ok(&self) -> bool {
        self.error.is_none()
    }
    fn per_get(&self, x: u64) -> f64 {
        x as f64 / self.gets.max(1) as f64
    }
    /// CPU-bound. Under a CPU quota: the server used at least 90% of its
    /// quota and was throttled in at least half of the quota's periods
    /// (the quota, not the load, set its pace). Without one: under 10%
    /// of the machine idle and the server used at least a quarter of it.
    fn cpu_bound(&self) -> bool {
        match (self.cpu_quota, self.cpu_throttled) {
            (Some(q), Some(t)) => self.server_cpu_cores >= 0.9 * q && t >= 0.5,
            (Some(_), None) => false,
            _ => self.idle < 10.0 && self.usr + self.kern >= 25.0,
        }
    }
    /// The disk was this run's bottleneck. With a read IOPS limit: the
    /// server's reads reached 80% of it over the run (the disk saturated;
    /// a saturated disk queues every further miss). Without one: at least
    /// 500 pages a second read.
    fn disk_saturated(&self) -> bool {
        match self.disk_iops {
            Some(n) => self.disk_reads_per_s >= 0.8 * n as f64,
            None => self.pages_read >= 500.0,
        }
    }
}

impl Ctx {
    /// The memory configurations (the CPU-limited one is not among them).
    fn memories(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .runs
            .iter()
            .filter(|r| r.cpu_quota.is_none())
            .map(|r| (r.memory.clone(), r.limit_bytes.unwrap_or(u64::MAX)))
            .collect();
        v.sort_by_key(|x| x.1);
        v.dedup();
        v
    }
    fn largest(&self) -> Option<String> {
        self.memories().last().map(|m| m.0.clone())
    }
    fn limited(&self) -> Vec<String> {
        self.memories()
            .into_iter()
            .filter(|m| m.1 != u64::MAX)
            .map(|m| m.0)
            .collect()
    }
    fn max_ues(&self) -> Option<u64> {
        self.runs
            .iter()
            .filter(|r| r.cpu_quota.is_none())
            .map(|r| r.ues)
            .max()
    }
    /// The CPU-limited configuration's label and highest load, if one ran.
    fn cpu_config(&self) -> Option<(String, u64)> {
        let rs: Vec<&R> = self.runs.iter().filter(|r| r.cpu_quota.is_some()).collect();
        Some((rs.first()?.memory.clone(), rs.iter().map(|r| r.ues).max()?))
    }
    fn ues_of(&self, mem: &str) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .runs
            .iter()
            .filter(|r| r.memory == mem)
            .map(|r| r.ues)
            .collect();
        v.sort();
        v.dedup();
        v
    }
    /// The successful runs of a point.
    fn point(&self, mem: &str, mode: Mode, ues: u64) -> Vec<&R> {
        self.runs
            .iter()
            .filter(|r| r.memory == mem && r.mode == mode && r.ues == ues && r.ok())
            .collect()
    }
    /// A quantity over the runs of a point (None: no run).
    fn q(&self, mem: &str, mode: Mode, ues: u64, f: impl Fn(&R) -> f64) -> Option<Interval> {
        let rs = self.point(mem, mode, ues);
        (!rs.is_empty())
            .then(|| Estimate::of(&rs.iter().map(|r| f(r)).collect::<Vec<_>>()).interval())
    }
    /// Disk-bound: a memory-limited point whose every run saturated the
    /// disk (above), reading at least 5 times the unlimited point's pages,
    /// with no process killed for memory (an OOM kill is not a disk-bound
    /// server).
    fn disk_bound(&self, mem: &str, mode: Mode, ues: u64) -> bool {
        let base = self
            .largest()
            .and_then(|b| self.q(&b, mode, ues, |r| r.pages_read));
        let rs = self.point(mem, mode, ues);
        !rs.is_empty()
            && rs
                .iter()
                .all(|r| r.limit_bytes.is_some() && r.oom_kills == 0 && r.disk_saturated())
            && self
                .q(mem, mode, ues, |r| r.pages_read)
                .is_some_and(|p| base.is_none_or(|b| p.value >= 5.0 * b.value))
    }
    /// No run of the point lost a server process to the OOM killer.
    fn no_oom(&self, mem: &str, mode: Mode, ues: u64) -> bool {
        self.point(mem, mode, ues).iter().all(|r| r.oom_kills == 0)
    }
    /// GETs/s in `mem` over GETs/s without a limit, same mode and load.
    fn retention(&self, mem: &str, mode: Mode, u: u64) -> Option<Interval> {
        let base = self.largest()?;
        Some(
            self.q(mem, mode, u, |r| r.gets_per_second)?
                / self.q(&base, mode, u, |r| r.gets_per_second)?,
        )
    }
}

fn rule_network(c: &Ctx) -> Measured {
    let mut m = Measured::new();
    let Some(mem) = c.largest() else {
        return Measured::missing("runs");
    };
    for u in c.ues_of(&mem) {
        let f = |r: &R| r.per_get(r.packets.total);
        match (c.q(&mem, Mode::Http11, u, f), c.q(&mem, Mode::Http10, u, f)) {
            (Some(b), Some(a)) => m.push(0, format!("{mem} {u} UEs"), b / a),
            _ => m.absent(format!("{mem} {u} UEs http10 and http11")),
        }
    }
    m
}

fn rule_cwnd(c: &Ctx) -> Measured {
    let mut m = Measured::new();
    let Some(mem) = c.largest() else {
        return Measured::missing("runs");
    };
    for u in c.ues_of(&mem) {
        let has = |mode: Mode| c.point(&mem, mode, u).iter().all(|r| r.cwnd_n > 0);
        match (
            c.q(&mem, Mode::Http11, u, |r| r.cwnd_mean),
            c.q(&mem, Mode::Http10, u, |r| r.cwnd_mean),
        ) {
            (Some(b), Some(a)) if has(Mode::Http10) && has(Mode::Http11) => {
                m.push(0, format!("{mem} {u} UEs"), b / a)
            }
            _ => m.absent(format!("{mem} {u} UEs: CWND samples of http10 and http11")),
        }
    }
    m
}

fn rule_cpu(c: &Ctx) -> Measured {
    // The CPU-limited configuration when one ran, else the largest memory.
    let (Some(mem), Some(u)) = c
        .cpu_config()
        .map_or((c.largest(), c.max_ues()), |(m, u)| (Some(m), Some(u)))
    else {
        return Measured::missing("runs");
    };
    let (a, b) = (
        c.point(&mem, Mode::Http10, u),
        c.point(&mem, Mode::Http11, u),
    );
    if a.is_empty() || b.is_empty() {
        return Measured::missing(format!("{mem} {u} UEs http10 and http11"));
    }
    if !a.iter().chain(&b).all(|r| r.cpu_bound()) {
        let (ra, rb) = (a[0], b[0]);
        if let Some(q) = ra.cpu_quota {
            let t = |r: &R| r.cpu_throttled.unwrap_or(0.0) * 100.0;
            return Measured::not_testable(format!(
                "the server's CPU quota was not its bottleneck: at {mem}, {u} UEs the server used {:.4} / {:.4} cores of its {q} and was throttled in {:.0}% / {:.0}% of the quota's periods (HTTP/1.0 / 1.1, first run; needs 90% of the quota and half the periods in every run)",
                ra.server_cpu_cores,
                rb.server_cpu_cores,
                t(ra),
                t(rb)
            ));
        }
        return Measured::not_testable(format!(
            "the server's CPU was not its bottleneck: at {mem}, {u} UEs the machine was {:.0}% / {:.0}% idle and the server used {:.0}% / {:.0}% of it (HTTP/1.0 / 1.1); needs a CPU-bound server (e.g. a cgroup cpu.max quota)",
            ra.idle,
            rb.idle,
            ra.usr + ra.kern,
            rb.usr + rb.kern
        ));
    }
    let mut m = Measured::new();
    let g = |r: &R| r.gets_per_second;
    m.push(
        0,
        format!("{mem} {u} UEs"),
        c.q(&mem, Mode::Http11, u, g).unwrap() / c.q(&mem, Mode::Http10, u, g).unwrap(),
    );
    m
}

fn rule_disk(c: &Ctx) -> Measured {
    let Some(u) = c.max_ues() else {
        return Measured::missing("runs");
    };
    let Some(mem) = c.limited().into_iter().next() else {
        return Measured::not_testable("no memory-limited configuration ran (--memory), so the disk never became the bottleneck");
    };
    if c.point(&mem, Mode::Http10, u).is_empty() || c.point(&mem, Mode::Http11, u).is_empty() {
        return Measured::missing(format!("{mem} {u} UEs http10 and http11"));
    }
    // The configuration is disk-bound at this load when the disk was the
    // bottleneck under either protocol (the paper's mechanism: one
    // protocol's connections take the memory the other leaves to the page
    // cache) and neither lost a process to the OOM killer.
    let bound = c.disk_bound(&mem, Mode::Http10, u) || c.disk_bound(&mem, Mode::Http11, u);
    if !(bound && c.no_oom(&mem, Mode::Http10, u) && c.no_oom(&mem, Mode::Http11, u)) {
        let pts = |mode: Mode| c.point(&mem, mode, u);
        let mean = |mode: Mode, f: &dyn Fn(&R) -> f64| {
            let rs = pts(mode);
            rs.iter().map(|r| f(r)).sum::<f64>() / rs.len().max(1) as f64
        };
        let k: u64 = pts(Mode::Http10)
            .iter()
            .chain(&pts(Mode::Http11))
            .map(|r| r.oom_kills)
            .sum();
        let need = match pts(Mode::Http10).first().and_then(|r| r.disk_iops) {
            Some(n) => format!("80% of its {n} reads/s limit"),
            None => "500 pages/s".into(),
        };
        return Measured::not_testable(format!(
            "the disk was not shown to be the bottleneck: at {mem}, {u} UEs the server made {:.1} / {:.1} disk reads/s, {:.0} / {:.0} pages/s (HTTP/1.0 / 1.1, mean of the runs; needs {need} in every run of either protocol, and 5x the unlimited point's pages) with {k} OOM kills (a killed server is not a disk-bound one)",
            mean(Mode::Http10, &|r| r.disk_reads_per_s),
            mean(Mode::Http11, &|r| r.disk_reads_per_s),
            mean(Mode::Http10, &|r| r.pages_read),
            mean(Mode::Http11, &|r| r.pages_read)
        ));
    }
    let mut m = Measured::new();
    let g = |r: &R| r.gets_per_second;
    m.push(
        0,
        format!("{mem} {u} UEs"),
        c.q(&mem, Mode::Http11, u, g).unwrap() / c.q(&mem, Mode::Http10, u, g).unwrap(),
    );
    m
}

fn rule_mem_per_conn(c: &Ctx) -> Measured {
    let Some(mem) = c.largest() else {
        return Measured::missing("runs");
    };
    let f = |mode: Mode| c.fits.iter().find(|f| f.memory == mem && f.mode == mode);
    let iv = |f: &F| Interval {
        value: f.slope_kb_per_conn,
        lo: f.slope_kb_per_conn - 1.96 * f.slope_se_kb,
        hi: f.slope_kb_per_conn + 1.96 * f.slope_se_kb,
        n: f.n.min(u32::MAX as u64) as u32,
    };
    let mut m = Measured::new();
    match (f(Mode::Http10), f(Mode::Http11)) {
        (Some(a), Some(b)) => m.push(
            0,
            format!("{mem}: KB per HTTP/1.0 connection / per HTTP/1.1 connection"),
            iv(a) / iv(b),
        ),
        _ => m.absent(format!("{mem}: memory fits of http10 and http11")),
    }
    m.with_note("a least-squares slope's interval is ±1.96 standard errors over its n samples")
}

fn rule_ec_throughput(c: &Ctx) -> Measured {
    let Some(u) = c.max_ues() else {
        return Measured::missing("runs");
    };
    let mut m = Measured::new();
    let limited = c.limited();
    if limited.is_empty() {
        m.absent("a memory-limited configuration (--memory)");
    }
    for mem in limited {
        match (
            c.retention(&mem, Mode::EarlyClose, u),
            c.retention(&mem, Mode::Http10, u),
        ) {
            (Some(e), Some(a)) => m.push(0, format!("{mem} {u} UEs"), e / a),
            _ => m.absent(format!("{mem} {u} UEs early-close and http10")),
        }
        if c.disk_bound(&mem, Mode::Http11, u) || c.disk_bound(&mem, Mode::EarlyClose, u) {
            if let (Some(e), Some(b)) = (
                c.retention(&mem, Mode::EarlyClose, u),
                c.retention(&mem, Mode::Http11, u),
            ) {
                m.push(1, format!("{mem} (disk-bound) {u} UEs"), e / b);
            }
        }
    }
    m
}

fn rule_ec_packets(c: &Ctx) -> Measured {
    let Some(mem) = c.largest() else {
        return Measured::missing("runs");
    };
    let mut m = Measured::new();
    for u in c.ues_of(&mem) {
        let pk = |r: &R| r.per_get(r.packets.total);
        let cn = |r: &R| r.per_get(r.packets.connections);
        let label = format!("{mem} {u} UEs");
        match (
            c.q(&mem, Mode::EarlyClose, u, pk),
            c.q(&mem, Mode::Pipeline, u, pk),
            c.q(&mem, Mode::EarlyClose, u, cn),
            c.q(&mem, Mode::Pipeline, u, cn),
            c.q(&mem, Mode::Http10, u, cn),
        ) {
            (Some(ep), Some(pp), Some(ec), Some(pc), Some(hc)) => {
                m.push(0, label.clone(), (ep / pp).minus_one());
                m.push(1, label.clone(), ec / pc);
                m.push(2, label, ec / hc);
            }
            _ => m.absent(format!("{label} early-close, pipeline and http10")),
        }
    }
    m
}

const INF: f64 = f64::INFINITY;
const NINF: f64 = f64::NEG_INFINITY;

/// Paper 004's results and its early-close claims.
pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
    ClaimSpec {
        id: "p004-network",
        aliases: &[],
        paper: "004",
        section: "section 1 (result 1); Tables 2 and 7",
        quote: "When the server is not the bottleneck, the network demands of HTTP/1.1 are somewhat lower than those of HTTP/1.0 in our LAN test configuration.",
        cells: "every load of the largest memory configuration, HTTP/1.1 vs HTTP/1.0",
        quantities: &[Quantity {
            name: "link packets per GET, HTTP/1.1 / HTTP/1.0",
            band: Band::new(1.0 - bands::SOMEWHAT.1, 1.0 - bands::SOMEWHAT.0, "somewhat lower", src::SOMEWHAT),
        }],
        kind: ClaimKind::Claim,
        rule: rule_network,
    },
    ClaimSpec {
        id: "p004-cwnd",
        aliases: &[],
        paper: "004",
        section: "section 4.1, Table 3",
        quote: "The table shows that the CWND size is much larger on average in HTTP/1.1 which should have a beneficial effect on latency reduction in the wide area.",
        cells: "every load of the largest memory configuration, HTTP/1.1 vs HTTP/1.0",
        quantities: &[Quantity {
            name: "mean congestion window, HTTP/1.1 / HTTP/1.0",
            band: Band::new(bands::MUCH, INF, "much larger", src::MUCH),
        }],
        kind: ClaimKind::Claim,
        rule: rule_cwnd,
    },
    ClaimSpec {
        id: "p004-cpu",
        aliases: &[],
        paper: "004",
        section: "section 1 (result 2); section 4.2, Figure 3",
        quote: "When the server CPU is the bottleneck resource, there is no significant difference in performance between HTTP/1.0 and HTTP/1.1.",
        cells: "the CPU-limited configuration (--cpu) at its highest load, CPU-bound (else the largest memory configuration at the highest load)",
        quantities: &[Quantity {
            name: "GETs/s, HTTP/1.1 / HTTP/1.0",
            band: Band::new(bands::SAME.0, bands::SAME.1, "no significant difference", src::SAME),
        }],
        kind: ClaimKind::Claim,
        rule: rule_cpu,
    },
    ClaimSpec {
        id: "p004-disk",
        aliases: &[],
        paper: "004",
        section: "section 1 (result 3); section 4.3, Figures 5 and 6",
        quote: "When memory on the server is limited and the disk system becomes the bottleneck resource, HTTP/1.1 performs significantly worse than HTTP/1.0.",
        cells: "the smallest memory configuration at the highest load, disk-bound (the disk saturated under either protocol, no OOM kill under either)",
        quantities: &[Quantity {
            name: "GETs/s, HTTP/1.1 / HTTP/1.0",
            band: Band::new(NINF, 1.0 - bands::SIGNIFICANT, "significantly worse", src::SIGNIFICANT),
        }],
        kind: ClaimKind::Claim,
        rule: rule_disk,
    },
    ClaimSpec {
        id: "p004-mem-per-conn",
        aliases: &[],
        paper: "004",
        section: "section 4.3.1, Figure 9",
        quote: "These figures indicate that the memory needed by a connection in Apache is large; for an active connection (i.e. an HTTP/1.0 connection) the memory demand is four times higher than for a mostly-idle connection (i.e. an HTTP/1.1 connection).",
        cells: "the largest memory configuration's fits",
        quantities: &[Quantity {
            name: "memory per connection, HTTP/1.0 / HTTP/1.1",
            band: Band::new(3.0, 5.0, "four times higher", src::ABOUT),
        }],
        kind: ClaimKind::Claim,
        rule: rule_mem_per_conn,
    },
    ClaimSpec {
        id: "p004-early-close-throughput",
        aliases: &[],
        paper: "004",
        section: "section 4.4, Figures 11 and 12",
        quote: "The figures show that HTTP/1.1 with early close actually performs as well as HTTP/1.0 in terms of throughput in either configuration and much better than standard HTTP/1.1 in the disk constrained test.",
        cells: "every memory-limited configuration at the highest load (share of the unlimited GETs/s kept)",
        quantities: &[
            Quantity {
                name: "GETs/s kept, early close / HTTP/1.0",
                band: Band::new(bands::SAME.0, bands::SAME.1, "as well as", src::SAME),
            },
            Quantity {
                name: "GETs/s kept, early close / HTTP/1.1 (disk-bound points)",
                band: Band::new(bands::MUCH, INF, "much better", src::MUCH),
            },
        ],
        kind: ClaimKind::Claim,
        rule: rule_ec_throughput,
    },
    ClaimSpec {
        id: "p004-early-close-packets",
        aliases: &[],
        paper: "004",
        section: "section 4.4, Table 7",
        quote: "From this we can see that HTTP/1.1 with early close roughly falls in between HTTP/1.0 and standard HTTP/1.1 in terms of total connections opened during tests and that only 17% more packets are transferred versus standard HTTP/1.1.",
        cells: "every load of the largest memory configuration",
        quantities: &[
            Quantity {
                name: "packets per GET, early close / pipelined HTTP/1.1 - 1",
                band: Band::new(0.1275, 0.32, "only 17% more", "hedge table (about 17% = 12.75-21.25%), widened to the paper's Table 7 (+17% to +32%)"),
            },
            Quantity {
                name: "connections per GET, early close / pipelined HTTP/1.1",
                band: Band::new(1.0, INF, "in between", src::DIRECTION),
            },
            Quantity {
                name: "connections per GET, early close / HTTP/1.0",
                band: Band::new(NINF, 1.0, "in between", src::DIRECTION),
            },
        ],
        kind: ClaimKind::Claim,
        rule: rule_ec_packets,
    },
];

pub fn judge(ctx: &Ctx) -> Vec<Claim> {
    match &ctx.off_calibration {
        Some(why) => CLAIMS
            .iter()
            .map(|s| crate::claims::spec::decide(s, Measured::not_testable(why.clone())))
            .collect(),
        None => decide_all(CLAIMS, ctx),
    }
}

/// Re-judge a surge results.json from its runs and memory fits.
pub fn judge_value(v: &Value) -> Result<Judged> {
    let all = crate::claims::records(v, "runs")?;
    let (keep, out) = crate::claims::kept(all);
    let runs = keep
        .into_iter()
        .enumerate()
        .map(|(i, r)| R::deserialize(r).map_err(|e| anyhow!("run {i} of results.json: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let fits = match v.get("per_connection_memory").and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .enumerate()
            .map(|(i, f)| F::deserialize(f).map_err(|e| anyhow!("per_connection_memory {i}: {e}")))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let off_calibration = (v
        .get("calibration")
        .and_then(|c| c.get("within_bands"))
        .and_then(Value::as_bool)
        == Some(false))
    .then(|| {
        "workload off calibration: the load these runs placed is outside the bands of paper 004's own load (results.json calibration: GETs/s per UE, bytes per GET, files per object, connection ratio), so a verdict would be about another workload".to_string()
    });
    let ctx = Ctx {
        runs,
        fits,
        off_calibration,
    };
    Ok(Judged::new(Suite::Surge, all.len(), out, judge(&ctx)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Verdict;

    fn r(mode: &str, ues: u64, packets: u64, gps: f64) -> R {
        R {
            memory: "none".into(),
            limit_bytes: None,
            mode: mode.parse().unwrap(),
            ues,
            gets: 1000,
            gets_per_second: gps,
            packets: Pk {
                total: packets,
                connections: 100,
            },
            usr: 5.0,
            kern: 5.0,
            idle: 80.0,
            iowait: 0.0,
            pages_read: 0.0,
            oom_kills: 0,
            disk_iops: None,
            disk_reads_per_s: 0.0,
            cpu_quota: None,
            server_cpu_cores: 0.1,
            cpu_throttled: None,
            cwnd_mean: 10.0,
            cwnd_n: 5,
            error: None,
        }
    }

    fn v(c: &Ctx, id: &str) -> Claim {
        judge(c).into_iter().find(|x| x.id == id).unwrap()
    }

    /// One run per point: n < 3; three runs each: the band decides.
    #[test]
    fn repetitions_decide() {
        let one = Ctx {
            runs: vec![r("http10", 40, 30_000, 50.0), r("http11", 40, 27_000, 50.0)],
            fits: vec![],
            off_calibration: None,
        };
        let c = v(&one, "p004-network");
        assert_eq!(
            (c.verdict, c.reason.starts_with("n < 3")),
            (Verdict::Inconclusive, true)
        );
        let mut runs = Vec::new();
        for (a, b) in [(30_000, 27_000), (30_300, 27_300), (29_700, 26_700)] {
            runs.push(r("http10", 40, a, 50.0));
            runs.push(r("http11", 40, b, 50.0));
        }
        assert_eq!(
            v(
                &Ctx {
                    runs: runs.clone(),
                    fits: vec![],
                    off_calibration: None,
                },
                "p004-network"
            )
            .verdict,
            Verdict::Confirmed
        );
        // An idle machine is not a CPU-bound server.
        let on = Ctx {
            runs: runs.clone(),
            fits: vec![],
            off_calibration: None,
        };
        assert_eq!(v(&on, "p004-cpu").verdict, Verdict::NotTestable);
        // A CPU quota that bound (90% used, throttled in most periods) decides
        // the CPU claim on its own configuration; one that did not bind is
        // not testable.
        let quota = |mode: &str, gps: f64, used: f64, thr: f64| R {
            memory: "cpu".into(),
            cpu_quota: Some(0.01),
            server_cpu_cores: used,
            cpu_throttled: Some(thr),
            ..r(mode, 40, 30_000, gps)
        };
        let mut bound = runs.clone();
        for g in [30.0, 30.5, 29.5] {
            bound.push(quota("http10", g, 0.0099, 0.9));
            bound.push(quota("http11", g, 0.0098, 0.9));
        }
        let bc = Ctx {
            runs: bound.clone(),
            fits: vec![],
            off_calibration: None,
        };
        let cpu = v(&bc, "p004-cpu");
        assert_eq!(cpu.verdict, Verdict::Confirmed, "{cpu:?}");
        // The CPU-limited runs are not the unlimited configuration's.
        assert_eq!(v(&bc, "p004-network").verdict, Verdict::Confirmed);
        for r in bound.iter_mut().filter(|r| r.cpu_quota.is_some()) {
            r.cpu_throttled = Some(0.1);
        }
        let unbound = Ctx {
            runs: bound,
            fits: vec![],
            off_calibration: None,
        };
        let cpu = v(&unbound, "p004-cpu");
        assert_eq!(cpu.verdict, Verdict::NotTestable);
        assert!(cpu.reason.contains("quota"), "{}", cpu.reason);
        // Off the paper's calibration: no claim is testable.
        let off = Ctx {
            runs,
            fits: vec![],
            off_calibration: Some("off".into()),
        };
        assert!(judge(&off)
            .iter()
            .all(|c| c.verdict == Verdict::NotTestable));
    }

    /// The disk claim needs a memory-limited point that saturated its disk
    /// under either protocol with no OOM kill under either.
    #[test]
    fn the_disk_claim_needs_a_saturated_disk_and_no_oom_kill() {
        let mut runs = Vec::new();
        let limited = |mode: &str, gps: f64, reads: f64, pages: f64| R {
            memory: "96M".into(),
            limit_bytes: Some(96 << 20),
            disk_iops: Some(100),
            disk_reads_per_s: reads,
            pages_read: pages,
            ..r(mode, 280, 30_000, gps)
        };
        for k in [0.0, 1.0, -1.0] {
            runs.push(r("http10", 280, 30_000, 110.0 + k));
            runs.push(r("http11", 280, 27_000, 110.0 + k));
            // HTTP/1.0 keeps its file set cached; HTTP/1.1's connections
            // leave the cache too little and the disk saturates.
            runs.push(limited("http10", 108.0 + k, 5.0, 20.0));
            runs.push(limited("http11", 60.0 + k, 97.0, 400.0));
        }
        let ctx = |runs: Vec<R>| Ctx {
            runs,
            fits: vec![],
            off_calibration: None,
        };
        let d = v(&ctx(runs.clone()), "p004-disk");
        assert_eq!(d.verdict, Verdict::Confirmed, "{d:?}");
        // A disk below 80% of its limit was not the bottleneck.
        let mut slack = runs.clone();
        for x in slack.iter_mut().filter(|x| x.disk_iops.is_some()) {
            x.disk_reads_per_s = x.disk_reads_per_s.min(60.0);
        }
        let d = v(&ctx(slack), "p004-disk");
        assert_eq!(d.verdict, Verdict::NotTestable);
        assert!(d.reason.contains("80% of its 100 reads/s"), "{}", d.reason);
        // One OOM kill under either protocol: not a disk-bound server.
        let mut killed = runs;
        if let Some(x) = killed
            .iter_mut()
            .find(|x| x.disk_iops.is_some() && x.mode == Mode::Http10)
        {
            x.oom_kills = 1;
        }
        let d = v(&ctx(killed), "p004-disk");
        assert_eq!(d.verdict, Verdict::NotTestable);
        assert!(d.reason.contains("1 OOM kills"), "{}", d.reason);
    }
}
