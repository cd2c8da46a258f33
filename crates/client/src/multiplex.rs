//! The `h2` and `h3` strategies: one connection (TLS 1.3 over TCP with
//! HTTP/2, or QUIC with HTTP/3), every object a stream of its own, requested
//! the moment streaming discovery finds it — pipelining without the
//! head-of-line order, and without the 1024-byte buffer or flush timer
//! (each request is its own HEADERS frame, written at once).
//!
//! What the bytes mean stays in `session`: a request is rendered there as
//! for HTTP/1.1 (the same fields, validators on revalidation, `Accept-
//! Encoding: deflate` for the page), then carried over as HTTP/2 or HTTP/3
//! fields (`:method`, `:scheme https`, `:authority`, `:path`; `Host` becomes
//! `:authority`); a response's status and fields come back to `session` as
//! an HTTP/1.1 head, its DATA as body bytes. The session's request and
//! header byte counters are therefore HTTP/1.1 sizes; what crossed the wire
//! (HPACK/QPACK-compressed) is what the link counts.
//!
//! Flow control: HTTP/2 uses the RFC's initial windows (65,535 bytes per
//! stream and for the connection, `H2_WINDOW`) and returns credit as soon
//! as data is consumed; QUIC uses quinn's defaults. Neither strategy sends
//! a request body. No server push (SETTINGS_ENABLE_PUSH 0), no 0-RTT, no
//! session resumption: every fetch pays a full TLS 1.3 handshake (one round
//! trip before the first request on QUIC, two on TCP).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use pagewire_h1::{
    parse_request, parse_response, write_response_head, Limits, Method, ResponseHead, Version,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::config::Strategy;
use crate::error::FetchError;
use crate::report::ConnEnd;
use crate::session::{ObjId, Session, PAGE};
use crate::store::Store;

/// HTTP/2 initial stream and connection windows of the robot (RFC 9113
/// §6.9.2's default).
pub const H2_WINDOW: u32 = 65_535;

/// Most streams the robot keeps open at once (the server may allow fewer;
/// h2 and h3 then queue).
const MAX_STREAMS: usize = 256;

/// How long a closing QUIC connection may take to say goodbye after the
/// last object (CONNECTION_CLOSE and its draining period).
const QUIC_CLOSE_WAIT: Duration = Duration::from_secs(2);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request as the session rendered it, as HTTP/2 / HTTP/3 fields.
fn to_request(sess: &Session, bytes: &[u8]) -> Result<http::Request<()>, FetchError> {
    let bad = || FetchError::Config("the robot rendered a request it cannot carry".into());
    let mut buf = BytesMut::from(bytes);
    let head = parse_request(&mut buf, &Limits::default())
        .map_err(|_| bad())?
        .ok_or_else(bad)?;
    let uri = format!("https://{}{}", sess.target.authority, head.target());
    let mut b = http::Request::builder()
        .method(head.method_bytes())
        .uri(uri.as_str());
    for (name, value) in head.iter() {
        if name.eq_ignore_ascii_case(b"host") || name.eq_ignore_ascii_case(b"connection") {
            continue;
        }
        let name = http::HeaderName::from_bytes(name).map_err(|_| bad())?;
        let value = http::HeaderValue::from_bytes(value).map_err(|_| bad())?;
        b = b.header(name, value);
    }
    b.body(()).map_err(|_| bad())
}

/// A response's status and fields as the HTTP/1.1 head the session reads.
fn to_head(
    resp: &http::response::Parts,
    method: &pagewire_h1::Method,
    url: &str,
) -> Result<pagewire_h1::ResponseHead, FetchError> {
    let mut out = BytesMut::with_capacity(512);
    let fields = resp.headers.iter().map(|(k, v)| (k.as_str(), v.as_bytes()));
    write_response_head(&mut out, Version::Http11, resp.status.as_u16(), fields)
        .map_err(|e| FetchError::object(url, format!("response fields: {}", e.reason())))?;
    parse_response(&mut out, &Limits::default(), method)
        .map_err(|e| FetchError::object(url, format!("response head: {}", e.reason())))?
        .ok_or_else(|| FetchError::object(url, "incomplete response head"))
}

/// What the connection's tasks (the HTTP/2 or QUIC driver, the streams)
/// tell the dispatcher, which alone owns the session.
enum Ev {
    /// Bytes read from or written to the connection (TLS records on TCP;
    /// HTTP/3: DATA payload read).
    Read(usize, Instant),
    Wrote(usize),
    /// A stream's final response head, body bytes, end.
    Head(ObjId, Box<ResponseHead>, Instant),
    Data(ObjId, Bytes, Instant),
    End(ObjId, Instant),
    /// A stream failed: the fetch fails.
    Failed(FetchError),
}

type Tx = mpsc::UnboundedSender<Ev>;

/// Counts a connection's bytes (TLS records on TCP) to the dispatcher, and
/// hands the socket back when the HTTP/2 connection is done with it (h2
/// drops its I/O object), so that the robot can close it gracefully.
struct Counting<T> {
    inner: Option<T>,
    tx: Tx,
    linger: Option<tokio::sync::oneshot::Sender<T>>,
}

impl<T> Counting<T> {
    fn io(&mut self) -> &mut T {
        self.inner.as_mut().expect("present until drop")
    }
}

impl<T> Drop for Counting<T> {
    fn drop(&mut self) {
        if let (Some(io), Some(tx)) = (self.inner.take(), self.linger.take()) {
            let _ = tx.send(io);
        }
    }
}

/// How long the robot waits for the server's FIN after its own.
const LINGER: Duration = Duration::from_secs(2);

impl<T: AsyncRead + Unpin> AsyncRead for Counting<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(self.io()).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            let _ = self.tx.send(Ev::Read(n, Instant::now()));
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counting<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(self.io()).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            let _ = self.tx.send(Ev::Wrote(n));
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(self.io()).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(self.io()).poll_shutdown(cx)
    }
}

fn client_tls(
    sess: &Session,
    alpn: &[u8],
) -> Result<tokio_rustls::rustls::ClientConfig, FetchError> {
    let ca = sess.cfg.tls_ca.as_deref().ok_or_else(|| {
        FetchError::Config(format!(
            "strategy {} needs the run's CA certificate (--ca FILE)",
            sess.cfg.strategy
        ))
    })?;
    pagewire_tls::client_config(ca, &[alpn]).map_err(|e| FetchError::Config(e.to_string()))
}

fn connect_error(addr: SocketAddr, e: impl std::fmt::Display) -> FetchError {
    FetchError::Connect {
        addr: addr.to_string(),
        reason: e.to_string(),
    }
}

/// Runs the whole fetch over one multiplexed connection.
pub(crate) async fn run(sess: &mut Session, store: &mut Store) -> Result<(), FetchError> {
    match sess.cfg.strategy {
        Strategy::H2 => run_h2(sess, store).await,
        Strategy::H3 => run_h3(sess, store).await,
        s => Err(FetchError::Config(format!("{s} is not multiplexed"))),
    }
}

/// One stream's request, built by the session before the stream starts.
struct Ask {
    id: ObjId,
    url: String,
    method: Method,
    req: http::Request<()>,
    /// The object deadline.
    object: Duration,
}

/// What a stream task needs to send one request and report its response.
trait Streams: Clone + Send + 'static {
    /// Sends `ask`'s request and reports its response to `tx`, counting
    /// its body bytes in `received`.
    fn exchange(
        self,
        ask: Ask,
        tx: Tx,
        received: &AtomicU64,
    ) -> impl std::future::Future<Output = Result<(), FetchError>> + Send;
}

/// A stream task: the exchange under the object deadline (an endless body,
/// a trickle or a flood of interim heads on one stream must end the fetch
/// on time, as on HTTP/1.x), counted from when the stream starts; its
/// failure goes to the dispatcher.
async fn stream_task<S: Streams>(s: S, ask: Ask, tx: Tx) {
    let (url, object) = (ask.url.clone(), ask.object);
    let received = AtomicU64::new(0);
    let exchange = s.exchange(ask, tx.clone(), &received);
    let r = match tokio::time::timeout(object, exchange).await {
        Ok(r) => r,
        Err(_) => Err(FetchError::ObjectDeadline {
            url,
            after: object,
            received: received.load(Ordering::Relaxed),
        }),
    };
    if let Err(e) = r {
        let _ = tx.send(Ev::Failed(e));
    }
}

/// Dispatches objects to streams as they are found, until every object is
/// answered (the same loop as HTTP/1.0's connections, with streams), and
/// hands every event of the connection to the session. The read timeout
/// applies to the connection: streams share it and may wait for each
/// other, but nothing arriving on any of them for `timeouts.read` while
/// some are open fails the fetch.
async fn dispatch<S: Streams>(
    sess: &mut Session,
    store: &mut Store,
    s: S,
    conn: usize,
    tx: &Tx,
    rx: &mut mpsc::UnboundedReceiver<Ev>,
) -> Result<(), FetchError> {
    let read_timeout = sess.cfg.timeouts.read;
    let mut last = Instant::now();
    let mut open: Vec<ObjId> = Vec::new();
    let mut pending = VecDeque::from([PAGE]);
    let mut tasks: JoinSet<()> = JoinSet::new();
    // Bounded: every object is requested once per reason the session gives
    // (discovery, GET after a changed HEAD), and the object table is bounded.
    loop {
        while open.len() < MAX_STREAMS {
            let Some(id) = pending.pop_front() else { break };
            if open.is_empty() {
                // The wait for a response starts now.
                last = Instant::now();
            }
            open.push(id);
            let bytes = sess.request(id, conn, Instant::now())?;
            let ask = Ask {
                id,
                url: sess.url_of(id),
                method: sess.method_of(id),
                req: to_request(sess, &bytes)?,
                object: sess.cfg.timeouts.object,
            };
            tasks.spawn(stream_task(s.clone(), ask, tx.clone()));
        }
        if open.is_empty() && pending.is_empty() {
            let more = sess.take_prefetch_work();
            if more.is_empty() {
                return Ok(());
            }
            pending.extend(more);
            continue;
        }
        let silent_until = tokio::time::Instant::from_std(last + read_timeout);
        tokio::select! {
            Some(ev) = rx.recv() => {
                if let Some(t) = on_event(sess, conn, ev, &mut open, &mut pending)? {
                    last = t;
                }
                crate::drain_writes(sess, store);
            }
            Some(done) = tasks.join_next() => {
                if let Err(e) = done {
                    return Err(FetchError::Config(format!("stream task failed: {e}")));
                }
            }
            _ = tokio::time::sleep_until(silent_until) => {
                if last + read_timeout <= Instant::now() {
                    let url = sess.url_of(open.first().copied().unwrap_or(PAGE));
                    return Err(FetchError::ReadTimeout { url, after: read_timeout });
                }
            }
        }
    }
}

/// One event of the connection into the session; objects found go to
/// `pending`. Returns the time of a response's progress.
fn on_event(
    sess: &mut Session,
    conn: usize,
    ev: Ev,
    open: &mut Vec<ObjId>,
    pending: &mut VecDeque<ObjId>,
) -> Result<Option<Instant>, FetchError> {
    match ev {
        Ev::Read(n, t) => sess.read(conn, n, t),
        Ev::Wrote(n) => sess.wrote(conn, n),
        Ev::Head(id, head, t) => {
            let (_, new) = sess.on_head(id, conn, &head, t)?;
            pending.extend(new);
            return Ok(Some(t));
        }
        Ev::Data(id, data, t) => {
            pending.extend(sess.on_body(id, &data, t)?);
            return Ok(Some(t));
        }
        Ev::End(id, t) => {
            open.retain(|&o| o != id);
            pending.extend(sess.on_end(id, t)?);
        }
        Ev::Failed(e) => return Err(e),
    }
    Ok(None)
}

/// The connection's byte counts still queued (after the dispatcher ended:
/// the goodbye's bytes) into the session.
fn drain_counts(sess: &mut Session, conn: usize, rx: &mut mpsc::UnboundedReceiver<Ev>) {
    while let Ok(ev) = rx.try_recv() {
        match ev {
            Ev::Read(n, t) => sess.read(conn, n, t),
            Ev::Wrote(n) => sess.wrote(conn, n),
            _ => {}
        }
    }
}

// ---- HTTP/2 -------------------------------------------------------------

#[derive(Clone)]
struct H2(h2::client::SendRequest<Bytes>);

impl Streams for H2 {
    async fn exchange(self, ask: Ask, tx: Tx, received: &AtomicU64) -> Result<(), FetchError> {
        let Ask {
            id,
            url,
            method,
            req,
            ..
        } = ask;
        let stream_err = |e: h2::Error| FetchError::object(&url, format!("HTTP/2: {e}"));
        let mut send = self.0.ready().await.map_err(stream_err)?;
        let (resp, _) = send.send_request(req, true).map_err(stream_err)?;
        let resp = resp.await.map_err(stream_err)?;
        let (parts, mut body) = resp.into_parts();
        let head = to_head(&parts, &method, &url)?;
        let _ = tx.send(Ev::Head(id, Box::new(head), Instant::now()));
        // Bounded by the response's DATA frames and the object deadline.
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(stream_err)?;
            received.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            let _ = body.flow_control().release_capacity(chunk.len());
            let _ = tx.send(Ev::Data(id, chunk, Instant::now()));
        }
        let _ = tx.send(Ev::End(id, Instant::now()));
        Ok(())
    }
}

async fn run_h2(sess: &mut Session, store: &mut Store) -> Result<(), FetchError> {
    let addr = sess.addr;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(client_tls(sess, pagewire_tls::ALPN_H2)?));
    let name = pagewire_tls::server_name(&sess.target.host)
        .map_err(|e| FetchError::Config(e.to_string()))?;
    let connect_timeout = sess.cfg.timeouts.connect;
    let connect_started = Instant::now();
    let tcp = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| connect_error(addr, "no answer (connect timeout)"))?
        .map_err(|e| connect_error(addr, e))?;
    if sess.cfg.nodelay {
        let _ = tcp.set_nodelay(true);
    }
    let connected = Instant::now();
    let conn = sess.conn_opened(connected);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (linger_tx, linger_rx) = tokio::sync::oneshot::channel();
    let io = Counting {
        inner: Some(tcp),
        tx: tx.clone(),
        linger: Some(linger_tx),
    };
    let result = async {
        let tls = tokio::time::timeout(connect_timeout, tls.connect(name, io))
            .await
            .map_err(|_| connect_error(addr, "TLS handshake timed out"))?
            .map_err(|e| connect_error(addr, format!("TLS handshake: {e}")))?;
        sess.conn_handshake(conn, connected - connect_started, Some(connected.elapsed()));
        if tls.get_ref().1.alpn_protocol() != Some(pagewire_tls::ALPN_H2) {
            return Err(connect_error(addr, "the server did not agree to h2 (ALPN)"));
        }
        let (send, connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(H2_WINDOW)
            .initial_connection_window_size(H2_WINDOW)
            .max_concurrent_streams(MAX_STREAMS as u32)
            .handshake::<_, Bytes>(tls)
            .await
            .map_err(|e| connect_error(addr, format!("HTTP/2 handshake: {e}")))?;
        let driver = tokio::spawn(connection);
        drain_counts(sess, conn, &mut rx);
        let r = dispatch(sess, store, H2(send), conn, &tx, &mut rx).await;
        // Every SendRequest handle is gone: the connection ends once its
        // streams are (h2 sends GOAWAY, TLS close_notify, then FIN).
        let _ = tokio::time::timeout(LINGER, driver).await;
        r
    }
    .await;
    // Close as paper 001's servers should: after our FIN, read until the
    // server's (its GOAWAY and close_notify), so no segment of the server
    // meets a closed socket and is answered with a reset.
    if let Ok(Ok(mut tcp)) = tokio::time::timeout(LINGER, linger_rx).await {
        use tokio::io::AsyncReadExt as _;
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(LINGER, async {
            // Bounded by LINGER.
            while let Ok(n) = tcp.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    }
    drain_counts(sess, conn, &mut rx);
    let end = match &result {
        Ok(()) => ConnEnd::Done,
        Err(e) => ConnEnd::Error(e.to_string()),
    };
    sess.conn_closed(conn, end, Instant::now());
    result
}

// ---- HTTP/3 -------------------------------------------------------------

#[derive(Clone)]
struct H3(h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>);

impl Streams for H3 {
    async fn exchange(mut self, ask: Ask, tx: Tx, received: &AtomicU64) -> Result<(), FetchError> {
        let Ask {
            id,
            url,
            method,
            req,
            ..
        } = ask;
        let err = |e: BoxError| FetchError::object(&url, format!("HTTP/3: {e}"));
        let mut stream = self.0.send_request(req).await.map_err(|e| err(e.into()))?;
        stream.finish().await.map_err(|e| err(e.into()))?;
        // Interim (1xx) heads before the final one are skipped, as many
        // as HTTP/1.x allows: a flood of them is not progress.
        let mut interim = 0u32;
        let resp = loop {
            let resp = stream.recv_response().await.map_err(|e| err(e.into()))?;
            if !resp.status().is_informational() {
                break resp;
            }
            interim += 1;
            if interim > crate::conn::MAX_INTERIM_RESPONSES {
                return Err(err(format!(
                    "more than {} interim (1xx) responses",
                    crate::conn::MAX_INTERIM_RESPONSES
                )
                .into()));
            }
        };
        let (parts, ()) = resp.into_parts();
        let head = to_head(&parts, &method, &url)?;
        let want = match head.body_framing() {
            pagewire_h1::BodyFraming::Length(n) => Some(n),
            pagewire_h1::BodyFraming::Empty => Some(0),
            _ => None,
        };
        let _ = tx.send(Ev::Head(id, Box::new(head), Instant::now()));
        // Bounded by the response's DATA frames and the object deadline.
        while let Some(mut chunk) = stream.recv_data().await.map_err(|e| err(e.into()))? {
            let data = chunk.copy_to_bytes(chunk.remaining());
            received.fetch_add(data.len() as u64, Ordering::Relaxed);
            let now = Instant::now();
            let _ = tx.send(Ev::Read(data.len(), now));
            let _ = tx.send(Ev::Data(id, data, now));
        }
        // The h3 crate does not hold DATA to Content-Length (RFC 9114
        // section 4.1.2: a mismatch is malformed): a body cut short, by
        // the stream's end or a reset read as its end, is an error,
        // not a smaller object.
        let got = received.load(Ordering::Relaxed);
        if let Some(n) = want.filter(|n| *n != got) {
            return Err(err(format!(
                "the body ended after {got} of its {n} bytes (Content-Length)"
            )
            .into()));
        }
        let _ = tx.send(Ev::End(id, Instant::now()));
        Ok(())
    }
}

async fn run_h3(sess: &mut Session, store: &mut Store) -> Result<(), FetchError> {
    let addr = sess.addr;
    let mut tls = client_tls(sess, pagewire_tls::ALPN_H3)?;
    tls.enable_early_data = false;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| FetchError::Config(format!("QUIC TLS configuration: {e}")))?;
    let bind: SocketAddr = if addr.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let mut endpoint = quinn::Endpoint::client(bind).map_err(|e| connect_error(addr, e))?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let host = sess.target.host.clone();
    let connecting = endpoint
        .connect(addr, &host)
        .map_err(|e| connect_error(addr, e))?;
    let opened = Instant::now();
    let conn = sess.conn_opened(opened);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = async {
        let quic = tokio::time::timeout(sess.cfg.timeouts.connect, connecting)
            .await
            .map_err(|_| connect_error(addr, "QUIC handshake timed out"))?
            .map_err(|e| connect_error(addr, format!("QUIC handshake: {e}")))?;
        // QUIC sets up transport and TLS in one handshake, after `opened`.
        sess.conn_handshake(conn, Duration::ZERO, Some(opened.elapsed()));
        let (mut driver, send) = h3::client::builder()
            .send_grease(false)
            .build::<_, _, Bytes>(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| connect_error(addr, format!("HTTP/3 setup: {e}")))?;
        let drive = tokio::spawn(async move {
            std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        let r = dispatch(sess, store, H3(send), conn, &tx, &mut rx).await;
        // Close at once (H3_NO_ERROR) like a browser leaving the page, and
        // let the CONNECTION_CLOSE go out before the endpoint is dropped.
        quic.close(0x100u32.into(), b"");
        drive.abort();
        let _ = tokio::time::timeout(QUIC_CLOSE_WAIT, endpoint.wait_idle()).await;
        r
    }
    .await;
    let end = match &result {
        Ok(()) => ConnEnd::Done,
        Err(e) => ConnEnd::Error(e.to_string()),
    };
    sess.conn_closed(conn, end, Instant::now());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;
    use crate::config::FetchConfig;
    use crate::report::Outcome;
    use crate::session::tests::{gif, page_html, session, text};

    /// An answer of the scripted server: status, fields, body.
    type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

    /// The dispatcher's side of one h2 or h3 visit without a connection:
    /// each object the session asks for becomes a request (checked to
    /// carry over as HTTP/2 fields), and `answer`'s response comes back as
    /// the events a stream task sends (head, data, end), in virtual time.
    /// Returns the session and the requests as the session rendered them.
    fn play(
        strategy: Strategy,
        cache: &Cache,
        revalidate: bool,
        answer: &dyn Fn(&str) -> Answer,
    ) -> (Session, Vec<String>) {
        let setup = |c: &mut FetchConfig| {
            c.url = c.url.replace("http://", "https://");
            c.revalidate = revalidate;
        };
        let (mut s, t0) = session(strategy, setup, Some(cache));
        assert_eq!(s.conn_opened(t0), 0);
        let (mut open, mut pending) = (Vec::new(), VecDeque::from([PAGE]));
        let mut requests = Vec::new();
        let mut t = t0;
        // Bounded: the page and its two images.
        while let Some(id) = pending.pop_front() {
            let bytes = s.request(id, 0, t).unwrap();
            let req = to_request(&s, &bytes).unwrap();
            assert_eq!(req.uri().scheme_str(), Some("https"));
            assert!(req.headers().get("host").is_none(), "Host is :authority");
            let r = text(&bytes);
            let (status, fields, body) = answer(&r);
            requests.push(r);
            open.push(id);
            let mut resp = http::Response::builder().status(status);
            for (k, v) in fields {
                resp = resp.header(k, v);
            }
            let (parts, ()) = resp.body(()).unwrap().into_parts();
            let head = to_head(&parts, &s.method_of(id), &s.url_of(id)).unwrap();
            t += Duration::from_millis(10);
            let mut events = vec![
                Ev::Read(100 + body.len(), t),
                Ev::Head(id, Box::new(head), t),
            ];
            if !body.is_empty() {
                events.push(Ev::Data(id, Bytes::from(body), t));
            }
            events.push(Ev::End(id, t));
            for ev in events {
                on_event(&mut s, 0, ev, &mut open, &mut pending).unwrap();
            }
            assert!(!open.contains(&id), "an end closes its stream");
        }
        (s, requests)
    }

    fn validators(path: &str) -> (&'static str, &'static str) {
        match path {
            "/index.html" => ("\"p\"", "Sat, 21 Nov 2026 05:00:00 GMT"),
            "/a.gif" => ("\"a\"", "Sat, 21 Nov 2026 05:00:01 GMT"),
            _ => ("\"b\"", "Sat, 21 Nov 2026 05:00:02 GMT"),
        }
    }

    fn path_of(request: &str) -> &str {
        request.split(' ').nth(1).unwrap_or("")
    }

    /// h2 and h3, first visit and revalidation, as effects: the page asked
    /// for with deflate, the images as discovery finds them, every object
    /// on a stream of its own; then conditional requests with the cached
    /// validators, all 304, nothing for the cache to write.
    #[test]
    fn multiplexed_first_visit_and_revalidation() {
        for strategy in [Strategy::H2, Strategy::H3] {
            let dir = tempfile::tempdir().unwrap();
            let cache = Cache::open(dir.path()).unwrap();
            let first = |r: &str| -> Answer {
                let path = path_of(r);
                let (etag, lm) = validators(path);
                let body = if path == "/index.html" {
                    page_html().to_vec()
                } else {
                    gif(path.len() as u8)
                };
                let fields = vec![
                    ("content-length", body.len().to_string()),
                    ("etag", etag.to_string()),
                    ("last-modified", lm.to_string()),
                ];
                (200, fields, body)
            };
            let (mut s, reqs) = play(strategy, &cache, false, &first);
            let paths: Vec<&str> = reqs.iter().map(|r| path_of(r)).collect();
            assert_eq!(paths, ["/index.html", "/a.gif", "/b.gif"], "{strategy}");
            assert!(
                reqs[0].contains("Accept-Encoding: deflate\r\n"),
                "{}",
                reqs[0]
            );
            assert!(!reqs[1].contains("Accept-Encoding"), "{}", reqs[1]);
            let (report, writes) = s.finish();
            // What the connection read: the Read events, not the bodies.
            let bodies = page_html().len() + 2 * gif(0).len();
            assert_eq!(report.bytes.total_bytes_received, (3 * 100 + bodies) as u64);
            assert_eq!(writes.len(), 3, "{strategy}");
            for w in writes {
                w.apply(&cache).unwrap();
            }

            let second = |r: &str| -> Answer {
                let (etag, lm) = validators(path_of(r));
                assert!(r.contains(&format!("\r\nIf-None-Match: {etag}\r\n")), "{r}");
                assert!(
                    r.contains(&format!("\r\nIf-Modified-Since: {lm}\r\n")),
                    "{r}"
                );
                (304, vec![("etag", etag.to_string())], Vec::new())
            };
            let (mut s, reqs) = play(strategy, &cache, true, &second);
            assert_eq!(reqs.len(), 3, "{strategy}");
            let (report, writes) = s.finish();
            assert!(writes.is_empty(), "{strategy}");
            assert!(report
                .objects
                .iter()
                .all(|o| o.outcome == Outcome::NotModified));
        }
    }

    /// A stream's failure ends the fetch with its error.
    #[test]
    fn a_failed_stream_fails_the_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let (mut s, _) = session(Strategy::H2, |_| {}, Some(&cache));
        let (mut open, mut pending) = (vec![PAGE], VecDeque::new());
        let e = FetchError::object("https://example.test/index.html", "HTTP/2: reset");
        let r = on_event(&mut s, 0, Ev::Failed(e), &mut open, &mut pending);
        assert!(r.unwrap_err().to_string().contains("reset"));
    }
}
