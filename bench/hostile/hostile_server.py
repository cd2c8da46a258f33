#!/usr/bin/env python3
"""A hostile HTTP/1.1 origin for probing the robot (`pagewire fetch`).

Usage: hostile_server.py PORT [LIFETIME_S]

Listens on 127.0.0.1:PORT (loopback only) and answers every request by the
path of its target:

  /trickle   200 with Content-Length 100000, then one body byte per second
  /continue  an endless stream of `HTTP/1.1 100 Continue` heads, one per 0.5 s
  /bomb      200, Content-Encoding: deflate, a zlib stream of BOMB_MIB MiB of
             zeros (default 1024 MiB; about 1 MB on the wire), Content-Length
  /bomb.txt  the same bomb as text/plain (an object, not a page)
  /bombpage  a page whose one embedded object is /bomb.txt
  /reset     200 with Content-Length 100000, 10000 body bytes, then a reset
             (SO_LINGER 0, close: the kernel sends RST)
  /ok        a small HTML page (a control)

Bounded: every connection ends after 200 s at the latest, the whole process
after LIFETIME_S (default 600 s); nothing is written to disk.
"""
import os
import socket
import struct
import sys
import threading
import time
import zlib

PORT = int(sys.argv[1])
LIFETIME = float(sys.argv[2]) if len(sys.argv) > 2 else 600.0
BOMB_MIB = int(os.environ.get("BOMB_MIB", "1024"))
CONN_LIMIT_S = 200.0


def make_bomb(mib):
    c = zlib.compressobj(9)
    zeros = bytes(1 << 20)
    parts = [c.compress(zeros) for _ in range(mib)]
    parts.append(c.flush())
    return b"".join(parts)


BOMB = make_bomb(BOMB_MIB)
PAGE = b"<html><head><title>ok</title></head><body><p>ok</p></body></html>\n"
BOMB_PAGE = b"<html><body><p>an object below</p><img src=/bomb.txt></body></html>\n"


def read_head(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        buf += chunk
        if len(buf) > 65536:
            return None
    return buf.split(b"\r\n", 1)[0].decode("latin-1")


def handle(sock):
    start = time.monotonic()
    sock.settimeout(CONN_LIMIT_S)
    try:
        line = read_head(sock)
        if line is None:
            return
        parts = line.split()
        path = parts[1] if len(parts) > 1 else "/"
        if path == "/trickle":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Content-Length: 100000\r\n\r\n<html>")
            while time.monotonic() - start < CONN_LIMIT_S:
                sock.sendall(b" ")
                time.sleep(1.0)
        elif path == "/continue":
            while time.monotonic() - start < CONN_LIMIT_S:
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                time.sleep(0.5)
        elif path in ("/bomb", "/bomb.txt"):
            ctype = b"text/html" if path == "/bomb" else b"text/plain"
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                         b"Content-Encoding: deflate\r\nContent-Length: %d\r\n\r\n"
                         % (ctype, len(BOMB)))
            sock.sendall(BOMB)
            time.sleep(1.0)
        elif path == "/reset":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Content-Length: 100000\r\n\r\n" + b"x" * 10000)
            time.sleep(0.3)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            page = BOMB_PAGE if path == "/bombpage" else PAGE
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(page) + page)
    except OSError:
        pass
    finally:
        sock.close()


def main():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", PORT))
    srv.listen(64)
    srv.settimeout(1.0)
    print(f"hostile server on 127.0.0.1:{PORT}, bomb {len(BOMB)} bytes -> {BOMB_MIB} MiB",
          flush=True)
    deadline = time.monotonic() + LIFETIME
    while time.monotonic() < deadline:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
