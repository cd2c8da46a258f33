//! The fetch's object table: adding an object (what its first request
//! will be, from the cache and the revalidation style), and admitting the
//! references discovery finds in the page and its stylesheets.

use super::*;

impl Obj {
    /// The one constructor of an object entry: nothing requested yet.
    pub(super) fn new(path: String, url: String, kind: ObjectKind, method: RequestMethod) -> Obj {
        Obj {
            path,
            url,
            kind,
            method,
            cached: None,
            conditional: false,
            attempts: 0,
            changed: false,
            requested: Duration::ZERO,
            sent: None,
            request_head: String::new(),
            request_len: 0,
            resp: None,
            record: None,
            body: None,
            getlist: Vec::new(),
            stored: false,
            spool: None,
            found: None,
            css_parsed: false,
            range: RangePart::Whole,
        }
    }

    /// Its record, as far as the object itself knows it (the response's
    /// part is the caller's).
    pub(super) fn record_base(
        &self,
        method: RequestMethod,
        status: u16,
        outcome: Outcome,
    ) -> ObjectRecord {
        ObjectRecord::new(self.url.clone(), self.kind, method, status, outcome)
    }
}

impl Ctx {
    pub(super) fn add_object(&self, st: &mut State, path: String, kind: ObjectKind) -> ObjId {
        let id = st.objs.len();
        let url = self.target.url_of(&path);
        let cached = match self.lookup(&url) {
            Ok(e) => e,
            Err(w) => {
                st.warnings.push(w.to_string());
                None
            }
        };
        let mut cached = cached;
        let mut revalidating = self.cfg.revalidate && cached.is_some();
        let heads = matches!(
            self.cfg.revalidation,
            Revalidation::GetHead | Revalidation::ConditionalGetHead
        );
        let method = if revalidating && heads && id != PAGE {
            // Paper 001 "Revalidate Test": the HTTP/1.0 robot "simulated the
            // cache validation behavior by issuing HEAD requests on the images".
            RequestMethod::Head
        } else {
            RequestMethod::Get
        };
        if revalidating && id == PAGE && self.cfg.revalidation == Revalidation::GetHead {
            // "one GET (HTML) and 42 HEAD requests": libwww 4.1D had no
            // persistent cache, so the page came again, unconditionally.
            revalidating = false;
            cached = None;
        }
        st.by_path.insert(path.clone(), id);
        let mut o = Obj::new(path, url, kind, method);
        o.cached = if revalidating { cached } else { None };
        o.conditional = revalidating;
        st.objs.push(o);
        self.range_setup(st, id, kind);
        id
    }

    /// Turns references found in object `from` into new objects (same
    /// server, not seen before); returns their ids in document order.
    pub(super) fn admit(
        &self,
        st: &mut State,
        refs: Vec<Reference>,
        kind: ObjectKind,
        from: ObjId,
    ) -> Vec<ObjId> {
        let mut ids = Vec::new();
        for Reference { url: r, rule } in refs {
            if rule == Rule::FontFace && self.fonts_by_use() && !st.fonts_done {
                st.fonts_held.push((Reference { url: r, rule }, from));
                continue;
            }
            match same_server_path(&self.page_url, &r) {
                Some(path) => {
                    let path = encode_target(&path);
                    if let Some(&known) = st.by_path.get(&path) {
                        let upgrade = rule.is_stylesheet()
                            && st.objs[known]
                                .found
                                .is_some_and(|(_, r)| !r.is_stylesheet());
                        if known != PAGE && (st.objs[known].found.is_none() || upgrade) {
                            // Arrived before it was found (a GETALL part,
                            // a package member): say where it belongs, and
                            // parse it now if it is a stylesheet.
                            st.objs[known].found = Some((from, rule));
                            ids.extend(self.parse_arrived_stylesheet(st, known));
                        }
                        continue;
                    }
                    if st.objs.len() >= pagewire_discover::MAX_REFERENCES {
                        st.refs_dropped += 1;
                        continue;
                    }
                    let id = self.add_object(st, path, kind);
                    st.objs[id].found = Some((from, rule));
                    if self.getall_from_cache(st, id) {
                        // In the cache: not requested; a cached stylesheet's
                        // references may still be missing.
                        ids.extend(self.parse_arrived_stylesheet(st, id));
                    } else if self.getall_later_visit(st)
                        && kind == ObjectKind::Embedded
                        && !st.discovery_done
                    {
                        st.getlist_pending.push(id);
                    } else {
                        ids.push(id);
                    }
                }
                None => {
                    if st.skipped_set.insert(r.clone()) {
                        st.cross_origin.push((r.clone(), from, rule));
                        st.skipped.push(r);
                    }
                }
            }
        }
        ids
    }

    /// A stylesheet that arrived whole before its reference was found (in a
    /// GETALL answer or a package, or from the cache): its references now.
    pub(super) fn parse_arrived_stylesheet(&self, st: &mut State, id: ObjId) -> Vec<ObjId> {
        let o = &st.objs[id];
        let is_css = o.found.is_some_and(|(_, r)| r.is_stylesheet());
        let ok = o
            .record
            .as_ref()
            .is_some_and(|r| r.status == 200 || r.outcome == Outcome::NotModified);
        if !is_css || !ok || o.css_parsed {
            return Vec::new();
        }
        let Some(body) = o.body.clone() else {
            return Vec::new();
        };
        self.parse_whole_stylesheet(st, id, &body)
    }

    pub(super) fn parse_whole_stylesheet(
        &self,
        st: &mut State,
        id: ObjId,
        body: &[u8],
    ) -> Vec<ObjId> {
        st.objs[id].css_parsed = true;
        if self.fonts_by_use() {
            let n = body.len().min(pagewire_discover::css::MAX_STYLESHEET_BYTES);
            keep_css_text(st, id, &body[..n]);
        }
        let mut css = CssDiscoverer::new(&st.objs[id].url, self.cfg.viewport);
        let mut refs = css.feed(body);
        refs.extend(css.finish());
        self.css_truncated(st, id, &css);
        self.admit(st, refs, ObjectKind::Embedded, id)
    }

    pub(super) fn css_truncated(&self, st: &mut State, id: ObjId, css: &CssDiscoverer) {
        if css.truncated() {
            let w = format!(
                "{}: stylesheet larger than {} bytes: the rest was not searched for references",
                st.objs[id].url,
                pagewire_discover::css::MAX_STYLESHEET_BYTES
            );
            st.warnings.push(w);
        }
    }

    pub(super) fn discover(&self, st: &mut State, content: &[u8]) -> Vec<ObjId> {
        let refs = match st.discoverer.as_mut() {
            Some(d) => d.feed_refs(content),
            None => return Vec::new(),
        };
        self.admit(st, refs, ObjectKind::Embedded, PAGE)
    }
}
