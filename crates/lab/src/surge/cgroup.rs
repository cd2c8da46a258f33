//! A cgroup for the server under test: a memory limit (the paper's 32-256 MB
//! servers), a CPU quota, a read IOPS limit on the disk holding the file set
//! (a disk of the paper's era), and the accounting the monitor reads (CPU
//! user/system, memory, block I/O). cgroup v2 when the unified hierarchy has the `memory`
//! controller, else the v1 hierarchies (`memory`, `cpuacct`, `blkio`).
//! Removed on drop, after any process left in it is killed.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

const ROOT: &str = "/sys/fs/cgroup";

/// Which cgroup interface the kernel offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    V1,
    V2,
}

/// Counters of the cgroup at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reading {
    /// CPU time in user / kernel mode, nanoseconds.
    pub user_ns: u64,
    pub system_ns: u64,
    /// Bytes read from / written to block devices.
    pub io_read_bytes: u64,
    pub io_write_bytes: u64,
    /// Read requests the block layer served for the cgroup (v1
    /// `blkio.throttle.io_serviced`, v2 `io.stat` `rios`).
    pub io_reads: u64,
    /// Memory charged to the cgroup, page cache excluded (anon + kernel), bytes.
    pub mem_nonfile: u64,
    /// Page cache charged to the cgroup, bytes.
    pub mem_file: u64,
    /// The cgroup's memory in swap, bytes (v1 `memory.stat` `total_swap`,
    /// v2 `memory.swap.current`; 0 without swap).
    pub mem_swap: u64,
    /// Major faults (pages read in on a fault).
    pub major_faults: u64,
    /// Processes the kernel's OOM killer killed in the cgroup.
    pub oom_kills: u64,
    /// CPU bandwidth control (a `cpu.max` / `cpu.cfs_quota_us` quota):
    /// enforcement periods elapsed and periods in which the cgroup was
    /// throttled (it had used its quota). 0 without a quota.
    pub cpu_periods: u64,
    pub cpu_throttled: u64,
}

/// The server's cgroup: one directory (v2) or one per controller (v1).
pub struct Cgroup {
    pub flavor: Flavor,
    pub name: String,
    /// Directories whose `cgroup.procs` a process is written to.
    dirs: Vec<PathBuf>,
    pub limit_bytes: Option<u64>,
    /// CPU quota, in cores (0.01: one hundredth of one CPU).
    pub cpu_quota: Option<f64>,
    /// Read IOPS limit on one block device (`MAJ:MIN`, reads a second).
    pub disk_iops: Option<(String, u32)>,
}

/// The whole disk (`MAJ:MIN`) holding `path`: the device the I/O limits
/// name (a partition is mapped to its disk). An error when `path` is not
/// on a block device (tmpfs, overlay): no disk to limit.
pub fn block_device_of(path: &Path) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .dev();
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        bail!(
            "{} is not on a block device ({major}:{minor}): no disk to limit",
            path.display()
        );
    }
    if sys.join("partition").exists() {
        let disk = fs::read_to_string(sys.join("../dev"))
            .with_context(|| format!("the disk of partition {major}:{minor}"))?;
        return Ok(disk.trim().to_string());
    }
    Ok(format!("{major}:{minor}"))
}

/// The CFS bandwidth period and quota (microseconds) that give `cores` of
/// CPU: a 100 ms period, lengthened (up to 1 s) when the quota would fall
/// below the kernel's 1 ms minimum.
pub fn cpu_quota_us(cores: f64) -> Result<(u64, u64), String> {
    if !(cores.is_finite() && cores > 0.0) {
        return Err(format!("CPU quota {cores} must be above 0"));
    }
    let mut period = 100_000.0;
    if cores * period < 1000.0 {
        period = 1000.0 / cores;
    }
    if period > 1_000_000.0 {
        return Err(format!(
            "CPU quota {cores} of a core is below the kernel's least (1 ms per 1 s period: 0.001)"
        ));
    }
    let period = period.round() as u64;
    Ok((period, (cores * period as f64).round() as u64))
}

fn v2_has_memory() -> bool {
    fs::read_to_string(Path::new(ROOT).join("cgroup.controllers"))
        .map(|s| s.split_whitespace().any(|c| c == "memory"))
        .unwrap_or(false)
}

/// What this machine offers, for the report.
pub fn describe() -> String {
    if v2_has_memory() {
        let c = fs::read_to_string(Path::new(ROOT).join("cgroup.controllers")).unwrap_or_default();
        format!("cgroup v2 (controllers: {})", c.trim())
    } else if Path::new(ROOT)
        .join("memory/memory.limit_in_bytes")
        .exists()
    {
        "cgroup v1 (memory, cpuacct, blkio hierarchies)".into()
    } else {
        "no usable cgroup memory controller".into()
    }
}

/// The machine's swap areas as `/proc/swaps` lists them (`NAME SIZE_KB`
/// each), empty when it has none.
pub fn swaps() -> Vec<String> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3).then(|| format!("{} {} KB", f[0], f[2]))
        })
        .collect()
}

/// Pages the whole machine swapped in and out since boot (/proc/vmstat
/// `pswpin`, `pswpout`).
pub fn swap_counts() -> (u64, u64) {
    let s = fs::read_to_string("/proc/vmstat").unwrap_or_default();
    let mut r = (0, 0);
    for l in s.lines() {
        let mut it = l.split_whitespace();
        match (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) {
            (Some("pswpin"), Some(v)) => r.0 = v,
            (Some("pswpout"), Some(v)) => r.1 = v,
            _ => {}
        }
    }
    r
}

fn write(p: &Path, v: &str) -> Result<()> {
    fs::write(p, v).with_context(|| format!("write {v:?} to {}", p.display()))
}

impl Cgroup {
    /// Creates `pagewire-surge-<pid>-<tag>` with memory limit `limit_bytes`
    /// (None: no limit, still accounted). Without `swap` the swap is held
    /// at the same limit, so the server's own memory cannot escape to swap
    /// (at the limit the kernel can only take back page cache, or kill);
    /// with `swap` the cgroup may page its own memory out to the machine's
    /// swap (v1 `memory.memsw.limit_in_bytes` unlimited and
    /// `memory.swappiness` 60, the kernel's default; v2 `memory.swap.max`
    /// max), as the paper's server paged under its RAM limit.
    ///
    /// `disk_iops`: (`MAJ:MIN`, N) limits the cgroup's reads from that
    /// disk to N a second (v1 `blkio.throttle.read_iops_device`, v2
    /// `io.max riops`): the server's page-cache misses queue on it.
    pub fn create(
        tag: &str,
        limit_bytes: Option<u64>,
        cpu_quota: Option<f64>,
        disk_iops: Option<(String, u32)>,
        swap: bool,
    ) -> Result<Cgroup> {
        let quota = cpu_quota
            .map(cpu_quota_us)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let name = format!("pagewire-surge-{}-{tag}", std::process::id());
        if v2_has_memory() {
            let dir = Path::new(ROOT).join(&name);
            // Controllers must be enabled in the parent for the child.
            let _ = fs::write(
                Path::new(ROOT).join("cgroup.subtree_control"),
                "+memory +cpu +io",
            );
            fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            let cg = Cgroup {
                flavor: Flavor::V2,
                name,
                dirs: vec![dir.clone()],
                limit_bytes,
                cpu_quota,
                disk_iops: disk_iops.clone(),
            };
            if let Some((dev, n)) = &disk_iops {
                write(&dir.join("io.max"), &format!("{dev} riops={n}"))?;
            }
            if let Some(b) = limit_bytes {
                write(&dir.join("memory.max"), &b.to_string())?;
                if swap {
                    write(&dir.join("memory.swap.max"), "max")?;
                } else {
                    let _ = fs::write(dir.join("memory.swap.max"), "0");
                }
            }
            if let Some((period, q)) = quota {
                write(&dir.join("cpu.max"), &format!("{q} {period}"))?;
            }
            return Ok(cg);
        }
        let mem = Path::new(ROOT).join("memory");
        if !mem.join("memory.limit_in_bytes").exists() {
            bail!(
                "no cgroup memory controller on this machine ({}): cannot limit the server's memory",
                describe()
            );
        }
        let mut dirs = Vec::new();
        for ctl in ["memory", "cpuacct", "blkio", "cpu"] {
            let base = Path::new(ROOT).join(ctl);
            if !base.join("cgroup.procs").exists() {
                if ctl == "cpu" && quota.is_some() {
                    bail!(
                        "no cgroup cpu controller on this machine ({}): cannot set a CPU quota",
                        describe()
                    );
                }
                continue;
            }
            // The cpu hierarchy only when there is a quota to enforce (when
            // it is co-mounted with cpuacct both name the same directory).
            if ctl == "cpu" && quota.is_none() {
                continue;
            }
            let d = base.join(&name);
            fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
            dirs.push(d);
        }
        let cg = Cgroup {
            flavor: Flavor::V1,
            name,
            dirs,
            limit_bytes,
            cpu_quota,
            disk_iops: disk_iops.clone(),
        };
        if let Some((dev, n)) = &disk_iops {
            let d = cg.dir("blkio").with_context(|| {
                format!(
                    "no cgroup blkio controller on this machine ({}): cannot limit the disk",
                    describe()
                )
            })?;
            write(
                &d.join("blkio.throttle.read_iops_device"),
                &format!("{dev} {n}"),
            )?;
        }
        if let Some((period, q)) = quota {
            let d = cg
                .dir("cpu")
                .or_else(|| cg.dir("cpuacct"))
                .context("the cpu hierarchy")?;
            write(&d.join("cpu.cfs_period_us"), &period.to_string())?;
            write(&d.join("cpu.cfs_quota_us"), &q.to_string())?;
        }
        if let Some(b) = limit_bytes {
            let d = cg.dir("memory").expect("memory dir made above");
            write(&d.join("memory.limit_in_bytes"), &b.to_string())?;
            if swap {
                // memsw starts unlimited: the cgroup may use all the swap.
                write(&d.join("memory.swappiness"), "60")?;
            } else {
                // memsw exists only with swap accounting; the machine may have no swap.
                let _ = fs::write(d.join("memory.memsw.limit_in_bytes"), b.to_string());
                let _ = fs::write(d.join("memory.swappiness"), "0");
            }
        }
        Ok(cg)
    }

    /// The counters' CPU quota, as `cpu.max` / `cpu.cfs_quota_us` read back
    /// (period, quota in microseconds); None without one.
    pub fn quota_read_back(&self) -> Option<(u64, u64)> {
        match self.flavor {
            Flavor::V2 => {
                let s = fs::read_to_string(self.dir("cpu")?.join("cpu.max")).ok()?;
                let mut it = s.split_whitespace();
                let q = it.next()?.parse().ok()?;
                Some((it.next()?.parse().ok()?, q))
            }
            Flavor::V1 => {
                let d = self.dir("cpu")?;
                let r = |f: &str| -> Option<i64> {
                    fs::read_to_string(d.join(f)).ok()?.trim().parse().ok()
                };
                let q = r("cpu.cfs_quota_us")?;
                (q > 0).then_some((r("cpu.cfs_period_us")? as u64, q as u64))
            }
        }
    }

    fn dir(&self, ctl: &str) -> Option<&PathBuf> {
        match self.flavor {
            Flavor::V2 => self.dirs.first(),
            Flavor::V1 => self
                .dirs
                .iter()
                .find(|d| d.parent().and_then(|p| p.file_name()) == Some(ctl.as_ref())),
        }
    }

    /// A shell prefix that moves the shell into this cgroup before it
    /// `exec`s the server, so every process the server forks is inside.
    pub fn enter_prefix(&self) -> String {
        self.dirs
            .iter()
            .map(|d| format!("echo $$ > {}/cgroup.procs && ", d.display()))
            .collect()
    }

    /// Processes in the cgroup now.
    pub fn pids(&self) -> Vec<u32> {
        let Some(d) = self.dirs.first() else {
            return Vec::new();
        };
        fs::read_to_string(d.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Reads the counters (missing files read as 0).
    pub fn read(&self) -> Reading {
        let mut r = Reading::default();
        let stat = |d: Option<&PathBuf>, f: &str| -> Vec<(String, u64)> {
            d.and_then(|d| fs::read_to_string(d.join(f)).ok())
                .unwrap_or_default()
                .lines()
                .filter_map(|l| {
                    let mut it = l.split_whitespace();
                    Some((it.next()?.to_string(), it.next()?.parse().ok()?))
                })
                .collect()
        };
        let num = |d: Option<&PathBuf>, f: &str| -> u64 {
            d.and_then(|d| fs::read_to_string(d.join(f)).ok())
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)
        };
        match self.flavor {
            Flavor::V2 => {
                let d = self.dir("memory");
                for (k, v) in stat(d, "cpu.stat") {
                    match k.as_str() {
                        "user_usec" => r.user_ns = v * 1000,
                        "system_usec" => r.system_ns = v * 1000,
                        "nr_periods" => r.cpu_periods = v,
                        "nr_throttled" => r.cpu_throttled = v,
                        _ => {}
                    }
                }
                let current = num(d, "memory.current");
                for (k, v) in stat(d, "memory.stat") {
                    match k.as_str() {
                        "file" => r.mem_file = v,
                        "pgmajfault" => r.major_faults = v,
                        _ => {}
                    }
                }
                r.mem_nonfile = current.saturating_sub(r.mem_file);
                r.mem_swap = num(d, "memory.swap.current");
                for (k, v) in stat(d, "memory.events") {
                    if k == "oom_kill" {
                        r.oom_kills = v;
                    }
                }
                if let Some(io) = d.and_then(|d| fs::read_to_string(d.join("io.stat")).ok()) {
                    for tok in io.split_whitespace() {
                        if let Some(v) = tok.strip_prefix("rbytes=") {
                            r.io_read_bytes += v.parse().unwrap_or(0);
                        } else if let Some(v) = tok.strip_prefix("wbytes=") {
                            r.io_write_bytes += v.parse().unwrap_or(0);
                        } else if let Some(v) = tok.strip_prefix("rios=") {
                            r.io_reads += v.parse().unwrap_or(0);
                        }
                    }
                }
            }
            Flavor::V1 => {
                let c = self.dir("cpuacct");
                // `usage_user` / `usage_sys` split the time by which mode a
                // tick found the task in, and overstate a task that runs in
                // bursts shorter than a tick (a throttled server: 3x, read
                // against `cpuacct.usage`); `usage` is the scheduler's exact
                // total, so the split is scaled to it.
                let (user, sys) = (num(c, "cpuacct.usage_user"), num(c, "cpuacct.usage_sys"));
                let total = num(c, "cpuacct.usage");
                (r.user_ns, r.system_ns) = split_exact(user, sys, total);
                for (k, v) in stat(self.dir("cpu").or(c), "cpu.stat") {
                    match k.as_str() {
                        "nr_periods" => r.cpu_periods = v,
                        "nr_throttled" => r.cpu_throttled = v,
                        _ => {}
                    }
                }
                let m = self.dir("memory");
                let usage = num(m, "memory.usage_in_bytes");
                for (k, v) in stat(m, "memory.stat") {
                    match k.as_str() {
                        "total_cache" => r.mem_file = v,
                        "total_swap" => r.mem_swap = v,
                        "total_pgmajfault" => r.major_faults = v,
                        _ => {}
                    }
                }
                r.mem_nonfile = usage.saturating_sub(r.mem_file);
                for (k, v) in stat(m, "memory.oom_control") {
                    if k == "oom_kill" {
                        r.oom_kills = v;
                    }
                }
                let b = self.dir("blkio");
                let per_device = |f: &str| -> Vec<(String, u64)> {
                    b.and_then(|d| fs::read_to_string(d.join(f)).ok())
                        .unwrap_or_default()
                        .lines()
                        .filter_map(|l| {
                            let f: Vec<&str> = l.split_whitespace().collect();
                            (f.len() == 3).then(|| (f[1].to_string(), f[2].parse().unwrap_or(0)))
                        })
                        .collect()
                };
                for (op, v) in per_device("blkio.throttle.io_service_bytes") {
                    match op.as_str() {
                        "Read" => r.io_read_bytes += v,
                        "Write" => r.io_write_bytes += v,
                        _ => {}
                    }
                }
                for (op, v) in per_device("blkio.throttle.io_serviced") {
                    if op == "Read" {
                        r.io_reads += v;
                    }
                }
            }
        }
        r
    }
}

/// `user` and `sys` scaled so they sum to `total` (as they were when
/// either is 0 or there is no total).
fn split_exact(user: u64, sys: u64, total: u64) -> (u64, u64) {
    let ticks = user + sys;
    if ticks == 0 || total == 0 {
        return (user, sys);
    }
    let u = (user as u128 * total as u128 / ticks as u128) as u64;
    (u, total - u)
}

impl Cgroup {
    /// Kills every process still in the cgroup (orphans of a killed server
    /// parent) and waits up to 3 s for it to empty.
    pub fn kill_all(&self) {
        for pid in self.pids() {
            let _ = std::process::Command::new("kill")
                .arg("-9")
                .arg(pid.to_string())
                .status();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while !self.pids().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Kill anything left (the server's guard normally stopped it), then
        // remove the directories.
        self.kill_all();
        for d in self.dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

/// Empties the page cache, dentries and inodes (global; root only) so the
/// next run reads the file set from disk.
pub fn drop_caches() -> Result<()> {
    // Dirty pages must reach the disk first or they stay cached.
    let _ = std::process::Command::new("sync").status();
    write(Path::new("/proc/sys/vm/drop_caches"), "3")
}

/// Parses `32M`, `256MB`, `1G`, `none`/`unlimited` (None).
pub fn parse_size(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim().to_ascii_lowercase();
    if t == "none" || t == "unlimited" || t == "max" {
        return Ok(None);
    }
    let t = t.trim_end_matches('b');
    let (num, mul) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("bad memory size {s:?} (e.g. 32M, 256M, 1G, none)"))?;
    if n == 0 {
        return Err(format!("memory size {s:?} must be above 0"));
    }
    Ok(Some(n * mul))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_split_scaled_to_the_exact_total() {
        assert_eq!(split_exact(92, 216, 100), (29, 71));
        assert_eq!(split_exact(0, 0, 100), (0, 0));
        assert_eq!(split_exact(5, 5, 0), (5, 5));
        let (u, s) = split_exact(987_877_372, 2_679_421_291, 1_516_816_036);
        assert_eq!(u + s, 1_516_816_036);
    }

    #[test]
    fn cpu_quotas() {
        assert_eq!(cpu_quota_us(0.25), Ok((100_000, 25_000)));
        assert_eq!(cpu_quota_us(0.01), Ok((100_000, 1000)));
        // Below 1 ms per 100 ms the period grows so the quota stays at 1 ms.
        assert_eq!(cpu_quota_us(0.005), Ok((200_000, 1000)));
        assert_eq!(cpu_quota_us(1.5), Ok((100_000, 150_000)));
        assert!(cpu_quota_us(0.0005).is_err());
        assert!(cpu_quota_us(0.0).is_err());
        assert!(cpu_quota_us(f64::NAN).is_err());
    }

    /// A CPU quota really throttles: a busy loop in a cgroup with a
    /// hundredth of a core is throttled and gets about its quota. Root only
    /// (PAGEWIRE_REQUIRE_ALL makes a missing privilege a failure).
    #[test]
    fn a_quota_throttles_a_busy_process() {
        if !nix_is_root() {
            assert!(
                std::env::var_os("PAGEWIRE_REQUIRE_ALL").is_none(),
                "PAGEWIRE_REQUIRE_ALL: the cgroup test needs root"
            );
            eprintln!("skipped: needs root for a cgroup");
            return;
        }
        let cg = Cgroup::create("quota-test", None, Some(0.01), None, false).unwrap();
        assert_eq!(cg.quota_read_back(), Some((100_000, 1000)));
        let before = cg.read();
        // A shell busy loop, bounded by `timeout`, inside the cgroup.
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{}exec timeout 1 sh -c 'while :; do :; done'",
                cg.enter_prefix()
            ))
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(124), "timeout ends the loop");
        let after = cg.read();
        let cpu_ns = (after.user_ns + after.system_ns) - (before.user_ns + before.system_ns);
        assert!(after.cpu_periods > before.cpu_periods, "{after:?}");
        assert!(after.cpu_throttled > before.cpu_throttled, "{after:?}");
        // One second at a hundredth of a core: well under a tenth of the
        // second a busy loop takes unthrottled (the loop ran at least 0.9 s).
        assert!(cpu_ns < 100_000_000, "used {cpu_ns} ns");
        assert!(cpu_ns > 0, "the loop's CPU time is counted");
    }

    /// A read IOPS limit lands on the disk holding the files and the
    /// cgroup counts the reads its processes make there. The files are
    /// dropped from the page cache one by one (`dd iflag=nocache`), not the
    /// whole machine's cache. Root only.
    #[test]
    fn a_disk_limit_counts_the_reads_it_limits() {
        if !nix_is_root() {
            assert!(
                std::env::var_os("PAGEWIRE_REQUIRE_ALL").is_none(),
                "PAGEWIRE_REQUIRE_ALL: the cgroup test needs root"
            );
            eprintln!("skipped: needs root for a cgroup");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let Ok(dev) = block_device_of(dir.path()) else {
            eprintln!("skipped: the test's files are not on a block device");
            return;
        };
        for i in 0..20 {
            fs::write(dir.path().join(format!("f{i}")), vec![i as u8; 20_000]).unwrap();
        }
        let _ = std::process::Command::new("sync").status();
        let cg = Cgroup::create("disk-test", None, None, Some((dev.clone(), 2000)), false).unwrap();
        let limit = fs::read_to_string(
            cg.dir("blkio")
                .map(|d| d.join("blkio.throttle.read_iops_device"))
                .unwrap_or_else(|| cg.dirs[0].join("io.max")),
        )
        .unwrap();
        assert!(limit.contains(&dev) && limit.contains("2000"), "{limit}");
        let before = cg.read();
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{}cd {} && for f in f*; do dd if=$f iflag=nocache count=0 status=none; done; cat f* > /dev/null",
                cg.enter_prefix(),
                dir.path().display()
            ))
            .status()
            .unwrap();
        assert!(st.success());
        let after = cg.read();
        // Twenty files evicted and read back: twenty reads at least, each
        // served by the disk.
        assert!(
            after.io_reads - before.io_reads >= 20,
            "{before:?} {after:?}"
        );
        assert!(after.io_read_bytes - before.io_read_bytes >= 20 * 20_000);
    }

    /// Without `swap` a memory-limited cgroup may not page its own memory
    /// out (swap held at the limit, swappiness 0); with it, it may (swap
    /// unlimited, swappiness 60). Root only (cgroup v1 with swap
    /// accounting, or v2).
    #[test]
    fn swap_is_held_at_the_limit_unless_asked_for() {
        if !nix_is_root() {
            assert!(
                std::env::var_os("PAGEWIRE_REQUIRE_ALL").is_none(),
                "PAGEWIRE_REQUIRE_ALL: the cgroup test needs root"
            );
            eprintln!("skipped: needs root for a cgroup");
            return;
        }
        let limit = 64u64 << 20;
        let read = |cg: &Cgroup, f: &str| {
            let d = cg.dir("memory").unwrap_or(&cg.dirs[0]);
            fs::read_to_string(d.join(f)).map(|s| s.trim().to_string())
        };
        let held = Cgroup::create("swap-held", Some(limit), None, None, false).unwrap();
        let paged = Cgroup::create("swap-paged", Some(limit), None, None, true).unwrap();
        match held.flavor {
            Flavor::V2 => {
                assert_eq!(read(&paged, "memory.swap.max").unwrap(), "max");
                if let Ok(v) = read(&held, "memory.swap.max") {
                    assert_eq!(v, "0");
                }
            }
            Flavor::V1 => {
                assert_eq!(read(&held, "memory.swappiness").unwrap(), "0");
                assert_eq!(read(&paged, "memory.swappiness").unwrap(), "60");
                if let Ok(v) = read(&held, "memory.memsw.limit_in_bytes") {
                    assert_eq!(v.parse::<u64>().unwrap(), limit);
                    let p: u64 = read(&paged, "memory.memsw.limit_in_bytes")
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!(p > limit, "paged memsw {p}");
                }
            }
        }
    }

    fn nix_is_root() -> bool {
        fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
            })
            .unwrap_or(false)
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32M"), Ok(Some(32 << 20)));
        assert_eq!(parse_size("256mb"), Ok(Some(256 << 20)));
        assert_eq!(parse_size("1G"), Ok(Some(1 << 30)));
        assert_eq!(parse_size("none"), Ok(None));
        assert!(parse_size("0M").is_err());
        assert!(parse_size("lots").is_err());
    }
}
