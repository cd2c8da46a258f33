//! `pagewire claims DIR`: every committed results directory of every suite
//! is re-judged from its records without error, and a results.json whose
//! `claims` the bench's own path wrote is printed back unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn claims(dir: &Path, json: bool) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pagewire"));
    c.arg("claims").arg(dir);
    if json {
        c.arg("--json");
    }
    let o = c.output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The committed directories and their suites.
const DIRS: &[(&str, &str)] = &[
    ("bench-results/2026-11-25", "microscape"),
    ("bench-results/2026-11-25/css", "microscape-css"),
    ("bench-results/2026-11-25/nagle", "microscape"),
    ("bench-results/objpack-2026-11-25-rerun", "objpack"),
    ("conn-length-results", "conn-length"),
    ("getall-results/tcp1997", "getall"),
    ("surge-results/apache", "surge"),
    ("prefetch", "prefetch"),
    // One of its three HTTP/1.0 runs failed (a connection got no data for
    // 30 s under CoDel): its time is null in JSON and must still re-judge.
    ("link-results/ppp-codel", "microscape"),
];

#[test]
fn every_suite_is_rejudged_from_its_records() {
    for (dir, suite) in DIRS {
        let (ok, out, err) = claims(&docs().join(dir), true);
        assert!(ok, "{dir}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["suite"], *suite, "{dir}");
        let tally: Vec<u64> = v["tally"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        let counted = v["claims"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "claim")
            .count() as u64;
        assert_eq!(
            (tally.len(), tally.iter().sum::<u64>()),
            (4, counted),
            "{dir}"
        );
        let (ok, text, _) = claims(&docs().join(dir), false);
        assert!(
            ok && text.contains("tally:") && text.contains("left out for link fidelity"),
            "{dir}: {text}"
        );
    }
}

/// The bench writes `claims` through the same judge, from the results as
/// serialized; `pagewire claims` on that file prints the same claims.
#[test]
fn results_json_claims_equal_what_pagewire_claims_prints() {
    for (dir, _) in DIRS
        .iter()
        .filter(|d| !matches!(d.1, "microscape-css" | "prefetch"))
    {
        let src = docs().join(dir).join("results.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
        v["claims"] = Value::Array(Vec::new());
        // What the suite's bench writes: its own judge of the results.
        let suite = pagewire_lab::registry::detect(&v).unwrap();
        let judged = pagewire_lab::registry::judge_of(suite)(&v, None).unwrap();
        v["claims"] = serde_json::to_value(&judged.claims).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("results.json");
        std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let (ok, out, err) = claims(tmp.path(), true);
        assert!(ok, "{dir}: {err}");
        let printed: Value = serde_json::from_str(&out).unwrap();
        assert!(
            printed["claims"] == written["claims"],
            "{dir}: the printed claims differ from the file's"
        );
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, _, err) = claims(tmp.path(), false);
    assert!(!ok && err.contains("no results.json"), "{err}");
    std::fs::write(
        tmp.path().join("results.json"),
        "{\"runs\": [{\"net\": 1}]}",
    )
    .unwrap();
    let (ok, _, err) = claims(tmp.path(), false);
    assert!(!ok && err.contains("run record 0"), "{err}");
    std::fs::write(tmp.path().join("results.json"), "not json").unwrap();
    let (ok, _, err) = claims(tmp.path(), false);
    assert!(!ok && err.contains("not JSON"), "{err}");
}

/// `--write` records the verdicts judged now in results.json with the
/// judgement's own build and command (`judged_by`), leaves the run's
/// `provenance` as it was, writes claims.txt, and afterwards `claims`
/// prints exactly what the file records. A prefetch directory, which
/// records no claims, is refused without touching anything.
#[test]
fn write_records_the_rejudged_claims_beside_the_runs_provenance() {
    let tmp = tempfile::tempdir().unwrap();
    let src = docs().join("getall-results/results.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
    let provenance = v["provenance"].clone();
    // A stale record: the recorded claims say something else.
    v["claims"] = Value::Array(Vec::new());
    std::fs::write(tmp.path().join("results.json"), v.to_string()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["claims", "--write", "--json"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("results.json")).unwrap())
            .unwrap();
    assert!(!written["claims"].as_array().unwrap().is_empty());
    assert_eq!(written["claims"], printed["claims"]);
    assert_eq!(
        written["provenance"], provenance,
        "the run's provenance is kept"
    );
    let commit = written["judged_by"]["git_commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit}"
    );
    assert_eq!(written["judged_by"]["tally"], printed["tally"]);
    let table = std::fs::read_to_string(tmp.path().join("claims.txt")).unwrap();
    assert!(table.contains("tally:"), "{table}");
    let (ok, again, _) = claims(tmp.path(), true);
    assert!(ok);
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["claims"], written["claims"]);

    let pre = tempfile::tempdir().unwrap();
    for f in ["summary.json", "results.jsonl"] {
        std::fs::copy(docs().join("prefetch").join(f), pre.path().join(f)).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(["claims", "--write"])
        .arg(pre.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && err.contains("re-run `pagewire prefetch simulate`"),
        "{err}"
    );
    assert!(!pre.path().join("claims.txt").exists());
}

/// `--pool`: a committed run split into two runs (even and odd
/// repetitions, the second stamped with its own start date) judges as the
/// whole run, and the output names both with their load averages; one
/// half with another commit, or more LAN repetitions in its plan, is
/// refused naming the field; two directories without `--pool` are a usage
/// error.
#[test]
fn pool_judges_split_runs_as_the_whole_and_refuses_differences() {
    let src = docs().join("bench-results/2026-11-26-nagle");
    let whole: Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("results.json")).unwrap()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let half = |parity: u64, name: &str| {
        let mut v = whole.clone();
        let runs: Vec<Value> = v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["rep"].as_u64().unwrap() % 2 == parity)
            .cloned()
            .collect();
        v["runs"] = Value::Array(runs);
        if parity == 1 {
            v["provenance"]["date_utc"] = Value::from("2026-11-26 04:00:00 UTC");
            v["provenance"]["load_avg_before"] = serde_json::json!([3.5, 2.0, 1.0]);
        }
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.json"), v.to_string()).unwrap();
        (dir, v)
    };
    let (even, _) = half(0, "even");
    let (odd, odd_v) = half(1, "odd");
    let pool = |dirs: &[&Path], json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pagewire"));
        c.arg("claims").args(dirs).arg("--pool");
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, err) = pool(&[&even, &odd], true);
    assert_eq!(code, Some(0), "{err}");
    let pooled: Value = serde_json::from_str(&out).unwrap();
    let (ok, one, _) = claims(&src, true);
    assert!(ok);
    let one: Value = serde_json::from_str(&one).unwrap();
    assert_eq!(pooled["tally"], one["tally"]);
    assert_eq!(pooled["records"], one["records"]);
    let verdicts = |v: &Value| -> Vec<(String, String)> {
        v["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].to_string(), c["verdict"].to_string()))
            .collect()
    };
    assert_eq!(verdicts(&pooled), verdicts(&one));
    let members = pooled["pooled"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[1]["load_avg_before"][0], 3.5);
    let (_, text, _) = pool(&[&even, &odd], false);
    assert!(
        text.contains("Pooled: 2 runs") && text.contains("load average 3.50 / 2.00 / 1.00"),
        "{text}"
    );

    let mut other = odd_v.clone();
    other["provenance"]["git_commit"] = Value::from("0".repeat(40));
    other["plan"]["reps"]["lan"] = Value::from(20);
    let dir = tmp.path().join("other");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("results.json"), other.to_string()).unwrap();
    let (code, _, err) = pool(&[&even, &dir], false);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("commit: ") && err.contains("plan.reps.lan: 10 vs 20"),
        "{err}"
    );
    let (code, _, err) = pool(
        &[&even, &docs().join("bench-results/2026-11-25/css")],
        false,
    );
    assert!(code == Some(2) && err.contains("microscape suite"), "{err}");

    let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .arg("claims")
        .args([&even, &odd])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.code() == Some(2) && err.contains("--pool"),
        "{err}"
    );
}

/// Every results.json under docs/, found by walking the tree.
fn committed_results(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            committed_results(&p, out);
        } else if p.file_name().is_some_and(|n| n == "results.json") {
            // `pagewire throttle` compares throttling methods and judges no
            // paper's claims (scripts/claims-verdicts leaves it out too).
            let text = std::fs::read_to_string(&p).unwrap();
            if !text.contains("\"what\": \"three throttling methods") {
                out.push(p);
            }
        }
    }
}

/// The done-when of the verdict engine, as a test: every committed results
/// directory names the clean build that measured it (40-hex commit, not
/// dirty) and records the verdicts `pagewire claims` prints for it today,
/// or else it is one of the historical directories (made before provenance
/// existed, or by a build with uncommitted changes), which docs/results.md
/// lists by path and which still re-judge without error. A prefetch directory's provenance is its summary.json's.
#[test]
fn every_committed_results_dir_names_its_commit_and_records_its_verdicts() {
    let historical = std::fs::read_to_string(docs().join("results.md")).unwrap();
    let historical = historical
        .split("## Historical results")
        .nth(1)
        .expect("docs/results.md has a \"## Historical results\" section");
    let hex40 = |c: &str| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit());
    let mut files = Vec::new();
    committed_results(&docs(), &mut files);
    assert!(files.len() >= 8, "{files:?}");
    for file in files {
        let dir = file.parent().unwrap();
        let rel = dir
            .strip_prefix(docs())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let commit = v["provenance"]["git_commit"].as_str().unwrap_or("");
        let (ok, out, err) = claims(dir, true);
        assert!(ok, "{rel}: {err}");
        let clean = hex40(commit) && v["provenance"]["git_dirty"] == false;
        if !clean {
            assert!(
                historical.contains(&format!("`{rel}`")),
                "{rel}: no commit of a clean build in its provenance and not listed under \
                 docs/results.md's \"Historical results\""
            );
            continue;
        }
        let printed: Value = serde_json::from_str(&out).unwrap();
        assert!(
            printed["claims"] == v["claims"],
            "{rel}: results.json records other verdicts than `pagewire claims` prints \
             (re-judge with `pagewire claims {rel} --write` after a rule change)"
        );
    }
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(docs().join("prefetch/summary.json")).unwrap(),
    )
    .unwrap();
    let commit = summary["provenance"]["run"]["git_commit"]
        .as_str()
        .or(summary["run"]["git_commit"].as_str())
        .unwrap_or("");
    assert!(
        hex40(commit) || historical.contains("`prefetch`"),
        "prefetch: no commit in summary.json"
    );
}

/// docs/claims.md's per-claim table and tally are what the committed
/// results give today (`scripts/claims-table --check`, run with this
/// build): a rule change or a new run that moves a verdict without the doc
/// being regenerated fails here.
#[test]
fn docs_claims_table_is_what_the_committed_results_give() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("python3")
        .arg(root.join("scripts/claims-table"))
        .args(["--check", "--pagewire", env!("CARGO_BIN_EXE_pagewire")])
        .output()
        .expect("python3 runs scripts/claims-table");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
