#!/usr/bin/env python3
"""Hold N idle keep-alive connections to a server and report its memory.

Usage: hold_idle.py HOST PORT PATH N PID[,PID...]

Opens N connections, sends one GET on each and reads its response (so every
connection has completed a request and sits idle in keep-alive), waits 3 s,
then reads
the resident set size (VmRSS, /proc/PID/status) of the server's processes
before and after, and prints one line:
    conns=N rss_before_kb=A rss_after_kb=B per_conn_bytes=C
Bounded: connection setup stops after 60 s; every socket is closed at exit.
"""
import selectors
import socket
import sys
import time


def rss_kb(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def main():
    host, port, path, n, pids = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    pids = [int(p) for p in pids.split(",") if p]
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    time.sleep(0.5)
    before = rss_kb(pids)
    sel = selectors.DefaultSelector()
    socks = []
    deadline = time.time() + 60
    pending = {}
    # Open in batches of 500 so the listen backlog is never overrun.
    for start in range(0, n, 500):
        batch = []
        for _ in range(min(500, n - start)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.connect((host, port))
            s.sendall(request)
            s.setblocking(False)
            socks.append(s)
            batch.append(s)
            pending[s] = b""
            sel.register(s, selectors.EVENT_READ)
        # Wait for every response of this batch (headers end + whole body).
        while any(s in pending for s in batch):
            if time.time() > deadline:
                print("timeout opening connections", file=sys.stderr)
                sys.exit(1)
            for key, _ in sel.select(timeout=1):
                s = key.fileobj
                data = s.recv(65536)
                if not data:
                    print("server closed a connection", file=sys.stderr)
                    sys.exit(1)
                buf = pending[s] + data
                head_end = buf.find(b"\r\n\r\n")
                if head_end >= 0:
                    length = 0
                    for line in buf[:head_end].split(b"\r\n")[1:]:
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length":
                            length = int(v.strip())
                    if len(buf) >= head_end + 4 + length:
                        sel.unregister(s)
                        del pending[s]
                        continue
                pending[s] = buf
    # Settle: 3 s, so that a server that changes how it holds a connection
    # after some idle time (pagewire parks one idle for 1 s) is measured in
    # its idle state; every server gets the same wait.
    time.sleep(3.0)
    after = rss_kb(pids)
    per_conn = (after - before) * 1024 / n
    print(f"conns={n} rss_before_kb={before} rss_after_kb={after} per_conn_bytes={per_conn:.0f}")
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
