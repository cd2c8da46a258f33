//! One grammar across commands:
//! `bench SUITE` subcommands with their own flags, `--suite` as an alias,
//! `bench list`, `--out` that refuses to overwrite, shell completions and
//! the man page. No root needed: nothing here starts a link.

use std::process::{Command, Output};

fn pagewire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bench_list_names_every_suite_and_the_claims_of_its_table() {
    let o = pagewire(&["bench", "list", "--json"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let suites = v.as_array().unwrap();
    let names: Vec<&str> = suites
        .iter()
        .map(|s| s["suite"].as_str().unwrap())
        .collect();
    for want in [
        "microscape",
        "objpack",
        "conn-length",
        "getall",
        "surge",
        "prefetch",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let mut ids = std::collections::BTreeSet::new();
    for s in suites {
        for c in s["claims"].as_array().unwrap() {
            let id = c["id"].as_str().unwrap();
            assert!(
                !id.is_empty() && !c["quote"].as_str().unwrap().is_empty(),
                "{c}"
            );
            assert!(ids.insert(id.to_string()), "claim id {id} listed twice");
        }
    }
    // Every suite that judges claims over a link has a table.
    for name in ["microscape", "objpack", "conn-length", "getall", "surge"] {
        let s = suites.iter().find(|s| s["suite"] == name).unwrap();
        assert!(
            !s["claims"].as_array().unwrap().is_empty(),
            "{name}: no claims"
        );
    }
    // The text form names the same ids.
    let o = pagewire(&["bench", "list"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    for id in ids.iter().take(5) {
        assert!(out.contains(id.as_str()), "{id} missing:\n{out}");
    }
}

#[test]
fn each_suite_has_its_own_flags_and_suite_is_an_alias() {
    let (cl, _) = text(&pagewire(&["bench", "conn-length", "--help"]));
    assert!(cl.contains("--tcp") && cl.contains("--reps"), "{cl}");
    assert!(
        !cl.contains("--strategy"),
        "conn-length offers microscape's flags:\n{cl}"
    );
    let (alias, _) = text(&pagewire(&["bench", "--suite", "conn-length", "--help"]));
    assert_eq!(alias, cl);
    let (alias_eq, _) = text(&pagewire(&["bench", "--suite=conn-length", "--help"]));
    assert_eq!(alias_eq, cl);
    let (surge, _) = text(&pagewire(&["bench", "surge", "--help"]));
    assert!(
        surge.contains("--memory") && surge.contains("--ues"),
        "{surge}"
    );
    assert!(!surge.contains("--strategy"), "{surge}");
    // `bench` alone is microscape, with its flags.
    let (bench, _) = text(&pagewire(&["bench", "--help"]));
    assert!(
        bench.contains("--strategy") && bench.contains("list"),
        "{bench}"
    );
    assert!(!bench.contains("--memory"), "{bench}");
    // A flag of another suite is a usage error (exit 2) naming it.
    let o = pagewire(&["bench", "conn-length", "--strategy", "http10"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--strategy"), "{err}");
    let o = pagewire(&["bench", "--suite", "moon"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--suite") && err.contains("conn-length"),
        "{err}"
    );
}

#[test]
fn out_refuses_a_directory_with_results_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("earlier");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("results.json"), "{\"runs\": []}").unwrap();
    for suite in [
        &["bench"][..],
        &["bench", "conn-length"],
        &["bench", "objpack"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args(suite)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{suite:?}: {err}");
        assert!(
            err.contains("--force") && err.contains("results.json"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("results.json")).unwrap(),
            "{\"runs\": []}",
            "the earlier results were touched"
        );
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    }
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = pagewire(&["completions", shell]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{shell}: {err}");
        assert!(out.contains("pagewire") && out.contains("bench"), "{shell}");
    }
    let (bash, _) = text(&pagewire(&["completions", "bash"]));
    assert!(bash.contains("conn-length") && bash.contains("--strategy"));
    let o = pagewire(&["man"]);
    let (man, _) = text(&o);
    assert!(o.status.success());
    assert!(
        man.starts_with(".ie") || man.contains(".TH pagewire"),
        "{man}"
    );
    assert!(man.contains("bench"));
    let (bench, _) = text(&pagewire(&["man", "bench"]));
    assert!(bench.contains(".TH pagewire-bench"), "{bench}");
    let o = pagewire(&["man", "moon"]);
    assert_eq!(o.status.code(), Some(2));
    let o = pagewire(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn files_are_out_file_and_out_stays_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    let (help, _) = text(&pagewire(&["pack", "--help"]));
    assert!(help.contains("--out-file"), "{help}");
    for flag in ["--out-file", "--out"] {
        let f = dir.path().join(format!("log{flag}"));
        let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args(["prefetch", "markov-log", "--hosts", "10", flag])
            .arg(&f)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o).1);
        assert!(std::fs::metadata(&f).unwrap().len() > 0);
    }
}

#[test]
fn a_name_that_is_no_link_profile_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let out_s = out.to_str().unwrap();
    // Every suite that takes --net takes every profile of `link --net`
    // (`every_link_profile_is_a_network_of_bench` runs one); a name that
    // is no profile is a usage error naming it, and nothing is made.
    for suite in [&["bench"][..], &["bench", "objpack"], &["bench", "surge"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args(suite)
            .args(["--net", "lan10", "--out", out_s])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{suite:?}: {err}");
        assert!(err.contains("lan10"), "{suite:?}: {err}");
        assert!(!out.exists(), "{suite:?}: {err}");
    }
    let (_, err) = text(&pagewire(&["bench", "--net", "lan10", "--out", out_s]));
    assert!(err.contains("lan100, t1 or none"), "{err}");
    // A queue discipline that does not exist, and one network named twice.
    for (net, says) in [("lan100+red", "red"), ("lan,lan+codel", "twice")] {
        let o = pagewire(&["bench", "--net", net, "--out", out_s]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{net}: {err}");
        assert!(err.contains(says), "{net}: {err}");
        assert!(!out.exists(), "{net}: {err}");
    }
    let o = pagewire(&["bench", "surge", "--help"]);
    assert!(text(&o).0.contains("any profile of `pagewire link --net`"));
}

/// `bench --net lan100,none+codel`: profiles paper 001 did not measure run
/// like its own, with the link as the profile says; their tables have no
/// paper rows and no claim reads them. Needs root (network namespaces).
#[test]
fn every_link_profile_is_a_network_of_bench() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args([
            "bench",
            "--net",
            "lan100,none+codel",
            "--strategy",
            "http10,pipeline",
            "--tests",
            "first",
            "--reps",
            "1",
            "--no-initial",
            "--no-progress",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{err}\n{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 networks x 2 strategies");
    for (net, profile, rate) in [
        ("lan100", "lan100", serde_json::json!(100_000_000)),
        ("none", "none+codel", serde_json::Value::Null),
    ] {
        let these: Vec<&serde_json::Value> = runs.iter().filter(|r| r["net"] == net).collect();
        assert_eq!(these.len(), 2, "{net}: {runs:?}");
        for r in these {
            assert!(r["error"].is_null(), "{r}");
            assert_eq!(r["link"]["profile"], profile, "{r}");
            if !rate.is_null() {
                assert_eq!(r["link"]["down_rate"], rate, "{r}");
            }
            assert!(r["packets_total"].as_u64().unwrap() > 43, "{r}");
        }
    }
    // No paper rows beside them, and no claim reads them.
    assert!(stdout.contains("not in paper 001"), "{stdout}");
    assert!(!stdout.contains("paper Apache (T"), "{stdout}");
    for c in json["claims"].as_array().unwrap() {
        assert!(!c.to_string().contains("lan100/"), "{c}");
    }
}

/// Every command, and every subcommand, says what its exit status means
/// (0 ok, 1 the run or a check failed, 2 usage, 130 interrupted).
#[test]
fn every_command_documents_its_exit_status() {
    let commands: &[&[&str]] = &[
        &[],
        &["bench"],
        &["bench", "microscape"],
        &["bench", "objpack"],
        &["bench", "conn-length"],
        &["bench", "getall"],
        &["bench", "surge"],
        &["bench", "section9"],
        &["bench", "prefetch"],
        &["bench", "list"],
        &["claims"],
        &["serve"],
        &["fetch"],
        &["record"],
        &["link"],
        &["shell"],
        &["browse"],
        &["site"],
        &["prefetch"],
        &["prefetch", "simulate"],
        &["load"],
        &["pack"],
        &["unpack"],
        &["completions"],
        &["man"],
    ];
    for c in commands {
        let mut args = c.to_vec();
        args.push("--help");
        let o = pagewire(&args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{c:?}: {err}");
        assert!(out.contains("Exit status"), "{c:?}:\n{out}");
        assert!(
            out.contains("usage error") && out.contains("130"),
            "{c:?}:\n{out}"
        );
    }
    let (man, _) = text(&pagewire(&["man", "unpack"]));
    assert!(man.contains("Exit status"), "{man}");
}
