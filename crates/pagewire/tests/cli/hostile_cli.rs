//! `pagewire fetch` against hostile servers on loopback:
//! a flood of interim heads, an endless chunked body and an endless trickle
//! each end by the deadlines with exit status 2 and one line on stderr;
//! `--max-redirects` says which chain it cut.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use common::{run_bounded, PW};

/// What the server answers to every request after the page.
#[derive(Clone, Copy)]
enum Hostile {
    Interim,
    Chunked,
    Trickle,
}

const PAGE: &[u8] = b"<html><body><img src=/x.gif></body></html>";

fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    // Bounded: heads are short and the socket has a read timeout.
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match s.read(&mut b) {
            Ok(1) => head.push(b[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// Serves the page, then `how` for its image, on a thread; every loop is
/// bounded by 20 s and ends when the client leaves.
fn hostile(how: Hostile) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        // Bounded: a few connections per test.
        for conn in l.incoming().take(8) {
            let Ok(mut s) = conn else { return };
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let t0 = Instant::now();
                // Bounded by the client's requests and read timeouts.
                while let Some(head) = read_head(&mut s) {
                    if head.starts_with("GET / ") {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                            PAGE.len()
                        )
                        .into_bytes();
                        r.extend_from_slice(PAGE);
                        if s.write_all(&r).is_err() {
                            return;
                        }
                        continue;
                    }
                    match how {
                        Hostile::Interim => {
                            let heads =
                                b"HTTP/1.1 103 Early Hints\r\nLink: </x.gif>\r\n\r\n".repeat(512);
                            while t0.elapsed() < Duration::from_secs(20)
                                && s.write_all(&heads).is_ok()
                            {}
                        }
                        Hostile::Chunked => {
                            let _ = s.write_all(
                                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                            );
                            let mut c = b"2000\r\n".to_vec();
                            c.extend(std::iter::repeat_n(b'g', 0x2000));
                            c.extend_from_slice(b"\r\n");
                            while t0.elapsed() < Duration::from_secs(20) && s.write_all(&c).is_ok()
                            {
                            }
                        }
                        Hostile::Trickle => {
                            let _ =
                                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
                            while t0.elapsed() < Duration::from_secs(20)
                                && s.write_all(b"g").is_ok()
                            {
                                // The attack itself: one byte every 200 ms.
                                std::thread::sleep(Duration::from_millis(200));
                            }
                        }
                    }
                    return;
                }
            });
        }
    });
    url
}

fn fetch(url: &str, extra: &[&str]) -> (std::process::Output, Duration) {
    let (out, took, _) = run_bounded(
        Command::new(PW).arg("fetch").arg(url).args(extra),
        Duration::from_secs(25),
        "pagewire fetch",
    );
    (out, took)
}

fn stderr_lines(o: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn hostile_streams_end_by_the_deadline_with_exit_1_and_one_line() {
    for (how, what) in [
        (Hostile::Interim, "interim (1xx) responses"),
        (Hostile::Chunked, "object deadline"),
        (Hostile::Trickle, "object deadline"),
    ] {
        let url = hostile(how);
        // min-rate 0: the object deadline alone must end the trickle.
        let (o, took) = fetch(
            &url,
            &[
                "--object-timeout",
                "2s",
                "--read-timeout",
                "1s",
                "--min-rate",
                "0",
            ],
        );
        let lines = stderr_lines(&o);
        // Exit 1: the run failed (2 is kept for usage errors, where nothing
        // ran: the project's exit codes, README "Commands").
        assert_eq!(o.status.code(), Some(1), "{what}: {lines:?}");
        assert_eq!(lines.len(), 1, "{what}: {lines:?}");
        assert!(
            lines[0].contains("/x.gif") && lines[0].contains(what),
            "{lines:?}"
        );
        // Bound: within 1 s of the deadline; loose for a loaded machine
        // (it used to run until killed).
        assert!(took < Duration::from_secs(2 + 4), "{what}: {took:?}");
    }
}

#[test]
fn a_cut_redirect_chain_is_named() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        // Bounded: a few connections.
        for conn in l.incoming().take(8) {
            let Ok(mut s) = conn else { return };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            // Bounded by the client's requests.
            while let Some(head) = read_head(&mut s) {
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let next = match path.as_str() {
                    "/a" => "/b",
                    "/b" => "/c",
                    _ => "/d",
                };
                let r =
                    format!("HTTP/1.1 302 Found\r\nLocation: {next}\r\nContent-Length: 0\r\n\r\n");
                if s.write_all(r.as_bytes()).is_err() {
                    break;
                }
            }
        }
    });
    let (o, _) = fetch(&format!("{base}/a"), &["--max-redirects", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--max-redirects 1") && err.contains(&format!("{base}/a -> {base}/b -> /c")),
        "{err}"
    );
}

/// One name the file system refuses (a 300-byte segment)
/// skips that object with a warning; the rest of `--save` is written.
#[test]
fn save_skips_an_over_long_name_with_a_warning() {
    let long = "n".repeat(300);
    let page = format!("<html><img src=/ok.gif><img src=/{long}.gif></html>");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        // Bounded: a few connections.
        for conn in l.incoming().take(8) {
            let Ok(mut s) = conn else { return };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            // Bounded by the client's requests.
            while let Some(head) = read_head(&mut s) {
                let body = if head.starts_with("GET / ") {
                    page.clone().into_bytes()
                } else {
                    b"GIF89a".to_vec()
                };
                let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                    .into_bytes();
                r.extend_from_slice(&body);
                if s.write_all(&r).is_err() {
                    break;
                }
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = fetch(&url, &["--save", dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("not saved") && err.contains("304 bytes"),
        "{err}"
    );
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    assert!(dir.path().join(host).join("ok.gif").is_file());
    assert!(dir.path().join(host).join("index.html").is_file());
}
