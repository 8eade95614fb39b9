#!/usr/bin/env python3
"""Requests/s of an LRU written in Python (examples/policies/lru.py) driven by ssdcache,
against ssdcache's built-in `lru` and against libCacheSim's `PluginCache` (PyPI
`libcachesim`, as tests/agreement uses it) driving the same Python LRU class through its
hooks; libCacheSim's own C LRU for scale. One run, the engines alternating, medians of
`--repeat` rounds; every engine must count the same misses.

The workload is the first `--requests` keys of the cache2k ORM trace in ../shared/traces
(5 M real keys; a Zipf stream if it is missing), read-only, cache at `--cache` of the
footprint. Both simulators get the keys already in memory: ssdcache a loaded arrays trace,
libCacheSim an oracleGeneral file (C reader) in a temporary directory.

    python scripts/bench/bench_pypolicy.py [--requests 1000000] [--cache 0.1] [--repeat 5]

Needs the ssdcache package (`pip install .` or `maturin develop --release`) and libcachesim.
"""

from __future__ import annotations

import argparse
import importlib.util
import lzma
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

import ssdcache

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))
ORM = TRACES / "cache2k-orm-busy" / "orm-busy.trace.xz"


def python_lru() -> type:
    spec = importlib.util.spec_from_file_location("example_lru", ROOT / "examples" / "policies" / "lru.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LRU


def workload(n: int) -> tuple[np.ndarray, str]:
    if ORM.exists():
        with lzma.open(ORM) as f:
            keys = np.frombuffer(f.read(4 * n), dtype=">u4").astype(np.uint64)
        return keys, f"cache2k orm-busy, first {len(keys):,} keys"
    rng = np.random.default_rng(1)
    keys = (rng.zipf(1.2, n) % 1_000_000).astype(np.uint64)
    return keys, f"Zipf(1.2) over 1M keys, {n:,} requests (ORM trace not found at {ORM})"


def write_oracle_general(keys: np.ndarray, path: pathlib.Path) -> None:
    """<u32 time, u64 id, u32 size, i64 next access>: unit-size objects (LRU needs no next access)."""
    rec = np.zeros(len(keys), dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"] = np.arange(len(keys), dtype=np.uint32)
    rec["id"] = keys
    rec["size"] = 1
    rec["next"] = -1
    path.write_bytes(rec.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--cache", type=float, default=0.1, help="cache size as a share of the footprint")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import libcachesim as lcs

    LRU = python_lru()
    ssdcache.register_policy("pylru", LRU)
    keys, what = workload(args.requests)
    n = len(keys)
    pages = max(1, int(args.cache * len(np.unique(keys))))
    trace = ssdcache.load({"pages": keys, "ops": np.zeros(n, np.uint8)})
    cache = pages * 4096

    def ours(policy: str):
        def run() -> int:
            return ssdcache.simulate(trace, policy, cache=cache).misses
        return run

    tmp = tempfile.TemporaryDirectory()
    oracle = pathlib.Path(tmp.name) / "keys.oracleGeneral.bin"
    write_oracle_general(keys, oracle)

    def lcs_run(make):
        def run() -> int:
            reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
            miss_ratio, _ = make().process_trace(reader)
            return round(miss_ratio * n)
        return run

    def plugin():
        # the same class, through libCacheSim's hooks (it keeps no resident set: the class does)
        return lcs.PluginCache(
            cache_size=pages,
            cache_init_hook=lambda params: LRU(pages),
            cache_hit_hook=lambda lru, req: lru.on_hit(req.obj_id),
            cache_miss_hook=lambda lru, req: lru.on_miss(req.obj_id),
            cache_eviction_hook=lambda lru, req: lru.evict(),
            cache_remove_hook=lambda lru, obj_id: lru.on_remove(obj_id),
            cache_free_hook=lambda lru: None,  # (0.3.5 refuses None)
            cache_name="PythonLRU")

    engines = {
        "ssdcache, Python LRU (pylru)": ours("pylru"),
        "ssdcache, built-in lru": ours("lru"),
        "libCacheSim PluginCache, same Python LRU": lcs_run(plugin),
        "libCacheSim, built-in C LRU": lcs_run(lambda: lcs.LRU(pages)),
    }
    times: dict[str, list[float]] = {name: [] for name in engines}
    misses: dict[str, set[int]] = {name: set() for name in engines}
    for _ in range(args.repeat):
        for name, run in engines.items():  # alternating: each round runs every engine once
            t = time.perf_counter()
            misses[name].add(run())
            times[name].append(time.perf_counter() - t)
    tmp.cleanup()

    print(f"workload: {what}; cache {pages:,} pages ({args.cache:.0%} of the footprint); "
          f"{args.repeat} rounds, engines alternating")
    print(f"python {sys.version.split()[0]}, ssdcache {ssdcache.__version__}, "
          f"libcachesim {getattr(lcs, '__version__', '?')}, {os.cpu_count()} cores")
    print(f"{'engine':<44} {'requests/s (median)':>20} {'min':>12} {'max':>12} {'misses':>10}")
    base = statistics.median(times["ssdcache, Python LRU (pylru)"])
    for name in engines:
        ts = times[name]
        rate = [n / t for t in ts]
        print(f"{name:<44} {n / statistics.median(ts):>20,.0f} {min(rate):>12,.0f} {max(rate):>12,.0f} "
              f"{'/'.join(map(str, sorted(misses[name]))):>10}   ({statistics.median(ts) / base:.2f}× pylru's time)")
    counts = {m for s in misses.values() for m in s}
    if len(counts) != 1:
        sys.exit(f"the engines disagree on the misses: {misses}")


if __name__ == "__main__":
    main()
