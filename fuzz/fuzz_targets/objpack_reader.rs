//! The object package reader, fed whole and in pieces of a size the input
//! chooses: the same files, bytes, end state and error either way; no
//! panic; every `Data` non-empty and within its file's declared size; every
//! name in the table passes `check_name` (cannot escape an output directory).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pagewire_objpack::{check_name, Error, Event, Limits, Reader, Step};

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    files: Vec<(String, Vec<u8>)>,
    ended: bool,
    end: Result<(), Error>,
}

fn limits() -> Limits {
    Limits {
        max_files: 64,
        max_name_bytes: 32,
        max_info_bytes: 2048,
        max_file_bytes: 1 << 16,
        max_total_bytes: 1 << 18,
    }
}

fn run(input: &[u8], piece: usize) -> Outcome {
    let mut r = Reader::new(limits());
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut ended = false;
    let chunks = input.chunks(piece.max(1)).chain(std::iter::once(&[][..]));
    for chunk in chunks {
        let mut rest = chunk;
        loop {
            match r.advance(rest) {
                Ok(Step {
                    event: None,
                    consumed,
                }) => {
                    assert_eq!(consumed, rest.len());
                    break;
                }
                Ok(Step {
                    consumed,
                    event: Some(e),
                }) => {
                    assert!(consumed <= rest.len());
                    rest = &rest[consumed..];
                    match e {
                        Event::Table => {
                            for e in r.entries() {
                                assert!(check_name(e.name.as_bytes(), 32).is_ok());
                            }
                        }
                        Event::FileStart { index } => {
                            assert_eq!(index, files.len());
                            files.push((r.entries()[index].name.clone(), Vec::new()));
                        }
                        Event::Data { index, bytes } => {
                            assert!(!bytes.is_empty());
                            let f = &mut files[index].1;
                            f.extend_from_slice(bytes);
                            assert!(f.len() as u64 <= r.entries()[index].size);
                        }
                        Event::FileEnd { index } => {
                            assert_eq!(files[index].1.len() as u64, r.entries()[index].size);
                        }
                        Event::End => ended = true,
                    }
                }
                Err(_) => {
                    return Outcome {
                        files,
                        ended,
                        end: r.finish(),
                    };
                }
            }
        }
    }
    Outcome {
        files,
        ended,
        end: r.finish(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = run(input, usize::MAX);
    let pieces = run(input, usize::from(first % 16) + 1);
    if whole.end.is_err() || pieces.end.is_err() {
        // The same error (its byte count may differ: `TrailingData` counts
        // what was left of the current input) after the same files.
        let kind = |o: &Outcome| o.end.as_ref().err().map(std::mem::discriminant);
        assert_eq!(kind(&whole), kind(&pieces));
        assert_eq!((&whole.files, whole.ended), (&pieces.files, pieces.ended));
    } else {
        assert_eq!(whole, pieces);
    }
});
