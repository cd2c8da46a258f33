//! Strategies `h2` and `h3` against pagewire's TLS/QUIC server on loopback:
//! the Microscape page and its 42 images byte-exact over one connection,
//! revalidation by conditional requests answered 304, deflate for the page,
//! and the errors a wrong setup gets.

use crate::common;

use std::sync::Arc;

use common::{make_site, pw_config, SiteDir};
use pagewire_client::{fetch_blocking, FetchConfig, FetchReport, Outcome, Strategy};

const PAGE: &str = "/index.html";

/// `pagewire_server::serve_tls` on a free loopback port (TCP for HTTP/2,
/// UDP on the same port for HTTP/3), stopped on drop.
struct TlsServer {
    addr: std::net::SocketAddr,
    ca: std::path::PathBuf,
    _tls_dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<pagewire_server::ServerStats>>,
}

impl TlsServer {
    fn start(site: &SiteDir) -> TlsServer {
        let tls_dir = tempfile::tempdir().unwrap();
        let files = pagewire_tls::ensure(tls_dir.path(), &["127.0.0.1"]).unwrap();
        let tls = pagewire_tls::server_config(&files, &[]).unwrap();
        let loaded = pagewire_site::store::Site::from_dir(site.root()).expect("load site");
        let store = Arc::new(loaded);
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let udp = std::net::UdpSocket::bind(addr).unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                let serve = pagewire_server::TlsServe {
                    tls,
                    udp: Some(udp),
                };
                pagewire_server::serve_tls(listener, store, pw_config(), serve, async {
                    let _ = rx.await;
                })
                .await
                .unwrap()
            })
        });
        TlsServer {
            addr,
            ca: files.ca,
            _tls_dir: tls_dir,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{}", self.addr, path)
    }

    fn stop(mut self) -> pagewire_server::ServerStats {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn config(server: &TlsServer, strategy: Strategy, cache: Option<&std::path::Path>) -> FetchConfig {
    let mut cfg = FetchConfig::new(server.url(PAGE), strategy);
    cfg.tls_ca = Some(server.ca.clone());
    cfg.cache_dir = cache.map(|p| p.to_path_buf());
    cfg.keep_bodies = true;
    cfg
}

fn assert_byte_exact(site: &SiteDir, r: &FetchReport) {
    assert_eq!(r.objects.len(), 43);
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert!(o.url.starts_with("https://"), "{}", o.url);
        assert_eq!(o.status, 200, "{}", o.url);
        assert_eq!(o.sha256, site.sha(&path), "{} not byte-exact", o.url);
        assert_eq!(o.body.as_deref(), Some(site.files[&path].as_slice()));
    }
}

fn first_and_revalidation(strategy: Strategy) {
    let site = make_site();
    let server = TlsServer::start(&site);
    let cache = tempfile::tempdir().unwrap();
    let r = fetch_blocking(config(&server, strategy, Some(cache.path())))
        .unwrap_or_else(|e| panic!("{strategy}: {e}"));
    assert_byte_exact(&site, &r);
    let version = if strategy == Strategy::H2 {
        "HTTP/2"
    } else {
        "HTTP/3"
    };
    assert!(
        r.objects.iter().all(|o| o.http_version == version),
        "{strategy}"
    );
    assert_eq!(r.connections_opened, 1, "{strategy}: one connection");
    assert_eq!(r.requests, 43);
    // The page came deflated (asked for, as pipeline-deflate does) and was
    // inflated byte-exact; images are not asked compressed.
    assert_eq!(
        r.objects[0].content_encoding.as_deref(),
        Some("deflate"),
        "{strategy}"
    );

    let mut cfg = config(&server, strategy, Some(cache.path()));
    cfg.revalidate = true;
    let again = fetch_blocking(cfg).unwrap_or_else(|e| panic!("{strategy} revalidation: {e}"));
    assert_eq!(again.objects.len(), 43);
    assert!(
        again
            .objects
            .iter()
            .all(|o| o.outcome == Outcome::NotModified && o.status == 304),
        "{strategy}: {:?}",
        again
            .objects
            .iter()
            .map(|o| (o.status, o.outcome))
            .collect::<Vec<_>>()
    );
    assert_eq!(again.bytes.payload_bytes_received, 0);
    let stats = server.stop();
    assert_eq!(stats.requests, 86, "{stats:?}");
    assert_eq!(stats.responses_2xx, 43);
    assert_eq!(stats.responses_3xx, 43);
    assert_eq!(stats.connections, 2);
}

#[test]
fn h2_fetches_byte_exact_and_revalidates() {
    first_and_revalidation(Strategy::H2);
}

#[test]
fn h3_fetches_byte_exact_and_revalidates() {
    first_and_revalidation(Strategy::H3);
}

#[test]
fn wrong_setups_are_named() {
    let site = make_site();
    let server = TlsServer::start(&site);
    // No CA given.
    let mut cfg = config(&server, Strategy::H2, None);
    cfg.tls_ca = None;
    let e = fetch_blocking(cfg).unwrap_err().to_string();
    assert!(e.contains("--ca"), "{e}");
    // Plain http for a TLS strategy, https for an HTTP/1 one.
    let mut cfg = config(&server, Strategy::H2, None);
    cfg.url = cfg.url.replace("https://", "http://");
    let e = fetch_blocking(cfg).unwrap_err().to_string();
    assert!(e.contains("https://"), "{e}");
    let mut cfg = config(&server, Strategy::Pipeline, None);
    cfg.strategy = Strategy::Pipeline;
    let e = fetch_blocking(cfg).unwrap_err().to_string();
    assert!(e.contains("not built"), "{e}");
    // Another run's CA is not trusted, on TCP or QUIC.
    let other = tempfile::tempdir().unwrap();
    let other = pagewire_tls::ensure(other.path(), &["127.0.0.1"]).unwrap();
    for strategy in [Strategy::H2, Strategy::H3] {
        let mut cfg = config(&server, strategy, None);
        cfg.tls_ca = Some(other.ca.clone());
        cfg.timeouts.connect = std::time::Duration::from_secs(3);
        let e = fetch_blocking(cfg).unwrap_err().to_string();
        assert!(e.contains("cannot connect"), "{strategy}: {e}");
    }
}

/// A server that completes the TLS and HTTP/2 handshakes, takes the
/// request and never answers: the connection's read timeout ends the fetch,
/// naming the object.
#[tokio::test]
async fn a_silent_http2_server_hits_the_read_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let files = pagewire_tls::ensure(dir.path(), &["127.0.0.1"]).unwrap();
    let tls = pagewire_tls::server_config(&files, &[pagewire_tls::ALPN_H2]).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let tls = acceptor.accept(tcp).await.unwrap();
        let mut conn = h2::server::handshake(tls).await.unwrap();
        let mut held = Vec::new();
        // Bounded: the robot sends one request, then gives up and closes.
        while let Some(Ok((req, respond))) = conn.accept().await {
            held.push((req, respond));
        }
        held.len()
    });
    let mut cfg = FetchConfig::new(format!("https://{addr}/index.html"), Strategy::H2);
    cfg.tls_ca = Some(files.ca.clone());
    cfg.timeouts.read = std::time::Duration::from_millis(500);
    let err = pagewire_client::fetch(cfg).await.unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("/index.html") && msg.contains("read timeout"),
        "{msg}"
    );
    // No wall-clock bound: the server holds the request for as long as the
    // connection lives, so only the robot's read timeout can have ended
    // the fetch, and the message names it.
    let held = tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("the robot closed the connection")
        .unwrap();
    assert_eq!(held, 1);
}

/// The robot's request heads for `h2` and `h3` on the Microscape page, a
/// first visit and a revalidation on the same cache, compared with
/// `data/request_heads_multiplexed.txt` (the HTTP/1.x strategies' streams
/// are checked byte for byte by `request_streams.rs`). These are the heads
/// the session builds, before they become HTTP/2 or HTTP/3 header blocks;
/// sorted, since the streams run concurrently. The port is normalised to
/// `PORT` and the robot's version to `VERSION`; file times are fixed so the
/// validators are the same on every run. `PAGEWIRE_BLESS=1` rewrites the
/// file.
#[test]
fn request_heads_are_the_recorded_ones() {
    let site = make_site();
    let fixed = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(852_076_800);
    for path in site.files.keys() {
        let f = std::fs::File::options()
            .write(true)
            .open(site.root().join(path.trim_start_matches('/')))
            .unwrap();
        f.set_modified(fixed).unwrap();
    }
    let server = TlsServer::start(&site);
    let port = format!(":{}", server.addr.port());
    let version = concat!("pagewire/", env!("CARGO_PKG_VERSION"));
    let mut text = String::new();
    for strategy in [Strategy::H2, Strategy::H3] {
        let cache = tempfile::tempdir().unwrap();
        for (visit, revalidate) in [("first visit", false), ("revalidation", true)] {
            let mut cfg = config(&server, strategy, Some(cache.path()));
            cfg.revalidate = revalidate;
            let r = fetch_blocking(cfg).unwrap_or_else(|e| panic!("{strategy} {visit}: {e}"));
            assert_eq!(r.objects.len(), 43, "{strategy} {visit}");
            let mut heads: Vec<String> = r
                .objects
                .iter()
                .map(|o| {
                    o.request_head
                        .replace(&port, ":PORT")
                        .replace(version, "pagewire/VERSION")
                })
                .collect();
            heads.sort();
            text.push_str(&format!(
                "=== {strategy} {visit}: {} requests, sorted:\n",
                heads.len()
            ));
            for h in heads {
                text.push_str(&h);
            }
        }
    }
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/request_heads_multiplexed.txt");
    if std::env::var_os("PAGEWIRE_BLESS").is_some() {
        std::fs::write(&golden, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (write it with PAGEWIRE_BLESS=1)", golden.display()));
    if text != want {
        let got = std::env::temp_dir().join("pagewire-request_heads_multiplexed.got.txt");
        let _ = std::fs::write(&got, &text);
        panic!(
            "the robot's h2/h3 requests changed (this run's are in {})",
            got.display()
        );
    }
}
