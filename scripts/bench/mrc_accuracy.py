#!/usr/bin/env python3
"""Sampled miss-ratio curves against full simulation: the MAE table of docs/mrc.md.

For every trace in the traces directory (SSDCACHE_TRACES, default
../shared/traces) and a few large synthetic traces, it takes 10 cache sizes
evenly spaced up to the footprint (from the exact LRU curve), runs `ssdcache
sim` at each size for every policy, then `ssdcache mrc --sample R` at the same
sizes for R in 0.1 %, 1 %, 10 %, and reports the mean absolute error of the
page miss ratio over the sizes. One command:

    python3 scripts/bench/mrc_accuracy.py            # writes the table into docs/mrc.md
    python3 scripts/bench/mrc_accuracy.py --quick    # real traces only, to stdout

The binary is $CARGO_TARGET_DIR/release/ssdcache (or --bin).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ["lru", "arc", "lirs", "s3fifo", "2q", "cflru", "lru(mode=write-through)", "clc"]
RATES = ["0.1%", "1%", "10%"]
SYNTHETIC = ["zipf(alpha=0.9,keys=2M,requests=10M,read=70%,seed=7)"]
POINTS = 10
# sizes on the synthetic traces (each is a full `sim` per policy: 10 M requests)
SYNTHETIC_POINTS = 5
MARK_BEGIN = "<!-- mrc_accuracy: begin -->"
MARK_END = "<!-- mrc_accuracy: end -->"


def run(binary: str, args: list[str]) -> list[dict]:
    out = subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def source_args(trace: str) -> list[str]:
    return ["--gen", trace] if "(" in trace else ["--trace", trace]


def measure(binary: str, trace: str, seed: int) -> tuple[dict, dict]:
    src = source_args(trace)
    points = SYNTHETIC_POINTS if "(" in trace else POINTS
    exact = run(binary, ["mrc", *src, "--points", str(points), "--json"])[0]
    sizes = [p["cache_bytes"] for p in exact["points"]]
    caches = ",".join(str(s) for s in sizes)
    full: dict[tuple[str, int], float] = {}
    t = time.monotonic()
    for policy in POLICIES:
        for r in run(binary, ["sim", *src, "--policy", policy, "--cache", caches, "--json"]):
            full[(policy, r["cache_bytes"])] = r["misses"] / r["pages"] if r["pages"] else 0.0
    sim_s = time.monotonic() - t
    maes: dict[tuple[str, str], float] = {}
    mrc_s: dict[str, float] = {}
    for rate in RATES:
        t = time.monotonic()
        curves = run(binary, ["mrc", *src, "--policy", ",".join(POLICIES), "--cache", caches, "--sample", rate,
                              "--seed", str(seed), "--json"])
        mrc_s[rate] = time.monotonic() - t
        for policy, curve in zip(POLICIES, curves):
            errs = [abs(p["miss_ratio"] - full[(policy, p["cache_bytes"])]) for p in curve["points"]]
            maes[(policy, rate)] = sum(errs) / len(errs)
    info = {"requests": exact["requests"], "pages": exact["read_pages"] + exact["write_pages"],
            "footprint": exact["footprint_pages"], "sim_s": sim_s, "mrc_s": mrc_s, "points": points}
    return info, maes


def table(results: list[tuple[str, dict, dict]]) -> str:
    lines = ["| trace | requests | footprint (pages) | sizes | policy | " + " | ".join(f"MAE @ {r}" for r in RATES) + " |",
             "|---|---:|---:|---:|---|" + "---:|" * len(RATES)]
    for trace, info, maes in results:
        name = trace if "(" in trace else os.path.relpath(trace, os.environ.get("SSDCACHE_TRACES", trace))
        for i, policy in enumerate(POLICIES):
            head = (f"| `{name}` | {info['requests']:,} | {info['footprint']:,} | {info['points']} |" if i == 0
                    else "| | | | |")
            cells = " | ".join(f"{maes[(policy, r)]:.4f}" for r in RATES)
            lines.append(f"{head} `{policy}` | {cells} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"),
                                                  "release", "ssdcache"))
    ap.add_argument("--traces", default=os.environ.get("SSDCACHE_TRACES", str(ROOT.parent / "shared" / "traces")))
    ap.add_argument("--out", default=str(ROOT / "docs" / "mrc.md"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="real traces only; print, do not write --out")
    args = ap.parse_args()
    os.environ["SSDCACHE_TRACES"] = args.traces
    traces = sorted(str(p) for p in Path(args.traces).glob("*/*") if p.name not in ("SOURCE.txt", "README.md"))
    if not args.quick:
        traces += SYNTHETIC
    results = []
    for trace in traces:
        info, maes = measure(args.bin, trace, args.seed)
        print(f"{trace}: {info['requests']} requests, footprint {info['footprint']}; sim {info['sim_s']:.1f}s, "
              f"mrc {', '.join(f'{r} {s:.1f}s' for r, s in info['mrc_s'].items())}", file=sys.stderr)
        results.append((trace, info, maes))
    text = table(results)
    if args.quick:
        print(text)
        return 0
    doc = Path(args.out).read_text()
    if MARK_BEGIN not in doc or MARK_END not in doc:
        print(f"{args.out}: no {MARK_BEGIN} … {MARK_END} markers to write the table between", file=sys.stderr)
        return 2
    head, rest = doc.split(MARK_BEGIN, 1)
    _, tail = rest.split(MARK_END, 1)
    cmd = "python3 scripts/bench/mrc_accuracy.py"
    Path(args.out).write_text(f"{head}{MARK_BEGIN}\n_Made by `{cmd}` (seed {args.seed}; sizes evenly spaced "
                              f"up to each footprint)._\n\n{text}\n{MARK_END}{tail}")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
