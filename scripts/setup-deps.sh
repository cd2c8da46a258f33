#!/usr/bin/env bash
# Installs what pagewire's tests and benchmarks need on a fresh Debian machine (as root).
# Idempotent: each line installs only what is missing, so it is cheap to run every time.
# Append new needs at the end with `apt_install PKG...` or `venv_install NAME==VERSION...`.
# Writes the installed peers' versions to .peers/versions.txt (printed by the test summary).
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
_apt_updated=0

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup-deps: need root to install: ${missing[*]}" >&2
        return 1
    fi
    if [ "$_apt_updated" -eq 0 ]; then
        apt-get update -qq
        _apt_updated=1
    fi
    echo "setup-deps: apt-get install ${missing[*]}" >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Python peers live in the project's own virtual environment, not in the system
# python: Debian 12's python3 refuses `pip install` outside one (PEP 668,
# "externally-managed-environment"). The tests look for them in $PEERS_DIR/venv/bin
# (crates/server/tests/it/peer_checkers.rs); PAGEWIRE_PEERS_DIR moves it.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS_DIR="${PAGEWIRE_PEERS_DIR:-$ROOT/.peers}"
VENV="$PEERS_DIR/venv"

venv_install() {
    # Each pinned spec is installed unless the venv already has it.
    apt_install python3 python3-venv
    if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
        echo "setup-deps: python3 -m venv $VENV" >&2
        mkdir -p "$PEERS_DIR"
        python3 -m venv --clear "$VENV"
    fi
    local missing=()
    for spec in "$@"; do
        local name="${spec%%[=<>]*}" want="${spec#*==}"
        local have
        have="$("$VENV/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)"
        [ "$have" = "$want" ] || missing+=("$spec")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "setup-deps: pip install (venv $VENV) ${missing[*]}" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
}

# Namespaces, veth, routes (the link emulator).
apt_install iproute2 procps

# tshark: the link tests check the emulator's packet/byte counts against it.
apt_install tshark

# The robot's tests run a real nginx beside pagewire's server (crates/client/tests);
# docs/client.md compares the robot with curl, wget -p and h2load (nghttp2-client).
apt_install nginx-light curl wget nghttp2-client

# Peer checkers for the server (crates/server/tests/it/peer_checkers.rs): HTTPolice
# lints recorded pipelined connections (bitstring 4 broke HTTPolice's parser, so
# 3.1.9), REDbot checks validation, ranges and content negotiation on loopback.
# Pinned: the versions the tests were last checked with.
venv_install bitstring==3.1.9 HTTPolice==0.9.0 redbot==2.7.1
# bench/server/run.sh compares the server with nginx and h2o under wrk and h2load.
apt_install nginx-light h2o wrk nghttp2-client python3
# bench --suite surge (paper 004): Apache with the prefork MPM beside nginx and
# pagewire; nsenter (util-linux) and ss (iproute2) for the server monitor.
apt_install apache2 util-linux iproute2
# bench/server/drip.sh (slow-sender drip beside nginx); STRACE=1 counts its system calls.
apt_install strace
# bench/profile.sh and bench/h1-syscalls.sh (perf record / perf stat on syscall
# tracepoints); gcc builds bench/server/floor.c, the kernel's keep-alive floor.
apt_install linux-perf gcc

# bench/hostile/slowloris.sh: slowloris probes against pagewire and nginx (hostile input).
apt_install slowhttptest nginx-light curl python3
# Headless Chromium: a real browser in the bench matrix (`pagewire bench
# --strategy chromium-h1`; crates/pagewire/tests/chromium_netns.rs) and the
# replay check (crates/pagewire/tests/replay_cli.rs, with nginx to record from);
# docs/real-pages.md records libxslt's HTML manual (libxslt1-dev).
apt_install chromium nginx-light libxslt1-dev
# Discovery against a real browser (crates/pagewire/tests/discovery_chromium.rs):
# a small real Sphinx site (Read the Docs theme: stylesheets, scripts, web fonts)
# from Debian's documentation packages as a fixture.
apt_install python-webvtt-doc

# pagewire shell: nft redirects the shell's TCP to the relay in the
# gateway namespace.
apt_install nftables
# The rootless tests (crates/pagewire/tests/shell_cli.rs, rootless_cli.rs) run
# pagewire as this normal user with `runuser -u pwtest`.
if [ "$(id -u)" -eq 0 ] && ! id pwtest >/dev/null 2>&1; then
    echo "setup-deps: useradd -m pwtest" >&2
    useradd -m pwtest
fi

# Build speed: scripts/test.sh links zstd-sys against the system libzstd
# (ZSTD_SYS_USE_PKG_CONFIG) instead of compiling zstd's C sources in every
# clean build (docs/ci.md).
apt_install libzstd-dev pkg-config

# crates/pagewire/tests/cli/h2spec_cli.rs checks the server's own HTTP/2
# against h2spec's generic and http2 suites (a Go tool, built from the Go
# module proxy into /usr/local/bin; needs golang-go).
if ! command -v h2spec >/dev/null 2>&1; then
    command -v go >/dev/null 2>&1 || apt_install golang-go ca-certificates
    if command -v go >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
        echo "setup-deps: go install h2spec" >&2
        GOBIN=/usr/local/bin GOFLAGS=-buildvcs=false go install github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible
    fi
fi

# The peers' versions, for the test summary and for anyone comparing results
# across machines: Debian packages as dpkg has them, Python peers as the venv has them.
{
    echo "# peer versions, written by scripts/setup-deps.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for pkg in nginx-light h2o apache2 chromium tshark wrk nghttp2-client curl wget slowhttptest strace iproute2 python3; do
        v="$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)"
        echo "$pkg ${v:-not-installed}"
    done
    for name in HTTPolice redbot bitstring; do
        v="$("$VENV/bin/python" -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)"
        echo "$name ${v:-not-installed} (venv)"
    done
    echo "venv-python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())')"
} >"$PEERS_DIR/versions.txt"
echo "setup-deps: peer versions in $PEERS_DIR/versions.txt" >&2

# bench/h1-callgrind.sh and bench/h1_parse_cost.sh: instructions per request under callgrind
apt_install valgrind
