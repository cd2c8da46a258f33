//! Connection policy: every knob that decides *when bytes move* and *when a
//! connection ends*, as plain values with named constants carrying units and
//! reasons. What the bytes mean lives in `handler`; the loop that applies
//! these rules lives in `dispatch`.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use pagewire_h1::Limits;
use pagewire_prefetch::PrefetchParams;

/// Flush the output buffer once its queued bytes reach this size.
/// 64 KiB: large enough that a pipelined batch of small responses (16 x 1 KB
/// in `h2load -m 16`, or Microscape's 42 revalidation 304s of ~200 B) leaves
/// in one write, small enough to bound what a connection holds while a slow
/// reader drains it (paper 001 "Nagle Interaction": the response buffer is
/// flushed "when full").
pub const OUT_BUFFER_FLUSH_BYTES: usize = 64 * 1024;

/// Bodies up to this size are copied into the flat output buffer; larger ones
/// are queued by reference and written with `writev` without copying. Copying
/// a small body keeps many small responses in one iovec entry.
pub const COPY_BODY_MAX_BYTES: usize = 4 * 1024;

/// Most iovec entries queued before a flush. Linux accepts up to IOV_MAX =
/// 1024 per `writev`; 64 keeps the on-stack array small while a queue of 64
/// large bodies is already far beyond `OUT_BUFFER_FLUSH_BYTES`.
pub const MAX_IOVECS: usize = 64;

/// Bytes reserved in the read buffer before each read. 8 KiB holds ~40
/// pipelined requests of paper 001's average 190 bytes, so a Microscape
/// batch arrives in one or two reads.
pub const READ_CHUNK_BYTES: usize = 8 * 1024;

/// Buffers kept per worker thread for reuse. Idle connections hold no
/// buffers (that is how an idle connection costs < 4 KB); active ones borrow
/// from this pool, so the hot path does not call the allocator. 1024 x
/// (8 KiB + 64 KiB) bounds the pool at ~72 MiB per worker.
pub const BUFFER_POOL_MAX: usize = 1024;

/// How often the sweeper thread checks deadlines (idle, header, send,
/// shutdown grace). Timeouts are therefore accurate to this granularity, which
/// lets the hot path record state changes with one atomic store instead of
/// arming a timer per request.
pub const SWEEP_INTERVAL: Duration = Duration::from_millis(100);

/// File descriptors kept back from the connection cap when it is derived
/// from RLIMIT_NOFILE: stdio, the listener and its clones, each worker's
/// epoll and wake-up descriptors, the access log, files the site loader or
/// a library may open. 64 is several times what a 2-thread server uses
/// besides its connections; at most half the limit is kept back.
pub const FD_RESERVE: usize = 64;

/// After graceful shutdown starts, connections still busy get this long to
/// finish before they are cut.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A request body up to this size, already in the read buffer, is skipped so
/// the next pipelined request can be answered; anything larger (or not yet
/// arrived) ends the connection after the answer. We serve no method that
/// takes a body, so reading one is waste.
pub const MAX_SKIPPED_BODY_BYTES: u64 = 64 * 1024;

/// Default `ServerConfig::body_timeout`: 10 s, like the head deadline and
/// Apache mod_reqtimeout's default body timeout.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Default `ServerConfig::body_min_rate`: 500 B/s, Apache mod_reqtimeout's
/// default body MinRate. The largest body the server waits for
/// (`MAX_SKIPPED_BODY_BYTES`, 64 KiB) is then allowed about 2 min 20 s.
pub const DEFAULT_BODY_MIN_RATE: u64 = 500;

/// Most `Link: rel=prefetch` hints on one response, whatever the predictor
/// returns: bounds the header size.
pub const MAX_PREFETCH_HINTS: usize = 16;

/// When the output buffer is written to the socket (paper 001, "Nagle
/// Interaction": "the server maintains a response buffer that it flushes
/// either when full, or when there is no more requests coming in on that
/// connection, or before it goes idle").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// Flush when full, when no complete request is left in the input buffer,
    /// and before going idle or closing. The pipelining-friendly default.
    WhenIdle,
    /// Flush after every response (mini-redis style, one write per reply):
    /// the behaviour paper 001 measured as wasteful under pipelining.
    EachResponse,
}

impl FromStr for FlushPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "when-idle" => Ok(FlushPolicy::WhenIdle),
            "each-response" => Ok(FlushPolicy::EachResponse),
            _ => Err(format!(
                "unknown flush policy {s:?} (when-idle, each-response)"
            )),
        }
    }
}

/// Why a flush happened (counted in `ServerStats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushReason {
    /// Queued bytes reached `OUT_BUFFER_FLUSH_BYTES` or `MAX_IOVECS`.
    Full,
    /// No complete request left in the input buffer.
    InputDrained,
    /// `FlushPolicy::EachResponse`.
    EachResponse,
    /// Before a lower-priority (prefetch) response, so it does not hold back
    /// the responses already queued.
    BeforeLowPriority,
    /// Last response before closing.
    Closing,
    /// Before waiting a recorded server think time (`serve --replay
    /// --replay-server-time`), so the responses already queued are not
    /// held back by the next one's wait.
    BeforeThink,
}

/// How a connection is closed once the server decides to close it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosePolicy {
    /// Paper 001, "Connection Management": send `Connection: close`, shut down
    /// the write side only, then read and discard input (bounded in time and
    /// bytes) until the client closes, so requests already in flight never
    /// make our TCP answer with a reset that destroys delivered responses.
    Linger,
    /// Close both halves at once, like the HTTP/1.0 servers did. Unread
    /// pipelined requests make the kernel send RST, and the client loses
    /// responses it had not yet read. Exists to demonstrate that problem.
    Abrupt,
}

impl FromStr for ClosePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "linger" => Ok(ClosePolicy::Linger),
            "abrupt" => Ok(ClosePolicy::Abrupt),
            _ => Err(format!("unknown close policy {s:?} (linger, abrupt)")),
        }
    }
}

/// Bounds of the lingering close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linger {
    /// Longest wait for the client's FIN after our half-close. 2 s: several
    /// RTTs even on paper 001's PPP link (150 ms), so in-flight requests
    /// have arrived and responses have been ACKed (Apache's lingering_close
    /// uses 2 s per read as well).
    pub timeout: Duration,
    /// Most bytes read and discarded while lingering: a client that keeps
    /// sending must not keep the connection forever. 1 MiB is ~5000 pipelined
    /// requests of 190 bytes.
    pub max_bytes: u64,
}

impl Default for Linger {
    fn default() -> Self {
        Linger {
            timeout: Duration::from_secs(2),
            max_bytes: 1 << 20,
        }
    }
}

/// Everything `serve` needs besides the listener and the site.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Worker threads, each with its own single-threaded runtime accepting on
    /// the shared listener. Default: the number of cores.
    pub threads: usize,
    pub flush: FlushPolicy,
    /// Leave Nagle's algorithm on (no TCP_NODELAY). Paper 001 recommends
    /// TCP_NODELAY for servers that buffer their own output.
    pub nagle: bool,
    pub close: ClosePolicy,
    pub linger: Linger,
    /// Close after this many responses on one connection (`Connection: close`
    /// on the last). Apache 1.2b2 used 5. `None`: unlimited.
    pub max_requests: Option<u64>,
    /// Close a keep-alive connection with nothing to do after this long.
    /// 60 s: nginx's keepalive_timeout default is 75 s, Apache's 5 s; a lab
    /// server serving one client at a time can afford a minute of "click-ahead"
    /// (paper 001: keep connections "as long as makes reasonable engineering sense").
    pub idle_timeout: Duration,
    /// Longest time to receive a complete request head once a connection is
    /// new or a head has started (slowloris defence). 10 s, like nginx's
    /// client_header_timeout of 60 s scaled down for a lab server; answered with 408.
    pub header_timeout: Duration,
    /// Longest time a write may stay blocked on a client that does not read.
    pub send_timeout: Duration,
    /// A request body the server waits for (GETLIST's uri-list) must make
    /// progress: it gets this long, extended by one second for every
    /// `body_min_rate` bytes received, never beyond this long from now
    /// (Apache mod_reqtimeout's `body=10,MinRate=500`; nginx's
    /// client_body_timeout is 60 s between reads). Answered with 408 and a
    /// close.
    pub body_timeout: Duration,
    /// Bytes per second that extend `body_timeout` (0: no extension, the
    /// whole body within `body_timeout`).
    pub body_min_rate: u64,
    /// Most open connections; at the limit the least recently active idle
    /// connection is closed (paper 003 §4); if none is idle the new one waits.
    /// `None`: derived from the open-files limit (`crate::os::fd_budget`).
    pub max_conns: Option<usize>,
    pub limits: Limits,
    /// Common Log Format access log (appended to; reopened on SIGUSR1).
    pub access_log: Option<PathBuf>,
    /// Piggyback `Link: rel=prefetch` hints from the online predictor (paper 003).
    pub prefetch: Option<PrefetchParams>,
    /// Flush threshold of the output buffer (see `OUT_BUFFER_FLUSH_BYTES`).
    pub out_buffer_bytes: usize,
    /// The command line that started the server, for the caller's records
    /// (the access log is plain Common Log Format and carries none).
    pub command_line: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            flush: FlushPolicy::WhenIdle,
            nagle: false,
            close: ClosePolicy::Linger,
            linger: Linger::default(),
            max_requests: None,
            idle_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            body_timeout: DEFAULT_BODY_TIMEOUT,
            body_min_rate: DEFAULT_BODY_MIN_RATE,
            max_conns: None,
            limits: Limits::default(),
            access_log: None,
            prefetch: None,
            out_buffer_bytes: OUT_BUFFER_FLUSH_BYTES,
            command_line: String::new(),
        }
    }
}
