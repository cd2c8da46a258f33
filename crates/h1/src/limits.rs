//! Parser limits. Each bound exists so that a peer can make us hold or scan
//! only a fixed amount of memory per connection, whatever it sends.

/// Bounds applied by the head parsers and the body decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line (method, target, version; without CRLF).
    /// 8 KiB: RFC 9112 §3 recommends supporting at least 8000 octets of
    /// request line; longer ones get 414 (RFC 9112 §3, RFC 9110 §15.5.15).
    pub max_request_line_bytes: usize,
    /// Longest single field line (name, colon, value; without CRLF).
    /// 8 KiB, like nginx's `large_client_header_buffers` default; longer
    /// gets 431 (RFC 6585 §5).
    pub max_header_line_bytes: usize,
    /// Most field lines in a head. 100 (hyper's and many servers' default):
    /// each field costs a scan and an index entry; more gets 431.
    /// Values above 256 are clamped (the parser's stack array).
    pub max_headers: usize,
    /// Largest whole head (start line, fields, blank line, and any leading
    /// empty lines). 64 KiB bounds the bytes buffered before a request is
    /// recognised, and so the re-scan cost of a slow sender; more gets 431.
    /// Values above 1 GiB are clamped (heads are indexed with `u32`).
    pub max_head_bytes: usize,
    /// Longest chunk-size line including extensions, without CRLF.
    /// 4 KiB: extensions carry nothing we use, and an unbounded line would
    /// be buffered whole (a known DoS on chunk extensions, CVE-2023-39326).
    pub max_chunk_line_bytes: usize,
    /// Largest trailer section in bytes (it is buffered whole). 8 KiB.
    pub max_trailer_bytes: usize,
    /// Most trailer fields. 32: trailers are rare and only informative.
    pub max_trailers: usize,
    /// Answer 400 to an HTTP/1.1 request without `Host` (RFC 9112 §3.2
    /// says MUST). A second `Host` is always rejected.
    pub require_host: bool,
}

/// The parser's header array size; `max_headers` above it is clamped.
pub(crate) const HEADER_ARRAY_CAP: usize = 256;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_line_bytes: 8 * 1024,
            max_header_line_bytes: 8 * 1024,
            max_headers: 100,
            max_head_bytes: 64 * 1024,
            max_chunk_line_bytes: 4 * 1024,
            max_trailer_bytes: 8 * 1024,
            max_trailers: 32,
            require_host: true,
        }
    }
}

impl Limits {
    /// Same as `Default::default()`.
    pub fn new() -> Self {
        Self::default()
    }
    /// `max_head_bytes`, clamped so that offsets fit the `u32` index.
    pub(crate) fn head_bytes(&self) -> usize {
        self.max_head_bytes.min(1 << 30)
    }
    pub(crate) fn header_slots(&self) -> usize {
        self.max_headers.min(HEADER_ARRAY_CAP)
    }
}
