"""Miss-ratio curves: `mrc`, the exact LRU curve of a trace in one pass."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Sequence

from . import _core
from ._run import _size
from ._trace import Size, TraceLike, to_source

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["mrc"]


def mrc(trace: TraceLike, cache: Sequence[Size] | None = None, points: int = 20, page: Size = "4KiB",
        policy: str | Sequence[str] = "lru", sample: str | float | None = None, sample_keys: int | None = None,
        seed: int = 0) -> "pd.DataFrame":
    """The LRU miss-ratio curve of `trace`, exact, from one pass (stack distances):
    a row per cache size with page, read, write and request miss ratios and the
    dirty write-backs a write-back LRU cache of that size makes — the numbers
    `simulate(trace, "lru", cache=size)` gives, for every size at once.

    Sizes are `cache` (bytes or "64MiB" each), or else `points` sizes evenly
    spaced up to the trace's footprint. Only `policy="lru"` is exact in one pass.

    With `sample` (a rate: "1%", 0.01) or `sample_keys` (fixed-size SHARDS, lru
    only), the curve is estimated from a hashed sample of page keys, seeded by
    `seed`: SHARDS for "lru", miniature simulation (the real policy on the
    sample, caches scaled by the rate) for any other policy; `policy` may then
    name several ("arc,lirs" or a list). Columns `method` (exact, shards,
    miniature) and `sample_rate` say which.
    """
    import pandas as pd

    if not isinstance(policy, str):
        policy = ",".join(policy)
    if sample is not None or sample_keys is not None:
        return _sampled(pd, trace, cache, points, page, policy, sample, sample_keys, seed)
    if policy.strip().lower() != "lru":
        raise ValueError(f"policy {policy!r}: mrc computes exact curves for 'lru' only; for another policy "
                         "use sweep(trace, policy, cache=[...])")
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= 100_000:
        raise ValueError(f"points must be a whole number from 1 to 100000, not {points!r}")
    sizes: list[Any] | None = None
    if cache is not None:
        if isinstance(cache, (str, int)):
            cache = [cache]
        sizes = [_size("cache", c) for c in cache]
        if not sizes:
            raise ValueError("cache must name at least one size")
    try:
        text = _core.mrc(to_source(trace), _size("page", page), sizes, points)
    except (ValueError, RuntimeError):
        raise
    except (OSError, TypeError, OverflowError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e
    curve = json.loads(text)
    frame = pd.DataFrame(curve.pop("points"))
    for i, key in enumerate(("trace", "policy", "method", "sample_rate")):
        frame.insert(i, key, curve[key])
    # what the curve is of: requests, footprint, trims, skipped lines
    frame.attrs.update(curve)
    return frame


def _sampled(pd: Any, trace: TraceLike, cache: Sequence[Size] | None, points: int, page: Size, policy: str,
             sample: str | float | None, sample_keys: int | None, seed: int) -> "pd.DataFrame":
    """`mrc` with sampling: one frame, a block of rows per policy."""
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= 100_000:
        raise ValueError(f"points must be a whole number from 1 to 100000, not {points!r}")
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, (str, int, float))):
        raise ValueError(f"sample must be a rate like '1%' or 0.01, not {sample!r}")
    if sample_keys is not None and (isinstance(sample_keys, bool) or not isinstance(sample_keys, int)
                                    or sample_keys < 1):
        raise ValueError(f"sample_keys must be a whole number of keys of at least 1, not {sample_keys!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be a whole number from 0 to 2^64-1, not {seed!r}")
    sizes: list[Any] | None = None
    if cache is not None:
        if isinstance(cache, (str, int)):
            cache = [cache]
        sizes = [_size("cache", c) for c in cache]
        if not sizes:
            raise ValueError("cache must name at least one size")
    rate = None if sample is None else str(sample)
    try:
        text = _core.mrc(to_source(trace), _size("page", page), sizes, points, policy, rate, sample_keys, seed)
    except (ValueError, RuntimeError):
        raise
    except (OSError, TypeError, OverflowError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e
    frames = []
    attrs: dict[str, Any] = {}
    for curve in json.loads(text):
        frame = pd.DataFrame(curve.pop("points"))
        for i, key in enumerate(("trace", "policy", "method", "sample_rate")):
            frame.insert(i, key, curve[key])
        frames.append(frame)
        attrs = curve
    out = pd.concat(frames, ignore_index=True)
    # what the curves are of: requests, footprint (estimated), trims, skipped lines
    out.attrs.update({k: v for k, v in attrs.items() if k not in ("policy", "method")})
    return out
