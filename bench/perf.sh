#!/usr/bin/env bash
# bench/perf.sh — the server's performance beside nginx and h2o, in one go.
#
# On the same 1 KB file, with each server pinned to CPU $SERVER_CPU and every
# load generator to CPU $LOAD_CPU (taskset), in $ROUNDS interleaved rounds
# (every round starts each server afresh, and the servers' order rotates):
#   * HTTP/2 over TLS: h2load -c10 -m1 / -m10 / -m100 (count-bounded);
#   * HTTP/1.1 keep-alive: wrk -t1 -c50 (time-bounded), also against
#     bench/server/floor.c (the kernel's floor: one recv and one send per
#     request, no parsing), a reference rather than a peer;
#   * HTTP/1.1 pipelined: h2load --h1 -m16 -c50 (time-bounded);
#   each with requests/s and the server's CPU seconds per 100,000 requests
#   (utime + stime of its processes, /proc/PID/stat, and the two apart);
#   * memory per idle keep-alive connection: $IDLE_CONNS connections that each
#     completed one request, RSS delta / connections (bench/server/hold_idle.py);
#   * the load generators' own cost: CPU microseconds per GET of
#     `pagewire load` at a fixed rate ($LOADGEN_RATE req/s, open model) beside
#     h2load --h1 --rps at the same rate and connections (the open-loop peer;
#     wrk2's `wrk -R` is not packaged in Debian, whose wrk 4.1 has no -R),
#     and closed (maximum rate) beside wrk and h2load --h1, against
#     pagewire's HTTP/1.1 server; wrk paced below saturation by
#     bench/wrk-pace.lua (its delay() hook: a closed loop with think time,
#     the nearest wrk 4.1 comes to wrk2's -R), then `pagewire load --rate`
#     at the rate that wrk run achieved (the like-for-like pair at a fixed
#     rate); then where each generator saturates one core: the open-loop
#     pair at $LOADGEN_SWEEP req/s, and the closed maximum, each with its
#     core's busy share (CPU s / wall s).
# Prints one table of ratios and writes everything (raw generator outputs,
# runs.csv, perf.json with the commit, results.md) to $OUT
# (default docs/perf-results/DATE).
#
# Bounded: every load run has its own count or time bound and a `timeout`;
# at defaults the whole script takes about 5-10 minutes (< 15); the paced wrk
# and rate-matched runs add 2 x $ROUNDS x $H1_SECONDS s (30 s at defaults).
#
# Usage: bench/perf.sh   (env: PAGEWIRE, COMMIT, DIRTY, OUT, ROUNDS, H1_SECONDS, IDLE_CONNS,
#                          LOADGEN_RATE, LOADGEN_SWEEP, SERVER_CPU, LOAD_CPU)
# Peers: installs nginx-light, h2o, wrk, nghttp2-client when missing (needs
# root); otherwise: apt-get install nginx-light h2o wrk nghttp2-client gcc.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
ROUNDS=${ROUNDS:-3}
H1_SECONDS=${H1_SECONDS:-5}
IDLE_CONNS=${IDLE_CONNS:-10000}
LOADGEN_RATE=${LOADGEN_RATE:-20000}
# Offered rates of the saturation sweep (one run each per open-loop generator).
LOADGEN_SWEEP=${LOADGEN_SWEEP:-40000 60000 80000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
H2_CONNS=10
# Requests per HTTP/2 run, by streams per connection (-m).
declare -A H2_N=([1]=20000 [10]=60000 [100]=100000)
STAMP=$(date -u +%Y-%m-%d-%H%M)
OUT=${OUT:-$ROOT/docs/perf-results/$STAMP}
mkdir -p "$OUT/raw"
T_START=$(date +%s)

need=()
for p in nginx-light h2o wrk nghttp2-client python3 gcc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "bench/perf.sh: missing ${need[*]}; install them: apt-get install ${need[*]}" >&2
        exit 1
    fi
    echo "installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

WORK=$(mktemp -d /tmp/pagewire-perf.XXXXXX)
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire --locked)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi
# A copy, so a rebuild during the run cannot change the binary underneath.
cp "$PAGEWIRE" "$WORK/pagewire"
PW=$WORK/pagewire
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"

WWW=$WORK/www
mkdir -p "$WWW"
write_1k "$WWW/1k.bin"
chmod -R a+rX "$WORK"
# The certificate every server uses (pagewire makes its CA on first start).
CERTS=$WORK/certs

# Ports (next_port, bench/server/common.sh) start below the kernel's
# ephemeral range.
PORT=$((20000 + RANDOM % 10000))

# start_SERVER: sets H1 and H2 (ports) and PIDS (the processes to account).
start_pagewire() {
    next_port; H1=$PORT
    taskset -c "$SERVER_CPU" "$PW" serve --root "$WWW" --addr "127.0.0.1:$H1" --threads 1 \
        > "$WORK/pw1.out" 2> "$WORK/pw1.err" &
    PIDS=($!)
    next_port; H2=$PORT
    taskset -c "$SERVER_CPU" "$PW" serve --root "$WWW" --addr "127.0.0.1:$H2" --threads 1 \
        --tls "$CERTS" --no-h3 > "$WORK/pw2.out" 2> "$WORK/pw2.err" &
    PIDS+=($!)
}
start_nginx() {
    next_port; H1=$PORT; next_port; H2=$PORT
    rm -rf "$WORK/nginx"; mkdir -p "$WORK/nginx/logs"
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
    http2_max_concurrent_streams 256;
    open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;
    etag on; gzip off;
    types { application/octet-stream bin; }
    ssl_certificate $CERTS/server.pem; ssl_certificate_key $CERTS/server-key.pem;
    ssl_protocols TLSv1.3;
    server { listen 127.0.0.1:$H1 backlog=4096; root $WWW; }
    server { listen 127.0.0.1:$H2 ssl http2 backlog=4096; root $WWW; }
}
NGX
    taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2> "$WORK/nginx.err" &
    PIDS=($!)
}
start_h2o() {
    next_port; H1=$PORT; next_port; H2=$PORT
    mkdir -p "$WORK/h2o"
    cat > "$WORK/h2o/h2o.conf" <<H2O
listen:
  host: 127.0.0.1
  port: $H1
listen:
  host: 127.0.0.1
  port: $H2
  ssl:
    certificate-file: $CERTS/server.pem
    key-file: $CERTS/server-key.pem
    min-version: TLSv1.3
num-threads: 1
max-connections: 20000
http1-request-timeout: 60
http2-max-concurrent-requests-per-connection: 256
file.send-compressed: OFF
hosts:
  default:
    paths:
      /:
        file.dir: $WWW
H2O
    taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o/h2o.conf" > "$WORK/h2o.out" 2>&1 &
    PIDS=($!)
}
# Every process of the server: the started ones and their descendants.
server_pids() {
    local pids=("${PIDS[@]}") frontier=("${PIDS[@]}") next
    while [ ${#frontier[@]} -gt 0 ]; do
        next=()
        for p in "${frontier[@]}"; do
            for c in $(pgrep -P "$p" || true); do pids+=("$c"); next+=("$c"); done
        done
        frontier=("${next[@]}")
    done
    echo "${pids[@]}"
}
wait_ready() {
    for _ in $(seq 1 100); do
        for p in "${PIDS[@]}"; do
            kill -0 "$p" 2>/dev/null || { echo "server exited at start:" >&2; tail -n 5 "$WORK"/*.err "$WORK"/*.out >&2 || true; return 1; }
        done
        if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$H1/1k.bin")" = 200 ] &&
            { [ -z "$H2" ] || [ "$(curl -sk --http2 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$H2/1k.bin")" = 200 ]; }; then
            return 0
        fi
        sleep 0.1
    done
    echo "server did not start" >&2
    return 1
}
# start SERVER: starts it and waits until it answers; a server that exits at
# start (a port taken between the check and its bind) is tried again on
# other ports, up to three times.
start() {
    local attempt
    for attempt in 1 2 3; do
        "start_$1"
        if wait_ready; then return 0; fi
        stop_server
        echo "bench/perf.sh: $1 did not start (attempt $attempt)" >&2
    done
    return 1
}
# The kernel's floor for the keep-alive cell (HTTP/1.1 only, no TLS port).
start_floor() {
    [ -x "$WORK/floor" ] || gcc -O2 -o "$WORK/floor" "$ROOT/bench/server/floor.c"
    next_port; H1=$PORT; H2=
    taskset -c "$SERVER_CPU" "$WORK/floor" "$H1" > "$WORK/floor.out" 2>&1 &
    PIDS=($!)
}
stop_server() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}

# ---- one measured load run ----------------------------------------------------
RUNS=$OUT/runs.csv
echo "round,server,cell,requests,req_per_s,server_cpu_s,cpu_s_per_100k,load_core_busy_pct,note,user_s_per_100k,sys_s_per_100k,server_core_steal_pct" > "$RUNS"
cpu_jiffies() {
    awk -v c="cpu$1" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}
# steal_jiffies CPU -> "STEAL TOTAL": time the hypervisor gave this virtual
# CPU's turn to someone else (/proc/stat's 8th counter), and all of its time.
steal_jiffies() {
    awk -v c="cpu$1" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t}' /proc/stat
}
busy_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " ");
        t = y[2] - x[2]; printf "%.0f", (t > 0) ? 100 * (y[1] - x[1]) / t : 0}'
}
# load CELL -> runs the generator for CELL into $WORK/load.out; prints "REQS RPS NOTE"
load() {
    local cell=$1 out=$WORK/load.out
    case $cell in
    h1-keepalive)
        echo "taskset -c $LOAD_CPU wrk -t1 -c50 -d${H1_SECONDS}s http://127.0.0.1:PORT/1k.bin" > "$WORK/load.cmd"
        timeout $((H1_SECONDS + 20)) taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${H1_SECONDS}s" "http://127.0.0.1:$H1/1k.bin" > "$out" 2>&1 || true
        local reqs rps note=ok
        reqs=$(awk '/requests in/ {print $1}' "$out")
        rps=$(awk '/Requests\/sec/ {print $2}' "$out")
        grep -qE "Non-2xx|Socket errors" "$out" && note=errors
        echo "${reqs:-0} ${rps:-0} $note"
        ;;
    h1-pipelined)
        echo "taskset -c $LOAD_CPU h2load --h1 -m16 -c50 -t1 -D $H1_SECONDS http://127.0.0.1:PORT/1k.bin" > "$WORK/load.cmd"
        timeout $((H1_SECONDS + 20)) taskset -c "$LOAD_CPU" h2load --h1 -m16 -c50 -t1 -D "$H1_SECONDS" \
            "http://127.0.0.1:$H1/1k.bin" > "$out" 2>&1 || true
        h2load_result "$out"
        ;;
    h2-m*)
        local m=${cell#h2-m} n
        n=${H2_N[$m]}
        echo "taskset -c $LOAD_CPU h2load -c$H2_CONNS -m$m -n $n -t1 https://127.0.0.1:PORT/1k.bin" > "$WORK/load.cmd"
        timeout 60 taskset -c "$LOAD_CPU" h2load -c"$H2_CONNS" -m"$m" -n "$n" -t1 \
            "https://127.0.0.1:$H2/1k.bin" > "$out" 2>&1 || true
        h2load_result "$out"
        ;;
    esac
}
# h2load's "requests: ... N succeeded" and "finished in ..., R req/s"; any
# failed, errored or non-2xx request marks the run.
h2load_result() {
    local reqs rps failed errored non2xx note=ok
    reqs=$(awk '/^requests:/ {print $8}' "$1")
    rps=$(awk '/^finished in/ {print $4}' "$1")
    failed=$(awk '/^requests:/ {print $10}' "$1")
    errored=$(awk '/^requests:/ {print $12}' "$1")
    non2xx=$(awk '/^status codes:/ {print $5 + $7 + $9}' "$1")
    if [ "${failed:-0}" != 0 ] || [ "${errored:-0}" != 0 ] || [ "${non2xx:-0}" != 0 ] || [ -z "$reqs" ]; then
        note=errors
    fi
    echo "${reqs:-0} ${rps:-0} $note"
}
measure() {
    local round=$1 server=$2 cell=$3 t0 t1 l0 l1 s0 s1 reqs rps note cpu per100k u100k s100k busy steal
    # shellcheck disable=SC2046
    t0=$(proc_ticks $(server_pids)); l0=$(cpu_jiffies "$LOAD_CPU"); s0=$(steal_jiffies "$SERVER_CPU")
    read -r reqs rps note < <(load "$cell")
    # shellcheck disable=SC2046
    t1=$(proc_ticks $(server_pids)); l1=$(cpu_jiffies "$LOAD_CPU"); s1=$(steal_jiffies "$SERVER_CPU")
    read -r cpu per100k u100k s100k < <(cpu_per_100k "$t0" "$t1" "$reqs")
    busy=$(busy_pct "$l0" "$l1")
    steal=$(busy_pct "$s0" "$s1")
    printf 'round %s %-9s %-13s %10s req/s %8s requests %6s cpu-s %7s cpu-s/100k  load core %3s%%  %s\n' \
        "$round" "$server" "$cell" "$rps" "$reqs" "$cpu" "$per100k" "$busy" "$note" >&2
    echo "$round,$server,$cell,$reqs,$rps,$cpu,$per100k,$busy,$note,$u100k,$s100k,$steal" >> "$RUNS"
    { cat "$WORK/load.cmd"; echo "# $server, round $round, $(date -u +%FT%TZ)"; cat "$WORK/load.out"; } \
        > "$OUT/raw/$server-$cell-round$round.txt"
}

echo "bench/perf.sh: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# Makes the certificates (pagewire's CA) once.
start pagewire; stop_server

SERVERS=(pagewire nginx h2o)
CELLS=(h2-m1 h2-m10 h2-m100 h1-keepalive h1-pipelined)
# The floor takes its turn in the rotation, in the keep-alive cell only.
ROTATION=(pagewire nginx h2o floor)
for round in $(seq 1 "$ROUNDS"); do
    for i in 0 1 2 3; do
        server=${ROTATION[$(((i + round - 1) % 4))]}
        start "$server"
        cells=("${CELLS[@]}")
        if [ "$server" = floor ]; then
            cells=(h1-keepalive)
        else
            # Warm-up: one short run of each protocol (caches, TLS keys).
            taskset -c "$LOAD_CPU" h2load -c10 -m10 -n 5000 -t1 "https://127.0.0.1:$H2/1k.bin" > /dev/null 2>&1 || true
        fi
        taskset -c "$LOAD_CPU" wrk -t1 -c50 -d1s "http://127.0.0.1:$H1/1k.bin" > /dev/null 2>&1 || true
        for cell in "${cells[@]}"; do measure "$round" "$server" "$cell"; done
        stop_server
    done
done

# ---- idle keep-alive connections -------------------------------------------------
IDLE=$OUT/idle.csv
echo "round,server,conns,rss_before_kb,rss_after_kb,bytes_per_conn" > "$IDLE"
for round in 1; do
    for server in "${SERVERS[@]}"; do
        start "$server"
        # pagewire's HTTP/1 process alone (the TLS one holds no connections).
        pids=$(if [ "$server" = pagewire ]; then echo "${PIDS[0]}"; else server_pids | tr ' ' ','; fi)
        line=$(timeout 120 python3 "$ROOT/bench/server/hold_idle.py" 127.0.0.1 "$H1" /1k.bin "$IDLE_CONNS" "$pids" 2>&1) || line="failed: $line"
        echo "idle $server: $line" >&2
        echo "$line" > "$OUT/raw/$server-idle-round$round.txt"
        echo "$round,$server,$(echo "$line" | sed -n 's/conns=\([0-9]*\) rss_before_kb=\([0-9]*\) rss_after_kb=\([0-9]*\) per_conn_bytes=\([0-9]*\).*/\1,\2,\3,\4/p')" >> "$IDLE"
        stop_server
    done
done

# ---- the load generators' cost ---------------------------------------------------
GEN=$OUT/loadgen.csv
echo "round,generator,requests,req_per_s,gen_cpu_s,cpu_us_per_get,wall_s,offered" > "$GEN"
# gen_run NAME ROUND OFFERED CMD... : runs CMD on the load core under
# /usr/bin/time (the CPU is the generator's utime + stime, as /proc/PID/stat
# counts it, reaped by time); OFFERED is the fixed rate, or "max" (closed).
gen_run() {
    local name=$1 round=$2 offered=$3
    shift 3
    /usr/bin/time -f "gen-cpu %U %S %e" -o "$WORK/time.out" timeout 40 taskset -c "$LOAD_CPU" "$@" > "$WORK/gen.out" 2> "$WORK/gen.err" || true
    local reqs rps cpu
    case ${name#sweep-} in
    wrk*) reqs=$(awk '/requests in/ {print $1}' "$WORK/gen.out"); rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/gen.out") ;;
    h2load*) reqs=$(awk '/^requests:/ {print $8}' "$WORK/gen.out"); rps=$(awk '/^finished in/ {print $4}' "$WORK/gen.out") ;;
    pagewire*)
        reqs=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['gets'] + j.get('gets_outside_window', 0))" "$WORK/gen.out" 2>/dev/null || echo 0)
        rps=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%.0f' % j['gets_per_second'])" "$WORK/gen.out" 2>/dev/null || echo 0)
        ;;
    esac
    cpu=$(awk '/gen-cpu/ {print $2 + $3}' "$WORK/time.out")
    local us wall
    wall=$(awk '/gen-cpu/ {print $4}' "$WORK/time.out")
    us=$(awk -v c="$cpu" -v n="${reqs:-0}" 'BEGIN {if (n > 0) printf "%.2f", c / n * 1e6; else print "nan"}')
    printf 'loadgen round %s %-20s %10s req/s %8s GETs %6s cpu-s %7s us/GET\n' "$round" "$name" "$rps" "$reqs" "$cpu" "$us" >&2
    echo "$round,$name,${reqs:-0},${rps:-0},$cpu,$us,${wall:-nan},$offered" >> "$GEN"
    { echo "# $*"; cat "$WORK/gen.out" "$WORK/gen.err" "$WORK/time.out"; } > "$OUT/raw/loadgen-$name-round$round.txt"
}
start pagewire
URL="http://127.0.0.1:$H1/1k.bin"
# A copy, as for the binary: the raw outputs name the script's path.
cp "$ROOT/bench/wrk-pace.lua" "$WORK/wrk-pace.lua"
# h2load's --rps is per client: the same total over the same 50 connections.
rps_per_conn() { awk -v r="$1" 'BEGIN {printf "%g", r / 50}'; }
for round in $(seq 1 "$ROUNDS"); do
    gen_run "pagewire-load-rate$LOADGEN_RATE" "$round" "$LOADGEN_RATE" "$PW" load "$URL" -c 50 -d "${H1_SECONDS}s" --rate "$LOADGEN_RATE" --json
    gen_run "h2load-h1-rate$LOADGEN_RATE" "$round" "$LOADGEN_RATE" h2load --h1 -c50 -m1 -t1 --rps="$(rps_per_conn "$LOADGEN_RATE")" -D "$H1_SECONDS" "$URL"
    gen_run pagewire-load "$round" max "$PW" load "$URL" -c 50 -d "${H1_SECONDS}s" --json
    gen_run wrk "$round" max wrk -t1 -c50 -d"${H1_SECONDS}s" "$URL"
    gen_run h2load-h1 "$round" max h2load --h1 -c50 -m1 -t1 -D "$H1_SECONDS" "$URL"
    # Like for like at a fixed rate: wrk paced below saturation (its rate
    # cannot be set exactly), then pagewire load at the rate wrk achieved,
    # right after it, on the same server and connections.
    gen_run wrk-paced "$round" paced wrk -t1 -c50 -d"${H1_SECONDS}s" -s "$WORK/wrk-pace.lua" "$URL"
    matched=$(tail -n 1 "$GEN" | awk -F, '{printf "%.0f", $4}')
    if [ "${matched:-0}" -gt 0 ]; then
        gen_run pagewire-load-matched "$round" "$matched" "$PW" load "$URL" -c 50 -d "${H1_SECONDS}s" --rate "$matched" --json
    else
        echo "loadgen round $round: wrk-paced reported no rate; no pagewire-load-matched run" >&2
    fi
done
# Saturation sweep: one run per rate and open-loop generator, interleaved.
for rate in $LOADGEN_SWEEP; do
    gen_run "sweep-pagewire-load-rate$rate" sweep "$rate" "$PW" load "$URL" -c 50 -d "${H1_SECONDS}s" --rate "$rate" --json
    gen_run "sweep-h2load-h1-rate$rate" sweep "$rate" h2load --h1 -c50 -m1 -t1 --rps="$(rps_per_conn "$rate")" -D "$H1_SECONDS" "$URL"
done
stop_server

# ---- report ---------------------------------------------------------------------
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
# COMMIT/DIRTY: the commit the binary was built from, when it is not the checkout's HEAD.
COMMIT=${COMMIT:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)}
DIRTY=${DIRTY:-$(if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then echo true; else echo false; fi)}
python3 "$ROOT/bench/perf_report.py" "$OUT" \
    --commit "$COMMIT" --dirty "$DIRTY" --load-before "$LOAD_BEFORE" --load-after "$LOAD_AFTER" \
    --versions "$("$PW" --version), $(nginx -v 2>&1 | sed 's/.*: //'), $(h2o --version | head -1), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), h2load $(h2load --version | head -1 | awk '{print $2}')" \
    --machine "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)" \
    --settings "ROUNDS=$ROUNDS H1_SECONDS=$H1_SECONDS IDLE_CONNS=$IDLE_CONNS LOADGEN_RATE=$LOADGEN_RATE LOADGEN_SWEEP=${LOADGEN_SWEEP// /,} SERVER_CPU=$SERVER_CPU LOAD_CPU=$LOAD_CPU" \
    --seconds $(($(date +%s) - T_START)) | tee "$OUT/results.md"
