#!/usr/bin/env bash
# bench/h1-syscalls.sh — system calls per request of pagewire, h2o and nginx
# under bench/perf.sh's HTTP/1.1 keep-alive load (wrk -t1 -c50, 1 KB file,
# server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU), counted by the kernel's
# syscall tracepoints (`perf stat -e 'syscalls:sys_enter_*' -p PID`, cheap
# enough not to change the load the way strace would), with the server's
# context switches and CPU seconds per 100k requests of the same run.
#
# Usage: bench/h1-syscalls.sh   (env: PAGEWIRE (binary; default
#        target/release/pagewire), SECONDS_LOAD (4), ROUNDS (1), SERVERS
#        ("pagewire h2o nginx"; also "floor": bench/server/floor.c, built with
#        gcc), COUNT (1; 0: no perf, CPU per request only), SERVER_CPU (0),
#        LOAD_CPU (1), CSV (a file to write the rounds to, as
#        server,round,requests,cpu_s_per_100k))
# Prints one table: per server, each system call made at least 0.01 times
# per request. The servers' order rotates by one each round (so no server
# always follows the same one). With ROUNDS >= 2 it ends with a summary: per
# server the min and median CPU s per 100k requests over the rounds, and
# pagewire's median over each other server's with a 95 % bootstrap interval
# (each server's rounds resampled, 2,000 times, fixed seed): where the
# interval holds a goal's ratio, this many rounds cannot tell the two sides
# of it apart on this machine. Needs perf (linux-perf), wrk, h2o, nginx-light; run as root or
# with kernel.perf_event_paranoid <= 1. Bounded: each load run has a time
# bound and a `timeout`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
SECONDS_LOAD=${SECONDS_LOAD:-4}
ROUNDS=${ROUNDS:-1}
SERVERS=${SERVERS:-pagewire h2o nginx}
COUNT=${COUNT:-1}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
PAGEWIRE=${PAGEWIRE:-$ROOT/target/release/pagewire}
for tool in perf wrk h2o nginx; do
    command -v "$tool" > /dev/null || { echo "bench/h1-syscalls.sh: $tool is missing (apt-get install linux-perf wrk h2o nginx-light)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pagewire-syscalls.XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2> /dev/null || true; wait "$PID" 2> /dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
cp "$PAGEWIRE" "$WORK/pagewire"
mkdir -p "$WORK/www"
write_1k "$WORK/www/1k.bin"
chmod -R a+rX "$WORK"

start() {
    port=$((20000 + RANDOM % 10000))
    while ss -Htan "sport = :$port" | grep -q .; do port=$((port + 1)); done
    case $1 in
    pagewire)
        taskset -c "$SERVER_CPU" "$WORK/pagewire" serve --root "$WORK/www" --addr "127.0.0.1:$port" \
            --threads 1 > "$WORK/server.out" 2>&1 &
        ;;
    h2o)
        write_h2o_conf "$WORK/h2o.conf" "$port" "$WORK/www"
        taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o.conf" > "$WORK/server.out" 2>&1 &
        ;;
    floor)
        # The kernel's floor: bench/server/floor.c (recv and send, no parsing).
        [ -x "$WORK/floor" ] || gcc -O2 -o "$WORK/floor" "$ROOT/bench/server/floor.c"
        taskset -c "$SERVER_CPU" "$WORK/floor" "$port" > "$WORK/server.out" 2>&1 &
        ;;
    nginx)
        mkdir -p "$WORK/nginx/logs"
        cat > "$WORK/nginx/nginx.conf" <<NGX
worker_processes 1;
daemon off;
master_process off;
error_log $WORK/nginx/logs/error.log warn;
pid $WORK/nginx/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on; tcp_nopush on; tcp_nodelay on;
    keepalive_requests 100000000; keepalive_timeout 60s;
    open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s;
    types { application/octet-stream bin; }
    server { listen 127.0.0.1:$port backlog=4096; root $WORK/www; }
}
NGX
        taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" > "$WORK/server.out" 2>&1 &
        ;;
    esac
    PID=$!
    for _ in $(seq 1 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/1k.bin")" = 200 ] && return 0
        sleep 0.1
    done
    echo "bench/h1-syscalls.sh: $1 did not start" >&2
    cat "$WORK/server.out" >&2
    return 1
}

# Every process of the server (h2o forks helpers; the ones that serve are
# counted by their CPU time and system calls alike).
all_pids() { echo "$PID" $(pgrep -P "$PID" || true) | tr ' ' ','; }

echo "# bench/h1-syscalls.sh, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $("$WORK/pagewire" --version); wrk -t1 -c50 -d${SECONDS_LOAD}s, 1 KB file; per request"
printf '%-9s %5s %9s %8s %8s  %s\n' server round requests cpu/100k ctxsw/req "system calls per request"
read -r -a ORDER <<< "$SERVERS"
if [ -n "${CSV:-}" ]; then echo "server,round,requests,cpu_s_per_100k" > "$CSV"; fi
ROWS=$WORK/rows.csv
: > "$ROWS"
for round in $(seq 1 "$ROUNDS"); do
    for i in "${!ORDER[@]}"; do
        server=${ORDER[$(((i + round - 1) % ${#ORDER[@]}))]}
        start "$server"
        url=http://127.0.0.1:$port/1k.bin
        taskset -c "$LOAD_CPU" wrk -t1 -c50 -d1s "$url" > /dev/null 2>&1 || true # warm-up
        pids=$(all_pids)
        # shellcheck disable=SC2046
        t0=$(proc_ticks $(echo "$pids" | tr ',' ' '))
        # perf counts while wrk runs: the window is wrk's own.
        counting=(perf stat -x, -e 'syscalls:sys_enter_*' -e context-switches -p "$pids" -o "$WORK/perf.csv" --)
        # COUNT=0: CPU per request alone, without perf's tracepoints.
        [ "$COUNT" = 0 ] && counting=() && : > "$WORK/perf.csv"
        "${counting[@]}" \
            timeout $((SECONDS_LOAD + 20)) taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${SECONDS_LOAD}s" "$url" \
            > "$WORK/wrk.out" 2>&1 || true
        # shellcheck disable=SC2046
        t1=$(proc_ticks $(echo "$pids" | tr ',' ' '))
        reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
        read -r _ per100k _ _ < <(cpu_per_100k "$t0" "$t1" "$reqs")
        calls=$(awk -F, -v n="$reqs" '
            $3 ~ /^syscalls:sys_enter_/ && $1 + 0 > 0 {
                name = $3; sub("syscalls:sys_enter_", "", name)
                if ($1 / n >= 0.01) printf "%s %.2f, ", name, $1 / n }
            $3 == "context-switches" { cs = $1 }
            END { if (cs != "") printf "|%.3f", cs / n; else printf "|-" }' "$WORK/perf.csv")
        printf '%-9s %5s %9s %8s %8s  %s\n' "$server" "$round" "$reqs" "$per100k" "${calls##*|}" "${calls%|*}"
        echo "$server,$round,${reqs:-0},$per100k" >> "$ROWS"
        kill "$PID" 2> /dev/null || true
        wait "$PID" 2> /dev/null || true
        PID=
    done
done
if [ -n "${CSV:-}" ]; then cat "$ROWS" >> "$CSV"; fi
if [ "$ROUNDS" -lt 2 ]; then exit 0; fi
python3 - "$ROWS" <<'PY'
import csv, random, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[3] not in ("nan", "")]
per = {}
for server, _, _, cost in rows:
    per.setdefault(server, []).append(float(cost))
print("# over the rounds, CPU s per 100k requests:")
for s, v in per.items():
    print(f"#   {s:<9} rounds {len(v):>3}  min {min(v):.3f}  median {statistics.median(v):.3f}  max {max(v):.3f}")
if "pagewire" in per:
    rng = random.Random(1)
    p = per["pagewire"]
    for s, v in per.items():
        if s == "pagewire":
            continue
        boot = sorted(
            statistics.median(rng.choices(p, k=len(p))) / statistics.median(rng.choices(v, k=len(v)))
            for _ in range(2000))
        print(f"# pagewire / {s}: medians {statistics.median(p) / statistics.median(v):.3f} "
              f"(95 % bootstrap interval {boot[50]:.3f}-{boot[1949]:.3f}), minimums {min(p) / min(v):.3f}")
PY
