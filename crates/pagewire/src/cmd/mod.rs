//! One module per command; each owns its `Args` and `run`.
//!
//! Exit status, for every command: 0 ok; 1 the run or a check failed (the
//! error, or the failed runs, are reported); 2 a usage error (a flag's value
//! or a combination of flags: nothing was run); 130 interrupted (SIGINT,
//! SIGTERM or SIGHUP; what was done is reported). An error is a usage error
//! when it is a [`Usage`] or names a flag first; any other error is a
//! failure.
pub mod bench;
pub mod browse;
pub mod claims;
pub mod fetch;
pub mod link;
pub mod linkopts;
pub mod load;
pub mod model;
pub mod pack;
pub mod prefetch;
pub mod record;
pub mod replay;
pub mod serve;
pub mod shell;
pub mod site;
pub mod throttle;
pub mod unpack;

/// Every `--seed`'s default (the Microscape page's, paper 001's year): the
/// page, link loss and jitter, the SURGE request stream and the prefetch
/// walks. `site surge --seed` alone differs: the file set's seed
/// (`pagewire_load::fileset::DEFAULT_SEED`), the set `bench surge` serves.
pub const DEFAULT_SEED: u64 = pagewire_site::microscape::DEFAULT_SEED;

/// A wrong flag value or combination: exit 2, nothing was run.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A usage error (exit 2) with this message.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// Any error, as a usage error (for flag parsers that return `anyhow`).
pub fn usage_from(e: anyhow::Error) -> anyhow::Error {
    if e.downcast_ref::<Usage>().is_some() {
        return e;
    }
    usage(format!("{e:#}"))
}

/// `return Err(usage(format!(...)))`.
#[macro_export]
macro_rules! usage_bail {
    ($($t:tt)*) => {
        return Err($crate::cmd::usage(format!($($t)*)))
    };
}

/// Whether an error is a usage error: a [`Usage`] anywhere in its chain,
/// or an error that names a flag first (`--ues must be at least 1`), the
/// convention of every flag check in the library crates.
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<Usage>().is_some()) || e.to_string().starts_with("--")
}

/// A duration flag's value parser: the shared syntax (a number with a
/// unit), and a value with a minus sign is "must be positive" (clap would
/// otherwise read `-5ms` as a flag and suggest `-- -5ms`). Flags using it
/// set `allow_hyphen_values = true`.
pub fn positive_duration(s: &str) -> Result<std::time::Duration, String> {
    if s.trim_start().starts_with('-') {
        return Err(format!(
            "{s:?}: a duration must be positive (e.g. 50ms, 1.5s)"
        ));
    }
    pagewire_link::config::parse_duration(s).map_err(|e| e.to_string())
}

/// `--strategy` of `record` and `replay`: one of the strategies whose
/// answers can be recorded as sent (no content coding, no packages).
pub fn recording_strategy(s: &str) -> Result<pagewire_client::Strategy, String> {
    use pagewire_client::Strategy;
    if s.contains(',') {
        // fetch and bench take a list; an archive holds one visit.
        return Err(format!(
            "{s:?}: one strategy here (the archive holds one visit and its waterfall); \
             `fetch` and `bench` take a comma-separated list"
        ));
    }
    let st: Strategy = s.parse().map_err(|e| format!("{e}"))?;
    match st {
        Strategy::Http10 | Strategy::Http11 | Strategy::Pipeline => Ok(st),
        _ => Err(format!(
            "record fetches with http10, http11 or pipeline, not {st} (it would record coded or packaged answers)"
        )),
    }
}
