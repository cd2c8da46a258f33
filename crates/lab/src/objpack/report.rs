//! Tables 3-7 of the paper in its layout with its values beside ours, the
//! beyond-the-paper methods below, the link's packets and bytes, the claims
//! check; results.json, results.csv and report.html.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::claims::spec::{Claim, Estimate};
use crate::claims::Suite;

use super::claims::{estimate, Ctx, Metric};
use super::methods::Method;
use super::run::{ObjpackOutcome, RunRow};

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

const GROUPS: [usize; 3] = [4, 16, 32];

fn value(r: &RunRow, m: Metric) -> f64 {
    match m {
        Metric::ServerCpu => r.server.cpu_ms,
        Metric::ServerTime => r.server.response_ms,
        Metric::ClientCpu => r.client.cpu_ms,
        Metric::ClientTime => r.client.response_ms,
        Metric::Packets => r.packets as f64,
        Metric::Bytes => r.bytes as f64,
    }
}

/// Per network: the estimates of every cell.
pub fn contexts(rows: &[RunRow]) -> Vec<Ctx> {
    let mut nets: Vec<String> = Vec::new();
    for r in rows {
        if !nets.contains(&r.net) {
            nets.push(r.net.clone());
        }
    }
    nets.into_iter()
        .map(|net| {
            let mut groups: BTreeMap<(Metric, usize, Method), Vec<f64>> = BTreeMap::new();
            let mut per_set: BTreeMap<(Metric, usize, Method), BTreeMap<usize, f64>> =
                BTreeMap::new();
            for r in rows.iter().filter(|r| r.net == net) {
                for m in [
                    Metric::ServerCpu,
                    Metric::ServerTime,
                    Metric::ClientCpu,
                    Metric::ClientTime,
                    Metric::Packets,
                    Metric::Bytes,
                ] {
                    groups
                        .entry((m, r.group_kb, r.method))
                        .or_default()
                        .push(value(r, m));
                    per_set
                        .entry((m, r.group_kb, r.method))
                        .or_default()
                        .insert(r.set, value(r, m));
                }
            }
            Ctx {
                net,
                cells: groups.into_iter().map(|(k, v)| (k, estimate(&v))).collect(),
                per_set,
            }
        })
        .collect()
}

fn show(e: Option<Estimate>, digits: usize) -> String {
    match e {
        None => "-".into(),
        Some(e) => {
            let (lo, hi) = e.ci95();
            if e.n >= 2 {
                format!("{:.digits$} ±{:.digits$}", e.mean, (hi - lo) / 2.0)
            } else {
                format!("{:.digits$}", e.mean)
            }
        }
    }
}

/// Tables 3-7 (and the link's packets and bytes) for one network.
pub fn render_tables(ctx: &Ctx, methods: &[Method]) -> String {
    let mut s = String::new();
    let get = |m, g, me| ctx.cells.get(&(m, g, me)).copied();
    let _ = writeln!(s, "=== {} ===", ctx.net);
    for (metric, title, paper) in PAPER {
        let unit = match metric {
            Metric::ServerCpu | Metric::ClientCpu => "ours: CPU ms per set of 100 files (user+system, getrusage), mean ±95% CI; paper: accumulated CPU utilization (~1 ms CPU per unit)",
            _ => "ours: ms, mean ±95% CI over the sets; paper: ms",
        };
        let _ = writeln!(s, "\n{title}\n  ({unit})");
        let _ = writeln!(
            s,
            "  {:<28} {:>14} {:>8} {:>14} {:>8} {:>14} {:>8}",
            "Transmission Methods", "4K ours", "paper", "16K ours", "paper", "32K ours", "paper"
        );
        for &me in methods {
            let _ = write!(s, "  {:<28}", me.label());
            for (gi, g) in GROUPS.iter().enumerate() {
                let p = match me {
                    Method::Http10 => format!("{}", paper[0][gi]),
                    Method::Http11 => format!("{}", paper[1][gi]),
                    Method::Objpack => format!("{}", paper[2][gi]),
                    _ => "-".into(),
                };
                let _ = write!(s, " {:>14} {:>8}", show(get(metric, *g, me), 1), p);
            }
            let _ = writeln!(s);
        }
    }
    // Table 7: relative to HTTP 1.0.
    let _ = writeln!(
        s,
        "\nTable 7 - Comparison relative to HTTP 1.0 (%; ours | paper)"
    );
    let _ = writeln!(
        s,
        "  {:<28} {:>14} {:>14} {:>14}",
        "", "4KB", "16KB", "32KB"
    );
    for (metric, name, paper) in [
        (Metric::ServerCpu, "Server CPU Utilization", PAPER[0].2),
        (Metric::ServerTime, "Server Response Time", PAPER[1].2),
        (Metric::ClientCpu, "Client CPU Utilization", PAPER[2].2),
        (Metric::ClientTime, "Client Response Time", PAPER[3].2),
    ] {
        let _ = writeln!(s, "  {name}");
        for &me in methods.iter().filter(|m| **m != Method::Http10) {
            let _ = write!(s, "  {:<28}", me.label());
            for (gi, g) in GROUPS.iter().enumerate() {
                let ours = match (get(metric, *g, me), get(metric, *g, Method::Http10)) {
                    (Some(a), Some(b)) if b.mean > 0.0 => format!("{:.0}", 100.0 * a.mean / b.mean),
                    _ => "-".into(),
                };
                let row = match me {
                    Method::Http11 => Some(1),
                    Method::Objpack => Some(2),
                    _ => None,
                };
                let p = row
                    .map(|r| format!("{:.0}", 100.0 * paper[r][gi] / paper[0][gi]))
                    .unwrap_or_else(|| "-".into());
                let _ = write!(s, " {:>14}", format!("{ours} | {p}"));
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(
        s,
        "\nOn the link (both directions, per set of 100 files; the paper's earlier LCN paper reported these)"
    );
    let _ = writeln!(
        s,
        "  {:<28} {:>12} {:>14} {:>12} {:>14} {:>12} {:>14}",
        "", "4K packets", "4K bytes", "16K packets", "16K bytes", "32K packets", "32K bytes"
    );
    for &me in methods {
        let _ = write!(s, "  {:<28}", me.label());
        for g in GROUPS {
            let _ = write!(
                s,
                " {:>12} {:>14}",
                show(get(Metric::Packets, g, me), 0),
                show(get(Metric::Bytes, g, me), 0)
            );
        }
        let _ = writeln!(s);
    }
    s
}

#[derive(Serialize)]
struct ResultsJson<'a> {
    made_by: String,
    command: &'a [String],
    started_utc: &'a str,
    seed: u64,
    wall_s: f64,
    group_sizes: Vec<serde_json::Value>,
    rows: &'a [RunRow],
    claims: &'a [Claim],
}

/// Writes results.json, results.csv, report.txt and report.html; returns
/// the text report.
pub fn write(
    dir: &Path,
    out: &ObjpackOutcome,
    methods: &[Method],
    command: &[String],
    started_utc: &str,
    seed: u64,
) -> Result<String> {
    let ctxs = contexts(&out.rows);
    let mut text = String::new();
    let _ = writeln!(
        text,
        "pagewire bench --suite objpack: Fujinoki, Sanjay, Shah, \"Web File Transmission by Object Packaging\"\n\
         command: {}\nstarted: {started_utc}  wall: {:.0} s  seed: {seed}",
        command.join(" "),
        out.wall_s
    );
    let _ = writeln!(text, "File groups (100 files per set; sizes in bytes):");
    for (kb, lo, med, hi) in &out.group_sizes {
        let _ = writeln!(text, "  {kb} KB mean: min {lo}, median {med}, max {hi}");
    }
    for ctx in &ctxs {
        text.push('\n');
        text.push_str(&render_tables(ctx, methods));
    }
    fs::create_dir_all(dir)?;
    let mut json = ResultsJson {
        made_by: format!("pagewire {} bench --suite objpack", env!("CARGO_PKG_VERSION")),
        command,
        started_utc,
        seed,
        wall_s: out.wall_s,
        group_sizes: out
            .group_sizes
            .iter()
            .map(|(kb, lo, med, hi)| serde_json::json!({"mean_kb": kb, "min": lo, "median": med, "max": hi}))
            .collect(),
        rows: &out.rows,
        claims: &[],
    };
    // Judged from the results as written, as `pagewire claims` reads them.
    let judged = crate::claims::judge_serialized(&json, Suite::Objpack);
    text.push('\n');
    text.push_str(&judged.render());
    text.push_str(&super::claims::render_self_test());
    json.claims = &judged.claims;
    fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(&json)?,
    )
    .context("write results.json")?;
    let mut csv = csv::Writer::from_path(dir.join("results.csv"))?;
    csv.write_record([
        "net",
        "group_kb",
        "set",
        "method",
        "server_response_ms",
        "server_cpu_ms",
        "client_response_ms",
        "client_cpu_ms",
        "client_first_file_ms",
        "packets",
        "bytes",
        "connections",
        "retransmissions",
    ])?;
    for r in &out.rows {
        csv.write_record([
            r.net.clone(),
            r.group_kb.to_string(),
            r.set.to_string(),
            r.method.name().to_string(),
            format!("{:.3}", r.server.response_ms),
            format!("{:.3}", r.server.cpu_ms),
            format!("{:.3}", r.client.response_ms),
            format!("{:.3}", r.client.cpu_ms),
            format!("{:.3}", r.client.first_file_ms),
            r.packets.to_string(),
            r.bytes.to_string(),
            r.connections.to_string(),
            r.retransmissions.to_string(),
        ])?;
    }
    csv.flush()?;
    fs::write(dir.join("report.txt"), &text)?;
    let esc = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    fs::write(
        dir.join("report.html"),
        format!(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pagewire objpack suite</title></head>\n\
             <body><h1>Object packaging (Fujinoki, Sanjay, Shah) - pagewire bench --suite objpack</h1>\n<pre>{esc}</pre></body></html>\n"
        ),
    )?;
    Ok(text)
}
