//! Claims checks for every suite: one engine ([`spec`]: claims as data and
//! the one decision rule), one table of hedge words to bands ([`bands`]),
//! and re-judging any results directory from its run records alone
//! ([`judge_dir`], the `pagewire claims` command). Each suite keeps its
//! paper's claim table beside its code (`microscape` here, `section9`,
//! `objpack::claims`, `connlen::claims`, `loadtime::claims`,
//! `surge::claims`, [`prefetch`]).
//!
//! Runs whose link fidelity monitor flagged them (`link_lateness.flagged`
//! in their record) are left out of every claim, in one place:
//! [`flagged`]; the report says how many.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

pub mod bands;
pub mod microscape;
pub mod model_column;
pub mod pool;
pub mod prefetch;
pub mod spec;

pub use microscape::{check, PageFacts};
pub use spec::{tally, tally_line, Claim, ClaimKind, Verdict};

/// Whether a per-run record was flagged by the link fidelity monitor (an
/// absent `link_lateness` is not flagged). The one definition every suite
/// uses.
pub fn flagged(record: &Value) -> bool {
    record
        .get("link_lateness")
        .and_then(|l| l.get("flagged"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The records of `list` that count, and how many were left out.
pub fn kept(list: &[Value]) -> (Vec<&Value>, usize) {
    let keep: Vec<&Value> = list.iter().filter(|r| !flagged(r)).collect();
    let out = list.len() - keep.len();
    (keep, out)
}

/// The suites whose results the engine judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suite {
    Microscape,
    /// Paper 001 section 9: the CSS+PNG page (`bench --page css`).
    MicroscapeCss,
    Objpack,
    ConnLength,
    Getall,
    Prefetch,
    Surge,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::Microscape => "microscape",
            Suite::MicroscapeCss => "microscape (section 9 CSS+PNG page)",
            Suite::Objpack => "objpack",
            Suite::ConnLength => "conn-length",
            Suite::Getall => "getall",
            Suite::Prefetch => "prefetch",
            Suite::Surge => "surge",
        }
    }
    pub fn paper(self) -> &'static str {
        match self {
            Suite::Microscape | Suite::MicroscapeCss => "001",
            Suite::Objpack => "002",
            Suite::ConnLength | Suite::Getall | Suite::Prefetch => "003",
            Suite::Surge => "004",
        }
    }
}

/// A results directory judged.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    pub suite: Suite,
    pub paper: &'static str,
    /// Per-run records read.
    pub records: usize,
    /// Of those, left out for link fidelity (`link_lateness.flagged`).
    pub excluded_runs: usize,
    pub claims: Vec<Claim>,
    /// Counted claims: confirmed, contradicted, inconclusive, not testable.
    pub tally: [usize; 4],
    /// Why the results could not be judged at all (then no claims).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Each contradicted claim beside the expected-time model: explained,
    /// unexplained or not modelled (suites the model covers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model: Vec<model_column::ModelNote>,
}

impl Judged {
    pub fn new(suite: Suite, records: usize, excluded_runs: usize, claims: Vec<Claim>) -> Judged {
        Judged {
            suite,
            paper: suite.paper(),
            records,
            excluded_runs,
            tally: tally(&claims),
            claims,
            error: None,
            model: Vec::new(),
        }
    }

    /// The claims table, as every suite's report prints it.
    pub fn render(&self) -> String {
        let mut s = render(
            &format!(
                "Claims of paper {} ({} suite), judged by the rule of docs/claims.md:",
                self.paper,
                self.suite.name()
            ),
            &self.claims,
        );
        let _ = writeln!(
            s,
            "  runs left out for link fidelity (link_lateness.flagged): {} of {}",
            self.excluded_runs, self.records
        );
        if let Some(e) = &self.error {
            let _ = writeln!(s, "  NOT JUDGED: {e}");
        }
        if !self.model.is_empty() {
            let _ = writeln!(
                s,
                "Contradicted claims beside the expected-time model (docs/model.md; the same rule \
                 on the model's predictions for the same cells):"
            );
            for n in &self.model {
                let _ = writeln!(s, "  {:<36} {:<13} {}", n.id, n.model, n.why);
            }
        }
        s
    }
}

/// Judge a suite's results as they will be written (serialized to JSON
/// text and read back, exactly as `pagewire claims` reads the file), so a
/// results.json's `claims` are what `pagewire claims` prints for it.
pub fn judge_serialized<T: Serialize>(results: &T, suite: Suite) -> Judged {
    let judged = serde_json::to_string(results)
        .map_err(anyhow::Error::from)
        .and_then(|t| Ok(serde_json::from_str::<Value>(&t)?))
        .and_then(|v| judge_value(&v, None));
    judged.unwrap_or_else(|e| Judged {
        error: Some(format!("{e:#}")),
        ..Judged::new(suite, 0, 0, Vec::new())
    })
}

/// Which suite made a results.json.
pub fn detect(v: &Value) -> Result<Suite> {
    let made_by = v.get("made_by").and_then(Value::as_str).unwrap_or("");
    let has = |k: &str| v.get(k).is_some();
    let css = v
        .get("page_composition")
        .and_then(Value::as_str)
        .is_some_and(|p| p.contains("CSS+PNG variant"));
    Ok(
        if made_by.contains("--suite objpack") || (has("rows") && has("group_sizes")) {
            Suite::Objpack
        } else if made_by.contains("--suite surge") || has("per_connection_memory") {
            Suite::Surge
        } else if made_by.contains("--suite conn-length") || has("points") {
            Suite::ConnLength
        } else if made_by.contains("--suite getall") || has("cells") {
            Suite::Getall
        } else if has("runs") && css {
            Suite::MicroscapeCss
        } else if has("runs") {
            Suite::Microscape
        } else {
            bail!("results.json of no known suite (expected runs, rows, points or cells)")
        },
    )
}

/// The records of `key` (an array), or an error naming it.
pub fn records<'a>(v: &'a Value, key: &str) -> Result<&'a [Value]> {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| anyhow!("results.json has no array `{key}`"))
}

/// Re-judge a results value of a known suite (`dir`: where it lives, for
/// the section-9 baseline beside it).
pub fn judge_value(v: &Value, dir: Option<&Path>) -> Result<Judged> {
    let suite = detect(v)?;
    match suite {
        Suite::Microscape => {
            let (runs, out, n) = microscape_runs(v)?;
            // A `bench --nagle` run: its Nagle-off baseline, for the Nagle
            // sentences (`--baseline`, or ../results.json beside it).
            let base = match runs.iter().any(|r| r.ok() && r.nagle_on()) {
                true => match baseline(v, dir) {
                    Some(p) => Some(microscape_runs(&read_json(&p)?)?.0),
                    None => None,
                },
                false => None,
            };
            let claims =
                microscape::check_with_nagle_baseline(&runs, page_facts(v), base.as_deref());
            // The model describes the Microscape page of the default seed.
            let page = crate::expect::Page::microscape(1997);
            let modelled = page_facts(v).is_some_and(|f| f.html_bytes as u64 == page.html.body);
            let model = model_column::notes(&runs, &claims, modelled.then_some(&page), |rs| {
                microscape::check_with_nagle_baseline(rs, page_facts(v), base.as_deref())
            });
            Ok(Judged {
                model,
                ..Judged::new(suite, n, out, claims)
            })
        }
        Suite::MicroscapeCss => {
            let (css, out, n) = microscape_runs(v)?;
            let original = match baseline(v, dir) {
                Some(p) => Some(microscape_runs(&read_json(&p)?)?.0),
                None => None,
            };
            let claims = crate::section9::judge(original.as_deref(), &css);
            Ok(Judged::new(suite, n, out, claims))
        }
        Suite::Objpack => {
            let j = crate::objpack::claims::judge_value(v)?;
            Ok(Judged {
                model: crate::objpack::model::model_notes(v, &j.claims),
                ..j
            })
        }
        Suite::ConnLength => crate::connlen::claims::judge_value(v),
        Suite::Getall => {
            let j = crate::loadtime::claims::judge_value(v)?;
            Ok(Judged {
                model: crate::loadtime::model::model_notes(v, &j.claims),
                ..j
            })
        }
        Suite::Surge => crate::surge::claims::judge_value(v),
        Suite::Prefetch => bail!("prefetch results are a directory (summary.json, results.jsonl)"),
    }
}

/// The original page's results.json for a CSS-page run (the Nagle-off
/// run for a `--nagle` run): the run's own `--baseline` if that file still
/// exists, else `../results.json` beside the run's directory (the committed
/// layout).
fn baseline(v: &Value, dir: Option<&Path>) -> Option<PathBuf> {
    let cmd: Vec<&str> = v
        .get("provenance")
        .and_then(|p| p.get("command"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let from_cmd = cmd
        .windows(2)
        .find(|w| w[0] == "--baseline")
        .map(|w| PathBuf::from(w[1]))
        .filter(|p| p.is_file());
    from_cmd.or_else(|| {
        dir.map(|d| d.join("..").join("results.json"))
            .filter(|p| p.is_file())
    })
}

fn page_facts(v: &Value) -> Option<PageFacts> {
    serde_json::from_value(v.get("page_facts")?.clone()).ok()
}

/// The microscape run records that count, how many were left out, and how
/// many there were.
pub fn microscape_runs(v: &Value) -> Result<(Vec<crate::model::RunRecord>, usize, usize)> {
    let all = records(v, "runs")?;
    let (keep, out) = kept(all);
    let runs = keep
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            serde_json::from_value(r.clone())
                .with_context(|| format!("run record {i} of results.json"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((runs, out, all.len()))
}

fn read_json(p: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
}

/// Re-judge a results directory (or a results.json path) of any suite.
pub fn judge_dir(path: &Path) -> Result<Judged> {
    let (dir, file): (PathBuf, PathBuf) = if path.is_dir() {
        (path.to_path_buf(), path.join("results.json"))
    } else {
        (
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            path.to_path_buf(),
        )
    };
    if !file.is_file() && dir.join("summary.json").is_file() && dir.join("results.jsonl").is_file()
    {
        return prefetch::judge_dir(&dir);
    }
    if !file.is_file() {
        bail!(
            "{}: no results.json (nor a prefetch simulator's summary.json and results.jsonl)",
            dir.display()
        );
    }
    judge_value(&read_json(&file)?, Some(&dir))
}

fn cell_line(c: &spec::CellOut) -> String {
    let n = match c.n {
        Some(n) => format!("n={n}"),
        None => "exact".into(),
    };
    let iv = if c.lo == c.hi {
        spec::fmt_num(c.value)
    } else {
        format!(
            "{} [{}, {}]",
            spec::fmt_num(c.value),
            spec::fmt_num(c.lo),
            spec::fmt_num(c.hi)
        )
    };
    let mark = c.position.mark();
    format!("{}: {iv} ({n}) {mark}", c.cell)
}

fn band_line(b: &spec::BandOut) -> String {
    let f = |x: Option<f64>, inf: &str| x.map(spec::fmt_num).unwrap_or_else(|| inf.to_string());
    format!(
        "{} in [{}, {}] — \"{}\"; band: {}",
        b.quantity,
        f(b.lo, "-inf"),
        f(b.hi, "+inf"),
        b.hedge,
        b.source
    )
}

/// One block per claim (id, verdict, reason, bands, cells), then the
/// four-number tally; page checks listed apart and never counted.
pub fn render(title: &str, claims: &[Claim]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{title}");
    let block = |s: &mut String, c: &Claim| {
        let _ = writeln!(
            s,
            "  [{:<17}] {} ({})",
            c.verdict.to_string(),
            c.id,
            c.section
        );
        let _ = writeln!(s, "      \"{}\"", c.claim);
        let _ = writeln!(s, "      covers: {}", c.covers);
        for b in &c.bands {
            let _ = writeln!(s, "      {}", band_line(b));
        }
        for cell in &c.cells {
            let q = if c.bands.len() > 1 {
                format!("{}: ", cell.quantity)
            } else {
                String::new()
            };
            let _ = writeln!(s, "        {q}{}", cell_line(cell));
        }
        let _ = writeln!(s, "      reason: {}", c.reason);
        if let Some(n) = &c.note {
            let _ = writeln!(s, "      note: {n}");
        }
    };
    let (found, page): (Vec<&Claim>, Vec<&Claim>) =
        claims.iter().partition(|c| c.kind == ClaimKind::Claim);
    for c in &found {
        block(&mut s, c);
    }
    let _ = writeln!(s, "  tally: {}", tally_line(claims));
    if !page.is_empty() {
        let _ = writeln!(
            s,
            "Page checks (true by construction of the generated page; never counted as claims):"
        );
        for c in page {
            block(&mut s, c);
        }
    }
    s
}

/// A suite's self-test as text: per claim, the verdict the paper's own
/// numbers get from each of `runs` (a name and its claims), with the
/// reason wherever they do not confirm the sentence; then how many such
/// pairs there are.
pub fn render_self_test(paper: &str, runs: &[(String, Vec<Claim>)]) -> String {
    let mut s = format!(
        "Self-test of {paper}: every claim rule fed the paper's own table values (bands are never widened to pass them):\n"
    );
    let mut fails = 0;
    let ids: Vec<String> = runs
        .first()
        .map(|r| r.1.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default();
    for id in ids {
        let _ = writeln!(s, "  {id}");
        for (name, claims) in runs {
            let Some(c) = claims.iter().find(|c| c.id == id) else {
                continue;
            };
            if c.verdict == Verdict::Confirmed {
                let _ = writeln!(s, "      {name}: confirmed");
            } else {
                if c.verdict == Verdict::Contradicted {
                    fails += 1;
                }
                let _ = writeln!(s, "      {name}: {} — {}", c.verdict, c.reason);
            }
        }
    }
    let _ = writeln!(
        s,
        "  {fails} (claim, table set) pairs where the paper's own numbers contradict its sentence"
    );
    s
}
