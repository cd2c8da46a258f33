//! `parse_response_into` and `consume_response_into` (and the scanner's
//! forms of both) against `parse_response`: the same verdict, the same
//! bytes left in the buffer, the same head, on valid and invalid heads,
//! whole or fed a byte at a time, into one head reused across responses.
use bytes::BytesMut;
use pagewire_h1::*;

/// A head's bytes: raw, reason, every `(name, value)`.
type Bytes3 = (Vec<u8>, Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>);

/// What a caller can observe of a parsed head. `fields` is `None` for a
/// consumed head (which keeps no bytes).
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    status: u16,
    version: Version,
    framing: BodyFraming,
    content_length: Option<u64>,
    keep_alive: bool,
    fields: Option<Bytes3>,
}

fn seen(h: &ResponseHead, with_bytes: bool) -> Seen {
    Seen {
        status: h.status(),
        version: h.version(),
        framing: h.body_framing(),
        content_length: h.content_length(),
        keep_alive: h.wants_keep_alive(),
        fields: with_bytes.then(|| {
            (
                h.raw().to_vec(),
                h.reason().to_vec(),
                h.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect(),
            )
        }),
    }
}

fn strip(s: &Seen) -> Seen {
    Seen { fields: None, ..*s }
}

/// One parser's outcome: each head seen, then the error (if any), then
/// what was left in the buffer.
type Outcome = (Vec<Seen>, Option<ErrorKind>, Vec<u8>);

#[derive(Clone, Copy, Debug)]
enum Way {
    Plain,
    Into,
    Consume,
}

/// Parses every head in `input` (fed in `step`-byte reads; 0: all at
/// once), with the stateless functions or a `HeadScanner`, into one head
/// reused throughout. Bodies are not expected: the corpus has none or the
/// caller stops at the first head with one.
fn run(input: &[u8], step: usize, way: Way, scanner: bool, limits: &Limits, m: Method) -> Outcome {
    let mut buf = BytesMut::new();
    let mut scan = HeadScanner::new();
    let mut head = ResponseHead::empty();
    let mut heads = Vec::new();
    let mut fed = 0;
    loop {
        let next = if step == 0 {
            input.len()
        } else {
            (fed + step).min(input.len())
        };
        buf.extend_from_slice(&input[fed..next]);
        fed = next;
        loop {
            let r = match (way, scanner) {
                (Way::Plain, false) => {
                    parse_response(&mut buf, limits, &m).map(|h| h.map(|h| seen(&h, true)))
                }
                (Way::Plain, true) => scan
                    .parse_response(&mut buf, limits, &m)
                    .map(|h| h.map(|h| seen(&h, true))),
                (Way::Into, false) => parse_response_into(&mut buf, limits, &m, &mut head)
                    .map(|d| d.then(|| seen(&head, true))),
                (Way::Into, true) => scan
                    .parse_response_into(&mut buf, limits, &m, &mut head)
                    .map(|d| d.then(|| seen(&head, true))),
                (Way::Consume, false) => consume_response_into(&mut buf, limits, &m, &mut head)
                    .map(|d| d.then(|| seen(&head, false))),
                (Way::Consume, true) => scan
                    .consume_response_into(&mut buf, limits, &m, &mut head)
                    .map(|d| d.then(|| seen(&head, false))),
            };
            match r {
                Ok(Some(s)) => {
                    let body = !matches!(s.framing, BodyFraming::Empty);
                    heads.push(s);
                    if body {
                        return (heads, None, buf.to_vec());
                    }
                }
                Ok(None) => break,
                Err(e) => return (heads, Some(e.kind()), buf.to_vec()),
            }
        }
        if fed == input.len() {
            if scanner {
                // End of stream: the verdict on what is left is due now.
                scan.reset();
                let r = match way {
                    Way::Plain => scan.parse_response(&mut buf, limits, &m).map(|_| ()),
                    Way::Into => scan
                        .parse_response_into(&mut buf, limits, &m, &mut head)
                        .map(|_| ()),
                    Way::Consume => scan
                        .consume_response_into(&mut buf, limits, &m, &mut head)
                        .map(|_| ()),
                };
                if let Err(e) = r {
                    return (heads, Some(e.kind()), buf.to_vec());
                }
            }
            return (heads, None, buf.to_vec());
        }
    }
}

fn corpus() -> Vec<Vec<u8>> {
    let long_field = format!(
        "HTTP/1.1 200 OK\r\nX-Long: {}\r\nContent-Length: 1\r\n\r\n",
        "a".repeat(300)
    );
    let long_reason = format!("HTTP/1.1 200 {}\r\n\r\n", "r".repeat(300));
    let many = format!(
        "HTTP/1.1 200 OK\r\n{}Content-Length: 2\r\n\r\n",
        "A: b\r\n".repeat(40)
    );
    let big = format!(
        "HTTP/1.1 200 OK\r\n{}\r\n",
        "Field-Name: value\r\n".repeat(30)
    );
    let heads: Vec<&[u8]> = vec![
        b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nServer: pagewire\r\nDate: x\r\nContent-Type: a/b\r\nContent-Length: 1024\r\nETag: \"1\"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;a=b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nConnection: keep-alive\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.0 204 None\r\nConnection: Keep-Alive\r\n\r\nHTTP/1.0 204 None\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 204 OK\r\nConnection: foo, CLOSE\r\n\r\nHTTP/1.1 204 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\nContent-Length: 2\n\n",
        b"\r\n\r\nHTTP/1.1 204 OK\r\n\r\n",
        b"HTTP/1.1 200\r\n\r\n",
        b"HTTP/1.1 099 Low\r\n\r\n",
        b"HTTP/1.1 020 Low\r\nX: y\r\n\r\n",
        b"HTTP/1.1 1000 High\r\n\r\n",
        b"HTTP/2.0 200 OK\r\n\r\n",
        b"HTTP/1.2 200 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.6\r\n",
        b"HTTP/1.1 200 OK\r\nBad\rField: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: y\r\n folded\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX : y\r\n\r\n",
        b"\rHTTP/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n",
        b"HTTP/1.1 20",
        b"",
        long_field.as_bytes(),
        long_reason.as_bytes(),
        many.as_bytes(),
        big.as_bytes(),
    ];
    heads.into_iter().map(<[u8]>::to_vec).collect()
}

#[test]
fn into_and_consume_agree_with_parse_response() {
    let tight = Limits {
        max_request_line_bytes: 64,
        max_header_line_bytes: 64,
        max_headers: 8,
        max_head_bytes: 256,
        ..Limits::default()
    };
    let mut checked = 0;
    for input in corpus() {
        for limits in [Limits::default(), tight.clone()] {
            for m in [Method::Get, Method::Head] {
                for step in [0, 1, 7] {
                    for scanner in [false, true] {
                        // The stateless functions re-parse from the start
                        // at every read, as designed; fine for a corpus.
                        let plain = run(&input, step, Way::Plain, scanner, &limits, m);
                        let into = run(&input, step, Way::Into, scanner, &limits, m);
                        assert_eq!(
                            plain,
                            into,
                            "into: {:?} step {step} scanner {scanner}",
                            String::from_utf8_lossy(&input)
                        );
                        let consume = run(&input, step, Way::Consume, scanner, &limits, m);
                        let stripped: Vec<Seen> = plain.0.iter().map(strip).collect();
                        assert_eq!(
                            (stripped, plain.1, plain.2.clone()),
                            consume,
                            "consume: {:?} step {step} scanner {scanner}",
                            String::from_utf8_lossy(&input)
                        );
                        checked += usize::from(plain.1.is_some()) + plain.0.len();
                    }
                }
            }
        }
    }
    // The corpus exercises both outcomes (a guard against a corpus that
    // silently parses nothing).
    assert!(checked > 200, "{checked}");
}

#[test]
fn corpus_covers_the_verdicts_it_claims() {
    let limits = Limits {
        max_header_line_bytes: 64,
        ..Limits::default()
    };
    let kinds: Vec<Option<ErrorKind>> = corpus()
        .iter()
        .map(|i| run(i, 0, Way::Plain, false, &limits, Method::Get).1)
        .collect();
    for want in [
        ErrorKind::ConflictingContentLength,
        ErrorKind::TransferEncodingWithContentLength,
        ErrorKind::TransferEncodingInHttp10,
        ErrorKind::ChunkedTwice,
        ErrorKind::UnknownTransferCoding,
        ErrorKind::InvalidStatusLine,
        ErrorKind::UnsupportedVersion,
    ] {
        assert!(kinds.contains(&Some(want)), "{want:?} not in {kinds:?}");
    }
    assert!(kinds.iter().filter(|k| k.is_none()).count() > 10);
}

#[test]
fn a_consumed_head_keeps_its_summary_and_drops_its_bytes() {
    let mut buf = BytesMut::from(
        &b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nab"[..],
    );
    let mut head = ResponseHead::empty();
    assert!(consume_response_into(&mut buf, &Limits::default(), &Method::Get, &mut head).unwrap());
    assert_eq!(&buf[..], b"ab");
    assert_eq!(head.status(), 200);
    assert_eq!(head.body_framing(), BodyFraming::Length(2));
    assert!(head.wants_keep_alive());
    assert!(
        head.raw().is_empty() && head.header_count() == 0 && head.header("connection").is_none()
    );
    // Reused for a head that says nothing: the stored decision is not kept.
    let mut buf = BytesMut::from(&b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n"[..]);
    assert!(consume_response_into(&mut buf, &Limits::default(), &Method::Get, &mut head).unwrap());
    assert!(!head.wants_keep_alive());
    // And parsed into with its bytes: a full head again.
    let mut buf =
        BytesMut::from(&b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n"[..]);
    assert!(parse_response_into(&mut buf, &Limits::default(), &Method::Get, &mut head).unwrap());
    assert!(!head.wants_keep_alive());
    assert_eq!(head.header("connection"), Some(&b"close"[..]));
}
