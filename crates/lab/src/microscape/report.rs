//! The bench's outputs: terminal text, results.json, results.csv and
//! report.html (tables, claims, SVG plots). Every file says what made it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::style::RGBColor;
use serde::Serialize;

use super::claims::PageFacts;
use super::plan::Plan;
use super::reference::{self, Server};
use super::tables;
use crate::claims::{Claim, Judged, Suite};
use crate::model::{Net, RunRecord, Test};
use crate::pcapread;
use crate::plots::{self, Series};
use crate::stats::{self, Key, Summary};

use crate::results::{lateness_csv, Report, LATENESS_CSV_HEADER};
pub use crate::results::{lateness_rule, utc_now, Provenance, SCHEMA_VERSION};

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
    /// The expected-time model beside every tuned cell (`pagewire model`);
    /// absent when the page is not the generated Microscape page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::expect::eval::ModelEval>,
    /// The claims with the count of runs left out (`claims` is its list).
    #[serde(skip)]
    pub judged: Judged,
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
            model: None,
            judged: Judged::new(Suite::Microscape, 0, 0, Vec::new()),
        };
        // The model knows the generated Microscape page only (not a
        // replayed page or section 9's CSS page).
        let page = crate::expect::Page::microscape(pagewire_site::microscape::DEFAULT_SEED);
        if r.page.as_ref().map(|p| p.html_bytes) == Some(page.html.body as usize) {
            r.model = Some(crate::expect::eval::eval_runs(&r.runs, &page, 0.0));
        }
        r.judged = r.judge();
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

    fn write_csv(&self, path: &Path) -> Result<()> {
        // No comment line: a plain CSV reader (pandas.read_csv) reads it;
        // what made it is in results.json's provenance.
        let mut out = String::new();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(
            [
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
                "payload_bytes_total",
                "line_bytes_total",
                "elapsed_s",
                "metadata_s",
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
                "sweep_rtt_ms",
                "pcap",
                "error",
            ]
            .into_iter()
            .chain(LATENESS_CSV_HEADER),
        )?;
        for r in &self.runs {
            w.write_record(
                [
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
                    r.payload_bytes_total.to_string(),
                    r.line_bytes_total.to_string(),
                    format!("{:.4}", r.elapsed_s),
                    r.metadata_s.map(|m| format!("{m:.4}")).unwrap_or_default(),
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
                    r.robot.request_profile.to_string(),
                    r.robot.revalidation.to_string(),
                    r.robot.nagle.to_string(),
                    r.sweep_rtt_ms.map(|x| x.to_string()).unwrap_or_default(),
                    r.pcap.clone(),
                    r.error.clone().unwrap_or_default(),
                ]
                .into_iter()
                .chain(lateness_csv(&r.link_lateness)),
            )?;
        }
        out.push_str(&String::from_utf8(
            w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?,
        )?);
        fs::write(path, out).with_context(|| format!("write {}", path.display()))
    }

    fn html_page(&self, dir: &Path) -> Result<String> {
        use crate::html::{self, Figure, Page, Section};
        // Bars of packets and seconds per strategy, per network: the
        // summary's plots.
        let mut key_plots = Vec::new();
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
                key_plots.push(Figure {
                    html: svg,
                    caption: if net.in_paper() {
                        format!(
                            "{}: our means (bars), the paper's Apache values (triangles)",
                            net.name().to_uppercase()
                        )
                    } else {
                        format!(
                            "{}: our means (bars; paper 001 did not measure this network)",
                            net.name().to_uppercase()
                        )
                    },
                });
            }
        }

        let mut sections = Vec::new();
        // Time-sequence graphs side by side on one time axis.
        let net = [Net::Wan, Net::Lan, Net::Ppp]
            .into_iter()
            .find(|n| self.plan.nets.contains(n))
            .or_else(|| self.plan.nets.first().copied());
        if let Some(net) = net {
            let mut graphs = Vec::new();
            for st in &self.plan.strategies {
                let run = self.runs.iter().find(|r| {
                    r.net == net
                        && !r.is_sweep()
                        && r.strategy == *st
                        && r.test == Test::First
                        && r.robot.tuning == crate::model::Tuning::Tuned
                        && r.ok()
                });
                if let Some(r) = run {
                    let segs = pcapread::time_sequence(&dir.join(&r.pcap), server_addr(r))?;
                    graphs.push((st, r, segs));
                }
            }
            let tmax = graphs
                .iter()
                .flat_map(|g| g.2.iter().map(|s| s.t_s))
                .fold(0.0f64, f64::max);
            let mut body = String::from(
                "<p class=small>Like the xplot graphs the paper's authors used: one first-time run per \
                 strategy, read back from its pcap (server data segments as strokes, coloured per TCP \
                 connection, stacked across connections; client ACKs as grey dots), all on one time axis.</p>\
                 <div class=plots>",
            );
            for (st, r, segs) in &graphs {
                let svg = plots::time_sequence_scaled(
                    &format!(
                        "{} first-time, {} rep {} ({} packets)",
                        st.name(),
                        net.name().to_uppercase(),
                        r.rep,
                        r.packets_total
                    ),
                    segs,
                    Some(tmax),
                )?;
                let _ = write!(
                    body,
                    "<figure>{svg}<figcaption>pcap: <a href=\"{0}\">{0}</a></figcaption></figure>",
                    html::esc(&r.pcap)
                );
            }
            body.push_str("</div>");
            sections.push(Section {
                title: format!("Time-sequence graphs ({})", net.name().to_uppercase()),
                html: body,
                open: true,
            });
        }

        let mut tables_html = String::new();
        let label = self.server_label();
        for net in &self.plan.nets {
            tables_html.push_str(&html::text_tables(&tables::network_table(
                *net,
                &self.summaries,
                &label,
            )));
            tables_html.push_str(&html::text_tables(&super::chromium::render_browser_rows(
                *net, &self.runs,
            )));
            for t in &self.plan.tests {
                tables_html.push_str(&html::text_tables(&tables::sockets_table(
                    *net,
                    *t,
                    &self.summaries,
                    self.short_server(),
                )));
            }
            tables_html.push_str(&html::text_tables(&tables::table3(
                *net,
                &self.initial,
                self.short_server(),
            )));
            tables_html.push_str(&html::text_tables(&tables::payload_table(*net, &self.runs)));
        }
        sections.push(Section {
            title: "Tables (layout of paper 001 Tables 3-9)".into(),
            html: tables_html,
            open: true,
        });
        sections.push(Section {
            title: "Self-test: the rules fed the paper's own values".into(),
            html: html::text_tables(&super::claims::render_self_test()),
            open: false,
        });

        // A waterfall per run, from its HAR.
        let mut wf = String::new();
        for r in &self.runs {
            let Some(rel) = &r.har else { continue };
            let Ok(text) = fs::read_to_string(dir.join(rel)) else {
                continue;
            };
            let Ok(har) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let initial = if r.robot.tuning == crate::model::Tuning::Initial {
                " (initial robot)"
            } else {
                ""
            };
            let late = if r.link_lateness.flagged {
                ", LINK LATE (flagged)"
            } else {
                ""
            };
            let _ = write!(
                wf,
                "<details><summary>{} {} {}{initial} rep {} — {:.2} s, {} packets{late}</summary>{}\
                 <p class=small>HAR: <a href=\"{path}\">{path}</a></p></details>",
                r.net,
                r.strategy,
                r.test,
                r.rep,
                r.elapsed_s,
                r.packets_total,
                html::waterfall(&har),
                path = html::esc(rel),
            );
        }
        if !wf.is_empty() {
            sections.push(Section {
                title: "Waterfalls: one per run, from its HAR".into(),
                html: wf,
                open: false,
            });
        }
        sections.push(Section {
            title: "The page".into(),
            html: html::text_tables(&self.page_composition),
            open: false,
        });
        let failed = self.runs.iter().filter(|r| !r.ok()).count();
        let mut notes = vec![self.provenance.note.clone()];
        if failed > 0 {
            notes.push(format!(
                "{failed} of {} runs FAILED (left out of the tables); see report.txt",
                self.runs.len()
            ));
        }
        let page = Page {
            title: Self::HTML_TITLE.into(),
            provenance: &self.provenance,
            lateness: self.lateness_line(),
            claims: serde_json::to_value(&self.claims)?,
            key_plots,
            sections,
            notes,
        };
        Ok(page.render())
    }
}

impl Report for Results {
    type Suite = super::Microscape;
    const RECORDS: &'static str = "runs";
    const HTML_TITLE: &'static str =
        "pagewire bench: Nielsen et al., SIGCOMM '97 (paper 001), reproduced";

    fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    fn claims(&self) -> &[Claim] {
        &self.claims
    }

    fn lateness(&self) -> Vec<&pagewire_link::LinkLateness> {
        self.runs.iter().map(|r| &r.link_lateness).collect()
    }

    /// The terminal report.
    fn render_text(&self) -> String {
        let mut s = String::new();
        let p = &self.provenance;
        let _ = writeln!(s, "{} — {}", p.made_by, p.date_utc);
        let _ = writeln!(s, "command: {}", p.command.join(" "));
        let _ = writeln!(s, "{}", p.line());
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
            s.push_str(&tables::network_table_with_model(
                net,
                &self.summaries,
                &label,
                self.model.as_ref(),
            ));
            let _ = writeln!(s);
            s.push_str(&super::chromium::render_browser_rows(net, &self.runs));
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
        let sweep = super::extras::rtt_sweep_table(&self.runs);
        if !sweep.is_empty() {
            s.push_str(&sweep);
            let _ = writeln!(s);
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
        if let Some(m) = &self.model {
            s.push_str(&m.render());
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "{}\n", self.lateness_line());
        s.push_str(&self.judged.render());
        let _ = writeln!(s);
        s.push_str(&super::claims::render_self_test());
        let _ = writeln!(s, "\n{} runs in {:.0} s.", self.runs.len(), self.wall_s);
        s
    }

    /// results.json with the summaries beside the runs.
    fn write_json(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir)?;
        crate::results::write_json(
            dir,
            &ResultsJson {
                schema_version: SCHEMA_VERSION,
                made_by: &self.provenance.made_by,
                what:
                    "pagewire bench results: one object per run in `runs`; tables and claims as printed",
                results: self,
                summaries: self.summaries.values().collect(),
                initial_summaries: self.initial.values().collect(),
            },
        )
    }

    /// results.csv (the figures are inline SVG in report.html).
    fn write_data(&self, dir: &Path) -> Result<Vec<String>> {
        self.write_csv(&dir.join("results.csv"))?;
        Ok(Vec::new())
    }

    /// report.html: bar plots, time-sequence graphs and waterfalls.
    fn render_html(&self, dir: &Path, _figures: &[String]) -> Result<String> {
        self.html_page(dir)
    }
}

/// The server address as the emulator assigns it (the same for every link).
fn server_addr(_r: &RunRecord) -> Ipv4Addr {
    pagewire_emu::SERVER_ADDR
}

#[derive(Serialize)]
struct ResultsJson<'a> {
    schema_version: u32,
    made_by: &'a str,
    what: &'static str,
    #[serde(flatten)]
    results: &'a Results,
    summaries: Vec<&'a Summary>,
    /// Table 3's initial robot, summarized apart.
    initial_summaries: Vec<&'a Summary>,
}
