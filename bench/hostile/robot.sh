#!/usr/bin/env bash
# bench/hostile/robot.sh — hostile servers for the robot: a server
# that trickles a body, one that sends endless `100 Continue` heads, a deflate
# bomb, a reset in the middle of a body, and a well-behaved control, each
# fetched by `pagewire fetch` with its default limits. Prints, per probe, the
# wall time, the exit status, the robot's peak RSS and its error line (or,
# without one, its last warning).
#
# Loopback only (127.0.0.1); every fetch is bounded by `timeout LIMIT`, the
# server by its own lifetime.
#
# Usage: bench/hostile/robot.sh   (env: PAGEWIRE=path, LIMIT=200,
#        PROBES="ok trickle continue bomb bomb-asked bomb-object reset", BOMB_MIB=1024,
#        FETCH_FLAGS=... extra flags for every fetch)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIMIT=${LIMIT:-200}
PROBES=${PROBES:-"ok trickle continue bomb bomb-asked bomb-object reset"}
FETCH_FLAGS=${FETCH_FLAGS:-}
export BOMB_MIB=${BOMB_MIB:-1024}
if [ -z "${PAGEWIRE:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p pagewire)
    PAGEWIRE=${CARGO_TARGET_DIR:-$ROOT/target}/release/pagewire
fi
command -v /usr/bin/time >/dev/null || { echo "/usr/bin/time missing (apt-get install time)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/pagewire-hostile-robot.XXXXXX)
SRV=""
cleanup() {
    if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$((20000 + RANDOM % 20000))
while ss -Htln "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done
python3 "$ROOT/bench/hostile/hostile_server.py" "$PORT" $((LIMIT * 8)) > "$WORK/server.out" 2>&1 &
SRV=$!
for _ in $(seq 300); do
    ss -Htln "sport = :$PORT" | grep -q . && break
    sleep 0.1
done
ss -Htln "sport = :$PORT" | grep -q . || { echo "hostile server did not start" >&2; cat "$WORK/server.out" >&2; exit 1; }

echo "# robot vs hostile servers; $(date -u '+%Y-%m-%d %H:%M UTC'); load: $(uptime | sed 's/.*load average: //')"
echo "# $("$PAGEWIRE" --version); $(head -1 "$WORK/server.out")"
printf '%-11s %7s %4s %9s  %s\n' probe wall_s exit maxrss_MB "last line of stderr"
for probe in $PROBES; do
    path=$probe flags=""
    case $probe in
        bomb-asked) path=bomb flags="--strategy pipeline-deflate" ;;
        # An object (not the page), kept for the cache, under a 256 MiB
        # limit: inflated into a cache file, not into memory.
        bomb-object) path=bombpage flags="--strategy pipeline-deflate --cache $WORK/cache --max-inflated 256MiB" ;;
    esac
    start=$(date +%s.%N)
    set +e
    # shellcheck disable=SC2086
    timeout "$LIMIT" /usr/bin/time -f '%M' -o "$WORK/rss" \
        "$PAGEWIRE" fetch "http://127.0.0.1:$PORT/$path" $flags $FETCH_FLAGS \
        > "$WORK/out" 2> "$WORK/err"
    code=$?
    set -e
    end=$(date +%s.%N)
    rss_kb=$(tail -1 "$WORK/rss" 2>/dev/null || echo 0)
    case $rss_kb in '' | *[!0-9]*) rss_kb=0 ;; esac
    # The error line, else the robot's last warning (stdout).
    last=$( (grep -v "^\s*$" "$WORK/err" || grep "warning:" "$WORK/out" || true) | tail -1 | cut -c1-240)
    printf '%-11s %7.1f %4s %9.1f  %s\n' "$probe" "$(echo "$end - $start" | bc)" "$code" \
        "$(echo "$rss_kb / 1024" | bc -l)" "${last:-(none)}"
done
