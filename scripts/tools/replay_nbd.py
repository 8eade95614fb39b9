#!/usr/bin/python3
"""Replay a block trace through NBD, day by day, as fast as the server allows.

    replay_nbd.py URI TRACE [--qd 8] [--days 0-4] [--between CMD] [--status CMD] [--settle CMD] [--json]

TRACE is SSDsim/MQSim text, one request a line:
    time_ns dev lba_sectors size_sectors op      (op: 1 = read, 0 = write)
as `ssdcache trace gen SPEC FILE --to ssdsim` writes it (e.g. the paper-000
`desktop(...)` generator). A request's day is time_ns // 24 h. The device
column is ignored (one export); offsets are lba_sectors * 512. A request past
the end of the export is an error (generate the trace with disk= no larger
than the export).

Requests are issued in trace order with up to --qd of them in flight on one
connection (libnbd aio), ignoring the trace's timestamps: a closed loop that
measures throughput. Writes carry a fixed random pattern. Each day prints one
line: requests, reads, writes, MB moved, seconds, MB/s, IOPS, mean and p99
latency (submission to completion, ms). With --between CMD, CMD runs through
the shell after every day but the last (e.g. the cache's caching-and-eviction
procedure); its wall time is printed on its own line and not counted in any
day's throughput. With --status CMD, CMD (e.g. `ssdcache status --json`)
runs after every day, before --between, and again after --between; its output,
parsed as JSON if it is, is kept as "status" and "status_after_between" in
the --json records (not printed in the table). --json prints one JSON object
per day instead of the table (keys as in the table, "between_s" for the
command's time). With --settle CMD, requests go one at a time and CMD runs
after each until it exits 0 (e.g. until the server's background cleaner has
caught up: `sim` cleans between requests, so the replay then matches it).

Needs Debian's python3-libnbd (/usr/bin/python3) and nothing else.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import nbd

DAY_NS = 86_400 * 1_000_000_000
SECTOR = 512


def die(msg):
    print(f"FAIL: replay_nbd: {msg}", file=sys.stderr)
    sys.exit(1)


def parse_days(text):
    """'3' -> {3}; '0-4' -> {0..4}; '1,3' -> {1, 3}; None -> all."""
    if text is None:
        return None
    days = set()
    for part in text.split(","):
        a, sep, b = part.partition("-")
        try:
            lo = int(a)
            hi = int(b) if sep else lo
        except ValueError:
            die(f"--days {text!r}: expected N, A-B or a comma list of them")
        if lo < 0 or hi < lo:
            die(f"--days {text!r}: bad range {part!r}")
        days.update(range(lo, hi + 1))
    return days


def load(path, wanted):
    """Requests per day: {day: [(is_read, offset, length), ...]} in trace order."""
    by_day = {}
    try:
        f = open(path)
    except OSError as e:
        die(f"cannot open trace {path}: {e}")
    with f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 5:
                die(f"{path}:{n}: expected 'time_ns dev lba_sectors size_sectors op', got {line.strip()!r}")
            try:
                t, lba, size, op = int(fields[0]), int(fields[2]), int(fields[3]), int(fields[4])
            except ValueError:
                die(f"{path}:{n}: not integers: {line.strip()!r}")
            if size <= 0:
                continue
            day = t // DAY_NS
            if wanted is not None and day not in wanted:
                continue
            by_day.setdefault(day, []).append((op == 1, lba * SECTOR, size * SECTOR))
    return by_day


def settle(cmd):
    """Runs cmd until it exits 0 (every 2 ms, at most 20 s)."""
    t = time.perf_counter()
    while subprocess.run(cmd, shell=True).returncode != 0:
        if time.perf_counter() - t > 20:
            die(f"--settle command still failing after 20 s: {cmd}")
        time.sleep(0.002)


def replay_day(h, reqs, qd, size, pattern, settle_cmd=None):
    """Issues reqs with up to qd in flight; returns the day's numbers. With
    settle_cmd, one at a time, each followed by settle(settle_cmd)."""
    lat = []
    inflight = 0
    err = []
    bufs = {}  # read buffers in flight
    wbufs = {}

    def done(start, key, error):
        nonlocal inflight
        lat.append(time.perf_counter() - start)
        inflight -= 1
        bufs.pop(key, None)
        code = getattr(error, "value", error)  # libnbd passes the errno as a ctypes int
        if code:
            err.append(code)
        return 1  # retire the command

    i = 0
    n = len(reqs)
    t0 = time.perf_counter()
    while i < n or inflight:
        while i < n and inflight < qd:
            is_read, off, length = reqs[i]
            if off + length > size:
                die(f"request {off}+{length} past the end of the {size}-byte export (trace disk too big?)")
            start = time.perf_counter()
            key = i
            cb = (lambda s, k: lambda e: done(s, k, e))(start, key)
            if is_read:
                buf = nbd.Buffer(length)
                bufs[key] = buf
                h.aio_pread(buf, off, completion=cb)
            else:
                buf = wbufs.get(length)
                if buf is None:  # writes only read it: one shared buffer per length
                    buf = wbufs[length] = nbd.Buffer.from_bytearray(pattern[:length])
                h.aio_pwrite(buf, off, completion=cb)
            inflight += 1
            i += 1
        h.poll(-1)
        if settle_cmd and not inflight:
            settle(settle_cmd)
    secs = time.perf_counter() - t0
    if err:
        die(f"{len(err)} request(s) failed, first with errno {err[0]} ({os.strerror(err[0])})")
    reads = sum(1 for r in reqs if r[0])
    mb = sum(r[2] for r in reqs) / 1e6
    lat.sort()
    return {
        "requests": n,
        "reads": reads,
        "writes": n - reads,
        "mb": mb,
        "seconds": secs,
        "mb_per_s": mb / secs if secs > 0 else 0.0,
        "iops": n / secs if secs > 0 else 0.0,
        "mean_ms": 1000 * sum(lat) / len(lat) if lat else 0.0,
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else 0.0,
    }


def run_status(cmd, day):
    """Runs the --status command; its output as JSON if it parses, else text."""
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"--status command exited {p.returncode} after day {day}: {cmd}\n{p.stderr}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("uri", help="NBD URI, e.g. nbd://127.0.0.1:10809/disk")
    ap.add_argument("trace", help="SSDsim text trace (ssdcache trace gen ... --to ssdsim)")
    ap.add_argument("--qd", type=int, default=8, help="requests in flight (default 8)")
    ap.add_argument("--days", help="days to replay: N, A-B or a list (default: all)")
    ap.add_argument("--between", help="shell command run after each day but the last (timed apart)")
    ap.add_argument("--status", help="shell command run after each day (and after --between); output kept in --json")
    ap.add_argument(
        "--settle",
        help="shell command run after every request until it exits 0 (forces --qd 1; e.g. wait for the "
        "server's background cleaner to catch up, so a replay matches `sim`, which cleans between requests)",
    )
    ap.add_argument("--label", default="", help="prefix for every output line")
    ap.add_argument("--json", action="store_true", help="one JSON object per day")
    a = ap.parse_args()
    if a.qd < 1:
        die("--qd must be at least 1")

    by_day = load(a.trace, parse_days(a.days))
    if not by_day:
        die(f"no requests in {a.trace} for --days {a.days}")
    h = nbd.NBD()
    try:
        h.connect_uri(a.uri)
    except nbd.Error as e:
        die(f"cannot connect to {a.uri}: {e}")
    size = h.get_size()
    longest = max(r[2] for reqs in by_day.values() for r in reqs)
    pattern = bytearray(os.urandom(longest))

    days = sorted(by_day)
    if not a.json:
        print(f"{a.label}{'day':>4} {'requests':>8} {'reads':>6} {'writes':>6} {'MB':>8} {'seconds':>8} "
              f"{'MB/s':>7} {'IOPS':>7} {'mean ms':>8} {'p99 ms':>7}")
    for k, day in enumerate(days):
        r = replay_day(h, by_day[day], 1 if a.settle else a.qd, size, pattern, a.settle)
        r["day"] = day
        if a.status:
            r["status"] = run_status(a.status, day)
        between = None
        if a.between and k + 1 < len(days):
            t = time.perf_counter()
            p = subprocess.run(a.between, shell=True)
            between = time.perf_counter() - t
            if p.returncode != 0:
                die(f"--between command exited {p.returncode} after day {day}: {a.between}")
            r["between_s"] = between
            if a.status:
                r["status_after_between"] = run_status(a.status, day)
        if a.json:
            print(json.dumps(r), flush=True)
        else:
            print(f"{a.label}{day:>4} {r['requests']:>8} {r['reads']:>6} {r['writes']:>6} {r['mb']:>8.1f} "
                  f"{r['seconds']:>8.2f} {r['mb_per_s']:>7.2f} {r['iops']:>7.0f} {r['mean_ms']:>8.2f} "
                  f"{r['p99_ms']:>7.2f}", flush=True)
            if between is not None:
                print(f"{a.label}     between days {day} and {days[k + 1]}: {between:.2f} s (not counted)", flush=True)
    h.shutdown()


if __name__ == "__main__":
    main()
