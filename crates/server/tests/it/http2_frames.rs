//! pagewire's own HTTP/2 connection (`serve_tls`), frame by frame: a
//! scripted client over real TLS on loopback writes raw frames and checks
//! the exact frames that come back (RFC 9113).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pagewire_server::http2::{code, flag, frame, hpack_field, PREFACE};
use pagewire_server::{ServerStats, TlsServe};
use pagewire_site::store::Site;
use tokio_rustls::rustls;

use crate::common::{self, file, noise};

/// The big file: larger than the connection's initial window (65,535).
const BIG: usize = 200_000;

struct H2Server {
    addr: SocketAddr,
    ca: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<JoinHandle<std::io::Result<ServerStats>>>,
}

impl H2Server {
    fn start() -> H2Server {
        let site = Site::from_files(vec![
            file("/small.txt", b"hello, h2\n".to_vec()),
            file("/big.bin", noise(BIG, 7)),
        ]);
        let ca = pagewire_tls::MintingCa::new(&[b"h2"]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.ca_pem()).unwrap();
        let tls = (*ca.server_config("localhost").unwrap()).clone();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                addr_tx.send(listener.local_addr()?).expect("test alive");
                pagewire_server::serve_tls(
                    listener,
                    Arc::new(site),
                    common::config(),
                    TlsServe { tls, udp: None },
                    async {
                        let _ = stop_rx.await;
                    },
                )
                .await
            })
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        H2Server {
            addr,
            ca: dir,
            stop: Some(stop_tx),
            handle: Some(handle),
        }
    }

    /// A TLS connection (ALPN h2), nothing sent yet.
    fn tls(&self) -> Client {
        let cfg = pagewire_tls::client_config(&self.ca.path().join("ca.pem"), &[b"h2"]).unwrap();
        let name = pagewire_tls::server_name("localhost").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
        let tcp = TcpStream::connect(self.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.set_nodelay(true).unwrap();
        Client {
            io: rustls::StreamOwned::new(conn, tcp),
            buf: Vec::new(),
        }
    }

    /// A connection past the preface and the SETTINGS exchange.
    fn connect(&self) -> Client {
        self.connect_with(&[])
    }

    fn connect_with(&self, settings: &[(u16, u32)]) -> Client {
        let mut c = self.tls();
        c.io.write_all(PREFACE).unwrap();
        let mut p = Vec::new();
        for (id, v) in settings {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        c.send(frame::SETTINGS, 0, 0, &p);
        // The server's SETTINGS come first, then the ACK of ours.
        let f = c.frame();
        assert_eq!((f.kind, f.flags, f.stream), (frame::SETTINGS, 0, 0));
        assert_eq!(f.payload.len() % 6, 0);
        let f = c.frame();
        assert_eq!(
            (f.kind, f.flags, f.payload.len()),
            (frame::SETTINGS, flag::ACK, 0)
        );
        c.send(frame::SETTINGS, flag::ACK, 0, &[]);
        c
    }

    fn stop(mut self) -> ServerStats {
        let _ = self.stop.take().unwrap().send(());
        self.handle.take().unwrap().join().unwrap().unwrap()
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[derive(Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

struct Client {
    io: rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

/// A request's field block (literals, no dynamic table).
fn block(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    hpack_field(&mut b, b":method", method.as_bytes());
    hpack_field(&mut b, b":scheme", b"https");
    hpack_field(&mut b, b":authority", b"localhost");
    hpack_field(&mut b, b":path", path.as_bytes());
    for (k, v) in extra {
        hpack_field(&mut b, k.as_bytes(), v.as_bytes());
    }
    b
}

impl Client {
    fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let mut f = Vec::with_capacity(9 + payload.len());
        let l = (payload.len() as u32).to_be_bytes();
        f.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        self.io.write_all(&f).unwrap();
        self.io.flush().unwrap();
    }

    fn get(&mut self, stream: u32, path: &str) {
        let b = block("GET", path, &[]);
        self.send(
            frame::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            stream,
            &b,
        );
    }

    /// The next frame; `None` at the end of the connection.
    fn next(&mut self) -> Option<Frame> {
        loop {
            if self.buf.len() >= 9 {
                let len = ((self.buf[0] as usize) << 16)
                    | ((self.buf[1] as usize) << 8)
                    | self.buf[2] as usize;
                if self.buf.len() >= 9 + len {
                    let f = Frame {
                        kind: self.buf[3],
                        flags: self.buf[4],
                        stream: u32::from_be_bytes(self.buf[5..9].try_into().unwrap()),
                        payload: self.buf[9..9 + len].to_vec(),
                    };
                    self.buf.drain(..9 + len);
                    return Some(f);
                }
            }
            let mut b = [0u8; 16384];
            match self.io.read(&mut b) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&b[..n]),
                // A reset after GOAWAY also ends the connection.
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => return None,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    fn frame(&mut self) -> Frame {
        self.next().expect("a frame before the end")
    }

    /// Reads to GOAWAY; returns its error code and checks the connection
    /// then ends.
    fn goaway(&mut self) -> u32 {
        // Bounded by the server's output and the read timeout.
        loop {
            match self.next() {
                Some(f) if f.kind == frame::GOAWAY => {
                    assert_eq!(f.stream, 0);
                    let code = u32::from_be_bytes(f.payload[4..8].try_into().unwrap());
                    assert!(self.next().is_none(), "frames after GOAWAY");
                    return code;
                }
                Some(_) => continue,
                None => panic!("the connection ended without GOAWAY"),
            }
        }
    }

    /// The response on `stream`: status and body (frames of other streams
    /// and control frames skipped).
    fn response(&mut self, stream: u32) -> (u16, Vec<u8>) {
        let mut dec = httlib_hpack::Decoder::with_dynamic_size(4096);
        let mut status = 0;
        let mut body = Vec::new();
        // Bounded by the server's output and the read timeout.
        loop {
            let f = self.frame();
            if f.stream != stream {
                continue;
            }
            match f.kind {
                frame::HEADERS => {
                    assert!(f.flags & flag::END_HEADERS != 0);
                    let mut fields = Vec::new();
                    dec.decode(&mut f.payload.clone(), &mut fields).unwrap();
                    for (k, v, _) in fields {
                        if k == b":status" {
                            status = std::str::from_utf8(&v).unwrap().parse().unwrap();
                        }
                    }
                    if f.flags & flag::END_STREAM != 0 {
                        return (status, body);
                    }
                }
                frame::DATA => {
                    body.extend_from_slice(&f.payload);
                    if f.flags & flag::END_STREAM != 0 {
                        return (status, body);
                    }
                }
                frame::RST_STREAM => panic!("stream {stream} reset: {:?}", f.payload),
                _ => {}
            }
        }
    }
}

fn window_update(c: &mut Client, stream: u32, n: u32) {
    c.send(frame::WINDOW_UPDATE, 0, stream, &n.to_be_bytes());
}

#[test]
fn settings_ping_and_a_get_are_answered() {
    let server = H2Server::start();
    let mut c = server.connect();
    c.send(frame::PING, 0, 0, b"12345678");
    let f = c.frame();
    assert_eq!((f.kind, f.flags, f.stream), (frame::PING, flag::ACK, 0));
    assert_eq!(f.payload, b"12345678");
    c.get(1, "/small.txt");
    assert_eq!(c.response(1), (200, b"hello, h2\n".to_vec()));
    // PRIORITY is accepted and ignored; unknown frame types too.
    c.send(frame::PRIORITY, 0, 3, &[0, 0, 0, 0, 16]);
    c.send(0xfa, 0, 0, b"ignored");
    c.get(3, "/missing");
    assert_eq!(c.response(3).0, 404);
    drop(c);
    let stats = server.stop();
    assert_eq!(stats.requests, 2);
    assert_eq!((stats.responses_2xx, stats.responses_4xx), (1, 1));
}

/// DATA stops at the stream's window, then at the connection's (65,535),
/// and goes on only after a WINDOW_UPDATE; the whole file arrives.
#[test]
fn data_waits_for_window_updates() {
    let server = H2Server::start();
    let mut c = server.connect_with(&[(0x4, 1000)]);
    c.get(1, "/big.bin");
    let mut got = Vec::new();
    // DATA up to `want` bytes, then a PING whose ACK must come before any
    // more DATA: what the windows allowed went out, and nothing else.
    let held = |c: &mut Client, got: &mut Vec<u8>, want: usize| {
        // Bounded by the read timeout.
        while got.len() < want {
            let f = c.frame();
            if f.kind == frame::DATA {
                got.extend_from_slice(&f.payload);
            }
        }
        c.send(frame::PING, 0, 0, b"window!!");
        loop {
            let f = c.frame();
            match f.kind {
                frame::DATA => got.extend_from_slice(&f.payload),
                frame::PING => break,
                _ => {}
            }
        }
    };
    held(&mut c, &mut got, 1000);
    assert_eq!(got.len(), 1000, "the stream's window holds DATA");
    // The stream's window opens wide; the connection's (65,535) holds.
    window_update(&mut c, 1, 1 << 30);
    held(&mut c, &mut got, 65_535);
    assert_eq!(got.len(), 65_535, "the connection's window holds DATA");
    window_update(&mut c, 0, 1 << 30);
    // Bounded by the file's size.
    loop {
        let f = c.frame();
        if f.kind == frame::DATA {
            assert!(f.payload.len() <= 16_384, "MAX_FRAME_SIZE");
            got.extend_from_slice(&f.payload);
            if f.flags & flag::END_STREAM != 0 {
                break;
            }
        }
    }
    assert!(got == noise(BIG, 7), "the whole file, in order");
}

#[test]
fn a_header_block_in_continuation_frames_is_one_request() {
    let server = H2Server::start();
    let mut c = server.connect();
    let b = block("GET", "/small.txt", &[("user-agent", "frames")]);
    let (a, rest) = b.split_at(7);
    let (m, z) = rest.split_at(5);
    c.send(frame::HEADERS, flag::END_STREAM, 1, a);
    c.send(frame::CONTINUATION, 0, 1, m);
    c.send(frame::CONTINUATION, flag::END_HEADERS, 1, z);
    assert_eq!(c.response(1), (200, b"hello, h2\n".to_vec()));
}

/// A request body larger than the windows: the server gives the windows
/// back (WINDOW_UPDATE), then answers.
#[test]
fn a_request_body_gets_window_updates() {
    let server = H2Server::start();
    let mut c = server.connect();
    let b = block("POST", "/small.txt", &[("content-length", "150000")]);
    c.send(frame::HEADERS, flag::END_HEADERS, 1, &b);
    let (mut conn_w, mut stream_w) = (65_535i64, 65_535i64);
    let mut sent = 0usize;
    let chunk = [b'x'; 10_000];
    // Bounded: 15 frames, each waiting for at most a read timeout.
    while sent < 150_000 {
        if conn_w >= 10_000 && stream_w >= 10_000 {
            sent += 10_000;
            let end = if sent == 150_000 { flag::END_STREAM } else { 0 };
            c.send(frame::DATA, end, 1, &chunk);
            conn_w -= 10_000;
            stream_w -= 10_000;
            continue;
        }
        let f = c.frame();
        if f.kind == frame::WINDOW_UPDATE {
            let n = u32::from_be_bytes(f.payload[..4].try_into().unwrap()) as i64;
            if f.stream == 0 {
                conn_w += n;
            } else {
                assert_eq!(f.stream, 1);
                stream_w += n;
            }
        }
    }
    // A static site has no POST: the HTTP/1 handler's answer, bridged.
    assert_eq!(c.response(1).0, 405);
}

/// Each case on its own connection: the frames sent and the GOAWAY code
/// expected. The server serves a new connection after all of them.
#[test]
fn protocol_errors_draw_goaway_with_their_code() {
    type Script = fn(&mut Client);
    let cases: &[(&str, Script, u32)] = &[
        (
            "DATA on stream 0",
            |c| c.send(frame::DATA, 0, 0, b"x"),
            code::PROTOCOL_ERROR,
        ),
        (
            "SETTINGS of 5 bytes",
            |c| c.send(frame::SETTINGS, 0, 0, &[0; 5]),
            code::FRAME_SIZE_ERROR,
        ),
        (
            "SETTINGS on a stream",
            |c| c.send(frame::SETTINGS, 0, 1, &[]),
            code::PROTOCOL_ERROR,
        ),
        (
            "PING of 7 bytes",
            |c| c.send(frame::PING, 0, 0, &[0; 7]),
            code::FRAME_SIZE_ERROR,
        ),
        (
            "WINDOW_UPDATE of 0 on the connection",
            |c| window_update(c, 0, 0),
            code::PROTOCOL_ERROR,
        ),
        (
            "connection window over 2^31-1",
            |c| window_update(c, 0, 0x7fff_ffff),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            "HEADERS on an even stream",
            |c| c.get(2, "/small.txt"),
            code::PROTOCOL_ERROR,
        ),
        (
            "a stream id lower than one opened",
            |c| {
                c.get(5, "/small.txt");
                c.get(3, "/small.txt");
            },
            code::PROTOCOL_ERROR,
        ),
        (
            "a frame over MAX_FRAME_SIZE",
            |c| c.send(frame::DATA, 0, 1, &vec![0; 16_385]),
            code::FRAME_SIZE_ERROR,
        ),
        (
            "PING inside a header block",
            |c| {
                let b = block("GET", "/small.txt", &[]);
                c.send(frame::HEADERS, flag::END_STREAM, 1, &b);
                c.send(frame::PING, 0, 0, &[0; 8]);
            },
            code::PROTOCOL_ERROR,
        ),
        (
            "CONTINUATION without HEADERS",
            |c| c.send(frame::CONTINUATION, flag::END_HEADERS, 1, &[0x82]),
            code::PROTOCOL_ERROR,
        ),
        (
            "an HPACK index beyond both tables",
            |c| c.send(frame::HEADERS, flag::END_HEADERS, 1, &[0xff, 0x7f]),
            code::COMPRESSION_ERROR,
        ),
        (
            "INITIAL_WINDOW_SIZE over 2^31-1",
            |c| c.send(frame::SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            "PUSH_PROMISE from a client",
            |c| c.send(frame::PUSH_PROMISE, flag::END_HEADERS, 1, &[0, 0, 0, 2]),
            code::PROTOCOL_ERROR,
        ),
        (
            "DATA on an idle stream",
            |c| c.send(frame::DATA, 0, 9, b"x"),
            code::PROTOCOL_ERROR,
        ),
        (
            "a PING flood",
            |c| {
                let mut burst = Vec::new();
                for _ in 0..10_001 {
                    burst.extend_from_slice(&[0, 0, 8, frame::PING, 0, 0, 0, 0, 0]);
                    burst.extend_from_slice(&[0; 8]);
                }
                c.io.write_all(&burst).unwrap();
                c.io.flush().unwrap();
            },
            code::ENHANCE_YOUR_CALM,
        ),
    ];
    let server = H2Server::start();
    for (what, script, want) in cases {
        let mut c = server.connect();
        script(&mut c);
        assert_eq!(c.goaway(), *want, "{what}");
    }
    // A bad preface: GOAWAY PROTOCOL_ERROR.
    let mut c = server.tls();
    c.io.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    c.io.flush().unwrap();
    assert_eq!(c.goaway(), code::PROTOCOL_ERROR);
    // The first frame must be SETTINGS.
    let mut c = server.tls();
    c.io.write_all(PREFACE).unwrap();
    c.send(frame::PING, 0, 0, &[0; 8]);
    let f = c.frame();
    assert_eq!(f.kind, frame::SETTINGS);
    assert_eq!(c.goaway(), code::PROTOCOL_ERROR);
    let mut c = server.connect();
    c.get(1, "/small.txt");
    assert_eq!(c.response(1).0, 200, "served after the bad connections");
}

/// Stream errors reset one stream; the connection goes on.
#[test]
fn malformed_requests_reset_their_stream_only() {
    let server = H2Server::start();
    let mut c = server.connect();
    let cases: &[(&str, Vec<u8>)] = &[
        (
            "an upper-case field name",
            block("GET", "/small.txt", &[("User-Agent", "x")]),
        ),
        (
            "a connection-specific field",
            block("GET", "/small.txt", &[("connection", "keep-alive")]),
        ),
        ("no :path", {
            let mut b = Vec::new();
            hpack_field(&mut b, b":method", b"GET");
            hpack_field(&mut b, b":scheme", b"https");
            b
        }),
        ("a pseudo-header after a field", {
            let mut b = block("GET", "/small.txt", &[("accept", "*/*")]);
            hpack_field(&mut b, b":authority", b"x");
            b
        }),
        (
            "Content-Length on a request without a body",
            block("GET", "/small.txt", &[("content-length", "5")]),
        ),
    ];
    let mut stream = 1;
    for (what, b) in cases {
        c.send(
            frame::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            stream,
            b,
        );
        let f = c.frame();
        assert_eq!((f.kind, f.stream), (frame::RST_STREAM, stream), "{what}");
        assert_eq!(f.payload, code::PROTOCOL_ERROR.to_be_bytes(), "{what}");
        stream += 2;
    }
    c.get(stream, "/small.txt");
    assert_eq!(c.response(stream).0, 200);
}

/// Streams beyond SETTINGS_MAX_CONCURRENT_STREAMS are refused.
#[test]
fn streams_beyond_the_limit_are_refused() {
    let server = H2Server::start();
    let mut c = server.connect();
    let limit = pagewire_server::modern::MAX_CONCURRENT_STREAMS;
    let b = block("POST", "/small.txt", &[]);
    for i in 0..limit {
        // Open streams: the bodies never end.
        c.send(frame::HEADERS, flag::END_HEADERS, 2 * i + 1, &b);
    }
    let over = 2 * limit + 1;
    c.send(frame::HEADERS, flag::END_HEADERS, over, &b);
    let f = c.frame();
    assert_eq!((f.kind, f.stream), (frame::RST_STREAM, over));
    assert_eq!(f.payload, code::REFUSED_STREAM.to_be_bytes());
    // A reset frees a stream's place.
    c.send(frame::RST_STREAM, 0, 1, &code::CANCEL.to_be_bytes());
    c.get(over + 2, "/small.txt");
    assert_eq!(c.response(over + 2).0, 200);
}

/// A peer that leaves in the middle of a large response, one that resets
/// it, and a graceful shutdown (GOAWAY NO_ERROR naming the last stream).
#[test]
fn a_peer_leaving_mid_transfer_and_graceful_shutdown() {
    let server = H2Server::start();
    let mut c = server.connect();
    window_update(&mut c, 0, 1 << 20);
    c.get(1, "/big.bin");
    let f = c.frame();
    assert_eq!(f.kind, frame::HEADERS);
    drop(c);
    let mut c = server.connect();
    // Room on the connection for stream 3 whatever stream 1 used of it.
    window_update(&mut c, 0, 1 << 20);
    c.get(1, "/big.bin");
    c.send(frame::RST_STREAM, 0, 1, &code::CANCEL.to_be_bytes());
    c.get(3, "/small.txt");
    assert_eq!(c.response(3).0, 200);
    let mut idle = server.connect();
    idle.get(1, "/small.txt");
    assert_eq!(idle.response(1).0, 200);
    let stop = std::thread::spawn(move || server.stop());
    let f = idle.frame();
    assert_eq!(f.kind, frame::GOAWAY);
    assert_eq!(f.payload[..4], 1u32.to_be_bytes(), "last stream id");
    assert_eq!(f.payload[4..8], code::NO_ERROR.to_be_bytes());
    drop((idle, c));
    let stats = stop.join().unwrap();
    assert!(stats.requests >= 4);
}
