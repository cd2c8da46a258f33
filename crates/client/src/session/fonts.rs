//! Fonts by use (`FetchConfig::all_fonts` off): `@font-face` sources are
//! held until the page and its stylesheets are complete, then only the
//! faces the page's text uses are requested, as a browser does after style
//! computation. Hooked in where references are admitted (fonts held) and
//! at the end of every response (the faces chosen once all is in).

use super::*;

impl Ctx {
    /// Fonts by use: the `@font-face` sources are requested only by what
    /// the page's text needs, and only once it can be styled.
    pub(super) fn fonts_by_use(&self) -> bool {
        self.cfg.discover && !self.cfg.all_fonts
    }

    /// Once the page and every applied stylesheet are complete: the faces
    /// rendered text uses (`pagewire_discover::fonts`), requested now.
    pub(super) fn choose_fonts(&self, st: &mut State) -> Vec<ObjId> {
        if !self.fonts_by_use() || st.fonts_done || !st.discovery_done {
            return Vec::new();
        }
        let waiting = st
            .objs
            .iter()
            .any(|o| o.found.is_some_and(|(_, r)| r.is_stylesheet()) && o.record.is_none())
            || !st.getlist_pending.is_empty();
        if waiting {
            return Vec::new();
        }
        st.fonts_done = true;
        let held = std::mem::take(&mut st.fonts_held);
        let texts = std::mem::take(&mut st.css_texts);
        if held.is_empty() {
            return Vec::new();
        }
        let page = &st.objs[PAGE];
        let html = page
            .body
            .clone()
            .or_else(|| page.cached.as_ref().map(|c| c.body.clone()))
            .unwrap_or_default();
        let sheets: HashMap<String, String> = texts
            .into_iter()
            .map(|(id, t)| {
                let t = String::from_utf8_lossy(&t);
                let t = t.strip_prefix('\u{feff}').unwrap_or(&t).to_string();
                (st.objs[id].url.clone(), t)
            })
            .collect();
        let used = if st.css_text_bytes > MAX_FONT_CSS_BYTES {
            None
        } else {
            pagewire_discover::fonts::used_faces(
                &String::from_utf8_lossy(&html),
                &self.page_url,
                &sheets,
                &self.cfg.viewport,
            )
        };
        let mut next = Vec::new();
        match used {
            None => {
                st.warnings.push(
                    "page or stylesheets too large to style: every @font-face source fetched"
                        .to_string(),
                );
                for (r, from) in held {
                    next.extend(self.admit(st, vec![r], ObjectKind::Embedded, from));
                }
            }
            Some(faces) => {
                for f in faces {
                    // Requested from where the robot found it (the same
                    // URL), so the report names its stylesheet.
                    let Some((r, from)) = held.iter().find(|(r, _)| r.url == f.url) else {
                        continue;
                    };
                    next.extend(self.admit(st, vec![r.clone()], ObjectKind::Embedded, *from));
                }
            }
        }
        next
    }
}

/// Stylesheet text kept for fonts by use, all stylesheets together; beyond
/// it the page is not styled (every face is fetched).
const MAX_FONT_CSS_BYTES: usize = 64 << 20;

/// Keeps stylesheet text for fonts by use, within `MAX_FONT_CSS_BYTES`.
pub(super) fn keep_css_text(st: &mut State, id: ObjId, text: &[u8]) {
    st.css_text_bytes = st.css_text_bytes.saturating_add(text.len());
    if st.css_text_bytes <= MAX_FONT_CSS_BYTES {
        st.css_texts.entry(id).or_default().extend_from_slice(text);
    } else {
        st.css_texts.clear();
    }
}
