#!/usr/bin/env bash
# bench/server/run.sh — pagewire's server beside nginx and h2o.
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
#   * how busy each of the two cores was during each run (/proc/stat): when
#     the load generator's core is ~100% busy, the generator sets the rate.
# Runs are repeated REPS times (default 3), interleaved across servers, and
# each cell reports the median. Every load run is bounded by DURATION
# (default 10 s); the whole script by about REPS x 12 x (DURATION + 3) s
# + 3 idle-memory runs (~9 min at defaults).
#
# Usage: bench/server/run.sh            (env: DURATION, REPS, IDLE_CONNS, OUT, PAGEWIRE)
# Needs root only to install missing packages (nginx-light h2o wrk nghttp2-client).
set -euo pipefail

DURATION=${DURATION:-10}
REPS=${REPS:-3}
IDLE_CONNS=${IDLE_CONNS:-10000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
CONNS=50
STREAMS=16
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
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
write_1k "$WWW/1k.bin"
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
    write_h2o_conf "$WORK/h2o/h2o.conf" "$PORT" "$WWW"
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
            echo "server exited at start (port $PORT):" >&2
            tail -5 "$WORK"/*.err "$WORK"/*.out 2>/dev/null >&2 || true
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
    # shellcheck disable=SC2046
    proc_ticks $(server_pids)
}

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

# cpu_jiffies CPU -> "BUSY TOTAL" jiffies of one core since boot (/proc/stat;
# busy = everything except idle and iowait).
cpu_jiffies() {
    awk -v c="cpu$1" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}
# busy_pct "B0 T0" "B1 T1" -> percent busy between two cpu_jiffies samples
busy_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ");
        t = y[2] - x[2]; printf "%.0f", (t > 0) ? 100 * (y[1] - x[1]) / t : 0}'
}

# One load run against a freshly started server; appends a row to runs.csv.
RUNS_CSV="$OUT/runs.csv"
echo "rep,server,fileset,mode,requests,req_per_s,server_cpu_s,cpu_s_per_100k,user_s_per_100k,sys_s_per_100k,server_core_busy_pct,load_core_busy_pct" > "$RUNS_CSV"
measure() {
    local rep=$1 server=$2 fileset=$3 mode=$4
    "start_$server"
    wait_port
    # Warm up (file caches, page cache) for one second.
    taskset -c "$LOAD_CPU" wrk -t1 -c$CONNS -d1s "http://127.0.0.1:$PORT/1k.bin" > /dev/null
    local t0 t1 s0 s1 l0 l1 reqs rps
    t0=$(cpu_ticks); s0=$(cpu_jiffies "$SERVER_CPU"); l0=$(cpu_jiffies "$LOAD_CPU")
    read -r reqs rps < <(run_load "$mode" "$fileset")
    t1=$(cpu_ticks); s1=$(cpu_jiffies "$SERVER_CPU"); l1=$(cpu_jiffies "$LOAD_CPU")
    local cpu_s per100k user100k sys100k sbusy lbusy
    read -r cpu_s per100k user100k sys100k < <(cpu_per_100k "$t0" "$t1" "$reqs")
    sbusy=$(busy_pct "$s0" "$s1"); lbusy=$(busy_pct "$l0" "$l1")
    printf '%s %-9s %-10s %-9s %10s req/s  %9s requests  %7s cpu-s  %6s cpu-s/100k  cores busy: server %3s%% load %3s%%\n' \
        "rep$rep" "$server" "$fileset" "$mode" "$rps" "$reqs" "$cpu_s" "$per100k" "$sbusy" "$lbusy" >&2
    echo "$rep,$server,$fileset,$mode,$reqs,$rps,$cpu_s,$per100k,$user100k,$sys100k,$sbusy,$lbusy" >> "$RUNS_CSV"
    { cat "$WORK/load.cmd"; echo "# server: $server, repetition $rep ($(date -u +%Y-%m-%dT%H:%M:%SZ))"; cat "$WORK/load.out"; } \
        > "$OUT/$server-$fileset-$mode.txt"
    stop_server
}

SERVERS=(pagewire nginx h2o)
# Repetitions are interleaved (every server once per cell, then the next
# cell, then the next repetition) and the servers' order rotates, so a drift
# in the machine's speed — common on a shared VM — falls on all servers alike.
for rep in $(seq 1 "$REPS"); do
    for fileset in 1k microscape; do
        for mode in keepalive pipelined; do
            for i in 0 1 2; do
                measure "$rep" "${SERVERS[$(((i + rep - 1) % 3))]}" "$fileset" "$mode"
            done
        done
    done
done

declare -A MEM
for server in "${SERVERS[@]}"; do
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
    echo "Made by: bench/server/run.sh (DURATION=$DURATION REPS=$REPS IDLE_CONNS=$IDLE_CONNS), finished $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); server on CPU $SERVER_CPU, load generator on CPU $LOAD_CPU"
    echo "Versions: $("$PAGEWIRE" --version), $(nginx -v 2>&1 | sed 's/.*: //'), $(h2o --version | head -1), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), h2load $(h2load --version | head -1 | awk '{print $2}')"
    echo "Files: 1k = /1k.bin (1024 random bytes); microscape = the $NPATHS files of \`pagewire site microscape\` (seed 1997) in rotation."
    echo "Keep-alive: wrk -t1 -c$CONNS -d${DURATION}s. Pipelined: h2load --h1 -m$STREAMS -c$CONNS -t1 -D $DURATION -H 'accept-encoding: identity'."
    echo "Each cell: the median of $REPS runs (interleaved across servers; every run in runs.csv)."
    echo "\"load core\": how busy the load generator's core was — at ~100% the generator, not the server, sets the rate."
    echo
    python3 "$ROOT/bench/server/report.py" "$RUNS_CSV" "${MEM[pagewire]:-nan}" "${MEM[nginx]:-nan}" "${MEM[h2o]:-nan}"
} | tee "$OUT/results.md"
