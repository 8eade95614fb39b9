#!/usr/bin/env bash
# `ssdcache create | serve | check` (the PWC write-back SSD cache engine)
# against real NBD clients. Needs qemu-utils and libnbd-bin (scripts/test/test_nbd.sh
# installs them).
#
#   scripts/test/test_serve.sh
#
# A 64 MiB cache file for a 256 MiB backing file. Every write sent to the
# export is also applied to a local model image (the same qemu-io commands,
# dd for the copies), and the model is compared with the export and, after a
# clean stop, with the backing file itself:
#   1. create; a second create without --force, a bad mode and a bad segment
#      size are refused;
#   2. qemu-img convert of a random 32 MiB image; `ssdcache maintain`: the
#      caching-and-eviction procedure caches its 32 segments (PWC's first
#      fill); `status` says so; qemu-img compare; a second server on the same
#      cache is refused;
#   3. qemu-io pattern writes/reads (plain, FUA, flush) in cached and uncached
#      segments; `status` counts dirty segments, `flush` writes them back;
#      SIGUSR1 runs the procedure too; nbdcopy --flush of a random 16 MiB file
#      in, the whole export out, cmp with the model;
#   4. SIGTERM: exit 0; `check` says healthy and clean; the backing file
#      equals the model (every dirty segment was written back); restart,
#      qemu-img compare;
#   5. kill -9 after a flushed write into a cached segment (the backing file
#      does not have it: it is on the SSD only); `check` and `status` say not
#      clean; restart (recovery writes the SSD back), read the pattern, compare;
#   6. a write-through LRU cache: fills on read misses, writes reach the
#      backing file at once, nothing dirty; kill -9 and restart cold; compare;
#   7. a read-only LRU cache (paper 000's baseline; created by its alias
#      write-invalidate): a flushed write to a cached segment goes to the
#      backing file only and drops the segment; kill -9, restart (cold), the
#      new data is read back; then a write to a cached segment just before a
#      clean stop: the warm restart must not serve the dropped slot's old copy.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh

for t in qemu-io qemu-img nbdcopy; do
  command -v "$t" >/dev/null || die "$t missing: run scripts/test/test_nbd.sh once (it installs the NBD clients)"
done

step "build ssdcache"
# SERVE_PROFILE=release reuses the test command's release build.
PROFILE=${SERVE_PROFILE:-debug}
build_ssdcache "$PROFILE"

work_dir
CACHE=$WORK/cache.img BACKING=$WORK/backing.img MODEL=$WORK/model.img
truncate -s 64M "$CACHE"
truncate -s 256M "$BACKING" "$MODEL"

step "create"
"$BIN" create "$CACHE" "$BACKING" --segment 1MiB
if "$BIN" create "$CACHE" "$BACKING" 2>"$WORK/create.err"; then die "create overwrote a cache without --force"; fi
grep -q 'already holds' "$WORK/create.err" || { cat "$WORK/create.err"; die "no clear refusal"; }
if "$BIN" create "$CACHE" "$BACKING" --force --mode write-sideways 2>"$WORK/mode.err"; then die "a bad mode accepted"; fi
grep -q 'unknown cache mode' "$WORK/mode.err" || { cat "$WORK/mode.err"; die "no clear mode refusal"; }
if "$BIN" create "$CACHE" "$BACKING" --force --segment 64KiB 2>"$WORK/seg.err"; then die "64 KiB segments accepted"; fi
grep -q '128 KiB to 1 MiB' "$WORK/seg.err" || { cat "$WORK/seg.err"; die "no clear segment refusal"; }
"$BIN" check "$CACHE" | tee "$WORK/check.out" | tail -2
grep -q '^healthy' "$WORK/check.out" || die "a fresh cache is not healthy"

RUN=0
start() {
  RUN=$((RUN + 1))
  "$BIN" serve "$CACHE" "$BACKING" ${SERVE_OPTS:-} --listen 127.0.0.1:0 --export disk -v \
    >"$WORK/server$RUN.out" 2>"$WORK/server$RUN.err" &
  SERVER_PID=$!
  wait_listening "$SERVER_PID" "$WORK/server$RUN.out" "$WORK/server$RUN.err" server
  echo "serving $URI (pid $SERVER_PID): $(grep -o 'started a .* cache ([A-Za-z]*' "$WORK/server$RUN.err")"
}
# status_field KEY: one field of `ssdcache status --json` (the running server's).
status_field() {
  "$BIN" status "$CACHE" --json | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d['status']['$1'])"
}
stop() { # SIGTERM; the server must exit 0
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [ $rc -eq 0 ] || { cat "$WORK/server$RUN.err"; die "server exited $rc after SIGTERM"; }
  grep -q 'stopped cleanly' "$WORK/server$RUN.err" || die "no clean stop logged"
}
# The same qemu-io commands on the export and on the model.
qio() {
  local out
  for target in "$URI" "$MODEL"; do
    out=$(qemu-io -f raw "$target" "$@" 2>&1) || { echo "$out"; die "qemu-io on $target failed"; }
    if grep -Eiq 'fail|error|mismatch' <<<"$out"; then echo "$out"; die "qemu-io on $target reported an error"; fi
  done
  echo "   qemu-io ops: $(echo "$out" | grep -Ec '^(wrote|read)')"
}
into_model() { dd if="$1" of="$MODEL" bs=1M seek="$2" conv=notrunc status=none; }

start

step "qemu-img convert + compare"
head -c 32M /dev/urandom >"$WORK/src32.img"
qemu-img convert -n -f raw -O raw "$WORK/src32.img" "$URI"
into_model "$WORK/src32.img" 0

# Before anything reads the whole export: 32 segments touched, fewer than the
# 63 slots, so PWC's first-fill rule makes them all hot.
step "maintenance on demand (ssdcache maintain), status, one server per cache"
"$BIN" maintain "$CACHE" | tee "$WORK/maintain.out"
grep -q '32 segment(s) newly cached' "$WORK/maintain.out" || die "not the 32 touched segments cached"
[ "$(status_field cached)" = 32 ] || die "status: not 32 segments cached"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "export differs after convert"
"$BIN" status "$CACHE"
if "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --control "$WORK/other.ctl" 2>"$WORK/second.err"; then
  die "a second server started on the same cache"
fi
grep -q 'in use by another ssdcache process' "$WORK/second.err" || { cat "$WORK/second.err"; die "no clear refusal"; }

step "qemu-io: patterns, FUA, flush (cached and uncached segments)"
qio -c 'write -P 0xa5 8M 1M' -c 'read -P 0xa5 8M 1M' \
  -c 'write -f -P 0x5a 9M 256k' -c 'read -P 0x5a 9M 256k' -c 'flush' \
  -c 'write -P 0x77 4097 3000' -c 'read -P 0x77 4097 3000' \
  -c 'write -P 0x33 200M 1M' -c 'read -P 0x33 200M 1M' -c 'flush'
dirty=$(status_field dirty)
[ "$dirty" -ge 2 ] || die "status: $dirty dirty segments after writes to segments 8 and 9"
"$BIN" flush "$CACHE" | tee "$WORK/flush.out"
grep -q "written back: $dirty segment" "$WORK/flush.out" || die "flush did not write back the $dirty dirty segments"
[ "$(status_field dirty)" = 0 ] || die "status: dirty segments left after flush"
qemu-io -f raw "$BACKING" -c 'read -P 0xa5 8M 1M' | grep -q '^read' || die "flush: the backing file lacks segment 8"

step "maintenance by signal (SIGUSR1)"
kill -USR1 "$SERVER_PID"
for _ in $(seq 100); do grep -q 'maintenance:' "$WORK/server$RUN.err" && break; sleep 0.1; done
grep 'maintenance:' "$WORK/server$RUN.err" || die "no maintenance after SIGUSR1"

step "nbdcopy --flush in and out"
head -c 16M /dev/urandom >"$WORK/src16.img"
nbdcopy --flush "$WORK/src16.img" "$URI"
into_model "$WORK/src16.img" 0
nbdcopy "$URI" "$WORK/out.img"
cmp "$MODEL" "$WORK/out.img" || die "nbdcopy out differs from the model"

step "SIGTERM: clean stop, check, backing file = model, restart"
stop
"$BIN" check "$CACHE" | tee "$WORK/check.out"
grep -q '^healthy' "$WORK/check.out" || die "check: not healthy after a clean stop"
grep -q 'in use: .*clean: shut down cleanly' "$WORK/check.out" || die "check: not clean after a clean stop"
cmp "$MODEL" "$BACKING" || die "the backing file lacks written-back data after a clean stop"
start
grep -q 'cache (Clean' "$WORK/server$RUN.err" || die "restart after a clean stop was not a clean start"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "export differs after restart"

step "kill -9 after a flushed write to a cached segment"
qio -c 'write -P 0x3c 8704k 64k' -c 'flush' -c 'read -P 0x3c 8704k 64k'
if qemu-io -f raw "$BACKING" -c 'read -P 0x3c 8704k 64k' 2>&1 | grep -q '^read'; then
  # The write landed on the backing file: segment 8 was not cached, so this
  # trial would not test the SSD's recovery.
  die "segment 8 is not cached (the write reached the backing file)"
fi
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
"$BIN" check "$CACHE" | tee "$WORK/check.out" | tail -2
grep -q '^healthy' "$WORK/check.out" || die "check: not healthy after kill -9"
grep -q 'not clean' "$WORK/check.out" || die "check: clean after kill -9?"
"$BIN" status "$CACHE" | tee "$WORK/status.out"
grep -q 'no server running' "$WORK/status.out" || die "status: a server after kill -9?"
grep -q 'not clean' "$WORK/status.out" || die "status from the files: clean after kill -9?"
start
grep -q 'cache (Unclean' "$WORK/server$RUN.err" || die "restart after kill -9 was not an unclean-start recovery"
qemu-io -f raw "$URI" -c 'read -P 0x3c 8704k 64k' | grep -q '^read' || die "the flushed pattern was lost"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "export differs from the model after kill -9 recovery"
stop
cmp "$MODEL" "$BACKING" || die "backing file differs from the model at the end"
"$BIN" check "$CACHE" | grep -q '^healthy' || die "check: not healthy at the end"

step "write-through LRU cache: fills on misses, nothing dirty, kill -9 restarts cold"
"$BIN" create "$CACHE" "$BACKING" --force --mode write-through --segment 256KiB
start
grep -q 'started a write-through cache' "$WORK/server$RUN.err" || die "not a write-through cache"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "write-through export differs from the model"
[ "$(status_field filled)" -gt 0 ] || die "status: no segment filled by read misses"
qio -c 'write -P 0x4b 1M 512k' -c 'read -P 0x4b 1M 512k'
qemu-io -f raw "$BACKING" -c 'read -P 0x4b 1M 512k' | grep -q '^read' || die "write-through: the backing file lacks a write"
[ "$(status_field dirty)" = 0 ] || die "write-through: dirty segments"
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
cmp "$MODEL" "$BACKING" || die "write-through: the backing file differs from the model after kill -9"
start
grep -q 'cache (Unclean' "$WORK/server$RUN.err" || die "write-through restart after kill -9 was not unclean"
[ "$(status_field cached)" = 0 ] || die "write-through: a cache after kill -9 must restart empty"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "write-through export differs after kill -9"
stop

step "read-only LRU cache: a write invalidates, kill -9 and clean stops never serve the old copy"
"$BIN" create "$CACHE" "$BACKING" --force --mode write-invalidate --segment 256KiB
start
grep -q 'started a read-only cache' "$WORK/server$RUN.err" || die "not a read-only cache"
# Reading the whole export leaves its last ~60 MiB cached (LRU, 64 MiB cache).
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "read-only export differs from the model"
[ "$(status_field filled)" -gt 0 ] || die "read-only: no segment filled by read misses"
qio -c 'read -P 0 250M 256k'
hits=$(status_field read_hits)
qio -c 'write -P 0x2d 250M 4k' -c 'flush' -c 'read -P 0x2d 250M 4k'
[ "$(status_field write_hits_to_backing)" -ge 1 ] || die "read-only: the write did not find its segment cached"
[ "$(status_field read_hits)" = "$hits" ] || die "read-only: the read after the write was a hit (stale copy?)"
qemu-io -f raw "$BACKING" -c 'read -P 0x2d 250M 4k' | grep -q '^read' || die "read-only: the backing file lacks a write"
[ "$(status_field dirty)" = 0 ] || die "read-only: dirty segments"
qio -c 'read -P 0 251M 256k' -c 'write -P 0x2e 251M 4k' -c 'flush'
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
cmp "$MODEL" "$BACKING" || die "read-only: the backing file differs from the model after kill -9"
start
grep -q 'cache (Unclean' "$WORK/server$RUN.err" || die "read-only restart after kill -9 was not unclean"
[ "$(status_field cached)" = 0 ] || die "read-only: a cache after kill -9 must restart empty"
qio -c 'read -P 0x2d 250M 4k' -c 'read -P 0x2e 251M 4k'
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "read-only export differs after kill -9"
qio -c 'read -P 0 252M 256k' -c 'write -P 0x2f 252M 4k'
stop
start
grep -q 'cache (Clean' "$WORK/server$RUN.err" || die "read-only restart after a clean stop was not clean"
[ "$(status_field cached)" -gt 0 ] || die "read-only: a clean stop must restart warm"
qio -c 'read -P 0x2f 252M 4k'
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "read-only export differs after a clean stop"
stop
cmp "$MODEL" "$BACKING" || die "read-only: the backing file differs from the model at the end"

step "write-back with a replacement policy, switched at run time (ssdcache set), kill -9"
"$BIN" create "$CACHE" "$BACKING" --force --segment 256KiB
SERVE_OPTS="--policy s3fifo" start
[ "$(status_field policy)" = s3fifo ] || die "not write-back S3-FIFO"
qio -c 'write -P 0x61 2M 1M' -c 'write -P 0x62 100M 512k' -c 'flush' -c 'read -P 0x61 2M 1M'
[ "$(status_field dirty)" -gt 0 ] || die "write-back S3-FIFO: write hits must stay dirty"
"$BIN" set "$CACHE" policy=lru max-dirty=10% >/dev/null || die "set policy=lru failed"
[ "$(status_field policy)" = lru ] || die "set: the policy did not change"
qio -c 'write -P 0x63 3M 256k' -c 'read -P 0x62 100M 512k'
nbdcopy --flush "$WORK/src32.img" "$URI"
into_model "$WORK/src32.img" 0
"$BIN" set "$CACHE" mode=write-through max-dirty=none >/dev/null || die "set mode=write-through failed"
[ "$(status_field mode)" = write-through ] && [ "$(status_field dirty)" = 0 ] || die "write-through: still dirty"
cmp <(head -c 32M "$BACKING") "$WORK/src32.img" || die "the switch did not write every dirty segment back"
qio -c 'write -P 0x64 200M 512k' -c 'read -P 0x64 200M 512k'
"$BIN" set "$CACHE" mode=write-back policy=sieve >/dev/null || die "set mode=write-back failed"
qio -c 'write -P 0x65 201M 256k' -c 'flush'
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
start
[ "$(status_field mode)" = write-back ] && [ "$(status_field policy)" = sieve ] || die "the mode and policy set were not kept"
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "export differs from the model after switches and kill -9"
stop
cmp "$MODEL" "$BACKING" || die "switches: the backing file differs from the model at the end"
step "trims reach the disk, extended headers (qemu-io/qemu-img 10, nbdinfo --map, nbdcopy)"
"$BIN" create "$CACHE" "$BACKING" --force --segment 256KiB
# (-v once more: the per-connection lines are debug)
SERVE_OPTS="--policy lru -v" start
# qemu 10 asks for extended headers; the server says which headers a connection used.
qio -c 'write -P 0x71 8M 2M' -c 'write -P 0x72 20M 1M' -c 'flush' -c 'read -P 0x71 8M 2M'
grep -q 'extended_headers=1' "$WORK/server$RUN.err" || grep -q 'with extended headers' "$WORK/server$RUN.err" ||
  die "qemu-io 10 did not negotiate extended headers"
before=$(du -k "$BACKING" | cut -f1)
qio -c 'discard 8M 2M' -c 'flush'
dd if=/dev/zero of="$MODEL" bs=1M seek=8 count=2 conv=notrunc status=none
[ "$(du -k "$BACKING" | cut -f1)" -lt "$before" ] || die "a trim punched no hole in the backing file"
nbdinfo --map "$URI" >"$WORK/map.out"
awk '$1 == 8388608 && $4 ~ /hole/ { found = 1 } END { exit !found }' "$WORK/map.out" ||
  { cat "$WORK/map.out"; die "nbdinfo --map shows no hole where the trim was"; }
[ "$(status_field trimmed_bytes)" -ge $((2 << 20)) ] || die "status counts no trimmed bytes"
# A sparse image copied with zeroes that may punch holes: the export reads back the image.
truncate -s 32M "$WORK/sparse.img"
dd if=/dev/urandom of="$WORK/sparse.img" bs=1M seek=5 count=1 conv=notrunc status=none
qemu-img convert -n -f raw -O raw --target-is-zero "$WORK/sparse.img" "$URI" 2>/dev/null ||
  qemu-img convert -n -f raw -O raw "$WORK/sparse.img" "$URI"
nbdcopy --flush "$WORK/sparse.img" "$URI"
into_model "$WORK/sparse.img" 0
qemu-img compare -q -f raw -F raw "$MODEL" "$URI" || die "export differs from the model after trims and sparse copies"
stop
cmp "$MODEL" "$BACKING" || die "trims: the backing file differs from the model at the end"
step "all passed"
