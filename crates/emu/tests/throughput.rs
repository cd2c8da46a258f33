//! The forwarder must never limit the LAN experiments. The target is
//! at least 1 Gbit/s with no rate limit on this 2-core machine; that is measured
//! by `bench/link-throughput.sh` (a benchmark, run on a quiet machine).
//! This test runs in CI: it streams 100 MB through the link, checks every
//! byte arrived and that the link counted at least the payload, and prints
//! the rate. It asserts no rate of its own: on a shared 2-core machine an
//! absolute rate says more about the neighbours than about the forwarder.
//! The floor is the benchmark's (`PAGEWIRE_THROUGHPUT_FLOOR_BPS`, which
//! `bench/link-throughput.sh` sets to 1 Gbit/s).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use common::*;
use pagewire_link::Rate;

/// Streams `bytes` from server to client through the link; returns the
/// receiver's goodput in bit/s (payload) and the link's IP bit/s.
fn stream(cfg: pagewire_emu::LinkConfig, bytes: usize) -> (f64, f64, bool) {
    let link = start(cfg);
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let chunk = vec![0x5au8; 256 * 1024];
        let mut left = bytes;
        // Bounded by `bytes`.
        while left > 0 {
            let n = left.min(chunk.len());
            s.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
    });
    link.begin_run(None).unwrap();
    let addr = link.server_addr();
    let (got, secs) = link
        .run_in_client(move || {
            let mut c = TcpStream::connect((addr, port)).unwrap();
            let mut buf = vec![0u8; 256 * 1024];
            let t0 = Instant::now();
            let mut got = 0usize;
            loop {
                let n = c.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got += n;
            }
            (got, t0.elapsed().as_secs_f64())
        })
        .unwrap();
    server.join().unwrap();
    let c = link.end_run_now().unwrap();
    eprintln!("forwarder CPU: {:.2} s of {secs:.2} s", forwarder_cpu_s());
    assert_eq!(got, bytes);
    (
        got as f64 * 8.0 / secs,
        c.server_to_client.bytes as f64 * 8.0 / secs,
        link.realtime_forwarder(),
    )
}

fn check(name: &str, mut cfg: pagewire_emu::LinkConfig) {
    if !can_run() {
        return;
    }
    let _t = timing_lock();
    cfg.up_rate = Rate::Unlimited;
    cfg.down_rate = Rate::Unlimited;
    // 100 MB: ~1 s at 1 Gbit/s, bounded to a few seconds when loaded.
    let bytes = std::env::var("PAGEWIRE_THROUGHPUT_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    let (goodput, ip, realtime) = stream(cfg, bytes);
    eprintln!(
        "{name}, no rate limit: {:.2} Gbit/s payload, {:.2} Gbit/s IP through the forwarder",
        goodput / 1e9,
        ip / 1e9
    );
    eprintln!("{name}: forwarder real-time priority: {realtime}");
    // Every IP byte the link carried includes a payload byte at most once:
    // fewer IP bytes than payload would mean the counters (or the data)
    // are wrong.
    assert!(
        ip >= goodput,
        "{name}: link counted {ip} bit/s < payload {goodput} bit/s"
    );
    // Only the benchmark asserts a rate (bench/link-throughput.sh).
    if let Some(floor) = std::env::var("PAGEWIRE_THROUGHPUT_FLOOR_BPS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        assert!(
            ip >= floor,
            "{name}: forwarder carried only {:.3} Gbit/s (floor {:.3})",
            ip / 1e9,
            floor / 1e9
        );
    }
}

#[test]
fn forwarder_carries_an_unlimited_stream_intact() {
    check("none", profile("none"));
}

#[test]
fn forwarder_carries_a_stream_intact_with_lan100_delay() {
    check("lan100", profile("lan100"));
}

/// CPU seconds (user + system) used so far by the forwarder thread(s).
fn forwarder_cpu_s() -> f64 {
    let mut total = 0.0;
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("pw-fwd") && !comm.starts_with("pw-forwarder") {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let rest = &stat[stat.rfind(')').unwrap_or(0) + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        // utime, stime: fields 14 and 15 (11 and 12 after the command).
        let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
        eprintln!("  {}: user {} sys {} ticks", comm.trim(), f[11], f[12]);
        total += ticks / 100.0;
    }
    total
}
