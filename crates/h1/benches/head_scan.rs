//! Response-head parsing cost against head size (plain bench, no
//! criterion): heads of 1-64 KiB fed in 1-byte and 1,460-byte (one TCP
//! segment) reads, through the incremental `ResponseParser` and, for
//! comparison, the stateless `parse_response` called after every read (what
//! the robot and the load generator did before). Linear cost shows as a
//! flat ns/byte column.
//!
//! Run: `cargo bench -p pagewire-h1 --bench head_scan [-- --no-stateless]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pagewire_h1::{parse_response, Limits, Method, ResponseParser};

/// A response head of exactly `size` bytes (status line, field lines of at
/// most 1,000 bytes, blank line).
fn head(size: usize) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n".to_vec();
    let mut left = size - out.len() - 2;
    let mut n = 0;
    while left > 0 {
        let mut line = left.min(1000);
        if left > line && left - line < 20 {
            line -= 20;
        }
        let prefix = format!("X-Fill-{n:03}: ");
        out.extend_from_slice(prefix.as_bytes());
        out.resize(out.len() + line - prefix.len() - 2, b'a');
        out.extend_from_slice(b"\r\n");
        left -= line;
        n += 1;
    }
    out.extend_from_slice(b"\r\n");
    assert_eq!(out.len(), size);
    out
}

/// One head fed in `piece`-byte reads; returns the head's length.
fn once(input: &[u8], piece: usize, stateful: bool, limits: &Limits) -> usize {
    let mut parser = ResponseParser::new(limits.clone());
    let mut buf = BytesMut::with_capacity(input.len());
    for chunk in input.chunks(piece) {
        buf.extend_from_slice(chunk);
        let r = if stateful {
            parser.parse(&mut buf, &Method::Get)
        } else {
            parse_response(&mut buf, limits, &Method::Get)
        };
        if let Some(h) = r.expect("valid head") {
            return h.raw().len();
        }
    }
    panic!("incomplete head");
}

/// Nanoseconds per head byte: repeats until at least `budget` has passed
/// (at least once).
fn ns_per_byte(input: &[u8], piece: usize, stateful: bool, budget: Duration) -> f64 {
    let limits = Limits::default();
    let start = Instant::now();
    let mut runs = 0u64;
    while runs == 0 || start.elapsed() < budget {
        black_box(once(black_box(input), piece, stateful, &limits));
        runs += 1;
    }
    start.elapsed().as_nanos() as f64 / (runs as f64 * input.len() as f64)
}

fn main() {
    // `cargo bench` passes `--bench`; ignore it.
    let stateless = !std::env::args().any(|a| a == "--no-stateless");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "# pagewire-h1 head_scan: response head parsing cost, ns per head byte (cargo bench -p pagewire-h1 --bench head_scan); load average {}",
        load.split_whitespace().next().unwrap_or("?")
    );
    println!("# piece_bytes head_KiB ResponseParser_ns_per_byte parse_response_ns_per_byte");
    for piece in [1usize, 1460] {
        let mut first = None;
        let mut last = 0.0;
        for kib in [1usize, 2, 4, 8, 16, 32, 64] {
            let input = head(kib * 1024);
            let inc = ns_per_byte(&input, piece, true, Duration::from_millis(100));
            let full = if stateless {
                format!(
                    "{:.2}",
                    ns_per_byte(&input, piece, false, Duration::from_millis(100))
                )
            } else {
                "-".into()
            };
            println!("{piece} {kib} {inc:.2} {full}");
            first.get_or_insert(inc);
            last = inc;
        }
        println!(
            "# {piece}-byte pieces: ResponseParser ns/byte at 64 KiB / at 1 KiB = {:.2} (1 = linear)",
            last / first.unwrap_or(1.0)
        );
    }
}
