//! Hot-path micro-benchmark (no criterion): parse a typical ~190-byte GET
//! with 6 header fields one million times, the way the server does
//! (append the bytes to a reused read buffer, split the head off), and
//! count heap allocations per request with a counting allocator.
//!
//! Run: `cargo run --release -p pagewire-h1 --example parse_bench [-- N]`
//! Prints: command, N, ns/request, allocations/request, for a single
//! request per buffer fill and for pipelined batches of 100.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::BytesMut;
use pagewire_h1::{parse_request, Decoded, Decoder, Limits, RequestParser};

/// Counts allocations so the "no allocation per header" claim is measured.
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const REQUEST: &[u8] = b"GET /images/nav/button-12.gif HTTP/1.1\r\n\
Host: www.microscape.example\r\n\
User-Agent: pagewire-robot/0.1\r\n\
Accept: image/gif, image/png, */*;q=0.8\r\n\
Accept-Encoding: deflate, gzip\r\n\
If-None-Match: \"5f2a-1c8e\"\r\n\
Connection: keep-alive\r\n\r\n";

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // Optional second argument: run only one mode (httparse|single|pipelined),
    // e.g. under `perf stat -e instructions`.
    let only = std::env::args().nth(2).unwrap_or_default();
    let run = |mode: &str| only.is_empty() || only == mode;
    let limits = Limits::default();
    println!(
        "# pagewire-h1 parse_bench, request {} bytes, N={n} (cargo run --release -p pagewire-h1 --example parse_bench)",
        REQUEST.len()
    );

    // Floor: httparse alone on the same bytes (no limits, no framing, no
    // index, no split), the library every Rust HTTP/1 server builds on.
    if run("httparse") {
        let t0 = Instant::now();
        for _ in 0..n {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut headers);
            black_box(req.parse(black_box(REQUEST)).unwrap());
        }
        let floor = t0.elapsed().as_nanos() as f64 / n as f64;
        println!("httparse:  {floor:.1} ns/request (floor: parse only, 16 headers array)");
    }

    // Single request per fill: the keep-alive case.
    let mut buf = BytesMut::with_capacity(64 * 1024);
    if run("single") {
        for _ in 0..10_000 {
            buf.extend_from_slice(REQUEST);
            black_box(parse_request(&mut buf, &limits).unwrap().unwrap());
        }
        let a0 = ALLOCS.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let mut hosts = 0usize;
        for _ in 0..n {
            buf.extend_from_slice(REQUEST);
            let head = parse_request(&mut buf, &limits).unwrap().unwrap();
            hosts += head.header("host").map_or(0, |h| h.len());
            let mut body = Decoder::new(head.body_framing().unwrap(), &limits);
            assert_eq!(body.decode(&mut buf).unwrap(), Decoded::Done);
            black_box(&head);
        }
        let dt = t0.elapsed();
        let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
        black_box(hosts);
        println!(
            "single:    {:.1} ns/request, {:.4} allocations/request, {:.0} MB/s",
            dt.as_nanos() as f64 / n as f64,
            allocs as f64 / n as f64,
            (n as f64 * REQUEST.len() as f64) / dt.as_secs_f64() / 1e6
        );
    }
    if run("parser") {
        let mut parser = RequestParser::new(limits.clone());
        let a0 = ALLOCS.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for _ in 0..n {
            buf.extend_from_slice(REQUEST);
            let head = parser.parse(&mut buf).unwrap().unwrap();
            black_box(head.header("host"));
        }
        let dt = t0.elapsed();
        let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
        println!(
            "parser:    {:.1} ns/request, {:.4} allocations/request (RequestParser, one request per read)",
            dt.as_nanos() as f64 / n as f64,
            allocs as f64 / n as f64
        );
    }
    if run("slow") {
        slow_sender(&limits);
    }
    if !run("pipelined") {
        return;
    }

    // Pipelined: 100 requests arrive in one read.
    let batch = 100u64;
    let rounds = (n / batch).max(1);
    let mut wire = Vec::new();
    for _ in 0..batch {
        wire.extend_from_slice(REQUEST);
    }
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t0 = Instant::now();
    for _ in 0..rounds {
        buf.extend_from_slice(&wire);
        while let Some(head) = parse_request(&mut buf, &limits).unwrap() {
            black_box(head.target());
        }
    }
    let dt = t0.elapsed();
    let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
    let total = rounds * batch;
    println!(
        "pipelined: {:.1} ns/request, {:.4} allocations/request (batches of {batch})",
        dt.as_nanos() as f64 / total as f64,
        allocs as f64 / total as f64
    );
}

/// A slow sender: a ~15 KB head (99 fields of ~150 bytes) arriving one
/// byte per read. The stateless parser re-parses the partial head on every
/// read (quadratic); `RequestParser` scans each byte once.
fn slow_sender(limits: &Limits) {
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..98 {
        head.extend_from_slice(format!("X-Field-{i:02}: {}\r\n", "v".repeat(136)).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    let mut buf = BytesMut::with_capacity(head.len());
    let t0 = Instant::now();
    for &b in &head {
        buf.extend_from_slice(&[b]);
        if let Some(h) = parse_request(&mut buf, limits).unwrap() {
            black_box(h);
        }
    }
    let stateless = t0.elapsed();
    let mut parser = RequestParser::new(limits.clone());
    let t0 = Instant::now();
    let mut got = 0;
    for &b in &head {
        buf.extend_from_slice(&[b]);
        if let Some(h) = parser.parse(&mut buf).unwrap() {
            black_box(h);
            got += 1;
        }
    }
    let stateful = t0.elapsed();
    assert_eq!(got, 1);
    println!(
        "slow:      {} byte head, 1 byte per read: parse_request {:.1} ms, RequestParser {:.3} ms",
        head.len(),
        stateless.as_secs_f64() * 1e3,
        stateful.as_secs_f64() * 1e3
    );
}
