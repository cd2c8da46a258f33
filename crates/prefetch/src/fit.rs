//! Fitting the fetch-time model y = a + b·x from a log (paper 003 §8.2.1).
//!
//! The paper measured fetch times directly (a client at Berkeley fetching
//! files of DEC's server) and fitted a line "that minimizes the sum of squared
//! errors, while ignoring outliers". A Common Log Format log records no
//! service time, so the only time signal it holds is the gap between a host's
//! consecutive requests. While a 1995 browser loads a page it fetches the
//! inline images one after another, so the gap after a request for x bytes
//! approximates the time to fetch those x bytes — plus parsing, plus, between
//! pages, the user's think time. We keep gaps of at most `max_gap_s` (think
//! times are longer), fit least squares, then drop points more than 2.5
//! standard deviations off the line and refit, three times.
//!
//! The result is an estimate with 1-second timestamp resolution; it is
//! printed beside the paper's model and used only when asked for.

use serde::Serialize;

use crate::log::{AccessLog, Method};
use crate::sim::TimeModel;

/// A fitted line.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TimeFit {
    pub model: TimeModel,
    /// (size, gap) pairs found.
    pub points: usize,
    /// Points left after outlier removal.
    pub used: usize,
    /// Coefficient of determination on the used points.
    pub r2: f64,
}

/// Gaps longer than this are user think time, not fetch time.
pub const DEFAULT_MAX_GAP_S: i64 = 30;

/// Fit y = a + b·x on (bytes of a request, seconds until the same host's next
/// request). Errors when too few points or the fit is not a rising line.
pub fn fit_time_model(log: &AccessLog, max_gap_s: i64) -> Result<TimeFit, String> {
    let mut last: Vec<Option<(i64, u64)>> = vec![None; log.hosts.len()];
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for r in &log.requests {
        let slot = &mut last[r.host as usize];
        if let Some((t, bytes)) = *slot {
            let gap = r.time_s - t;
            if (0..=max_gap_s).contains(&gap) {
                pts.push((bytes as f64, gap as f64));
            }
        }
        *slot = match (r.method, r.status, r.bytes) {
            (Method::Get, 200, Some(b)) if b > 0 => Some((r.time_s, b)),
            _ => None,
        };
    }
    let points = pts.len();
    if points < 100 {
        return Err(format!("only {points} usable request gaps (need 100)"));
    }
    let mut used = pts.clone();
    let mut line = ols(&used).ok_or("degenerate sizes")?;
    for _ in 0..3 {
        let rmse = (used
            .iter()
            .map(|&(x, y)| (y - line.0 - line.1 * x).powi(2))
            .sum::<f64>()
            / used.len() as f64)
            .sqrt();
        let keep: Vec<(f64, f64)> = used
            .iter()
            .copied()
            .filter(|&(x, y)| (y - line.0 - line.1 * x).abs() <= 2.5 * rmse)
            .collect();
        if keep.len() < 100 || keep.len() == used.len() {
            break;
        }
        used = keep;
        line = ols(&used).ok_or("degenerate sizes")?;
    }
    let (a, b) = line;
    if !(a.is_finite() && b.is_finite()) || b <= 0.0 || a < 0.0 {
        return Err(format!(
            "fit is not a rising line with a non-negative intercept (a = {a:.3} s, b = {b:.3e} s/byte)"
        ));
    }
    let mean_y = used.iter().map(|p| p.1).sum::<f64>() / used.len() as f64;
    let ss_tot: f64 = used.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    let ss_res: f64 = used.iter().map(|&(x, y)| (y - a - b * x).powi(2)).sum();
    Ok(TimeFit {
        model: TimeModel {
            a_s: a,
            b_s_per_byte: b,
        },
        points,
        used: used.len(),
        r2: if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            0.0
        },
    })
}

/// Ordinary least squares: (intercept, slope).
fn ols(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_a_planted_line() {
        // Each host fetches files whose gap to the next request is
        // 1 + size/10000 seconds (whole seconds, like a real log).
        let mut text = String::new();
        for h in 0..200 {
            let mut t = 0i64;
            for k in 0..5 {
                let size = 10_000 * ((h + k) % 5) as u64 + 500;
                text.push_str(&format!(
                    "h{h} - - [30/Aug/1995:10:{:02}:{:02} -0400] \"GET /f{k} HTTP/1.0\" 200 {size}\n",
                    t / 60,
                    t % 60
                ));
                t += 1 + (size / 10_000) as i64;
            }
        }
        let log = AccessLog::from_bytes(text.as_bytes());
        let fit = fit_time_model(&log, DEFAULT_MAX_GAP_S).unwrap();
        assert!((fit.model.b_s_per_byte - 1e-4).abs() < 1e-5, "{fit:?}");
        assert!((fit.model.a_s - 1.0).abs() < 0.2, "{fit:?}");
        assert!(fit.r2 > 0.9);
    }

    #[test]
    fn too_few_points_is_an_error() {
        let log =
            AccessLog::from_bytes(b"h - - [30/Aug/1995:10:00:00 -0400] \"GET / HTTP/1.0\" 200 1\n");
        assert!(fit_time_model(&log, DEFAULT_MAX_GAP_S).is_err());
    }
}
