//! `pagewire record https://...` with headless Chromium through the
//! recording proxy: a local nginx with TLS (a test CA made by
//! `pagewire_tls::issue`) serves two origins on two ports of 127.0.0.1,
//! the second over HTTP/2; the page fetches one object with `fetch()` and
//! inserts an image from the second origin after its load event. Every
//! object of both origins is recorded byte-exact with its timing, the
//! archive replays with `pagewire serve --replay`, and no process of the
//! test is left. nginx and Chromium come from scripts/setup-deps.sh; in CI
//! (`PAGEWIRE_REQUIRE_ALL=1`) a missing one fails the test.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{run_bounded, PW};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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

/// Killed on drop, also when an assertion fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Processes whose command line names `needle` (the test's own directory).
fn processes_naming(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// One GET to the replay server for `host` (the Host field picks the
/// recorded origin); returns (status line, body).
fn replay_get(addr: &str, host: &str, target: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    (
        head.lines().next().unwrap_or("").to_string(),
        out[end + 4..].to_vec(),
    )
}

#[test]
fn chromium_records_two_tls_origins_and_script_loaded_objects() {
    let Some(nginx) = pagewire_testreq::require_peer("nginx") else {
        return;
    };
    if pagewire_testreq::require_any_peer(&["chromium", "chromium-browser", "google-chrome"])
        .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (pa, pb) = (free_port(), free_port());
    let (a, b) = (format!("127.0.0.1:{pa}"), format!("127.0.0.1:{pb}"));

    // Origin A: the page, a stylesheet, data.json (fetched by a script).
    // Origin B (HTTP/2): an image named by the HTML, and late.bin, an image
    // a script inserts after the load event.
    let page = format!(
        "<!doctype html><html><head><title>rec</title>\n\
         <link rel=\"stylesheet\" href=\"/style.css\"></head><body><h1>two origins</h1>\n\
         <img src=\"https://{b}/b.gif\">\n\
         <script>\n\
         fetch('/data.json?x=1').then(r => r.text()).then(t => {{ document.title = t; }});\n\
         addEventListener('load', () => setTimeout(() => {{\n\
           const i = document.createElement('img'); i.src = 'https://{b}/late.bin';\n\
           document.body.appendChild(i); }}, 150));\n\
         </script></body></html>\n"
    );
    let gif: Vec<u8> = b"GIF89a"
        .iter()
        .copied()
        .chain((0..3000u32).map(|i| (i * 7 % 256) as u8))
        .collect();
    let late: Vec<u8> = (0..20_000u32).map(|i| (i * 13 + i / 256) as u8).collect();
    let files: Vec<(&str, String, Vec<u8>)> = vec![
        ("a", "/index.html".into(), page.into_bytes()),
        (
            "a",
            "/style.css".into(),
            "h1 { color: #345; }\n".repeat(50).into_bytes(),
        ),
        ("a", "/data.json".into(), b"{\"fetched\": true}".to_vec()),
        ("b", "/b.gif".into(), gif),
        ("b", "/late.bin".into(), late),
    ];
    for (root, path, body) in &files {
        let p = d.join(root).join(&path[1..]);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    let tls = pagewire_tls::write(
        &d.join("tls"),
        &pagewire_tls::issue(&["127.0.0.1"]).unwrap(),
    )
    .unwrap();
    let dd = d.display();
    let conf = format!(
        "daemon off; master_process off; worker_processes 1; pid {dd}/nginx.pid;\n\
         error_log {dd}/error.log warn; events {{ worker_connections 64; }}\n\
         http {{ types {{ text/html html; text/css css; application/json json; image/gif gif; }}\n\
         default_type application/octet-stream; access_log {dd}/access.log;\n\
         client_body_temp_path {dd}/tb; proxy_temp_path {dd}/tp; fastcgi_temp_path {dd}/tf;\n\
         uwsgi_temp_path {dd}/tu; scgi_temp_path {dd}/ts;\n\
         ssl_certificate {chain}; ssl_certificate_key {key};\n\
         server {{ listen {a} ssl; root {dd}/a; }}\n\
         server {{ listen {b} ssl http2; root {dd}/b; }} }}\n",
        chain = tls.chain.display(),
        key = tls.key.display(),
    );
    std::fs::write(d.join("nginx.conf"), conf).unwrap();
    let server = Killed(
        Command::new(nginx)
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx"),
    );
    wait_listening(a.parse().unwrap());
    wait_listening(b.parse().unwrap());

    let warc = d.join("site.warc");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let (out, _, _) = run_bounded(
        Command::new(PW)
            .args(["record", &format!("https://{a}/index.html"), "--out-file"])
            .arg(&warc)
            .arg("--upstream-ca")
            .arg(&tls.ca)
            .args(["--quiet", "800ms", "--timeout", "20s"])
            // The browser's profile goes under the test's directory, so a
            // process left behind would name it.
            .env("TMPDIR", &tmp),
        Duration::from_secs(25),
        "pagewire record",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    drop(server);
    assert!(out.status.success(), "record: {stdout}\n{stderr}");
    assert!(
        stdout.contains("from 2 origins"),
        "both origins: {stdout}\n{stderr}"
    );

    let archive = pagewire_replay::Archive::load(&warc).unwrap();
    for (root, path, body) in &files {
        let origin = if *root == "a" { &a } else { &b };
        let want = if path == "/data.json" {
            format!("https://{origin}/data.json?x=1")
        } else {
            format!("https://{origin}{path}")
        };
        let e = archive
            .exchanges
            .iter()
            .find(|e| e.url == want)
            .unwrap_or_else(|| panic!("{want} not recorded: {stdout}"));
        assert_eq!(e.status, 200, "{want}");
        assert!(&e.body[..] == body.as_slice(), "{want}: body differs");
        let t = e.timing.expect("timing recorded");
        assert!(
            t.sent_ms <= t.first_byte_ms && t.first_byte_ms <= t.done_ms,
            "{want}: {t:?}"
        );
        let head = String::from_utf8_lossy(e.request_head.as_deref().unwrap()).into_owned();
        assert!(
            head.starts_with(&format!(
                "GET {} HTTP/1.1\r\nHost: {origin}\r\n",
                &want[8 + origin.len()..]
            )),
            "{head}"
        );
    }
    assert!(
        stdout.contains("over HTTP/2") && !stdout.contains(" 0 over HTTP/2"),
        "origin B answers over h2: {stdout}"
    );

    // Replay (plain HTTP): every recorded object of both origins, by Host.
    let mut replay = Killed(
        Command::new(PW)
            .args(["serve", "--replay"])
            .arg(&warc)
            .args(["--addr", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn serve --replay"),
    );
    let mut line = String::new();
    BufReader::new(replay.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("serve --replay said {line:?}"))
        .to_string();
    for (root, path, body) in &files {
        let host = if *root == "a" { &a } else { &b };
        let target = if path == "/data.json" {
            "/data.json?x=1"
        } else {
            path
        };
        let (status, got) = replay_get(&addr, host, target);
        assert!(status.contains(" 200"), "{host}{target}: {status}");
        assert!(got == *body, "{host}{target}: replayed body differs");
    }
    drop(replay);

    let left = processes_naming(&d.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(
        std::fs::read_dir(&tmp).unwrap().next().is_none(),
        "the browser profile was not removed"
    );
}

#[test]
fn chromium_recording_refuses_robot_flags_and_bad_urls() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.warc");
    for (args, says) in [
        (
            vec!["record", "http://127.0.0.1:9/", "--strategy", "http11"],
            "--with robot",
        ),
        (vec!["record", "ftp://127.0.0.1/"], "http:// or https://"),
        (
            vec![
                "record",
                "https://127.0.0.1:9/",
                "--with",
                "robot",
                "--upstream-ca",
                "x.pem",
            ],
            "--with chromium",
        ),
    ] {
        let o = Command::new(PW)
            .args(args.iter())
            .arg("--out-file")
            .arg(&out)
            .env("PAGEWIRE_CHROMIUM", "/nonexistent")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new(&out).exists(), "{args:?} wrote a file");
    }
}
