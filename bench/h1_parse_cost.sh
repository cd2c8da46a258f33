#!/usr/bin/env bash
# Cost of parsing one typical request with pagewire-h1, two ways:
#  1. wall time: examples/parse_bench (1M requests per mode; noisy on a
#     shared machine), and
#  2. instructions per request under valgrind's callgrind (deterministic:
#     the difference between N=20000 and N=10000 runs, divided by 10000, so
#     start-up and warm-up cancel out).
# Modes: httparse (the floor: httparse alone), single (parse_request + body
# decoder, one request per read), parser (RequestParser), pipelined (100
# requests per read). Installs valgrind from Debian if missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
cargo build --release -q -p pagewire-h1 --example parse_bench --manifest-path "$root/Cargo.toml"
bin="$CARGO_TARGET_DIR/release/examples/parse_bench"
echo "# bench/h1_parse_cost.sh, commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
"$bin" 1000000
echo "# instructions/request (callgrind, (I(20000) - I(10000)) / 10000)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for mode in httparse single parser pipelined; do
  for n in 10000 20000; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/$mode.$n" "$bin" "$n" "$mode" >/dev/null 2>"$tmp/$mode.$n.log"
  done
  a=$(grep -o 'Collected : [0-9]*' "$tmp/$mode.10000.log" | grep -o '[0-9]*$')
  b=$(grep -o 'Collected : [0-9]*' "$tmp/$mode.20000.log" | grep -o '[0-9]*$')
  echo "$mode: $(( (b - a) / 10000 )) instructions/request"
done
