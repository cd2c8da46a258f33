//! Accept-Encoding negotiation over the precompressed variants
//! (RFC 9110 §12.5.3, q-values §12.4.2).

use pagewire_site::store::{Encoding, Resource};

/// Most list members looked at in one Accept-Encoding field value: real
/// clients send fewer than 10; the bound caps the work a hostile header costs.
const MAX_MEMBERS: usize = 32;

/// Outcome of negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Use(Encoding),
    /// Identity is excluded (`identity;q=0` or `*;q=0`) and no stored coding is
    /// acceptable: 406.
    NotAcceptable,
}

/// q-values in thousandths (RFC 9110 §12.4.2: at most three decimals).
fn parse_q(params: &str) -> Option<u16> {
    for p in params.split(';') {
        let p = p.trim();
        let Some((k, v)) = p.split_once('=') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case("q") {
            continue;
        }
        let v = v.trim();
        let (int, frac) = v.split_once('.').unwrap_or((v, ""));
        if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut f = 0u16;
        for (i, b) in frac.bytes().enumerate() {
            f += u16::from(b - b'0') * [100, 10, 1][i];
        }
        return match int {
            "0" => Some(f),
            "1" if f == 0 => Some(1000),
            _ => None,
        };
    }
    Some(1000)
}

/// Chooses the representation of `resource` for the Accept-Encoding values.
/// No header at all means identity (RFC 9110 §12.5.3 allows any coding, but
/// old clients send no header and expect none). Among stored codings with the
/// highest q, the smallest body wins; identity wins ties against nothing.
pub fn choose<'a>(resource: &Resource, headers: impl Iterator<Item = &'a [u8]>) -> Choice {
    // q for each Encoding (by ALL index); None = not mentioned.
    let mut q: [Option<u16>; 5] = [None; 5];
    let mut star: Option<u16> = None;
    let mut any = false;
    let mut members = 0;
    for value in headers {
        any = true;
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        for member in value.split(',') {
            members += 1;
            if members > MAX_MEMBERS {
                break;
            }
            let member = member.trim();
            if member.is_empty() {
                continue;
            }
            let (token, params) = member.split_once(';').unwrap_or((member, ""));
            // An unparsable q makes the member meaningless; ignore it.
            let Some(qv) = parse_q(params) else { continue };
            let token = token.trim();
            if token == "*" {
                star = Some(qv);
            } else if let Some(enc) = Encoding::from_token(token.as_bytes()) {
                let slot = &mut q[enc as usize];
                // Duplicates: keep the most favourable.
                *slot = Some(slot.map_or(qv, |old| old.max(qv)));
            }
        }
    }
    if !any {
        return Choice::Use(Encoding::Identity);
    }
    let q_of = |enc: Encoding| -> u16 {
        match q[enc as usize] {
            Some(v) => v,
            None if enc == Encoding::Identity => match star {
                // identity is acceptable unless excluded explicitly or by *;q=0
                // (RFC 9110 §12.5.3).
                Some(0) => 0,
                _ => 1,
            },
            None => star.unwrap_or(0),
        }
    };
    let mut best: Option<(u16, usize, Encoding)> = None;
    for enc in Encoding::COMPRESSED {
        let Some(body) = resource.variant(enc) else {
            continue;
        };
        let qv = q_of(enc);
        if qv == 0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((bq, blen, _)) => qv > bq || (qv == bq && body.len() < blen),
        };
        if better {
            best = Some((qv, body.len(), enc));
        }
    }
    let identity_q = q_of(Encoding::Identity);
    match best {
        // identity mentioned with a higher q than any coding wins
        Some((bq, _, enc)) if bq >= identity_q => Choice::Use(enc),
        _ if identity_q > 0 => Choice::Use(Encoding::Identity),
        Some((_, _, enc)) => Choice::Use(enc),
        None => Choice::NotAcceptable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use pagewire_site::store::{Site, SiteFile};
    use std::time::SystemTime;

    fn html_site() -> Site {
        let body: String = (0..400).map(|i| format!("<p>line {i}</p>\n")).collect();
        Site::from_files(vec![SiteFile {
            path: "/i.html".into(),
            body: Bytes::from(body),
            modified: SystemTime::now(),
        }])
    }

    fn pick(site: &Site, header: Option<&str>) -> Choice {
        let r = site.get("/i.html").unwrap();
        choose(r, header.into_iter().map(str::as_bytes))
    }

    #[test]
    fn q_values() {
        let site = html_site();
        let r = site.get("/i.html").unwrap();
        assert!(r.has_compressed());
        assert_eq!(pick(&site, None), Choice::Use(Encoding::Identity));
        assert_eq!(pick(&site, Some("deflate")), Choice::Use(Encoding::Deflate));
        assert_eq!(
            pick(&site, Some("gzip;q=0.5, deflate;q=0.4")),
            Choice::Use(Encoding::Gzip)
        );
        assert_eq!(
            pick(&site, Some("gzip;q=0, identity")),
            Choice::Use(Encoding::Identity)
        );
        assert_eq!(pick(&site, Some("br;q=0")), Choice::Use(Encoding::Identity));
        assert_eq!(pick(&site, Some("")), Choice::Use(Encoding::Identity));
        assert_eq!(
            pick(&site, Some("identity;q=1, gzip;q=0.5")),
            Choice::Use(Encoding::Identity)
        );
        assert_eq!(pick(&site, Some("identity;q=0")), Choice::NotAcceptable);
        assert_eq!(pick(&site, Some("*;q=0")), Choice::NotAcceptable);
        assert_eq!(
            pick(&site, Some("*;q=0, identity")),
            Choice::Use(Encoding::Identity)
        );
        assert_eq!(pick(&site, Some("GZIP;Q=1")), Choice::Use(Encoding::Gzip));
        assert_eq!(pick(&site, Some("x-gzip")), Choice::Use(Encoding::Gzip));
        assert_eq!(
            pick(&site, Some("gzip;q=2, deflate")),
            Choice::Use(Encoding::Deflate)
        );
        // `*` allows every stored coding: the smallest wins.
        let smallest = Encoding::COMPRESSED
            .into_iter()
            .min_by_key(|e| r.variant(*e).unwrap().len())
            .unwrap();
        assert_eq!(pick(&site, Some("*")), Choice::Use(smallest));
        assert_eq!(
            pick(&site, Some("gzip, deflate, br, zstd")),
            Choice::Use(smallest)
        );
    }
}
