//! Record and replay: `pagewire record` against a local nginx,
//! `pagewire serve --replay` to the robot (byte-exact, every strategy) and
//! to headless Chromium, and the replay server's matching (Host, query,
//! HEAD, conditional requests, unknown URLs) over several origins.

mod common;
mod schema;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{run_bounded, sha256_hex, PW};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A small multi-file site: a page, a stylesheet, a script, two images
/// (one requested with two different queries).
fn make_site(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let html = b"<!doctype html><html><head><title>replay</title>\n\
<link rel=\"stylesheet\" href=\"style.css\"><script src=\"app.js\"></script></head>\n\
<body><h1>Recorded</h1><img src=\"img/a.gif\"><img src=\"img/b.bin?v=2\"><img src=\"img/b.bin?v=3\">\n\
</body></html>\n"
        .to_vec();
    let css = "body { color: #333; margin: 0 auto; }\n"
        .repeat(60)
        .into_bytes();
    let js = "var replayed = (replayed || 0) + 1;\n"
        .repeat(40)
        .into_bytes();
    // Binary bodies with every byte value, CR and LF included.
    let gif: Vec<u8> = b"GIF89a"
        .iter()
        .copied()
        .chain((0..4000u32).map(|i| (i * 7 % 256) as u8))
        .collect();
    let bin: Vec<u8> = (0..9000u32).map(|i| (i * 13 + i / 256) as u8).collect();
    let files = [
        ("/index.html", html),
        ("/style.css", css),
        ("/app.js", js),
        ("/img/a.gif", gif),
        ("/img/b.bin", bin),
    ];
    let mut out = BTreeMap::new();
    for (p, b) in files {
        let path = root.join(&p[1..]);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &b).unwrap();
        out.insert(p.to_string(), b);
    }
    out
}

/// Expected body per recorded request target.
fn expected(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    let mut e = BTreeMap::new();
    for (p, b) in files {
        if p == "/img/b.bin" {
            e.insert("/img/b.bin?v=2".to_string(), b.clone());
            e.insert("/img/b.bin?v=3".to_string(), b.clone());
        } else {
            e.insert(p.clone(), b.clone());
        }
    }
    e
}

/// nginx serving `root` on 127.0.0.1:`port`, killed on drop.
struct Nginx {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start(root: &Path, port: u16) -> Option<Nginx> {
        let bin = pagewire_testreq::require_peer("nginx")?;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let conf = format!(
            "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;\n\
             error_log {d}/error.log warn; events {{ worker_connections 64; }}\n\
             http {{ types {{ text/html html; text/css css; application/javascript js; image/gif gif; }}\n\
             default_type application/octet-stream; access_log off;\n\
             client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;\n\
             uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;\n\
             server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n",
            root = root.display()
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        let n = Nginx { child, _dir: dir };
        wait_listening(format!("127.0.0.1:{port}").parse().unwrap());
        Some(n)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_listening(addr: SocketAddr) {
    let t = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{addr} not listening"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `pagewire serve --replay FILE` on `addr`, stopped with SIGTERM on drop
/// (so its access log is complete); stderr goes to a file.
struct Replay {
    child: Child,
    stderr: PathBuf,
    access_log: PathBuf,
}

impl Replay {
    fn start(archive: &Path, addr: &str, dir: &Path, extra: &[&str]) -> Replay {
        let stderr = dir.join("serve.err");
        let access_log = dir.join("access.log");
        let mut child = Command::new(PW)
            .args(["serve", "--replay"])
            .arg(archive)
            .args(["--addr", addr, "--threads", "1", "--access-log"])
            .arg(&access_log)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn pagewire serve --replay");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with("listening on "),
            "serve --replay: {line:?}; stderr: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        Replay {
            child,
            stderr,
            access_log,
        }
    }

    /// Stops the server gracefully and returns (stderr, access log).
    fn stop(mut self) -> (String, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if t.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        (
            std::fs::read_to_string(&self.stderr).unwrap_or_default(),
            std::fs::read_to_string(&self.access_log).unwrap_or_default(),
        )
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Records the fixture from nginx as `http://replay.test:PORT/` into
/// `out`; returns the port.
fn record(files_root: &Path, out: &Path) -> Option<u16> {
    let port = free_port();
    let nginx = Nginx::start(files_root, port)?;
    let url = format!("http://replay.test:{port}/index.html");
    let (o, _, _) = run_bounded(
        Command::new(PW).args([
            "record",
            &url,
            "--with",
            "robot",
            "--resolve",
            &format!("replay.test:{port}:127.0.0.1"),
            "--out",
            out.to_str().unwrap(),
        ]),
        Duration::from_secs(60),
        "pagewire record",
    );
    assert!(
        o.status.success(),
        "record: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    drop(nginx);
    Some(port)
}

#[test]
fn a_warc_recorded_from_nginx_replays_byte_exact_to_the_robot() {
    let dir = tempfile::tempdir().unwrap();
    let files = make_site(&dir.path().join("site"));
    let want = expected(&files);
    for name in ["site.warc", "site.warc.gz"] {
        let archive = dir.path().join(name);
        let Some(port) = record(&dir.path().join("site"), &archive) else {
            return;
        };
        // nginx is gone: everything below comes from the archive. The
        // replay server listens on another loopback address, same port;
        // the robot resolves the recorded name to it.
        let replay = Replay::start(&archive, &format!("127.0.0.2:{port}"), dir.path(), &[]);
        let url = format!("http://replay.test:{port}/index.html");
        for strategy in ["http10", "http11", "pipeline", "pipeline-deflate"] {
            let (o, _, _) = run_bounded(
                Command::new(PW).args([
                    "fetch",
                    &url,
                    "--strategy",
                    strategy,
                    "--json",
                    "--resolve",
                    &format!("replay.test:{port}:127.0.0.2"),
                ]),
                Duration::from_secs(60),
                "pagewire fetch",
            );
            assert!(
                o.status.success(),
                "{name} {strategy}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            let objects = report["objects"].as_array().unwrap();
            let mut seen = BTreeMap::new();
            for obj in objects {
                let u = obj["url"].as_str().unwrap();
                let target =
                    &u[u.find(&format!(":{port}")).unwrap() + 1 + port.to_string().len()..];
                assert_eq!(obj["status"], 200, "{name} {strategy} {u}");
                seen.insert(
                    target.to_string(),
                    obj["sha256"].as_str().unwrap().to_string(),
                );
            }
            let want_sha: BTreeMap<String, String> = want
                .iter()
                .map(|(p, b)| (p.clone(), sha256_hex(b)))
                .collect();
            assert_eq!(seen, want_sha, "{name} {strategy}: sha256 per object");
        }
        // Revalidation: the recorded validators answer 304.
        let cache = dir.path().join(format!("cache-{name}"));
        for revalidate in [false, true] {
            let mut c = Command::new(PW);
            c.args(["fetch", &url, "--strategy", "pipeline", "--json", "--cache"])
                .arg(&cache)
                .args(["--resolve", &format!("replay.test:{port}:127.0.0.2")]);
            if revalidate {
                c.arg("--revalidate");
            }
            let (o, _, _) = run_bounded(&mut c, Duration::from_secs(60), "pagewire fetch");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            if revalidate {
                let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                for obj in report["objects"].as_array().unwrap() {
                    assert_eq!(obj["status"], 304, "{obj}");
                }
            }
        }
        // The robot's HAR keeps the bodies: it replays too.
        let har = dir.path().join(format!("{name}.har"));
        let (o, _, _) = run_bounded(
            Command::new(PW)
                .args(["fetch", &url, "--har"])
                .arg(&har)
                .args(["--resolve", &format!("replay.test:{port}:127.0.0.2")]),
            Duration::from_secs(60),
            "pagewire fetch --har",
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&har).unwrap()).unwrap();
        schema::check_har(&doc, "fetch --har of a replayed page");
        let (stderr, log) = replay.stop();
        let again = Replay::start(&har, &format!("127.0.0.3:{port}"), dir.path(), &[]);
        let (o, _, _) = run_bounded(
            Command::new(PW).args([
                "fetch",
                &url,
                "--json",
                "--resolve",
                &format!("replay.test:{port}:127.0.0.3"),
            ]),
            Duration::from_secs(60),
            "pagewire fetch from the HAR",
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["objects"].as_array().unwrap().len(), want.len());
        for obj in report["objects"].as_array().unwrap() {
            let u = obj["url"].as_str().unwrap();
            let target = &u[u.find(&format!(":{port}")).unwrap() + 1 + port.to_string().len()..];
            assert_eq!(
                obj["sha256"].as_str().unwrap(),
                sha256_hex(&want[target]),
                "HAR {u}"
            );
        }
        drop(again);
        assert!(stderr.contains("6 distinct requests"), "{stderr}");
        assert!(!stderr.contains("no recorded response"), "{stderr}");
        assert!(
            log.contains("\"GET /img/b.bin?v=3 HTTP/1.1\" 200 9000"),
            "{log}"
        );
    }
}

/// Sends raw requests on one connection (pipelined) and returns the raw
/// responses read until the server closes (the last request says close).
fn exchange(addr: &str, requests: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(requests.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn replay_tells_origins_queries_and_methods_apart() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(2000);
    let har = serde_json::json!({"log": {"version": "1.2", "entries": [
        {"request": {"method": "GET", "url": "http://a.test/"},
         "response": {"status": 200, "statusText": "OK", "headers": [
            {"name": "Content-Type", "value": "text/html"},
            {"name": "ETag", "value": "\"a1\""},
            {"name": "Connection", "value": "keep-alive, X-Hop"},
            {"name": "X-Hop", "value": "dropped"},
            {"name": "X-Kept", "value": "kept"},
            {"name": "Transfer-Encoding", "value": "chunked"}],
          "content": {"size": 6, "text": "page-a"}}},
        {"request": {"method": "GET", "url": "https://b.test/"},
         "response": {"status": 200, "headers": [{"name": "Content-Type", "value": "text/html"}],
          "content": {"size": 6, "text": "page-b"}}},
        {"request": {"method": "GET", "url": "http://b.test:8080/q?v=1"},
         "response": {"status": 200, "headers": [], "content": {"size": 2, "text": "v1"}}},
        {"request": {"method": "GET", "url": "http://b.test:8080/q?v=2"},
         "response": {"status": 200, "headers": [], "content": {"size": 2, "text": "v2"}}},
        {"request": {"method": "GET", "url": "http://a.test/moved"},
         "response": {"status": 302, "statusText": "Found", "headers": [{"name": "Location", "value": "/"}],
          "content": {"size": 0}}},
        {"request": {"method": "GET", "url": "http://a.test/big.css"},
         "response": {"status": 200, "headers": [{"name": "Content-Type", "value": "text/css"},
            {"name": "ETag", "value": "\"c1\""}],
          "content": {"size": 2000, "text": big}}},
        {"request": {"method": "GET", "url": "http://a.test/weak"},
         "response": {"status": 200, "headers": [{"name": "ETag", "value": "W/\"w1\""}],
          "content": {"size": 4, "text": "weak"}}}
    ]}});
    let file = dir.path().join("two.har");
    std::fs::write(&file, har.to_string()).unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let replay = Replay::start(&file, &addr, dir.path(), &["--replay-deflate"]);
    let r = exchange(
        &addr,
        "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n\
         GET / HTTP/1.1\r\nHost: B.test:80\r\n\r\n\
         GET /q?v=2 HTTP/1.1\r\nHost: b.test:8080\r\n\r\n\
         GET /q?v=1 HTTP/1.1\r\nHost: b.test:8080\r\n\r\n\
         HEAD / HTTP/1.1\r\nHost: a.test\r\n\r\n\
         GET / HTTP/1.1\r\nHost: a.test\r\nIf-None-Match: \"a1\"\r\n\r\n\
         GET /moved HTTP/1.1\r\nHost: a.test\r\n\r\n\
         GET /big.css HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: gzip, deflate\r\n\r\n\
         GET /big.css HTTP/1.1\r\nHost: a.test\r\nAccept-Encoding: deflate\r\nIf-None-Match: \"c1-deflate\"\r\n\r\n\
         GET /weak HTTP/1.1\r\nHost: a.test\r\nIf-None-Match: W/\"w1\"\r\n\r\n\
         GET /q?v=3 HTTP/1.1\r\nHost: b.test:8080\r\n\r\n\
         GET /q?x=9&v=2 HTTP/1.1\r\nHost: b.test:8080\r\n\r\n\
         GET /nothing?v=1 HTTP/1.1\r\nHost: a.test\r\n\r\n\
         GET / HTTP/1.1\r\nHost: c.test\r\nConnection: close\r\n\r\n",
    );
    let parts: Vec<&str> = r.split("HTTP/1.1 ").skip(1).collect();
    assert_eq!(parts.len(), 14, "{r}");
    assert!(
        parts[0].starts_with("200 OK") && parts[0].ends_with("page-a"),
        "{}",
        parts[0]
    );
    assert!(parts[0].contains("X-Kept: kept") && parts[0].contains("Content-Length: 6"));
    for hop in ["X-Hop", "Transfer-Encoding", "keep-alive"] {
        assert!(!parts[0].contains(hop), "{hop} replayed: {}", parts[0]);
    }
    assert!(
        parts[1].ends_with("page-b"),
        "https record served by Host: {}",
        parts[1]
    );
    assert!(parts[2].ends_with("v2") && parts[3].ends_with("v1"), "{r}");
    assert!(
        parts[4].starts_with("200")
            && parts[4].contains("Content-Length: 6")
            && !parts[4].contains("page-a")
    );
    assert!(
        parts[5].starts_with("304") && parts[5].contains("ETag: \"a1\""),
        "{}",
        parts[5]
    );
    assert!(
        parts[6].starts_with("302 Found") && parts[6].contains("Location: /"),
        "{}",
        parts[6]
    );
    assert!(
        parts[7].contains("Content-Encoding: deflate"),
        "{}",
        parts[7]
    );
    assert!(parts[7].contains("ETag: \"c1-deflate\""), "{}", parts[7]);
    // The deflate variant and a recorded weak tag revalidate.
    assert!(
        parts[8].starts_with("304") && parts[8].contains("c1-deflate"),
        "{}",
        parts[8]
    );
    assert!(parts[9].starts_with("304"), "{}", parts[9]);
    // No exact match: WprGo's fuzzy rule. Same path, the most query
    // parameters in common (v=2), else the earliest recorded (v=1).
    assert!(
        parts[10].starts_with("200") && parts[10].ends_with("v1"),
        "{}",
        parts[10]
    );
    assert!(
        parts[11].starts_with("200") && parts[11].ends_with("v2"),
        "{}",
        parts[11]
    );
    // A miss tells the client why, in its 404 body.
    assert!(
        parts[12].starts_with("404")
            && parts[12].ends_with(
                "no recorded response for GET /nothing?v=1 (Host: a.test): \
             the archive has no GET of /nothing on a.test, with any query\n"
            ),
        "{}",
        parts[12]
    );
    assert!(
        parts[13].starts_with("404")
            && parts[13].ends_with("(Host: c.test): the archive has no origin c.test\n"),
        "{}",
        parts[13]
    );
    let (stderr, _) = replay.stop();
    assert!(
        stderr.contains(
            "replay: no recorded response for GET / (Host: c.test): the archive has no origin c.test"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("replay misses (404, no recorded answer): 2"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("/q?v=3"),
        "a fuzzy match is no miss: {stderr}"
    );
}

/// Kills a process group on drop (the browser and its helpers).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn chromium_loads_the_replayed_page_with_every_recorded_object() {
    let Some(chromium) = pagewire_testreq::require_any_peer(&["chromium", "chromium-browser"])
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files = make_site(&dir.path().join("site"));
    let want = expected(&files);
    let archive = dir.path().join("site.warc.gz");
    let Some(port) = record(&dir.path().join("site"), &archive) else {
        return;
    };
    let replay = Replay::start(&archive, &format!("127.0.0.2:{port}"), dir.path(), &[]);
    let profile = dir.path().join("chromium-profile");
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * 127.0.0.2",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("http://replay.test:{port}/index.html"))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut browser = Group(cmd.spawn().expect("spawn chromium"));
    let mut out = browser.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut dom = String::new();
        let _ = out.read_to_string(&mut dom);
        let _ = tx.send(dom);
    });
    let dom = rx
        .recv_timeout(Duration::from_secs(90))
        .expect("chromium did not print the page within 90 s");
    drop(browser);
    assert!(dom.contains("<h1>Recorded</h1>"), "DOM: {dom}");
    let (_, log) = replay.stop();
    // Every recorded object was served 200 with its recorded length.
    for (target, body) in &want {
        let line = format!("\"GET {target} HTTP/1.1\" 200 {}", body.len());
        assert!(
            log.contains(&line),
            "missing {line:?} in the access log:\n{log}"
        );
    }
}

/// `bench --replay FILE --quick` (smoke test, LAN only): the recorded site
/// in place of the Microscape page, every strategy, first time and
/// revalidation, every object intact.
#[test]
fn bench_replay_quick_measures_the_recorded_site() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    make_site(&dir.path().join("site"));
    let archive = dir.path().join("site.warc");
    if record(&dir.path().join("site"), &archive).is_none() {
        return;
    }
    let out = dir.path().join("bench");
    let (o, _, _) = run_bounded(
        Command::new(PW)
            .args(["bench", "--replay"])
            .arg(&archive)
            .args(["--quick", "--net", "lan", "--no-progress", "--out"])
            .arg(&out),
        Duration::from_secs(180),
        "pagewire bench --replay --quick",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("Recorded page (replayed from site.warc)"),
        "{text}"
    );
    assert!(text.contains("HTTP/1.1 Pipelined w. compression"), "{text}");
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let runs = results["runs"].as_array().unwrap();
    assert!(runs.len() >= 8, "{} runs", runs.len());
    for r in runs {
        assert_eq!(r["objects_ok"], 6, "{r}");
        assert_eq!(r["objects_expected"], 6, "{r}");
        assert!(r["error"].is_null(), "{r}");
    }
}

/// A WARC written by another tool: `wget -p --warc-file` (WARC/1.0,
/// bracketed target URIs, gzip per record, robots.txt and resource
/// records besides) replays byte-exact to the robot.
#[test]
fn a_wget_warc_replays_byte_exact() {
    let Some(wget) = pagewire_testreq::require_peer("wget") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let files = make_site(&dir.path().join("site"));
    let want = expected(&files);
    let port = free_port();
    let Some(nginx) = Nginx::start(&dir.path().join("site"), port) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/index.html");
    let (o, _, _) = run_bounded(
        Command::new(wget)
            .current_dir(dir.path())
            .args(["-q", "-p", "--warc-file=wget", &url]),
        Duration::from_secs(60),
        "wget --warc-file",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    drop(nginx);
    let replay = Replay::start(
        &dir.path().join("wget.warc.gz"),
        &format!("127.0.0.2:{port}"),
        dir.path(),
        &[],
    );
    let (o, _, _) = run_bounded(
        Command::new(PW).args([
            "fetch",
            &url,
            "--json",
            "--resolve",
            &format!("127.0.0.1:{port}:127.0.0.2"),
        ]),
        Duration::from_secs(60),
        "pagewire fetch",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let objects = report["objects"].as_array().unwrap();
    assert_eq!(objects.len(), want.len());
    for obj in objects {
        let u = obj["url"].as_str().unwrap();
        let target = &u[u.find(&format!(":{port}")).unwrap() + 1 + port.to_string().len()..];
        assert_eq!(obj["status"], 200, "{u}");
        assert_eq!(
            obj["sha256"].as_str().unwrap(),
            sha256_hex(&want[target]),
            "{u}"
        );
    }
    let (stderr, _) = replay.stop();
    assert!(stderr.contains("replaying"), "{stderr}");
}
