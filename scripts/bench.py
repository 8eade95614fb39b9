#!/usr/bin/env python3
"""Throughput and memory of ssdcache against libCacheSim, side by side in one run.

Generates (or reuses) a trace of 10 M requests, Zipf 0.9 over 1 M unit-size keys,
in libCacheSim's oracleGeneral binary; sets the cache to 10 % of the footprint;
then for LRU, ARC, LIRS and S3-FIFO runs libCacheSim (PyPI `libcachesim`, its C
`process_trace`) and `ssdcache sim` on that same file, each as its own process,
timing the whole run including trace reading. Prints requests per second, the
ratio, and memory per cached page: a run with the real cache minus a run with a
one-page cache, divided by the cache's pages — for libCacheSim from peak RSS, for
ssdcache from its exact peak heap (SSDCACHE_HEAP_STATS; its RSS is dominated by
fixed buffers at this size).

Usage: scripts/bench.py [--requests 10M] [--keys 1M] [--repeat 3] [--policies lru,arc,lirs,s3fifo]
Numbers are wall-clock on a shared 2-core machine: take the best of --repeat runs.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
DATA = ROOT / "bench-data"
LCS_CLASS = {"lru": "LRU", "arc": "ARC", "lirs": "LIRS", "s3fifo": "S3FIFO", "fifo": "FIFO", "clock": "Clock", "2q": "TwoQ", "lfu": "LFU",
             "sieve": "Sieve", "slru": "SLRU", "lru-k": "LRUK", "mq": "MQ"}
# the ssdcache spec that runs the same algorithm as libCacheSim's class (see tests/agreement)
ALIGNED = {"arc": "arc(variant=libcachesim)", "lirs": "lirs(variant=libcachesim)", "s3fifo": "s3fifo(variant=libcachesim)",
           "2q": "2q(variant=libcachesim)"}

LCS_CHILD = r"""
import sys, time, libcachesim as lcs
cls, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = time.perf_counter()
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
cache = getattr(lcs, cls)(size)
miss_ratio, _ = cache.process_trace(reader)
print(time.perf_counter() - t, miss_ratio)
"""


def count(text: str) -> int:
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}
    t = text.strip().lower()
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


def run_rss(cmd: list[str]) -> tuple[float, int, str, int]:
    """Runs cmd; returns wall seconds, its own peak RSS (wait4), stdout, and the
    peak heap ssdcache reports on stderr (0 for other programs)."""
    t = time.perf_counter()
    env = dict(os.environ, SSDCACHE_HEAP_STATS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{err.decode()}")
    heap = [int(l.split()[-1]) for l in err.decode().splitlines() if l.startswith("heap peak bytes:")]
    return wall, usage.ru_maxrss * 1024, out.decode(), heap[0] if heap else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", default="10M")
    ap.add_argument("--keys", default="1M")
    ap.add_argument("--alpha", default="0.9")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--policies", default="lru,arc,lirs,s3fifo")
    args = ap.parse_args()
    if not BIN.exists():
        sys.exit(f"{BIN} missing: cargo build --release -p ssdcache-cli")
    DATA.mkdir(exist_ok=True)
    n, keys = count(args.requests), count(args.keys)
    trace = DATA / f"zipf{args.alpha}-{n}-{keys}.oracleGeneral.bin"
    if not trace.exists():
        spec = f"zipf(alpha={args.alpha},keys={keys},requests={n},seed=42)"
        print(f"generating {trace.name}: {spec}", file=sys.stderr)
        subprocess.run([BIN, "trace", "gen", spec, trace, "--to", "oracle-general"], check=True)
    info = json.loads(subprocess.run([BIN, "trace", "info", trace, "--format", "oracle-general", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    footprint = info["footprint_pages"]
    pages = footprint // 10
    print(f"trace: {trace.name}: {n:,} requests, footprint {footprint:,} keys; cache {pages:,} pages (10 %)\n")
    print(f"{'policy':<8} {'libCacheSim req/s':>18} {'ssdcache req/s':>15} {'ratio':>6}  {'miss lcs':>9} {'miss ours':>9}  "
          f"{'B/page lcs':>10} {'B/page ours':>11}")
    for policy in args.policies.split(","):
        cls = LCS_CLASS[policy]
        lcs_cmd = lambda size: [sys.executable, "-c", LCS_CHILD, cls, str(size * 4096), str(trace)]
        ours_cmd = lambda size: [BIN, "sim", "--trace", trace, "--format", "oracle-general", "--policy", ALIGNED.get(policy, policy),
                                 "--cache", f"{size * 4096}B", "--json"]
        best_lcs = best_ours = float("inf")
        rss_lcs = heap_ours = 0
        for _ in range(args.repeat):
            wall, rss_lcs, out, _ = run_rss(lcs_cmd(pages))
            best_lcs = min(best_lcs, wall)
            lcs_miss = float(out.split()[1])
            wall, _, out, heap_ours = run_rss(ours_cmd(pages))
            best_ours = min(best_ours, wall)
            ours_miss = json.loads(out)["misses"] / n
        # baseline: a cache too small to matter (16 pages: some policies need a few pages per queue)
        _, base_lcs, _, _ = run_rss(lcs_cmd(16))
        _, _, _, base_ours = run_rss(ours_cmd(16))
        per_lcs = (rss_lcs - base_lcs) / (pages - 16)
        per_ours = (heap_ours - base_ours) / (pages - 16)
        print(f"{policy:<8} {n / best_lcs:>18,.0f} {n / best_ours:>15,.0f} {best_lcs / best_ours:>5.2f}x  "
              f"{lcs_miss:>9.4f} {ours_miss:>9.4f}  {per_lcs:>10.1f} {per_ours:>11.1f}")
    print("\nreq/s: whole process, trace reading included, best of", args.repeat,
          "| B/page: (peak with the cache - peak with a 16-page cache) / cache pages;"
          " libCacheSim: RSS, ssdcache: heap")


if __name__ == "__main__":
    main()
