//! Body decoding (RFC 9112 §6.3, §7.1): an explicit state machine that
//! consumes from the caller's `BytesMut` and yields body data as `Bytes`
//! split off that buffer (no copy). Bytes after the body (the next
//! pipelined message) are left in the buffer.
//!
//! Chunked framing is parsed strictly: every chunk line and chunk data
//! must end in CRLF (a bare LF or CR is an error, because lenient chunk
//! parsing is a classic request-smuggling vector), the chunk-size line with
//! its extensions is bounded, and the trailer section is bounded in bytes
//! and fields.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{Error, ErrorKind};
use crate::limits::Limits;
use crate::types::BodyFraming;

/// One step of decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Body bytes (never empty).
    Data(Bytes),
    /// The buffer holds no further body bytes yet: read more, call again.
    NeedMore,
    /// The body is complete (trailers, if any, are in `Decoder::trailers`).
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading `chunk-size [chunk-ext] CRLF`. `scanned` bytes were already
    /// searched for LF (so a slowly arriving line is scanned once).
    SizeLine { scanned: usize },
    /// Inside chunk data.
    Data { remaining: u64 },
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailer fields, then CRLF.
    Trailers { scanned: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length { remaining: u64 },
    Chunked(ChunkState),
    Close,
    Done,
}

/// Decodes one message body.
#[derive(Debug, Clone)]
pub struct Decoder {
    state: State,
    max_chunk_line_bytes: usize,
    max_trailer_bytes: usize,
    max_trailers: usize,
    trailers: Option<Bytes>,
}

impl Decoder {
    /// A decoder for a body framed as `framing`, with the chunk-line and
    /// trailer bounds of `limits`.
    pub fn new(framing: BodyFraming, limits: &Limits) -> Decoder {
        let state = match framing {
            BodyFraming::Empty | BodyFraming::Length(0) => State::Done,
            BodyFraming::Length(n) => State::Length { remaining: n },
            BodyFraming::Chunked => State::Chunked(ChunkState::SizeLine { scanned: 0 }),
            BodyFraming::CloseDelimited => State::Close,
        };
        Decoder {
            state,
            max_chunk_line_bytes: limits.max_chunk_line_bytes,
            max_trailer_bytes: limits.max_trailer_bytes,
            max_trailers: limits.max_trailers.min(crate::limits::HEADER_ARRAY_CAP),
            trailers: None,
        }
    }

    /// Whether the body is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// For a Content-Length body: bytes still expected.
    pub fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length { remaining } => Some(remaining),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// The raw trailer section of a chunked body (field lines and the final
    /// CRLF, validated by httparse), once `Done`; `None` if there was none.
    pub fn trailers(&self) -> Option<&Bytes> {
        self.trailers.as_ref()
    }

    /// Every trailer field as `(name, value)`.
    pub fn trailer_fields(&self) -> Vec<(Bytes, Bytes)> {
        let Some(raw) = &self.trailers else {
            return Vec::new();
        };
        let mut slots = vec![httparse::EMPTY_HEADER; self.max_trailers];
        match httparse::parse_headers(raw, &mut slots) {
            Ok(httparse::Status::Complete((_, fields))) => fields
                .iter()
                .map(|h| {
                    (
                        raw.slice_ref(h.name.as_bytes()),
                        slice_ref_or_empty(raw, h.value),
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Consumes body bytes from the front of `buf`. Call repeatedly until
    /// `NeedMore` (read more) or `Done`.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, Error> {
        // Bounded: each iteration either returns or consumes a complete
        // chunk line / chunk terminator from `buf`.
        loop {
            match self.state {
                State::Done => return Ok(Decoded::Done),
                State::Length { remaining } => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let take = take_len(remaining, buf.len());
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        State::Done
                    } else {
                        State::Length { remaining: left }
                    };
                    return Ok(Decoded::Data(buf.split_to(take).freeze()));
                }
                State::Close => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    return Ok(Decoded::Data(buf.split().freeze()));
                }
                State::Chunked(cs) => {
                    if let Some(out) = self.step_chunked(cs, buf)? {
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// Like `decode`, after the peer closed its side: buffered bytes are
    /// still decoded; then a close-delimited body is `Done` and any other
    /// unfinished body is `IncompleteBody`.
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Decoded, Error> {
        match self.decode(buf)? {
            Decoded::NeedMore => match self.state {
                State::Close | State::Done => {
                    self.state = State::Done;
                    Ok(Decoded::Done)
                }
                _ => Err(ErrorKind::IncompleteBody.into()),
            },
            other => Ok(other),
        }
    }

    /// One chunked step: `Some(result)` to return, `None` to loop.
    fn step_chunked(
        &mut self,
        cs: ChunkState,
        buf: &mut BytesMut,
    ) -> Result<Option<Decoded>, Error> {
        match cs {
            ChunkState::SizeLine { scanned } => {
                // Search at most the line limit plus CRLF.
                let limit = self.max_chunk_line_bytes.saturating_add(2);
                let end = buf.len().min(limit);
                match memchr::memchr(b'\n', &buf[scanned.min(end)..end]) {
                    None => {
                        if buf.len() >= limit {
                            return Err(ErrorKind::ChunkLineTooLong.into());
                        }
                        self.state = State::Chunked(ChunkState::SizeLine { scanned: end });
                        Ok(Some(Decoded::NeedMore))
                    }
                    Some(i) => {
                        let lf = scanned.min(end) + i;
                        let line = match buf[..lf].strip_suffix(b"\r") {
                            Some(line) => line,
                            None => return Err(ErrorKind::InvalidChunkTerminator.into()),
                        };
                        if line.len() > self.max_chunk_line_bytes {
                            return Err(ErrorKind::ChunkLineTooLong.into());
                        }
                        let size = parse_chunk_line(line)?;
                        buf.advance(lf + 1);
                        self.state = State::Chunked(if size == 0 {
                            ChunkState::Trailers { scanned: 0 }
                        } else {
                            ChunkState::Data { remaining: size }
                        });
                        Ok(None)
                    }
                }
            }
            ChunkState::Data { remaining } => {
                if buf.is_empty() {
                    return Ok(Some(Decoded::NeedMore));
                }
                let take = take_len(remaining, buf.len());
                let left = remaining - take as u64;
                self.state = State::Chunked(if left == 0 {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data { remaining: left }
                });
                Ok(Some(Decoded::Data(buf.split_to(take).freeze())))
            }
            ChunkState::DataEnd => match buf.len() {
                0 => Ok(Some(Decoded::NeedMore)),
                1 if buf[0] == b'\r' => Ok(Some(Decoded::NeedMore)),
                _ if buf.starts_with(b"\r\n") => {
                    buf.advance(2);
                    self.state = State::Chunked(ChunkState::SizeLine { scanned: 0 });
                    Ok(None)
                }
                _ => Err(ErrorKind::InvalidChunkTerminator.into()),
            },
            ChunkState::Trailers { scanned } => {
                // No trailers: just the final CRLF.
                if buf.starts_with(b"\r\n") {
                    buf.advance(2);
                    self.state = State::Done;
                    return Ok(Some(Decoded::Done));
                }
                if buf.is_empty() || &buf[..] == b"\r" {
                    return Ok(Some(Decoded::NeedMore));
                }
                // The section is buffered whole, so it is bounded.
                let limit = self.max_trailer_bytes.saturating_add(4);
                let end = buf.len().min(limit);
                // Resume 3 bytes back so a CRLFCRLF split across reads is seen.
                let from = scanned.saturating_sub(3).min(end);
                let found = memchr::memmem::find(&buf[from..end], b"\r\n\r\n");
                // Every LF in the trailer section (not beyond its end: the
                // next message follows) must follow a CR (strict CRLF).
                let section_end = found.map_or(end, |i| from + i + 4);
                for lf in memchr::memchr_iter(b'\n', &buf[from..section_end]) {
                    let p = from + lf;
                    if p == 0 || buf[p - 1] != b'\r' {
                        return Err(ErrorKind::InvalidTrailer.into());
                    }
                }
                match found {
                    None => {
                        if buf.len() >= limit {
                            return Err(ErrorKind::TrailersTooLarge.into());
                        }
                        self.state = State::Chunked(ChunkState::Trailers { scanned: end });
                        Ok(Some(Decoded::NeedMore))
                    }
                    Some(i) => {
                        let len = from + i + 4;
                        self.validate_trailers(&buf[..len])?;
                        self.trailers = Some(buf.split_to(len).freeze());
                        self.state = State::Done;
                        Ok(Some(Decoded::Done))
                    }
                }
            }
        }
    }

    fn validate_trailers(&self, section: &[u8]) -> Result<(), Error> {
        if section.len() > self.max_trailer_bytes.saturating_add(2) {
            return Err(ErrorKind::TrailersTooLarge.into());
        }
        // Bounded by max_trailers (<= 256): the slot array is the bound.
        let mut slots = [httparse::EMPTY_HEADER; crate::limits::HEADER_ARRAY_CAP];
        match httparse::parse_headers(section, &mut slots[..self.max_trailers]) {
            Ok(httparse::Status::Complete((n, _))) if n == section.len() => Ok(()),
            Err(httparse::Error::TooManyHeaders) => Err(ErrorKind::TooManyTrailers.into()),
            _ => Err(ErrorKind::InvalidTrailer.into()),
        }
    }
}

fn take_len(remaining: u64, available: usize) -> usize {
    usize::try_from(remaining).map_or(available, |r| r.min(available))
}

fn slice_ref_or_empty(raw: &Bytes, part: &[u8]) -> Bytes {
    if part.is_empty() {
        Bytes::new()
    } else {
        raw.slice_ref(part)
    }
}

/// `chunk-size [ chunk-ext ]` (RFC 9112 §7.1.1), without the CRLF.
/// chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ): the extension
/// text is checked to contain only visible characters, SP, HTAB and
/// obs-text; its meaning is ignored (RFC 9112 §7.1.1: MUST ignore
/// unrecognized extensions).
pub(crate) fn parse_chunk_line(line: &[u8]) -> Result<u64, Error> {
    let mut size: u64 = 0;
    let mut digits = 0usize;
    for &b in line {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => break,
        };
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(u64::from(d)))
            .ok_or(Error::new(ErrorKind::ChunkSizeOverflow))?;
        digits += 1;
    }
    if digits == 0 {
        return Err(ErrorKind::InvalidChunkSize.into());
    }
    let mut rest = &line[digits..];
    while let [b' ' | b'\t', r @ ..] = rest {
        rest = r;
    }
    match rest.first() {
        None => Ok(size),
        Some(b';') => {
            if rest.contains(&b'\r') {
                Err(ErrorKind::BareCr.into())
            } else if rest.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
                Err(ErrorKind::InvalidChunkExtension.into())
            } else {
                Ok(size)
            }
        }
        Some(_) => Err(ErrorKind::InvalidChunkSize.into()),
    }
}
