#!/usr/bin/env python3
"""Paper 004 (Jung, Kang & Cha, ABM: asymmetric buffer management for SSDs):
every ABM variant against LRU, CFLRU, LRU-WSR, FAB, CLC, ARC and LIRS —
hit ratio and execution time normalised to LRU (Fig. 6), write / extra-write /
erase cost (Figs. 7–9) and execution time (Figs. 10–12).

The paper's traces (GCC, Viewperf, Cscope system-call traces with writes) are
not available; the runs use the real traces in ../shared/traces that carry
writes. Each trace gets two buffer sizes, 10 % and 25 % of its footprint.
Execution time is the paper's cost model — reads, writes, extra (merge) writes
and erases, each count × its cost — on a log-block hybrid FTL (block-unit
write buffers pay off only against merges) with MLC_1 timings from paper 001
(read 85 µs, program 400 µs, erase 8.5 ms: erase ≫ write ≫ read, as paper 004
describes its SSD), 4 KiB pages and 64-page blocks to match the buffers' block
size.

Writes docs/reproductions/004/{results.csv, ablation.csv, p_series.csv, summary.md,
fig6_normalised.png, fig7_9_cost.png, fig10_12_time.png, p_over_time.png}.
"""

import pandas as pd

import ssdcache
from common import markdown, outdir, pyplot, reports, sweep, trace, trace_info, write_csv

DEVICE = "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB)"
# The same device sized to the touched pages and written once before the trace
# (REPRODUCTIONS.md, "Devices"): every touched page holds data, so merges start at once.
DEVICE_PRECONDITIONED = "ftl(type=hybrid,nand=mlc1,page=4KiB,block=256KiB,size=footprint,precondition=seq)"
BASELINES = ["lru", "cflru", "lru-wsr", "fab", "clc", "arc", "lirs"]
ABM = [f"abm(read={r},write={w})" for w in ("fab", "clc") for r in ("lru", "arc", "lirs")]
POLICIES = BASELINES + ABM
TRACES = {
    "CloudPhysics": "cloudphysics-io-libcachesim/cloudPhysicsIO.csv.gz",
    "MSR rw 20:80": "msr-cuts-heimdall/msr.cut.per_10k.rw_20_80.105.trace.gz",
    "MSR rw 40:60": "msr-cuts-heimdall/msr.cut.per_10k.rw_40_60.1370.trace.gz",
    "Financial1": "umass-fin1-ssdsim10k/Financial1-first10k.ssdsim.ascii.gz",
    "TPC-C": "tpcc-mqsim/tpcc-small.trace.gz",
    "SQLite WAL": "sqlite-wal-wiscsee/sqlitewal-update.blkevents.txt.gz",
}
SHARES = {"10%": 0.10, "25%": 0.25}
PAGE = 4096


def short(policy: str) -> str:
    if policy.startswith("abm("):
        parts = dict(kv.split("=") for kv in policy[4:-1].split(","))
        return f"ABM-{parts['read'].upper()}-{parts['write'].upper()}"
    return policy.upper()


def short_spec(policy: str) -> str:
    """ABM-R-W plus whatever else the spec sets (the ablations)."""
    if not policy.startswith("abm("):
        return short(policy)
    parts = dict(kv.split("=") for kv in policy[4:-1].split(","))
    rest = ",".join(f"{k}={v}" for k, v in parts.items() if k not in ("read", "write"))
    return short(policy) + (f" ({rest})" if rest else "")


def footprint_pages(path: str) -> int:
    return trace_info([path])["footprint_pages"]


def main():
    out = outdir("004")
    rows, frames = [], {}
    for label, rel in TRACES.items():
        path = trace(rel)
        fp = footprint_pages(path)
        for share_label, share in SHARES.items():
            # whole blocks of 64 pages, at least 4
            pages = max(4, round(fp * share / 64)) * 64
            df = sweep(path, POLICIES, f"{pages * PAGE}B", devices=DEVICE)
            frames[label, share_label] = df
            for r in reports(df):
                rows.append({
                    "trace": label, "share": share_label, "cache_pages": r["capacity_pages"], "policy": short(r["policy"]),
                    "hit_pct": 100 * r["hit_ratio"], "read_hit_pct": 100 * r["read_hit_ratio"],
                    "flash_reads": r["host_page_reads"], "flash_writes": r["host_page_writes"],
                    "extra_writes": r["extra_page_writes"], "erases": r["erases"],
                    "switch": r["switch_merges"], "partial": r["partial_merges"], "full": r["full_merges"],
                    "read_s": r["read_time_ns"] / 1e9, "write_s": r["write_time_ns"] / 1e9,
                    "extra_write_s": r["extra_write_time_ns"] / 1e9, "erase_s": r["erase_time_ns"] / 1e9,
                    "exec_s": r["execution_time_ns"] / 1e9,
                })
    write_csv(out / "results.csv", rows)
    names = [short(p) for p in POLICIES]

    def get(trace_label, share, name):
        return next(r for r in rows if r["trace"] == trace_label and r["share"] == share and r["policy"] == name)

    md = ""
    for share in SHARES:
        md += f"\nHit ratio and execution time normalised to LRU, buffer = {share} of the footprint\n\n"
        header = ["policy"] + [f"{t} hit" for t in TRACES] + [f"{t} time" for t in TRACES]
        table = []
        for n in names:
            table.append([n] + [get(t, share, n)["hit_pct"] / max(get(t, share, "LRU")["hit_pct"], 1e-9) for t in TRACES]
                         + [get(t, share, n)["exec_s"] / get(t, share, "LRU")["exec_s"] for t in TRACES])
        md += markdown(header, table)
        best = {t: min(names, key=lambda n: get(t, share, n)["exec_s"]) for t in TRACES}
        md += "\nFastest: " + "; ".join(f"{t}: {b}" for t, b in best.items()) + "\n"
    # Ablation on the largest trace: delay on/off x dynamic sizing on/off x
    # read rule, then the ghost rule for delayed pages (exit: our earlier
    # model), P's bounds, borrowing, and fixed splits; flash writes vs LRU.
    label = "CloudPhysics"
    path = trace(TRACES[label])
    pages = max(4, round(footprint_pages(path) * SHARES["25%"] / 64)) * 64
    grid = [f"abm(read={r},write=clc,delay={d},dynamic={y})"
            for r in ("lru", "arc", "lirs") for d in ("on", "off") for y in ("on", "off")]
    extra = ["abm(read=lru,write=clc,ghost=exit)", "abm(read=lru,write=clc,ghost=exit,delay=off)",
             "abm(read=lru,write=clc,min=5%)", "abm(read=lru,write=clc,min=1%)",
             "abm(read=arc,write=clc,min=1%)", "abm(read=lirs,write=clc,min=1%)",
             "abm(read=lru,write=clc,borrow=off)",
             "abm(read=lru,write=clc,dynamic=off,wsize=10%)", "abm(read=lru,write=clc,dynamic=off,wsize=90%)",
             "abm(read=lru,write=fab)", "abm(read=lru,write=fab,delay=off)"]
    variants = ["lru", "arc", "lirs", "fab", "clc"] + grid + extra
    abl = reports(sweep(path, variants, f"{pages * PAGE}B", devices=DEVICE))
    lru = abl[0]
    ablation_rows = []
    for r in abl:
        share = r.get("write_share_mean")
        ablation_rows.append({
            "spec": r["policy"], "hit_pct": 100 * r["hit_ratio"], "read_hit_pct": 100 * r["read_hit_ratio"],
            "mean_p_pct": None if share is None else 100 * share,
            "host_pages": r["host_page_writes"], "merge_copies": r["extra_page_writes"], "erases": r["erases"],
            "time_vs_lru": r["execution_time_ns"] / lru["execution_time_ns"],
        })
    write_csv(out / "ablation.csv", ablation_rows)
    md += (f"\nABM ablation ({label}, buffer {pages} pages = 25% of footprint): mean P = the write buffer's mean "
           "share; flash writes as host pages programmed, merge copies (extra page writes) and erases\n\n")
    md += markdown(["spec", "hit %", "read hit %", "mean P %", "host pages", "vs LRU", "merge copies", "erases",
                    "time / LRU"],
                   [[a["spec"], a["hit_pct"], a["read_hit_pct"], "—" if a["mean_p_pct"] is None else a["mean_p_pct"],
                     a["host_pages"], a["host_pages"] / lru["host_page_writes"], a["merge_copies"], a["erases"],
                     a["time_vs_lru"]] for a in ablation_rows])
    # P over time (10-minute intervals) for the model and its ablations.
    p_specs = ["abm(read=lru,write=clc)", "abm(read=arc,write=clc)", "abm(read=lru,write=clc,ghost=exit)",
               "abm(read=lru,write=clc,delay=off)"]
    p_df = sweep(path, p_specs, f"{pages * PAGE}B", devices=DEVICE, interval="10min")
    p_rows = []
    for spec, s in zip(p_specs, p_df.attrs["series"]):
        for b in s:
            p_rows.append({"spec": spec, "interval": b["interval"], "start_ns": b["start_ns"],
                           "write_share": b.get("write_share"), "hit_ratio": b["hit_ratio"]})
    write_csv(out / "p_series.csv", p_rows)
    md += f"\nP (write buffer share, %) per 10-minute interval ({label}, 25%)\n\n"
    n = max(len(s) for s in p_df.attrs["series"])
    md += markdown(["spec"] + [str(i + 1) for i in range(n)],
                   [[spec] + [100 * b["write_share"] for b in s] for spec, s in zip(p_specs, p_df.attrs["series"])])
    # Device sensitivity: the policies again at 25 % on the preconditioned device.
    pre = {}
    for label, rel in TRACES.items():
        path = trace(rel)
        pages = max(4, round(footprint_pages(path) * SHARES["25%"] / 64)) * 64
        pre[label] = {short(r["policy"]): r for r in reports(sweep(path, POLICIES, f"{pages * PAGE}B",
                                                                   devices=DEVICE_PRECONDITIONED))}
    md += (f"\nOn a page-exact, preconditioned device ({DEVICE_PRECONDITIONED}), buffer = 25% of the footprint: "
           "execution time normalised to LRU (LRU's own time in seconds in the last row)\n\n")
    md += markdown(["policy"] + list(TRACES),
                   [[n] + [pre[t][n]["execution_time_ns"] / pre[t]["LRU"]["execution_time_ns"] for t in TRACES]
                    for n in names]
                   + [["LRU time, s"] + [pre[t]["LRU"]["execution_time_ns"] / 1e9 for t in TRACES]])
    md += "\nFastest: " + "; ".join(
        f"{t}: {min(names, key=lambda n: pre[t][n]['execution_time_ns'])}" for t in TRACES) + "\n"
    (out / "summary.md").write_text(md)

    pyplot()
    share = "25%"
    df = pd.concat([frames[t, share] for t in TRACES], ignore_index=True)
    fig = ssdcache.plot.series(p_df, ("write_share", "hit_ratio"), x="time", labels=short_spec,
                               title="Paper 004 §3.3: P and hit ratio, CloudPhysics, 25%")
    fig.savefig(out / "p_over_time.png")
    fig = ssdcache.plot.normalised_bars(df, "lru", ("hit_ratio", "execution_time_ns"), labels=short,
                                        title="Paper 004 Fig. 6: hit ratio does not predict execution time "
                                              f"(normalised to LRU, buffer {share} of footprint)")
    fig.savefig(out / "fig6_normalised.png")
    for fname, read, title in [("fig7_9_cost.png", False, "Figs. 7–9: write, extra-write and erase cost"),
                               ("fig10_12_time.png", True, "Figs. 10–12: execution time")]:
        fig = ssdcache.plot.device_cost_bars(df, read=read, labels=short,
                                             title=f"Paper 004 {title}, buffer {share} of footprint")
        fig.savefig(out / fname)
    print(md)


if __name__ == "__main__":
    main()
