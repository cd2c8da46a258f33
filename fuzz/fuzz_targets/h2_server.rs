//! The HTTP/2 frame handling `pagewire serve --tls` relies on: the `h2`
//! crate's server, built with the server's settings
//! (`MAX_CONCURRENT_STREAMS` 256, the RFC's default windows), reading the
//! client preface followed by the fuzz input as frames from a peer, and
//! answering every request it accepts with a small 200 (so SETTINGS,
//! WINDOW_UPDATE, RST_STREAM and GOAWAY from the peer meet streams that are
//! sending), as `crates/server/src/modern.rs` does.
//!
//! Oracle beyond "no panic" and "no hang" (the peer's bytes end, so every
//! run ends): fed whole and in reads of 1-16 bytes (the first input byte
//! chooses), a connection that ends cleanly both times accepted the same
//! requests (method, target, fields) in the same order; and the server
//! never accepts more than `MAX_CONCURRENT_STREAMS` requests open at once.
#![no_main]

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// As `pagewire_server::modern::MAX_CONCURRENT_STREAMS`.
const MAX_CONCURRENT_STREAMS: u32 = 256;
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The peer: its bytes in the given reads, then EOF; whatever the server
/// writes is accepted and dropped.
struct Peer {
    reads: VecDeque<Vec<u8>>,
}

impl AsyncRead for Peer {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(mut r) = self.reads.pop_front() {
            let n = r.len().min(buf.remaining());
            buf.put_slice(&r[..n]);
            if n < r.len() {
                self.reads.push_front(r.split_off(n));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Peer {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Req {
    method: String,
    uri: String,
    fields: Vec<(String, Vec<u8>)>,
}

async fn serve(reads: VecDeque<Vec<u8>>) -> (Vec<Req>, bool) {
    let mut b = h2::server::Builder::new();
    b.max_concurrent_streams(MAX_CONCURRENT_STREAMS);
    let Ok(mut conn) = b.handshake::<_, Bytes>(Peer { reads }).await else {
        return (Vec::new(), false);
    };
    let mut reqs = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();
    // Bounded: the peer's bytes end, and every accepted request consumed
    // at least one HEADERS frame of them.
    let clean = loop {
        match conn.accept().await {
            None => break true,
            Some(Err(_)) => break false,
            Some(Ok((req, mut respond))) => {
                let (parts, mut body) = req.into_parts();
                reqs.push(Req {
                    method: parts.method.to_string(),
                    uri: parts.uri.to_string(),
                    fields: parts
                        .headers
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                        .collect(),
                });
                tasks.spawn(async move {
                    // Bounded by the peer's DATA frames.
                    while let Some(Ok(d)) = body.data().await {
                        let _ = body.flow_control().release_capacity(d.len());
                    }
                    let resp = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut send) = respond.send_response(resp, false) {
                        let _ = send.send_data(Bytes::from_static(b"ok"), true);
                    }
                });
                assert!(tasks.len() <= MAX_CONCURRENT_STREAMS as usize + 1);
            }
        }
    };
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    (reqs, clean)
}

thread_local! {
    static RT: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
}

fn run(input: &[u8], piece: usize) -> (Vec<Req>, bool) {
    let mut bytes = PREFACE.to_vec();
    bytes.extend_from_slice(input);
    let reads: VecDeque<Vec<u8>> = bytes.chunks(piece.max(1)).map(<[u8]>::to_vec).collect();
    RT.with(|rt| rt.block_on(serve(reads)))
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = run(input, usize::MAX);
    let pieces = run(input, usize::from(first % 16) + 1);
    if whole.1 && pieces.1 {
        assert_eq!(
            whole.0,
            pieces.0,
            "read size {} changed the requests",
            first % 16 + 1
        );
    }
});
