//! HTTP Archive (HAR 1.2, http://www.softwareishard.com/blog/har-12-spec/)
//! output, so a fetch can be opened in browser tools and HAR viewers.

use std::time::Duration;

use serde_json::{json, Value};

use crate::report::{rfc3339, FetchReport};

fn headers(list: &[(String, String)]) -> Value {
    Value::Array(
        list.iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect(),
    )
}

/// `response.content`; with the body when the fetch kept bodies (HAR 1.2
/// `text`, base64: the decoded content, so `serve --replay` can serve it).
fn content(o: &crate::report::ObjectRecord) -> Value {
    let mut c = json!({
        "size": o.size,
        "compression": o.size as i64 - o.body_bytes_received as i64,
        "mimeType": o.content_type.clone().unwrap_or_default(),
    });
    if let Some(body) = &o.body {
        use base64::Engine as _;
        c["text"] = Value::String(base64::engine::general_purpose::STANDARD.encode(body));
        c["encoding"] = Value::String("base64".into());
    }
    c
}

/// The report as a HAR document.
pub fn to_har(report: &FetchReport) -> Value {
    let started = report.started_at;
    let at = |ms: f64| rfc3339(started + Duration::from_secs_f64(ms.max(0.0) / 1e3));
    let entries: Vec<Value> = report
        .objects
        .iter()
        .map(|o| {
            let mut lines = o.request_head.split("\r\n");
            let request_line = lines.next().unwrap_or("");
            let req_version = match o.http_version {
                // h2/h3 requests were rendered as HTTP/1.1 for the session.
                v @ ("HTTP/2" | "HTTP/3") => v,
                _ => request_line.rsplit(' ').next().unwrap_or("HTTP/1.1"),
            };
            let req_headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.to_string(), v.trim().to_string()))
                .collect();
            let query: Vec<Value> = o
                .url
                .split_once('?')
                .map(|(_, q)| {
                    q.split('&')
                        .map(|kv| {
                            let (n, v) = kv.split_once('=').unwrap_or((kv, ""));
                            json!({"name": n, "value": v})
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "pageref": "page_1",
                "startedDateTime": at(o.requested_ms),
                "time": o.done_ms - o.requested_ms,
                "request": {
                    "method": o.method,
                    "url": o.url,
                    "httpVersion": req_version,
                    "cookies": [],
                    "headers": headers(&req_headers),
                    "queryString": query,
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
                "timings": {
                    "send": 0,
                    "wait": o.first_byte_ms - o.requested_ms,
                    "receive": o.done_ms - o.first_byte_ms,
                },
                "connection": o.connection.to_string(),
                // Chrome's HAR field: what made the request (here, where
                // discovery found the reference and by which rule).
                "_initiator": match (&o.found_in, o.found_by) {
                    (Some(url), Some(rule)) => json!({"type": "parser", "url": url, "rule": rule}),
                    _ => json!({"type": "other"}),
                },
                "comment": format!("{:?}, attempt {}", o.outcome, o.attempts),
            })
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
