#!/usr/bin/env bash
# Instructions `ssdcache serve` executes per 4 KiB read of a cached segment,
# under cachegrind (exact counts, the same on a busy machine, unlike a timer):
# one run with no reads and one with N random reads of 16 cached 1 MiB
# segments (written, then cached by `ssdcache maintain`); the difference over
# N. Compares binaries side by side, e.g. before and after a change:
#
#   scripts/bench/serve_counts.sh [N] BIN [BIN ...]     (N defaults to 10000)
#
# Needs valgrind and python3-libnbd (/usr/bin/python3).
set -euo pipefail
N=10000
if [[ ${1:-} =~ ^[0-9]+$ ]]; then N=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: $0 [N] BIN [BIN ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind missing" >&2; exit 2; }

# instructions BIN READS: the server's instruction count for the whole run.
instructions() {
  local bin=$1 reads=$2 d addr pid i
  d=$(mktemp -d)
  truncate -s 64M "$d/back"
  "$bin" create "$d/cache" "$d/back" --size 40MiB --segment 1MiB >/dev/null
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$bin" serve "$d/cache" "$d/back" --listen 127.0.0.1:0 >"$d/out" 2>"$d/err" &
  pid=$!
  for i in $(seq 300); do grep -q '^listening on ' "$d/out" 2>/dev/null && break; sleep 0.2; done
  addr=$(sed -n 's/^listening on //p' "$d/out")
  /usr/bin/python3 -c "
import nbd, sys
h = nbd.NBD(); h.connect_uri('nbd://$addr')
for s in range(16): h.pwrite(bytes([s + 1]) * 1048576, s * 1048576)
h.flush(); h.shutdown()"
  "$bin" maintain "$d/cache" >/dev/null
  /usr/bin/python3 -c "
import nbd, random
h = nbd.NBD(); h.connect_uri('nbd://$addr')
r = random.Random(1)
for i in range($reads): h.pread(4096, r.randrange(16 * 256) * 4096)
h.shutdown()"
  kill -TERM "$pid"
  wait "$pid"
  sed -n 's/.*I *refs: *//p' "$d/err" | tr -d ,
  rm -rf "$d"
}

for bin in "$@"; do
  base=$(instructions "$bin" 0)
  with=$(instructions "$bin" "$N")
  echo "$bin: $(( (with - base) / N )) instructions per cached 4 KiB read ($N reads; $base at rest)"
done
