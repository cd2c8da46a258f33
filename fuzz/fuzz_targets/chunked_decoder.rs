//! The chunked body decoder, fed whole and in pieces of a size the input
//! chooses: same body, trailers, leftover bytes and error either way; no
//! panic; every `Data` non-empty.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use pagewire_h1::{BodyFraming, Decoded, Decoder, ErrorKind, Limits};

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    body: Vec<u8>,
    done: bool,
    trailers: Option<Vec<u8>>,
    rest: Vec<u8>,
    error: Option<ErrorKind>,
}

fn limits() -> Limits {
    Limits {
        max_chunk_line_bytes: 64,
        max_trailer_bytes: 128,
        max_trailers: 4,
        ..Limits::default()
    }
}

fn run(input: &[u8], piece: usize) -> Outcome {
    let mut dec = Decoder::new(BodyFraming::Chunked, &limits());
    let mut buf = BytesMut::new();
    let mut body = Vec::new();
    let mut fed = 0;
    loop {
        match dec.decode(&mut buf) {
            Ok(Decoded::Data(d)) => {
                assert!(!d.is_empty());
                body.extend_from_slice(&d);
            }
            Ok(Decoded::Done) => {
                return Outcome {
                    body,
                    done: true,
                    trailers: dec.trailers().map(|t| t.to_vec()),
                    rest: buf.to_vec(),
                    error: None,
                }
            }
            Ok(Decoded::NeedMore) => {
                if fed == input.len() {
                    return Outcome {
                        body,
                        done: false,
                        trailers: None,
                        rest: buf.to_vec(),
                        error: None,
                    };
                }
                let n = piece.min(input.len() - fed);
                buf.extend_from_slice(&input[fed..fed + n]);
                fed += n;
            }
            Err(e) => {
                return Outcome {
                    body,
                    done: false,
                    trailers: None,
                    rest: Vec::new(),
                    error: Some(e.kind()),
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = run(input, usize::MAX);
    let pieces = run(input, usize::from(first % 16) + 1);
    // Unconsumed bytes after Done may differ only in what was not yet fed.
    if whole.done && pieces.done {
        assert!(whole.rest.starts_with(&pieces.rest));
        assert_eq!(
            (&whole.body, &whole.trailers),
            (&pieces.body, &pieces.trailers)
        );
    } else {
        assert_eq!(whole, pieces);
    }
});
