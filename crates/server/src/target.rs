//! Request targets (RFC 9112 §3.2) to store paths.
//!
//! Origin-form `/a/b?q` and absolute-form `http://host/a/b?q` both give the
//! path `/a/b`; `*` is only for OPTIONS. The path is percent-decoded and its
//! dot segments removed (RFC 3986 §5.2.4) *after* decoding, so `%2e%2e` is a
//! `..` like any other; a `..` that would climb above the root is refused.
//! The store is an in-memory map, so nothing can reach outside the site, but
//! a normalised path is also what makes `/a/./b` and `/a/b` the same resource.

/// What a request target designates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// `*` (asterisk-form, OPTIONS only).
    Asterisk,
    /// A decoded, normalised absolute path, and the raw query (without `?`).
    Path {
        path: &'a str,
        query: Option<&'a str>,
    },
}

/// Why a target was refused (all answered with 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetError {
    /// Not origin-form, absolute-form or `*`.
    Form,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// A decoded NUL, or decoded bytes that are not UTF-8.
    BadByte,
    /// `..` above the root.
    AboveRoot,
}

impl TargetError {
    pub fn reason(self) -> &'static str {
        match self {
            TargetError::Form => "request target is not origin-form or absolute-form",
            TargetError::BadEscape => "malformed percent-encoding in request target",
            TargetError::BadByte => "request target decodes to invalid bytes",
            TargetError::AboveRoot => "request target climbs above the root",
        }
    }
}

/// Parses `target`. The common case (no `%`, no dot segment) borrows from
/// `target` and allocates nothing; otherwise the decoded path is built in
/// `scratch`, which the caller keeps for reuse.
pub fn parse<'a>(target: &'a str, scratch: &'a mut String) -> Result<Target<'a>, TargetError> {
    match plain_origin_form(target) {
        Some(plain) => Ok(plain),
        None => parse_general(target, scratch),
    }
}

/// [`parse`] for every target, without the one-pass shortcut
/// ([`plain_origin_form`]) for the common case.
fn parse_general<'a>(target: &'a str, scratch: &'a mut String) -> Result<Target<'a>, TargetError> {
    if target == "*" {
        return Ok(Target::Asterisk);
    }
    let path_and_query = if target.starts_with('/') {
        target
    } else {
        absolute_form_path(target).ok_or(TargetError::Form)?
    };
    // A fragment is not part of a request target (RFC 9112 §3.2.1); drop one
    // defensively rather than look it up.
    let path_and_query = path_and_query.split('#').next().unwrap_or("/");
    let (raw_path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    let raw_path = if raw_path.is_empty() { "/" } else { raw_path };
    if !raw_path.contains('%') && !raw_path.contains("/.") {
        return Ok(Target::Path {
            path: raw_path,
            query,
        });
    }
    let decoded = percent_decode(raw_path)?;
    scratch.clear();
    remove_dot_segments(&decoded, scratch)?;
    Ok(Target::Path {
        path: scratch.as_str(),
        query,
    })
}

/// The common case in one pass over the bytes: an origin-form target whose
/// path has no `%` and no dot segment (no `/.`) is its own path. Returns
/// where that path ends (at the first `?` or `#`, else the target's end);
/// `None` sends the target to [`parse_general`], which gives
/// the same answer for every target this one accepts (tested).
fn plain_path_end(bytes: &[u8]) -> Option<usize> {
    if bytes.first() != Some(&b'/') {
        return None;
    }
    // Bytes that end the path or may make it not plain; every other byte
    // costs one table load.
    const SPECIAL: [bool; 256] = {
        let mut t = [false; 256];
        t[b'?' as usize] = true;
        t[b'#' as usize] = true;
        t[b'%' as usize] = true;
        t[b'.' as usize] = true;
        t
    };
    for (i, &b) in bytes.iter().enumerate() {
        if !SPECIAL[b as usize] {
            continue;
        }
        match b {
            b'?' | b'#' => return Some(i),
            b'%' => return None,
            // A dot after a slash starts a dot segment candidate (`/.`).
            _ if bytes[i - 1] == b'/' => return None,
            _ => {}
        }
    }
    Some(bytes.len())
}

/// The path of a plain origin-form target (see [`plain_path_end`]), from
/// its bytes: what [`parse`] would return as the path, without needing the
/// target as `str`. `None`: ask [`parse`].
pub fn plain_path(target: &[u8]) -> Option<&[u8]> {
    plain_path_end(target).map(|end| &target[..end])
}

fn plain_origin_form(target: &str) -> Option<Target<'_>> {
    let end = plain_path_end(target.as_bytes())?;
    let query = match target.as_bytes().get(end) {
        Some(b'?') => {
            let rest = &target[end + 1..];
            Some(rest.split('#').next().unwrap_or(rest))
        }
        _ => None,
    };
    Some(Target::Path {
        path: &target[..end],
        query,
    })
}

/// `http://host[:port]/path?q` -> `/path?q` (`/` when the path is empty).
fn absolute_form_path(target: &str) -> Option<&str> {
    let (scheme, rest) = target.split_once("://")?;
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return None;
    }
    let path_start = rest.find(['/', '?']);
    let authority = &rest[..path_start.unwrap_or(rest.len())];
    if authority.is_empty() {
        return None;
    }
    match path_start {
        Some(i) if rest.as_bytes()[i] == b'/' => Some(&rest[i..]),
        // `http://host?q`: path is "/" and the query follows; the caller
        // splits on '?', so hand back something starting with '/'.
        Some(_) | None => Some("/"),
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn percent_decode(raw: &str) -> Result<String, TargetError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex);
            let lo = bytes.get(i + 2).copied().and_then(hex);
            match (hi, lo) {
                (Some(h), Some(l)) => {
                    let v = h << 4 | l;
                    if v == 0 {
                        return Err(TargetError::BadByte);
                    }
                    out.push(v);
                    i += 3;
                }
                _ => return Err(TargetError::BadEscape),
            }
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| TargetError::BadByte)
}

/// RFC 3986 §5.2.4 on an absolute path, except that climbing above the root
/// is an error instead of being silently clamped (it is never an accident).
fn remove_dot_segments(path: &str, out: &mut String) -> Result<(), TargetError> {
    // Segment start offsets in `out`, so ".." can pop in O(1). Bounded by
    // the number of '/' in the path, itself bounded by the request-line limit.
    let mut starts: Vec<usize> = Vec::new();
    let trailing_slash = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
    for seg in path.split('/').skip(1) {
        match seg {
            "." => {}
            ".." => {
                let start = starts.pop().ok_or(TargetError::AboveRoot)?;
                out.truncate(start);
            }
            _ => {
                starts.push(out.len());
                out.push('/');
                out.push_str(seg);
            }
        }
    }
    // "/a/b/" splits into a final empty segment, already pushed as "/";
    // "/a/." and "/a/.." designate a directory and keep their slash.
    if out.is_empty() || (trailing_slash && !out.ends_with('/')) {
        out.push('/');
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(t: &str) -> Result<String, TargetError> {
        let mut s = String::new();
        match parse(t, &mut s)? {
            Target::Path { path, .. } => Ok(path.to_owned()),
            Target::Asterisk => Ok("*".into()),
        }
    }

    /// Every target built from these pieces, up to four pieces long, gets
    /// the same answer from `parse` (fast path first) as from the general
    /// path alone.
    #[test]
    fn fast_path_agrees_with_the_general_path() {
        let pieces = ["/", "a", ".", "..", "?", "#", "%2e", "%", "x=1", "/.", "é"];
        let mut targets = vec![String::new()];
        let mut all = Vec::new();
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &targets {
                for p in pieces {
                    next.push(format!("{t}{p}"));
                }
            }
            all.extend(next.iter().cloned());
            targets = next;
        }
        let mut checked = 0;
        for t in all.iter().filter(|t| t.starts_with('/')) {
            let (mut s1, mut s2) = (String::new(), String::new());
            let fast = parse(t, &mut s1).map(|x| format!("{x:?}"));
            let slow = parse_general(t, &mut s2).map(|x| format!("{x:?}"));
            assert_eq!(fast, slow, "{t}");
            if let Some(p) = plain_path(t.as_bytes()) {
                let mut s3 = String::new();
                match parse_general(t, &mut s3) {
                    Ok(Target::Path { path, .. }) => assert_eq!(p, path.as_bytes(), "{t}"),
                    other => panic!("{t}: plain path {p:?}, general {other:?}"),
                }
            }
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
    }

    #[test]
    fn forms() {
        assert_eq!(path("/a/b?x=1").unwrap(), "/a/b");
        assert_eq!(path("http://example.com/a?x").unwrap(), "/a");
        assert_eq!(path("HTTP://example.com").unwrap(), "/");
        assert_eq!(path("http://example.com?q").unwrap(), "/");
        assert_eq!(path("*").unwrap(), "*");
        assert_eq!(path("example.com:80"), Err(TargetError::Form));
        assert_eq!(path("ftp://x/a"), Err(TargetError::Form));
        assert_eq!(path("http:///a"), Err(TargetError::Form));
    }

    #[test]
    fn decoding_and_dots_never_escape() {
        assert_eq!(path("/a%20b.html").unwrap(), "/a b.html");
        assert_eq!(path("/a/./b").unwrap(), "/a/b");
        assert_eq!(path("/a/../b").unwrap(), "/b");
        assert_eq!(path("/a/%2e%2e/b").unwrap(), "/b");
        assert_eq!(path("/a/.%2E/").unwrap(), "/");
        assert_eq!(path("/a/b/..").unwrap(), "/a/");
        assert_eq!(path("/.."), Err(TargetError::AboveRoot));
        assert_eq!(path("/%2e%2e/etc/passwd"), Err(TargetError::AboveRoot));
        assert_eq!(path("/a/..%2f..%2fx"), Err(TargetError::AboveRoot));
        assert_eq!(path("/%zz"), Err(TargetError::BadEscape));
        assert_eq!(path("/%4"), Err(TargetError::BadEscape));
        assert_eq!(path("/%00"), Err(TargetError::BadByte));
        assert_eq!(path("/%ff"), Err(TargetError::BadByte));
        assert_eq!(path("/.well-known/x").unwrap(), "/.well-known/x");
    }
}
