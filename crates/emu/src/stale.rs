//! Leftovers of crashed earlier runs.
//!
//! Namespaces and TUN devices cannot leak (they are anonymous and die with
//! their last fd or process, see `ns`), and direct children die with the
//! spawning thread (PR_SET_PDEATHSIG). What can survive a crash is a process
//! a command started in the background (e.g. `sh -c 'server &'`): it keeps
//! its namespace alive. Every command we start carries
//! `PAGEWIRE_LINK_OWNER=<pid>.<start time>`; at the next start, processes
//! whose owner is no longer running are killed.

use std::sync::OnceLock;

pub const OWNER_ENV: &str = "PAGEWIRE_LINK_OWNER";

/// Start time of a process in clock ticks since boot (field 22 of
/// /proc/<pid>/stat), which with the pid identifies it across pid reuse.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces: skip past its ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

/// This process's owner token.
pub fn owner_token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}.{}", start_time(pid).unwrap_or(0))
    })
}

fn owner_alive(token: &str) -> bool {
    let Some((pid, start)) = token.split_once('.') else {
        return true; // not ours to judge
    };
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return true;
    };
    start_time(pid) == Some(start)
}

/// Kills processes left by link owners that are gone. Returns how many.
pub fn reap() -> usize {
    let mut n = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let key = format!("{OWNER_ENV}=");
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let token = env
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(key.as_bytes()))
            .and_then(|t| std::str::from_utf8(t).ok());
        if let Some(token) = token {
            if !owner_alive(token) {
                // SAFETY: kill(2) on a process left by a dead link owner.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                n += 1;
            }
        }
    }
    n
}
