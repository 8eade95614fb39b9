#!/usr/bin/env python3
"""Paper 001 (Lee & Chung, FTL cache algorithms and the write-only cache):
RW versus WO for LRU, CFLRU and DPW-LRU — flash write reduction (Fig. 6),
read/write hit ratio, flash read/write counts and latency with SLC and MLC_2
timings (Table 5, Fig. 7).

The paper replays the whole Financial1/Financial2 traces (5.3 M / 3.7 M I/Os)
through a 16 K-page, 8 KiB-page FTL cache; WL1 = Financial1 (23:77 read:write),
WL2 = both (63:37), WL3 = Financial2 (82:18). Here: the Financial1 sample in
../shared/traces (its first 10 k requests, 41:59) with caches scaled to its
footprint, and seeded Zipf workloads with the three read ratios and the paper's
cache of 16 K pages (128 MiB) over 100 K 8 KiB pages, as Financial-like
stand-ins. Latency is computed as the paper does — flash page reads × read
latency + flash page writes × program latency — from the device model's host
counters; GC copies and erases are reported apart.

Writes docs/reproductions/001/{results.csv, table5.md, fig6_write_reduction.png, fig7_latency.png}.
"""

from common import grouped_bars, markdown, outdir, pyplot, reports, sweep, trace, write_csv

POLICIES = ["lru", "cflru", "dpw-lru"]
MODES = {"write-back": "RW", "write-only": "WO"}
NANDS = {"SLC": "slc", "MLC_2": "mlc2"}
# 8 KiB NAND pages, as the paper's cache pages (it counts one flash write per cache page).
DEVICE = "ftl(nand={nand},page=8KiB,op=25%)"
FIN1 = "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz"
SYNTH = "zipf(alpha=1.0,keys=100k,read={read}%,size=8KiB,align=8KiB,unit=bytes,requests=1M,seed=1)"
WORKLOADS = [
    # (label, trace path or None, gen spec or None, cache)
    ("Fin1 sample", FIN1, None, "4MiB"),
    ("WL1-like 23:77", None, SYNTH.format(read=23), "128MiB"),
    ("WL2-like 63:37", None, SYNTH.format(read=63), "128MiB"),
    ("WL3-like 82:18", None, SYNTH.format(read=82), "128MiB"),
]


def runs():
    rows = []
    for label, path, gen, cache in WORKLOADS:
        for nand_label, nand in NANDS.items():
            df = sweep(trace(path) if path else gen, POLICIES, cache, pages="8KiB", modes=list(MODES),
                       devices=DEVICE.format(nand=nand))
            for r in reports(df):
                rows.append({
                    "workload": label, "nand": nand_label, "policy": r["policy"], "cache": MODES[r["mode"]],
                    "cache_bytes": r["cache_bytes"],
                    "read_hit_pct": 100 * r["read_hit_ratio"], "write_hit_pct": 100 * r["write_hit_ratio"],
                    "flash_reads": r["host_page_reads"], "flash_writes": r["host_page_writes"],
                    "read_ms": r["read_time_ns"] / 1e6, "write_ms": r["write_time_ns"] / 1e6,
                    "total_ms": (r["read_time_ns"] + r["write_time_ns"]) / 1e6,
                    "gc_copies": r["extra_page_writes"], "erases": r["erases"],
                    "exec_ms_with_gc": r["execution_time_ns"] / 1e6,
                })
    return rows


def pick(rows, **kw):
    out = [r for r in rows if all(r[k] == v for k, v in kw.items())]
    assert len(out) == 1, (kw, len(out))
    return out[0]


def reduction(rows, workload, policy):
    rw = pick(rows, workload=workload, policy=policy, cache="RW", nand="SLC")["flash_writes"]
    wo = pick(rows, workload=workload, policy=policy, cache="WO", nand="SLC")["flash_writes"]
    return 100.0 * (rw - wo) / rw if rw else 0.0


def main():
    out = outdir("001")
    rows = runs()
    write_csv(out / "results.csv", rows)
    labels = [w[0] for w in WORKLOADS]

    # Table 5: LRU, RW vs WO, per workload.
    header = ["metric"] + [f"{w} {c}" for w in labels for c in ("RW", "WO")]
    get = lambda w, c, n="SLC": pick(rows, workload=w, policy="lru", cache=c, nand=n)
    table = []
    for name, key, nand in [("read hit %", "read_hit_pct", "SLC"), ("flash read count", "flash_reads", "SLC"),
                            ("flash read ms, SLC", "read_ms", "SLC"), ("flash read ms, MLC_2", "read_ms", "MLC_2"),
                            ("write hit %", "write_hit_pct", "SLC"), ("flash write count", "flash_writes", "SLC"),
                            ("flash write ms, SLC", "write_ms", "SLC"), ("flash write ms, MLC_2", "write_ms", "MLC_2"),
                            ("total ms, SLC", "total_ms", "SLC"), ("total ms, MLC_2", "total_ms", "MLC_2"),
                            ("GC copies, SLC", "gc_copies", "SLC"), ("erases, SLC", "erases", "SLC")]:
        table.append([name] + [get(w, c, nand)[key] for w in labels for c in ("RW", "WO")])
    red = markdown(["workload"] + POLICIES, [[w] + [reduction(rows, w, p) for p in POLICIES] for w in labels])
    (out / "table5.md").write_text(
        "LRU, RW versus WO (paper 001 Table 5 layout; latency = count × Table 1 latency)\n\n"
        + markdown(header, table)
        + "\nFlash write reduction of WO over RW, % (paper 001 Fig. 6)\n\n" + red)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    grouped_bars(ax, labels, {p: [reduction(rows, w, p) for w in labels] for p in POLICIES},
                 "flash write reduction WO vs RW (%)")
    ax.set_title("Paper 001 Fig. 6: write count reduction of the write-only cache")
    fig.tight_layout()
    fig.savefig(out / "fig6_write_reduction.png")

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, nand in zip(axes, NANDS):
        series = {c: [get(w, c, nand)["total_ms"] / 1000 for w in labels] for c in ("RW", "WO")}
        grouped_bars(ax, [l.split(" ")[0] for l in labels], series, "total flash latency (s)")
        ax.set_title(f"LRU, {nand}")
    fig.suptitle("Paper 001 Fig. 7: latency burden of the write-only cache")
    fig.tight_layout()
    fig.savefig(out / "fig7_latency.png")
    print((out / "table5.md").read_text())


if __name__ == "__main__":
    main()
