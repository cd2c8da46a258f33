//! The state of one fetch shared by its connections: the objects (page
//! first), what each request looks like, what each response did, the
//! streaming discovery of the page's references, and the counters that end
//! up in the `FetchReport`. Connections (`conn.rs`) decide when bytes move;
//! this module decides what they mean.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use pagewire_discover::{
    resolve, same_server_path, CssDiscoverer, Discoverer, Options, Reference, Rule,
};
use pagewire_h1::{Method, ResponseHead, Version};
use sha2::{Digest, Sha256};

use crate::cache::{hex, sha256_hex, Cache, Entry, EntryMeta, Spool, MAX_ENTRY_BODY_BYTES};
use crate::config::{FetchConfig, RequestProfile, Revalidation, Strategy, Target};
use crate::error::FetchError;
use crate::inflate::{InflateError, Inflater};
use crate::outbuf::FlushReason;
mod package;

use crate::report::{
    rfc3339, ByteCounts, ConnEnd, ConnectionRecord, CrossOriginRecord, FetchReport, FlushRecord,
    ObjectKind, ObjectRecord, Outcome, RequestMethod, ViewportRecord,
};

/// Objects fetched because of prefetch hints, per fetch: hints are advice,
/// and a server could hint forever.
pub const MAX_PREFETCH_OBJECTS: usize = 64;

/// Object id: index into the fetch's object table; 0 is the page.
pub type ObjId = usize;
pub const PAGE: ObjId = 0;

/// A response being received.
struct InProgress {
    conn: usize,
    status: u16,
    head_len: u64,
    headers: Vec<(String, String)>,
    http_version: &'static str,
    first_byte: Duration,
    body: Vec<u8>,
    hasher: Sha256,
    size: u64,
    wire_bytes: u64,
    inflater: Option<Inflater>,
    /// An inflated body kept for the cache only goes to a file of the
    /// cache as it is inflated, never whole into memory.
    spool: Option<Spool>,
    content_encoding: Option<String>,
    content_type: Option<String>,
    etag: Option<String>,
    last_modified: Option<String>,
    /// The body will come from the cache (304, or a HEAD that matched).
    not_modified: bool,
    /// A HEAD showed a change: fetch again with GET.
    changed: bool,
    /// The page came as a GETALL answer with this multipart boundary.
    getall_boundary: Option<String>,
    /// The body is an object package being unpacked (strategy objpack).
    package: Option<package::PackageRx>,
    /// The body is a stylesheet being parsed as it arrives.
    css: Option<CssDiscoverer>,
    /// A 206 part: (first byte, complete length) from Content-Range.
    part: Option<(u64, u64)>,
}

struct Obj {
    path: String,
    url: String,
    kind: ObjectKind,
    method: RequestMethod,
    /// Cache entry used for a conditional request.
    cached: Option<Entry>,
    /// Send validators (revalidation); false after a HEAD showed a change.
    conditional: bool,
    attempts: u32,
    /// A HEAD showed the cached copy is stale; then fetched with GET.
    changed: bool,
    requested: Duration,
    /// When the last request for it left the output buffer (a flush).
    sent: Option<Duration>,
    request_head: String,
    request_len: u64,
    resp: Option<InProgress>,
    record: Option<ObjectRecord>,
    /// Content kept for the cache, `--save` or the report.
    body: Option<Bytes>,
    /// ... or, for an inflated body kept for the cache only, its file.
    spool: Option<Spool>,
    /// `getall`, later visit: this entry is a GETLIST request for these
    /// objects, not an object of the page (no record of its own).
    getlist: Vec<ObjId>,
    /// Already written to the cache (an object that came in a package).
    stored: bool,
    /// Where the reference to it was found (the page or a stylesheet) and
    /// by which rule; `None` for the page and prefetched objects.
    found: Option<(ObjId, Rule)>,
    /// Its content was parsed as a stylesheet (once).
    css_parsed: bool,
    /// Range mode (`range_first`): which part is asked for next.
    range: RangePart,
}

/// The part of an object a range-mode request asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum RangePart {
    /// The whole object (no range).
    #[default]
    Whole,
    /// The first `n` bytes.
    Head { n: u64 },
    /// The rest, after `head` (the first part, kept to join), of `total`.
    Rest { head: Vec<u8>, total: u64 },
}

#[derive(Default)]
struct State {
    objs: Vec<Obj>,
    by_path: HashMap<String, ObjId>,
    discoverer: Option<Discoverer>,
    discovery_done: bool,
    conns: Vec<ConnectionRecord>,
    open_now: usize,
    max_open: usize,
    flushes: Vec<FlushRecord>,
    /// Requests built and still in a connection's output buffer:
    /// (connection, object); the next flush of that connection sends them.
    unsent: Vec<(usize, ObjId)>,
    bytes: ByteCounts,
    ttfb: Option<Duration>,
    page_done: Option<Duration>,
    last_done: Duration,
    retried: u32,
    skipped: Vec<String>,
    skipped_set: HashSet<String>,
    hints: Vec<String>,
    hint_set: HashSet<String>,
    prefetched: usize,
    /// References of the page not fetched because of the object limit.
    refs_dropped: usize,
    by_method: BTreeMap<RequestMethod, u32>,
    warnings: Vec<String>,
    /// `getall`, later visit: uncached objects waiting for the page's end,
    /// to be asked for in one GETLIST.
    getlist_pending: Vec<ObjId>,
    /// `getall`, later visit: the server did not answer the one-message
    /// GETLIST with parts (an unmodified server: 405, 501): the page goes
    /// by a conditional GET, everything else by pipelined GETs.
    getlist_refused: bool,
    /// References to other origins (not fetched), each once.
    cross_origin: Vec<(String, ObjId, Rule)>,
    /// Fonts by use (`FetchConfig::all_fonts` off): the text of each
    /// applied stylesheet, kept until the faces are chosen.
    css_texts: HashMap<ObjId, Vec<u8>>,
    /// Their total size; beyond `MAX_FONT_CSS_BYTES` the page is not
    /// styled and every face is fetched.
    css_text_bytes: usize,
    /// `@font-face` sources found, held until the page and its stylesheets
    /// are complete (a browser requests fonts after style computation).
    fonts_held: Vec<(Reference, ObjId)>,
    /// The faces were chosen (later `@font-face` sources are admitted).
    fonts_done: bool,
    /// Range mode: first parts asked for and not yet complete, rests
    /// waiting until all first parts are in, when they were all in.
    range_heads_open: usize,
    range_heads_total: usize,
    range_rest_pending: Vec<ObjId>,
    metadata_done: Option<Duration>,
}

/// What a response head means for its connection.
pub struct HeadInfo {
    /// The server will close after this response (RFC 9112 §9.6): send
    /// nothing more on this connection.
    pub closing: bool,
    /// Interim 1xx: wait for the final response to the same request.
    pub interim: bool,
}

pub struct Session {
    pub cfg: FetchConfig,
    pub target: Target,
    pub page_url: String,
    pub addr: SocketAddr,
    pub start: Instant,
    started_wall: SystemTime,
    pub cache: Option<Cache>,
    /// `getall`: the URLs the page referenced on an earlier visit (from the
    /// cache); None on a first visit.
    getall_known: Option<HashSet<String>>,
    st: Mutex<State>,
}

impl Session {
    pub fn new(
        cfg: FetchConfig,
        target: Target,
        addr: SocketAddr,
        cache: Option<Cache>,
        start: Instant,
    ) -> Session {
        let page_url = target.url_of(&target.path);
        let getall_known = match (&cache, cfg.strategy) {
            (Some(c), Strategy::Getall) => match c.get(&crate::getall::refs_key(&page_url)) {
                Ok(Some(e)) => Some(
                    String::from_utf8_lossy(&e.body)
                        .lines()
                        .map(str::to_string)
                        .collect(),
                ),
                _ => None,
            },
            _ => None,
        };
        let mut st = State {
            discoverer: cfg
                .discover
                .then(|| Discoverer::with_options(&page_url, discovery_options(&cfg))),
            ..State::default()
        };
        if let Some(n) = cache.as_ref().map(Cache::stale_removed).filter(|&n| n > 0) {
            st.warnings.push(format!(
                "cache: removed {n} temporary files left by interrupted writes"
            ));
        }
        let s = Session {
            cfg,
            target,
            page_url,
            addr,
            start,
            started_wall: SystemTime::now(),
            cache,
            getall_known,
            st: Mutex::new(State::default()),
        };
        let path = s.target.path.clone();
        s.add_object(&mut st, path, ObjectKind::Page);
        if s.getall_known.is_some() {
            // Paper 003 §5.2: "On subsequent accesses to the same HTML file,
            // the client can request the HTML and all images in one
            // message": the page goes in a GETLIST with the images, carrying
            // the cached page's validator (docs/getall.md, "Later visits").
            let cached = s
                .cache
                .as_ref()
                .and_then(|c| c.get(&s.page_url).ok().flatten());
            let page = &mut st.objs[PAGE];
            page.method = RequestMethod::Getlist;
            page.conditional = cached.is_some();
            page.cached = cached;
        }
        *s.lock() = st;
        s
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave counters inconsistent enough to
        // matter; keep going rather than poison the whole fetch.
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Time since the fetch started. The session reads no clock: callers
    /// pass the current time, as to the output buffer and the link model.
    fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    fn add_object(&self, st: &mut State, path: String, kind: ObjectKind) -> ObjId {
        let id = st.objs.len();
        let url = self.target.url_of(&path);
        let mut cached = None;
        if let Some(cache) = &self.cache {
            match cache.get(&url) {
                Ok(e) => cached = e,
                Err(w) => st.warnings.push(w.to_string()),
            }
        }
        let mut revalidating = self.cfg.revalidate && cached.is_some();
        let heads = matches!(
            self.cfg.revalidation,
            Revalidation::GetHead | Revalidation::ConditionalGetHead
        );
        let method = if revalidating && heads && id != PAGE {
            // Paper 001 "Revalidate Test": the HTTP/1.0 robot "simulated the
            // cache validation behavior by issuing HEAD requests on the images".
            RequestMethod::Head
        } else {
            RequestMethod::Get
        };
        if revalidating && id == PAGE && self.cfg.revalidation == Revalidation::GetHead {
            // "one GET (HTML) and 42 HEAD requests": libwww 4.1D had no
            // persistent cache, so the page came again, unconditionally.
            revalidating = false;
            cached = None;
        }
        st.by_path.insert(path.clone(), id);
        st.objs.push(Obj {
            path,
            url,
            kind,
            method,
            cached: if revalidating { cached } else { None },
            conditional: revalidating,
            attempts: 0,
            changed: false,
            requested: Duration::ZERO,
            sent: None,
            request_head: String::new(),
            request_len: 0,
            resp: None,
            record: None,
            body: None,
            getlist: Vec::new(),
            stored: false,
            spool: None,
            found: None,
            css_parsed: false,
            range: RangePart::Whole,
        });
        // Range mode, first visit and revisit alike: on a revisit the
        // conditional GET carries the range and If-Range (paper 001, "Range
        // Requests and Validation": "the natural revalidation request for
        // HTTP/1.1 will combine both cache validation headers and an
        // If-Range request header").
        if let Some(n) = self.cfg.range_first.filter(|_| {
            id != PAGE
                && kind == ObjectKind::Embedded
                && matches!(
                    self.cfg.strategy,
                    Strategy::Pipeline | Strategy::PipelineDeflate
                )
        }) {
            st.objs[id].range = RangePart::Head { n: n.max(1) };
            st.range_heads_open += 1;
            st.range_heads_total += 1;
        }
        id
    }

    /// Turns references found in object `from` into new objects (same
    /// server, not seen before); returns their ids in document order.
    fn admit(
        &self,
        st: &mut State,
        refs: Vec<Reference>,
        kind: ObjectKind,
        from: ObjId,
    ) -> Vec<ObjId> {
        let mut ids = Vec::new();
        for Reference { url: r, rule } in refs {
            if rule == Rule::FontFace && self.fonts_by_use() && !st.fonts_done {
                st.fonts_held.push((Reference { url: r, rule }, from));
                continue;
            }
            match same_server_path(&self.page_url, &r) {
                Some(path) => {
                    let path = encode_target(&path);
                    if let Some(&known) = st.by_path.get(&path) {
                        let upgrade = rule.is_stylesheet()
                            && st.objs[known]
                                .found
                                .is_some_and(|(_, r)| !r.is_stylesheet());
                        if known != PAGE && (st.objs[known].found.is_none() || upgrade) {
                            // Arrived before it was found (a GETALL part,
                            // a package member): say where it belongs, and
                            // parse it now if it is a stylesheet.
                            st.objs[known].found = Some((from, rule));
                            ids.extend(self.parse_arrived_stylesheet(st, known));
                        }
                        continue;
                    }
                    if st.objs.len() >= pagewire_discover::MAX_REFERENCES {
                        st.refs_dropped += 1;
                        continue;
                    }
                    let id = self.add_object(st, path, kind);
                    st.objs[id].found = Some((from, rule));
                    if self.getall_from_cache(st, id) {
                        // In the cache: not requested; a cached stylesheet's
                        // references may still be missing.
                        ids.extend(self.parse_arrived_stylesheet(st, id));
                    } else if self.getall_later_visit(st)
                        && kind == ObjectKind::Embedded
                        && !st.discovery_done
                    {
                        st.getlist_pending.push(id);
                    } else {
                        ids.push(id);
                    }
                }
                None => {
                    if st.skipped_set.insert(r.clone()) {
                        st.cross_origin.push((r.clone(), from, rule));
                        st.skipped.push(r);
                    }
                }
            }
        }
        ids
    }

    /// A stylesheet that arrived whole before its reference was found (in a
    /// GETALL answer or a package, or from the cache): its references now.
    fn parse_arrived_stylesheet(&self, st: &mut State, id: ObjId) -> Vec<ObjId> {
        let o = &st.objs[id];
        let is_css = o.found.is_some_and(|(_, r)| r.is_stylesheet());
        let ok = o
            .record
            .as_ref()
            .is_some_and(|r| r.status == 200 || r.outcome == Outcome::NotModified);
        if !is_css || !ok || o.css_parsed {
            return Vec::new();
        }
        let Some(body) = o.body.clone() else {
            return Vec::new();
        };
        self.parse_whole_stylesheet(st, id, &body)
    }

    fn parse_whole_stylesheet(&self, st: &mut State, id: ObjId, body: &[u8]) -> Vec<ObjId> {
        st.objs[id].css_parsed = true;
        if self.fonts_by_use() {
            let n = body.len().min(pagewire_discover::css::MAX_STYLESHEET_BYTES);
            keep_css_text(st, id, &body[..n]);
        }
        let mut css = CssDiscoverer::new(&st.objs[id].url, self.cfg.viewport);
        let mut refs = css.feed(body);
        refs.extend(css.finish());
        self.css_truncated(st, id, &css);
        self.admit(st, refs, ObjectKind::Embedded, id)
    }

    fn css_truncated(&self, st: &mut State, id: ObjId, css: &CssDiscoverer) {
        if css.truncated() {
            let w = format!(
                "{}: stylesheet larger than {} bytes: the rest was not searched for references",
                st.objs[id].url,
                pagewire_discover::css::MAX_STYLESHEET_BYTES
            );
            st.warnings.push(w);
        }
    }

    /// The objects requested and not complete, for an error: the first
    /// URL and how many more.
    pub fn waiting_for(&self) -> String {
        let st = self.lock();
        let mut open = st
            .objs
            .iter()
            .filter(|o| o.attempts > 0 && o.record.is_none() && o.getlist.is_empty());
        match open.next() {
            None => "no response".to_string(),
            Some(o) => match open.count() {
                0 => o.url.clone(),
                n => format!("{} and {n} more", o.url),
            },
        }
    }

    pub fn url_of(&self, id: ObjId) -> String {
        self.lock().objs[id].url.clone()
    }

    pub fn method_of(&self, id: ObjId) -> Method {
        self.lock().objs[id].method.h1()
    }

    /// The request for `id`, as small as the paper's robot made them
    /// ("very careful not to generate unnecessary headers"): request line,
    /// Host, a short User-Agent, and only what the strategy needs.
    pub fn request(&self, id: ObjId, conn: usize, now: Instant) -> Result<Vec<u8>, FetchError> {
        let mut st = self.lock();
        let st_refused = st.getlist_refused;
        let now = self.since_start(now);
        let strategy = self.cfg.strategy;
        let version = if strategy == Strategy::Http10 {
            Version::Http10
        } else {
            Version::Http11
        };
        let o = &mut st.objs[id];
        let profile = self.cfg.request_profile;
        let mut headers: Vec<(&str, String)> = vec![("Host", self.target.authority.clone())];
        headers.extend(
            profile
                .extra_headers()
                .iter()
                .map(|&(k, v)| (k, v.to_string())),
        );
        headers.push((
            "User-Agent",
            profile
                .user_agent()
                .map_or_else(|| self.cfg.user_agent.clone(), str::to_string),
        ));
        if o.conditional {
            if let Some(c) = &o.cached {
                if o.method == RequestMethod::Get {
                    // RFC 9110 §13.1.2/§13.1.3. HTTP/1.0 has only dates.
                    let etag = c
                        .meta
                        .etag
                        .as_ref()
                        .filter(|_| strategy != Strategy::Http10);
                    if let Some(etag) = etag {
                        headers.push(("If-None-Match", etag.clone()));
                    }
                    // libwww 5.1 sent one validator: the entity tag when it
                    // had one, else the date (docs/bench.md, "Revalidation
                    // requests").
                    let one_validator = profile == RequestProfile::Libwww1997;
                    if !(one_validator && etag.is_some()) {
                        if let Some(lm) = &c.meta.last_modified {
                            headers.push(("If-Modified-Since", lm.clone()));
                        }
                    }
                }
            }
        }
        if asks_deflate(strategy, o.method, &o.path) {
            // Paper 001 compresses the HTML only; images are already
            // compressed, so their requests do not carry the header.
            headers.push(("Accept-Encoding", "deflate".to_string()));
        }
        if strategy == Strategy::Objpack && id == PAGE && o.method == RequestMethod::Get {
            // The package if the server has one, else the page (RFC 9110
            // §12.5.1); */* keeps error pages and other types acceptable.
            headers.push((
                "Accept",
                format!(
                    "{}, text/html;q=0.9, */*;q=0.8",
                    pagewire_objpack::MEDIA_TYPE
                ),
            ));
        }
        if o.kind == ObjectKind::Prefetch {
            headers.push(("Sec-Purpose", "prefetch".to_string()));
        }
        match &o.range {
            RangePart::Whole => {}
            RangePart::Head { n } => {
                headers.push(("Range", format!("bytes=0-{}", n - 1)));
                // A revisit: the range only if the cached copy is still
                // the current one (RFC 9110 §13.1.5; a strong entity tag,
                // else the exact Last-Modified date). With If-None-Match
                // the server answers 304 first; a changed object comes
                // whole (If-Range failed).
                if let Some(c) = o.cached.as_ref().filter(|_| o.conditional) {
                    let v = c
                        .meta
                        .etag
                        .as_ref()
                        .filter(|e| !e.starts_with("W/"))
                        .or(c.meta.last_modified.as_ref());
                    if let Some(v) = v {
                        headers.push(("If-Range", v.clone()));
                    }
                }
            }
            RangePart::Rest { head, .. } => {
                headers.push(("Range", format!("bytes={}-", head.len())))
            }
        }
        if strategy == Strategy::Getall && id == PAGE && self.getall_known.is_none() {
            headers.push((crate::getall::GETALL_FIELD, "1".to_string()));
        }
        let mut out = Vec::with_capacity(256);
        let mut method = o.method;
        let mut list = String::new();
        let mut target = o.path.clone();
        if id == PAGE && o.method == RequestMethod::Getlist {
            let (l, etags) = self.revisit_list(o);
            list = l;
            target = "/".to_string();
            if !etags.is_empty() {
                headers.push(("If-None-Match", etags.join(", ")));
            }
            headers.push(("Content-Type", "text/uri-list".to_string()));
            headers.push(("Content-Length", list.len().to_string()));
        } else if !o.getlist.is_empty() {
            // RFC 2483 text/uri-list, CRLF-terminated lines.
            method = RequestMethod::Getlist;
            for i in o.getlist.clone() {
                list.push_str(&st.objs[i].path);
                list.push_str("\r\n");
            }
            headers.push(("Content-Type", "text/uri-list".to_string()));
            headers.push(("Content-Length", list.len().to_string()));
        }
        let o = &mut st.objs[id];
        if pagewire_h1::write_request_head(&mut out, method.as_str(), &target, version, headers)
            .is_err()
        {
            let url = o.url.clone();
            return Err(FetchError::object(
                &url,
                "cannot write a valid request (bad bytes in a cached validator?)",
            ));
        }
        out.extend_from_slice(list.as_bytes());
        o.attempts += 1;
        // A GET after a HEAD that showed a change, or the rest of a range,
        // is not a retry.
        let second =
            o.changed || matches!(o.range, RangePart::Rest { .. }) || (id == PAGE && st_refused);
        let retry = o.attempts > 1 && !(second && o.attempts == 2);
        o.requested = now;
        o.sent = None;
        o.request_len = out.len() as u64;
        o.request_head = String::from_utf8_lossy(&out).into_owned();
        *st.by_method.entry(method).or_default() += 1;
        st.unsent.push((conn, id));
        if retry {
            st.retried += 1;
        }
        st.bytes.header_bytes_sent += (out.len() - list.len()) as u64;
        st.bytes.payload_bytes_sent += list.len() as u64;
        if let Some(c) = st.conns.get_mut(conn) {
            c.requests_sent += 1;
        }
        Ok(out)
    }

    // ---- connections and flushes ------------------------------------------

    pub fn conn_opened(&self, now: Instant) -> usize {
        let mut st = self.lock();
        st.open_now += 1;
        st.max_open = st.max_open.max(st.open_now);
        let id = st.conns.len();
        let now = ms(self.since_start(now));
        st.conns.push(ConnectionRecord {
            opened_ms: now,
            closed_ms: now,
            connect_ms: None,
            ssl_ms: None,
            requests_sent: 0,
            responses_received: 0,
            bytes_sent: 0,
            bytes_received: 0,
            writes: 0,
            reads: 0,
            unanswered: 0,
            pipelined: false,
            end: ConnEnd::Open,
        });
        id
    }

    pub fn conn_closed(&self, conn: usize, end: ConnEnd, now: Instant) {
        let mut st = self.lock();
        st.open_now = st.open_now.saturating_sub(1);
        let now = ms(self.since_start(now));
        let c = &mut st.conns[conn];
        c.closed_ms = now;
        c.end = end;
    }

    /// The TCP handshake before the connection was opened and the TLS or
    /// QUIC handshake after (HAR `connect` and `ssl`).
    pub fn conn_handshake(&self, conn: usize, connect: Duration, ssl: Option<Duration>) {
        let mut st = self.lock();
        if let Some(c) = st.conns.get_mut(conn) {
            c.connect_ms = Some(ms(connect));
            c.ssl_ms = ssl.map(ms);
        }
    }

    pub fn conn_unanswered(&self, conn: usize, n: usize) {
        self.lock().conns[conn].unanswered += n as u32;
    }

    pub fn conn_pipelined(&self, conn: usize) {
        self.lock().conns[conn].pipelined = true;
    }

    pub fn flushed(&self, conn: usize, reason: FlushReason, bytes: usize, now: Instant) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let at = self.since_start(now);
        let at_ms = ms(at);
        // The requests waiting in this connection's buffer leave now.
        let objs = &mut st.objs;
        st.unsent.retain(|&(c, id)| {
            if c != conn {
                return true;
            }
            if let Some(o) = objs.get_mut(id) {
                o.sent = Some(at);
            }
            false
        });
        st.flushes.push(FlushRecord {
            connection: conn,
            at_ms,
            reason,
            bytes,
        });
    }

    pub fn wrote(&self, conn: usize, n: usize) {
        let mut st = self.lock();
        st.bytes.total_bytes_sent += n as u64;
        let c = &mut st.conns[conn];
        c.writes += 1;
        c.bytes_sent += n as u64;
    }

    /// Objects with a result so far (a GETALL's or a package's parts count
    /// one each).
    pub fn records_done(&self) -> usize {
        self.lock()
            .objs
            .iter()
            .filter(|o| o.record.is_some())
            .count()
    }

    /// The fetch is not over before `t`: the robot's imitated host cost
    /// ([`crate::config::HostCost`]) ran until then after the last object.
    pub fn busy_until(&self, t: Instant) {
        let t = self.since_start(t);
        let mut st = self.lock();
        st.last_done = st.last_done.max(t);
    }

    pub fn read(&self, conn: usize, n: usize, now: Instant) {
        let now = self.since_start(now);
        let mut st = self.lock();
        // Connection 0 carries the page's request first in every strategy.
        if conn == 0 && st.ttfb.is_none() {
            st.ttfb = Some(now);
        }
        st.bytes.total_bytes_received += n as u64;
        let c = &mut st.conns[conn];
        c.reads += 1;
        c.bytes_received += n as u64;
    }

    // ---- responses --------------------------------------------------------

    /// A response head arrived for `id` on `conn`.
    pub fn on_head(
        &self,
        id: ObjId,
        conn: usize,
        head: &ResponseHead,
        now: Instant,
    ) -> Result<(HeadInfo, Vec<ObjId>), FetchError> {
        let now = self.since_start(now);
        let mut st = self.lock();
        st.bytes.header_bytes_received += head.raw().len() as u64;
        let status = head.status();
        if (100..200).contains(&status) {
            if status == 101 {
                let url = st.objs[id].url.clone();
                return Err(FetchError::object(
                    &url,
                    "server switched protocols (101) unasked",
                ));
            }
            return Ok((
                HeadInfo {
                    closing: false,
                    interim: true,
                },
                Vec::new(),
            ));
        }
        let text = |name: &str| {
            head.header(name)
                .map(|v| String::from_utf8_lossy(v).trim().to_string())
        };
        let content_encoding =
            text("content-encoding").filter(|e| !e.eq_ignore_ascii_case("identity"));
        let etag = text("etag");
        let last_modified = text("last-modified");
        let content_type = text("content-type");
        let headers: Vec<(String, String)> = head
            .iter()
            .map(|(k, v)| {
                (
                    String::from_utf8_lossy(k).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        // Prefetch hints (RFC 8288 Link, rel=prefetch).
        if self.cfg.prefetch {
            let base = st.objs[id].url.clone();
            for v in head.headers("link") {
                for target in prefetch_links(&String::from_utf8_lossy(v)) {
                    if let Some(abs) = resolve(&base, &target) {
                        if st.hint_set.insert(abs.clone()) {
                            st.hints.push(abs);
                        }
                    }
                }
            }
        }
        let package = (self.cfg.strategy == Strategy::Objpack
            && id == PAGE
            && status == 200
            && content_type.as_deref().is_some_and(|t| {
                t.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case(pagewire_objpack::MEDIA_TYPE)
            }))
        .then(package::PackageRx::new);
        let o = &mut st.objs[id];
        let mut not_modified = false;
        let mut changed = false;
        if status == 304 {
            if o.cached.is_none() {
                let url = o.url.clone();
                return Err(FetchError::object(
                    &url,
                    "304 Not Modified to a request that was not conditional",
                ));
            }
            not_modified = true;
        } else if o.method == RequestMethod::Head && status == 200 {
            let c = o.cached.as_ref().expect("HEAD only for cached objects");
            // A strong ETag match, else an equal Last-Modified, means the
            // cached copy is current (RFC 9110 §8.8.3.2, §8.8.2.2).
            let same = match (&etag, &c.meta.etag) {
                (Some(a), Some(b)) => a == b,
                _ => last_modified.is_some() && last_modified == c.meta.last_modified,
            };
            not_modified = same;
            changed = !same;
        }
        let asked = asks_deflate(self.cfg.strategy, o.method, &o.path);
        let mut unasked_warning = None;
        let inflater = match &content_encoding {
            Some(_) if not_modified || o.method != RequestMethod::Get => None,
            Some(e) if e.eq_ignore_ascii_case("deflate") && (asked || self.cfg.decode_unasked) => {
                Some(Inflater::with_limit(self.cfg.max_inflated))
            }
            Some(e) if !asked => {
                // RFC 9110 §12.5.3 lets a server send a coding not asked
                // for; decoding it would trust what the robot never
                // negotiated (a deflate bomb to a plain GET).
                unasked_warning = Some(format!(
                    "{}: Content-Encoding {e:?} not asked for: body kept as sent, not decoded{}",
                    o.url,
                    if e.eq_ignore_ascii_case("deflate") {
                        " (--decode-unasked inflates it)"
                    } else {
                        ""
                    }
                ));
                None
            }
            Some(e) => {
                let url = o.url.clone();
                return Err(FetchError::object(
                    &url,
                    format!(
                        "the server sent Content-Encoding {e:?}; the robot asked for deflate only"
                    ),
                ));
            }
            _ => None,
        };
        if let Some(w) = unasked_warning {
            st.warnings.push(w);
        }
        let mut spool = None;
        if let (true, Some(cache)) = (
            inflater.is_some() && id != PAGE && !self.cfg.keep_bodies,
            &self.cache,
        ) {
            match cache.spool() {
                Ok(s) => spool = Some(s),
                // Not cached then, but fetched all the same.
                Err(e) => {
                    let w = format!(
                        "{}: cannot create a cache file ({e}); not cached",
                        st.objs[id].url
                    );
                    st.warnings.push(w);
                }
            }
        }
        let o = &mut st.objs[id];
        // Range mode: check the part against what was asked for.
        let mut part = None;
        let mut preset = Vec::new();
        if status == 206 {
            let url = o.url.clone();
            let cr = text("content-range").ok_or_else(|| {
                FetchError::object(&url, "206 Partial Content without Content-Range")
            })?;
            let (start, total) = parse_content_range(&cr).ok_or_else(|| {
                FetchError::object(&url, format!("unreadable Content-Range {cr:?}"))
            })?;
            match &o.range {
                RangePart::Whole => {
                    return Err(FetchError::object(
                        &url,
                        "206 Partial Content to a request without Range",
                    ));
                }
                RangePart::Head { .. } if start != 0 => {
                    return Err(FetchError::object(
                        &url,
                        format!("asked for the first bytes, got Content-Range {cr:?}"),
                    ));
                }
                RangePart::Rest { head, total: t } if start != head.len() as u64 || total != *t => {
                    return Err(FetchError::object(&url, format!(
                        "asked for bytes {}- of {t}, got Content-Range {cr:?} (the object changed between the parts?)",
                        head.len()
                    )));
                }
                RangePart::Rest { head, .. } => preset = head.clone(),
                RangePart::Head { .. } => {}
            }
            part = Some((start, total));
        } else if matches!(o.range, RangePart::Rest { .. }) && status == 200 {
            // The server sent the whole object again: take it whole.
            o.range = RangePart::Whole;
        }
        let getall_boundary = (self.cfg.strategy == Strategy::Getall
            && (id == PAGE || !o.getlist.is_empty())
            && status == 200)
            .then(|| {
                content_type
                    .as_deref()
                    .and_then(crate::getall::boundary)
                    .map(str::to_string)
            })
            .flatten();
        o.resp = Some(InProgress {
            conn,
            status,
            head_len: head.raw().len() as u64,
            headers,
            // h2 and h3 hand the session an HTTP/1.1 rendering of their
            // response heads; the record names the protocol that carried it.
            http_version: match self.cfg.strategy {
                Strategy::H2 => "HTTP/2",
                Strategy::H3 => "HTTP/3",
                _ => head.version().as_str(),
            },
            first_byte: now,
            body: Vec::new(),
            hasher: Sha256::new(),
            size: 0,
            wire_bytes: 0,
            inflater,
            spool,
            content_encoding,
            content_type,
            etag,
            last_modified,
            not_modified,
            changed,
            getall_boundary,
            package,
            css: None,
            part,
        });
        if !preset.is_empty() {
            let r = st.objs[id].resp.as_mut().expect("just set");
            r.hasher.update(&preset);
            r.size = preset.len() as u64;
            r.body = preset;
        }
        let closing = !head.wants_keep_alive();
        let mut new_ids = Vec::new();
        let o = &mut st.objs[id];
        let stylesheet = id != PAGE && o.found.is_some_and(|(_, r)| r.is_stylesheet());
        if id == PAGE && not_modified {
            // Parse the cached page as if it had just arrived.
            let body = st.objs[id].cached.as_ref().expect("checked").body.clone();
            new_ids = self.discover(&mut st, &body);
        } else if stylesheet && not_modified && !o.css_parsed {
            let body = o.cached.as_ref().expect("checked").body.clone();
            new_ids = self.parse_whole_stylesheet(&mut st, id, &body);
        } else if stylesheet && status == 200 && o.method == RequestMethod::Get && !o.css_parsed {
            // A browser applies a stylesheet only as text/css (standards
            // mode); one without a type is sniffed as CSS here.
            let is_css = o
                .resp
                .as_ref()
                .and_then(|r| r.content_type.as_deref())
                .is_none_or(|t| {
                    t.split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .eq_ignore_ascii_case("text/css")
                });
            if is_css {
                o.css_parsed = true;
                let css = CssDiscoverer::new(&o.url, self.cfg.viewport);
                if let Some(r) = o.resp.as_mut() {
                    r.css = Some(css);
                }
            } else {
                o.css_parsed = true;
                let w = format!(
                    "{}: a stylesheet served as {:?}, not text/css: not applied, its references not fetched",
                    o.url,
                    o.resp.as_ref().and_then(|r| r.content_type.clone()).unwrap_or_default()
                );
                st.warnings.push(w);
            }
        }
        Ok((
            HeadInfo {
                closing,
                interim: false,
            },
            new_ids,
        ))
    }

    /// `getall` on a page visited before (not revalidating): uncached
    /// objects are asked for in one GETLIST once the page is parsed.
    fn getall_later_visit(&self, st: &State) -> bool {
        self.cfg.strategy == Strategy::Getall
            && self.getall_known.is_some()
            && !self.cfg.revalidate
            && !st.getlist_refused
    }

    /// `getall`, later visit: the body of the one-message GETLIST (the page
    /// first, then the objects it referenced last time: all of them when
    /// revalidating, else those the cache lacks) and the entity tags of the
    /// cached copies among them, for `If-None-Match`.
    fn revisit_list(&self, page: &Obj) -> (String, Vec<String>) {
        let mut list = format!("{}\r\n", page.path);
        let mut etags: Vec<String> = page
            .cached
            .as_ref()
            .and_then(|c| c.meta.etag.clone())
            .into_iter()
            .collect();
        let mut known: Vec<&String> = self.getall_known.iter().flatten().collect();
        // The cache's list is a set; the request says it in page order
        // would need the page: sorted, so the request is deterministic.
        known.sort();
        for url in known {
            let Some(path) = same_server_path(&self.page_url, url) else {
                continue;
            };
            let cached = self.cache.as_ref().and_then(|c| c.get(url).ok().flatten());
            match cached {
                Some(c) if self.cfg.revalidate => {
                    if let Some(e) = c.meta.etag {
                        if !etags.contains(&e) {
                            etags.push(e);
                        }
                    }
                }
                // In the cache, not revalidating: not asked for.
                Some(_) => continue,
                None => {}
            }
            list.push_str(&encode_target(&path));
            list.push_str("\r\n");
        }
        (list, etags)
    }

    /// A GETLIST request entry for `ids` (not an object of the page).
    fn new_getlist(&self, st: &mut State, ids: Vec<ObjId>) -> ObjId {
        let id = st.objs.len();
        st.objs.push(Obj {
            path: "/".to_string(),
            url: self.target.url_of("/"),
            kind: ObjectKind::Embedded,
            method: RequestMethod::Getlist,
            cached: None,
            conditional: false,
            attempts: 0,
            changed: false,
            requested: Duration::ZERO,
            sent: None,
            request_head: String::new(),
            request_len: 0,
            resp: None,
            record: None,
            body: None,
            getlist: ids,
            stored: false,
            spool: None,
            found: None,
            css_parsed: false,
            range: RangePart::Whole,
        });
        id
    }

    /// The GETLIST answer is complete: its parts become the listed objects;
    /// whatever did not come (an unmodified server's 405/501, a 404 part) is
    /// returned to be fetched by pipelined GETs.
    fn end_getlist(&self, st: &mut State, id: ObjId, r: InProgress, now: Duration) -> Vec<ObjId> {
        let ids = std::mem::take(&mut st.objs[id].getlist);
        let requested = st.objs[id].requested;
        let mut delivered = HashSet::new();
        if let Some(b) = &r.getall_boundary {
            match crate::getall::split(b, &Bytes::from(r.body)) {
                Ok(parts) => {
                    for p in parts.into_iter().filter(|p| p.status() == 200) {
                        let Some(path) = p
                            .header("content-location")
                            .and_then(|l| resolve(&self.page_url, l))
                            .and_then(|u| same_server_path(&self.page_url, &u))
                            .map(|p| encode_target(&p))
                        else {
                            continue;
                        };
                        let Some(&oid) = st.by_path.get(&path) else {
                            continue;
                        };
                        if !ids.contains(&oid) || !delivered.insert(oid) {
                            continue;
                        }
                        let text = |k: &str| p.header(k).map(str::to_string);
                        let o = &mut st.objs[oid];
                        o.record = Some(ObjectRecord {
                            url: o.url.clone(),
                            kind: o.kind,
                            method: RequestMethod::Getlist,
                            status: 200,
                            outcome: Outcome::GetallPart,
                            size: p.body.len() as u64,
                            sha256: sha256_hex(&p.body),
                            body_bytes_received: p.body.len() as u64,
                            header_bytes_received: 0,
                            request_bytes_sent: 0,
                            content_type: text("content-type"),
                            content_encoding: None,
                            etag: text("etag"),
                            last_modified: text("last-modified"),
                            connection: r.conn,
                            attempts: 0,
                            requested_ms: ms(requested),
                            first_byte_ms: ms(r.first_byte),
                            done_ms: ms(now),
                            sent_ms: None,
                            request_head: String::new(),
                            response_headers: p.headers.clone(),
                            http_version: r.http_version,
                            body: None,
                            found_in: None,
                            found_by: None,
                        });
                        o.body = Some(p.body);
                    }
                }
                Err(e) => st
                    .warnings
                    .push(format!("GETLIST answer: {e} (fetching by GET)")),
            }
        } else {
            st.warnings.push(format!(
                "GETLIST answered {} without parts (fetching by GET)",
                r.status
            ));
        }
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        st.last_done = st.last_done.max(now);
        let mut next: Vec<ObjId> = ids
            .iter()
            .copied()
            .filter(|i| !delivered.contains(i))
            .collect();
        for &i in &ids {
            if delivered.contains(&i) {
                next.extend(self.parse_arrived_stylesheet(st, i));
            }
        }
        next
    }

    /// `getall`, later visit: an object the cache holds is not requested
    /// (the paper's GETLIST asks only for "the images not in its cache");
    /// its record says so and its body comes from the cache.
    fn getall_from_cache(&self, st: &mut State, id: ObjId) -> bool {
        if self.cfg.strategy != Strategy::Getall
            || self.getall_known.is_none()
            || self.cfg.revalidate
        {
            return false;
        }
        let Some(cache) = &self.cache else {
            return false;
        };
        // No request and no transfer: its times are the page's request time.
        let now = ms(st.objs[PAGE].requested);
        let o = &mut st.objs[id];
        let Ok(Some(e)) = cache.get(&o.url) else {
            return false;
        };
        o.record = Some(ObjectRecord {
            url: o.url.clone(),
            kind: o.kind,
            method: RequestMethod::Get,
            status: e.meta.status,
            outcome: Outcome::FromCache,
            size: e.meta.body_len,
            sha256: e.meta.body_sha256.clone(),
            body_bytes_received: 0,
            header_bytes_received: 0,
            request_bytes_sent: 0,
            content_type: e.meta.content_type.clone(),
            content_encoding: None,
            etag: e.meta.etag.clone(),
            last_modified: e.meta.last_modified.clone(),
            connection: 0,
            attempts: 0,
            requested_ms: now,
            first_byte_ms: now,
            done_ms: now,
            sent_ms: None,
            request_head: String::new(),
            response_headers: Vec::new(),
            http_version: "",
            body: None,
            found_in: None,
            found_by: None,
        });
        o.body = Some(e.body.clone());
        true
    }

    /// The page's response was a GETALL answer: the page part becomes the
    /// page's content, every other part an object of its own.
    fn take_getall_parts(
        &self,
        st: &mut State,
        r: &mut InProgress,
        boundary: &str,
        now: Duration,
    ) -> Result<(), FetchError> {
        let whole = Bytes::from(std::mem::take(&mut r.body));
        let parts = crate::getall::split(boundary, &whole)
            .map_err(|e| FetchError::object(&self.page_url, format!("GETALL answer: {e}")))?;
        let requested = st.objs[PAGE].requested;
        // GETALL on a first visit, the one-message GETLIST on a later one.
        let method = st.objs[PAGE].method;
        let mut page_found = false;
        for p in parts {
            let Some(loc) = p.header("content-location") else {
                st.warnings
                    .push("GETALL part without Content-Location (ignored)".into());
                continue;
            };
            let Some(path) = resolve(&self.page_url, loc)
                .and_then(|u| same_server_path(&self.page_url, &u))
                .map(|p| encode_target(&p))
            else {
                st.warnings
                    .push(format!("GETALL part for another server: {loc} (ignored)"));
                continue;
            };
            let status = p.status();
            let text = |k: &str| p.header(k).map(str::to_string);
            // The first part is the page (docs/getall.md), whatever its
            // Content-Location says (`/` is answered with `/index.html`).
            if !page_found {
                page_found = true;
                if status == 304 {
                    // The cached page is current (the one-message revisit
                    // sent its entity tag).
                    let Some(c) = st.objs[PAGE].cached.as_ref() else {
                        return Err(FetchError::object(
                            &self.page_url,
                            "GETLIST answered the page 304 though no copy was offered",
                        ));
                    };
                    r.body = c.body.to_vec();
                    r.size = c.meta.body_len;
                    r.not_modified = true;
                    r.status = 304;
                    r.etag = text("etag").or(c.meta.etag.clone());
                    continue;
                }
                if status != 200 {
                    // The page itself is missing (a 404 part): so it is.
                    r.status = status;
                }
                r.hasher = Sha256::new();
                r.hasher.update(&p.body);
                r.size = p.body.len() as u64;
                r.body = p.body.to_vec();
                r.content_type = text("content-type");
                r.etag = text("etag");
                r.last_modified = text("last-modified");
                continue;
            }
            if st.by_path.contains_key(&path) || status != 200 && status != 304 {
                continue;
            }
            // A 304 part: the cached copy whose tag the request offered;
            // without one (a tag this visit did not offer), the object is
            // fetched by pipelining, as any not included.
            let url = self.target.url_of(&path);
            let cached = if status == 304 {
                let tag = p.header("etag");
                let c = self
                    .cache
                    .as_ref()
                    .and_then(|c| c.get(&url).ok().flatten())
                    .filter(|c| tag.is_some() && c.meta.etag.as_deref() == tag);
                match c {
                    Some(c) => Some(c),
                    None => continue,
                }
            } else {
                None
            };
            if st.objs.len() >= pagewire_discover::MAX_REFERENCES {
                break;
            }
            let id = self.add_object(st, path, ObjectKind::Embedded);
            let head_len: u64 = p
                .headers
                .iter()
                .map(|(k, v)| (k.len() + v.len() + 4) as u64)
                .sum();
            let o = &mut st.objs[id];
            let (outcome, size, sha, body) = match &cached {
                Some(c) => (
                    Outcome::NotModified,
                    c.meta.body_len,
                    c.meta.body_sha256.clone(),
                    c.body.clone(),
                ),
                None => (
                    Outcome::GetallPart,
                    p.body.len() as u64,
                    sha256_hex(&p.body),
                    p.body.clone(),
                ),
            };
            let meta = cached.as_ref().map(|c| &c.meta);
            o.record = Some(ObjectRecord {
                url: o.url.clone(),
                kind: o.kind,
                method,
                status,
                outcome,
                size,
                sha256: sha,
                body_bytes_received: p.body.len() as u64,
                header_bytes_received: head_len,
                request_bytes_sent: 0,
                content_type: text("content-type").or(meta.and_then(|m| m.content_type.clone())),
                content_encoding: None,
                etag: text("etag"),
                last_modified: text("last-modified").or(meta.and_then(|m| m.last_modified.clone())),
                connection: r.conn,
                attempts: 0,
                requested_ms: ms(requested),
                first_byte_ms: ms(r.first_byte),
                done_ms: ms(now),
                sent_ms: None,
                request_head: String::new(),
                response_headers: p.headers.clone(),
                http_version: r.http_version,
                body: None,
                found_in: None,
                found_by: None,
            });
            o.body = Some(body);
            if cached.is_some() {
                o.cached = cached;
            }
        }
        if !page_found {
            return Err(FetchError::object(
                &self.page_url,
                "GETALL answer without the page itself",
            ));
        }
        Ok(())
    }

    fn discover(&self, st: &mut State, content: &[u8]) -> Vec<ObjId> {
        let refs = match st.discoverer.as_mut() {
            Some(d) => d.feed_refs(content),
            None => return Vec::new(),
        };
        self.admit(st, refs, ObjectKind::Embedded, PAGE)
    }

    /// Body bytes (framing removed) for `id`; returns newly found objects.
    pub fn on_body(&self, id: ObjId, data: &[u8], now: Instant) -> Result<Vec<ObjId>, FetchError> {
        let mut st = self.lock();
        st.bytes.payload_bytes_received += data.len() as u64;
        let keep = self.keep_bodies();
        let o = &st.objs[id];
        let css_preload =
            is_css_preload(o, o.resp.as_ref().and_then(|r| r.content_type.as_deref()));
        let o = &mut st.objs[id];
        let url = o.url.clone();
        let r = o.resp.as_mut().expect("head first");
        r.wire_bytes += data.len() as u64;
        if let Some(mut rx) = r.package.take() {
            let result = self.package_body(&mut st, &mut rx, data, self.since_start(now));
            if let Some(r) = st.objs[id].resp.as_mut() {
                r.package = Some(rx);
            }
            result?;
            return Ok(Vec::new());
        }
        let parse = id == PAGE && r.status == 200 && r.getall_boundary.is_none();
        // The page's text goes to the parser step by step as it is
        // inflated, never collected beside the body; a
        // stylesheet's references are requested while it arrives.
        let mut refs = Vec::new();
        let mut css_refs = Vec::new();
        let mut css_text = Vec::new();
        let by_use = self.fonts_by_use();
        let st_fields = &mut *st;
        let r = st_fields.objs[id].resp.as_mut().expect("head first");
        let mut parser = st_fields.discoverer.as_mut().filter(|_| parse);
        let mut inflater = r.inflater.take();
        // A 206 part is kept whole to be joined with the other part.
        let keep_this = keep || id == PAGE || css_preload || r.part.is_some();
        let fed = {
            let mut sink = |content: &[u8]| -> Result<(), ContentError> {
                take_content(r, &url, keep_this, content)?;
                if let Some(d) = parser.as_mut() {
                    refs.extend(d.feed_refs(content));
                }
                if let Some(c) = r.css.as_mut() {
                    css_refs.extend(c.feed(content));
                    if by_use {
                        css_text.extend_from_slice(content);
                    }
                }
                Ok(())
            };
            match inflater.as_mut() {
                Some(inf) => inf.feed_with(data, &mut sink),
                None => sink(data),
            }
        };
        r.inflater = inflater;
        if !css_text.is_empty() {
            let have = st.css_texts.get(&id).map_or(0, Vec::len);
            let room = pagewire_discover::css::MAX_STYLESHEET_BYTES.saturating_sub(have);
            keep_css_text(&mut st, id, &css_text[..css_text.len().min(room)]);
        }
        let mut added = self.admit(&mut st, refs, ObjectKind::Embedded, PAGE);
        if !css_refs.is_empty() {
            added.extend(self.admit(&mut st, css_refs, ObjectKind::Embedded, id));
        }
        fed.map_err(|e| e.into_fetch(&url))?;
        Ok(added)
    }

    fn keep_bodies(&self) -> bool {
        self.cfg.keep_bodies || self.cache.is_some()
    }

    /// The response for `id` is complete. Returns ids to request next: newly
    /// found objects, or `id` itself again (GET after a HEAD showed a change).
    pub fn on_end(&self, id: ObjId, now: Instant) -> Result<Vec<ObjId>, FetchError> {
        let now = self.since_start(now);
        let mut st = self.lock();
        let keep = self.keep_bodies();
        let rx = st.objs[id].resp.as_mut().and_then(|r| r.package.take());
        let unpacked = rx.is_some();
        if let Some(rx) = rx {
            self.package_end(&mut st, rx, now)?;
        }
        let o = &mut st.objs[id];
        let url = o.url.clone();
        let mut r = o.resp.take().expect("head first");
        if !o.getlist.is_empty() {
            let mut next = self.end_getlist(&mut st, id, r, now);
            next.extend(self.choose_fonts(&mut st));
            return Ok(next);
        }
        // Inflated text that only the end of the stream released; on the
        // page it must reach the parser like any other body bytes.
        let mut tail = Vec::new();
        if let Some(mut inf) = r.inflater.take() {
            inf.finish(&mut tail)
                .map_err(|e| FetchError::object(&url, format!("Content-Encoding deflate: {e}")))?;
            take_content(&mut r, &url, true, &tail).map_err(|e| e.into_fetch(&url))?;
        }
        if id == PAGE
            && st.objs[PAGE].method == RequestMethod::Getlist
            && r.getall_boundary.is_none()
        {
            // An unmodified server (nginx 405, Apache 501) or a refusal: the
            // page again by a conditional GET, and from now on the
            // traditional way (paper 003 §5.1: "simply retrieves them the
            // traditional way").
            st.warnings.push(format!(
                "GETLIST answered {} without parts: the page by GET, the rest by pipelined GETs",
                r.status
            ));
            st.getlist_refused = true;
            st.objs[PAGE].method = RequestMethod::Get;
            if let Some(c) = st.conns.get_mut(r.conn) {
                c.responses_received += 1;
            }
            return Ok(vec![PAGE]);
        }
        let page_ok = id == PAGE && r.status == 200;
        if r.css.is_some() && self.fonts_by_use() && !tail.is_empty() {
            keep_css_text(&mut st, id, &tail);
        }
        let css_refs = r.css.take().map(|mut c| {
            let mut refs = c.feed(&tail);
            refs.extend(c.finish());
            (refs, c)
        });
        let mut next = Vec::new();
        if let Some(b) = r.getall_boundary.take() {
            self.take_getall_parts(&mut st, &mut r, &b, now)?;
            // The page part is parsed whole now; objects that came as parts
            // are already known, so discovery yields only missing ones.
            let page = std::mem::take(&mut r.body);
            next.extend(self.discover(&mut st, &page));
            r.body = page;
        }
        // Range mode: a first part, complete.
        if matches!(st.objs[id].range, RangePart::Head { .. }) {
            st.range_heads_open = st.range_heads_open.saturating_sub(1);
            match r.part {
                Some((_, total)) if r.size < total => {
                    let head = std::mem::take(&mut r.body);
                    st.objs[id].range = RangePart::Rest { head, total };
                    st.range_rest_pending.push(id);
                    if let Some(c) = st.conns.get_mut(r.conn) {
                        c.responses_received += 1;
                    }
                    next.extend(self.range_release(&mut st, now));
                    return Ok(next);
                }
                // The whole object fitted in the first part, or the server
                // ignored Range (200).
                _ => st.objs[id].range = RangePart::Whole,
            }
            next.extend(self.range_release(&mut st, now));
        }
        if let (RangePart::Rest { total, .. }, Some(_)) = (&st.objs[id].range, r.part) {
            if r.size != *total {
                return Err(FetchError::object(
                    &url,
                    format!(
                        "the parts joined make {} bytes, Content-Range said {total}",
                        r.size
                    ),
                ));
            }
        }
        if r.part.is_some() {
            // Joined whole and checked: the object as a 200 would have been.
            r.status = 200;
        }
        let o = &mut st.objs[id];
        if r.changed {
            // Fetch the new version; the HEAD's exchange is kept in totals.
            o.method = RequestMethod::Get;
            o.changed = true;
            o.conditional = false;
            o.cached = None;
            next.push(id);
            if let Some(c) = st.conns.get_mut(r.conn) {
                c.responses_received += 1;
            }
            return Ok(next);
        }
        let (size, sha, body) = if r.not_modified {
            let c = o.cached.as_ref().expect("not_modified implies cached");
            (c.meta.body_len, c.meta.body_sha256.clone(), c.body.clone())
        } else {
            let body = Bytes::from(std::mem::take(&mut r.body));
            (r.size, hex(&r.hasher.finalize_reset()), body)
        };
        let outcome = if r.not_modified {
            Outcome::NotModified
        } else if o.changed {
            Outcome::Changed
        } else {
            Outcome::Fetched
        };
        let cached_meta = o.cached.as_ref().map(|c| c.meta.clone());
        o.record = Some(ObjectRecord {
            url: o.url.clone(),
            kind: o.kind,
            method: o.method,
            status: r.status,
            outcome,
            size,
            sha256: sha,
            body_bytes_received: r.wire_bytes,
            header_bytes_received: r.head_len,
            request_bytes_sent: o.request_len,
            content_type: r
                .content_type
                .clone()
                .or(cached_meta.as_ref().and_then(|m| m.content_type.clone())),
            content_encoding: r.content_encoding.clone(),
            etag: r
                .etag
                .clone()
                .or(cached_meta.as_ref().and_then(|m| m.etag.clone())),
            last_modified: r
                .last_modified
                .clone()
                .or(cached_meta.as_ref().and_then(|m| m.last_modified.clone())),
            connection: r.conn,
            attempts: o.attempts,
            requested_ms: ms(o.requested),
            first_byte_ms: ms(r.first_byte),
            done_ms: ms(now),
            sent_ms: None,
            request_head: std::mem::take(&mut o.request_head),
            response_headers: std::mem::take(&mut r.headers),
            http_version: r.http_version,
            body: None,
            found_in: None,
            found_by: None,
        });
        let css_preload = is_css_preload(o, r.content_type.as_deref());
        if let Some(spool) = r.spool.take() {
            o.spool = Some(spool);
        } else if keep || (id == PAGE && !r.not_modified) || css_preload {
            o.body = Some(body);
        }
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        st.last_done = st.last_done.max(now);
        if page_ok && !tail.is_empty() {
            next.extend(self.discover(&mut st, &tail));
        }
        if let Some((refs, css)) = css_refs {
            self.css_truncated(&mut st, id, &css);
            next.extend(self.admit(&mut st, refs, ObjectKind::Embedded, id));
        } else {
            // Preloaded as a style, and linked as a stylesheet while it was
            // arriving: parsed whole now.
            next.extend(self.parse_arrived_stylesheet(&mut st, id));
        }
        if unpacked {
            // The page came in the package: parse it now, so that only what
            // the package lacked is requested.
            let page = st.objs[PAGE].body.clone().unwrap_or_default();
            next.extend(self.discover(&mut st, &page));
        }
        if id == PAGE {
            let mut refs = Vec::new();
            if let Some(mut d) = st.discoverer.take() {
                refs = d.finish_refs();
                st.refs_dropped += d.dropped();
                if let Some(e) = d.error() {
                    st.warnings
                        .push(format!("HTML tokenizer stopped early: {e}"));
                }
            }
            next.extend(self.admit(&mut st, refs, ObjectKind::Embedded, PAGE));
            let pending = std::mem::take(&mut st.getlist_pending);
            match pending.len() {
                0 => {}
                // One object: a plain GET says the same in fewer bytes.
                1 => next.extend(pending),
                _ => next.push(self.new_getlist(&mut st, pending)),
            }
            st.discovery_done = true;
            st.page_done = Some(now);
            next.extend(self.range_release(&mut st, now));
            if st.refs_dropped > 0 {
                let w = format!(
                    "object limit reached: the page references more than {} objects; {} references were not fetched",
                    pagewire_discover::MAX_REFERENCES,
                    st.refs_dropped
                );
                st.warnings.push(w);
            }
        }
        next.extend(self.choose_fonts(&mut st));
        Ok(next)
    }

    /// Fonts by use: the `@font-face` sources are requested only by what
    /// the page's text needs, and only once it can be styled.
    fn fonts_by_use(&self) -> bool {
        self.cfg.discover && !self.cfg.all_fonts
    }

    /// Once the page and every applied stylesheet are complete: the faces
    /// rendered text uses (`pagewire_discover::fonts`), requested now.
    fn choose_fonts(&self, st: &mut State) -> Vec<ObjId> {
        if !self.fonts_by_use() || st.fonts_done || !st.discovery_done {
            return Vec::new();
        }
        let waiting = st
            .objs
            .iter()
            .any(|o| o.found.is_some_and(|(_, r)| r.is_stylesheet()) && o.record.is_none())
            || !st.getlist_pending.is_empty();
        if waiting {
            return Vec::new();
        }
        st.fonts_done = true;
        let held = std::mem::take(&mut st.fonts_held);
        let texts = std::mem::take(&mut st.css_texts);
        if held.is_empty() {
            return Vec::new();
        }
        let page = &st.objs[PAGE];
        let html = page
            .body
            .clone()
            .or_else(|| page.cached.as_ref().map(|c| c.body.clone()))
            .unwrap_or_default();
        let sheets: HashMap<String, String> = texts
            .into_iter()
            .map(|(id, t)| {
                let t = String::from_utf8_lossy(&t);
                let t = t.strip_prefix('\u{feff}').unwrap_or(&t).to_string();
                (st.objs[id].url.clone(), t)
            })
            .collect();
        let used = if st.css_text_bytes > MAX_FONT_CSS_BYTES {
            None
        } else {
            pagewire_discover::fonts::used_faces(
                &String::from_utf8_lossy(&html),
                &self.page_url,
                &sheets,
                &self.cfg.viewport,
            )
        };
        let mut next = Vec::new();
        match used {
            None => {
                st.warnings.push(
                    "page or stylesheets too large to style: every @font-face source fetched"
                        .to_string(),
                );
                for (r, from) in held {
                    next.extend(self.admit(st, vec![r], ObjectKind::Embedded, from));
                }
            }
            Some(faces) => {
                for f in faces {
                    // Requested from where the robot found it (the same
                    // URL), so the report names its stylesheet.
                    let Some((r, from)) = held.iter().find(|(r, _)| r.url == f.url) else {
                        continue;
                    };
                    next.extend(self.admit(st, vec![r.clone()], ObjectKind::Embedded, *from));
                }
            }
        }
        next
    }

    /// Range mode: once the page is parsed and every first part is in, the
    /// rests go out, all at once (then metadata of every image is known).
    fn range_release(&self, st: &mut State, now: Duration) -> Vec<ObjId> {
        if st.range_heads_total == 0 || !st.discovery_done || st.range_heads_open > 0 {
            return Vec::new();
        }
        st.metadata_done.get_or_insert(now);
        std::mem::take(&mut st.range_rest_pending)
    }

    /// The connection broke while `id`'s response was partly received (a
    /// reset can discard data already acknowledged, paper 001 "Connection
    /// Management"): forget the partial response so a retry starts clean.
    pub fn forget_partial(&self, id: ObjId) {
        let mut st = self.lock();
        if st.objs[id].resp.take().is_some() && id == PAGE && self.cfg.discover {
            // The page will be parsed again from its start; references
            // already admitted are not requested twice (by_path).
            st.discoverer = Some(Discoverer::with_options(
                &self.page_url,
                discovery_options(&self.cfg),
            ));
        }
    }

    /// Objects to prefetch now: hinted, on this server, not yet fetched and
    /// not in the cache.
    pub fn take_prefetch_work(&self) -> Vec<ObjId> {
        if !self.cfg.prefetch {
            return Vec::new();
        }
        let mut st = self.lock();
        let hints = std::mem::take(&mut st.hints);
        let mut ids = Vec::new();
        for h in hints {
            if st.prefetched >= MAX_PREFETCH_OBJECTS {
                break;
            }
            let Some(path) = same_server_path(&self.page_url, &h) else {
                continue;
            };
            if st.by_path.contains_key(&path) {
                continue;
            }
            let url = self.target.url_of(&path);
            if let Some(cache) = &self.cache {
                if matches!(cache.get(&url), Ok(Some(_))) {
                    continue;
                }
            }
            st.prefetched += 1;
            let id = self.add_object(&mut st, path, ObjectKind::Prefetch);
            // A prefetch is never conditional: the object is not cached.
            st.objs[id].conditional = false;
            st.objs[id].cached = None;
            st.objs[id].method = RequestMethod::Get;
            ids.push(id);
        }
        ids
    }

    /// Writes the cache (after the network work, so disk time never delays
    /// a request) and assembles the report.
    pub fn finish(&self) -> FetchReport {
        let mut st = self.lock();
        let total = st.last_done;
        if !st.fonts_done && !st.fonts_held.is_empty() {
            let w = format!(
                "{} @font-face sources not fetched: the page or a stylesheet did not complete, so no text was styled",
                st.fonts_held.len()
            );
            st.warnings.push(w);
        }
        if let Some(cache) = &self.cache {
            let mut warnings = Vec::new();
            for o in &mut st.objs {
                let Some(rec) = &o.record else { continue };
                if o.stored {
                    continue;
                }
                if let Some(spool) = o.spool.take() {
                    // Inflated into a file of the cache as it arrived.
                    if rec.status == 200 && rec.method == RequestMethod::Get {
                        let meta = EntryMeta {
                            url: o.url.clone(),
                            status: 200,
                            etag: rec.etag.clone(),
                            last_modified: rec.last_modified.clone(),
                            content_type: rec.content_type.clone(),
                            body_len: rec.size,
                            body_sha256: rec.sha256.clone(),
                            prefetched: o.kind == ObjectKind::Prefetch,
                        };
                        if let Err(e) = cache.put_spooled(&meta, spool) {
                            warnings.push(e.to_string());
                        }
                    }
                    continue;
                }
                let Some(body) = &o.body else { continue };
                let cacheable = rec.status == 200 || rec.outcome == Outcome::NotModified;
                if !cacheable
                    || rec.outcome == Outcome::FromCache
                    || !matches!(rec.method, RequestMethod::Get | RequestMethod::Getlist)
                        && !matches!(rec.outcome, Outcome::NotModified | Outcome::GetallPart)
                {
                    continue;
                }
                let meta = EntryMeta {
                    url: o.url.clone(),
                    status: 200,
                    etag: rec.etag.clone(),
                    last_modified: rec.last_modified.clone(),
                    content_type: rec.content_type.clone(),
                    body_len: body.len() as u64,
                    body_sha256: sha256_hex(body),
                    prefetched: o.kind == ObjectKind::Prefetch,
                };
                let cached = o.cached.as_ref().map(|c| &c.meta);
                if rec.outcome == Outcome::NotModified && cached == Some(&meta) {
                    // A 304 that changes nothing rewrites nothing (an
                    // all-304 revalidation must not rewrite every entry).
                    continue;
                }
                let same_body = cached.is_some_and(|c| {
                    c.body_len == meta.body_len && c.body_sha256 == meta.body_sha256
                });
                if same_body {
                    // New validators, same body (a 304, or a 200 of the
                    // same bytes): the meta file only.
                    if let Err(e) = cache.put_meta(&meta) {
                        warnings.push(e.to_string());
                    }
                    continue;
                }
                if let Err(e) = cache.put(&meta, body) {
                    warnings.push(e.to_string());
                }
            }
            if self.cfg.strategy == Strategy::Getall {
                // "listing for each known image URL the URL of the document
                // that contained it": the page's references, for next time.
                let list: String = st
                    .objs
                    .iter()
                    .skip(1)
                    .filter(|o| o.kind == ObjectKind::Embedded)
                    .map(|o| format!("{}\n", o.url))
                    .collect();
                let meta = EntryMeta {
                    url: crate::getall::refs_key(&self.page_url),
                    status: 200,
                    etag: None,
                    last_modified: None,
                    content_type: Some("text/uri-list".into()),
                    body_len: list.len() as u64,
                    body_sha256: sha256_hex(list.as_bytes()),
                    prefetched: false,
                };
                if let Err(e) = cache.put(&meta, list.as_bytes()) {
                    warnings.push(e.to_string());
                }
            }
            st.warnings.extend(warnings);
        }
        let keep = self.cfg.keep_bodies;
        let mut objects = Vec::new();
        let mut statuses: BTreeMap<u16, u32> = BTreeMap::new();
        let mut requests = 0;
        let urls: Vec<String> = st.objs.iter().map(|o| o.url.clone()).collect();
        for o in &mut st.objs {
            if let Some(mut rec) = o.record.take() {
                if keep {
                    rec.body = o.body.take();
                }
                if let Some((from, rule)) = o.found {
                    rec.found_in = urls.get(from).cloned();
                    rec.found_by = Some(rule.as_str());
                }
                // The flush that carried its request, if it was this
                // record's request (not a package's or the cache's).
                rec.sent_ms = o
                    .sent
                    .map(ms)
                    .filter(|&t| o.attempts > 0 && t >= rec.requested_ms);
                *statuses.entry(rec.status).or_default() += 1;
                objects.push(rec);
            }
            requests += o.attempts;
        }
        // Methods of every request sent: a changed HEAD counts as a HEAD
        // and then a GET.
        let by_method = std::mem::take(&mut st.by_method);
        let mut flush_counts: BTreeMap<String, u32> = BTreeMap::new();
        for f in &st.flushes {
            let name = match f.reason {
                FlushReason::Full => "full",
                FlushReason::Timer => "timer",
                FlushReason::Explicit => "explicit",
            };
            *flush_counts.entry(name.to_string()).or_default() += 1;
        }
        let hints: Vec<String> = {
            let mut v: Vec<String> = st.hint_set.iter().cloned().collect();
            v.sort();
            v
        };
        FetchReport {
            tool: format!("pagewire-client {}", env!("CARGO_PKG_VERSION")),
            url: self.page_url.clone(),
            strategy: self.cfg.strategy,
            revalidate: self.cfg.revalidate,
            out_buffer_bytes: self.cfg.out_buffer_bytes,
            flush_after: self.cfg.flush_after,
            flush_at_page_end: self.cfg.flush_at_page_end,
            explicit_flush: self.cfg.explicit_flush,
            revalidation: self.cfg.revalidation,
            request_profile: self.cfg.request_profile,
            max_conns: self.cfg.max_conns,
            timeouts: self.cfg.timeouts,
            started: rfc3339(self.started_wall),
            started_at: self.started_wall,
            objects,
            requests,
            requests_by_method: by_method,
            statuses,
            bytes: st.bytes.clone(),
            ttfb_ms: st.ttfb.map(ms).unwrap_or(0.0),
            page_complete_ms: st.page_done.map(ms).unwrap_or(0.0),
            metadata_ms: st.metadata_done.map(ms),
            total_ms: ms(total),
            connections_opened: st.conns.len(),
            max_open_connections: st.max_open,
            requests_per_connection: st.conns.iter().map(|c| c.requests_sent).collect(),
            connections: st.conns.clone(),
            writes: st.conns.iter().map(|c| c.writes).sum(),
            flushes: std::mem::take(&mut st.flushes),
            flush_counts,
            retried_requests: st.retried,
            skipped_other_server: std::mem::take(&mut st.skipped),
            cross_origin: std::mem::take(&mut st.cross_origin)
                .into_iter()
                .map(|(url, from, rule)| CrossOriginRecord {
                    origin: origin_of(&url),
                    url,
                    found_in: urls.get(from).cloned().unwrap_or_default(),
                    found_by: rule.as_str(),
                })
                .collect(),
            viewport: ViewportRecord {
                width: self.cfg.viewport.width,
                dpr: self.cfg.viewport.dpr,
            },
            prefetch_hints: hints,
            references_not_fetched: st.refs_dropped,
            redirects: Vec::new(),
            cache_bytes_written: self.cache.as_ref().map_or(0, Cache::bytes_written),
            cross_origin_fetches: Vec::new(),
            warnings: std::mem::take(&mut st.warnings),
        }
    }
}

/// A `preload` answered with CSS: its body is kept, in case the page links
/// it as a stylesheet later (`<link rel=preload as=style>` first).
fn is_css_preload(o: &Obj, content_type: Option<&str>) -> bool {
    o.found.is_some_and(|(_, r)| r == Rule::Preload)
        && content_type.is_some_and(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("text/css")
        })
}

/// Stylesheet text kept for fonts by use, all stylesheets together; beyond
/// it the page is not styled (every face is fetched).
const MAX_FONT_CSS_BYTES: usize = 64 << 20;

/// Keeps stylesheet text for fonts by use, within `MAX_FONT_CSS_BYTES`.
fn keep_css_text(st: &mut State, id: ObjId, text: &[u8]) {
    st.css_text_bytes = st.css_text_bytes.saturating_add(text.len());
    if st.css_text_bytes <= MAX_FONT_CSS_BYTES {
        st.css_texts.entry(id).or_default().extend_from_slice(text);
    } else {
        st.css_texts.clear();
    }
}

/// The discovery options of a fetch.
fn discovery_options(cfg: &FetchConfig) -> Options {
    Options {
        viewport: cfg.viewport,
    }
}

/// `scheme://authority` of an absolute URL (the URL itself otherwise).
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            format!("{}://{}", scheme.to_ascii_lowercase(), &rest[..end])
        }
        None => url.to_string(),
    }
}

/// `bytes FIRST-LAST/COMPLETE` (RFC 9110 §14.4): the first byte and the
/// complete length.
fn parse_content_range(v: &str) -> Option<(u64, u64)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let total: u64 = total.trim().parse().ok()?;
    (first <= last && last < total).then_some((first, total))
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Percent-encodes bytes not allowed in a request target (RFC 3986 §2.1),
/// so a reference with spaces or non-ASCII still makes a valid request.
fn encode_target(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b <= 0x20
            || b >= 0x7f
            || matches!(
                b,
                b'"' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'{' | b'|' | b'}'
            )
        {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

/// Why body content could not be taken: the inflater's error or ours.
enum ContentError {
    Inflate(InflateError),
    Fetch(FetchError),
}

impl From<InflateError> for ContentError {
    fn from(e: InflateError) -> Self {
        ContentError::Inflate(e)
    }
}

impl ContentError {
    fn into_fetch(self, url: &str) -> FetchError {
        match self {
            ContentError::Inflate(e) => {
                FetchError::object(url, format!("Content-Encoding deflate: {e}"))
            }
            ContentError::Fetch(e) => e,
        }
    }
}

/// Decoded body content of `r`: hashed and counted, then written to its
/// spool file, or kept in memory when `keep` (up to 256 MiB), or dropped.
fn take_content(
    r: &mut InProgress,
    url: &str,
    keep: bool,
    content: &[u8],
) -> Result<(), ContentError> {
    r.hasher.update(content);
    r.size += content.len() as u64;
    if let Some(spool) = r.spool.as_mut() {
        spool.write(content).map_err(|source| {
            ContentError::Fetch(FetchError::Io {
                what: format!("cannot write the cache file of {url}"),
                source,
            })
        })?;
    } else if keep {
        if r.body.len() + content.len() > MAX_ENTRY_BODY_BYTES {
            return Err(ContentError::Fetch(FetchError::object(
                url,
                "object larger than 256 MiB",
            )));
        }
        r.body.extend_from_slice(content);
    }
    Ok(())
}

/// Whether the robot's request for `path` carries `Accept-Encoding: deflate`.
fn asks_deflate(strategy: Strategy, method: RequestMethod, path: &str) -> bool {
    // Paper 001 compresses the HTML only; images are already compressed, so
    // their requests do not carry the header.
    matches!(
        strategy,
        Strategy::PipelineDeflate | Strategy::H2 | Strategy::H3
    ) && method == RequestMethod::Get
        && !is_image_path(path)
}

fn is_image_path(path: &str) -> bool {
    let p = path.split('?').next().unwrap_or(path).to_ascii_lowercase();
    [
        ".gif", ".png", ".jpg", ".jpeg", ".webp", ".ico", ".avif", ".bmp",
    ]
    .iter()
    .any(|ext| p.ends_with(ext))
}

/// Targets of `rel=prefetch` links in one `Link` field value (RFC 8288 §3,
/// simplified: `<uri>; param=value; ...`, comma-separated).
pub fn prefetch_links(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    // Bounded by the field length: each pass consumes one `<...>` link.
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let target = rest[open + 1..open + close].trim().to_string();
        let after = &rest[open + close + 1..];
        let params_end = after.find('<').unwrap_or(after.len());
        // Parameters end at the comma before the next link.
        let params = after[..params_end].split(',').next().unwrap_or("");
        let is_prefetch = params.split(';').any(|p| {
            let Some((k, v)) = p.split_once('=') else {
                return false;
            };
            k.trim().eq_ignore_ascii_case("rel")
                && v.trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("prefetch"))
        });
        if is_prefetch && !target.is_empty() {
            out.push(target);
        }
        rest = &after[params_end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_header_prefetch_targets() {
        assert_eq!(
            prefetch_links(
                r#"</a.gif>; rel=prefetch, </b.css>; rel="preload stylesheet", </c.gif>; rel="prefetch""#
            ),
            vec!["/a.gif", "/c.gif"]
        );
        assert!(prefetch_links("garbage <").is_empty());
        assert!(prefetch_links("").is_empty());
    }

    #[test]
    fn images_by_extension() {
        assert!(is_image_path("/i/a.GIF?x=1"));
        assert!(!is_image_path("/s.css"));
        assert!(!is_image_path("/"));
    }
}
