#!/usr/bin/env bash
# Whole-system integrity trials of the write-back SSD cache: kill -9, then
# damage ONE copy of the superblock or of the metadata, then restart. Needs
# python3-libnbd for /usr/bin/python3 (scripts/test/test_nbd.sh installs it).
#
#   SERVE_PROFILE=release scripts/test/test_integrity.sh    (20 trials: ~30 s on 2 cores)
#
#   INTEGRITY_TRIALS    trials (default 20)
#   INTEGRITY_SEED      seed of the trial plan, the damage and the client (default
#                       random; printed, and named in every FAIL; timing makes a
#                       rerun similar, not equal)
#   SERVE_PROFILE       debug (default) | release
#   INTEGRITY_SERVE_ARGS  extra `serve` flags (e.g. the background cleaner's)
#   INTEGRITY_STRICT=1  an acknowledged but unflushed write lost is a FAIL too
#                       (otherwise counted, as in test_crash.sh)
#   INTEGRITY_SABOTAGE  self-test: corrupt-two (see below)
#
# The cache is test_crash.sh's (BACKING 64 MiB, CACHE 16 MiB, 128 KiB segments),
# driven by its verifying client scripts/lib/crash_client.py (prep / run / verify):
# every sector of BACKING holds a self-describing record, the client journals
# every generation it sends and which ones a FLUSH reply or a FUA write made
# durable, and `verify` checks every sector of an image against that journal.
# Where the two superblock copies and the four metadata copies (2 slots x
# primary, mirror) live is read from `ssdcache check CACHE --json`, never assumed.
#
# A trial:
#   1. the client's workload (4 KiB records, a hot set PWC caches, FUA writes and
#      flushes) with 0-3 caching-and-eviction procedures (SIGUSR1) and 0-2
#      `ssdcache flush` write-backs meanwhile, so plenty of dirty data lives on
#      the SSD only; then the server is ended as the trial's mode says (the
#      client's --kill): timer / flush / wb (kill -9 right after a burst, soon
#      after a FLUSH, during a control write-back), maint (kill -9 inside the
#      caching-and-eviction procedure, timed from SIGUSR1 or from its first
#      metadata save; half of the latter within ~1 ms of it, aimed at the gap
#      between a save's primary and its mirror, so saves cut between the two
#      copies are in the mix), or, rarely, term (SIGTERM: a clean stop, then
#      damage to a clean cache);
#   2. `check --json` must say the cache can start, with every copy usable (a
#      restart rewrites the copies it found damaged; otherwise this trial's
#      damage would be a second fault). A slot whose two copies hold different
#      versions is a save cut between them; it is counted;
#   3. ONE random piece of damage (scripts/tools/corrupt_cache.py): in one of the six
#      copies (3 times in 4 one of the cut slot's copies, if there is one), one
#      byte flipped, or one 512-byte sector overwritten with random bytes or
#      zeroes; `check --json` then says whether the cache can start (exit 0) or
#      not (1), and whether it noticed the damage (some copy unusable);
#   4. restart. Acceptable outcomes:
#      (a) the server starts (check must have said it can), and `verify` of the
#          export finds every flushed write (every acknowledged write after a
#          SIGTERM) intact;
#      (b) the server refuses (exit 2, check must have said it cannot) with one
#          `ssdcache: error:` line naming the metadata or superblock; then
#          `ssdcache drain CACHE BACKING` (offline) must exit 0, BACKING read
#          directly must hold every flushed write, and `check` must exit 0 and
#          say clean; the server is restarted and the trials go on.
#      Anything else (a start check said was impossible, a refusal check said
#      was needless, another exit status, a lost write, a failed drain) is a
#      FAIL. With kill -9 (which tears no 4 KiB metadata copy) one piece of
#      damage never leaves the cache unable to prove its current save, so
#      refusals are expected to be rare or absent outside the sabotage.
# At the end: SIGTERM, `check` clean, and BACKING must equal the last verified
# image exactly. The summary line gives the totals; losses must be 0.
#
# INTEGRITY_SABOTAGE=corrupt-two: on trial 2 (a kill -9 a second after a
# caching-and-eviction procedure ran, the workload writing on after it) zero
# the first sector of BOTH copies of the newest metadata slot: two faults,
# beyond what the mirroring can repair. The newest save is gone; what is left
# is an older save with an older map, so starting from it, or draining by it,
# leaves stale data where the newest writes were. The run stops after that
# trial and must end in:
#   exit 2  the server refused to start (it cannot prove which save is
#           current), and the drain that followed lost nothing;
#   exit 1  a FAIL: some flushed write was lost (after a start on the older
#           save, or after the refusal and a drain by the older save) and the
#           verifier caught it;
# never exit 0. It proves that this test's passes mean something: damage that
# does destroy metadata the cache depends on is refused by the server or
# caught by the verifier, never a silent pass. (With the cache as of this
# writing: the server refuses, `drain` assumes a torn save, writes back by the
# older save and says clean, and verify FAILs on the writes made after the
# procedure: exit 1.) Exit 3 says the sabotage had no visible effect (started,
# verified intact): the self-test proved nothing.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source scripts/lib/common.sh
# Extra `serve` flags (e.g. the background cleaner: --max-dirty 5% --dirty-age 1s).
read -r -a SERVE_EXTRA <<<"${INTEGRITY_SERVE_ARGS:-}"
TRIALS=${INTEGRITY_TRIALS:-20}
SEED=${INTEGRITY_SEED:-$(((RANDOM << 15 | RANDOM) % 1000000))}
SABOTAGE=${INTEGRITY_SABOTAGE:-}
STRICT=${INTEGRITY_STRICT:-0}
die() { echo "FAIL: $* (INTEGRITY_SEED=$SEED)" >&2; exit 1; }
PY=/usr/bin/python3
CLIENT=$ROOT/scripts/lib/crash_client.py
CORRUPT=$ROOT/scripts/tools/corrupt_cache.py
[[ $TRIALS =~ ^[1-9][0-9]*$ ]] || die "INTEGRITY_TRIALS must be a positive integer"
[[ $SEED =~ ^[0-9]+$ ]] || die "INTEGRITY_SEED must be a non-negative integer"
case "$SABOTAGE" in "" | corrupt-two) ;; *) die "INTEGRITY_SABOTAGE: unknown $SABOTAGE (corrupt-two)" ;; esac
[ -z "$SABOTAGE" ] || [ "$TRIALS" -ge 2 ] || die "INTEGRITY_SABOTAGE needs INTEGRITY_TRIALS >= 2"
"$PY" -c 'import nbd' 2>/dev/null || die "$PY has no nbd module: run scripts/test/test_nbd.sh once (it installs python3-libnbd)"

step "build ssdcache"
PROFILE=${SERVE_PROFILE:-debug}
build_ssdcache "$PROFILE"
echo "seed $SEED, $TRIALS trials, write-back cache, $PROFILE build${SABOTAGE:+, SABOTAGE=$SABOTAGE}"

trial_files
DAMAGE=$WORK/damage.jsonl CJ=$WORK/check.json

# json_get FILE KEY: a top-level field of a JSON file (true/false in lower case).
json_get() {
  "$PY" -c 'import json,sys; v = json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if not isinstance(v, str) else v)' "$1" "$2"
}
# check_json: runs `check CACHE --json` into $CJ; sets CHECK_RC, HEALTHY, CLEAN.
check_json() {
  CHECK_RC=0
  "$BIN" check "$CACHE" --json >"$CJ" 2>"$WORK/check.err" || CHECK_RC=$?
  [ $CHECK_RC -le 1 ] || { cat "$CJ" "$WORK/check.err"; die "$1: check --json exited $CHECK_RC"; }
  HEALTHY=$(json_get "$CJ" healthy) || { cat "$CJ" "$WORK/check.err"; die "$1: check --json printed no JSON"; }
  CLEAN=$(json_get "$CJ" clean)
  case "$CHECK_RC:$HEALTHY" in 0:true | 1:false) ;; *) cat "$CJ"; die "$1: check exited $CHECK_RC but says healthy: $HEALTHY" ;; esac
}

step "prepare BACKING (generation 0 everywhere), create, check"
"$PY" "$CLIENT" prep --backing "$BACKING" --state "$STATE" --nonce "$((SEED * 7919 + 1))"
"$BIN" create "$CACHE" "$BACKING" --segment 128KiB --mode write-back
check_json "fresh cache"
[ "$HEALTHY" = true ] || { cat "$CJ"; die "a fresh cache is not healthy"; }
META_RANGE=$("$PY" "$CORRUPT" layout --cache "$CACHE" --check-json "$CJ") || die "check --json: bad layout"
echo "layout: $("$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["layout"]))' "$CJ"); primaries $META_RANGE"

RUN=0
ERR=
# start_server: starts `ssdcache serve`; sets UP=1 (listening; SERVER_PID, URI)
# or UP=0 and rc (it exited at start).
start_server() {
  RUN=$((RUN + 1))
  ERR=$WORK/server$RUN.err OUT=$WORK/server$RUN.out
  spawn_wrapped "$OUT" "$ERR" "$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --export disk -v "${SERVE_EXTRA[@]}"
  local i
  for i in $(seq 1500); do # 30 s: a start may write back the whole SSD
    if grep -q '^listening on ' "$OUT" 2>/dev/null; then
      ADDR=$(sed -n 's/^listening on //p' "$OUT")
      URI="nbd://$ADDR/disk"
      UP=1
      return
    fi
    [ -s "$WORK/server.rc" ] && break
    sleep 0.02
  done
  [ -s "$WORK/server.rc" ] || { cat "$ERR"; die "server run $RUN: neither listening nor exited after 30 s"; }
  wait_server
  UP=0
}
server_log_ok() { # no panic, no error logged
  if grep -Eq 'panicked|ERROR|maintenance failed|did not drain' "$ERR"; then
    cat "$ERR"
    die "$1: the server logged a panic or an error"
  fi
}
VERIFY_FLAGS=()
[ "$STRICT" = 1 ] && VERIFY_FLAGS+=(--strict)
LOSSES=0
summary_line() { # the totals, from the client's stats and ours
  "$PY" - "$STATS" "$DAMAGE" <<EOF
import json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if '"kind": "verify"' in l]
runs = [json.loads(l) for l in open(sys.argv[1]) if '"kind": "run"' in l]
try:
    d = [json.loads(l) for l in open(sys.argv[2])]
except FileNotFoundError:
    d = []
blocks = sum(r["blocks"] for r in v)
in_maint = sum(1 for r in runs if r["kill"].get("mode") != "term" and r["kill"].get("in_maint"))
unflushed = sum(r["unflushed_lost"] for r in v)
print(f"integrity: seed $SEED, $T_DONE trials, {blocks * 4096} bytes verified ({blocks * 4096 / 2**20:.0f} MiB, "
      f"{len(v)} verifications), damage: {sum(1 for x in d if x['region'] == 'superblock')} superblock + "
      f"{sum(1 for x in d if x['region'] == 'metadata')} metadata ({sum(1 for x in d if not x['changed'])} changed nothing), "
      f"$NOTICED noticed by check, $CUT_SAVES saves cut between the copies, $REFUSALS refusals, $DRAINS drains, {in_maint} kills during caching and eviction, "
      f"$LOSSES losses, {unflushed} acked-unflushed writes lost")
EOF
}
lost() { # a verification failed: the summary, then FAIL
  LOSSES=$((LOSSES + 1))
  summary_line || true
  die "$1"
}

step "trials"
start_server
[ $UP = 1 ] || { cat "$ERR"; die "a fresh cache does not start (exit $rc)"; }
RANDOM=$SEED
T_DONE=0 KILLS=0 TERMS=0 REFUSALS=0 DRAINS=0 NOTICED=0 CUT_SAVES=0 SABOTAGED=
for t in $(seq "$TRIALS"); do
  draw_trial 8 45 65 77
  # Half the maint kills timed from the procedure's first metadata save come
  # within ~1 ms of it: aimed at the gap between the primary and the mirror.
  SCALE=1.0
  [ "$MODE" != maint ] || [ $((RANDOM % 2)) -eq 0 ] || SCALE=0.05
  T_DONE=$t
  CSEED=$((SEED * 1000 + t))
  DSEED=$((SEED * 1000 + 500 + t))
  if [ -n "$SABOTAGE" ] && [ "$t" -eq 2 ]; then
    # Make the newest save one that matters: a procedure has run (it changed the
    # map) and the workload wrote on after it.
    MODE=timer DUR=1.0 MAINT=1 WB=0 SCALE=1.0
  fi
  echo "trial $t/$TRIALS: $MODE$([ "$SCALE" = 1.0 ] || echo ' (aimed at a save)') after ${DUR} s, $MAINT maintenance run(s) and $WB write-back(s) during the workload  ($(elapsed))"
  "$PY" "$CLIENT" run --uri "$URI" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
    --trial "$t" --seed "$CSEED" --server-pid "$SERVER_PID" --server-err "$ERR" --segment $SEG \
    --duration "$DUR" --kill "$MODE" --maint "$MAINT" --writebacks "$WB" --bin "$BIN" --cache "$CACHE" \
    --meta-range "$META_RANGE" --meta-delay-scale "$SCALE" ||
    die "trial $t: the client failed (see above)"
  wait_server
  server_log_ok "trial $t"
  check_json "trial $t (before the damage)"
  [ "$HEALTHY" = true ] || { cat "$CJ"; die "trial $t: check says the cache cannot start before any damage"; }
  VFLAGS=("${VERIFY_FLAGS[@]}")
  if [ "$MODE" = term ]; then
    TERMS=$((TERMS + 1))
    [ $rc -eq 0 ] || { cat "$ERR"; die "trial $t: server exited $rc after SIGTERM"; }
    [ "$CLEAN" = true ] || { cat "$CJ"; die "trial $t: check does not say clean after a clean stop"; }
    VFLAGS+=(--acked-durable)
    echo "   SIGTERM: exit 0, check: healthy, clean"
  else
    KILLS=$((KILLS + 1))
    [ $rc -eq 137 ] || { cat "$ERR"; die "trial $t: server exited $rc, not by the kill -9 (137)"; }
    [ "$CLEAN" = false ] || { cat "$CJ"; die "trial $t: check says clean after kill -9"; }
    echo "   kill -9 (exit 137); check: healthy, not clean"
  fi

  # Every copy must be intact before the damage (a restart rewrites the copies
  # it found damaged), or this trial's damage would be a second fault. Two
  # valid copies of different versions in one slot are a save cut between
  # its primary and its mirror.
  read -r BAD CUT WORDS < <("$PY" "$CORRUPT" describe --check-json "$CJ")
  [ "$BAD" = 0 ] || { cat "$CJ"; die "trial $t: before the damage, $BAD copies are unusable ($WORDS): the last restart did not repair them"; }
  PREFER=()
  if [ "$CUT" != -1 ]; then
    CUT_SAVES=$((CUT_SAVES + 1))
    PREFER=(--prefer-slot "$CUT") # mostly damage one of that slot's copies
  fi
  echo "   copies: $WORDS$([ "$CUT" = -1 ] || echo "  (slot $CUT: a save cut between primary and mirror)")"

  # The damage: one thing (or, for the sabotage, two).
  if [ -n "$SABOTAGE" ] && [ "$t" -eq 2 ]; then
    D=$("$PY" "$CORRUPT" sabotage --cache "$CACHE" --check-json "$CJ") || die "trial $t: the sabotage failed"
    echo "   SABOTAGE: $D"
    SABOTAGED=1
  else
    D=$("$PY" "$CORRUPT" corrupt --cache "$CACHE" --check-json "$CJ" --seed "$DSEED" --record "$DAMAGE" "${PREFER[@]}") ||
      die "trial $t: corrupting failed"
    echo "   damage: $D"
  fi
  check_json "trial $t (after the damage)"
  CAN_START=$HEALTHY
  read -r BAD2 _ WORDS2 < <("$PY" "$CORRUPT" describe --check-json "$CJ")
  [ "$BAD2" = 0 ] || NOTICED=$((NOTICED + 1))
  echo "   check --json after the damage: exit $CHECK_RC (healthy: $HEALTHY, clean: $CLEAN); copies: $WORDS2"
  [ "$HEALTHY" = true ] || echo "   check: $(json_get "$CJ" error)"
  cp "$BACKING" "$WORK/pre.img"

  start_server
  if [ $UP = 1 ]; then
    [ "$CAN_START" = true ] || { cat "$CJ" "$ERR"; die "trial $t: the server started though check said the cache cannot"; }
    echo "   restart: $(grep -o 'started .*' "$ERR" || echo '(no "started" line)')"
    grep -Ei 'repair|damaged|unusable|mismatch' "$ERR" | sed 's/^/   server: /' || true
    "$PY" "$CLIENT" verify --uri "$URI" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
      --trial "$t" --segment $SEG --pre "$WORK/pre.img" --update-state "${VFLAGS[@]}" ||
      lost "trial $t: after the damage the server started, and data is lost (see above)"
  else
    # Refused: exit 2, one line naming the damage, as check predicted.
    MSG=$(grep '^ssdcache: error: ' "$ERR" || true)
    [ $rc -eq 2 ] && [ -n "$MSG" ] || { cat "$ERR"; die "trial $t: the server exited $rc at start (a refusal is exit 2 with 'ssdcache: error:')"; }
    [ "$(grep -c '^ssdcache: error: ' "$ERR")" -eq 1 ] || { cat "$ERR"; die "trial $t: more than one error line"; }
    grep -Eqi 'metadata|superblock' <<<"$MSG" || die "trial $t: the refusal does not name the damage: $MSG"
    [ "$CAN_START" = false ] || { cat "$CJ"; die "trial $t: the server refused though check said it can start: $MSG"; }
    REFUSALS=$((REFUSALS + 1))
    echo "   refused (exit 2): ${MSG:0:300}$([ ${#MSG} -gt 300 ] && echo ...)"
    drc=0
    # One piece of damage per trial: a slot that is unusable in both copies
    # can only be a save torn by the kill plus this damage, which is what
    # --assume-torn asserts (drain refuses to guess without it).
    "$BIN" drain "$CACHE" "$BACKING" --assume-torn >"$WORK/drain.out" 2>&1 || drc=$?
    sed 's/^/   drain: /' "$WORK/drain.out" | head -20
    case $drc in
      0) DRAINS=$((DRAINS + 1)) ;;
      1) lost "trial $t: drain could not read some segments (exit 1): their dirty data is lost" ;;
      *) die "trial $t: drain failed (exit $drc)" ;;
    esac
    "$PY" "$CLIENT" verify --file "$BACKING" --state "$STATE" --journal "$JOURNAL" --stats "$STATS" \
      --trial "$t" --segment $SEG --update-state "${VFLAGS[@]}" ||
      lost "trial $t: after the refusal and the drain, BACKING lacks flushed writes (see above)"
    check_json "trial $t (after the drain)"
    [ "$CHECK_RC" = 0 ] && [ "$CLEAN" = true ] || { cat "$CJ"; die "trial $t: after the drain check is not healthy and clean (exit $CHECK_RC, clean: $CLEAN)"; }
    echo "   after the drain: check exit 0, clean"
    if [ -n "$SABOTAGED" ]; then
      summary_line
      echo "SABOTAGE=corrupt-two: the server refused to start, and the drain lost nothing (INTEGRITY_SEED=$SEED)"
      exit 2
    fi
    start_server
    [ $UP = 1 ] || { cat "$ERR"; die "trial $t: the server does not start after the drain (exit $rc)"; }
    echo "   restart: $(grep -o 'started .*' "$ERR" || echo '(no "started" line)')"
  fi
  if [ -n "$SABOTAGED" ]; then
    summary_line
    echo "SABOTAGE=corrupt-two: the server started on the damaged metadata and verification found nothing lost: the self-test proved nothing (INTEGRITY_SEED=$SEED)" >&2
    exit 3
  fi
done

step "final clean stop: BACKING must equal the last verified image"
kill -TERM "$SERVER_PID"
wait_server
[ $rc -eq 0 ] || { cat "$ERR"; die "final SIGTERM: server exited $rc"; }
server_log_ok final
check_json final
[ "$CHECK_RC" = 0 ] && [ "$CLEAN" = true ] || { cat "$CJ"; die "final: check is not healthy and clean after a clean stop"; }
"$PY" "$CLIENT" verify --file "$BACKING" --state "$STATE" --stats "$STATS" --segment $SEG ||
  lost "final: BACKING differs from the last verified image (see above)"

step "summary (seed $SEED)"
echo "   kills -9: $KILLS, SIGTERM trials: $TERMS, seconds: $(elapsed)"
summary_line
step "all $TRIALS trials passed"
