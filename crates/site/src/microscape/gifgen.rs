//! Real, decodable GIF images whose encoded size lands on a target byte count.
//!
//! The paper publishes the Microscape page's image *composition* (counts and
//! size classes, paper 001 "Test Web Site" and section 9), not the images. We
//! draw images of the same kinds the page had (text banners and buttons that
//! CSS could replace, bullets and rules, photographs, two animations) and
//! search the image dimensions so that the GIF encoder's LZW output lands just
//! under each target size; the few remaining bytes go into a GIF comment
//! extension (GIF89a section 24), which 1996 tools routinely wrote. The result
//! is byte-exact to the target and decodes with any GIF decoder.

use gif::{DisposalMethod, Encoder, Frame, Repeat};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What an image depicts; decides palette size and pixel statistics, which
/// decide how well LZW compresses it (and so its dimensions at a given size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// 1x1-ish transparent layout spacer.
    Spacer,
    /// A word in a flat colour on a flat background ("solutions", Figure 1).
    TextBanner,
    /// Bullets, arrows, rules: a few colours, simple shapes.
    Glyph,
    /// Text over a gradient: half replaceable by HTML+CSS (section 9.1).
    Mixed,
    /// Photographs and non-textual graphics: many colours, smooth + noise.
    Photo,
}

/// One image to produce.
#[derive(Clone, Debug)]
pub struct GifTarget {
    pub target_bytes: usize,
    pub look: Look,
    /// Width / height.
    pub aspect: f64,
    /// 1 for a static image; more for an animation.
    pub frames: u16,
    /// Seeds the pixel content.
    pub seed: u64,
    /// Written into the comment extension that pads to the exact size.
    pub comment: String,
}

/// A finished image.
#[derive(Clone, Debug)]
pub struct GifImage {
    pub bytes: Vec<u8>,
    pub width: u16,
    pub height: u16,
    pub frames: u16,
    /// Bytes of the padding comment extension (0 if the encoder hit exactly).
    pub comment_bytes: usize,
}

/// Smallest comment extension we can write: introducer, label, terminator.
const EMPTY_COMMENT_BYTES: usize = 3;
/// A comment with one sub-block of k >= 1 bytes costs k + 4 bytes.
const ONE_BLOCK_COMMENT_OVERHEAD: usize = 4;
/// Largest dimension we will try; GIF allows 65535 but 1996 pages didn't.
const MAX_SIDE_PX: u32 = 1024;

/// Why an image could not be made.
#[derive(Debug, thiserror::Error)]
pub enum GifError {
    #[error(
        "a {look:?} image cannot be as small as {target_bytes} bytes (minimum {minimum_bytes})"
    )]
    TooSmall {
        look: Look,
        target_bytes: usize,
        minimum_bytes: usize,
    },
    #[error("GIF encoder: {0}")]
    Encode(#[from] gif::EncodingError),
    /// GIF to PNG conversion (section 9 page) failed.
    #[error("GIF to PNG: {0}")]
    Convert(String),
}

/// Build the image for `target`. Fails only if even the smallest image of
/// this look is larger than the target (the generator's targets are chosen so
/// that this never happens; a test checks it).
pub fn make(target: &GifTarget) -> Result<GifImage, GifError> {
    // Budget for pixels: leave room for a comment unless we hit exactly.
    let fits = |size: usize| -> bool {
        size == target.target_bytes
            || size + EMPTY_COMMENT_BYTES == target.target_bytes
            || size + ONE_BLOCK_COMMENT_OVERHEAD < target.target_bytes
    };
    let dims = |h: u32| -> (u16, u16) {
        let w = ((h as f64) * target.aspect)
            .round()
            .clamp(1.0, MAX_SIDE_PX as f64) as u16;
        (w, h.clamp(1, MAX_SIDE_PX) as u16)
    };
    // Binary search the largest height whose encoding fits. Size grows with
    // area for every look, so this is monotone apart from small wobbles,
    // which the width refinement below absorbs.
    let (mut lo, mut hi) = (1u32, MAX_SIDE_PX);
    let smallest = encode(target, dims(1).0, 1)?;
    if !fits(smallest.len()) {
        // Even one row is too big at this aspect: try a 1x1 image.
        let one = encode(target, 1, 1)?;
        if !fits(one.len()) {
            return Err(GifError::TooSmall {
                look: target.look,
                target_bytes: target.target_bytes,
                minimum_bytes: one.len(),
            });
        }
        return finish(target, one, 1, 1);
    }
    // Narrow the bracket from one probe: encoded size is roughly fixed
    // overhead plus a per-pixel cost, so one mid-sized encode predicts the
    // height; search a bracket around the prediction (checked, with the full
    // range as the fallback).
    let probe_h = 16u32;
    let (pw, ph) = dims(probe_h);
    let probe = encode(target, pw, ph)?.len();
    if probe > smallest.len() {
        let per_px = (probe - smallest.len()) as f64 / (pw as f64 * (ph as f64 - 1.0));
        let area = (target.target_bytes.saturating_sub(smallest.len())) as f64 / per_px;
        let est_h = (area / target.aspect).sqrt().max(1.0);
        let b_lo = ((est_h / 1.6) as u32).max(1);
        let b_hi = ((est_h * 1.6) as u32 + 1).min(MAX_SIDE_PX);
        let (wl, hl) = dims(b_lo);
        let (wh, hh) = dims(b_hi);
        if fits(encode(target, wl, hl)?.len()) {
            lo = b_lo;
            if !fits(encode(target, wh, hh)?.len()) {
                hi = b_hi;
            }
        }
    }
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let (w, h) = dims(mid);
        if fits(encode(target, w, h)?.len()) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let (w0, h0) = dims(lo);
    // Refine the width to shrink the padding: a few steps either way.
    let mut best = (encode(target, w0, h0)?, w0);
    // Only worth it when the padding is more than a short comment.
    let refine = if target.target_bytes - best.0.len() > 24 {
        12u16
    } else {
        0
    };
    for dw in 1..=refine {
        let w = w0.saturating_add(dw);
        if w as u32 > MAX_SIDE_PX {
            break;
        }
        let b = encode(target, w, h0)?;
        if !fits(b.len()) {
            break;
        }
        if b.len() > best.0.len() {
            best = (b, w);
        }
    }
    let (bytes, w) = best;
    finish(target, bytes, w, h0)
}

fn finish(target: &GifTarget, mut bytes: Vec<u8>, w: u16, h: u16) -> Result<GifImage, GifError> {
    let pad = target.target_bytes - bytes.len();
    if pad > 0 {
        insert_comment(&mut bytes, pad, &target.comment);
    }
    debug_assert_eq!(bytes.len(), target.target_bytes);
    Ok(GifImage {
        bytes,
        width: w,
        height: h,
        frames: target.frames,
        comment_bytes: pad,
    })
}

/// Insert a comment extension of exactly `total` bytes before the trailer.
fn insert_comment(gif: &mut Vec<u8>, total: usize, text: &str) {
    debug_assert_eq!(gif.last(), Some(&0x3B), "GIF ends with its trailer");
    let mut ext = vec![0x21, 0xFE];
    if total > EMPTY_COMMENT_BYTES {
        // Payload bytes: total minus introducer, label, terminator and one
        // length byte per 255-byte sub-block.
        let mut payload = total - EMPTY_COMMENT_BYTES;
        let text = text.as_bytes();
        let mut i = 0usize;
        while payload > 0 {
            // A sub-block of k bytes costs k + 1; never leave exactly 1 byte
            // (a lone length byte cannot carry data).
            let mut k = (payload - 1).min(255);
            if payload - (k + 1) == 1 {
                k -= 1;
            }
            ext.push(k as u8);
            for _ in 0..k {
                ext.push(if text.is_empty() {
                    b' '
                } else {
                    text[i % text.len()]
                });
                i += 1;
            }
            payload -= k + 1;
        }
    }
    ext.push(0);
    debug_assert_eq!(ext.len(), total);
    let trailer = gif.len() - 1;
    gif.splice(trailer..trailer, ext);
}

fn palette(look: Look, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let n = match look {
        Look::Spacer => 2,
        Look::TextBanner => 4,
        Look::Glyph => 8,
        Look::Mixed => 32,
        Look::Photo => 128,
    };
    let base: [u8; 3] = [rng.random(), rng.random(), rng.random()];
    let mut p = Vec::with_capacity(n * 3);
    for i in 0..n {
        let t = i as f64 / (n.max(2) - 1) as f64;
        for (c, b) in base.iter().enumerate() {
            // A ramp from a dark shade of the base colour to a light one,
            // slightly different per channel, like an adaptive palette.
            let v = (*b as f64 * (0.3 + 0.7 * t) + 255.0 * t * 0.3 * (c as f64 + 1.0) / 3.0)
                .clamp(0.0, 255.0);
            p.push(v as u8);
        }
    }
    p
}

/// Pixels (palette indices) of frame `f` of a `w` x `h` image.
fn pixels(target: &GifTarget, w: u16, h: u16, f: u16, ncolors: usize) -> Vec<u8> {
    let (w, h) = (w as usize, h as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(target.seed ^ ((f as u64) << 48));
    let mut px = vec![0u8; w * h];
    match target.look {
        Look::Spacer => {}
        Look::TextBanner | Look::Glyph => {
            // Blocky "letters": a random 5x7 bitmap per glyph cell, scaled to
            // the image height, drawn in colour 1..ncolors on background 0.
            let cell_h = (h * 7 / 10).max(1);
            let scale = (cell_h / 7).max(1);
            let cell_w = 6 * scale;
            let top = (h - cell_h.min(h)) / 2;
            let mut x0 = scale;
            let fg = 1 + (target.seed as usize % (ncolors - 1));
            while x0 + 5 * scale <= w {
                let glyph: u64 = rng.random();
                for gy in 0..7 {
                    for gx in 0..5 {
                        if glyph >> (gy * 5 + gx) & 1 == 1 {
                            for yy in 0..scale {
                                for xx in 0..scale {
                                    let (x, y) = (x0 + gx * scale + xx, top + gy * scale + yy);
                                    if x < w && y < h {
                                        px[y * w + x] = fg as u8;
                                    }
                                }
                            }
                        }
                    }
                }
                x0 += cell_w;
            }
            if target.look == Look::Glyph {
                // Shading on the glyph edges: a second and third colour.
                for y in 0..h {
                    for x in 1..w {
                        if px[y * w + x] == 0 && px[y * w + x - 1] != 0 && rng.random_bool(0.5) {
                            px[y * w + x] = (2 + (x + y) % (ncolors - 2)) as u8;
                        }
                    }
                }
            }
        }
        Look::Mixed | Look::Photo => {
            // Smooth field (a few random plane waves) plus per-pixel noise,
            // quantised to the palette: compresses like a dithered photo.
            let waves: Vec<(f64, f64, f64)> = (0..4)
                .map(|_| {
                    (
                        rng.random_range(0.01..0.08),
                        rng.random_range(0.01..0.08),
                        rng.random_range(0.0..std::f64::consts::TAU),
                    )
                })
                .collect();
            let noise = if target.look == Look::Photo {
                0.18
            } else {
                0.06
            };
            let shift = f as f64 * 0.7;
            for y in 0..h {
                for x in 0..w {
                    let mut v = 0.0;
                    for (a, b, p) in &waves {
                        v += ((x as f64) * a + (y as f64) * b + p + shift).sin();
                    }
                    let v = (v / 8.0 + 0.5 + noise * (rng.random::<f64>() - 0.5)).clamp(0.0, 0.999);
                    px[y * w + x] = (v * ncolors as f64) as u8;
                }
            }
            if target.look == Look::Mixed {
                // A band of flat text across the middle.
                let band = h / 3;
                for y in band..(2 * band).min(h) {
                    for x in 0..w {
                        px[y * w + x] = if (x / 3 + y / 3) % 5 == 0 { 0 } else { 1 };
                    }
                }
            }
        }
    }
    px
}

/// Encode a `w` x `h` image of `target`'s look with the `gif` crate.
fn encode(target: &GifTarget, w: u16, h: u16) -> Result<Vec<u8>, GifError> {
    let mut rng = ChaCha8Rng::seed_from_u64(target.seed);
    let pal = palette(target.look, &mut rng);
    let ncolors = pal.len() / 3;
    let mut out = Vec::with_capacity(target.target_bytes + 64);
    {
        let mut enc = Encoder::new(&mut out, w, h, &pal)?;
        if target.frames > 1 {
            enc.set_repeat(Repeat::Infinite)?;
        }
        for f in 0..target.frames {
            let mut frame =
                Frame::from_indexed_pixels(w, h, pixels(target, w, h, f, ncolors), None);
            if target.look == Look::Spacer {
                frame.transparent = Some(0);
            }
            if target.frames > 1 {
                frame.delay = 20; // 200 ms per frame, 1/100 s units.
                frame.dispose = DisposalMethod::Keep;
            }
            enc.write_frame(&frame)?;
        }
        enc.into_inner()?;
    }
    Ok(out)
}
