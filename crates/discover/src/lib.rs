//! Streaming discovery of embedded references in HTML.
//!
//! Paper 001 ("Compression Issues") depends on the robot parsing the page
//! while its first segment is still the only one that has arrived: "When this
//! first packet arrives, the client starts parsing the HTML ... Any inlined
//! objects referenced in the first segment ... can be pipelined onto the same
//! TCP connection." So discovery is incremental: [`Discoverer::feed`] takes
//! whatever bytes have arrived and returns the references found in them, in
//! document order. Tokenizing is done by `lol_html` (a maintained streaming
//! HTML rewriter used here only for its element and text handlers).
//!
//! Found: `img src`, `input type=image src`, `body background`,
//! `link rel=stylesheet href`, `script src`, and `url(...)` in inline
//! `<style>` blocks and `style` attributes. References are resolved against
//! the page URL (or a `<base href>`) with RFC 3986 §5.2, fragments removed.
//! [`same_server_path`] filters them to the page's own server.

#![forbid(unsafe_code)]

use std::sync::{Arc, Mutex};

use lol_html::send::{Element, HtmlRewriter, Settings};
use lol_html::{element, text, MemorySettings};

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

#[derive(Default)]
struct Found {
    base: String,
    refs: Vec<String>,
    total: usize,
    /// The references reported, so each is reported once and duplicates do
    /// not count toward `MAX_REFERENCES` (bounded by it).
    seen: std::collections::HashSet<String>,
    /// Distinct references seen beyond `MAX_REFERENCES` (not reported).
    dropped: usize,
    style_text: String,
}

impl Found {
    fn push_raw(&mut self, raw: &str) {
        let raw = decode_entities(raw.trim());
        if raw.is_empty() || raw.starts_with('#') {
            return;
        }
        if let Some(resolved) = resolve(&self.base, &raw) {
            if self.seen.contains(&resolved) {
                return;
            }
            if self.total >= MAX_REFERENCES {
                // Not remembered (memory stays bounded): a reference
                // repeated beyond the limit is counted each time.
                self.dropped += 1;
                return;
            }
            self.total += 1;
            self.seen.insert(resolved.clone());
            self.refs.push(resolved);
        }
    }

    fn push_css(&mut self, css: &str) {
        for r in css_urls(css) {
            self.push_raw(&r);
        }
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

impl Discoverer {
    /// `base` is the page's URL (`http://host:port/dir/page.html`) or path
    /// (`/dir/page.html`); references come back resolved against it.
    pub fn new(base: &str) -> Self {
        let found = Arc::new(Mutex::new(Found {
            base: strip_fragment(base).to_string(),
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
            .append_element_content_handler(element!("img[src]", move |el: &mut Element| {
                attr(&f2, el, "src");
                Ok(())
            }))
            .append_element_content_handler(element!("input[src]", move |el: &mut Element| {
                let is_image = el
                    .get_attribute("type")
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("image"));
                if is_image {
                    attr(&f3, el, "src");
                }
                Ok(())
            }))
            .append_element_content_handler(element!(
                "body[background]",
                move |el: &mut Element| {
                    attr(&f4, el, "background");
                    Ok(())
                }
            ))
            .append_element_content_handler(element!("link[href]", move |el: &mut Element| {
                let is_stylesheet = el.get_attribute("rel").is_some_and(|rel| {
                    rel.split_ascii_whitespace()
                        .any(|t| t.eq_ignore_ascii_case("stylesheet"))
                });
                if is_stylesheet {
                    attr(&f5, el, "href");
                }
                Ok(())
            }))
            .append_element_content_handler(element!("script[src]", move |el: &mut Element| {
                attr(&f6, el, "src");
                Ok(())
            }))
            .append_element_content_handler(element!("[style]", move |el: &mut Element| {
                if let Some(style) = el.get_attribute("style") {
                    lock(&f7).push_css(&decode_entities(&style));
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
                    found.push_css(&css);
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
        if let Some(rw) = self.rewriter.take() {
            if let Err(e) = rw.end() {
                self.error = Some(e.to_string());
            }
        }
        let mut found = lock(&self.found);
        if !found.style_text.is_empty() {
            let css = std::mem::take(&mut found.style_text);
            found.push_css(&css);
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

fn attr(found: &Arc<Mutex<Found>>, el: &Element<'_, '_>, name: &str) {
    if let Some(v) = el.get_attribute(name) {
        lock(found).push_raw(&v);
    }
}

/// `url(...)` tokens of a CSS text (CSS Syntax §4.3.6, simplified: quoted or
/// unquoted, whitespace around, backslash escapes kept verbatim). Also picks
/// up `@import "x.css"`.
pub fn css_urls(css: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = css.as_bytes();
    let lower = css.to_ascii_lowercase();
    let lb = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if lb[i..].starts_with(b"url(") {
            let mut j = i + 4;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            let (value, end) = if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
                let q = bytes[j];
                let start = j + 1;
                let mut k = start;
                while k < bytes.len() && bytes[k] != q {
                    k += 1;
                }
                (&css[start..k.min(bytes.len())], k + 1)
            } else {
                let start = j;
                let mut k = start;
                while k < bytes.len() && bytes[k] != b')' && !bytes[k].is_ascii_whitespace() {
                    k += 1;
                }
                (&css[start..k], k)
            };
            if !value.trim().is_empty() {
                out.push(value.trim().to_string());
            }
            i = end.max(i + 4);
        } else if lb[i..].starts_with(b"@import") {
            let mut j = i + 7;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < bytes.len() && (bytes[j] == b'"' || bytes[j] == b'\'') {
                let q = bytes[j];
                let start = j + 1;
                let mut k = start;
                while k < bytes.len() && bytes[k] != q {
                    k += 1;
                }
                if k > start {
                    out.push(css[start..k].to_string());
                }
                i = k + 1;
            } else {
                // `@import url(...)` is handled by the url( branch.
                i = j;
            }
        } else {
            i += 1;
        }
    }
    out
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
        assert_eq!(
            css_urls("a{b:URL(x.png)} @import 'i.css'; @import url(j.css);"),
            vec!["x.png", "i.css", "j.css"]
        );
        assert!(css_urls("url(").is_empty());
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
