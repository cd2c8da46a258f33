#!/usr/bin/env python3
"""Idle flood: hold N connections to a server, then ask as a fresh client.

Usage: flood.py HOST PORT PATH N [FRESH_TIMEOUT_S]

Opens N connections (non-blocking, within 30 s), sends one GET for PATH on
each and reads whatever answers arrive within 10 s, so the connections the
server accepted sit idle in keep-alive (the ones it could not accept wait in
the kernel's listen queue). Then a fresh client connects, sends a GET and
waits up to FRESH_TIMEOUT_S (default 10) for a complete status line. Finally
counts the flood connections the server has closed (EOF or reset). Prints
one line:
    flood=N answered=A fresh=ok|timeout|refused fresh_s=T closed_by_server=C
Bounded in time (about 30 + 10 + FRESH_TIMEOUT_S + 2 s) and count; every
socket is closed at exit.
"""
import errno
import selectors
import socket
import sys
import time

host, port, path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
fresh_timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
req = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()

sel = selectors.DefaultSelector()
socks = []
t_end = time.monotonic() + 30
for _ in range(n):
    if time.monotonic() > t_end:
        break
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((host, port))
    except BlockingIOError:
        pass
    except OSError:
        s.close()
        continue
    socks.append(s)

# Send the request on each once writable; read answers for up to 10 s.
state = {}
for s in socks:
    sel.register(s, selectors.EVENT_WRITE)
    state[s] = "connecting"
answered = 0
deadline = time.monotonic() + 10
while time.monotonic() < deadline and any(v != "answered" and v != "dead" for v in state.values()):
    for key, ev in sel.select(timeout=0.2):
        s = key.fileobj
        if state[s] == "connecting" and ev & selectors.EVENT_WRITE:
            try:
                s.send(req)
                state[s] = "sent"
                sel.modify(s, selectors.EVENT_READ)
            except OSError:
                state[s] = "dead"
                sel.unregister(s)
        elif ev & selectors.EVENT_READ:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.1 "):
                state[s] = "answered"
                answered += 1
                sel.unregister(s)
            else:
                state[s] = "dead"
                sel.unregister(s)

# The fresh client.
t0 = time.monotonic()
fresh = "timeout"
try:
    c = socket.create_connection((host, port), timeout=fresh_timeout)
    c.settimeout(max(0.1, fresh_timeout - (time.monotonic() - t0)))
    c.sendall(req)
    buf = b""
    while b"\r\n" not in buf:
        chunk = c.recv(4096)
        if not chunk:
            fresh = "closed"
            break
        buf += chunk
    if buf.startswith(b"HTTP/1.1 200"):
        fresh = "ok"
    c.close()
except socket.timeout:
    fresh = "timeout"
except ConnectionRefusedError:
    fresh = "refused"
except OSError as e:
    fresh = errno.errorcode.get(e.errno, "error")
fresh_s = time.monotonic() - t0

# Which flood connections has the server closed by now?
closed = 0
for s in socks:
    try:
        s.setblocking(False)
        data = s.recv(65536, socket.MSG_PEEK)
        if data == b"":
            closed += 1
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
    s.close()
print(f"flood={len(socks)} answered={answered} fresh={fresh} fresh_s={fresh_s:.2f} "
      f"closed_by_server={closed}")
