#!/usr/bin/env python3
"""Miss-ratio curves of the classic policies on two real traces, with Belady's bound.

UMass Financial1 (first 10 k requests, 22 ASUs) and an MSR Cambridge cut,
cache sizes 128 KiB to 16 MiB, 4 KiB pages: every policy's miss ratio against
cache size, Belady's offline optimum as the dashed bound no policy can cross.
The same numbers as `ssdcache sim --trace … --policy lru,…,belady --cache …`.

    python examples/mrc_belady.py [-o mrc_belady.png]
"""

import ssdcache
from _common import args, trace

TRACES = [trace("umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz"),
          trace("msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz")]
POLICIES = ["lru", "fifo", "clock", "arc", "lirs", "s3fifo", "belady"]
CACHES = [f"{128 << i}KiB" for i in range(8)]  # 128 KiB … 16 MiB


def main():
    a = args(__doc__, "mrc_belady.png")
    df = ssdcache.sweep(TRACES, POLICIES, CACHES, progress=not a.no_progress)
    fig = ssdcache.plot.miss_ratio_curve(df, title="Miss ratio against cache size (4 KiB pages), Belady as the bound")
    fig.savefig(a.output, dpi=120)
    # the gap to the optimum at the smallest and largest cache
    for t, rows in df.groupby("trace", sort=False):
        best = rows[rows.policy != "belady"].groupby("cache_bytes")["hit_ratio"].max()
        bound = rows[rows.policy == "belady"].set_index("cache_bytes")["hit_ratio"]
        gap = 100 * (bound - best)
        print(f"{t.rsplit('/', 1)[-1]}: best policy {gap.iloc[0]:.1f} (small cache) and "
              f"{gap.iloc[-1]:.1f} (large) hit-ratio points below Belady")
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
