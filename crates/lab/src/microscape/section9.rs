//! Paper 001 section 9 ("Impact of Changing Web Content"): the Microscape
//! page after CSS and PNG (`bench --page css`) against the original page,
//! network by network, and the paper's modem estimate as a claim.

use std::fmt::Write as _;

use pagewire_site::microscape::css::CssComposition;

use super::model::{Net, RunRecord, Strategy, Test, Tuning};
use crate::claims::bands;
use crate::claims::spec::{
    decide, decide_all, ratio, Band, Claim, ClaimKind, ClaimSpec, Estimate, Interval, Measured,
    Quantity,
};

/// "approximately 60%" through the hedge table: 0.6 × [0.75, 1.25].
pub const MODEM_BAND: (f64, f64) = bands::about(0.6);

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

/// Bytes saved on this page by each technique, by the paper's section 9.2
/// accounting, decided before any run: deflate of the HTML; style sheets =
/// the replaced GIFs and half of the partly replaced ones, less the
/// HTML+CSS that replaces them, plus the 22 requests saved (their measured
/// mean size; the response heads saved are left out); image format = every
/// static GIF converted to PNG.
pub fn savings(c: &S9Ctx) -> (f64, f64, f64, f64) {
    let k = &c.composition;
    let deflate = c.html_bytes as f64 - c.html_deflate_bytes as f64;
    let xs: Vec<f64> = c
        .css
        .iter()
        .filter(|r| r.ok() && r.test == Test::First)
        .map(|r| r.mean_request_bytes)
        .collect();
    let req = if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let requests = k.css_images as f64 * req;
    let css = (k.css_gif_bytes + k.part_gif_bytes) as f64
        - k.part_half_gif_bytes as f64
        - (k.css_replacement_bytes + k.part_replacement_bytes) as f64
        + requests;
    let png = k.static_gif_bytes as f64 - k.static_png_bytes as f64;
    (deflate, css, png, req)
}

fn order(c: &S9Ctx) -> Measured {
    let (deflate, css, png, req) = savings(c);
    let mut m = Measured::new();
    m.push(
        0,
        format!("deflate {deflate:.0} - style sheets {css:.0} bytes"),
        Interval::exact(deflate - css),
    );
    m.push(
        1,
        format!("style sheets {css:.0} - PNG {png:.0} bytes"),
        Interval::exact(css - png),
    );
    let k = &c.composition;
    m.with_note(format!(
        "by construction of the page, not a measurement; {} requests of {req:.0} bytes counted as saved; our synthetic GIFs lose {:.0}% of their bytes as PNG against the paper's 11% (103299 -> 92096)",
        k.css_images,
        100.0 * (1.0 - k.static_png_bytes as f64 / k.static_gif_bytes as f64)
    ))
}

const INF: f64 = f64::INFINITY;

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
            band: Band::new(MODEM_BAND.0, MODEM_BAND.1, "approximately 60%", bands::source::ABOUT),
        }],
        kind: ClaimKind::Claim,
        rule: modem,
    },
    ClaimSpec {
        id: "s9-savings-order",
        aliases: &[],
        paper: "001",
        section: "Conclusions",
        quote: "The addition of transport compression in HTTP/1.1 provided the largest bandwidth savings, followed by style sheets, and finally image format conversion, for our test page.",
        cells: "the generated pages' bytes (section 9.2 accounting)",
        quantities: &[
            Quantity {
                name: "deflate saving - style-sheet saving (bytes)",
                band: Band::new(0.0, INF, "the largest", bands::source::DIRECTION),
            },
            Quantity {
                name: "style-sheet saving - PNG saving (bytes)",
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
            "{}/../../docs/bench-results/2026-11-22-issue17/css/results.json",
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
        assert_eq!(c[1].kind, ClaimKind::PageCheck);
        assert_eq!(crate::claims::tally(&c), [0, 0, 1, 0]);
    }
}
