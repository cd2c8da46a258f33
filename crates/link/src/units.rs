//! The leaf every configuration module shares: the error type, the one
//! duration syntax of the command line, and its JSON form. It imports no
//! other module of the crate, so `config` and the stages it configures
//! (`loss`, `qdisc`, `reorder`) depend on it without depending on each
//! other in a cycle.

use std::time::Duration;

/// Errors in a configuration value or a trace file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown profile {0:?} (known: lan, lan100, t1, wan, ppp, none; +codel, +pie or +fq-codel adds a queue discipline)")]
    UnknownProfile(String),
    #[error("invalid {what} {value:?}: {why}")]
    Invalid {
        what: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("trace {path}: line {line}: {why}")]
    Trace {
        path: String,
        line: usize,
        why: String,
    },
    #[error("trace {path}")]
    TraceIo {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn invalid(what: &'static str, value: &str, why: &'static str) -> ConfigError {
    ConfigError::Invalid {
        what,
        value: value.to_string(),
        why,
    }
}

pub(crate) fn ser_duration_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Longest duration any flag takes.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// The one duration syntax of every command-line flag: a decimal number and
/// a unit, `us`, `ms`, `s`, `m` or `h` (`250us`, `50ms`, `1.5s`, `2m`), from 0
/// to 24 h. A bare number is rejected: flags used to read it as milliseconds
/// or as seconds, and a wrong guess would be off by 1000.
pub fn parse_duration(s: &str) -> Result<Duration, ConfigError> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let scale = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => {
            return Err(invalid(
                "duration",
                s,
                "needs a unit: us, ms, s, m or h (e.g. 50ms, 1.5s, 2m)",
            ))
        }
        _ => {
            return Err(invalid(
                "duration",
                s,
                "unknown unit (us, ms, s, m or h; e.g. 50ms, 1.5s, 2m)",
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| invalid("duration", s, "expected e.g. 50ms, 1.5s, 2m"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs <= MAX_DURATION.as_secs_f64()) {
        return Err(invalid("duration", s, "must be between 0 and 24 h"));
    }
    Ok(Duration::from_secs_f64(secs))
}
