#!/usr/bin/python3
"""How right is `serve`'s live what-if? Real traces replayed through a
server, its shadow's curves against exact `ssdcache sim` runs on what it
recorded (issue 30). Not a test: it prints a table and asserts nothing.

    scripts/bench/whatif_accuracy.py [--requests N] [--memory 1MiB] [--bin target/release/ssdcache]

For each trace: its requests (the first N) with their offsets folded into a
1 GiB export (4 KiB-aligned, modulo the export), served by a write-back LRU
cache of 128 KiB segments sized at a tenth of the folded footprint, with
`--record` and `--whatif lru,s3fifo --whatif-memory M` (a small M, so the
shadow samples: its rate is printed), replayed at queue depth 1
(scripts/tools/replay_nbd.py). Then, per policy and size (1/4x to 4x):
- the shadow's miss ratio (`ssdcache whatif --json`),
- the exact one: `ssdcache sim` on the recording, with the header's geometry
  and mode, at that size and policy;
and at the cache's own size and policy, what the server measured. Prints the
own-size error and the mean absolute error over the sizes, per policy.

Needs Debian's python3-libnbd (/usr/bin/python3) and a built ssdcache.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "..", "shared", "traces")
EXPORT = 1 << 30
SEG = 128 << 10
WORKLOADS = [
    ("cloudphysics", "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz"),
    ("msr-rw40", "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz"),
    ("fin1", "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz"),
    ("tpcc", "tpcc-mqsim/tpcc-small.trace.gz"),
]


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def folded_trace(bin_, src, out, limit):
    """The trace as SSDsim text, offsets folded into the export; its footprint in segments."""
    raw = out + ".raw"
    run(bin_, "trace", "convert", src, raw, "--to", "ssdsim", "--force")
    segs, n = set(), 0
    with open(raw) as f, open(out, "w") as o:
        for line in f:
            t, dev, lba, size, op = line.split()
            size_b = max(int(size) * 512, 512)
            size_b = min(size_b, 1 << 20)
            off = (int(lba) * 512) % (EXPORT - size_b) // 4096 * 4096
            o.write(f"{t} 0 {off // 512} {(size_b + 511) // 512} {op}\n")
            segs.update(range(off // SEG, (off + size_b - 1) // SEG + 1))
            n += 1
            if n >= limit:
                break
    os.remove(raw)
    return len(segs), n


def serve(bin_, d, slots, memory):
    backing, cache = os.path.join(d, "backing"), os.path.join(d, "cache")
    with open(backing, "wb") as f:
        f.truncate(EXPORT)
    run(bin_, "create", cache, backing, "--size", str(slots * SEG + (1 << 20)), "--segment", "128KiB")
    err = open(os.path.join(d, "serve.err"), "w")
    p = subprocess.Popen(
        [bin_, "serve", cache, backing, "--listen", "127.0.0.1:0", "--policy", "lru",
         "--record", os.path.join(d, "rec.zst"), "--whatif", "lru,s3fifo", "--whatif-memory", memory],
        stdout=subprocess.PIPE, stderr=err, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on"):
        sys.exit(f"FAIL: the server did not start: {open(os.path.join(d, 'serve.err')).read()}")
    return p, cache, line.split()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--memory", default="1MiB")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "ssdcache"))
    a = ap.parse_args()
    rows = []
    for name, rel in WORKLOADS:
        src = os.path.join(TRACES, rel)
        if not os.path.exists(src):
            print(f"(skipped {name}: {src} missing)")
            continue
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.txt")
            footprint, n = folded_trace(a.bin, src, trace, a.requests)
            slots = max(64, footprint // 10)
            p, cache, addr = serve(a.bin, d, slots, a.memory)
            try:
                run("/usr/bin/python3", os.path.join(ROOT, "scripts/tools/replay_nbd.py"), f"nbd://{addr}", trace, "--qd", "1")
                time.sleep(1.2)  # the shadow publishes twice a second
                w = json.loads(run(a.bin, "whatif", cache, "--json"))
                run(a.bin, "record", cache, "stop")
            finally:
                p.send_signal(signal.SIGTERM)
                p.wait()
            own = w["cache_bytes"]
            rec = os.path.join(d, "rec.zst")
            for curve in w["curves"]:
                errs, own_err = [], None
                for pt in curve["points"]:
                    if pt["miss_ratio"] is None:
                        continue
                    sim = json.loads(run(a.bin, "sim", "-t", rec, "--format", "record", "--page", str(SEG),
                                         "--cache", str(pt["cache_bytes"]), "--mode", "write-back",
                                         "--policy", curve["policy"], "--json").splitlines()[0])
                    exact = sim["misses"] / sim["pages"]
                    errs.append(abs(pt["miss_ratio"] - exact))
                    if pt["cache_bytes"] == own and curve["policy"] == "lru":
                        own_err = abs(pt["miss_ratio"] - w["measured"]["miss_ratio"])
                rows.append((name, n, footprint, slots, w["sample_rate"], curve["policy"], own_err,
                             sum(errs) / len(errs), max(errs)))
    print(f"{'trace':<13} {'requests':>8} {'footprint':>9} {'slots':>6} {'rate':>7}  {'policy':<7} "
          f"{'own-size err':>12} {'MAE':>7} {'max err':>7}")
    for r in rows:
        own = "-" if r[6] is None else f"{r[6]:.4f}"
        print(f"{r[0]:<13} {r[1]:>8} {r[2]:>9} {r[3]:>6} {r[4]:>7.4f}  {r[5]:<7} {own:>12} {r[7]:>7.4f} {r[8]:>7.4f}")
    print("(segments of 128 KiB; own-size err: the shadow's LRU at the cache's size against what the server "
          "measured; MAE and max err: against exact sim runs on the recording, over 1/4x to 4x)")


if __name__ == "__main__":
    main()
