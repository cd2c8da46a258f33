//! A response is complete: what it makes of its object (a record, a body
//! kept, the object asked for again), and what to request next (references
//! found at the end, a GETALL's missing parts, the rests of range mode,
//! the fonts the page uses).

use super::*;

impl Ctx {
    /// The response for `id` is complete. Returns ids to request next: newly
    /// found objects, or `id` itself again (GET after a HEAD showed a change).
    pub(super) fn on_end(
        &self,
        st: &mut State,
        id: ObjId,
        now: Instant,
    ) -> Result<Vec<ObjId>, FetchError> {
        let now = self.since_start(now);
        let rx = st.objs[id].resp.as_mut().and_then(|r| r.package.take());
        let unpacked = rx.is_some();
        if let Some(rx) = rx {
            self.package_end(st, rx, now)?;
        }
        let url = st.objs[id].url.clone();
        let mut r = st.objs[id].resp.take().expect("head first");
        if !st.objs[id].getlist.is_empty() {
            let mut next = self.end_getlist(st, id, r, now);
            next.extend(self.choose_fonts(st));
            return Ok(next);
        }
        let tail = finish_inflate(&mut r, &url)?;
        if id == PAGE
            && st.objs[PAGE].method == RequestMethod::Getlist
            && r.getall_boundary.is_none()
        {
            return Ok(self.getlist_refused(st, &r));
        }
        let page_ok = id == PAGE && r.status == 200;
        if r.css.is_some() && self.fonts_by_use() && !tail.is_empty() {
            keep_css_text(st, id, &tail);
        }
        let css_refs = r.css.take().map(|mut c| {
            let mut refs = c.feed(&tail);
            refs.extend(c.finish());
            (refs, c)
        });
        let mut next = Vec::new();
        if let Some(b) = r.getall_boundary.take() {
            self.take_getall_parts(st, &mut r, &b, now)?;
            // The page part is parsed whole now; objects that came as parts
            // are already known, so discovery yields only missing ones.
            let page = std::mem::take(&mut r.body);
            next.extend(self.discover(st, &page));
            r.body = page;
        }
        if self.range_end(st, id, &mut r, &url, now, &mut next)? {
            return Ok(next);
        }
        if r.changed {
            self.refetch_changed(st, id, &r);
            next.push(id);
            return Ok(next);
        }
        self.record_response(st, id, &mut r, now);
        if page_ok && !tail.is_empty() {
            next.extend(self.discover(st, &tail));
        }
        if let Some((refs, css)) = css_refs {
            self.css_truncated(st, id, &css);
            next.extend(self.admit(st, refs, ObjectKind::Embedded, id));
        } else {
            // Preloaded as a style, and linked as a stylesheet while it was
            // arriving: parsed whole now.
            next.extend(self.parse_arrived_stylesheet(st, id));
        }
        if unpacked {
            // The page came in the package: parse it now, so that only what
            // the package lacked is requested.
            let page = st.objs[PAGE].body.clone().unwrap_or_default();
            next.extend(self.discover(st, &page));
        }
        if id == PAGE {
            next.extend(self.page_complete(st, now));
        }
        next.extend(self.choose_fonts(st));
        Ok(next)
    }

    /// A HEAD showed a change: fetch the new version; the HEAD's exchange
    /// is kept in totals.
    fn refetch_changed(&self, st: &mut State, id: ObjId, r: &InProgress) {
        let o = &mut st.objs[id];
        o.method = RequestMethod::Get;
        o.changed = true;
        o.conditional = false;
        o.cached = None;
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
    }

    /// The object's record, from its response (or, not modified, from the
    /// cache), and its body kept for the cache, `--save` or the report.
    fn record_response(&self, st: &mut State, id: ObjId, r: &mut InProgress, now: Duration) {
        let keep = self.keep_bodies();
        let o = &mut st.objs[id];
        let (size, sha, body) = if r.not_modified {
            let c = o.cached.as_ref().expect("not_modified implies cached");
            (c.meta.body_len, c.meta.body_sha256.clone(), c.body.clone())
        } else {
            let body = Bytes::from(std::mem::take(&mut r.body));
            (r.size, hex(&r.hasher.finalize_reset()), body)
        };
        let outcome = if r.not_modified {
            Outcome::NotModified
        } else if o.changed {
            Outcome::Changed
        } else {
            Outcome::Fetched
        };
        let meta = o.cached.as_ref().map(|c| &c.meta);
        let record = ObjectRecord {
            size,
            sha256: sha,
            body_bytes_received: r.wire_bytes,
            header_bytes_received: r.head_len,
            request_bytes_sent: o.request_len,
            content_type: r
                .content_type
                .clone()
                .or(meta.and_then(|m| m.content_type.clone())),
            content_encoding: r.content_encoding.clone(),
            etag: r.etag.clone().or(meta.and_then(|m| m.etag.clone())),
            last_modified: r
                .last_modified
                .clone()
                .or(meta.and_then(|m| m.last_modified.clone())),
            connection: r.conn,
            attempts: o.attempts,
            requested_ms: ms(o.requested),
            first_byte_ms: ms(r.first_byte),
            done_ms: ms(now),
            request_head: o.request_head.clone(),
            response_headers: std::mem::take(&mut r.headers),
            http_version: r.http_version,
            ..o.record_base(o.method, r.status, outcome)
        };
        o.request_head = String::new();
        o.record = Some(record);
        let css_preload = is_css_preload(o, r.content_type.as_deref());
        if let Some(spool) = r.spool.take() {
            o.spool = Some(spool);
        } else if keep || (id == PAGE && !r.not_modified) || css_preload {
            o.body = Some(body);
        }
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        st.last_done = st.last_done.max(now);
    }

    /// The page is complete: discovery's last references, a later visit's
    /// GETLIST of what the cache lacks, the rests of range mode.
    fn page_complete(&self, st: &mut State, now: Duration) -> Vec<ObjId> {
        let mut refs = Vec::new();
        if let Some(mut d) = st.discoverer.take() {
            refs = d.finish_refs();
            st.refs_dropped += d.dropped();
            if let Some(e) = d.error() {
                st.warnings
                    .push(format!("HTML tokenizer stopped early: {e}"));
            }
        }
        let mut next = self.admit(st, refs, ObjectKind::Embedded, PAGE);
        let pending = std::mem::take(&mut st.getlist_pending);
        match pending.len() {
            0 => {}
            // One object: a plain GET says the same in fewer bytes.
            1 => next.extend(pending),
            _ => next.push(self.new_getlist(st, pending)),
        }
        st.discovery_done = true;
        st.page_done = Some(now);
        next.extend(self.range_release(st, now));
        if st.refs_dropped > 0 {
            let w = format!(
                "object limit reached: the page references more than {} objects; {} references were not fetched",
                pagewire_discover::MAX_REFERENCES,
                st.refs_dropped
            );
            st.warnings.push(w);
        }
        next
    }
}

/// Inflated text that only the end of the stream released; on the page it
/// must reach the parser like any other body bytes.
fn finish_inflate(r: &mut InProgress, url: &str) -> Result<Vec<u8>, FetchError> {
    let mut tail = Vec::new();
    if let Some(mut inf) = r.inflater.take() {
        inf.finish(&mut tail)
            .map_err(|e| FetchError::object(url, format!("Content-Encoding deflate: {e}")))?;
        take_content(r, url, true, &tail).map_err(|e| e.into_fetch(url))?;
    }
    Ok(tail)
}
