//! The robot: a page-fetching client with the transfer strategies of paper
//! 001 (Nielsen et al., "Network Performance Effects of HTTP/1.1, CSS1, and
//! PNG"), modelled on the libwww robot used there.
//!
//! ```no_run
//! use pagewire_client::{fetch_blocking, FetchConfig, Strategy};
//! let report = fetch_blocking(FetchConfig::new("http://127.0.0.1:8080/", Strategy::Pipeline))?;
//! println!("{} objects in {:.1} ms", report.objects.len(), report.total_ms);
//! # Ok::<(), pagewire_client::FetchError>(())
//! ```
//!
//! Layout: `config` (what to do), `session` (what bytes mean: objects,
//! requests, responses, discovery, counters; a module per part of the
//! exchange and per strategy behaviour, no socket, no clock, the cache
//! entries to write handed back at the end, owned by one task and changed
//! by `&mut`), `conn` (when bytes move: `conn::Machine`, one connection
//! without its socket — events in, effects out, `next_deadline()` — and
//! `conn::run`, the one task that owns the session, the machines and their
//! sockets; output buffer, early-close recovery), `outbuf` (the flush
//! policy), `multiplex` (the `h2` and `h3` strategies: one TLS or QUIC
//! connection, a stream per object), `cache`, `inflate`, `report` (+ `har`,
//! `save` for output).

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]

pub mod cache;
pub mod config;
mod conn;
pub mod error;
pub mod getall;
pub mod har;
pub mod inflate;
mod multiplex;
pub mod outbuf;
pub mod report;
pub mod save;
mod session;
mod store;

use std::net::SocketAddr;

pub use cache::Cache;
pub use config::{
    ConnectTo, FetchConfig, HostCost, RequestProfile, Revalidation, Strategy, Target, Timeouts,
};
pub use error::FetchError;
pub use multiplex::H2_WINDOW;
pub use outbuf::FlushReason;
pub use pagewire_discover::Viewport;
pub use report::{
    ConnEnd, CrossOriginRecord, FetchReport, ObjectKind, ObjectRecord, Outcome, RequestMethod,
};
pub use session::prefetch_links;

use session::Session;

/// Fetches the page at `config.url` and its same-server embedded objects,
/// following up to `config.max_redirects` redirects of the page.
pub async fn fetch(mut config: FetchConfig) -> Result<FetchReport, FetchError> {
    let mut chain = Vec::new();
    // Bounded: at most MAX_REDIRECTS + 1 fetches (validated).
    loop {
        let max = config.max_redirects;
        let mut report = fetch_one(config.clone()).await?;
        let Some(location) = report.page_redirect() else {
            report.redirects = chain;
            return Ok(fetch_cross_origin(report, &config).await);
        };
        if chain.len() >= max {
            // Say which chain stopped where: the URLs
            // followed, the one that redirected again, and where to.
            let mut hops: Vec<&str> = chain.iter().map(String::as_str).collect();
            hops.push(&report.url);
            report.warnings.push(format!(
                "redirect not followed after {max} redirects (--max-redirects {max}): {} -> {location}",
                hops.join(" -> ")
            ));
            report.redirects = chain;
            return Ok(fetch_cross_origin(report, &config).await);
        }
        let from = report.url.clone();
        let next = pagewire_discover::resolve(&from, &location)
            .filter(|u| {
                // The strategy's scheme only: http for HTTP/1.x, https for
                // h2 and h3.
                config::Target::parse(u).is_ok_and(|t| t.tls == config.strategy.multiplexed())
            })
            .ok_or_else(|| {
                let scheme = if config.strategy.multiplexed() { "https" } else { "plain http" };
                FetchError::object(
                    &from,
                    format!(
                        "the server redirected to {location:?}, which the robot cannot follow ({scheme} URLs only with strategy {})",
                        config.strategy
                    ),
                )
            })?;
        if next == from || chain.contains(&next) {
            return Err(FetchError::object(
                &from,
                format!("the server redirected in a loop (to {next})"),
            ));
        }
        chain.push(from);
        config.url = next;
    }
}

/// Most references to other origins fetched for one page
/// (`FetchConfig::cross_origin`); the rest are warned about.
pub const MAX_CROSS_ORIGIN_FETCHES: usize = 256;

/// With `FetchConfig::cross_origin`: each reference to another origin,
/// fetched alone (no discovery in it, no redirects), in the order found;
/// failures become warnings.
async fn fetch_cross_origin(mut report: FetchReport, config: &FetchConfig) -> FetchReport {
    if !config.cross_origin {
        return report;
    }
    let refs: Vec<String> = report.cross_origin.iter().map(|c| c.url.clone()).collect();
    if refs.len() > MAX_CROSS_ORIGIN_FETCHES {
        report.warnings.push(format!(
            "{} cross-origin references: only the first {MAX_CROSS_ORIGIN_FETCHES} were fetched",
            refs.len()
        ));
    }
    for url in refs.into_iter().take(MAX_CROSS_ORIGIN_FETCHES) {
        let mut cfg = config.clone();
        cfg.url = url.clone();
        cfg.discover = false;
        cfg.cross_origin = false;
        cfg.prefetch = false;
        cfg.revalidate = config.revalidate && config.cache_dir.is_some();
        cfg.max_redirects = 0;
        match fetch_one(cfg).await {
            Ok(r) => report.cross_origin_fetches.push(r),
            Err(e) => report
                .warnings
                .push(format!("cross-origin {url} not fetched: {e}")),
        }
    }
    report
}

/// One fetch of one page URL (no redirects followed).
async fn fetch_one(config: FetchConfig) -> Result<FetchReport, FetchError> {
    let target = config.validate()?;
    let cache = config.cache_dir.as_deref().map(Cache::open).transpose()?;
    // The session reads no file: the entries it may look up are read here,
    // and what it writes is done by `store`.
    let snapshot = cache.as_ref().map(Cache::snapshot);
    let mut store = store::Store::new(cache.clone(), config.save_dir.clone());
    let addr = lookup(&target, &config).await?;
    let total = config.timeouts.total;
    let mut sess = Session::new(
        config,
        target,
        addr,
        (snapshot, cache.clone()),
        (std::time::Instant::now(), std::time::SystemTime::now()),
    );
    // The session is owned by this task alone; the strategies' drivers
    // borrow it while they run.
    let work = async {
        if sess.cfg.strategy.multiplexed() {
            multiplex::run(&mut sess, &mut store).await
        } else {
            conn::run(&mut sess, &mut store).await
        }
    };
    let done = tokio::time::timeout(total, work).await;
    match done {
        Ok(r) => r?,
        Err(_) => return Err(FetchError::TotalTimeout(total, sess.waiting_for())),
    }
    let (mut report, writes) = sess.finish();
    // After the network work, so disk time never delays a request.
    store.finish(writes, &mut report);
    Ok(report)
}

/// Does the writes `sess` asked for since the last call (the drivers call
/// this after every event they hand the session).
fn drain_writes(sess: &mut Session, store: &mut store::Store) {
    store.apply_all(sess.take_writes());
}

/// `fetch` on a current-thread runtime built for the call: usable from a
/// plain thread (e.g. one that entered a network namespace).
pub fn fetch_blocking(config: FetchConfig) -> Result<FetchReport, FetchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| FetchError::Io {
            what: "cannot build a tokio runtime".into(),
            source,
        })?;
    rt.block_on(fetch(config))
}

async fn lookup(target: &Target, config: &FetchConfig) -> Result<SocketAddr, FetchError> {
    let fail = |reason: String| FetchError::Connect {
        addr: format!("{}:{}", target.host, target.port),
        reason,
    };
    if let Some(rule) = config
        .connect_to
        .iter()
        .find(|r| r.matches(&target.host, target.port))
    {
        return Ok(rule.addr);
    }
    let q = tokio::net::lookup_host((target.host.as_str(), target.port));
    let mut addrs = tokio::time::timeout(config.timeouts.connect, q)
        .await
        .map_err(|_| fail("name lookup timed out".into()))?
        .map_err(|e| fail(format!("name lookup failed: {e}")))?;
    addrs
        .next()
        .ok_or_else(|| fail("name has no addresses".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench spawns fetches on runtimes of its own; the future must be
    /// `Send` and the report must cross threads.
    #[test]
    fn fetch_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let f = fetch(FetchConfig::new("http://127.0.0.1:9/", Strategy::Pipeline));
        assert_send(&f);
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<FetchReport>();
    }
}
