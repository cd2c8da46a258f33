//! Without root: `pagewire bench --quick` and `pagewire link` run as the
//! normal user `pwtest` (created here if absent, as scripts/setup-deps.sh
//! does) through `runuser`. They enter a user namespace; where
//! /dev/net/tun is closed to the user (mode 0600 root, as in many
//! containers) the link moves packets through veth pairs and AF_PACKET
//! sockets, and the pcap sidecars say so. Privileges are checked before
//! anything is written. The tests themselves run as root (CI does).

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
mod schema;

const BIN: &str = env!("CARGO_BIN_EXE_pagewire");

fn ensure_pwtest() -> bool {
    let have = Command::new("id")
        .arg("pwtest")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    have || Command::new("useradd")
        .args(["-m", "pwtest"])
        .status()
        .is_ok_and(|s| s.success())
}

fn as_pwtest(args: &[&str]) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "pwtest", "--", BIN])
        .args(args)
        .current_dir("/");
    c
}

/// A temporary directory the normal user may write in.
fn user_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// The datapath a normal user gets here: TUN only if the device is open to
/// everyone.
fn expected_user_datapath() -> &'static str {
    let mode = std::fs::metadata("/dev/net/tun")
        .map(|m| m.permissions().mode())
        .unwrap_or(0);
    if mode & 0o006 == 0o006 {
        "tun"
    } else {
        "packet"
    }
}

#[test]
fn bench_quick_as_a_normal_user_completes_with_results() {
    if !pagewire_testreq::require_root() || !ensure_pwtest() {
        return;
    }
    let dir = user_dir();
    let out_dir = dir.path().join("out");
    let (out, _, _) = common::run_bounded(
        as_pwtest(&["bench", "--quick", "--net", "lan", "--no-progress", "--out"]).arg(&out_dir),
        Duration::from_secs(120),
        "bench --quick as pwtest",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("results.json")).unwrap()).unwrap();
    let runs = v["runs"].as_array().expect("runs");
    assert!(!runs.is_empty());
    for r in runs {
        assert!(r["packets_total"].as_u64().unwrap_or(0) > 0, "{r}");
        assert_eq!(r["objects_ok"], r["objects_expected"], "{r}");
    }
    assert!(schema::check_hars_in(&out_dir) > 0, "no HAR written");
    // Every capture says which datapath carried it.
    let want = expected_user_datapath();
    let mut sidecars = 0;
    for e in std::fs::read_dir(out_dir.join("pcaps")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "json") {
            let s: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
            assert_eq!(s["datapath"], want, "{}", e.path().display());
            sidecars += 1;
        }
    }
    assert_eq!(sidecars, runs.len());
    // The files are the user's, not root's.
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(out_dir.join("results.json"))
        .unwrap()
        .uid();
    assert_ne!(owner, 0);
}

#[test]
fn link_as_a_normal_user_counts_a_transfer() {
    if !pagewire_testreq::require_root()
        || !ensure_pwtest()
        || pagewire_testreq::require_peer("curl").is_none()
    {
        return;
    }
    let server = format!("{BIN} serve --site microscape --addr $PAGEWIRE_SERVER_ADDR:8080");
    let (out, _, _) = common::run_bounded(
        &mut as_pwtest(&[
            "link",
            "--net",
            "lan",
            "--json",
            "--server",
            &server,
            "--",
            "sh",
            "-c",
            "curl -sS -o /dev/null http://$PAGEWIRE_SERVER_ADDR:8080/",
        ]),
        Duration::from_secs(30),
        "link as pwtest",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout {stdout}\nstderr {stderr}");
    // The server's own lines come first on the shared stdout.
    let at = stdout
        .find("\n{\n")
        .map(|i| i + 1)
        .or_else(|| stdout.starts_with("{\n").then_some(0))
        .unwrap_or_else(|| panic!("no JSON counters: {stdout}"));
    let v: serde_json::Value = serde_json::from_str(&stdout[at..]).unwrap();
    assert_eq!(v["connections_opened"], 1, "{stdout}");
    assert_eq!(v["client_exit"], 0);
    assert!(v["server_to_client"]["payload_bytes"].as_u64().unwrap() > 1000);
}

#[test]
fn forcing_tun_without_access_fails_before_writing_anything() {
    if !pagewire_testreq::require_root() || !ensure_pwtest() {
        return;
    }
    if expected_user_datapath() == "tun" {
        // The device is open to everyone here: nothing to refuse.
        return;
    }
    let dir = user_dir();
    let out_dir = dir.path().join("out");
    let (out, _, _) = common::run_bounded(
        as_pwtest(&["bench", "--quick", "--net", "lan", "--out"])
            .arg(&out_dir)
            .env("PAGEWIRE_DATAPATH", "tun"),
        Duration::from_secs(30),
        "bench with PAGEWIRE_DATAPATH=tun as pwtest",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The message names the permission and the fixes.
    assert!(stderr.contains("/dev/net/tun"), "{stderr}");
    assert!(stderr.contains("chmod 0666 /dev/net/tun"), "{stderr}");
    assert!(stderr.contains("PAGEWIRE_DATAPATH=packet"), "{stderr}");
    assert!(!out_dir.exists(), "the results directory was created");
}
