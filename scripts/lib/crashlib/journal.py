"""The oracle of the crash tests: what was sent, what is durable, what a sector may hold.

Pure bookkeeping — no I/O, no NBD, no clock — so that it can be unit-tested
(scripts/lib/crashlib/test_journal.py) apart from the workload that feeds it
(scripts/lib/crash_client.py).

The model. Every write carries a generation unique across the whole run. For
each block written in a trial the journal keeps:

  - sent:    every generation sent to it, recorded *before* the request is
             issued (a write not acknowledged may or may not have landed);
  - acked:   the newest acknowledged generation;
  - durable: the newest generation covered by a completed FLUSH (a flush
             covers the writes acknowledged before it was sent; the export
             advertises multi-conn, so a flush on either connection covers
             both) or by the acknowledgement of a FUA write. Promoted only on
             the reply, never before.

No two requests touching one block are in flight at once, so a block's
generations are acknowledged in the order sent. After a crash, sector s of
block b may hold the durable generation (or the baseline's, if none was made
durable in the trial) or any generation sent after it; anything else (older,
foreign, torn inside a sector, bad CRC) is a violation. After a clean stop
(``acked_durable``) every acknowledged write must be there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Union

# What the record parser found in a sector: a generation, or what is wrong with it.
Found = Union[int, str]


class Journal:
    """The live journal of one trial, fed by the workload as requests go and replies come."""

    def __init__(self) -> None:
        self.sent: dict[int, list[int]] = {}  # block -> [gen, ...], recorded before sending
        self.acked: dict[int, int] = {}  # block -> newest acknowledged gen
        self.durable: dict[int, int] = {}  # block -> newest gen covered by a completed flush / FUA
        self.ack_log: list[tuple[int, int]] = []  # (block, gen) in acknowledgement order
        self.promoted = 0  # ack_log[:promoted] are durable

    # -- the workload's events --------------------------------------------------

    def write_sent(self, blocks: Iterable[int], gen: int) -> None:
        """A write of `gen` to `blocks` is about to be sent (record it first)."""
        for b in blocks:
            self.sent.setdefault(b, []).append(gen)

    def write_acked(self, blocks: Iterable[int], gen: int, fua: bool) -> None:
        """The write of `gen` to `blocks` was acknowledged (a FUA write is durable now)."""
        for b in blocks:
            self.acked[b] = gen
            self.ack_log.append((b, gen))
            if fua:
                self.durable[b] = max(self.durable.get(b, 0), gen)

    def flush_sent(self) -> int:
        """A FLUSH is about to be sent; returns its mark: it covers the writes acknowledged so far."""
        return len(self.ack_log)

    def flush_acked(self, mark: int) -> None:
        """The FLUSH sent at `mark` completed: the writes acknowledged before it are durable."""
        for b, g in self.ack_log[self.promoted : mark]:
            if g > self.durable.get(b, 0):
                self.durable[b] = g
        self.promoted = max(self.promoted, mark)

    # -- checker self-tests: each breaks the model on purpose, and the checks must notice

    def sabotage_lose_write(self, blocks: Iterable[int], gen: int) -> None:
        """Journal a write that was never sent as acknowledged and FUA-durable."""
        for b in blocks:
            self.acked[b] = gen
            self.durable[b] = gen

    def sabotage_early_durable(self, blocks: Iterable[int], gen: int) -> None:
        """Journal a write durable when it is sent, not when a flush reply covers it."""
        for b in blocks:
            self.durable[b] = gen

    # -- what a live read must return -------------------------------------------

    def expected_read(self, block: int, baseline: int) -> int:
        """The generation a read of `block`, with nothing in flight on it, must find in a
        sector whose baseline generation is `baseline`: its newest acknowledged write."""
        return self.acked[block] if block in self.acked else baseline


class Oracle:
    """What an image may hold after a trial: the baseline (per sector, the generation each
    held before the trial) and the trial's journal (``sent``, ``acked``, ``durable``)."""

    def __init__(self, base: Sequence[int], sectors_per_block: int, sent: dict[int, list[int]] | None = None,
                 acked: dict[int, int] | None = None, durable: dict[int, int] | None = None, *,
                 acked_durable: bool = False) -> None:
        self.base = base
        self.spb = sectors_per_block
        self.sent = sent or {}
        self.acked = acked or {}
        self.durable = dict(durable or {})
        if acked_durable:  # a clean stop: every acknowledged write is durable
            for b, g in self.acked.items():
                self.durable[b] = max(self.durable.get(b, 0), g)

    def floor(self, block: int, sector: int) -> tuple[int, str]:
        """The oldest generation sector may hold, and what it is ("durable" or "baseline")."""
        d = self.durable.get(block)
        if d is not None:
            return d, "durable"
        return self.base[block * self.spb + sector], "baseline"

    def sector_ok(self, block: int, sector: int, found: Found) -> bool:
        """Whether a sector may legally hold `found`: its floor, or a generation sent after it."""
        if isinstance(found, str):
            return False
        floor, _ = self.floor(block, sector)
        if found == floor:
            return True
        gens = self.sent.get(block)
        return gens is not None and found > floor and found in gens

    def allowed(self, block: int, sector: int) -> list[int | str]:
        """The generations the sector may hold, for a message (shortened when long)."""
        floor, _ = self.floor(block, sector)
        gens = self.sent.get(block)
        allowed: list[int | str] = [floor] + ([x for x in gens if x > floor] if gens else [])
        if len(allowed) > 12:
            allowed = allowed[:6] + ["..."] + allowed[-5:]
        return allowed

    def block_facts(self, block: int, found: Sequence[int]) -> dict[str, bool] | None:
        """For a block written in the trial (else None), given the generation found in each of
        its sectors (-1 for a sector that failed its check): whether it is torn between sectors,
        newer than its durable generation, and an acknowledged write lost (acknowledged, not
        flushed: kill -9 kills a process, not the machine, so a recovery must keep it too)."""
        if self.sent.get(block) is None:
            return None
        d = self.durable.get(block)
        ack = self.acked.get(block)
        return {
            "torn": len(set(found)) > 1,
            "newer_than_durable": d is not None and max(found) > d,
            "unflushed_lost": ack is not None and min(found) != -1 and min(found) < ack,
        }
