//! Range mode, "poor man's multiplexing" (paper 001, "Range Requests and
//! Validation"; `FetchConfig::range_first`): on a first visit the first N
//! bytes of every image, and once all of those are in, the rest of each;
//! the parts are joined and checked before the object counts as fetched.
//! Hooked in where an object is added, at the request (the Range field), at
//! the head (the part checked against what was asked) and at the end (a
//! first part held, the rests released together).

use super::*;

/// The part of an object a range-mode request asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum RangePart {
    /// The whole object (no range).
    #[default]
    Whole,
    /// The first `n` bytes.
    Head { n: u64 },
    /// The rest, after `head` (the first part, kept to join), of `total`.
    Rest { head: Vec<u8>, total: u64 },
}

impl RangePart {
    /// The request's `Range` field value, if it asks for a part.
    pub(super) fn header(&self) -> Option<String> {
        match self {
            RangePart::Whole => None,
            RangePart::Head { n } => Some(format!("bytes=0-{}", n - 1)),
            RangePart::Rest { head, .. } => Some(format!("bytes={}-", head.len())),
        }
    }
}

impl Ctx {
    /// A revisit's first part carries `If-Range` beside the validators: the
    /// range only if the cached copy is still the current one (RFC 9110
    /// §13.1.5; a strong entity tag, else the exact Last-Modified date).
    /// With If-None-Match the server answers 304 first; a changed object
    /// comes whole (If-Range failed).
    pub(super) fn if_range_header(&self, o: &Obj, headers: &mut super::request::Headers) {
        if let Some(c) = o.cached.as_ref().filter(|_| o.conditional) {
            let v = c
                .meta
                .etag
                .as_ref()
                .filter(|e| !e.starts_with("W/"))
                .or(c.meta.last_modified.as_ref());
            if let Some(v) = v {
                headers.push(("If-Range", v.clone()));
            }
        }
    }

    /// A new object: in range mode, an image is asked for in two parts, on
    /// a first visit and on a revisit alike: on a revisit the conditional
    /// GET carries the range and If-Range (paper 001, "Range Requests and
    /// Validation": "the natural revalidation request for HTTP/1.1 will
    /// combine both cache validation headers and an If-Range request
    /// header").
    pub(super) fn range_setup(&self, st: &mut State, id: ObjId, kind: ObjectKind) {
        let applies = id != PAGE
            && kind == ObjectKind::Embedded
            && matches!(
                self.cfg.strategy,
                Strategy::Pipeline | Strategy::PipelineDeflate
            );
        if let Some(n) = self.cfg.range_first.filter(|_| applies) {
            st.objs[id].range = RangePart::Head { n: n.max(1) };
            st.range_heads_open += 1;
            st.range_heads_total += 1;
        }
    }

    /// Range mode at the end of a response: a first part that leaves a
    /// rest is held (true: nothing more to do with this response); a joined
    /// rest is checked against the complete length and counts as a 200.
    pub(super) fn range_end(
        &self,
        st: &mut State,
        id: ObjId,
        r: &mut InProgress,
        url: &str,
        now: Duration,
        next: &mut Vec<ObjId>,
    ) -> Result<bool, FetchError> {
        if matches!(st.objs[id].range, RangePart::Head { .. }) {
            st.range_heads_open = st.range_heads_open.saturating_sub(1);
            match r.part {
                Some((_, total)) if r.size < total => {
                    let head = std::mem::take(&mut r.body);
                    st.objs[id].range = RangePart::Rest { head, total };
                    st.range_rest_pending.push(id);
                    if let Some(c) = st.conns.get_mut(r.conn) {
                        c.responses_received += 1;
                    }
                    next.extend(self.range_release(st, now));
                    return Ok(true);
                }
                // The whole object fitted in the first part, or the server
                // ignored Range (200).
                _ => st.objs[id].range = RangePart::Whole,
            }
            next.extend(self.range_release(st, now));
        }
        if let (RangePart::Rest { total, .. }, Some(_)) = (&st.objs[id].range, r.part) {
            if r.size != *total {
                return Err(FetchError::object(
                    url,
                    format!(
                        "the parts joined make {} bytes, Content-Range said {total}",
                        r.size
                    ),
                ));
            }
        }
        if r.part.is_some() {
            // Joined whole and checked: the object as a 200 would have been.
            r.status = 200;
        }
        Ok(false)
    }

    /// Range mode: once the page is parsed and every first part is in, the
    /// rests go out, all at once (then metadata of every image is known).
    pub(super) fn range_release(&self, st: &mut State, now: Duration) -> Vec<ObjId> {
        if st.range_heads_total == 0 || !st.discovery_done || st.range_heads_open > 0 {
            return Vec::new();
        }
        st.metadata_done.get_or_insert(now);
        std::mem::take(&mut st.range_rest_pending)
    }
}

/// What a head says of a part: (first byte, complete length), and the
/// first part to join in front of a rest.
type PartAtHead = (Option<(u64, u64)>, Vec<u8>);

/// Range mode at the head: a 206 checked against the part asked for.
/// Returns the part (first byte, complete length) and, for a rest, the
/// first part to join in front of it.
pub(super) fn check_part(
    o: &mut Obj,
    status: u16,
    head: &ResponseHead,
) -> Result<PartAtHead, FetchError> {
    if status != 206 {
        if matches!(o.range, RangePart::Rest { .. }) && status == 200 {
            // The server sent the whole object again: take it whole.
            o.range = RangePart::Whole;
        }
        return Ok((None, Vec::new()));
    }
    let url = &o.url;
    let cr = super::head::field_text(head, "content-range")
        .ok_or_else(|| FetchError::object(url, "206 Partial Content without Content-Range"))?;
    let (start, total) = parse_content_range(&cr)
        .ok_or_else(|| FetchError::object(url, format!("unreadable Content-Range {cr:?}")))?;
    let mut preset = Vec::new();
    match &o.range {
        RangePart::Whole => {
            return Err(FetchError::object(
                url,
                "206 Partial Content to a request without Range",
            ));
        }
        RangePart::Head { .. } if start != 0 => {
            return Err(FetchError::object(
                url,
                format!("asked for the first bytes, got Content-Range {cr:?}"),
            ));
        }
        RangePart::Rest { head, total: t } if start != head.len() as u64 || total != *t => {
            return Err(FetchError::object(url, format!(
                "asked for bytes {}- of {t}, got Content-Range {cr:?} (the object changed between the parts?)",
                head.len()
            )));
        }
        RangePart::Rest { head, .. } => preset = head.clone(),
        RangePart::Head { .. } => {}
    }
    Ok((Some((start, total)), preset))
}

/// `bytes FIRST-LAST/COMPLETE` (RFC 9110 §14.4): the first byte and the
/// complete length.
fn parse_content_range(v: &str) -> Option<(u64, u64)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let total: u64 = total.trim().parse().ok()?;
    (first <= last && last < total).then_some((first, total))
}
