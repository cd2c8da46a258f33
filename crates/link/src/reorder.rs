//! Reordering: with probability `p` a packet is held back `delay` after it
//! would have left (`--reorder 1%,5ms`), so packets behind it overtake it.
//! Other packets keep their order (jitter never reorders); a held packet
//! does not delay them.

use std::time::Duration;

use serde::Serialize;

use crate::config::{parse_duration, ConfigError};

/// `--reorder`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Reorder {
    /// Probability in (0, 1) that a packet is held back.
    pub probability: f64,
    /// How long it is held back.
    #[serde(rename = "delay_ms", serialize_with = "crate::config::ser_duration_ms")]
    pub delay: Duration,
}

fn invalid(value: &str, why: &'static str) -> ConfigError {
    ConfigError::Invalid {
        what: "reorder",
        value: value.to_string(),
        why,
    }
}

impl Reorder {
    /// Parses `PROBABILITY,DELAY`: `1%,5ms`, `0.01,5ms`; `none`/`off`/`0`
    /// for none.
    pub fn parse(s: &str) -> Result<Option<Self>, ConfigError> {
        let t = s.trim().to_ascii_lowercase();
        if matches!(t.as_str(), "none" | "off" | "0" | "0%") {
            return Ok(None);
        }
        let Some((p, d)) = t.split_once(',') else {
            return Err(invalid(s, "expected PROBABILITY,DELAY, e.g. 1%,5ms"));
        };
        let p = p.trim();
        let probability = if let Some(pc) = p.strip_suffix('%') {
            pc.trim().parse::<f64>().map(|x| x / 100.0)
        } else {
            p.parse::<f64>()
        }
        .map_err(|_| invalid(s, "the probability is e.g. 1% or 0.01"))?;
        let delay =
            parse_duration(d).map_err(|_| invalid(s, "the delay needs a unit, e.g. 5ms"))?;
        let r = Self { probability, delay };
        r.validate().map_err(|e| match e {
            ConfigError::Invalid { why, .. } => invalid(s, why),
            e => e,
        })?;
        Ok(Some(r))
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.probability > 0.0 && self.probability < 1.0) {
            return Err(invalid(
                &self.probability.to_string(),
                "the probability must be in (0, 1)",
            ));
        }
        if self.delay.is_zero() || self.delay > Duration::from_secs(60) {
            return Err(invalid(
                &format!("{:?}", self.delay),
                "the delay must be > 0 and at most 60 s",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        assert_eq!(
            Reorder::parse("1%,5ms").unwrap(),
            Some(Reorder {
                probability: 0.01,
                delay: Duration::from_millis(5)
            })
        );
        assert_eq!(
            Reorder::parse("0.25, 1.5ms").unwrap().unwrap().delay,
            Duration::from_micros(1500)
        );
        assert_eq!(Reorder::parse("off").unwrap(), None);
        for bad in ["1%", "1%,5", "150%,5ms", "x,5ms", "1%,0ms", "1%,2m"] {
            let e = Reorder::parse(bad).unwrap_err().to_string();
            assert!(e.contains("reorder"), "{bad}: {e}");
        }
    }
}
