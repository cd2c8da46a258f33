//! The recording proxy of `pagewire record` (the Chromium recorder): an
//! HTTP/1.1 proxy on loopback that the browser is pointed at
//! (`--proxy-server`). Plain `http://` requests arrive in absolute form;
//! `https://` ones in a `CONNECT` tunnel, which the proxy ends itself with a
//! certificate for the host the browser asked for, issued on the fly by a
//! CA made for this recording ([`MintingCa`]) and trusted by that browser
//! alone. Every request is sent on to the real origin (HTTP/1.1, or HTTP/2
//! when the origin agrees by ALPN), its response read whole, recorded as an
//! [`Exchange`] with its server time, and handed back to the browser.
//!
//! A failure on the way (no such host, a refused or broken TLS handshake,
//! an origin that closes mid-response, a body over [`MAX_BODY`]) answers
//! the browser with a 502 naming it, is kept in [`Log::errors`], and
//! touches no other request.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HOST};
use hyper::{Method, Request, Response, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use pagewire_client::ConnectTo;
use pagewire_replay::{Exchange, Timing};
use pagewire_tls::MintingCa;
use tokio::net::{TcpListener, TcpStream};

/// Largest request or response body the proxy carries (it holds each in
/// memory to record it).
pub const MAX_BODY: usize = 256 << 20;
/// Connecting to an origin, TLS handshake included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// From the request sent upstream to the response's last byte.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(120);
/// Idle upstream HTTP/1.1 connections kept per origin.
const MAX_IDLE_PER_ORIGIN: usize = 8;

/// How the proxy reaches origins.
pub struct Options {
    /// Trust anchors and ALPN (h2, http/1.1) of upstream TLS.
    pub upstream_tls: Arc<rustls::ClientConfig>,
    /// `--resolve` / `--connect-to` rules, first match wins.
    pub connect_to: Vec<ConnectTo>,
    /// Issues the certificates the browser sees.
    pub ca: Arc<MintingCa>,
}

/// What the proxy saw: every exchange with a whole response, and every
/// request that got none (URL and why).
#[derive(Default, Debug)]
pub struct Log {
    pub exchanges: Vec<Exchange>,
    pub errors: Vec<String>,
    /// How many exchanges went over HTTP/2 upstream.
    pub h2: usize,
}

struct Shared {
    opts: Options,
    t0: Instant,
    log: Mutex<Log>,
    in_flight: AtomicUsize,
    last_change: Mutex<Instant>,
    pool: Mutex<HashMap<Origin, Conns>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl Origin {
    /// `host[:port]` with the scheme's default port left out.
    fn authority(&self) -> String {
        let default = if self.https { 443 } else { 80 };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    fn url(&self, target: &str) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{target}", self.authority())
    }
}

#[derive(Default)]
struct Conns {
    h2: Option<(hyper::client::conn::http2::SendRequest<Full<Bytes>>, f64)>,
    idle_h1: Vec<(hyper::client::conn::http1::SendRequest<Full<Bytes>>, f64)>,
}

enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// A running proxy; it stops with the tokio runtime that runs it.
pub struct Proxy {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

type Answer = Response<Full<Bytes>>;

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) and serves until the runtime
    /// stops.
    pub async fn start(opts: Options) -> std::io::Result<Proxy> {
        Proxy::serve(TcpListener::bind("127.0.0.1:0").await?, opts)
    }

    /// Serves on `listener`, a socket bound elsewhere (`record --net`: in
    /// the link's server namespace, so the browser's every byte crosses
    /// the link while the proxy reaches origins from this process's own
    /// network), until the runtime stops.
    pub async fn start_on(
        listener: std::net::TcpListener,
        opts: Options,
    ) -> std::io::Result<Proxy> {
        listener.set_nonblocking(true)?;
        Proxy::serve(TcpListener::from_std(listener)?, opts)
    }

    fn serve(listener: TcpListener, opts: Options) -> std::io::Result<Proxy> {
        let addr = listener.local_addr()?;
        let now = Instant::now();
        let shared = Arc::new(Shared {
            opts,
            t0: now,
            log: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            last_change: Mutex::new(now),
            pool: Mutex::default(),
        });
        let s = shared.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors or the like: keep serving the
                    // connections already open, try again shortly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_client(s.clone(), stream));
            }
        });
        Ok(Proxy { addr, shared })
    }

    /// How long no request has been in flight; `None` while one is.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.shared.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        Some(lock(&self.shared.last_change).elapsed())
    }

    /// Requests seen so far (answered or not).
    pub fn requests(&self) -> usize {
        let log = lock(&self.shared.log);
        log.exchanges.len() + log.errors.len()
    }

    /// Takes what was recorded, exchanges in the order their requests were
    /// sent, times counted from the first request.
    pub fn take_log(&self) -> Log {
        let mut log = std::mem::take(&mut *lock(&self.shared.log));
        let sent = |e: &Exchange| e.timing.map_or(f64::INFINITY, |t| t.sent_ms);
        log.exchanges.sort_by(|a, b| sent(a).total_cmp(&sent(b)));
        let t0 = log.exchanges.first().map_or(0.0, sent);
        if t0.is_finite() {
            for t in log.exchanges.iter_mut().filter_map(|e| e.timing.as_mut()) {
                t.sent_ms -= t0;
                t.first_byte_ms -= t0;
                t.done_ms -= t0;
            }
        }
        log
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1e3
    }

    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        *lock(&self.last_change) = Instant::now();
    }

    fn end(&self) {
        *lock(&self.last_change) = Instant::now();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve_client(shared: Arc<Shared>, stream: TcpStream) {
    let svc = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(shared, req).await) }
    });
    // A browser that goes away mid-request ends only its own connection.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), svc)
        .with_upgrades()
        .await;
}

fn text(status: StatusCode, body: String) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// `host:port` of a CONNECT target or URL authority.
fn host_port(authority: &hyper::http::uri::Authority, default: u16) -> (String, u16) {
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    (host, authority.port_u16().unwrap_or(default))
}

/// A request to the proxy itself: a CONNECT or an absolute http:// URL.
async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Answer {
    if req.method() == Method::CONNECT {
        let Some(authority) = req.uri().authority().cloned() else {
            return text(
                StatusCode::BAD_REQUEST,
                "CONNECT without host:port\n".into(),
            );
        };
        let (host, port) = host_port(&authority, 443);
        let origin = Origin {
            https: true,
            host,
            port,
        };
        tokio::spawn(async move {
            // An error here: the browser gave up on the tunnel.
            if let Ok(up) = hyper::upgrade::on(req).await {
                serve_tunnel(shared, up, origin).await;
            }
        });
        return Response::new(Full::new(Bytes::new()));
    }
    let uri = req.uri();
    let (origin, target) = match (uri.scheme_str(), uri.authority()) {
        (Some("http"), Some(a)) => {
            let (host, port) = host_port(a, 80);
            (
                Origin {
                    https: false,
                    host,
                    port,
                },
                target_of(uri),
            )
        }
        _ => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("a proxy request needs an absolute http:// URL, not {uri}\n"),
            )
        }
    };
    relay(shared, origin, target, req).await
}

fn target_of(uri: &hyper::Uri) -> String {
    uri.path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string())
}

/// A request in a CONNECT tunnel to `origin` (another CONNECT in it is
/// refused).
async fn handle_in_tunnel(shared: Arc<Shared>, req: Request<Incoming>, origin: Origin) -> Answer {
    if req.method() == Method::CONNECT {
        return text(StatusCode::BAD_REQUEST, "CONNECT inside a tunnel\n".into());
    }
    let target = target_of(req.uri());
    relay(shared, origin, target, req).await
}

/// Sends `req` on to `origin`, records the exchange or the error.
async fn relay(
    shared: Arc<Shared>,
    origin: Origin,
    target: String,
    req: Request<Incoming>,
) -> Answer {
    let url = origin.url(&target);
    shared.begin();
    let r = forward(&shared, origin, &target, req).await;
    shared.end();
    match r {
        Ok(a) => a,
        Err(why) => {
            lock(&shared.log).errors.push(format!("{url}: {why}"));
            text(
                StatusCode::BAD_GATEWAY,
                format!("pagewire record: {url}: {why}\n"),
            )
        }
    }
}

/// Ends the browser's TLS in a CONNECT tunnel with a certificate for the
/// name it sent (SNI; the CONNECT host when it sent none, as for an IP
/// address) and serves its requests for `origin`.
async fn serve_tunnel(shared: Arc<Shared>, up: hyper::upgrade::Upgraded, origin: Origin) {
    let acceptor = tokio_rustls::LazyConfigAcceptor::new(
        rustls::server::Acceptor::default(),
        TokioIo::new(up),
    );
    let Ok(Ok(start)) = tokio::time::timeout(CONNECT_TIMEOUT, acceptor).await else {
        return;
    };
    let name = start
        .client_hello()
        .server_name()
        .map_or_else(|| origin.host.clone(), str::to_string);
    let config = match shared.opts.ca.server_config(&name) {
        Ok(c) => c,
        Err(e) => {
            lock(&shared.log).errors.push(format!(
                "{}: no certificate for {name}: {e}",
                origin.url("/")
            ));
            return;
        }
    };
    let Ok(Ok(tls)) = tokio::time::timeout(CONNECT_TIMEOUT, start.into_stream(config)).await else {
        return;
    };
    let svc = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        let origin = origin.clone();
        async move { Ok::<_, Infallible>(handle_in_tunnel(shared, req, origin).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tls), svc)
        .await;
}

/// Fields that belong to one connection, not to the message (RFC 9110
/// §7.6.1), plus the proxy's own.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "proxy-connection"
            | "keep-alive"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "proxy-authorization"
            | "proxy-authenticate"
    )
}

async fn collect(body: Incoming, what: &str) -> Result<Bytes, String> {
    let mut body = body;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| format!("{what} broke off after {} bytes: {e}", out.len()))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > MAX_BODY {
                return Err(format!("{what} exceeds {MAX_BODY} bytes"));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(out))
}

async fn forward(
    shared: &Arc<Shared>,
    origin: Origin,
    target: &str,
    req: Request<Incoming>,
) -> Result<Answer, String> {
    let (parts, body) = req.into_parts();
    let body = collect(body, "the request body").await?;
    let (sender, rtt_ms) = checkout(shared, &origin).await?;
    let h2 = matches!(sender, Sender::H2(_));
    let authority = origin.authority();
    let mut head = format!(
        "{} {target} HTTP/1.1\r\nHost: {authority}\r\n",
        parts.method
    )
    .into_bytes();
    let mut headers = HeaderMap::new();
    for (n, v) in &parts.headers {
        if hop_by_hop(n) || n == HOST {
            continue;
        }
        headers.append(n.clone(), v.clone());
        head.extend_from_slice(n.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(v.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    let mut up = Request::new(Full::new(body));
    *up.method_mut() = parts.method.clone();
    if h2 {
        *up.uri_mut() = origin
            .url(target)
            .parse()
            .map_err(|e| format!("not a URL: {e}"))?;
        *up.version_mut() = Version::HTTP_2;
    } else {
        *up.uri_mut() = target.parse().map_err(|e| format!("not a target: {e}"))?;
        *up.version_mut() = Version::HTTP_11;
        headers.insert(
            HOST,
            authority
                .parse()
                .map_err(|e| format!("not a Host value: {e}"))?,
        );
    }
    *up.headers_mut() = headers;

    let sent_ms = shared.ms();
    let exchange = async {
        let (resp, sender) = match sender {
            Sender::H1(mut s) => {
                s.ready()
                    .await
                    .map_err(|e| format!("upstream connection: {e}"))?;
                let r = s.send_request(up).await;
                (r, Some(s))
            }
            Sender::H2(mut s) => (s.send_request(up).await, None),
        };
        let resp = resp.map_err(|e| format!("no response from the origin: {e}"))?;
        let first_byte_ms = shared.ms();
        let (rparts, rbody) = resp.into_parts();
        let body = collect(rbody, "the origin's response").await?;
        Ok::<_, String>((rparts, body, first_byte_ms, sender))
    };
    let (rparts, body, first_byte_ms, sender) =
        match tokio::time::timeout(RESPONSE_TIMEOUT, exchange).await {
            Ok(r) => r?,
            Err(_) => return Err(format!("no whole response within {RESPONSE_TIMEOUT:?}")),
        };
    let done_ms = shared.ms();
    if let Some(s) = sender {
        let mut pool = lock(&shared.pool);
        let conns = pool.entry(origin.clone()).or_default();
        if conns.idle_h1.len() < MAX_IDLE_PER_ORIGIN {
            conns.idle_h1.push((s, rtt_ms));
        }
    }
    let status = rparts.status.as_u16();
    let mut answer = Response::new(Full::new(body.clone()));
    *answer.status_mut() = rparts.status;
    let mut recorded = Vec::with_capacity(rparts.headers.len());
    for (n, v) in &rparts.headers {
        if hop_by_hop(n) {
            continue;
        }
        recorded.push((n.as_str().to_string(), v.as_bytes().to_vec()));
        answer.headers_mut().append(n.clone(), v.clone());
    }
    let exchange = Exchange {
        method: parts.method.as_str().to_string(),
        url: origin.url(target),
        request_head: Some(Bytes::from(head)),
        status,
        reason: pagewire_h1::reason_phrase(status).to_string(),
        headers: recorded,
        body,
        timing: Some(Timing {
            sent_ms,
            first_byte_ms,
            done_ms,
            rtt_ms,
            server_ms: (first_byte_ms - sent_ms - rtt_ms).max(0.0),
        }),
    };
    let mut log = lock(&shared.log);
    log.exchanges.push(exchange);
    log.h2 += usize::from(h2);
    Ok(answer)
}

/// An upstream connection to `origin` ready for a request: the origin's
/// HTTP/2 connection, an idle HTTP/1.1 one, or a new one; with the
/// round-trip time its TCP handshake took.
async fn checkout(shared: &Arc<Shared>, origin: &Origin) -> Result<(Sender, f64), String> {
    {
        let mut pool = lock(&shared.pool);
        if let Some(conns) = pool.get_mut(origin) {
            if let Some((s, rtt)) = &conns.h2 {
                if !s.is_closed() {
                    return Ok((Sender::H2(s.clone()), *rtt));
                }
                conns.h2 = None;
            }
            while let Some((s, rtt)) = conns.idle_h1.pop() {
                if s.is_ready() {
                    return Ok((Sender::H1(s), rtt));
                }
            }
        }
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, connect(shared, origin)).await {
        Ok(r) => r,
        Err(_) => Err(format!(
            "no connection to {} within {CONNECT_TIMEOUT:?}",
            origin.authority()
        )),
    }
}

async fn connect(shared: &Arc<Shared>, origin: &Origin) -> Result<(Sender, f64), String> {
    let addr = match shared
        .opts
        .connect_to
        .iter()
        .find(|c| c.matches(&origin.host, origin.port))
    {
        Some(c) => c.addr,
        None => tokio::net::lookup_host((origin.host.as_str(), origin.port))
            .await
            .map_err(|e| format!("cannot resolve {}: {e}", origin.host))?
            .next()
            .ok_or_else(|| format!("{} has no address", origin.host))?,
    };
    let t = Instant::now();
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect to {addr}: {e}"))?;
    let rtt_ms = t.elapsed().as_secs_f64() * 1e3;
    let _ = tcp.set_nodelay(true);
    if !origin.https {
        let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP/1.1 to {addr}: {e}"))?;
        tokio::spawn(conn);
        return Ok((Sender::H1(s), rtt_ms));
    }
    let name = pagewire_tls::server_name(&origin.host).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(shared.opts.upstream_tls.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS with {} ({addr}): {e}", origin.host))?;
    if tls.get_ref().1.alpn_protocol() == Some(pagewire_tls::ALPN_H2) {
        let (s, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .map_err(|e| format!("HTTP/2 with {addr}: {e}"))?;
        tokio::spawn(conn);
        let s2 = s.clone();
        lock(&shared.pool).entry(origin.clone()).or_default().h2 = Some((s2, rtt_ms));
        return Ok((Sender::H2(s), rtt_ms));
    }
    let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("HTTP/1.1 with {addr}: {e}"))?;
    tokio::spawn(conn);
    Ok((Sender::H1(s), rtt_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A plain HTTP origin that answers every request with `reply` and
    /// closes.
    async fn origin(reply: &'static [u8]) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = s.write_all(reply).await;
                });
            }
        });
        addr
    }

    async fn get(proxy: SocketAddr, url: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(
            format!("GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// An origin that closes mid-response is recorded as an error and the
    /// browser gets a 502 naming it; the proxy goes on serving, and a good
    /// origin's answer is recorded whole with its timing.
    #[tokio::test]
    async fn a_broken_origin_is_an_error_and_the_proxy_keeps_serving() {
        let broken = origin(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this").await;
        let good =
            origin(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Kept: yes\r\n\r\nhello").await;
        let proxy = Proxy::start(Options {
            upstream_tls: Arc::new(pagewire_tls::upstream_client_config(None, &[]).unwrap()),
            connect_to: vec![],
            ca: Arc::new(MintingCa::new(&[pagewire_tls::ALPN_HTTP11]).unwrap()),
        })
        .await
        .unwrap();
        let bad = get(proxy.addr, &format!("http://{broken}/big")).await;
        assert!(bad.starts_with("HTTP/1.1 502"), "{bad}");
        assert!(bad.contains("broke off after 9 bytes"), "{bad}");
        let ok = get(proxy.addr, &format!("http://{good}/small?q=1")).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.ends_with("hello"), "{ok}");
        let junk = get(proxy.addr, "/not-absolute").await;
        assert!(junk.starts_with("HTTP/1.1 400"), "{junk}");
        assert!(proxy.idle_for().is_some());
        let log = proxy.take_log();
        assert_eq!(log.errors.len(), 1, "{:?}", log.errors);
        assert!(log.errors[0].contains("/big"), "{:?}", log.errors);
        assert_eq!(log.exchanges.len(), 1);
        let e = &log.exchanges[0];
        assert_eq!(e.url, format!("http://{good}/small?q=1"));
        assert_eq!(&e.body[..], b"hello");
        assert_eq!(e.header("x-kept"), Some(&b"yes"[..]));
        let head = String::from_utf8_lossy(e.request_head.as_ref().unwrap()).into_owned();
        assert!(
            head.starts_with(&format!("GET /small?q=1 HTTP/1.1\r\nHost: {good}\r\n")),
            "{head}"
        );
        assert!(!head.to_ascii_lowercase().contains("connection:"), "{head}");
        let t = e.timing.unwrap();
        assert!(
            t.sent_ms <= t.first_byte_ms && t.first_byte_ms <= t.done_ms,
            "{t:?}"
        );
    }
}
