//! `pagewire fetch` end to end: the binary against `pagewire serve` on
//! loopback; exit codes, `--json`, `--save`, `--har`, `--cache --revalidate`.

use std::process::Command;

use crate::common;
use crate::schema;
use common::{Serve, PW};

fn fetch(args: &[&str]) -> std::process::Output {
    Command::new(PW)
        .arg("fetch")
        .args(args)
        .output()
        .expect("run pagewire fetch")
}

#[test]
fn fetch_cli_outputs_and_exit_codes() {
    let site = tempfile::tempdir().unwrap();
    let out = Command::new(PW)
        .args(["site", "microscape", "--out"])
        .arg(site.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    // A second page with a missing image: exit status 1.
    std::fs::write(
        site.path().join("broken.html"),
        "<html><body><img src=/images/navbar.gif><img src=/missing.gif></body></html>",
    )
    .unwrap();
    let server = Serve::start(site.path(), &[]);
    let page = format!("{}/index.html", server.url);
    let work = tempfile::tempdir().unwrap();
    let (save, har, cache) = (
        work.path().join("save"),
        work.path().join("f.har"),
        work.path().join("cache"),
    );

    let o = fetch(&[
        &page,
        "--strategy",
        "pipeline",
        "--json",
        "--save",
        save.to_str().unwrap(),
        "--har",
        har.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["objects"].as_array().unwrap().len(), 43);
    assert_eq!(report["strategy"], "pipeline");
    assert_eq!(report["flush_counts"]["explicit"], 1);
    let har: serde_json::Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
    schema::check_har(&har, "fetch --har");
    assert_eq!(har["log"]["entries"].as_array().unwrap().len(), 43);
    let host = server.url.trim_start_matches("http://");
    assert_eq!(
        std::fs::read(save.join(host).join("index.html")).unwrap(),
        std::fs::read(site.path().join("index.html")).unwrap()
    );

    // Revalidation, human summary.
    let o = fetch(&[
        &page,
        "--strategy",
        "http10",
        "--cache",
        cache.to_str().unwrap(),
        "--revalidate",
    ]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("[1 GET, 42 HEAD]"), "{text}");
    // libwww 4.1D: the page again, unconditionally (its 43128 bytes).
    assert!(text.contains("43x200"), "{text}");
    assert!(text.contains("bodies 43128"), "{text}");
    // The earlier variant: a conditional page GET (304).
    let o = fetch(&[
        &page,
        "--strategy",
        "http10",
        "--cache",
        cache.to_str().unwrap(),
        "--revalidate",
        "--revalidation",
        "conditional-get-head",
    ]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("[1 GET, 42 HEAD]"), "{text}");
    assert!(text.contains("1x304"), "{text}");

    // A 404 among the objects: exit 1, named in the summary.
    let o = fetch(&[
        &format!("{}/broken.html", server.url),
        "--strategy",
        "http11",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAILED 404"));

    // Bad flags: exit 2 (usage); an unreachable server: exit 1 (the fetch
    // failed); both with a message.
    let o = fetch(&[&page, "--strategy", "http3"]);
    assert_eq!(o.status.code(), Some(2));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = fetch(&[&format!("http://127.0.0.1:{port}/")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot connect"));
    let o = fetch(&[&page, "--revalidate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--cache"));
}

/// A directory's 301 exits 1 (not followed, said so)
/// unless `--max-redirects` follows it; `--help` states the exit codes and
/// the deadline flags take units.
#[test]
fn fetch_cli_redirects_limits_and_help() {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("sub")).unwrap();
    std::fs::write(
        site.path().join("sub/index.html"),
        "<html><body><img src=a.gif></body></html>",
    )
    .unwrap();
    std::fs::write(site.path().join("sub/a.gif"), b"GIF89a").unwrap();
    let server = Serve::start(site.path(), &[]);
    let dir = format!("{}/sub", server.url);

    let o = fetch(&[&dir]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("NOT FOLLOWED 301"));

    let o = fetch(&[&dir, "--max-redirects", "3", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["url"], format!("{dir}/"));
    assert_eq!(report["redirects"][0], dir.as_str());
    assert_eq!(report["objects"].as_array().unwrap().len(), 2);
    assert_eq!(report["references_not_fetched"], 0);
    assert_eq!(report["timeouts"]["object"], 120000.0);
    assert_eq!(report["timeouts"]["min_rate"], 100);

    for bad in [
        ["--min-rate", "100"],
        ["--object-timeout", "120"],
        ["--max-inflated", "32"],
        ["--max-redirects", "21"],
    ] {
        let o = fetch(&[&dir, bad[0], bad[1]]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }

    let help = String::from_utf8_lossy(&fetch(&["--help"]).stdout).into_owned();
    for needle in [
        "--object-timeout",
        "--min-rate",
        "--max-redirects",
        "--max-inflated",
        "--decode-unasked",
        "redirect (3xx) not followed",
    ] {
        assert!(
            help.contains(needle),
            "{needle} missing from --help:\n{help}"
        );
    }
}
