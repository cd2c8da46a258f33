//! Result files: CSV, JSON, SVG plots like the paper's Figures 10-13, 15, 16.
//! Every file carries its [`Provenance`] (command, log file with size and
//! SHA-256, split, models, version).

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::params::MaxCandidates;
use crate::sim::{CacheConfig, Model, PointResult, TimeModel};

/// What made a result.
#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// `pagewire 0.1.0`.
    pub tool: String,
    pub command: String,
    pub log_path: String,
    pub log_bytes: u64,
    pub log_sha256: String,
    pub log_lines: u64,
    pub split: String,
    pub cache: CacheConfig,
    pub time_model: TimeModel,
    pub time_model_source: String,
    /// [`crate::variant::Variant::describe`] of the run.
    pub readings: String,
    pub created_unix_s: u64,
    /// What every pagewire results file records: build commit, command
    /// line, date, host, kernel, CPU, load average before and after.
    pub run: pagewire_provenance::Provenance,
}

impl Provenance {
    /// One `key: value` per line.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("made by: {}", self.tool),
            format!("command: {}", self.command),
            format!(
                "log: {} ({} bytes, {} lines, sha256 {})",
                self.log_path, self.log_bytes, self.log_lines, self.log_sha256
            ),
            format!("split: {}", self.split),
            format!(
                "client cache: {} bytes in {}-byte blocks, LRU per host",
                self.cache.capacity_bytes, self.cache.block_bytes
            ),
            format!(
                "fetch time model: y = {:.4} + {:.4e} x s ({})",
                self.time_model.a_s, self.time_model.b_s_per_byte, self.time_model_source
            ),
            format!("readings: {}", self.readings),
            format!("created: unix time {}", self.created_unix_s),
            self.run.line(),
        ]
    }

    /// A short one-line caption for plots.
    pub fn caption(&self) -> String {
        let name = Path::new(&self.log_path)
            .file_name()
            .map_or(self.log_path.clone(), |n| n.to_string_lossy().into_owned());
        format!(
            "{} · {} · {} lines, sha256 {} · {}",
            self.tool,
            name,
            self.log_lines,
            &self.log_sha256[..self.log_sha256.len().min(12)],
            self.split
        )
    }
}

/// A reader that hashes (SHA-256) and counts what passes through it, so the
/// log is read once for both parsing and provenance.
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// (bytes read, lowercase hex SHA-256).
    pub fn finish(self) -> (u64, String) {
        let digest = self.hasher.finalize();
        let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
        (self.bytes, hex)
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

const CSV_COLUMNS: &str =
    "model,w,i,p,miss_rate,miss_reduction,avg_access_time_s,traffic_increase,\
traffic_net_bytes,traffic_gross_bytes,traffic_net_blocks,traffic_gross_blocks,traffic_net_files,\
traffic_gross_files,prefetches,useful,wasted,too_late,accesses,blocks_accessed,block_misses,file_misses,demand_bytes,\
prefetch_bytes,advised_cached,advised_too_big,baseline_miss_rate,baseline_avg_access_time_s";

/// CSV text: one header line, one row per point, nothing else (any CSV
/// reader takes it as is). The provenance is in summary.json and the first
/// line of results.jsonl.
pub fn csv(results: &[PointResult]) -> String {
    let mut out = String::new();
    out.push_str(CSV_COLUMNS);
    out.push('\n');
    for r in results {
        let c = &r.counters;
        out.push_str(&format!(
            "{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6}\n",
            r.model.as_str(),
            r.w,
            r.i,
            r.p,
            r.miss_rate,
            r.miss_reduction,
            r.avg_access_time_s,
            r.traffic_increase,
            r.traffic.net_bytes,
            r.traffic.gross_bytes,
            r.traffic.net_blocks,
            r.traffic.gross_blocks,
            r.traffic.net_files,
            r.traffic.gross_files,
            r.prefetches,
            r.useful,
            r.wasted,
            r.too_late,
            c.accesses,
            c.blocks_accessed,
            c.block_misses,
            c.file_misses,
            c.demand_bytes,
            c.prefetch_bytes,
            c.advised_cached,
            c.advised_too_big,
            r.baseline_miss_rate,
            r.baseline_avg_access_time_s
        ));
    }
    out
}

/// One line on a chart.
struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
    /// Draw markers only (scatter), no connecting line.
    points_only: bool,
    color: usize,
}

fn select<'a>(
    results: &'a [PointResult],
    model: Model,
    w: usize,
    i: MaxCandidates,
) -> impl Iterator<Item = &'a PointResult> + 'a {
    results
        .iter()
        .filter(move |r| r.model == model && r.w == w && r.i == i)
}

fn distinct<T: PartialEq + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Write every plot the results allow into `dir`; returns the file names.
pub fn write_plots(
    dir: &Path,
    results: &[PointResult],
    prov: &Provenance,
) -> io::Result<Vec<String>> {
    let mut written = Vec::new();
    let windows = distinct(results.iter().map(|r| r.w));
    let hints = distinct(results.iter().map(|r| r.i));
    let models = distinct(results.iter().map(|r| r.model));
    // The paper's Figures 10 and 11 use i = unlimited; fall back to the
    // largest i present.
    let i_main = if hints.contains(&MaxCandidates::All) {
        MaxCandidates::All
    } else {
        hints.last().copied().unwrap_or(MaxCandidates::All)
    };
    let model_main = if models.contains(&Model::Simple) {
        Model::Simple
    } else {
        Model::Realistic
    };
    let per_w = |metric: fn(&PointResult) -> f64, p_min: f64, model: Model| -> Vec<Series> {
        windows
            .iter()
            .enumerate()
            .map(|(k, &w)| Series {
                label: format!("w = {w}"),
                points: select(results, model, w, i_main)
                    .filter(|r| r.p >= p_min - 1e-9)
                    .map(|r| (r.p, metric(r)))
                    .collect(),
                dashed: false,
                points_only: false,
                color: k,
            })
            .collect()
    };
    let mut plot = |name: &str, title: &str, y_desc: &str, x_desc: &str, series: Vec<Series>| {
        let series: Vec<Series> = series
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            return Ok(());
        }
        line_chart(&dir.join(name), title, x_desc, y_desc, &series, prov)?;
        written.push(name.to_string());
        Ok::<(), io::Error>(())
    };
    let m = model_main.as_str();
    plot(
        "fig10_miss_rate_vs_p.svg",
        &format!("Fig. 10: miss rate vs threshold p ({m} model, i = {i_main})"),
        "miss rate (block misses / blocks accessed)",
        "prefetch threshold p",
        per_w(|r| r.miss_rate, 0.0, model_main),
    )?;
    plot(
        "fig11_traffic_vs_p.svg",
        &format!("Fig. 11: fractional traffic increase vs p ({m} model, i = {i_main}, p >= 0.3)"),
        "traffic increase (with / without prefetching - 1)",
        "prefetch threshold p",
        per_w(|r| r.traffic_increase, 0.3, model_main),
    )?;
    let w_small = windows.first().copied().unwrap_or(2);
    let per_i = |metric: fn(&PointResult) -> f64| -> Vec<Series> {
        hints
            .iter()
            .enumerate()
            .map(|(k, &i)| Series {
                label: format!("i = {i}"),
                points: select(results, model_main, w_small, i)
                    .map(|r| (r.p, metric(r)))
                    .collect(),
                dashed: false,
                points_only: false,
                color: k,
            })
            .collect()
    };
    plot(
        "fig12_miss_rate_by_i.svg",
        &format!("Fig. 12: miss rate vs p for i = 1, 2, all ({m} model, w = {w_small})"),
        "miss rate",
        "prefetch threshold p",
        per_i(|r| r.miss_rate),
    )?;
    plot(
        "fig13_traffic_by_i.svg",
        &format!("Fig. 13: traffic increase vs p for i = 1, 2, all ({m} model, w = {w_small})"),
        "traffic increase",
        "prefetch threshold p",
        per_i(|r| r.traffic_increase),
    )?;
    if models.len() == 2 {
        let focus: Vec<usize> = windows
            .iter()
            .copied()
            .filter(|w| *w == 2 || *w == 4)
            .collect();
        let focus = if focus.is_empty() {
            vec![w_small]
        } else {
            focus
        };
        let both = |metric: fn(&PointResult) -> f64| -> Vec<Series> {
            let mut v = Vec::new();
            for (k, &w) in focus.iter().enumerate() {
                for model in [Model::Simple, Model::Realistic] {
                    v.push(Series {
                        label: match model {
                            Model::Simple => format!("simple w = {w}"),
                            Model::Realistic => format!("realistic (dashed) w = {w}"),
                        },
                        points: select(results, model, w, i_main)
                            .map(|r| (r.p, metric(r)))
                            .collect(),
                        dashed: model == Model::Realistic,
                        points_only: false,
                        color: k,
                    });
                }
            }
            v
        };
        plot(
            "fig15_access_time_models.svg",
            &format!("Fig. 15: average access time vs p, simple vs realistic (i = {i_main})"),
            "average access time per file (s)",
            "prefetch threshold p",
            both(|r| r.avg_access_time_s),
        )?;
        plot(
            "fig16_miss_rate_models.svg",
            &format!("Fig. 16: miss rate vs p, simple vs realistic (i = {i_main})"),
            "miss rate",
            "prefetch threshold p",
            both(|r| r.miss_rate),
        )?;
    }
    // Not in the paper: the trade-off itself, every point of every window.
    let trade: Vec<Series> = models
        .iter()
        .enumerate()
        .map(|(k, &model)| Series {
            label: format!("{} model, i = {i_main}", model.as_str()),
            points: {
                let mut pts: Vec<(f64, f64)> = results
                    .iter()
                    .filter(|r| r.model == model && r.i == i_main && r.traffic_increase <= 2.0)
                    .map(|r| (r.traffic_increase, r.miss_reduction))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                pts
            },
            dashed: false,
            points_only: true,
            color: k,
        })
        .collect();
    plot(
        "tradeoff_miss_reduction_vs_traffic.svg",
        "Miss-rate reduction vs traffic increase (all w and p; traffic <= +200%)",
        "miss-rate reduction (1 - miss / no-prefetch miss)",
        "traffic increase",
        trade,
    )?;
    Ok(written)
}

fn to_io<E: std::fmt::Display>(e: E) -> io::Error {
    io::Error::other(e.to_string())
}

fn line_chart(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    prov: &Provenance,
) -> io::Result<()> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let pad_y = ((y1 - y0) * 0.08).max(0.01);
    let pad_x = ((x1 - x0) * 0.02).max(0.01);
    let (x0, x1, y0, y1) = (x0 - pad_x, x1 + pad_x, y0 - pad_y, y1 + pad_y);
    {
        let root = SVGBackend::new(path, (960, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(to_io)?;
        let (main, foot) = root.split_vertically(612);
        let mut chart = ChartBuilder::on(&main)
            .caption(title, ("sans-serif", 20))
            .margin(14)
            .x_label_area_size(46)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(to_io)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(to_io)?;
        for s in series {
            let color = Palette99::pick(s.color).to_rgba();
            let style = ShapeStyle::from(&color).stroke_width(2);
            let pts = s.points.clone();
            let anno = if s.points_only {
                chart
                    .draw_series(
                        pts.iter()
                            .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                    )
                    .map_err(to_io)?
            } else if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
                    .map_err(to_io)?
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(to_io)?
            };
            anno.label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], style));
            chart
                .draw_series(
                    pts.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(to_io)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(to_io)?;
        foot.draw_text(
            &prov.caption(),
            &("sans-serif", 11).into_font().color(&BLACK.mix(0.7)),
            (12, 8),
        )
        .map_err(to_io)?;
        root.present().map_err(to_io)?;
    }
    add_svg_desc(path, &prov.lines().join("\n"))
}

/// Put the full provenance into the SVG as a `<desc>` element.
fn add_svg_desc(path: &Path, text: &str) -> io::Result<()> {
    let svg = fs::read_to_string(path)?;
    let Some(start) = svg.find("<svg") else {
        return Ok(());
    };
    let Some(end) = svg[start..].find('>').map(|e| start + e + 1) else {
        return Ok(());
    };
    let escaped = text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let out = format!("{}\n<desc>{}</desc>{}", &svg[..end], escaped, &svg[end..]);
    fs::write(path, out)
}

/// `{"provenance": {...}}` and a newline: the first line of results.jsonl.
pub fn provenance_json_line(prov: &Provenance) -> String {
    let mut line = serde_json::json!({ "provenance": prov }).to_string();
    line.push('\n');
    line
}

/// `summary.json`: provenance, what the reader saw, the baseline, the
/// time-model fit and the plot files.
#[allow(clippy::too_many_arguments)]
pub fn summary_json(
    prov: &Provenance,
    base: &crate::sim::Counters,
    stats: &crate::log::ReadStats,
    filtered: &crate::sim::Filtered,
    accesses: usize,
    hosts: usize,
    urls: usize,
    fit: &Result<crate::fit::TimeFit, String>,
    plots: &[String],
) -> String {
    let fit = match fit {
        Ok(f) => serde_json::to_value(f).unwrap_or_default(),
        Err(e) => serde_json::json!({ "error": e }),
    };
    let v = serde_json::json!({
        "provenance": prov,
        "read": stats,
        "filtered": filtered,
        "file_accesses": accesses,
        "hosts": hosts,
        "urls": urls,
        "baseline": base,
        "time_model_fit_from_log": fit,
        "plots": plots,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// The paper's reference points (§8.1, simple model, i unlimited, DEC log).
pub const PAPER_POINTS: [(usize, f64, f64, f64); 2] = [
    // (w, p, miss rate, traffic increase); no-prefetching miss rate 0.88.
    (2, 0.5, 0.58, 0.38),
    (4, 0.7, 0.55, 0.43),
];

/// The paper's no-prefetching miss rate on DEC's log (§8.1).
pub const PAPER_BASELINE_MISS_RATE: f64 = 0.88;

/// Reads one metric of a point.
type Metric = fn(&PointResult) -> f64;

/// Terminal tables: for each model and i, miss rate and traffic increase with
/// rows w and columns p (the paper's Figures 10-13 as numbers), then the
/// comparison with the paper's highlighted points.
pub fn text_tables(results: &[PointResult]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let models = distinct(results.iter().map(|r| r.model));
    let hints = distinct(results.iter().map(|r| r.i));
    let windows = distinct(results.iter().map(|r| r.w));
    let mut ps: Vec<f64> = distinct(results.iter().map(|r| r.p));
    ps.sort_by(f64::total_cmp);
    let metrics: [(&str, Metric); 4] = [
        ("miss rate", |r| r.miss_rate),
        (
            "traffic increase (the run's --traffic measure, net bytes by default)",
            |r| r.traffic_increase,
        ),
        (
            "gross traffic increase (prefetched bytes / bytes without prefetching)",
            |r| r.traffic.gross_bytes,
        ),
        ("avg access time (s)", |r| r.avg_access_time_s),
    ];
    for &model in &models {
        for &i in &hints {
            for (name, metric) in metrics {
                if name.starts_with("avg") && model == Model::Simple {
                    // Simple model: access time is linear in the missed
                    // data (§8.1); the miss-rate table says the same.
                    continue;
                }
                let _ = writeln!(
                    out,
                    "\n{name} — {} model, i = {i} (rows w, columns p)",
                    model.as_str()
                );
                let _ = write!(out, "{:>4}", "w\\p");
                for p in &ps {
                    let _ = write!(out, " {p:>6.2}");
                }
                out.push('\n');
                for &w in &windows {
                    let _ = write!(out, "{w:>4}");
                    for &p in &ps {
                        match select(results, model, w, i).find(|r| r.p == p) {
                            Some(r) => {
                                let _ = write!(out, " {:>6.3}", metric(r));
                            }
                            None => out.push_str("      -"),
                        }
                    }
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// Lines comparing our points with the paper's highlighted ones.
pub fn paper_comparison(results: &[PointResult]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let base = results.first().map_or(0.0, |r| r.baseline_miss_rate);
    let _ = writeln!(
        out,
        "no prefetching: miss rate {base:.3} (paper, DEC log: about {PAPER_BASELINE_MISS_RATE})"
    );
    for (w, p, paper_miss, paper_traffic) in PAPER_POINTS {
        for model in [Model::Simple, Model::Realistic] {
            if let Some(r) = results.iter().find(|r| {
                r.model == model && r.w == w && r.i == MaxCandidates::All && (r.p - p).abs() < 1e-9
            }) {
                let _ = write!(
                    out,
                    "{}, w = {w}, p = {p}, i = all: miss rate {:.3} ({:.0}% fewer misses), traffic net bytes {:+.0}%, gross bytes {:+.0}%, access time {:.3} s",
                    model.as_str(),
                    r.miss_rate,
                    100.0 * r.miss_reduction,
                    100.0 * r.traffic.net_bytes,
                    100.0 * r.traffic.gross_bytes,
                    r.avg_access_time_s,
                );
                if model == Model::Simple {
                    let _ = write!(
                        out,
                        "  | paper: {paper_miss} ({:.0}% fewer), {:+.0}%",
                        100.0 * (1.0 - paper_miss / PAPER_BASELINE_MISS_RATE),
                        100.0 * paper_traffic
                    );
                }
                out.push('\n');
            }
        }
    }
    // §8.2.2 compares access times "for the same increase in network
    // traffic, say 40%": where each curve crosses +40% net bytes (coming
    // down from p = 1.1), interpolated between the grid points around it.
    for model in [Model::Simple, Model::Realistic] {
        for w in [2, 4] {
            let mut curve: Vec<&PointResult> = results
                .iter()
                .filter(|r| r.model == model && r.w == w && r.i == MaxCandidates::All)
                .collect();
            curve.sort_by(|a, b| a.p.total_cmp(&b.p));
            let cross = curve.windows(2).rev().find(|pair| {
                pair[1].traffic.net_bytes <= 0.40 && 0.40 <= pair[0].traffic.net_bytes
            });
            let line = match cross {
                Some(pair) => {
                    let (more, less) = (pair[0], pair[1]);
                    let span = more.traffic.net_bytes - less.traffic.net_bytes;
                    let f = if span > 0.0 {
                        (0.40 - less.traffic.net_bytes) / span
                    } else {
                        0.0
                    };
                    let t = less.avg_access_time_s
                        + f * (more.avg_access_time_s - less.avg_access_time_s);
                    format!(
                        "{} model, w = {w}, at +40% net traffic (p between {} and {}): access time {:.3} s ({:.1}% better; no prefetching {:.3} s)  | paper: about 0.78 s (36%) simple, 0.78-0.80 s (34.5-36%) realistic",
                        model.as_str(),
                        more.p,
                        less.p,
                        t,
                        100.0 * (1.0 - t / less.baseline_avg_access_time_s),
                        less.baseline_avg_access_time_s
                    )
                }
                None if curve.is_empty() => continue,
                None => format!(
                    "{} model, w = {w}: net traffic never reaches +40%",
                    model.as_str()
                ),
            };
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{derive, Counters};
    use crate::PrefetchParams;

    fn prov() -> Provenance {
        Provenance {
            tool: "pagewire test".into(),
            command: "pagewire prefetch simulate --log x.log --p 0:1:0.5".into(),
            log_path: "x.log".into(),
            log_bytes: 10,
            log_sha256: "00".repeat(32),
            log_lines: 2,
            split: "test".into(),
            cache: CacheConfig::default(),
            time_model: TimeModel::PAPER,
            time_model_source: "paper".into(),
            readings: "defaults".into(),
            created_unix_s: 0,
            run: pagewire_provenance::Provenance::default(),
        }
    }

    #[test]
    fn hashing_reader_matches_known_digest() {
        let mut r = HashingReader::new(&b"abc"[..]);
        let mut s = Vec::new();
        r.read_to_end(&mut s).unwrap();
        let (n, hex) = r.finish();
        assert_eq!(n, 3);
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn plots_render_text_without_system_fonts() {
        let base = Counters {
            accesses: 10,
            blocks_accessed: 10,
            block_misses: 9,
            demand_bytes: 1000,
            ..Counters::default()
        };
        let mut results = Vec::new();
        for model in [Model::Simple, Model::Realistic] {
            for w in [2, 4] {
                for p in [0.0, 0.5, 1.1] {
                    let params: PrefetchParams = format!("w={w},p={p},i=all").parse().unwrap();
                    let c = Counters {
                        block_misses: (5.0 + 4.0 * p) as u64,
                        prefetch_bytes: (500.0 * (1.1 - p)) as u64,
                        ..base
                    };
                    results.push(derive(
                        model,
                        &params,
                        c,
                        &base,
                        crate::variant::TrafficMeasure::NetBytes,
                    ));
                }
            }
        }
        let dir =
            std::env::temp_dir().join(format!("pagewire-prefetch-plot-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let files = write_plots(&dir, &results, &prov()).unwrap();
        assert!(files.contains(&"fig10_miss_rate_vs_p.svg".to_string()));
        assert!(files.contains(&"fig16_miss_rate_models.svg".to_string()));
        let svg = fs::read_to_string(dir.join("fig10_miss_rate_vs_p.svg")).unwrap();
        // Labels are real <text> elements (plotters' SVG backend with its
        // built-in size estimate: no font files, no fontconfig).
        assert!(svg.contains("<text"));
        assert!(svg.contains("w = 4"));
        assert!(svg.contains("<desc>made by: pagewire test"));
        let csv_text = csv(&results);
        assert!(csv_text.starts_with("model,w,i,p,"), "{csv_text}");
        assert_eq!(csv_text.lines().count(), 1 + results.len());
        assert!(!csv_text.lines().any(|l| l.starts_with('#')));
        fs::remove_dir_all(&dir).unwrap();
    }
}
