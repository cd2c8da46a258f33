//! One named test per RFC 9112 framing rule and limit. Each asserts the
//! error kind and the status the server must answer with.
use bytes::BytesMut;
use pagewire_h1::*;

fn parse(input: &[u8]) -> Result<Option<RequestHead>, Error> {
    let mut buf = BytesMut::from(input);
    parse_request(&mut buf, &Limits::default())
}

fn err(input: &[u8]) -> Error {
    match parse(input) {
        Err(e) => e,
        Ok(h) => panic!("accepted {:?}: {:?}", String::from_utf8_lossy(input), h),
    }
}

fn assert_err(input: &[u8], kind: ErrorKind, status: u16) {
    let e = err(input);
    assert_eq!(e.kind(), kind, "input {:?}", String::from_utf8_lossy(input));
    assert_eq!(
        e.status(),
        status,
        "input {:?}",
        String::from_utf8_lossy(input)
    );
}

fn framing(input: &[u8]) -> BodyFraming {
    parse(input).unwrap().unwrap().body_framing().unwrap()
}

// ---- Content-Length / Transfer-Encoding ------------------------------------

#[test]
fn transfer_encoding_with_content_length_is_400() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
        ErrorKind::TransferEncodingWithContentLength,
        400,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        ErrorKind::TransferEncodingWithContentLength,
        400,
    );
}

#[test]
fn conflicting_content_length_is_400() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        ErrorKind::ConflictingContentLength,
        400,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n",
        ErrorKind::ConflictingContentLength,
        400,
    );
}

/// RFC 9110 §8.6 lets a recipient accept a list of identical values (what
/// a proxy leaves after merging duplicate fields); we do, as nginx does.
#[test]
fn identical_duplicate_content_length_is_accepted() {
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n"),
        BodyFraming::Length(5)
    );
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
        BodyFraming::Length(5)
    );
}

#[test]
fn content_length_with_sign_or_non_digit_is_400() {
    for v in [
        "+5",
        "-5",
        "5a",
        "0x5",
        "5 5",
        "",
        " ",
        "5,",
        ",5",
        "5.0",
        "1e3",
        "٥",
        "99999999999999999999", // overflows u64
    ] {
        let input = format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {v}\r\n\r\n");
        let e = err(input.as_bytes());
        assert_eq!(e.kind(), ErrorKind::InvalidContentLength, "value {v:?}");
        assert_eq!(e.status(), 400);
    }
}

#[test]
fn content_length_framing() {
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"),
        BodyFraming::Empty
    );
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n"),
        BodyFraming::Length(7)
    );
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n"),
        BodyFraming::Length(u64::MAX)
    );
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\n\r\n"),
        BodyFraming::Empty
    );
}

#[test]
fn chunked_final_is_chunked() {
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"),
        BodyFraming::Chunked
    );
    assert_eq!(
        framing(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n"),
        BodyFraming::Chunked
    );
}

#[test]
fn unknown_transfer_coding_is_501() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        ErrorKind::UnknownTransferCoding,
        501,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        ErrorKind::UnknownTransferCoding,
        501,
    );
}

#[test]
fn chunked_not_final_is_400() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        ErrorKind::ChunkedNotFinal,
        400,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        ErrorKind::ChunkedNotFinal,
        400,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
        ErrorKind::ChunkedNotFinal,
        400,
    );
}

#[test]
fn chunked_twice_is_400() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        ErrorKind::ChunkedTwice,
        400,
    );
}

#[test]
fn empty_transfer_encoding_is_400() {
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n",
        ErrorKind::InvalidTransferEncoding,
        400,
    );
    assert_err(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n",
        ErrorKind::InvalidTransferEncoding,
        400,
    );
}

#[test]
fn transfer_encoding_in_http10_is_400() {
    assert_err(
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        ErrorKind::TransferEncodingInHttp10,
        400,
    );
}

// ---- head syntax --------------------------------------------------------------

#[test]
fn bare_cr_is_400() {
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
        ErrorKind::BareCr,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
        ErrorKind::BareCr,
        400,
    );
    // A CR inside the target is judged where httparse stops (the CR
    // itself), so it is an invalid target whatever follows it.
    assert_err(
        b"GET /\r HTTP/1.1\r\nHost: a\r\n\r\n",
        ErrorKind::InvalidTarget,
        400,
    );
    assert_err(
        b"\rGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        ErrorKind::BareCr,
        400,
    );
    assert_err(b"GET / HTTP/1.1\rHost: a\r\n\r\n", ErrorKind::BareCr, 400);
}

#[test]
fn whitespace_between_field_name_and_colon_is_400() {
    assert_err(
        b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        ErrorKind::SpaceBeforeColon,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\n",
        ErrorKind::SpaceBeforeColon,
        400,
    );
}

#[test]
fn obs_fold_is_400() {
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n\r\n",
        ErrorKind::ObsFold,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n\ttwo\r\n\r\n",
        ErrorKind::ObsFold,
        400,
    );
}

#[test]
fn whitespace_before_first_field_is_400() {
    assert_err(
        b"GET / HTTP/1.1\r\n Host: a\r\n\r\n",
        ErrorKind::WhitespaceBeforeFirstField,
        400,
    );
}

#[test]
fn invalid_field_name_and_value_are_400() {
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX(y): z\r\n\r\n",
        ErrorKind::InvalidHeaderName,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n",
        ErrorKind::InvalidHeaderName,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n",
        ErrorKind::InvalidHeaderName,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n",
        ErrorKind::InvalidHeaderValue,
        400,
    );
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
        ErrorKind::InvalidHeaderValue,
        400,
    );
}

#[test]
fn host_rules() {
    assert_err(b"GET / HTTP/1.1\r\n\r\n", ErrorKind::MissingHost, 400);
    assert_err(
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ErrorKind::MultipleHost,
        400,
    );
    // HTTP/1.0 needs no Host.
    assert!(parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().is_some());
    let lax = Limits {
        require_host: false,
        ..Limits::default()
    };
    let mut buf = BytesMut::from(&b"GET / HTTP/1.1\r\n\r\n"[..]);
    assert!(parse_request(&mut buf, &lax).unwrap().is_some());
}

// ---- start line ------------------------------------------------------------

#[test]
fn unknown_http_versions_are_505() {
    for v in ["HTTP/2.0", "HTTP/1.2", "HTTP/3", "HTTP/0.9", "HTTP/9.9"] {
        let input = format!("GET / {v}\r\nHost: a\r\n\r\n");
        let e = err(input.as_bytes());
        assert_eq!(e.kind(), ErrorKind::UnsupportedVersion, "{v}");
        assert_eq!(e.status(), 505);
        assert!(e.reason().contains("version"));
    }
    // The HTTP/2 connection preface.
    assert_err(
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ErrorKind::UnsupportedVersion,
        505,
    );
}

#[test]
fn garbage_request_line_is_400() {
    for input in [
        &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"[..], // TLS ClientHello
        b"GET\r\n\r\n",
        b"GET /\r\n\r\n",
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n",
        b"GET / http/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTPS/1.1\r\nHost: a\r\n\r\n",
        b"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"hello world\r\n\r\n",
    ] {
        let e = err(input);
        assert_eq!(
            e.status(),
            400,
            "{:?} -> {e:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn leading_empty_lines_are_skipped() {
    let head = parse(b"\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.target(), "/x");
}

// ---- limits ------------------------------------------------------------------

#[test]
fn request_line_over_8k_is_414() {
    let long = "a".repeat(8 * 1024);
    let input = format!("GET /{long} HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_err(input.as_bytes(), ErrorKind::RequestLineTooLong, 414);
    // Also detected before the line is complete.
    let partial = format!("GET /{long}");
    assert_err(partial.as_bytes(), ErrorKind::RequestLineTooLong, 414);
    // Just under the limit is fine.
    let ok = format!(
        "GET /{} HTTP/1.1\r\nHost: a\r\n\r\n",
        "a".repeat(8 * 1024 - 15)
    );
    assert!(parse(ok.as_bytes()).unwrap().is_some());
}

#[test]
fn endless_method_token_is_400() {
    let input = "G".repeat(10_000);
    assert_err(input.as_bytes(), ErrorKind::InvalidRequestLine, 400);
}

#[test]
fn header_field_over_8k_is_431() {
    let long = "v".repeat(8 * 1024);
    let input = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Big: {long}\r\n\r\n");
    assert_err(input.as_bytes(), ErrorKind::HeaderFieldTooLong, 431);
    let partial = format!("GET / HTTP/1.1\r\nHost: a\r\nX-Big: {long}");
    assert_err(partial.as_bytes(), ErrorKind::HeaderFieldTooLong, 431);
}

#[test]
fn more_than_100_fields_is_431() {
    let mut input = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    for i in 0..99 {
        input.push_str(&format!("X-{i}: v\r\n"));
    }
    input.push_str("\r\n");
    assert_eq!(
        parse(input.as_bytes()).unwrap().unwrap().header_count(),
        100
    );
    let more = input.replacen("Host: a\r\n", "Host: a\r\nX-extra: 1\r\n", 1);
    assert_err(more.as_bytes(), ErrorKind::TooManyHeaders, 431);
}

#[test]
fn head_over_64k_is_431() {
    let mut input = String::from("GET / HTTP/1.1\r\nHost: a\r\n");
    let value = "v".repeat(8000);
    for i in 0..9 {
        input.push_str(&format!("X-{i}: {value}\r\n"));
    }
    // Incomplete and already too large.
    assert_err(input.as_bytes(), ErrorKind::HeadTooLarge, 431);
    input.push_str("\r\n");
    assert_err(input.as_bytes(), ErrorKind::HeadTooLarge, 431);
}

#[test]
fn partial_head_needs_more() {
    assert!(parse(b"GET / HTTP/1.1\r\nHost: a\r\n").unwrap().is_none());
    assert!(parse(b"").unwrap().is_none());
    assert!(parse(b"\r\n").unwrap().is_none());
}

#[test]
fn keep_alive_rules() {
    let ka = |s: &[u8]| parse(s).unwrap().unwrap().wants_keep_alive();
    assert!(ka(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert!(!ka(
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    ));
    assert!(!ka(
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, Close\r\n\r\n"
    ));
    assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
    assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
    assert!(!ka(
        b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
    ));
}

#[test]
fn methods_and_raw_tokens() {
    for (tok, m) in [
        ("GET", Method::Get),
        ("HEAD", Method::Head),
        ("POST", Method::Post),
        ("PUT", Method::Put),
        ("DELETE", Method::Delete),
        ("OPTIONS", Method::Options),
        ("TRACE", Method::Trace),
        ("PATCH", Method::Patch),
        ("PROPFIND", Method::Other),
        ("get", Method::Other),
    ] {
        let input = format!("{tok} / HTTP/1.1\r\nHost: a\r\n\r\n");
        let head = parse(input.as_bytes()).unwrap().unwrap();
        assert_eq!(head.method(), m);
        assert_eq!(head.method_bytes(), tok.as_bytes());
    }
    let head = parse(b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(head.method(), Method::Connect);
    assert_eq!(head.target(), "a.example:443");
}
