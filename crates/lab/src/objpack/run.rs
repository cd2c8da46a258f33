//! Runs the matrix: per network one emulated link, the paper's server in
//! the server namespace (one thread, one run at a time), the paper's client
//! in the client namespace; the link counts packets and bytes per run.
//!
//! Per network: every set by every method with the files warm and, where
//! asked, cold (dropped from the page cache just before the run); then the
//! paper's windows of five sets (500 files) requested one after another in
//! one measurement (its Experiments 1-3 and 7-9), with the server thread's
//! CPU read every 10 ms (Figures 5-8). Methods run in a random order per set
//! and cache state (seeded), so a drift of the machine does not always
//! favour the same method. Before the runs, the server thread's CPU and the
//! machine's are read idle for a few seconds (the paper's Table 8).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use pagewire_emu::{Link, LinkConfig};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::files::{self, FileSet};
use super::methods::{self, ClientMeasure, Method, ServerMeasure};
use super::sys::{self, Cache, Sampler, Snapshot, SystemCpu, ThreadClock};

/// Sets per window: the paper's Experiments 1-3 requested "five sets of the
/// test files ... at once (i.e., a total of 500 files)".
pub const WINDOW_SETS: usize = 5;
/// Interval of the CPU readings in window runs (the paper's was 100 ms;
/// 10 ms readings are summed by ten for its figures).
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// Idle readings before the runs (the paper's Table 8: 5 minutes at 100 ms;
/// here 5 s at 100 ms).
pub const IDLE_READINGS: usize = 50;

/// Port of the bench server inside the server namespace.
pub const PORT: u16 = 8002;

/// Link configuration for a profile name (the profile plus overrides).
pub type LinkFactory = Box<dyn Fn(&str) -> Result<LinkConfig>>;

/// One network of the matrix.
#[derive(Clone, Debug)]
pub struct NetPlan {
    /// Profile name (`lan100`, `wan`, ...).
    pub name: String,
    /// Sets per group (1-10).
    pub sets: usize,
    /// Cache states to run every set in (warm first).
    pub caches: Vec<Cache>,
    /// Also run the windows of five sets (needs at least five sets).
    pub windows: bool,
}

pub struct ObjpackConfig {
    pub nets: Vec<NetPlan>,
    pub methods: Vec<Method>,
    pub seed: u64,
    pub out_dir: PathBuf,
    pub link_config: LinkFactory,
    pub progress: bool,
}

/// One run: one set of 100 files (or a window of five sets) moved by one
/// method over one network.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub net: String,
    pub group_kb: usize,
    /// The (first) set.
    pub set: usize,
    /// Sets moved in this run, one after another: 1, or 5 (a window).
    pub sets: usize,
    pub method: Method,
    pub cache: Cache,
    /// Share of the pages of the files this run reads that were in the
    /// page cache when it began (mincore), %.
    pub resident_pct: f64,
    /// Position of the method in this set's random order (0 = first).
    pub order: usize,
    pub server: ServerMeasure,
    pub client: ClientMeasure,
    pub system: SystemCpu,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    /// Packets the link delivered to the server side / to the client side.
    pub packets_to_server: u64,
    pub packets_to_client: u64,
    pub connections: u64,
    pub retransmissions: u64,
    /// How late packets left the emulated link (see
    /// `pagewire_link::lateness`); `flagged` runs are left out of claims.
    pub link_lateness: pagewire_link::LinkLateness,
    /// Window runs: the server thread's CPU utilization per 10 ms reading
    /// from the start of the run (% of one CPU).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_cpu_10ms: Vec<f64>,
}

/// Readings of CPU utilization while nothing runs (the paper's Table 8).
#[derive(Clone, Debug, Default, Serialize)]
pub struct IdleNoise {
    pub net: String,
    pub every_ms: f64,
    /// The server thread (blocked on its command channel), %.
    pub server_thread_pct: Vec<f64>,
    /// The whole machine (all CPUs, % of one CPU; /proc/stat ticks).
    pub machine_pct: Vec<f64>,
}

pub struct ObjpackOutcome {
    /// What made the results (begun when the run started).
    pub provenance: crate::results::Provenance,
    pub rows: Vec<RunRow>,
    pub idle: Vec<IdleNoise>,
    pub wall_s: f64,
    /// Per group: (mean KB, min, median, max file size) over its sets.
    pub group_sizes: Vec<(usize, usize, usize, usize)>,
}

enum Cmd {
    Run(Method, Vec<FileSet>),
    Stop,
}

/// One planned run.
struct Todo<'a> {
    sets: Vec<&'a FileSet>,
    method: Method,
    cache: Cache,
    order: usize,
}

/// The runs of one network: per set and cache state the methods in a
/// seeded random order; then the windows.
fn plan<'a>(all: &'a [FileSet], net: &NetPlan, methods: &[Method], seed: u64) -> Vec<Todo<'a>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x000b_1ec7_0000);
    let mut out = Vec::new();
    let mut add = |sets: Vec<&'a FileSet>, rng: &mut ChaCha8Rng| {
        for &cache in &net.caches {
            let mut ms = methods.to_vec();
            ms.shuffle(rng);
            for (order, method) in ms.into_iter().enumerate() {
                out.push(Todo {
                    sets: sets.clone(),
                    method,
                    cache,
                    order,
                });
            }
        }
    };
    for s in all.iter().filter(|s| s.index < net.sets) {
        add(vec![s], &mut rng);
    }
    if net.windows {
        for mean in files::GROUP_MEANS {
            let group: Vec<&FileSet> = all
                .iter()
                .filter(|s| s.group_mean == mean && s.index < net.sets)
                .collect();
            for w in group.chunks_exact(WINDOW_SETS) {
                add(w.to_vec(), &mut rng);
            }
        }
    }
    out
}

/// The paper's Table 8 on this machine: CPU readings every 100 ms while
/// the bench is idle.
fn idle_noise(net: &str, server_clock: Option<ThreadClock>) -> IdleNoise {
    let every = Duration::from_millis(100);
    let sampler = server_clock.map(|c| Sampler::start(c, every, IDLE_READINGS));
    let mut machine = Vec::new();
    let mut last = sys::Stat::now();
    for _ in 0..IDLE_READINGS {
        std::thread::sleep(every);
        let s = sys::Stat::now();
        let busy = |x: &sys::Stat| x.user + x.nice + x.system + x.irq + x.softirq + x.steal;
        let all = |x: &sys::Stat| busy(x) + x.idle + x.iowait;
        let (db, da) = (busy(&s) - busy(&last), all(&s).saturating_sub(all(&last)));
        machine.push(if da > 0 {
            // % of one CPU, like a single-CPU utilization reading.
            100.0 * db as f64 / da as f64
                * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
        } else {
            0.0
        });
        last = s;
    }
    IdleNoise {
        net: net.to_string(),
        every_ms: 100.0,
        server_thread_pct: sampler.map(Sampler::finish).unwrap_or_default(),
        machine_pct: machine,
    }
}

pub fn run(cfg: &ObjpackConfig) -> Result<ObjpackOutcome> {
    let mut provenance = crate::results::Provenance::begin("objpack", pagewire_emu::command_line());
    let started = Instant::now();
    let max_sets = cfg.nets.iter().map(|n| n.sets).max().unwrap_or(0);
    let sets = files::generate(&cfg.out_dir.join("files"), cfg.seed, max_sets)?;
    let mut group_sizes = Vec::new();
    for mean in files::GROUP_MEANS {
        let mut all: Vec<usize> = sets
            .iter()
            .filter(|s| s.group_mean == mean)
            .flat_map(|s| s.files.iter().map(|f| f.1))
            .collect();
        all.sort();
        if let (Some(&lo), Some(&hi)) = (all.first(), all.last()) {
            group_sizes.push((mean >> 10, lo, all[all.len() / 2], hi));
        }
    }
    let mut rows = Vec::new();
    let mut idle = Vec::new();
    crate::interrupt::install();
    for np in &cfg.nets {
        if crate::interrupt::signalled() {
            break;
        }
        let net = &np.name;
        let lc = (cfg.link_config)(net)?;
        provenance
            .link_configs
            .insert(net.clone(), serde_json::to_value(&lc)?);
        let link = Link::start(lc).with_context(|| format!("start the {net} link"))?;
        // The forwarder names itself once it runs: looked up again per run
        // until found.
        let mut forwarder = sys::find_thread("pw-forwarder");
        let addr = SocketAddr::from((link.server_addr(), PORT));
        let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>();
        let (res_tx, res_rx) = mpsc::channel::<Result<ServerMeasure>>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<Option<ThreadClock>>>();
        let server = link.spawn_thread_in_server(move || {
            let listener = match TcpListener::bind(addr) {
                Ok(l) => {
                    let _ = ready_tx.send(Ok(ThreadClock::current()));
                    l
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow!("bind {addr}: {e}")));
                    return;
                }
            };
            while let Ok(Cmd::Run(m, sets)) = cmd_rx.recv() {
                let _ = res_tx.send(methods::serve(&listener, m, &sets));
            }
        })?;
        let server_clock = ready_rx
            .recv()
            .map_err(|_| anyhow!("bench server thread ended"))??;
        idle.push(idle_noise(net, server_clock));
        let todo = plan(&sets, np, &cfg.methods, cfg.seed);
        for (i, t) in todo.iter().enumerate() {
            let first = t.sets[0];
            let what = format!(
                "{net} {} KB set {}{} {} {}",
                first.group_mean >> 10,
                first.index,
                if t.sets.len() > 1 {
                    format!("-{}", first.index + t.sets.len() - 1)
                } else {
                    String::new()
                },
                t.cache.name(),
                t.method.name()
            );
            if cfg.progress {
                eprint!("\r{net}: run {}/{} ({what})        ", i + 1, todo.len());
            }
            // Ctrl-C: the run in flight finishes (its transfer is short),
            // the rows so far are reported.
            if crate::interrupt::signalled() {
                break;
            }
            let _in_flight = crate::interrupt::InFlight::finishing();
            let paths: Vec<PathBuf> = t.sets.iter().flat_map(|s| t.method.paths(s)).collect();
            let refs: Vec<&std::path::Path> = paths.iter().map(PathBuf::as_path).collect();
            let resident_pct = sys::prepare(&refs, t.cache)?;
            let owned: Vec<FileSet> = t.sets.iter().map(|s| (*s).clone()).collect();
            if forwarder.is_none() {
                forwarder = sys::find_thread("pw-forwarder");
            }
            let snap = Snapshot::take(forwarder);
            let sampler = (t.sets.len() > 1)
                .then_some(server_clock)
                .flatten()
                .map(|c| Sampler::start(c, SAMPLE_EVERY, 100_000));
            cmd_tx
                .send(Cmd::Run(t.method, owned.clone()))
                .map_err(|_| anyhow!("bench server thread ended"))?;
            link.begin_run(None)?;
            let m_c = t.method;
            let client = link.run_in_client(move || methods::fetch(addr, m_c, &owned))?;
            let server_m = res_rx
                .recv()
                .map_err(|_| anyhow!("bench server thread ended"))?;
            let system = snap.finish();
            let trace = sampler.map(Sampler::finish).unwrap_or_default();
            let counters = link.end_run()?;
            let client = client.with_context(|| what.clone())?;
            let server_m = server_m.with_context(|| format!("server: {what}"))?;
            rows.push(RunRow {
                net: net.clone(),
                group_kb: first.group_mean >> 10,
                set: first.index,
                sets: t.sets.len(),
                method: t.method,
                cache: t.cache,
                resident_pct,
                order: t.order,
                server: server_m,
                client,
                system,
                packets: counters.packets_total,
                bytes: counters.bytes_total,
                payload_bytes: counters.payload_bytes_total,
                packets_to_server: counters.client_to_server.packets,
                packets_to_client: counters.server_to_client.packets,
                connections: counters.connections_opened,
                retransmissions: counters.retransmissions,
                link_lateness: counters.link_lateness,
                server_cpu_10ms: trace,
            });
        }
        if cfg.progress {
            eprintln!();
        }
        let _ = cmd_tx.send(Cmd::Stop);
        drop(cmd_tx);
        let _ = server.join();
        drop(link);
    }
    crate::results::finish(&mut provenance);
    provenance.seeds = [
        ("files".to_string(), cfg.seed),
        ("link".to_string(), cfg.seed),
    ]
    .into();
    provenance.repetitions = cfg
        .nets
        .iter()
        .map(|n| (format!("{} sets per group", n.name), n.sets as u32))
        .collect();
    provenance.server = "objpack bench server (in-process)".into();
    provenance.page_variant = Some("paper 002 file sets: 100 files per set, 3 size groups".into());
    provenance.note =
        "Files are synthetic (generated from the seed to the paper's group means).".into();
    Ok(ObjpackOutcome {
        provenance,
        rows,
        idle,
        wall_s: started.elapsed().as_secs_f64(),
        group_sizes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sets() -> Vec<FileSet> {
        let mut v = Vec::new();
        for mean in files::GROUP_MEANS {
            for index in 0..10 {
                v.push(FileSet {
                    group_mean: mean,
                    index,
                    dir: PathBuf::new(),
                    files: Vec::new(),
                    objp: PathBuf::new(),
                    objp1: PathBuf::new(),
                    tar: PathBuf::new(),
                    mhtml: PathBuf::new(),
                    boundary: String::new(),
                });
            }
        }
        v
    }

    #[test]
    fn plan_covers_every_set_cache_and_window_in_seeded_random_orders() {
        let sets = fake_sets();
        let net = NetPlan {
            name: "lan100".into(),
            sets: 10,
            caches: vec![Cache::Warm, Cache::Cold],
            windows: true,
        };
        let p = plan(&sets, &net, &Method::ALL, 7);
        let n = Method::ALL.len();
        // 30 sets and 6 windows, each warm and cold, every method once.
        assert_eq!(p.len(), (30 + 6) * 2 * n);
        assert_eq!(
            p.iter().filter(|t| t.sets.len() == WINDOW_SETS).count(),
            6 * 2 * n
        );
        for chunk in p.chunks(n) {
            let mut m: Vec<Method> = chunk.iter().map(|t| t.method).collect();
            m.sort();
            assert_eq!(m, Method::ALL.to_vec());
            assert!(chunk.iter().enumerate().all(|(i, t)| t.order == i));
        }
        // Not always the same order; the same seed gives the same plan.
        let orders: std::collections::BTreeSet<Vec<Method>> = p
            .chunks(n)
            .map(|c| c.iter().map(|t| t.method).collect())
            .collect();
        assert!(orders.len() > 10, "{} distinct orders", orders.len());
        let again = plan(&sets, &net, &Method::ALL, 7);
        assert!(p.iter().zip(&again).all(|(a, b)| a.method == b.method));
        // Windows hold five consecutive sets of one group.
        let w = p.iter().find(|t| t.sets.len() == WINDOW_SETS).unwrap();
        assert!(w
            .sets
            .windows(2)
            .all(|x| x[1].index == x[0].index + 1 && x[1].group_mean == x[0].group_mean));
    }
}
