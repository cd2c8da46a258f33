//! `pagewire bench --quick` end to end: the Microscape page served by
//! `pagewire serve` in a server namespace, fetched by the robot in a client
//! namespace over the emulated LAN and WAN, with every strategy and both
//! tests. Asserts on results.json. Needs root (CI runs as root); skips
//! otherwise.

use std::process::Command;
use std::time::Duration;

mod common;
mod schema;
use common::pcap_records;

/// `--quick` must finish within a minute on the 2-core CI machine; allow
/// three for a loaded machine before calling it hung.
const TIMEOUT: Duration = Duration::from_secs(180);

#[test]
fn bench_quick_fetches_everything_and_counts_match_pcaps() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let (output, elapsed, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args(["bench", "--quick", "--no-progress", "--out"])
            .arg(&out),
        TIMEOUT,
        "pagewire bench --quick",
    );
    let status = output.status;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success(),
        "bench failed: {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    eprintln!("bench --quick took {:.1} s", elapsed.as_secs_f64());

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    schema::check_results_dir(&out);
    schema::check_report_first_screen(&out, [70, 110, 180], 500);
    assert!(json["made_by"].as_str().unwrap().contains("pagewire"));
    let runs = json["runs"].as_array().expect("runs");
    // lan + wan, 4 strategies, 2 tests, 1 repetition; plus Table 3's
    // initial robot on the LAN (3 strategies, 2 tests).
    assert_eq!(runs.len(), 16 + 6, "{stdout}");
    let initial: Vec<&serde_json::Value> = runs
        .iter()
        .filter(|r| r["robot"]["tuning"] == "initial")
        .collect();
    assert_eq!(initial.len(), 6);
    for r in &initial {
        assert_eq!(r["net"], "lan");
        assert_eq!(r["robot"]["flush_after_ms"].as_f64(), Some(1000.0));
        assert_eq!(r["robot"]["explicit_flush"], false);
        assert_eq!(r["robot"]["revalidation"], "get-head");
    }
    for r in runs {
        // The bench's robot sends paper-sized requests (~190 bytes).
        assert_eq!(r["robot"]["request_profile"], "libwww-1997");
        if r["test"] == "first" {
            let m = r["mean_request_bytes"].as_f64().unwrap();
            assert!((180.0..=200.0).contains(&m), "{m}");
        }
        if r["strategy"] == "http10" {
            assert_eq!(r["robot"]["revalidation"], "get-head");
        }
    }
    assert!(stdout.contains("Table 3 — initial"), "{stdout}");
    let get =
        |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    for r in runs {
        let what = format!("{} {} {}", r["net"], r["strategy"], r["test"]);
        assert!(r["error"].is_null(), "{what}: {}", r["error"]);
        assert_eq!(get(r, "objects_expected"), 43, "{what}");
        assert_eq!(get(r, "objects_ok"), 43, "{what}: not every object fetched");
        let pcap = out.join(r["pcap"].as_str().unwrap());
        assert_eq!(
            get(r, "packets_total"),
            pcap_records(&pcap),
            "{what}: counters vs {}",
            pcap.display()
        );
        assert!(r["elapsed_s"].as_f64().unwrap() > 0.0, "{what}");
        for k in [
            "strategy",
            "test",
            "net",
            "rep",
            "bytes_total",
            "overhead_pct",
            "sockets_total",
            "sockets_max",
            "seed",
        ] {
            assert!(!r[k].is_null(), "{what}: {k} missing");
        }
    }
    let packets = |net: &str, st: &str, test: &str| {
        runs.iter()
            .find(|r| r["net"] == net && r["strategy"] == st && r["test"] == test)
            .map(|r| get(r, "packets_total"))
            .unwrap_or_else(|| panic!("no {net} {st} {test} run"))
    };
    for net in ["lan", "wan"] {
        for test in ["first", "revalidate"] {
            let (p, h) = (packets(net, "pipeline", test), packets(net, "http10", test));
            assert!(p < h, "{net} {test}: pipeline {p} packets, http10 {h}");
        }
    }
    for f in ["results.csv", "report.html", "report.txt"] {
        let s = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(s.contains("pagewire"), "{f} says what made it");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.matches("<svg").count() >= 4 + 4,
        "bar charts and time-sequence plots"
    );
    assert!(stdout.contains("Claims of paper 001"), "{stdout}");
}

/// `--server apache`: Apache httpd (prefork) with a generated
/// configuration serves the whole page, answers the one-validator
/// revalidation with 304s for all 43 objects, and the results say which
/// server answered.
#[test]
fn bench_against_apache_fetches_and_revalidates_everything() {
    if !pagewire_testreq::require_root() || pagewire_testreq::require_peer("apache2").is_none() {
        return;
    }
    let conf = bench_against("apache");
    assert!(conf.contains("mod_mpm_prefork.so"), "{conf}");
}

/// `--server nginx` likewise.
#[test]
fn bench_against_nginx_fetches_and_revalidates_everything() {
    if !pagewire_testreq::require_root() || pagewire_testreq::require_peer("nginx").is_none() {
        return;
    }
    let conf = bench_against("nginx");
    assert!(conf.contains("gzip_static on"), "{conf}");
}

/// One LAN repetition of http10 and pipeline against a peer server, run
/// from the output directory's parent with a relative `--out` (peers read
/// relative paths against their own roots, so the bench must hand them
/// absolute ones); returns the peer's generated configuration.
fn bench_against(server: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    // Apache's workers run as www-data: the results directory must be
    // readable by them (a tempdir is 0700).
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let out = dir.path().join("results");
    let (output, _, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .current_dir(dir.path())
            .args([
                "bench",
                "--server",
                server,
                "--net",
                "lan",
                "--strategy",
                "http10,pipeline",
                "--reps",
                "1",
                "--no-initial",
                "--no-progress",
                "--out",
                "results",
            ]),
        TIMEOUT,
        &format!("pagewire bench --server {server}"),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4, "{stdout}");
    for r in runs {
        assert_eq!(r["objects_ok"].as_u64(), Some(43), "{r}");
    }
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains(&format!("measured ({server})")), "{report}");
    let name = if server == "apache" {
        "apache2.conf"
    } else {
        "nginx.conf"
    };
    std::fs::read_to_string(out.join(format!("{server}-lan/{name}"))).unwrap()
}

/// Bad flags fail before anything starts (no root needed), naming the flag.
#[test]
fn bench_rejects_bad_flags_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["--net", "lan,moon"], "--net"),
        (vec!["--strategy", "http2"], "--strategy"),
        (vec!["--reps", "0"], "--reps"),
        (vec!["--server", "lighttpd"], "--server"),
        (vec!["--tests", "revalidate"], "revalidate needs first"),
        (vec!["--tcp", "1985"], "--tcp"),
        (vec!["--rate", "fast"], "rate"),
        (vec!["--suite", "moon"], "--suite"),
        (vec!["--request-profile", "netscape"], "--request-profile"),
        (vec!["--rtt-sweep", "20ms,0ms"], "--rtt-sweep"),
        (
            vec!["--rtt-sweep", "20ms", "--strategy", "http11"],
            "--rtt-sweep",
        ),
        (
            vec!["--http10-revalidation", "never"],
            "--http10-revalidation",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .arg("bench")
            .args(&args)
            .arg("--out")
            .arg(dir.path().join("never"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!dir.path().join("never").join("results.json").exists());
    }
}
