#!/usr/bin/env bash
# The NBD server (crates/server) against real NBD clients.
#
#   scripts/test/test_nbd.sh          (from anywhere; root for the apt install step)
#   NBD_PROFILE=release scripts/test/test_nbd.sh    (serve a release build of the example)
#
# Installs the clients when missing (qemu-utils, libnbd-bin, python3-libnbd,
# fio, nbdkit from Debian; nbdkit is installed with them but not used yet),
# builds the serve_file example, serves a sparse 512 MiB temporary file on a
# kernel-chosen loopback port, and runs:
#   1. qemu-io: pattern writes/reads (write -P / read -P), FUA writes (write -f;
#      qemu-io 10 spells FUA -f, there is no -F), flush, discard, write zeroes
#      with and without unmap (write -z / write -z -u, i.e. WRITE_ZEROES with
#      and without NO_HOLE), unaligned I/O, pipelined aio_write + aio_flush;
#   2. qemu-img convert of a 64 MiB random image (with a zero gap) into the
#      export, then qemu-img compare;
#   3. nbdinfo on the export (size and every capability flag) and --list;
#   4. nbdcopy into and out of the export, --flush --connections 4, from a
#      sparse file with data in each 128 MiB slice (nbdcopy's unit of work per
#      connection), then cmp and qemu-img compare;
#   5. fio --ioengine=nbd: random 4k writes at iodepth 16 with --verify=crc32c
#      and --fsync=16, then a random trim job;
#   6. python3-libnbd: error replies (read past the end → EINVAL, write and
#      zero past the end → ENOSPC, trim past the end → EINVAL, read over the
#      max block size → EINVAL), as simple replies and as structured error
#      chunks, each followed by a working request on the same connection,
#      NBD_OPT_GO of an unknown export then of the right one, the export
#      list, 64 pipelined aio writes;
#   7. SIGTERM: the server must drain, sync and exit 0, and the file on disk
#      must hold the last data written through it.
# Besides each client's own verdict, every step checks the server's
# per-connection counters (logged at -vv when a connection closes) for the
# commands and flags that step must have sent: FUA, flush, trim, write zeroes
# with/without NO_HOLE, 4 connections that each did I/O, exactly the provoked
# errors. Any mismatch fails the script. About 10 s after the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source scripts/lib/common.sh

step "clients"
PY=/usr/bin/python3 # Debian's python, where python3-libnbd installs
have_all() {
  for t in qemu-io qemu-img nbdinfo nbdcopy fio; do command -v "$t" >/dev/null || return 1; done
  "$PY" -c 'import nbd' 2>/dev/null || return 1
  fio --enghelp 2>/dev/null | grep -qw nbd || return 1
}
if ! have_all; then
  echo "installing NBD clients with apt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q qemu-utils libnbd-bin python3-libnbd fio nbdkit >/dev/null
  have_all || die "NBD clients still missing after apt-get install"
fi
echo "$(qemu-io --version | sed -n 1p), $(nbdinfo --version | tr '\n' ' ')$(fio --version)"

# NBD_PROFILE=release reuses a release build (e.g. after `cargo test --release`).
PROFILE=${NBD_PROFILE:-dev}
step "build serve_file ($PROFILE)"
cargo build -q --locked --profile "$PROFILE" -p ssdcache-server --example serve_file
SERVER=${CARGO_TARGET_DIR:-$ROOT/target}/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")/examples/serve_file

work_dir
SIZE=$((512 << 20)) # sparse; nbdcopy hands each connection 128 MiB, so 4 need 512
truncate -s $SIZE "$WORK/disk.img"

step "start server"
"$SERVER" "$WORK/disk.img" --listen 127.0.0.1:0 --export disk --description "test_nbd disk" -vv \
  >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
wait_listening "$SERVER_PID" "$WORK/server.out" "$WORK/server.err" server
echo "serving $URI (pid $SERVER_PID)"
connections() { grep -c 'serving export' "$WORK/server.err" || true; }

# The server logs one line per connection when it closes, counting what the
# client asked for ("connection closed: requests=… read=… write=… fua=…
# flush=… trim=… zeroes=… no_hole=… errors=…"). mark = lines so far; after a
# step, `settle MARK N` waits for N such lines, then `total MARK FIELD` sums a
# field over them and `each MARK FIELD` lists it per connection.
mark() { wc -l <"$WORK/server.err"; }
since() { tail -n +"$(($1 + 1))" "$WORK/server.err" | grep 'connection closed:' || true; }
settle() {
  local i
  for i in $(seq 50); do [ "$(since "$1" | wc -l)" -ge "$2" ] && return 0; sleep 0.1; done
  since "$1"; die "expected $2 closed connection(s) in the server log"
}
total() { since "$1" | grep -o " $2=[0-9]*" | cut -d= -f2 | awk '{s += $1} END {print s + 0}'; }
each() { since "$1" | grep -o " $2=[0-9]*" | cut -d= -f2 | tr '\n' ' '; }
expect() { # expect MARK FIELD OP VALUE
  local got
  got=$(total "$1" "$2")
  [ "$got" "$3" "$4" ] || { since "$1"; die "server saw $2=$got, want $3 $4"; }
}
show() { echo "   server saw: $(since "$1" | sed 's/.*closed: //' | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); t[kv[1]] += kv[2]; if (NR == 1) o[i] = kv[1]}} END {for (i = 1; i in o; i++) printf "%s=%d ", o[i], t[o[i]]}')"; }

# qemu-io exits non-zero when a command fails; the grep catches anything else.
qio() {
  local out
  out=$(qemu-io -f raw "$URI" "$@" 2>&1) || { echo "$out"; die "qemu-io failed"; }
  if grep -Eiq 'fail|error|mismatch' <<<"$out"; then echo "$out"; die "qemu-io reported an error"; fi
  echo "$out" | grep -Ec '^(wrote|read|discard)' | sed 's/^/   qemu-io ops: /'
}

step "qemu-io: patterns, FUA, flush, discard, write zeroes, aio"
m=$(mark)
qio -c 'write -P 0xa5 0 1M' -c 'read -P 0xa5 0 1M' \
  -c 'write -f -P 0x5a 1M 256k' -c 'read -P 0x5a 1M 256k' -c 'flush' \
  -c 'write -P 0x77 4097 3000' -c 'read -P 0x77 4097 3000' -c 'read -P 0xa5 0 4097' -c 'read -P 0xa5 7097 1041479' \
  -c 'discard 2M 1M' -c 'write -P 0x11 2M 1M' -c 'read -P 0x11 2M 1M' \
  -c 'write -z 2M 256k' -c 'read -P 0 2M 256k' -c 'read -P 0x11 2304k 768k' \
  -c 'write -z -u 2560k 256k' -c 'read -P 0 2560k 256k' \
  -c 'write -z -f 3M 4k' -c 'read -P 0 3M 4k' \
  -c 'write -P 0x33 63M 1M' -c 'read -P 0x33 63M 1M'
qio -c 'aio_write -P 0x21 8M 64k' -c 'aio_write -P 0x22 9M 64k' -c 'aio_write -P 0x23 10M 64k' \
  -c 'aio_write -f -P 0x24 11M 64k' -c 'aio_flush' \
  -c 'read -P 0x21 8M 64k' -c 'read -P 0x22 9M 64k' -c 'read -P 0x23 10M 64k' -c 'read -P 0x24 11M 64k'
settle "$m" 2
show "$m"
expect "$m" fua -ge 3   # write -f, write -z -f, aio_write -f
expect "$m" flush -ge 2 # flush, aio_flush
expect "$m" trim -ge 1  # discard
expect "$m" zeroes -ge 3
expect "$m" no_hole -ge 2 # write -z without -u asks the server to keep the space allocated
expect "$m" errors -eq 0

step "qemu-img convert + compare"
m=$(mark)
# 24 MiB random, an 8 MiB zero gap (written as zeroes by convert), 32 MiB random
head -c $((24 << 20)) /dev/urandom >"$WORK/src.img"
truncate -s $((32 << 20)) "$WORK/src.img"
head -c $((32 << 20)) /dev/urandom >>"$WORK/src.img"
[ "$(stat -c %s "$WORK/src.img")" = $((64 << 20)) ] || die "source image size"
qemu-img convert -n -f raw -O raw "$WORK/src.img" "$URI"
settle "$m" 1
show "$m"
expect "$m" zeroes -ge 1 # the gap
expect "$m" errors -eq 0
qemu-img compare -f raw -F raw "$WORK/src.img" "$URI"
qemu-img info "$URI" | grep -q "virtual size: 512 MiB" || die "qemu-img info size"

step "nbdinfo"
info=$(nbdinfo "$URI")
for want in "export-size: $SIZE" 'can_flush: true' 'can_fua: true' 'can_trim: true' 'can_zero: true' \
  'can_multi_conn: true' 'is_read_only: false' 'block_size_minimum: 1' 'block_size_maximum: 33554432'; do
  grep -q "$want" <<<"$info" || { echo "$info"; die "nbdinfo: no '$want'"; }
done
list=$(nbdinfo --list "nbd://$ADDR")
grep -q 'export="disk"' <<<"$list" || { echo "$list"; die "nbdinfo --list"; }
grep -q 'test_nbd disk' <<<"$list" || { echo "$list"; die "nbdinfo --list: no description"; }
echo "   nbdinfo: $(grep -c ': ' <<<"$info") fields checked"

step "nbdcopy both ways, --flush --connections 4"
# sparse 512 MiB: 16 MiB of random data in each 128 MiB slice, holes between
truncate -s $SIZE "$WORK/src2.img"
for i in 0 1 2 3; do
  head -c $((16 << 20)) /dev/urandom | dd of="$WORK/src2.img" bs=1M seek=$((i * 133)) conv=notrunc status=none
done
m=$(mark)
nbdcopy --flush --connections 4 --threads 4 "$WORK/src2.img" "$URI"
settle "$m" 4
show "$m"
writers=$(each "$m" write)
echo "   writes per connection: $writers"
[ "$(since "$m" | wc -l)" -eq 4 ] || die "nbdcopy in: not 4 connections"
for w in $writers; do [ "$w" -gt 0 ] || die "nbdcopy in: a connection wrote nothing"; done
expect "$m" flush -ge 4 # --flush, on every connection
expect "$m" zeroes -ge 1 # the holes
m=$(mark)
nbdcopy --flush --connections 4 --threads 4 "$URI" "$WORK/copy.img"
settle "$m" 4
readers=$(each "$m" read)
echo "   reads per connection: $readers"
for r in $readers; do [ "$r" -gt 0 ] || die "nbdcopy out: a connection read nothing"; done
[ "$(since "$m" | wc -l)" -eq 4 ] || die "nbdcopy out: not 4 connections"
cmp "$WORK/src2.img" "$WORK/copy.img" || die "nbdcopy round trip differs"
qemu-img compare -f raw -F raw "$WORK/src2.img" "$URI"

step "fio: random writes with crc32c verify and fsync, then trim"
fio_run() {
  local out
  out=$(fio --ioengine=nbd --uri="$URI" --verify_state_save=0 "$@" 2>&1) || { echo "$out"; die "fio failed"; }
  grep -q 'err= 0' <<<"$out" || { echo "$out"; die "fio reported errors"; }
  grep -Eo '(READ|WRITE|TRIM): bw=[^,]*' <<<"$out" | sed 's/^/   /'
}
m=$(mark)
fio_run --name=randwrite-verify --rw=randwrite --bs=4k --size=32M --offset=0 --iodepth=16 \
  --verify=crc32c --verify_fatal=1 --do_verify=1 --fsync=16 --randrepeat=0 | tee "$WORK/fio.out"
grep -q 'READ: bw' "$WORK/fio.out" || die "fio did not read back to verify"
settle "$m" 1
expect "$m" flush -ge 100 # --fsync=16 over 8192 writes
m2=$(mark)
fio_run --name=randtrim --rw=randtrim --bs=64k --size=16M --offset=32M --iodepth=8
settle "$m2" 1
expect "$m2" trim -eq 256
show "$m"
expect "$m" errors -eq 0

step "python3-libnbd: error replies, negotiation, pipelining"
m=$(mark)
"$PY" - "$ADDR" <<'EOF'
import errno, sys
import nbd

addr = sys.argv[1]
uri = f"nbd://{addr}/disk"
MAX = 32 << 20


def expect_error(what, fn, want):
    try:
        fn()
    except nbd.Error as e:
        if e.errnum != want:
            sys.exit(f"{what}: got errno {e.errnum} ({e.string}), want {want}")
        print(f"   {what}: {errno.errorcode[want]}")
        return
    sys.exit(f"{what}: no error")


def connect(structured):
    h = nbd.NBD()
    h.set_strict_mode(0)  # let out-of-range requests reach the server
    h.set_request_structured_replies(structured)
    h.connect_uri(uri)
    assert h.get_structured_replies_negotiated() == structured
    assert h.can_df() == structured  # DF only with structured replies
    return h


# The error replies twice: simple replies, then structured ones (error chunks).
for structured in (False, True):
    h = connect(structured)
    size = h.get_size()
    assert size == 512 << 20, size
    assert h.can_multi_conn() and h.can_fua() and h.can_flush() and h.can_trim() and h.can_zero()
    assert h.can_cache()
    assert h.get_block_size(nbd.SIZE_MAXIMUM) == MAX
    h.pwrite(b"ssdcache-serve", 12345)
    checks = [
        ("read past the end", lambda: h.pread(512, size - 256), errno.EINVAL),
        ("read starting past the end", lambda: h.pread(1, size + 4096), errno.EINVAL),
        ("write past the end", lambda: h.pwrite(b"x" * 512, size - 256), errno.ENOSPC),
        ("zero past the end", lambda: h.zero(4096, size - 1024), errno.ENOSPC),
        ("trim past the end", lambda: h.trim(4096, size), errno.EINVAL),
        ("read over the max block size", lambda: h.pread(MAX + 4096, 0), errno.EINVAL),
    ]
    print(f"   {'structured' if structured else 'simple'} replies:")
    for what, fn, want in checks:
        expect_error(what, fn, want)
        # the connection still works after each error
        assert h.pread(14, 12345) == b"ssdcache-serve", what
    h.flush()
    if not structured:
        h.shutdown()

# 64 pipelined writes, then their data read back
cookies = [h.aio_pwrite(bytes([i + 1]) * 4096, (16 << 20) + i * 4096) for i in range(64)]
for c in cookies:
    while not h.aio_command_completed(c):
        h.poll(-1)
for i in range(64):
    assert h.pread(4096, (16 << 20) + i * 4096) == bytes([i + 1]) * 4096, i
h.pwrite(b"last write", size - 10, nbd.CMD_FLAG_FUA)
h.shutdown()
print("   64 pipelined writes verified")

# negotiation: an unknown export is refused, the right one then works
g = nbd.NBD()
g.set_opt_mode(True)
g.connect_uri(f"nbd://{addr}/")
names = []
g.opt_list(lambda name, desc: names.append((name, desc)) or 0)
assert names == [("disk", "test_nbd disk")], names
g.set_export_name("no-such-export")
try:
    g.opt_go()
    sys.exit("opt_go on an unknown export succeeded")
except nbd.Error as e:
    print(f"   unknown export refused: {e.string}")
g.set_export_name("disk")
g.opt_go()
assert g.pread(14, 12345) == b"ssdcache-serve"
g.shutdown()
print("   negotiation ok")
EOF

settle "$m" 2
show "$m"
expect "$m" errors -eq 12 # exactly the six provoked ones, with simple and with structured replies
expect "$m" fua -ge 1

step "stop server"
total=$(connections)
kill -TERM "$SERVER_PID"
for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVER_PID" 2>/dev/null; then die "server still running 10 s after SIGTERM"; fi
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[ $rc -eq 0 ] || { tail -20 "$WORK/server.err"; die "server exited with $rc"; }
grep -q 'stopped after' "$WORK/server.err" || die "no clean stop in the server log"
grep -E 'stopped after' "$WORK/server.err" | sed 's/^/   /'
[ "$(tail -c 10 "$WORK/disk.img")" = "last write" ] || die "last write not in the file"
[ "$(dd if="$WORK/disk.img" bs=1 skip=12345 count=14 status=none)" = "ssdcache-serve" ] || die "data not in the file"
if grep -Eq 'ERROR|panicked' "$WORK/server.err"; then grep -E 'ERROR|panicked' "$WORK/server.err"; die "server logged errors"; fi
echo "   $total connections reached transmission; data on disk verified"

step "test_nbd: all client checks passed"
