//! The robot against hostile servers: scripted byte streams on
//! loopback that trickle, send endless interim responses, reset mid-body,
//! or answer with heads no client should take.

use std::time::{Duration, Instant};

use pagewire_client::{fetch, FetchConfig, FetchError, Strategy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does once it has read a request for the slow object.
#[derive(Clone, Copy)]
enum Script {
    /// A 200 head promising 100,000 bytes, then one byte every `every`.
    Trickle { every: Duration },
    /// `100 Continue` heads every `every`, never a final response.
    Continues { every: Duration },
    /// A head promising 100,000 bytes, 1000 of them, then a TCP reset.
    ResetMidBody,
    /// `103 Early Hints` heads as fast as the socket takes them (the
    /// robot must not spin on these forever).
    FastInterim,
    /// A chunked 200 whose chunks never end, as fast as the socket takes
    /// them.
    EndlessChunked,
    /// This exact response, then close.
    Verbatim(&'static [u8]),
}

const PAGE: &[u8] = b"<html><body><img src=/ok.gif><img src=/slow.gif></body></html>";

async fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    // Bounded by the 5 s timeout per read.
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = buf.drain(..i + 4).collect();
            return Some(String::from_utf8_lossy(&head).into_owned());
        }
        let mut tmp = [0u8; 4096];
        match tokio::time::timeout(Duration::from_secs(5), s.read(&mut tmp)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&tmp[..n]),
            _ => return None,
        }
    }
}

fn ok(body: &[u8], ctype: &str) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// Serves `/` (a page with `/ok.gif` and `/slow.gif`) and `/ok.gif`
/// normally; `/slow.gif` gets `script`. One request at a time per
/// connection, in order (pipelined requests wait in the socket).
async fn server(script: Script) -> (String, tokio::task::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let h = tokio::spawn(async move {
        // Bounded: a test makes a few connections at most.
        for _ in 0..32 {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                // Bounded by the robot's requests (read_head times out).
                while let Some(head) = read_head(&mut s, &mut buf).await {
                    let path = head.split(' ').nth(1).unwrap_or("").to_string();
                    let http10 = head.lines().next().unwrap_or("").ends_with("1.0");
                    match path.as_str() {
                        "/" => {
                            if s.write_all(&ok(PAGE, "text/html")).await.is_err() {
                                return;
                            }
                        }
                        "/slow.gif" => {
                            run(script, &mut s).await;
                            return;
                        }
                        _ => {
                            if s.write_all(&ok(b"GIF89a", "image/gif")).await.is_err() {
                                return;
                            }
                        }
                    }
                    if http10 {
                        return;
                    }
                }
            });
        }
    });
    (url, h)
}

async fn run(script: Script, s: &mut TcpStream) {
    match script {
        Script::Trickle { every } => {
            let head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";
            if s.write_all(head).await.is_err() {
                return;
            }
            // Bounded: 100 s worth of bytes at most; the robot leaves first.
            for _ in 0..(100_000 / every.as_millis().max(1) as usize).max(1) {
                tokio::time::sleep(every).await;
                if s.write_all(b"x").await.is_err() {
                    return;
                }
            }
        }
        Script::Continues { every } => {
            // Bounded as above.
            for _ in 0..(100_000 / every.as_millis().max(1) as usize).max(1) {
                if s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.is_err() {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        }
        Script::ResetMidBody => {
            let mut r = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec();
            r.extend(std::iter::repeat_n(b'x', 1000));
            let _ = s.write_all(&r).await;
            // The script's behaviour: the reset comes after part of the
            // body (mid-body), not with the head.
            tokio::time::sleep(Duration::from_millis(50)).await;
            // SO_LINGER 0: close sends RST.
            let _ = s.set_zero_linger();
        }
        Script::Verbatim(b) => {
            let _ = s.write_all(b).await;
        }
        Script::FastInterim => {
            let heads =
                b"HTTP/1.1 103 Early Hints\r\nLink: </ok.gif>; rel=preload\r\n\r\n".repeat(256);
            let t0 = Instant::now();
            // Bounded: 30 s at most; the robot leaves first.
            while t0.elapsed() < Duration::from_secs(30) {
                if s.write_all(&heads).await.is_err() {
                    return;
                }
            }
        }
        Script::EndlessChunked => {
            if s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            let mut chunk = b"4000\r\n".to_vec();
            chunk.extend(std::iter::repeat_n(b'x', 0x4000));
            chunk.extend_from_slice(b"\r\n");
            let t0 = Instant::now();
            // Bounded: 30 s at most; the robot leaves first.
            while t0.elapsed() < Duration::from_secs(30) {
                if s.write_all(&chunk).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn cfg(url: String, strategy: Strategy) -> FetchConfig {
    let mut c = FetchConfig::new(url, strategy);
    c.timeouts.read = Duration::from_millis(600);
    c.timeouts.total = Duration::from_secs(20);
    c
}

/// One byte every 100 ms never lets the read timeout (600 ms) fire; the
/// minimum rate (100 B/s over 600 ms windows: 60 bytes) does.
#[tokio::test]
async fn trickle_fails_the_minimum_rate_naming_the_object() {
    for strategy in [Strategy::Pipeline, Strategy::Http10] {
        let (url, h) = server(Script::Trickle {
            every: Duration::from_millis(100),
        })
        .await;
        let t0 = Instant::now();
        let err = fetch(cfg(url, strategy)).await.expect_err("must fail");
        h.abort();
        assert!(
            matches!(err, FetchError::TooSlow { .. }),
            "{strategy}: {err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("/slow.gif"), "{msg}");
        assert!(msg.contains("minimum rate of 100 B/s"), "{msg}");
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    }
}

/// With the rate check off, the object deadline bounds the trickle.
#[tokio::test]
async fn trickle_hits_the_object_deadline_naming_the_object() {
    let (url, h) = server(Script::Trickle {
        every: Duration::from_millis(50),
    })
    .await;
    let mut c = cfg(url, Strategy::Http11);
    c.timeouts.min_rate = 0;
    c.timeouts.object = Duration::from_millis(1500);
    let t0 = Instant::now();
    let err = fetch(c).await.expect_err("must fail");
    h.abort();
    assert!(matches!(err, FetchError::ObjectDeadline { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("/slow.gif") && msg.contains("object deadline"),
        "{msg}"
    );
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(4),
        "{took:?}"
    );
}

/// `100 Continue` every 20 ms (1250 B/s of interim heads): not progress.
#[tokio::test]
async fn endless_continues_are_not_progress() {
    let (url, h) = server(Script::Continues {
        every: Duration::from_millis(20),
    })
    .await;
    let t0 = Instant::now();
    let err = fetch(cfg(url.clone(), Strategy::Pipeline))
        .await
        .expect_err("must fail");
    h.abort();
    assert!(matches!(err, FetchError::TooSlow { .. }), "{err:?}");
    assert!(err.to_string().contains("/slow.gif"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(4));

    // And without the rate check, the object deadline ends them.
    let (url, h) = server(Script::Continues {
        every: Duration::from_millis(20),
    })
    .await;
    let mut c = cfg(url, Strategy::Pipeline);
    c.timeouts.min_rate = 0;
    c.timeouts.object = Duration::from_secs(1);
    let err = fetch(c).await.expect_err("must fail");
    h.abort();
    assert!(matches!(err, FetchError::ObjectDeadline { .. }), "{err:?}");
    assert!(err.to_string().contains("/slow.gif"), "{err}");
}

/// A client's error says what the server did, never the
/// status a server would have answered with.
#[tokio::test]
async fn errors_do_not_quote_server_status_codes() {
    let long_field = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 3\r\n\r\nGIF",
            "a".repeat(70_000)
        )
        .into_boxed_str(),
    )
    .as_bytes();
    for (bad, what) in [
        (
            &b"HTTP/1.1 two hundred OK\r\nContent-Length: 3\r\n\r\nGIF"[..],
            "malformed status line",
        ),
        (long_field, "too long"),
        (
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..],
            "invalid chunk size",
        ),
    ] {
        let (url, h) = server(Script::Verbatim(bad)).await;
        let err = fetch(cfg(url, Strategy::Pipeline))
            .await
            .expect_err("must fail");
        h.abort();
        let msg = err.to_string();
        assert!(msg.contains("/slow.gif") && msg.contains(what), "{msg}");
        assert!(msg.contains("the server sent"), "{msg}");
        for code in ["(400)", "(431)", "(502)", "(414)", "(501)"] {
            assert!(!msg.contains(code), "quotes a status code: {msg}");
        }
    }
}

/// A reset in the middle of a body: the error says "connection reset".
#[tokio::test]
async fn reset_mid_body_says_connection_reset() {
    for strategy in [Strategy::Pipeline, Strategy::Http10] {
        let (url, h) = server(Script::ResetMidBody).await;
        let err = fetch(cfg(url, strategy)).await.expect_err("must fail");
        h.abort();
        let msg = err.to_string();
        assert!(msg.contains("/slow.gif"), "{strategy}: {msg}");
        assert!(msg.contains("connection reset"), "{strategy}: {msg}");
    }
}

type Route = std::sync::Arc<dyn Fn(&str) -> Vec<u8> + Send + Sync>;

/// Answers each request head with `route(head)`, keeping the connection
/// open (HTTP/1.0 requests: closed after one response).
async fn routes(route: Route) -> (String, tokio::task::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let h = tokio::spawn(async move {
        // Bounded: a test makes a few dozen connections at most.
        for _ in 0..64 {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let route = route.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                // Bounded by the robot's requests (read_head times out).
                while let Some(head) = read_head(&mut s, &mut buf).await {
                    if s.write_all(&route(&head)).await.is_err() {
                        return;
                    }
                    if head.lines().next().unwrap_or("").ends_with("1.0") {
                        return;
                    }
                }
            });
        }
    });
    (url, h)
}

fn path_of(head: &str) -> &str {
    head.split(' ').nth(1).unwrap_or("")
}

fn moved(to: &str) -> Vec<u8> {
    format!("HTTP/1.1 301 Moved Permanently\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n")
        .into_bytes()
}

/// A redirected page is followed only on request, the chain
/// is in the report, and a loop is an error naming the URL.
#[tokio::test]
async fn page_redirects_are_followed_on_request() {
    let (base, h) = routes(std::sync::Arc::new(|head: &str| match path_of(head) {
        "/old" => moved("/mid"),
        "/mid" => moved("/new/index.html"),
        "/new/index.html" => ok(b"<img src=pic.gif>", "text/html"),
        "/loop1" => moved("/loop2"),
        "/loop2" => moved("/loop1"),
        "/tls" => moved("https://example.test/"),
        _ => ok(b"GIF89a", "image/gif"),
    }))
    .await;
    // Not asked: the 301 is the page's status, nothing else is fetched.
    let r = fetch(cfg(format!("{base}/old"), Strategy::Pipeline))
        .await
        .unwrap();
    assert_eq!(r.objects.len(), 1);
    assert_eq!(r.objects[0].status, 301);
    assert_eq!(r.failed_objects().count(), 1);
    assert!(r.summary().contains("NOT FOLLOWED 301"), "{}", r.summary());

    for strategy in [Strategy::Pipeline, Strategy::Http10] {
        let mut c = cfg(format!("{base}/old"), strategy);
        c.max_redirects = 2;
        let r = fetch(c).await.unwrap();
        assert_eq!(r.url, format!("{base}/new/index.html"));
        assert_eq!(r.redirects, [format!("{base}/old"), format!("{base}/mid")]);
        assert_eq!(r.objects.len(), 2, "{strategy}");
        assert!(r.objects.iter().any(|o| o.url.ends_with("/new/pic.gif")));
        assert_eq!(r.failed_objects().count(), 0);
        assert!(r.to_json().contains("\"redirects\":["));
    }
    // One hop allowed, two needed: stop with the 301 and say so.
    let mut c = cfg(format!("{base}/old"), Strategy::Pipeline);
    c.max_redirects = 1;
    let r = fetch(c).await.unwrap();
    assert_eq!(r.objects[0].status, 301);
    assert!(
        r.warnings.iter().any(|w| w.contains("not followed")),
        "{:?}",
        r.warnings
    );

    let mut c = cfg(format!("{base}/loop1"), Strategy::Pipeline);
    c.max_redirects = 10;
    let err = fetch(c).await.unwrap_err().to_string();
    assert!(err.contains("/loop") && err.contains("loop"), "{err}");

    let mut c = cfg(format!("{base}/tls"), Strategy::Pipeline);
    c.max_redirects = 10;
    let err = fetch(c).await.unwrap_err().to_string();
    assert!(
        err.contains("/tls") && err.contains("https://example.test/"),
        "{err}"
    );
    h.abort();
}

/// A page with more references than the object limit is cut
/// short, and the report says so (warning and JSON field). Duplicates do
/// not count toward the limit.
#[tokio::test]
async fn object_limit_is_reported() {
    let limit = pagewire_discover::MAX_REFERENCES;
    let mut page = String::from("<html><body>");
    // Many copies of one image first: one object, not many.
    page.push_str(&"<img src=/same.gif>".repeat(limit + 10));
    for i in 0..limit + 50 {
        page.push_str(&format!("<img src=/i{i}.gif>"));
    }
    let page: &'static [u8] = Box::leak(page.into_bytes().into_boxed_slice());
    let (base, h) = routes(std::sync::Arc::new(move |head: &str| match path_of(head) {
        "/" => ok(page, "text/html"),
        _ => ok(b"G", "image/gif"),
    }))
    .await;
    let mut c = cfg(format!("{base}/"), Strategy::Pipeline);
    c.timeouts.total = Duration::from_secs(120);
    let r = fetch(c).await.unwrap();
    h.abort();
    assert_eq!(r.objects.len(), limit);
    // The page, /same.gif and 9,998 of the numbered images were fetched.
    assert_eq!(r.references_not_fetched, 52);
    assert!(
        r.warnings.iter().any(|w| w.contains("object limit")),
        "{:?}",
        r.warnings
    );
    assert!(r.summary().contains("LIMIT: 52 references not fetched"));
    assert!(r.to_json().contains("\"references_not_fetched\":52"));
}

/// Deflate the robot did not ask for is kept as sent (not
/// inflated) unless told; when inflated, the size limit holds.
#[tokio::test]
async fn unasked_and_oversized_deflate() {
    use flate2::{write::ZlibEncoder, Compression};
    use std::io::Write;
    let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..8 {
        z.write_all(&zeros).unwrap();
    }
    let bomb: &'static [u8] = Box::leak(z.finish().unwrap().into_boxed_slice());
    let (base, h) = routes(std::sync::Arc::new(move |head: &str| {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
            bomb.len()
        )
        .into_bytes();
        r.extend_from_slice(bomb);
        let _ = head;
        r
    }))
    .await;
    // Pipeline asks for no coding: the body stays as sent.
    let r = fetch(cfg(format!("{base}/"), Strategy::Pipeline))
        .await
        .unwrap();
    assert_eq!(r.objects[0].size, bomb.len() as u64);
    assert!(
        r.warnings.iter().any(|w| w.contains("not asked for")),
        "{:?}",
        r.warnings
    );
    // Told to decode: inflated, within the default limit (8 MiB < 32 MiB).
    let mut c = cfg(format!("{base}/"), Strategy::Pipeline);
    c.decode_unasked = true;
    let r = fetch(c).await.unwrap();
    assert_eq!(r.objects[0].size, 8 << 20);
    // Asked (pipeline-deflate) but over a 1 MiB limit: the object fails.
    let mut c = cfg(format!("{base}/"), Strategy::PipelineDeflate);
    c.max_inflated = 1 << 20;
    let err = fetch(c).await.unwrap_err().to_string();
    assert!(
        err.contains("inflated-size limit") && err.contains(&base),
        "{err}"
    );
    h.abort();
}

/// An all-304 revalidation rewrites no cache entry.
#[tokio::test]
async fn not_modified_rewrites_nothing() {
    use std::os::unix::fs::MetadataExt;
    let (base, h) = routes(std::sync::Arc::new(|head: &str| {
        let etag = format!("\"{}\"", path_of(head).len());
        if head.to_ascii_lowercase().contains("if-none-match") {
            return format!("HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\n\r\n").into_bytes();
        }
        let (body, ct): (&[u8], _) = match path_of(head) {
            "/" => (b"<img src=/a.gif><img src=/b.gif>", "text/html"),
            _ => (b"GIF89a", "image/gif"),
        };
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nETag: {etag}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(format!("{base}/"), Strategy::Pipeline);
    c.cache_dir = Some(dir.path().to_path_buf());
    fetch(c.clone()).await.unwrap();
    let inodes = || {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().ino(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = inodes();
    assert_eq!(before.len(), 6, "a body and a meta file per object");
    c.revalidate = true;
    let r = fetch(c).await.unwrap();
    h.abort();
    assert_eq!(r.status_count(304), 3);
    assert_eq!(inodes(), before, "entries were rewritten");
    assert_eq!(r.cache_bytes_written, 0);
}

/// A 304 with new validators updates the meta files only:
/// every body file keeps its inode and modification time, and the bytes
/// written are the meta files' (before: every entry, bodies included, was
/// written again — 40 MB for the Microscape page's 50 revalidations).
#[tokio::test]
async fn not_modified_with_new_validators_updates_metadata_only() {
    use std::os::unix::fs::MetadataExt;
    const IMAGE: usize = 200_000;
    let (base, h) = routes(std::sync::Arc::new(|head: &str| {
        let conditional = head.to_ascii_lowercase().contains("if-none-match");
        // Every answer carries a new ETag (a server that re-tags on each
        // response), so every 304 brings validators the cache lacks.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let etag = format!("\"{}-{n}\"", path_of(head).len());
        if conditional {
            return format!("HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\n\r\n").into_bytes();
        }
        let image = vec![b'G'; IMAGE];
        let (body, ct): (&[u8], _) = match path_of(head) {
            "/" => (b"<img src=/a.gif><img src=/b.gif>", "text/html"),
            _ => (&image, "image/gif"),
        };
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nETag: {etag}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(format!("{base}/"), Strategy::Pipeline);
    c.cache_dir = Some(dir.path().to_path_buf());
    let first = fetch(c.clone()).await.unwrap();
    assert!(first.cache_bytes_written > 2 * IMAGE as u64);
    let cache = pagewire_client::Cache::open(dir.path()).unwrap();
    let bodies = || {
        first
            .objects
            .iter()
            .map(|o| {
                let m = std::fs::metadata(cache.path_of(&o.url)).unwrap();
                (m.ino(), m.mtime(), m.mtime_nsec())
            })
            .collect::<Vec<_>>()
    };
    let before = bodies();
    // Part of the check, not a synchronisation: a rewrite after 20 ms
    // would show in the mtime even with a coarse (jiffy) file clock.
    std::thread::sleep(Duration::from_millis(20));
    c.revalidate = true;
    let r = fetch(c).await.unwrap();
    h.abort();
    assert_eq!(r.status_count(304), 3);
    assert_eq!(bodies(), before, "a body file was rewritten");
    assert!(
        r.cache_bytes_written > 0 && r.cache_bytes_written < 2000,
        "{} bytes written",
        r.cache_bytes_written
    );
    for o in &r.objects {
        let meta = cache.get_meta(&o.url).unwrap().unwrap();
        assert_eq!(meta.etag, o.etag, "{}", o.url);
        assert!(cache.get(&o.url).unwrap().is_some());
    }
}

/// The whole-fetch limit names what it was still waiting for.
#[tokio::test]
async fn total_timeout_names_the_object() {
    let (url, h) = server(Script::Trickle {
        every: Duration::from_millis(50),
    })
    .await;
    let mut c = cfg(url, Strategy::Pipeline);
    c.timeouts.min_rate = 0;
    c.timeouts.total = Duration::from_secs(1);
    let err = fetch(c).await.expect_err("must fail").to_string();
    h.abort();
    assert!(
        err.contains("still waiting for") && err.contains("/slow.gif"),
        "{err}"
    );
}

/// An inflated object kept for the cache goes to a cache file
/// as it is inflated; the entry is whole and checked, and no temporary
/// file is left.
#[tokio::test]
async fn inflated_objects_are_spooled_into_the_cache() {
    use flate2::{write::ZlibEncoder, Compression};
    use std::io::Write;
    let text: Vec<u8> = (0..200_000u32)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
    z.write_all(&text).unwrap();
    let zipped: &'static [u8] = Box::leak(z.finish().unwrap().into_boxed_slice());
    let (base, h) = routes(std::sync::Arc::new(move |head: &str| {
        if path_of(head) == "/" {
            return ok(b"<html><img src=/big.txt></html>", "text/html");
        }
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nETag: \"z\"\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
            zipped.len()
        )
        .into_bytes();
        r.extend_from_slice(zipped);
        r
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(format!("{base}/"), Strategy::PipelineDeflate);
    c.cache_dir = Some(dir.path().to_path_buf());
    let r = fetch(c).await.unwrap();
    h.abort();
    let big = r
        .objects
        .iter()
        .find(|o| o.url.ends_with("/big.txt"))
        .unwrap();
    assert_eq!(big.size, text.len() as u64);
    assert_eq!(big.body_bytes_received, zipped.len() as u64);
    let cache = pagewire_client::Cache::open(dir.path()).unwrap();
    let e = cache.get(&big.url).unwrap().unwrap();
    assert_eq!(e.body.len(), text.len());
    assert!(e.body[..] == text[..]);
    assert_eq!(e.meta.body_sha256, big.sha256);
    assert_eq!(e.meta.etag.as_deref(), Some("\"z\""));
    let tmp = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".tmp")
        })
        .count();
    assert_eq!(tmp, 0);
}

/// A flood of `103` heads as fast as the socket takes them
/// ends at the interim bound, at once, naming the object; on a
/// current-thread runtime, as the CLI runs the robot.
#[tokio::test(flavor = "current_thread")]
async fn fast_interim_flood_ends_at_the_interim_bound() {
    for strategy in [Strategy::Pipeline, Strategy::Http10] {
        let (url, h) = server(Script::FastInterim).await;
        let mut c = cfg(url, strategy);
        c.timeouts.object = Duration::from_secs(3);
        let t0 = Instant::now();
        let err = fetch(c).await.expect_err("must fail");
        h.abort();
        let msg = err.to_string();
        assert!(msg.contains("/slow.gif"), "{strategy}: {msg}");
        assert!(msg.contains("interim (1xx) responses"), "{strategy}: {msg}");
        // Well before the object deadline (it used to run until killed).
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    }
}

/// An endless chunked body as fast as the socket takes it
/// ends at the object deadline (checked on the read path: the socket is
/// never empty, so a timer branch alone may never run).
#[tokio::test(flavor = "current_thread")]
async fn endless_chunked_body_ends_at_the_object_deadline() {
    let (url, h) = server(Script::EndlessChunked).await;
    let mut c = cfg(url, Strategy::Pipeline);
    c.timeouts.min_rate = 0;
    c.timeouts.object = Duration::from_millis(1500);
    let t0 = Instant::now();
    let err = fetch(c).await.expect_err("must fail");
    h.abort();
    assert!(matches!(err, FetchError::ObjectDeadline { .. }), "{err:?}");
    let took = t0.elapsed();
    assert!(err.to_string().contains("/slow.gif"), "{err}");
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    // Bound: within 1 s of the deadline; loose for a loaded machine.
    assert!(took < Duration::from_millis(1500 + 2500), "{took:?}");
}
