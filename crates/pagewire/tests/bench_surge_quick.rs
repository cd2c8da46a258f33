//! `pagewire bench --suite surge` in a reduced quick form, end to end:
//! Apache (prefork) in a memory-limited cgroup in the server namespace,
//! SURGE UEs in the client namespace over the emulated 100 Mbit/s LAN, the
//! monitor sampling once a second. Asserts on results.json, the monitor
//! CSVs and the report, and that the cgroups are gone afterwards. Needs
//! root and apache2 (scripts/setup-deps.sh); skips otherwise.

use std::process::Command;
use std::time::Duration;

mod common;
mod schema;

const TIMEOUT: Duration = Duration::from_secs(150);

#[test]
fn surge_quick_runs_apache_limited_and_unlimited_with_monitor() {
    if !pagewire_testreq::require_root() {
        return;
    }
    if pagewire_testreq::require_peer("apache2").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    // A relative --out, as users type it: Apache reads a relative -f path
    // against its own ServerRoot, so the suite must hand it absolute paths
    // (it once failed with "Could not open configuration file").
    let (o, elapsed, pid) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .current_dir(dir.path())
            .args([
                "bench",
                "--suite",
                "surge",
                "--quick",
                "--server",
                "apache",
                "--memory",
                "none,12M",
                "--ues",
                "10",
                "--modes",
                "http10,early-close",
                "--duration",
                "5s",
                "--ramp",
                "1s",
                "--files",
                "400",
                "--no-progress",
                "--out",
                "results",
            ]),
        TIMEOUT,
        "bench --suite surge --quick",
    );
    eprintln!(
        "bench --suite surge --quick took {:.1} s",
        elapsed.as_secs_f64()
    );
    let status = o.status;
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        status.success(),
        "bench failed: {status}\n{stdout}\n{stderr}"
    );

    let res: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    schema::check_results_dir(&out);
    let runs = res["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 memories x 2 modes x 1 load");
    let find = |mem: &str, mode: &str| {
        runs.iter()
            .find(|r| r["memory"] == mem && r["mode"] == mode)
            .unwrap_or_else(|| panic!("run {mem} {mode}"))
    };
    for r in runs {
        assert!(r["error"].is_null(), "run failed: {r}");
        assert!(r["gets"].as_u64().unwrap() > 0, "{r}");
        let p = &r["packets"];
        // Every connection begins with a SYN and a SYN-ACK on the link.
        assert!(p["syn"].as_u64().unwrap() >= 2 * p["connections"].as_u64().unwrap());
        assert!(p["total"].as_u64().unwrap() > p["data"].as_u64().unwrap());
        let csv = std::fs::read_to_string(out.join(r["monitor_csv"].as_str().unwrap())).unwrap();
        let mut lines = csv.lines();
        let head = lines.next().unwrap();
        for col in [
            "t",
            "usr",
            "kern",
            "idle",
            "iowait",
            "pages_read",
            "pages_written",
            "tcp_sent",
            "tcp_received",
            "established",
            "time_wait",
            "rss",
        ] {
            assert!(head.split(',').any(|c| c == col), "column {col} in {head}");
        }
        assert!(lines.count() >= 3, "about one sample a second over 5 s");
        // The server sent segments and had memory charged to its cgroup.
        assert!(r["tcp_sent"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["rss_mean"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Early close: a connection per web object, HTTP/1.0 one per file.
    let per_get = |r: &serde_json::Value| {
        r["packets"]["connections"].as_f64().unwrap() / r["gets"].as_f64().unwrap()
    };
    assert!(per_get(find("none", "early-close")) < per_get(find("none", "http10")));
    // The limited cgroup really was limited: less page cache than the set.
    let lim = find("12M", "http10");
    assert!(lim["page_cache_mean"].as_f64().unwrap() <= 12.0 * 1048576.0);
    // The calibration the claims engine reads: a verdict and its rows.
    assert!(res["calibration"]["within_bands"].is_boolean(), "{res}");
    let rows = res["calibration"]["rows"].as_array().unwrap();
    assert!(rows
        .iter()
        .any(|r| r["quantity"].as_str().unwrap().contains("GETs/s per UE")));
    let claims = res["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 7);
    assert!(claims
        .iter()
        .all(|c| c["verdict"].is_string() && c["claim"].is_string()));
    // Known by construction: this run has no persistent HTTP/1.1 mode, so
    // "the network demands of HTTP/1.1 are somewhat lower than those of
    // HTTP/1.0" has no cell to decide on.
    let network = claims
        .iter()
        .find(|c| c["id"] == "p004-network")
        .expect("p004-network");
    assert!(
        ["inconclusive", "not testable here"].contains(&network["verdict"].as_str().unwrap()),
        "p004-network without an http11 run: {network}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Table 2/7"));
    // Nothing left behind: the cgroups are gone.
    for ctl in ["memory", "cpuacct", "blkio", ""] {
        let d = std::path::Path::new("/sys/fs/cgroup").join(ctl);
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                assert!(
                    !n.starts_with(&format!("pagewire-surge-{pid}-")),
                    "cgroup {} left behind",
                    e.path().display()
                );
            }
        }
    }
}
