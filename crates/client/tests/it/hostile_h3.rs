//! The robot's HTTP/3 strategy against hostile servers (QUIC on loopback,
//! a server written with `quinn` alone that writes HTTP/3 frames by hand,
//! so it can break the protocol where a real server would not): a stall
//! after the head, an endless DATA stream, a flood of `103` heads, a
//! stream reset mid-body, the connection closed mid-transfer, a body cut
//! short of its Content-Length, a frame a request stream must not carry,
//! and a head QPACK cannot decode.
//!
//! Each must end with one line naming the object, in bounded time: the
//! endless ones at the object deadline, the flood of interim heads at the
//! bound HTTP/1.x has, the broken ones at once (an error of the protocol,
//! not a timer). Nothing is lost: after each, a second
//! fetch on the same runtime, from the same server behaving well, gets
//! every object whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pagewire_client::{fetch, FetchConfig, FetchError, Strategy};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Script {
    /// A 200 head promising 100,000 bytes, then nothing.
    Stall,
    /// A 200 head, then DATA frames of 16 KiB as fast as flow control allows.
    EndlessData,
    /// `103` heads as fast as the stream takes them, no final head.
    InterimFlood,
    /// 1,000 of 100,000 promised bytes, then RESET_STREAM.
    ResetMidBody,
    /// 1,000 of 100,000 promised bytes, then CONNECTION_CLOSE.
    CloseMidTransfer,
    /// 1,000 of 100,000 promised bytes, then the stream's FIN.
    ShortBody,
    /// A SETTINGS frame on the request stream after the head
    /// (H3_FRAME_UNEXPECTED, RFC 9114 section 7.2.4).
    FrameUnexpected,
    /// A HEADERS frame whose field section names a dynamic table entry
    /// that was never sent (QPACK decompression failure).
    BadHeaders,
}

/// The page: small and well-formed; only its image is hostile.
const PAGE: &[u8] = b"<html><body><img src=/slow.bin></body></html>";
/// The image as a well-behaved server sends it.
const IMAGE: [u8; 3000] = [b'g'; 3000];

/// How long any server loop may run (the robot's deadlines are far shorter).
const SERVER_BOUND: Duration = Duration::from_secs(20);

/// A QUIC variable-length integer (RFC 9000 section 16).
fn varint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16_384..=1_073_741_823 => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// An HTTP/3 frame: type, length, payload.
fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    varint(ty, &mut f);
    varint(payload.len() as u64, &mut f);
    f.extend_from_slice(payload);
    f
}

/// A HEADERS frame with a QPACK field section that uses the static table
/// only: `:status` (24: 103, 25: 200), content-type text/html (name 44),
/// and content-length if given (name 4).
fn headers(status: u16, content_length: Option<usize>) -> Vec<u8> {
    // Required Insert Count 0, Delta Base 0: no dynamic table.
    let mut block = vec![0x00, 0x00];
    block.push(match status {
        103 => 0xc0 | 24,
        200 => 0xc0 | 25,
        _ => unreachable!(),
    });
    if status == 200 {
        // Literal with a static name reference, 4-bit prefix index:
        // 44 = 15 + 29.
        block.extend_from_slice(&[0x5f, 29, 9]);
        block.extend_from_slice(b"text/html");
    }
    if let Some(n) = content_length {
        let v = n.to_string();
        block.extend_from_slice(&[0x50 | 4, v.len() as u8]);
        block.extend_from_slice(v.as_bytes());
    }
    frame(0x01, &block)
}

fn data(bytes: &[u8]) -> Vec<u8> {
    frame(0x00, bytes)
}

struct Hostile {
    url: String,
    ca: std::path::PathBuf,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

/// A QUIC server on loopback: its first connection answers the image with
/// `script`, later ones answer it well. On every connection the first
/// request stream is the page's (the robot asks for the page, parses it,
/// then asks for its image).
async fn hostile(script: Script) -> Hostile {
    let dir = tempfile::tempdir().unwrap();
    let files = pagewire_tls::ensure(dir.path(), &["127.0.0.1"]).unwrap();
    let mut tls = pagewire_tls::server_config(&files, &[pagewire_tls::ALPN_H3]).unwrap();
    tls.max_early_data_size = 0;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let ep = quinn::Endpoint::server(server, "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = ep.local_addr().unwrap();
    let task = tokio::spawn(async move {
        // Bounded: one hostile and one good fetch, a few spare.
        for n in 0..4 {
            let Some(incoming) = ep.accept().await else {
                return;
            };
            let Ok(conn) = incoming.await else {
                continue;
            };
            let script = (n == 0).then_some(script);
            tokio::spawn(async move {
                let _ = tokio::time::timeout(SERVER_BOUND, serve(conn, script)).await;
            });
        }
    });
    Hostile {
        url: format!("https://{addr}/"),
        ca: files.ca,
        _dir: dir,
        task,
    }
}

/// One connection: the control stream with empty SETTINGS, then the page
/// and the image (`script`, or well if None).
async fn serve(conn: quinn::Connection, script: Option<Script>) {
    let Ok(mut control) = conn.open_uni().await else {
        return;
    };
    // Stream type 0x00 (control), SETTINGS (0x04) with no parameter. The
    // stream stays open as long as the connection (closing it is an error).
    let mut settings = vec![0x00];
    settings.extend(frame(0x04, &[]));
    if control.write_all(&settings).await.is_err() {
        return;
    }
    // Bounded: the page and its image, and a spare.
    for i in 0..3 {
        let Ok((mut send, mut recv)) = conn.accept_bi().await else {
            return;
        };
        // The request: one HEADERS frame, then FIN.
        if recv.read_to_end(64 * 1024).await.is_err() {
            return;
        }
        if i == 0 {
            let mut r = headers(200, Some(PAGE.len()));
            r.extend(data(PAGE));
            let _ = send.write_all(&r).await;
            let _ = send.finish();
            continue;
        }
        match script {
            None => {
                let mut r = headers(200, Some(IMAGE.len()));
                r.extend(data(&IMAGE));
                let _ = send.write_all(&r).await;
                let _ = send.finish();
            }
            Some(s) => {
                hostile_answer(s, &conn, &mut send).await;
                // Keep the stream and the connection open until the robot
                // leaves (or SERVER_BOUND ends the task).
                conn.closed().await;
                return;
            }
        }
    }
}

async fn hostile_answer(script: Script, conn: &quinn::Connection, send: &mut quinn::SendStream) {
    let t0 = Instant::now();
    let part = || {
        let mut r = headers(200, Some(100_000));
        r.extend(data(&[b'g'; 1000]));
        r
    };
    match script {
        Script::Stall => {
            let _ = send.write_all(&headers(200, Some(100_000))).await;
        }
        Script::EndlessData => {
            if send.write_all(&headers(200, None)).await.is_err() {
                return;
            }
            let chunk = data(&[b'g'; 16 * 1024]);
            // Bounded by SERVER_BOUND and by the robot stopping the stream.
            // Paced (16 KiB a millisecond at most): unpaced, a quiet machine
            // sends the robot's 256 MiB object limit before the object
            // deadline, and the limit, not the deadline, ends the fetch.
            while t0.elapsed() < SERVER_BOUND {
                if send.write_all(&chunk).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        Script::InterimFlood => {
            let early = headers(103, None);
            // Bounded by SERVER_BOUND and by the robot stopping the stream.
            while t0.elapsed() < SERVER_BOUND {
                if send.write_all(&early).await.is_err() {
                    return;
                }
                // Let the connection task send them (the flood is as fast
                // as the connection goes, not a growing queue).
                tokio::task::yield_now().await;
            }
        }
        Script::ResetMidBody => {
            if send.write_all(&part()).await.is_ok() {
                // H3_INTERNAL_ERROR.
                let _ = send.reset(0x102u32.into());
            }
        }
        Script::CloseMidTransfer => {
            if send.write_all(&part()).await.is_ok() {
                // H3_INTERNAL_ERROR, for the whole connection.
                conn.close(0x102u32.into(), b"gone");
            }
        }
        Script::ShortBody => {
            if send.write_all(&part()).await.is_ok() {
                let _ = send.finish();
            }
        }
        Script::FrameUnexpected => {
            let mut r = headers(200, Some(100_000));
            r.extend(frame(0x04, &[]));
            let _ = send.write_all(&r).await;
        }
        Script::BadHeaders => {
            // Required Insert Count 5 (encoded 6): entries never inserted,
            // with a dynamic table of capacity 0.
            let _ = send.write_all(&frame(0x01, &[0x06, 0x00, 0x80])).await;
        }
    }
}

fn config(h: &Hostile, object: Duration) -> FetchConfig {
    let mut cfg = FetchConfig::new(h.url.clone(), Strategy::H3);
    cfg.tls_ca = Some(h.ca.clone());
    cfg.timeouts.object = object;
    // Longer than the object deadline: only the deadline may end the
    // endless scripts.
    cfg.timeouts.read = object * 4;
    cfg.timeouts.min_rate = 0;
    cfg.keep_bodies = true;
    cfg
}

/// After a hostile answer the robot has lost nothing: the same server,
/// behaving well on a new connection, gives the page and its image whole.
async fn nothing_lost(h: &Hostile, script: Script) {
    let report = fetch(config(h, Duration::from_secs(10)))
        .await
        .unwrap_or_else(|e| panic!("{script:?}: the good fetch after it failed: {e}"));
    let sizes: Vec<(String, u64, u16)> = report
        .objects
        .iter()
        .map(|o| (o.url.clone(), o.size, o.status))
        .collect();
    assert_eq!(sizes.len(), 2, "{script:?}: {sizes:?}");
    assert!(
        sizes.contains(&(h.url.clone(), PAGE.len() as u64, 200))
            && sizes.contains(&(format!("{}slow.bin", h.url), IMAGE.len() as u64, 200)),
        "{script:?}: {sizes:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn endless_http3_answers_end_at_the_object_deadline() {
    let object = Duration::from_millis(1500);
    for script in [Script::Stall, Script::EndlessData] {
        let h = hostile(script).await;
        let t0 = Instant::now();
        let err = fetch(config(&h, object))
            .await
            .expect_err("a hostile answer must fail");
        let took = t0.elapsed();
        assert!(
            matches!(err, FetchError::ObjectDeadline { .. }),
            "{script:?}: {err:?}"
        );
        let line = err.to_string();
        assert!(
            line.contains("/slow.bin") && !line.contains('\n'),
            "{script:?}: {line}"
        );
        // The deadline, not an earlier error, ended it.
        assert!(
            took >= object - Duration::from_millis(100),
            "{script:?}: {took:?}"
        );
        // Bound: within 1 s of the deadline, loose for a loaded machine (a
        // starved timer would run until the server's 20 s bound).
        assert!(
            took < object + Duration::from_millis(2500),
            "{script:?}: {took:?}"
        );
        nothing_lost(&h, script).await;
        h.task.abort();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn broken_http3_answers_fail_at_once_naming_the_object() {
    // Far longer than any of these takes: a deadline here would mean the
    // robot waited on a stream that was already broken.
    let object = Duration::from_secs(10);
    for script in [
        Script::InterimFlood,
        Script::ResetMidBody,
        Script::CloseMidTransfer,
        Script::ShortBody,
        Script::FrameUnexpected,
        Script::BadHeaders,
    ] {
        let h = hostile(script).await;
        let err = match fetch(config(&h, object)).await {
            Err(e) => e,
            Ok(r) => panic!(
                "{script:?}: a broken answer must fail, got {:?}",
                r.objects
                    .iter()
                    .map(|o| (&o.url, o.status, o.size))
                    .collect::<Vec<_>>()
            ),
        };
        assert!(
            !matches!(
                err,
                FetchError::ObjectDeadline { .. }
                    | FetchError::ReadTimeout { .. }
                    | FetchError::TotalTimeout(..)
            ),
            "{script:?}: a timer, not the protocol, ended it: {err:?}"
        );
        let line = err.to_string();
        assert!(
            line.contains("/slow.bin") && !line.contains('\n'),
            "{script:?}: {line}"
        );
        nothing_lost(&h, script).await;
        h.task.abort();
    }
}
