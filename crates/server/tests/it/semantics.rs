//! RFC 9110 semantics over real sockets: methods, targets, conditional
//! requests, ranges, content codings, HTTP/1.0 connection handling.
use crate::common;

use std::io::{Read, Write};

use common::*;
use pagewire_h1::Method;

#[test]
fn get_and_head_carry_validators_and_same_headers() {
    let server = TestServer::start(small_site(), config());
    let g = get(&server, &req("/a.gif", ""));
    assert_eq!(g.status, 200);
    assert_eq!(g.body.len(), 3000);
    assert_eq!(g.header("content-type"), Some("image/gif"));
    assert_eq!(
        g.header("last-modified"),
        Some("Sun, 09 Sep 2001 01:46:40 GMT")
    );
    assert!(g.header("etag").unwrap().starts_with('"'));
    assert!(g.header("date").is_some());
    assert_eq!(g.header("accept-ranges"), Some("bytes"));
    assert_eq!(g.header("vary"), None, "a GIF has no coded variants");
    let h = get(&server, "HEAD /a.gif HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(h.status, 200);
    assert!(h.body.is_empty());
    assert_eq!(h.header("content-length"), Some("3000"));
    assert_eq!(h.header("etag"), g.header("etag"));
    let idx = get(&server, &req("/", ""));
    assert_eq!(idx.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(idx.body, html_body().as_bytes());
    let redirect = get(&server, &req("/dir?x=1", ""));
    assert_eq!(redirect.status, 301);
    assert_eq!(redirect.header("location"), Some("/dir/?x=1"));
    assert_eq!(
        get(&server, &req("/dir/", "")).body,
        &b"<html>dir</html>"[..]
    );
    assert_eq!(get(&server, &req("/nope", "")).status, 404);
}

#[test]
fn methods_versions_and_targets() {
    let server = TestServer::start(small_site(), config());
    let post = get(
        &server,
        "POST /a.gif HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD, OPTIONS"));
    assert_eq!(
        get(&server, "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n").status,
        501
    );
    let opt = get(&server, "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(opt.status, 200);
    assert_eq!(opt.header("allow"), Some("GET, HEAD, OPTIONS"));
    assert_eq!(
        get(&server, "GET * HTTP/1.1\r\nHost: t\r\n\r\n").status,
        400
    );
    assert_eq!(
        get(&server, "GET / HTTP/2.0\r\nHost: t\r\n\r\n").status,
        505
    );
    assert_eq!(
        get(&server, "GET / HTTP/1.7\r\nHost: t\r\n\r\n").status,
        505
    );
    // Absolute-form (RFC 9112 §3.2.2).
    let abs = get(
        &server,
        "GET http://test/b.gif HTTP/1.1\r\nHost: test\r\n\r\n",
    );
    assert_eq!(abs.status, 200);
    assert_eq!(abs.body.len(), 100);
    // Dots and encoded dots are resolved, never above the root.
    assert_eq!(get(&server, &req("/dir/%2e%2e/b.gif", "")).status, 200);
    assert_eq!(get(&server, &req("/dir/../../b.gif", "")).status, 400);
    assert_eq!(
        get(&server, &req("/%2e%2e/%2e%2e/etc/passwd", "")).status,
        400
    );
    assert_eq!(get(&server, &req("/b%2Egif", "")).status, 200);
    assert_eq!(get(&server, &req("/b.gif%00", "")).status, 400);
}

#[test]
fn a_body_on_a_refused_method_is_skipped_and_the_pipeline_continues() {
    let server = TestServer::start(small_site(), config());
    let mut s = server.connect();
    let batch = format!(
        "POST /a.gif HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello{}\
         PUT /a.gif HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n{}",
        req("/b.gif", ""),
        req("/b.gif", "")
    );
    s.write_all(batch.as_bytes()).unwrap();
    let mut r = Reader::new(s);
    assert_eq!(r.response(Method::Post).unwrap().status, 405);
    assert_eq!(r.response(Method::Get).unwrap().status, 200);
    assert_eq!(r.response(Method::Put).unwrap().status, 405);
    assert_eq!(r.response(Method::Get).unwrap().body.len(), 100);
}

#[test]
fn conditional_requests() {
    let server = TestServer::start(small_site(), config());
    let first = get(&server, &req("/index.html", "Accept-Encoding: gzip\r\n"));
    let etag = first.header("etag").unwrap().to_owned();
    assert!(etag.ends_with("-gzip\""), "{etag}");
    let lm = first.header("last-modified").unwrap().to_owned();

    // If-None-Match, strong and weak forms (weak comparison, RFC 9110 §13.1.2).
    for inm in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"x\", {etag}"),
        "*".into(),
    ] {
        let r = get(
            &server,
            &req(
                "/index.html",
                &format!("Accept-Encoding: gzip\r\nIf-None-Match: {inm}\r\n"),
            ),
        );
        assert_eq!(r.status, 304, "{inm}");
        assert!(r.body.is_empty());
        // RFC 9110 §15.4.5: ETag, Vary, Date as a 200 would have.
        assert_eq!(r.header("etag"), Some(etag.as_str()));
        assert_eq!(r.header("vary"), Some("Accept-Encoding, Accept"));
        assert!(r.header("date").is_some());
        assert_eq!(r.header("content-length"), None);
    }
    // The identity representation has another tag: no match with gzip's.
    let other = get(
        &server,
        &req("/index.html", &format!("If-None-Match: {etag}\r\n")),
    );
    assert_eq!(other.status, 200);
    // If-Modified-Since.
    let ims = get(
        &server,
        &req("/a.gif", &format!("If-Modified-Since: {lm}\r\n")),
    );
    assert_eq!(ims.status, 304);
    let older = get(
        &server,
        &req(
            "/a.gif",
            "If-Modified-Since: Sat, 08 Sep 2001 01:46:40 GMT\r\n",
        ),
    );
    assert_eq!(older.status, 200);
    let bad_date = get(&server, &req("/a.gif", "If-Modified-Since: yesterday\r\n"));
    assert_eq!(bad_date.status, 200);
    // If-None-Match takes precedence over If-Modified-Since (§13.2.2).
    let both = get(
        &server,
        &req(
            "/a.gif",
            &format!("If-None-Match: \"nope\"\r\nIf-Modified-Since: {lm}\r\n"),
        ),
    );
    assert_eq!(both.status, 200);
    // If-Match / If-Unmodified-Since.
    assert_eq!(
        get(&server, &req("/a.gif", "If-Match: \"nope\"\r\n")).status,
        412
    );
    let a_tag = get(&server, &req("/a.gif", ""))
        .header("etag")
        .unwrap()
        .to_owned();
    assert_eq!(
        get(&server, &req("/a.gif", &format!("If-Match: {a_tag}\r\n"))).status,
        200
    );
    assert_eq!(
        get(&server, &req("/a.gif", &format!("If-Match: W/{a_tag}\r\n"))).status,
        412,
        "If-Match uses strong comparison"
    );
    assert_eq!(
        get(
            &server,
            &req(
                "/a.gif",
                "If-Unmodified-Since: Sat, 08 Sep 2001 01:46:40 GMT\r\n"
            )
        )
        .status,
        412
    );
}

#[test]
fn ranges() {
    let site = small_site();
    let body = site.get("/a.gif").unwrap().body.clone();
    let etag = site.get("/a.gif").unwrap().etag.clone();
    let server = TestServer::start(site, config());

    let one = get(&server, &req("/a.gif", "Range: bytes=10-19\r\n"));
    assert_eq!(one.status, 206);
    assert_eq!(one.header("content-range"), Some("bytes 10-19/3000"));
    assert_eq!(one.body, body.slice(10..20));
    let suffix = get(&server, &req("/a.gif", "Range: bytes=-5\r\n"));
    assert_eq!(suffix.body, body.slice(2995..));

    let multi = get(&server, &req("/a.gif", "Range: bytes=0-4, 100-104\r\n"));
    assert_eq!(multi.status, 206);
    let ct = multi.header("content-type").unwrap();
    let boundary = ct
        .strip_prefix("multipart/byteranges; boundary=")
        .expect("multipart type")
        .to_owned();
    let text = multi.body.clone();
    let parts: Vec<&[u8]> = split(&text, format!("--{boundary}").as_bytes());
    // preamble (CRLF), two parts, closing "--\r\n"
    assert_eq!(parts.len(), 4, "{:?}", String::from_utf8_lossy(&text));
    for (part, (a, b)) in parts[1..3].iter().zip([(0usize, 4usize), (100, 104)]) {
        let s = part;
        let head_end = s.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = std::str::from_utf8(&s[..head_end]).unwrap();
        assert!(
            head.contains(&format!("Content-Range: bytes {a}-{b}/3000")),
            "{head}"
        );
        assert!(head.contains("Content-Type: image/gif"));
        let data = &s[head_end + 4..s.len() - 2];
        assert_eq!(data, &body[a..=b]);
    }

    let unsat = get(&server, &req("/a.gif", "Range: bytes=5000-\r\n"));
    assert_eq!(unsat.status, 416);
    assert_eq!(unsat.header("content-range"), Some("bytes */3000"));

    // If-Range: a matching strong tag gives the range, anything else the whole.
    let ir = get(
        &server,
        &req(
            "/a.gif",
            &format!("Range: bytes=0-0\r\nIf-Range: {etag}\r\n"),
        ),
    );
    assert_eq!(ir.status, 206);
    let ir_old = get(
        &server,
        &req("/a.gif", "Range: bytes=0-0\r\nIf-Range: \"old\"\r\n"),
    );
    assert_eq!(ir_old.status, 200);
    assert_eq!(ir_old.body.len(), 3000);
    let ir_weak = get(
        &server,
        &req(
            "/a.gif",
            &format!("Range: bytes=0-0\r\nIf-Range: W/{etag}\r\n"),
        ),
    );
    assert_eq!(ir_weak.status, 200);

    // Abuse is refused as Apache does: the Range header is ignored.
    let many: Vec<String> = (0..201).map(|i| format!("{}-{}", i * 10, i * 10)).collect();
    let r = get(
        &server,
        &req("/a.gif", &format!("Range: bytes={}\r\n", many.join(","))),
    );
    assert_eq!(r.status, 200);
    let overlapping = vec!["0-100"; 30].join(",");
    let r = get(
        &server,
        &req("/a.gif", &format!("Range: bytes={overlapping}\r\n")),
    );
    assert_eq!(r.status, 200);
    // A few overlapping ranges are merged into one.
    let merged = get(&server, &req("/a.gif", "Range: bytes=0-9,5-19\r\n"));
    assert_eq!(merged.status, 206);
    assert_eq!(merged.header("content-range"), Some("bytes 0-19/3000"));
    // HEAD ignores Range (RFC 9110 §14.2).
    let head = get(
        &server,
        "HEAD /a.gif HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\n\r\n",
    );
    assert_eq!(head.status, 200);
}

fn split<'a>(hay: &'a [u8], sep: &[u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + sep.len() <= hay.len() {
        if &hay[i..i + sep.len()] == sep {
            out.push(&hay[start..i]);
            i += sep.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&hay[start..]);
    out
}

#[test]
fn content_coding_negotiation() {
    let server = TestServer::start(small_site(), config());
    let original = html_body();
    // deflate is the zlib format (RFC 9110 §8.4.1.2), as paper 001 used.
    let d = get(&server, &req("/index.html", "Accept-Encoding: deflate\r\n"));
    assert_eq!(d.header("content-encoding"), Some("deflate"));
    assert_eq!(d.header("vary"), Some("Accept-Encoding, Accept")); // a page: also an object package (Accept)
    assert!(d.body.len() < original.len() / 3);
    let mut inflated = String::new();
    flate2::read::ZlibDecoder::new(&d.body[..])
        .read_to_string(&mut inflated)
        .unwrap();
    assert_eq!(inflated, original);
    let g = get(
        &server,
        &req(
            "/index.html",
            "Accept-Encoding: gzip;q=0.5, deflate;q=0.1\r\n",
        ),
    );
    assert_eq!(g.header("content-encoding"), Some("gzip"));
    let mut gunzipped = String::new();
    flate2::read::GzDecoder::new(&g.body[..])
        .read_to_string(&mut gunzipped)
        .unwrap();
    assert_eq!(gunzipped, original);
    let id = get(
        &server,
        &req("/index.html", "Accept-Encoding: gzip;q=0, deflate;q=0\r\n"),
    );
    assert_eq!(id.header("content-encoding"), None);
    assert_eq!(id.header("vary"), Some("Accept-Encoding, Accept"));
    assert_eq!(id.body, original.as_bytes());
    // A GIF is served as is, whatever is accepted.
    let gif = get(
        &server,
        &req("/a.gif", "Accept-Encoding: deflate, gzip, br\r\n"),
    );
    assert_eq!(gif.header("content-encoding"), None);
    // identity;q=0 with nothing else acceptable: 406.
    let none = get(&server, &req("/a.gif", "Accept-Encoding: identity;q=0\r\n"));
    assert_eq!(none.status, 406);
}

#[test]
fn http10_closes_unless_keep_alive_asked() {
    let server = TestServer::start(small_site(), config());
    let mut s = server.connect();
    s.write_all(b"GET /b.gif HTTP/1.0\r\n\r\n").unwrap();
    let mut r = Reader::new(s);
    let resp = r.response(Method::Get).unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(r.at_eof().unwrap(), "HTTP/1.0 without keep-alive closes");

    let mut s = server.connect();
    s.write_all(
        b"GET /b.gif HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b.gif HTTP/1.0\r\n\r\n",
    )
    .unwrap();
    let mut r = Reader::new(s);
    let first = r.response(Method::Get).unwrap();
    assert_eq!(first.header("connection"), Some("keep-alive"));
    let second = r.response(Method::Get).unwrap();
    assert_eq!(second.header("connection"), Some("close"));
    assert!(r.at_eof().unwrap());

    // HTTP/1.1 `Connection: close`.
    let mut s = server.connect();
    s.write_all(b"GET /b.gif HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut r = Reader::new(s);
    assert_eq!(
        r.response(Method::Get).unwrap().header("connection"),
        Some("close")
    );
    assert!(r.at_eof().unwrap());
}
