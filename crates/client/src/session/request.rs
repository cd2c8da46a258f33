//! What a request looks like, as small as the paper's robot made them
//! ("very careful not to generate unnecessary headers"): request line,
//! Host, a short User-Agent, and only what the strategy needs.

use super::*;

pub(super) type Headers = Vec<(&'static str, String)>;

impl Ctx {
    /// The request for `id` on connection `conn`, built at `now`.
    pub(super) fn request(
        &self,
        st: &mut State,
        id: ObjId,
        conn: usize,
        now: Instant,
    ) -> Result<Vec<u8>, FetchError> {
        let now = self.since_start(now);
        let version = if self.cfg.strategy == Strategy::Http10 {
            Version::Http10
        } else {
            Version::Http11
        };
        let mut headers = self.base_headers();
        let o = &st.objs[id];
        self.validator_headers(o, &mut headers);
        self.strategy_headers(id, o, &mut headers);
        let (method, target, list) = self.request_body(st, id, &mut headers);
        let mut out = Vec::with_capacity(256);
        if pagewire_h1::write_request_head(&mut out, method.as_str(), &target, version, headers)
            .is_err()
        {
            let url = st.objs[id].url.clone();
            return Err(FetchError::object(
                &url,
                "cannot write a valid request (bad bytes in a cached validator?)",
            ));
        }
        out.extend_from_slice(list.as_bytes());
        count_request(st, id, conn, now, method, &out, list.len());
        Ok(out)
    }

    /// Host, the request profile's headers and the User-Agent.
    fn base_headers(&self) -> Headers {
        let profile = self.cfg.request_profile;
        let mut headers: Headers = vec![("Host", self.target.authority.clone())];
        headers.extend(
            profile
                .extra_headers()
                .iter()
                .map(|&(k, v)| (k, v.to_string())),
        );
        headers.push((
            "User-Agent",
            profile
                .user_agent()
                .map_or_else(|| self.cfg.user_agent.clone(), str::to_string),
        ));
        headers
    }

    /// A conditional GET's validators (revalidation).
    fn validator_headers(&self, o: &Obj, headers: &mut Headers) {
        let Some(c) = o.cached.as_ref().filter(|_| o.conditional) else {
            return;
        };
        if o.method != RequestMethod::Get {
            return;
        }
        // RFC 9110 §13.1.2/§13.1.3. HTTP/1.0 has only dates.
        let etag = c
            .meta
            .etag
            .as_ref()
            .filter(|_| self.cfg.strategy != Strategy::Http10);
        if let Some(etag) = etag {
            headers.push(("If-None-Match", etag.clone()));
        }
        // libwww 5.1 sent one validator: the entity tag when it had one,
        // else the date (docs/bench.md, "Revalidation requests").
        let one_validator = self.cfg.request_profile == RequestProfile::Libwww1997;
        if !(one_validator && etag.is_some()) {
            if let Some(lm) = &c.meta.last_modified {
                headers.push(("If-Modified-Since", lm.clone()));
            }
        }
    }

    /// What the strategy asks for beyond a plain GET: deflate, the
    /// package, a prefetch's purpose, a range, GETALL.
    fn strategy_headers(&self, id: ObjId, o: &Obj, headers: &mut Headers) {
        let strategy = self.cfg.strategy;
        if asks_deflate(strategy, o.method, &o.path) {
            // Paper 001 compresses the HTML only; images are already
            // compressed, so their requests do not carry the header.
            headers.push(("Accept-Encoding", "deflate".to_string()));
        }
        if strategy == Strategy::Objpack && id == PAGE && o.method == RequestMethod::Get {
            // The package if the server has one, else the page (RFC 9110
            // §12.5.1); */* keeps error pages and other types acceptable.
            headers.push((
                "Accept",
                format!(
                    "{}, text/html;q=0.9, */*;q=0.8",
                    pagewire_objpack::MEDIA_TYPE
                ),
            ));
        }
        if o.kind == ObjectKind::Prefetch {
            headers.push(("Sec-Purpose", "prefetch".to_string()));
        }
        if let Some(range) = o.range.header() {
            headers.push(("Range", range));
            if matches!(o.range, RangePart::Head { .. }) {
                self.if_range_header(o, headers);
            }
        }
        if strategy == Strategy::Getall && id == PAGE && self.getall_known.is_none() {
            headers.push((crate::getall::GETALL_FIELD, "1".to_string()));
        }
    }

    /// The method, the target and the body (a GETLIST's `text/uri-list`,
    /// with its headers).
    fn request_body(
        &self,
        st: &State,
        id: ObjId,
        headers: &mut Headers,
    ) -> (RequestMethod, String, String) {
        let o = &st.objs[id];
        if id == PAGE && o.method == RequestMethod::Getlist {
            let (list, etags) = self.revisit_list(o);
            if !etags.is_empty() {
                headers.push(("If-None-Match", etags.join(", ")));
            }
            headers.push(("Content-Type", "text/uri-list".to_string()));
            headers.push(("Content-Length", list.len().to_string()));
            return (o.method, "/".to_string(), list);
        }
        if o.getlist.is_empty() {
            return (o.method, o.path.clone(), String::new());
        }
        // RFC 2483 text/uri-list, CRLF-terminated lines.
        let mut list = String::new();
        for &i in &o.getlist {
            list.push_str(&st.objs[i].path);
            list.push_str("\r\n");
        }
        headers.push(("Content-Type", "text/uri-list".to_string()));
        headers.push(("Content-Length", list.len().to_string()));
        (RequestMethod::Getlist, o.path.clone(), list)
    }
}

/// The counters of a request built: attempts, retries, methods, bytes.
fn count_request(
    st: &mut State,
    id: ObjId,
    conn: usize,
    now: Duration,
    method: RequestMethod,
    out: &[u8],
    list_len: usize,
) {
    let refused = st.getlist_refused;
    let o = &mut st.objs[id];
    o.attempts += 1;
    // A GET after a HEAD that showed a change, or the rest of a range,
    // is not a retry.
    let second = o.changed || matches!(o.range, RangePart::Rest { .. }) || (id == PAGE && refused);
    let retry = o.attempts > 1 && !(second && o.attempts == 2);
    o.requested = now;
    o.sent = None;
    o.request_len = out.len() as u64;
    o.request_head = String::from_utf8_lossy(out).into_owned();
    *st.by_method.entry(method).or_default() += 1;
    st.unsent.push((conn, id));
    if retry {
        st.retried += 1;
    }
    st.bytes.header_bytes_sent += (out.len() - list_len) as u64;
    st.bytes.payload_bytes_sent += list_len as u64;
    if let Some(c) = st.conns.get_mut(conn) {
        c.requests_sent += 1;
    }
}

/// Whether the robot's request for `path` carries `Accept-Encoding: deflate`.
pub(super) fn asks_deflate(strategy: Strategy, method: RequestMethod, path: &str) -> bool {
    // Paper 001 compresses the HTML only; images are already compressed, so
    // their requests do not carry the header.
    matches!(
        strategy,
        Strategy::PipelineDeflate | Strategy::H2 | Strategy::H3
    ) && method == RequestMethod::Get
        && !is_image_path(path)
}

fn is_image_path(path: &str) -> bool {
    let p = path.split('?').next().unwrap_or(path).to_ascii_lowercase();
    [
        ".gif", ".png", ".jpg", ".jpeg", ".webp", ".ico", ".avif", ".bmp",
    ]
    .iter()
    .any(|ext| p.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_by_extension() {
        assert!(is_image_path("/i/a.GIF?x=1"));
        assert!(!is_image_path("/s.css"));
        assert!(!is_image_path("/"));
    }
}
