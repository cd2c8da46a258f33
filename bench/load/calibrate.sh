#!/usr/bin/env bash
# bench/load/calibrate.sh — is a pagewire UE a paper-004 UE? SURGE UEs
# against nginx on loopback in several modes, each counted by nginx's own
# access log inside the generator's measurement window, beside the paper's
# values (Barford & Crovella, "A Performance Evaluation of Hyper Text
# Transfer Protocols", Tables 2, 6 and 7) and the calibration bands.
#
#   UES=200 DURATION=180s WARMUP=20s MODES="http10 http11 pipeline" bench/load/calibrate.sh
#
# nginx: one worker, keepalive_timeout 15s, keepalive_requests 100.
# Bounded: per mode DURATION + the 10 s timeout + a few seconds.
# Needs nginx (scripts/setup-deps.sh) and a build; PAGEWIRE=path (default the
# release binary). Copy the binary first if you build while this runs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PAGEWIRE=${PAGEWIRE:-$ROOT/target/release/pagewire}
UES=${UES:-200}
DURATION=${DURATION:-180s}
WARMUP=${WARMUP:-20s}
MODES=${MODES:-http10 http11 pipeline}
SEED=${SEED:-1}
PORT=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
WORK=${WORK:-$(mktemp -d /tmp/pagewire-calibrate.XXXXXX)}
SITE=${SITE:-$WORK/site}

[ -f "$SITE/manifest.json" ] || "$PAGEWIRE" site surge --out "$SITE" >/dev/null
ulimit -n "$(ulimit -Hn)"
NGINX_PID=
cleanup() { [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "# $(date -u +%FT%TZ) UES=$UES DURATION=$DURATION WARMUP=$WARMUP SEED=$SEED MODES=\"$MODES\"; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for MODE in $MODES; do
    N=$WORK/nginx-$MODE
    mkdir -p "$N/logs"
    cat >"$N/nginx.conf" <<NGX
worker_processes 1;
worker_rlimit_nofile 100000;
daemon off;
error_log $N/logs/error.log warn;
pid $N/nginx.pid;
events { worker_connections 30000; }
http {
    log_format cal '\$msec \$connection \$connection_requests \$status \$body_bytes_sent \$uri';
    access_log $N/logs/access.log cal buffer=256k;
    sendfile on; tcp_nodelay on;
    keepalive_requests 100; keepalive_timeout 15s;
    types { text/html html; application/octet-stream bin; }
    server { listen 127.0.0.1:$PORT backlog=4096; root $SITE; }
}
NGX
    nginx -c "$N/nginx.conf" -p "$N" 2>"$N/nginx.err" &
    NGINX_PID=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
    echo "## $MODE"
    # Exit 1 means the run finished but is off calibration or had errors: go on.
    rc=0
    "$PAGEWIRE" load --target http://127.0.0.1:$PORT --site "$SITE" --ues "$UES" --mode "$MODE" \
        --duration "$DURATION" --warmup "$WARMUP" --seed "$SEED" --out "$WORK/out-$MODE" --no-progress \
        >"$WORK/load-$MODE.txt" 2>&1 || rc=$?
    sed 's/^/    /' "$WORK/load-$MODE.txt"
    if [ ! -f "$WORK/out-$MODE/summary.json" ]; then
        echo "pagewire load ($MODE) wrote no results (exit $rc)" >&2
        exit 1
    fi
    kill -TERM "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=
done
python3 "$ROOT/bench/load/nginx_calibration.py" "$WORK" $MODES
echo "# done $(date -u +%FT%TZ); load average $(cut -d' ' -f1-3 /proc/loadavg); files in $WORK"
