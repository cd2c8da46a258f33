//! No crate of the workspace has an import cycle between its modules
//! (`scripts/module-cycles`): at every level of every crate, the sibling
//! modules depend on each other in layers, never in a circle. And the
//! checker itself sees a cycle where there is one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/pagewire is two levels below the workspace root")
        .to_path_buf()
}

/// `scripts/module-cycles ARGS`, or None where python3 is missing (and
/// allowed to be: `pagewire-testreq`).
fn module_cycles(args: &[&Path]) -> Option<Output> {
    let python = pagewire_testreq::require_peer("python3")?;
    Some(
        Command::new(python)
            .arg(workspace_root().join("scripts/module-cycles"))
            .args(args)
            .output()
            .expect("python3 runs scripts/module-cycles"),
    )
}

#[test]
fn no_crate_has_a_module_import_cycle() {
    let Some(o) = module_cycles(&[]) else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("0 import cycle(s)"),
        "module import cycles (break them by layers: a shared type moved down, \
         or a trait the lower module defines and the upper one implements):\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Every crate of the workspace was read, the lab and the server among them.
    let err = String::from_utf8_lossy(&o.stderr);
    for krate in ["lab", "server", "client", "pagewire (src/main.rs)"] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("{krate}: ")) && l.ends_with("modules checked")),
            "{krate} not checked:\n{err}"
        );
    }
}

/// A crate whose modules `a` and `b` name each other (through `use`, a
/// `super::` path and a root re-export) is reported, with both arrows; a
/// test module's reference back is not counted.
#[test]
fn a_cycle_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    let write = |p: &str, text: &str| std::fs::write(src.join(p), text).unwrap();
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub use b::inner::Deep;\n",
    );
    write("a.rs", "use crate::b::B;\npub struct A(pub B);\n");
    write("b/mod.rs", "pub mod inner;\npub struct B;\n");
    write("b/inner.rs", "pub struct Deep(pub super::super::a::A);\n");
    write(
        "c.rs",
        "pub struct C;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
    );
    let Some(o) = module_cycles(&[tmp.path()]) else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("cycle among crate::{a, b}: a -> b; b -> a")
            && out.contains("1 import cycle(s)"),
        "{out}"
    );

    // Through the root re-export only: still a cycle.
    write("a.rs", "pub struct A(pub crate::Deep);\n");
    let o = module_cycles(&[tmp.path()]).unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("cycle among crate::{a, b}"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // a names c instead of b: no cycle (c's test module may name a).
    write("a.rs", "pub struct A(pub crate::c::C);\n");
    let o = module_cycles(&[tmp.path()]).unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("0 import cycle(s)"),
        "{out}"
    );
}
