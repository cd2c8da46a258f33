//! Issue 18 #4, decompression amplification: a hostile local server sends
//! the robot binary deflate bombs (about 1 MB that inflates to 1 GiB) and
//! the robot's peak memory (the child's `ru_maxrss`, from wait4) must stay
//! bounded whatever the inflated-size limit, the error must name the object
//! and the limit, and a coding the robot did not ask for is not decoded
//! unless `--decode-unasked` says so.
mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::PW;

/// zlib stream of `mib` MiB of spaces (ratio about 1000:1).
fn bomb(mib: usize) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..mib {
        z.write_all(&chunk).unwrap();
    }
    z.finish().unwrap()
}

/// Serves `/` (a page with one object, `/bomb.txt`), `/bomb.txt` and
/// `/bomb.html` (the bomb, `Content-Encoding: deflate` whatever the request
/// asked for), one response per connection. Runs until the test ends.
fn hostile_server(bomb: Arc<Vec<u8>>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        // Bounded: a few connections per robot run.
        for s in l.incoming().take(64) {
            let Ok(s) = s else { return };
            let bomb = bomb.clone();
            std::thread::spawn(move || serve_one(s, &bomb));
        }
    });
    url
}

fn serve_one(mut s: TcpStream, bomb: &[u8]) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    // Bounded by the read timeout and the robot's requests.
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match s.read(&mut tmp) {
                Ok(n) if n > 0 => {
                    buf.extend_from_slice(&tmp[..n]);
                    continue;
                }
                _ => return,
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let path = head.split(' ').nth(1).unwrap_or("");
        let resp = if path == "/" {
            let page = b"<html><body><p>bomb below</p><img src=/bomb.txt></body></html>";
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                page.len()
            )
            .into_bytes();
            r.extend_from_slice(page);
            r
        } else {
            let ct = if path.ends_with(".html") {
                "text/html"
            } else {
                "text/plain"
            };
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {ct}\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
                bomb.len()
            )
            .into_bytes();
            r.extend_from_slice(bomb);
            r
        };
        if s.write_all(&resp).is_err() {
            return;
        }
    }
}

struct Run {
    code: i32,
    stderr: String,
    stdout: String,
    max_rss_kib: i64,
}

/// Runs `pagewire ARGS` to its end (killed after 60 s) and reads its peak
/// resident set from wait4(2).
// The child is reaped by wait4, which std's `Child::wait` cannot replace
// (it does not return the rusage).
#[allow(clippy::zombie_processes)]
fn robot(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let child = Command::new(PW)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawn pagewire");
    let pid = child.id() as libc::pid_t;
    let t = Instant::now();
    let mut status = 0;
    // SAFETY: plain system call on our own child; the structure is written
    // by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // Bounded: 60 s of 20 ms polls.
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if t.elapsed() > Duration::from_secs(60) {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("pagewire {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Run {
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        stderr: std::fs::read_to_string(err).unwrap(),
        stdout: std::fs::read_to_string(out).unwrap(),
        max_rss_kib: ru.ru_maxrss,
    }
}

/// Peak memory allowed to the robot during a bomb: its own size plus
/// buffers, far below the limits used (128 MiB, 32 MiB).
const MAX_RSS_KIB: i64 = 64 * 1024;

#[test]
fn deflate_bombs_stay_in_bounded_memory() {
    let t = Instant::now();
    let bomb = Arc::new(bomb(1024));
    eprintln!("bomb: {} bytes -> 1 GiB in {:?}", bomb.len(), t.elapsed());
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let base = hostile_server(bomb.clone());
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();

    // An object (not the page) that the robot was told to decode, kept for
    // the cache, with a 128 MiB limit: inflated into a cache file as it
    // arrives, never into memory; fails at the limit, naming both.
    let url = format!("{base}/");
    let r = robot(&[
        "fetch",
        &url,
        "--strategy",
        "pipeline",
        "--decode-unasked",
        "--cache",
        cache_dir,
        "--max-inflated",
        "128MiB",
    ]);
    eprintln!(
        "object bomb: exit {} max RSS {} KiB: {}",
        r.code,
        r.max_rss_kib,
        r.stderr.trim()
    );
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains(&format!("{base}/bomb.txt"))
            && r.stderr.contains("134217728")
            && r.stderr.contains("--max-inflated"),
        "{}",
        r.stderr
    );
    assert!(
        r.max_rss_kib < MAX_RSS_KIB,
        "object bomb: max RSS {} KiB",
        r.max_rss_kib
    );
    // The partial cache file went with the failed fetch.
    let left: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // The page itself (asked for in deflate): it is parsed, so it is kept
    // in memory, up to the default limit (32 MiB) and no further.
    let url = format!("{base}/bomb.html");
    let r = robot(&[
        "fetch",
        &url,
        "--strategy",
        "pipeline-deflate",
        "--cache",
        cache_dir,
    ]);
    eprintln!(
        "page bomb: exit {} max RSS {} KiB: {}",
        r.code,
        r.max_rss_kib,
        r.stderr.trim()
    );
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains(&url) && r.stderr.contains("33554432"),
        "{}",
        r.stderr
    );
    assert!(
        r.max_rss_kib < MAX_RSS_KIB,
        "page bomb: max RSS {} KiB",
        r.max_rss_kib
    );

    // Not asked for and not told: kept as sent (the 1 MB on the wire),
    // with a warning, and the fetch succeeds.
    let url = format!("{base}/");
    let r = robot(&["fetch", &url, "--strategy", "pipeline", "--json"]);
    eprintln!("unasked: exit {} max RSS {} KiB", r.code, r.max_rss_kib);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let obj = v["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["url"].as_str().unwrap().ends_with("/bomb.txt"))
        .unwrap();
    assert_eq!(obj["size"].as_u64(), Some(bomb.len() as u64));
    assert!(
        r.stderr.contains("not asked for") || v["warnings"].to_string().contains("not asked for")
    );
    assert!(
        r.max_rss_kib < MAX_RSS_KIB,
        "unasked: max RSS {} KiB",
        r.max_rss_kib
    );
}
