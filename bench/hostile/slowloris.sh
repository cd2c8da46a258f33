#!/usr/bin/env bash
# bench/hostile/slowloris.sh — slowloris (slowhttptest -H: heads that never
# end, a few bytes every INTERVAL seconds) against `pagewire serve` and
# nginx, each with its default head deadline (pagewire --header-timeout 10s;
# nginx client_header_timeout 60s), while a legitimate client (curl, once a
# second, 3 s limit) fetches a small file. Reports, per server: how many of
# the legitimate requests were served and their worst time, and from
# slowhttptest's per-second CSV the peak of attack connections held open,
# the second at which the server began closing them, and the last second
# slowhttptest recorded with how many were open then (slowhttptest stops
# as soon as the server has closed all of its connections, so a last
# second below DURATION means "all closed within a second after it").
#
# Loopback only; bounded: the attack lasts DURATION seconds (slowhttptest
# -l), the legitimate client as long, every process is stopped at exit.
#
# Usage: bench/hostile/slowloris.sh   (env: PAGEWIRE=path, CONNS=2000,
#        RATE=200 (new connections/s), INTERVAL=5, DURATION=75,
#        NGINX_CONNS=1024 (worker_connections), SERVERS="pagewire nginx")
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CONNS=${CONNS:-2000}
RATE=${RATE:-200}
INTERVAL=${INTERVAL:-5}
DURATION=${DURATION:-75}
NGINX_CONNS=${NGINX_CONNS:-1024}
SERVERS=${SERVERS:-"pagewire nginx"}
for tool in slowhttptest nginx curl; do
    command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/setup-deps.sh" >&2; exit 1; }
done
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi
# slowhttptest needs a descriptor per connection.
ulimit -n $((CONNS + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

WORK=$(mktemp -d /tmp/pagewire-slowloris.XXXXXX)
SRV=""
LEGIT=""
cleanup() {
    for p in $LEGIT $SRV; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www"
head -c 1024 /dev/urandom > "$WORK/www/1k.bin"
chmod -R a+rX "$WORK"

PORT=$((20000 + RANDOM % 20000))
next_port() {
    PORT=$((PORT + 1))
    while ss -Htln "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done
}
next_port
wait_port() {
    for _ in $(seq 100); do
        ss -Htln "sport = :$PORT" | grep -q . && return 0
        sleep 0.1
    done
    echo "server did not start" >&2; exit 1
}
start_pagewire() {
    "$PAGEWIRE" serve --root "$WORK/www" --addr "127.0.0.1:$PORT" --no-compress \
        > "$WORK/pagewire.out" 2> "$WORK/pagewire.err" &
    SRV=$!
    wait_port
}
start_nginx() {
    mkdir -p "$WORK/nginx/logs"
    cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
error_log $WORK/nginx/logs/error.log crit;
pid $WORK/nginx/nginx.pid;
events { worker_connections $NGINX_CONNS; }
http {
    access_log off;
    types { application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT; root $WORK/www; }
}
NGX
    nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2> "$WORK/nginx.err" &
    SRV=$!
    wait_port
}

# legit OUT: one GET a second for DURATION seconds; lines "second code time".
legit() {
    local t0 i
    t0=$(date +%s)
    for i in $(seq "$DURATION"); do
        printf '%s %s\n' "$(($(date +%s) - t0))" \
            "$(curl -s -o /dev/null -m 3 -w '%{http_code} %{time_total}' "http://127.0.0.1:$PORT/1k.bin" || true)" >> "$1"
        sleep 1
        [ $(($(date +%s) - t0)) -ge "$DURATION" ] && break
    done
}

echo "# slowloris: slowhttptest -H -c $CONNS -r $RATE -i $INTERVAL -l $DURATION; legit curl 1/s (-m 3); $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(uptime | sed 's/.*load average: //')"
echo "# $("$PAGEWIRE" --version) serve (defaults: --header-timeout 10s); $(nginx -v 2>&1 | sed 's/.*: //') (worker_connections $NGINX_CONNS, client_header_timeout 60s default); $(slowhttptest -h 2>&1 | grep -o 'version [0-9.]*' | head -1 | sed 's/^/slowhttptest /')"
printf '%-9s %10s %12s %10s %14s %12s %12s\n' server legit_ok legit_max_s peak_held first_close_s last_tick_s open_then
for server in $SERVERS; do
    "start_$server"
    : > "$WORK/legit.$server"
    legit "$WORK/legit.$server" &
    LEGIT=$!
    timeout $((DURATION + 30)) slowhttptest -H -c "$CONNS" -r "$RATE" -i "$INTERVAL" -l "$DURATION" \
        -t GET -u "http://127.0.0.1:$PORT/1k.bin" -x 24 -p 3 -g -o "$WORK/shs.$server" \
        > "$WORK/shs.$server.out" 2>&1 || true
    wait "$LEGIT" 2>/dev/null || true
    LEGIT=""
    kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=""
    next_port
    ok=$(awk '$2 == 200' "$WORK/legit.$server" | wc -l)
    total=$(wc -l < "$WORK/legit.$server")
    worst=$(awk 'BEGIN { m = 0 } { if ($3 + 0 > m) m = $3 + 0 } END { printf "%.3f", m }' "$WORK/legit.$server")
    # CSV: Seconds,Closed,Pending,Connected,Service Available
    awk -F, -v s="$server" -v ok="$ok/$total" -v w="$worst" '
        NR > 1 && $1 ~ /^[0-9]+$/ {
            if ($4 > peak) peak = $4
            if (first == "" && $2 > 0) first = $1
            last_s = $1; last_conn = $4
        }
        END { printf "%-9s %10s %12s %10d %14s %12d %12d\n", s, ok, w, peak, (first == "" ? "never" : first), last_s, last_conn }
    ' "$WORK/shs.$server.csv"
    if [ -n "${KEEP:-}" ]; then cp "$WORK/shs.$server.csv" "$WORK/legit.$server" "$KEEP/"; fi
done
