//! `pagewire browse` on a live page: `pagewire serve` on the host's
//! loopback, headless Chromium in the link's client namespace reaching it
//! at 198.18.0.2:PORT through the emulated WAN and the gateway to the host
//! (`pagewire shell`'s path). The load takes at least the round trips the
//! link forces, the HAR lists every object (one requested by a script),
//! byte-exact, and nothing of the run is left. Needs root (namespaces) and
//! Chromium; with `PAGEWIRE_REQUIRE_ALL=1` (CI) a missing one fails.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

mod common;

use common::tls_site::processes_naming;
use common::{run_bounded, sha256_hex, Serve, PW};

const SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"80\">\
                   <rect width=\"120\" height=\"80\" fill=\"#48c\"/></svg>";

#[test]
fn browse_loads_a_live_page_from_the_host_across_the_link() {
    if !pagewire_testreq::require_root()
        || pagewire_testreq::require_any_peer(&["chromium", "chromium-browser", "google-chrome"])
            .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("www");
    std::fs::create_dir_all(&root).unwrap();
    // The script adds an image after DOMContentLoaded: a request only a
    // browser makes.
    let files: Vec<(&str, String)> = vec![
        (
            "index.html",
            "<!doctype html><html><head><title>live</title>\
             <link rel=stylesheet href=\"/style.css\"><script src=\"/app.js\"></script></head>\
             <body><h1>A live page</h1><img src=\"/logo.svg\" width=120 height=80></body></html>"
                .into(),
        ),
        (
            "style.css",
            "body{font-family:sans-serif}h1{color:#246}".into(),
        ),
        (
            "app.js",
            "document.addEventListener('DOMContentLoaded', function () {\
             var i = new Image(); i.width = 120; i.height = 80;\
             i.src = '/pic.svg'; document.body.appendChild(i); });"
                .into(),
        ),
        ("logo.svg", SVG.into()),
        ("pic.svg", SVG.replace("#48c", "#c84")),
    ];
    for (name, body) in &files {
        std::fs::write(root.join(name), body).unwrap();
    }
    let server = Serve::start(&root, &[]);
    let port = server
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let page = format!("http://198.18.0.2:{port}/index.html");
    let out = d.join("out");
    let har_path = d.join("live.har");
    let (o, elapsed, _) = run_bounded(
        Command::new(PW)
            .args(["browse", &page, "--net", "wan", "--json", "--har"])
            .arg(&har_path)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(28),
        "pagewire browse (live)",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "browse: {stdout}\n{stderr}");
    eprintln!("live browse took {:.1} s", elapsed.as_secs_f64());
    let j: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(j["replay"].is_null(), "{j}");
    let r = &j["reps"][0];
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["failed"], 0, "{r}");

    // The link the repetition crossed, from its pcap's sidecar.
    let sidecar: Value =
        serde_json::from_slice(&std::fs::read(out.join("pcaps/r1.pcap.json")).unwrap()).unwrap();
    assert_eq!(sidecar["config"]["profile"], "wan", "{sidecar}");
    let rtt_s = sidecar["config"]["rtt_ms"].as_f64().unwrap() / 1e3;
    assert!(rtt_s > 0.0);
    // The page: a TCP handshake and its GET (two round trips), then its
    // objects, asked for only once its HTML arrived (one more at least).
    let load = r["load_s"].as_f64().unwrap();
    assert!(
        load >= 3.0 * rtt_s,
        "load {load:.3} s under the link's floor of 3 x {rtt_s} s: {r}"
    );
    assert!(r["connections"].as_u64().unwrap() >= 1, "{r}");
    assert!(r["packets"].as_u64().unwrap() > 10, "{r}");
    assert_eq!(
        common::pcap_records(&out.join("pcaps/r1.pcap")),
        r["packets"].as_u64().unwrap()
    );

    // Every object in the HAR, answered 200 with the served bytes.
    let har: Value = serde_json::from_slice(&std::fs::read(&har_path).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array().unwrap();
    for (name, body) in &files {
        let url = format!("http://198.18.0.2:{port}/{name}");
        let e = entries
            .iter()
            .find(|e| e["request"]["url"] == url.as_str())
            .unwrap_or_else(|| panic!("{url} not in the HAR"));
        assert_eq!(e["response"]["status"], 200, "{e}");
        assert_eq!(e["_sha256"], sha256_hex(body.as_bytes()), "{url}");
    }
    server.stop();
    let left = processes_naming(&d.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
