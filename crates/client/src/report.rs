//! What a fetch measured: one `FetchReport` per fetch, serde-serializable
//! (the `--json` output and the bench's input), plus its human summary.
//! Computing is separate from printing (ripgrep style).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bytes::Bytes;

use crate::config::{duration_ms, Strategy, Timeouts};
use crate::outbuf::FlushReason;

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A full response with a body (200, or an error status with its body).
    Fetched,
    /// Revalidated: 304 to a conditional GET, or a HEAD whose validators
    /// match the cache (the HTTP/1.0 robot); the body came from the cache.
    NotModified,
    /// A HEAD showed the object changed; it was fetched again with GET.
    Changed,
    /// Arrived as a part of the page's GETALL answer (no request of its own).
    GetallPart,
    /// `getall` on a later visit: in the cache, so not requested at all.
    FromCache,
}

/// Why an object was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectKind {
    Page,
    Embedded,
    /// Fetched because of a `Link: rel=prefetch` hint (`Sec-Purpose: prefetch`).
    Prefetch,
}

/// Method of a request the robot sent (it sends no others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RequestMethod {
    Get,
    /// HTTP/1.0 revalidation (paper 001 "Revalidate Test").
    Head,
    /// `getall`: the objects a later visit lacks, in one request
    /// (Padmanabhan & Mogul's GETLIST, docs/getall.md).
    Getlist,
}

impl RequestMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestMethod::Get => "GET",
            RequestMethod::Head => "HEAD",
            RequestMethod::Getlist => "GETLIST",
        }
    }

    /// The codec's method (a HEAD response has no body).
    pub fn h1(self) -> pagewire_h1::Method {
        match self {
            RequestMethod::Get => pagewire_h1::Method::Get,
            RequestMethod::Head => pagewire_h1::Method::Head,
            // Framed like a GET's: the answer has a Content-Length body.
            RequestMethod::Getlist => pagewire_h1::Method::Get,
        }
    }
}

impl std::fmt::Display for RequestMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a connection ended; serialized as the text the records always had
/// ("done", "server closed, N requests unanswered", "error: ...", "" while
/// open).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConnEnd {
    /// Still open (a report taken mid-fetch).
    #[default]
    Open,
    /// Every request on it was answered.
    Done,
    /// The server closed it with requests unanswered (they were re-sent).
    ServerClosed { unanswered: usize },
    /// The fetch failed on it.
    Error(String),
}

impl std::fmt::Display for ConnEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnEnd::Open => Ok(()),
            ConnEnd::Done => f.write_str("done"),
            ConnEnd::ServerClosed { unanswered } => {
                write!(f, "server closed, {unanswered} requests unanswered")
            }
            ConnEnd::Error(e) => write!(f, "error: {e}"),
        }
    }
}

impl serde::Serialize for ConnEnd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One object of the fetch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ObjectRecord {
    pub url: String,
    pub kind: ObjectKind,
    /// Method of the last request for it (`GET`, or `HEAD` for HTTP/1.0
    /// revalidation).
    pub method: RequestMethod,
    pub status: u16,
    pub outcome: Outcome,
    /// Size of the object's content (after any Content-Encoding), from the
    /// response or, when not modified, from the cache.
    pub size: u64,
    /// SHA-256 (hex) of that content.
    pub sha256: String,
    /// Message body bytes that crossed the wire for it (0 for 304 / HEAD).
    pub body_bytes_received: u64,
    pub header_bytes_received: u64,
    pub request_bytes_sent: u64,
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// Connection (index into `connections`) that answered it.
    pub connection: usize,
    /// How many times it was requested (more than 1 only after a server
    /// closed a connection before answering).
    pub attempts: u32,
    /// Milliseconds since the fetch started: request buffered, first
    /// response byte, last response byte.
    pub requested_ms: f64,
    pub first_byte_ms: f64,
    pub done_ms: f64,
    /// When the request left the robot's output buffer (the flush that
    /// carried it); None when it was written at once or never sent (an
    /// object that came in a package or from the cache). The wait from
    /// `requested_ms` is the robot's own (pipeline flush timer), not the
    /// server's.
    pub sent_ms: Option<f64>,
    #[serde(skip)]
    pub request_head: String,
    #[serde(skip)]
    pub response_headers: Vec<(String, String)>,
    #[serde(skip)]
    pub http_version: &'static str,
    /// The content, when `FetchConfig::keep_bodies` (not serialized).
    #[serde(skip)]
    pub body: Option<Bytes>,
    /// Where its reference was found: the URL of the page or of the
    /// stylesheet (`None` for the page itself and prefetched objects).
    pub found_in: Option<String>,
    /// The discovery rule that found it (`img src`, `@import`, `@font-face
    /// src`, ...; see `pagewire_discover::Rule`).
    pub found_by: Option<&'static str>,
}

impl ObjectRecord {
    /// The one constructor of a record: the object, the method of its last
    /// request, the status and the outcome; sizes, validators and times
    /// zero or none until the caller sets them (struct update syntax).
    pub fn new(
        url: String,
        kind: ObjectKind,
        method: RequestMethod,
        status: u16,
        outcome: Outcome,
    ) -> ObjectRecord {
        ObjectRecord {
            url,
            kind,
            method,
            status,
            outcome,
            size: 0,
            sha256: String::new(),
            body_bytes_received: 0,
            header_bytes_received: 0,
            request_bytes_sent: 0,
            content_type: None,
            content_encoding: None,
            etag: None,
            last_modified: None,
            connection: 0,
            attempts: 0,
            requested_ms: 0.0,
            first_byte_ms: 0.0,
            done_ms: 0.0,
            sent_ms: None,
            request_head: String::new(),
            response_headers: Vec::new(),
            http_version: "",
            body: None,
            found_in: None,
            found_by: None,
        }
    }
}

/// A reference to another origin (scheme, host or port): counted and named,
/// not fetched.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CrossOriginRecord {
    pub url: String,
    /// `scheme://host[:port]`.
    pub origin: String,
    pub found_in: String,
    pub found_by: &'static str,
}

/// `FetchConfig::viewport` as recorded.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ViewportRecord {
    pub width: u32,
    pub dpr: f64,
}

/// One flush of a connection's output buffer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FlushRecord {
    pub connection: usize,
    pub at_ms: f64,
    pub reason: FlushReason,
    pub bytes: usize,
}

/// One TCP connection.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConnectionRecord {
    pub opened_ms: f64,
    pub closed_ms: f64,
    /// How long the connection took to set up before `opened_ms`: the TCP
    /// handshake (None where not measured).
    pub connect_ms: Option<f64>,
    /// The TLS or QUIC handshake after `opened_ms` (None for plain TCP).
    pub ssl_ms: Option<f64>,
    pub requests_sent: u32,
    pub responses_received: u32,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// write(2) calls that carried request bytes.
    pub writes: u32,
    /// read(2) calls that returned data.
    pub reads: u32,
    /// Requests re-sent elsewhere because this connection closed first.
    pub unanswered: u32,
    /// Whether we sent requests ahead of responses on it.
    pub pipelined: bool,
    pub end: ConnEnd,
}

/// Byte totals (application layer; IP/TCP overhead is the link's business).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ByteCounts {
    pub header_bytes_sent: u64,
    /// Request bodies (the robot sends none).
    pub payload_bytes_sent: u64,
    pub header_bytes_received: u64,
    /// Message bodies after de-chunking, before content decoding.
    pub payload_bytes_received: u64,
    /// Everything read from sockets (adds chunk framing, interim responses,
    /// and bytes of answers discarded when a connection broke).
    pub total_bytes_received: u64,
    pub total_bytes_sent: u64,
}

/// The result of one fetch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FetchReport {
    /// What produced this record (every output says what made it).
    pub tool: String,
    pub url: String,
    pub strategy: Strategy,
    pub revalidate: bool,
    pub out_buffer_bytes: usize,
    #[serde(with = "duration_ms")]
    pub flush_after: std::time::Duration,
    pub flush_at_page_end: bool,
    /// Flush after the page request (paper 001 "Buffer Tuning").
    pub explicit_flush: bool,
    pub revalidation: crate::config::Revalidation,
    pub request_profile: crate::config::RequestProfile,
    pub max_conns: usize,
    pub timeouts: Timeouts,
    /// Wall-clock start, RFC 3339.
    pub started: String,
    #[serde(skip)]
    pub started_at: std::time::SystemTime,
    pub objects: Vec<ObjectRecord>,
    pub requests: u32,
    /// Requests by method.
    pub requests_by_method: BTreeMap<RequestMethod, u32>,
    /// Responses by status code.
    pub statuses: BTreeMap<u16, u32>,
    pub bytes: ByteCounts,
    /// First response byte of the page, ms after start.
    pub ttfb_ms: f64,
    /// Page content complete (parsed to the end), ms after start.
    pub page_complete_ms: f64,
    /// Range mode (`range_first`): when the first part of every image was
    /// in (the page parsed), ms since start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_ms: Option<f64>,
    /// Last byte of the last object, ms after start.
    pub total_ms: f64,
    pub connections_opened: usize,
    pub max_open_connections: usize,
    pub requests_per_connection: Vec<u32>,
    pub connections: Vec<ConnectionRecord>,
    pub flushes: Vec<FlushRecord>,
    pub flush_counts: BTreeMap<String, u32>,
    /// write(2) calls carrying requests, all connections.
    pub writes: u32,
    /// Requests sent again after a connection closed with them unanswered.
    pub retried_requests: u32,
    /// Same-page references on other servers, not fetched.
    pub skipped_other_server: Vec<String>,
    /// The same references with where they were found (one per URL).
    pub cross_origin: Vec<CrossOriginRecord>,
    /// The viewport discovery chose images for (`srcset`, `sizes`,
    /// `media`): CSS pixels wide and device pixel ratio.
    pub viewport: ViewportRecord,
    /// Prefetch hints seen (`Link: rel=prefetch`), as URLs.
    pub prefetch_hints: Vec<String>,
    /// Non-fatal problems (corrupt cache entries, parser trouble, the
    /// object limit reached).
    pub warnings: Vec<String>,
    /// Same-server references of the page not fetched because the page has
    /// more than `pagewire_discover::MAX_REFERENCES` (also a warning).
    pub references_not_fetched: usize,
    /// URLs that redirected, in order, when redirects were followed
    /// (`FetchConfig::max_redirects`); `url` is where the page was found.
    /// The other fields describe the last hop's fetch only.
    pub redirects: Vec<String>,
    /// Bytes this fetch wrote to cache files (bodies and meta files).
    #[serde(default)]
    pub cache_bytes_written: u64,
    /// With `FetchConfig::cross_origin`: one fetch per reference in
    /// `cross_origin` (same order; at most `MAX_CROSS_ORIGIN_FETCHES`), each
    /// on its own connection, its references not searched. Their objects
    /// are not in `objects` nor their bytes in `bytes`.
    pub cross_origin_fetches: Vec<FetchReport>,
}

impl FetchReport {
    /// Objects whose status is not a success (2xx/304).
    pub fn failed_objects(&self) -> impl Iterator<Item = &ObjectRecord> {
        self.objects
            .iter()
            .filter(|o| !(200..300).contains(&o.status) && o.status != 304)
    }

    /// Where the page redirects: its `Location` when its status is 301, 302,
    /// 303, 307 or 308.
    pub fn page_redirect(&self) -> Option<String> {
        let page = self.objects.iter().find(|o| o.kind == ObjectKind::Page)?;
        if !matches!(page.status, 301 | 302 | 303 | 307 | 308) {
            return None;
        }
        page.response_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    /// The report as one line of JSON (`--json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("reports serialize")
    }

    /// Count of responses with `status`.
    pub fn status_count(&self, status: u16) -> u32 {
        self.statuses.get(&status).copied().unwrap_or(0)
    }

    /// A short human summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let b = &self.bytes;
        let pages = self
            .objects
            .iter()
            .filter(|o| o.kind != ObjectKind::Prefetch)
            .count();
        let _ = writeln!(
            s,
            "{} {} ({}{}): {} objects, {} requests [{}], responses [{}]",
            self.tool,
            self.url,
            self.strategy,
            if self.revalidate { ", revalidate" } else { "" },
            pages,
            self.requests,
            self.requests_by_method
                .iter()
                .map(|(m, n)| format!("{n} {m}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.statuses
                .iter()
                .map(|(st, n)| format!("{n}x{st}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        let _ = writeln!(
            s,
            "  time: first byte {:.1} ms, page complete {:.1} ms, total {:.1} ms",
            self.ttfb_ms, self.page_complete_ms, self.total_ms
        );
        let _ = writeln!(
            s,
            "  bytes: sent {} (headers {}), received {} (headers {}, bodies {})",
            b.total_bytes_sent,
            b.header_bytes_sent,
            b.total_bytes_received,
            b.header_bytes_received,
            b.payload_bytes_received
        );
        let _ = writeln!(
            s,
            "  connections: {} opened, at most {} at once; requests per connection {:?}",
            self.connections_opened, self.max_open_connections, self.requests_per_connection
        );
        let _ = writeln!(
            s,
            "  writes: {}; flushes: {}{}",
            self.writes,
            if self.flush_counts.is_empty() {
                "none".to_string()
            } else {
                self.flush_counts
                    .iter()
                    .map(|(r, n)| format!("{n} {r}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if self.retried_requests > 0 {
                format!(
                    "; {} requests re-sent after early closes",
                    self.retried_requests
                )
            } else {
                String::new()
            }
        );
        self.summary_notes(&mut s);
        s
    }

    /// The summary's lines about what was not plain: references skipped or
    /// not fetched, prefetches, other origins, redirects, failures,
    /// warnings.
    fn summary_notes(&self, s: &mut String) {
        if !self.skipped_other_server.is_empty() {
            let mut origins: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &self.cross_origin {
                *origins.entry(c.origin.as_str()).or_default() += 1;
            }
            let _ = writeln!(
                s,
                "  skipped {} references to other servers: {}",
                self.skipped_other_server.len(),
                origins
                    .iter()
                    .map(|(o, n)| format!("{o} ({n})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let prefetched = self
            .objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Prefetch)
            .count();
        if prefetched > 0 || !self.prefetch_hints.is_empty() {
            let _ = writeln!(
                s,
                "  prefetch: {} hints, {} objects prefetched into the cache",
                self.prefetch_hints.len(),
                prefetched
            );
        }
        if !self.cross_origin_fetches.is_empty() {
            let ok = self
                .cross_origin_fetches
                .iter()
                .filter(|f| f.failed_objects().next().is_none())
                .count();
            let bytes: u64 = self
                .cross_origin_fetches
                .iter()
                .map(|f| f.bytes.total_bytes_received)
                .sum();
            let _ = writeln!(
                s,
                "  cross-origin: {} fetched ({ok} with a success status), {bytes} bytes received",
                self.cross_origin_fetches.len()
            );
        }
        for r in &self.redirects {
            let _ = writeln!(s, "  redirected from {r}");
        }
        if self.references_not_fetched > 0 {
            let _ = writeln!(
                s,
                "  LIMIT: {} references not fetched (more than {} objects)",
                self.references_not_fetched,
                pagewire_discover::MAX_REFERENCES
            );
        }
        for o in self.failed_objects() {
            if (300..400).contains(&o.status) {
                let _ = writeln!(s, "  NOT FOLLOWED {} {} (redirect)", o.status, o.url);
            } else {
                let _ = writeln!(s, "  FAILED {} {}", o.status, o.url);
            }
        }
        for w in &self.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
}

/// RFC 3339 UTC timestamp with milliseconds, from the Unix clock (HAR and
/// the JSON records use it).
pub(crate) fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The records' JSON keeps the strings it had before these were enums.
    #[test]
    fn ends_and_methods_serialize_as_before() {
        fn j(v: &impl serde::Serialize) -> String {
            serde_json::to_string(v).unwrap()
        }
        assert_eq!(j(&ConnEnd::Done), r#""done""#);
        assert_eq!(
            j(&ConnEnd::ServerClosed { unanswered: 3 }),
            r#""server closed, 3 requests unanswered""#
        );
        assert_eq!(j(&ConnEnd::Error("x".into())), r#""error: x""#);
        assert_eq!(j(&ConnEnd::Open), r#""""#);
        assert_eq!(j(&RequestMethod::Head), r#""HEAD""#);
        let m: BTreeMap<RequestMethod, u32> =
            [(RequestMethod::Head, 42), (RequestMethod::Get, 1)].into();
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"GET":1,"HEAD":42}"#);
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(951_782_400_123)),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_000_000)),
            "2026-11-18T11:06:40.000Z"
        );
    }
}
