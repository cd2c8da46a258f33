//! `pagewire pack` / `pagewire unpack`: byte-exact round trips of the
//! Microscape page and of a nested page directory; a truncated package fails
//! naming the incomplete file and keeps every earlier one.

use std::path::Path;
use std::process::{Command, Stdio};

fn pagewire() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pagewire"))
}

fn ok(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every regular file under `dir`, relative path -> bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn microscape_round_trip_is_byte_exact() {
    let t = tempfile::tempdir().unwrap();
    let site = t.path().join("site");
    ok(pagewire()
        .args(["site", "microscape", "--out"])
        .arg(&site)
        .output()
        .unwrap());
    let pkg = t.path().join("page.objp");
    let out = ok(pagewire()
        .args(["pack", "--page", "/index.html", "--root"])
        .arg(&site)
        .arg("--out")
        .arg(&pkg)
        .output()
        .unwrap());
    assert!(String::from_utf8_lossy(&out.stderr).contains("packed 43 files"));
    let un = t.path().join("un");
    ok(pagewire()
        .arg("unpack")
        .arg(&pkg)
        .arg("--out")
        .arg(&un)
        .output()
        .unwrap());
    let mut want = tree(&site);
    want.remove("MICROSCAPE.txt"); // not embedded by the page
    assert_eq!(tree(&un), want);
}

#[test]
fn nested_paths_css_urls_and_stdin() {
    let t = tempfile::tempdir().unwrap();
    let site = t.path().join("site");
    for (p, b) in [
        ("a/b/page.html", "<link rel=stylesheet href='../css/s.css'><img src=img/x.gif><script src=/js/app.js></script>"),
        ("a/css/s.css", "body { background: url( \"../../bg/tile.png\" ) }"),
        ("bg/tile.png", "\u{89}PNG fake"),
        ("a/b/img/x.gif", "GIF89a fake"),
        ("js/app.js", "let x = 1;"),
        ("other.html", "not embedded"),
    ] {
        let path = site.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b).unwrap();
    }
    let pkg = ok(pagewire()
        .args(["pack", "--page", "/a/b/page.html", "--out", "-", "--root"])
        .arg(&site)
        .output()
        .unwrap())
    .stdout;
    let un = t.path().join("un");
    let mut child = pagewire()
        .args(["unpack", "-v", "-", "--out"])
        .arg(&un)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(&pkg).unwrap();
    let out = ok(child.wait_with_output().unwrap());
    let order: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(order, ["page.html", "s.css", "tile.png", "x.gif", "app.js"]);
    let mut want = tree(&site);
    want.remove("other.html");
    assert_eq!(tree(&un), want);
}

#[test]
fn truncated_package_names_the_incomplete_file_and_keeps_earlier_ones() {
    let t = tempfile::tempdir().unwrap();
    let site = t.path().join("site");
    ok(pagewire()
        .args(["site", "microscape", "--out"])
        .arg(&site)
        .output()
        .unwrap());
    let pkg = ok(pagewire()
        .args(["pack", "--out", "-", "--root"])
        .arg(&site)
        .output()
        .unwrap())
    .stdout;
    let cut = t.path().join("cut.objp");
    std::fs::write(&cut, &pkg[..pkg.len() - 100]).unwrap();
    let un = t.path().join("un");
    let out = pagewire()
        .arg("unpack")
        .arg(&cut)
        .arg("--out")
        .arg(&un)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("incomplete file \"images/"), "{err}");
    let got = tree(&un);
    assert_eq!(
        got.len(),
        42,
        "page and 41 complete images, no temporary file"
    );
    for (name, bytes) in &got {
        assert_eq!(&std::fs::read(site.join(name)).unwrap(), bytes, "{name}");
    }
    // A corrupt table: nothing is written.
    let mut bad = pkg.clone();
    bad[20] ^= 1;
    std::fs::write(&cut, &bad).unwrap();
    let un2 = t.path().join("un2");
    let out = pagewire()
        .arg("unpack")
        .arg(&cut)
        .arg("--out")
        .arg(&un2)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CRC-32"));
    assert!(tree(&un2).is_empty());
}
