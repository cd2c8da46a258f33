#!/usr/bin/env bash
# Fuzz the pagewire-h1 codec with cargo-fuzz (libFuzzer) for a bounded time.
#
#   scripts/fuzz-h1.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 600 s each for parse_request and chunked_decoder, one after the
# other (one core). Needs a nightly toolchain (`rustup toolchain install
# nightly --profile minimal`) and cargo-fuzz (installed here if missing).
# The committed seed corpus in fuzz/corpus/<target>/ is read, never written:
# new inputs go to a working corpus under $CARGO_TARGET_DIR. Crashes land in
# fuzz/artifacts/<target>/ (ignored by git). Final libFuzzer stats (runs,
# exec/s) are printed at the end of each run; see docs/fuzzing.md.
set -euo pipefail
secs="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(parse_request chunked_decoder)
root="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/fuzz}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cd "$root/fuzz"
for t in "${targets[@]}"; do
  work="$CARGO_TARGET_DIR/corpus/$t"
  mkdir -p "$work"
  echo "=== $t: ${secs}s, $(date -u +%FT%TZ), commit $(git -C "$root" rev-parse --short HEAD)"
  cargo +nightly fuzz run -O "$t" "$work" "corpus/$t" -- \
    -max_total_time="$secs" -max_len=4096 -print_final_stats=1
done
