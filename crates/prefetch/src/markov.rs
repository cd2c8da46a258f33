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
}

/// Expected results of the simple model for window `w` (2 or 3), threshold
/// `p` (weight >= p) and at most `i` candidates, from the exact weights.
pub fn expected(spec: &MarkovSpec, w: usize, p: f64, i: usize) -> Expected {
    assert!((2..=3).contains(&w), "expected() knows windows 2 and 3");
    let d = spec.depth;
    let mut e = Expected::default();
    // Every path of the tree with its probability.
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
    for (walk, pr) in &paths {
        let mut cached: Vec<(Vec<usize>, bool)> = Vec::new();
        for level in 0..=d {
            let here = walk[..level].to_vec();
            let bytes = spec.bytes(&here) as f64;
            e.accesses += pr;
            e.baseline_bytes += pr * bytes;
            match cached.iter_mut().find(|(c, _)| *c == here) {
                Some((_, prefetched)) => {
                    if *prefetched {
                        e.useful += pr;
                        *prefetched = false;
                    }
                }
                None => {
                    e.misses += pr;
                    e.demand_bytes += pr * bytes;
                    cached.push((here.clone(), false));
                }
            }
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
            for (weight, to) in arcs.into_iter().take(i) {
                if weight < p {
                    break;
                }
                if cached.iter().any(|(c, _)| *c == to) {
                    continue;
                }
                e.prefetches += pr;
                e.prefetch_bytes += pr * spec.bytes(&to) as f64;
                cached.push((to, true));
            }
        }
    }
    e.miss_rate = e.misses / e.accesses;
    e.traffic_net_files = (e.misses + e.prefetches) / e.accesses - 1.0;
    e.traffic_net_bytes = (e.demand_bytes + e.prefetch_bytes) / e.baseline_bytes - 1.0;
    e.traffic_gross_bytes = e.prefetch_bytes / e.baseline_bytes;
    e
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
        for (p, s, n) in [(0.05, 1.0, 2.0), (0.5, 0.7, 1.0), (0.8, 0.0, 0.0)] {
            let e = expected(&spec, 2, p, usize::MAX);
            let d = spec.depth as f64;
            assert!((e.miss_rate - (1.0 + d * (1.0 - s)) / (d + 1.0)).abs() < 1e-12);
            assert!((e.traffic_net_files - d * (n - s) / (d + 1.0)).abs() < 1e-12);
        }
    }

    /// The simulator, learning the weights from a random log, reports what
    /// the exact chain says, within sampling noise.
    #[test]
    fn simulator_matches_the_known_answer() {
        let spec = MarkovSpec::default();
        let log = AccessLog::from_bytes(spec.log_text().as_bytes());
        let per_host = spec.depth + 1;
        let split = Split {
            train: 12_000 * per_host,
            simulate: None,
            proportional: false,
        };
        let trace = Trace::new(&log, split);
        assert_eq!(trace.simulate, 8_000 * per_host);
        let opts = SimOptions::default();
        let base = crate::sim::baseline(&trace, &opts);
        // Thresholds away from every exact weight (0.7, 0.3, 0.49, 0.21, 0.09).
        let ps = [0.05, 0.15, 0.25, 0.4, 0.6, 0.8];
        let lanes: Vec<LaneSpec> = ps
            .iter()
            .map(|&threshold| LaneSpec {
                threshold,
                model: Model::Simple,
            })
            .collect();
        for w in [2, 3] {
            for i in [MaxCandidates::ONE, MaxCandidates::All] {
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
                    let at = format!("w={w} p={p} i={i}: simulated {r:?}\nexpected {e:?}");
                    assert_eq!(r.baseline_miss_rate, 1.0, "{at}");
                    assert!((r.miss_rate - e.miss_rate).abs() < 0.01, "{at}");
                    assert!(
                        (r.traffic.net_files - e.traffic_net_files).abs() < 0.01,
                        "{at}"
                    );
                    assert!(
                        (r.traffic.net_bytes - e.traffic_net_bytes).abs() < 0.02,
                        "{at}"
                    );
                    assert!(
                        (r.traffic.gross_bytes - e.traffic_gross_bytes).abs() < 0.02,
                        "{at}"
                    );
                    let hosts = 8_000.0;
                    assert!(
                        (r.prefetches as f64 / hosts - e.prefetches).abs() < 0.05,
                        "{at}"
                    );
                    assert!((r.useful as f64 / hosts - e.useful).abs() < 0.05, "{at}");
                }
            }
        }
    }
}
