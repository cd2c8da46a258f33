//! The dependency graph of paper 003 §7.2, shared by the online predictor
//! (inside `pagewire serve --prefetch`) and the log-driven simulator.
//!
//! * One node per URL (nodes are plain `u32` ids; the caller interns URLs).
//! * Each client host has a ring buffer of its last requests ([`Window`]).
//! * When client C requests B, every A among C's previous `w - 1` requests
//!   gets its arc A->B credited — once per occurrence of A: if B was already
//!   requested after that A inside the window, the A->B credit was already
//!   given. This is the paper's rule "we ignored such multiple accesses to the
//!   same file within a window" (§7.3, the "ABB" example: weight 2/4, not 4/4).
//! * weight(A->B) = credits(A->B) / count(A), where count(A) counts every
//!   request for A. Each request for A credits A->B at most once, so a weight
//!   can never exceed 1.0 (§8: "the weight on an arc ... can never exceed 1.0").
//! * Candidates for A: arcs with weight >= p, best first, at most i.
//!
//! Memory bound: at most `max_arcs_per_node` arcs per node (the lowest-count
//! arc is evicted to make room — it is the least likely to pass any threshold);
//! nodes and arcs not touched for `idle_horizon` observations are removed by
//! [`DependencyGraph::prune_idle`]. So the graph holds at most
//! `nodes × (NODE_BYTES + max_arcs_per_node × ARC_BYTES)` bytes; the node count
//! is bounded by whoever assigns ids (the online predictor caps it).

/// A URL's id in the graph.
pub type NodeId = u32;

/// Counts are halved when a node's request count reaches this value, which
/// keeps `u32` from overflowing on a long-running server and ages old
/// behaviour. Halving node and arc counts together (arc rounded down) keeps
/// every arc count <= its node count, so weights stay <= 1.0.
const COUNT_HALVING_AT: u32 = 1 << 30;

/// Approximate in-memory size of one arc, for documenting the bound.
pub const ARC_BYTES: usize = std::mem::size_of::<Arc>();
/// Approximate in-memory size of one node without its arcs.
pub const NODE_BYTES: usize = std::mem::size_of::<Node>();

/// Bounds on the graph's size.
#[derive(Clone, Copy, Debug)]
pub struct GraphLimits {
    /// At most this many outgoing arcs per node.
    pub max_arcs_per_node: usize,
}

impl Default for GraphLimits {
    fn default() -> Self {
        // 64 arcs: a page is rarely followed by more than a few dozen distinct
        // objects within a 10-request window, and arcs beyond the 64 most
        // frequent have weights far below any useful threshold.
        GraphLimits {
            max_arcs_per_node: 64,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Arc {
    to: NodeId,
    count: u32,
    /// Observation clock when last credited (for pruning and tie-breaking).
    last_seen: u64,
}

#[derive(Clone, Debug, Default)]
struct Node {
    /// Requests for this URL (every one, duplicates included).
    count: u32,
    last_seen: u64,
    /// Bumped when the node is pruned, so ring-buffer entries that predate
    /// the pruning no longer credit arcs (their occurrence is not in `count`).
    epoch: u32,
    arcs: Vec<Arc>,
}

/// One slot of a client's ring buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    id: NodeId,
    epoch: u32,
}

/// A client host's last `w - 1` requests (together with the request being
/// recorded that makes the paper's "circular buffer of size w").
#[derive(Clone, Debug)]
pub struct Window {
    /// Bounded by w - 1 <= MAX_WINDOW - 1 slots.
    slots: Box<[Slot]>,
    len: usize,
    /// Index of the slot the next request goes into.
    next: usize,
}

impl Window {
    /// A window for lookahead `w` (>= 2).
    pub fn new(window: usize) -> Self {
        let cap = window.max(2) - 1;
        Window {
            slots: vec![Slot { id: 0, epoch: 0 }; cap].into_boxed_slice(),
            len: 0,
            next: 0,
        }
    }

    /// Previous requests, newest first.
    fn newest_first(&self) -> impl Iterator<Item = Slot> + '_ {
        let cap = self.slots.len();
        (1..=self.len).map(move |k| self.slots[(self.next + cap - k) % cap])
    }

    fn push(&mut self, slot: Slot) {
        let cap = self.slots.len();
        self.slots[self.next] = slot;
        self.next = (self.next + 1) % cap;
        self.len = (self.len + 1).min(cap);
    }
}

/// The graph itself. Cloning it is how the simulator shares one training
/// run among many parameter points.
#[derive(Clone, Debug, Default)]
pub struct DependencyGraph {
    nodes: Vec<Node>,
    limits: GraphLimits,
    /// Number of observations so far: the graph's notion of time.
    clock: u64,
    arcs_total: usize,
}

impl DependencyGraph {
    pub fn new(limits: GraphLimits) -> Self {
        DependencyGraph {
            nodes: Vec::new(),
            limits: GraphLimits {
                max_arcs_per_node: limits.max_arcs_per_node.max(1),
            },
            clock: 0,
            arcs_total: 0,
        }
    }

    /// Observations recorded so far.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Number of arcs currently held.
    pub fn arc_count(&self) -> usize {
        self.arcs_total
    }

    /// Number of nodes with a non-zero request count.
    pub fn live_nodes(&self) -> usize {
        self.nodes.iter().filter(|n| n.count > 0).count()
    }

    /// Requests recorded for `id`.
    pub fn count(&self, id: NodeId) -> u32 {
        self.nodes.get(id as usize).map_or(0, |n| n.count)
    }

    /// weight(from -> to), 0 when there is no arc.
    pub fn weight(&self, from: NodeId, to: NodeId) -> f64 {
        let Some(node) = self.nodes.get(from as usize) else {
            return 0.0;
        };
        if node.count == 0 {
            return 0.0;
        }
        node.arcs
            .iter()
            .find(|a| a.to == to)
            .map_or(0.0, |a| f64::from(a.count) / f64::from(node.count))
    }

    /// Every arc as (from, to, weight), for tests and reports.
    pub fn arcs(&self) -> impl Iterator<Item = (NodeId, NodeId, f64)> + '_ {
        self.nodes.iter().enumerate().flat_map(|(from, node)| {
            node.arcs.iter().map(move |a| {
                (
                    from as NodeId,
                    a.to,
                    f64::from(a.count) / f64::from(node.count.max(1)),
                )
            })
        })
    }

    fn node_mut(&mut self, id: NodeId) -> &mut Node {
        let idx = id as usize;
        if idx >= self.nodes.len() {
            self.nodes.resize_with(idx + 1, Node::default);
        }
        &mut self.nodes[idx]
    }

    /// Record that the client owning `window` requested `id`, and update arcs
    /// from the client's previous `w - 1` requests (see the module docs).
    pub fn observe(&mut self, window: &mut Window, id: NodeId) {
        self.clock += 1;
        let clock = self.clock;
        let node = self.node_mut(id);
        node.count += 1;
        node.last_seen = clock;
        let epoch = node.epoch;
        if node.count >= COUNT_HALVING_AT {
            node.count /= 2;
            for arc in &mut node.arcs {
                arc.count /= 2;
            }
            // Halving keeps the order; arcs that fall to zero are gone.
            let before = node.arcs.len();
            node.arcs.retain(|a| a.count > 0);
            let dropped = before - node.arcs.len();
            self.arcs_total -= dropped;
        }
        // Newest first: once we meet an earlier request for `id` itself, every
        // older entry was already inside the window when that request arrived
        // and got its credit then (the "ABB" rule); `id -> id` is no arc.
        for prev in window.newest_first() {
            if prev.id == id {
                break;
            }
            let live = self
                .nodes
                .get(prev.id as usize)
                .is_some_and(|n| n.epoch == prev.epoch && n.count > 0);
            if live {
                self.credit(prev.id, id, clock);
            }
        }
        window.push(Slot { id, epoch });
    }

    fn credit(&mut self, from: NodeId, to: NodeId, clock: u64) {
        let max_arcs = self.limits.max_arcs_per_node;
        let node = &mut self.nodes[from as usize];
        // Arcs are kept sorted by count, highest first, so ranking needs no
        // sort: a count grows by one, so the arc moves up past the arcs with
        // a lower count only (among equal counts, the first to get there
        // stays first).
        if let Some(pos) = node.arcs.iter().position(|a| a.to == to) {
            // <= node.count: `from`'s occurrence was counted when it arrived
            // and credits `to` only once (see `observe`).
            node.arcs[pos].count += 1;
            node.arcs[pos].last_seen = clock;
            let count = node.arcs[pos].count;
            let mut dest = pos;
            while dest > 0 && node.arcs[dest - 1].count < count {
                dest -= 1;
            }
            if dest != pos {
                node.arcs[dest..=pos].rotate_right(1);
            }
            return;
        }
        if node.arcs.len() >= max_arcs {
            // Evict the weakest arc: the lowest count, and among those the
            // one that has had it longest (the first of the last group).
            if let Some(last) = node.arcs.last().map(|a| a.count) {
                let first_of_group = node
                    .arcs
                    .iter()
                    .rposition(|a| a.count != last)
                    .map_or(0, |k| k + 1);
                node.arcs.remove(first_of_group);
                self.arcs_total -= 1;
            }
        }
        node.arcs.push(Arc {
            to,
            count: 1,
            last_seen: clock,
        });
        self.arcs_total += 1;
    }

    /// All arcs out of `from` as (weight, to), best first (weight descending;
    /// equal weights in the order they reached it). No allocation, no sort.
    pub fn ranked_iter(&self, from: NodeId) -> impl Iterator<Item = (f64, NodeId)> + '_ {
        let (total, arcs) = match self.nodes.get(from as usize) {
            Some(n) if n.count > 0 => (f64::from(n.count), &n.arcs[..]),
            _ => (1.0, &[][..]),
        };
        arcs.iter().map(move |a| (f64::from(a.count) / total, a.to))
    }

    /// [`Self::ranked_iter`] collected into `out` (cleared first).
    pub fn ranked(&self, from: NodeId, out: &mut Vec<(f64, NodeId)>) {
        out.clear();
        out.extend(self.ranked_iter(from));
    }

    /// Candidates for prefetching after a request for `from`: arcs with
    /// weight >= p, best first, at most i (paper 003 §7.2, §8).
    pub fn candidates(
        &self,
        from: NodeId,
        params: &crate::PrefetchParams,
        out: &mut Vec<(f64, NodeId)>,
    ) {
        if params.disabled() {
            out.clear();
            return;
        }
        self.ranked(from, out);
        let keep = out.iter().take_while(|(w, _)| params.passes(*w)).count();
        out.truncate(keep.min(params.max_hints.count()));
    }

    /// Remove nodes not requested within the last `idle_horizon` observations
    /// (and every arc into them), and arcs not credited within it. Returns the
    /// freed node ids so the caller can recycle them.
    pub fn prune_idle(&mut self, idle_horizon: u64) -> Vec<NodeId> {
        let cutoff = self.clock.saturating_sub(idle_horizon);
        self.prune_where(|n| n.last_seen < cutoff, cutoff)
    }

    /// Prune the `n` least recently requested live nodes (used when an id
    /// table is full and nothing is idle yet). Returns the freed ids.
    pub fn prune_oldest(&mut self, n: usize) -> Vec<NodeId> {
        let mut seen: Vec<u64> = self
            .nodes
            .iter()
            .filter(|x| x.count > 0)
            .map(|x| x.last_seen)
            .collect();
        if seen.is_empty() || n == 0 {
            return Vec::new();
        }
        let k = n.min(seen.len()) - 1;
        let (_, kth, _) = seen.select_nth_unstable(k);
        let kth = *kth;
        self.prune_where(|x| x.last_seen <= kth, 0)
    }

    fn prune_where(&mut self, dead: impl Fn(&Node) -> bool, arc_cutoff: u64) -> Vec<NodeId> {
        let mut freed = Vec::new();
        let mut is_dead = vec![false; self.nodes.len()];
        for (id, node) in self.nodes.iter_mut().enumerate() {
            if node.count > 0 && dead(node) {
                node.count = 0;
                node.epoch = node.epoch.wrapping_add(1);
                node.arcs = Vec::new();
                is_dead[id] = true;
                freed.push(id as NodeId);
            }
        }
        let mut total = 0;
        for node in &mut self.nodes {
            node.arcs
                .retain(|a| !is_dead[a.to as usize] && a.last_seen >= arc_cutoff);
            total += node.arcs.len();
        }
        self.arcs_total = total;
        freed
    }
}

/// The newest-first contents of a window, for tests.
#[cfg(test)]
pub(crate) fn window_ids(w: &Window) -> Vec<NodeId> {
    w.newest_first().map(|s| s.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PrefetchParams;

    const A: NodeId = 0;
    const B: NodeId = 1;

    fn run(seq: &[NodeId], w: usize) -> DependencyGraph {
        let mut g = DependencyGraph::new(GraphLimits::default());
        let mut win = Window::new(w);
        for &id in seq {
            g.observe(&mut win, id);
        }
        g
    }

    /// Paper 003 §7.3: window size 10 and the sequence ABB ··· A ··· A ··· ABB,
    /// where ··· are gaps much larger than the window. Counting every B would
    /// give 4/4 = 1; the paper ignores repeated accesses within a window, and
    /// "50% of the time, B does not follow A within a window": weight 2/4.
    #[test]
    fn paper_abb_example_weight_is_one_half() {
        let mut seq = Vec::new();
        let mut filler = 100;
        let mut gap = |seq: &mut Vec<NodeId>| {
            // 25 distinct other files: far more than the window of 10.
            for _ in 0..25 {
                seq.push(filler);
                filler += 1;
            }
        };
        seq.extend([A, B, B]);
        gap(&mut seq);
        seq.push(A);
        gap(&mut seq);
        seq.push(A);
        gap(&mut seq);
        seq.extend([A, B, B]);
        let g = run(&seq, 10);
        assert_eq!(g.count(A), 4);
        assert_eq!(g.count(B), 4);
        assert_eq!(g.weight(A, B), 0.5);
        // B -> B is not an arc: a file does not predict itself.
        assert_eq!(g.weight(B, B), 0.0);
    }

    #[test]
    fn window_two_looks_one_step_ahead() {
        // w = 2 is "looking ahead just one step" (§8).
        let g = run(&[A, 5, B], 2);
        assert_eq!(g.weight(A, 5), 1.0);
        assert_eq!(g.weight(A, B), 0.0);
        let g = run(&[A, 5, B], 3);
        assert_eq!(g.weight(A, B), 1.0);
    }

    #[test]
    fn clients_do_not_create_false_dependencies() {
        let mut g = DependencyGraph::new(GraphLimits::default());
        let mut c1 = Window::new(4);
        let mut c2 = Window::new(4);
        g.observe(&mut c1, A);
        g.observe(&mut c2, B);
        assert_eq!(g.weight(A, B), 0.0);
        g.observe(&mut c1, B);
        assert_eq!(g.weight(A, B), 1.0);
        assert_eq!(window_ids(&c1), vec![B, A]);
    }

    #[test]
    fn candidates_respect_p_and_i_best_first() {
        // A followed by B 3 times out of 4, by C 2 of 4, by D 1 of 4.
        let (c, d) = (2, 3);
        let mut g = DependencyGraph::new(GraphLimits::default());
        for follow in [&[B, c, d][..], &[B, c], &[B], &[]] {
            let mut win = Window::new(4);
            g.observe(&mut win, A);
            for &f in follow {
                g.observe(&mut win, f);
            }
        }
        let mut out = Vec::new();
        let p = |s: &str| s.parse::<PrefetchParams>().unwrap();
        g.candidates(A, &p("w=4,p=0,i=all"), &mut out);
        assert_eq!(out, vec![(0.75, B), (0.5, c), (0.25, d)]);
        g.candidates(A, &p("w=4,p=0.5,i=all"), &mut out);
        assert_eq!(out, vec![(0.75, B), (0.5, c)]);
        g.candidates(A, &p("w=4,p=0,i=1"), &mut out);
        assert_eq!(out, vec![(0.75, B)]);
        g.candidates(A, &p("w=4,p=1.1,i=all"), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn arcs_per_node_are_bounded() {
        let mut g = DependencyGraph::new(GraphLimits {
            max_arcs_per_node: 4,
        });
        for b in 1..50 {
            let mut win = Window::new(2);
            g.observe(&mut win, A);
            g.observe(&mut win, b);
        }
        assert_eq!(g.arcs().filter(|(f, _, _)| *f == A).count(), 4);
        assert_eq!(g.arc_count(), 4);
    }

    #[test]
    fn pruned_nodes_stop_crediting_and_lose_arcs() {
        let mut g = DependencyGraph::new(GraphLimits::default());
        let mut win = Window::new(4);
        g.observe(&mut win, A);
        g.observe(&mut win, B);
        for x in 10..20 {
            let mut other = Window::new(4);
            g.observe(&mut other, x);
        }
        // Clock is 12: nodes last requested before observation 7 go.
        let freed = g.prune_idle(5);
        assert_eq!(freed, vec![A, B, 10, 11, 12, 13]);
        assert_eq!(g.live_nodes(), 6);
        assert_eq!(g.arc_count(), 0);
        // `win` still holds the stale A and B: they must not credit arcs from
        // nodes whose counts were reset (that would push weights above 1).
        g.observe(&mut win, 7);
        assert_eq!(g.weight(A, 7), 0.0);
        assert_eq!(g.weight(B, 7), 0.0);
        assert!(g.arcs().all(|(_, _, w)| w <= 1.0));
    }

    #[test]
    fn prune_oldest_frees_the_least_recent() {
        let mut g = DependencyGraph::new(GraphLimits::default());
        let mut win = Window::new(3);
        for id in 0..10 {
            g.observe(&mut win, id);
        }
        let freed = g.prune_oldest(3);
        assert_eq!(freed, vec![0, 1, 2]);
        assert_eq!(g.live_nodes(), 7);
    }
}
