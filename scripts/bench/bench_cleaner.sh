#!/usr/bin/env bash
# Foreground latency while the cleaner works off a dirty backlog (issue 28's
# "no flush storms"): fio 4 KiB random reads at queue depth 1 and 8 on a hot,
# cached, clean region of a write-back cache, first with the cleaner idle, then
# while it writes back a backlog of dirty segments to a slow BACKING (the
# benchmark's HDD model, `serve --backing-model`), once per cleaner pace in one
# run: adaptive (today's default), gap (the first cleaner's) and full (no
# yielding: a flush storm). Prints p50/p99 of each, busy/idle ratios (goal:
# busy p99 <= 2x idle p99), how much was still dirty when fio ended and how
# long the dirty share took to reach the cleaner's bound.
#
#   scripts/bench/bench_cleaner.sh            (about 5 min)
#   PACES="adaptive gap" RUNTIME=10 scripts/bench/bench_cleaner.sh
#
# A third row per pace reads an uncached region at QD 1 (misses that do not
# fill: `set promote-after=1000000`), the requests a flush storm delays.
#
# Setup: 1 GiB BACKING, an 800 MiB write-back LRU cache of 1 MiB segments; a
# 64 MiB hot region read once (filled, clean); BACKLOG_MIB (default 700) of
# other segments filled. Per pace: the backlog written once more (dirty) with
# no cleaner bound; fio idle; then `ssdcache set clean-pace=P max-dirty=2%`
# starts the cleaner while fio runs again (RUNTIME s, default 8, per queue
# depth); then `set max-dirty=none` stops it for the next pace. Each pace's
# idle runs come right before its busy runs, so a drifting host shows in the
# idle columns. Needs fio with the nbd engine and python3-libnbd
# (scripts/test/test_nbd.sh installs them). Not a test: it prints numbers and
# asserts nothing about speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh
PY=/usr/bin/python3
RUNTIME=${RUNTIME:-8}
BACKLOG_MIB=${BACKLOG_MIB:-700}
PACES=${PACES:-adaptive gap full}
# A 7200 rpm disk of today (150 MB/s media rate; paper 001's preset has 3.9).
MODEL=${MODEL:-hdd(model=rpm7200,transfer=150MB,scale=1)}
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

# write_backlog: reads the hot region, then writes every backlog segment once
# (the first time fills them; after that a write to a cached one dirties it).
write_backlog() {
  "$PY" - "$URI" "$BACKLOG_MIB" <<'EOF'
import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1])
for s in range(64):
    h.pread(1 << 20, s << 20)
for s in range(64, 64 + int(sys.argv[2])):
    h.pwrite(bytes([s % 251 + 1]) * (1 << 20), s << 20)
h.flush(); h.shutdown()
EOF
}

# fio_lat QD OUT [OFFSET SIZE]: fio random reads of the hot region (or of
# SIZE at OFFSET); writes "p50_us p99_us iops".
fio_lat() {
  fio --name=hot --ioengine=nbd --uri="$URI" --rw=randread --bs=4k --iodepth="$1" --numjobs=1 \
    --offset="${3:-0}" --size="${4:-64M}" --norandommap --randrepeat=1 --time_based --runtime="$RUNTIME" \
    --lat_percentiles=1 --output-format=json --output="$WORK/fio.json" >/dev/null 2>"$WORK/fio.err" ||
    { cat "$WORK/fio.err"; die "fio failed"; }
  "$PY" - "$WORK/fio.json" >"$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p = r["lat_ns"]["percentile"]
print(f"{p['50.000000'] / 1000:.1f} {p['99.000000'] / 1000:.1f} {r['iops']:.0f}")
EOF
}

step "hot region: 64 MiB read once (filled, clean); backlog: ${BACKLOG_MIB} MiB filled"
write_backlog
# From now on a miss does not fill: the cold reads below stay misses, served
# by the modelled disk that the cleaner writes to.
"$BIN" set "$WORK/cache" promote-after=1000000 >/dev/null
COLD=(512M 512M)
bound=$(($(status ssd_segments) * 2 / 100))
for pace in $PACES; do
  step "pace $pace: backlog dirtied; fio idle (no cleaner bound), then busy (set clean-pace=$pace max-dirty=2%)"
  "$BIN" set "$WORK/cache" max-dirty=none >/dev/null
  write_backlog
  before=$(status dirty)
  fio_lat 1 "$WORK/idle.$pace.miss" "${COLD[@]}"
  for qd in 1 8; do fio_lat "$qd" "$WORK/idle.$pace.$qd"; done
  "$BIN" set "$WORK/cache" clean-pace="$pace" max-dirty=2% >/dev/null
  t0=$(date +%s.%N)
  fio_lat 1 "$WORK/busy.$pace.miss" "${COLD[@]}"
  for qd in 1 8; do fio_lat "$qd" "$WORK/busy.$pace.$qd"; done
  during=$(status dirty)
  while [ "$(status dirty)" -gt "$bound" ]; do sleep 0.2; done
  t1=$(date +%s.%N)
  echo "$before $during $("$PY" -c "print(f'{$t1 - $t0:.1f}')")" >"$WORK/drain.$pace"
done

step "results (latencies in us; goal: busy p99 <= 2x idle p99; BACKING modelled as $MODEL)"
echo "miss: QD 1 reads of an uncached region (the disk the cleaner writes to), run first; QD 1 and 8: hits on the"
echo "hot region, run after it (the cleaner may have less, or nothing, left to do by then: see the last column)"
row='%-9s %-3s | %8s %8s %7s | %8s %8s %7s | %6s %6s | %s\n'
# shellcheck disable=SC2059
printf "$row" pace QD "idle p50" "idle p99" IOPS "busy p50" "busy p99" IOPS "p50 x" "p99 x" \
  "dirty segments: before -> when fio ended; s to the bound"
for pace in $PACES; do
  read -r before during secs <"$WORK/drain.$pace"
  for qd in 1 8 miss; do
    read -r ip50 ip99 iiops <"$WORK/idle.$pace.$qd"
    read -r bp50 bp99 biops <"$WORK/busy.$pace.$qd"
    drain=""
    [ "$qd" = 1 ] && drain="$before -> $during; ${secs} s to $bound"
    # shellcheck disable=SC2059
    printf "$row" "$pace" "$qd" "$ip50" "$ip99" "$iiops" "$bp50" "$bp99" "$biops" \
      "$("$PY" -c "print(f'{$bp50 / $ip50:.2f}')")" "$("$PY" -c "print(f'{$bp99 / $ip99:.2f}')")" "$drain"
  done
done
echo "cleaner: $("$BIN" status "$WORK/cache" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['status']['cleaner'])")"
