#!/usr/bin/env bash
# bench/hostile/idle_flood.sh — the idle flood at the file-descriptor limit:
# the server runs under `ulimit -n FDS` (soft and hard), FLOOD
# connections (more than FDS) each make one request and then sit idle, and
# then a fresh client must be served. pagewire with its defaults (cap derived
# from the limit: FDS - 64) and with --max-conns 100000 (the cap above the
# limit: EMFILE handling alone), beside nginx under the same limit
# (worker_connections 1024, its defaults otherwise).
#
# Loopback only; bounded: each flood.py run takes at most about 55 s.
#
# Usage: bench/hostile/idle_flood.sh   (env: PAGEWIRE=path, FDS=256,
#        FLOOD=400, FRESH_TIMEOUT=10, CASES="pagewire pagewire-cap-high nginx")
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FDS=${FDS:-256}
FLOOD=${FLOOD:-400}
FRESH_TIMEOUT=${FRESH_TIMEOUT:-10}
CASES=${CASES:-"pagewire pagewire-cap-high nginx"}
command -v nginx >/dev/null || { echo "nginx missing: run scripts/setup-deps.sh" >&2; exit 1; }
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi
# The flooding client needs a descriptor per connection.
ulimit -n $((FLOOD + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

WORK=$(mktemp -d /tmp/pagewire-idleflood.XXXXXX)
SRV=""
cleanup() {
    if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
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
    echo "server did not start:" >&2; cat "$WORK"/*.err >&2 2>/dev/null; exit 1
}
start_pagewire() {
    # shellcheck disable=SC2086
    (ulimit -n "$FDS" && exec "$PAGEWIRE" serve --root "$WORK/www" --addr "127.0.0.1:$PORT" \
        --no-compress $1) > "$WORK/pagewire.out" 2> "$WORK/pagewire.err" &
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
events { worker_connections 1024; }
http {
    access_log off;
    types { application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT; root $WORK/www; }
}
NGX
    (ulimit -n "$FDS" && exec nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx") 2> "$WORK/nginx.err" &
    SRV=$!
    wait_port
}

echo "# idle flood: server under ulimit -n $FDS, $FLOOD idle keep-alive connections, then a fresh GET (limit ${FRESH_TIMEOUT}s); $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(uptime | sed 's/.*load average: //')"
echo "# $("$PAGEWIRE" --version); $(nginx -v 2>&1 | sed 's/.*: //')"
for case in $CASES; do
    case $case in
        pagewire) start_pagewire "" ;;
        pagewire-cap-high) start_pagewire "--max-conns 100000" ;;
        nginx) start_nginx ;;
        *) echo "unknown case $case" >&2; exit 1 ;;
    esac
    result=$(timeout $((FRESH_TIMEOUT + 60)) python3 "$ROOT/bench/hostile/flood.py" 127.0.0.1 "$PORT" /1k.bin "$FLOOD" "$FRESH_TIMEOUT" || echo "flood.py failed")
    printf '%-18s %s\n' "$case" "$result"
    if [ "${case#pagewire}" != "$case" ]; then
        grep -h "open files" "$WORK/pagewire.err" "$WORK/pagewire.out" 2>/dev/null | head -1 | sed 's/^/#   /' || true
    fi
    kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=""
    next_port
done
