//! The paper's sentences about Figures 2 and 3 (Padmanabhan & Mogul,
//! "Improving HTTP Latency", section 3.2) as claims of the shared engine,
//! judged on the sweep's points. Intervals are over the trials of a point
//! (95 %, Student t); the figures plot the best trial.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::claims::bands::{self, source as src};
use crate::claims::spec::{
    decide_all, Band, Claim, ClaimKind, ClaimSpec, Estimate, Measured, Quantity,
};
use crate::claims::{Judged, Suite};

use super::{LEN_20K, LEN_2K};

const SRC: &str = "section 3.2";

/// One point as results.json records it.
#[derive(Clone, Debug, Deserialize)]
pub struct P {
    pub config: String,
    pub buffer: String,
    pub length: u64,
    pub throughput_trials: E,
    /// The window the client advertised (TCP_INFO), when recorded.
    #[serde(default)]
    pub window_bytes: Option<u64>,
}

/// `{mean, sd, n}`.
#[derive(Clone, Copy, Debug, Deserialize)]
pub struct E {
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::claims::spec::nan_if_null")]
    pub sd: f64,
    pub n: u32,
}

impl E {
    fn est(self) -> Estimate {
        Estimate {
            mean: self.mean,
            sd: self.sd,
            n: self.n,
        }
    }
}

/// The measured points of one sweep, and the remote link's queue.
pub struct Ctx {
    pub points: Vec<P>,
    /// Drop-tail queue of the remote (`t1`) link, packets.
    pub remote_queue_packets: u64,
    /// Where that number comes from.
    pub queue_source: String,
}

/// The remote path's bandwidth-delay product: T1 (1.544 Mbit/s) over 70 ms.
pub const REMOTE_BDP_BYTES: f64 = 1_544_000.0 / 8.0 * 0.070;

/// The buffer whose plateau is "the throughput available with a reasonable
/// window size" (see [`remote_20k`]).
pub const REASONABLE_BUFFER: &str = "8K";

/// The remote link's queue in bytes must be below this for the paper's
/// queue-overflow mechanism to act on transfers of about 500 KB: a queue
/// that holds the first 512 KB of a transfer cannot drop any of them.
pub const QUEUE_LIMIT_BYTES: u64 = 512 * 1024;

impl Ctx {
    fn at(&self, c: &str, b: &str, len: u64) -> Option<&P> {
        self.points
            .iter()
            .find(|p| p.config == c && p.buffer == b && p.length == len)
    }

    /// The best-case point of a configuration: the highest mean throughput.
    fn best(&self, c: &str) -> Option<&P> {
        self.points.iter().filter(|p| p.config == c).max_by(|a, b| {
            a.throughput_trials
                .mean
                .total_cmp(&b.throughput_trials.mean)
        })
    }

    fn longest(&self, c: &str) -> Option<u64> {
        self.points
            .iter()
            .filter(|p| p.config == c)
            .map(|p| p.length)
            .max()
    }

    fn buffers(&self, c: &str) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for p in self.points.iter().filter(|p| p.config == c) {
            if !v.contains(&p.buffer) {
                v.push(p.buffer.clone());
            }
        }
        v
    }

    /// Can a congestion window limited by buffer `b` outgrow the router's
    /// queue with segments of `mss` bytes? Only when the window holds more
    /// packets than the path (its bandwidth-delay product) and the queue
    /// together; below that the receive window, not the queue, limits the
    /// flight and nothing is dropped. The default (autotuned) buffer always
    /// can. The window is the one the client advertised when recorded, else
    /// the label.
    fn window_outgrows_queue(&self, c: &str, b: &str, mss: u64) -> bool {
        let Some(bytes) = self.window_of(c, b) else {
            return true;
        };
        let wire = (mss + 40) as f64;
        let packets = (bytes / mss) as f64;
        packets > self.remote_queue_packets as f64 + REMOTE_BDP_BYTES / wire
    }

    /// The window of buffer `b` on configuration `c`, bytes (None: the
    /// kernel's default, unbounded here).
    fn window_of(&self, c: &str, b: &str) -> Option<u64> {
        let label = b
            .strip_suffix('K')
            .and_then(|k| k.parse::<u64>().ok())
            .map(|k| k * 1024)?;
        Some(
            self.points
                .iter()
                .filter(|p| p.config == c && p.buffer == b)
                .find_map(|p| p.window_bytes)
                .unwrap_or(label),
        )
    }

    /// Not testable when the queue holds the first 512 KB of a transfer.
    fn queue_precondition(&self) -> Option<String> {
        let bytes = self.remote_queue_packets * 1500;
        (bytes >= QUEUE_LIMIT_BYTES).then(|| {
            format!(
                "the remote link's drop-tail queue holds {} packets ({} KB; {}): it cannot overflow before 512 KB of a transfer are sent, so the paper's mechanism (the congestion window outgrowing the router's queue) cannot act here; needs a queue under 512 KB (e.g. the 8-64 packets of a 1994 router)",
                self.remote_queue_packets,
                bytes / 1024,
                self.queue_source
            )
        })
    }
}

/// Throughput at `len` (with the best-case point's buffer) over best case.
fn share_of_best(m: &mut Measured, q: usize, ctx: &Ctx, c: &str, len: u64) {
    let label = format!("{c} {len} B");
    let Some(best) = ctx.best(c) else {
        m.absent(label);
        return;
    };
    match ctx.at(c, &best.buffer, len) {
        Some(p) => m.push(
            q,
            format!("{label} (buffer {}, best {} B)", best.buffer, best.length),
            p.throughput_trials.est().interval() / best.throughput_trials.est().interval(),
        ),
        None => m.absent(label),
    }
}

fn remote_2k(ctx: &Ctx) -> Measured {
    let mut m = Measured::new();
    share_of_best(&mut m, 0, ctx, "remote", LEN_2K);
    m
}

/// "the throughput available with a reasonable window size", read as the
/// paper's Figure 2 does: the plateau of the 8K buffer's curve (its highest
/// mean throughput over the lengths), and the 20 KB transfer on that curve.
fn remote_20k(ctx: &Ctx) -> Measured {
    let c = "remote";
    let b = REASONABLE_BUFFER;
    let plateau = ctx
        .points
        .iter()
        .filter(|p| p.config == c && p.buffer == b)
        .max_by(|x, y| {
            x.throughput_trials
                .mean
                .total_cmp(&y.throughput_trials.mean)
        });
    let mut m = Measured::new();
    match (ctx.at(c, b, LEN_20K), plateau) {
        (Some(p), Some(top)) => m.push(
            0,
            format!("{c} {LEN_20K} B, buffer {b} (plateau {} B)", top.length),
            p.throughput_trials.est().interval() / top.throughput_trials.est().interval(),
        ),
        _ => m.absent(format!("{c} {LEN_20K} B and its plateau with buffer {b}")),
    }
    m
}

fn small_window(ctx: &Ctx) -> Measured {
    let c = "remote";
    let (Some(best), Some(long)) = (ctx.best(c), ctx.longest(c)) else {
        return Measured::missing("remote points");
    };
    let small = ctx
        .buffers(c)
        .into_iter()
        .filter_map(|b| {
            b.strip_suffix('K')
                .and_then(|k| k.parse::<u32>().ok())
                .map(|k| (k, b.clone()))
        })
        .min();
    let Some((_, small)) = small else {
        return Measured::missing("remote with a fixed buffer size");
    };
    let mut m = Measured::new();
    match (ctx.at(c, &small, long), ctx.at(c, &best.buffer, long)) {
        (Some(s), Some(b)) => m.push(
            0,
            format!("remote {long} B: buffer {small} / buffer {}", best.buffer),
            s.throughput_trials.est().interval() / b.throughput_trials.est().interval(),
        ),
        _ => m.absent(format!("remote {long} B")),
    }
    m
}

/// At every buffer whose window can outgrow the queue (the paper's
/// mechanism: "the congestion window becomes larger than the router's
/// queue limit"): the longest transfer against 512 KB. Buffers whose
/// window the path and the queue hold are window-limited: no cell.
fn decline_500k(ctx: &Ctx) -> Measured {
    if let Some(why) = ctx.queue_precondition() {
        return Measured::not_testable(why);
    }
    let c = "remote";
    let Some(long) = ctx.longest(c) else {
        return Measured::missing("remote points");
    };
    if long < 1 << 20 {
        return Measured::missing("remote transfers of 1 MB or more");
    }
    let mut m = Measured::new();
    let mut held = Vec::new();
    for b in ctx.buffers(c) {
        if !ctx.window_outgrows_queue(c, &b, 1460) {
            held.push(b);
            continue;
        }
        match (ctx.at(c, &b, 512 * 1024), ctx.at(c, &b, long)) {
            (Some(mid), Some(end)) => m.push(
                0,
                format!("remote, buffer {b}: {long} B / 512 KB"),
                end.throughput_trials.est().interval() / mid.throughput_trials.est().interval(),
            ),
            _ => m.absent(format!("remote, buffer {b}, 512 KB and {long} B")),
        }
    }
    if m.cells.is_empty() && m.missing.is_empty() {
        return Measured::not_testable(format!(
            "no buffer's window can outgrow the {}-packet queue (the path holds {:.0} B): every curve is window-limited",
            ctx.remote_queue_packets, REMOTE_BDP_BYTES
        ));
    }
    if !held.is_empty() {
        m = m.with_note(format!(
            "window-limited, not covered (the path and the {}-packet queue hold their windows): {}",
            ctx.remote_queue_packets,
            held.join(", ")
        ));
    }
    m
}

/// MSS 1460 over MSS 536 at the longest transfer, at every buffer whose
/// window in 536-byte segments can outgrow the queue (where "fewer packets
/// for the same congestion window size" can matter); smaller buffers are
/// window-limited at both sizes and get no cell.
fn larger_mss(ctx: &Ctx) -> Measured {
    if let Some(why) = ctx.queue_precondition() {
        return Measured::not_testable(format!(
            "{why}; without queue overflow, MSS 1460 wins by header overhead alone (536/1460 headers predict 0.942), not by the sentence's fewer packets per window"
        ));
    }
    let Some(long) = ctx.longest("remote") else {
        return Measured::missing("remote points");
    };
    let mut m = Measured::new();
    let mut held = Vec::new();
    for b in ctx.buffers("remote") {
        if !ctx.window_outgrows_queue("remote-536", &b, 536) {
            held.push(b);
            continue;
        }
        match (ctx.at("remote", &b, long), ctx.at("remote-536", &b, long)) {
            (Some(a), Some(s)) => m.push(
                0,
                format!("buffer {b}, {long} B: MSS 1460 / MSS 536"),
                a.throughput_trials.est().interval() / s.throughput_trials.est().interval(),
            ),
            _ => m.absent(format!("remote-536 beside remote, buffer {b}")),
        }
    }
    if m.cells.is_empty() && m.missing.is_empty() {
        return Measured::not_testable(format!(
            "no buffer's window in 536-byte segments can outgrow the {}-packet queue: every curve is window-limited",
            ctx.remote_queue_packets
        ));
    }
    if !held.is_empty() {
        m = m.with_note(format!(
            "window-limited at MSS 536, not covered: {}",
            held.join(", ")
        ));
    }
    m
}

fn local_overhead(ctx: &Ctx) -> Measured {
    let mut m = Measured::new();
    share_of_best(&mut m, 0, ctx, "local", LEN_2K);
    share_of_best(&mut m, 1, ctx, "local", LEN_20K);
    m
}

const NINF: f64 = f64::NEG_INFINITY;

pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
    ClaimSpec {
        id: "conn-remote-2k",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "Figure 2 shows that, in the remote case, using a TCP connection to transfer only 2 Kbytes results in a throughput less than 10% of best-case value.",
        cells: "remote, 2 KB, at the best-case point's buffer",
        quantities: &[Quantity {
            name: "throughput at 2 KB / best case",
            band: Band::new(NINF, 0.10, "less than 10%", src::SENTENCE),
        }],
        kind: ClaimKind::Claim,
        rule: remote_2k,
    },
    ClaimSpec {
        id: "conn-remote-20k",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "Even a 20 Kbyte transfer achieves only about 50% of the throughput available with a reasonable window size.",
        cells: "remote, 20 KB, on the 8K buffer's curve, against that curve's plateau (the paper's \"reasonable window size\")",
        quantities: &[Quantity {
            name: "throughput at 20 KB / the 8K plateau",
            band: Band::new(0.375, 0.625, "only about 50%", src::ABOUT),
        }],
        kind: ClaimKind::Claim,
        rule: remote_20k,
    },
    ClaimSpec {
        id: "conn-small-window",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "The figure also shows that, for this 70 msec RTT, use of too small a window size limits the throughput no matter how many bytes are transferred.",
        cells: "remote, the longest transfer, smallest fixed buffer vs the best-case buffer",
        quantities: &[Quantity {
            name: "throughput with the smallest buffer / with the best buffer",
            band: Band::new(NINF, 1.0 - bands::SIGNIFICANT, "limits the throughput", src::SIGNIFICANT),
        }],
        kind: ClaimKind::Claim,
        rule: small_window,
    },
    ClaimSpec {
        id: "conn-decline-500k",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "We also note a significant decline in throughput over this path for transfers longer than about 500 Kbytes.",
        cells: "remote, every buffer whose window can outgrow the router queue, the longest transfer vs 512 KB",
        quantities: &[Quantity {
            name: "throughput at the longest length / at 512 KB",
            band: Band::new(NINF, 1.0 - bands::SIGNIFICANT, "a significant decline", src::SIGNIFICANT),
        }],
        kind: ClaimKind::Claim,
        rule: decline_500k,
    },
    ClaimSpec {
        id: "conn-larger-mss",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "The dotted curve shows that by using a larger maximum segment size (MSS) (and hence fewer packets for the same congestion window size), we can obtain somewhat better throughput for lengthy transfers.",
        cells: "remote vs remote-536, the longest transfer, every buffer whose window in 536-byte segments can outgrow the router queue",
        quantities: &[Quantity {
            name: "throughput MSS 1460 / MSS 536",
            band: Band::new(1.0 + bands::SOMEWHAT.0, 1.0 + bands::SOMEWHAT.1, "somewhat better", src::SOMEWHAT),
        }],
        kind: ClaimKind::Claim,
        rule: larger_mss,
    },
    ClaimSpec {
        id: "conn-local",
        aliases: &[],
        paper: "003",
        section: SRC,
        quote: "Even in the local case, per-connection overhead limits throughput to about 25% of capacity for transfers of 2 Kbytes, and about 70% of capacity for transfers of 20 Kbytes.",
        cells: "local, 2 KB and 20 KB, at the best-case point's buffer (capacity = the best case measured)",
        quantities: &[
            Quantity {
                name: "throughput at 2 KB / best case",
                band: Band::new(0.1875, 0.3125, "about 25%", src::ABOUT),
            },
            Quantity {
                name: "throughput at 20 KB / best case",
                band: Band::new(0.525, 0.875, "about 70%", src::ABOUT),
            },
        ],
        kind: ClaimKind::Claim,
        rule: local_overhead,
    },
];

/// Judge a context.
pub fn judge(ctx: &Ctx) -> Vec<Claim> {
    decide_all(CLAIMS, ctx)
}

/// Re-judge a conn-length results.json from its points.
pub fn judge_value(v: &Value) -> Result<Judged> {
    let all = crate::claims::records(v, "points")?;
    let (keep, out) = crate::claims::kept(all);
    let points = keep
        .into_iter()
        .enumerate()
        .map(|(i, p)| P::deserialize(p).map_err(|e| anyhow!("point {i} of results.json: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let plan = v.get("plan");
    // The plan's `router_queue` ({"packets": n} or {"bytes": n}); older
    // results named it `remote_queue_packets`.
    let as_packets = |q: &Value| {
        q.get("packets")
            .and_then(Value::as_u64)
            .or_else(|| q.get("bytes").and_then(Value::as_u64).map(|b| b / 1500))
    };
    let recorded = plan.and_then(|p| {
        p.get("router_queue")
            .and_then(as_packets)
            .or_else(|| p.get("remote_queue_packets").and_then(Value::as_u64))
    });
    let (remote_queue_packets, queue_source) = match recorded {
        Some(q) => (q, "as results.json records it".to_string()),
        None => (
            match pagewire_link::config::DEFAULT_QUEUE {
                pagewire_link::QueueLimit::Packets(n) => n as u64,
                pagewire_link::QueueLimit::Bytes(b) => (b / 1500) as u64,
            },
            "results.json records none: the t1 profile's default queue".to_string(),
        ),
    };
    let ctx = Ctx {
        points,
        remote_queue_packets,
        queue_source,
    };
    Ok(Judged::new(Suite::ConnLength, all.len(), out, judge(&ctx)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Verdict;

    fn p(config: &str, buffer: &str, length: u64, mean: f64, n: u32) -> P {
        P {
            config: config.into(),
            buffer: buffer.into(),
            length,
            throughput_trials: E {
                mean,
                sd: mean * 0.02,
                n,
            },
            window_bytes: None,
        }
    }

    fn ctx(points: Vec<P>, queue: u64) -> Ctx {
        Ctx {
            points,
            remote_queue_packets: queue,
            queue_source: "test".into(),
        }
    }

    fn verdict(c: &Ctx, id: &str) -> (Verdict, String) {
        let x = judge(c).into_iter().find(|x| x.id == id).unwrap();
        (x.verdict, x.reason)
    }

    /// By the rule's text: 2 KB at 5% of best is "less than 10%"; 20 KB at
    /// 80% of the 8K plateau is outside "about 50%" (0.375-0.625); the
    /// decline needs a queue that can overflow, and covers only the buffers
    /// whose window can outgrow it.
    #[test]
    fn verdicts_follow_the_rule_text() {
        let pts = vec![
            p("remote", "64K", 2048, 5_000.0, 10),
            p("remote", "64K", 524288, 100_000.0, 10),
            p("remote", "64K", 4194304, 70_000.0, 10),
            p("remote", "4K", 4194304, 30_000.0, 10),
            p("remote", "8K", 20480, 64_000.0, 10),
            p("remote", "8K", 524288, 80_000.0, 10),
            p("remote", "8K", 4194304, 80_000.0, 10),
        ];
        let big = ctx(pts.clone(), 1000);
        assert_eq!(verdict(&big, "conn-remote-2k").0, Verdict::Confirmed);
        assert_eq!(verdict(&big, "conn-remote-20k").0, Verdict::Contradicted);
        assert_eq!(verdict(&big, "conn-small-window").0, Verdict::Confirmed);
        assert_eq!(verdict(&big, "conn-decline-500k").0, Verdict::NotTestable);
        assert_eq!(verdict(&big, "conn-larger-mss").0, Verdict::NotTestable);
        let small = ctx(pts.clone(), 16);
        // 64K (44 segments) outgrows 16 packets + the path's 9; 8K (5) and
        // 4K do not, so the flat 8K curve is no cell.
        let (v, r) = verdict(&small, "conn-decline-500k");
        assert_eq!(v, Verdict::Confirmed, "{r}");
        let d = judge(&small)
            .into_iter()
            .find(|x| x.id == "conn-decline-500k")
            .unwrap();
        assert_eq!(d.cells.len(), 1, "{d:?}");
        // A 64-packet queue holds every window up to 64K: nothing covered
        // but the default buffer, which this set lacks.
        let (v, _) = verdict(&ctx(pts, 200), "conn-decline-500k");
        assert_eq!(v, Verdict::NotTestable);
        // The local points were not run: not measured.
        let (v, r) = verdict(&small, "conn-local");
        assert_eq!(v, Verdict::Inconclusive);
        assert!(r.starts_with("not measured"), "{r}");
    }

    /// 20 KB is judged on the 8K curve against that curve's plateau, not
    /// against the best case of any buffer.
    #[test]
    fn remote_20k_is_against_the_8k_plateau() {
        let pts = vec![
            p("remote", "8K", 20480, 40_000.0, 10),
            p("remote", "8K", 4194304, 80_000.0, 10),
            p("remote", "64K", 20480, 50_000.0, 10),
            p("remote", "64K", 4194304, 180_000.0, 10),
        ];
        let (v, r) = verdict(&ctx(pts, 16), "conn-remote-20k");
        assert_eq!(v, Verdict::Confirmed, "{r}");
        let no8k = vec![p("remote", "64K", 20480, 50_000.0, 10)];
        let (v, r) = verdict(&ctx(no8k, 16), "conn-remote-20k");
        assert_eq!(v, Verdict::Inconclusive, "{r}");
    }

    #[test]
    fn two_trials_are_n_below_3() {
        let pts = vec![
            p("remote", "64K", 2048, 5_000.0, 2),
            p("remote", "64K", 524288, 100_000.0, 10),
        ];
        let (v, r) = verdict(&ctx(pts, 16), "conn-remote-2k");
        assert_eq!(v, Verdict::Inconclusive);
        assert!(r.starts_with("n < 3"), "{r}");
    }
}
