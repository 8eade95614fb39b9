"""Charts of ssdcache results, in the style of the papers ssdcache reproduces.

- :func:`miss_ratio_curve` / :func:`hit_ratio_curve` — a ratio against cache
  size, one line per policy, Belady's optimum drawn as the bound when the data
  has ``belady`` rows.
- :func:`normalised_bars` — every policy's metrics divided by a baseline's
  (LRU), paper 004 Fig. 6 style: hit ratio and execution time side by side.
- :func:`device_cost_bars` — stacked write / extra write / erase time per
  policy (paper 004 Figs. 7–12).
- :func:`series` — per-interval lines of runs with ``interval=`` (paper 000
  style: throughput, latency, hit ratio per day).
- :func:`analysis` — a trace analysis (:func:`ssdcache.analyze`), one figure per chart.

Every function takes a sweep DataFrame (or Results, or report dicts as
``ssdcache sim --json`` prints them), draws one panel per trace (and per
cache size, mode, … where those vary), and returns the matplotlib Figure.

From the command line, on the output of ``ssdcache sim --csv`` / ``--json`` or a
saved sweep::

    python -m ssdcache.plot curve sweep.csv -o mrc.png
    python -m ssdcache.plot bars runs.jsonl -o fig6.svg --baseline lru --metric hit_ratio --metric execution_time_ns
    python -m ssdcache.plot cost runs.csv -o cost.png [--read]
    ssdcache sim --json --interval 1d ... | python -m ssdcache.plot series - -o days.png
    ssdcache trace analyze T --json > a.json; python -m ssdcache.plot analysis a.json -o DIR --plot-format svg
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union, cast

from ._results_io import as_frame, read_results

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ._result import Result

    # A sweep DataFrame, Results, or report dicts as `ssdcache sim --json` prints them.
    Runs = Union[pd.DataFrame, Result, Sequence[Result], Mapping[str, Any], Sequence[Mapping[str, Any]]]
    # `{run label: new label}` or a function, for legends.
    Labels = Union[Mapping[str, str], Callable[[str], str], None]

__all__ = [
    "miss_ratio_curve",
    "hit_ratio_curve",
    "normalised_bars",
    "device_cost_bars",
    "series",
    "analysis",
    "read_results",
    "main",
]

# Columns that tell runs apart, in the order labels and panel titles use them.
_RUN_KEYS = ("trace", "policy", "cache_bytes", "page_bytes", "mode", "device", "cache_device", "queue_depth",
             "iat_scale")
# Belady's MIN minimises misses: a bound for these, not for device cost.
_BOUNDED = ("miss_ratio", "hit_ratio", "misses", "hits")
_COST_PARTS = (("write_time_ns", "write"), ("extra_write_time_ns", "extra write"), ("erase_time_ns", "erase"))


# --- helpers -------------------------------------------------------------------------------

def _pd():
    import pandas as pd

    return pd


def _plt():
    import matplotlib.pyplot as plt

    return plt


def _fmt_bytes(n: float) -> str:
    n = float(n)
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        v = n / (1 << shift)
        if v >= 1:
            return f"{v:g}{unit}" if v == round(v, 2) else f"{v:.3g}{unit}"
    return f"{n:g}B"


def _short_trace(t: Any) -> str:
    t = str(t)
    return os.path.basename(t) if ("/" in t or os.sep in t) else t


def _cell(col: str, v: Any) -> str:
    if col in ("cache_bytes", "page_bytes") and isinstance(v, (int, float)) and not _isnan(v):
        return _fmt_bytes(v)
    if col == "trace":
        return _short_trace(v)
    if col == "queue_depth":
        return f"NCQ {v:g}" if isinstance(v, float) else f"NCQ {v}"
    if col == "iat_scale":
        return f"x{v:g}"
    if col == "page_bytes":
        return f"page {v}"
    return str(v)


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _varying(df, cols: Iterable[str]) -> list[str]:
    """The columns of `cols` whose value differs between runs. A mode that only
    follows the policy spec (``lru(mode=read-only)`` beside ``pwc``) is not a
    dimension of its own: the spec already names it."""
    out = [c for c in cols if c in df.columns and df[c].astype(str).nunique() > 1]
    if "mode" in out and "policy" in df.columns and df.groupby(df["policy"].astype(str))["mode"].nunique().max() == 1:
        if df["policy"].astype(str).str.contains("mode=", regex=False).any():
            out.remove("mode")
    return out


def _policy_name(spec: Any) -> str:
    return str(spec).split("(", 1)[0].strip().lower()


def _is_belady(spec: Any) -> bool:
    return _policy_name(spec) == "belady"


def _metric(df, name: str):
    """A column, or a miss ratio derived from its hit ratio."""
    if name in df.columns:
        return df[name].astype(float)
    if name.endswith("miss_ratio"):
        hit = name[: -len("miss_ratio")] + "hit_ratio"
        if hit in df.columns:
            return 1.0 - df[hit].astype(float)
    if name.endswith("_s") and name[:-2] + "_ns" in df.columns:
        return df[name[:-2] + "_ns"].astype(float) / 1e9
    hint = ""
    if name.endswith("time_ns") or name in ("erases", "host_page_writes", "extra_page_writes"):
        hint = " (device columns need a device: simulate/sweep with device=…)"
    elif name in ("iops", "avg_queue_length") or name.startswith("latency"):
        hint = " (queue columns need queue_depth=/iat_scale= and a device)"
    raise ValueError(f"no column {name!r} in the data{hint}")


def _axis_label(metric: str) -> str:
    return metric.replace("_ns", " (ns)").replace("_mb_s", " (MB/s)").replace("_", " ")


def _label_fn(labels: Any) -> Callable[[str], str]:
    if labels is None:
        return lambda s: s
    if callable(labels):
        return labels
    if isinstance(labels, Mapping):
        return lambda s: labels.get(s, s)
    raise ValueError("labels must be a dict {policy spec: label} or a function")


def _panels(df, inner: Sequence[str]) -> list[tuple[str, Any]]:
    """(title, rows) per panel: one per combination of the run keys that vary, except `inner`."""
    keys = _varying(df, [k for k in _RUN_KEYS if k not in inner])
    if not keys:
        return [("", df)]
    out = []
    for values, rows in df.groupby(keys, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        out.append((", ".join(_cell(k, v) for k, v in zip(keys, values)), rows))
    return out


def _grid(n: int, width: float, height: float, sharey: bool = False) -> tuple[Figure, list[Axes]]:
    plt = _plt()
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, sharey=sharey,
                             layout="constrained")
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _finish(fig: Figure, title: str | None) -> Figure:
    if title:
        import textwrap

        width = int(fig.get_figwidth() * 11)  # characters that fit at the default size
        fig.suptitle(textwrap.fill(title, max(width, 30)))
    return fig


def _legend(fig, axes: list) -> None:
    """One legend beside the panels when they all show the same lines, else one per panel."""
    entries = [a.get_legend_handles_labels() for a in axes]
    labels = [tuple(lab) for _, lab in entries]
    if not any(labels):
        return
    if len(axes) > 1 and len(set(labels)) == 1:
        handles, names = entries[0]
        try:
            fig.legend(handles, names, loc="outside right upper", fontsize=7)
        except ValueError:  # matplotlib < 3.7
            fig.legend(handles, names, loc="upper right", fontsize=7)
    else:
        for a in axes:
            if a.get_legend_handles_labels()[1]:
                a.legend(fontsize=7)


def _size_ticks(a, xs: Sequence[float]) -> None:
    """Ticks at the cache sizes of the data, at most 6 of them labelled."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    xs = sorted({float(v) for v in xs if v and v > 0})
    if not xs:
        return
    step = math.ceil(len(xs) / 6)
    labelled = xs[::step]
    a.xaxis.set_major_locator(FixedLocator(labelled))
    a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_bytes(v)))
    a.xaxis.set_minor_locator(FixedLocator([v for v in xs if v not in labelled]))
    a.xaxis.set_minor_formatter(NullFormatter())


# --- curves --------------------------------------------------------------------------------

def miss_ratio_curve(df: Runs, metric: str = "miss_ratio", *, x: str = "cache_bytes", belady: bool = True,
                     logx: bool = True, labels: Labels = None, title: str | None = None,
                     ax: Axes | None = None) -> Figure:
    """Miss-ratio curves: a metric against cache size, one line per policy, a panel per trace.

    Rows whose policy is ``belady`` are drawn as a dashed black line; for hit
    and miss ratios (and counts) it is the bound — the offline optimum — and
    the area beyond it is shaded: no policy can cross it. (For device cost
    Belady is no bound: it ignores dirtiness.)

    Parameters
    ----------
    df:
        A :func:`ssdcache.sweep` DataFrame (or Results / report dicts) with
        several cache sizes per policy.
    metric:
        Column to plot: ``"miss_ratio"`` (1 − hit ratio), ``"hit_ratio"``,
        ``"read_miss_ratio"``, ``"backing_accesses"``, ``"execution_time_ns"``, ….
    x:
        The x column, default ``"cache_bytes"`` (labelled in KiB/MiB/GiB).
    belady:
        Draw ``belady`` rows as the bound (else as an ordinary line).
    logx:
        Logarithmic (base 2) x axis.
    labels:
        ``{policy spec: label}`` or a function of the spec, for the legend.
    title:
        Figure title.
    ax:
        Draw into this Axes (all traces in one panel) instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Example
    -------
    >>> df = ssdcache.sweep(trace, ["lru", "arc", "lirs", "belady"], ["1MiB", "4MiB", "16MiB"])  # doctest: +SKIP
    >>> ssdcache.plot.miss_ratio_curve(df).savefig("mrc.png")                                 # doctest: +SKIP
    """
    df = as_frame(df)
    if x not in df.columns:
        raise ValueError(f"no column {x!r} in the data")
    values = _metric(df, metric)
    df = df.assign(_y=values.to_numpy())
    name = _label_fn(labels)
    inner = ["policy", x] + (["trace"] if ax is not None else [])
    panels = _panels(df, inner)
    if ax is not None:
        # the figure `ax` is drawn in (a SubFigure if `ax` is in one)
        fig, axes = cast("Figure", ax.figure), [ax] * len(panels)
    else:
        fig, axes = _grid(len(panels), 4.6, 3.4)
    line_keys = ["trace"] if ax is not None and _varying(df, ["trace"]) else []
    line_keys += ["policy"] + [k for k in _varying(df, _RUN_KEYS) if k not in ("trace", "policy", x)
                               and ax is not None]
    lower_is_better = "miss" in metric
    for (ptitle, rows), a in zip(panels, axes):
        for key, line in rows.groupby(line_keys, sort=False, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            spec = dict(zip(line_keys, key))["policy"]
            label = ", ".join(name(str(v)) if k == "policy" else _cell(k, v) for k, v in zip(line_keys, key))
            line = line.sort_values(x)
            if belady and _is_belady(spec):
                bound = metric in _BOUNDED
                a.plot(line[x], line["_y"], "k--", lw=1.4, zorder=3,
                       label=("Belady (optimal bound)" if label == "belady" else f"{label} (bound)") if bound else label)
                # shade what no policy can reach: below a miss bound, above a hit bound
                if bound and lower_is_better:
                    a.fill_between(line[x], 0, line["_y"], color="k", alpha=0.06, lw=0)
                elif bound:
                    top = 1.0 if metric.endswith("_ratio") else float(df["_y"].max()) * 1.05
                    a.fill_between(line[x], line["_y"], top, color="k", alpha=0.06, lw=0)
            else:
                drawn = a.plot(line[x], line["_y"], marker="o", ms=3.5, lw=1.2, label=label)
                if "current" in line.columns and line["current"].any():
                    # a live what-if (ssdcache.whatif): the cache as it runs now
                    now = line[line["current"].astype(bool)]
                    a.plot(now[x], now["_y"], marker="*", ms=13, ls="none", color=drawn[0].get_color(),
                           markeredgecolor="k", zorder=4, label=f"{label}: this cache now")
        if logx:
            a.set_xscale("log", base=2)
        if x.endswith("_bytes"):
            _size_ticks(a, rows[x])
            a.set_xlabel("cache size" if x == "cache_bytes" else _axis_label(x))
        else:
            if logx:
                from matplotlib.ticker import FuncFormatter

                a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            a.set_xlabel(_axis_label(x))
        a.set_ylabel(_axis_label(metric))
        if metric.endswith("_ratio"):
            a.set_ylim(bottom=0)
        a.grid(True, alpha=0.3)
        if ptitle:
            a.set_title(ptitle, fontsize=9)
    if ax is None:
        _legend(fig, axes)
        return _finish(fig, title)
    ax.legend(fontsize=7)
    return fig


def hit_ratio_curve(df: Runs, metric: str = "hit_ratio", *, x: str = "cache_bytes", belady: bool = True,
                    logx: bool = True, labels: Labels = None, title: str | None = None,
                    ax: Axes | None = None) -> Figure:
    """Hit-ratio curves against cache size, Belady as the upper bound; see :func:`miss_ratio_curve`.

    Example
    -------
    >>> ssdcache.plot.hit_ratio_curve(df, title="Financial1").savefig("hrc.svg")   # doctest: +SKIP
    """
    return miss_ratio_curve(df, metric, x=x, belady=belady, logx=logx, labels=labels, title=title, ax=ax)


# --- bars ----------------------------------------------------------------------------------

def _baseline_row(rows, baseline: str, where: str):
    exact = rows[rows["policy"].astype(str) == baseline]
    if len(exact) == 0:
        exact = rows[rows["policy"].map(_policy_name) == _policy_name(baseline)]
    if len(exact) == 0:
        raise ValueError(f"no {baseline!r} run{where} to normalise to: add it to the sweep or pick another baseline=")
    if len(exact) > 1:
        raise ValueError(f"several {baseline!r} runs{where}: give the exact spec as baseline=, e.g. {exact['policy'].iloc[0]!r}")
    return exact.iloc[0]


_BAR_METRICS = ("hit_ratio", "execution_time_ns")


def normalised_bars(df: Runs, baseline: str = "lru", metrics: Sequence[str] = _BAR_METRICS, *,
                    labels: Labels = None, title: str | None = None) -> Figure:
    """Bars of each policy's metrics divided by the baseline policy's (paper 004 Fig. 6 style).

    One panel per trace (and per cache size, mode, device, … where they vary);
    in each, one group of bars per policy, one bar per metric, and a line at 1.
    With the default metrics, hit ratio and execution time side by side show
    that a higher hit ratio need not mean a faster device.

    Parameters
    ----------
    df:
        A sweep DataFrame (or Results / report dicts) that includes the baseline policy.
    baseline:
        The policy to divide by: a spec as in the ``policy`` column, or its name.
    metrics:
        Columns to normalise. ``execution_time_ns`` needs runs with a device;
        with the default metrics, those missing are left out.
    labels:
        ``{policy spec: label}`` or a function of the spec, for the x axis.
    title:
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Example
    -------
    >>> df = ssdcache.sweep(trace, ["lru", "cflru", "fab", "clc", "arc"], "16MiB",
    ...                     devices="ftl(type=hybrid,nand=mlc1)")                 # doctest: +SKIP
    >>> ssdcache.plot.normalised_bars(df).savefig("fig6.png")                    # doctest: +SKIP
    """
    df = as_frame(df)
    default = metrics is _BAR_METRICS
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(metrics)
    if default:
        metrics = [m for m in metrics if m in df.columns]
    if not metrics:
        raise ValueError("no metrics to plot")
    for m in metrics:
        _metric(df, m)
    name = _label_fn(labels)
    panels = _panels(df, ["policy"])
    npol = max(rows["policy"].nunique() for _, rows in panels)
    fig, axes = _grid(len(panels), max(3.2, 0.22 * npol * (len(metrics) + 1) + 1.2), 3.6, sharey=True)
    width = 0.8 / len(metrics)
    for (ptitle, rows), a in zip(panels, axes):
        base = _baseline_row(rows, baseline, f" in {ptitle}" if ptitle else "")
        policies = list(dict.fromkeys(rows["policy"].astype(str)))
        for j, m in enumerate(metrics):
            col = _metric(rows, m)
            bv = float(_metric(rows.loc[[base.name]], m).iloc[0])
            ys = [float(col[rows["policy"].astype(str) == p].iloc[0]) / bv if bv else float("nan") for p in policies]
            xs = [i + (j - (len(metrics) - 1) / 2) * width for i in range(len(policies))]
            a.bar(xs, ys, width, label=_axis_label(m))
        a.axhline(1.0, color="k", lw=0.7)
        a.set_xticks(range(len(policies)))
        a.set_xticklabels([name(p) for p in policies], rotation=90 if len(policies) > 4 else 0, fontsize=7)
        if ptitle:
            a.set_title(ptitle, fontsize=9)
        a.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel(f"normalised to {name(str(base['policy']))}")
    _legend(fig, axes)
    return _finish(fig, title)


def device_cost_bars(df: Runs, parts: Sequence[str] | None = None, *, read: bool = False, labels: Labels = None,
                     title: str | None = None) -> Figure:
    """Stacked bars of device time per policy: write, extra (GC/merge) write and erase
    time (paper 004 Figs. 7–9); with ``read=True`` read time too (Figs. 10–12).

    Parameters
    ----------
    df:
        A sweep DataFrame (or Results / report dicts) of runs with a device.
    parts:
        Columns to stack instead (e.g. ``["host_page_writes", "extra_page_writes"]``).
        Time columns (``*_ns``) are shown in seconds.
    read:
        Put ``read_time_ns`` at the bottom of the default stack.
    labels:
        ``{policy spec: label}`` or a function of the spec, for the x axis.
    title:
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Example
    -------
    >>> ssdcache.plot.device_cost_bars(df, read=True).savefig("cost.png")       # doctest: +SKIP
    """
    df = as_frame(df)
    if parts is None:
        stack = list(_COST_PARTS)
        if read:
            stack.insert(0, ("read_time_ns", "read"))
    else:
        stack = [(p, p.replace("_time_ns", "").replace("_ns", "").replace("_", " ")) for p in parts]
    for col, _ in stack:
        if col not in df.columns:
            raise ValueError(f"no column {col!r} in the data: device costs need runs with a device "
                             "(simulate/sweep with device=…)")
    seconds = all(col.endswith("_ns") for col, _ in stack)
    name = _label_fn(labels)
    panels = _panels(df, ["policy"])
    npol = max(rows["policy"].nunique() for _, rows in panels)
    fig, axes = _grid(len(panels), max(3.2, 0.3 * npol + 1.2), 3.6)
    for (ptitle, rows), a in zip(panels, axes):
        policies = list(dict.fromkeys(rows["policy"].astype(str)))
        bottom = [0.0] * len(policies)
        for col, label in stack:
            vals = [float(rows.loc[rows["policy"].astype(str) == p, col].iloc[0]) / (1e9 if seconds else 1)
                    for p in policies]
            a.bar(range(len(policies)), vals, 0.7, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        a.set_xticks(range(len(policies)))
        a.set_xticklabels([name(p) for p in policies], rotation=90 if len(policies) > 4 else 0, fontsize=7)
        a.set_ylabel("device time (s)" if seconds else "count")
        if ptitle:
            a.set_title(ptitle, fontsize=9)
        a.grid(True, axis="y", alpha=0.3)
    _legend(fig, axes)
    return _finish(fig, title)


# --- series --------------------------------------------------------------------------------

def _series_runs(data: Any, name: Callable[[str], str]) -> list[tuple[str, list[dict]]]:
    """(label, intervals) per run."""
    pd = _pd()
    if isinstance(data, pd.DataFrame):
        if "series" in data.attrs:
            reports = [dict(r, series=s) for r, s in zip(data.to_dict("records"), data.attrs["series"])]
            return _series_runs(reports, name)
        if "start_ns" in data.columns:  # one run's series, e.g. Result.series (indexed by interval)
            if "interval" not in data.columns and data.index.name == "interval":
                data = data.reset_index()
            return [("", data.to_dict("records"))]
        raise ValueError("this DataFrame has no series: sweep or simulate with interval=…, "
                         "or read `ssdcache sim --json --interval …` output")
    if isinstance(data, Mapping) and "series" not in data and "policy" not in data:
        out = []
        for label, v in data.items():
            runs = _series_runs(v, lambda t: t)
            if len(runs) != 1:
                raise ValueError(f"{label!r}: expected one run")
            out.append((name(str(label)), runs[0][1]))
        return out
    if isinstance(data, Mapping) or (hasattr(data, "to_dict") and not isinstance(data, (list, tuple))):
        data = [data]
    reports = []
    for r in data:
        if hasattr(r, "to_dict") and not isinstance(r, Mapping):
            r = r.to_dict()
        if not isinstance(r, Mapping):
            raise ValueError(f"expected Results or report dicts, not {type(r).__name__}")
        if not r.get("series"):
            raise ValueError(f"run {r.get('policy')!r} has no series: simulate with interval=…")
        reports.append(dict(r))
    if not reports:
        raise ValueError("nothing to plot: no runs")
    df = as_frame([{k: v for k, v in r.items() if k != "series"} for r in reports])
    keys = _varying(df, _RUN_KEYS) or ["policy"]
    labels = [", ".join(name(str(row[k])) if k == "policy" else _cell(k, row[k]) for k in keys)
              for row in df.to_dict("records")]
    return list(zip(labels, [r["series"] for r in reports]))


def series(data: Runs | Mapping[str, Result], metrics: Sequence[str] = ("throughput_mb_s", "mean_latency_ns", "hit_ratio"),
           *, x: Literal["interval", "time"] = "interval", labels: Labels = None, title: str | None = None) -> Figure:
    """Per-interval lines, one panel per metric, one line per run (paper 000 style: days on x).

    Parameters
    ----------
    data:
        A :class:`ssdcache.Result` (or several, or a ``{label: Result}`` dict) of
        runs with ``interval=``; a sweep DataFrame made with ``interval=``; report
        dicts from ``ssdcache sim --json --interval …``; or one run's ``Result.series``.
    metrics:
        Interval fields: ``throughput_mb_s``, ``mean_latency_ns`` (shown in ms),
        ``hit_ratio``, ``read_hit_ratio`` (shown in %), ``requests``, ``hits``, …
    x:
        ``"interval"`` (1, 2, …: the interval's number + 1; intervals without
        requests have no point) or ``"time"`` (the interval's start, in hours or days).
    labels:
        ``{run label: new label}`` or a function, for the legend.
    title:
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Example
    -------
    >>> runs = {p: ssdcache.simulate("desktop(days=3)", policy=p, cache="2GiB", device="hdd",
    ...                              cache_device="ssd", interval="1d") for p in ("lru", "pwc")}  # doctest: +SKIP
    >>> ssdcache.plot.series(runs).savefig("days.png")                                            # doctest: +SKIP
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    if x not in ("interval", "time"):
        raise ValueError(f"x must be 'interval' or 'time', not {x!r}")
    name = _label_fn(labels)
    runs = _series_runs(data, name)
    fig, axes = _grid(len(metrics), 4.2, 3.2)
    span = max((b.get("start_ns", 0) for _, s in runs for b in s), default=0)
    day = 86_400e9
    tscale, tunit = (day, "days") if span >= 3 * day else (3_600e9, "hours")
    for m, a in zip(metrics, axes):
        for label, s in runs:
            if s and m not in s[0]:
                raise ValueError(f"no interval field {m!r}; fields: {', '.join(s[0])}")
            if x == "interval":
                # (series list only intervals with requests: each carries its number)
                xs = [b.get("interval", i) + 1 for i, b in enumerate(s)]
            else:
                xs = [b["start_ns"] / tscale for b in s]
            ys = [float(b[m]) for b in s]
            if m.endswith("_ns"):
                ys = [y / 1e6 for y in ys]
            elif m.endswith("_ratio"):
                ys = [100 * y for y in ys]
            a.plot(xs, ys, marker="o", ms=3.5, lw=1.2, label=label or None)
        unit = " (ms)" if m.endswith("_ns") else " (%)" if m.endswith("_ratio") else ""
        a.set_ylabel(m.removesuffix("_ns").replace("_mb_s", " (MB/s)").replace("_", " ") + unit)
        a.set_xlabel("interval" if x == "interval" else f"time ({tunit})")
        if x == "interval":
            from matplotlib.ticker import MaxNLocator

            a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.grid(True, alpha=0.3)
    _legend(fig, axes)
    return _finish(fig, title)


def analysis(a: Any, title: str | None = None) -> dict[str, Figure]:
    """Every chart of a trace analysis (an :class:`ssdcache.Analysis`): ``{name: Figure}``."""
    from ._analyze_plot import analysis as draw

    return draw(a, title)


# --- command line --------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ssdcache.plot KIND INPUT… -o OUT.png|.svg|.pdf``; returns the exit status.

    The command line lives in ``ssdcache._plot_cli``, which imports this module's charts;
    it is imported here only when called, so the two modules do not import each other.
    """
    from ._plot_cli import main as cli

    return cli(argv)


if __name__ == "__main__":
    sys.exit(main())
