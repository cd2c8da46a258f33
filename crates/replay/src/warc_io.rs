//! WARC (ISO 28500; WARC/1.1) reading and writing with the `warc` crate.
//!
//! Reading: `response` records become exchanges (their HTTP head parsed
//! with `pagewire-h1`, a chunked body de-chunked); the method comes from the
//! `request` record they are concurrent to (`WARC-Concurrent-To` either
//! way), else from the request record just before with the same
//! `WARC-Target-URI`, else GET. A `WARC-Payload-Digest` of the form
//! `sha256:<hex>` (what `write` puts there) is checked. `revisit`,
//! `warcinfo`, `metadata` and truncated records are skipped and counted.
//!
//! Writing: per exchange a `request` record (the request head as sent) and
//! a `response` record (status line, the recorded fields with
//! `Content-Length` set to the body's length, the body), linked by
//! `WARC-Concurrent-To`. `.gz` output gzips each record separately.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use bytes::{Bytes, BytesMut};
use pagewire_h1::{parse_response, BodyFraming, Decoded, Decoder, Limits, Method};
use sha2::{Digest, Sha256};
use warc::{BufferedBody, RawRecordHeader, Record, RecordType, WarcHeader, WarcReader, WarcWriter};

use crate::{Archive, ArchiveError, Exchange};

fn limits() -> Limits {
    // Recorded heads of real sites can carry long cookies and many fields.
    Limits {
        max_header_line_bytes: 64 * 1024,
        max_headers: 256,
        max_head_bytes: 1 << 20,
        max_trailer_bytes: 64 * 1024,
        max_trailers: 256,
        ..Limits::default()
    }
}

fn text(h: &RawRecordHeader, name: WarcHeader) -> Option<String> {
    h.as_ref()
        .get(&name)
        .map(|v| String::from_utf8_lossy(v).trim().to_string())
}

/// `WARC-Target-URI`, without the angle brackets WARC/1.0's grammar showed
/// (and wget writes).
fn target_uri(h: &RawRecordHeader) -> String {
    let u = text(h, WarcHeader::TargetURI).unwrap_or_default();
    match u.strip_prefix('<').and_then(|v| v.strip_suffix('>')) {
        Some(inner) => inner.to_string(),
        None => u,
    }
}

/// Reads a WARC file's bytes (gzip detected by its magic number).
pub fn read(bytes: &[u8]) -> Result<Archive, ArchiveError> {
    let gz = bytes.starts_with(&[0x1f, 0x8b]);
    let records: Box<dyn Iterator<Item = _>> = if gz {
        let dec = flate2::read::MultiGzDecoder::new(bytes);
        Box::new(WarcReader::new(BufReader::new(dec)).iter_raw_records())
    } else {
        Box::new(WarcReader::new(BufReader::new(bytes)).iter_raw_records())
    };
    let mut archive = Archive::default();
    let mut total = 0u64;
    // Request records by id, and the last request per target URI.
    let mut methods_by_id: HashMap<String, String> = HashMap::new();
    let mut last_request: HashMap<String, String> = HashMap::new();
    let mut pending: Vec<(RawRecordHeader, Vec<u8>)> = Vec::new();
    for (n, rec) in records.enumerate() {
        let (h, body) =
            rec.map_err(|e| ArchiveError::new(format!("WARC record {} is malformed: {e}", n + 1)))?;
        let ty = text(&h, WarcHeader::WarcType).unwrap_or_default();
        let id = text(&h, WarcHeader::RecordID).unwrap_or_default();
        let uri = target_uri(&h);
        match ty.as_str() {
            "request" => {
                let method = body
                    .split(|&b| b == b' ')
                    .next()
                    .map(|m| String::from_utf8_lossy(m).to_string())
                    .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphabetic()))
                    .unwrap_or_else(|| "GET".into());
                methods_by_id.insert(id.clone(), method.clone());
                if let Some(resp) = text(&h, WarcHeader::ConcurrentTo) {
                    methods_by_id.insert(resp, method.clone());
                }
                last_request.insert(uri, method);
                // Keep the request head with the response, found later.
                pending.push((h, body));
            }
            "response" => {
                if let Some(t) = text(&h, WarcHeader::Truncated) {
                    archive.skip(format!("{uri}: truncated record ({t})"));
                    continue;
                }
                let method = methods_by_id
                    .get(&id)
                    .or_else(|| {
                        text(&h, WarcHeader::ConcurrentTo).and_then(|c| methods_by_id.get(&c))
                    })
                    .or_else(|| last_request.get(&uri))
                    .cloned()
                    .unwrap_or_else(|| "GET".into());
                let request_head = pending
                    .iter()
                    .rev()
                    .find(|(rh, _)| target_uri(rh) == uri)
                    .map(|(_, b)| Bytes::copy_from_slice(b));
                match response(&uri, &method, &body) {
                    Ok(mut e) => {
                        if let Some(d) = text(&h, WarcHeader::PayloadDigest) {
                            if let Some(hex) = d.strip_prefix("sha256:") {
                                let got = hex_of(&Sha256::digest(&e.body));
                                if !got.eq_ignore_ascii_case(hex) {
                                    return Err(ArchiveError::new(format!(
                                        "{uri}: payload digest mismatch (recorded sha256:{hex}, body sha256:{got})"
                                    )));
                                }
                            }
                        }
                        e.request_head = request_head;
                        if let Some(t) = text(&h, WarcHeader::from(crate::TIMING_FIELD)) {
                            e.timing = Some(crate::Timing::parse_field(&t).map_err(|why| {
                                ArchiveError::new(format!(
                                    "{uri}: bad {} field {t:?}: {why}",
                                    crate::TIMING_FIELD
                                ))
                            })?);
                        }
                        archive.push(e, &mut total)?;
                    }
                    Err(why) => archive.skip(format!("{uri}: {why}")),
                }
            }
            "warcinfo" => {
                // application/warc-fields: `name: value` lines.
                for line in String::from_utf8_lossy(&body).lines() {
                    if let Some((name, value)) = line.split_once(':') {
                        if archive.info.len() < crate::MAX_NOTES * 4 {
                            archive
                                .info
                                .push((name.trim().to_string(), value.trim().to_string()));
                        }
                    }
                }
                archive.skip(format!("warcinfo record {} skipped", n + 1));
            }
            other => archive.skip(format!(
                "{} record {} skipped",
                if other.is_empty() { "untyped" } else { other },
                n + 1
            )),
        }
    }
    if archive.exchanges.is_empty() {
        return Err(ArchiveError::new(format!(
            "no response records in the WARC file{}",
            archive
                .skipped
                .first()
                .map(|s| format!(" (first skipped: {s})"))
                .unwrap_or_default()
        )));
    }
    Ok(archive)
}

/// Parses a WARC `response` block: an HTTP/1.x response head and body.
fn response(url: &str, method: &str, block: &[u8]) -> Result<Exchange, String> {
    let mut buf = BytesMut::from(block);
    let m = Method::from_bytes(method.as_bytes());
    let head = parse_response(&mut buf, &limits(), &m)
        .map_err(|e| format!("bad HTTP response head: {e}"))?
        .ok_or("incomplete HTTP response head")?;
    let body = match head.body_framing() {
        BodyFraming::Empty => Bytes::new(),
        BodyFraming::Length(n) => {
            if (buf.len() as u64) < n {
                return Err(format!(
                    "body truncated: {} of {n} bytes (Content-Length)",
                    buf.len()
                ));
            }
            buf.split_to(n as usize).freeze()
        }
        BodyFraming::CloseDelimited => buf.split().freeze(),
        framing @ BodyFraming::Chunked => {
            let mut dec = Decoder::new(framing, &limits());
            let mut out = BytesMut::new();
            loop {
                match dec.decode(&mut buf) {
                    Ok(Decoded::Data(d)) => out.extend_from_slice(&d),
                    Ok(Decoded::Done) => break,
                    Ok(Decoded::NeedMore) => return Err("chunked body truncated".into()),
                    Err(e) => return Err(format!("bad chunked body: {e}")),
                }
            }
            out.freeze()
        }
    };
    let headers = head
        .iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(b"transfer-encoding"))
        .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), v.to_vec()))
        .collect();
    Ok(Exchange {
        method: method.to_string(),
        url: url.to_string(),
        request_head: None,
        status: head.status(),
        reason: String::from_utf8_lossy(head.reason()).into_owned(),
        headers,
        body,
        timing: None,
    })
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The response block as written: status line, the recorded fields (no
/// `Transfer-Encoding`, `Content-Length` = the body's length), the body.
pub fn response_block(e: &Exchange) -> Vec<u8> {
    let mut out = Vec::with_capacity(e.body.len() + 512);
    let reason = if e.reason.is_empty() {
        pagewire_h1::reason_phrase(e.status)
    } else {
        &e.reason
    };
    out.extend_from_slice(format!("HTTP/1.1 {} {reason}\r\n", e.status).as_bytes());
    let mut length_written = false;
    for (n, v) in &e.headers {
        if n.eq_ignore_ascii_case("transfer-encoding") {
            continue;
        }
        if n.eq_ignore_ascii_case("content-length") {
            if length_written {
                continue;
            }
            length_written = true;
            out.extend_from_slice(format!("{n}: {}\r\n", e.body.len()).as_bytes());
            continue;
        }
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    if !length_written && !e.body.is_empty() {
        out.extend_from_slice(format!("Content-Length: {}\r\n", e.body.len()).as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&e.body);
    out
}

#[allow(clippy::too_many_arguments)]
fn record_bytes(
    ty: RecordType,
    id: &str,
    concurrent: Option<&str>,
    uri: &str,
    date: &str,
    content_type: &str,
    digest: Option<String>,
    timing: Option<&crate::Timing>,
    block: &[u8],
) -> Result<Vec<u8>, ArchiveError> {
    let mut headers: HashMap<WarcHeader, Vec<u8>> = HashMap::new();
    headers.insert(WarcHeader::WarcType, ty.to_string().into_bytes());
    headers.insert(WarcHeader::RecordID, id.as_bytes().to_vec());
    headers.insert(WarcHeader::Date, date.as_bytes().to_vec());
    headers.insert(WarcHeader::TargetURI, uri.as_bytes().to_vec());
    headers.insert(WarcHeader::ContentType, content_type.as_bytes().to_vec());
    headers.insert(
        WarcHeader::ContentLength,
        block.len().to_string().into_bytes(),
    );
    headers.insert(
        WarcHeader::BlockDigest,
        format!("sha256:{}", hex_of(&Sha256::digest(block))).into_bytes(),
    );
    if let Some(c) = concurrent {
        headers.insert(WarcHeader::ConcurrentTo, c.as_bytes().to_vec());
    }
    if let Some(d) = digest {
        headers.insert(WarcHeader::PayloadDigest, d.into_bytes());
    }
    if let Some(t) = timing {
        headers.insert(
            WarcHeader::from(crate::TIMING_FIELD),
            t.to_field().into_bytes(),
        );
    }
    let raw = RawRecordHeader {
        version: "1.1".to_string(),
        headers,
    };
    let mut out = Vec::with_capacity(block.len() + 512);
    WarcWriter::new(&mut out)
        .write_raw(raw, &block)
        .map_err(|e| ArchiveError::new(format!("cannot format a WARC record: {e}")))?;
    Ok(out)
}

/// Writes `exchanges` to `path` as WARC/1.1 (a `warcinfo` record, then a
/// request and a response record per exchange); a name ending in `.gz`
/// gzips every record as its own member. Written to a temporary name
/// first, then renamed: a failed write leaves no partial archive.
pub fn write(path: &Path, exchanges: &[Exchange], software: &str) -> Result<u64, ArchiveError> {
    write_with_info(path, exchanges, software, &[])
}

/// [`write`], with more `warcinfo` fields after `software` and `format`
/// (a value's line breaks become spaces: one field, one line).
pub fn write_with_info(
    path: &Path,
    exchanges: &[Exchange],
    software: &str,
    info: &[(&str, String)],
) -> Result<u64, ArchiveError> {
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut records: Vec<Vec<u8>> = Vec::with_capacity(exchanges.len() * 2 + 1);
    let mut fields = format!("software: {software}\r\nformat: WARC File Format 1.1\r\n");
    for (name, value) in info {
        let value: String = value
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        fields.push_str(&format!("{name}: {value}\r\n"));
    }
    records.push(record_bytes(
        RecordType::WarcInfo,
        &Record::<BufferedBody>::generate_record_id(),
        None,
        "",
        &date,
        "application/warc-fields",
        None,
        None,
        fields.as_bytes(),
    )?);
    for e in exchanges {
        let req_id = Record::<BufferedBody>::generate_record_id();
        let resp_id = Record::<BufferedBody>::generate_record_id();
        let request = match &e.request_head {
            Some(h) => h.to_vec(),
            None => {
                let (_, authority, target) = crate::split_url(&e.url).ok_or_else(|| {
                    ArchiveError::new(format!("not an absolute URL: {:?}", e.url))
                })?;
                format!(
                    "{} {} HTTP/1.1\r\nHost: {authority}\r\n\r\n",
                    e.method,
                    if target.is_empty() { "/" } else { target }
                )
                .into_bytes()
            }
        };
        records.push(record_bytes(
            RecordType::Request,
            &req_id,
            Some(&resp_id),
            &e.url,
            &date,
            "application/http; msgtype=request",
            None,
            None,
            &request,
        )?);
        records.push(record_bytes(
            RecordType::Response,
            &resp_id,
            Some(&req_id),
            &e.url,
            &date,
            "application/http; msgtype=response",
            Some(format!("sha256:{}", hex_of(&Sha256::digest(&e.body)))),
            e.timing.as_ref(),
            &response_block(e),
        )?);
    }
    let tmp = path.with_extension(format!(
        "{}.tmp",
        path.extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let write_all = || -> std::io::Result<u64> {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        let mut n = 0u64;
        for r in &records {
            if gz {
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(r)?;
                let member = enc.finish()?;
                f.write_all(&member)?;
                n += member.len() as u64;
            } else {
                f.write_all(r)?;
                n += r.len() as u64;
            }
        }
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(n)
    };
    write_all().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        ArchiveError::new(format!("cannot write {}: {e}", path.display()))
    })
}

/// Reads every record's bytes (for tests: the file as a plain WARC).
pub fn plain_bytes(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    } else {
        Ok(bytes.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(url: &str, body: &[u8]) -> Exchange {
        Exchange {
            method: "GET".into(),
            url: url.into(),
            request_head: None,
            status: 200,
            reason: "OK".into(),
            headers: vec![
                ("Content-Type".into(), b"text/plain".to_vec()),
                ("Content-Length".into(), b"999".to_vec()),
                ("ETag".into(), b"\"x\"".to_vec()),
            ],
            body: Bytes::copy_from_slice(body),
            timing: None,
        }
    }

    #[test]
    fn round_trip_plain_and_gzip() {
        let dir = std::env::temp_dir().join(format!("pagewire-warc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut timed = ex("http://a.test/", b"<html>hi</html>");
        timed.timing = Some(crate::Timing {
            sent_ms: 0.25,
            first_byte_ms: 150.5,
            done_ms: 151.0,
            rtt_ms: 0.5,
            server_ms: 149.75,
        });
        let items = vec![
            timed,
            ex("http://b.test:8080/x.css?v=2", &[0u8, 1, 2, 255, 13, 10]),
            ex("http://a.test/empty", b""),
        ];
        for name in ["s.warc", "s.warc.gz"] {
            let p = dir.join(name);
            write(&p, &items, "test").unwrap();
            let a = crate::Archive::load(&p).unwrap();
            assert_eq!(a.exchanges.len(), 3, "{name}");
            for (got, want) in a.exchanges.iter().zip(&items) {
                assert_eq!(got.url, want.url);
                assert_eq!(got.body, want.body);
                assert_eq!(got.status, 200);
                assert_eq!(got.timing, want.timing, "{name}");
                assert_eq!(
                    got.header("content-length"),
                    Some(want.body.len().to_string().as_bytes())
                );
                assert!(got.request_head.as_ref().unwrap().starts_with(b"GET "));
            }
            // warcinfo skipped and counted.
            assert_eq!(a.skipped_total, 1);
        }
        let gz = std::fs::read(dir.join("s.warc.gz")).unwrap();
        assert!(plain_bytes(&gz).unwrap().starts_with(b"WARC/1.1\r\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn warcinfo_fields_are_written_and_read_back() {
        let dir = std::env::temp_dir().join(format!("pagewire-warcinfo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("i.warc.gz");
        let link = "{\"profile\": \"wan\",\n \"rtt_ms\": 90.0}".to_string();
        write_with_info(
            &p,
            &[ex("http://a.test/", b"x")],
            "test",
            &[(crate::RECORDED_LINK_FIELD, link)],
        )
        .unwrap();
        let a = crate::Archive::load(&p).unwrap();
        assert_eq!(a.info_field("software"), Some("test"));
        // One line: the value's line break became a space.
        assert_eq!(
            a.info_field("Pagewire-Recorded-Link"),
            Some("{\"profile\": \"wan\",  \"rtt_ms\": 90.0}")
        );
        assert_eq!(a.info_field("absent"), None);
        assert_eq!(a.exchanges.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn chunked_responses_are_dechunked_and_digests_checked() {
        let block = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let e = response("http://a.test/c", "GET", block).unwrap();
        assert_eq!(&e.body[..], b"abcde");
        assert!(e.header("transfer-encoding").is_none());
        assert!(response(
            "http://a.test/t",
            "GET",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
        )
        .unwrap_err()
        .contains("truncated"));
        // A tampered body fails its digest.
        let dir = std::env::temp_dir().join(format!("pagewire-warc-d-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("d.warc");
        write(&p, &[ex("http://a.test/", b"hello")], "test").unwrap();
        let s = std::fs::read(&p).unwrap();
        let i = s.windows(5).rposition(|w| w == b"hello").unwrap();
        let mut t = s.clone();
        t[i] = b'j';
        let err = read(&t).unwrap_err();
        assert!(err.0.contains("digest mismatch"), "{err}");
        assert!(read(b"not a warc").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
