//! `pagewire browse --replay`: headless Chromium in the client namespace
//! renders a recorded two-origin page (`http://a.test` and
//! `https://b.test`, one object requested by a script) from a WARC, every
//! object answered from the archive by `pagewire serve --replay` in the
//! server namespace (HTTP on port 80, HTTPS with a throwaway certificate on
//! 443, both origins mapped there by `--host-resolver-rules`), with a HAR
//! written; and a page whose objects are not in the archive gets the
//! archive's misses counted by the browser (404s marked
//! `X-Pagewire-Replay: miss`) and by the servers. Needs root; with
//! `PAGEWIRE_REQUIRE_ALL=1` (CI) Chromium must be installed.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pagewire_replay::{Bytes, Exchange};
use serde_json::Value;

mod common;

const TIMEOUT: Duration = Duration::from_secs(60);

fn ex(url: &str, ct: &str, body: &str, extra: &[(&str, &str)]) -> Exchange {
    let mut headers = vec![
        ("Content-Type".to_string(), ct.as_bytes().to_vec()),
        (
            "Content-Length".to_string(),
            body.len().to_string().into_bytes(),
        ),
    ];
    for (k, v) in extra {
        headers.push((k.to_string(), v.as_bytes().to_vec()));
    }
    Exchange {
        method: "GET".into(),
        url: url.into(),
        request_head: None,
        status: 200,
        reason: "OK".into(),
        headers,
        body: Bytes::from(body.to_string()),
        timing: None,
    }
}

const SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"80\">\
                   <rect width=\"120\" height=\"80\" fill=\"#48c\"/></svg>";

/// The recorded objects of the page (not the page): what must be served.
const OBJECTS: [&str; 4] = [
    "http://a.test/logo.svg",
    "https://b.test/style.css",
    "https://b.test/app.js",
    "https://b.test/pic.svg",
];

fn write_archive(path: &Path) {
    let page = "<!doctype html><html><head><title>replayed</title>\
                <link rel=stylesheet href=\"https://b.test/style.css\">\
                <script src=\"https://b.test/app.js\"></script></head>\
                <body><h1>A replayed page</h1><p>Two origins, one over TLS.</p>\
                <img src=\"/logo.svg\" width=120 height=80></body></html>";
    let miss_page = "<!doctype html><html><head><title>misses</title>\
                     <link rel=stylesheet href=\"/gone.css\"></head>\
                     <body><h1>Some objects were never recorded</h1>\
                     <img src=\"https://b.test/absent.svg\" width=10 height=10></body></html>";
    // The script adds an image: a request no parser of the page would find.
    let js = "document.addEventListener('DOMContentLoaded', function () {\
              var i = new Image(); i.width = 120; i.height = 80;\
              i.src = 'https://b.test/pic.svg'; document.body.appendChild(i); });";
    let exchanges = vec![
        ex("http://a.test/", "text/html; charset=utf-8", page, &[]),
        ex("http://a.test/logo.svg", "image/svg+xml", SVG, &[]),
        ex(
            "https://b.test/style.css",
            "text/css",
            "body{font-family:sans-serif}h1{color:#246}",
            &[],
        ),
        ex("https://b.test/app.js", "application/javascript", js, &[]),
        ex("https://b.test/pic.svg", "image/svg+xml", SVG, &[]),
        ex("http://a.test/favicon.ico", "image/x-icon", "icon", &[]),
        ex("http://a.test/miss.html", "text/html", miss_page, &[]),
    ];
    pagewire_replay::warc_io::write(path, &exchanges, "pagewire browse test").unwrap();
}

fn browse(args: &[&str], out: &Path) -> (Value, String) {
    let (output, elapsed, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .arg("browse")
            .args(args)
            .arg("--json")
            .arg("--out")
            .arg(out),
        TIMEOUT,
        "pagewire browse --replay",
    );
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        output.status.success(),
        "browse failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    eprintln!("browse {args:?} took {:.1} s", elapsed.as_secs_f64());
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (json, stderr)
}

fn ready() -> bool {
    pagewire_testreq::require_root()
        && pagewire_testreq::require_any_peer(&["chromium", "chromium-browser", "google-chrome"])
            .is_some()
}

#[test]
fn browse_renders_a_replayed_two_origin_page_from_the_archive_alone() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("site.warc.gz");
    write_archive(&archive);
    let out = dir.path().join("out");
    let (j, _) = browse(
        &["--replay", archive.to_str().unwrap(), "--net", "wan"],
        &out,
    );
    assert_eq!(j["url"], "http://a.test/", "the archive's HTML page: {j}");
    let origins: Vec<&str> = j["origins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert_eq!(origins, ["http://a.test:80", "https://b.test:443"]);
    let reps = j["reps"].as_array().unwrap();
    assert_eq!(reps.len(), 1);
    for r in reps {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["misses"], 0, "{r}");
        assert_eq!(r["failed"], 0, "{r}");
        // Rendered: the page painted, and its load event came after it.
        let fcp = r["fcp_s"].as_f64().unwrap_or_else(|| panic!("no FCP: {r}"));
        let load = r["load_s"].as_f64().unwrap();
        assert!(fcp > 0.0 && load >= fcp * 0.5, "{r}");
        assert!(r["lcp_s"].as_f64().is_some(), "no LCP: {r}");
        // Two listeners' connections crossed the link, and the packets.
        assert!(r["connections"].as_u64().unwrap() >= 2, "{r}");
        assert!(r["packets"].as_u64().unwrap() > 10, "{r}");
        let protos = r["protocols"].to_string();
        assert!(protos.contains("http/1.1") && protos.contains("h2"), "{r}");

        // The rep's HAR: every request answered 200 from the archive, each
        // recorded object among them (the script's image too).
        let har: Value =
            serde_json::from_slice(&std::fs::read(out.join(r["har"].as_str().unwrap())).unwrap())
                .unwrap();
        let entries = har["log"]["entries"].as_array().unwrap();
        let urls: Vec<&str> = entries
            .iter()
            .map(|e| e["request"]["url"].as_str().unwrap())
            .collect();
        // (The favicon is the browser's own request: its events may stop
        // short of a response when the page is closed.)
        for e in entries
            .iter()
            .filter(|e| e["request"]["url"] != "http://a.test/favicon.ico")
        {
            assert_eq!(e["response"]["status"], 200, "{e}");
        }
        for want in OBJECTS.iter().chain(["http://a.test/"].iter()) {
            assert!(urls.contains(want), "{want} not loaded: {urls:?}");
        }
        for u in &urls {
            assert!(
                u.starts_with("http://a.test/") || u.starts_with("https://b.test/"),
                "{u}"
            );
        }
        let pic = entries
            .iter()
            .find(|e| e["request"]["url"] == "https://b.test/pic.svg")
            .unwrap();
        assert_eq!(pic["_sha256"], sha256(SVG), "{pic}");
    }
    assert_eq!(j["replay_totals"]["misses"], 0, "{j}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(report.matches("Waterfall, repetition").count(), 1);
    assert!(report.contains("pic.svg"));
}

#[test]
fn browse_counts_the_replay_misses_of_a_page() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("site.warc");
    write_archive(&archive);
    let out = dir.path().join("out");
    let har_path = dir.path().join("all.har");
    let (j, _) = browse(
        &[
            "http://a.test/miss.html",
            "--replay",
            archive.to_str().unwrap(),
            "--net",
            "lan",
            "--reps",
            "2",
            "--har",
            har_path.to_str().unwrap(),
        ],
        &out,
    );
    // /gone.css and https://b.test/absent.svg in each repetition (and no
    // more: the favicon is recorded); the servers count all four.
    for r in j["reps"].as_array().unwrap() {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["misses"], 2, "{j}");
    }
    assert_eq!(j["replay_totals"]["misses"], 4, "{j}");
    let misses = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == "misses")
        .unwrap();
    assert_eq!(misses["mean"], 2.0, "{misses}");
    // One HAR with both repetitions, and a waterfall each in the report.
    let all: Value = serde_json::from_slice(&std::fs::read(&har_path).unwrap()).unwrap();
    assert_eq!(all["log"]["pages"].as_array().unwrap().len(), 2);
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(report.matches("Waterfall, repetition").count(), 2);
    let har: Value =
        serde_json::from_slice(&std::fs::read(out.join("har/r1.har")).unwrap()).unwrap();
    let absent = har["log"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["request"]["url"] == "https://b.test/absent.svg")
        .expect("the unrecorded image was asked for");
    assert_eq!(absent["response"]["status"], 404);
    assert!(
        absent["response"]["headers"]
            .to_string()
            .to_ascii_lowercase()
            .contains("x-pagewire-replay"),
        "{absent}"
    );
}

/// Bad input is refused before anything runs, with what is wrong.
#[test]
fn browse_refuses_a_bad_archive_and_an_unrecorded_page() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.warc");
    std::fs::write(&bad, b"this is not a WARC file\n").unwrap();
    let archive = dir.path().join("site.warc");
    write_archive(&archive);
    for (args, want) in [
        (
            vec!["--replay", bad.to_str().unwrap()],
            "not a usable archive",
        ),
        (
            vec!["http://c.test/", "--replay", archive.to_str().unwrap()],
            "the archive has no origin c.test:80",
        ),
        (
            vec!["--replay", archive.to_str().unwrap(), "--protocol", "h1"],
            "--protocol h1",
        ),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .arg("browse")
            .args(&args)
            .arg("--out")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

fn sha256(s: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `bench --replay ARCHIVE --strategy chromium-h1` (it failed with
/// net::ERR_NAME_NOT_RESOLVED): every recorded host:port is mapped for the
/// browser, the https origin pinned by the TLS listener's key; the page's
/// origin's objects arrive intact, first time and on revalidation (304s:
/// the archive has ETags).
#[test]
fn bench_replay_runs_the_chromium_rows() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("bench.warc");
    let page = "<!doctype html><html><head><title>b</title>\
                <link rel=stylesheet href=\"https://b.test/style.css\"></head>\
                <body><h1>bench</h1><img src=\"/logo.svg\" width=120 height=80></body></html>";
    let tagged = |url: &str, ct: &str, body: &str, tag: &str| {
        ex(
            url,
            ct,
            body,
            &[("ETag", tag), ("Cache-Control", "no-cache")],
        )
    };
    let exchanges = vec![
        tagged("http://a.test/", "text/html", page, "\"p1\""),
        tagged("http://a.test/logo.svg", "image/svg+xml", SVG, "\"l1\""),
        tagged(
            "https://b.test/style.css",
            "text/css",
            "h1{color:#246}",
            "\"s1\"",
        ),
    ];
    pagewire_replay::warc_io::write(&archive, &exchanges, "pagewire browse test").unwrap();
    let out = dir.path().join("bench");
    let (o, _, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args(["bench", "--replay"])
            .arg(&archive)
            .args([
                "--quick",
                "--strategy",
                "chromium-h1",
                "--net",
                "lan",
                "--no-progress",
                "--out",
            ])
            .arg(&out),
        TIMEOUT,
        "pagewire bench --replay --strategy chromium-h1",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let runs = results["runs"].as_array().unwrap();
    assert!(runs.len() >= 2, "{} runs", runs.len());
    for r in runs {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["objects_expected"], 2, "{r}");
        assert_eq!(r["objects_ok"], 2, "{r}");
    }
}
