//! HAR 1.2 reading: `log.entries[]` with `request.method`, `request.url`,
//! `response.status`, `statusText`, `headers` and `content.text`
//! (`content.encoding: "base64"` for binary bodies).
//!
//! HAR keeps the *decoded* content (HAR 1.2: "text ... decoded"), so a
//! recorded `Content-Encoding` no longer describes the body and is dropped,
//! with `Content-Length` and `Transfer-Encoding` (the server frames the
//! body itself). HTTP/2 pseudo-fields (`:status`) are dropped too. An entry
//! whose body was not saved (`content.size` > 0, no `text`) is skipped and
//! counted: serving it empty would not be a replay.

use base64::Engine as _;
use bytes::Bytes;
use serde_json::Value;

use crate::{Archive, ArchiveError, Exchange};

/// Reads a HAR document.
pub fn read(bytes: &[u8]) -> Result<Archive, ArchiveError> {
    let doc: Value = serde_json::from_slice(bytes)
        .map_err(|e| ArchiveError::new(format!("not a HAR (JSON) document: {e}")))?;
    let entries = doc
        .pointer("/log/entries")
        .and_then(Value::as_array)
        .ok_or_else(|| ArchiveError::new("not a HAR document: no log.entries array"))?;
    let mut archive = Archive::default();
    let mut total = 0u64;
    for (i, entry) in entries.iter().enumerate() {
        match exchange(entry) {
            Ok(e) => archive.push(e, &mut total)?,
            Err(why) => archive.skip(format!("entry {}: {why}", i + 1)),
        }
    }
    if archive.exchanges.is_empty() {
        return Err(ArchiveError::new(format!(
            "no usable entries in the HAR document ({} entries{})",
            entries.len(),
            archive
                .skipped
                .first()
                .map(|s| format!("; first skipped: {s}"))
                .unwrap_or_default()
        )));
    }
    Ok(archive)
}

fn exchange(entry: &Value) -> Result<Exchange, String> {
    let s = |p: &str| entry.pointer(p).and_then(Value::as_str);
    let method = s("/request/method").ok_or("no request.method")?;
    let url = s("/request/url").ok_or("no request.url")?;
    if crate::split_url(url).is_none() {
        return Err(format!("request.url {url:?} is not an absolute URL"));
    }
    let status = entry
        .pointer("/response/status")
        .and_then(Value::as_u64)
        .filter(|s| (100..=999).contains(s))
        .ok_or("no valid response.status")? as u16;
    let content = entry.pointer("/response/content");
    let text = content.and_then(|c| c.get("text")).and_then(Value::as_str);
    let size = content
        .and_then(|c| c.get("size"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let base64 = content
        .and_then(|c| c.get("encoding"))
        .and_then(Value::as_str)
        .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
    let body = match text {
        Some(t) if base64 => Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(t.trim())
                .map_err(|e| format!("{url}: content.text is not base64: {e}"))?,
        ),
        Some(t) => Bytes::copy_from_slice(t.as_bytes()),
        None if size > 0 && !matches!(status, 204 | 304) => {
            return Err(format!(
                "{url}: response body not saved (content.text missing)"
            ))
        }
        None => Bytes::new(),
    };
    let mut headers = Vec::new();
    for h in entry
        .pointer("/response/headers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(n), Some(v)) = (
            h.get("name").and_then(Value::as_str),
            h.get("value").and_then(Value::as_str),
        ) else {
            continue;
        };
        let drop = n.starts_with(':')
            || ["content-encoding", "content-length", "transfer-encoding"]
                .iter()
                .any(|d| n.eq_ignore_ascii_case(d));
        if !drop {
            headers.push((n.to_string(), v.as_bytes().to_vec()));
        }
    }
    Ok(Exchange {
        method: method.to_ascii_uppercase(),
        url: url.to_string(),
        request_head: None,
        status,
        reason: s("/response/statusText").unwrap_or("").to_string(),
        headers,
        body,
        timing: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_text_and_base64_bodies() {
        let doc = serde_json::json!({"log": {"version": "1.2", "entries": [
            {"request": {"method": "GET", "url": "http://a.test/"},
             "response": {"status": 200, "statusText": "OK",
                "headers": [{"name": "Content-Type", "value": "text/html"},
                            {"name": "Content-Encoding", "value": "gzip"},
                            {"name": ":status", "value": "200"}],
                "content": {"size": 5, "text": "hello"}}},
            {"request": {"method": "GET", "url": "http://cdn.test/i.gif?x=1"},
             "response": {"status": 200, "headers": [],
                "content": {"size": 3, "text": "AAEC", "encoding": "base64"}}},
            {"request": {"method": "GET", "url": "http://a.test/lost"},
             "response": {"status": 200, "headers": [], "content": {"size": 10}}}
        ]}});
        let a = read(doc.to_string().as_bytes()).unwrap();
        assert_eq!(a.exchanges.len(), 2);
        assert_eq!(&a.exchanges[0].body[..], b"hello");
        assert_eq!(
            a.exchanges[0].headers.len(),
            1,
            "encoding and pseudo-fields dropped"
        );
        assert_eq!(&a.exchanges[1].body[..], &[0u8, 1, 2]);
        assert_eq!(a.skipped_total, 1);
        assert!(a.skipped[0].contains("not saved"));
        assert!(read(b"{}").is_err());
        assert!(read(b"[").is_err());
    }
}
