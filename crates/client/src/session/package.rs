//! Receiving an object package (strategy `objpack`; Fujinoki, Sanjay, Shah,
//! "Web File Transmission by Object Packaging"): the page's response body is
//! a package, decoded as it streams in. The first file is the page itself
//! (its bytes become the page response's content); every other file becomes
//! an object of its own, complete — recorded, and written to the cache and
//! the `save_dir` — the moment its last byte is in, not when the package
//! ends. After the package, the page is parsed and objects it references
//! that the package lacked are requested as usual.

use super::*;
use pagewire_objpack::{Event, Limits, Reader, Step};

pub(super) struct PackageRx {
    reader: Reader,
    cur: Option<FileRx>,
    /// Files other than the page already complete (each recorded as an
    /// object of its own while the package streams in).
    pub(super) files_done: usize,
}

struct FileRx {
    id: ObjId,
    started: Duration,
    hasher: Sha256,
    size: u64,
    body: Vec<u8>,
}

/// URL path of a package file name (names are decoded relative paths).
fn path_of_name(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len() + 1);
    escaped.push('/');
    for c in name.chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3F"),
            '#' => escaped.push_str("%23"),
            c => escaped.push(c),
        }
    }
    encode_target(&escaped)
}

/// An attribute, if it is set.
fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// A package file's response headers, as its record names them.
fn file_headers(meta: &EntryMeta) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    if let Some(ct) = &meta.content_type {
        headers.push(("Content-Type".to_string(), ct.clone()));
    }
    if let Some(e) = &meta.etag {
        headers.push(("ETag".to_string(), e.clone()));
    }
    if let Some(lm) = &meta.last_modified {
        headers.push(("Last-Modified".to_string(), lm.clone()));
    }
    headers
}

impl PackageRx {
    pub(super) fn new() -> PackageRx {
        PackageRx {
            reader: Reader::new(Limits::default()),
            cur: None,
            files_done: 0,
        }
    }
}

impl Ctx {
    /// The reader of the page's response if it is a package (objpack).
    pub(super) fn package_for(
        &self,
        id: ObjId,
        status: u16,
        content_type: Option<&str>,
    ) -> Option<PackageRx> {
        let package = self.cfg.strategy == Strategy::Objpack
            && id == PAGE
            && status == 200
            && content_type
                .is_some_and(|t| super::head::is_media_type(t, pagewire_objpack::MEDIA_TYPE));
        package.then(PackageRx::new)
    }

    /// Package bytes of the page's response.
    pub(super) fn package_body(
        &self,
        st: &mut State,
        rx: &mut PackageRx,
        mut data: &[u8],
        now: Duration,
    ) -> Result<(), FetchError> {
        let bad = |e: pagewire_objpack::Error| {
            FetchError::object(&self.page_url, format!("object package: {e}"))
        };
        loop {
            let Step { consumed, event } = rx.reader.advance(data).map_err(bad)?;
            data = &data[consumed..];
            let Some(event) = event else { return Ok(()) };
            self.package_event(st, rx, event, now)?;
        }
    }

    fn package_event(
        &self,
        st: &mut State,
        rx: &mut PackageRx,
        event: Event<'_>,
        now: Duration,
    ) -> Result<(), FetchError> {
        match event {
            Event::Table | Event::End => {}
            Event::FileStart { index } => {
                let name = &rx.reader.entries()[index].name;
                let path = path_of_name(name);
                let id = if index == 0 {
                    // The page: also known under its file name.
                    st.by_path.entry(path).or_insert(PAGE);
                    PAGE
                } else if let Some(&id) = st.by_path.get(&path) {
                    id
                } else {
                    self.add_object(st, path, ObjectKind::Embedded)
                };
                rx.cur = Some(FileRx {
                    id,
                    started: now,
                    hasher: Sha256::new(),
                    size: 0,
                    body: Vec::new(),
                });
            }
            Event::Data { bytes, .. } => {
                let f = rx.cur.as_mut().expect("FileStart first");
                if f.id == PAGE {
                    let r = st.objs[PAGE].resp.as_mut().expect("page head first");
                    r.hasher.update(bytes);
                    r.size += bytes.len() as u64;
                    if r.body.len() + bytes.len() > MAX_ENTRY_BODY_BYTES {
                        return Err(FetchError::object(
                            &self.page_url,
                            "page larger than 256 MiB",
                        ));
                    }
                    r.body.extend_from_slice(bytes);
                } else {
                    f.hasher.update(bytes);
                    f.size += bytes.len() as u64;
                    if self.keep_bodies() || self.cfg.save_dir.is_some() {
                        if f.body.len() + bytes.len() > MAX_ENTRY_BODY_BYTES {
                            let url = st.objs[f.id].url.clone();
                            return Err(FetchError::object(&url, "object larger than 256 MiB"));
                        }
                        f.body.extend_from_slice(bytes);
                    }
                }
            }
            Event::FileEnd { index } => {
                let f = rx.cur.take().expect("FileStart first");
                if f.id == PAGE {
                    let attrs = &rx.reader.entries()[index].attrs;
                    let r = st.objs[PAGE].resp.as_mut().expect("page head first");
                    if !attrs.media_type.is_empty() {
                        r.content_type = Some(attrs.media_type.clone());
                    }
                    return Ok(());
                }
                rx.files_done += 1;
                self.package_file_done(st, rx, index, f, now);
            }
        }
        Ok(())
    }

    /// A file of the package other than the page is complete: an object
    /// of its own, recorded, and handed over now (cache, `save_dir`), as
    /// the paper's client unpacks "on the fly".
    fn package_file_done(
        &self,
        st: &mut State,
        rx: &PackageRx,
        index: usize,
        mut f: FileRx,
        now: Duration,
    ) {
        let attrs = &rx.reader.entries()[index].attrs;
        let (page_conn, requested) = {
            let p = &st.objs[PAGE];
            (p.resp.as_ref().map_or(0, |r| r.conn), p.requested)
        };
        let meta = EntryMeta {
            url: st.objs[f.id].url.clone(),
            status: 200,
            etag: nonempty(&attrs.etag),
            last_modified: attrs.last_modified.map(|s| {
                httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(s.min(1 << 40)))
            }),
            content_type: nonempty(&attrs.media_type),
            body_len: f.size,
            body_sha256: hex(&f.hasher.finalize_reset()),
            prefetched: false,
        };
        let body = Bytes::from(std::mem::take(&mut f.body));
        let o = &mut st.objs[f.id];
        o.record = Some(ObjectRecord {
            size: f.size,
            sha256: meta.body_sha256.clone(),
            body_bytes_received: f.size,
            content_type: meta.content_type.clone(),
            etag: meta.etag.clone(),
            last_modified: meta.last_modified.clone(),
            connection: page_conn,
            requested_ms: ms(requested),
            first_byte_ms: ms(f.started),
            done_ms: ms(now),
            response_headers: file_headers(&meta),
            http_version: "HTTP/1.1",
            ..o.record_base(RequestMethod::Get, 200, Outcome::Fetched)
        });
        self.hand_over(st, f.id, &meta, body);
        st.last_done = st.last_done.max(now);
    }

    /// A package file's object to the cache and `save_dir` at once, and
    /// its body kept if bodies are.
    fn hand_over(&self, st: &mut State, id: ObjId, meta: &EntryMeta, body: Bytes) {
        if self.caching() {
            st.writes.push(Write::Put(meta.clone(), body.clone()));
            st.objs[id].stored = true;
        }
        if self.cfg.save_dir.is_some() {
            st.writes.push(Write::Save(meta.url.clone(), body.clone()));
        }
        if self.keep_bodies() {
            st.objs[id].body = Some(body);
        }
    }

    /// The page's package response ended: it must be complete. Returns the
    /// page's HTML for discovery.
    pub(super) fn package_end(
        &self,
        st: &mut State,
        mut rx: PackageRx,
        now: Duration,
    ) -> Result<(), FetchError> {
        let bad = |e: pagewire_objpack::Error| {
            FetchError::object(&self.page_url, format!("object package: {e}"))
        };
        // Events that need no bytes (empty last files, the end).
        loop {
            let Step { event, .. } = rx.reader.advance(&[]).map_err(bad)?;
            let Some(event) = event else { break };
            self.package_event(st, &mut rx, event, now)?;
        }
        rx.reader.finish().map_err(bad)
    }
}
