#!/usr/bin/env bash
# The whole pagewire test suite, as CI runs it (`bash .ci/run`).
# Installs the peer programs the tests use (nginx, tshark, HTTPolice, ...) and runs every test
# of every crate. The network tests create network namespaces and TUN devices: run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-deps.sh
cargo test --workspace --locked
