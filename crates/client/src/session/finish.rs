//! The end of a fetch: the cache entries to write (handed to the caller as
//! [`CacheWrite`]s, so that disk time never delays a request; the session
//! writes no file) and the report.

use super::*;

/// What the cache needs for object `o` after the fetch: nothing, its
/// validators, or the whole entry.
fn cache_write(o: &mut Obj) -> Option<CacheWrite> {
    let rec = o.record.as_ref()?;
    if o.stored {
        return None;
    }
    let prefetched = o.kind == ObjectKind::Prefetch;
    if let Some(spool) = o.spool.take() {
        // Inflated into a file of the cache as it arrived.
        if rec.status != 200 || rec.method != RequestMethod::Get {
            return None;
        }
        let meta = EntryMeta {
            url: o.url.clone(),
            status: 200,
            etag: rec.etag.clone(),
            last_modified: rec.last_modified.clone(),
            content_type: rec.content_type.clone(),
            body_len: rec.size,
            body_sha256: rec.sha256.clone(),
            prefetched,
        };
        return Some(CacheWrite::Spooled(meta, spool));
    }
    let body = o.body.as_ref()?;
    let cacheable = rec.status == 200 || rec.outcome == Outcome::NotModified;
    if !cacheable
        || rec.outcome == Outcome::FromCache
        || !matches!(rec.method, RequestMethod::Get | RequestMethod::Getlist)
            && !matches!(rec.outcome, Outcome::NotModified | Outcome::GetallPart)
    {
        return None;
    }
    let meta = EntryMeta {
        url: o.url.clone(),
        status: 200,
        etag: rec.etag.clone(),
        last_modified: rec.last_modified.clone(),
        content_type: rec.content_type.clone(),
        body_len: body.len() as u64,
        body_sha256: sha256_hex(body),
        prefetched,
    };
    let cached = o.cached.as_ref().map(|c| &c.meta);
    if rec.outcome == Outcome::NotModified && cached == Some(&meta) {
        // A 304 that changes nothing rewrites nothing (an all-304
        // revalidation must not rewrite every entry).
        return None;
    }
    let same_body =
        cached.is_some_and(|c| c.body_len == meta.body_len && c.body_sha256 == meta.body_sha256);
    if same_body {
        return Some(CacheWrite::Meta(meta));
    }
    Some(CacheWrite::Put(meta, body.clone()))
}

impl Ctx {
    /// Assembles the report, and the cache entries the caller is to write
    /// (after the network work, so disk time never delays a request; then
    /// `cache_bytes_written` and the warnings of failed writes are the
    /// caller's to add).
    pub(super) fn finish(&self, st: &mut State) -> (FetchReport, Vec<CacheWrite>) {
        if !st.fonts_done && !st.fonts_held.is_empty() {
            let w = format!(
                "{} @font-face sources not fetched: the page or a stylesheet did not complete, so no text was styled",
                st.fonts_held.len()
            );
            st.warnings.push(w);
        }
        let mut writes = Vec::new();
        if self.caching() {
            writes.extend(st.objs.iter_mut().filter_map(cache_write));
            if self.cfg.strategy == Strategy::Getall {
                let (meta, list) = self.getall_refs_entry(st);
                writes.push(CacheWrite::Put(meta, Bytes::from(list)));
            }
        }
        (self.report(st), writes)
    }

    /// The report of the fetch.
    fn report(&self, st: &mut State) -> FetchReport {
        let (objects, statuses, requests, urls) = take_records(st, self.cfg.keep_bodies);
        let mut flush_counts: BTreeMap<String, u32> = BTreeMap::new();
        for f in &st.flushes {
            let name = match f.reason {
                FlushReason::Full => "full",
                FlushReason::Timer => "timer",
                FlushReason::Explicit => "explicit",
            };
            *flush_counts.entry(name.to_string()).or_default() += 1;
        }
        let mut hints: Vec<String> = st.hint_set.iter().cloned().collect();
        hints.sort();
        let cross_origin = std::mem::take(&mut st.cross_origin)
            .into_iter()
            .map(|(url, from, rule)| CrossOriginRecord {
                origin: origin_of(&url),
                url,
                found_in: urls.get(from).cloned().unwrap_or_default(),
                found_by: rule.as_str(),
            })
            .collect();
        let mut report = self.report_config();
        report.objects = objects;
        report.requests = requests;
        // Methods of every request sent: a changed HEAD counts as a HEAD
        // and then a GET.
        report.requests_by_method = std::mem::take(&mut st.by_method);
        report.statuses = statuses;
        report.bytes = st.bytes.clone();
        report.ttfb_ms = st.ttfb.map(ms).unwrap_or(0.0);
        report.page_complete_ms = st.page_done.map(ms).unwrap_or(0.0);
        report.metadata_ms = st.metadata_done.map(ms);
        report.total_ms = ms(st.last_done);
        report.connections_opened = st.conns.len();
        report.max_open_connections = st.max_open;
        report.requests_per_connection = st.conns.iter().map(|c| c.requests_sent).collect();
        report.connections = st.conns.clone();
        report.writes = st.conns.iter().map(|c| c.writes).sum();
        report.flushes = std::mem::take(&mut st.flushes);
        report.flush_counts = flush_counts;
        report.retried_requests = st.retried;
        report.skipped_other_server = std::mem::take(&mut st.skipped);
        report.cross_origin = cross_origin;
        report.prefetch_hints = hints;
        report.references_not_fetched = st.refs_dropped;
        report.warnings = std::mem::take(&mut st.warnings);
        report
    }

    /// A report of this fetch's configuration, nothing fetched yet.
    fn report_config(&self) -> FetchReport {
        FetchReport {
            tool: format!("pagewire-client {}", env!("CARGO_PKG_VERSION")),
            url: self.page_url.clone(),
            strategy: self.cfg.strategy,
            revalidate: self.cfg.revalidate,
            out_buffer_bytes: self.cfg.out_buffer_bytes,
            flush_after: self.cfg.flush_after,
            flush_at_page_end: self.cfg.flush_at_page_end,
            explicit_flush: self.cfg.explicit_flush,
            revalidation: self.cfg.revalidation,
            request_profile: self.cfg.request_profile,
            max_conns: self.cfg.max_conns,
            timeouts: self.cfg.timeouts,
            started: rfc3339(self.started_wall),
            started_at: self.started_wall,
            objects: Vec::new(),
            requests: 0,
            requests_by_method: BTreeMap::new(),
            statuses: BTreeMap::new(),
            bytes: ByteCounts::default(),
            ttfb_ms: 0.0,
            page_complete_ms: 0.0,
            metadata_ms: None,
            total_ms: 0.0,
            connections_opened: 0,
            max_open_connections: 0,
            requests_per_connection: Vec::new(),
            connections: Vec::new(),
            writes: 0,
            flushes: Vec::new(),
            flush_counts: BTreeMap::new(),
            retried_requests: 0,
            skipped_other_server: Vec::new(),
            cross_origin: Vec::new(),
            viewport: ViewportRecord {
                width: self.cfg.viewport.width,
                dpr: self.cfg.viewport.dpr,
            },
            prefetch_hints: Vec::new(),
            references_not_fetched: 0,
            redirects: Vec::new(),
            cache_bytes_written: 0,
            cross_origin_fetches: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// The objects' records (in table order), their statuses, the requests
/// sent, and every object's URL.
fn take_records(
    st: &mut State,
    keep: bool,
) -> (Vec<ObjectRecord>, BTreeMap<u16, u32>, u32, Vec<String>) {
    let mut objects = Vec::new();
    let mut statuses: BTreeMap<u16, u32> = BTreeMap::new();
    let mut requests = 0;
    let urls: Vec<String> = st.objs.iter().map(|o| o.url.clone()).collect();
    for o in &mut st.objs {
        if let Some(mut rec) = o.record.take() {
            if keep {
                rec.body = o.body.take();
            }
            if let Some((from, rule)) = o.found {
                rec.found_in = urls.get(from).cloned();
                rec.found_by = Some(rule.as_str());
            }
            // The flush that carried its request, if it was this record's
            // request (not a package's or the cache's).
            rec.sent_ms = o
                .sent
                .map(ms)
                .filter(|&t| o.attempts > 0 && t >= rec.requested_ms);
            *statuses.entry(rec.status).or_default() += 1;
            objects.push(rec);
        }
        requests += o.attempts;
    }
    (objects, statuses, requests, urls)
}

/// `scheme://authority` of an absolute URL (the URL itself otherwise).
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find(['/', '?']).unwrap_or(rest.len());
            format!("{}://{}", scheme.to_ascii_lowercase(), &rest[..end])
        }
        None => url.to_string(),
    }
}
