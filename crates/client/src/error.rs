//! Why a fetch failed. Errors about one object name it (paper 001's robot
//! fetches 43 objects; "the fetch failed" alone would not say which).

use std::time::Duration;

/// A failed fetch.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The configuration or URL is unusable.
    #[error("{0}")]
    Config(String),
    /// The server could not be reached.
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// One object's response was malformed, truncated, or never came.
    #[error("{url}: {reason}")]
    Object { url: String, reason: String },
    /// Nothing arrived for too long.
    #[error("{url}: no data for {:.1} s (read timeout) while waiting for its response", .after.as_secs_f64())]
    ReadTimeout { url: String, after: Duration },
    /// One response took longer than `Timeouts::object`.
    #[error("{url}: response not complete after {:.1} s (object deadline; {received} bytes of it received)", .after.as_secs_f64())]
    ObjectDeadline {
        url: String,
        after: Duration,
        received: u64,
    },
    /// Bytes came, but slower than `Timeouts::min_rate`.
    #[error("{url}: only {received} bytes in {:.1} s while waiting for its response (below the minimum rate of {min_rate} B/s)", .window.as_secs_f64())]
    TooSlow {
        url: String,
        received: u64,
        window: Duration,
        min_rate: u64,
    },
    /// The whole fetch took longer than `Timeouts::total`.
    #[error("fetch did not finish within {:.1} s (still waiting for {})", .0.as_secs_f64(), .1)]
    TotalTimeout(Duration, String),
    /// The server kept closing connections without answering.
    #[error("{url}: gave up after {reconnects} reconnections: the server keeps ending connections with requests unanswered (last: {last})")]
    TooManyReconnects {
        reconnects: usize,
        url: String,
        /// How the last connection ended, in the server's terms
        /// ("connection reset ...", "the server closed the connection ...").
        last: String,
    },
    /// A local I/O problem (cache directory, save directory).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl FetchError {
    pub(crate) fn object(url: &str, reason: impl Into<String>) -> Self {
        FetchError::Object {
            url: url.to_string(),
            reason: reason.into(),
        }
    }
}
