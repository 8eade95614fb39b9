#!/usr/bin/env bash
# What the live what-if and the recording cost the hit path (issue 30; goal
# >= 0.95x): fio 4 KiB random reads of a cached region at queue depth 1 and
# 8, through servers of one cache run three ways, alternating, ROUNDS times:
#   off      --whatif off
#   whatif   the default shadow (the running policy, lru, s3fifo)
#   both     the default shadow and --record
# Prints each configuration's median IOPS (and the spread) per queue depth
# and its ratio to `off`. Not a test: it prints numbers and asserts nothing.
#
#   scripts/bench/bench_taps.sh                 (about 2 min)
#   ROUNDS=5 RUNTIME=8 scripts/bench/bench_taps.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh
PY=/usr/bin/python3
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
command -v fio >/dev/null && fio --enghelp 2>/dev/null | grep -qw nbd || die "fio with the nbd engine missing"

step "build ssdcache (release)"
build_ssdcache release
WORK=$(mktemp -d -t bench_taps.XXXXXX)
trap 'kill_server "${SERVER_PID:-}"; rm -rf "$WORK"' EXIT
truncate -s 1G "$WORK/backing"
"$BIN" create "$WORK/cache" "$WORK/backing" --size 256MiB --segment 128KiB >/dev/null

# serve CONFIG: starts the server of CONFIG; sets SERVER_PID and URI.
serve() {
  local extra=()
  case $1 in
    off) extra=(--whatif off) ;;
    whatif) extra=() ;;
    both) extra=(--record "$WORK/rec.zst") ;;
  esac
  "$BIN" serve "$WORK/cache" "$WORK/backing" --policy lru --listen 127.0.0.1:0 "${extra[@]}" \
    >"$WORK/out" 2>"$WORK/err" &
  SERVER_PID=$!
  wait_listening "$SERVER_PID" "$WORK/out" "$WORK/err" server
  URI=nbd://$ADDR
}

stop() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || true
  SERVER_PID=
}

# fio_iops QD: random 4 KiB reads of the first 64 MiB (cached); prints IOPS.
fio_iops() {
  fio --name=hot --ioengine=nbd --uri="$URI" --rw=randread --bs=4k --iodepth="$1" --numjobs=1 \
    --size=64M --offset=0 --norandommap --randrepeat=1 --time_based --runtime="$RUNTIME" \
    --output-format=json --output="$WORK/fio.json" >/dev/null 2>"$WORK/fio.err" ||
    { cat "$WORK/fio.err"; die "fio failed"; }
  "$PY" -c "import json; print(round(json.load(open('$WORK/fio.json'))['jobs'][0]['read']['iops']))"
}

step "fill the hot region (64 MiB, read once)"
serve off
fio --name=fill --ioengine=nbd --uri="$URI" --rw=read --bs=128k --size=64M --offset=0 >/dev/null
stop

CONFIGS=(off whatif both)
for r in $(seq 1 "$ROUNDS"); do
  # Alternate the order each round so drift does not favour one configuration.
  order=("${CONFIGS[@]}")
  ((r % 2 == 0)) && order=(both whatif off)
  for c in "${order[@]}"; do
    serve "$c"
    for qd in 1 8; do echo "$(fio_iops "$qd")" >>"$WORK/iops.$c.$qd"; done
    stop
    echo "round $r $c: QD1 $(tail -1 "$WORK/iops.$c.1") QD8 $(tail -1 "$WORK/iops.$c.8")"
  done
done

step "results (median IOPS of $ROUNDS rounds, min..max; ratio to off)"
"$PY" - "$WORK" <<'EOF'
import statistics, sys
w = sys.argv[1]
def runs(c, qd):
    return [int(x) for x in open(f"{w}/iops.{c}.{qd}")]
print(f"{'config':<8} {'QD1 IOPS':>10} {'spread':>15} {'x off':>6}   {'QD8 IOPS':>10} {'spread':>15} {'x off':>6}")
for c in ["off", "whatif", "both"]:
    row = f"{c:<8}"
    for qd in (1, 8):
        v = runs(c, qd)
        m, base = statistics.median(v), statistics.median(runs("off", qd))
        row += f" {m:>10.0f} {f'{min(v)}..{max(v)}':>15} {m / base:>6.3f}  "
    print(row)
EOF
