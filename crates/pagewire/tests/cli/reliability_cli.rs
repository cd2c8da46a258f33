//! What a hostile-input campaign found in the command line, end to end
//! (the fixes, each checked here): `serve --root` with a
//! 1.5 GB (sparse) file listens without reading it and stays small while
//! sending it; zero values are refused with a clear message; an OS error
//! is printed once; `pack` honours the umask.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{run_bounded, Serve, PW};

/// A `/proc/PID/status` field in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn a_huge_file_is_served_from_disk_not_memory() {
    const HUGE: u64 = 1_500_000_000;
    const READ: u64 = 256 * 1024 * 1024;
    const LIMIT_KB: u64 = 100 * 1024;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), b"<html>hi</html>").unwrap();
    // Sparse: no disk space, but 1.5 GB to anyone who reads it.
    std::fs::File::create(dir.path().join("huge.bin"))
        .unwrap()
        .set_len(HUGE)
        .unwrap();
    let serve = Serve::start(dir.path(), &[]);
    // Listening: had it read the file, 1.5 GB would be resident now.
    let at_listen = status_kb(serve.pid(), "VmRSS:");
    assert!(at_listen < LIMIT_KB, "{at_listen} kB resident at listen");
    let addr = serve
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0u64;
    let mut head = Vec::new();
    // Bounded: READ bytes, each read under a 20 s timeout.
    while got < READ {
        let n = s.read(&mut buf).expect("reading the huge file");
        assert!(n > 0, "closed after {got} bytes");
        if head.len() < 4096 && !head.ends_with(b"\r\n\r\n") {
            head.extend_from_slice(&buf[..n.min(4096)]);
        }
        got += n as u64;
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("content-length: {HUGE}")),
        "{head}"
    );
    // The peak over the whole life of the server, sending included.
    let peak = status_kb(serve.pid(), "VmHWM:");
    assert!(
        peak < LIMIT_KB,
        "peak {peak} kB resident after {got} bytes sent"
    );
    drop(s);
    serve.stop();
}

#[test]
fn zero_values_are_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--threads", "0"][..],
        &["--max-requests", "0"],
        &["--header-timeout", "0s"],
    ] {
        let (o, _, _) = run_bounded(
            Command::new(PW)
                .args(["serve", "--root"])
                .arg(dir.path())
                .args(["--addr", "127.0.0.1:0"])
                .args(args),
            Duration::from_secs(20),
            "pagewire serve",
        );
        let err = String::from_utf8_lossy(&o.stderr);
        // 2: a usage error, nothing started.
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains("'0"),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: it started listening");
    }
}

#[test]
fn an_os_error_is_printed_once_and_pack_honours_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("site");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("index.html"), b"<html>hi</html>").unwrap();
    let missing = dir.path().join("no/such/dir/p.objp");
    let (o, _, _) = run_bounded(
        Command::new(PW)
            .args(["pack", "--root"])
            .arg(&root)
            .arg("--out-file")
            .arg(&missing),
        Duration::from_secs(20),
        "pagewire pack",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("(os error").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for (umask, mode) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let out = dir.path().join(format!("p{umask}.objp"));
        let (o, _, _) = run_bounded(
            Command::new("sh")
                .arg("-c")
                .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
                .arg(PW)
                .args(["pack", "--root"])
                .arg(&root)
                .arg("--out-file")
                .arg(&out),
            Duration::from_secs(20),
            "pagewire pack",
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "umask {umask}: mode {got:o}");
    }
}
