//! Streaming discovery of embedded references in HTML and CSS, as a
//! browser finds them without running scripts.
//!
//! Paper 001 ("Compression Issues") depends on the robot parsing the page
//! while its first segment is still the only one that has arrived: "When this
//! first packet arrives, the client starts parsing the HTML ... Any inlined
//! objects referenced in the first segment ... can be pipelined onto the same
//! TCP connection." So discovery is incremental: [`Discoverer::feed`] takes
//! whatever bytes have arrived and returns the references found in them, in
//! document order. Tokenizing is done by `lol_html` (a maintained streaming
//! HTML rewriter used here only for its element and text handlers); CSS by
//! `cssparser` (Servo's tokenizer), in [`css`].
//!
//! Found ([`Rule`]): `img src` and `srcset` (one candidate, for a
//! [`Viewport`]), `<picture><source media type srcset>`, `input type=image
//! src`, `body background`, `link rel=stylesheet` (not alternate, not
//! disabled), `link rel=preload` (with a fetchable `as`), `modulepreload`
//! and `icon`, `script src` (classic or module; not `nomodule`, not data
//! blocks), `video poster`, `object data`, and in `<style>` elements and
//! `style` attributes what [`css`] finds. References are resolved against the
//! page URL (or a `<base href>`) with RFC 3986 §5.2, fragments removed;
//! `data:` and other non-HTTP URLs are skipped. [`same_server_path`]
//! filters them to the page's own server.

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use lol_html::send::{Element, HtmlRewriter, Settings};
use lol_html::{element, text, MemorySettings};

pub mod css;
pub mod fonts;
pub mod select;

pub use css::CssDiscoverer;
pub use select::Viewport;

/// The tokenizer may buffer one incomplete token (a start tag with long
/// attributes, or an unterminated text node); 4 MiB bounds that memory for a
/// hostile page while being far above any real tag.
const MAX_TOKENIZER_MEMORY_BYTES: usize = 4 << 20;

/// One `<style>` element's text is collected until it ends so a `url(` split
/// across network chunks is still found; beyond 1 MiB the rest is ignored.
const MAX_STYLE_TEXT_BYTES: usize = 1 << 20;

/// A page has at most this many distinct references reported, each once (a
/// bound on the robot's request queue; the Microscape page has 42); the
/// rest are counted ([`Discoverer::dropped`]).
pub const MAX_REFERENCES: usize = 10_000;

/// Which rule found a reference (what a browser would fetch it for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `<img src>` (no `srcset`, or `src` chosen as its 1x candidate).
    ImgSrc,
    /// The `srcset` candidate of an `<img>` for the viewport and DPR.
    Srcset,
    /// The candidate of the first matching `<picture><source>`.
    PictureSource,
    InputImage,
    BodyBackground,
    /// `<link rel=stylesheet>`: fetched and parsed as CSS.
    Stylesheet,
    /// `<link rel="alternate stylesheet">`: Chromium fetches it (at low
    /// priority) but does not apply it, so its references are not fetched.
    AlternateStylesheet,
    /// `<link rel=stylesheet media>` whose media does not match: fetched,
    /// not applied (as an alternate one).
    UnappliedStylesheet,
    /// `<link rel=preload>` (fetched, not applied).
    Preload,
    ModulePreload,
    Icon,
    Script,
    VideoPoster,
    ObjectData,
    /// `url()` in a `style` attribute.
    StyleAttribute,
    /// `@import` in a stylesheet or `<style>`: fetched and parsed as CSS.
    Import,
    /// The source a browser takes from an `@font-face` rule.
    FontFace,
    /// `url()` / `image-set()` in a stylesheet or `<style>` element.
    CssUrl,
}

impl Rule {
    /// The rule as shown in reports (`--json`, HAR).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ImgSrc => "img src",
            Rule::Srcset => "img srcset",
            Rule::PictureSource => "picture source",
            Rule::InputImage => "input type=image",
            Rule::BodyBackground => "body background",
            Rule::Stylesheet => "link stylesheet",
            Rule::AlternateStylesheet => "link alternate stylesheet",
            Rule::UnappliedStylesheet => "link stylesheet, media not matching",
            Rule::Preload => "link preload",
            Rule::ModulePreload => "link modulepreload",
            Rule::Icon => "link icon",
            Rule::Script => "script src",
            Rule::VideoPoster => "video poster",
            Rule::ObjectData => "object data",
            Rule::StyleAttribute => "style attribute",
            Rule::Import => "@import",
            Rule::FontFace => "@font-face src",
            Rule::CssUrl => "url()",
        }
    }

    /// The object is a stylesheet a browser applies, so its own
    /// references are fetched too.
    pub fn is_stylesheet(self) -> bool {
        matches!(self, Rule::Stylesheet | Rule::Import)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reference: its absolute URL (or absolute path, for a path base) and
/// the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub url: String,
    pub rule: Rule,
}

#[derive(Default)]
struct Found {
    base: String,
    viewport: Viewport,
    refs: Vec<Reference>,
    total: usize,
    /// The references reported, so each is reported once and duplicates do
    /// not count toward `MAX_REFERENCES` (bounded by it).
    /// (and whether as a stylesheet: a `preload` of a URL later linked as a
    /// stylesheet is reported again, with the stylesheet rule).
    seen: std::collections::HashMap<String, bool>,
    /// Distinct references seen beyond `MAX_REFERENCES` (not reported).
    dropped: usize,
    style_text: String,
    /// Inside a `<picture>` before its `<img>`: whether a `<source>` was
    /// already chosen.
    picture: Option<bool>,
}

impl Found {
    fn push_raw(&mut self, raw: &str, rule: Rule) {
        let raw = decode_entities(raw.trim());
        if raw.is_empty() || raw.starts_with('#') {
            return;
        }
        if let Some(resolved) = resolve(&self.base, &raw) {
            match self.seen.get(&resolved) {
                Some(&was_css) if was_css || !rule.is_stylesheet() => return,
                Some(_) => {
                    // Known (a preload), now applied as a stylesheet.
                    self.seen.insert(resolved.clone(), true);
                    self.refs.push(Reference {
                        url: resolved,
                        rule,
                    });
                    return;
                }
                None => {}
            }
            if self.total >= MAX_REFERENCES {
                // Not remembered (memory stays bounded): a reference
                // repeated beyond the limit is counted each time.
                self.dropped += 1;
                return;
            }
            self.total += 1;
            self.seen.insert(resolved.clone(), rule.is_stylesheet());
            self.refs.push(Reference {
                url: resolved,
                rule,
            });
        }
    }

    /// A `<style>` element's text.
    fn push_stylesheet(&mut self, css: &str) {
        for r in css::stylesheet_refs(css, &self.viewport) {
            self.push_css_ref(&r.url, r.rule);
        }
    }

    /// A `style` attribute (already entity-decoded).
    fn push_declarations(&mut self, css: &str) {
        for r in css::declaration_refs(css, &self.viewport) {
            self.push_css_ref(&r.url, Rule::StyleAttribute);
        }
    }

    /// CSS has no character references: a URL from CSS is taken as is.
    fn push_css_ref(&mut self, url: &str, rule: Rule) {
        self.push_raw(&url.replace('&', "&amp;"), rule);
    }
}

/// The tokenizer; its output (the unchanged document) is discarded.
type Tokenizer = HtmlRewriter<'static, fn(&[u8])>;

/// Incremental reference finder for one HTML document.
pub struct Discoverer {
    rewriter: Option<Tokenizer>,
    found: Arc<Mutex<Found>>,
    error: Option<String>,
}

fn discard(_: &[u8]) {}

fn lock(found: &Arc<Mutex<Found>>) -> std::sync::MutexGuard<'_, Found> {
    // A panic inside a handler cannot leave `Found` half-updated in a way that
    // matters (it is a list of strings), so a poisoned lock is still usable.
    found.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tokens of a `rel` attribute, lower-cased.
fn rel_tokens(el: &Element<'_, '_>) -> Vec<String> {
    el.get_attribute("rel")
        .map(|r| {
            r.split_ascii_whitespace()
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .unwrap_or_default()
}

/// `<link>`: what a browser fetches for it, if anything.
fn link_rule(el: &Element<'_, '_>, v: &Viewport) -> Option<Rule> {
    let rel = rel_tokens(el);
    let has = |t: &str| rel.iter().any(|r| r == t);
    if has("stylesheet") {
        // A disabled one is not fetched; an alternate one is fetched, not
        // applied.
        if el.has_attribute("disabled") {
            return None;
        }
        if has("alternate") {
            return Some(Rule::AlternateStylesheet);
        }
        let media_ok = el
            .get_attribute("media")
            .is_none_or(|m| select::media_matches(&decode_entities(&m), v));
        return Some(if media_ok {
            Rule::Stylesheet
        } else {
            Rule::UnappliedStylesheet
        });
    }
    if has("modulepreload") {
        return Some(Rule::ModulePreload);
    }
    if has("preload") {
        // Only a known destination is fetched (HTML §4.6.7.13); `media`
        // that does not match prevents it.
        let as_ = el
            .get_attribute("as")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let known = matches!(
            as_.trim(),
            "fetch"
                | "font"
                | "image"
                | "script"
                | "style"
                | "track"
                | "audio"
                | "video"
                | "document"
                | "worker"
                | "sharedworker"
        );
        let media_ok = el
            .get_attribute("media")
            .is_none_or(|m| select::media_matches(&m, v));
        let type_ok = el.get_attribute("type").is_none_or(|t| {
            as_.trim() != "image" || t.trim().is_empty() || select::image_type_supported(&t)
        });
        return (known && media_ok && type_ok).then_some(Rule::Preload);
    }
    if has("icon") {
        return Some(Rule::Icon);
    }
    None
}

/// A `<script type>` a browser runs (and so fetches): classic or module,
/// not a data block.
fn script_fetched(el: &Element<'_, '_>) -> bool {
    if el.has_attribute("nomodule") {
        return false;
    }
    match el.get_attribute("type") {
        None => true,
        Some(t) => {
            let t = t.trim().to_ascii_lowercase();
            t.is_empty()
                || t == "module"
                || matches!(
                    t.as_str(),
                    "text/javascript"
                        | "application/javascript"
                        | "application/ecmascript"
                        | "application/x-javascript"
                        | "text/ecmascript"
                        | "text/jscript"
                        | "text/livescript"
                        | "text/x-javascript"
                        | "text/x-ecmascript"
                        | "text/javascript1.0"
                        | "text/javascript1.1"
                        | "text/javascript1.2"
                        | "text/javascript1.3"
                        | "text/javascript1.4"
                        | "text/javascript1.5"
                )
        }
    }
}

/// Options of a discovery: the viewport for `srcset`, `sizes` and `media`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Options {
    pub viewport: Viewport,
}

impl Discoverer {
    /// `base` is the page's URL (`http://host:port/dir/page.html`) or path
    /// (`/dir/page.html`); references come back resolved against it. A
    /// 1280-pixel viewport at 1x.
    pub fn new(base: &str) -> Self {
        Self::with_options(base, Options::default())
    }

    /// As [`Discoverer::new`], for a given viewport.
    pub fn with_options(base: &str, options: Options) -> Self {
        let v = options.viewport;
        let found = Arc::new(Mutex::new(Found {
            base: strip_fragment(base).to_string(),
            viewport: v,
            ..Found::default()
        }));
        let f = |found: &Arc<Mutex<Found>>| Arc::clone(found);
        let (f1, f2, f3, f4, f5, f6, f7, f8) = (
            f(&found),
            f(&found),
            f(&found),
            f(&found),
            f(&found),
            f(&found),
            f(&found),
            f(&found),
        );
        let (f9, f10, f11, f12) = (f(&found), f(&found), f(&found), f(&found));
        let settings = Settings::new_send()
            .with_strict(false)
            .with_memory_settings(
                MemorySettings::new().with_max_allowed_memory_usage(MAX_TOKENIZER_MEMORY_BYTES),
            )
            .append_element_content_handler(element!("base[href]", move |el: &mut Element| {
                let mut found = lock(&f1);
                if let Some(href) = el.get_attribute("href") {
                    let href = decode_entities(href.trim());
                    if let Some(b) = resolve(&found.base.clone(), &href) {
                        found.base = b;
                    }
                }
                Ok(())
            }))
            .append_element_content_handler(element!("picture", move |_el: &mut Element| {
                lock(&f9).picture = Some(false);
                Ok(())
            }))
            .append_element_content_handler(element!(
                "picture > source",
                move |el: &mut Element| {
                    let mut found = lock(&f10);
                    if found.picture != Some(false) {
                        return Ok(());
                    }
                    let v = found.viewport;
                    let media_ok = el
                        .get_attribute("media")
                        .is_none_or(|m| select::media_matches(&decode_entities(&m), &v));
                    let type_ok = el
                        .get_attribute("type")
                        .is_none_or(|t| t.trim().is_empty() || select::image_type_supported(&t));
                    let Some(srcset) = el.get_attribute("srcset") else {
                        return Ok(());
                    };
                    if media_ok && type_ok {
                        found.picture = Some(true);
                        let sizes = el.get_attribute("sizes").map(|s| decode_entities(&s));
                        let srcset = decode_entities(&srcset);
                        if let Some(u) = select::pick_srcset(&srcset, sizes.as_deref(), None, &v) {
                            found.push_raw(&u.replace('&', "&amp;"), Rule::PictureSource);
                        }
                    }
                    Ok(())
                }
            ))
            .append_element_content_handler(element!("img", move |el: &mut Element| {
                let mut found = lock(&f2);
                if let Some(chosen) = found.picture.take() {
                    if chosen {
                        // The picture's source was taken instead.
                        return Ok(());
                    }
                }
                let src = el.get_attribute("src");
                match el.get_attribute("srcset").filter(|s| !s.trim().is_empty()) {
                    Some(srcset) => {
                        let v = found.viewport;
                        let sizes = el.get_attribute("sizes").map(|s| decode_entities(&s));
                        let src_dec = src.as_deref().map(decode_entities);
                        let pick = select::pick_srcset(
                            &decode_entities(&srcset),
                            sizes.as_deref(),
                            src_dec.as_deref(),
                            &v,
                        );
                        if let Some(u) = pick {
                            let rule = if Some(&u) == src_dec.as_ref() {
                                Rule::ImgSrc
                            } else {
                                Rule::Srcset
                            };
                            found.push_raw(&u.replace('&', "&amp;"), rule);
                        }
                    }
                    None => {
                        if let Some(src) = src {
                            found.push_raw(&src, Rule::ImgSrc);
                        }
                    }
                }
                Ok(())
            }))
            .append_element_content_handler(element!("input[src]", move |el: &mut Element| {
                let is_image = el
                    .get_attribute("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"));
                if is_image {
                    attr(&f3, el, "src", Rule::InputImage);
                }
                Ok(())
            }))
            .append_element_content_handler(element!(
                "body[background]",
                move |el: &mut Element| {
                    attr(&f4, el, "background", Rule::BodyBackground);
                    Ok(())
                }
            ))
            .append_element_content_handler(element!("link[href]", move |el: &mut Element| {
                let v = lock(&f5).viewport;
                if let Some(rule) = link_rule(el, &v) {
                    attr(&f5, el, "href", rule);
                }
                Ok(())
            }))
            .append_element_content_handler(element!("script[src]", move |el: &mut Element| {
                if script_fetched(el) {
                    attr(&f6, el, "src", Rule::Script);
                }
                Ok(())
            }))
            .append_element_content_handler(element!("video[poster]", move |el: &mut Element| {
                attr(&f11, el, "poster", Rule::VideoPoster);
                Ok(())
            }))
            .append_element_content_handler(element!("object[data]", move |el: &mut Element| {
                attr(&f12, el, "data", Rule::ObjectData);
                Ok(())
            }))
            .append_element_content_handler(element!("[style]", move |el: &mut Element| {
                if let Some(style) = el.get_attribute("style") {
                    lock(&f7).push_declarations(&decode_entities(&style));
                }
                Ok(())
            }))
            .append_element_content_handler(text!("style", move |t| {
                let mut found = lock(&f8);
                if found.style_text.len() + t.as_str().len() <= MAX_STYLE_TEXT_BYTES {
                    found.style_text.push_str(t.as_str());
                }
                if t.last_in_text_node() {
                    let css = std::mem::take(&mut found.style_text);
                    found.push_stylesheet(&css);
                }
                Ok(())
            }));
        let rewriter = HtmlRewriter::new(settings, discard as fn(&[u8]));
        Discoverer {
            rewriter: Some(rewriter),
            found,
            error: None,
        }
    }

    /// Tokenizes `chunk` (any split of the document, even mid-tag) and returns
    /// the references completed by it, in document order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        urls(self.feed_refs(chunk))
    }

    /// As [`Discoverer::feed`], with the rule that found each reference.
    pub fn feed_refs(&mut self, chunk: &[u8]) -> Vec<Reference> {
        if let Some(rw) = self.rewriter.as_mut() {
            if let Err(e) = rw.write(chunk) {
                // The tokenizer cannot continue after an error (memory bound
                // exceeded); keep what was found and stop looking.
                self.error = Some(e.to_string());
                self.rewriter = None;
            }
        }
        std::mem::take(&mut lock(&self.found).refs)
    }

    /// Ends the document; returns references completed by the end of input.
    pub fn finish(&mut self) -> Vec<String> {
        urls(self.finish_refs())
    }

    /// As [`Discoverer::finish`], with rules.
    pub fn finish_refs(&mut self) -> Vec<Reference> {
        if let Some(rw) = self.rewriter.take() {
            if let Err(e) = rw.end() {
                self.error = Some(e.to_string());
            }
        }
        let mut found = lock(&self.found);
        if !found.style_text.is_empty() {
            let css = std::mem::take(&mut found.style_text);
            found.push_stylesheet(&css);
        }
        std::mem::take(&mut found.refs)
    }

    /// References found beyond [`MAX_REFERENCES`] and so not reported: a
    /// caller must say that the page was cut short.
    pub fn dropped(&self) -> usize {
        lock(&self.found).dropped
    }

    /// Why the tokenizer stopped early, if it did.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Whole-document convenience: all references of `html` in order.
    pub fn all(base: &str, html: &[u8]) -> Vec<String> {
        let mut d = Discoverer::new(base);
        let mut out = d.feed(html);
        out.extend(d.finish());
        out
    }
}

fn urls(refs: Vec<Reference>) -> Vec<String> {
    refs.into_iter().map(|r| r.url).collect()
}

fn attr(found: &Arc<Mutex<Found>>, el: &Element<'_, '_>, name: &str, rule: Rule) {
    if let Some(v) = el.get_attribute(name) {
        lock(found).push_raw(&v, rule);
    }
}

/// The references of a whole stylesheet as written (not resolved), in
/// order, as a browser takes them: `@import` before other rules, `url()`
/// and `image-set()` (one candidate), one source per `@font-face` (see
/// [`css`]), for the default viewport.
pub fn css_urls(css: &str) -> Vec<String> {
    css::stylesheet_refs(css, &Viewport::default())
        .into_iter()
        .map(|r| r.url)
        .collect()
}

/// Decodes the character references that occur in URLs in practice
/// (`&amp;`, `&quot;`, `&apos;`, `&lt;`, `&gt;`, numeric); others stay as is.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('&') {
        out.push_str(&rest[..pos]);
        rest = &rest[pos..];
        let end = rest[1..].find(';').map(|e| e + 1);
        let decoded = end.filter(|&e| e <= 10).and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "lt" => Some('<'),
                "gt" => Some('>'),
                _ if name.starts_with("#x") || name.starts_with("#X") => {
                    u32::from_str_radix(&name[2..], 16)
                        .ok()
                        .and_then(char::from_u32)
                }
                _ if name.starts_with('#') => name[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn strip_fragment(s: &str) -> &str {
    s.split('#').next().unwrap_or(s)
}

/// Splits an absolute URL into (scheme, authority, path+query); `None` for a
/// bare path or a relative reference.
fn split_absolute(url: &str) -> Option<(&str, &str, &str)> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    if scheme.is_empty()
        || !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let rest = &url[colon + 1..];
    match rest.strip_prefix("//") {
        Some(r) => {
            let end = r.find(['/', '?']).unwrap_or(r.len());
            Some((scheme, &r[..end], &r[end..]))
        }
        None => Some((scheme, "", rest)),
    }
}

/// RFC 3986 §5.2.4 remove_dot_segments.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').collect();
    let n = segs.len();
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == n;
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let joined = out.join("/");
    if path.starts_with('/') && !joined.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

/// Resolves `reference` against `base` (RFC 3986 §5.2.2; fragment dropped).
/// `base` may be an absolute URL or an absolute path. Returns `None` for
/// references that are not fetchable resources (`data:`, `javascript:`...).
pub fn resolve(base: &str, reference: &str) -> Option<String> {
    let reference = strip_fragment(reference);
    if let Some((scheme, auth, path)) = split_absolute(reference) {
        let s = scheme.to_ascii_lowercase();
        if s != "http" && s != "https" {
            return None;
        }
        let path = if path.is_empty() { "/" } else { path };
        let (p, q) = split_query(path);
        return Some(format!("{s}://{auth}{}{q}", remove_dot_segments(p)));
    }
    let (prefix, base_path) = match split_absolute(base) {
        Some((scheme, auth, path)) => (format!("{scheme}://{auth}"), path),
        None => (String::new(), base),
    };
    if let Some(net) = reference.strip_prefix("//") {
        let scheme = prefix.split(':').next().unwrap_or("http");
        let scheme = if scheme.is_empty() { "http" } else { scheme };
        let end = net.find(['/', '?']).unwrap_or(net.len());
        let (p, q) = split_query(&net[end..]);
        let p = if p.is_empty() { "/" } else { p };
        return Some(format!(
            "{scheme}://{}{}{q}",
            &net[..end],
            remove_dot_segments(p)
        ));
    }
    let (base_p, base_q) = split_query(base_path);
    let base_p = if base_p.is_empty() { "/" } else { base_p };
    let (ref_p, ref_q) = split_query(reference);
    let (path, query) = if ref_p.is_empty() {
        (
            base_p.to_string(),
            if ref_q.is_empty() { base_q } else { ref_q },
        )
    } else if ref_p.starts_with('/') {
        (remove_dot_segments(ref_p), ref_q)
    } else {
        let dir = &base_p[..base_p.rfind('/').map_or(0, |i| i + 1)];
        let merged = if dir.is_empty() {
            format!("/{ref_p}")
        } else {
            format!("{dir}{ref_p}")
        };
        (remove_dot_segments(&merged), ref_q)
    };
    Some(format!("{prefix}{path}{query}"))
}

fn split_query(s: &str) -> (&str, &str) {
    match s.find('?') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// The request target (path and query) of `url` if it is on the same server
/// as `page` (same scheme, host and port; RFC 6454 origin), else `None`. Bare
/// paths are on the same server by definition.
pub fn same_server_path(page: &str, url: &str) -> Option<String> {
    match (split_absolute(page), split_absolute(url)) {
        (_, None) => url.starts_with('/').then(|| url.to_string()),
        (None, Some(_)) => None,
        (Some((ps, pa, _)), Some((us, ua, up))) => {
            let same = ps.eq_ignore_ascii_case(us)
                && normalize_authority(ps, pa) == normalize_authority(us, ua);
            same.then(|| {
                if up.is_empty() {
                    "/".to_string()
                } else {
                    up.to_string()
                }
            })
        }
    }
}

fn normalize_authority(scheme: &str, auth: &str) -> String {
    let auth = auth.rsplit('@').next().unwrap_or(auth).to_ascii_lowercase();
    let default = if scheme.eq_ignore_ascii_case("https") {
        ":443"
    } else {
        ":80"
    };
    auth.strip_suffix(default)
        .map(str::to_string)
        .unwrap_or(auth)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "http://a/b/c/d;p?q";

    #[test]
    fn rfc3986_section_5_4_1_normal_examples() {
        let cases = [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g/"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q"),
            ("g#s", "http://a/b/c/g"),
            (";x", "http://a/b/c/;x"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../g", "http://a/g"),
        ];
        for (r, want) in cases {
            assert_eq!(resolve(BASE, r).as_deref(), Some(want), "ref {r:?}");
        }
    }

    #[test]
    fn rfc3986_section_5_4_2_abnormal_examples() {
        assert_eq!(resolve(BASE, "../../../g").unwrap(), "http://a/g");
        assert_eq!(resolve(BASE, "/./g").unwrap(), "http://a/g");
        assert_eq!(resolve(BASE, "/../g").unwrap(), "http://a/g");
        assert_eq!(resolve(BASE, "g.").unwrap(), "http://a/b/c/g.");
        assert_eq!(resolve(BASE, "./../g").unwrap(), "http://a/b/g");
        assert_eq!(resolve(BASE, "g/../h").unwrap(), "http://a/b/c/h");
    }

    #[test]
    fn non_http_schemes_are_not_references() {
        assert_eq!(resolve(BASE, "data:image/gif;base64,R0lG"), None);
        assert_eq!(resolve(BASE, "javascript:void(0)"), None);
        assert_eq!(resolve(BASE, "mailto:x@y"), None);
    }

    #[test]
    fn path_bases_resolve_to_paths() {
        assert_eq!(resolve("/", "a.gif").unwrap(), "/a.gif");
        assert_eq!(
            resolve("/dir/page.html", "img/a.gif").unwrap(),
            "/dir/img/a.gif"
        );
        assert_eq!(resolve("/dir/page.html", "../a.gif").unwrap(), "/a.gif");
    }

    #[test]
    fn same_server_filter() {
        let page = "http://127.0.0.1:8080/index.html";
        assert_eq!(
            same_server_path(page, "http://127.0.0.1:8080/a.gif?x").as_deref(),
            Some("/a.gif?x")
        );
        assert_eq!(same_server_path(page, "http://127.0.0.1:8081/a.gif"), None);
        assert_eq!(same_server_path(page, "https://127.0.0.1:8080/a.gif"), None);
        assert_eq!(
            same_server_path("http://h/", "http://H:80/x").as_deref(),
            Some("/x")
        );
        assert_eq!(same_server_path("/p", "/x").as_deref(), Some("/x"));
    }

    const PAGE: &str = r#"<!doctype html><html><head>
<link rel="stylesheet" href="/s.css"><link rel=icon href="/favicon.ico">
<script src="app.js"></script>
<style>body { background: url( "bg.gif" ) } .x{background-image:url(x.gif)}</style>
</head><body background="/body.gif">
<img src="/images/a.gif?v=1&amp;w=2" alt=a><IMG SRC='b.gif'>
<input type="IMAGE" src="/go.gif"><input type=text src="/no.gif">
<div style="background: url('/div.gif')"></div>
<a href="/not-embedded.html">x</a><img src="data:image/gif;base64,AA">
<img src="http://elsewhere.example/c.gif">
</body></html>"#;

    fn expected() -> Vec<&'static str> {
        vec![
            "http://h/s.css",
            "http://h/favicon.ico",
            "http://h/dir/app.js",
            "http://h/dir/bg.gif",
            "http://h/dir/x.gif",
            "http://h/body.gif",
            "http://h/images/a.gif?v=1&w=2",
            "http://h/dir/b.gif",
            "http://h/go.gif",
            "http://h/div.gif",
            "http://elsewhere.example/c.gif",
        ]
    }

    #[test]
    fn finds_every_kind_in_document_order() {
        let got = Discoverer::all("http://h/dir/page.html", PAGE.as_bytes());
        assert_eq!(got, expected());
    }

    #[test]
    fn any_chunking_gives_the_same_references() {
        // Every split point, including mid-tag, mid-attribute and mid-url(.
        for size in [1usize, 2, 3, 7, 13, 64, 500] {
            let mut d = Discoverer::new("http://h/dir/page.html");
            let mut got = Vec::new();
            for chunk in PAGE.as_bytes().chunks(size) {
                got.extend(d.feed(chunk));
            }
            got.extend(d.finish());
            assert_eq!(got, expected(), "chunk size {size}");
        }
    }

    #[test]
    fn references_come_out_as_soon_as_their_tag_is_complete() {
        let mut d = Discoverer::new("/");
        assert!(d.feed(b"<html><body><img sr").is_empty());
        assert_eq!(d.feed(b"c=\"a.gif\"><p>"), vec!["/a.gif".to_string()]);
        assert_eq!(d.feed(b"<img src=b.gif>"), vec!["/b.gif".to_string()]);
        assert!(d.finish().is_empty());
    }

    #[test]
    fn base_href_changes_resolution() {
        let got = Discoverer::all(
            "http://h/p.html",
            b"<head><base href=\"/sub/\"></head><img src=a.gif>",
        );
        assert_eq!(got, vec!["http://h/sub/a.gif"]);
    }

    #[test]
    fn entities_and_css_edge_cases() {
        assert_eq!(
            decode_entities("a&amp;b&#47;c&#x2F;&bogus;"),
            "a&b/c/&bogus;"
        );
        // An @import after a rule is ignored, as browsers do.
        assert_eq!(
            css_urls("a{b:URL(x.png)} @import 'i.css'; @import url(j.css);"),
            vec!["x.png"]
        );
        assert_eq!(
            css_urls("@import 'i.css'; @import url(j.css); a{b:URL(x.png)}"),
            vec!["i.css", "j.css", "x.png"]
        );
        assert!(css_urls("url(").is_empty());
    }

    fn rules(base: &str, html: &str, v: Viewport) -> Vec<(String, Rule)> {
        let mut d = Discoverer::with_options(base, Options { viewport: v });
        let mut got = d.feed_refs(html.as_bytes());
        got.extend(d.finish_refs());
        got.into_iter().map(|r| (r.url, r.rule)).collect()
    }

    #[test]
    fn browser_rules_for_links_scripts_media_and_pictures() {
        let html = r#"<link rel=preload as=font href=f.woff2 crossorigin><link rel=preload href=noas.js>
<link rel="alternate stylesheet" href=alt.css><link rel=stylesheet href=dis.css disabled><link rel=stylesheet media=print href=print.css>
<link rel=modulepreload href=m.js><link rel="shortcut icon" href=i.ico><link rel=next href=n.html>
<script type=module src=mod.js></script><script nomodule src=legacy.js></script>
<script type="text/template" src=tpl.html></script>
<video poster=p.jpg src=v.mp4></video><object data=o.svg></object>
<img src=a1.png srcset="a1.png 1x, a2.png 2x">
<img srcset="w480.jpg 480w, w1600.jpg 1600w" sizes="(max-width: 600px) 480px, 100vw" src=fallback.jpg>
<picture><source media="(max-width: 700px)" srcset=narrow.webp>
<source type=image/heic srcset=x.heic><source type=image/webp srcset="p1.webp 1x, p2.webp 2x"><img src=pic.jpg></picture><img src=after.png>
<picture><source media=print srcset=print.png><img src=pic2.jpg srcset="pic2-2x.jpg 2x"></picture>
<img src="data:image/png;base64,AA" srcset="data:image/png;base64,BB 2x">
<style>@import "imp.css"; @font-face{font-family:F;src:url(f.woff2) format("woff2"),url(f.ttf)}</style>"#;
        let got = rules("http://h/", html, Viewport::default());
        let want: Vec<(String, Rule)> = [
            ("f.woff2", Rule::Preload),
            ("alt.css", Rule::AlternateStylesheet),
            ("print.css", Rule::UnappliedStylesheet),
            ("m.js", Rule::ModulePreload),
            ("i.ico", Rule::Icon),
            ("mod.js", Rule::Script),
            ("p.jpg", Rule::VideoPoster),
            ("o.svg", Rule::ObjectData),
            ("a1.png", Rule::ImgSrc),
            ("w1600.jpg", Rule::Srcset),
            ("p1.webp", Rule::PictureSource),
            ("after.png", Rule::ImgSrc),
            ("pic2.jpg", Rule::ImgSrc),
            ("imp.css", Rule::Import),
        ]
        .iter()
        .map(|(u, r)| (format!("http://h/{u}"), *r))
        .collect();
        assert_eq!(got, want);
        // At 2x, and in a narrow window, other candidates.
        let got = rules(
            "http://h/",
            html,
            Viewport {
                width: 600,
                dpr: 2.0,
            },
        );
        let names: Vec<&str> = got.iter().map(|(u, _)| &u[9..]).collect();
        assert!(names.contains(&"a2.png"), "{names:?}");
        assert!(names.contains(&"w1600.jpg"), "{names:?}");
        assert!(names.contains(&"narrow.webp"), "{names:?}");
        assert!(names.contains(&"pic2-2x.jpg"), "{names:?}");
    }

    #[test]
    fn a_preload_linked_later_as_a_stylesheet_is_reported_again() {
        let got = rules(
            "http://h/",
            "<link rel=preload as=style href=a.css><link rel=stylesheet href=a.css><link rel=stylesheet href=a.css>",
            Viewport::default(),
        );
        assert_eq!(
            got,
            vec![
                ("http://h/a.css".to_string(), Rule::Preload),
                ("http://h/a.css".to_string(), Rule::Stylesheet)
            ]
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut d = Discoverer::new("/");
        for i in 0..2000u32 {
            let b = [(i * 7919 % 256) as u8, b'<', (i % 256) as u8, b'"', b'='];
            let _ = d.feed(&b);
        }
        let _ = d.finish();
    }
}
