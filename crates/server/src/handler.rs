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
//! may contain (no CR, LF or NUL can split a response). The pieces shared
//! with the other handlers (context, generated fields, preconditions) are
//! in `respond`; GETALL/GETLIST answers are `getall`'s, chosen by
//! [`crate::Handler`].

use bytes::Bytes;
use pagewire_h1::{
    end_head, parse_response, write_header, write_header_u64, write_status_line, Limits, Method,
    Output, RequestHead, Version,
};
use pagewire_site::store::{Encoding, Resource, Site};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::io::WriteBuf;
use crate::negotiate::{self, Choice};
use crate::range::{self, ByteRange, RangeOutcome};
pub use crate::respond::{encode_link_target, simple, Answered, ConnHeader, Ctx, ALLOW, SERVER};
use crate::respond::{
    encode_location, field, finish_head, if_range_holds, preconditions, status_line, Precondition,
};
use crate::target::{self, Target};

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
    /// The fields of `ok` for HTTP/2 and HTTP/3 (parsed back from `ok`,
    /// so they are the bytes HTTP/1 sends) and last a Date whose value
    /// [`PlainAnswer::fields`] sets per request: the copy never grows.
    h2_ok: http::HeaderMap,
    /// `h2_ok` as an HPACK field block (`:status` 200 and every field but
    /// Date) for pagewire's own HTTP/2 connection ([`crate::http2`]).
    h2_block: Box<[u8]>,
}

/// A static resource's plain 200 answer for HTTP/2 and HTTP/3: the fields
/// rendered when the server started ([`PlainAnswer::fields`] adds Date)
/// and the body, shared.
pub struct PlainAnswer<'a> {
    rendered: &'a http::HeaderMap,
    block: &'a [u8],
    pub body: &'a Bytes,
    pub resource: usize,
}

impl<'a> PlainAnswer<'a> {
    /// The response fields, Date last with the value `date`.
    pub fn fields(&self, date: http::HeaderValue) -> http::HeaderMap {
        let mut fields = self.rendered.clone();
        // Replaces the placeholder in place: no reallocation.
        fields.insert(http::header::DATE, date);
        fields
    }

    /// The HTTP/2 field block of the answer without Date (`:status` 200
    /// first), rendered when the server started.
    pub fn hpack(&self) -> &'a [u8] {
        self.block
    }
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
    /// Keyed by the decoded path's bytes, so that a plain target's bytes
    /// are looked up as sent (no UTF-8 check on the hot path).
    routes: HashMap<Box<[u8]>, Route>,
    heads: Vec<ResourceHeads>,
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
    let mut head = bytes::BytesMut::with_capacity(ok.len() + 2);
    head.extend_from_slice(&ok);
    end_head(&mut head);
    let parsed = parse_response(&mut head, &Limits::default(), &Method::Get).ok()??;
    Some(VariantHeads {
        ok: ok.into(),
        common: common.into(),
        not_modified: nm.into(),
        h2_block: crate::hpack::hpack_block(&crate::respond::h2_fields(&parsed)),
        h2_ok: {
            let mut f = crate::respond::h2_fields(&parsed);
            f.append(http::header::DATE, http::HeaderValue::from_static(""));
            f
        },
    })
}

impl StaticSite {
    pub fn new(site: Arc<Site>) -> StaticSite {
        let mut routes = HashMap::with_capacity_and_hasher(site.len() * 2, Default::default());
        let mut heads = Vec::with_capacity(site.len());
        let packages = crate::objpack::Packages::build(&site);
        for (i, r) in site.resources().iter().enumerate() {
            routes.insert(r.path.as_bytes().into(), Route::File(i));
            if let Some(dir) = r.path.strip_suffix("index.html") {
                if dir.ends_with('/') {
                    routes.insert(dir.as_bytes().into(), Route::File(i));
                    if let Some(bare) = dir.strip_suffix('/').filter(|b| !b.is_empty()) {
                        routes
                            .entry(bare.as_bytes().into())
                            .or_insert(Route::AddSlash);
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
        matches!(self.routes.get(path.as_bytes()), Some(Route::File(_)))
    }

    /// The resource a decoded path names, if any.
    pub fn index_of(&self, path: &str) -> Option<usize> {
        match self.routes.get(path.as_bytes()) {
            Some(Route::File(i)) => Some(*i),
            _ => None,
        }
    }

    /// The answer to a GET or HEAD of `target` (origin-form) when it is the
    /// representation's plain 200: the target names a file, `accept` does
    /// not ask for its object package, and the coding `accept_encoding`
    /// chooses exists. `None` for everything else
    /// (redirects, errors, 406), which [`StaticSite::answer`] answers. The
    /// caller checks the request has no preconditions, Range or GETALL
    /// field; with those, this is what `answer` would send minus Date.
    pub fn plain<'a, 'v>(
        &'a self,
        target: &str,
        accept: impl Iterator<Item = &'v [u8]>,
        accept_encoding: impl Iterator<Item = &'v [u8]>,
        scratch: &mut String,
    ) -> Option<PlainAnswer<'a>> {
        let Ok(Target::Path { path, .. }) = target::parse(target, scratch) else {
            return None;
        };
        let Some(Route::File(index)) = self.routes.get(path.as_bytes()) else {
            return None;
        };
        let index = *index;
        if self.packages.wanted_by(index, accept) {
            return None;
        }
        let resource = &self.site.resources()[index];
        let Choice::Use(enc) = negotiate::choose(resource, accept_encoding) else {
            return None;
        };
        let variant = resource.variant_full(enc)?;
        let vh = self.heads[index].variants[enc as usize].as_ref()?;
        Some(PlainAnswer {
            rendered: &vh.h2_ok,
            block: &vh.h2_block,
            body: &variant.body,
            resource: index,
        })
    }

    /// Routing for every target the fast path in [`StaticSite::answer`]
    /// does not settle: decodes the target, and answers what names no file
    /// (400, 301 to the directory, 404) itself: `Err` holds that answer.
    fn route_slow(
        &self,
        req: &RequestHead,
        scratch: &mut String,
        conn: ConnHeader,
        out: &mut WriteBuf,
        head_only: bool,
    ) -> Result<usize, Answered> {
        let (path, query) = match target::parse(req.target(), scratch) {
            Ok(Target::Path { path, query }) => (path, query),
            Ok(Target::Asterisk) => {
                return Err(simple(
                    out,
                    400,
                    conn,
                    &[],
                    "'*' is only for OPTIONS\n",
                    head_only,
                ))
            }
            Err(e) => {
                let mut body = String::with_capacity(64);
                body.push_str(e.reason());
                body.push('\n');
                return Err(simple(out, 400, conn, &[], &body, head_only));
            }
        };
        match self.routes.get(path.as_bytes()) {
            Some(Route::File(i)) => Ok(*i),
            Some(Route::AddSlash) => {
                let mut location = String::with_capacity(path.len() + 2);
                location.push_str(path);
                location.push('/');
                if let Some(q) = query {
                    location.push('?');
                    location.push_str(q);
                }
                let location = encode_location(&location);
                Err(simple(
                    out,
                    301,
                    conn,
                    &[("Location", &location)],
                    "moved to the directory\n",
                    head_only,
                ))
            }
            None => Err(simple(out, 404, conn, &[], "not found\n", head_only)),
        }
    }

    /// Answers one request (GETALL/GETLIST excepted: `getall`). The
    /// response is appended to `out`.
    pub fn answer(&self, req: &RequestHead, ctx: Ctx<'_>, out: &mut WriteBuf) -> Answered {
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
        // The common case first: a plain origin-form target that names a
        // file, looked up by its bytes as sent. Anything else (escapes, dot
        // segments, absolute-form, redirects, 404) takes the general path,
        // which gives the same answer for what the fast one accepts.
        let fast = target::plain_path(req.target_bytes()).and_then(|p| match self.routes.get(p) {
            Some(Route::File(i)) => Some(*i),
            _ => None,
        });
        let index = match fast {
            Some(i) => i,
            None => match self.route_slow(req, ctx.scratch, ctx.conn, out, head_only) {
                Ok(i) => i,
                Err(answered) => return answered,
            },
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
