//! HTTP/1.x message heads and body framing on `httparse`. No I/O, no clock.
//!
//! This is the codec under pagewire's server and robot. It follows the cut
//! of hyper's `proto/h1` (heads in one place, body decoding and encoding in
//! others) without the generics:
//!
//! | module      | what                                                              |
//! |-------------|-------------------------------------------------------------------|
//! | [`head`]    | `parse_request` / `parse_response`: incremental, zero-copy heads;  |
//! |             | RFC 9112 framing rules (§6.1, §6.3); limits; fault diagnosis      |
//! | [`parser`]  | [`RequestParser`], [`ResponseParser`]: the same, stateful,        |
//! |             | O(head) over many reads                                           |
//! | [`decode`]  | body [`Decoder`]: Content-Length, chunked (extensions, trailers),  |
//! |             | close-delimited; yields `Bytes` split off the read buffer         |
//! | [`encode`]  | head writers, chunked encoder, onto `Vec<u8>` or `BytesMut`        |
//! | [`status`]  | reason phrases                                                    |
//! | [`limits`]  | [`Limits`], each bound with its reason                            |
//! | [`error`]   | [`Error`] / [`ErrorKind`]: typed, carries the status to answer    |
//! | [`types`]   | [`Method`], [`Version`], [`BodyFraming`]                          |
//!
//! Incremental contract: a parser returns `Ok(None)` / `Decoded::NeedMore`
//! when the buffer does not yet hold a complete unit; it consumes nothing
//! then. A buffer may hold many pipelined messages; each call takes one.
//! Any `Err` means: answer `err.status()`, then close the connection.
//! Verdicts never depend on how the bytes were split across reads (same
//! heads, same bodies, same `ErrorKind`): tested at every split and fuzzed
//! (docs/fuzzing.md). Decisions and limits are listed in docs/h1.md.
//!
//! ```
//! use bytes::BytesMut;
//! use pagewire_h1::{parse_request, BodyFraming, Decoded, Decoder, Limits, Method};
//!
//! let limits = Limits::default();
//! let mut buf = BytesMut::from(&b"POST /f HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"[..]);
//! let head = parse_request(&mut buf, &limits).unwrap().unwrap();
//! assert_eq!(head.method(), Method::Post);
//! let mut body = Decoder::new(head.body_framing().unwrap(), &limits);
//! assert_eq!(body.decode(&mut buf).unwrap(), Decoded::Data("abc".into()));
//! assert_eq!(body.decode(&mut buf).unwrap(), Decoded::Done);
//! let next = parse_request(&mut buf, &limits).unwrap().unwrap();
//! assert_eq!(next.target(), "/");
//! assert_eq!(next.body_framing().unwrap(), BodyFraming::Empty);
//! ```

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod decode;
pub mod encode;
pub mod error;
pub mod head;
pub mod limits;
pub mod parser;
pub mod status;
pub mod types;

pub use decode::{Decoded, Decoder};
pub use encode::{
    end_head, write_chunk, write_chunk_end, write_chunk_header, write_header, write_header_u64,
    write_last_chunk, write_request_head, write_response_head, write_status_line,
    write_status_line_with_reason, ChunkedEncoder, Output,
};
pub use error::{Error, ErrorKind};
pub use head::{
    consume_response_into, parse_request, parse_request_into, parse_response, parse_response_into,
    response_framing, HeaderIter, HeaderValues, RequestHead, ResponseHead,
};
pub use limits::Limits;
pub use parser::{HeadScanner, RequestParser, ResponseParser};
pub use status::reason_phrase;
pub use types::{BodyFraming, Method, Version};
