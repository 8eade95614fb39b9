#!/usr/bin/python3
"""The verifying client of scripts/test/test_crash.sh (kill -9 crash trials of
`ssdcache serve`). Debian's /usr/bin/python3: stdlib + python3-libnbd only.

Every 512-byte sector of the export holds a self-describing record:

    magic "CRSHSECT" | block u32 | sector u16 | 0 u16 | generation u64 |
    run nonce u64 | 476 payload bytes (from the generation) | CRC-32 of the rest

(built and parsed by crashlib/records.py). A write of generation G to blocks b..b+k writes such records into each of
their sectors; generations are unique across the whole run, so a sector names
exactly the write that produced it. `prep` fills the whole image with
generation 0 before the cache is created, so even a never-written block is a
checkable record (a zeroed or misplaced sector is an error, not "initial
contents").

Subcommands (all state is in files the harness names):

  prep      write generation 0 everywhere into BACKING; create the state file
            (per-sector baseline generations, next generation, nonce).
  run       the workload of one trial, against the server, until the server
            dies or stops; then writes the journal (atomically: tmp, fsync,
            rename). This process sends the signals, in the way the harness
            chose (--kill), because it knows the moment: right after a burst
            of requests, N ms after SIGUSR1 or after the procedure's first
            metadata save (it watches CACHE's metadata region), after a FLUSH
            was sent, after `ssdcache flush` started, or SIGTERM. It is not
            itself killed, so its in-memory journal is exact; it is written
            once the connections are dead.
  verify    reads an image (the export, or a file) and checks every sector
            against state + journal; with --update-state the contents read
            become the new baseline.
  summary   totals of the stats lines the other subcommands appended.

The journal model (what was sent, what is durable, what a sector may legally
hold) is the oracle of the test, kept pure and unit-tested apart from this
workload: crashlib/journal.py (tests: crashlib/test_journal.py). The sector
records are built and parsed by crashlib/records.py.

kill -9 kills a process, not the machine: writes the server had already
handed to the kernel survive it even without a flush. So the test also counts
acknowledged-but-unflushed writes that did not survive (reported; a FAIL with
--strict), which catches a recovery that drops data whether or not it was
flushed.
"""

import argparse
import json
import os
import pickle
import random
import re
import select
import signal
import struct
import subprocess
import sys
import time
from array import array

from crashlib.journal import Journal, Oracle
from crashlib.records import BLOCK, GEN_AT, MAGIC, SECTOR, SPB, Records

CHUNK = 1 << 20  # verify reads
HIST = 20


def die(msg, code=1):
    print(f"FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def atomic_write(path, data):
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def save(path, obj):
    atomic_write(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def append_stats(path, kind, **kv):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"kind": kind, **kv}) + "\n")


# ----------------------------------------------------------------------------
# prep


def cmd_prep(a):
    size = os.path.getsize(a.backing)
    if size % BLOCK:
        die(f"{a.backing}: size {size} is not a multiple of {BLOCK}")
    nblocks = size // BLOCK
    rec = Records(a.nonce)
    with open(a.backing, "r+b") as f:
        step = CHUNK // BLOCK
        for first in range(0, nblocks, step):
            n = min(step, nblocks - first)
            f.seek(first * BLOCK)
            f.write(rec.blocks(first, n, 0))
        f.flush()
        os.fsync(f.fileno())
    state = {
        "nonce": a.nonce,
        "nblocks": nblocks,
        "base": array("Q", bytes(8 * nblocks * SPB)),
        "next_gen": 1,
        "trial": 0,
        # Measured durations (seconds, the last HIST of each) that time the
        # kills: "maint" SIGUSR1 -> procedure done, "copy" its update-bit
        # save -> done, "wb" `ssdcache flush`, "flush" an NBD flush.
        "hist": {"maint": [], "copy": [], "wb": [], "flush": []},
    }
    save(a.state, state)
    print(f"prep: {nblocks} blocks of generation 0 written to {a.backing}")


# ----------------------------------------------------------------------------
# run: the workload


class Conn:
    def __init__(self, nbd, uri, idx):
        self.h = nbd.NBD()
        self.h.set_handle_name(f"crash{idx}")
        self.h.connect_uri(uri)
        self.idx = idx
        self.inflight = {}  # cookie -> op
        self.sent = {}  # cookie -> monotonic time sent (--latency-log)
        self.dead = False


class Workload:
    def __init__(self, a, state):
        import nbd

        self.nbd = nbd
        self.a = a
        self.state = state
        self.rng = random.Random(a.seed)
        self.rec = Records(state["nonce"])
        self.base = state["base"]
        self.nblocks = state["nblocks"]
        self.gen = state["next_gen"]
        self.seg_blocks = a.segment // BLOCK
        nsegs = self.nblocks // self.seg_blocks
        # Most of the hot set is fixed for the run (from the nonce), so PWC keeps
        # it cached across trials; `hot_drift` segments of it change every trial
        # (from the trial's seed), so each procedure has segments to copy in
        # and others to evict.
        fixed = random.Random(state["nonce"] ^ 0x5EED).sample(range(nsegs), min(a.hot_segments, nsegs))
        drift = min(a.hot_drift, len(fixed))
        self.hot = fixed[: len(fixed) - drift] + self.rng.sample(range(nsegs), drift)
        self.conns = [Conn(nbd, a.uri, i) for i in range(a.connections)]
        if a.connections > 1 and not all(c.h.can_multi_conn() for c in self.conns):
            die("the export does not advertise multi-conn: a flush would not cover the other connection")
        if not all(c.h.can_flush() and c.h.can_fua() for c in self.conns):
            die("the export does not advertise FLUSH and FUA")
        if self.conns[0].h.get_size() != self.nblocks * BLOCK:
            die(f"export size {self.conns[0].h.get_size()} != {self.nblocks * BLOCK}")
        self.journal = Journal()  # the oracle's record of this trial (crashlib/journal.py)
        self.busy = set()  # blocks with a request in flight
        self.excluded = set()  # blocks the sabotage must not touch again
        self.violations = []  # live read-back mismatches
        self.st = dict(
            writes_sent=0, writes_acked=0, fua_acked=0, flushes_sent=0, flushes_acked=0,
            reads_checked=0, multi_block_writes=0, maint_requested=0, maint_done=0, newly_cached=0,
            writebacks_started=0, writebacks_done=0, errors_after_stop=0, unsent_sabotaged=0,
            request_errors=0, maint_failures=0, writeback_failures=0,
        )  # fmt: skip
        # --latency-log: "unix_time latency_s op" per completed request
        self.lat_log = open(a.latency_log, "a") if getattr(a, "latency_log", None) else None
        self.flush_times = []
        self.maint_times = []
        self.maint_pending_since = None
        self.err_f = open(a.server_err, "rb")
        self.err_buf = b""
        self.maint_lines = 0
        self.maint_failed = None
        self.stopping = False  # SIGKILL / SIGTERM sent: issue nothing (after the term grace)
        self.stop_issue_at = None
        self.kill_info = {}
        self.sabotage_done = False
        # The metadata region of CACHE: the procedure's first change to it is
        # its save with the update bit set (Fig. 5 line 5), after its write-back.
        self.meta_fd = None
        if a.meta_range:
            lo, hi = (int(x) for x in a.meta_range.split(":"))
            self.meta_fd, self.meta_at, self.meta_len = os.open(a.cache, os.O_RDONLY), lo, hi - lo
        self.maint_meta = None  # (snapshot at SIGUSR1, time it changed)
        self.copy_times = []  # update-bit save -> procedure done
        self.wb_proc = None  # a running `ssdcache flush CACHE` (write back over the control socket)
        self.wb_started = None
        self.wb_times = []

    # -- server stderr: maintenance completions --------------------------------

    def poll_err(self):
        data = self.err_f.read()
        if data:
            self.err_buf += data
            *lines, self.err_buf = self.err_buf.split(b"\n")
            for ln in lines:
                if b"maintenance:" in ln:
                    self.maint_lines += 1
                    m = re.search(rb"maintenance: (\d+) segment", ln)
                    self.st["newly_cached"] += int(m.group(1)) if m else 0
                    self.st["maint_done"] += 1
                    if self.maint_pending_since is not None:
                        self.maint_times.append(time.monotonic() - self.maint_pending_since)
                        self.maint_pending_since = None
                    if self.maint_meta and self.maint_meta[1] is not None:
                        self.copy_times.append(time.monotonic() - self.maint_meta[1])
                    self.maint_meta = None
                if b"maintenance failed" in ln or b"panicked" in ln:
                    self.maint_failed = ln.decode(errors="replace")
                if b"maintenance failed" in ln:
                    self.maint_lines += 1  # answered (--allow-errors goes on)

    def maint_pending(self):
        return self.st["maint_requested"] > self.maint_lines

    def meta_snapshot(self):
        return os.pread(self.meta_fd, self.meta_len, self.meta_at) if self.meta_fd is not None else None

    def watch_meta(self):
        """Notes when a pending procedure first changed the metadata; True once it has."""
        if self.maint_meta is None or self.meta_fd is None:
            return False
        if self.maint_meta[1] is None and self.meta_snapshot() != self.maint_meta[0]:
            self.maint_meta = (self.maint_meta[0], time.monotonic())
        return self.maint_meta[1] is not None

    def request_maint(self):
        self.maint_meta = (self.meta_snapshot(), None)
        os.kill(self.a.server_pid, signal.SIGUSR1)
        self.st["maint_requested"] += 1
        self.maint_pending_since = time.monotonic()

    def start_writeback(self):
        self.wb_proc = subprocess.Popen(
            [self.a.bin, "flush", self.a.cache], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.wb_started = time.monotonic()
        self.st["writebacks_started"] += 1

    def poll_writeback(self):
        """Reaps a finished `ssdcache flush`; True if one is still running."""
        if self.wb_proc is None:
            return False
        if self.wb_proc.poll() is None:
            return True
        out = self.wb_proc.stdout.read().decode(errors="replace").strip()
        if self.wb_proc.returncode == 0:
            self.st["writebacks_done"] += 1
            self.wb_times.append(time.monotonic() - self.wb_started)
        elif self.a.allow_errors and not self.stopping:
            self.st["writeback_failures"] += 1
        elif not self.stopping:
            die(f"trial {self.a.trial}: `ssdcache flush` failed (exit {self.wb_proc.returncode}): {out}")
        self.wb_proc = None
        return False

    # -- issuing -----------------------------------------------------------------

    def live(self):
        return [c for c in self.conns if not c.dead]

    def pick_blocks(self, n):
        for _ in range(64):
            if self.rng.random() < self.a.hot_fraction:
                seg = self.rng.choice(self.hot)
                b = seg * self.seg_blocks + self.rng.randrange(self.seg_blocks)
            else:
                b = self.rng.randrange(self.nblocks)
            b = min(b, self.nblocks - n)
            blocks = range(b, b + n)
            if not any(x in self.busy or x in self.excluded for x in blocks):
                return blocks
        return None

    def issue_write(self, c):
        n = 1
        if self.rng.random() < 0.08:
            n = self.rng.randint(2, 4)
        # Sometimes straddle a segment boundary on purpose (cached + uncached halves).
        if n > 1 and self.rng.random() < 0.5:
            seg = self.rng.choice(self.hot) if self.rng.random() < 0.5 else self.rng.randrange(1, self.nblocks // self.seg_blocks)
            b = max(seg * self.seg_blocks - self.rng.randint(1, n - 1), 0)
            blocks = range(b, b + n) if not any(x in self.busy or x in self.excluded for x in range(b, b + n)) else None
        else:
            blocks = self.pick_blocks(n)
        if blocks is None:
            return False
        gen = self.gen
        self.gen += 1
        fua = self.rng.random() < self.a.fua_fraction
        data = self.rec.blocks(blocks[0], len(blocks), gen)
        self.journal.write_sent(blocks, gen)  # the journal first
        for b in blocks:
            self.busy.add(b)
        self.st["writes_sent"] += 1
        if len(blocks) > 1:
            self.st["multi_block_writes"] += 1
        if self.a.sabotage == "lose-write" and not self.sabotage_done and self.st["writes_sent"] > 200:
            # Checker self-test: claim a FUA write durable without sending it,
            # and never touch its blocks again (so nothing newer can hide it).
            self.sabotage_done = True
            self.st["unsent_sabotaged"] += 1
            for b in blocks:
                self.busy.discard(b)
                self.excluded.add(b)
            self.journal.sabotage_lose_write(blocks, gen)
            print(f"SABOTAGE: write of gen {gen} to block(s) {list(blocks)} not sent, journaled as FUA-durable", flush=True)
            return True
        buf = self.nbd.Buffer.from_bytearray(data)
        flags = self.nbd.CMD_FLAG_FUA if fua else 0
        cookie = c.h.aio_pwrite(buf, blocks[0] * BLOCK, flags=flags)
        c.inflight[cookie] = ("w", blocks, gen, fua, buf)
        c.sent[cookie] = time.monotonic()
        if self.a.sabotage == "early-durable":
            # Checker self-test: journal the write durable when it is sent, not
            # when a flush reply covers it.
            self.journal.sabotage_early_durable(blocks, gen)
        return True

    def issue_flush(self, c):
        mark = self.journal.flush_sent()
        cookie = c.h.aio_flush()
        c.inflight[cookie] = ("f", mark, time.monotonic())
        c.sent[cookie] = time.monotonic()
        self.st["flushes_sent"] += 1
        return cookie

    def issue_read(self, c):
        blocks = self.pick_blocks(1)
        if blocks is None:
            return False
        b = blocks[0]
        self.busy.add(b)
        buf = self.nbd.Buffer(BLOCK)
        cookie = c.h.aio_pread(buf, b * BLOCK)
        c.inflight[cookie] = ("r", b, buf)
        c.sent[cookie] = time.monotonic()
        return True

    def top_up(self):
        for c in self.live():
            while len(c.inflight) < self.a.queue_depth:
                r = self.rng.random()
                if r < self.a.flush_fraction:
                    self.issue_flush(c)
                elif r < self.a.flush_fraction + 0.04:
                    if not self.issue_read(c):
                        break
                elif not self.issue_write(c):
                    break

    # -- completions -------------------------------------------------------------

    def complete(self, c, cookie):
        self.last_progress = time.monotonic()
        op = c.inflight.pop(cookie)
        sent = c.sent.pop(cookie, None)
        if self.lat_log is not None and sent is not None:
            self.lat_log.write(f"{time.time():.3f} {time.monotonic() - sent:.6f} {op[0]}\n")
        try:
            ok = c.h.aio_command_completed(cookie)
            if not ok:
                die(f"trial {self.a.trial}: libnbd reported command {cookie} completed, then still in flight")
        except self.nbd.Error as e:
            ok = False
            if self.stopping or c.h.aio_is_dead() or c.h.aio_is_closed():
                self.st["errors_after_stop"] += 1
            elif self.a.allow_errors:
                # Injected device errors (soak): a failed write may or may not
                # have landed (the journal has it as sent), a failed flush
                # makes nothing durable, a failed read checks nothing.
                self.st["request_errors"] += 1
            else:
                die(f"trial {self.a.trial}: the server failed a {op[0]!r} request while running normally: {e}")
        kind = op[0]
        if kind == "w":
            _, blocks, gen, fua, _ = op
            for b in blocks:
                self.busy.discard(b)
            if ok:
                self.st["writes_acked"] += 1
                self.journal.write_acked(blocks, gen, fua)
                if fua:
                    self.st["fua_acked"] += 1
        elif kind == "f":
            _, mark, t0 = op
            if ok:
                self.st["flushes_acked"] += 1
                self.flush_times.append(time.monotonic() - t0)
                self.journal.flush_acked(mark)
        elif kind == "r":
            _, b, buf = op
            self.busy.discard(b)
            if ok:
                self.check_read(b, buf.to_bytearray())

    def check_read(self, b, data):
        """A read of a block with nothing in flight returns its newest acknowledged write."""
        self.st["reads_checked"] += 1
        mv = memoryview(data)
        for s in range(SPB):
            want = self.journal.expected_read(b, self.base[b * SPB + s])
            got = self.rec.parse(mv, s * SECTOR, b, s)
            if got != want:
                self.violations.append(f"live read of block {b} sector {s}: found {got}, expected gen {want} (its newest acknowledged write)")

    def pump(self, timeout):
        """One round of the event loop over all connections."""
        nbd = self.nbd
        rl, wl, by_fd = [], [], {}
        for c in self.live():
            try:
                d = c.h.aio_get_direction()
                fd = c.h.aio_get_fd()
            except nbd.Error:
                self.reap(c)
                continue
            by_fd[fd] = c
            if d & nbd.AIO_DIRECTION_READ:
                rl.append(fd)
            if d & nbd.AIO_DIRECTION_WRITE:
                wl.append(fd)
        if not by_fd:
            return
        r, w, _ = select.select(rl, wl, [], timeout)
        for fd in r:
            c = by_fd[fd]
            try:
                c.h.aio_notify_read()
            except nbd.Error:
                pass
        for fd in w:
            c = by_fd[fd]
            try:
                c.h.aio_notify_write()
            except nbd.Error:
                pass
        for c in self.live():
            self.reap(c)

    def reap(self, c):
        while c.inflight:
            try:
                cookie = c.h.aio_peek_command_completed()
            except self.nbd.Error:
                cookie = -1
            if cookie <= 0:
                break
            self.complete(c, cookie)
        if c.h.aio_is_dead() or c.h.aio_is_closed():
            # Commands still listed never got a reply: they stay "sent".
            for op in c.inflight.values():
                if op[0] in ("w", "r"):
                    for b in op[1] if op[0] == "w" else [op[1]]:
                        self.busy.discard(b)
            c.inflight.clear()
            c.dead = True
            if not self.stopping:
                die(f"trial {self.a.trial}: connection {c.idx} died before the harness stopped the server")

    def inflight_writes(self):
        return sum(1 for c in self.conns for op in c.inflight.values() if op[0] == "w")

    # -- the kill ----------------------------------------------------------------

    def est(self, kind, default):
        """How long a `kind` took: one of the durations measured lately, so the
        kills spread over the range of what was seen (default if none yet)."""
        h = self.state["hist"][kind]
        return self.rng.choice(h) if h else default

    def kill(self):
        a = self.a
        info = self.kill_info
        info["mode"] = a.kill
        info["at"] = round(time.monotonic() - self.t0, 3)
        if a.kill == "wb":
            while self.poll_writeback():
                self.pump(0.005)
                self.top_up()
            est = self.est("wb", 0.01)
            # Under load its duration varies a lot: half the kills come early.
            delay = self.rng.uniform(0, 1.2 * est) if self.rng.random() < 0.5 else self.rng.uniform(0, min(est, 0.02))
            self.start_writeback()
            t = time.monotonic()
            while time.monotonic() - t < delay:
                self.pump(max(0.0, min(0.002, delay - (time.monotonic() - t))))
                self.top_up()
            info["delay_ms"] = round(delay * 1e3, 2)
            info["est_ms"] = round(est * 1e3, 2)
            info["in_wb"] = self.poll_writeback()
            self.poll_err()
            info["in_maint"] = self.maint_pending()
        elif a.kill == "maint":
            while self.maint_pending():  # let a running one finish: this kill aims at its own
                self.pump(0.005)
                self.top_up()
                self.poll_err()
                if time.monotonic() - self.t0 > a.duration + 30:
                    die(f"trial {a.trial}: a maintenance did not finish within 30 s")
            est = self.est("maint", 0.02)
            # The procedure writes back (update bit clear), saves with the
            # update bit set, copies in, saves again. Half the kills are timed
            # from SIGUSR1; the other half from the update-bit save, seen as
            # the first change of CACHE's metadata region.
            by_meta = self.meta_fd is not None and self.rng.random() < 0.5
            if by_meta:
                est = self.est("copy", 0.005)
            delay = self.rng.uniform(0, 1.3 * est * (a.meta_delay_scale if by_meta else 1.0))
            self.request_maint()
            t = time.monotonic()
            if by_meta:
                while not self.watch_meta() and self.maint_pending() and time.monotonic() - t < 10:
                    self.pump(0.0002)
                    self.top_up()
                    self.poll_err()
                info["meta_changed_ms"] = round((time.monotonic() - t) * 1e3, 2) if self.watch_meta() else None
                t = time.monotonic()
            while time.monotonic() - t < delay:
                self.pump(max(0.0, min(0.001, delay - (time.monotonic() - t))))
                self.top_up()
            self.poll_err()
            info["by_meta"] = by_meta
            info["delay_ms"] = round(delay * 1e3, 2)
            info["est_ms"] = round(est * 1e3, 2)
            info["in_maint"] = self.maint_pending()
        elif a.kill == "flush":
            c = self.live()[0] if self.live() else None
            if c is None:
                die(f"trial {a.trial}: no live connection to flush on")
            est = self.est("flush", 0.005)
            delay = self.rng.uniform(0, 1.2 * est)
            cookie = self.issue_flush(c)
            t = time.monotonic()
            while time.monotonic() - t < delay and cookie in c.inflight:
                self.pump(0.0005)
                self.top_up()  # writes keep racing with the flush
            info["delay_ms"] = round(delay * 1e3, 2)
            info["flush_replied_before_kill"] = cookie not in c.inflight
            self.poll_err()
            info["in_maint"] = self.maint_pending()
        else:
            self.poll_err()
            info["in_maint"] = self.maint_pending()
        # Fresh requests just handed to the socket: some will not have reached
        # the server when it dies.
        self.top_up()
        info["writes_in_flight"] = self.inflight_writes()
        self.stopping = True
        if a.kill == "term":
            os.kill(a.server_pid, signal.SIGTERM)
            self.stop_issue_at = time.monotonic() + 0.2  # keep sending during the drain for a moment
        else:
            os.kill(a.server_pid, signal.SIGKILL)
            self.stop_issue_at = time.monotonic()

    def run(self):
        a = self.a
        self.t0 = self.last_progress = time.monotonic()
        maint_at = sorted(self.rng.uniform(0.05, 0.9) * a.duration for _ in range(a.maint))
        wb_at = sorted(self.rng.uniform(0.05, 0.9) * a.duration for _ in range(a.writebacks))
        while True:
            now = time.monotonic() - self.t0
            self.poll_err()
            if self.maint_failed and a.allow_errors and "panicked" not in self.maint_failed:
                self.st["maint_failures"] += 1
                self.maint_failed = None
            elif self.maint_failed:
                die(f"trial {a.trial}: server: {self.maint_failed}")
            if not self.stopping:
                if maint_at and now >= maint_at[0] and not self.maint_pending():
                    maint_at.pop(0)
                    self.request_maint()
                if wb_at and now >= wb_at[0] and not self.poll_writeback():
                    wb_at.pop(0)
                    self.start_writeback()
                if now >= a.duration and not maint_at:
                    self.kill()
                    continue
            if not self.stopping or time.monotonic() < self.stop_issue_at:
                self.top_up()
            self.watch_meta()
            if not self.live():
                if self.wb_proc is not None:
                    self.wb_proc.wait()
                    self.poll_writeback()
                break
            self.pump(0.001 if self.maint_pending() else 0.01)
            if time.monotonic() - self.last_progress > 20 and not self.stopping:
                die(f"trial {a.trial}: no request completed for 20 s (server stalled?)")
            if now > a.duration + 60:
                die(f"trial {a.trial}: the server neither died nor stopped 60 s after it was told to")
        self.poll_err()
        return self.result()

    def result(self):
        hist = self.state["hist"]
        for k, new in (("maint", self.maint_times), ("copy", self.copy_times), ("wb", self.wb_times)):
            hist[k] = (hist[k] + new)[-HIST:]
        hist["flush"] = (hist["flush"] + self.rng.sample(self.flush_times, min(5, len(self.flush_times))))[-HIST:]
        return {
            "trial": self.a.trial,
            "nonce": self.state["nonce"],
            "next_gen": self.gen,
            "sent": self.journal.sent,
            "acked": self.journal.acked,
            "durable": self.journal.durable,
            "stats": self.st,
            "kill": self.kill_info,
            "violations": self.violations,
            "hist": self.state["hist"],
        }


def cmd_run(a):
    state = load(a.state)
    w = Workload(a, state)
    j = w.run()
    save(a.journal, j)
    st, k = j["stats"], j["kill"]
    extra = ""
    if k.get("mode") == "maint" and k.get("by_meta"):
        seen = k.get("meta_changed_ms")
        extra = (
            f", {k['delay_ms']} ms after the procedure's update-bit save "
            f"({'seen ' + str(seen) + ' ms after SIGUSR1' if seen is not None else 'NOT seen'}; copying in took {k['est_ms']} ms; "
            f"{'maintenance still running' if k['in_maint'] else 'maintenance finished'})"
        )
    elif k.get("mode") == "maint":
        extra = (
            f", {k['delay_ms']} ms after SIGUSR1 (a procedure took {k['est_ms']} ms; "
            f"{'maintenance still running' if k['in_maint'] else 'maintenance finished'})"
        )
    elif k.get("mode") == "wb":
        extra = (
            f", {k['delay_ms']} ms after `ssdcache flush` started (one took {k['est_ms']} ms; "
            f"{'write-back still running' if k['in_wb'] else 'write-back finished'})"
        )
    elif k.get("mode") == "flush":
        extra = f", {k['delay_ms']} ms after a FLUSH ({'its reply came first' if k['flush_replied_before_kill'] else 'unanswered'})"
    elif k.get("in_maint"):
        extra = " (maintenance running)"
    print(
        f"   workload: {st['writes_sent']} writes sent ({st['writes_acked']} acked, {st['fua_acked']} FUA, "
        f"{st['multi_block_writes']} multi-block), {st['flushes_acked']}/{st['flushes_sent']} flushes, "
        f"{st['reads_checked']} live reads checked, {st['maint_done']}/{st['maint_requested']} maintenance "
        f"({st['newly_cached']} segments newly cached), {st['writebacks_done']}/{st['writebacks_started']} write-backs; "
        f"{'SIGTERM' if k.get('mode') == 'term' else 'kill -9'} at {k.get('at')} s with "
        f"{k.get('writes_in_flight')} writes in flight{extra}",
        flush=True,
    )
    append_stats(a.stats, "run", trial=a.trial, **st, kill=k)
    if j["violations"]:
        for v in j["violations"][:20]:
            print(f"FAIL: trial {a.trial}: {v}", file=sys.stderr)
        die(f"trial {a.trial}: {len(j['violations'])} live read-back mismatch(es)")


# ----------------------------------------------------------------------------
# verify


def read_source(a, nbytes):
    """Yields (offset, bytes) chunks of the image to verify."""
    if a.file:
        with open(a.file, "rb") as f:
            if os.fstat(f.fileno()).st_size != nbytes:
                die(f"{a.file}: size {os.fstat(f.fileno()).st_size}, expected {nbytes}")
            for off in range(0, nbytes, CHUNK):
                yield off, f.read(min(CHUNK, nbytes - off))
    else:
        import nbd

        h = nbd.NBD()
        h.connect_uri(a.uri)
        if h.get_size() != nbytes:
            die(f"export size {h.get_size()}, expected {nbytes}")
        for off in range(0, nbytes, CHUNK):
            yield off, h.pread(min(CHUNK, nbytes - off), off)
        h.flush()  # the contents read become the baseline: make them durable
        h.shutdown()


def cmd_verify(a):
    state = load(a.state)
    nblocks, base = state["nblocks"], state["base"]
    rec = Records(state["nonce"])
    j = load(a.journal) if a.journal else None
    if j and j["nonce"] != state["nonce"]:
        die("journal and state are of different runs")
    oracle = Oracle(base, SPB, j["sent"] if j else {}, j["acked"] if j else {}, j["durable"] if j else {},
                    acked_durable=a.acked_durable)
    pre = None
    if a.pre:
        with open(a.pre, "rb") as f:
            pre = f.read()
    where = a.file or a.uri
    seg_blocks = a.segment // BLOCK
    new_base = array("Q", base)
    bad = []
    st = dict(blocks=0, written_blocks=0, from_ssd=0, torn=0, unflushed_lost=0, newer_than_durable=0)
    lost = []
    for off, data in read_source(a, nblocks * BLOCK):
        mv = memoryview(data)
        for i in range(len(data) // BLOCK):
            b = off // BLOCK + i
            st["blocks"] += 1
            found = []
            for s in range(SPB):
                o = i * BLOCK + s * SECTOR
                g = rec.parse(mv, o, b, s)
                if not oracle.sector_ok(b, s, g):
                    floor, what = oracle.floor(b, s)
                    bad.append(
                        f"block {b} (byte {b * BLOCK}, segment {b // seg_blocks}) sector {s}: found "
                        f"{'gen ' + str(g) if isinstance(g, int) else g}; allowed gens {oracle.allowed(b, s)} "
                        f"({what} {floor}, then sent after it)"
                    )
                    g = -1
                else:
                    new_base[b * SPB + s] = g
                found.append(g)
            facts = oracle.block_facts(b, found)
            if facts is not None:
                st["written_blocks"] += 1
                st["torn"] += facts["torn"]
                st["newer_than_durable"] += facts["newer_than_durable"]
                if facts["unflushed_lost"]:
                    st["unflushed_lost"] += 1
                    lost.append(f"block {b} (segment {b // seg_blocks}): acknowledged gen {oracle.acked[b]}, found {found}")
                if pre is not None:
                    pg = struct.unpack_from("<Q", pre, b * BLOCK + GEN_AT)[0] if pre[b * BLOCK : b * BLOCK + 8] == MAGIC else None
                    if pg is None or found[0] > pg:
                        st["from_ssd"] += 1
    label = f"trial {a.trial}" if a.trial else "final"
    if bad:
        for v in bad[:25]:
            print(f"FAIL: {label} ({where}): {v}", file=sys.stderr)
        if len(bad) > 25:
            print(f"FAIL: ... and {len(bad) - 25} more", file=sys.stderr)
        die(f"{label}: {len(bad)} sector(s) of {where} violate the durability model")
    if lost:
        for v in lost[:10]:
            print(f"{'FAIL' if a.strict else 'note'}: {label}: acknowledged (not flushed) write lost by kill -9: {v}", file=sys.stderr)
        if a.strict:
            die(f"{label}: {len(lost)} acknowledged write(s) lost (CRASH_STRICT)")
    print(
        f"   verify ({'file ' + os.path.basename(a.file) if a.file else 'export'}): {st['blocks']} blocks "
        f"({st['blocks'] * SPB} sectors) ok; {st['written_blocks']} written in the trial, "
        f"{st['newer_than_durable']} newer than their durable gen, {st['from_ssd']} recovered from the SSD, "
        f"{st['torn']} torn between sectors, {st['unflushed_lost']} acked-unflushed lost",
        flush=True,
    )
    append_stats(a.stats, "verify", trial=a.trial, source="file" if a.file else "export", **st)
    if a.update_state:
        state["base"] = new_base
        if j:
            state["next_gen"] = j["next_gen"]
            state["trial"] = j["trial"]
            state["hist"] = j["hist"]
        save(a.state, state)


# ----------------------------------------------------------------------------
# summary


def cmd_summary(a):
    runs, verifies = [], []
    with open(a.stats) as f:
        for ln in f:
            r = json.loads(ln)
            (runs if r["kind"] == "run" else verifies).append(r)

    def tot(rows, k):
        return sum(r.get(k, 0) for r in rows)

    kills = [r for r in runs if r["kill"].get("mode") != "term"]
    modes = {}
    for r in runs:
        modes[r["kill"].get("mode")] = modes.get(r["kill"].get("mode"), 0) + 1
    in_maint = sum(1 for r in kills if r["kill"].get("in_maint"))
    in_wb = sum(1 for r in kills if r["kill"].get("in_wb"))
    flush_unanswered = sum(1 for r in kills if r["kill"].get("mode") == "flush" and not r["kill"].get("flush_replied_before_kill"))
    exp = [r for r in verifies if r["source"] == "export"]
    out = {
        "trials": len(runs),
        "kill_modes": modes,
        "kills_with_maintenance_running": in_maint,
        "kills_with_a_flush_unanswered": flush_unanswered,
        "kills_with_a_control_write_back_running": in_wb,
        "writes_sent": tot(runs, "writes_sent"),
        "writes_acked": tot(runs, "writes_acked"),
        "fua_acked": tot(runs, "fua_acked"),
        "flushes_acked": tot(runs, "flushes_acked"),
        "live_reads_checked": tot(runs, "reads_checked"),
        "maintenance_runs": tot(runs, "maint_done"),
        "control_write_backs": tot(runs, "writebacks_done"),
        "writes_in_flight_at_kills": sum(r["kill"].get("writes_in_flight", 0) for r in kills),
        "blocks_verified": tot(verifies, "blocks"),
        "written_blocks_verified": tot(verifies, "written_blocks"),
        "blocks_recovered_from_ssd": tot(exp, "from_ssd"),
        "torn_blocks": tot(verifies, "torn"),
        "acked_unflushed_lost": tot(verifies, "unflushed_lost"),
        "request_errors": tot(runs, "request_errors"),
        "procedure_failures": tot(runs, "maint_failures"),
        "flush_command_failures": tot(runs, "writeback_failures"),
    }
    for k, v in out.items():
        print(f"   {k}: {v}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


# ----------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("prep")
    q.add_argument("--backing", required=True)
    q.add_argument("--state", required=True)
    q.add_argument("--nonce", type=int, required=True)
    q = sub.add_parser("run")
    q.add_argument("--uri", required=True)
    q.add_argument("--state", required=True)
    q.add_argument("--journal", required=True)
    q.add_argument("--stats")
    q.add_argument("--trial", type=int, required=True)
    q.add_argument("--seed", type=int, required=True)
    q.add_argument("--server-pid", type=int, required=True)
    q.add_argument("--server-err", required=True, help="the server's stderr file (-v): maintenance completions")
    q.add_argument("--segment", type=int, required=True)
    q.add_argument("--duration", type=float, required=True, help="seconds of workload before the kill")
    q.add_argument("--kill", choices=["timer", "maint", "flush", "wb", "term"], required=True)
    q.add_argument("--maint", type=int, default=0, help="SIGUSR1 maintenance runs during the workload")
    q.add_argument("--writebacks", type=int, default=0, help="`ssdcache flush` runs during the workload")
    q.add_argument("--bin", required=True, help="the ssdcache binary (for `ssdcache flush CACHE`)")
    q.add_argument("--cache", required=True)
    q.add_argument("--meta-range", help="START:END of CACHE's metadata region (`check`: metadata at, data at)")
    q.add_argument(
        "--meta-delay-scale", type=float, default=1.0,
        help="--kill maint timed from the update-bit save: scale the delay (e.g. 0.05 to aim at the gap between a save's copies)",
    )
    q.add_argument("--connections", type=int, default=2)
    q.add_argument("--queue-depth", type=int, default=8, help="requests in flight per connection")
    q.add_argument("--hot-segments", type=int, default=40)
    q.add_argument("--hot-drift", type=int, default=8, help="hot segments replaced every trial")
    q.add_argument("--hot-fraction", type=float, default=0.85)
    q.add_argument("--fua-fraction", type=float, default=0.08)
    q.add_argument("--flush-fraction", type=float, default=0.02)
    q.add_argument("--sabotage", choices=["lose-write", "early-durable"], help="checker self-test: break the journal on purpose")
    q.add_argument(
        "--allow-errors", action="store_true",
        help="soak with injected device errors: failed requests, procedures and `ssdcache flush` runs are counted, not fatal",
    )
    q.add_argument("--latency-log", help="append `unix_time latency_s op` per completed request to this file")
    q = sub.add_parser("verify")
    src = q.add_mutually_exclusive_group(required=True)
    src.add_argument("--uri")
    src.add_argument("--file")
    q.add_argument("--state", required=True)
    q.add_argument("--journal", help="the trial's journal (none: the image must equal the baseline exactly)")
    q.add_argument("--stats")
    q.add_argument("--trial", type=int, default=0)
    q.add_argument("--segment", type=int, required=True)
    q.add_argument("--pre", help="BACKING as it was before the restart (counts blocks recovered from the SSD)")
    q.add_argument("--acked-durable", action="store_true", help="after a clean stop: every acknowledged write must be there")
    q.add_argument("--strict", action="store_true", help="an acknowledged write lost by kill -9 is a FAIL")
    q.add_argument("--update-state", action="store_true", help="the contents read become the new baseline")
    q = sub.add_parser("summary")
    q.add_argument("--stats", required=True)
    q.add_argument("--json")
    a = p.parse_args()
    {"prep": cmd_prep, "run": cmd_run, "verify": cmd_verify, "summary": cmd_summary}[a.cmd](a)


if __name__ == "__main__":
    main()
