//! The state of one fetch shared by its connections: the objects (page
//! first), what each request looks like, what each response did, the
//! streaming discovery of the page's references, and the counters that end
//! up in the `FetchReport`. Connections (`conn`, `multiplex`) decide when
//! bytes move; this module decides what they mean. The session reads no
//! clock (callers pass the current time), takes no lock (the one task that
//! drives the fetch owns it) and reads no file (cache lookups are answered
//! from a `cache::Snapshot`); what it writes goes out as `store::Write`
//! effects and `CacheWrite`s at the end, except an inflated body's spool
//! file, written as it inflates (`head::spool_for`).
//!
//! One module per part of the exchange (`request`, `head`, `body`, `end`,
//! `finish`, `conns`, `objects`) and one per strategy behaviour, each
//! hooked in at the same three points (what to request, what a response
//! head means, what to do when a response ends): `getall` (GETALL and
//! GETLIST parts), `package` (objpack), `range` (range mode), `fonts`
//! (fonts by use), `prefetch` (prefetch hints). h2 and h3 differ only in how
//! bytes move (`multiplex.rs`); here, in the version their records name and
//! in asking for deflate.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use pagewire_discover::{
    resolve, same_server_path, CssDiscoverer, Discoverer, Options, Reference, Rule,
};
use pagewire_h1::{Method, ResponseHead, Version};
use sha2::{Digest, Sha256};

use crate::cache::{
    hex, sha256_hex, Cache, CacheWarning, Entry, EntryMeta, Snapshot, Spool, MAX_ENTRY_BODY_BYTES,
};
use crate::config::{FetchConfig, RequestProfile, Revalidation, Strategy, Target};
use crate::error::FetchError;
use crate::inflate::{InflateError, Inflater};
use crate::outbuf::FlushReason;
use crate::report::{
    rfc3339, ByteCounts, ConnEnd, ConnectionRecord, CrossOriginRecord, FetchReport, FlushRecord,
    ObjectKind, ObjectRecord, Outcome, RequestMethod, ViewportRecord,
};

mod body;
mod conns;
mod end;
mod finish;
mod fonts;
mod getall;
mod head;
mod objects;
mod package;
mod prefetch;
mod range;
mod request;

pub use crate::store::{CacheWrite, Write};
use body::{is_css_preload, take_content};
use fonts::keep_css_text;
pub use prefetch::prefetch_links;
use range::RangePart;
use request::asks_deflate;

#[cfg(test)]
pub(crate) mod tests;

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

/// What changes while a fetch runs.
#[derive(Default)]
pub struct State {
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
    /// Writes for the caller to do now ([`Session::take_writes`]).
    writes: Vec<Write>,
}

/// What a response head means for its connection.
pub struct HeadInfo {
    /// The server will close after this response (RFC 9112 §9.6): send
    /// nothing more on this connection.
    pub closing: bool,
    /// Interim 1xx: wait for the final response to the same request.
    pub interim: bool,
}

/// One fetch's state, shaped like `link::Pipe` and `conn::Machine`: events
/// come in with the time (a request to build, a response head, body bytes,
/// a response's end, bytes read and written, a connection opened or
/// closed), and what the caller must do goes out as return values (request
/// bytes, objects to request next, whether a connection must close, the
/// cache entries to write and the report at the end). It owns its state
/// outright: no lock, no clock, no socket, and no cache file read (the
/// entries it may look up come in as a [`Snapshot`]). The one caller at a
/// time holds it by `&mut`.
pub struct Session {
    ctx: Ctx,
    st: State,
}

/// What a fetch is and never changes while it runs: the configuration, the
/// target, the cache snapshot. The parts of the session (`request`, `head`,
/// `body`, `end`, ...) are methods of this, given the [`State`] to change.
pub struct Ctx {
    pub cfg: FetchConfig,
    pub target: Target,
    pub page_url: String,
    pub addr: SocketAddr,
    pub start: Instant,
    started_wall: SystemTime,
    /// The cache's entries when the fetch started, read by the caller: what
    /// every lookup of the session sees; `None` without a cache.
    snapshot: Option<Snapshot>,
    /// The cache, only to spool inflated bodies into it as they arrive
    /// (`head::spool_for`).
    spools: Option<Cache>,
    /// `getall`: the URLs the page referenced on an earlier visit (from the
    /// cache); None on a first visit.
    getall_known: Option<HashSet<String>>,
}

impl std::ops::Deref for Session {
    type Target = Ctx;
    fn deref(&self) -> &Ctx {
        &self.ctx
    }
}

impl Session {
    /// A fetch of `target` from `addr` that started at `start` (and at
    /// that wall-clock time, for the report), with a snapshot of the cache's
    /// entries if it uses a cache (and the cache, for spooled bodies).
    pub fn new(
        cfg: FetchConfig,
        target: Target,
        addr: SocketAddr,
        (snapshot, spools): (Option<Snapshot>, Option<Cache>),
        start: (Instant, SystemTime),
    ) -> Session {
        let page_url = target.url_of(&target.path);
        let getall_known = match (&snapshot, cfg.strategy) {
            (Some(snapshot), Strategy::Getall) => {
                match snapshot.get(&crate::getall::refs_key(&page_url)) {
                    Ok(Some(e)) => Some(
                        String::from_utf8_lossy(&e.body)
                            .lines()
                            .map(str::to_string)
                            .collect(),
                    ),
                    _ => None,
                }
            }
            _ => None,
        };
        let mut st = State {
            discoverer: cfg
                .discover
                .then(|| Discoverer::with_options(&page_url, discovery_options(&cfg))),
            ..State::default()
        };
        if let Some(n) = snapshot
            .as_ref()
            .map(Snapshot::stale_removed)
            .filter(|&n| n > 0)
        {
            st.warnings.push(format!(
                "cache: removed {n} temporary files left by interrupted writes"
            ));
        }
        let ctx = Ctx {
            cfg,
            target,
            page_url,
            addr,
            start: start.0,
            started_wall: start.1,
            snapshot,
            spools,
            getall_known,
        };
        let path = ctx.target.path.clone();
        ctx.add_object(&mut st, path, ObjectKind::Page);
        if ctx.getall_known.is_some() {
            // Paper 003 §5.2: "On subsequent accesses to the same HTML file,
            // the client can request the HTML and all images in one
            // message": the page goes in a GETLIST with the images, carrying
            // the cached page's validator (docs/getall.md, "Later visits").
            let cached = ctx.lookup(&ctx.page_url).ok().flatten();
            let page = &mut st.objs[PAGE];
            page.method = RequestMethod::Getlist;
            page.conditional = cached.is_some();
            page.cached = cached;
        }
        Session { ctx, st }
    }

    /// The request for `id` on connection `conn`, built at `now`.
    pub fn request(&mut self, id: ObjId, conn: usize, now: Instant) -> Result<Vec<u8>, FetchError> {
        self.ctx.request(&mut self.st, id, conn, now)
    }

    /// A response head arrived for `id` on `conn`: what it means for the
    /// connection, and objects to request now.
    pub fn on_head(
        &mut self,
        id: ObjId,
        conn: usize,
        head: &ResponseHead,
        now: Instant,
    ) -> Result<(HeadInfo, Vec<ObjId>), FetchError> {
        self.ctx.on_head(&mut self.st, id, conn, head, now)
    }

    /// Body bytes (framing removed) for `id`; returns newly found objects.
    pub fn on_body(
        &mut self,
        id: ObjId,
        data: &[u8],
        now: Instant,
    ) -> Result<Vec<ObjId>, FetchError> {
        self.ctx.on_body(&mut self.st, id, data, now)
    }

    /// The response for `id` is complete: ids to request next.
    pub fn on_end(&mut self, id: ObjId, now: Instant) -> Result<Vec<ObjId>, FetchError> {
        self.ctx.on_end(&mut self.st, id, now)
    }

    /// The report, and the cache entries the caller is to write.
    pub fn finish(&mut self) -> (FetchReport, Vec<CacheWrite>) {
        self.ctx.finish(&mut self.st)
    }

    /// Objects to prefetch now (hinted, not fetched, not cached).
    pub fn take_prefetch_work(&mut self) -> Vec<ObjId> {
        self.ctx.take_prefetch_work(&mut self.st)
    }

    /// A connection opened at `now`: its number.
    pub fn conn_opened(&mut self, now: Instant) -> usize {
        self.ctx.conn_opened(&mut self.st, now)
    }

    pub fn conn_closed(&mut self, conn: usize, end: ConnEnd, now: Instant) {
        self.ctx.conn_closed(&mut self.st, conn, end, now)
    }

    pub fn conn_handshake(&mut self, conn: usize, connect: Duration, ssl: Option<Duration>) {
        self.ctx.conn_handshake(&mut self.st, conn, connect, ssl)
    }

    pub fn conn_unanswered(&mut self, conn: usize, n: usize) {
        self.ctx.conn_unanswered(&mut self.st, conn, n)
    }

    pub fn conn_pipelined(&mut self, conn: usize) {
        self.ctx.conn_pipelined(&mut self.st, conn)
    }

    /// `bytes` of requests left connection `conn`'s output buffer at `now`.
    pub fn flushed(&mut self, conn: usize, reason: FlushReason, bytes: usize, now: Instant) {
        self.ctx.flushed(&mut self.st, conn, reason, bytes, now)
    }

    pub fn wrote(&mut self, conn: usize, n: usize) {
        self.ctx.wrote(&mut self.st, conn, n)
    }

    pub fn read(&mut self, conn: usize, n: usize, now: Instant) {
        self.ctx.read(&mut self.st, conn, n, now)
    }

    /// The imitated host was busy until `t`.
    pub fn busy_until(&mut self, t: Instant) {
        self.ctx.busy_until(&mut self.st, t)
    }

    /// Objects with a result so far.
    pub fn records_done(&self) -> usize {
        self.ctx.records_done(&self.st)
    }

    /// Objects the response to `id`, still being read, has already
    /// completed: the files of an object package, each recorded the moment
    /// its last byte is in (a GETALL's parts are recorded at its end).
    pub fn parts_streamed(&self, id: ObjId) -> usize {
        self.st.objs[id]
            .resp
            .as_ref()
            .and_then(|r| r.package.as_ref())
            .map_or(0, |p| p.files_done)
    }

    /// The objects requested and not complete, for an error.
    pub fn waiting_for(&self) -> String {
        self.ctx.waiting_for(&self.st)
    }

    pub fn url_of(&self, id: ObjId) -> String {
        self.ctx.url_of(&self.st, id)
    }

    pub fn method_of(&self, id: ObjId) -> Method {
        self.ctx.method_of(&self.st, id)
    }

    /// The writes asked for since the last call, in order, for the caller
    /// to do now (`store::Store::apply_all`).
    pub fn take_writes(&mut self) -> Vec<Write> {
        std::mem::take(&mut self.st.writes)
    }

    /// Forget `id`'s partial response (the connection broke).
    pub fn forget_partial(&mut self, id: ObjId) {
        self.ctx.forget_partial(&mut self.st, id)
    }
}

impl Ctx {
    /// Time since the fetch started. The session reads no clock: callers
    /// pass the current time, as to the output buffer and the link model.
    fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    /// The objects requested and not complete, for an error: the first
    /// URL and how many more.
    pub(super) fn waiting_for(&self, st: &State) -> String {
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

    pub(super) fn url_of(&self, st: &State, id: ObjId) -> String {
        st.objs[id].url.clone()
    }

    pub(super) fn method_of(&self, st: &State, id: ObjId) -> Method {
        st.objs[id].method.h1()
    }

    /// `url`'s cache entry as the fetch started (none without a cache).
    fn lookup(&self, url: &str) -> Result<Option<Entry>, CacheWarning> {
        match &self.snapshot {
            Some(s) => s.get(url),
            None => Ok(None),
        }
    }

    /// Whether the fetch keeps a cache.
    fn caching(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Whether bodies are kept (for the cache or the report).
    fn keep_bodies(&self) -> bool {
        self.cfg.keep_bodies || self.caching()
    }

    /// The connection broke while `id`'s response was partly received (a
    /// reset can discard data already acknowledged, paper 001 "Connection
    /// Management"): forget the partial response so a retry starts clean.
    pub(super) fn forget_partial(&self, st: &mut State, id: ObjId) {
        if st.objs[id].resp.take().is_some() && id == PAGE && self.cfg.discover {
            // The page will be parsed again from its start; references
            // already admitted are not requested twice (by_path).
            st.discoverer = Some(Discoverer::with_options(
                &self.page_url,
                discovery_options(&self.cfg),
            ));
        }
    }
}

/// The discovery options of a fetch.
fn discovery_options(cfg: &FetchConfig) -> Options {
    Options {
        viewport: cfg.viewport,
    }
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
