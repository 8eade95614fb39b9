"""Object mode (`--unit object`) agrees with libCacheSim miss for miss and byte for byte.

libCacheSim (PyPI `libcachesim`, sizes not ignored) and `ssdcache sim --unit object` replay
the same objects at capacities from below the largest object (so some objects are too large
to cache: a miss in both) to half the footprint in bytes:

- the AdaptSize CDN sample (../shared/traces/adaptsize-cdn-sample): ours read in its own
  format (`webcachesim`, an object = an (id, size) pair), libCacheSim's from an oracleGeneral
  copy with one dense id per (id, size) pair;
- a synthetic oracleGeneral trace, Zipf keys with Pareto (heavy-tailed) sizes, that both read.

Byte misses are libCacheSim's byte miss ratio times the bytes requested (rounded: the ratio is a
double of a count below 2^53). Every policy here is libCacheSim's algorithm exactly:
LRU, FIFO, CLOCK (one-bit), SIEVE, S3-FIFO (libCacheSim's `S3FIFO`, whose departures from the
paper are listed in crates/core/src/policy/sized/s3fifo.rs) and GDSF (insert, then evict while
over capacity; crates/core/src/policy/sized/gdsf.rs).
"""

import json
import lzma
import pathlib

import libcachesim as lcs
import numpy as np
import pytest

from conftest import TRACES, TRACES_MISSING, have_traces, ssdcache

PEERS = {
    "lru": lcs.LRU,
    "fifo": lcs.FIFO,
    "clock": lcs.Clock,
    "sieve": lcs.Sieve,
    "s3fifo": lcs.S3FIFO,
    "gdsf": lcs.GDSF,
}
SHARES = (0.002, 0.01, 0.05, 0.2, 0.5)
CDN = TRACES / "adaptsize-cdn-sample" / "request.trace.xz"


def write_oracle_general(times, ids, sizes, path: pathlib.Path) -> None:
    rec = np.zeros(len(ids), dtype=[("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["time"], rec["id"], rec["size"], rec["next"] = times, ids, sizes, -1
    path.write_bytes(rec.tobytes())


def libcachesim_misses(policy: str, capacity: int, oracle: pathlib.Path, n: int, total_bytes: int):
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, byte_miss_ratio = PEERS[policy](capacity).process_trace(reader)
    return round(miss_ratio * n), round(byte_miss_ratio * total_bytes)


def compare(ours: pathlib.Path, fmt: str, oracle: pathlib.Path, footprint: int, largest: int) -> list[str]:
    caps = sorted({int(footprint * s) for s in SHARES} | {largest // 2})
    out = ssdcache("sim", "--json", "--unit", "object", "-t", ours, "-f", fmt,
                   "-p", ",".join(PEERS), "-c", ",".join(f"{c}B" for c in caps)).stdout
    reports = [json.loads(line) for line in out.splitlines()]
    assert len(reports) == len(PEERS) * len(caps)
    assert any(r["too_large"] > 0 for r in reports), "no capacity below the largest object"
    bad = []
    for r in reports:
        theirs = libcachesim_misses(r["policy"], r["cache_bytes"], oracle, r["requests"], r["bytes"])
        if (r["misses"], r["miss_bytes"]) != theirs:
            bad.append(f"{r['policy']} @ {r['cache_bytes']} B: ssdcache {(r['misses'], r['miss_bytes'])} "
                       f"libCacheSim {theirs}")
    return bad


@pytest.mark.skipif(not have_traces(), reason=TRACES_MISSING)
def test_cdn_sample_agrees(tmp_path: pathlib.Path):
    rows = np.loadtxt(lzma.open(CDN), dtype=np.int64, ndmin=2)
    objects: dict[tuple[int, int], int] = {}
    ids = np.array([objects.setdefault((int(i), int(s)), len(objects)) for i, s in rows[:, 1:3]], dtype=np.uint64)
    oracle = tmp_path / "cdn.oracleGeneral.bin"
    write_oracle_general(rows[:, 0], ids, rows[:, 2], oracle)
    footprint = sum(size for _, size in objects)
    assert compare(CDN, "webcachesim", oracle, footprint, int(rows[:, 2].max())) == []


def test_zipf_pareto_oracle_general_agrees(tmp_path: pathlib.Path):
    rng = np.random.default_rng(31)
    universe, n = 5_000, 60_000
    ranks = np.arange(1, universe + 1)
    popularity = ranks ** -0.9
    keys = rng.choice(universe, size=n, p=popularity / popularity.sum()).astype(np.uint64)
    # one size per object: Pareto (alpha 1.2) from 100 B, capped at 2 MB
    object_size = np.minimum((100 * (1 + rng.pareto(1.2, size=universe))).astype(np.int64), 2_000_000)
    sizes = object_size[keys.astype(np.int64)]
    oracle = tmp_path / "zipf.oracleGeneral.bin"
    write_oracle_general(np.arange(n) // 100, keys, sizes, oracle)
    footprint = int(object_size[np.unique(keys).astype(np.int64)].sum())
    assert compare(oracle, "oracle-general", oracle, footprint, int(sizes.max())) == []
