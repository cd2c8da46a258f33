//! Ctrl-C for every suite. The first SIGINT (or SIGTERM, SIGHUP) is
//! acknowledged at once on stderr, in-flight runs that can be cancelled are
//! (each polls [`signalled`] every [`POLL`]), nothing new starts, and the
//! runs done so far are written as usual; the command then exits 130. A
//! second signal aborts at once (exit 130, nothing more written): the
//! servers die with this process (they are started with a parent-death
//! signal) and the namespaces with their last holder.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How often a cancellable run looks at the signal flag.
pub const POLL: Duration = Duration::from_millis(50);

static CANCELLABLE: AtomicUsize = AtomicUsize::new(0);
static FINISHING: AtomicUsize = AtomicUsize::new(0);
/// Set by the watcher once it has acknowledged the signal (so the count
/// it prints is the runs in flight when the signal came, not after they
/// stopped); `WATCHING` says a watcher runs at all.
static CANCEL: AtomicBool = AtomicBool::new(false);
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Installs the signal handlers (once) and the thread that acknowledges a
/// first signal and aborts on a second.
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        pagewire_emu::cli::install_termination_handlers();
        let watcher = std::thread::Builder::new()
            .name("pw-interrupt".into())
            .spawn(watch);
        WATCHING.store(watcher.is_ok(), Ordering::SeqCst);
    });
}

/// Whether a termination signal arrived (and was acknowledged, when the
/// watcher runs): runs stop at this.
pub fn signalled() -> bool {
    if WATCHING.load(Ordering::SeqCst) {
        CANCEL.load(Ordering::SeqCst)
    } else {
        pagewire_emu::cli::terminated_by().is_some()
    }
}

/// The first termination signal, if any.
pub fn signal() -> Option<i32> {
    pagewire_emu::cli::terminated_by()
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The acknowledgement printed at the first signal.
pub fn acknowledgement(sig: i32, cancellable: usize, finishing: usize) -> String {
    let mut s = format!(
        "pagewire: {} received: stopping {cancellable} in-flight run{}",
        signal_name(sig),
        if cancellable == 1 { "" } else { "s" }
    );
    if finishing > 0 {
        s.push_str(&format!(", finishing {finishing} that cannot be cut short"));
    }
    s.push_str("; writing the results of the runs done (exit 130). Ctrl-C again to abort.");
    s
}

fn watch() {
    let mut acked = false;
    // Lives as long as the process; one wake-up every 20 ms costs nothing.
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let n = pagewire_emu::cli::signal_count();
        if n >= 1 && !acked {
            acked = true;
            eprintln!(
                "\n{}",
                acknowledgement(
                    signal().unwrap_or(libc::SIGINT),
                    CANCELLABLE.load(Ordering::SeqCst),
                    FINISHING.load(Ordering::SeqCst)
                )
            );
            CANCEL.store(true, Ordering::SeqCst);
        }
        if n >= 2 {
            eprintln!("pagewire: second signal: aborting now (exit 130); the results directory is incomplete");
            std::process::exit(130);
        }
    }
}

/// Counts a run as in flight while alive (for the acknowledgement).
pub struct InFlight {
    counter: &'static AtomicUsize,
}

impl InFlight {
    /// A run that stops within [`POLL`] of a signal.
    pub fn cancellable() -> InFlight {
        CANCELLABLE.fetch_add(1, Ordering::SeqCst);
        InFlight {
            counter: &CANCELLABLE,
        }
    }

    /// A run that cannot be cut short (it ends by its own bound).
    pub fn finishing() -> InFlight {
        FINISHING.fetch_add(1, Ordering::SeqCst);
        InFlight {
            counter: &FINISHING,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Completes once a termination signal has arrived.
pub async fn cancelled() {
    // Bounded by the signal; one look every POLL.
    while !signalled() {
        tokio::time::sleep(POLL).await;
    }
}

/// `f`, or `None` if a termination signal arrives first (then `f` is
/// dropped: its sockets close).
pub async fn or_cancel<F: Future>(f: F) -> Option<F::Output> {
    tokio::select! {
        r = f => Some(r),
        _ = cancelled() => None,
    }
}

/// [`or_cancel`] on a fresh current-thread runtime (the thread's own
/// network namespace applies to its sockets).
pub fn block_on<F: Future>(f: F) -> std::io::Result<Option<F::Output>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(rt.block_on(or_cancel(f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgement_names_the_signal_the_runs_and_the_way_out() {
        let a = acknowledgement(2, 5, 0);
        assert!(a.contains("SIGINT"), "{a}");
        assert!(a.contains("stopping 5 in-flight runs"), "{a}");
        assert!(a.contains("Ctrl-C again to abort"), "{a}");
        assert!(!a.contains("finishing"), "{a}");
        let b = acknowledgement(15, 1, 2);
        assert!(b.contains("SIGTERM"), "{b}");
        assert!(b.contains("stopping 1 in-flight run,"), "{b}");
        assert!(b.contains("finishing 2"), "{b}");
    }

    #[test]
    fn or_cancel_passes_the_result_through_without_a_signal() {
        // No signal was sent to this test process.
        let r = block_on(async { 7 }).unwrap();
        assert_eq!(r, Some(7));
    }
}
