//! Incremental parsing: every message parsed identically whether it arrives
//! whole, byte by byte, or split in two at every possible byte boundary;
//! pipelined batches come out in order.
use bytes::BytesMut;
use pagewire_h1::*;

/// What a parsed request boils down to, for comparisons.
#[derive(Debug, PartialEq, Eq)]
struct Msg {
    method: Vec<u8>,
    target: String,
    version: Version,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
    trailers: Option<Vec<u8>>,
}

enum Phase {
    Head,
    Body(Box<Msg>, Decoder),
}

/// A tiny connection loop: feeds `pieces` one after another into a read
/// buffer and drives parse_request + Decoder as a server would. Runs the
/// stateless `parse_request` and the stateful `RequestParser` and requires
/// the same outcome from both.
fn run(pieces: &[&[u8]]) -> Result<Vec<Msg>, Error> {
    let stateless = run_lenient(pieces, false);
    let stateful = run_lenient(pieces, true);
    assert_eq!(
        stateless, stateful,
        "RequestParser differs from parse_request"
    );
    let (msgs, clean_end) = stateless?;
    assert!(
        clean_end,
        "stream ended inside a message or left bytes over"
    );
    Ok(msgs)
}

/// Like `run` with one parser; also says whether the stream ended cleanly
/// between messages. With the stateful parser, a verdict still pending at
/// the end of the stream is asked of `parse_request` (as a server would
/// answer an incomplete head at EOF), so outcomes are comparable.
fn run_lenient(pieces: &[&[u8]], stateful: bool) -> Result<(Vec<Msg>, bool), Error> {
    let limits = Limits::default();
    let mut parser = RequestParser::new(limits.clone());
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut phase = Phase::Head;
    let last = pieces.len();
    for (k, piece) in pieces.iter().chain([&&b""[..]]).enumerate() {
        buf.extend_from_slice(piece);
        let use_parser = stateful && k < last;
        // Bounded: each iteration consumes a head or body bytes, or breaks.
        loop {
            match &mut phase {
                Phase::Head => match if use_parser {
                    parser.parse(&mut buf)?
                } else {
                    parse_request(&mut buf, &limits)?
                } {
                    None => break,
                    Some(head) => {
                        let msg = Msg {
                            method: head.method_bytes().to_vec(),
                            target: head.target().to_owned(),
                            version: head.version(),
                            headers: head.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
                            body: Vec::new(),
                            trailers: None,
                        };
                        let decoder = Decoder::new(head.body_framing()?, &limits);
                        phase = Phase::Body(Box::new(msg), decoder);
                    }
                },
                Phase::Body(msg, decoder) => match decoder.decode(&mut buf)? {
                    Decoded::Data(d) => msg.body.extend_from_slice(&d),
                    Decoded::NeedMore => break,
                    Decoded::Done => {
                        msg.trailers = decoder.trailers().map(|t| t.to_vec());
                        let Phase::Body(msg, _) = std::mem::replace(&mut phase, Phase::Head) else {
                            unreachable!()
                        };
                        out.push(*msg);
                    }
                },
            }
        }
    }
    Ok((out, matches!(phase, Phase::Head) && buf.is_empty()))
}

fn check_all_splits(input: &[u8], expected_count: usize) {
    let whole = run(&[input]).unwrap();
    assert_eq!(whole.len(), expected_count);
    // Byte by byte.
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(run(&bytes).unwrap(), whole, "byte-by-byte");
    // Every 2-way split.
    for at in 0..=input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(run(&[a, b]).unwrap(), whole, "split at {at}");
    }
    // Every 3-way split at a few strides (cheap, catches state carried across two calls).
    for i in (0..input.len()).step_by(7) {
        for j in (i..input.len()).step_by(11) {
            assert_eq!(
                run(&[&input[..i], &input[i..j], &input[j..]]).unwrap(),
                whole,
                "split at {i},{j}"
            );
        }
    }
}

const BROWSER_GET: &[u8] = b"GET /images/logo.gif?v=3 HTTP/1.1\r\nHost: www.microscape.example\r\nUser-Agent: pagewire/0.1 (robot)\r\nAccept: image/gif, image/png, */*;q=0.8\r\nAccept-Encoding: deflate, gzip\r\nIf-None-Match: \"abc123\"\r\nConnection: keep-alive\r\n\r\n";

#[test]
fn single_get_at_every_split() {
    check_all_splits(BROWSER_GET, 1);
}

#[test]
fn single_chunked_post_at_every_split() {
    check_all_splits(
        b"POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\n\r\n",
        1,
    );
}

#[test]
fn pipelined_batch_with_chunked_body_at_every_split() {
    let mut batch = Vec::new();
    batch.extend_from_slice(BROWSER_GET);
    batch.extend_from_slice(b"HEAD /a.gif HTTP/1.1\r\nHost: a\r\n\r\n");
    batch.extend_from_slice(
        b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello=world",
    );
    batch.extend_from_slice(b"\r\n"); // a stray CRLF after a body (RFC 9112 §2.2) is skipped
    batch.extend_from_slice(b"PUT /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n");
    batch.extend_from_slice(b"GET /last HTTP/1.0\r\n\r\n");
    check_all_splits(&batch, 5);
    let msgs = run(&[&batch]).unwrap();
    assert_eq!(msgs[0].target, "/images/logo.gif?v=3");
    assert_eq!(msgs[0].headers.len(), 6);
    assert_eq!(msgs[1].method, b"HEAD");
    assert_eq!(msgs[2].body, b"hello=world");
    assert_eq!(msgs[3].body, b"abc");
    assert_eq!(msgs[3].trailers.as_deref(), Some(&b"T: 1\r\n\r\n"[..]));
    assert_eq!(msgs[4].version, Version::Http10);
}

#[test]
fn forty_three_pipelined_requests_in_one_buffer() {
    // The Microscape page: 1 HTML + 42 images (paper 001).
    let mut batch = Vec::new();
    for i in 0..43 {
        batch.extend_from_slice(format!("GET /img/{i}.gif HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes());
    }
    let msgs = run(&[&batch]).unwrap();
    assert_eq!(msgs.len(), 43);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.target, format!("/img/{i}.gif"));
    }
}

#[test]
fn error_is_reported_at_every_split() {
    // A smuggling attempt after a valid request: the first request is
    // still returned, then the error, whatever the split.
    let input = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
    for at in 0..=input.len() {
        let (a, b) = input.split_at(at);
        let e = run(&[a, b]).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::TransferEncodingWithContentLength,
            "split at {at}"
        );
    }
}

/// The error kind of a bad input does not depend on how it was split
/// across reads (the diagnosis looks only at bytes up to the fault).
#[test]
fn error_kind_is_the_same_at_every_split() {
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(8200));
    // A method token longer than the line limit, with a space after it:
    // 400 whether or not the space has arrived (found by fuzzing).
    let long_method = format!("{} / HTTP/1.1\r\nHost: a\r\n\r\n", "M".repeat(8300));
    let long_field = format!(
        "GET / HTTP/1.1\r\nHost: a\r\nX: {}  \r\n\r\n",
        "b".repeat(8189)
    );
    let inputs: Vec<&[u8]> = vec![
        b"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.10\r\nHost: a\r\n\r\n",
        b"GET / HTTPS/1.1\r\nHost: a\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET /\xff\xfe HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"G{T / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nX: \x00\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nNo-Colon\r\n\r\n",
        b"\rGET / HTTP/1.1\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;\x00\r\nx\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\nB: c\r\n\r\n",
        long_target.as_bytes(),
        long_method.as_bytes(),
        long_field.as_bytes(),
    ];
    for input in inputs {
        let whole = run(&[input]).unwrap_err();
        // Every split for short inputs; for the 8 KiB ones a stride plus
        // every split around the limits (keeps the test well under a second).
        let splits: Vec<usize> = if input.len() < 1000 {
            (0..=input.len()).collect()
        } else {
            (0..=input.len())
                .step_by(97)
                .chain((8180..8210).filter(|&i| i <= input.len()))
                .collect()
        };
        for at in splits {
            let (a, b) = input.split_at(at);
            let e = run(&[a, b]).unwrap_err();
            assert_eq!(
                e,
                whole,
                "{:?} split at {at}",
                String::from_utf8_lossy(&input[..input.len().min(60)])
            );
        }
    }
}

mod mutation {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// A stable-toolchain mini version of the fuzz target: mutate a
        /// valid pipelined batch (overwrite, insert, delete a few bytes)
        /// and require the same outcome whole and split anywhere.
        #[test]
        fn mutated_batches_give_the_same_outcome_at_any_split(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
            split in any::<prop::sample::Index>(),
        ) {
            let mut input = b"GET /a HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\nPOST /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n0\r\nT: 1\r\n\r\nPUT /c HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi".to_vec();
            for (at, byte, op) in edits {
                let i = at.index(input.len());
                match op {
                    0 => input[i] = byte,
                    1 => input.insert(i, byte),
                    _ => { input.remove(i); }
                }
            }
            let at = split.index(input.len() + 1);
            let whole = run_lenient(&[&input], false);
            prop_assert_eq!(&whole, &run_lenient(&[&input[..at], &input[at..]], false));
            prop_assert_eq!(&whole, &run_lenient(&[&input[..at], &input[at..]], true));
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            prop_assert_eq!(&whole, &run_lenient(&bytes, true));
        }
    }
}

/// Found by fuzzing (`parse_request` target, 2.1 M runs): fed whole, the
/// stream ended in `HeadTooLarge`; split at byte 514, in
/// `HeaderFieldTooLong`. The input is the fuzz target's: its first byte
/// chooses the split, the rest is the stream; the limits are the target's.
#[test]
fn fuzz_find_split_verdict_is_split_independent() {
    let data = include_bytes!("../data/parse_request-split-verdict.bin");
    let input = &data[1..];
    let limits = Limits {
        max_request_line_bytes: 256,
        max_header_line_bytes: 256,
        max_headers: 16,
        max_head_bytes: 1024,
        max_chunk_line_bytes: 64,
        max_trailer_bytes: 128,
        max_trailers: 4,
        require_host: true,
    };
    let verdict = |pieces: &[&[u8]], stateful: bool| -> ErrorKind {
        let mut parser = RequestParser::new(limits.clone());
        let mut buf = BytesMut::new();
        for (k, piece) in pieces.iter().chain([&&b""[..]]).enumerate() {
            buf.extend_from_slice(piece);
            let r = if stateful && k < pieces.len() {
                parser.parse(&mut buf)
            } else {
                parse_request(&mut buf, &limits)
            };
            match r {
                Ok(None) => {}
                Ok(Some(h)) => panic!("unexpected head {:?}", h.target()),
                Err(e) => return e.kind(),
            }
        }
        panic!("no verdict");
    };
    let whole = verdict(&[input], false);
    // The first field line passes 256 bytes long before the head passes
    // 1024: the earlier fault is the verdict.
    assert_eq!(whole, ErrorKind::HeaderFieldTooLong);
    for at in 0..=input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(verdict(&[a, b], false), whole, "split at {at}");
        assert_eq!(verdict(&[a, b], true), whole, "stateful, split at {at}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(verdict(&bytes, true), whole, "byte by byte");
}

#[test]
fn fuzz_find_bad_status_code_is_named_at_every_split() {
    // Fuzz find (response_path target): status `020`, then a field line over
    // its limit. Whole, the complete head was refused for the code; split,
    // the partial head was refused for the line. The code comes first.
    for data in [
        &include_bytes!("../data/response_path-status-vs-line.bin")[..],
        // The second find: status `000`, then a bad field name (httparse's
        // error, diagnosed, named the name; a partial head, the code).
        &include_bytes!("../data/response_path-status-vs-name.bin")[..],
    ] {
        bad_status_code_at_every_split(&data[1..]);
    }
}

fn bad_status_code_at_every_split(input: &[u8]) {
    let limits = Limits {
        max_request_line_bytes: 256,
        max_header_line_bytes: 256,
        max_headers: 16,
        max_head_bytes: 1024,
        max_chunk_line_bytes: 64,
        max_trailer_bytes: 128,
        max_trailers: 4,
        require_host: false,
    };
    let verdict = |pieces: &[&[u8]]| -> ErrorKind {
        let mut buf = BytesMut::new();
        for piece in pieces {
            buf.extend_from_slice(piece);
            match parse_response(&mut buf, &limits, &Method::Get) {
                Ok(None) => {}
                Ok(Some(h)) => panic!("unexpected head {}", h.status()),
                Err(e) => return e.kind(),
            }
        }
        panic!("no verdict");
    };
    assert_eq!(verdict(&[input]), ErrorKind::InvalidStatusLine);
    for at in 0..=input.len() {
        let (a, b) = input.split_at(at);
        assert_eq!(
            verdict(&[a, b]),
            ErrorKind::InvalidStatusLine,
            "split at {at}"
        );
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        verdict(&bytes),
        ErrorKind::InvalidStatusLine,
        "byte by byte"
    );
}

/// Response heads (no bodies) fed in `pieces`, through the stateless
/// `parse_response` or the stateful `ResponseParser` (asked once more at
/// the end of the stream): every head's status and raw bytes, then the
/// error, if any.
fn response_heads(pieces: &[&[u8]], stateful: bool) -> (Vec<(u16, Vec<u8>)>, Option<ErrorKind>) {
    let limits = Limits {
        max_request_line_bytes: 64,
        max_header_line_bytes: 64,
        max_headers: 8,
        max_head_bytes: 256,
        ..Limits::default()
    };
    let mut parser = ResponseParser::new(limits.clone());
    let mut buf = BytesMut::new();
    let mut heads = Vec::new();
    let last = pieces.len();
    for (i, piece) in pieces.iter().chain(std::iter::once(&&b""[..])).enumerate() {
        buf.extend_from_slice(piece);
        // Bounded: each pass takes a head off `buf` or stops.
        loop {
            let r = match (stateful, i == last) {
                (false, _) => parse_response(&mut buf, &limits, &Method::Get),
                (true, false) => parser.parse(&mut buf, &Method::Get),
                (true, true) => parser.parse_at_eof(&mut buf, &Method::Get),
            };
            match r {
                Ok(Some(h)) => heads.push((h.status(), h.raw().to_vec())),
                Ok(None) => break,
                Err(e) => return (heads, Some(e.kind())),
            }
        }
    }
    (heads, None)
}

#[test]
fn response_parser_matches_parse_response_at_every_split() {
    let long_field = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(80));
    let too_large = format!(
        "HTTP/1.1 200 OK\r\n{}\r\n",
        "X-Field: 0123456789012345678901234567890123456789\r\n".repeat(6)
    );
    let inputs: Vec<&[u8]> = vec![
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.0 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
        b"\r\n\nHTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 3\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n",
        b"HTTP/1.1 020 Odd\r\nA: b\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.2p1\r\n",
        b"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n",
        b"\r\rHTTP/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        long_field.as_bytes(),
        too_large.as_bytes(),
    ];
    for input in inputs {
        let whole = response_heads(&[input], false);
        for at in 0..=input.len() {
            let (a, b) = input.split_at(at);
            let split = response_heads(&[a, b], true);
            assert_eq!(
                split,
                whole,
                "{:?} split at {at}",
                String::from_utf8_lossy(input)
            );
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(
            response_heads(&bytes, true),
            whole,
            "{:?} byte by byte",
            String::from_utf8_lossy(input)
        );
    }
}
