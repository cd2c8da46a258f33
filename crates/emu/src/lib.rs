//! Linux glue for the link emulator: two network namespaces (client and
//! server), a TUN device in each, and one forwarder thread moving every IP
//! packet between them through the `pagewire-link` model — Mahimahi's
//! architecture (`ravinet/mahimahi`, `src/packet`), with the kernel's real
//! TCP on both sides (slow start, delayed ACKs, Nagle).
//!
//! ```no_run
//! use pagewire_emu::{Link, LinkConfig};
//! let link = Link::start(LinkConfig::profile("wan")?)?;
//! // A listener created inside the server namespace stays there.
//! let addr = link.server_addr();
//! let listener = link.run_in_server(move || std::net::TcpListener::bind((addr, 0)))??;
//! link.begin_run(Some("run.pcap".as_ref()))?;
//! // ... client work via link.run_in_client(...) or link.spawn_in_client(cmd) ...
//! let counters = link.end_run()?;
//! println!("{} packets", counters.packets_total);
//! # Ok::<(), anyhow::Error>(())
//! ```

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]

pub mod cli;
mod forwarder;
pub mod gateway;
pub mod ns;
pub mod privilege;
pub mod shell;
mod stale;

use std::net::Ipv4Addr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

pub use pagewire_link::{LinkConfig, LinkCounters, QueueLimit, Rate};

use forwarder::{Ctl, Forwarder, Port};

use ns::{Netns, Spawner};
pub use stale::owner_token;

/// Client address (TUN in the client namespace). Both namespaces are
/// private to one link, so every link can use the same two addresses from
/// 198.18.0.0/15 (RFC 2544's benchmarking range) without colliding.
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// Server address (TUN in the server namespace).
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const PREFIX: &str = "198.18.0.0/24";
const PREFIX_LEN: u8 = 24;
/// TUN device name inside each namespace.
pub const TUN_NAME: &str = "pw0";

/// Which way packets reach the forwarder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datapath {
    /// A TUN device in each namespace (needs /dev/net/tun to be openable).
    Tun,
    /// A veth pair per side whose far ends sit in a third, empty namespace,
    /// read and written with `AF_PACKET` sockets: works where /dev/net/tun
    /// cannot be opened (a normal user in a user namespace).
    Packet,
}

/// The environment variable that picks the datapath: `tun`, `packet` or
/// `auto` (the default: TUN where /dev/net/tun opens, else packet sockets).
pub const ENV_DATAPATH: &str = "PAGEWIRE_DATAPATH";

impl Datapath {
    pub fn name(self) -> &'static str {
        match self {
            Datapath::Tun => "tun",
            Datapath::Packet => "packet",
        }
    }

    /// `tun`, `packet` or `auto` (None).
    pub fn parse(s: &str) -> Result<Option<Datapath>> {
        match s {
            "tun" => Ok(Some(Datapath::Tun)),
            "packet" => Ok(Some(Datapath::Packet)),
            "auto" | "" => Ok(None),
            other => Err(anyhow!("datapath {other:?}: expected tun, packet or auto")),
        }
    }

    /// The datapath `PAGEWIRE_DATAPATH` asks for (None: auto).
    pub fn from_env() -> Result<Option<Datapath>> {
        match std::env::var(ENV_DATAPATH) {
            Ok(v) => Self::parse(&v).context(ENV_DATAPATH),
            Err(_) => Ok(None),
        }
    }

    /// `want`, or for auto: TUN if /dev/net/tun can be opened, else packet.
    pub fn resolve(want: Option<Datapath>) -> Datapath {
        want.unwrap_or(if ns::tun_openable() {
            Datapath::Tun
        } else {
            Datapath::Packet
        })
    }
}

/// How a link is built beyond its model (see [`Link::start_with`]).
#[derive(Clone, Debug, Default)]
pub struct StartOptions {
    /// None: `PAGEWIRE_DATAPATH`, else auto.
    pub datapath: Option<Datapath>,
    /// Route everything of the client namespace over the link (not only
    /// 198.18.0.0/24): what `pagewire shell` needs.
    pub client_default_route: bool,
}

/// MAC addresses of the veth ends inside the client and server namespaces
/// (packet path; each namespace is its own world, so fixed ones do).
const CLIENT_MAC: [u8; 6] = [0x02, 0x00, 0xc6, 0x12, 0x00, 0x01];
const SERVER_MAC: [u8; 6] = [0x02, 0x00, 0xc6, 0x12, 0x00, 0x02];

fn mac_string(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Environment variables set for every command started in a namespace.
pub const ENV_SERVER_ADDR: &str = "PAGEWIRE_SERVER_ADDR";
pub const ENV_CLIENT_ADDR: &str = "PAGEWIRE_CLIENT_ADDR";

/// Longest `end_run` waits for the link to go quiet.
pub const END_RUN_MAX_WAIT: Duration = Duration::from_secs(10);

struct Side {
    ns: Netns,
    spawner: Spawner,
}

/// A running emulated link. Dropping it stops the forwarder, kills every
/// process inside the two namespaces and releases them (the kernel then
/// frees the namespaces and TUN devices).
pub struct Link {
    cfg: LinkConfig,
    datapath: Datapath,
    /// The wire namespace (packet path), alive as long as the link.
    _wire: Option<Netns>,
    client: Side,
    server: Side,
    ctl: Mutex<mpsc::Sender<Ctl>>,
    wake: OwnedFd,
    forwarder: Option<JoinHandle<()>>,
    /// Serializes begin_run / end_run callers (one run at a time).
    run_lock: Mutex<()>,
    realtime: std::sync::Arc<std::sync::atomic::AtomicBool>,
    epoch_unix: Duration,
    run_pcap: Mutex<Option<(std::path::PathBuf, serde_json::Value)>>,
}

/// The sysctls each namespace gets, and why (see docs/link.md).
fn base_sysctls() -> Vec<(&'static str, &'static str)> {
    vec![
        // No IPv6: no router/neighbour solicitations or MLD reports cross
        // the link, so the counts are only the experiment's packets.
        ("net.ipv6.conf.all.disable_ipv6", "1"),
        ("net.ipv6.conf.default.disable_ipv6", "1"),
        // Each connection starts from scratch: without this the kernel
        // caches ssthresh/RTT per destination and later runs skip slow start.
        ("net.ipv4.tcp_no_metrics_save", "1"),
    ]
}

/// Approximations of 1997 TCP that a namespace can set (`--tcp 1997`).
fn tcp1997_sysctls() -> Vec<(&'static str, &'static str)> {
    vec![
        // RFC 2018 SACK (1996) was not in the papers' stacks.
        ("net.ipv4.tcp_sack", "0"),
        ("net.ipv4.tcp_dsack", "0"),
        // RFC 1323 timestamps and window scaling: 40-byte headers as in
        // the papers' overhead figures, windows <= 64 KB.
        ("net.ipv4.tcp_timestamps", "0"),
        ("net.ipv4.tcp_window_scaling", "0"),
        // No ECN (RFC 3168 is from 2001).
        ("net.ipv4.tcp_ecn", "0"),
        // Reno congestion control (RFC 2001, 1997) instead of CUBIC.
        ("net.ipv4.tcp_congestion_control", "reno"),
        // No modern loss recovery (RACK, F-RTO, early retransmit, TLP).
        ("net.ipv4.tcp_recovery", "0"),
        ("net.ipv4.tcp_frto", "0"),
        ("net.ipv4.tcp_early_retrans", "0"),
        // No autocorking: small writes go out as Nagle alone decides.
        ("net.ipv4.tcp_autocorking", "0"),
        // Restart slow start after idle (RFC 2581 §4.1).
        ("net.ipv4.tcp_slow_start_after_idle", "1"),
    ]
}

struct SideSpec<'a> {
    name: &'static str,
    addr: Ipv4Addr,
    mac: [u8; 6],
    /// Name of the veth's far end in the wire namespace (packet path).
    wire_end: &'static str,
    default_route: bool,
    wire: Option<&'a Netns>,
}

fn setup_side(cfg: &LinkConfig, spec: SideSpec<'_>) -> Result<(Side, Port)> {
    let ns = Netns::create()?;
    let spawner = Spawner::new(&ns, spec.name)?;
    let mtu = cfg.mtu;
    let mss = cfg.mss;
    let tcp1997 = cfg.tcp1997;
    let addr = spec.addr;
    let default_route = spec.default_route;
    // The wire namespace as a path `ip` can open (packet path).
    let wire_path = spec
        .wire
        .map(|w| format!("/proc/{}/fd/{}", std::process::id(), w.raw_fd()));
    let wire_end = spec.wire_end;
    let mac = mac_string(spec.mac);
    let tun = spawner.run(move || -> Result<Option<OwnedFd>> {
        for (k, v) in base_sysctls() {
            ns::write_sysctl(k, v)?;
        }
        if tcp1997 {
            for (k, v) in tcp1997_sysctls() {
                // Some are absent on older kernels: the rest still apply.
                if let Err(e) = ns::write_sysctl(k, v) {
                    eprintln!("pagewire-emu: --tcp 1997: {e:#} (skipped)");
                }
            }
        }
        let (tun, dev_setup) = match &wire_path {
            None => (Some(ns::open_tun(TUN_NAME)?), String::new()),
            Some(wire) => {
                ns::ip_batch(&format!(
                    "link add {TUN_NAME} mtu {mtu} type veth peer name {wire_end} mtu {mtu} netns {wire}\n"
                ))?;
                ns::disable_offloads(TUN_NAME)?;
                // No ARP: the kernel sends every packet to its own MAC and
                // the forwarder delivers to this one.
                (None, format!("link set {TUN_NAME} address {mac} arp off\n"))
            }
        };
        let mut route = format!("route replace {PREFIX} dev {TUN_NAME} src {addr}");
        if let Some(mss) = mss {
            route += &format!(" advmss {mss}");
        }
        if tcp1997 {
            // Initial window: RFC 2414 (1998) allowed up to 4; 1997 stacks
            // started at 1-2. Minimum RTO 1 s (RFC 1122's conservative
            // timers, BSD's 500 ms ticks; Linux's 200 ms fires spuriously
            // on a 28.8k link where one 1500-byte packet takes 417 ms).
            route += " initcwnd 2 rto_min 1000ms";
        }
        let default = if default_route {
            route.replace(PREFIX, "default")
        } else {
            String::new()
        };
        ns::ip_batch(&format!(
            "link set lo up\n\
             {dev_setup}\
             link set {TUN_NAME} mtu {mtu} up\n\
             addr add {addr}/{PREFIX_LEN} dev {TUN_NAME}\n\
             {route}\n\
             {default}\n"
        ))?;
        Ok(tun)
    })??;
    let port = match (tun, spec.wire) {
        (Some(tun), _) => Port::tun(tun),
        (None, Some(wire)) => {
            let spawner = Spawner::new(wire, "wire")?;
            let mtu = cfg.mtu;
            let (fd, ifindex) = spawner.run(move || -> Result<(OwnedFd, libc::c_int)> {
                ns::disable_offloads(wire_end)?;
                ns::ip_batch(&format!("link set {wire_end} mtu {mtu} arp off up\n"))?;
                ns::open_packet_socket(wire_end)
            })??;
            Port::packet(fd, ifindex, spec.mac)
        }
        (None, None) => unreachable!("no TUN without a wire namespace"),
    };
    Ok((Side { ns, spawner }, port))
}

/// The namespace holding the far ends of the veth pairs (packet path): no
/// addresses, no routes, IPv6 off, so its kernel does nothing with what
/// crosses it.
fn setup_wire() -> Result<Netns> {
    let ns = Netns::create()?;
    let spawner = Spawner::new(&ns, "wire")?;
    spawner.run(|| -> Result<()> {
        for (k, v) in base_sysctls() {
            ns::write_sysctl(k, v)?;
        }
        ns::ip_batch("link set lo up\n")
    })??;
    Ok(ns)
}

impl Link {
    /// Creates the namespaces, TUN devices, addresses and routes, and starts
    /// the forwarder. Also removes leftovers of crashed earlier runs.
    /// The datapath comes from `PAGEWIRE_DATAPATH` (default auto).
    pub fn start(cfg: LinkConfig) -> Result<Link> {
        Self::start_with(cfg, StartOptions::default())
    }

    /// `start` with a chosen datapath and client routing.
    pub fn start_with(cfg: LinkConfig, opts: StartOptions) -> Result<Link> {
        cfg.validate()?;
        let want = match opts.datapath {
            Some(d) => Some(d),
            None => Datapath::from_env()?,
        };
        let datapath = Datapath::resolve(want);
        privilege::check_for(datapath)?;
        stale::reap();
        let wire = match datapath {
            Datapath::Tun => None,
            Datapath::Packet => Some(setup_wire().context("set up the wire namespace")?),
        };
        let (client, client_tun) = setup_side(
            &cfg,
            SideSpec {
                name: "client",
                addr: CLIENT_ADDR,
                mac: CLIENT_MAC,
                wire_end: "pwc",
                default_route: opts.client_default_route,
                wire: wire.as_ref(),
            },
        )
        .context("set up the client namespace")?;
        let (server, server_tun) = setup_side(
            &cfg,
            SideSpec {
                name: "server",
                addr: SERVER_ADDR,
                mac: SERVER_MAC,
                wire_end: "pws",
                default_route: false,
                wire: wire.as_ref(),
            },
        )
        .context("set up the server namespace")?;
        // SAFETY: eventfd returns a new fd we own.
        let wake = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if wake < 0 {
            return Err(std::io::Error::last_os_error()).context("eventfd");
        }
        // SAFETY: just created, owned by nobody else.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let (tx, rx) = mpsc::channel();
        let fwd = Forwarder::new(&cfg, client_tun, server_tun, wake.try_clone()?, rx);
        let epoch_unix = fwd.epoch_unix();
        let realtime = fwd.realtime_flag();
        let forwarder = std::thread::Builder::new()
            .name("pw-forwarder".into())
            .spawn(move || fwd.run())?;
        Ok(Link {
            cfg,
            datapath,
            _wire: wire,
            client,
            server,
            ctl: Mutex::new(tx),
            wake,
            forwarder: Some(forwarder),
            run_lock: Mutex::new(()),
            realtime,
            epoch_unix,
            run_pcap: Mutex::new(None),
        })
    }

    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// How packets reach the forwarder on this link.
    pub fn datapath(&self) -> Datapath {
        self.datapath
    }

    pub fn server_addr(&self) -> Ipv4Addr {
        SERVER_ADDR
    }

    pub fn client_addr(&self) -> Ipv4Addr {
        CLIENT_ADDR
    }

    /// Wall-clock time of link time zero (pcap timestamps are relative to it).
    pub fn epoch_unix(&self) -> Duration {
        self.epoch_unix
    }

    /// Inodes of the (client, server) namespaces, as in /proc/<pid>/ns/net.
    /// Whether the forwarder thread runs at real-time priority (it tries;
    /// it needs CAP_SYS_NICE and an RT budget). Known once it has started.
    pub fn realtime_forwarder(&self) -> bool {
        self.realtime.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn netns_inodes(&self) -> (u64, u64) {
        (self.client.ns.inode(), self.server.ns.inode())
    }

    /// Waits until some TCP socket listens in the server namespace (a
    /// server command has come up), at most `timeout`. Returns whether one
    /// did.
    pub fn wait_server_listening(&self, timeout: Duration) -> Result<bool> {
        let until = std::time::Instant::now() + timeout;
        // Bounded by `timeout`; 2 ms steps.
        loop {
            if self.server.spawner.run(cli::listening_sockets)? > 0 {
                return Ok(true);
            }
            if std::time::Instant::now() >= until {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Sends SIGKILL to every process in the client namespace (e.g. what a
    /// shell left running in the background). Returns how many.
    pub fn kill_client_processes(&self) -> usize {
        ns::kill_all_in_netns(self.client.ns.inode())
    }

    fn prepare(&self, mut cmd: Command) -> Command {
        cmd.env(ENV_SERVER_ADDR, SERVER_ADDR.to_string())
            .env(ENV_CLIENT_ADDR, CLIENT_ADDR.to_string())
            .env(stale::OWNER_ENV, stale::owner_token());
        cmd
    }

    /// Starts `cmd` in the server namespace (own process group; killed when
    /// the link is dropped), with PAGEWIRE_SERVER_ADDR / _CLIENT_ADDR set.
    pub fn spawn_in_server(&self, cmd: Command) -> Result<Child> {
        self.server.spawner.spawn(self.prepare(cmd))
    }

    /// Starts `cmd` in the client namespace (see `spawn_in_server`).
    pub fn spawn_in_client(&self, cmd: Command) -> Result<Child> {
        self.client.spawner.spawn(self.prepare(cmd))
    }

    fn run_in<T: Send, F: FnOnce() -> T + Send>(ns: &Netns, f: F) -> Result<T> {
        std::thread::scope(|s| {
            let h = s.spawn(|| -> Result<T> {
                ns.enter().context("setns into the link namespace")?;
                Ok(f())
            });
            match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// Runs `f` on a thread inside the client namespace and returns its
    /// result (a panic in `f` is resumed in the caller). Sockets created
    /// there stay in the client namespace wherever they are used later.
    pub fn run_in_client<T: Send, F: FnOnce() -> T + Send>(&self, f: F) -> Result<T> {
        Self::run_in(&self.client.ns, f)
    }

    /// Runs `f` on a thread inside the server namespace (see `run_in_client`).
    pub fn run_in_server<T: Send, F: FnOnce() -> T + Send>(&self, f: F) -> Result<T> {
        Self::run_in(&self.server.ns, f)
    }

    fn spawn_thread_in<T: Send + 'static>(
        ns: &Netns,
        name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<Result<T>>> {
        let fd = ns::dup_fd(ns)?;
        Ok(std::thread::Builder::new()
            .name(name.into())
            .spawn(move || -> Result<T> {
                ns::enter_fd(&fd).context("setns into the link namespace")?;
                drop(fd);
                Ok(f())
            })?)
    }

    /// Starts a detached thread inside the server namespace (e.g. an
    /// in-process server with its own runtime).
    pub fn spawn_thread_in_server<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<Result<T>>> {
        Self::spawn_thread_in(&self.server.ns, "pw-in-server", f)
    }

    /// Starts a detached thread inside the client namespace.
    pub fn spawn_thread_in_client<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<JoinHandle<Result<T>>> {
        Self::spawn_thread_in(&self.client.ns, "pw-in-client", f)
    }

    fn send(&self, msg: Ctl) -> Result<()> {
        self.ctl
            .lock()
            .map_err(|_| anyhow!("link control lock poisoned"))?
            .send(msg)
            .map_err(|_| anyhow!("the forwarder has stopped"))?;
        // SAFETY: 8-byte write to our eventfd.
        let one = 1u64;
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&self.wake),
                (&one as *const u64).cast(),
                8,
            )
        };
        Ok(())
    }

    /// Starts a measurement run: counters reset; if `pcap` is given,
    /// everything leaving the link is captured there (with a sidecar
    /// `<pcap>.json` saying what made it).
    pub fn begin_run(&self, pcap: Option<&Path>) -> Result<()> {
        self.begin_run_with(pcap, serde_json::Value::Null)
    }

    /// `begin_run` with extra metadata (e.g. the bench's strategy and
    /// repetition) for the pcap sidecar.
    pub fn begin_run_with(&self, pcap: Option<&Path>, extra: serde_json::Value) -> Result<()> {
        let _run = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let sink = match pcap {
            Some(p) => {
                let sink = pagewire_link::PcapSink::create(p, self.epoch_unix)
                    .with_context(|| format!("create {}", p.display()))?;
                pagewire_link::pcap::write_sidecar(p, &self.sidecar(extra.clone(), None))?;
                Some(sink)
            }
            None => None,
        };
        *self.run_pcap.lock().map_err(|_| anyhow!("poisoned"))? =
            pcap.map(|p| (p.to_path_buf(), extra));
        let (tx, rx) = mpsc::channel();
        self.send(Ctl::BeginRun {
            pcap: sink,
            reply: tx,
        })?;
        rx.recv().map_err(|_| anyhow!("the forwarder has stopped"))
    }

    fn sidecar(
        &self,
        extra: serde_json::Value,
        counters: Option<&LinkCounters>,
    ) -> serde_json::Value {
        serde_json::json!({
            "made_by": format!("pagewire-emu {}", env!("CARGO_PKG_VERSION")),
            "command": command_line(),
            "format": "pcap, LINKTYPE_RAW (101): raw IPv4 packets, as they left the emulated link",
            "timestamps": "emulated: link epoch (wall clock at link start) + the link-model time \
                           at which the packet left the link (after queueing, serialization, delay)",
            "client_addr": CLIENT_ADDR.to_string(),
            "server_addr": SERVER_ADDR.to_string(),
            "link_epoch_unix_s": self.epoch_unix.as_secs_f64(),
            "config": self.cfg,
            "seed": self.cfg.seed,
            "datapath": self.datapath.name(),
            "extra": extra,
            "counters": counters,
        })
    }

    /// Ends the run once the link has been quiet for one RTT + 250 ms (so
    /// delayed ACKs and FIN exchanges in flight are counted) or after
    /// `END_RUN_MAX_WAIT`, and returns its counters.
    pub fn end_run(&self) -> Result<LinkCounters> {
        self.end_run_settled(self.cfg.rtt + Duration::from_millis(250))
    }

    /// Ends the run after the link has been quiet for `quiet`.
    pub fn end_run_settled(&self, quiet: Duration) -> Result<LinkCounters> {
        self.end(Some(quiet))
    }

    /// Ends the run immediately.
    pub fn end_run_now(&self) -> Result<LinkCounters> {
        self.end(None)
    }

    /// Sets apart the TCP connections with `port` at either end as competing
    /// (cross) traffic, or none: their packets cross the link like any
    /// other (same queue, discipline, loss and delay) but are counted only
    /// in `DirectionCounters::cross_traffic`, not classified, not written to
    /// the pcap, and do not hold off the quiet period that ends a run (stop
    /// them before `end_run`: the queue must still drain).
    pub fn set_cross_traffic_port(&self, port: Option<u16>) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.send(Ctl::CrossPort { port, reply: tx })?;
        rx.recv().map_err(|_| anyhow!("the forwarder has stopped"))
    }

    /// How late packets left the link against their scheduled departure
    /// since the last call (or the link's start), whatever runs began or
    /// ended meanwhile: for suites whose record covers several fetches
    /// (merge the recorders) or that do not use `begin_run`/`end_run`.
    /// `end_run` puts the run's own summary in `LinkCounters::link_lateness`.
    pub fn take_lateness(&self) -> Result<pagewire_link::LatenessRecorder> {
        let (tx, rx) = mpsc::channel();
        self.send(Ctl::TakeLateness { reply: tx })?;
        rx.recv().map_err(|_| anyhow!("the forwarder has stopped"))
    }

    /// Keeps the forwarder thread from running for `pause` (it answers
    /// first, then sleeps), as a busy machine's scheduler can: for tests
    /// of what the link does with packets that wait to be read.
    #[doc(hidden)]
    pub fn stall_forwarder(&self, pause: Duration) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.send(Ctl::Stall { pause, reply: tx })?;
        rx.recv().map_err(|_| anyhow!("the forwarder has stopped"))
    }

    /// The one-way delay lateness is judged against (see
    /// `pagewire_link::lateness`).
    pub fn one_way_delay(&self) -> Duration {
        self.cfg.one_way_delay()
    }

    fn end(&self, quiet: Option<Duration>) -> Result<LinkCounters> {
        let _run = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = mpsc::channel();
        self.send(Ctl::EndRun {
            quiet,
            max_wait: END_RUN_MAX_WAIT,
            reply: tx,
        })?;
        let counters = rx
            .recv()
            .map_err(|_| anyhow!("the forwarder has stopped"))?
            .context("finish the pcap")?;
        if let Some((p, extra)) = self
            .run_pcap
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .take()
        {
            pagewire_link::pcap::write_sidecar(&p, &self.sidecar(extra, Some(&counters)))?;
        }
        Ok(counters)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = self.send(Ctl::Stop);
        if let Some(f) = self.forwarder.take() {
            let _ = f.join();
        }
        // Everything inside the namespaces, including grandchildren that
        // left their process group.
        // Until none is left (a SIGKILLed process stays in the namespace
        // until the scheduler runs its exit, later on a busy machine), at
        // most 200 x 5 ms.
        for _ in 0..200 {
            let n = ns::kill_all_in_netns(self.client.ns.inode())
                + ns::kill_all_in_netns(self.server.ns.inode());
            if n == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // The Side fields drop next: spawner threads exit (PDEATHSIG for
        // any child left), namespace fds close, the kernel frees the rest.
    }
}

/// This process's command line as recorded in output files: the program by
/// its file name only, so that no file records a path of the machine that
/// made it.
pub fn command_line() -> Vec<String> {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                std::path::Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            } else {
                a
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_can_be_shared_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Link>();
    }
}
