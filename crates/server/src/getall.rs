//! GETALL and GETLIST (Padmanabhan & Mogul, "Improving HTTP Latency",
//! section 5): one request for a page and every same-server object it
//! embeds, or for a list of objects, answered as one `multipart/mixed`
//! response whose parts carry `Content-Location`, `Content-Type`,
//! `Content-Length` and the object's validators. The framing, the
//! compatible variant (`GET` with `Getall: 1`) and conditional requests are
//! documented in docs/getall.md.
//!
//! The paper: "the server parses the HTML file to find the URLs of the
//! images ... Or, the server could keep a cache of the URLs associated with
//! specific HTML files": each page is parsed once, on its first GETALL, and
//! its references are kept (resolved, not yet filtered by origin, since
//! that depends on the request's Host).

use std::io::Write as _;
use std::sync::OnceLock;

use bytes::Bytes;
use pagewire_h1::{
    write_header, write_header_u64, write_status_line, BodyFraming, Method, RequestHead, Version,
};
use pagewire_site::store::Resource;

use crate::handler::{
    encode_location, etag_matches, finish_head, parse_date, simple, Answered, Ctx, StaticSite,
    SERVER,
};
use crate::io::WriteBuf;
use crate::target::{self, Target};

/// The compatible variant's request field: an ordinary GET carrying
/// `Getall: 1` asks for GETALL; a server that does not know it ignores it
/// (RFC 9110 §5.1: unrecognised fields are ignored).
pub const GETALL_FIELD: &str = "getall";
/// Most objects a GETLIST may name (a bound on the response we assemble;
/// the request body is also bounded by the server's skipped-body limit).
pub const MAX_LIST: usize = 1000;
/// Most parts of one GETALL (pages with more references get the first ones).
pub const MAX_PARTS: usize = 1000;

/// Which extension a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `GETALL /page`.
    GetAll,
    /// `GET /page` with `Getall: 1`.
    GetWithField,
    /// `GETLIST /` with a `text/uri-list` body.
    GetList,
}

/// Whether `req` is a GETALL, a GETLIST or a GET asking for GETALL.
pub fn kind(req: &RequestHead) -> Option<Kind> {
    match req.method() {
        Method::Other => match req.method_bytes() {
            b"GETALL" => Some(Kind::GetAll),
            b"GETLIST" => Some(Kind::GetList),
            _ => None,
        },
        Method::Get => req
            .header(GETALL_FIELD)
            .filter(|v| v.trim_ascii() == b"1")
            .map(|_| Kind::GetWithField),
        _ => None,
    }
}

/// A GETLIST whose `text/uri-list` body (at most MAX_SKIPPED_BODY_BYTES)
/// has not fully arrived: puts the head back in front of `buf` and returns
/// true, so the connection loop reads more and parses the request again
/// (the list may span several TCP segments). Copies only on this path.
pub fn wait_for_body(head: &RequestHead, buf: &mut bytes::BytesMut) -> bool {
    if head.method() != Method::Other || head.method_bytes() != b"GETLIST" {
        return false;
    }
    match head.body_framing() {
        Ok(BodyFraming::Length(n))
            if n <= crate::policy::MAX_SKIPPED_BODY_BYTES && (buf.len() as u64) < n =>
        {
            let mut whole = bytes::BytesMut::with_capacity(head.raw().len() + n as usize);
            whole.extend_from_slice(head.raw());
            whole.extend_from_slice(buf);
            *buf = whole;
            true
        }
        _ => false,
    }
}

/// Per-page cache of discovered references (resolved against the page's
/// path; absolute URLs stay absolute until a request's Host filters them).
pub struct Index {
    refs: Vec<OnceLock<Box<[String]>>>,
}

impl Index {
    pub fn new(n: usize) -> Index {
        Index {
            refs: (0..n).map(|_| OnceLock::new()).collect(),
        }
    }

    fn refs<'a>(&'a self, i: usize, r: &Resource) -> &'a [String] {
        self.refs[i].get_or_init(|| {
            if !r.media_type.starts_with("text/html") {
                return Box::default();
            }
            pagewire_discover::Discoverer::all(&r.path, &r.body).into_boxed_slice()
        })
    }
}

/// One part: the object, or why it is not there.
enum Part<'a> {
    Object { r: &'a Resource, not_modified: bool },
    Missing { location: String, status: u16 },
}

/// Answers a GETALL / GETLIST / GET+Getall request.
pub fn answer(
    site: &StaticSite,
    kind: Kind,
    req: &RequestHead,
    ctx: Ctx<'_>,
    out: &mut WriteBuf,
) -> Answered {
    let conn = ctx.conn;
    let mut parts: Vec<Part> = Vec::new();
    let mut first = None;
    match kind {
        Kind::GetAll | Kind::GetWithField => {
            let page = match target::parse(req.target(), ctx.scratch) {
                Ok(Target::Path { path, .. }) => path.to_string(),
                Ok(Target::Asterisk) => {
                    return simple(out, 400, conn, &[], "'*' is only for OPTIONS\n", false)
                }
                Err(e) => return simple(out, 400, conn, &[], &format!("{}\n", e.reason()), false),
            };
            let Some(i) = site.index_of(&page) else {
                return simple(out, 404, conn, &[], "not found\n", false);
            };
            let r = &site.site().resources()[i];
            first = Some(i);
            parts.push(object(req, r));
            // Same origin as the request: relative references always; an
            // absolute one when its authority is the request's Host.
            let base = match req.header("host").and_then(|h| std::str::from_utf8(h).ok()) {
                Some(h) if !h.is_empty() => format!("http://{}/", h.trim()),
                _ => "/".to_string(),
            };
            let mut seen = std::collections::HashSet::new();
            seen.insert(i);
            for u in site.getall_index().refs(i, r) {
                if parts.len() >= MAX_PARTS {
                    break;
                }
                let Some(t) = pagewire_discover::same_server_path(&base, u) else {
                    continue;
                };
                let mut scratch = String::new();
                let Ok(Target::Path { path, .. }) = target::parse(&t, &mut scratch) else {
                    continue;
                };
                match site.index_of(path) {
                    Some(j) if seen.insert(j) => {
                        parts.push(object(req, &site.site().resources()[j]));
                    }
                    Some(_) => {}
                    // A reference to nothing: say so, so the client does not
                    // wait for it or ask again.
                    None => {
                        if seen.len() + parts.len() < MAX_PARTS {
                            parts.push(Part::Missing {
                                location: t.clone(),
                                status: 404,
                            });
                        }
                    }
                }
            }
        }
        Kind::GetList => {
            if matches!(req.body_framing(), Ok(BodyFraming::Chunked)) {
                return simple(
                    out,
                    411,
                    conn,
                    &[],
                    "GETLIST needs a Content-Length body\n",
                    false,
                );
            }
            // The connection loop hands over a body only when it arrived
            // with the head and is at most MAX_SKIPPED_BODY_BYTES; otherwise
            // it closes after this answer, and the client falls back to
            // pipelined GETs (docs/getall.md, "Limits").
            if let Ok(BodyFraming::Length(n)) = req.body_framing() {
                if ctx.body.len() as u64 != n {
                    let status = if n > crate::policy::MAX_SKIPPED_BODY_BYTES {
                        413
                    } else {
                        400
                    };
                    return simple(
                        out,
                        status,
                        conn,
                        &[],
                        "GETLIST body did not arrive with its head\n",
                        false,
                    );
                }
            }
            let Ok(text) = std::str::from_utf8(ctx.body) else {
                return simple(out, 400, conn, &[], "uri-list is not UTF-8\n", false);
            };
            // RFC 2483 §5: one URI per line, CRLF (we accept LF), lines
            // starting with '#' are comments.
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if parts.len() == MAX_LIST {
                    return simple(
                        out,
                        413,
                        conn,
                        &[],
                        &format!("more than {MAX_LIST} URIs\n"),
                        false,
                    );
                }
                let base = match req.header("host").and_then(|h| std::str::from_utf8(h).ok()) {
                    Some(h) if !h.is_empty() => format!("http://{}/", h.trim()),
                    _ => "/".to_string(),
                };
                let resolved = pagewire_discover::resolve(&base, line)
                    .and_then(|u| pagewire_discover::same_server_path(&base, &u));
                let Some(t) = resolved else {
                    parts.push(Part::Missing {
                        location: line.to_string(),
                        status: 400,
                    });
                    continue;
                };
                let mut scratch = String::new();
                let idx = match target::parse(&t, &mut scratch) {
                    Ok(Target::Path { path, .. }) => site.index_of(path),
                    _ => None,
                };
                match idx {
                    Some(j) => {
                        first.get_or_insert(j);
                        parts.push(object(req, &site.site().resources()[j]));
                    }
                    None => parts.push(Part::Missing {
                        location: t,
                        status: 404,
                    }),
                }
            }
        }
    }
    write_multipart(out, kind, &parts, ctx.conn, ctx.extra, first)
}

fn object<'a>(req: &RequestHead, r: &'a Resource) -> Part<'a> {
    // Conditional GETALL/GETLIST: `If-None-Match` lists every entity tag
    // the client holds (strong tags are unique per content, so one list
    // serves all parts); failing that, `If-Modified-Since` applies to each.
    let mut inm = req.headers("if-none-match").peekable();
    let not_modified = if inm.peek().is_some() {
        inm.any(|v| etag_matches(v, &r.etag, true))
    } else {
        req.header("if-modified-since")
            .and_then(parse_date)
            .is_some_and(|since| r.last_modified <= since)
    };
    Part::Object { r, not_modified }
}

/// FNV-1a over the parts' entity tags: a boundary that depends on the
/// content, so it cannot occur in a body except by coincidence (and parts
/// carry Content-Length, so a client never has to search for it).
fn boundary(parts: &[Part]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        let s: &[u8] = match p {
            Part::Object { r, .. } => r.etag.as_bytes(),
            Part::Missing { location, .. } => location.as_bytes(),
        };
        for &b in s {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("pagewire-all-{h:016x}")
}

fn write_multipart(
    out: &mut WriteBuf,
    kind: Kind,
    parts: &[Part],
    conn: crate::handler::ConnHeader,
    extra: &[u8],
    first: Option<usize>,
) -> Answered {
    let b = boundary(parts);
    // Part heads first: the total Content-Length comes before them.
    let mut heads: Vec<Vec<u8>> = Vec::with_capacity(parts.len());
    let mut total = 0usize;
    for p in parts {
        let mut h = Vec::with_capacity(256);
        let _ = write!(h, "--{b}\r\n");
        let body_len = match p {
            Part::Object { r, not_modified } => {
                let loc = encode_location(&r.path);
                if *not_modified {
                    let _ = write!(
                        h,
                        "Status: 304 Not Modified\r\nContent-Location: {loc}\r\nETag: {}\r\nContent-Length: 0\r\n\r\n",
                        r.etag
                    );
                    0
                } else {
                    let _ = write!(
                        h,
                        "Content-Location: {loc}\r\nContent-Type: {}\r\nContent-Length: {}\r\nETag: {}\r\nLast-Modified: {}\r\n\r\n",
                        r.media_type,
                        r.body.len(),
                        r.etag,
                        r.last_modified_http
                    );
                    r.body.len()
                }
            }
            Part::Missing { location, status } => {
                let _ = write!(
                    h,
                    "Status: {status} {}\r\nContent-Location: {}\r\nContent-Length: 0\r\n\r\n",
                    pagewire_h1::reason_phrase(*status),
                    encode_location(location)
                );
                0
            }
        };
        total += h.len() + body_len + 2;
        heads.push(h);
    }
    let close = format!("--{b}--\r\n");
    total += close.len();
    // Through the h1 writers, like every other head (the boundary is ours:
    // hex digits, so the fields cannot be refused).
    let content_type = format!("multipart/mixed; boundary={b}");
    let head_ok = write_status_line(out, Version::Http11, 200).is_ok()
        && write_header(out, "Server", SERVER.as_bytes()).is_ok()
        && write_header(out, "Content-Type", content_type.as_bytes()).is_ok()
        && write_header_u64(out, "Content-Length", total as u64).is_ok()
        && (kind != Kind::GetWithField || write_header(out, "Vary", b"Getall").is_ok());
    debug_assert!(head_ok, "multipart head refused");
    finish_head(out, conn, extra);
    for (p, h) in parts.iter().zip(&heads) {
        out.put(h);
        if let Part::Object {
            r,
            not_modified: false,
        } = p
        {
            let body: &Bytes = &r.body;
            out.put_body(body);
        }
        out.put(b"\r\n");
    }
    out.put(close.as_bytes());
    Answered {
        status: 200,
        body_bytes: total as u64,
        resource: first,
    }
}
