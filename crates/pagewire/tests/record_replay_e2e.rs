//! Record, then replay, end to end: `pagewire record` of a local TLS site
//! (nginx with two origins, one object fetched by a script and one
//! inserted by a script; tests/common/tls_site.rs), nginx stopped, then
//! the archive alone answers
//! * `pagewire browse URL --replay ARCHIVE --net wan`: headless Chromium
//!   renders the page over the emulated WAN with every object from the
//!   archive (no miss, in the browser's HAR or the replay servers'
//!   counters), and a HAR written;
//! * `pagewire bench --replay ARCHIVE --strategy h2,h3`: the robot's rows
//!   reach the archive's TLS server and bring back the page's objects,
//!   byte-exact, first time and on revalidation.
//!
//! Needs root (namespaces), nginx and Chromium; with
//! `PAGEWIRE_REQUIRE_ALL=1` (CI) a missing one fails the test.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

mod common;

use common::tls_site::{processes_naming, record, require_nginx_and_chromium, TlsSite};
use common::{run_bounded, sha256_hex, PW};

fn ready() -> Option<std::path::PathBuf> {
    if !pagewire_testreq::require_root() {
        return None;
    }
    require_nginx_and_chromium()
}

/// Records the site into `dir/site.warc.gz` and stops nginx: whatever
/// answers afterwards is the archive. Returns the stopped site's facts.
fn recorded(nginx: &Path, dir: &Path) -> (TlsSite, std::path::PathBuf) {
    let site = TlsSite::start(nginx, &dir.join("site"));
    let warc = dir.join("site.warc.gz");
    let (stdout, stderr) = record(&site, &warc, &dir.join("tmp"), &[]);
    assert!(
        stdout.contains("from 2 origins"),
        "both origins: {stdout}\n{stderr}"
    );
    (site, warc)
}

#[test]
fn a_recorded_tls_site_replays_in_chromium_over_wan_from_the_archive_alone() {
    let Some(nginx) = ready() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (site, warc) = recorded(&nginx, d);
    let page = site.page_url();
    let objects: Vec<(String, Vec<u8>)> = site
        .objects
        .iter()
        .map(|o| (site.url_of(o), o.body.clone()))
        .collect();
    let (a, b) = (site.a.clone(), site.b.clone());
    // nginx goes: from here on only the archive can answer.
    drop(site);

    let out = d.join("browse");
    let har_path = d.join("page.har");
    let (o, elapsed, _) = run_bounded(
        Command::new(PW)
            .args(["browse", &page, "--replay"])
            .arg(&warc)
            .args(["--net", "wan", "--json", "--har"])
            .arg(&har_path)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(28),
        "pagewire browse --replay",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "browse: {stdout}\n{stderr}");
    eprintln!("browse --replay took {:.1} s", elapsed.as_secs_f64());
    let j: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(j["url"], page.as_str());
    assert_eq!(j["net"], "wan");
    let origins: Vec<&str> = j["origins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    let mut want = vec![format!("https://{a}"), format!("https://{b}")];
    want.sort();
    assert_eq!(origins, want, "{j}");
    let r = &j["reps"][0];
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["misses"], 0, "{r}");
    assert_eq!(r["failed"], 0, "{r}");
    assert!(r["fcp_s"].as_f64().is_some(), "not rendered: {r}");
    let protos = r["protocols"].to_string();
    assert!(protos.contains("h2"), "{r}");
    assert_eq!(j["replay_totals"]["misses"], 0, "{j}");

    // The HAR: the page and every object it asks for before its load
    // event (the script's fetch among them) answered 200 with the
    // recorded bytes, nothing from anywhere but the two origins.
    let har: Value = serde_json::from_slice(&std::fs::read(&har_path).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array().unwrap();
    for e in entries {
        let url = e["request"]["url"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("https://{a}/")) || url.starts_with(&format!("https://{b}/")),
            "{url}"
        );
        if url.ends_with("/late.bin") {
            // Inserted after the load event: the HAR may be taken while it
            // is still in flight (status 0, no response yet); if it did
            // arrive, it arrived whole from the archive.
            let status = &e["response"]["status"];
            assert!(*status == 200 || *status == 0, "{e}");
        } else if !url.ends_with("/favicon.ico") {
            assert_eq!(e["response"]["status"], 200, "{e}");
        }
    }
    for (url, body) in objects.iter().filter(|(u, _)| !u.ends_with("/late.bin")) {
        let e = entries
            .iter()
            .find(|e| e["request"]["url"] == url.as_str())
            .unwrap_or_else(|| panic!("{url} not in the HAR"));
        assert_eq!(e["_sha256"], sha256_hex(body), "{url}: {e}");
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("Waterfall, repetition 1"));
    let left = processes_naming(&d.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// The robot's h2 and h3 rows of `bench --replay` on the recorded archive
/// (its page is https): they reach the TLS replay server, every object of
/// the page's origin the robot can find (the page and its stylesheet; the
/// script's fetch is for browsers) arrives byte-exact the first time and
/// is validated (304) on revalidation, and the bytes counted are the
/// recorded ones.
#[test]
fn bench_replay_runs_the_robots_h2_and_h3_rows_on_a_recorded_archive() {
    let Some(nginx) = ready() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (site, warc) = recorded(&nginx, d);
    let body_bytes: u64 = site
        .objects
        .iter()
        .filter(|o| o.path == "/index.html" || o.path == "/style.css")
        .map(|o| o.body.len() as u64)
        .sum();
    drop(site);
    let out = d.join("bench");
    let (o, _, _) = run_bounded(
        Command::new(PW)
            .args(["bench", "--replay"])
            .arg(&warc)
            .args([
                "--quick",
                "--strategy",
                "h2,h3",
                "--net",
                "lan",
                "--no-progress",
                "--out",
            ])
            .arg(&out),
        Duration::from_secs(28),
        "pagewire bench --replay --strategy h2,h3",
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
    let mut seen = std::collections::BTreeSet::new();
    for r in runs {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(r["objects_expected"], 2, "{r}");
        assert_eq!(r["objects_ok"], 2, "{r}");
        if r["test"] == "first" {
            assert_eq!(r["body_bytes"].as_u64(), Some(body_bytes), "{r}");
        }
        seen.insert((
            r["strategy"].as_str().unwrap().to_string(),
            r["test"].as_str().unwrap().to_string(),
        ));
    }
    for s in ["h2", "h3"] {
        for t in ["first", "revalidate"] {
            assert!(
                seen.contains(&(s.to_string(), t.to_string())),
                "no {s} {t} run: {seen:?}"
            );
        }
    }
}
