#!/usr/bin/env python3
"""Drips a request body the server waits for: a GETLIST (paper 003) whose
uri-list arrives one byte every INTERVAL seconds. Prints when and how the
server answered.

Usage: body_drip.py HOST:PORT [INTERVAL_S] [LIMIT_S]

Loopback or lab addresses only; bounded: stops after LIMIT_S (default 60)
or when the server answers.
"""
import socket
import sys
import time

host, port = sys.argv[1].rsplit(":", 1)
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
body = b"/index.html\r\n" * 50
head = (b"GETLIST / HTTP/1.1\r\nHost: %s\r\nContent-Type: text/uri-list\r\n"
        b"Content-Length: %d\r\n\r\n" % (host.encode(), len(body)))
s = socket.create_connection((host, int(port)), timeout=limit)
s.sendall(head)
start = time.monotonic()
sent = 0
s.setblocking(False)
answer = b""
while time.monotonic() - start < limit and sent < len(body):
    try:
        chunk = s.recv(4096)
        answer += chunk
        if not chunk or b"\r\n\r\n" in answer:
            break
    except BlockingIOError:
        pass
    try:
        s.send(body[sent:sent + 1])
        sent += 1
    except OSError:
        break
    time.sleep(interval)
s.setblocking(True)
s.settimeout(max(1.0, limit - (time.monotonic() - start)))
try:
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            break
        answer += chunk
except OSError:
    pass
took = time.monotonic() - start
status = answer.split(b"\r\n", 1)[0].decode("latin-1") if answer else "(no answer)"
rest = answer.split(b"\r\n\r\n", 1)[1].decode("latin-1").strip() if b"\r\n\r\n" in answer else ""
print(f"{sent} of {len(body)} body bytes in {took:.1f} s: {status} {rest[:60]}")
