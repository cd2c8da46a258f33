//! The simulator's readings of the places where paper 003's text is open or
//! where pagewire first chose differently (docs/prefetch.md, "Definitions:
//! paper 003 against pagewire"). Each is a `pagewire prefetch simulate` flag;
//! the defaults are the readings the results in `docs/prefetch/` were made
//! with.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Why a variant flag's value was rejected: it names the values allowed.
#[derive(Debug, thiserror::Error)]
#[error("`{given}`: use one of {allowed}")]
pub struct VariantError {
    pub given: String,
    pub allowed: &'static str,
}

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub enum $name {
            #[default]
            $($(#[$vm])* $v),+
        }

        impl $name {
            /// Every value, the default first.
            pub const ALL: &'static [$name] = &[$($name::$v),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s),+
                }
            }
        }

        impl FromStr for $name {
            type Err = VariantError;

            fn from_str(s: &str) -> Result<Self, VariantError> {
                match s {
                    $($s => Ok($name::$v),)+
                    _ => Err(VariantError {
                        given: s.to_string(),
                        allowed: concat!($($s, " "),+),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

named_enum! {
    /// When the weights that decide a prefetch are read, relative to counting
    /// the request that triggers it.
    ///
    /// Paper 003 §8 takes p = 1.1 as "no prefetching" because "the weight on
    /// an arc ... can never exceed 1.0": p = 1.0 is then a point that still
    /// prefetches, so a weight of exactly 1.0 must be reachable. Only
    /// `before` allows it; it is the default.
    WeightTiming {
        /// Before it is counted: the graph as the request found it (A's
        /// earlier requests only); an A whose every earlier request was
        /// followed by B gives weight(A -> B) = 1.0.
        Before = "before",
        /// After the request for A is counted: weight = credits / (requests
        /// for A including this one). This request's successors are not yet
        /// known, so a weight of 1.0 can never be seen and p = 1.0 prefetches
        /// nothing (the reading pagewire used before; kept as an option).
        After = "after",
    }
}

named_enum! {
    /// How a weight is compared with p.
    ThresholdRule {
        /// weight >= p (within 1e-9).
        AtLeast = "ge",
        /// weight > p, the paper's words: "a weight higher than the prefetch
        /// threshold p" (§7.2).
        Above = "gt",
    }
}

named_enum! {
    /// What "network traffic" counts, and whether a prefetch that a later
    /// request used still counts beside the demand fetch it replaced.
    TrafficMeasure {
        /// Bytes actually sent: demand misses + prefetches, over the bytes of
        /// demand misses without prefetching.
        NetBytes = "net-bytes",
        /// Every prefetched byte counted as extra: prefetched bytes over the
        /// bytes of demand misses without prefetching (as if every logged
        /// request were still served).
        GrossBytes = "gross-bytes",
        /// As net-bytes, in 8 KB cache blocks (the unit of the miss rate).
        NetBlocks = "net-blocks",
        /// As gross-bytes, in cache blocks.
        GrossBlocks = "gross-blocks",
        /// As net-bytes, in files (requests).
        NetFiles = "net-files",
        /// As gross-bytes, in files (requests).
        GrossFiles = "gross-files",
    }
}

named_enum! {
    /// Which log lines are file accesses (they train the graph, fill the
    /// windows and count towards the 50,000 / 70,000 split).
    Entries {
        /// GET with status 200, 203, 206 or 304.
        Files = "files",
        /// Every GET, whatever its status.
        Get = "get",
        /// Every request line read.
        All = "all",
    }
}

named_enum! {
    /// When and how the realistic model's prefetches run (§8.2). A prefetch
    /// that cannot complete before the host's next request in the log is
    /// filtered out ("too late": no cache entry, no traffic) in every case.
    Schedule {
        /// The advice for A arrives with A, so prefetching starts when A has
        /// arrived (at once on a hit, after a + b·size(A) on a miss), and the
        /// advised files are fetched one after another, best first, each
        /// taking a + b·x; once one cannot finish in time, none after it can.
        Serial = "serial",
        /// As serial, but the advised files start together when A has
        /// arrived, each paying a, and share the bandwidth (1/b) equally
        /// until each is done.
        Shared = "shared",
        /// pagewire's first model: each advised file starts when A is
        /// requested and is checked on its own (a + b·x against the gap), as
        /// if fetched in parallel with unlimited bandwidth and without waiting
        /// for A.
        Independent = "independent",
    }
}

/// The simulator's readings of the paper (one value per open question).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Variant {
    pub weights: WeightTiming,
    pub threshold: ThresholdRule,
    pub traffic: TrafficMeasure,
    pub entries: Entries,
    /// The realistic model's prefetch schedule.
    pub schedule: Schedule,
    /// Empty a host's lookahead window when it has been silent this long
    /// (the paper keeps buffers for clients "currently connected"); `None`:
    /// never.
    pub window_reset_s: Option<f64>,
}

impl Variant {
    /// `weights before, threshold ge, traffic net-bytes, entries files,
    /// realistic schedule serial, window reset never`.
    pub fn describe(&self) -> String {
        format!(
            "weights read {} counting the request, threshold {}, traffic {}, entries {}, realistic schedule {}, window reset {}",
            self.weights,
            self.threshold,
            self.traffic,
            self.entries,
            self.schedule,
            match self.window_reset_s {
                Some(s) => format!("after {s} s of silence"),
                None => "never".to_string(),
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors_list_the_values() {
        for t in TrafficMeasure::ALL {
            assert_eq!(t.as_str().parse::<TrafficMeasure>().unwrap(), *t);
        }
        assert_eq!(TrafficMeasure::default(), TrafficMeasure::NetBytes);
        assert_eq!(WeightTiming::default(), WeightTiming::Before);
        assert_eq!("gt".parse::<ThresholdRule>().unwrap(), ThresholdRule::Above);
        let e = "bytes".parse::<TrafficMeasure>().unwrap_err().to_string();
        assert!(e.contains("net-bytes") && e.contains("gross-files"), "{e}");
        assert!(Variant::default().describe().contains("window reset never"));
    }
}
