//! Which `@font-face` sources a browser loads for a page: only the faces
//! that rendered text uses (CSS Fonts 4 §4.5: a face is loaded when the
//! font matching algorithm picks it for text being laid out).
//!
//! A browser requests fonts after style computation, so this runs once the
//! page and its stylesheets are complete, not streaming. It builds the
//! document with `scraper` (html5ever), matches selectors with it, and runs
//! a small cascade for `font-family`, `font-style`, `font-weight` (and the
//! `font` shorthand), `display: none` and `content` on `::before`/`::after`:
//! the user-agent defaults that matter (bold `b`, `strong`, `th`, `h1`-`h6`;
//! italic `i`, `em`, `cite`, `var`, `dfn`, `address`; hidden `head`,
//! `script`, `style`, `template`, `[hidden]`; form controls in the system
//! font), author rules by specificity and order, `!important`, `style`
//! attributes, inheritance and `bolder`/`lighter`. An element with
//! non-whitespace text (or a pseudo-element with `content` text) uses the
//! first family of its list that an `@font-face` defines (a generic family
//! ends the search), and there the faces font matching picks (CSS Fonts 4
//! §5.2: style italic -> oblique -> normal, then the nearest weight by its
//! rules) whose `unicode-range` covers a character of the text.
//!
//! Not computed: pseudo-classes (`:hover` rules are dropped; scraper parses
//! none), other pseudo-elements (`::first-line`, `::marker`), `var()`,
//! `font-stretch`, installed fonts (a family no `@font-face` defines is
//! taken as not installed), and fallback for characters a face lacks.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use cssparser::{Delimiter, ParseError, Parser, ParserInput, Token};
use scraper::{ElementRef, Html, Selector};

use crate::select::{media_matches, Viewport};
use crate::{decode_entities, resolve};

/// Beyond this many (element, rule) selector tests the page is not styled:
/// every face is taken as used (a bound on time for a hostile page).
const MAX_MATCH_WORK: usize = 50_000_000;

/// `@import` nesting followed at most.
const MAX_IMPORT_DEPTH: usize = 16;

/// A face a browser loads, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedFace {
    /// The source's absolute URL.
    pub url: String,
    /// The URL of the stylesheet declaring it (the page for `<style>`).
    pub sheet: String,
    /// The element (and rule) whose text needs it, e.g. `h1.title text`.
    pub used_by: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FStyle {
    Normal,
    Italic,
    Oblique,
}

#[derive(Debug, Clone)]
struct Face {
    family: String,
    weight: (f32, f32),
    style: FStyle,
    ranges: Vec<(u32, u32)>,
    url: String,
    sheet: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Fam {
    Name(String),
    Generic,
}

#[derive(Debug, Clone, PartialEq)]
enum V<T> {
    Set(T),
    Inherit,
    Initial,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum W {
    Abs(f32),
    Bolder,
    Lighter,
}

#[derive(Debug, Clone, PartialEq)]
enum Content {
    None,
    Text(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Decl {
    Family(V<Rc<Vec<Fam>>>),
    Style(V<FStyle>),
    Weight(V<W>),
    Display(bool),
    Content(Content),
}

struct StyleRule {
    selector: Selector,
    spec: u32,
    order: usize,
    pseudo: bool,
    decls: Decls,
}

/// A rule's declarations, each with its `!important`.
type Decls = Rc<Vec<(Decl, bool)>>;

#[derive(Default)]
struct Sheets {
    faces: Vec<Face>,
    rules: Vec<StyleRule>,
    order: usize,
}

type PResult<'i> = Result<(), ParseError<'i, ()>>;

/// The faces of the page a browser loads. `html`: the whole page; `page`:
/// its URL (or a `<base href>` in it); `sheets`: the text of each
/// stylesheet by absolute URL (linked and imported ones; a missing one is
/// skipped). `None` when the page was too large to style: then every face
/// counts as used.
pub fn used_faces(
    html: &str,
    page: &str,
    sheets: &HashMap<String, String>,
    v: &Viewport,
) -> Option<Vec<UsedFace>> {
    let doc = Html::parse_document(html);
    let mut base = page.split('#').next().unwrap_or(page).to_string();
    if let Ok(sel) = Selector::parse("base[href]") {
        if let Some(b) = doc.select(&sel).next().and_then(|e| e.attr("href")) {
            if let Some(r) = resolve(&base, b.trim()) {
                base = r;
            }
        }
    }
    let mut s = Sheets::default();
    // Stylesheets in document order: `<link rel=stylesheet>` and `<style>`.
    let sel = Selector::parse("link, style").expect("valid");
    for el in doc.select(&sel) {
        if el.value().name() == "style" {
            let media = el.attr("media").unwrap_or("");
            if media_matches(&decode_entities(media), v) {
                let text: String = el.text().collect();
                parse_sheet(&text, &base, page, sheets, v, &mut s, 0);
            }
            continue;
        }
        let rel: Vec<String> = el
            .attr("rel")
            .unwrap_or("")
            .split_ascii_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        if !rel.iter().any(|r| r == "stylesheet")
            || rel.iter().any(|r| r == "alternate")
            || el.attr("disabled").is_some()
            || !media_matches(&decode_entities(el.attr("media").unwrap_or("")), v)
        {
            continue;
        }
        let Some(url) = el.attr("href").and_then(|h| resolve(&base, h.trim())) else {
            continue;
        };
        if let Some(text) = sheets.get(&url) {
            parse_sheet(text, &url, &url, sheets, v, &mut s, 0);
        }
    }
    if s.faces.is_empty() {
        return Some(Vec::new());
    }
    let elements = doc.tree.nodes().filter(|n| n.value().is_element()).count();
    if elements.saturating_mul(s.rules.len()) > MAX_MATCH_WORK {
        return None;
    }
    let mut families: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in s.faces.iter().enumerate() {
        families.entry(f.family.as_str()).or_default().push(i);
    }
    let mut used: Vec<UsedFace> = Vec::new();
    let mut seen = HashSet::new();
    let root = Computed {
        family: Rc::new(vec![Fam::Generic]),
        style: FStyle::Normal,
        weight: 400.0,
    };
    let mut stack: Vec<(ElementRef<'_>, Computed)> = vec![(doc.root_element(), root)];
    while let Some((el, parent)) = stack.pop() {
        let (me, hidden, pseudo) = style_of(&el, &parent, &s, v);
        if hidden {
            continue;
        }
        let text = own_text(&el);
        let mut uses: Vec<(Computed, String, &str)> = Vec::new();
        if !text.trim().is_empty() {
            uses.push((me.clone(), text, "text"));
        }
        for (c, t) in pseudo {
            uses.push((c, t, "::before/::after content"));
        }
        for (c, t, what) in uses {
            for i in pick(&s.faces, &families, &c, &t) {
                if seen.insert(s.faces[i].url.clone()) {
                    used.push(UsedFace {
                        url: s.faces[i].url.clone(),
                        sheet: s.faces[i].sheet.clone(),
                        used_by: format!("{} {what}", describe(&el)),
                    });
                }
            }
        }
        let children: Vec<ElementRef<'_>> = el.child_elements().collect();
        for c in children.into_iter().rev() {
            stack.push((c, me.clone()));
        }
    }
    Some(used)
}

/// `h1.title#x` for reports.
fn describe(el: &ElementRef<'_>) -> String {
    let mut d = el.value().name().to_string();
    if let Some(id) = el.value().id() {
        d.push('#');
        d.push_str(id);
    }
    for c in el.value().classes().take(2) {
        d.push('.');
        d.push_str(c);
    }
    d
}

/// The element's own text (its text children), or a form control's
/// placeholder or value.
fn own_text(el: &ElementRef<'_>) -> String {
    let mut t = String::new();
    for c in el.children() {
        if let Some(x) = c.value().as_text() {
            t.push_str(x);
        }
    }
    if el.value().name() == "input"
        && !el
            .attr("type")
            .is_some_and(|t| t.eq_ignore_ascii_case("hidden"))
    {
        t.push_str(el.attr("value").or(el.attr("placeholder")).unwrap_or(""));
    }
    t
}

#[derive(Debug, Clone)]
struct Computed {
    family: Rc<Vec<Fam>>,
    style: FStyle,
    weight: f32,
}

/// The user-agent declarations for an element (HTML §15.3).
fn ua_decls(el: &ElementRef<'_>) -> Vec<Decl> {
    let mut d = Vec::new();
    let name = el.value().name();
    match name {
        "head" | "script" | "style" | "template" | "title" | "meta" | "link" | "base"
        | "noscript" | "datalist" | "param" | "rp" | "area" | "noembed" | "noframes" => {
            d.push(Decl::Display(true))
        }
        "b" | "strong" => d.push(Decl::Weight(V::Set(W::Bolder))),
        "th" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
            d.push(Decl::Weight(V::Set(W::Abs(700.0))))
        }
        "i" | "em" | "cite" | "var" | "dfn" | "address" => {
            d.push(Decl::Style(V::Set(FStyle::Italic)))
        }
        "pre" | "code" | "kbd" | "samp" | "tt" | "listing" | "xmp" | "plaintext" => {
            d.push(Decl::Family(V::Set(Rc::new(vec![Fam::Generic]))))
        }
        "input" | "button" | "select" | "textarea" => {
            d.push(Decl::Family(V::Set(Rc::new(vec![Fam::Generic]))));
            d.push(Decl::Style(V::Set(FStyle::Normal)));
            d.push(Decl::Weight(V::Set(W::Abs(400.0))));
        }
        _ => {}
    }
    if name == "dialog" && el.attr("open").is_none() {
        d.push(Decl::Display(true));
    }
    if el.attr("hidden").is_some() {
        d.push(Decl::Display(true));
    }
    d
}

/// The element's computed font, whether it is not rendered, and its
/// `::before`/`::after` with text.
fn style_of(
    el: &ElementRef<'_>,
    parent: &Computed,
    s: &Sheets,
    _v: &Viewport,
) -> (Computed, bool, Vec<(Computed, String)>) {
    let mut normal: Vec<(u32, usize, &Decls)> = Vec::new();
    let mut pseudo: Vec<(u32, usize, &Decls)> = Vec::new();
    for r in &s.rules {
        if r.selector.matches(el) {
            if r.pseudo {
                pseudo.push((r.spec, r.order, &r.decls));
            } else {
                normal.push((r.spec, r.order, &r.decls));
            }
        }
    }
    normal.sort_by_key(|&(sp, o, _)| (sp, o));
    pseudo.sort_by_key(|&(sp, o, _)| (sp, o));
    let attr: Vec<(Decl, bool)> = el.attr("style").map(parse_decls).unwrap_or_default();
    let mut ordered: Vec<&Decl> = Vec::new();
    let ua = ua_decls(el);
    ordered.extend(ua.iter());
    for important in [false, true] {
        for (_, _, ds) in &normal {
            ordered.extend(ds.iter().filter(|(_, i)| *i == important).map(|(d, _)| d));
        }
        ordered.extend(attr.iter().filter(|(_, i)| *i == important).map(|(d, _)| d));
    }
    let (me, hidden, _) = cascade(parent, &ordered);
    let mut out = Vec::new();
    if !hidden && !pseudo.is_empty() {
        // `::before` and `::after` cascade together here (one text).
        let mut ordered: Vec<&Decl> = Vec::new();
        for important in [false, true] {
            for (_, _, ds) in &pseudo {
                ordered.extend(ds.iter().filter(|(_, i)| *i == important).map(|(d, _)| d));
            }
        }
        let (c, h, content) = cascade(&me, &ordered);
        if let (false, Content::Text(t)) = (h, content) {
            if !t.trim().is_empty() {
                out.push((c, t));
            }
        }
    }
    (me, hidden, out)
}

fn cascade(parent: &Computed, decls: &[&Decl]) -> (Computed, bool, Content) {
    let mut c = parent.clone();
    let mut hidden = false;
    let mut content = Content::None;
    for d in decls {
        match d {
            Decl::Family(V::Set(f)) => c.family = f.clone(),
            Decl::Family(V::Inherit) => c.family = parent.family.clone(),
            Decl::Family(V::Initial) => c.family = Rc::new(vec![Fam::Generic]),
            Decl::Style(V::Set(x)) => c.style = *x,
            Decl::Style(V::Inherit) => c.style = parent.style,
            Decl::Style(V::Initial) => c.style = FStyle::Normal,
            Decl::Weight(V::Set(W::Abs(w))) => c.weight = *w,
            Decl::Weight(V::Set(W::Bolder)) => c.weight = bolder(parent.weight),
            Decl::Weight(V::Set(W::Lighter)) => c.weight = lighter(parent.weight),
            Decl::Weight(V::Inherit) => c.weight = parent.weight,
            Decl::Weight(V::Initial) => c.weight = 400.0,
            Decl::Display(none) => hidden = *none,
            Decl::Content(x) => content = x.clone(),
        }
    }
    (c, hidden, content)
}

/// CSS Fonts 4 §2.4, relative weights.
fn bolder(w: f32) -> f32 {
    if w < 350.0 {
        400.0
    } else if w < 550.0 {
        700.0
    } else {
        900f32.max(w)
    }
}

fn lighter(w: f32) -> f32 {
    if w < 100.0 {
        w
    } else if w < 550.0 {
        100.0
    } else if w < 750.0 {
        400.0
    } else {
        700.0
    }
}

/// The faces font matching picks for text in `c`.
fn pick(
    faces: &[Face],
    families: &HashMap<&str, Vec<usize>>,
    c: &Computed,
    text: &str,
) -> Vec<usize> {
    for f in c.family.iter() {
        let name = match f {
            Fam::Generic => return Vec::new(),
            Fam::Name(n) => n.as_str(),
        };
        let Some(ids) = families.get(name) else {
            continue;
        };
        // §5.2 step 4: style first.
        let order: [FStyle; 3] = match c.style {
            FStyle::Italic => [FStyle::Italic, FStyle::Oblique, FStyle::Normal],
            FStyle::Oblique => [FStyle::Oblique, FStyle::Italic, FStyle::Normal],
            FStyle::Normal => [FStyle::Normal, FStyle::Oblique, FStyle::Italic],
        };
        let Some(style) = order
            .iter()
            .find(|st| ids.iter().any(|&i| faces[i].style == **st))
        else {
            return Vec::new();
        };
        let cands: Vec<usize> = ids
            .iter()
            .copied()
            .filter(|&i| faces[i].style == *style)
            .collect();
        let key = |i: usize| weight_key(c.weight, faces[i].weight);
        let best = cands.iter().map(|&i| key(i)).fold((9u8, f32::MAX), |a, b| {
            if (b.0, b.1) < (a.0, a.1) {
                b
            } else {
                a
            }
        });
        let chars: Vec<u32> = text.chars().map(u32::from).collect();
        return cands
            .into_iter()
            .filter(|&i| key(i) == best)
            .filter(|&i| {
                let r = &faces[i].ranges;
                r.is_empty()
                    || chars
                        .iter()
                        .any(|&ch| r.iter().any(|&(a, b)| a <= ch && ch <= b))
            })
            .collect();
    }
    Vec::new()
}

/// Sort key of a face's weight range for a desired weight (CSS Fonts 4
/// §5.2 step 4, `font-weight`): lower is better.
fn weight_key(w: f32, (lo, hi): (f32, f32)) -> (u8, f32) {
    if lo <= w && w <= hi {
        return (0, 0.0);
    }
    if (400.0..=500.0).contains(&w) {
        if lo > w && lo <= 500.0 {
            (1, lo - w)
        } else if hi < w {
            (2, w - hi)
        } else {
            (3, lo - w)
        }
    } else if w < 400.0 {
        if hi < w {
            (1, w - hi)
        } else {
            (2, lo - w)
        }
    } else if lo > w {
        (1, lo - w)
    } else {
        (2, w - hi)
    }
}

// ---- CSS -------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn parse_sheet(
    css: &str,
    base: &str,
    sheet_url: &str,
    sheets: &HashMap<String, String>,
    v: &Viewport,
    s: &mut Sheets,
    depth: usize,
) {
    let mut input = ParserInput::new(css);
    let mut p = Parser::new(&mut input);
    rules(&mut p, base, sheet_url, sheets, v, s, depth, true);
}

#[allow(clippy::too_many_arguments)]
fn rules<'i>(
    p: &mut Parser<'i, '_>,
    base: &str,
    sheet_url: &str,
    sheets: &HashMap<String, String>,
    v: &Viewport,
    s: &mut Sheets,
    depth: usize,
    top: bool,
) {
    let mut imports_ok = top;
    while !p.is_exhausted() {
        let start = p.position();
        let Ok(t) = p.next().cloned() else { return };
        match t {
            Token::CDO | Token::CDC | Token::Semicolon => {}
            Token::AtKeyword(name) => {
                let name = name.to_ascii_lowercase();
                if name == "import" {
                    let mut url = None;
                    let _ = p.parse_until_after(Delimiter::Semicolon, |p| -> PResult<'i> {
                        url = p.expect_url_or_string().ok().map(|u| u.to_string());
                        while p.next().is_ok() {}
                        Ok(())
                    });
                    if let (true, Some(u)) = (imports_ok && depth < MAX_IMPORT_DEPTH, url) {
                        if let Some(abs) = resolve(base, u.trim()) {
                            if let Some(text) = sheets.get(&abs) {
                                parse_sheet(text, &abs, &abs, sheets, v, s, depth + 1);
                            }
                        }
                    }
                    continue;
                }
                if name != "charset" && name != "layer" {
                    imports_ok = false;
                }
                let pstart = p.position();
                loop {
                    match p.next().cloned() {
                        Ok(Token::CurlyBracketBlock) => {
                            let prelude = p.slice_from(pstart);
                            let prelude = prelude.strip_suffix('{').unwrap_or(prelude).to_string();
                            let _ = p.parse_nested_block(|p| -> PResult<'i> {
                                match name.as_str() {
                                    "font-face" => font_face(p, base, sheet_url, s),
                                    "media" if !media_matches(&prelude, v) => {}
                                    "media" | "supports" | "layer" | "container" | "scope"
                                    | "document" | "-moz-document" | "starting-style" => {
                                        rules(p, base, sheet_url, sheets, v, s, depth, false)
                                    }
                                    _ => {}
                                }
                                while p.next().is_ok() {}
                                Ok(())
                            });
                            break;
                        }
                        Ok(Token::Semicolon) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            }
            _ => {
                imports_ok = false;
                loop {
                    match p.next().cloned() {
                        Ok(Token::CurlyBracketBlock) => {
                            let prelude = p.slice_from(start);
                            let prelude = prelude.strip_suffix('{').unwrap_or(prelude).to_string();
                            let mut body = String::new();
                            let bstart = p.position();
                            let _ = p.parse_nested_block(|p| -> PResult<'i> {
                                while p.next().is_ok() {}
                                Ok(())
                            });
                            let raw = p.slice_from(bstart);
                            body.push_str(raw.strip_suffix('}').unwrap_or(raw));
                            style_rule(&prelude, &body, s);
                            break;
                        }
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            }
        }
    }
}

fn style_rule(prelude: &str, body: &str, s: &mut Sheets) {
    let decls = parse_decls(body);
    if decls.is_empty() {
        return;
    }
    let decls = Rc::new(decls);
    let order = s.order;
    s.order += 1;
    for part in split_top(prelude, ',') {
        let part = part.trim();
        let lower = part.to_ascii_lowercase();
        let mut pseudo = false;
        let mut sel = part;
        for suffix in ["::before", "::after", ":before", ":after"] {
            if lower.ends_with(suffix) {
                pseudo = true;
                sel = &part[..part.len() - suffix.len()];
                break;
            }
        }
        if lower.contains("::") && !pseudo {
            continue;
        }
        let sel = if sel.trim().is_empty() || sel.ends_with(|c: char| c.is_whitespace() || c == '>')
        {
            format!("{sel}*")
        } else {
            sel.to_string()
        };
        let Ok(selector) = Selector::parse(&sel) else {
            continue;
        };
        s.rules.push(StyleRule {
            selector,
            spec: specificity(&sel),
            order,
            pseudo,
            decls: decls.clone(),
        });
    }
}

/// Splits at `sep` outside brackets and strings.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[') => depth += 1,
            (None, ')' | ']') => depth -= 1,
            (None, _) if c == sep && depth <= 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Selector specificity (a, b, c) packed as a*2^20 + b*2^10 + c;
/// `:where()` counts nothing, other functional pseudo-classes their
/// argument.
fn specificity(sel: &str) -> u32 {
    let mut input = ParserInput::new(sel);
    let mut p = Parser::new(&mut input);
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    spec_walk(&mut p, &mut a, &mut b, &mut c);
    (a.min(1023) << 20) | (b.min(1023) << 10) | c.min(1023)
}

fn spec_walk<'i>(p: &mut Parser<'i, '_>, a: &mut u32, b: &mut u32, c: &mut u32) {
    let mut after_colon = false;
    let mut after_dot = false;
    while let Ok(t) = p.next_including_whitespace().cloned() {
        match t {
            Token::IDHash(_) | Token::Hash(_) => *a += 1,
            Token::Delim('.') => {
                after_dot = true;
                continue;
            }
            Token::Colon => {
                after_colon = true;
                continue;
            }
            Token::SquareBracketBlock => *b += 1,
            Token::Ident(_) if after_dot || after_colon => *b += 1,
            Token::Ident(_) => *c += 1,
            Token::Function(f) => {
                let f = f.to_ascii_lowercase();
                if f != "where" {
                    if !matches!(f.as_str(), "not" | "is" | "has") {
                        *b += 1;
                    }
                    let _ = p.parse_nested_block(|p| -> PResult<'i> {
                        spec_walk(p, a, b, c);
                        Ok(())
                    });
                }
            }
            _ => {}
        }
        after_colon = false;
        after_dot = false;
    }
}

/// The declarations this cascade uses, with `!important`.
fn parse_decls(body: &str) -> Vec<(Decl, bool)> {
    let mut out = Vec::new();
    for d in split_top(body, ';') {
        let Some((name, value)) = d.split_once(':') else {
            continue;
        };
        let name = name.trim().to_ascii_lowercase();
        let mut value = value.trim();
        let mut important = false;
        if let Some(i) = value.rfind('!') {
            if value[i + 1..].trim().eq_ignore_ascii_case("important") {
                important = true;
                value = value[..i].trim();
            }
        }
        let lower = value.to_ascii_lowercase();
        let wide = match lower.as_str() {
            "inherit" | "unset" => Some(true),
            "initial" | "revert" | "revert-layer" => Some(false),
            _ => None,
        };
        let decls: Vec<Decl> = match name.as_str() {
            "font-family" => match wide {
                Some(true) => vec![Decl::Family(V::Inherit)],
                Some(false) => vec![Decl::Family(V::Initial)],
                None => family_list(value)
                    .map(|f| vec![Decl::Family(V::Set(Rc::new(f)))])
                    .unwrap_or_default(),
            },
            "font-style" => match wide {
                Some(true) => vec![Decl::Style(V::Inherit)],
                Some(false) => vec![Decl::Style(V::Initial)],
                None => style_kw(&lower)
                    .map(|x| vec![Decl::Style(V::Set(x))])
                    .unwrap_or_default(),
            },
            "font-weight" => match wide {
                Some(true) => vec![Decl::Weight(V::Inherit)],
                Some(false) => vec![Decl::Weight(V::Initial)],
                None => weight_kw(&lower)
                    .map(|x| vec![Decl::Weight(V::Set(x))])
                    .unwrap_or_default(),
            },
            "font" => match wide {
                Some(true) => vec![
                    Decl::Family(V::Inherit),
                    Decl::Style(V::Inherit),
                    Decl::Weight(V::Inherit),
                ],
                Some(false) => vec![
                    Decl::Family(V::Initial),
                    Decl::Style(V::Initial),
                    Decl::Weight(V::Initial),
                ],
                None => font_shorthand(value),
            },
            "display" if !lower.contains("var(") => vec![Decl::Display(lower == "none")],
            "content" => vec![Decl::Content(content(value))],
            _ => Vec::new(),
        };
        out.extend(decls.into_iter().map(|d| (d, important)));
    }
    out
}

fn style_kw(v: &str) -> Option<FStyle> {
    let v = v.split_whitespace().next()?;
    match v {
        "normal" => Some(FStyle::Normal),
        "italic" => Some(FStyle::Italic),
        "oblique" => Some(FStyle::Oblique),
        _ => None,
    }
}

fn weight_kw(v: &str) -> Option<W> {
    match v {
        "normal" => Some(W::Abs(400.0)),
        "bold" => Some(W::Abs(700.0)),
        "bolder" => Some(W::Bolder),
        "lighter" => Some(W::Lighter),
        n => n
            .parse::<f32>()
            .ok()
            .filter(|w| (1.0..=1000.0).contains(w))
            .map(W::Abs),
    }
}

/// `font-family` value: names (quoted, or identifiers joined by spaces)
/// lower-cased; generic families as [`Fam::Generic`].
fn family_list(value: &str) -> Option<Vec<Fam>> {
    if value.to_ascii_lowercase().contains("var(") {
        return None;
    }
    let mut out = Vec::new();
    for item in split_top(value, ',') {
        let mut input = ParserInput::new(item);
        let mut p = Parser::new(&mut input);
        let mut words = Vec::new();
        let mut quoted = false;
        while let Ok(t) = p.next() {
            match t {
                Token::QuotedString(s) => {
                    quoted = true;
                    words.push(s.to_string());
                }
                Token::Ident(s) => words.push(s.to_string()),
                _ => return None,
            }
        }
        if words.is_empty() {
            return None;
        }
        let name = words.join(" ").to_ascii_lowercase();
        let generic = !quoted
            && matches!(
                name.as_str(),
                "serif"
                    | "sans-serif"
                    | "monospace"
                    | "cursive"
                    | "fantasy"
                    | "system-ui"
                    | "ui-serif"
                    | "ui-sans-serif"
                    | "ui-monospace"
                    | "ui-rounded"
                    | "math"
                    | "emoji"
                    | "fangsong"
                    | "-apple-system"
                    | "blinkmacsystemfont"
            );
        out.push(if generic {
            Fam::Generic
        } else {
            Fam::Name(name)
        });
    }
    Some(out)
}

/// `font: [style || variant || weight || stretch]? size[/line-height] family`.
fn font_shorthand(value: &str) -> Vec<Decl> {
    let lower = value.to_ascii_lowercase();
    if matches!(
        lower.trim(),
        "caption" | "icon" | "menu" | "message-box" | "small-caption" | "status-bar"
    ) || lower.starts_with("-webkit-")
    {
        return vec![
            Decl::Family(V::Set(Rc::new(vec![Fam::Generic]))),
            Decl::Style(V::Set(FStyle::Normal)),
            Decl::Weight(V::Set(W::Abs(400.0))),
        ];
    }
    let mut input = ParserInput::new(value);
    let mut p = Parser::new(&mut input);
    let (mut style, mut weight) = (FStyle::Normal, W::Abs(400.0));
    let sizes = [
        "xx-small",
        "x-small",
        "small",
        "medium",
        "large",
        "x-large",
        "xx-large",
        "xxx-large",
        "smaller",
        "larger",
    ];
    loop {
        let Ok(t) = p.next().cloned() else {
            return Vec::new();
        };
        match t {
            Token::Ident(w) => {
                let w = w.to_ascii_lowercase();
                if sizes.contains(&w.as_str()) {
                    break;
                }
                if let Some(s) = style_kw(&w).filter(|_| w != "normal") {
                    style = s;
                } else if let Some(x) = weight_kw(&w).filter(|_| w != "normal") {
                    weight = x;
                }
            }
            Token::Number { value, .. } => weight = W::Abs(value),
            Token::Dimension { .. } | Token::Percentage { .. } => break,
            Token::Function(_) => return Vec::new(),
            _ => {}
        }
    }
    let after_size = p.state();
    if p.try_parse(|p| p.expect_delim('/')).is_ok() {
        let _ = p.next();
    } else {
        p.reset(&after_size);
    }
    let fam_start = p.position();
    while p.next().is_ok() {}
    let Some(family) = family_list(p.slice_from(fam_start)) else {
        return Vec::new();
    };
    vec![
        Decl::Family(V::Set(Rc::new(family))),
        Decl::Style(V::Set(style)),
        Decl::Weight(V::Set(weight)),
    ]
}

/// `content`: its strings (`attr()` and counters as a stand-in text).
fn content(value: &str) -> Content {
    let mut input = ParserInput::new(value);
    let mut p = Parser::new(&mut input);
    let mut text = String::new();
    while let Ok(t) = p.next() {
        match t {
            Token::QuotedString(s) => text.push_str(s),
            Token::Function(f) => {
                let f = f.to_ascii_lowercase();
                if f == "attr" || f.starts_with("counter") {
                    text.push_str("0a");
                }
                let _ = p.parse_nested_block(|p| -> PResult<'_> {
                    while p.next().is_ok() {}
                    Ok(())
                });
            }
            _ => {}
        }
    }
    if text.is_empty() {
        Content::None
    } else {
        Content::Text(text)
    }
}

/// An `@font-face` block.
fn font_face<'i>(p: &mut Parser<'i, '_>, base: &str, sheet_url: &str, s: &mut Sheets) {
    let (mut family, mut url) = (None, None);
    let (mut weight, mut style, mut ranges) = ((400.0, 400.0), FStyle::Normal, Vec::new());
    while !p.is_exhausted() {
        let _ = p.parse_until_after(Delimiter::Semicolon, |p| -> PResult<'i> {
            let name = p.expect_ident()?.to_ascii_lowercase();
            p.expect_colon()?;
            let start = p.position();
            match name.as_str() {
                "src" => {
                    if let Some(u) = crate::css::font_src(p) {
                        url = Some(u);
                    }
                }
                _ => {
                    while p.next().is_ok() {}
                    let val = p.slice_from(start).trim().to_string();
                    let lower = val.to_ascii_lowercase();
                    match name.as_str() {
                        "font-family" => {
                            if let Some(f) = family_list(&val) {
                                if let [Fam::Name(n)] = f.as_slice() {
                                    family = Some(n.clone());
                                }
                            }
                        }
                        "font-style" => style = style_kw(&lower).unwrap_or(FStyle::Normal),
                        "font-weight" => {
                            let ws: Vec<f32> = lower
                                .split_whitespace()
                                .filter_map(|w| match weight_kw(w) {
                                    Some(W::Abs(x)) => Some(x),
                                    _ => None,
                                })
                                .collect();
                            match ws.as_slice() {
                                [w] => weight = (*w, *w),
                                [a, b] => weight = (a.min(*b), a.max(*b)),
                                _ => {}
                            }
                        }
                        "unicode-range" => ranges = unicode_ranges(&val),
                        _ => {}
                    }
                }
            }
            while p.next().is_ok() {}
            Ok(())
        });
    }
    if let (Some(family), Some(u)) = (family, url) {
        if let Some(url) = resolve(base, u.trim()) {
            s.faces.push(Face {
                family,
                weight,
                style,
                ranges,
                url,
                sheet: sheet_url.to_string(),
            });
        }
    }
}

/// `U+0-7F, U+0100-024F, U+4??`.
fn unicode_ranges(v: &str) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for r in v.split(',') {
        let r = r.trim();
        let Some(r) = r.strip_prefix("U+").or_else(|| r.strip_prefix("u+")) else {
            continue;
        };
        let (a, b) = match r.split_once('-') {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None if r.contains('?') => (r.replace('?', "0"), r.replace('?', "F")),
            None => (r.to_string(), r.to_string()),
        };
        if let (Ok(a), Ok(b)) = (u32::from_str_radix(&a, 16), u32::from_str_radix(&b, 16)) {
            out.push((a, b));
        }
    }
    if out.is_empty() {
        out.push((0, 0x10FFFF));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSS: &str = r#"
        @font-face { font-family: "Lato"; src: url(lato.woff2) format("woff2"); font-weight: 400; font-style: normal }
        @font-face { font-family: "Lato"; src: url(lato-bold.woff2) format("woff2"); font-weight: 700; font-style: normal }
        @font-face { font-family: "Lato"; src: url(lato-italic.woff2) format("woff2"); font-weight: 400; font-style: italic }
        @font-face { font-family: "Lato"; src: url(lato-bolditalic.woff2) format("woff2"); font-weight: 700; font-style: italic }
        @font-face { font-family: Slab; src: url(slab.woff2); font-weight: 400 }
        @font-face { font-family: Slab; src: url(slab-bold.woff2); font-weight: 700 }
        @font-face { font-family: Icons; src: url(icons.woff2) }
        @font-face { font-family: Greek; src: url(greek.woff2); unicode-range: U+0370-03FF }
        @font-face { font-family: Greek; src: url(latin.woff2); unicode-range: U+0000-00FF }
        body { font-family: Lato, sans-serif }
        h1, h2 { font-family: "Slab", serif }
        .icon:before { font-family: Icons; content: "\f101" }
        .unused { font-family: Nope, Greek }
        p.g { font: italic bold 12px/1.2 Greek, serif }
        #x { font-style: normal !important }
    "#;

    fn used(html: &str) -> Vec<String> {
        let mut sheets = HashMap::new();
        sheets.insert("http://h/s.css".to_string(), CSS.to_string());
        let page = format!("<link rel=stylesheet href=s.css>{html}");
        let mut u: Vec<String> = used_faces(&page, "http://h/", &sheets, &Viewport::default())
            .unwrap()
            .into_iter()
            .map(|f| f.url.trim_start_matches("http://h/").to_string())
            .collect();
        u.sort();
        u
    }

    #[test]
    fn only_faces_rendered_text_uses() {
        assert_eq!(used("<p>hi</p>"), ["lato.woff2"]);
        assert_eq!(
            used("<p>hi <b>b</b></p>"),
            ["lato-bold.woff2", "lato.woff2"]
        );
        assert_eq!(used("<p><em>x</em></p>"), ["lato-italic.woff2"]);
        assert_eq!(used("<p><em id=x>x</em></p>"), ["lato.woff2"]);
        assert_eq!(used("<h1>T</h1>"), ["slab-bold.woff2"]);
        assert_eq!(
            used("<h1 style='font-weight:normal'>T</h1>"),
            ["slab.woff2"]
        );
        assert_eq!(
            used("<p> </p><script>x</script><div hidden>y</div>"),
            Vec::<String>::new()
        );
        assert_eq!(used("<span class=icon></span>"), ["icons.woff2"]);
        assert_eq!(used("<p class=g>abc</p>"), ["latin.woff2"]);
        assert_eq!(used("<p class=g>αβ</p>"), ["greek.woff2"]);
        assert_eq!(used("<div class=unused>abc</div>"), ["latin.woff2"]);
    }

    #[test]
    fn imports_media_display_and_importance() {
        let mut sheets = HashMap::new();
        sheets.insert(
            "http://h/a.css".to_string(),
            "@import 'b.css'; @font-face { font-family: A; src: url(a.woff2) }\
             @font-face { font-family: B; src: url(b.woff2) }\
             @font-face { font-family: C; src: url(c.woff2) }\
             .x { font-family: A } .gone { display: none }\
             @media print { .p { font-family: C } }\
             .imp { font-family: C !important }"
                .to_string(),
        );
        // Imported first: `.x` of a.css comes later and wins.
        sheets.insert(
            "http://h/b.css".to_string(),
            ".x { font-family: B }".to_string(),
        );
        let used = |body: &str| -> Vec<String> {
            let page = format!("<link rel=stylesheet href=a.css>{body}");
            let mut u: Vec<String> = used_faces(&page, "http://h/", &sheets, &Viewport::default())
                .unwrap()
                .into_iter()
                .map(|f| f.url.trim_start_matches("http://h/").to_string())
                .collect();
            u.sort();
            u
        };
        assert_eq!(used("<p class=x>t</p>"), ["a.woff2"]);
        assert_eq!(
            used("<div class=gone><p class=x>t</p></div>"),
            Vec::<String>::new()
        );
        assert_eq!(used("<p class='x p'>t</p>"), ["a.woff2"]);
        assert_eq!(
            used("<p class='x imp' style='font-family: B'>t</p>"),
            ["c.woff2"]
        );
        assert_eq!(used("<p class=x style='font-family: B'>t</p>"), ["b.woff2"]);
        // Form controls use the system font unless told to inherit.
        assert_eq!(
            used("<div class=x><button>go</button></div>"),
            Vec::<String>::new()
        );
        assert_eq!(
            used("<div class=x><button style='font: inherit'>go</button></div>"),
            ["a.woff2"]
        );
        // Not rendered: head, script, [hidden].
        assert_eq!(
            used("<div class=x hidden>t</div><script class=x>t</script>"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn weight_matching_follows_css_fonts_4() {
        // 600 with faces 400 and 700: heavier first.
        assert!(weight_key(600.0, (700.0, 700.0)) < weight_key(600.0, (400.0, 400.0)));
        // 300: lighter first, then heavier.
        assert!(weight_key(300.0, (200.0, 200.0)) < weight_key(300.0, (400.0, 400.0)));
        // 450: up to 500 first, then below, then above 500.
        assert!(weight_key(450.0, (500.0, 500.0)) < weight_key(450.0, (400.0, 400.0)));
        assert!(weight_key(450.0, (400.0, 400.0)) < weight_key(450.0, (700.0, 700.0)));
        assert_eq!(bolder(400.0), 700.0);
        assert_eq!(lighter(700.0), 400.0);
    }

    #[test]
    fn specificity_counts() {
        assert!(specificity("#a") > specificity(".a.b.c"));
        assert!(specificity(".a") > specificity("div p"));
        assert_eq!(specificity(":where(.a) p"), specificity("p"));
    }
}
