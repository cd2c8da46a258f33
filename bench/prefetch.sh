#!/usr/bin/env bash
# Speed of the prefetch simulator (paper 003 §8).
#
#   1. one parameter point over a 1,000,000-line log, built by
#      `pagewire prefetch synth-log` from time-shifted copies of the EPA log
#      (target: under 5 s, read + parse + train + simulate);
#   2. the paper's whole sweep (p 0..1.1 step 0.1 × w 2..10 × i 1,2,all = 324
#      points, for both models = 648 simulations) over the EPA log
#      (target: under 120 s).
#
# Usage: bench/prefetch.sh [REPS]   (env: LOG=another CLF log, plain or gzip;
#        default data/logs/epa-http.log.gz; CARGO_TARGET_DIR, PAGEWIRE=prebuilt binary)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
LOG=${LOG:-data/logs/epa-http.log.gz}
[ -f "$LOG" ] || { echo "bench/prefetch.sh: no log at $LOG" >&2; exit 1; }
if [ -z "${PAGEWIRE:-}" ]; then
    cargo build --release -q -p pagewire
    PAGEWIRE=${CARGO_TARGET_DIR:-target}/release/pagewire
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "# bench/prefetch.sh — $("$PAGEWIRE" --version), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
# Line count of the log's text (gzip or plain).
text() { if [ "$(head -c2 "$1" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then gzip -dc "$1"; else cat "$1"; fi; }
echo "# log: $LOG ($(wc -c <"$LOG") bytes, $(text "$LOG" | wc -l) lines)"

"$PAGEWIRE" prefetch synth-log --log "$LOG" --lines 1000000 --out "$TMP/epa-1m.log" 2>/dev/null
echo "# synthetic log: 1,000,000 lines ($(wc -c <"$TMP/epa-1m.log") bytes), time-shifted copies of the EPA log"

# Wall-clock seconds of a command (its stdout discarded).
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>"$TMP/stderr" || { cat "$TMP/stderr" >&2; return 1; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

report() { # name target_s times...
    local name=$1 target=$2
    shift 2
    local sorted best median
    sorted=$(printf '%s\n' "$@" | sort -g)
    best=$(echo "$sorted" | head -1)
    median=$(echo "$sorted" | sed -n "$(( ($# + 1) / 2 ))p")
    printf '%-58s best %7.2f s  median %7.2f s  target < %s s  %s\n' "$name" "$best" "$median" "$target" \
        "$(awk -v m="$median" -v t="$target" 'BEGIN { print (m < t) ? "OK" : "MISSED" }')"
}

one_point=(prefetch simulate --log "$TMP/epa-1m.log" --p 0.5 --w 4 --i all --model realistic --train 400000 --simulate rest --json)
sweep=(prefetch simulate --log "$LOG" --json)

times=()
for _ in $(seq "$REPS"); do times+=("$(wall "$PAGEWIRE" "${one_point[@]}")"); done
echo "# command: pagewire ${one_point[*]//"$TMP"/\$TMP}"
report "one point (w=4 p=0.5 i=all realistic), 1M lines" 5 "${times[@]}"

times=()
for _ in $(seq "$REPS"); do times+=("$(wall "$PAGEWIRE" "${sweep[@]}")"); done
echo "# command: pagewire ${sweep[*]}"
report "paper sweep, 324 points x 2 models, EPA log" 120 "${times[@]}"
