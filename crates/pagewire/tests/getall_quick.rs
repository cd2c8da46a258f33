//! `pagewire bench --suite getall --quick` end to end: pages with N inline
//! images served by `pagewire serve` in a server namespace, loaded by the
//! robot with HTTP/1.0, persistent, pipelined, GETALL and object packaging over emulated local
//! and remote links. Needs root (CI runs as root); skips otherwise.

use std::process::Command;
use std::time::Duration;

mod common;
mod schema;

/// `--quick` takes about 30 s; three minutes before calling it hung.
const TIMEOUT: Duration = Duration::from_secs(180);

#[test]
fn getall_quick_writes_cells_figures_and_claims() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ga");
    let (output, elapsed, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args([
                "bench",
                "--suite",
                "getall",
                "--quick",
                "--no-progress",
                "--out",
            ])
            .arg(&out),
        TIMEOUT,
        "bench --suite getall --quick",
    );
    let status = output.status;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "failed: {status}\n{stdout}\n{stderr}");
    eprintln!("getall --quick took {:.1} s", elapsed.as_secs_f64());

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    schema::check_results_dir(&out);
    let cells = json["cells"].as_array().expect("cells");
    // 2 networks x 2 sizes x 2 counts x 5 methods.
    assert_eq!(cells.len(), 40, "{stdout}");
    let cell = |net: &str, size: u64, n: u64, m: &str| {
        cells
            .iter()
            .find(|c| c["net"] == net && c["size"] == size && c["images"] == n && c["method"] == m)
            .unwrap_or_else(|| panic!("no cell {net} {size} {n} {m}"))
    };
    let load = |net: &str, size: u64, n: u64, m: &str| {
        cell(net, size, n, m)["load_s"]["mean"].as_f64().unwrap()
    };
    for net in ["local", "remote"] {
        for size in [2544, 45566] {
            // Requests the robot sent: one per object except GETALL's one.
            assert_eq!(cell(net, size, 10, "getall")["requests"], 1);
            assert_eq!(cell(net, size, 10, "objpack")["requests"], 1);
            assert_eq!(cell(net, size, 10, "objpack")["connections"], 1);
            assert_eq!(cell(net, size, 10, "pipelined")["requests"], 11);
            assert_eq!(cell(net, size, 10, "http10")["connections"], 11);
            assert_eq!(cell(net, size, 10, "persistent")["connections"], 1);
        }
    }
    // Physics of the remote link: 10 x 45566 B cannot cross a T1 in less
    // than 2.36 s; HTTP/1.0 pays a handshake per image (>= 10 RTTs of 70 ms).
    assert!(load("remote", 45566, 10, "getall") > 10.0 * 45566.0 * 8.0 / 1.544e6);
    assert!(load("remote", 2544, 10, "http10") > 10.0 * 0.14);
    assert!(load("remote", 2544, 10, "getall") < load("remote", 2544, 10, "http10"));
    assert!(load("remote", 45566, 10, "objpack") > 10.0 * 45566.0 * 8.0 / 1.544e6);
    assert!(load("remote", 2544, 10, "objpack") < load("remote", 2544, 10, "http10"));
    assert_eq!(json["claims"].as_array().unwrap().len(), 6);
    for f in [
        "results.csv",
        "report.txt",
        "fig5.svg",
        "fig6.svg",
        "fig7.svg",
        "fig8.svg",
    ] {
        let b = std::fs::read_to_string(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(!b.is_empty(), "{f} empty");
    }
}
