"""Shared helpers for the reproduction experiments: run `ssdcache sim --json`,
write Markdown/CSV tables, draw charts.

Every experiment runs the release binary (built by scripts/reproduce.sh, or set
SSDCACHE_BIN) and writes into docs/reproductions/<paper>/, which
docs/REPRODUCTIONS.md shows next to the paper's numbers.
"""

import csv
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
SHARED = pathlib.Path(os.environ.get("SSDCACHE_SHARED", ROOT.parent / "shared"))
TRACES = SHARED / "traces"
OUT = ROOT / "docs" / "reproductions"


def trace(rel: str) -> str:
    """Path of a shared trace; exits with a clear message if it is missing."""
    p = TRACES / rel
    if not p.exists():
        sys.exit(f"missing trace {p} (the experiments read ../shared/traces; set SSDCACHE_SHARED)")
    return str(p)


def sim(*, policies, caches, page="4KiB", modes="write-back", device=None, trace_path=None, gen=None,
        extra=()):
    """Runs one `ssdcache sim` sweep; returns its reports (dicts)."""
    if not BIN.exists():
        sys.exit(f"{BIN} not built: run scripts/reproduce.sh, or cargo build --release")
    cmd = [str(BIN), "sim", "--json", "--policy", ",".join(policies), "--cache", ",".join(caches),
           "--page", page, "--mode", modes if isinstance(modes, str) else ",".join(modes)]
    if device:
        cmd += ["--device", device]
    if trace_path:
        cmd += ["--trace", trace_path]
    if gen:
        cmd += ["--gen", gen]
    cmd += list(extra)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


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
    try:
        import matplotlib
    except ImportError:
        sys.exit("matplotlib is missing: pip install -r experiments/requirements.txt")
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
