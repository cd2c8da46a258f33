//! The one results writer of every suite: results.json (with its
//! provenance, schema version and claims), report.txt and report.html,
//! and the link-lateness columns and line every suite's report carries.
//! A suite's results implement [`Report`]; [`Report::write`] writes the
//! files in one order for all of them.

use std::path::Path;

use anyhow::{Context, Result};
use pagewire_link::LinkLateness;
use serde::Serialize;

use crate::claims::{Claim, Judged};
use crate::suite::{judge_serialized, Suite};

/// The current UTC time, as every record writes it.
pub use pagewire_provenance::utc_now;

/// What made the results: one record for every suite (see
/// `pagewire_provenance`).
pub use pagewire_provenance::Provenance;

/// The version of results.json's shape (docs/schemas/results.schema.json):
/// changes when a field the schema names changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// How the link-lateness flag is decided, as provenance records it.
pub fn lateness_rule() -> String {
    format!(
        "a run is flagged (and left out of claims) when the p99 of how late its packets left the \
         emulated link, against their scheduled departure, exceeds max({} x the link's one-way delay, {} ms)",
        pagewire_link::lateness::LATE_FRACTION_OF_ONE_WAY,
        pagewire_link::lateness::LATE_FLOOR.as_secs_f64() * 1e3
    )
}

/// results.csv's columns of a run's link lateness (after the JSON's
/// `link_lateness` object, flattened).
pub const LATENESS_CSV_HEADER: [&str; 5] = [
    "link_lateness_p50_ms",
    "link_lateness_p99_ms",
    "link_lateness_max_ms",
    "link_lateness_share_over_1ms",
    "link_lateness_flagged",
];

/// The CSV cells of [`LATENESS_CSV_HEADER`].
pub fn lateness_csv(l: &pagewire_link::LinkLateness) -> [String; 5] {
    [
        format!("{:.4}", l.p50_ms),
        format!("{:.4}", l.p99_ms),
        format!("{:.4}", l.max_ms),
        format!("{:.6}", l.share_over_1ms),
        l.flagged.to_string(),
    ]
}

/// The report's line on link fidelity: how many runs were flagged, the
/// worst p99 and the latest packet. `what` names the runs ("runs",
/// "cells", "points").
pub fn lateness_line<'a>(
    items: impl IntoIterator<Item = &'a pagewire_link::LinkLateness>,
    what: &str,
) -> String {
    let items: Vec<&pagewire_link::LinkLateness> = items.into_iter().collect();
    let flagged = items.iter().filter(|l| l.flagged).count();
    let p99 = items.iter().map(|l| l.p99_ms).fold(0.0, f64::max);
    let max = items.iter().map(|l| l.max_ms).fold(0.0, f64::max);
    let p50 = {
        let mut v: Vec<f64> = items.iter().map(|l| l.p50_ms).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    format!(
        "link lateness: {flagged} of {} {what} flagged (left out of claims: p99 above max({} x one-way delay, {} ms)); \
         median p50 {p50:.3} ms, worst p99 {p99:.3} ms, latest packet {max:.3} ms",
        items.len(),
        pagewire_link::lateness::LATE_FRACTION_OF_ONE_WAY,
        pagewire_link::lateness::LATE_FLOOR.as_secs_f64() * 1e3,
    )
}

/// Writes `results` as `dir/results.json` (pretty JSON), the one place
/// every suite's results.json is written.
pub fn write_json<T: Serialize + ?Sized>(dir: &Path, results: &T) -> Result<()> {
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(results)?,
    )
    .context("write results.json")
}

/// Ends a suite's provenance: the time it ended, the load average after,
/// and the link-lateness rule its runs were flagged by.
pub fn finish(provenance: &mut Provenance) {
    provenance.finish();
    provenance.link_lateness_rule = Some(lateness_rule());
}

/// A suite's results as written: the last two steps of plan -> runs ->
/// summaries -> claims -> report. The claims are judged from the results
/// as serialized ([`Report::judge`]), so a results.json's `claims` are what
/// `pagewire claims` prints for it.
pub trait Report: Serialize + Sized {
    /// The suite that made them.
    type Suite: Suite;
    /// What one record is called in the link-lateness line ("runs",
    /// "points", "cells").
    const RECORDS: &'static str;
    /// report.html's title.
    const HTML_TITLE: &'static str;

    fn provenance(&self) -> &Provenance;
    /// The claims as judged (results.json's `claims`).
    fn claims(&self) -> &[Claim];
    /// Every record's link lateness.
    fn lateness(&self) -> Vec<&LinkLateness>;
    /// The text report (report.txt; what `bench` prints).
    fn render_text(&self) -> String;
    /// results.csv and the figures; returns the figures' file names (the
    /// key plots of report.html).
    fn write_data(&self, dir: &Path) -> Result<Vec<String>>;

    /// results.json (default: the results themselves).
    fn write_json(&self, dir: &Path) -> Result<()> {
        write_json(dir, self)
    }

    /// report.html (default: the shared page with the figures as key plots
    /// and the text tables).
    fn render_html(&self, _dir: &Path, figures: &[String]) -> Result<String> {
        use crate::html::{Figure, Page, Section};
        let page = Page {
            title: Self::HTML_TITLE.into(),
            provenance: self.provenance(),
            lateness: self.lateness_line(),
            claims: serde_json::to_value(self.claims())?,
            key_plots: figures.iter().map(|f| Figure::file(f, f)).collect(),
            sections: vec![Section {
                title: "Tables".into(),
                html: crate::html::text_tables(&self.render_text()),
                open: true,
            }],
            notes: vec![self.provenance().note.clone()],
        };
        Ok(page.render())
    }

    /// The claims of these results, judged as `pagewire claims` judges
    /// the written file.
    fn judge(&self) -> Judged {
        judge_serialized::<Self::Suite, Self>(self)
    }

    /// The report's line on link fidelity.
    fn lateness_line(&self) -> String {
        lateness_line(self.lateness(), Self::RECORDS)
    }

    /// Writes results.json, the data files and figures, report.txt and
    /// report.html into `dir`; returns the files written.
    fn write(&self, dir: &Path) -> Result<Vec<String>> {
        self.write_json(dir)?;
        let figures = self.write_data(dir)?;
        std::fs::write(dir.join("report.txt"), self.render_text()).context("write report.txt")?;
        std::fs::write(dir.join("report.html"), self.render_html(dir, &figures)?)
            .context("write report.html")?;
        let mut files = vec!["results.json".to_string(), "results.csv".into()];
        files.extend(figures);
        files.extend(["report.txt".to_string(), "report.html".into()]);
        Ok(files)
    }
}
