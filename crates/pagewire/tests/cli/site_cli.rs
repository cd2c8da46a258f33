//! `pagewire site microscape`: writes the synthetic page and its 42 GIFs,
//! prints the composition table beside the paper's, and fails clearly on a
//! bad output directory.

use std::process::Command;

fn pagewire() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pagewire"))
}

#[test]
fn writes_the_site_and_prints_its_composition() {
    let dir = tempfile::tempdir().unwrap();
    let out = pagewire()
        .args(["site", "microscape", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("SYNTHETIC"), "{stdout}");
    assert!(
        stdout.contains("103299"),
        "static bytes beside the paper's: {stdout}"
    );
    let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let gifs: Vec<_> = std::fs::read_dir(dir.path().join("images"))
        .unwrap()
        .collect();
    assert_eq!(gifs.len(), 42);
    let total: u64 = gifs
        .iter()
        .map(|e| e.as_ref().unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(total, 103_299 + 24_988);
    assert!(
        page.contains("<TABLE") && page.contains("<table"),
        "mixed-case tags"
    );
    let about = std::fs::read_to_string(dir.path().join("MICROSCAPE.txt")).unwrap();
    assert!(about.contains("Made by pagewire") && about.contains("SYNTHETIC"));
}

#[test]
fn lowercase_writes_no_upper_case_tag_names() {
    let dir = tempfile::tempdir().unwrap();
    let st = pagewire()
        .args(["site", "microscape", "--lowercase", "--seed", "7", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(st.status.success());
    let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    for tag in [
        "<TABLE", "<Table", "<FONT", "<Font", "<IMG", "<A HREF", "<TD",
    ] {
        assert!(!page.contains(tag), "{tag} in the lower-case page");
    }
}

#[test]
fn unwritable_output_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = pagewire()
        .args(["site", "microscape", "--out"])
        .arg(file.join("sub"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("writing the Microscape site"), "{err}");
}

#[test]
fn writes_the_section_9_variant() {
    let dir = tempfile::tempdir().unwrap();
    let out = pagewire()
        .args(["site", "microscape", "--variant", "css", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("22 / 14791"), "{stdout}");
    let page = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(page.contains("<STYLE TYPE=\"text/css\">"));
    let pngs: Vec<_> = std::fs::read_dir(dir.path().join("images"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(pngs.len(), 20);
    assert!(pngs.iter().all(|n| n.ends_with(".png")), "{pngs:?}");
    let about = std::fs::read_to_string(dir.path().join("MICROSCAPE.txt")).unwrap();
    assert!(about.contains("--variant css"), "{about}");
    let bad = pagewire()
        .args(["site", "microscape", "--variant", "mng", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown page variant"));
}
