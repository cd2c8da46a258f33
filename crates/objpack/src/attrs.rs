//! The fixed-width attribute record of one file.
//!
//! The paper's attribute subfield holds "file attributes for each file such
//! as binary, text, executable or read-only", each fixed in length. A web
//! client today needs the media type (to render the object) and the
//! validators (to cache and revalidate it), so the record carries those too:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 1 | flags: bit 0 text, bit 1 executable, bit 2 read-only; other bits 0 |
//! | 1 | 7 | reserved, 0 |
//! | 8 | 8 | Last-Modified, seconds since 1970-01-01T00:00:00Z (u64 BE); 0 = none |
//! | 16 | 64 | media type (`Content-Type` value), printable ASCII, NUL-padded; empty = none |
//! | 80 | 48 | entity tag exactly as in `ETag` (quotes and any `W/` included), printable ASCII, NUL-padded; empty = none |

/// Bytes per attribute record.
pub const ATTR_BYTES: usize = 128;
/// Width of the media type field.
pub const MEDIA_TYPE_FIELD_BYTES: usize = 64;
/// Width of the entity tag field.
pub const ETAG_FIELD_BYTES: usize = 48;

const FLAG_TEXT: u8 = 1;
const FLAG_EXECUTABLE: u8 = 2;
const FLAG_READ_ONLY: u8 = 4;
const KNOWN_FLAGS: u8 = FLAG_TEXT | FLAG_EXECUTABLE | FLAG_READ_ONLY;
const MEDIA_AT: usize = 16;
const ETAG_AT: usize = MEDIA_AT + MEDIA_TYPE_FIELD_BYTES;

/// What a package says about one file besides its name and size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub text: bool,
    pub executable: bool,
    pub read_only: bool,
    /// `Content-Type` value; empty when unknown.
    pub media_type: String,
    /// Strong or weak entity tag, quotes included; empty when none.
    pub etag: String,
    /// Seconds since the Unix epoch; `None` when unknown.
    pub last_modified: Option<u64>,
}

fn field_ok(value: &str, allow_space: bool) -> bool {
    value
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) || (allow_space && b == b' '))
}

impl Attributes {
    /// Checks the values fit their fields and are header-safe.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.media_type.len() > MEDIA_TYPE_FIELD_BYTES {
            return Err("media type longer than 64 bytes");
        }
        if self.etag.len() > ETAG_FIELD_BYTES {
            return Err("entity tag longer than 48 bytes");
        }
        if !field_ok(&self.media_type, true) {
            return Err("media type is not printable ASCII");
        }
        if !field_ok(&self.etag, false) {
            return Err("entity tag is not printable ASCII without spaces");
        }
        if self.last_modified == Some(0) {
            return Err("Last-Modified of 0 is reserved for 'none'");
        }
        Ok(())
    }

    /// The 128-byte record. Call [`Attributes::check`] first.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut rec = [0u8; ATTR_BYTES];
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        rec[0] = flag(self.text, FLAG_TEXT)
            | flag(self.executable, FLAG_EXECUTABLE)
            | flag(self.read_only, FLAG_READ_ONLY);
        rec[8..16].copy_from_slice(&self.last_modified.unwrap_or(0).to_be_bytes());
        rec[MEDIA_AT..MEDIA_AT + self.media_type.len()].copy_from_slice(self.media_type.as_bytes());
        rec[ETAG_AT..ETAG_AT + self.etag.len()].copy_from_slice(self.etag.as_bytes());
        out.extend_from_slice(&rec);
    }

    pub(crate) fn decode(rec: &[u8]) -> Result<Attributes, &'static str> {
        debug_assert_eq!(rec.len(), ATTR_BYTES);
        if rec[0] & !KNOWN_FLAGS != 0 {
            return Err("unknown flag bits");
        }
        if rec[1..8].iter().any(|&b| b != 0) {
            return Err("reserved bytes are not zero");
        }
        let lm = u64::from_be_bytes(rec[8..16].try_into().expect("8 bytes"));
        let text_field = |bytes: &[u8]| -> Result<String, &'static str> {
            let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            if bytes[len..].iter().any(|&b| b != 0) {
                return Err("text field has bytes after its NUL padding");
            }
            // Printable ASCII is checked by `check` below.
            String::from_utf8(bytes[..len].to_vec()).map_err(|_| "text field is not ASCII")
        };
        let attrs = Attributes {
            text: rec[0] & FLAG_TEXT != 0,
            executable: rec[0] & FLAG_EXECUTABLE != 0,
            read_only: rec[0] & FLAG_READ_ONLY != 0,
            media_type: text_field(&rec[MEDIA_AT..ETAG_AT])?,
            etag: text_field(&rec[ETAG_AT..ATTR_BYTES])?,
            last_modified: (lm != 0).then_some(lm),
        };
        attrs.check()?;
        Ok(attrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let a = Attributes {
            text: true,
            executable: false,
            read_only: true,
            media_type: "text/html; charset=utf-8".into(),
            etag: "\"abc\"".into(),
            last_modified: Some(1_000_000_000),
        };
        a.check().unwrap();
        let mut out = Vec::new();
        a.encode(&mut out);
        assert_eq!(out.len(), ATTR_BYTES);
        assert_eq!(out[0], 5);
        assert_eq!(&out[8..16], &1_000_000_000u64.to_be_bytes());
        assert_eq!(&out[16..40], b"text/html; charset=utf-8");
        assert_eq!(&out[80..85], b"\"abc\"");
        assert_eq!(Attributes::decode(&out).unwrap(), a);
    }

    #[test]
    fn refuses_header_injection_and_garbage() {
        let a = Attributes {
            etag: "\"a\"\r\nX: y".into(),
            ..Attributes::default()
        };
        assert!(a.check().is_err());
        let mut rec = [0u8; ATTR_BYTES];
        rec[16] = b'a';
        rec[18] = b'b'; // byte after the padding NUL
        assert!(Attributes::decode(&rec).is_err());
        let mut rec = [0u8; ATTR_BYTES];
        rec[0] = 0x80;
        assert!(Attributes::decode(&rec).is_err());
    }
}
