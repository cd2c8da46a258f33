//! Decompression amplification: a hostile local server sends
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
/// `/bomb.html` (`bomb`, `Content-Encoding: deflate` whatever the request
/// asked for); `/slowpage` (a page with `/slow.txt`) and `/slow.txt`
/// (`bomb` again, in 64 KiB pieces 100 ms apart). Runs until the test ends.
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
        let resp = if path == "/" || path == "/slowpage" {
            let page: &[u8] = if path == "/" {
                b"<html><body><p>bomb below</p><img src=/bomb.txt></body></html>"
            } else {
                b"<html><body><p>slow below</p><img src=/slow.txt></body></html>"
            };
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
        if path == "/slow.txt" {
            // Bounded by the body's length.
            for piece in resp.chunks(64 * 1024) {
                if s.write_all(piece).is_err() {
                    return;
                }
                // The behaviour: a slow body, so the client is still
                // spooling it when the test kills it.
                std::thread::sleep(Duration::from_millis(100));
            }
            continue;
        }
        if s.write_all(&resp).is_err() {
            return;
        }
    }
}

/// `kill -9` while an inflated object streams into its cache file: what is
/// left is a temporary file, never an entry; the next run removes it once
/// stale, fetches the object again and stores a whole, checked entry.
#[test]
fn kill_9_mid_spool_leaves_nothing_served() {
    let text: Vec<u8> = (0..600_000u32)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&text).unwrap();
    let zipped = Arc::new(z.finish().unwrap());
    assert!(zipped.len() > 5 * 64 * 1024, "{}", zipped.len()); // > 0.5 s
    let base = hostile_server(zipped);
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let url = format!("{base}/slowpage");
    let args = [
        "fetch",
        &url,
        "--strategy",
        "pipeline-deflate",
        "--cache",
        cache_dir,
    ];
    let mut child = Command::new(PW)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Bounded: 5 s of 20 ms polls for the spool file to grow.
    let tmp_files = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp"))
            .collect()
    };
    let t = Instant::now();
    while !tmp_files()
        .iter()
        .any(|p| std::fs::metadata(p).map_or(0, |m| m.len()) > 0)
    {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "no spool file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = tmp_files();
    assert_eq!(left.len(), 1, "{left:?}");
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    let obj = format!("{base}/slow.txt");
    assert!(c.get(&obj).unwrap().is_none(), "a partial body was stored");
    // A minute later (the file's clock moved back), the next run cleans up.
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&left[0])
        .unwrap()
        .set_modified(old)
        .unwrap();
    let r = robot(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("removed 1 temporary files")
            || r.stderr.contains("removed 1 temporary files"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(tmp_files().is_empty());
    let e = c.get(&obj).unwrap().expect("stored whole");
    assert!(e.body[..] == text[..]);
}

struct Run {
    code: i32,
    stderr: String,
    stdout: String,
    max_rss_kib: i64,
}

/// Runs `pagewire ARGS` to its end (killed after 60 s) and reads its peak
/// resident set from wait4(2). An upper bound: Linux carries the spawning
/// process's own peak (this test's, some MB) over the exec into it.
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
/// buffers (and this test's own peak, see `robot`), far below the 128 MiB
/// limit of the object case.
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
