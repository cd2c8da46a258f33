//! Figures 2 and 3 (SVG), results.csv, results.json and a text report.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use serde::Serialize;

use crate::claims::{Claim, Judged};
use crate::results::{Provenance, Report};

use super::{Config, Plan, Point, QueueLimit};

#[derive(Serialize)]
pub struct Results {
    /// See [`crate::results::SCHEMA_VERSION`].
    pub schema_version: u32,
    pub made_by: String,
    pub provenance: Provenance,
    pub plan: Plan,
    pub wall_s: f64,
    pub points: Vec<Point>,
    pub claims: Vec<Claim>,
    /// The claims with the count of runs left out (`claims` is its list).
    #[serde(skip)]
    pub judged: Judged,
}

impl Results {
    pub fn new(provenance: Provenance, plan: Plan, wall_s: f64, points: Vec<Point>) -> Self {
        let mut r = Results {
            schema_version: crate::results::SCHEMA_VERSION,
            made_by: provenance.made_by.clone(),
            provenance,
            plan,
            wall_s,
            points,
            claims: Vec::new(),
            judged: Judged::new(crate::claims::Suite::ConnLength, 0, 0, Vec::new()),
        };
        r.judged = r.judge();
        r.claims = r.judged.claims.clone();
        r
    }
}

impl Report for Results {
    type Suite = super::ConnLength;
    const RECORDS: &'static str = "points";
    const HTML_TITLE: &'static str = "pagewire bench --suite conn-length: Padmanabhan & Mogul, \"Improving HTTP Latency\", Figures 2-3";

    fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    fn claims(&self) -> &[Claim] {
        &self.claims
    }

    fn lateness(&self) -> Vec<&pagewire_link::LinkLateness> {
        self.points.iter().map(|p| &p.link_lateness).collect()
    }

    /// results.csv and one figure per measured configuration
    /// (fig2-remote.svg, fig2-remote-536.svg, fig3-local.svg).
    fn write_data(&self, dir: &Path) -> Result<Vec<String>> {
        let mut files = Vec::new();
        let mut w = csv::Writer::from_path(dir.join("results.csv"))?;
        w.write_record(
            [
                "config",
                "tcp",
                "buffer",
                "buffer_bytes",
                "client_rcvbuf",
                "window_bytes",
                "queue",
                "length",
                "throughput",
                "mean_throughput",
                "sd_throughput",
                "trials",
            ]
            .into_iter()
            .chain(crate::results::LATENESS_CSV_HEADER),
        )?;
        for p in &self.points {
            w.write_record(
                [
                    p.config.name().to_string(),
                    p.tcp.to_string(),
                    p.buffer.label(),
                    p.buffer_bytes.map(|b| b.to_string()).unwrap_or_default(),
                    p.client_rcvbuf.to_string(),
                    p.window_bytes.map(|w| w.to_string()).unwrap_or_default(),
                    queue_label(p.queue),
                    p.length.to_string(),
                    format!("{:.1}", p.throughput),
                    format!("{:.1}", p.throughput_trials.mean),
                    format!("{:.1}", p.throughput_trials.sd),
                    p.throughput_trials.n.to_string(),
                ]
                .into_iter()
                .chain(crate::results::lateness_csv(&p.link_lateness)),
            )?;
        }
        w.flush()?;
        for c in Config::ALL {
            if !self.points.iter().any(|p| p.config == c) {
                continue;
            }
            let (fig, rtt) = match c {
                Config::Local => ("fig3", "RTT 0.5 ms, 10 Mbit/s, MSS 1460"),
                Config::Remote => ("fig2", "RTT 70 ms, T1, MSS 1460"),
                Config::Remote536 => ("fig2", "RTT 70 ms, T1, MSS 536"),
            };
            let name = format!("{fig}-{}.svg", c.name());
            let tcp = if self.plan.tcp1997 {
                ", --tcp 1997"
            } else {
                ", today's TCP"
            };
            let queue = match (c, self.plan.router_queue) {
                (Config::Remote | Config::Remote536, Some(q)) => {
                    format!(", queue {}", queue_label(q))
                }
                _ => String::new(),
            };
            let svg = figure(
                &format!("Throughput vs. connection length, {rtt}{tcp}{queue}"),
                &self.points,
                c,
            )?;
            std::fs::write(dir.join(&name), svg).with_context(|| format!("write {name}"))?;
            files.push(name);
        }
        Ok(files)
    }

    fn render_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Connection length vs throughput (Padmanabhan & Mogul, \"Improving HTTP Latency\", Figures 2-3)"
        );
        let _ = writeln!(
            s,
            "{}; {} trials per point ({} from {} B), best trial shown, bytes/s",
            self.provenance.date_utc, self.plan.trials, self.plan.long_trials, self.plan.long_from
        );
        let _ = writeln!(s, "{}", self.provenance.line());
        let _ = writeln!(s, "{}", self.lateness_line());
        let _ = writeln!(
            s,
            "TCP: {}; remote links' drop-tail queue: {}",
            if self.plan.tcp1997 {
                "--tcp 1997"
            } else {
                "today's Linux"
            },
            self.plan
                .router_queue
                .map_or_else(|| "the t1 profile's (1000p)".to_string(), queue_label)
        );
        for c in Config::ALL {
            let pts: Vec<&Point> = self.points.iter().filter(|p| p.config == c).collect();
            if pts.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\n{c}:");
            let _ = write!(s, "{:>10}", "length");
            for b in &self.plan.buffers {
                let _ = write!(s, "{:>12}", b.label());
            }
            let _ = writeln!(s);
            for &l in &self.plan.lengths {
                let _ = write!(s, "{l:>10}");
                for &b in &self.plan.buffers {
                    match pts.iter().find(|p| p.length == l && p.buffer == b) {
                        Some(p) => {
                            let _ = write!(s, "{:>12.0}", p.throughput);
                        }
                        None => {
                            let _ = write!(s, "{:>12}", "-");
                        }
                    }
                }
                let _ = writeln!(s);
            }
        }
        s.push('\n');
        s.push_str(&self.judged.render());
        s
    }
}

/// A decimal label for a tick of the log length axis, whose ticks fall on
/// decimal values (1000, 2000, ..., 100000): "100k" at 100,000 bytes, not
/// the binary "98K".
pub fn tick_label(x: f64) -> String {
    let (v, unit) = if x.abs() >= 1e6 {
        (x / 1e6, "M")
    } else if x.abs() >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let r = v.round();
    if (v - r).abs() < 1e-6 * v.abs().max(1.0) {
        format!("{r:.0}{unit}")
    } else {
        // Not a whole multiple: keep what the tick really is.
        let t = format!("{v:.2}");
        let t = t.trim_end_matches('0').trim_end_matches('.');
        format!("{t}{unit}")
    }
}

/// `16p` or `64000b`, as `--queue` takes it.
pub fn queue_label(q: QueueLimit) -> String {
    match q {
        QueueLimit::Packets(n) => format!("{n}p"),
        QueueLimit::Bytes(n) => format!("{n}b"),
    }
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

/// Throughput (KB/s) against length (log x), one curve per buffer size,
/// best trial per point, as the paper's Figures 2 and 3.
pub fn figure(title: &str, points: &[Point], c: Config) -> Result<String> {
    let pts: Vec<&Point> = points.iter().filter(|p| p.config == c).collect();
    let xmin = pts.iter().map(|p| p.length).min().unwrap_or(256).max(1) as f64;
    let xmax = pts.iter().map(|p| p.length).max().unwrap_or(1 << 22).max(2) as f64;
    let ymax = pts
        .iter()
        .map(|p| p.throughput / 1024.0)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let mut buffers: Vec<super::Buffer> = pts.iter().map(|p| p.buffer).collect();
    buffers.sort();
    buffers.dedup();
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (640, 400)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d((xmin * 0.8..xmax * 1.25).log_scale(), 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("connection length (bytes; k = 1000, M = 1000000)")
            .y_desc("throughput (KB/s), best of the trials")
            .x_label_formatter(&|x| tick_label(*x))
            .draw()
            .map_err(err)?;
        for (i, b) in buffers.iter().enumerate() {
            let mut line: Vec<(f64, f64)> = pts
                .iter()
                .filter(|p| p.buffer == *b)
                .map(|p| (p.length as f64, p.throughput / 1024.0))
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(format!("buffer {}", b.label()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart
                .draw_series(line.into_iter().map(|p| Circle::new(p, 2, color.filled())))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decimal ticks get decimal labels.
    #[test]
    fn tick_labels_are_decimal() {
        assert_eq!(tick_label(100_000.0), "100k");
        assert_eq!(tick_label(1_000.0), "1k");
        assert_eq!(tick_label(2_000_000.0), "2M");
        assert_eq!(tick_label(500.0), "500");
        assert_eq!(tick_label(2_500.0), "2.5k");
        assert_eq!(tick_label(1_048_576.0), "1.05M");
    }
}
