//! Body bytes of a response: decoded (deflate), hashed, kept or spooled,
//! fed to the page's parser or a stylesheet's as they arrive, or to the
//! package reader (objpack).

use super::*;

impl Ctx {
    /// Body bytes (framing removed) for `id`; returns newly found objects.
    pub(super) fn on_body(
        &self,
        st: &mut State,
        id: ObjId,
        data: &[u8],
        now: Instant,
    ) -> Result<Vec<ObjId>, FetchError> {
        st.bytes.payload_bytes_received += data.len() as u64;
        let keep = self.keep_bodies();
        let o = &st.objs[id];
        let css_preload =
            is_css_preload(o, o.resp.as_ref().and_then(|r| r.content_type.as_deref()));
        let o = &mut st.objs[id];
        let url = o.url.clone();
        let r = o.resp.as_mut().expect("head first");
        r.wire_bytes += data.len() as u64;
        if let Some(mut rx) = r.package.take() {
            let result = self.package_body(st, &mut rx, data, self.since_start(now));
            if let Some(r) = st.objs[id].resp.as_mut() {
                r.package = Some(rx);
            }
            result?;
            return Ok(Vec::new());
        }
        let parse = id == PAGE && r.status == 200 && r.getall_boundary.is_none();
        // The page's text goes to the parser step by step as it is
        // inflated, never collected beside the body; a
        // stylesheet's references are requested while it arrives.
        let mut refs = Vec::new();
        let mut css_refs = Vec::new();
        let mut css_text = Vec::new();
        let by_use = self.fonts_by_use();
        let st_fields = &mut *st;
        let r = st_fields.objs[id].resp.as_mut().expect("head first");
        let mut parser = st_fields.discoverer.as_mut().filter(|_| parse);
        let mut inflater = r.inflater.take();
        // A 206 part is kept whole to be joined with the other part.
        let keep_this = keep || id == PAGE || css_preload || r.part.is_some();
        let fed = {
            let mut sink = |content: &[u8]| -> Result<(), ContentError> {
                take_content(r, &url, keep_this, content)?;
                if let Some(d) = parser.as_mut() {
                    refs.extend(d.feed_refs(content));
                }
                if let Some(c) = r.css.as_mut() {
                    css_refs.extend(c.feed(content));
                    if by_use {
                        css_text.extend_from_slice(content);
                    }
                }
                Ok(())
            };
            match inflater.as_mut() {
                Some(inf) => inf.feed_with(data, &mut sink),
                None => sink(data),
            }
        };
        r.inflater = inflater;
        if !css_text.is_empty() {
            let have = st.css_texts.get(&id).map_or(0, Vec::len);
            let room = pagewire_discover::css::MAX_STYLESHEET_BYTES.saturating_sub(have);
            keep_css_text(st, id, &css_text[..css_text.len().min(room)]);
        }
        let mut added = self.admit(st, refs, ObjectKind::Embedded, PAGE);
        if !css_refs.is_empty() {
            added.extend(self.admit(st, css_refs, ObjectKind::Embedded, id));
        }
        fed.map_err(|e| e.into_fetch(&url))?;
        Ok(added)
    }
}

/// A `preload` answered with CSS: its body is kept, in case the page links
/// it as a stylesheet later (`<link rel=preload as=style>` first).
pub(super) fn is_css_preload(o: &Obj, content_type: Option<&str>) -> bool {
    o.found.is_some_and(|(_, r)| r == Rule::Preload)
        && content_type.is_some_and(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("text/css")
        })
}

/// Why body content could not be taken: the inflater's error or ours.
pub(super) enum ContentError {
    Inflate(InflateError),
    Fetch(FetchError),
}

impl From<InflateError> for ContentError {
    fn from(e: InflateError) -> Self {
        ContentError::Inflate(e)
    }
}

impl ContentError {
    pub(super) fn into_fetch(self, url: &str) -> FetchError {
        match self {
            ContentError::Inflate(e) => {
                FetchError::object(url, format!("Content-Encoding deflate: {e}"))
            }
            ContentError::Fetch(e) => e,
        }
    }
}

/// Decoded body content of `r`: hashed and counted, then written to its
/// spool file, or kept in memory when `keep` (up to 256 MiB), or dropped.
pub(super) fn take_content(
    r: &mut InProgress,
    url: &str,
    keep: bool,
    content: &[u8],
) -> Result<(), ContentError> {
    r.hasher.update(content);
    r.size += content.len() as u64;
    if let Some(spool) = r.spool.as_mut() {
        spool.write(content).map_err(|source| {
            ContentError::Fetch(FetchError::Io {
                what: format!("cannot write the cache file of {url}"),
                source,
            })
        })?;
    } else if keep {
        if r.body.len() + content.len() > MAX_ENTRY_BODY_BYTES {
            return Err(ContentError::Fetch(FetchError::object(
                url,
                "object larger than 256 MiB",
            )));
        }
        r.body.extend_from_slice(content);
    }
    Ok(())
}
