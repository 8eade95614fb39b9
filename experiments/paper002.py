#!/usr/bin/env python3
"""Paper 002 (Kim & Kim, QLRU: an NCQ-aware write buffer): QLRU versus LRU.

- Fig. 5: hit ratio on Iometer-like workloads A (random), B (half), C (sequential),
  32 MiB buffer, NCQ length 512.
- Fig. 6: hit ratio on workload A as the buffer grows 32→512 MiB and the NCQ 32→512.
- Figs. 7–10: average queue length, hit ratio, write bandwidth and IOPS against
  the inter-arrival scaling factor (32 MiB, NCQ 512).

Setting as in the paper: a write buffer inside the SSD that absorbs writes only
(`--mode write-only`; the workloads are all writes), a page-mapping FTL with
greedy GC on FlashSim-like NAND (Table 1: 4 KiB pages, 128-page blocks, 200 µs
program), open-loop replay through an NCQ of the given length. The paper
defines scaling factor 1 as "the NCQ is full" and stretches inter-arrival times
from there; its Table 2 mean inter-arrival times (72–158 ms) cannot fill any
queue, so here the base inter-arrival time is set so that the device is
saturated (exponential, mean 1 ms) and the factor multiplies it.
Runs 200 k requests per workload (the paper: 500 k) to keep the script quick.

QLRU runs in both readings of its virtual MRU (`policy/flash/qlru.rs`):
`vmru=pointer` (the default, the paper's pointer: a page leaves the virtual MRU
at its next reference) and `vmru=pin` (held until the last queued command on it
is served, which needs per-page counts the paper says QLRU does not keep).

Writes docs/reproductions/002/{results.csv, summary.md, fig5.png, fig6.png, fig7_10.png}.
"""

import ssdcache
from common import grouped_bars, markdown, outdir, pyplot, reports, sweep, write_csv

DEVICE = "ftl(nand=flashsim)"
REQUESTS = "200k"
BASE_IAT = "1ms"


def workload(name, iat=BASE_IAT):
    return f"iometer-{name}(requests={REQUESTS},iat=exp({iat}),seed=1)"


QLRUS = ["qlru(vmru=pointer)", "qlru(vmru=pin)"]
POLICIES = ["lru"] + QLRUS
SHORT = {"lru": "LRU", "qlru(vmru=pointer)": "QLRU pointer", "qlru(vmru=pin)": "QLRU pin"}


def run(gen, caches, depths, scales=("1",)):
    return sweep(gen, POLICIES, caches, modes="write-only", devices=DEVICE, queue_depth=list(depths),
                 iat_scale=list(scales))


def row(r, **extra):
    return {**extra, "policy": SHORT[r["policy"]], "cache_mib": r["cache_bytes"] >> 20, "depth": r["queue_depth"],
            "scale": r["iat_scale"], "hit_pct": 100 * r["hit_ratio"], "avg_queue": r["avg_queue_length"],
            "iops": r["iops"], "write_mb_s": r["write_bandwidth_mb_s"], "mean_latency_ms": r["latency_mean_ns"] / 1e6,
            "p99_latency_ms": r["latency_p99_ns"] / 1e6, "flash_writes": r["host_page_writes"],
            "gc_copies": r["extra_page_writes"], "erases": r["erases"]}


def main():
    out = outdir("002")
    rows = []
    # Fig. 5
    fig5 = {}
    for w in "abc":
        for r in reports(run(workload(w), ["32MiB"], [512])):
            rows.append(row(r, figure="5", workload=w.upper()))
            fig5.setdefault(SHORT[r["policy"]], []).append(100 * r["hit_ratio"])
    # Fig. 6
    caches = ["32MiB", "64MiB", "128MiB", "256MiB", "512MiB"]
    depths = [32, 64, 128, 256, 512]
    fig6_df = run(workload("a"), caches, depths)
    fig6 = [row(r, figure="6", workload="A") for r in reports(fig6_df)]
    rows += fig6
    # Figs. 7–10
    scales = ["1", "2", "4", "8", "16", "32"]
    fig7_df = run(workload("a"), ["32MiB"], [512], scales)
    fig7 = [row(r, figure="7-10", workload="A") for r in reports(fig7_df)]
    rows += fig7
    write_csv(out / "results.csv", rows)

    def hit(rs, policy, **kw):
        return next(r for r in rs if r["policy"] == policy and all(r[k] == v for k, v in kw.items()))["hit_pct"]

    def gain(rs, q, **kw):
        return hit(rs, SHORT[q], **kw) - hit(rs, "LRU", **kw)

    md = "Fig. 5 — hit ratio %, 32 MiB buffer, NCQ 512\n\n"
    md += markdown(["policy", "A", "B", "C"], [[p] + v for p, v in fig5.items()])
    md += "\nFig. 5 — QLRU gain over LRU, points\n\n"
    md += markdown(["QLRU", "A", "B", "C"],
                   [[SHORT[q]] + [a - b for a, b in zip(fig5[SHORT[q]], fig5["LRU"])] for q in QLRUS])
    for q in QLRUS:
        md += f"\nFig. 6 — {SHORT[q]} hit ratio gain over LRU, points, workload A (rows: buffer, columns: NCQ length)\n\n"
        md += markdown(["buffer"] + [str(d) for d in depths],
                       [[c] + [gain(fig6, q, cache_mib=int(c[:-3]), depth=d) for d in depths] for c in caches])
    md += "\nFigs. 7–10 — against the inter-arrival scaling factor, 32 MiB, NCQ 512, workload A\n\n"
    md += markdown(["scale", "policy", "avg queue", "hit %", "write MB/s", "IOPS", "mean latency ms"],
                   [[r["scale"], r["policy"], r["avg_queue"], r["hit_pct"], r["write_mb_s"], r["iops"], r["mean_latency_ms"]]
                    for r in sorted(fig7, key=lambda r: (r["scale"], r["policy"]))])
    (out / "summary.md").write_text(md)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 3))
    grouped_bars(ax, ["A", "B", "C"], fig5, "hit ratio (%)")
    ax.set_title("Fig. 5: 32 MiB buffer, NCQ 512")
    fig.tight_layout()
    fig.savefig(out / "fig5.png")

    # hit ratio against NCQ length, a panel per buffer size
    fig = ssdcache.plot.hit_ratio_curve(fig6_df, x="queue_depth", belady=False,
                                        title="Fig. 6: workload A, buffer size and NCQ length")
    fig.savefig(out / "fig6.png")

    fig, axes = plt.subplots(1, 4, figsize=(13, 3))
    for ax, metric in zip(axes, ["avg_queue_length", "hit_ratio", "write_bandwidth_mb_s", "iops"]):
        ssdcache.plot.miss_ratio_curve(fig7_df, metric, x="iat_scale", belady=False, ax=ax)
        ax.set_xlabel("scaling factor")
    fig.suptitle("Figs. 7–10: workload A, 32 MiB buffer, NCQ 512")
    fig.tight_layout()
    fig.savefig(out / "fig7_10.png")
    print(md)


if __name__ == "__main__":
    main()
