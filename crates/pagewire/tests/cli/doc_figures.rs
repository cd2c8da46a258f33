//! Figures in the docs come from committed results: every number in
//! README.md and docs/ that a run produced is wrapped in a marker naming
//! where it comes from, and this test recomputes it from the committed file
//! and fails when the text differs beyond its printed rounding.
//!
//! Markers (HTML comments, invisible when rendered):
//!
//! * `<!--fig EXPR as FMT-->TEXT<!--/fig-->`: TEXT must equal EXPR printed
//!   with FMT (no `|`: a marker may sit in a table cell). EXPR is one term `FILE#SELECTOR`, or arithmetic (`+ - * /`,
//!   parentheses, numbers) over terms written `{FILE#SELECTOR}`, or
//!   `{count FILE#SELECTOR}` for how many elements matched.
//! * `<!--fig-lines FILE-->` just before a fenced block: every non-empty
//!   line of the block is a line of FILE (trailing spaces aside), so a
//!   pasted table cannot drift from the committed output.
//!
//! FILE is relative to the workspace root: JSON, or Markdown whose tables
//! read as an array of rows (header -> cell). SELECTOR: `.key`,
//! `["any key"]`, `[3]` (index), `[k=v,k2="v 2"]` (every element whose
//! fields match). FMT: `.N` (N decimals), with `,` for thousands separators
//! and `+` for a sign (`+,.1`), and `*K` to scale first (`.0*100` for a
//! percentage of a ratio); `count` (how many elements matched); `str` (the
//! string itself).
//!
//! `scripts/doc-figures` prints every figure; `scripts/doc-figures --write`
//! rewrites each TEXT from the data (then review the diff).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/pagewire is two levels below the workspace root")
        .to_path_buf()
}

/// The Markdown files whose figures are checked: README.md and docs/
/// (committed run outputs under docs/ included: their own markers, if any).
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md")];
    let mut stack = vec![root.join("docs")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Loaded data files, by path.
#[derive(Default)]
struct Data {
    root: PathBuf,
    files: BTreeMap<String, Value>,
}

impl Data {
    fn new(root: &Path) -> Data {
        Data {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
        }
    }

    fn file(&mut self, name: &str) -> Result<&Value, String> {
        if !self.files.contains_key(name) {
            let path = self.root.join(name);
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{name}: {e}"))?;
            let v = if name.ends_with(".json") {
                serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?
            } else if name.ends_with(".md") {
                markdown_rows(&text)
            } else {
                return Err(format!("{name}: only .json and .md files are read"));
            };
            self.files.insert(name.to_string(), v);
        }
        Ok(&self.files[name])
    }
}

/// Every Markdown table of `text` as one array of rows (header -> cell,
/// bold markers removed).
fn markdown_rows(text: &str) -> Value {
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().replace("**", ""))
            .collect()
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let is_sep = |l: &str| {
            let t = l.trim();
            t.starts_with('|') && t.chars().all(|c| "|-: ".contains(c)) && t.contains('-')
        };
        if lines[i].trim().starts_with('|') && is_sep(lines[i + 1]) {
            let head = cells(lines[i]);
            i += 2;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                let row: serde_json::Map<String, Value> = head
                    .iter()
                    .cloned()
                    .zip(cells(lines[i]).into_iter().map(Value::String))
                    .collect();
                rows.push(Value::Object(row));
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    Value::Array(rows)
}

/// Applies a selector to `v`; every value it names.
fn select(v: &Value, sel: &str) -> Result<Vec<Value>, String> {
    // The first step borrows: results files are megabytes.
    let (first, sel) = match sel.as_bytes().first() {
        Some(b'.') => {
            let end = sel[1..].find(['.', '[']).map_or(sel.len(), |k| k + 1);
            let key = &sel[1..end];
            let x = v
                .get(key)
                .ok_or_else(|| format!("no key {key:?} at {sel:?}"))?;
            (x, &sel[end..])
        }
        _ => (v, sel),
    };
    let mut cur = match (first.as_array(), sel.as_bytes().first()) {
        // A filter right away: copy only the matching elements.
        (Some(arr), Some(b'['))
            if !sel[1..]
                .trim_start()
                .starts_with(|c: char| c == '"' || c.is_ascii_digit()) =>
        {
            let end = find_close(sel, 0).ok_or_else(|| format!("unclosed [ in {sel:?}"))?;
            let conds = parse_filter(sel[1..end].trim())?;
            let rest = &sel[end + 1..];
            let hits: Vec<Value> = arr
                .iter()
                .filter(|e| conds.iter().all(|(k, v)| field_is(e, k, v)))
                .cloned()
                .collect();
            return select_from(hits, rest);
        }
        _ => vec![first.clone()],
    };
    select_steps(&mut cur, sel)?;
    Ok(cur)
}

fn select_from(mut cur: Vec<Value>, sel: &str) -> Result<Vec<Value>, String> {
    select_steps(&mut cur, sel)?;
    Ok(cur)
}

fn select_steps(cur: &mut Vec<Value>, sel: &str) -> Result<(), String> {
    let b = sel.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'.' && b[i] != b'[' {
                    i += 1;
                }
                let key = &sel[start..i];
                *cur = get_key(cur, key, sel)?;
            }
            b'[' => {
                let end = find_close(sel, i).ok_or_else(|| format!("unclosed [ in {sel:?}"))?;
                let inner = sel[i + 1..end].trim();
                i = end + 1;
                if let Some(key) = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    *cur = get_key(cur, key, sel)?;
                } else if let Ok(n) = inner.parse::<usize>() {
                    *cur = cur
                        .iter()
                        .map(|x| {
                            x.get(n)
                                .cloned()
                                .ok_or_else(|| format!("no element {n} at {sel:?}"))
                        })
                        .collect::<Result<_, _>>()?;
                } else {
                    let conds = parse_filter(inner)?;
                    let mut next = Vec::new();
                    for x in cur.iter() {
                        let arr = x
                            .as_array()
                            .ok_or_else(|| format!("filter [{inner}] on a non-array"))?;
                        next.extend(
                            arr.iter()
                                .filter(|e| conds.iter().all(|(k, v)| field_is(e, k, v)))
                                .cloned(),
                        );
                    }
                    *cur = next;
                }
            }
            _ => return Err(format!("selector {sel:?}: unexpected {:?}", b[i] as char)),
        }
    }
    Ok(())
}

/// `key` of every value that has it (rows of different tables share a
/// filter); an error when none has it.
fn get_key(cur: &[Value], key: &str, sel: &str) -> Result<Vec<Value>, String> {
    let out: Vec<Value> = cur.iter().filter_map(|x| x.get(key).cloned()).collect();
    if out.is_empty() {
        return Err(format!("no key {key:?} at {sel:?}"));
    }
    Ok(out)
}

fn find_close(s: &str, open: usize) -> Option<usize> {
    let mut quoted = false;
    for (k, c) in s[open..].char_indices() {
        match c {
            '"' => quoted = !quoted,
            ']' if !quoted => return Some(open + k),
            _ => {}
        }
    }
    None
}

fn parse_filter(inner: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = inner;
    while !rest.trim().is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("filter {inner:?}: k=v expected"))?;
        let key = rest[..eq].trim().trim_matches('"').to_string();
        let after = rest[eq + 1..].trim_start();
        let (val, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q
                .find('"')
                .ok_or_else(|| format!("filter {inner:?}: unclosed quote"))?;
            (q[..end].to_string(), q[end + 1..].trim_start())
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        out.push((key, val));
        rest = next.strip_prefix(',').unwrap_or(next);
    }
    Ok(out)
}

fn field_is(e: &Value, k: &str, v: &str) -> bool {
    match e.get(k) {
        Some(Value::String(s)) => s == v,
        Some(Value::Number(n)) => n.to_string() == v || n.as_f64() == v.parse::<f64>().ok(),
        Some(Value::Bool(b)) => b.to_string() == v,
        Some(Value::Null) => v == "null",
        _ => false,
    }
}

/// A number from a JSON number or from the start of a string ("71,077",
/// "1.278 (0.249 + 1.029)", "95%").
fn number(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n}: not a number")),
        Value::String(s) => {
            let t: String = s
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_digit() || ",.-+".contains(*c))
                .filter(|c| *c != ',')
                .collect();
            t.parse().map_err(|_| format!("{s:?}: no number"))
        }
        other => Err(format!("{other}: not a number")),
    }
}

/// One value of a term `FILE#SELECTOR`.
fn term(data: &mut Data, t: &str) -> Result<Vec<Value>, String> {
    let (file, sel) = t
        .trim()
        .split_once('#')
        .ok_or_else(|| format!("{t:?}: FILE#SELECTOR expected"))?;
    let v = data.file(file.trim())?;
    select(v, sel.trim())
}

fn one(vs: Vec<Value>, what: &str) -> Result<Value, String> {
    match vs.len() {
        1 => Ok(vs.into_iter().next().unwrap()),
        n => Err(format!("{what}: {n} values, one expected")),
    }
}

/// Arithmetic over numbers and `{FILE#SELECTOR}` terms.
struct Calc<'a> {
    s: &'a [u8],
    i: usize,
}

impl Calc<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i] == b' ' {
            self.i += 1;
        }
    }
    fn expr(&mut self, data: &mut Data) -> Result<f64, String> {
        let mut x = self.prod(data)?;
        loop {
            self.ws();
            match self.s.get(self.i) {
                Some(b'+') => {
                    self.i += 1;
                    x += self.prod(data)?
                }
                Some(b'-') => {
                    self.i += 1;
                    x -= self.prod(data)?
                }
                _ => return Ok(x),
            }
        }
    }
    fn prod(&mut self, data: &mut Data) -> Result<f64, String> {
        let mut x = self.atom(data)?;
        loop {
            self.ws();
            match self.s.get(self.i) {
                Some(b'*') => {
                    self.i += 1;
                    x *= self.atom(data)?
                }
                Some(b'/') => {
                    self.i += 1;
                    x /= self.atom(data)?
                }
                _ => return Ok(x),
            }
        }
    }
    fn atom(&mut self, data: &mut Data) -> Result<f64, String> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'(') => {
                self.i += 1;
                let x = self.expr(data)?;
                self.ws();
                if self.s.get(self.i) != Some(&b')') {
                    return Err("missing )".into());
                }
                self.i += 1;
                Ok(x)
            }
            Some(b'{') => {
                let start = self.i + 1;
                let end = start
                    + self.s[start..]
                        .iter()
                        .position(|&c| c == b'}')
                        .ok_or("unclosed {")?;
                self.i = end + 1;
                let t = std::str::from_utf8(&self.s[start..end]).unwrap();
                match t.trim_start().strip_prefix("count ") {
                    Some(t) => Ok(term(data, t)?.len() as f64),
                    None => number(&one(term(data, t)?, t)?),
                }
            }
            Some(b'-') => {
                self.i += 1;
                Ok(-self.atom(data)?)
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.')
                {
                    self.i += 1;
                }
                std::str::from_utf8(&self.s[start..self.i])
                    .unwrap()
                    .parse()
                    .map_err(|_| format!("number expected at {start}"))
            }
        }
    }
}

/// `x` printed as FMT says (`[+][,].N[*K]`).
fn format_number(x: f64, fmt: &str) -> Result<String, String> {
    let (spec, scale) = match fmt.split_once('*') {
        Some((s, k)) => (
            s,
            k.parse::<f64>().map_err(|_| format!("scale in {fmt:?}"))?,
        ),
        None => (fmt, 1.0),
    };
    let x = x * scale;
    let sign = spec.contains('+');
    let thousands = spec.contains(',');
    let decimals: usize = spec
        .rsplit_once('.')
        .ok_or_else(|| format!("format {fmt:?}: .N expected"))?
        .1
        .parse()
        .map_err(|_| format!("format {fmt:?}: .N expected"))?;
    let mut s = format!("{:.*}", decimals, x.abs());
    if thousands {
        let (int, frac) = match s.split_once('.') {
            Some((i, f)) => (i.to_string(), format!(".{f}")),
            None => (s.clone(), String::new()),
        };
        let mut grouped = String::new();
        for (k, c) in int.chars().enumerate() {
            if k > 0 && (int.len() - k) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        s = grouped + &frac;
    }
    let negative = x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0');
    Ok(match (negative, sign) {
        (true, _) => format!("-{s}"),
        (false, true) => format!("+{s}"),
        (false, false) => s,
    })
}

/// What a marker says the text must be.
fn expected(data: &mut Data, expr: &str, fmt: &str) -> Result<String, String> {
    let expr = expr.trim();
    let fmt = fmt.trim();
    let single = !expr.contains('{');
    match fmt {
        "count" if single => Ok(term(data, expr)?.len().to_string()),
        "str" if single => match one(term(data, expr)?, expr)? {
            Value::String(s) => Ok(s),
            other => Ok(other.to_string()),
        },
        _ => {
            let x = if single {
                number(&one(term(data, expr)?, expr)?)?
            } else {
                let mut c = Calc {
                    s: expr.as_bytes(),
                    i: 0,
                };
                let x = c.expr(data)?;
                c.ws();
                if c.i != c.s.len() {
                    return Err(format!("{expr:?}: trailing text at {}", c.i));
                }
                x
            };
            format_number(x, fmt)
        }
    }
}

/// One problem found in a document.
#[derive(Debug)]
struct Problem {
    line: usize,
    what: String,
}

const OPEN: &str = "<!--fig ";
const CLOSE: &str = "<!--/fig-->";
const LINES: &str = "<!--fig-lines ";

/// Checks every marker of `text`; returns the problems, and the text with
/// every figure rewritten from the data.
fn check(text: &str, data: &mut Data) -> (Vec<Problem>, String, usize) {
    let mut problems = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut figures = 0;
    let line_of = |rest: &str| text[..text.len() - rest.len()].matches('\n').count() + 1;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        let marker = &rest[at..];
        let line = line_of(marker);
        let Some(head_end) = marker.find("-->") else {
            problems.push(Problem {
                line,
                what: "unclosed marker".into(),
            });
            out.push_str(marker);
            rest = "";
            break;
        };
        let body = &marker[OPEN.len()..head_end];
        let after = &marker[head_end + 3..];
        let Some(close) = after.find(CLOSE) else {
            problems.push(Problem {
                line,
                what: format!("no {CLOSE} after {body:?}"),
            });
            out.push_str(&marker[..head_end + 3]);
            rest = after;
            continue;
        };
        let shown = &after[..close];
        figures += 1;
        let (expr, fmt) = body.rsplit_once(" as ").unwrap_or((body, ".0"));
        let fresh = match expected(data, expr, fmt) {
            Ok(want) => {
                if want != shown {
                    problems.push(Problem {
                        line,
                        what: format!("{shown:?} but {expr} gives {want:?}"),
                    });
                }
                want
            }
            Err(e) => {
                problems.push(Problem { line, what: e });
                shown.to_string()
            }
        };
        out.push_str(&marker[..head_end + 3]);
        out.push_str(&fresh);
        out.push_str(CLOSE);
        rest = &after[close + CLOSE.len()..];
    }
    out.push_str(rest);

    // Verbatim blocks.
    let lines: Vec<&str> = text.lines().collect();
    for (k, l) in lines.iter().enumerate() {
        let Some(spec) = l.trim().strip_prefix(LINES) else {
            continue;
        };
        let file = spec.trim_end_matches("-->").trim();
        figures += 1;
        let source = match std::fs::read_to_string(data.root.join(file)) {
            Ok(s) => s,
            Err(e) => {
                problems.push(Problem {
                    line: k + 1,
                    what: format!("{file}: {e}"),
                });
                continue;
            }
        };
        let have: std::collections::HashSet<&str> = source.lines().map(str::trim_end).collect();
        let Some(open) = (k + 1..lines.len()).find(|&j| lines[j].trim_start().starts_with("```"))
        else {
            problems.push(Problem {
                line: k + 1,
                what: "no fenced block after fig-lines".into(),
            });
            continue;
        };
        for (j, bl) in lines.iter().enumerate().skip(open + 1) {
            if bl.trim_start().starts_with("```") {
                break;
            }
            if !bl.trim().is_empty() && !have.contains(bl.trim_end()) {
                problems.push(Problem {
                    line: j + 1,
                    what: format!("not a line of {file}: {bl:?}"),
                });
            }
        }
    }
    (problems, out, figures)
}

#[test]
fn every_marked_figure_matches_the_committed_results() {
    let root = workspace_root();
    let mut data = Data::new(&root);
    let write = std::env::var("PAGEWIRE_DOC_FIGURES").is_ok_and(|v| v == "write");
    let mut all = Vec::new();
    let mut figures = 0;
    let mut readme_figures = 0;
    for doc in documents(&root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let (problems, fresh, n) = check(&text, &mut data);
        figures += n;
        let name = doc.strip_prefix(&root).unwrap().display().to_string();
        if name == "README.md" {
            readme_figures = n;
        }
        if write && fresh != text {
            std::fs::write(&doc, &fresh).unwrap();
            eprintln!("rewrote figures in {name}");
        }
        all.extend(
            problems
                .into_iter()
                .map(|p| format!("{name}:{}: {}", p.line, p.what)),
        );
    }
    eprintln!("{figures} figures checked");
    // The README's tables and claims figures are marked (a marker removed
    // by accident would otherwise pass silently).
    assert!(
        readme_figures >= 20,
        "only {readme_figures} figures marked in README.md"
    );
    assert!(
        all.is_empty() || write,
        "{} figure(s) differ from the committed results (scripts/doc-figures --write \
         rewrites them from the data):\n{}",
        all.len(),
        all.join("\n")
    );
}

/// The check fails when a quoted number is edited: every figure of the
/// README, one at a time, with its last digit changed.
#[test]
fn an_edited_figure_is_caught() {
    let root = workspace_root();
    let mut data = Data::new(&root);
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (clean, _, _) = check(&text, &mut data);
    assert!(clean.is_empty(), "{clean:?}");
    let mut edited = 0;
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN).map(|k| k + from) {
        let head_end = at + text[at..].find("-->").unwrap() + 3;
        let close = head_end + text[head_end..].find(CLOSE).unwrap();
        let shown = &text[head_end..close];
        if let Some(pos) = shown.rfind(|c: char| c.is_ascii_digit()) {
            let d = shown.as_bytes()[pos] - b'0';
            let mut changed = shown.to_string();
            changed.replace_range(pos..pos + 1, &((d + 1) % 10).to_string());
            let doctored = format!("{}{changed}{}", &text[..head_end], &text[close..]);
            let (problems, _, _) = check(&doctored, &mut data);
            assert_eq!(problems.len(), 1, "{shown:?} -> {changed:?} not caught");
            edited += 1;
        }
        from = close;
    }
    assert!(edited >= 20, "only {edited} figures tried");
    // A pasted line of a verbatim block, edited.
    if let Some(k) = text.find(LINES) {
        let block = k + text[k..].find("```").unwrap();
        let line_start = block + text[block..].find('\n').unwrap() + 1;
        let digit = line_start
            + text[line_start..]
                .find(|c: char| c.is_ascii_digit())
                .unwrap();
        let mut doctored = text.clone();
        let d = text.as_bytes()[digit] - b'0';
        doctored.replace_range(digit..digit + 1, &((d + 1) % 10).to_string());
        let (problems, _, _) = check(&doctored, &mut data);
        assert_eq!(problems.len(), 1, "{problems:?}");
    }
}

#[test]
fn selectors_formats_and_arithmetic() {
    let v: Value = serde_json::json!({
        "rows": [
            {"net": "lan", "n": 3, "s": {"mean": 0.2014}},
            {"net": "wan", "n": 3, "s": {"mean": 1.39949}},
        ],
        "odd key": "71,077"
    });
    assert_eq!(
        select(&v, ".rows[net=wan].s.mean").unwrap(),
        [serde_json::json!(1.39949)]
    );
    assert_eq!(select(&v, ".rows[n=3]").unwrap().len(), 2);
    assert_eq!(
        select(&v, ".rows[1].net").unwrap(),
        [serde_json::json!("wan")]
    );
    assert_eq!(
        number(&select(&v, "[\"odd key\"]").unwrap()[0]).unwrap(),
        71077.0
    );
    assert!(select(&v, ".nope").is_err());
    assert_eq!(format_number(1234567.891, ",.1").unwrap(), "1,234,567.9");
    assert_eq!(format_number(0.3173, "+.1*100").unwrap(), "+31.7");
    assert_eq!(format_number(-0.0004, ".2").unwrap(), "0.00");
    assert_eq!(format_number(-1.5, ".0").unwrap(), "-2");
    let rows = markdown_rows("| a | b |\n|---|--:|\n| x | **1,024** |\n| y | 2 |\n");
    assert_eq!(
        select(&rows, "[a=x].b").unwrap(),
        [serde_json::json!("1,024")]
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.json"), v.to_string()).unwrap();
    let mut data = Data::new(dir.path());
    let e = "({r.json#.rows[net=wan].s.mean} / {r.json#.rows[net=lan].s.mean} - 1) * 100";
    assert_eq!(expected(&mut data, e, ".0").unwrap(), "595");
    assert_eq!(
        expected(&mut data, "r.json#.rows[n=3]", "count").unwrap(),
        "2"
    );
    assert_eq!(
        expected(&mut data, "{count r.json#.rows[n=3]} + 1", ".0").unwrap(),
        "3"
    );
    let doc = "a <!--fig r.json#.rows[net=lan].s.mean as .2-->0.20<!--/fig--> b";
    assert!(check(doc, &mut data).0.is_empty());
    let (p, fresh, _) = check(&doc.replace("0.20<", "0.21<"), &mut data);
    assert_eq!(p.len(), 1);
    assert_eq!(fresh, doc, "--write restores the figure");
}
