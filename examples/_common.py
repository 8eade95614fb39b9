"""Shared bits of the examples: where the shared traces are, where charts go."""

import argparse
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))


def trace(rel: str) -> str:
    """Path of a trace in ../shared/traces (or $SSDCACHE_TRACES); exits with a clear message if missing."""
    p = TRACES / rel
    if not p.exists():
        sys.exit(f"missing trace {p}: the examples read ../shared/traces (set SSDCACHE_TRACES)")
    return str(p)


def args(doc: str, default_png: str) -> argparse.Namespace:
    """`-o OUT.png` (default: in the current directory) and `--no-progress`."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("-o", "--output", default=default_png, help=f"chart to write (default {default_png})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    return a
