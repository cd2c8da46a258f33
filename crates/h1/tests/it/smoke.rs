//! Quick end-to-end checks of the public API.
use bytes::BytesMut;
use pagewire_h1::*;

#[test]
fn get_request_parses_zero_copy() {
    let mut buf = BytesMut::from(
        &b"GET /index.html?x=1 HTTP/1.1\r\nHost: example\r\nAccept: */*\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n"[..],
    );
    let head = parse_request(&mut buf, &Limits::default())
        .unwrap()
        .unwrap();
    assert_eq!(head.method(), Method::Get);
    assert_eq!(head.method_bytes(), b"GET");
    assert_eq!(head.target(), "/index.html?x=1");
    assert_eq!(head.version(), Version::Http11);
    assert_eq!(head.header("host"), Some(&b"example"[..]));
    assert_eq!(head.header("HOST"), Some(&b"example"[..]));
    assert_eq!(head.header_count(), 3);
    assert!(head.wants_keep_alive());
    assert_eq!(head.body_framing().unwrap(), BodyFraming::Empty);
    let second = parse_request(&mut buf, &Limits::default())
        .unwrap()
        .unwrap();
    assert_eq!(second.version(), Version::Http10);
    assert!(!second.wants_keep_alive());
    assert!(buf.is_empty());
    assert_eq!(
        parse_request(&mut buf, &Limits::default())
            .unwrap()
            .map(|h| h.target().to_owned()),
        None
    );
}

#[test]
fn response_roundtrip() {
    let mut out = Vec::new();
    write_response_head(
        &mut out,
        Version::Http11,
        200,
        [("Content-Length", "5"), ("Server", "pagewire")],
    )
    .unwrap();
    out.extend_from_slice(b"hello");
    let mut buf = BytesMut::from(&out[..]);
    let head = parse_response(&mut buf, &Limits::default(), &Method::Get)
        .unwrap()
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.reason(), b"OK");
    assert_eq!(head.body_framing(), BodyFraming::Length(5));
    assert_eq!(response_framing(&head, &Method::Head), BodyFraming::Empty);
    let mut d = Decoder::new(head.body_framing(), &Limits::default());
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Data("hello".into()));
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Done);
}

#[test]
fn path_and_query() {
    let limits = Limits::default();
    let parse = |t: &str| {
        let mut buf = BytesMut::from(format!("GET {t} HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes());
        parse_request(&mut buf, &limits).unwrap().unwrap()
    };
    let h = parse("/a/b.gif?x=1&y=2");
    assert_eq!((h.path(), h.query()), ("/a/b.gif", Some("x=1&y=2")));
    let h = parse("/a");
    assert_eq!((h.path(), h.query()), ("/a", None));
    let h = parse("/a?");
    assert_eq!((h.path(), h.query()), ("/a", Some("")));
    let h = parse("/a#frag");
    assert_eq!((h.path(), h.query()), ("/a", None));
    let h = parse("*");
    assert_eq!((h.path(), h.query()), ("*", None));
}

#[test]
fn expect_continue_and_request_writer() {
    let limits = Limits::default();
    let mut out = BytesMut::new();
    write_request_head(
        &mut out,
        "PUT",
        "/up",
        Version::Http11,
        [
            ("Host", "a"),
            ("Expect", "100-continue"),
            ("Content-Length", "3"),
        ],
    )
    .unwrap();
    assert_eq!(
        &out[..],
        b"PUT /up HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"
    );
    let head = parse_request(&mut out, &limits).unwrap().unwrap();
    assert!(head.expects_continue());
    assert_eq!(head.content_length(), Some(3));
    assert_eq!(head.body_framing().unwrap(), BodyFraming::Length(3));
    let mut out = Vec::new();
    write_request_head(
        &mut out,
        "GET",
        "/",
        Version::Http10,
        std::iter::empty::<(&str, &str)>(),
    )
    .unwrap();
    assert_eq!(out, b"GET / HTTP/1.0\r\n\r\n");
}

/// `header` skips the scan when no field name has the asked name's length;
/// it must still find every field a linear scan finds, whatever the
/// length and first letter (one bit of 64 stands for many names).
#[test]
fn header_lookup_agrees_with_a_linear_scan_for_every_name_length() {
    let long_a = "X-".to_owned() + &"a".repeat(70);
    let long_b = "X-".to_owned() + &"b".repeat(61);
    let text = format!(
        "GET / HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n{long_a}: 1\r\n{long_b}: 2\r\nE: 3\r\nRange: bytes=0-1\r\n\r\n"
    );
    let mut buf = BytesMut::from(text.as_bytes());
    let head = parse_request(&mut buf, &Limits::default())
        .unwrap()
        .unwrap();
    let mut asked: Vec<String> = head
        .iter()
        .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap().to_uppercase())
        .collect();
    // Absent names of present and absent lengths, short and long.
    asked.extend(["Hosx", "Accept-Encoding", "If-None-Match", "F", "Rang"].map(String::from));
    asked.push("X-".to_owned() + &"c".repeat(70));
    asked.push("X-".to_owned() + &"b".repeat(62));
    for name in &asked {
        let scan: Vec<&[u8]> = head
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| v)
            .collect();
        let lookup: Vec<&[u8]> = head.headers(name).collect();
        assert_eq!(lookup, scan, "{name}");
        assert_eq!(head.header(name), scan.first().copied(), "{name}");
    }
    assert_eq!(head.header(&long_a), Some(&b"1"[..]));
    assert_eq!(head.header(&long_b.to_lowercase()), Some(&b"2"[..]));
    assert_eq!(head.header("e"), Some(&b"3"[..]));
    assert_eq!(head.header("hosx"), None);
}
