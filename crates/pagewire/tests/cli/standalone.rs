//! The repository stands alone: no tracked file refers to a path outside it
//! (a sibling checkout, a home directory, a path of one particular machine)
//! or to design notes that are not in it. A fresh clone must be enough to
//! build, test, and follow every reference in the code and the docs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What must not appear in a tracked file. Built from pieces so this file
/// does not match itself.
fn forbidden() -> Vec<String> {
    let dot = ".";
    vec![
        format!("{dot}{dot}/shared"),
        format!("/{}/", "work"),
        format!("/{}/", "root"),
        format!("/{}/", "home"),
        format!("DESIGN{dot}md"),
        format!("STYLE{dot}md"),
    ]
}

/// (file, pattern) pairs that are legitimate. Keep it tiny, and say why.
const ALLOWED: &[(&str, &str)] = &[];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/pagewire is two levels below the workspace root")
        .to_path_buf()
}

#[test]
fn no_tracked_file_refers_outside_the_repository() {
    let root = workspace_root();
    let Some(git) = pagewire_testreq::require_peer("git") else {
        return;
    };
    let out = Command::new(git)
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("run git");
    // Outside a checkout (a source tarball) there is nothing tracked to
    // check; the test says so instead of passing.
    if !pagewire_testreq::require(
        out.status.success(),
        &format!(
            "needs a git checkout ({}: {})",
            root.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        "run the tests in a clone of the repository",
    ) {
        return;
    }
    let patterns = forbidden();
    let mut files = 0;
    let mut hits = Vec::new();
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let Ok(bytes) = std::fs::read(root.join(&name)) else {
            continue; // deleted in the working tree but still in the index
        };
        // Text files only: binary data (gzip, pcap) may hold any bytes.
        if bytes.contains(&0) || bytes.starts_with(&[0x1f, 0x8b]) {
            continue;
        }
        files += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            for p in &patterns {
                if line.contains(p.as_str()) && !ALLOWED.iter().any(|&(f, a)| f == name && a == p) {
                    hits.push(format!("{name}:{}: `{p}`: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(files > 100, "only {files} tracked text files: wrong root?");
    assert!(
        hits.is_empty(),
        "{} reference(s) to paths or notes outside the repository (move the \
         fact into docs/, cite the paper, or use a repository path):\n{}",
        hits.len(),
        hits.join("\n")
    );
}
