//! Test peers: a real nginx and pagewire's own server serving the same
//! directory, each on a free loopback port and torn down by `Drop` (also
//! when a test fails).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pagewire_client::cache::sha256_hex;

/// A site on disk: the Microscape page (42 GIFs) plus `extra.html`, a small
/// page with every other kind of reference the robot must find.
pub struct SiteDir {
    pub dir: tempfile::TempDir,
    /// URL path -> bytes, for byte-exact checks.
    pub files: HashMap<String, Vec<u8>>,
}

impl SiteDir {
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn sha(&self, path: &str) -> String {
        sha256_hex(&self.files[path])
    }

    /// Paths referenced by `page` (the page itself first).
    pub fn microscape_paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .keys()
            .filter(|p| p.starts_with("/images/"))
            .cloned()
            .collect();
        v.sort();
        v
    }
}

pub const EXTRA_PAGE: &str = "/extra.html";

pub fn make_site() -> SiteDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = pagewire_site::microscape::generate(Default::default());
    m.write_to_dir(dir.path()).expect("write microscape");
    let mut files: HashMap<String, Vec<u8>> = m
        .files()
        .into_iter()
        .map(|(p, b)| (p, b.to_vec()))
        .collect();
    // A page with each reference kind of the issue, on top of Microscape's
    // images: input type=image, body background, stylesheet, script,
    // url() in a <style> block and in a style attribute.
    let gif = |n: u8| -> Vec<u8> {
        let mut g = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;".to_vec();
        g.push(n);
        g
    };
    let extra: Vec<(&str, Vec<u8>)> = vec![
        ("/x/style.css", b"body { color: black }\n".to_vec()),
        ("/x/app.js", b"console.log('robot');\n".to_vec()),
        ("/x/bg.gif", gif(1)),
        ("/x/go.gif", gif(2)),
        ("/x/inline.gif", gif(3)),
        ("/x/attr.gif", gif(4)),
        ("/x/img.gif", gif(5)),
    ];
    let html = r#"<!DOCTYPE html>
<html><head><title>extra</title>
<link rel="stylesheet" href="x/style.css">
<script src="/x/app.js"></script>
<style>.a { background: url("x/inline.gif") }</style>
</head>
<body background="x/bg.gif">
<form><input type="image" src="x/go.gif"></form>
<div style="background-image: url(/x/attr.gif)">text</div>
<img src="x/img.gif"><img src="http://elsewhere.invalid/other.gif">
</body></html>
"#;
    std::fs::create_dir_all(dir.path().join("x")).unwrap();
    std::fs::write(dir.path().join("extra.html"), html).unwrap();
    files.insert(EXTRA_PAGE.to_string(), html.as_bytes().to_vec());
    for (p, b) in extra {
        std::fs::write(dir.path().join(p.trim_start_matches('/')), &b).unwrap();
        files.insert(p.to_string(), b);
    }
    SiteDir { dir, files }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

fn wait_listening(addr: SocketAddr, child: &mut Child, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "nginx exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nginx did not listen on {addr} within 10 s");
}

/// A real nginx (single process, no daemon) with a generated config.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
}

impl Nginx {
    /// `extra` goes inside the `server` block (e.g. `keepalive_requests 5;`).
    /// None when nginx is not installed: the test fails under
    /// PAGEWIRE_REQUIRE_ALL=1 and is reported skipped otherwise.
    pub fn start(root: &Path, extra: &str) -> Option<Nginx> {
        let bin = pagewire_testreq::require_peer("nginx")?;
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display();
        let port = free_port();
        let conf = format!(
            r#"daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    types {{ text/html html; text/css css; application/javascript js; image/gif gif; }}
    default_type application/octet-stream;
    log_format pw '$request_method $request_uri $status $body_bytes_sent "$http_sec_purpose" $connection $connection_requests';
    access_log {d}/access.log pw;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    sendfile on;
    tcp_nodelay on;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        {extra}
    }}
}}
"#,
            root = root.display()
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut child = Command::new(bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        wait_listening(addr, &mut child, &dir.path().join("error.log"));
        Some(Nginx { child, addr, dir })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Access log lines: `METHOD URI STATUS BYTES "SEC-PURPOSE" CONN CONN_REQS`,
    /// once there are at least `at_least` (nginx writes each line when its
    /// request ends, which can be just after the client has the response).
    /// Polls the file (the event), bounded at 10 s.
    pub fn access_log(&self, at_least: usize) -> Vec<String> {
        let path = self.dir.path().join("access.log");
        let read = || -> Vec<String> {
            std::fs::read_to_string(&path)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = read();
            if lines.len() >= at_least || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// pagewire's own server on a thread, stopped on `Drop`.
pub struct PwServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PwServer {
    pub fn start(root: &Path, config: pagewire_server::ServerConfig) -> PwServer {
        Self::start_on(root, config, 0)
    }

    /// On a given loopback port (0: any), e.g. the port of a server just
    /// stopped, so that cached URLs stay the same.
    pub fn start_on(root: &Path, config: pagewire_server::ServerConfig, port: u16) -> PwServer {
        let site = Arc::new(pagewire_site::store::Site::from_dir(root).expect("load site"));
        let std_listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                let _ = pagewire_server::serve(listener, site, config, async {
                    let _ = rx.await;
                })
                .await;
            });
        });
        PwServer {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for PwServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn pw_config() -> pagewire_server::ServerConfig {
    pagewire_server::ServerConfig {
        threads: 1,
        ..Default::default()
    }
}
