//! Parked connections: a keep-alive connection idle for `PARK_AFTER` stops
//! being a task.
//!
//! A waiting connection task costs about a kilobyte however little it holds:
//! the task (its header and the connection's future, ~700 bytes) and the
//! runtime's registration of its socket. A parked connection is only its
//! socket, its registry slot, and a 24-byte entry here: its task ends, the
//! socket leaves the runtime's epoll for this worker's own "park" epoll (one
//! shot, for input or a hang-up), and when the socket becomes readable — the
//! next request, the client's FIN, or the sweeper's `shutdown(SHUT_RD)` at
//! the idle timeout, an eviction or the server's shutdown — a new task takes
//! it up where it was left. The registry slot stays (same fd, same phase,
//! same idle-since time), so deadlines and eviction see no difference.
//!
//! Only connections idle for `PARK_AFTER` (1 s) are parked: a keep-alive
//! client sending its next request within a second, as a browser or a load
//! generator does, never pays the four `epoll_ctl` calls of a park and a
//! resume.
//!
//! The park names no connection code: the worker it runs in is a [`Host`]
//! (`context::Worker`, implemented beside the connection loop in
//! `dispatch`, which takes a resumed connection up). So the worker's state
//! can hold a `Park` while the park task resumes connections, without the
//! three modules depending on each other in a circle.

use std::cell::{Cell, RefCell};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::Duration;

use rustix::event::epoll;
use slab::Slab;
use tokio::io::unix::AsyncFd;

use crate::registry::SlotRef;

/// How long a keep-alive connection waits as a task before it is parked.
pub const PARK_AFTER: Duration = Duration::from_secs(1);

/// After this many connections parked since the last time, the freed task
/// memory is handed back to the system (`malloc_trim`) at the next tick.
const TRIM_AFTER_PARKED: usize = 256;

/// Buffers of each kind the worker's pool keeps when it is shrunk after
/// many parks.
const POOL_KEEP_AFTER_PARKS: usize = 16;

/// What a parked connection keeps.
pub(crate) struct Parked {
    pub stream: std::net::TcpStream,
    /// Its registry slot and key (still registered).
    pub slot: SlotRef,
    /// Responses written on it so far.
    pub served: u64,
}

/// One worker's parked connections.
pub(crate) struct Park {
    /// Counts the ticks (every `park_after`); at each, the waiting idle
    /// connection tasks registered in `wakers` are woken to check how long
    /// they have been idle.
    pub epoch: Cell<u32>,
    pub wakers: RefCell<Vec<std::task::Waker>>,
    /// Idle time after which a connection is parked.
    pub park_after: Duration,
    epoll: AsyncFd<OwnedFd>,
    parked: RefCell<Slab<Parked>>,
    parked_since_trim: Cell<usize>,
    /// Connections parked and resumed so far.
    pub parks: Cell<u64>,
    pub resumes: Cell<u64>,
}

impl Park {
    /// A park with its own epoll instance (needs a runtime with I/O).
    pub fn new(park_after: Duration) -> io::Result<Park> {
        let fd = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        // SAFETY: an `OwnedFd` is a valid open descriptor, owned by the
        // `AsyncFd` (and so never closed or replaced) for its lifetime.
        let epoll = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)?;
        Ok(Park {
            epoch: Cell::new(0),
            wakers: RefCell::new(Vec::new()),
            park_after,
            epoll,
            parked: RefCell::new(Slab::new()),
            parked_since_trim: Cell::new(0),
            parks: Cell::new(0),
            resumes: Cell::new(0),
        })
    }

    /// Connections parked now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.parked.borrow().len()
    }

    /// Parks a connection (its socket already out of the runtime); gives it
    /// back if the kernel refuses.
    pub fn park(&self, p: Parked) -> Result<(), Parked> {
        let mut parked = self.parked.borrow_mut();
        let entry = parked.vacant_entry();
        let flags = epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ONESHOT;
        // Level-checked at once: input that arrived meanwhile is reported.
        let data = epoll::EventData::new_u64(entry.key() as u64);
        if epoll::add(self.epoll.get_ref(), &p.stream, data, flags).is_err() {
            return Err(p);
        }
        entry.insert(p);
        self.parks.set(self.parks.get() + 1);
        self.parked_since_trim.set(self.parked_since_trim.get() + 1);
        Ok(())
    }

    /// Takes every parked connection whose socket became readable.
    fn take_ready(&self, out: &mut Vec<Parked>) -> io::Result<bool> {
        let mut events = [MaybeUninit::<epoll::Event>::uninit(); 64];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let (ready, _) = epoll::wait(self.epoll.get_ref(), &mut events, Some(&zero))?;
        let full = ready.len() == 64;
        let mut parked = self.parked.borrow_mut();
        for ev in ready.iter() {
            let data = { ev.data };
            if let Some(p) = parked.try_remove(data.u64() as usize) {
                let _ = epoll::delete(self.epoll.get_ref(), &p.stream);
                out.push(p);
            }
        }
        Ok(full)
    }
}

/// What the park task needs of the worker it runs in.
pub(crate) trait Host: 'static {
    /// The worker's park.
    fn park(&self) -> &Park;
    /// Shrinks the worker's buffer pools to `keep` buffers of each kind.
    fn shrink_pools(&self, keep: usize);
    /// Takes up a parked connection whose socket became readable.
    fn resume(self: Rc<Self>, p: Parked);
}

/// The worker's park task: ticks for idle connections, hands freed memory
/// back after many parks, and resumes parked connections as their sockets
/// become readable. Runs as long as the worker.
pub(crate) async fn run<W: Host>(w: Rc<W>) {
    let park = w.park();
    let mut tick = tokio::time::interval(park.park_after.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ready = Vec::new();
    loop {
        tokio::select! {
            _ = tick.tick() => {
                park.epoch.set(park.epoch.get().wrapping_add(1));
                let wakers = std::mem::take(&mut *park.wakers.borrow_mut());
                for waker in wakers {
                    waker.wake();
                }
                // The woken tasks run (and park) before this one goes on.
                tokio::task::yield_now().await;
                if park.parked_since_trim.get() >= TRIM_AFTER_PARKED {
                    park.parked_since_trim.set(0);
                    // Many connections went idle: the burst that needed
                    // the pooled buffers is over.
                    w.shrink_pools(POOL_KEEP_AFTER_PARKS);
                    trim();
                }
            }
            r = park.epoll.readable() => {
                let Ok(mut guard) = r else { return };
                // Bounded: each pass takes up to 64 ready sockets; fewer
                // means none is left.
                loop {
                    match park.take_ready(&mut ready) {
                        Ok(true) => {}
                        Ok(false) => {
                            guard.clear_ready();
                            break;
                        }
                        Err(_) => {
                            guard.clear_ready();
                            break;
                        }
                    }
                }
                for p in ready.drain(..) {
                    park.resumes.set(park.resumes.get() + 1);
                    w.clone().resume(p);
                }
            }
        }
    }
}

/// Returns freed heap memory to the system (glibc keeps it otherwise).
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages.
    unsafe {
        libc::malloc_trim(0);
    }
}
