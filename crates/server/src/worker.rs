//! Worker threads: each runs a single-threaded tokio runtime with a
//! `LocalSet`, accepts on its own handle of the shared listener, and owns
//! its connections, counters, buffer pools and access-log buffer (no locks or
//! atomics between connections of one worker).

use std::rc::Rc;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::context::{Shared, Worker};
use crate::log::LogBuffer;
use crate::stats::bump;

/// Back-off after a failed accept (EMFILE, ENFILE, ENOBUFS): the error is
/// usually transient, and retrying at once would spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(10);
/// While at `max_conns` with nothing idle to evict, re-check this often.
const FULL_RECHECK: Duration = Duration::from_millis(50);
/// Refused connections lingering at once per worker (each holds a file
/// descriptor for at most `REFUSE_LINGER`).
const MAX_REFUSING: usize = 256;
/// How long a refused connection may take to read the 503 and close.
const REFUSE_LINGER: Duration = Duration::from_secs(2);
/// The answer at the connection cap.
const FULL_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 45\r\nRetry-After: 1\r\nConnection: close\r\n\r\nThe server is at its connection limit; retry\n";

/// How often a worker hands its access-log lines to the writer thread.
const LOG_HANDOVER_INTERVAL: Duration = Duration::from_secs(1);

/// Runs one worker until `stop` says so and its connections are closed.
pub(crate) fn run(
    shared: Arc<Shared>,
    listener: std::net::TcpListener,
    stop: watch::Receiver<bool>,
    log_tx: Option<SyncSender<Vec<u8>>>,
) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = TcpListener::from_std(listener)?;
        let w = Rc::new(Worker::new(shared, log_tx.map(LogBuffer::new))?);
        tokio::task::spawn_local(crate::park::run(w.clone()));
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
        w.shared.totals.lock().expect("totals lock").add(&w.stats);
        Ok(())
    })
}

async fn accept_loop(w: &Rc<Worker>, listener: &TcpListener, mut stop: watch::Receiver<bool>) {
    let registry = &w.shared.registry;
    let max_conns = w.shared.max_conns;
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.changed() => return,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors (EMFILE, ENFILE): close the least
                // recently active idle connection and retry once it is gone;
                // with nothing to evict (or another error), back off. Never
                // a busy retry: the listener stays readable while the
                // kernel's queue holds connections.
                bump(&w.stats.accept_errors, 1);
                let out_of_fds = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                if out_of_fds && registry.evict_oldest_idle() {
                    bump(&w.stats.evictions_for_fds, 1);
                    tokio::select! {
                        _ = registry.freed.notified() => {}
                        _ = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => {}
                    }
                } else {
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                }
                continue;
            }
        };
        // At the limit: close the connection whose head has been incomplete
        // longest (slowloris), else the least recently active idle one
        // (paper 003 §4); if none can go, a client whose request has
        // already arrived is answered 503 with `Connection: close`,
        // and one that has sent nothing yet waits (and so does the
        // kernel's accept queue behind it). `admit` takes the place
        // atomically, so the cap is exact across accept threads.
        let mut refused = false;
        loop {
            if registry.admit(max_conns) {
                break;
            }
            // Connections this worker just accepted register when their
            // task first runs: let them, so that they can be chosen.
            tokio::task::yield_now().await;
            if registry.admit(max_conns) {
                break;
            }
            // Eviction marks the place free at once; the loop then admits.
            if registry.evict_for_new() {
                continue;
            }
            if request_waiting(&stream) {
                refused = true;
                break;
            }
            tokio::select! {
                _ = registry.freed.notified() => {}
                _ = tokio::time::sleep(FULL_RECHECK) => {}
                _ = stream.readable() => {}
                _ = stop.changed() => return,
            }
        }
        if refused {
            bump(&w.stats.refused_at_cap, 1);
            bump(&w.stats.status[5], 1);
            if w.refusing.get() < MAX_REFUSING {
                w.refusing.set(w.refusing.get() + 1);
                let w2 = w.clone();
                tokio::task::spawn_local(async move {
                    refuse_full(stream).await;
                    w2.refusing.set(w2.refusing.get() - 1);
                });
            } else {
                // Too many refusals lingering already: answer, close.
                let _ = stream.try_write(FULL_RESPONSE);
            }
            continue;
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

/// True if the client has sent bytes (its request) already.
fn request_waiting(stream: &tokio::net::TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    let mut b = [0u8; 1];
    // SAFETY: a valid socket and a one-byte buffer; MSG_DONTWAIT never
    // blocks and MSG_PEEK leaves the byte for the reader.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n > 0
}

/// Answers a connection over the cap with 503 and closes it gently: the
/// request is read first and the client's FIN awaited (bounded), so the
/// answer is not destroyed by a reset.
async fn refuse_full(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sink = [0u8; 4096];
    let _ = stream.try_read(&mut sink);
    let _ = tokio::time::timeout(REFUSE_LINGER, async {
        stream.write_all(FULL_RESPONSE).await?;
        stream.shutdown().await?;
        // Bounded by REFUSE_LINGER.
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}
