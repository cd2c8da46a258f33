//! What the server asks of the operating system about its own process:
//! its CPU time and its open-files limit, through safe wrappers (`nix` for
//! `getrusage`, which `rustix` lacks; `rustix` for the limits).

use crate::policy;

/// Process CPU time so far (user, system) in seconds, all threads.
pub fn cpu_times() -> (f64, f64) {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(ru) = getrusage(UsageWho::RUSAGE_SELF) else {
        return (0.0, 0.0);
    };
    let secs = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
    (secs(ru.user_time()), secs(ru.system_time()))
}

/// The open-files limit and the connection cap derived from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    /// Soft RLIMIT_NOFILE before and after raising it to the hard limit.
    pub soft_before: u64,
    pub soft: u64,
    pub hard: u64,
    /// Kept back for files, the log and the runtime (`policy::FD_RESERVE`,
    /// at most half the limit).
    pub reserve: usize,
    /// `soft - reserve`: the default `max_conns`.
    pub max_conns: usize,
}

impl std::fmt::Display for FdBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "open files: soft limit {} (", self.soft)?;
        if self.soft_before < self.soft {
            write!(f, "raised from {}; ", self.soft_before)?;
        }
        write!(
            f,
            "hard {}); connection cap {} = limit - {} kept for files and the log",
            self.hard, self.max_conns, self.reserve
        )
    }
}

/// Raises the soft open-files limit to the hard limit (every connection is
/// a file descriptor, and the default soft limit, 1024, is far below the
/// 10,000 idle connections the memory test holds) and derives the default
/// connection cap from it, so that at the cap there are still descriptors
/// to accept with: at the cap the server evicts an idle connection, while
/// at the descriptor limit `accept` could only fail.
pub fn fd_budget() -> FdBudget {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    // `None` is RLIM_INFINITY, which the kernel reports as the largest value.
    let value = |v: Option<u64>| v.unwrap_or(u64::MAX);
    let lim = getrlimit(Resource::Nofile);
    let (soft_before, hard) = (value(lim.current), value(lim.maximum));
    let mut soft = soft_before;
    if soft < hard {
        let raised = Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            soft = hard;
        }
    }
    // RLIM_INFINITY or huge limits: the cap stays a usize that fits `admit`.
    let usable = soft.min(u32::MAX as u64) as usize;
    let reserve = policy::FD_RESERVE.min(usable / 2);
    FdBudget {
        soft_before,
        soft,
        hard,
        reserve,
        max_conns: (usable - reserve).max(1),
    }
}
