//! Response heads and their framing (RFC 9112 §6.3): HEAD, 1xx, 204, 304,
//! CONNECT, Transfer-Encoding, Content-Length, close-delimited.
use bytes::BytesMut;
use pagewire_h1::*;

fn parse(input: &[u8], method: Method) -> Result<Option<ResponseHead>, Error> {
    let mut buf = BytesMut::from(input);
    parse_response(&mut buf, &Limits::default(), &method)
}

fn framing(input: &[u8], method: Method) -> BodyFraming {
    parse(input, method).unwrap().unwrap().body_framing()
}

#[test]
fn head_response_has_no_body_despite_content_length() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
    assert_eq!(framing(input, Method::Head), BodyFraming::Empty);
    assert_eq!(framing(input, Method::Get), BodyFraming::Length(1234));
    let head = parse(input, Method::Get).unwrap().unwrap();
    assert_eq!(response_framing(&head, &Method::Head), BodyFraming::Empty);
    assert_eq!(head.content_length(), Some(1234));
}

#[test]
fn status_304_204_and_1xx_have_no_body() {
    assert_eq!(
        framing(
            b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 99\r\n\r\n",
            Method::Get
        ),
        BodyFraming::Empty
    );
    assert_eq!(
        framing(b"HTTP/1.1 204 No Content\r\n\r\n", Method::Get),
        BodyFraming::Empty
    );
    assert_eq!(
        framing(b"HTTP/1.1 100 Continue\r\n\r\n", Method::Post),
        BodyFraming::Empty
    );
    assert_eq!(
        framing(
            b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n",
            Method::Get
        ),
        BodyFraming::Empty
    );
}

#[test]
fn connect_2xx_is_a_tunnel() {
    assert_eq!(
        framing(
            b"HTTP/1.1 200 Connection established\r\n\r\n",
            Method::Connect
        ),
        BodyFraming::Empty
    );
}

#[test]
fn response_framing_by_transfer_encoding_and_length() {
    assert_eq!(
        framing(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            Method::Get
        ),
        BodyFraming::Chunked
    );
    // Not chunked last: the body runs to the close (RFC 9112 §6.3 item 4).
    assert_eq!(
        framing(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
            Method::Get
        ),
        BodyFraming::CloseDelimited
    );
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\n\r\n", Method::Get),
        BodyFraming::CloseDelimited
    );
    assert_eq!(
        framing(b"HTTP/1.0 200 OK\r\n\r\n", Method::Get),
        BodyFraming::CloseDelimited
    );
    assert_eq!(
        framing(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", Method::Get),
        BodyFraming::Empty
    );
}

#[test]
fn response_framing_errors() {
    let kind = |input: &[u8]| parse(input, Method::Get).unwrap_err().kind();
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
        ErrorKind::TransferEncodingWithContentLength
    );
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
        ErrorKind::ConflictingContentLength
    );
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n"),
        ErrorKind::InvalidContentLength
    );
    assert_eq!(
        kind(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ErrorKind::TransferEncodingInHttp10
    );
    assert_eq!(
        kind(b"HTTP/2 200 OK\r\n\r\n"),
        ErrorKind::UnsupportedVersion
    );
    assert_eq!(
        kind(b"HTTP/1.1 20 OK\r\n\r\n"),
        ErrorKind::InvalidStatusLine
    );
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nX : y\r\n\r\n"),
        ErrorKind::SpaceBeforeColon
    );
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nX: y\r\n folded\r\n\r\n"),
        ErrorKind::ObsFold
    );
    assert_eq!(
        kind(b"HTTP/1.1 200 OK\r\nX: y\rz\r\n\r\n"),
        ErrorKind::BareCr
    );
}

#[test]
fn status_line_details() {
    let head = parse(b"HTTP/1.1 404 Not Found\r\nServer: x\r\n\r\n", Method::Get)
        .unwrap()
        .unwrap();
    assert_eq!(head.status(), 404);
    assert_eq!(head.reason(), b"Not Found");
    assert_eq!(head.version(), Version::Http11);
    assert_eq!(head.header("server"), Some(&b"x"[..]));
    let head = parse(b"HTTP/1.1 599 \r\n\r\n", Method::Get)
        .unwrap()
        .unwrap();
    assert_eq!(head.status(), 599);
    assert_eq!(head.reason(), b"");
}

#[test]
fn response_keep_alive_rules() {
    let ka = |s: &[u8]| parse(s, Method::Get).unwrap().unwrap().wants_keep_alive();
    assert!(ka(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    assert!(!ka(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"));
    assert!(!ka(b"HTTP/1.0 200 OK\r\n\r\n"));
    assert!(ka(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n"));
}

#[test]
fn pipelined_responses_split_at_every_byte() {
    let stream: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    let methods = [
        Method::Get,
        Method::Get,
        Method::Get,
        Method::Head,
        Method::Get,
    ];
    let expect: Vec<(u16, Vec<u8>)> = vec![
        (200, b"hello".to_vec()),
        (304, vec![]),
        (200, b"hi".to_vec()),
        (200, vec![]),
    ];
    let stream_with_head = {
        // The 4th response answers a HEAD: Content-Length but no body.
        let mut s = stream[..stream.len() - 3].to_vec();
        s.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx");
        s
    };
    let mut expect = expect;
    expect.push((200, b"x".to_vec()));
    for at in 0..=stream_with_head.len() {
        let (a, b) = stream_with_head.split_at(at);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        let mut current: Option<(u16, Vec<u8>, Decoder)> = None;
        for piece in [a, b] {
            buf.extend_from_slice(piece);
            loop {
                if let Some((status, body, dec)) = &mut current {
                    match dec.decode(&mut buf).unwrap() {
                        Decoded::Data(d) => body.extend_from_slice(&d),
                        Decoded::NeedMore => break,
                        Decoded::Done => {
                            got.push((*status, std::mem::take(body)));
                            current = None;
                        }
                    }
                } else {
                    let Some(&m) = methods.get(got.len()) else {
                        break;
                    };
                    match parse_response(&mut buf, &Limits::default(), &m).unwrap() {
                        None => break,
                        Some(h) => {
                            current = Some((
                                h.status(),
                                Vec::new(),
                                Decoder::new(h.body_framing(), &Limits::default()),
                            ))
                        }
                    }
                }
            }
        }
        assert_eq!(got, expect, "split at {at}");
    }
}

#[test]
fn status_line_without_reason_and_split_heads() {
    let head = parse(b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nhi", Method::Get)
        .unwrap()
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.reason(), b"");
    assert_eq!(head.body_framing(), BodyFraming::Length(2));
    // Incomplete heads need more bytes.
    assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Le", Method::Get)
        .unwrap()
        .is_none());
    assert!(parse(b"HTTP/1.", Method::Get).unwrap().is_none());
}
