"""Sampled miss ratios: ssdcache's miniature simulation and SHARDS against
libCacheSim's spatial sampler (PyPI `libcachesim`, `SamplerType.SPATIAL_SAMPLER`).

Both keep an object when a hash of its id falls under the rate, and both run the
policy on the sampled stream with the cache scaled by the rate. The definitions
differ in three places, so the numbers agree statistically, not exactly:

- the hash: ours is SplitMix64's finalizer seeded by `--seed`, theirs is their
  own salted hash, so the two samples hold different keys;
- the estimate: libCacheSim reports the sampled stream's miss ratio; ours divides
  the sampled misses scaled by 1/R by the trace's true accesses (SHARDS-adj);
- the scaled size: both take `cache * rate` truncated; ours is at least one page.

So the test checks that both land near the full run (libCacheSim, no sampling)
and near each other. libCacheSim 0.3.5 also needs the `Sampler` object kept alive
while the reader uses it (a reader built from a temporary one crashes).
"""

import json
import pathlib

import libcachesim as lcs
import numpy as np
import pytest

from conftest import ssdcache
from test_libcachesim import write_oracle_general

RATE = 0.1
FRACTIONS = (0.05, 0.2, 0.5)
CASES = [("lru", lcs.LRU), ("arc(variant=libcachesim)", lcs.ARC), ("s3fifo(variant=libcachesim)", lcs.S3FIFO)]


def zipf_keys(n: int = 300_000, universe: int = 50_000, alpha: float = 0.9, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, universe + 1) ** alpha
    return rng.permutation(universe)[rng.choice(universe, size=n, p=p / p.sum())].astype(np.uint64)


def theirs(make, pages: int, oracle: pathlib.Path, rate: float | None) -> float:
    if rate is None:
        reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE)
        return make(pages).process_trace(reader)[0]
    sampler = lcs.libcachesim_python.Sampler(rate, lcs.SamplerType.SPATIAL_SAMPLER)
    params = lcs.ReaderInitParam()
    params.sampler = sampler
    reader = lcs.TraceReader(str(oracle), lcs.TraceType.ORACLE_GENERAL_TRACE, params)
    miss_ratio = make(max(1, int(pages * rate))).process_trace(reader)[0]
    del sampler  # (kept alive until here on purpose)
    return miss_ratio


@pytest.mark.parametrize("spec,make", CASES, ids=[c[0] for c in CASES])
def test_sampled_miss_ratios_agree_with_libcachesims_sampler(spec, make, tmp_path: pathlib.Path):
    keys = zipf_keys()
    keys_file = tmp_path / "stream.keys"
    np.savetxt(keys_file, keys, fmt="%d")
    oracle = tmp_path / "stream.oracleGeneral.bin"
    write_oracle_general(keys, oracle, 1)
    footprint = len(np.unique(keys))
    sizes = [int(f * footprint) for f in FRACTIONS]
    out = ssdcache("mrc", "--trace", keys_file, "--format", "keys", "--policy", spec, "--page", "4096B",
                   "--cache", ",".join(f"{s * 4096}B" for s in sizes), "--sample", f"{RATE:%}", "--seed", "1",
                   "--json").stdout
    (curve,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert curve["method"] == ("shards" if spec == "lru" else "miniature")
    assert curve["sample_rate"] == pytest.approx(RATE)
    for pages, point in zip(sizes, curve["points"]):
        full = theirs(make, pages, oracle, None)
        sampled = theirs(make, pages, oracle, RATE)
        ours = point["miss_ratio"]
        where = f"{spec} at {pages} pages: full {full:.4f}, libCacheSim sampled {sampled:.4f}, ours {ours:.4f}"
        assert abs(ours - full) < 0.03, where
        assert abs(sampled - full) < 0.05, where
        assert abs(ours - sampled) < 0.06, where
