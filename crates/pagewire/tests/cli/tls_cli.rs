//! `pagewire serve --tls DIR` and `pagewire fetch --strategy h2|h3 --ca`
//! on loopback: the run's CA is written once and trusted by the robot (and
//! by curl when it is installed), the page and its 42 images arrive over
//! HTTP/2 and HTTP/3, and wrong setups fail with a clear message.

use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{run_bounded, Serve, PW};

#[test]
fn serve_tls_and_fetch_h2_h3() {
    let tls = tempfile::tempdir().unwrap();
    let site = tempfile::tempdir().unwrap();
    pagewire_site::microscape::generate(Default::default())
        .write_to_dir(site.path())
        .unwrap();
    let server = Serve::start(
        site.path(),
        &["--tls", tls.path().to_str().unwrap(), "--threads", "1"],
    );
    // "https://127.0.0.1:PORT (HTTP/2 over TLS 1.3, HTTP/3 ...; CA ...)"
    let base = server.url.split_whitespace().next().unwrap().to_string();
    assert!(base.starts_with("https://127.0.0.1:"), "{}", server.url);
    let ca = tls.path().join("ca.pem");
    assert!(ca.is_file() && tls.path().join("server-key.pem").is_file());
    let page = format!("{base}/index.html");
    for strategy in ["h2", "h3"] {
        let (o, _, _) = run_bounded(
            Command::new(PW)
                .args(["fetch", &page, "--strategy", strategy, "--json", "--ca"])
                .arg(&ca),
            Duration::from_secs(60),
            "pagewire fetch",
        );
        assert!(
            o.status.success(),
            "{strategy}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let objects = report["objects"].as_array().unwrap();
        assert_eq!(objects.len(), 43, "{strategy}");
        assert!(objects.iter().all(|o| o["status"] == 200), "{strategy}");
        assert_eq!(report["connections_opened"], 1, "{strategy}");
    }
    // --tls DIR trusts DIR/ca.pem, as --ca does.
    let (o, _, _) = run_bounded(
        Command::new(PW)
            .args(["fetch", &page, "--strategy", "h2", "--tls"])
            .arg(tls.path()),
        Duration::from_secs(60),
        "pagewire fetch --tls",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Without the CA: a clear error, exit 2.
    let (o, _, _) = run_bounded(
        Command::new(PW).args(["fetch", &page, "--strategy", "h2"]),
        Duration::from_secs(30),
        "pagewire fetch",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ca"));
    // Another tool trusts the same CA file: curl must accept the
    // certificate (exit 0; a rejected certificate is exit 60) and speak
    // HTTP/2 over it, as the h2 strategy above did.
    let Some(curl) = pagewire_testreq::require_peer("curl") else {
        return;
    };
    let (o, _, _) = run_bounded(
        Command::new(curl)
            .args([
                "-sS",
                "-o",
                "/dev/null",
                "-w",
                "%{http_version}",
                "--http2",
                "--cacert",
            ])
            .arg(&ca)
            .arg(&page),
        Duration::from_secs(30),
        "curl --cacert",
    );
    assert!(
        o.status.success(),
        "curl rejected pagewire's certificate or failed ({}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "2");
}
