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
    /// The whole fetch took longer than `Timeouts::total`.
    #[error("fetch did not finish within {:.1} s", .0.as_secs_f64())]
    TotalTimeout(Duration),
    /// The server kept closing connections without answering.
    #[error("gave up after {reconnects} reconnections: the server keeps closing connections with requests unanswered (next unanswered: {url})")]
    TooManyReconnects { reconnects: usize, url: String },
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
