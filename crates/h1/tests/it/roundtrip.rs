//! Property tests: what the writers encode, the parsers give back; and no
//! input makes the parsers panic.
use bytes::BytesMut;
use pagewire_h1::*;
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}"
}

/// Field names that do not touch framing (those are added explicitly).
fn field_name() -> impl Strategy<Value = String> {
    token().prop_filter("framing fields are added explicitly", |n| {
        !["host", "content-length", "transfer-encoding"].contains(&n.to_ascii_lowercase().as_str())
    })
}

/// Field values: visible ASCII with inner spaces/tabs, no leading or
/// trailing whitespace (RFC 9110 §5.5 strips it).
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[!-~]([ \t!-~]{0,40}[!-~])?",]
}

fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        "/[!-~]{0,60}",
        Just("*".to_owned()),
        "[a-z]{1,10}\\.example:[0-9]{1,5}"
    ]
}

fn version() -> impl Strategy<Value = Version> {
    prop_oneof![Just(Version::Http10), Just(Version::Http11)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn request_encode_then_parse(
        method in prop_oneof![Just("GET".to_owned()), Just("HEAD".to_owned()), token()],
        target in target(),
        version in version(),
        headers in prop::collection::vec((field_name(), field_value()), 0..20),
        body in prop::collection::vec(any::<u8>(), 0..300),
        chunk_sizes in prop::collection::vec(1usize..64, 1..8),
        chunked in any::<bool>(),
        split in any::<prop::sample::Index>(),
    ) {
        let chunked = chunked && version == Version::Http11;
        let mut all: Vec<(String, Vec<u8>)> = vec![("Host".into(), b"example".to_vec())];
        all.extend(headers.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes())));
        if chunked {
            all.push(("Transfer-Encoding".into(), b"chunked".to_vec()));
        } else {
            all.push(("Content-Length".into(), body.len().to_string().into_bytes()));
        }
        let mut wire = Vec::new();
        write_request_head(&mut wire, &method, &target, version, all.iter().map(|(n, v)| (n.as_str(), v.as_slice()))).unwrap();
        if chunked {
            let mut rest = &body[..];
            let mut sizes = chunk_sizes.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap()).min(rest.len());
                write_chunk(&mut wire, &rest[..n]);
                rest = &rest[n..];
            }
            write_last_chunk(&mut wire, [("X-Trailer", "t")]).unwrap();
        } else {
            wire.extend_from_slice(&body);
        }
        wire.extend_from_slice(b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n");

        // Feed in two pieces split anywhere.
        let at = split.index(wire.len() + 1);
        let limits = Limits::default();
        let mut buf = BytesMut::from(&wire[..at]);
        let head = match parse_request(&mut buf, &limits).unwrap() {
            Some(h) => h,
            None => {
                buf.extend_from_slice(&wire[at..]);
                parse_request(&mut buf, &limits).unwrap().unwrap()
            }
        };
        let mut rest_fed = at >= wire.len() || buf.len() + head.raw().len() > at;
        prop_assert_eq!(head.method_bytes(), method.as_bytes());
        prop_assert_eq!(head.method(), Method::from_bytes(method.as_bytes()));
        prop_assert_eq!(head.target(), target.as_str());
        prop_assert_eq!(head.version(), version);
        let got: Vec<(String, Vec<u8>)> = head.iter().map(|(n, v)| (String::from_utf8(n.to_vec()).unwrap(), v.to_vec())).collect();
        prop_assert_eq!(&got, &all);
        let framing = head.body_framing().unwrap();
        let mut dec = Decoder::new(framing, &limits);
        let mut got_body = Vec::new();
        loop {
            match dec.decode(&mut buf).unwrap() {
                Decoded::Data(d) => got_body.extend_from_slice(&d),
                Decoded::Done => break,
                Decoded::NeedMore => {
                    prop_assert!(!rest_fed, "decoder wants more after all input");
                    buf.extend_from_slice(&wire[at..]);
                    rest_fed = true;
                }
            }
        }
        prop_assert_eq!(&got_body, &body);
        if chunked {
            prop_assert_eq!(&dec.trailers().unwrap()[..], b"X-Trailer: t\r\n\r\n");
        }
        if !rest_fed {
            buf.extend_from_slice(&wire[at..]);
        }
        let next = parse_request(&mut buf, &limits).unwrap().unwrap();
        prop_assert_eq!(next.target(), "/next");
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn response_encode_then_parse(
        status in 100u16..=999,
        version in version(),
        headers in prop::collection::vec((field_name(), field_value()), 0..20),
        body_len in 0u64..1_000_000,
        head_request in any::<bool>(),
    ) {
        let mut all: Vec<(String, Vec<u8>)> = headers.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes())).collect();
        all.push(("Content-Length".into(), body_len.to_string().into_bytes()));
        let mut wire = BytesMut::new();
        write_response_head(&mut wire, version, status, all.iter().map(|(n, v)| (n.as_str(), v.as_slice()))).unwrap();
        let method = if head_request { Method::Head } else { Method::Get };
        let head = parse_response(&mut wire, &Limits::default(), &method).unwrap().unwrap();
        prop_assert!(wire.is_empty());
        prop_assert_eq!(head.status(), status);
        prop_assert_eq!(head.reason(), reason_phrase(status).as_bytes());
        prop_assert_eq!(head.version(), version);
        let got: Vec<(String, Vec<u8>)> = head.iter().map(|(n, v)| (String::from_utf8(n.to_vec()).unwrap(), v.to_vec())).collect();
        prop_assert_eq!(&got, &all);
        let expected = if head_request || (100..200).contains(&status) || status == 204 || status == 304 || body_len == 0 {
            BodyFraming::Empty
        } else {
            BodyFraming::Length(body_len)
        };
        prop_assert_eq!(head.body_framing(), expected);
    }

    #[test]
    fn chunked_encode_then_decode(
        pieces in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..10),
        feed in 1usize..50,
    ) {
        let mut wire = Vec::new();
        let mut enc = ChunkedEncoder::new();
        for p in &pieces {
            enc.chunk(&mut wire, p).unwrap();
        }
        enc.finish(&mut wire, std::iter::empty::<(&str, &str)>()).unwrap();
        let mut dec = Decoder::new(BodyFraming::Chunked, &Limits::default());
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        let mut done = false;
        for piece in wire.chunks(feed) {
            buf.extend_from_slice(piece);
            loop {
                match dec.decode(&mut buf).unwrap() {
                    Decoded::Data(d) => body.extend_from_slice(&d),
                    Decoded::NeedMore => break,
                    Decoded::Done => { done = true; break; }
                }
            }
        }
        prop_assert!(done);
        prop_assert!(buf.is_empty());
        prop_assert_eq!(body, pieces.concat());
    }

    /// Arbitrary bytes: no panic, and `Ok(None)` consumes nothing.
    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..400)) {
        let limits = Limits::default();
        let mut buf = BytesMut::from(&input[..]);
        let before = buf.len();
        match parse_request(&mut buf, &limits) {
            Ok(None) => prop_assert_eq!(buf.len(), before),
            Ok(Some(h)) => {
                let mut d = Decoder::new(h.body_framing().unwrap(), &limits);
                while let Ok(Decoded::Data(_)) = d.decode(&mut buf) {}
            }
            Err(e) => prop_assert!(matches!(e.status(), 400 | 414 | 431 | 501 | 505)),
        }
        let mut buf = BytesMut::from(&input[..]);
        let _ = parse_response(&mut buf, &limits, &Method::Get);
        let mut buf = BytesMut::from(&input[..]);
        let mut d = Decoder::new(BodyFraming::Chunked, &limits);
        while let Ok(Decoded::Data(_)) = d.decode(&mut buf) {}
    }
}

#[test]
fn writers_refuse_to_split_messages() {
    let mut out = Vec::new();
    for (n, v) in [
        ("X", &b"a\r\nInjected: 1"[..]),
        ("X", b"a\nb"),
        ("X", b"a\0"),
        ("Bad Name", b"v"),
        ("", b"v"),
    ] {
        let e = write_response_head(&mut out, Version::Http11, 200, [(n, v)]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidFieldToWrite);
        assert!(out.is_empty(), "nothing appended on error");
    }
    assert!(write_request_head(&mut out, "GET", "/a b", Version::Http11, [("Host", "a")]).is_err());
    assert!(write_request_head(&mut out, "G T", "/", Version::Http11, [("Host", "a")]).is_err());
    assert!(
        write_request_head(&mut out, "GET", "/", Version::Http11, [("Host", "a\r\n")]).is_err()
    );
    assert!(out.is_empty());
    assert!(write_status_line(&mut out, Version::Http11, 99).is_err());
    assert!(write_status_line(&mut out, Version::Http11, 1000).is_err());
    write_header_u64(&mut out, "Content-Length", 18446744073709551615).unwrap();
    assert_eq!(out, b"Content-Length: 18446744073709551615\r\n");
}

#[test]
fn reason_phrases() {
    assert_eq!(reason_phrase(200), "OK");
    assert_eq!(reason_phrase(304), "Not Modified");
    assert_eq!(reason_phrase(414), "URI Too Long");
    assert_eq!(reason_phrase(431), "Request Header Fields Too Large");
    assert_eq!(reason_phrase(505), "HTTP Version Not Supported");
    assert_eq!(reason_phrase(799), "");
    let mut out = Vec::new();
    write_status_line(&mut out, Version::Http10, 416).unwrap();
    assert_eq!(out, b"HTTP/1.0 416 Range Not Satisfiable\r\n");
}
