//! Replay of a recorded site (`pagewire serve --replay FILE`): what the
//! bytes of a response are when the answer comes from an archive
//! (`pagewire-replay`) instead of a directory. When bytes move, pipelining,
//! flushes and closes stay the connection loop's (`dispatch`), exactly as
//! for a static site.
//!
//! A request is matched by method, `Host` (any number of origins; each a
//! name the client resolves to this server, as Mahimahi's replay shell
//! does) and target, query included (then fuzzily, below). HEAD falls back to the GET record.
//! The response is the recorded status, the recorded fields in recorded
//! order and the recorded body, except what belongs to this connection:
//! `Connection`, `Keep-Alive`, `Transfer-Encoding`, `Proxy-Connection`,
//! `TE`, `Trailer`, `Upgrade` and any field `Connection` named are dropped;
//! `Content-Length` is the body's length; `Date` is now. A recorded
//! `Content-Encoding` is served as recorded (the body is the coded one).
//!
//! Conditional requests are answered from the recorded `ETag` and
//! `Last-Modified` (RFC 9110 §13.2.2, the static handler's rules): 304 with
//! the recorded validators and caching fields.
//!
//! With `deflate` on (`serve --replay-deflate`; `bench --replay` turns it
//! on), like a server with on-the-fly compression (Apache's mod_deflate,
//! nginx's `gzip on`), an identity-coded
//! 200 response of a compressible type (text, CSS, JavaScript, JSON, XML,
//! SVG) of at least 256 bytes also has a deflate (zlib) variant, computed
//! at load, served to requests whose `Accept-Encoding` accepts deflate,
//! with its own entity tag derived from the recorded one (`"tag-deflate"`). This is what lets
//! paper 001's "pipelining with compression" run against a recorded page.
//! Requests that do not ask for deflate get the recorded bytes; without
//! the option every response is the recorded bytes.
//!
//! A request without an exact match is matched fuzzily, as WprGo does: the
//! recorded request with the same method, authority and path whose query
//! shares the most parameters with the request's. A request with no
//! recorded answer at all gets 404 with a body naming the request and why
//! (no such origin, or no such path), a line on stderr (the first
//! `MAX_MISS_LINES`; then a count every 1000), and is counted
//! (`ReplaySite::misses`).
//!
//! With server times on (`serve --replay-server-time`; `pagewire replay`
//! turns it on), a response whose exchange carries a recorded
//! [`pagewire_replay::Timing`] is sent that long after its request was
//! read: the recorded server think time (at most [`MAX_THINK`]). The
//! connection loop does the waiting (`Handler::think_time`): it first sends
//! what is queued, then waits without holding its worker, then answers.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use pagewire_h1::{
    write_header, write_header_u64, write_status_line_with_reason, Method, RequestHead, Version,
};
use pagewire_replay::{key, normalize_authority, Archive, Key};

use crate::io::WriteBuf;
use crate::respond::{finish_head, preconditions, simple, Answered, Ctx, Precondition};

/// Lines on stderr for requests without a recorded answer, at most.
pub const MAX_MISS_LINES: u64 = 100;

/// Characters of a missed request's target repeated in its 404 body.
const MAX_TARGET_IN_MISS: usize = 200;

/// The field a replay miss's 404 carries (`X-Pagewire-Replay: miss`), so a
/// client (a browser's HAR) can count misses apart from recorded 404s.
pub const MISS_FIELD: &str = "X-Pagewire-Replay";

/// How a request found its recorded answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    Exact,
    /// Same method, authority and path; the closest query.
    Fuzzy,
}

/// Method, authority and path (the query left out).
type PathKey = (String, String, String);
/// A query's parameters as sent.
type QueryPairs = Vec<(String, String)>;

/// `path?query` -> (`path`, `query`) (an empty query when none).
fn split_query(target: &str) -> (&str, &str) {
    target.split_once('?').unwrap_or((target, ""))
}

/// A query's `name=value` parameters as sent (not decoded; a name without
/// `=` has an empty value).
fn query_pairs(query: &str) -> QueryPairs {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            (n.to_string(), v.to_string())
        })
        .collect()
}

/// Longest recorded server think time replayed (longer ones are cut to it).
pub const MAX_THINK: Duration = Duration::from_secs(60);

/// Smallest body given a deflate variant (the static store's threshold).
pub const MIN_DEFLATE_BYTES: usize = 256;

/// Fields of the recorded connection, never replayed.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "date",
];

/// Fields a 304 repeats from the 200 (RFC 9110 §15.4.5).
const NOT_MODIFIED_FIELDS: [&str; 6] = [
    "etag",
    "vary",
    "cache-control",
    "expires",
    "content-location",
    "last-modified",
];

struct Variant {
    /// Status line + fields + Content-Length (no Date, no blank line).
    ok: Box<[u8]>,
    not_modified: Box<[u8]>,
    body: Bytes,
    etag: String,
}

struct Entry {
    status: u16,
    identity: Variant,
    deflate: Option<Variant>,
    last_modified: SystemTime,
    /// The recorded server think time (zero when none was recorded).
    think: Duration,
    /// Whether conditional requests are evaluated (a recorded 200 with a
    /// validator).
    conditional: bool,
}

/// A recorded site ready to be served.
pub struct ReplaySite {
    entries: Vec<Entry>,
    by_key: HashMap<Key, usize>,
    /// Method, authority and path (no query) -> each recorded query's
    /// parameters and entry, for fuzzy matching.
    by_path: HashMap<PathKey, Vec<(QueryPairs, usize)>>,
    /// Requests answered by a fuzzy query match.
    fuzzy: AtomicU64,
    misses: AtomicU64,
    /// Whether recorded server think times are waited (`with_server_times`).
    server_times: bool,
    /// Fields the h1 writer refused (CR, LF, NUL ...), dropped at load.
    pub refused_fields: usize,
    /// Records with the same key as an earlier one (the first is served,
    /// or the first that is not a 304).
    pub duplicates: usize,
}

impl std::fmt::Debug for ReplaySite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySite")
            .field("entries", &self.entries.len())
            .finish()
    }
}

fn compressible(content_type: Option<&[u8]>) -> bool {
    let Some(ct) = content_type else { return false };
    let ct = String::from_utf8_lossy(ct).to_ascii_lowercase();
    let ct = ct.split(';').next().unwrap_or("").trim().to_string();
    ct.starts_with("text/")
        || ct.ends_with("+xml")
        || ct.ends_with("+json")
        || matches!(
            ct.as_str(),
            "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/json"
                | "application/xml"
                | "image/svg+xml"
        )
}

fn zlib(body: &[u8]) -> Bytes {
    // zlib format, level 6: what "deflate" means in HTTP (RFC 9110
    // §8.4.1.2) and what paper 001 used.
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    enc.write_all(body).expect("writing to a Vec");
    Bytes::from(enc.finish().expect("writing to a Vec"))
}

/// Whether `Accept-Encoding` accepts deflate (a `deflate` or `*` member
/// with a non-zero q).
fn accepts_deflate(req: &RequestHead) -> bool {
    req.headers("accept-encoding").any(|v| {
        String::from_utf8_lossy(v).split(',').any(|m| {
            let mut parts = m.split(';');
            let token = parts.next().unwrap_or("").trim();
            let q_zero = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .or_else(|| p.strip_prefix("Q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    == Some(0.0)
            });
            (token.eq_ignore_ascii_case("deflate") || token == "*") && !q_zero
        })
    })
}

fn has_body(status: u16) -> bool {
    !((100..200).contains(&status) || status == 204 || status == 304)
}

impl ReplaySite {
    /// Prepares every recorded response's head once.
    pub fn new(archive: &Archive, deflate: bool) -> ReplaySite {
        let mut site = ReplaySite {
            entries: Vec::with_capacity(archive.exchanges.len()),
            by_key: HashMap::with_capacity(archive.exchanges.len()),
            by_path: HashMap::new(),
            fuzzy: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            server_times: false,
            refused_fields: 0,
            duplicates: 0,
        };
        let far_future = SystemTime::now() + Duration::from_secs(100 * 365 * 86400);
        for e in &archive.exchanges {
            let Some(k) = e.key() else { continue };
            if let Some(&i) = site.by_key.get(&k) {
                site.duplicates += 1;
                // A revalidation recorded after the first fetch does not
                // replace the full response.
                if site.entries[i].status != 304 || e.status == 304 {
                    continue;
                }
            }
            // Fields named by the recorded Connection are hop-by-hop too.
            let named: Vec<String> = e
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
                .flat_map(|(_, v)| {
                    String::from_utf8_lossy(v)
                        .split(',')
                        .map(|t| t.trim().to_ascii_lowercase())
                        .collect::<Vec<_>>()
                })
                .collect();
            let kept: Vec<&(String, Vec<u8>)> = e
                .headers
                .iter()
                .filter(|(n, _)| {
                    let l = n.to_ascii_lowercase();
                    !HOP_BY_HOP.contains(&l.as_str()) && !named.contains(&l)
                })
                .collect();
            let etag = e
                .header("etag")
                .map(|v| String::from_utf8_lossy(v).trim().to_string());
            let last_modified = e
                .header("last-modified")
                .and_then(|v| httpdate::parse_http_date(String::from_utf8_lossy(v).trim()).ok());
            let identity = site.variant(
                e.status,
                &e.reason,
                &kept,
                &[],
                e.body.clone(),
                etag.clone(),
            );
            let deflate = (deflate
                && e.status == 200
                && e.header("content-encoding").is_none()
                && e.body.len() >= MIN_DEFLATE_BYTES
                && compressible(e.header("content-type")))
            .then(|| {
                let body = zlib(&e.body);
                // Its own entity tag, like the static store's per-coding
                // tags (RFC 9110 §8.8.3.3).
                let tag = etag.as_ref().map(|t| {
                    let opaque = t.trim_start_matches("W/").trim_matches('"');
                    format!("\"{opaque}-deflate\"")
                });
                let without_etag: Vec<&(String, Vec<u8>)> = kept
                    .iter()
                    .copied()
                    .filter(|(n, _)| !n.eq_ignore_ascii_case("etag"))
                    .collect();
                let mut extra: Vec<(&str, Vec<u8>)> =
                    vec![("Content-Encoding", b"deflate".to_vec())];
                if let Some(t) = &tag {
                    extra.push(("ETag", t.clone().into_bytes()));
                }
                site.variant(e.status, &e.reason, &without_etag, &extra, body, tag)
            })
            .filter(|v| v.body.len() < e.body.len());
            let entry = Entry {
                status: e.status,
                conditional: e.status == 200 && (etag.is_some() || last_modified.is_some()),
                identity,
                deflate,
                last_modified: last_modified.unwrap_or(far_future),
                think: e
                    .timing
                    .map(|t| Duration::from_secs_f64(t.server_ms / 1000.0).min(MAX_THINK))
                    .unwrap_or_default(),
            };
            match site.by_key.get(&k) {
                Some(&i) => site.entries[i] = entry,
                None => {
                    site.by_key.insert(k, site.entries.len());
                    site.entries.push(entry);
                }
            }
        }
        for (k, &i) in &site.by_key {
            let (path, query) = split_query(&k.target);
            site.by_path
                .entry((k.method.clone(), k.authority.clone(), path.to_string()))
                .or_default()
                .push((query_pairs(query), i));
        }
        for v in site.by_path.values_mut() {
            v.sort_by_key(|(_, i)| *i);
        }
        site
    }

    fn variant(
        &mut self,
        status: u16,
        reason: &str,
        fields: &[&(String, Vec<u8>)],
        extra: &[(&str, Vec<u8>)],
        body: Bytes,
        etag: Option<String>,
    ) -> Variant {
        let reason = if reason.is_empty() || reason.bytes().any(|b| b < 0x20 && b != b'\t') {
            pagewire_h1::reason_phrase(status)
        } else {
            reason
        };
        let line = |out: &mut Vec<u8>, s: u16| {
            if write_status_line_with_reason(out, Version::Http11, s, reason).is_err() {
                out.clear();
                let _ = write_status_line_with_reason(
                    out,
                    Version::Http11,
                    s,
                    pagewire_h1::reason_phrase(s),
                );
            }
        };
        let mut ok = Vec::with_capacity(512);
        line(&mut ok, status);
        let mut nm = Vec::with_capacity(256);
        let _ = write_status_line_with_reason(&mut nm, Version::Http11, 304, "Not Modified");
        let vary_recorded = fields.iter().any(|(n, _)| n.eq_ignore_ascii_case("vary"));
        for (n, v) in fields
            .iter()
            .map(|f| (f.0.as_str(), f.1.as_slice()))
            .chain(extra.iter().map(|(n, v)| (*n, v.as_slice())))
        {
            if write_header(&mut ok, n, v).is_err() {
                self.refused_fields += 1;
                continue;
            }
            if NOT_MODIFIED_FIELDS.contains(&n.to_ascii_lowercase().as_str()) {
                let _ = write_header(&mut nm, n, v);
            }
        }
        // A body that also exists deflated varies on Accept-Encoding.
        if !vary_recorded && extra.iter().any(|(n, _)| *n == "Content-Encoding") {
            let _ = write_header(&mut ok, "Vary", b"Accept-Encoding");
            let _ = write_header(&mut nm, "Vary", b"Accept-Encoding");
        }
        if has_body(status) {
            let _ = write_header_u64(&mut ok, "Content-Length", body.len() as u64);
        }
        Variant {
            ok: ok.into(),
            not_modified: nm.into(),
            body,
            // Compared without its weakness marker: If-None-Match compares
            // weakly (a recorded W/ tag still validates).
            etag: etag
                .map(|t| t.trim_start_matches("W/").to_string())
                .unwrap_or_default(),
        }
    }

    /// Replays recorded server think times: each response waits its
    /// recorded time before its first byte.
    pub fn with_server_times(mut self) -> ReplaySite {
        self.server_times = true;
        self
    }

    /// Distinct recorded requests that carry a server think time.
    pub fn timed(&self) -> usize {
        self.entries.iter().filter(|e| !e.think.is_zero()).count()
    }

    /// Requests answered by a fuzzy query match (no exact one recorded).
    pub fn fuzzy_matches(&self) -> u64 {
        self.fuzzy.load(Ordering::Relaxed)
    }

    /// Requests answered 404 because nothing recorded matched them.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// How long the answer to `req` waits before its first byte: its
    /// recorded server think time when server times are on, else zero (and
    /// zero for a request with no recorded answer).
    pub fn think_time(&self, req: &RequestHead) -> Duration {
        if !self.server_times {
            return Duration::ZERO;
        }
        self.lookup(req).map_or(Duration::ZERO, |(e, _)| e.think)
    }

    /// Number of distinct recorded requests.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry answering `req`: by method, authority (absolute-form
    /// target, else `Host`) and target; HEAD falls back to GET. Without an
    /// exact match, in the manner of WprGo's fuzzy matching: the recorded
    /// request with the same method, authority and path whose query has
    /// the most parameters (name and value) in common with the request's,
    /// the fewest others on either side breaking ties, then the earliest
    /// recorded. `Err` says why nothing matched.
    fn lookup(&self, req: &RequestHead) -> Result<(&Entry, Match), String> {
        let target = req.target();
        let (authority, target) = match pagewire_replay::split_url(target) {
            Some((_, a, t)) => (normalize_authority("http", a), t),
            None => (
                normalize_authority(
                    "http",
                    &String::from_utf8_lossy(req.header("host").unwrap_or(b"")),
                ),
                target,
            ),
        };
        let method = String::from_utf8_lossy(req.method_bytes()).into_owned();
        let mut methods = vec![method.to_ascii_uppercase()];
        if req.method() == Method::Head {
            methods.push("GET".into());
        }
        for m in &methods {
            if let Some(&i) = self.by_key.get(&key(m, "http", &authority, target)) {
                return Ok((&self.entries[i], Match::Exact));
            }
        }
        let (path, query) = split_query(if target.is_empty() { "/" } else { target });
        let asked = query_pairs(query);
        for m in &methods {
            let Some(cands) = self
                .by_path
                .get(&(m.clone(), authority.clone(), path.to_string()))
            else {
                continue;
            };
            // (common, -others): higher is better; the first (earliest) wins ties.
            let best = cands
                .iter()
                .map(|(q, i)| {
                    let common = q.iter().filter(|p| asked.contains(p)).count();
                    let others = q.len() + asked.len() - 2 * common;
                    ((common, std::cmp::Reverse(others)), *i)
                })
                .fold(
                    None::<((usize, std::cmp::Reverse<usize>), usize)>,
                    |best, c| match best {
                        Some(b) if b.0 >= c.0 => Some(b),
                        _ => Some(c),
                    },
                );
            if let Some((_, i)) = best {
                return Ok((&self.entries[i], Match::Fuzzy));
            }
        }
        let origin_known = self.by_key.keys().any(|k| k.authority == authority);
        Err(if authority.is_empty() {
            "the request names no host".to_string()
        } else if !origin_known {
            format!("the archive has no origin {authority}")
        } else {
            format!("the archive has no {method} of {path} on {authority}, with any query")
        })
    }

    /// Answers one request. The response is appended to `out`.
    pub fn answer(&self, req: &RequestHead, ctx: Ctx<'_>, out: &mut WriteBuf) -> Answered {
        let head_only = req.method() == Method::Head;
        let entry = match self.lookup(req) {
            Ok((entry, how)) => {
                if how == Match::Fuzzy {
                    self.fuzzy.fetch_add(1, Ordering::Relaxed);
                }
                entry
            }
            Err(why) => {
                let n = self.misses.fetch_add(1, Ordering::Relaxed) + 1;
                let mut target: String = req.target().chars().take(MAX_TARGET_IN_MISS).collect();
                if target.len() < req.target().len() {
                    target.push_str("...");
                }
                let what = format!(
                    "no recorded response for {} {target} (Host: {}): {why}",
                    String::from_utf8_lossy(req.method_bytes()),
                    String::from_utf8_lossy(req.header("host").unwrap_or(b"-")),
                );
                if n <= MAX_MISS_LINES || n % 1000 == 0 {
                    eprintln!(
                        "replay: {what}{}",
                        if n == MAX_MISS_LINES {
                            "; further misses are counted every 1000"
                        } else {
                            ""
                        }
                    );
                }
                // The client learns why too (a 404 body naming the reason).
                return simple(
                    out,
                    404,
                    ctx.conn,
                    &[(MISS_FIELD, "miss")],
                    &format!("{what}\n"),
                    head_only,
                );
            }
        };
        let variant = match &entry.deflate {
            Some(d) if accepts_deflate(req) => d,
            _ => &entry.identity,
        };
        if entry.conditional {
            match preconditions(req, &variant.etag, entry.last_modified) {
                Precondition::Proceed => {}
                Precondition::NotModified => {
                    out.put(&variant.not_modified);
                    finish_head(out, ctx.conn, ctx.extra);
                    return Answered {
                        status: 304,
                        body_bytes: 0,
                        resource: None,
                    };
                }
                Precondition::Failed => {
                    return simple(out, 412, ctx.conn, &[], "precondition failed\n", head_only)
                }
            }
        }
        out.put(&variant.ok);
        finish_head(out, ctx.conn, ctx.extra);
        let mut body_bytes = 0;
        if !head_only && has_body(entry.status) && !variant.body.is_empty() {
            out.put_body(&variant.body);
            body_bytes = variant.body.len() as u64;
        }
        Answered {
            status: entry.status,
            body_bytes,
            resource: None,
        }
    }
}
