//! The paper's sentences about Figures 2 and 3 (section 3.2), checked on
//! our points. Intervals are over the trials of a point (95 %, Student t);
//! the figures plot the best trial, which the evidence also shows.

use crate::claims::Verdict;
use crate::claimspec::{
    below, ratio, unmeasured, within, ClaimKind, ClaimSpec, Evaluation, RatioEstimate,
};

use super::{Buffer, Config, Point, LEN_20K, LEN_2K};

const SRC: &str = "Padmanabhan & Mogul, \"Improving HTTP Latency\", section 3.2";

/// The measured points of one sweep.
pub struct Ctx {
    pub points: Vec<Point>,
}

impl Ctx {
    fn at(&self, c: Config, b: Buffer, len: u64) -> Option<&Point> {
        self.points
            .iter()
            .find(|p| p.config == c && p.buffer == b && p.length == len)
    }

    /// The best-case point of a configuration: the highest mean throughput
    /// over every buffer and length.
    fn best(&self, c: Config) -> Option<&Point> {
        self.points.iter().filter(|p| p.config == c).max_by(|a, b| {
            a.throughput_trials
                .mean
                .total_cmp(&b.throughput_trials.mean)
        })
    }

    fn longest(&self, c: Config) -> Option<u64> {
        self.points
            .iter()
            .filter(|p| p.config == c)
            .map(|p| p.length)
            .max()
    }
}

fn describe(r: RatioEstimate, best_ratio: f64) -> String {
    format!(
        "{:.1}% (95% CI {:.1}-{:.1}%; best trials {:.1}%)",
        r.value * 100.0,
        r.lo.max(0.0) * 100.0,
        r.hi * 100.0,
        best_ratio * 100.0
    )
}

/// Throughput at `len` (with the best-case point's buffer) over best case.
fn share_of_best(ctx: &Ctx, c: Config, len: u64) -> Option<(RatioEstimate, f64, String)> {
    let best = ctx.best(c)?;
    let p = ctx.at(c, best.buffer, len)?;
    let r = ratio(p.throughput_trials, best.throughput_trials);
    let note = format!(
        "{c}, buffer {}: {} B at {:.0} B/s vs best case {:.0} B/s ({} B)",
        best.buffer.label(),
        len,
        p.throughput_trials.mean,
        best.throughput_trials.mean,
        best.length
    );
    Some((r, p.throughput / best.throughput, note))
}

fn remote_2k(ctx: &Ctx) -> Evaluation {
    match share_of_best(ctx, Config::Remote, LEN_2K) {
        None => unmeasured("remote, 2 KB"),
        Some((r, b, note)) => Evaluation::new(
            below(r, 0.10),
            format!("{}: {note}; bound < 10%", describe(r, b)),
        ),
    }
}

fn remote_20k(ctx: &Ctx) -> Evaluation {
    match share_of_best(ctx, Config::Remote, LEN_20K) {
        None => unmeasured("remote, 20 KB"),
        Some((r, b, note)) => Evaluation::new(
            within(r, 0.40, 0.60),
            format!("{}: {note}; \"about 50%\" read as 40-60%", describe(r, b)),
        ),
    }
}

fn small_window(ctx: &Ctx) -> Evaluation {
    let c = Config::Remote;
    let Some(small) = ctx
        .points
        .iter()
        .filter(|p| p.config == c)
        .filter_map(|p| p.buffer.bytes())
        .min()
    else {
        return unmeasured("remote with a fixed buffer size");
    };
    let small = Buffer::Bytes(small);
    let (Some(best), Some(long)) = (ctx.best(c), ctx.longest(c)) else {
        return unmeasured("remote");
    };
    let mut lens: Vec<u64> = ctx
        .points
        .iter()
        .filter(|p| p.config == c && p.buffer == small)
        .map(|p| p.length)
        .collect();
    lens.sort_unstable();
    lens.dedup();
    if long < 64 * 1024 || lens.len() < 2 {
        return unmeasured("two lengths of at least 64 KB");
    }
    let prev = lens[lens.len() - 2];
    let (Some(sl), Some(sp), Some(bl)) = (
        ctx.at(c, small, long),
        ctx.at(c, small, prev),
        ctx.at(c, best.buffer, long),
    ) else {
        return unmeasured("remote, longest lengths");
    };
    // Limited: far below the best buffer at the longest length ...
    let vs_best = ratio(sl.throughput_trials, bl.throughput_trials);
    // ... and flat: doubling the length no longer helps (within 10%).
    let flat = ratio(sl.throughput_trials, sp.throughput_trials);
    let limited = below(vs_best, 0.5);
    let plateau = if prev * 2 > long {
        Verdict::Inconclusive
    } else {
        within(flat, 0.9, 1.1)
    };
    let verdict = match (limited, plateau) {
        (Verdict::Confirmed, Verdict::Confirmed) => Verdict::Confirmed,
        (Verdict::Contradicted, _) => Verdict::Contradicted,
        _ => Verdict::Inconclusive,
    };
    Evaluation::new(
        verdict,
        format!(
            "buffer {} at {long} B: {:.0} B/s = {:.1}% (CI {:.1}-{:.1}%) of buffer {} (bound < 50%); \
             {prev} B -> {long} B changes it by x{:.3} (CI {:.3}-{:.3}; flat = within 0.9-1.1)",
            small.label(),
            sl.throughput_trials.mean,
            vs_best.value * 100.0,
            vs_best.lo.max(0.0) * 100.0,
            vs_best.hi * 100.0,
            best.buffer.label(),
            flat.value,
            flat.lo.max(0.0),
            flat.hi
        ),
    )
}

fn decline_500k(ctx: &Ctx) -> Evaluation {
    let c = Config::Remote;
    let (Some(best), Some(long)) = (ctx.best(c), ctx.longest(c)) else {
        return unmeasured("remote");
    };
    if long < 1 << 20 {
        return unmeasured("remote transfers of 1 MB or more");
    }
    let (Some(mid), Some(end)) = (
        ctx.at(c, best.buffer, 512 * 1024),
        ctx.at(c, best.buffer, long),
    ) else {
        return unmeasured("remote, 512 KB and the longest length");
    };
    let r = ratio(end.throughput_trials, mid.throughput_trials);
    // "significant decline": at least 10% lower.
    Evaluation::new(
        below(r, 0.9),
        format!(
            "buffer {}: {long} B at {:.0} B/s vs 512 KB at {:.0} B/s: x{:.3} (CI {:.3}-{:.3}); \
             a decline means below x0.9. Our link's drop-tail queue holds 1000 packets",
            best.buffer.label(),
            end.throughput_trials.mean,
            mid.throughput_trials.mean,
            r.value,
            r.lo.max(0.0),
            r.hi
        ),
    )
}

fn larger_mss(ctx: &Ctx) -> Evaluation {
    let (Some(best), Some(long)) = (ctx.best(Config::Remote), ctx.longest(Config::Remote)) else {
        return unmeasured("remote");
    };
    let (Some(a), Some(b)) = (
        ctx.at(Config::Remote, best.buffer, long),
        ctx.at(Config::Remote536, best.buffer, long),
    ) else {
        return unmeasured("remote-536 beside remote");
    };
    let r = ratio(b.throughput_trials, a.throughput_trials);
    let v = match below(r, 1.0) {
        Verdict::Confirmed => Verdict::Confirmed,
        _ if r.lo >= 1.0 => Verdict::Contradicted,
        _ => Verdict::Inconclusive,
    };
    Evaluation::new(
        v,
        format!(
            "buffer {}, {long} B: MSS 536 {:.0} B/s vs MSS 1460 {:.0} B/s, x{:.3} (CI {:.3}-{:.3})",
            best.buffer.label(),
            b.throughput_trials.mean,
            a.throughput_trials.mean,
            r.value,
            r.lo.max(0.0),
            r.hi
        ),
    )
}

fn local_overhead(ctx: &Ctx) -> Evaluation {
    let c = Config::Local;
    let (Some((r2, b2, n2)), Some((r20, b20, _))) = (
        share_of_best(ctx, c, LEN_2K),
        share_of_best(ctx, c, LEN_20K),
    ) else {
        return unmeasured("local, 2 KB and 20 KB");
    };
    let v2 = within(r2, 0.15, 0.35);
    let v20 = within(r20, 0.60, 0.80);
    let verdict = match (v2, v20) {
        (Verdict::Confirmed, Verdict::Confirmed) => Verdict::Confirmed,
        (Verdict::Contradicted, _) | (_, Verdict::Contradicted) => Verdict::Contradicted,
        _ => Verdict::Inconclusive,
    };
    Evaluation::new(
        verdict,
        format!(
            "2 KB: {} (\"about 25%\" read as 15-35%); 20 KB: {} (\"about 70%\" read as 60-80%); \
             capacity = best case measured on the 10 Mbit/s link ({n2})",
            describe(r2, b2),
            describe(r20, b20)
        ),
    )
}

pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
        ClaimSpec {
            id: "conn-remote-2k",
            quote: "Figure 2 shows that, in the remote case, using a TCP connection to transfer only 2 Kbytes results in a throughput less than 10% of best-case value.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: remote_2k,
        },
        ClaimSpec {
            id: "conn-remote-20k",
            quote: "Even a 20 Kbyte transfer achieves only about 50% of the throughput available with a reasonable window size.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: remote_20k,
        },
        ClaimSpec {
            id: "conn-small-window",
            quote: "The figure also shows that, for this 70 msec RTT, use of too small a window size limits the throughput no matter how many bytes are transferred.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: small_window,
        },
        ClaimSpec {
            id: "conn-decline-500k",
            quote: "We also note a significant decline in throughput over this path for transfers longer than about 500 Kbytes.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: decline_500k,
        },
        ClaimSpec {
            id: "conn-larger-mss",
            quote: "The dotted curve shows that by using a larger maximum segment size (MSS) (and hence fewer packets for the same congestion window size), we can obtain somewhat better throughput for lengthy transfers.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: larger_mss,
        },
        ClaimSpec {
            id: "conn-local",
            quote: "Even in the local case, per-connection overhead limits throughput to about 25% of capacity for transfers of 2 Kbytes, and about 70% of capacity for transfers of 20 Kbytes.",
            source: SRC,
            kind: ClaimKind::Claim,
            rule: local_overhead,
        },
];
