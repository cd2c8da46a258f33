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
    /// `:` elsewhere (an NTFS alternate data stream, `a.txt:x`).
    Colon,
    /// A character Windows does not allow in names (`< > " | ? *`).
    WindowsCharacter,
    /// A segment Windows reserves for a device (`CON`, `nul.txt`, `COM1`).
    WindowsReserved,
    /// A segment ending in `.` or a space (Windows strips them, so `a.`
    /// and `a` would be one file).
    TrailingDotOrSpace,
    /// A segment in the unpacker's temporary-name scheme (`.objp-part…`):
    /// it could collide with a file being written.
    TempName,
}

/// Prefix of the temporary names `unpack` writes files under; no segment of
/// a package's names may start with it.
pub const TEMP_PREFIX: &str = ".objp-part";

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
            NameError::Colon => write!(f, "contains ':' (an NTFS stream name)"),
            NameError::WindowsCharacter => {
                write!(f, "contains a character Windows refuses (< > \" | ? *)")
            }
            NameError::WindowsReserved => {
                write!(
                    f,
                    "has a segment Windows reserves for a device (CON, NUL, COM1, ...)"
                )
            }
            NameError::TrailingDotOrSpace => write!(f, "has a segment ending in '.' or a space"),
            NameError::TempName => write!(f, "uses the unpacker's temporary name {TEMP_PREFIX}"),
        }
    }
}

/// Checks that `name` is a safe relative path: UTF-8, `/`-separated, no
/// empty, `.` or `..` segment, not absolute, no backslash (a separator on
/// Windows), no NUL or other control character, no drive prefix, at most
/// `max_bytes` long. Joined onto any directory, such a name stays inside it.
/// So that one package unpacks to the same files on every common file
/// system, Windows' rules are applied too: no `:` (drive or NTFS stream),
/// none of `< > " | ? *`, no device name (`CON`, `aux.txt`, `LPT1`), no
/// segment ending in `.` or a space. Segments starting with
/// [`TEMP_PREFIX`] are the unpacker's own and are refused.
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
    if s.contains(':') {
        return Err(NameError::Colon);
    }
    if s.contains(['<', '>', '"', '|', '?', '*']) {
        return Err(NameError::WindowsCharacter);
    }
    for seg in s.split('/') {
        if seg.ends_with(['.', ' ']) {
            return Err(NameError::TrailingDotOrSpace);
        }
        if seg.starts_with(TEMP_PREFIX) {
            return Err(NameError::TempName);
        }
        if is_windows_device(seg) {
            return Err(NameError::WindowsReserved);
        }
    }
    Ok(s)
}

/// `CON`, `PRN`, `AUX`, `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9` (and the
/// superscript-digit forms), in any case, alone or before an extension.
fn is_windows_device(seg: &str) -> bool {
    let stem = seg.split('.').next().unwrap_or(seg).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    match upper.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        _ => {
            let (Some(head), Some(tail)) = (upper.get(..3), upper.get(3..)) else {
                return false;
            };
            matches!(head, "COM" | "LPT")
                && matches!(
                    tail,
                    "0" | "1"
                        | "2"
                        | "3"
                        | "4"
                        | "5"
                        | "6"
                        | "7"
                        | "8"
                        | "9"
                        | "\u{b9}"
                        | "\u{b2}"
                        | "\u{b3}"
                )
        }
    }
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
            "x..y",
            "日本/語.txt",
            "a b",
            "console.txt",
            "com10",
            "nul_x",
            "lpt",
            ".objp",
            "a.objp-part",
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
            (b"a.txt:stream", NameError::Colon),
            (b"dir/a:b", NameError::Colon),
            (b"a?b", NameError::WindowsCharacter),
            (b"a*", NameError::WindowsCharacter),
            (b"CON", NameError::WindowsReserved),
            (b"img/nul.gif", NameError::WindowsReserved),
            (b"Com1.txt", NameError::WindowsReserved),
            (b"lpt9", NameError::WindowsReserved),
            ("COM\u{b9}".as_bytes(), NameError::WindowsReserved),
            (b"aux/x", NameError::WindowsReserved),
            (b"a.", NameError::TrailingDotOrSpace),
            (b"dir /x", NameError::TrailingDotOrSpace),
            (b".objp-part", NameError::TempName),
            (b"d/.objp-part.3", NameError::TempName),
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
