#!/usr/bin/env bash
# Structured replies, base:allocation block status, NBD_CMD_CACHE and read-only
# exports of `ssdcache serve`, against real NBD clients (nbdinfo, nbdcopy,
# qemu-img, qemu-io, python3-libnbd; scripts/test/test_nbd.sh installs them).
#
#   scripts/test/test_structured.sh        SERVE_PROFILE=release scripts/test/test_structured.sh
#
# BACKING is a sparse 64 MiB file with data only at 8 MiB (1 MiB) and 32 MiB
# (4 KiB); a write-back cache of 15 one-MiB slots in front of it.
#   1. nbdinfo: structured replies, the base:allocation context, can_cache,
#      can_df; `nbdinfo --map` and `qemu-img map --output=json` report exactly
#      those two data ranges and holes (reading as zero) everywhere else;
#   2. two segments over BACKING's holes are read and cached (`ssdcache
#      maintain`), and a 4 KiB write goes into one of them (dirty: on the SSD
#      only, BACKING still has a hole there, checked with SEEK_DATA): both maps
#      now report both segments as data (what the cache holds is data);
#   3. nbdcopy of the export to a new file: it reads only the data block
#      status reports (the cache's request bytes grow by a few MiB, not 64),
#      the copy has the same bytes as a model of the disk (cmp) and stays
#      sparse (allocated blocks a few MiB, holes where the export has them);
#   4. python3-libnbd with and without structured replies: every read returns
#      the same bytes, equal to the model; qemu-io reads the written pattern;
#   5. SIGTERM: BACKING now equals the model (the dirty write went back);
#   6. `serve --read-only`: nbdinfo says read-only (no trim, no zero);
#      qemu-io cannot open it for writing; libnbd with its client-side checks
#      off sends write, trim and zero and gets EPERM for each, then reads;
#      BACKING is unchanged after the stop;
#   7. a write-through (LRU) cache served --read-only: `h.cache()` over two
#      segments fills them (status: 1 hint, 2 segments filled, no read miss),
#      the next read of them is a hit, and a read elsewhere still fills the
#      cache (a read-only export does not stop the cache working).
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh

PY=/usr/bin/python3 # Debian's python, where python3-libnbd installs
for t in qemu-io qemu-img nbdinfo nbdcopy; do
  command -v "$t" >/dev/null || die "$t missing: run scripts/test/test_nbd.sh once (it installs the NBD clients)"
done
"$PY" -c 'import nbd' 2>/dev/null || die "python3-libnbd missing: run scripts/test/test_nbd.sh once"

step "build ssdcache"
PROFILE=${SERVE_PROFILE:-debug}
build_ssdcache "$PROFILE"

work_dir
M=1048576
CACHE=$WORK/cache.img BACKING=$WORK/backing.img MODEL=$WORK/model.img
truncate -s 16M "$CACHE"
truncate -s 64M "$BACKING"
head -c $M /dev/urandom | dd of="$BACKING" bs=1M seek=8 conv=notrunc status=none
head -c 4096 /dev/urandom | dd of="$BACKING" bs=4096 seek=$((32 * 256)) conv=notrunc status=none
cp --sparse=always "$BACKING" "$MODEL"
cp --sparse=always "$BACKING" "$WORK/backing.orig"

RUN=0
start() { # start CACHE [serve flags...]
  local cache=$1
  shift
  RUN=$((RUN + 1))
  "$BIN" serve "$cache" "$BACKING" "$@" --listen 127.0.0.1:0 --export disk -v \
    >"$WORK/server$RUN.out" 2>"$WORK/server$RUN.err" &
  SERVER_PID=$!
  wait_listening "$SERVER_PID" "$WORK/server$RUN.out" "$WORK/server$RUN.err" server
  echo "serving $URI (pid $SERVER_PID) $*"
}
stop() {
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [ $rc -eq 0 ] || { cat "$WORK/server$RUN.err"; die "server exited $rc after SIGTERM"; }
}
status_field() { # status_field CACHE KEY
  "$BIN" status "$1" --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['status']['$2'])"
}

# check_maps "START:LEN:data|hole ..." (MiB, or b<bytes>): `nbdinfo --map` and
# `qemu-img map --output=json` of the export must say exactly that.
check_maps() {
  nbdinfo --map "$URI" >"$WORK/map.txt"
  qemu-img map --output=json -f raw "$URI" >"$WORK/map.json"
  "$PY" - "$WORK/map.txt" "$WORK/map.json" "$@" <<'EOF'
import json, sys
M = 1 << 20
def size(s):
    return int(s[1:]) if s.startswith("b") else int(s) * M
want = []
for spec in sys.argv[3:]:
    a, n, kind = spec.split(":")
    want.append((size(a), size(n), kind))
def merged(extents):
    out = []
    for s, n, k in extents:
        if out and out[-1][2] == k and out[-1][0] + out[-1][1] == s:
            out[-1] = (out[-1][0], out[-1][1] + n, k)
        else:
            out.append((s, n, k))
    return out
# nbdinfo --map: "offset length type description"; type 3 = hole,zero, 0 = data
nbdinfo = []
for line in open(sys.argv[1]):
    off, n, t = (int(x) for x in line.split()[:3])
    assert t in (0, 3), f"unexpected base:allocation type {t}: {line}"
    nbdinfo.append((off, n, "hole" if t == 3 else "data"))
qemu = [(e["start"], e["length"], "hole" if e["zero"] and not e["data"] else "data") for e in json.load(open(sys.argv[2]))]
for name, got in (("nbdinfo --map", merged(nbdinfo)), ("qemu-img map", merged(qemu))):
    if got != want:
        sys.exit(f"{name}: got {got}\n want {want}")
print(f"   nbdinfo --map and qemu-img map: {len(want)} extents as expected")
EOF
}

step "create a write-back cache; nbdinfo"
"$BIN" create "$CACHE" "$BACKING" --segment 1MiB >/dev/null
start "$CACHE"
nbdinfo --no-content "$URI" >"$WORK/info.txt"
for want in 'using structured packets' 'base:allocation' 'can_cache: true' 'can_df: true' 'is_read_only: false'; do
  grep -q "$want" "$WORK/info.txt" || { cat "$WORK/info.txt"; die "nbdinfo does not say: $want"; }
done

step "block status of BACKING's holes (nbdinfo --map, qemu-img map)"
check_maps 0:8:hole 8:1:data 9:23:hole 32:b4096:data b$((32 * M + 4096)):b$((32 * M - 4096)):hole

step "cached segments over holes are data; a dirty write over a hole too"
qemu-io -f raw "$URI" -c 'read -P 0 48M 64k' -c 'read -P 0 50M 64k' >/dev/null
"$BIN" maintain "$CACHE" | grep -q '2 segment(s) newly cached' || die "segments 48 and 50 not cached"
qemu-io -f raw "$URI" -c 'write -P 0x5a 49216k 4k' -c 'flush' | grep -q '^wrote 4096' || die "write failed"
printf '\x5a%.0s' $(seq 4096) | dd of="$MODEL" bs=1k seek=49216 conv=notrunc status=none
[ "$(status_field "$CACHE" dirty)" = 1 ] || die "the write is not dirty in the cache"
"$PY" -c "
import os, sys
fd = os.open('$BACKING', os.O_RDONLY)
try:
    d = os.lseek(fd, 48 << 20, os.SEEK_DATA)
except OSError:
    d = 64 << 20
sys.exit(0 if d >= 49 << 20 else 'BACKING has data in segment 48: the write reached it')
"
check_maps 0:8:hole 8:1:data 9:23:hole 32:b4096:data b$((32 * M + 4096)):b$((16 * M - 4096)):hole \
  48:1:data 49:1:hole 50:1:data 51:13:hole

step "nbdcopy to a file: same bytes, still sparse, only the data read"
before=$(status_field "$CACHE" request_bytes)
nbdcopy "$URI" "$WORK/copy.img"
READ=$(($(status_field "$CACHE" request_bytes) - before))
echo "   nbdcopy read $READ bytes of the 64 MiB export"
# It skips what block status calls holes: about 3 MiB of data (8 MiB, 48 and 50 MiB, 4 KiB at 32 MiB).
[ "$READ" -le $((8 * M)) ] || die "nbdcopy read $READ bytes: it did not skip the holes"
cmp "$WORK/copy.img" "$MODEL" || die "nbdcopy's copy differs from the model"
ALLOC=$(($(stat -c %b "$WORK/copy.img") * $(stat -c %B "$WORK/copy.img")))
echo "   copy: $(stat -c %s "$WORK/copy.img") bytes, $ALLOC allocated"
[ "$ALLOC" -le $((6 * M)) ] || die "the copy is not sparse: $ALLOC bytes allocated for about 3 MiB of data"
"$PY" -c "
import os, sys
fd = os.open('$WORK/copy.img', os.O_RDONLY)
assert os.lseek(fd, 0, os.SEEK_DATA) == 8 << 20, 'no hole at the start of the copy'
assert os.lseek(fd, 9 << 20, os.SEEK_DATA) == 32 << 20, 'no hole at 9..32 MiB of the copy'
"

step "reads with and without structured replies are the same bytes"
"$PY" - "$URI" "$MODEL" <<'EOF'
import sys, nbd
uri, model = sys.argv[1], open(sys.argv[2], "rb").read()
plain, st = nbd.NBD(), nbd.NBD()
plain.set_request_structured_replies(False)
st.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
plain.connect_uri(uri)
st.connect_uri(uri)
assert not plain.get_structured_replies_negotiated(), "structured replies without asking"
assert st.get_structured_replies_negotiated(), "no structured replies"
assert st.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION), "no base:allocation"
assert st.can_df() and not plain.can_df(), "DF advertised wrong"
# libnbd's own block status call agrees with the maps: segment 8 is data, 0..8 MiB a hole
seen = []
st.block_status(16 << 20, 0, lambda ctx, off, entries, err: seen.extend(entries) or 0)
assert seen[:2] == [8 << 20, 3] and seen[2:4] == [1 << 20, 0], seen[:6]
n = 0
for off, ln in [(0, 4096), (8 << 20, 1 << 20), ((8 << 20) - 100, 300), ((48 << 20) + (63 << 10), 8192),
                ((32 << 20) - 1, 4098), (0, 32 << 20), (32 << 20, 32 << 20), ((64 << 20) - 1, 1)]:
    a = plain.pread(ln, off)
    b = st.pread(ln, off)
    chunks = []
    c = st.pread_structured(ln, off, lambda buf, o, status, err: chunks.append((o, len(buf), status)) or 0,
                            nbd.CMD_FLAG_DF)
    assert chunks == [(off, ln, nbd.READ_DATA)], f"DF read {off}+{ln}: chunks {chunks[:4]}"
    assert a == b == c == model[off:off + ln], f"read {off}+{ln} differs"
    n += 1
print(f"   {n} ranges equal (plain, structured, structured with DF: one data chunk) and equal to the model")
EOF
out=$(qemu-io -f raw "$URI" -c 'read -P 0x5a 49216k 4k' -c 'read -P 0 49220k 60k' 2>&1)
if grep -Eiq 'fail|error|mismatch' <<<"$out"; then echo "$out"; die "qemu-io read back wrong data"; fi

step "SIGTERM: BACKING holds the model"
stop
cmp "$BACKING" "$MODEL" || die "BACKING differs from the model after a clean stop"
cp --sparse=always "$BACKING" "$WORK/backing.before-ro"

step "serve --read-only"
start "$CACHE" --read-only
nbdinfo --no-content "$URI" >"$WORK/info.txt"
for want in 'is_read_only: true' 'can_trim: false' 'can_zero: false' 'can_cache: true'; do
  grep -q "$want" "$WORK/info.txt" || { cat "$WORK/info.txt"; die "nbdinfo does not say: $want"; }
done
if out=$(qemu-io -f raw "$URI" -c 'write -P 1 0 4k' 2>&1); then echo "$out"; die "qemu-io wrote to a read-only export"; fi
grep -Eiq 'permission denied|not permitted|read-only' <<<"$out" || { echo "$out"; die "qemu-io failed for another reason"; }
echo "   qemu-io: $out"
"$PY" - "$URI" <<'EOF'
import errno, sys, nbd
h = nbd.NBD()
h.set_strict_mode(0)  # no client-side checks: the requests reach the server
h.connect_uri(sys.argv[1])
assert h.is_read_only()
for name, call in [("write", lambda: h.pwrite(b"x" * 4096, 0)), ("trim", lambda: h.trim(4096, 0)),
                   ("zero", lambda: h.zero(4096, 0)), ("write fua", lambda: h.pwrite(b"y", 9, nbd.CMD_FLAG_FUA))]:
    try:
        call()
        sys.exit(f"{name} on a read-only export succeeded")
    except nbd.Error as e:
        assert e.errnum == errno.EPERM, f"{name}: {e}"
assert h.pread(4, 8 << 20) and h.pread(4096, 0) == bytes(4096)
h.flush()
print("   write, trim, zero, FUA write: EPERM from the server; reads and flush work")
EOF
stop
cmp "$BACKING" "$WORK/backing.before-ro" || die "a read-only export changed BACKING"

step "NBD_CMD_CACHE fills a write-through cache; reads fill it under --read-only too"
CACHE2=$WORK/cache2.img
truncate -s 16M "$CACHE2"
"$BIN" create "$CACHE2" "$BACKING" --segment 1MiB --mode write-through >/dev/null
start "$CACHE2" --read-only
"$PY" - "$URI" <<'EOF'
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.can_cache()
h.cache(2 << 20, 8 << 20)  # segments 8 and 9
EOF
for kv in cache_hints=1 cache_hint_fills=2 read_misses=0 read_hits=0 cached=2; do
  [ "$(status_field "$CACHE2" "${kv%=*}")" = "${kv#*=}" ] || { "$BIN" status "$CACHE2"; die "after the hint: not $kv"; }
done
qemu-io -f raw -r "$URI" -c 'read 8M 1M' -c 'read 9M 4k' >/dev/null
for kv in read_hits=2 read_misses=0; do
  [ "$(status_field "$CACHE2" "${kv%=*}")" = "${kv#*=}" ] || { "$BIN" status "$CACHE2"; die "after reading: not $kv"; }
done
qemu-io -f raw -r "$URI" -c 'read 20M 4k' >/dev/null
for kv in read_misses=1 cached=3; do
  [ "$(status_field "$CACHE2" "${kv%=*}")" = "${kv#*=}" ] || { "$BIN" status "$CACHE2"; die "a read miss did not fill: not $kv"; }
done
"$BIN" status "$CACHE2" | grep -E '^(reads|cache hints)'
stop
cmp "$BACKING" "$WORK/backing.before-ro" || die "BACKING changed"

step "all structured-reply, block-status, cache and read-only checks passed"
