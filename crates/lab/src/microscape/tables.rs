//! Terminal tables in the layout of paper 001 Tables 3-9.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::reference::{self, Server, TABLE_3};
use crate::model::{Net, Strategy, Test};
use crate::stats::{Key, MeanSd, Summary};

fn fmt_ms(m: &MeanSd, decimals: usize) -> String {
    if m.n == 0 || m.mean.is_nan() {
        return "-".into();
    }
    if m.n == 1 {
        return format!("{:.*}", decimals, m.mean);
    }
    format!("{:.*}±{:.*}", decimals, m.mean, decimals, m.sd)
}

fn sec_decimals(net: Net) -> usize {
    if net == Net::Ppp {
        1
    } else {
        2
    }
}

/// The rows of a network's tables: paper 001's four, then any other
/// strategy that has runs on `net` (e.g. a browser), as extra rows.
pub fn row_strategies(net: Net, summaries: &BTreeMap<Key, Summary>) -> Vec<Strategy> {
    let mut rows = Strategy::PAPER_001.to_vec();
    for k in summaries.keys() {
        if k.0 == net && !rows.contains(&k.1) {
            rows.push(k.1);
        }
    }
    rows
}

/// One network's table: for each strategy, our row (mean±sd) and the
/// paper's Apache and Jigsaw rows, first-time and cache validation side by
/// side as in Tables 4-9. Bytes is the paper's unit, TCP payload ("-" for
/// runs made before it was recorded); IP bytes (headers included) beside
/// it, the paper's from its Bytes + 40·Pa (its %ov is 40·Pa / (Bytes +
/// 40·Pa) in every cell).
pub fn network_table(net: Net, summaries: &BTreeMap<Key, Summary>, server_label: &str) -> String {
    network_table_with_model(net, summaries, server_label, None)
}

/// [`network_table`] with the expected-time model's rows under each
/// measured row: predicted Pa, payload, IP bytes and Sec, and the
/// physical lower bound on Sec ([`crate::expect`]).
pub fn network_table_with_model(
    net: Net,
    summaries: &BTreeMap<Key, Summary>,
    server_label: &str,
    model: Option<&crate::expect::eval::ModelEval>,
) -> String {
    let mut s = String::new();
    match (
        reference::table_number(Server::Jigsaw, net),
        reference::table_number(Server::Apache, net),
    ) {
        (Some(tj), Some(ta)) => {
            let _ = writeln!(
                s,
                "{} — layout of paper 001 Tables {tj} (Jigsaw) and {ta} (Apache)",
                net.describe()
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "{} — layout of paper 001 Tables 4-9, without paper values",
                net.describe()
            );
        }
    }
    let w = [40usize, 13, 15, 15, 11, 9];
    let span = w[1] + w[2] + w[3] + w[4] + w[5] + 4;
    let _ = writeln!(
        s,
        "{:<w0$} {:^span$} | {:^span$}",
        "",
        Test::First.paper_label(),
        Test::Revalidate.paper_label(),
        w0 = w[0],
    );
    let head = format!(
        "{:>w1$} {:>w2$} {:>w3$} {:>w4$} {:>w5$}",
        "Pa",
        "Bytes",
        "IP bytes",
        "Sec",
        "%ov",
        w1 = w[1],
        w2 = w[2],
        w3 = w[3],
        w4 = w[4],
        w5 = w[5]
    );
    let _ = writeln!(s, "{:<w0$} {head} | {head}", "", w0 = w[0]);
    let _ = writeln!(s, "{}", "-".repeat(w[0] + 2 * span + 4));
    let mut browsers_shown = false;
    for st in row_strategies(net, summaries) {
        let mine: Vec<Option<&Summary>> = Test::ALL
            .iter()
            .map(|t| summaries.get(&(net, st, *t)))
            .collect();
        let has_ref = reference::lookup(Server::Apache, net, st, Test::First).is_some();
        if mine.iter().all(Option::is_none) && !has_ref {
            continue;
        }
        let _ = writeln!(s, "{}", st.paper_label());
        // Our row.
        let mut line = format!("  {:<w0$}", server_label, w0 = w[0] - 2);
        for (i, t) in Test::ALL.iter().enumerate() {
            if i == 1 {
                line.push_str(" |");
            }
            match mine[i] {
                Some(m) if m.runs_ok > 0 => {
                    let _ = write!(
                        line,
                        " {:>w1$} {:>w2$} {:>w3$} {:>w4$} {:>w5$}",
                        fmt_ms(&m.packets, 1),
                        fmt_ms(&m.payload, 0),
                        fmt_ms(&m.bytes, 0),
                        fmt_ms(&m.seconds, sec_decimals(net)),
                        fmt_ms(&m.overhead_pct, 1),
                        w1 = w[1],
                        w2 = w[2],
                        w3 = w[3],
                        w4 = w[4],
                        w5 = w[5]
                    );
                }
                Some(m) => {
                    let _ = write!(
                        line,
                        " {:>span$}",
                        format!("all {} runs failed", m.runs_failed),
                    );
                }
                None => {
                    let _ = write!(line, " {:>span$}", "not run");
                }
            }
            let _ = t;
        }
        let req: Vec<String> = mine
            .iter()
            .flatten()
            .filter(|m| m.request_bytes.n > 0)
            .map(|m| format!("{:.0}", m.request_bytes.mean))
            .collect();
        if !req.is_empty() {
            let _ = write!(line, "   req {} B", req.join("/"));
        }
        let _ = writeln!(s, "{}", line.trim_end());
        if let Some(m) = model {
            s.push_str(&model_rows(net, st, m, &w));
        }
        // The paper's rows: Tables 10-11's browsers (PPP only) under the
        // first browser row; none for other extra rows.
        if st.is_browser() && !browsers_shown && net.in_paper() {
            browsers_shown = true;
            s.push_str(&paper_browser_rows(net, &w));
        }
        if !Strategy::PAPER_001.contains(&st) {
            continue;
        }
        for server in [Server::Apache, Server::Jigsaw] {
            // Paper 001 measured its three networks only.
            let Some(table) = reference::table_number(server, net) else {
                continue;
            };
            let mut line = format!(
                "  {:<w0$}",
                format!("paper {} (T{table})", server.name()),
                w0 = w[0] - 2
            );
            for (i, t) in Test::ALL.iter().enumerate() {
                if i == 1 {
                    line.push_str(" |");
                }
                match reference::lookup(server, net, st, *t) {
                    Some(r) => {
                        let _ = write!(
                            line,
                            " {:>w1$.1} {:>w2$.0} {:>w3$.0} {:>w4$.*} {:>w5$.1}",
                            r.packets,
                            r.bytes,
                            r.bytes + 40.0 * r.packets,
                            sec_decimals(net),
                            r.seconds,
                            r.overhead_pct,
                            w1 = w[1],
                            w2 = w[2],
                            w3 = w[3],
                            w4 = w[4],
                            w5 = w[5]
                        );
                    }
                    None => {
                        let _ = write!(line, " {:>span$}", "not measured in the paper");
                    }
                }
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    s
}

/// The model's two rows of one strategy: predicted and the lower bound.
fn model_rows(
    net: Net,
    st: Strategy,
    m: &crate::expect::eval::ModelEval,
    w: &[usize; 6],
) -> String {
    let cells: Vec<Option<&crate::expect::eval::CellEval>> = Test::ALL
        .iter()
        .map(|t| {
            m.cells
                .iter()
                .find(|c| c.net == net && c.strategy == st && c.test == *t)
        })
        .collect();
    if cells.iter().all(Option::is_none) {
        return String::new();
    }
    let span = w[1] + w[2] + w[3] + w[4] + w[5] + 4;
    let mut pred = format!("  {:<w0$}", "model (last column: Sec error)", w0 = w[0] - 2);
    let mut bound = format!("  {:<w0$}", "lower bound (line rate + RTTs)", w0 = w[0] - 2);
    for (i, c) in cells.iter().enumerate() {
        if i == 1 {
            pred.push_str(" |");
            bound.push_str(" |");
        }
        match c {
            Some(c) => {
                let p = &c.prediction.predicted;
                let _ = write!(
                    pred,
                    " {:>w1$.0} {:>w2$.0} {:>w3$.0} {:>w4$.*} {:>w5$}",
                    p.packets,
                    p.payload,
                    p.bytes,
                    sec_decimals(net),
                    p.seconds,
                    fmt_err(c.error_pct.seconds),
                    w1 = w[1],
                    w2 = w[2],
                    w3 = w[3],
                    w4 = w[4],
                    w5 = w[5]
                );
                let _ = write!(
                    bound,
                    " {:>w1$} {:>w2$} {:>w3$} {:>w4$.*} {:>w5$}",
                    "",
                    "",
                    "",
                    sec_decimals(net),
                    c.prediction.lower_bound_s,
                    "",
                    w1 = w[1],
                    w2 = w[2],
                    w3 = w[3],
                    w4 = w[4],
                    w5 = w[5]
                );
            }
            None => {
                let _ = write!(pred, " {:>span$}", "-");
                let _ = write!(bound, " {:>span$}", "-");
            }
        }
    }
    format!("{}\n{}\n", pred.trim_end(), bound.trim_end())
}

/// A model error in the %ov column's place, marked as an error of Sec.
fn fmt_err(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.0}%")
    } else {
        "-".into()
    }
}

/// The paper's browser rows (Tables 10-11: Netscape Navigator and Internet
/// Explorer of 1997, Jigsaw and Apache, 3 runs each) in the layout of
/// [`network_table`]; they exist for PPP only, elsewhere one line says so.
fn paper_browser_rows(net: Net, w: &[usize; 6]) -> String {
    let mut s = String::new();
    if net != Net::Ppp {
        let _ = writeln!(
            s,
            "  {:<w0$} (the paper measured browsers on PPP only: Tables 10-11)",
            "paper browsers",
            w0 = w[0] - 2
        );
        return s;
    }
    for server in [Server::Apache, Server::Jigsaw] {
        for browser in ["Netscape Navigator", "Internet Explorer"] {
            let rows: Vec<&reference::BrowserRow> = reference::TABLES_10_11
                .iter()
                .filter(|r| r.server == server && r.browser == browser)
                .collect();
            let Some(first) = rows.first() else {
                continue;
            };
            let mut line = format!(
                "  {:<w0$}",
                format!("paper {browser}, {} (T{})", server.name(), first.table),
                w0 = w[0] - 2
            );
            for (i, t) in Test::ALL.iter().enumerate() {
                if i == 1 {
                    line.push_str(" |");
                }
                if let Some(r) = rows.iter().find(|r| r.test == *t) {
                    let _ = write!(
                        line,
                        " {:>w1$.1} {:>w2$.0} {:>w3$.0} {:>w4$.1} {:>w5$.1}",
                        r.packets,
                        r.bytes,
                        r.bytes + 40.0 * r.packets,
                        r.seconds,
                        r.overhead_pct,
                        w1 = w[1],
                        w2 = w[2],
                        w3 = w[3],
                        w4 = w[4],
                        w5 = w[5]
                    );
                }
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    s
}

/// Table 3's socket and packet-direction columns for our runs of one
/// network and test, with the paper's Table 3 (LAN revalidation, initial
/// untuned implementation) for reference.
pub fn sockets_table(
    net: Net,
    test: Test,
    summaries: &BTreeMap<Key, Summary>,
    server_label: &str,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Sockets and packets per direction — {} / {} (layout of Table 3; tuned robot, the paper's Table 3 is beside our initial-robot runs)",
        net.name().to_uppercase(),
        test.paper_label(),
    );
    let _ = writeln!(
        s,
        "  {:<46} {:>10} {:>10} {:>12} {:>12} {:>10} {:>9}",
        "", "max socks", "tot socks", "pkts c->s", "pkts s->c", "pkts tot", "Sec"
    );
    for st in row_strategies(net, summaries) {
        if let Some(m) = summaries.get(&(net, st, test)) {
            if m.runs_ok > 0 {
                let _ = writeln!(
                    s,
                    "  {:<46} {:>10.0} {:>10.1} {:>12.1} {:>12.1} {:>10.1} {:>9.2}",
                    format!("{} ({server_label})", st.paper_label()),
                    m.sockets_max.mean,
                    m.sockets_total.mean,
                    m.packets_client_to_server.mean,
                    m.packets_server_to_client.mean,
                    m.packets.mean,
                    m.seconds.mean
                );
            }
        }
    }
    s
}

/// Table 3: the paper's initial, untuned robot (1 s flush timer, no
/// explicit flush, GET + HEAD revalidation on every strategy) as our own
/// runs, beside the paper's Table 3 (Jigsaw, LAN, cache revalidation).
pub fn table3(net: Net, initial: &BTreeMap<Key, Summary>, server_label: &str) -> String {
    let mut s = String::new();
    if !initial.keys().any(|k| k.0 == net) {
        return s;
    }
    let _ = writeln!(
        s,
        "Table 3 — initial (untuned) robot: 1 s flush timer, no explicit flush, 1 GET + 42 HEAD revalidation — {}",
        net.name().to_uppercase()
    );
    let _ = writeln!(
        s,
        "  {:<50} {:>9} {:>9} {:>10} {:>10} {:>12} {:>9} {:>7}",
        "", "max socks", "tot socks", "pkts c->s", "pkts s->c", "pkts tot", "Sec", "req B"
    );
    for test in Test::ALL {
        for st in Strategy::PAPER_001 {
            if let Some(m) = initial.get(&(net, st, test)) {
                if m.runs_ok > 0 {
                    let _ = writeln!(
                        s,
                        "  {:<50} {:>9.0} {:>9.1} {:>10.1} {:>10.1} {:>12} {:>9} {:>7.0}",
                        format!("{} {} ({server_label})", st.paper_label(), test.name()),
                        m.sockets_max.mean,
                        m.sockets_total.mean,
                        m.packets_client_to_server.mean,
                        m.packets_server_to_client.mean,
                        fmt_ms(&m.packets, 1),
                        fmt_ms(&m.seconds, 2),
                        m.request_bytes.mean
                    );
                } else {
                    let _ = writeln!(
                        s,
                        "  {:<50} all {} runs failed",
                        format!("{} {}", st.paper_label(), test.name()),
                        m.runs_failed
                    );
                }
            }
            if net == Net::Lan && test == Test::Revalidate {
                if let Some(r) = TABLE_3.iter().find(|r| r.strategy == st) {
                    let _ = writeln!(
                        s,
                        "  {:<50} {:>9} {:>9} {:>10} {:>10} {:>12} {:>9.2} {:>7}",
                        format!("{} revalidate (paper T3, Jigsaw)", st.paper_label()),
                        r.max_sockets,
                        r.total_sockets,
                        r.packets_client_to_server,
                        r.packets_server_to_client,
                        r.packets_total,
                        r.seconds,
                        "~190"
                    );
                }
            }
        }
    }
    s
}

/// Bytes as paper 001 counted them: its Bytes column is transport payload
/// only (in every cell of Tables 4-9 its %ov equals 40·Pa / (Bytes +
/// 40·Pa)), as is the main tables' Bytes column. This table puts our
/// payload (mean over the good runs) beside the paper's Bytes. Empty when
/// the runs predate the payload counter.
pub fn payload_table(net: Net, runs: &[crate::model::RunRecord]) -> String {
    let mut s = String::new();
    let mean = |st: Strategy, t: Test| {
        let m = MeanSd::of(
            runs.iter()
                .filter(|r| {
                    r.net == net && r.strategy == st && r.test == t && r.ok() && !r.is_sweep()
                })
                .filter(|r| r.robot.tuning == crate::model::Tuning::Tuned)
                .filter(|r| r.payload_bytes_total > 0)
                .map(|r| r.payload_bytes_total as f64),
        );
        (m.n > 0).then_some(m.mean)
    };
    let mut rows = Vec::new();
    for st in Strategy::PAPER_001 {
        for t in Test::ALL {
            let Some(ours) = mean(st, t) else { continue };
            let paper = |srv| reference::lookup(srv, net, st, t).map(|r| r.bytes);
            rows.push((st, t, ours, paper(Server::Apache), paper(Server::Jigsaw)));
        }
    }
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "Bytes as the paper counted them ({}: transport payload, no IP/TCP headers; ours = mean over good runs)",
        net.name().to_uppercase()
    );
    let _ = writeln!(
        s,
        "  {:<40} {:>11} {:>11} {:>11} {:>9}",
        "", "ours", "Apache", "Jigsaw", "ours/Ap"
    );
    for (st, t, ours, ap, jg) in rows {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
        let ratio = ap.map_or("-".to_string(), |a| format!("{:.2}", ours / a));
        let _ = writeln!(
            s,
            "  {:<40} {:>11.0} {:>11} {:>11} {:>9}",
            format!("{} {}", st.paper_label(), t.paper_label()),
            ours,
            f(ap),
            f(jg),
            ratio
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browser_runs() -> Vec<crate::model::RunRecord> {
        let path = format!(
            "{}/../../docs/bench-results/2026-11-25-browsers/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        serde_json::from_value(v["runs"].clone()).unwrap()
    }

    /// On PPP the paper's Navigator and Explorer rows (Tables 10-11) follow
    /// the first Chromium row; on the LAN one line says the paper has none.
    #[test]
    fn paper_browser_rows_beside_chromium() {
        let runs = browser_runs();
        let sums = crate::stats::summarize(&runs);
        let ppp = network_table(Net::Ppp, &sums, "measured (pagewire)");
        let chromium = ppp
            .find("Chromium")
            .or_else(|| ppp.find("chromium"))
            .unwrap();
        let nav = ppp
            .find("paper Netscape Navigator, Apache (T11)")
            .expect(&ppp);
        assert!(nav > chromium, "{ppp}");
        // Table 11, Navigator: 334.3 packets, 199243 bytes first-time.
        let line = ppp[nav..].lines().next().unwrap();
        assert!(line.contains("334.3") && line.contains("199243"), "{line}");
        assert_eq!(ppp.matches("paper Internet Explorer").count(), 2, "{ppp}");
        let lan = network_table(Net::Lan, &sums, "measured (pagewire)");
        assert!(lan.contains("browsers on PPP only"), "{lan}");
        assert!(!lan.contains("paper Netscape"), "{lan}");
    }
}
