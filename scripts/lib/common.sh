# Sourced by the serve scripts (test_nbd.sh, test_serve.sh, test_crash.sh, test_faults.sh, test_integrity.sh,
# bench_serve.sh): step timing, failure, and waiting for a server's address.
T0=${EPOCHREALTIME/./}
elapsed() { local us=$((${EPOCHREALTIME/./} - T0)); printf '%d.%d s' $((us / 1000000)) $((us / 100000 % 10)); }
step() { printf '\n== %s  (%s)\n' "$*" "$(elapsed)"; }
die() { echo "FAIL: $*" >&2; exit 1; }

# need_tools HINT TOOL...: dies, saying HINT, if a TOOL is not on PATH.
need_tools() {
  local hint=$1 t
  shift
  for t in "$@"; do command -v "$t" >/dev/null || die "$t missing: $hint"; done
}

# kill_server PID: SIGKILL a server of ours if it still runs, and reap it.
kill_server() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    { kill -KILL "$1" && wait "$1"; } 2>/dev/null || true
  fi
}

# work_dir: $WORK, a new temporary directory, removed at exit after the
# server SERVER_PID (none yet) is killed if it still runs.
work_dir() {
  WORK=$(mktemp -d)
  SERVER_PID=
  trap 'kill_server "$SERVER_PID"; rm -rf "$WORK"' EXIT
}

# build_ssdcache PROFILE: builds the CLI (debug or release); sets BIN.
build_ssdcache() {
  if [ "$1" = release ]; then
    cargo build -q --locked --release -p ssdcache-cli
  else
    cargo build -q --locked -p ssdcache-cli
  fi
  BIN=${CARGO_TARGET_DIR:-$PWD/target}/$1/ssdcache
}

# wait_listening PID OUT ERR WHAT: waits (up to 10 s) until the server PID
# prints "listening on ADDR" to the file OUT; sets ADDR and URI (export
# "disk"). Dies, showing ERR, if it exits first or never says.
wait_listening() {
  local pid=$1 out=$2 err=$3 what=$4 i
  for i in $(seq 500); do
    grep -q '^listening on ' "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { cat "$err"; die "$what exited at start"; }
    sleep 0.02
  done
  ADDR=$(sed -n 's/^listening on //p' "$out")
  [ -n "$ADDR" ] || { cat "$err"; die "$what did not report its address"; }
  URI="nbd://$ADDR/disk"
}

# The kill -9 trial scripts (test_crash.sh, test_integrity.sh) run the server in
# a wrapper subshell that waits for it and records its exit status in
# $WORK/server.rc, so that bash prints no "Killed" job notice for each kill -9.
#
# trial_files: $WORK (removed at exit, with a wrapped server still running),
# the verifying client's STATE, JOURNAL and STATS files in it, and the trials'
# 64 MiB BACKING and 16 MiB CACHE (of SEG-byte segments once created).
trial_files() {
  WORK=$(mktemp -d)
  SERVER_PID= WRAP_PID=
  trap cleanup_wrapped EXIT
  CACHE=$WORK/cache.img BACKING=$WORK/backing.img STATE=$WORK/state.pkl JOURNAL=$WORK/journal.pkl
  STATS=$WORK/stats.jsonl
  SEG=131072
  truncate -s 64M "$BACKING"
  truncate -s 16M "$CACHE"
}
# draw_trial TERM MAINT FLUSH WB: a trial drawn from RANDOM, in the order the
# scripts' seeds depend on (so call it in the script's shell: a subshell
# reseeds RANDOM). MODE, how the server is ended: term below TERM % of the
# draws, then maint below MAINT %, flush below FLUSH %, wb below WB %, timer
# for the rest; then the workload: DUR seconds, MAINT procedures (0-3, none a
# third of the time), WB control write-backs (0-2).
draw_trial() {
  local r=$((RANDOM % 100))
  if [ $r -lt "$1" ]; then
    MODE=term
  elif [ $r -lt "$2" ]; then
    MODE=maint
  elif [ $r -lt "$3" ]; then
    MODE=flush
  elif [ $r -lt "$4" ]; then
    MODE=wb
  else
    MODE=timer
  fi
  DUR=0.$((300 + RANDOM % 700))
  MAINT=0
  [ $((RANDOM % 3)) -eq 0 ] || MAINT=$((1 + RANDOM % 3))
  WB=$((RANDOM % 3))
}
# spawn_wrapped OUT ERR CMD...: starts CMD so; sets SERVER_PID and WRAP_PID.
spawn_wrapped() {
  local out=$1 err=$2
  shift 2
  rm -f "$WORK/server.pid" "$WORK/server.rc"
  (
    "$@" >"$out" 2>"$err" &
    echo $! >"$WORK/server.pid"
    rc=0
    wait $! || rc=$?
    echo $rc >"$WORK/server.rc"
  ) 2>/dev/null &
  WRAP_PID=$!
  until [ -s "$WORK/server.pid" ]; do sleep 0.005; done
  SERVER_PID=$(cat "$WORK/server.pid")
}
# wait_server: waits for the wrapped server to exit; sets rc to its exit status.
wait_server() {
  wait "$WRAP_PID" || true
  WRAP_PID= SERVER_PID=
  rc=$(cat "$WORK/server.rc")
}
# cleanup_wrapped: at exit, kill -9 a wrapped server still running, reap it, remove $WORK.
cleanup_wrapped() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "$WRAP_PID" ]; then wait "$WRAP_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
