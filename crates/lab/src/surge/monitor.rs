//! The server monitor: paper 004's Webmonitor (Table 1), sampled once a
//! second during a run. CPU user/kernel time of the server's cgroup and the
//! machine's idle/iowait, pages read from / written to disk, TCP segments
//! sent/received in the server's network namespace, its connections by
//! state, the server's memory, and every established connection's
//! congestion window (`ss -ti` in the namespace) for Table 3 and Figure 2.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::cgroup::{Cgroup, Reading};

/// One second of the monitor.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// Seconds since the monitor started (end of the interval).
    pub t: f64,
    /// Server CPU in user / kernel mode, % of one CPU's second x CPUs (100 = the whole machine).
    pub usr: f64,
    pub kern: f64,
    /// The machine's idle and iowait, % (global: /proc/stat).
    pub idle: f64,
    pub iowait: f64,
    /// 4 KiB pages read from / written to disk by the server per second: its
    /// cgroup's block I/O, or its processes' /proc/PID/io, whichever is larger.
    pub pages_read: f64,
    pub pages_written: f64,
    /// Pages read / written per second by the whole machine (/proc/vmstat pgpgin/pgpgout).
    pub sys_pages_read: f64,
    pub sys_pages_written: f64,
    /// Reads a second the block layer served for the server's cgroup
    /// (requests, not pages: the disk's IOPS).
    pub disk_reads: f64,
    /// Major page faults of the server per second.
    pub major_faults: f64,
    /// Server processes killed by the OOM killer in the second (memory.oom_control / memory.events).
    pub oom_kills: u64,
    /// TCP segments sent / received per second in the server's namespace.
    pub tcp_sent: f64,
    pub tcp_received: f64,
    /// Server sockets by state, mean of the second's sub-samples (5 a second).
    pub established: f64,
    pub time_wait: f64,
    pub other_states: f64,
    /// Server memory without page cache (anon + kernel), bytes; and its page cache.
    pub rss: u64,
    pub page_cache: u64,
    /// Congestion windows (segments) of the established connections seen
    /// by the second's sub-samples (5 a second).
    pub cwnd_n: u64,
    pub cwnd_mean: f64,
    pub cwnd_max: u64,
    /// The server's memory in swap, bytes (0 unless `--swap`).
    pub swap: u64,
}

/// Everything a run's monitor saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    pub samples: Vec<Sample>,
    /// Every (connection, second) congestion window sample: the CDF's data.
    pub cwnds: Vec<u32>,
    /// Whether `ss` gave congestion windows at all.
    pub cwnd_available: bool,
}

impl Record {
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let mut w = csv::Writer::from_path(path)?;
        for s in &self.samples {
            w.serialize(s)?;
        }
        w.flush()?;
        Ok(())
    }

    /// Mean of a column over the samples.
    pub fn mean(&self, f: impl Fn(&Sample) -> f64) -> f64 {
        if self.samples.is_empty() {
            return f64::NAN;
        }
        self.samples.iter().map(&f).sum::<f64>() / self.samples.len() as f64
    }
}

/// A running monitor; `stop` joins it.
pub struct Monitor {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Record>>,
}

/// What to watch: a process inside the server's namespace (for its
/// /proc/PID/net files and `nsenter`) and the server's cgroup.
/// Sub-samples of connection states and windows per interval.
pub const SUBSAMPLES: u32 = 5;

pub struct Target {
    pub netns_pid: u32,
    /// The server namespace, opened when the server started.
    pub netns: Option<Arc<std::os::fd::OwnedFd>>,
    pub cgroup: Arc<Cgroup>,
    pub interval: Duration,
}

#[derive(Default, Clone, Copy)]
struct CpuTimes {
    total: u64,
    idle: u64,
    iowait: u64,
}

fn proc_stat() -> CpuTimes {
    let s = fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = s.lines().next() else {
        return CpuTimes::default();
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    CpuTimes {
        total: v.iter().take(8).sum(),
        idle: v.get(3).copied().unwrap_or(0),
        iowait: v.get(4).copied().unwrap_or(0),
    }
}

/// Storage I/O the server's processes caused (`read_bytes`, `write_bytes` of
/// /proc/PID/io: the bytes fetched from / sent to the block layer, i.e. page
/// cache misses and write-back), summed as positive deltas per process so
/// processes that come and go (Apache's children) are counted while alive.
#[derive(Default)]
struct ProcIo {
    last: std::collections::HashMap<u32, (u64, u64)>,
    read: u64,
    written: u64,
}

impl ProcIo {
    fn update(&mut self, pids: &[u32]) {
        let mut seen = std::collections::HashMap::new();
        for &pid in pids {
            let Ok(s) = fs::read_to_string(format!("/proc/{pid}/io")) else {
                continue;
            };
            let mut r = (0u64, 0u64);
            for l in s.lines() {
                if let Some(v) = l.strip_prefix("read_bytes: ") {
                    r.0 = v.trim().parse().unwrap_or(0);
                } else if let Some(v) = l.strip_prefix("write_bytes: ") {
                    r.1 = v.trim().parse().unwrap_or(0);
                }
            }
            let prev = self.last.get(&pid).copied().unwrap_or((0, 0));
            // A new process (or a reused pid) counts from its start.
            let prev = if r.0 < prev.0 || r.1 < prev.1 {
                (0, 0)
            } else {
                prev
            };
            self.read += r.0 - prev.0;
            self.written += r.1 - prev.1;
            seen.insert(pid, r);
        }
        self.last = seen;
    }
}

fn vmstat() -> (u64, u64) {
    let s = fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let mut r = (0, 0);
    for l in s.lines() {
        let mut it = l.split_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) {
            (Some("pgpgin"), Some(v)) => r.0 = v,
            (Some("pgpgout"), Some(v)) => r.1 = v,
            _ => {}
        }
    }
    r
}

/// Where the server namespace's /proc/net files are read: the monitor thread
/// itself enters the namespace (so a server process that dies — Apache's
/// parent, OOM-killed — does not blind it); `/proc/PID` when it cannot.
#[derive(Clone, Debug)]
pub struct NetView {
    pub proc_dir: String,
    /// The calling thread is inside the namespace (spawned `ss` inherits it).
    pub inside: bool,
    pub pid: u32,
}

impl NetView {
    pub fn of_pid(pid: u32) -> NetView {
        NetView {
            proc_dir: format!("/proc/{pid}"),
            inside: false,
            pid,
        }
    }
    /// Moves the calling thread into the namespace `fd` (else `pid`'s).
    pub fn enter(pid: u32, fd: Option<&std::os::fd::OwnedFd>) -> NetView {
        let entered = match fd {
            Some(fd) => pagewire_emu::ns::enter_fd(fd),
            None => fs::File::open(format!("/proc/{pid}/ns/net"))
                .map(std::os::fd::OwnedFd::from)
                .and_then(|fd| pagewire_emu::ns::enter_fd(&fd)),
        };
        match entered {
            Ok(()) => NetView {
                proc_dir: "/proc/thread-self".into(),
                inside: true,
                pid,
            },
            Err(_) => NetView::of_pid(pid),
        }
    }
}

/// (OutSegs, InSegs) of the namespace.
pub fn tcp_segments(v: &NetView) -> (u64, u64) {
    let s = fs::read_to_string(format!("{}/net/snmp", v.proc_dir)).unwrap_or_default();
    let tcp: Vec<&str> = s.lines().filter(|l| l.starts_with("Tcp:")).collect();
    if tcp.len() < 2 {
        return (0, 0);
    }
    let names: Vec<&str> = tcp[0].split_whitespace().collect();
    let vals: Vec<&str> = tcp[1].split_whitespace().collect();
    let get = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .and_then(|i| vals.get(i))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("OutSegs"), get("InSegs"))
}

/// (ESTABLISHED, TIME_WAIT, other non-LISTEN) sockets in the namespace's net/tcp.
pub fn tcp_states(v: &NetView) -> (u64, u64, u64) {
    let s = fs::read_to_string(format!("{}/net/tcp", v.proc_dir)).unwrap_or_default();
    let (mut est, mut tw, mut other) = (0, 0, 0);
    for l in s.lines().skip(1) {
        match l.split_whitespace().nth(3) {
            Some("01") => est += 1,
            Some("06") => tw += 1,
            Some("0A") | None => {}
            Some(_) => other += 1,
        }
    }
    (est, tw, other)
}

/// Congestion windows of the namespace's established TCP connections.
/// None when `ss` cannot be run.
pub fn cwnds(v: &NetView) -> Option<Vec<u32>> {
    let out = if v.inside {
        Command::new("ss")
            .args(["-tinH", "state", "established"])
            .output()
            .ok()?
    } else {
        Command::new("nsenter")
            .arg(format!("--net=/proc/{}/ns/net", v.pid))
            .args(["ss", "-tinH", "state", "established"])
            .output()
            .ok()?
    };
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.split_whitespace()
            .filter_map(|tok| tok.strip_prefix("cwnd:"))
            .filter_map(|v| v.parse().ok())
            .collect(),
    )
}

impl Monitor {
    pub fn start(target: Target) -> Monitor {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let handle = std::thread::spawn(move || sample_loop(target, s2));
        Monitor {
            stop,
            handle: Some(handle),
        }
    }

    pub fn stop(mut self) -> Record {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sample_loop(target: Target, stop: Arc<AtomicBool>) -> Record {
    let ncpu = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    let view = NetView::enter(target.netns_pid, target.netns.as_deref());
    let start = Instant::now();
    let mut rec = Record::default();
    let mut prev_t = Instant::now();
    let mut prev_cg: Reading = target.cgroup.read();
    let mut prev_cpu = proc_stat();
    let mut prev_vm = vmstat();
    let mut prev_tcp = tcp_segments(&view);
    let mut pio = ProcIo::default();
    pio.update(&target.cgroup.pids());
    let mut prev_pio = (pio.read, pio.written);
    let mut next = start + target.interval;
    let sub = target.interval / SUBSAMPLES;
    loop {
        // Connection states and congestion windows SUBSAMPLES times per
        // interval (short HTTP/1.0 connections live for milliseconds);
        // sleep in small steps so stop is prompt.
        let (mut st, mut cw, mut subs) = ((0u64, 0u64, 0u64), Vec::new(), 0u64);
        let mut cw_ok = false;
        let mut next_sub = Instant::now();
        // Always at least one sub-sample, even when the previous interval overran.
        while subs == 0 || Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return rec;
            }
            if Instant::now() >= next_sub {
                next_sub += sub;
                let (e, t, o) = tcp_states(&view);
                st = (st.0 + e, st.1 + t, st.2 + o);
                if let Some(c) = cwnds(&view) {
                    cw_ok = true;
                    cw.extend(c);
                }
                subs += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // A slow sample (a loaded machine) moves the schedule instead of
        // producing back-to-back catch-up samples of a few microseconds.
        next = (next + target.interval).max(Instant::now() + target.interval / 2);
        let now = Instant::now();
        let dt = now.duration_since(prev_t).as_secs_f64().max(1e-3);
        let cg = target.cgroup.read();
        let cpu = proc_stat();
        let vm = vmstat();
        let tcp = tcp_segments(&view);
        pio.update(&target.cgroup.pids());
        // The cgroup's block I/O when the kernel attributes it (cgroup v2
        // io.stat), else the processes' own I/O accounting.
        let cg_read = cg.io_read_bytes.saturating_sub(prev_cg.io_read_bytes);
        let cg_written = cg.io_write_bytes.saturating_sub(prev_cg.io_write_bytes);
        let read_b = cg_read.max(pio.read - prev_pio.0);
        let written_b = cg_written.max(pio.written - prev_pio.1);
        prev_pio = (pio.read, pio.written);
        let subs = subs.max(1) as f64;
        let (est, tw, other) = (st.0 as f64 / subs, st.1 as f64 / subs, st.2 as f64 / subs);
        let cw = if cw_ok { Some(cw) } else { None };
        let dtot = cpu.total.saturating_sub(prev_cpu.total).max(1) as f64;
        let mut s = Sample {
            t: now.duration_since(start).as_secs_f64(),
            usr: 100.0 * cg.user_ns.saturating_sub(prev_cg.user_ns) as f64 / (dt * 1e9 * ncpu),
            kern: 100.0 * cg.system_ns.saturating_sub(prev_cg.system_ns) as f64 / (dt * 1e9 * ncpu),
            idle: 100.0 * cpu.idle.saturating_sub(prev_cpu.idle) as f64 / dtot,
            iowait: 100.0 * cpu.iowait.saturating_sub(prev_cpu.iowait) as f64 / dtot,
            pages_read: read_b as f64 / 4096.0 / dt,
            pages_written: written_b as f64 / 4096.0 / dt,
            // pgpgin/pgpgout count KiB.
            sys_pages_read: vm.0.saturating_sub(prev_vm.0) as f64 / 4.0 / dt,
            sys_pages_written: vm.1.saturating_sub(prev_vm.1) as f64 / 4.0 / dt,
            disk_reads: cg.io_reads.saturating_sub(prev_cg.io_reads) as f64 / dt,
            major_faults: cg.major_faults.saturating_sub(prev_cg.major_faults) as f64 / dt,
            oom_kills: cg.oom_kills.saturating_sub(prev_cg.oom_kills),
            tcp_sent: tcp.0.saturating_sub(prev_tcp.0) as f64 / dt,
            tcp_received: tcp.1.saturating_sub(prev_tcp.1) as f64 / dt,
            established: est,
            time_wait: tw,
            other_states: other,
            rss: cg.mem_nonfile,
            page_cache: cg.mem_file,
            swap: cg.mem_swap,
            ..Default::default()
        };
        if let Some(c) = cw {
            rec.cwnd_available = true;
            s.cwnd_n = c.len() as u64;
            s.cwnd_max = c.iter().copied().max().unwrap_or(0) as u64;
            s.cwnd_mean = if c.is_empty() {
                0.0
            } else {
                c.iter().map(|&x| x as f64).sum::<f64>() / c.len() as f64
            };
            rec.cwnds.extend(c);
        }
        rec.samples.push(s);
        prev_t = now;
        prev_cg = cg;
        prev_cpu = cpu;
        prev_vm = vm;
        prev_tcp = tcp;
        if stop.load(Ordering::Relaxed) {
            return rec;
        }
    }
}

/// Writes a CDF as `cwnd,fraction` lines.
pub fn write_cdf(path: &Path, xs: &[u32]) -> Result<()> {
    let mut v = xs.to_vec();
    v.sort_unstable();
    let mut f = std::io::BufWriter::new(fs::File::create(path)?);
    writeln!(f, "cwnd,fraction")?;
    let n = v.len() as f64;
    for (i, x) in v.iter().enumerate() {
        if i + 1 == v.len() || v[i + 1] != *x {
            writeln!(f, "{x},{:.6}", (i + 1) as f64 / n)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_namespace() {
        let me = NetView::of_pid(std::process::id());
        let (out, inn) = tcp_segments(&me);
        // Any Linux that ran anything has sent segments; at least parse.
        let _ = (out, inn);
        let (e, t, o) = tcp_states(&me);
        let _ = (e, t, o);
        let c = proc_stat();
        assert!(c.total > 0, "/proc/stat parsed");
    }

    #[test]
    fn states_count_a_real_connection() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _s = l.accept().unwrap();
        let (est, _, _) = tcp_states(&NetView::of_pid(std::process::id()));
        assert!(
            est >= 2,
            "both ends of the loopback connection are ESTABLISHED"
        );
    }
}
