//! File names inside a package: relative paths that cannot leave the
//! directory a package is unpacked into, on any common file system.

use std::fmt;

/// Why a name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong {
        len: usize,
        limit: usize,
    },
    NotUtf8,
    Absolute,
    Backslash,
    Nul,
    ControlCharacter,
    /// `..` anywhere, or `.`, or an empty segment (`a//b`, trailing `/`).
    BadSegment,
    /// `C:` and the like (a drive prefix on Windows).
    Drive,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => write!(f, "empty"),
            NameError::TooLong { len, limit } => write!(f, "{len} bytes, limit {limit}"),
            NameError::NotUtf8 => write!(f, "not UTF-8"),
            NameError::Absolute => write!(f, "absolute path"),
            NameError::Backslash => write!(f, "contains a backslash"),
            NameError::Nul => write!(f, "contains NUL"),
            NameError::ControlCharacter => write!(f, "contains a control character"),
            NameError::BadSegment => write!(f, "contains '..', '.' or an empty segment"),
            NameError::Drive => write!(f, "starts with a drive prefix"),
        }
    }
}

/// Checks that `name` is a safe relative path: UTF-8, `/`-separated, no
/// empty, `.` or `..` segment, not absolute, no backslash (a separator on
/// Windows), no NUL or other control character, no drive prefix, at most
/// `max_bytes` long. Joined onto any directory, such a name stays inside it.
pub fn check_name(name: &[u8], max_bytes: usize) -> Result<&str, NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > max_bytes {
        return Err(NameError::TooLong {
            len: name.len(),
            limit: max_bytes,
        });
    }
    if name.contains(&0) {
        return Err(NameError::Nul);
    }
    let s = std::str::from_utf8(name).map_err(|_| NameError::NotUtf8)?;
    if s.starts_with('/') {
        return Err(NameError::Absolute);
    }
    if s.contains('\\') {
        return Err(NameError::Backslash);
    }
    if s.chars().any(char::is_control) {
        return Err(NameError::ControlCharacter);
    }
    let first = s.split('/').next().unwrap_or("");
    if first.len() >= 2 && first.as_bytes()[1] == b':' && first.as_bytes()[0].is_ascii_alphabetic()
    {
        return Err(NameError::Drive);
    }
    if s.split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Err(NameError::BadSegment);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_nested_relative_paths() {
        for ok in [
            "index.html",
            "a/b/c.gif",
            "images/..x",
            "x..",
            "日本/語.txt",
            "a b",
        ] {
            assert_eq!(check_name(ok.as_bytes(), 1024), Ok(ok), "{ok}");
        }
    }

    #[test]
    fn refuses_every_way_out() {
        let cases: &[(&[u8], NameError)] = &[
            (b"", NameError::Empty),
            (b"..", NameError::BadSegment),
            (b"../x", NameError::BadSegment),
            (b"a/../../x", NameError::BadSegment),
            (b"a/..", NameError::BadSegment),
            (b"./a", NameError::BadSegment),
            (b"a//b", NameError::BadSegment),
            (b"a/", NameError::BadSegment),
            (b"/etc/passwd", NameError::Absolute),
            (b"..\\x", NameError::Backslash),
            (b"a\\b", NameError::Backslash),
            (b"a\0b", NameError::Nul),
            (b"a\nb", NameError::ControlCharacter),
            (b"C:x", NameError::Drive),
            (b"c:/x", NameError::Drive),
            (b"\xff", NameError::NotUtf8),
        ];
        for (name, want) in cases {
            assert_eq!(check_name(name, 1024), Err(*want), "{name:?}");
        }
        assert!(matches!(
            check_name(&[b'a'; 11], 10),
            Err(NameError::TooLong { len: 11, limit: 10 })
        ));
    }
}
