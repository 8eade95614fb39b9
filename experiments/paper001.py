#!/usr/bin/env python3
"""Paper 001 (Lee & Chung, FTL cache algorithms and the write-only cache):
RW versus WO for LRU, CFLRU and DPW-LRU — flash write reduction (Fig. 6),
read/write hit ratio, flash read/write counts and latency with SLC and MLC_2
timings (Table 5, Fig. 7).

The paper replays the whole Financial1/Financial2 traces (5.3 M / 3.7 M I/Os)
through a 16 K-page, 8 KiB-page FTL cache; WL1 = Financial1 (23:77 read:write),
WL2 = both (63:37), WL3 = Financial2 (82:18). Its simulator hands the FTL
page-aligned LBAs (Fig. 5: the OS stub passes whole pages), so every run here
takes requests as page-aligned (`align_pages=True`, `sim --align-pages`): no
partial-page write costs a read-for-write. Workloads:

- the Financial1 sample in ../shared/traces (its first 10 k requests, 41:59),
  cache scaled to its footprint; once more without alignment, as an ablation;
- `fin` workloads (paper 001-like: writes on a Zipf population of their own,
  reads on another, a share `rw` of reads on the write population) with the
  paper's three read:write ratios and its 16 K-page (128 MiB) cache; `rw`
  95/85/75 % for WL1/WL2/WL3, set from Table 5's WO read hit ratios
  (calibration in crates/core/src/trace/gen/fin.rs);
- the same with rw=100 %: reads and writes on one shared population (what the
  earlier Zipf stand-ins did), the ablation for Table 5's latency result.

Latency is computed as the paper does — flash page reads × read latency +
flash page writes × program latency — from the device model's host counters;
GC copies and erases are reported apart.

Writes docs/reproductions/001/{results.csv, table5.md, fig6_write_reduction.png, fig7_latency.png}.
"""

from common import grouped_bars, markdown, outdir, pyplot, reports, sweep, trace, write_csv

POLICIES = ["lru", "cflru", "dpw-lru"]
MODES = {"write-back": "RW", "write-only": "WO"}
NANDS = {"SLC": "slc", "MLC_2": "mlc2"}
# 8 KiB NAND pages, as the paper's cache pages (it counts one flash write per cache page).
DEVICE = "ftl(nand={nand},page=8KiB,op=25%,size=footprint,precondition=seq)"
FIN1 = "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz"
SYNTH = ("fin(alpha=1.2,wkeys=100k,rkeys=100k,read={read}%,rw={rw}%,size=8KiB,align=8KiB,unit=bytes,"
         "requests=1M,seed=1)")
WORKLOADS = [
    # (label, trace path or None, gen spec or None, cache, page-aligned)
    ("Fin1 sample", FIN1, None, "4MiB", True),
    ("WL1-like 23:77", None, SYNTH.format(read=23, rw=95), "128MiB", True),
    ("WL2-like 63:37", None, SYNTH.format(read=63, rw=85), "128MiB", True),
    ("WL3-like 82:18", None, SYNTH.format(read=82, rw=75), "128MiB", True),
    # ablations
    ("Fin1 sample unaligned", FIN1, None, "4MiB", False),
    ("WL1 shared", None, SYNTH.format(read=23, rw=100), "128MiB", True),
    ("WL3 shared", None, SYNTH.format(read=82, rw=100), "128MiB", True),
]
MAIN = [w[0] for w in WORKLOADS[:4]]


def runs():
    rows = []
    for label, path, gen, cache, align in WORKLOADS:
        for nand_label, nand in NANDS.items():
            df = sweep(trace(path) if path else gen, POLICIES, cache, pages="8KiB", modes=list(MODES),
                       devices=DEVICE.format(nand=nand), align_pages=align)
            for r in reports(df):
                rows.append({
                    "workload": label, "nand": nand_label, "policy": r["policy"], "cache": MODES[r["mode"]],
                    "cache_bytes": r["cache_bytes"], "align_pages": align,
                    "read_for_write": r["read_for_write"],
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

    # Table 5: LRU, RW vs WO, per workload (the ablations too).
    header = ["metric"] + [f"{w} {c}" for w in labels for c in ("RW", "WO")]
    get = lambda w, c, n="SLC": pick(rows, workload=w, policy="lru", cache=c, nand=n)
    table = []
    for name, key, nand in [("read hit %", "read_hit_pct", "SLC"), ("flash read count", "flash_reads", "SLC"),
                            ("flash read ms, SLC", "read_ms", "SLC"), ("flash read ms, MLC_2", "read_ms", "MLC_2"),
                            ("write hit %", "write_hit_pct", "SLC"), ("flash write count", "flash_writes", "SLC"),
                            ("flash write ms, SLC", "write_ms", "SLC"), ("flash write ms, MLC_2", "write_ms", "MLC_2"),
                            ("total ms, SLC", "total_ms", "SLC"), ("total ms, MLC_2", "total_ms", "MLC_2"),
                            ("GC copies, SLC", "gc_copies", "SLC"), ("erases, SLC", "erases", "SLC"),
                            ("read-for-write reads", "read_for_write", "SLC")]:
        table.append([name] + [get(w, c, nand)[key] for w in labels for c in ("RW", "WO")])
    red = markdown(["workload"] + POLICIES, [[w] + [reduction(rows, w, p) for p in POLICIES] for w in labels])
    def change(w, nand):
        rw, wo = get(w, "RW", nand)["total_ms"], get(w, "WO", nand)["total_ms"]
        return 100.0 * (wo - rw) / rw if rw else 0.0

    lat = markdown(["workload", "SLC RW ms", "SLC WO ms", "SLC change %", "MLC_2 RW ms", "MLC_2 WO ms",
                    "MLC_2 change %"],
                   [[w, get(w, "RW")["total_ms"], get(w, "WO")["total_ms"], change(w, "SLC"),
                     get(w, "RW", "MLC_2")["total_ms"], get(w, "WO", "MLC_2")["total_ms"], change(w, "MLC_2")]
                    for w in labels])
    (out / "table5.md").write_text(
        "LRU, RW versus WO (paper 001 Table 5 layout; latency = count × Table 1 latency; every run page-aligned "
        "but 'Fin1 sample unaligned')\n\n"
        + markdown(header, table)
        + "\nFlash write reduction of WO over RW, % (paper 001 Fig. 6)\n\n" + red
        + "\nTotal flash latency, LRU, WO against RW (paper 001 Fig. 7; paper: WL1 SLC +3.7 %, MLC_2 +0.88 %; "
        "WL3 SLC +72.5 %, MLC_2 +13.3 %)\n\n" + lat)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    grouped_bars(ax, MAIN, {p: [reduction(rows, w, p) for w in MAIN] for p in POLICIES},
                 "flash write reduction WO vs RW (%)")
    ax.set_title("Paper 001 Fig. 6: write count reduction of the write-only cache")
    fig.tight_layout()
    fig.savefig(out / "fig6_write_reduction.png")

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, nand in zip(axes, NANDS):
        series = {c: [get(w, c, nand)["total_ms"] / 1000 for w in MAIN] for c in ("RW", "WO")}
        grouped_bars(ax, [l.split(" ")[0] for l in MAIN], series, "total flash latency (s)")
        ax.set_title(f"LRU, {nand}")
    fig.suptitle("Paper 001 Fig. 7: latency burden of the write-only cache")
    fig.tight_layout()
    fig.savefig(out / "fig7_latency.png")
    print((out / "table5.md").read_text())


if __name__ == "__main__":
    main()
