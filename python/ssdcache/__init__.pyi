"""Type stubs for ssdcache: the API `simulate`, `sweep`, `load`, `Result`, `Trace`."""

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Union

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from . import plot as plot

__version__: str

_ArrayTrace = Union[
    Mapping[str, Union[ArrayLike, str]],
    tuple[ArrayLike, ArrayLike],
    tuple[ArrayLike, ArrayLike, ArrayLike],
    tuple[ArrayLike, ArrayLike, ArrayLike, ArrayLike],
    pd.DataFrame,
]
"""{"pages": …, "ops": …, "sizes"?: …, "times"?: …} or (pages, ops[, sizes[, times]])."""

_TraceLike = Union[str, PathLike[str], "Trace", _ArrayTrace]
"""A file path, a generator spec, a loaded Trace, or numpy arrays."""

_Size = Union[int, str]
"""Bytes, or a size with a unit: "64MiB", "4KiB", "1GB"."""

_Mode = Literal["write-back", "write-through", "write-around", "write-only", "read-only"]

class Trace:
    """A trace parsed once into memory (see `load`)."""

    def __init__(self, trace: Any, source: dict[str, Any] | None) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def requests(self) -> int: ...
    @property
    def unit(self) -> Literal["bytes", "pages"]: ...
    @property
    def skipped(self) -> int: ...
    @property
    def source(self) -> dict[str, Any] | None: ...
    def __len__(self) -> int: ...

class Result:
    """One run's report: every counter of `ssdcache sim --json` as an attribute.

    Device fields (host_page_writes … execution_time_ns) exist with device=,
    queue fields (queue_depth … max_host_wait_ns) with queue_depth=/iat_scale=,
    cache_device fields with cache_device=.
    """

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
    backing_accesses: int
    skipped: int
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

    def __init__(self, report: dict[str, Any]) -> None: ...
    @classmethod
    def from_json(cls, text: str) -> Result: ...
    @property
    def series(self) -> pd.DataFrame | None:
        """Per-interval series (interval=) as a DataFrame indexed by interval number
        (intervals with requests only), else None."""
    def keys(self) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __getitem__(self, key: str) -> Any: ...
    def __contains__(self, key: str) -> bool: ...
    def __getattr__(self, name: str) -> Any: ...

def simulate(
    trace: _TraceLike,
    policy: str = "lru",
    cache: _Size = "64MiB",
    page: _Size = "4KiB",
    mode: _Mode | str = "write-back",
    device: str | None = None,
    cache_device: str | None = None,
    interval: str | int | None = None,
    queue_depth: int | None = None,
    iat_scale: float | None = None,
    repeat: int = 1,
) -> Result:
    """Runs one simulation; returns its report (the numbers of `ssdcache sim --json`)."""

def sweep(
    traces: _TraceLike | Sequence[_TraceLike],
    policies: str | Sequence[str],
    caches: _Size | Sequence[_Size],
    pages: _Size | Sequence[_Size] = "4KiB",
    modes: str | Sequence[str] = "write-back",
    devices: str | None | Sequence[str | None] = None,
    *,
    executor: Literal["local", "ray"] = "local",
    jobs: int | None = None,
    progress: bool = True,
    cache_device: str | None = ...,
    interval: str | int | None = ...,
    queue_depth: int | Sequence[int] | None = ...,
    iat_scale: float | Sequence[float] | None = ...,
    repeat: int = ...,
) -> pd.DataFrame:
    """Every combination of traces x policies x caches x pages x modes x devices; one row per run."""

def load(
    trace: _TraceLike,
    *,
    format: str = "auto",
    skip_bad: bool = False,
    csv_columns: str | None = None,
    name: str | None = None,
) -> Trace:
    """Parses a trace once into memory."""

def policies() -> list[dict[str, Any]]:
    """Every policy: {"name", "about", "params": [{"name", "default", "about"}]}."""

def devices() -> list[dict[str, Any]]:
    """Every device model: {"name", "about", "params": [...]}."""

def generators() -> list[dict[str, Any]]:
    """Every workload generator: {"name", "about", "params": [...]}, as policies()."""

def modes() -> list[str]:
    """The cache write modes."""
