//! The bench's outputs: terminal text, results.json, results.csv and
//! report.html (tables, claims, SVG plots). Every file says what made it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::SystemTime;

use anyhow::{Context, Result};
use plotters::style::RGBColor;
use serde::Serialize;

use crate::claims::{self, Claim, ClaimKind, Judged, PageFacts, Suite};
use crate::model::{Net, RunRecord, Test};
use crate::plan::Plan;
use crate::plots::{self, Series};
use crate::reference::{self, Server};
use crate::stats::{self, Key, Summary};
use crate::{pcapread, tables};

/// What made the results.
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    pub made_by: String,
    pub command: Vec<String>,
    pub date_utc: String,
    pub pagewire_version: String,
    pub seed: u64,
    pub server: String,
    pub host: String,
    pub note: String,
}

/// Everything a report is made from.
#[derive(Serialize)]
pub struct Results {
    pub provenance: Provenance,
    pub page_composition: String,
    /// The generated page's facts for the page checks (absent for a
    /// replayed page).
    #[serde(rename = "page_facts", skip_serializing_if = "Option::is_none")]
    pub page: Option<PageFacts>,
    pub plan: Plan,
    pub link_configs: BTreeMap<String, serde_json::Value>,
    pub wall_s: f64,
    pub runs: Vec<RunRecord>,
    #[serde(skip)]
    pub summaries: BTreeMap<Key, Summary>,
    /// The initial (Table 3) robot's runs.
    #[serde(skip)]
    pub initial: BTreeMap<Key, Summary>,
    pub claims: Vec<Claim>,
    /// The claims with the count of runs left out (`claims` is its list).
    #[serde(skip)]
    pub judged: Judged,
}

/// The current UTC date and time twice: `YYYY-MM-DD HH:MM:SS UTC` for
/// people and `YYYYMMDD-HHMMSS` for directory names.
pub fn utc_now() -> (String, String) {
    // "2026-11-21T06:54:00Z"
    let iso = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let (date, time) = (&iso[..10], &iso[11..19]);
    (
        format!("{date} {time} UTC"),
        format!("{}-{}", date.replace('-', ""), time.replace(':', "")),
    )
}

impl Results {
    pub fn new(
        provenance: Provenance,
        page_composition: String,
        page: Option<PageFacts>,
        plan: Plan,
        link_configs: BTreeMap<String, serde_json::Value>,
        wall_s: f64,
        runs: Vec<RunRecord>,
    ) -> Results {
        let summaries = stats::summarize(&runs);
        let initial = stats::summarize_tuning(&runs, crate::model::Tuning::Initial);
        let mut r = Results {
            provenance,
            page_composition,
            page,
            plan,
            link_configs,
            wall_s,
            runs,
            summaries,
            initial,
            claims: Vec::new(),
            judged: Judged::new(Suite::Microscape, 0, 0, Vec::new()),
        };
        r.judged = claims::judge_serialized(&r, Suite::Microscape);
        r.claims = r.judged.claims.clone();
        r
    }

    fn server_label(&self) -> String {
        format!("measured ({})", self.short_server())
    }

    /// The server's name for table rows (a custom command is named in the
    /// header instead; it would not fit a row label).
    fn short_server(&self) -> &str {
        if self.provenance.server.starts_with("custom") {
            "custom server"
        } else {
            &self.provenance.server
        }
    }

    /// The terminal report.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let p = &self.provenance;
        let _ = writeln!(s, "{} — {}", p.made_by, p.date_utc);
        let _ = writeln!(s, "command: {}", p.command.join(" "));
        let _ = writeln!(s, "server: {}", p.server);
        let _ = writeln!(s, "{}", p.note);
        let _ = writeln!(s);
        s.push_str(&self.page_composition);
        let _ = writeln!(s);
        let label = self.server_label();
        for net in Net::ALL {
            if !self.plan.nets.contains(&net) {
                continue;
            }
            s.push_str(&tables::network_table(net, &self.summaries, &label));
            let _ = writeln!(s);
            s.push_str(&crate::chromium::render_browser_rows(net, &self.runs));
            for t in Test::ALL {
                if self.plan.tests.contains(&t) {
                    s.push_str(&tables::sockets_table(
                        net,
                        t,
                        &self.summaries,
                        self.short_server(),
                    ));
                }
            }
            s.push_str(&tables::table3(net, &self.initial, self.short_server()));
            let _ = writeln!(s);
            let payload = tables::payload_table(net, &self.runs);
            if !payload.is_empty() {
                s.push_str(&payload);
                let _ = writeln!(s);
            }
        }
        let failed: Vec<&RunRecord> = self.runs.iter().filter(|r| !r.ok()).collect();
        if !failed.is_empty() {
            let _ = writeln!(
                s,
                "{} of {} runs FAILED (left out of the tables):",
                failed.len(),
                self.runs.len()
            );
            for r in failed {
                let _ = writeln!(
                    s,
                    "  {} {} {} rep {}: {}",
                    r.net,
                    r.strategy,
                    r.test,
                    r.rep,
                    r.error.as_deref().unwrap_or("?")
                );
            }
            let _ = writeln!(s);
        }
        s.push_str(&self.judged.render());
        let _ = writeln!(s);
        s.push_str(&claims::microscape::render_self_test());
        let _ = writeln!(s, "\n{} runs in {:.0} s.", self.runs.len(), self.wall_s);
        s
    }

    /// Write results.json, results.csv, report.txt and report.html.
    pub fn write(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(&ResultsJson {
            made_by: &self.provenance.made_by,
            what:
                "pagewire bench results: one object per run in `runs`; tables and claims as printed",
            results: self,
            summaries: self.summaries.values().collect(),
            initial_summaries: self.initial.values().collect(),
        })?;
        fs::write(dir.join("results.json"), json).context("write results.json")?;
        self.write_csv(&dir.join("results.csv"))?;
        fs::write(dir.join("report.txt"), self.render_text()).context("write report.txt")?;
        fs::write(dir.join("report.html"), self.render_html(dir)?).context("write report.html")?;
        Ok(())
    }

    fn write_csv(&self, path: &Path) -> Result<()> {
        let mut out = format!(
            "# made by {} on {}; command: {}; {}\n",
            self.provenance.made_by,
            self.provenance.date_utc,
            self.provenance.command.join(" "),
            self.provenance.note
        );
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record([
            "strategy",
            "test",
            "net",
            "rep",
            "server",
            "seed",
            "pagewire_version",
            "packets_total",
            "packets_client_to_server",
            "packets_server_to_client",
            "bytes_total",
            "elapsed_s",
            "overhead_pct",
            "sockets_total",
            "sockets_max",
            "retransmissions",
            "objects_ok",
            "objects_expected",
            "body_bytes",
            "requests",
            "mean_request_bytes",
            "tuning",
            "flush_after_ms",
            "explicit_flush",
            "request_profile",
            "revalidation",
            "nagle",
            "pcap",
            "error",
        ])?;
        for r in &self.runs {
            w.write_record([
                r.strategy.name().to_string(),
                r.test.name().to_string(),
                r.net.name().to_string(),
                r.rep.to_string(),
                r.server.clone(),
                r.seed.to_string(),
                r.pagewire_version.clone(),
                r.packets_total.to_string(),
                r.packets_client_to_server.to_string(),
                r.packets_server_to_client.to_string(),
                r.bytes_total.to_string(),
                format!("{:.4}", r.elapsed_s),
                format!("{:.2}", r.overhead_pct),
                r.sockets_total.to_string(),
                r.sockets_max.to_string(),
                r.retransmissions.to_string(),
                r.objects_ok.to_string(),
                r.objects_expected.to_string(),
                r.body_bytes.to_string(),
                r.requests.to_string(),
                format!("{:.1}", r.mean_request_bytes),
                r.robot.tuning.name().to_string(),
                format!("{}", r.robot.flush_after_ms),
                r.robot.explicit_flush.to_string(),
                r.robot.request_profile.clone(),
                r.robot.revalidation.clone(),
                r.robot.nagle.to_string(),
                r.pcap.clone(),
                r.error.clone().unwrap_or_default(),
            ])?;
        }
        out.push_str(&String::from_utf8(
            w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
        )?);
        fs::write(path, out).with_context(|| format!("write {}", path.display()))
    }

    fn render_html(&self, dir: &Path) -> Result<String> {
        let p = &self.provenance;
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\
             <title>pagewire bench — paper 001 reproduction</title>\
             <style>body{{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em}}\
             pre{{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}}\
             td,th{{padding:2px 8px;text-align:left;vertical-align:top;font-size:13px}}\
             .confirmed{{color:#070}}.contradicted{{color:#b00}}.inconclusive{{color:#777}}\
             figure{{display:inline-block;margin:.3em}}</style></head><body>\n\
             <!-- made by {} on {} -->\n",
            esc(&p.made_by),
            esc(&p.date_utc)
        );
        let _ = writeln!(
            h,
            "<h1>pagewire bench: Nielsen et al., SIGCOMM '97 (paper 001), reproduced</h1>"
        );
        let _ = writeln!(
            h,
            "<p>Made by <b>{}</b> on {} with <code>{}</code>; server: {}; seed {}; host: {}.</p><p>{}</p>",
            esc(&p.made_by),
            esc(&p.date_utc),
            esc(&p.command.join(" ")),
            esc(&p.server),
            p.seed,
            esc(&p.host),
            esc(&p.note)
        );
        for (kind, title) in [
            (ClaimKind::Claim, "<h2>Claims</h2><p>Judged by the rule of docs/claims.md: confirmed when every covered cell's 95% interval (n &ge; 3) lies inside its band, contradicted when any lies wholly outside, else inconclusive; not testable here when the set-up cannot meet a precondition.</p>"),
            (ClaimKind::PageCheck, "<h2>Page checks</h2><p>True by construction of the generated page; not counted as claims.</p>"),
        ] {
            let _ = writeln!(h, "{title}<table><tr><th>verdict</th><th>the paper's sentence (section)</th><th>our reading and numbers</th></tr>");
            for c in self.claims.iter().filter(|c| c.kind == kind) {
                let cls = format!("{:?}", c.verdict).to_lowercase();
                let _ = writeln!(
                    h,
                    "<tr><td class={cls}><b>{}</b></td><td>{} <i>({})</i></td><td>{}</td></tr>",
                    c.verdict,
                    esc(&c.claim),
                    esc(&c.section),
                    esc(&c.evidence())
                );
            }
            let _ = writeln!(h, "</table>");
        }

        let _ = writeln!(
            h,
            "<h2>Self-test</h2><pre>{}</pre>",
            esc(&claims::microscape::render_self_test())
        );
        let _ = writeln!(h, "<h2>Packets and seconds per strategy</h2><p>Bars: our means (first-time and cache validation); black triangles: the paper's Apache values (Tables 5, 7, 9).</p>");
        for net in &self.plan.nets {
            for (metric, label) in [("packets", "packets (Pa)"), ("seconds", "seconds (Sec)")] {
                let cats: Vec<String> = self
                    .plan
                    .strategies
                    .iter()
                    .map(|s| s.name().to_string())
                    .collect();
                let colors = [RGBColor(70, 110, 180), RGBColor(230, 150, 50)];
                let series: Vec<Series> = self
                    .plan
                    .tests
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Series {
                        name: t.paper_label().to_string(),
                        values: self
                            .plan
                            .strategies
                            .iter()
                            .map(|s| {
                                self.summaries
                                    .get(&(*net, *s, *t))
                                    .filter(|m| m.runs_ok > 0)
                                    .map(|m| {
                                        if metric == "packets" {
                                            m.packets.mean
                                        } else {
                                            m.seconds.mean
                                        }
                                    })
                            })
                            .collect(),
                        reference: self
                            .plan
                            .strategies
                            .iter()
                            .map(|s| {
                                reference::lookup(Server::Apache, *net, *s, *t).map(|r| {
                                    if metric == "packets" {
                                        r.packets
                                    } else {
                                        r.seconds
                                    }
                                })
                            })
                            .collect(),
                        color: colors[i % 2],
                    })
                    .collect();
                let svg = plots::bars(
                    &format!("{} — {label}", net.name().to_uppercase()),
                    label,
                    &cats,
                    &series,
                    "paper, Apache",
                )?;
                let _ = writeln!(h, "<figure>{svg}</figure>");
            }
        }

        let _ = writeln!(h, "<h2>Time-sequence graphs</h2><p>Like the xplot graphs the paper's authors used: one first-time run per strategy, read back from its pcap (server data segments as strokes, coloured per TCP connection, stacked across connections; client ACKs as grey dots).</p>");
        let net = [Net::Wan, Net::Lan, Net::Ppp]
            .into_iter()
            .find(|n| self.plan.nets.contains(n));
        if let Some(net) = net {
            for st in &self.plan.strategies {
                let run = self.runs.iter().find(|r| {
                    r.net == net
                        && r.strategy == *st
                        && r.test == Test::First
                        && r.robot.tuning == crate::model::Tuning::Tuned
                        && r.ok()
                });
                if let Some(r) = run {
                    let segs = pcapread::time_sequence(&dir.join(&r.pcap), server_addr(r))?;
                    let svg = plots::time_sequence(
                        &format!(
                            "{} first-time, {} rep {} ({} packets)",
                            st.name(),
                            net.name().to_uppercase(),
                            r.rep,
                            r.packets_total
                        ),
                        &segs,
                    )?;
                    let _ = writeln!(h, "<figure>{svg}<figcaption>pcap: <a href=\"{0}\">{0}</a></figcaption></figure>", esc(&r.pcap));
                }
            }
        }

        let _ = writeln!(h, "<h2>Tables (layout of paper 001 Tables 3-9)</h2><pre>");
        let label = self.server_label();
        for net in &self.plan.nets {
            h.push_str(&esc(&tables::network_table(*net, &self.summaries, &label)));
            h.push('\n');
            for t in &self.plan.tests {
                h.push_str(&esc(&tables::sockets_table(
                    *net,
                    *t,
                    &self.summaries,
                    self.short_server(),
                )));
            }
            h.push_str(&esc(&tables::table3(
                *net,
                &self.initial,
                self.short_server(),
            )));
            h.push('\n');
        }
        let _ = writeln!(
            h,
            "</pre><h2>The page</h2><pre>{}</pre>",
            esc(&self.page_composition)
        );
        let _ = writeln!(h, "<h2>Runs</h2><p>All {} runs: <a href=results.json>results.json</a>, <a href=results.csv>results.csv</a>; one pcap per run in <code>pcaps/</code>.</p>", self.runs.len());
        let _ = writeln!(
            h,
            "<h2>Links</h2><pre>{}</pre>",
            esc(&serde_json::to_string_pretty(&self.link_configs)?)
        );
        let _ = writeln!(h, "</body></html>");
        Ok(h)
    }
}

/// The server address as the emulator assigns it (the same for every link).
fn server_addr(_r: &RunRecord) -> Ipv4Addr {
    pagewire_emu::SERVER_ADDR
}

#[derive(Serialize)]
struct ResultsJson<'a> {
    made_by: &'a str,
    what: &'static str,
    #[serde(flatten)]
    results: &'a Results,
    summaries: Vec<&'a Summary>,
    /// Table 3's initial robot, summarized apart.
    initial_summaries: Vec<&'a Summary>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
