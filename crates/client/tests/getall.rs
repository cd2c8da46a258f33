//! `--strategy getall` (Padmanabhan & Mogul, "Improving HTTP Latency",
//! section 5) against pagewire's server (which understands it) and nginx
//! (which ignores the `Getall` field): every object byte-exact either way.

mod common;

use std::collections::HashSet;

use common::{make_site, pw_config, Nginx, PwServer, SiteDir};
use pagewire_client::{
    fetch_blocking, FetchConfig, FetchReport, ObjectKind, Outcome, RequestMethod, Strategy,
};

const PAGE: &str = "/index.html";

fn fetch(url: &str, cache: Option<&std::path::Path>) -> FetchReport {
    let mut cfg = FetchConfig::new(url, Strategy::Getall);
    cfg.cache_dir = cache.map(|p| p.to_path_buf());
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("getall {url}: {e}"))
}

/// Each of the page's 43 objects once, with the bytes on disk.
fn assert_byte_exact(site: &SiteDir, r: &FetchReport) {
    assert_eq!(r.objects.len(), 43);
    let mut seen = HashSet::new();
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert!(seen.insert(path.clone()), "{path} twice");
        assert_eq!(o.status, 200, "{path}");
        assert_eq!(o.sha256, site.sha(&path), "{path} not byte-exact");
        assert_eq!(o.size as usize, site.files[&path].len());
    }
    assert_eq!(r.objects[0].kind, ObjectKind::Page);
}

#[test]
fn first_visit_is_one_request_then_only_missing_objects() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    let cache = tempfile::tempdir().unwrap();
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 1, "the whole Microscape page in one request");
    assert_eq!(r.connections_opened, 1);
    assert_eq!(r.objects[0].outcome, Outcome::Fetched);
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::GetallPart));

    // Later visit: the page, and nothing else (all images cached).
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 1);
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::FromCache));

    // Two images gone from the cache: the page, then one GETLIST for both.
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    let gone: Vec<String> = r.objects[5..7].iter().map(|o| o.url.clone()).collect();
    for u in &gone {
        std::fs::remove_file(c.path_of(u)).unwrap();
    }
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 2);
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    let parts: Vec<&str> = r
        .objects
        .iter()
        .filter(|o| o.outcome == Outcome::GetallPart)
        .map(|o| o.url.as_str())
        .collect();
    assert_eq!(parts, gone.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.requests_per_connection, vec![2]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn nginx_ignores_the_field_and_the_robot_pipelines_the_rest() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let r = fetch(&nginx.url(PAGE), None);
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 43);
    assert_eq!(r.connections_opened, 1);
    assert!(r.connections[0].pipelined);
    assert!(r.objects.iter().all(|o| o.outcome == Outcome::Fetched));
    // The page request did ask for GETALL.
    assert!(r.objects[0].request_head.contains("Getall: 1\r\n"));
    let log = nginx.access_log(43);
    assert_eq!(log.len(), 43, "{log:?}");
}

#[test]
fn nginx_refuses_getlist_and_the_robot_falls_back_to_gets() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let first = fetch(&nginx.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &first);
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    for o in &first.objects[10..13] {
        std::fs::remove_file(c.path_of(&o.url)).unwrap();
    }
    let r = fetch(&nginx.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    // The page, a GETLIST nginx does not know, then the three by GET.
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    assert_eq!(r.requests_by_method.get(&RequestMethod::Get), Some(&4));
    assert_eq!(
        r.objects
            .iter()
            .filter(|o| o.outcome == Outcome::Fetched)
            .count(),
        4
    );
    assert!(
        r.warnings.iter().any(|w| w.contains("GETLIST answered")),
        "{:?}",
        r.warnings
    );
}
