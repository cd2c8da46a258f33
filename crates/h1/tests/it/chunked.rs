//! Body decoder: chunked rules (RFC 9112 §7.1), Content-Length, close
//! delimited, EOF handling.
use bytes::{Bytes, BytesMut};
use pagewire_h1::*;

/// Decodes everything in `input`; returns the body, the trailers and what is left.
fn decode_all(
    framing: BodyFraming,
    input: &[u8],
    limits: &Limits,
) -> Result<(Vec<u8>, Option<Bytes>, BytesMut), Error> {
    let mut buf = BytesMut::from(input);
    let mut d = Decoder::new(framing, limits);
    let mut body = Vec::new();
    loop {
        match d.decode(&mut buf)? {
            Decoded::Data(b) => {
                assert!(!b.is_empty());
                body.extend_from_slice(&b)
            }
            Decoded::Done => return Ok((body, d.trailers().cloned(), buf)),
            Decoded::NeedMore => return Err(ErrorKind::IncompleteBody.into()),
        }
    }
}

fn chunked_err(input: &[u8]) -> ErrorKind {
    decode_all(BodyFraming::Chunked, input, &Limits::default())
        .unwrap_err()
        .kind()
}

#[test]
fn chunked_basic_with_extensions_and_trailers() {
    let input = b"5;name=value;quoted=\"a b\"\r\nhello\r\n6 ; ext\r\n world\r\n0\r\nExpires: never\r\nX-Sum: 1\r\n\r\nNEXT";
    let (body, trailers, rest) =
        decode_all(BodyFraming::Chunked, input, &Limits::default()).unwrap();
    assert_eq!(body, b"hello world");
    assert_eq!(
        trailers.unwrap(),
        &b"Expires: never\r\nX-Sum: 1\r\n\r\n"[..]
    );
    assert_eq!(&rest[..], b"NEXT");
}

#[test]
fn chunked_trailer_fields_are_readable() {
    let mut buf = BytesMut::from(&b"0\r\nA: 1\r\nB: two\r\n\r\n"[..]);
    let mut d = Decoder::new(BodyFraming::Chunked, &Limits::default());
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Done);
    let fields = d.trailer_fields();
    assert_eq!(fields.len(), 2);
    assert_eq!(&fields[1].0[..], b"B");
    assert_eq!(&fields[1].1[..], b"two");
}

#[test]
fn chunked_hex_sizes_upper_and_lower() {
    let input = b"A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n";
    let (body, _, _) = decode_all(BodyFraming::Chunked, input, &Limits::default()).unwrap();
    assert_eq!(body.len(), 20);
}

#[test]
fn chunk_size_overflow_is_400() {
    let e = decode_all(
        BodyFraming::Chunked,
        b"10000000000000000\r\n",
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ChunkSizeOverflow);
    assert_eq!(e.status(), 400);
    // The largest u64 is a valid size (it is just never completed).
    let mut buf = BytesMut::from(&b"ffffffffffffffff\r\nabc"[..]);
    let mut d = Decoder::new(BodyFraming::Chunked, &Limits::default());
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Data("abc".into()));
    // Leading zeros do not count towards overflow.
    let (body, _, _) = decode_all(
        BodyFraming::Chunked,
        b"000000000000000000001\r\nx\r\n0\r\n\r\n",
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(body, b"x");
}

#[test]
fn invalid_chunk_sizes_are_400() {
    for input in [
        &b"\r\n"[..],
        b"g\r\n",
        b"-1\r\n",
        b"+1\r\n",
        b" 1\r\n",
        b"0x1\r\n",
        b"1 2\r\n",
    ] {
        let e = decode_all(BodyFraming::Chunked, input, &Limits::default()).unwrap_err();
        assert_eq!(e.status(), 400, "{:?}", String::from_utf8_lossy(input));
        assert!(
            matches!(e.kind(), ErrorKind::InvalidChunkSize),
            "{:?}: {e:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn bare_cr_in_chunk_line_is_400() {
    assert_eq!(
        chunked_err(b"5;a\rb\r\nhello\r\n0\r\n\r\n"),
        ErrorKind::BareCr
    );
}

#[test]
fn bare_lf_in_chunk_framing_is_400() {
    assert_eq!(
        chunked_err(b"5\nhello\r\n0\r\n\r\n"),
        ErrorKind::InvalidChunkTerminator
    );
    assert_eq!(
        chunked_err(b"5\r\nhello\n0\r\n\r\n"),
        ErrorKind::InvalidChunkTerminator
    );
    assert_eq!(
        chunked_err(b"5\r\nhelloXX0\r\n\r\n"),
        ErrorKind::InvalidChunkTerminator
    );
    assert_eq!(chunked_err(b"0\r\nA: 1\n\r\n"), ErrorKind::InvalidTrailer);
}

#[test]
fn control_bytes_in_chunk_extension_are_400() {
    assert_eq!(
        chunked_err(b"5;a=\0\r\nhello\r\n0\r\n\r\n"),
        ErrorKind::InvalidChunkExtension
    );
}

#[test]
fn chunk_extension_over_4k_is_400() {
    let mut input = b"5;".to_vec();
    input.extend(std::iter::repeat_n(b'x', 5000));
    // Detected before the line ends.
    assert_eq!(chunked_err(&input), ErrorKind::ChunkLineTooLong);
    input.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_eq!(chunked_err(&input), ErrorKind::ChunkLineTooLong);
    // Just under the limit is fine.
    let mut ok = b"5;".to_vec();
    ok.extend(std::iter::repeat_n(b'x', 4096 - 3));
    ok.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_eq!(
        decode_all(BodyFraming::Chunked, &ok, &Limits::default())
            .unwrap()
            .0,
        b"hello"
    );
}

#[test]
fn trailers_over_limit_are_431() {
    let mut input = b"0\r\n".to_vec();
    for i in 0..1000 {
        input.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    let e = decode_all(BodyFraming::Chunked, &input, &Limits::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TrailersTooLarge);
    assert_eq!(e.status(), 431);
}

#[test]
fn too_many_trailers_are_431() {
    let mut input = b"0\r\n".to_vec();
    for i in 0..40 {
        input.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    input.extend_from_slice(b"\r\n");
    let e = decode_all(BodyFraming::Chunked, &input, &Limits::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooManyTrailers);
    assert_eq!(e.status(), 431);
}

#[test]
fn malformed_trailer_is_400() {
    assert_eq!(
        chunked_err(b"0\r\nNo colon here\r\n\r\n"),
        ErrorKind::InvalidTrailer
    );
    assert_eq!(
        chunked_err(b"0\r\nA : b\r\n\r\n"),
        ErrorKind::InvalidTrailer
    );
}

#[test]
fn content_length_body_leaves_next_request() {
    let (body, _, rest) =
        decode_all(BodyFraming::Length(5), b"helloGET", &Limits::default()).unwrap();
    assert_eq!(body, b"hello");
    assert_eq!(&rest[..], b"GET");
}

#[test]
fn empty_body_is_done_at_once() {
    let mut buf = BytesMut::from(&b"GET"[..]);
    let mut d = Decoder::new(BodyFraming::Empty, &Limits::default());
    assert!(d.is_done());
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Done);
    assert_eq!(&buf[..], b"GET");
}

#[test]
fn close_delimited_ends_at_eof() {
    let mut buf = BytesMut::from(&b"abc"[..]);
    let mut d = Decoder::new(BodyFraming::CloseDelimited, &Limits::default());
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::Data("abc".into()));
    assert_eq!(d.decode(&mut buf).unwrap(), Decoded::NeedMore);
    buf.extend_from_slice(b"de");
    assert_eq!(d.decode_eof(&mut buf).unwrap(), Decoded::Data("de".into()));
    assert_eq!(d.decode_eof(&mut buf).unwrap(), Decoded::Done);
}

#[test]
fn eof_inside_length_or_chunked_body_is_incomplete() {
    let mut buf = BytesMut::from(&b"abc"[..]);
    let mut d = Decoder::new(BodyFraming::Length(5), &Limits::default());
    assert_eq!(d.decode_eof(&mut buf).unwrap(), Decoded::Data("abc".into()));
    assert_eq!(d.remaining(), Some(2));
    assert_eq!(
        d.decode_eof(&mut buf).unwrap_err().kind(),
        ErrorKind::IncompleteBody
    );
    let mut buf = BytesMut::from(&b"5\r\nab"[..]);
    let mut d = Decoder::new(BodyFraming::Chunked, &Limits::default());
    assert_eq!(d.decode_eof(&mut buf).unwrap(), Decoded::Data("ab".into()));
    assert_eq!(
        d.decode_eof(&mut buf).unwrap_err().kind(),
        ErrorKind::IncompleteBody
    );
}

#[test]
fn chunked_decodes_when_fed_byte_by_byte() {
    let input = b"5;ext=\"q\"\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nT: 1\r\n\r\nREST";
    let mut d = Decoder::new(BodyFraming::Chunked, &Limits::default());
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    let mut done = false;
    for &b in input.iter() {
        buf.extend_from_slice(&[b]);
        loop {
            match d.decode(&mut buf).unwrap() {
                Decoded::Data(x) => body.extend_from_slice(&x),
                Decoded::NeedMore => break,
                Decoded::Done => {
                    done = true;
                    break;
                }
            }
        }
    }
    assert!(done);
    assert_eq!(body, b"hello world");
    assert_eq!(&buf[..], b"REST");
    assert_eq!(d.trailers().unwrap(), &b"T: 1\r\n\r\n"[..]);
}

#[test]
fn chunked_encoder_output_decodes() {
    let mut out = Vec::new();
    let mut enc = ChunkedEncoder::new();
    enc.chunk(&mut out, b"hello ").unwrap();
    enc.chunk(&mut out, b"").unwrap();
    enc.chunk(&mut out, &[b'x'; 300]).unwrap();
    enc.finish(&mut out, [("X-Checksum", "abc")]).unwrap();
    assert!(enc.chunk(&mut out, b"late").is_err());
    assert!(out.starts_with(b"6\r\nhello \r\n12c\r\n"));
    let (body, trailers, rest) =
        decode_all(BodyFraming::Chunked, &out, &Limits::default()).unwrap();
    assert_eq!(body.len(), 306);
    assert_eq!(trailers.unwrap(), &b"X-Checksum: abc\r\n\r\n"[..]);
    assert!(rest.is_empty());
}
