#!/usr/bin/env python3
"""Paper 002 Fig. 6 (small): QLRU against LRU, hit ratio by NCQ length and buffer size.

An NCQ-aware write buffer inside an SSD (write-only mode, page-mapping FTL on
FlashSim-like NAND), paper 002's Iometer-like workload A replayed open-loop
through an NCQ of 32–512 commands at a saturating arrival rate. QLRU holds
the pages of queued commands at a virtual MRU end until they are served; its
gain over LRU grows with the queue and shrinks as the buffer grows.
50 k requests (experiments/paper002.py runs 200 k; the paper 500 k).

    python examples/paper002_qlru.py [-o paper002_qlru.png]
"""

import ssdcache
from _common import args

WORKLOAD = "iometer-a(requests=50k,iat=exp(1ms),seed=1)"
DEPTHS = [32, 64, 128, 256, 512]


def main():
    a = args(__doc__, "paper002_qlru.png")
    df = ssdcache.sweep(WORKLOAD, ["lru", "qlru"], ["32MiB", "128MiB"], modes="write-only",
                        devices="ftl(nand=flashsim)", queue_depth=DEPTHS, iat_scale=1,
                        progress=not a.no_progress)
    fig = ssdcache.plot.hit_ratio_curve(df, x="queue_depth", labels=str.upper,
                                        title="Paper 002 Fig. 6: workload A, hit ratio by NCQ length")
    for ax in fig.axes:
        ax.set_xlabel("NCQ length")
    fig.savefig(a.output, dpi=120)
    pivot = df.pivot_table(index=["cache_bytes", "queue_depth"], columns="policy", values="hit_ratio")
    pivot["gain (points)"] = 100 * (pivot["qlru"] - pivot["lru"])
    pivot.index = pivot.index.set_levels([f"{c >> 20}MiB" for c in pivot.index.levels[0]], level=0)
    print(pivot.round(4).to_string())
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
