//! The predictor as a server runs it: `prefetchd` of paper 003 §7.1, learning
//! online from the requests it sees and answering with hint lists.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use rustc_hash::FxHashMap;

use crate::graph::{DependencyGraph, GraphLimits, NodeId, Window, ARC_BYTES, NODE_BYTES};
use crate::PrefetchParams;

/// Memory bounds of an [`OnlinePredictor`].
///
/// Worst case the predictor holds about
/// `max_nodes × (NODE_BYTES + max_path_bytes + 64 + max_arcs_per_node × ARC_BYTES)
///  + max_clients × (w × 8 + 64)` bytes: with the defaults (65,536 nodes of
/// at most 1 KiB paths and 32 arcs, 65,536 clients) that is under 115 MiB
/// for w <= 10 and under 140 MiB for the largest window, 64;
/// a real site with a few thousand URLs uses a few MiB. See
/// [`OnlineLimits::worst_case_bytes`].
#[derive(Clone, Copy, Debug)]
pub struct OnlineLimits {
    /// Distinct URLs remembered at once.
    pub max_nodes: usize,
    /// Outgoing arcs kept per URL.
    pub max_arcs_per_node: usize,
    /// Client hosts whose windows are kept at once (least recently seen go).
    pub max_clients: usize,
    /// URLs and arcs not seen for this many observations are pruned.
    pub idle_horizon: u64,
    /// Longer request paths are neither learned nor advised (they are almost
    /// always generated query URLs that never repeat).
    pub max_path_bytes: usize,
}

impl Default for OnlineLimits {
    fn default() -> Self {
        OnlineLimits {
            max_nodes: 65_536,
            max_arcs_per_node: 32,
            max_clients: 65_536,
            // One million requests: days of traffic for the sites the paper
            // studied; long enough that a page's dependencies survive quiet
            // hours, short enough that a removed page is forgotten.
            idle_horizon: 1_000_000,
            max_path_bytes: 1024,
        }
    }
}

impl OnlineLimits {
    /// Upper bound on the bytes the predictor's tables can occupy.
    pub fn worst_case_bytes(&self, window: usize) -> usize {
        self.max_nodes
            * (NODE_BYTES + self.max_path_bytes + 16 + self.max_arcs_per_node * ARC_BYTES)
            + self.max_clients * (window * 8 + 64)
    }
}

struct Client {
    window: Window,
    last_seen: u64,
}

struct Inner {
    graph: DependencyGraph,
    /// path -> id; the path text is shared with `paths` (one allocation).
    ids: FxHashMap<Arc<str>, NodeId>,
    /// id -> path; `None` for freed ids.
    paths: Vec<Option<Arc<str>>>,
    free: Vec<NodeId>,
    clients: FxHashMap<IpAddr, Client>,
    scratch: Vec<(f64, NodeId)>,
}

/// The dependency-graph predictor for a live server. `Send + Sync`: one
/// instance is shared by every connection (the paper's single `prefetchd` per
/// server); a mutex serialises updates, each of which is O(w + arcs of one
/// node).
pub struct OnlinePredictor {
    params: PrefetchParams,
    limits: OnlineLimits,
    inner: Mutex<Inner>,
}

impl OnlinePredictor {
    /// A predictor with the default [`OnlineLimits`].
    pub fn new(params: PrefetchParams) -> Self {
        Self::with_limits(params, OnlineLimits::default())
    }

    pub fn with_limits(params: PrefetchParams, limits: OnlineLimits) -> Self {
        OnlinePredictor {
            params,
            limits,
            inner: Mutex::new(Inner {
                graph: DependencyGraph::new(GraphLimits {
                    max_arcs_per_node: limits.max_arcs_per_node,
                }),
                ids: FxHashMap::default(),
                paths: Vec::new(),
                free: Vec::new(),
                clients: FxHashMap::default(),
                scratch: Vec::new(),
            }),
        }
    }

    pub fn params(&self) -> &PrefetchParams {
        &self.params
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the tables unusable
        // (every update is a few field writes), so keep serving hints.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record that `client` requested `path`; return hint paths for it, best
    /// first (at most i, each with weight >= p), from the weights as the
    /// request found them (before it is counted). The requested path itself
    /// is never hinted.
    pub fn observe(&self, client: IpAddr, path: &str) -> Vec<String> {
        if path.len() > self.limits.max_path_bytes {
            return Vec::new();
        }
        let mut guard = self.lock();
        let inner = &mut *guard;
        let id = inner.intern(path, &self.limits);
        // The weights as the request found them (paper 003 §8: a weight can
        // reach 1.0, `variant::WeightTiming::Before`), then learn from it.
        let hints = inner.hints(id, &self.params);
        let clock = inner.graph.clock();
        if !inner.clients.contains_key(&client) && inner.clients.len() >= self.limits.max_clients {
            evict_clients(&mut inner.clients, self.limits.max_clients / 4 + 1);
        }
        let entry = inner.clients.entry(client).or_insert_with(|| Client {
            window: Window::new(self.params.window),
            last_seen: clock,
        });
        entry.last_seen = clock + 1;
        inner.graph.observe(&mut entry.window, id);
        // Amortised pruning: one pass over the graph every idle_horizon/4
        // observations keeps nodes and arcs idle for longer than the horizon
        // from accumulating.
        let every = (self.limits.idle_horizon / 4).max(1);
        if inner.graph.clock() % every == 0 {
            let freed = inner.graph.prune_idle(self.limits.idle_horizon);
            inner.release(freed);
        }
        hints
    }

    /// Hints for `path` without recording anything (for requests marked
    /// `Sec-Purpose: prefetch`, which must not teach the predictor, §7.1).
    pub fn advise(&self, path: &str) -> Vec<String> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        match inner.ids.get(path) {
            Some(&id) => inner.hints(id, &self.params),
            None => Vec::new(),
        }
    }

    /// Distinct URLs currently known.
    pub fn known_paths(&self) -> usize {
        self.lock().ids.len()
    }

    /// Client hosts currently tracked.
    pub fn known_clients(&self) -> usize {
        self.lock().clients.len()
    }
}

/// Drop the `n` least recently seen clients.
fn evict_clients(clients: &mut FxHashMap<IpAddr, Client>, n: usize) {
    let mut seen: Vec<u64> = clients.values().map(|c| c.last_seen).collect();
    if seen.is_empty() {
        return;
    }
    let k = n.min(seen.len()) - 1;
    let (_, kth, _) = seen.select_nth_unstable(k);
    let kth = *kth;
    clients.retain(|_, c| c.last_seen > kth);
}

impl Inner {
    fn intern(&mut self, path: &str, limits: &OnlineLimits) -> NodeId {
        if let Some(&id) = self.ids.get(path) {
            return id;
        }
        if self.ids.len() >= limits.max_nodes {
            let mut freed = self.graph.prune_idle(limits.idle_horizon);
            if freed.is_empty() {
                // Nothing idle: forget the least recently requested quarter.
                freed = self.graph.prune_oldest(limits.max_nodes / 4 + 1);
            }
            self.release(freed);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.paths.push(None);
                (self.paths.len() - 1) as NodeId
            }
        };
        let shared: Arc<str> = Arc::from(path);
        self.paths[id as usize] = Some(shared.clone());
        self.ids.insert(shared, id);
        id
    }

    fn release(&mut self, freed: Vec<NodeId>) {
        for id in freed {
            if let Some(path) = self.paths.get_mut(id as usize).and_then(Option::take) {
                self.ids.remove(&path);
                self.free.push(id);
            }
        }
    }

    fn hints(&mut self, id: NodeId, params: &PrefetchParams) -> Vec<String> {
        self.graph.candidates(id, params, &mut self.scratch);
        self.scratch
            .iter()
            .filter_map(|&(_, to)| self.paths.get(to as usize)?.as_deref())
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(n: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(198, 18, 0, n))
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<OnlinePredictor>();
    }

    #[test]
    fn learns_page_then_images_and_hints_them() {
        let pred = OnlinePredictor::new("w=4,p=0.5,i=2".parse().unwrap());
        // Two clients visit the page and its two images.
        for c in 1..=2 {
            assert!(pred.observe(ip(c), "/index.html").len() <= 2);
            pred.observe(ip(c), "/a.gif");
            pred.observe(ip(c), "/b.gif");
        }
        // A third client asking for the page is told about both images.
        let hints = pred.observe(ip(3), "/index.html");
        assert_eq!(hints.len(), 2);
        assert!(hints.contains(&"/a.gif".to_string()));
        assert!(hints.contains(&"/b.gif".to_string()));
        // advise() answers the same without learning.
        assert_eq!(pred.advise("/index.html").len(), 2);
        assert!(pred.advise("/never-seen").is_empty());
    }

    /// Hints come from the weights as the request found them, so an arc
    /// that every earlier request followed weighs 1.0 and passes p = 1.0
    /// (paper 003 §8), and the first request for a page is hinted nothing.
    #[test]
    fn a_weight_of_one_passes_p_one() {
        let pred = OnlinePredictor::new("w=2,p=1.0,i=all".parse().unwrap());
        assert!(pred.observe(ip(1), "/index.html").is_empty());
        pred.observe(ip(1), "/a.gif");
        assert_eq!(
            pred.observe(ip(2), "/index.html"),
            vec!["/a.gif".to_string()]
        );
        let none = OnlinePredictor::new("w=2,p=1.1,i=all".parse().unwrap());
        none.observe(ip(1), "/index.html");
        none.observe(ip(1), "/a.gif");
        assert!(none.observe(ip(2), "/index.html").is_empty());
    }

    #[test]
    fn advise_does_not_teach() {
        let pred = OnlinePredictor::new("w=4,p=0.1,i=all".parse().unwrap());
        pred.observe(ip(1), "/a");
        pred.advise("/b");
        pred.observe(ip(1), "/c");
        assert_eq!(pred.advise("/a"), vec!["/c".to_string()]);
    }

    /// The bound documented on `OnlineLimits` (and in docs/prefetch.md).
    #[test]
    fn default_worst_case_is_under_140_mib() {
        let limits = OnlineLimits::default();
        assert!(limits.worst_case_bytes(crate::params::MAX_WINDOW) < 140 << 20);
        assert!(limits.worst_case_bytes(10) < 115 << 20);
    }

    #[test]
    fn tables_stay_within_limits() {
        let limits = OnlineLimits {
            max_nodes: 100,
            max_arcs_per_node: 4,
            max_clients: 10,
            idle_horizon: 50,
            max_path_bytes: 16,
        };
        let pred = OnlinePredictor::with_limits("w=4,p=0,i=all".parse().unwrap(), limits);
        for n in 0..5_000u32 {
            let client = IpAddr::V4(Ipv4Addr::from(n % 37));
            let path = format!("/f{}", n % 1_000);
            let hints = pred.observe(client, &path);
            assert!(hints.len() <= 4);
            assert!(pred.known_paths() <= 100);
            assert!(pred.known_clients() <= 10);
        }
        assert!(pred.observe(ip(1), "/this/path/is/far/too/long").is_empty());
    }
}
