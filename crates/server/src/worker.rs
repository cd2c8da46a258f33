//! Worker threads: each runs a single-threaded tokio runtime with a
//! `LocalSet`, accepts on its own handle of the shared listener, and owns
//! its connections, counters, buffer pools and access-log buffer (no locks or
//! atomics between connections of one worker).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use pagewire_prefetch::OnlinePredictor;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::handler::StaticSite;
use crate::io::Pools;
use crate::log::LogBuffer;
use crate::policy::ServerConfig;
use crate::registry::Registry;
use crate::stats::{bump, ServerStats, WorkerStats};

/// Back-off after a failed accept (EMFILE, ENFILE, ENOBUFS): the error is
/// usually transient, and retrying at once would spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(10);
/// While at `max_conns` with nothing idle to evict, re-check this often.
const FULL_RECHECK: Duration = Duration::from_millis(50);
/// How often a worker hands its access-log lines to the writer thread.
const LOG_HANDOVER_INTERVAL: Duration = Duration::from_secs(1);

/// State shared by all workers.
pub(crate) struct Shared {
    pub site: StaticSite,
    pub config: ServerConfig,
    pub registry: Registry,
    pub predictor: Option<OnlinePredictor>,
}

/// One worker thread's state, shared by its connections through `Rc`.
pub(crate) struct Worker {
    pub shared: Arc<Shared>,
    pub stats: WorkerStats,
    pub pools: Pools,
    pub log: RefCell<Option<LogBuffer>>,
    conns: Cell<usize>,
    all_closed: tokio::sync::Notify,
}

impl Worker {
    #[cfg(test)]
    pub fn new_for_test(shared: Arc<Shared>, stats: WorkerStats, pools: Pools) -> Worker {
        Worker {
            shared,
            stats,
            pools,
            log: RefCell::new(None),
            conns: Cell::new(1),
            all_closed: tokio::sync::Notify::new(),
        }
    }

    pub fn conn_closed(&self) {
        self.conns.set(self.conns.get() - 1);
        if self.conns.get() == 0 {
            self.all_closed.notify_one();
        }
    }
}

/// Runs one worker until `stop` says so and its connections are closed.
pub(crate) fn run(
    shared: Arc<Shared>,
    listener: std::net::TcpListener,
    stop: watch::Receiver<bool>,
    log_tx: Option<SyncSender<Vec<u8>>>,
) -> std::io::Result<ServerStats> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = TcpListener::from_std(listener)?;
        let w = Rc::new(Worker {
            shared,
            stats: WorkerStats::default(),
            pools: Pools::default(),
            log: RefCell::new(log_tx.map(LogBuffer::new)),
            conns: Cell::new(0),
            all_closed: tokio::sync::Notify::new(),
        });
        if w.log.borrow().is_some() {
            let w2 = w.clone();
            let mut stop2 = stop.clone();
            tokio::task::spawn_local(async move {
                let mut tick = tokio::time::interval(LOG_HANDOVER_INTERVAL);
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stop2.changed() => break,
                    }
                    if let Some(log) = w2.log.borrow_mut().as_mut() {
                        let dropped = log.hand_over();
                        bump(&w2.stats.log_dropped, dropped);
                    }
                }
            });
        }
        accept_loop(&w, &listener, stop).await;
        drop(listener);
        while w.conns.get() > 0 {
            w.all_closed.notified().await;
        }
        if let Some(log) = w.log.borrow_mut().take() {
            log.finish();
        }
        let mut stats = ServerStats::default();
        stats.add(&w.stats);
        Ok(stats)
    })
}

async fn accept_loop(w: &Rc<Worker>, listener: &TcpListener, mut stop: watch::Receiver<bool>) {
    let registry = &w.shared.registry;
    let max_conns = w.shared.config.max_conns.max(1);
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => return,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(_) => {
                tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                continue;
            }
        };
        // At the limit: close the least recently active idle connection
        // (paper 003 §4); if none is idle, this connection waits (and so does
        // the kernel's accept queue behind it).
        if registry.effective_open() >= max_conns && !registry.evict_oldest_idle() {
            loop {
                tokio::select! {
                    _ = registry.freed.notified() => {}
                    _ = tokio::time::sleep(FULL_RECHECK) => {}
                    _ = stop.changed() => return,
                }
                if registry.effective_open() < max_conns || registry.evict_oldest_idle() {
                    break;
                }
            }
        }
        if !w.shared.config.nagle {
            // Paper 001, "Nagle Interaction": a server that buffers its own
            // output must not also be delayed by Nagle's algorithm.
            let _ = stream.set_nodelay(true);
        }
        w.conns.set(w.conns.get() + 1);
        bump(&w.stats.connections, 1);
        tokio::task::spawn_local(crate::dispatch::run_conn(w.clone(), stream, peer));
    }
}
