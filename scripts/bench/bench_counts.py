#!/usr/bin/env python3
"""Instructions and simulated cache misses per request, ssdcache against libCacheSim.

`perf stat` cannot read hardware counters on these virtual machines, so this runs
both tools under `valgrind --tool=cachegrind --cache-sim=yes`, which counts every
instruction and data access exactly and simulates the caches: a first level as
the host's L1d, and a last level of 1 MiB, 16-way (the size of this machine's
per-core L2; cachegrind models only two levels). The counts are exact and the
same on every run, so they compare where wall-clock time on a shared 2-core
machine cannot; what they leave out is how well a CPU overlaps the misses.

Same trace and cache as scripts/bench/bench.py (Zipf 0.9 over 1 M keys, cache at 10 %
of the footprint), 1 M requests by default: cachegrind runs programs about 50×
slower. Each tool's start-up (for libCacheSim: Python, its import and the cache's
creation) is taken out by subtracting a run of the same command on a 1-request
trace, so the figures are per request of the replay itself.

Usage: scripts/bench/bench_counts.py [--requests 1M] [--keys 1M] [--policies lru,mq,...] [--markdown]
"""

import argparse
import re
import shutil
import subprocess
import sys

from bench import ALIGNED, BIN, LCS_CHILD, LCS_CLASS, NOT_SAME, bench_trace, count, machine, table_head, table_row

# The simulated last level: 1 MiB, 16-way, 64-byte lines.
LL = "1048576,16,64"
FIELDS = {"I": r"I\s+refs:", "D1": r"D1\s+misses:", "LL": r"LLd\s+misses:"}


def cachegrind(cmd: list) -> dict[str, int]:
    """Runs cmd under cachegrind; returns its instructions, D1 misses and last-level data misses."""
    full = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={LL}", "--cachegrind-out-file=/dev/null"]
    proc = subprocess.run(full + [str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed under cachegrind:\n{proc.stderr[-2000:]}")
    out = {}
    for name, pattern in FIELDS.items():
        m = re.search(pattern + r"\s+([\d,]+)", proc.stderr)
        if not m:
            sys.exit(f"no '{name}' count in cachegrind's summary for {cmd[0]}")
        out[name] = int(m.group(1).replace(",", ""))
    return out


def per_request(run: dict[str, int], setup: dict[str, int], n: int) -> dict[str, float]:
    return {k: (run[k] - setup[k]) / n for k in run}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", default="1M")
    ap.add_argument("--keys", default="1M")
    ap.add_argument("--alpha", default="0.9")
    ap.add_argument("--policies", default=",".join(LCS_CLASS))
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind missing: apt-get install valgrind")
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in LCS_CLASS:
            sys.exit(f"--policies: {policy!r} is not one both tools have ({', '.join(LCS_CLASS)})")
    n, keys = count(args.requests), count(args.keys)
    trace, footprint = bench_trace(n, keys, args.alpha)
    setup_trace, _ = bench_trace(1, keys, args.alpha)
    pages = footprint // 10
    print(machine())
    print(f"trace: {trace.name}: {n:,} requests, footprint {footprint:,} keys; cache {pages:,} pages (10 %)")
    print(f"counts: cachegrind, per request, start-up subtracted; L1d as the host's, last level {LL} (size,ways,line)\n")
    cols = ["policy", "instr lcs", "instr ours", "ratio", "D1 miss lcs", "D1 miss ours", "LL miss lcs", "LL miss ours"]
    widths = [13] * (len(cols) - 1)
    print(table_head(cols, widths, args.markdown))
    for policy in policies:
        lcs = lambda path: [sys.executable, "-c", LCS_CHILD, LCS_CLASS[policy], str(pages * 4096), path]
        ours = lambda path: [BIN, "sim", "--trace", path, "--format", "oracle-general", "--policy",
                             ALIGNED.get(policy, policy), "--cache", f"{pages * 4096}B", "--json"]
        a = per_request(cachegrind(lcs(trace)), cachegrind(lcs(setup_trace)), n)
        b = per_request(cachegrind(ours(trace)), cachegrind(ours(setup_trace)), n)
        row = [policy + ("*" if policy in NOT_SAME else ""), f"{a['I']:.0f}", f"{b['I']:.0f}", f"{a['I'] / b['I']:.2f}x", f"{a['D1']:.2f}", f"{b['D1']:.2f}",
               f"{a['LL']:.2f}", f"{b['LL']:.2f}"]
        print(table_row(row, widths, args.markdown), flush=True)
    print("\ninstr: instructions; D1 miss, LL miss: simulated first- and last-level data misses; all per request."
          " ratio: libCacheSim's instructions / ours")
    for policy, why in NOT_SAME.items():
        if policy in policies:
            print(f"* {policy}: {why}")


if __name__ == "__main__":
    main()
