//! `pagewire link` end to end: a server command and a client command on the
//! two sides of an emulated link, counters as JSON, the client's exit status.
//! Needs root (CI runs as root); skips otherwise.

use std::process::Command;

mod common;

const SERVER: &str = r#"python3 -c '
import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["PAGEWIRE_SERVER_ADDR"], 9000))
s.listen(4)
while True:
    c, _ = s.accept()
    c.sendall(b"x" * 100000)
    c.close()
'"#;

const CLIENT: &str = r#"
import os, socket, sys
assert os.environ["PAGEWIRE_CLIENT_ADDR"] == "198.18.0.1"
c = socket.create_connection((os.environ["PAGEWIRE_SERVER_ADDR"], 9000))
n = 0
while True:
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
sys.exit(3 if n == 100000 else 1)
"#;

#[test]
fn link_runs_server_and_client_and_prints_json_counters() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("cli.pcap");
    let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["link", "--net", "lan", "--json", "--pcap"])
        .arg(&pcap)
        .args(["--server", SERVER, "--", "python3", "-c", CLIENT])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The client's exit status is the command's (3 = received everything).
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["packets_total"].as_u64().unwrap() > 70);
    assert!(v["bytes_total"].as_u64().unwrap() > 100_000);
    assert_eq!(v["connections_opened"], 1);
    assert_eq!(v["server_to_client"]["payload_bytes"], 100_000);
    assert_eq!(v["client_to_server"]["kinds"]["syn"]["packets"], 1);
    assert_eq!(v["config"]["profile"], "lan");
    assert_eq!(v["client_exit"], 3);
    assert!(pcap.exists());
    assert!(dir.path().join("cli.pcap.json").exists());
}

#[test]
fn link_rejects_bad_flags_clearly() {
    let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["link", "--net", "isdn", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown profile \"isdn\""), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["link", "--loss", "150%", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loss"));
}

#[test]
fn aqm_loss_model_and_reorder_flags_reject_bad_values_clearly() {
    for (cmd, flag, value, says) in [
        (
            "link",
            "--aqm",
            "red",
            "expected droptail, codel, pie or fq-codel",
        ),
        ("link", "--aqm", "codel:target=5", "needs a unit"),
        (
            "link",
            "--aqm",
            "codel:target=200ms",
            "target must be below interval",
        ),
        ("bench", "--aqm", "pie:alpha=x", "not a number"),
        ("bench", "--aqm", "fq-codel:flows=0", "flows must be"),
        (
            "link",
            "--loss",
            "ge:p=1%",
            "needs p (good->bad) and r (bad->good)",
        ),
        ("bench", "--loss", "ge:p=1%,r=0", "r must be > 0"),
        (
            "link",
            "--loss",
            "ge:p=1%,r=20%,q=3",
            "parameters are p, r, h and k",
        ),
        ("link", "--reorder", "5%", "expected PROBABILITY,DELAY"),
        ("bench", "--reorder", "5%,5", "needs a unit"),
        ("link", "--reorder", "100%,5ms", "must be in (0, 1)"),
    ] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pagewire"));
        c.args([cmd, flag, value]);
        if cmd == "link" {
            c.args(["--", "true"]);
        }
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd} {flag} {value}: {err}");
        assert!(err.contains(says), "{cmd} {flag} {value}: {err}");
        assert!(err.contains(value.split(':').next().unwrap()), "{err}");
    }
}

/// Processes whose command line is exactly `sleep <secs>`.
fn sleepers(secs: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c == format!("sleep\0{secs}\0").as_bytes())
        })
        .count()
}

#[test]
fn ctrl_c_tears_everything_down() {
    if !pagewire_testreq::require_root() {
        return;
    }
    // Durations unique to this test run, to find our processes.
    let marker = format!("{}", 1000 + std::process::id() % 50_000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["link", "--net", "wan", "--server-wait", "100ms", "--server"])
        .arg(format!("sleep {marker} & exec sleep {marker}"))
        .args(["--", "sleep", &marker])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: 5 s for all three sleepers to start.
    for _ in 0..500 {
        if sleepers(&marker) == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(sleepers(&marker), 3, "server, its background child, client");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(sleepers(&marker), 0, "nothing left after Ctrl-C");
}

#[test]
fn a_normal_user_gets_a_user_namespace_or_a_precise_message() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let Some(setpriv) = pagewire_testreq::require_peer("setpriv") else {
        return;
    };
    // A copy of the binary in a directory every user can read: the build
    // directory may be private to root.
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("pagewire");
    std::fs::copy(env!("CARGO_BIN_EXE_pagewire"), &exe).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["link", "--net", "lan", "--json", "--", "true"])
        .current_dir("/")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("setpriv:"),
        "setpriv could not run the binary as nobody: {err}"
    );
    match out.status.code() {
        // The unprivileged path worked: a user namespace owned the link.
        Some(0) => {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["client_exit"], 0);
        }
        // Otherwise the message names exactly what is missing.
        Some(1) => assert!(
            err.contains("/dev/net/tun") || err.contains("user namespace"),
            "unclear message: {err}"
        ),
        other => panic!("unexpected exit {other:?}: {err}"),
    }
}

const SERVER_20K: &str = r#"python3 -c '
import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["PAGEWIRE_SERVER_ADDR"], 9000))
s.listen(4)
while True:
    c, _ = s.accept()
    c.sendall(b"<TD ALIGN=LEFT><A HREF=/x>Microscape</A></TD>\n" * 440)
    c.close()
'"#;

const CLIENT_20K: &str = r#"
import os, socket, sys
c = socket.create_connection((os.environ["PAGEWIRE_SERVER_ADDR"], 9000))
n = 0
while True:
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
sys.exit(0 if n == 440 * 46 else 1)
"#;

#[test]
fn v42bis_link_compression_shortens_the_line_not_the_packets() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args([
            "link",
            "--net",
            "ppp",
            "--rate",
            "64kbit",
            "--link-compress",
            "v42bis",
            "--json",
        ])
        .args(["--server", SERVER_20K, "--", "python3", "-c", CLIENT_20K])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let down = &v["server_to_client"];
    assert_eq!(down["payload_bytes"], 440 * 46);
    let ip = down["bytes"].as_u64().unwrap();
    let line = down["line_bytes"].as_u64().unwrap();
    // Repetitive HTML: the modem sends a fraction of the IP bytes.
    assert!(line * 4 < ip, "line {line} vs IP {ip}");
    assert_eq!(v["config"]["compression"], "v42bis");
    // 20 KB at 64 kbit/s take 2.6 s uncompressed; compressed far less.
    let span = v["last_packet_s"].as_f64().unwrap() - v["first_packet_s"].as_f64().unwrap();
    assert!(span < 1.5, "first to last packet {span} s");
}
