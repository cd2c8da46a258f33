#!/usr/bin/env bash
# bench/load/run.sh — one `pagewire load` run against pagewire serve or nginx
# on loopback, the server pinned to CPU 0 and the generator to CPU 1, with the
# server's own count of connections beside the generator's (docs/load.md).
#
#   SERVER=pagewire|nginx UES=640 MODE=http11 DURATION=60s bench/load/run.sh
#   CMP=1 ...   also runs wrk and h2load against the same server for the
#               generator-CPU comparison (10 s each, 640 connections).
#
# Bounded: DURATION + the timeout + a few seconds (plus 2 x 10 s with CMP=1).
# Needs nginx, wrk, h2load (scripts/setup-deps.sh) and a release build.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAGEWIRE=${PAGEWIRE:-$ROOT/target/release/pagewire}
SERVER=${SERVER:-pagewire}
UES=${UES:-640}
MODE=${MODE:-http11}
DURATION=${DURATION:-60s}
RAMP=${RAMP:-5s}
# A free loopback port (never a fixed one: other servers may be running).
PORT=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
WORK=${WORK:-$(mktemp -d /tmp/pagewire-load.XXXXXX)}
SITE=${SITE:-$WORK/site}
OUT=${OUT:-$WORK/out}
EXTRA=${EXTRA:-}

[ -f "$SITE/manifest.json" ] || "$PAGEWIRE" site surge --out "$SITE" >/dev/null
ulimit -n "$(ulimit -Hn)"

SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

case "$SERVER" in
pagewire)
    taskset -c 0 "$PAGEWIRE" serve --root "$SITE" --addr 127.0.0.1:$PORT --threads 1 \
        --no-compress >"$WORK/serve.out" 2>"$WORK/serve.err" &
    SERVER_PID=$!
    for _ in $(seq 100); do grep -q listening "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
    ;;
nginx)
    # Paper 004 Table 10's Apache settings, in nginx terms: KeepAlive On,
    # MaxKeepAliveRequests 150, KeepAliveTimeout 15 (MaxClients 900 -> worker_connections).
    mkdir -p "$WORK/nginx/logs"
    cat >"$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
worker_rlimit_nofile 100000;
daemon off;
error_log $WORK/nginx/logs/error.log warn;
pid $WORK/nginx/nginx.pid;
events { worker_connections 30000; multi_accept on; }
http {
    log_format conns '\$connection \$connection_requests \$status \$body_bytes_sent';
    access_log $WORK/nginx/logs/access.log conns buffer=256k;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 150; keepalive_timeout 15s;
    open_file_cache max=4000 inactive=60s;
    types { text/html html; application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT backlog=4096; root $SITE; }
}
NGX
    taskset -c 0 nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2>"$WORK/nginx.err" &
    SERVER_PID=$!
    sleep 0.5
    ;;
*) echo "SERVER must be pagewire or nginx" >&2; exit 2 ;;
esac

echo "# $(date -u +%FT%TZ) SERVER=$SERVER UES=$UES MODE=$MODE DURATION=$DURATION RAMP=$RAMP $EXTRA"
/usr/bin/time -f "generator cpu: %U s user + %S s system, %e s wall, max RSS %M KB" \
    taskset -c 1 "$PAGEWIRE" load --target http://127.0.0.1:$PORT --site "$SITE" --ues "$UES" \
    --mode "$MODE" --duration "$DURATION" --ramp "$RAMP" --out "$OUT" --no-progress $EXTRA

if [ "${CMP:-0}" = 1 ]; then
    # The same server, the usual tools: one mid-size file (about the set's median), 640 connections.
    F=$(python3 -c "import json,sys; m=json.load(open('$SITE/manifest.json')); fs=sorted((f['size'],f['path']) for o in m['objects'] for f in o['files']); print(fs[len(fs)//2][1])")
    echo "# wrk and h2load on $F (640 connections, 10 s)"
    /usr/bin/time -f "wrk cpu: %U s user + %S s system, %e s wall" \
        taskset -c 1 wrk -t1 -c640 -d10s "http://127.0.0.1:$PORT$F" | grep -E "Requests/sec|requests in"
    /usr/bin/time -f "h2load cpu: %U s user + %S s system, %e s wall" \
        taskset -c 1 h2load --h1 -t1 -c640 -D10 "http://127.0.0.1:$PORT$F" | grep -E "^finished|^requests:"
fi

kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
case "$SERVER" in
pagewire) echo "server: $(grep -E '^(connections|requests) ' "$WORK/serve.err" | tr -s ' ' | paste -sd' ')" ;;
nginx) echo "server: connections $(awk '$2 == 1' "$WORK/nginx/logs/access.log" | wc -l) requests $(wc -l <"$WORK/nginx/logs/access.log") non-200 $(awk '$3 != 200' "$WORK/nginx/logs/access.log" | wc -l)" ;;
esac
echo "results in $OUT"
