//! HPACK encoding of response fields (RFC 7541) for pagewire's own HTTP/2
//! connection: literals never indexed, names from the static table where
//! it has them, no dynamic table; `:status` indexed where it can be.

/// HPACK integer (RFC 7541 §5.1) with an `n`-bit prefix, first byte `top`.
pub(crate) fn hpack_int(out: &mut Vec<u8>, top: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(top | v as u8);
        return;
    }
    out.push(top | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Static-table index of a response field name (RFC 7541 Appendix A).
fn static_name(name: &[u8]) -> Option<usize> {
    Some(match name {
        b"accept-ranges" => 18,
        b"age" => 21,
        b"allow" => 22,
        b"cache-control" => 24,
        b"content-disposition" => 25,
        b"content-encoding" => 26,
        b"content-language" => 27,
        b"content-length" => 28,
        b"content-location" => 29,
        b"content-range" => 30,
        b"content-type" => 31,
        b"date" => 33,
        b"etag" => 34,
        b"expires" => 36,
        b"last-modified" => 44,
        b"link" => 45,
        b"location" => 46,
        b"retry-after" => 53,
        b"server" => 54,
        b"vary" => 59,
        _ => return None,
    })
}

/// One field as a literal never added to the dynamic table (RFC 7541
/// §6.2.2), its name from the static table where it is there.
pub fn hpack_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    match static_name(name) {
        Some(i) => hpack_int(out, 0x00, 4, i),
        None => {
            out.push(0x00);
            hpack_int(out, 0x00, 7, name.len());
            out.extend_from_slice(name);
        }
    }
    hpack_int(out, 0x00, 7, value.len());
    out.extend_from_slice(value);
}

/// `:status` (indexed where the static table has it).
pub(crate) fn hpack_status(out: &mut Vec<u8>, status: u16) {
    let i = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => {
            hpack_int(out, 0x00, 4, 8);
            let s = status.min(999).to_string();
            hpack_int(out, 0x00, 7, s.len());
            out.extend_from_slice(s.as_bytes());
            return;
        }
    };
    out.push(0x80 | i);
}

/// The field block of a response's fields, Date left out (the
/// connection adds it per response), for a static file's plain 200:
/// rendered once when the server starts.
pub fn hpack_block(fields: &http::HeaderMap) -> Box<[u8]> {
    let mut out = Vec::with_capacity(256);
    hpack_status(&mut out, 200);
    for (k, v) in fields {
        if k != http::header::DATE {
            hpack_field(&mut out, k.as_str().as_bytes(), v.as_bytes());
        }
    }
    out.into()
}
