//! No function of this crate (its sources, tests and benches) is longer than
//! `MAX_LINES` lines, from the line of its `fn` to the line of its closing
//! brace. A long function is where strategy branches used to pile up (the
//! session's `on_head`, `on_end` and `finish` were 190-280 lines); split it
//! into named steps instead of raising the limit.
//!
//! The scan is lexical: comments, string, raw-string and character literals
//! are blanked first, so braces inside them do not count; then every `fn`
//! with a body is measured by brace depth.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 80;

/// `src` with comments and literals replaced by spaces (newlines kept, so
/// line numbers stay).
fn blank_literals(src: &str) -> Vec<u8> {
    let s = src.as_bytes();
    let mut out = s.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to.min(s.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let ident = |i: usize| i > 0 && (s[i - 1].is_ascii_alphanumeric() || s[i - 1] == b'_');
    let mut i = 0;
    // Bounded: every pass moves `i` forward.
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(s.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if s[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(end) = raw_string_end(s, i).filter(|_| !ident(i)) {
            blank(&mut out, i, end);
            i = end;
        } else if s[i] == b'"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != b'"' {
                j += if s[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if s[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'); a lifetime has no
            // closing quote right after its first character.
            let end = if s.get(i + 1) == Some(&b'\\') {
                s[i + 2..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map(|p| i + 2 + p + 1)
            } else {
                let c = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (s.get(i + 1 + c) == Some(&b'\'')).then_some(i + 2 + c)
            };
            match end {
                Some(e) => {
                    blank(&mut out, i, e);
                    i = e;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The end of a raw string literal (`r"..."`, `br#"..."#`) starting at `i`.
fn raw_string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if s.get(j) == Some(&b'b') {
        j += 1;
    }
    if s.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|&&b| b == b'#').count();
    j += hashes;
    if s.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let from = j + 1;
    s[from..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map(|p| from + p + close.len())
}

/// Every function with a body in `src`: (name, first line, lines).
fn functions(src: &str) -> Vec<(String, usize, usize)> {
    let s = blank_literals(src);
    let line_of = |pos: usize| s[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    // Bounded: every pass moves `i` forward.
    while let Some(p) = s[i..].windows(3).position(|w| w == b"fn ") {
        let at = i + p;
        i = at + 3;
        if at > 0 && (s[at - 1].is_ascii_alphanumeric() || s[at - 1] == b'_') {
            continue;
        }
        let name: String = s[i..]
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .map(|&b| b as char)
            .collect();
        if name.is_empty() {
            continue;
        }
        let Some(open) = s[i..].iter().position(|&b| b == b'{' || b == b';') else {
            break;
        };
        let open = i + open;
        if s[open] == b';' {
            continue; // a declaration without a body
        }
        let mut depth = 0usize;
        let mut close = open;
        for (k, &b) in s[open..].iter().enumerate() {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let first = line_of(at);
        found.push((name, first, line_of(close) - first + 1));
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_scan_measures_functions_and_ignores_braces_in_literals() {
    let src =
        "fn a() {\n    let s = \"{\";\n    let c = '}';\n    // }\n    let r = r#\"}\"#;\n}\n\
               trait T { fn decl(&self); fn b<'x>(&'x self) -> &'x str { \"\" } }\n";
    let fns = functions(src);
    assert_eq!(
        fns,
        vec![("a".to_string(), 1, 6), ("b".to_string(), 7, 1)],
        "{fns:?}"
    );
}

#[test]
fn no_function_is_longer_than_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut long = Vec::new();
    let mut count = 0;
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for (name, line, lines) in functions(&src) {
            count += 1;
            if lines > MAX_LINES {
                let rel = f.strip_prefix(root).unwrap_or(f);
                long.push(format!(
                    "{}:{line}: fn {name}: {lines} lines",
                    rel.display()
                ));
            }
        }
    }
    assert!(count > 500, "found only {count} functions");
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines (split them into named steps):\n{}",
        long.join("\n")
    );
}
