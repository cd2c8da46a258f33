//! The paper's sentences about Figures 5-8 (section 6), checked on our
//! cells. Intervals: 95 % over the repetitions of each cell (Student t);
//! ratios take the widest ratio the two intervals allow.

use crate::claims::Verdict;
use crate::claimspec::{
    below, ratio, unmeasured, within, ClaimKind, ClaimSpec, Evaluation, RatioEstimate,
};

use super::{Cell, Method, Net};

const SRC: &str = "Padmanabhan & Mogul, \"Improving HTTP Latency\", section 6";
const SMALL: usize = 2544;
const LARGE: usize = 45566;

pub struct Ctx {
    pub cells: Vec<Cell>,
}

impl Ctx {
    fn at(&self, net: Net, size: usize, n: usize, m: Method) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.net == net && c.size == size && c.images == n && c.method == m)
    }
    fn nmax(&self, net: Net, size: usize) -> Option<usize> {
        self.cells
            .iter()
            .filter(|c| c.net == net && c.size == size)
            .map(|c| c.images)
            .max()
            .filter(|&n| n > 0)
    }
    /// T(new) / T(base) at the largest image count.
    fn r(
        &self,
        net: Net,
        size: usize,
        new: Method,
        base: Method,
    ) -> Option<(RatioEstimate, usize)> {
        let n = self.nmax(net, size)?;
        let a = self.at(net, size, n, new)?;
        let b = self.at(net, size, n, base)?;
        Some((ratio(a.load_s, b.load_s), n))
    }
}

fn pct(r: RatioEstimate) -> String {
    format!(
        "improvement {:.0}% (95% CI {:.0}-{:.0}%)",
        (1.0 - r.value) * 100.0,
        (1.0 - r.hi) * 100.0,
        (1.0 - r.lo.max(0.0)) * 100.0
    )
}

fn fig5_half(c: &Ctx) -> Evaluation {
    let Some((r, n)) = c.r(Net::Remote, SMALL, Method::Getall, Method::Http10) else {
        return unmeasured("remote, 2544-byte images");
    };
    Evaluation::new(
        below(r, 0.5),
        format!(
            "remote, {n} images of 2544 B, GETALL vs HTTP/1.0: {}; \"more than half\" = above 50%",
            pct(r)
        ),
    )
}

fn fig5_share(c: &Ctx) -> Evaluation {
    let (Some((p, n)), Some((g, _))) = (
        c.r(Net::Remote, SMALL, Method::Persistent, Method::Http10),
        c.r(Net::Remote, SMALL, Method::Getall, Method::Http10),
    ) else {
        return unmeasured("remote, 2544-byte images");
    };
    // Persistent connections help: T(persistent) < T(1.0). Pipelining gives
    // more than half of the gain: T(persistent) above the midpoint of T(1.0)
    // and T(GETALL), i.e. p > (1 + g) / 2.
    let helps = below(p, 1.0);
    let mid_hi = (1.0 + g.hi) / 2.0;
    let mid_lo = (1.0 + g.lo.max(0.0)) / 2.0;
    let share = if p.lo > mid_hi {
        Verdict::Confirmed
    } else if p.hi < mid_lo {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    };
    let verdict = match (helps, share) {
        (Verdict::Confirmed, Verdict::Confirmed) => Verdict::Confirmed,
        (Verdict::Contradicted, _) | (_, Verdict::Contradicted) => Verdict::Contradicted,
        _ => Verdict::Inconclusive,
    };
    Evaluation::new(
        verdict,
        format!(
            "remote, {n} images of 2544 B: persistent {}; GETALL {}; pipelining's share of the gain {:.0}%",
            pct(p),
            pct(g),
            if g.value < 1.0 { (p.value - g.value) / (1.0 - g.value) * 100.0 } else { f64::NAN }
        ),
    )
}

fn fig6_22(c: &Ctx) -> Evaluation {
    let Some((r, n)) = c.r(Net::Remote, LARGE, Method::Getall, Method::Http10) else {
        return unmeasured("remote, 45566-byte images");
    };
    Evaluation::new(
        within(r, 0.70, 0.85),
        format!(
            "remote, {n} images of 45566 B, GETALL vs HTTP/1.0: {}; \"about 22%\" read as 15-30%",
            pct(r)
        ),
    )
}

fn small_images(c: &Ctx) -> Evaluation {
    let mut ev = Vec::new();
    let mut verdicts = Vec::new();
    for net in [Net::Remote, Net::Local] {
        let (Some((s, _)), Some((l, _))) = (
            c.r(net, SMALL, Method::Getall, Method::Http10),
            c.r(net, LARGE, Method::Getall, Method::Http10),
        ) else {
            continue;
        };
        // Greatest for small images: ratio(small) < ratio(large).
        verdicts.push(if s.hi < l.lo {
            Verdict::Confirmed
        } else if s.lo > l.hi {
            Verdict::Contradicted
        } else {
            Verdict::Inconclusive
        });
        ev.push(format!(
            "{}: 2544 B {} vs 45566 B {}",
            net.name(),
            pct(s),
            pct(l)
        ));
    }
    if verdicts.is_empty() {
        return unmeasured("2544 and 45566-byte images");
    }
    let v = if verdicts.iter().all(|v| *v == Verdict::Confirmed) {
        Verdict::Confirmed
    } else if verdicts.contains(&Verdict::Contradicted) {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    };
    Evaluation::new(v, ev.join("; "))
}

fn local_persistent(c: &Ctx) -> Evaluation {
    let mut sizes: Vec<usize> = c
        .cells
        .iter()
        .filter(|x| x.net == Net::Local)
        .map(|x| x.size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut ev = Vec::new();
    let mut verdicts = Vec::new();
    for s in sizes {
        if let Some((r, n)) = c.r(Net::Local, s, Method::Persistent, Method::Http10) {
            verdicts.push(within(r, 0.85, 0.95));
            ev.push(format!("{s} B x {n}: {}", pct(r)));
        }
    }
    if verdicts.is_empty() {
        return unmeasured("local");
    }
    let v = if verdicts.iter().all(|v| *v == Verdict::Confirmed) {
        Verdict::Confirmed
    } else if verdicts.contains(&Verdict::Contradicted) {
        Verdict::Contradicted
    } else {
        Verdict::Inconclusive
    };
    Evaluation::new(
        v,
        format!(
            "local, persistent vs HTTP/1.0 (band 5-15%): {}",
            ev.join("; ")
        ),
    )
}

fn local_significant(c: &Ctx) -> Evaluation {
    let Some((r, n)) = c.r(Net::Local, SMALL, Method::Getall, Method::Http10) else {
        return unmeasured("local, 2544-byte images");
    };
    Evaluation::new(
        below(r, 0.9),
        format!("local, {n} images of 2544 B, GETALL vs HTTP/1.0: {}; \"significant\" read as above 10%", pct(r)),
    )
}

pub static CLAIMS: &[ClaimSpec<Ctx>] = &[
    ClaimSpec {
        id: "getall-fig5-half",
        quote: "Our modified HTTP protocol cuts the latency by more than half, about what we expected from the reduced number of round trips.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: fig5_half,
    },
    ClaimSpec {
        id: "getall-fig5-pipelining-share",
        quote: "While more than half of the improvement comes from pipelining, even without pipelining long-lived connections do help.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: fig5_share,
    },
    ClaimSpec {
        id: "getall-fig6-22pct",
        quote: "In this case, using 45566-byte images and the remote server, the new protocol improves latency by about 22%; less than in figure 5 but still noticeable.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: fig6_22,
    },
    ClaimSpec {
        id: "getall-small-images",
        quote: "In general, the benefit from the modified protocol is greatest for small images and for at least a moderate number of images.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: small_images,
    },
    ClaimSpec {
        id: "getall-local-persistent",
        quote: "For the local case, long-lived connections without pipelining reduces latency by only about 5% to 15%; this implies that the reduction in round trips is more important that the per-connection overheads.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: local_persistent,
    },
    ClaimSpec {
        id: "getall-local-significant",
        quote: "Even though the round-trip time to the local server is much smaller than that to the remote server, the modified protocol still provides significant improvements for local retrievals.",
        source: SRC,
        kind: ClaimKind::Claim,
        rule: local_significant,
    },
];
