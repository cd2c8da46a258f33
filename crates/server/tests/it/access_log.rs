//! The access log: plain Common Log Format, one request per
//! line and nothing else; appended with `O_APPEND`, so a truncation by log
//! rotation leaves no hole of NUL bytes; reopened by name on `SIGUSR1`, as
//! nginx does; and read as it is by the prefetch simulator's log reader.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

/// Polls (bounded: 10 s) until `path` holds at least `n` lines; returns
/// them. The writer flushes about once a second.
fn wait_lines(path: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read(path).unwrap_or_default();
        let lines: Vec<String> = String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_string)
            .collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "{} has {} lines, waited for {n}",
            path.display(),
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn hit(srv: &TestServer, path: &str) {
    let r = get(srv, &req(path, ""));
    assert_eq!(r.status, 200);
}

fn server_with_log(log: &Path) -> TestServer {
    TestServer::start(
        small_site(),
        pagewire_server::ServerConfig {
            access_log: Some(log.to_path_buf()),
            ..config()
        },
    )
}

#[test]
fn common_log_format_without_header_read_as_is_by_the_prefetch_reader() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let srv = server_with_log(&log);
    hit(&srv, "/index.html");
    hit(&srv, "/index.html");
    let lines = wait_lines(&log, 2);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for l in &lines {
        // host ident authuser [date] "request" status bytes
        assert!(l.starts_with("127.0.0.1 - - ["), "{l}");
        assert!(l.contains("] \"GET /index.html HTTP/1.1\" 200 "), "{l}");
        assert!(!l.starts_with('#'));
    }
    // The reader `pagewire prefetch --log` uses: every line a request.
    let parsed = pagewire_prefetch::log::AccessLog::read_path(&log).unwrap();
    assert_eq!(parsed.requests.len(), 2);
    assert_eq!(parsed.stats.lines, 2);
    assert_eq!(parsed.stats.skipped, 0, "{:?}", parsed.stats);
    drop(srv);
    // A second run appends instead of truncating.
    let srv = server_with_log(&log);
    hit(&srv, "/index.html");
    assert_eq!(wait_lines(&log, 3).len(), 3);
}

#[test]
fn truncation_by_log_rotation_leaves_no_nul_hole() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let srv = server_with_log(&log);
    for _ in 0..20 {
        hit(&srv, "/index.html");
    }
    let before = wait_lines(&log, 20);
    assert_eq!(before.len(), 20);
    // `copytruncate`, or `: > access.log`: the file is cut while the server
    // keeps it open.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(0)
        .unwrap();
    assert_eq!(get(&srv, &req("/missing-after-rotation", "")).status, 404);
    let after = std::fs::read(&log).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = after;
    while after.is_empty() {
        assert!(Instant::now() < deadline, "no line after the truncation");
        std::thread::sleep(Duration::from_millis(20));
        after = std::fs::read(&log).unwrap();
    }
    assert!(!after.contains(&0), "NUL bytes after truncation: {after:?}");
    let text = String::from_utf8(after).unwrap();
    assert!(text.starts_with("127.0.0.1 - - ["), "{text}");
    assert!(
        text.contains("\"GET /missing-after-rotation HTTP/1.1\" 404"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1);
}

/// Rotation by rename, as with nginx: `mv access.log access.log.1`, then
/// `SIGUSR1`; the server goes on writing to a new `access.log`.
#[test]
fn sigusr1_reopens_the_log_after_a_rename() {
    // Registering a listener first installs the process's SIGUSR1 handler
    // (tokio keeps it installed), so raising the signal can never take the
    // default action and end the test process.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let mut mine =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let rotated = dir.path().join("access.log.1");
    let srv = server_with_log(&log);
    for _ in 0..3 {
        hit(&srv, "/index.html");
    }
    assert_eq!(wait_lines(&log, 3).len(), 3);
    std::fs::rename(&log, &rotated).unwrap();
    // SAFETY: raise(3) with a handled signal.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
    rt.block_on(async { mine.recv().await });
    // The writer reopens on its own thread: the new file appears.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log.exists() {
        assert!(Instant::now() < deadline, "no new access.log after SIGUSR1");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(get(&srv, &req("/missing-after-reopen", "")).status, 404);
    let new = wait_lines(&log, 1);
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(new[0].contains("\"GET /missing-after-reopen HTTP/1.1\" 404"));
    let old = std::fs::read_to_string(&rotated).unwrap();
    assert_eq!(old.lines().count(), 3, "{old}");
    assert!(!old.contains("missing-after-reopen"));
}
