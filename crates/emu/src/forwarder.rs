//! The packet-moving loop: one thread reads IP packets from the two TUN
//! devices, runs them through the link model (one `Pipe` per direction) and
//! writes them to the other TUN device when they are due. It is the
//! measuring point: every packet is classified when it enters and counted
//! (and captured) when it leaves.
//!
//! Sleeping: `ppoll` with a nanosecond timeout to the next deadline, with the
//! thread's timer slack set to 1 ns; the last stretch before a deadline
//! (< SPIN_BELOW) is spun, because a sleep can overshoot by tens of
//! microseconds.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use pagewire_link::{
    Classified, Classifier, Direction, LatenessRecorder, LinkConfig, LinkCounters, Meter, PcapSink,
    Pipe, Verdict,
};

/// Deadlines closer than this are waited for by spinning (see module doc).
const SPIN_BELOW: Duration = Duration::from_micros(40);

/// Packets read from one TUN per wake-up before due packets are delivered
/// again: keeps delivery timely under a flood (bound on one batch).
const READ_BATCH: usize = 64;

/// Largest IP packet (the TUN MTU is at most 65535).
const READ_BUF_BYTES: usize = 65_536;

/// Longest a packet is entered into the link before its read time (a wall
/// clock step larger than this is not a wait).
const MAX_BACKDATE: Duration = Duration::from_secs(1);

/// One side's end of the link: a TUN device, or a packet socket on the
/// far end of a veth pair (with the address packets are sent to).
pub struct Port {
    pub fd: OwnedFd,
    /// For a packet socket: interface and destination MAC to send to.
    pub dest: Option<libc::sockaddr_ll>,
}

impl Port {
    pub fn tun(fd: OwnedFd) -> Self {
        Self { fd, dest: None }
    }

    /// A packet socket bound to interface `ifindex`, sending IPv4 packets
    /// to `mac` (the address of the veth end inside the side's namespace).
    pub fn packet(fd: OwnedFd, ifindex: libc::c_int, mac: [u8; 6]) -> Self {
        // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_IP as u16).to_be();
        sll.sll_ifindex = ifindex;
        sll.sll_halen = 6;
        sll.sll_addr[..6].copy_from_slice(&mac);
        Self {
            fd,
            dest: Some(sll),
        }
    }

    /// Reads one IP packet from the side into `buf`: its length (<= 0:
    /// nothing, or an error) and, on a packet socket, the wall-clock time
    /// the kernel received it (SCM_TIMESTAMPNS).
    fn recv(&self, buf: &mut [u8]) -> (isize, Option<Duration>) {
        if self.dest.is_none() {
            // SAFETY: reading into a buffer we own, length bounded by it.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            return (n, None);
        }
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for one cmsg with a timespec (u64-aligned).
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: msg points at iov, buf and control, all alive across the call.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, 0) };
        if n <= 0 {
            return (n, None);
        }
        let mut stamp = None;
        // SAFETY: walking the control messages the kernel wrote into
        // `control`, with the libc macros, within msg_controllen.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        (n, stamp)
    }

    /// Hands one IP packet to the side (TUN write, or sendto on the veth).
    fn send(&self, data: &[u8]) -> isize {
        match &self.dest {
            // SAFETY: writing a buffer we own to our TUN fd.
            None => unsafe { libc::write(self.fd.as_raw_fd(), data.as_ptr().cast(), data.len()) },
            // SAFETY: sendto with a buffer and address that live across the call.
            Some(sll) => unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    data.as_ptr().cast(),
                    data.len(),
                    0,
                    (sll as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            },
        }
    }
}

pub struct Packet {
    data: Vec<u8>,
    /// `None` for a packet of the cross traffic (not classified, counted
    /// apart, not captured).
    class: Option<Classified>,
    /// Octets on the line (compressed with `--link-compress`).
    line: usize,
}

pub enum Ctl {
    BeginRun {
        pcap: Option<PcapSink>,
        reply: mpsc::Sender<()>,
    },
    EndRun {
        /// Wait until no packet has entered for this long and the link is
        /// empty (None: end now).
        quiet: Option<Duration>,
        /// Give up waiting for quiet after this long.
        max_wait: Duration,
        reply: mpsc::Sender<io::Result<LinkCounters>>,
    },
    /// The lateness recorded since the last `TakeLateness` (or the start),
    /// independent of runs; the forwarder starts a new recorder.
    TakeLateness {
        reply: mpsc::Sender<LatenessRecorder>,
    },
    /// Sets apart the TCP connections with this port at either end (the
    /// competing traffic of `bench --bulk`), or none.
    CrossPort {
        port: Option<u16>,
        reply: mpsc::Sender<()>,
    },
    /// Tests: the thread replies, then does nothing for this long, as a
    /// forwarder the scheduler keeps off the CPU would.
    Stall {
        pause: Duration,
        reply: mpsc::Sender<()>,
    },
    Stop,
}

struct PendingEnd {
    quiet: Duration,
    give_up_at: Duration,
    reply: mpsc::Sender<io::Result<LinkCounters>>,
}

pub struct Forwarder {
    /// [client side, server side].
    tun: [Port; 2],
    wake: OwnedFd,
    ctl: mpsc::Receiver<Ctl>,
    /// [Up (client -> server), Down].
    pipes: [Pipe<Packet>; 2],
    classifier: Classifier,
    meter: Meter,
    pcap: Option<PcapSink>,
    epoch: Instant,
    epoch_unix: Duration,
    last_ingress: Duration,
    pending_end: Option<PendingEnd>,
    write_errors: u64,
    /// Set once the thread runs: whether it got real-time priority.
    realtime: Arc<AtomicBool>,
    /// Scheduled vs actual departure of every packet of the current run
    /// (reset at `BeginRun`, summarised into the run's counters).
    run_lateness: LatenessRecorder,
    /// The same since the last `TakeLateness`.
    taken_lateness: LatenessRecorder,
    /// The link's one-way delay, against which lateness is judged.
    one_way: Duration,
    /// Each pipe's AQM drops already counted in the meter.
    aqm_drops_seen: [u64; 2],
    /// TCP port of the cross traffic (`Ctl::CrossPort`).
    cross_port: Option<u16>,
    /// The latest time handed to the pipes (they must not go backwards).
    pipe_clock: Duration,
    /// How long packets waited in the packet sockets before the forwarder
    /// read them (kernel receive time to read), since the start.
    ingress_wait: LatenessRecorder,
    /// PAGEWIRE_EMU_TRACE: one line per packet on stderr.
    trace: bool,
    /// PAGEWIRE_EMU_NO_BACKDATE: enter packets at their read time.
    no_backdate: bool,
}

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
}

impl Forwarder {
    pub fn new(
        cfg: &LinkConfig,
        client_tun: Port,
        server_tun: Port,
        wake: OwnedFd,
        ctl: mpsc::Receiver<Ctl>,
    ) -> Self {
        let epoch = Instant::now();
        let epoch_unix = now_unix();
        Self {
            tun: [client_tun, server_tun],
            wake,
            ctl,
            // Different streams per direction from one seed.
            pipes: [
                Pipe::new(cfg.up_pipe(), cfg.seed.wrapping_mul(2)),
                Pipe::new(cfg.down_pipe(), cfg.seed.wrapping_mul(2).wrapping_add(1)),
            ],
            classifier: Classifier::new(),
            meter: Meter::new(Duration::ZERO, epoch_unix.as_secs_f64()),
            pcap: None,
            epoch,
            epoch_unix,
            last_ingress: Duration::ZERO,
            pending_end: None,
            write_errors: 0,
            realtime: Arc::new(AtomicBool::new(false)),
            run_lateness: LatenessRecorder::new(),
            taken_lateness: LatenessRecorder::new(),
            one_way: cfg.one_way_delay(),
            aqm_drops_seen: [0; 2],
            cross_port: None,
            pipe_clock: Duration::ZERO,
            ingress_wait: LatenessRecorder::new(),
            trace: std::env::var_os("PAGEWIRE_EMU_TRACE").is_some(),
            no_backdate: std::env::var_os("PAGEWIRE_EMU_NO_BACKDATE").is_some(),
        }
    }

    /// Flag the thread sets if it got real-time priority.
    pub fn realtime_flag(&self) -> Arc<AtomicBool> {
        self.realtime.clone()
    }

    pub fn epoch_unix(&self) -> Duration {
        self.epoch_unix
    }

    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Runs until `Ctl::Stop` or the control channel closes.
    pub fn run(mut self) {
        // SAFETY: prctl on the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
        let rt = std::env::var_os("PAGEWIRE_EMU_NO_RT").is_none() && set_realtime_priority();
        self.realtime.store(rt, Ordering::SeqCst);
        if !rt && std::env::var_os("PAGEWIRE_EMU_NO_SLICE").is_none() {
            set_short_slice();
        }
        let mut buf = vec![0u8; READ_BUF_BYTES];
        loop {
            let now = self.now();
            self.deliver(now);
            if !self.handle_ctl(now) {
                break;
            }
            self.check_end(now);

            let deadline = [
                self.pipes[0].next_deadline(),
                self.pipes[1].next_deadline(),
                // Wake for the end of the quiet period only while it lies
                // ahead (once it has passed, the pipes' own deadlines wake
                // us; a past deadline here would spin).
                self.pending_end.as_ref().and_then(|p| {
                    let at = (self.last_ingress + p.quiet).min(p.give_up_at);
                    (at > now).then_some(at)
                }),
            ]
            .into_iter()
            .flatten()
            .min();
            let timeout = deadline.map(|d| d.saturating_sub(self.now()));
            let spin = timeout.is_some_and(|t| t < SPIN_BELOW);
            let ready = match poll3(
                &self.tun,
                &self.wake,
                if spin { Some(Duration::ZERO) } else { timeout },
            ) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("pagewire-emu: forwarder poll failed: {e}");
                    break;
                }
            };
            if ready[2] {
                let mut v = 0u64;
                // SAFETY: reading 8 bytes into a u64 from our eventfd.
                unsafe { libc::read(self.wake.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
            }
            for (side, dir) in [(0usize, Direction::Up), (1, Direction::Down)] {
                if ready[side] {
                    self.ingest(side, dir, &mut buf);
                }
            }
        }
        if let Some(p) = self.pcap.take() {
            let _ = p.finish();
        }
        if std::env::var_os("PAGEWIRE_EMU_DEBUG").is_some() {
            let q = |r: &LatenessRecorder, x: f64| r.quantile(x).as_secs_f64() * 1e3;
            let w = &self.ingress_wait;
            let l = &self.taken_lateness;
            eprintln!(
                "pagewire-emu: ingress wait (ms) n {} p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}; \
                 departure lateness (ms) n {} p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
                w.count(),
                q(w, 0.5),
                q(w, 0.9),
                q(w, 0.99),
                q(w, 1.0),
                l.count(),
                q(l, 0.5),
                q(l, 0.9),
                q(l, 0.99),
                q(l, 1.0)
            );
        }
    }

    /// Reads up to READ_BATCH packets from one TUN into its pipe.
    fn ingest(&mut self, side: usize, dir: Direction, buf: &mut [u8]) {
        for _ in 0..READ_BATCH {
            let (n, stamp) = self.tun[side].recv(buf);
            if n <= 0 {
                break; // EAGAIN (drained) or error: poll tells us again.
            }
            let data = buf[..n as usize].to_vec();
            let cross = self.cross_port.is_some_and(|port| {
                pagewire_link::wire::tcp_ports(&data).is_some_and(|(s, d)| s == port || d == port)
            });
            let class = if cross {
                None
            } else {
                let c = self.classifier.classify(&data);
                self.meter.observe_open(self.classifier.open_connections());
                Some(c)
            };
            let now = self.now();
            // The packet entered the link when the kernel received it: the
            // time it then waited for this thread to run is not the link's.
            let waited = stamp
                .map(|s| now_unix().saturating_sub(s).min(MAX_BACKDATE))
                .unwrap_or_default();
            self.ingress_wait.record_late(waited);
            let arrival = if self.no_backdate {
                now
            } else {
                now.saturating_sub(waited)
            }
            .max(self.pipe_clock);
            self.pipe_clock = arrival;
            if self.trace {
                eprintln!(
                    "pw-trace {:.6} in side {side} len {n} waited {:.3} ms",
                    now.as_secs_f64(),
                    waited.as_secs_f64() * 1e3
                );
            }
            if !cross {
                // The quiet period that ends a run counts the run's own
                // packets: cross traffic is stopped by its owner first.
                self.last_ingress = now;
            }
            let pipe = &mut self.pipes[dir.index()];
            let len = data.len();
            let line = pipe.line_size(&data);
            let flow = pagewire_link::wire::flow_hash(&data);
            let packet = Packet { data, class, line };
            match pipe.enqueue_flow(arrival, len, Some(line), flow, packet) {
                // AQM drops (on arrival or later, at dequeue) are counted
                // from the pipe's statistics.
                Verdict::Queued | Verdict::DroppedAqm => {}
                Verdict::DroppedQueue => self.meter.record_drop_queue(dir),
                Verdict::DroppedLoss => self.meter.record_drop_loss(dir),
            }
        }
        self.count_aqm_drops();
    }

    /// Moves the pipes' new AQM drops into the meter.
    fn count_aqm_drops(&mut self) {
        for dir in [Direction::Up, Direction::Down] {
            let i = dir.index();
            let total = self.pipes[i].stats().dropped_aqm;
            if total > self.aqm_drops_seen[i] {
                self.meter
                    .record_drop_aqm(dir, total - self.aqm_drops_seen[i]);
                self.aqm_drops_seen[i] = total;
            }
        }
    }

    /// Writes every due packet to the TUN of the other side, recording how
    /// late it leaves against the model's departure time.
    fn deliver(&mut self, now: Duration) {
        self.pipe_clock = self.pipe_clock.max(now);
        for (dir, out) in [(Direction::Up, 1usize), (Direction::Down, 0)] {
            while let Some((t, p)) = self.pipes[dir.index()].poll(now) {
                // The actual departure: the moment it is handed to the TUN
                // device (read per packet: a batch takes time too).
                let actual = self.now();
                self.run_lateness.record(t, actual);
                self.taken_lateness.record(t, actual);
                if self.trace {
                    eprintln!(
                        "pw-trace {:.6} out dir {} late {:.3} ms",
                        actual.as_secs_f64(),
                        out,
                        actual.saturating_sub(t).as_secs_f64() * 1e3
                    );
                }
                let w = self.tun[out].send(&p.data);
                if w < 0 {
                    self.write_errors += 1;
                }
                let Some(class) = &p.class else {
                    self.meter.record_cross(dir, p.data.len());
                    continue;
                };
                self.meter.record(dir, t, class);
                self.meter.record_line_bytes(dir, p.line as u64);
                if let Some(pcap) = self.pcap.as_mut() {
                    if let Err(e) = pcap.write(t, &p.data) {
                        eprintln!("pagewire-emu: pcap write failed, capture stopped: {e}");
                        self.pcap = None;
                    }
                }
            }
        }
        self.count_aqm_drops();
    }

    /// Handles control messages; false = stop.
    fn handle_ctl(&mut self, now: Duration) -> bool {
        // Bounded: messages come from one caller at a time, each waits for
        // its reply.
        while let Ok(msg) = self.ctl.try_recv() {
            match msg {
                Ctl::Stop => return false,
                Ctl::Stall { pause, reply } => {
                    let _ = reply.send(());
                    std::thread::sleep(pause);
                }
                Ctl::BeginRun { pcap, reply } => {
                    if let Some(old) = self.pcap.take() {
                        let _ = old.finish();
                    }
                    self.pcap = pcap;
                    let unix = (self.epoch_unix + now).as_secs_f64();
                    self.meter = Meter::new(now, unix);
                    self.write_errors = 0;
                    self.run_lateness = LatenessRecorder::new();
                    let _ = reply.send(());
                }
                Ctl::CrossPort { port, reply } => {
                    self.cross_port = port;
                    let _ = reply.send(());
                }
                Ctl::TakeLateness { reply } => {
                    let _ = reply.send(std::mem::take(&mut self.taken_lateness));
                }
                Ctl::EndRun {
                    quiet,
                    max_wait,
                    reply,
                } => {
                    self.pending_end = Some(PendingEnd {
                        quiet: quiet.unwrap_or(Duration::ZERO),
                        give_up_at: now + max_wait,
                        reply,
                    });
                    if quiet.is_none() {
                        self.finish_run(now);
                    }
                }
            }
        }
        true
    }

    fn check_end(&mut self, now: Duration) {
        let Some(p) = self.pending_end.as_ref() else {
            return;
        };
        let idle = self.pipes.iter().all(|p| p.is_empty())
            && now.saturating_sub(self.last_ingress) >= p.quiet;
        if idle || now >= p.give_up_at {
            self.finish_run(now);
        }
    }

    fn finish_run(&mut self, now: Duration) {
        let Some(p) = self.pending_end.take() else {
            return;
        };
        let mut counters = self.meter.finish(now);
        counters.tun_write_errors = std::mem::take(&mut self.write_errors);
        counters.link_lateness = std::mem::take(&mut self.run_lateness).summary(self.one_way);
        let res = match self.pcap.take() {
            Some(pcap) => pcap.finish().map(|_| counters),
            None => Ok(counters),
        };
        let unix = (self.epoch_unix + now).as_secs_f64();
        self.meter = Meter::new(now, unix);
        let _ = p.reply.send(res);
    }
}

/// ppoll on the two TUN fds and the wake eventfd; returns readability.
fn poll3(tun: &[Port; 2], wake: &OwnedFd, timeout: Option<Duration>) -> io::Result<[bool; 3]> {
    let mut fds = [
        libc::pollfd {
            fd: tun[0].fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: tun[1].fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds and ts live across the call.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 3, tsp, std::ptr::null()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let ready = |f: &libc::pollfd| f.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    Ok([ready(&fds[0]), ready(&fds[1]), ready(&fds[2])])
}

/// Real-time priority for the forwarder thread, so a packet that is due
/// leaves when it is due even while other processes keep the cores busy: a
/// SCHED_FIFO thread preempts normal ones at once on wake-up, where a normal
/// thread can wait a scheduler slice (hundreds of microseconds under load,
/// more than the `lan` RTT). The forwarder sleeps in ppoll between packets
/// and spins only for the last SPIN_BELOW, and the kernel's RT throttling
/// (sched_rt_runtime_us) bounds it under a flood. Best effort: without the
/// privilege (e.g. in a user namespace) it stays a normal thread.
fn set_realtime_priority() -> bool {
    // Priority 10 of 1..99: above normal threads, below kernel RT threads.
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pthread_self is valid; param lives across the call.
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if r != 0 && std::env::var_os("PAGEWIRE_EMU_DEBUG").is_some() {
        eprintln!(
            "pagewire-emu: forwarder stays a normal thread (SCHED_FIFO: {})",
            std::io::Error::from_raw_os_error(r)
        );
    }
    r == 0
}

/// The shortest time slice the fair scheduler grants (0.1 ms) for the
/// forwarder thread when it cannot be real-time: since Linux 6.12 a normal
/// thread may ask for a shorter slice (`sched_attr.sched_runtime`, no
/// privilege needed), which gives it an earlier virtual deadline, so on
/// wake-up it preempts a thread with the default slice (about 3 ms)
/// instead of waiting for it. Its share of the CPU is unchanged (that is
/// its nice value, kept). Best effort: older kernels ignore the runtime.
fn set_short_slice() -> bool {
    /// `struct sched_attr` as of Linux 3.14 (SCHED_ATTR_SIZE_VER0).
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        sched_policy: u32,
        sched_flags: u64,
        sched_nice: i32,
        sched_priority: u32,
        sched_runtime: u64,
        sched_deadline: u64,
        sched_period: u64,
    }
    // SAFETY: getpriority on the calling thread (errno ignored: a nice of
    // -1 reads the same as an error, and is kept as such).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: 100_000,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: sched_setattr on the calling thread with an attr that lives
    // across the call.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if r != 0 && std::env::var_os("PAGEWIRE_EMU_DEBUG").is_some() {
        eprintln!(
            "pagewire-emu: no short slice for the forwarder (sched_setattr: {})",
            std::io::Error::last_os_error()
        );
    }
    r == 0
}
