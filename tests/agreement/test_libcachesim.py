"""Miss counts of ssdcache's classic policies equal libCacheSim's on the same page stream.

libCacheSim (PyPI `libcachesim`) is the peer nobody here wrote. The page stream is
made once by ssdcache (`trace convert --to keys`: every page every request touches,
devices kept apart), written as libCacheSim's oracleGeneral binary with one object
per page (obj_size = 4096, cache_size = pages * 4096, unless a case says obj_size 1),
and replayed by both, at tiny (1, 3, 7 pages) to large (70 % of the footprint) caches.
Where definitions differ, ssdcache's default is the original paper's algorithm and
`variant=libcachesim` reproduces libCacheSim; each policy's source file lists the
differences. CASES holds the libCacheSim constructor each spec is compared with.
"""

import pathlib

import libcachesim as lcs
import numpy as np
import pytest
from libcachesim.cache import CacheBase, _create_common_params
from libcachesim.libcachesim_python import S3FIFOv0_init

from conftest import TRACES_MISSING, have_traces, shared_traces, sim_json, ssdcache


def s3fifo_v0(size: int):
    """libCacheSim's S3FIFOv0: the S3-FIFO of the SOSP'23 paper (its source says so)."""
    params = "small-size-ratio=0.1,ghost-size-ratio=0.9,move-to-main-threshold=2"
    return CacheBase(_cache=S3FIFOv0_init(_create_common_params(size), params))


PAGE = 4096
# (ssdcache spec, libCacheSim constructor taking a cache size in bytes, object size in the stream).
# Our defaults are the original papers' algorithms; variant=libcachesim reproduces
# libCacheSim's departures from them (each policy's source file lists them).
CASES = [
    ("lru", lcs.LRU, PAGE),
    ("fifo", lcs.FIFO, PAGE),
    ("clock", lcs.Clock, PAGE),
    ("lfu", lcs.LFU, PAGE),
    ("belady", lcs.Belady, PAGE),
    ("2q(variant=libcachesim)", lcs.TwoQ, PAGE),
    ("arc(variant=libcachesim)", lcs.ARC, PAGE),
    ("lirs(variant=libcachesim)", lcs.LIRS, PAGE),
    ("s3fifo(variant=libcachesim)", lcs.S3FIFO, PAGE),
    # defaults that libCacheSim also has: ARC on unit-size objects adapts by whole
    # objects as the paper does; S3FIFOv0 is the paper's S3-FIFO
    ("arc", lcs.ARC, 1),
    ("s3fifo", s3fifo_v0, PAGE),
    # admission in front of a rule: libCacheSim's bloomfilter admissioner caches an
    # object from its second miss on, as `bloom` does by default
    ("admit(by=bloom,rule=lru)", lambda size: lcs.LRU(size, admissioner=lcs.BloomFilterAdmissioner()), PAGE),
    ("admit(by=bloom,rule=fifo)", lambda size: lcs.FIFO(size, admissioner=lcs.BloomFilterAdmissioner()), PAGE),
    ("admit(by=bloom,rule=clock)", lambda size: lcs.Clock(size, admissioner=lcs.BloomFilterAdmissioner()), PAGE),
    # issue 17, part 1 (LFUDA and CAR: see test_reference_models.py)
    ("sieve", lcs.Sieve, PAGE),
    ("slru", lcs.SLRU, PAGE),
    ("lru-k", lcs.LRUK, PAGE),  # k=2: the paper's LRU-2 and libCacheSim's are one algorithm
    ("lru-k(k=3,variant=libcachesim)", lambda size: lcs.LRUK(size, k=3), PAGE),
    ("mq", lcs.MQ, PAGE),

    # issue 17 part 2 (libCacheSim's ClockPro is no peer: see clockpro.rs; LeCaR
    # draws from an unseedable generator: compared in distribution below)
    ("wtinylfu(variant=libcachesim)", lcs.WTinyLFU, PAGE),
]
# S3FIFOv0, like libCacheSim's S3FIFO, caches nothing when its small queue holds
# under one object (10 pages or fewer); the paper's algorithm, our default, caches
# at every size, so that pair is compared only above it.
MIN_PAGES = {"s3fifo": 11}
FRACTIONS = (0.005, 0.02, 0.1, 0.3, 0.7)
NO_NEXT_ACCESS = -1  # oracleGeneral's "never requested again"


def write_oracle_general(keys: np.ndarray, path: pathlib.Path, obj_size: int) -> None:
    """Records <u32 time, u64 id, u32 size, i64 next_access_vtime>; the next access
    at 0-based position j is stored as j + 1 (libCacheSim's traceConv convention)."""
    n = len(keys)
    nxt = np.full(n, NO_NEXT_ACCESS, dtype=np.int64)
    last = {}
    for i in range(n - 1, -1, -1):
        k = int(keys[i])
        nxt[i] = last.get(k, NO_NEXT_ACCESS)
        last[k] = i + 1
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")]))
    rec["t"] = np.arange(n, dtype=np.uint32)
    rec["id"] = keys
    rec["size"] = obj_size
    rec["next"] = nxt
    assert rec.dtype.itemsize == 24
    path.write_bytes(rec.tobytes())


def libcachesim_misses(make, pages: int, obj_size: int, oracle: pathlib.Path, n: int) -> int:
    cache = make(pages * obj_size)
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
    miss_ratio, _ = cache.process_trace(reader)
    return round(miss_ratio * n)


def compare(keys_file: pathlib.Path, tmp: pathlib.Path) -> list[str]:
    """Runs every case at five cache sizes; returns the disagreements."""
    keys = np.loadtxt(keys_file, dtype=np.uint64, ndmin=1)
    footprint = len(np.unique(keys))
    sizes = sorted({max(2, int(f * footprint)) for f in FRACTIONS} | {1, 3, 7})
    oracles = {}
    for obj_size in {c[2] for c in CASES}:
        oracles[obj_size] = tmp / f"stream.{obj_size}.oracleGeneral.bin"
        write_oracle_general(keys, oracles[obj_size], obj_size)
    reports = sim_json(
        "--trace", keys_file, "--format", "keys",
        "--policy", ",".join(c[0] for c in CASES), "--cache", ",".join(f"{s * PAGE}B" for s in sizes),
    )
    assert len(reports) == len(CASES) * len(sizes)
    peers = {spec: (make, obj_size) for spec, make, obj_size in CASES}
    mismatches = []
    for r in reports:
        assert r["pages"] == len(keys)
        if r["capacity_pages"] < MIN_PAGES.get(r["policy"], 1):
            continue
        make, obj_size = peers[r["policy"]]
        theirs = libcachesim_misses(make, r["capacity_pages"], obj_size, oracles[obj_size], len(keys))
        if r["misses"] != theirs:
            mismatches.append(f"{r['policy']} @ {r['capacity_pages']} pages: ssdcache {r['misses']} libCacheSim {theirs}")
    return mismatches


REAL = ([pytest.param(p, id=p.name) for p in shared_traces()] if have_traces()
        else [pytest.param(None, id="no-traces", marks=pytest.mark.skip(reason=TRACES_MISSING))])


@pytest.mark.parametrize("trace", REAL)
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


@pytest.mark.parametrize("p", [0.02, 0.1])
def test_probabilistic_admission_agrees_in_distribution(p: float, tmp_path: pathlib.Path):
    """libCacheSim's prob admissioner draws from a generator we cannot seed alike, so
    the miss ratios are compared as distributions: ours over 10 seeds, theirs over 10
    runs; the means must agree within 4 standard errors of their difference."""
    keys = synthetic_keys(0.8, 1)
    keys_file = tmp_path / "stream.keys"
    np.savetxt(keys_file, keys, fmt="%d")
    oracle = tmp_path / "stream.oracleGeneral.bin"
    write_oracle_general(keys, oracle, PAGE)
    pages, runs = int(0.3 * len(np.unique(keys))), 10
    make = lambda size: lcs.LRU(size, admissioner=lcs.ProbAdmissioner(p))  # noqa: E731
    theirs = np.array([libcachesim_misses(make, pages, PAGE, oracle, len(keys)) for _ in range(runs)]) / len(keys)
    specs = ",".join(f"admit(by=prob(p={p},seed={s}),rule=lru)" for s in range(1, runs + 1)) + ",lru"
    reports = sim_json("--trace", keys_file, "--format", "keys", "--policy", specs, "--cache", f"{pages * PAGE}B")
    ratios = {r["policy"]: r["misses"] / r["pages"] for r in reports}
    plain = ratios.pop("lru")
    ours = np.array(list(ratios.values()))
    stderr = np.sqrt(ours.var(ddof=1) / runs + theirs.var(ddof=1) / runs)
    assert abs(ours.mean() - theirs.mean()) < max(4 * stderr, 0.002), (ours.mean(), theirs.mean(), stderr)
    assert abs(ours.mean() - plain) > 0.05, "admission changed nothing: the comparison would prove nothing"


# issue 17 part 2: LeCaR. libCacheSim draws from a process-global generator that
# cannot be seeded (two runs in one process differ), so miss counts cannot match
# run for run. Our mean over 10 seeds must be within LECAR_TOLERANCE of
# libCacheSim's mean over 3 runs; LRU and LFU, its two experts, are further off
# than that on these streams (checked below, so the test can fail).
LECAR_SEEDS = 10
LECAR_TOLERANCE = 0.003  # of the requests; measured differences are under 0.16 %


@pytest.mark.parametrize("name,alpha,seed", SYNTHETIC[:3] + SYNTHETIC[4:], ids=[s[0] for s in SYNTHETIC[:3] + SYNTHETIC[4:]])
def test_lecar_miss_distribution_agrees(name: str, alpha: float, seed: int, tmp_path: pathlib.Path):
    keys = synthetic_keys(alpha, seed, n=30_000)
    keys_file = tmp_path / "stream.keys"
    np.savetxt(keys_file, keys, fmt="%d")
    oracle = tmp_path / "stream.oracleGeneral.bin"
    write_oracle_general(keys, oracle, PAGE)
    pages = max(7, int(0.05 * len(np.unique(keys))))
    specs = ",".join(f"lecar(variant=libcachesim,seed={s})" for s in range(LECAR_SEEDS))
    reports = sim_json("--trace", keys_file, "--format", "keys", "--policy", specs, "--cache", f"{pages * PAGE}B")
    ours = np.mean([r["misses"] for r in reports])
    theirs = np.mean([libcachesim_misses(lcs.LeCaR, pages, PAGE, oracle, len(keys)) for _ in range(3)])
    tolerance = LECAR_TOLERANCE * len(keys)
    assert abs(ours - theirs) <= tolerance, f"LeCaR @ {pages} pages: ssdcache mean {ours} libCacheSim mean {theirs}"
    for expert in (lcs.LRU, lcs.LFU):
        other = libcachesim_misses(expert, pages, PAGE, oracle, len(keys))
        assert abs(other - theirs) > tolerance, f"{expert.__name__} is as close as LeCaR: the test cannot tell them apart"
