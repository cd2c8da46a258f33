#!/usr/bin/env bash
# Installs what pagewire's tests and benchmarks need on a fresh Debian machine (as root).
# Idempotent: each line installs only what is missing, so it is cheap to run every time.
# Append new needs at the end with `apt_install PKG...` or `pip_install SPEC...`.
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

pip_install() {
    # Each spec is installed unless pip already has a matching version.
    for spec in "$@"; do
        python3 -m pip install --quiet --disable-pip-version-check "$spec" >/dev/null 2>&1 \
            || python3 -m pip install --quiet --disable-pip-version-check "$spec"
    done
}

# Namespaces, veth, routes (the link emulator).
apt_install iproute2 procps

# tshark: the link tests check the emulator's packet/byte counts against it.
apt_install tshark

# The robot's tests run a real nginx beside pagewire's server (crates/client/tests);
# docs/client.md compares the robot with curl, wget -p and h2load (nghttp2-client).
apt_install nginx-light curl wget nghttp2-client

# Peer checkers for the server (crates/server/tests/peer_checkers.rs): HTTPolice
# lints recorded pipelined connections (bitstring 4 broke HTTPolice's parser),
# REDbot checks validation, ranges and content negotiation on loopback.
pip_install 'bitstring<4' HTTPolice redbot
# bench/server/run.sh compares the server with nginx and h2o under wrk and h2load.
apt_install nginx-light h2o wrk nghttp2-client python3
# bench --suite surge (paper 004): Apache with the prefork MPM beside nginx and
# pagewire; nsenter (util-linux) and ss (iproute2) for the server monitor.
apt_install apache2 util-linux iproute2
# bench/server/drip.sh (slow-sender drip beside nginx); STRACE=1 counts its system calls.
apt_install strace

# bench/hostile/slowloris.sh: slowloris probes against pagewire and nginx (issue 18).
apt_install slowhttptest nginx-light curl python3
# Headless Chromium: a real browser in the bench matrix (`pagewire bench
# --strategy chromium-h1`; crates/pagewire/tests/chromium_netns.rs) and the
# replay check (crates/pagewire/tests/replay_cli.rs, with nginx to record from);
# docs/real-pages.md records libxslt's HTML manual (libxslt1-dev).
apt_install chromium nginx-light libxslt1-dev
# Discovery against a real browser (crates/pagewire/tests/discovery_chromium.rs, issue 15):
# a small real Sphinx site (Read the Docs theme: stylesheets, scripts, web fonts)
# from Debian's documentation packages as a fixture.
apt_install python-webvtt-doc
