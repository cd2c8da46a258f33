//! `unpack_to_dir` against hostile packages and planted links: nothing is ever written outside the output
//! directory, names up to 255 bytes unpack, and names that would collide
//! on some file system are refused before anything is written.

use std::os::unix::fs::symlink;
use std::path::Path;

use pagewire_objpack::unpack::unpack_to_dir;
use pagewire_objpack::{
    crc32, Attributes, Entry, Error, Limits, Manifest, NameError, Reader, Step,
};

fn package(files: &[(&str, &[u8])]) -> Vec<u8> {
    let entries = files
        .iter()
        .map(|(n, b)| Entry {
            name: n.to_string(),
            size: b.len() as u64,
            attrs: Attributes::default(),
        })
        .collect();
    let m = Manifest::new(entries, &Limits::default()).unwrap();
    m.assemble(files.iter().map(|(_, b)| *b))
}

/// A package built byte by byte, bypassing the writer's checks (a hostile
/// packer).
fn raw_package(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut info = (files.len() as u32).to_be_bytes().to_vec();
    for (n, _) in files {
        info.extend_from_slice(n.as_bytes());
        info.push(0);
    }
    for (_, b) in files {
        info.extend_from_slice(&(b.len() as u64).to_be_bytes());
    }
    for _ in files {
        info.extend_from_slice(&[0u8; 128]);
    }
    let mut p = b"OBJP".to_vec();
    p.extend_from_slice(&1u16.to_be_bytes());
    p.extend_from_slice(&0u16.to_be_bytes());
    p.extend_from_slice(&(info.len() as u32).to_be_bytes());
    p.extend_from_slice(&crc32(&info).to_be_bytes());
    p.extend_from_slice(&info);
    for (_, b) in files {
        p.extend_from_slice(b);
    }
    p
}

fn unpack(pkg: &[u8], out: &Path) -> Result<usize, pagewire_objpack::unpack::UnpackError> {
    unpack_to_dir(pkg, out, Limits::default(), |_, _| {})
}

#[test]
fn planted_links_are_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    // At the old temporary name, at the final name, and at every name the
    // new scheme could pick for this process first.
    symlink(&victim, out.join(".index.html.objp-part")).unwrap();
    symlink(&victim, out.join("index.html")).unwrap();
    for n in 1..=3 {
        symlink(
            &victim,
            out.join(format!(".objp-part.{}.{n}", std::process::id())),
        )
        .unwrap();
    }
    let n = unpack(&package(&[("index.html", b"<html>")]), &out).unwrap();
    assert_eq!(n, 1);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let meta = std::fs::symlink_metadata(out.join("index.html")).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link was replaced, not followed"
    );
    assert_eq!(std::fs::read(out.join("index.html")).unwrap(), b"<html>");
}

#[test]
fn a_linked_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, out.join("img")).unwrap();
    let err = unpack(&package(&[("img/a.gif", b"GIF")]), &out).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn names_up_to_255_bytes_unpack() {
    let tmp = tempfile::tempdir().unwrap();
    for len in [245, 250, 255] {
        let name = "n".repeat(len);
        let deep = format!("{}/{}", "d".repeat(255), name);
        let n = unpack(&package(&[(&name, b"x"), (&deep, b"y")]), tmp.path()).unwrap();
        assert_eq!(n, 2, "{len}");
        assert_eq!(std::fs::read(tmp.path().join(&name)).unwrap(), b"x");
        assert_eq!(std::fs::read(tmp.path().join(&deep)).unwrap(), b"y");
    }
}

#[test]
fn temp_scheme_windows_and_case_collisions_are_refused_before_writing() {
    type Files<'a> = &'a [(&'a str, &'a [u8])];
    let cases: &[(Files, &str)] = &[
        (&[(".objp-part.1.1", b"a"), ("a", b"b")], "temporary name"),
        (&[("a", b"1"), ("A", b"2")], "differ only in case"),
        (&[("img/x", b"1"), ("IMG", b"2")], "directory of another"),
        (&[("CON", b"1")], "reserves"),
        (&[("a.txt:evil", b"1")], "NTFS stream"),
        (&[("b?", b"1")], "Windows refuses"),
    ];
    for (files, what) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let err = unpack(&raw_package(files), tmp.path()).unwrap_err();
        assert!(err.to_string().contains(what), "{files:?}: {err}");
        assert!(
            err.incomplete_file().is_none(),
            "{files:?}: not an incomplete file"
        );
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "{files:?}"
        );
    }
    // The writer refuses them too.
    let e = Manifest::new(
        vec![
            Entry {
                name: "a".into(),
                size: 0,
                attrs: Attributes::default(),
            },
            Entry {
                name: "A".into(),
                size: 0,
                attrs: Attributes::default(),
            },
        ],
        &Limits::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, Error::CaseCollision { .. }), "{e:?}");
    assert_eq!(
        pagewire_objpack::check_name(b"x/.objp-part", 64),
        Err(NameError::TempName)
    );
}

#[test]
fn finish_with_events_not_taken_is_an_error() {
    let pkg = package(&[("a", b"hello")]);
    // Every byte fed, but the caller stops before FileEnd and End.
    let mut r = Reader::new(Limits::default());
    let mut rest = &pkg[..];
    // Bounded: a few events.
    loop {
        let Step { consumed, event } = r.advance(rest).unwrap();
        rest = &rest[consumed..];
        if matches!(event, Some(pagewire_objpack::Event::Data { .. })) {
            break;
        }
    }
    assert!(rest.is_empty());
    assert_eq!(r.finish(), Err(Error::Undrained));
    // Drained to the end: Ok.
    let mut r = Reader::new(Limits::default());
    let mut rest = &pkg[..];
    loop {
        let Step { consumed, event } = r.advance(rest).unwrap();
        rest = &rest[consumed..];
        if event.is_none() {
            break;
        }
    }
    assert_eq!(r.finish(), Ok(()));
    // A truncated package names the incomplete file.
    let tmp = tempfile::tempdir().unwrap();
    let err = unpack(&pkg[..pkg.len() - 2], tmp.path()).unwrap_err();
    assert_eq!(err.incomplete_file(), Some("a"));
}

/// The old temporary name of `a` is an ordinary name now (temporary files
/// are `.objp-part.PID.N`): a package holding both `.a.objp-part` and `a`
/// unpacks both, each with its own bytes, and leaves no temporary file.
#[test]
fn the_old_temp_name_and_its_file_both_unpack() {
    let tmp = tempfile::tempdir().unwrap();
    let n = unpack(
        &package(&[(".a.objp-part", b"one"), ("a", b"two")]),
        tmp.path(),
    )
    .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        std::fs::read(tmp.path().join(".a.objp-part")).unwrap(),
        b"one"
    );
    assert_eq!(std::fs::read(tmp.path().join("a")).unwrap(), b"two");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
}
