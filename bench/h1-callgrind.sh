#!/usr/bin/env bash
# bench/h1-callgrind.sh — user-space instructions per HTTP/1.1 keep-alive
# request of pagewire, without timing noise: the server (`serve --threads 1`)
# runs under valgrind's callgrind while a Python client sends a fixed number
# of GET /1k.bin requests over keep-alive connections (each connection one
# request at a time, like wrk). Counters are zeroed after a warm-up
# (callgrind_control -z) and dumped after the measured requests
# (callgrind_control -d), so start-up is not counted.
#
# Usage: bench/h1-callgrind.sh   (env: PAGEWIRE (binary; default
#        target/release/pagewire), REQUESTS (20000), CONNS (50), TOP (30),
#        KEEP (a path: keep the callgrind dump there), SHAPE (browser: Host,
#        User-Agent and Accept, the default; wrk: Host only, the request
#        bench/perf.sh's wrk sends))
# Prints Ir (instructions) per request and the top functions by inclusive
# cost. Needs valgrind (scripts/setup-deps.sh). Bounded: the client has a
# deadline and the server a `timeout`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/server/common.sh
. "$ROOT/bench/server/common.sh"
PAGEWIRE=${PAGEWIRE:-$ROOT/target/release/pagewire}
REQUESTS=${REQUESTS:-20000}
CONNS=${CONNS:-50}
TOP=${TOP:-30}
SHAPE=${SHAPE:-browser}
case "$SHAPE" in
    browser | wrk) ;;
    *) echo "bench/h1-callgrind.sh: SHAPE is browser or wrk, not '$SHAPE'" >&2; exit 2 ;;
esac
for tool in valgrind callgrind_control callgrind_annotate python3 curl; do
    command -v "$tool" > /dev/null || { echo "bench/h1-callgrind.sh: $tool is missing (scripts/setup-deps.sh)" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/pagewire-callgrind.XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2> /dev/null || true; wait "$PID" 2> /dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/www"
write_1k "$WORK/www/1k.bin"
port=$((20000 + RANDOM % 10000))
while ss -Htan "sport = :$port" | grep -q .; do port=$((port + 1)); done
timeout 900 valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
    "$PAGEWIRE" serve --root "$WORK/www" --addr "127.0.0.1:$port" --threads 1 \
    > "$WORK/server.out" 2>&1 &
PID=$!
up=
for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/1k.bin")" = 200 ] && up=1 && break
    sleep 0.2
done
[ -n "$up" ] || { echo "bench/h1-callgrind.sh: server did not start" >&2; cat "$WORK/server.out" >&2; exit 1; }
VG=$(pgrep -P "$PID" | head -1) # valgrind itself, under `timeout`

# client PORT CONNS REQUESTS: REQUESTS keep-alive GETs spread over CONNS
# connections, each waiting for its whole response before the next request.
client() {
    python3 - "$@" "$SHAPE" <<'PY'
import selectors, socket, sys, time
port, conns, total = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if sys.argv[4] == "wrk":
    req = b"GET /1k.bin HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port
else:
    req = b"GET /1k.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: h1-callgrind\r\nAccept: */*\r\n\r\n"
sel = selectors.DefaultSelector()
left = {}
share = [total // conns + (1 if i < total % conns else 0) for i in range(conns)]
for i in range(conns):
    if share[i] == 0:
        continue
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(req)
    left[s] = [share[i] - 1, b""]
    sel.register(s, selectors.EVENT_READ)
done, deadline = 0, time.time() + 600
while left:
    if time.time() > deadline:
        sys.exit("h1-callgrind client: deadline passed")
    for key, _ in sel.select(timeout=5):
        s = key.fileobj
        st = left[s]
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("h1-callgrind client: connection closed early")
        st[1] += chunk
        while True:
            head_end = st[1].find(b"\r\n\r\n")
            if head_end < 0:
                break
            head = st[1][:head_end].decode("latin-1")
            if not head.startswith("HTTP/1.1 200"):
                sys.exit("h1-callgrind client: unexpected response " + head.split("\r\n")[0])
            length = next(int(l.split(":", 1)[1]) for l in head.split("\r\n")[1:] if l.lower().startswith("content-length:"))
            if len(st[1]) < head_end + 4 + length:
                break
            st[1] = st[1][head_end + 4 + length:]
            done += 1
            if st[0] > 0:
                st[0] -= 1
                s.sendall(req)
            else:
                sel.unregister(s)
                s.close()
                del left[s]
                break
print(done)
PY
}

client "$port" "$CONNS" "$CONNS" > /dev/null # warm-up: every connection once
callgrind_control -z "$VG" > /dev/null 2>&1
n=$(client "$port" "$CONNS" "$REQUESTS")
callgrind_control -d "$VG" > /dev/null 2>&1
sleep 1
dump=$(ls -t "$WORK"/cg.out.* 2> /dev/null | head -1)
[ -n "${KEEP:-}" ] && cp "$dump" "$KEEP"
[ -n "$dump" ] || { echo "bench/h1-callgrind.sh: no callgrind dump" >&2; exit 1; }
ir=$(awk '/^summary:|^totals:/ {print $2; exit}' "$dump")
echo "# bench/h1-callgrind.sh, $(date -u +%FT%TZ), $("$PAGEWIRE" --version)"
echo "# $n keep-alive requests over $CONNS connections (1 KB file, $SHAPE-shaped request), callgrind"
echo "Ir total $ir, Ir per request $((ir / n))"
# top KIND: the TOP functions by inclusive (KIND yes) or self (no) Ir per
# request; self costs of inlined code are summed per function, and the frames
# that were live when the counters were zeroed (thread start, block_on) are
# left out of the self list.
top() {
    callgrind_annotate --threshold=100 --tree=none --auto=no --inclusive="$1" "$dump" 2> /dev/null \
        | awk -v n="$n" -v total="$ir" -v self="$1" '
            /^-+$/ { sep++; next }
            sep >= 3 && /^ *[0-9,]+ / {
                c = $1; gsub(",", "", c); c += 0; $1 = ""
                name = $0; sub(/^ +/, "", name); sub(/^\([^)]*\) /, "", name)
                sub(/ \[[^]]*\]$/, "", name); sub(/^[^:]*:/, "", name)
                if (self == "no" && c > total / 2) next
                if (!(name in cost)) order[k++] = name
                if (self == "no") cost[name] += c; else if (c > cost[name]) cost[name] = c
            }
            END { for (i = 0; i < k; i++) printf "%9.1f  %s\n", cost[order[i]] / n, substr(order[i], 1, 120) }' \
        | sort -k1,1 -rn | awk -v t="$TOP" 'NR <= t' # reads to the end: no SIGPIPE for sort under pipefail
}
echo "# top $TOP functions by inclusive Ir per request"
top yes
echo "# top $TOP functions by self Ir per request"
top no
