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
//! specific HTML files": each page is parsed once per origin, on its first
//! GETALL, with the robot's browser-grade discovery (`pagewire_discover`):
//! the page's references, those of the stylesheets it applies (`url()`,
//! `@import`) and the fonts its text uses, so that a first visit is one
//! request even when a stylesheet names images. The result is kept.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use pagewire_discover::{CssDiscoverer, Reference, Rule, Viewport};
use pagewire_h1::{
    end_head, write_header, write_header_u64, write_status_line, BodyFraming, Method, RequestHead,
    Version,
};
use pagewire_site::store::Resource;

use crate::handler::StaticSite;
use crate::io::WriteBuf;
use crate::respond::{
    encode_location, etag_matches, field, finish_head, parse_date, simple, Answered, ConnHeader,
    Ctx, SERVER,
};
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

/// Most (page, Host) expansions kept at once; beyond that the cache starts
/// over (the Host field is the client's choice, so it must not grow the
/// cache without bound).
const MAX_EXPANSIONS: usize = 4096;
/// Deepest `@import` chain followed (a cycle ends sooner: each stylesheet is
/// taken once).
const MAX_IMPORT_DEPTH: usize = 16;
/// Stylesheet text beyond this total is not styled for fonts: every
/// `@font-face` source is then included (the robot's bound, the same).
const MAX_FONT_CSS_BYTES: usize = 64 << 20;

/// Per-page cache of what a GETALL of the page returns besides the page:
/// the same-server request targets a browser fetches for it, in the order
/// it finds them. Keyed by page and by the request's origin, since which
/// absolute references are on "this server" depends on the Host field.
pub struct Index {
    expansions: Mutex<Expansions>,
}

/// (page index, request origin) -> the targets of its GETALL answer.
type Expansions = HashMap<(usize, Box<str>), Arc<[String]>>;

impl Default for Index {
    fn default() -> Self {
        Self::new()
    }
}

impl Index {
    pub fn new() -> Index {
        Index {
            expansions: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Expansions> {
        // A panic while holding the lock leaves a consistent map.
        self.expansions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The targets of page `i` for a request whose origin is `base`
    /// (`http://host/`, or `/` without a Host).
    pub(crate) fn targets(&self, site: &StaticSite, i: usize, base: &str) -> Arc<[String]> {
        let key = (i, Box::<str>::from(base));
        if let Some(t) = self.lock().get(&key) {
            return t.clone();
        }
        // Computed outside the lock: two first requests may both compute
        // it, which costs time, never a wrong answer.
        let t: Arc<[String]> = expand(site, i, base).into();
        let mut map = self.lock();
        if map.len() >= MAX_EXPANSIONS {
            map.clear();
        }
        map.insert(key, t.clone());
        t
    }
}

/// What a browser fetches for page `i` from the server at `base`, found as
/// the robot finds it (`pagewire_discover`, the default 1280-pixel 1x
/// viewport): the page's references (`img src` and the `srcset` candidate,
/// stylesheets, scripts, `<style>` and `style` attribute `url()`s ...), the
/// references of every stylesheet it applies (`url()`, `image-set()`,
/// `@import`, recursively), and last the `@font-face` sources that the
/// page's text uses (`pagewire_discover::fonts`). Same-server targets only,
/// each once, at most [`MAX_PARTS`].
fn expand(site: &StaticSite, i: usize, base: &str) -> Vec<String> {
    let r = &site.site().resources()[i];
    if !r.media_type.starts_with("text/html") {
        return Vec::new();
    }
    let mut d = pagewire_discover::Discoverer::new(&r.path);
    let mut refs = d.feed_refs(&r.body);
    refs.extend(d.finish_refs());
    let mut w = Walk {
        site,
        base,
        out: Vec::new(),
        seen: HashSet::new(),
        fonts: Vec::new(),
        sheets: HashMap::new(),
        css_bytes: 0,
    };
    w.seen.insert(r.path.clone());
    w.walk(refs, 0);
    let Walk {
        mut out,
        mut seen,
        fonts,
        sheets,
        css_bytes,
        ..
    } = w;
    if !fonts.is_empty() {
        let used = (css_bytes <= MAX_FONT_CSS_BYTES)
            .then(|| {
                pagewire_discover::fonts::used_faces(
                    &String::from_utf8_lossy(&r.body),
                    &r.path,
                    &sheets,
                    &Viewport::default(),
                )
            })
            .flatten();
        for f in fonts {
            if out.len() >= MAX_PARTS {
                break;
            }
            if used.as_ref().is_some_and(|u| !u.iter().any(|x| x.url == f)) {
                continue;
            }
            if let Some(t) = pagewire_discover::same_server_path(base, &f) {
                if seen.insert(t.clone()) {
                    out.push(t);
                }
            }
        }
    }
    out
}

struct Walk<'a> {
    site: &'a StaticSite,
    base: &'a str,
    out: Vec<String>,
    seen: HashSet<String>,
    /// `@font-face` sources, decided once every stylesheet is read.
    fonts: Vec<String>,
    /// Stylesheet text by URL, for the font cascade.
    sheets: HashMap<String, String>,
    css_bytes: usize,
}

impl Walk<'_> {
    fn walk(&mut self, refs: Vec<Reference>, depth: usize) {
        for Reference { url, rule } in refs {
            if self.out.len() >= MAX_PARTS {
                return;
            }
            if rule == Rule::FontFace {
                // As the robot: fonts wait for style (CSS Fonts 4 §4.5).
                if !self.fonts.contains(&url) {
                    self.fonts.push(url);
                }
                continue;
            }
            let Some(t) = pagewire_discover::same_server_path(self.base, &url) else {
                continue;
            };
            if !self.seen.insert(t.clone()) {
                continue;
            }
            self.out.push(t.clone());
            if !rule.is_stylesheet() || depth >= MAX_IMPORT_DEPTH {
                continue;
            }
            // A stylesheet the browser applies: its references too, if it is
            // one of ours and served as CSS (what the robot parses).
            let mut scratch = String::new();
            let Ok(Target::Path { path, .. }) = target::parse(&t, &mut scratch) else {
                continue;
            };
            let Some(j) = self.site.index_of(path) else {
                continue;
            };
            let s = &self.site.site().resources()[j];
            if !s.media_type.starts_with("text/css") {
                continue;
            }
            let mut css = CssDiscoverer::new(&url, Viewport::default());
            let mut more = css.feed(&s.body);
            more.extend(css.finish());
            let n = s
                .body
                .len()
                .min(pagewire_discover::css::MAX_STYLESHEET_BYTES);
            self.css_bytes += n;
            if self.css_bytes <= MAX_FONT_CSS_BYTES {
                let text = String::from_utf8_lossy(&s.body[..n]);
                let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
                self.sheets.insert(url.clone(), text);
            }
            self.walk(more, depth + 1);
        }
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
    index: &Index,
    kind: Kind,
    req: &RequestHead,
    ctx: Ctx<'_>,
    out: &mut WriteBuf,
) -> Answered {
    match collect(site, index, kind, req, ctx.body, ctx.scratch) {
        Ok((parts, first)) => write_multipart(out, kind, &parts, ctx.conn, ctx.extra, first),
        Err((status, why)) => simple(out, status, ctx.conn, &[], &why, false),
    }
}

/// The decoded paths of the objects an answer to this request carries (as
/// 200 or 304 parts), in answer order: what the prefetch predictor is told
/// was accessed, and what its hints must not repeat (paper 003 §7.3).
/// Empty for a request that is refused.
pub fn sent_paths(
    site: &StaticSite,
    index: &Index,
    kind: Kind,
    req: &RequestHead,
    body: &[u8],
) -> Vec<String> {
    let mut scratch = String::new();
    match collect(site, index, kind, req, body, &mut scratch) {
        Ok((parts, _)) => parts
            .iter()
            .filter_map(|p| match p {
                Part::Object { r, .. } => Some(r.path.clone()),
                Part::Missing { .. } => None,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A refusal: status and a one-line reason.
type Refusal = (u16, String);

/// The parts of the answer, and the resource it is logged as.
fn collect<'a>(
    site: &'a StaticSite,
    index: &Index,
    kind: Kind,
    req: &RequestHead,
    body: &[u8],
    scratch: &mut String,
) -> Result<(Vec<Part<'a>>, Option<usize>), Refusal> {
    let mut parts: Vec<Part> = Vec::new();
    let mut first = None;
    match kind {
        Kind::GetAll | Kind::GetWithField => {
            let page = match target::parse(req.target(), scratch) {
                Ok(Target::Path { path, .. }) => path.to_string(),
                Ok(Target::Asterisk) => return Err((400, "'*' is only for OPTIONS\n".into())),
                Err(e) => return Err((400, format!("{}\n", e.reason()))),
            };
            let Some(i) = site.index_of(&page) else {
                return Err((404, "not found\n".into()));
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
            let mut seen = HashSet::new();
            seen.insert(i);
            for t in index.targets(site, i, &base).iter() {
                if parts.len() >= MAX_PARTS {
                    break;
                }
                let mut scratch = String::new();
                let Ok(Target::Path { path, .. }) = target::parse(t, &mut scratch) else {
                    continue;
                };
                match site.index_of(path) {
                    Some(j) if seen.insert(j) => {
                        parts.push(object(req, &site.site().resources()[j]));
                    }
                    Some(_) => {}
                    // A reference to nothing: say so, so the client does not
                    // wait for it or ask again.
                    None => parts.push(Part::Missing {
                        location: t.clone(),
                        status: 404,
                    }),
                }
            }
        }
        Kind::GetList => {
            if matches!(req.body_framing(), Ok(BodyFraming::Chunked)) {
                return Err((411, "GETLIST needs a Content-Length body\n".into()));
            }
            // The connection loop hands over a body only when it arrived
            // with the head and is at most MAX_SKIPPED_BODY_BYTES; otherwise
            // it closes after this answer, and the client falls back to
            // pipelined GETs (docs/getall.md, "Limits").
            if let Ok(BodyFraming::Length(n)) = req.body_framing() {
                if body.len() as u64 != n {
                    let status = if n > crate::policy::MAX_SKIPPED_BODY_BYTES {
                        413
                    } else {
                        400
                    };
                    return Err((status, "GETLIST body did not arrive with its head\n".into()));
                }
            }
            let Ok(text) = std::str::from_utf8(body) else {
                return Err((400, "uri-list is not UTF-8\n".into()));
            };
            // RFC 2483 §5: one URI per line, CRLF (we accept LF), lines
            // starting with '#' are comments.
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                if parts.len() == MAX_LIST {
                    return Err((413, format!("more than {MAX_LIST} URIs\n")));
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
    Ok((parts, first))
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
    conn: ConnHeader,
    extra: &[u8],
    first: Option<usize>,
) -> Answered {
    let b = boundary(parts);
    // Part heads first: the total Content-Length comes before them.
    let mut heads: Vec<Vec<u8>> = Vec::with_capacity(parts.len());
    let mut total = 0usize;
    for p in parts {
        let mut h = Vec::with_capacity(256);
        // The boundary line is ours (hex digits); the part's fields go
        // through the h1 writer like every other head's.
        h.extend_from_slice(b"--");
        h.extend_from_slice(b.as_bytes());
        h.extend_from_slice(b"\r\n");
        let body_len = match p {
            Part::Object { r, not_modified } => {
                let loc = encode_location(&r.path);
                if *not_modified {
                    field(&mut h, "Status", b"304 Not Modified");
                    field(&mut h, "Content-Location", loc.as_bytes());
                    field(&mut h, "ETag", r.etag.as_bytes());
                    field(&mut h, "Content-Length", b"0");
                    0
                } else {
                    field(&mut h, "Content-Location", loc.as_bytes());
                    field(&mut h, "Content-Type", r.media_type.as_bytes());
                    let _ = write_header_u64(&mut h, "Content-Length", r.body.len() as u64);
                    field(&mut h, "ETag", r.etag.as_bytes());
                    field(&mut h, "Last-Modified", r.last_modified_http.as_bytes());
                    r.body.len()
                }
            }
            Part::Missing { location, status } => {
                let status_field = format!("{status} {}", pagewire_h1::reason_phrase(*status));
                field(&mut h, "Status", status_field.as_bytes());
                field(
                    &mut h,
                    "Content-Location",
                    encode_location(location).as_bytes(),
                );
                field(&mut h, "Content-Length", b"0");
                0
            }
        };
        end_head(&mut h);
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
