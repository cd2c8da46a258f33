//! Strategy `objpack` (paper 002): one request, the page and its objects in
//! one package from pagewire's server; revalidation; the fallback to
//! pipelining against a server with plain HTML (nginx); and streaming: with
//! the package fed slowly, the first objects are on disk before its last
//! bytes are sent.

use crate::common;
use crate::har_schema;

use std::time::Duration;

use common::{make_site, pw_config, Nginx, PwServer, SiteDir};
use pagewire_client::{fetch_blocking, FetchConfig, FetchReport, Outcome, Strategy};
use pagewire_objpack::{Attributes, Entry, Limits, Manifest, MEDIA_TYPE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PAGE: &str = "/index.html";

fn fetch(url: &str, cache: Option<&std::path::Path>, revalidate: bool) -> FetchReport {
    let mut cfg = FetchConfig::new(url, Strategy::Objpack);
    cfg.cache_dir = cache.map(|p| p.to_path_buf());
    cfg.revalidate = revalidate;
    cfg.keep_bodies = true;
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("objpack {url}: {e}"))
}

fn assert_byte_exact(site: &SiteDir, r: &FetchReport, n: usize) {
    assert_eq!(
        r.objects.len(),
        n,
        "{:?}",
        r.objects.iter().map(|o| &o.url).collect::<Vec<_>>()
    );
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert_eq!(o.sha256, site.sha(&path), "{} not byte-exact", o.url);
        assert_eq!(o.size as usize, site.files[&path].len());
        if let Some(b) = &o.body {
            assert_eq!(b.as_ref(), site.files[&path].as_slice());
        }
    }
}

#[test]
fn pagewire_server_sends_page_and_objects_in_one_response() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    let r = fetch(&server.url(PAGE), None, false);
    assert_byte_exact(&site, &r, 43);
    assert_eq!(r.requests, 1, "one request for the page and its 42 images");
    assert_eq!(r.connections_opened, 1);
    assert_eq!(r.status_count(200), 43);
    // Objects complete one after the other, while the package streams.
    let done: Vec<f64> = r.objects[1..].iter().map(|o| o.done_ms).collect();
    assert!(done.windows(2).all(|w| w[0] <= w[1]), "{done:?}");
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.attempts == 0 && o.content_type.as_deref() == Some("image/gif")));
    let har: serde_json::Value =
        serde_json::from_str(&pagewire_client::har::to_har_string(&r)).unwrap();
    assert_eq!(har["log"]["entries"].as_array().unwrap().len(), 43);
    har_schema::check(&har);

    // Revalidation: the package's tag gives 304; the images are then
    // revalidated one by one (pipelined) against their own tags.
    let cache = tempfile::tempdir().unwrap();
    let first = fetch(&server.url(PAGE), Some(cache.path()), false);
    assert_eq!(first.requests, 1);
    let again = fetch(&server.url(PAGE), Some(cache.path()), true);
    assert_eq!(again.objects.len(), 43);
    assert!(again
        .objects
        .iter()
        .all(|o| o.outcome == Outcome::NotModified));
    assert_eq!(again.bytes.payload_bytes_received, 0);
}

#[test]
fn nginx_plain_html_falls_back_to_pipelining() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let r = fetch(&nginx.url(PAGE), None, false);
    assert_byte_exact(&site, &r, 43);
    assert_eq!(r.requests, 43);
    assert_eq!(r.connections_opened, 1);
    assert!(r.connections[0].pipelined);
}

/// A server that sends one package 1 KiB at a time, 10 ms apart, and looks
/// into the client's save directory before sending the last KiB.
#[tokio::test]
async fn objects_complete_before_the_last_package_bytes_are_sent() {
    let files: Vec<(String, Vec<u8>)> = vec![
        (
            "index.html".into(),
            b"<img src=a.gif><img src=img/b.gif><img src=c.gif>".to_vec(),
        ),
        ("a.gif".into(), vec![1u8; 3000]),
        ("img/b.gif".into(), vec![2u8; 3000]),
        ("c.gif".into(), vec![3u8; 6000]),
    ];
    let entries = files
        .iter()
        .map(|(n, b)| Entry {
            name: n.clone(),
            size: b.len() as u64,
            attrs: Attributes::default(),
        })
        .collect();
    let m = Manifest::new(entries, &Limits::default()).unwrap();
    let pkg = m.assemble(files.iter().map(|f| f.1.as_slice()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let save = tempfile::tempdir().unwrap();
    let host_dir = save.path().join(addr.to_string());
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut req = vec![0u8; 4096];
        let n = s.read(&mut req).await.unwrap();
        let req = String::from_utf8_lossy(&req[..n]).to_string();
        assert!(req.contains(MEDIA_TYPE), "{req}");
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {MEDIA_TYPE}\r\nContent-Length: {}\r\n\r\n",
            pkg.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let chunks: Vec<&[u8]> = pkg.chunks(1024).collect();
        let (last, rest) = chunks.split_last().unwrap();
        for c in rest {
            s.write_all(c).await.unwrap();
        }
        // The event: a.gif and img/b.gif saved (polled, bounded at 10 s)
        // while the last KiB, part of c.gif, is still held back.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let saved = |f: &str| host_dir.join(f).is_file();
        while !(saved("a.gif") && saved("img/b.gif")) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let early: Vec<bool> = ["a.gif", "img/b.gif", "c.gif"]
            .iter()
            .map(|f| saved(f))
            .collect();
        s.write_all(last).await.unwrap();
        early
    });
    let mut cfg = FetchConfig::new(format!("http://{addr}/"), Strategy::Objpack);
    cfg.save_dir = Some(save.path().to_path_buf());
    let r = pagewire_client::fetch(cfg).await.unwrap();
    let early = server.await.unwrap();
    assert_eq!(
        early,
        [true, true, false],
        "a.gif and img/b.gif were complete before the last KiB was sent; c.gif was not"
    );
    assert_eq!(r.objects.len(), 4);
    assert_eq!(r.requests, 1);
    assert_eq!(
        std::fs::read(save.path().join(addr.to_string()).join("c.gif")).unwrap(),
        vec![3u8; 6000]
    );
    assert!(r.objects[1].done_ms < r.objects[3].done_ms);
}
