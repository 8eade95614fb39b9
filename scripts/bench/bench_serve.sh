#!/usr/bin/env bash
# Benchmarks of `ssdcache serve` (issue 5). Prints numbers from one run; it is
# not a test: it fails only when something does not work, never on a ratio.
#
#   scripts/bench/bench_serve.sh                 (both parts)
#   BENCH_PART=a scripts/bench/bench_serve.sh    (or b)
#
# Part (a), the cache's hit path against nbdkit's `file` plugin. A region
# (BENCH_A_REGION_MIB, default 256) of random data is written through the
# cache (write-back PWC, 1 MiB segments, a cache big enough for all of it),
# `ssdcache maintain` caches every segment of it (PWC's first fill), and the
# script proves the reads are cache hits: it zeroes that region of the backing
# file behind the server's back and reads the region through NBD: it must
# still be the data written. nbdkit serves a copy of the same bytes. Then fio
# (nbd engine, one job, 4 KiB, random read then random write over the region,
# queue depths 1, 8, 32, BENCH_A_RUNTIME = 5 s each after 1 s of ramp) runs
# against both servers over loopback TCP, BENCH_A_ROUNDS = 2 times per row,
# alternating which server goes first (ABBA) so both share the noise;
# `ssdcache status` before and after must show no miss and no backing I/O.
# Per row: IOPS and p50/p99 total latency (submission to completion) of each
# (means over the rounds) and the IOPS ratio ssdcache/nbdkit (goal: >= 0.9).
# BENCH_A_PLAIN=1 adds a third server, the serve_file example (the same NBD
# server with no cache), to tell the server's share of the cost from the
# cache's. Then (BENCH_A_TLS=1, the default; 0 skips it) the same table with
# TLS: ssdcache restarted on the same warm cache with `--tls require`, nbdkit
# with `--tls=require`, the same certificates (scripts/lib/make_test_certs.sh),
# fio through libnbd's nbds:// URIs (the CA in $HOME/.pki/libnbd, HOME set to
# a temporary directory), no client certificate. About 5.5 min
# (2.7 min with BENCH_A_TLS=0, 1.3 min more with BENCH_A_PLAIN=1).
#
# Part (b), paper 000's headline: a slow backing disk (crates/engine/src/
# model_device.rs: the simulator's HDD model; default BENCH_B_MODEL =
# hdd(model=rpm7200,seek=8.5ms,transfer=150MB,scale=0.2), a 7200 rpm disk
# like the paper's Seagate ST2000DM001, 5x faster than real time) under a
# multi-day desktop trace (BENCH_B_TRACE, default
# desktop(days=5,per_day=4000,disk=2GiB,hot=128MiB,seed=1)), replayed day by
# day by scripts/tools/replay_nbd.py (QD BENCH_B_QD = 8, as fast as the server
# answers), with the same slow disk and trace for each cache mode, each from
# a zeroed backing file and a fresh cache (BENCH_B_CACHE = 256M, segments of
# BENCH_B_SEGMENT = 128KiB; BENCH_B_MODES to pick, default the first four):
#   passthrough    the backing alone (no caching, same server)
#   write-back     PWC: `ssdcache maintain` between days (paper 000: once a
#                  day in idle time), not counted in throughput, timed apart
#   read-only      paper 000's baseline "LRU(SSD+HDD)": LRU filled on read
#                  misses in real time, a write goes to the backing disk and
#                  drops its segment from the cache (the headline ratio)
#   write-through  LRU, filled on read and write misses, writes to both
#   write-around   LRU, filled on read misses only, writes to both
# The server is `ssdcache serve --backing-model SPEC` (a hidden, benchmark-only
# flag that wraps BACKING in that model). Prints each day's throughput (MB/s)
# and mean latency per mode with the PWC/LRU and PWC/backing ratios (paper
# 000: about 2x over read-only LRU from day 2-3), the share of request bytes
# served without the backing disk and the slow disk's busy time per day (from
# `ssdcache status --json` after each day), the totals over days 1.. and the
# procedures' times. About 2.5 min.
#
# Needs fio (with the nbd engine), nbdkit, libnbd-bin and python3-libnbd
# (scripts/test/test_nbd.sh installs them) and builds the release binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source scripts/lib/common.sh

PART=${BENCH_PART:-all}
case $PART in a | b | all) ;; *) die "BENCH_PART=$PART: expected a, b or all" ;; esac
PY=/usr/bin/python3 # Debian's python, where python3-libnbd installs

step "tools"
for t in fio nbdkit nbdinfo nbdcopy; do
  command -v "$t" >/dev/null || die "$t missing: run scripts/test/test_nbd.sh once (it installs the NBD clients)"
done
fio --enghelp 2>/dev/null | grep -qw nbd || die "this fio has no nbd engine"
"$PY" -c 'import nbd' 2>/dev/null || die "$PY has no nbd module (apt-get install python3-libnbd)"
echo "$(fio --version), $(nbdkit --version), $(nproc) cores"

step "build ssdcache (release)"
cargo build -q --locked --release -p ssdcache-cli
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/ssdcache

WORK=$(mktemp -d -t bench_serve.XXXXXX)
SERVER_PID= NBDKIT_PID= PLAIN_PID=
cleanup() {
  kill_server "$SERVER_PID"
  kill_server "$NBDKIT_PID"
  kill_server "$PLAIN_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_ssdcache NAME CACHE BACKING [serve options…]: runs `ssdcache serve`;
# sets SERVER_PID, ADDR, URI, LOG.
start_ssdcache() {
  local name=$1 cache=$2 backing=$3
  shift 3
  LOG=$WORK/$name.err
  "$BIN" serve "$cache" "$backing" --listen 127.0.0.1:0 --export disk "$@" >"$WORK/$name.out" 2>"$LOG" &
  SERVER_PID=$!
  wait_listening "$SERVER_PID" "$WORK/$name.out" "$LOG" "ssdcache serve ($name)"
}
# stop_ssdcache: SIGTERM (drain, write back, clean bit); must exit 0. Prints its time.
stop_ssdcache() {
  local t=${EPOCHREALTIME/./} rc=0
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [ $rc -eq 0 ] || { tail -20 "$LOG"; die "ssdcache serve exited $rc after SIGTERM (log $LOG)"; }
  grep -q 'stopped cleanly' "$LOG" || die "ssdcache serve: no clean stop in $LOG"
  t=$((${EPOCHREALTIME/./} - t))
  printf '   clean stop (write-back of dirty data, not counted): %d.%02d s\n' $((t / 1000000)) $((t / 10000 % 100))
}

# ---------------------------------------------------------------- part (a)
part_a() {
  local region_mib=${BENCH_A_REGION_MIB:-256} runtime=${BENCH_A_RUNTIME:-5} rounds=${BENCH_A_ROUNDS:-2}
  local region=$((region_mib << 20)) d=$WORK/a
  mkdir -p "$d"
  step "(a) setup: ${region_mib} MiB region of random data, cache for all of it"
  head -c "$region" /dev/urandom >"$d/src.img"
  truncate -s $((2 * region)) "$d/backing.img" "$d/nbdkit.img"
  dd if="$d/src.img" of="$d/nbdkit.img" bs=1M conv=notrunc status=none
  truncate -s $((region + (32 << 20))) "$d/cache.img"
  "$BIN" create "$d/cache.img" "$d/backing.img" --segment 1MiB | sed 's/^/   /'
  start_ssdcache a "$d/cache.img" "$d/backing.img"
  local ss_uri=$URI
  nbdcopy --flush "$d/src.img" "$ss_uri"
  "$BIN" maintain "$d/cache.img" | sed 's/^/   /'
  "$BIN" status "$d/cache.img" | sed 's/^/   status: /'

  step "(a) every read of the region is a cache hit"
  # Zero the region in the backing file behind the server's back: reads served
  # from the backing would now return zeroes, reads from the cache the data.
  dd if=/dev/zero of="$d/backing.img" bs=1M count="$region_mib" conv=notrunc status=none
  "$PY" - "$ss_uri" "$d/src.img" <<'EOF' || die "(a): reads of the region are not all served from the cache"
import sys, nbd
uri, src = sys.argv[1:]
h = nbd.NBD()
h.connect_uri(uri)
chunk = 4 << 20
with open(src, "rb") as f:
    off = 0
    while True:
        want = f.read(chunk)
        if not want:
            break
        got = h.pread(len(want), off)
        if got != want:
            zero = got == bytes(len(got))
            sys.exit(f"   bytes {off}..{off + len(want)} differ from the data written"
                     + (" (zeroes: read from the backing file)" if zero else ""))
        off += len(want)
h.shutdown()
print(f"   {off >> 20} MiB read back intact although the backing file holds zeroes there: all from the cache")
EOF

  step "(a) nbdkit file plugin on a copy"
  local port
  port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  nbdkit -f -i 127.0.0.1 -p "$port" file "$d/nbdkit.img" 2>"$WORK/nbdkit.err" &
  NBDKIT_PID=$!
  local kit_uri=nbd://127.0.0.1:$port/
  for _ in $(seq 100); do
    nbdinfo --size "$kit_uri" >/dev/null 2>&1 && break
    kill -0 "$NBDKIT_PID" 2>/dev/null || { cat "$WORK/nbdkit.err"; die "nbdkit exited at start"; }
    sleep 0.05
  done
  [ "$(nbdinfo --size "$kit_uri")" = $((2 * region)) ] || die "nbdkit: wrong export size"
  echo "   $kit_uri (nbdkit, default threads) vs $ss_uri (ssdcache write-back, hit path)"

  local plain_uri=
  if [ "${BENCH_A_PLAIN:-0}" = 1 ]; then
    cargo build -q --locked --release -p ssdcache-server --example serve_file
    cp --sparse=always "$d/nbdkit.img" "$d/plain.img"
    "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/serve_file" "$d/plain.img" --listen 127.0.0.1:0 --export disk \
      >"$WORK/plain.out" 2>"$WORK/plain.err" &
    PLAIN_PID=$!
    for _ in $(seq 100); do grep -q '^listening on ' "$WORK/plain.out" 2>/dev/null && break; sleep 0.05; done
    plain_uri=nbd://$(sed -n 's/^listening on //p' "$WORK/plain.out")/disk
    [ "$plain_uri" != nbd:///disk ] || { cat "$WORK/plain.err"; die "serve_file did not start"; }
    echo "   $plain_uri (serve_file example: the same NBD server, no cache)"
  fi

  step "(a) fio 4 KiB random, one job, ${runtime} s per run, ${rounds} round(s) per row"
  # fio_run URI RW QD OUT: one fio run; appends "iops p50_us p99_us" (total latency) to OUT.
  fio_run() {
    local json=$WORK/fio.json
    fio --name=bench --ioengine=nbd --uri="$1" --rw="$2" --bs=4k --iodepth="$3" --numjobs=1 \
      --size="$region" --offset=0 --norandommap --randrepeat=1 --time_based --ramp_time=1 --runtime="$runtime" \
      --lat_percentiles=1 --output-format=json --output="$json" >/dev/null 2>"$WORK/fio.err" ||
      { cat "$WORK/fio.err"; die "fio $2 QD $3 on $1 failed"; }
    "$PY" - "$json" "$2" >>"$4" <<'EOF' || die "fio: cannot read its JSON output"
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
if job["error"]:
    sys.exit(f"fio job error {job['error']}")
side = job["read" if sys.argv[2].endswith("read") else "write"]
p = side["lat_ns"]["percentile"]
print(f"{side['iops']:.1f} {p['50.000000'] / 1000:.1f} {p['99.000000'] / 1000:.1f}")
EOF
  }
  local servers=(ss kit) uris=("$ss_uri" "$kit_uri")
  if [ -n "$plain_uri" ]; then servers+=(plain) uris+=("$plain_uri"); fi
  fio_table "$d/rows.txt"
  step "(a) results: ssdcache hit path vs nbdkit file (means of $rounds run(s) of ${runtime} s each)"
  print_table "$d/rows.txt"
  if [ -n "$plain_uri" ]; then echo "no-cache: the same NBD server without the cache (serve_file example on a copy)"; fi
  stop_ssdcache
  if [ -n "$plain_uri" ]; then kill -TERM "$PLAIN_PID" 2>/dev/null || true; wait "$PLAIN_PID" 2>/dev/null || true; PLAIN_PID=; fi
  kill -TERM "$NBDKIT_PID" 2>/dev/null || true
  wait "$NBDKIT_PID" 2>/dev/null || true
  NBDKIT_PID=

  if [ "${BENCH_A_TLS:-1}" = 1 ]; then
    step "(a) TLS: ssdcache --tls require vs nbdkit --tls=require, the same certificates (no client certificate)"
    "$ROOT/scripts/lib/make_test_certs.sh" "$d/certs"
    # fio's nbd engine refuses file names in URIs (tls-certificates=): libnbd
    # then reads its default directory, $HOME/.pki/libnbd.
    mkdir -p "$d/home/.pki"
    cp -r "$d/certs/client" "$d/home/.pki/libnbd"
    local home=$HOME
    export HOME=$d/home
    # The same cache, restarted: a clean stop keeps it warm (every read still a hit).
    start_ssdcache a-tls "$d/cache.img" "$d/backing.img" --tls require \
      --tls-cert "$d/certs/server-cert.pem" --tls-key "$d/certs/server-key.pem"
    local ss_tls=nbds://localhost:${ADDR##*:}/disk
    port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    nbdkit -f -i 127.0.0.1 -p "$port" --tls=require --tls-certificates="$d/certs" file "$d/nbdkit.img" \
      2>"$WORK/nbdkit.err" &
    NBDKIT_PID=$!
    local kit_tls=nbds://localhost:$port/
    for _ in $(seq 100); do
      nbdinfo --size "$kit_tls" >/dev/null 2>&1 && break
      kill -0 "$NBDKIT_PID" 2>/dev/null || { cat "$WORK/nbdkit.err"; die "nbdkit (TLS) exited at start"; }
      sleep 0.05
    done
    nbdinfo "$ss_tls" | grep -q 'with TLS' || die "(a) ssdcache does not speak TLS"
    nbdinfo "$kit_tls" | grep -q 'with TLS' || die "(a) nbdkit does not speak TLS"
    servers=(ss kit) uris=("$ss_tls" "$kit_tls") plain_uri=
    fio_table "$d/rows-tls.txt"
    step "(a) results with TLS: ssdcache hit path vs nbdkit file, both --tls require (means of $rounds run(s) of ${runtime} s each)"
    print_table "$d/rows-tls.txt"
    stop_ssdcache
    kill -TERM "$NBDKIT_PID" 2>/dev/null || true
    wait "$NBDKIT_PID" 2>/dev/null || true
    NBDKIT_PID=
    export HOME=$home
  fi
  rm -rf "$d"
}

# fio_table ROWS: every row (random read and write, QD 1, 8, 32) against the
# servers named in `servers` at `uris` (part (a)'s variables), ROUNDS times,
# alternating the order; the means go to ROWS. The cache must answer all of
# it from the cache (`status` before and after).
fio_table() {
  local rows=$1 rw qd r i k who line
  local n=${#servers[@]}
  "$BIN" status "$d/cache.img" --json >"$d/status0.json"
  : >"$rows"
  for rw in randread randwrite; do
    for qd in 1 8 32; do
      for who in "${servers[@]}"; do : >"$d/$who.txt"; done
      for r in $(seq "$rounds"); do
        # Round r starts with server r-1 (mod n) and goes backwards on even
        # rounds: with two servers, ABBA.
        for i in $(seq 0 $((n - 1))); do
          if [ $((r % 2)) -eq 1 ]; then k=$(((r - 1 + i) % n)); else k=$(((r - 1 + n - i) % n)); fi
          fio_run "${uris[$k]}" $rw "$qd" "$d/${servers[$k]}.txt"
        done
      done
      line="$rw $qd"
      for who in "${servers[@]}"; do
        line+=" $(awk '{i += $1; a += $2; b += $3} END {printf "%.1f %.1f %.1f", i / NR, a / NR, b / NR}' "$d/$who.txt")"
      done
      echo "$line" >>"$rows"
      printf '   %-9s QD %-2s done  (%s)\n' $rw "$qd" "$(elapsed)"
    done
  done

  "$BIN" status "$d/cache.img" --json >"$d/status1.json"
  "$PY" - "$d/status0.json" "$d/status1.json" <<'EOF' || die "(a): fio's requests were not all cache hits"
import json, sys
a, b = (json.load(open(p))["status"] for p in sys.argv[1:])
d = {k: b[k] - a[k] for k in ("read_hits", "read_misses", "write_hits", "write_misses", "filled", "hdd_read", "hdd_written")}
print(f"   during fio: {d['read_hits']} read hits, {d['read_misses']} read misses, {d['write_hits']} write hits, "
      f"{d['write_misses']} write misses; backing: {d['hdd_read']} bytes read, {d['hdd_written']} written")
if d["read_misses"] or d["write_misses"] or d["hdd_read"] or d["hdd_written"]:
    sys.exit("   FAIL: some requests went to the backing file")
EOF
}

# print_table ROWS: the table of fio_table's means and the ssdcache/nbdkit ratios.
print_table() {
  local rows=$1
  echo "IOPS; p50/p99 = total latency (submission to completion) in us; ratio = ssdcache IOPS / nbdkit IOPS"
  printf '%-9s %3s | %9s %8s %8s | %9s %8s %8s | %6s' rw QD "ssdcache" "p50" "p99" "nbdkit" "p50" "p99" "ratio"
  if [ -n "$plain_uri" ]; then printf ' | %9s %8s %8s' "no-cache" "p50" "p99"; fi
  echo
  awk '{r = $6 > 0 ? $3 / $6 : 0; printf "%-9s %3s | %9.0f %8.1f %8.1f | %9.0f %8.1f %8.1f | %6.2f", $1, $2, $3, $4, $5, $6, $7, $8, r
        if (NF >= 11) printf " | %9.0f %8.1f %8.1f", $9, $10, $11
        print (r < 0.9 ? "  (below 0.9)" : "")}' "$rows"
}

# ---------------------------------------------------------------- part (b)
part_b() {
  local model=${BENCH_B_MODEL:-hdd(model=rpm7200,seek=8.5ms,transfer=150MB,scale=0.2)}
  local disk=${BENCH_B_DISK:-2GiB}
  local trace_spec=${BENCH_B_TRACE:-desktop(days=5,per_day=4000,disk=$disk,hot=128MiB,seed=1)}
  local cache_size=${BENCH_B_CACHE:-256M} segment=${BENCH_B_SEGMENT:-128KiB} qd=${BENCH_B_QD:-8}
  local modes=${BENCH_B_MODES:-passthrough write-back read-only write-through}
  local d=$WORK/b mode
  mkdir -p "$d"
  step "(b) server with a slow backing disk"
  step "(b) trace: $trace_spec"
  "$BIN" trace gen "$trace_spec" "$d/trace.txt" --to ssdsim | sed 's/^/   /'
  awk '{d = int($1 / 86400e9); n[d]++; b[d] += $4 * 512; if ($5 == 0) w[d] += $4 * 512}
       END {for (k in n) printf "   day %d: %d requests, %.1f MB, %.0f%% of bytes written\n", k, n[k], b[k] / 1e6, 100 * w[k] / b[k]}' \
    "$d/trace.txt" | sort -n -k2
  echo "   slow backing: $model; cache $cache_size in $segment segments; replay QD $qd"

  for mode in $modes; do
    step "(b) $mode"
    rm -f "$d/backing.img" "$d/cache.img"
    truncate -s "$disk" "$d/backing.img"
    truncate -s "$cache_size" "$d/cache.img"
    "$BIN" create "$d/cache.img" "$d/backing.img" --segment "$segment" --mode "$mode" >/dev/null
    start_ssdcache "b-$mode" "$d/cache.img" "$d/backing.img" --backing-model "$model"
    local hooks=(--status "'$BIN' status '$d/cache.img' --json")
    if [ "$mode" = write-back ]; then hooks+=(--between "'$BIN' maintain '$d/cache.img' >&2"); fi
    "$PY" "$ROOT/scripts/tools/replay_nbd.py" "$URI" "$d/trace.txt" --qd "$qd" "${hooks[@]}" --json \
      >"$d/$mode.jsonl" 2>"$d/$mode.maintain" || { cat "$d/$mode.maintain"; die "(b) $mode: replay failed"; }
    "$PY" - "$d/$mode.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    extra = f"; then procedure {r['between_s']:.2f} s (not counted)" if "between_s" in r else ""
    print(f"   day {r['day']}: {r['requests']} req, {r['mb']:.1f} MB in {r['seconds']:.2f} s = {r['mb_per_s']:.2f} MB/s, "
          f"mean {r['mean_ms']:.2f} ms{extra}")
EOF
    sed 's/^/   /' "$d/$mode.maintain"
    stop_ssdcache
  done

  step "(b) results (requests replayed as fast as answered, QD $qd; slow backing $model)"
  "$PY" - "$d" $modes <<'EOF'
import json, os, sys
d, modes = sys.argv[1], sys.argv[2:]
runs = {m: [json.loads(l) for l in open(os.path.join(d, m + ".jsonl"))] for m in modes}
days = sorted({r["day"] for rs in runs.values() for r in rs})
short = {"passthrough": "backing", "write-back": "PWC", "read-only": "LRU-ro", "write-through": "LRU-wt",
         "write-around": "LRU-wa"}
name = lambda m: short.get(m, m)
rec = lambda m, day: next((r for r in runs.get(m, []) if r["day"] == day), None)
# The paper's comparison first: PWC against the read-only LRU cache.
ratios = [(a, b) for a, b in [("write-back", "read-only"), ("write-back", "write-through"),
                              ("write-back", "write-around"), ("write-back", "passthrough")]
          if a in runs and b in runs]


def st(r, key="status"):
    s = r.get(key) if r else None
    return s.get("status", {}) if isinstance(s, dict) else {}


def per_day(m):
    """Per day: (share of request bytes served without touching the backing
    disk, of request pieces likewise, backing busy s), from the status
    snapshots (`served_bytes`: a read of a segment cached before it, a write
    that stayed on the SSD; a piece whose segment was filled for it, or a
    write hit that also wrote the backing, is not served)."""
    out, prev = {}, {}
    c = lambda x, k: x.get(k, 0) or 0
    for r in runs[m]:
        s = st(r)
        delta = lambda k: c(s, k) - c(prev, k)
        pieces = sum(delta(k) for k in ("read_hits", "write_hits", "read_misses", "write_misses"))
        nbytes = delta("request_bytes")
        busy = (s.get("backing_model") or {}).get("busy_s")
        pbusy = (prev.get("backing_model") or {}).get("busy_s", 0.0)
        out[r["day"]] = (delta("served_bytes") / nbytes if nbytes else None,
                         delta("served_pieces") / pieces if pieces else None,
                         busy - pbusy if busy is not None else None)
        prev = st(r, "status_after_between") or s
    return out


fmt = lambda v, w=9: f"{v:{w}.2f}" if v is not None else f"{'-':>{w}}"
for key, title in [("mb_per_s", "throughput, MB/s"), ("mean_ms", "mean latency, ms")]:
    print(f"{title}:")
    print(f"{'day':>4} " + " ".join(f"{name(m):>9}" for m in modes)
          + "".join(f" {name(a) + '/' + name(b):>14}" for a, b in ratios))
    for day in days:
        line = f"{day:>4} " + " ".join(fmt(rec(m, day)[key] if rec(m, day) else None) for m in modes)
        for a, b in ratios:
            x, y = rec(a, day), rec(b, day)
            r = None
            if x and y and x[key] and y[key]:
                # both read "> 1 = PWC better": throughput PWC/other, latency other/PWC
                r = x[key] / y[key] if key == "mb_per_s" else y[key] / x[key]
            line += " " + fmt(r, 14)
        print(line)
    print()
info = {m: per_day(m) for m in modes}
if any(v[0] is not None for i in info.values() for v in i.values()):
    print("served: share of request bytes (pieces: one per segment a request touches) served without touching")
    print("the backing disk (status served_bytes_ratio per day: reads of segments cached before the request,")
    print("writes that stayed on the SSD; fills and write hits that also wrote the backing are not served);")
    print("busy: the backing disk's modelled busy time that day, s (procedures excluded)")
    pc = lambda v: f"{100 * v:6.1f}%" if v is not None else f"{'-':>7}"
    print(f"{'day':>4} " + " ".join(f"{name(m) + ' bytes':>13} {'pieces':>7} {'busy':>6}" for m in modes))
    for day in days:
        cells = []
        for m in modes:
            sb, sp, b = info[m].get(day, (None, None, None))
            cells.append(f"{pc(sb):>13} {pc(sp)} " + fmt(b, 6))
        print(f"{day:>4} " + " ".join(cells))
    print()
if len(days) > 1:
    later = [day for day in days if day > days[0]]
    tot = {m: (sum(r["mb"] for r in rs if r["day"] in later), sum(r["seconds"] for r in rs if r["day"] in later))
           for m, rs in runs.items()}
    print(f"days {later[0]}-{later[-1]} together: "
          + ", ".join(f"{name(m)} {mb / s:.2f} MB/s" for m, (mb, s) in tot.items() if s > 0))
    for a, b in ratios:
        (ma, sa), (mb_, sb) = tot[a], tot[b]
        print(f"   {name(a)}/{name(b)} = {(ma / sa) / (mb_ / sb):.2f}")
if "write-back" in runs:
    p = [r["between_s"] for r in runs["write-back"] if "between_s" in r]
    if p:
        print("PWC caching-and-eviction procedures between days (not counted above): "
              + ", ".join(f"{x:.2f} s" for x in p))
EOF
  rm -rf "$d"
}

case $PART in
  a) part_a ;;
  b) part_b ;;
  all) part_a; part_b ;;
esac
step "done"
