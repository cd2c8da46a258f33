//! Paper 001's pipelining: many requests in one write come back in order, in
//! few writes, because the server flushes when its input runs dry rather
//! than once per response.
use crate::common;

use std::io::Write;

use common::*;
use pagewire_h1::Method;
use pagewire_server::FlushPolicy;
use pagewire_site::microscape;
use pagewire_site::store::Site;

fn microscape_site() -> (Site, Vec<(String, bytes::Bytes)>) {
    let m = microscape::generate(microscape::Options::default());
    let files = m.files();
    (Site::from_files(m.site_files()), files)
}

fn pipelined_batch(files: &[(String, bytes::Bytes)], extra: impl Fn(usize) -> String) -> String {
    files
        .iter()
        .enumerate()
        .map(|(i, (p, _))| req(p, &extra(i)))
        .collect()
}

#[test]
fn pipelined_43_requests_in_one_write_come_back_in_order_in_few_writes() {
    let (site, files) = microscape_site();
    assert_eq!(files.len(), 43);
    let server = TestServer::start(site, config());
    let mut s = server.connect();
    let batch = pipelined_batch(&files, |_| String::new());
    s.write_all(batch.as_bytes()).unwrap();
    let mut r = Reader::new(s);
    for (path, body) in &files {
        let resp = r.response(Method::Get).unwrap();
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(&resp.body, body, "{path} body, in order");
    }
    drop(r);
    let stats = server.stop();
    assert_eq!(stats.requests, 43);
    eprintln!(
        "43 responses, {} bytes: {} writes, {} flushes when full, {} when input drained",
        stats.bytes_written, stats.writes, stats.flushes_full, stats.flushes_input_drained
    );
    // ~180 KB of responses: the queue is flushed twice when it reaches
    // 64 KiB and once when the input runs dry — 3 flushes, not 43. A flush
    // is one writev unless the socket buffer fills (then it continues).
    let flushes = stats.flushes_full + stats.flushes_input_drained;
    assert!(flushes <= 3, "43 responses took {flushes} flushes");
    assert!(
        stats.writes <= 4,
        "43 responses took {} writes",
        stats.writes
    );
    assert_eq!(stats.flushes_each_response, 0);
}

#[test]
fn pipelined_43_revalidations_leave_in_one_write() {
    let (site, files) = microscape_site();
    let etags: Vec<String> = files
        .iter()
        .map(|(p, _)| site.get(p).unwrap().etag.clone())
        .collect();
    let server = TestServer::start(site, config());
    let mut s = server.connect();
    let batch = pipelined_batch(&files, |i| format!("If-None-Match: {}\r\n", etags[i]));
    s.write_all(batch.as_bytes()).unwrap();
    let mut r = Reader::new(s);
    for (i, (path, _)) in files.iter().enumerate() {
        let resp = r.response(Method::Get).unwrap();
        assert_eq!(resp.status, 304, "{path}");
        assert_eq!(resp.header("etag"), Some(etags[i].as_str()));
        assert!(resp.body.is_empty());
    }
    drop(r);
    let stats = server.stop();
    assert_eq!(stats.writes, 1, "43 x 304 in one write");
}

#[test]
fn flush_each_response_writes_once_per_response() {
    let (site, files) = microscape_site();
    let etags: Vec<String> = files
        .iter()
        .map(|(p, _)| site.get(p).unwrap().etag.clone())
        .collect();
    let server = TestServer::start(
        site,
        pagewire_server::ServerConfig {
            flush: FlushPolicy::EachResponse,
            ..config()
        },
    );
    let mut s = server.connect();
    let batch = pipelined_batch(&files, |i| format!("If-None-Match: {}\r\n", etags[i]));
    s.write_all(batch.as_bytes()).unwrap();
    let mut r = Reader::new(s);
    for _ in 0..43 {
        assert_eq!(r.response(Method::Get).unwrap().status, 304);
    }
    drop(r);
    let stats = server.stop();
    assert_eq!(stats.writes, 43);
    assert_eq!(stats.flushes_each_response, 43);
}

#[test]
fn request_split_across_writes_and_mixed_batches() {
    let server = TestServer::start(small_site(), config());
    let mut s = server.connect();
    let two = format!("{}{}", req("/b.gif", ""), req("/a.gif", ""));
    // Byte by byte for the first request, then the rest at once.
    let (first, rest) = two.as_bytes().split_at(30);
    for b in first {
        s.write_all(&[*b]).unwrap();
        // Behaviour, not synchronisation: a pause per byte so the server's
        // reads see the request in pieces.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    s.write_all(rest).unwrap();
    let mut r = Reader::new(s);
    assert_eq!(r.response(Method::Get).unwrap().body.len(), 100);
    assert_eq!(r.response(Method::Get).unwrap().body.len(), 3000);
}
