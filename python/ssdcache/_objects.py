"""Object mode (``unit="object"``): caches of variable-size objects. A request is
a key with a size in bytes, the capacity is in bytes, and reports give the
object and the byte miss ratio. ``simulate``, ``sweep`` and ``mrc`` call here
when given ``unit="object"``; the numbers are ``ssdcache sim|mrc --unit object``'s."""

from __future__ import annotations

import concurrent.futures
import json
import os
from typing import TYPE_CHECKING, Any, Sequence

from . import _core
from ._result import Result
from ._run import _size, _text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_unit", "refuse_page_options", "simulate_objects", "sweep_objects", "mrc_objects"]

UNITS = ("page", "object")


def check_unit(unit: Any) -> bool:
    """Whether `unit` asks for object mode; a ValueError for anything but "page" or "object"."""
    if unit not in UNITS:
        raise ValueError(f"unit must be 'page' or 'object', not {unit!r}")
    return unit == "object"


def refuse_page_options(given: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Page-mode options mean nothing for objects: refused, not ignored."""
    for name, value in given.items():
        if value != defaults.get(name):
            raise ValueError(f"{name}={value!r} is not supported with unit='object' "
                             "(objects are cached whole, reads and writes alike)")


def _call(f: Any, *args: Any) -> str:
    try:
        return f(*args)
    except (ValueError, RuntimeError):
        raise
    except (OSError, TypeError, OverflowError) as e:  # defensive: the contract says ValueError
        raise ValueError(str(e)) from e


def simulate_objects(source: Any, policy: Any, cache: Any) -> Result:
    """One object-mode run: `policy` a size-aware spec, `cache` bytes, "64MiB" or "5%"."""
    text = _call(_core.run_objects, source, _text("policy", policy, "lru or gdsf"), _size("cache", cache))
    return Result(json.loads(text))


def sweep_objects(sources: list[Any], policies: Sequence[str], caches: Sequence[Any],
                  jobs: int | None) -> "pd.DataFrame":
    """Every trace × policy × cache in object mode, on local threads (runs release the GIL)."""
    from ._results_io import frame

    cells = [(s, _text("policy", p, "lru or gdsf"), _size("cache", c)) for s in sources for p in policies
             for c in caches]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        texts = list(pool.map(lambda cell: _call(_core.run_objects, *cell), cells))
    return frame([json.loads(t) for t in texts])


def mrc_objects(sources: list[Any], sizes: list[Any] | None, points: int, policy: str,
                sample: str | None, seed: int) -> "pd.DataFrame":
    """Object-mode curves: exact byte-LRU, or miniature curves of size-aware policies with `sample`."""
    import pandas as pd

    frames, curves = [], []
    for source in sources:
        for curve in json.loads(_call(_core.mrc_objects, source, sizes, points, policy, sample, seed)):
            frame = pd.DataFrame(curve.pop("points"))
            for i, key in enumerate(("trace", "policy", "method", "sample_rate")):
                frame.insert(i, key, curve[key])
            frames.append(frame)
            curves.append(curve)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(curves) > 1:
        out.attrs["curves"] = curves
    else:
        out.attrs.update(curves[0])
    return out
