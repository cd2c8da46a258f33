//! The robot's response path, driven as `pagewire-client`'s `conn.rs` does:
//! response heads (`parse_response`, interim 1xx heads skipped), bodies
//! (`Decoder`: Content-Length, chunked, close-delimited, with
//! `decode_eof` at the end of the stream) and, for a body with
//! `Content-Encoding: deflate`, the client's `Inflater` under a small
//! inflated-size limit.
//!
//! Oracle beyond "no panic": the outcome (every response's status, fields,
//! body and inflated body or inflate verdict, and the final codec error) is
//! the same whether the stream is fed whole, split in two at a point the
//! first byte chooses, or in 1-8 byte reads; `Ok(None)` consumes nothing;
//! a head's raw length is what was consumed; `Data` is never empty; a
//! successful inflation never exceeds the limit (and is the same
//! bytes however the body was read); every codec error maps
//! to a status a server could have meant (the client only reports it).
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use pagewire_client::inflate::{InflateError, Inflater};
use pagewire_h1::{parse_response, Decoded, Decoder, ErrorKind, Limits, Method};

/// The inflated-size limit: small, so bombs in the corpus reach it.
const MAX_INFLATED: u64 = 64 * 1024;
/// Interim heads tolerated per response before the run stops (the client
/// bounds them by its per-object deadline; here a count keeps runs short).
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

/// What the inflater made of a body: the inflated bytes, or a refusal.
///
/// The refusal's kind is not compared: a stream with two faults (a bomb
/// whose data turns bad further on) is refused as `TooLarge` when read in
/// small pieces and as `Bad` when whole, since the decompressor reports bad
/// data before flushing output it holds. The first run of this target found
/// that (`regress_inflate_bomb_then_bad`); either way the object fails.
#[derive(Debug, PartialEq, Eq)]
enum Inflated {
    Ok(Vec<u8>),
    Refused,
}

#[derive(Debug, PartialEq, Eq)]
struct Resp {
    status: u16,
    interim: usize,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    inflated: Option<Inflated>,
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Stream ended cleanly between responses.
    Clean,
    /// Stream ended inside a head.
    PartialHead,
    /// `decode_eof` refused the body (truncated length or chunked body).
    TruncatedBody,
    /// The codec refused a head or a body.
    Codec(ErrorKind),
    /// Too many interim heads.
    TooManyInterim,
}

struct Body {
    resp: Resp,
    dec: Decoder,
    inflater: Option<(Inflater, Vec<u8>, Option<Inflated>)>,
}

fn kind(e: &InflateError) -> Inflated {
    match e {
        InflateError::Bad(_)
        | InflateError::TooLarge(_)
        | InflateError::TrailingData
        | InflateError::Empty
        | InflateError::Truncated => Inflated::Refused,
    }
}

impl Body {
    fn data(&mut self, d: &[u8]) {
        assert!(!d.is_empty(), "Decoded::Data was empty");
        self.resp.body.extend_from_slice(d);
        if let Some((inf, out, verdict @ None)) = &mut self.inflater {
            if let Err(e) = inf.feed(d, out) {
                *verdict = Some(kind(&e));
            }
            assert!(out.len() as u64 <= MAX_INFLATED, "inflated past the limit");
        }
    }

    fn done(mut self) -> Resp {
        if let Some((mut inf, mut out, verdict)) = self.inflater.take() {
            let v = match verdict {
                Some(v) => v,
                None => match inf.finish(&mut out) {
                    Ok(()) => {
                        assert!(out.len() as u64 <= MAX_INFLATED, "inflated past the limit");
                        Inflated::Ok(out)
                    }
                    Err(e) => kind(&e),
                },
            };
            self.resp.inflated = Some(v);
        }
        self.resp
    }
}

fn run(pieces: &[&[u8]], method: Method) -> (Vec<Resp>, End) {
    let limits = limits();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut current: Option<Body> = None;
    let mut interim = 0usize;
    for piece in pieces {
        buf.extend_from_slice(piece);
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
            match parse_response(&mut buf, &limits, &method) {
                Ok(None) => {
                    assert_eq!(buf.len(), before, "Ok(None) consumed input");
                    break;
                }
                Ok(Some(head)) => {
                    assert_eq!(before - buf.len(), head.raw().len());
                    let status = head.status();
                    assert!((100..=999).contains(&status));
                    if (100..200).contains(&status) && status != 101 {
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return (out, End::TooManyInterim);
                        }
                        continue;
                    }
                    let _ = head.wants_keep_alive();
                    let deflate = head
                        .header("content-encoding")
                        .is_some_and(|v| v.eq_ignore_ascii_case(b"deflate"));
                    let resp = Resp {
                        status,
                        interim: std::mem::take(&mut interim),
                        headers: head.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
                        body: Vec::new(),
                        inflated: None,
                    };
                    current = Some(Body {
                        resp,
                        dec: Decoder::new(head.body_framing(), &limits),
                        inflater: deflate
                            .then(|| (Inflater::with_limit(MAX_INFLATED), Vec::new(), None)),
                    });
                }
                Err(e) => {
                    assert!(matches!(e.status(), 400 | 414 | 431 | 501 | 502 | 505));
                    return (out, End::Codec(e.kind()));
                }
            }
        }
    }
    // End of stream, as `on_eof` handles it.
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

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let method = if first & 0x80 != 0 {
        Method::Head
    } else {
        Method::Get
    };
    let whole = run(&[input], method);
    let at = (usize::from(first & 0x7f) * input.len()) / 127;
    let split = run(&[&input[..at], &input[at..]], method);
    assert_eq!(whole, split, "split at {at} changed the outcome");
    let step = usize::from(first % 8) + 1;
    let pieces: Vec<&[u8]> = input.chunks(step).collect();
    assert_eq!(
        whole,
        run(&pieces, method),
        "{step}-byte reads changed the outcome"
    );
});
