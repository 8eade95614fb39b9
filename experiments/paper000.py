#!/usr/bin/env python3
"""Paper 000 (PWC, a persistent write-back SSD cache in front of an HDD),
simulated: HDD only versus an LRU SSD cache that caches reads only versus PWC,
per day over 10 days — throughput, mean latency, hit ratio (the shape of the
paper's Figs. 6–14) plus totals.

The paper's traces (10 days of three desktop users) are not public. The main
run uses the `desktop` generator: 10 days, 200 k requests a day in working
hours, idle nights, 30 % writes, a 4 GiB working set drifting 10 % a day on a
100 GiB disk. The SSD cache is 2 GiB (half the working set) and 8 GiB (twice
it), PWC with 1 MiB segments and its procedure once a day at night
(`period=24h,idle=1h`: due daily, run in the first idle hour). Then the same
comparison on the real traces of ../shared/traces, each replayed 10 times back
to back with PWC's procedure once per replay.

Devices: `hdd(model=rpm7200)` behind, the black-box `ssd` of paper 004 as the
cache. Throughput per day is bytes served over the device time spent that day
(requests and maintenance): what the devices could sustain, the replay
analogue of the paper's measured MB/s.

Writes docs/reproductions/000/{results.csv, summary.md, days_*.png}.
"""

import ssdcache
from common import markdown, outdir, pyplot, reports, sweep, trace, trace_info, write_csv

DESKTOP = "desktop(days=10,seed=1)"
SYSTEMS = {"HDD only": "none", "LRU SSD (read-only)": "lru(mode=read-only)", "PWC": "pwc(period=24h,idle=1h)"}
DEV = dict(devices="hdd(model=rpm7200)", cache_device="ssd")
REAL = {
    "Financial1": "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz",
    "MSR rw 40:60": "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz",
    "CloudPhysics": "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz",
}


def run_desktop(cache):
    rows, series = [], {}
    df = sweep(DESKTOP, list(SYSTEMS.values()), cache, interval="1d", **DEV)
    for name, r in zip(SYSTEMS, reports(df)):
        series[name] = r["series"]
        busy = r["execution_time_ns"] + r.get("cache_device_time_ns", 0)
        rows.append({"workload": "desktop 10 d", "cache": cache, "system": name, "hit_pct": 100 * r["hit_ratio"],
                     "read_hit_pct": 100 * r["read_hit_ratio"], "hdd_s": r["execution_time_ns"] / 1e9,
                     "ssd_s": r.get("cache_device_time_ns", 0) / 1e9, "maintenance_s": r["maintenance_ns"] / 1e9,
                     "throughput_mb_s": (r["read_bytes"] + r["write_bytes"]) / 1e6 / (busy / 1e9)})
    return rows, series, df


def run_real(label, rel, cache):
    path = trace(rel)
    # One replay's span plus a mean gap is the repeat period (see TraceSource::repeat):
    # PWC's procedure runs once per replay and the series has one interval per replay.
    info = trace_info([path])
    dur = max(int(info["duration_ns"]), 1)
    period = dur + max(dur // max(int(info["requests"]), 1), 1)
    rows, series = [], {}
    policies = ["none", "lru(mode=read-only)", f"pwc(period={period}ns,segment=128KiB)"]
    df = sweep(path, policies, cache, repeat=10, interval=f"{period}ns", **DEV)
    for name, r in zip(SYSTEMS, reports(df)):
        series[name] = r["series"]
        busy = r["execution_time_ns"] + r.get("cache_device_time_ns", 0)
        rows.append({"workload": f"{label} x10", "cache": cache, "system": name, "hit_pct": 100 * r["hit_ratio"],
                     "read_hit_pct": 100 * r["read_hit_ratio"], "hdd_s": r["execution_time_ns"] / 1e9,
                     "ssd_s": r.get("cache_device_time_ns", 0) / 1e9, "maintenance_s": r["maintenance_ns"] / 1e9,
                     "throughput_mb_s": (r["read_bytes"] + r["write_bytes"]) / 1e6 / (busy / 1e9)})
    return rows, series, df


def plot(out, title, fname, df, policies):
    """Throughput, mean latency and hit ratio per interval (day or replay), one line per system."""
    names = dict(zip(policies, SYSTEMS))
    fig = ssdcache.plot.series(df, labels=names, title=title)
    fig.savefig(out / fname)


def main():
    out = outdir("000")
    pyplot()
    rows, md = [], ""
    for cache in ["2GiB", "8GiB"]:
        r, series, df = run_desktop(cache)
        rows += r
        plot(out, f"desktop, 10 days, SSD cache {cache}", f"days_desktop_{cache}.png", df, list(SYSTEMS.values()))
        md += f"\nDesktop, 10 days, SSD cache {cache}: per day throughput MB/s (HDD only / LRU / PWC)\n\n"
        md += markdown(["day", "HDD only", "LRU SSD", "PWC", "PWC / LRU", "LRU hit %", "PWC hit %"],
                       [[d + 1] + [series[s][d]["throughput_mb_s"] for s in SYSTEMS]
                        + [series["PWC"][d]["throughput_mb_s"] / max(series["LRU SSD (read-only)"][d]["throughput_mb_s"], 1e-9),
                           100 * series["LRU SSD (read-only)"][d]["hit_ratio"], 100 * series["PWC"][d]["hit_ratio"]]
                        for d in range(len(series["PWC"]))])
    for label, rel in REAL.items():
        r, series, df = run_real(label, rel, "16MiB" if label != "CloudPhysics" else "256MiB")
        rows += r
        plot(out, f"{label}, replayed 10 times", f"days_{label.split()[0].lower()}.png", df, list(df["policy"]))
    md += "\nTotals\n\n" + markdown(["workload", "cache", "system", "hit %", "HDD s", "SSD s", "maintenance s", "MB/s"],
                                    [[r["workload"], r["cache"], r["system"], r["hit_pct"], r["hdd_s"], r["ssd_s"],
                                      r["maintenance_s"], r["throughput_mb_s"]] for r in rows])
    write_csv(out / "results.csv", rows)
    (out / "summary.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
