//! What httparse itself does with each framing-rule input, pinned so that an
//! httparse upgrade that becomes more lenient is noticed. The codec's own
//! checks (framing.rs beside this file) cover everything marked "accepted" here.

fn httparse_request(input: &[u8]) -> Result<bool, httparse::Error> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut req = httparse::Request::new(&mut headers);
    req.parse(input).map(|s| s.is_complete())
}

#[test]
fn httparse_rejects_these_itself() {
    for (input, err) in [
        (
            &b"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n"[..],
            httparse::Error::HeaderValue,
        ),
        (
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            httparse::Error::HeaderName,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
            httparse::Error::HeaderName,
        ),
        (b"GET / HTTP/2.0\r\n\r\n", httparse::Error::Version),
        (b"GET / HTTP/1.2\r\n\r\n", httparse::Error::Version),
        (
            b"GET / HTTP/1.1\r\nX: \x00\r\n\r\n",
            httparse::Error::HeaderValue,
        ),
    ] {
        assert_eq!(
            httparse_request(input),
            Err(err),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn httparse_accepts_these_so_the_codec_checks_them() {
    for input in [
        &b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        // Bare LF line ends: accepted by httparse and by the codec (RFC 9112 §2.2).
        b"GET / HTTP/1.1\nHost: a\n\n",
    ] {
        assert_eq!(
            httparse_request(input),
            Ok(true),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    // Chunk sizes: httparse's own helper is not used by the decoder; it
    // rejects overflow too.
    assert!(httparse::parse_chunk_size(b"10000000000000000\r\n").is_err());
}
