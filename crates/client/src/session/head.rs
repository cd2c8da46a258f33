//! What a response head means: interim or final, not modified or changed
//! (revalidation), whether and how its body is decoded, and what starts
//! with it (the cached page parsed again, a stylesheet parsed as it
//! arrives). Each strategy behaviour reads the head through its hook
//! (`prefetch`, `package`, `range`, `getall`).

use super::*;

/// The fields of a final response head the session keeps.
struct Fields {
    content_encoding: Option<String>,
    etag: Option<String>,
    last_modified: Option<String>,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
}

impl Fields {
    fn of(head: &ResponseHead) -> Fields {
        Fields {
            content_encoding: field_text(head, "content-encoding")
                .filter(|e| !e.eq_ignore_ascii_case("identity")),
            etag: field_text(head, "etag"),
            last_modified: field_text(head, "last-modified"),
            content_type: field_text(head, "content-type"),
            headers: head
                .iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(k).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect(),
        }
    }
}

/// A field's value as trimmed text.
pub(super) fn field_text(head: &ResponseHead, name: &str) -> Option<String> {
    head.header(name)
        .map(|v| String::from_utf8_lossy(v).trim().to_string())
}

/// Whether a Content-Type value names `media` (parameters ignored).
pub(super) fn is_media_type(content_type: &str, media: &str) -> bool {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case(media)
}

impl Ctx {
    /// A response head arrived for `id` on `conn`.
    pub(super) fn on_head(
        &self,
        st: &mut State,
        id: ObjId,
        conn: usize,
        head: &ResponseHead,
        now: Instant,
    ) -> Result<(HeadInfo, Vec<ObjId>), FetchError> {
        let now = self.since_start(now);
        st.bytes.header_bytes_received += head.raw().len() as u64;
        let status = head.status();
        if (100..200).contains(&status) {
            if status == 101 {
                let url = st.objs[id].url.clone();
                return Err(FetchError::object(
                    &url,
                    "server switched protocols (101) unasked",
                ));
            }
            let info = HeadInfo {
                closing: false,
                interim: true,
            };
            return Ok((info, Vec::new()));
        }
        let fields = Fields::of(head);
        if self.cfg.prefetch {
            self.note_prefetch_hints(st, id, head);
        }
        let package = self.package_for(id, status, fields.content_type.as_deref());
        let (not_modified, changed) = validate(&st.objs[id], status, &fields)?;
        let inflater =
            self.choose_inflater(st, id, fields.content_encoding.as_deref(), not_modified)?;
        let spool = self.spool_for(st, id, inflater.is_some());
        let (part, preset) = range::check_part(&mut st.objs[id], status, head)?;
        let getall_boundary =
            self.getall_boundary(&st.objs[id], id, status, fields.content_type.as_deref());
        let mut r = InProgress {
            conn,
            status,
            head_len: head.raw().len() as u64,
            headers: fields.headers,
            http_version: self.http_version(head),
            first_byte: now,
            body: Vec::new(),
            hasher: Sha256::new(),
            size: 0,
            wire_bytes: 0,
            inflater,
            spool,
            content_encoding: fields.content_encoding,
            content_type: fields.content_type,
            etag: fields.etag,
            last_modified: fields.last_modified,
            not_modified,
            changed,
            getall_boundary,
            package,
            css: None,
            part,
        };
        if !preset.is_empty() {
            r.hasher.update(&preset);
            r.size = preset.len() as u64;
            r.body = preset;
        }
        st.objs[id].resp = Some(r);
        let new_ids = self.start_content(st, id, status, not_modified);
        let info = HeadInfo {
            closing: !head.wants_keep_alive(),
            interim: false,
        };
        Ok((info, new_ids))
    }

    /// h2 and h3 hand the session an HTTP/1.1 rendering of their response
    /// heads; the record names the protocol that carried it.
    fn http_version(&self, head: &ResponseHead) -> &'static str {
        match self.cfg.strategy {
            Strategy::H2 => "HTTP/2",
            Strategy::H3 => "HTTP/3",
            _ => head.version().as_str(),
        }
    }

    /// The decoder of the body's Content-Encoding, if it is decoded.
    fn choose_inflater(
        &self,
        st: &mut State,
        id: ObjId,
        content_encoding: Option<&str>,
        not_modified: bool,
    ) -> Result<Option<Inflater>, FetchError> {
        let o = &st.objs[id];
        let asked = asks_deflate(self.cfg.strategy, o.method, &o.path);
        let Some(e) = content_encoding else {
            return Ok(None);
        };
        if not_modified || o.method != RequestMethod::Get {
            return Ok(None);
        }
        if e.eq_ignore_ascii_case("deflate") && (asked || self.cfg.decode_unasked) {
            return Ok(Some(Inflater::with_limit(self.cfg.max_inflated)));
        }
        if asked {
            return Err(FetchError::object(
                &o.url,
                format!("the server sent Content-Encoding {e:?}; the robot asked for deflate only"),
            ));
        }
        // RFC 9110 §12.5.3 lets a server send a coding not asked for;
        // decoding it would trust what the robot never negotiated (a
        // deflate bomb to a plain GET).
        let w = format!(
            "{}: Content-Encoding {e:?} not asked for: body kept as sent, not decoded{}",
            o.url,
            if e.eq_ignore_ascii_case("deflate") {
                " (--decode-unasked inflates it)"
            } else {
                ""
            }
        );
        st.warnings.push(w);
        Ok(None)
    }

    /// An inflated body kept for the cache only goes to a cache file as it
    /// is inflated, never whole into memory. This is the one file the
    /// session writes itself: as effects drained after each read, one
    /// read's inflation (up to 1,000 times its size) would sit in memory.
    fn spool_for(&self, st: &mut State, id: ObjId, inflated: bool) -> Option<Spool> {
        let cache = self.spools.as_ref()?;
        if !inflated || id == PAGE || self.cfg.keep_bodies {
            return None;
        }
        match cache.spool() {
            Ok(s) => Some(s),
            // Not cached then, but fetched all the same.
            Err(e) => {
                let w = format!(
                    "{}: cannot create a cache file ({e}); not cached",
                    st.objs[id].url
                );
                st.warnings.push(w);
                None
            }
        }
    }

    /// What starts with the head: the cached page parsed again (304), a
    /// cached stylesheet parsed, or a stylesheet parsed as it arrives.
    fn start_content(
        &self,
        st: &mut State,
        id: ObjId,
        status: u16,
        not_modified: bool,
    ) -> Vec<ObjId> {
        let o = &st.objs[id];
        let stylesheet = id != PAGE && o.found.is_some_and(|(_, r)| r.is_stylesheet());
        if id == PAGE && not_modified {
            // Parse the cached page as if it had just arrived.
            let body = o.cached.as_ref().expect("checked").body.clone();
            return self.discover(st, &body);
        }
        if stylesheet && not_modified && !o.css_parsed {
            let body = o.cached.as_ref().expect("checked").body.clone();
            return self.parse_whole_stylesheet(st, id, &body);
        }
        if stylesheet && status == 200 && o.method == RequestMethod::Get && !o.css_parsed {
            self.start_stylesheet(st, id);
        }
        Vec::new()
    }

    /// A browser applies a stylesheet only as text/css (standards mode);
    /// one without a type is sniffed as CSS here.
    fn start_stylesheet(&self, st: &mut State, id: ObjId) {
        let o = &mut st.objs[id];
        o.css_parsed = true;
        let content_type = o.resp.as_ref().and_then(|r| r.content_type.clone());
        if content_type
            .as_deref()
            .is_none_or(|t| is_media_type(t, "text/css"))
        {
            let css = CssDiscoverer::new(&o.url, self.cfg.viewport);
            if let Some(r) = o.resp.as_mut() {
                r.css = Some(css);
            }
            return;
        }
        let w = format!(
            "{}: a stylesheet served as {:?}, not text/css: not applied, its references not fetched",
            o.url,
            content_type.unwrap_or_default()
        );
        st.warnings.push(w);
    }
}

/// Revalidation: (not modified, changed) for a final response to `o`.
fn validate(o: &Obj, status: u16, fields: &Fields) -> Result<(bool, bool), FetchError> {
    if status == 304 {
        if o.cached.is_none() {
            return Err(FetchError::object(
                &o.url,
                "304 Not Modified to a request that was not conditional",
            ));
        }
        return Ok((true, false));
    }
    if o.method == RequestMethod::Head && status == 200 {
        let c = o.cached.as_ref().expect("HEAD only for cached objects");
        // A strong ETag match, else an equal Last-Modified, means the
        // cached copy is current (RFC 9110 §8.8.3.2, §8.8.2.2).
        let same = match (&fields.etag, &c.meta.etag) {
            (Some(a), Some(b)) => a == b,
            _ => fields.last_modified.is_some() && fields.last_modified == c.meta.last_modified,
        };
        return Ok((same, !same));
    }
    Ok((false, false))
}
