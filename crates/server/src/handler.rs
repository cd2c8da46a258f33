//! The static handler: what the bytes of a response are. Given a parsed
//! request, it chooses the representation (RFC 9110 §12.5.3), evaluates
//! preconditions (§13.2.2), ranges (§14) and writes the whole response into
//! the connection's output queue. It never decides when bytes move.
//!
//! Response heads for every resource and coding are rendered once when the
//! server starts; per request only `Date` (cached per second), `Connection`
//! and optional prefetch hints are appended. Nothing on the 200/304 path
//! allocates.
//!
//! Every head byte goes through the `pagewire-h1` writers (`write_status_line`,
//! `write_header`, `end_head`): the one place that validates what a field
//! may contain (no CR, LF or NUL can split a response).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use pagewire_h1::{
    end_head, write_header, write_header_u64, write_status_line, Method, Output, RequestHead,
    Version,
};
use pagewire_site::store::{Encoding, Resource, Site};

use crate::io::WriteBuf;
use crate::negotiate::{self, Choice};
use crate::range::{self, ByteRange, RangeOutcome};
use crate::target::{self, Target};
use crate::time::with_http_date;

/// Methods we implement, for `Allow` (RFC 9110 §10.2.1).
pub const ALLOW: &str = "GET, HEAD, OPTIONS";
/// `Server` field (RFC 9110 §10.2.4): product and version, nothing more.
pub const SERVER: &str = concat!("pagewire/", env!("CARGO_PKG_VERSION"));

/// Where a decoded path leads.
#[derive(Debug, Clone, Copy)]
enum Route {
    File(usize),
    /// `/dir` whose index exists: redirect to `/dir/`.
    AddSlash,
}

/// Pre-rendered header blocks of one representation.
struct VariantHeads {
    /// `HTTP/1.1 200 OK` + every field except Date/Connection, no blank line.
    ok: Box<[u8]>,
    /// Representation fields (no status line, no Content-Length) for 206.
    common: Box<[u8]>,
    /// `HTTP/1.1 304 Not Modified` + ETag, Vary (RFC 9110 §15.4.5).
    not_modified: Box<[u8]>,
}

struct ResourceHeads {
    variants: [Option<VariantHeads>; 5],
    /// multipart/byteranges boundary: derived from the entity tag, so it
    /// cannot occur in the body except by a 128-bit coincidence.
    boundary: Box<str>,
}

/// A site ready to be served.
pub struct StaticSite {
    site: Arc<Site>,
    packages: crate::objpack::Packages,
    routes: HashMap<Box<str>, Route>,
    heads: Vec<ResourceHeads>,
    getall: crate::getall::Index,
}

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

fn render_variant(
    r: &Resource,
    enc: Encoding,
    vary: bool,
    vary_accept: bool,
) -> Option<VariantHeads> {
    // A page with an object package is also negotiated on Accept.
    let vary_value: &[u8] = match (vary, vary_accept) {
        (true, true) => b"Accept-Encoding, Accept",
        (true, false) => b"Accept-Encoding",
        (false, true) => b"Accept",
        (false, false) => b"",
    };
    let v = r.variant_full(enc)?;
    // Site data (media type, entity tag) is validated here, once: a value
    // the encoder refuses leaves this representation unserved (500), never
    // a split response.
    let mut common = Vec::with_capacity(256);
    write_header(&mut common, "Server", SERVER.as_bytes()).ok()?;
    write_header(&mut common, "Content-Type", r.media_type.as_bytes()).ok()?;
    write_header(&mut common, "ETag", v.etag.as_bytes()).ok()?;
    write_header(
        &mut common,
        "Last-Modified",
        r.last_modified_http.as_bytes(),
    )
    .ok()?;
    write_header(&mut common, "Accept-Ranges", b"bytes").ok()?;
    if !vary_value.is_empty() {
        write_header(&mut common, "Vary", vary_value).ok()?;
    }
    if enc != Encoding::Identity {
        write_header(&mut common, "Content-Encoding", enc.token().as_bytes()).ok()?;
    }
    let mut ok = Vec::with_capacity(common.len() + 64);
    write_status_line(&mut ok, Version::Http11, 200).ok()?;
    ok.extend_from_slice(&common);
    write_header_u64(&mut ok, "Content-Length", v.body.len() as u64).ok()?;
    let mut nm = Vec::with_capacity(128);
    write_status_line(&mut nm, Version::Http11, 304).ok()?;
    write_header(&mut nm, "Server", SERVER.as_bytes()).ok()?;
    write_header(&mut nm, "ETag", v.etag.as_bytes()).ok()?;
    if !vary_value.is_empty() {
        write_header(&mut nm, "Vary", vary_value).ok()?;
    }
    Some(VariantHeads {
        ok: ok.into(),
        common: common.into(),
        not_modified: nm.into(),
    })
}

impl StaticSite {
    pub fn new(site: Arc<Site>) -> StaticSite {
        let mut routes = HashMap::with_capacity(site.len() * 2);
        let mut heads = Vec::with_capacity(site.len());
        let packages = crate::objpack::Packages::build(&site);
        for (i, r) in site.resources().iter().enumerate() {
            routes.insert(r.path.clone().into_boxed_str(), Route::File(i));
            if let Some(dir) = r.path.strip_suffix("index.html") {
                if dir.ends_with('/') {
                    routes.insert(dir.into(), Route::File(i));
                    if let Some(bare) = dir.strip_suffix('/').filter(|b| !b.is_empty()) {
                        routes.entry(bare.into()).or_insert(Route::AddSlash);
                    }
                }
            }
            let vary = r.has_compressed();
            let variants = Encoding::ALL.map(|e| render_variant(r, e, vary, packages.has(i)));
            let tag = r.etag.trim_matches('"');
            heads.push(ResourceHeads {
                variants,
                boundary: format!("pagewire-{tag}").into(),
            });
        }
        StaticSite {
            getall: crate::getall::Index::new(),
            site,
            packages,
            routes,
            heads,
        }
    }

    pub fn site(&self) -> &Site {
        &self.site
    }

    /// The decoded path of resource `i`.
    pub fn path_of(&self, i: usize) -> &str {
        &self.site.resources()[i].path
    }

    /// Whether a decoded path names a resource (for filtering hints).
    pub fn contains(&self, path: &str) -> bool {
        matches!(self.routes.get(path), Some(Route::File(_)))
    }

    /// The resource a decoded path names, if any.
    pub fn index_of(&self, path: &str) -> Option<usize> {
        match self.routes.get(path) {
            Some(Route::File(i)) => Some(*i),
            _ => None,
        }
    }

    pub(crate) fn getall_index(&self) -> &crate::getall::Index {
        &self.getall
    }

    /// Answers one request. The response is appended to `out`.
    pub fn answer(&self, req: &RequestHead, ctx: Ctx<'_>, out: &mut WriteBuf) -> Answered {
        if let Some(kind) = crate::getall::kind(req) {
            return crate::getall::answer(self, kind, req, ctx, out);
        }
        let method = req.method();
        let head_only = method == Method::Head;
        match method {
            Method::Get | Method::Head => {}
            Method::Options => {
                return simple(out, 200, ctx.conn, &[("Allow", ALLOW)], "", false);
            }
            Method::Other => {
                return simple(out, 501, ctx.conn, &[], "method not implemented\n", false);
            }
            _ => {
                return simple(
                    out,
                    405,
                    ctx.conn,
                    &[("Allow", ALLOW)],
                    "method not allowed\n",
                    false,
                );
            }
        }
        let (path, query) = match target::parse(req.target(), ctx.scratch) {
            Ok(Target::Path { path, query }) => (path, query),
            Ok(Target::Asterisk) => {
                return simple(
                    out,
                    400,
                    ctx.conn,
                    &[],
                    "'*' is only for OPTIONS\n",
                    head_only,
                )
            }
            Err(e) => {
                let mut body = String::with_capacity(64);
                body.push_str(e.reason());
                body.push('\n');
                return simple(out, 400, ctx.conn, &[], &body, head_only);
            }
        };
        let index = match self.routes.get(path) {
            Some(Route::File(i)) => *i,
            Some(Route::AddSlash) => {
                let mut location = String::with_capacity(path.len() + 2);
                location.push_str(path);
                location.push('/');
                if let Some(q) = query {
                    location.push('?');
                    location.push_str(q);
                }
                let location = encode_location(&location);
                return simple(
                    out,
                    301,
                    ctx.conn,
                    &[("Location", &location)],
                    "moved to the directory\n",
                    head_only,
                );
            }
            None => return simple(out, 404, ctx.conn, &[], "not found\n", head_only),
        };
        if let Some(p) = self.packages.wanted(index, req) {
            return p.answer(req, ctx, head_only, index, out);
        }
        let resource = &self.site.resources()[index];
        let heads = &self.heads[index];
        let enc = match negotiate::choose(resource, req.headers("accept-encoding")) {
            Choice::Use(e) => e,
            Choice::NotAcceptable => {
                return simple(
                    out,
                    406,
                    ctx.conn,
                    &[("Vary", "Accept-Encoding")],
                    "no acceptable content coding (identity excluded)\n",
                    head_only,
                )
            }
        };
        let (Some(variant), Some(vh)) = (
            resource.variant_full(enc),
            heads.variants[enc as usize].as_ref(),
        ) else {
            return simple(out, 500, ctx.conn, &[], "variant missing\n", head_only);
        };
        let mut answered = Answered {
            status: 200,
            body_bytes: 0,
            resource: Some(index),
        };

        // RFC 9110 §13.2.2 order of evaluation.
        match preconditions(req, &variant.etag, resource.last_modified) {
            Precondition::Proceed => {}
            Precondition::NotModified => {
                out.put(&vh.not_modified);
                finish_head(out, ctx.conn, ctx.extra);
                answered.status = 304;
                return answered;
            }
            Precondition::Failed => {
                let mut a = simple(out, 412, ctx.conn, &[], "precondition failed\n", head_only);
                a.resource = Some(index);
                return a;
            }
        }

        let body = &variant.body;
        let len = body.len() as u64;
        // RFC 9110 §14.2: Range is only for GET.
        if method == Method::Get {
            if let Some(range_value) = req.header("range") {
                if if_range_holds(req, &variant.etag, resource.last_modified) {
                    match range::evaluate(range_value, len) {
                        RangeOutcome::Ignore => {}
                        RangeOutcome::Unsatisfiable => {
                            let cr = format!("bytes */{len}");
                            let mut extra: Vec<(&str, &str)> = vec![("Content-Range", &cr)];
                            if resource.has_compressed() {
                                extra.push(("Vary", "Accept-Encoding"));
                            }
                            let mut a = simple(
                                out,
                                416,
                                ctx.conn,
                                &extra,
                                "range not satisfiable\n",
                                false,
                            );
                            a.resource = Some(index);
                            return a;
                        }
                        RangeOutcome::Ranges(ranges) => {
                            answered.status = 206;
                            answered.body_bytes = if ranges.len() == 1 {
                                single_range(out, vh, body, ranges[0], ctx.conn, ctx.extra)
                            } else {
                                multipart(
                                    out,
                                    vh,
                                    &heads.boundary,
                                    &resource.media_type,
                                    body,
                                    &ranges,
                                    ctx.conn,
                                    ctx.extra,
                                )
                            };
                            return answered;
                        }
                    }
                }
            }
        }

        out.put(&vh.ok);
        finish_head(out, ctx.conn, ctx.extra);
        if !head_only {
            out.put_body(body);
            answered.body_bytes = len;
        }
        answered
    }
}

/// Appends a field the server generated itself (digits, constants,
/// percent-encoded paths): the encoder still checks it, and a refusal, which
/// would be a bug, leaves nothing appended rather than a split response.
fn field(out: &mut WriteBuf, name: &str, value: &[u8]) {
    let written = write_header(out, name, value);
    debug_assert!(written.is_ok(), "refused field {name}: {value:?}");
}

/// Date, Connection, the prefetch `Link` field (its value, if any) and the
/// blank line ending the head.
pub(crate) fn finish_head(out: &mut WriteBuf, conn: ConnHeader, link: &[u8]) {
    with_http_date(|d| field(out, "Date", d));
    match conn {
        ConnHeader::None => {}
        ConnHeader::KeepAlive => field(out, "Connection", b"keep-alive"),
        ConnHeader::Close => field(out, "Connection", b"close"),
    }
    if !link.is_empty() {
        field(out, "Link", link);
    }
    end_head(out);
}

/// Appends `HTTP/1.1 <status> <reason>` (status is always one of ours).
fn status_line(out: &mut WriteBuf, status: u16) {
    let written = write_status_line(out, Version::Http11, status);
    debug_assert!(written.is_ok(), "status {status}");
}

fn single_range(
    out: &mut WriteBuf,
    vh: &VariantHeads,
    body: &Bytes,
    r: ByteRange,
    conn: ConnHeader,
    extra: &[u8],
) -> u64 {
    status_line(out, 206);
    out.put(&vh.common);
    let range = format!("bytes {}-{}/{}", r.first, r.last, body.len());
    field(out, "Content-Range", range.as_bytes());
    let _ = write_header_u64(out, "Content-Length", r.len());
    finish_head(out, conn, extra);
    out.put_body(&body.slice(r.first as usize..=r.last as usize));
    r.len()
}

#[allow(clippy::too_many_arguments)]
fn multipart(
    out: &mut WriteBuf,
    vh: &VariantHeads,
    boundary: &str,
    media_type: &str,
    body: &Bytes,
    ranges: &[ByteRange],
    conn: ConnHeader,
    extra: &[u8],
) -> u64 {
    // RFC 9110 §14.6. Built whole first because Content-Length must come
    // before it; multipart responses are rare and bounded by MAX_RANGES.
    let mut payload = Vec::new();
    for r in ranges {
        payload.put(b"\r\n--");
        payload.put(boundary.as_bytes());
        payload.put(b"\r\n");
        // Part heads are heads too: same writer, same validation (the media
        // type was validated when the representation's head was rendered).
        let _ = write_header(&mut payload, "Content-Type", media_type.as_bytes());
        let range = format!("bytes {}-{}/{}", r.first, r.last, body.len());
        let _ = write_header(&mut payload, "Content-Range", range.as_bytes());
        end_head(&mut payload);
        payload.extend_from_slice(&body[r.first as usize..=r.last as usize]);
    }
    payload.put(b"\r\n--");
    payload.put(boundary.as_bytes());
    payload.put(b"--\r\n");
    status_line(out, 206);
    // The representation's Content-Type is replaced by the multipart type;
    // the other representation fields stay.
    for line in vh.common.split_inclusive(|&b| b == b'\n') {
        if !line.starts_with(b"Content-Type:") {
            out.put(line);
        }
    }
    let content_type = format!("multipart/byteranges; boundary={boundary}");
    field(out, "Content-Type", content_type.as_bytes());
    let _ = write_header_u64(out, "Content-Length", payload.len() as u64);
    finish_head(out, conn, extra);
    let len = payload.len() as u64;
    out.put_body(&Bytes::from(payload));
    len
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
fn if_range_holds(req: &RequestHead, etag: &str, last_modified: SystemTime) -> bool {
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
