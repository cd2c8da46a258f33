//! Predictor parameters `w`, `p`, `i` (paper 003 §7.2 and §8).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Largest lookahead window accepted. The per-request work of the predictor is
/// O(w) and each client's ring buffer holds `w` ids; the paper sweeps w = 2..10,
/// so 64 leaves ample room while keeping both bounded.
pub const MAX_WINDOW: usize = 64;

/// Tolerance used when comparing an arc weight with the threshold `p`. The sweep
/// produces `p` as decimal fractions (0.3 is not exactly representable), while
/// weights are exact ratios of counts, so `3/10 >= 0.30000000000000004` must
/// still count as "weight >= p".
pub const THRESHOLD_EPSILON: f64 = 1e-9;

/// The three knobs of the paper's predictor.
///
/// * `window` (w): lookahead window; B is related to A when B is among the
///   `w - 1` requests the same client makes after A (w = 2 looks one step ahead).
/// * `threshold` (p): an arc A->B is a candidate when its weight is >= p.
///   Weights never exceed 1.0, so p > 1 (the paper's 1.1) disables prefetching.
/// * `max_hints` (i): at most this many candidates, best first (see
///   [`MaxCandidates`]; `All` is the paper's "i = ∞").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrefetchParams {
    pub window: usize,
    pub threshold: f64,
    pub max_hints: MaxCandidates,
}

/// The predictor's `i`: how many candidates (prefetch hints) to give at most,
/// best first. Spelled `1`, `2`, ... or `all` on the command line, in CSV and
/// in JSON (a string there, as before: `"1"`, `"all"`). Orders as numbers,
/// with `All` last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MaxCandidates {
    /// At most this many (>= 1).
    Limit(NonZeroU32),
    /// No limit: every arc that passes the threshold.
    All,
}

impl MaxCandidates {
    /// i = 1.
    pub const ONE: MaxCandidates = MaxCandidates::Limit(NonZeroU32::MIN);
    /// i = 2.
    pub const TWO: MaxCandidates = match NonZeroU32::new(2) {
        Some(n) => MaxCandidates::Limit(n),
        None => unreachable!(),
    };

    /// `Limit(n)` for n >= 1; `None` for 0.
    pub fn limit(n: u32) -> Option<Self> {
        NonZeroU32::new(n).map(MaxCandidates::Limit)
    }

    /// How many candidates to take: `n`, or `usize::MAX` for `All`.
    #[inline]
    pub fn count(self) -> usize {
        match self {
            MaxCandidates::Limit(n) => n.get() as usize,
            MaxCandidates::All => usize::MAX,
        }
    }
}

impl FromStr for MaxCandidates {
    type Err = ParamsError;

    /// `all` / `inf` / `unlimited` / `∞` -> `All`; a positive integer ->
    /// `Limit(n)`.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "all" | "inf" | "unlimited" | "∞" => Ok(MaxCandidates::All),
            n => n
                .parse::<u32>()
                .ok()
                .and_then(MaxCandidates::limit)
                .ok_or_else(|| ParamsError::MaxHints(n.to_string())),
        }
    }
}

impl fmt::Display for MaxCandidates {
    /// `1`, `2`, ... or `all`: the way the CLI, CSV and JSON spell it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MaxCandidates::Limit(n) => write!(f, "{n}"),
            MaxCandidates::All => f.write_str("all"),
        }
    }
}

impl Serialize for MaxCandidates {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MaxCandidates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Default for PrefetchParams {
    /// w = 4, p = 0.5, i = 2: the paper's most promising window (§8.1: "w = 4
    /// looks most promising"), a middle threshold and a short hint list so a
    /// response header stays small.
    fn default() -> Self {
        PrefetchParams {
            window: 4,
            threshold: 0.5,
            max_hints: MaxCandidates::TWO,
        }
    }
}

impl PrefetchParams {
    /// Checks the ranges; every constructor path goes through here.
    pub fn validate(&self) -> Result<(), ParamsError> {
        if self.window < 2 || self.window > MAX_WINDOW {
            return Err(ParamsError::Window(self.window));
        }
        if !self.threshold.is_finite() || self.threshold < 0.0 {
            return Err(ParamsError::Threshold(self.threshold.to_string()));
        }
        Ok(())
    }

    /// True when `weight` passes the threshold (weight >= p, see
    /// [`THRESHOLD_EPSILON`]).
    #[inline]
    pub fn passes(&self, weight: f64) -> bool {
        weight >= self.threshold - THRESHOLD_EPSILON
    }

    /// True when no arc can ever pass (p > 1): the paper's "no prefetching".
    pub fn disabled(&self) -> bool {
        self.threshold > 1.0 + THRESHOLD_EPSILON
    }
}

/// Why a parameter string was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    #[error("window w={0} out of range: must be 2..={MAX_WINDOW} (w=2 looks one request ahead)")]
    Window(usize),
    #[error("threshold p={0} invalid: must be a number >= 0 (p=1.1 disables prefetching)")]
    Threshold(String),
    #[error("max hints i={0} invalid: must be a positive integer or `all`")]
    MaxHints(String),
    #[error("unknown key `{0}` in prefetch parameters (expected w, p, i)")]
    UnknownKey(String),
    #[error("expected key=value in prefetch parameters, got `{0}` (example: w=4,p=0.5,i=2)")]
    Syntax(String),
    #[error("invalid window `{0}`: not an integer")]
    WindowSyntax(String),
}

impl FromStr for PrefetchParams {
    type Err = ParamsError;

    /// Parses `w=4,p=0.5,i=2`; `i=all` means unlimited. Keys may come in any
    /// order and may be omitted (they keep their [`Default`]); `window`,
    /// `threshold` and `max_hints` are accepted as long names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut params = PrefetchParams::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| ParamsError::Syntax(part.to_string()))?;
            let (key, value) = (key.trim(), value.trim());
            match key {
                "w" | "window" => {
                    params.window = value
                        .parse()
                        .map_err(|_| ParamsError::WindowSyntax(value.to_string()))?;
                }
                "p" | "threshold" => {
                    params.threshold = value
                        .parse()
                        .map_err(|_| ParamsError::Threshold(value.to_string()))?;
                }
                "i" | "max_hints" => {
                    params.max_hints = value.parse()?;
                }
                other => return Err(ParamsError::UnknownKey(other.to_string())),
            }
        }
        params.validate()?;
        Ok(params)
    }
}

impl fmt::Display for PrefetchParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "w={},p={},i={}",
            self.window, self.threshold, self.max_hints
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_contract_example() {
        let p: PrefetchParams = "w=4,p=0.5,i=2".parse().unwrap();
        assert_eq!(
            p,
            PrefetchParams {
                window: 4,
                threshold: 0.5,
                max_hints: MaxCandidates::limit(2).unwrap()
            }
        );
        assert_eq!(p.to_string(), "w=4,p=0.5,i=2");
    }

    #[test]
    fn parses_all_and_any_order() {
        let p: PrefetchParams = "i=all, p=0.7 ,w=10".parse().unwrap();
        assert_eq!(p.window, 10);
        assert_eq!(p.threshold, 0.7);
        assert_eq!(p.max_hints, MaxCandidates::All);
        assert_eq!(p.to_string(), "w=10,p=0.7,i=all");
        let round: PrefetchParams = p.to_string().parse().unwrap();
        assert_eq!(round, p);
    }

    #[test]
    fn rejects_bad_values_with_reasons() {
        assert!(matches!(
            "w=1".parse::<PrefetchParams>(),
            Err(ParamsError::Window(1))
        ));
        assert!(matches!(
            "w=65".parse::<PrefetchParams>(),
            Err(ParamsError::Window(65))
        ));
        assert!(matches!(
            "p=-0.1".parse::<PrefetchParams>(),
            Err(ParamsError::Threshold(_))
        ));
        assert!(matches!(
            "p=nan".parse::<PrefetchParams>(),
            Err(ParamsError::Threshold(_))
        ));
        assert!(matches!(
            "i=0".parse::<PrefetchParams>(),
            Err(ParamsError::MaxHints(_))
        ));
        assert!(matches!(
            "x=1".parse::<PrefetchParams>(),
            Err(ParamsError::UnknownKey(_))
        ));
        assert!(matches!(
            "w4".parse::<PrefetchParams>(),
            Err(ParamsError::Syntax(_))
        ));
    }

    #[test]
    fn max_candidates_spellings_order_and_serde() {
        let two: MaxCandidates = "2".parse().unwrap();
        assert_eq!(two, MaxCandidates::limit(2).unwrap());
        assert_eq!(two.count(), 2);
        for all in ["all", "inf", "unlimited", "∞"] {
            assert_eq!(all.parse::<MaxCandidates>().unwrap(), MaxCandidates::All);
        }
        assert_eq!(MaxCandidates::All.count(), usize::MAX);
        for bad in ["0", "-1", "x", "", "1.5", "4294967296"] {
            assert!(
                matches!(bad.parse::<MaxCandidates>(), Err(ParamsError::MaxHints(_))),
                "{bad}"
            );
        }
        assert!(MaxCandidates::limit(1).unwrap() < two && two < MaxCandidates::All);
        assert_eq!(two.to_string(), "2");
        assert_eq!(MaxCandidates::All.to_string(), "all");
        assert_eq!(
            serde_json::to_string(&MaxCandidates::All).unwrap(),
            "\"all\""
        );
        assert_eq!(serde_json::to_string(&two).unwrap(), "\"2\"");
        let back: MaxCandidates = serde_json::from_str("\"2\"").unwrap();
        assert_eq!(back, two);
        assert!(serde_json::from_str::<MaxCandidates>("\"0\"").is_err());
    }

    #[test]
    fn p_above_one_disables() {
        let p: PrefetchParams = "p=1.1".parse().unwrap();
        assert!(p.disabled());
        assert!(!p.passes(1.0));
        let p: PrefetchParams = "p=0.3".parse().unwrap();
        // 3/10 is "0.3" even though 0.1 * 3 != 0.3 in binary floating point.
        assert!(p.passes(3.0 / 10.0));
    }
}
