//! `pagewire throttle --quick`: the Microscape page loaded by headless
//! Chromium over HTTP/1.1 three ways on the LAN profile — over the
//! packet-level link, with DevTools request-level throttling on the
//! unshaped link, and predicted from the unthrottled trace — each load
//! bringing back all 43 objects byte-exact, no foreign packet on the link,
//! and each method's error against packet-level in results.json and the
//! report. Needs root and Chromium (skips without them outside CI).

use std::process::Command;
use std::time::Duration;

mod common;

#[test]
fn throttle_quick_compares_three_methods_on_the_microscape_page() {
    if !pagewire_testreq::require_root() {
        return;
    }
    if pagewire_testreq::require_any_peer(&["chromium", "chromium-browser", "google-chrome"])
        .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t");
    let run = || {
        common::run_bounded(
            Command::new(env!("CARGO_BIN_EXE_pagewire"))
                .args(["throttle", "--quick", "--out"])
                .arg(&out),
            Duration::from_secs(120),
            "pagewire throttle --quick",
        )
    };
    let (mut output, mut elapsed, _) = run();
    // Chromium under DevTools throttling sometimes never fires the load
    // event (1 of 4 CI runs on 2026-11-26; the same load passed in every
    // rerun): one more run then, with the first failure printed. Any other
    // failure, or the same one twice, fails the test.
    if !output.status.success()
        && String::from_utf8_lossy(&output.stderr).contains("no load event within")
    {
        eprintln!(
            "first run: a load without a load event, run again:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        (output, elapsed, _) = run();
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    eprintln!("throttle --quick took {:.1} s", elapsed.as_secs_f64());
    assert!(stdout.contains("LAN link"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(v["provenance"]["git_commit"].as_str().unwrap().len(), 40);
    let loads = v["loads"].as_array().unwrap();
    let of = |m: &str| {
        loads
            .iter()
            .filter(|l| l["method"] == m)
            .collect::<Vec<_>>()
    };
    for m in ["unthrottled", "cdp", "packet"] {
        let ls = of(m);
        assert_eq!(ls.len(), 1, "{m}");
        let l = ls[0];
        assert!(l["error"].is_null(), "{m}: {}", l["error"]);
        assert_eq!(l["objects_ok"], 43, "{m}");
        assert_eq!(l["foreign_packets"], 0, "{m}: background traffic");
        assert!(l["packets"].as_u64().unwrap() > 2 * 43, "{m}");
        assert_eq!(l["protocols"], serde_json::json!(["http/1.1"]), "{m}");
        for o in l["objects"].as_array().unwrap() {
            let (s, f, e) = (
                o["start_s"].as_f64().unwrap(),
                o["first_byte_s"].as_f64().unwrap(),
                o["last_byte_s"].as_f64().unwrap(),
            );
            assert!(s <= f + 1e-9 && f <= e + 1e-9, "{m}: {o}");
        }
    }
    // The model replays every request of the trace; at 10 Mbit/s its last
    // byte cannot come before the bytes' line time.
    let model = of("model");
    assert_eq!(model.len(), 1);
    let trace = &of("unthrottled")[0]["objects"];
    assert_eq!(
        model[0]["objects"].as_array().unwrap().len(),
        trace.as_array().unwrap().len()
    );
    let bytes: u64 = trace
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["bytes"].as_u64().unwrap())
        .sum();
    // (The page's HTML crosses deflated: fewer than its 171,415 body bytes.)
    assert!(bytes > 100_000, "{bytes}");
    assert!(model[0]["last_byte_s"].as_f64().unwrap() >= bytes as f64 * 8.0 / 10e6);
    // One error per method against packet-level.
    let errors = v["errors"].as_array().unwrap();
    for m in ["cdp", "model"] {
        let e = errors.iter().find(|e| e["method"] == m).unwrap();
        assert!(e["load_error_pct"].as_f64().unwrap().is_finite(), "{e}");
        assert!(e["objects_matched"].as_u64().unwrap() >= 43, "{e}");
        // One load a side: its load time is kept, and no interval is made up.
        assert_eq!(e["method_loads_s"].as_array().unwrap().len(), 1, "{e}");
        assert_eq!(e["packet_loads_s"].as_array().unwrap().len(), 1, "{e}");
        assert!(e["within_noise"].is_null(), "{e}");
    }
    assert!(out
        .join("traces/microscape-none-h1-unthrottled-r0.json")
        .is_file());
    assert!(out.join("report.txt").is_file());
}
