//! Pooling the repetitions of several runs of paper 001's bench
//! (`pagewire claims DIR1 DIR2 ... --pool`). On a busy machine a LAN time
//! verdict can flip between two runs of the same code: five repetitions
//! give wide intervals. Runs of the same plan, link configurations, page,
//! server, options and commit measure the same cells, so their run records
//! can be judged together, as one run with more repetitions. Anything that
//! differs between them is refused, naming the difference: pooling runs of
//! different code or set-ups would mix what they measured.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use super::{detect, judge_value};
use crate::claims::{read_json, records, Judged, Suite};
use crate::microscape::claims::runs as microscape_runs;

/// One run of the pool.
#[derive(Clone, Debug, Serialize)]
pub struct Member {
    /// The directory (or results.json) as given.
    pub dir: String,
    pub git_commit: String,
    pub date_utc: String,
    /// The machine's load averages (1, 5, 15 min) before and after the run.
    pub load_avg_before: Value,
    pub load_avg_after: Value,
    /// Run records it brings (before any is left out for link fidelity).
    pub runs: usize,
}

/// The pooled judgement: which runs, and the claims judged on all their
/// run records at once.
#[derive(Clone, Debug, Serialize)]
pub struct Pooled {
    pub pooled: Vec<Member>,
    #[serde(flatten)]
    pub judged: Judged,
}

impl Pooled {
    /// The runs pooled (with their load averages), then the claims table.
    pub fn render(&self) -> String {
        let mut s = format!(
            "Pooled: {} runs of the same plan, link configurations and commit ({}):\n",
            self.pooled.len(),
            self.pooled
                .first()
                .map(|m| short(&m.git_commit))
                .unwrap_or_default()
        );
        for m in &self.pooled {
            let _ = writeln!(
                s,
                "  {}: {} run records, {}, load average {} -> {}",
                m.dir,
                m.runs,
                m.date_utc,
                load(&m.load_avg_before),
                load(&m.load_avg_after)
            );
        }
        s.push_str(&self.judged.render());
        s
    }
}

fn short(c: &str) -> String {
    c.chars().take(12).collect()
}

/// "1.0 / 5.0 / 15.0" from the recorded array.
fn load(v: &Value) -> String {
    match v.as_array() {
        Some(a) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_f64().map(|f| format!("{f:.2}")).unwrap_or("?".into()))
            .collect::<Vec<_>>()
            .join(" / "),
        _ => "not recorded".into(),
    }
}

/// What must be equal between two runs for their repetitions to be pooled,
/// as (name, JSON pointer). The command is compared apart (without the
/// program's name and the options that only say where output goes).
const SAME: &[(&str, &str)] = &[
    ("commit", "/provenance/git_commit"),
    ("plan", "/plan"),
    ("link configurations", "/link_configs"),
    ("server", "/provenance/server"),
    ("request profile", "/provenance/request_profile"),
    ("page variant", "/provenance/page_variant"),
    ("seeds", "/provenance/seeds"),
    ("page", "/page_facts"),
];

/// The command's options that change what is measured: without the
/// program's name, `--out DIR` and `--no-progress`.
fn options(v: &Value) -> Vec<String> {
    let cmd: Vec<String> = v
        .pointer("/provenance/command")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut it = cmd.into_iter().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                it.next();
            }
            "--no-progress" => {}
            _ if a.starts_with("--out=") => {}
            _ => out.push(a),
        }
    }
    out
}

/// Where `a` and `b` differ, as "path: a vs b" (nested objects walked, so
/// the line names the field).
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = Value::Null;
                diff(
                    &format!("{path}.{k}"),
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        _ if a != b => {
            let show = |v: &Value| {
                let t = v.to_string();
                if t.chars().count() > 80 {
                    format!("{}...", t.chars().take(77).collect::<String>())
                } else {
                    t
                }
            };
            out.push(format!("{path}: {} vs {}", show(a), show(b)));
        }
        _ => {}
    }
}

/// Why `b` (from `db`) cannot be pooled with `a` (from `da`), if it cannot.
pub fn differences(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let null = Value::Null;
    for (name, ptr) in SAME {
        diff(
            name,
            a.pointer(ptr).unwrap_or(&null),
            b.pointer(ptr).unwrap_or(&null),
            &mut out,
        );
    }
    let (oa, ob) = (options(a), options(b));
    if oa != ob {
        out.push(format!(
            "command options: `{}` vs `{}`",
            oa.join(" "),
            ob.join(" ")
        ));
    }
    out
}

/// Judge paper 001's claims on the run records of every run in `paths`
/// together. Refused, naming the difference, unless every run is a
/// microscape bench run of the same plan, link configurations, page,
/// server, options and commit, made from a clean tree; `bench --nagle`
/// runs (judged against their own baseline) and the same run given twice
/// are refused too.
pub fn judge_pooled(paths: &[PathBuf]) -> Result<Pooled> {
    if paths.len() < 2 {
        bail!("--pool needs at least two results directories");
    }
    let mut vals: Vec<(String, Value)> = Vec::new();
    for p in paths {
        let file = if p.is_dir() {
            p.join("results.json")
        } else {
            p.to_path_buf()
        };
        let name = p.display().to_string();
        let v = read_json(&file)?;
        let suite = detect(&v).with_context(|| name.clone())?;
        if suite != Suite::Microscape {
            bail!(
                "{name}: --pool judges runs of paper 001's bench (the microscape suite); this is a {} run",
                suite.name()
            );
        }
        let (runs, _, _) = microscape_runs(&v).with_context(|| name.clone())?;
        if runs.iter().any(|r| r.nagle_on()) {
            bail!(
                "{name}: a `bench --nagle` run is judged against its own Nagle-off baseline; it cannot be pooled"
            );
        }
        match v.pointer("/provenance/git_dirty").and_then(Value::as_bool) {
            Some(false) => {}
            Some(true) => bail!(
                "{name}: made from a tree with uncommitted changes: its commit does not name its code, so it cannot be pooled"
            ),
            None => bail!("{name}: records no commit state (provenance.git_dirty)"),
        }
        vals.push((name, v));
    }
    let (first_name, first) = &vals[0];
    for (i, (name, v)) in vals.iter().enumerate().skip(1) {
        let d = differences(first, v);
        if !d.is_empty() {
            bail!(
                "cannot pool {first_name} and {name}: they differ in\n  {}",
                d.join("\n  ")
            );
        }
        let stamp = |v: &Value| v.pointer("/provenance/date_utc").cloned();
        if let Some((other, _)) = vals[..i]
            .iter()
            .find(|(_, w)| stamp(w).is_some() && stamp(w) == stamp(v))
        {
            bail!("{other} and {name} are the same run (same start date): pool different runs");
        }
    }
    let mut pooled = first.clone();
    let mut all: Vec<Value> = Vec::new();
    let mut members = Vec::new();
    for (name, v) in &vals {
        let runs = records(v, "runs")?;
        all.extend(runs.iter().cloned());
        let s = |ptr: &str| {
            v.pointer(ptr)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        members.push(Member {
            dir: name.clone(),
            git_commit: s("/provenance/git_commit"),
            date_utc: s("/provenance/date_utc"),
            load_avg_before: v
                .pointer("/provenance/load_avg_before")
                .cloned()
                .unwrap_or(Value::Null),
            load_avg_after: v
                .pointer("/provenance/load_avg_after")
                .cloned()
                .unwrap_or(Value::Null),
            runs: runs.len(),
        });
    }
    pooled["runs"] = Value::Array(all);
    let judged = judge_value(&pooled, None::<&Path>)?;
    Ok(Pooled {
        pooled: members,
        judged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(commit: &str, reps: u64, rtt: f64, out: &str) -> Value {
        json!({
            "provenance": {"git_commit": commit, "git_dirty": false, "server": "pagewire",
                "command": ["pagewire", "bench", "--lan-reps", "10", "--out", out, "--no-progress"],
                "date_utc": out},
            "plan": {"reps": {"lan": reps, "wan": 5}},
            "link_configs": {"lan": {"rtt_ms": rtt, "mtu": 1500}},
        })
    }

    /// Two runs that differ only in where they were written pool; a
    /// different commit, plan entry, link field or option is named.
    #[test]
    fn differences_name_the_field() {
        let a = run("abc", 10, 0.5, "one");
        assert!(differences(&a, &run("abc", 10, 0.5, "two")).is_empty());
        assert_eq!(
            differences(&a, &run("def", 10, 0.5, "two")),
            vec!["commit: \"abc\" vs \"def\""]
        );
        assert_eq!(
            differences(&a, &run("abc", 5, 0.5, "two")),
            vec!["plan.reps.lan: 10 vs 5"]
        );
        assert_eq!(
            differences(&a, &run("abc", 10, 90.0, "two")),
            vec!["link configurations.lan.rtt_ms: 0.5 vs 90.0"]
        );
        let mut b = run("abc", 10, 0.5, "two");
        b["provenance"]["command"][3] = json!("5");
        assert_eq!(
            differences(&a, &b),
            vec!["command options: `bench --lan-reps 10` vs `bench --lan-reps 5`"]
        );
    }
}
