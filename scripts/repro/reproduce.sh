#!/usr/bin/env bash
# Reproduces the papers' experiments: builds the release binary (the experiments
# read traces' footprints with `ssdcache trace info`), installs the Python package
# (`pip install .`: the experiments run through ssdcache.sweep and draw with
# ssdcache.plot, as a user would), runs experiments/paperNNN.py for each paper
# asked (default: all), writing tables and charts under docs/reproductions/.
# Reads ../shared/traces (or $SSDCACHE_TRACES).
#   scripts/repro/reproduce.sh            # every experiment
#   scripts/repro/reproduce.sh 001 004    # some
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p ssdcache-cli
PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check .
papers=("$@")
if [ ${#papers[@]} -eq 0 ]; then
    papers=($(ls experiments/paper*.py | sed 's/.*paper\([0-9]*\)\.py/\1/'))
fi
for p in "${papers[@]}"; do
    echo "== paper $p"
    (cd experiments && python3 "paper$p.py")
done
