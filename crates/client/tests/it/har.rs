//! The robot's HAR: HAR 1.2 valid, `time` the sum of the
//! timings, the connection's setup as `connect` on its first request, the
//! robot's own wait for its pipeline flush timer as `blocked` / `_queued`
//! (not the server's `wait`), and text bodies kept as text.

use crate::common;
use crate::har_schema;

use std::time::Duration;

use common::{make_site, pw_config, PwServer};
use pagewire_client::{fetch_blocking, FetchConfig, Strategy};

const PAGE: &str = "/index.html";

#[test]
fn pipelined_fetch_har_has_setup_queueing_and_text() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    let mut cfg = FetchConfig::new(server.url(PAGE), Strategy::Pipeline);
    cfg.keep_bodies = true;
    // A long flush timer and a big buffer: image requests wait in the
    // robot's buffer for the timer, which must not show as server time.
    cfg.flush_after = Duration::from_millis(40);
    cfg.out_buffer_bytes = 1 << 20;
    cfg.explicit_flush = true;
    let r = fetch_blocking(cfg).unwrap();
    assert_eq!(r.objects.len(), 43);
    let har = pagewire_client::har::to_har(&r);
    har_schema::check(&har);
    let entries = har["log"]["entries"].as_array().unwrap();
    // Every connection's first request carries its TCP handshake; the
    // others do not.
    let with_connect = entries
        .iter()
        .filter(|e| e["timings"]["connect"].as_f64().unwrap() >= 0.0)
        .count();
    assert_eq!(
        with_connect, r.connections_opened,
        "one setup per connection"
    );
    for e in entries {
        assert_eq!(e["timings"]["dns"].as_f64(), Some(-1.0));
        assert_eq!(e["timings"]["ssl"].as_f64(), Some(-1.0), "plain TCP");
    }
    // Image requests waited for the flush timer in the robot's buffer:
    // that wait is `_queued` (and in `blocked`), and `wait` runs from the
    // flush, so it is shorter than request-to-first-byte.
    let queued: Vec<f64> = entries
        .iter()
        .map(|e| e["timings"]["_queued"].as_f64().unwrap())
        .collect();
    assert!(
        queued.iter().any(|&q| q >= 30.0),
        "no request waited for the 40 ms flush timer: {queued:?}"
    );
    for (e, o) in entries.iter().zip(&r.objects) {
        let wait = e["timings"]["wait"].as_f64().unwrap();
        let q = e["timings"]["_queued"].as_f64().unwrap();
        let to_first_byte = o.first_byte_ms - o.requested_ms;
        assert!(
            (wait + q - to_first_byte).abs() < 1e-6,
            "{}: wait {wait} + queued {q} != {to_first_byte}",
            o.url
        );
    }
    // The page is text and kept as text; the GIFs stay base64.
    let page = &entries[0]["response"]["content"];
    assert!(page["text"].as_str().unwrap().contains("<"), "{page}");
    assert!(page.get("encoding").is_none());
    let gif = &entries[1]["response"]["content"];
    assert_eq!(gif["encoding"], "base64");
}
