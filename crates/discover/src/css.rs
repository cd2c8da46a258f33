//! References in CSS, found as a browser would fetch them, on Servo's CSS
//! tokenizer (`cssparser`): `@import` (only before other rules, as CSS
//! Cascade §6.5 says), `url()` and `image-set()` in declarations (not inside
//! an `@media` block whose query does not match the viewport),
//! and one source per `@font-face`: the last `src` declaration's first
//! entry in a format a current browser decodes (CSS Fonts 4 §4.3: woff2,
//! woff, truetype, opentype, collection; never `embedded-opentype` or
//! `svg`), `local()` taken as not installed.
//!
//! [`CssDiscoverer`] is streaming: it scans each top-level rule once the
//! bytes after it have arrived, so a stylesheet's references come out while
//! the stylesheet is still arriving.

use std::collections::HashSet;

use cssparser::{Delimiter, ParseError, Parser, ParserInput, Token};

use crate::select::{pick_image_set, Viewport};
use crate::{resolve, Reference, Rule, MAX_REFERENCES};

/// A stylesheet's text beyond this is not scanned (a bound on memory for a
/// hostile server; the largest real stylesheets are a few hundred KB).
pub const MAX_STYLESHEET_BYTES: usize = 16 << 20;

/// An incomplete rule longer than this is scanned again only once it has
/// grown by as much again (and a closing `}` or `;` arrived): a huge
/// `@media` block split into many small reads is tokenized O(n) times in
/// all, not once per read.
const RESCAN_STEP: usize = 64 << 10;

/// A reference as written, with the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawRef {
    pub url: String,
    pub rule: Rule,
}

type Out = Vec<RawRef>;
type PResult<'i> = Result<(), ParseError<'i, ()>>;

fn push(out: &mut Out, url: &str, rule: Rule) {
    let url = url.trim();
    if !url.is_empty() && !url.starts_with('#') {
        out.push(RawRef {
            url: url.to_string(),
            rule,
        });
    }
}

/// One top-level item (rule, at-rule or stray token). `rules_seen`: a rule
/// other than `@charset` / `@layer a, b;` came before (then `@import` is
/// ignored, as browsers do).
fn top_item<'i>(p: &mut Parser<'i, '_>, out: &mut Out, rules_seen: &mut bool, v: &Viewport) {
    let t = match p.next() {
        Ok(t) => t.clone(),
        Err(_) => return,
    };
    match t {
        Token::AtKeyword(name) => at_rule(p, &name, out, Some(rules_seen), v),
        Token::CDO | Token::CDC | Token::Semicolon => {}
        Token::CurlyBracketBlock => {
            *rules_seen = true;
            block(p, out, v);
        }
        _ => {
            // A style rule: its prelude (selectors) up to the block.
            *rules_seen = true;
            loop {
                match p.next().cloned() {
                    Ok(Token::CurlyBracketBlock) => {
                        block(p, out, v);
                        return;
                    }
                    Ok(_) => {}
                    Err(_) => return,
                }
            }
        }
    }
}

fn at_rule<'i>(
    p: &mut Parser<'i, '_>,
    name: &str,
    out: &mut Out,
    top: Option<&mut bool>,
    v: &Viewport,
) {
    let name = name.to_ascii_lowercase();
    if name == "import" {
        let allowed = top.as_ref().is_some_and(|seen| !**seen);
        let _ = p.parse_until_after(Delimiter::Semicolon, |p| -> PResult<'i> {
            if allowed {
                if let Ok(u) = p.expect_url_or_string() {
                    push(out, &u, Rule::Import);
                }
            }
            while p.next().is_ok() {}
            Ok(())
        });
        return;
    }
    let mut statement_only = true;
    let prelude_start = p.position();
    loop {
        match p.next().cloned() {
            Ok(Token::CurlyBracketBlock) => {
                statement_only = false;
                let prelude = p.slice_from(prelude_start);
                let prelude = prelude.strip_suffix('{').unwrap_or(prelude);
                if name == "media" && !crate::select::media_matches(prelude, v) {
                    // Rules a browser does not apply at this viewport:
                    // skipped, but consumed here, so that the streaming
                    // scanner's position is past the block (it used to be
                    // just after `{`, and a later scan read the inner
                    // rules as top-level ones).
                    let _ = p.parse_nested_block(|p| -> PResult<'i> {
                        while p.next().is_ok() {}
                        Ok(())
                    });
                } else if name == "font-face" {
                    let _ = p.parse_nested_block(|p| -> PResult<'i> {
                        font_face(p, out);
                        Ok(())
                    });
                } else {
                    block(p, out, v);
                }
                break;
            }
            Ok(Token::Semicolon) | Err(_) => break,
            Ok(_) => {}
        }
    }
    if let Some(seen) = top {
        if !(name == "charset" || name == "layer" && statement_only) {
            *seen = true;
        }
    }
}

fn block<'i>(p: &mut Parser<'i, '_>, out: &mut Out, v: &Viewport) {
    let _ = p.parse_nested_block(|p| -> PResult<'i> {
        generic(p, out, v);
        Ok(())
    });
}

/// Any block's content: declarations, nested rules, at-rules.
fn generic<'i>(p: &mut Parser<'i, '_>, out: &mut Out, v: &Viewport) {
    loop {
        let t = match p.next() {
            Ok(t) => t.clone(),
            Err(_) => return,
        };
        match t {
            Token::UnquotedUrl(u) => push(out, &u, Rule::CssUrl),
            Token::Function(f) => {
                let f = f.to_ascii_lowercase();
                if f == "url" || f == "src" {
                    let _ = p.parse_nested_block(|p| -> PResult<'i> {
                        if let Ok(s) = p.expect_string() {
                            push(out, s, Rule::CssUrl);
                        }
                        Ok(())
                    });
                } else if f == "image-set" || f == "-webkit-image-set" {
                    image_set(p, out, v);
                } else {
                    block(p, out, v);
                }
            }
            Token::AtKeyword(name) => at_rule(p, &name, out, None, v),
            Token::CurlyBracketBlock | Token::ParenthesisBlock | Token::SquareBracketBlock => {
                block(p, out, v)
            }
            _ => {}
        }
    }
}

/// `image-set(url(a.png) 1x, "b.png" 2x type("image/avif"), ...)`.
fn image_set<'i>(p: &mut Parser<'i, '_>, out: &mut Out, v: &Viewport) {
    let mut cands: Vec<(String, f64, Option<String>)> = Vec::new();
    let _ = p.parse_nested_block(|p| -> PResult<'i> {
        loop {
            let _ = p.parse_until_after(Delimiter::Comma, |p| -> PResult<'i> {
                let Ok(url) = p.expect_url_or_string().map(|u| u.to_string()) else {
                    while p.next().is_ok() {}
                    return Ok(());
                };
                let (mut density, mut ty) = (1.0, None);
                while let Ok(t) = p.next().cloned() {
                    match t {
                        Token::Dimension { value, unit, .. } => {
                            let f = match unit.to_ascii_lowercase().as_str() {
                                "x" | "dppx" => 1.0,
                                "dpi" => 1.0 / 96.0,
                                "dpcm" => 2.54 / 96.0,
                                _ => continue,
                            };
                            density = f64::from(value) * f;
                        }
                        Token::Function(f) if f.eq_ignore_ascii_case("type") => {
                            let _ = p.parse_nested_block(|p| -> PResult<'i> {
                                if let Ok(s) = p.expect_string() {
                                    ty = Some(s.to_string());
                                }
                                Ok(())
                            });
                        }
                        _ => {}
                    }
                }
                cands.push((url, density, ty));
                Ok(())
            });
            if p.is_exhausted() {
                return Ok(());
            }
        }
    });
    if let Some(u) = pick_image_set(cands, v) {
        push(out, &u, Rule::CssUrl);
    }
}

/// Font formats a current browser decodes (`format()` hints, CSS Fonts 4).
fn format_supported(f: &str) -> bool {
    let f = f.to_ascii_lowercase();
    let f = f.strip_suffix("-variations").unwrap_or(&f);
    matches!(f, "woff2" | "woff" | "truetype" | "opentype" | "collection")
}

/// Font technologies Chromium supports (`tech()` hints).
fn tech_supported(t: &str) -> bool {
    matches!(
        t.to_ascii_lowercase().as_str(),
        "variations"
            | "palettes"
            | "features-opentype"
            | "color-colrv0"
            | "color-colrv1"
            | "color-cbdt"
            | "color-sbix"
    )
}

/// An `@font-face` block: the last valid `src` declaration wins (the
/// cascade inside the block; the old `src: url(x.eot); src: ...` pattern),
/// and from it the first entry a browser can use.
fn font_face<'i>(p: &mut Parser<'i, '_>, out: &mut Out) {
    let mut chosen: Option<String> = None;
    while !p.is_exhausted() {
        let _ = p.parse_until_after(Delimiter::Semicolon, |p| -> PResult<'i> {
            let name = p.expect_ident()?.clone();
            p.expect_colon()?;
            if name.eq_ignore_ascii_case("src") {
                if let Some(u) = font_src(p) {
                    chosen = Some(u);
                }
            }
            while p.next().is_ok() {}
            Ok(())
        });
    }
    if let Some(u) = chosen {
        push(out, &u, Rule::FontFace);
    }
}

/// The first usable `url()` of a `src` list; `None` when no entry is usable
/// (the declaration is then invalid and an earlier one stays).
pub(crate) fn font_src<'i>(p: &mut Parser<'i, '_>) -> Option<String> {
    let mut first = None;
    loop {
        let _ = p.parse_until_after(Delimiter::Comma, |p| -> PResult<'i> {
            let url = p.try_parse(|p| p.expect_url()).ok().map(|u| u.to_string());
            let (mut formats, mut techs) = (Vec::new(), Vec::new());
            while let Ok(t) = p.next().cloned() {
                if let Token::Function(f) = t {
                    let list = if f.eq_ignore_ascii_case("format") {
                        &mut formats
                    } else if f.eq_ignore_ascii_case("tech") {
                        &mut techs
                    } else {
                        continue;
                    };
                    let _ = p.parse_nested_block(|p| -> PResult<'i> {
                        while let Ok(t) = p.next() {
                            match t {
                                Token::QuotedString(s) | Token::Ident(s) => {
                                    list.push(s.to_string())
                                }
                                _ => {}
                            }
                        }
                        Ok(())
                    });
                }
            }
            let usable = (formats.is_empty() || formats.iter().any(|f| format_supported(f)))
                && techs.iter().all(|t| tech_supported(t));
            if let (Some(u), true, None) = (url, usable, &first) {
                first = Some(u);
            }
            Ok(())
        });
        if p.is_exhausted() {
            break;
        }
    }
    first
}

/// Every reference of a whole stylesheet, as written, in order.
pub(crate) fn stylesheet_refs(css: &str, v: &Viewport) -> Out {
    let mut out = Vec::new();
    let mut input = ParserInput::new(css);
    let mut p = Parser::new(&mut input);
    let mut rules_seen = false;
    while !p.is_exhausted() {
        let before = p.position();
        top_item(&mut p, &mut out, &mut rules_seen, v);
        if p.position() == before {
            break;
        }
    }
    out
}

/// The references of a declaration list (a `style` attribute).
pub(crate) fn declaration_refs(css: &str, v: &Viewport) -> Out {
    let mut out = Vec::new();
    let mut input = ParserInput::new(css);
    let mut p = Parser::new(&mut input);
    generic(&mut p, &mut out, v);
    out
}

/// Streaming discovery in one stylesheet: `feed` its bytes as they arrive,
/// get the references of the rules they complete, resolved against the
/// stylesheet's URL; `finish` at the end.
pub struct CssDiscoverer {
    base: String,
    viewport: Viewport,
    /// Bytes of an incomplete UTF-8 sequence at the end of the input.
    pending: Vec<u8>,
    /// Decoded text not yet scanned (an incomplete rule at most).
    text: String,
    /// Length of `text` when a scan last left an incomplete rule.
    scanned: usize,
    rules_seen: bool,
    total: usize,
    seen: HashSet<String>,
    truncated: bool,
}

impl CssDiscoverer {
    /// `base`: the stylesheet's URL (references in it resolve against it).
    pub fn new(base: &str, viewport: Viewport) -> Self {
        CssDiscoverer {
            base: base.split('#').next().unwrap_or(base).to_string(),
            viewport,
            pending: Vec::new(),
            text: String::new(),
            scanned: 0,
            rules_seen: false,
            total: 0,
            seen: HashSet::new(),
            truncated: false,
        }
    }

    /// The stylesheet was larger than [`MAX_STYLESHEET_BYTES`]; the rest was
    /// not scanned.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Takes the next bytes of the stylesheet (any split, even inside a
    /// UTF-8 sequence or a token).
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Reference> {
        if self.truncated {
            return Vec::new();
        }
        if self.total + chunk.len() > MAX_STYLESHEET_BYTES {
            self.truncated = true;
            let keep = MAX_STYLESHEET_BYTES.saturating_sub(self.total);
            return self.feed_inner(&chunk[..keep], true);
        }
        self.feed_inner(chunk, false)
    }

    fn feed_inner(&mut self, chunk: &[u8], last: bool) -> Vec<Reference> {
        self.total += chunk.len();
        self.pending.extend_from_slice(chunk);
        decode_into(&mut self.pending, &mut self.text, last);
        if self.text.starts_with('\u{feff}') {
            self.text.drain(..3);
        }
        let ends_something = chunk.iter().any(|&b| b == b'}' || b == b';');
        let grown = self.text.len().saturating_sub(self.scanned);
        if last || ends_something && (self.scanned < RESCAN_STEP || grown >= self.scanned) {
            self.scan(last)
        } else {
            Vec::new()
        }
    }

    /// The end of the stylesheet: the references of its last rule.
    pub fn finish(&mut self) -> Vec<Reference> {
        decode_into(&mut self.pending, &mut self.text, true);
        self.scan(true)
    }

    fn scan(&mut self, last: bool) -> Vec<Reference> {
        let text = std::mem::take(&mut self.text);
        let mut out = Vec::new();
        let mut consumed = 0;
        {
            let mut input = ParserInput::new(&text);
            let mut p = Parser::new(&mut input);
            loop {
                let start = p.position().byte_index();
                if p.is_exhausted() {
                    consumed = if last { text.len() } else { start };
                    break;
                }
                let mut item = Vec::new();
                let mut rules_seen = self.rules_seen;
                top_item(&mut p, &mut item, &mut rules_seen, &self.viewport);
                let end = p.position().byte_index();
                if end >= text.len() && !last {
                    // Possibly cut short by the end of what has arrived.
                    break;
                }
                self.rules_seen = rules_seen;
                out.extend(item);
                consumed = end;
                if end <= start {
                    break;
                }
            }
        }
        self.text = text;
        self.text.drain(..consumed.min(self.text.len()));
        self.scanned = self.text.len();
        self.resolve_all(out)
    }

    fn resolve_all(&mut self, raw: Out) -> Vec<Reference> {
        let mut refs = Vec::new();
        for r in raw {
            // The tokenizer already decoded CSS escapes.
            let Some(abs) = resolve(&self.base, &r.url) else {
                continue;
            };
            if self.seen.len() >= MAX_REFERENCES || !self.seen.insert(abs.clone()) {
                continue;
            }
            refs.push(Reference {
                url: abs,
                rule: r.rule,
            });
        }
        refs
    }
}

/// Appends the decodable part of `pending` to `text` (invalid bytes become
/// U+FFFD); an incomplete sequence at the end stays pending unless `end`.
fn decode_into(pending: &mut Vec<u8>, text: &mut String, end: bool) {
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(s) => {
                text.push_str(s);
                start = pending.len();
                break;
            }
            Err(e) => {
                let good = start + e.valid_up_to();
                text.push_str(&String::from_utf8_lossy(&pending[start..good]));
                match e.error_len() {
                    Some(n) => {
                        text.push('\u{FFFD}');
                        start = good + n;
                    }
                    None => {
                        if end {
                            text.push('\u{FFFD}');
                            start = pending.len();
                        } else {
                            start = good;
                        }
                        break;
                    }
                }
            }
        }
    }
    pending.drain(..start);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(css: &str) -> Vec<(String, Rule)> {
        stylesheet_refs(css, &Viewport::default())
            .into_iter()
            .map(|r| (r.url, r.rule))
            .collect()
    }

    #[test]
    fn import_only_before_rules() {
        let got = urls(
            "@charset \"utf-8\"; @layer a, b; @import url(a.css); @import 'b.css' screen;\
             p { color: red } @import 'late.css';",
        );
        assert_eq!(
            got,
            vec![
                ("a.css".into(), Rule::Import),
                ("b.css".into(), Rule::Import)
            ]
        );
    }

    #[test]
    fn font_face_takes_the_first_usable_source_of_the_last_src() {
        let css = r#"@font-face { font-family: F;
            src: url(f.eot);
            src: local("F"), url(f.eot?#iefix) format("embedded-opentype"),
                 url(f.woff2) format("woff2"), url(f.woff) format("woff"),
                 url(f.ttf) format("truetype"), url(f.svg#f) format("svg"); }
            @font-face { font-family: G; src: url(g.svg) format("svg"), url(g.ttf) format('truetype') }
            @font-face { font-family: H; src: url(h.woff2) format(woff2) tech(incremental), url(h.woff) }
            @font-face { font-family: I; src: url(i.eot) }"#;
        assert_eq!(
            urls(css),
            vec![
                ("f.woff2".into(), Rule::FontFace),
                ("g.ttf".into(), Rule::FontFace),
                ("h.woff".into(), Rule::FontFace),
                ("i.eot".into(), Rule::FontFace),
            ]
        );
    }

    #[test]
    fn urls_in_declarations_nested_rules_and_image_set() {
        let css = "/* url(no.png) */ a { background: url( \"a.png\" ) no-repeat; }\
                   @media (min-width: 1px) { b { list-style: URL(b.png) } }\
                   @media print { b { list-style: URL(print.png) } }\
                   @media (max-width: 600px) { @font-face { font-family: N; src: url(n.woff2) } }\
                   c { background-image: image-set(url(c1.png) 1x, \"c2.png\" 2x); content: 'url(no2.png)' }\
                   d { & e { background: url(d.png) } }";
        assert_eq!(
            urls(css),
            vec![
                ("a.png".into(), Rule::CssUrl),
                ("b.png".into(), Rule::CssUrl),
                ("c1.png".into(), Rule::CssUrl),
                ("d.png".into(), Rule::CssUrl),
            ]
        );
    }

    #[test]
    fn a_non_matching_media_block_last_in_the_sheet_stays_skipped() {
        // The whole sheet in one read, then finish: the skipped block used
        // to be re-read from its inside by finish.
        let css =
            "h1 { background: url(a.gif) }\n@media print { body { background: url(p.gif) } }\n";
        let mut d = CssDiscoverer::new("/c/s.css", Viewport::default());
        let mut v = d.feed(css.as_bytes());
        v.extend(d.finish());
        let got: Vec<String> = v.into_iter().map(|r| r.url).collect();
        assert_eq!(got, vec!["/c/a.gif".to_string()]);
    }

    #[test]
    fn streaming_gives_the_same_references_for_any_split() {
        let css = "@import url(\"i.css\");\n@font-face{font-family:x;src:url(x.woff2) format(\"woff2\"),url(x.woff) format(\"woff\")}\n\
                   .é { background: url(é.png) }\n@media print { p { background: url(p.png) } }\n.z{background:url(z.png)}";
        let whole: Vec<String> = {
            let mut d = CssDiscoverer::new("http://h/s/a.css", Viewport::default());
            let mut v = d.feed(css.as_bytes());
            v.extend(d.finish());
            v.into_iter().map(|r| r.url).collect()
        };
        assert_eq!(
            whole,
            [
                "http://h/s/i.css",
                "http://h/s/x.woff2",
                "http://h/s/é.png",
                // Not p.png: `@media print` does not match a screen.
                "http://h/s/z.png"
            ]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
        );
        for size in [1, 2, 3, 5, 17, 64] {
            let mut d = CssDiscoverer::new("http://h/s/a.css", Viewport::default());
            let mut got = Vec::new();
            for c in css.as_bytes().chunks(size) {
                got.extend(d.feed(c).into_iter().map(|r| r.url));
            }
            got.extend(d.finish().into_iter().map(|r| r.url));
            assert_eq!(got, whole, "chunk size {size}");
        }
    }

    #[test]
    fn references_come_out_before_the_stylesheet_ends() {
        let mut d = CssDiscoverer::new("/a.css", Viewport::default());
        assert!(d.feed(b"@import 'b.css'").is_empty());
        let got = d.feed(b";\na { background: url(x.png) }\n");
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].url, "/b.css");
        assert_eq!(got[1].url, "/x.png");
    }

    #[test]
    fn a_huge_block_in_small_reads_is_not_rescanned_for_every_read() {
        // One 2 MiB @media block in 1 KiB reads, each with a `}`: linear.
        let mut css = String::from("@media screen {\n");
        while css.len() < 2 << 20 {
            css.push_str(".a { background: url(a.png) } .b { color: red }\n");
        }
        css.push_str("}\n.z { background: url(z.png) }\n");
        let started = std::time::Instant::now();
        let mut d = CssDiscoverer::new("/", Viewport::default());
        let mut got = Vec::new();
        for c in css.as_bytes().chunks(1024) {
            got.extend(d.feed(c));
        }
        got.extend(d.finish());
        let urls: Vec<&str> = got.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(urls, ["/a.png", "/z.png"]);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn garbage_and_bad_utf8_never_panic() {
        let mut d = CssDiscoverer::new("/", Viewport::default());
        for i in 0..3000u32 {
            let b = [
                (i * 7919 % 256) as u8,
                b'{',
                (i % 256) as u8,
                b'}',
                b'(',
                b';',
            ];
            let _ = d.feed(&b);
        }
        let _ = d.finish();
        let _ = urls("@import");
        let _ = urls("@font-face { src: ");
        let _ = urls("a { b: image-set( }");
    }
}
