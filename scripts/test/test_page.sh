#!/usr/bin/env bash
# The page `serve --metrics ADDR` serves at `/`, rendered by a real browser
# (Debian's chromium, headless; scripts/test.sh installs it):
#   1. a write-back LRU cache (16 slots of 128 KiB before 8 MiB) serves a
#      qemu-io workload of reads and writes with hits and misses, then no more
#      I/O, so status --json and the page must show the same numbers;
#   2. chromium loads `/` (it polls /status.json) and dumps the DOM: the hit
#      ratios (overall, read, write), the dirty share, degraded, the cleaner,
#      the since-start latency percentiles and the measured miss ratio equal
#      what status --json says, to the page's precision; the what-if chart has
#      one path per policy and the current point marked on the running
#      policy's curve, its predicted miss ratio the curve's at the cache's size;
#   3. a screenshot (1000x800) while I/O runs: a PNG, in $WORK unless
#      PAGE_SCREENSHOT names where (docs/serve-page.png is made so:
#      `PAGE_SCREENSHOT=docs/serve-page.png scripts/test/test_page.sh`).
#
#   scripts/test/test_page.sh        SERVE_PROFILE=release scripts/test/test_page.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib/common.sh

need_tools "apt-get install -y qemu-utils chromium (scripts/test.sh does)" qemu-io chromium
step "build ssdcache"
build_ssdcache "${SERVE_PROFILE:-debug}"

work_dir
CACHE=$WORK/cache.img BACKING=$WORK/backing.img
truncate -s 8M "$BACKING"
"$BIN" create --segment 128KiB --size 2MiB "$CACHE" "$BACKING" >/dev/null

step "serve --metrics --policy lru, and a workload with hits and misses"
"$BIN" serve "$CACHE" "$BACKING" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 --policy lru \
  >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
wait_listening "$SERVER_PID" "$WORK/server.out" "$WORK/server.err" server
for i in $(seq 250); do
  grep -q '^metrics on ' "$WORK/server.out" && break
  sleep 0.02
done
HTTP=$(sed -n 's/^metrics on //p' "$WORK/server.out")
[ -n "$HTTP" ] || die "no metrics address"
echo "NBD $ADDR, page http://$HTTP/"

# workload OFFSET_STEP: writes into 1 MiB, reads over 4 MiB twice (the
# second pass hits what the first filled, if LRU kept it), then 1 MiB again,
# and writes that stay dirty.
workload() {
  local args=() o
  for o in $(seq 0 65536 1048575); do args+=(-c "write -P 0x5a $o 4k"); done
  for o in $(seq 0 "$1" 4194303) $(seq 0 "$1" 4194303) $(seq 0 65536 1048575); do args+=(-c "read $o 4k"); done
  for o in 0 131072 262144; do args+=(-c "write -P 0xa5 $o 4k"); done
  qemu-io -f raw "${args[@]}" "nbd://$ADDR" >/dev/null
}
workload 32768

# status --json's "status"; the what-if publishes on its own thread: wait
# until two reads a second apart agree, so the page reads the same.
status() { "$BIN" status "$CACHE" --json >"$1"; }
for i in $(seq 20); do
  status "$WORK/s1.json"
  sleep 1
  status "$WORK/s2.json"
  python3 - "$WORK/s1.json" "$WORK/s2.json" <<'EOF' && break
import json, sys
a, b = (json.load(open(p))["status"] for p in sys.argv[1:])
def drop(s):  # what moves with the clock alone
    s = {k: v for k, v in s.items() if k not in ("uptime", "cleaner", "next_maintenance")}
    s["whatif"] = {k: v for k, v in (s["whatif"] or {}).items() if k != "last_hour_seconds"}
    return s
sys.exit(0 if drop(a) == drop(b) else 1)
EOF
  [ "$i" -lt 20 ] || die "status --json kept changing without I/O"
done

step "chromium renders / (polling /status.json), the DOM against status --json"
CHROME=(chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$WORK/chromium")
timeout 60 "${CHROME[@]}" --virtual-time-budget=6000 --dump-dom "http://$HTTP/" >"$WORK/dom.html" 2>"$WORK/chromium.err" ||
  { tail -5 "$WORK/chromium.err"; die "chromium --dump-dom failed"; }
status "$WORK/s3.json"
python3 - "$WORK/dom.html" "$WORK/s2.json" "$WORK/s3.json" <<'EOF'
import json, sys
from html.parser import HTMLParser

class Dom(HTMLParser):
    """Text by element id; the what-if chart's curves and marked points."""
    def __init__(self):
        super().__init__()
        self.text, self.stack, self.curves, self.points = {}, [], [], {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "path" and a.get("class") == "curve":
            self.curves.append(a)
        if tag == "circle" and "id" in a:
            self.points[a["id"]] = a
        if tag in ("meta", "input", "br", "link", "path", "circle", "line"):
            return  # void here (chromium writes SVG's empty elements as start/end pairs: fine either way)
        self.stack.append(a.get("id"))
        if a.get("id"):
            self.text[a["id"]] = ""
    def handle_endtag(self, tag):
        if tag in ("meta", "input", "br", "link", "path", "circle", "line"):
            return
        if self.stack:
            self.stack.pop()
    def handle_data(self, data):
        for i in self.stack:
            if i:
                self.text[i] += data

dom = Dom()
dom.feed(open(sys.argv[1]).read())
t = dom.text
s2, s3 = (json.load(open(p))["status"] for p in sys.argv[2:])
fails = []

def pct(part, whole):
    return "-" if whole == 0 else f"{100 * part / whole:.2f} %"

def same(name, shown, want):
    # JS's toFixed rounds a tie up, Python's format to even: a last-digit
    # difference is allowed for numbers, nothing else.
    if shown == want:
        return
    try:
        a, b = (float(x.split()[0]) for x in (shown, want))
        if abs(a - b) <= 0.011 and shown.split()[1:] == want.split()[1:]:
            return
    except (ValueError, IndexError):
        pass
    fails.append(f"{name}: page {shown!r}, status --json {want!r}")

s = s2
for k in ("read_hits", "read_misses", "write_hits", "write_misses", "dirty", "requests"):
    if s2[k] != s3[k]:
        sys.exit(f"FAIL: {k} changed while no I/O ran: {s2[k]} -> {s3[k]}")
n = lambda k: s[k]
rp, wp = n("read_hits") + n("read_misses"), n("write_hits") + n("write_misses")
assert n("read_hits") > 0 and n("read_misses") > 0 and n("write_hits") + n("write_misses") > 0 and n("dirty") > 0, s
same("hit-ratio", t["hit-ratio"], pct(n("read_hits") + n("write_hits"), rp + wp))
same("read-hit-ratio", t["read-hit-ratio"], pct(n("read_hits"), rp))
same("write-hit-ratio", t["write-hit-ratio"], pct(n("write_hits"), wp))
same("dirty-share", t["dirty-share"], pct(n("dirty"), n("ssd_segments")))
same("dirty", t["dirty"], str(n("dirty")))
same("degraded", t["degraded"], "DEGRADED: nothing new is cached (--clear-degraded resumes)" if s["degraded"] else "no")
same("cleaner", t["cleaner"], "none" if s["cleaner"] is None else s["cleaner"]["activity"] + (" (running)" if s["cleaner"]["running"] else ""))
same("measured-miss", t["measured-miss"], pct(rp + wp - n("read_hits") - n("write_hits"), rp + wp))

# Latency since start: the page's histogram_quantile against the same here.
def secs(v):
    if v < 1e-3:
        return f"{v * 1e6:.0f} µs"
    if v < 1:
        return f"{v * 1e3:.2f} ms"
    return f"{v:.2f} s"

def quantile(q, buckets):
    total = sum(c for _, c in buckets)
    if total == 0:
        return "-"
    rank, cum = q * total, 0
    for i, (bound, c) in enumerate(buckets):
        if c > 0 and cum + c >= rank:
            lo = 0 if i == 0 else buckets[i - 1][0]
            return "> " + secs(lo) if bound is None else secs(lo + (bound - lo) * (rank - cum) / c)
        cum += c

for op in ("read", "write"):
    rows = [r for r in s["requests"] if r["op"] == op]
    buckets = [[b, sum(r["latency"]["buckets"][i][1] for r in rows)] for i, (b, _) in enumerate(rows[0]["latency"]["buckets"])]
    same(f"lat-{op}-all-count", t[f"lat-{op}-all-count"], str(sum(r["latency"]["count"] for r in rows)))
    for q in (50, 90, 99):
        want, shown = quantile(q / 100, buckets), t[f"lat-{op}-all-p{q}"]
        # the same formula in two languages: equal but for the last digit
        if want != shown:
            try:
                a, b = float(want.split()[0]), float(shown.split()[0])
                ok = want.split()[1:] == shown.split()[1:] and abs(a - b) <= 0.011 + 0.002 * a
            except (ValueError, IndexError):
                ok = False
            if not ok:
                fails.append(f"lat-{op}-all-p{q}: page {shown!r}, computed {want!r}")

# What-if: one path per policy, the running policy's point at its own size.
w = s["whatif"]
assert w is not None, "the what-if is on by default"
policies = [c["policy"] for c in w["since_start"]]
if sorted(c["data-policy"] for c in dom.curves) != sorted(policies):
    fails.append(f"curves {[c['data-policy'] for c in dom.curves]}, policies {policies}")
if any(c.get("d", "").count("L") + 1 < 2 for c in dom.curves):
    fails.append(f"a curve of fewer than 2 points: {dom.curves}")
cur = dom.points.get("current-point")
if cur is None or cur.get("data-policy") != s["policy"]:
    fails.append(f"no current point on {s['policy']}'s curve: {dom.points}")
if "measured-point" not in dom.points:
    fails.append("no measured point")
own = [p for c in w["since_start"] if c["policy"] == s["policy"] for p in c["points"] if p["cache_bytes"] == w["cache_bytes"]]
assert own and own[0]["miss_ratio"] is not None, w
same("predicted-miss", t["predicted-miss"], f"{100 * own[0]['miss_ratio']:.2f} %")
same("running-policy", t["running-policy"], s["policy"])

for f in fails:
    print("FAIL:", f)
if fails:
    sys.exit(1)
print(f"page == status --json: hit ratio {t['hit-ratio']} (read {t['read-hit-ratio']}, write {t['write-hit-ratio']}), "
      f"dirty {t['dirty-share']}, measured miss {t['measured-miss']} vs predicted {t['predicted-miss']}, "
      f"read p99 {t['lat-read-all-p99']}, {len(dom.curves)} what-if curves ({', '.join(policies)})")
EOF

step "a screenshot while I/O runs"
SHOT=${PAGE_SCREENSHOT:-$WORK/page.png}
# Chromium runs the page in virtual time (its polls come milliseconds apart
# in real time): one long qemu-io keeps requests arriving between them.
args=()
for i in $(seq 6000); do
  args+=(-c "read $((i * 69632 % 4194304 / 4096 * 4096)) 4k")
  [ $((i % 5)) -ne 0 ] || args+=(-c "write $((i * 12288 % 1048576)) 4k")
done
qemu-io -f raw "${args[@]}" "nbd://$ADDR" >/dev/null &
IO_PID=$!
sleep 1.5
timeout 60 "${CHROME[@]}" --virtual-time-budget=20000 --window-size=1000,800 --screenshot="$(realpath -m "$SHOT")" \
  "http://$HTTP/" 2>>"$WORK/chromium.err" >/dev/null || { tail -5 "$WORK/chromium.err"; die "chromium --screenshot failed"; }
kill "$IO_PID" 2>/dev/null || true
wait "$IO_PID" 2>/dev/null || true
[ "$(head -c 8 "$SHOT" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || die "$SHOT is not a PNG"
echo "screenshot $SHOT ($(stat -c %s "$SHOT") bytes)"

step "SIGTERM"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[ $rc -eq 0 ] || { cat "$WORK/server.err"; die "server exited $rc after SIGTERM"; }
echo "OK: the page shows what status --json says"
