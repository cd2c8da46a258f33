//! Defects found by a hostile-input campaign, each pinned by a test that
//! failed before its fix: a head deadline that holds against a drip, and a
//! malformed chunked body answered 400.
use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use pagewire_h1::Method;
use pagewire_server::ServerConfig;

/// A client sending one byte every 300 ms must not hold a connection past
/// the head deadline: the deadline covers the whole head from its first
/// byte, and more bytes do not restart it. (Before: every byte restarted
/// it, and such a client held the connection forever.)
#[test]
fn a_drip_does_not_restart_the_head_deadline() {
    let deadline = Duration::from_millis(1000);
    let server = TestServer::start(
        small_site(),
        ServerConfig {
            header_timeout: deadline,
            ..config()
        },
    );
    // Second request on a kept-alive connection too: its head's deadline
    // counts from its own first byte, not from the connection's start.
    for warm in [false, true] {
        let mut r = Reader::new(server.connect());
        if warm {
            r.stream
                .write_all(b"GET /b.gif HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            assert_eq!(r.response(Method::Get).unwrap().status, 200);
            // Idle for longer than the head deadline: idle is not head time.
            std::thread::sleep(deadline + Duration::from_millis(300));
        }
        let head = b"GET /b.gif HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let t = Instant::now();
        let mut sent = 0;
        // The drip itself (the attack, not a synchronisation): one byte
        // every 300 ms, at most the head's length (~20 s), until the server
        // answers or closes. 300 ms is well inside the 1 s deadline, so a
        // server that restarted the deadline on every byte would never
        // answer before the head is complete.
        for &b in head.iter() {
            if r.stream.write_all(&[b]).is_err() {
                break;
            }
            sent += 1;
            std::thread::sleep(Duration::from_millis(300));
            if answered(&r.stream) {
                break;
            }
        }
        let resp = r.response(Method::Get).unwrap();
        let took = t.elapsed();
        assert_eq!(resp.status, 408, "warm={warm}");
        assert!(r.at_eof().unwrap());
        // The event that shows the deadline held: the 408 came while the
        // head was still incomplete. No upper bound on the time (a loaded
        // machine only makes the drip slower); timers never fire early, so
        // the lower bound is safe.
        assert!(
            sent < head.len(),
            "warm={warm}: no 408 before the whole head ({sent} bytes, {took:?})"
        );
        assert!(took >= deadline, "warm={warm}: 408 after only {took:?}");
    }
    assert_eq!(server.stop().header_timeouts, 2);
}

/// Whether the server has sent something (or closed) on `s`, without
/// blocking.
fn answered(s: &std::net::TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let r = s.peek(&mut [0u8; 1]);
    s.set_nonblocking(false).unwrap();
    match r {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(_) => true,
    }
}

/// A GET whose chunked body is malformed is a malformed request: 400 and
/// close, as nginx answers (before: 200, then close).
#[test]
fn malformed_chunked_body_gets_400() {
    let server = TestServer::start(small_site(), config());
    for body in [
        &b"zz\r\nab\r\n0\r\n\r\n"[..],     // not a chunk size
        &b"2\r\nabcd\r\n0\r\n\r\n"[..],    // chunk longer than its size
        &b"2;\x00\r\nab\r\n0\r\n\r\n"[..], // NUL in an extension
    ] {
        let mut r = Reader::new(server.connect());
        let mut req =
            b"GET /b.gif HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        req.extend_from_slice(body);
        req.extend_from_slice(b"GET /b.gif HTTP/1.1\r\nHost: t\r\n\r\n");
        r.stream.write_all(&req).unwrap();
        let resp = r.response(Method::Get).unwrap();
        assert_eq!(resp.status, 400, "{:?}", String::from_utf8_lossy(body));
        assert_eq!(resp.header("connection"), Some("close"));
        assert!(r.at_eof().unwrap(), "nothing after the 400");
    }
    // A well-formed chunked body on a GET is skipped and the pipeline goes on.
    let mut r = Reader::new(server.connect());
    r.stream
        .write_all(b"GET /b.gif HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\nGET /b.gif HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(r.response(Method::Get).unwrap().status, 200);
    assert_eq!(r.response(Method::Get).unwrap().status, 200);
    let stats = server.stop();
    assert_eq!(stats.malformed_requests, 3);
}

/// Two accept threads, a cap of 8, 40 clients whose heads never complete
/// (not idle, so not evictable): never more than 8 connections count
/// against the cap at once (before: each thread checked, then counted, and
/// the two overshot the cap by about 1 % under a flood). A client over the
/// cap whose bytes have arrived is answered 503 and closed.
#[test]
fn the_cap_is_exact_across_accept_threads() {
    let server = TestServer::start(
        small_site(),
        ServerConfig {
            threads: 2,
            max_conns: Some(8),
            header_timeout: Duration::from_secs(60),
            ..config()
        },
    );
    let mut clients = Vec::new();
    for _ in 0..40 {
        let mut s = server.connect();
        s.write_all(b"GET /b.gif HTTP/1.1\r\n").unwrap();
        clients.push(s);
    }
    // Every connection has been taken off the listener's accept queue
    // (admitted, refused with 503, or in an accept thread's hand): the
    // server has seen all 40 while the first 8 were open.
    let port = server.addr.port();
    let listener = || {
        tcp_sockets(port)
            .into_iter()
            .find(|s| s.state == 10 && s.local.port() == port)
            .expect("the listening socket")
    };
    wait_for("the accept queue drained", Duration::from_secs(20), || {
        listener().rx_queue == 0
    });
    // Done when no server-side socket is left established, in SYN-received
    // or close-wait: the server has accepted, counted and closed every one.
    drop(clients);
    wait_for(
        "the server closed all 40 connections",
        Duration::from_secs(20),
        || {
            listener().rx_queue == 0
                && !tcp_sockets(port)
                    .iter()
                    .any(|s| s.local.port() == port && matches!(s.state, 1 | 3 | 8))
        },
    );
    let stats = server.stop();
    assert_eq!(stats.peak_connections, 8, "{stats}");
    // At the cap a client that has already sent bytes is answered 503 and
    // closed (nothing older is evictable: the admitted heads are younger than
    // the slowloris age and none is idle), so every connection is either
    // admitted (8) or refused: none waits and none is lost.
    assert_eq!(stats.connections + stats.refused_at_cap, 40, "{stats}");
    assert!(stats.connections >= 8, "{stats}");
}

/// The one request body the server waits for (GETLIST's uri-list, paper
/// 003) must arrive at the body minimum rate: a byte every 200 ms gets 408
/// and a close soon after the body deadline, while a body sent at twice the
/// rate is answered however long it takes. (Before: every read restarted
/// the head deadline, and such a drip held the connection forever.)
#[test]
fn a_dripped_body_gets_408_at_the_minimum_rate() {
    let deadline = Duration::from_millis(1000);
    let server = TestServer::start(
        small_site(),
        ServerConfig {
            header_timeout: deadline,
            body_timeout: deadline,
            body_min_rate: 100,
            ..config()
        },
    );
    let list = "/b.gif\r\n".repeat(75); // 600 bytes
    let head = format!(
        "GETLIST / HTTP/1.1\r\nHost: t\r\nContent-Type: text/uri-list\r\nContent-Length: {}\r\n\r\n",
        list.len()
    );

    // A drip at 5 B/s: 408 once the deadline (extended 10 ms per byte) passes.
    let mut r = Reader::new(server.connect());
    r.stream.write_all(head.as_bytes()).unwrap();
    let t = Instant::now();
    let mut sent = 0;
    // The drip (the attack): 200 ms apart, until the server answers or
    // closes; bounded by a stated budget of 20 s (~100 bytes), far past the
    // ~1.2 s the deadline allows, so a server that never times the body out
    // fails below instead of hanging.
    let budget = Duration::from_secs(20);
    for &b in list.as_bytes() {
        if r.stream.write_all(&[b]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(200));
        if answered(&r.stream) || t.elapsed() > budget {
            break;
        }
    }
    let resp = r.response(Method::Get).unwrap();
    let took = t.elapsed();
    assert_eq!(resp.status, 408, "after {took:?} and {sent} bytes");
    assert!(String::from_utf8_lossy(&resp.body).contains("body"));
    assert!(r.at_eof().unwrap());
    // The event: the 408 came before the body was complete and within the
    // budget. Timers never fire early, so the deadline is a safe lower bound.
    assert!(
        sent < list.len() && took < budget,
        "no 408 within {budget:?}: {sent} bytes in {took:?}"
    );
    assert!(took >= deadline, "408 after only {took:?}");

    // 50 bytes every 200 ms (250 B/s, above the 100 B/s minimum) for 2.4 s,
    // well past the 1 s deadline: answered.
    let mut r = Reader::new(server.connect());
    r.stream.write_all(head.as_bytes()).unwrap();
    for piece in list.as_bytes().chunks(50) {
        std::thread::sleep(Duration::from_millis(200));
        r.stream.write_all(piece).unwrap();
    }
    let resp = r.response(Method::Get).unwrap();
    assert_eq!(resp.status, 200);
    let stats = server.stop();
    assert_eq!(stats.body_timeouts, 1);
    assert_eq!(stats.header_timeouts, 0);
}
