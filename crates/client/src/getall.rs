//! The robot's side of GETALL (Padmanabhan & Mogul, "Improving HTTP
//! Latency", section 5): the page request carries `Getall: 1` (the paper's
//! compatible variant: "an ordinary GET, using an additional field ... to
//! indicate that the client wants to perform a GETALL"); a server that knows
//! it answers with `multipart/mixed`, split here by each part's
//! Content-Length; a server that does not answers with the page, and the
//! objects it names are then fetched by pipelining ("the client notes that
//! it has not received all the images ... and simply retrieves them the
//! traditional way").
//!
//! The paper's heuristic: GETALL on the first visit to a page; on later
//! visits the page and then only the images not in the cache. "It keeps a
//! cache, listing for each known image URL the URL of the document that
//! contained it": kept here as one cache entry per page (key
//! [`refs_key`]) listing the URLs the page referenced.

use bytes::Bytes;

/// Request field of the compatible variant.
pub const GETALL_FIELD: &str = "Getall";

/// Most parts accepted from one response (a bound on the object table; the
/// discovery limit is the same).
pub const MAX_PARTS: usize = pagewire_discover::MAX_REFERENCES;

/// Cache key of the list of URLs a page referenced. The fragment never
/// reaches a server, so it cannot collide with an object's URL.
pub fn refs_key(page_url: &str) -> String {
    format!("{page_url}#pagewire-getall-refs")
}

/// One part of a multipart/mixed answer.
#[derive(Debug, Clone)]
pub struct Part {
    /// Field names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Part {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The part's status (`Status: 304 Not Modified`), 200 without one.
    pub fn status(&self) -> u16 {
        self.header("status")
            .and_then(|s| s.split_whitespace().next())
            .and_then(|c| c.parse().ok())
            .unwrap_or(200)
    }
}

/// The boundary of a `multipart/mixed` Content-Type, if it is one.
pub fn boundary(content_type: &str) -> Option<&str> {
    let mut it = content_type.split(';');
    let mt = it.next()?.trim();
    if !mt.eq_ignore_ascii_case("multipart/mixed") {
        return None;
    }
    it.filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"'))
        .filter(|b| !b.is_empty() && b.len() <= 70)
}

/// Splits a multipart/mixed body whose parts carry Content-Length (the
/// framing of docs/getall.md); every delimiter is checked.
pub fn split(boundary: &str, body: &Bytes) -> Result<Vec<Part>, String> {
    let delim = format!("--{boundary}");
    let mut at = 0usize;
    let mut parts = Vec::new();
    let take = |at: usize, n: usize| -> Result<&[u8], String> {
        body.get(at..at + n)
            .ok_or_else(|| format!("multipart body ends early at byte {at}"))
    };
    // Bounded: each turn consumes at least the delimiter; MAX_PARTS parts.
    loop {
        if take(at, delim.len())? != delim.as_bytes() {
            return Err(format!("expected the boundary at byte {at}"));
        }
        at += delim.len();
        if take(at, 2)? == b"--" {
            return Ok(parts);
        }
        if take(at, 2)? != b"\r\n" {
            return Err(format!("no CRLF after the boundary at byte {at}"));
        }
        at += 2;
        let mut headers = Vec::new();
        loop {
            let rest = body.get(at..).unwrap_or_default();
            let end = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or_else(|| format!("part head not terminated at byte {at}"))?;
            let line = std::str::from_utf8(&rest[..end])
                .map_err(|_| format!("part head is not UTF-8 at byte {at}"))?;
            at += end + 2;
            if line.is_empty() {
                break;
            }
            let (k, v) = line
                .split_once(':')
                .ok_or_else(|| format!("bad part field {line:?}"))?;
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let n: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .ok_or("part without a valid Content-Length")?;
        take(at, n)?;
        let part_body = body.slice(at..at + n);
        at += n;
        if take(at, 2)? != b"\r\n" {
            return Err(format!("no CRLF after a part body at byte {at}"));
        }
        at += 2;
        if parts.len() == MAX_PARTS {
            return Err(format!("more than {MAX_PARTS} parts"));
        }
        parts.push(Part {
            headers,
            body: part_body,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_parts_by_length_and_rejects_damage() {
        let b = "xyz";
        let body = Bytes::from_static(
            b"--xyz\r\nContent-Location: /a\r\nContent-Length: 5\r\n\r\n--xyz\r\n--xyz\r\nStatus: 304 Not Modified\r\nContent-Location: /b\r\nContent-Length: 0\r\n\r\n\r\n--xyz--\r\n",
        );
        let p = split(b, &body).unwrap();
        assert_eq!(p.len(), 2);
        // A body containing the boundary itself is fine: lengths decide.
        assert_eq!(&p[0].body[..], b"--xyz");
        assert_eq!(p[0].status(), 200);
        assert_eq!(p[1].status(), 304);
        assert_eq!(p[1].header("content-location"), Some("/b"));
        for cut in [10, 40, body.len() - 3] {
            assert!(split(b, &body.slice(..cut)).is_err(), "cut at {cut}");
        }
        assert_eq!(boundary("multipart/mixed; boundary=\"q\""), Some("q"));
        assert_eq!(boundary("text/html"), None);
    }
}
