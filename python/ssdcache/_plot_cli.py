"""The plot command line: ``python -m ssdcache.plot KIND INPUT… -o OUT`` (and ``ssdcache
plot …``, which runs it): reads results with :func:`ssdcache.plot.read_results` and draws
them with the charts of :mod:`ssdcache.plot`.

Nothing on this path imports ``ssdcache._core``: the Rust CLI runs this in Python, and
Python need not load the Rust extension back to draw a chart (tests/python/test_plot.py
runs it with the extension blocked).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ._results_io import read_results
from .plot import device_cost_bars, miss_ratio_curve, normalised_bars, series

__all__ = ["main"]

_KINDS = {"curve": "miss/hit-ratio curves against cache size (Belady as the bound)",
          "mrc": "same as curve",
          "hrc": "hit-ratio curves (curve --metric hit_ratio)",
          "bars": "metrics normalised to a baseline policy (paper 004 Fig. 6)",
          "cost": "stacked write / extra write / erase device time (paper 004 Figs. 7-12)",
          "series": "per-interval lines (needs --json output of a run with --interval)",
          "analysis": "every chart of `ssdcache trace analyze --json` output, into the directory -o"}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ssdcache.plot KIND INPUT… -o OUT.png|.svg|.pdf``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m ssdcache.plot",
        description="Draw ssdcache results (the CSV of `ssdcache sim --csv`, the JSON lines of "
                    "`ssdcache sim --json`, or a saved sweep DataFrame) as PNG, SVG or PDF.",
        epilog="kinds: " + "; ".join(f"{k}: {v}" for k, v in _KINDS.items()))
    parser.add_argument("kind", choices=list(_KINDS), help="the chart")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="CSV or JSON-lines file(s); - for stdin")
    parser.add_argument("-o", "--output", required=True, help="output file: .png, .svg or .pdf")
    parser.add_argument("--metric", action="append", help="column(s) to plot (repeat for several)")
    parser.add_argument("--baseline", default="lru", help="bars: the policy to normalise to (default lru)")
    parser.add_argument("--read", action="store_true", help="cost: include read time")
    parser.add_argument("--linear", action="store_true", help="curve: linear x axis")
    parser.add_argument("--no-belady", action="store_true", help="curve: draw belady as an ordinary line")
    parser.add_argument("--x", default="interval", choices=["interval", "time"], help="series: x axis")
    parser.add_argument("--title", help="figure title")
    parser.add_argument("--dpi", type=int, default=120)
    parser.add_argument("--plot-format", default="png", choices=["png", "svg"], help="analysis: chart format")
    args = parser.parse_args(argv)
    if args.kind == "analysis":
        return _main_analysis(args)

    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        parser.error(f"output must end in .png, .svg or .pdf, not {args.output!r}")
    import matplotlib

    matplotlib.use("Agg")
    try:
        frames = [read_results(p) for p in args.inputs]
        df = frames[0]
        if len(frames) > 1:
            import pandas as pd

            series_attr = [s for f in frames for s in f.attrs.get("series", [None] * len(f))]
            df = pd.concat(frames, ignore_index=True)
            if any(s is not None for s in series_attr):
                df.attrs["series"] = [s or [] for s in series_attr]
        m = args.metric
        if args.kind in ("curve", "mrc", "hrc"):
            metric = (m or ["hit_ratio" if args.kind == "hrc" else "miss_ratio"])[0]
            fig = miss_ratio_curve(df, metric, belady=not args.no_belady, logx=not args.linear, title=args.title)
        elif args.kind == "bars":
            if m:
                fig = normalised_bars(df, args.baseline, m, title=args.title)
            else:  # the chart's default metrics, less those the data lacks
                fig = normalised_bars(df, args.baseline, title=args.title)
        elif args.kind == "cost":
            fig = device_cost_bars(df, m, read=args.read, title=args.title)
        else:
            if "series" not in df.attrs:
                raise ValueError("series needs the JSON lines of `ssdcache sim --json --interval …` "
                                 "(CSV output has no series)")
            if m:
                fig = series(df, m, x=args.x, title=args.title)
            else:  # the chart's default metrics
                fig = series(df, x=args.x, title=args.title)
        fig.savefig(args.output, dpi=args.dpi)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


def _main_analysis(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from ._analysis import Analysis
    from ._analyze_plot import save_analysis

    try:
        if len(args.inputs) != 1:
            raise ValueError("analysis takes one input: the JSON of `ssdcache trace analyze --json`")
        with (sys.stdin if args.inputs[0] == "-" else open(args.inputs[0], encoding="utf-8")) as f:
            report = json.load(f)
        if not isinstance(report, dict) or "timeline" not in report:
            raise ValueError(f"{args.inputs[0]}: not the JSON of `ssdcache trace analyze --json`")
        paths = save_analysis(Analysis(report), args.output, args.plot_format, args.dpi)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(paths))
    return 0
