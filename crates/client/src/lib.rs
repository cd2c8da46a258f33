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
//! entries to write handed back at the end), `conn` (when bytes move: `conn::Machine`,
//! one connection without its socket — events in, effects out,
//! `next_deadline()` — and `conn::drive`, its socket; output buffer,
//! early-close recovery), `outbuf` (the flush
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

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

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

use conn::{drive, End, Plan, Sink};
use session::{ObjId, Session, PAGE};

/// Requests sent for one object at most (first try plus re-sends after
/// early closes) under HTTP/1.0, where each try is its own connection.
const MAX_ATTEMPTS_PER_OBJECT: u32 = 4;

/// Persistent strategies give up after this many reconnections in a row
/// that got no response at all (a server that accepts and closes).
const MAX_FRUITLESS_RECONNECTS: usize = 3;

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
    // The session reads no file: the entries it may look up are read here.
    let snapshot = cache.as_ref().map(Cache::snapshot).unwrap_or_default();
    let addr = lookup(&target, &config).await?;
    let total = config.timeouts.total;
    let sess = Arc::new(Session::new(
        config,
        target,
        addr,
        cache,
        snapshot,
        std::time::Instant::now(),
    ));
    let work = async {
        match sess.cfg.strategy {
            Strategy::Http10 => run_http10(Arc::clone(&sess)).await,
            s if s.multiplexed() => multiplex::run(Arc::clone(&sess)).await,
            _ => run_persistent(&sess).await,
        }
    };
    match tokio::time::timeout(total, work).await {
        Ok(r) => r?,
        Err(_) => return Err(FetchError::TotalTimeout(total, sess.waiting_for())),
    }
    let (mut report, writes) = sess.finish();
    if let Some(cache) = &sess.cache {
        // After the network work, so disk time never delays a request.
        for w in writes {
            if let Err(e) = w.apply(cache) {
                report.warnings.push(e.to_string());
            }
        }
        report.cache_bytes_written = cache.bytes_written();
    }
    Ok(report)
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

/// http11 / pipeline / pipeline-deflate: one persistent connection at a time;
/// a new one only when the server closed the previous one early.
async fn run_persistent(sess: &Session) -> Result<(), FetchError> {
    let mut queue: VecDeque<ObjId> = VecDeque::from([PAGE]);
    let pipeline = sess.cfg.strategy.pipelines();
    let mut reconnects = 0usize;
    let mut fruitless = 0usize;
    let mut first = true;
    // Bounded by max_reconnects and MAX_FRUITLESS_RECONNECTS.
    loop {
        let plan = Plan {
            pipeline,
            cautious: !first,
        };
        match drive(sess, &mut queue, plan, &Sink::Own).await? {
            End::Done => return Ok(()),
            End::Closed {
                unanswered,
                answered,
                how,
            } => {
                // Unanswered requests go first, in their original order.
                for id in unanswered.into_iter().rev() {
                    queue.push_front(id);
                }
                if queue.is_empty() {
                    return Ok(());
                }
                fruitless = if answered == 0 { fruitless + 1 } else { 0 };
                reconnects += 1;
                if fruitless >= MAX_FRUITLESS_RECONNECTS || reconnects > sess.cfg.max_reconnects {
                    return Err(FetchError::TooManyReconnects {
                        reconnects,
                        url: sess.url_of(queue[0]),
                        last: how,
                    });
                }
            }
        }
        first = false;
    }
}

/// http10: one request per connection, at most `max_conns` connections at
/// once; the page's connection streams references to this dispatcher as
/// the parser finds them.
async fn run_http10(sess: Arc<Session>) -> Result<(), FetchError> {
    let permits = Arc::new(Semaphore::new(sess.cfg.max_conns));
    let (tx, mut rx) = mpsc::unbounded_channel::<ObjId>();
    let mut pending: VecDeque<ObjId> = VecDeque::from([PAGE]);
    let mut tasks: JoinSet<Result<(), FetchError>> = JoinSet::new();
    // Bounded: every object is dispatched at most MAX_ATTEMPTS_PER_OBJECT
    // times, and the object table is bounded (discover::MAX_REFERENCES).
    loop {
        while let Ok(id) = rx.try_recv() {
            pending.push_back(id);
        }
        while !pending.is_empty() {
            let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                break;
            };
            let id = pending.pop_front().expect("non-empty");
            let (s, tx) = (Arc::clone(&sess), tx.clone());
            tasks.spawn(async move {
                let _permit = permit;
                one_request(&s, id, tx).await
            });
        }
        if tasks.is_empty() && pending.is_empty() {
            let more = sess.take_prefetch_work();
            if more.is_empty() {
                return Ok(());
            }
            pending.extend(more);
            continue;
        }
        tokio::select! {
            Some(id) = rx.recv() => pending.push_back(id),
            Some(done) = tasks.join_next() => match done {
                Ok(r) => r?,
                Err(e) => {
                    return Err(FetchError::Config(format!("connection task failed: {e}")));
                }
            },
        }
    }
}

/// One HTTP/1.0 exchange (re-tried on a new connection if the server
/// closed without answering).
async fn one_request(
    sess: &Session,
    id: ObjId,
    tx: mpsc::UnboundedSender<ObjId>,
) -> Result<(), FetchError> {
    let sink = Sink::Channel(tx);
    let mut queue = VecDeque::from([id]);
    let plan = Plan {
        pipeline: false,
        cautious: false,
    };
    let mut last = String::new();
    for _ in 0..MAX_ATTEMPTS_PER_OBJECT {
        match drive(sess, &mut queue, plan, &sink).await? {
            End::Done => return Ok(()),
            End::Closed {
                unanswered, how, ..
            } => {
                last = how;
                queue.extend(unanswered);
                if queue.is_empty() {
                    return Ok(());
                }
            }
        }
    }
    Err(FetchError::TooManyReconnects {
        reconnects: MAX_ATTEMPTS_PER_OBJECT as usize,
        url: sess.url_of(id),
        last,
    })
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
