#!/usr/bin/env python3
"""Issue 32's hostile probes in one command, pagewire beside nginx where the
probe applies to a server (items 3, 4) and beside curl where it applies to a
client (item 1). Prints one markdown table.

    bench/hostile/issue32.py [PAGEWIRE_BINARY]

Loopback only (127.0.0.1); every loop is bounded in count and time; every
process started is stopped and every temporary directory removed. Needs
nginx and curl (scripts/setup-deps.sh). Takes about 2-3 minutes.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PW = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PAGEWIRE", "target/release/pagewire")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
ROWS = []


def row(item, probe, who, result):
    ROWS.append((item, probe, who, result))
    print(f"  {item} | {probe} | {who} | {result}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def read_head(c):
    data = b""
    c.settimeout(5)
    while b"\r\n\r\n" not in data and len(data) < 65536:
        try:
            b = c.recv(4096)
        except OSError:
            return None
        if not b:
            return None
        data += b
    return data


def hostile_server(mode, limit_s=40):
    """Serves a page with one image, then `mode` for the image; bounded."""
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", 0))
    l.listen(16)
    l.settimeout(limit_s)
    page = b"<html><img src=/x.gif></html>"

    def conn(c):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit_s:
            h = read_head(c)
            if h is None:
                break
            if h.startswith(b"GET / "):
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(page) + page)
                continue
            try:
                if mode == "1xx":
                    flood = b"HTTP/1.1 103 Early Hints\r\nLink: </x.gif>\r\n\r\n" * 512
                    while time.monotonic() - t0 < limit_s:
                        c.sendall(flood)
                elif mode == "chunked":
                    c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    chunk = b"2000\r\n" + b"g" * 0x2000 + b"\r\n"
                    while time.monotonic() - t0 < limit_s:
                        c.sendall(chunk)
                elif mode == "trickle":
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                    while time.monotonic() - t0 < limit_s:
                        c.sendall(b"g")
                        time.sleep(0.5)
            except OSError:
                pass
            break
        c.close()

    def accept():
        for _ in range(8):
            try:
                c, _ = l.accept()
            except OSError:
                return
            threading.Thread(target=conn, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return l, "http://%s:%d/" % l.getsockname()


def timed(cmd, limit=60, **kw):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=limit, **kw)
        return time.monotonic() - t0, p.returncode, p.stderr.decode(errors="replace").strip().splitlines()
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, "killed", []


def item1():
    for mode in ["1xx", "chunked", "trickle"]:
        l, url = hostile_server(mode)
        took, rc, err = timed([PW, "fetch", url, "--object-timeout", "10s", "--read-timeout", "5s", "--min-rate", "0"])
        last = err[-1][:110] if err else ""
        row("1", f"{mode} (--object-timeout 10s)", "pagewire fetch", f"{took:.2f} s, exit {rc}, {len(err)} stderr line(s): `{last}`")
        l.close()
        l, url = hostile_server(mode)
        took, rc, _ = timed(["curl", "-s", "-o", "/dev/null", "--max-time", "10", url + "x.gif"])
        row("1", f"{mode}", "curl --max-time 10", f"{took:.2f} s, exit {rc}")
        l.close()


def item2(tmp):
    site = os.path.join(tmp, "site")
    os.makedirs(site)
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write("<html><img src=a.gif></html>")
    with open(os.path.join(site, "a.gif"), "wb") as f:
        f.write(b"GIF89a")
    pkg = os.path.join(tmp, "p.objp")
    subprocess.run([PW, "pack", "--root", site, "--out", pkg], capture_output=True, timeout=60)
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious")
    os.symlink(victim, os.path.join(out, ".index.html.objp-part"))
    os.symlink(victim, os.path.join(out, "index.html"))
    p = subprocess.run([PW, "unpack", pkg, "--out", out], capture_output=True, timeout=60)
    intact = open(victim).read() == "precious"
    link = os.path.islink(os.path.join(out, "index.html"))
    row("2", "planted symlinks at the temp and final names", "pagewire unpack",
        f"exit {p.returncode}; victim {'intact' if intact else 'OVERWRITTEN'}; out/index.html {'still a link' if link else 'a regular file'}")
    mode = oct(os.stat(pkg).st_mode & 0o777)
    row("8", "pack under umask 022", "pagewire pack", f"package mode {mode}")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def nginx_start(tmp, root, extra="", conns=1024):
    port = free_port()
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off; master_process off; worker_processes 1;
pid {tmp}/nginx.pid; error_log {tmp}/error.log crit;
events {{ worker_connections {conns}; }}
http {{ access_log off; client_body_temp_path {tmp}/b; proxy_temp_path {tmp}/p;
fastcgi_temp_path {tmp}/f; uwsgi_temp_path {tmp}/u; scgi_temp_path {tmp}/s;
sendfile on; server {{ listen 127.0.0.1:{port}; root {root}; {extra} }} }}
""")
    p = subprocess.Popen([NGINX, "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port


def wait_port(port, limit=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return time.monotonic() - t0
        except OSError:
            time.sleep(0.02)
    return None


def serve_start(root, *extra):
    port = free_port()
    t0 = time.monotonic()
    p = subprocess.Popen([PW, "serve", "--root", root, "--addr", f"127.0.0.1:{port}", *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return p, port, time.monotonic() - t0


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def download_peak_rss(port, pid, path="/big.bin"):
    c = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "--max-time", "90", "-w", "%{size_download}",
                          f"http://127.0.0.1:{port}{path}"], stdout=subprocess.PIPE)
    peak = 0
    t0 = time.monotonic()
    while c.poll() is None and time.monotonic() - t0 < 95:
        peak = max(peak, rss_kb(pid))
        time.sleep(0.1)
    out = c.communicate()[0].decode()
    return peak, out, time.monotonic() - t0


def item3(tmp):
    root = os.path.join(tmp, "big")
    os.makedirs(root)
    with open(os.path.join(root, "big.bin"), "wb") as f:
        f.truncate(1500 * 1024 * 1024)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<html>hi</html>")
    p, port, listen = serve_start(root, "--threads", "1")
    peak, size, took = download_peak_rss(port, p.pid)
    row("3", "1.5 GB file: time to listen; peak RSS while serving it", "pagewire serve",
        f"listening after {listen:.2f} s; peak RSS {peak / 1024:.1f} MB; {int(size or 0) / 1e9:.2f} GB sent in {took:.1f} s")
    stop(p)
    ntmp = tempfile.mkdtemp(dir=tmp)
    n, port = nginx_start(ntmp, root)
    peak, size, took = download_peak_rss(port, n.pid)
    row("3", "1.5 GB file: peak RSS while serving it", "nginx", f"peak RSS {peak / 1024:.1f} MB; {int(size or 0) / 1e9:.2f} GB sent in {took:.1f} s")
    stop(n)


def burst(port, n, hold=0.0):
    """n simultaneous GETs; counts answers by status and unanswered closes."""
    res = {"200": 0, "503": 0, "other": 0, "closed": 0, "timeout": 0}
    lock = threading.Lock()

    def one():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=15)
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
            data = b""
            while b"\r\n" not in data:
                b = s.recv(4096)
                if not b:
                    break
                data += b
            if hold:
                time.sleep(hold)
            s.close()
            k = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
            k = k if k in res else ("closed" if k == "closed" else "other")
        except socket.timeout:
            k = "timeout"
        except OSError:
            k = "closed"
        with lock:
            res[k] += 1

    ts = [threading.Thread(target=one) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    return res


def slowloris_then_client(port, n):
    """n connections send half a head and stay; then one client asks."""
    held = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
            held.append(s)
        except OSError:
            break
    # Slowloris heads are old: older than the server's 500 ms bar.
    time.sleep(1.0)
    t0 = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=15)
        c.sendall(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
        first = c.recv(64)
        status = first.split(b" ")[1].decode() if first.startswith(b"HTTP/") else "closed"
    except OSError as e:
        status = type(e).__name__
    took = time.monotonic() - t0
    for s in held:
        s.close()
    return status, took


def item4(tmp):
    root = os.path.join(tmp, "small")
    os.makedirs(root)
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write("<html>" + "x" * 1000 + "</html>")
    p, port, _ = serve_start(root, "--max-conns", "100")
    r = burst(port, 300, hold=1.0)
    row("4", "300 simultaneous GETs held 1 s at a cap of 100", "pagewire serve --max-conns 100", str(r))
    status, took = slowloris_then_client(port, 100)
    row("4", "100 slowloris heads at the cap, then a client", "pagewire serve --max-conns 100", f"client got {status} after {took:.2f} s")
    stop(p)
    ntmp = tempfile.mkdtemp(dir=tmp)
    n, port = nginx_start(ntmp, root, conns=100)
    r = burst(port, 300, hold=1.0)
    row("4", "300 simultaneous GETs held 1 s at a cap of 100", "nginx worker_connections 100", str(r))
    status, took = slowloris_then_client(port, 99)
    row("4", "99 slowloris heads at the cap, then a client", "nginx worker_connections 100", f"client got {status} after {took:.2f} s")
    stop(n)


def item5(tmp):
    long = "n" * 300
    page = f"<html><img src=/ok.gif><img src=/{long}.gif></html>".encode()
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(8)
    l.settimeout(30)

    def serve():
        for _ in range(6):
            try:
                c, _ = l.accept()
            except OSError:
                return
            while True:
                h = read_head(c)
                if h is None:
                    break
                path = h.split(b" ")[1]
                if path.startswith(b"/r"):
                    k = int(path[2:] or b"0")
                    c.sendall(b"HTTP/1.1 302 Found\r\nLocation: /r%d\r\nContent-Length: 0\r\n\r\n" % (k + 1))
                    continue
                body = page if path == b"/" else b"GIF89a"
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    url = "http://%s:%d/" % l.getsockname()
    out = os.path.join(tmp, "save")
    _, rc, err = timed([PW, "fetch", url, "--save", out])
    saved = sum(len(f) for _, _, f in os.walk(out))
    row("5", "one 304-byte name on the page, --save", "pagewire fetch", f"exit {rc}; {saved} files saved; `{(err[-1] if err else '')[:100]}...`")
    _, rc, err = timed([PW, "fetch", url + "r0", "--max-redirects", "3"])
    row("5", "endless redirects, --max-redirects 3", "pagewire fetch", f"exit {rc}; `{(err[-1] if err else '')[:150]}`")
    l.close()


def item7(tmp):
    log = os.path.join(tmp, "bad.log")
    with open(log, "w") as f:
        f.write('h - - [01/Jan/0000:00:00:00 +0000] "GET / HTTP/1.0" 200 1\n')
        f.write('h - - [31/Feb/1995:00:00:00 -0400] "GET / HTTP/1.0" 200 1\n')
        f.write('h - - [29/Aug/1995:00:00:00 +9999] "GET / HTTP/1.0" 200 1\n')
        f.write('h - - [29/Aug/1995:00:00:00 -0400] "GET / HTTP/1.0" 200 18446744073709551615\n')
        f.write('h - - [29/Aug/1995:00:00:01 -0400] "GET /a HTTP/1.0" 200 10\n')
    p = subprocess.run([PW, "prefetch", "simulate", "--log", log], capture_output=True, timeout=120)
    lines = [x for x in p.stdout.decode().splitlines() if x.startswith("lines ")]
    row("7", "impossible dates, zone +9999, size 2^64-1", "pagewire prefetch simulate", f"exit {p.returncode}; `{(lines[0] if lines else '')[:110]}`")
    rev = os.path.join(tmp, "reversed.log")
    with open(rev, "w") as f:
        for t in range(299, -1, -1):
            f.write(f'h - - [29/Aug/1995:{t // 60:02}:{t % 60:02}:00 -0400] "GET /{t % 7} HTTP/1.0" 200 10\n')
    p = subprocess.run([PW, "prefetch", "simulate", "--log", rev], capture_output=True, timeout=120)
    w = [x for x in p.stderr.decode().splitlines() if "warning" in x]
    row("7", "a time-reversed log", "pagewire prefetch simulate", f"exit {p.returncode}; `{(w[0] if w else 'no warning')[-120:]}`")


def item8(tmp):
    root = os.path.join(tmp, "small")
    for flag in [["--threads", "0"], ["--max-requests", "0"], ["--header-timeout", "0s"]]:
        _, rc, err = timed([PW, "serve", "--root", root, "--addr", "127.0.0.1:0", *flag], limit=10)
        row("8", " ".join(flag), "pagewire serve", f"exit {rc}; `{(err[0] if err else '')[:90]}`")
    _, rc, err = timed([PW, "pack", "--root", root, "--out", "/sys/p.objp"])
    row("8", "pack to an unwritable directory", "pagewire pack", f"exit {rc}; `{(err[-1] if err else '')[:120]}`")


def main():
    tmp = tempfile.mkdtemp(prefix="pw-issue32-")
    old = os.umask(0o022)
    try:
        item1()
        item2(tmp)
        item3(tmp)
        item4(tmp)
        item5(tmp)
        item7(tmp)
        item8(tmp)
    finally:
        os.umask(old)
        shutil.rmtree(tmp, ignore_errors=True)
    print("| issue 32 item | probe | against | result |")
    print("|---|---|---|---|")
    for r in ROWS:
        print("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")


if __name__ == "__main__":
    main()
