//! Prefetching end to end (paper 003 §7): `pagewire serve --prefetch` learns
//! from scripted page visits, piggybacks `Link: <url>; rel=prefetch` hints,
//! the robot (`pagewire fetch --prefetch`) prefetches what it does not hold
//! into its cache, and a later visit to the prefetched page is answered from
//! that cache (a 304 revalidation, no body bytes on the wire).
//!
//! Plus the CLI of the simulator on a small log: flags validated, JSON
//! records, output files with provenance.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::{Serve, PW};

/// Run `pagewire fetch ... --json` and parse its report.
fn fetch(url: &str, extra: &[&str]) -> Value {
    let out = Command::new(PW)
        .args(["fetch", url, "--json", "--read-timeout", "10s"])
        .args(extra)
        .output()
        .expect("run pagewire fetch");
    assert!(
        out.status.success(),
        "fetch {url} {extra:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON report")
}

fn object<'a>(report: &'a Value, path: &str) -> Option<&'a Value> {
    report["objects"]
        .as_array()?
        .iter()
        .find(|o| o["url"].as_str().is_some_and(|u| u.ends_with(path)))
}

fn site(dir: &Path) {
    let write = |p: &str, body: &[u8]| std::fs::write(dir.join(p), body).unwrap();
    write(
        "a.html",
        b"<html><body><h1>A</h1><img src=\"/a.gif\"><a href=\"/b.html\">next</a></body></html>",
    );
    write(
        "b.html",
        b"<html><body><h1>B</h1><img src=\"/b.gif\"><p>the page prefetched</p></body></html>",
    );
    // Tiny GIF headers: the server only needs bytes and an extension.
    write("a.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;");
    write("b.gif", b"GIF89a\x02\x00\x02\x00\x00\x00\x00;");
}

#[test]
fn server_hints_robot_prefetches_later_visit_is_served_from_cache() {
    let root = tempfile::tempdir().unwrap();
    site(root.path());
    // w = 3: a page, its image and the next page fall in one window.
    let server = Serve::start(root.path(), &["--prefetch", "w=3,p=0.5,i=4"]);
    let a = format!("{}/a.html", server.url);
    let b = format!("{}/b.html", server.url);

    // Scripted visits, A then B, three times: the predictor learns that
    // /a.html is followed by /a.gif and /b.html (weight 1.0 each).
    for _ in 0..3 {
        fetch(&a, &["--strategy", "http11"]);
        fetch(&b, &["--strategy", "http11"]);
    }

    // A visit to A with prefetching on: the hint for /b.html appears and the
    // robot fetches it with Sec-Purpose: prefetch into its cache.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let visit = fetch(
        &a,
        &["--strategy", "http11", "--prefetch", "--cache", cache_dir],
    );
    let hints: Vec<&str> = visit["prefetch_hints"]
        .as_array()
        .expect("prefetch_hints")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        hints.iter().any(|h| h.ends_with("/b.html")),
        "no hint for /b.html in {hints:?}"
    );
    let pre = object(&visit, "/b.html").expect("b.html was prefetched");
    assert_eq!(pre["kind"], "prefetch");
    assert_eq!(pre["status"], 200);
    // Not hinted twice: /a.gif was fetched as an embedded object already.
    assert_eq!(object(&visit, "/a.gif").unwrap()["kind"], "embedded");

    // The prefetch of /b.html is itself answered with hints (advise() on
    // /b.html: its image), which the robot follows too.
    let img_prefetched = object(&visit, "/b.gif").is_some_and(|o| o["kind"] == "prefetch");

    // Later visit to B with the same cache: the page comes from the cache —
    // the server only confirms it (304), no body bytes cross the wire.
    let later = fetch(
        &b,
        &["--strategy", "http11", "--cache", cache_dir, "--revalidate"],
    );
    let page = object(&later, "/b.html").expect("b.html");
    assert_eq!(page["outcome"], "not-modified", "{page}");
    assert_eq!(page["body_bytes_received"], 0);
    assert_eq!(page["size"], 80);
    let img = object(&later, "/b.gif").expect("b.gif");
    let expected = if img_prefetched {
        "not-modified"
    } else {
        "fetched"
    };
    assert_eq!(img["outcome"], expected, "{img}");

    // Control: a robot that did not prefetch has to fetch B's page in full.
    let cold = tempfile::tempdir().unwrap();
    let control = fetch(
        &b,
        &[
            "--strategy",
            "http11",
            "--cache",
            cold.path().to_str().unwrap(),
            "--revalidate",
        ],
    );
    let page = object(&control, "/b.html").unwrap();
    assert_eq!(page["outcome"], "fetched");
    assert_eq!(page["body_bytes_received"], 80);
}

#[test]
fn simulate_cli_json_records_and_output_files() {
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../prefetch/tests/data/sample.log"
    );
    let out_dir = tempfile::tempdir().unwrap();
    let out = Command::new(PW)
        .args(["prefetch", "simulate", "--log", log])
        .args([
            "--p", "0.5,1.1", "--w", "2,4", "--i", "1,all", "--json", "--out",
        ])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 2 p × 2 w × 2 i × 2 models.
    assert_eq!(records.len(), 16);
    for r in &records {
        for key in [
            "p",
            "w",
            "i",
            "miss_rate",
            "avg_access_time_s",
            "traffic_increase",
            "prefetches",
            "useful",
            "wasted",
        ] {
            assert!(!r[key].is_null(), "{key} missing in {r}");
        }
        if r["p"] == 1.1 {
            assert_eq!(r["prefetches"], 0);
            assert_eq!(r["traffic_increase"], 0.0);
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("proportional split"), "{stderr}");
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    // A plain CSV (header, one row per point); the provenance, with the
    // log's SHA-256, is in summary.json.
    assert!(csv.starts_with("model,w,i,p,"), "{csv}");
    assert!(!csv.lines().any(|l| l.starts_with('#')), "{csv}");
    let summary = std::fs::read_to_string(out_dir.path().join("summary.json")).unwrap();
    assert!(summary.contains("sha256"));
    let svg = std::fs::read_to_string(out_dir.path().join("fig10_miss_rate_vs_p.svg")).unwrap();
    assert!(svg.contains("<desc>made by: pagewire"));

    // Bad flags are refused before anything is read.
    for bad in [
        &["--p", "x"][..],
        &["--w", "1"],
        &["--i", "0"],
        &["--model", "fast"],
        &["--time-model", "1,x"],
        &["--traffic", "bytes"],
        &["--weights", "during"],
        &["--threshold-rule", "eq"],
        &["--entries", "some"],
        &["--schedule", "parallel"],
        &["--window-reset", "30"],
    ] {
        let o = Command::new(PW)
            .args(["prefetch", "simulate", "--log", log])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(!o.stderr.is_empty());
    }
    let o = Command::new(PW)
        .args(["prefetch", "simulate", "--log", "/nonexistent/log"])
        .output()
        .unwrap();
    // Flags fine, the run failed (its input cannot be read): exit 1.
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/log"));
}

/// The reading flags reach the simulator: `--traffic` picks the measure that
/// `traffic_increase` reports, every measure is in `traffic`; `prefetch
/// stats` prints the log's statistics beside what the paper says of DEC's.
#[test]
fn simulate_readings_and_stats_cli() {
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../prefetch/tests/data/sample.log"
    );
    let out = Command::new(PW)
        .args(["prefetch", "simulate", "--log", log])
        .args(["--p", "0.3", "--w", "2", "--i", "all", "--model", "simple"])
        .args(["--traffic", "gross-blocks", "--weights", "after"])
        .args(["--schedule", "shared"])
        .args([
            "--threshold-rule",
            "gt",
            "--entries",
            "get",
            "--window-reset",
            "30m",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["traffic_increase"], r["traffic"]["gross_blocks"]);
    assert!(r["prefetches"].as_u64().unwrap() > 0, "{r}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("readings: weights read after counting the request, threshold gt, traffic gross-blocks, entries get, realistic schedule shared, window reset after 1800 s of silence"),
        "{stderr}"
    );

    let out = Command::new(PW)
        .args(["prefetch", "stats", "--log", log])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "what paper 003 says of DEC's log",
        "accesses per host",
        "successors per document",
        "prefetches by the weight of the advising arc",
    ] {
        assert!(text.contains(want), "{want} missing in {text}");
    }
    let out = Command::new(PW)
        .args(["prefetch", "stats", "--json", "--log", log])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["lines"], 3000);

    // The known-answer log: 200 walks of 4 requests, and its exact answer.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("markov.log");
    let out = Command::new(PW)
        .args(["prefetch", "markov-log", "--hosts", "200", "--out"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("p = 0.5: miss rate 0.4750"));
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 800);
}
