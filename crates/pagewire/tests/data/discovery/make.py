#!/usr/bin/env python3
"""Writes the binary files of the discovery fixture (run from this folder).

Images are valid 1x1 to 8x8 PNGs (and one WebP and one GIF) made here; the
fonts are DejaVu Sans (regular, bold, oblique, extra light; Bitstream Vera
license) cut down to the letters of the page with fontTools (`pip install fonttools brotli`), as TTF, WOFF and WOFF2.
What a browser fetches does not depend on their pixels or glyphs, but a font
that fails to decode makes a browser try the next `src`, so the fonts are real.
"""
import os
import struct
import zlib

def png(path, w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * w for _ in range(h))
    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(data)

os.makedirs("img", exist_ok=True)
names = ["icon", "preload", "banner", "style-attr", "entity", "hero", "wide", "base",
         "inline", "set-1x", "set-2x", "photo-480", "photo-800", "photo-1600", "logo",
         "logo-2x", "pic", "pic-narrow", "poster", "submit", "unused", "alt", "late",
         "print-only", "print-bg"]
for i, n in enumerate(names):
    png(f"img/{n}.png", 1 + i % 8, 1 + i % 5, (i * 37 % 256, 90, 200))
# A lossless 1x1 WebP (RIFF, VP8L) and a 1x1 GIF.
with open("img/pic.webp", "wb") as f:
    vp8l = bytes.fromhex("2f000000100700101111888808")
    f.write(b"RIFF" + struct.pack("<I", 4 + 8 + len(vp8l) + len(vp8l) % 2) + b"WEBP"
            + b"VP8L" + struct.pack("<I", len(vp8l)) + vp8l + b"\x00" * (len(vp8l) % 2))
with open("img/pic.jxl", "wb") as f:
    f.write(bytes.fromhex("ff0afa0f"))  # JPEG XL signature only: never fetched
svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="teal"/></svg>\n'
with open("img/object.svg", "w") as f:
    f.write(svg)

from fontTools import subset
from fontTools.ttLib import TTFont
os.makedirs("fonts", exist_ok=True)
for src, name in [("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "fixture"),
                  ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", "fixture-head")]:
    for flavor, ext in [(None, "ttf"), ("woff", "woff"), ("woff2", "woff2")]:
        opts = subset.Options()
        opts.flavor = flavor
        opts.layout_features = []
        opts.name_IDs = ["*"]
        font = TTFont(src)
        s = subset.Subsetter(opts)
        s.populate(text="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,:-")
        s.subset(font)
        subset.save_font(font, f"fonts/{name}.{ext}", opts)
# Faces of the same family: an italic one (used by <em>) and a light one
# (declared, used by no text), as WOFF2 only.
for src, name in [("/usr/share/fonts/truetype/dejavu/DejaVuSans-Oblique.ttf", "fixture-italic"),
                  ("/usr/share/fonts/truetype/dejavu/DejaVuSans-ExtraLight.ttf", "fixture-light")]:
    opts = subset.Options()
    opts.flavor = "woff2"
    opts.layout_features = []
    opts.name_IDs = ["*"]
    font = TTFont(src)
    s = subset.Subsetter(opts)
    s.populate(text="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,:-")
    s.subset(font)
    subset.save_font(font, f"fonts/{name}.woff2", opts)
