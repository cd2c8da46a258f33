//! Writers: request and response heads, chunked bodies.
//!
//! Writers append to any `Output` (`Vec<u8>` or `BytesMut`), so the server
//! can flatten many responses into one buffer and flush it once (paper 001,
//! "Nagle Interaction": one buffer, flushed when full or when no request is
//! left, not once per response). Everything written is validated first: a
//! CR or LF in a value would let a caller's data split the message
//! (RFC 9112 §11.1); on error nothing is left appended.

use bytes::BytesMut;

use crate::error::{Error, ErrorKind};
use crate::head::is_tchar;
use crate::status::reason_phrase;
use crate::types::Version;

/// A growable byte sink the writers append to.
pub trait Output {
    /// Appends bytes.
    fn put(&mut self, bytes: &[u8]);
    /// Current length (used to undo a failed write).
    fn len(&self) -> usize;
    /// Whether nothing has been written.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Shortens to `len` (used to undo a failed write).
    fn truncate(&mut self, len: usize);
}

impl Output for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len);
    }
}

impl Output for BytesMut {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn len(&self) -> usize {
        BytesMut::len(self)
    }
    fn truncate(&mut self, len: usize) {
        BytesMut::truncate(self, len);
    }
}

fn invalid() -> Error {
    ErrorKind::InvalidFieldToWrite.into()
}

fn valid_token(t: &[u8]) -> bool {
    !t.is_empty() && t.iter().all(|&b| is_tchar(b))
}

/// field-value bytes: VCHAR, obs-text, SP, HTAB; no CR, LF, NUL, other
/// controls (RFC 9110 §5.5).
fn valid_value(v: &[u8]) -> bool {
    v.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// request-target bytes: visible ASCII and obs-text, no SP or controls.
fn valid_target(t: &[u8]) -> bool {
    !t.is_empty() && t.iter().all(|&b| b > 0x20 && b != 0x7f)
}

/// Appends `name: value\r\n` after validating both.
pub fn write_header<O: Output + ?Sized>(
    out: &mut O,
    name: &str,
    value: &[u8],
) -> Result<(), Error> {
    if !valid_token(name.as_bytes()) || !valid_value(value) {
        return Err(invalid());
    }
    out.put(name.as_bytes());
    out.put(b": ");
    out.put(value);
    out.put(b"\r\n");
    Ok(())
}

/// Appends `name: <decimal>\r\n` (e.g. Content-Length) without allocating.
pub fn write_header_u64<O: Output + ?Sized>(
    out: &mut O,
    name: &str,
    value: u64,
) -> Result<(), Error> {
    let mut digits = [0u8; 20];
    write_header(out, name, format_u64(value, &mut digits))
}

/// Appends the blank line ending a head.
pub fn end_head<O: Output + ?Sized>(out: &mut O) {
    out.put(b"\r\n");
}

/// Appends `HTTP/1.1 200 OK\r\n` (the registered reason phrase, or none for
/// unregistered codes). `status` must be 100..=999.
pub fn write_status_line<O: Output + ?Sized>(
    out: &mut O,
    version: Version,
    status: u16,
) -> Result<(), Error> {
    write_status_line_with_reason(out, version, status, reason_phrase(status))
}

/// Appends a status line with a custom reason phrase (RFC 9112 §4:
/// reason-phrase = 1*( HTAB / SP / VCHAR / obs-text )).
pub fn write_status_line_with_reason<O: Output + ?Sized>(
    out: &mut O,
    version: Version,
    status: u16,
    reason: &str,
) -> Result<(), Error> {
    if !(100..=999).contains(&status) || !valid_value(reason.as_bytes()) {
        return Err(invalid());
    }
    let code = [
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
    ];
    out.put(version.as_str().as_bytes());
    out.put(b" ");
    out.put(&code);
    out.put(b" ");
    out.put(reason.as_bytes());
    out.put(b"\r\n");
    Ok(())
}

/// Appends a whole response head: status line, fields, blank line.
/// On error nothing is appended.
pub fn write_response_head<O, I, K, V>(
    out: &mut O,
    version: Version,
    status: u16,
    headers: I,
) -> Result<(), Error>
where
    O: Output + ?Sized,
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<[u8]>,
{
    let mark = out.len();
    let result = (|| {
        write_status_line(out, version, status)?;
        for (k, v) in headers {
            write_header(out, k.as_ref(), v.as_ref())?;
        }
        end_head(out);
        Ok(())
    })();
    if result.is_err() {
        out.truncate(mark);
    }
    result
}

/// Appends a whole request head: `METHOD target VERSION`, fields, blank
/// line. `method` must be a token, `target` non-empty without SP/controls.
/// On error nothing is appended.
pub fn write_request_head<O, I, K, V>(
    out: &mut O,
    method: &str,
    target: &str,
    version: Version,
    headers: I,
) -> Result<(), Error>
where
    O: Output + ?Sized,
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<[u8]>,
{
    if !valid_token(method.as_bytes()) || !valid_target(target.as_bytes()) {
        return Err(invalid());
    }
    let mark = out.len();
    out.put(method.as_bytes());
    out.put(b" ");
    out.put(target.as_bytes());
    out.put(b" ");
    out.put(version.as_str().as_bytes());
    out.put(b"\r\n");
    for (k, v) in headers {
        if let Err(e) = write_header(out, k.as_ref(), v.as_ref()) {
            out.truncate(mark);
            return Err(e);
        }
    }
    end_head(out);
    Ok(())
}

/// Formats `n` in decimal into `buf`, returning the digits.
pub(crate) fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

// ---------------------------------------------------------------------------
// Chunked transfer coding (RFC 9112 §7.1)

/// Appends a chunk-size line `<hex>\r\n` for a chunk of `len` bytes; the
/// caller then appends (or writes separately, zero-copy) the data and
/// `write_chunk_end`. `len` must not be 0 (that is the last chunk).
pub fn write_chunk_header<O: Output + ?Sized>(out: &mut O, len: u64) {
    debug_assert!(len > 0, "a zero-size chunk ends the body");
    let mut hex = [0u8; 16];
    let mut i = hex.len();
    let mut n = len;
    loop {
        i -= 1;
        hex[i] = b"0123456789abcdef"[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.put(&hex[i..]);
    out.put(b"\r\n");
}

/// Appends the CRLF that follows chunk data.
pub fn write_chunk_end<O: Output + ?Sized>(out: &mut O) {
    out.put(b"\r\n");
}

/// Appends one chunk holding `data`. Empty data writes nothing (an empty
/// chunk would end the body).
pub fn write_chunk<O: Output + ?Sized>(out: &mut O, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    write_chunk_header(out, data.len() as u64);
    out.put(data);
    write_chunk_end(out);
}

/// Appends the last chunk `0\r\n`, the trailer fields, and the final CRLF.
/// On error nothing is appended.
pub fn write_last_chunk<O, I, K, V>(out: &mut O, trailers: I) -> Result<(), Error>
where
    O: Output + ?Sized,
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<[u8]>,
{
    let mark = out.len();
    out.put(b"0\r\n");
    for (k, v) in trailers {
        if let Err(e) = write_header(out, k.as_ref(), v.as_ref()) {
            out.truncate(mark);
            return Err(e);
        }
    }
    out.put(b"\r\n");
    Ok(())
}

/// A chunked body encoder that remembers whether the body was finished, so
/// that no data can follow the last chunk.
#[derive(Debug, Default, Clone)]
pub struct ChunkedEncoder {
    finished: bool,
}

impl ChunkedEncoder {
    /// A new, unfinished encoder.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends one chunk (nothing for empty data).
    pub fn chunk<O: Output + ?Sized>(&mut self, out: &mut O, data: &[u8]) -> Result<(), Error> {
        if self.finished {
            return Err(invalid());
        }
        write_chunk(out, data);
        Ok(())
    }
    /// Appends the last chunk with `trailers`.
    pub fn finish<O, I, K, V>(&mut self, out: &mut O, trailers: I) -> Result<(), Error>
    where
        O: Output + ?Sized,
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        if self.finished {
            return Err(invalid());
        }
        write_last_chunk(out, trailers)?;
        self.finished = true;
        Ok(())
    }
    /// Whether `finish` was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}
