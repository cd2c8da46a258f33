//! Which image candidate a browser takes: `srcset` (with `sizes`),
//! `<picture><source media type>` and CSS `image-set()`, for a stated
//! viewport width and device pixel ratio (HTML Living Standard §4.8.4.3,
//! "select an image source"; the tie rule is Chromium's).
//!
//! Media queries are evaluated for a screen of the viewport's width: `all`,
//! `screen`, `print`, `not`, `and`, comma lists, `min-`/`max-width`,
//! `width` ranges (`width >= 600px`), `min-`/`max-resolution` and
//! `-webkit-min-device-pixel-ratio`, `orientation` (landscape), and
//! `prefers-color-scheme` (light) / `prefers-reduced-motion` (no-preference);
//! any other feature does not match (a browser may differ there).

/// The viewport a page is laid out for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    /// CSS pixels; a browser's default window is 1280 wide.
    pub width: u32,
    /// Device pixels per CSS pixel.
    pub dpr: f64,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport {
            width: 1280,
            dpr: 1.0,
        }
    }
}

/// Root font size (`1em`, `1rem`) in CSS pixels: browsers' default.
const EM_PX: f64 = 16.0;

/// The height the viewport is assumed to have (for `orientation` and `vh`):
/// a 16:10 window.
fn height(v: &Viewport) -> f64 {
    f64::from(v.width) * 10.0 / 16.0
}

/// One `srcset` candidate: the URL and its density once `sizes` is applied.
#[derive(Debug, Clone, PartialEq)]
struct Candidate {
    url: String,
    density: f64,
}

/// Parses a `srcset` value (HTML §4.8.4.3.10, "parse a srcset attribute"):
/// URL, then an optional descriptor (`2x`, `640w`; `h` is ignored).
/// Returns (url, Some(x) | None, Some(w) | None).
fn parse_srcset(srcset: &str) -> Vec<(String, Option<f64>, Option<f64>)> {
    let mut out = Vec::new();
    let s = srcset;
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut url = &s[start..i];
        let mut descriptors = String::new();
        if url.ends_with(',') {
            url = url.trim_end_matches(',');
        } else {
            // Descriptors up to the next comma outside parentheses.
            let mut depth = 0;
            let dstart = i;
            while i < b.len() {
                match b[i] {
                    b'(' => depth += 1,
                    b')' => depth -= 1,
                    b',' if depth <= 0 => break,
                    _ => {}
                }
                i += 1;
            }
            descriptors = s[dstart..i].to_string();
            if i < b.len() {
                i += 1;
            }
        }
        if url.is_empty() {
            continue;
        }
        let (mut x, mut w, mut bad) = (None, None, false);
        for d in descriptors.split_ascii_whitespace() {
            let (num, unit) = d.split_at(d.len() - 1);
            match (unit, num.parse::<f64>()) {
                ("x", Ok(n)) if n > 0.0 && x.is_none() && w.is_none() => x = Some(n),
                ("w", Ok(n)) if n > 0.0 && x.is_none() && w.is_none() => w = Some(n),
                ("h", Ok(_)) => {}
                _ => bad = true,
            }
        }
        if !bad {
            out.push((url.to_string(), x, w));
        }
    }
    out
}

/// The width the image is laid out at, from a `sizes` value (HTML
/// §4.8.4.3.11): the first entry whose media condition matches; 100vw when
/// none does or the value is absent.
pub fn source_size(sizes: Option<&str>, v: &Viewport) -> f64 {
    let default = f64::from(v.width);
    let Some(sizes) = sizes else {
        return default;
    };
    for entry in split_commas(sizes) {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        // The length is the last component; what precedes is the condition.
        let (cond, len) = match entry.rfind(|c: char| c.is_ascii_whitespace() || c == ')') {
            Some(p) => (entry[..=p].trim(), entry[p + 1..].trim()),
            None => ("", entry),
        };
        if len.is_empty() {
            continue;
        }
        if len.eq_ignore_ascii_case("auto") {
            // `sizes=auto` (lazy images) lays out at the element's width,
            // unknown here: the viewport's.
            if cond.is_empty() || media_matches(cond, v) {
                return default;
            }
            continue;
        }
        let Some(px) = length_px(len, v) else {
            continue;
        };
        if cond.is_empty() || media_matches(cond, v) {
            return px;
        }
    }
    default
}

/// The URL a browser takes from `srcset` (and the element's `src`, a 1x
/// candidate when the set has no 1x and no width descriptors).
pub fn pick_srcset(
    srcset: &str,
    sizes: Option<&str>,
    src: Option<&str>,
    v: &Viewport,
) -> Option<String> {
    let parsed = parse_srcset(srcset);
    let size = source_size(sizes, v).max(1.0);
    let mut cands: Vec<Candidate> = parsed
        .iter()
        .map(|(url, x, w)| Candidate {
            url: url.clone(),
            density: match (x, w) {
                (Some(x), _) => *x,
                (None, Some(w)) => w / size,
                _ => 1.0,
            },
        })
        .collect();
    let has_w = parsed.iter().any(|(_, _, w)| w.is_some());
    if let Some(src) = src.map(str::trim).filter(|s| !s.is_empty()) {
        if !has_w && !cands.iter().any(|c| c.density == 1.0) {
            cands.push(Candidate {
                url: src.to_string(),
                density: 1.0,
            });
        }
    }
    choose(cands, v.dpr)
}

/// Chromium's choice (`HTMLSrcsetParser.cpp`, `PickBestImageCandidate`):
/// candidates sorted by density, the first at least the DPR (else the
/// densest); the one below it instead when the geometric mean of the two
/// densities exceeds the DPR.
fn choose(mut cands: Vec<Candidate>, dpr: f64) -> Option<String> {
    if cands.is_empty() {
        return None;
    }
    cands.sort_by(|a, b| a.density.total_cmp(&b.density));
    // Duplicates of a density: the first in source order stays (stable sort).
    cands.dedup_by(|b, a| a.density == b.density);
    let i = cands
        .iter()
        .position(|c| c.density >= dpr)
        .unwrap_or(cands.len() - 1);
    let winner = if i > 0 && (cands[i - 1].density * cands[i].density).sqrt() > dpr {
        i - 1
    } else {
        i
    };
    Some(cands[winner].url.clone())
}

/// CSS `image-set()` / `-webkit-image-set()` candidates (url, resolution in
/// dppx, type): the one a browser takes. Types a browser does not decode
/// are dropped first.
pub fn pick_image_set(cands: Vec<(String, f64, Option<String>)>, v: &Viewport) -> Option<String> {
    let cands = cands
        .into_iter()
        .filter(|(_, _, t)| t.as_deref().is_none_or(image_type_supported))
        .map(|(url, density, _)| Candidate { url, density })
        .collect();
    choose(cands, v.dpr)
}

/// Image media types current Chromium decodes (JPEG XL since Chromium 145:
/// Debian's Chromium 156 takes a `type=image/jxl` source).
pub fn image_type_supported(t: &str) -> bool {
    let t = t
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        t.as_str(),
        "image/avif"
            | "image/webp"
            | "image/png"
            | "image/apng"
            | "image/jpeg"
            | "image/jpg"
            | "image/pjpeg"
            | "image/gif"
            | "image/bmp"
            | "image/x-icon"
            | "image/vnd.microsoft.icon"
            | "image/svg+xml"
            | "image/jxl"
    )
}

fn split_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A CSS length in CSS pixels (`px`, `em`, `rem`, `vw`, `vh`, `vmin`,
/// `vmax`, `pt`, `cm`, `mm`, `in`, `0`; `calc()` is not evaluated).
pub fn length_px(len: &str, v: &Viewport) -> Option<f64> {
    let len = len.trim().to_ascii_lowercase();
    if len == "0" {
        return Some(0.0);
    }
    let split = len
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(len.len());
    let (num, unit) = len.split_at(split);
    let n: f64 = num.parse().ok()?;
    let w = f64::from(v.width);
    let h = height(v);
    let px = match unit {
        "px" => n,
        "em" | "rem" => n * EM_PX,
        "vw" => n * w / 100.0,
        "vh" => n * h / 100.0,
        "vmin" => n * w.min(h) / 100.0,
        "vmax" => n * w.max(h) / 100.0,
        "pt" => n * 96.0 / 72.0,
        "pc" => n * 16.0,
        "in" => n * 96.0,
        "cm" => n * 96.0 / 2.54,
        "mm" => n * 96.0 / 25.4,
        _ => return None,
    };
    (px >= 0.0).then_some(px)
}

/// Whether a media query list matches a screen of the viewport's size. An
/// empty list matches.
pub fn media_matches(query: &str, v: &Viewport) -> bool {
    let query = query.trim();
    if query.is_empty() {
        return true;
    }
    split_commas(query).iter().any(|q| one_query(q, v))
}

fn one_query(q: &str, v: &Viewport) -> bool {
    let lower = q.trim().to_ascii_lowercase();
    let mut words = lower.as_str();
    let mut negate = false;
    if let Some(rest) = words.strip_prefix("not ") {
        negate = true;
        words = rest.trim_start();
    } else if let Some(rest) = words.strip_prefix("only ") {
        words = rest.trim_start();
    }
    let mut result = true;
    // Media type, then `and (feature)` terms (or a bare condition).
    let mut rest = words;
    if !rest.starts_with('(') {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let media_type = &rest[..end];
        result &= matches!(media_type, "all" | "screen");
        rest = rest[end..].trim_start();
        if let Some(r) = rest.strip_prefix("and") {
            rest = r.trim_start();
        } else if !rest.is_empty() {
            return false;
        }
    }
    let cond = condition(rest, v);
    let Some(cond) = cond else {
        // Unparseable: "not all" (matches nothing, even negated).
        return false;
    };
    result &= cond;
    result != negate
}

/// A media condition: features joined by `and` / `or`, `not (..)`.
fn condition(s: &str, v: &Viewport) -> Option<bool> {
    let s = s.trim();
    if s.is_empty() {
        return Some(true);
    }
    if let Some(r) = s.strip_prefix("not") {
        if r.starts_with([' ', '(']) {
            return condition(r, v).map(|b| !b);
        }
    }
    // Split at top-level `and` / `or` between parenthesized groups.
    let mut terms = Vec::new();
    let mut ops = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if b[i] != b'(' {
            let rest = &s[i..];
            if rest.starts_with("and") {
                ops.push("and");
                i += 3;
                continue;
            }
            if rest.starts_with("or") {
                ops.push("or");
                i += 2;
                continue;
            }
            return None;
        }
        let mut depth = 0;
        let start = i;
        while i < b.len() {
            if b[i] == b'(' {
                depth += 1;
            } else if b[i] == b')' {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        terms.push(&s[start + 1..i]);
        i += 1;
    }
    if terms.is_empty() || ops.len() + 1 != terms.len() {
        return None;
    }
    let mut values = Vec::new();
    for t in terms {
        let t = t.trim();
        let val = if t.starts_with('(') || t.starts_with("not") {
            condition(t, v)?
        } else {
            feature(t, v)
        };
        values.push(val);
    }
    let any_or = ops.contains(&"or");
    Some(if any_or {
        values.iter().any(|&x| x)
    } else {
        values.iter().all(|&x| x)
    })
}

fn resolution_dppx(s: &str) -> Option<f64> {
    let s = s.trim();
    for (unit, f) in [
        ("dppx", 1.0),
        ("dpi", 1.0 / 96.0),
        ("dpcm", 2.54 / 96.0),
        ("x", 1.0),
    ] {
        if let Some(n) = s.strip_suffix(unit) {
            return n.trim().parse::<f64>().ok().map(|n| n * f);
        }
    }
    None
}

/// One `(feature: value)` or range `(width >= 600px)`.
fn feature(t: &str, v: &Viewport) -> bool {
    let w = f64::from(v.width);
    if let Some((name, value)) = t.split_once(':') {
        let (name, value) = (name.trim(), value.trim());
        let len = || length_px(value, v);
        return match name {
            "min-width" => len().is_some_and(|l| w >= l),
            "max-width" => len().is_some_and(|l| w <= l),
            "width" => len().is_some_and(|l| w == l),
            "min-height" => len().is_some_and(|l| height(v) >= l),
            "max-height" => len().is_some_and(|l| height(v) <= l),
            "min-resolution" => resolution_dppx(value).is_some_and(|r| v.dpr >= r),
            "max-resolution" => resolution_dppx(value).is_some_and(|r| v.dpr <= r),
            "-webkit-min-device-pixel-ratio" | "min--moz-device-pixel-ratio" => {
                value.parse::<f64>().is_ok_and(|r| v.dpr >= r)
            }
            "-webkit-max-device-pixel-ratio" => value.parse::<f64>().is_ok_and(|r| v.dpr <= r),
            "orientation" => value == "landscape",
            "prefers-color-scheme" => value == "light",
            "prefers-reduced-motion" => value == "no-preference",
            "hover" => value == "hover",
            "pointer" | "any-pointer" => value == "fine",
            _ => false,
        };
    }
    // Range syntax: `width >= 600px`, `400px < width <= 700px`.
    let t = t.replace(">=", " >= ").replace("<=", " <= ");
    let tokens: Vec<&str> = t.split_whitespace().collect();
    let cmp = |a: f64, op: &str, b: f64| match op {
        ">=" => a >= b,
        "<=" => a <= b,
        ">" => a > b,
        "<" => a < b,
        "=" => a == b,
        _ => false,
    };
    let val = |s: &str| -> Option<f64> {
        match s {
            "width" => Some(w),
            "height" => Some(height(v)),
            _ => length_px(s, v),
        }
    };
    match tokens.as_slice() {
        [a, op, b] => match (val(a), val(b)) {
            (Some(a), Some(b)) => cmp(a, op, b),
            _ => false,
        },
        [a, op1, m, op2, b] => match (val(a), val(m), val(b)) {
            (Some(a), Some(m), Some(b)) => cmp(a, op1, m) && cmp(m, op2, b),
            _ => false,
        },
        [name] => matches!(*name, "color" | "width" | "height" | "hover"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: Viewport = Viewport {
        width: 1280,
        dpr: 1.0,
    };
    const RETINA: Viewport = Viewport {
        width: 1280,
        dpr: 2.0,
    };

    #[test]
    fn x_descriptors_pick_by_dpr() {
        let s = "a.png 1x, b.png 2x, c.png 3x";
        assert_eq!(pick_srcset(s, None, None, &V).unwrap(), "a.png");
        assert_eq!(pick_srcset(s, None, None, &RETINA).unwrap(), "b.png");
        // src is the 1x candidate when the set has none.
        assert_eq!(
            pick_srcset("b.png 2x", None, Some("a.png"), &V).unwrap(),
            "a.png"
        );
    }

    #[test]
    fn w_descriptors_use_sizes_and_viewport() {
        let s = "s.jpg 480w, m.jpg 800w, l.jpg 1600w, xl.jpg 2400w";
        // 100vw = 1280 px: densities 0.375, 0.625, 1.25, 1.875; first >= 1
        // is l (geometric mean with m = 0.88 < 1).
        assert_eq!(pick_srcset(s, None, None, &V).unwrap(), "l.jpg");
        let sizes = "(max-width: 600px) 480px, 800px";
        assert_eq!(pick_srcset(s, Some(sizes), None, &V).unwrap(), "m.jpg");
        let narrow = Viewport {
            width: 500,
            dpr: 1.0,
        };
        assert_eq!(pick_srcset(s, Some(sizes), None, &narrow).unwrap(), "s.jpg");
        assert_eq!(pick_srcset(s, Some(sizes), None, &RETINA).unwrap(), "l.jpg");
        assert_eq!(pick_srcset(s, Some("50vw"), None, &V).unwrap(), "m.jpg");
    }

    #[test]
    fn srcset_parsing_edge_cases() {
        assert_eq!(
            parse_srcset("a.png, b.png 2x, data:x,y 3x"),
            vec![
                ("a.png".into(), None, None),
                ("b.png".into(), Some(2.0), None),
                ("data:x,y".into(), Some(3.0), None)
            ]
        );
        assert!(parse_srcset("a.png 2q").is_empty());
    }

    #[test]
    fn media_queries() {
        assert!(media_matches("", &V));
        assert!(media_matches("screen", &V));
        assert!(!media_matches("print", &V));
        assert!(media_matches("(min-width: 1024px)", &V));
        assert!(!media_matches("(min-width: 1400px)", &V));
        assert!(media_matches("screen and (max-width: 80em)", &V));
        assert!(!media_matches("not screen", &V));
        assert!(media_matches("print, (orientation: landscape)", &V));
        assert!(media_matches("(width >= 600px)", &V));
        assert!(!media_matches("(400px <= width <= 700px)", &V));
        assert!(media_matches("(min-resolution: 2dppx)", &RETINA));
        assert!(!media_matches("(min-resolution: 2dppx)", &V));
        assert!(!media_matches("(prefers-color-scheme: dark)", &V));
        assert!(!media_matches("(bogus-feature: 1)", &V));
        assert!(media_matches(
            "(min-width: 100px) and (max-width: 2000px)",
            &V
        ));
        assert!(media_matches("not (max-width: 600px)", &V));
    }

    #[test]
    fn image_set_and_types() {
        let c = vec![
            ("a.avif".into(), 1.0, Some("image/avif".into())),
            ("a.heic".into(), 1.0, Some("image/heic".into())),
            ("b.png".into(), 2.0, None),
        ];
        assert_eq!(pick_image_set(c.clone(), &V).unwrap(), "a.avif");
        assert_eq!(pick_image_set(c, &RETINA).unwrap(), "b.png");
        assert!(!image_type_supported("image/heic"));
        assert!(image_type_supported("image/WEBP"));
    }
}
