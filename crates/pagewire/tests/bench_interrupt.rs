//! Ctrl-C during a bench: the first SIGINT is
//! acknowledged at once, the PPP run in flight is cancelled (not waited
//! for: a PPP first-time run takes about a minute), the runs done are
//! written and the exit status is 130; a second SIGINT aborts at once.
//! Either way no namespace and no server process of the bench is left.
//! Real processes over real namespaces: needs root (pagewire-testreq).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
mod schema;

/// Kills the bench if the test fails before it ended (its servers and
/// namespaces go with it: parent-death signal, anonymous namespaces).
struct Bench(Child);

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a bench whose first run is a quick LAN one and whose second is a
/// PPP run; returns it and its stderr lines, each with when it arrived.
fn start(out: &std::path::Path) -> (Bench, mpsc::Receiver<(Instant, String)>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args([
            "bench",
            "--net",
            "lan,ppp",
            "--strategy",
            "http11",
            "--tests",
            "first",
            "--reps",
            "1",
            "--no-initial",
            "--no-progress",
            "--out",
        ])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pagewire bench");
    let stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    // Drain stdout so the report never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut BufReader::new(stdout), &mut std::io::sink()));
    (Bench(child), rx)
}

/// Waits for a stderr line containing `needle` (bounded by `within`);
/// returns when it arrived and every line seen so far.
fn wait_line(
    rx: &mpsc::Receiver<(Instant, String)>,
    needle: &str,
    within: Duration,
    seen: &mut Vec<String>,
) -> Option<Instant> {
    let until = Instant::now() + within;
    // Bounded by `within`.
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        match rx.recv_timeout(left) {
            Ok((t, line)) => {
                let hit = line.contains(needle);
                seen.push(line);
                if hit {
                    return Some(t);
                }
            }
            Err(_) => return None,
        }
    }
}

/// Waits for the process to end (bounded); returns its exit code and when.
fn wait_exit(b: &mut Bench, within: Duration) -> Option<(Option<i32>, Instant)> {
    let until = Instant::now() + within;
    // Bounded by `within`; 10 ms steps.
    loop {
        if let Some(st) = b.0.try_wait().unwrap() {
            return Some((st.code(), Instant::now()));
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn sigint(b: &Bench) {
    // SAFETY: kill(2) on our own child's pid.
    let r = unsafe { libc::kill(b.0.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(r, 0, "kill -INT");
}

/// Processes a link of the bench started (every command a link starts
/// carries `PAGEWIRE_LINK_OWNER=<pid>.<start time>` of its owner).
fn link_processes(bench_pid: u32) -> Vec<u32> {
    let want = format!("PAGEWIRE_LINK_OWNER={bench_pid}.");
    let mut out = Vec::new();
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(p.path().join("environ")) else {
            continue;
        };
        if env
            .split(|&b| b == 0)
            .any(|v| v.starts_with(want.as_bytes()))
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; it holds no namespace.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rfind(')').and_then(|i| s[i + 2..].chars().next());
        state != Some('Z') && state != Some('X')
    })
}

/// Network namespaces (other than this test's) that `pids` are in or hold
/// an fd to, by any of their threads.
fn netns_of(pids: &[u32]) -> Vec<String> {
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut out = Vec::new();
    let mut note = |l: std::path::PathBuf| {
        let l = l.to_string_lossy().into_owned();
        if l.starts_with("net:[") && l != own.to_string_lossy() && !out.contains(&l) {
            out.push(l);
        }
    };
    for pid in pids {
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(l) = std::fs::read_link(t.path().join("ns/net")) {
                note(l);
            }
        }
        for f in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(l) = std::fs::read_link(f.path()) {
                note(l);
            }
        }
    }
    out
}

/// Whether any process on the machine is in or holds one of `netns`.
fn netns_still_referenced(netns: &[String]) -> Vec<String> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|p| p.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    let held = netns_of(&all);
    netns.iter().filter(|n| held.contains(n)).cloned().collect()
}

/// What the PPP run in flight holds: the bench's namespaces and its link
/// processes (the server). Waits (bounded) until there is some.
fn in_flight(bench_pid: u32) -> (Vec<String>, Vec<u32>) {
    let until = Instant::now() + Duration::from_secs(10);
    // Bounded by 10 s; 20 ms steps.
    loop {
        let procs = link_processes(bench_pid);
        let mut pids = procs.clone();
        pids.push(bench_pid);
        let ns = netns_of(&pids);
        if (!ns.is_empty() && !procs.is_empty()) || Instant::now() >= until {
            return (ns, procs);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// After the bench ended: none of its namespaces and link processes is
/// left (the kernel frees namespaces asynchronously: allow 3 s).
fn assert_nothing_left(bench_pid: u32, netns: &[String], procs: &[u32], log: &str) {
    let until = Instant::now() + Duration::from_secs(3);
    // Bounded by 3 s; 20 ms steps.
    loop {
        let left_ns = netns_still_referenced(netns);
        let left_procs: Vec<u32> = procs.iter().copied().filter(|p| alive(*p)).collect();
        let owned = link_processes(bench_pid);
        if left_ns.is_empty() && left_procs.is_empty() && owned.is_empty() {
            return;
        }
        if Instant::now() >= until {
            panic!(
                "left behind after the bench: namespaces {left_ns:?}, processes {left_procs:?} {owned:?}\n{log}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigint_during_a_ppp_run_acknowledges_cancels_writes_and_exits_130() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let (mut bench, rx) = start(&out);
    let mut seen = Vec::new();
    // Run 2 of 2 is the PPP run: the LAN run is done when it starts.
    let started = wait_line(&rx, "run 2/2: ppp", Duration::from_secs(120), &mut seen);
    assert!(
        started.is_some(),
        "the PPP run never started:\n{}",
        seen.join("\n")
    );
    let bench_pid = bench.0.id();
    let (netns, procs) = in_flight(bench_pid);
    assert!(
        !netns.is_empty() && !procs.is_empty(),
        "the PPP run holds no namespace or server: {netns:?} {procs:?}"
    );
    let sent = Instant::now();
    sigint(&bench);
    let ack = wait_line(
        &rx,
        "Ctrl-C again to abort",
        Duration::from_secs(10),
        &mut seen,
    )
    .unwrap_or_else(|| panic!("no acknowledgement:\n{}", seen.join("\n")));
    let (code, ended) = wait_exit(&mut bench, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("still running 30 s after SIGINT:\n{}", seen.join("\n")));
    // The rest of stderr (the sender ends with the process).
    seen.extend(rx.iter().map(|(_, l)| l));
    let log = seen.join("\n");
    let ack_s = ack.saturating_duration_since(sent).as_secs_f64();
    let exit_s = ended.saturating_duration_since(sent).as_secs_f64();
    eprintln!("acknowledged after {ack_s:.3} s, exited after {exit_s:.3} s");
    assert_eq!(code, Some(130), "{log}");
    assert!(log.contains("stopping 1 in-flight run"), "{log}");
    // The bounds: acknowledged within 1 s; a PPP run left to finish would take ~60 s.
    assert!(ack_s <= 1.0, "acknowledged after {ack_s:.3} s:\n{log}");
    assert!(exit_s <= 5.0, "exited after {exit_s:.3} s:\n{log}");
    // Partial results: the LAN run, not the cancelled PPP run.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{log}");
    assert_eq!(runs[0]["net"], "lan");
    assert!(runs[0]["error"].is_null(), "{}", runs[0]);
    assert!(out.join("report.txt").exists());
    // The finished run's HAR is written and valid; the cancelled one's is not there.
    assert_eq!(schema::check_hars_in(&out), 1, "{log}");
    let pcaps: Vec<String> = std::fs::read_dir(out.join("pcaps"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !pcaps.iter().any(|p| p.starts_with("ppp")),
        "a cancelled run left its pcap: {pcaps:?}"
    );
    assert!(log.contains("interrupted by signal 2"), "{log}");
    assert_nothing_left(bench_pid, &netns, &procs, &log);
}

#[test]
fn a_second_sigint_aborts_at_once_with_130() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let (mut bench, rx) = start(&out);
    let mut seen = Vec::new();
    let started = wait_line(&rx, "run 2/2: ppp", Duration::from_secs(120), &mut seen);
    assert!(
        started.is_some(),
        "the PPP run never started:\n{}",
        seen.join("\n")
    );
    let bench_pid = bench.0.id();
    let (netns, procs) = in_flight(bench_pid);
    assert!(
        !netns.is_empty() && !procs.is_empty(),
        "{netns:?} {procs:?}"
    );
    sigint(&bench);
    wait_line(
        &rx,
        "Ctrl-C again to abort",
        Duration::from_secs(10),
        &mut seen,
    )
    .unwrap_or_else(|| panic!("no acknowledgement:\n{}", seen.join("\n")));
    sigint(&bench);
    let (code, _) = wait_exit(&mut bench, Duration::from_secs(30))
        .unwrap_or_else(|| panic!("still running 30 s after two SIGINTs:\n{}", seen.join("\n")));
    seen.extend(rx.iter().map(|(_, l)| l));
    let log = seen.join("\n");
    assert_eq!(code, Some(130), "{log}");
    assert!(log.contains("aborting"), "{log}");
    assert_nothing_left(bench_pid, &netns, &procs, &log);
}
