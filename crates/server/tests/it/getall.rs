//! GETALL, GETLIST and the compatible GET + `Getall: 1` (Padmanabhan &
//! Mogul, "Improving HTTP Latency", section 5) over real sockets, with the
//! multipart/mixed framing parsed here independently of the server's code.

use crate::common;

use std::collections::HashMap;
use std::io::Write;

use bytes::Bytes;
use common::*;
use pagewire_h1::Method;
use pagewire_site::microscape;
use pagewire_site::store::Site;

/// One part of a multipart/mixed body.
#[derive(Debug)]
struct Part {
    headers: HashMap<String, String>,
    body: Bytes,
}

/// Splits a multipart/mixed body by each part's Content-Length (as the
/// paper's client does), checking every delimiter on the way.
fn parts(resp: &Response) -> Vec<Part> {
    let ct = resp.header("content-type").expect("content-type");
    let b = ct
        .strip_prefix("multipart/mixed; boundary=")
        .unwrap_or_else(|| panic!("not multipart/mixed: {ct}"));
    let body = &resp.body;
    let mut at = 0usize;
    let mut out = Vec::new();
    loop {
        let delim = format!("--{b}");
        assert_eq!(
            &body[at..at + delim.len()],
            delim.as_bytes(),
            "delimiter at {at}"
        );
        at += delim.len();
        if &body[at..at + 2] == b"--" {
            assert_eq!(&body[at..], b"--\r\n");
            return out;
        }
        assert_eq!(&body[at..at + 2], b"\r\n");
        at += 2;
        let mut headers = HashMap::new();
        loop {
            let end = at + body[at..].windows(2).position(|w| w == b"\r\n").unwrap();
            let line = std::str::from_utf8(&body[at..end]).unwrap();
            at = end + 2;
            if line.is_empty() {
                break;
            }
            let (k, v) = line.split_once(':').unwrap();
            headers.insert(k.to_ascii_lowercase(), v.trim().to_string());
        }
        let n: usize = headers["content-length"].parse().unwrap();
        out.push(Part {
            headers,
            body: body.slice(at..at + n),
        });
        at += n;
        assert_eq!(&body[at..at + 2], b"\r\n");
        at += 2;
    }
}

fn microscape_site() -> (Site, Vec<(String, Bytes)>) {
    let m = microscape::generate(Default::default());
    (Site::from_files(m.site_files()), m.files())
}

fn send(r: &mut Reader, req: &str) -> Response {
    r.stream.write_all(req.as_bytes()).unwrap();
    r.response(Method::Get).unwrap()
}

#[test]
fn getall_returns_the_page_and_every_image_byte_exact_in_one_response() {
    let (site, files) = microscape_site();
    let srv = TestServer::start(site, config());
    let mut r = Reader::new(srv.connect());
    let resp = send(&mut r, "GETALL /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(resp.status, 200);
    let ps = parts(&resp);
    assert_eq!(ps.len(), files.len(), "page + 42 images");
    let want: HashMap<&str, &Bytes> = files.iter().map(|(p, b)| (p.as_str(), b)).collect();
    for p in &ps {
        let loc = &p.headers["content-location"];
        assert_eq!(&p.body, want[loc.as_str()], "{loc} byte-exact");
        assert!(p.headers["etag"].starts_with('"'));
        assert!(p.headers.contains_key("last-modified"));
        assert!(p.headers.contains_key("content-type"));
    }
    assert_eq!(ps[0].headers["content-location"], "/index.html");
    // The connection stays usable: a plain GET after it.
    let plain = send(&mut r, "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(&plain.body, want["/index.html"]);
    assert!(plain
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
}

#[test]
fn compatible_get_with_field_and_conditional_getall() {
    let (site, files) = microscape_site();
    let srv = TestServer::start(site, config());
    let mut r = Reader::new(srv.connect());
    let resp = send(
        &mut r,
        "GET /index.html HTTP/1.1\r\nHost: x\r\nGetall: 1\r\n\r\n",
    );
    assert_eq!(resp.header("vary"), Some("Getall"));
    let ps = parts(&resp);
    assert_eq!(ps.len(), files.len());
    // Revalidation: the client lists every entity tag it holds, except one
    // image's; that one comes back whole, the rest as 304 parts.
    let etags: Vec<&str> = ps[..ps.len() - 1]
        .iter()
        .map(|p| p.headers["etag"].as_str())
        .collect();
    let req = format!(
        "GETALL /index.html HTTP/1.1\r\nHost: x\r\nIf-None-Match: {}\r\n\r\n",
        etags.join(", ")
    );
    let cond = parts(&send(&mut r, &req));
    assert_eq!(cond.len(), files.len());
    for p in &cond[..cond.len() - 1] {
        assert_eq!(p.headers["status"], "304 Not Modified");
        assert!(p.body.is_empty());
        assert!(p.headers.contains_key("etag"));
    }
    let last = cond.last().unwrap();
    assert!(!last.headers.contains_key("status"));
    assert_eq!(last.body, ps.last().unwrap().body);
}

#[test]
fn getlist_returns_the_listed_objects_and_says_which_are_missing() {
    let (site, files) = microscape_site();
    let srv = TestServer::start(site, config());
    let mut r = Reader::new(srv.connect());
    let (a, b) = (&files[3], &files[40]);
    let list = format!(
        "# two images and a stranger\r\n{}\r\nhttp://x{}\r\n/nope.gif\r\n",
        a.0, b.0
    );
    // Pipelined: the GETLIST (with its body) and a GET right behind it.
    let req = format!(
        "GETLIST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/uri-list\r\nContent-Length: {}\r\n\r\n{list}GET {} HTTP/1.1\r\nHost: x\r\n\r\n",
        list.len(),
        a.0
    );
    r.stream.write_all(req.as_bytes()).unwrap();
    let resp = r.response(Method::Get).unwrap();
    let ps = parts(&resp);
    assert_eq!(ps.len(), 3);
    assert_eq!(ps[0].headers["content-location"], a.0);
    assert_eq!(ps[0].body, a.1);
    assert_eq!(ps[1].body, b.1);
    assert_eq!(ps[2].headers["status"], "404 Not Found");
    assert!(ps[2].body.is_empty());
    let after = r.response(Method::Get).unwrap();
    assert_eq!(after.body, a.1, "the pipelined GET behind the GETLIST");
}

#[test]
fn getall_of_a_missing_page_is_404_and_other_origins_are_left_out() {
    let site = Site::from_files(vec![
        file(
            "/p.html",
            "<html><img src=\"a.gif\"><img src=\"http://other.example/b.gif\"><img src=\"http://x/c.gif\"></html>",
        ),
        file("/a.gif", noise(500, 1)),
        file("/b.gif", noise(500, 2)),
        file("/c.gif", noise(500, 3)),
    ]);
    let srv = TestServer::start(site, config());
    let mut r = Reader::new(srv.connect());
    assert_eq!(
        send(&mut r, "GETALL /none.html HTTP/1.1\r\nHost: x\r\n\r\n").status,
        404
    );
    let ps = parts(&send(&mut r, "GETALL /p.html HTTP/1.1\r\nHost: x\r\n\r\n"));
    let locs: Vec<&str> = ps
        .iter()
        .map(|p| p.headers["content-location"].as_str())
        .collect();
    assert_eq!(locs, ["/p.html", "/a.gif", "/c.gif"]);
}

/// A uri-list longer than one TCP segment arrives in pieces: the server
/// waits for the whole body before answering.
#[test]
fn getlist_body_arriving_later_is_waited_for() {
    let (site, files) = microscape_site();
    let srv = TestServer::start(site, config());
    let mut r = Reader::new(srv.connect());
    let list: String = files[1..].iter().map(|(p, _)| format!("{p}\r\n")).collect();
    let head = format!(
        "GETLIST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/uri-list\r\nContent-Length: {}\r\n\r\n",
        list.len()
    );
    r.stream.write_all(head.as_bytes()).unwrap();
    // The pauses are the behaviour under test (a body arriving in pieces,
    // after the head), not a synchronisation: nothing below depends on
    // their length, and a server that answered from a partial list would
    // fail the status and body checks whatever they were.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let (a, b) = list.split_at(list.len() / 2);
    r.stream.write_all(a.as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    r.stream.write_all(b.as_bytes()).unwrap();
    let resp = r.response(Method::Get).unwrap();
    assert_eq!(resp.status, 200);
    let ps = parts(&resp);
    assert_eq!(ps.len(), files.len() - 1);
    for (p, (path, body)) in ps.iter().zip(&files[1..]) {
        assert_eq!(&p.headers["content-location"], path);
        assert_eq!(&p.body, body);
    }
    // And the connection is still in step: a GET after it.
    let after = send(&mut r, "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(after.body, files[0].1);
}

/// GETALL returns what a browser fetches for the page, found
/// as the robot finds it: a stylesheet's `url()` and `@import` (and the
/// imported sheet's own references), the `srcset` candidate, the font the
/// page's text uses (not the unused one), but not an alternate stylesheet's
/// references nor an image of a non-matching `@media` block.
#[test]
fn getall_includes_stylesheet_references_srcset_and_used_fonts() {
    let html = r#"<!DOCTYPE html><html><head>
<link rel="stylesheet" href="css/main.css">
<link rel="alternate stylesheet" href="css/alt.css" title="alt">
</head><body>
<h1>Title</h1><p class="plain">text</p>
<img src="img/small.gif"><img srcset="img/big.gif 2560w, img/w.gif 1280w" sizes="100vw">
</body></html>"#;
    let files = vec![
        file("/page.html", html),
        file(
            "/css/main.css",
            "@import url(\"deep/more.css\");\n\
             @font-face { font-family: Used; src: url(../fonts/used.woff2) format(\"woff2\"); }\n\
             @font-face { font-family: Unused; src: url(../fonts/unused.woff2) format(\"woff2\"); }\n\
             h1 { font-family: Used, serif; background: url(../img/bg.gif) }\n\
             .none { font-family: Unused }\n\
             @media print { body { background: url(../img/narrow.gif) } }\n",
        ),
        file(
            "/css/deep/more.css",
            "p { background-image: url('/img/from-import.gif') }\n",
        ),
        file("/css/alt.css", "body { background: url(../img/alt.gif) }\n"),
        file("/img/small.gif", "GIF89a small"),
        file("/img/big.gif", "GIF89a big"),
        file("/img/w.gif", "GIF89a w"),
        file("/img/bg.gif", "GIF89a bg"),
        file("/img/from-import.gif", "GIF89a import"),
        file("/img/narrow.gif", "GIF89a narrow"),
        file("/img/alt.gif", "GIF89a alt"),
        file("/fonts/used.woff2", "wOF2 used"),
        file("/fonts/unused.woff2", "wOF2 unused"),
    ];
    let srv = TestServer::start(Site::from_files(files), config());
    let mut r = Reader::new(srv.connect());
    let resp = send(&mut r, "GETALL /page.html HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(resp.status, 200);
    let locs: Vec<String> = parts(&resp)
        .iter()
        .map(|p| p.headers["content-location"].clone())
        .collect();
    let mut got: Vec<&str> = locs.iter().map(String::as_str).collect();
    assert_eq!(got[0], "/page.html");
    got.sort();
    let mut want = vec![
        "/page.html",
        "/css/main.css",
        "/css/deep/more.css",
        "/img/from-import.gif",
        "/img/bg.gif",
        "/fonts/used.woff2",
        "/css/alt.css",
        "/img/small.gif",
        "/img/w.gif",
    ];
    want.sort();
    assert_eq!(got, want, "parts in answer order: {locs:?}");
    // The same answer for the compatible variant, and from the cache.
    let again = send(
        &mut r,
        "GET /page.html HTTP/1.1\r\nHost: x\r\nGetall: 1\r\n\r\n",
    );
    let again: Vec<String> = parts(&again)
        .iter()
        .map(|p| p.headers["content-location"].clone())
        .collect();
    assert_eq!(again, locs);
}

/// Paper 003 §7.3: a GETALL's parts are accesses the online
/// predictor learns from, and its hints never name an object the GETALL
/// answer already carries.
#[test]
fn getall_parts_teach_the_predictor_and_are_never_hinted() {
    let files = vec![
        file("/page.html", "<html><img src=\"img.gif\"></html>"),
        file("/img.gif", "GIF89a img"),
        file("/next.html", "<html>next</html>"),
    ];
    let srv = TestServer::start(
        Site::from_files(files),
        pagewire_server::ServerConfig {
            prefetch: Some("w=2,p=0.5,i=4".parse().unwrap()),
            ..config()
        },
    );
    // Teach: a GETALL of the page, then the next page, several times.
    for _ in 0..3 {
        let mut r = Reader::new(srv.connect());
        let all = send(&mut r, "GETALL /page.html HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(parts(&all).len(), 2);
        send(&mut r, "GET /next.html HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    let mut r = Reader::new(srv.connect());
    // The image was seen as accessed (only ever sent as a part): it now
    // predicts the next page.
    let img = send(&mut r, "GET /img.gif HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(img.header("link"), Some("</next.html>; rel=prefetch"));
    // A plain GET of the page is hinted its image (learned from the parts)...
    let page = send(&mut r, "GET /page.html HTTP/1.1\r\nHost: x\r\n\r\n");
    let link = page.header("link").expect("hints for the page");
    assert!(link.contains("</img.gif>; rel=prefetch"), "{link}");
    // ... a GETALL of it is not: the image is in the answer.
    let all = send(&mut r, "GETALL /page.html HTTP/1.1\r\nHost: x\r\n\r\n");
    let link = all.header("link").expect("hints for the GETALL");
    assert!(!link.contains("img.gif"), "{link}");
    assert!(link.contains("</next.html>; rel=prefetch"), "{link}");
    // The same for a GETLIST naming both.
    let list = "/page.html\r\n/img.gif\r\n";
    let req = format!(
        "GETLIST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/uri-list\r\nContent-Length: {}\r\n\r\n{list}",
        list.len()
    );
    let gl = send(&mut r, &req);
    assert_eq!(parts(&gl).len(), 2);
    let link = gl.header("link").unwrap_or("");
    assert!(
        !link.contains("img.gif") && !link.contains("page.html"),
        "{link}"
    );
}
