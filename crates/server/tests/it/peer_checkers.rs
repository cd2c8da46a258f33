//! Real peer checkers judge the server's standards conformance: HTTPolice over recorded
//! pipelined connections, REDbot's validation, range and content-negotiation
//! checks against the running server on loopback.
//!
//! Both tools are installed by scripts/setup-deps.sh into the project's
//! virtual environment `.peers/venv` (pinned: HTTPolice with bitstring
//! 3.1.9, redbot), found there before PATH. A missing tool fails these tests under
//! PAGEWIRE_REQUIRE_ALL=1 (scripts/test.sh, CI) and skips them by name
//! otherwise (pagewire-testreq).
use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use pagewire_site::microscape;
use pagewire_site::store::Site;

/// The peer: first in the project's virtual environment that
/// scripts/setup-deps.sh fills (`.peers/venv/bin`, or
/// `$PAGEWIRE_PEERS_DIR/venv/bin`), then on PATH.
fn require(name: &str) -> Option<PathBuf> {
    let peers = std::env::var_os("PAGEWIRE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers"));
    let venv = peers.join("venv").join("bin").join(name);
    if venv.is_file() {
        return Some(venv);
    }
    pagewire_testreq::require_peer(name)
}

/// Temporary directory removed on drop (also when the test fails).
struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("pagewire-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn site() -> Site {
    let m = microscape::generate(microscape::Options::default());
    Site::from_files(m.site_files())
}

/// Sends `requests` in one write, reads until the server closes; writes the
/// two directions to `<dir>/<name>.in` and `.out` (HTTPolice "streams").
fn record(server: &TestServer, dir: &Path, name: &str, requests: &str) -> (PathBuf, PathBuf) {
    let mut s = server.connect();
    s.write_all(requests.as_bytes()).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let inbound = dir.join(format!("{name}.in"));
    let outbound = dir.join(format!("{name}.out"));
    std::fs::write(&inbound, requests).unwrap();
    std::fs::write(&outbound, &out).unwrap();
    (inbound, outbound)
}

fn r(method: &str, path: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: pagewire-test\r\n{extra}\r\n"
    )
}

#[test]
fn httpolice_finds_no_errors_in_pipelined_connections() {
    let Some(httpolice) = require("httpolice") else {
        return;
    };
    let site = site();
    let paths: Vec<String> = site.iter().map(|r| r.path.clone()).collect();
    let etags: Vec<String> = site.iter().map(|r| r.etag.clone()).collect();
    let server = TestServer::start(site, config());
    let dir = TempDir::new("httpolice");
    let mut files = Vec::new();

    // 1. First-time retrieval: 43 pipelined GETs, the last one closes.
    let mut batch = String::new();
    for (i, p) in paths.iter().enumerate() {
        let last = i + 1 == paths.len();
        batch.push_str(&r(
            "GET",
            p,
            if last { "Connection: close\r\n" } else { "" },
        ));
    }
    files.push(record(&server, &dir.0, "first", &batch));

    // 2. Revalidation: 43 pipelined conditional GETs.
    let mut batch = String::new();
    for (i, p) in paths.iter().enumerate() {
        let close = if i + 1 == paths.len() {
            "Connection: close\r\n"
        } else {
            ""
        };
        batch.push_str(&r(
            "GET",
            p,
            &format!("If-None-Match: {}\r\n{close}", etags[i]),
        ));
    }
    files.push(record(&server, &dir.0, "revalidate", &batch));

    // 3. Everything else, pipelined on one connection.
    let gif = &paths[1];
    let batch = [
        r("HEAD", "/index.html", ""),
        r("GET", "/index.html", "Accept-Encoding: deflate\r\n"),
        r("GET", "/index.html", "Accept-Encoding: gzip, br;q=0.9\r\n"),
        r("GET", "/index.html", "Accept-Encoding: zstd\r\n"),
        r("GET", gif, "Range: bytes=0-99\r\n"),
        r("GET", gif, "Range: bytes=0-9, 50-59\r\n"),
        r("GET", gif, "Range: bytes=999999-\r\n"),
        r("GET", gif, "Range: bytes=0-9\r\nIf-Range: \"other\"\r\n"),
        r(
            "GET",
            gif,
            "If-Modified-Since: Tue, 24 Jun 1997 00:00:00 GMT\r\n",
        ),
        r("GET", "/images", ""),
        r("GET", "/missing.gif", ""),
        r("OPTIONS", "*", ""),
        r(
            "POST",
            "/index.html",
            "Content-Type: text/plain\r\nContent-Length: 2\r\n",
        ) + "hi",
        r("GET", "/", "Connection: close\r\n"),
    ]
    .concat();
    files.push(record(&server, &dir.0, "misc", &batch));

    // 4. HTTP/1.0.
    files.push(record(
        &server,
        &dir.0,
        "http10",
        "GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: pagewire-test\r\n\r\n",
    ));
    drop(server);

    let mut cmd = Command::new(httpolice);
    // Fail on comments too (the level below errors): only debug notes allowed.
    cmd.args(["-i", "streams", "--fail-on", "comment"]);
    for (i, o) in &files {
        cmd.arg(i).arg(o);
    }
    let out = cmd.output().expect("run httpolice");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "HTTPolice reported errors or comments:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Debug notes (e.g. "not decoding zstd") are printed for the record.
    if !report.trim().is_empty() {
        eprintln!("HTTPolice debug notes:\n{report}");
    }
}

#[test]
fn redbot_finds_no_problem_in_validation_ranges_and_compression() {
    let Some(redbot) = require("redbot") else {
        return;
    };
    let site = site();
    let server = TestServer::start(site, config());
    // The page (compressible, with variants) and a GIF (identity only).
    for path in ["/index.html", "/images/solutions.gif"] {
        let url = format!("http://{}{path}", server.addr);
        let out = Command::new(&redbot)
            .args(["-o", "har", &url])
            .output()
            .expect("run redbot");
        assert!(
            out.status.success(),
            "redbot failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let har = String::from_utf8_lossy(&out.stdout).into_owned();
        let notes = parse_notes(&har);
        assert!(!notes.is_empty(), "no notes from redbot for {url}:\n{har}");
        let problems: Vec<&(String, String, String)> = notes
            .iter()
            .filter(|(cat, level, _)| {
                level == "BAD"
                    || (level == "WARN"
                        && matches!(cat.as_str(), "VALIDATION" | "RANGE" | "CONNEG"))
            })
            .collect();
        assert!(
            problems.is_empty(),
            "REDbot problems for {path}: {problems:#?}"
        );
        for must in ["INM_304", "IMS_304"] {
            assert!(har.contains(must), "{path}: REDbot did not confirm {must}");
        }
        if path != "/" {
            assert!(
                har.contains("RANGE_CORRECT"),
                "{path}: ranges not confirmed"
            );
        }
        if path == "/index.html" {
            assert!(
                har.contains("CONNEG_GZIP_GOOD"),
                "{path}: gzip negotiation not confirmed"
            );
        }
    }
}

/// (category, level, note_id) of every `_red_messages` entry, read with a
/// minimal scan of REDbot's HAR JSON (no JSON crate needed for three keys).
fn parse_notes(har: &str) -> Vec<(String, String, String)> {
    let field = |obj: &str, key: &str| -> String {
        let pat = format!("\"{key}\": \"");
        obj.find(&pat)
            .map(|i| {
                let rest = &obj[i + pat.len()..];
                rest[..rest.find('"').unwrap_or(0)].to_owned()
            })
            .unwrap_or_default()
    };
    let mut notes = Vec::new();
    let mut rest = har;
    while let Some(i) = rest.find("\"note_id\"") {
        let start = rest[..i].rfind('{').unwrap_or(0);
        let end = i + rest[i..].find('}').unwrap_or(rest.len() - i);
        let obj = &rest[start..end];
        notes.push((
            field(obj, "category"),
            field(obj, "level"),
            field(obj, "note_id"),
        ));
        rest = &rest[end..];
    }
    notes
}
