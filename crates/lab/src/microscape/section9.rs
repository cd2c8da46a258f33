//! Paper 001 section 9 ("Impact of Changing Web Content"): the Microscape
//! page after CSS and PNG (`bench --page css`) against the original page,
//! network by network, and the paper's modem estimate as a claim.

use std::fmt::Write as _;

use pagewire_site::microscape::css::CssComposition;

use crate::claims::bands;
use crate::claims::spec::{
    decide, decide_all, ratio, Band, Claim, ClaimKind, ClaimSpec, Estimate, Interval, Measured,
    Quantity,
};
use crate::model::{Net, RunRecord, Strategy, Test, Tuning};

/// "approximately 60%" through the hedge table: 0.6 × [0.75, 1.25]. The
/// paper prints no table for this estimate (its arithmetic is not given),
/// so the band is the table's default, not widened.
pub const MODEM_BAND: (f64, f64) = bands::about(0.6);

/// The band's source, as results print it.
pub const MODEM_SOURCE: &str = "hedge table: approximately X = X × [0.75, 1.25] = [0.45, 0.75]; the paper gives no table or arithmetic for this estimate, so the default stands";

/// The two runs' records and the CSS page's composition.
pub struct Section9<'a> {
    pub original: &'a [RunRecord],
    pub css: &'a [RunRecord],
    pub composition: &'a CssComposition,
    /// The original page's HTML and its zlib size (deflate's saving).
    pub html_bytes: usize,
    pub html_deflate_bytes: usize,
}

fn samples(
    runs: &[RunRecord],
    net: Net,
    st: Strategy,
    test: Test,
    f: fn(&RunRecord) -> f64,
) -> Vec<f64> {
    runs.iter()
        .filter(|r| {
            r.ok()
                && !r.is_sweep()
                && r.net == net
                && r.strategy == st
                && r.test == test
                && r.robot.tuning == Tuning::Tuned
        })
        .map(f)
        .collect()
}

fn est(
    runs: &[RunRecord],
    net: Net,
    st: Strategy,
    test: Test,
    f: fn(&RunRecord) -> f64,
) -> Option<Estimate> {
    let xs = samples(runs, net, st, test, f);
    (!xs.is_empty()).then(|| Estimate::of(&xs))
}

fn elapsed(r: &RunRecord) -> f64 {
    r.elapsed_s
}
fn packets(r: &RunRecord) -> f64 {
    r.packets_total as f64
}
fn bytes(r: &RunRecord) -> f64 {
    r.bytes_total as f64
}
fn payload(r: &RunRecord) -> f64 {
    r.payload_bytes_total as f64
}

/// An estimate over the runs of a cell, or None when any run lacks TCP
/// payload (made before `payload_bytes_total`).
fn payload_est(runs: &[RunRecord], net: Net, st: Strategy, test: Test) -> Option<Estimate> {
    let rs: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| {
            r.ok()
                && !r.is_sweep()
                && r.net == net
                && r.strategy == st
                && r.test == test
                && r.robot.tuning == Tuning::Tuned
        })
        .collect();
    (!rs.is_empty() && rs.iter().all(|r| r.payload_bytes_total > 0))
        .then(|| Estimate::of(&rs.iter().map(|r| payload(r)).collect::<Vec<_>>()))
}

impl Section9<'_> {
    /// Pa / Bytes / Sec of both pages per network, strategy and test, with
    /// the CSS page's share of the original's.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Paper 001 section 9: the CSS+PNG page against the original (means over the repetitions; css/orig = share)"
        );
        let _ = writeln!(
            s,
            "  {:<4} {:<17} {:<11} {:>7} {:>7} {:>6} | {:>8} {:>8} {:>6} | {:>7} {:>7} {:>6}",
            "net",
            "strategy",
            "test",
            "Pa orig",
            "Pa css",
            "share",
            "By orig",
            "By css",
            "share",
            "s orig",
            "s css",
            "share"
        );
        for net in Net::ALL {
            for st in Strategy::PAPER_001 {
                for test in Test::ALL {
                    let get = |runs, f| est(runs, net, st, test, f).map(|e| e.mean);
                    let (Some(pa0), Some(pa1)) =
                        (get(self.original, packets), get(self.css, packets))
                    else {
                        continue;
                    };
                    let by0 = get(self.original, bytes).unwrap_or(f64::NAN);
                    let by1 = get(self.css, bytes).unwrap_or(f64::NAN);
                    let s0 = get(self.original, elapsed).unwrap_or(f64::NAN);
                    let s1 = get(self.css, elapsed).unwrap_or(f64::NAN);
                    let _ = writeln!(
                        s,
                        "  {:<4} {:<17} {:<11} {:>7.1} {:>7.1} {:>6.2} | {:>8.0} {:>8.0} {:>6.2} | {:>7.2} {:>7.2} {:>6.2}",
                        net.name(),
                        st.name(),
                        test.name(),
                        pa0,
                        pa1,
                        pa1 / pa0,
                        by0,
                        by1,
                        by1 / by0,
                        s0,
                        s1,
                        s1 / s0
                    );
                }
            }
        }
        s
    }

    pub fn claims(&self) -> Vec<Claim> {
        decide_all(
            CLAIMS,
            &S9Ctx {
                original: Some(self.original.to_vec()),
                css: self.css.to_vec(),
                composition: self.composition.clone(),
                html_bytes: self.html_bytes,
                html_deflate_bytes: self.html_deflate_bytes,
            },
        )
    }

    pub fn render(&self) -> String {
        let mut s = self.composition.table();
        s.push('\n');
        s.push_str(&self.table());
        s.push('\n');
        s.push_str(&crate::claims::render(
            "Section 9 claims, judged by the rule of docs/claims.md:",
            &self.claims(),
        ));
        s
    }
}

/// What the section-9 rules read.
pub struct S9Ctx {
    /// The original page's runs (the `--baseline`), if known.
    pub original: Option<Vec<RunRecord>>,
    pub css: Vec<RunRecord>,
    pub composition: CssComposition,
    pub html_bytes: usize,
    pub html_deflate_bytes: usize,
}

fn modem(c: &S9Ctx) -> Measured {
    let Some(original) = c.original.as_deref() else {
        return Measured::missing(
            "the original page's runs (the --baseline results.json; `pagewire claims` looks beside the CSS run's directory, in ../results.json)",
        );
    };
    let all = est(
        &c.css,
        Net::Ppp,
        Strategy::PipelineDeflate,
        Test::First,
        elapsed,
    );
    let h10 = est(original, Net::Ppp, Strategy::Http10, Test::First, elapsed);
    let (Some(all), Some(h10)) = (all, h10) else {
        return Measured::missing(
            "ppp pipeline-deflate first-time on the CSS page and ppp http10 first-time on the original",
        );
    };
    let mut m = Measured::new();
    m.push(
        0,
        "ppp/first: CSS+PNG page pipeline-deflate / original page http10",
        ratio(all, h10),
    );
    if let Some(p) = est(
        original,
        Net::Ppp,
        Strategy::PipelineDeflate,
        Test::First,
        elapsed,
    ) {
        m = m.with_note(format!(
            "the protocol changes alone (original page, pipelined + deflate, {:.1} s) give {:.2}",
            p.mean,
            p.mean / h10.mean
        ));
    }
    m
}

/// Bytes saved on this page by each technique, by the paper's section 9
/// accounting, decided before any run and written in docs/bench.md:
/// - transport compression: the HTML less its zlib (default level) size
///   (the paper: "from 42K to 11K ... about 31K");
/// - style sheets (section 9.1): the 22 replaced GIFs and the half of the 3
///   partly replaced ones that goes, less the HTML+CSS that replaces them,
///   plus the 22 HTTP requests and the 22 responses saved ("The
///   elimination of 22 HTTP requests would save approximately 4600 bytes
///   transmitted and approximately 4300 bytes received"): our robot's mean
///   request and our server's mean response head, both measured;
/// - image format conversion (section 9.2): every image converted, the 40
///   static GIFs to PNG and the 2 animations (the paper's MNG; ours APNG),
///   as the paper converted all of them (its "~19% of the image bytes" is
///   11,203 + 8,659 saved of 103,299).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Savings {
    pub deflate: f64,
    pub css: f64,
    pub image_format: f64,
    /// Mean request size (first-time runs of the CSS page).
    pub request: f64,
    /// Mean response head (first-time runs with TCP payload and no
    /// retransmission: (payload - requests - bodies) / responses).
    pub response_head: Option<f64>,
}

/// Mean response head over first-time runs that record TCP payload and
/// retransmitted nothing (their payload counts each byte once), without
/// deflate (whose body count is the decoded size); None if there are none.
pub fn response_head(runs: &[RunRecord]) -> Option<f64> {
    let xs: Vec<f64> = runs
        .iter()
        .filter(|r| {
            r.ok()
                && r.test == Test::First
                && r.payload_bytes_total > 0
                && r.retransmissions == 0
                && r.requests > 0
                && matches!(
                    r.strategy,
                    Strategy::Http10 | Strategy::Http11 | Strategy::Pipeline
                )
        })
        .map(|r| {
            (r.payload_bytes_total as f64
                - r.requests as f64 * r.mean_request_bytes
                - r.body_bytes as f64)
                / r.requests as f64
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

pub fn savings(c: &S9Ctx) -> Savings {
    let k = &c.composition;
    let deflate = c.html_bytes as f64 - c.html_deflate_bytes as f64;
    let xs: Vec<f64> = c
        .css
        .iter()
        .filter(|r| r.ok() && r.test == Test::First)
        .map(|r| r.mean_request_bytes)
        .collect();
    let request = if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let response_head =
        response_head(&c.css).or_else(|| c.original.as_deref().and_then(response_head));
    let css = (k.css_gif_bytes + k.part_gif_bytes) as f64
        - k.part_half_gif_bytes as f64
        - (k.css_replacement_bytes + k.part_replacement_bytes) as f64
        + k.css_images as f64 * (request + response_head.unwrap_or(0.0));
    let image_format = (k.static_gif_bytes as f64 - k.static_png_bytes as f64)
        + (k.animated_gif_bytes as f64 - k.animated_png_bytes as f64);
    Savings {
        deflate,
        css,
        image_format,
        request,
        response_head,
    }
}

fn order(c: &S9Ctx) -> Measured {
    let sv = savings(c);
    let k = &c.composition;
    if sv.request <= 0.0 {
        return Measured::missing("first-time runs of the CSS page (the saved requests' size)");
    }
    let Some(head) = sv.response_head else {
        return Measured::missing(
            "the saved responses' size: first-time runs recording TCP payload (payload_bytes_total) without retransmissions",
        );
    };
    let mut m = Measured::new();
    m.push(
        0,
        format!(
            "deflate {:.0} - style sheets {:.0} bytes",
            sv.deflate, sv.css
        ),
        Interval::exact(sv.deflate - sv.css),
    );
    m.push(
        1,
        format!(
            "style sheets {:.0} - image format {:.0} bytes",
            sv.css, sv.image_format
        ),
        Interval::exact(sv.css - sv.image_format),
    );
    m.with_note(format!(
        "by construction of the page, not a measurement; style sheets count {} requests of {:.0} bytes and {} response heads of {head:.0} bytes saved; image format counts every image converted (40 static GIFs {} -> {} PNG, 2 animations {} -> {} APNG); our synthetic GIFs lose {:.0}% of their bytes as PNG against the paper's 11% (103299 -> 92096)",
        k.css_images,
        sv.request,
        k.css_images,
        k.static_gif_bytes,
        k.static_png_bytes,
        k.animated_gif_bytes,
        k.animated_png_bytes,
        100.0 * (1.0 - k.static_png_bytes as f64 / k.static_gif_bytes as f64)
    ))
}

/// "Universal use of style sheets, even without deployment of HTTP/1.1":
/// HTTP/1.0 on the CSS page against HTTP/1.0 on the original, packets and
/// TCP payload, on every network and test both runs measured.
fn css_reduction(c: &S9Ctx) -> Measured {
    let Some(original) = c.original.as_deref() else {
        return Measured::missing(
            "the original page's runs (the --baseline results.json; `pagewire claims` looks beside the CSS run's directory, in ../results.json)",
        );
    };
    let mut m = Measured::new();
    for net in Net::PAPER {
        for test in Test::ALL {
            let st = Strategy::Http10;
            let css_pa = est(&c.css, net, st, test, packets);
            let orig_pa = est(original, net, st, test, packets);
            let label = format!("{net}/{test}/http10");
            match (css_pa, orig_pa) {
                (Some(a), Some(b)) => {
                    m.push(0, label.clone(), ratio(a, b));
                    match (
                        payload_est(&c.css, net, st, test),
                        payload_est(original, net, st, test),
                    ) {
                        (Some(a), Some(b)) => m.push(1, label, ratio(a, b)),
                        _ => m.absent(format!(
                            "{label}: payload_bytes_total in both runs' records (the paper's Bytes are TCP payload)"
                        )),
                    }
                }
                (Some(_), None) => m.absent(format!("{label} on the original page")),
                _ => {}
            }
        }
    }
    if m.cells.is_empty() && m.missing.is_empty() {
        m.absent("http10 runs of both pages");
    }
    m
}

const INF: f64 = f64::INFINITY;

/// "very significant": the hedge table's "significant" (at least 10%);
/// "very" has no band of its own.
const VERY_SIGNIFICANT: &str =
    "hedge table: significant = a change of at least 10% (\"very\" has no band of its own)";

/// The section-9 claims.
pub static CLAIMS: &[ClaimSpec<S9Ctx>] = &[
    ClaimSpec {
        id: "s9-modem-60pct",
        aliases: &[],
        paper: "001",
        section: "Conclusions, on section 9",
        quote: "A back of the envelope calculation shows that if all techniques described in this paper were applied, our test page might be downloaded over a modem in approximately 60% of the time of HTTP/1.0 browsers without significant change to the visual appearance.",
        cells: "ppp first-time: the CSS+PNG page pipelined with deflate vs the original page over HTTP/1.0",
        quantities: &[Quantity {
            name: "CSS page pipeline-deflate / original http10 seconds",
            band: Band::new(MODEM_BAND.0, MODEM_BAND.1, "approximately 60%", MODEM_SOURCE),
        }],
        kind: ClaimKind::Claim,
        rule: modem,
    },
    ClaimSpec {
        id: "s9-css-without-http11",
        aliases: &[],
        paper: "001",
        section: "Abstract, on section 9",
        quote: "Universal use of style sheets, even without deployment of HTTP/1.1, would cause a very significant reduction in network traffic.",
        cells: "http10 on every network and test both runs measured: the CSS+PNG page vs the original page, packets and TCP payload",
        quantities: &[
            Quantity {
                name: "CSS page / original page http10 packets",
                band: Band::below(1.0 - bands::SIGNIFICANT, "a very significant reduction", VERY_SIGNIFICANT),
            },
            Quantity {
                name: "CSS page / original page http10 payload bytes",
                band: Band::below(1.0 - bands::SIGNIFICANT, "a very significant reduction", VERY_SIGNIFICANT),
            },
        ],
        kind: ClaimKind::Claim,
        rule: css_reduction,
    },
    ClaimSpec {
        id: "s9-savings-order",
        aliases: &[],
        paper: "001",
        section: "Conclusions",
        quote: "The addition of transport compression in HTTP/1.1 provided the largest bandwidth savings, followed by style sheets, and finally image format conversion, for our test page.",
        cells: "the generated pages' bytes (the paper's section 9 accounting: every image converted; 22 requests and 22 responses saved)",
        quantities: &[
            Quantity {
                name: "deflate saving - style-sheet saving (bytes)",
                band: Band::new(0.0, INF, "the largest", bands::source::DIRECTION),
            },
            Quantity {
                name: "style-sheet saving - image-format saving (bytes)",
                band: Band::new(0.0, INF, "followed by", bands::source::DIRECTION),
            },
        ],
        kind: ClaimKind::PageCheck,
        rule: order,
    },
];

/// Judge the section-9 claims from run records alone (`original`: the
/// baseline's runs, if known); the page's composition is regenerated with
/// the default options (seed 1997), as `bench --page css` makes it.
pub fn judge(original: Option<&[RunRecord]>, css: &[RunRecord]) -> Vec<Claim> {
    use pagewire_site::microscape;
    let options = microscape::Options::default();
    let composition = match microscape::css::generate(options) {
        Ok((_, k)) => k,
        Err(e) => {
            return CLAIMS
                .iter()
                .map(|s| {
                    decide(
                        s,
                        Measured::missing(format!("the CSS page could not be generated: {e}")),
                    )
                })
                .collect()
        }
    };
    let ctx = S9Ctx {
        original: original.map(<[RunRecord]>::to_vec),
        css: css.to_vec(),
        html_bytes: composition.original_html_bytes,
        html_deflate_bytes: composition.original_html_deflate_bytes,
        composition,
    };
    decide_all(CLAIMS, &ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Verdict;

    /// A run record with the given cell and seconds (the other fields from
    /// a committed record).
    fn run(net: Net, st: Strategy, secs: f64, rep: u32) -> RunRecord {
        let path = format!(
            "{}/../../docs/bench-results/2026-11-25/css/results.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut r: RunRecord = serde_json::from_value(json["runs"][0].clone()).unwrap();
        r.net = net;
        r.strategy = st;
        r.test = Test::First;
        r.elapsed_s = secs;
        r.rep = rep;
        r.error = None;
        r.objects_ok = r.objects_expected;
        r
    }

    fn modem(css_secs: &[f64], orig_secs: &[f64]) -> Claim {
        let css: Vec<RunRecord> = css_secs
            .iter()
            .enumerate()
            .map(|(i, s)| run(Net::Ppp, Strategy::PipelineDeflate, *s, i as u32))
            .collect();
        let orig: Vec<RunRecord> = orig_secs
            .iter()
            .enumerate()
            .map(|(i, s)| run(Net::Ppp, Strategy::Http10, *s, i as u32))
            .collect();
        judge(Some(&orig), &css).remove(0)
    }

    /// "approximately 60%" through the hedge table (0.45-0.75): 36 s of
    /// 60 s confirms, 20 s of 60 s contradicts, one repetition decides
    /// nothing, no baseline is not measured.
    #[test]
    fn modem_sentence_by_the_rule_text() {
        let c = modem(&[36.0, 36.2, 35.8], &[60.0, 60.3, 59.7]);
        assert_eq!(c.verdict, Verdict::Confirmed, "{c:?}");
        let c = modem(&[20.0, 20.2, 19.8], &[60.0, 60.3, 59.7]);
        assert_eq!(c.verdict, Verdict::Contradicted, "{c:?}");
        let c = modem(&[36.0], &[60.0, 60.3, 59.7]);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.reason.starts_with("n < 3"), "{}", c.reason);
        let c = judge(None, &[]).remove(0);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.reason.starts_with("not measured"), "{}", c.reason);
    }

    /// The savings order is a page check, never counted.
    #[test]
    fn savings_order_is_a_page_check() {
        let c = judge(None, &[]);
        let order = c.iter().find(|c| c.id == "s9-savings-order").unwrap();
        assert_eq!(order.kind, ClaimKind::PageCheck);
        assert_eq!(crate::claims::tally(&c), [0, 0, 2, 0]);
    }

    /// The saved responses are sized from TCP payload: (payload - requests
    /// - bodies) / responses, over first-time runs without retransmission.
    #[test]
    fn response_head_from_payload() {
        let mut r = run(Net::Lan, Strategy::Pipeline, 1.0, 0);
        r.requests = 10;
        r.mean_request_bytes = 200.0;
        r.body_bytes = 50_000;
        r.payload_bytes_total = 50_000 + 2_000 + 10 * 150;
        r.retransmissions = 0;
        assert_eq!(response_head(&[r.clone()]), Some(150.0));
        // A retransmitted run counts bytes twice: not used.
        r.retransmissions = 3;
        assert_eq!(response_head(&[r.clone()]), None);
        // Nor a run without payload.
        r.retransmissions = 0;
        r.payload_bytes_total = 0;
        assert_eq!(response_head(&[r]), None);
    }
}
