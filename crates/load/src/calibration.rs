//! Is the load a paper-004 load? The calibration table: what the user
//! equivalents did, per UE and per connection, beside what Barford &
//! Crovella's UEs did (derived from their own Tables 2 and 6, 600 s runs at
//! 40, 280 and 520 UEs), each with a band written down before any run.
//!
//! The bands: GETs/s per UE 0.30-0.70, bytes per GET 7-16 KB, files per
//! web object 1.2-2.5 and the HTTP/1.0 : HTTP/1.1 connection ratio 3.5-8
//! are the ones the project adopted for paper 004; web objects per
//! persistent connection and the persistent connection's duration take
//! the paper's range widened by about a third each way (2.3-5.0; 8.5-21 s).
//! A non-persistent connection's duration is a transfer time (the server's
//! and the link's speed, not the workload's): shown, never judged.

use serde::{Deserialize, Serialize};

use crate::metrics::Summary;

/// One row of the table.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub quantity: String,
    /// Our value; `None` when the run cannot give it (no GET, or not this mode).
    pub ours: Option<f64>,
    pub unit: String,
    /// The paper's value(s), as text ("0.454-0.499").
    pub paper: String,
    /// Where the paper's value comes from.
    pub source: String,
    /// The band our value must fall in; `None`: shown, not judged.
    pub band: Option<(f64, f64)>,
    /// `Some(true)` inside the band, `Some(false)` outside (or no value to
    /// judge), `None` not judged.
    pub within: Option<bool>,
}

/// The table and its verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// Every judged row inside its band.
    pub within_bands: bool,
    pub rows: Vec<Row>,
}

pub const GETS_PER_UE: (f64, f64) = (0.30, 0.70);
pub const BYTES_PER_GET: (f64, f64) = (7_000.0, 16_000.0);
pub const FILES_PER_OBJECT: (f64, f64) = (1.2, 2.5);
pub const CONN_RATIO: (f64, f64) = (3.5, 8.0);
pub const OBJECTS_PER_CONN: (f64, f64) = (2.3, 5.0);
pub const PERSISTENT_CONN_S: (f64, f64) = (8.5, 21.0);

fn row(
    quantity: &str,
    ours: Option<f64>,
    unit: &str,
    paper: &str,
    source: &str,
    band: Option<(f64, f64)>,
) -> Row {
    let within = band.map(|(lo, hi)| ours.is_some_and(|v| v.is_finite() && v >= lo && v <= hi));
    Row {
        quantity: quantity.into(),
        ours,
        unit: unit.into(),
        paper: paper.into(),
        source: source.into(),
        band,
        within,
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl Calibration {
    pub fn from_rows(rows: Vec<Row>) -> Calibration {
        Calibration {
            within_bands: rows.iter().all(|r| r.within != Some(false)),
            rows,
        }
    }

    /// The table of one run (or one merged run).
    pub fn of(s: &Summary) -> Calibration {
        let ues = s.run.ues.max(1) as f64;
        let persistent = matches!(s.run.mode.as_str(), "http11" | "pipeline");
        let closed = s.run.model == "closed";
        let mut rows = vec![
            row(
                "GETs/s per UE",
                (closed && s.window_s > 0.0 && s.gets > 0).then(|| s.gets_per_second / ues),
                "",
                "0.454-0.499",
                if closed {
                    "Table 6 HTTP/1.0 connects / 600 s / UEs"
                } else {
                    "no fixed UEs in an open model: not judged"
                },
                closed.then_some(GETS_PER_UE),
            ),
            row(
                "files per web object (request-weighted)",
                ratio(s.object_gets, s.objects),
                "",
                "1.38-1.58",
                "Table 6 HTTP/1.0 connects / Table 7 early-close connects",
                Some(FILES_PER_OBJECT),
            ),
            row(
                "bytes per GET",
                ratio(s.body_bytes, s.gets),
                "B",
                "10.5-11.8 KB",
                "Table 2 data bytes / Table 6 HTTP/1.0 connects",
                Some(BYTES_PER_GET),
            ),
        ];
        if persistent {
            rows.push(row(
                "web objects per persistent connection",
                ratio(s.objects, s.connections),
                "",
                "3.46-3.66",
                "Table 7 early-close connects / Table 6 HTTP/1.1 connects",
                Some(OBJECTS_PER_CONN),
            ));
            rows.push(row(
                "GETs per connection (HTTP/1.0 : HTTP/1.1 connections)",
                ratio(s.gets, s.connections),
                "",
                "4.79-5.79",
                "Table 6 HTTP/1.0 / HTTP/1.1 connects",
                Some(CONN_RATIO),
            ));
        }
        let lifetime =
            (s.conns_closed > 0).then(|| s.conn_lifetime_us as f64 / s.conns_closed as f64 / 1e6);
        if persistent {
            rows.push(row(
                "connection duration",
                lifetime,
                "s",
                "13.0-15.6 s",
                "Table 6 HTTP/1.1 average connection duration",
                Some(PERSISTENT_CONN_S),
            ));
        } else {
            rows.push(row(
                "connection duration",
                lifetime,
                "s",
                "0.02-0.12 s (HTTP/1.0)",
                "Table 6 HTTP/1.0; a transfer time, not judged",
                None,
            ));
        }
        Calibration::from_rows(rows)
    }

    /// The table as text.
    pub fn text(&self) -> String {
        let mut s = format!(
            "calibration against paper 004 (Barford & Crovella): {}\n",
            if self.within_bands {
                "every judged row within its band"
            } else {
                "OFF CALIBRATION (a judged row outside its band)"
            }
        );
        s += &format!(
            "  {:<54} {:>10}  {:<24} {:<13} verdict\n",
            "quantity", "ours", "paper", "band"
        );
        for r in &self.rows {
            let scale = if r.unit == "B" { 1000.0 } else { 1.0 };
            let unit = match r.unit.as_str() {
                "B" => " KB",
                "s" => " s",
                _ => "",
            };
            let ours = match r.ours {
                Some(v) => format!("{:.3}{unit}", v / scale),
                None => "-".into(),
            };
            let band = match r.band {
                Some((lo, hi)) => format!("{}-{}", lo / scale, hi / scale),
                None => "not judged".into(),
            };
            let verdict = match r.within {
                Some(true) => "within",
                Some(false) => "OUTSIDE",
                None => "-",
            };
            s += &format!(
                "  {:<54} {:>10}  {:<24} {:<13} {verdict}\n",
                r.quantity, ours, r.paper, band
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_value_is_outside_and_an_unjudged_row_never_decides() {
        let rows = vec![
            row("a", Some(0.5), "", "", "", Some((0.3, 0.7))),
            row("b", None, "s", "", "", None),
        ];
        assert!(Calibration::from_rows(rows.clone()).within_bands);
        let mut off = rows;
        off.push(row("c", None, "", "", "", Some((1.0, 2.0))));
        assert!(!Calibration::from_rows(off).within_bands);
        assert_eq!(
            row("d", Some(0.71), "", "", "", Some((0.3, 0.7))).within,
            Some(false)
        );
    }
}
