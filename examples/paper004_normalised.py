#!/usr/bin/env python3
"""Paper 004 Fig. 6 on CloudPhysics: hit ratio and execution time normalised to LRU.

Buffer policies in front of a log-block hybrid FTL with MLC_1 timings (erase ≫
program ≫ read), the buffer 25 % of the trace's footprint — the setting of
experiments/paper004.py, on one trace. The paper's point: hit ratio does not
predict execution time on flash (ARC and LIRS hit more than LRU yet are slower;
CLC's block-unit flushes avoid merges). Also draws Figs. 10–12 (the device time
split into read, write, extra write and erase) next to it.

    python examples/paper004_normalised.py [-o paper004_fig6.png]
"""

import ssdcache
from _common import args, trace

DEVICE = "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)"
POLICIES = ["lru", "cflru", "lru-wsr", "fab", "clc", "arc", "lirs", "abm(read=lru,write=clc)",
            "abm(read=lru,write=clc,delay=false)"]
LABELS = {"abm(read=lru,write=clc)": "ABM-LRU-CLC", "abm(read=lru,write=clc,delay=false)": "ABM (no delay)"}


def main():
    a = args(__doc__, "paper004_fig6.png")
    t = ssdcache.load(trace("cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz"))
    # Footprint: with a cache larger than the trace, every miss is a first touch.
    footprint = ssdcache.simulate(t, policy="lru", cache="64GiB").misses
    cache = max(4, round(footprint * 0.25 / 64)) * 64 * 4096  # whole 64-page blocks
    df = ssdcache.sweep(t, POLICIES, cache, devices=DEVICE, progress=not a.no_progress)
    labels = lambda spec: LABELS.get(spec, spec.split("(")[0].upper())  # noqa: E731
    fig = ssdcache.plot.normalised_bars(df, baseline="lru", labels=labels,
                                        title=f"CloudPhysics, buffer {cache >> 20} MiB (25 % of footprint): "
                                              "normalised to LRU")
    fig.savefig(a.output, dpi=120)
    cost = a.output.rsplit(".", 1)
    cost_path = f"{cost[0]}_cost.{cost[1]}" if len(cost) == 2 else a.output + "_cost.png"
    ssdcache.plot.device_cost_bars(df, read=True, labels=labels, title="Device time (Figs. 10-12)").savefig(
        cost_path, dpi=120)
    lru = df.set_index("policy").loc["lru"]
    for _, r in df.iterrows():
        print(f"{labels(r.policy):>14}  hit {r.hit_ratio / lru.hit_ratio:5.2f}x  "
              f"time {r.execution_time_ns / lru.execution_time_ns:5.2f}x  extra writes {r.extra_page_writes:>8,}")
    print(f"wrote {a.output} and {cost_path}")


if __name__ == "__main__":
    main()
