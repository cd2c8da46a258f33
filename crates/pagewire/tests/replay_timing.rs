//! Replay with server timing: `pagewire record` against a server whose
//! think time per object is known, then `pagewire replay` reproducing those
//! times (and its fidelity score), and failing to without them.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{run_bounded, PW};

/// Path, think time (ms), content type, body.
fn pages() -> Vec<(&'static str, u64, &'static str, Vec<u8>)> {
    let html = b"<!doctype html><html><head><title>slow</title>\
<link rel=\"stylesheet\" href=\"/style.css\"></head><body>\
<img src=\"/a.png\"><img src=\"/b.png\"></body></html>\n"
        .to_vec();
    vec![
        ("/", 120, "text/html", html),
        ("/style.css", 60, "text/css", b"body{margin:0}\n".repeat(50)),
        ("/a.png", 200, "image/png", vec![7u8; 3000]),
        ("/b.png", 0, "image/png", vec![9u8; 5000]),
    ]
}

/// An HTTP/1.1 server on 127.0.0.1 that waits each object's think time
/// before answering (a thread per connection, keep-alive); stopped on drop.
struct SlowServer {
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlowServer {
    fn start() -> SlowServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            // Bounded: at most 64 connections over the test.
            for s in l.incoming().take(64) {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(s) = s else { continue };
                std::thread::spawn(move || serve_conn(s));
            }
        });
        SlowServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SlowServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept loop
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_conn(s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.set_nodelay(true);
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // Bounded: at most 100 requests per connection.
    for _ in 0..100 {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" || h == "\n" {
                break;
            }
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let found = pages().into_iter().find(|p| p.0 == path);
        let (status, think, ct, body) = match found {
            Some((_, ms, ct, b)) => ("200 OK", ms, ct, b),
            None => ("404 Not Found", 0, "text/plain", b"no\n".to_vec()),
        };
        // The server's think time: what recording must find.
        std::thread::sleep(Duration::from_millis(think));
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if w.write_all(head.as_bytes()).is_err() || w.write_all(&body).is_err() {
            return;
        }
    }
    let _ = r.read(&mut [0u8; 1]);
}

fn replay_json(archive: &std::path::Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let (out, _, _) = run_bounded(
        Command::new(PW)
            .arg("replay")
            .arg(archive)
            .args(["--strategy", "http11", "--json"])
            .args(extra),
        Duration::from_secs(60),
        "pagewire replay",
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "replay --json printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn server_ms(v: &serde_json::Value, side: &str, path: &str) -> f64 {
    timing(v, side, path, "server_ms")
}

fn timing(v: &serde_json::Value, side: &str, path: &str, field: &str) -> f64 {
    let o = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["url"].as_str().unwrap().ends_with(path))
        .unwrap_or_else(|| panic!("no object {path} in {v}"));
    o[side][field]
        .as_f64()
        .unwrap_or_else(|| panic!("no {side} {field} for {path}: {o}"))
}

#[test]
fn recorded_server_times_are_replayed_and_scored() {
    let server = SlowServer::start();
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("slow.warc");
    let url = format!("http://{}/", server.addr);
    let (out, _, _) = run_bounded(
        Command::new(PW)
            .args([
                "record",
                "--with",
                "robot",
                "--strategy",
                "http11",
                &url,
                "--out",
            ])
            .arg(&archive),
        Duration::from_secs(60),
        "pagewire record",
    );
    assert!(
        out.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(server);

    // 1. Recording found each object's think time: not far more than the
    // server slept (a loaded machine adds a little), and less only by what
    // was subtracted as the connection's RTT (its handshake, which a
    // loaded machine's scheduling stretches too).
    let (code, v) = replay_json(&archive, &["--tolerance-ms", "40"]);
    for (path, think, _, _) in pages() {
        let rec = server_ms(&v, "recorded", path);
        let rtt = timing(&v, "recorded", path, "rtt_ms");
        let want = think as f64;
        assert!(
            rec + rtt >= want - 2.0 && rec <= want + 60.0,
            "{path}: recorded server time {rec:.1} ms (RTT {rtt:.1} ms), the server thought {want} ms"
        );
    }
    // 2. Replay reproduced them within the stated tolerance (exit 0), and
    // said so with its fidelity score.
    assert_eq!(code, 0, "replay did not reproduce the server times: {v:#}");
    assert_eq!(v["compared"], 4, "{v:#}");
    assert_eq!(v["server_within"], 4, "{v:#}");
    assert_eq!(v["misses"], 0, "{v:#}");
    for (path, _, _, _) in pages() {
        let rec = server_ms(&v, "recorded", path);
        let rep = server_ms(&v, "replayed", path);
        let rtt = timing(&v, "replayed", path, "rtt_ms");
        assert!(
            rep + rtt >= rec - 2.0,
            "{path}: replayed server time {rep:.1} ms (RTT {rtt:.1} ms), recorded {rec:.1} ms"
        );
    }
    assert!(v["fidelity_pct"].as_f64().unwrap() > 0.0, "{v:#}");

    // 3. The same replay without the recorded times does not reproduce
    // them (the 200 ms object comes at once): exit 1, and the slow
    // objects' replayed server times are far below the recorded ones.
    let (code, v) = replay_json(&archive, &["--tolerance-ms", "40", "--no-server-time"]);
    assert_eq!(code, 1, "{v:#}");
    assert!(v["server_within"].as_u64().unwrap() < 4, "{v:#}");
    assert!(server_ms(&v, "replayed", "/a.png") < 100.0, "{v:#}");

    // 4. The text report names the tolerance and prints the score.
    let (out, _, _) = run_bounded(
        Command::new(PW).arg("replay").arg(&archive).args([
            "--strategy",
            "http11",
            "--tolerance-ms",
            "40",
        ]),
        Duration::from_secs(60),
        "pagewire replay",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tolerance: max(40 ms, 10% of the recorded time)"),
        "{text}"
    );
    assert!(
        text.contains("server times reproduced: 4/4 objects"),
        "{text}"
    );
    assert!(text.contains("replay fidelity: "), "{text}");

    // 5. An archive without timings is refused with a reason.
    let bare = dir.path().join("bare.warc");
    let mut w = std::fs::read(&archive).unwrap();
    // Rename the timing field: the archive still loads, with no timings.
    let field = b"warc-pagewire-timing";
    let mut i = 0;
    while let Some(p) = w[i..].windows(field.len()).position(|x| x == field) {
        w[i + p..i + p + field.len()].copy_from_slice(b"warc-pagewire-xxxxxx");
        i += p + field.len();
    }
    std::fs::write(&bare, &w).unwrap();
    let (out, _, _) = run_bounded(
        Command::new(PW).arg("replay").arg(&bare),
        Duration::from_secs(30),
        "pagewire replay",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no recorded timings"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
