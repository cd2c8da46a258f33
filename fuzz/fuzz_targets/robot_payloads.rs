//! The robot's payload paths, driven as `pagewire-client` drives them: a
//! response stream (heads, interim 1xx heads, Content-Length / chunked /
//! close-delimited bodies) whose final responses are then read as the
//! robot reads them by type: a `multipart/mixed` body is a GETALL answer
//! (`getall::boundary` + `getall::split`), an
//! `application/vnd.pagewire.objpack` body an object package (the streaming
//! `pagewire_objpack::Reader`, fed each body chunk as it is decoded, as the
//! `objpack` strategy unpacks while bytes arrive).
//!
//! Oracle beyond "no panic": the outcome (every response's status, body,
//! its GETALL parts or refusal, its package files or refusal, and the
//! stream's end) is identical whether the stream is fed whole or in reads of
//! 1-16 bytes (the first input byte chooses); GETALL never yields more than
//! `MAX_PARTS` parts and never more part bytes than the body held; package
//! files never exceed their declared sizes; a package reader that accepted
//! the whole body has taken every event (`finish` is `Ok` only then).
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use pagewire_client::getall;
use pagewire_h1::{parse_response, Decoded, Decoder, ErrorKind, Limits, Method};
use pagewire_objpack::{Event, Reader, Step};

const MAX_INTERIM: usize = 64;

fn limits() -> Limits {
    Limits {
        max_request_line_bytes: 256,
        max_header_line_bytes: 256,
        max_headers: 16,
        max_head_bytes: 1024,
        max_chunk_line_bytes: 64,
        max_trailer_bytes: 128,
        max_trailers: 4,
        require_host: false,
    }
}

fn pack_limits() -> pagewire_objpack::Limits {
    pagewire_objpack::Limits {
        max_files: 64,
        max_name_bytes: 64,
        max_info_bytes: 4096,
        max_file_bytes: 1 << 16,
        max_total_bytes: 1 << 18,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Payload {
    None,
    /// GETALL parts: (status, fields, body), or the refusal.
    Parts(Result<Vec<(u16, Vec<(String, String)>, Vec<u8>)>, String>),
    /// Package files (name, bytes) and the reader's verdict.
    Package(Vec<(String, Vec<u8>)>, Result<(), pagewire_objpack::Error>),
}

#[derive(Debug, PartialEq, Eq)]
struct Resp {
    status: u16,
    body: Vec<u8>,
    payload: Payload,
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    Clean,
    PartialHead,
    TruncatedBody,
    Codec(ErrorKind),
    TooManyInterim,
}

enum Kind {
    Plain,
    Multipart(String),
    Package {
        reader: Reader,
        files: Vec<(String, Vec<u8>)>,
        failed: bool,
    },
}

struct Body {
    status: u16,
    body: Vec<u8>,
    dec: Decoder,
    kind: Kind,
}

impl Body {
    fn data(&mut self, d: &[u8]) {
        assert!(!d.is_empty());
        self.body.extend_from_slice(d);
        if let Kind::Package {
            reader,
            files,
            failed: failed @ false,
        } = &mut self.kind
        {
            let mut rest = d;
            // Bounded: each step consumes bytes or yields one event.
            loop {
                match reader.advance(rest) {
                    Ok(Step {
                        event: None,
                        consumed,
                    }) => {
                        assert_eq!(consumed, rest.len());
                        break;
                    }
                    Ok(Step {
                        consumed,
                        event: Some(e),
                    }) => {
                        rest = &rest[consumed..];
                        match e {
                            Event::FileStart { index } => {
                                assert_eq!(index, files.len());
                                files.push((reader.entries()[index].name.clone(), Vec::new()));
                            }
                            Event::Data { index, bytes } => {
                                let f = &mut files[index].1;
                                f.extend_from_slice(bytes);
                                assert!(f.len() as u64 <= reader.entries()[index].size);
                            }
                            Event::Table | Event::FileEnd { .. } | Event::End => {}
                        }
                    }
                    Err(_) => {
                        *failed = true;
                        break;
                    }
                }
            }
        }
    }

    fn done(self) -> Resp {
        let payload = match self.kind {
            Kind::Plain => Payload::None,
            Kind::Multipart(b) => {
                let body = Bytes::from(self.body.clone());
                Payload::Parts(getall::split(&b, &body).map(|parts| {
                    assert!(parts.len() <= getall::MAX_PARTS);
                    let total: usize = parts.iter().map(|p| p.body.len()).sum();
                    assert!(total <= body.len());
                    parts
                        .into_iter()
                        .map(|p| (p.status(), p.headers.clone(), p.body.to_vec()))
                        .collect()
                }))
            }
            Kind::Package { reader, files, .. } => Payload::Package(files, reader.finish()),
        };
        Resp {
            status: self.status,
            body: self.body,
            payload,
        }
    }
}

fn run(input: &[u8], piece: usize) -> (Vec<Resp>, End) {
    let limits = limits();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut current: Option<Body> = None;
    let mut interim = 0usize;
    for chunk in input.chunks(piece.max(1)) {
        buf.extend_from_slice(chunk);
        loop {
            if let Some(body) = &mut current {
                match body.dec.decode(&mut buf) {
                    Ok(Decoded::Data(d)) => body.data(&d),
                    Ok(Decoded::NeedMore) => break,
                    Ok(Decoded::Done) => out.push(current.take().unwrap().done()),
                    Err(e) => return (out, End::Codec(e.kind())),
                }
                continue;
            }
            if buf.is_empty() {
                break;
            }
            let before = buf.len();
            match parse_response(&mut buf, &limits, &Method::Get) {
                Ok(None) => {
                    assert_eq!(buf.len(), before);
                    break;
                }
                Ok(Some(head)) => {
                    let status = head.status();
                    if (100..200).contains(&status) && status != 101 {
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return (out, End::TooManyInterim);
                        }
                        continue;
                    }
                    interim = 0;
                    let ctype = head
                        .header("content-type")
                        .and_then(|v| std::str::from_utf8(v).ok())
                        .unwrap_or("")
                        .to_string();
                    let kind = if let Some(b) = getall::boundary(&ctype) {
                        Kind::Multipart(b.to_string())
                    } else if ctype
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .eq_ignore_ascii_case(pagewire_objpack::MEDIA_TYPE)
                    {
                        Kind::Package {
                            reader: Reader::new(pack_limits()),
                            files: Vec::new(),
                            failed: false,
                        }
                    } else {
                        Kind::Plain
                    };
                    current = Some(Body {
                        status,
                        body: Vec::new(),
                        dec: Decoder::new(head.body_framing(), &limits),
                        kind,
                    });
                }
                Err(e) => return (out, End::Codec(e.kind())),
            }
        }
    }
    while let Some(body) = &mut current {
        match body.dec.decode_eof(&mut buf) {
            Ok(Decoded::Data(d)) => body.data(&d),
            Ok(Decoded::Done) => out.push(current.take().unwrap().done()),
            Ok(Decoded::NeedMore) | Err(_) => return (out, End::TruncatedBody),
        }
    }
    if buf.is_empty() {
        (out, End::Clean)
    } else {
        (out, End::PartialHead)
    }
}

/// A package error's byte counts may depend on the read size
/// (`TrailingData` counts what was left of the current read): compare kinds.
fn normalise(mut r: (Vec<Resp>, End)) -> (Vec<Resp>, End) {
    for resp in &mut r.0 {
        if let Payload::Package(_, Err(e @ pagewire_objpack::Error::TrailingData(_))) =
            &mut resp.payload
        {
            *e = pagewire_objpack::Error::TrailingData(0);
        }
    }
    r
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = normalise(run(input, usize::MAX));
    let pieces = normalise(run(input, usize::from(first % 16) + 1));
    assert_eq!(
        whole,
        pieces,
        "read size {} changed the outcome",
        first % 16 + 1
    );
});
