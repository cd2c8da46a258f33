//! What a connection sees of the server: the state shared by all workers
//! (`Shared`) and its own worker thread's state (`Worker`). Both the accept
//! loop (`worker`) and the connection loop (`dispatch`) depend on this
//! module, and not on each other's: `worker` spawns `dispatch::run_conn`,
//! `dispatch` never reaches back into `worker`.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};

use pagewire_prefetch::OnlinePredictor;

use crate::answer::Handler;
use crate::io::Pools;
use crate::log::LogBuffer;
use crate::park::Park;
use crate::policy::ServerConfig;
use crate::registry::Registry;
use crate::stats::{ServerStats, WorkerStats};

/// State shared by all workers.
pub(crate) struct Shared {
    pub handler: Handler,
    pub config: ServerConfig,
    pub registry: Registry,
    pub predictor: Option<OnlinePredictor>,
    /// `config.max_conns`, or the cap derived from the open-files limit.
    pub max_conns: usize,
    /// Every worker's counters, added here (`ServerStats::add`, the one
    /// place counters are summed) when the worker stops.
    pub totals: Mutex<ServerStats>,
}

/// One worker thread's state, shared by its connections through `Rc`.
pub(crate) struct Worker {
    pub shared: Arc<Shared>,
    pub stats: WorkerStats,
    pub pools: Pools,
    pub log: RefCell<Option<LogBuffer>>,
    pub(crate) conns: Cell<usize>,
    pub(crate) all_closed: tokio::sync::Notify,
    /// Connections refused at the cap still lingering.
    pub(crate) refusing: Cell<usize>,
    /// Idle keep-alive connections that are not tasks (`park`).
    pub(crate) park: Park,
}

impl Worker {
    /// Needs a runtime with I/O (the park's epoll is registered with it).
    pub fn new(shared: Arc<Shared>, log: Option<LogBuffer>) -> std::io::Result<Worker> {
        Ok(Worker {
            park: Park::new(crate::park::PARK_AFTER)?,
            shared,
            stats: WorkerStats::default(),
            pools: Pools::default(),
            log: RefCell::new(log),
            conns: Cell::new(0),
            all_closed: tokio::sync::Notify::new(),
            refusing: Cell::new(0),
        })
    }

    #[cfg(test)]
    pub fn new_for_test(shared: Arc<Shared>, stats: WorkerStats, pools: Pools) -> Worker {
        Worker {
            park: Park::new(std::time::Duration::ZERO).expect("park epoll"),
            shared,
            stats,
            pools,
            log: RefCell::new(None),
            conns: Cell::new(1),
            all_closed: tokio::sync::Notify::new(),
            refusing: Cell::new(0),
        }
    }

    pub fn conn_closed(&self) {
        self.conns.set(self.conns.get() - 1);
        if self.conns.get() == 0 {
            self.all_closed.notify_one();
        }
    }
}
