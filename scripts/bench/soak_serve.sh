#!/usr/bin/env bash
# Soak of `ssdcache serve` (issue 14; a benchmark, not in CI): SOAK_MINUTES
# (default 10) of scripts/test/test_crash.sh trials (its verifying client: 2
# connections, 8 requests in flight each, journal, FUA and flushes; procedures
# by SIGUSR1 and `ssdcache flush` during the workload; kill -9 or SIGTERM and
# restart after each), with
#   - the background cleaner at a low rate: --max-dirty 10% --dirty-age 2s
#     --clean-rate 2MB (127 slots of 128 KiB: 12 dirty at most, ~16 segments/s);
#   - injected cache-device errors: in every server run, the 3 writes to the
#     cache device's data region after its first 3000 fail with EIO
#     (`--inject-cache write:eio:after=3000:count=3`). 3 per run stays under
#     the default --max-cache-errors of 8, so the cache keeps caching instead
#     of going degraded at once. Write errors only: an injected read error
#     could land in the SIGTERM shutdown's write-back, which then (rightly)
#     refuses to mark the cache clean, and the trial's clean-stop check would
#     fail on it; cache reads are covered by scripts/test/test_faults.sh.
#   A failed request, procedure or flush is counted, not fatal
#   (CRASH_ALLOW_ERRORS=1); every acknowledged-and-flushed write must still
#   be there after every restart (and with CRASH_STRICT=1, every acknowledged
#   one).
# Prints what was written, verified and lost (must be 0), and the client's
# latency percentiles per 10 s, drawn into SOAK_OUT/latency.png (matplotlib
# from the pyenv python3; the crash client runs on /usr/bin/python3).
#
# SOAK_POLICY=P serves with `--policy P` (write-back with a replacement
# policy: lru, s3fifo, …; default paper 000's pwc), where every miss fills
# and a dirty victim is written back before its slot is reused — with the
# cleaner above keeping clean victims at hand.
#
#   SOAK_MINUTES=10 SOAK_OUT=/tmp/soak scripts/bench/soak_serve.sh
#   SOAK_POLICY=s3fifo SOAK_MINUTES=5 scripts/bench/soak_serve.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
MINUTES=${SOAK_MINUTES:-10}
OUT=${SOAK_OUT:-$(mktemp -d /tmp/soak.XXXXXX)}
mkdir -p "$OUT"
LAT=$OUT/latency.log
: >"$LAT"
PLOT_PY=${SOAK_PYTHON:-python3}
"$PLOT_PY" -c 'import matplotlib' 2>/dev/null || { echo "FAIL: $PLOT_PY has no matplotlib (SOAK_PYTHON picks another)" >&2; exit 1; }
POLICY_ARGS=${SOAK_POLICY:+--policy $SOAK_POLICY}
echo "soak: $MINUTES minute(s), policy ${SOAK_POLICY:-pwc}; output in $OUT"
CRASH_MINUTES=$MINUTES CRASH_ALLOW_ERRORS=1 CRASH_STRICT=1 CRASH_LATENCY_LOG=$LAT \
  CRASH_SERVE_ARGS="$POLICY_ARGS --max-dirty 10% --dirty-age 2s --clean-rate 2MB --inject-cache write:eio:after=3000:count=3" \
  SERVE_PROFILE=release scripts/test/test_crash.sh 2>&1 | tee "$OUT/crash.log"
echo
echo "== what was written, verified, lost"
grep -E '^   (trials|writes_sent|writes_acked|fua_acked|flushes_acked|maintenance_runs|control_write_backs|blocks_verified|written_blocks_verified|blocks_recovered_from_ssd|torn_blocks|acked_unflushed_lost|request_errors|procedure_failures|flush_command_failures|cache_device_errors_logged):' "$OUT/crash.log"
echo
echo "== client latency over time"
"$PLOT_PY" scripts/bench/soak_plot.py "$LAT" "$OUT/latency.png"
