//! Fidelity of the emulated link against its configuration:
//! connect time over `wan` within 2% of 90 ms (the fastest of 5); bulk transfers over `wan`,
//! `t1` and `ppp` within 3% of the configured rate once past slow start.
//!
//! Timing on a shared machine: the link may never be faster than configured
//! (the emulator enforces delay and rate; load only adds time), so that side
//! is asserted on every attempt. Load can make a measurement slower, so the
//! other side is retried: up to `ATTEMPTS` measurements (a stated budget of
//! a few seconds per test), and the test passes when one is within the
//! tolerance.
//!
//! Rate definition: the link's rate counts IP bytes (headers included), so
//! the payload rate a receiver can see is rate x payload / IP bytes of the
//! data packets that carried it (taken from the run's own counters).

mod common;

use common::*;
use pagewire_link::Rate;

/// Measurements per test before a too-slow result fails it.
const ATTEMPTS: usize = 3;

#[test]
fn connect_time_over_wan_is_90ms_within_2pct() {
    if !can_run() {
        return;
    }
    let _t = timing_lock();
    let link = start(profile("wan"));
    let mut medians = Vec::new();
    for _ in 0..ATTEMPTS {
        let listener = listen(&link);
        let port = listener.local_addr().unwrap().port();
        let server = serve(listener, Vec::new(), 5);
        let mut times: Vec<f64> = (0..5)
            .map(|_| download(&link, port, 0).connect.as_secs_f64() * 1000.0)
            .collect();
        server.join().unwrap();
        times.sort_by(f64::total_cmp);
        // The fastest connect: the link's delay is a floor that load only
        // adds to (a busy machine delays the client, the forwarder or the
        // server, never the other way), so the minimum of 5 is the link's
        // own round trip plus the least scheduling noise.
        let fastest = times[0];
        eprintln!("wan connect times (ms): {times:?}");
        // Faster than the configured round trip is a bug, never load.
        assert!(
            fastest >= 90.0 * 0.98,
            "fastest connect time {fastest:.3} ms < 90 ms - 2%"
        );
        medians.push(fastest);
        if fastest <= 90.0 * 1.02 {
            return;
        }
    }
    panic!("fastest connect time above 90 ms + 2% in all {ATTEMPTS} attempts: {medians:?} ms");
}

/// Downloads `bytes` over `profile` and compares the receiver's payload
/// rate after `mark` bytes (past slow start) with the configured rate.
fn bulk_rate_within_3pct(profile_name: &str, tcp1997: bool, bytes: usize, mark: usize) {
    if !can_run() {
        return;
    }
    let _t = timing_lock();
    let mut cfg = profile(profile_name);
    cfg.tcp1997 = tcp1997;
    let Rate::Bps(rate_bps) = cfg.down_rate else {
        panic!("profile has a constant rate")
    };
    let link = start(cfg);
    let mut errors = Vec::new();
    for _ in 0..ATTEMPTS {
        let listener = listen(&link);
        let port = listener.local_addr().unwrap().port();
        let data = payload(bytes);
        let server = serve(listener, data.clone(), 1);
        link.begin_run(None).unwrap();
        let d = download(&link, port, mark);
        server.join().unwrap();
        let c = link.end_run().unwrap();
        assert!(d.data == data, "payload corrupted");
        let down = &c.server_to_client;
        assert_eq!(c.dropped_total, 0, "no drops expected");
        // Retransmitted bytes would use link time the receiver cannot see.
        assert_eq!(c.retransmissions, 0, "no retransmissions expected");
        let payload_share = down.payload_bytes as f64 / down.kinds.data.bytes as f64;
        let expected = rate_bps as f64 * payload_share;
        let (t_mark, got_at_mark) = d.at_mark;
        let measured = (bytes - got_at_mark) as f64 * 8.0 / (d.total - t_mark).as_secs_f64();
        let err = measured / expected - 1.0;
        eprintln!(
        "{profile_name}: {bytes} B, measured {measured:.0} bit/s payload after {got_at_mark} B, \
         expected {expected:.0} ({rate_bps} bit/s IP x {payload_share:.4}), error {:+.3}%",
        err * 100.0
    );
        // Faster than the configured rate is a bug, never load.
        assert!(err <= 0.03, "rate error {:+.3}% > 3%", err * 100.0);
        if err >= -0.03 {
            return;
        }
        errors.push(err * 100.0);
    }
    panic!("{profile_name}: rate more than 3% below the configured one in all {ATTEMPTS} attempts: {errors:?} %");
}

#[test]
fn bulk_rate_wan_within_3pct() {
    bulk_rate_within_3pct("wan", false, 400_000, 100_000);
}

#[test]
fn bulk_rate_t1_within_3pct() {
    bulk_rate_within_3pct("t1", false, 400_000, 100_000);
}

#[test]
fn bulk_rate_ppp_within_3pct() {
    // 28.8 kbit/s: a 1500-byte packet takes 417 ms. Linux's initial window
    // of 10 segments queues 4.2 s of data against a 1 s initial RTO, so the
    // kernel retransmits spuriously (real TCP behaviour on a slow link, and
    // why the papers' 1997 TCP started with 1-2 segments and a 1 s minimum
    // RTO). With `--tcp 1997` (initial window 2, rto_min 1 s) the link stays
    // saturated without spurious retransmissions: 16 KB take ~5 s.
    bulk_rate_within_3pct("ppp", true, 16_000, 4_000);
}

#[test]
fn trace_driven_downlink_replays_its_rate() {
    if !can_run() {
        return;
    }
    let _t = timing_lock();
    // Mahimahi format: one 1500-byte opportunity per ms = 12 Mbit/s, with a
    // 10 ms gap every 100 ms (so the replay is not a constant rate):
    // 90 opportunities per 100 ms = 10.8 Mbit/s on average.
    let text: String = (1..=100u32)
        .filter(|ms| ms % 100 == 0 || ms % 100 > 10)
        .map(|ms| format!("{ms}\n"))
        .collect();
    let trace = pagewire_link::Trace::parse("test-trace", &text).unwrap();
    let mean = trace.mean_rate_bps();
    let mut cfg = profile("none");
    cfg.profile = "trace".into();
    cfg.rtt = std::time::Duration::from_millis(20);
    cfg.down_rate = Rate::Trace(std::sync::Arc::new(trace));
    let link = start(cfg);
    let bytes = 1_500_000;
    let data = payload(bytes);
    let mut errors = Vec::new();
    // As the bulk rates: faster than the trace is a bug on every attempt;
    // slower is retried (load only adds time), up to ATTEMPTS downloads.
    for _ in 0..ATTEMPTS {
        let listener = listen(&link);
        let port = listener.local_addr().unwrap().port();
        let server = serve(listener, data.clone(), 1);
        link.begin_run(None).unwrap();
        let d = download(&link, port, 300_000);
        server.join().unwrap();
        let c = link.end_run().unwrap();
        assert!(d.data == data);
        assert_eq!(c.retransmissions, 0);
        let down = &c.server_to_client;
        let expected = mean * down.payload_bytes as f64 / down.kinds.data.bytes as f64;
        let (t_mark, got) = d.at_mark;
        let measured = (bytes - got) as f64 * 8.0 / (d.total - t_mark).as_secs_f64();
        let err = measured / expected - 1.0;
        eprintln!(
            "trace: measured {measured:.0} bit/s payload, expected {expected:.0}, error {:+.3}%",
            err * 100.0
        );
        // Within 3% above: the 10 ms gaps every 100 ms put at most about
        // 1% of phase error into a 1.2 MB (~0.9 s) measurement.
        assert!(err <= 0.03, "trace rate error {:+.3}% > 3%", err * 100.0);
        if err >= -0.03 {
            return;
        }
        errors.push(err * 100.0);
    }
    panic!("trace: rate more than 3% below the trace's in all {ATTEMPTS} attempts: {errors:?} %");
}
