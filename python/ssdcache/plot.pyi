"""Type stubs for ssdcache.plot: charts of sweeps and runs; each returns the matplotlib Figure."""

import io
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Union

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import Result

_Runs = Union[pd.DataFrame, Result, Sequence[Result], Mapping[str, Any], Sequence[Mapping[str, Any]]]
"""A sweep DataFrame, Results, or report dicts as `ssdcache sim --json` prints them."""

_Labels = Union[Mapping[str, str], Callable[[str], str], None]

def read_results(path: str | PathLike[str] | io.TextIOBase) -> pd.DataFrame:
    """_Runs from `ssdcache sim --csv` / `--json` output or a saved sweep; "-" reads stdin."""

def miss_ratio_curve(
    df: _Runs,
    metric: str = "miss_ratio",
    *,
    x: str = "cache_bytes",
    belady: bool = True,
    logx: bool = True,
    labels: _Labels = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A metric against cache size, one line per policy, Belady as the bound; a panel per trace."""

def hit_ratio_curve(
    df: _Runs,
    metric: str = "hit_ratio",
    *,
    x: str = "cache_bytes",
    belady: bool = True,
    logx: bool = True,
    labels: _Labels = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Hit-ratio curves against cache size, Belady as the upper bound."""

def normalised_bars(
    df: _Runs,
    baseline: str = "lru",
    metrics: Sequence[str] = ("hit_ratio", "execution_time_ns"),
    *,
    labels: _Labels = None,
    title: str | None = None,
) -> Figure:
    """Each policy's metrics divided by the baseline's (paper 004 Fig. 6 style)."""

def device_cost_bars(
    df: _Runs,
    parts: Sequence[str] | None = None,
    *,
    read: bool = False,
    labels: _Labels = None,
    title: str | None = None,
) -> Figure:
    """Stacked write / extra write / erase device time per policy (paper 004 Figs. 7-12)."""

def series(
    data: _Runs | Mapping[str, Result] | pd.DataFrame,
    metrics: Sequence[str] = ("throughput_mb_s", "mean_latency_ns", "hit_ratio"),
    *,
    x: Literal["interval", "time"] = "interval",
    labels: _Labels = None,
    title: str | None = None,
) -> Figure:
    """Per-interval lines, one panel per metric, one line per run (paper 000 style)."""

def main(argv: Sequence[str] | None = None) -> int:
    """`python -m ssdcache.plot KIND INPUT... -o OUT.png|.svg|.pdf`."""
