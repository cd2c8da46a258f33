#!/usr/bin/env bash
# bench/profile.sh — where pagewire's server spends its CPU under one of
# bench/perf.sh's loads: `perf record` of the server process, then the top
# frames (self time, by symbol) as text.
#
# Usage: bench/profile.sh CELL [OUT]
#   CELL: h1-keepalive (wrk -t1 -c50) | h1-pipelined (h2load --h1 -m16 -c50)
#         | h2-m10 / h2-m100 (h2load -c10 -mN over TLS)
#   OUT:  where perf.data and the report go (default: a temporary directory,
#         the report is printed).
# env: PAGEWIRE (binary; default target/release/pagewire), SECONDS_LOAD (8),
#      SERVER_CPU (0), LOAD_CPU (1), TOP (40 frames).
# Needs perf (apt-get install linux-perf), wrk, h2load; run as root or with
# kernel.perf_event_paranoid <= 1. Bounded: the load runs SECONDS_LOAD
# seconds under `timeout`, the recording as long.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
CELL=${1:?usage: bench/profile.sh CELL [OUT]}
SECONDS_LOAD=${SECONDS_LOAD:-8}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
TOP=${TOP:-40}
PAGEWIRE=${PAGEWIRE:-$ROOT/target/release/pagewire}
for tool in perf wrk h2load; do
    command -v "$tool" > /dev/null || { echo "bench/profile.sh: $tool is missing (apt-get install linux-perf wrk nghttp2-client)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pagewire-profile.XXXXXX)
OUT=${2:-$WORK}
mkdir -p "$OUT"
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2> /dev/null && wait "$PID" 2> /dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)"
cp "$PAGEWIRE" "$WORK/pagewire"
mkdir -p "$WORK/www"
write_1k "$WORK/www/1k.bin"

port=$((20000 + RANDOM % 20000))
while ss -Htln "sport = :$port" | grep -q .; do port=$((port + 1)); done
case $CELL in
h2-*) tls=(--tls "$WORK/certs" --no-h3); url=https://127.0.0.1:$port/1k.bin ;;
*) tls=(); url=http://127.0.0.1:$port/1k.bin ;;
esac
taskset -c "$SERVER_CPU" "$WORK/pagewire" serve --root "$WORK/www" --addr "127.0.0.1:$port" \
    --threads 1 "${tls[@]}" > "$WORK/serve.out" 2> "$WORK/serve.err" &
PID=$!
for _ in $(seq 1 100); do
    [ "$(curl -sk -o /dev/null -w '%{http_code}' "$url")" = 200 ] && break
    sleep 0.1
done

load() {
    case $CELL in
    h1-keepalive) timeout $((SECONDS_LOAD + 20)) taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${1}s" "$url" ;;
    h1-pipelined) timeout $((SECONDS_LOAD + 20)) taskset -c "$LOAD_CPU" h2load --h1 -m16 -c50 -t1 -D "$1" "$url" ;;
    h2-m*) timeout $((SECONDS_LOAD + 20)) taskset -c "$LOAD_CPU" h2load -c10 -m"${CELL#h2-m}" -t1 -D "$1" "$url" ;;
    *) echo "bench/profile.sh: unknown cell $CELL" >&2; exit 2 ;;
    esac
}
load 1 > /dev/null 2>&1 || true # warm-up
load "$SECONDS_LOAD" > "$OUT/load.txt" 2>&1 &
LOADPID=$!
sleep 1
perf record -F 1999 -g -o "$OUT/perf.data" -p "$PID" -- sleep $((SECONDS_LOAD - 2)) 2> "$OUT/record.err"
wait "$LOADPID" || true
{
    echo "# bench/profile.sh $CELL, $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $("$WORK/pagewire" --version); load: $(grep -E 'Requests/sec|^finished in' "$OUT/load.txt" | head -1)"
    echo "# perf report --no-children --sort dso,symbol (self time, % of the server's samples)"
    perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio -g none --percent-limit 0.3 2> /dev/null |
        grep -E '^ +[0-9]' | sed 's/[ -]*$//' | head -n "$TOP"
    echo "# by binary:"
    perf report -i "$OUT/perf.data" --no-children --sort dso --stdio -g none 2> /dev/null |
        grep -E '^ +[0-9]' | head -n 5
} | tee "$OUT/top.txt"
