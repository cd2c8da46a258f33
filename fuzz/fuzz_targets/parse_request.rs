//! Request parsing, fed whole and split in two at a point the input
//! chooses, and through the stateful `RequestParser` in small reads: all
//! runs must produce the same messages (heads and bodies)
//! and the same error, must never panic, and `Ok(None)` must consume
//! nothing. Also runs the response parser over the same bytes.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use pagewire_h1::{
    parse_request, parse_response, Decoded, Decoder, ErrorKind, Limits, Method, RequestParser,
};

#[derive(Debug, PartialEq, Eq)]
struct Msg {
    method: Vec<u8>,
    target: String,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
    body: Vec<u8>,
}

/// Small limits so the fuzzer reaches them; bounded runs.
fn limits() -> Limits {
    Limits {
        max_request_line_bytes: 256,
        max_header_line_bytes: 256,
        max_headers: 16,
        max_head_bytes: 1024,
        max_chunk_line_bytes: 64,
        max_trailer_bytes: 128,
        max_trailers: 4,
        require_host: true,
    }
}

/// Drives a connection over `pieces`. With `stateful`, heads come from a
/// `RequestParser`, and a verdict still pending at the end is asked of
/// `parse_request` (what a server answers at EOF), so outcomes compare.
fn run(pieces: &[&[u8]], stateful: bool) -> (Vec<Msg>, Option<ErrorKind>) {
    let limits = limits();
    let mut parser = RequestParser::new(limits.clone());
    let last = pieces.len();
    let pieces = pieces.iter().copied().chain(std::iter::once(&b""[..]));
    let mut buf = BytesMut::new();
    let mut msgs = Vec::new();
    let mut current: Option<(Msg, Decoder)> = None;
    for (k, piece) in pieces.enumerate() {
        buf.extend_from_slice(piece);
        let use_parser = stateful && k < last;
        loop {
            if let Some((msg, dec)) = &mut current {
                match dec.decode(&mut buf) {
                    Ok(Decoded::Data(d)) => {
                        assert!(!d.is_empty());
                        msg.body.extend_from_slice(&d)
                    }
                    Ok(Decoded::NeedMore) => break,
                    Ok(Decoded::Done) => msgs.push(current.take().unwrap().0),
                    Err(e) => return (msgs, Some(e.kind())),
                }
            } else {
                let before = buf.len();
                let parsed = if use_parser {
                    parser.parse(&mut buf)
                } else {
                    parse_request(&mut buf, &limits)
                };
                match parsed {
                    Ok(None) => {
                        assert_eq!(buf.len(), before, "Ok(None) consumed input");
                        break;
                    }
                    Ok(Some(head)) => {
                        assert_eq!(before - buf.len(), head.raw().len());
                        let msg = Msg {
                            method: head.method_bytes().to_vec(),
                            target: head.target().to_owned(),
                            headers: head.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
                            body: Vec::new(),
                        };
                        let _ = head.wants_keep_alive();
                        let dec = Decoder::new(head.body_framing().unwrap(), &limits);
                        current = Some((msg, dec));
                    }
                    Err(e) => {
                        assert!(matches!(e.status(), 400 | 414 | 431 | 501 | 505));
                        return (msgs, Some(e.kind()));
                    }
                }
            }
        }
    }
    (msgs, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = run(&[input], false);
    let at = (first as usize * input.len()) / 255;
    let split = run(&[&input[..at], &input[at..]], false);
    assert_eq!(whole, split, "split at {at} changed the outcome");
    let stateful = run(&[&input[..at], &input[at..]], true);
    assert_eq!(whole, stateful, "RequestParser (split at {at}) differs");
    // Small pieces exercise the stateful scan state most.
    let step = usize::from(first % 7) + 1;
    let pieces: Vec<&[u8]> = input.chunks(step).collect();
    assert_eq!(
        whole,
        run(&pieces, true),
        "RequestParser ({step}-byte reads) differs"
    );

    let mut buf = BytesMut::from(input);
    for method in [Method::Get, Method::Head] {
        let before = buf.len();
        match parse_response(&mut buf, &limits(), &method) {
            Ok(None) => assert_eq!(buf.len(), before),
            Ok(Some(head)) => {
                let mut dec = Decoder::new(head.body_framing(), &limits());
                while let Ok(Decoded::Data(_)) = dec.decode(&mut buf) {}
            }
            Err(_) => break,
        }
    }
});
