#!/usr/bin/env bash
# Where the robot stands among tools users know: curl, wget -p and h2load
# fetch the same Microscape page (1 HTML + 42 GIFs) from the same nginx on
# loopback as `pagewire fetch` with each strategy. Requests and connections
# are counted by nginx's access log ($connection), time is the wall clock of
# the whole command (process start included, the same for every tool),
# median of REPS runs.
#
# Usage: bench/client_tools.sh [REPS]        (default 5)
#   PAGEWIRE=path/to/pagewire  use this binary (default: cargo build --release)
# Needs: nginx, curl, wget, h2load (scripts/setup-deps.sh installs them).
# Loopback only; every process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${1:-5}
if [ -z "${PAGEWIRE:-}" ]; then
    cargo build --release -q -p pagewire
    PAGEWIRE="${CARGO_TARGET_DIR:-target}/release/pagewire"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

work=$(mktemp -d)
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

"$PAGEWIRE" site microscape --out "$work/site" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1;
pid $work/nginx/nginx.pid; error_log $work/nginx/error.log warn;
events { worker_connections 256; }
http {
    types { text/html html; image/gif gif; }
    log_format pw '\$connection \$request_method \$uri \$status';
    access_log $work/nginx/access.log pw;
    client_body_temp_path $work/nginx/b; proxy_temp_path $work/nginx/p;
    fastcgi_temp_path $work/nginx/f; uwsgi_temp_path $work/nginx/u; scgi_temp_path $work/nginx/s;
    sendfile on; tcp_nodelay on; keepalive_requests 1000;
    server { listen 127.0.0.1:$port; root $work/site; }
}
EOF
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
URL="http://127.0.0.1:$port/index.html"
LOG="$work/nginx/access.log"

# The object list in page order, from the robot itself (curl and h2load do
# not parse HTML; they are given the same 43 URLs).
"$PAGEWIRE" fetch "$URL" --request-profile minimal --json | python3 -c '
import json, sys
for o in json.load(sys.stdin)["objects"]:
    print(o["url"])' >"$work/urls.txt"
curl_args=()
while read -r u; do curl_args+=(-o /dev/null "$u"); done <"$work/urls.txt"

# run NAME CMD...: REPS runs; prints NAME, requests, connections, median ms.
run() {
    local name=$1
    shift
    local times=() reqs=0 conns=0
    for _ in $(seq "$REPS"); do
        local before t0 t1
        before=$(wc -l <"$LOG")
        t0=$(date +%s%N)
        if ! "$@" >/dev/null 2>&1; then
            printf '| %-44s | failed: %s |\n' "$name" "$*"
            return
        fi
        t1=$(date +%s%N)
        sleep 0.05 # nginx logs a request when it ends
        times+=($(((t1 - t0) / 1000)))
        reqs=$(tail -n +"$((before + 1))" "$LOG" | wc -l)
        conns=$(tail -n +"$((before + 1))" "$LOG" | cut -d' ' -f1 | sort -u | wc -l)
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '| %-44s | %8s | %11s | %9.1f |\n' "$name" "$reqs" "$conns" "$(echo "$median/1000" | bc -l)"
}

echo "# bench/client_tools.sh: $(date -u +%FT%TZ), $("$PAGEWIRE" --version), $("$NGINX" -v 2>&1), reps=$REPS"
echo "# page: $(wc -c <"$work/site/index.html") B HTML + $(ls "$work/site/images" | wc -l) GIFs, served by nginx on 127.0.0.1"
echo
echo "| tool | requests | connections | ms (median) |"
echo "|---|---:|---:|---:|"
run "curl (43 URLs, one connection, sequential)" curl -s --http1.1 "${curl_args[@]}"
run "curl -Z --parallel-max 4 (43 URLs)" curl -s --http1.1 -Z --parallel-max 4 "${curl_args[@]}"
run "wget -p (parses the page)" wget -q -p -P "$work/wget" "$URL"
run "h2load --h1 -c 1 -m 43 (pipelined, 43 URLs)" h2load --h1 -n 43 -c 1 -m 43 -i "$work/urls.txt"
for s in http10 http11 pipeline pipeline-deflate; do
    run "pagewire fetch --strategy $s" "$PAGEWIRE" fetch "$URL" --request-profile minimal --strategy "$s"
done
run "pagewire fetch --strategy pipeline --flush-at-page-end" "$PAGEWIRE" fetch "$URL" --request-profile minimal --strategy pipeline --flush-at-page-end
