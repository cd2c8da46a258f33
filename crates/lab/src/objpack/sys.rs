//! What the machine did during a run, beyond the two bench threads: the
//! page cache of the files a run reads (cold or warm), CPU of the whole
//! process and of the emulator's forwarder thread, and the machine's
//! `/proc/stat` counters (softirq, irq, system, iowait); a CPU sampler for
//! the paper's Figures 5-8 (utilization per 100 ms reading).

#![allow(unsafe_code)] // posix_fadvise, mincore, mmap, pthread clock: each with its SAFETY note

use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use serde::Serialize;

/// Whether the files of a run were in the page cache when it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cache {
    /// Every file read once just before the run.
    Warm,
    /// Every file dropped from the page cache (`posix_fadvise(DONTNEED)`
    /// after `fsync`) just before the run.
    Cold,
}

impl Cache {
    pub fn name(self) -> &'static str {
        match self {
            Cache::Warm => "warm",
            Cache::Cold => "cold",
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Pages of `path` resident in the page cache and the file's pages
/// (mincore(2) over a read-only mapping).
pub fn resident_pages(path: &Path) -> Result<(u64, u64)> {
    let f = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok((0, 0));
    }
    let ps = page_size();
    let pages = len.div_ceil(ps);
    // SAFETY: a fresh read-only shared mapping of a file we hold open; it
    // is unmapped below and never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error()).context("mmap");
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: addr/len is the mapping made above; vec has one byte per page.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return Err(err).context("mincore");
    }
    Ok((
        vec.iter().filter(|&&b| b & 1 == 1).count() as u64,
        pages as u64,
    ))
}

/// Puts `paths` into the state `cache` asks for and returns the share of
/// their pages resident afterwards (mincore), in %.
pub fn prepare(paths: &[&Path], cache: Cache) -> Result<f64> {
    for p in paths {
        match cache {
            Cache::Warm => {
                fs::read(p).with_context(|| format!("read {}", p.display()))?;
            }
            Cache::Cold => {
                let f = File::open(p).with_context(|| format!("open {}", p.display()))?;
                // Dirty pages cannot be dropped: write them back first.
                f.sync_all()?;
                // SAFETY: advice on a file descriptor we hold open.
                let rc =
                    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
                if rc != 0 {
                    anyhow::bail!(
                        "posix_fadvise(DONTNEED) {}: {}",
                        p.display(),
                        std::io::Error::from_raw_os_error(rc)
                    );
                }
            }
        }
    }
    let (mut res, mut all) = (0u64, 0u64);
    for p in paths {
        let (r, a) = resident_pages(p)?;
        res += r;
        all += a;
    }
    Ok(if all == 0 {
        100.0
    } else {
        100.0 * res as f64 / all as f64
    })
}

/// CPU time (user + system) of the whole process.
pub fn process_cpu() -> Duration {
    cpu_time(UsageWho::RUSAGE_SELF)
}

/// CPU time (user + system) of the calling thread.
pub fn thread_cpu() -> Duration {
    cpu_time(UsageWho::RUSAGE_THREAD)
}

/// User + system time of `who` by getrusage(2); zero if the call fails.
fn cpu_time(who: UsageWho) -> Duration {
    let Ok(ru) = getrusage(who) else {
        return Duration::ZERO;
    };
    let tv = |t: TimeVal| Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000);
    tv(ru.user_time()) + tv(ru.system_time())
}

/// Nanoseconds on a CPU of one thread of this process (its CPU-time clock,
/// the scheduler's exact runtime).
pub fn task_runtime_ns(tid: u32) -> Option<u64> {
    ThreadClock::of_tid(tid).read().map(|d| d.as_nanos() as u64)
}

/// The thread id of this process's thread named `name`.
pub fn find_thread(name: &str) -> Option<u32> {
    for e in fs::read_dir("/proc/self/task").ok()?.flatten() {
        let tid: u32 = e.file_name().to_str()?.parse().ok()?;
        if fs::read_to_string(e.path().join("comm"))
            .map(|c| c.trim() == name)
            .unwrap_or(false)
        {
            return Some(tid);
        }
    }
    None
}

/// The calling thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// The machine's `/proc/stat` "cpu" line, in clock ticks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stat {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl Stat {
    pub fn now() -> Stat {
        let text = fs::read_to_string("/proc/stat").unwrap_or_default();
        let v: Vec<u64> = text
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        Stat {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        }
    }
}

fn tick_ms() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1000.0 / if hz > 0 { hz as f64 } else { 100.0 }
}

/// CPU over one run besides the bench threads' own accounting.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SystemCpu {
    /// The bench process, every thread (getrusage(RUSAGE_SELF)).
    pub process_ms: f64,
    /// The emulator's forwarder thread (link emulation, including the
    /// kernel receive path it runs when it writes a packet into a TUN).
    pub forwarder_ms: f64,
    /// Machine-wide `/proc/stat` deltas over the run, all CPUs, in ms
    /// (clock-tick resolution; include every other process on the machine).
    pub machine_softirq_ms: f64,
    pub machine_irq_ms: f64,
    pub machine_system_ms: f64,
    pub machine_user_ms: f64,
    pub machine_iowait_ms: f64,
    pub machine_busy_ms: f64,
    /// Wall time of the whole run (from before the request to after the
    /// server's last acknowledgement), ms.
    pub wall_ms: f64,
}

/// A snapshot to take before a run; `finish` gives the deltas.
pub struct Snapshot {
    t: Instant,
    process: Duration,
    forwarder: Option<(u32, u64)>,
    stat: Stat,
}

impl Snapshot {
    pub fn take(forwarder_tid: Option<u32>) -> Snapshot {
        Snapshot {
            t: Instant::now(),
            process: process_cpu(),
            forwarder: forwarder_tid.and_then(|t| Some((t, task_runtime_ns(t)?))),
            stat: Stat::now(),
        }
    }

    pub fn finish(&self) -> SystemCpu {
        let s = Stat::now();
        let k = tick_ms();
        let d = |a: u64, b: u64| a.saturating_sub(b) as f64 * k;
        let busy = |x: &Stat| x.user + x.nice + x.system + x.irq + x.softirq + x.steal;
        SystemCpu {
            process_ms: (process_cpu().saturating_sub(self.process)).as_secs_f64() * 1000.0,
            forwarder_ms: self
                .forwarder
                .and_then(|(t, n0)| Some(task_runtime_ns(t)?.saturating_sub(n0) as f64 / 1e6))
                .unwrap_or(0.0),
            machine_softirq_ms: d(s.softirq, self.stat.softirq),
            machine_irq_ms: d(s.irq, self.stat.irq),
            machine_system_ms: d(s.system, self.stat.system),
            machine_user_ms: d(s.user + s.nice, self.stat.user + self.stat.nice),
            machine_iowait_ms: d(s.iowait, self.stat.iowait),
            machine_busy_ms: d(busy(&s), busy(&self.stat)),
            wall_ms: self.t.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

/// CPU clock of another thread of this process (pthread_getcpuclockid),
/// read at nanosecond resolution.
#[derive(Clone, Copy)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock, to be read from another thread.
    pub fn current() -> Option<ThreadClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self is the calling thread; id is written.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        (rc == 0).then_some(ThreadClock(id))
    }

    /// The clock of the thread `tid` of this process (the kernel's encoding
    /// of a per-thread scheduler clock, as glibc's MAKE_THREAD_CPUCLOCK).
    pub fn of_tid(tid: u32) -> ThreadClock {
        ThreadClock(((!(tid as libc::clockid_t)) << 3) | 6)
    }

    pub fn read(self) -> Option<Duration> {
        // SAFETY: clock_gettime writes into the zeroed timespec.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::clock_gettime(self.0, &mut ts) };
        (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

/// Reads a thread's CPU clock every `every` until stopped: the paper's
/// CPU utilization readings (% of one CPU per interval).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<f64>>>,
}

impl Sampler {
    pub fn start(clock: ThreadClock, every: Duration, max_readings: usize) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("pw-cpu-sampler".into())
            .spawn(move || {
                let mut out = Vec::new();
                let t0 = Instant::now();
                let mut last = clock.read().unwrap_or_default();
                let mut k = 1u32;
                while !s.load(Ordering::SeqCst) && out.len() < max_readings {
                    let at = t0 + every * k;
                    let now = Instant::now();
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    let c = clock.read().unwrap_or(last);
                    out.push(100.0 * (c.saturating_sub(last)).as_secs_f64() / every.as_secs_f64());
                    last = c;
                    k += 1;
                }
                out
            })
            .ok();
        Sampler { stop, handle }
    }

    /// Stops after the current reading and returns the readings.
    pub fn finish(mut self) -> Vec<f64> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_drops_and_warm_loads_the_page_cache() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, vec![b'x'; 256 << 10]).unwrap();
        let warm = prepare(&[p.as_path()], Cache::Warm).unwrap();
        assert_eq!(warm, 100.0);
        let cold = prepare(&[p.as_path()], Cache::Cold).unwrap();
        // tmpfs keeps every page (nothing to drop to); a disk file system drops them.
        // SAFETY: statfs on a NUL-terminated path into a zeroed struct.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
        if st.f_type != libc::TMPFS_MAGIC {
            assert!(cold < 50.0, "{cold}% still resident");
        }
        assert_eq!(prepare(&[p.as_path()], Cache::Warm).unwrap(), 100.0);
    }

    #[test]
    fn sampler_sees_a_busy_thread() {
        let clock = ThreadClock::current().unwrap();
        let s = Sampler::start(clock, Duration::from_millis(10), 1000);
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let r = s.finish();
        assert!(!r.is_empty());
        assert!(r.iter().sum::<f64>() > 0.0, "{r:?}");
        assert!(process_cpu() > Duration::ZERO);
        let mine = task_runtime_ns(gettid()).unwrap();
        let via_pthread = ThreadClock::current().unwrap().read().unwrap().as_nanos() as u64;
        assert!(mine > 0 && via_pthread >= mine, "{mine} {via_pthread}");
    }
}
