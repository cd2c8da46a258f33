//! Small tables for bench options that add a measurement to the runs:
//! range mode (`--range-first`: time to all images' metadata) and link
//! compression (`--link-compress`: octets on the serial line).

use std::fmt::Write as _;

use crate::claims::spec::Estimate;
use crate::model::{Net, RunRecord, Strategy, Test, Tuning};

fn cell(runs: &[RunRecord], net: Net, st: Strategy, test: Test) -> Vec<&RunRecord> {
    runs.iter()
        .filter(|r| {
            r.ok()
                && !r.is_sweep()
                && r.net == net
                && r.strategy == st
                && r.test == test
                && r.robot.tuning == Tuning::Tuned
        })
        .collect()
}

fn show(e: &Estimate, digits: usize) -> String {
    if e.n > 1 {
        let (lo, hi) = e.ci95();
        format!(
            "{:.*} [{:.*}, {:.*}]",
            digits, e.mean, digits, lo, digits, hi
        )
    } else {
        format!("{:.*}", digits, e.mean)
    }
}

/// Range mode: per network and pipelining strategy (first-time retrieval),
/// seconds until the first part of every image was in, and in all.
pub fn range_table(runs: &[RunRecord], first_bytes: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Range mode (\"poor man's multiplexing\"): first {first_bytes} bytes of every image, then the rest; on revalidation each conditional GET carries the range and If-Range; means [95% CI]"
    );
    let _ = writeln!(
        s,
        "  {:<4} {:<17} {:<10} {:>4} {:>26} {:>26} {:>7} {:>9} {:>8} {:>9}",
        "net",
        "strategy",
        "test",
        "n",
        "all metadata s",
        "total s",
        "share",
        "requests",
        "req B",
        "packets"
    );
    for net in Net::ALL {
        for st in Strategy::PAPER_001 {
            for test in Test::ALL {
                let c = cell(runs, net, st, test);
                let meta: Vec<f64> = c.iter().filter_map(|r| r.metadata_s).collect();
                if meta.is_empty() {
                    continue;
                }
                let total: Vec<f64> = c.iter().map(|r| r.elapsed_s).collect();
                let (m, t) = (Estimate::of(&meta), Estimate::of(&total));
                let n = c.len() as f64;
                let req = c.iter().map(|r| f64::from(r.requests)).sum::<f64>() / n;
                let req_b = c.iter().map(|r| r.mean_request_bytes).sum::<f64>() / n;
                let pa = c.iter().map(|r| r.packets_total as f64).sum::<f64>() / n;
                let _ = writeln!(
                    s,
                    "  {:<4} {:<17} {:<10} {:>4} {:>26} {:>26} {:>7.2} {:>9.0} {:>8.0} {:>9.1}",
                    net.name(),
                    st.name(),
                    test.name(),
                    c.len(),
                    show(&m, 3),
                    show(&t, 3),
                    m.mean / t.mean,
                    req,
                    req_b,
                    pa
                );
            }
        }
    }
    s
}

/// Link compression: IP bytes (the paper's Bytes) against the octets on
/// the serial line, per network, strategy and test.
pub fn line_table(runs: &[RunRecord], compression: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Link compression {compression}: IP bytes (Bytes) vs octets on the serial line, means over the repetitions [95% CI of Sec]"
    );
    let _ = writeln!(
        s,
        "  {:<4} {:<17} {:<11} {:>7} {:>9} {:>9} {:>6} {:>24}",
        "net", "strategy", "test", "Pa", "IP bytes", "line", "line/IP", "Sec"
    );
    for net in Net::ALL {
        for st in Strategy::PAPER_001 {
            for test in Test::ALL {
                let c = cell(runs, net, st, test);
                if c.is_empty() {
                    continue;
                }
                let mean =
                    |f: fn(&RunRecord) -> f64| c.iter().map(|r| f(r)).sum::<f64>() / c.len() as f64;
                let pa = mean(|r| r.packets_total as f64);
                let ip = mean(|r| r.bytes_total as f64);
                let line = mean(|r| r.line_bytes_total as f64);
                let sec = Estimate::of(&c.iter().map(|r| r.elapsed_s).collect::<Vec<_>>());
                let _ = writeln!(
                    s,
                    "  {:<4} {:<17} {:<11} {:>7.1} {:>9.0} {:>9.0} {:>6.2} {:>24}",
                    net.name(),
                    st.name(),
                    test.name(),
                    pa,
                    ip,
                    line,
                    line / ip,
                    show(&sec, 2)
                );
            }
        }
    }
    s
}

/// The WAN RTT sweep (`--rtt-sweep`): per test and RTT, HTTP/1.0's and
/// pipelining's seconds (means [95% CI]) and their ratio; empty without
/// sweep runs.
pub fn rtt_sweep_table(runs: &[RunRecord]) -> String {
    let mut rtts: Vec<f64> = runs.iter().filter_map(|r| r.sweep_rtt_ms).collect();
    rtts.sort_by(f64::total_cmp);
    rtts.dedup();
    if rtts.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "WAN round-trip-time sweep (WAN profile at each RTT; seconds, means [95% CI]): \"the higher the latency, the better HTTP/1.1 performed\""
    );
    let _ = writeln!(
        s,
        "  {:<11} {:>8} {:>22} {:>22} {:>16}",
        "test", "RTT ms", "http10 s", "pipeline s", "pipeline/http10"
    );
    for test in Test::ALL {
        for &rtt in &rtts {
            let est = |st: Strategy| {
                let xs: Vec<f64> = runs
                    .iter()
                    .filter(|r| {
                        r.ok() && r.sweep_rtt_ms == Some(rtt) && r.strategy == st && r.test == test
                    })
                    .map(|r| r.elapsed_s)
                    .collect();
                (!xs.is_empty()).then(|| Estimate::of(&xs))
            };
            let (h, p) = (est(Strategy::Http10), est(Strategy::Pipeline));
            if h.is_none() && p.is_none() {
                continue;
            }
            let f = |e: &Option<Estimate>| e.as_ref().map_or("-".to_string(), |e| show(e, 3));
            let ratio = match (&h, &p) {
                (Some(h), Some(p)) => (p.interval() / h.interval()).show(2),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "  {:<11} {:>8} {:>22} {:>22} {:>16}",
                test.name(),
                crate::claims::spec::fmt_num(rtt),
                f(&h),
                f(&p),
                ratio
            );
        }
    }
    s
}
