#!/usr/bin/env bash
# bench/loadgen-cost.sh — the load generators' own cost, alone: bench/perf.sh's
# load-generator section without the servers' sections, for work on
# `pagewire load` (a few minutes instead of perf.sh's nine).
#
# pagewire's HTTP/1.1 server (1 KB file, one thread) on CPU $SERVER_CPU, every
# generator on CPU $LOAD_CPU, 50 connections, $ROUNDS interleaved rounds of:
#   pagewire load --rate R, h2load --h1 --rps R/50 (open loop, same rate),
#   pagewire load (closed), wrk -t1 (closed),
#   wrk -t1 paced by bench/wrk-pace.lua (below saturation: a closed loop with
#   think time, the nearest wrk 4.1 comes to wrk2's -R), then pagewire load
#   --rate at the rate that wrk run achieved (the like-for-like pair);
# then one run of each open-loop generator at every rate of $SWEEP. Prints, per
# run, req/s, CPU seconds (utime + stime of the generator, reaped by
# /usr/bin/time), CPU us per GET and the core's busy share (CPU s / wall s);
# then the medians, and the paced pair's per-round ratio. Bounded: every run
# has `timeout 40`; at defaults about 3 minutes.
#
# Usage: bench/loadgen-cost.sh PAGEWIRE_BINARY
#        (env: ROUNDS=3 SECONDS_PER_RUN=5 RATE=20000 SWEEP="40000 60000 80000"
#         SERVER_CPU=0 LOAD_CPU=1 OUT=file.csv)
set -euo pipefail
PW_SRC=${1:?usage: bench/loadgen-cost.sh PAGEWIRE_BINARY}
PACE=$(cd "$(dirname "$0")" && pwd)/wrk-pace.lua
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
    wrk*) reqs=$(awk '/requests in/ {print $1}' "$WORK/gen.out"); rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/gen.out") ;;
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
    # Like for like at a fixed rate: wrk paced (its rate cannot be set
    # exactly), then pagewire load at the rate it achieved, right after it.
    run wrk-paced "$round" paced wrk -t1 -c50 -d"${SECS}s" -s "$PACE" "$URL"
    matched=$(tail -n 1 "$OUT" | awk -F, '{printf "%.0f", $5}')
    if [ "${matched:-0}" -gt 0 ]; then
        run pagewire-load-matched "$round" "$matched" "$PW" load "$URL" -c 50 -d "${SECS}s" --rate "$matched" --json
    else
        echo "round $round: wrk-paced reported no rate; no pagewire-load-matched run" >&2
    fi
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
    offs = {r["offered"] for r in rs}
    off = rs[0]["offered"] if len(offs) == 1 else f"{statistics.median(float(r['offered']) for r in rs):,.0f} (median)"
    print(f"| {g} | {off} | {statistics.median(float(r['req_per_s']) for r in rs):,.0f} "
          f"| {statistics.median(us):.2f}; {min(us):.2f} | {statistics.median(float(r['busy']) for r in rs) * 100:.0f} % |")
# The paced pair, round by round (each pair back to back at the same rate).
pairs = []
for rnd in dict.fromkeys(r["round"] for r in rows):
    by = {r["generator"]: r for r in rows if r["round"] == rnd}
    p, w = by.get("pagewire-load-matched"), by.get("wrk-paced")
    if p and w and p["cpu_us_per_get"] != "nan" and w["cpu_us_per_get"] != "nan":
        pairs.append(float(p["cpu_us_per_get"]) / float(w["cpu_us_per_get"]))
        print(f"round {rnd}: wrk paced {float(w['req_per_s']):,.0f} req/s {w['cpu_us_per_get']} us/GET, "
              f"pagewire load --rate {p['offered']} {float(p['req_per_s']):,.0f} req/s {p['cpu_us_per_get']} us/GET: {pairs[-1]:.2f}x")
if pairs:
    print(f"pagewire-load-matched / wrk-paced, CPU per GET: {statistics.median(pairs):.2f}x (median of {len(pairs)} per-round ratios)")
EOF
