//! `pagewire record https://...` with headless Chromium through the
//! recording proxy: a local nginx with TLS (a test CA made by
//! `pagewire_tls::issue`) serves two origins on two ports of 127.0.0.1,
//! the second over HTTP/2; the page fetches one object with `fetch()` and
//! inserts an image from the second origin after its load event. Every
//! object of both origins is recorded byte-exact with its timing, the
//! archive replays with `pagewire serve --replay`, and no process of the
//! test is left. nginx and Chromium come from scripts/setup-deps.sh; in CI
//! (`PAGEWIRE_REQUIRE_ALL=1`) a missing one fails the test.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::tls_site::{processes_naming, record, require_nginx_and_chromium, Killed, TlsSite};
use common::PW;

/// One GET to the replay server for `host` (the Host field picks the
/// recorded origin); returns (status line, body).
fn replay_get(addr: &str, host: &str, target: &str) -> (String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    (
        head.lines().next().unwrap_or("").to_string(),
        out[end + 4..].to_vec(),
    )
}

#[test]
fn chromium_records_two_tls_origins_and_script_loaded_objects() {
    let Some(nginx) = require_nginx_and_chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let site = TlsSite::start(&nginx, d);

    let warc = d.join("site.warc");
    let tmp = d.join("tmp");
    let (stdout, stderr) = record(&site, &warc, &tmp, &[]);
    assert!(
        stdout.contains("from 2 origins"),
        "both origins: {stdout}\n{stderr}"
    );

    let archive = pagewire_replay::Archive::load(&warc).unwrap();
    // Recorded on loopback, and the archive says so.
    assert_eq!(
        archive.info_field(pagewire_replay::RECORDED_LINK_FIELD),
        Some("none")
    );
    for o in &site.objects {
        let want = site.url_of(o);
        let origin = site.origin_of(o);
        let e = archive
            .exchanges
            .iter()
            .find(|e| e.url == want)
            .unwrap_or_else(|| panic!("{want} not recorded: {stdout}"));
        assert_eq!(e.status, 200, "{want}");
        assert!(e.body[..] == o.body[..], "{want}: body differs");
        let t = e.timing.expect("timing recorded");
        assert!(
            t.sent_ms <= t.first_byte_ms && t.first_byte_ms <= t.done_ms,
            "{want}: {t:?}"
        );
        let head = String::from_utf8_lossy(e.request_head.as_deref().unwrap()).into_owned();
        assert!(
            head.starts_with(&format!(
                "GET {} HTTP/1.1\r\nHost: {origin}\r\n",
                TlsSite::target_of(o)
            )),
            "{head}"
        );
    }
    assert!(
        stdout.contains("over HTTP/2") && !stdout.contains(" 0 over HTTP/2"),
        "origin B answers over h2: {stdout}"
    );

    // Replay (plain HTTP): every recorded object of both origins, by Host.
    let mut replay = Killed(
        Command::new(PW)
            .args(["serve", "--replay"])
            .arg(&warc)
            .args(["--addr", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn serve --replay"),
    );
    let mut line = String::new();
    BufReader::new(replay.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("serve --replay said {line:?}"))
        .to_string();
    for o in &site.objects {
        let (host, target) = (site.origin_of(o), TlsSite::target_of(o));
        let (status, got) = replay_get(&addr, host, &target);
        assert!(status.contains(" 200"), "{host}{target}: {status}");
        assert!(got == o.body, "{host}{target}: replayed body differs");
    }
    drop(replay);
    drop(site);

    let left = processes_naming(&d.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(
        std::fs::read_dir(&tmp).unwrap().next().is_none(),
        "the browser profile was not removed"
    );
}

#[test]
fn chromium_recording_refuses_robot_flags_and_bad_urls() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.warc");
    for (args, says) in [
        (
            vec!["record", "http://127.0.0.1:9/", "--strategy", "http11"],
            "--with robot",
        ),
        (vec!["record", "ftp://127.0.0.1/"], "http:// or https://"),
        (
            vec![
                "record",
                "https://127.0.0.1:9/",
                "--with",
                "robot",
                "--upstream-ca",
                "x.pem",
            ],
            "--with chromium",
        ),
        (
            vec![
                "record",
                "http://127.0.0.1:9/",
                "--with",
                "robot",
                "--net",
                "wan",
            ],
            "--net and the link flags are for --with chromium",
        ),
        (
            vec!["record", "http://127.0.0.1:9/", "--pcap", "x.pcap"],
            "add --net PROFILE",
        ),
        (
            vec!["record", "http://127.0.0.1:9/", "--net", "moon"],
            "unknown profile \"moon\"",
        ),
        (
            vec!["record", "http://127.0.0.1:9/", "--loss", "2"],
            "invalid loss",
        ),
    ] {
        let o = Command::new(PW)
            .args(args.iter())
            .arg("--out-file")
            .arg(&out)
            .env("PAGEWIRE_CHROMIUM", "/nonexistent")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new(&out).exists(), "{args:?} wrote a file");
    }
}

/// `record --net wan`: the browser is in the link's client namespace and
/// the proxy on its far side, so every request crosses the link (a
/// subresource is asked for at least one link RTT after the proxy had the
/// page whole) while the server times are the proxy's, measured beside the
/// origins (a static file from a local nginx: well under the link's RTT,
/// which every server time would exceed if it included the link). The
/// archive's warcinfo names the link and what crossed it; the pcap holds
/// those packets.
#[test]
fn chromium_records_over_an_emulated_link() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let Some(nginx) = require_nginx_and_chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let site = TlsSite::start(&nginx, d);
    let warc = d.join("wan.warc.gz");
    let pcap = d.join("rec.pcap");
    let (stdout, stderr) = record(
        &site,
        &warc,
        &d.join("tmp"),
        &["--net", "wan", "--pcap", pcap.to_str().unwrap(), "--json"],
    );
    let j: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(j["link"]["profile"], "wan", "{j}");
    let rtt_ms = j["link"]["rtt_ms"].as_f64().unwrap();
    assert!(rtt_ms > 0.0, "{j}");
    let packets = j["link_counters"]["packets"].as_u64().unwrap();
    // Every connection (one per tunnel and the plain one) crossed it.
    assert!(
        j["link_counters"]["connections"].as_u64().unwrap() >= 2,
        "{j}"
    );
    assert_eq!(common::pcap_records(&pcap), packets, "{j}");

    let archive = pagewire_replay::Archive::load(&warc).unwrap();
    let link: serde_json::Value = serde_json::from_str(
        archive
            .info_field(pagewire_replay::RECORDED_LINK_FIELD)
            .expect("the link in the warcinfo"),
    )
    .unwrap();
    assert_eq!(link["profile"], "wan");
    assert_eq!(link["rtt_ms"].as_f64(), Some(rtt_ms));
    let counted: serde_json::Value = serde_json::from_str(
        archive
            .info_field("pagewire-recorded-link-counters")
            .expect("the link's counters in the warcinfo"),
    )
    .unwrap();
    assert_eq!(counted["packets"].as_u64(), Some(packets));

    let timing = |o: &common::tls_site::Object| {
        let want = site.url_of(o);
        let e = archive
            .exchanges
            .iter()
            .find(|e| e.url == want)
            .unwrap_or_else(|| panic!("{want} not recorded: {stdout}"));
        assert!(e.body[..] == o.body[..], "{want}: body differs");
        e.timing.expect("timing recorded")
    };
    let page = timing(&site.objects[0]);
    let mut server_ms = Vec::new();
    for o in &site.objects {
        let t = timing(o);
        server_ms.push(t.server_ms);
        // Named by the page's HTML: asked for only after the page crossed
        // to the browser and the request crossed back.
        if o.path == "/style.css" || o.path == "/b.gif" {
            assert!(
                t.sent_ms - page.done_ms >= rtt_ms,
                "{} asked for {:.1} ms after the page was whole at the proxy (rtt {rtt_ms} ms)",
                o.path,
                t.sent_ms - page.done_ms
            );
        }
    }
    server_ms.sort_by(f64::total_cmp);
    let median = server_ms[server_ms.len() / 2];
    assert!(
        median < rtt_ms,
        "median server time {median:.1} ms: the link's {rtt_ms} ms in it? {server_ms:?}"
    );
    drop(site);
    let left = processes_naming(&d.display().to_string());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
