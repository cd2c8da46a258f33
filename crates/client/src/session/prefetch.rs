//! Prefetch hints (RFC 8288 `Link: <...>; rel=prefetch`,
//! `FetchConfig::prefetch`): hints noted from every response head, and
//! fetched once the page's own work is done, up to `MAX_PREFETCH_OBJECTS`.

use super::*;

impl Ctx {
    /// Prefetch hints (RFC 8288 Link, rel=prefetch) of a response head.
    pub(super) fn note_prefetch_hints(&self, st: &mut State, id: ObjId, head: &ResponseHead) {
        let base = st.objs[id].url.clone();
        for v in head.headers("link") {
            for target in prefetch_links(&String::from_utf8_lossy(v)) {
                if let Some(abs) = resolve(&base, &target) {
                    if st.hint_set.insert(abs.clone()) {
                        st.hints.push(abs);
                    }
                }
            }
        }
    }

    /// Objects to prefetch now: hinted, on this server, not yet fetched and
    /// not in the cache.
    pub(super) fn take_prefetch_work(&self, st: &mut State) -> Vec<ObjId> {
        if !self.cfg.prefetch {
            return Vec::new();
        }
        let hints = std::mem::take(&mut st.hints);
        let mut ids = Vec::new();
        for h in hints {
            if st.prefetched >= MAX_PREFETCH_OBJECTS {
                break;
            }
            let Some(path) = same_server_path(&self.page_url, &h) else {
                continue;
            };
            if st.by_path.contains_key(&path) {
                continue;
            }
            let url = self.target.url_of(&path);
            if matches!(self.lookup(&url), Ok(Some(_))) {
                continue;
            }
            st.prefetched += 1;
            let id = self.add_object(st, path, ObjectKind::Prefetch);
            // A prefetch is never conditional: the object is not cached.
            st.objs[id].conditional = false;
            st.objs[id].cached = None;
            st.objs[id].method = RequestMethod::Get;
            ids.push(id);
        }
        ids
    }
}

/// Targets of `rel=prefetch` links in one `Link` field value (RFC 8288 §3,
/// simplified: `<uri>; param=value; ...`, comma-separated).
pub fn prefetch_links(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    // Bounded by the field length: each pass consumes one `<...>` link.
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let target = rest[open + 1..open + close].trim().to_string();
        let after = &rest[open + close + 1..];
        let params_end = after.find('<').unwrap_or(after.len());
        // Parameters end at the comma before the next link.
        let params = after[..params_end].split(',').next().unwrap_or("");
        let is_prefetch = params.split(';').any(|p| {
            let Some((k, v)) = p.split_once('=') else {
                return false;
            };
            k.trim().eq_ignore_ascii_case("rel")
                && v.trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("prefetch"))
        });
        if is_prefetch && !target.is_empty() {
            out.push(target);
        }
        rest = &after[params_end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_header_prefetch_targets() {
        assert_eq!(
            prefetch_links(
                r#"</a.gif>; rel=prefetch, </b.css>; rel="preload stylesheet", </c.gif>; rel="prefetch""#
            ),
            vec!["/a.gif", "/c.gif"]
        );
        assert!(prefetch_links("garbage <").is_empty());
        assert!(prefetch_links("").is_empty());
    }
}
