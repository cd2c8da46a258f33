//! The robot against real servers: nginx and pagewire's own, serving the
//! same generated Microscape directory (paper 001's test page: 1 HTML page,
//! 42 GIFs).

use crate::common;
use crate::har_schema;

use std::collections::HashMap;

use common::{make_site, pw_config, Nginx, PwServer, SiteDir, EXTRA_PAGE};
use pagewire_client::{
    fetch_blocking, FetchConfig, FetchReport, ObjectKind, Outcome, RequestMethod, Strategy,
};

const PAGE: &str = "/index.html";

fn fetch(
    url: &str,
    strategy: Strategy,
    cache: Option<&std::path::Path>,
    revalidate: bool,
) -> FetchReport {
    let mut cfg = FetchConfig::new(url, strategy);
    cfg.cache_dir = cache.map(|p| p.to_path_buf());
    cfg.revalidate = revalidate;
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("{strategy} {url}: {e}"))
}

/// Every object of the page arrived once, with the bytes on disk.
fn assert_byte_exact(site: &SiteDir, r: &FetchReport, page: &str, expect_objects: usize) {
    assert_eq!(
        r.objects.len(),
        expect_objects,
        "{}: {:?}",
        r.strategy,
        r.objects.iter().map(|o| &o.url).collect::<Vec<_>>()
    );
    let mut seen = HashMap::new();
    for o in &r.objects {
        let path = o
            .url
            .splitn(4, '/')
            .nth(3)
            .map(|p| format!("/{p}"))
            .unwrap();
        *seen.entry(path.clone()).or_insert(0) += 1;
        assert!(
            o.status == 200 || o.status == 304,
            "{} status {}",
            o.url,
            o.status
        );
        assert_eq!(
            o.sha256,
            site.sha(&path),
            "{} ({}) not byte-exact",
            o.url,
            r.strategy
        );
        assert_eq!(o.size as usize, site.files[&path].len());
    }
    assert!(seen.values().all(|&n| n == 1), "fetched twice: {seen:?}");
    assert_eq!(r.objects[0].kind, ObjectKind::Page);
    assert!(r.objects[0].url.ends_with(page));
}

fn check_all_strategies(site: &SiteDir, url_of: &dyn Fn(&str) -> String, server: &str) {
    // Paper 001's four; getall and objpack have their own checks in tests/getall.rs and tests/objpack.rs.
    for strategy in Strategy::PAPER_001 {
        let r = fetch(&url_of(PAGE), strategy, None, false);
        assert_byte_exact(site, &r, PAGE, 43);
        assert_eq!(r.requests, 43, "{server} {strategy}");
        assert_eq!(r.status_count(200), 43);
        match strategy {
            Strategy::Http10 => {
                assert_eq!(
                    r.connections_opened, 43,
                    "{server}: HTTP/1.0 = one connection per request"
                );
                assert!(
                    r.max_open_connections <= 4 && r.max_open_connections >= 2,
                    "{server}: max open {}",
                    r.max_open_connections
                );
            }
            _ => {
                assert_eq!(
                    r.connections_opened, 1,
                    "{server} {strategy}: {:?}",
                    r.connections
                );
                assert_eq!(r.requests_per_connection, vec![43]);
            }
        }
        if strategy.pipelines() {
            // The paper's flush rules, counted: one explicit flush (after the
            // page request), full flushes of exactly the buffer size, and
            // every request byte left through a flush, one write each.
            let explicit = r
                .flushes
                .iter()
                .filter(|f| f.reason == pagewire_client::FlushReason::Explicit)
                .count();
            assert_eq!(explicit, 1, "{server} {strategy}: {:?}", r.flush_counts);
            assert!(r
                .flushes
                .iter()
                .filter(|f| f.reason == pagewire_client::FlushReason::Full)
                .all(|f| f.bytes == 1024));
            let flushed: usize = r.flushes.iter().map(|f| f.bytes).sum();
            assert_eq!(flushed as u64, r.bytes.header_bytes_sent);
            assert_eq!(
                r.writes as usize,
                r.flushes.len(),
                "one write per flush on loopback"
            );
            assert!(r.connections[0].pipelined);
            // Batches, not one packet per request.
            assert!(
                r.flushes.len() < 15,
                "{server} {strategy}: {} flushes for 43 requests",
                r.flushes.len()
            );
        } else {
            assert_eq!(r.writes, 43, "{server} {strategy}: one write per request");
        }
        // Requests as small as the paper's (about 190 bytes; ours are smaller).
        let avg = r.bytes.header_bytes_sent as f64 / r.requests as f64;
        assert!(
            avg < 190.0,
            "{server} {strategy}: average request {avg:.0} bytes"
        );
        // The extra page: every other reference kind.
        let r = fetch(&url_of(EXTRA_PAGE), strategy, None, false);
        assert_byte_exact(site, &r, EXTRA_PAGE, 8);
        assert_eq!(
            r.skipped_other_server,
            vec!["http://elsewhere.invalid/other.gif".to_string()]
        );
    }
}

fn check_revalidation(url_of: &dyn Fn(&str) -> String, server: &str) {
    use pagewire_client::Revalidation;
    // Each strategy with its default style, plus the named alternatives:
    // the earlier conditional HTTP/1.0 variant and the paper's initial
    // (Table 3) HEAD-based revalidation on a pipelined connection.
    let cases = Strategy::PAPER_001
        .iter()
        .map(|&s| (s, Revalidation::default_for(s)))
        .chain([
            (Strategy::Http10, Revalidation::ConditionalGetHead),
            (Strategy::Pipeline, Revalidation::GetHead),
        ]);
    for (strategy, style) in cases {
        let cache = tempfile::tempdir().unwrap();
        let first = fetch(&url_of(PAGE), strategy, Some(cache.path()), false);
        assert_eq!(first.status_count(200), 43);
        let mut cfg = FetchConfig::new(url_of(PAGE), strategy);
        cfg.cache_dir = Some(cache.path().to_path_buf());
        cfg.revalidate = true;
        cfg.revalidation = style;
        let r = fetch_blocking(cfg).unwrap_or_else(|e| panic!("{strategy} {style}: {e}"));
        assert_eq!(r.revalidation, style);
        assert_eq!(r.objects.len(), 43, "{server} {strategy} {style}");
        let page_fetched = style == Revalidation::GetHead;
        assert!(
            r.objects.iter().all(|o| o.outcome
                == if page_fetched && o.kind == ObjectKind::Page {
                    Outcome::Fetched
                } else {
                    Outcome::NotModified
                }),
            "{server} {strategy} {style}: {:?}",
            r.objects
                .iter()
                .map(|o| (o.url.as_str(), o.status, o.outcome))
                .collect::<Vec<_>>()
        );
        let page_bytes = first.objects[0].size;
        assert_eq!(
            r.bytes.payload_bytes_received,
            if page_fetched { page_bytes } else { 0 },
            "{server} {strategy} {style}: only the unconditional page GET transfers a body"
        );
        assert_eq!(r.requests, 43);
        match style {
            Revalidation::GetHead | Revalidation::ConditionalGetHead => {
                // Paper 001: "one GET (HTML) and 42 HEAD requests (images)".
                assert_eq!(
                    r.requests_by_method.get(&RequestMethod::Get),
                    Some(&1),
                    "{server}"
                );
                assert_eq!(
                    r.requests_by_method.get(&RequestMethod::Head),
                    Some(&42),
                    "{server}"
                );
                let page_304 = u32::from(style == Revalidation::ConditionalGetHead);
                assert_eq!(r.status_count(304), page_304);
                let req = &r.objects[0].request_head;
                assert_eq!(
                    req.contains("If-Modified-Since"),
                    style == Revalidation::ConditionalGetHead,
                    "{req}"
                );
            }
            Revalidation::Conditional => {
                assert_eq!(r.status_count(304), 43, "{server} {strategy}");
                assert_eq!(r.requests_by_method.get(&RequestMethod::Get), Some(&43));
            }
        }
        // Bodies still match (they come from the cache or again).
        for (a, b) in first.objects.iter().zip(&r.objects) {
            assert_eq!((a.url.as_str(), &a.sha256), (b.url.as_str(), &b.sha256));
        }
    }
}

/// The libwww-1997 request profile: first-time requests of the page
/// average about 190 bytes (paper 001; here the Host header names a port,
/// 6 bytes more than the bench's).
#[test]
fn libwww_request_profile_is_paper_sized() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    for strategy in [Strategy::Http10, Strategy::Pipeline] {
        let mut cfg = FetchConfig::new(server.url(PAGE), strategy);
        cfg.request_profile = pagewire_client::RequestProfile::Libwww1997;
        let r = fetch_blocking(cfg).unwrap();
        assert_eq!(r.status_count(200), 43);
        let avg = r.bytes.header_bytes_sent as f64 / f64::from(r.requests);
        assert!(
            (185.0..=205.0).contains(&avg),
            "{strategy}: mean request {avg:.1} bytes"
        );
        let req = &r.objects[1].request_head;
        assert!(req.contains("Accept: image/gif\r\n"), "{req}");
        assert!(
            req.contains("User-Agent: W3CRobot/5.1 libwww/5.1\r\n"),
            "{req}"
        );
    }
}

/// The paper's initial robot (Table 3): no explicit flush, so the page
/// request waits for the flush timer.
#[test]
fn without_explicit_flush_the_page_request_waits_for_the_timer() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    let mut cfg = FetchConfig::new(server.url(PAGE), Strategy::Pipeline);
    cfg.explicit_flush = false;
    cfg.flush_after = std::time::Duration::from_millis(300);
    let r = fetch_blocking(cfg).unwrap();
    assert_eq!(r.status_count(200), 43);
    assert!(!r.explicit_flush);
    assert_eq!(r.flush_counts.get("explicit"), None, "{:?}", r.flush_counts);
    assert_eq!(r.flushes[0].reason, pagewire_client::FlushReason::Timer);
    assert!(r.flushes[0].at_ms >= 290.0, "{:?}", r.flushes[0]);
}

#[test]
fn nginx_every_strategy_fetches_every_object_byte_exact() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    check_all_strategies(&site, &|p| nginx.url(p), "nginx");
}

#[test]
fn pagewire_server_every_strategy_fetches_every_object_byte_exact() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    check_all_strategies(&site, &|p| server.url(p), "pagewire");
    // pipeline-deflate: pagewire serves the precompressed page; the robot
    // inflated it on the fly (the sha256 checks above are of the inflated
    // bytes) and received fewer body bytes than the page has.
    let r = fetch(&server.url(PAGE), Strategy::PipelineDeflate, None, false);
    let page = &r.objects[0];
    assert_eq!(page.content_encoding.as_deref(), Some("deflate"));
    assert!(
        page.body_bytes_received * 2 < page.size,
        "{} vs {}",
        page.body_bytes_received,
        page.size
    );
}

#[test]
fn nginx_revalidation_is_43_not_modified_without_bodies() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    check_revalidation(&|p| nginx.url(p), "nginx");
}

#[test]
fn pagewire_server_revalidation_is_43_not_modified_without_bodies() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    check_revalidation(&|p| server.url(p), "pagewire");
}

/// Paper 001 "Connection Management": a server that closes after 5
/// requests while more are pipelined. nginx answers the 5th with
/// `Connection: close` and drops the rest; the robot must re-send exactly
/// the unanswered ones, and nothing may be fetched twice.
#[test]
fn nginx_keepalive_requests_5_close_mid_pipeline_every_object_exactly_once() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "keepalive_requests 5;") else {
        return;
    };
    for strategy in [Strategy::Pipeline, Strategy::Http11] {
        let before = nginx.access_log(0).len();
        let r = fetch(&nginx.url(PAGE), strategy, None, false);
        assert_byte_exact(&site, &r, PAGE, 43);
        let log = nginx.access_log(before + 43);
        let mut count: HashMap<String, usize> = HashMap::new();
        for line in &log[before..] {
            let uri = line.split(' ').nth(1).unwrap().to_string();
            *count.entry(uri).or_default() += 1;
        }
        assert_eq!(count.len(), 43, "{strategy}: {count:?}");
        assert!(
            count.values().all(|&n| n == 1),
            "{strategy}: served twice: {count:?}"
        );
        // 43 requests at 5 per connection.
        assert_eq!(
            r.connections_opened, 9,
            "{strategy}: {:?}",
            r.requests_per_connection
        );
        assert!(r.connections.iter().all(|c| c.responses_received <= 5));
        if strategy == Strategy::Pipeline {
            assert!(
                r.retried_requests > 0,
                "pipelined requests past the 5th were re-sent"
            );
            // After a close, the new connection carries one request until it
            // has seen a response, then pipelines again.
            assert!(r.connections[1..].iter().any(|c| c.pipelined));
            for c in 1..r.connections_opened {
                let first = r.flushes.iter().find(|f| f.connection == c).unwrap();
                assert_eq!(first.reason, pagewire_client::FlushReason::Explicit);
                assert!(
                    first.bytes < 200,
                    "conn {c}: first write {} bytes, not one request",
                    first.bytes
                );
            }
        } else {
            assert_eq!(
                r.retried_requests, 0,
                "one at a time: nothing is ever unanswered"
            );
        }
    }
}

/// The same against pagewire's server closing after 5 requests without
/// warning (Apache 1.2b2's behaviour, `max_requests`).
#[test]
fn pagewire_server_max_requests_5_every_object_exactly_once() {
    let site = make_site();
    let cfg = pagewire_server::ServerConfig {
        max_requests: Some(5),
        ..pw_config()
    };
    let server = PwServer::start(site.root(), cfg);
    for strategy in [
        Strategy::Pipeline,
        Strategy::PipelineDeflate,
        Strategy::Http11,
    ] {
        let r = fetch(&server.url(PAGE), strategy, None, false);
        assert_byte_exact(&site, &r, PAGE, 43);
        assert!(
            r.connections_opened >= 9,
            "{strategy}: {:?}",
            r.requests_per_connection
        );
    }
}

#[test]
fn corrupt_cache_entries_are_ignored_with_a_warning() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    fetch(
        &nginx.url(PAGE),
        Strategy::Pipeline,
        Some(cache.path()),
        false,
    );
    // Damage two entries.
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    let victims = ["/images/solutions.gif", PAGE];
    for v in victims {
        let p = c.path_of(&nginx.url(v));
        if !p.exists() {
            continue;
        }
        let mut data = std::fs::read(&p).unwrap();
        let n = data.len();
        data[n - 1] ^= 0xff;
        std::fs::write(&p, data).unwrap();
    }
    let r = fetch(
        &nginx.url(PAGE),
        Strategy::Pipeline,
        Some(cache.path()),
        true,
    );
    assert_byte_exact(&site, &r, PAGE, 43);
    assert!(
        r.warnings.iter().any(|w| w.contains("corrupt")),
        "{:?}",
        r.warnings
    );
    // Damaged entries were fetched in full and the rest revalidated.
    assert!(
        r.status_count(200) >= 1 && r.status_count(304) >= 41,
        "{:?}",
        r.statuses
    );
    // And the cache is whole again.
    let r = fetch(
        &nginx.url(PAGE),
        Strategy::Pipeline,
        Some(cache.path()),
        true,
    );
    assert_eq!(r.status_count(304), 43);
}

/// `--prefetch`: nginx piggybacks a `Link: rel=prefetch` hint on the page;
/// the robot fetches the hinted object with `Sec-Purpose: prefetch` into the
/// cache, and not again once it is there.
#[test]
fn prefetch_hints_are_followed_into_the_cache() {
    let site = make_site();
    let Some(nginx) = Nginx::start(
        site.root(),
        r#"location = /index.html { add_header Link "</extra.html>; rel=prefetch, </x/go.gif>; rel=preload"; }"#,
    ) else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let mut cfg = FetchConfig::new(nginx.url(PAGE), Strategy::Pipeline);
    cfg.cache_dir = Some(cache.path().to_path_buf());
    cfg.prefetch = true;
    let r = fetch_blocking(cfg.clone()).unwrap();
    let pre: Vec<_> = r
        .objects
        .iter()
        .filter(|o| o.kind == ObjectKind::Prefetch)
        .collect();
    assert_eq!(pre.len(), 1, "{:?}", r.prefetch_hints);
    assert!(pre[0].url.ends_with(EXTRA_PAGE));
    assert_eq!(pre[0].sha256, site.sha(EXTRA_PAGE));
    let log = nginx.access_log(r.requests as usize);
    assert!(
        log.iter()
            .any(|l| l.starts_with("GET /extra.html 200") && l.contains("\"prefetch\"")),
        "{log:?}"
    );
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    let e = c
        .get(&nginx.url(EXTRA_PAGE))
        .unwrap()
        .expect("prefetched into the cache");
    assert!(e.meta.prefetched);
    // Second fetch: the hinted object is cached, so no new prefetch.
    let r = fetch_blocking(cfg).unwrap();
    assert_eq!(
        r.objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Prefetch)
            .count(),
        0
    );
}

/// "A 304 refreshes the entry, a 200 replaces it": one image changes on the
/// server between the fetches. Conditional GET gets a 200 for it; the
/// HTTP/1.0 robot's HEAD shows the change and it follows with a GET.
#[test]
fn changed_object_is_refetched_and_replaced_in_the_cache() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let changed = "/images/solutions.gif";
    for strategy in [Strategy::Http10, Strategy::Pipeline] {
        let cache = tempfile::tempdir().unwrap();
        fetch(&nginx.url(PAGE), strategy, Some(cache.path()), false);
        let file = site.root().join(changed.trim_start_matches('/'));
        let mut bytes = std::fs::read(&file).unwrap();
        bytes.extend_from_slice(b"changed");
        std::fs::write(&file, &bytes).unwrap();
        let new_sha = pagewire_client::cache::sha256_hex(&bytes);
        let r = fetch(&nginx.url(PAGE), strategy, Some(cache.path()), true);
        let o = r.objects.iter().find(|o| o.url.ends_with(changed)).unwrap();
        assert_eq!(o.status, 200, "{strategy}");
        assert_eq!(o.sha256, new_sha, "{strategy}");
        // HTTP/1.0 (libwww 4.1D) fetches the page again unconditionally.
        let page_again = usize::from(strategy == Strategy::Http10);
        assert_eq!(
            r.objects
                .iter()
                .filter(|o| o.outcome == Outcome::NotModified)
                .count(),
            42 - page_again
        );
        if strategy == Strategy::Http10 {
            assert_eq!(o.outcome, Outcome::Changed);
            assert_eq!(r.requests_by_method.get(&RequestMethod::Head), Some(&42));
            assert_eq!(r.requests_by_method.get(&RequestMethod::Get), Some(&2));
        } else {
            assert_eq!(r.status_count(304), 42);
        }
        // The cache now holds the new version: all 43 revalidate.
        let r = fetch(&nginx.url(PAGE), strategy, Some(cache.path()), true);
        assert_eq!(
            r.objects
                .iter()
                .filter(|o| o.outcome == Outcome::NotModified)
                .count(),
            43 - page_again
        );
        // Restore for the next strategy.
        bytes.truncate(bytes.len() - 7);
        std::fs::write(&file, &bytes).unwrap();
    }
}

/// `flush_at_page_end`: the last batch leaves when the page has been
/// parsed instead of waiting for the 50 ms timer.
#[test]
fn flush_at_page_end_replaces_the_last_timer_flush() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let mut cfg = FetchConfig::new(nginx.url(PAGE), Strategy::Pipeline);
    cfg.flush_after = std::time::Duration::from_secs(5);
    cfg.flush_at_page_end = true;
    let r = fetch_blocking(cfg).unwrap();
    assert_eq!(r.objects.len(), 43);
    assert_eq!(r.flush_counts.get("timer"), None, "{:?}", r.flush_counts);
    assert_eq!(r.flush_counts.get("explicit"), Some(&2));
    // Relative to the event the option removes, not a wall-clock budget:
    // the fetch took less than one 5 s timer wait.
    assert!(r.total_ms < 5000.0, "{} ms", r.total_ms);
}

/// `--save` writes the objects like `wget -p`, byte-exact; `--har` is a
/// HAR 1.2 log with one entry per object.
#[test]
fn save_and_har_outputs() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let mut cfg = FetchConfig::new(nginx.url(PAGE), Strategy::Pipeline);
    cfg.keep_bodies = true;
    let started = std::time::Instant::now();
    let r = fetch_blocking(cfg).unwrap();
    let whole_ms = started.elapsed().as_secs_f64() * 1000.0;
    let out = tempfile::tempdir().unwrap();
    let saved = pagewire_client::save::save(&r, out.path()).unwrap();
    assert_eq!(saved.files.len(), 43);
    assert!(saved.skipped.is_empty(), "{:?}", saved.skipped);
    let host_dir = out.path().join(nginx.addr.to_string());
    for (path, bytes) in &site.files {
        if path == PAGE || path.starts_with("/images/") {
            let f = host_dir.join(path.trim_start_matches('/'));
            assert_eq!(&std::fs::read(&f).unwrap(), bytes, "{}", f.display());
        }
    }
    let har: serde_json::Value =
        serde_json::from_str(&pagewire_client::har::to_har_string(&r)).unwrap();
    har_schema::check(&har);
    let log = &har["log"];
    assert_eq!(log["version"], "1.2");
    let entries = log["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 43);
    for e in entries {
        assert_eq!(e["request"]["method"], "GET");
        assert_eq!(e["response"]["status"], 200);
        assert!(e["request"]["headers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"] == "Host"));
        assert!(e["startedDateTime"].as_str().unwrap().ends_with('Z'));
        // HAR 1.2: `time` is the sum of the timings that apply (blocked,
        // dns, connect, send, wait, receive; -1 = does not apply, and ssl is
        // already inside connect); a response cannot arrive before its
        // request, so wait is >= 0; the whole fetch bounds every entry.
        let t = e["time"].as_f64().unwrap();
        let timings = &e["timings"];
        let get = |k: &str| timings[k].as_f64().unwrap_or(-1.0);
        let (wait, receive) = (get("wait"), get("receive"));
        let sum: f64 = ["blocked", "dns", "connect", "send", "wait", "receive"]
            .iter()
            .map(|k| get(k).max(0.0))
            .sum();
        assert!(
            (t - sum).abs() < 1e-6,
            "time {t} is not the sum {sum} of the timings {timings}"
        );
        assert!(wait >= 0.0 && receive >= 0.0, "{timings}");
        assert!(
            t <= whole_ms,
            "entry time {t} ms > the whole fetch {whole_ms} ms"
        );
    }
}

/// Paper 001's bad case: the server closes both halves after 5 responses
/// while pipelined requests are arriving; its TCP answers them with RST,
/// which can destroy responses already sent. The robot must still end with
/// every object, byte-exact, by re-sending whatever it did not receive.
#[test]
fn pagewire_server_abrupt_close_after_5_still_gets_every_object() {
    let site = make_site();
    let cfg = pagewire_server::ServerConfig {
        max_requests: Some(5),
        close: pagewire_server::ClosePolicy::Abrupt,
        ..pw_config()
    };
    let server = PwServer::start(site.root(), cfg);
    for strategy in [Strategy::Pipeline, Strategy::PipelineDeflate] {
        let r = fetch(&server.url(PAGE), strategy, None, false);
        assert_byte_exact(&site, &r, PAGE, 43);
        assert!(r.retried_requests > 0, "{strategy}");
    }
}
