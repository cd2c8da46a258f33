//! Typed codec errors. Every error carries the status a server should answer
//! with; after any of them the connection must be closed, because the framing
//! of whatever follows in the byte stream can no longer be trusted
//! (RFC 9112 §6.3 and §11.2, request smuggling).

use std::fmt;

/// What went wrong. Each kind maps to one response status and one short,
/// fixed reason string (no allocation, safe to put in a response body).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    // ---- start line -------------------------------------------------------
    /// The request line is not `method SP request-target SP HTTP-version`.
    InvalidRequestLine,
    /// The request target is not valid (empty, control bytes, not UTF-8).
    InvalidTarget,
    /// An HTTP version other than HTTP/1.0 and HTTP/1.1 (e.g. `HTTP/2.0`,
    /// `HTTP/1.2`) in an HTTP/1 message: 505 (RFC 9110 §15.6.6).
    UnsupportedVersion,
    /// The request line is longer than `Limits::max_request_line_bytes`: 414
    /// (RFC 9112 §3: "A server that receives a request-target longer than
    /// any URI it wishes to parse MUST respond with a 414").
    RequestLineTooLong,
    /// The status line of a response is malformed.
    InvalidStatusLine,

    // ---- header section ---------------------------------------------------
    /// A CR not immediately followed by LF (RFC 9112 §2.2: a recipient of a
    /// bare CR MUST treat it as invalid or replace it with SP; we reject).
    BareCr,
    /// Whitespace between a field name and its colon (RFC 9112 §5.1: MUST
    /// reject with 400).
    SpaceBeforeColon,
    /// A line starting with whitespace: obsolete line folding (RFC 9112 §5.2:
    /// a server MUST reject with 400 or replace; we reject).
    ObsFold,
    /// Whitespace between the start line and the first field line
    /// (RFC 9112 §2.2: MUST reject or ignore; we reject).
    WhitespaceBeforeFirstField,
    /// A field name that is not a token, or a field line without colon.
    InvalidHeaderName,
    /// A field value with forbidden bytes (NUL, other controls).
    InvalidHeaderValue,
    /// One field line longer than `Limits::max_header_line_bytes`: 431.
    HeaderFieldTooLong,
    /// More than `Limits::max_headers` field lines: 431.
    TooManyHeaders,
    /// The whole head is longer than `Limits::max_head_bytes`: 431.
    HeadTooLarge,
    /// HTTP/1.1 request without `Host` (RFC 9112 §3.2: MUST answer 400).
    MissingHost,
    /// More than one `Host` field (RFC 9112 §3.2: MUST answer 400).
    MultipleHost,

    // ---- framing (RFC 9112 §6) --------------------------------------------
    /// Both Transfer-Encoding and Content-Length (RFC 9112 §6.3 item 3: a
    /// smuggling attempt; we reject and close).
    TransferEncodingWithContentLength,
    /// Transfer-Encoding in an HTTP/1.0 message (RFC 9112 §6.1: MUST treat
    /// the framing as faulty).
    TransferEncodingInHttp10,
    /// Content-Length values that disagree (several fields or a list).
    ConflictingContentLength,
    /// A Content-Length that is not `1*DIGIT` (sign, `+`, spaces inside,
    /// hex, empty) or that overflows u64.
    InvalidContentLength,
    /// `chunked` is not the final transfer coding of a request (RFC 9112
    /// §6.3 item 4: the length cannot be determined; MUST answer 400).
    ChunkedNotFinal,
    /// `chunked` applied more than once (RFC 9112 §6.1: MUST NOT).
    ChunkedTwice,
    /// A transfer coding we do not implement (RFC 9112 §6.1: SHOULD answer
    /// 501).
    UnknownTransferCoding,
    /// An empty or unparsable Transfer-Encoding field.
    InvalidTransferEncoding,

    // ---- chunked body (RFC 9112 §7.1) -------------------------------------
    /// A chunk size that is not hex digits.
    InvalidChunkSize,
    /// A chunk size that does not fit in u64.
    ChunkSizeOverflow,
    /// A chunk-size line (size plus extensions) longer than
    /// `Limits::max_chunk_line_bytes`.
    ChunkLineTooLong,
    /// Bad bytes in a chunk extension.
    InvalidChunkExtension,
    /// Chunk data not followed by CRLF, or a chunk line not ended by CRLF.
    InvalidChunkTerminator,
    /// The trailer section is longer than `Limits::max_trailer_bytes`.
    TrailersTooLarge,
    /// More than `Limits::max_trailers` trailer fields.
    TooManyTrailers,
    /// A malformed trailer field line.
    InvalidTrailer,
    /// The connection closed before the body was complete.
    IncompleteBody,

    // ---- writing ----------------------------------------------------------
    /// A writer was asked to emit an invalid token, target or field (e.g. a
    /// CR/LF in a value, which would allow response splitting).
    InvalidFieldToWrite,
}

impl ErrorKind {
    /// The status code a server should answer with.
    pub const fn status(self) -> u16 {
        use ErrorKind::*;
        match self {
            RequestLineTooLong => 414,
            HeaderFieldTooLong | TooManyHeaders | HeadTooLarge | TrailersTooLarge
            | TooManyTrailers => 431,
            UnsupportedVersion => 505,
            UnknownTransferCoding => 501,
            // Nothing to answer: the writer's caller made the mistake.
            InvalidFieldToWrite => 500,
            // A response from the peer was bad: a proxy would answer 502.
            InvalidStatusLine => 502,
            _ => 400,
        }
    }

    /// A short human-readable reason, fit for a log line or an error body.
    pub const fn reason(self) -> &'static str {
        use ErrorKind::*;
        match self {
            InvalidRequestLine => "malformed request line",
            InvalidTarget => "invalid request target",
            UnsupportedVersion => "unsupported HTTP version (only HTTP/1.0 and HTTP/1.1 here)",
            RequestLineTooLong => "request line too long",
            InvalidStatusLine => "malformed status line",
            BareCr => "bare CR in message head",
            SpaceBeforeColon => "whitespace between field name and colon",
            ObsFold => "obsolete line folding in header field",
            WhitespaceBeforeFirstField => "whitespace before first header field",
            InvalidHeaderName => "invalid header field name",
            InvalidHeaderValue => "invalid byte in header field value",
            HeaderFieldTooLong => "header field too long",
            TooManyHeaders => "too many header fields",
            HeadTooLarge => "header section too large",
            MissingHost => "HTTP/1.1 request without Host",
            MultipleHost => "more than one Host header field",
            TransferEncodingWithContentLength => "both Transfer-Encoding and Content-Length",
            TransferEncodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 message",
            ConflictingContentLength => "conflicting Content-Length values",
            InvalidContentLength => "invalid Content-Length",
            ChunkedNotFinal => "chunked is not the final transfer coding",
            ChunkedTwice => "chunked transfer coding applied more than once",
            UnknownTransferCoding => "transfer coding not implemented",
            InvalidTransferEncoding => "invalid Transfer-Encoding",
            InvalidChunkSize => "invalid chunk size",
            ChunkSizeOverflow => "chunk size overflows",
            ChunkLineTooLong => "chunk size line or extensions too long",
            InvalidChunkExtension => "invalid chunk extension",
            InvalidChunkTerminator => "chunk not terminated by CRLF",
            TrailersTooLarge => "trailer section too large",
            TooManyTrailers => "too many trailer fields",
            InvalidTrailer => "invalid trailer field",
            IncompleteBody => "connection closed before the body was complete",
            InvalidFieldToWrite => "refusing to write an invalid token or field",
        }
    }
}

/// A codec error: a kind, its status and reason. `Copy`, no allocation.
///
/// After any parse error the connection must be closed after answering
/// (`status()`), because the message boundaries are lost.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    kind: ErrorKind,
}

impl Error {
    /// Wraps a kind.
    pub const fn new(kind: ErrorKind) -> Self {
        Error { kind }
    }
    /// What went wrong.
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The status code to answer with (400, 414, 431, 501, 505; 502 for a
    /// bad response from a peer; 500 for writer misuse).
    pub const fn status(&self) -> u16 {
        self.kind.status()
    }
    /// A short reason string.
    pub const fn reason(&self) -> &'static str {
        self.kind.reason()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}, {})", self.kind, self.status())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason(), self.status())
    }
}

impl std::error::Error for Error {}
