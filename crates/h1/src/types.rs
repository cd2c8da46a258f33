//! Small value types: methods, versions, body framing.

use std::fmt;

/// HTTP versions this codec speaks. Anything else is `UnsupportedVersion`
/// (505).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// HTTP/1.0: connections close unless keep-alive is asked for.
    Http10,
    /// HTTP/1.1: connections persist unless `Connection: close`.
    Http11,
}

impl Version {
    /// `"HTTP/1.0"` or `"HTTP/1.1"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Request methods (RFC 9110 §9 plus PATCH). Methods are case-sensitive
/// (RFC 9110 §9.1): `get` is `Other`. The raw token of any method is
/// available from `RequestHead::method_bytes()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// POST
    Post,
    /// PUT
    Put,
    /// DELETE
    Delete,
    /// OPTIONS
    Options,
    /// TRACE
    Trace,
    /// CONNECT
    Connect,
    /// PATCH
    Patch,
    /// Any other token (the raw token is in the head).
    Other,
}

impl Method {
    /// Classifies a method token.
    pub fn from_bytes(token: &[u8]) -> Method {
        match token {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"TRACE" => Method::Trace,
            b"CONNECT" => Method::Connect,
            b"PATCH" => Method::Patch,
            _ => Method::Other,
        }
    }

    /// The token of a standard method; `None` for `Other`.
    pub const fn as_str(self) -> Option<&'static str> {
        Some(match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Trace => "TRACE",
            Method::Connect => "CONNECT",
            Method::Patch => "PATCH",
            Method::Other => return None,
        })
    }
}

/// How a message body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyFraming {
    /// No body: a request without Content-Length/Transfer-Encoding, a
    /// `Content-Length: 0`, or a response to HEAD, or a 1xx/204/304.
    Empty,
    /// Exactly this many bytes (never 0: that is `Empty`).
    Length(u64),
    /// `Transfer-Encoding: chunked` (final coding).
    Chunked,
    /// Responses only: the body runs until the connection closes
    /// (RFC 9112 §6.3 item 8).
    CloseDelimited,
}
