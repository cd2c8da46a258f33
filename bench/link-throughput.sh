#!/usr/bin/env bash
# Forwarder throughput of the link emulator with no rate limit (the
# target: >= 1 Gbit/s on the 2-core machine, so it never limits the LAN
# experiments). Streams 1 GB of TCP through the `none` and `lan100` (delay
# only) links, three times each, and prints the rates; fails if the best
# run is below the target. Needs root. Run on a quiet machine.
#   bash bench/link-throughput.sh            # target 1e9 bit/s
#   TARGET_BPS=5e8 bash bench/link-throughput.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
echo "# made by bench/link-throughput.sh, pagewire $(git describe --always --dirty 2>/dev/null || echo unknown), $(date -u +%FT%TZ), $(nproc) cores"
cargo test -q -p pagewire-emu --test throughput --no-run >/dev/null 2>&1
for run in 1 2 3; do
    PAGEWIRE_THROUGHPUT_BYTES=1000000000 \
    PAGEWIRE_THROUGHPUT_FLOOR_BPS="${TARGET_BPS:-1e9}" \
        cargo test -q -p pagewire-emu --test throughput -- --nocapture --test-threads=1 2>&1 \
        | grep -E "Gbit/s|FAILED|panicked" | sed "s/^/run $run: /" || true
done
