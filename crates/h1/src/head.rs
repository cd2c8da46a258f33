//! Message heads: incremental, zero-copy parsing of request and response
//! heads on `httparse`, plus the RFC 9112 framing rules (§6.1, §6.3) and the
//! limits httparse does not enforce itself.
//!
//! A parsed head owns one `Bytes` holding its raw bytes (split off the
//! caller's read buffer, no copy) and keeps the method, target, reason and
//! every field as `u32` ranges into it, in an inline `SmallVec`: a typical
//! request (up to 16 fields) is parsed with no heap allocation at all.
//!
//! httparse's verdicts are kept, with these additions (checked by tests):
//! - line length, field count and head size limits with their own statuses;
//! - an unknown `HTTP/x.y` version is 505, other garbage 400;
//! - Host presence/uniqueness, Content-Length syntax and agreement,
//!   Transfer-Encoding rules;
//! - when httparse rejects a head, the head is re-examined (slow path, errors
//!   only) to name the precise fault: bare CR, obs-fold, space before colon;
//!   the verdict depends only on the bytes up to the fault, so it is the same
//!   however the input was split across reads (`diagnose`).
//!
//! httparse accepts a bare LF as line terminator; RFC 9112 §2.2 allows a
//! recipient to do so, and we keep that (a bare CR is always rejected).

use std::mem::MaybeUninit;

use bytes::{Bytes, BytesMut};
use smallvec::SmallVec;

use crate::error::{Error, ErrorKind};
use crate::limits::{Limits, HEADER_ARRAY_CAP};
use crate::types::{BodyFraming, Method, Version};

/// A byte range into a head's raw bytes. `u32` keeps the index small; heads
/// are bounded by `Limits::max_head_bytes` far below 4 GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u32,
    end: u32,
}

impl Span {
    fn of(base: &[u8], part: &[u8]) -> Span {
        // Offsets of a sub-slice; clamped so that an empty slice httparse
        // placed anywhere still yields an in-bounds (empty) range.
        let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
        let start = start.min(base.len());
        let end = (start + part.len()).min(base.len());
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    fn get<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        raw.get(self.start as usize..self.end as usize)
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FieldIndex {
    name: Span,
    value: Span,
}

/// Inline capacity: heads with up to 16 fields need no allocation (a
/// browser-like GET has 6-12).
type Fields = SmallVec<[FieldIndex; 16]>;

/// A one-word summary of a head's field names: bit `(len + first + 3 ×
/// last) mod 64` for each name, first and last bytes lowercased. Names
/// equal ignoring case have the same length, first and last letter, so a
/// lookup whose bit is clear answers "absent" without scanning the fields.
/// Most lookups per message are for fields the peer did not send (Range,
/// If-*, Expect, Connection, ...); with this bit function none of those
/// collides with the fields a browser sends (Host, User-Agent, Accept*,
/// Connection, Sec-*, Cache-Control, Cookie, Referer, ...) or a server
/// answers with (Server, Date, Content-*, ETag, Last-Modified,
/// Accept-Ranges, Vary, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct NameBits(u64);

impl NameBits {
    #[inline]
    fn bit(name: &[u8]) -> u64 {
        let (first, last) = match name {
            [] => (0, 0),
            [f, .., l] => (usize::from(f | 0x20), usize::from(l | 0x20)),
            [f] => (usize::from(f | 0x20), usize::from(f | 0x20)),
        };
        1 << ((name.len() + first + 3 * last) & 63)
    }
    fn add(&mut self, name: &[u8]) {
        self.0 |= Self::bit(name);
    }
    #[inline]
    fn may_hold(self, name: &[u8]) -> bool {
        self.0 & Self::bit(name) != 0
    }
}

/// Whether field name `name` (a token, as httparse checked) is `lower`
/// ignoring case, where `lower` holds only lowercase letters, digits and
/// `-`. For such a `lower`, `b | 0x20` equals its byte only for the same
/// letter in either case, the same digit, or `-` (the other byte that maps
/// there, CR, is not a token character): one OR and one compare per byte.
/// Names of 8 bytes or more are compared a word at a time (the same OR
/// and compare on 8 bytes at once; the last word overlaps the one before).
fn token_is(name: &[u8], lower: &[u8]) -> bool {
    const CASE: u64 = u64::from_ne_bytes([0x20; 8]);
    let n = name.len();
    if n != lower.len() {
        return false;
    }
    if n < 8 {
        return name.iter().zip(lower).all(|(&b, &l)| b | 0x20 == l);
    }
    let word = |s: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[i..i + 8]);
        u64::from_ne_bytes(w)
    };
    let mut i = 0;
    while i + 8 < n {
        if word(name, i) | CASE != word(lower, i) {
            return false;
        }
        i += 8;
    }
    word(name, n - 8) | CASE == word(lower, n - 8)
}

/// What the framing fields declared, already validated for syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Declared {
    content_length: Option<u64>,
    /// `Some(true)`: Transfer-Encoding present, chunked last.
    /// `Some(false)`: present, chunked not last.
    transfer_chunked_last: Option<bool>,
}

/// Iterator over `(name, value)` of every field, in order.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    raw: &'a [u8],
    inner: std::slice::Iter<'a, FieldIndex>,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let f = self.inner.next()?;
        Some((f.name.get(self.raw), f.value.get(self.raw)))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// Iterator over the values of every field with one name
/// (case-insensitive), in order.
#[derive(Debug, Clone)]
pub struct HeaderValues<'a, 'n> {
    raw: &'a [u8],
    inner: std::slice::Iter<'a, FieldIndex>,
    name: &'n [u8],
}

impl<'a, 'n> HeaderValues<'a, 'n> {
    /// The values of field `name` among `fields` (spans of `raw`): none,
    /// without a scan, when the names' summary rules `name` out.
    #[inline]
    fn of(raw: &'a [u8], fields: &'a [FieldIndex], name_bits: NameBits, name: &'n [u8]) -> Self {
        let fields = if name_bits.may_hold(name) {
            fields
        } else {
            &[]
        };
        HeaderValues {
            raw,
            inner: fields.iter(),
            name,
        }
    }
}

impl<'a> Iterator for HeaderValues<'a, '_> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<Self::Item> {
        for f in self.inner.by_ref() {
            if f.name.get(self.raw).eq_ignore_ascii_case(self.name) {
                return Some(f.value.get(self.raw));
            }
        }
        None
    }
}

/// Field accessors shared by request and response heads.
macro_rules! field_accessors {
    () => {
        /// The raw bytes of the whole head (start line to blank line).
        pub fn raw(&self) -> &Bytes {
            &self.raw
        }

        /// The first value of field `name` (case-insensitive).
        ///
        /// A name the head's summary rules out is answered here, inline,
        /// without an iterator: most lookups on the hot path (conditional
        /// fields, Range, Accept-Encoding) are of fields that are absent.
        #[inline]
        pub fn header(&self, name: &str) -> Option<&[u8]> {
            if !self.name_bits.may_hold(name.as_bytes()) {
                return None;
            }
            self.headers(name).next()
        }

        /// Every value of field `name` (case-insensitive), in order.
        #[inline]
        pub fn headers<'a, 'n>(&'a self, name: &'n str) -> HeaderValues<'a, 'n> {
            HeaderValues::of(&self.raw, &self.fields, self.name_bits, name.as_bytes())
        }

        /// Every field as `(name, value)`, in order.
        pub fn iter(&self) -> HeaderIter<'_> {
            HeaderIter {
                raw: &self.raw,
                inner: self.fields.iter(),
            }
        }

        /// Number of field lines.
        pub fn header_count(&self) -> usize {
            self.fields.len()
        }

        /// Whether any `Connection` field lists `token` (case-insensitive,
        /// RFC 9110 §7.6.1).
        pub fn has_connection_token(&self, token: &str) -> bool {
            self.headers("connection")
                .any(|v| list_contains_token(v, token.as_bytes()))
        }

        /// The validated Content-Length, if one was sent.
        pub fn content_length(&self) -> Option<u64> {
            self.declared.content_length
        }
    };
}

/// `wants_keep_alive` on a head's parts: whether the sender wants the
/// connection kept open after this message (RFC 9112 §9.3): HTTP/1.1
/// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
fn keep_alive(raw: &[u8], fields: &[FieldIndex], name_bits: NameBits, version: Version) -> bool {
    let has_token = |token: &[u8]| {
        HeaderValues::of(raw, fields, name_bits, b"connection")
            .any(|v| list_contains_token(v, token))
    };
    if has_token(b"close") {
        return false;
    }
    match version {
        Version::Http11 => true,
        Version::Http10 => has_token(b"keep-alive"),
    }
}

/// A parsed request head. Cheap to move; holds one reference-counted
/// `Bytes` and inline indices.
#[derive(Debug, Clone)]
pub struct RequestHead {
    raw: Bytes,
    method: Method,
    method_span: Span,
    target: Span,
    version: Version,
    fields: Fields,
    name_bits: NameBits,
    declared: Declared,
    framing: BodyFraming,
}

impl RequestHead {
    field_accessors!();

    /// A head with nothing in it (`GET`, no target, no fields), for
    /// [`parse_request_into`] and [`HeadScanner::parse_into`](crate::HeadScanner::parse_into)
    /// to fill.
    pub fn empty() -> RequestHead {
        RequestHead {
            raw: Bytes::new(),
            method: Method::Get,
            method_span: Span::default(),
            target: Span::default(),
            version: Version::Http11,
            fields: Fields::new(),
            name_bits: NameBits::default(),
            declared: Declared::default(),
            framing: BodyFraming::Empty,
        }
    }

    /// Whether the client wants the connection kept open after this
    /// request (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`.
    pub fn wants_keep_alive(&self) -> bool {
        keep_alive(&self.raw, &self.fields, self.name_bits, self.version)
    }

    /// The request target's bytes as sent ([`RequestHead::target`] without
    /// the UTF-8 check, which httparse already made).
    pub fn target_bytes(&self) -> &[u8] {
        self.target.get(&self.raw)
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }
    /// The raw method token (useful for `Method::Other`).
    pub fn method_bytes(&self) -> &[u8] {
        self.method_span.get(&self.raw)
    }
    /// The request target as sent (origin-form `/a?b`, absolute-form,
    /// authority-form or `*`). Always valid UTF-8 (checked by httparse).
    pub fn target(&self) -> &str {
        std::str::from_utf8(self.target.get(&self.raw)).unwrap_or_default()
    }
    /// The path of the target: everything before the first `?` (or `#`,
    /// which a client should not send). For `*` and authority-form targets
    /// this is the whole target.
    pub fn path(&self) -> &str {
        let t = self.target();
        t.find(['?', '#']).map_or(t, |i| &t[..i])
    }
    /// The query of the target (after the first `?`, before any `#`).
    pub fn query(&self) -> Option<&str> {
        let t = self.target();
        let q = &t[t.find('?')? + 1..];
        Some(q.find('#').map_or(q, |i| &q[..i]))
    }
    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }
    /// How the request body is framed (validated when parsed, so this
    /// never fails for a head returned by `parse_request`).
    pub fn body_framing(&self) -> Result<BodyFraming, Error> {
        Ok(self.framing)
    }
    /// Whether the client sent `Expect: 100-continue` (RFC 9110 §10.1.1).
    pub fn expects_continue(&self) -> bool {
        self.version == Version::Http11
            && self
                .headers("expect")
                .any(|v| trim_ows(v).eq_ignore_ascii_case(b"100-continue"))
    }
}

/// A parsed response head.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    raw: Bytes,
    version: Version,
    status: u16,
    reason: Span,
    fields: Fields,
    name_bits: NameBits,
    declared: Declared,
    framing: BodyFraming,
    /// Set by [`consume_response_into`], which drops the fields the
    /// keep-alive decision reads: the decision, taken before.
    consumed_keep_alive: Option<bool>,
}

impl ResponseHead {
    field_accessors!();

    /// A head with nothing in it (HTTP/1.1, status 0, no fields), for
    /// [`parse_response_into`], [`consume_response_into`] and
    /// [`HeadScanner::parse_response_into`](crate::HeadScanner::parse_response_into)
    /// to fill.
    pub fn empty() -> ResponseHead {
        ResponseHead {
            raw: Bytes::new(),
            version: Version::Http11,
            status: 0,
            reason: Span::default(),
            fields: Fields::new(),
            name_bits: NameBits::default(),
            declared: Declared::default(),
            framing: BodyFraming::Empty,
            consumed_keep_alive: None,
        }
    }

    /// Whether the server wants the connection kept open after this
    /// response (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`.
    pub fn wants_keep_alive(&self) -> bool {
        match self.consumed_keep_alive {
            Some(keep) => keep,
            None => keep_alive(&self.raw, &self.fields, self.name_bits, self.version),
        }
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }
    /// The status code (100-999).
    pub fn status(&self) -> u16 {
        self.status
    }
    /// The reason phrase as sent (may be empty).
    pub fn reason(&self) -> &[u8] {
        self.reason.get(&self.raw)
    }
    /// The body framing computed when parsed, for the request method given
    /// to `parse_response`.
    pub fn body_framing(&self) -> BodyFraming {
        self.framing
    }
}

/// The framing of a response to a request with `method`
/// (RFC 9112 §6.3): responses to HEAD, 1xx, 204 and 304 have no body; a
/// 2xx to CONNECT switches to a tunnel (no HTTP body: `Empty`); then
/// Transfer-Encoding (chunked last: `Chunked`, else close-delimited), then
/// Content-Length, else close-delimited.
pub fn response_framing(head: &ResponseHead, method: &Method) -> BodyFraming {
    framing_for_response(head.status, head.declared, *method)
}

fn framing_for_response(status: u16, declared: Declared, method: Method) -> BodyFraming {
    if method == Method::Head || (100..200).contains(&status) || status == 204 || status == 304 {
        return BodyFraming::Empty;
    }
    if method == Method::Connect && (200..300).contains(&status) {
        return BodyFraming::Empty;
    }
    match (declared.transfer_chunked_last, declared.content_length) {
        (Some(true), _) => BodyFraming::Chunked,
        (Some(false), _) => BodyFraming::CloseDelimited,
        (None, Some(0)) => BodyFraming::Empty,
        (None, Some(n)) => BodyFraming::Length(n),
        (None, None) => BodyFraming::CloseDelimited,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Request,
    Response,
}

/// Parses one request head from the front of `buf`.
///
/// - `Ok(None)`: the head is not complete yet; read more and call again
///   (nothing is consumed). Limits are still enforced on the partial head.
/// - `Ok(Some(head))`: the head's bytes were split off `buf` (zero-copy);
///   any body and further pipelined requests remain in `buf`.
/// - `Err(e)`: answer `e.status()` and close the connection.
///
/// Leading empty lines are skipped (RFC 9112 §2.2) and count towards
/// `max_head_bytes`.
pub fn parse_request(buf: &mut BytesMut, limits: &Limits) -> Result<Option<RequestHead>, Error> {
    let mut head = RequestHead::empty();
    Ok(parse_request_into(buf, limits, &mut head)?.then_some(head))
}

/// [`parse_request`] into a head the caller holds: `Ok(true)` when a head
/// was parsed into `head` (and split off `buf`), `Ok(false)` when it is not
/// complete yet; after `Ok(false)` or an error `head`'s contents are
/// unspecified. A head is ~380 bytes (its inline field index): a server
/// that keeps one in its own frame parses into it where it stays, instead
/// of copying it out through each function's return (three copies per
/// request showed up in the keep-alive profile).
pub fn parse_request_into(
    buf: &mut BytesMut,
    limits: &Limits,
    head: &mut RequestHead,
) -> Result<bool, Error> {
    if buf.is_empty() {
        return Ok(false);
    }
    // Never let httparse scan past the head limit: a peer streaming garbage
    // costs at most max_head_bytes of scanning per call.
    let window_len = buf.len().min(limits.head_bytes() + 1);
    head.fields.clear();
    let n = {
        let window = &buf[..window_len];
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_ARRAY_CAP];
        let mut req = httparse::Request::new(&mut []);
        match req.parse_with_uninit_headers(window, &mut slots[..limits.header_slots()]) {
            Ok(httparse::Status::Partial) => {
                check_partial(window, buf.len(), limits, Role::Request)?;
                return Ok(false);
            }
            Err(e) => return Err(diagnose(window, e, limits, Role::Request)),
            Ok(httparse::Status::Complete(n)) => {
                if n > limits.head_bytes() {
                    // Same order as on a partial head: a line past its
                    // limit is an earlier fault than the head's last byte.
                    check_lines(&window[..n], limits, Role::Request)?;
                    return Err(ErrorKind::HeadTooLarge.into());
                }
                let method_str = req.method.unwrap_or_default();
                let target = req.path.unwrap_or_default();
                let version = match req.version {
                    Some(0) => Version::Http10,
                    Some(1) => Version::Http11,
                    _ => return Err(ErrorKind::UnsupportedVersion.into()),
                };
                let fields = &mut head.fields;
                for h in req.headers.iter() {
                    fields.push(FieldIndex {
                        name: Span::of(window, h.name.as_bytes()),
                        value: Span::of(window, h.value),
                    });
                }
                let method_span = Span::of(window, method_str.as_bytes());
                check_complete_lines(
                    &window[..n],
                    method_span.start as usize,
                    fields,
                    limits,
                    Role::Request,
                )?;
                let (declared, host_count, name_bits) = scan_framing(window, fields)?;
                if host_count > 1 {
                    return Err(ErrorKind::MultipleHost.into());
                }
                if host_count == 0 && version == Version::Http11 && limits.require_host {
                    return Err(ErrorKind::MissingHost.into());
                }
                head.framing = request_framing(declared, version)?;
                head.method = Method::from_bytes(method_str.as_bytes());
                head.method_span = method_span;
                head.target = Span::of(window, target.as_bytes());
                head.version = version;
                head.declared = declared;
                head.name_bits = name_bits;
                n
            }
        }
    };
    head.raw = buf.split_to(n).freeze();
    Ok(true)
}

/// Parses one response head from the front of `buf`, for a request made
/// with `request_method` (which decides the framing: RFC 9112 §6.3).
/// Same contract as `parse_request`. Interim 1xx responses are returned
/// like any other (framing `Empty`); the caller skips them.
pub fn parse_response(
    buf: &mut BytesMut,
    limits: &Limits,
    request_method: &Method,
) -> Result<Option<ResponseHead>, Error> {
    let mut head = ResponseHead::empty();
    Ok(parse_response_into(buf, limits, request_method, &mut head)?.then_some(head))
}

/// [`parse_response`] into a head the caller holds (as
/// [`parse_request_into`]): `Ok(true)` when a head was parsed into `head`
/// and split off `buf`, `Ok(false)` when it is not complete yet; after
/// `Ok(false)` or an error `head`'s contents are unspecified. Same
/// verdicts as `parse_response`.
pub fn parse_response_into(
    buf: &mut BytesMut,
    limits: &Limits,
    request_method: &Method,
    head: &mut ResponseHead,
) -> Result<bool, Error> {
    match parse_response_parts(buf, limits, request_method, head)? {
        None => Ok(false),
        Some(n) => {
            head.raw = buf.split_to(n).freeze();
            Ok(true)
        }
    }
}

/// [`parse_response_into`] for a caller that needs only the head's
/// verdict and summary (a load generator): the same checks and errors,
/// but the head's bytes are dropped from `buf` instead of being kept.
/// After `Ok(true)`, `head` holds the version, status, framing, content
/// length and [`ResponseHead::wants_keep_alive`] (decided before the
/// bytes were dropped); it has no raw bytes, no reason and no fields
/// (`header` answers `None`).
pub fn consume_response_into(
    buf: &mut BytesMut,
    limits: &Limits,
    request_method: &Method,
    head: &mut ResponseHead,
) -> Result<bool, Error> {
    match parse_response_parts(buf, limits, request_method, head)? {
        None => Ok(false),
        Some(n) => {
            // The keep-alive decision reads the Connection fields: take it
            // while they are still in `buf`, then drop what indexes it.
            let keep = keep_alive(&buf[..n], &head.fields, head.name_bits, head.version);
            head.fields.clear();
            head.name_bits = NameBits::default();
            head.reason = Span::default();
            if !head.raw.is_empty() {
                head.raw = Bytes::new();
            }
            head.consumed_keep_alive = Some(keep);
            bytes::Buf::advance(buf, n);
            Ok(true)
        }
    }
}

/// The common part of the response parsers: fills every part of `head`
/// but `raw` (its spans index `buf`) and returns the head's length, or
/// `None` while it is incomplete. Reads `buf`, never consumes it.
#[inline(always)]
fn parse_response_parts(
    buf: &BytesMut,
    limits: &Limits,
    request_method: &Method,
    head: &mut ResponseHead,
) -> Result<Option<usize>, Error> {
    if buf.is_empty() {
        return Ok(None);
    }
    let window_len = buf.len().min(limits.head_bytes() + 1);
    head.fields.clear();
    let window = &buf[..window_len];
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_ARRAY_CAP];
    let mut res = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    match config.parse_response_with_uninit_headers(
        &mut res,
        window,
        &mut slots[..limits.header_slots()],
    ) {
        Ok(httparse::Status::Partial) => {
            // The status line is the earliest byte: a bad code there is
            // named before any later line's limit, as when complete
            // (fuzz find: `020` then an over-long field line).
            check_status_code(res.code)?;
            check_partial(window, buf.len(), limits, Role::Response)?;
            Ok(None)
        }
        Err(e) => Err(diagnose(window, e, limits, Role::Response)),
        Ok(httparse::Status::Complete(n)) => {
            check_status_code(res.code)?;
            if n > limits.head_bytes() {
                check_lines(&window[..n], limits, Role::Response)?;
                return Err(ErrorKind::HeadTooLarge.into());
            }
            let version = match res.version {
                Some(0) => Version::Http10,
                Some(1) => Version::Http11,
                _ => return Err(ErrorKind::UnsupportedVersion.into()),
            };
            let status = res.code.unwrap_or(0);
            let fields = &mut head.fields;
            for h in res.headers.iter() {
                fields.push(FieldIndex {
                    name: Span::of(window, h.name.as_bytes()),
                    value: Span::of(window, h.value),
                });
            }
            let start = skip_empty_lines(window);
            check_complete_lines(&window[..n], start, fields, limits, Role::Response)?;
            let (declared, _hosts, name_bits) = scan_framing(window, fields)?;
            validate_response_framing(declared, version)?;
            head.framing = framing_for_response(status, declared, *request_method);
            head.reason = Span::of(window, res.reason.unwrap_or_default().as_bytes());
            head.version = version;
            head.status = status;
            head.declared = declared;
            head.name_bits = name_bits;
            head.consumed_keep_alive = None;
            Ok(Some(n))
        }
    }
}

// ---------------------------------------------------------------------------
// Framing rules

/// A status code httparse has read (the status line is complete) must be
/// 100-999 (RFC 9110 §15); none yet is fine.
fn check_status_code(code: Option<u16>) -> Result<(), Error> {
    match code {
        Some(c) if !(100..=999).contains(&c) => Err(ErrorKind::InvalidStatusLine.into()),
        _ => Ok(()),
    }
}

/// Accumulated Transfer-Encoding facts over every TE field line, in order
/// (RFC 9110 §5.3: several lines form one list).
#[derive(Default)]
struct TeFacts {
    present: bool,
    codings: u32,
    chunked: u32,
    last_is_chunked: bool,
    unknown: bool,
}

/// One pass over the fields: Content-Length (validated, duplicates must
/// agree), Transfer-Encoding facts, Host count, and the names' summary.
fn scan_framing(raw: &[u8], fields: &[FieldIndex]) -> Result<(Declared, usize, NameBits), Error> {
    let mut content_length: Option<u64> = None;
    let mut te = TeFacts::default();
    let mut hosts = 0usize;
    let mut lengths = NameBits::default();
    for f in fields {
        let name = f.name.get(raw);
        lengths.add(name);
        // Cheap pre-filter on length before the case-insensitive compare.
        match name.len() {
            4 if token_is(name, b"host") => hosts += 1,
            14 if token_is(name, b"content-length") => {
                let n = parse_content_length(f.value.get(raw))?;
                match content_length {
                    Some(prev) if prev != n => {
                        return Err(ErrorKind::ConflictingContentLength.into())
                    }
                    _ => content_length = Some(n),
                }
            }
            17 if token_is(name, b"transfer-encoding") => {
                te.present = true;
                for coding in f.value.get(raw).split(|&b| b == b',') {
                    let coding = trim_ows(coding);
                    // RFC 9110 §5.6.1: empty list elements are ignored.
                    if coding.is_empty() {
                        continue;
                    }
                    // transfer-coding = token *( OWS ";" OWS parameter ):
                    // the name is the part before any parameter.
                    let name = trim_ows(coding.split(|&b| b == b';').next().unwrap_or_default());
                    te.codings += 1;
                    if name.eq_ignore_ascii_case(b"chunked") {
                        te.chunked += 1;
                        te.last_is_chunked = true;
                        // chunked takes no parameters (RFC 9112 §7).
                        if name.len() != coding.len() {
                            return Err(ErrorKind::InvalidTransferEncoding.into());
                        }
                    } else {
                        te.last_is_chunked = false;
                        te.unknown = true;
                    }
                }
            }
            _ => {}
        }
    }
    let mut declared = Declared {
        content_length,
        transfer_chunked_last: None,
    };
    if te.present {
        if content_length.is_some() {
            return Err(ErrorKind::TransferEncodingWithContentLength.into());
        }
        if te.codings == 0 {
            return Err(ErrorKind::InvalidTransferEncoding.into());
        }
        if te.chunked > 1 {
            return Err(ErrorKind::ChunkedTwice.into());
        }
        declared.transfer_chunked_last = Some(te.last_is_chunked);
        if te.last_is_chunked && te.unknown {
            // e.g. "gzip, chunked": framing is clear but we cannot undo
            // the inner coding.
            return Err(ErrorKind::UnknownTransferCoding.into());
        }
    }
    Ok((declared, hosts, lengths))
}

/// RFC 9112 §6.3 for requests: TE (chunked final) else CL else no body.
fn request_framing(declared: Declared, version: Version) -> Result<BodyFraming, Error> {
    match declared.transfer_chunked_last {
        Some(_) if version == Version::Http10 => Err(ErrorKind::TransferEncodingInHttp10.into()),
        // §6.3 item 4: chunked not final in a request: 400 (this comes
        // before "unknown coding": the length cannot be determined).
        Some(false) => Err(ErrorKind::ChunkedNotFinal.into()),
        Some(true) => Ok(BodyFraming::Chunked),
        None => Ok(match declared.content_length {
            None | Some(0) => BodyFraming::Empty,
            Some(n) => BodyFraming::Length(n),
        }),
    }
}

fn validate_response_framing(declared: Declared, version: Version) -> Result<(), Error> {
    if declared.transfer_chunked_last.is_some() && version == Version::Http10 {
        return Err(ErrorKind::TransferEncodingInHttp10.into());
    }
    Ok(())
}

/// Content-Length = 1*DIGIT (RFC 9110 §8.6). A list of identical values
/// ("5, 5", as left by a proxy that merged duplicate fields) is accepted
/// as RFC 9110 §8.6 permits; differing values are rejected. Signs, `+`,
/// hex, inner spaces, empty elements and u64 overflow are rejected.
pub(crate) fn parse_content_length(value: &[u8]) -> Result<u64, Error> {
    let mut result: Option<u64> = None;
    for part in value.split(|&b| b == b',') {
        let part = trim_ows(part);
        if part.is_empty() {
            return Err(ErrorKind::InvalidContentLength.into());
        }
        let mut n: u64 = 0;
        for &b in part {
            if !b.is_ascii_digit() {
                return Err(ErrorKind::InvalidContentLength.into());
            }
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(b - b'0')))
                .ok_or(Error::new(ErrorKind::InvalidContentLength))?;
        }
        match result {
            Some(prev) if prev != n => return Err(ErrorKind::ConflictingContentLength.into()),
            _ => result = Some(n),
        }
    }
    result.ok_or(Error::new(ErrorKind::InvalidContentLength))
}

/// Whether a comma-separated list field value contains `token`
/// (case-insensitive).
fn list_contains_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| trim_ows(t).eq_ignore_ascii_case(token))
}

/// Strips optional whitespace (SP / HTAB) at both ends (RFC 9110 §5.6.3).
pub(crate) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

// ---------------------------------------------------------------------------
// Limits and diagnosis

/// Checks line lengths over a (possibly incomplete) head: the start line
/// against `max_request_line_bytes` (414 for requests), every field line
/// against `max_header_line_bytes` (431). An unterminated last line is
/// checked too, so an endless line is caught as soon as it is too long.
fn check_lines(head: &[u8], limits: &Limits, role: Role) -> Result<(), Error> {
    let mut start = 0usize;
    let mut seen_start_line = false;
    let mut ends = memchr::memchr_iter(b'\n', head).chain(std::iter::once(head.len()));
    while start < head.len() {
        let Some(end) = ends.next() else { break };
        let line = &head[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        start = end + 1;
        if !seen_start_line {
            if line.is_empty() {
                continue; // leading empty lines (RFC 9112 §2.2)
            }
            seen_start_line = true;
            if line.len() > limits.max_request_line_bytes {
                return Err(start_line_too_long(
                    line,
                    limits.max_request_line_bytes,
                    role,
                ));
            }
        } else if line.is_empty() {
            break; // end of head
        } else if line.len() > limits.max_header_line_bytes {
            return Err(ErrorKind::HeaderFieldTooLong.into());
        }
    }
    Ok(())
}

fn start_line_too_long(line: &[u8], limit: usize, role: Role) -> Error {
    // Decided on the first `limit + 1` bytes only, so the verdict does not
    // depend on how much of the line has arrived.
    let line = &line[..line.len().min(limit.saturating_add(1))];
    match role {
        // A long line that at least starts like "TOKEN SP" is a long
        // target (414); a method token longer than the limit is garbage
        // (400).
        Role::Request => match memchr::memchr(b' ', line) {
            Some(sp) if sp > 0 && line[..sp].iter().all(|&b| is_tchar(b)) => {
                ErrorKind::RequestLineTooLong.into()
            }
            _ => ErrorKind::InvalidRequestLine.into(),
        },
        Role::Response => ErrorKind::InvalidStatusLine.into(),
    }
}

/// Line-length limits on a complete head, computed from the field spans
/// httparse returned (no scan): same rule as `check_lines` (each line
/// without its CR LF), so the verdict does not depend on how the head was
/// split across reads.
fn check_complete_lines(
    head: &[u8],
    start: usize,
    fields: &[FieldIndex],
    limits: &Limits,
    role: Role,
) -> Result<(), Error> {
    let n = head.len();
    if n <= limits
        .max_request_line_bytes
        .min(limits.max_header_line_bytes)
    {
        return Ok(()); // no line of a head this short can pass either limit
    }
    // The head ends with the blank line: "\r\n" or "\n".
    let blank = if n >= 2 && head[n - 2] == b'\r' {
        n - 2
    } else {
        n - 1
    };
    let line_len = |from: usize, next: usize| {
        let mut end = next.saturating_sub(1); // the LF
        if end > from && head[end - 1] == b'\r' {
            end -= 1;
        }
        end.saturating_sub(from)
    };
    let mut line_start = start;
    let mut first = true;
    let nexts = fields
        .iter()
        .map(|f| f.name.start as usize)
        .chain(std::iter::once(blank));
    for next in nexts {
        let len = line_len(line_start, next);
        if first {
            if len > limits.max_request_line_bytes {
                return Err(start_line_too_long(
                    &head[line_start..],
                    limits.max_request_line_bytes,
                    role,
                ));
            }
            first = false;
        } else if len > limits.max_header_line_bytes {
            return Err(ErrorKind::HeaderFieldTooLong.into());
        }
        line_start = next;
    }
    Ok(())
}

/// Offset of the first byte after leading empty lines.
fn skip_empty_lines(window: &[u8]) -> usize {
    let mut i = 0;
    loop {
        match window.get(i..) {
            Some([b'\n', ..]) => i += 1,
            Some([b'\r', b'\n', ..]) => i += 2,
            _ => return i,
        }
    }
}

/// Limits on a head httparse says is incomplete.
fn check_partial(window: &[u8], total: usize, limits: &Limits, role: Role) -> Result<(), Error> {
    check_lines(window, limits, role)?;
    if total > limits.head_bytes() {
        return Err(ErrorKind::HeadTooLarge.into());
    }
    Ok(())
}

/// Names the fault in a head httparse rejected. Slow path: errors only.
///
/// The verdict depends only on the bytes up to and including the byte
/// httparse stopped at, found by bisection (httparse's verdict is
/// prefix-monotone: once a prefix is an error, every extension is). So
/// the same input yields the same `ErrorKind` however it was split across
/// reads, which the fuzz target checks.
fn diagnose(window: &[u8], err: httparse::Error, limits: &Limits, role: Role) -> Error {
    let prefix = &window[..fault_prefix_len(window, limits, role)];
    if role == Role::Response {
        // A bad status code before the fault is the earlier fault, as a
        // partial head would have shown (`check_status_code` there).
        let accepted = &prefix[..prefix.len() - 1];
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_ARRAY_CAP];
        let mut res = httparse::Response::new(&mut []);
        let _ = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            accepted,
            &mut slots[..limits.header_slots()],
        );
        if let Err(e) = check_status_code(res.code) {
            return e;
        }
    }
    if let Err(e) = check_lines(prefix, limits, role) {
        return e;
    }
    if let Some(kind) = analyze(prefix, role) {
        return kind.into();
    }
    match err {
        httparse::Error::TooManyHeaders => ErrorKind::TooManyHeaders.into(),
        httparse::Error::HeaderName => ErrorKind::InvalidHeaderName.into(),
        httparse::Error::HeaderValue => ErrorKind::InvalidHeaderValue.into(),
        httparse::Error::NewLine => ErrorKind::BareCr.into(),
        _ => match role {
            Role::Request => ErrorKind::InvalidRequestLine.into(),
            Role::Response => ErrorKind::InvalidStatusLine.into(),
        },
    }
}

/// The shortest prefix of `window` that httparse rejects (at most
/// log2(64 Ki) = 17 re-parses, on the error path only).
fn fault_prefix_len(window: &[u8], limits: &Limits, role: Role) -> usize {
    let is_err = |bytes: &[u8]| {
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; HEADER_ARRAY_CAP];
        let slots = &mut slots[..limits.header_slots()];
        match role {
            Role::Request => httparse::Request::new(&mut [])
                .parse_with_uninit_headers(bytes, slots)
                .is_err(),
            Role::Response => httparse::ParserConfig::default()
                .parse_response_with_uninit_headers(
                    &mut httparse::Response::new(&mut []),
                    bytes,
                    slots,
                )
                .is_err(),
        }
    };
    // Invariant: window[..lo] is not an error, window[..hi] is.
    let (mut lo, mut hi) = (0usize, window.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if is_err(&window[..mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Classifies the fault at the end of `prefix` (which ends with the byte
/// httparse rejected). Looks only at `prefix`; `None` if it cannot name it.
fn analyze(prefix: &[u8], role: Role) -> Option<ErrorKind> {
    let len = prefix.len();
    let mut i = 0usize;
    // Leading empty lines (RFC 9112 §2.2), as httparse skips them.
    while i < len {
        match prefix[i] {
            b'\n' => i += 1,
            b'\r' => match prefix.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(_) => return Some(ErrorKind::BareCr),
                None => return None,
            },
            _ => break,
        }
    }
    // Start line: if the fault is in it, classify it there.
    let rest = &prefix[i..];
    let Some(lf) = memchr::memchr(b'\n', rest) else {
        return Some(match role {
            Role::Request => analyze_request_line(rest).unwrap_or(ErrorKind::InvalidRequestLine),
            Role::Response => classify_version(rest, role).unwrap_or(ErrorKind::InvalidStatusLine),
        });
    };
    i += lf + 1;
    // Field lines.
    let mut first_field = true;
    while i < len {
        let rest = &prefix[i..];
        let (line, complete) = match memchr::memchr(b'\n', rest) {
            Some(n) => (&rest[..n], true),
            None => (rest, false),
        };
        i += line.len() + 1;
        if line.is_empty() || line == b"\r" {
            return None; // end of head (or its CR): no fault here
        }
        if matches!(line[0], b' ' | b'\t') {
            return Some(if first_field {
                ErrorKind::WhitespaceBeforeFirstField
            } else {
                ErrorKind::ObsFold
            });
        }
        first_field = false;
        let n = line
            .iter()
            .position(|&b| !is_tchar(b))
            .unwrap_or(line.len());
        let Some(&c) = line.get(n) else {
            return None; // name still arriving
        };
        match c {
            b':' if n > 0 => {}
            b' ' | b'\t' if n > 0 => return Some(ErrorKind::SpaceBeforeColon),
            _ => return Some(ErrorKind::InvalidHeaderName),
        }
        let value = &line[n + 1..];
        for (j, &v) in value.iter().enumerate() {
            if v == b'\r' {
                if j + 1 < value.len() {
                    return Some(ErrorKind::BareCr);
                }
                // CR as the last byte: the CRLF (complete) or still open.
            } else if (v < 0x20 && v != b'\t') || v == 0x7f {
                return Some(ErrorKind::InvalidHeaderValue);
            }
        }
        if !complete {
            return None;
        }
    }
    None
}

/// The fault in a (possibly unterminated) request line, looking left to
/// right as httparse does: method token, SP, target, SP, version.
fn analyze_request_line(line: &[u8]) -> Option<ErrorKind> {
    let m = line.iter().position(|&b| !is_tchar(b))?;
    if m == 0 || line[m] != b' ' {
        return Some(ErrorKind::InvalidRequestLine);
    }
    let t0 = m + 1;
    let t = t0 + line[t0..].iter().position(|&b| b < 0x21 || b == 0x7f)?;
    if t == t0 {
        // Empty target: a second SP or a control byte right after the SP.
        return Some(if line[t] == b' ' {
            ErrorKind::InvalidRequestLine
        } else {
            ErrorKind::InvalidTarget
        });
    }
    if line[t] != b' ' || std::str::from_utf8(&line[t0..t]).is_err() {
        return Some(ErrorKind::InvalidTarget);
    }
    classify_version(&line[t + 1..], Role::Request)
}

/// The fault in a version token compared with `HTTP/1.0` / `HTTP/1.1`,
/// decided on the bytes up to the first mismatch: `HTTP/` then a digit
/// where we expected `1`, `.`, `0`/`1` is a version we do not support
/// (505: `HTTP/2.0`, `HTTP/1.2`, `HTTP/0.9`, the HTTP/2 preface); any
/// other mismatch is a malformed line (400).
fn classify_version(token: &[u8], role: Role) -> Option<ErrorKind> {
    const EXPECTED: &[u8; 7] = b"HTTP/1.";
    let malformed = match role {
        Role::Request => ErrorKind::InvalidRequestLine,
        Role::Response => ErrorKind::InvalidStatusLine,
    };
    for (k, &b) in token.iter().take(8).enumerate() {
        let ok = if k < 7 {
            b == EXPECTED[k]
        } else {
            b == b'0' || b == b'1'
        };
        if !ok {
            return Some(if k >= 5 && b.is_ascii_digit() {
                ErrorKind::UnsupportedVersion
            } else {
                malformed
            });
        }
    }
    // A complete HTTP/1.x: what follows must end the token.
    let after = *token.get(8)?;
    match (role, after) {
        (_, b'0'..=b'9' | b'.') => Some(ErrorKind::UnsupportedVersion),
        (Role::Request, b'\r') => token.get(9).map(|_| ErrorKind::BareCr),
        (Role::Response, b' ') => None,
        _ => Some(malformed),
    }
}

/// tchar (RFC 9110 §5.6.2).
pub(crate) fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        | b'^' | b'_' | b'`' | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `token_is` agrees with `eq_ignore_ascii_case` for every pair of a
    /// token byte and a byte of the framing names it is used with.
    #[test]
    fn token_is_is_a_case_insensitive_compare_on_tokens() {
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        let lowers: Vec<u8> = b"host content-length transfer-encoding"
            .iter()
            .copied()
            .filter(|&b| b != b' ')
            .collect();
        for b in (0u8..=255).filter(|&b| tchar(b)) {
            for &l in &lowers {
                assert_eq!(
                    token_is(&[b], &[l]),
                    [b].eq_ignore_ascii_case(&[l]),
                    "{b:#x} vs {l:#x}"
                );
            }
        }
        assert!(token_is(b"Content-Length", b"content-length"));
        assert!(!token_is(b"Content-Lengtx", b"content-length"));
        assert!(!token_is(b"Host", b"hosts"));
    }

    /// What `NameBits`' comment claims: the lookups a server or the load
    /// generator makes for fields usually absent share no bit with the
    /// fields a browser sends, or a server answers with.
    #[test]
    fn usual_absent_lookups_share_no_bit_with_usual_fields() {
        let browser = "host user-agent accept accept-language accept-encoding connection \
            upgrade-insecure-requests sec-fetch-dest sec-fetch-mode sec-fetch-site sec-fetch-user \
            cache-control pragma referer cookie sec-ch-ua sec-ch-ua-mobile sec-ch-ua-platform \
            priority te dnt origin";
        let server = "server content-type content-length date etag last-modified accept-ranges \
            cache-control vary content-encoding expires transfer-encoding keep-alive location \
            set-cookie link age";
        let absent_in_requests = "range if-match if-none-match if-modified-since \
            if-unmodified-since if-range expect getall content-length transfer-encoding";
        let absent_in_responses = "connection transfer-encoding proxy-connection";
        for (present, asked) in [(browser, absent_in_requests), (server, absent_in_responses)] {
            let mut bits = NameBits::default();
            let present: Vec<&str> = present.split_whitespace().collect();
            for p in &present {
                bits.add(p.as_bytes());
            }
            for a in asked.split_whitespace().filter(|a| !present.contains(a)) {
                assert!(!bits.may_hold(a.as_bytes()), "{a}");
            }
        }
    }

    /// Names equal ignoring case get the same bit.
    #[test]
    fn name_bits_ignore_case() {
        for (a, b) in [
            ("Host", "host"),
            ("ETAG", "etag"),
            ("x", "X"),
            ("Content-Length", "content-LENGTH"),
        ] {
            assert_eq!(
                NameBits::bit(a.as_bytes()),
                NameBits::bit(b.as_bytes()),
                "{a} {b}"
            );
        }
    }
}
