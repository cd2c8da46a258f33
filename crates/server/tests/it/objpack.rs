//! Object packages by content negotiation: `Accept` with the package media
//! type gets the page's package (built at load), `Vary: Accept`, its own
//! strong ETag and 304 on revalidation; plain clients get the HTML.
use crate::common;

use common::*;
use pagewire_objpack::{Event, Limits, Reader as PkgReader, Step, MEDIA_TYPE};
use pagewire_site::store::Site;

fn site() -> Site {
    Site::from_files(vec![
        file(
            "/index.html",
            "<html><link rel=stylesheet href=s.css><img src=a.gif><img src=/dir/b.gif></html>",
        ),
        file("/s.css", "p { background: url(bg.png) }"),
        file("/bg.png", noise(500, 3)),
        file("/a.gif", noise(3000, 1)),
        file("/dir/b.gif", noise(100, 2)),
        file("/plain.txt", "text"),
    ])
}

fn unpack(body: &[u8]) -> Vec<(String, Vec<u8>, String)> {
    let mut r = PkgReader::new(Limits::default());
    let mut files: Vec<(String, Vec<u8>, String)> = Vec::new();
    let mut input = body;
    loop {
        let Step { consumed, event } = r.advance(input).unwrap();
        input = &input[consumed..];
        match event {
            None => break,
            Some(Event::FileStart { index }) => {
                let e = &r.entries()[index];
                files.push((e.name.clone(), Vec::new(), e.attrs.etag.clone()));
            }
            Some(Event::Data { bytes, .. }) => files.last_mut().unwrap().1.extend_from_slice(bytes),
            Some(_) => {}
        }
    }
    while let Step { event: Some(_), .. } = r.advance(&[]).unwrap() {}
    r.finish().unwrap();
    files
}

#[test]
fn accept_gets_the_package_plain_gets_html() {
    let s = site();
    let want: Vec<(String, Vec<u8>, String)> =
        ["/index.html", "/s.css", "/bg.png", "/a.gif", "/dir/b.gif"]
            .iter()
            .map(|p| {
                let r = s.get(p).unwrap();
                (p[1..].to_string(), r.body.to_vec(), r.etag.clone())
            })
            .collect();
    let server = TestServer::start(site(), config());
    let accept = format!("Accept: text/html;q=0.9, {MEDIA_TYPE}\r\n");
    let pkg = get(&server, &req("/", &accept));
    assert_eq!(pkg.status, 200);
    assert_eq!(pkg.header("content-type"), Some(MEDIA_TYPE));
    assert_eq!(pkg.header("vary"), Some("Accept"));
    let etag = pkg.header("etag").unwrap().to_string();
    assert!(etag.starts_with("\"objp-"), "{etag}");
    assert_eq!(unpack(&pkg.body), want);

    let html = get(&server, &req("/", "Accept: */*\r\n"));
    assert_eq!(html.status, 200);
    assert!(html
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(html.header("vary").unwrap().contains("Accept"));
    assert_ne!(html.header("etag").unwrap(), etag);
    assert_eq!(html.body, s.get("/index.html").unwrap().body);

    // Revalidation of the package: 304 with its tag; HEAD has no body.
    let nm = get(
        &server,
        &req("/", &format!("{accept}If-None-Match: {etag}\r\n")),
    );
    assert_eq!(nm.status, 304);
    assert_eq!(nm.header("etag"), Some(etag.as_str()));
    assert_eq!(nm.header("vary"), Some("Accept"));
    // The HTML's tag does not revalidate the package.
    let html_tag = html.header("etag").unwrap();
    let full = get(
        &server,
        &req("/", &format!("{accept}If-None-Match: {html_tag}\r\n")),
    );
    assert_eq!(full.status, 200);
    let head = get(
        &server,
        &format!("HEAD / HTTP/1.1\r\nHost: t\r\n{accept}\r\n"),
    );
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header("content-length").unwrap(),
        pkg.body.len().to_string()
    );
    // Not a page: no package, no Vary: Accept.
    let txt = get(&server, &req("/plain.txt", &accept));
    assert_eq!(txt.body.as_ref(), b"text");
    assert!(txt
        .header("vary")
        .is_none_or(|v| !v.contains("Accept,") && v != "Accept"));
    server.stop();
}
