"""Charts of a trace analysis (`ssdcache.plot.analysis`): one figure per analysis."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ._analysis import Analysis

__all__ = ["analysis", "save_analysis", "CHARTS"]

CHARTS = ("reuse_distance", "reuse_time", "popularity", "working_set", "rate", "sequentiality", "devices", "heatmap")


def _fig(panels: int = 1):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4), squeeze=False, layout="constrained")
    return fig, list(axes.flat)


def _hist(ax, frame, xlabel: str, scale: float = 1.0) -> None:
    """Shares per logarithmic bin as bars, the cumulative share as a line."""
    bins = frame[frame["hi"] > 0]
    if len(bins):
        lo, hi = bins["lo"] / scale, bins["hi"] / scale
        ax.bar(lo, bins["share"] * 100, width=hi - lo, align="edge", alpha=0.6, label="share")
        ax.step(hi, bins["cumulative"] * 100, where="pre", color="C3", label="cumulative")
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("% of reuses")
    ax.grid(True, alpha=0.3)
    ax.legend()


def _timeaxis(a: Analysis):
    t = a.timeline
    if t.attrs["axis"] == "time":
        return t["start"] / 1e9, "trace time (s)"
    return t["start"], "request"


def analysis(a: Analysis, title: str | None = None) -> dict[str, Figure]:
    """Draws every analysis of `a`; returns ``{name: Figure}`` with the names of
    :data:`CHARTS`."""
    import numpy as np

    name = title or os.path.basename(str(a.summary["trace"]))
    figs: dict[str, Any] = {}

    fig, (ax,) = _fig()
    _hist(ax, a.reuse_distance, "reuse distance (LRU stack distance, pages)")
    ax.set_title(f"{name}: reuse distance ({a.summary['footprint_pages']} first uses not shown)")
    figs["reuse_distance"] = fig

    fig, (ax1, ax2) = _fig(2)
    rt = a.reuse_time
    _hist(ax1, rt[rt["unit"] == "accesses"], "reuse time (page accesses)")
    _hist(ax2, rt[rt["unit"] == "ns"], "reuse time (s of trace time; 0 s not shown)", scale=1e9)
    fig.suptitle(f"{name}: reuse time")
    figs["reuse_time"] = fig

    fig, (ax,) = _fig()
    p = a.popularity
    if len(p):
        ranks = np.concatenate([[r0, r1] for r0, r1 in zip(p["first_rank"], p["last_rank"])])
        freqs = np.repeat(p["frequency"].to_numpy(), 2)
        ax.loglog(ranks, freqs, lw=1.5, label="pages")
        alpha = p.attrs.get("zipf_alpha")
        if alpha is not None:
            n = int(p["last_rank"].iloc[-1])
            mean_x = math.lgamma(n + 1) / n
            mean_y = float((p["pages"] * np.log(p["frequency"])).sum()) / n
            c = mean_y + alpha * mean_x  # the least-squares line passes through the means
            xs = np.array([1, n])
            ax.loglog(xs, np.exp(c) * xs ** -alpha, "--", color="C3",
                      label=f"Zipf α = {alpha:.3f} (R² {p.attrs['zipf_r2']:.3f})")
    ax.set_xlabel("rank")
    ax.set_ylabel("uses")
    ax.set_title(f"{name}: popularity")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend()
    figs["popularity"] = fig

    x, xlabel = _timeaxis(a)
    t = a.timeline
    fig, (ax,) = _fig()
    ax.plot(x, t["distinct_pages"], label="working set (distinct pages in the interval)")
    ax.plot(x, t["footprint_pages"], label="footprint (distinct pages so far)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pages")
    ax.set_title(f"{name}: working set")
    ax.grid(True, alpha=0.3)
    ax.legend()
    figs["working_set"] = fig

    fig, (ax1, ax2) = _fig(2)
    per_s = t.attrs["axis"] == "time"
    scale = 1e9 / t.attrs["interval"] if per_s else 1.0
    ax1.stackplot(x, t["reads"] * scale, t["writes"] * scale, t["trims"] * scale, labels=["reads", "writes", "trims"],
                  alpha=0.8)
    ax1.set_ylabel("requests per s" if per_s else "requests per interval")
    ax1.set_xlabel(xlabel)
    ax1.legend()
    ax2.plot(x, t["read_share"] * 100)
    ax2.set_ylabel("reads (% of requests)")
    ax2.set_xlabel(xlabel)
    ax2.set_ylim(0, 100)
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{name}: request rate and read/write mix")
    figs["rate"] = fig

    fig, (ax,) = _fig()
    s = a.sequentiality
    if len(s):
        ax.bar(s["lo"], s["count"], width=s["hi"] - s["lo"], align="edge", alpha=0.7)
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("run length (contiguous requests)")
    ax.set_ylabel("runs")
    share = 100 * s.attrs["sequential_requests"] / max(a.summary["requests"], 1)
    ax.set_title(f"{name}: sequential runs ({share:.1f}% of requests continue one)")
    ax.grid(True, alpha=0.3)
    figs["sequentiality"] = fig

    fig, (ax,) = _fig()
    d = a.devices.sort_values("requests", ascending=False).head(40)
    labels = [str(v) for v in d["dev"]]
    ax.bar(labels, d["reads"], label="reads")
    ax.bar(labels, d["writes"], bottom=d["reads"], label="writes")
    ax.bar(labels, d["trims"], bottom=d["reads"] + d["writes"], label="trims")
    ax.set_xlabel("device" + (" (the 40 busiest)" if len(a.devices) > 40 else ""))
    ax.set_ylabel("requests")
    ax.set_title(f"{name}: devices")
    ax.legend()
    figs["devices"] = fig

    fig, (ax,) = _fig()
    h = a.heatmap
    if h.size:
        from matplotlib.colors import LogNorm

        tscale = 1e9 if h.attrs["axis"] == "time" else 1.0
        extent = (0, h.shape[1] * h.attrs["interval"] / tscale, 0, h.shape[0] * h.attrs["pages_per_row"])
        img = ax.imshow(np.where(h.to_numpy() > 0, h.to_numpy(), np.nan), origin="lower", aspect="auto",
                        extent=extent, norm=LogNorm(), interpolation="nearest")
        fig.colorbar(img, ax=ax, label="page accesses")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("page (address / page size)")
    ax.set_title(f"{name}: LBA × time")
    figs["heatmap"] = fig
    return figs


def save_analysis(a: Analysis, directory: str, fmt: str = "png", dpi: int = 120) -> list[str]:
    """Writes one ``NAME.png``/``.svg`` per chart into `directory`; returns the paths."""
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    paths = []
    for chart, fig in analysis(a).items():
        path = os.path.join(directory, f"{chart}.{fmt}")
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        paths.append(path)
    return paths
