"""The trace analyzer: `analyze`, what a workload is, in one pass, as DataFrames."""

from __future__ import annotations

import json
from typing import Any

from . import _core
from ._analysis import Analysis
from ._run import _size
from ._trace import Size, TraceLike, to_source

__all__ = ["analyze", "Analysis"]

_TRACE_OPTIONS = ("format", "skip_bad", "csv_columns", "name")


def analyze(trace: TraceLike, page: Size = "4KiB", interval: str | int = "auto", log_base: float = 2.0,
            **trace_options: Any) -> Analysis:
    """Analyzes `trace` in one streaming pass, as ``ssdcache trace analyze`` does:
    reuse distance and reuse time, popularity (with a fitted Zipf α), working set
    and footprint, read/write mix and request rate over time, sequential runs,
    devices, and an LBA × time heatmap — an :class:`Analysis` of DataFrames.

    `interval` is ``"auto"``, a duration of trace time (``"60s"``, or ns as an
    int) or a request count (``"1Mreq"``); a fixed width may make at most 65,536
    intervals and must be below 2**63. `log_base` is the reuse histograms' bin
    base (libCacheSim's analyzer uses 1.5), at least 1.000678 (65,536 bins).
    `trace_options` are the reader's: ``format=``, ``skip_bad=``, ``csv_columns=``.
    """
    unknown = set(trace_options) - set(_TRACE_OPTIONS)
    if unknown:
        raise ValueError(f"unknown trace option(s) {', '.join(sorted(unknown))}; analyze takes "
                         f"{', '.join(_TRACE_OPTIONS)}")
    if isinstance(interval, bool) or not isinstance(interval, (str, int)):
        raise ValueError(f"interval must be 'auto', a duration such as '60s' or a count such as '1Mreq', not {interval!r}")
    if isinstance(interval, int):
        if interval <= 0:
            raise ValueError(f"interval must be longer than 0, not {interval}")
        interval = f"{interval}ns"
    if isinstance(log_base, bool) or not isinstance(log_base, (int, float)):
        raise ValueError(f"log_base must be a number above 1, not {log_base!r}")
    try:
        base = float(log_base)
    except OverflowError:  # an int past float's range
        raise ValueError("log_base is past a float's range: give a number above 1, at most 1e6") from None
    text = _core.analyze(to_source(trace, **trace_options), _size("page", page), interval, base)
    return Analysis(json.loads(text))
