//! The Microscape page after paper 001's section 9 ("Impact of Changing Web
//! Content"): images replaced by HTML+CSS where the paper found it
//! possible, every remaining GIF converted to PNG, the animations to APNG.
//!
//! What the paper reports (section 9.1, 9.2; Nielsen, Gettys et al.,
//! SIGCOMM '97):
//! - 22 of the 40 static images (14,791 bytes as GIF) can be represented in
//!   HTML+CSS of "approximately 3200 bytes";
//! - 3 more (7,541 bytes) "can be reduced to roughly half their size by
//!   converting part of their content to HTML+CSS" (610 bytes of HTML+CSS);
//! - 14 (80,601 bytes) cannot, and are converted to PNG; the 40 static GIFs
//!   (103,299 bytes) became 92,096 bytes of PNG (giftopnm | pnmtopng), the 2
//!   animations (24,988 bytes) 16,329 bytes of MNG.
//!
//! How pagewire does each step (this page is synthetic like the original):
//! - the page is the original Microscape page, byte for byte, except that
//!   each replaceable image's IMG tag becomes an HTML phrase with a class,
//!   one rule per replaced image goes into a STYLE element in the head (the
//!   paper's "solutions" example is the model), and every other IMG points
//!   to the `.png` file;
//! - a half-replaceable banner becomes a DIV with its text in HTML and a
//!   GIF made at half the original byte size (same look and aspect), then
//!   converted to PNG like the rest;
//! - GIF to PNG with the `png` crate, as pnmtopng did: palette kept, the
//!   smallest bit depth that holds it, a tRNS chunk for a transparent index,
//!   a gAMA chunk (the paper's PNGs carried gamma: "this adds 16 bytes per
//!   image"), no filter on palette images, zlib at its best level; GIF
//!   comment extensions (pagewire's size padding, 662 bytes in all) are not
//!   carried over, as giftopnm drops them;
//! - animations to APNG (MNG has no browser support today; APNG is the
//!   maintained animated PNG): same frames, delays and palette.

use bytes::Bytes;

use super::gifgen::{self, GifError};
use crate::microscape::{self, Group, Image, Microscape, Options, Variant};

/// The paper's section-9 figures.
pub mod paper {
    /// Images replaceable by HTML+CSS, their GIF bytes, the replacement.
    pub const CSS_IMAGES: usize = 22;
    pub const CSS_GIF_BYTES: usize = 14_791;
    pub const CSS_REPLACEMENT_BYTES: usize = 3_200;
    /// Half-replaceable images, their GIF bytes, the HTML+CSS part.
    pub const PART_IMAGES: usize = 3;
    pub const PART_GIF_BYTES: usize = 7_541;
    pub const PART_REPLACEMENT_BYTES: usize = 610;
    /// GIF -> PNG of the 40 static images; animations GIF -> MNG.
    pub const STATIC_PNG_BYTES: usize = 92_096;
    pub const ANIMATED_MNG_BYTES: usize = 16_329;
}

/// What the conversion did, beside the paper's numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct CssComposition {
    pub css_images: usize,
    pub css_gif_bytes: usize,
    /// Bytes of HTML phrases plus CSS rules for the replaced images.
    pub css_replacement_bytes: usize,
    pub part_images: usize,
    pub part_gif_bytes: usize,
    pub part_replacement_bytes: usize,
    /// The halved GIFs, and their PNGs.
    pub part_half_gif_bytes: usize,
    pub part_png_bytes: usize,
    /// Every original static GIF converted (the paper's 103,299 -> 92,096).
    pub static_gif_bytes: usize,
    pub static_png_bytes: usize,
    pub animated_gif_bytes: usize,
    pub animated_png_bytes: usize,
    /// The CSS page: HTML bytes, images left, their bytes.
    pub html_bytes: usize,
    pub html_deflate_bytes: usize,
    pub original_html_bytes: usize,
    pub original_html_deflate_bytes: usize,
    pub images: usize,
    pub image_bytes: usize,
    pub original_image_bytes: usize,
    /// GIF bytes of the images the CSS page keeps (the halved GIFs for the
    /// 3 half-replaced ones), before their conversion to PNG/APNG
    /// (`image_bytes`).
    pub kept_gif_bytes: usize,
}

impl CssComposition {
    /// The table printed by `pagewire site microscape --variant css` and the
    /// bench.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Microscape page, CSS+PNG variant (paper 001 section 9): this page vs the paper"
        );
        let _ = writeln!(
            s,
            "  {:<52} {:>30} {:>16}",
            "quantity", "this page", "paper"
        );
        let mut row = |q: &str, a: String, b: String| {
            let _ = writeln!(s, "  {q:<52} {a:>30} {b:>16}");
        };
        row(
            "images replaced by HTML+CSS / their GIF bytes",
            format!("{} / {}", self.css_images, self.css_gif_bytes),
            format!("{} / {}", paper::CSS_IMAGES, paper::CSS_GIF_BYTES),
        );
        row(
            "  HTML+CSS replacement bytes",
            self.css_replacement_bytes.to_string(),
            format!("~{}", paper::CSS_REPLACEMENT_BYTES),
        );
        row(
            "images half replaced / their GIF bytes",
            format!("{} / {}", self.part_images, self.part_gif_bytes),
            format!("{} / {}", paper::PART_IMAGES, paper::PART_GIF_BYTES),
        );
        row(
            "  HTML+CSS part / image left (GIF, then PNG) bytes",
            format!(
                "{} / {}, {}",
                self.part_replacement_bytes, self.part_half_gif_bytes, self.part_png_bytes
            ),
            format!("{} / ~half", paper::PART_REPLACEMENT_BYTES),
        );
        row(
            "40 static GIFs -> PNG bytes",
            format!("{} -> {}", self.static_gif_bytes, self.static_png_bytes),
            format!("103299 -> {}", paper::STATIC_PNG_BYTES),
        );
        row(
            "2 animations GIF -> APNG (paper: MNG) bytes",
            format!("{} -> {}", self.animated_gif_bytes, self.animated_png_bytes),
            format!("24988 -> {}", paper::ANIMATED_MNG_BYTES),
        );
        row(
            "HTML bytes (zlib default), original -> CSS page",
            format!(
                "{} ({}) -> {} ({})",
                self.original_html_bytes,
                self.original_html_deflate_bytes,
                self.html_bytes,
                self.html_deflate_bytes
            ),
            "-".into(),
        );
        row(
            "inline images / bytes, original -> CSS page",
            format!(
                "42/{} -> {}/{}",
                self.original_image_bytes, self.images, self.image_bytes
            ),
            "-".into(),
        );
        s
    }
}

/// Minimal bit depth for a palette of `n` colours.
fn depth_for(n: usize) -> png::BitDepth {
    match n {
        0..=2 => png::BitDepth::One,
        3..=4 => png::BitDepth::Two,
        5..=16 => png::BitDepth::Four,
        _ => png::BitDepth::Eight,
    }
}

/// Packs 8-bit indices into rows of `depth` bits (MSB first, each row
/// padded to a byte), as PNG stores palette images.
fn pack(indices: &[u8], width: usize, depth: png::BitDepth) -> Vec<u8> {
    let bits = depth as usize;
    if bits == 8 {
        return indices.to_vec();
    }
    let per_byte = 8 / bits;
    let row_bytes = width.div_ceil(per_byte);
    let mut out = Vec::with_capacity(row_bytes * indices.len() / width.max(1));
    for row in indices.chunks(width) {
        let mut packed = vec![0u8; row_bytes];
        for (i, &ix) in row.iter().enumerate() {
            let shift = 8 - bits * (i % per_byte + 1);
            packed[i / per_byte] |= ix << shift;
        }
        out.extend_from_slice(&packed);
    }
    out
}

/// A GIF (static or animated) converted to PNG / APNG.
pub fn gif_to_png(gif_bytes: &[u8]) -> Result<Vec<u8>, GifError> {
    let bad = |what: &str| GifError::Convert(what.to_string());
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::Indexed);
    let mut dec = opts
        .read_info(gif_bytes)
        .map_err(|e| bad(&format!("GIF decode: {e}")))?;
    let (w, h) = (u32::from(dec.width()), u32::from(dec.height()));
    let global = dec.global_palette().map(<[u8]>::to_vec);
    let mut frames = Vec::new();
    while let Some(f) = dec
        .read_next_frame()
        .map_err(|e| bad(&format!("GIF decode: {e}")))?
    {
        frames.push(f.clone());
    }
    let first = frames.first().ok_or_else(|| bad("GIF without frames"))?;
    let palette = first
        .palette
        .clone()
        .or(global)
        .ok_or_else(|| bad("GIF without a palette"))?;
    let used = frames
        .iter()
        .flat_map(|f| f.buffer.iter())
        .copied()
        .max()
        .unwrap_or(0) as usize
        + 1;
    let ncolors = used.max(first.transparent.map_or(0, |t| t as usize + 1));
    let palette = &palette[..(ncolors * 3).min(palette.len())];
    let depth = depth_for(ncolors);
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(depth);
        enc.set_palette(palette.to_vec());
        if let Some(t) = first.transparent {
            let mut trns = vec![255u8; t as usize + 1];
            trns[t as usize] = 0;
            enc.set_trns(trns);
        }
        enc.set_source_gamma(png::ScaledFloat::new(1.0 / 2.2));
        enc.set_compression(png::Compression::High);
        enc.set_filter(png::Filter::NoFilter);
        if frames.len() > 1 {
            enc.set_animated(frames.len() as u32, 0)
                .map_err(|e| bad(&format!("APNG: {e}")))?;
        }
        let mut wr = enc.write_header().map_err(|e| bad(&format!("PNG: {e}")))?;
        for f in &frames {
            if frames.len() > 1 {
                wr.set_frame_delay(f.delay, 100)
                    .map_err(|e| bad(&format!("APNG: {e}")))?;
            }
            if u32::from(f.width) != w || u32::from(f.height) != h || f.left != 0 || f.top != 0 {
                return Err(bad(
                    "GIF frame smaller than the screen (not generated here)",
                ));
            }
            wr.write_image_data(&pack(&f.buffer, w as usize, depth))
                .map_err(|e| bad(&format!("PNG: {e}")))?;
        }
        wr.finish().map_err(|e| bad(&format!("PNG: {e}")))?;
    }
    Ok(out)
}

/// Colours for the replacement rules, in turn (1997 web-safe).
const COLOURS: [(&str, &str); 6] = [
    ("white", "#FC0"),
    ("#FFF", "#036"),
    ("#000", "#9CF"),
    ("white", "#C00"),
    ("#FC0", "#333"),
    ("white", "#069"),
];

/// The HTML phrase and the CSS rule that replace one image (`cls`: its
/// class name).
fn replacement(name: &str, alt: &str, look: gifgen::Look, i: usize) -> (String, String) {
    let cls = format!("r{i}");
    let (fg, bg) = COLOURS[i % COLOURS.len()];
    if name.starts_with("spacer") {
        return (
            format!("<SPAN CLASS={cls}></SPAN>"),
            format!("SPAN.{cls} {{ padding-left: 1px }}"),
        );
    }
    if name.starts_with("rule") {
        return (
            format!("<HR CLASS={cls}>"),
            format!("HR.{cls} {{ color: #36C; height: 2px; border: none }}"),
        );
    }
    match look {
        gifgen::Look::Glyph => {
            let glyph = match alt {
                ">" => "&#8594;",
                "*" => "&#8226;",
                other => other,
            };
            (
                format!("<SPAN CLASS={cls}>{glyph}</SPAN>"),
                format!("SPAN.{cls} {{ color: {bg}; font: bold 14px sans-serif }}"),
            )
        }
        _ if name.starts_with("btn") || name.starts_with("tab") => (
            format!("<SPAN CLASS={cls}>{alt}</SPAN>"),
            format!(
                "SPAN.{cls} {{ color: {fg}; background: {bg}; font: bold 12px sans-serif; \
                 padding: 2px 8px; border: 2px outset #CCC }}"
            ),
        ),
        // Headings and banners: the paper's own example (Figure 1).
        _ => (
            format!("<P CLASS={cls}>{alt}"),
            format!(
                "P.{cls} {{ color: {fg}; background: {bg}; font: bold oblique 20px sans-serif; \
                 padding: 0.2em 10em 0.2em 1em }}"
            ),
        ),
    }
}

/// Finds the IMG tag whose SRC is `src` (any tag case) in `html`.
fn tag_span(html: &str, src: &str) -> Option<(usize, usize)> {
    let at = html.find(&format!("\"{src}\""))?;
    let start = html[..at].rfind('<')?;
    let end = at + html[at..].find('>')? + 1;
    Some((start, end))
}

/// The section-9 page from the original one.
pub fn generate(options: Options) -> Result<(Microscape, CssComposition), GifError> {
    let orig = microscape::generate(options);
    let mut html = String::from_utf8_lossy(&orig.html).into_owned();
    let mut rules = Vec::new();
    let mut images = Vec::new();
    let mut c = CssComposition {
        css_images: 0,
        css_gif_bytes: 0,
        css_replacement_bytes: 0,
        part_images: 0,
        part_gif_bytes: 0,
        part_replacement_bytes: 0,
        part_half_gif_bytes: 0,
        part_png_bytes: 0,
        static_gif_bytes: 0,
        static_png_bytes: 0,
        animated_gif_bytes: 0,
        animated_png_bytes: 0,
        html_bytes: 0,
        html_deflate_bytes: 0,
        original_html_bytes: orig.html.len(),
        original_html_deflate_bytes: microscape::zlib_default_size(&orig.html),
        images: 0,
        image_bytes: 0,
        original_image_bytes: orig.images.iter().map(|i| i.bytes.len()).sum(),
        kept_gif_bytes: 0,
    };
    for (i, im) in orig.images.iter().enumerate() {
        let (name, alt) = microscape::spec_name_alt(i);
        let src = im.path.trim_start_matches('/');
        let (start, end) = tag_span(&html, src)
            .ok_or_else(|| GifError::Convert(format!("the page has no IMG tag for {src} (bug)")))?;
        let png_path = im.path.replace(".gif", ".png");
        let png_src = png_path.trim_start_matches('/');
        let png = gif_to_png(&im.bytes)?;
        if im.frames > 1 {
            c.animated_gif_bytes += im.bytes.len();
            c.animated_png_bytes += png.len();
        } else {
            c.static_gif_bytes += im.bytes.len();
            c.static_png_bytes += png.len();
        }
        match im.group {
            Group::Css => {
                let (phrase, rule) = replacement(name, alt, im.look, i);
                c.css_images += 1;
                c.css_gif_bytes += im.bytes.len();
                c.css_replacement_bytes += phrase.len() + rule.len() + 1;
                html.replace_range(start..end, &phrase);
                rules.push(rule);
            }
            Group::PartCss => {
                // Half the image becomes HTML text on a styled block; the
                // rest stays an image at half the bytes.
                let half = gifgen::make(&gifgen::GifTarget {
                    target_bytes: im.bytes.len() / 2,
                    look: im.look,
                    aspect: f64::from(im.width) / f64::from(im.height) / 2.0,
                    frames: 1,
                    seed: options.seed ^ (0x5eed_0000 + i as u64),
                    comment: String::new(),
                })?;
                let half_png = gif_to_png(&half.bytes)?;
                let cls = format!("r{i}");
                let (fg, bg) = COLOURS[i % COLOURS.len()];
                let phrase = format!(
                    "<DIV CLASS={cls}><SPAN>{alt}</SPAN><IMG SRC=\"{png_src}\" WIDTH={} HEIGHT={} ALT=\"\"></DIV>",
                    half.width, half.height
                );
                let rule = format!(
                    "DIV.{cls} {{ color: {fg}; background: {bg}; font: bold 16px sans-serif; padding: 4px }}"
                );
                c.part_images += 1;
                c.part_gif_bytes += im.bytes.len();
                c.part_half_gif_bytes += half.bytes.len();
                c.part_png_bytes += half_png.len();
                c.kept_gif_bytes += half.bytes.len();
                // The IMG inside counts as markup the original had.
                c.part_replacement_bytes += phrase.len() + rule.len() + 1;
                html.replace_range(start..end, &phrase);
                rules.push(rule);
                images.push(Image {
                    path: png_path.clone(),
                    bytes: Bytes::from(half_png),
                    width: half.width,
                    height: half.height,
                    frames: 1,
                    group: im.group,
                    look: im.look,
                    comment_bytes: 0,
                });
            }
            _ => {
                c.kept_gif_bytes += im.bytes.len();
                let tag = html[start..end].replace(src, png_src);
                html.replace_range(start..end, &tag);
                images.push(Image {
                    path: png_path.clone(),
                    bytes: Bytes::from(png),
                    width: im.width,
                    height: im.height,
                    frames: im.frames,
                    group: im.group,
                    look: im.look,
                    comment_bytes: 0,
                });
            }
        }
    }
    // The style sheet goes into the head, where HTML and CSS "coexist in
    // the same file" (one request saved per image).
    let style = format!(
        "<STYLE TYPE=\"text/css\">\n<!--\n{}\n-->\n</STYLE>\n",
        rules.join("\n")
    );
    let head_end = html
        .to_ascii_lowercase()
        .find("</head>")
        .ok_or_else(|| GifError::Convert("the page has no </HEAD> (bug)".into()))?;
    html.insert_str(head_end, &style);
    c.css_replacement_bytes += "<STYLE TYPE=\"text/css\">\n<!--\n\n-->\n</STYLE>\n".len();
    c.html_bytes = html.len();
    c.html_deflate_bytes = microscape::zlib_default_size(html.as_bytes());
    c.images = images.len();
    c.image_bytes = images.iter().map(|i| i.bytes.len()).sum();
    Ok((
        Microscape {
            options,
            variant: Variant::Css,
            html: Bytes::from(html),
            images,
        },
        c,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn css_page_matches_section_9() {
        let (m, c) = generate(Options::default()).unwrap();
        assert_eq!(c.css_images, 22);
        assert_eq!(c.css_gif_bytes, paper::CSS_GIF_BYTES);
        assert_eq!(c.part_images, 3);
        assert_eq!(c.part_gif_bytes, paper::PART_GIF_BYTES);
        assert_eq!(m.images.len(), 42 - 22);
        // The replacement is of the paper's order (~3200 bytes for 22).
        assert!(
            (2000..4500).contains(&c.css_replacement_bytes),
            "{}",
            c.css_replacement_bytes
        );
        // Every remaining reference points to a PNG the site has, once.
        let html = String::from_utf8_lossy(&m.html);
        assert!(!html.contains(".gif"));
        for im in &m.images {
            let src = format!("\"{}\"", im.path.trim_start_matches('/'));
            assert_eq!(html.matches(&src).count(), 1, "{src}");
            assert_eq!(&im.bytes[1..4], b"PNG");
        }
        assert_eq!(html.to_ascii_lowercase().matches("<img ").count(), 20);
    }

    #[test]
    fn png_round_trips_pixels() {
        let orig = microscape::generate(Options::default());
        for im in orig.images.iter().filter(|i| i.frames == 1).take(8) {
            let png = gif_to_png(&im.bytes).unwrap();
            let mut gd = gif::DecodeOptions::new();
            gd.set_color_output(gif::ColorOutput::Indexed);
            let mut g = gd.read_info(&im.bytes[..]).unwrap();
            let gf = g.read_next_frame().unwrap().unwrap().buffer.to_vec();
            let mut d = png::Decoder::new(std::io::Cursor::new(&png));
            d.set_transformations(png::Transformations::EXPAND);
            let mut r = d.read_info().unwrap();
            let mut buf = vec![0; r.output_buffer_size().unwrap()];
            let info = r.next_frame(&mut buf).unwrap();
            assert_eq!(info.width, u32::from(im.width));
            // Expanded to RGB(A): compare against the GIF palette colours.
            let pal = g.global_palette().unwrap().to_vec();
            let chans = info.color_type.samples();
            for (k, &ix) in gf.iter().enumerate() {
                let px = &buf[k * chans..k * chans + 3];
                assert_eq!(
                    px,
                    &pal[ix as usize * 3..ix as usize * 3 + 3],
                    "{}",
                    im.path
                );
            }
        }
    }

    #[test]
    fn animations_become_apng() {
        let orig = microscape::generate(Options::default());
        let anim = orig.images.iter().find(|i| i.frames > 1).unwrap();
        let png = gif_to_png(&anim.bytes).unwrap();
        let d = png::Decoder::new(std::io::Cursor::new(&png));
        let r = d.read_info().unwrap();
        let actl = r.info().animation_control.unwrap();
        assert_eq!(actl.num_frames, u32::from(anim.frames));
    }
}
