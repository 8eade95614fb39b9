"""One run's report as a Python object."""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["Result"]


def _size(n: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


class Result:
    """The report of one simulation: every counter of ``ssdcache sim --json`` as an attribute.

    ``r.hit_ratio``, ``r.misses``, ``r.backing_reads``, ``r.backing_writes``,
    ``r.dirty_writebacks``, ``r.read_replace_dirty``, … always; with a device
    also ``r.host_page_writes``, ``r.erases``, ``r.execution_time_ns``, …; with a
    queue ``r.iops``, ``r.latency_p99_ns``, …. ``r.to_dict()`` gives them all
    (``r.keys()`` their names, in report order), ``r.series`` the per-interval
    series as a DataFrame when an interval was set (else ``None``): one row per
    interval that had requests, indexed by the interval's number (0 = the first
    request's); idle intervals have no row.

    Example
    -------
    >>> r = ssdcache.simulate("zipf(alpha=0.9,keys=10k,requests=100k)", policy="arc", cache="4MiB")
    >>> round(r.hit_ratio, 3), r.misses                  # doctest: +SKIP
    """

    __slots__ = ("_data",)

    def __init__(self, report: dict[str, Any]):
        if not isinstance(report, dict):
            raise TypeError(f"Result takes a report dict, not {type(report).__name__}")
        object.__setattr__(self, "_data", report)

    @classmethod
    def from_json(cls, text: str) -> "Result":
        """A Result from one JSON object as ``ssdcache sim --json`` prints it."""
        return cls(json.loads(text))

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        try:
            return data[name]
        except KeyError:
            raise AttributeError(
                f"this report has no field {name!r} (device fields need device=, queue fields queue_depth=; "
                f"see Result.keys())"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Result is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (Result, (self._data,))

    def keys(self) -> list[str]:
        """The report's field names in report order (``series`` included when present)."""
        return list(self._data)

    def to_dict(self) -> dict[str, Any]:
        """Every field of the report, as ``ssdcache sim --json`` prints it (a deep copy)."""
        return copy.deepcopy(self._data)

    @property
    def series(self):
        """The per-interval time series (``interval=``) as a pandas DataFrame, else None.

        Rows are the intervals that had requests, indexed by their number
        (``interval``: 0 is the first request's); idle intervals are left out.
        """
        rows = self._data.get("series")
        if not rows:
            return None
        import pandas as pd

        return pd.DataFrame.from_records(rows).set_index("interval")

    def __repr__(self) -> str:
        d = self._data
        parts = [f"policy={d.get('policy')!r}"]
        if d.get("mode") is not None:
            parts.append(f"mode={d['mode']!r}")
        if isinstance(d.get("cache_bytes"), int):
            parts.append(f"cache={_size(d['cache_bytes'])}")
        if d.get("trace") is not None:
            parts.append(f"trace={d['trace']!r}")
        if isinstance(d.get("hit_ratio"), float):
            parts.append(f"hit_ratio={d['hit_ratio']:.4f}")
        for key in ("misses", "backing_reads", "backing_writes", "execution_time_ns", "iops"):
            if key in d:
                v = d[key]
                parts.append(f"{key}={v:.6g}" if isinstance(v, float) else f"{key}={v}")
        return "Result(" + ", ".join(parts) + ")"
