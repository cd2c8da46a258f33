//! A synthetic log whose answer is known: every client host walks once down
//! a tree of documents, choosing child `j` with probability `q[j]` at every
//! level (a Markov chain with known transition probabilities). Over many
//! hosts the dependency graph's weights converge to those probabilities
//! (window 2: weight(A -> child j) = q[j]; window 3 adds weight(A ->
//! grandchild (j, l)) = q[j]·q[l]), and no document is requested twice by one
//! host, so without prefetching every access misses.
//!
//! [`expected`] computes what the simple model must report from the exact
//! probabilities, by enumerating every path of the tree — without the graph,
//! the caches or the log. For window 2 and i unlimited it is the closed form
//! of docs/prefetch.md: with S = the sum of the q[j] >= p, n = the number of
//! them and D levels, the miss rate is (1 + D·(1 − S)) / (D + 1) and the
//! net traffic increase in files is D·(n − S) / (D + 1).

use std::fmt::Write as _;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::sim::{completion_times, TimeModel};
use crate::variant::Schedule;

/// The tree and the population.
#[derive(Clone, Debug)]
pub struct MarkovSpec {
    /// Probability of each child (sums to 1).
    pub q: Vec<f64>,
    /// Levels below the root: each host makes `depth + 1` requests.
    pub depth: usize,
    /// Size of the root document, bytes.
    pub root_bytes: u64,
    /// Size of a document by its index among its siblings, bytes.
    pub child_bytes: Vec<u64>,
    /// Hosts walking (one walk each).
    pub hosts: usize,
    /// Walks in progress at once (their requests interleave in the log).
    pub concurrent: usize,
    /// Seconds between a host's requests.
    pub gap_s: i64,
    pub seed: u64,
    /// Share of the walks made through a proxy (one host name shared by many
    /// users: their requests mix in one window and one cache). The known
    /// answer ([`expected`]) holds only for 0.
    pub proxied_share: f64,
    /// Number of proxies the proxied walks are spread over.
    pub proxies: usize,
}

impl Default for MarkovSpec {
    fn default() -> Self {
        MarkovSpec {
            q: vec![0.7, 0.3],
            depth: 3,
            root_bytes: 2000,
            child_bytes: vec![1000, 5000],
            hosts: 20_000,
            concurrent: 4,
            gap_s: 10,
            seed: 17,
            proxied_share: 0.0,
            proxies: 1,
        }
    }
}

fn path_name(path: &[usize]) -> String {
    let mut s = String::from("/");
    for j in path {
        let _ = write!(s, "c{j}/");
    }
    s
}

impl MarkovSpec {
    fn bytes(&self, path: &[usize]) -> u64 {
        path.last()
            .map_or(self.root_bytes, |&j| self.child_bytes[j])
    }

    /// The log in Common Log Format: `hosts` walks, `concurrent` at a time,
    /// their requests interleaved round-robin; host names `m<N>.example`.
    pub fn log_text(&self) -> String {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut out = String::new();
        let mut t: i64 = 0;
        let k = self.concurrent.max(1);
        for batch in (0..self.hosts).collect::<Vec<_>>().chunks(k) {
            let hosts: Vec<String> = batch
                .iter()
                .map(|&h| {
                    if self.proxied_share > 0.0 && rng.random::<f64>() < self.proxied_share {
                        format!("proxy{}.example", h % self.proxies.max(1))
                    } else {
                        format!("m{h}.example")
                    }
                })
                .collect();
            let walks: Vec<Vec<usize>> = batch
                .iter()
                .map(|_| {
                    (0..self.depth)
                        .map(|_| {
                            let x: f64 = rng.random();
                            let mut acc = 0.0;
                            self.q
                                .iter()
                                .position(|&q| {
                                    acc += q;
                                    x < acc
                                })
                                .unwrap_or(self.q.len() - 1)
                        })
                        .collect()
                })
                .collect();
            for level in 0..=self.depth {
                for (h, walk) in hosts.iter().zip(&walks) {
                    let path = &walk[..level];
                    let secs = t;
                    let _ = writeln!(
                        out,
                        "{h} - - [{:02}/Jan/1996:{:02}:{:02}:{:02} +0000] \"GET {} HTTP/1.0\" 200 {}",
                        1 + secs / 86_400,
                        secs / 3600 % 24,
                        secs / 60 % 60,
                        secs % 60,
                        path_name(path),
                        self.bytes(path)
                    );
                }
                t += self.gap_s;
            }
        }
        out
    }
}

/// What the simple model must report, per host walk and as the paper's ratios.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Expected {
    /// Expected block misses per walk (every document is one block).
    pub misses: f64,
    pub accesses: f64,
    pub prefetches: f64,
    pub useful: f64,
    pub demand_bytes: f64,
    pub prefetch_bytes: f64,
    pub baseline_bytes: f64,
    pub miss_rate: f64,
    pub traffic_net_files: f64,
    pub traffic_net_bytes: f64,
    pub traffic_gross_bytes: f64,
    /// Expected access time per walk (a + b·size per miss) and per access.
    pub access_time_s: f64,
    pub avg_access_time_s: f64,
}

/// The realistic model (§8.2) on the chain: each host's requests are
/// `gap_s` apart, prefetches take a + b·x and are scheduled by `schedule`.
#[derive(Clone, Copy, Debug)]
pub struct Realistic {
    pub time: TimeModel,
    pub schedule: Schedule,
}

/// One path of the tree: its probability and what a walk down it costs.
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    pr: f64,
    misses: f64,
    accesses: f64,
    prefetches: f64,
    useful: f64,
    demand_bytes: f64,
    prefetch_bytes: f64,
    baseline_bytes: f64,
    access_time_s: f64,
}

/// Every path of the tree with what the predictor with the exact weights
/// does on it (simple model when `realistic` is `None`).
fn outcomes(
    spec: &MarkovSpec,
    w: usize,
    p: f64,
    i: usize,
    realistic: Option<Realistic>,
) -> Vec<Outcome> {
    let time = realistic.map_or(TimeModel::PAPER, |r| r.time);
    assert!((2..=3).contains(&w), "expected() knows windows 2 and 3");
    let d = spec.depth;
    let mut paths: Vec<(Vec<usize>, f64)> = vec![(Vec::new(), 1.0)];
    for _ in 0..d {
        paths = paths
            .into_iter()
            .flat_map(|(path, pr)| {
                spec.q.iter().enumerate().map(move |(j, &q)| {
                    let mut next = path.clone();
                    next.push(j);
                    (next, pr * q)
                })
            })
            .collect();
    }
    let mut out = Vec::with_capacity(paths.len());
    for (walk, pr) in &paths {
        let mut o = Outcome {
            pr: *pr,
            ..Outcome::default()
        };
        let mut cached: Vec<(Vec<usize>, bool)> = Vec::new();
        for level in 0..=d {
            let here = walk[..level].to_vec();
            let bytes = spec.bytes(&here) as f64;
            let mut arrival = 0.0;
            o.accesses += 1.0;
            o.baseline_bytes += bytes;
            match cached.iter_mut().find(|(c, _)| *c == here) {
                Some((_, prefetched)) => {
                    if *prefetched {
                        o.useful += 1.0;
                        *prefetched = false;
                    }
                }
                None => {
                    o.misses += 1.0;
                    o.demand_bytes += bytes;
                    arrival = time.fetch_s(bytes as u64);
                    cached.push((here.clone(), false));
                }
            }
            o.access_time_s += arrival;
            // Exact arcs out of `here`: children, and grandchildren for w = 3.
            let mut arcs: Vec<(f64, Vec<usize>)> = Vec::new();
            if level < d {
                for (j, &qj) in spec.q.iter().enumerate() {
                    let mut c = here.clone();
                    c.push(j);
                    arcs.push((qj, c.clone()));
                    if w == 3 && level + 1 < d {
                        for (l, &ql) in spec.q.iter().enumerate() {
                            let mut g = c.clone();
                            g.push(l);
                            arcs.push((qj * ql, g));
                        }
                    }
                }
            }
            arcs.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut todo: Vec<Vec<usize>> = Vec::new();
            for (weight, to) in arcs.into_iter().take(i) {
                if weight < p {
                    break;
                }
                if cached.iter().any(|(c, _)| *c == to) {
                    continue;
                }
                todo.push(to);
            }
            let sizes: Vec<u64> = todo.iter().map(|t| spec.bytes(t)).collect();
            let mut done = Vec::new();
            let (start, deadline) = match realistic {
                None => (0.0, f64::INFINITY),
                Some(r) => {
                    completion_times(r.schedule, &r.time, &sizes, &mut done);
                    let start = match r.schedule {
                        Schedule::Independent => 0.0,
                        Schedule::Serial | Schedule::Shared => arrival,
                    };
                    (start, spec.gap_s as f64)
                }
            };
            for (k, to) in todo.into_iter().enumerate() {
                if done.get(k).is_some_and(|&t| start + t > deadline) {
                    continue; // too late: no cache entry, no traffic
                }
                o.prefetches += 1.0;
                o.prefetch_bytes += sizes[k] as f64;
                cached.push((to, true));
            }
        }
        out.push(o);
    }
    out
}

fn mean(os: &[Outcome], f: impl Fn(&Outcome) -> f64) -> f64 {
    os.iter().map(|o| o.pr * f(o)).sum()
}

/// Expected results of the simple model for window `w` (2 or 3), threshold
/// `p` (weight >= p) and at most `i` candidates, from the exact weights: the
/// predictor that knows the chain.
pub fn expected(spec: &MarkovSpec, w: usize, p: f64, i: usize) -> Expected {
    expected_in(spec, w, p, i, None)
}

/// [`expected`] for the simple model (`None`) or the realistic one.
pub fn expected_in(
    spec: &MarkovSpec,
    w: usize,
    p: f64,
    i: usize,
    realistic: Option<Realistic>,
) -> Expected {
    let os = outcomes(spec, w, p, i, realistic);
    let m = |f: fn(&Outcome) -> f64| mean(&os, f);
    let mut e = Expected {
        misses: m(|o| o.misses),
        accesses: m(|o| o.accesses),
        prefetches: m(|o| o.prefetches),
        useful: m(|o| o.useful),
        demand_bytes: m(|o| o.demand_bytes),
        prefetch_bytes: m(|o| o.prefetch_bytes),
        baseline_bytes: m(|o| o.baseline_bytes),
        access_time_s: m(|o| o.access_time_s),
        ..Expected::default()
    };
    e.miss_rate = e.misses / e.accesses;
    e.traffic_net_files = (e.misses + e.prefetches) / e.accesses - 1.0;
    e.traffic_net_bytes = (e.demand_bytes + e.prefetch_bytes) / e.baseline_bytes - 1.0;
    e.traffic_gross_bytes = e.prefetch_bytes / e.baseline_bytes;
    e.avg_access_time_s = e.access_time_s / e.accesses;
    e
}

/// The standard errors of what a simulation of `walks` independent walks
/// reports, against [`expected`]: for a per-walk mean, sd / sqrt(walks); for
/// a ratio of sums R = sum(Y) / sum(Z) (the miss rate, every traffic
/// increase), the delta method, sd(Y - R·Z) / (E[Z]·sqrt(walks)). Computed
/// exactly from the tree's paths. Only the sample of walks varies: the
/// predictor's decisions are those of the exact weights as long as every
/// learned weight is on the same side of p as the exact one (see
/// [`min_margin`]).
pub fn standard_errors(spec: &MarkovSpec, w: usize, p: f64, i: usize, walks: usize) -> Expected {
    standard_errors_in(spec, w, p, i, walks, None)
}

/// [`standard_errors`] for the simple model (`None`) or the realistic one.
pub fn standard_errors_in(
    spec: &MarkovSpec,
    w: usize,
    p: f64,
    i: usize,
    walks: usize,
    realistic: Option<Realistic>,
) -> Expected {
    let os = outcomes(spec, w, p, i, realistic);
    let e = expected_in(spec, w, p, i, realistic);
    let n = walks.max(1) as f64;
    let sd = |f: &dyn Fn(&Outcome) -> f64| {
        let mu = mean(&os, f);
        mean(&os, |o| (f(o) - mu).powi(2)).sqrt()
    };
    let ratio_se = |y: &dyn Fn(&Outcome) -> f64, z: &dyn Fn(&Outcome) -> f64, r: f64| {
        sd(&|o| y(o) - r * z(o)) / (mean(&os, z) * n.sqrt())
    };
    Expected {
        misses: sd(&|o| o.misses) / n.sqrt(),
        accesses: 0.0,
        prefetches: sd(&|o| o.prefetches) / n.sqrt(),
        useful: sd(&|o| o.useful) / n.sqrt(),
        demand_bytes: sd(&|o| o.demand_bytes) / n.sqrt(),
        prefetch_bytes: sd(&|o| o.prefetch_bytes) / n.sqrt(),
        baseline_bytes: sd(&|o| o.baseline_bytes) / n.sqrt(),
        miss_rate: ratio_se(&|o| o.misses, &|o| o.accesses, e.miss_rate),
        traffic_net_files: ratio_se(
            &|o| o.misses + o.prefetches,
            &|o| o.accesses,
            e.traffic_net_files + 1.0,
        ),
        traffic_net_bytes: ratio_se(
            &|o| o.demand_bytes + o.prefetch_bytes,
            &|o| o.baseline_bytes,
            e.traffic_net_bytes + 1.0,
        ),
        traffic_gross_bytes: ratio_se(
            &|o| o.prefetch_bytes,
            &|o| o.baseline_bytes,
            e.traffic_gross_bytes,
        ),
        access_time_s: sd(&|o| o.access_time_s) / n.sqrt(),
        avg_access_time_s: ratio_se(&|o| o.access_time_s, &|o| o.accesses, e.avg_access_time_s),
    }
}

/// The smallest distance between `p` and an exact arc weight of the chain
/// for window `w` (children q[j]; for w = 3 also grandchildren q[j]·q[l]).
pub fn min_margin(spec: &MarkovSpec, w: usize, p: f64) -> f64 {
    let mut weights: Vec<f64> = spec.q.clone();
    if w >= 3 {
        for a in &spec.q {
            for b in &spec.q {
                weights.push(a * b);
            }
        }
    }
    weights
        .iter()
        .map(|x| (x - p).abs())
        .fold(f64::INFINITY, f64::min)
}

/// The closed form for window 2 and i unlimited (docs/prefetch.md): C = the
/// children with q[j] >= p, S = their probability, n = their number, D the
/// depth, b0 the root's size, B = sum q[j]·b[j], P = sum over C of b[j],
/// M = sum outside C of q[j]·b[j]. Per walk: 1 + D·(1 − S) misses in D + 1
/// accesses; D·n prefetches. Returns (miss rate, net traffic in files, net
/// traffic in bytes, gross traffic in bytes).
pub fn closed_form_w2(spec: &MarkovSpec, p: f64) -> (f64, f64, f64, f64) {
    let d = spec.depth as f64;
    let inside: Vec<usize> = (0..spec.q.len()).filter(|&j| spec.q[j] >= p).collect();
    let s: f64 = inside.iter().map(|&j| spec.q[j]).sum();
    let n = inside.len() as f64;
    let b0 = spec.root_bytes as f64;
    let bbar: f64 = (0..spec.q.len())
        .map(|j| spec.q[j] * spec.child_bytes[j] as f64)
        .sum();
    let pc: f64 = inside.iter().map(|&j| spec.child_bytes[j] as f64).sum();
    let mc: f64 = (0..spec.q.len())
        .filter(|j| !inside.contains(j))
        .map(|j| spec.q[j] * spec.child_bytes[j] as f64)
        .sum();
    let base = b0 + d * bbar;
    (
        (1.0 + d * (1.0 - s)) / (d + 1.0),
        d * (n - s) / (d + 1.0),
        (b0 + d * (mc + pc)) / base - 1.0,
        d * pc / base,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::AccessLog;
    use crate::params::MaxCandidates;
    use crate::sim::{derive, simulate_lanes, train, LaneSpec, Model, SimOptions, Split, Trace};
    use crate::variant::TrafficMeasure;
    use crate::PrefetchParams;

    #[test]
    fn closed_form_for_window_two() {
        let spec = MarkovSpec::default();
        for p in [0.0, 0.05, 0.5, 0.8, 1.1] {
            let e = expected(&spec, 2, p, usize::MAX);
            let (miss, files, net, gross) = closed_form_w2(&spec, p);
            assert!((e.miss_rate - miss).abs() < 1e-12, "p={p}");
            assert!((e.traffic_net_files - files).abs() < 1e-12, "p={p}");
            assert!((e.traffic_net_bytes - net).abs() < 1e-12, "p={p}");
            assert!((e.traffic_gross_bytes - gross).abs() < 1e-12, "p={p}");
        }
        // By hand for p = 0.5 (only the 0.7 child, 1000 B, passes): misses
        // 1 + 3 * 0.3 of 4; bytes without prefetching 2000 + 3 * (0.7 * 1000
        // + 0.3 * 5000) = 8600, with it 2000 + 3 * (1000 + 0.3 * 5000) = 9500.
        let (miss, files, net, gross) = closed_form_w2(&spec, 0.5);
        assert!((miss - 1.9 / 4.0).abs() < 1e-12);
        assert!((files - 0.9 / 4.0).abs() < 1e-12);
        assert!((net - (9500.0 / 8600.0 - 1.0)).abs() < 1e-12);
        assert!((gross - 3000.0 / 8600.0).abs() < 1e-12);
    }

    /// The simulator, learning the weights from a random log, reports what
    /// the exact chain says, within a sampling error bounded beforehand.
    ///
    /// The bound: only the 8,000 simulated walks are a sample; each reported
    /// quantity is within 4.5 standard errors of the exact answer
    /// ([`standard_errors`], computed from the tree's paths), which a normal
    /// variate leaves with probability 7e-6 (about 1e-3 over the 180 checks
    /// below). The learned weights decide as the exact ones do: every p
    /// below is at least δ = 0.09 from every exact weight, and every
    /// document with children is requested at least n = 0.09 · 12,000 =
    /// 1,080 times in training (more later), so by Hoeffding the chance that
    /// an arc's learned weight is ever on the wrong side of p during the run
    /// is below sum over t of 2·exp(-2(n + t)δ²) ≈ exp(-2nδ²) / δ²; the
    /// read-before-counting bias (at most 3 open windows in 1,080) takes
    /// 0.003 off δ, which leaves 1e-5 per arc, 1e-3 over the tree's 90 arcs.
    #[test]
    fn simulator_matches_the_known_answer() {
        let spec = MarkovSpec::default();
        let log = AccessLog::from_bytes(spec.log_text().as_bytes());
        let per_host = spec.depth + 1;
        let walks = 8_000;
        let split = Split {
            train: 12_000 * per_host,
            simulate: None,
            proportional: false,
        };
        let trace = Trace::new(&log, split);
        assert_eq!(trace.simulate, walks * per_host);
        let opts = SimOptions::default();
        let base = crate::sim::baseline(&trace, &opts);
        let ps = [0.0, 0.4, 0.6, 0.8, 1.1];
        let lanes: Vec<LaneSpec> = ps
            .iter()
            .map(|&threshold| LaneSpec {
                threshold,
                model: Model::Simple,
            })
            .collect();
        const K: f64 = 4.5;
        for w in [2, 3] {
            for &p in &ps[1..4] {
                assert!(min_margin(&spec, w, p) >= 0.09 - 1e-12, "w={w} p={p}");
            }
            for i in [MaxCandidates::ONE, MaxCandidates::TWO, MaxCandidates::All] {
                let trained = train(&trace, w, &opts);
                let counters = simulate_lanes(&trace, w, i, &lanes, trained, &opts);
                for (&p, c) in ps.iter().zip(counters) {
                    let params = PrefetchParams {
                        window: w,
                        threshold: p,
                        max_hints: i,
                    };
                    let r = derive(Model::Simple, &params, c, &base, TrafficMeasure::NetBytes);
                    let e = expected(&spec, w, p, i.count());
                    let se = standard_errors(&spec, w, p, i.count(), walks);
                    let at =
                        format!("w={w} p={p} i={i}: simulated {r:?}\nexpected {e:?}\nse {se:?}");
                    assert_eq!(r.baseline_miss_rate, 1.0, "{at}");
                    let within = |got: f64, want: f64, se: f64| (got - want).abs() <= K * se + 1e-9;
                    assert!(within(r.miss_rate, e.miss_rate, se.miss_rate), "{at}");
                    assert!(
                        within(
                            r.traffic.net_files,
                            e.traffic_net_files,
                            se.traffic_net_files
                        ),
                        "{at}"
                    );
                    assert!(
                        within(
                            r.traffic.net_bytes,
                            e.traffic_net_bytes,
                            se.traffic_net_bytes
                        ),
                        "{at}"
                    );
                    assert!(
                        within(
                            r.traffic.gross_bytes,
                            e.traffic_gross_bytes,
                            se.traffic_gross_bytes
                        ),
                        "{at}"
                    );
                    let n = walks as f64;
                    assert!(
                        within(r.prefetches as f64 / n, e.prefetches, se.prefetches),
                        "{at}"
                    );
                    assert!(within(r.useful as f64 / n, e.useful, se.useful), "{at}");
                    // Not vacuous: the bound is tight enough to tell the
                    // traffic readings apart wherever they differ.
                    if e.prefetches > 0.5 {
                        assert!(
                            K * se.traffic_net_bytes < 0.05 * e.traffic_net_bytes.max(1.0),
                            "{at}"
                        );
                        assert!(
                            (e.traffic_gross_bytes - e.traffic_net_bytes).abs()
                                > 4.0 * K * se.traffic_gross_bytes,
                            "{at}"
                        );
                    }
                }
            }
        }
    }

    /// The realistic model's schedules on the chain with 3 s between a
    /// host's requests, where they differ: after a missed root (2,000 B,
    /// 1.237 s), serial prefetches of child 0 (1,000 B) and child 1 (5,000 B)
    /// end at 2.42 s and 3.82 s (the second too late), shared ones at 2.47 s
    /// and 2.69 s, independent ones at 1.18 s and 1.40 s (both in time). Same bound as
    /// above (4.5 standard errors of 8,000 walks; p at least 0.09 from every
    /// exact weight).
    #[test]
    fn realistic_schedules_match_the_known_answer() {
        let spec = MarkovSpec {
            gap_s: 3,
            ..MarkovSpec::default()
        };
        let log = AccessLog::from_bytes(spec.log_text().as_bytes());
        let per_host = spec.depth + 1;
        let walks = 8_000;
        let trace = Trace::new(
            &log,
            Split {
                train: 12_000 * per_host,
                simulate: None,
                proportional: false,
            },
        );
        let ps = [0.0, 0.4, 0.8];
        let lanes: Vec<LaneSpec> = ps
            .iter()
            .map(|&threshold| LaneSpec {
                threshold,
                model: Model::Realistic,
            })
            .collect();
        const K: f64 = 4.5;
        let mut at_p0 = Vec::new();
        for schedule in [Schedule::Serial, Schedule::Shared, Schedule::Independent] {
            let opts = SimOptions {
                variant: crate::variant::Variant {
                    schedule,
                    ..Default::default()
                },
                ..SimOptions::default()
            };
            let base = crate::sim::baseline(&trace, &opts);
            let realistic = Some(Realistic {
                time: opts.time,
                schedule,
            });
            for w in [2, 3] {
                let trained = train(&trace, w, &opts);
                let counters =
                    simulate_lanes(&trace, w, MaxCandidates::All, &lanes, trained, &opts);
                for (&p, c) in ps.iter().zip(counters) {
                    let params = PrefetchParams {
                        window: w,
                        threshold: p,
                        max_hints: MaxCandidates::All,
                    };
                    let r = derive(
                        Model::Realistic,
                        &params,
                        c,
                        &base,
                        TrafficMeasure::NetBytes,
                    );
                    let e = expected_in(&spec, w, p, usize::MAX, realistic);
                    let se = standard_errors_in(&spec, w, p, usize::MAX, walks, realistic);
                    let at = format!(
                        "{schedule} w={w} p={p}: simulated {r:?}\nexpected {e:?}\nse {se:?}"
                    );
                    let within = |got: f64, want: f64, se: f64| (got - want).abs() <= K * se + 1e-9;
                    assert!(within(r.miss_rate, e.miss_rate, se.miss_rate), "{at}");
                    assert!(
                        within(
                            r.traffic.net_bytes,
                            e.traffic_net_bytes,
                            se.traffic_net_bytes
                        ),
                        "{at}"
                    );
                    assert!(
                        within(
                            r.traffic.gross_bytes,
                            e.traffic_gross_bytes,
                            se.traffic_gross_bytes
                        ),
                        "{at}"
                    );
                    assert!(
                        within(
                            r.avg_access_time_s,
                            e.avg_access_time_s,
                            se.avg_access_time_s
                        ),
                        "{at}"
                    );
                    let n = walks as f64;
                    assert!(
                        within(r.prefetches as f64 / n, e.prefetches, se.prefetches),
                        "{at}"
                    );
                    if p == 0.0 && w == 2 {
                        at_p0.push((e.prefetches, se.prefetches));
                    }
                }
            }
        }
        // Not vacuous: serial prefetches fewer than the others by far more
        // than the bound; with 3 s gaps shared and independent both finish
        // every prefetch (the sim tests tell those two apart).
        let bound = |k: usize| K * at_p0[k].1;
        assert!(at_p0[0].0 + bound(0) + bound(1) < at_p0[1].0, "{at_p0:?}");
        assert!((at_p0[1].0 - at_p0[2].0).abs() < 1e-12, "{at_p0:?}");
    }
}
