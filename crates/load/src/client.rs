//! HTTP/1.x on one TCP connection, on the `pagewire-h1` codec: write one
//! or more requests, read responses in order, classify every failure.
//! What bytes mean lives here; when they move (which mode, which
//! connection, which intended time) lives in `run`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use bytes::BytesMut;
use pagewire_h1::{
    BodyFraming, Decoded, Decoder, HeadScanner, Limits, Method, ResponseHead, Version,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep_until, timeout_at, Instant, Sleep};

use crate::metrics::ErrorKind;

/// Reads happen in slices of this size; the buffer is released between
/// web objects so that 10,000 idle UEs do not each hold one.
const READ_CHUNK: usize = 16 * 1024;

/// How long to wait for the server's FIN after a response that ends the
/// connection, so the server (not the generator) holds TIME_WAIT, as with a
/// real HTTP/1.0 exchange.
const FIN_WAIT: Duration = Duration::from_millis(500);

/// Interim (1xx) heads accepted before one final response; more is a flood
/// (a protocol error), not a response.
const MAX_INTERIM: u32 = 100;

/// `read_response`'s expected size when any length is right (URL mode).
pub const ANY_SIZE: u64 = u64::MAX;

/// A failed exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub kind: ErrorKind,
    /// No byte of the response had arrived (a closed persistent connection:
    /// the request may be retried on a fresh one, RFC 9112 §9.3.1).
    pub before_response: bool,
}

impl Failure {
    fn new(kind: ErrorKind, before_response: bool) -> Failure {
        Failure {
            kind,
            before_response,
        }
    }
}

/// Connects with a deadline; classifies the failure.
pub async fn connect(addr: SocketAddr, deadline: Instant) -> Result<TcpStream, Failure> {
    match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => Err(Failure::new(ErrorKind::Timeout, true)),
        Ok(Err(e)) => Err(Failure::new(io_kind(&e), true)),
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
    }
}

pub(crate) fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        io::ErrorKind::TimedOut => ErrorKind::Timeout,
        _ => ErrorKind::Other,
    }
}

/// The request bytes for one file, rendered once per run.
pub fn request_bytes(path: &str, host: &str, version: Version, close: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + path.len());
    let conn: &[u8] = if close { b"close" } else { b"keep-alive" };
    let mut headers: Vec<(&str, &[u8])> =
        vec![("Host", host.as_bytes()), ("User-Agent", b"pagewire-load")];
    // HTTP/1.0 closes by default; HTTP/1.1 keeps alive by default: only
    // the non-default needs saying.
    if close && version == Version::Http11 {
        headers.push(("Connection", conn));
    }
    pagewire_h1::write_request_head(&mut out, "GET", path, version, headers)
        .expect("manifest paths were validated");
    out
}

/// Where an incremental read of one response stands ([`ResponseReader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The buffer holds no more of the response: read more.
    NeedMore,
    /// The response is complete (its status is in `ResponseReader::status`).
    Done(Response),
    Failed(Failure),
}

/// [`Conn::read_response`]'s decoding (`ANY_SIZE`) for a caller that does
/// its own reading: the same `pagewire-h1` head scanner and body decoder,
/// the same verdicts, but fed whatever bytes have arrived, a step at a
/// time, so one thread can read many non-blocking sockets.
#[derive(Debug)]
pub(crate) struct ResponseReader {
    head: HeadScanner,
    dec: Option<Decoder>,
    keep: bool,
    interim: u32,
    body: u64,
    /// Some byte of this response has arrived.
    pub got_any: bool,
    /// Status of the final head (0: none yet).
    pub status: u16,
    /// The server will close after this response.
    pub closing: bool,
    /// The whole response has been read (whatever its status).
    pub complete: bool,
}

impl ResponseReader {
    pub fn new() -> ResponseReader {
        ResponseReader {
            head: HeadScanner::new(),
            dec: None,
            keep: true,
            interim: 0,
            body: 0,
            got_any: false,
            status: 0,
            closing: false,
            complete: false,
        }
    }

    /// Decodes what `buf` holds of the response.
    pub fn step(&mut self, buf: &mut BytesMut, limits: &Limits) -> Step {
        self.got_any |= !buf.is_empty();
        if self.dec.is_none() {
            // Parsed in place and dropped from `buf`: only the status,
            // framing and keep-alive decision are used.
            let mut head = ResponseHead::empty();
            loop {
                match self
                    .head
                    .consume_response_into(buf, limits, &Method::Get, &mut head)
                {
                    Ok(true) if (100..200).contains(&head.status()) => {
                        self.interim += 1;
                        if self.interim > MAX_INTERIM {
                            return Step::Failed(Failure::new(ErrorKind::Protocol, false));
                        }
                    }
                    Ok(true) => break,
                    Ok(false) => return Step::NeedMore,
                    Err(_) => return Step::Failed(Failure::new(ErrorKind::Protocol, false)),
                }
            }
            let framing = head.body_framing();
            self.keep = head.wants_keep_alive() && framing != BodyFraming::CloseDelimited;
            self.status = head.status();
            self.dec = Some(Decoder::new(framing, limits));
        }
        let dec = self.dec.as_mut().expect("just set");
        loop {
            match dec.decode(buf) {
                Ok(Decoded::Data(d)) => self.body += d.len() as u64,
                Ok(Decoded::Done) => return self.finish(),
                Ok(Decoded::NeedMore) => return Step::NeedMore,
                Err(_) => return Step::Failed(Failure::new(ErrorKind::Protocol, false)),
            }
        }
    }

    /// The stream ended (or failed with `err`) before the response did.
    pub fn eof(&mut self, buf: &mut BytesMut, limits: &Limits, err: Option<ErrorKind>) -> Step {
        self.got_any |= !buf.is_empty();
        if let Some(kind) = err {
            return Step::Failed(Failure::new(kind, !self.got_any));
        }
        match self.dec.as_mut() {
            None => {
                self.head.reset();
                let mut head = ResponseHead::empty();
                if self
                    .head
                    .consume_response_into(buf, limits, &Method::Get, &mut head)
                    .is_err()
                {
                    return Step::Failed(Failure::new(ErrorKind::Protocol, false));
                }
                let kind = if self.got_any {
                    ErrorKind::ShortBody
                } else {
                    ErrorKind::Reset
                };
                Step::Failed(Failure::new(kind, !self.got_any))
            }
            Some(dec) => loop {
                match dec.decode_eof(buf) {
                    Ok(Decoded::Data(d)) => self.body += d.len() as u64,
                    Ok(Decoded::Done) => return self.finish(),
                    _ => return Step::Failed(Failure::new(ErrorKind::ShortBody, false)),
                }
            },
        }
    }

    fn finish(&mut self) -> Step {
        self.complete = true;
        self.closing |= !self.keep;
        if self.status != 200 {
            return Step::Failed(Failure::new(ErrorKind::BadStatus, false));
        }
        Step::Done(Response {
            body_bytes: self.body,
        })
    }
}

/// One open connection.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    /// Responses completed on this connection.
    pub responses: u64,
    /// The server said it will close after the last response.
    pub closing: bool,
    /// When the connection was established (for connection durations).
    pub opened: tokio::time::Instant,
    /// Status code of the last response head read (0: none yet).
    pub last_status: u16,
    /// Keep the read buffer between responses (a busy connection); by
    /// default it is released when drained (10,000 mostly idle UEs).
    pub keep_buffer: bool,
    /// The deadline timer, made on the first wait and moved forward for
    /// every later one: a later deadline on a pending timer is one atomic
    /// store, not a new registration in the runtime's timer wheel per read.
    timer: Option<Pin<Box<Sleep>>>,
}

/// Runs `f` until `deadline` (`None`: the deadline passed first) on the
/// connection's reusable timer. The future is polled first, so a ready
/// operation never touches the timer.
///
/// The timer is moved only to an earlier deadline: a later one (every
/// request's, as time goes on) leaves it armed where it was, and when it
/// fires before `deadline` it is moved then and the wait goes on. The
/// verdict is the same (`None` only once `deadline` has passed); moving a
/// timer costs ~140 instructions, paid once per timeout period instead of
/// once per request.
async fn until<F: Future>(
    timer: &mut Option<Pin<Box<Sleep>>>,
    deadline: Instant,
    f: F,
) -> Option<F::Output> {
    let t = match timer {
        Some(t) => {
            if t.deadline() > deadline {
                t.as_mut().reset(deadline);
            }
            t
        }
        None => timer.insert(Box::pin(sleep_until(deadline))),
    };
    tokio::pin!(f);
    loop {
        tokio::select! {
            biased;
            r = &mut f => return Some(r),
            () = t.as_mut() => {
                if t.deadline() >= deadline {
                    return None;
                }
                // Armed for an earlier request's deadline: wait on.
                t.as_mut().reset(deadline);
            }
        }
    }
}

/// A completed response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub body_bytes: u64,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: BytesMut::new(),
            responses: 0,
            closing: false,
            opened: tokio::time::Instant::now(),
            last_status: 0,
            keep_buffer: false,
            timer: None,
        }
    }

    /// Writes `bytes` (one request or a pipelined batch) in full.
    pub async fn send(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), Failure> {
        match until(&mut self.timer, deadline, self.stream.write_all(bytes)).await {
            None => Err(Failure::new(ErrorKind::Timeout, true)),
            Some(Err(e)) => Err(Failure::new(io_kind(&e), true)),
            Some(Ok(())) => Ok(()),
        }
    }

    async fn fill(&mut self, deadline: Instant, got_any: bool) -> Result<usize, Failure> {
        // Checked here, on the read path, and not only by the timer: a
        // socket that is always readable (a 1xx flood, an endless body)
        // must still end at the deadline.
        if Instant::now() >= deadline {
            return Err(Failure::new(ErrorKind::Timeout, !got_any));
        }
        self.buf.reserve(READ_CHUNK);
        match until(
            &mut self.timer,
            deadline,
            self.stream.read_buf(&mut self.buf),
        )
        .await
        {
            None => Err(Failure::new(ErrorKind::Timeout, !got_any)),
            Some(Err(e)) => Err(Failure::new(io_kind(&e), !got_any)),
            Some(Ok(n)) => Ok(n),
        }
    }

    /// Reads one whole response to a GET. A status other than 200 is a
    /// failure (the file set only holds files that exist). The decoding is
    /// [`ResponseReader`]'s, the tick engine's: one set of verdicts for both.
    pub async fn read_response(
        &mut self,
        expected_size: u64,
        deadline: Instant,
    ) -> Result<Response, Failure> {
        let limits = Limits::default();
        let mut reader = ResponseReader::new();
        let step = loop {
            // An empty buffer (the usual start: the previous response took
            // all it had) cannot finish a new response: read first.
            if !self.buf.is_empty() {
                match reader.step(&mut self.buf, &limits) {
                    Step::NeedMore => {}
                    done => break done,
                }
            }
            match self.fill(deadline, reader.got_any).await {
                Ok(0) => break reader.eof(&mut self.buf, &limits, None),
                Ok(_) => {}
                Err(f) => break Step::Failed(f),
            }
        };
        // Known once the final head is in, whatever followed.
        self.last_status = reader.status;
        if reader.complete {
            self.responses += 1;
            self.closing |= reader.closing;
            if self.buf.is_empty() && !self.keep_buffer {
                // Release the read buffer while idle (10,000 UEs).
                self.buf = BytesMut::new();
            }
        }
        match step {
            Step::Done(r) if expected_size != ANY_SIZE && r.body_bytes != expected_size => {
                Err(Failure::new(ErrorKind::WrongSize, false))
            }
            Step::Done(r) => Ok(r),
            Step::Failed(f) => Err(f),
            Step::NeedMore => unreachable!("the loop ends on a verdict"),
        }
    }

    /// Resolves when the server closes this idle connection (end of file
    /// or an error): a keep-alive timeout during the user's OFF time.
    /// Bytes the server sends meanwhile are kept for the next response.
    /// Cancel-safe (a cancelled read loses nothing).
    pub async fn peer_closed(&mut self) {
        let mut scratch = [0u8; 512];
        loop {
            match self.stream.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(n) => self.buf.extend_from_slice(&scratch[..n]),
            }
        }
    }

    /// After the last response of a connection the server closes: wait
    /// briefly for its FIN (so TIME_WAIT stays on the server), then drop.
    pub async fn finish(mut self) {
        let mut scratch = [0u8; 512];
        let _ = tokio::time::timeout(FIN_WAIT, async {
            loop {
                match self.stream.read(&mut scratch).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reused timer moves only to an earlier deadline; a wait with a
    /// later deadline still ends only once that deadline has passed, and
    /// a ready operation is answered whatever the timer holds.
    #[tokio::test(flavor = "current_thread")]
    async fn until_ends_at_each_calls_own_deadline() {
        let mut timer = None;
        let t0 = Instant::now();
        let far = t0 + Duration::from_secs(3600);
        assert_eq!(until(&mut timer, far, async { 1 }).await, Some(1));
        // An earlier deadline moves the armed timer.
        let near = Instant::now() + Duration::from_millis(20);
        assert_eq!(
            until(&mut timer, near, std::future::pending::<()>()).await,
            None
        );
        assert!(Instant::now() >= near);
        assert_eq!(timer.as_ref().map(|t| t.deadline()), Some(near));
        // A later deadline leaves it where it was (already passed): it
        // fires at once, is moved to this call's deadline, and the wait
        // ends only then.
        let later = Instant::now() + Duration::from_millis(40);
        assert_eq!(
            until(&mut timer, later, std::future::pending::<()>()).await,
            None
        );
        assert!(Instant::now() >= later);
        assert_eq!(timer.as_ref().map(|t| t.deadline()), Some(later));
        // Ready work is done whatever the timer holds, and a later
        // deadline does not move it.
        assert_eq!(until(&mut timer, far, async { 2 }).await, Some(2));
        assert_eq!(timer.as_ref().map(|t| t.deadline()), Some(later));
    }
}
