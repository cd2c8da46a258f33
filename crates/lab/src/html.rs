//! One report.html shape for every suite, made for looking: a summary
//! first (the claims tally, link fidelity and the key plots), then the
//! claims in a collapsible HTML table (claims whose cells were not run are
//! hidden and counted), then the suite's sections (HTML tables, plots,
//! waterfalls), then the links. [`Page::render`] writes it; the helpers turn
//! text tables and HARs into HTML.

use std::fmt::Write as _;

use serde_json::Value;

use pagewire_provenance::Provenance;

/// A figure: inline SVG (or any HTML) and its caption.
pub struct Figure {
    pub html: String,
    pub caption: String,
}

impl Figure {
    /// An SVG file of the results directory, shown by reference.
    pub fn file(path: &str, caption: &str) -> Figure {
        Figure {
            html: format!("<img src=\"{0}\" alt=\"{0}\">", esc(path)),
            caption: caption.to_string(),
        }
    }
}

/// A titled part of the report; `open`: expanded when the page loads.
pub struct Section {
    pub title: String,
    pub html: String,
    pub open: bool,
}

/// What a suite's report.html shows.
pub struct Page<'a> {
    /// `pagewire bench --suite objpack: Fujinoki, Sanjay, Shah, ...`.
    pub title: String,
    pub provenance: &'a Provenance,
    /// The link-lateness line (`crate::results::lateness_line`).
    pub lateness: String,
    /// The claims as results.json writes them (an array of objects with
    /// `id`, `verdict`, `claim` or `quote`, `source`, `evidence`; `kind`
    /// `page-check` rows are listed apart).
    pub claims: Value,
    /// The summary's plots: the first screen shows them.
    pub key_plots: Vec<Figure>,
    pub sections: Vec<Section>,
    /// Extra lines for the summary (e.g. how many runs failed).
    pub notes: Vec<String>,
}

/// A claim's verdict as a CSS class and the tally's bucket.
fn verdict_class(v: &str) -> &'static str {
    let v = v.to_ascii_lowercase();
    if v.contains("not testable") || v.contains("not-testable") || v.contains("untestable") {
        "nottestable"
    } else if v.starts_with("confirm") || v == "held" || v == "pass" {
        "confirmed"
    } else if v.starts_with("contradict") || v == "fail" {
        "contradicted"
    } else {
        "inconclusive"
    }
}

/// Whether a claim's cells were run: the rules say "not measured" (or "not
/// run") when the cells a sentence reads are absent from the plan.
pub fn claim_was_run(c: &Value) -> bool {
    let ev = c["evidence"].as_str().unwrap_or("").to_ascii_lowercase();
    !(ev.starts_with("not measured")
        || ev.contains(": not measured")
        || ev.contains("cells not run")
        || ev.starts_with("not run"))
}

fn field<'v>(c: &'v Value, keys: &[&str]) -> &'v str {
    keys.iter().find_map(|k| c[*k].as_str()).unwrap_or("")
}

impl Page<'_> {
    pub fn render(&self) -> String {
        let p = self.provenance;
        let claims: Vec<&Value> = self
            .claims
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let is_check = |c: &Value| c["kind"].as_str() == Some("page-check");
        let shown: Vec<&Value> = claims
            .iter()
            .copied()
            .filter(|c| !is_check(c) && claim_was_run(c))
            .collect();
        let hidden = claims
            .iter()
            .filter(|c| !is_check(c) && !claim_was_run(c))
            .count();
        let checks: Vec<&Value> = claims.iter().copied().filter(|c| is_check(c)).collect();
        let mut tally = [
            ("confirmed", 0usize),
            ("contradicted", 0),
            ("inconclusive", 0),
            ("nottestable", 0),
        ];
        for c in &shown {
            let k = verdict_class(field(c, &["verdict"]));
            if let Some(t) = tally.iter_mut().find(|t| t.0 == k) {
                t.1 += 1;
            }
        }
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\
             <meta name=viewport content=\"width=device-width\">\
             <title>{}</title><style>{CSS}</style></head><body>\n\
             <!-- made by {} on {} -->\n<header><h1>{}</h1><p class=prov>{}</p></header>\n",
            esc(&self.title),
            esc(&p.made_by),
            esc(&p.date_utc),
            esc(&self.title),
            esc(&p.line())
        );
        // Summary: tally, fidelity, the key plots.
        let _ = write!(h, "<section id=summary><div class=tally>");
        for (k, n) in tally {
            let label = if k == "nottestable" {
                "not testable here"
            } else {
                k
            };
            let _ = write!(h, "<span class=\"t {k}\"><b>{n}</b> {label}</span>");
        }
        let _ = writeln!(h, "</div>");
        if hidden > 0 {
            let _ = writeln!(
                h,
                "<p class=small>{hidden} claims whose cells were not run in this plan are not counted or listed.</p>"
            );
        }
        let _ = writeln!(h, "<p class=late>{}</p>", esc(&self.lateness));
        for n in &self.notes {
            let _ = writeln!(h, "<p class=note>{}</p>", esc(n));
        }
        if !self.key_plots.is_empty() {
            let _ = writeln!(h, "<div class=plots>");
            for f in &self.key_plots {
                let _ = writeln!(
                    h,
                    "<figure>{}<figcaption>{}</figcaption></figure>",
                    f.html,
                    esc(&f.caption)
                );
            }
            let _ = writeln!(h, "</div>");
        }
        let _ = writeln!(h, "</section>");
        // Claims: collapsible.
        let _ = writeln!(
            h,
            "<details id=claims><summary>Claims ({} judged{})</summary>\
             <p class=small>Each sentence of the paper, how we read it and the numbers that decided it.</p>",
            shown.len(),
            if hidden > 0 {
                format!("; {hidden} not run, hidden")
            } else {
                String::new()
            }
        );
        h.push_str(&claims_table(&shown));
        let _ = writeln!(h, "</details>");
        if !checks.is_empty() {
            let _ = writeln!(
                h,
                "<details><summary>Page checks ({}): true by construction, not counted</summary>",
                checks.len()
            );
            h.push_str(&claims_table(&checks));
            let _ = writeln!(h, "</details>");
        }
        for s in &self.sections {
            let _ = writeln!(
                h,
                "<details{}><summary>{}</summary>\n{}\n</details>",
                if s.open { " open" } else { "" },
                esc(&s.title),
                s.html
            );
        }
        let _ = writeln!(
            h,
            "<details><summary>Provenance and links</summary>{}</details>",
            provenance_table(p)
        );
        let _ = writeln!(
            h,
            "<p class=small>Every run: <a href=results.json>results.json</a>, \
             <a href=results.csv>results.csv</a>.</p></body></html>"
        );
        h
    }
}

/// The report pages' style sheet.
pub const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:1400px;margin:0 auto;padding:0 12px;color:#222}\
h1{font-size:20px;margin:10px 0 2px}.prov{font-size:12px;color:#555;margin:0 0 6px}\
.tally{display:flex;gap:8px;margin:6px 0}.t{padding:4px 10px;border-radius:4px;font-size:14px;background:#eee}\
.t b{font-size:18px}.t.confirmed{background:#dcefdc}.t.contradicted{background:#f6d5d5}\
.t.inconclusive{background:#eee}.t.nottestable{background:#e3e3f3}\
.late,.note,.small{font-size:13px;margin:4px 0}.small{color:#555}\
.plots{display:flex;flex-wrap:wrap;gap:4px}figure{margin:2px}figcaption{font-size:12px;color:#555}\
details{margin:8px 0;border-top:1px solid #ddd}summary{font-size:16px;font-weight:600;padding:6px 0;cursor:pointer}\
table{border-collapse:collapse;font-size:12px;margin:4px 0 10px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}caption{text-align:left;font-weight:600;padding:4px 0}\
td.confirmed{color:#070;font-weight:600}td.contradicted{color:#b00;font-weight:600}td.inconclusive{color:#777}td.nottestable{color:#558}\
.wf{position:relative;height:12px;background:#fafafa}.wf span{position:absolute;top:1px;height:10px}\
.wf .blocked{background:#bbb}.wf .connect{background:#f0a030}.wf .wait{background:#6a6}.wf .receive{background:#48c}\
.wft td{padding:0 4px;font-size:11px;white-space:nowrap}.wft td.bar{width:70%;padding:0}";

fn claims_table(rows: &[&Value]) -> String {
    let mut h = String::from(
        "<table><tr><th>verdict</th><th>id</th><th>the paper's sentence (section)</th><th>our reading and numbers</th></tr>\n",
    );
    for c in rows {
        let v = field(c, &["verdict"]);
        let _ = writeln!(
            h,
            "<tr><td class={}>{}</td><td>{}</td><td>{} <i>({})</i></td><td>{}</td></tr>",
            verdict_class(v),
            esc(v),
            esc(field(c, &["id"])),
            esc(field(c, &["claim", "quote", "sentence"])),
            esc(field(c, &["source", "section"])),
            esc(field(c, &["evidence"]))
        );
    }
    h.push_str("</table>\n");
    h
}

fn provenance_table(p: &Provenance) -> String {
    let v = serde_json::to_value(p).unwrap_or(Value::Null);
    let mut h = String::from("<table>");
    if let Some(o) = v.as_object() {
        for (k, x) in o {
            let text = match x {
                Value::String(s) => s.clone(),
                Value::Array(a) if a.iter().all(Value::is_string) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
                Value::Object(_) => serde_json::to_string_pretty(x).unwrap_or_default(),
                other => other.to_string(),
            };
            let cell = if matches!(x, Value::Object(_)) {
                format!("<pre>{}</pre>", esc(&text))
            } else {
                esc(&text)
            };
            let _ = write!(h, "<tr><th>{}</th><td>{cell}</td></tr>", esc(k));
        }
    }
    h.push_str("</table>");
    h
}

/// An HTML table; `header` may be empty. Cells are escaped; cells that
/// parse as numbers are right-aligned.
pub fn table(caption: &str, header: &[String], rows: &[Vec<String>]) -> String {
    let mut h = String::from("<table>");
    if !caption.is_empty() {
        let _ = write!(h, "<caption>{}</caption>", esc(caption));
    }
    if !header.is_empty() {
        h.push_str("<tr>");
        for c in header {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>");
    }
    for r in rows {
        h.push_str("<tr>");
        for c in r {
            let num = c
                .trim()
                .trim_end_matches('%')
                .trim_start_matches(['+', '-'])
                .parse::<f64>()
                .is_ok();
            let _ = write!(
                h,
                "<td{}>{}</td>",
                if num { " class=n" } else { "" },
                esc(c)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// A text table as the terminal prints it (columns separated by two or
/// more spaces) as HTML tables: each block of lines separated by a blank
/// line becomes one table; a block's lines that are one cell wide before
/// its first row are its caption, the first multi-cell line its header.
pub fn text_tables(text: &str) -> String {
    let mut out = String::new();
    for block in text.split("\n\n") {
        let mut caption = Vec::new();
        let mut header: Vec<String> = Vec::new();
        let mut rows: Vec<Vec<String>> = Vec::new();
        for line in block.lines() {
            if line.trim().is_empty() || line.trim().chars().all(|c| "-=+| ".contains(c)) {
                continue;
            }
            let cells = split_cols(line);
            if cells.len() < 2 {
                if header.is_empty() && rows.is_empty() {
                    caption.push(line.trim().to_string());
                } else {
                    rows.push(vec![line.trim().to_string()]);
                }
            } else if header.is_empty() {
                header = cells;
            } else {
                rows.push(cells);
            }
        }
        if header.is_empty() {
            if !caption.is_empty() {
                let _ = writeln!(out, "<p>{}</p>", esc(&caption.join(" ")));
            }
            continue;
        }
        // Rows narrower than the header are right-aligned to it (their
        // first cells were blank in the text).
        let width = header.len();
        for r in &mut rows {
            if r.len() < width && r.len() > 1 {
                let mut padded = vec![String::new(); width - r.len()];
                padded.append(r);
                *r = padded;
            }
        }
        out.push_str(&table(&caption.join(" "), &header, &rows));
    }
    out
}

fn split_cols(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut spaces = 0;
    for ch in line.trim().chars() {
        if ch == ' ' {
            spaces += 1;
            continue;
        }
        if spaces >= 2 && !cur.is_empty() {
            cells.push(std::mem::take(&mut cur));
        } else if spaces == 1 {
            cur.push(' ');
        }
        spaces = 0;
        cur.push(ch);
    }
    if !cur.is_empty() {
        cells.push(cur);
    }
    cells
}

/// A waterfall of a HAR: one row per entry, bars for `blocked`,
/// `connect` (with `ssl`), `send` + `wait` and `receive` on one time axis
/// from the first entry's start to the last entry's end.
pub fn waterfall(har: &Value) -> String {
    let entries: Vec<&Value> = har["log"]["entries"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let start_ms = |e: &Value| -> Option<f64> {
        let s = e["startedDateTime"].as_str()?;
        let t = humantime::parse_rfc3339(s)
            .or_else(|_| humantime::parse_rfc3339_weak(s))
            .ok()?;
        Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64() * 1e3)
    };
    let spans: Vec<(f64, &Value)> = entries
        .iter()
        .filter_map(|e| Some((start_ms(e)?, *e)))
        .collect();
    let Some(t0) = spans.iter().map(|s| s.0).reduce(f64::min) else {
        return "<p>(no entries)</p>".into();
    };
    let end = spans
        .iter()
        .map(|(s, e)| s + e["time"].as_f64().unwrap_or(0.0))
        .fold(t0, f64::max);
    let span = (end - t0).max(1e-3);
    let pct = |ms: f64| 100.0 * ms / span;
    let mut h = format!(
        "<table class=wft><tr><th>object</th><th>status</th><th>ms</th><th>0 to {span:.0} ms: \
         <span style=\"color:#999\">blocked</span> <span style=\"color:#f0a030\">connect</span> \
         <span style=\"color:#6a6\">send+wait</span> <span style=\"color:#48c\">receive</span></th></tr>\n"
    );
    for (s, e) in &spans {
        let t = &e["timings"];
        let get = |k: &str| t[k].as_f64().unwrap_or(-1.0).max(0.0);
        let mut x = s - t0;
        let mut bars = String::new();
        for (cls, ms) in [
            ("blocked", get("blocked") + get("dns")),
            ("connect", get("connect")),
            ("wait", get("send") + get("wait")),
            ("receive", get("receive")),
        ] {
            if ms > 0.0 {
                let _ = write!(
                    bars,
                    "<span class={cls} style=\"left:{:.2}%;width:{:.2}%\"></span>",
                    pct(x),
                    pct(ms).max(0.15)
                );
            }
            x += ms;
        }
        let url = e["request"]["url"].as_str().unwrap_or("");
        let path = url.splitn(4, '/').nth(3).map_or(url, |p| p);
        let _ = writeln!(
            h,
            "<tr><td title=\"{}\">/{}</td><td>{}</td><td class=n>{:.1}</td><td class=bar><div class=wf>{bars}</div></td></tr>",
            esc(url),
            esc(&path.chars().take(40).collect::<String>()),
            e["response"]["status"],
            e["time"].as_f64().unwrap_or(0.0)
        );
    }
    h.push_str("</table>\n");
    h
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_tables_become_html_tables() {
        let t = "Table 5: WAN\nstrategy     packets   seconds\nhttp10        510.0     4.09\npipeline      181.5     2.21\n\nnote only\n";
        let h = text_tables(t);
        assert!(h.contains("<caption>Table 5: WAN</caption>"), "{h}");
        assert!(h.contains("<th>packets</th>"), "{h}");
        assert!(h.contains("<td>http10</td><td class=n>510.0</td>"), "{h}");
        assert!(h.contains("<p>note only</p>"), "{h}");
        assert!(!h.contains("<pre>"));
    }

    #[test]
    fn claims_not_run_are_hidden_and_the_tally_counts_the_rest() {
        let prov = Provenance::default();
        let page = Page {
            title: "t".into(),
            provenance: &prov,
            lateness: "link lateness: 0 of 2 runs flagged".into(),
            claims: json!([
                {"id": "a", "verdict": "confirmed", "claim": "A holds", "source": "s1", "evidence": "x", "kind": "claim"},
                {"id": "b", "verdict": "CONTRADICTED", "claim": "B holds", "source": "s2", "evidence": "y", "kind": "claim"},
                {"id": "c", "verdict": "inconclusive", "claim": "C holds", "source": "s3", "evidence": "not measured: ppp", "kind": "claim"},
                {"id": "d", "verdict": "confirmed", "claim": "D by construction", "source": "s4", "evidence": "z", "kind": "page-check"},
            ]),
            key_plots: vec![Figure {
                html: "<svg></svg>".into(),
                caption: "plot".into(),
            }],
            sections: vec![],
            notes: vec![],
        };
        let h = page.render();
        assert!(
            h.contains("<b>1</b> confirmed") && h.contains("<b>1</b> contradicted"),
            "{h}"
        );
        assert!(h.contains("<b>0</b> inconclusive"), "{h}");
        assert!(!h.contains("C holds"), "{h}");
        assert!(h.contains("1 not run, hidden"));
        assert!(h.contains("D by construction"));
        // The summary (with its plot) comes before the claims.
        assert!(h.find("<svg>").unwrap() < h.find("id=claims").unwrap());
    }

    #[test]
    fn waterfall_places_bars_on_one_axis() {
        let har = json!({"log": {"entries": [
            {"startedDateTime": "2026-01-01T00:00:00.000Z", "time": 100.0,
             "request": {"url": "http://h/a"}, "response": {"status": 200},
             "timings": {"blocked": 0, "connect": 50, "send": 0, "wait": 25, "receive": 25}},
            {"startedDateTime": "2026-01-01T00:00:00.100Z", "time": 100.0,
             "request": {"url": "http://h/b"}, "response": {"status": 200},
             "timings": {"blocked": 50, "connect": -1, "send": 0, "wait": 25, "receive": 25}},
        ]}});
        let h = waterfall(&har);
        assert!(h.contains("0 to 200 ms"), "{h}");
        // Second entry: blocked from 50% for 25%, then wait from 75%.
        assert!(
            h.contains("class=blocked style=\"left:50.00%;width:25.00%\""),
            "{h}"
        );
        assert!(
            h.contains("class=wait style=\"left:75.00%;width:12.50%\""),
            "{h}"
        );
        assert!(
            h.contains("class=connect style=\"left:0.00%;width:25.00%\""),
            "{h}"
        );
    }
}
