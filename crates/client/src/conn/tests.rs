//! Scripted effect tests of one connection ([`Machine`]) and the session
//! behind it, in virtual time: no socket, no clock, no sleep. Each test
//! plays the server (bytes handed in at chosen times, the server's close),
//! fires the timer at the machine's own `next_deadline()`, and asserts the
//! effects: which request bytes are sent, when, and why (the output
//! buffer's three flush triggers), which objects go to the HTTP/1.0
//! dispatcher, how the connection ends, and what the session records and
//! hands back for the cache. One or more per strategy, first visit and
//! revalidation.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use pagewire_objpack::{Attributes, Entry, Limits, Manifest, MEDIA_TYPE};

use super::*;
use crate::cache::{sha256_hex, Cache};
use crate::config::{FetchConfig, Strategy};
use crate::error::FetchError;
use crate::outbuf::FlushReason;
use crate::report::Outcome;
use crate::session::tests::{deflate, gif, ok_head, page_html, session, text, HOST, UA};
use crate::session::PAGE;
use crate::session::{ObjId, Session};

const MS: Duration = Duration::from_millis(1);

/// One flush that left for the server: when (ms after the start), why, and
/// the request lines it carried.
#[derive(Debug, PartialEq)]
struct Sent {
    at_ms: u64,
    reason: FlushReason,
    lines: Vec<String>,
}

/// A session and its current connection, driven by hand.
struct Script {
    s: Session,
    m: Machine,
    t0: Instant,
    now: Instant,
    sent: Vec<Sent>,
    /// Raw bytes of every send, in order.
    wire: Vec<u8>,
    dispatched: Vec<ObjId>,
}

impl Script {
    fn new(
        strategy: Strategy,
        setup: impl FnOnce(&mut FetchConfig),
        cache: Option<&Cache>,
        plan: Plan,
        own: bool,
    ) -> Script {
        let (mut s, t0) = session(strategy, setup, cache);
        let id = s.conn_opened(t0);
        let m = Machine::new(&s, id, VecDeque::from([PAGE]), plan, own, t0);
        let mut sc = Script {
            s,
            m,
            t0,
            now: t0,
            sent: Vec::new(),
            wire: Vec::new(),
            dispatched: Vec::new(),
        };
        sc.step();
        sc
    }

    fn ms(&self, t: Instant) -> u64 {
        t.duration_since(self.t0).as_millis() as u64
    }

    /// A new connection (after the last one closed) for `queue`.
    fn reopen(&mut self, queue: Vec<ObjId>, plan: Plan, own: bool) {
        let id = self.s.conn_opened(self.now);
        self.m = Machine::new(&self.s, id, queue.into(), plan, own, self.now);
    }

    fn drain(&mut self) {
        while let Some(e) = self.m.poll_effect() {
            match e {
                Effect::Send { bytes, reason } => {
                    self.m.on_written(&mut self.s, bytes.len());
                    let lines = text(&bytes)
                        .split("\r\n\r\n")
                        .filter(|r| !r.is_empty())
                        .map(|r| r.lines().next().unwrap_or("").to_string())
                        .collect();
                    self.sent.push(Sent {
                        at_ms: self.ms(self.now),
                        reason,
                        lines,
                    });
                    self.wire.extend(bytes);
                }
                Effect::Dispatch(ids) => self.dispatched.extend(ids),
            }
        }
    }

    fn step(&mut self) -> Step {
        let step = self.m.step(&mut self.s, self.now).expect("step");
        self.drain();
        step
    }

    /// The server's bytes arrive `at_ms` after the start.
    fn server(&mut self, at_ms: u64, bytes: &[u8]) -> Step {
        self.now = self.t0 + Duration::from_millis(at_ms);
        self.m
            .on_bytes(&mut self.s, bytes, self.now)
            .expect("bytes");
        self.drain();
        self.step()
    }

    /// A whole response, head and body in one read.
    fn respond(&mut self, at_ms: u64, head: &str, body: &[u8]) -> Step {
        let mut b = head.as_bytes().to_vec();
        b.extend_from_slice(body);
        self.server(at_ms, &b)
    }

    /// Fires the timer at the machine's next deadline; returns when (ms).
    fn timer(&mut self) -> u64 {
        let t = self.m.next_deadline(&self.s).expect("a deadline");
        self.now = t;
        self.m.on_timer(&mut self.s, t).expect("timer");
        self.drain();
        self.step();
        self.ms(t)
    }

    /// Request lines sent so far, flattened.
    fn lines(&self) -> Vec<String> {
        self.sent.iter().flat_map(|s| s.lines.clone()).collect()
    }

    /// The whole requests sent so far, split.
    fn requests(&self) -> Vec<String> {
        text(&self.wire)
            .split_inclusive("\r\n\r\n")
            .map(str::to_string)
            .collect()
    }
}

fn sent(at_ms: u64, reason: FlushReason, lines: &[&str]) -> Sent {
    Sent {
        at_ms,
        reason,
        lines: lines.iter().map(|l| l.to_string()).collect(),
    }
}

const ONE_BY_ONE: Plan = Plan {
    pipeline: false,
    cautious: false,
};
const PIPELINE: Plan = Plan {
    pipeline: true,
    cautious: false,
};

fn closes_done(step: Step) -> bool {
    matches!(step, Step::Close(End::Done))
}

/// http10: the page's connection sends one GET at once (explicit flush),
/// hands the references to the dispatcher as they arrive, and closes when
/// the server does; each image then goes on a connection of its own.
#[test]
fn http10_one_request_per_connection_and_dispatch() {
    let mut sc = Script::new(Strategy::Http10, |_| {}, None, ONE_BY_ONE, false);
    assert_eq!(
        sc.sent,
        [sent(
            0,
            FlushReason::Explicit,
            &["GET /index.html HTTP/1.0"]
        )]
    );
    assert_eq!(
        sc.requests()[0],
        format!("GET /index.html HTTP/1.0\r\nHost: {HOST}\r\nUser-Agent: {UA}\r\n\r\n")
    );
    let html = page_html();
    let head = format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", html.len());
    assert!(closes_done(sc.respond(10, &head, html)));
    assert_eq!(sc.dispatched, [1, 2], "both references to the dispatcher");
    for (i, id) in [1usize, 2].into_iter().enumerate() {
        sc.reopen(vec![id], ONE_BY_ONE, false);
        sc.now = sc.t0 + Duration::from_millis(20 + i as u64);
        sc.step();
        let g = gif(id as u8);
        let head = format!(
            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nContent-Type: image/gif\r\n\r\n",
            g.len()
        );
        assert!(closes_done(sc.respond(30 + i as u64, &head, &g)));
    }
    assert_eq!(
        sc.lines(),
        [
            "GET /index.html HTTP/1.0",
            "GET /a.gif HTTP/1.0",
            "GET /b.gif HTTP/1.0"
        ]
    );
    assert_eq!(sc.sent[2].at_ms, 21);
    let (report, writes) = sc.s.finish();
    assert!(writes.is_empty());
    assert_eq!(report.connections_opened, 3);
    assert_eq!(report.objects[2].sent_ms, Some(21.0));
    assert_eq!(report.objects[2].done_ms, 31.0);
}

/// http11: one persistent connection, one request at a time, each flushed
/// at once, the next only after the previous response.
#[test]
fn http11_one_at_a_time_on_one_connection() {
    let mut sc = Script::new(Strategy::Http11, |_| {}, None, ONE_BY_ONE, true);
    let html = page_html();
    assert!(matches!(
        sc.respond(10, &ok_head(html.len(), ""), html),
        Step::Wait
    ));
    let g = gif(1);
    sc.respond(25, &ok_head(g.len(), ""), &g);
    assert!(closes_done(sc.respond(40, &ok_head(g.len(), ""), &g)));
    assert_eq!(
        sc.sent,
        [
            sent(0, FlushReason::Explicit, &["GET /index.html HTTP/1.1"]),
            sent(10, FlushReason::Explicit, &["GET /a.gif HTTP/1.1"]),
            sent(25, FlushReason::Explicit, &["GET /b.gif HTTP/1.1"]),
        ]
    );
    let (report, _) = sc.s.finish();
    assert_eq!(report.connections_opened, 1);
    assert!(!report.connections[0].pipelined);
}

/// pipeline: the page request is flushed at once ("force a flush after
/// issuing the first request on the HTML document"); the images are
/// buffered and leave together when the flush timer fires, 50 ms after the
/// first of them entered the buffer, and not before.
#[test]
fn pipeline_flush_timer_carries_the_images() {
    let mut sc = Script::new(Strategy::Pipeline, |_| {}, None, PIPELINE, true);
    assert_eq!(
        sc.m.next_deadline(&sc.s),
        Some(sc.t0 + sc.s.cfg.timeouts.read)
    );
    let html = page_html();
    sc.respond(10, &ok_head(html.len(), ""), html);
    assert_eq!(sc.sent.len(), 1, "the images wait in the buffer");
    assert_eq!(sc.timer(), 60);
    assert_eq!(
        sc.sent,
        [
            sent(0, FlushReason::Explicit, &["GET /index.html HTTP/1.1"]),
            sent(
                60,
                FlushReason::Timer,
                &["GET /a.gif HTTP/1.1", "GET /b.gif HTTP/1.1"]
            ),
        ]
    );
    let g = gif(1);
    let mut both = ok_head(g.len(), "").into_bytes();
    both.extend(&g);
    both.extend(ok_head(g.len(), "").as_bytes());
    both.extend(&g);
    assert!(closes_done(sc.server(70, &both)));
    let (report, _) = sc.s.finish();
    assert!(report.connections[0].pipelined);
    let sent_ms: Vec<Option<f64>> = report.objects.iter().map(|o| o.sent_ms).collect();
    assert_eq!(sent_ms, [Some(0.0), Some(60.0), Some(60.0)]);
    assert_eq!(report.flush_counts.get("timer"), Some(&1));
}

/// pipeline with `flush_at_page_end`: the images leave as soon as the page
/// is in, by an explicit flush; with a small buffer, full batches of
/// exactly its size leave first.
#[test]
fn pipeline_explicit_and_full_flushes() {
    let mut sc = Script::new(
        Strategy::Pipeline,
        |c| c.flush_at_page_end = true,
        None,
        PIPELINE,
        true,
    );
    let html = page_html();
    sc.respond(10, &ok_head(html.len(), ""), html);
    assert_eq!(
        sc.sent[1],
        sent(
            10,
            FlushReason::Explicit,
            &["GET /a.gif HTTP/1.1", "GET /b.gif HTTP/1.1"]
        )
    );
    assert_eq!(
        sc.m.next_deadline(&sc.s),
        Some(sc.t0 + 10 * MS + sc.s.cfg.timeouts.read)
    );

    let mut sc = Script::new(
        Strategy::Pipeline,
        |c| c.out_buffer_bytes = 64,
        None,
        PIPELINE,
        true,
    );
    // The page request is longer than the buffer: a full batch, then the
    // explicit flush of the rest.
    let page_sends: Vec<FlushReason> = sc.sent.iter().map(|s| s.reason).collect();
    assert_eq!(page_sends, [FlushReason::Full, FlushReason::Explicit]);
    sc.respond(10, &ok_head(html.len(), ""), html);
    let wire_before_timer = sc.wire.len();
    assert!(sc.sent.len() >= 3, "{:?}", sc.sent);
    assert!(sc.sent[2..]
        .iter()
        .all(|s| s.reason == FlushReason::Full && s.at_ms == 10));
    assert_eq!(sc.timer(), 60, "the rest waits for the timer");
    let last = sc.sent.last().unwrap();
    assert_eq!(last.reason, FlushReason::Timer);
    assert!(sc.wire.len() > wire_before_timer);
    // Full batches are exactly the buffer's size; together they are the
    // two requests byte for byte.
    let reqs = sc.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[1].starts_with("GET /a.gif HTTP/1.1\r\n"));
    assert!(reqs[2].starts_with("GET /b.gif HTTP/1.1\r\n"));
    let (report, _) = sc.s.finish();
    assert!(report
        .flushes
        .iter()
        .filter(|f| f.reason == FlushReason::Full)
        .all(|f| f.bytes == 64));
}

/// pipeline-deflate: the page is asked deflated and inflated before its
/// references are found; the images are pipelined and not asked
/// compressed.
#[test]
fn pipeline_deflate_requests_and_inflates() {
    let mut sc = Script::new(Strategy::PipelineDeflate, |_| {}, None, PIPELINE, true);
    assert!(sc.requests()[0].ends_with("Accept-Encoding: deflate\r\n\r\n"));
    let z = deflate(page_html());
    // The compressed page dripped in two reads.
    let head = ok_head(z.len(), "Content-Encoding: deflate\r\n");
    let mut resp = head.clone().into_bytes();
    resp.extend(&z);
    // The head and the first byte of the zlib stream (no HTML yet), then
    // the rest.
    let (a, b) = resp.split_at(head.len() + 1);
    sc.server(10, a);
    sc.server(12, b);
    assert_eq!(sc.timer(), 62);
    let reqs = sc.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[1..].iter().all(|r| !r.contains("Accept-Encoding")));
    let (report, _) = sc.s.finish();
    assert_eq!(report.objects[0].size, page_html().len() as u64);
    assert_eq!(report.objects[0].body_bytes_received, z.len() as u64);
}

/// A GETALL answer: part `n` carries the entity tag `"gn"`.
fn multipart(parts: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (n, (loc, data)) in parts.iter().enumerate() {
        body.extend(
            format!(
                "--B\r\nContent-Location: {loc}\r\nETag: \"g{n}\"\r\nContent-Length: {}\r\n\r\n",
                data.len()
            )
            .bytes(),
        );
        body.extend(data);
        body.extend(b"\r\n");
    }
    body.extend(b"--B--\r\n");
    body
}

/// getall: one request; the multipart answer's parts are the objects; the
/// connection is done at the answer's end with nothing more sent; the
/// cache gets every part and the reference list, and a later visit asks
/// for the page and every image in one GETLIST with validators.
#[test]
fn getall_one_request_then_one_getlist() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let mut sc = Script::new(Strategy::Getall, |_| {}, Some(&cache), PIPELINE, true);
    assert!(sc.requests()[0].ends_with("Getall: 1\r\n\r\n"));
    let body = multipart(&[
        ("/index.html", page_html().to_vec()),
        ("/a.gif", gif(1)),
        ("/b.gif", gif(2)),
    ]);
    let head = ok_head(body.len(), "Content-Type: multipart/mixed; boundary=B\r\n");
    assert!(closes_done(sc.respond(10, &head, &body)));
    assert_eq!(sc.sent.len(), 1);
    let (report, writes) = sc.s.finish();
    assert_eq!(report.requests, 1);
    assert_eq!(report.objects[2].outcome, Outcome::GetallPart);
    assert_eq!(writes.len(), 4);
    for w in writes {
        w.apply(&cache).unwrap();
    }

    let sc = Script::new(
        Strategy::Getall,
        |c| c.revalidate = true,
        Some(&cache),
        PIPELINE,
        true,
    );
    // The page and both images in one message, with every cached tag,
    // flushed at once.
    let req = text(&sc.wire);
    assert!(req.starts_with("GETLIST / HTTP/1.1\r\n"), "{req}");
    assert!(
        req.contains("If-None-Match: \"g0\", \"g1\", \"g2\"\r\n"),
        "{req}"
    );
    assert!(
        req.ends_with("\r\n\r\n/index.html\r\n/a.gif\r\n/b.gif\r\n"),
        "{req}"
    );
    assert_eq!(sc.sent.len(), 1);
    assert_eq!(
        (sc.sent[0].at_ms, sc.sent[0].reason),
        (0, FlushReason::Explicit)
    );
}

/// The package of the page and two images (a.gif, b.gif) the objpack
/// tests answer with.
fn three_file_package() -> Vec<u8> {
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("index.html", page_html().to_vec()),
        ("a.gif", gif(1)),
        ("b.gif", gif(2)),
    ];
    let entries = files
        .iter()
        .map(|(n, b)| Entry {
            name: n.to_string(),
            size: b.len() as u64,
            attrs: Attributes::default(),
        })
        .collect();
    Manifest::new(entries, &Limits::default())
        .unwrap()
        .assemble(files.iter().map(|f| f.1.as_slice()))
}

/// objpack: the page request asks for the package; one package answer
/// brings every object, each recorded as it completes; nothing more is
/// sent.
#[test]
fn objpack_one_package() {
    let mut sc = Script::new(Strategy::Objpack, |_| {}, None, PIPELINE, true);
    assert!(sc.requests()[0].contains(MEDIA_TYPE));
    let pkg = three_file_package();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {MEDIA_TYPE}\r\nContent-Length: {}\r\n\r\n",
        pkg.len()
    );
    sc.server(10, head.as_bytes());
    let (a, b) = pkg.split_at(pkg.len() - 5);
    assert!(matches!(sc.server(20, a), Step::Wait));
    assert!(closes_done(sc.server(30, b)));
    assert_eq!(sc.sent.len(), 1, "one request for the whole page");
    let (report, _) = sc.s.finish();
    assert_eq!(report.objects.len(), 3);
    assert_eq!(report.objects[1].sha256, sha256_hex(&gif(1)));
    // a.gif was complete before the package's last bytes.
    assert_eq!(report.objects[1].done_ms, 20.0);
    assert_eq!(report.objects[2].done_ms, 30.0);
}

/// Range mode: the first bytes of both images leave in one timer flush;
/// the rests only once both first parts are in, in a second one.
#[test]
fn range_first_parts_then_rests() {
    let mut sc = Script::new(
        Strategy::Pipeline,
        |c| c.range_first = Some(10),
        None,
        PIPELINE,
        true,
    );
    let html = page_html();
    sc.respond(5, &ok_head(html.len(), ""), html);
    assert_eq!(sc.timer(), 55);
    let reqs = sc.requests();
    assert!(reqs[1..]
        .iter()
        .all(|r| r.ends_with("Range: bytes=0-9\r\n\r\n")));
    let images = [gif(1), gif(2)];
    let partial = |from: usize, to: usize| {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {from}-{to}/30\r\n\r\n",
            to + 1 - from
        )
    };
    sc.respond(60, &partial(0, 9), &images[0][..10]);
    assert_eq!(sc.sent.len(), 2, "the rests wait for every first part");
    // Nothing buffered: the next deadline is the end of the minimum-rate
    // window that opened when the first parts were asked for (at 5 ms).
    assert_eq!(
        sc.m.next_deadline(&sc.s),
        Some(sc.t0 + 5 * MS + sc.s.cfg.timeouts.read)
    );
    sc.respond(61, &partial(0, 9), &images[1][..10]);
    assert_eq!(sc.timer(), 111);
    assert_eq!(sc.sent[2].reason, FlushReason::Timer);
    let reqs = sc.requests();
    assert_eq!(reqs.len(), 5);
    assert!(reqs[3..]
        .iter()
        .all(|r| r.ends_with("Range: bytes=10-\r\n\r\n")));
    sc.respond(120, &partial(10, 29), &images[0][10..]);
    assert!(closes_done(sc.respond(
        121,
        &partial(10, 29),
        &images[1][10..]
    )));
    let (report, _) = sc.s.finish();
    assert_eq!(report.objects[2].sha256, sha256_hex(&images[1]));
    assert_eq!(report.objects[2].status, 200);
}

/// Revalidation (pipeline): conditional requests with the cached
/// validators, the images found in the cached page at the 304's head and
/// flushed by the timer; all 304s, and nothing for the cache to write.
#[test]
fn pipeline_revalidation_sends_conditional_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let mut sc = Script::new(Strategy::Pipeline, |_| {}, Some(&cache), PIPELINE, true);
    let html = page_html();
    sc.respond(1, &ok_head(html.len(), "ETag: \"p\"\r\n"), html);
    sc.timer();
    let g = gif(7);
    sc.respond(60, &ok_head(g.len(), "ETag: \"a\"\r\n"), &g);
    assert!(closes_done(sc.respond(
        61,
        &ok_head(g.len(), "ETag: \"b\"\r\n"),
        &g
    )));
    let (_, writes) = sc.s.finish();
    assert_eq!(writes.len(), 3);
    for w in writes {
        w.apply(&cache).unwrap();
    }

    let mut sc = Script::new(
        Strategy::Pipeline,
        |c| c.revalidate = true,
        Some(&cache),
        PIPELINE,
        true,
    );
    assert!(sc.requests()[0].ends_with("If-None-Match: \"p\"\r\n\r\n"));
    let nm = |tag: &str| format!("HTTP/1.1 304 Not Modified\r\nETag: \"{tag}\"\r\n\r\n");
    sc.respond(10, &nm("p"), b"");
    assert_eq!(sc.timer(), 60);
    let reqs = sc.requests();
    assert!(reqs[1].contains("If-None-Match: \"a\"\r\n"), "{}", reqs[1]);
    assert!(reqs[2].contains("If-None-Match: \"b\"\r\n"), "{}", reqs[2]);
    let mut both = nm("a").into_bytes();
    both.extend(nm("b").as_bytes());
    assert!(closes_done(sc.server(70, &both)));
    let (report, writes) = sc.s.finish();
    assert!(writes.is_empty());
    assert!(report
        .objects
        .iter()
        .all(|o| o.outcome == Outcome::NotModified));
    assert_eq!(report.objects[1].sha256, sha256_hex(&g));
}

/// The server closes after the page with the images unanswered: the
/// connection ends as closed with both to send again; on the cautious
/// reconnection only one request is in flight until a response came.
#[test]
fn early_close_hands_back_the_unanswered() {
    let mut sc = Script::new(Strategy::Pipeline, |_| {}, None, PIPELINE, true);
    let html = page_html();
    sc.respond(10, &ok_head(html.len(), ""), html);
    sc.timer();
    sc.now = sc.t0 + 70 * MS;
    sc.m.on_eof(&mut sc.s, sc.now).unwrap();
    let Step::Close(End::Closed {
        unanswered,
        answered,
        how,
    }) = sc.step()
    else {
        panic!("closed expected");
    };
    assert_eq!((unanswered.as_slice(), answered), (&[1, 2][..], 1));
    assert_eq!(how, "the server closed the connection before the response");
    sc.reopen(
        unanswered,
        Plan {
            pipeline: true,
            cautious: true,
        },
        true,
    );
    sc.step();
    assert_eq!(
        sc.sent.last().unwrap(),
        &sent(70, FlushReason::Explicit, &["GET /a.gif HTTP/1.1"])
    );
    assert_eq!(sc.sent.len(), 3, "one request until a response came");
    let g = gif(1);
    sc.respond(80, &ok_head(g.len(), ""), &g);
    // Then pipelining again: b.gif waits for the flush timer.
    assert_eq!(sc.timer(), 130);
    assert_eq!(
        sc.sent.last().unwrap(),
        &sent(130, FlushReason::Timer, &["GET /b.gif HTTP/1.1"])
    );
}

/// Silence: the timer at the read timeout ends the connection with the
/// read timeout's error naming the awaited object.
#[test]
fn read_timeout_fires_in_virtual_time() {
    let mut sc = Script::new(Strategy::Http11, |_| {}, None, ONE_BY_ONE, true);
    let read = sc.s.cfg.timeouts.read;
    let at = sc.m.next_deadline(&sc.s).unwrap();
    assert_eq!(at, sc.t0 + read);
    // A timer that fires early does nothing.
    sc.m.on_timer(&mut sc.s, sc.t0 + read / 2).unwrap();
    let e = sc.m.on_timer(&mut sc.s, at).unwrap_err();
    assert!(matches!(e, FetchError::ReadTimeout { .. }), "{e}");
    assert!(e.to_string().contains("/index.html"), "{e}");
}

/// The imitated host's cost per object: after a response the connection
/// neither reads nor sends until the cost has passed, then goes on.
#[test]
fn host_cost_delays_the_next_request() {
    let mut sc = Script::new(
        Strategy::Http11,
        |c| c.host_cost.per_object = 7 * MS,
        None,
        ONE_BY_ONE,
        true,
    );
    let html = page_html();
    sc.respond(10, &ok_head(html.len(), ""), html);
    assert!(sc.m.busy());
    assert_eq!(sc.sent.len(), 1);
    assert_eq!(sc.timer(), 17);
    assert_eq!(
        sc.sent[1],
        sent(17, FlushReason::Explicit, &["GET /a.gif HTTP/1.1"])
    );
}

/// The imitated host handles every object a response carries, whether it
/// comes as a GETALL part or as a file of an object package: the same
/// three objects (page, a.gif, b.gif), head at 10 ms, bytes at 20 and
/// 30 ms, 20 ms per object, keep it busy until the same moment, the three
/// parts taken as arriving evenly from the head to the end (at 16.67,
/// 23.33 and 30 ms): 10 + 20/3 + 3 x 20 = 76.67 ms. (The package's files
/// are recorded as they complete, before its end; they used to be left
/// out, so a package cost one object: 30 + 20 = 50 ms.)
#[test]
fn host_cost_is_per_object_for_a_package_as_for_getall() {
    let pkg = three_file_package();
    let pkg_head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {MEDIA_TYPE}\r\nContent-Length: {}\r\n\r\n",
        pkg.len()
    );
    let all = multipart(&[
        ("/index.html", page_html().to_vec()),
        ("/a.gif", gif(1)),
        ("/b.gif", gif(2)),
    ]);
    let all_head = ok_head(all.len(), "Content-Type: multipart/mixed; boundary=B\r\n");
    let cost = |c: &mut FetchConfig| c.host_cost.per_object = 20 * MS;
    let mut busy = Vec::new();
    for (strategy, head, body) in [
        (Strategy::Objpack, pkg_head, pkg),
        (Strategy::Getall, all_head, all),
    ] {
        let mut sc = Script::new(strategy, cost, None, PIPELINE, true);
        sc.server(10, head.as_bytes());
        // Both b.gif's last bytes and the end come in the last read; a.gif
        // is complete before it.
        let (a, b) = body.split_at(body.len() - 5);
        assert!(matches!(sc.server(20, a), Step::Wait));
        assert!(matches!(sc.server(30, b), Step::Wait), "{strategy:?}");
        assert!(sc.m.busy(), "{strategy:?}");
        let until = sc.m.next_deadline(&sc.s).expect("busy until");
        busy.push(until.duration_since(sc.t0));
        let (report, _) = sc.s.finish();
        assert_eq!(report.objects.len(), 3, "{strategy:?}");
    }
    let expected = 10 * MS + 20 * MS / 3 + 3 * 20 * MS;
    assert_eq!(busy, vec![expected, expected]);
}

/// One object: handled after it arrives, or after the host is free.
#[test]
fn busy_after_one_object() {
    let t0 = Instant::now();
    let end = t0 + 10 * MS;
    assert_eq!(busy_after(None, t0, end, 1, 5 * MS), end + 5 * MS);
    // Still busy with an earlier object until 20 ms: 20 + 5.
    assert_eq!(
        busy_after(Some(t0 + 20 * MS), t0, end, 1, 5 * MS),
        t0 + 25 * MS
    );
}

/// Four parts over 40 ms: a cost below the spacing hides behind the
/// arrivals (only the last part's cost shows); a cost above it adds up
/// (the first part's arrival plus four costs).
#[test]
fn busy_after_parts_overlap_arrival() {
    let t0 = Instant::now();
    let end = t0 + 40 * MS;
    assert_eq!(busy_after(None, t0, end, 4, 5 * MS), end + 5 * MS);
    assert_eq!(busy_after(None, t0, end, 4, 20 * MS), t0 + 90 * MS);
}

/// Each object's validators on the scripted server: (ETag, Last-Modified).
fn validators(path: &str) -> (&'static str, &'static str) {
    match path {
        "/index.html" => ("\"p\"", "Sat, 21 Nov 2026 05:00:00 GMT"),
        "/a.gif" => ("\"a\"", "Sat, 21 Nov 2026 05:00:01 GMT"),
        _ => ("\"b\"", "Sat, 21 Nov 2026 05:00:02 GMT"),
    }
}

/// The request line's target.
fn target_of(request: &str) -> &str {
    request.split(' ').nth(1).unwrap_or("")
}

/// One visit of `strategy` played through its machines: the page, then
/// its two images (HTTP/1.0: each on a connection of its own from the
/// dispatcher; the persistent strategies on the same connection, the
/// pipeline's images leaving when the flush timer fires). Every request is
/// answered by `answer` 10 ms after the last event.
fn visit(
    strategy: Strategy,
    cache: &Cache,
    revalidate: bool,
    answer: &dyn Fn(&str) -> String,
) -> Script {
    let http10 = strategy == Strategy::Http10;
    let plan = if strategy.pipelines() {
        PIPELINE
    } else {
        ONE_BY_ONE
    };
    let setup = |c: &mut FetchConfig| {
        c.revalidate = revalidate;
        // Conditional GETs for every strategy (HTTP/1.0's default is the
        // paper's HEAD requests: `session::tests`).
        c.revalidation = crate::config::Revalidation::Conditional;
    };
    let mut sc = Script::new(strategy, setup, Some(cache), plan, !http10);
    let mut answered = 0;
    // Bounded: three objects, each asked for, answered, and maybe flushed.
    for _ in 0..12 {
        let reqs = sc.requests();
        let at = sc.ms(sc.now) + 10;
        if answered < reqs.len() {
            let bytes: String = reqs[answered..].iter().map(|r| answer(r)).collect();
            answered = reqs.len();
            sc.server(at, bytes.as_bytes());
        } else if !sc.dispatched.is_empty() {
            let id = sc.dispatched.remove(0);
            sc.reopen(vec![id], ONE_BY_ONE, false);
            sc.now = sc.t0 + Duration::from_millis(at);
            sc.step();
        } else if sc.m.next_deadline(&sc.s).is_some() && answered < 3 {
            sc.timer();
        } else {
            break;
        }
    }
    sc
}

/// A first visit's answer to request `r`: the object with its validators.
fn first_answer(version: &str, r: &str) -> String {
    let path = target_of(r);
    let body = if path == "/index.html" {
        page_html().to_vec()
    } else {
        gif(path.len() as u8)
    };
    let (etag, lm) = validators(path);
    let mut resp = format!(
        "{version} 200 OK\r\nContent-Length: {}\r\nETag: {etag}\r\nLast-Modified: {lm}\r\n\r\n",
        body.len()
    );
    // These images are ASCII bytes (a GIF's are not, in general).
    resp.push_str(std::str::from_utf8(&body).expect("ASCII"));
    resp
}

/// Revalidation by conditional GETs for every HTTP/1 strategy through its
/// machines: a first visit fills the cache; the second sends every
/// object's request with the
/// cached `If-Modified-Since` (and `If-None-Match`, except HTTP/1.0, which
/// has only dates), finds the images in the cached page at the 304's head,
/// flushes them as the strategy does (at once, or by the pipeline's timer
/// 50 ms later), and leaves nothing for the cache to write.
#[test]
fn revalidation_for_every_http1_strategy() {
    for strategy in [
        Strategy::Http10,
        Strategy::Http11,
        Strategy::Pipeline,
        Strategy::PipelineDeflate,
    ] {
        let version = if strategy == Strategy::Http10 {
            "HTTP/1.0"
        } else {
            "HTTP/1.1"
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let first = |r: &str| first_answer(version, r);
        let mut sc = visit(strategy, &cache, false, &first);
        assert_eq!(sc.lines().len(), 3, "{strategy}: {:?}", sc.lines());
        let (report, writes) = sc.s.finish();
        assert_eq!(report.objects.len(), 3, "{strategy}");
        assert_eq!(writes.len(), 3, "{strategy}: page and two images to cache");
        for w in writes {
            w.apply(&cache).unwrap();
        }

        let second = |r: &str| {
            let (etag, lm) = validators(target_of(r));
            assert!(
                r.contains(&format!("\r\nIf-Modified-Since: {lm}\r\n")),
                "{strategy}: {r}"
            );
            let tag = format!("\r\nIf-None-Match: {etag}\r\n");
            assert_eq!(
                r.contains(&tag),
                strategy != Strategy::Http10,
                "{strategy}: {r}"
            );
            format!("{version} 304 Not Modified\r\nETag: {etag}\r\nLast-Modified: {lm}\r\n\r\n")
        };
        let mut sc = visit(strategy, &cache, true, &second);
        let lines = sc.lines();
        assert_eq!(lines.len(), 3, "{strategy}: {lines:?}");
        assert!(lines[0].starts_with("GET /index.html"), "{lines:?}");
        let reasons: Vec<(u64, FlushReason)> =
            sc.sent.iter().map(|s| (s.at_ms, s.reason)).collect();
        if strategy.pipelines() {
            // The 304 at 10 ms; the images wait for the 50 ms timer.
            assert_eq!(
                reasons,
                [(0, FlushReason::Explicit), (60, FlushReason::Timer)],
                "{strategy}"
            );
        } else {
            assert!(
                reasons.iter().all(|(_, r)| *r == FlushReason::Explicit),
                "{strategy}: {reasons:?}"
            );
        }
        let (report, writes) = sc.s.finish();
        assert!(
            writes.is_empty(),
            "{strategy}: an all-304 visit writes nothing"
        );
        assert!(report
            .objects
            .iter()
            .all(|o| o.outcome == Outcome::NotModified));
        assert_eq!(report.objects[0].size, page_html().len() as u64);
    }
}
