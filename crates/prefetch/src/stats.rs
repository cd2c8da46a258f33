//! `pagewire prefetch stats`: the statistics of an access log that bear on
//! prediction (who the clients are, how many successors a document has, how
//! strong the arcs are, how fast requests follow each other), printed beside
//! what paper 003 says of DEC's log, and how useful the prefetches through
//! arcs of each weight turn out to be (a calibration of the predictor).

use std::fmt::Write as _;

use serde::Serialize;

use crate::graph::{DependencyGraph, NodeId, Window};
use crate::log::AccessLog;
use crate::params::MaxCandidates;
use crate::sim::{simulate_lanes, train, LaneSpec, Model, SimOptions, Split, Trace};

/// Distribution summary of a count or a time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Dist {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Dist {
    pub fn of(mut v: Vec<f64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_by(f64::total_cmp);
        let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
        Dist {
            n: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: v[v.len() - 1],
        }
    }

    fn line(&self) -> String {
        format!(
            "mean {:.2}, median {}, p90 {}, p99 {}, max {}",
            self.mean, self.p50, self.p90, self.p99, self.max
        )
    }
}

/// What the graph says after learning the whole log with window `w`.
#[derive(Clone, Debug, Serialize)]
pub struct GraphStats {
    pub w: usize,
    /// Documents requested at least [`MIN_REQUESTS`] times.
    pub documents: usize,
    /// Distinct successors of each of those documents.
    pub successors: Dist,
    /// Share of those documents whose successor count is 0, 1, 2, 3-5,
    /// 6-10, 11-20, > 20.
    pub successors_hist: [f64; 7],
    /// Arcs out of those documents by weight, tenths (`[9]`: 0.9-1.0).
    pub arc_weight_hist: [u64; 10],
    /// Share of the requests for those documents made to a document whose
    /// best arc has a weight in each tenth (`[0]` also holds "no arc").
    pub best_arc_weight_by_requests: [f64; 10],
    /// Share of arcs with weight >= 0.5 that end at an image.
    pub strong_arcs_to_images: f64,
}

/// Usefulness of the prefetches advised through arcs of each weight.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    pub w: usize,
    pub p: f64,
    pub prefetched_by_weight: [u64; 10],
    pub useful_by_weight: [u64; 10],
}

/// Everything paper 003 says of the DEC log it simulated (§1, §8, §8.1,
/// §8.2.1); nothing else about it is in the paper.
pub const DEC_FACTS: &str = "\
what paper 003 says of DEC's log (nothing more is in the paper):
  server: DEC's commercial Web server, NCSA httpd, no GETALL/GETLIST (§8)
  entries used: 50,000 to train + the next 70,000 simulated (§8), so >= 120,000
  clients: one per host assumed (\"not more than one Web client running on a host\", §7.2)
  no-prefetching miss rate (4 MB LRU per host, 8 KB blocks): about 0.88 (§8.1)
  clients assumed to have Berkeley-like connectivity to DEC (§8.2.1)
  sizes: a sample of 200,000 retrievals, server not named: mean 12,925 B, median 1,770 B, 12,727 zero-length (§1)
";

/// Threshold of the calibration runs: low enough to see arcs of most
/// weights, high enough not to flood the caches.
pub const CALIBRATION_P: f64 = 0.3;

/// Documents need this many requests before their arcs are counted.
pub const MIN_REQUESTS: u32 = 5;

/// Everything `pagewire prefetch stats` prints for one log.
#[derive(Clone, Debug, Serialize)]
pub struct LogStats {
    pub lines: u64,
    pub file_accesses: usize,
    pub hosts: usize,
    pub documents: usize,
    pub span_s: i64,
    pub accesses_per_host: Dist,
    pub hosts_with_one_access: f64,
    /// Share of accesses made by the busiest 1, 10 and 1% of hosts.
    pub top1_share: f64,
    pub top10_share: f64,
    pub top1pct_share: f64,
    /// The busiest hosts with their accesses.
    pub top_hosts: Vec<(String, u64)>,
    /// Hosts whose name marks a proxy, gateway or online service.
    pub proxy_like_hosts: usize,
    pub proxy_like_share: f64,
    /// Share of accesses to images (.gif, .jpg, .jpeg, .xbm, .png).
    pub image_share: f64,
    /// Bytes of successful (200) responses, as the paper's sample of 200,000
    /// retrievals (§1): mean, median, zero-length count.
    pub response_bytes: Dist,
    pub zero_length_responses: u64,
    /// Seconds between a host's consecutive accesses.
    pub gap_s: Dist,
    /// Share of gaps 0, 1, 2-5, 6-30, 31-300, 301-1800, > 1800 s.
    pub gap_hist: [f64; 7],
    /// Sessions: a host's accesses with no gap > 30 min.
    pub sessions: usize,
    pub accesses_per_session: Dist,
    pub graphs: Vec<GraphStats>,
    pub calibration: Vec<Calibration>,
}

fn is_image(url: &[u8]) -> bool {
    let lower = url.to_ascii_lowercase();
    let path = lower.split(|&b| b == b'?').next().unwrap_or(&[]);
    [".gif", ".jpg", ".jpeg", ".xbm", ".png"]
        .iter()
        .any(|ext| path.ends_with(ext.as_bytes()))
}

fn is_proxy_like(host: &[u8]) -> bool {
    let h = host.to_ascii_lowercase();
    let h = String::from_utf8_lossy(&h);
    [
        "proxy",
        "cache",
        "gate",
        "firewall",
        "fw.",
        "compuserve",
        "aol.com",
        "prodigy",
    ]
    .iter()
    .any(|k| h.contains(k))
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

const GAP_EDGES: [i64; 6] = [0, 1, 5, 30, 300, 1800];
const SESSION_GAP_S: f64 = 1800.0;

fn gap_bin(g: f64) -> usize {
    GAP_EDGES
        .iter()
        .position(|&e| g <= e as f64)
        .unwrap_or(GAP_EDGES.len())
}

fn successor_bin(n: usize) -> usize {
    match n {
        0 => 0,
        1 => 1,
        2 => 2,
        3..=5 => 3,
        6..=10 => 4,
        11..=20 => 5,
        _ => 6,
    }
}

fn graph_stats(log: &AccessLog, trace: &Trace, w: usize, images: &[bool]) -> GraphStats {
    // The whole log, every arc kept: the strongest statement the log can make.
    let mut graph = DependencyGraph::new(crate::graph::GraphLimits {
        max_arcs_per_node: usize::MAX,
    });
    let mut windows: Vec<Option<Window>> = vec![None; log.hosts.len()];
    for a in &trace.accesses {
        let win = windows[a.host as usize].get_or_insert_with(|| Window::new(w));
        graph.observe(win, a.url);
    }
    let mut succ = Vec::new();
    let mut succ_hist = [0u64; 7];
    let mut arc_hist = [0u64; 10];
    let mut best_by_req = [0u64; 10];
    let mut requests = 0u64;
    let (mut strong, mut strong_img) = (0u64, 0u64);
    let mut ranked: Vec<(f64, NodeId)> = Vec::new();
    for id in 0..log.urls.len() as NodeId {
        let count = graph.count(id);
        if count < MIN_REQUESTS {
            continue;
        }
        graph.ranked(id, &mut ranked);
        succ.push(ranked.len() as f64);
        succ_hist[successor_bin(ranked.len())] += 1;
        for &(wt, to) in &ranked {
            arc_hist[crate::sim::weight_bin(wt)] += 1;
            if wt >= 0.5 - 1e-9 {
                strong += 1;
                strong_img += u64::from(images[to as usize]);
            }
        }
        let best = ranked.first().map_or(0.0, |r| r.0);
        best_by_req[crate::sim::weight_bin(best)] += u64::from(count);
        requests += u64::from(count);
    }
    let documents = succ.len();
    GraphStats {
        w,
        documents,
        successors: Dist::of(succ),
        successors_hist: succ_hist.map(|n| share(n, documents as u64)),
        arc_weight_hist: arc_hist,
        best_arc_weight_by_requests: best_by_req.map(|n| share(n, requests)),
        strong_arcs_to_images: share(strong_img, strong),
    }
}

fn calibration(trace: &Trace, w: usize, p: f64) -> Calibration {
    let opts = SimOptions::default();
    let lanes = [LaneSpec {
        threshold: p,
        model: Model::Simple,
    }];
    let trained = train(trace, w, &opts);
    let c = simulate_lanes(trace, w, MaxCandidates::All, &lanes, trained, &opts)[0];
    Calibration {
        w,
        p,
        prefetched_by_weight: c.prefetched_by_weight,
        useful_by_weight: c.useful_by_weight,
    }
}

impl LogStats {
    /// Statistics of `log`'s file accesses (GET, status 200/203/206/304);
    /// the calibration runs the simple model at p = [`CALIBRATION_P`] with the paper's
    /// split (or its proportion), for w = 2 and 4.
    pub fn compute(log: &AccessLog) -> LogStats {
        let trace = Trace::new(log, Split::default());
        let acc = &trace.accesses;
        let images: Vec<bool> = (0..log.urls.len() as u32)
            .map(|u| is_image(log.urls.name(u)))
            .collect();

        let mut per_host = vec![0u64; log.hosts.len()];
        let mut docs = vec![false; log.urls.len()];
        let mut img = 0u64;
        let (mut t_min, mut t_max) = (i64::MAX, i64::MIN);
        let mut gaps = Vec::new();
        let mut gap_hist = [0u64; 7];
        let mut sessions = Vec::new();
        let mut open_session: Vec<Option<usize>> = vec![None; log.hosts.len()];
        for a in acc {
            per_host[a.host as usize] += 1;
            docs[a.url as usize] = true;
            img += u64::from(images[a.url as usize]);
            t_min = t_min.min(a.time_s);
            t_max = t_max.max(a.time_s);
            if a.prev_gap_s.is_finite() {
                gaps.push(a.prev_gap_s);
                gap_hist[gap_bin(a.prev_gap_s)] += 1;
            }
            let slot = &mut open_session[a.host as usize];
            match slot {
                Some(s) if a.prev_gap_s <= SESSION_GAP_S => sessions[*s] += 1.0,
                _ => {
                    sessions.push(1.0);
                    *slot = Some(sessions.len() - 1);
                }
            }
        }
        let n = acc.len() as u64;
        let mut busy: Vec<(u64, u32)> = per_host
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(h, &c)| (c, h as u32))
            .collect();
        busy.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let hosts = busy.len();
        let top = |k: usize| share(busy.iter().take(k).map(|b| b.0).sum(), n);
        let proxies: Vec<&(u64, u32)> = busy
            .iter()
            .filter(|(_, h)| is_proxy_like(log.hosts.name(*h)))
            .collect();
        let responses: Vec<f64> = log
            .requests
            .iter()
            .filter(|r| r.status == 200)
            .map(|r| r.bytes.unwrap_or(0) as f64)
            .collect();
        let zero = responses.iter().filter(|&&b| b == 0.0).count() as u64;
        let gap_count = gaps.len() as u64;

        LogStats {
            lines: log.stats.lines,
            file_accesses: acc.len(),
            hosts,
            documents: docs.iter().filter(|&&d| d).count(),
            span_s: if acc.is_empty() { 0 } else { t_max - t_min },
            accesses_per_host: Dist::of(busy.iter().map(|b| b.0 as f64).collect()),
            hosts_with_one_access: share(
                busy.iter().filter(|b| b.0 == 1).count() as u64,
                hosts as u64,
            ),
            top1_share: top(1),
            top10_share: top(10),
            top1pct_share: top(hosts.div_ceil(100)),
            top_hosts: busy
                .iter()
                .take(5)
                .map(|&(c, h)| (String::from_utf8_lossy(log.hosts.name(h)).into_owned(), c))
                .collect(),
            proxy_like_hosts: proxies.len(),
            proxy_like_share: share(proxies.iter().map(|b| b.0).sum(), n),
            image_share: share(img, n),
            response_bytes: Dist::of(responses),
            zero_length_responses: zero,
            gap_s: Dist::of(gaps),
            gap_hist: gap_hist.map(|c| share(c, gap_count)),
            sessions: sessions.len(),
            accesses_per_session: Dist::of(sessions),
            graphs: [2, 4]
                .iter()
                .map(|&w| graph_stats(log, &trace, w, &images))
                .collect(),
            calibration: if trace.simulate > 0 {
                [2, 4]
                    .iter()
                    .map(|&w| calibration(&trace, w, CALIBRATION_P))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// The text `pagewire prefetch stats` prints: each statistic beside what
    /// paper 003 says of DEC's log.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
        let row = |o: &mut String, what: &str, ours: String| {
            let _ = writeln!(o, "{what:<56} {ours}");
        };
        o.push_str(DEC_FACTS);
        o.push_str("\nthis log (file accesses: GET with status 200/203/206/304):\n");
        row(&mut o, "lines", self.lines.to_string());
        row(
            &mut o,
            "file accesses (GET 200/203/206/304)",
            self.file_accesses.to_string(),
        );
        row(
            &mut o,
            "span",
            format!("{:.1} h", self.span_s as f64 / 3600.0),
        );
        row(&mut o, "client hosts", self.hosts.to_string());
        row(&mut o, "distinct documents", self.documents.to_string());
        row(&mut o, "accesses per host", self.accesses_per_host.line());
        row(
            &mut o,
            "hosts with a single access",
            pct(self.hosts_with_one_access),
        );
        row(
            &mut o,
            "share of accesses: top host / top 10 / top 1%",
            format!(
                "{} / {} / {}",
                pct(self.top1_share),
                pct(self.top10_share),
                pct(self.top1pct_share)
            ),
        );
        for (h, c) in &self.top_hosts {
            row(&mut o, "  busy host", format!("{h} {c}"));
        }
        row(
            &mut o,
            "proxy/gateway/online-service hosts (by name)",
            format!(
                "{} hosts, {} of accesses",
                self.proxy_like_hosts,
                pct(self.proxy_like_share)
            ),
        );
        row(&mut o, "accesses to images", pct(self.image_share));
        row(
            &mut o,
            "bytes of 200 responses",
            format!(
                "mean {:.0}, median {:.0}, {} zero-length",
                self.response_bytes.mean, self.response_bytes.p50, self.zero_length_responses
            ),
        );
        row(
            &mut o,
            "gap between a host's accesses (s)",
            self.gap_s.line(),
        );
        row(
            &mut o,
            "  gaps 0 / 1 / 2-5 / 6-30 / 31-300 / 301-1800 / >1800 s",
            self.gap_hist
                .iter()
                .map(|&x| format!("{:.0}", 100.0 * x))
                .collect::<Vec<_>>()
                .join(" / ")
                + " %",
        );
        row(
            &mut o,
            "sessions (no gap > 30 min)",
            format!(
                "{}, accesses per session {}",
                self.sessions,
                self.accesses_per_session.line()
            ),
        );
        for g in &self.graphs {
            let _ = writeln!(
                o,
                "\ngraph after the whole log, w = {} (documents with >= {MIN_REQUESTS} requests: {}):",
                g.w, g.documents
            );
            row(&mut o, "  successors per document", g.successors.line());
            row(
                &mut o,
                "  documents with 0 / 1 / 2 / 3-5 / 6-10 / 11-20 / >20",
                g.successors_hist
                    .iter()
                    .map(|&x| format!("{:.0}", 100.0 * x))
                    .collect::<Vec<_>>()
                    .join(" / ")
                    + " %",
            );
            let arcs: u64 = g.arc_weight_hist.iter().sum();
            row(
                &mut o,
                "  arcs by weight, tenths 0.0-0.1 ... 0.9-1.0",
                format!(
                    "{} arcs: {}",
                    arcs,
                    g.arc_weight_hist
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            );
            row(
                &mut o,
                "  requests by their document's best arc, tenths",
                g.best_arc_weight_by_requests
                    .iter()
                    .map(|&x| format!("{:.0}", 100.0 * x))
                    .collect::<Vec<_>>()
                    .join(" ")
                    + " %",
            );
            row(
                &mut o,
                "  arcs >= 0.5 that end at an image",
                pct(g.strong_arcs_to_images),
            );
        }
        for c in &self.calibration {
            let _ = writeln!(
                o,
                "\nprefetches by the weight of the advising arc (simple model, w = {}, p = {}, i = all; useful / prefetched):",
                c.w, c.p
            );
            let cells: Vec<String> = (0..10)
                .filter(|&k| c.prefetched_by_weight[k] > 0)
                .map(|k| {
                    format!(
                        "{:.1}-{:.1}: {}/{} = {:.2}",
                        k as f64 / 10.0,
                        (k + 1) as f64 / 10.0,
                        c.useful_by_weight[k],
                        c.prefetched_by_weight[k],
                        share(c.useful_by_weight[k], c.prefetched_by_weight[k])
                    )
                })
                .collect();
            let _ = writeln!(o, "  {}", cells.join("; "));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_the_sample_log() {
        let log = AccessLog::read_path(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sample.log"
        )))
        .unwrap();
        let s = LogStats::compute(&log);
        assert_eq!(s.lines, 3000);
        let per_host_total = s.accesses_per_host.mean * s.hosts as f64;
        assert!((per_host_total - s.file_accesses as f64).abs() < 1e-6);
        assert!(s.top1_share <= s.top10_share && s.top10_share <= 1.0);
        let gaps: f64 = s.gap_hist.iter().sum();
        assert!((gaps - 1.0).abs() < 1e-9);
        assert_eq!(s.graphs.len(), 2);
        for c in &s.calibration {
            for k in 0..10 {
                assert!(c.useful_by_weight[k] <= c.prefetched_by_weight[k]);
            }
            // p = 0.3: nothing is advised through a weaker arc.
            assert_eq!(c.prefetched_by_weight[..3], [0, 0, 0]);
        }
        let text = s.text();
        assert!(text.contains("successors per document"), "{text}");
        assert!(text.contains("what paper 003 says of DEC's log"));
    }

    #[test]
    fn names_and_bins() {
        assert!(is_image(b"/icons/Up.GIF"));
        assert!(is_image(b"/a.jpg?x=1"));
        assert!(!is_image(b"/Rules.html"));
        assert!(is_proxy_like(b"proxy.aol.com"));
        assert!(is_proxy_like(b"gate.net"));
        assert!(!is_proxy_like(b"ws1.example.edu"));
        assert_eq!(gap_bin(0.0), 0);
        assert_eq!(gap_bin(1.0), 1);
        assert_eq!(gap_bin(3.0), 2);
        assert_eq!(gap_bin(4000.0), 6);
        assert_eq!(successor_bin(7), 4);
        let d = Dist::of(vec![3.0, 1.0, 2.0]);
        assert_eq!((d.n, d.p50, d.max), (3, 2.0, 3.0));
    }
}
