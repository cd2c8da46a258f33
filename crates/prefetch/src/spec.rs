//! Sweep specifications as the CLI spells them: `--p 0:1.1:0.1`,
//! `--w 2..10`, `--i 1,2,all`.

use crate::params::{MaxCandidates, ParamsError, MAX_WINDOW};
use crate::sim::Model;

/// Most values one axis may expand to. A sweep is the product of its axes,
/// so this keeps a typo like `0:1:0.00001` from queueing 100,000 points.
pub const MAX_AXIS_VALUES: usize = 1_000;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("invalid value list `{spec}`: {reason}")]
    Invalid { spec: String, reason: String },
    #[error(transparent)]
    Params(#[from] ParamsError),
}

fn invalid(spec: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

/// Thresholds: `0.5`, `0.3,0.5,0.7` or `start:end:step` (end inclusive).
/// Range values are rounded to 9 decimals so `0:1.1:0.1` gives exactly the
/// decimals 0.0, 0.1, ..., 1.1 that the paper lists.
pub fn parse_thresholds(spec: &str) -> Result<Vec<f64>, SpecError> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let fields: Vec<&str> = part.split(':').collect();
        match fields.as_slice() {
            [one] => out.push(parse_p(spec, one)?),
            [start, end, step] => {
                let (start, end, step) = (
                    parse_p(spec, start)?,
                    parse_p(spec, end)?,
                    parse_p(spec, step)?,
                );
                if step <= 0.0 || end < start {
                    return Err(invalid(spec, "need start <= end and step > 0"));
                }
                let n = ((end - start) / step + 1e-9).floor() as usize + 1;
                if n > MAX_AXIS_VALUES {
                    return Err(invalid(spec, format!("more than {MAX_AXIS_VALUES} values")));
                }
                out.extend((0..n).map(|k| ((start + k as f64 * step) * 1e9).round() / 1e9));
            }
            _ => return Err(invalid(spec, "use 0.5, 0.3,0.5 or start:end:step")),
        }
    }
    finish(spec, out, |a, b| a.total_cmp(b))
}

fn parse_p(spec: &str, s: &str) -> Result<f64, SpecError> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| invalid(spec, format!("`{s}` is not a number")))?;
    if !v.is_finite() || v < 0.0 {
        return Err(invalid(spec, format!("`{s}` must be a number >= 0")));
    }
    Ok(v)
}

/// Windows: `4`, `2,4,8` or `2..10` (inclusive).
pub fn parse_windows(spec: &str) -> Result<Vec<usize>, SpecError> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (lo, hi) = match part.split_once("..") {
            Some((lo, hi)) => (lo, hi.trim_start_matches('=')),
            None => (part, part),
        };
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| invalid(spec, format!("`{s}` is not an integer")))
        };
        let (lo, hi) = (num(lo)?, num(hi)?);
        if lo < 2 || hi > MAX_WINDOW || lo > hi {
            return Err(invalid(
                spec,
                format!("windows must lie in 2..={MAX_WINDOW}"),
            ));
        }
        out.extend(lo..=hi);
    }
    finish(spec, out, Ord::cmp)
}

/// Hint limits: `1,2,all`.
pub fn parse_hints(spec: &str) -> Result<Vec<MaxCandidates>, SpecError> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        out.push(part.parse()?);
    }
    finish(spec, out, Ord::cmp)
}

/// Models: `simple`, `realistic` or `both`.
pub fn parse_models(spec: &str) -> Result<Vec<Model>, SpecError> {
    match spec.trim() {
        "simple" => Ok(vec![Model::Simple]),
        "realistic" => Ok(vec![Model::Realistic]),
        "both" | "simple,realistic" | "realistic,simple" => {
            Ok(vec![Model::Simple, Model::Realistic])
        }
        _ => Err(invalid(spec, "use simple, realistic or both")),
    }
}

fn finish<T: PartialEq + Copy>(
    spec: &str,
    mut v: Vec<T>,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Result<Vec<T>, SpecError> {
    v.sort_by(&cmp);
    v.dedup();
    if v.is_empty() {
        return Err(invalid(spec, "no values"));
    }
    if v.len() > MAX_AXIS_VALUES {
        return Err(invalid(spec, format!("more than {MAX_AXIS_VALUES} values")));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_axes() {
        let p = parse_thresholds("0:1.1:0.1").unwrap();
        assert_eq!(p.len(), 12);
        assert_eq!(p[3], 0.3);
        assert_eq!(p[11], 1.1);
        assert_eq!(
            parse_windows("2..10").unwrap(),
            (2..=10).collect::<Vec<_>>()
        );
        assert_eq!(parse_windows("2..=4,8").unwrap(), vec![2, 3, 4, 8]);
        assert_eq!(
            parse_hints("1,2,all").unwrap(),
            vec![
                MaxCandidates::limit(1).unwrap(),
                MaxCandidates::limit(2).unwrap(),
                MaxCandidates::All
            ]
        );
        assert_eq!(parse_thresholds("0.7,0.5").unwrap(), vec![0.5, 0.7]);
    }

    #[test]
    fn rejects_nonsense() {
        for bad in ["", "x", "1:0:0.1", "0:1:0", "0:1:0.00001", "-1"] {
            assert!(parse_thresholds(bad).is_err(), "{bad}");
        }
        for bad in ["1", "2..65", "5..3", "a"] {
            assert!(parse_windows(bad).is_err(), "{bad}");
        }
        for bad in ["0", "x", ""] {
            assert!(parse_hints(bad).is_err(), "{bad}");
        }
    }
}
