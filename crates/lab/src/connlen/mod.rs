//! The connection-length experiment of Padmanabhan and Mogul, "Improving
//! HTTP Latency" (Second WWW Conference, 1994), section 3.2, Figures 2-3:
//! "a simple client program, which opens a connection to a server, tells
//! the server how many bytes it wants, and then reads and discards that many
//! bytes from the server. The server, meanwhile, generates the requested
//! number of bytes from thin air, writes them into the connection, and then
//! closes the connection."
//!
//! [`wire`] is that client/server pair (tokio), [`run`] sweeps lengths,
//! socket buffer sizes and configurations over emulated links, keeping the
//! best of the trials of every point as the paper did; [`claims`] checks the
//! paper's sentences; [`report`] writes the figures, CSV and JSON.

pub mod claims;
pub mod report;
pub mod wire;

use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use pagewire_emu::{Link, LinkConfig};
use pagewire_link::config::QueueLimit;
use serde::Serialize;

use crate::claims::spec::{ser_estimate, Estimate};

/// The paper's three configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Config {
    /// "a 'local' server, with a round-trip time of under 1 msec, and
    /// 1460-byte TCP segments": our `lan` profile (10 Mbit/s, 0.5 ms).
    #[serde(rename = "local")]
    Local,
    /// "a 'remote' server, across the width of the U.S., with a best-case
    /// RTT of 70 msec, and 1460-byte TCP segments": our `t1` profile.
    #[serde(rename = "remote")]
    Remote,
    /// "the same remote server, but using 536-byte TCP segments".
    #[serde(rename = "remote-536")]
    Remote536,
}

impl Config {
    pub const ALL: [Config; 3] = [Config::Local, Config::Remote, Config::Remote536];

    pub fn name(self) -> &'static str {
        match self {
            Config::Local => "local",
            Config::Remote => "remote",
            Config::Remote536 => "remote-536",
        }
    }

    /// The emulated link of this configuration. `router_queue` replaces the
    /// drop-tail queue of the remote path (the router between the paper's
    /// client and its server across the U.S.); the local link keeps its own.
    pub fn link_config(
        self,
        tcp1997: bool,
        router_queue: Option<QueueLimit>,
    ) -> Result<LinkConfig> {
        let mut c = match self {
            Config::Local => LinkConfig::profile("lan")?,
            Config::Remote | Config::Remote536 => {
                let mut c = LinkConfig::profile("t1")?;
                if let Some(q) = router_queue {
                    c.queue = q;
                }
                c
            }
        };
        c.mss = match self {
            Config::Remote536 => Some(536),
            _ => Some(1460),
        };
        c.tcp1997 = tcp1997;
        c.validate()?;
        Ok(c)
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Config {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Config::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown configuration {s:?} (local, remote, remote-536)"))
    }
}

/// A window size, the paper's "TCP buffer (maximum window) sizes": the
/// client's SO_RCVBUF calibrated so that the window it advertises is this
/// many bytes (whole segments without window scaling), the server's
/// SO_SNDBUF four times it (see `wire::calibrate`); or the kernel's default
/// (autotuned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Buffer {
    Bytes(u32),
    Default,
}

impl Buffer {
    /// The paper's "popular TCP buffer sizes" and today's default.
    pub const FULL: [Buffer; 6] = [
        Buffer::Bytes(4096),
        Buffer::Bytes(8192),
        Buffer::Bytes(16384),
        Buffer::Bytes(32768),
        Buffer::Bytes(65536),
        Buffer::Default,
    ];

    pub fn label(self) -> String {
        match self {
            Buffer::Bytes(b) => format!("{}K", b / 1024),
            Buffer::Default => "default".into(),
        }
    }

    pub fn bytes(self) -> Option<u32> {
        match self {
            Buffer::Bytes(b) => Some(b),
            Buffer::Default => None,
        }
    }
}

impl Serialize for Buffer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label())
    }
}

impl std::str::FromStr for Buffer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "default" {
            return Ok(Buffer::Default);
        }
        let (num, mul) = match s.strip_suffix(['K', 'k']) {
            Some(n) => (n, 1024),
            None => (s, 1),
        };
        let n: u32 = num
            .parse()
            .map_err(|_| format!("bad buffer size {s:?} (e.g. 4K, 65536, default)"))?;
        let b = n
            .checked_mul(mul)
            .filter(|b| (1024..=64 << 20).contains(b))
            .ok_or_else(|| format!("buffer size {s:?} out of range (1K..64M)"))?;
        Ok(Buffer::Bytes(b))
    }
}

/// What a sweep measures.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub configs: Vec<Config>,
    pub buffers: Vec<Buffer>,
    /// Connection lengths in bytes, ascending.
    pub lengths: Vec<u64>,
    /// Trials per point (the paper: ten).
    pub trials: u32,
    /// Trials per point for lengths of at least `long_from` bytes: these
    /// transfers are window- or rate-bound and vary little on an emulated
    /// link, and one 4 MB trial over the T1 with a 4 KB window takes about
    /// 70 s.
    pub long_trials: u32,
    pub long_from: u64,
    /// Approximate 1997 TCP (`--tcp 1997`, this suite's default).
    pub tcp1997: bool,
    /// Drop-tail queue of the remote links (`--queue`, default [`ERA_QUEUE`]);
    /// None (older runs): the `t1` profile's (1000 packets).
    pub router_queue: Option<QueueLimit>,
}

/// The router queue of the era, this suite's default for the remote links
/// (each direction, drop-tail): chosen by the queue sweep of
/// `docs/conn-length.md` (8, 16, 32, 64 packets) as the one whose remote
/// curves fit the paper's text about Figure 2 best (no queue reproduced the
/// decline beyond 500 KB; only 8 packets made MSS 1460 "somewhat better"
/// than 536 at every covered buffer). `--queue 1000p` gives back the `t1`
/// profile's.
pub const ERA_QUEUE: QueueLimit = QueueLimit::Packets(8);

/// 2 Kbytes and 20 Kbytes, the lengths the paper's sentences name.
pub const LEN_2K: u64 = 2 * 1024;
pub const LEN_20K: u64 = 20 * 1024;

impl Plan {
    /// 256 B to 4 MB, doubling, plus 20 KB; all configurations and buffers;
    /// ten trials everywhere (the paper's number).
    pub fn full(tcp1997: bool, router_queue: Option<QueueLimit>) -> Plan {
        let mut lengths: Vec<u64> = (8..=22).map(|e| 1u64 << e).collect();
        lengths.push(LEN_20K);
        lengths.sort_unstable();
        Plan {
            configs: Config::ALL.to_vec(),
            buffers: Buffer::FULL.to_vec(),
            lengths,
            trials: 10,
            long_trials: 10,
            long_from: 256 * 1024,
            tcp1997,
            router_queue,
        }
    }

    /// Under a minute: local and remote, two buffers, the lengths the
    /// claims name and two long ones, three trials.
    pub fn quick(tcp1997: bool, router_queue: Option<QueueLimit>) -> Plan {
        Plan {
            configs: vec![Config::Local, Config::Remote],
            buffers: vec![Buffer::Bytes(4096), Buffer::Default],
            lengths: vec![256, LEN_2K, LEN_20K, 64 * 1024, 128 * 1024],
            trials: 3,
            long_trials: 3,
            long_from: 64 * 1024,
            tcp1997,
            router_queue,
        }
    }

    pub fn trials_for(&self, length: u64) -> u32 {
        if length >= self.long_from {
            self.long_trials
        } else {
            self.trials
        }
    }

    /// A time estimate from the link model: every trial costs its handshake
    /// and request (two RTTs) plus its bytes at the slower of the link rate
    /// and one window per RTT (for a fixed buffer, the receive window is
    /// about the buffer), plus slow start's few extra RTTs.
    pub fn estimate(&self) -> Result<Duration> {
        let mut s = 0.0;
        for &c in &self.configs {
            let lc = c.link_config(self.tcp1997, self.router_queue)?;
            let rtt = lc.rtt.as_secs_f64().max(0.001);
            let rate = match lc.down_rate {
                pagewire_link::Rate::Bps(b) => b as f64 / 8.0,
                _ => 1e9,
            };
            for &b in &self.buffers {
                let cap = match b {
                    // The window is clamped to the label.
                    Buffer::Bytes(w) => rate.min(w as f64 / rtt),
                    Buffer::Default => rate,
                };
                for &l in &self.lengths {
                    let one = 2.0 * rtt + l as f64 / cap + 4.0 * rtt + 0.002;
                    s += one * self.trials_for(l) as f64;
                }
            }
        }
        Ok(Duration::from_secs_f64(s))
    }
}

/// One point of a figure: a configuration, buffer size and length, with
/// every trial's time.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub config: Config,
    pub buffer: Buffer,
    /// The window asked for, bytes (None: kernel default).
    pub buffer_bytes: Option<u32>,
    /// What the kernel reported back for the client's SO_RCVBUF after the
    /// calibrated value was set (Linux doubles it, for its bookkeeping).
    pub client_rcvbuf: u32,
    /// The receive window the client advertised at the end of the last
    /// trial (TCP_INFO `tcpi_rcv_wnd`), bytes: the window the server was
    /// held to. Without window scaling (`--tcp 1997`) Linux advertises
    /// whole segments, so a 4096 label can give at most 2920 with MSS 1460
    /// and 3752 with MSS 536. None on kernels before 6.2.
    pub window_bytes: Option<u32>,
    /// The link's drop-tail queue (each direction).
    pub queue: QueueLimit,
    pub length: u64,
    /// Best trial's throughput, bytes per second (the figure's value).
    pub throughput: f64,
    /// Throughput over all trials (for the claims' intervals).
    #[serde(serialize_with = "ser_estimate")]
    pub throughput_trials: Estimate,
    /// Seconds of every trial, from `connect` to the server's FIN.
    pub trial_s: Vec<f64>,
    pub tcp: &'static str,
    /// How late packets left the emulated link over this point's trials
    /// (see `pagewire_link::lateness`); `flagged` points are left out of
    /// claims.
    pub link_lateness: pagewire_link::LinkLateness,
}

pub struct RunOptions {
    pub progress: bool,
    /// Links run at once. Each (configuration, buffer) pair gets its own
    /// emulated link, so pairs never share a bottleneck; at T1 rates a link
    /// costs little CPU, so three at once do not disturb each other on this
    /// 2-core machine (the forwarders run at real-time priority).
    pub parallel: usize,
}

/// Links at once by default (see `RunOptions::parallel`).
pub const DEFAULT_PARALLEL: usize = 3;

/// Runs the plan: one emulated link per (configuration, buffer), the server
/// in its server namespace, the client in its client namespace. Within a
/// link, trials are interleaved (trial 1 of every length, then trial 2, ...)
/// so a slow spell of this shared machine does not land on one point.
pub fn run(plan: &Plan, opts: &RunOptions) -> Result<Vec<Point>> {
    if plan.lengths.is_empty() || plan.buffers.is_empty() || plan.configs.is_empty() {
        bail!("conn-length: nothing to run");
    }
    // Longest jobs first (remote, smallest buffers), so the pool ends together.
    let jobs: Vec<(Config, Buffer)> = plan
        .configs
        .iter()
        .rev()
        .flat_map(|&c| plan.buffers.iter().map(move |&b| (c, b)))
        .collect();
    let t0 = Instant::now();
    let mut points = crate::pool::run(jobs, opts.parallel, |(config, buffer)| {
        let pts = run_one(plan, config, buffer)?;
        if opts.progress {
            eprintln!(
                "conn-length: {config}, buffer {} done ({:.0} s)",
                buffer.label(),
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(pts)
    })?;
    points.sort_by_key(|p| (p.config, p.buffer, p.length));
    Ok(points)
}

/// What one buffer size's sweep measured: the client's SO_RCVBUF, the
/// window, the seconds per length and trial, and the link lateness per
/// length.
type Measured = (
    u32,
    Option<u32>,
    Vec<Vec<f64>>,
    Vec<pagewire_link::LatenessRecorder>,
);

/// All lengths and trials of one buffer size over one configuration's link.
fn run_one(plan: &Plan, config: Config, buffer: Buffer) -> Result<Vec<Point>> {
    let lc = config.link_config(plan.tcp1997, plan.router_queue)?;
    let queue = lc.queue;
    let mss = lc.mss.unwrap_or(1460);
    let link = Link::start(lc).with_context(|| format!("start the {config} link"))?;
    let server = wire::ServerHandle::start_in(&link, &[buffer])
        .with_context(|| format!("start the {config} server"))?;
    let addr: std::net::SocketAddr = (link.server_addr(), server.ports()[0]).into();
    let lengths = plan.lengths.clone();
    let trials: Vec<u32> = lengths.iter().map(|&l| plan.trials_for(l)).collect();
    let one_way = link.one_way_delay();
    let link_ref = &link;
    let measured = link.run_in_client(move || -> Result<Measured> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut rcvbuf = 0;
        // The client SO_RCVBUF whose window is the label (see
        // `wire::calibrate`).
        let (cal_rcvbuf, mut window) = match buffer.bytes() {
            Some(b) => {
                let (r, w) = rt
                    .block_on(wire::calibrate(addr, b, mss))
                    .with_context(|| format!("{config}, buffer {}: calibrate", buffer.label()))?;
                (Some(r), w)
            }
            None => (None, None),
        };
        let mut out: Vec<Vec<f64>> = vec![Vec::new(); lengths.len()];
        let mut late = vec![pagewire_link::LatenessRecorder::new(); lengths.len()];
        let max_trials = trials.iter().copied().max().unwrap_or(0);
        // Start the lateness count here (not with the server's start
        // nor the calibration).
        link_ref.take_lateness()?;
        'trials: for t in 0..max_trials {
            for (li, &len) in lengths.iter().enumerate() {
                if t >= trials[li] {
                    continue;
                }
                // Cancelled within crate::interrupt::POLL of a Ctrl-C.
                let Some(m) = rt.block_on(crate::interrupt::or_cancel(wire::fetch(
                    addr, buffer, cal_rcvbuf, len,
                ))) else {
                    break 'trials;
                };
                let m =
                    m.with_context(|| format!("{config}, buffer {}, {len} bytes", buffer.label()))?;
                late[li].merge(&link_ref.take_lateness()?);
                rcvbuf = m.client_rcvbuf;
                window = m.window;
                out[li].push(m.elapsed.as_secs_f64());
            }
        }
        Ok((rcvbuf, window, out, late))
    })??;
    server.stop();
    drop(link);
    let (rcvbuf, window, secs, late) = measured;
    Ok(plan
        .lengths
        .iter()
        .zip(secs)
        .zip(late)
        // An interrupted sweep leaves lengths without a trial: not points.
        .filter(|((_, secs), _)| !secs.is_empty())
        .map(|((&length, secs), late)| {
            let tputs: Vec<f64> = secs.iter().map(|s| length as f64 / s).collect();
            Point {
                config,
                buffer,
                buffer_bytes: buffer.bytes(),
                client_rcvbuf: rcvbuf,
                window_bytes: window,
                queue,
                length,
                throughput: tputs.iter().copied().fold(0.0, f64::max),
                throughput_trials: Estimate::of(&tputs),
                trial_s: secs,
                tcp: if plan.tcp1997 { "1997" } else { "today" },
                link_lateness: late.summary(one_way),
            }
        })
        .collect())
}

/// What `pagewire bench --suite conn-length` was asked for.
pub struct SuiteOptions {
    pub quick: bool,
    pub tcp1997: bool,
    /// Drop-tail queue of the remote links (None: the profile's).
    pub router_queue: Option<QueueLimit>,
    /// Override of the trials per point (all lengths).
    pub trials: Option<u32>,
    /// Override of the plan's buffer sizes (ascending, fixed sizes first).
    pub buffers: Option<Vec<Buffer>>,
    /// Override of the plan's lengths (bytes).
    pub lengths: Option<Vec<u64>>,
    /// Override of the plan's configurations.
    pub configs: Option<Vec<Config>>,
    pub out: std::path::PathBuf,
    pub command: Vec<String>,
    pub progress: bool,
    /// Links at once (see `RunOptions::parallel`).
    pub parallel: usize,
}

/// Runs the suite and writes its files; returns the results.
pub fn suite(o: &SuiteOptions) -> Result<report::Results> {
    // The era's router queue unless `--queue` says otherwise; recorded in
    // the plan either way.
    let queue = Some(o.router_queue.unwrap_or(ERA_QUEUE));
    let mut plan = if o.quick {
        Plan::quick(o.tcp1997, queue)
    } else {
        Plan::full(o.tcp1997, queue)
    };
    if let Some(t) = o.trials {
        if t == 0 {
            bail!("--reps must be at least 1");
        }
        plan.trials = t;
        plan.long_trials = t;
    }
    if let Some(b) = &o.buffers {
        if b.is_empty() {
            bail!("--buffers: nothing to run");
        }
        plan.buffers = b.clone();
    }
    if let Some(l) = &o.lengths {
        let mut l = l.clone();
        l.sort_unstable();
        l.dedup();
        if l.is_empty() || l[0] == 0 || l[l.len() - 1] > wire::MAX_LENGTH {
            bail!("--lengths: 1 B to {} B, at least one", wire::MAX_LENGTH);
        }
        plan.lengths = l;
    }
    if let Some(c) = &o.configs {
        let mut c = c.clone();
        c.sort();
        c.dedup();
        if c.is_empty() {
            bail!("--configs: nothing to run");
        }
        plan.configs = c;
    }
    std::fs::create_dir_all(&o.out).with_context(|| format!("create {}", o.out.display()))?;
    eprintln!(
        "conn-length: {} configurations x {} buffers x {} lengths, {} trials per point \
         ({} from {} B); estimated {:.0} s with {} links at once",
        plan.configs.len(),
        plan.buffers.len(),
        plan.lengths.len(),
        plan.trials,
        plan.long_trials,
        plan.long_from,
        plan.estimate()?.as_secs_f64() / o.parallel.max(1) as f64,
        o.parallel
    );
    let mut provenance = crate::results::Provenance::begin("conn-length", o.command.clone());
    let t0 = Instant::now();
    let points = run(
        &plan,
        &RunOptions {
            progress: o.progress,
            parallel: o.parallel,
        },
    )?;
    crate::results::finish(&mut provenance);
    provenance.server = "conn-length server (in-process, tokio)".into();
    provenance.repetitions = [
        ("trials".to_string(), plan.trials),
        (
            format!("trials from {} B", plan.long_from),
            plan.long_trials,
        ),
    ]
    .into();
    provenance.link_configs = plan
        .configs
        .iter()
        .map(|c| -> Result<(String, serde_json::Value)> {
            Ok((
                c.name().to_string(),
                serde_json::to_value(c.link_config(plan.tcp1997, plan.router_queue)?)?,
            ))
        })
        .collect::<Result<_>>()?;
    provenance.note =
        "Client and server of Padmanabhan & Mogul section 3.2; best of the trials per point; \
               throughput = length / (connect to the server's FIN)."
            .into();
    let results = report::Results::new(provenance, plan, t0.elapsed().as_secs_f64(), points);
    crate::results::Report::write(&results, &o.out)?;
    Ok(results)
}

/// The connection-length suite.
pub struct ConnLength;

impl crate::suite::Suite for ConnLength {
    const KIND: crate::claims::Suite = crate::claims::Suite::ConnLength;
    const RUNS: &'static str = "Padmanabhan & Mogul: connection length vs throughput, Figures 2-3";
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
