//! SVG plots (plotters): bars per strategy, and TCP time-sequence graphs.

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::pcapread::Segment;

/// One bar series: a value per category (None = not measured).
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
    /// The paper's value for the same bar, drawn as a black triangle.
    pub reference: Vec<Option<f64>>,
    pub color: RGBColor,
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

/// Grouped bars: one group per category, one bar per series; each series'
/// reference values (the paper's) are black triangles over its bars.
pub fn bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series],
    reference_label: &str,
) -> Result<String> {
    let mut buf = String::new();
    let ymax = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .chain(series.iter().flat_map(|s| s.reference.iter().flatten()))
        .fold(0.0f64, |a, &b| a.max(b))
        * 1.15;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    {
        let root = SVGBackend::with_string(&mut buf, (560, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = categories.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..ymax)
            .map_err(err)?;
        let cats = categories.to_vec();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.01 && i < cats.len() {
                    cats[i].clone()
                } else {
                    String::new()
                }
            })
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        let k = series.len().max(1) as f64;
        let width = 0.8 / k;
        for (si, s) in series.iter().enumerate() {
            let color = s.color;
            chart
                .draw_series(s.values.iter().enumerate().filter_map(|(ci, v)| {
                    v.map(|v| {
                        let x0 = ci as f64 + 0.1 + si as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], color.filled())
                    })
                }))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        let mut legend_done = false;
        for (si, s) in series.iter().enumerate() {
            let style = BLACK.filled();
            let drawn = chart
                .draw_series(s.reference.iter().enumerate().filter_map(|(ci, v)| {
                    v.map(|v| {
                        let x = ci as f64 + 0.1 + (si as f64 + 0.45) * width;
                        TriangleMarker::new((x, v), 5, style)
                    })
                }))
                .map_err(err)?;
            if !legend_done && s.reference.iter().any(Option::is_some) {
                drawn
                    .label(reference_label.to_string())
                    .legend(move |(x, y)| TriangleMarker::new((x + 5, y), 5, style));
                legend_done = true;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// A time-sequence graph in the manner of xplot: each server-to-client data
/// segment is a vertical stroke from its first to its last byte at the time
/// it left the link, coloured by connection; the client's ACKs are grey dots.
pub fn time_sequence(title: &str, segs: &[Segment]) -> Result<String> {
    time_sequence_scaled(title, segs, None)
}

/// [`time_sequence`] on a time axis to `tmax_s` seconds (graphs shown side
/// by side share one scale), or to its own last segment.
pub fn time_sequence_scaled(title: &str, segs: &[Segment], tmax_s: Option<f64>) -> Result<String> {
    let mut buf = String::new();
    let tmax = tmax_s
        .unwrap_or_else(|| segs.iter().map(|s| s.t_s).fold(0.0f64, f64::max))
        .max(1e-3)
        * 1.03;
    let ymax = segs
        .iter()
        .filter(|s| s.from_server)
        .map(|s| (s.seq + s.len as u64) as f64 / 1024.0)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.05;
    {
        let root = SVGBackend::with_string(&mut buf, (560, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..tmax, 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since first packet (s)")
            .y_desc("server sequence number (KB, stacked over connections)")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(segs.iter().filter(|s| !s.from_server).filter_map(|s| {
                s.ack.map(|a| {
                    Circle::new(
                        (s.t_s, a as f64 / 1024.0),
                        1,
                        RGBColor(150, 150, 150).filled(),
                    )
                })
            }))
            .map_err(err)?;
        chart
            .draw_series(segs.iter().filter(|s| s.from_server && s.len > 0).map(|s| {
                let y0 = s.seq as f64 / 1024.0;
                let y1 = (s.seq + s.len as u64) as f64 / 1024.0;
                PathElement::new(
                    vec![(s.t_s, y0), (s.t_s, y1)],
                    Palette99::pick(s.conn).stroke_width(2),
                )
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
