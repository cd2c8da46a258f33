//! `pagewire bench --suite surge`: Barford & Crovella, "A Performance
//! Evaluation of Hyper Text Transfer Protocols" (ACM SIGMETRICS '99) on
//! today's servers. SURGE user equivalents (`pagewire load`) against
//! pagewire, nginx or Apache (prefork) in a memory-limited cgroup, over an
//! emulated switched 100 Mbit/s LAN, with the paper's Webmonitor sampled
//! once a second; then the paper's Tables 2-7, its figures and its claims.
//!
//! | module      | what                                                    |
//! |-------------|---------------------------------------------------------|
//! | [`cgroup`]  | the server's cgroup: memory limit, CPU/memory/IO counts  |
//! | [`monitor`] | Webmonitor: one sample a second, CSV, CWND samples       |
//! | [`servers`] | pagewire / nginx / Apache prefork, generated configs     |
//! | [`report`]  | Tables 2-7, per-connection memory, claims, HTML, plots   |

pub mod cgroup;
pub mod claims;
pub mod monitor;
pub mod report;
pub mod servers;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use pagewire_emu::{Link, LinkConfig};
use pagewire_load::calibration::Calibration;
use pagewire_load::fileset::{self, Manifest};
use pagewire_load::model::Params;
use pagewire_load::run::{Config as LoadConfig, Live, Mode};
use serde::Serialize;

use cgroup::Cgroup;
use monitor::{Monitor, Target};
pub use servers::Server;

/// Port the server listens on inside its namespace.
pub const PORT: u16 = 80;

/// Which resource a server configuration is meant to make the server's
/// bottleneck (the paper's sections 4.2 and 4.3): `none` (unlimited),
/// `cpu` (a CPU quota on the server's cgroup), `disk` (a memory limit
/// with the page cache emptied before each run, so files come from disk,
/// and with `--disk-iops` a disk as slow as the paper's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    None,
    Cpu,
    Disk,
}

/// One server configuration: a label (`32M`, `none`, `cpu`), its memory
/// limit, its CPU quota and its disk's read IOPS limit. A run record
/// carries them as `memory`, `limit_bytes`, `cpu_quota` (cores),
/// `disk_iops` and `regime`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Memory {
    #[serde(rename = "memory")]
    pub label: String,
    pub limit_bytes: Option<u64>,
    /// CPU quota of the server's cgroup, in cores (None: unlimited).
    pub cpu_quota: Option<f64>,
    /// Reads a second the server's cgroup may make from the disk holding
    /// the file set (None: the machine's disk as it is).
    pub disk_iops: Option<u32>,
    /// Under the memory limit the server may page its own memory out to
    /// the machine's swap (`--swap`), as the paper's server did; without
    /// it the limit can only take page cache back, or kill.
    pub swap: bool,
    pub regime: Regime,
}

impl Memory {
    pub fn parse(s: &str) -> Result<Memory, String> {
        let limit_bytes = cgroup::parse_size(s)?;
        Ok(Memory {
            label: s.trim().to_string(),
            limit_bytes,
            cpu_quota: None,
            disk_iops: None,
            swap: false,
            regime: if limit_bytes.is_some() {
                Regime::Disk
            } else {
                Regime::None
            },
        })
    }
    /// The CPU-bound configuration: unlimited memory, `cores` of CPU
    /// (a cgroup `cpu.max` / CFS quota), labelled `cpu`.
    pub fn cpu(cores: f64) -> Result<Memory, String> {
        cgroup::cpu_quota_us(cores)?;
        Ok(Memory {
            label: "cpu".into(),
            limit_bytes: None,
            cpu_quota: Some(cores),
            disk_iops: None,
            swap: false,
            regime: Regime::Cpu,
        })
    }
    /// Neither a memory limit nor a CPU quota nor a disk limit: the server
    /// is not short of anything.
    pub fn unlimited(&self) -> bool {
        self.limit_bytes.is_none() && self.cpu_quota.is_none() && self.disk_iops.is_none()
    }
    /// Ordering key: smaller limits first, the CPU-limited configuration
    /// next, no limit last.
    pub fn key(&self) -> u64 {
        match (self.limit_bytes, self.cpu_quota) {
            (Some(b), _) => b,
            (None, Some(_)) => u64::MAX - 1,
            (None, None) => u64::MAX,
        }
    }
}

/// The suite's configuration.
pub struct SurgeConfig {
    pub server: Server,
    pub memories: Vec<Memory>,
    pub ues: Vec<u64>,
    pub modes: Vec<Mode>,
    /// Modes of particular configurations (by label), in place of `modes`.
    pub modes_of: Vec<(String, Vec<Mode>)>,
    pub duration: Duration,
    /// Not measured at the start of each run (UEs start at a random phase
    /// of their ON/OFF cycle; the warm-up covers the server's start).
    pub warmup: Duration,
    pub ramp: Duration,
    /// Runs of every (memory, mode, UEs) cell: the claims read them as the
    /// cell's repetitions (fewer than 3 decide nothing).
    pub reps: u32,
    /// Files in the SURGE set (the paper: 2000, about 50 MB).
    pub files: usize,
    /// Seed of the file set (sizes, popularity ranks).
    pub fileset_seed: u64,
    /// Seed of the request stream (the UEs' choices).
    pub seed: u64,
    pub out_dir: PathBuf,
    /// Network profile (`lan100`: the paper's switched 100 Mbit/s LAN).
    pub link: LinkConfig,
    /// Empty the page cache before every run of a memory-limited configuration.
    pub cold_cache: bool,
    pub progress: bool,
    pub command: Vec<String>,
}

impl SurgeConfig {
    /// The modes run in configuration `m`.
    pub fn modes_for(&self, m: &Memory) -> &[Mode] {
        self.modes_of
            .iter()
            .find(|(l, _)| l.eq_ignore_ascii_case(&m.label))
            .map_or(&self.modes[..], |(_, v)| &v[..])
    }
}

/// Packets by type on the link, both directions (Figure 1, Tables 2 and 7).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Packets {
    pub total: u64,
    pub bytes: u64,
    pub data: u64,
    pub data_bytes: u64,
    pub syn: u64,
    pub fin: u64,
    pub rst: u64,
    pub ack: u64,
    pub retransmissions: u64,
    pub connections: u64,
}

/// One run: a server, memory, mode and load level. Written as results.json
/// has always had them: `server` and `mode` by name, `memory` (the label)
/// and `limit_bytes`.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    #[serde(serialize_with = "ser_server")]
    pub server: Server,
    #[serde(flatten)]
    pub memory: Memory,
    #[serde(serialize_with = "ser_mode")]
    pub mode: Mode,
    pub ues: u64,
    /// Repetition index within its (memory, mode, UEs) cell, 0-based.
    pub rep: u32,
    /// Request-stream seed of this run: the suite's, the same in every
    /// repetition (a repetition re-runs the same request stream, as the
    /// other suites re-fetch the same page, so a cell's interval is the
    /// measurement's spread, not the workload draw's).
    pub seed: u64,
    pub duration_s: f64,
    pub cold_cache: bool,
    pub gets: u64,
    pub errors: u64,
    pub retries: u64,
    pub load_connections: u64,
    pub gets_per_second: f64,
    /// Per-second GETs of the measurement window (after the ramp): mean, sd, n.
    pub gps_sd: f64,
    pub gps_n: u32,
    pub latency_mean_ms: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub object_latency_mean_ms: f64,
    pub packets: Packets,
    /// Monitor means over the run.
    pub usr: f64,
    pub kern: f64,
    pub idle: f64,
    pub iowait: f64,
    pub pages_read: f64,
    pub pages_written: f64,
    pub sys_pages_read: f64,
    pub major_faults: f64,
    /// Server processes the OOM killer killed during the run.
    pub oom_kills: u64,
    /// Reads a second the block layer served for the server's cgroup over
    /// the run (page-cache misses reaching the disk; with `disk_iops`, the
    /// disk is saturated when this reaches the limit).
    pub disk_reads_per_s: f64,
    /// The most memory (page cache excluded) the server's cgroup held in
    /// any second of the run, bytes (beside `rss_mean`).
    pub rss_max: f64,
    /// Pages the machine swapped in / out a second over the run
    /// (/proc/vmstat `pswpin`, `pswpout`: the machine's, as iowait; with
    /// `--swap` the memory-limited server is the one that pages).
    pub swap_in_per_s: f64,
    pub swap_out_per_s: f64,
    /// The most of the server's memory in swap in any second, bytes.
    pub swap_max: f64,
    /// The server's CPU use over the run, in cores (its cgroup's user +
    /// system time over the run's wall time).
    pub server_cpu_cores: f64,
    /// Share of the CPU quota's enforcement periods in which the server
    /// was throttled (it had used its quota); None without a quota.
    pub cpu_throttled: Option<f64>,
    pub tcp_sent: f64,
    pub tcp_received: f64,
    pub established: f64,
    pub time_wait: f64,
    pub rss_mean: f64,
    pub page_cache_mean: f64,
    pub cwnd_mean: f64,
    pub cwnd_sd: f64,
    pub cwnd_n: u64,
    pub cwnd_max: u64,
    /// 1-minute load average before and after the run (shared machine).
    pub loadavg_before: f64,
    pub loadavg_after: f64,
    /// How late packets left the emulated link (see
    /// `pagewire_link::lateness`); `flagged` runs are left out of claims.
    pub link_lateness: pagewire_link::LinkLateness,
    pub monitor_csv: String,
    pub cwnd_csv: String,
    pub error: Option<String>,
    /// The run's load beside paper 004's (per UE, per connection).
    pub calibration: Option<Calibration>,
    /// (established, rss) pairs of the monitor's seconds, for Figure 9.
    #[serde(skip)]
    pub mem_points: Vec<(f64, f64)>,
    #[serde(skip)]
    pub cwnds: Vec<u32>,
}

fn ser_server<S: serde::Serializer>(s: &Server, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.label())
}

fn ser_mode<S: serde::Serializer>(m: &Mode, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(m.name())
}

impl Run {
    /// A run of `server` under `memory` in `mode` with `ues` user
    /// equivalents, nothing measured yet.
    pub fn new(server: Server, memory: Memory, mode: Mode, ues: u64) -> Run {
        Run {
            server,
            memory,
            mode,
            ues,
            rep: 0,
            seed: 0,
            duration_s: 0.0,
            cold_cache: false,
            gets: 0,
            errors: 0,
            retries: 0,
            load_connections: 0,
            gets_per_second: 0.0,
            gps_sd: 0.0,
            gps_n: 0,
            latency_mean_ms: 0.0,
            latency_p50_ms: 0.0,
            latency_p99_ms: 0.0,
            object_latency_mean_ms: 0.0,
            packets: Packets::default(),
            usr: 0.0,
            kern: 0.0,
            idle: 0.0,
            iowait: 0.0,
            pages_read: 0.0,
            pages_written: 0.0,
            sys_pages_read: 0.0,
            major_faults: 0.0,
            oom_kills: 0,
            disk_reads_per_s: 0.0,
            rss_max: 0.0,
            swap_in_per_s: 0.0,
            swap_out_per_s: 0.0,
            swap_max: 0.0,
            server_cpu_cores: 0.0,
            cpu_throttled: None,
            tcp_sent: 0.0,
            tcp_received: 0.0,
            established: 0.0,
            time_wait: 0.0,
            rss_mean: 0.0,
            page_cache_mean: 0.0,
            cwnd_mean: 0.0,
            cwnd_sd: 0.0,
            cwnd_n: 0,
            cwnd_max: 0,
            loadavg_before: 0.0,
            loadavg_after: 0.0,
            link_lateness: pagewire_link::LinkLateness::default(),
            monitor_csv: String::new(),
            cwnd_csv: String::new(),
            error: None,
            calibration: None,
            mem_points: Vec::new(),
            cwnds: Vec::new(),
        }
    }

    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// What the suite hands to the report.
pub struct Outcome {
    /// What made the results (begun when the suite started).
    pub provenance: crate::results::Provenance,
    pub runs: Vec<Run>,
    pub manifest_bytes: u64,
    pub manifest_files: usize,
    pub wall_s: f64,
    pub cgroup: String,
    pub interrupted_by: Option<i32>,
}

pub fn loadavg() -> f64 {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, 0.0);
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() > 1 {
        (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (m, sd)
}

/// " rep K" for repetitions after the first (the first reads as runs did before --reps).
fn rep_label(rep: u32) -> String {
    if rep == 0 {
        String::new()
    } else {
        format!(" rep {rep}")
    }
}

/// The suite's calibration: every run's table where the server was not
/// short of memory or CPU (the unlimited configuration; all runs when there
/// is none), since there the load is the workload's, not the server's limit;
/// plus the HTTP/1.0 : HTTP/1.1 connection ratio of every memory and load
/// level that ran both. Written into results.json as `calibration`; the
/// claims are not testable when `within_bands` is false.
pub fn suite_calibration(runs: &[Run]) -> Calibration {
    let ok: Vec<&Run> = runs.iter().filter(|r| r.ok()).collect();
    let unlimited: Vec<&Run> = ok
        .iter()
        .copied()
        .filter(|r| r.memory.unlimited())
        .collect();
    let judged = if unlimited.is_empty() { ok } else { unlimited };
    let mut rows = Vec::new();
    for r in &judged {
        if let Some(c) = &r.calibration {
            for row in &c.rows {
                let mut row = row.clone();
                row.quantity = format!(
                    "{} {} UE {}{}: {}",
                    r.mode.name(),
                    r.ues,
                    r.memory.label,
                    rep_label(r.rep),
                    row.quantity
                );
                rows.push(row);
            }
        }
    }
    for a in judged.iter().filter(|r| r.mode == Mode::Http10) {
        if let Some(b) = judged.iter().find(|b| {
            b.mode == Mode::Http11 && b.ues == a.ues && b.memory == a.memory && b.rep == a.rep
        }) {
            let ours = (b.load_connections > 0)
                .then(|| a.load_connections as f64 / b.load_connections as f64);
            let (lo, hi) = pagewire_load::calibration::CONN_RATIO;
            rows.push(pagewire_load::calibration::Row {
                quantity: format!(
                    "{} UE {}{}: HTTP/1.0 : HTTP/1.1 connections",
                    a.ues,
                    a.memory.label,
                    rep_label(a.rep)
                ),
                ours,
                unit: String::new(),
                paper: "4.79-5.79".into(),
                source: "Table 6 HTTP/1.0 / HTTP/1.1 connects".into(),
                band: Some((lo, hi)),
                within: Some(ours.is_some_and(|v| v >= lo && v <= hi)),
            });
        }
    }
    if rows.is_empty() {
        rows.push(pagewire_load::calibration::Row {
            quantity: "no run completed".into(),
            ours: None,
            unit: String::new(),
            paper: String::new(),
            source: String::new(),
            band: Some((0.0, 0.0)),
            within: Some(false),
        });
    }
    Calibration::from_rows(rows)
}

/// Generates (or reuses) the file set in `dir`.
pub fn file_set(dir: &Path, files: usize, seed: u64) -> Result<Manifest> {
    if let Ok(m) = Manifest::load(dir) {
        if m.files == files && m.seed == seed {
            return Ok(m);
        }
    }
    let m = fileset::generate(files, seed, &Params::default());
    fileset::write(&m, dir)?;
    Ok(m)
}

/// Runs the whole matrix.
pub fn run(cfg: &SurgeConfig) -> Result<Outcome> {
    let mut provenance = crate::results::Provenance::begin("surge", cfg.command.clone());
    let started = Instant::now();
    fs::create_dir_all(cfg.out_dir.join("monitor"))?;
    let root = cfg.out_dir.join("site");
    let manifest = file_set(&root, cfg.files, cfg.fileset_seed)
        .with_context(|| format!("make the SURGE file set in {}", root.display()))?;
    let root = root.canonicalize()?;
    if cfg.server == Server::Apache {
        // Apache's children run as www-data: the document root must be readable.
        let _ = std::process::Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(&root)
            .status();
    }
    if let Server::Pagewire { .. } = cfg.server {
        // pagewire's server holds the whole site in its own memory (the
        // store is built at start and never reads the disk again): under a
        // limit it cannot page files from disk, it can only be killed.
        if let Some(m) = cfg.memories.iter().find(|m| {
            m.limit_bytes
                .is_some_and(|b| b < 2 * manifest.bytes + (64 << 20))
        }) {
            bail!(
                "--memory {}: pagewire's server keeps the whole {:.0} MB file set in its own memory                  (it never reads the disk after start), so a limit below the set cannot make it page                  files from disk; use --server nginx or apache for memory-limited runs, or --memory none",
                m.label,
                manifest.bytes as f64 / 1048576.0
            );
        }
    }
    if cfg.memories.iter().any(|m| m.swap) && cgroup::swaps().is_empty() {
        bail!(
            "--swap: this machine has no swap for the server to page to (/proc/swaps lists none); \
             turn some on first, e.g. a swap file: dd if=/dev/zero of=F bs=1M count=1024 && \
             chmod 600 F && mkswap F && swapon F (swapoff F afterwards)"
        );
    }
    crate::interrupt::install();
    let mut memories = cfg.memories.clone();
    // Unlimited (warm, CPU-bound) first, then smaller and smaller.
    memories.sort_by_key(|m| std::cmp::Reverse(m.key()));
    let reps = cfg.reps.max(1);
    let total = memories
        .iter()
        .map(|m| cfg.modes_for(m).len())
        .sum::<usize>()
        * cfg.ues.len()
        * reps as usize;
    let mut done = 0;
    // The same bar as the other suites: elapsed, the plan's ETA (each run
    // lasts --duration plus about 2 s of set-up), the run in flight.
    let run_ms = cfg.duration.as_millis() as u64 + 2000;
    let pb = if cfg.progress {
        let pb = indicatif::ProgressBar::with_draw_target(
            Some(total as u64 * run_ms),
            indicatif::ProgressDrawTarget::stderr(),
        );
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30.cyan/blue} {percent:>3}% ETA {eta:>4} {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        pb.enable_steady_tick(Duration::from_secs(1));
        pb
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut runs = Vec::new();
    let mut interrupted_by = None;
    let disk = if memories.iter().any(|m| m.disk_iops.is_some()) {
        Some(cgroup::block_device_of(&root).context("--disk-iops: the file set's disk")?)
    } else {
        None
    };
    'mem: for mem in &memories {
        let cg = Arc::new(Cgroup::create(
            &mem.label.to_ascii_lowercase(),
            mem.limit_bytes,
            mem.cpu_quota,
            mem.disk_iops.and_then(|n| Some((disk.clone()?, n))),
            mem.swap,
        )?);
        let link = Link::start(cfg.link.clone()).context("start the link")?;
        let addr = format!("{}:{PORT}", link.server_addr());
        let target = format!("http://{addr}");
        for &mode in cfg.modes_for(mem) {
            // A fresh server per mode: under a limit the OOM killer may kill
            // a server process (Apache's parent included), which must not
            // carry over into the next mode's runs.
            let sdir = cfg.out_dir.join(format!(
                "server-{}-{}-{}",
                cfg.server.label(),
                mem.label,
                mode.name()
            ));
            let mut server = servers::start(&cfg.server, &link, &cg, &root, &sdir, &addr)?;
            for (&ues, rep) in cfg.ues.iter().flat_map(|u| (0..reps).map(move |k| (u, k))) {
                if let Some(sig) = pagewire_emu::cli::terminated_by() {
                    interrupted_by = Some(sig);
                    break 'mem;
                }
                done += 1;
                pb.set_message(format!(
                    "run {done}/{total}: {} memory {} {} {} UEs rep {}/{reps} ({} s), load {:.2}",
                    cfg.server.label(),
                    mem.label,
                    mode.name(),
                    ues,
                    rep + 1,
                    cfg.duration.as_secs_f64(),
                    loadavg()
                ));
                // A SURGE run ends by its --duration: Ctrl-C lets it finish.
                let in_flight = crate::interrupt::InFlight::finishing();
                let cold = cfg.cold_cache && mem.limit_bytes.is_some();
                if cold {
                    cgroup::drop_caches()?;
                }
                let r = one_run(
                    cfg, &link, &cg, &server, &manifest, &target, mem, mode, ues, rep, cold,
                );
                drop(in_flight);
                pb.inc(run_ms);
                let r = match r {
                    Ok(r) => r,
                    Err(e) => {
                        if let Some(st) = server.exited() {
                            bail!(
                                "{} exited ({st}) during the runs: {}",
                                cfg.server.label(),
                                fs::read_to_string(&server.log).unwrap_or_default()
                            );
                        }
                        return Err(e);
                    }
                };
                if let Some(e) = &r.error {
                    if cfg.progress {
                        pb.println(format!("  run failed: {e}"));
                    } else {
                        eprintln!("  run failed: {e}");
                    }
                }
                runs.push(r);
                // Let TIME_WAIT and lingering connections of the previous
                // run not overlap the next run's first seconds too much.
                std::thread::sleep(Duration::from_millis(500));
            }
            drop(server);
            // Whatever the server left in the cgroup goes with it.
            cg.kill_all();
        }
        drop(link);
        drop(cg);
    }
    crate::results::finish(&mut provenance);
    provenance.seeds = [
        ("file set".to_string(), cfg.fileset_seed),
        ("workload".to_string(), cfg.seed),
        ("link".to_string(), cfg.link.seed),
    ]
    .into();
    provenance.repetitions = [("runs per cell".to_string(), reps)].into();
    provenance.link_configs = [(cfg.link.profile.clone(), serde_json::to_value(&cfg.link)?)].into();
    provenance.server = cfg.server.label().to_string();
    match &cfg.server {
        servers::Server::Nginx => provenance.add_peer("nginx", "nginx", &["-v"]),
        servers::Server::Apache => provenance.add_peer("apache2", servers::APACHE_BIN, &["-v"]),
        servers::Server::Pagewire { .. } => {}
    }
    provenance.page_variant = Some(format!(
        "SURGE file set: {} files, {} bytes",
        manifest.files, manifest.bytes
    ));
    provenance.note = format!("cgroup: {}", cgroup::describe());
    if cfg.memories.iter().any(|m| m.swap) {
        provenance.note += &format!("; swap: {}", cgroup::swaps().join(", "));
    }
    pb.finish_and_clear();
    Ok(Outcome {
        provenance,
        runs,
        manifest_bytes: manifest.bytes,
        manifest_files: manifest.files,
        wall_s: started.elapsed().as_secs_f64(),
        cgroup: cgroup::describe(),
        interrupted_by,
    })
}

#[allow(clippy::too_many_arguments)]
fn one_run(
    cfg: &SurgeConfig,
    link: &Link,
    cg: &Arc<Cgroup>,
    server: &servers::Running,
    manifest: &Manifest,
    target: &str,
    mem: &Memory,
    mode: Mode,
    ues: u64,
    rep: u32,
    cold: bool,
) -> Result<Run> {
    let load_before = loadavg();
    let lc = LoadConfig {
        target: target.to_string(),
        ues,
        model: pagewire_load::run::LoadModel::Closed,
        duration: cfg.duration,
        warmup: cfg.warmup,
        ramp: cfg.ramp,
        mode,
        conns_per_ue: 1,
        seed: cfg.seed,
        shard: (0, 1),
        threads: 1,
        timeout: Duration::from_secs(10),
        params: Params::default(),
        command_line: cfg.command.join(" "),
        start_at: None,
    };
    link.begin_run(None)?;
    let cpu_before = (cg.read(), Instant::now());
    let swap_before = cgroup::swap_counts();
    let mon = Monitor::start(Target {
        netns_pid: server.pid(),
        netns: server.netns.clone(),
        cgroup: cg.clone(),
        interval: Duration::from_secs(1),
    });
    let live = Arc::new(Live::default());
    let res = link.run_in_client(move || pagewire_load::run::run(lc, manifest, live))?;
    let rec = mon.stop();
    let cpu_after = (cg.read(), Instant::now());
    let swap_after = cgroup::swap_counts();
    let c = link.end_run_settled(Duration::from_millis(300))?;
    // Repetition 0 keeps the name runs had before --reps.
    let stem = format!(
        "{}-{}-{}-{}ue{}",
        cfg.server.label(),
        mem.label,
        mode.name(),
        ues,
        if rep == 0 {
            String::new()
        } else {
            format!("-rep{rep}")
        }
    );
    let mon_rel = format!("monitor/{stem}.csv");
    let cwnd_rel = format!("monitor/{stem}-cwnd.csv");
    rec.write_csv(&cfg.out_dir.join(&mon_rel))?;
    monitor::write_cdf(&cfg.out_dir.join(&cwnd_rel), &rec.cwnds)?;
    let k = &c.kinds;
    let packets = Packets {
        total: c.packets_total,
        bytes: c.bytes_total,
        data: k.data.packets + k.retransmission.packets,
        data_bytes: c.payload_bytes_total,
        syn: k.syn.packets + k.syn_ack.packets,
        fin: k.fin.packets,
        rst: k.rst.packets,
        ack: k.pure_ack.packets,
        retransmissions: c.retransmissions,
        connections: c.connections_opened,
    };
    let cw: Vec<f64> = rec.cwnds.iter().map(|&x| x as f64).collect();
    let (cwnd_mean, cwnd_sd) = mean_sd(&cw);
    let mut run = Run {
        server: cfg.server.clone(),
        memory: mem.clone(),
        mode,
        ues,
        rep,
        seed: cfg.seed,
        duration_s: cfg.duration.as_secs_f64(),
        cold_cache: cold,
        gets: 0,
        errors: 0,
        retries: 0,
        load_connections: 0,
        gets_per_second: 0.0,
        gps_sd: 0.0,
        gps_n: 0,
        latency_mean_ms: f64::NAN,
        latency_p50_ms: f64::NAN,
        latency_p99_ms: f64::NAN,
        object_latency_mean_ms: f64::NAN,
        packets,
        usr: rec.mean(|s| s.usr),
        kern: rec.mean(|s| s.kern),
        idle: rec.mean(|s| s.idle),
        iowait: rec.mean(|s| s.iowait),
        pages_read: rec.mean(|s| s.pages_read),
        pages_written: rec.mean(|s| s.pages_written),
        sys_pages_read: rec.mean(|s| s.sys_pages_read),
        major_faults: rec.mean(|s| s.major_faults),
        oom_kills: rec.samples.iter().map(|s| s.oom_kills).sum(),
        disk_reads_per_s: {
            let (a, b) = (&cpu_before.0, &cpu_after.0);
            b.io_reads.saturating_sub(a.io_reads) as f64
                / (cpu_after.1 - cpu_before.1).as_secs_f64().max(1e-3)
        },
        rss_max: rec.samples.iter().map(|s| s.rss).max().unwrap_or(0) as f64,
        swap_in_per_s: swap_after.0.saturating_sub(swap_before.0) as f64
            / (cpu_after.1 - cpu_before.1).as_secs_f64().max(1e-3),
        swap_out_per_s: swap_after.1.saturating_sub(swap_before.1) as f64
            / (cpu_after.1 - cpu_before.1).as_secs_f64().max(1e-3),
        swap_max: rec.samples.iter().map(|s| s.swap).max().unwrap_or(0) as f64,
        server_cpu_cores: {
            let (a, b) = (&cpu_before.0, &cpu_after.0);
            let ns = (b.user_ns + b.system_ns).saturating_sub(a.user_ns + a.system_ns);
            ns as f64 / 1e9 / (cpu_after.1 - cpu_before.1).as_secs_f64().max(1e-3)
        },
        cpu_throttled: mem.cpu_quota.map(|_| {
            let (a, b) = (&cpu_before.0, &cpu_after.0);
            let periods = b.cpu_periods.saturating_sub(a.cpu_periods);
            b.cpu_throttled.saturating_sub(a.cpu_throttled) as f64 / periods.max(1) as f64
        }),
        tcp_sent: rec.mean(|s| s.tcp_sent),
        tcp_received: rec.mean(|s| s.tcp_received),
        established: rec.mean(|s| s.established),
        time_wait: rec.mean(|s| s.time_wait),
        rss_mean: rec.mean(|s| s.rss as f64),
        page_cache_mean: rec.mean(|s| s.page_cache as f64),
        cwnd_mean,
        cwnd_sd,
        cwnd_n: rec.cwnds.len() as u64,
        cwnd_max: rec.cwnds.iter().copied().max().unwrap_or(0) as u64,
        loadavg_before: load_before,
        loadavg_after: loadavg(),
        link_lateness: c.link_lateness,
        monitor_csv: mon_rel,
        cwnd_csv: cwnd_rel,
        error: None,
        calibration: None,
        mem_points: rec
            .samples
            .iter()
            .map(|s| (s.established, s.rss as f64))
            .collect(),
        cwnds: rec.cwnds.clone(),
    };
    match res {
        Ok((summary, metrics)) => {
            run.gets = summary.gets;
            run.errors = summary.errors;
            run.retries = summary.retries;
            run.load_connections = summary.connections;
            run.gets_per_second = summary.gets_per_second;
            run.latency_mean_ms = summary.get_latency_ms.mean;
            run.latency_p50_ms = summary.get_latency_ms.p50;
            run.latency_p99_ms = summary.get_latency_ms.p99;
            run.object_latency_mean_ms = summary.object_latency_ms.mean;
            run.calibration = Some(Calibration::of(&summary));
            // Per-second GETs over the measurement window (after the warm-up and the ramp).
            let skip = cfg.ramp.max(cfg.warmup).as_secs() as usize;
            let secs = cfg.duration.as_secs() as usize;
            let per: Vec<f64> = metrics
                .series
                .iter()
                .skip(skip)
                .take(secs.saturating_sub(skip))
                .map(|s| s.gets as f64)
                .collect();
            let (_, sd) = mean_sd(&per);
            run.gps_sd = sd;
            run.gps_n = per.len() as u32;
            if summary.gets == 0 {
                run.error = Some(format!(
                    "no GET completed ({} errors: {:?})",
                    summary.errors, summary.errors_by_kind
                ));
            }
        }
        Err(e) => run.error = Some(format!("{e:#}")),
    }
    Ok(run)
}

/// The SURGE suite.
pub struct Surge;

impl crate::suite::Suite for Surge {
    const KIND: crate::claims::Suite = crate::claims::Suite::Surge;
    const RUNS: &'static str = "Barford & Crovella, SURGE: load on a memory-limited server";
    type Ctx = claims::Ctx;
    fn claims() -> &'static [crate::claims::spec::ClaimSpec<Self::Ctx>] {
        claims::CLAIMS
    }
    fn judge(
        results: &serde_json::Value,
        _dir: Option<&std::path::Path>,
    ) -> anyhow::Result<crate::claims::Judged> {
        claims::judge_value(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagewire_load::calibration::Row;

    fn run(mode: &str, memory: &str, conns: u64, duration_ok: bool) -> Run {
        let band = if duration_ok { Some(true) } else { Some(false) };
        let memory = Memory::parse(memory).unwrap();
        Run {
            load_connections: conns,
            calibration: Some(Calibration::from_rows(vec![Row {
                quantity: "connection duration".into(),
                ours: Some(1.0),
                unit: "s".into(),
                paper: String::new(),
                source: String::new(),
                band: Some((0.0, 2.0)),
                within: band,
            }])),
            ..Run::new(Server::Nginx, memory, mode.parse().unwrap(), 40)
        }
    }

    #[test]
    fn the_suite_judges_the_unlimited_runs_and_the_connection_ratio() {
        // An off-calibration run in a memory-limited configuration does not count.
        let runs = vec![
            run("http10", "none", 500, true),
            run("http11", "none", 100, true),
            run("http11", "32M", 100, false),
        ];
        let c = suite_calibration(&runs);
        assert!(c.within_bands, "{c:?}");
        let ratio = c
            .rows
            .iter()
            .find(|r| r.quantity.contains("HTTP/1.0 : HTTP/1.1"))
            .unwrap();
        assert_eq!(ratio.ours, Some(5.0));
        // A ratio outside 3.5-8 puts the suite off calibration.
        let runs = vec![
            run("http10", "none", 2000, true),
            run("http11", "none", 100, true),
        ];
        assert!(!suite_calibration(&runs).within_bands);
        // So does an unlimited run outside a band, and no run at all.
        assert!(!suite_calibration(&[run("http11", "none", 100, false)]).within_bands);
        assert!(!suite_calibration(&[]).within_bands);
    }
}
