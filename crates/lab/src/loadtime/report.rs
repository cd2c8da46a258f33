//! Figures 5-8 (SVG), results.csv, results.json and a text report.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;
use serde::Serialize;

use crate::claims::{Claim, Judged};
use crate::results::{Provenance, Report};

use super::{Cell, Method, Net, Plan};

#[derive(Serialize)]
pub struct Results {
    /// See [`crate::results::SCHEMA_VERSION`].
    pub schema_version: u32,
    pub made_by: String,
    pub provenance: Provenance,
    pub plan: Plan,
    pub wall_s: f64,
    pub cells: Vec<Cell>,
    /// The local cells' noise floor, one record per image size.
    pub local_noise: Vec<NoiseFloor>,
    pub claims: Vec<Claim>,
    /// The claims with the count of runs left out (`claims` is its list).
    #[serde(skip)]
    pub judged: Judged,
    /// The expected-time model beside every cell (docs/model.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::expect::suites::SuiteEval>,
}

impl Results {
    pub fn new(provenance: Provenance, plan: Plan, wall_s: f64, cells: Vec<Cell>) -> Self {
        let mut r = Results {
            schema_version: crate::results::SCHEMA_VERSION,
            made_by: provenance.made_by.clone(),
            provenance,
            plan,
            wall_s,
            local_noise: Vec::new(),
            cells,
            claims: Vec::new(),
            judged: Judged::new(crate::claims::Suite::Getall, 0, 0, Vec::new()),
            model: None,
        };
        r.local_noise = noise_floor(&r.cells);
        r.judged = r.judge();
        r.claims = r.judged.claims.clone();
        r.model = serde_json::to_value(&r)
            .ok()
            .and_then(|v| super::model::eval_value(&v, 0.0).ok());
        r
    }

    fn at(&self, net: Net, size: usize, n: usize, m: Method) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.net == net && c.size == size && c.images == n && c.method == m)
    }
}

impl Report for Results {
    type Suite = super::Getall;
    const RECORDS: &'static str = "cells";
    const HTML_TITLE: &'static str = "pagewire bench --suite getall: Padmanabhan & Mogul, \"Improving HTTP Latency\", Figures 5-8";

    fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    fn claims(&self) -> &[Claim] {
        &self.claims
    }

    fn lateness(&self) -> Vec<&pagewire_link::LinkLateness> {
        self.cells.iter().map(|c| &c.link_lateness).collect()
    }

    /// results.csv and Figures 5-8.
    fn write_data(&self, dir: &Path) -> Result<Vec<String>> {
        let mut figures: Vec<String> = Vec::new();
        let mut w = csv::Writer::from_path(dir.join("results.csv"))?;
        w.write_record(
            [
                "net",
                "size",
                "images",
                "method",
                "load_s",
                "sd_s",
                "n",
                "requests",
                "connections",
            ]
            .into_iter()
            .chain(crate::results::LATENESS_CSV_HEADER),
        )?;
        for c in &self.cells {
            w.write_record(
                [
                    c.net.name().to_string(),
                    c.size.to_string(),
                    c.images.to_string(),
                    c.method.name().to_string(),
                    format!("{:.4}", c.load_s.mean),
                    format!("{:.4}", c.load_s.sd),
                    c.load_s.n.to_string(),
                    c.requests.to_string(),
                    c.connections.to_string(),
                ]
                .into_iter()
                .chain(crate::results::lateness_csv(&c.link_lateness)),
            )?;
        }
        w.flush()?;
        // Figures 5 and 6: load time vs number of images, remote server.
        for (fig, size) in [("fig5", 2544usize), ("fig6", 45566)] {
            for net in [Net::Remote, Net::Local] {
                if !self.cells.iter().any(|c| c.net == net && c.size == size) {
                    continue;
                }
                let series: Vec<(String, Vec<(f64, f64)>)> = self
                    .plan
                    .methods
                    .iter()
                    .map(|&m| {
                        let pts = self
                            .plan
                            .counts
                            .iter()
                            .filter_map(|&n| {
                                self.at(net, size, n, m).map(|c| (n as f64, c.load_s.mean))
                            })
                            .collect();
                        (m.name().to_string(), pts)
                    })
                    .collect();
                let name = if net == Net::Remote {
                    format!("{fig}.svg")
                } else {
                    format!("{fig}-local.svg")
                };
                let svg = lines(
                    &format!(
                        "Load time, {} server, image size = {size} bytes",
                        net.name()
                    ),
                    "number of inline images",
                    "load time (s)",
                    false,
                    &series,
                )?;
                std::fs::write(dir.join(&name), svg)?;
                figures.push(name);
            }
        }
        // Figures 7 and 8: relative improvement (GETALL vs HTTP/1.0) against
        // image size, one curve per image count.
        for (fig, net) in [("fig7", Net::Remote), ("fig8", Net::Local)] {
            let series: Vec<(String, Vec<(f64, f64)>)> = self
                .plan
                .counts
                .iter()
                .filter(|&&n| n > 0)
                .map(|&n| {
                    let pts = self
                        .plan
                        .sizes
                        .iter()
                        .filter_map(|&s| {
                            let g = self.at(net, s, n, Method::Getall)?;
                            let h = self.at(net, s, n, Method::Http10)?;
                            Some((s as f64, (1.0 - g.load_s.mean / h.load_s.mean) * 100.0))
                        })
                        .collect();
                    (format!("{n} images"), pts)
                })
                .collect();
            if series.iter().all(|s| s.1.is_empty()) {
                continue;
            }
            let svg = lines(
                &format!(
                    "Latency improvement of GETALL over HTTP/1.0, {} server",
                    net.name()
                ),
                "image size (bytes)",
                "improvement (%)",
                true,
                &series,
            )?;
            std::fs::write(dir.join(format!("{fig}.svg")), svg)?;
            figures.push(format!("{fig}.svg"));
        }
        Ok(figures)
    }

    fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Load time vs number and size of inline images (Padmanabhan & Mogul, Figures 5-8)\n{}; mean of {} repetitions, seconds",
            self.provenance.date_utc, self.plan.reps
        );
        let _ = writeln!(s, "{}", self.provenance.line());
        let _ = writeln!(s, "{}", self.lateness_line());
        for &net in &self.plan.nets {
            for &size in &self.plan.sizes {
                let _ = writeln!(s, "\n{}, {size} B images:", net.name());
                let _ = write!(s, "{:>8}", "images");
                for m in &self.plan.methods {
                    let _ = write!(s, "{:>12}", m.name());
                }
                let _ = writeln!(s, "{:>10}{:>10}", "GETALL %", "objpack %");
                for &n in &self.plan.counts {
                    let _ = write!(s, "{n:>8}");
                    for &m in &self.plan.methods {
                        match self.at(net, size, n, m) {
                            Some(c) => {
                                let _ = write!(s, "{:>12.3}", c.load_s.mean);
                            }
                            None => {
                                let _ = write!(s, "{:>12}", "-");
                            }
                        }
                    }
                    // Improvement over HTTP/1.0 of the one-request methods.
                    for m in [Method::Getall, Method::Objpack] {
                        match (
                            self.at(net, size, n, m),
                            self.at(net, size, n, Method::Http10),
                        ) {
                            (Some(g), Some(h)) => {
                                let _ = write!(
                                    s,
                                    "{:>10.1}",
                                    (1.0 - g.load_s.mean / h.load_s.mean) * 100.0
                                );
                            }
                            _ => {
                                let _ = write!(s, "{:>10}", "-");
                            }
                        }
                    }
                    let _ = writeln!(s);
                }
            }
        }
        if !self.local_noise.is_empty() {
            let _ = writeln!(
                s,
                "\nLocal noise floor ({} repetitions per local cell, local links run alone):",
                self.plan.local_reps
            );
            for f in &self.local_noise {
                let _ = writeln!(
                    s,
                    "  {} B: N = 0 cells differ by {:.2} ms ({:.0} %) across methods; median sd {:.2} ms",
                    f.size,
                    f.zero_spread_s * 1000.0,
                    f.zero_spread_rel * 100.0,
                    f.median_sd_s * 1000.0
                );
            }
        }
        let _ = writeln!(s, "End hosts: {}", self.plan.hosts.name());
        if let Some(m) = &self.model {
            s.push('\n');
            s.push_str(&m.render());
        }
        s.push('\n');
        s.push_str(&self.judged.render());
        s
    }
}

/// How far apart cells of identical work lie on the local link: the page
/// without images (N = 0) is one connection and one object for every
/// method, so the spread of its means over the methods is noise, as is
/// each cell's own standard deviation.
#[derive(Clone, Debug, Serialize)]
pub struct NoiseFloor {
    pub size: usize,
    /// Largest minus smallest mean of the N = 0 cells over the methods, s.
    pub zero_spread_s: f64,
    /// The same relative to their mean.
    pub zero_spread_rel: f64,
    /// Median over the local cells of the standard deviation, s.
    pub median_sd_s: f64,
}

/// The local noise floor per image size (empty without local cells).
pub fn noise_floor(cells: &[Cell]) -> Vec<NoiseFloor> {
    let mut sizes: Vec<usize> = cells
        .iter()
        .filter(|c| c.net == Net::Local)
        .map(|c| c.size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|size| {
            let zero: Vec<f64> = cells
                .iter()
                .filter(|c| c.net == Net::Local && c.size == size && c.images == 0)
                .map(|c| c.load_s.mean)
                .filter(|m| m.is_finite())
                .collect();
            let mut sds: Vec<f64> = cells
                .iter()
                .filter(|c| c.net == Net::Local && c.size == size)
                .map(|c| c.load_s.sd)
                .filter(|s| s.is_finite())
                .collect();
            if zero.len() < 2 || sds.is_empty() {
                return None;
            }
            sds.sort_by(f64::total_cmp);
            let hi = zero.iter().copied().fold(f64::MIN, f64::max);
            let lo = zero.iter().copied().fold(f64::MAX, f64::min);
            let mean = zero.iter().sum::<f64>() / zero.len() as f64;
            Some(NoiseFloor {
                size,
                zero_spread_s: hi - lo,
                zero_spread_rel: (hi - lo) / mean,
                median_sd_s: sds[sds.len() / 2],
            })
        })
        .collect()
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

/// Line plot, one curve per series, optional log x.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String> {
    let all = series.iter().flat_map(|s| s.1.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y) in all {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymin = ymin.min(y);
        ymax = ymax.max(y);
    }
    if xmin > xmax {
        (xmin, xmax, ymax) = (1.0, 2.0, 1.0);
    }
    if xmax <= xmin {
        xmax = xmin + 1.0;
    }
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut cb = ChartBuilder::on(&root);
        cb.caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .draw()
                    .map_err(err)?;
                for (i, (name, pts)) in series.iter().enumerate() {
                    let color = Palette99::pick(i).to_rgba();
                    chart
                        .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                        .map_err(err)?
                        .label(name.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
                    chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 2, color.filled())))
                        .map_err(err)?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(err)?;
            }};
        }
        if log_x {
            draw!(cb
                .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), ymin.min(0.0)..ymax)
                .map_err(err)?);
        } else {
            draw!(cb
                .build_cartesian_2d(xmin..xmax, ymin.min(0.0)..ymax)
                .map_err(err)?);
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}
