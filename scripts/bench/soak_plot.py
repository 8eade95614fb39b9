#!/usr/bin/env python3
"""Latency percentiles over time from a crash client's --latency-log.

    soak_plot.py LOG PNG [--window 10]

LOG has one line per completed request: `unix_time latency_s op` (op: w
write, f flush, r read). Prints, per window of --window seconds, the
requests and the p50 / p99 / p99.9 latency in ms, and draws them (log scale)
into PNG. Needs matplotlib (the pyenv python3, not /usr/bin/python3).
"""

import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    return sorted_vals[min(len(sorted_vals) - 1, int(p / 100 * len(sorted_vals)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("png")
    ap.add_argument("--window", type=float, default=10.0)
    a = ap.parse_args()
    rows = []
    with open(a.log) as f:
        for n, ln in enumerate(f, 1):
            parts = ln.split()
            if len(parts) != 3:
                sys.exit(f"soak_plot: {a.log} line {n}: expected `unix_time latency_s op`, got {ln.strip()!r}")
            rows.append((float(parts[0]), float(parts[1])))
    if not rows:
        sys.exit(f"soak_plot: {a.log} holds no request")
    t0 = min(t for t, _ in rows)
    windows = {}
    for t, lat in rows:
        windows.setdefault(int((t - t0) // a.window), []).append(lat * 1000)
    xs, p50, p99, p999 = [], [], [], []
    print(f"{'from s':>7} {'requests':>9} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9}")
    for k in sorted(windows):
        v = sorted(windows[k])
        xs.append(k * a.window)
        p50.append(pct(v, 50))
        p99.append(pct(v, 99))
        p999.append(pct(v, 99.9))
        print(f"{k * a.window:7.0f} {len(v):9d} {p50[-1]:8.2f} {p99[-1]:8.2f} {p999[-1]:9.2f}")
    allv = sorted(lat * 1000 for _, lat in rows)
    print(f"{'all':>7} {len(allv):9d} {pct(allv, 50):8.2f} {pct(allv, 99):8.2f} {pct(allv, 99.9):9.2f}")
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for ys, label in [(p50, "p50"), (p99, "p99"), (p999, "p99.9")]:
        ax.plot(xs, ys, marker=".", label=label)
    ax.set_yscale("log")
    ax.set_xlabel(f"seconds since start ({a.window:g} s windows; gaps: server restarts)")
    ax.set_ylabel("request latency (ms)")
    ax.set_title("ssdcache serve soak: client latency percentiles over time")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.png, dpi=100)
    print(f"plot: {a.png}")


if __name__ == "__main__":
    main()
