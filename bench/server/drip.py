#!/usr/bin/env python3
"""Slow-sender drip: CLIENTS connections each send one large request head one
byte per segment (TCP_NODELAY, one send() per byte, round-robin over the
connections), then read the response. Bounded: gives up after LIMIT seconds.

usage: drip.py HOST PORT CLIENTS HEAD_BYTES LIMIT_S [LINE_BYTES [PACE_US]]
LINE_BYTES: length of each field line (default 560: a 54 KB head is 97
lines, within the default 100-field limit of pagewire and hyper).
PACE_US: start a round (one byte to every connection) at most every PACE_US
microseconds (busy wait; 0 = as fast as the client can).
prints: "ok STATUS... elapsed_s" or exits 1 with a reason.
"""
import socket
import sys
import time


def head(size, line_bytes):
    start = b"GET /1k.bin HTTP/1.1\r\nHost: drip\r\n"
    lines = []
    n = len(start) + 2
    i = 0
    while n < size:
        name = b"X-Drip-%03d: " % i
        value_len = min(line_bytes - len(name) - 2, size - n - len(name) - 2)
        if value_len < 1:
            break
        line = name + b"v" * value_len + b"\r\n"
        lines.append(line)
        n += len(line)
        i += 1
    return start + b"".join(lines) + b"\r\n"


def main():
    host, port, clients, size, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    line_bytes = int(sys.argv[6]) if len(sys.argv) > 6 else 560
    pace = (int(sys.argv[7]) if len(sys.argv) > 7 else 0) / 1e6
    data = head(size, line_bytes)
    t0 = time.monotonic()
    socks = []
    for _ in range(clients):
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    t1 = time.monotonic()
    for i in range(len(data)):
        b = data[i:i + 1]
        if pace:
            due = t1 + i * pace
            while time.monotonic() < due:
                pass
        for s in socks:
            s.send(b)
        if i % 4096 == 0 and time.monotonic() - t0 > limit:
            print(f"timeout after {i} bytes", file=sys.stderr)
            sys.exit(1)
    statuses = []
    for s in socks:
        s.settimeout(max(1.0, limit - (time.monotonic() - t0)))
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        statuses.append(got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "none")
        s.close()
    print("ok", len(data), " ".join(sorted(set(statuses))), f"{time.monotonic() - t0:.2f}")
    if statuses != ["200"] * clients:
        sys.exit(1)


main()
