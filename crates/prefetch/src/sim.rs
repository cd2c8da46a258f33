//! The log-driven simulator of paper 003 §8.
//!
//! For each parameter point the simulator replays the log: the first
//! `train` file accesses only build the dependency graph ("just to gain
//! sufficient intelligence ... without simulating prefetching", §8); the next
//! `simulate` accesses are replayed against a per-host LRU cache (4 MB in 8 KB
//! blocks) while the graph keeps learning ("prefetching predictions and
//! updates to the dependency graph", §8). After each access the server
//! advises the candidates of the file just requested, and the client
//! prefetches every advised file it does not hold.
//!
//! Two models (§8.1, §8.2):
//! * simple: a prefetch completes instantly and costs no time;
//! * realistic: a prefetch of a file of `x` bytes takes `a + b·x` seconds and
//!   only happens if it can complete before the same host's next request in the
//!   log; otherwise it is filtered out — no cache entry and, as the paper says,
//!   "no additional network traffic" (the demand fetch takes its place).
//!
//! Work is shared across parameter points: the log is parsed once; the graph
//! evolution does not depend on p, i or the model (prefetches never teach the
//! graph), so one pass per (w, i) trains the graph once and drives every
//! (p, model) cache simulation in lockstep, ranking each node's arcs once.

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::graph::{DependencyGraph, GraphLimits, NodeId, Window};
use crate::log::{AccessLog, Method};
use crate::params::{MaxCandidates, PrefetchParams, THRESHOLD_EPSILON};
use crate::variant::{Entries, Schedule, ThresholdRule, TrafficMeasure, Variant, WeightTiming};

/// The paper's split: 50,000 entries to train, 70,000 to simulate (§8).
pub const PAPER_TRAIN: usize = 50_000;
pub const PAPER_SIMULATE: usize = 70_000;

/// Which simulation model (§8.1 simple, §8.2 realistic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Simple,
    Realistic,
}

impl Model {
    pub fn as_str(self) -> &'static str {
        match self {
            Model::Simple => "simple",
            Model::Realistic => "realistic",
        }
    }
}

/// Fetch time model y = a + b·x seconds for a file of x bytes (§8.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimeModel {
    pub a_s: f64,
    pub b_s_per_byte: f64,
}

impl TimeModel {
    /// The paper's regression, fitted from a client at Berkeley fetching from
    /// DEC's server: y = 1.13 + 5.36e-5 x (Figure 14).
    pub const PAPER: TimeModel = TimeModel {
        a_s: 1.13,
        b_s_per_byte: 5.36e-5,
    };

    #[inline]
    pub fn fetch_s(&self, size_bytes: u64) -> f64 {
        self.a_s + self.b_s_per_byte * size_bytes as f64
    }
}

/// Client cache geometry (§8: "block size ... 8 KB ... cache at each client
/// host ... 4 MB").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CacheConfig {
    pub capacity_bytes: u64,
    pub block_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            capacity_bytes: 4 << 20,
            block_bytes: 8 << 10,
        }
    }
}

impl CacheConfig {
    pub fn capacity_blocks(&self) -> u64 {
        self.capacity_bytes / self.block_bytes.max(1)
    }

    /// Blocks a file occupies; at least one (an access to an empty or
    /// unknown-size file still costs a round trip and a cache slot).
    pub fn blocks(&self, size_bytes: u64) -> u64 {
        size_bytes.div_ceil(self.block_bytes.max(1)).max(1)
    }
}

/// Why a parsed log line is not a file access for the simulator.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Filtered {
    /// Not GET (HEAD, POST, ...): the paper's prefetchd "only looks at client
    /// requests using the GET method or its variants" (§7.1).
    pub method: u64,
    /// Status other than 200/203/206/304: errors and redirects are not files.
    pub status: u64,
}

/// One file access in replay order.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub host: u32,
    pub url: u32,
    pub time_s: i64,
    /// Seconds until the same host's next access in the log (0 when the log
    /// goes backwards in time; +inf for the host's last access).
    pub next_gap_s: f64,
    /// Seconds since the same host's previous access (0 when the log goes
    /// backwards in time; +inf for the host's first access).
    pub prev_gap_s: f64,
}

/// The log reduced to what the simulator needs, shared by every point.
#[derive(Clone, Debug)]
pub struct Trace {
    pub accesses: Vec<Access>,
    /// Size of each URL: the largest byte count the log shows for it (304s
    /// and errors carry 0 or `-`); 0 if never known.
    pub url_size_bytes: Vec<u64>,
    pub hosts: usize,
    pub filtered: Filtered,
    pub train: usize,
    pub simulate: usize,
    /// How the split was chosen, for printing.
    pub split_note: String,
}

/// How many accesses to train on and to simulate.
#[derive(Clone, Copy, Debug)]
pub struct Split {
    pub train: usize,
    /// `None`: all accesses after the training ones.
    pub simulate: Option<usize>,
    /// Scale both proportionally if the log is shorter than train + simulate.
    pub proportional: bool,
}

impl Default for Split {
    fn default() -> Self {
        Split {
            train: PAPER_TRAIN,
            simulate: Some(PAPER_SIMULATE),
            proportional: true,
        }
    }
}

impl Trace {
    /// File accesses as [`Entries::Files`] reads them.
    pub fn new(log: &AccessLog, split: Split) -> Trace {
        Trace::with_entries(log, split, Entries::Files)
    }

    /// The accesses `entries` selects (the filtered lines are counted).
    pub fn with_entries(log: &AccessLog, split: Split, entries: Entries) -> Trace {
        let mut filtered = Filtered::default();
        let mut url_size_bytes = vec![0u64; log.urls.len()];
        let mut accesses = Vec::with_capacity(log.requests.len());
        for r in &log.requests {
            if let Some(b) = r.bytes {
                let s = &mut url_size_bytes[r.url as usize];
                *s = (*s).max(b);
            }
            if entries != Entries::All && r.method != Method::Get {
                filtered.method += 1;
                continue;
            }
            if entries == Entries::Files && !matches!(r.status, 200 | 203 | 206 | 304) {
                filtered.status += 1;
                continue;
            }
            accesses.push(Access {
                host: r.host,
                url: r.url,
                time_s: r.time_s,
                next_gap_s: f64::INFINITY,
                prev_gap_s: f64::INFINITY,
            });
        }
        // Gap to each host's next access: one backward pass.
        let mut next_time: Vec<Option<i64>> = vec![None; log.hosts.len()];
        for a in accesses.iter_mut().rev() {
            if let Some(t) = next_time[a.host as usize] {
                a.next_gap_s = (t - a.time_s).max(0) as f64;
            }
            next_time[a.host as usize] = Some(a.time_s);
        }
        let mut prev_time: Vec<Option<i64>> = vec![None; log.hosts.len()];
        for a in accesses.iter_mut() {
            if let Some(t) = prev_time[a.host as usize] {
                a.prev_gap_s = (a.time_s - t).max(0) as f64;
            }
            prev_time[a.host as usize] = Some(a.time_s);
        }
        let n = accesses.len();
        let (train, simulate, split_note) = choose_split(n, split);
        Trace {
            accesses,
            url_size_bytes,
            hosts: log.hosts.len(),
            filtered,
            train,
            simulate,
            split_note,
        }
    }

    fn train_part(&self) -> &[Access] {
        &self.accesses[..self.train]
    }

    fn sim_part(&self) -> &[Access] {
        &self.accesses[self.train..self.train + self.simulate]
    }
}

fn choose_split(n: usize, split: Split) -> (usize, usize, String) {
    let wanted_sim = split.simulate.unwrap_or(n.saturating_sub(split.train));
    if split.train + wanted_sim <= n {
        return (
            split.train,
            wanted_sim,
            format!(
                "train on accesses 1..{}, simulate the next {} (of {n})",
                split.train, wanted_sim
            ),
        );
    }
    if split.proportional && split.train + wanted_sim > 0 {
        // The paper's 50,000 : 70,000 shares of a shorter log.
        let total = (split.train + wanted_sim) as f64;
        let train = ((n as f64) * split.train as f64 / total).round() as usize;
        let train = train.min(n);
        return (
            train,
            n - train,
            format!(
                "log has {n} file accesses < {} + {}: proportional split, train on {train} ({:.1}%), simulate {}",
                split.train,
                wanted_sim,
                100.0 * train as f64 / n.max(1) as f64,
                n - train
            ),
        );
    }
    let train = split.train.min(n);
    (
        train,
        n - train,
        format!("train on {train}, simulate the remaining {}", n - train),
    )
}

/// Counters of one simulated parameter point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    pub accesses: u64,
    pub blocks_accessed: u64,
    pub block_misses: u64,
    pub file_misses: u64,
    pub access_time_s: f64,
    pub demand_bytes: u64,
    pub prefetch_bytes: u64,
    /// Cache blocks prefetched.
    pub prefetch_blocks: u64,
    /// Prefetches performed (file fetched into the cache).
    pub prefetches: u64,
    /// Prefetched files later hit by a real access before eviction.
    pub useful: u64,
    /// Prefetched files evicted, or still unused when the simulation ends.
    pub wasted: u64,
    /// Realistic model: advised prefetches filtered out because they could not
    /// complete before the host's next request.
    pub too_late: u64,
    /// Advised files the client already held (no prefetch needed).
    pub advised_cached: u64,
    /// Advised files larger than the whole cache (never prefetched).
    pub advised_too_big: u64,
    /// Prefetches by the weight of the arc that advised them, in tenths
    /// (`[0]`: 0.0-0.1, ..., `[9]`: 0.9-1.0).
    pub prefetched_by_weight: [u64; 10],
    /// Of those, the useful ones.
    pub useful_by_weight: [u64; 10],
}

/// Tenth of the weight range a weight falls in (0..=9).
pub fn weight_bin(weight: f64) -> usize {
    ((weight * 10.0 + 1e-9).floor().max(0.0) as usize).min(9)
}

/// The traffic increase in every [`TrafficMeasure`] (see there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TrafficIncrease {
    pub net_bytes: f64,
    pub gross_bytes: f64,
    pub net_blocks: f64,
    pub gross_blocks: f64,
    pub net_files: f64,
    pub gross_files: f64,
}

impl TrafficIncrease {
    pub fn of(c: &Counters, base: &Counters) -> TrafficIncrease {
        let gross = |num: u64, den: u64| ratio(num as f64, den as f64);
        // With nothing fetched without prefetching there is no increase to
        // speak of: 0, as for p > 1.
        let net = |num: u64, den: u64| if den > 0 { gross(num, den) - 1.0 } else { 0.0 };
        TrafficIncrease {
            net_bytes: net(c.demand_bytes + c.prefetch_bytes, base.demand_bytes),
            gross_bytes: gross(c.prefetch_bytes, base.demand_bytes),
            net_blocks: net(c.block_misses + c.prefetch_blocks, base.block_misses),
            gross_blocks: gross(c.prefetch_blocks, base.block_misses),
            net_files: net(c.file_misses + c.prefetches, base.file_misses),
            gross_files: gross(c.prefetches, base.file_misses),
        }
    }

    pub fn get(&self, m: TrafficMeasure) -> f64 {
        match m {
            TrafficMeasure::NetBytes => self.net_bytes,
            TrafficMeasure::GrossBytes => self.gross_bytes,
            TrafficMeasure::NetBlocks => self.net_blocks,
            TrafficMeasure::GrossBlocks => self.gross_blocks,
            TrafficMeasure::NetFiles => self.net_files,
            TrafficMeasure::GrossFiles => self.gross_files,
        }
    }
}

/// One simulated point with derived metrics.
#[derive(Clone, Debug, Serialize)]
pub struct PointResult {
    pub model: Model,
    pub p: f64,
    pub w: usize,
    /// At most this many candidates (`"1"`, `"2"`, ... or `"all"` in JSON).
    pub i: MaxCandidates,
    pub miss_rate: f64,
    pub avg_access_time_s: f64,
    /// (traffic with prefetching) / (traffic without) - 1, in the variant's
    /// [`TrafficMeasure`] (net bytes by default).
    pub traffic_increase: f64,
    /// The traffic increase in every measure.
    pub traffic: TrafficIncrease,
    pub prefetches: u64,
    pub useful: u64,
    pub wasted: u64,
    pub too_late: u64,
    pub baseline_miss_rate: f64,
    pub baseline_avg_access_time_s: f64,
    /// 1 - miss_rate / baseline_miss_rate.
    pub miss_reduction: f64,
    pub counters: Counters,
}

impl PointResult {
    /// One JSON object (the `--json` record).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a PointResult always serialises")
    }
}

/// Shared options of a simulation run.
#[derive(Clone, Copy, Debug)]
pub struct SimOptions {
    pub cache: CacheConfig,
    pub time: TimeModel,
    pub graph: GraphLimits,
    /// The readings of the paper's open points.
    pub variant: Variant,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            cache: CacheConfig::default(),
            time: TimeModel::PAPER,
            // The simulator's node count is bounded by the log's URLs; allow
            // more arcs than the server default so low thresholds see every
            // dependency the paper's unbounded graph would.
            graph: GraphLimits {
                max_arcs_per_node: 256,
            },
            variant: Variant::default(),
        }
    }
}

/// Per-host LRU caches over whole files, sized in blocks, for one point.
///
/// Files are the unit of replacement (a file occupies ceil(size / block)
/// blocks); misses are counted in blocks as the paper does. Entries live in a
/// slab with per-host intrusive doubly linked lists: every operation is O(1)
/// except evictions, which are O(evicted).
struct Caches {
    capacity_blocks: u64,
    map: FxHashMap<u64, u32>,
    slots: Vec<Entry>,
    free: Vec<u32>,
    hosts: Vec<HostList>,
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    host: u32,
    blocks: u64,
    prev: u32,
    next: u32,
    /// Prefetched and not yet used by a real access.
    prefetched: bool,
    /// [`weight_bin`] of the arc that advised the prefetch.
    bin: u8,
}

#[derive(Clone, Copy)]
struct HostList {
    head: u32, // most recent
    tail: u32, // least recent
    used_blocks: u64,
}

impl Caches {
    fn new(hosts: usize, capacity_blocks: u64) -> Self {
        Caches {
            capacity_blocks,
            map: FxHashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            hosts: vec![
                HostList {
                    head: NIL,
                    tail: NIL,
                    used_blocks: 0
                };
                hosts
            ],
        }
    }

    #[inline]
    fn key(host: u32, url: u32) -> u64 {
        (u64::from(host) << 32) | u64::from(url)
    }

    fn get(&self, host: u32, url: u32) -> Option<u32> {
        self.map.get(&Self::key(host, url)).copied()
    }

    fn unlink(&mut self, slot: u32) {
        let e = self.slots[slot as usize];
        let h = &mut self.hosts[e.host as usize];
        if e.prev == NIL {
            h.head = e.next;
        } else {
            self.slots[e.prev as usize].next = e.next;
        }
        let h = &mut self.hosts[e.host as usize];
        if e.next == NIL {
            h.tail = e.prev;
        } else {
            self.slots[e.next as usize].prev = e.prev;
        }
    }

    fn push_front(&mut self, slot: u32) {
        let host = self.slots[slot as usize].host as usize;
        let old = self.hosts[host].head;
        {
            let e = &mut self.slots[slot as usize];
            e.prev = NIL;
            e.next = old;
        }
        if old != NIL {
            self.slots[old as usize].prev = slot;
        } else {
            self.hosts[host].tail = slot;
        }
        self.hosts[host].head = slot;
    }

    /// Mark `slot` most recently used.
    fn touch(&mut self, slot: u32) {
        if self.hosts[self.slots[slot as usize].host as usize].head != slot {
            self.unlink(slot);
            self.push_front(slot);
        }
    }

    /// Insert a file not yet present, evicting least recently used files of
    /// that host until it fits. Returns how many evicted entries were unused
    /// prefetches. Files bigger than the cache are not stored.
    fn insert(&mut self, host: u32, url: u32, blocks: u64, prefetched: bool) -> u64 {
        self.insert_binned(host, url, blocks, prefetched, 0)
    }

    fn insert_binned(
        &mut self,
        host: u32,
        url: u32,
        blocks: u64,
        prefetched: bool,
        bin: u8,
    ) -> u64 {
        if blocks > self.capacity_blocks {
            return 0;
        }
        let mut wasted = 0;
        while self.hosts[host as usize].used_blocks + blocks > self.capacity_blocks {
            let victim = self.hosts[host as usize].tail;
            debug_assert_ne!(victim, NIL);
            let e = self.slots[victim as usize];
            self.unlink(victim);
            self.map.remove(&e.key);
            self.hosts[host as usize].used_blocks -= e.blocks;
            self.free.push(victim);
            wasted += u64::from(e.prefetched);
        }
        let entry = Entry {
            key: Self::key(host, url),
            host,
            blocks,
            prev: NIL,
            next: NIL,
            prefetched,
            bin,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = entry;
                s
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(entry.key, slot);
        self.hosts[host as usize].used_blocks += blocks;
        self.push_front(slot);
        wasted
    }

    fn unused_prefetches(&self) -> u64 {
        self.map
            .values()
            .filter(|&&s| self.slots[s as usize].prefetched)
            .count() as u64
    }
}

/// One (p, model) cache simulation driven by a shared graph pass.
struct Lane {
    threshold: f64,
    model: Model,
    caches: Caches,
    c: Counters,
    /// Seconds from the current request until its file is at the client: 0
    /// on a hit, a + b·size on a miss.
    arrival_s: f64,
    /// Realistic model: the advised files to fetch (url, weight, bytes).
    todo: Vec<(NodeId, f64, u64)>,
}

/// When each of `sizes` (fetched in this order) completes, in seconds after
/// the requested file has arrived, under `schedule` (see [`Schedule`]).
pub fn completion_times(schedule: Schedule, time: &TimeModel, sizes: &[u64], out: &mut Vec<f64>) {
    out.clear();
    match schedule {
        Schedule::Serial => {
            let mut t = 0.0;
            for &x in sizes {
                t += time.fetch_s(x);
                out.push(t);
            }
        }
        Schedule::Shared => {
            // Processor sharing from a common start: the k-th smallest file
            // finishes after the k - 1 smaller ones have had their whole size
            // and the n - k + 1 others as much as it.
            let mut order: Vec<usize> = (0..sizes.len()).collect();
            order.sort_by_key(|&k| sizes[k]);
            out.resize(sizes.len(), 0.0);
            let n = sizes.len();
            let mut smaller = 0u64;
            for (rank, &k) in order.iter().enumerate() {
                let x = sizes[k];
                let bytes = smaller as f64 + (n - rank) as f64 * x as f64;
                out[k] = time.a_s + time.b_s_per_byte * bytes;
                smaller += x;
            }
        }
        Schedule::Independent => out.extend(sizes.iter().map(|&x| time.fetch_s(x))),
    }
}

impl Lane {
    fn demand(&mut self, a: &Access, size_bytes: u64, opts: &SimOptions) {
        self.arrival_s = 0.0;
        let blocks = opts.cache.blocks(size_bytes);
        self.c.accesses += 1;
        self.c.blocks_accessed += blocks;
        match self.caches.get(a.host, a.url) {
            Some(slot) => {
                let e = &mut self.caches.slots[slot as usize];
                if e.prefetched {
                    e.prefetched = false;
                    self.c.useful += 1;
                    self.c.useful_by_weight[usize::from(e.bin)] += 1;
                }
                self.caches.touch(slot);
            }
            None => {
                self.c.block_misses += blocks;
                self.c.file_misses += 1;
                self.c.demand_bytes += size_bytes;
                self.arrival_s = opts.time.fetch_s(size_bytes);
                self.c.access_time_s += self.arrival_s;
                self.c.wasted += self.caches.insert(a.host, a.url, blocks, false);
            }
        }
    }

    fn prefetch(
        &mut self,
        a: &Access,
        url: NodeId,
        weight: f64,
        size_bytes: u64,
        opts: &SimOptions,
    ) {
        if self.caches.get(a.host, url).is_some() {
            self.c.advised_cached += 1;
            return;
        }
        let blocks = opts.cache.blocks(size_bytes);
        if blocks > self.caches.capacity_blocks {
            self.c.advised_too_big += 1;
            return;
        }
        if self.model == Model::Realistic {
            // Scheduled once the whole advice is known (`run_realistic`).
            self.todo.push((url, weight, size_bytes));
            return;
        }
        self.fetch(a, url, weight, size_bytes, opts);
    }

    /// Realistic model: fetch the advised files that complete before the
    /// host's next request, under the variant's schedule.
    fn run_realistic(
        &mut self,
        a: &Access,
        opts: &SimOptions,
        sizes: &mut Vec<u64>,
        done: &mut Vec<f64>,
    ) {
        if self.todo.is_empty() {
            return;
        }
        let schedule = opts.variant.schedule;
        let start = match schedule {
            Schedule::Independent => 0.0,
            Schedule::Serial | Schedule::Shared => self.arrival_s,
        };
        sizes.clear();
        sizes.extend(self.todo.iter().map(|t| t.2));
        completion_times(schedule, &opts.time, sizes, done);
        let todo = std::mem::take(&mut self.todo);
        for (k, &(url, weight, size_bytes)) in todo.iter().enumerate() {
            if start + done[k] > a.next_gap_s {
                self.c.too_late += 1;
            } else {
                self.fetch(a, url, weight, size_bytes, opts);
            }
        }
        self.todo = todo;
        self.todo.clear();
    }

    fn fetch(&mut self, a: &Access, url: NodeId, weight: f64, size_bytes: u64, opts: &SimOptions) {
        let blocks = opts.cache.blocks(size_bytes);
        self.c.prefetches += 1;
        self.c.prefetch_bytes += size_bytes;
        self.c.prefetch_blocks += blocks;
        let bin = weight_bin(weight);
        self.c.prefetched_by_weight[bin] += 1;
        self.c.wasted += self
            .caches
            .insert_binned(a.host, url, blocks, true, bin as u8);
    }
}

/// A set of points that share w and i.
#[derive(Clone, Debug)]
pub struct LaneSpec {
    pub threshold: f64,
    pub model: Model,
}

/// A graph trained on the training part, with every host's window as the
/// training left it.
#[derive(Clone, Debug)]
pub struct Trained {
    pub graph: DependencyGraph,
    pub windows: Vec<Option<Window>>,
}

/// Train a graph for window `w` on the trace's training part.
pub fn train(trace: &Trace, w: usize, opts: &SimOptions) -> Trained {
    let mut graph = DependencyGraph::new(opts.graph);
    let mut windows: Vec<Option<Window>> = vec![None; trace.hosts];
    for a in trace.train_part() {
        let win = host_window(&mut windows, a, w, opts);
        graph.observe(win, a.url);
    }
    Trained { graph, windows }
}

/// The host's window, emptied first when the variant resets windows after
/// a silence longer than the access's gap.
fn host_window<'a>(
    windows: &'a mut [Option<Window>],
    a: &Access,
    w: usize,
    opts: &SimOptions,
) -> &'a mut Window {
    let slot = &mut windows[a.host as usize];
    if opts
        .variant
        .window_reset_s
        .is_some_and(|limit| a.prev_gap_s > limit)
    {
        *slot = None;
    }
    slot.get_or_insert_with(|| Window::new(w))
}

/// Simulate every lane for one (w, i) from a trained graph, in lockstep.
pub fn simulate_lanes(
    trace: &Trace,
    w: usize,
    max_hints: MaxCandidates,
    lanes: &[LaneSpec],
    trained: Trained,
    opts: &SimOptions,
) -> Vec<Counters> {
    let Trained {
        mut graph,
        mut windows,
    } = trained;
    let mut lanes: Vec<Lane> = lanes
        .iter()
        .map(|s| Lane {
            threshold: s.threshold,
            model: s.model,
            caches: Caches::new(trace.hosts, opts.cache.capacity_blocks()),
            c: Counters::default(),
            arrival_s: 0.0,
            todo: Vec::new(),
        })
        .collect();
    let (mut sizes, mut done) = (Vec::new(), Vec::new());
    let any_prefetching = lanes.iter().any(|l| l.threshold <= 1.0 + THRESHOLD_EPSILON);
    let limit = max_hints.count();
    let variant = opts.variant;
    let mut candidates: Vec<(f64, NodeId)> = Vec::new();
    for a in trace.sim_part() {
        let size = trace.url_size_bytes[a.url as usize];
        for lane in &mut lanes {
            lane.demand(a, size, opts);
        }
        candidates.clear();
        if any_prefetching && variant.weights == WeightTiming::Before {
            candidates.extend(graph.ranked_iter(a.url).take(limit));
        }
        let win = host_window(&mut windows, a, w, opts);
        graph.observe(win, a.url);
        if !any_prefetching {
            continue;
        }
        if variant.weights == WeightTiming::After {
            candidates.extend(graph.ranked_iter(a.url).take(limit));
        }
        for lane in &mut lanes {
            for &(weight, to) in &candidates {
                let passes = match variant.threshold {
                    ThresholdRule::AtLeast => weight >= lane.threshold - THRESHOLD_EPSILON,
                    ThresholdRule::Above => weight > lane.threshold + THRESHOLD_EPSILON,
                };
                if !passes {
                    break;
                }
                let to_size = trace.url_size_bytes[to as usize];
                lane.prefetch(a, to, weight, to_size, opts);
            }
            lane.run_realistic(a, opts, &mut sizes, &mut done);
        }
    }
    lanes
        .into_iter()
        .map(|mut l| {
            l.c.wasted += l.caches.unused_prefetches();
            l.c
        })
        .collect()
}

/// The no-prefetching reference run (identical for every w and model).
pub fn baseline(trace: &Trace, opts: &SimOptions) -> Counters {
    let lanes = [LaneSpec {
        threshold: f64::INFINITY,
        model: Model::Simple,
    }];
    let trained = Trained {
        graph: DependencyGraph::new(opts.graph),
        windows: vec![None; trace.hosts],
    };
    // Without prefetching the graph is irrelevant: skip training.
    simulate_lanes(trace, 2, MaxCandidates::All, &lanes, trained, opts)[0]
}

fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// Derive the paper's metrics from counters.
pub fn derive(
    model: Model,
    params: &PrefetchParams,
    c: Counters,
    base: &Counters,
    measure: TrafficMeasure,
) -> PointResult {
    let miss_rate = ratio(c.block_misses as f64, c.blocks_accessed as f64);
    let base_miss = ratio(base.block_misses as f64, base.blocks_accessed as f64);
    let traffic = TrafficIncrease::of(&c, base);
    PointResult {
        model,
        p: params.threshold,
        w: params.window,
        i: params.max_hints,
        miss_rate,
        avg_access_time_s: ratio(c.access_time_s, c.accesses as f64),
        traffic_increase: traffic.get(measure),
        traffic,
        prefetches: c.prefetches,
        useful: c.useful,
        wasted: c.wasted,
        too_late: c.too_late,
        baseline_miss_rate: base_miss,
        baseline_avg_access_time_s: ratio(base.access_time_s, base.accesses as f64),
        miss_reduction: if base_miss > 0.0 {
            1.0 - miss_rate / base_miss
        } else {
            0.0
        },
        counters: c,
    }
}

/// A grid of parameter points.
#[derive(Clone, Debug)]
pub struct Grid {
    pub thresholds: Vec<f64>,
    pub windows: Vec<usize>,
    pub max_hints: Vec<MaxCandidates>,
    pub models: Vec<Model>,
}

impl Grid {
    /// The paper's sweep: p = 0.0..1.1 step 0.1, w = 2..10, i = 1, 2, all,
    /// both models.
    pub fn paper() -> Grid {
        Grid {
            thresholds: (0..=11).map(|k| f64::from(k) / 10.0).collect(),
            windows: (2..=10).collect(),
            max_hints: vec![MaxCandidates::ONE, MaxCandidates::TWO, MaxCandidates::All],
            models: vec![Model::Simple, Model::Realistic],
        }
    }

    pub fn points(&self) -> usize {
        self.thresholds.len() * self.windows.len() * self.max_hints.len() * self.models.len()
    }
}

/// Run a whole grid in parallel (rayon: one task per (w, i), training shared
/// per w). `progress` is called with the number of points each finished task
/// completed. Results are ordered by model, w, i, p.
pub fn sweep(
    trace: &Trace,
    grid: &Grid,
    opts: &SimOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> (Counters, Vec<PointResult>) {
    let base = baseline(trace, opts);
    let trained: Vec<(usize, Trained)> = grid
        .windows
        .par_iter()
        .map(|&w| (w, train(trace, w, opts)))
        .collect();
    let tasks: Vec<(usize, MaxCandidates)> = grid
        .windows
        .iter()
        .flat_map(|&w| grid.max_hints.iter().map(move |&i| (w, i)))
        .collect();
    let lanes: Vec<LaneSpec> = grid
        .models
        .iter()
        .flat_map(|&model| {
            grid.thresholds
                .iter()
                .map(move |&threshold| LaneSpec { threshold, model })
        })
        .collect();
    let mut results: Vec<PointResult> = tasks
        .par_iter()
        .flat_map_iter(|&(w, i)| {
            let t = trained
                .iter()
                .find(|(tw, _)| *tw == w)
                .map(|(_, t)| t.clone())
                .expect("trained every window");
            let counters = simulate_lanes(trace, w, i, &lanes, t, opts);
            progress(counters.len() as u64);
            lanes
                .iter()
                .zip(counters)
                .map(|(spec, c)| {
                    let params = PrefetchParams {
                        window: w,
                        threshold: spec.threshold,
                        max_hints: i,
                    };
                    derive(spec.model, &params, c, &base, opts.variant.traffic)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    results.sort_by(|a, b| {
        (a.model, a.w, a.i)
            .cmp(&(b.model, b.w, b.i))
            .then(a.p.total_cmp(&b.p))
    });
    (base, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_text(lines: &[(&str, i64, &str, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (host, t, path, size) in lines {
            let secs = 53 * 60 + t;
            out.extend_from_slice(
                format!(
                    "{host} - - [29/Aug/1995:23:{:02}:{:02} -0400] \"GET {path} HTTP/1.0\" 200 {size}\n",
                    secs / 60 % 60,
                    secs % 60
                )
                .as_bytes(),
            );
        }
        out
    }

    /// Many hosts visit /page then /img: a perfect dependency.
    fn page_img_log(hosts: usize, gap_s: i64) -> AccessLog {
        let mut lines = Vec::new();
        let names: Vec<String> = (0..hosts).map(|h| format!("h{h}")).collect();
        for (h, name) in names.iter().enumerate() {
            let t = h as i64 % 30;
            lines.push((name.as_str(), t, "/page", 1000));
            lines.push((name.as_str(), t + gap_s, "/img", 2000));
        }
        AccessLog::from_bytes(&log_text(&lines))
    }

    fn split_half() -> Split {
        Split {
            train: 20,
            simulate: None,
            proportional: false,
        }
    }

    fn run_one(trace: &Trace, params: &str, model: Model) -> PointResult {
        run_with(trace, params, model, SimOptions::default())
    }

    fn run_with(trace: &Trace, params: &str, model: Model, opts: SimOptions) -> PointResult {
        let params: PrefetchParams = params.parse().unwrap();
        let base = baseline(trace, &opts);
        let lanes = [LaneSpec {
            threshold: params.threshold,
            model,
        }];
        let t = train(trace, params.window, &opts);
        let c = simulate_lanes(trace, params.window, params.max_hints, &lanes, t, &opts)[0];
        derive(model, &params, c, &base, TrafficMeasure::NetBytes)
    }

    #[test]
    fn perfect_dependency_halves_misses_in_simple_model() {
        let log = page_img_log(20, 1);
        let trace = Trace::new(&log, split_half());
        assert_eq!((trace.train, trace.simulate), (20, 20));
        let r = run_one(&trace, "w=2,p=0.5,i=all", Model::Simple);
        // Every /img is prefetched after /page: only /page misses.
        assert_eq!(r.baseline_miss_rate, 1.0);
        assert_eq!(r.counters.file_misses, 10);
        assert_eq!(r.prefetches, 10);
        assert_eq!(r.useful, 10);
        assert_eq!(r.wasted, 0);
        // 1 block of /page missed out of 1 + 1 blocks per host.
        assert_eq!(r.miss_rate, 0.5);
        // No extra bytes: every prefetched byte replaced a demand byte.
        assert_eq!(r.traffic_increase, 0.0);
    }

    #[test]
    fn realistic_model_filters_prefetches_that_cannot_finish() {
        // The image is requested 1 s after the page; a prefetch takes
        // 1.13 + 5.36e-5 * 2000 = 1.24 s: too late.
        let trace = Trace::new(&page_img_log(20, 1), split_half());
        let r = run_one(&trace, "w=2,p=0.5,i=all", Model::Realistic);
        assert_eq!(r.prefetches, 0);
        assert_eq!(r.too_late, 10);
        assert_eq!(r.miss_rate, r.baseline_miss_rate);
        assert_eq!(r.traffic_increase, 0.0);
        // 2 s between them: the advice comes with the page, which (a miss)
        // arrives after 1.13 + 5.36e-5 * 1000 = 1.18 s; the prefetch would
        // end at 2.42 s: too late. Started at the request, as pagewire's
        // first model did (`independent`), it would have ended at 1.24 s.
        let trace = Trace::new(&page_img_log(20, 2), split_half());
        let r = run_one(&trace, "w=2,p=0.5,i=all", Model::Realistic);
        assert_eq!((r.prefetches, r.too_late), (0, 10));
        let independent = SimOptions {
            variant: Variant {
                schedule: Schedule::Independent,
                ..Variant::default()
            },
            ..SimOptions::default()
        };
        let r = run_with(&trace, "w=2,p=0.5,i=all", Model::Realistic, independent);
        assert_eq!((r.prefetches, r.useful, r.too_late), (10, 10, 0));
        // 3 s: in time after the page's arrival too.
        let trace = Trace::new(&page_img_log(20, 3), split_half());
        let r = run_one(&trace, "w=2,p=0.5,i=all", Model::Realistic);
        assert_eq!((r.prefetches, r.useful, r.too_late), (10, 10, 0));
    }

    /// Serial: one after another; shared: together, the bandwidth split
    /// equally; independent: each on its own.
    #[test]
    fn schedules_complete_when_they_should() {
        let t = TimeModel {
            a_s: 1.0,
            b_s_per_byte: 0.001,
        };
        let mut out = Vec::new();
        completion_times(Schedule::Serial, &t, &[1000, 3000, 2000], &mut out);
        assert_eq!(out, vec![2.0, 6.0, 9.0]);
        completion_times(Schedule::Shared, &t, &[1000, 3000, 2000], &mut out);
        // 1000 B done when each has had 1000 B (3000 B sent); 2000 B after
        // 1000 + 2 * 2000; 3000 B after all 6000.
        assert_eq!(out, vec![4.0, 7.0, 6.0]);
        completion_times(Schedule::Independent, &t, &[1000, 3000, 2000], &mut out);
        assert_eq!(out, vec![2.0, 4.0, 3.0]);
        completion_times(Schedule::Serial, &t, &[], &mut out);
        assert!(out.is_empty());
    }

    /// §8: "The weight on an arc ... can never exceed 1.0 ..., so setting it
    /// to 1.1 corresponded to no prefetching": p = 1.0 still prefetches, so a
    /// weight of exactly 1.0 is reachable. With the default reading (weights
    /// as the request found them) every /page was followed by its /img, the
    /// arc weighs 1.0 and passes p = 1.0; read after counting the request it
    /// weighs n / (n + 1) and nothing passes.
    #[test]
    fn a_weight_of_one_is_reachable_and_p_one_still_prefetches() {
        let trace = Trace::new(&page_img_log(20, 1), split_half());
        assert_eq!(Variant::default().weights, WeightTiming::Before);
        let r = run_one(&trace, "w=2,p=1.0,i=all", Model::Simple);
        assert_eq!((r.prefetches, r.useful), (10, 10));
        // Every one advised through an arc of weight 1.0 (the top tenth).
        assert_eq!(r.counters.prefetched_by_weight[9], 10);
        assert_eq!(r.miss_rate, 0.5);
        let r = run_one(&trace, "w=2,p=1.1,i=all", Model::Simple);
        assert_eq!(r.prefetches, 0);
        let after = SimOptions {
            variant: Variant {
                weights: WeightTiming::After,
                ..Variant::default()
            },
            ..SimOptions::default()
        };
        let r = run_with(&trace, "w=2,p=1.0,i=all", Model::Simple, after);
        assert_eq!(r.prefetches, 0);
        assert_eq!(r.miss_rate, r.baseline_miss_rate);
        let r = run_with(&trace, "w=2,p=0.9,i=all", Model::Simple, after);
        assert_eq!(r.prefetches, 10);
        assert_eq!(r.counters.prefetched_by_weight[9], 10);
    }

    /// §8: "setting it to 1.1 corresponded to no prefetching".
    #[test]
    fn p_above_one_means_no_prefetching_and_no_extra_traffic() {
        let log = AccessLog::read_path(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sample.log"
        )))
        .unwrap();
        let trace = Trace::new(&log, Split::default());
        for model in [Model::Simple, Model::Realistic] {
            for w in [2, 4, 10] {
                let r = run_one(&trace, &format!("w={w},p=1.1,i=all"), model);
                assert_eq!(r.prefetches, 0);
                assert_eq!(r.traffic_increase, 0.0);
                assert_eq!(r.miss_rate, r.baseline_miss_rate);
                assert_eq!(r.avg_access_time_s, r.baseline_avg_access_time_s);
            }
        }
    }

    #[test]
    fn lockstep_sweep_matches_single_runs() {
        let log = AccessLog::read_path(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sample.log"
        )))
        .unwrap();
        let trace = Trace::new(&log, Split::default());
        let grid = Grid {
            thresholds: vec![0.0, 0.3, 0.6, 1.1],
            windows: vec![2, 5],
            max_hints: vec![MaxCandidates::ONE, MaxCandidates::All],
            models: vec![Model::Simple, Model::Realistic],
        };
        let (_, results) = sweep(&trace, &grid, &SimOptions::default(), &|_| {});
        assert_eq!(results.len(), grid.points());
        for r in &results {
            let single = run_one(&trace, &format!("w={},p={},i={}", r.w, r.p, r.i), r.model);
            assert_eq!(
                single.counters,
                r.counters,
                "{} w={} p={} i={}",
                r.model.as_str(),
                r.w,
                r.p,
                r.i
            );
            // Every prefetched file ends up either used or wasted.
            assert_eq!(r.counters.prefetches, r.useful + r.wasted);
        }
    }

    #[test]
    fn lru_evicts_least_recent_and_counts_wasted_prefetches() {
        let mut c = Caches::new(1, 4);
        assert_eq!(c.insert(0, 1, 2, true), 0);
        assert_eq!(c.insert(0, 2, 2, false), 0);
        let s1 = c.get(0, 1).unwrap();
        c.touch(s1);
        // 3 needs 2 blocks: 2 (least recent) goes.
        assert_eq!(c.insert(0, 3, 2, false), 0);
        assert!(c.get(0, 2).is_none());
        // 4 needs 2 blocks: 1 (an unused prefetch) goes -> wasted.
        assert_eq!(c.insert(0, 4, 2, false), 1);
        assert!(c.get(0, 1).is_none());
        // Too big for the cache: not stored.
        assert_eq!(c.insert(0, 5, 5, false), 0);
        assert!(c.get(0, 5).is_none());
    }

    #[test]
    fn proportional_split_for_short_logs() {
        let (t, s, note) = choose_split(47_000, Split::default());
        assert_eq!(t + s, 47_000);
        assert_eq!(t, (47_000.0f64 * 5.0 / 12.0).round() as usize);
        assert!(note.contains("proportional"));
        let (t, s, _) = choose_split(200_000, Split::default());
        assert_eq!((t, s), (50_000, 70_000));
    }
}
