#!/usr/bin/env bash
# bench/server/drip.sh — slow senders: CPU a server spends while CLIENTS
# connections each drip a large request head one byte per TCP segment
# (TCP_NODELAY, one send() per byte; bench/server/drip.py), pagewire beside
# nginx under the same drip, on loopback.
#
# Reports, per server and head size, the server's CPU seconds (utime+stime
# of all its processes, /proc/PID/stat, before and after the drip) and, with
# STRACE=1, a second drip under `strace -c -f` (system calls per byte).
#
# Heads are field lines of LINE bytes (560: a 54 KB head is 97 lines). Limits
# are set on both sides so the heads are accepted:
#   pagewire serve --max-head-bytes 65536 --max-headers 256 (PAGEWIRE_FLAGS;
#          64 KiB and 100 fields are also the defaults, so a pagewire
#          without these flags runs the same drip with PAGEWIRE_FLAGS="")
#   nginx: large_client_header_buffers 8 16k (each field line fits one
#          buffer, the whole head fits the 8; the default 4 8k refuses
#          heads over 32 KB).
# PACE_US paces the drip: one round (a byte to every connection) at most
# every PACE_US microseconds; 0 sends as fast as the client can, so a server
# that falls behind reads several bytes per read.
#
# Usage: bench/server/drip.sh        (env: CLIENTS=8 SIZES="24000 54000"
#        LINE=560 PACE_US=0 REPS=3 LIMIT=120 PAGEWIRE=path PAGEWIRE_FLAGS=...
#        STRACE=0 SERVER_CPU=0 LOAD_CPU=1)
set -euo pipefail

CLIENTS=${CLIENTS:-8}
SIZES=${SIZES:-"24000 54000"}
REPS=${REPS:-3}
LIMIT=${LIMIT:-120}
STRACE=${STRACE:-0}
LINE=${LINE:-560}
PACE_US=${PACE_US:-0}
PAGEWIRE_FLAGS=${PAGEWIRE_FLAGS---max-head-bytes 65536 --max-headers 256}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"

command -v nginx >/dev/null || { echo "nginx missing: run scripts/setup-deps.sh" >&2; exit 1; }
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi

WORK=$(mktemp -d /tmp/pagewire-drip.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www"
write_1k "$WORK/www/1k.bin"
chmod -R a+rX "$WORK"

port_free() { ! ss -Htln "sport = :$1" | grep -q .; }
PORT=$((20000 + RANDOM % 20000))
next_port() {
    PORT=$((PORT + 1))
    while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
}
next_port
wait_port() {
    local i
    for i in $(seq 100); do
        if ! port_free "$PORT"; then return 0; fi
        sleep 0.1
    done
    echo "server did not start" >&2; exit 1
}

start_pagewire() {
    taskset -c "$SERVER_CPU" "$PAGEWIRE" serve --root "$WORK/www" --addr "127.0.0.1:$PORT" \
        --threads 1 --no-compress $PAGEWIRE_FLAGS \
        > "$WORK/pagewire.out" 2> "$WORK/pagewire.err" &
    SERVER_PID=$!
    wait_port
}
start_nginx() {
    mkdir -p "$WORK/nginx/logs"
    cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
error_log $WORK/nginx/logs/error.log warn;
pid $WORK/nginx/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    tcp_nodelay on;
    large_client_header_buffers 8 16k;
    types { application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT; root $WORK/www; }
}
NGX
    taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2> "$WORK/nginx.err" &
    SERVER_PID=$!
    wait_port
}
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    next_port
}
# The server's processes: the one started and its children (nginx's worker).
server_pids() { echo "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); }

drip() {
    timeout $((LIMIT + 10)) taskset -c "$LOAD_CPU" python3 "$ROOT/bench/server/drip.py" \
        127.0.0.1 "$PORT" "$CLIENTS" "$1" "$LIMIT" "$LINE" "$PACE_US"
}

echo "# drip: $CLIENTS clients, heads of $SIZES bytes ($LINE-byte lines), 1 byte per segment, pace ${PACE_US} us; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# pagewire: $PAGEWIRE serve --threads 1 --no-compress $PAGEWIRE_FLAGS"
echo "# $("$PAGEWIRE" --version), $(nginx -v 2>&1 | sed 's/.*: //'), kernel $(uname -r)"
printf '%-9s %7s %4s %8s %8s %8s %8s\n' server head rep cpu_s user_s sys_s wall_s
for size in $SIZES; do
    for rep in $(seq "$REPS"); do
        for server in pagewire nginx; do
            "start_$server"
            pids=$(server_pids)
            before=$(proc_ticks $pids)
            out=$(drip "$size")
            after=$(proc_ticks $pids)
            read -r cpu _ <<<"$(cpu_per_100k "$before" "$after" 0)"
            awk -v a="$before" -v b="$after" -v hz="$(getconf CLK_TCK)" -v s="$server" -v h="$size" -v r="$rep" -v c="$cpu" -v w="${out##* }" \
                'BEGIN { split(a, x, " "); split(b, y, " "); printf "%-9s %7s %4s %8s %8.2f %8.2f %8s\n", s, h, r, c, (y[1]-x[1])/hz, (y[2]-x[2])/hz, w }'
            stop_server
        done
    done
done

if [ "$STRACE" = 1 ]; then
    command -v strace >/dev/null || { echo "strace missing" >&2; exit 1; }
    size=${SIZES%% *}
    for server in pagewire nginx; do
        "start_$server"
        pids=$(server_pids)
        args=()
        for p in $pids; do args+=(-p "$p"); done
        strace -c -f -o "$WORK/strace.$server" "${args[@]}" &
        spid=$!
        sleep 0.5
        drip "$size" >/dev/null
        kill -INT "$spid"; wait "$spid" 2>/dev/null || true
        echo "# strace -c -f, $server, $CLIENTS clients x $size bytes ($((CLIENTS * size)) bytes dripped):"
        head -n 12 "$WORK/strace.$server" | sed 's/^/#   /'
        stop_server
    done
fi
