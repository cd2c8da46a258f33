//! HTTP/2 over TLS 1.3 and HTTP/3 over QUIC, beside the HTTP/1 server.
//!
//! Separate listeners, not threaded through the HTTP/1 dispatch: a TLS
//! listener on TCP that accepts ALPN `h2` (pagewire's own HTTP/2
//! connection, [`crate::http2`]), and a QUIC endpoint on the same port over UDP (`quinn` + `h3`). Both answer
//! from the same [`Handler`] as HTTP/1. A GET or HEAD of a static file
//! without preconditions, Range or GETALL field — nearly every request of a
//! page load — is answered from the fields the static handler rendered
//! when the server started (parsed once from its HTTP/1 head, plus Date)
//! and the file's body, shared, not copied ([`answer`]). Everything else
//! takes one bridge: the request's pseudo-headers and fields become an
//! HTTP/1.1 request head, the static handler answers it exactly as on
//! HTTP/1 (validators, 304, deflate by `Accept-Encoding`, ranges,
//! packages), and the response head is parsed back into a status and
//! fields, without the hop-by-hop ones HTTP/2 and HTTP/3 forbid (RFC 9113
//! §8.2.2, RFC 9114 §4.2).
//!
//! TLS with HTTP/1.1 is not offered: the HTTP/1 dispatch writes with
//! `writev` on a `TcpStream` and half-closes the socket itself (its flush
//! and close policies are about those system calls), so a TLS stream does
//! not fit it without a rewrite. A client offering only `http/1.1` is
//! refused at the handshake (`no_application_protocol`).
//!
//! When bytes move: the HTTP/2 connection writes its frames into one
//! buffer and hands TLS what a turn of the connection produced — every
//! response to the requests read so far — in one write, much like
//! `FlushPolicy::WhenIdle`;
//! quinn sends as congestion control and pacing allow (not pagewire's to
//! instrument). Connections, requests, statuses and body bytes of both are
//! counted into the same `ServerStats`.

use std::cell::RefCell;
use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use pagewire_h1::{parse_request, parse_response, write_request_head, Limits, Version};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

pub mod http2;

use crate::answer::Handler;
use crate::io::{Pools, WriteBuf, WriteStep, Writev};
use crate::respond::{h2_fields, ConnHeader, Ctx};
use crate::stats::ServerStats;

/// Most concurrent streams a client may open on one connection (HTTP/2
/// SETTINGS_MAX_CONCURRENT_STREAMS, QUIC's bidirectional stream limit).
/// Browsers see 100-256 from common servers; 256 lets the whole page be
/// requested at once.
pub const MAX_CONCURRENT_STREAMS: u32 = 256;

/// Time allowed for a TLS or QUIC handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Request fields that HTTP/2 and HTTP/3 forbid or that the bridge
/// supplies itself.
const DROPPED_REQUEST_FIELDS: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "host",
];

/// Request fields after which a static answer is more than the
/// representation's plain 200 (preconditions, ranges, GETALL by field):
/// such requests take the bridge.
static BRIDGED_REQUEST_FIELDS: [http::HeaderName; 6] = [
    http::header::RANGE,
    http::header::IF_MATCH,
    http::header::IF_NONE_MATCH,
    http::header::IF_MODIFIED_SINCE,
    http::header::IF_UNMODIFIED_SINCE,
    http::HeaderName::from_static(crate::getall::GETALL_FIELD),
];

/// The TLS (and QUIC) side of `pagewire serve --tls`.
pub struct TlsServe {
    /// TLS 1.3 config; its ALPN list is set here (`h2`).
    pub tls: tokio_rustls::rustls::ServerConfig,
    /// The UDP socket for HTTP/3 (usually the TCP listener's port); `None`:
    /// no HTTP/3.
    pub udp: Option<std::net::UdpSocket>,
}

/// One answered request, ready for an HTTP/2 or HTTP/3 response.
#[derive(Debug)]
pub struct Bridged {
    pub status: u16,
    pub fields: http::HeaderMap,
    pub body: Bytes,
}

/// Answers one HTTP/2 or HTTP/3 request: a static file's plain 200 from
/// its rendered fields ([`Handler::plain`]), everything else through
/// [`bridge_with`].
pub fn answer(bufs: &mut BridgeBufs, site: &Handler, req: &http::request::Parts) -> Bridged {
    if let Some(b) = rendered(bufs, site, req) {
        return b;
    }
    let path = req.uri.path_and_query().map_or("/", |p| p.as_str());
    let authority = req.uri.authority().map(|a| a.as_str());
    bridge_with(
        bufs,
        site,
        req.method.as_str(),
        path,
        authority,
        fields_of(&req.headers),
    )
}

/// The plain 200 of a static file, if `req` asks for nothing more.
fn rendered(bufs: &mut BridgeBufs, site: &Handler, req: &http::request::Parts) -> Option<Bridged> {
    let head_only = match req.method {
        http::Method::GET => false,
        http::Method::HEAD => true,
        _ => return None,
    };
    // One pass over the request's few fields (comparing names of known
    // fields is comparing tags), not a hash lookup per bridged name.
    if req
        .headers
        .keys()
        .any(|k| BRIDGED_REQUEST_FIELDS.contains(k))
    {
        return None;
    }
    let target = req.uri.path_and_query()?.as_str();
    // What the bridge's HTTP/1 request line takes as it is.
    if !target.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    bufs.scratch.clear();
    let accept_encoding = req
        .headers
        .get_all(http::header::ACCEPT_ENCODING)
        .into_iter()
        .map(|v| v.as_bytes());
    let accept = req
        .headers
        .get_all(http::header::ACCEPT)
        .into_iter()
        .map(|v| v.as_bytes());
    let plain = site.plain(target, accept, accept_encoding, &mut bufs.scratch)?;
    Some(Bridged {
        status: 200,
        fields: plain.fields(date_value()),
        body: if head_only {
            Bytes::new()
        } else {
            plain.body.clone()
        },
    })
}

thread_local! {
    /// The current second's `Date` value, made once per second.
    static DATE: RefCell<Option<http::HeaderValue>> = const { RefCell::new(None) };
}

/// `Date` as the HTTP/1 heads carry it ([`crate::time::with_http_date`]).
fn date_value() -> http::HeaderValue {
    crate::time::with_http_date(|now| {
        DATE.with(|c| {
            let mut c = c.borrow_mut();
            match &*c {
                Some(v) if v.as_bytes() == now => v.clone(),
                _ => {
                    let v = http::HeaderValue::from_bytes(now)
                        .unwrap_or_else(|_| http::HeaderValue::from_static(""));
                    *c = Some(v.clone());
                    v
                }
            }
        })
    })
}

/// Collects what a `WriteBuf` would write to a socket.
struct Collect<'a>(RefCell<&'a mut BytesMut>);

impl Writev for Collect<'_> {
    fn try_writev(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut v = self.0.borrow_mut();
        let mut n = 0;
        for b in bufs {
            v.extend_from_slice(b);
            n += b.len();
        }
        Ok(n)
    }
}

/// What the bridge reuses from one request to the next on a connection:
/// the output queue (with its own buffer pool, so the queue's buffer is
/// taken once, not allocated per request) and the scratch space.
#[derive(Default)]
pub struct BridgeBufs {
    pools: Pools,
    out: WriteBuf,
    head: BytesMut,
    scratch: String,
}

impl BridgeBufs {
    /// The scratch space, emptied.
    pub(crate) fn scratch(&mut self) -> &mut String {
        self.scratch.clear();
        &mut self.scratch
    }
}

/// Answers one HTTP/2 or HTTP/3 request through the HTTP/1 static handler.
/// `fields` are the request's regular fields (no pseudo-headers);
/// `authority` is `:authority`.
pub fn bridge<'a>(
    site: &Handler,
    method: &str,
    path: &str,
    authority: Option<&'a str>,
    fields: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> Bridged {
    bridge_with(
        &mut BridgeBufs::default(),
        site,
        method,
        path,
        authority,
        fields,
    )
}

/// [`bridge`] with buffers kept across the requests of a connection.
pub fn bridge_with<'a>(
    bufs: &mut BridgeBufs,
    site: &Handler,
    method: &str,
    path: &str,
    authority: Option<&'a str>,
    fields: impl Iterator<Item = (&'a str, &'a [u8])>,
) -> Bridged {
    let authority = authority.unwrap_or("");
    let host = (!authority.is_empty()).then_some(("Host", authority.as_bytes()));
    let fields_h1 = host.into_iter().chain(fields.filter(|(name, _)| {
        !DROPPED_REQUEST_FIELDS
            .iter()
            .any(|d| d.eq_ignore_ascii_case(name))
    }));
    let limits = Limits::default();
    let head = &mut bufs.head;
    head.clear();
    if write_request_head(head, method, path, Version::Http11, fields_h1).is_err() {
        return plain(400, "request cannot be expressed as HTTP/1.1\n");
    }
    let req = match parse_request(head, &limits) {
        Ok(Some(r)) => r,
        _ => return plain(400, "malformed request\n"),
    };
    let out = &mut bufs.out;
    out.ensure(&bufs.pools, 1 << 16);
    bufs.scratch.clear();
    site.answer(
        &req,
        Ctx {
            conn: ConnHeader::None,
            extra: b"",
            scratch: &mut bufs.scratch,
            body: b"",
        },
        out,
    );
    let mut resp = BytesMut::with_capacity(out.queued_bytes());
    {
        let sink = Collect(RefCell::new(&mut resp));
        // Bounded: each pass writes every queued segment (up to MAX_IOVECS).
        loop {
            match out.write_once(&sink) {
                Ok((WriteStep::Done, _)) => break,
                Ok((WriteStep::Partial, _)) => continue,
                Err(_) => return plain(500, "internal error\n"),
            }
        }
    }
    let head = match parse_response(&mut resp, &limits, &req.method()) {
        Ok(Some(h)) => h,
        _ => return plain(500, "internal error\n"),
    };
    Bridged {
        status: head.status(),
        fields: h2_fields(&head),
        body: resp.freeze(),
    }
}

/// Whether a request field (lower case) asks for more than a plain 200.
pub(crate) fn bridged_name(name: &[u8]) -> bool {
    BRIDGED_REQUEST_FIELDS
        .iter()
        .any(|f| f.as_str().as_bytes() == name)
}

/// A short text answer (errors).
pub(crate) fn plain_answer(status: u16, body: &'static str) -> Bridged {
    plain(status, body)
}

fn plain(status: u16, body: &'static str) -> Bridged {
    let mut fields = http::HeaderMap::with_capacity(1);
    fields.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    Bridged {
        status,
        fields,
        body: Bytes::from_static(body.as_bytes()),
    }
}

/// The response head of `b`, its fields moved out of `b`.
fn response(b: &mut Bridged) -> http::Response<()> {
    let mut r = http::Response::new(());
    *r.status_mut() =
        http::StatusCode::from_u16(b.status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    *r.headers_mut() = std::mem::take(&mut b.fields);
    r
}

fn fields_of(h: &http::HeaderMap) -> impl Iterator<Item = (&str, &[u8])> {
    h.iter().map(|(k, v)| (k.as_str(), v.as_bytes()))
}

/// Counters shared by the connection tasks.
#[derive(Default)]
struct Counters(Mutex<ServerStats>);

impl Counters {
    fn with(&self, f: impl FnOnce(&mut ServerStats)) {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn answered(&self, b: &Bridged) {
        self.with(|s| {
            s.requests += 1;
            match b.status {
                200..=299 => s.responses_2xx += 1,
                300..=399 => s.responses_3xx += 1,
                400..=499 => s.responses_4xx += 1,
                _ => s.responses_5xx += 1,
            }
            s.body_bytes += b.body.len() as u64;
        });
    }
}

/// Serves `site` (an `Arc<Site>` or a recorded site: [`Handler`]) over TLS
/// (HTTP/2) on `listener` and, if `tls.udp` is set, over QUIC (HTTP/3),
/// until `shutdown` completes; then closes every connection (HTTP/2
/// GOAWAY, QUIC CONNECTION_CLOSE) and returns counters.
pub async fn serve_tls<F>(
    listener: TcpListener,
    site: impl Into<Handler>,
    config: crate::ServerConfig,
    tls: TlsServe,
    shutdown: F,
) -> io::Result<ServerStats>
where
    F: Future<Output = ()>,
{
    let started = Instant::now();
    let cpu_before = crate::os::cpu_times();
    let site = Arc::new(site.into());
    let counters = Arc::new(Counters::default());
    let mut tcp_tls = tls.tls.clone();
    tcp_tls.alpn_protocols = vec![pagewire_tls::ALPN_H2.to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tcp_tls));

    let endpoint = match tls.udp {
        Some(udp) => Some(quic_endpoint(tls.tls, udp)?),
        None => None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = JoinSet::new();
    if let Some(ep) = endpoint.clone() {
        let (site, counters, stop) = (site.clone(), counters.clone(), stop_rx.clone());
        tasks.spawn(h3_accept_loop(ep, site, counters, stop));
    }
    let nagle = config.nagle;
    let accept = {
        let (site, counters, mut stop) = (site.clone(), counters.clone(), stop_rx.clone());
        async move {
            let mut conns = JoinSet::new();
            loop {
                let (stream, _peer) = tokio::select! {
                    _ = stop.changed() => break,
                    r = listener.accept() => match r {
                        Ok(x) => x,
                        Err(_) => {
                            counters.with(|s| s.accept_errors += 1);
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                            continue;
                        }
                    },
                };
                if !nagle {
                    let _ = stream.set_nodelay(true);
                }
                counters.with(|s| s.connections += 1);
                let (acceptor, site, counters, stop) = (
                    acceptor.clone(),
                    site.clone(),
                    counters.clone(),
                    stop.clone(),
                );
                conns.spawn(async move {
                    if let Err(e) = h2_conn(acceptor, stream, site, &counters, stop).await {
                        let _ = e;
                        counters.with(|s| s.io_errors += 1);
                    }
                });
                // Reap finished connections so the set stays small.
                while conns.try_join_next().is_some() {}
            }
            drop(listener);
            while conns.join_next().await.is_some() {}
        }
    };
    tasks.spawn(accept);
    shutdown.await;
    let _ = stop_tx.send(true);
    let grace = crate::policy::SHUTDOWN_GRACE;
    let _ = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    if let Some(ep) = endpoint {
        ep.close(0u32.into(), b"shutdown");
        let _ = tokio::time::timeout(grace, ep.wait_idle()).await;
    }
    let mut stats = std::mem::take(&mut *counters.0.lock().unwrap_or_else(|e| e.into_inner()));
    let cpu_after = crate::os::cpu_times();
    stats.cpu_user_seconds = cpu_after.0 - cpu_before.0;
    stats.cpu_system_seconds = cpu_after.1 - cpu_before.1;
    stats.wall_seconds = started.elapsed().as_secs_f64();
    Ok(stats)
}

async fn h2_conn(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
    site: Arc<Handler>,
    counters: &Counters,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
    let mut tls = handshake.await.map_err(|_| "TLS handshake timed out")??;
    let served = crate::http2::serve_conn(&mut tls, &site, &mut stop, |s| {
        if s.requests > 0 {
            counters.with(|c| {
                c.requests += s.requests;
                c.responses_2xx += s.responses_2xx;
                c.responses_3xx += s.responses_3xx;
                c.responses_4xx += s.responses_4xx;
                c.responses_5xx += s.responses_5xx;
                c.body_bytes += s.body_bytes;
            });
        }
    })
    .await;
    // Lingering close (paper 001, "Connection Management"): GOAWAY,
    // close_notify and FIN went out; read what the client still sends until
    // its FIN, so no client segment meets a closed socket and draws a reset.
    let (mut tcp, _) = tls.into_inner();
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
    served.map_err(Into::into)
}

/// How long a closing HTTP/2 connection waits for the client's FIN.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

fn quic_endpoint(
    mut tls: tokio_rustls::rustls::ServerConfig,
    udp: std::net::UdpSocket,
) -> io::Result<quinn::Endpoint> {
    tls.alpn_protocols = vec![pagewire_tls::ALPN_H3.to_vec()];
    tls.max_early_data_size = 0;
    let crypto =
        quinn::crypto::rustls::QuicServerConfig::try_from(tls).map_err(io::Error::other)?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(MAX_CONCURRENT_STREAMS.into());
    server.transport_config(Arc::new(transport));
    // No address validation round trip (Retry): like most deployments, the
    // first flight is answered at once.
    udp.set_nonblocking(true)?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(server),
        udp,
        Arc::new(quinn::TokioRuntime),
    )
}

async fn h3_accept_loop(
    ep: quinn::Endpoint,
    site: Arc<Handler>,
    counters: Arc<Counters>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    loop {
        let incoming = tokio::select! {
            _ = stop.changed() => break,
            i = ep.accept() => match i { Some(i) => i, None => break },
        };
        counters.with(|s| s.connections += 1);
        let (site, counters, stop) = (site.clone(), counters.clone(), stop.clone());
        conns.spawn(async move {
            if h3_conn(incoming, site, &counters, stop).await.is_err() {
                counters.with(|s| s.io_errors += 1);
            }
        });
        while conns.try_join_next().is_some() {}
    }
    while conns.join_next().await.is_some() {}
}

async fn h3_conn(
    incoming: quinn::Incoming,
    site: Arc<Handler>,
    counters: &Counters,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let conn = tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming)
        .await
        .map_err(|_| "QUIC handshake timed out")??;
    let mut h3c: h3::server::Connection<h3_quinn::Connection, Bytes> = h3::server::builder()
        .send_grease(false)
        .build(h3_quinn::Connection::new(conn))
        .await?;
    let mut streams = JoinSet::new();
    let mut bufs = BridgeBufs::default();
    loop {
        let next = tokio::select! {
            _ = stop.changed() => None,
            n = h3c.accept() => Some(n),
        };
        let Some(next) = next else {
            let _ = h3c.shutdown(0).await;
            break;
        };
        let resolver = match next {
            Ok(Some(r)) => r,
            // The client closed the connection (normally, with H3_NO_ERROR).
            Ok(None) | Err(_) => break,
        };
        let site = site.clone();
        let (req, mut stream) = match resolver.resolve_request().await {
            Ok(x) => x,
            Err(_) => continue,
        };
        let mut b = {
            let (parts, _) = req.into_parts();
            answer(&mut bufs, &site, &parts)
        };
        counters.answered(&b);
        streams.spawn(async move {
            stream.send_response(response(&mut b)).await?;
            if !b.body.is_empty() {
                stream.send_data(b.body).await?;
            }
            stream.finish().await?;
            Ok::<(), h3::error::StreamError>(())
        });
        while streams.try_join_next().is_some() {}
    }
    while streams.join_next().await.is_some() {}
    Ok(())
}

/// The listener's socket address for the UDP side: the same port.
pub fn udp_for(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    std::net::UdpSocket::bind(addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagewire_site::store::{Site, SiteFile};
    use std::time::{Duration, UNIX_EPOCH};

    fn site() -> Handler {
        let file = |path: &str, body: Vec<u8>| SiteFile {
            path: path.into(),
            body: Bytes::from(body),
            modified: UNIX_EPOCH + Duration::from_secs(1_000_000_000),
        };
        let page = format!("<html>{}</html>", "a compressible page ".repeat(200));
        let noise: Vec<u8> = (0..3000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        Handler::from(Arc::new(Site::from_files(vec![
            file("/index.html", page.into_bytes()),
            file("/a b/image.gif", noise),
            file("/dir/index.html", b"<html>dir</html>".to_vec()),
            file("/empty.txt", Vec::new()),
        ])))
    }

    /// Method, target and request fields.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

    fn parts(method: &str, target: &str, fields: &[(&str, &str)]) -> http::request::Parts {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost{target}"));
        for (k, v) in fields {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn bridged(site: &Handler, p: &http::request::Parts) -> Bridged {
        let path = p.uri.path_and_query().map_or("/", |x| x.as_str());
        let authority = p.uri.authority().map(|a| a.as_str());
        bridge(
            site,
            p.method.as_str(),
            path,
            authority,
            fields_of(&p.headers),
        )
    }

    /// Fields in order, Date's value left out (the second may tick between
    /// the two answers).
    fn fields(b: &Bridged) -> Vec<(String, Vec<u8>)> {
        b.fields
            .iter()
            .map(|(k, v)| {
                let v = if k == http::header::DATE {
                    b"(date)".to_vec()
                } else {
                    v.as_bytes().to_vec()
                };
                (k.as_str().to_string(), v)
            })
            .collect()
    }

    #[test]
    fn rendered_answers_are_what_the_bridge_answers() {
        let site = site();
        let mut bufs = BridgeBufs::default();
        let cases: &[Case] = &[
            ("GET", "/index.html", &[]),
            ("GET", "/", &[("accept-encoding", "gzip, deflate, br")]),
            (
                "GET",
                "/index.html",
                &[("accept-encoding", "deflate;q=0.5, gzip;q=0.1")],
            ),
            ("HEAD", "/index.html", &[("accept-encoding", "gzip")]),
            ("GET", "/index.html", &[("accept", "text/html, */*;q=0.8")]),
            (
                "GET",
                "/a%20b/image.gif?x=1",
                &[("accept", "*/*"), ("user-agent", "t")],
            ),
            ("GET", "/dir/", &[]),
            ("GET", "/empty.txt", &[]),
            ("HEAD", "/empty.txt", &[]),
        ];
        for (method, target, f) in cases {
            let p = parts(method, target, f);
            let fast = rendered(&mut bufs, &site, &p)
                .unwrap_or_else(|| panic!("{method} {target} {f:?} took the bridge"));
            let slow = bridged(&site, &p);
            assert_eq!(fast.status, slow.status, "{method} {target} {f:?}");
            assert_eq!(fields(&fast), fields(&slow), "{method} {target} {f:?}");
            assert_eq!(fast.body, slow.body, "{method} {target} {f:?}");
            assert!(fast.fields.contains_key(http::header::DATE));
        }
    }

    #[test]
    fn requests_asking_for_more_take_the_bridge() {
        let site = site();
        let mut bufs = BridgeBufs::default();
        let cases: &[Case] = &[
            ("GET", "/index.html", &[("range", "bytes=0-9")]),
            ("GET", "/index.html", &[("if-none-match", "\"x\"")]),
            (
                "GET",
                "/index.html",
                &[("if-modified-since", "Sun, 09 Sep 2001 01:46:40 GMT")],
            ),
            ("GET", "/index.html", &[("if-match", "*")]),
            (
                "GET",
                "/index.html",
                &[("if-unmodified-since", "Sun, 09 Sep 2001 01:46:40 GMT")],
            ),
            ("GET", "/index.html", &[("getall", "1")]),
            (
                "GET",
                "/index.html",
                &[("accept", "application/vnd.pagewire.objpack")],
            ),
            ("GET", "/index.html", &[("accept-encoding", "identity;q=0")]),
            ("POST", "/index.html", &[]),
            ("OPTIONS", "/index.html", &[]),
            ("GET", "/missing", &[]),
            ("GET", "/dir", &[]),
            ("GET", "/../etc", &[]),
        ];
        for (method, target, f) in cases {
            let p = parts(method, target, f);
            assert!(
                rendered(&mut bufs, &site, &p).is_none(),
                "{method} {target} {f:?}"
            );
            let a = answer(&mut bufs, &site, &p);
            assert_eq!(
                a.status,
                bridged(&site, &p).status,
                "{method} {target} {f:?}"
            );
        }
    }
}
