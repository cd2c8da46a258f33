//! Checks of what a results directory contains (docs/results.md): its
//! results.json against the published JSON Schema, its results.csv as a
//! plain CSV reader sees it, and every HAR against the HAR 1.2 schema with
//! `time` equal to the sum of the timings. Used by the suites' tests.
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

fn schema(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Why `doc` fails `schema_name` (every failing keyword with its place in
/// the document), or None when it validates.
pub fn schema_errors(schema_name: &str, doc: &Value) -> Option<String> {
    let s = schema(schema_name);
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource(schema_name, s)
        .expect("the schema is a JSON document");
    let idx = compiler
        .compile(schema_name, &mut schemas)
        .unwrap_or_else(|e| panic!("the schema {schema_name} compiles: {e:#}"));
    schemas.validate(doc, idx).err().map(|e| format!("{e:#}"))
}

fn validate(schema_name: &str, doc: &Value, what: &str) {
    if let Some(e) = schema_errors(schema_name, doc) {
        panic!("{what} does not validate against {schema_name}:\n{e}");
    }
}

/// A HAR document: valid HAR 1.2, and every entry's `time` is the sum of
/// its timings (-1 values and `ssl`, which HAR 1.2 counts inside
/// `connect`, left out).
pub fn check_har(har: &Value, what: &str) {
    validate("har-1.2.schema.json", har, what);
    for (i, e) in har["log"]["entries"].as_array().unwrap().iter().enumerate() {
        let t = &e["timings"];
        let sum: f64 = ["blocked", "dns", "connect", "send", "wait", "receive"]
            .iter()
            .map(|k| t[*k].as_f64().unwrap_or(-1.0).max(0.0))
            .sum();
        let time = e["time"].as_f64().unwrap();
        assert!(
            (time - sum).abs() < 1e-6 * time.max(1.0),
            "{what}: entry {i} time {time} != sum of timings {sum}: {t}"
        );
    }
}

/// results.json validates against the published schema; results.csv reads
/// as a plain CSV (no comment line) with one row per run record and the
/// link lateness columns; every HAR under `har/` is checked.
pub fn check_results_dir(dir: &Path) {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    validate("results.schema.json", &json, "results.json");
    let csv_text = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(
        !csv_text.starts_with('#'),
        "results.csv starts with a comment line"
    );
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    for col in [
        "link_lateness_p50_ms",
        "link_lateness_p99_ms",
        "link_lateness_max_ms",
        "link_lateness_share_over_1ms",
        "link_lateness_flagged",
    ] {
        assert!(
            header.iter().any(|h| h == col),
            "results.csv lacks {col}: {header:?}"
        );
    }
    let mut rows = 0;
    for rec in r.records() {
        rec.unwrap();
        rows += 1;
    }
    let records = ["runs", "points", "cells", "rows"]
        .iter()
        .find_map(|k| json[*k].as_array())
        .expect("run records");
    // objpack writes its cold-cache and window runs apart from `rows`;
    // results.csv has one row for each of them all.
    let extra: usize = ["cold_rows", "window_rows"]
        .iter()
        .filter_map(|k| json[*k].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(
        rows,
        records.len() + extra,
        "results.csv rows vs results.json records"
    );
    check_hars_in(dir);
}

/// Every HAR under `dir/har/` (a results directory's, also a partial one)
/// passes [`check_har`]; returns how many there were.
pub fn check_hars_in(dir: &Path) -> usize {
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(dir.join("har")) {
        for f in rd {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "har") {
                let har: Value =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                check_har(&har, &p.display().to_string());
                n += 1;
            }
        }
    }
    n
}

/// Opens `dir/report.html` in headless Chromium at 1400x900 (the first
/// screen of a laptop), keeps the screenshot as `dir/report-first-screen.png`
/// and asserts that a plot is in it: at least `min_pixels` pixels of the
/// plots' first series colour `rgb`. Skips without Chromium, except with
/// `PAGEWIRE_REQUIRE_ALL=1` (setup-deps.sh installs it), where it fails.
pub fn check_report_first_screen(dir: &Path, rgb: [u8; 3], min_pixels: usize) {
    let Some(chromium) = pagewire_lab::microscape::chromium::find_chromium() else {
        assert!(
            std::env::var("PAGEWIRE_REQUIRE_ALL").as_deref() != Ok("1"),
            "PAGEWIRE_REQUIRE_ALL=1 but no Chromium (run scripts/setup-deps.sh)"
        );
        eprintln!("SKIPPED report.html screenshot: no Chromium");
        return;
    };
    let html = dir.join("report.html").canonicalize().unwrap();
    let shot = dir.join("report-first-screen.png");
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--window-size=1400,900",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--screenshot={}", shot.display()))
    .arg(format!("file://{}", html.display()));
    let (out, _, _) = crate::common::run_bounded(
        &mut cmd,
        std::time::Duration::from_secs(60),
        "chromium --screenshot report.html",
    );
    assert!(
        shot.exists(),
        "no screenshot: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.color_type.samples();
    assert!(bpp >= 3, "{:?}", info.color_type);
    assert_eq!((info.width, info.height), (1400, 900));
    let hits = buf[..info.buffer_size()]
        .chunks_exact(bpp)
        .filter(|p| p[..3] == rgb)
        .count();
    eprintln!(
        "report.html first screen: {hits} pixels of rgb{rgb:?} ({})",
        shot.display()
    );
    assert!(
        hits >= min_pixels,
        "no plot in the first screen of report.html: {hits} pixels of rgb{rgb:?} (screenshot {})",
        shot.display()
    );
}
