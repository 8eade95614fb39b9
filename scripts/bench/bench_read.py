#!/usr/bin/env python3
"""Text-trace reading speed of ssdcache against libCacheSim's CSV reader, side by side in one run.

Inputs (generated once into bench-data/, seeded, reused by later runs):
  * an MSR-Cambridge CSV of --lines lines, one volume as in the real files:
    `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, e.g.
    `128166372003061629,hm,0,Write,3154132992,4096,1037` (filetime ticks rising by
    exponential gaps, Read/Write 35/65 %, 512-byte aligned offsets over 16 GiB with
    sequential runs, sizes 512 B-64 KiB);
  * an SPC (UMass Financial1 style) file of the same length:
    `ASU,LBA,Size,Opcode,Timestamp`, e.g. `3,4460830,3584,w,12.371583`
    (24 ASUs, LBAs in sectors, r/w 23/77 %, seconds with 6 decimals);
  * the .gz (gzip -6) and .zst (zstd -3) of both.

Each side runs as its own process. ssdcache's time is the whole process's wall
time (start-up, set-up and reading included), measured from here; libCacheSim's is
measured inside its process from the reader's creation to the end of `process_trace`,
so that Python's start-up and import (~0.15-0.3 s, the last line) are not charged to
it: the ratio errs against ssdcache, not for it. For every row the
two commands alternate A B A B ... --repeat times and the table shows the medians.

  ours         `ssdcache sim --trace F --format msr|spc --policy none --cache 1MiB`:
               parses every line into a request and runs it through the simulator's
               no-cache baseline (pages counted, no policy state).
  libCacheSim  PyPI `libcachesim`: `TraceReader(F, CSV_TRACE, ReaderInitParam)` with the
               columns given explicitly (no sniffing: delimiter ',', has_header=False set,
               numeric object ids), then `LRU(1).process_trace(reader)`: its C loop reads
               every line (getline + libcsv field callbacks, strtoull/atof per field),
               looks the object up and refuses to insert it (every object is larger than
               the 1-byte cache), so the policy's cost is one hash lookup per request.
               MSR: time=1, op=4, obj_id=5 (offset), obj_size=6; the hostname, disk and
               response-time columns are read and ignored. SPC: op=4, obj_id=2 (LBA),
               obj_size=3, time=5. The child checks it read --lines requests.

libCacheSim's CSV reader cannot read compressed files (it reads the path with
fopen/getline; its zstd support is for binary traces), so in the .gz and .zst rows
its column is its time on the PLAIN file: ours decompresses, it does not.

The Python interpreter and `import libcachesim` are part of libCacheSim's process;
the "start-up" line under the table gives each side's time on a one-line file, so the
fixed costs can be told apart from reading.

Usage: scripts/bench/bench_read.py [--lines 5M] [--repeat 5] [--formats msr,spc] [--codecs plain,gz,zst]
"""

import argparse
import os
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("SSDCACHE_BIN", ROOT / "target" / "release" / "ssdcache"))
DATA = ROOT / "bench-data"

# libCacheSim's 1-based CSV columns for each format: time, op, obj_id, obj_size
LCS_COLUMNS = {"msr": (1, 4, 5, 6), "spc": (5, 4, 2, 3)}

LCS_CHILD = r"""
import sys, time, libcachesim as lcs
t = time.perf_counter()
path, want = sys.argv[1], int(sys.argv[2])
time_f, op_f, id_f, size_f = map(int, sys.argv[3:7])
p = lcs.ReaderInitParam(has_header=False, has_header_set=True, delimiter=",",
                        obj_id_is_num=True, obj_id_is_num_set=True)
p.time_field, p.op_field, p.obj_id_field, p.obj_size_field = time_f, op_f, id_f, size_f
reader = lcs.TraceReader(path, lcs.TraceType.CSV_TRACE, p)
miss_ratio, _ = lcs.LRU(1).process_trace(reader)
got = reader.n_read_req - 1  # the last read finds the end of the file
if got != want or miss_ratio != 1.0:
    sys.exit(f"libCacheSim read {got} requests of {want} (miss ratio {miss_ratio})")
print(time.perf_counter() - t)
"""


def count(text: str) -> int:
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}
    t = text.strip().lower()
    return int(float(t[:-1]) * mult[t[-1]]) if t[-1] in mult else int(t)


def msr_lines(n: int, rng: random.Random):
    t = 128166372000000000
    off = 0
    sizes = [512, 1024, 4096, 4096, 4096, 8192, 16384, 32768, 65536]
    for _ in range(n):
        t += int(rng.expovariate(1 / 2000)) + 1
        size = rng.choice(sizes)
        off = off + size if rng.random() < 0.3 else rng.randrange(1 << 25) * 512
        op = "Read" if rng.random() < 0.35 else "Write"
        yield f"{t},hm,0,{op},{off},{size},{rng.randrange(100, 60000)}\n"


def spc_lines(n: int, rng: random.Random):
    t = 0.0
    sizes = [512, 1024, 2048, 3072, 3584, 4096, 4096, 8192, 16384]
    for _ in range(n):
        t += rng.expovariate(200)
        op = "r" if rng.random() < 0.23 else "w"
        yield f"{rng.randrange(24)},{rng.randrange(1 << 26)},{rng.choice(sizes)},{op},{t:.6f}\n"


def generate(fmt: str, n: int) -> pathlib.Path:
    plain = DATA / f"read-{fmt}-{n}.csv"
    if not plain.exists():
        print(f"generating {plain.name}", file=sys.stderr)
        lines = (msr_lines if fmt == "msr" else spc_lines)(n, random.Random(17))
        tmp = plain.with_suffix(".tmp")
        with open(tmp, "w") as f:
            batch = []
            for line in lines:
                batch.append(line)
                if len(batch) == 65536:
                    f.write("".join(batch))
                    batch.clear()
            f.write("".join(batch))
        tmp.rename(plain)
    for codec, cmd in (("gz", ["gzip", "-6", "-k", "-f"]), ("zst", ["zstd", "-3", "-q", "-k", "-f"])):
        packed = plain.with_name(f"{plain.name}.{codec}")
        if not packed.exists():
            print(f"compressing {packed.name}", file=sys.stderr)
            subprocess.run(cmd + [str(plain)], check=True)
    return plain


def wall(cmd: list, inner: bool = False) -> float:
    """Seconds `cmd` took: its whole process, or with `inner` the time it printed last."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE if inner else subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr.decode()}")
    return float(proc.stdout.split()[-1]) if inner else elapsed


def lcs_cmd(fmt: str, path: pathlib.Path, n: int) -> list:
    return [sys.executable, "-c", LCS_CHILD, str(path), str(n), *map(str, LCS_COLUMNS[fmt])]


def ours_cmd(fmt: str, path: pathlib.Path) -> list:
    return [str(BIN), "sim", "--trace", str(path), "--format", fmt, "--policy", "none", "--cache", "1MiB"]


def paired_medians(a: list, b: list, repeat: int, inner_a: bool = True) -> tuple[float, float]:
    """Median seconds of libCacheSim's `a` (inside its process unless not `inner_a`) and our `b`."""
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(wall(a, inner_a))
        tb.append(wall(b))
    return statistics.median(ta), statistics.median(tb)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()}, {model}, {os.cpu_count()} cores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", default="5M")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--formats", default="msr,spc")
    ap.add_argument("--codecs", default="plain,gz,zst")
    args = ap.parse_args()
    if not BIN.exists():
        sys.exit(f"{BIN} missing: cargo build --release -p ssdcache-cli (or set SSDCACHE_BIN)")
    DATA.mkdir(exist_ok=True)
    n = count(args.lines)
    print(f"{time.strftime('%Y-%m-%d', time.gmtime())}, {machine()}; {n:,} lines a file, "
          f"median of {args.repeat} alternating runs\n")
    print(f"{'file':<22} {'MiB':>7} {'libCacheSim req/s':>18} {'ssdcache req/s':>15} {'ratio':>6}")
    startup = []
    for fmt in args.formats.split(","):
        plain = generate(fmt, n)
        one = DATA / f"read-{fmt}-1.csv"
        one.write_text(next((msr_lines if fmt == "msr" else spc_lines)(1, random.Random(17))))
        startup.append((fmt, *paired_medians(lcs_cmd(fmt, one, 1), ours_cmd(fmt, one), args.repeat, inner_a=False)))
        for codec in args.codecs.split(","):
            path = plain if codec == "plain" else plain.with_name(f"{plain.name}.{codec}")
            lcs_t, ours_t = paired_medians(lcs_cmd(fmt, plain, n), ours_cmd(fmt, path), args.repeat)
            mib = path.stat().st_size / 2**20
            lcs_note = "" if codec == "plain" else "*"
            print(f"{fmt + ' ' + codec:<22} {mib:>7,.0f} {n / lcs_t:>17,.0f}{lcs_note:1} {n / ours_t:>15,.0f} "
                  f"{lcs_t / ours_t:>5.2f}x")
    print("\nreq/s: lines / median time (ssdcache: whole process; libCacheSim: its reader and process_trace, "
          "inside its process); ratio: libCacheSim time / ssdcache time")
    print("* libCacheSim cannot read compressed CSV: its time on the plain file")
    print("start-up (one-line file, median s): " + ", ".join(
        f"{fmt} libCacheSim {a:.3f} ssdcache {b:.3f}" for fmt, a, b in startup))


if __name__ == "__main__":
    main()
