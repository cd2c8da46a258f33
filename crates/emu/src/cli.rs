//! Pieces the `pagewire link` command is made of, kept here so the binary
//! stays thin: termination signals, stopping a process group, waiting for a
//! server to listen, and rendering counters.

use std::process::Child;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use pagewire_link::{Kind, LinkConfig, LinkCounters};

static TERMINATED_BY: AtomicI32 = AtomicI32::new(0);
static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only atomic operations: async-signal-safe. The first signal is kept.
    let _ = TERMINATED_BY.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Installs SIGINT / SIGTERM / SIGHUP handlers that only record the signal,
/// so the command can tear the link down in an orderly way. Installing
/// again is a no-op (a handler chained on top stays in place).
pub fn install_termination_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(install_now);
}

/// How many termination signals arrived so far.
pub fn signal_count() -> u32 {
    SIGNALS.load(Ordering::SeqCst)
}

fn install_now() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with a handler that only stores an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The termination signal received, if any.
pub fn terminated_by() -> Option<i32> {
    match TERMINATED_BY.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Sends SIGTERM to the child's process group, waits up to `grace` for the
/// whole group to exit, then SIGKILLs what is left. Children started by
/// `Link::spawn_in_*` lead their own group.
///
/// The wait is for the group, not only its leader: a `sh -c 'cmd'` leader
/// that did not `exec` its command dies of the SIGTERM at once while `cmd`
/// (e.g. `pagewire serve`, writing the last lines of its access log) is
/// still shutting down, and must not be killed for it.
pub fn stop_process_group(child: &mut Child, grace: Duration) {
    let pgid = child.id() as libc::pid_t;
    if let Ok(Some(_)) = child.try_wait() {
        // Already gone; its group may still have members.
        // SAFETY: kill(2) on the group the child led.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        return;
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let until = Instant::now() + grace;
    let mut leader_gone = false;
    // Bounded by `grace`.
    while Instant::now() < until {
        if !leader_gone {
            leader_gone = matches!(child.try_wait(), Ok(Some(_)));
        }
        if leader_gone && !group_has_live_process(pgid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
}

/// Whether a process of group `pgid` is still running. Signal 0 only
/// checks: it fails (ESRCH) once no process is left in the group. It
/// succeeds for zombies too (an orphan waits for its new parent, often
/// PID 1, to reap it), so then `/proc` says whether any member is more
/// than a zombie.
fn group_has_live_process(pgid: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing.
    if unsafe { libc::kill(-pgid, 0) } != 0 {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces and
            // parentheses, so fields are counted after the last ')'.
            let mut f = stat
                .rsplit_once(')')
                .map_or("", |(_, rest)| rest)
                .split_whitespace();
            let state = f.next().unwrap_or("Z");
            let pgrp = f.nth(1).and_then(|v| v.parse::<libc::pid_t>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X"
        })
}

/// Exit code a shell would report for a status (128 + signal if killed).
pub fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => (c & 0xff) as u8,
        (None, Some(s)) => (128 + s).min(255) as u8,
        _ => 1,
    }
}

/// Counters as the JSON object `pagewire link --json` prints: the counter
/// fields at the top level, plus the configuration and the client's status.
/// `pcap`, if any, is where the run was captured.
pub fn render_json(
    cfg: &LinkConfig,
    c: &LinkCounters,
    client_exit: Option<u8>,
    pcap: Option<&std::path::Path>,
) -> String {
    let mut v = serde_json::to_value(c).expect("counters serialize");
    if let Some(obj) = v.as_object_mut() {
        obj.insert(
            "made_by".into(),
            format!("pagewire-emu {}", env!("CARGO_PKG_VERSION")).into(),
        );
        obj.insert(
            "command".into(),
            serde_json::to_value(crate::command_line()).expect("strings"),
        );
        obj.insert(
            "config".into(),
            serde_json::to_value(cfg).expect("config serializes"),
        );
        obj.insert("client_exit".into(), client_exit.into());
        obj.insert("pcap".into(), pcap.map(|p| p.display().to_string()).into());
    }
    serde_json::to_string_pretty(&v).expect("json")
}

/// A human-readable table of the counters.
pub fn render_text(cfg: &LinkConfig, c: &LinkCounters) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "link {}: rtt {:.1} ms, {} packets, {} bytes, {:.1}% TCP/IP header overhead, \
         {} connections (max {} open), {} retransmissions, {} dropped",
        cfg.profile,
        cfg.rtt.as_secs_f64() * 1000.0,
        c.packets_total,
        c.bytes_total,
        c.overhead_pct,
        c.connections_opened,
        c.max_open_connections,
        c.retransmissions,
        c.dropped_total
    );
    let _ = writeln!(
        s,
        "{:<16} {:>10} {:>12} {:>10} {:>12}",
        "kind", "c->s pkts", "c->s bytes", "s->c pkts", "s->c bytes"
    );
    for k in Kind::ALL {
        let u = c.client_to_server.kinds.get(k);
        let d = c.server_to_client.kinds.get(k);
        if u.packets + d.packets == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>12} {:>10} {:>12}",
            k.name(),
            u.packets,
            u.bytes,
            d.packets,
            d.bytes
        );
    }
    let _ = writeln!(
        s,
        "{:<16} {:>10} {:>12} {:>10} {:>12}",
        "total",
        c.client_to_server.packets,
        c.client_to_server.bytes,
        c.server_to_client.packets,
        c.server_to_client.bytes
    );
    if cfg.compression != pagewire_link::LinkCompression::None {
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>12} {:>10} {:>12}   ({} compression: serial-line octets; packets and bytes above are IP)",
            "on the line",
            "",
            c.client_to_server.line_bytes,
            "",
            c.server_to_client.line_bytes,
            cfg.compression.name()
        );
    }
    if let (Some(a), Some(b)) = (c.first_packet_s, c.last_packet_s) {
        let _ = writeln!(
            s,
            "first packet at {a:.6} s, last at {b:.6} s (since run start)"
        );
    }
    s
}

/// Counts TCP sockets in LISTEN state in the calling thread's namespace.
pub(crate) fn listening_sockets() -> usize {
    // /proc/thread-self/net is the calling thread's network namespace.
    let mut n = 0;
    for f in ["/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(f) {
            // Column 4 is the state; 0A = LISTEN.
            n += text
                .lines()
                .skip(1)
                .filter(|l| l.split_whitespace().nth(3) == Some("0A"))
                .count();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell leader that does not `exec` its command (`; true` keeps it
    /// waiting) dies of SIGTERM at once; its command traps SIGTERM, takes a
    /// moment to finish and writes a file: it is let finish, not killed.
    #[test]
    fn stop_waits_for_the_group_not_only_its_leader() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let done = dir.path().join("done");
        let ready = dir.path().join("ready");
        let inner = format!(
            "trap 'sleep 0.2; echo done > {d}; exit 0' TERM; : > {r}; \
             while :; do sleep 0.01; done",
            d = done.display(),
            r = ready.display()
        );
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("sh -c \"{inner}\"; true"))
            .process_group(0)
            .spawn()
            .unwrap();
        // The trap is set once `ready` exists (polled, bounded at 10 s).
        let until = Instant::now() + Duration::from_secs(10);
        while !ready.exists() {
            assert!(Instant::now() < until, "the inner shell never started");
            std::thread::sleep(Duration::from_millis(5));
        }
        stop_process_group(&mut child, Duration::from_secs(10));
        assert_eq!(
            std::fs::read_to_string(&done).unwrap_or_default(),
            "done\n",
            "the group's command was killed before it finished"
        );
    }

    #[test]
    fn json_has_top_level_totals() {
        let cfg = LinkConfig::profile("ppp").unwrap();
        let c = LinkCounters {
            packets_total: 3,
            bytes_total: 120,
            ..Default::default()
        };
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&cfg, &c, Some(0), None)).unwrap();
        assert_eq!(v["packets_total"], 3);
        assert_eq!(v["bytes_total"], 120);
        assert_eq!(v["client_exit"], 0);
        assert_eq!(v["config"]["profile"], "ppp");
        assert!(v["client_to_server"]["kinds"]["syn"]["packets"].is_u64());
        assert!(render_text(&cfg, &c).contains("3 packets"));
    }
}
