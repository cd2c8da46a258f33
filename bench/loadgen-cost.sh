#!/usr/bin/env bash
# bench/loadgen-cost.sh — the load generators' own cost, alone: bench/perf.sh's
# load-generator section without the servers' sections, for work on
# `pagewire load` (a few minutes instead of perf.sh's nine).
#
# pagewire's HTTP/1.1 server (1 KB file, one thread) on CPU $SERVER_CPU, every
# generator on CPU $LOAD_CPU, 50 connections, $ROUNDS interleaved rounds of:
#   pagewire load --rate R, h2load --h1 --rps R/50 (open loop, same rate),
#   pagewire load (closed), wrk -t1 (closed);
# then one run of each open-loop generator at every rate of $SWEEP. Prints, per
# run, req/s, CPU seconds (utime + stime of the generator, reaped by
# /usr/bin/time), CPU us per GET and the core's busy share (CPU s / wall s);
# then the medians. Bounded: every run has `timeout 40`; at defaults about
# 2 minutes.
#
# Usage: bench/loadgen-cost.sh PAGEWIRE_BINARY
#        (env: ROUNDS=3 SECONDS_PER_RUN=5 RATE=20000 SWEEP="40000 60000 80000"
#         SERVER_CPU=0 LOAD_CPU=1 OUT=file.csv)
set -euo pipefail
PW_SRC=${1:?usage: bench/loadgen-cost.sh PAGEWIRE_BINARY}
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
RATE=${RATE:-20000}
SWEEP=${SWEEP:-40000 60000 80000}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
for t in wrk h2load taskset /usr/bin/time curl; do
    command -v "$t" > /dev/null || { echo "bench/loadgen-cost.sh: needs $t (apt-get install wrk nghttp2-client time curl)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pagewire-lgcost.XXXXXX)
OUT=${OUT:-$WORK/loadgen.csv}
SRV=
cleanup() {
    if [ -n "$SRV" ]; then kill "$SRV" 2> /dev/null || true; wait "$SRV" 2> /dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
cp "$PW_SRC" "$WORK/pagewire"
PW=$WORK/pagewire
mkdir -p "$WORK/www"
head -c 1024 /dev/urandom > "$WORK/www/1k.bin"
ulimit -n "$(ulimit -Hn)"
PORT=$((30000 + RANDOM % 2000))
while ss -Htan "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done
taskset -c "$SERVER_CPU" "$PW" serve --root "$WORK/www" --addr "127.0.0.1:$PORT" --threads 1 > "$WORK/srv.out" 2>&1 &
SRV=$!
URL="http://127.0.0.1:$PORT/1k.bin"
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL")" = 200 ] && break
    sleep 0.1
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "round,generator,offered,requests,req_per_s,gen_cpu_s,wall_s,cpu_us_per_get,busy" > "$OUT"
run() {
    local name=$1 round=$2 offered=$3
    shift 3
    /usr/bin/time -f "gen-cpu %U %S %e" -o "$WORK/time.out" timeout 40 taskset -c "$LOAD_CPU" "$@" > "$WORK/gen.out" 2> "$WORK/gen.err" || true
    local reqs rps
    case $name in
    wrk) reqs=$(awk '/requests in/ {print $1}' "$WORK/gen.out"); rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/gen.out") ;;
    h2load*) reqs=$(awk '/^requests:/ {print $8}' "$WORK/gen.out"); rps=$(awk '/^finished in/ {print $4}' "$WORK/gen.out") ;;
    pagewire*)
        reqs=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['gets'] + j.get('gets_outside_window', 0))" "$WORK/gen.out" 2> /dev/null || echo 0)
        rps=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('%.0f' % j['gets_per_second'])" "$WORK/gen.out" 2> /dev/null || echo 0)
        ;;
    esac
    awk -v r="$round" -v g="$name" -v o="$offered" -v n="${reqs:-0}" -v rps="${rps:-0}" '/gen-cpu/ {
        c = $2 + $3; w = $4
        printf "%s,%s,%s,%s,%s,%.2f,%.2f,%s,%.3f\n", r, g, o, n, rps, c, w, (n > 0 ? sprintf("%.2f", c / n * 1e6) : "nan"), (w > 0 ? c / w : 0)
    }' "$WORK/time.out" | tee -a "$OUT"
}
for round in $(seq 1 "$ROUNDS"); do
    run "pagewire-load-rate$RATE" "$round" "$RATE" "$PW" load "$URL" -c 50 -d "${SECS}s" --rate "$RATE" --json
    run "h2load-h1-rate$RATE" "$round" "$RATE" h2load --h1 -c50 -m1 -t1 --rps="$(awk -v r="$RATE" 'BEGIN {printf "%g", r / 50}')" -D "$SECS" "$URL"
    run pagewire-load "$round" max "$PW" load "$URL" -c 50 -d "${SECS}s" --json
    run wrk "$round" max wrk -t1 -c50 -d"${SECS}s" "$URL"
done
for rate in $SWEEP; do
    run "pagewire-load-rate$rate" sweep "$rate" "$PW" load "$URL" -c 50 -d "${SECS}s" --rate "$rate" --json
    run "h2load-h1-rate$rate" sweep "$rate" h2load --h1 -c50 -m1 -t1 --rps="$(awk -v r="$rate" 'BEGIN {printf "%g", r / 50}')" -D "$SECS" "$URL"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["round"] != "sweep"]
print("\n| generator | offered | req/s | CPU us per GET (median; min) | core busy |")
print("|---|---:|---:|---:|---:|")
for g in dict.fromkeys(r["generator"] for r in rows):
    rs = [r for r in rows if r["generator"] == g]
    us = [float(r["cpu_us_per_get"]) for r in rs if r["cpu_us_per_get"] != "nan"]
    print(f"| {g} | {rs[0]['offered']} | {statistics.median(float(r['req_per_s']) for r in rs):,.0f} "
          f"| {statistics.median(us):.2f}; {min(us):.2f} | {statistics.median(float(r['busy']) for r in rs) * 100:.0f} % |")
EOF
