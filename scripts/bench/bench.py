#!/usr/bin/env python3
"""Throughput and memory of ssdcache against libCacheSim, side by side, on several workloads in one run.

Each workload is a file in libCacheSim's oracleGeneral binary (unit-size keys, 4 KiB
objects), made on first use in bench-data/; both tools read that same file:

- zipf0.9: Zipf 0.9 over 1 M keys (--requests of them), cache at 10 % of the footprint;
- orm1, orm10: the real trace ../shared/traces/cache2k-orm-busy (5 M requests of an
  e-commerce ORM object cache, keys-u32be), converted with `ssdcache trace convert
  --to oracle-general`, cache at 1 % and 10 % of its footprint;
- zipf1.2: a high hit ratio, Zipf 1.2 over 1 M keys, cache at 10 %;
- scan: a scan-heavy mix, 60 % Zipf 0.9 over 1 M keys and 40 % a sequential scan
  over 1 M other keys, cache at 10 %.

libCacheSim (PyPI `libcachesim`, its C `process_trace`) and `ssdcache sim` each run as
their own process. ssdcache is timed as a whole process (start-up and trace reading
included); libCacheSim from its reader's creation to the end of `process_trace`, inside
its process, so that Python's own start-up and import (~0.15 s here) are not charged to
it: the ratio errs against us, not for us. Per workload it prints requests per second,
the ratio, both miss ratios, memory per cached page (a run with the real cache minus a
run with a 16-page cache, divided by the cache's pages — for libCacheSim from peak RSS,
for ssdcache from its exact peak heap, SSDCACHE_HEAP_STATS), our time per request
against our own LRU's in the same workload ("x lru"), and the floor: `--policy none`,
reading the trace and counting alone.

Every policy both tools have is run by default, then the rows only ssdcache can run
(OURS_ONLY: a parameter libCacheSim lacks; no ratio, not in the 5x count); the two
sides alternate, and each cell is the median of --repeat runs (wall-clock on a shared,
noisy machine: read the ratio, not the absolute numbers). Miss ratios must be equal for
every policy that runs the same algorithm on both sides (not NOT_SAME, not LeCaR, whose
draws are random): a difference is flagged with "!" and the script exits with status 1.
The closing lines count, per workload, the policies at 5x or more and the ghost-keeping
policies within 1.5x of our LRU's time. The first lines name the machine, the load
average, the libCacheSim version and the ssdcache commit; --markdown prints the tables
as Markdown.

Usage: scripts/bench/bench.py [--workloads zipf0.9,orm1,orm10,zipf1.2,scan] [--requests 5M]
                              [--repeat 3] [--policies lru,arc,...] [--markdown]
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
DATA = ROOT / "bench-data"
LCS_CLASS = {"lru": "LRU", "fifo": "FIFO", "clock": "Clock", "arc": "ARC", "lirs": "LIRS", "2q": "TwoQ", "s3fifo": "S3FIFO",
             "sieve": "Sieve", "slru": "SLRU", "lru-k": "LRUK", "mq": "MQ", "wtinylfu": "WTinyLFU", "lfu": "LFU",
             "lecar": "LeCaR", "clockpro": "ClockPro"}
# the ssdcache spec that runs the same algorithm as libCacheSim's class (see tests/agreement);
# lecar's miss ratios agree in distribution only (random draws), clockpro's are another
# reading of the paper (docs), so their miss columns differ; LFUDA is left out: the PyPI
# build of libCacheSim crashes in it (tests/agreement/test_reference_models.py)
ALIGNED = {"arc": "arc(variant=libcachesim)", "lirs": "lirs(variant=libcachesim)", "s3fifo": "s3fifo(variant=libcachesim)",
           "2q": "2q(variant=libcachesim)", "wtinylfu": "wtinylfu(variant=libcachesim)",
           "lecar": "lecar(variant=libcachesim)", "clockpro": "clockpro"}

# Classes named like one of ours that run another algorithm: the row is printed for
# what it is worth, but it is not a comparison of one algorithm's two implementations.
NOT_SAME = {"clockpro": "libCacheSim's ClockPro holds more pages than its size (it misses fewer times than Belady "
                        "allows: tests/agreement, test_libcachesim_clockpro_is_no_peer), so it is not CLOCK-Pro"}
# Rows libCacheSim has no counterpart for, run on our side only: a parameter its class lacks.
OURS_ONLY = {"lru-k(crp=10000)": "libCacheSim's LRUK has no correlated reference period (its only parameter is k): "
                                 "ours alone, to show what a large crp costs beside lru-k (its eviction was quadratic)"}
# The speed we hold ourselves to: this many times libCacheSim's requests per second.
GOAL = 5.0

LCS_CHILD = r"""
import sys, time, libcachesim as lcs
cls, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = time.perf_counter()
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
cache = getattr(lcs, cls)(size)
miss_ratio, _ = cache.process_trace(reader)
print(time.perf_counter() - t, miss_ratio)
"""


def count(text: str) -> int:
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}
    t = text.strip().lower()
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


def run_rss(cmd: list[str]) -> tuple[float, int, str, int]:
    """Runs cmd; returns wall seconds, its own peak RSS (wait4), stdout, and the
    peak heap ssdcache reports on stderr (0 for other programs)."""
    t = time.perf_counter()
    env = dict(os.environ, SSDCACHE_HEAP_STATS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{err.decode()}")
    heap = [int(l.split()[-1]) for l in err.decode().splitlines() if l.startswith("heap peak bytes:")]
    return wall, usage.ru_maxrss * 1024, out.decode(), heap[0] if heap else 0


def bench_trace(n: int, keys: int, alpha: str) -> tuple[pathlib.Path, int]:
    """The Zipf trace in bench-data (generated on first use) and its footprint in keys."""
    if not BIN.exists():
        sys.exit(f"{BIN} missing: cargo build --release -p ssdcache-cli")
    DATA.mkdir(exist_ok=True)
    trace = DATA / f"zipf{alpha}-{n}-{keys}.oracleGeneral.bin"
    if not trace.exists():
        spec = f"zipf(alpha={alpha},keys={keys},requests={n},seed=42)"
        print(f"generating {trace.name}: {spec}", file=sys.stderr)
        subprocess.run([BIN, "trace", "gen", spec, trace, "--to", "oracle-general"], check=True)
    info = json.loads(subprocess.run([BIN, "trace", "info", trace, "--format", "oracle-general", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    return trace, info["footprint_pages"]


TRACES = pathlib.Path(os.environ.get("SSDCACHE_TRACES", ROOT.parent / "shared" / "traces"))
ORM = TRACES / "cache2k-orm-busy" / "orm-busy.trace.xz"
# name -> (what it is, how to make it: a generator spec with {n} for the requests, or "orm"; cache share in %)
WORKLOADS = {
    "zipf0.9": ("Zipf 0.9 over 1 M keys", "zipf(alpha=0.9,keys=1000000,requests={n},seed=42)", 10),
    "orm1": ("cache2k orm-busy, real, 5 M requests", "orm", 1),
    "orm10": ("cache2k orm-busy, real, 5 M requests", "orm", 10),
    "zipf1.2": ("Zipf 1.2 over 1 M keys (high hit ratio)", "zipf(alpha=1.2,keys=1000000,requests={n},seed=42)", 10),
    "scan": ("60 % Zipf 0.9 over 1 M keys, 40 % a sequential scan over 1 M other keys",
             "mix(zipf(alpha=0.9,keys=1000000),scan(start=1000000,length=1000000),weights=60%/40%,requests={n},seed=42)",
             10),
}
# The policies that keep ghosts (or other extra history) beside their pages: the goal is each
# within GHOST_GOAL of our own LRU's time on the same workload.
GHOSTS = ("arc", "lirs", "2q", "s3fifo", "mq", "wtinylfu", "lecar")
GHOST_GOAL = 1.5
# Random draws on both sides: miss ratios agree in distribution only (tests/agreement).
RANDOM = {"lecar"}


def oracle_file(workload: str, n: int) -> pathlib.Path:
    """The workload's oracleGeneral file in bench-data, made on first use."""
    if not BIN.exists():
        sys.exit(f"{BIN} missing: cargo build --release -p ssdcache-cli")
    DATA.mkdir(exist_ok=True)
    recipe = WORKLOADS[workload][1]
    if recipe == "orm":
        path = DATA / "orm-busy.oracleGeneral.bin"
        cmd = [BIN, "trace", "convert", ORM, path, "--format", "keys-u32be", "--to", "oracle-general"]
    else:
        path = DATA / f"{workload}-{n}.oracleGeneral.bin"
        cmd = [BIN, "trace", "gen", recipe.format(n=n), path, "--to", "oracle-general"]
    if not path.exists():
        print(f"making {path.name}", file=sys.stderr)
        subprocess.run(cmd, check=True, capture_output=True)
    return path


def trace_info(trace: pathlib.Path) -> tuple[int, int]:
    """Requests and footprint (pages) of an oracleGeneral file."""
    info = json.loads(subprocess.run([BIN, "trace", "info", trace, "--format", "oracle-general", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    return info["requests"], info["footprint_pages"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="which workloads, in order")
    ap.add_argument("--requests", default="5M", help="requests of the synthetic workloads (orm has 5 M)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--policies", default=",".join([*LCS_CLASS, *OURS_ONLY]))
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = ap.parse_args()
    n_gen = count(args.requests)
    policies = args.policies.split(",")
    for policy in policies:
        if policy not in LCS_CLASS and policy not in OURS_ONLY:
            sys.exit(f"--policies: {policy!r} is not one both tools have ({', '.join(LCS_CLASS)}) "
                     f"nor one of ours alone ({', '.join(OURS_ONLY)})")
    workloads = args.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            sys.exit(f"--workloads: {w!r} is not one of {', '.join(WORKLOADS)}")
    print(machine())
    summary, mismatches = [], []
    for w in workloads:
        trace = oracle_file(w, n_gen)
        n, footprint = trace_info(trace)
        share = WORKLOADS[w][2]
        pages = -(-footprint * share // 100)  # rounded up, as --cache N% does
        print(f"\n## {w}: {WORKLOADS[w][0]}\ntrace: {trace.name}: {n:,} requests, footprint {footprint:,} keys;"
              f" cache {pages:,} pages ({share} %)")
        floor = statistics.median(run_rss(ours_cmd(trace, "none", pages))[0] for _ in range(args.repeat))
        print(f"floor: --policy none {n / floor:,.0f} req/s ({floor * 1e9 / n:.1f} ns/request: reading and counting)\n")
        ratios, times = bench_workload(trace, n, pages, policies, args, mismatches, w)
        same = {p: r for p, r in ratios.items() if p not in NOT_SAME}
        below = [f"{p} {r:.2f}x" for p, r in same.items() if r < GOAL]
        line = (f"{w}: ratio >= {GOAL:g}x: {len(same) - len(below)} of {len(same)} policies that run the same algorithm"
                + (f"; below: {', '.join(below)}" if below else ""))
        if "lru" in times:
            ghosts = {p: times[p] / times["lru"] for p in GHOSTS if p in times}
            slow = [f"{p} {r:.2f}x" for p, r in ghosts.items() if r > GHOST_GOAL]
            line += (f"; ghost-keeping within {GHOST_GOAL:g}x of our lru: {len(ghosts) - len(slow)} of {len(ghosts)}"
                     + (f" (over: {', '.join(slow)})" if slow else ""))
        summary.append(line)
    print("\nreq/s: median of", args.repeat, "alternating runs; ssdcache: whole process; libCacheSim: its reader and"
          " process_trace, without Python's start-up and import | B/page: (peak with the cache - peak with a 16-page cache)"
          " / cache pages; libCacheSim: RSS, ssdcache: heap | x lru: our time / our lru's time, same workload")
    for policy, why in NOT_SAME.items():
        if policy in policies:
            print(f"* {policy}: {why}")
    for policy, why in OURS_ONLY.items():
        if policy in policies:
            print(f"† {policy}: {why}")
    if "lecar" in policies:
        print("lecar: random draws on both sides, miss ratios agree in distribution only (not checked here)")
    print("\n".join(summary))
    if mismatches:
        print("! MISS RATIOS DIFFER for a policy that runs the same algorithm: " + "; ".join(mismatches))
        sys.exit(1)


def ours_cmd(trace: pathlib.Path, policy: str, pages: int) -> list:
    return [BIN, "sim", "--trace", trace, "--format", "oracle-general", "--policy", ALIGNED.get(policy, policy),
            "--cache", f"{pages * 4096}B", "--json"]


def lcs_cmd(trace: pathlib.Path, policy: str, pages: int) -> list:
    return [sys.executable, "-c", LCS_CHILD, LCS_CLASS[policy], str(pages * 4096), str(trace)]


def bench_workload(trace: pathlib.Path, n: int, pages: int, policies: list[str], args, mismatches: list[str],
                   workload: str) -> tuple[dict[str, float], dict[str, float]]:
    """One workload's table; returns the ratios and our median times, by policy."""
    cols = ["policy", "libCacheSim req/s", "ssdcache req/s", "ratio", "miss lcs", "miss ours", "B/page lcs",
            "B/page ours", "x lru"]
    widths = [19, 16, 7, 11, 10, 12, 12, 7]
    print(table_head(cols, widths, args.markdown))
    ratios, times = {}, {}
    for policy in policies:
        ours_only = policy in OURS_ONLY
        lcs_walls, our_walls = [], []
        rss_lcs = heap_ours = 0
        misses = set()
        for _ in range(args.repeat):  # alternating: each pair sees the same machine state
            if not ours_only:
                _, rss_lcs, out, _ = run_rss(lcs_cmd(trace, policy, pages))
                lcs_walls.append(float(out.split()[0]))
                lcs_miss = float(out.split()[1])
            wall, _, out, heap_ours = run_rss(ours_cmd(trace, policy, pages))
            our_walls.append(wall)
            misses.add(json.loads(out)["misses"])
        ours_miss = misses.pop() / n
        our_wall = times[policy] = statistics.median(our_walls)
        rel = f"{our_wall / times['lru']:.2f}x" if "lru" in times else "n/a"
        # baseline: a cache too small to matter (16 pages: some policies need a few pages per queue)
        _, _, _, base_ours = run_rss(ours_cmd(trace, policy, 16))
        per_ours = (heap_ours - base_ours) / (pages - 16)
        if ours_only:
            row = [policy + "†", "n/a", f"{n / our_wall:,.0f}", "n/a", "n/a", f"{ours_miss:.4f}", "n/a",
                   f"{per_ours:.1f}", rel]
            print(table_row(row, widths, args.markdown), flush=True)
            continue
        lcs_wall = statistics.median(lcs_walls)
        _, base_lcs, _, _ = run_rss(lcs_cmd(trace, policy, 16))
        per_lcs = (rss_lcs - base_lcs) / (pages - 16)
        ratios[policy] = lcs_wall / our_wall
        mark = "*" if policy in NOT_SAME else ""
        # equal miss counts: libCacheSim's ratio is its count / n as a double
        if policy not in NOT_SAME and policy not in RANDOM and round(lcs_miss * n) != round(ours_miss * n):
            mark += "!"
            mismatches.append(f"{workload} {policy}: {lcs_miss:.6f} against {ours_miss:.6f}")
        row = [policy + mark, f"{n / lcs_wall:,.0f}", f"{n / our_wall:,.0f}", f"{lcs_wall / our_wall:.2f}x",
               f"{lcs_miss:.4f}", f"{ours_miss:.4f}", f"{per_lcs:.1f}", f"{per_ours:.1f}", rel]
        print(table_row(row, widths, args.markdown), flush=True)
    return ratios, times


def table_row(cells: list[str], widths: list[int], markdown: bool) -> str:
    """One row: Markdown, or the first cell left-aligned and the others right-aligned to `widths`."""
    if markdown:
        return "| " + " | ".join(cells) + " |"
    return f"{cells[0]:<17}" + "".join(f"{c:>{w}}" for c, w in zip(cells[1:], widths))


def table_head(cols: list[str], widths: list[int], markdown: bool) -> str:
    head = table_row(cols, widths, markdown)
    return head + "\n|" + "|".join(["---"] + ["---:"] * (len(cols) - 1)) + "|" if markdown else head


def machine() -> str:
    """The machine, the peer's version and our commit: what a reader needs to weigh the table."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = 0.0
    import libcachesim
    now = datetime.datetime.now(datetime.timezone.utc)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return (f"machine: {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.release()}, "
            f"{platform.machine()}; {now:%Y-%m-%d %H:%M} UTC, load average {load}\n"
            f"peer: libcachesim {getattr(libcachesim, '__version__', '?')} (PyPI); ssdcache {commit or '?'}")


if __name__ == "__main__":
    main()
