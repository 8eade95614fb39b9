#!/usr/bin/env bash
# Scale measurements (not in CI): a generated trace of N requests through
# `sim` (LRU), `sim --device` (LRU and Belady), `mrc` (exact LRU, and sampled
# at 1 % for three policies) and `trace analyze`, each with /usr/bin/time -v
# (wall time, CPU time, peak RSS).
# Usage: scripts/bench/scale.sh REQUESTS DIR   e.g. scripts/bench/scale.sh 100M /tmp/scale
#        SCALE_RUNS="sim-lru mrc-sample" scripts/bench/scale.sh 1000M DIR   (a subset)
set -euo pipefail
n=${1:-100M}
dir=${2:-/tmp/ssdcache-scale}
bin=${SSDCACHE_BIN:-${CARGO_TARGET_DIR:-target}/release/ssdcache}
mkdir -p "$dir"
trace="$dir/t$n.bin.zst"
spec="mix(zipf(alpha=0.9,keys=1M,read=70%,unit=bytes),scan(length=4096,read=90%,unit=bytes),weights=85%/15%,requests=$n,seed=1)"
[ -e "$trace" ] || "$bin" trace gen --zstd "$spec" "$trace"
runs=" ${SCALE_RUNS:-sim-lru sim-device mrc-lru sim-belady mrc-sample analyze} "
measure() {
    local name=$1
    shift
    [[ $runs == *" $name "* ]] || return 0
    /usr/bin/time -v "$bin" "$@" >"$dir/$name.out" 2>"$dir/$name.time"
    printf '%-14s wall %-10s user %6ss  peak RSS %7s KB   %s\n' "$name" \
        "$(grep -F 'Elapsed (wall' "$dir/$name.time" | awk '{print $NF}')" \
        "$(grep -F 'User time' "$dir/$name.time" | awk '{print $NF}')" \
        "$(grep -F 'Maximum resident' "$dir/$name.time" | awk '{print $NF}')" "$*"
}
measure sim-lru sim -t "$trace" -p lru -c 1GiB --json
measure sim-device sim -t "$trace" -p lru -c 1GiB --device 'ftl(nand=mlc2)' --json
measure mrc-lru mrc -t "$trace" -p lru --json
measure sim-belady sim -t "$trace" -p belady -c 1GiB --json
measure mrc-sample mrc -t "$trace" -p lru,arc,s3fifo --sample 1% --json
measure analyze trace analyze "$trace" --json
