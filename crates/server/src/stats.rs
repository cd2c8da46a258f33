//! Counters: per worker thread in `Cell`s (no atomics on the hot path),
//! summed into `ServerStats` when each worker stops, in one place
//! (`ServerStats::add`, into `Shared::totals`).

use std::cell::Cell;
use std::fmt;

use crate::policy::FlushReason;

/// What the server did, printed at shutdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerStats {
    pub connections: u64,
    pub requests: u64,
    pub responses_2xx: u64,
    pub responses_3xx: u64,
    pub responses_4xx: u64,
    pub responses_5xx: u64,
    /// Bytes handed to the kernel (heads and bodies).
    pub bytes_written: u64,
    /// Body bytes of responses.
    pub body_bytes: u64,
    /// `write`/`writev` calls that wrote something.
    pub writes: u64,
    pub flushes_full: u64,
    pub flushes_input_drained: u64,
    pub flushes_each_response: u64,
    pub flushes_low_priority: u64,
    pub flushes_closing: u64,
    pub flushes_before_think: u64,
    /// Connections the server closed after a response said `Connection: close`.
    pub closes_lingering: u64,
    pub closes_abrupt: u64,
    /// Bytes read and discarded while lingering.
    pub linger_discarded_bytes: u64,
    pub closed_by_client: u64,
    pub malformed_requests: u64,
    pub idle_timeouts: u64,
    pub header_timeouts: u64,
    /// Request bodies that arrived slower than the body minimum rate (408).
    pub body_timeouts: u64,
    pub send_timeouts: u64,
    pub evictions: u64,
    pub closed_by_shutdown: u64,
    pub io_errors: u64,
    pub access_log_dropped_lines: u64,
    /// Most connections counted against `max_conns` at once (a connection
    /// evicted and not yet closed is not counted).
    pub peak_connections: u64,
    /// Failed `accept` calls (e.g. EMFILE), and idle connections closed to
    /// free a file descriptor after one.
    pub accept_errors: u64,
    pub evictions_for_fds: u64,
    /// Connections refused at `max_conns` with `503` and `Connection:
    /// close` (their request had arrived and nothing could be evicted).
    pub refused_at_cap: u64,
    pub cpu_user_seconds: f64,
    pub cpu_system_seconds: f64,
    pub wall_seconds: f64,
}

impl ServerStats {
    pub fn add(&mut self, w: &WorkerStats) {
        self.connections += w.connections.get();
        self.requests += w.requests.get();
        self.responses_2xx += w.status[2].get();
        self.responses_3xx += w.status[3].get();
        self.responses_4xx += w.status[4].get();
        self.responses_5xx += w.status[5].get();
        self.bytes_written += w.bytes_written.get();
        self.body_bytes += w.body_bytes.get();
        self.writes += w.writes.get();
        self.flushes_full += w.flushes[0].get();
        self.flushes_input_drained += w.flushes[1].get();
        self.flushes_each_response += w.flushes[2].get();
        self.flushes_low_priority += w.flushes[3].get();
        self.flushes_closing += w.flushes[4].get();
        self.flushes_before_think += w.flushes[5].get();
        self.closes_lingering += w.closes_lingering.get();
        self.closes_abrupt += w.closes_abrupt.get();
        self.linger_discarded_bytes += w.linger_discarded_bytes.get();
        self.closed_by_client += w.closed_by_client.get();
        self.malformed_requests += w.malformed.get();
        self.idle_timeouts += w.idle_timeouts.get();
        self.header_timeouts += w.header_timeouts.get();
        self.body_timeouts += w.body_timeouts.get();
        self.send_timeouts += w.send_timeouts.get();
        self.evictions += w.evictions.get();
        self.closed_by_shutdown += w.closed_by_shutdown.get();
        self.io_errors += w.io_errors.get();
        self.access_log_dropped_lines += w.log_dropped.get();
        self.accept_errors += w.accept_errors.get();
        self.evictions_for_fds += w.evictions_for_fds.get();
        self.refused_at_cap += w.refused_at_cap.get();
    }

    pub fn cpu_seconds(&self) -> f64 {
        self.cpu_user_seconds + self.cpu_system_seconds
    }
}

impl fmt::Display for ServerStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "connections        {}", self.connections)?;
        writeln!(f, "requests           {}", self.requests)?;
        writeln!(
            f,
            "responses          2xx {} / 3xx {} / 4xx {} / 5xx {}",
            self.responses_2xx, self.responses_3xx, self.responses_4xx, self.responses_5xx
        )?;
        writeln!(f, "bytes written      {}", self.bytes_written)?;
        writeln!(f, "writes             {}", self.writes)?;
        writeln!(
            f,
            "flushes            full {} / input drained {} / each response {} / before prefetch {} / closing {}",
            self.flushes_full,
            self.flushes_input_drained,
            self.flushes_each_response,
            self.flushes_low_priority,
            self.flushes_closing
        )?;
        if self.flushes_before_think > 0 {
            writeln!(
                f,
                "flushes            before a recorded server think time {}",
                self.flushes_before_think
            )?;
        }
        writeln!(
            f,
            "closes             lingering {} (discarded {} B) / abrupt {} / by client {}",
            self.closes_lingering,
            self.linger_discarded_bytes,
            self.closes_abrupt,
            self.closed_by_client
        )?;
        writeln!(
            f,
            "ended by server    malformed {} / idle {} / header timeout {} / body timeout {} / send timeout {} / evicted {} / shutdown {} / i/o errors {}",
            self.malformed_requests,
            self.idle_timeouts,
            self.header_timeouts,
            self.body_timeouts,
            self.send_timeouts,
            self.evictions,
            self.closed_by_shutdown,
            self.io_errors
        )?;
        writeln!(
            f,
            "connections        peak {} open at once / accept errors {} (idle evicted for a descriptor {}) / refused at the cap with 503 {}",
            self.peak_connections, self.accept_errors, self.evictions_for_fds, self.refused_at_cap
        )?;
        if self.access_log_dropped_lines > 0 {
            writeln!(
                f,
                "access log dropped {} lines",
                self.access_log_dropped_lines
            )?;
        }
        write!(
            f,
            "cpu                {:.3} s user + {:.3} s system in {:.3} s",
            self.cpu_user_seconds, self.cpu_system_seconds, self.wall_seconds
        )
    }
}

/// One worker thread's counters.
#[derive(Debug, Default)]
pub struct WorkerStats {
    pub connections: Cell<u64>,
    pub requests: Cell<u64>,
    /// Indexed by status / 100.
    pub status: [Cell<u64>; 6],
    pub bytes_written: Cell<u64>,
    pub body_bytes: Cell<u64>,
    pub writes: Cell<u64>,
    /// Indexed by `FlushReason as usize`.
    pub flushes: [Cell<u64>; 6],
    pub closes_lingering: Cell<u64>,
    pub closes_abrupt: Cell<u64>,
    pub linger_discarded_bytes: Cell<u64>,
    pub closed_by_client: Cell<u64>,
    pub malformed: Cell<u64>,
    pub idle_timeouts: Cell<u64>,
    pub header_timeouts: Cell<u64>,
    pub body_timeouts: Cell<u64>,
    pub send_timeouts: Cell<u64>,
    pub evictions: Cell<u64>,
    pub closed_by_shutdown: Cell<u64>,
    pub io_errors: Cell<u64>,
    pub log_dropped: Cell<u64>,
    pub accept_errors: Cell<u64>,
    pub evictions_for_fds: Cell<u64>,
    pub refused_at_cap: Cell<u64>,
}

pub fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

impl WorkerStats {
    pub fn flush(&self, reason: FlushReason) {
        let i = match reason {
            FlushReason::Full => 0,
            FlushReason::InputDrained => 1,
            FlushReason::EachResponse => 2,
            FlushReason::BeforeLowPriority => 3,
            FlushReason::Closing => 4,
            FlushReason::BeforeThink => 5,
        };
        bump(&self.flushes[i], 1);
    }
}
