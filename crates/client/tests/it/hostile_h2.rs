//! The robot's HTTP/2 strategy against hostile servers (TLS + h2 on
//! loopback, written with the `h2` crate's server): an endless DATA stream
//! as fast as flow control allows, a flood of `103 Early Hints` heads that
//! never reaches a final response, and a trickle of one byte at a time.
//! Each must end at the object deadline, naming the object, on a
//! current-thread runtime as the CLI runs the robot (a stream that always
//! has data must not keep the deadline's timer from running).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pagewire_client::{fetch, FetchConfig, FetchError, Strategy};

#[derive(Clone, Copy, Debug)]
enum Script {
    /// A 200 head, then DATA frames of 16 KiB as fast as the window opens.
    EndlessData,
    /// `103` heads as fast as the connection writes them, no final head.
    InterimFlood,
    /// A 200 head promising 100,000 bytes, then one byte every 50 ms.
    Trickle,
}

/// The page: small and well-formed; only its image is hostile.
const PAGE: &[u8] = b"<html><body><img src=/slow.bin></body></html>";

/// How long any server loop may run (the robot's deadlines are far shorter).
const SERVER_BOUND: Duration = Duration::from_secs(20);

struct Hostile {
    url: String,
    ca: std::path::PathBuf,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

async fn hostile(script: Script) -> Hostile {
    let dir = tempfile::tempdir().unwrap();
    let files = pagewire_tls::ensure(dir.path(), &["127.0.0.1"]).unwrap();
    let tls = pagewire_tls::server_config(&files, &[pagewire_tls::ALPN_H2]).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        // Bounded: the robot opens one connection per fetch.
        for _ in 0..4 {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let Ok(tls) = acceptor.accept(tcp).await else {
                continue;
            };
            let Ok(mut conn) = h2::server::handshake(tls).await else {
                continue;
            };
            tokio::spawn(async move {
                // Bounded: the connection ends when the robot leaves.
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    if req.uri().path() == "/" {
                        let head = http::Response::builder()
                            .status(200)
                            .header("content-type", "text/html")
                            .header("content-length", PAGE.len().to_string())
                            .body(())
                            .unwrap();
                        if let Ok(mut body) = respond.send_response(head, false) {
                            let _ = body.send_data(Bytes::from_static(PAGE), true);
                        }
                        continue;
                    }
                    tokio::spawn(answer(script, respond));
                }
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

async fn answer(script: Script, mut respond: h2::server::SendResponse<Bytes>) {
    let t0 = Instant::now();
    match script {
        Script::InterimFlood => {
            let early = http::Response::builder().status(103).body(()).unwrap();
            // Bounded by SERVER_BOUND and by the robot resetting the stream.
            while t0.elapsed() < SERVER_BOUND {
                if respond.send_informational(early.clone()).is_err() {
                    return;
                }
                // Let the connection task write them out (the flood is as
                // fast as the connection goes, not a growing queue).
                tokio::task::yield_now().await;
            }
        }
        Script::EndlessData | Script::Trickle => {
            let mut head = http::Response::builder().status(200);
            if matches!(script, Script::Trickle) {
                head = head.header("content-length", "100000");
            }
            let Ok(mut body) = respond.send_response(head.body(()).unwrap(), false) else {
                return;
            };
            let chunk = match script {
                Script::Trickle => Bytes::from_static(b"g"),
                _ => Bytes::from(vec![b'g'; 16 * 1024]),
            };
            // Bounded by SERVER_BOUND and by the robot resetting the stream.
            while t0.elapsed() < SERVER_BOUND {
                body.reserve_capacity(chunk.len());
                match std::future::poll_fn(|cx| body.poll_capacity(cx)).await {
                    Some(Ok(_)) => {}
                    _ => return,
                }
                if body.send_data(chunk.clone(), false).is_err() {
                    return;
                }
                if matches!(script, Script::Trickle) {
                    // The attack itself: one byte every 50 ms.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn hostile_http2_streams_end_at_the_object_deadline() {
    let object = Duration::from_millis(1500);
    for script in [Script::EndlessData, Script::InterimFlood, Script::Trickle] {
        let h = hostile(script).await;
        let mut cfg = FetchConfig::new(h.url.clone(), Strategy::H2);
        cfg.tls_ca = Some(h.ca.clone());
        cfg.timeouts.object = object;
        // Longer than the object deadline: only the deadline may end them.
        cfg.timeouts.read = Duration::from_secs(5);
        cfg.timeouts.min_rate = 0;
        let t0 = Instant::now();
        let err = fetch(cfg).await.expect_err("a hostile stream must fail");
        let took = t0.elapsed();
        h.task.abort();
        assert!(
            matches!(err, FetchError::ObjectDeadline { .. }),
            "{script:?}: {err:?}"
        );
        assert!(err.to_string().contains("/slow.bin"), "{script:?}: {err}");
        // The deadline, not an earlier error, ended it.
        assert!(
            took >= object - Duration::from_millis(100),
            "{script:?}: {took:?}"
        );
        // Bound: within 1 s of the deadline, loose for a loaded machine
        // (a starved timer would run until the server's 20 s bound).
        assert!(
            took < object + Duration::from_millis(2500),
            "{script:?}: {took:?}"
        );
    }
}
