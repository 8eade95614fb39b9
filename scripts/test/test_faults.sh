#!/usr/bin/env bash
# `ssdcache serve` under damaged metadata, failing devices and operator
# mistakes, with a real NBD client (qemu-io): one regression test per fault
# the integrity issue found, each checking every flushed write afterwards.
#
#   SERVE_PROFILE=release scripts/test/test_faults.sh       (~30 s on 2 cores)
#
#  1. one flipped bit in the newest metadata copy after kill -9: check stays
#     honest (not clean), serve recovers every flushed write and repairs it;
#  2. the cache file truncated under a running server: writes fail, nothing is
#     re-extended, SIGTERM writes nothing over BACKING, the exit is an error;
#  3. the first superblock copy zeroed: check names the damage and never says
#     `create`; create refuses; serve starts from the other copy and rewrites it;
#  4. create with swapped arguments, with CACHE = BACKING (also via a
#     symlink): refused, nothing written; serve over a copy of BACKING (another
#     disk of the same size, as far as it can tell): refused until --backing-moved;
#  5. serve --force over a cache whose metadata says dirty: refused without
#     --discard-dirty;
#  6. drain after kill -9: BACKING alone holds every flushed write, check clean;
#  7. a write-through cache whose fills hit ENOSPC (--inject-cache): every read
#     and write succeeds from BACKING; cache-device read errors: the same;
#  8. a start that fails after recovery (port in use): the cache stays clean
#     and no control socket is left behind; two servers on one BACKING: refused;
#  9. SIGTERM while a slow SIGUSR1 procedure runs: the server stops promptly;
# 10. a write-back cache degraded by cache-device write errors while 40
#     segments are dirty: after the allowed errors, not one write fails
#     (each dirty segment goes to BACKING with the write laid over it).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh
command -v qemu-io >/dev/null || die "qemu-io missing: run scripts/test/test_nbd.sh once (it installs the NBD clients)"

step "build ssdcache"
build_ssdcache "${SERVE_PROFILE:-debug}"
work_dir
CACHE=$WORK/cache.img BACKING=$WORK/backing.img SEG=131072

RUN=0
# serve [ARGS...]: starts a server on CACHE/BACKING; sets SERVER_PID, URI and
# ERR (its stderr; a new file each run, so no old "listening on" is read).
serve() {
  RUN=$((RUN + 1))
  ERR=$WORK/err$RUN
  "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --export disk "$@" >"$WORK/out$RUN" 2>"$ERR" &
  SERVER_PID=$!
  wait_listening "$SERVER_PID" "$WORK/out$RUN" "$ERR" server
}
# check_says TEXT: `ssdcache check` output contains TEXT (read from a file:
# a pipe into grep -q would end check early).
check_says() {
  "$BIN" check "$CACHE" >"$WORK/says.out" || true
  grep -q "$1" "$WORK/says.out"
}
stop() { # SIGTERM; sets RC to the exit status
  kill -TERM "$SERVER_PID"
  RC=0
  wait "$SERVER_PID" || RC=$?
  SERVER_PID=
}
crash() {
  kill_server "$SERVER_PID"
  SERVER_PID=
}
io() { qemu-io -f raw "$@" "$URI" >/dev/null; }
# hot N: makes PWC cache segments 0..N-1 (referenced five times each), then maintain.
hot() {
  local r i cmds=()
  for r in 1 2 3 4 5; do for i in $(seq 0 $(($1 - 1))); do cmds+=(-c "read $((i * SEG)) 512"); done; done
  io "${cmds[@]}"
  "$BIN" maintain "$CACHE" >/dev/null
}
# write_segments N BYTE: writes 8 KiB of BYTE at the start of segments 0..N-1, then flushes.
write_segments() {
  local i cmds=()
  for i in $(seq 0 $(($1 - 1))); do cmds+=(-c "write -P $2 $((i * SEG)) 8192"); done
  io "${cmds[@]}" -c flush
}
# backing_has N BYTE: BACKING itself holds the pattern in segments 0..N-1.
backing_has() {
  python3 - "$BACKING" "$1" "$2" "$SEG" <<'EOF' || die "BACKING lost flushed writes ($3)"
import sys
path, n, byte, seg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = open(path, "rb").read()
bad = [i for i in range(n) if d[i * seg:i * seg + 8192] != bytes([byte]) * 8192]
sys.exit(f"segments {bad} do not hold {byte:#x}" if bad else 0)
EOF
}
# export_has N BYTE: reads through the server.
export_has() {
  local i cmds=()
  for i in $(seq 0 $(($1 - 1))); do cmds+=(-c "read -P $2 $((i * SEG)) 8192"); done
  qemu-io -f raw "${cmds[@]}" "$URI" >"$WORK/read.out" 2>&1 || { cat "$WORK/read.out"; die "$3"; }
  ! grep -q 'Pattern verification failed' "$WORK/read.out" || { grep -m3 Pattern "$WORK/read.out"; die "$3"; }
}
meta_json() { "$BIN" check "$CACHE" --json || true; }
# flip OFFSET: flips one bit of CACHE at OFFSET.
flip() { python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^4]))" "$CACHE" "$1"; }
fresh() { # a new write-back (or $1) cache over a zeroed BACKING
  rm -f "$CACHE" "$BACKING"
  truncate -s 64M "$BACKING"
  "$BIN" create "$CACHE" "$BACKING" --size 16MiB --segment 128KiB --mode "${1:-write-back}" >/dev/null
}

step "1. one flipped bit in the newest metadata copy after kill -9"
fresh
serve
hot 20
stop
serve
write_segments 20 7
crash
newest=$(meta_json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['layout']['metadata'][2*(d['version']%2)][0])")
flip $((newest + 100))
"$BIN" check "$CACHE" >"$WORK/check.out" || { cat "$WORK/check.out"; die "check refused a single damaged copy"; }
grep -q 'in use: .*not clean' "$WORK/check.out" || { cat "$WORK/check.out"; die "check: not 'not clean' after kill -9 with one damaged copy"; }
! grep -q 'holds every write' "$WORK/check.out" || die "check claims the backing store holds every write"
grep -q 'unusable: checksum mismatch' "$WORK/check.out" || die "check does not name the damaged copy"
serve
grep -q 'Unclean' "$ERR" && grep -q 'repaired' "$ERR" || { cat "$ERR"; die "not an unclean start with a repair"; }
export_has 20 7 "flushed writes lost after one flipped bit"
stop
[ "$RC" = 0 ] || die "clean stop exited $RC"
backing_has 20 7 "after a clean stop"
echo "   20 flushed 8 KiB writes intact; damaged copy repaired"

step "2. the cache file truncated under a running server"
fresh
serve
hot 20
write_segments 20 9
stop
python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.write(b'\xaa'*0)" "$CACHE" # (no-op: keeps the file)
serve
write_segments 20 11 # dirty on the cache only
cp "$BACKING" "$WORK/backing.before"
truncate -s 0 "$CACHE"
if io -c "read 0 4096" 2>/dev/null; then echo "   (a dirty segment read did not fail?)"; fi
if io -c "write -P 1 $((3 * SEG)) 4096" 2>/dev/null; then die "a write to a cached segment succeeded on a truncated cache"; fi
[ "$(stat -c %s "$CACHE")" = 0 ] || die "the truncated cache file was re-extended"
stop
[ "$RC" != 0 ] || die "a server whose cache vanished exited 0"
grep -qi 'degraded\|could not be written back\|shrank' "$ERR" || { cat "$ERR"; die "no word of the failure"; }
cmp -s "$BACKING" "$WORK/backing.before" || python3 - "$BACKING" "$WORK/backing.before" "$SEG" <<'EOF' || die "BACKING was overwritten after the cache was truncated"
import sys
a, b, seg = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3])
# Only the failed write's own bytes (segment 3's first 4 KiB) may differ: it went through first.
diff = [i for i in range(0, len(a), 4096) if a[i:i + 4096] != b[i:i + 4096]]
sys.exit(0 if set(diff) <= {3 * seg} and not any(a[i:i + 4096] == bytes(4096) for i in diff) else f"changed at {diff[:5]}")
EOF
echo "   writes refused, file not re-extended, exit $RC, BACKING not overwritten"

step "3. first superblock copy zeroed on a cache holding flushed dirty data"
fresh
serve
hot 20
stop
serve
write_segments 20 5
crash
dd if=/dev/zero of="$CACHE" bs=8 count=1 conv=notrunc 2>/dev/null
"$BIN" check "$CACHE" >"$WORK/check.out" || { cat "$WORK/check.out"; die "check refused a cache with one good superblock copy"; }
grep -q 'superblock copy at offset 0: DAMAGED' "$WORK/check.out" || { cat "$WORK/check.out"; die "check does not name the damaged superblock"; }
! grep -q 'ssdcache create' "$WORK/check.out" || die "check advises create"
if "$BIN" create "$CACHE" "$BACKING" --segment 128KiB 2>"$WORK/create.err"; then die "create formatted over dirty data"; fi
if "$BIN" create "$CACHE" "$BACKING" --segment 128KiB --force 2>"$WORK/create.err"; then die "create --force formatted over dirty data"; fi
grep -q 'discard-dirty' "$WORK/create.err" || { cat "$WORK/create.err"; die "no clear refusal"; }
serve
grep -q 'rewritten' "$ERR" || { cat "$ERR"; die "the damaged superblock copy was not rewritten"; }
export_has 20 5 "flushed writes lost after a zeroed superblock"
stop
check_says 'both intact' || die "superblock not repaired"
# Both copies gone: never advise create.
sb2=$(meta_json | python3 -c "import json,sys; print(json.load(sys.stdin)['layout']['superblock'][1][0])")
dd if=/dev/zero of="$CACHE" bs=8 count=1 conv=notrunc 2>/dev/null
dd if=/dev/zero of="$CACHE" bs=8 count=1 seek=$((sb2 / 8)) conv=notrunc 2>/dev/null
if "$BIN" check "$CACHE" >"$WORK/check.out"; then die "check healthy without a superblock"; fi
grep -q 'do NOT run `ssdcache create`' "$WORK/check.out" || { cat "$WORK/check.out"; die "check does not warn off create"; }
echo "   check honest, create refused, serve repaired the copy, writes intact"

step "4. create: swapped arguments, the same file, a symlink; serve: another BACKING"
rm -f "$CACHE" "$BACKING"
head -c $((64 << 20)) /dev/urandom >"$BACKING"
truncate -s 16M "$CACHE"
sum=$(md5sum <"$BACKING")
if "$BIN" create "$BACKING" "$CACHE" --segment 128KiB 2>"$WORK/create.err"; then die "create wrote over a data file (swapped arguments)"; fi
grep -q 'holds data' "$WORK/create.err" || { cat "$WORK/create.err"; die "no clear refusal"; }
[ "$(md5sum <"$BACKING")" = "$sum" ] || die "the data file changed"
ln -s "$CACHE" "$WORK/link"
for pair in "$CACHE $CACHE" "$CACHE $WORK/link"; do
  # shellcheck disable=SC2086
  if "$BIN" create $pair --segment 128KiB --force 2>"$WORK/create.err"; then die "create accepted CACHE = BACKING ($pair)"; fi
  grep -q 'same file' "$WORK/create.err" || { cat "$WORK/create.err"; die "no clear refusal"; }
done
# serve over a copy of BACKING (same size, another file): refused unless --backing-moved.
fresh
serve
hot 5
write_segments 5 6
crash
cp "$BACKING" "$WORK/copy.img" && mv "$WORK/copy.img" "$BACKING"
if "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 2>"$WORK/moved.err"; then die "served another BACKING"; fi
grep -q 'backing-moved' "$WORK/moved.err" || { cat "$WORK/moved.err"; die "no clear refusal of another BACKING"; }
serve --backing-moved
export_has 5 6 "flushed writes lost after --backing-moved"
stop
echo "   refused, nothing written; another BACKING refused until --backing-moved"

step "5. serve --force over metadata that says dirty"
fresh
serve
hot 10
stop
serve
write_segments 10 3
crash
for off in $(meta_json | python3 -c "import json,sys; print(' '.join(str(o) for o, _ in json.load(sys.stdin)['layout']['metadata']))"); do
  flip $((off + 64)) # every copy damaged: nothing can be proven
done
if "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 2>"$WORK/serve.err"; then die "serve started without metadata"; fi
if "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --force 2>"$WORK/serve.err"; then die "serve --force discarded possibly dirty data"; fi
grep -q 'discard-dirty' "$WORK/serve.err" || { cat "$WORK/serve.err"; die "no clear refusal"; }
echo "   refused without --discard-dirty"

step "6. drain after kill -9"
fresh
serve
hot 20
stop
serve
write_segments 20 13
crash
"$BIN" drain "$CACHE" "$BACKING" >"$WORK/drain.out" || { cat "$WORK/drain.out"; die "drain failed"; }
grep -q 'written back and verified: 20 segment' "$WORK/drain.out" || { cat "$WORK/drain.out"; die "drain did not write 20 segments back"; }
backing_has 20 13 "after drain"
check_says 'clean: shut down cleanly' || die "check does not call a drained cache clean"
echo "   20 segments written back and verified; check: clean"

step "7. write-through fills hitting ENOSPC, cache reads failing"
fresh write-through
serve --inject-cache write:enospc
for i in $(seq 0 99); do io -c "read -P 0 $(((i % 30) * SEG + 512)) 4096" || die "read $i failed under ENOSPC fills"; done
for i in $(seq 0 39); do io -c "write -P $((i % 200 + 1)) $(((i * 7 % 30) * SEG)) 4096" || die "write miss $i failed under ENOSPC fills"; done
stop
python3 - "$BACKING" "$SEG" <<'EOF' || die "write misses never reached BACKING"
import sys
d, seg = open(sys.argv[1], "rb").read(), int(sys.argv[2])
last = {}
for i in range(40):
    last[i * 7 % 30] = i % 200 + 1
bad = [h for h, v in last.items() if d[h * seg:h * seg + 4096] != bytes([v]) * 4096]
sys.exit(f"segments {bad}" if bad else 0)
EOF
serve --inject-cache read:eio
for i in $(seq 0 29); do io -c "read -P 0 $((i * SEG + 8192)) 4096" || die "read $i failed under cache read errors"; done
"$BIN" status "$CACHE" >"$WORK/status.out" && die "status exit 0 on a degraded cache" || true
grep -q DEGRADED "$WORK/status.out" || { cat "$WORK/status.out"; die "status does not say degraded"; }
stop
echo "   100 reads and 40 write misses served from BACKING; read errors degraded the cache"

step "8. a start that fails after recovery; a second cache on the same BACKING"
fresh
serve
hot 5
write_segments 5 4
port=${ADDR##*:}
"$BIN" serve "$CACHE" "$BACKING" --listen "127.0.0.1:$port" 2>"$WORK/again.err" && die "a second server started" || true
truncate -s 16M "$WORK/other.img"
"$BIN" create "$WORK/other.img" "$BACKING" --segment 128KiB 2>"$WORK/other.err" && die "a second cache was created on a served BACKING" || true
grep -q 'in use' "$WORK/other.err" || { cat "$WORK/other.err"; die "no clear refusal"; }
stop
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)" >"$WORK/port" &
BUSY_PID=$!
until [ -s "$WORK/port" ]; do sleep 0.02; done
"$BIN" serve "$CACHE" "$BACKING" --listen "127.0.0.1:$(cat "$WORK/port")" 2>"$WORK/port.err" && die "served on a port in use" || true
kill "$BUSY_PID"
grep -q 'listening on' "$WORK/port.err" || { cat "$WORK/port.err"; die "no clear error for a port in use"; }
check_says 'clean: shut down cleanly' || die "a failed start left the cache unclean"
[ ! -e "$CACHE.ctl" ] || die "a failed start left its control socket"
"$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --export "$(head -c 5000 /dev/zero | tr '\0' x)" 2>"$WORK/name.err" && die "a 5000-byte export name accepted" || true
check_says 'clean: shut down cleanly' || die "a bad export name left the cache unclean"
echo "   refused before recovery; the cache stays clean"

step "9. SIGTERM during a slow procedure"
fresh
serve --backing-model 'hdd(model=rpm7200,scale=1)'
hot 60
cmds=()
for r in 1 2 3 4 5; do for i in $(seq 60 119); do cmds+=(-c "read $((i * SEG)) 512"); done; done
io "${cmds[@]}" # 60 more hot segments: the next procedure copies 60 from the slow disk
kill -USR1 "$SERVER_PID"
sleep 0.3
t0=${EPOCHREALTIME/./}
stop
ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
[ "$RC" = 0 ] || { cat "$ERR"; die "stop during a procedure exited $RC"; }
grep -q 'interrupted' "$ERR" || echo "   (the procedure had finished before SIGTERM)"
[ "$ms" -lt 5000 ] || die "the server took $ms ms to stop during a procedure"
check_says 'clean: shut down cleanly' || die "not clean after a stop during a procedure"
echo "   stopped in $ms ms, clean"

step "10. a degraded write-back cache with 40 dirty segments: no burst of failed writes"
fresh
# 40 fills by the procedure and 40 dirtying writes reach the cache device; every cache write after them fails.
serve --inject-cache write:eio:after=80 --max-cache-errors 8
hot 40
write_segments 40 17
failed=0
for i in $(seq 0 39); do io -c "write -P 34 $((i * SEG)) 8192" 2>/dev/null || failed=$((failed + 1)); done
[ "$failed" = 8 ] || { cat "$ERR"; die "$failed of 40 writes failed; the 8 allowed errors expected"; }
grep -q DEGRADED "$ERR" || { cat "$ERR"; die "the cache did not go degraded"; }
for i in $(seq 0 39); do io -c "write -P 51 $((i * SEG + 16384)) 8192" || die "write $i to a degraded cache failed"; done
io -c flush
stop
python3 - "$BACKING" "$SEG" <<'EOF' || die "BACKING does not hold every acknowledged write"
import sys
d, seg = open(sys.argv[1], "rb").read(), int(sys.argv[2])
head = lambda h: d[h * seg:h * seg + 8192]
bad = [h for h in range(40) if d[h * seg + 16384:h * seg + 24576] != bytes([51]) * 8192]
# The 8 failed writes left their segment's dirty bytes (17); the others wrote 34.
bad += [h for h in range(40) if head(h) not in (bytes([34]) * 8192, bytes([17]) * 8192)]
bad += [h for h in range(8, 40) if head(h) != bytes([34]) * 8192]
sys.exit(f"segments {sorted(set(bad))}" if bad else 0)
EOF
echo "   8 allowed errors, then 72 writes to a degraded cache: none failed; BACKING holds them all"

echo
echo "test_faults: 10 passed, 0 failed"
