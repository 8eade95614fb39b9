#!/usr/bin/python3
"""Can one client starve the others? The latency of a well-behaved client's
reads while another floods the server, for `ssdcache serve` and for nbdkit
(its `file` plugin) side by side in one run.

A benchmark, not a test: it prints numbers and fails only when something does
not work. Run with Debian's python3 (python3-libnbd lives there):

    scripts/bench/bench_flood.py [--seconds 5] [--rounds 2] [--flooders 4]

Per server (each serving a copy of the same 1 GiB file, ssdcache as a
write-back cache in front of it), the VICTIM (one connection, 4 KiB random
reads at queue depth 1, in its own process) measures each read's latency
while, in turn:

  alone        nobody else is connected;
  requests     FLOODERS processes, each one connection keeping 64 reads of
               1 MiB in flight (what a backup job does), as fast as the
               server answers;
  connections  FLOODERS processes opening TCP connections as fast as they
               can and never negotiating (they are held until the server
               closes them), about 2,000 per process;
  handshake    during the connection flood, a NEW victim connection is opened
               each round: the time to connect and negotiate is reported.

Rows: p50, p99 and max of the victim's read latency, its reads per second, and
for the flood rows the flooders' aggregate MiB/s and connections. Rounds
alternate which server goes first; figures are medians over rounds.
FLOOD_SERVE_ARGS adds flags to `ssdcache serve` (e.g. "--max-threads 64").
"""

import argparse
import multiprocessing as mp
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import nbd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SSDCACHE_BIN", os.path.join(ROOT, "target", "release", "ssdcache"))
DISK = 1 << 30
BLOCK = 4096
FLOOD_BLOCK = 1 << 20
FLOOD_DEPTH = 64


def victim(uri: str, seconds: float, out) -> None:
    """One connection, 4 KiB random reads at QD1; sends the latencies (s)."""
    h = nbd.NBD()
    h.connect_uri(uri)
    rng = random.Random(7)
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        off = rng.randrange(DISK // BLOCK) * BLOCK
        t = time.perf_counter()
        h.pread(BLOCK, off)
        lat.append(time.perf_counter() - t)
    h.shutdown()
    out.send(lat)


def request_flooder(uri: str, stop, out) -> None:
    """One connection keeping FLOOD_DEPTH reads of 1 MiB in flight; sends bytes read."""
    h = nbd.NBD()
    h.connect_uri(uri)
    rng = random.Random(os.getpid())
    done = 0
    bufs = [nbd.Buffer(FLOOD_BLOCK) for _ in range(FLOOD_DEPTH)]
    cookies = {}
    while not stop.is_set():
        for i, b in enumerate(bufs):
            if i not in cookies:
                off = rng.randrange(DISK // FLOOD_BLOCK) * FLOOD_BLOCK
                cookies[i] = h.aio_pread(b, off)
        h.poll(1)
        for i, c in list(cookies.items()):
            if h.aio_command_completed(c):
                del cookies[i]
                done += FLOOD_BLOCK
    out.send(done)
    os._exit(0)  # no orderly NBD shutdown: a flooder just leaves


def connection_flooder(host: str, port: int, stop, out) -> None:
    """Opens TCP connections as fast as it can and never negotiates; sends how many it opened."""
    held, opened = [], 0
    while not stop.is_set() and opened < 2000:
        try:
            s = socket.create_connection((host, port), timeout=2)
            held.append(s)
            opened += 1
        except OSError:
            time.sleep(0.01)
    stop.wait()
    out.send(opened)
    os._exit(0)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run_phase(phase: str, uri: str, host: str, port: int, seconds: float, flooders: int) -> dict:
    ctx = mp.get_context("fork")
    stop = ctx.Event()
    pipes, procs = [], []
    if phase in ("requests", "connections"):
        target = request_flooder if phase == "requests" else connection_flooder
        for _ in range(flooders):
            a, b = ctx.Pipe(False)
            args = (uri, stop, b) if phase == "requests" else (host, port, stop, b)
            p = ctx.Process(target=target, args=args)
            p.start()
            pipes.append(a)
            procs.append(p)
        time.sleep(1.0)  # let the flood build up
    row = {"phase": phase}
    if phase == "connections":
        t = time.perf_counter()
        h = nbd.NBD()
        h.connect_uri(uri)
        h.pread(BLOCK, 0)
        row["connect_s"] = time.perf_counter() - t
        h.shutdown()
    a, b = ctx.Pipe(False)
    v = ctx.Process(target=victim, args=(uri, seconds, b))
    v.start()
    lat = a.recv()
    v.join()
    stop.set()
    got = [p.recv() for p in pipes]
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    row.update(p50=percentile(lat, 0.5), p99=percentile(lat, 0.99), max=max(lat), iops=len(lat) / seconds)
    if phase == "requests":
        row["flood_mib_s"] = sum(got) / seconds / (1 << 20)
    if phase == "connections":
        row["flood_connections"] = sum(got)
    return row


def wait_listening(proc, err_path: str) -> str:
    for _ in range(500):
        with open(err_path) as f:
            for line in f.read().splitlines():
                if line.startswith("listening on "):
                    return line.split()[-1]
        if proc.poll() is not None:
            sys.exit(f"server exited: {open(err_path).read()}")
        time.sleep(0.02)
    sys.exit("server did not start")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, kind: str, work: str, image: str):
        self.kind = kind
        log = os.path.join(work, f"{kind}.log")
        if kind == "ssdcache":
            backing = os.path.join(work, "backing.img")
            cache = os.path.join(work, "cache.img")
            subprocess.run(["cp", "--reflink=auto", image, backing], check=True)
            subprocess.run([BIN, "create", cache, backing, "--size", "256MiB"], check=True, capture_output=True)
            cmd = [BIN, "serve", cache, backing, "--listen", "127.0.0.1:0", "--export", "disk",
                   "--max-connections", "256"] + os.environ.get("FLOOD_SERVE_ARGS", "").split()
            self.proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
            addr = wait_listening(self.proc, log)
            self.host, port = addr.rsplit(":", 1)
            self.port = int(port)
        else:
            copy = os.path.join(work, "nbdkit.img")
            subprocess.run(["cp", "--reflink=auto", image, copy], check=True)
            self.host, self.port = "127.0.0.1", free_port()
            cmd = ["nbdkit", "-f", "-i", self.host, "-p", str(self.port), "-e", "disk", "file", copy]
            self.proc = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
            for _ in range(500):
                try:
                    socket.create_connection((self.host, self.port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.02)
        self.uri = f"nbd://{self.host}:{self.port}/disk"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--flooders", type=int, default=4)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} missing: cargo build --release -p ssdcache-cli")
    phases = ["alone", "requests", "connections"]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench_flood.") as work:
        image = os.path.join(work, "image.img")
        with open(image, "wb") as f:
            chunk = os.urandom(1 << 20)
            for _ in range(DISK >> 20):
                f.write(chunk)
        print(f"{os.uname().machine}, {os.cpu_count()} cores; nbdkit {subprocess.run(['nbdkit', '--version'], capture_output=True, text=True).stdout.split()[-1]}")
        for rnd in range(args.rounds):
            order = ["ssdcache", "nbdkit"] if rnd % 2 == 0 else ["nbdkit", "ssdcache"]
            for kind in order:
                for phase in phases:
                    rundir = tempfile.mkdtemp(dir=work)
                    s = Server(kind, rundir, image)
                    try:
                        rows.setdefault((kind, phase), []).append(
                            run_phase(phase, s.uri, s.host, s.port, args.seconds, args.flooders))
                    finally:
                        s.stop()
                        subprocess.run(["rm", "-rf", rundir])
    print(f"victim: 4 KiB random reads at QD1 for {args.seconds:g} s; {args.flooders} flooders; "
          f"medians over {args.rounds} rounds")
    print(f"{'server':9} {'phase':12} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'reads/s':>8} {'flood':>14} {'connect ms':>10}")
    for kind in ["ssdcache", "nbdkit"]:
        for phase in phases:
            rs = rows[(kind, phase)]
            med = lambda k: statistics.median(r[k] for r in rs)
            flood = ""
            if phase == "requests":
                flood = f"{med('flood_mib_s'):.0f} MiB/s"
            elif phase == "connections":
                flood = f"{med('flood_connections'):.0f} conns"
            conn = f"{med('connect_s') * 1e3:.1f}" if phase == "connections" else ""
            print(f"{kind:9} {phase:12} {med('p50') * 1e3:8.3f} {med('p99') * 1e3:8.3f} {med('max') * 1e3:8.1f} "
                  f"{med('iops'):8.0f} {flood:>14} {conn:>10}")
    for phase in phases[1:]:
        ours = statistics.median(r["p99"] for r in rows[("ssdcache", phase)])
        peer = statistics.median(r["p99"] for r in rows[("nbdkit", phase)])
        print(f"{phase}: victim p99 ssdcache/nbdkit = {ours / peer:.2f}")


if __name__ == "__main__":
    main()
