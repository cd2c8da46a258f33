#!/usr/bin/env python3
"""Writes an object package (format version 1, docs/objpack.md) to stdout
without touching the disk: a small page and one file of SIZE bytes
(default 2 GiB), for `gen.py | /usr/bin/time -v pagewire unpack - --out OUT`."""
import struct
import sys
import zlib

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 2 << 30
PAGE = b"<!DOCTYPE html><title>big</title><img src=big.bin>\n"
files = [("index.html", len(PAGE), 0b101), ("big.bin", SIZE, 0b100)]


def record(flags):
    # flags, 7 reserved, Last-Modified (none), media type (none), ETag (none)
    return bytes([flags]) + bytes(7) + struct.pack(">Q", 0) + bytes(64) + bytes(48)


info = struct.pack(">I", len(files))
info += b"".join(n.encode() + b"\0" for n, _, _ in files)
info += b"".join(struct.pack(">Q", s) for _, s, _ in files)
info += b"".join(record(f) for _, _, f in files)
out = sys.stdout.buffer
out.write(b"OBJP" + struct.pack(">HHII", 1, 0, len(info), zlib.crc32(info)))
out.write(info)
out.write(PAGE)
chunk = bytes(range(256)) * 4096  # 1 MiB
left = SIZE
while left:
    n = min(left, len(chunk))
    out.write(chunk[:n])
    left -= n
out.flush()
