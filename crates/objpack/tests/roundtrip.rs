//! Property tests: any valid table and contents come back byte-exact from a
//! package fed to the reader split at every point; any prefix of a package
//! fails naming the file it cut.

use pagewire_objpack::{Attributes, Entry, Error, Event, Limits, Manifest, Reader, Step};
use proptest::prelude::*;

#[derive(Debug, Default, PartialEq)]
struct Unpacked {
    files: Vec<(String, Vec<u8>)>,
    ended: bool,
}

/// Feeds `pieces` of a package in turn; returns what came out and `finish`.
fn unpack(pieces: &[&[u8]]) -> (Unpacked, Result<(), Error>) {
    let mut r = Reader::new(Limits::default());
    let mut out = Unpacked::default();
    let mut open: Option<usize> = None;
    let mut handle = |r: &Reader, e: Event<'_>, out: &mut Unpacked| match e {
        Event::Table => {}
        Event::FileStart { index } => {
            assert_eq!(open, None);
            open = Some(index);
            out.files
                .push((r.entries()[index].name.clone(), Vec::new()));
        }
        Event::Data { index, bytes } => {
            assert_eq!(open, Some(index));
            assert!(!bytes.is_empty());
            out.files.last_mut().unwrap().1.extend_from_slice(bytes);
        }
        Event::FileEnd { index } => {
            assert_eq!(open.take(), Some(index));
            assert_eq!(out.files[index].1.len() as u64, r.entries()[index].size);
        }
        Event::End => out.ended = true,
    };
    for piece in pieces.iter().copied().chain([&[][..]]) {
        let mut input = piece;
        loop {
            match r.advance(input) {
                Ok(Step {
                    event: None,
                    consumed,
                }) => {
                    assert_eq!(consumed, input.len());
                    break;
                }
                Ok(Step {
                    consumed,
                    event: Some(e),
                }) => {
                    input = &input[consumed..];
                    handle(&r, e, &mut out);
                }
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = r.finish();
    (out, end)
}

fn name_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9_.-]{1,12}", 1..4)
        .prop_map(|segs| segs.join("/"))
        .prop_filter("a name the reader accepts", |n| {
            pagewire_objpack::check_name(n.as_bytes(), 1024).is_ok()
        })
}

fn files_strategy() -> impl Strategy<Value = Vec<(String, Vec<u8>, Attributes)>> {
    let attrs = (
        any::<bool>(),
        any::<bool>(),
        "[ -~]{0,64}",
        "[!-~]{0,48}",
        any::<u64>(),
    )
        .prop_map(|(text, read_only, media_type, etag, lm)| Attributes {
            text,
            executable: false,
            read_only,
            media_type,
            etag,
            last_modified: (lm != 0).then_some(lm),
        });
    prop::collection::vec(
        (
            name_strategy(),
            prop::collection::vec(any::<u8>(), 0..300),
            attrs,
        ),
        0..12,
    )
    .prop_map(|v| {
        // Unique names; no name is a directory of another.
        let mut kept: Vec<(String, Vec<u8>, Attributes)> = Vec::new();
        for f in v {
            // Case-insensitively: names equal but for case collide.
            let a = f.0.to_lowercase();
            let clash = kept.iter().any(|k| {
                let k = k.0.to_lowercase();
                k == a || k.starts_with(&format!("{a}/")) || a.starts_with(&format!("{k}/"))
            });
            if !clash {
                kept.push(f);
            }
        }
        kept
    })
}

fn build(files: &[(String, Vec<u8>, Attributes)]) -> (Manifest, Vec<u8>) {
    let entries = files
        .iter()
        .map(|(n, b, a)| Entry {
            name: n.clone(),
            size: b.len() as u64,
            attrs: a.clone(),
        })
        .collect();
    let m = Manifest::new(entries, &Limits::default()).expect("valid table");
    let pkg = m.assemble(files.iter().map(|f| f.1.as_slice()));
    assert_eq!(pkg.len() as u64, m.package_bytes());
    (m, pkg)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip_at_every_split(files in files_strategy()) {
        let (m, pkg) = build(&files);
        let want: Vec<(String, Vec<u8>)> = files.iter().map(|f| (f.0.clone(), f.1.clone())).collect();
        for cut in 0..=pkg.len() {
            let (got, end) = unpack(&[&pkg[..cut], &pkg[cut..]]);
            prop_assert_eq!(end, Ok(()));
            prop_assert!(got.ended);
            prop_assert_eq!(&got.files, &want);
        }
        // One byte at a time, and the table matches what was written.
        let mut r = Reader::new(Limits::default());
        let mut table_seen = false;
        for b in &pkg {
            let mut input = std::slice::from_ref(b);
            while let Step { consumed, event: Some(e) } = r.advance(input).unwrap() {
                input = &input[consumed..];
                if e == Event::Table {
                    prop_assert_eq!(r.entries(), m.entries());
                    table_seen = true;
                }
            }
        }
        prop_assert!(table_seen);
        while let Step { event: Some(_), .. } = r.advance(&[]).unwrap() {}
        prop_assert!(r.is_done());
    }

    #[test]
    fn every_prefix_fails_naming_the_cut_file(files in files_strategy()) {
        let (m, pkg) = build(&files);
        let head = m.head().len();
        for cut in 0..pkg.len() {
            let (got, end) = unpack(&[&pkg[..cut]]);
            let err = end.expect_err("prefix must not finish");
            if cut < head {
                prop_assert_eq!(err, Error::TruncatedHeader);
                continue;
            }
            // Files wholly before the cut are complete; the named one is the
            // first not complete.
            let mut at = head;
            let mut first_incomplete = None;
            for (i, f) in files.iter().enumerate() {
                if at + f.1.len() > cut || (f.1.is_empty() && at == cut && got.files.len() <= i) {
                    first_incomplete = Some(i);
                    break;
                }
                at += f.1.len();
            }
            let i = first_incomplete.expect("some file is cut");
            prop_assert_eq!(err.file(), Some(files[i].0.as_str()));
            for (j, f) in got.files.iter().enumerate().take(i) {
                prop_assert_eq!(&f.1, &files[j].1);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600), split in any::<prop::sample::Index>()) {
        let cut = split.index(bytes.len() + 1);
        let _ = unpack(&[&bytes[..cut], &bytes[cut..]]);
    }
}
