//! The link fidelity monitor: the forwarder records how
//! late every packet it delivers leaves against the model's departure
//! time; a run's counters carry the summary, and `take_lateness` hands the
//! raw recorder over independently of runs.

mod common;

use common::*;
use pagewire_link::lateness_threshold;

#[test]
fn every_delivered_packet_is_timed_and_summarised() {
    if !can_run() {
        return;
    }
    let _t = timing_lock();
    let cfg = profile("wan");
    let one_way = cfg.one_way_delay();
    let link = start(cfg);
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let data = payload(60_000);
    let server = serve(listener, data.clone(), 1);
    // Whatever crossed before (nothing should have) is not this run's.
    link.take_lateness().unwrap();
    link.begin_run(None).unwrap();
    let d = download(&link, port, 0);
    server.join().unwrap();
    let c = link.end_run().unwrap();
    assert!(d.data == data, "payload corrupted");
    // The recorder saw exactly the packets the counters counted: one
    // lateness per packet that left the link.
    let taken = link.take_lateness().unwrap();
    assert!(c.packets_total > 40, "{}", c.packets_total);
    assert_eq!(taken.count(), c.packets_total);
    let l = c.link_lateness;
    eprintln!("wan run lateness: {l:?}");
    assert!(
        l.p50_ms >= 0.0 && l.p50_ms <= l.p99_ms && l.p99_ms <= l.max_ms,
        "{l:?}"
    );
    assert!((0.0..=1.0).contains(&l.share_over_1ms), "{l:?}");
    // The same summary from the raw recorder, and the flag follows the
    // stated rule.
    assert_eq!(taken.summary(one_way), l);
    let threshold_ms = lateness_threshold(one_way).as_secs_f64() * 1e3;
    assert_eq!(l.flagged, l.p99_ms > threshold_ms);
    // A second take starts from zero.
    assert_eq!(link.take_lateness().unwrap().count(), 0);
}
