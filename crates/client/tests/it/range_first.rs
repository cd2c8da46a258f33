//! Range mode ("poor man's multiplexing", Nielsen, Gettys et al.,
//! SIGCOMM '97, "Range Requests and Validation"): the first bytes of every
//! image, then the rest; every object joined byte-exact, against pagewire's
//! server and nginx.

use crate::common;

use std::collections::HashSet;

use common::{make_site, pw_config, Nginx, PwServer, SiteDir};
use pagewire_client::{fetch_blocking, FetchConfig, FetchReport, Outcome, Strategy};

const PAGE: &str = "/index.html";
const FIRST: u64 = 300;

fn fetch(url: &str, strategy: Strategy) -> FetchReport {
    let mut cfg = FetchConfig::new(url, strategy);
    cfg.range_first = Some(FIRST);
    cfg.keep_bodies = true;
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("range-first {url}: {e}"))
}

fn check(site: &SiteDir, r: &FetchReport) {
    assert_eq!(r.objects.len(), 43);
    let mut seen = HashSet::new();
    let mut rests = 0;
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert!(seen.insert(path.clone()), "{path} twice");
        assert_eq!(o.status, 200, "{path}");
        assert_eq!(o.outcome, Outcome::Fetched, "{path}");
        assert_eq!(o.sha256, site.sha(&path), "{path} not byte-exact");
        let len = site.files[&path].len() as u64;
        assert_eq!(o.size, len, "{path}");
        if path != PAGE && len > FIRST {
            rests += 1;
            assert!(
                o.request_head.contains(&format!("Range: bytes={FIRST}-")),
                "{path}: {}",
                o.request_head
            );
        }
    }
    // Page + one first part per image + one rest per image longer than N.
    assert_eq!(r.requests as usize, 1 + 42 + rests);
    let meta = r.metadata_ms.expect("metadata time");
    assert!(meta > 0.0 && meta <= r.total_ms, "{meta} vs {}", r.total_ms);
}

#[test]
fn first_bytes_then_rest_byte_exact_pagewire() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    for st in [Strategy::Pipeline, Strategy::PipelineDeflate] {
        let r = fetch(&server.url(PAGE), st);
        check(&site, &r);
        assert_eq!(r.connections_opened, 1, "{st:?}");
    }
}

#[test]
fn first_bytes_then_rest_byte_exact_nginx() {
    let site = make_site();
    if pagewire_testreq::require_peer("nginx").is_none() {
        return;
    }
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    check(&site, &fetch(&nginx.url(PAGE), Strategy::Pipeline));
}

/// The revisit the paper proposes ("the natural revalidation request for
/// HTTP/1.1 will combine both cache validation headers and an If-Range
/// request header"): every image's conditional GET carries the range and
/// If-Range; unchanged images come back 304, a changed one whole (its
/// If-Range no longer holds) and byte-exact.
#[test]
fn revisit_validates_with_range_and_if_range() {
    let mut site = make_site();
    let cache = tempfile::tempdir().unwrap();
    let server = PwServer::start(site.root(), pw_config());
    let port = server.addr.port();
    let mut cfg = FetchConfig::new(server.url(PAGE), Strategy::Pipeline);
    cfg.range_first = Some(FIRST);
    cfg.cache_dir = Some(cache.path().to_path_buf());
    cfg.keep_bodies = true;
    check(&site, &fetch_blocking(cfg.clone()).unwrap());
    drop(server);
    // Revise the largest image: same size, other bytes.
    let changed = site
        .microscape_paths()
        .into_iter()
        .max_by_key(|p| site.files[p].len())
        .unwrap();
    let bytes = site.files.get_mut(&changed).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x55;
    let bytes = bytes.clone();
    std::fs::write(site.root().join(&changed[1..]), bytes).unwrap();
    let server = PwServer::start_on(site.root(), pw_config(), port);
    cfg.revalidate = true;
    let r = fetch_blocking(cfg).unwrap_or_else(|e| panic!("revisit: {e}"));
    drop(server);
    assert_eq!(r.objects.len(), 43);
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        if path == PAGE {
            assert!(!o.request_head.contains("Range"), "{}", o.request_head);
            continue;
        }
        for h in [
            format!("Range: bytes=0-{}", FIRST - 1),
            "If-Range: \"".to_string(),
            "If-None-Match: \"".to_string(),
        ] {
            assert!(o.request_head.contains(&h), "{path}: {}", o.request_head);
        }
        if path == changed {
            assert_eq!((o.status, o.outcome), (200, Outcome::Fetched), "{path}");
            assert_eq!(o.sha256, site.sha(&path), "{path} not byte-exact");
        } else {
            assert_eq!((o.status, o.outcome), (304, Outcome::NotModified), "{path}");
        }
    }
    // One request per object: a 304 or a whole object ends it.
    assert_eq!(r.requests, 43);
}
