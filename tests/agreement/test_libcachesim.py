"""Miss counts of ssdcache's classic policies equal libCacheSim's on the same page stream.

libCacheSim (PyPI `libcachesim`) is the peer nobody here wrote. The page stream is
made once by ssdcache (`trace convert --to keys`: every page every request touches,
devices kept apart), written as libCacheSim's oracleGeneral binary with unit-size
objects (obj_size = 4096, cache_size = pages * 4096), and replayed by both.
Where definitions differ, ssdcache's defaults are aligned to libCacheSim and the
difference is documented in the policy's source file; LIBCACHESIM below holds
the constructor each spec is compared with.
"""

import pathlib
import struct

import libcachesim as lcs
import numpy as np
import pytest

from conftest import TRACES, shared_traces, sim_json, ssdcache

# ssdcache spec -> libCacheSim constructor (cache size in bytes)
LIBCACHESIM = {
    "lru": lambda size: lcs.LRU(size),
    "fifo": lambda size: lcs.FIFO(size),
    "clock": lambda size: lcs.Clock(size),
    "lfu": lambda size: lcs.LFU(size),
    "2q": lambda size: lcs.TwoQ(size),
    "arc": lambda size: lcs.ARC(size),
    "lirs": lambda size: lcs.LIRS(size),
    "s3fifo": lambda size: lcs.S3FIFO(size),
    "belady": lambda size: lcs.Belady(size),
}
PAGE = 4096
FRACTIONS = (0.005, 0.02, 0.1, 0.3, 0.7)
NO_NEXT_ACCESS = -1  # oracleGeneral's "never requested again"


def write_oracle_general(keys: np.ndarray, path: pathlib.Path) -> None:
    """Records <u32 time, u64 id, u32 size, i64 next_access_vtime>."""
    n = len(keys)
    nxt = np.full(n, NO_NEXT_ACCESS, dtype=np.int64)
    last = {}
    for i in range(n - 1, -1, -1):
        k = int(keys[i])
        nxt[i] = last.get(k, NO_NEXT_ACCESS)
        last[k] = i
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"] = np.arange(n, dtype=np.uint32)
    rec["id"] = keys
    rec["size"] = PAGE
    rec["next"] = nxt
    assert rec.dtype.itemsize == 24
    path.write_bytes(rec.tobytes())


def libcachesim_misses(policy: str, pages: int, oracle: pathlib.Path, n: int) -> int:
    cache = LIBCACHESIM[policy](pages * PAGE)
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, _ = cache.process_trace(reader)
    return round(miss_ratio * n)


def compare(keys_file: pathlib.Path, tmp: pathlib.Path) -> list[str]:
    keys = np.loadtxt(keys_file, dtype=np.uint64, ndmin=1)
    footprint = len(np.unique(keys))
    # 2Q and S3-FIFO refuse caches too small for their queues (libCacheSim would cache nothing)
    sizes = sorted({max(16, int(f * footprint)) for f in FRACTIONS})
    oracle = tmp / "stream.oracleGeneral.bin"
    write_oracle_general(keys, oracle)
    reports = sim_json(
        "--trace", keys_file, "--format", "keys",
        "--policy", ",".join(LIBCACHESIM), "--cache", ",".join(f"{s * PAGE}B" for s in sizes),
    )
    assert len(reports) == len(LIBCACHESIM) * len(sizes)
    mismatches = []
    for r in reports:
        assert r["pages"] == len(keys)
        theirs = libcachesim_misses(r["policy"], r["capacity_pages"], oracle, len(keys))
        if r["misses"] != theirs:
            mismatches.append(f"{r['policy']} @ {r['capacity_pages']} pages: ssdcache {r['misses']} libCacheSim {theirs}")
    return mismatches


REAL = shared_traces() if TRACES.is_dir() else []


@pytest.mark.parametrize("trace", REAL, ids=[p.name for p in REAL])
def test_real_trace_page_streams_agree(trace: pathlib.Path, tmp_path: pathlib.Path):
    keys_file = tmp_path / "stream.keys"
    ssdcache("trace", "convert", trace, keys_file, "--to", "keys", "--page", f"{PAGE}B")
    assert compare(keys_file, tmp_path) == []


SYNTHETIC = [("zipf0.8", 0.8, 1), ("zipf1.0", 1.0, 2), ("zipf1.2", 1.2, 3), ("uniform", 0.0, 4), ("loop+zipf", -1.0, 5)]


def synthetic_keys(alpha: float, seed: int, n: int = 60_000, universe: int = 8_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if alpha > 0:
        p = 1.0 / np.arange(1, universe + 1) ** alpha
        keys = rng.choice(universe, size=n, p=p / p.sum())
        return rng.permutation(universe)[keys].astype(np.uint64)
    if alpha == 0:
        return rng.integers(0, universe, size=n).astype(np.uint64)
    # a loop larger than most caches, interleaved with a skewed hot set
    loop = np.arange(n) % 3_000 + universe
    hot = synthetic_keys(0.9, seed + 100, n, universe)
    return np.where(rng.random(n) < 0.5, loop, hot).astype(np.uint64)


@pytest.mark.parametrize("name,alpha,seed", SYNTHETIC, ids=[s[0] for s in SYNTHETIC])
def test_synthetic_streams_agree(name: str, alpha: float, seed: int, tmp_path: pathlib.Path):
    keys_file = tmp_path / "stream.keys"
    np.savetxt(keys_file, synthetic_keys(alpha, seed), fmt="%d")
    assert compare(keys_file, tmp_path) == []
