//! The robot's HTTP/1 connections. [`Machine`] (`machine.rs`) is one
//! connection without its socket: it decides when request bytes move
//! (output buffer and flush policy), frames responses in order, keeps the
//! guards and says what to do when the server closes early, with no socket
//! and no clock. The meaning of the bytes is the [`Session`]'s, which has
//! no socket or clock either. [`run`] (`driver.rs`) is the one task that
//! owns the session, every connection's machine and socket: it waits for
//! any socket or deadline, hands the event with the time to the machine,
//! and applies the effects (bytes to write, objects for new connections).
//!
//! Reads and writes are both non-blocking on that task, so a pipelining
//! client never stops reading while it has requests to write (a server
//! blocked on a full send buffer must always be drained, or both stall).

use std::time::{Duration, Instant};

use crate::session::ObjId;

mod driver;
mod machine;
#[cfg(test)]
mod tests;

pub use driver::run;
pub use machine::{Effect, Machine, Step};

/// Bytes asked of the kernel per read. 64 KiB drains a LAN burst in one
/// call; paper 001 ("Implementation Experience") notes that reading
/// urgently matters: data left in the socket buffer delays ACKs.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Interim (1xx) responses accepted before one final response. RFC 9110
/// §15.2 sets no limit; a server that sends more than this is flooding
/// (a fast `103` flood must not hold the robot forever). A real server
/// sends one `100 Continue` or a few `103 Early Hints`.
pub const MAX_INTERIM_RESPONSES: u32 = 100;

/// Reads between two voluntary yields to the runtime: a socket that never
/// drains must not starve the connection's timers or other tasks.
const READS_PER_YIELD: u32 = 16;

/// How a connection behaves.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Send requests ahead of responses through the output buffer.
    pub pipeline: bool,
    /// A reconnection after an early close: one request at a time until a
    /// response has been seen on this connection (the server may be one that
    /// closes after every response; don't pile up requests it will drop).
    pub cautious: bool,
}

/// How a connection ended.
#[derive(Debug)]
pub enum End {
    /// Every queued request was answered and nothing more is expected.
    Done,
    /// The server closed first; `unanswered` must be sent again (GET and
    /// HEAD are idempotent, RFC 9110 §9.2.2, so re-sending is safe).
    Closed {
        unanswered: Vec<ObjId>,
        answered: u32,
        /// What the server did, for an error if it keeps doing it.
        how: String,
    },
}

/// When a host that spends `cost` on every object is done with the `parts`
/// objects of one response whose head arrived at `head_at` and whose last
/// byte at `end`, if it was busy until `busy` before: each object handled
/// after it arrives and after the previous one, the parts of a multi-part
/// response (GETALL, a package) taken as arriving evenly over the response.
pub fn busy_after(
    busy: Option<Instant>,
    head_at: Instant,
    end: Instant,
    parts: u32,
    cost: Duration,
) -> Instant {
    let parts = parts.max(1);
    let spacing = end.saturating_duration_since(head_at) / parts;
    // Part k (1-based) arrives at head_at + k * spacing (the last at end).
    let mut t = busy.unwrap_or(head_at);
    for k in 1..=parts {
        let arrived = if k == parts {
            end
        } else {
            head_at + spacing * k
        };
        t = t.max(arrived) + cost;
    }
    t
}
