//! The load generator against a real `pagewire-server` on loopback, with
//! the server's own connection counts beside the generator's. Bounded:
//! every run lasts 2-3 s. The UEs think ten times faster than the paper's
//! (OFF and active OFF times scaled by 0.1) so that a few seconds hold
//! many ON/OFF cycles.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pagewire_load::fileset::{self, Manifest};
use pagewire_load::metrics::{merge_dirs, write_dir, Metrics, Summary};
use pagewire_load::model::{self, Params};
use pagewire_load::run::{self, Config, Live, Mode};
use pagewire_server::{ServerConfig, ServerStats};

/// A server on a loopback port in its own thread; `stop` returns its stats.
struct Server {
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<ServerStats>>,
}

impl Server {
    fn start(root: &Path) -> Server {
        let site = pagewire_site::store::Site::from_dir_with(
            root,
            &pagewire_site::store::LoadOptions {
                no_compression: true,
                ..Default::default()
            },
        )
        .expect("site loads");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (atx, arx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                atx.send(l.local_addr().unwrap()).unwrap();
                let config = ServerConfig {
                    threads: 1,
                    ..Default::default()
                };
                pagewire_server::serve(l, Arc::new(site), config, async {
                    let _ = rx.await;
                })
                .await
                .unwrap()
            })
        });
        Server {
            addr: arx.recv().unwrap(),
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> ServerStats {
        let _ = self.stop.take().unwrap().send(());
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

fn site(files: usize) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let m = fileset::generate(files, 11, &Params::default());
    fileset::write(&m, dir.path()).unwrap();
    let loaded = Manifest::load(dir.path()).unwrap();
    assert_eq!(loaded, m);
    (dir, m)
}

/// Table 8's parameters with OFF and active OFF times ten times shorter.
fn fast_params() -> Params {
    let p = Params::default();
    Params {
        off: (p.off.0 * 0.1, p.off.1),
        active_off: (p.active_off.0 * 0.1, p.active_off.1),
        ..p
    }
}

fn config(addr: std::net::SocketAddr, ues: u64, secs: u64, mode: Mode) -> Config {
    Config {
        target: format!("http://{addr}"),
        ues,
        model: run::LoadModel::Closed,
        duration: Duration::from_secs(secs),
        warmup: Duration::ZERO,
        ramp: Duration::from_millis(500),
        mode,
        conns_per_ue: 1,
        seed: 5,
        shard: (0, 1),
        threads: 1,
        timeout: Duration::from_secs(5),
        params: fast_params(),
        command_line: "test".into(),
        start_at: None,
    }
}

fn go(cfg: Config, m: &Manifest) -> (Summary, Metrics) {
    run::run(cfg, m, Arc::new(Live::default())).unwrap()
}

#[test]
fn the_models_pass_their_checks() {
    let mut lines = model::check(&Params::default(), 100_000, 3);
    lines.push(pagewire_load::streamcheck::popularity(
        &Params::default(),
        100_000,
        3,
    ));
    for line in lines {
        println!("{line:?}");
        assert!(line.pass, "{line:?}");
    }
}

#[test]
fn every_mode_runs_without_errors_and_the_server_agrees() {
    let (dir, m) = site(300);
    let server = Server::start(dir.path());
    let mut client_conns = 0;
    let mut client_gets = 0;
    for mode in [Mode::Http10, Mode::Http11, Mode::Pipeline, Mode::EarlyClose] {
        let (s, _) = go(config(server.addr, 100, 2, mode), &m);
        println!("{}", s.text());
        assert_eq!(s.errors, 0, "{mode:?}: {:?}", s.errors_by_kind);
        assert_eq!(s.objects_failed, 0);
        assert!(s.gets > 50, "{mode:?}: only {} GETs", s.gets);
        assert_eq!(s.get_latency_ms.count, s.gets);
        client_conns += s.connections + s.conns_outside_window;
        client_gets += s.gets + s.gets_outside_window + s.retries;
    }
    let stats = server.stop();
    assert_eq!(stats.connections, client_conns);
    assert_eq!(stats.responses_2xx, client_gets);
}

#[test]
fn http10_opens_several_times_more_connections_than_http11() {
    let (dir, m) = site(300);
    let mut per_mode = Vec::new();
    for mode in [Mode::Http10, Mode::Http11] {
        let server = Server::start(dir.path());
        let (s, _) = go(config(server.addr, 150, 3, mode), &m);
        let stats = server.stop();
        println!(
            "{mode:?}: generator {} connections, server {}, GETs {}",
            s.connections, stats.connections, s.gets
        );
        assert_eq!(s.errors, 0);
        assert_eq!(stats.connections, s.connections + s.conns_outside_window);
        per_mode.push((s.connections, s.gets));
    }
    let (c10, _) = per_mode[0];
    let (c11, _) = per_mode[1];
    assert!(c10 >= 3 * c11, "http10 {c10} vs http11 {c11} connections");
}

#[test]
fn shards_merge_into_one_run() {
    let (dir, m) = site(300);
    let server = Server::start(dir.path());
    let whole = go(config(server.addr, 120, 3, Mode::Http11), &m).0;
    let out = tempfile::tempdir().unwrap();
    let handles: Vec<_> = (0..3u64)
        .map(|k| {
            let mut cfg = config(server.addr, 120, 3, Mode::Http11);
            cfg.shard = (k, 3);
            let m = m.clone();
            let d = out.path().join(format!("shard{k}"));
            std::thread::spawn(move || {
                let (s, met) = go(cfg, &m);
                write_dir(&d, &s, &met).unwrap();
                (s, d)
            })
        })
        .collect();
    let shards: Vec<(Summary, std::path::PathBuf)> =
        handles.into_iter().map(|h| h.join().unwrap()).collect();
    server.stop();
    let dirs: Vec<_> = shards.iter().map(|s| s.1.clone()).collect();
    let (merged, mm) = merge_dirs(&dirs).unwrap();
    // Exact: counts add, histograms add.
    assert_eq!(merged.gets, shards.iter().map(|s| s.0.gets).sum::<u64>());
    assert_eq!(
        merged.connections,
        shards.iter().map(|s| s.0.connections).sum::<u64>()
    );
    assert_eq!(merged.run.ues, 120);
    assert_eq!(mm.get_latency.len(), merged.gets);
    assert_eq!(merged.errors, 0);
    // Same UEs, same seeds: the same work within noise (UEs are closed-loop,
    // so only response times shift the schedule).
    let rel = |a: u64, b: u64| (a as f64 - b as f64).abs() / b as f64;
    println!(
        "whole: {} GETs {} objects {} conns; merged: {} GETs {} objects {} conns",
        whole.gets,
        whole.objects,
        whole.connections,
        merged.gets,
        merged.objects,
        merged.connections
    );
    assert!(
        rel(merged.gets, whole.gets) < 0.10,
        "GETs {} vs {}",
        merged.gets,
        whole.gets
    );
    assert!(rel(merged.connections, whole.connections) < 0.10);
    // Merging a shard twice is refused.
    assert!(merge_dirs(&[dirs[0].clone(), dirs[0].clone()]).is_err());
}

#[test]
fn refused_connections_are_counted_as_errors() {
    let (_dir, m) = site(50);
    // A port nothing listens on.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let (s, _) = go(config(addr, 20, 1, Mode::Http11), &m);
    assert!(s.errors > 0);
    assert_eq!(s.errors_by_kind["refused"], s.errors);
    assert_eq!(s.gets, 0);
}

#[test]
fn every_mode_has_the_same_think_process_and_so_the_same_get_rate() {
    let (dir, m) = site(300);
    let server = Server::start(dir.path());
    let mut rates = Vec::new();
    for mode in [Mode::Http10, Mode::Http11, Mode::Pipeline, Mode::EarlyClose] {
        let (s, _) = go(config(server.addr, 200, 3, mode), &m);
        assert_eq!(s.errors, 0, "{mode:?}: {:?}", s.errors_by_kind);
        println!(
            "{mode:?}: {} GETs, {} objects, {} connections",
            s.gets, s.objects, s.connections
        );
        // The calibration table of every run; files per web object does
        // not depend on the think times' scale, so it holds its band here.
        let cal = pagewire_load::calibration::Calibration::of(&s);
        print!("{}", cal.text());
        let files = cal
            .rows
            .iter()
            .find(|r| r.quantity == "files per web object (request-weighted)")
            .expect("files per web object row");
        assert_eq!(files.within, Some(true), "{mode:?}: {files:?}");
        let persistent_rows = cal
            .rows
            .iter()
            .filter(|r| r.quantity == "web objects per persistent connection")
            .count();
        assert_eq!(
            persistent_rows,
            matches!(mode, Mode::Http11 | Mode::Pipeline) as usize,
            "{mode:?}"
        );
        rates.push((mode, s.gets as f64));
    }
    server.stop();
    let base = rates[0].1;
    for (mode, g) in &rates[1..] {
        assert!(
            (g / base - 1.0).abs() < 0.15,
            "{mode:?}: {g} GETs against http10's {base}"
        );
    }
}

#[test]
fn gets_outside_the_window_are_not_counted_in_the_rate() {
    let (dir, m) = site(300);
    let server = Server::start(dir.path());
    let mut cfg = config(server.addr, 100, 2, Mode::Http11);
    cfg.warmup = Duration::from_secs(1);
    let (s, met) = go(cfg, &m);
    server.stop();
    assert_eq!(s.errors, 0);
    assert!(s.gets_outside_window > 0, "the warm-up made no GET");
    assert_eq!(s.window_s, 1.0);
    assert_eq!(s.gets_per_second, s.gets as f64);
    // Only the window's seconds hold GETs in the series.
    assert_eq!(met.series.first().map(|x| x.gets).unwrap_or(0), 0);
    assert_eq!(met.series.iter().map(|x| x.gets).sum::<u64>(), s.gets);
}

#[test]
fn the_realised_stream_is_calibrated_to_the_paper() {
    let m = fileset::generate(
        fileset::DEFAULT_FILES,
        fileset::DEFAULT_SEED,
        &Params::default(),
    );
    let lines = pagewire_load::streamcheck::check(&m, &Params::default(), 1, 200, 600.0);
    for l in &lines {
        println!("{l:?}");
    }
    for l in &lines {
        assert!(l.pass, "{l:?}");
    }
}

#[test]
fn invalid_configurations_are_refused_before_running() {
    let (_dir, m) = site(50);
    let addr: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut zero_threads = config(addr, 5, 1, Mode::Http11);
    zero_threads.threads = 0;
    let mut zero_timeout = config(addr, 5, 1, Mode::Http11);
    zero_timeout.timeout = Duration::ZERO;
    let mut zero_duration = config(addr, 5, 1, Mode::Http11);
    zero_duration.duration = Duration::ZERO;
    let mut long_warmup = config(addr, 5, 1, Mode::Http11);
    long_warmup.warmup = Duration::from_secs(1);
    for (cfg, says) in [
        (zero_threads, "--threads"),
        (zero_timeout, "--timeout"),
        (zero_duration, "--duration"),
        (long_warmup, "--warmup"),
    ] {
        let e = run::run(cfg, &m, Arc::new(Live::default())).unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[test]
fn open_and_partly_open_sessions_run_the_same_users() {
    let (dir, m) = site(300);
    let server = Server::start(dir.path());
    let mut gets = Vec::new();
    for model in [
        run::LoadModel::Open {
            sessions_per_s: 40.0,
        },
        run::LoadModel::PartlyOpen {
            sessions_per_s: 40.0,
        },
    ] {
        let mut cfg = config(server.addr, 1, 3, Mode::Http11);
        cfg.model = model;
        let (s, _) = go(cfg, &m);
        println!("{}", s.text());
        assert_eq!(s.errors, 0, "{model:?}: {:?}", s.errors_by_kind);
        assert!(s.gets > 100, "{model:?}: {} GETs", s.gets);
        gets.push(s.gets as f64);
    }
    server.stop();
    // The same arrivals and users; only waiting for responses differs.
    assert!((gets[0] / gets[1] - 1.0).abs() < 0.2, "{gets:?}");
}

#[test]
fn urls_closed_and_at_a_fixed_rate_count_status_codes() {
    use pagewire_load::urls::{run_urls, UrlConfig};
    let (dir, m) = site(50);
    let server = Server::start(dir.path());
    let file = &m.objects[0].files[0].path;
    let cfg = |urls: Vec<String>, rate: Option<f64>| UrlConfig {
        urls,
        connections: 4,
        duration: Duration::from_secs(2),
        warmup: Duration::from_millis(200),
        rate,
        timeout: Duration::from_secs(5),
        command_line: "test".into(),
        engine: Default::default(),
    };
    let ok = format!("http://{}{file}", server.addr);
    let missing = format!("http://{}/no-such-file", server.addr);
    let (closed, _) = run_urls(cfg(vec![ok.clone()], None), Arc::new(Live::default())).unwrap();
    assert_eq!(closed.errors, 0);
    assert!(closed.gets > 100, "{}", closed.gets);
    let (open, _) = run_urls(cfg(vec![ok], Some(200.0)), Arc::new(Live::default())).unwrap();
    // 200/s over a 1.8 s window: about 360, never the closed mode's maximum rate.
    assert!(
        (open.gets as f64 - 360.0).abs() < 40.0,
        "{} GETs at 200/s",
        open.gets
    );
    let (bad, _) = run_urls(cfg(vec![missing], Some(50.0)), Arc::new(Live::default())).unwrap();
    server.stop();
    assert_eq!(bad.gets, 0);
    assert!(bad.errors_by_kind["bad_status"] > 0);
    assert_eq!(bad.status_codes["404"], bad.errors);
}

/// The open model sends every request of its schedule once: at 2,000/s
/// for 1 s, requests 0..2000 (the 2,000th is due at the end: not sent),
/// each with its lateness recorded, however the pacer's ticks group them.
#[test]
fn urls_at_a_fixed_rate_send_every_scheduled_request_once() {
    use pagewire_load::urls::{run_urls, UrlConfig};
    let (dir, m) = site(20);
    let server = Server::start(dir.path());
    let file = &m.objects[0].files[0].path;
    let cfg = UrlConfig {
        urls: vec![format!("http://{}{file}", server.addr)],
        connections: 8,
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        rate: Some(2000.0),
        timeout: Duration::from_secs(5),
        command_line: "test".into(),
        engine: Default::default(),
    };
    let (s, metrics) = run_urls(cfg, Arc::new(Live::default())).unwrap();
    server.stop();
    assert_eq!(s.errors, 0, "{:?}", s.errors_by_kind);
    assert_eq!(metrics.send_lag.len(), 2000);
    assert_eq!(s.gets + s.gets_outside_window, 2000);
    assert_eq!(s.status_codes["200"], 2000);
}

/// What a recording server saw on one connection.
#[derive(Debug, Clone)]
struct ConnLog {
    requests: u32,
    asked_to_close: bool,
    last_response: std::time::Instant,
    client_closed: Option<std::time::Instant>,
}

/// A keep-alive HTTP/1.1 server that never closes a connection itself and
/// records, per connection, its requests, whether any asked it to close,
/// when it last answered and when the client closed. One thread per
/// connection, each bounded by a 10 s read timeout.
fn recording_server(m: &Manifest) -> (std::net::SocketAddr, std::sync::mpsc::Receiver<ConnLog>) {
    use std::io::{BufRead, BufReader, Write};
    let sizes: std::collections::HashMap<String, u64> = m
        .objects
        .iter()
        .flat_map(|o| o.files.iter().map(|f| (f.path.clone(), f.size)))
        .collect();
    let sizes = Arc::new(sizes);
    let (log, rx) = std::sync::mpsc::channel();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            let (sizes, log) = (sizes.clone(), log.clone());
            std::thread::spawn(move || {
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut w = s.try_clone().unwrap();
                let mut r = BufReader::new(s);
                let mut c = ConnLog {
                    requests: 0,
                    asked_to_close: false,
                    last_response: std::time::Instant::now(),
                    client_closed: None,
                };
                'conn: loop {
                    let mut path = None;
                    loop {
                        let mut line = String::new();
                        match r.read_line(&mut line) {
                            Ok(0) => {
                                c.client_closed = Some(std::time::Instant::now());
                                break 'conn;
                            }
                            Err(_) => break 'conn,
                            Ok(_) => {}
                        }
                        let lower = line.to_ascii_lowercase();
                        if path.is_none() {
                            path = line.split_whitespace().nth(1).map(str::to_string);
                        } else if lower.starts_with("connection:") && lower.contains("close") {
                            c.asked_to_close = true;
                        } else if line == "\r\n" {
                            break;
                        }
                    }
                    let size = path.and_then(|p| sizes.get(&p).copied()).unwrap_or(0);
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                    let body = vec![b'x'; size as usize];
                    if w.write_all(head.as_bytes()).is_err() || w.write_all(&body).is_err() {
                        break;
                    }
                    c.requests += 1;
                    c.last_response = std::time::Instant::now();
                }
                let _ = log.send(c);
            });
        }
    });
    (addr, rx)
}

#[test]
fn a_persistent_connection_lasts_through_the_off_time_after_its_session() {
    // The paper's HTTP/1.1 connection "is open during Web object transfers
    // and OFF times": a closed UE never asks the server to close, and
    // closes its connection itself only when the next session starts, an
    // OFF time (at least k = 0.1 s here) after the last response.
    let (_dir, m) = site(300);
    let (addr, log) = recording_server(&m);
    let (s, _) = go(config(addr, 40, 3, Mode::Http11), &m);
    assert_eq!(s.errors, 0, "{:?}", s.errors_by_kind);
    // Each connection's record arrives once the generator has closed it.
    let conns: Vec<ConnLog> = (0..s.connections + s.conns_outside_window)
        .map(|_| {
            log.recv_timeout(Duration::from_secs(10))
                .expect("a connection's record")
        })
        .collect();
    assert!(
        conns.iter().all(|c| !c.asked_to_close),
        "a request asked to close"
    );
    let end = conns.iter().filter_map(|c| c.client_closed).max().unwrap();
    // Closed before the run's end (which closes every idle connection at once).
    let mid_run: Vec<f64> = conns
        .iter()
        .filter_map(|c| c.client_closed.map(|t| (c, t)))
        .filter(|(_, t)| end.duration_since(*t) > Duration::from_millis(300))
        .map(|(c, t)| t.duration_since(c.last_response).as_secs_f64())
        .collect();
    println!(
        "{} connections, {} closed at a new session; idle before the close: min {:?}",
        conns.len(),
        mid_run.len(),
        mid_run.iter().cloned().fold(f64::INFINITY, f64::min)
    );
    assert!(
        mid_run.len() >= 10,
        "{} sessions ended mid-run",
        mid_run.len()
    );
    for idle in &mid_run {
        assert!(
            *idle >= 0.099,
            "closed {idle} s after the last response, before any OFF time"
        );
    }
}

/// What a hostile server answers to every GET.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// `103` heads as fast as the socket takes them, never a final head.
    InterimFlood,
    /// A chunked 200 whose chunks never end, as fast as the socket takes them.
    EndlessChunked,
    /// A 200 promising 1,000,000 bytes, then one byte every 100 ms.
    Trickle,
}

/// Reads one request head byte by byte (up to 16 KB; bounded by the
/// socket's read timeout); None when the peer left or the read failed.
fn read_head(s: &mut std::net::TcpStream) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return None,
        }
    }
    Some(head)
}

/// A hostile HTTP/1.1 server on loopback (threads; every loop bounded by
/// 20 s and by the client leaving).
fn hostile_server(how: Hostile) -> std::net::SocketAddr {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        // Bounded: a few connections per test.
        for conn in l.incoming().take(16) {
            let Ok(mut s) = conn else { return };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let t0 = std::time::Instant::now();
                if read_head(&mut s).is_none() {
                    return;
                }
                let bound = Duration::from_secs(20);
                match how {
                    Hostile::InterimFlood => {
                        let heads = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".repeat(512);
                        while t0.elapsed() < bound && s.write_all(&heads).is_ok() {}
                    }
                    Hostile::EndlessChunked => {
                        let _ =
                            s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                        let mut c = b"2000\r\n".to_vec();
                        c.extend(std::iter::repeat_n(b'g', 0x2000));
                        c.extend_from_slice(b"\r\n");
                        while t0.elapsed() < bound && s.write_all(&c).is_ok() {}
                    }
                    Hostile::Trickle => {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
                        while t0.elapsed() < bound && s.write_all(b"g").is_ok() {
                            // The attack itself: one byte every 100 ms.
                            std::thread::sleep(Duration::from_millis(100));
                        }
                    }
                }
            });
        }
    });
    addr
}

/// The load generator's read loop against hostile servers: an endless
/// body and a trickle end at `--timeout` and count as timeouts; a 1xx
/// flood is a protocol error at the interim bound. The run itself ends by
/// its duration plus the timeout (a read loop that never yields to its
/// deadline would run until the server's 20 s bound).
#[test]
fn hostile_servers_end_at_the_timeout_and_are_counted() {
    use pagewire_load::urls::{run_urls, Engine, UrlConfig};
    for (how, kind, engine) in [
        (Hostile::EndlessChunked, "timeout", Engine::Tick),
        (Hostile::Trickle, "timeout", Engine::Tick),
        (Hostile::InterimFlood, "protocol", Engine::Tick),
        (Hostile::EndlessChunked, "timeout", Engine::Tokio),
        (Hostile::Trickle, "timeout", Engine::Tokio),
        (Hostile::InterimFlood, "protocol", Engine::Tokio),
    ] {
        let addr = hostile_server(how);
        let cfg = UrlConfig {
            urls: vec![format!("http://{addr}/a")],
            connections: 1,
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            // Two requests in the second (open model: no retry loop).
            rate: Some(2.0),
            timeout: Duration::from_secs(1),
            command_line: "test".into(),
            engine,
        };
        let t0 = std::time::Instant::now();
        let (s, _) = run_urls(cfg, Arc::new(Live::default())).unwrap();
        let took = t0.elapsed();
        assert_eq!(s.run.engine, engine.name());
        assert_eq!(s.gets, 0, "{how:?}");
        assert!(s.errors >= 1, "{how:?}: {:?}", s.errors_by_kind);
        assert_eq!(
            s.errors_by_kind[kind], s.errors,
            "{how:?}: {:?}",
            s.errors_by_kind
        );
        // Bound: duration + timeout, loose for a loaded machine.
        assert!(took < Duration::from_secs(1 + 1 + 3), "{how:?}: {took:?}");
    }
}

/// An open URL run's configuration for the engine tests.
fn open_cfg(
    url: String,
    connections: u64,
    rate: f64,
    engine: pagewire_load::urls::Engine,
) -> pagewire_load::urls::UrlConfig {
    pagewire_load::urls::UrlConfig {
        urls: vec![url],
        connections,
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        rate: Some(rate),
        timeout: Duration::from_secs(2),
        command_line: "test".into(),
        engine,
    }
}

/// A loopback HTTP/1.1 server that answers the `n`-th request head of each
/// connection with `answer(n, stream)`; `false` closes the connection.
/// Bounded: 64 connections, each by a 5 s read timeout.
fn scripted_server(answer: fn(u32, &mut std::net::TcpStream) -> bool) -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming().take(64) {
            let Ok(mut s) = conn else { return };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.set_nodelay(true);
                // Bounded: requests per connection, each head short.
                for n in 0..10_000 {
                    if read_head(&mut s).is_none() {
                        return;
                    }
                    if !answer(n, &mut s) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The tick engine sends every request of the schedule once and never
/// before it is due, and the server answered exactly those.
#[test]
fn the_tick_engine_sends_every_request_once_never_early() {
    use pagewire_load::tick::TickOptions;
    use pagewire_load::urls::{run_urls, run_urls_tick, Engine};
    let (dir, m) = site(20);
    let server = Server::start(dir.path());
    let url = format!("http://{}{}", server.addr, m.objects[0].files[0].path);
    let (metrics, stats) = run_urls_tick(
        open_cfg(url.clone(), 8, 3000.0, Engine::Tick),
        TickOptions::default(),
    )
    .unwrap();
    // 1 s at 3,000/s: requests 0..3000 (the 3,000th is due at the end).
    assert_eq!(stats.sent, 3000);
    assert_eq!(stats.early, 0);
    assert_eq!(metrics.send_lag.len(), 3000);
    assert_eq!(metrics.error_total(), 0, "{:?}", metrics.errors);
    assert_eq!(metrics.gets + metrics.gets_outside_window, 3000);
    assert_eq!(metrics.status[&200], 3000);
    // The CLI's path: the same counts, the summary names the engine.
    let (s, _) = run_urls(
        open_cfg(url, 8, 3000.0, Engine::Tick),
        Arc::new(Live::default()),
    )
    .unwrap();
    assert_eq!(s.run.engine, "tick");
    assert_eq!(s.gets + s.gets_outside_window, 3000);
    let stats = server.stop();
    assert_eq!(stats.requests, 6000);
    assert_eq!(stats.responses_2xx, 6000);
    assert_eq!(stats.connections, 16);
}

/// Failures are classified by the tick engine as by the tokio engine:
/// a close mid-body, a close of an idle connection (a FIN, or a reset
/// that makes the next request's send fail), `Connection: close` (not an
/// error: the next request reconnects), a refused port; and both count
/// the status of every response head read, once (a failed send has none).
#[test]
fn the_tick_engine_classifies_failures_as_the_tokio_engine() {
    use pagewire_load::urls::{run_urls, Engine};
    let short: fn(u32, &mut std::net::TcpStream) -> bool = |_, s| {
        use std::io::Write;
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc");
        false
    };
    let idle_close: fn(u32, &mut std::net::TcpStream) -> bool = |_, s| {
        use std::io::Write;
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        false
    };
    let conn_close: fn(u32, &mut std::net::TcpStream) -> bool = |_, s| {
        use std::io::Write;
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        false
    };
    // A response, then a reset once the client has read it (SO_LINGER 0):
    // the next request's send fails, with no response read.
    let idle_reset: fn(u32, &mut std::net::TcpStream) -> bool = |_, s| {
        use nix::sys::socket::{setsockopt, sockopt};
        use std::io::Write;
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        // Requests on a connection are 200 ms apart (5/s each).
        std::thread::sleep(Duration::from_millis(50));
        let off = nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        let _ = setsockopt(&*s, sockopt::Linger, &off);
        false
    };
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    // (server, expected: gets, errors by kind, 200 statuses) for 10
    // requests on 2 connections.
    type Case = (
        std::net::SocketAddr,
        u64,
        &'static [(&'static str, u64)],
        u64,
    );
    let cases: Vec<Case> = vec![
        // Every head read is a 200; every body is cut.
        (scripted_server(short), 0, &[("short_body", 10)], 10),
        // Each connection: a GET, then the next request meets the close
        // (reset), then a fresh connection: GET, reset, ...
        (scripted_server(idle_close), 6, &[("reset", 4)], 6),
        (scripted_server(idle_reset), 6, &[("reset", 4)], 6),
        (scripted_server(conn_close), 10, &[], 10),
        (refused, 0, &[("refused", 10)], 0),
    ];
    for (addr, gets, errors, ok_statuses) in cases {
        for engine in [Engine::Tick, Engine::Tokio] {
            let cfg = open_cfg(format!("http://{addr}/a"), 2, 10.0, engine);
            let (s, _) = run_urls(cfg, Arc::new(Live::default())).unwrap();
            let what = format!("{addr} {engine:?}: {:?}", s.errors_by_kind);
            assert_eq!(s.gets + s.gets_outside_window, gets, "{what}");
            let total: u64 = errors.iter().map(|e| e.1).sum();
            assert_eq!(s.errors, total, "{what}");
            for &(kind, n) in errors {
                assert_eq!(s.errors_by_kind[kind], n, "{what}");
            }
            let statuses = s.status_codes.get("200").copied().unwrap_or(0);
            assert_eq!(statuses, ok_statuses, "{what}: {:?}", s.status_codes);
        }
    }
}

/// A response larger than the socket buffer is read as it comes, not one
/// buffer per tick: with a 64 KB receive buffer (128 KB after the kernel's
/// doubling) a 4 MB body would span at least 32 ticks if throttled. Read as
/// it comes it spans the transfer's own time: 5-7 ticks of 1 ms in 15 runs
/// against the debug-built server here, 9 in the runs that failed the old
/// bound (a quarter of the throttled minimum, 8 ticks: 1 run in 5 to 10 on
/// a quiet machine, and once in CI on 2026-11-27). The bound is half of it.
#[test]
fn the_tick_engine_reads_a_large_response_whole_within_few_ticks() {
    use pagewire_load::tick::TickOptions;
    use pagewire_load::urls::{run_urls_tick, Engine};
    let dir = tempfile::tempdir().unwrap();
    let size = 4 << 20;
    std::fs::write(dir.path().join("big.bin"), vec![b'x'; size]).unwrap();
    let server = Server::start(dir.path());
    let opts = TickOptions {
        rcvbuf: Some(64 * 1024),
        ..TickOptions::default()
    };
    let url = format!("http://{}/big.bin", server.addr);
    let (m, stats) = run_urls_tick(open_cfg(url, 1, 5.0, Engine::Tick), opts).unwrap();
    server.stop();
    assert_eq!(m.error_total(), 0, "{:?}", m.errors);
    assert_eq!(m.gets + m.gets_outside_window, 5);
    assert_eq!(m.body_bytes, 5 * size as u64);
    let throttled = size as u64 / (128 * 1024);
    assert!(
        stats.max_response_ticks * 2 <= throttled,
        "{} ticks for {size} bytes",
        stats.max_response_ticks
    );
}

/// Latency ends at the kernel's receive time of the last byte, not when
/// the engine gets round to reading it. The server answers 20 ms after each
/// request; requests are due every 100 ms (10 a second on two connections,
/// each 200 ms apart). With a 100 ms tick every send falls on the tick grid,
/// and the engine reads each response at the next tick, 100 ms after the
/// send: a latency taken at the read would be ~100 ms for every request,
/// one taken at the kernel's receive time is 20 ms plus the scheduling
/// delays of the two threads. The bound, 70 ms, leaves 50 ms for those (with
/// eight CPU hogs on this 2-core machine and a 1 ms tick, the slowest of 20
/// requests took 43-46 ms, 23-26 ms over the server's delay, in four runs)
/// and rejects the read time by 30 ms. The earlier form of this test (30 ms
/// answers, a 20 ms tick whose grid put half the sends 10 ms late, bound
/// 45 ms) left 5 ms and failed under six or more hogs. With a 1 ms tick
/// both readings are ~20 ms: the bounds hold.
#[test]
fn the_tick_engine_measures_latency_at_the_kernel_receive_time() {
    use pagewire_load::tick::TickOptions;
    use pagewire_load::urls::{run_urls_tick, Engine};
    let slow: fn(u32, &mut std::net::TcpStream) -> bool = |_, s| {
        use std::io::Write;
        std::thread::sleep(Duration::from_millis(20));
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .is_ok()
    };
    let addr = scripted_server(slow);
    for tick_ms in [1, 100] {
        let opts = TickOptions {
            tick: Duration::from_millis(tick_ms),
            ..TickOptions::default()
        };
        // 10 requests, 200 ms apart per connection: none waits for another.
        let cfg = open_cfg(format!("http://{addr}/a"), 2, 10.0, Engine::Tick);
        let (m, stats) = run_urls_tick(cfg, opts).unwrap();
        assert_eq!(m.error_total(), 0, "{:?}", m.errors);
        assert_eq!(m.gets, 10);
        assert_eq!(stats.kernel_stamped, 10);
        let (lo, hi) = (m.get_latency.min(), m.get_latency.max());
        assert!(
            lo >= 20_000 && hi < 70_000,
            "tick {tick_ms} ms: latency {lo}..{hi} us"
        );
    }
}
