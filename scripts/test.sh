#!/usr/bin/env bash
# The whole pagewire test suite, as CI runs it (`bash .ci/run`).
# Installs the peer programs the tests use (nginx, tshark, HTTPolice, ...) and runs every test
# of every crate. The network tests create network namespaces and TUN devices: run as root.
#
# PAGEWIRE_REQUIRE_ALL=1 (the default here; pagewire-testreq): a test that needs something
# this machine lacks (root, /dev/net/tun, a peer program) FAILS, saying what is missing and
# how to get it. With PAGEWIRE_REQUIRE_ALL=0 such tests are skipped by name instead, and
# counted below. The last lines are a summary: peers found with their versions, then
# "N passed, N failed, N skipped". Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

export PAGEWIRE_REQUIRE_ALL="${PAGEWIRE_REQUIRE_ALL:-1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PAGEWIRE_SKIP_LOG="$work/skipped"
: >"$PAGEWIRE_SKIP_LOG"

bash scripts/setup-deps.sh

# A clean build is most of this script's time (docs/ci.md): link zstd-sys against the
# system's libzstd (installed above) rather than compile zstd's C sources.
if pkg-config --exists libzstd 2>/dev/null; then
    export ZSTD_SYS_USE_PKG_CONFIG=1
fi

status=0
# --no-fail-fast: every test binary runs, so the summary counts them all.
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$work/log" || status=$?
# The emulator tests once more on the packet-socket path (veth pairs and AF_PACKET
# sockets, what a normal user gets where /dev/net/tun is closed); the run above used TUN.
PAGEWIRE_DATAPATH=packet cargo test -p pagewire-emu --locked --no-fail-fast 2>&1 | tee -a "$work/log" || status=$?

# libtest's per-binary lines: "test result: ok. 12 passed; 0 failed; 1 ignored; ...".
passed=$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; .*/\1/p' "$work/log" | awk '{s+=$1} END {print s+0}')
failed=$(sed -n 's/^test result: [A-Za-z]*\. [0-9]* passed; \([0-9]*\) failed;.*/\1/p' "$work/log" | awk '{s+=$1} END {print s+0}')
skipped=$(grep -c '^SKIPPED ' "$PAGEWIRE_SKIP_LOG" || true)
# A skipped test ends as a pass in libtest's count: report it once, as skipped.
passed=$((passed - skipped))
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    # The build (or a test binary) failed before any test could.
    failed=1
fi

version() {
    # The first line of a program's version output that carries a version
    # number (wrappers and warnings print other lines first), or "not found".
    local name="$1"; shift
    local bin
    bin="$(command -v "$name" 2>/dev/null || true)"
    [ -z "$bin" ] && [ -x "/usr/sbin/$name" ] && bin="/usr/sbin/$name"
    if [ -z "$bin" ]; then
        echo "not found"
        return
    fi
    "$bin" "$@" 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+' | tr -s ' ' | cut -c1-60 || echo "found, version unknown"
}
pip_version() {
    # The Python peers live in the project's virtual environment
    # (scripts/setup-deps.sh); fall back to the first python3 on PATH.
    local py=.peers/venv/bin/python3
    [ -x "$py" ] || py=python3
    "$py" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: /'"$1"' /p' | grep . || echo "not found"
}
echo
echo "== summary"
if [ "$skipped" -gt 0 ]; then
    echo "skipped by name:"
    sed 's/^/  /' "$PAGEWIRE_SKIP_LOG"
fi
echo "peers: nginx: $(version nginx -v); apache2: $(version apache2 -v); curl: $(version curl --version);" \
    "wget: $(version wget --version); tshark: $(version tshark --version); chromium: $(version chromium --version);" \
    "h2load: $(version h2load --version); HTTPolice: $(pip_version HTTPolice); redbot: $(pip_version redbot);" \
    "python3: $(version python3 --version); git: $(version git --version)"
echo "root: $([ "$(id -u)" -eq 0 ] && echo yes || echo no); /dev/net/tun: $([ -c /dev/net/tun ] && echo yes || echo no); PAGEWIRE_REQUIRE_ALL=$PAGEWIRE_REQUIRE_ALL"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
