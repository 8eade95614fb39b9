#!/usr/bin/env bash
# Many kill -9 crash trials of `ssdcache serve` (by default the PWC write-back
# SSD cache) under a verifying client (issue 5). Needs python3-libnbd for
# /usr/bin/python3 (scripts/test/test_nbd.sh installs it).
#
#   SERVE_PROFILE=release scripts/test/test_crash.sh      (25 trials: ~35 s on 2 cores)
#
#   CRASH_TRIALS   trials (default 25)
#   CRASH_SEED     seed of the trial plan and the client (default random; printed,
#                  and named in every FAIL; timing makes a rerun similar, not equal)
#   SERVE_PROFILE  debug (default) | release
#   CRASH_MODE     the cache's `create --mode` (default write-back)
#   CRASH_SERVE_ARGS  extra `serve` flags, e.g. "--max-dirty 5% --dirty-age 1s" (the
#                  background cleaner running all along)
#   CRASH_MINUTES  a time budget instead: trials run until it is spent (CRASH_TRIALS
#                  then only caps them), then one last SIGTERM trial
#   CRASH_ALLOW_ERRORS=1  for injected device errors (CRASH_SERVE_ARGS="--inject-cache
#                  ..."): failed requests, procedures and flushes are counted, not
#                  fatal, and the server may log ERROR (never a panic); nothing
#                  acknowledged-and-flushed may be lost all the same
#   CRASH_LATENCY_LOG  the client appends `unix_time latency_s op` per request here
#   CRASH_STRICT=1 an acknowledged but unflushed write lost by kill -9 is a FAIL
#                  too (a killed process loses nothing the kernel already has, so
#                  with this server that would mean recovery dropped data);
#                  otherwise such losses are counted and printed
#   CRASH_SABOTAGE checker self-tests, each must end in FAIL: lose-write (the
#                  client journals a FUA write durable without sending it),
#                  early-durable (writes journaled durable when sent, not after a
#                  flush reply: caught once a write in flight at a kill never
#                  reached the server), corrupt-ssd (one byte of SSD slot 0 flipped
#                  in CACHE after a kill -9; recovery copies it to BACKING),
#                  corrupt-backing (one byte of BACKING flipped after the final
#                  clean stop)
#
# One cache (BACKING 64 MiB, CACHE 16 MiB, 128 KiB segments: 512 segments, 127
# slots) is used by every trial, so every restart is a recovery of the previous
# trial's crash. Before `create`, every sector of BACKING is given a
# self-describing record (scripts/lib/crash_client.py: block, sector, generation,
# CRC-32), so any sector that is zero, misplaced, torn or stale is caught.
#
# A trial (its mode, duration, maintenance and write-back counts come from the seed):
#   1. the client writes 4 KiB records (1-4 blocks, some straddling segment
#      boundaries, 85% to a hot set of 40 segments, 32 fixed and 8 new each
#      trial, that PWC caches, so most writes land on the SSD only) over 2
#      connections with 8 requests in flight each, FUA writes and flushes at
#      random points, checking live reads against its newest acknowledged
#      writes; SIGUSR1 runs the caching-and-eviction procedure 0-3 times
#      meanwhile and `ssdcache flush` writes the dirty segments back 0-2 times.
#      It journals, per block, every generation *before* sending it, and the
#      generation made durable by a completed flush / FUA write only *after*
#      the reply.
#   2. then it ends the server, as the trial's mode says:
#        timer  kill -9 right after a burst of new requests;
#        maint  SIGUSR1, then kill -9 a random 0-1.3x a measured procedure
#               duration later, or (half the time) 0-1.3x a measured copy-in time
#               after the procedure's update-bit save, seen as the first change
#               to CACHE's metadata region: the kill lands inside caching and
#               eviction, in its write-back or after Fig. 5 line 5;
#        flush  FLUSH sent, kill -9 0-1.2x a measured flush latency later;
#        wb     `ssdcache flush CACHE` (write back every dirty segment over the
#               control socket while requests go on), kill -9 soon after;
#        term   SIGTERM with requests in flight: a clean stop (exit 0), then
#               BACKING alone, read directly, must hold every acknowledged write.
#      The last trial is always `term`.
#   3. `ssdcache check` must exit 0 (healthy), must not say clean after a kill -9,
#      and the restart must be the start its state calls for (Unclean /
#      WarmStart / Clean);
#   4. verify: every sector of the export (all 16384 blocks) must be a valid
#      record of its block and sector whose generation is the durable one (or
#      the baseline's) or one sent after it; what was read becomes the next
#      trial's baseline.
# At the end: SIGTERM, `check` clean, and BACKING must equal the last baseline
# exactly. The summary prints the totals; it FAILs if, over 5 or more kills of a
# write-back cache, no block ever had its newest data on the SSD only (the test
# would then prove nothing about recovery).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source scripts/lib/common.sh
# Extra `serve` flags (e.g. the background cleaner: --max-dirty 5% --dirty-age 1s).
read -r -a SERVE_EXTRA <<<"${CRASH_SERVE_ARGS:-}"
MINUTES=${CRASH_MINUTES:-}
TRIALS=${CRASH_TRIALS:-$([ -n "$MINUTES" ] && echo 1000000 || echo 25)}
ALLOW_ERRORS=${CRASH_ALLOW_ERRORS:-0}
CLIENT_EXTRA=()
[ "$ALLOW_ERRORS" = 1 ] && CLIENT_EXTRA+=(--allow-errors)
[ -n "${CRASH_LATENCY_LOG:-}" ] && CLIENT_EXTRA+=(--latency-log "$CRASH_LATENCY_LOG")
SEED=${CRASH_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
SABOTAGE=${CRASH_SABOTAGE:-}
STRICT=${CRASH_STRICT:-0}
CACHE_MODE=${CRASH_MODE:-write-back}
die() { echo "FAIL: $* (CRASH_SEED=$SEED)" >&2; exit 1; }
PY=/usr/bin/python3
CLIENT=$ROOT/scripts/lib/crash_client.py
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || die "CRASH_TRIALS must be a positive integer"
[[ -z $MINUTES || $MINUTES =~ ^[1-9][0-9]*$ ]] || die "CRASH_MINUTES must be a positive integer"
[[ $SEED =~ ^[0-9]+$ ]] || die "CRASH_SEED must be a non-negative integer"
case "$SABOTAGE" in "" | lose-write | early-durable | corrupt-ssd | corrupt-backing) ;; *) die "CRASH_SABOTAGE: unknown $SABOTAGE" ;; esac
"$PY" -c 'import nbd' 2>/dev/null || die "$PY has no nbd module: run scripts/test/test_nbd.sh once (it installs python3-libnbd)"

step "build ssdcache"
PROFILE=${SERVE_PROFILE:-debug}
build_ssdcache "$PROFILE"
echo "seed $SEED, ${MINUTES:+$MINUTES minute(s) of trials (at most )}$TRIALS trials, $CACHE_MODE cache, $PROFILE build${SABOTAGE:+, SABOTAGE=$SABOTAGE}${CRASH_SERVE_ARGS:+, serve $CRASH_SERVE_ARGS}"

trial_files

step "prepare BACKING (generation 0 everywhere), create, check"
"$PY" "$CLIENT" prep --backing "$BACKING" --state "$STATE" --nonce "$((SEED * 7919 + 1))"
"$BIN" create "$CACHE" "$BACKING" --segment 128KiB --mode "$CACHE_MODE"
"$BIN" check "$CACHE" >"$WORK/check.out" || { cat "$WORK/check.out"; die "a fresh cache is not healthy"; }
META_RANGE=$(sed -n 's/^superblock: .*metadata at \([0-9]*\) and [0-9]*, data at \([0-9]*\).*/\1:\2/p' "$WORK/check.out")
[ -n "$META_RANGE" ] || { cat "$WORK/check.out"; die "check does not say where the metadata is"; }

RUN=0
ERR=
start() { # starts the server; $1: the start kind its stderr must report
  RUN=$((RUN + 1))
  ERR=$WORK/server$RUN.err
  spawn_wrapped "$WORK/server$RUN.out" "$ERR" "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --export disk -v "${SERVE_EXTRA[@]}"
  wait_listening "$SERVER_PID" "$WORK/server$RUN.out" "$ERR" "server (run $RUN)"
  STARTED=$(grep -o 'started .*' "$ERR" || true)
  grep -Eq "started .*\($1;" "$ERR" || { cat "$ERR"; die "restart $RUN: expected a $1 start, the server says: $STARTED"; }
}
server_log_ok() { # no panic, no error logged (with CRASH_ALLOW_ERRORS=1: no panic)
  local bad='panicked|ERROR|maintenance failed|did not drain'
  [ "$ALLOW_ERRORS" = 1 ] && bad='panicked|did not drain'
  if grep -Eq "$bad" "$ERR"; then
    cat "$ERR"
    die "trial $1: the server logged a panic or an error"
  fi
}
check_state() { # ssdcache check must exit 0; sets CHECK to clean / not-clean / interrupted
  local rc=0
  "$BIN" check "$CACHE" >"$WORK/check.out" || rc=$?
  [ $rc -eq 0 ] && grep -q '^healthy' "$WORK/check.out" || { cat "$WORK/check.out"; die "trial $1: check: not healthy (exit $rc)"; }
  if grep -q '^in use: .*interrupted during caching and eviction' "$WORK/check.out"; then
    CHECK=interrupted
  elif grep -q '^in use: .*not clean' "$WORK/check.out"; then
    CHECK=not-clean
  elif grep -q '^in use: .*clean: shut down cleanly' "$WORK/check.out"; then
    CHECK=clean
  else
    cat "$WORK/check.out"
    die "trial $1: cannot tell the cache's state from check"
  fi
}
flip_byte() { # flips the bits of byte $2 of file $1
  "$PY" -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDWR); off = int(sys.argv[2])
b = os.pread(fd, 1, off); os.pwrite(fd, bytes([b[0] ^ 0xff]), off); os.fsync(fd)' "$1" "$2"
}

step "trials"
start Clean
RANDOM=$SEED
KILLS=0 INTERRUPTED=0 UNCLEAN=0 WARM=0 TERMS=0 SABOTAGED=
DEADLINE=$(($(date +%s) + ${MINUTES:-0} * 60))
for t in $(seq "$TRIALS"); do
  draw_trial 8 38 60 72
  LAST=0
  [ "$t" -eq "$TRIALS" ] && LAST=1
  [ -n "$MINUTES" ] && [ "$(date +%s)" -ge "$DEADLINE" ] && LAST=1
  if [ "$LAST" = 1 ] && [ "$t" -ge 2 ]; then
    MODE=term
  fi
  CSEED=$((SEED * 1000 + t))
  echo "trial $t/$TRIALS: $MODE after ${DUR} s, $MAINT maintenance run(s) and $WB write-back(s) during the workload  ($(elapsed))"
  EXTRA=()
  if [ "$SABOTAGE" = lose-write ] && [ "$MODE" != term ] && [ -z "$SABOTAGED" ]; then
    EXTRA=(--sabotage lose-write)
    SABOTAGED=1
  fi
  if [ "$SABOTAGE" = early-durable ] && [ "$MODE" != term ]; then
    EXTRA=(--sabotage early-durable)
  fi
  "$PY" "$CLIENT" run --uri "$URI" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
    --trial "$t" --seed "$CSEED" --server-pid "$SERVER_PID" --server-err "$ERR" --segment $SEG \
    --duration "$DUR" --kill "$MODE" --maint "$MAINT" --writebacks "$WB" --bin "$BIN" --cache "$CACHE" \
    --meta-range "$META_RANGE" "${EXTRA[@]}" "${CLIENT_EXTRA[@]}" ||
    die "trial $t: the client failed (see above)"
  wait_server
  server_log_ok "$t"
  check_state "$t"
  if [ "$MODE" = term ]; then
    TERMS=$((TERMS + 1))
    [ $rc -eq 0 ] || { cat "$ERR"; die "trial $t: server exited $rc after SIGTERM"; }
    grep -q 'stopped cleanly' "$ERR" || die "trial $t: no clean stop logged"
    [ "$CHECK" = clean ] || die "trial $t: check says $CHECK after a clean stop"
    echo "   SIGTERM: exit 0, check: healthy, clean; BACKING alone must hold every acknowledged write:"
    "$PY" "$CLIENT" verify --file "$BACKING" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
      --trial "$t" --segment $SEG --acked-durable || die "trial $t: BACKING after a clean stop (see above)"
    KIND=Clean
  else
    KILLS=$((KILLS + 1))
    [ $rc -eq 137 ] || { cat "$ERR"; die "trial $t: server exited $rc, not by the kill -9 (137)"; }
    case $CHECK in
      clean) die "trial $t: check says clean after kill -9" ;;
      interrupted) INTERRUPTED=$((INTERRUPTED + 1)) KIND=WarmStart ;;
      not-clean) UNCLEAN=$((UNCLEAN + 1)) KIND=Unclean ;;
    esac
    [ "$KIND" != WarmStart ] || WARM=$((WARM + 1))
    echo "   kill -9 (exit 137); check: healthy, $CHECK$([ "$CHECK" = interrupted ] && echo ' (the kill landed inside caching and eviction)')"
    if [ "$SABOTAGE" = corrupt-ssd ] && [ "$CHECK" = not-clean ] && [ -z "$SABOTAGED" ] &&
      grep -Eq '^slot [01] (primary|mirror): version .* [1-9][0-9]* of [0-9]+ slots mapped' "$WORK/check.out"; then
      DATA=$(sed -n 's/.*data at \([0-9]*\).*/\1/p' "$WORK/check.out")
      flip_byte "$CACHE" $((DATA + 1000))
      SABOTAGED=1
      echo "   SABOTAGE: flipped byte $((DATA + 1000)) of CACHE (SSD slot 0, sector 1 of its first block)"
    fi
  fi
  cp "$BACKING" "$WORK/pre.img"
  start "$KIND"
  echo "   restart: $STARTED"
  VFLAGS=()
  [ "$MODE" = term ] && VFLAGS+=(--acked-durable)
  [ "$STRICT" = 1 ] && VFLAGS+=(--strict)
  "$PY" "$CLIENT" verify --uri "$URI" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
    --trial "$t" --segment $SEG --pre "$WORK/pre.img" --update-state "${VFLAGS[@]}" ||
    die "trial $t: verification after the restart (see above)"
  [ "$LAST" = 1 ] && [ -n "$MINUTES" ] && break
done

step "final clean stop: BACKING must equal the last verified image"
kill -TERM "$SERVER_PID"
wait_server
[ $rc -eq 0 ] || { cat "$ERR"; die "final SIGTERM: server exited $rc"; }
server_log_ok final
check_state final
[ "$CHECK" = clean ] || die "final: check says $CHECK after a clean stop"
if [ "$SABOTAGE" = corrupt-backing ]; then
  flip_byte "$BACKING" $((5 * 4096 + 700))
  echo "SABOTAGE: flipped byte $((5 * 4096 + 700)) of BACKING (block 5, sector 1)"
fi
"$PY" "$CLIENT" verify --file "$BACKING" --state "$STATE" --stats "$STATS" --segment $SEG ||
  die "final: BACKING differs from the last verified image (see above)"

step "summary (seed $SEED)"
"$PY" "$CLIENT" summary --stats "$STATS" --json "$WORK/summary.json"
echo "   cache_device_errors_logged: $(cat "$WORK"/server*.err | grep -c 'cache device error' || true)"
echo "   kills -9: $KILLS (check said: $UNCLEAN not clean, $INTERRUPTED interrupted during caching and eviction); SIGTERM trials: $TERMS"
FROM_SSD=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["blocks_recovered_from_ssd"])' "$WORK/summary.json")
# A test that never finds data on the SSD only would prove nothing about recovery.
if [ "$CACHE_MODE" = write-back ] && [ "$KILLS" -ge 5 ] && [ "$FROM_SSD" -eq 0 ]; then
  die "no block was ever recovered from the SSD: the workload does not exercise the write-back cache"
fi
echo "   seconds: $(elapsed)"
if [ -n "$SABOTAGE" ]; then
  die "CRASH_SABOTAGE=$SABOTAGE: the checker did not catch the sabotage"
fi
step "all $t trials passed"
