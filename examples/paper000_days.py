#!/usr/bin/env python3
"""Paper 000 style (small): an HDD alone, a read-only LRU SSD cache, and PWC, day by day.

Five simulated desktop days (busy days, idle nights, 30 % writes, a drifting
working set; the `desktop` generator) on a 7200 rpm disk, with a 2 GiB SSD
cache: throughput, mean device time per request and hit ratio per day. PWC
caches nothing on day 1 (it fills at night) and overtakes the LRU cache after.
50 k requests a day (experiments/paper000.py runs 200 k for 10 days).

    python examples/paper000_days.py [-o paper000_days.png]
"""

import ssdcache
from _common import args

WORKLOAD = "desktop(days=5,per_day=50k,seed=1)"
SYSTEMS = {"HDD only": "none", "LRU SSD (read-only)": "lru(mode=read-only)", "PWC": "pwc(period=24h,idle=1h)"}


def main():
    a = args(__doc__, "paper000_days.png")
    df = ssdcache.sweep(WORKLOAD, list(SYSTEMS.values()), "2GiB", devices="hdd(model=rpm7200)",
                        cache_device="ssd", interval="1d", progress=not a.no_progress)
    names = {spec: name for name, spec in SYSTEMS.items()}
    fig = ssdcache.plot.series(df, labels=names, title="Desktop days, 2 GiB SSD cache in front of a 7200 rpm disk")
    for ax in fig.axes:
        ax.set_xlabel("day")
    fig.savefig(a.output, dpi=120)
    for spec, s in zip(df["policy"], df.attrs["series"]):
        print(f"{names.get(spec, spec):>20}: MB/s per day " + " ".join(f"{d['throughput_mb_s']:5.2f}" for d in s))
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
