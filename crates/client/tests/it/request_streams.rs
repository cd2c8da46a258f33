//! The robot's requests, byte for byte, on the Microscape page: every
//! HTTP/1.x strategy, a first visit (empty cache) and a revalidation (the
//! same cache), recorded by a loopback proxy between the robot and
//! pagewire's server and compared with `data/request_streams.txt`; the
//! options that change requests (request profile, revalidation style,
//! range mode, a page with a stylesheet and a script) likewise with
//! `data/request_streams_options.txt` (h2 and h3: `multiplex.rs`). A
//! refactoring of the robot's session must leave this file unchanged; a
//! deliberate change of what the robot sends rewrites it with
//! `PAGEWIRE_BLESS=1 cargo test -p pagewire-client --test it request_streams::`
//! and shows up in review as a diff of requests.
//!
//! Normalised: the proxy's port (in `Host`) is `PORT`, the robot's version
//! (in `User-Agent`) `VERSION`. The files' times are
//! fixed, so `Last-Modified` and with it `If-Modified-Since` are the same on
//! every run (entity tags come from the content). A strategy that spreads
//! its requests over several connections is recorded as the sorted list of
//! its requests (which connection carries which depends on timing); one
//! connection is recorded as its stream, in order.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use common::{make_site, pw_config, PwServer, EXTRA_PAGE};
use pagewire_client::{fetch_blocking, FetchConfig, RequestProfile, Revalidation, Strategy};

const PAGE: &str = "/index.html";
const GOLDEN: &str = "tests/data/request_streams.txt";
const GOLDEN_OPTIONS: &str = "tests/data/request_streams_options.txt";

/// One connection's bytes from the client, as they arrive.
type Record = Arc<Mutex<Vec<u8>>>;

/// A loopback TCP proxy that records what clients send, per connection.
struct Recorder {
    addr: SocketAddr,
    streams: Arc<Mutex<Vec<Record>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Recorder {
    fn start(upstream: SocketAddr) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let streams: Arc<Mutex<Vec<Record>>> = Default::default();
        let stop = Arc::new(AtomicBool::new(false));
        let pumps: Arc<Mutex<Vec<JoinHandle<()>>>> = Default::default();
        let accept = {
            let (streams, stop, pumps) = (streams.clone(), stop.clone(), pumps.clone());
            std::thread::spawn(move || {
                // Bounded: ends when `stop` is set (Drop connects once to
                // wake this accept).
                for client in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(upstream) else {
                        continue;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let record = Arc::new(Mutex::new(Vec::new()));
                    streams.lock().unwrap().push(record.clone());
                    let up = pump(
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        Some(record),
                    );
                    let down = pump(server, client, None);
                    pumps.lock().unwrap().extend([up, down]);
                }
            })
        };
        Recorder {
            addr,
            streams,
            stop,
            accept: Some(accept),
            pumps,
        }
    }

    /// The streams recorded since the last call, in accept order.
    fn take(&self) -> Vec<Vec<u8>> {
        // Every connection of a fetch is closed when it returns; its pumps
        // end at the client's FIN, so wait for them before reading.
        let pumps: Vec<_> = std::mem::take(&mut *self.pumps.lock().unwrap());
        for p in pumps {
            let _ = p.join();
        }
        let streams = std::mem::take(&mut *self.streams.lock().unwrap());
        streams
            .into_iter()
            .map(|s| std::mem::take(&mut *s.lock().unwrap()))
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        for p in std::mem::take(&mut *self.pumps.lock().unwrap()) {
            let _ = p.join();
        }
    }
}

/// Copies `from` to `to` until EOF or an error, recording if asked; then
/// passes the end on (FIN).
fn pump(mut from: TcpStream, mut to: TcpStream, record: Option<Record>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        // A stalled peer cannot hold the test: the robot's own deadlines
        // end its connections well within this.
        let _ = from.set_read_timeout(Some(Duration::from_secs(30)));
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(r) = &record {
                        r.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    })
}

/// One connection's bytes as requests (head, and body by Content-Length).
fn requests(stream: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = stream;
    // Bounded: each pass takes a head off `rest` or stops.
    while !rest.is_empty() {
        let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
            out.push(format!("INCOMPLETE {}", String::from_utf8_lossy(rest)));
            break;
        };
        let head = &rest[..end + 4];
        let text = String::from_utf8_lossy(head).to_string();
        let body_len = text
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .and_then(|v| v.trim().parse::<usize>().ok())
            })
            .unwrap_or(0)
            .min(rest.len() - head.len());
        let body = &rest[head.len()..head.len() + body_len];
        out.push(format!("{text}{}", String::from_utf8_lossy(body)));
        rest = &rest[head.len() + body_len..];
    }
    out
}

/// The recorded streams of one fetch, normalised, as text.
fn render(streams: &[Vec<u8>], port: u16) -> String {
    let port = format!(":{port}");
    let version = concat!("pagewire/", env!("CARGO_PKG_VERSION"));
    let norm = |s: String| {
        s.replace(&port, ":PORT")
            .replace(version, "pagewire/VERSION")
    };
    let with_bytes: Vec<&Vec<u8>> = streams.iter().filter(|s| !s.is_empty()).collect();
    let mut out = String::new();
    if with_bytes.len() == 1 {
        out.push_str("one connection, in order:\n");
        for r in requests(with_bytes[0]) {
            out.push_str(&norm(r));
        }
    } else {
        let mut all: Vec<String> = with_bytes
            .iter()
            .flat_map(|s| requests(s))
            .map(norm)
            .collect();
        all.sort();
        out.push_str(&format!(
            "{} connections, requests sorted:\n",
            with_bytes.len()
        ));
        for r in all {
            out.push_str(&r);
        }
    }
    out
}

/// The site with fixed file times (Last-Modified, and so
/// If-Modified-Since, are the same on every run), served by pagewire behind
/// a recording proxy.
fn serve_recorded() -> (common::SiteDir, PwServer, Recorder) {
    let site = make_site();
    let fixed = SystemTime::UNIX_EPOCH + Duration::from_secs(852_076_800); // 1997-01-01
    for path in site.files.keys() {
        let f = std::fs::File::options()
            .write(true)
            .open(site.root().join(path.trim_start_matches('/')))
            .unwrap();
        f.set_modified(fixed).unwrap();
    }
    let server = PwServer::start(site.root(), pw_config());
    let proxy = Recorder::start(server.addr);
    (site, server, proxy)
}

/// One recorded case: a page, a strategy, and what differs from the
/// defaults.
struct Case {
    name: &'static str,
    page: &'static str,
    strategy: Strategy,
    min_objects: usize,
    setup: fn(&mut FetchConfig),
}

/// Each case's first visit and revalidation (on the same cache), as text.
fn record(proxy: &Recorder, cases: &[Case]) -> String {
    let mut text = String::new();
    for case in cases {
        let cache = tempfile::tempdir().unwrap();
        for (visit, revalidate) in [("first visit", false), ("revalidation", true)] {
            let url = format!("http://{}{}", proxy.addr, case.page);
            let mut cfg = FetchConfig::new(&url, case.strategy);
            cfg.cache_dir = Some(cache.path().to_path_buf());
            cfg.revalidate = revalidate;
            (case.setup)(&mut cfg);
            let name = case.name;
            let r = fetch_blocking(cfg).unwrap_or_else(|e| panic!("{name} {visit}: {e}"));
            assert!(
                r.objects.len() >= case.min_objects,
                "{name} {visit}: {} objects",
                r.objects.len()
            );
            text.push_str(&format!("=== {name} {visit}: "));
            text.push_str(&render(&proxy.take(), proxy.addr.port()));
        }
    }
    text
}

/// Compares `text` with the golden file (or writes it with
/// `PAGEWIRE_BLESS`).
fn check_golden(file: &str, text: &str) {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("PAGEWIRE_BLESS").is_some() {
        std::fs::write(&golden, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (write it with PAGEWIRE_BLESS=1)", golden.display()));
    if text != want {
        let base = std::path::Path::new(file)
            .file_stem()
            .unwrap()
            .to_string_lossy();
        let got = std::env::temp_dir().join(format!("pagewire-{base}.got.txt"));
        let _ = std::fs::write(&got, text);
        let first = text
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(text.lines().count().min(want.lines().count()));
        panic!(
            "the robot's requests changed (first difference at line {}; this run's requests are in {})",
            first + 1,
            got.display()
        );
    }
}

#[test]
fn requests_are_the_recorded_ones_for_every_strategy() {
    let (_site, _server, proxy) = serve_recorded();
    let cases: Vec<Case> = Strategy::ALL
        .iter()
        .filter(|s| !s.multiplexed())
        .map(|&strategy| Case {
            name: strategy.name(),
            page: PAGE,
            strategy,
            min_objects: 43,
            setup: |_| {},
        })
        .collect();
    check_golden(GOLDEN, &record(&proxy, &cases));
}

/// The options that change what the robot asks for: request profile,
/// revalidation style, range mode ("poor man's multiplexing"), and a page
/// with a stylesheet, a script and images found in CSS (discovery, and
/// GETALL's and objpack's parts beyond images).
#[test]
fn requests_are_the_recorded_ones_for_each_option() {
    let (_site, _server, proxy) = serve_recorded();
    let cases = [
        Case {
            name: "pipeline libwww-1997",
            page: PAGE,
            strategy: Strategy::Pipeline,
            min_objects: 43,
            setup: |c| c.request_profile = RequestProfile::Libwww1997,
        },
        Case {
            name: "http11 get-head",
            page: PAGE,
            strategy: Strategy::Http11,
            min_objects: 43,
            setup: |c| c.revalidation = Revalidation::GetHead,
        },
        Case {
            name: "pipeline conditional-get-head",
            page: PAGE,
            strategy: Strategy::Pipeline,
            min_objects: 43,
            setup: |c| c.revalidation = Revalidation::ConditionalGetHead,
        },
        Case {
            name: "http10 conditional",
            page: PAGE,
            strategy: Strategy::Http10,
            min_objects: 43,
            setup: |c| c.revalidation = Revalidation::Conditional,
        },
        Case {
            name: "pipeline range-first 200",
            page: PAGE,
            strategy: Strategy::Pipeline,
            min_objects: 43,
            setup: |c| c.range_first = Some(200),
        },
        Case {
            name: "pipeline-deflate range-first 200",
            page: PAGE,
            strategy: Strategy::PipelineDeflate,
            min_objects: 43,
            setup: |c| c.range_first = Some(200),
        },
        Case {
            name: "http11 extra.html",
            page: EXTRA_PAGE,
            strategy: Strategy::Http11,
            min_objects: 7,
            setup: |_| {},
        },
        Case {
            name: "pipeline extra.html",
            page: EXTRA_PAGE,
            strategy: Strategy::Pipeline,
            min_objects: 7,
            setup: |_| {},
        },
        Case {
            name: "getall extra.html",
            page: EXTRA_PAGE,
            strategy: Strategy::Getall,
            min_objects: 7,
            setup: |_| {},
        },
        Case {
            name: "objpack extra.html",
            page: EXTRA_PAGE,
            strategy: Strategy::Objpack,
            min_objects: 7,
            setup: |_| {},
        },
    ];
    check_golden(GOLDEN_OPTIONS, &record(&proxy, &cases));
}
