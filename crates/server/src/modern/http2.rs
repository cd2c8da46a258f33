//! pagewire's own HTTP/2 server connection (RFC 9113): framing, the
//! connection and stream state machines and both directions of flow
//! control, written out here because they are the protocol under study.
//! HPACK decoding (Huffman codes, the dynamic table) is `httlib-hpack`'s
//! (`loona-hpack`, tried first, builds its Huffman tree as a hash map for
//! every string it decodes: 25 % of the server's CPU under h2load);
//! responses are encoded without the dynamic table, as literals that are
//! never indexed, so a static file's field block is rendered once when the
//! server starts ([`hpack_block`]) and copied per response with its Date.
//!
//! [`Conn`] is the state: bytes in ([`Conn::input`]), frames out into one
//! buffer per connection ([`Conn::out`]), which the driver
//! ([`serve_conn`]) writes to TLS once per read turn: every response to the
//! requests read so far, every acknowledgement and WINDOW_UPDATE, in one
//! write. A request is answered when its stream's END_STREAM arrives;
//! request bodies are read, counted against the windows and dropped (the
//! server's resources are static). Response bodies go out in DATA frames as
//! the connection's and the stream's send windows allow, one stream after
//! the other in turn.
//!
//! Errors follow RFC 9113 §5.4: a connection error writes GOAWAY with its
//! code and ends the connection; a stream error writes RST_STREAM and the
//! connection goes on. Malformed requests (§8.1.1) are stream errors of
//! type PROTOCOL_ERROR.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};

use crate::answer::Handler;
pub use crate::hpack::hpack_field;
use crate::hpack::hpack_status;
use crate::modern::{BridgeBufs, Bridged};
use crate::stats::ServerStats;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
pub mod frame {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const PRIORITY: u8 = 2;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const PUSH_PROMISE: u8 = 5;
    pub const PING: u8 = 6;
    pub const GOAWAY: u8 = 7;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Error codes (RFC 9113 §7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const STREAM_CLOSED: u32 = 0x5;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// Settings identifiers (RFC 9113 §6.5.2).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// The largest frame payload this server accepts (the RFC's default; it
/// is not raised in SETTINGS).
pub const MAX_FRAME_SIZE: usize = 16_384;

/// SETTINGS_MAX_HEADER_LIST_SIZE this server announces: a request whose
/// decoded fields are larger is answered 431.
pub const MAX_HEADER_LIST_SIZE: usize = 65_536;

/// A header block (HEADERS and its CONTINUATIONs, still compressed) larger
/// than this ends the connection with ENHANCE_YOUR_CALM: a peer that sends
/// it has not read the announced limit.
pub const MAX_HEADER_BLOCK: usize = 4 * MAX_HEADER_LIST_SIZE;

/// The RFC's initial flow-control window (65,535 bytes), for the
/// connection and every stream, both directions; the server keeps it.
const DEFAULT_WINDOW: i64 = 65_535;

/// Largest window (2^31 - 1).
const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Control frames (SETTINGS, PING, RST_STREAM, PRIORITY, empty DATA and
/// CONTINUATION) a peer may send in a row without a request being answered
/// before the connection ends with ENHANCE_YOUR_CALM (the flood attacks of
/// CVE-2019-9512/9514/9515 and CVE-2023-44487).
const CONTROL_FLOOD: u32 = 10_000;

/// Stream ids the connection remembers as closed (for STREAM_CLOSED on a
/// late frame rather than PROTOCOL_ERROR).
const CLOSED_MEMORY: usize = 64;

/// Output gathered before DATA frames stop being added in a turn; what is
/// left goes in the next write.
const OUT_TURN: usize = 48 * 1024;

/// What went wrong with the connection as a whole: GOAWAY with this code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnError(pub u32);

/// The request of a stream, decoded.
#[derive(Default, Clone)]
struct Req {
    /// Names and values, back to back; spans index into it.
    buf: Vec<u8>,
    fields: Vec<(u32, u32, u32)>,
    method: Option<(u32, u32)>,
    path: Option<(u32, u32)>,
    authority: Option<(u32, u32)>,
    scheme: bool,
    protocol: bool,
    content_length: Option<u64>,
    /// The first §8.1.1 fault met, if any.
    malformed: bool,
    /// Decoded size (RFC 9113 §6.5.2) over MAX_HEADER_LIST_SIZE.
    too_large: bool,
    size: usize,
    regular_seen: bool,
}

impl Req {
    fn clear(&mut self) {
        self.buf.clear();
        self.fields.clear();
        self.method = None;
        self.path = None;
        self.authority = None;
        self.scheme = false;
        self.protocol = false;
        self.content_length = None;
        self.malformed = false;
        self.too_large = false;
        self.size = 0;
        self.regular_seen = false;
    }

    fn span(&self, s: (u32, u32)) -> &[u8] {
        &self.buf[s.0 as usize..s.1 as usize]
    }

    fn str(&self, s: Option<(u32, u32)>) -> Option<&str> {
        s.and_then(|s| std::str::from_utf8(self.span(s)).ok())
    }

    fn push_span(&mut self, b: &[u8]) -> (u32, u32) {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(b);
        (start, self.buf.len() as u32)
    }

    /// One decoded field (RFC 9113 §8.2, §8.3).
    fn field(&mut self, name: &[u8], value: &[u8], trailers: bool) {
        self.size += name.len() + value.len() + 32;
        if self.size > MAX_HEADER_LIST_SIZE {
            self.too_large = true;
            return;
        }
        if name.is_empty()
            || value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n')
            || value
                .first()
                .zip(value.last())
                .is_some_and(|(&a, &z)| matches!(a, b' ' | b'\t') || matches!(z, b' ' | b'\t'))
        {
            self.malformed = true;
            return;
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.regular_seen || trailers {
                self.malformed = true;
                return;
            }
            let slot = match pseudo {
                b"method" => &mut self.method,
                b"path" => &mut self.path,
                b"authority" => &mut self.authority,
                b"scheme" => {
                    if self.scheme {
                        self.malformed = true;
                    }
                    self.scheme = true;
                    return;
                }
                b"protocol" => {
                    self.protocol = true;
                    return;
                }
                _ => {
                    self.malformed = true;
                    return;
                }
            };
            if slot.is_some() {
                self.malformed = true;
                return;
            }
            let start = self.buf.len() as u32;
            self.buf.extend_from_slice(value);
            let s = (start, self.buf.len() as u32);
            match pseudo {
                b"method" => self.method = Some(s),
                b"path" => self.path = Some(s),
                _ => self.authority = Some(s),
            }
            return;
        }
        self.regular_seen = true;
        if name
            .iter()
            .any(|&b| b.is_ascii_uppercase() || b <= b' ' || b >= 0x7f || b == b':')
        {
            self.malformed = true;
            return;
        }
        match name {
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding"
            | b"upgrade" => {
                self.malformed = true;
                return;
            }
            b"te" if value != b"trailers" => {
                self.malformed = true;
                return;
            }
            b"content-length" if !trailers => {
                let n = std::str::from_utf8(value)
                    .ok()
                    .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok());
                match (n, self.content_length) {
                    (Some(n), None) => self.content_length = Some(n),
                    (Some(n), Some(m)) if n == m => {}
                    _ => {
                        self.malformed = true;
                        return;
                    }
                }
            }
            _ => {}
        }
        if trailers {
            return;
        }
        let (a, b) = self.push_span(name);
        let (_, c) = self.push_span(value);
        debug_assert_eq!(b, c - value.len() as u32);
        self.fields.push((a, b, c));
    }

    /// Whether the pseudo-headers make a request (RFC 9113 §8.3.1).
    fn complete(&self) -> bool {
        let Some(m) = self.method else { return false };
        if self.span(m) == b"CONNECT" {
            return self.authority.is_some() && self.path.is_none() && !self.scheme;
        }
        !self.protocol && self.scheme && self.path.is_some_and(|p| p.1 > p.0)
    }

    fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.fields.iter().map(|&(a, b, c)| {
            (
                &self.buf[a as usize..b as usize],
                &self.buf[b as usize..c as usize],
            )
        })
    }
}

struct Stream {
    /// What the peer lets this server send on the stream.
    send_window: i64,
    /// What this server still lets the peer send.
    recv_window: i64,
    /// Received bytes not yet given back in a WINDOW_UPDATE.
    recv_unacked: u32,
    /// The request, kept while its body arrives (None once answered).
    req: Option<Box<Req>>,
    /// DATA bytes received so far (for Content-Length).
    received: u64,
    /// The response body still to send, from `sent`.
    body: Bytes,
    sent: usize,
    /// In the send queue.
    queued: bool,
    /// The response's HEADERS went out.
    responding: bool,
}

/// Where in the connection's life the peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the rest of the 24-byte preface.
    Preface,
    /// The preface arrived; the next frame must be SETTINGS.
    FirstSettings,
    Open,
}

/// A header block being received (HEADERS without END_HEADERS so far).
struct Block {
    stream: u32,
    end_stream: bool,
    /// What to do with the decoded block.
    kind: BlockKind,
    buf: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    /// A new request.
    Request,
    /// Trailers of an open stream.
    Trailers,
    /// Decoded for HPACK's state, then dropped (a refused or ignored stream).
    Discard,
    /// A request refused with RST_STREAM REFUSED_STREAM after decoding.
    Refuse,
}

/// One HTTP/2 server connection's protocol state.
pub struct Conn {
    phase: Phase,
    decoder: httlib_hpack::Decoder<'static>,
    /// Decoded fields of a header block (reused).
    decoded: Vec<(Vec<u8>, Vec<u8>, u8)>,
    peer_initial_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    streams: HashMap<u32, Stream>,
    send_queue: VecDeque<u32>,
    /// Highest stream id the peer opened.
    last_stream: u32,
    closed: VecDeque<u32>,
    block: Option<Block>,
    /// GOAWAY sent (graceful): new streams are ignored.
    goaway_sent: bool,
    /// The peer sent GOAWAY: close once the streams are done.
    peer_goaway: bool,
    /// A connection error was written: close now.
    dead: bool,
    control_frames: u32,
    req: Req,
    /// Frames to write.
    pub out: Vec<u8>,
    /// Counted since the last [`Conn::take_stats`].
    stats: ServerStats,
}

impl Default for Conn {
    fn default() -> Self {
        Conn::new()
    }
}

/// Appends a frame header.
fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[l[1], l[2], l[3], kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Whether a block's representations are whole (every integer and string
/// inside the block) and every dynamic table size update comes before its
/// first field (RFC 7541 §4.2): walks the representations' prefixes.
/// `httlib-hpack` indexes past the end of a block whose last integer or
/// string is cut (a panic; found by the `h2_server` fuzz target), so such a
/// block never reaches it.
fn block_shape_ok(block: &[u8]) -> bool {
    // Skips an HPACK integer with an `n`-bit prefix at `at`; None if cut.
    fn int(b: &[u8], at: usize, n: u32) -> Option<(usize, usize)> {
        let max = (1usize << n) - 1;
        let mut v = (*b.get(at)? as usize) & max;
        let mut at = at + 1;
        if v < max {
            return Some((v, at));
        }
        let mut shift = 0;
        // Bounded: at most 5 continuation bytes.
        loop {
            let c = *b.get(at)?;
            at += 1;
            v = v.checked_add(((c & 0x7f) as usize).checked_shl(shift)?)?;
            if c & 0x80 == 0 {
                return Some((v, at));
            }
            shift += 7;
            if shift > 28 {
                return None;
            }
        }
    }
    fn string(b: &[u8], at: usize) -> Option<usize> {
        let (len, at) = int(b, at, 7)?;
        let end = at.checked_add(len)?;
        (end <= b.len()).then_some(end)
    }
    let mut at = 0;
    let mut field_seen = false;
    // Bounded: every pass moves `at` forward or returns.
    while at < block.len() {
        let o = block[at];
        if o & 0x80 != 0 {
            let Some((_, next)) = int(block, at, 7) else {
                return false;
            };
            at = next;
        } else if o & 0xe0 == 0x20 {
            if field_seen {
                return false;
            }
            let Some((_, next)) = int(block, at, 5) else {
                return false;
            };
            at = next;
            continue;
        } else {
            let n = if o & 0x40 != 0 { 6 } else { 4 };
            let Some((index, next)) = int(block, at, n) else {
                return false;
            };
            at = next;
            if index == 0 {
                let Some(next) = string(block, at) else {
                    return false;
                };
                at = next;
            }
            let Some(next) = string(block, at) else {
                return false;
            };
            at = next;
        }
        field_seen = true;
    }
    // A block of nothing but size updates ends in one (h2spec: an error).
    field_seen || block.is_empty()
}

/// What a decoded request is answered with.
enum Reply<'a> {
    /// A static file's plain 200: its rendered field block and body.
    Rendered {
        block: &'a [u8],
        body: Bytes,
    },
    Bridged(Bridged),
}

impl Conn {
    pub fn new() -> Conn {
        let mut c = Conn {
            phase: Phase::Preface,
            decoder: httlib_hpack::Decoder::with_dynamic_size(4096),
            decoded: Vec::new(),
            peer_initial_window: DEFAULT_WINDOW,
            peer_max_frame: MAX_FRAME_SIZE,
            send_window: DEFAULT_WINDOW,
            recv_window: DEFAULT_WINDOW,
            recv_unacked: 0,
            streams: HashMap::new(),
            send_queue: VecDeque::new(),
            last_stream: 0,
            closed: VecDeque::with_capacity(CLOSED_MEMORY),
            block: None,
            goaway_sent: false,
            peer_goaway: false,
            dead: false,
            control_frames: 0,
            req: Req::default(),
            out: Vec::with_capacity(16 * 1024),
            stats: ServerStats::default(),
        };
        // The server's SETTINGS (RFC 9113 §3.4): sent at once.
        let settings: [(u16, u32); 3] = [
            (
                setting::MAX_CONCURRENT_STREAMS,
                crate::modern::MAX_CONCURRENT_STREAMS,
            ),
            (setting::MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST_SIZE as u32),
            (setting::ENABLE_PUSH, 0),
        ];
        head(&mut c.out, 6 * settings.len(), frame::SETTINGS, 0, 0);
        for (id, v) in settings {
            c.out.extend_from_slice(&id.to_be_bytes());
            c.out.extend_from_slice(&v.to_be_bytes());
        }
        c
    }

    /// Whether the connection is over: a connection error was written, or
    /// GOAWAY went either way and no stream is left.
    pub fn finished(&self) -> bool {
        self.dead || ((self.goaway_sent || self.peer_goaway) && self.streams.is_empty())
    }

    /// Whether DATA is waiting that a window allows now.
    pub fn can_send(&self) -> bool {
        !self.dead && self.send_window > 0 && !self.send_queue.is_empty()
    }

    /// Streams open or half-closed: at most `MAX_CONCURRENT_STREAMS`
    /// (checked by the `h2_server` fuzz target).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Counters since the last call.
    pub fn take_stats(&mut self) -> ServerStats {
        std::mem::take(&mut self.stats)
    }

    /// Graceful shutdown (RFC 9113 §6.8): GOAWAY with the last stream id
    /// opened; streams opened up to it are still answered.
    pub fn goaway(&mut self) {
        if !self.goaway_sent && !self.dead {
            self.goaway_sent = true;
            self.write_goaway(code::NO_ERROR);
        }
    }

    fn write_goaway(&mut self, code: u32) {
        head(&mut self.out, 8, frame::GOAWAY, 0, 0);
        self.out.extend_from_slice(&self.last_stream.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// A connection error: GOAWAY with `e`'s code, then the end.
    fn fail(&mut self, e: ConnError) {
        if !self.dead {
            self.write_goaway(e.0);
            self.dead = true;
            self.send_queue.clear();
        }
    }

    fn rst(&mut self, stream: u32, code: u32) {
        head(&mut self.out, 4, frame::RST_STREAM, 0, stream);
        self.out.extend_from_slice(&code.to_be_bytes());
        self.close_stream(stream);
    }

    fn close_stream(&mut self, id: u32) {
        if self.streams.remove(&id).is_some() {
            if self.closed.len() == CLOSED_MEMORY {
                self.closed.pop_front();
            }
            self.closed.push_back(id);
        }
    }

    fn window_update(&mut self, stream: u32, n: u32) {
        head(&mut self.out, 4, frame::WINDOW_UPDATE, 0, stream);
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    /// Reads frames from `input`, answering requests from `site`; returns
    /// how many bytes were used (a partial frame stays for the next call).
    /// After a connection error, GOAWAY is in `out` and [`Conn::finished`].
    pub fn input(&mut self, input: &[u8], site: &Handler, bufs: &mut BridgeBufs) -> usize {
        let mut at = 0;
        if self.phase == Phase::Preface {
            if input.len() < PREFACE.len() {
                if !PREFACE.starts_with(input) {
                    self.fail(ConnError(code::PROTOCOL_ERROR));
                }
                return 0;
            }
            if &input[..PREFACE.len()] != PREFACE {
                self.fail(ConnError(code::PROTOCOL_ERROR));
                return 0;
            }
            at = PREFACE.len();
            self.phase = Phase::FirstSettings;
        }
        // Bounded by the input: every pass uses a whole frame or returns.
        while !self.dead {
            let rest = &input[at..];
            if rest.len() < 9 {
                break;
            }
            let len = ((rest[0] as usize) << 16) | ((rest[1] as usize) << 8) | rest[2] as usize;
            let (kind, flags) = (rest[3], rest[4]);
            let stream = be32(&rest[5..9]) & 0x7fff_ffff;
            if len > MAX_FRAME_SIZE {
                self.fail(ConnError(code::FRAME_SIZE_ERROR));
                break;
            }
            if rest.len() < 9 + len {
                break;
            }
            let payload = &rest[9..9 + len];
            at += 9 + len;
            if let Err(e) = self.frame(kind, flags, stream, payload, site, bufs) {
                self.fail(e);
            }
        }
        at
    }

    fn frame(
        &mut self,
        kind: u8,
        flags: u8,
        stream: u32,
        payload: &[u8],
        site: &Handler,
        bufs: &mut BridgeBufs,
    ) -> Result<(), ConnError> {
        let protocol = Err(ConnError(code::PROTOCOL_ERROR));
        if self.phase == Phase::FirstSettings {
            if kind != frame::SETTINGS || flags & flag::ACK != 0 {
                return protocol;
            }
            self.phase = Phase::Open;
        }
        if let Some(b) = &self.block {
            // Nothing may come between a HEADERS and its CONTINUATIONs.
            if kind != frame::CONTINUATION || stream != b.stream {
                return protocol;
            }
        }
        match kind {
            frame::DATA => self.data(flags, stream, payload, site, bufs),
            frame::HEADERS => self.headers(flags, stream, payload, site, bufs),
            frame::CONTINUATION => {
                if self.block.is_none() {
                    return protocol;
                }
                if payload.is_empty() && flags & flag::END_HEADERS == 0 {
                    self.control(1)?;
                }
                let b = self.block.as_mut().expect("checked");
                b.buf.extend_from_slice(payload);
                if b.buf.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError(code::ENHANCE_YOUR_CALM));
                }
                if flags & flag::END_HEADERS != 0 {
                    let b = self.block.take().expect("checked");
                    self.block_done(b, site, bufs)?;
                }
                Ok(())
            }
            frame::PRIORITY => {
                if stream == 0 {
                    return protocol;
                }
                // A stream error (§6.3, §5.3.1), but RST_STREAM must not be
                // sent on an idle stream (§6.4): there it is a connection
                // error, as §5.4 allows.
                if payload.len() != 5 {
                    if self.is_idle(stream) {
                        return Err(ConnError(code::FRAME_SIZE_ERROR));
                    }
                    self.rst(stream, code::FRAME_SIZE_ERROR);
                    return Ok(());
                }
                self.control(1)?;
                if be32(payload) & 0x7fff_ffff == stream {
                    if self.is_idle(stream) {
                        return protocol;
                    }
                    self.rst(stream, code::PROTOCOL_ERROR);
                }
                Ok(())
            }
            frame::RST_STREAM => {
                if stream == 0 {
                    return protocol;
                }
                if payload.len() != 4 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                if self.is_idle(stream) {
                    return protocol;
                }
                self.control(1)?;
                self.close_stream(stream);
                Ok(())
            }
            frame::SETTINGS => self.settings(flags, stream, payload),
            frame::PUSH_PROMISE => protocol,
            frame::PING => {
                if stream != 0 {
                    return protocol;
                }
                if payload.len() != 8 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                if flags & flag::ACK == 0 {
                    self.control(1)?;
                    head(&mut self.out, 8, frame::PING, flag::ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if stream != 0 {
                    return protocol;
                }
                if payload.len() < 8 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                self.peer_goaway = true;
                Ok(())
            }
            frame::WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                let n = (be32(payload) & 0x7fff_ffff) as i64;
                if stream == 0 {
                    if n == 0 {
                        return protocol;
                    }
                    self.send_window += n;
                    if self.send_window > MAX_WINDOW {
                        return Err(ConnError(code::FLOW_CONTROL_ERROR));
                    }
                    return Ok(());
                }
                // Any WINDOW_UPDATE on an idle stream is a connection
                // error (§5.1), before its increment is looked at.
                if self.is_idle(stream) {
                    return protocol;
                }
                if n == 0 {
                    self.rst(stream, code::PROTOCOL_ERROR);
                    return Ok(());
                }
                let Some(s) = self.streams.get_mut(&stream) else {
                    return Ok(());
                };
                s.send_window += n;
                if s.send_window > MAX_WINDOW {
                    self.rst(stream, code::FLOW_CONTROL_ERROR);
                } else if !s.queued && s.responding && s.sent < s.body.len() {
                    s.queued = true;
                    self.send_queue.push_back(stream);
                }
                Ok(())
            }
            // Unknown types are ignored (RFC 9113 §4.1).
            _ => Ok(()),
        }
    }

    /// A stream in the idle state (RFC 9113 §5.1): a client stream above
    /// every one opened so far, or any even-numbered one (the server opens
    /// none: no push).
    fn is_idle(&self, stream: u32) -> bool {
        stream % 2 == 0 || stream > self.last_stream
    }

    /// Counts control frames; a flood of them ends the connection.
    fn control(&mut self, n: u32) -> Result<(), ConnError> {
        self.control_frames += n;
        if self.control_frames > CONTROL_FLOOD {
            return Err(ConnError(code::ENHANCE_YOUR_CALM));
        }
        Ok(())
    }

    fn settings(&mut self, flags: u8, stream: u32, payload: &[u8]) -> Result<(), ConnError> {
        if stream != 0 {
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        if flags & flag::ACK != 0 {
            if !payload.is_empty() {
                return Err(ConnError(code::FRAME_SIZE_ERROR));
            }
            return Ok(());
        }
        if payload.len() % 6 != 0 {
            return Err(ConnError(code::FRAME_SIZE_ERROR));
        }
        self.control(1)?;
        for s in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let v = be32(&s[2..]);
            match id {
                setting::ENABLE_PUSH if v > 1 => return Err(ConnError(code::PROTOCOL_ERROR)),
                setting::INITIAL_WINDOW_SIZE => {
                    let v = v as i64;
                    if v > MAX_WINDOW {
                        return Err(ConnError(code::FLOW_CONTROL_ERROR));
                    }
                    let delta = v - self.peer_initial_window;
                    self.peer_initial_window = v;
                    for (&id, st) in self.streams.iter_mut() {
                        st.send_window += delta;
                        if st.send_window > MAX_WINDOW {
                            return Err(ConnError(code::FLOW_CONTROL_ERROR));
                        }
                        if delta > 0
                            && !st.queued
                            && st.responding
                            && st.sent < st.body.len()
                            && st.send_window > 0
                        {
                            st.queued = true;
                            self.send_queue.push_back(id);
                        }
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&v) {
                        return Err(ConnError(code::PROTOCOL_ERROR));
                    }
                    self.peer_max_frame = v as usize;
                }
                // This server's encoder uses no dynamic table, so a smaller
                // one asks nothing of it.
                setting::HEADER_TABLE_SIZE => {}
                _ => {}
            }
        }
        head(&mut self.out, 0, frame::SETTINGS, flag::ACK, 0);
        Ok(())
    }

    /// Strips padding (RFC 9113 §6.1): the data and the frame's length
    /// for flow control.
    fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], ConnError> {
        if flags & flag::PADDED == 0 {
            return Ok(payload);
        }
        let Some((&pad, rest)) = payload.split_first() else {
            return Err(ConnError(code::FRAME_SIZE_ERROR));
        };
        if pad as usize > rest.len() {
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        Ok(&rest[..rest.len() - pad as usize])
    }

    fn data(
        &mut self,
        flags: u8,
        stream: u32,
        payload: &[u8],
        site: &Handler,
        bufs: &mut BridgeBufs,
    ) -> Result<(), ConnError> {
        if stream == 0 {
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        let data = Self::unpad(flags, payload)?;
        let len = payload.len() as i64;
        // The connection's window counts every DATA frame, whatever its
        // stream's state (RFC 9113 §6.9).
        self.recv_window -= len;
        if self.recv_window < 0 {
            return Err(ConnError(code::FLOW_CONTROL_ERROR));
        }
        self.recv_unacked += len as u32;
        if self.recv_unacked as i64 >= DEFAULT_WINDOW / 2 {
            let n = std::mem::take(&mut self.recv_unacked);
            self.recv_window += n as i64;
            self.window_update(0, n);
        }
        if self.is_idle(stream) {
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        if payload.is_empty() && flags & flag::END_STREAM == 0 {
            self.control(1)?;
        }
        let Some(s) = self.streams.get_mut(&stream) else {
            self.rst_closed(stream);
            return Ok(());
        };
        let Some(req) = s.req.as_ref() else {
            // Half-closed (remote): the request ended already.
            self.rst(stream, code::STREAM_CLOSED);
            return Ok(());
        };
        s.recv_window -= len;
        if s.recv_window < 0 {
            self.rst(stream, code::FLOW_CONTROL_ERROR);
            return Ok(());
        }
        s.received += data.len() as u64;
        let cl = req.content_length;
        let end = flags & flag::END_STREAM != 0;
        if cl.is_some_and(|cl| s.received > cl || (end && s.received != cl)) {
            self.rst(stream, code::PROTOCOL_ERROR);
            return Ok(());
        }
        if end {
            let req = s.req.take().expect("checked");
            self.answer_stream_with(stream, &req, site, bufs);
        } else {
            s.recv_unacked += len as u32;
            if s.recv_unacked as i64 >= DEFAULT_WINDOW / 2 {
                let n = std::mem::take(&mut s.recv_unacked);
                s.recv_window += n as i64;
                self.window_update(stream, n);
            }
        }
        Ok(())
    }

    /// A frame for a stream that is closed: STREAM_CLOSED (RFC 9113 §5.1).
    fn rst_closed(&mut self, stream: u32) {
        head(&mut self.out, 4, frame::RST_STREAM, 0, stream);
        self.out
            .extend_from_slice(&code::STREAM_CLOSED.to_be_bytes());
    }

    fn headers(
        &mut self,
        flags: u8,
        stream: u32,
        payload: &[u8],
        site: &Handler,
        bufs: &mut BridgeBufs,
    ) -> Result<(), ConnError> {
        if stream == 0 || stream % 2 == 0 {
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        let mut fragment = Self::unpad(flags, payload)?;
        if flags & flag::PRIORITY != 0 {
            if fragment.len() < 5 {
                return Err(ConnError(code::FRAME_SIZE_ERROR));
            }
            if be32(fragment) & 0x7fff_ffff == stream {
                // Decoded anyway, for HPACK's state.
                self.decode_discard(fragment.get(5..).unwrap_or_default(), flags)?;
                self.rst(stream, code::PROTOCOL_ERROR);
                return Ok(());
            }
            fragment = &fragment[5..];
        }
        let end_stream = flags & flag::END_STREAM != 0;
        let kind = if stream > self.last_stream {
            self.last_stream = stream;
            if self.goaway_sent {
                BlockKind::Discard
            } else if self.peer_goaway {
                // The peer is going away: a stream it opens after its
                // GOAWAY is refused (never processed, safe to retry), the
                // same outcome as when the GOAWAY ended the connection
                // before this HEADERS was read.
                BlockKind::Refuse
            } else if self.streams.len() >= crate::modern::MAX_CONCURRENT_STREAMS as usize {
                BlockKind::Refuse
            } else {
                BlockKind::Request
            }
        } else {
            match self.streams.get(&stream) {
                Some(s) if s.req.is_some() => {
                    if !end_stream {
                        // Trailers must end the stream (RFC 9113 §8.1).
                        return Err(ConnError(code::PROTOCOL_ERROR));
                    }
                    BlockKind::Trailers
                }
                Some(_) => return Err(ConnError(code::STREAM_CLOSED)),
                None if self.closed.contains(&stream) => {
                    return Err(ConnError(code::STREAM_CLOSED))
                }
                // A new stream must have a higher id (RFC 9113 §5.1.1).
                None => return Err(ConnError(code::PROTOCOL_ERROR)),
            }
        };
        let b = Block {
            stream,
            end_stream,
            kind,
            buf: fragment.to_vec(),
        };
        if flags & flag::END_HEADERS != 0 {
            self.block_done(b, site, bufs)
        } else {
            self.block = Some(b);
            Ok(())
        }
    }

    fn decode_discard(&mut self, fragment: &[u8], flags: u8) -> Result<(), ConnError> {
        if flags & flag::END_HEADERS == 0 {
            // A header block that continues: too odd to follow.
            return Err(ConnError(code::PROTOCOL_ERROR));
        }
        self.decode(fragment.to_vec())
    }

    /// Decodes one whole header block into `decoded` (RFC 7541); a
    /// block HPACK cannot decode is a COMPRESSION_ERROR (RFC 9113 §4.3).
    fn decode(&mut self, mut block: Vec<u8>) -> Result<(), ConnError> {
        self.decoded.clear();
        if !block_shape_ok(&block) {
            return Err(ConnError(code::COMPRESSION_ERROR));
        }
        self.decoder
            .decode(&mut block, &mut self.decoded)
            .map(|_| ())
            .map_err(|_| ConnError(code::COMPRESSION_ERROR))
    }

    fn block_done(
        &mut self,
        b: Block,
        site: &Handler,
        bufs: &mut BridgeBufs,
    ) -> Result<(), ConnError> {
        let trailers = b.kind == BlockKind::Trailers;
        let mut req = std::mem::take(&mut self.req);
        req.clear();
        let id = b.stream;
        let kind = b.kind;
        let end_stream = b.end_stream;
        self.decode(b.buf)?;
        for (n, v, _) in &self.decoded {
            req.field(n, v, trailers);
        }
        let b = (kind, end_stream);
        match b.0 {
            BlockKind::Discard => {}
            BlockKind::Refuse => {
                head(&mut self.out, 4, frame::RST_STREAM, 0, id);
                self.out
                    .extend_from_slice(&code::REFUSED_STREAM.to_be_bytes());
                self.closed.push_back(id);
                if self.closed.len() > CLOSED_MEMORY {
                    self.closed.pop_front();
                }
            }
            BlockKind::Trailers => {
                if req.malformed {
                    self.rst(id, code::PROTOCOL_ERROR);
                } else if let Some(s) = self.streams.get_mut(&id) {
                    let r = s.req.take().expect("checked in headers");
                    if r.content_length.is_some_and(|cl| cl != s.received) {
                        self.rst(id, code::PROTOCOL_ERROR);
                    } else {
                        self.answer_stream_with(id, &r, site, bufs);
                    }
                }
            }
            BlockKind::Request => {
                self.streams.insert(
                    id,
                    Stream {
                        send_window: self.peer_initial_window,
                        recv_window: DEFAULT_WINDOW,
                        recv_unacked: 0,
                        req: None,
                        received: 0,
                        body: Bytes::new(),
                        sent: 0,
                        queued: false,
                        responding: false,
                    },
                );
                if req.malformed || !req.complete() {
                    self.rst(id, code::PROTOCOL_ERROR);
                } else if b.1 {
                    if req.content_length.is_some_and(|cl| cl != 0) {
                        self.rst(id, code::PROTOCOL_ERROR);
                    } else {
                        self.answer_stream_with(id, &req, site, bufs);
                    }
                } else if let Some(s) = self.streams.get_mut(&id) {
                    s.req = Some(Box::new(req.clone()));
                }
            }
        }
        self.req = req;
        Ok(())
    }

    fn answer_stream_with(&mut self, id: u32, req: &Req, site: &Handler, bufs: &mut BridgeBufs) {
        self.control_frames = 0;
        let reply = if req.too_large {
            Reply::Bridged(crate::modern::plain_answer(
                431,
                "request header fields too large\n",
            ))
        } else {
            answer(req, site, bufs)
        };
        let (status, body_len) = match &reply {
            Reply::Rendered { body, .. } => (200, body.len()),
            Reply::Bridged(b) => (b.status, b.body.len()),
        };
        self.stats.requests += 1;
        match status {
            200..=299 => self.stats.responses_2xx += 1,
            300..=399 => self.stats.responses_3xx += 1,
            400..=499 => self.stats.responses_4xx += 1,
            _ => self.stats.responses_5xx += 1,
        }
        self.stats.body_bytes += body_len as u64;
        // The field block, into `out` after a HEADERS frame header written
        // once its length is known.
        let start = self.out.len();
        self.out.extend_from_slice(&[0; 9]);
        let body = match reply {
            Reply::Rendered { block, body } => {
                self.out.extend_from_slice(block);
                crate::time::with_http_date(|d| hpack_field(&mut self.out, b"date", d));
                body
            }
            Reply::Bridged(b) => {
                hpack_status(&mut self.out, b.status);
                for (k, v) in &b.fields {
                    hpack_field(&mut self.out, k.as_str().as_bytes(), v.as_bytes());
                }
                b.body
            }
        };
        let end = if body.is_empty() { flag::END_STREAM } else { 0 };
        let block_len = self.out.len() - start - 9;
        if block_len <= self.peer_max_frame {
            let mut h = Vec::with_capacity(9);
            head(
                &mut h,
                block_len,
                frame::HEADERS,
                end | flag::END_HEADERS,
                id,
            );
            self.out[start..start + 9].copy_from_slice(&h);
        } else {
            // Split into HEADERS and CONTINUATIONs.
            let block = self.out.split_off(start + 9);
            self.out.truncate(start);
            let mut chunks = block.chunks(self.peer_max_frame).peekable();
            let mut first = true;
            while let Some(c) = chunks.next() {
                let last = chunks.peek().is_none();
                let f = if last { flag::END_HEADERS } else { 0 };
                if first {
                    head(&mut self.out, c.len(), frame::HEADERS, f | end, id);
                    first = false;
                } else {
                    head(&mut self.out, c.len(), frame::CONTINUATION, f, id);
                }
                self.out.extend_from_slice(c);
            }
        }
        if body.is_empty() {
            self.close_stream(id);
            return;
        }
        if let Some(s) = self.streams.get_mut(&id) {
            s.body = body;
            s.sent = 0;
            s.responding = true;
            s.queued = true;
            self.send_queue.push_back(id);
        }
    }

    /// Writes DATA frames as the windows allow, until `out` holds a turn's
    /// worth ([`OUT_TURN`]) or nothing can go.
    pub fn pump(&mut self) {
        // Bounded: every pass sends a frame or takes a stream off the queue.
        while self.send_window > 0 && self.out.len() < OUT_TURN && !self.dead {
            let Some(id) = self.send_queue.pop_front() else {
                break;
            };
            let Some(s) = self.streams.get_mut(&id) else {
                continue;
            };
            if s.send_window <= 0 {
                // Blocked on the stream's window: requeued by WINDOW_UPDATE.
                s.queued = false;
                continue;
            }
            let left = s.body.len() - s.sent;
            let n = left
                .min(self.peer_max_frame)
                .min(self.send_window as usize)
                .min(s.send_window as usize);
            let end = n == left;
            head(
                &mut self.out,
                n,
                frame::DATA,
                if end { flag::END_STREAM } else { 0 },
                id,
            );
            self.out.extend_from_slice(&s.body[s.sent..s.sent + n]);
            s.sent += n;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
            if end {
                self.close_stream(id);
            } else {
                self.send_queue.push_back(id);
            }
        }
    }
}

/// Answers one decoded request: the rendered 200 of a static file where
/// the request asks for nothing more, the HTTP/1 bridge otherwise.
fn answer<'a>(req: &Req, site: &'a Handler, bufs: &mut BridgeBufs) -> Reply<'a> {
    let method = req.str(req.method).unwrap_or("");
    let target = req.str(req.path).unwrap_or("/");
    let head_only = method == "HEAD";
    if (method == "GET" || head_only)
        && !req.fields().any(|(n, _)| crate::modern::bridged_name(n))
        && target.bytes().all(|b| b.is_ascii_graphic())
    {
        let named = |want: &'static [u8]| {
            req.fields()
                .filter(move |(n, _)| *n == want)
                .map(|(_, v)| v)
        };
        let scratch = bufs.scratch();
        if let Some(plain) =
            site.plain(target, named(b"accept"), named(b"accept-encoding"), scratch)
        {
            return Reply::Rendered {
                block: plain.hpack(),
                body: if head_only {
                    Bytes::new()
                } else {
                    plain.body.clone()
                },
            };
        }
    }
    let fields = req
        .fields()
        .filter_map(|(n, v)| Some((std::str::from_utf8(n).ok()?, v)));
    Reply::Bridged(crate::modern::bridge_with(
        bufs,
        site,
        method,
        target,
        req.str(req.authority),
        fields,
    ))
}

/// Reads what TLS has decrypted, as much as is there without waiting once
/// something arrived: `Ok(0)` at the end of the stream.
async fn read_turn<T: AsyncRead + Unpin>(io: &mut T, buf: &mut Vec<u8>) -> io::Result<usize> {
    std::future::poll_fn(|cx| {
        let mut got = 0;
        // Bounded: at most until the buffer's spare room is used.
        loop {
            if buf.capacity() - buf.len() < 4096 {
                buf.reserve(16 * 1024);
                if got > 0 && buf.len() >= 256 * 1024 {
                    break;
                }
            }
            let spare = buf.spare_capacity_mut();
            let mut rb = ReadBuf::uninit(spare);
            match Pin::new(&mut *io).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    if n == 0 {
                        if got == 0 {
                            return Poll::Ready(Ok(0));
                        }
                        break;
                    }
                    // SAFETY: `poll_read` initialised the first `n` spare bytes.
                    unsafe { buf.set_len(buf.len() + n) };
                    got += n;
                }
                Poll::Ready(Err(e)) => {
                    if got == 0 {
                        return Poll::Ready(Err(e));
                    }
                    break;
                }
                Poll::Pending => break,
            }
        }
        if got > 0 {
            Poll::Ready(Ok(got))
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Serves one HTTP/2 connection on `io` (TLS on TCP when serving) until
/// the peer or an error ends it, or `stop` asks for a graceful shutdown;
/// adds its counts to `count`. Returns after the peer's bytes are read to
/// the end or the connection failed.
pub async fn serve_conn<T: AsyncRead + AsyncWrite + Unpin>(
    io: &mut T,
    site: &Handler,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    mut count: impl FnMut(ServerStats),
) -> io::Result<()> {
    let mut conn = Conn::new();
    let mut bufs = BridgeBufs::default();
    let mut rbuf: Vec<u8> = Vec::with_capacity(32 * 1024);
    let mut stopping = *stop.borrow();
    if stopping {
        conn.goaway();
    }
    let result = async {
        // Bounded by the peer: every pass reads, or writes what was made.
        loop {
            conn.pump();
            if !conn.out.is_empty() {
                io.write_all(&conn.out).await?;
                io.flush().await?;
                conn.out.clear();
                if conn.out.capacity() > 1 << 20 {
                    conn.out = Vec::with_capacity(16 * 1024);
                }
                count(conn.take_stats());
                if conn.can_send() {
                    continue;
                }
            }
            if conn.finished() {
                return Ok(());
            }
            let n = tokio::select! {
                biased;
                _ = stop.changed(), if !stopping => {
                    stopping = true;
                    conn.goaway();
                    continue;
                }
                r = read_turn(io, &mut rbuf) => r?,
            };
            if n == 0 {
                return Ok(());
            }
            let used = conn.input(&rbuf, site, &mut bufs);
            rbuf.drain(..used);
            if rbuf.capacity() > 1 << 20 && rbuf.len() < 64 * 1024 {
                rbuf.shrink_to(64 * 1024);
            }
        }
    }
    .await;
    count(conn.take_stats());
    if result.is_ok() || conn.dead {
        let _ = io.shutdown().await;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::hpack_int;

    #[test]
    fn hpack_integers_follow_rfc_7541_c_1() {
        let mut out = Vec::new();
        hpack_int(&mut out, 0, 5, 10);
        assert_eq!(out, [10]);
        out.clear();
        hpack_int(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10]);
        out.clear();
        hpack_int(&mut out, 0, 8, 42);
        assert_eq!(out, [42]);
    }

    /// Fuzz find (`h2_server`): a header block whose last string or
    /// integer is cut made `httlib-hpack` index past its end (a panic);
    /// now the connection ends with COMPRESSION_ERROR.
    #[test]
    fn cut_header_blocks_are_compression_errors() {
        use std::sync::Arc;
        let site = Handler::from(Arc::new(pagewire_site::store::Site::from_files(vec![])));
        // GET https, then: a name-indexed literal without its value; an
        // indexed field whose integer continues past the end; a literal
        // name whose length says more than is there.
        let blocks: [&[u8]; 3] = [
            &[0x82, 0x87, 0x44],
            &[0x82, 0x87, 0xff],
            &[0x82, 0x87, 0x40, 0x05, b'a'],
        ];
        for block in blocks {
            let mut conn = Conn::new();
            let mut bufs = BridgeBufs::default();
            let mut input = PREFACE.to_vec();
            head(&mut input, 0, frame::SETTINGS, 0, 0);
            head(
                &mut input,
                block.len(),
                frame::HEADERS,
                flag::END_HEADERS | flag::END_STREAM,
                1,
            );
            input.extend_from_slice(block);
            assert_eq!(conn.input(&input, &site, &mut bufs), input.len());
            assert!(conn.finished(), "{block:?}");
            let goaway = &conn.out[conn.out.len() - 17..];
            assert_eq!(goaway[3], frame::GOAWAY, "{block:?}");
            assert_eq!(be32(&goaway[13..]), code::COMPRESSION_ERROR, "{block:?}");
        }
    }

    /// A frame read back: (type, flags, stream, payload).
    type Frame = (u8, u8, u32, Vec<u8>);

    /// The frames in `out`.
    fn frames(out: &[u8]) -> Vec<Frame> {
        let mut v = Vec::new();
        let mut at = 0;
        while at + 9 <= out.len() {
            let len =
                ((out[at] as usize) << 16) | ((out[at + 1] as usize) << 8) | out[at + 2] as usize;
            let stream = be32(&out[at + 5..at + 9]) & 0x7fff_ffff;
            v.push((
                out[at + 3],
                out[at + 4],
                stream,
                out[at + 9..at + 9 + len].to_vec(),
            ));
            at += 9 + len;
        }
        assert_eq!(at, out.len(), "whole frames");
        v
    }

    /// Runs preface + SETTINGS + `then` through a fresh connection.
    fn run(then: &[u8]) -> (Conn, Vec<Frame>) {
        use std::sync::Arc;
        let site = Handler::from(Arc::new(pagewire_site::store::Site::from_files(vec![])));
        let mut conn = Conn::new();
        let mut bufs = BridgeBufs::default();
        let mut input = PREFACE.to_vec();
        head(&mut input, 0, frame::SETTINGS, 0, 0);
        input.extend_from_slice(then);
        assert_eq!(conn.input(&input, &site, &mut bufs), input.len());
        conn.pump();
        let f = frames(&conn.out);
        (conn, f)
    }

    /// GET https://…/ on `stream`, ending the stream.
    fn get(input: &mut Vec<u8>, stream: u32) {
        let block = [0x82, 0x87, 0x84];
        head(
            input,
            block.len(),
            frame::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            stream,
        );
        input.extend_from_slice(&block);
    }

    fn goaway_code(f: &[Frame]) -> Option<u32> {
        f.iter()
            .find(|x| x.0 == frame::GOAWAY)
            .map(|x| be32(&x.3[4..8]))
    }

    /// RFC 9113 §6.4: RST_STREAM is never sent on an idle stream; frames
    /// that would be stream errors there are connection errors (§5.1,
    /// §5.4), and a PRIORITY of the right size on one is fine.
    #[test]
    fn idle_streams_get_connection_errors_never_rst_stream() {
        let mut wu0 = Vec::new();
        head(&mut wu0, 4, frame::WINDOW_UPDATE, 0, 3);
        wu0.extend_from_slice(&0u32.to_be_bytes());
        let mut wu_even = Vec::new();
        get(&mut wu_even, 1);
        head(&mut wu_even, 4, frame::WINDOW_UPDATE, 0, 2);
        wu_even.extend_from_slice(&1u32.to_be_bytes());
        let mut prio4 = Vec::new();
        head(&mut prio4, 4, frame::PRIORITY, 0, 5);
        prio4.extend_from_slice(&[0, 0, 0, 1]);
        let mut prio_self = Vec::new();
        head(&mut prio_self, 5, frame::PRIORITY, 0, 7);
        prio_self.extend_from_slice(&[0, 0, 0, 7, 16]);
        let mut rst_even = Vec::new();
        get(&mut rst_even, 1);
        head(&mut rst_even, 4, frame::RST_STREAM, 0, 2);
        rst_even.extend_from_slice(&8u32.to_be_bytes());
        let cases: [(&str, &[u8], u32); 5] = [
            ("WINDOW_UPDATE 0 on idle 3", &wu0, code::PROTOCOL_ERROR),
            ("WINDOW_UPDATE on even 2", &wu_even, code::PROTOCOL_ERROR),
            (
                "PRIORITY of 4 bytes on idle 5",
                &prio4,
                code::FRAME_SIZE_ERROR,
            ),
            (
                "PRIORITY on idle 7 depending on itself",
                &prio_self,
                code::PROTOCOL_ERROR,
            ),
            ("RST_STREAM on even 2", &rst_even, code::PROTOCOL_ERROR),
        ];
        for (what, input, want) in cases {
            let (conn, f) = run(input);
            assert!(conn.finished(), "{what}");
            assert_eq!(goaway_code(&f), Some(want), "{what}: {f:?}");
            assert!(!f.iter().any(|x| x.0 == frame::RST_STREAM), "{what}: {f:?}");
        }
        // A well-formed PRIORITY on an idle stream: no error at all.
        let mut prio = Vec::new();
        head(&mut prio, 5, frame::PRIORITY, 0, 9);
        prio.extend_from_slice(&[0, 0, 0, 0, 16]);
        get(&mut prio, 9);
        let (conn, f) = run(&prio);
        assert!(!conn.finished());
        assert_eq!(goaway_code(&f), None, "{f:?}");
        assert!(f.iter().any(|x| x.0 == frame::HEADERS && x.2 == 9), "{f:?}");
    }

    /// A stream the peer opens after its own GOAWAY is refused, whether the
    /// HEADERS comes in the same read (here) or the GOAWAY already ended
    /// the connection: never answered.
    #[test]
    fn streams_opened_after_the_peers_goaway_are_refused() {
        let mut input = Vec::new();
        get(&mut input, 1);
        head(&mut input, 8, frame::GOAWAY, 0, 0);
        input.extend_from_slice(&[0; 8]);
        get(&mut input, 3);
        let (conn, f) = run(&input);
        assert!(f.iter().any(|x| x.0 == frame::HEADERS && x.2 == 1), "{f:?}");
        assert!(
            !f.iter().any(|x| x.0 == frame::HEADERS && x.2 == 3),
            "{f:?}"
        );
        let rst: Vec<_> = f.iter().filter(|x| x.0 == frame::RST_STREAM).collect();
        assert_eq!(rst.len(), 1, "{f:?}");
        assert_eq!((rst[0].2, be32(&rst[0].3)), (3, code::REFUSED_STREAM));
        assert_eq!(goaway_code(&f), None);
        assert!(conn.finished(), "stream 1 answered, the peer going away");
    }

    #[test]
    fn encoded_fields_decode_back() {
        let mut out = Vec::new();
        hpack_status(&mut out, 200);
        hpack_status(&mut out, 301);
        hpack_field(&mut out, b"content-type", b"text/html");
        hpack_field(&mut out, b"x-long", &[b'a'; 300]);
        let mut got = Vec::new();
        httlib_hpack::Decoder::with_dynamic_size(4096)
            .decode(&mut out, &mut got)
            .unwrap();
        let want: Vec<(Vec<u8>, Vec<u8>, u8)> = vec![
            (b":status".to_vec(), b"200".to_vec(), 0),
            (b":status".to_vec(), b"301".to_vec(), 0),
            (b"content-type".to_vec(), b"text/html".to_vec(), 0),
            (b"x-long".to_vec(), vec![b'a'; 300], 0),
        ];
        assert_eq!(got, want);
    }
}
