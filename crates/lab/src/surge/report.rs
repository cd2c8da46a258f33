//! The SURGE suite's report: paper 004's Tables 2-7 in its layout with its
//! Apache 1.3.0 values beside ours, per-connection memory (Figure 9) by
//! least squares, throughput and latency against load (Figures 3, 5, 6,
//! 11, 12), CWND CDFs (Figure 2), the claims table, and the files.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use serde::Serialize;

use pagewire_load::run::Mode;

use super::{Outcome, Run};
use crate::claims::spec::Claim;

/// Paper 004's Apache 1.3.0 / 128 MB values (Tables 2, 3, 4, 6, 7) as typed
/// rows, one per mode, each quantity at the paper's 40 / 280 / 520 UE
/// columns ([`paper::UES`]); NaN where the paper has no value.
pub mod paper {
    use pagewire_load::run::Mode;

    pub const UES: [u64; 3] = [40, 280, 520];

    /// Tables 2 / 7 (millions).
    #[derive(Clone, Copy, Debug)]
    pub struct Packets {
        pub mode: Mode,
        pub data_packets: [f64; 3],
        pub total_packets: [f64; 3],
        pub data_bytes: [f64; 3],
        pub total_bytes: [f64; 3],
        pub data_bytes_per_data_packet: [f64; 3],
    }

    pub const TABLE_2: [Packets; 4] = [
        Packets {
            mode: Mode::Http10,
            data_packets: [0.107, 0.758, 1.327],
            total_packets: [0.201, 1.462, 2.571],
            data_bytes: [128.2, 897.7, 1602.9],
            total_bytes: [136.2, 956.2, 1705.7],
            data_bytes_per_data_packet: [1197.0, 1184.0, 1207.0],
        },
        Packets {
            mode: Mode::Http11,
            data_packets: [0.101, 0.716, 1.330],
            total_packets: [0.134, 0.947, 1.784],
            data_bytes: [119.0, 842.8, 1607.4],
            total_bytes: [124.4, 880.7, 1678.8],
            data_bytes_per_data_packet: [1180.0, 1178.0, 1208.0],
        },
        Packets {
            mode: Mode::Pipeline,
            data_packets: [0.099, 0.697, 1.308],
            total_packets: [0.133, 0.935, 1.784],
            data_bytes: [118.6, 836.9, 1608.7],
            total_bytes: [123.9, 874.3, 1680.0],
            data_bytes_per_data_packet: [1198.0, 1200.0, 1229.0],
        },
        Packets {
            mode: Mode::EarlyClose,
            data_packets: [0.105, 0.703, 1.220],
            total_packets: [0.176, 1.180, 2.089],
            data_bytes: [127.3, 844.4, 1493.6],
            total_bytes: [134.3, 891.6, 1577.1],
            data_bytes_per_data_packet: [1210.0, 1200.0, 1224.0],
        },
    ];

    /// Tables 3 / 7: congestion window, segments.
    #[derive(Clone, Copy, Debug)]
    pub struct Cwnd {
        pub mode: Mode,
        pub average: [f64; 3],
        pub max: [f64; 3],
    }

    pub const TABLE_3: [Cwnd; 4] = [
        Cwnd {
            mode: Mode::Http10,
            average: [5.79, 4.04, 3.81],
            max: [29.0, 83.0, 99.0],
        },
        Cwnd {
            mode: Mode::Http11,
            average: [10.48, 10.79, 9.28],
            max: [68.0, 186.0, 150.0],
        },
        Cwnd {
            mode: Mode::Pipeline,
            average: [11.04, 11.30, 9.72],
            max: [106.0, 202.0, 141.0],
        },
        Cwnd {
            mode: Mode::EarlyClose,
            average: [4.87, 5.40, 4.39],
            max: [35.0, 233.0, 182.0],
        },
    ];

    /// Table 4: the server monitor (USR, KER, IDL: % of the machine; PGR,
    /// PGW: pages/s; TPS, TPR: TCP segments/s).
    #[derive(Clone, Copy, Debug)]
    pub struct Monitor {
        pub mode: Mode,
        pub usr: [f64; 3],
        pub ker: [f64; 3],
        pub idl: [f64; 3],
        pub pgr: [f64; 3],
        pub pgw: [f64; 3],
        pub tps: [f64; 3],
        pub tpr: [f64; 3],
    }

    pub const TABLE_4: [Monitor; 2] = [
        Monitor {
            mode: Mode::Http10,
            usr: [1.66, 15.18, 27.15],
            ker: [7.89, 41.95, 69.96],
            idl: [90.45, 42.87, 2.89],
            pgr: [0.00, 0.00, 0.01],
            pgw: [11.16, 33.74, 48.93],
            tps: [233.0, 1859.0, 3515.0],
            tpr: [125.0, 944.0, 1745.0],
        },
        Monitor {
            mode: Mode::Http11,
            usr: [1.33, 13.10, 20.84],
            ker: [6.90, 43.70, 72.02],
            idl: [91.77, 43.20, 7.14],
            pgr: [0.02, 0.02, 0.02],
            pgw: [12.44, 36.73, 46.38],
            tps: [188.0, 1382.0, 2135.0],
            tpr: [66.0, 441.0, 710.0],
        },
    ];

    /// Tables 6 / 7: TCP connections (total connects, average ESTABLISHED,
    /// average duration in seconds, connect seconds).
    #[derive(Clone, Copy, Debug)]
    pub struct Connections {
        pub mode: Mode,
        pub connects: [f64; 3],
        pub established: [f64; 3],
        pub duration_s: [f64; 3],
        pub connect_seconds: [f64; 3],
    }

    pub const TABLE_6: [Connections; 3] = [
        Connections {
            mode: Mode::Http10,
            connects: [10902.0, 83826.0, 153231.0],
            established: [0.16, 3.47, 23.82],
            duration_s: [0.02, 0.04, 0.12],
            connect_seconds: [218.0, 3353.0, 18388.0],
        },
        Connections {
            mode: Mode::Http11,
            connects: [2278.0, 15194.0, 26456.0],
            established: [35.41, 234.11, 398.05],
            duration_s: [13.02, 13.59, 15.59],
            connect_seconds: [29659.0, 206486.0, 412449.0],
        },
        Connections {
            mode: Mode::EarlyClose,
            connects: [7876.0, 54667.0, 96776.0],
            established: [f64::NAN; 3],
            duration_s: [f64::NAN; 3],
            connect_seconds: [f64::NAN; 3],
        },
    ];

    /// The row of `mode` in `table`.
    pub fn row<T>(table: &[T], mode: Mode, mode_of: impl Fn(&T) -> Mode) -> Option<&T> {
        table.iter().find(|r| mode_of(r) == mode)
    }
    pub fn table2(mode: Mode) -> Option<&'static Packets> {
        row(&TABLE_2, mode, |r| r.mode)
    }
    pub fn table3(mode: Mode) -> Option<&'static Cwnd> {
        row(&TABLE_3, mode, |r| r.mode)
    }
    pub fn table4(mode: Mode) -> Option<&'static Monitor> {
        row(&TABLE_4, mode, |r| r.mode)
    }
    pub fn table6(mode: Mode) -> Option<&'static Connections> {
        row(&TABLE_6, mode, |r| r.mode)
    }

    /// Figure 9: KB per connection (HTTP/1.0, HTTP/1.1).
    pub const MEM_PER_CONN_KB: [f64; 2] = [378.0, 81.0];
    /// The paper's runs lasted ten minutes.
    pub const RUN_S: f64 = 600.0;
}

/// A least-squares line `y = a + b x` with the slope's standard error.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    pub server: String,
    pub memory: String,
    #[serde(serialize_with = "super::ser_mode")]
    pub mode: Mode,
    pub n: usize,
    pub slope_kb_per_conn: f64,
    pub slope_se_kb: f64,
    pub intercept_mb: f64,
    pub r2: f64,
}

pub fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64, f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let sse: f64 = points.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let se = (sse / (n - 2.0) / sxx).sqrt();
    let r2 = if syy > 0.0 { 1.0 - sse / syy } else { 0.0 };
    Some((a, b, se, r2))
}

/// Figure 9: memory against ESTABLISHED per (memory config, mode), over
/// every monitor second of every load level.
pub fn fits(runs: &[Run]) -> Vec<Fit> {
    let mut keys: Vec<(String, String, Mode)> = runs
        .iter()
        .map(|r| (r.server.label().to_string(), r.memory.label.clone(), r.mode))
        .collect();
    // By server, memory and mode name, as results.json has always had them.
    keys.sort_by(|a, b| (&a.0, &a.1, a.2.name()).cmp(&(&b.0, &b.1, b.2.name())));
    keys.dedup();
    keys.into_iter()
        .filter_map(|(s, m, mode)| {
            let pts: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| {
                    r.server.label() == s && r.memory.label == m && r.mode == mode && r.ok()
                })
                .flat_map(|r| r.mem_points.iter().copied())
                .collect();
            let (a, b, se, r2) = least_squares(&pts)?;
            Some(Fit {
                server: s,
                memory: m,
                mode,
                n: pts.len(),
                slope_kb_per_conn: b / 1024.0,
                slope_se_kb: se / 1024.0,
                intercept_mb: a / 1048576.0,
                r2,
            })
        })
        .collect()
}

fn per_get(r: &Run, x: u64) -> f64 {
    x as f64 / r.gets.max(1) as f64
}

/// The claims of paper 004 judged on these runs and fits (through their
/// JSON form, exactly as `pagewire claims` reads a results.json).
pub fn judge(runs: &[Run], fits: &[Fit]) -> crate::claims::Judged {
    crate::suite::judge_serialized::<super::Surge, _>(&serde_json::json!({
        "runs": runs,
        "per_connection_memory": fits,
        "calibration": super::suite_calibration(runs),
    }))
}

/// The judged claims' list (results.json `claims`).
pub fn check(runs: &[Run], fits: &[Fit]) -> Vec<Claim> {
    judge(runs, fits).claims
}

/// A mode's name in the paper's tables and figures.
fn mode_title(m: Mode) -> &'static str {
    match m {
        Mode::Http10 => "HTTP/1.0",
        Mode::Http11 => "HTTP/1.1",
        Mode::Pipeline => "HTTP/1.1 Pipelining",
        Mode::EarlyClose => "HTTP/1.1 early close",
    }
}

fn paper_col(u: u64) -> Option<usize> {
    paper::UES.iter().position(|&x| x == u)
}

fn fmt(x: f64, d: usize) -> String {
    if x.is_nan() {
        "-".into()
    } else {
        format!("{x:.d$}")
    }
}

/// A table: rows of quantities, one column per (mode, UEs), ours with the
/// paper's value (at the same UE count, when the paper has one) beside.
#[allow(clippy::type_complexity)]
fn grid(
    out: &mut String,
    title: &str,
    runs: &[&Run],
    rows: &[(
        &str,
        usize,
        &dyn Fn(&Run) -> f64,
        &dyn Fn(Mode, usize) -> Option<f64>,
    )],
) {
    let _ = writeln!(out, "{title}");
    let mut head = format!("{:<30}", "");
    for r in runs {
        head.push_str(&format!(
            " {:>22}",
            if r.rep == 0 {
                format!("{} {}UE", short(r.mode), r.ues)
            } else {
                format!("{} {}UE #{}", short(r.mode), r.ues, r.rep + 1)
            }
        ));
    }
    let _ = writeln!(out, "{head}");
    for (name, d, f, p) in rows {
        let mut line = format!("{name:<30}");
        for r in runs {
            let ours = fmt(f(r), *d);
            let theirs = paper_col(r.ues)
                .and_then(|c| p(r.mode, c))
                .filter(|x| !x.is_nan())
                .map(|x| format!(" ({})", fmt(x, *d)))
                .unwrap_or_default();
            line.push_str(&format!(" {:>22}", format!("{ours}{theirs}")));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out);
}

fn short(m: Mode) -> &'static str {
    match m {
        Mode::Http10 => "1.0",
        Mode::Http11 => "1.1",
        Mode::Pipeline => "pipe",
        Mode::EarlyClose => "EC",
    }
}

/// A table's rows: name, decimals, our value of a run, the paper's value
/// of a mode at a UE column.
type Rows<'a> = [(
    &'a str,
    usize,
    &'a dyn Fn(&Run) -> f64,
    &'a dyn Fn(Mode, usize) -> Option<f64>,
)];

/// The paper has no such value.
fn none(_: Mode, _: usize) -> Option<f64> {
    None
}

/// The text report: every table per memory configuration, the fits and
/// the claims.
pub fn render_text(o: &Outcome, fits: &[Fit], claims: &[Claim], header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    let _ = writeln!(
        s,
        "{}\n",
        crate::results::lateness_line(o.runs.iter().map(|r| &r.link_lateness), "runs")
    );
    let mut mems: Vec<(String, u64)> = o
        .runs
        .iter()
        .map(|r| (r.memory.label.clone(), r.memory.key()))
        .collect();
    mems.sort_by_key(|m| std::cmp::Reverse(m.1));
    mems.dedup();
    let _ = writeln!(
        s,
        "Values: ours, then (paper 004's Apache 1.3.0 / 128 MB value) where the paper has the same UE count.\n\
         Counts are scaled to the paper's 10-minute runs (x 600 / run seconds) so they compare.\n"
    );
    for (mem, _) in &mems {
        let rs: Vec<&Run> = o.runs.iter().filter(|r| &r.memory.label == mem).collect();
        let server = rs.first().map(|r| r.server.label()).unwrap_or_default();
        let quota = rs.first().and_then(|r| r.memory.cpu_quota);
        let iops = rs.first().and_then(|r| r.memory.disk_iops);
        let swap = if rs.first().is_some_and(|r| r.memory.swap) {
            ", swap"
        } else {
            ""
        };
        let what = match (quota, iops) {
            (Some(q), _) => format!("{server}, CPU quota {q} cores, memory unlimited"),
            (None, Some(n)) => format!("{server}, memory {mem}{swap}, disk {n} reads/s"),
            (None, None) => format!("{server}, memory {mem}{swap}"),
        };
        table2(&mut s, &what, &rs);
        table3(&mut s, &what, &rs);
        table4(&mut s, &what, &rs);
        if quota.is_some() {
            cpu_quota(&mut s, &what, &rs);
        }
        if rs.iter().any(|r| r.memory.limit_bytes.is_some()) {
            disk(&mut s, &what, &rs);
        }
        table6(&mut s, &what, &rs);
        throughput(&mut s, &what, &rs);
    }
    figure9(&mut s, fits);
    let _ = claims;
    s.push_str(&judge(&o.runs, fits).render());
    s
}

/// Millions per the paper's 600 s run.
fn per_600s_millions(r: &Run) -> f64 {
    paper::RUN_S / r.duration_s / 1e6
}

/// Tables 2 and 7: packets and bytes.
fn table2(s: &mut String, what: &str, rs: &[&Run]) {
    let sc = per_600s_millions;
    let p = |f: fn(&paper::Packets) -> [f64; 3]| {
        move |m: Mode, c: usize| paper::table2(m).map(|t| f(t)[c])
    };
    let rows: &Rows = &[
        (
            "Data Packets",
            3,
            &|r: &Run| r.packets.data as f64 * sc(r),
            &p(|t| t.data_packets),
        ),
        (
            "Total Packets",
            3,
            &|r: &Run| r.packets.total as f64 * sc(r),
            &p(|t| t.total_packets),
        ),
        (
            "Total Data Bytes",
            1,
            &|r: &Run| r.packets.data_bytes as f64 * sc(r),
            &p(|t| t.data_bytes),
        ),
        (
            "Total Bytes",
            1,
            &|r: &Run| r.packets.bytes as f64 * sc(r),
            &p(|t| t.total_bytes),
        ),
        (
            "Data Byts/Data Pkts",
            0,
            &|r: &Run| r.packets.data_bytes as f64 / r.packets.data.max(1) as f64,
            &p(|t| t.data_bytes_per_data_packet),
        ),
        (
            "SYN (+SYN-ACK) packets",
            3,
            &|r: &Run| r.packets.syn as f64 * sc(r),
            &none,
        ),
        (
            "FIN packets",
            3,
            &|r: &Run| r.packets.fin as f64 * sc(r),
            &none,
        ),
        (
            "RST packets",
            3,
            &|r: &Run| r.packets.rst as f64 * sc(r),
            &none,
        ),
        (
            "pure ACK packets",
            3,
            &|r: &Run| r.packets.ack as f64 * sc(r),
            &none,
        ),
        (
            "GETs (thousands/600 s)",
            1,
            &|r: &Run| r.gets as f64 * sc(r) * 1000.0,
            &none,
        ),
        (
            "packets per GET",
            2,
            &|r: &Run| per_get(r, r.packets.total),
            &none,
        ),
    ];
    grid(
        s,
        &format!("Table 2/7 — packets and bytes ({what}; millions per 600 s)"),
        rs,
        rows,
    );
}

/// Tables 3 and 7: the congestion window.
fn table3(s: &mut String, what: &str, rs: &[&Run]) {
    let rows: &Rows = &[
        ("CWND Average", 2, &|r: &Run| r.cwnd_mean, &|m, c| {
            paper::table3(m).map(|t| t.average[c])
        }),
        ("CWND Max", 0, &|r: &Run| r.cwnd_max as f64, &|m, c| {
            paper::table3(m).map(|t| t.max[c])
        }),
        (
            "samples (conn-seconds)",
            0,
            &|r: &Run| r.cwnd_n as f64,
            &none,
        ),
    ];
    grid(
        s,
        &format!("Table 3 — congestion window, segments ({what})"),
        rs,
        rows,
    );
}

/// Table 4: the server monitor.
fn table4(s: &mut String, what: &str, rs: &[&Run]) {
    let p = |f: fn(&paper::Monitor) -> [f64; 3]| {
        move |m: Mode, c: usize| paper::table4(m).map(|t| f(t)[c])
    };
    let rows: &Rows = &[
        ("USR (% of machine)", 2, &|r: &Run| r.usr, &p(|t| t.usr)),
        ("KER (% of machine)", 2, &|r: &Run| r.kern, &p(|t| t.ker)),
        ("IDL (machine %)", 2, &|r: &Run| r.idle, &p(|t| t.idl)),
        ("iowait (machine %)", 2, &|r: &Run| r.iowait, &none),
        (
            "PGR (server pages/s)",
            2,
            &|r: &Run| r.pages_read,
            &p(|t| t.pgr),
        ),
        (
            "PGW (server pages/s)",
            2,
            &|r: &Run| r.pages_written,
            &p(|t| t.pgw),
        ),
        (
            "machine pages read/s",
            1,
            &|r: &Run| r.sys_pages_read,
            &none,
        ),
        ("major faults/s", 1, &|r: &Run| r.major_faults, &none),
        ("OOM kills (run)", 0, &|r: &Run| r.oom_kills as f64, &none),
        ("TPS (segments/s)", 0, &|r: &Run| r.tcp_sent, &p(|t| t.tps)),
        (
            "TPR (segments/s)",
            0,
            &|r: &Run| r.tcp_received,
            &p(|t| t.tpr),
        ),
        (
            "server memory, no cache (MB)",
            1,
            &|r: &Run| r.rss_mean / 1048576.0,
            &none,
        ),
        (
            "server page cache (MB)",
            1,
            &|r: &Run| r.page_cache_mean / 1048576.0,
            &none,
        ),
        ("load average before", 2, &|r: &Run| r.loadavg_before, &none),
        ("load average after", 2, &|r: &Run| r.loadavg_after, &none),
    ];
    grid(
        s,
        &format!("Table 4 — server monitor, means of the 1 s samples ({what})"),
        rs,
        rows,
    );
}

/// The CPU-bound regime's counters: what the quota allowed and what the
/// server used.
fn cpu_quota(s: &mut String, what: &str, rs: &[&Run]) {
    let rows: &Rows = &[
        (
            "server CPU (cores)",
            4,
            &|r: &Run| r.server_cpu_cores,
            &none,
        ),
        (
            "share of the quota used (%)",
            1,
            &|r: &Run| {
                r.memory
                    .cpu_quota
                    .map_or(f64::NAN, |q| 100.0 * r.server_cpu_cores / q)
            },
            &none,
        ),
        (
            "periods throttled (%)",
            1,
            &|r: &Run| r.cpu_throttled.map_or(f64::NAN, |t| 100.0 * t),
            &none,
        ),
    ];
    grid(
        s,
        &format!("CPU quota — the server's use of its cgroup CPU quota ({what})"),
        rs,
        rows,
    );
}

/// The disk-bound regime's counters: the server's reads from disk against
/// its disk's limit, the memory its processes held beside its page cache,
/// the machine's iowait, and the OOM killer's count (a killed server is
/// not a disk-bound one).
fn disk(s: &mut String, what: &str, rs: &[&Run]) {
    let rows: &Rows = &[
        (
            "server disk reads/s",
            1,
            &|r: &Run| r.disk_reads_per_s,
            &none,
        ),
        (
            "share of the disk's read limit (%)",
            1,
            &|r: &Run| {
                r.memory
                    .disk_iops
                    .map_or(f64::NAN, |n| 100.0 * r.disk_reads_per_s / n as f64)
            },
            &none,
        ),
        ("server pages read/s", 1, &|r: &Run| r.pages_read, &none),
        ("iowait (machine %)", 2, &|r: &Run| r.iowait, &none),
        (
            "server memory, no cache, mean (MB)",
            1,
            &|r: &Run| r.rss_mean / 1048576.0,
            &none,
        ),
        (
            "server memory, no cache, max (MB)",
            1,
            &|r: &Run| r.rss_max / 1048576.0,
            &none,
        ),
        (
            "server page cache (MB)",
            1,
            &|r: &Run| r.page_cache_mean / 1048576.0,
            &none,
        ),
        ("OOM kills (run)", 0, &|r: &Run| r.oom_kills as f64, &none),
        (
            "swap-ins (machine pages/s)",
            1,
            &|r: &Run| r.swap_in_per_s,
            &none,
        ),
        (
            "swap-outs (machine pages/s)",
            1,
            &|r: &Run| r.swap_out_per_s,
            &none,
        ),
        (
            "server memory in swap, max (MB)",
            1,
            &|r: &Run| r.swap_max / 1048576.0,
            &none,
        ),
    ];
    grid(
        s,
        &format!("Disk — the server's reads against its memory limit ({what})"),
        rs,
        rows,
    );
}

/// Tables 6 and 7: TCP connections.
fn table6(s: &mut String, what: &str, rs: &[&Run]) {
    let p = |f: fn(&paper::Connections) -> [f64; 3]| {
        move |m: Mode, c: usize| paper::table6(m).map(|t| f(t)[c])
    };
    let rows: &Rows = &[
        (
            "Total Connects",
            0,
            &|r: &Run| r.packets.connections as f64 * paper::RUN_S / r.duration_s,
            &p(|t| t.connects),
        ),
        (
            "Average ESTABLISHED",
            2,
            &|r: &Run| r.established,
            &p(|t| t.established),
        ),
        (
            "Average Duration (s)",
            2,
            &|r: &Run| r.established * r.duration_s / r.packets.connections.max(1) as f64,
            &p(|t| t.duration_s),
        ),
        (
            "Connect Seconds",
            0,
            &|r: &Run| r.established * paper::RUN_S,
            &p(|t| t.connect_seconds),
        ),
        ("average TIME_WAIT", 1, &|r: &Run| r.time_wait, &none),
    ];
    grid(
        s,
        &format!("Table 6/7 — TCP connections ({what}; per 600 s)"),
        rs,
        rows,
    );
}

/// Figures 3, 5, 6, 11 and 12: throughput and latency.
fn throughput(s: &mut String, what: &str, rs: &[&Run]) {
    let rows: &Rows = &[
        ("GETs/s", 1, &|r: &Run| r.gets_per_second, &none),
        ("GETs/s sd over seconds", 1, &|r: &Run| r.gps_sd, &none),
        ("latency mean (ms)", 1, &|r: &Run| r.latency_mean_ms, &none),
        ("latency p99 (ms)", 1, &|r: &Run| r.latency_p99_ms, &none),
        (
            "object latency mean (ms)",
            1,
            &|r: &Run| r.object_latency_mean_ms,
            &none,
        ),
        ("errors", 0, &|r: &Run| r.errors as f64, &none),
        ("retries", 0, &|r: &Run| r.retries as f64, &none),
    ];
    grid(
        s,
        &format!("Figures 3/5/6/11/12 — throughput and latency ({what})"),
        rs,
        rows,
    );
}

/// Figure 9: per-connection memory, least squares.
fn figure9(s: &mut String, fits: &[Fit]) {
    let _ = writeln!(s, "Figure 9 — server memory against ESTABLISHED connections (least squares over the 1 s samples of all loads); paper: Apache 1.3.0 {} KB per HTTP/1.0 and {} KB per HTTP/1.1 connection", paper::MEM_PER_CONN_KB[0], paper::MEM_PER_CONN_KB[1]);
    let _ = writeln!(
        s,
        "{:<10} {:<8} {:<12} {:>6} {:>14} {:>10} {:>14} {:>6}",
        "server", "memory", "mode", "n", "KB/connection", "± se", "intercept MB", "r²"
    );
    for f in fits {
        let _ = writeln!(
            s,
            "{:<10} {:<8} {:<12} {:>6} {:>14.1} {:>10.1} {:>14.1} {:>6.2}",
            f.server,
            f.memory,
            f.mode.name(),
            f.n,
            f.slope_kb_per_conn,
            f.slope_se_kb,
            f.intercept_mb,
            f.r2
        );
    }
    let _ = writeln!(s);
}

fn line_plot(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
        let xmax = xs.fold(1.0f64, f64::max) * 1.05;
        let ymax = ys.filter(|y| y.is_finite()).fold(1e-9f64, f64::max) * 1.1;
        let mut ch = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        ch.configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let pts: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.1.is_finite()).collect();
            ch.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
            ch.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        }
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    Ok(buf)
}

/// Everything a suite run writes.
#[derive(Serialize)]
pub struct Results<'a> {
    /// See [`crate::results::SCHEMA_VERSION`].
    pub schema_version: u32,
    pub made_by: &'a str,
    pub provenance: &'a crate::results::Provenance,
    pub cgroup: &'a str,
    pub link: serde_json::Value,
    pub file_set: serde_json::Value,
    pub wall_s: f64,
    pub runs: &'a [Run],
    pub per_connection_memory: &'a [Fit],
    /// The load beside paper 004's (see `surge::suite_calibration`).
    pub calibration: &'a pagewire_load::calibration::Calibration,
    pub claims: &'a [Claim],
    /// The text report (report.txt; the tables section of report.html).
    #[serde(skip)]
    pub text: &'a str,
}

impl crate::results::Report for Results<'_> {
    type Suite = super::Surge;
    const RECORDS: &'static str = "runs";
    const HTML_TITLE: &'static str = "pagewire bench --suite surge: Barford & Crovella, \"A Performance Evaluation of HTTP/1.1\" (paper 004), on today's servers";

    fn provenance(&self) -> &crate::results::Provenance {
        self.provenance
    }

    fn claims(&self) -> &[Claim] {
        self.claims
    }

    fn lateness(&self) -> Vec<&pagewire_link::LinkLateness> {
        self.runs.iter().map(|r| &r.link_lateness).collect()
    }

    fn render_text(&self) -> String {
        self.text.to_string()
    }

    /// results.csv (the figures are inline SVG in report.html).
    fn write_data(&self, dir: &Path) -> Result<Vec<String>> {
        write_csv(dir, self)?;
        Ok(Vec::new())
    }

    /// report.html: throughput and latency first, CWND CDFs, Figure 9.
    fn render_html(&self, _dir: &Path, _figures: &[String]) -> Result<String> {
        html(self)
    }
}

fn write_csv(dir: &Path, res: &Results) -> Result<()> {
    let mut w = csv::Writer::from_path(dir.join("results.csv"))?;
    w.write_record(
        [
            "server",
            "memory",
            "mode",
            "ues",
            "duration_s",
            "gets",
            "gets_per_second",
            "gps_sd",
            "latency_mean_ms",
            "latency_p99_ms",
            "errors",
            "packets",
            "bytes",
            "data_packets",
            "data_bytes",
            "syn",
            "fin",
            "rst",
            "ack",
            "connections",
            "usr",
            "kern",
            "idle",
            "iowait",
            "pages_read",
            "pages_written",
            "tcp_sent",
            "tcp_received",
            "established",
            "time_wait",
            "rss_mb",
            "cwnd_mean",
            "cwnd_max",
            "loadavg_before",
            "loadavg_after",
            "error",
        ]
        .into_iter()
        .chain(crate::results::LATENESS_CSV_HEADER),
    )?;
    for r in res.runs {
        let p = &r.packets;
        w.write_record(
            [
                r.server.label().to_string(),
                r.memory.label.clone(),
                r.mode.name().to_string(),
                r.ues.to_string(),
                r.duration_s.to_string(),
                r.gets.to_string(),
                format!("{:.2}", r.gets_per_second),
                format!("{:.2}", r.gps_sd),
                format!("{:.2}", r.latency_mean_ms),
                format!("{:.2}", r.latency_p99_ms),
                r.errors.to_string(),
                p.total.to_string(),
                p.bytes.to_string(),
                p.data.to_string(),
                p.data_bytes.to_string(),
                p.syn.to_string(),
                p.fin.to_string(),
                p.rst.to_string(),
                p.ack.to_string(),
                p.connections.to_string(),
                format!("{:.2}", r.usr),
                format!("{:.2}", r.kern),
                format!("{:.2}", r.idle),
                format!("{:.2}", r.iowait),
                format!("{:.2}", r.pages_read),
                format!("{:.2}", r.pages_written),
                format!("{:.1}", r.tcp_sent),
                format!("{:.1}", r.tcp_received),
                format!("{:.2}", r.established),
                format!("{:.2}", r.time_wait),
                format!("{:.2}", r.rss_mean / 1048576.0),
                format!("{:.2}", r.cwnd_mean),
                r.cwnd_max.to_string(),
                format!("{:.2}", r.loadavg_before),
                format!("{:.2}", r.loadavg_after),
                r.error.clone().unwrap_or_default(),
            ]
            .into_iter()
            .chain(crate::results::lateness_csv(&r.link_lateness)),
        )?;
    }
    w.flush()?;
    Ok(())
}

/// report.html in the shared report shape; throughput and latency first.
fn html(res: &Results) -> Result<String> {
    use crate::html::{Figure, Page, Section};
    use crate::results::Report as _;
    let mut curves: Vec<Figure> = Vec::new();
    let mut h = String::new();
    let mut mems: Vec<(String, u64)> = res
        .runs
        .iter()
        .map(|r| (r.memory.label.clone(), r.memory.key()))
        .collect();
    mems.sort_by_key(|m| std::cmp::Reverse(m.1));
    mems.dedup();
    // By name, as the report has always listed them.
    let mut modes: Vec<Mode> = res.runs.iter().map(|r| r.mode).collect();
    modes.sort_by_key(|m| m.name());
    modes.dedup();
    for (mem, _) in &mems {
        let curve = |f: &dyn Fn(&Run) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
            modes
                .iter()
                .map(|m| {
                    let mut pts: Vec<(f64, f64)> = res
                        .runs
                        .iter()
                        .filter(|r| &r.memory.label == mem && r.mode == *m && r.ok())
                        .map(|r| (r.ues as f64, f(r)))
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    (mode_title(*m).to_string(), pts)
                })
                .collect()
        };
        curves.push(Figure {
            html: line_plot(
                &format!("Throughput, memory {mem}"),
                "user equivalents",
                "GETs/s",
                &curve(&|r| r.gets_per_second),
            )?,
            caption: format!("GETs/s against load, memory {mem} (Figures 3, 11)"),
        });
        curves.push(Figure {
            html: line_plot(
                &format!("Mean GET latency, memory {mem}"),
                "user equivalents",
                "seconds",
                &curve(&|r| r.latency_mean_ms / 1000.0),
            )?,
            caption: format!("mean GET latency against load, memory {mem} (Figures 5, 6, 12)"),
        });
    }
    let more_curves = curves.split_off(curves.len().min(2));
    let mut curves_html = String::from("<div class=plots>");
    for f in &more_curves {
        let _ = write!(
            curves_html,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            f.html,
            crate::html::esc(&f.caption)
        );
    }
    curves_html.push_str("</div>");
    h.push_str("<div class=plots>");
    let mut ues: Vec<u64> = res.runs.iter().map(|r| r.ues).collect();
    ues.sort();
    ues.dedup();
    if let Some((mem, _)) = mems.first() {
        for u in &ues {
            let series: Vec<(String, Vec<(f64, f64)>)> = res
                .runs
                .iter()
                .filter(|r| &r.memory.label == mem && r.ues == *u && !r.cwnds.is_empty())
                .map(|r| {
                    let mut v = r.cwnds.clone();
                    v.sort_unstable();
                    let n = v.len() as f64;
                    let mut pts = Vec::new();
                    for (i, x) in v.iter().enumerate() {
                        if i + 1 == v.len() || v[i + 1] != *x {
                            pts.push(((*x as f64).min(64.0), (i + 1) as f64 / n));
                        }
                    }
                    (mode_title(r.mode).to_string(), pts)
                })
                .collect();
            if !series.is_empty() {
                h.push_str(&line_plot(
                    &format!("CWND CDF, {u} UEs, memory {mem} (x capped at 64)"),
                    "congestion window (segments)",
                    "fraction",
                    &series,
                )?);
            }
        }
    }
    h.push_str("</div><h3>Server memory against ESTABLISHED (Figure 9)</h3>");
    if let Some((mem, _)) = mems.first() {
        let series: Vec<(String, Vec<(f64, f64)>)> = modes
            .iter()
            .map(|m| {
                let mut pts: Vec<(f64, f64)> = res
                    .runs
                    .iter()
                    .filter(|r| &r.memory.label == mem && r.mode == *m)
                    .flat_map(|r| r.mem_points.iter().map(|p| (p.0, p.1 / 1048576.0)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                (mode_title(*m).to_string(), pts)
            })
            .collect();
        h.push_str(&line_plot(
            &format!("Server memory (MB, no page cache) vs ESTABLISHED, memory {mem}"),
            "ESTABLISHED connections",
            "MB",
            &series,
        )?);
    }
    let page = Page {
        title: Results::HTML_TITLE.into(),
        provenance: res.provenance,
        lateness: res.lateness_line(),
        claims: serde_json::to_value(res.claims)?,
        key_plots: curves,
        sections: vec![
            Section {
                title: "Throughput and latency, other memory sizes".into(),
                html: curves_html,
                open: true,
            },
            Section {
                title: "CWND CDFs (Figure 2) and server memory (Figure 9)".into(),
                html: h,
                open: true,
            },
            Section {
                title: "Tables".into(),
                html: crate::html::text_tables(res.text),
                open: true,
            },
        ],
        notes: vec![format!("cgroup: {}", res.cgroup)],
    };
    Ok(page.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_a_line() {
        let pts: Vec<(f64, f64)> = (0..20).map(|i| (i as f64, 5.0 + 3.0 * i as f64)).collect();
        let (a, b, se, r2) = least_squares(&pts).unwrap();
        assert!((a - 5.0).abs() < 1e-9 && (b - 3.0).abs() < 1e-9);
        assert!(se < 1e-9 && (r2 - 1.0).abs() < 1e-9);
        assert!(least_squares(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn paper_tables_are_whole() {
        for m in [Mode::Http10, Mode::Http11, Mode::Pipeline, Mode::EarlyClose] {
            assert!(paper::table2(m).is_some() && paper::table3(m).is_some());
        }
        // Tables 4 and 6 have HTTP/1.0 and HTTP/1.1 (Table 6 also early close's connects).
        assert!(paper::table4(Mode::Pipeline).is_none());
        assert!(paper::table6(Mode::EarlyClose).unwrap().established[0].is_nan());
        // Table 7: early close's packets over pipelined HTTP/1.1 at 520 UEs: +17%.
        let e = paper::table2(Mode::EarlyClose).unwrap().total_packets[2];
        let p = paper::table2(Mode::Pipeline).unwrap().total_packets[2];
        assert!(((e / p - 1.0) * 100.0 - 17.0).abs() < 0.5);
    }
}
