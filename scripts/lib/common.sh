# Sourced by the serve scripts (test_nbd.sh, test_serve.sh, test_crash.sh,
# bench_serve.sh): step timing, failure, and waiting for a server's address.
T0=${EPOCHREALTIME/./}
elapsed() { local us=$((${EPOCHREALTIME/./} - T0)); printf '%d.%d s' $((us / 1000000)) $((us / 100000 % 10)); }
step() { printf '\n== %s  (%s)\n' "$*" "$(elapsed)"; }
die() { echo "FAIL: $*" >&2; exit 1; }

# kill_server PID: SIGKILL a server of ours if it still runs, and reap it.
kill_server() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    { kill -KILL "$1" && wait "$1"; } 2>/dev/null || true
  fi
}

# build_ssdcache PROFILE: builds the CLI (debug or release); sets BIN.
build_ssdcache() {
  if [ "$1" = release ]; then
    cargo build -q --locked --release -p ssdcache-cli
  else
    cargo build -q --locked -p ssdcache-cli
  fi
  BIN=$PWD/target/$1/ssdcache
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
