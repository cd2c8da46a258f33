//! The pieces every handler's responses are made of (the static site,
//! GETALL/GETLIST, object packages, a recorded site): the per-request
//! context, what a handler reports, the generated fields and the end of a
//! head, small text responses, and the precondition rules of RFC 9110
//! §13. Below all handlers in the module graph; it knows none of them.
//!
//! Every head byte goes through the `pagewire-h1` writers
//! (`write_status_line`, `write_header`, `end_head`): the one place that
//! validates what a field may contain.

use std::time::SystemTime;

use pagewire_h1::{
    end_head, write_header, write_header_u64, write_status_line, Output, RequestHead, ResponseHead,
    Version,
};

use crate::io::WriteBuf;
use crate::time::{with_http_date, HTTP_DATE_LEN};

/// Methods we implement, for `Allow` (RFC 9110 §10.2.1).
pub const ALLOW: &str = "GET, HEAD, OPTIONS";
/// `Server` field (RFC 9110 §10.2.4): product and version, nothing more.
pub const SERVER: &str = concat!("pagewire/", env!("CARGO_PKG_VERSION"));

/// How the response ends the message exchange on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnHeader {
    /// HTTP/1.1 persistent: nothing to say.
    None,
    /// HTTP/1.0 client that asked for keep-alive (RFC 9112 §C.2.2).
    KeepAlive,
    /// Last response on this connection (RFC 9112 §9.6).
    Close,
}

/// What the handler did, for counters and the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub status: u16,
    /// Body bytes sent (0 for HEAD).
    pub body_bytes: u64,
    /// The resource served (for the prefetch predictor), if any.
    pub resource: Option<usize>,
}

/// Per-request inputs besides the head.
pub struct Ctx<'a> {
    pub conn: ConnHeader,
    /// The value of a prefetch `Link` field (empty: none).
    pub extra: &'a [u8],
    /// Reusable scratch for decoding targets.
    pub scratch: &'a mut String,
    /// The request body when one was small and already read (GETLIST's
    /// uri-list); empty otherwise.
    pub body: &'a [u8],
}

/// Appends a field the server generated itself (digits, constants,
/// percent-encoded paths): the encoder still checks it, and a refusal, which
/// would be a bug, leaves nothing appended rather than a split response.
pub(crate) fn field<O: Output + ?Sized>(out: &mut O, name: &str, value: &[u8]) {
    let written = write_header(out, name, value);
    debug_assert!(written.is_ok(), "refused field {name}: {value:?}");
}

/// Date, Connection, the prefetch `Link` field (its value, if any) and the
/// blank line ending the head.
///
/// Every response passes here, so the constant lines are assembled in one
/// stack buffer and appended with one copy, without `write_header`'s checks
/// (the names are ours and the date is one we formatted); the `Link` value
/// is still checked.
pub(crate) fn finish_head(out: &mut WriteBuf, conn: ConnHeader, link: &[u8]) {
    const DATE: &[u8] = b"Date: ";
    const KEEP_ALIVE: &[u8] = b"Connection: keep-alive\r\n";
    const CLOSE: &[u8] = b"Connection: close\r\n";
    let mut line = [0u8; DATE.len() + HTTP_DATE_LEN + 2 + KEEP_ALIVE.len() + 2];
    line[..DATE.len()].copy_from_slice(DATE);
    let mut n = DATE.len();
    with_http_date(|d| line[n..n + HTTP_DATE_LEN].copy_from_slice(d));
    n += HTTP_DATE_LEN;
    line[n..n + 2].copy_from_slice(b"\r\n");
    n += 2;
    let conn_line: &[u8] = match conn {
        ConnHeader::None => b"",
        ConnHeader::KeepAlive => KEEP_ALIVE,
        ConnHeader::Close => CLOSE,
    };
    line[n..n + conn_line.len()].copy_from_slice(conn_line);
    n += conn_line.len();
    if link.is_empty() {
        line[n..n + 2].copy_from_slice(b"\r\n");
        out.put(&line[..n + 2]);
        return;
    }
    out.put(&line[..n]);
    field(out, "Link", link);
    end_head(out);
}

/// Response fields of HTTP/1 framing and connection management, which
/// HTTP/2 and HTTP/3 forbid (RFC 9113 §8.2.2, RFC 9114 §4.2).
pub(crate) const DROPPED_RESPONSE_FIELDS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// The fields of an HTTP/1 response head as HTTP/2 and HTTP/3 send them:
/// in the head's order, without [`DROPPED_RESPONSE_FIELDS`]; each value is
/// a view of the head's bytes, not a copy.
pub(crate) fn h2_fields(head: &ResponseHead) -> http::HeaderMap {
    let mut map = http::HeaderMap::with_capacity(head.header_count());
    let raw = head.raw();
    for (name, value) in head.iter() {
        let Ok(name) = http::HeaderName::from_bytes(name) else {
            continue;
        };
        if DROPPED_RESPONSE_FIELDS.contains(&name.as_str()) {
            continue;
        }
        if let Ok(v) = http::HeaderValue::from_maybe_shared(raw.slice_ref(value)) {
            map.append(name, v);
        }
    }
    map
}

/// Appends `HTTP/1.1 <status> <reason>` (status is always one of ours).
pub(crate) fn status_line(out: &mut WriteBuf, status: u16) {
    let written = write_status_line(out, Version::Http11, status);
    debug_assert!(written.is_ok(), "status {status}");
}

/// A small response with a text body (errors, redirects, OPTIONS).
pub fn simple(
    out: &mut WriteBuf,
    status: u16,
    conn: ConnHeader,
    fields: &[(&str, &str)],
    body: &str,
    head_only: bool,
) -> Answered {
    status_line(out, status);
    field(out, "Server", SERVER.as_bytes());
    for (k, v) in fields {
        field(out, k, v.as_bytes());
    }
    if !body.is_empty() {
        field(out, "Content-Type", b"text/plain; charset=utf-8");
    }
    let _ = write_header_u64(out, "Content-Length", body.len() as u64);
    finish_head(out, conn, b"");
    if !head_only {
        out.put(body.as_bytes());
    }
    Answered {
        status,
        body_bytes: if head_only { 0 } else { body.len() as u64 },
        resource: None,
    }
}

pub(crate) fn encode_location(path: &str) -> String {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    // Everything that cannot appear raw in a URI path or query.
    const SET: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'<')
        .add(b'>')
        .add(b'`')
        .add(b'#')
        .add(b'{')
        .add(b'}')
        .add(b'%');
    utf8_percent_encode(path, SET).to_string()
}

/// Percent-encodes a store path for a `Link` header target.
pub fn encode_link_target(path: &str, out: &mut Vec<u8>) {
    use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
    const SET: &AsciiSet = &CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'<')
        .add(b'>')
        .add(b'`')
        .add(b'#')
        .add(b'?')
        .add(b'{')
        .add(b'}')
        .add(b'%')
        .add(b',')
        .add(b';');
    for part in utf8_percent_encode(path, SET) {
        out.extend_from_slice(part.as_bytes());
    }
}

pub(crate) enum Precondition {
    Proceed,
    NotModified,
    Failed,
}

/// Iterates the entity tags of an If-Match / If-None-Match list
/// (RFC 9110 §8.8.3): yields `(weak, opaque-tag-with-quotes)`, or `None`
/// for `*`. Stops at the first malformed member.
fn etag_list(value: &[u8]) -> impl Iterator<Item = Option<(bool, &[u8])>> {
    let mut rest = value;
    std::iter::from_fn(move || {
        while let [b' ' | b'\t' | b',', tail @ ..] = rest {
            rest = tail;
        }
        if rest.is_empty() {
            return None;
        }
        if rest[0] == b'*' {
            rest = &rest[1..];
            return Some(None);
        }
        let weak = rest.starts_with(b"W/");
        if weak {
            rest = &rest[2..];
        }
        if rest.first() != Some(&b'"') {
            return None;
        }
        let end = rest[1..].iter().position(|&b| b == b'"')? + 2;
        let tag = &rest[..end];
        rest = &rest[end..];
        Some(Some((weak, tag)))
    })
}

pub(crate) fn etag_matches(list: &[u8], current: &str, weak_ok: bool) -> bool {
    etag_list(list).any(|m| match m {
        None => true,
        Some((weak, tag)) => (weak_ok || !weak) && tag == current.as_bytes(),
    })
}

pub(crate) fn parse_date(value: &[u8]) -> Option<SystemTime> {
    httpdate::parse_http_date(std::str::from_utf8(value).ok()?.trim()).ok()
}

/// RFC 9110 §13.2.2, steps 1-4 (5, If-Range, is `if_range_holds`).
pub(crate) fn preconditions(
    req: &RequestHead,
    etag: &str,
    last_modified: SystemTime,
) -> Precondition {
    // Most requests carry no conditional field: each lookup below then
    // costs one bit test (`RequestHead::header` skips names the head's
    // summary rules out), no scan of the fields.
    // 1. If-Match: strong comparison (§13.1.1).
    if let Some(v) = req.header("if-match") {
        if !etag_matches(v, etag, false) {
            return Precondition::Failed;
        }
    } else if let Some(date) = req.header("if-unmodified-since").and_then(parse_date) {
        // 2. If-Unmodified-Since, only without If-Match.
        if last_modified > date {
            return Precondition::Failed;
        }
    }
    // 3. If-None-Match: weak comparison (§13.1.2); 304 for GET/HEAD.
    if let Some(v) = req.header("if-none-match") {
        if etag_matches(v, etag, true) {
            return Precondition::NotModified;
        }
    } else if let Some(date) = req.header("if-modified-since").and_then(parse_date) {
        // 4. If-Modified-Since, only without If-None-Match. An invalid date
        // is ignored (§13.1.3).
        if last_modified <= date {
            return Precondition::NotModified;
        }
    }
    Precondition::Proceed
}

/// If-Range (RFC 9110 §13.1.5): an entity tag must match strongly; a date
/// must equal Last-Modified exactly. Without If-Range the Range applies.
pub(crate) fn if_range_holds(req: &RequestHead, etag: &str, last_modified: SystemTime) -> bool {
    let Some(v) = req.header("if-range") else {
        return true;
    };
    let v = trim(v);
    if v.starts_with(b"\"") || v.starts_with(b"W/") {
        !v.starts_with(b"W/") && v == etag.as_bytes()
    } else {
        parse_date(v) == Some(last_modified)
    }
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_lists() {
        let cur = "\"abc\"";
        assert!(etag_matches(b"\"abc\"", cur, true));
        assert!(etag_matches(b"W/\"abc\"", cur, true));
        assert!(!etag_matches(b"W/\"abc\"", cur, false));
        assert!(etag_matches(b"\"x\", \"abc\"", cur, true));
        assert!(etag_matches(b"*", cur, false));
        assert!(!etag_matches(b"\"abcd\"", cur, true));
        assert!(!etag_matches(b"abc", cur, true));
        assert!(!etag_matches(b"\"ab", cur, true));
    }
}
