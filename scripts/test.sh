#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what it needs, then runs
#   1. the Rust unit, property and integration tests (every trace in ../shared/traces),
#   2. the NBD server against real clients (qemu-io, qemu-img, nbdinfo, nbdcopy,
#      fio, python3-libnbd; installed with apt when missing; structured replies,
#      block status, NBD_CMD_CACHE and --read-only: test_structured.sh), the metrics
#      endpoint's page rendered by headless chromium (test_page.sh), the persistent
#      cache behind `ssdcache serve` with clean stops and kill -9, its faults
#      (damaged metadata, failing devices, operator mistakes: test_faults.sh),
#      kill -9 trials each followed by one damaged metadata or superblock copy
#      (test_integrity.sh), and many kill -9 trials under a verifying client
#      (scripts/test/test_crash.sh),
#   3. the Python package (`pip install .`: the ssdcache._core extension, built in release),
#   4. the Python-driven suites: agreement with libCacheSim's miss counts (tests/agreement)
#      and the package's own tests (tests/python),
#   5. every fuzz target for a bounded time (FUZZ_SECONDS per target, default 10).
# Usage: scripts/test.sh            (from anywhere; ../shared must sit beside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."

# The sample traces ($SSDCACHE_TRACES, default ../shared/traces): tests that read them skip
# without them on a bare clone; here their absence is a failure, not a skip.
export SSDCACHE_REQUIRE_TRACES=1

step() { printf '\n== %s  (%ds in)\n' "$*" "$SECONDS"; }

pip_install() { PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check "$@"; }

step "python packages"
pip_install -r tests/requirements.txt

step "layers (core's imports point down, crates depend one way, no file import cycle in any crate)"
python3 scripts/test/check_layers.py
python3 scripts/test/check_docs.py

step "formatting (cargo fmt --check: the workspace and the fuzz crate)"
cargo fmt --all --check
(cd fuzz && cargo fmt --check)

step "build"
cargo build --release --locked -p ssdcache-cli

step "lints (cargo clippy --all-targets -D warnings)"
cargo clippy --workspace --all-targets --release --locked -- -D warnings

step "system tools the Rust tests run (promtool, qemu-io, python3-libnbd: crates/cli/tests/metrics.rs; openssl, nbdinfo, nbdcopy, qemu-img: crates/cli/tests/serve_tls.rs; chromium: scripts/test/test_page.sh)"
if ! command -v promtool >/dev/null || ! command -v qemu-io >/dev/null || ! /usr/bin/python3 -c 'import nbd' 2>/dev/null ||
  ! command -v openssl >/dev/null || ! command -v nbdinfo >/dev/null || ! command -v nbdcopy >/dev/null ||
  ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q prometheus qemu-utils python3-libnbd openssl libnbd-bin chromium >/dev/null
fi
promtool --version 2>&1 | sed -n 1p

step "rust tests"
cargo test --workspace --locked --release

step "NBD server against real clients"
NBD_PROFILE=release scripts/test/test_nbd.sh

step "cache engine (ssdcache create/serve/check/status/flush/maintain) against NBD clients, clean stop and kill -9"
SERVE_PROFILE=release scripts/test/test_serve.sh

step "structured replies, block status (nbdinfo --map, qemu-img map, sparse nbdcopy), NBD_CMD_CACHE, serve --read-only"
SERVE_PROFILE=release scripts/test/test_structured.sh

step "the metrics endpoint's page (/ polling /status.json) in headless chromium, against status --json"
SERVE_PROFILE=release scripts/test/test_page.sh

step "integrity faults with a real client (damaged metadata, failing and truncated devices, operator mistakes)"
SERVE_PROFILE=release scripts/test/test_faults.sh

step "whole-system integrity: kill -9, then one damaged superblock or metadata copy, per trial"
SERVE_PROFILE=release scripts/test/test_integrity.sh
INTEGRITY_TRIALS=8 INTEGRITY_SERVE_ARGS="--max-dirty 5% --dirty-age 1s" SERVE_PROFILE=release scripts/test/test_integrity.sh
# write-back with a replacement policy (S3-FIFO) and its cleaner
INTEGRITY_TRIALS=6 INTEGRITY_SERVE_ARGS="--policy s3fifo --max-dirty 5% --dirty-age 1s" SERVE_PROFILE=release scripts/test/test_integrity.sh

step "the crash tests' oracle (scripts/lib/crashlib: the journal and the sector records, unit tests)"
python3 -m pytest -q scripts/lib/crashlib

step "kill -9 crash trials under a verifying client (write-back PWC, write-through, the cleaner, write-back LRU and S3-FIFO)"
CRASH_STRICT=1 SERVE_PROFILE=release scripts/test/test_crash.sh
CRASH_STRICT=1 CRASH_MODE=write-through CRASH_TRIALS=6 SERVE_PROFILE=release scripts/test/test_crash.sh
# the background cleaner running all along (5% of 127 slots: 6 dirty at most; none older than 1 s)
CRASH_STRICT=1 CRASH_TRIALS=10 CRASH_SERVE_ARGS="--max-dirty 5% --dirty-age 1s" SERVE_PROFILE=release scripts/test/test_crash.sh
# write-back with a replacement policy: LRU alone, then S3-FIFO with the cleaner
CRASH_STRICT=1 CRASH_TRIALS=6 CRASH_SERVE_ARGS="--policy lru" SERVE_PROFILE=release scripts/test/test_crash.sh
CRASH_STRICT=1 CRASH_TRIALS=6 CRASH_SERVE_ARGS="--policy s3fifo --max-dirty 5% --dirty-age 1s" SERVE_PROFILE=release scripts/test/test_crash.sh

step "python package (pip install .)"
# maturin builds crates/py with the workspace's release profile, reusing the simulator
# crate built above; one build, installed into this Python.
pip_install .

export SSDCACHE_BIN="$PWD/target/release/ssdcache"
step "python suite: agreement with libCacheSim (both cores)"
python3 -m pytest -q -n 2 tests/agreement

step "python suite: the ssdcache package (incl. a one-node Ray cluster)"
python3 -m pytest -q tests/python

if [ -x scripts/test/fuzz.sh ]; then
  step "fuzzing (${FUZZ_SECONDS:-10}s per target)"
  scripts/test/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
