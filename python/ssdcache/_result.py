"""One run's report as a Python object."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

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

    # The report's fields, for type checkers and editors (read through __getattr__).
    # Device fields (host_page_reads … execution_time_ns) exist with device=, queue
    # fields (queue_depth … max_host_wait_ns) with queue_depth=/iat_scale=,
    # cache_device fields with cache_device=.
    policy: str
    mode: str
    trace: str
    format: str
    cache_bytes: int
    page_bytes: int
    capacity_pages: int
    requests: int
    read_requests: int
    write_requests: int
    trim_requests: int
    request_hits: int
    read_bytes: int
    write_bytes: int
    pages: int
    read_pages: int
    write_pages: int
    trim_pages: int
    hits: int
    read_hits: int
    write_hits: int
    served_pages: int
    served_bytes: int
    write_hits_to_backing: int
    backing_reads: int
    backing_writes: int
    read_for_write: int
    padding_reads: int
    dirty_writebacks: int
    evictions: int
    cache_writes: int
    invalidations: int
    dirty_discarded: int
    read_replace_dirty: int
    read_overwrite_clean: int
    write_replace_dirty: int
    write_overwrite_clean: int
    read_hits_dram: int
    read_hits_nvram: int
    write_hits_dram: int
    write_hits_nvram: int
    migrations_to_nvram: int
    migrations_to_dram: int
    drain_writes: int
    maintenance_reads: int
    maintenance_writes: int
    maintenance_cache_writes: int
    maintenance_ns: int
    misses: int
    hit_ratio: float
    read_hit_ratio: float
    write_hit_ratio: float
    request_hit_ratio: float
    served_ratio: float
    served_bytes_ratio: float
    backing_accesses: int
    skipped: int
    write_share_mean: float | None  # ABM's P (paper 004): mean write-buffer share; None for other policies
    device: str
    host_page_reads: int
    host_page_writes: int
    extra_page_writes: int
    erases: int
    switch_merges: int
    partial_merges: int
    full_merges: int
    write_amplification: float
    out_of_range_pages: int
    read_time_ns: int
    write_time_ns: int
    extra_write_time_ns: int
    erase_time_ns: int
    physical_pages: int
    logical_pages: int
    unwritten_pages: int
    physical_per_logical: float
    unwritten_share: float
    physical_per_written: float
    precondition_page_writes: int
    precondition_host_page_writes: int
    precondition_write_amplification: float
    execution_time_ns: int
    queue_depth: int
    iat_scale: float
    all_at_once: bool
    completed_requests: int
    makespan_ns: int
    device_busy_ns: int
    utilization: float
    iops: float
    bandwidth_mb_s: float
    write_bandwidth_mb_s: float
    latency_mean_ns: float
    latency_p50_ns: int
    latency_p99_ns: int
    latency_max_ns: int
    avg_queue_length: float
    mean_host_wait_ns: float
    max_host_wait_ns: int
    cache_device: str
    cache_device_page_reads: int
    cache_device_page_writes: int
    cache_device_extra_page_writes: int
    cache_device_erases: int
    cache_device_time_ns: int

    def __init__(self, report: dict[str, Any]) -> None:
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

    def __reduce__(self) -> tuple[type[Result], tuple[dict[str, Any]]]:
        return (Result, (self._data,))

    def keys(self) -> list[str]:
        """The report's field names in report order (``series`` included when present)."""
        return list(self._data)

    def to_dict(self) -> dict[str, Any]:
        """Every field of the report, as ``ssdcache sim --json`` prints it (a deep copy)."""
        return copy.deepcopy(self._data)

    @property
    def series(self) -> pandas.DataFrame | None:
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
