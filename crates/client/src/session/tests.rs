//! Scripted tests of the session alone, in the style of the server's
//! `io.rs` tests: no socket and no clock. Each test plays a connection's
//! part (requests asked for, response heads and bodies handed in, times
//! passed in, flushes reported) and asserts what the session answers: the
//! request bytes, the objects to request next, the records, and the cache
//! writes it hands back at the end. One or more per strategy behaviour,
//! first visit and revalidation.

use super::*;
use crate::cache::Cache;
use crate::config::Strategy;
use bytes::BytesMut;
use std::io::Write;

pub(crate) const HOST: &str = "example.test";
pub(crate) const UA: &str = concat!("pagewire/", env!("CARGO_PKG_VERSION"));
const MS: Duration = Duration::from_millis(1);

pub(crate) fn page_html() -> &'static [u8] {
    b"<html><body><img src=\"a.gif\"><img src=\"/b.gif\"></body></html>"
}

pub(crate) fn session(
    strategy: Strategy,
    setup: impl FnOnce(&mut FetchConfig),
    cache: Option<&Cache>,
) -> (Session, Instant) {
    let mut cfg = FetchConfig::new(format!("http://{HOST}/index.html"), strategy);
    setup(&mut cfg);
    // Not `validate`: the checks of what the caller must supply (a cache
    // directory, a CA) are not the session's.
    let target = Target::parse(&cfg.url).expect("valid URL");
    let t0 = Instant::now();
    let snapshot = cache.map(Cache::snapshot);
    let s = Session::new(
        cfg,
        target,
        "127.0.0.1:9".parse().unwrap(),
        (snapshot, cache.cloned()),
        (t0, std::time::SystemTime::now()),
    );
    (s, t0)
}

fn head(text: &str, method: &Method) -> ResponseHead {
    let mut buf = BytesMut::from(text.as_bytes());
    pagewire_h1::parse_response(&mut buf, &pagewire_h1::Limits::default(), method)
        .expect("valid head")
        .expect("complete head")
}

pub(crate) fn text(req: &[u8]) -> String {
    String::from_utf8(req.to_vec()).unwrap()
}

/// One whole response to `id`: head, body in one piece, end. Returns the
/// objects to request next (from the head, the body and the end).
fn respond(s: &mut Session, id: ObjId, at: Instant, head_text: &str, body: &[u8]) -> Vec<ObjId> {
    let h = head(head_text, &s.method_of(id));
    let (info, mut next) = s.on_head(id, 0, &h, at).expect("head");
    assert!(!info.interim);
    if !body.is_empty() {
        next.extend(s.on_body(id, body, at + MS).expect("body"));
    }
    next.extend(s.on_end(id, at + 2 * MS).expect("end"));
    next
}

pub(crate) fn ok_head(len: usize, extra: &str) -> String {
    format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n{extra}\r\n")
}

pub(crate) fn gif(n: u8) -> Vec<u8> {
    let mut g = b"GIF89a".to_vec();
    g.extend([n; 24]);
    g
}

/// http10: a GET of the page, the references it names as they arrive, one
/// GET each; the report's records; no cache, so no cache writes.
#[test]
fn http10_first_visit() {
    let (mut s, t0) = session(Strategy::Http10, |_| {}, None);
    let conn = s.conn_opened(t0);
    let req = s.request(PAGE, conn, t0).unwrap();
    assert_eq!(
        text(&req),
        format!("GET /index.html HTTP/1.0\r\nHost: {HOST}\r\nUser-Agent: {UA}\r\n\r\n")
    );
    let html = page_html();
    let next = respond(&mut s, PAGE, t0 + 10 * MS, &ok_head(html.len(), ""), html);
    assert_eq!(next.len(), 2);
    assert_eq!(
        text(&s.request(next[0], conn, t0).unwrap()),
        format!("GET /a.gif HTTP/1.0\r\nHost: {HOST}\r\nUser-Agent: {UA}\r\n\r\n")
    );
    assert!(text(&s.request(next[1], conn, t0).unwrap()).starts_with("GET /b.gif HTTP/1.0\r\n"));
    for (i, &id) in next.iter().enumerate() {
        let g = gif(i as u8);
        assert!(respond(
            &mut s,
            id,
            t0 + 20 * MS,
            &ok_head(g.len(), "Content-Type: image/gif\r\n"),
            &g
        )
        .is_empty());
    }
    let (report, writes) = s.finish();
    assert!(writes.is_empty());
    assert_eq!(report.objects.len(), 3);
    assert_eq!(report.requests, 3);
    assert!(report
        .objects
        .iter()
        .all(|o| o.status == 200 && o.outcome == Outcome::Fetched));
    assert_eq!(report.objects[1].size, 30);
    assert_eq!(report.objects[1].sha256, sha256_hex(&gif(0)));
    // Times are the ones passed in.
    assert_eq!(report.objects[0].first_byte_ms, 10.0);
    assert_eq!(report.objects[0].done_ms, 12.0);
}

/// Flush timing: a request's `sent_ms` is the flush that carried it, not
/// when it was built; every flush is in the report with its reason.
#[test]
fn pipeline_flush_times_are_the_flushes() {
    let (mut s, t0) = session(Strategy::Pipeline, |_| {}, None);
    let conn = s.conn_opened(t0);
    let req = s.request(PAGE, conn, t0).unwrap();
    s.flushed(conn, FlushReason::Explicit, req.len(), t0);
    let html = page_html();
    let next = respond(&mut s, PAGE, t0 + 10 * MS, &ok_head(html.len(), ""), html);
    let a = s.request(next[0], conn, t0 + 10 * MS).unwrap();
    let b = s.request(next[1], conn, t0 + 11 * MS).unwrap();
    // The flush timer fires 50 ms later and carries both.
    s.flushed(conn, FlushReason::Timer, a.len() + b.len(), t0 + 61 * MS);
    for &id in &next {
        let g = gif(1);
        respond(&mut s, id, t0 + 70 * MS, &ok_head(g.len(), ""), &g);
    }
    let (report, _) = s.finish();
    let sent: Vec<Option<f64>> = report.objects.iter().map(|o| o.sent_ms).collect();
    assert_eq!(sent, [Some(0.0), Some(61.0), Some(61.0)]);
    let requested: Vec<f64> = report.objects.iter().map(|o| o.requested_ms).collect();
    assert_eq!(requested, [0.0, 10.0, 11.0]);
    let reasons: Vec<FlushReason> = report.flushes.iter().map(|f| f.reason).collect();
    assert_eq!(reasons, [FlushReason::Explicit, FlushReason::Timer]);
    assert_eq!(report.flush_counts.get("timer"), Some(&1));
}

pub(crate) fn deflate(data: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// pipeline-deflate: the page is asked for deflated and inflated before
/// discovery; images are not asked compressed.
#[test]
fn pipeline_deflate_inflates_the_page() {
    let (mut s, t0) = session(Strategy::PipelineDeflate, |_| {}, None);
    let conn = s.conn_opened(t0);
    let req = text(&s.request(PAGE, conn, t0).unwrap());
    assert!(req.ends_with("Accept-Encoding: deflate\r\n\r\n"), "{req}");
    let z = deflate(page_html());
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(z.len(), "Content-Encoding: deflate\r\n"),
        &z,
    );
    assert_eq!(next.len(), 2);
    let img = text(&s.request(next[0], conn, t0).unwrap());
    assert!(!img.contains("Accept-Encoding"), "{img}");
    let (report, _) = s.finish();
    let page = &report.objects[0];
    assert_eq!(page.content_encoding.as_deref(), Some("deflate"));
    assert_eq!(page.size, page_html().len() as u64);
    assert_eq!(page.body_bytes_received, z.len() as u64);
    assert_eq!(page.sha256, sha256_hex(page_html()));
}

/// A first visit with a cache, then a revalidation: conditional GETs with
/// the entity tag and the date; 304s; the cached page parsed again; the
/// cache writes of the first visit, none after an all-304 revalidation.
#[test]
fn pipeline_revalidation_is_conditional_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let lm = "Wed, 01 Jan 1997 00:00:00 GMT";
    let (mut s, t0) = session(Strategy::Pipeline, |_| {}, Some(&cache));
    let conn = s.conn_opened(t0);
    s.request(PAGE, conn, t0).unwrap();
    let html = page_html();
    let v = |tag: &str| format!("ETag: \"{tag}\"\r\nLast-Modified: {lm}\r\n");
    let next = respond(&mut s, PAGE, t0, &ok_head(html.len(), &v("p")), html);
    for &id in &next {
        s.request(id, conn, t0).unwrap();
        let g = gif(id as u8);
        respond(&mut s, id, t0, &ok_head(g.len(), &v(&format!("i{id}"))), &g);
    }
    let (_, writes) = s.finish();
    assert_eq!(writes.len(), 3);
    assert!(writes.iter().all(|w| matches!(w, CacheWrite::Put(..))));
    for w in writes {
        w.apply(&cache).unwrap();
    }

    let (mut s, t0) = session(Strategy::Pipeline, |c| c.revalidate = true, Some(&cache));
    let conn = s.conn_opened(t0);
    let req = text(&s.request(PAGE, conn, t0).unwrap());
    assert!(
        req.ends_with(&format!(
            "If-None-Match: \"p\"\r\nIf-Modified-Since: {lm}\r\n\r\n"
        )),
        "{req}"
    );
    let not_modified = |tag: &str| format!("HTTP/1.1 304 Not Modified\r\nETag: \"{tag}\"\r\n\r\n");
    // The references come from the cached page, at the 304's head.
    let next = respond(&mut s, PAGE, t0, &not_modified("p"), b"");
    assert_eq!(next.len(), 2);
    for &id in &next {
        let req = text(&s.request(id, conn, t0).unwrap());
        assert!(
            req.contains(&format!("If-None-Match: \"i{id}\"\r\n")),
            "{req}"
        );
        assert!(respond(&mut s, id, t0, &not_modified(&format!("i{id}")), b"").is_empty());
    }
    let (report, writes) = s.finish();
    assert!(
        writes.is_empty(),
        "an all-304 revalidation rewrites nothing"
    );
    assert!(report
        .objects
        .iter()
        .all(|o| o.outcome == Outcome::NotModified && o.body_bytes_received == 0));
    assert_eq!(report.objects[1].sha256, sha256_hex(&gif(1)));
}

/// An http10 first visit (page and images with entity tags) into `cache`.
fn http10_first_visit_into(cache: &Cache) {
    let (mut s, t0) = session(Strategy::Http10, |_| {}, Some(cache));
    s.conn_opened(t0);
    s.request(PAGE, 0, t0).unwrap();
    let html = page_html();
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(html.len(), "ETag: \"p\"\r\n"),
        html,
    );
    for &id in &next {
        s.request(id, 0, t0).unwrap();
        let g = gif(1);
        respond(&mut s, id, t0, &ok_head(g.len(), "ETag: \"old\"\r\n"), &g);
    }
    let (_, writes) = s.finish();
    for w in writes {
        w.apply(cache).unwrap();
    }
}

/// http10's revalidation (libwww 4.1D): the page by GET again, every image
/// by HEAD; a HEAD that shows a change is followed by a GET of the object,
/// which is not a retry.
#[test]
fn http10_get_head_revalidation_refetches_a_changed_image() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    http10_first_visit_into(&cache);
    let html = page_html();
    let (mut s, t0) = session(Strategy::Http10, |c| c.revalidate = true, Some(&cache));
    s.conn_opened(t0);
    let req = text(&s.request(PAGE, 0, t0).unwrap());
    assert!(
        req.starts_with("GET /index.html HTTP/1.0\r\n") && !req.contains("If-"),
        "{req}"
    );
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(html.len(), "ETag: \"p\"\r\n"),
        html,
    );
    let (a, b) = (next[0], next[1]);
    assert!(text(&s.request(a, 0, t0).unwrap()).starts_with("HEAD /a.gif HTTP/1.0\r\n"));
    assert!(respond(
        &mut s,
        a,
        t0,
        "HTTP/1.0 200 OK\r\nContent-Length: 30\r\nETag: \"old\"\r\n\r\n",
        b""
    )
    .is_empty());
    s.request(b, 0, t0).unwrap();
    let again = respond(
        &mut s,
        b,
        t0,
        "HTTP/1.0 200 OK\r\nContent-Length: 30\r\nETag: \"new\"\r\n\r\n",
        b"",
    );
    assert_eq!(again, vec![b], "a changed image is fetched again");
    let req = text(&s.request(b, 0, t0).unwrap());
    assert!(
        req.starts_with("GET /b.gif HTTP/1.0\r\n") && !req.contains("If-"),
        "{req}"
    );
    let g = gif(9);
    respond(&mut s, b, t0, &ok_head(g.len(), "ETag: \"new\"\r\n"), &g);
    let (report, writes) = s.finish();
    let outcomes: Vec<Outcome> = report.objects.iter().map(|o| o.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Fetched, Outcome::NotModified, Outcome::Changed]
    );
    assert_eq!(report.retried_requests, 0);
    assert_eq!(report.requests, 4);
    // The page came again unconditionally (libwww 4.1D had no cache):
    // written whole; the unchanged image: nothing; the new one: whole.
    let kinds: Vec<&str> = writes
        .iter()
        .map(|w| match w {
            CacheWrite::Put(m, _) => m.url.rsplit('/').next().unwrap(),
            CacheWrite::Meta(_) => "meta",
            CacheWrite::Spooled(..) => "spooled",
        })
        .collect();
    assert_eq!(kinds, ["index.html", "b.gif"]);
}

/// A GETALL answer: the page request carries the field, the multipart's
/// parts become the objects, nothing more is requested, and the cache gets
/// every part and the page's reference list.
#[test]
fn getall_parts_become_objects() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let (mut s, t0) = session(Strategy::Getall, |_| {}, Some(&cache));
    s.conn_opened(t0);
    let req = text(&s.request(PAGE, 0, t0).unwrap());
    assert!(req.ends_with("Getall: 1\r\n\r\n"), "{req}");
    let mut body = Vec::new();
    for (loc, data) in [
        ("/index.html", page_html().to_vec()),
        ("/a.gif", gif(1)),
        ("/b.gif", gif(2)),
    ] {
        body.extend(
            format!(
                "--B\r\nContent-Location: {loc}\r\nContent-Length: {}\r\n\r\n",
                data.len()
            )
            .bytes(),
        );
        body.extend(data);
        body.extend(b"\r\n");
    }
    body.extend(b"--B--\r\n");
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(body.len(), "Content-Type: multipart/mixed; boundary=B\r\n"),
        &body,
    );
    assert!(next.is_empty(), "everything came in the answer: {next:?}");
    let (report, writes) = s.finish();
    let outcomes: Vec<(&str, Outcome)> = report
        .objects
        .iter()
        .map(|o| (o.url.rsplit('/').next().unwrap(), o.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("index.html", Outcome::Fetched),
            ("a.gif", Outcome::GetallPart),
            ("b.gif", Outcome::GetallPart)
        ]
    );
    assert_eq!(report.objects[2].sha256, sha256_hex(&gif(2)));
    assert_eq!(report.requests, 1);
    let urls: Vec<String> = writes
        .iter()
        .map(|w| match w {
            CacheWrite::Put(m, _) => m.url.clone(),
            _ => panic!("whole entries only"),
        })
        .collect();
    assert_eq!(urls.len(), 4);
    assert!(urls[3].ends_with("#pagewire-getall-refs"), "{urls:?}");
}

/// objpack: the page request asks for the package media type.
#[test]
fn objpack_asks_for_the_package() {
    let (mut s, t0) = session(Strategy::Objpack, |_| {}, None);
    let req = text(&s.request(PAGE, 0, t0).unwrap());
    assert!(
        req.contains(&format!(
            "Accept: {}, text/html;q=0.9, */*;q=0.8\r\n",
            pagewire_objpack::MEDIA_TYPE
        )),
        "{req}"
    );
    // A server without packages answers with the page: fetched as usual.
    let html = page_html();
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(html.len(), "Content-Type: text/html\r\n"),
        html,
    );
    assert_eq!(next.len(), 2);
    assert!(!text(&s.request(next[0], 0, t0).unwrap()).contains("Accept:"));
}

/// Range mode: the first bytes of every image, the rests only once all
/// first parts are in, joined and checked into one 200 record.
#[test]
fn range_mode_asks_first_parts_then_the_rests() {
    let (mut s, t0) = session(Strategy::Pipeline, |c| c.range_first = Some(10), None);
    s.conn_opened(t0);
    s.request(PAGE, 0, t0).unwrap();
    let html = page_html();
    let next = respond(&mut s, PAGE, t0, &ok_head(html.len(), ""), html);
    let images: Vec<Vec<u8>> = next.iter().map(|&id| gif(id as u8)).collect();
    for &id in &next {
        let req = text(&s.request(id, 0, t0).unwrap());
        assert!(req.ends_with("Range: bytes=0-9\r\n\r\n"), "{req}");
    }
    let partial = |from: usize, to: usize, body: &[u8]| {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{to}/{}\r\n\r\n",
            to + 1 - from,
            body.len()
        )
    };
    let first = respond(
        &mut s,
        next[0],
        t0,
        &partial(0, 9, &images[0]),
        &images[0][..10],
    );
    assert!(first.is_empty(), "the rests wait for every first part");
    let rests = respond(
        &mut s,
        next[1],
        t0 + MS,
        &partial(0, 9, &images[1]),
        &images[1][..10],
    );
    assert_eq!(rests, next, "all first parts in: both rests go out");
    for (i, &id) in next.iter().enumerate() {
        let req = text(&s.request(id, 0, t0).unwrap());
        assert!(req.ends_with("Range: bytes=10-\r\n\r\n"), "{req}");
        respond(
            &mut s,
            id,
            t0 + 5 * MS,
            &partial(10, 29, &images[i]),
            &images[i][10..],
        );
    }
    let (report, _) = s.finish();
    // The second first part ended at 3 ms (its head at 1 ms, its end 2 ms
    // later).
    assert_eq!(report.metadata_ms, Some(3.0));
    for (i, o) in report.objects[1..].iter().enumerate() {
        assert_eq!((o.status, o.size), (200, 30));
        assert_eq!(o.sha256, sha256_hex(&images[i]));
    }
    // The rest of a range is not a retry.
    assert_eq!(report.retried_requests, 0);
}

/// Prefetch hints: a `Link: rel=prefetch` of the page's head is fetched
/// once the page's own work is done, with `Sec-Purpose: prefetch`.
#[test]
fn prefetch_hints_are_fetched_after_the_page() {
    let (mut s, t0) = session(Strategy::Http11, |c| c.prefetch = true, None);
    s.request(PAGE, 0, t0).unwrap();
    assert!(s.take_prefetch_work().is_empty());
    let body = b"<html></html>";
    let link = "Link: </next.html>; rel=prefetch\r\n";
    assert!(respond(&mut s, PAGE, t0, &ok_head(body.len(), link), body).is_empty());
    let work = s.take_prefetch_work();
    assert_eq!(work.len(), 1);
    let req = text(&s.request(work[0], 0, t0).unwrap());
    assert!(req.starts_with("GET /next.html HTTP/1.1\r\n"), "{req}");
    assert!(req.ends_with("Sec-Purpose: prefetch\r\n\r\n"), "{req}");
    assert!(s.take_prefetch_work().is_empty(), "each hint once");
}

/// Fonts by use: `@font-face` sources are held until the page and its
/// stylesheets are complete, then only the faces the text uses go out.
#[test]
fn fonts_by_use_requests_only_used_faces() {
    let (mut s, t0) = session(Strategy::Http11, |_| {}, None);
    s.request(PAGE, 0, t0).unwrap();
    let html =
        b"<html><head><link rel=stylesheet href=s.css></head><body><p>text</p></body></html>";
    let next = respond(
        &mut s,
        PAGE,
        t0,
        &ok_head(html.len(), "Content-Type: text/html\r\n"),
        html,
    );
    assert_eq!(next.len(), 1);
    s.request(next[0], 0, t0).unwrap();
    let css = b"@font-face { font-family: Used; src: url(used.woff2) }\n\
                @font-face { font-family: Unused; src: url(unused.woff2) }\n\
                p { font-family: Used }\n";
    let fonts = respond(
        &mut s,
        next[0],
        t0,
        &ok_head(css.len(), "Content-Type: text/css\r\n"),
        css,
    );
    assert_eq!(fonts.len(), 1, "only the used face");
    let req = text(&s.request(fonts[0], 0, t0).unwrap());
    assert!(req.starts_with("GET /used.woff2 HTTP/1.1\r\n"), "{req}");
}

/// h2 and h3: the records name the protocol that carried them; the page is
/// asked for deflated, as pipeline-deflate does.
#[test]
fn multiplexed_records_name_their_protocol() {
    for (strategy, version) in [(Strategy::H2, "HTTP/2"), (Strategy::H3, "HTTP/3")] {
        let (mut s, t0) = session(
            strategy,
            |c| c.url = c.url.replace("http://", "https://"),
            None,
        );
        let req = text(&s.request(PAGE, 0, t0).unwrap());
        assert!(req.contains("Accept-Encoding: deflate\r\n"), "{req}");
        let body = b"<html></html>";
        respond(&mut s, PAGE, t0, &ok_head(body.len(), ""), body);
        let (report, _) = s.finish();
        assert_eq!(report.objects[0].http_version, version);
    }
}

/// Interim responses are not the response; 101 unasked is an error.
#[test]
fn interim_heads_are_skipped() {
    let (mut s, t0) = session(Strategy::Http11, |_| {}, None);
    s.request(PAGE, 0, t0).unwrap();
    let early = head(
        "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n",
        &Method::Get,
    );
    let (info, next) = s.on_head(PAGE, 0, &early, t0).unwrap();
    assert!(info.interim && next.is_empty());
    let switch = head("HTTP/1.1 101 Switching Protocols\r\n\r\n", &Method::Get);
    let e = s.on_head(PAGE, 0, &switch, t0).err().expect("an error");
    assert!(e.to_string().contains("101"), "{e}");
}
