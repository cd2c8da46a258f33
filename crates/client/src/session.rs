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
use pagewire_discover::{resolve, same_server_path, Discoverer};
use pagewire_h1::{Method, ResponseHead, Version};
use sha2::{Digest, Sha256};

use crate::cache::{hex, sha256_hex, Cache, Entry, EntryMeta, MAX_ENTRY_BODY_BYTES};
use crate::config::{FetchConfig, RequestProfile, Revalidation, Strategy, Target};
use crate::error::FetchError;
use crate::inflate::Inflater;
use crate::outbuf::FlushReason;
mod package;

use crate::report::{
    rfc3339, ByteCounts, ConnEnd, ConnectionRecord, FetchReport, FlushRecord, ObjectKind,
    ObjectRecord, Outcome, RequestMethod,
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
    request_head: String,
    request_len: u64,
    resp: Option<InProgress>,
    record: Option<ObjectRecord>,
    /// Content kept for the cache, `--save` or the report.
    body: Option<Bytes>,
    /// `getall`, later visit: this entry is a GETLIST request for these
    /// objects, not an object of the page (no record of its own).
    getlist: Vec<ObjId>,
    /// Already written to the cache (an object that came in a package).
    stored: bool,
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
            discoverer: Some(Discoverer::new(&page_url)),
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
            request_head: String::new(),
            request_len: 0,
            resp: None,
            record: None,
            body: None,
            getlist: Vec::new(),
            stored: false,
            range: RangePart::Whole,
        });
        if let Some(n) = self.cfg.range_first.filter(|_| {
            id != PAGE
                && kind == ObjectKind::Embedded
                && !revalidating
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

    /// Turns discovered references into new objects (same server, not seen
    /// before); returns their ids in document order.
    fn admit(&self, st: &mut State, refs: Vec<String>, kind: ObjectKind) -> Vec<ObjId> {
        let mut ids = Vec::new();
        for r in refs {
            match same_server_path(&self.page_url, &r) {
                Some(path) => {
                    let path = encode_target(&path);
                    if st.by_path.contains_key(&path) {
                        continue;
                    }
                    if st.objs.len() >= pagewire_discover::MAX_REFERENCES {
                        st.refs_dropped += 1;
                        continue;
                    }
                    let id = self.add_object(st, path, kind);
                    if self.getall_from_cache(st, id) {
                        // In the cache: not requested.
                    } else if self.getall_later_visit() && kind == ObjectKind::Embedded {
                        st.getlist_pending.push(id);
                    } else {
                        ids.push(id);
                    }
                }
                None => {
                    if st.skipped_set.insert(r.clone()) {
                        st.skipped.push(r);
                    }
                }
            }
        }
        ids
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
            RangePart::Head { n } => headers.push(("Range", format!("bytes=0-{}", n - 1))),
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
        if !o.getlist.is_empty() {
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
        if pagewire_h1::write_request_head(&mut out, method.as_str(), &o.path, version, headers)
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
        let second = o.changed || matches!(o.range, RangePart::Rest { .. });
        let retry = o.attempts > 1 && !(second && o.attempts == 2);
        o.requested = now;
        o.request_len = out.len() as u64;
        o.request_head = String::from_utf8_lossy(&out).into_owned();
        *st.by_method.entry(method).or_default() += 1;
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

    pub fn conn_unanswered(&self, conn: usize, n: usize) {
        self.lock().conns[conn].unanswered += n as u32;
    }

    pub fn conn_pipelined(&self, conn: usize) {
        self.lock().conns[conn].pipelined = true;
    }

    pub fn flushed(&self, conn: usize, reason: FlushReason, bytes: usize, now: Instant) {
        let mut st = self.lock();
        let at_ms = ms(self.since_start(now));
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
                // negotiated (issue 18: a deflate bomb to a plain GET).
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
            http_version: head.version().as_str(),
            first_byte: now,
            body: Vec::new(),
            hasher: Sha256::new(),
            size: 0,
            wire_bytes: 0,
            inflater,
            content_encoding,
            content_type,
            etag,
            last_modified,
            not_modified,
            changed,
            getall_boundary,
            package,
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
        if id == PAGE && not_modified {
            // Parse the cached page as if it had just arrived.
            let body = st.objs[id].cached.as_ref().expect("checked").body.clone();
            new_ids = self.discover(&mut st, &body);
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
    fn getall_later_visit(&self) -> bool {
        self.cfg.strategy == Strategy::Getall && self.getall_known.is_some() && !self.cfg.revalidate
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
            request_head: String::new(),
            request_len: 0,
            resp: None,
            record: None,
            body: None,
            getlist: ids,
            stored: false,
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
                            request_head: String::new(),
                            response_headers: p.headers.clone(),
                            http_version: r.http_version,
                            body: None,
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
        ids.into_iter().filter(|i| !delivered.contains(i)).collect()
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
            request_head: String::new(),
            response_headers: Vec::new(),
            http_version: "",
            body: None,
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
                r.hasher = Sha256::new();
                r.hasher.update(&p.body);
                r.size = p.body.len() as u64;
                r.body = p.body.to_vec();
                r.content_type = text("content-type");
                r.etag = text("etag");
                r.last_modified = text("last-modified");
                continue;
            }
            // A 304 part needs a cached copy this visit did not offer; such
            // objects (and any not included) are fetched by pipelining.
            if status == 304 || st.by_path.contains_key(&path) {
                continue;
            }
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
            o.record = Some(ObjectRecord {
                url: o.url.clone(),
                kind: o.kind,
                method: RequestMethod::Get,
                status,
                outcome: Outcome::GetallPart,
                size: p.body.len() as u64,
                sha256: sha256_hex(&p.body),
                body_bytes_received: p.body.len() as u64,
                header_bytes_received: head_len,
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
                request_head: String::new(),
                response_headers: p.headers.clone(),
                http_version: r.http_version,
                body: None,
            });
            o.body = Some(p.body);
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
            Some(d) => d.feed(content),
            None => return Vec::new(),
        };
        self.admit(st, refs, ObjectKind::Embedded)
    }

    /// Body bytes (framing removed) for `id`; returns newly found objects.
    pub fn on_body(&self, id: ObjId, data: &[u8], now: Instant) -> Result<Vec<ObjId>, FetchError> {
        let mut st = self.lock();
        st.bytes.payload_bytes_received += data.len() as u64;
        let keep = self.keep_bodies();
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
        let mut inflated = Vec::new();
        let content: &[u8] = match r.inflater.as_mut() {
            Some(inf) => {
                inf.feed(data, &mut inflated).map_err(|e| {
                    FetchError::object(&url, format!("Content-Encoding deflate: {e}"))
                })?;
                &inflated
            }
            None => data,
        };
        r.hasher.update(content);
        r.size += content.len() as u64;
        if keep || id == PAGE || r.part.is_some() {
            if r.body.len() + content.len() > MAX_ENTRY_BODY_BYTES {
                return Err(FetchError::object(&url, "object larger than 256 MiB"));
            }
            r.body.extend_from_slice(content);
        }
        if id == PAGE && r.status == 200 && r.getall_boundary.is_none() {
            let content = content.to_vec();
            return Ok(self.discover(&mut st, &content));
        }
        Ok(Vec::new())
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
            return Ok(self.end_getlist(&mut st, id, r, now));
        }
        // Inflated text that only the end of the stream released; on the
        // page it must reach the parser like any other body bytes.
        let mut tail = Vec::new();
        if let Some(inf) = r.inflater.as_mut() {
            inf.finish(&mut tail)
                .map_err(|e| FetchError::object(&url, format!("Content-Encoding deflate: {e}")))?;
            r.hasher.update(&tail);
            r.size += tail.len() as u64;
            r.body.extend_from_slice(&tail);
        }
        let page_ok = id == PAGE && r.status == 200;
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
            request_head: std::mem::take(&mut o.request_head),
            response_headers: std::mem::take(&mut r.headers),
            http_version: r.http_version,
            body: None,
        });
        if keep || (id == PAGE && !r.not_modified) {
            o.body = Some(body);
        }
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        st.last_done = st.last_done.max(now);
        if page_ok && !tail.is_empty() {
            next.extend(self.discover(&mut st, &tail));
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
                refs = d.finish();
                st.refs_dropped += d.dropped();
                if let Some(e) = d.error() {
                    st.warnings
                        .push(format!("HTML tokenizer stopped early: {e}"));
                }
            }
            next.extend(self.admit(&mut st, refs, ObjectKind::Embedded));
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
        Ok(next)
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
        if st.objs[id].resp.take().is_some() && id == PAGE {
            // The page will be parsed again from its start; references
            // already admitted are not requested twice (by_path).
            st.discoverer = Some(Discoverer::new(&self.page_url));
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
        if let Some(cache) = &self.cache {
            let mut warnings = Vec::new();
            for o in &st.objs {
                let (Some(rec), Some(body)) = (&o.record, &o.body) else {
                    continue;
                };
                if o.stored {
                    continue;
                }
                let cacheable = rec.status == 200 || rec.outcome == Outcome::NotModified;
                if !cacheable
                    || rec.outcome == Outcome::FromCache
                    || rec.method != RequestMethod::Get
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
                if rec.outcome == Outcome::NotModified
                    && o.cached.as_ref().is_some_and(|c| c.meta == meta)
                {
                    // Issue 18: a 304 that changes nothing rewrites nothing
                    // (an all-304 revalidation used to rewrite every entry).
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
        for o in &mut st.objs {
            if let Some(mut rec) = o.record.take() {
                if keep {
                    rec.body = o.body.take();
                }
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
            prefetch_hints: hints,
            references_not_fetched: st.refs_dropped,
            redirects: Vec::new(),
            warnings: std::mem::take(&mut st.warnings),
        }
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

/// Whether the robot's request for `path` carries `Accept-Encoding: deflate`.
fn asks_deflate(strategy: Strategy, method: RequestMethod, path: &str) -> bool {
    // Paper 001 compresses the HTML only; images are already compressed, so
    // their requests do not carry the header.
    strategy == Strategy::PipelineDeflate && method == RequestMethod::Get && !is_image_path(path)
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
