//! Recorded sites: what `pagewire serve --replay FILE` serves and what
//! `pagewire record` writes.
//!
//! An [`Archive`] is a list of [`Exchange`]s (method, absolute URL, status,
//! recorded response fields, body with its transfer framing removed), read
//! from a WARC file (WARC/1.0 or 1.1, `request` + `response` records, plain
//! or gzip per record) with the `warc` crate, or from a HAR 1.2 document
//! with response bodies (`content.text`, optionally `encoding: base64`).
//! [`warc_io::write`] writes exchanges as WARC/1.1 request + response
//! records (`.warc.gz`: one gzip member per record, as web archives do).
//!
//! [`key`] is how a request finds its recorded answer: method, authority
//! (lower case, default port dropped) and request target (path and query,
//! as sent). Any number of origins live in one archive; the server tells
//! them apart by `Host`.

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]

pub mod har;
pub mod warc_io;

use std::path::Path;

pub use bytes::Bytes;

/// An archive could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArchiveError(pub String);

impl ArchiveError {
    pub(crate) fn new(s: impl Into<String>) -> ArchiveError {
        ArchiveError(s.into())
    }
}

/// Most exchanges an archive may hold (a page with its objects has tens to
/// hundreds; this bounds a runaway file).
pub const MAX_EXCHANGES: usize = 100_000;

/// Most body bytes an archive may hold in total (everything is in memory).
pub const MAX_TOTAL_BODY_BYTES: u64 = 2 << 30;

/// One recorded request and its response.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// Request method as recorded (`GET`, `HEAD`, ...).
    pub method: String,
    /// Absolute URL (`http://host[:port]/path?query`; `https` is kept as
    /// written and served over plain HTTP).
    pub url: String,
    /// The request head as sent, when the archive has it (WARC `request`
    /// records; `pagewire record` writes them).
    pub request_head: Option<Bytes>,
    pub status: u16,
    /// Reason phrase as recorded (may be empty).
    pub reason: String,
    /// Response fields in recorded order, without `Transfer-Encoding`
    /// (the body below is already de-chunked).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The message body as the client received it, transfer coding removed,
    /// content coding (`Content-Encoding`) kept.
    pub body: Bytes,
    /// When it crossed the wire at recording, and the server's think time
    /// (`pagewire record` writes it; other archives have none).
    pub timing: Option<Timing>,
}

/// One exchange's place in the recorded waterfall, milliseconds from the
/// start of the page fetch, and the server's think time derived from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The request left the client.
    pub sent_ms: f64,
    /// The response's first byte arrived.
    pub first_byte_ms: f64,
    /// Its last byte arrived.
    pub done_ms: f64,
    /// The round-trip time measured on its connection (the TCP handshake).
    pub rtt_ms: f64,
    /// Server think time: from the earliest moment the first byte could
    /// have arrived without any (the request sent plus one RTT, or the
    /// previous response on the connection done, whichever is later) to
    /// the first byte that did.
    pub server_ms: f64,
}

/// The WARC field of a response record that carries its [`Timing`]
/// (an extension field, as ISO 28500 §5.1 allows).
pub const TIMING_FIELD: &str = "WARC-Pagewire-Timing";

impl Timing {
    /// `sent=1.000 first-byte=2.000 done=3.000 rtt=0.100 server=0.900`.
    pub fn to_field(&self) -> String {
        format!(
            "sent={:.3} first-byte={:.3} done={:.3} rtt={:.3} server={:.3}",
            self.sent_ms, self.first_byte_ms, self.done_ms, self.rtt_ms, self.server_ms
        )
    }

    /// Parses [`Timing::to_field`]'s form; every member must be present,
    /// finite and not negative.
    pub fn parse_field(s: &str) -> Result<Timing, String> {
        let mut vals = [None; 5];
        let names = ["sent", "first-byte", "done", "rtt", "server"];
        for part in s.split_ascii_whitespace() {
            let (n, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not name=value"))?;
            let Some(i) = names.iter().position(|x| *x == n) else {
                continue; // a later writer's member
            };
            let x: f64 = v
                .parse()
                .map_err(|_| format!("{n}={v:?} is not a number"))?;
            if !x.is_finite() || x < 0.0 {
                return Err(format!("{n}={v} is not a finite, non-negative number"));
            }
            vals[i] = Some(x);
        }
        let get = |i: usize| vals[i].ok_or_else(|| format!("no {}= member", names[i]));
        Ok(Timing {
            sent_ms: get(0)?,
            first_byte_ms: get(1)?,
            done_ms: get(2)?,
            rtt_ms: get(3)?,
            server_ms: get(4)?,
        })
    }
}

impl Exchange {
    /// The first value of response field `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The lookup key of this exchange.
    pub fn key(&self) -> Option<Key> {
        let (scheme, authority, target) = split_url(&self.url)?;
        Some(key(&self.method, scheme, authority, target))
    }
}

/// A recorded site.
#[derive(Debug, Clone, Default)]
pub struct Archive {
    pub exchanges: Vec<Exchange>,
    /// Records that were not turned into exchanges, with the reason (at
    /// most [`MAX_NOTES`] kept; `skipped_total` counts all).
    pub skipped: Vec<String>,
    pub skipped_total: usize,
    /// The fields of the archive's `warcinfo` records (name, value), in
    /// order: what made it and, for `pagewire record`, the conditions it
    /// was recorded under ([`RECORDED_LINK_FIELD`], ...).
    pub info: Vec<(String, String)>,
}

/// The `warcinfo` field in which `pagewire record` names the link the
/// recording browser was on: `none` (loopback), or the emulated link's
/// configuration as one line of JSON (`record --net`).
pub const RECORDED_LINK_FIELD: &str = "pagewire-recorded-link";

/// Most skip notes an archive keeps.
pub const MAX_NOTES: usize = 20;

impl Archive {
    pub(crate) fn skip(&mut self, why: String) {
        self.skipped_total += 1;
        if self.skipped.len() < MAX_NOTES {
            self.skipped.push(why);
        }
    }

    /// The value of the first `warcinfo` field named `name` (any case).
    pub fn info_field(&self, name: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn push(&mut self, e: Exchange, total: &mut u64) -> Result<(), ArchiveError> {
        if self.exchanges.len() >= MAX_EXCHANGES {
            return Err(ArchiveError::new(format!(
                "more than {MAX_EXCHANGES} exchanges in the archive"
            )));
        }
        *total += e.body.len() as u64;
        if *total > MAX_TOTAL_BODY_BYTES {
            return Err(ArchiveError::new(format!(
                "the archive's bodies exceed {MAX_TOTAL_BODY_BYTES} bytes"
            )));
        }
        self.exchanges.push(e);
        Ok(())
    }

    /// Reads a WARC (`.warc`, `.warc.gz`) or HAR (`.har`, or a file that
    /// starts with `{`) archive.
    pub fn load(path: &Path) -> Result<Archive, ArchiveError> {
        let bytes = std::fs::read(path)
            .map_err(|e| ArchiveError::new(format!("cannot read {}: {e}", path.display())))?;
        let name = path.to_string_lossy().to_ascii_lowercase();
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
        let result = if name.ends_with(".har") || first == Some(b'{') {
            har::read(&bytes)
        } else {
            warc_io::read(&bytes)
        };
        result.map_err(|e| ArchiveError::new(format!("{}: {}", path.display(), e.0)))
    }

    /// The first exchange whose URL is `url` (method GET), if any.
    pub fn find(&self, url: &str) -> Option<&Exchange> {
        self.exchanges
            .iter()
            .find(|e| e.url == url && e.method.eq_ignore_ascii_case("GET"))
    }
}

/// What a request is matched by: method, authority, target.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub method: String,
    pub authority: String,
    pub target: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} http://{}{}",
            self.method, self.authority, self.target
        )
    }
}

/// The key of a request: method (upper case), authority (lower case,
/// without the scheme's default port) and target (an empty one is `/`).
pub fn key(method: &str, scheme: &str, authority: &str, target: &str) -> Key {
    Key {
        method: method.to_ascii_uppercase(),
        authority: normalize_authority(scheme, authority),
        target: if target.is_empty() {
            "/".to_string()
        } else {
            target.to_string()
        },
    }
}

/// Lower case, default port dropped (`:80` for http, `:443` for https; a
/// request's `Host` is normalized with scheme `http`, and an `https`
/// record's authority without its default port matches it too).
pub fn normalize_authority(scheme: &str, authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    let default = if scheme.eq_ignore_ascii_case("https") {
        ":443"
    } else {
        ":80"
    };
    match a.strip_suffix(default) {
        Some(stripped) if !stripped.is_empty() => stripped.to_string(),
        _ => a,
    }
}

/// Splits `scheme://authority/target` (the fragment dropped).
pub fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let rest = rest.split('#').next().unwrap_or(rest);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, target) = rest.split_at(end);
    if authority.is_empty() {
        return None;
    }
    Some((scheme, authority, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_normalize() {
        let k = key("get", "http", "Example.TEST:80", "");
        assert_eq!(k.to_string(), "GET http://example.test/");
        let k = key("GET", "https", "a.test:443", "/x?y=1");
        assert_eq!(
            (k.authority.as_str(), k.target.as_str()),
            ("a.test", "/x?y=1")
        );
        assert_eq!(normalize_authority("http", "a.test:8080"), "a.test:8080");
        assert_eq!(split_url("http://h:1/p?q#f"), Some(("http", "h:1", "/p?q")));
        assert_eq!(split_url("http:///p"), None);
    }

    #[test]
    fn timing_fields_round_trip_and_refuse_garbage() {
        let t = Timing {
            sent_ms: 1.5,
            first_byte_ms: 103.25,
            done_ms: 110.0,
            rtt_ms: 0.125,
            server_ms: 101.625,
        };
        assert_eq!(Timing::parse_field(&t.to_field()), Ok(t));
        assert!(Timing::parse_field("sent=1 first-byte=2 done=3 rtt=0").is_err());
        assert!(Timing::parse_field("sent=1 first-byte=2 done=3 rtt=0 server=-1").is_err());
        assert!(Timing::parse_field("sent=1 first-byte=x done=3 rtt=0 server=1").is_err());
        assert!(Timing::parse_field("sent=1 first-byte=2 done=3 rtt=0 server=NaN").is_err());
        // Unknown members are ignored.
        assert!(Timing::parse_field("sent=1 first-byte=2 done=3 rtt=0 server=1 x=9").is_ok());
    }
}
