//! Replay of a recorded site (`pagewire serve --replay FILE`): what the
//! bytes of a response are when the answer comes from an archive
//! (`pagewire-replay`) instead of a directory. When bytes move, pipelining,
//! flushes and closes stay the connection loop's (`dispatch`), exactly as
//! for a static site.
//!
//! A request is matched by method, `Host` (any number of origins; each a
//! name the client resolves to this server, as Mahimahi's replay shell
//! does) and target, query included. HEAD falls back to the GET record.
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
//! A request with no recorded answer gets 404 and a line on stderr naming
//! it (the first `MAX_MISS_LINES`; then a count every 1000).

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
    /// Whether conditional requests are evaluated (a recorded 200 with a
    /// validator).
    conditional: bool,
}

/// A recorded site ready to be served.
pub struct ReplaySite {
    entries: Vec<Entry>,
    by_key: HashMap<Key, usize>,
    misses: AtomicU64,
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
            misses: AtomicU64::new(0),
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
            };
            match site.by_key.get(&k) {
                Some(&i) => site.entries[i] = entry,
                None => {
                    site.by_key.insert(k, site.entries.len());
                    site.entries.push(entry);
                }
            }
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

    /// Number of distinct recorded requests.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry answering `req`: by method, authority (absolute-form
    /// target, else `Host`) and target; HEAD falls back to GET.
    fn lookup(&self, req: &RequestHead) -> Option<&Entry> {
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
        let find = |m: &str| {
            self.by_key
                .get(&key(m, "http", &authority, target))
                .map(|&i| &self.entries[i])
        };
        let method = String::from_utf8_lossy(req.method_bytes()).into_owned();
        find(&method).or_else(|| {
            (req.method() == Method::Head)
                .then(|| find("GET"))
                .flatten()
        })
    }

    /// Answers one request. The response is appended to `out`.
    pub fn answer(&self, req: &RequestHead, ctx: Ctx<'_>, out: &mut WriteBuf) -> Answered {
        let head_only = req.method() == Method::Head;
        let Some(entry) = self.lookup(req) else {
            let n = self.misses.fetch_add(1, Ordering::Relaxed) + 1;
            if n <= MAX_MISS_LINES || n % 1000 == 0 {
                eprintln!(
                    "replay: no recorded response for {} {} (Host: {}){}",
                    String::from_utf8_lossy(req.method_bytes()),
                    req.target(),
                    String::from_utf8_lossy(req.header("host").unwrap_or(b"-")),
                    if n == MAX_MISS_LINES {
                        "; further misses are counted every 1000"
                    } else {
                        ""
                    }
                );
            }
            return simple(
                out,
                404,
                ctx.conn,
                &[],
                "no recorded response for this request\n",
                head_only,
            );
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
