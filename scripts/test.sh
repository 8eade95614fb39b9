#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what it needs, then runs
#   1. the Rust unit, property and integration tests (every trace in ../shared/traces),
#   2. the NBD server against real clients (qemu-io, qemu-img, nbdinfo, nbdcopy,
#      fio, python3-libnbd; installed with apt when missing),
#   3. the Python-driven suites (agreement with libCacheSim's miss counts),
#   4. every fuzz target for a bounded time (FUZZ_SECONDS per target, default 10).
# Usage: scripts/test.sh            (from anywhere; ../shared must sit beside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "python packages"
PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt

step "build"
cargo build --release --locked -p ssdcache-cli

step "rust tests"
cargo test --workspace --locked --release

step "NBD server against real clients"
NBD_PROFILE=release scripts/test_nbd.sh

step "python suites (libCacheSim agreement)"
SSDCACHE_BIN="$PWD/target/release/ssdcache" python3 -m pytest -q tests

if [ -x scripts/fuzz.sh ]; then
  step "fuzzing (${FUZZ_SECONDS:-10}s per target)"
  scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
