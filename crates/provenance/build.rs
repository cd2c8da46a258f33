//! Records the git commit and dirty flag of the source being built as
//! `PAGEWIRE_GIT_COMMIT` and `PAGEWIRE_GIT_DIRTY` ("true", "false" or
//! "unknown"). Without a `.git` (a source tarball, `cargo install` from a
//! registry) both are "unknown". Reruns when `HEAD`, the ref it points to
//! (or `packed-refs`) or the index change.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    // crates/provenance -> the workspace root.
    let root = manifest.join("../..");
    let (commit, dirty) = match git_dirs(&root.join(".git")) {
        Some((git_dir, common_dir)) => describe(&root, &git_dir, &common_dir),
        None => ("unknown".to_string(), "unknown".to_string()),
    };
    println!("cargo:rustc-env=PAGEWIRE_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=PAGEWIRE_GIT_DIRTY={dirty}");
}

/// The git directory (a worktree's own, from a `.git` file) and the common
/// directory holding refs.
fn git_dirs(dot_git: &Path) -> Option<(PathBuf, PathBuf)> {
    let git_dir = if dot_git.is_dir() {
        dot_git.to_path_buf()
    } else {
        let text = std::fs::read_to_string(dot_git).ok()?;
        let p = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        if p.is_absolute() {
            p
        } else {
            dot_git.parent()?.join(p)
        }
    };
    if !git_dir.join("HEAD").is_file() {
        return None;
    }
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => {
            let p = PathBuf::from(c.trim());
            if p.is_absolute() {
                p
            } else {
                git_dir.join(p)
            }
        }
        Err(_) => git_dir.clone(),
    };
    Some((git_dir, common))
}

fn rerun_on(p: &Path) {
    // Only existing files: a missing one would rerun the script on every
    // build (and rebuild everything that depends on this crate).
    if p.exists() {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

fn describe(root: &Path, git_dir: &Path, common: &Path) -> (String, String) {
    let head_path = git_dir.join("HEAD");
    rerun_on(&head_path);
    rerun_on(&git_dir.join("index"));
    let head = std::fs::read_to_string(&head_path).unwrap_or_default();
    let head = head.trim();
    let commit = match head.strip_prefix("ref:") {
        Some(r) => {
            let r = r.trim();
            let loose = common.join(r);
            rerun_on(&loose);
            rerun_on(&common.join("packed-refs"));
            std::fs::read_to_string(&loose)
                .ok()
                .map(|s| s.trim().to_string())
                .or_else(|| packed_ref(&common.join("packed-refs"), r))
        }
        None => Some(head.to_string()),
    }
    .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
    .unwrap_or_else(|| "unknown".to_string());
    // Tracked files that differ from HEAD (in the index or the work tree);
    // untracked files do not make a build dirty.
    // `--no-optional-locks`: a plain `git status` refreshes the index's
    // stat data and rewrites `index`, which is watched above, so the next
    // build would run this script again and rebuild every crate that
    // depends on this one, on every build.
    let dirty = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| {
            (!o.stdout.iter().all(u8::is_ascii_whitespace)).to_string()
        });
    (commit, dirty)
}

fn packed_ref(path: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .find_map(|l| {
            let (hash, n) = l.split_once(' ')?;
            (n.trim() == name).then(|| hash.to_string())
        })
}
