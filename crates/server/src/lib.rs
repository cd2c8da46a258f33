//! The pagewire origin server: a static HTTP/1.1 server built for
//! pipelining, exact in the buffering and closing behaviour paper 001
//! measured.
//!
//! Cut like hyper's `proto/h1` (the HTTP/1 connection of the hyper crate):
//!
//! | module     | what                                                            |
//! |------------|-----------------------------------------------------------------|
//! | `policy`   | flush / close / limit policies and their constants              |
//! | `io`       | output queue (one `writev` per flush), buffer pools             |
//! | `dispatch` | the connection loop: read, answer in order, flush, close        |
//! | `answer`   | [`Handler`]: which handler answers (static site or recorded)    |
//! | `handler`  | the static handler: what the bytes of a response are            |
//! | `getall`   | GETALL / GETLIST answers (paper 003), one multipart response     |
//! | `objpack`  | object packages of the pages (paper 002), chosen by `Accept`     |
//! | `replay`   | a recorded site (WARC/HAR) answered by method, Host and target  |
//! | `respond`  | what every handler's responses are made of: context, fields,    |
//! |            | small responses, preconditions                                  |
//! | `negotiate`, `range`, `target` | Accept-Encoding, Range, request targets     |
//! | `registry` | open connections, deadlines (sweeper), eviction at max_conns    |
//! | `worker`   | one single-threaded runtime per thread, the accept loop         |
//! | `context`  | `Shared` (all workers) and `Worker` (one thread) state          |
//! | `park`     | idle keep-alive connections off the runtime; its task runs in   |
//! |            | a `park::Host` (the worker, implemented in `dispatch`)          |
//! | `log`, `stats`, `time` | access log, counters, cached dates               |
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use std::sync::Arc;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let site = Arc::new(pagewire_site::store::Site::from_dir("site").map_err(std::io::Error::other)?);
//! let stats = pagewire_server::serve(listener, site, Default::default(), async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! println!("{stats}");
//! # Ok(()) }
//! ```

mod answer;
mod context;
mod dispatch;
pub mod getall;
pub mod handler;
mod hpack;
mod io;
mod log;
pub mod modern;
pub use modern::http2;
pub mod negotiate;
pub mod objpack;
mod os;
mod park;
pub mod policy;
pub mod range;
mod registry;
pub mod replay;
mod respond;
mod stats;
pub mod target;
pub mod time;
mod worker;

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use pagewire_prefetch::OnlinePredictor;
use tokio::net::TcpListener;

pub use answer::Handler;
pub use modern::{serve_tls, TlsServe};
pub use os::{cpu_times, fd_budget, FdBudget};
pub use policy::{ClosePolicy, FlushPolicy, FlushReason, Linger, ServerConfig};
pub use registry::INCOMPLETE_HEAD_EVICT_MS;
pub use stats::ServerStats;

use crate::context::Shared;
use crate::policy::SWEEP_INTERVAL;
use crate::registry::{Deadlines, Registry};

/// Serves `handler` (an `Arc<Site>`, or a recorded site: [`Handler`]) on an
/// already-bound `listener` until `shutdown` completes,
/// then stops accepting, lets open connections finish (idle ones close at
/// once, busy ones within `policy::SHUTDOWN_GRACE`) and returns the counters.
///
/// Runs `config.threads` worker threads, each with its own single-threaded
/// runtime; the caller's runtime only waits.
pub async fn serve<F>(
    listener: TcpListener,
    handler: impl Into<Handler>,
    config: ServerConfig,
    shutdown: F,
) -> std::io::Result<ServerStats>
where
    F: Future<Output = ()>,
{
    let handler = handler.into();
    let started = Instant::now();
    let cpu_before = cpu_times();
    let budget = fd_budget();
    let max_conns = config.max_conns.unwrap_or(budget.max_conns).max(1);

    let access_log = match &config.access_log {
        Some(path) => Some(log::AccessLog::create(path)?),
        None => None,
    };
    // SIGUSR1 reopens the access log by name (log rotation, as nginx).
    let reopen_task = match &access_log {
        Some(log) => {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()) {
                Ok(mut sig) => {
                    let r = log.reopener();
                    Some(tokio::spawn(async move {
                        while sig.recv().await.is_some() {
                            r.reopen();
                        }
                    }))
                }
                Err(e) => {
                    eprintln!("pagewire: SIGUSR1 will not reopen the access log: {e}");
                    None
                }
            }
        }
        None => None,
    };
    let predictor = config.prefetch.map(OnlinePredictor::new);
    let threads = config.threads.max(1);
    let shared = Arc::new(Shared {
        handler,
        registry: Registry::new(Deadlines {
            idle: config.idle_timeout,
            header: config.header_timeout,
            send: config.send_timeout,
            body: config.body_timeout,
            grace: policy::SHUTDOWN_GRACE,
        }),
        config,
        predictor,
        max_conns,
        totals: Default::default(),
    });

    let std_listener = listener.into_std()?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut results = Vec::with_capacity(threads);
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let l = std_listener.try_clone()?;
        let shared = shared.clone();
        let stop = stop_rx.clone();
        let log_tx = access_log.as_ref().map(log::AccessLog::sender);
        let (tx, rx) = tokio::sync::oneshot::channel();
        results.push(rx);
        handles.push(
            std::thread::Builder::new()
                .name(format!("pagewire-worker-{i}"))
                .spawn(move || {
                    let _ = tx.send(worker::run(shared, l, stop, log_tx));
                })?,
        );
    }
    drop(std_listener);

    let sweeper_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeper = {
        let shared = shared.clone();
        let done = sweeper_done.clone();
        std::thread::Builder::new()
            .name("pagewire-sweeper".into())
            .spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    std::thread::sleep(SWEEP_INTERVAL);
                    shared.registry.sweep();
                }
            })?
    };

    shutdown.await;
    shared.registry.begin_shutdown();
    let _ = stop_tx.send(true);

    let mut first_error = None;
    for rx in results {
        match rx.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(std::io::Error::other("worker thread panicked"));
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
    sweeper_done.store(true, std::sync::atomic::Ordering::Release);
    let _ = sweeper.join();
    if let Some(t) = reopen_task {
        t.abort();
        let _ = t.await;
    }
    if let Some(log) = access_log {
        log.finish()?;
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let mut stats = std::mem::take(&mut *shared.totals.lock().expect("totals lock"));
    stats.peak_connections = shared.registry.peak() as u64;
    let cpu_after = cpu_times();
    stats.cpu_user_seconds = cpu_after.0 - cpu_before.0;
    stats.cpu_system_seconds = cpu_after.1 - cpu_before.1;
    stats.wall_seconds = started.elapsed().as_secs_f64();
    Ok(stats)
}
