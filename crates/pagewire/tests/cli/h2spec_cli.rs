//! h2spec (github.com/summerwind/h2spec) against `pagewire serve --tls`:
//! its generic, http2 and hpack suites (RFC 7540/9113 and RFC 7541 cases)
//! must pass, except the cases listed in [`KNOWN`] with their reason.

use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{run_bounded, Serve};

/// h2spec cases this server fails on purpose, by their id in h2spec's
/// report, with the reason.
const KNOWN: &[(&str, &str)] = &[(
    "hpack/5.2 Sends a Huffman-encoded string literal representation padded by zero",
    "httlib-hpack's Huffman decoder accepts padding of zero bits (RFC 7541 §5.2 wants \
     the EOS prefix, ones); the request decodes as meant and is answered",
)];

/// The failed cases of an h2spec JUnit report: each testcase's
/// `package` and `classname` for every `<failure`.
fn failures(junit: &str) -> Vec<String> {
    let mut failed = Vec::new();
    for case in junit.split("<testcase ").skip(1) {
        let end = case.find("</testcase>").unwrap_or(case.len());
        let body = &case[..end];
        if !body.contains("<failure") && !body.contains("<error") {
            continue;
        }
        let attr = |name: &str| {
            body.split(&format!("{name}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("")
                .to_string()
        };
        failed.push(format!("{} {}", attr("package"), attr("classname")));
    }
    failed
}

#[test]
fn h2spec_generic_http2_and_hpack_suites_pass() {
    let Some(h2spec) = pagewire_testreq::require_peer("h2spec") else {
        return;
    };
    let tls = tempfile::tempdir().unwrap();
    let site = tempfile::tempdir().unwrap();
    pagewire_site::microscape::generate(Default::default())
        .write_to_dir(site.path())
        .unwrap();
    let server = Serve::start(
        site.path(),
        &["--tls", tls.path().to_str().unwrap(), "--threads", "1"],
    );
    let base = server.url.split_whitespace().next().unwrap().to_string();
    let port = base.rsplit(':').next().unwrap().trim_end_matches('/');
    let report = tls.path().join("h2spec.xml");
    let (o, _, _) = run_bounded(
        Command::new(h2spec)
            .args([
                "generic",
                "http2",
                "hpack",
                "--tls",
                "--insecure",
                "--timeout",
                "2",
            ])
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                port,
                "--path",
                "/index.html",
            ])
            .arg("--junit-report")
            .arg(&report),
        Duration::from_secs(120),
        "h2spec",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let junit = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no h2spec report ({e}): {stdout}"));
    assert!(junit.contains("<testcase "), "{stdout}");
    let unexpected: Vec<String> = failures(&junit)
        .into_iter()
        .filter(|f| !KNOWN.iter().any(|(id, _)| f.contains(id)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "h2spec failures: {unexpected:#?}\n{stdout}"
    );
    // The server is still serving.
    server.stop();
}
