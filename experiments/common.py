"""Shared helpers for the reproduction experiments: traces, tables, charts.

The experiments run their simulations the way a user of the Python package
would: ``ssdcache.sweep`` (the ``ssdcache._core`` extension, the same engine
and numbers as ``ssdcache sim``) and draw with ``ssdcache.plot`` where it has
the chart. ``scripts/repro/reproduce.sh`` installs the package (``pip install .``)
and writes into docs/reproductions/<paper>/, which docs/REPRODUCTIONS.md shows
next to the paper's numbers.

The one direct use of the CLI binary is ``trace_info`` (``ssdcache trace info
--json``): a trace's footprint and duration size the caches and PWC's period,
and neither ``ssdcache.load`` nor ``ssdcache.sweep`` reports them.
"""

import csv
import json
import math
import os
import pathlib
import subprocess
import sys

try:
    import ssdcache
except ImportError:
    sys.exit("the ssdcache Python package is missing: pip install . (scripts/repro/reproduce.sh does)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))
OUT = ROOT / "docs" / "reproductions"


def trace(rel: str) -> str:
    """Path of a shared trace; exits with a clear message if it is missing."""
    p = TRACES / rel
    if not p.exists():
        sys.exit(f"missing trace {p} (the experiments read ../shared/traces; set SSDCACHE_TRACES)")
    return str(p)


def sweep(traces, policies, caches, **kwargs):
    """``ssdcache.sweep`` without a progress bar (the scripts print their tables)."""
    return ssdcache.sweep(traces, policies, caches, progress=False, **kwargs)


def reports(df) -> list[dict]:
    """A sweep's rows as the report dicts ``ssdcache sim --json`` prints: plain Python
    numbers, the fields a run does not have left out, its series (``interval=``) under
    ``"series"``."""
    series = df.attrs.get("series")
    out = []
    for i, row in enumerate(df.to_dict("records")):
        r = {k: v for k, v in row.items() if not (v is None or (isinstance(v, float) and math.isnan(v)))}
        if series is not None:
            r["series"] = series[i]
        out.append(r)
    return out


def trace_info(what: list[str]) -> dict:
    """``ssdcache trace info --json`` of a trace file (``[path]``) or a generator (``["--gen", spec]``)."""
    if not BIN.exists():
        sys.exit(f"{BIN} not built: run scripts/repro/reproduce.sh, or cargo build --release -p ssdcache-cli")
    out = subprocess.run([str(BIN), "trace", "info", *what, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def outdir(name: str) -> pathlib.Path:
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def write_csv(path: pathlib.Path, rows: list[dict]):
    if not rows:
        return
    keys = list(rows[0].keys())
    for r in rows[1:]:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def markdown(header: list[str], rows: list[list]) -> str:
    """A Markdown table; numbers right-aligned."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:,.2f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def pyplot():
    """matplotlib with a file-only backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"figure.dpi": 110, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3})
    return plt


def grouped_bars(ax, groups: list[str], series: dict[str, list[float]], ylabel: str):
    """Bars per group, one colour per series."""
    n = len(series)
    width = 0.8 / max(n, 1)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
