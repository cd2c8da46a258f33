//! `pagewire site surge`, `pagewire load` against `pagewire serve`,
//! `pagewire load merge` and `--check-model`, through the binary.

use std::process::Command;

use crate::common;
use common::{Serve, PW};

fn pagewire() -> Command {
    Command::new(PW)
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_model_prints_every_statistic_and_passes() {
    let out = pagewire()
        .args(["load", "--check-model", "--samples", "50000"])
        .output()
        .unwrap();
    let text = ok(&out);
    // 11 sampler lines, 11 lines of the realised stream.
    assert_eq!(
        text.lines().filter(|l| l.ends_with("  pass")).count(),
        22,
        "{text}"
    );
    assert!(text.contains("stream: files per web object"), "{text}");
    assert!(
        text.contains("stream: persistent connection duration"),
        "{text}"
    );
    assert!(
        text.contains("inverse Gaussian(mu 3.86, lambda 6.08)"),
        "{text}"
    );
}

#[test]
fn shards_run_against_the_server_and_merge() {
    let site = tempfile::tempdir().unwrap();
    let text = ok(&pagewire()
        .args(["site", "surge", "--files", "200", "--seed", "3", "--out"])
        .arg(site.path())
        .output()
        .unwrap());
    assert!(text.contains("wrote 200 files"), "{text}");
    let serve = Serve::start(site.path(), &["--no-compress"]);
    let out = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    for k in 0..2 {
        children.push(
            pagewire()
                .args([
                    "load",
                    "--target",
                    &serve.url,
                    "--ues",
                    "40",
                    "--duration",
                    "2s",
                ])
                .args(["--mode", "pipeline", "--no-progress", "--json", "--site"])
                .arg(site.path())
                .args(["--shard", &format!("{k}/2"), "--out"])
                .arg(out.path().join(format!("s{k}")))
                .output()
                .unwrap(),
        );
    }
    let mut gets = 0;
    for c in &children {
        let s: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
        assert_eq!(s["errors"], 0, "{s}");
        assert_eq!(s["run"]["ues"], 20);
        // Every run carries the calibration table, with the persistent rows in pipeline mode.
        let rows = s["calibration"]["rows"].as_array().unwrap();
        for q in [
            "GETs/s per UE",
            "files per web object (request-weighted)",
            "bytes per GET",
            "web objects per persistent connection",
            "connection duration",
        ] {
            assert!(rows.iter().any(|r| r["quantity"] == q), "{q}: {s}");
        }
        assert!(s["calibration"]["within_bands"].is_boolean(), "{s}");
        gets += s["gets"].as_u64().unwrap();
    }
    let merged: serde_json::Value = serde_json::from_str(&ok(&pagewire()
        .args(["load", "merge", "--json"])
        .arg(out.path().join("s0"))
        .arg(out.path().join("s1"))
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(merged["gets"].as_u64().unwrap(), gets);
    assert_eq!(merged["run"]["ues"], 40);
    assert_eq!(merged["get_latency_ms"]["count"].as_u64().unwrap(), gets);
    assert!(out.path().join("s0/timeseries.csv").exists());
    assert!(out.path().join("s0/get_latency_us.hdr").exists());
    // Bad input: a directory that is not a result.
    let bad = pagewire()
        .args(["load", "merge"])
        .arg(site.path())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("summary.json"));
}

#[test]
fn a_missing_manifest_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let out = pagewire()
        .args(["load", "--target", "http://127.0.0.1:9", "--site"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pagewire site surge"), "{err}");
}

#[test]
fn errors_above_the_allowed_share_exit_1_and_bad_values_exit_2() {
    // Nothing listens on port 9: every GET is refused.
    let out = pagewire()
        .args(["load", "http://127.0.0.1:9/", "-d", "1s", "-c", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("refused"), "{text}");
    for bad in [
        ["--duration", "0s"],
        ["--timeout", "0s"],
        ["--threads", "0"],
        ["--ues", "0"],
    ] {
        let out = pagewire()
            .args(["load", "--target", "http://127.0.0.1:9", "--site", "."])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}
