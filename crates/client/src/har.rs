//! HTTP Archive (HAR 1.2, http://www.softwareishard.com/blog/har-12-spec/)
//! output, so a fetch can be opened in browser tools and HAR viewers.

use std::time::Duration;

use serde_json::{json, Value};

use crate::report::{rfc3339, ConnectionRecord, FetchReport, ObjectRecord};

fn headers(list: &[(String, String)]) -> Value {
    Value::Array(
        list.iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect(),
    )
}

/// Whether a media type is text a reader wants to see as text.
fn is_text(mime: &str) -> bool {
    let m = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    m.starts_with("text/")
        || m.ends_with("+xml")
        || m.ends_with("+json")
        || matches!(
            m.as_str(),
            "application/json"
                | "application/javascript"
                | "application/ecmascript"
                | "application/xml"
                | "application/x-javascript"
                | "image/svg+xml"
        )
}

/// `response.content`; with the body when the fetch kept bodies (HAR 1.2
/// `text`: the decoded content, so `serve --replay` can serve it; as text
/// for text types that are valid UTF-8, else base64 with `encoding`).
fn content(o: &crate::report::ObjectRecord) -> Value {
    let mime = o.content_type.clone().unwrap_or_default();
    let mut c = json!({
        "size": o.size,
        "compression": o.size as i64 - o.body_bytes_received as i64,
        "mimeType": mime,
    });
    if let Some(body) = &o.body {
        match std::str::from_utf8(body) {
            Ok(text) if is_text(&mime) => c["text"] = Value::String(text.to_string()),
            _ => {
                use base64::Engine as _;
                c["text"] = Value::String(base64::engine::general_purpose::STANDARD.encode(body));
                c["encoding"] = Value::String("base64".into());
            }
        }
    }
    c
}

/// HAR `timings` of one object and the time its entry starts (ms since
/// the fetch started). The request's own connection setup goes to the
/// first request on a connection: `connect` (with the TLS/QUIC handshake
/// inside it, as HAR 1.2 asks, and also as `ssl`); `blocked` is the wait in
/// the robot's own output buffer until the flush that sent the request (the
/// pipeline flush timer), also given as `_queued`; `dns` is -1 (the robot
/// connects to an address it resolved once, before the fetch); `wait` runs
/// from the flush to the first response byte. `time` is their sum.
fn timings(o: &crate::report::ObjectRecord, setup: Option<&ConnectionRecord>) -> (f64, Value) {
    let sent = o.sent_ms.unwrap_or(o.requested_ms);
    let queued = (sent - o.requested_ms).max(0.0);
    let (start, connect, ssl, blocked) = match setup.and_then(|c| Some((c, c.connect_ms?))) {
        Some((c, tcp)) => {
            let ssl = c.ssl_ms.unwrap_or(0.0);
            let start = c.opened_ms - tcp;
            // From the end of the handshakes to the flush.
            let blocked = (sent - (c.opened_ms + ssl)).max(0.0);
            (start, tcp + ssl, c.ssl_ms.unwrap_or(-1.0), blocked)
        }
        None => (o.requested_ms, -1.0, -1.0, queued),
    };
    let wait = (o.first_byte_ms - sent).max(0.0);
    let receive = (o.done_ms - o.first_byte_ms).max(0.0);
    let time = blocked + connect.max(0.0) + wait + receive;
    (
        start,
        json!({
            "blocked": blocked,
            "dns": -1,
            "connect": connect,
            "ssl": ssl,
            "send": 0,
            "wait": wait,
            "receive": receive,
            "_queued": queued,
            "time": time,
        }),
    )
}

/// The index of the first object requested on each connection: its entry
/// carries the connection's setup.
fn first_on_connection(report: &FetchReport) -> std::collections::HashMap<usize, usize> {
    let mut first_on: std::collections::HashMap<usize, usize> = Default::default();
    for (i, o) in report.objects.iter().enumerate() {
        if o.attempts == 0 {
            continue; // not requested itself (a package part, the cache)
        }
        let e = first_on.entry(o.connection).or_insert(i);
        if o.requested_ms < report.objects[*e].requested_ms {
            *e = i;
        }
    }
    first_on
}

/// The request's HTTP version and header fields, from its head.
fn request_fields(o: &ObjectRecord) -> (&str, Vec<(String, String)>) {
    let mut lines = o.request_head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let version = match o.http_version {
        // h2/h3 requests were rendered as HTTP/1.1 for the session.
        v @ ("HTTP/2" | "HTTP/3") => v,
        _ => request_line.rsplit(' ').next().unwrap_or("HTTP/1.1"),
    };
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_string(), v.trim().to_string()))
        .collect();
    (version, fields)
}

/// The query string of a URL, as HAR name/value pairs.
fn query_string(url: &str) -> Vec<Value> {
    url.split_once('?')
        .map(|(_, q)| {
            q.split('&')
                .map(|kv| {
                    let (n, v) = kv.split_once('=').unwrap_or((kv, ""));
                    json!({"name": n, "value": v})
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One object's HAR entry; `setup` is its connection's, if its request
/// was the first on it.
fn entry(o: &ObjectRecord, setup: Option<&ConnectionRecord>, at: impl Fn(f64) -> String) -> Value {
    let (start, mut timings) = timings(o, setup);
    let time = timings["time"].take();
    if let Some(t) = timings.as_object_mut() {
        t.remove("time");
    }
    let (req_version, req_headers) = request_fields(o);
    json!({
        "pageref": "page_1",
        "startedDateTime": at(start),
        "time": time,
        "request": {
            "method": o.method,
            "url": o.url,
            "httpVersion": req_version,
            "cookies": [],
            "headers": headers(&req_headers),
            "queryString": query_string(&o.url),
            "headersSize": o.request_bytes_sent,
            "bodySize": 0,
        },
        "response": {
            "status": o.status,
            "statusText": pagewire_h1::reason_phrase(o.status),
            "httpVersion": o.http_version,
            "cookies": [],
            "headers": headers(&o.response_headers),
            "content": content(o),
            "redirectURL": "",
            "headersSize": o.header_bytes_received,
            "bodySize": o.body_bytes_received,
        },
        "cache": {},
        "timings": timings,
        "connection": o.connection.to_string(),
        // Chrome's HAR field: what made the request (here, where discovery
        // found the reference and by which rule).
        "_initiator": match (&o.found_in, o.found_by) {
            (Some(url), Some(rule)) => json!({"type": "parser", "url": url, "rule": rule}),
            _ => json!({"type": "other"}),
        },
        "comment": format!("{:?}, attempt {}", o.outcome, o.attempts),
    })
}

/// The report as a HAR document.
pub fn to_har(report: &FetchReport) -> Value {
    let started = report.started_at;
    let at = |ms: f64| rfc3339(started + Duration::from_secs_f64(ms.max(0.0) / 1e3));
    let first_on = first_on_connection(report);
    let entries: Vec<Value> = report
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let setup = (first_on.get(&o.connection) == Some(&i))
                .then(|| report.connections.get(o.connection))
                .flatten();
            entry(o, setup, at)
        })
        .collect();
    json!({
        "log": {
            "version": "1.2",
            "creator": {"name": "pagewire", "version": env!("CARGO_PKG_VERSION")},
            "comment": format!("pagewire fetch --strategy {}{}", report.strategy,
                if report.revalidate { " --revalidate" } else { "" }),
            "pages": [{
                "startedDateTime": report.started,
                "id": "page_1",
                "title": report.url,
                "pageTimings": {"onContentLoad": report.page_complete_ms, "onLoad": report.total_ms},
            }],
            "entries": entries,
            "_crossOrigin": report.cross_origin,
        }
    })
}

/// The HAR document, pretty-printed.
pub fn to_har_string(report: &FetchReport) -> String {
    serde_json::to_string_pretty(&to_har(report)).expect("JSON values serialize")
}
