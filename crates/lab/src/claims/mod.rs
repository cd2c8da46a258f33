//! The claims engine every suite uses: claims as data and the one
//! decision rule ([`spec`]), one table of hedge words to bands ([`bands`]),
//! a judged results directory ([`Judged`], [`render`]), and each
//! contradicted claim beside the expected-time model ([`model_column`]).
//! Each suite keeps its paper's claim table and its judge beside its code
//! (`microscape::claims`, `microscape::section9`, `objpack::claims`,
//! `connlen::claims`, `loadtime::claims`, `surge::claims`,
//! `prefetch::claims`); [`crate::registry`] judges any results directory
//! by the suite that made it (the `pagewire claims` command). This module
//! names no suite's code.
//!
//! Runs whose link fidelity monitor flagged them (`link_lateness.flagged`
//! in their record) are left out of every claim, in one place:
//! [`flagged`]; the report says how many.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::Value;

pub mod bands;
pub mod model_column;
pub mod spec;

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

/// The records of `key` (an array), or an error naming it.
pub fn records<'a>(v: &'a Value, key: &str) -> Result<&'a [Value]> {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| anyhow!("results.json has no array `{key}`"))
}

/// A results file read as JSON.
pub fn read_json(p: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
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
