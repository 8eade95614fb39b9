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
        policy: str = "lru") -> "pd.DataFrame":
    """The LRU miss-ratio curve of `trace`, exact, from one pass (stack distances):
    a row per cache size with page, read, write and request miss ratios and the
    dirty write-backs a write-back LRU cache of that size makes — the numbers
    `simulate(trace, "lru", cache=size)` gives, for every size at once.

    Sizes are `cache` (bytes or "64MiB" each), or else `points` sizes evenly
    spaced up to the trace's footprint. Only `policy="lru"` is exact in one pass.
    """
    import pandas as pd

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
    for i, key in enumerate(("trace", "policy", "method")):
        frame.insert(i, key, curve[key])
    # what the curve is of: requests, footprint, trims, skipped lines
    frame.attrs.update(curve)
    return frame
