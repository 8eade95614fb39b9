#!/usr/bin/env bash
# Foreground latency while the cleaner works off a dirty backlog (issue 28's
# "no flush storms"): fio 4 KiB random reads at queue depth 1 and 8 on a hot,
# cached, clean region of a write-back cache, first with the cleaner idle, then
# while it writes back a backlog of dirty segments to a slow BACKING (the
# benchmark's HDD model, `serve --backing-model`). Prints p50/p99 of each and
# busy/idle ratios (goal: busy p99 <= 2x idle p99), and how long the dirty
# share took to reach the cleaner's bound.
#
#   scripts/bench/bench_cleaner.sh            (about 2 min)
#
# Setup: 1 GiB BACKING, a 768 MiB write-back LRU cache of 1 MiB segments; 64
# MiB hot region read once (filled, clean); BACKLOG_MIB (default 400) of other
# segments written twice (filled, then dirty) with no cleaner bound; then
# `ssdcache set max-dirty=2%` starts the cleaner while fio runs (RUNTIME s,
# default 8, per queue depth). Needs fio with the nbd engine and
# python3-libnbd (scripts/test/test_nbd.sh installs them). Not a test: it
# prints numbers and asserts nothing about speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh
PY=/usr/bin/python3
RUNTIME=${RUNTIME:-8}
BACKLOG_MIB=${BACKLOG_MIB:-400}
MODEL=${MODEL:-hdd(model=rpm7200,scale=1)}
command -v fio >/dev/null && fio --enghelp 2>/dev/null | grep -qw nbd || die "fio with the nbd engine missing"
"$PY" -c 'import nbd' 2>/dev/null || die "$PY has no nbd module (apt-get install python3-libnbd)"

step "build ssdcache (release)"
build_ssdcache release
WORK=$(mktemp -d -t bench_cleaner.XXXXXX)
trap 'kill_server "${SERVER_PID:-}"; rm -rf "$WORK"' EXIT
truncate -s 1G "$WORK/backing"
"$BIN" create "$WORK/cache" "$WORK/backing" --size 800MiB --segment 1MiB >/dev/null
"$BIN" serve "$WORK/cache" "$WORK/backing" --policy lru --backing-model "$MODEL" --listen 127.0.0.1:0 \
  >"$WORK/out" 2>"$WORK/err" &
SERVER_PID=$!
wait_listening "$SERVER_PID" "$WORK/out" "$WORK/err" server
URI=nbd://$ADDR
echo "serving $URI; BACKING modelled as $MODEL"

status() { "$BIN" status "$WORK/cache" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['status']['$1'])"; }

step "hot region: 64 MiB read once (filled, clean); backlog: ${BACKLOG_MIB} MiB written twice (dirty)"
"$PY" - "$URI" "$BACKLOG_MIB" <<'EOF'
import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1])
for s in range(64):
    h.pread(1 << 20, s << 20)
for p in range(2):
    for s in range(64, 64 + int(sys.argv[2])):
        h.pwrite(bytes([s % 251 + 1]) * (1 << 20), s << 20)
h.flush(); h.shutdown()
EOF
echo "dirty segments: $(status dirty)"

# fio_lat QD OUT: fio random reads of the hot region; appends "p50_us p99_us iops".
fio_lat() {
  fio --name=hot --ioengine=nbd --uri="$URI" --rw=randread --bs=4k --iodepth="$1" --numjobs=1 \
    --size=64M --offset=0 --norandommap --randrepeat=1 --time_based --runtime="$RUNTIME" \
    --lat_percentiles=1 --output-format=json --output="$WORK/fio.json" >/dev/null 2>"$WORK/fio.err" ||
    { cat "$WORK/fio.err"; die "fio failed"; }
  "$PY" - "$WORK/fio.json" >>"$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p = r["lat_ns"]["percentile"]
print(f"{p['50.000000'] / 1000:.1f} {p['99.000000'] / 1000:.1f} {r['iops']:.0f}")
EOF
}

step "idle: the cleaner has no bound, the backlog stays dirty"
for qd in 1 8; do fio_lat "$qd" "$WORK/idle.$qd"; done

step "busy: set max-dirty=2%, fio again while the cleaner writes the backlog back"
before=$(status dirty)
"$BIN" set "$WORK/cache" max-dirty=2% >/dev/null
t0=$(date +%s.%N)
for qd in 1 8; do fio_lat "$qd" "$WORK/busy.$qd"; done
during=$(status dirty)
bound=$(( $(status ssd_segments) * 2 / 100 ))
while [ "$(status dirty)" -gt "$bound" ]; do sleep 0.5; done
t1=$(date +%s.%N)

step "results (cleaner writing back $before dirty segments, $during still dirty after the fio runs)"
printf '%-4s | %9s %9s %8s | %9s %9s %8s | %9s %9s\n' QD "idle p50" "idle p99" "IOPS" "busy p50" "busy p99" "IOPS" "p50 x" "p99 x"
for qd in 1 8; do
  read -r ip50 ip99 iiops <"$WORK/idle.$qd"
  read -r bp50 bp99 biops <"$WORK/busy.$qd"
  printf '%-4s | %9s %9s %8s | %9s %9s %8s | %9s %9s\n' "$qd" "$ip50" "$ip99" "$iiops" "$bp50" "$bp99" "$biops" \
    "$("$PY" -c "print(f'{$bp50 / $ip50:.2f}')")" "$("$PY" -c "print(f'{$bp99 / $ip99:.2f}')")"
done
echo "(latencies in us; goal: busy p99 <= 2x idle p99)"
echo "dirty share reached the bound ($bound segments) $("$PY" -c "print(f'{$t1 - $t0:.1f}')") s after set max-dirty=2%"
echo "cleaner: $("$BIN" status "$WORK/cache" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['status']['cleaner'])")"
