#!/usr/bin/env bash
# bench/h3-peers.sh — HTTP/3 (and HTTP/2) page loads from pagewire's server
# beside Caddy's, the one HTTP/3 server Debian packages (nginx 1.22 and h2o
# 2.2.5 in Debian 12 have no QUIC, and its h2load 1.52 is built without it,
# so issue 27's h2load cell cannot be run for HTTP/3 here).
#
# The client is pagewire's robot (`pagewire fetch --strategy h3|h2`), one
# process per page on CPU $LOAD_CPU: a new QUIC (or TLS) connection, the
# Microscape page and its 42 images (43 GETs, 171 KB), the connection
# closed. Each server runs alone on CPU $SERVER_CPU with the same
# certificate (made by `pagewire serve --tls`) and the same files; the
# servers' order alternates each round. For each protocol, server and round:
# $PAGES pages one after another, the server's CPU (utime + stime of its
# processes, /proc/PID/stat) per page, and the page time the robot reports
# ("total": from the start of the fetch, connection set-up included, to the
# last byte of the last object; median of the run's pages).
# The robot's process lives longer than that (start-up, and QUIC's closing
# period), so whole-process times are not compared. Every fetch must
# return 43 responses with status 200; the others are kept in raw/.
#
# Usage: bench/h3-peers.sh   (env: PAGEWIRE (binary; default: cargo build
#        --release), ROUNDS (3), PAGES (200), PROTOCOLS ("h3 h2"), OUT
#        (default docs/perf-results/DATE-h3), SERVER_CPU (0), LOAD_CPU (1),
#        COMMIT, DIRTY)
# Peers: installs caddy when missing (needs root); otherwise: apt-get
# install caddy. Bounded: every fetch has a `timeout`, PAGES per run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
ROUNDS=${ROUNDS:-3}
PAGES=${PAGES:-200}
PROTOCOLS=${PROTOCOLS:-h3 h2}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
STAMP=$(date -u +%Y-%m-%d-%H%M)
OUT=${OUT:-$ROOT/docs/perf-results/$STAMP-h3}
T_START=$(date +%s)

if ! command -v caddy > /dev/null; then
    if [ "$(id -u)" != 0 ]; then
        echo "bench/h3-peers.sh: caddy is missing; install it: apt-get install caddy" >&2
        exit 1
    fi
    echo "installing caddy" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends caddy > /dev/null
fi
# The Debian package starts a caddy service where systemd runs; this script
# runs its own, on its own port.

WORK=$(mktemp -d /tmp/pagewire-h3.XXXXXX)
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire --locked)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi
cp "$PAGEWIRE" "$WORK/pagewire"
PW=$WORK/pagewire
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2> /dev/null || true; wait "$PID" 2> /dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT/raw"

"$PW" site microscape --out "$WORK/site" > /dev/null
chmod -R a+rX "$WORK"
CERTS=$WORK/certs

# Ports (next_port, bench/server/common.sh) start below the kernel's
# ephemeral range.
PORT=$((20000 + RANDOM % 10000))

start_pagewire() {
    next_port
    taskset -c "$SERVER_CPU" "$PW" serve --root "$WORK/site" --addr "127.0.0.1:$PORT" --threads 1 \
        --tls "$CERTS" > "$WORK/server.out" 2>&1 &
    PID=$!
}
# Caddy needs the name in the TLS handshake (SNI) to pick a certificate for
# QUIC: the URL names localhost (which the certificate covers), and the
# robot connects to 127.0.0.1 (--resolve).
start_caddy() {
    next_port
    mkdir -p "$WORK/caddy"
    cat > "$WORK/caddy/Caddyfile" <<CADDY
{
	admin off
	auto_https disable_redirects
	skip_install_trust
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$PORT {
	bind 127.0.0.1
	tls $CERTS/server.pem $CERTS/server-key.pem
	root * $WORK/site
	file_server
}
CADDY
    XDG_DATA_HOME=$WORK/caddy XDG_CONFIG_HOME=$WORK/caddy GOMAXPROCS=1 \
        taskset -c "$SERVER_CPU" caddy run --config "$WORK/caddy/Caddyfile" --adapter caddyfile \
        > "$WORK/server.out" 2>&1 &
    PID=$!
}
stop_server() {
    kill "$PID" 2> /dev/null || true
    wait "$PID" 2> /dev/null || true
    PID=
}
# fetch PROTO: one page; prints the robot's first two lines as one (its
# objects and statuses, then its times).
fetch() {
    timeout 20 taskset -c "$LOAD_CPU" "$PW" fetch --strategy "$1" --ca "$CERTS/ca.pem" \
        --resolve "localhost:$PORT:127.0.0.1" "https://localhost:$PORT/index.html" 2>&1 | head -n 2 | tr '\n' ' '
}
wait_ready() {
    for _ in $(seq 1 100); do
        kill -0 "$PID" 2> /dev/null || { echo "server exited at start:" >&2; tail -n 5 "$WORK/server.out" >&2; return 1; }
        if fetch h2 | grep -q "responses \[43x200\]"; then return 0; fi
        sleep 0.1
    done
    echo "server did not start" >&2
    return 1
}

# pagewire makes the certificates on its first start.
start_pagewire; wait_ready; stop_server

RUNS=$OUT/runs.csv
echo "round,protocol,server,pages,ok_pages,wall_s,server_cpu_s,cpu_ms_per_page,page_ms_median" > "$RUNS"
echo "bench/h3-peers.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
SERVERS=(pagewire caddy)
for round in $(seq 1 "$ROUNDS"); do
    for i in 0 1; do
        server=${SERVERS[$(((i + round - 1) % 2))]}
        "start_$server"
        wait_ready
        for proto in $PROTOCOLS; do
            for _ in 1 2 3 4 5; do fetch "$proto" > /dev/null; done # warm-up
            t0=$(proc_ticks "$PID" $(pgrep -P "$PID" || true))
            w0=$(date +%s.%N)
            ok=0
            : > "$WORK/times"
            for _ in $(seq 1 "$PAGES"); do
                line=$(fetch "$proto")
                if echo "$line" | grep -q "responses \[43x200\]"; then
                    ok=$((ok + 1))
                    echo "$line" | sed -n 's/.*, total \([0-9.]*\) ms.*/\1/p' >> "$WORK/times"
                else
                    echo "$line" >> "$OUT/raw/$server-$proto-round$round-failures.txt"
                fi
            done
            w1=$(date +%s.%N)
            t1=$(proc_ticks "$PID" $(pgrep -P "$PID" || true))
            read -r cpu _ _ _ < <(cpu_per_100k "$t0" "$t1" "$PAGES")
            wall=$(awk -v a="$w0" -v b="$w1" 'BEGIN {printf "%.3f", b - a}')
            per=$(awk -v c="$cpu" -v n="$PAGES" 'BEGIN {printf "%.2f", c / n * 1000}')
            page=$(sort -n "$WORK/times" | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2}')
            printf 'round %s %-3s %-9s %4s/%s pages ok  %7s s  cpu %6s s  %6s ms cpu/page  page %6s ms (median)\n' \
                "$round" "$proto" "$server" "$ok" "$PAGES" "$wall" "$cpu" "$per" "$page" >&2
            echo "$round,$proto,$server,$PAGES,$ok,$wall,$cpu,$per,$page" >> "$RUNS"
            echo "$line" > "$OUT/raw/$server-$proto-round$round-last-fetch.txt"
        done
        stop_server
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

COMMIT=${COMMIT:-$(git -C "$ROOT" rev-parse HEAD 2> /dev/null || echo unknown)}
DIRTY=${DIRTY:-$(if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2> /dev/null)" ]; then echo true; else echo false; fi)}
python3 - "$RUNS" "$COMMIT" "$DIRTY" "$LOAD_BEFORE" "$LOAD_AFTER" "$(caddy version | head -1)" \
    "$("$PW" --version)" "$(($(date +%s) - T_START))" "ROUNDS=$ROUNDS PAGES=$PAGES PROTOCOLS=${PROTOCOLS// /,} SERVER_CPU=$SERVER_CPU LOAD_CPU=$LOAD_CPU" <<'PY' | tee "$OUT/results.md"
import csv, json, os, statistics, sys
runs, commit, dirty, lb, la, caddy, pw, secs, settings = sys.argv[1:]
rows = list(csv.DictReader(open(runs)))
out = os.path.dirname(runs)
print("# HTTP/3 and HTTP/2 page loads, pagewire beside Caddy (bench/h3-peers.sh)\n")
print(f"Run: {secs} s; commit {commit[:12]}{' (dirty)' if dirty == 'true' else ''}. Versions: {pw}, caddy {caddy}.")
print(f"Load average {lb} before, {la} after. Settings: {settings}.")
print("One page: a new connection, the Microscape page and its 42 images (43 GETs, 171 KB), by `pagewire fetch`;")
print("server CPU = utime + stime of the server's processes per page; page time = the robot's \"total\" (connection set-up")
print("to the last byte of the last object), the median of each run's pages; both as medians of the rounds (min-max).\n")
print("| protocol | server | pages ok | server CPU ms per page | page time ms |")
print("|---|---|---:|---:|---:|")
summary = {}
for proto in dict.fromkeys(r["protocol"] for r in rows):
    for server in dict.fromkeys(r["server"] for r in rows):
        rs = [r for r in rows if r["protocol"] == proto and r["server"] == server]
        if not rs:
            continue
        cpu = [float(r["cpu_ms_per_page"]) for r in rs]
        wall = [float(r["page_ms_median"]) for r in rs]
        ok = sum(int(r["ok_pages"]) for r in rs)
        n = sum(int(r["pages"]) for r in rs)
        summary[(proto, server)] = (statistics.median(cpu), statistics.median(wall), ok, n)
        print(f"| {proto} | {server} | {ok}/{n} | {statistics.median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) "
              f"| {statistics.median(wall):.2f} ({min(wall):.2f}-{max(wall):.2f}) |")
print()
for proto in dict.fromkeys(r["protocol"] for r in rows):
    p, c = summary.get((proto, "pagewire")), summary.get((proto, "caddy"))
    if p and c and c[0] > 0 and c[1] > 0:
        print(f"- {proto}: pagewire / caddy, server CPU per page {p[0] / c[0]:.2f}x, page time {p[1] / c[1]:.2f}x (medians)")
json.dump({"commit": commit, "dirty": dirty == "true", "command": "bench/h3-peers.sh", "settings": settings,
           "versions": {"pagewire": pw, "caddy": caddy}, "load_before": lb, "load_after": la,
           "medians": {f"{k[0]}/{k[1]}": {"cpu_ms_per_page": v[0], "page_ms": v[1], "ok_pages": v[2], "pages": v[3]}
                       for k, v in summary.items()}},
          open(os.path.join(out, "h3.json"), "w"), indent=1)
PY
