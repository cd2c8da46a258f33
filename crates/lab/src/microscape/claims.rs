//! Paper 001's findings (Nielsen, Gettys, Baird-Smith, Prud'hommeaux, Lie,
//! Lilley, "Network Performance Effects of HTTP/1.1, CSS1, and PNG", ACM
//! SIGCOMM '97) as [`ClaimSpec`]s over the microscape suite's run records.
//!
//! The cells a sentence covers are the (network, test) cells the paper
//! itself measured (it ran no HTTP/1.0 on PPP); a covered cell missing from
//! the results leaves the claim inconclusive. Byte claims read the paper's
//! unit, TCP payload (`payload_bytes_total` of each run record; the paper's
//! %ov equals 40·Pa / (Bytes + 40·Pa) in every cell of Tables 4-9).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::claims::bands::{self, source as src};
use crate::claims::spec::{
    decide_all, Band, Claim, ClaimKind, ClaimSpec, Estimate, Interval, Measured, Quantity,
};
use crate::claims::{kept, model_column, read_json, records, Judged, Suite};
use crate::model::{Net, RunRecord, Strategy, Test, Tuning};
use Strategy::*;
use Test::*;

/// Facts about the generated page, for the two page checks (section 8).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PageFacts {
    pub html_bytes: usize,
    pub html_deflate_bytes: usize,
    pub ratio_mixed_case: f64,
    pub ratio_lower_case: f64,
}

/// One cell's quantities over its repetitions.
#[derive(Clone, Copy, Debug)]
pub struct Vals {
    pub packets: Estimate,
    /// TCP payload bytes (None: some run did not record it).
    pub payload: Option<Estimate>,
    pub seconds: Estimate,
    pub sockets: Estimate,
}

type Key = (bool, Net, Strategy, Test);

impl Vals {
    /// One cell's quantities over its runs.
    fn of(rs: &[&RunRecord]) -> Vals {
        let e =
            |f: fn(&RunRecord) -> f64| Estimate::of(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
        Vals {
            packets: e(|r| r.packets_total as f64),
            payload: rs
                .iter()
                .all(|r| r.payload_bytes_total > 0)
                .then(|| e(|r| r.payload_bytes_total as f64)),
            seconds: e(|r| r.elapsed_s),
            sockets: e(|r| r.sockets_total as f64),
        }
    }
}

/// What the microscape rules read.
#[derive(Default)]
pub struct MicroscapeCtx {
    /// (initial robot?, net, strategy, test) over links without modem
    /// compression.
    pub cells: BTreeMap<Key, Vals>,
    /// The same over a V.42bis-compressed link (`--link-compress v42bis`).
    pub modem: BTreeMap<Key, Vals>,
    /// The WAN round-trip-time sweep (`bench --rtt-sweep`), tuned robot:
    /// (RTT in microseconds, strategy, test).
    pub sweep: BTreeMap<(u64, Strategy, Test), Vals>,
    pub page: Option<PageFacts>,
    /// What the Nagle sentences read (`bench --nagle`).
    pub nagle: NagleFacts,
}

/// The Nagle sentences compare these results, made with Nagle's algorithm
/// on, against a baseline of the same bench with it off.
#[derive(Default)]
pub struct NagleFacts {
    /// Some counted run had Nagle's algorithm on (robot or server).
    pub on: bool,
    /// Whether the server buffered pipelined responses
    /// ([`RunRecord::server_buffers`]), if every run agrees.
    pub server_buffers: Option<bool>,
    /// The server's label (every run's, if they agree).
    pub server: Option<String>,
    /// The Nagle-off baseline's cells, or why it cannot serve.
    pub baseline: Option<Result<BTreeMap<Key, Vals>, String>>,
}

impl MicroscapeCtx {
    /// Groups the successful runs by cell (runs left out for link fidelity
    /// must already be gone).
    pub fn from_runs(runs: &[RunRecord], page: Option<PageFacts>) -> MicroscapeCtx {
        let mut groups: BTreeMap<(bool, Key), Vec<&RunRecord>> = BTreeMap::new();
        let mut sweep: BTreeMap<(u64, Strategy, Test), Vec<&RunRecord>> = BTreeMap::new();
        for r in runs.iter().filter(|r| r.ok()) {
            let modem = r.link.get("compression").and_then(|c| c.as_str()) == Some("v42bis");
            let initial = r.robot.tuning == Tuning::Initial;
            if let Some(rtt) = r.sweep_rtt_ms {
                // Extra runs of the latency sweep: read by its rule only.
                if !modem && !initial && r.net == Net::Wan && rtt.is_finite() && rtt >= 0.0 {
                    let us = (rtt * 1000.0).round() as u64;
                    sweep.entry((us, r.strategy, r.test)).or_default().push(r);
                }
                continue;
            }
            groups
                .entry((modem, (initial, r.net, r.strategy, r.test)))
                .or_default()
                .push(r);
        }
        let mut ctx = MicroscapeCtx {
            page,
            ..MicroscapeCtx::default()
        };
        for ((modem, key), rs) in groups {
            let v = Vals::of(&rs);
            if modem {
                ctx.modem.insert(key, v);
            } else {
                ctx.cells.insert(key, v);
            }
        }
        ctx.sweep = sweep
            .into_iter()
            .map(|(k, rs)| (k, Vals::of(&rs)))
            .collect();
        let ok: Vec<&RunRecord> = runs.iter().filter(|r| r.ok() && !r.is_sweep()).collect();
        let same = |f: &dyn Fn(&RunRecord) -> Option<String>| {
            let mut v: Vec<Option<String>> = ok.iter().map(|r| f(r)).collect();
            v.dedup();
            (v.len() == 1).then(|| v.remove(0)).flatten()
        };
        ctx.nagle = NagleFacts {
            on: ok.iter().any(|r| r.nagle_on()),
            server_buffers: same(&|r| r.server_buffers().map(|b| b.to_string()))
                .map(|b| b == "true"),
            server: same(&|r| Some(r.server.clone())),
            baseline: None,
        };
        ctx
    }

    /// Attach the Nagle-off baseline (`bench --nagle --baseline`): the runs
    /// of the same bench without `--nagle`. It serves only if every counted
    /// run of it had Nagle off and the same server answered.
    pub fn with_nagle_baseline(mut self, base: &[RunRecord]) -> MicroscapeCtx {
        let b = MicroscapeCtx::from_runs(base, None);
        let checked = if b.nagle.on {
            Err("the baseline has runs with Nagle's algorithm on: it must be the same bench without --nagle".to_string())
        } else if b.cells.is_empty() {
            Err("the baseline has no counted runs".to_string())
        } else if b.nagle.server != self.nagle.server {
            Err(format!(
                "the baseline's server ({}) is not these runs' ({})",
                b.nagle.server.as_deref().unwrap_or("mixed"),
                self.nagle.server.as_deref().unwrap_or("mixed")
            ))
        } else {
            Ok(b.cells)
        };
        self.nagle.baseline = Some(checked);
        self
    }

    fn v(&self, net: Net, st: Strategy, t: Test) -> Option<&Vals> {
        self.cells.get(&(false, net, st, t))
    }
    fn pa(&self, net: Net, st: Strategy, t: Test) -> Option<Interval> {
        self.v(net, st, t).map(|v| v.packets.interval())
    }
    fn sec(&self, net: Net, st: Strategy, t: Test) -> Option<Interval> {
        self.v(net, st, t).map(|v| v.seconds.interval())
    }
    fn bytes(&self, net: Net, st: Strategy, t: Test) -> Option<Result<Interval, ()>> {
        self.v(net, st, t)
            .map(|v| v.payload.map(|p| p.interval()).ok_or(()))
    }
    fn socks(&self, net: Net, st: Strategy, t: Test) -> Option<Interval> {
        self.v(net, st, t).map(|v| v.sockets.interval())
    }

    /// Did the server send the page deflate-coded at all? nginx cannot (no
    /// precompressed deflate), nor can many `--server-cmd` servers.
    fn deflate_served(&self) -> Option<bool> {
        let mut any = None;
        for net in Net::PAPER {
            if let (Some(p), Some(pd)) = (
                self.pa(net, Pipeline, First),
                self.v(net, PipelineDeflate, First),
            ) {
                let _ = p;
                let pb = self.v(net, Pipeline, First).unwrap();
                let (a, b) = (
                    pb.payload.unwrap_or(pb.packets),
                    pd.payload.unwrap_or(pd.packets),
                );
                any = Some(any.unwrap_or(false) || b.mean < 0.95 * a.mean);
            }
        }
        any
    }
}

/// Whether the paper measured every strategy of `sts` on `net` (it ran no
/// HTTP/1.0 on PPP): such cells are covered by "every network" sentences.
fn paper_has(net: Net, sts: &[Strategy]) -> bool {
    net != Net::Ppp || !sts.contains(&Http10)
}

/// Every (net, test) cell, in table order.
fn cells() -> impl Iterator<Item = (Net, Test)> {
    Net::PAPER
        .into_iter()
        .flat_map(|n| Test::ALL.into_iter().map(move |t| (n, t)))
}

/// Push `f(net, test)` for every cell, or note a covered cell as absent.
fn each(
    m: &mut Measured,
    q: usize,
    sts: &[Strategy],
    cells: impl Iterator<Item = (Net, Test)>,
    f: impl Fn(Net, Test) -> Option<Interval>,
) {
    for (net, t) in cells {
        let label = format!("{net}/{t}");
        match f(net, t) {
            Some(iv) => m.push(q, label, iv),
            None if paper_has(net, sts) => m.absent(label),
            None => {}
        }
    }
}

const NO_PAYLOAD: &str = "payload_bytes_total in the run records (these runs predate it; the paper's Bytes are TCP payload)";

const TEN_TIMES: &str = "The savings were at least a factor of two, and sometimes as much as a factor of ten, in terms of packets transmitted.";
const REVALIDATE: &str = "For a common operation in the Web (revisiting a page cached locally), our HTTP/1.1 with buffered pipelining implementation uses less than 1/10 of the total number of packets that HTTP/1.0 does, and executes in much less elapsed time, using a single TCP connection on a WAN.";
const COMPRESSION: &str = "Transport compression helped in all environments and enabled significant savings (about 16% of the packets and 12% of the elapsed time in our first time retrieval test); the decompression time for the client is more than offset by the savings in data transmission.";
const OBSERVATIONS: &str = "Observations on HTTP/1.0 and 1.1 Data";
const NAGLE_LATER: &str = "In later experiments in which the buffering behavior of the implementations were changed, we did observe significant (sometimes dramatic) transmission delays due to Nagle; we recommend therefore that HTTP/1.1 implementations that buffer output disable Nagle's algorithm (set the TCP_NODELAY socket option).";

macro_rules! q {
    ($name:expr, $lo:expr, $hi:expr, $hedge:expr, $src:expr) => {
        Quantity {
            name: $name,
            band: Band::new($lo, $hi, $hedge, $src),
        }
    };
}
const INF: f64 = f64::INFINITY;
const NINF: f64 = f64::NEG_INFINITY;

/// Paper 001's claims, in the order of the report.
pub static CLAIMS: &[ClaimSpec<MicroscapeCtx>] = &[
    ClaimSpec {
        id: "pipeline-2x-packets",
        aliases: &[],
        paper: "001",
        section: "Abstract",
        quote: TEN_TIMES,
        cells: "every network and test the paper measured, pipeline vs http10",
        quantities: &[
            q!("http10 / pipeline packets", 2.0, INF, "at least a factor of two", src::SENTENCE),
            q!("largest http10 / pipeline packets over the cells", 7.5, 12.52, "sometimes as much as a factor of ten",
               "hedge table (as much as 10 = 7.5-12.5), widened to the paper's maximum 12.51 (Table 5, revalidation 365.4 / 29.2)"),
        ],
        kind: ClaimKind::Claim,
        rule: pipeline_2x_packets,
    },
    ClaimSpec {
        id: "wan-revalidate-tenth",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: REVALIDATE,
        cells: "wan/revalidate, pipeline vs http10",
        quantities: &[q!("pipeline / http10 packets", NINF, 0.1, "less than 1/10", src::SENTENCE)],
        kind: ClaimKind::Claim,
        rule: wan_revalidate_tenth,
    },
    ClaimSpec {
        id: "wan-revalidate-faster",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: REVALIDATE,
        cells: "wan/revalidate, pipeline vs http10",
        quantities: &[q!("pipeline / http10 seconds", NINF, 1.0 / bands::MUCH, "much less elapsed time", src::MUCH)],
        kind: ClaimKind::Claim,
        rule: wan_revalidate_faster,
    },
    ClaimSpec {
        id: "pipeline-3x-over-http11",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "This is a factor of three improvement over HTTP/1.1 implemented without buffering of requests and responses.",
        cells: "wan/revalidate, http11 vs pipeline packets",
        quantities: &[q!("http11 / pipeline packets", 2.25, 3.94, "a factor of three",
            "hedge table (factor of 3 = 2.25-3.75), widened to the paper's Tables 6-7 (3.94, 3.50)")],
        kind: ClaimKind::Claim,
        rule: pipeline_3x_over_http11,
    },
    ClaimSpec {
        id: "http11-slower-than-http10",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "An HTTP/1.1 implementation that does not implement pipelining will perform worse (have higher elapsed time) than an HTTP/1.0 implementation using multiple connections.",
        cells: "every network and test the paper measured, http11 vs http10",
        quantities: &[q!("http11 / http10 seconds", 1.0, INF, "worse (higher elapsed time)", src::DIRECTION)],
        kind: ClaimKind::Claim,
        rule: http11_slower_than_http10,
    },
    ClaimSpec {
        id: "pipeline-faster-than-http10",
        aliases: &[],
        paper: "001",
        section: "Conclusions",
        quote: "HTTP/1.1 implemented with pipelining outperformed HTTP/1.0, even when the HTTP/1.0 implementation uses multiple connections in parallel, under all circumstances tested.",
        cells: "every network and test the paper measured, pipeline vs http10",
        quantities: &[q!("pipeline / http10 seconds", NINF, 1.0, "outperformed", src::DIRECTION)],
        kind: ClaimKind::Claim,
        rule: pipeline_faster_than_http10,
    },
    ClaimSpec {
        id: "pipelining-needed-to-outperform",
        aliases: &[],
        paper: "001",
        section: "Conclusions",
        quote: "For HTTP/1.1 to outperform HTTP/1.0 in elapsed time, an implementation must implement pipelining.",
        cells: "every network and test the paper measured: http11 (persistent, no pipelining) vs http10, and pipeline vs http11",
        quantities: &[
            q!("http11 / http10 seconds", 1.0, INF, "to outperform ... must implement pipelining (without it, no faster)", src::DIRECTION),
            q!("pipeline / http11 seconds", NINF, 1.0, "must implement pipelining (pipelining is what makes it faster)", src::DIRECTION),
        ],
        kind: ClaimKind::Claim,
        rule: pipelining_needed,
    },
    ClaimSpec {
        id: "deflate-16-12",
        aliases: &[],
        paper: "001",
        section: "Summary of Compression Performance",
        quote: COMPRESSION,
        cells: "first retrieval on every network, pipeline-deflate vs pipeline",
        quantities: &[
            q!("packet saving of pipeline-deflate", 0.12, 0.205, "about 16% of the packets",
               "hedge table (about 16% = 12-20%), widened to the paper's Tables 4-9 (14.5-20.5%)"),
            q!("elapsed-time saving of pipeline-deflate", -0.045, 0.164, "about 12% of the elapsed time",
               "hedge table (about 12% = 9-15%), widened to the paper's Tables 4-9 (-4.4% to 16.3%)"),
        ],
        kind: ClaimKind::Claim,
        rule: deflate_16_12,
    },
    ClaimSpec {
        id: "deflate-helps-everywhere",
        aliases: &[],
        paper: "001",
        section: "Summary of Compression Performance",
        quote: COMPRESSION,
        cells: "first retrieval on every network, pipeline-deflate vs pipeline",
        quantities: &[
            q!("pipeline-deflate / pipeline packets", NINF, 1.0, "helped in all environments", src::DIRECTION),
            q!("pipeline-deflate / pipeline seconds", NINF, 1.0, "helped in all environments", src::DIRECTION),
        ],
        kind: ClaimKind::Claim,
        rule: deflate_helps_everywhere,
    },
    ClaimSpec {
        id: "first-bytes-few-percent",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "For the first time retrieval test, bandwidth savings due to pipelining and persistent connections of HTTP/1.1 is only a few percent.",
        cells: "first retrieval on every network the paper measured, pipeline vs http10, TCP payload",
        quantities: &[q!("payload saving of pipeline", bands::A_FEW_PERCENT.0, bands::A_FEW_PERCENT.1, "only a few percent", src::A_FEW)],
        kind: ClaimKind::Claim,
        rule: first_bytes_few_percent,
    },
    ClaimSpec {
        id: "first-time-halved",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "Elapsed time on both WAN and LAN roughly halved.",
        cells: "lan/first and wan/first, pipeline vs http10",
        quantities: &[q!("pipeline / http10 seconds", 0.375, 0.702, "roughly halved",
            "hedge table (roughly 0.5 = 0.375-0.625), widened to the paper's Tables 4-7 (0.545-0.701)")],
        kind: ClaimKind::Claim,
        rule: first_time_halved,
    },
    ClaimSpec {
        id: "packets-per-connection",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "The mean number of packets in a TCP session increased between a factor of two and a factor of ten.",
        cells: "every network and test the paper measured, pipeline vs http10",
        quantities: &[q!("pipeline / http10 packets per connection", 2.0, 10.0, "between a factor of two and a factor of ten", src::SENTENCE)],
        kind: ClaimKind::Claim,
        rule: packets_per_connection,
    },
    ClaimSpec {
        id: "packet-size-doubled",
        aliases: &[],
        paper: "001",
        section: OBSERVATIONS,
        quote: "The mean size of a packet in our traffic roughly doubled.",
        cells: "first retrieval on every network the paper measured, pipeline vs http10, payload bytes per packet",
        quantities: &[q!("pipeline / http10 payload bytes per packet", 1.5, 2.5, "roughly doubled",
            "hedge table (roughly 2 = 1.5-2.5); the paper's Tables 4-7 (1.94-2.49) lie inside")],
        kind: ClaimKind::Claim,
        rule: packet_size_doubled,
    },
    ClaimSpec {
        id: "bandwidth-2-40",
        aliases: &[],
        paper: "001",
        section: "Conclusions",
        quote: "Bandwidth savings due to HTTP/1.1 and associated techniques are more modest (between 2% and 40% depending on the techniques used).",
        cells: "first retrieval on every network the paper measured, each HTTP/1.1 strategy vs http10, TCP payload",
        quantities: &[q!("payload saving vs http10", 0.02, 0.40, "between 2% and 40%", src::SENTENCE)],
        kind: ClaimKind::Claim,
        rule: bandwidth_2_40,
    },
    ClaimSpec {
        id: "persistent-saves-packets",
        aliases: &[],
        paper: "001",
        section: "Initial Investigations and Tuning; Table 3",
        quote: "The results as seen in Table 3 was a significant saving in TCP packets using HTTP/1.1 but also a big increase in elapsed time.",
        cells: "the initial (Table 3) robot's lan revalidation, http11 and pipeline vs http10",
        quantities: &[
            q!("HTTP/1.1 / http10 packets", NINF, 1.0 - bands::SIGNIFICANT, "a significant saving in TCP packets", src::SIGNIFICANT),
            q!("HTTP/1.1 / http10 seconds", bands::MUCH, INF, "a big increase in elapsed time", src::MUCH),
        ],
        kind: ClaimKind::Claim,
        rule: persistent_saves_packets,
    },
    ClaimSpec {
        id: "time-gain-less-dramatic",
        aliases: &[],
        paper: "001",
        section: "Abstract",
        quote: "Elapsed time improvement is less dramatic, and strongly depends on your network connection.",
        cells: "first retrieval on every network the paper measured, http10 vs pipeline",
        quantities: &[q!("(http10/pipeline packets) / (http10/pipeline seconds)", 1.0, INF, "less dramatic", src::DIRECTION)],
        kind: ClaimKind::Claim,
        rule: time_gain_less_dramatic,
    },
    ClaimSpec {
        id: "higher-latency-better",
        aliases: &[],
        paper: "001",
        section: "After Initial Tuning Tests",
        quote: "For the WAN test however, the higher the latency, the better HTTP/1.1 performed.",
        cells: "the WAN round-trip-time sweep (bench --rtt-sweep), every measured test, each RTT against the next lower one: pipeline / http10 seconds",
        quantities: &[q!("(pipeline / http10 seconds at the higher RTT) / (the same at the next lower RTT)", NINF, 1.0, "the higher the latency, the better", src::DIRECTION)],
        kind: ClaimKind::Claim,
        rule: higher_latency_better,
    },
    ClaimSpec {
        id: "nagle-dramatic-without-buffering",
        aliases: &[],
        paper: "001",
        section: "Nagle Interaction",
        quote: NAGLE_LATER,
        cells: "every cell measured with Nagle's algorithm on (bench --nagle) against the same cell of the Nagle-off baseline (--baseline), a server that writes each response as it is ready (nginx, or pagewire --server-flush each-response): seconds, the largest cell",
        quantities: &[
            q!("largest Nagle-on / Nagle-off seconds", 1.0 + bands::SIGNIFICANT, INF, "significant ... transmission delays", src::SIGNIFICANT),
            q!("largest Nagle-on / Nagle-off seconds", bands::MUCH, INF, "sometimes dramatic", "hedge table: dramatic = a factor of at least 1.5"),
        ],
        kind: ClaimKind::Claim,
        rule: nagle_dramatic,
    },
    ClaimSpec {
        id: "nagle-harmless-with-buffering",
        aliases: &[],
        paper: "001",
        section: "Nagle Interaction",
        quote: "In our initial tests, we did not observe significant problems introduced by Nagle's algorithm, though with hindsight, this was the result of our pipelined implementation and the specific test cases chosen, since with effective buffering, the segment sizes are large, avoiding Nagle's algorithm.",
        cells: "pipeline and pipeline-deflate (tuned robot), every network and test measured with Nagle's algorithm on against the Nagle-off baseline (--baseline), a server that buffers pipelined responses (pagewire, Apache): seconds",
        quantities: &[q!("Nagle-on / Nagle-off seconds", NINF, 1.0 + bands::SIGNIFICANT, "did not observe significant problems", "hedge table: significant = at least 10% (here: less than 10% slower)")],
        kind: ClaimKind::Claim,
        rule: nagle_harmless,
    },
    ClaimSpec {
        id: "zlib-beats-modem-compression",
        aliases: &[],
        paper: "001",
        section: "Further Compression Experiments (section 8.3)",
        quote: "We also performed a simple test confirming that zlib compression is significantly better than the data compression found in current modems [24].",
        cells: "ppp with the modem's compression (--link-compress v42bis), first retrieval, pipeline-deflate vs pipeline (the whole page: the bench's cell; the paper's own test fetched the HTML alone)",
        quantities: &[
            q!("pipeline-deflate / pipeline seconds over a V.42bis link", NINF, 1.0 - bands::SIGNIFICANT, "significantly better", src::SIGNIFICANT),
            q!("pipeline-deflate / pipeline packets over a V.42bis link", NINF, 1.0 - bands::SIGNIFICANT, "significantly better", src::SIGNIFICANT),
        ],
        kind: ClaimKind::Claim,
        rule: zlib_beats_modem,
    },
    ClaimSpec {
        id: "page-42k-to-11k",
        aliases: &[],
        paper: "001",
        section: "Changing Web Content Representation",
        quote: "In our case this caused the Microscape HTML page to be compressed more than a factor of three from 42K to 11K.",
        cells: "the generated page",
        quantities: &[q!("deflated / plain HTML bytes", 0.196, 0.327, "from 42K to 11K",
            "hedge table around 11/42 = 0.262 (0.196-0.327), below 1/3 as the sentence's factor of three")],
        kind: ClaimKind::PageCheck,
        rule: page_42k_to_11k,
    },
    ClaimSpec {
        id: "lowercase-tags-compress-better",
        aliases: &[],
        paper: "001",
        section: "Further Compression Experiments",
        quote: "Compression is significantly worse (.35 rather than .27) if mixed case HTML tags are used.",
        cells: "the generated page",
        quantities: &[q!("lower-case / mixed-case deflate ratio", NINF, 1.0, "worse if mixed case", src::DIRECTION)],
        kind: ClaimKind::PageCheck,
        rule: lowercase_tags_compress_better,
    },
];

/// Judge every claim of paper 001 on a context.
pub fn judge(ctx: &MicroscapeCtx) -> Vec<Claim> {
    decide_all(CLAIMS, ctx)
}

/// Judge every claim of paper 001 on run records.
pub fn check(runs: &[RunRecord], page: Option<PageFacts>) -> Vec<Claim> {
    judge(&MicroscapeCtx::from_runs(runs, page))
}

/// [`check`], with the Nagle-off baseline of a `bench --nagle` run.
pub fn check_with_nagle_baseline(
    runs: &[RunRecord],
    page: Option<PageFacts>,
    baseline: Option<&[RunRecord]>,
) -> Vec<Claim> {
    let ctx = MicroscapeCtx::from_runs(runs, page);
    judge(&match baseline {
        Some(b) => ctx.with_nagle_baseline(b),
        None => ctx,
    })
}

/// Whether a results.json is of section 9's CSS+PNG page (`bench --page
/// css`): judged by section 9's claims against its original page's run.
pub fn is_css_page(v: &Value) -> bool {
    v.get("page_composition")
        .and_then(Value::as_str)
        .is_some_and(|p| p.contains("CSS+PNG variant"))
}

/// Re-judge a microscape results.json (`dir`: where it lives, for the
/// baseline beside it): paper 001's claims with the model column, or
/// section 9's for the CSS+PNG page.
pub fn judge_value(v: &Value, dir: Option<&Path>) -> Result<Judged> {
    if is_css_page(v) {
        let (css, out, n) = runs(v)?;
        let original = match baseline(v, dir) {
            Some(p) => Some(runs(&read_json(&p)?)?.0),
            None => None,
        };
        let claims = super::section9::judge(original.as_deref(), &css);
        return Ok(Judged::new(Suite::MicroscapeCss, n, out, claims));
    }
    let (runs_kept, out, n) = runs(v)?;
    // A `bench --nagle` run: its Nagle-off baseline, for the Nagle
    // sentences (`--baseline`, or ../results.json beside it).
    let base = match runs_kept.iter().any(|r| r.ok() && r.nagle_on()) {
        true => match baseline(v, dir) {
            Some(p) => Some(runs(&read_json(&p)?)?.0),
            None => None,
        },
        false => None,
    };
    let claims = check_with_nagle_baseline(&runs_kept, page_facts(v), base.as_deref());
    // The model describes the Microscape page of the default seed.
    let page = crate::expect::Page::microscape(1997);
    let modelled = page_facts(v).is_some_and(|f| f.html_bytes as u64 == page.html.body);
    let model = model_column::notes(&runs_kept, &claims, modelled.then_some(&page), |rs| {
        check_with_nagle_baseline(rs, page_facts(v), base.as_deref())
    });
    Ok(Judged {
        model,
        ..Judged::new(Suite::Microscape, n, out, claims)
    })
}

/// The original page's results.json for a CSS-page run (the Nagle-off
/// run for a `--nagle` run): the run's own `--baseline` if that file still
/// exists, else `../results.json` beside the run's directory (the committed
/// layout).
fn baseline(v: &Value, dir: Option<&Path>) -> Option<PathBuf> {
    let cmd: Vec<&str> = v
        .get("provenance")
        .and_then(|p| p.get("command"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let from_cmd = cmd
        .windows(2)
        .find(|w| w[0] == "--baseline")
        .map(|w| PathBuf::from(w[1]))
        .filter(|p| p.is_file());
    from_cmd.or_else(|| {
        dir.map(|d| d.join("..").join("results.json"))
            .filter(|p| p.is_file())
    })
}

fn page_facts(v: &Value) -> Option<PageFacts> {
    serde_json::from_value(v.get("page_facts")?.clone()).ok()
}

/// The microscape run records that count, how many were left out, and how
/// many there were.
pub fn runs(v: &Value) -> Result<(Vec<RunRecord>, usize, usize)> {
    let all = records(v, "runs")?;
    let (keep, out) = kept(all);
    let runs = keep
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::from_value(r.clone())
                .with_context(|| format!("run record {i} of results.json"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((runs, out, all.len()))
}

fn pipeline_2x_packets(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let f = |net, t| Some(c.pa(net, Http10, t)? / c.pa(net, Pipeline, t)?);
    each(&mut m, 0, &[Http10, Pipeline], cells(), f);
    let all: Vec<Interval> = cells().filter_map(|(n, t)| f(n, t)).collect();
    m.push_largest(1, "largest cell", &all);
    m
}

fn wan_revalidate_tenth(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let f = |net, t| Some(c.pa(net, Pipeline, t)? / c.pa(net, Http10, t)?);
    each(
        &mut m,
        0,
        &[Http10, Pipeline],
        [(Net::Wan, Revalidate)].into_iter(),
        f,
    );
    m
}

fn wan_revalidate_faster(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let f = |net, t| Some(c.sec(net, Pipeline, t)? / c.sec(net, Http10, t)?);
    each(
        &mut m,
        0,
        &[Http10, Pipeline],
        [(Net::Wan, Revalidate)].into_iter(),
        f,
    );
    m
}

fn pipeline_3x_over_http11(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let f = |net, t| Some(c.pa(net, Http11, t)? / c.pa(net, Pipeline, t)?);
    each(
        &mut m,
        0,
        &[Http11, Pipeline],
        [(Net::Wan, Revalidate)].into_iter(),
        f,
    );
    m
}

fn http11_slower_than_http10(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    each(&mut m, 0, &[Http10, Http11], cells(), |net, t| {
        Some(c.sec(net, Http11, t)? / c.sec(net, Http10, t)?)
    });
    m
}

fn pipeline_faster_than_http10(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    each(&mut m, 0, &[Http10, Pipeline], cells(), |net, t| {
        Some(c.sec(net, Pipeline, t)? / c.sec(net, Http10, t)?)
    });
    m
}

fn pipelining_needed(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let sts = [Http10, Http11, Pipeline];
    each(&mut m, 0, &sts, cells(), |net, t| {
        Some(c.sec(net, Http11, t)? / c.sec(net, Http10, t)?)
    });
    // The second quantity over the same cells (those with HTTP/1.0).
    for (net, t) in cells() {
        if let (Some(_), Some(p), Some(h)) = (
            c.sec(net, Http10, t),
            c.sec(net, Pipeline, t),
            c.sec(net, Http11, t),
        ) {
            m.push(1, format!("{net}/{t}"), p / h);
        }
    }
    m
}

/// The Nagle-on cells of these results against the baseline's, as
/// (label, Nagle-on / Nagle-off seconds), or why there is nothing to read.
/// `buffered`: the server buffering the sentence is about.
fn nagle_ratios(
    c: &MicroscapeCtx,
    buffered: bool,
    keep: impl Fn(&Key) -> bool,
) -> Result<Vec<(String, Interval)>, Measured> {
    let n = &c.nagle;
    if !n.on {
        return Err(Measured::missing(
            "runs with Nagle's algorithm on (bench --nagle) beside a Nagle-off baseline of the same bench (--baseline): these results have Nagle off",
        ));
    }
    match n.server_buffers {
        None => {
            return Err(Measured::not_testable(
                "whether the server buffered its responses is unknown (a --server-cmd server, or runs of several servers)",
            ))
        }
        Some(b) if b != buffered => {
            return Err(Measured::not_testable(if buffered {
                "the server wrote each response as it was ready (nginx, or pagewire --server-flush each-response): the sentence is about servers that buffer pipelined responses"
            } else {
                "the server held pipelined responses until no request was left (pagewire's default, Apache): the sentence is about implementations whose buffering changed (bench --server nginx, or --server-flush each-response)"
            }))
        }
        Some(_) => {}
    }
    let base = match &n.baseline {
        None => {
            return Err(Measured::missing(
                "the Nagle-off baseline (bench --nagle --baseline RESULTS_JSON, or ../results.json beside these results)",
            ))
        }
        Some(Err(why)) => return Err(Measured::missing(format!("a usable Nagle-off baseline: {why}"))),
        Some(Ok(b)) => b,
    };
    let mut v = Vec::new();
    for (k, on) in c.cells.iter().filter(|(k, _)| keep(k)) {
        if let Some(off) = base.get(k) {
            let (initial, net, st, t) = k;
            let label = format!(
                "{net}/{st}/{t}{}",
                if *initial { " (initial robot)" } else { "" }
            );
            v.push((label, on.seconds.interval() / off.seconds.interval()));
        }
    }
    if v.is_empty() {
        return Err(Measured::missing(
            "a cell measured both with Nagle on and in the baseline",
        ));
    }
    Ok(v)
}

fn nagle_dramatic(c: &MicroscapeCtx) -> Measured {
    let v = match nagle_ratios(c, false, |_| true) {
        Ok(v) => v,
        Err(m) => return m,
    };
    let all: Vec<Interval> = v.iter().map(|x| x.1).collect();
    let top = v
        .iter()
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value))
        .map(|x| x.0.clone())
        .unwrap_or_default();
    let mut m = Measured::new();
    m.push_largest(0, format!("largest cell ({top})"), &all);
    m.push_largest(1, format!("largest cell ({top})"), &all);
    m
}

fn nagle_harmless(c: &MicroscapeCtx) -> Measured {
    let v = match nagle_ratios(c, true, |(initial, _, st, _)| {
        !initial && matches!(st, Pipeline | PipelineDeflate)
    }) {
        Ok(v) => v,
        Err(m) => return m,
    };
    let mut m = Measured::new();
    for (label, iv) in v {
        m.push(0, label, iv);
    }
    m
}

/// The sweep's RTTs, ascending, in microseconds.
fn sweep_rtts(c: &MicroscapeCtx) -> Vec<u64> {
    let mut v: Vec<u64> = c.sweep.keys().map(|k| k.0).collect();
    v.dedup();
    v
}

fn higher_latency_better(c: &MicroscapeCtx) -> Measured {
    let rtts = sweep_rtts(c);
    if rtts.len() < 2 {
        return Measured::missing(if rtts.is_empty() {
            "a WAN round-trip-time sweep (bench --rtt-sweep 20ms,50ms,90ms,200ms,400ms): these results have none".to_string()
        } else {
            "a WAN round-trip-time sweep of at least two RTTs (these results have one)".to_string()
        });
    }
    let ms = |us: u64| spec_ms(us);
    let mut m = Measured::new();
    let mut shown = Vec::new();
    for t in Test::ALL {
        let at = |us: u64| {
            let p = c.sweep.get(&(us, Pipeline, t))?.seconds.interval();
            let h = c.sweep.get(&(us, Http10, t))?.seconds.interval();
            Some(p / h)
        };
        let measured = rtts.iter().any(|&u| {
            c.sweep.contains_key(&(u, Pipeline, t)) || c.sweep.contains_key(&(u, Http10, t))
        });
        if !measured {
            continue;
        }
        let pts: Vec<(u64, Interval)> = rtts.iter().filter_map(|&us| Some((us, at(us)?))).collect();
        for &us in rtts.iter().filter(|&&us| at(us).is_none()) {
            m.absent(format!("wan/{t} at {} ms (pipeline and http10)", ms(us)));
        }
        for w in pts.windows(2) {
            let ((lo, a), (hi, b)) = (w[0], w[1]);
            m.push(0, format!("wan/{t}: {} -> {} ms", ms(lo), ms(hi)), b / a);
        }
        if !pts.is_empty() {
            shown.push(format!(
                "{t}: {}",
                pts.iter()
                    .map(|(us, iv)| format!("{} ms {}", ms(*us), iv.show(2)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if m.cells.is_empty() && m.missing.is_empty() {
        m.absent("pipeline and http10 at two RTTs of the sweep");
    }
    m.with_note(format!(
        "pipeline / http10 seconds per RTT: {}",
        shown.join("; ")
    ))
}

/// Microseconds as milliseconds, without trailing zeros.
fn spec_ms(us: u64) -> String {
    crate::claims::spec::fmt_num(us as f64 / 1000.0)
}

fn firsts() -> impl Iterator<Item = (Net, Test)> {
    Net::PAPER.into_iter().map(|n| (n, First))
}

fn deflate_16_12(c: &MicroscapeCtx) -> Measured {
    if c.deflate_served() == Some(false) {
        return Measured::not_testable(
            "the server sent no deflate-coded page (pipeline-deflate moved as many bytes as pipeline): nginx and most --server-cmd servers have no precompressed deflate",
        );
    }
    let mut m = Measured::new();
    each(
        &mut m,
        0,
        &[Pipeline, PipelineDeflate],
        firsts(),
        |net, t| Some((c.pa(net, PipelineDeflate, t)? / c.pa(net, Pipeline, t)?).one_minus()),
    );
    each(
        &mut m,
        1,
        &[Pipeline, PipelineDeflate],
        firsts(),
        |net, t| Some((c.sec(net, PipelineDeflate, t)? / c.sec(net, Pipeline, t)?).one_minus()),
    );
    m
}

fn deflate_helps_everywhere(c: &MicroscapeCtx) -> Measured {
    if c.deflate_served() == Some(false) {
        return Measured::not_testable(
            "the server sent no deflate-coded page (pipeline-deflate moved as many bytes as pipeline)",
        );
    }
    let mut m = Measured::new();
    each(
        &mut m,
        0,
        &[Pipeline, PipelineDeflate],
        firsts(),
        |net, t| Some(c.pa(net, PipelineDeflate, t)? / c.pa(net, Pipeline, t)?),
    );
    each(
        &mut m,
        1,
        &[Pipeline, PipelineDeflate],
        firsts(),
        |net, t| Some(c.sec(net, PipelineDeflate, t)? / c.sec(net, Pipeline, t)?),
    );
    m
}

/// A payload saving of `st` over http10 per first-retrieval cell; runs
/// without payload are reported missing.
fn payload_saving(c: &MicroscapeCtx, m: &mut Measured, q: usize, st: Strategy) {
    for net in Net::PAPER {
        let label = if st == Pipeline {
            format!("{net}/first")
        } else {
            format!("{net}/first/{st}")
        };
        match (c.bytes(net, Http10, First), c.bytes(net, st, First)) {
            (Some(Ok(a)), Some(Ok(b))) => m.push(q, label, (b / a).one_minus()),
            (Some(_), Some(_)) => m.absent(format!("{label}: {NO_PAYLOAD}")),
            _ if paper_has(net, &[Http10]) => m.absent(label),
            _ => {}
        }
    }
}

fn first_bytes_few_percent(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    payload_saving(c, &mut m, 0, Pipeline);
    m
}

fn bandwidth_2_40(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    for st in [Http11, Pipeline, PipelineDeflate] {
        payload_saving(c, &mut m, 0, st);
    }
    m
}

fn first_time_halved(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    each(
        &mut m,
        0,
        &[Http10, Pipeline],
        [(Net::Lan, First), (Net::Wan, First)].into_iter(),
        |net, t| Some(c.sec(net, Pipeline, t)? / c.sec(net, Http10, t)?),
    );
    // Why a cell can fail: both strategies near the link's line rate.
    let mut bound = Vec::new();
    for net in [Net::Lan, Net::Wan] {
        if let (Some(a), Some(b), Some(Ok(ba))) = (
            c.sec(net, Http10, First),
            c.sec(net, Pipeline, First),
            c.bytes(net, Pipeline, First),
        ) {
            let wire = ba.value * 8.0 / net.nominal_rate_bps();
            if b.value / a.value > 0.75 {
                bound.push(format!(
                    "{net} is wire-bound: pipelining's {:.0} payload bytes take {wire:.3} s at the profile's {} alone; pipeline {:.2} s, http10 {:.2} s",
                    ba.value,
                    net.nominal_rate_label(),
                    b.value,
                    a.value
                ));
            }
        }
    }
    if !bound.is_empty() {
        m = m.with_note(bound.join("; "));
    }
    m
}

fn packets_per_connection(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    each(&mut m, 0, &[Http10, Pipeline], cells(), |net, t| {
        let (a, ca) = (c.pa(net, Http10, t)?, c.socks(net, Http10, t)?);
        let (b, cb) = (c.pa(net, Pipeline, t)?, c.socks(net, Pipeline, t)?);
        (ca.value > 0.0 && cb.value > 0.0).then(|| (b / cb) / (a / ca))
    });
    m
}

fn packet_size_doubled(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    for net in Net::PAPER {
        let label = format!("{net}/first");
        match (
            c.bytes(net, Http10, First),
            c.pa(net, Http10, First),
            c.bytes(net, Pipeline, First),
            c.pa(net, Pipeline, First),
        ) {
            (Some(Ok(ba)), Some(a), Some(Ok(bb)), Some(b)) => m.push(0, label, (bb / b) / (ba / a)),
            (Some(_), Some(_), Some(_), Some(_)) => m.absent(format!("{label}: {NO_PAYLOAD}")),
            _ if paper_has(net, &[Http10]) => m.absent(label),
            _ => {}
        }
    }
    m
}

fn persistent_saves_packets(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    let get = |st| c.cells.get(&(true, Net::Lan, st, Revalidate));
    let Some(h10) = get(Http10) else {
        return Measured::missing(
            "the initial (Table 3) robot's lan revalidation runs (bench without --no-initial)",
        );
    };
    for st in [Http11, Pipeline] {
        let Some(v) = get(st) else {
            m.absent(format!("lan/revalidate/{st} (initial robot)"));
            continue;
        };
        m.push(
            0,
            format!("lan/revalidate/{st}"),
            v.packets.interval() / h10.packets.interval(),
        );
        m.push(
            1,
            format!("lan/revalidate/{st}"),
            v.seconds.interval() / h10.seconds.interval(),
        );
    }
    m
}

fn time_gain_less_dramatic(c: &MicroscapeCtx) -> Measured {
    let mut m = Measured::new();
    each(&mut m, 0, &[Http10, Pipeline], firsts(), |net, t| {
        let fp = c.pa(net, Http10, t)? / c.pa(net, Pipeline, t)?;
        let ft = c.sec(net, Http10, t)? / c.sec(net, Pipeline, t)?;
        Some(fp / ft)
    });
    m
}

fn zlib_beats_modem(c: &MicroscapeCtx) -> Measured {
    let get = |st| c.modem.get(&(false, Net::Ppp, st, First));
    match (get(Pipeline), get(PipelineDeflate)) {
        (Some(p), Some(d)) => {
            let mut m = Measured::new();
            m.push(0, "ppp+v42bis/first", d.seconds.interval() / p.seconds.interval());
            m.push(1, "ppp+v42bis/first", d.packets.interval() / p.packets.interval());
            m
        }
        _ => Measured::missing(
            "ppp runs of pipeline and pipeline-deflate over a V.42bis-compressed link (bench --net ppp --link-compress v42bis)",
        ),
    }
}

fn page_42k_to_11k(c: &MicroscapeCtx) -> Measured {
    let Some(p) = c.page else {
        return Measured::missing("page facts (results.json page_facts)");
    };
    let mut m = Measured::new();
    m.push(
        0,
        format!("{} -> {} bytes", p.html_bytes, p.html_deflate_bytes),
        Interval::exact(p.html_deflate_bytes as f64 / p.html_bytes as f64),
    );
    m
}

fn lowercase_tags_compress_better(c: &MicroscapeCtx) -> Measured {
    let Some(p) = c.page else {
        return Measured::missing("page facts (results.json page_facts)");
    };
    let mut m = Measured::new();
    m.push(
        0,
        format!(
            "lower {:.3} / mixed {:.3}",
            p.ratio_lower_case, p.ratio_mixed_case
        ),
        Interval::exact(p.ratio_lower_case / p.ratio_mixed_case),
    );
    m
}

/// The paper's Tables 3-9 of one server (Jigsaw: Tables 3, 4, 6, 8;
/// Apache: 5, 7, 9) as a context of exact cells. Connections: HTTP/1.0
/// opens one per object (43; Table 3 counts 40 for revalidation), the
/// HTTP/1.1 strategies one. Table 3 (Jigsaw only) fills the initial robot's
/// cells.
pub fn paper_ctx(server: super::reference::Server) -> MicroscapeCtx {
    let mut ctx = MicroscapeCtx::default();
    for r in super::reference::TABLES_4_TO_9
        .iter()
        .filter(|r| r.server == server)
    {
        let socks = match (r.strategy, r.test) {
            (Http10, First) => 43.0,
            (Http10, Revalidate) => 40.0,
            _ => 1.0,
        };
        ctx.cells.insert(
            (false, r.net, r.strategy, r.test),
            Vals {
                packets: Estimate::exact(r.packets),
                payload: Some(Estimate::exact(r.bytes)),
                seconds: Estimate::exact(r.seconds),
                sockets: Estimate::exact(socks),
            },
        );
    }
    if server == super::reference::Server::Jigsaw {
        for r in super::reference::TABLE_3 {
            ctx.cells.insert(
                (true, Net::Lan, r.strategy, Revalidate),
                Vals {
                    packets: Estimate::exact(r.packets_total as f64),
                    payload: None,
                    seconds: Estimate::exact(r.seconds),
                    sockets: Estimate::exact(r.total_sockets as f64),
                },
            );
        }
    }
    ctx
}

/// Every claim rule on the paper's own tables, per server.
pub fn paper_self_test() -> Vec<(super::reference::Server, Vec<Claim>)> {
    use super::reference::Server;
    [Server::Jigsaw, Server::Apache]
        .into_iter()
        .map(|s| {
            let claims = judge(&paper_ctx(s))
                .into_iter()
                .filter(|c| c.kind == ClaimKind::Claim)
                .collect();
            (s, claims)
        })
        .collect()
}

/// The self-test as text.
pub fn render_self_test() -> String {
    let tables = |s: super::reference::Server| match s {
        super::reference::Server::Jigsaw => "Jigsaw, Tables 3, 4, 6, 8",
        super::reference::Server::Apache => "Apache, Tables 5, 7, 9",
    };
    let runs: Vec<(String, Vec<Claim>)> = paper_self_test()
        .into_iter()
        .map(|(s, c)| (tables(s).to_string(), c))
        .collect();
    crate::claims::render_self_test("paper 001", &runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::spec::Verdict;
    use crate::microscape::reference::Server;

    fn verdict(claims: &[Claim], id: &str) -> Verdict {
        claims
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id}"))
            .verdict
    }

    /// What the paper's own tables say of each sentence, by the rule's text:
    /// its Table 5 has HTTP/1.1 at 0.40 s against HTTP/1.0's 0.41 s on LAN
    /// revalidation (not "worse"), Jigsaw's LAN deflate row is slower
    /// (0.71 vs 0.68 s: not "helped"), the first-retrieval byte savings are
    /// 11-23% (not "a few percent"), HTTP/1.0's 43 connections give 16x more
    /// packets per connection (not "between two and ten").
    #[test]
    fn self_test_on_the_papers_tables() {
        let r = paper_self_test();
        let (jig, apa) = (&r[0].1, &r[1].1);
        use Verdict::*;
        for id in [
            "wan-revalidate-tenth",
            "wan-revalidate-faster",
            "pipeline-3x-over-http11",
            "pipeline-faster-than-http10",
            "deflate-16-12",
            "first-time-halved",
            "packet-size-doubled",
            "bandwidth-2-40",
            "time-gain-less-dramatic",
            "pipeline-2x-packets",
        ] {
            assert_eq!(verdict(jig, id), Confirmed, "Jigsaw {id}");
            assert_eq!(verdict(apa, id), Confirmed, "Apache {id}");
        }
        assert_eq!(verdict(jig, "persistent-saves-packets"), Confirmed);
        // Without pipelining HTTP/1.1 is never faster in Jigsaw's tables;
        // Apache's LAN revalidation (0.40 s against 0.41 s) is.
        assert_eq!(verdict(jig, "pipelining-needed-to-outperform"), Confirmed);
        assert_eq!(
            verdict(apa, "pipelining-needed-to-outperform"),
            Contradicted
        );
        // The paper printed one WAN: no sweep, not measured.
        assert_eq!(verdict(jig, "higher-latency-better"), Inconclusive);
        assert_eq!(verdict(apa, "http11-slower-than-http10"), Contradicted);
        assert_eq!(verdict(jig, "deflate-helps-everywhere"), Contradicted);
        assert_eq!(verdict(jig, "first-bytes-few-percent"), Contradicted);
        assert_eq!(verdict(jig, "packets-per-connection"), Contradicted);
        // No V.42bis run in a table: not measured.
        assert_eq!(verdict(jig, "zlib-beats-modem-compression"), Inconclusive);
        let text = render_self_test();
        assert!(text.contains("packets-per-connection"), "{text}");
    }

    /// The bands that summarise the paper's tables contain its values.
    #[test]
    fn table_bands_contain_the_papers_values() {
        for s in [Server::Jigsaw, Server::Apache] {
            let claims = judge(&paper_ctx(s));
            for id in [
                "deflate-16-12",
                "first-time-halved",
                "pipeline-3x-over-http11",
                "packet-size-doubled",
                "pipeline-2x-packets",
            ] {
                let c = claims.iter().find(|c| c.id == id).unwrap();
                for cell in &c.cells {
                    assert_eq!(
                        cell.position,
                        crate::claims::spec::Position::Inside,
                        "{s:?} {id} {cell:?}"
                    );
                }
            }
        }
    }
}
