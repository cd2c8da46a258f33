//! One grammar across commands, end to end through the binary on loopback:
//! `--json` on every command that prints results (site, pack, unpack,
//! record, fetch), `--strategy` a list wherever a command can run several
//! (fetch, as bench) and one value, said so, where a file holds one visit
//! (record), and the documented exit status (1 a failed run or a missing
//! input, 2 a usage error).

use std::path::Path;
use std::process::{Command, Output};

use crate::common;
use crate::schema;
use common::{Serve, PW};

fn pagewire(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(PW)
        .args(args)
        .args(paths)
        .output()
        .expect("run pagewire")
}

fn json_of(o: &Output, what: &str) -> serde_json::Value {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON object ({e}): {:?}",
            o.stdout
        )
    })
}

#[test]
fn site_pack_unpack_record_and_fetch_print_json() {
    let work = tempfile::tempdir().unwrap();
    let site = work.path().join("site");

    // site microscape --json: what was written, file by file.
    let v = json_of(
        &pagewire(&["site", "microscape", "--json", "--out"], &[&site]),
        "site microscape --json",
    );
    assert_eq!(v["site"], "microscape");
    assert_eq!(v["seed"], 1997, "the common default seed");
    assert_eq!(v["files"], 43);
    let images = v["images"].as_array().unwrap();
    assert_eq!(images.len(), 42);
    let on_disk: u64 = images
        .iter()
        .map(|i| {
            let p = site.join(i["path"].as_str().unwrap().trim_start_matches('/'));
            let len = std::fs::metadata(&p).unwrap().len();
            assert_eq!(len, i["bytes"].as_u64().unwrap(), "{}", p.display());
            len
        })
        .sum::<u64>()
        + std::fs::metadata(site.join("index.html")).unwrap().len();
    assert_eq!(v["bytes"].as_u64(), Some(on_disk));

    // site surge --json (global flag, after the subcommand's own).
    let surge = work.path().join("surge");
    let v = json_of(
        &pagewire(
            &["site", "surge", "--files", "50", "--json", "--out"],
            &[&surge],
        ),
        "site surge --json",
    );
    assert_eq!(v["site"], "surge");
    assert_eq!(v["files"], 50);
    assert!(surge.join(v["manifest"].as_str().unwrap()).is_file());

    // pack --json: the package's table; its size is the file's.
    let pkg = work.path().join("page.objp");
    let v = json_of(
        &pagewire(
            &[
                "pack",
                "--json",
                "--root",
                site.to_str().unwrap(),
                "--out-file",
            ],
            &[&pkg],
        ),
        "pack --json",
    );
    assert_eq!(v["files"], 43);
    assert_eq!(
        v["package_bytes"].as_u64(),
        Some(std::fs::metadata(&pkg).unwrap().len())
    );
    // Not with the package on stdout: a usage error, nothing written.
    let o = pagewire(
        &[
            "pack",
            "--json",
            "--root",
            site.to_str().unwrap(),
            "--out-file",
            "-",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());

    // unpack --json: every file with its size, and on a cut package the
    // error with exit status 1 (still one JSON object).
    let out = work.path().join("unpacked");
    let v = json_of(
        &pagewire(&["unpack", "--json", "--out"], &[&out, &pkg]),
        "unpack --json",
    );
    assert_eq!(v["files"], 43);
    assert!(v["error"].is_null());
    for e in v["entries"].as_array().unwrap() {
        let len = std::fs::metadata(e["path"].as_str().unwrap())
            .unwrap()
            .len();
        assert_eq!(Some(len), e["size"].as_u64(), "{e}");
    }
    let bytes = std::fs::read(&pkg).unwrap();
    let cut = work.path().join("cut.objp");
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let o = pagewire(
        &["unpack", "--json", "--out"],
        &[&work.path().join("cut"), &cut],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["error"].is_string(), "{v}");
    assert!(v["incomplete_file"].is_string(), "{v}");

    // record --json against a real server: every exchange with its status.
    let server = Serve::start(&site, &[]);
    let page = format!("{}/index.html", server.url);
    let warc = work.path().join("page.warc");
    let v = json_of(
        &pagewire(
            &[
                "record",
                &page,
                "--with",
                "robot",
                "--strategy",
                "http11",
                "--json",
                "--out-file",
            ],
            &[&warc],
        ),
        "record --json",
    );
    assert_eq!(v["exchanges"], 43);
    assert_eq!(v["strategy"], "http11");
    assert_eq!(
        v["archive_bytes"].as_u64(),
        Some(std::fs::metadata(&warc).unwrap().len())
    );
    assert!(v["recorded"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == 200));
    // A list where one visit is recorded: said so, exit 2.
    let o = pagewire(
        &[
            "record",
            &page,
            "--with",
            "robot",
            "--strategy",
            "http11,pipeline",
            "--out-file",
        ],
        &[&work.path().join("two.warc")],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("one strategy here"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // fetch --strategy a list, as bench: one report per strategy, in
    // order, and one HAR per strategy (valid HAR 1.2).
    let har = work.path().join("f.har");
    let o = pagewire(
        &[
            "fetch",
            &page,
            "--strategy",
            "http10,http11,pipeline",
            "--json",
            "--har",
        ],
        &[&har],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reports: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["http10", "http11", "pipeline"]);
    for r in &reports {
        assert_eq!(r["objects"].as_array().unwrap().len(), 43);
        let st = r["strategy"].as_str().unwrap();
        let file = work.path().join(format!("f.{st}.har"));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        schema::check_har(&doc, &format!("fetch --har, {st}"));
    }
    assert!(!har.exists(), "several strategies: one HAR each, named");
    server.stop();
}

#[test]
fn exit_status_is_one_for_a_failed_run_and_two_for_usage() {
    let missing = Path::new("/nonexistent-pagewire-dir");
    let work = tempfile::tempdir().unwrap();
    // A missing input or a failed run: 1, for every command alike.
    for (args, what) in [
        (vec!["claims"], "claims"),
        (vec!["model"], "model"),
        (vec!["replay"], "replay"),
        (vec!["unpack", "--out", "/tmp/pagewire-never"], "unpack"),
    ] {
        let o = pagewire(&args, &[missing]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = pagewire(&["fetch", "http://127.0.0.1:9/"], &[]);
    assert_eq!(o.status.code(), Some(1));
    // Usage: a bad value or a flag that does not apply: 2, nothing done.
    for args in [
        vec!["fetch", "http://127.0.0.1:9/", "--strategy", "http11,nope"],
        vec!["load", "http://127.0.0.1:9/", "--ramp", "-1s"],
        vec!["load", "http://127.0.0.1:9/", "--warmup", "-1s"],
        vec!["load", "http://127.0.0.1:9/", "-d", "-3s"],
        vec!["replay", "x.warc", "--timeout", "-5s"],
        vec!["fetch", "http://127.0.0.1:9/", "--read-timeout", "-5s"],
    ] {
        let o = pagewire(&args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        if args.iter().any(|a| {
            a.starts_with('-')
                && a.ends_with('s')
                && a.len() > 2
                && a.as_bytes()[1].is_ascii_digit()
        }) {
            assert!(err.contains("must be positive"), "{args:?}: {err}");
            assert!(!err.contains("-- -"), "{args:?}: {err}");
        }
    }
    let o = pagewire(&["model", "--server-ms", "-1"], &[work.path()]);
    assert_eq!(o.status.code(), Some(2));
}

/// The schema check the suites' tests rely on can fail: a committed
/// results.json validates, and the same document with a required field
/// removed, or a `made_by` that is not pagewire's, does not.
#[test]
fn the_results_schema_check_rejects_a_broken_document() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/getall-results/rerun-2026-11-26/results.json");
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(schema::schema_errors("results.schema.json", &good), None);
    for key in ["schema_version", "made_by", "provenance", "claims"] {
        let mut bad = good.clone();
        bad.as_object_mut().unwrap().remove(key);
        let e = schema::schema_errors("results.schema.json", &bad)
            .unwrap_or_else(|| panic!("{key} is required"));
        assert!(e.contains(key), "{key}: {e}");
    }
    let mut bad = good.clone();
    bad["made_by"] = serde_json::json!("curl 8");
    let e = schema::schema_errors("results.schema.json", &bad).expect("made_by names pagewire");
    assert!(e.contains("made_by"), "{e}");
}
