//! Test harness: a real server on 127.0.0.1:0 in its own thread and runtime,
//! plain blocking sockets as clients, responses parsed with pagewire-h1.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use pagewire_h1::{
    parse_response, response_framing, BodyFraming, Decoded, Decoder, Limits, Method,
};
use pagewire_server::{ServerConfig, ServerStats};
use pagewire_site::store::{Site, SiteFile};

/// A running server; stopped (gracefully) on `stop` or on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<JoinHandle<io::Result<ServerStats>>>,
}

impl TestServer {
    pub fn start(site: Site, config: ServerConfig) -> TestServer {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let site = Arc::new(site);
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                addr_tx.send(listener.local_addr()?).expect("test alive");
                pagewire_server::serve(listener, site, config, async {
                    let _ = stop_rx.await;
                })
                .await
            })
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("server started");
        TestServer {
            addr,
            stop: Some(stop_tx),
            handle: Some(handle),
        }
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    pub fn stop(mut self) -> ServerStats {
        self.stop.take().map(|s| s.send(()));
        self.handle
            .take()
            .expect("running")
            .join()
            .expect("server thread")
            .expect("server result")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn config() -> ServerConfig {
    ServerConfig {
        threads: 1,
        ..Default::default()
    }
}

pub fn file(path: &str, body: impl Into<Bytes>) -> SiteFile {
    SiteFile {
        path: path.into(),
        body: body.into(),
        // 2001-09-09T01:46:40Z
        modified: UNIX_EPOCH + Duration::from_secs(1_000_000_000),
    }
}

pub fn html_body() -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html><head><title>t</title></head><body>\n");
    for i in 0..300 {
        s.push_str(&format!(
            "<p>Paragraph {i}: <img src=\"/images/i{i}.gif\"></p>\n"
        ));
    }
    s.push_str("</body></html>\n");
    s
}

/// Deterministic incompressible bytes.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

pub fn small_site() -> Site {
    Site::from_files(vec![
        file("/index.html", html_body()),
        file("/a.gif", noise(3000, 1)),
        file("/b.gif", noise(100, 2)),
        file("/dir/index.html", "<html>dir</html>"),
    ])
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads responses from one connection, keeping leftover bytes.
pub struct Reader {
    pub stream: TcpStream,
    buf: BytesMut,
    limits: Limits,
}

impl Reader {
    pub fn new(stream: TcpStream) -> Reader {
        Reader {
            stream,
            buf: BytesMut::with_capacity(64 * 1024),
            limits: Limits::default(),
        }
    }

    /// Reads more; Ok(0) at EOF.
    fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Reads one response to a request made with `method`.
    pub fn response(&mut self, method: Method) -> io::Result<Response> {
        let head = loop {
            match parse_response(&mut self.buf, &self.limits, &method) {
                Ok(Some(h)) => break h,
                Ok(None) => {
                    if self.fill()? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "eof before head",
                        ));
                    }
                }
                Err(e) => return Err(io::Error::other(format!("bad response: {e}"))),
            }
        };
        let framing = response_framing(&head, &method);
        let mut body = BytesMut::new();
        if framing != BodyFraming::Empty {
            let mut dec = Decoder::new(framing, &self.limits);
            loop {
                match dec.decode(&mut self.buf) {
                    Ok(Decoded::Data(d)) => body.extend_from_slice(&d),
                    Ok(Decoded::Done) => break,
                    Ok(Decoded::NeedMore) => {
                        if self.fill()? == 0 {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "eof in body",
                            ));
                        }
                    }
                    Err(e) => return Err(io::Error::other(format!("bad body: {e}"))),
                }
            }
        }
        Ok(Response {
            status: head.status(),
            headers: head
                .iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(k).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect(),
            body: body.freeze(),
        })
    }

    /// True when the server closed cleanly (EOF, nothing left over).
    pub fn at_eof(&mut self) -> io::Result<bool> {
        Ok(self.buf.is_empty() && self.fill()? == 0)
    }
}

/// One request on a fresh connection.
pub fn get(server: &TestServer, raw: &str) -> Response {
    let mut s = server.connect();
    s.write_all(raw.as_bytes()).unwrap();
    let method = if raw.starts_with("HEAD") {
        Method::Head
    } else {
        Method::Get
    };
    Reader::new(s).response(method).expect("response")
}

pub fn req(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n")
}

pub fn now() -> SystemTime {
    SystemTime::now()
}

/// One IPv4 TCP socket of this network namespace as `/proc/net/tcp` shows
/// it: local and remote address, state (1 established, 3 SYN received,
/// 8 close-wait, 10 listen, ...), send and receive queue in bytes (for a
/// listening socket the receive queue is the number of connections waiting
/// in its accept queue).
#[derive(Clone, Copy, Debug)]
pub struct TcpSock {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: u8,
    pub tx_queue: u64,
    pub rx_queue: u64,
}

fn proc_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let ip = u32::from_str_radix(ip, 16).ok()?.to_ne_bytes();
    Some(SocketAddr::from((ip, u16::from_str_radix(port, 16).ok()?)))
}

/// Every IPv4 TCP socket whose local or remote port is `port`.
pub fn tcp_sockets(port: u16) -> Vec<TcpSock> {
    std::fs::read_to_string("/proc/net/tcp")
        .expect("read /proc/net/tcp")
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (tx, rx) = f.get(4)?.split_once(':')?;
            Some(TcpSock {
                local: proc_addr(f.get(1)?)?,
                remote: proc_addr(f.get(2)?)?,
                state: u8::from_str_radix(f.get(3)?, 16).ok()?,
                tx_queue: u64::from_str_radix(tx, 16).ok()?,
                rx_queue: u64::from_str_radix(rx, 16).ok()?,
            })
        })
        .filter(|s| s.local.port() == port || s.remote.port() == port)
        .collect()
}

/// Polls `cond` (every 5 ms) until it holds; fails the test naming `what`
/// after `budget`. The condition is the event; the poll interval only
/// bounds how late it is seen.
pub fn wait_for(what: &str, budget: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + budget;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "not within {budget:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
