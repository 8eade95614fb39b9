#!/usr/bin/env python3
"""Paper 003 (Lee, Choi, Lee & Noh, NVRAM in the buffer cache): Read Volatile
versus Read Global over the NVRAM share of a fixed DRAM + NVRAM cache —
response time (Fig. 1), hits (Fig. 2), disk accesses by formula (1)
(Fig. 3), and the read-replace-dirty / write-overwrite-clean counts of Table 2.

The paper replays a TPC-C trace (1/10 scale, 15 % writes) through a 169 MB
cache, a tenth of the 1.69 GB the trace touches, on DiskSim; it finds that
Read Global always hits more, yet its response time is worse over part of the
range, and that disk accesses = 2·ReadReplaceDirty + ReadOverwriteClean +
WriteReplaceDirty (formula (1), Table 1) track response time where hits do
not. Here: the TPC-C sample of ../shared/traces (7 k requests, almost no
reuse), and the real traces with reuse and writes — CloudPhysics, the MSR cuts
(one of them 17 % writes, like TPC-C), the Financial1 sample — each with a
cache of a tenth of its footprint, 4 KiB pages, the NVRAM share from 10 to
90 %, each tier LRU, on the 7200 RPM disk of paper 001 Table 2
(`hdd(model=rpm7200)`).

Response time is the disk's service time over the run (`device_busy_ns` of a
queue-depth-1 replay, in trace order: the sum of every request's disk time,
without the final drain, which an NVRAM cache would not need); the cost-model
`execution_time_ns`, which includes that drain, is in results.csv too.
Disk accesses are formula (1); the disk I/O the policies really issued is
formula (1) plus the read-for-write reads partial writes need (counted apart:
Table 1 assumes whole blocks).

Writes docs/reproductions/003/{results.csv, table2.md, summary.md,
fig1_response_time.png, fig2_hits.png, fig3_disk_accesses.png,
fig_tracking.png}.
"""

import math

from common import markdown, outdir, pyplot, reports, sweep, trace, trace_info, write_csv

SHARES = [10, 20, 30, 40, 50, 60, 70, 80, 90]
POLICIES = {"read-volatile": "Read Volatile", "read-global": "Read Global"}
DEVICE = "hdd(model=rpm7200)"
PAGE = 4096
# label -> a trace under ../shared/traces, or ("gen", a workload spec)
TRACES = {
    "TPC-C": "tpcc-mqsim/tpcc-small.trace.gz",
    "MSR 83:17": "msr-cuts-heimdall/msr.cut.per_10k.most_thpt_rand_iops.1006.trace.gz",
    "CloudPhysics": "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz",
    "MSR 40:60": "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz",
    "MSR 20:80": "msr-cuts-heimdall/msr.cut.per_10k.rw_20_80.105.trace.gz",
    "Financial1": "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz",
    # The paper's TPC-C is read-mostly (15 % writes) and its reads range over more data than its
    # writes; the TPC-C sample here has almost no reuse. A synthetic stand-in with that shape:
    # 85 % reads over 200 k pages, 15 % writes over 30 k, both Zipf 0.8.
    "TPC-C-like (synthetic)": ("gen", "mix(zipf(alpha=0.8,keys=200k,read=100%),zipf(alpha=0.8,keys=30k,read=0%),"
                                      "weights=85%/15%,requests=400k,seed=1)"),
}
# Paper 003 Table 2 (TPC-C): share -> (RV RRD, RV WOC, RG RRD, RG WOC).
PAPER_TABLE2 = {
    10: (0, 2217, 0, 2217),
    20: (0, 4434, 0, 4434),
    30: (0, 6651, 116, 6695),
    40: (0, 8868, 33704, 35855),
    60: (0, 13302, 92216, 79851),
    80: (0, 17736, 119613, 91504),
    90: (0, 19953, 127699, 91708),
}


def source(label: str) -> str:
    """A workload: a shared trace's path or a generator spec (both are traces to ssdcache.sweep)."""
    t = TRACES[label]
    return t[1] if isinstance(t, tuple) else trace(t)


def footprint_pages(label: str) -> int:
    t = TRACES[label]
    return trace_info(["--gen", t[1]] if isinstance(t, tuple) else [trace(t)])["footprint_pages"]


def runs():
    rows = []
    for label in TRACES:
        pages = max(10, round(footprint_pages(label) / 10))
        specs = [f"{p}(nvram={s}%)" for p in POLICIES for s in SHARES] + ["lru"]
        df = sweep(source(label), specs, f"{pages * PAGE}B", devices=DEVICE, queue_depth=1)
        for r in reports(df):
            name = r["policy"].split("(")[0]
            share = int(r["policy"].split("nvram=")[1].rstrip("%)")) if "nvram=" in r["policy"] else 0
            rows.append({
                "trace": label, "policy": POLICIES.get(name, "LRU (DRAM only)"), "nvram_pct": share,
                "cache_pages": r["capacity_pages"],
                "hit_pct": 100 * r["hit_ratio"], "read_hit_pct": 100 * r["read_hit_ratio"],
                "hits": r["hits"], "misses": r["misses"], "request_hits": r["request_hits"],
                "read_hits_dram": r["read_hits_dram"], "read_hits_nvram": r["read_hits_nvram"],
                "write_hits_dram": r["write_hits_dram"], "write_hits_nvram": r["write_hits_nvram"],
                "rrd": r["read_replace_dirty"], "roc": r["read_overwrite_clean"],
                "wrd": r["write_replace_dirty"], "woc": r["write_overwrite_clean"],
                "disk_accesses": r["backing_accesses"], "read_for_write": r["read_for_write"],
                "disk_io": r["backing_reads"] + r["backing_writes"],
                "to_nvram": r["migrations_to_nvram"], "to_dram": r["migrations_to_dram"],
                "drain_writes": r["drain_writes"],
                "response_s": r["device_busy_ns"] / 1e9, "exec_s_with_drain": r["execution_time_ns"] / 1e9,
                "mean_latency_ms_qd1": r["latency_mean_ns"] / 1e6,
            })
    return rows


def pick(rows, **kw):
    out = [r for r in rows if all(r[k] == v for k, v in kw.items())]
    assert len(out) == 1, (kw, len(out))
    return out[0]


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(xs, ys):
    return pearson(ranks(xs), ranks(ys))


def pearson(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def table2(rows):
    md = ("Paper 003 Table 2: read-replace-dirty (RRD) and write-overwrite-clean (WOC) per NVRAM share, "
          "Read Volatile (RV) and Read Global (RG); the paper's TPC-C numbers first, then ours per trace.\n\n"
          "Paper (TPC-C, 169 MB cache, DiskSim):\n\n")
    header = ["NVRAM %", "RV RRD", "RV WOC", "RG RRD", "RG WOC", "RRD diff", "WOC diff"]
    md += markdown(header, [[s, *v, v[2] - v[0], v[3] - v[1]] for s, v in PAPER_TABLE2.items()])
    for label in TRACES:
        cache = pick(rows, trace=label, policy="Read Volatile", nvram_pct=10)["cache_pages"]
        body = []
        for s in SHARES:
            rv = pick(rows, trace=label, policy="Read Volatile", nvram_pct=s)
            rg = pick(rows, trace=label, policy="Read Global", nvram_pct=s)
            body.append([s, rv["rrd"], rv["woc"], rg["rrd"], rg["woc"], rg["rrd"] - rv["rrd"], rg["woc"] - rv["woc"]])
        md += f"\nOurs, {label} (cache {cache:,} pages of 4 KiB):\n\n" + markdown(header, body)
    return md


def sign(x, scale):
    return 0 if abs(x) <= 1e-3 * scale else (1 if x > 0 else -1)


def summary(rows):
    head = ["trace", "cache pages", "shares where RG hits more", "of those, RG slower",
            "shares where RG-RV response sign = disk accesses sign", "= sign of fewer hits",
            "Spearman(response, disk accesses)", "Spearman(response, misses)",
            "RV / RG at 50 %: response s", "disk accesses", "hits", "ms per disk I/O"]
    body = []
    for label in TRACES:
        pts = [r for r in rows if r["trace"] == label and r["policy"] in POLICIES.values()]
        more = slower = agree_disk = agree_hits = differ = 0
        for s in SHARES:
            rv = pick(rows, trace=label, policy="Read Volatile", nvram_pct=s)
            rg = pick(rows, trace=label, policy="Read Global", nvram_pct=s)
            if rg["hits"] > rv["hits"]:
                more += 1
                slower += rg["response_s"] > rv["response_s"]
            d_resp = sign(rg["response_s"] - rv["response_s"], rv["response_s"])
            if d_resp == 0:
                continue  # (the two runs took the same time: nothing to explain)
            differ += 1
            agree_disk += d_resp == sign(rg["disk_accesses"] - rv["disk_accesses"], 0)
            agree_hits += d_resp == sign(rv["hits"] - rg["hits"], 0)
        resp = [r["response_s"] for r in pts]
        rv = pick(rows, trace=label, policy="Read Volatile", nvram_pct=50)
        rg = pick(rows, trace=label, policy="Read Global", nvram_pct=50)
        body.append([label, rv["cache_pages"], more, slower, f"{agree_disk} / {differ}", f"{agree_hits} / {differ}",
                     spearman(resp, [r["disk_accesses"] for r in pts]), spearman(resp, [r["misses"] for r in pts]),
                     f"{rv['response_s']:,.1f} / {rg['response_s']:,.1f}",
                     f"{rv['disk_accesses']:,} / {rg['disk_accesses']:,}", f"{rv['hits']:,} / {rg['hits']:,}",
                     f"{1e3 * rv['response_s'] / rv['disk_io']:.2f} / {1e3 * rg['response_s'] / rg['disk_io']:.2f}"])
    md = ("Read Volatile (RV) versus Read Global (RG), NVRAM 10-90 % of a cache of a tenth of the footprint, "
          "each tier LRU, 7200 RPM disk. Response = disk service time during the run. The sign columns count, "
          "over the shares where RV and RG took different times, those where the faster policy is the one with "
          "fewer disk accesses (formula 1), and the one with more hits. Spearman = rank correlation over the 18 "
          "runs of a trace. ms per disk I/O = response / (disk reads + writes, read-for-write included): how much \
of a gap in response is the disk's position rather than the count (Read Global's read-replace-dirty puts a \
write-back between the page reads of a sequential read, each charged in turn).\n\n")
    md += markdown(head, body)
    md += "\nPer run (response = disk service time during the run, s; disk accesses = formula (1)):\n\n"
    cols = ["trace", "policy", "NVRAM %", "hit %", "read hit %", "hits", "RRD", "ROC", "WRD", "WOC",
            "disk accesses", "read-for-write", "response s", "exec s incl. drain"]
    md += markdown(cols, [[r["trace"], r["policy"], r["nvram_pct"], r["hit_pct"], r["read_hit_pct"], r["hits"],
                           r["rrd"], r["roc"], r["wrd"], r["woc"], r["disk_accesses"], r["read_for_write"],
                           r["response_s"], r["exec_s_with_drain"]] for r in rows])
    return md


def figure(plt, rows, key, ylabel, title, path, scale=1.0):
    n = len(TRACES)
    cols = 3
    fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(11, 3.0 * math.ceil(n / cols)))
    for ax, label in zip(axes.flat, TRACES):
        for pol, style in zip(POLICIES.values(), ("o-", "s--")):
            ys = [pick(rows, trace=label, policy=pol, nvram_pct=s)[key] * scale for s in SHARES]
            ax.plot(SHARES, ys, style, label=pol, markersize=3)
        base = pick(rows, trace=label, policy="LRU (DRAM only)")[key] * scale
        ax.axhline(base, color="grey", linewidth=0.8, linestyle=":", label="LRU, DRAM only")
        ax.set_title(label)
        ax.set_xlabel("NVRAM share (%)")
        ax.set_ylabel(ylabel)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)


def tracking(plt, rows, path):
    """Per trace, response time against disk accesses and against misses, normalised to their means."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for label in TRACES:
        pts = [r for r in rows if r["trace"] == label and r["policy"] in POLICIES.values()]
        mean = lambda k: sum(r[k] for r in pts) / len(pts)
        resp, disk, miss = mean("response_s"), mean("disk_accesses"), mean("misses")
        axes[0].scatter([r["disk_accesses"] / disk for r in pts], [r["response_s"] / resp for r in pts], s=8, label=label)
        axes[1].scatter([r["misses"] / miss for r in pts], [r["response_s"] / resp for r in pts], s=8, label=label)
    axes[0].set_xlabel("disk accesses, formula (1) / trace mean")
    axes[1].set_xlabel("misses / trace mean")
    for ax in axes:
        ax.set_ylabel("response time / trace mean")
    axes[0].legend(fontsize=7)
    fig.suptitle("Does response time follow disk accesses or misses? (18 runs per trace)")
    fig.tight_layout()
    fig.savefig(path)


def main():
    out = outdir("003")
    rows = runs()
    write_csv(out / "results.csv", rows)
    (out / "table2.md").write_text(table2(rows))
    (out / "summary.md").write_text(summary(rows))
    plt = pyplot()
    figure(plt, rows, "response_s", "disk time (s)", "Paper 003 Fig. 1: response time by NVRAM share",
           out / "fig1_response_time.png")
    figure(plt, rows, "hits", "page hits", "Paper 003 Fig. 2: hits by NVRAM share", out / "fig2_hits.png")
    figure(plt, rows, "disk_accesses", "disk accesses", "Paper 003 Fig. 3: disk accesses (formula 1) by NVRAM share",
           out / "fig3_disk_accesses.png")
    tracking(plt, rows, out / "fig_tracking.png")
    print((out / "summary.md").read_text().split("\nPer run")[0])
    print((out / "table2.md").read_text())


if __name__ == "__main__":
    main()
