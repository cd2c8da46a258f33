//! A local site with two TLS origins for the recording tests: nginx on two
//! free ports of 127.0.0.1 with a test CA made by `pagewire_tls::issue`,
//! origin A over HTTP/1.1 and origin B over HTTP/2. The page (A) names a
//! stylesheet (A) and an image (B), fetches `data.json?x=1` (A) with
//! `fetch()`, and inserts `late.bin` (B) from a script after its load
//! event: two origins, and objects no parser of the page would find.
//! nginx is stopped when the site is dropped (also when a test fails).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free TCP port of 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits (at most 10 s) until something accepts connections on `addr`.
pub fn wait_listening(addr: SocketAddr) {
    let t = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{addr} not listening"
        );
        // Polling for the listener (the event), not sleeping in its place.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child killed on drop, also when an assertion fails.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Processes (other than this one) whose command line names `needle`,
/// e.g. a test's own directory.
pub fn processes_naming(needle: &str) -> Vec<String> {
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

/// nginx, and a Chromium to record with: `None` when one is missing (the
/// test is skipped by name; under `PAGEWIRE_REQUIRE_ALL=1`, as in CI, it
/// fails instead).
pub fn require_nginx_and_chromium() -> Option<PathBuf> {
    let nginx = pagewire_testreq::require_peer("nginx")?;
    pagewire_testreq::require_any_peer(&["chromium", "chromium-browser", "google-chrome"])?;
    Some(nginx)
}

/// One object of the site.
pub struct Object {
    /// `'a'` or `'b'`: which origin serves it.
    pub origin: char,
    /// Its path on that origin.
    pub path: &'static str,
    pub body: Vec<u8>,
}

/// The running site.
pub struct TlsSite {
    /// `127.0.0.1:PORT` of origin A (HTTP/1.1) and B (HTTP/2).
    pub a: String,
    pub b: String,
    /// The test CA nginx's certificate is issued by (`--upstream-ca`).
    pub ca: PathBuf,
    pub objects: Vec<Object>,
    _nginx: Killed,
}

impl TlsSite {
    /// Writes the site under `dir` and starts nginx on it; returns once
    /// both origins accept connections.
    pub fn start(nginx: &Path, dir: &Path) -> TlsSite {
        let (a, b) = (
            format!("127.0.0.1:{}", free_port()),
            format!("127.0.0.1:{}", free_port()),
        );
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
        let objects = vec![
            Object {
                origin: 'a',
                path: "/index.html",
                body: page.into_bytes(),
            },
            Object {
                origin: 'a',
                path: "/style.css",
                body: "h1 { color: #345; }\n".repeat(50).into_bytes(),
            },
            Object {
                origin: 'a',
                path: "/data.json",
                body: b"{\"fetched\": true}".to_vec(),
            },
            Object {
                origin: 'b',
                path: "/b.gif",
                body: gif,
            },
            Object {
                origin: 'b',
                path: "/late.bin",
                body: late,
            },
        ];
        for o in &objects {
            let p = dir.join(o.origin.to_string()).join(&o.path[1..]);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, &o.body).unwrap();
        }
        let tls = pagewire_tls::write(
            &dir.join("tls"),
            &pagewire_tls::issue(&["127.0.0.1"]).unwrap(),
        )
        .unwrap();
        let dd = dir.display();
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
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let nginx = Killed(
            Command::new(nginx)
                .arg("-p")
                .arg(dir)
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn nginx"),
        );
        wait_listening(a.parse().unwrap());
        wait_listening(b.parse().unwrap());
        TlsSite {
            a,
            b,
            ca: tls.ca,
            objects,
            _nginx: nginx,
        }
    }

    /// The page's URL.
    pub fn page_url(&self) -> String {
        format!("https://{}/index.html", self.a)
    }

    /// `127.0.0.1:PORT` of the origin serving `o`.
    pub fn origin_of(&self, o: &Object) -> &str {
        if o.origin == 'a' {
            &self.a
        } else {
            &self.b
        }
    }

    /// The request target the page asks for `o` by (the script fetches
    /// data.json with a query).
    pub fn target_of(o: &Object) -> String {
        if o.path == "/data.json" {
            "/data.json?x=1".into()
        } else {
            o.path.into()
        }
    }

    /// The URL a recording holds `o` under.
    pub fn url_of(&self, o: &Object) -> String {
        format!("https://{}{}", self.origin_of(o), Self::target_of(o))
    }
}

/// `pagewire record` of `site`'s page into `warc` with `extra` flags; the
/// browser's profile goes under `tmp` (a process left behind names it).
/// Fails the test unless the recording succeeds; returns stdout and
/// stderr.
pub fn record(site: &TlsSite, warc: &Path, tmp: &Path, extra: &[&str]) -> (String, String) {
    // One recording at a time in a test binary: two Chromium recordings at
    // once beside the other tests' browsers on a loaded 2-core machine
    // overran `--timeout` (requests still in flight), though each alone
    // takes 8 s.
    static ONE_RECORDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(tmp).unwrap();
    let (out, _, _) = super::run_bounded(
        Command::new(super::PW)
            .args(["record", &site.page_url(), "--out-file"])
            .arg(warc)
            .arg("--upstream-ca")
            .arg(&site.ca)
            .args(["--quiet", "800ms", "--timeout", "45s"])
            .args(extra)
            .env("TMPDIR", tmp),
        Duration::from_secs(60),
        "pagewire record",
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "record {extra:?}: {stdout}\n{stderr}");
    (stdout, stderr)
}
