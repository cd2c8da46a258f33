//! pagewire's own HTTP/2 server connection (`pagewire_server::http2::Conn`,
//! what `pagewire serve --tls` runs inside TLS): the client preface, then
//! the fuzz input, fed to `Conn::input` whole and in reads of 1-16 bytes
//! (the first input byte chooses), driven as `http2::serve_conn` drives it
//! (pump, write what was made, read again), answering from a small
//! in-memory site (a page, a file larger than the initial window, an empty
//! file). No TLS, no sockets.
//!
//! Oracles beyond "no panic" and "no hang" (the peer's bytes end, so every
//! run ends):
//! - what the connection writes is a well-formed frame sequence: every
//!   write ends on a frame boundary; the server's SETTINGS first; no frame
//!   over the peer's SETTINGS_MAX_FRAME_SIZE in effect when it was written
//!   (the n-th SETTINGS ACK marks the n-th peer SETTINGS applied); only the
//!   types and lengths a server may send; a header block is HEADERS then
//!   CONTINUATIONs of one stream and decodes (HPACK) to a `:status`; DATA
//!   only on a stream whose response is open, never beyond its
//!   Content-Length and exactly it at END_STREAM, nothing but RST_STREAM on
//!   a stream after its END_STREAM or RST_STREAM; nothing after GOAWAY; DATA
//!   in all within the connection windows the peer's bytes granted;
//! - one SETTINGS ACK per peer SETTINGS read (when the connection neither
//!   failed nor stopped at the peer's GOAWAY);
//! - never more than `MAX_CONCURRENT_STREAMS` streams open;
//! - fed whole and in pieces, every frame but DATA (response heads without
//!   Date, RST_STREAM, WINDOW_UPDATE, PING and SETTINGS ACKs, GOAWAY) is the
//!   same in the same order, unless the run met what the timing of DATA
//!   decides (a stream refused at the concurrency limit, a window overflow
//!   on a stream that may have finished, the peer's GOAWAY, which ends the
//!   connection at the end of its read); STREAM_CLOSED and PROTOCOL_ERROR
//!   on a frame for a closed stream count as one (which one depends on
//!   whether the stream finished sending); a response body sent to its
//!   END_STREAM in both runs is the same.
#![no_main]

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use pagewire_server::http2::{code, flag, frame, setting, Conn, MAX_FRAME_SIZE, PREFACE};
use pagewire_server::modern::{BridgeBufs, MAX_CONCURRENT_STREAMS};
use pagewire_server::Handler;
use pagewire_site::store::{Site, SiteFile};

/// The RFC's initial window (the connection's send window at the start).
const INITIAL_WINDOW: u64 = 65_535;

fn site() -> &'static Handler {
    static SITE: OnceLock<Handler> = OnceLock::new();
    SITE.get_or_init(|| {
        let file = |path: &str, body: Vec<u8>| SiteFile {
            path: path.into(),
            body: Bytes::from(body),
            modified: UNIX_EPOCH + Duration::from_secs(1_000_000_000),
        };
        let page = format!("<html>{}</html>", "a compressible page ".repeat(100));
        let noise: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        Handler::from(Arc::new(Site::from_files(vec![
            file("/index.html", page.into_bytes()),
            file("/big.bin", noise),
            file("/small.txt", b"hello, h2\n".to_vec()),
            file("/empty.txt", Vec::new()),
        ])))
    })
}

/// What the peer's bytes ask of the output, read as the server reads
/// frames (complete frames, until one over the frame size limit).
#[derive(Default)]
struct PeerFrames {
    /// Per peer SETTINGS (not ACK): its SETTINGS_MAX_FRAME_SIZE, if any.
    settings: Vec<Option<usize>>,
    /// Connection WINDOW_UPDATE increments, summed.
    conn_window: u64,
    /// A GOAWAY: the connection may end at the end of its read.
    goaway: bool,
}

fn peer_frames(mut input: &[u8]) -> PeerFrames {
    let mut p = PeerFrames::default();
    // Bounded: every pass consumes a frame or stops.
    while input.len() >= 9 {
        let len =
            (usize::from(input[0]) << 16) | (usize::from(input[1]) << 8) | usize::from(input[2]);
        let (kind, flags) = (input[3], input[4]);
        let stream = u32::from_be_bytes([input[5], input[6], input[7], input[8]]) & 0x7fff_ffff;
        if len > MAX_FRAME_SIZE || input.len() < 9 + len {
            break;
        }
        let payload = &input[9..9 + len];
        input = &input[9 + len..];
        match kind {
            frame::SETTINGS if flags & flag::ACK == 0 => {
                let max = payload
                    .chunks_exact(6)
                    .filter(|s| u16::from_be_bytes([s[0], s[1]]) == setting::MAX_FRAME_SIZE)
                    .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]) as usize)
                    .last();
                p.settings.push(max);
            }
            frame::WINDOW_UPDATE if stream == 0 && len == 4 => {
                p.conn_window += u64::from(
                    u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]])
                        & 0x7fff_ffff,
                );
            }
            frame::GOAWAY => p.goaway = true,
            _ => {}
        }
    }
    p
}

/// One run: the bytes written, and the writes' frame alignment checked.
fn run(bytes: &[u8], piece: usize) -> Vec<u8> {
    let site = site();
    let mut conn = Conn::new();
    let mut bufs = BridgeBufs::default();
    let mut written = Vec::new();
    let mut rbuf: Vec<u8> = Vec::new();
    let mut reads = bytes.chunks(piece.max(1));
    // As `serve_conn`. Bounded: every pass writes what a pump made (DATA
    // is bounded by the responses' bodies) or reads a piece.
    loop {
        conn.pump();
        if !conn.out.is_empty() {
            assert_eq!(
                frames_end(&conn.out),
                Some(conn.out.len()),
                "a write ends inside a frame"
            );
            written.extend_from_slice(&conn.out);
            conn.out.clear();
            if conn.can_send() {
                continue;
            }
        }
        assert!(conn.open_streams() <= MAX_CONCURRENT_STREAMS as usize);
        if conn.finished() {
            break;
        }
        let Some(r) = reads.next() else { break };
        rbuf.extend_from_slice(r);
        let used = conn.input(&rbuf, site, &mut bufs);
        assert!(used <= rbuf.len());
        rbuf.drain(..used);
        assert!(
            conn.open_streams() <= MAX_CONCURRENT_STREAMS as usize,
            "{} streams open",
            conn.open_streams()
        );
    }
    written
}

/// Where the whole frames of `b` end (None if one is cut).
fn frames_end(b: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < b.len() {
        let h = b.get(at..at + 9)?;
        let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        at += 9 + len;
    }
    (at == b.len()).then_some(at)
}

/// The frames of a run but DATA, for comparing runs.
#[derive(Debug, PartialEq, Eq)]
enum Ctl {
    /// A response head: stream, fields without Date, END_STREAM.
    Head(u32, Vec<(Vec<u8>, Vec<u8>)>, bool),
    Rst(u32, u32),
    WindowUpdate(u32, u32),
    PingAck(Vec<u8>),
    SettingsAck,
    /// Last stream, code (STREAM_CLOSED as PROTOCOL_ERROR).
    GoAway(u32, u32),
}

#[derive(Default)]
struct Resp {
    content_length: Option<u64>,
    body: Vec<u8>,
    /// END_STREAM or RST_STREAM sent.
    ended: bool,
    /// Sent to its END_STREAM.
    complete: bool,
}

struct Checked {
    ctl: Vec<Ctl>,
    responses: HashMap<u32, Resp>,
    /// Met something whose outcome the timing of DATA decides.
    timing: bool,
}

/// Checks that `out` is a well-formed sequence of server frames for the
/// peer's `peer` frames.
fn check(out: &[u8], peer: &PeerFrames) -> Checked {
    let mut decoder = httlib_hpack::Decoder::with_dynamic_size(4096);
    let mut ctl = Vec::new();
    let mut responses: HashMap<u32, Resp> = HashMap::new();
    let mut timing = false;
    let mut acks = 0usize;
    let mut max_frame = MAX_FRAME_SIZE;
    let mut data_total = 0u64;
    let mut goaway = false;
    // A header block in progress: stream, END_STREAM, bytes.
    let mut block: Option<(u32, bool, Vec<u8>)> = None;
    let mut at = 0;
    let mut first = true;
    while at < out.len() {
        assert!(!goaway, "a frame after GOAWAY");
        let h = &out[at..at + 9];
        let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
        assert_eq!(stream & 0x8000_0000, 0, "reserved bit set");
        let payload = &out[at + 9..at + 9 + len];
        at += 9 + len;
        assert!(
            len <= max_frame,
            "a {len}-byte frame (type {kind}) over the peer's {max_frame}"
        );
        if first {
            assert_eq!(
                (kind, flags, stream),
                (frame::SETTINGS, 0, 0),
                "the server's SETTINGS first"
            );
            assert_eq!(len % 6, 0);
            assert!(payload.chunks_exact(6).any(|s| s
                == [
                    0,
                    setting::MAX_CONCURRENT_STREAMS as u8,
                    0,
                    0,
                    (MAX_CONCURRENT_STREAMS >> 8) as u8,
                    MAX_CONCURRENT_STREAMS as u8
                ]));
            first = false;
            continue;
        }
        if let Some((s, _, _)) = &block {
            assert_eq!(
                (kind, stream),
                (frame::CONTINUATION, *s),
                "a header block interrupted"
            );
        }
        match kind {
            frame::SETTINGS => {
                assert_eq!(
                    (flags, stream, len),
                    (flag::ACK, 0, 0),
                    "a second SETTINGS, not an ACK"
                );
                acks += 1;
                let applied = peer
                    .settings
                    .get(acks - 1)
                    .expect("more SETTINGS ACKs than SETTINGS");
                if let Some(m) = applied {
                    max_frame = *m;
                }
                ctl.push(Ctl::SettingsAck);
            }
            frame::PING => {
                assert_eq!((flags, stream, len), (flag::ACK, 0, 8), "PING not an ACK");
                ctl.push(Ctl::PingAck(payload.to_vec()));
            }
            frame::GOAWAY => {
                assert_eq!((stream, len), (0, 8), "GOAWAY's form");
                let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                let mut c = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
                assert_ne!(
                    c,
                    code::NO_ERROR,
                    "GOAWAY(NO_ERROR) though no shutdown was asked"
                );
                if c == code::FLOW_CONTROL_ERROR {
                    timing = true;
                }
                if c == code::STREAM_CLOSED {
                    c = code::PROTOCOL_ERROR;
                }
                goaway = true;
                ctl.push(Ctl::GoAway(last, c));
            }
            frame::WINDOW_UPDATE => {
                assert_eq!(len, 4);
                let n = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                assert!((1..=0x7fff_ffff).contains(&n), "WINDOW_UPDATE of {n}");
                if stream != 0 {
                    let r = responses.get(&stream);
                    assert!(
                        r.is_none(),
                        "WINDOW_UPDATE on stream {stream} after its response began"
                    );
                }
                ctl.push(Ctl::WindowUpdate(stream, n));
            }
            frame::RST_STREAM => {
                assert_eq!(len, 4);
                assert_ne!(stream, 0, "RST_STREAM on stream 0");
                let c = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                if c == code::REFUSED_STREAM || c == code::FLOW_CONTROL_ERROR {
                    timing = true;
                }
                if let Some(r) = responses.get_mut(&stream) {
                    r.ended = true;
                }
                ctl.push(Ctl::Rst(stream, c));
            }
            frame::HEADERS => {
                assert!(stream % 2 == 1, "a response on stream {stream}");
                assert!(
                    !responses.contains_key(&stream),
                    "a second response head on stream {stream}"
                );
                assert_eq!(
                    flags & !(flag::END_STREAM | flag::END_HEADERS),
                    0,
                    "HEADERS flags {flags:#x}"
                );
                let b = (stream, flags & flag::END_STREAM != 0, payload.to_vec());
                if flags & flag::END_HEADERS != 0 {
                    ctl.push(head_done(&mut decoder, b, &mut responses));
                } else {
                    block = Some(b);
                }
            }
            frame::CONTINUATION => {
                let mut b = block.take().expect("CONTINUATION without HEADERS");
                assert_eq!(
                    flags & !flag::END_HEADERS,
                    0,
                    "CONTINUATION flags {flags:#x}"
                );
                b.2.extend_from_slice(payload);
                if flags & flag::END_HEADERS != 0 {
                    ctl.push(head_done(&mut decoder, b, &mut responses));
                } else {
                    block = Some(b);
                }
            }
            frame::DATA => {
                assert_eq!(flags & !flag::END_STREAM, 0, "DATA flags {flags:#x}");
                let r = responses
                    .get_mut(&stream)
                    .unwrap_or_else(|| panic!("DATA on stream {stream} before its response head"));
                assert!(!r.ended, "DATA on stream {stream} after it ended");
                r.body.extend_from_slice(payload);
                data_total += len as u64;
                if let Some(cl) = r.content_length {
                    assert!(r.body.len() as u64 <= cl, "a body over its Content-Length");
                }
                if flags & flag::END_STREAM != 0 {
                    if let Some(cl) = r.content_length {
                        assert_eq!(
                            r.body.len() as u64,
                            cl,
                            "a body short of its Content-Length"
                        );
                    }
                    r.ended = true;
                    r.complete = true;
                }
            }
            other => panic!("the server wrote a frame of type {other}"),
        }
    }
    assert!(block.is_none(), "a header block left open");
    assert!(
        data_total <= INITIAL_WINDOW + peer.conn_window,
        "{data_total} DATA bytes, over the connection window's {}",
        INITIAL_WINDOW + peer.conn_window
    );
    if !goaway && !peer.goaway {
        assert_eq!(acks, peer.settings.len(), "SETTINGS read and acknowledged");
    }
    if peer.goaway {
        timing = true;
    }
    Checked {
        ctl,
        responses,
        timing,
    }
}

fn head_done(
    decoder: &mut httlib_hpack::Decoder<'static>,
    (stream, end_stream, mut block): (u32, bool, Vec<u8>),
    responses: &mut HashMap<u32, Resp>,
) -> Ctl {
    let mut fields = Vec::new();
    decoder
        .decode(&mut block, &mut fields)
        .expect("the server's header block decodes");
    assert!(
        fields
            .first()
            .is_some_and(|(n, v, _)| n == b":status" && v.len() == 3),
        "a response head without :status first"
    );
    assert!(
        fields.iter().skip(1).all(|(n, _, _)| !n.starts_with(b":")),
        "a pseudo-header after :status"
    );
    let content_length = fields
        .iter()
        .find(|(n, _, _)| n == b"content-length")
        .map(|(_, v, _)| {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .expect("Content-Length a number")
        });
    let head_only = end_stream;
    responses.insert(
        stream,
        Resp {
            content_length: if head_only { None } else { content_length },
            body: Vec::new(),
            ended: end_stream,
            complete: end_stream,
        },
    );
    let fields = fields
        .into_iter()
        .filter(|(n, _, _)| n != b"date")
        .map(|(n, v, _)| (n, v))
        .collect();
    Ctl::Head(stream, fields, end_stream)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let peer = peer_frames(input);
    let mut bytes = PREFACE.to_vec();
    bytes.extend_from_slice(input);
    let piece = usize::from(first % 16) + 1;
    let whole = check(&run(&bytes, usize::MAX), &peer);
    let split = check(&run(&bytes, piece), &peer);
    for (id, w) in &whole.responses {
        if let Some(s) = split.responses.get(id) {
            if w.complete && s.complete {
                assert!(
                    w.body == s.body,
                    "read size {piece} changed stream {id}'s body"
                );
            }
        }
    }
    if !whole.timing && !split.timing {
        assert_eq!(whole.ctl, split.ctl, "read size {piece} changed the frames");
    }
});
