#!/usr/bin/env bash
# bench/server/run.sh — pagewire's server beside nginx and h2o (issue 2).
#
# Measures, in one run, on the same files:
#   * requests/s, keep-alive:  wrk -t1 -c50 -d${DURATION}s
#   * requests/s, pipelined:   h2load --h1 -m16 -c50 -t1 -D ${DURATION}
#   on a 1 KB file and on the Microscape files (paper 001's test page: 1 HTML
#   page + 42 GIFs, requested in rotation), each server pinned to CPU
#   $SERVER_CPU and the load generator to CPU $LOAD_CPU (taskset);
#   * each server's CPU seconds per 100,000 requests in those runs (utime +
#     stime of the server's processes, /proc/PID/stat), because one core of
#     load generator may saturate before the server does;
#   * memory per idle keep-alive connection: hold $IDLE_CONNS connections that
#     each completed one request, RSS delta / connections.
# Every load run is bounded by DURATION (default 10 s); the whole script by
# about 3 x 4 x (DURATION + 3) s + 3 idle-memory runs (~3 min at defaults).
#
# Usage: bench/server/run.sh            (env: DURATION, IDLE_CONNS, OUT, PAGEWIRE)
# Needs root only to install missing packages (nginx-light h2o wrk nghttp2-client).
set -euo pipefail

DURATION=${DURATION:-10}
IDLE_CONNS=${IDLE_CONNS:-10000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
CONNS=50
STREAMS=16
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$ROOT/bench/server/results}
mkdir -p "$OUT"

need=()
for p in nginx-light h2o wrk nghttp2-client python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi

WORK=$(mktemp -d /tmp/pagewire-bench.XXXXXX)
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# ---- the files ---------------------------------------------------------------
WWW=$WORK/www
mkdir -p "$WWW"
# 1 KB of deterministic incompressible bytes (no server may compress it).
python3 -c 'import random,sys; random.seed(1); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(1024)))' > "$WWW/1k.bin"
"$PAGEWIRE" site microscape --out "$WWW/microscape" >/dev/null
(cd "$WWW" && find microscape -type f \( -name '*.html' -o -name '*.gif' \) | sort) | sed 's|^|/|' > "$WORK/paths.txt"
NPATHS=$(wc -l < "$WORK/paths.txt")
chmod -R a+rX "$WORK"

# ---- servers -----------------------------------------------------------------
# A port nobody listens on (other servers may run on this machine).
port_free() { ! ss -Htln "sport = :$1" | grep -q .; }
next_port() {
    PORT=$((PORT + 1))
    while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
}
PORT=$((20000 + RANDOM % 20000))
next_port
start_pagewire() {
    taskset -c "$SERVER_CPU" "$PAGEWIRE" serve --root "$WWW" --addr "127.0.0.1:$PORT" --threads 1 \
        > "$WORK/pagewire.out" 2> "$WORK/pagewire.err" &
    SERVER_PID=$!
}
start_nginx() {
    mkdir -p "$WORK/nginx/logs"
    cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
worker_rlimit_nofile 100000;
daemon off;
error_log $WORK/nginx/logs/error.log warn;
pid $WORK/nginx/nginx.pid;
events { worker_connections 20000; multi_accept on; }
http {
    access_log off;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 100000000; keepalive_timeout 60s;
    open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;
    etag on; gzip off;
    types { text/html html; image/gif gif; application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT backlog=4096; root $WWW; }
}
NGX
    taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2> "$WORK/nginx.err" &
    SERVER_PID=$!
}
start_h2o() {
    mkdir -p "$WORK/h2o"
    cat > "$WORK/h2o/h2o.conf" <<H2O
listen:
  host: 127.0.0.1
  port: $PORT
num-threads: 1
max-connections: 20000
http1-request-timeout: 60
file.send-compressed: OFF
hosts:
  default:
    paths:
      /:
        file.dir: $WWW
H2O
    taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o/h2o.conf" > "$WORK/h2o.out" 2>&1 &
    SERVER_PID=$!
}
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
    # Let TIME_WAIT sockets of this port not matter: next server, next port.
    next_port
}
wait_port() {
    for _ in $(seq 1 100); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "server exited at start (port $PORT)" >&2
            return 1
        fi
        # Must be OUR server answering 200, not anything else on the port.
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/1k.bin")" = 200 ] && return 0
        sleep 0.1
    done
    echo "server on port $PORT did not start" >&2
    return 1
}
# The server's processes: the started one and its descendants.
server_pids() {
    local pids=("$SERVER_PID") frontier=("$SERVER_PID") next
    while [ ${#frontier[@]} -gt 0 ]; do
        next=()
        for p in "${frontier[@]}"; do
            for c in $(pgrep -P "$p" || true); do pids+=("$c"); next+=("$c"); done
        done
        frontier=("${next[@]}")
    done
    echo "${pids[@]}"
}
cpu_ticks() {
    local total=0
    for p in $(server_pids); do
        [ -r "/proc/$p/stat" ] || continue
        # fields 14, 15: utime, stime (after the ")" of the command name)
        set -- $(sed 's/.*) //' "/proc/$p/stat")
        total=$((total + ${12} + ${13}))
    done
    echo "$total"
}
CLK_TCK=$(getconf CLK_TCK)

# ---- load --------------------------------------------------------------------
cat > "$WORK/rotate.lua" <<'LUA'
local paths = {}
for line in io.lines(os.getenv("PATHS_FILE")) do paths[#paths + 1] = line end
local i = 0
request = function()
    i = i % #paths + 1
    return wrk.format("GET", paths[i])
end
LUA

# run_load MODE FILESET -> prints "REQS REQ_PER_S"
run_load() {
    local mode=$1 fileset=$2 out="$WORK/load.out"
    if [ "$mode" = keepalive ]; then
        if [ "$fileset" = 1k ]; then
            echo "# bench/server/run.sh: taskset -c $LOAD_CPU wrk -t1 -c$CONNS -d${DURATION}s http://127.0.0.1:$PORT/1k.bin" > "$WORK/load.cmd"
            taskset -c "$LOAD_CPU" wrk -t1 -c$CONNS -d"${DURATION}s" "http://127.0.0.1:$PORT/1k.bin" > "$out"
        else
            echo "# bench/server/run.sh: taskset -c $LOAD_CPU wrk -t1 -c$CONNS -d${DURATION}s -s rotate.lua (the $NPATHS Microscape paths) http://127.0.0.1:$PORT/" > "$WORK/load.cmd"
            PATHS_FILE="$WORK/paths.txt" taskset -c "$LOAD_CPU" wrk -t1 -c$CONNS -d"${DURATION}s" \
                -s "$WORK/rotate.lua" "http://127.0.0.1:$PORT/" > "$out"
        fi
        local reqs rps
        reqs=$(awk '/requests in/ {print $1}' "$out")
        rps=$(awk '/Requests\/sec/ {print $2}' "$out")
        local errors
        errors=$(awk '/Non-2xx|Socket errors/ {print}' "$out")
        if [ -n "$errors" ]; then
            # A run with failed requests does not count.
            echo "  wrk: $errors" >&2
            rps="INVALID"
        fi
        echo "$reqs $rps"
    else
        if [ "$fileset" = 1k ]; then
            echo "http://127.0.0.1:$PORT/1k.bin" > "$WORK/uris.txt"
        else
            sed "s|^|http://127.0.0.1:$PORT|" "$WORK/paths.txt" > "$WORK/uris.txt"
        fi
        echo "# bench/server/run.sh: taskset -c $LOAD_CPU h2load --h1 -m$STREAMS -c$CONNS -t1 -D $DURATION -H 'accept-encoding: identity' -i ($fileset URIs)" > "$WORK/load.cmd"
        # accept-encoding: identity so no server sends a compressed page.
        taskset -c "$LOAD_CPU" h2load --h1 -m$STREAMS -c$CONNS -t1 -D "$DURATION" \
            -H 'accept-encoding: identity' -i "$WORK/uris.txt" > "$out" 2>&1
        local done_ rps
        done_=$(awk '/^requests:/ {print $8}' "$out")
        rps=$(awk '/^finished in/ {print $4}' "$out")
        local failed errored non2xx
        failed=$(awk '/^requests:/ {print $10}' "$out")
        errored=$(awk '/^requests:/ {print $12}' "$out")
        non2xx=$(awk '/^status codes:/ {print $5 + $7 + $9}' "$out")
        if [ "${failed:-0}" != 0 ] || [ "${errored:-0}" != 0 ] || [ "${non2xx:-0}" != 0 ]; then
            echo "  h2load: $failed failed, $errored errored, $non2xx non-2xx" >&2
            rps="INVALID"
        fi
        echo "$done_ $rps"
    fi
}

declare -A RPS CPU100K MEM
SERVERS=(pagewire nginx h2o)
for server in "${SERVERS[@]}"; do
    for fileset in 1k microscape; do
        for mode in keepalive pipelined; do
            "start_$server"
            wait_port
            # Warm up (file caches, page cache) for one second.
            taskset -c "$LOAD_CPU" wrk -t1 -c$CONNS -d1s "http://127.0.0.1:$PORT/1k.bin" > /dev/null
            t0=$(cpu_ticks)
            read -r reqs rps < <(run_load "$mode" "$fileset")
            t1=$(cpu_ticks)
            cpu_s=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" 'BEGIN {printf "%.3f", (b - a) / hz}')
            per100k=$(awk -v c="$cpu_s" -v n="$reqs" 'BEGIN {if (n > 0) printf "%.3f", c / n * 100000; else print "nan"}')
            RPS[$server,$fileset,$mode]=$rps
            CPU100K[$server,$fileset,$mode]=$per100k
            printf '%-9s %-10s %-9s %10s req/s  %9s requests  %7s cpu-s  %s cpu-s/100k\n' \
                "$server" "$fileset" "$mode" "$rps" "$reqs" "$cpu_s" "$per100k" >&2
            { cat "$WORK/load.cmd"; echo "# server: $server ($(date -u +%Y-%m-%dT%H:%M:%SZ))"; cat "$WORK/load.out"; } > "$OUT/$server-$fileset-$mode.txt"
            stop_server
        done
    done
    # Idle keep-alive connections: memory.
    "start_$server"
    wait_port
    pids=$(server_pids | tr ' ' ',')
    line=$( (ulimit -n 100000 2>/dev/null || ulimit -n 20000; python3 "$ROOT/bench/server/hold_idle.py" 127.0.0.1 "$PORT" /1k.bin "$IDLE_CONNS" "$pids") ) || line="failed"
    MEM[$server]=$(echo "$line" | sed -n 's/.*per_conn_bytes=\([0-9]*\).*/\1/p')
    echo "$server idle: $line" >&2
    stop_server
done

# ---- report ------------------------------------------------------------------
{
    echo "# pagewire server benchmark"
    echo
    echo "Made by: bench/server/run.sh (DURATION=$DURATION IDLE_CONNS=$IDLE_CONNS) on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); server on CPU $SERVER_CPU, load generator on CPU $LOAD_CPU"
    echo "Versions: $("$PAGEWIRE" --version), $(nginx -v 2>&1 | sed 's/.*: //'), $(h2o --version | head -1), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), h2load $(h2load --version | head -1 | awk '{print $2}')"
    echo "Files: 1k = /1k.bin (1024 random bytes); microscape = the $NPATHS files of \`pagewire site microscape\` (seed 1997) in rotation."
    echo "Keep-alive: wrk -t1 -c$CONNS -d${DURATION}s. Pipelined: h2load --h1 -m$STREAMS -c$CONNS -t1 -D $DURATION -H 'accept-encoding: identity'."
    echo
    echo "| server | 1 KB keep-alive req/s | 1 KB pipelined req/s | Microscape keep-alive req/s | Microscape pipelined req/s | CPU s / 100k req (1k ka / 1k pl / ms ka / ms pl) | bytes / idle conn |"
    echo "|---|---:|---:|---:|---:|---|---:|"
    for s in "${SERVERS[@]}"; do
        echo "| $s | ${RPS[$s,1k,keepalive]} | ${RPS[$s,1k,pipelined]} | ${RPS[$s,microscape,keepalive]} | ${RPS[$s,microscape,pipelined]} | ${CPU100K[$s,1k,keepalive]} / ${CPU100K[$s,1k,pipelined]} / ${CPU100K[$s,microscape,keepalive]} / ${CPU100K[$s,microscape,pipelined]} | ${MEM[$s]} |"
    done
    echo
    echo "Ratios pagewire / best peer (requests/s):"
    for fs in 1k microscape; do
        for m in keepalive pipelined; do
            awk -v p="${RPS[pagewire,$fs,$m]}" -v n="${RPS[nginx,$fs,$m]}" -v h="${RPS[h2o,$fs,$m]}" -v l="$fs $m" \
                'BEGIN {b = (n > h) ? n : h; printf "- %s: %.2fx\n", l, (b > 0) ? p / b : 0}'
        done
    done
} | tee "$OUT/results.md"
