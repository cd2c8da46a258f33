//! Strategy `getall` (Padmanabhan & Mogul, "Improving HTTP Latency"): on a
//! first visit the page's request carries the GETALL field and its answer
//! is a multipart of the page and its objects; on a later visit one
//! GETLIST asks for the page and what the cache lacks (or, revalidating,
//! everything, with the cached entity tags). Hooked in at the request (the
//! field, the list), the head (the multipart boundary) and the end (the
//! parts become objects; a refusal falls back to GETs).

use super::*;

/// A multipart part's fields as the record keeps them.
fn part_text(p: &crate::getall::Part, k: &str) -> Option<String> {
    p.header(k).map(str::to_string)
}

/// The bytes of a part's head, as counted for its record.
fn part_head_len(p: &crate::getall::Part) -> u64 {
    p.headers
        .iter()
        .map(|(k, v)| (k.len() + v.len() + 4) as u64)
        .sum()
}

impl Ctx {
    /// `getall` on a page visited before (not revalidating): uncached
    /// objects are asked for in one GETLIST once the page is parsed.
    pub(super) fn getall_later_visit(&self, st: &State) -> bool {
        self.cfg.strategy == Strategy::Getall
            && self.getall_known.is_some()
            && !self.cfg.revalidate
            && !st.getlist_refused
    }

    /// The multipart boundary of a GETALL or GETLIST answer.
    pub(super) fn getall_boundary(
        &self,
        o: &Obj,
        id: ObjId,
        status: u16,
        content_type: Option<&str>,
    ) -> Option<String> {
        let answer = self.cfg.strategy == Strategy::Getall
            && (id == PAGE || !o.getlist.is_empty())
            && status == 200;
        if !answer {
            return None;
        }
        content_type
            .and_then(crate::getall::boundary)
            .map(str::to_string)
    }

    /// `getall`, later visit: the body of the one-message GETLIST (the page
    /// first, then the objects it referenced last time: all of them when
    /// revalidating, else those the cache lacks) and the entity tags of the
    /// cached copies among them, for `If-None-Match`.
    pub(super) fn revisit_list(&self, page: &Obj) -> (String, Vec<String>) {
        let mut list = format!("{}\r\n", page.path);
        let mut etags: Vec<String> = page
            .cached
            .as_ref()
            .and_then(|c| c.meta.etag.clone())
            .into_iter()
            .collect();
        let mut known: Vec<&String> = self.getall_known.iter().flatten().collect();
        // The cache's list is a set; the request says it in page order
        // would need the page: sorted, so the request is deterministic.
        known.sort();
        for url in known {
            let Some(path) = same_server_path(&self.page_url, url) else {
                continue;
            };
            let cached = self.lookup(url).ok().flatten();
            match cached {
                Some(c) if self.cfg.revalidate => {
                    if let Some(e) = c.meta.etag {
                        if !etags.contains(&e) {
                            etags.push(e);
                        }
                    }
                }
                // In the cache, not revalidating: not asked for.
                Some(_) => continue,
                None => {}
            }
            list.push_str(&encode_target(&path));
            list.push_str("\r\n");
        }
        (list, etags)
    }

    /// A GETLIST request entry for `ids` (not an object of the page).
    pub(super) fn new_getlist(&self, st: &mut State, ids: Vec<ObjId>) -> ObjId {
        let id = st.objs.len();
        let mut o = Obj::new(
            "/".to_string(),
            self.target.url_of("/"),
            ObjectKind::Embedded,
            RequestMethod::Getlist,
        );
        o.getlist = ids;
        st.objs.push(o);
        id
    }

    /// The GETLIST answer is complete: its parts become the listed objects;
    /// whatever did not come (an unmodified server's 405/501, a 404 part) is
    /// returned to be fetched by pipelined GETs.
    pub(super) fn end_getlist(
        &self,
        st: &mut State,
        id: ObjId,
        r: InProgress,
        now: Duration,
    ) -> Vec<ObjId> {
        let ids = std::mem::take(&mut st.objs[id].getlist);
        let requested = st.objs[id].requested;
        let mut delivered = HashSet::new();
        match &r.getall_boundary {
            Some(b) => match crate::getall::split(b, &Bytes::from(r.body)) {
                Ok(parts) => {
                    for p in parts.into_iter().filter(|p| p.status() == 200) {
                        let Some(oid) = self.part_object(st, &p) else {
                            continue;
                        };
                        if !ids.contains(&oid) || !delivered.insert(oid) {
                            continue;
                        }
                        let o = &mut st.objs[oid];
                        o.record = Some(ObjectRecord {
                            size: p.body.len() as u64,
                            sha256: sha256_hex(&p.body),
                            body_bytes_received: p.body.len() as u64,
                            content_type: part_text(&p, "content-type"),
                            etag: part_text(&p, "etag"),
                            last_modified: part_text(&p, "last-modified"),
                            connection: r.conn,
                            requested_ms: ms(requested),
                            first_byte_ms: ms(r.first_byte),
                            done_ms: ms(now),
                            response_headers: p.headers.clone(),
                            http_version: r.http_version,
                            ..o.record_base(RequestMethod::Getlist, 200, Outcome::GetallPart)
                        });
                        o.body = Some(p.body);
                    }
                }
                Err(e) => st
                    .warnings
                    .push(format!("GETLIST answer: {e} (fetching by GET)")),
            },
            None => st.warnings.push(format!(
                "GETLIST answered {} without parts (fetching by GET)",
                r.status
            )),
        }
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        st.last_done = st.last_done.max(now);
        let mut next: Vec<ObjId> = ids
            .iter()
            .copied()
            .filter(|i| !delivered.contains(i))
            .collect();
        for &i in &ids {
            if delivered.contains(&i) {
                next.extend(self.parse_arrived_stylesheet(st, i));
            }
        }
        next
    }

    /// The known object a GETLIST part is for (by its Content-Location).
    fn part_object(&self, st: &State, p: &crate::getall::Part) -> Option<ObjId> {
        let path = p
            .header("content-location")
            .and_then(|l| resolve(&self.page_url, l))
            .and_then(|u| same_server_path(&self.page_url, &u))
            .map(|p| encode_target(&p))?;
        st.by_path.get(&path).copied()
    }

    /// `getall`, later visit: an object the cache holds is not requested
    /// (the paper's GETLIST asks only for "the images not in its cache");
    /// its record says so and its body comes from the cache.
    pub(super) fn getall_from_cache(&self, st: &mut State, id: ObjId) -> bool {
        if self.cfg.strategy != Strategy::Getall
            || self.getall_known.is_none()
            || self.cfg.revalidate
        {
            return false;
        }
        if !self.caching() {
            return false;
        }
        // No request and no transfer: its times are the page's request time.
        let now = ms(st.objs[PAGE].requested);
        let o = &mut st.objs[id];
        let Ok(Some(e)) = self.lookup(&o.url) else {
            return false;
        };
        o.record = Some(ObjectRecord {
            size: e.meta.body_len,
            sha256: e.meta.body_sha256.clone(),
            content_type: e.meta.content_type.clone(),
            etag: e.meta.etag.clone(),
            last_modified: e.meta.last_modified.clone(),
            requested_ms: now,
            first_byte_ms: now,
            done_ms: now,
            ..o.record_base(RequestMethod::Get, e.meta.status, Outcome::FromCache)
        });
        o.body = Some(e.body.clone());
        true
    }

    /// The page's response was a GETALL answer: the page part becomes the
    /// page's content, every other part an object of its own.
    pub(super) fn take_getall_parts(
        &self,
        st: &mut State,
        r: &mut InProgress,
        boundary: &str,
        now: Duration,
    ) -> Result<(), FetchError> {
        let whole = Bytes::from(std::mem::take(&mut r.body));
        let parts = crate::getall::split(boundary, &whole)
            .map_err(|e| FetchError::object(&self.page_url, format!("GETALL answer: {e}")))?;
        let mut page_found = false;
        for p in parts {
            let Some(loc) = p.header("content-location") else {
                st.warnings
                    .push("GETALL part without Content-Location (ignored)".into());
                continue;
            };
            let Some(path) = resolve(&self.page_url, loc)
                .and_then(|u| same_server_path(&self.page_url, &u))
                .map(|p| encode_target(&p))
            else {
                st.warnings
                    .push(format!("GETALL part for another server: {loc} (ignored)"));
                continue;
            };
            // The first part is the page (docs/getall.md), whatever its
            // Content-Location says (`/` is answered with `/index.html`).
            if !page_found {
                page_found = true;
                self.take_page_part(st, r, &p)?;
                continue;
            }
            if st.by_path.contains_key(&path) || p.status() != 200 && p.status() != 304 {
                continue;
            }
            if !self.take_object_part(st, r, &p, path, now) {
                break;
            }
        }
        if !page_found {
            return Err(FetchError::object(
                &self.page_url,
                "GETALL answer without the page itself",
            ));
        }
        Ok(())
    }

    /// The page's part of a GETALL or GETLIST answer: the page response's
    /// content (or, 304, the cached page's).
    fn take_page_part(
        &self,
        st: &State,
        r: &mut InProgress,
        p: &crate::getall::Part,
    ) -> Result<(), FetchError> {
        let status = p.status();
        if status == 304 {
            // The cached page is current (the one-message revisit sent its
            // entity tag).
            let Some(c) = st.objs[PAGE].cached.as_ref() else {
                return Err(FetchError::object(
                    &self.page_url,
                    "GETLIST answered the page 304 though no copy was offered",
                ));
            };
            r.body = c.body.to_vec();
            r.size = c.meta.body_len;
            r.not_modified = true;
            r.status = 304;
            r.etag = part_text(p, "etag").or(c.meta.etag.clone());
            return Ok(());
        }
        if status != 200 {
            // The page itself is missing (a 404 part): so it is.
            r.status = status;
        }
        r.hasher = Sha256::new();
        r.hasher.update(&p.body);
        r.size = p.body.len() as u64;
        r.body = p.body.to_vec();
        r.content_type = part_text(p, "content-type");
        r.etag = part_text(p, "etag");
        r.last_modified = part_text(p, "last-modified");
        Ok(())
    }

    /// Another part of a GETALL or GETLIST answer: an object of its own.
    /// A 304 part is the cached copy whose tag the request offered; without
    /// one (a tag this visit did not offer), the object is fetched by
    /// pipelining, as any not included. False when the object table is
    /// full.
    fn take_object_part(
        &self,
        st: &mut State,
        r: &InProgress,
        p: &crate::getall::Part,
        path: String,
        now: Duration,
    ) -> bool {
        let status = p.status();
        let url = self.target.url_of(&path);
        let cached = if status == 304 {
            let tag = p.header("etag");
            let c = self
                .lookup(&url)
                .ok()
                .flatten()
                .filter(|c| tag.is_some() && c.meta.etag.as_deref() == tag);
            match c {
                Some(c) => Some(c),
                None => return true,
            }
        } else {
            None
        };
        if st.objs.len() >= pagewire_discover::MAX_REFERENCES {
            return false;
        }
        // GETALL on a first visit, the one-message GETLIST on a later one.
        let method = st.objs[PAGE].method;
        let requested = st.objs[PAGE].requested;
        let id = self.add_object(st, path, ObjectKind::Embedded);
        let o = &mut st.objs[id];
        let (outcome, size, sha, body) = match &cached {
            Some(c) => (
                Outcome::NotModified,
                c.meta.body_len,
                c.meta.body_sha256.clone(),
                c.body.clone(),
            ),
            None => (
                Outcome::GetallPart,
                p.body.len() as u64,
                sha256_hex(&p.body),
                p.body.clone(),
            ),
        };
        let meta = cached.as_ref().map(|c| &c.meta);
        o.record = Some(ObjectRecord {
            size,
            sha256: sha,
            body_bytes_received: p.body.len() as u64,
            header_bytes_received: part_head_len(p),
            content_type: part_text(p, "content-type")
                .or(meta.and_then(|m| m.content_type.clone())),
            etag: part_text(p, "etag"),
            last_modified: part_text(p, "last-modified")
                .or(meta.and_then(|m| m.last_modified.clone())),
            connection: r.conn,
            requested_ms: ms(requested),
            first_byte_ms: ms(r.first_byte),
            done_ms: ms(now),
            response_headers: p.headers.clone(),
            http_version: r.http_version,
            ..o.record_base(method, status, outcome)
        });
        o.body = Some(body);
        if cached.is_some() {
            o.cached = cached;
        }
        true
    }

    /// The page's GETLIST was answered without parts (an unmodified server:
    /// nginx 405, Apache 501, or a refusal): the page again by a
    /// conditional GET, and from now on the traditional way (paper 003
    /// §5.1: "simply retrieves them the traditional way").
    pub(super) fn getlist_refused(&self, st: &mut State, r: &InProgress) -> Vec<ObjId> {
        st.warnings.push(format!(
            "GETLIST answered {} without parts: the page by GET, the rest by pipelined GETs",
            r.status
        ));
        st.getlist_refused = true;
        st.objs[PAGE].method = RequestMethod::Get;
        if let Some(c) = st.conns.get_mut(r.conn) {
            c.responses_received += 1;
        }
        vec![PAGE]
    }

    /// What the cache keeps for a later visit: "listing for each known
    /// image URL the URL of the document that contained it" (the page's
    /// references).
    pub(super) fn getall_refs_entry(&self, st: &State) -> (EntryMeta, String) {
        let list: String = st
            .objs
            .iter()
            .skip(1)
            .filter(|o| o.kind == ObjectKind::Embedded)
            .map(|o| format!("{}\n", o.url))
            .collect();
        let meta = EntryMeta {
            url: crate::getall::refs_key(&self.page_url),
            status: 200,
            etag: None,
            last_modified: None,
            content_type: Some("text/uri-list".into()),
            body_len: list.len() as u64,
            body_sha256: sha256_hex(list.as_bytes()),
            prefetched: false,
        };
        (meta, list)
    }
}
