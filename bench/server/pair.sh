#!/usr/bin/env bash
# bench/server/pair.sh — pagewire and h2o, alternately, on the 1 KB file with
# keep-alive (wrk -t1 -c50), each run on a freshly started server; prints
# requests/s and the server's user and system CPU seconds per 100,000
# requests for every run. A quick check of the one cell of bench/server/run.sh
# where the two are close, with the split that explains why (most of each
# server's time is the kernel's TCP path).
#
# Usage: bench/server/pair.sh [PAIRS]       (default 5; env: DURATION=5, HOG, PAGEWIRE)
#   HOG=1  also runs a CPU-bound loop on the server's core (a machine that is
#          not quiet): shows whether a server degrades worse than the other.
# Bounded: about PAIRS x 2 x (DURATION + 3) s. Needs nginx-free ports 18090/18091.
set -euo pipefail
PAIRS=${1:-5}
DURATION=${DURATION:-5}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
for t in h2o wrk python3; do
    command -v "$t" >/dev/null || { echo "pair.sh: $t is missing (bench/server/run.sh installs it)" >&2; exit 2; }
done
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi

WORK=$(mktemp -d /tmp/pagewire-pair.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www"
write_1k "$WORK/www/1k.bin"
chmod -R a+rX "$WORK"
write_h2o_conf "$WORK/h2o.conf" 18091 "$WORK/www"

if [ "${HOG:-0}" = 1 ]; then
    taskset -c "$SERVER_CPU" timeout $((PAIRS * 2 * (DURATION + 3) + 10)) sh -c 'while :; do :; done' &
    PIDS+=($!)
    echo "# a CPU-bound loop shares CPU $SERVER_CPU with the server"
fi

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) wrk -t1 -c50 -d${DURATION}s /1k.bin, server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU"
for i in $(seq 1 "$PAIRS"); do
    for srv in pagewire h2o; do
        if [ "$srv" = pagewire ]; then
            taskset -c "$SERVER_CPU" "$PAGEWIRE" serve --root "$WORK/www" --addr 127.0.0.1:18090 --threads 1 >/dev/null 2>&1 &
            port=18090
        else
            taskset -c "$SERVER_CPU" h2o -c "$WORK/h2o.conf" >/dev/null 2>&1 &
            port=18091
        fi
        main=$!
        PIDS+=("$main")
        for _ in $(seq 1 50); do
            curl -s -o /dev/null "http://127.0.0.1:$port/1k.bin" && break
            sleep 0.1
        done
        tree="$main $(pgrep -P "$main" | tr '\n' ' ' || true)"
        taskset -c "$LOAD_CPU" wrk -t1 -c50 -d1s "http://127.0.0.1:$port/1k.bin" >/dev/null
        # shellcheck disable=SC2086
        a=$(proc_ticks $tree)
        taskset -c "$LOAD_CPU" wrk -t1 -c50 -d"${DURATION}s" "http://127.0.0.1:$port/1k.bin" > "$WORK/wrk.out"
        # shellcheck disable=SC2086
        b=$(proc_ticks $tree)
        n=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
        rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.out")
        read -r _ per100k user100k sys100k < <(cpu_per_100k "$a" "$b" "$n")
        printf '%-8s %9.0f req/s   CPU s/100k: user %s + sys %s = %s\n' "$srv" "$rps" "$user100k" "$sys100k" "$per100k"
        # shellcheck disable=SC2086
        kill $tree 2>/dev/null || true
        wait "$main" 2>/dev/null || true
        sleep 0.3
    done
done
