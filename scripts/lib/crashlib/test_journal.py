"""Unit tests of the crash tests' oracle (journal.py) and sector records (records.py).

    python3 -m pytest -q scripts/lib/crashlib
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crashlib.journal import Journal, Oracle  # noqa: E402
from crashlib.records import BLOCK, SECTOR, SPB, Records  # noqa: E402

NBLOCKS = 8


def oracle(j: Journal, base=None, **kw) -> Oracle:
    base = base if base is not None else [0] * (NBLOCKS * SPB)
    return Oracle(base, SPB, j.sent, j.acked, j.durable, **kw)


# -- the journal ------------------------------------------------------------------------------

def test_a_sent_write_is_neither_acked_nor_durable():
    j = Journal()
    j.write_sent([1, 2], 5)
    assert j.sent == {1: [5], 2: [5]}
    assert j.acked == {} and j.durable == {}


def test_an_acknowledged_write_is_durable_only_with_fua():
    j = Journal()
    j.write_sent([1], 5)
    j.write_acked([1], 5, fua=False)
    assert j.acked == {1: 5} and j.durable == {}
    j.write_sent([2, 3], 6)
    j.write_acked([2, 3], 6, fua=True)
    assert j.durable == {2: 6, 3: 6}


def test_a_flush_covers_the_writes_acknowledged_before_it_was_sent():
    j = Journal()
    j.write_sent([1], 1)
    j.write_acked([1], 1, fua=False)
    mark = j.flush_sent()
    j.write_sent([2], 2)
    j.write_acked([2], 2, fua=False)  # acknowledged after the flush was sent: not covered
    assert j.durable == {}  # nothing is durable before the flush's reply
    j.flush_acked(mark)
    assert j.durable == {1: 1}
    j.flush_acked(j.flush_sent())
    assert j.durable == {1: 1, 2: 2}


def test_flush_replies_out_of_order():
    j = Journal()
    for b, g in [(1, 1), (2, 2), (1, 3)]:
        j.write_sent([b], g)
        j.write_acked([b], g, fua=False)
        if g == 2:
            early = j.flush_sent()
    late = j.flush_sent()
    j.flush_acked(late)
    assert j.durable == {1: 3, 2: 2}
    j.flush_acked(early)  # the older flush's reply after the newer one's changes nothing
    assert j.durable == {1: 3, 2: 2} and j.promoted == late


def test_durable_never_goes_back():
    j = Journal()
    j.write_sent([1], 7)
    j.write_acked([1], 7, fua=True)
    j.write_sent([1], 9)
    j.write_acked([1], 9, fua=False)
    j.flush_acked(j.flush_sent())
    assert j.durable == {1: 9}
    j.write_acked([1], 8, fua=True)  # (not possible in the workload: one request per block at a time)
    assert j.durable == {1: 9}


def test_a_live_read_expects_the_newest_acknowledged_write():
    j = Journal()
    assert j.expected_read(3, baseline=42) == 42
    j.write_sent([3], 50)
    assert j.expected_read(3, baseline=42) == 42  # sent, not acknowledged: no read was allowed in between
    j.write_acked([3], 50, fua=False)
    assert j.expected_read(3, baseline=42) == 50


# -- the oracle -------------------------------------------------------------------------------

def test_after_a_crash_a_sector_holds_its_floor_or_a_generation_sent_after_it():
    j = Journal()
    for g in (10, 11, 12, 13):
        j.write_sent([1], g)
        j.write_acked([1], g, fua=False)
        if g == 11:
            j.flush_acked(j.flush_sent())
    o = oracle(j)
    assert o.floor(1, 0) == (11, "durable")
    assert [g for g in (0, 10, 11, 12, 13, 14) if o.sector_ok(1, 0, g)] == [11, 12, 13]
    assert o.allowed(1, 0) == [11, 12, 13]


def test_a_block_not_made_durable_may_hold_its_baseline():
    j = Journal()
    j.write_sent([2], 4)
    base = [0] * (NBLOCKS * SPB)
    base[2 * SPB + 5] = 3  # a sector written by an earlier trial
    o = oracle(j, base)
    assert o.floor(2, 5) == (3, "baseline")
    assert o.sector_ok(2, 5, 3) and o.sector_ok(2, 5, 4)
    assert not o.sector_ok(2, 5, 0)  # older than the baseline
    assert not o.sector_ok(2, 4, 3)  # another sector's baseline


def test_a_block_not_written_must_hold_its_baseline_exactly():
    o = oracle(Journal())
    assert o.sector_ok(0, 0, 0)
    assert not o.sector_ok(0, 0, 1)
    assert o.block_facts(0, [0] * SPB) is None


def test_unreadable_sectors_are_violations():
    j = Journal()
    j.write_sent([1], 1)
    o = oracle(j)
    for what in ("all zeroes", "CRC mismatch (header says block 1 sector 0 gen 1)", "record of another run"):
        assert not o.sector_ok(1, 0, what)


def test_a_generation_of_another_block_is_a_violation():
    j = Journal()
    j.write_sent([1], 1)
    j.write_sent([2], 2)
    assert not oracle(j).sector_ok(1, 0, 2)


def test_after_a_clean_stop_every_acknowledged_write_is_required():
    j = Journal()
    j.write_sent([1], 1)
    j.write_acked([1], 1, fua=False)
    j.write_sent([1], 2)  # sent, never acknowledged
    assert oracle(j).sector_ok(1, 0, 0)
    clean = oracle(j, acked_durable=True)
    assert clean.floor(1, 0) == (1, "durable")
    assert not clean.sector_ok(1, 0, 0)
    assert clean.sector_ok(1, 0, 1) and clean.sector_ok(1, 0, 2)
    assert j.durable == {}  # the journal itself is left alone


def test_block_facts():
    j = Journal()
    j.write_sent([1], 1)
    j.write_acked([1], 1, fua=True)
    j.write_sent([1], 2)
    j.write_acked([1], 2, fua=False)
    o = oracle(j)
    assert o.block_facts(1, [2] * SPB) == {"torn": False, "newer_than_durable": True, "unflushed_lost": False}
    assert o.block_facts(1, [1] * SPB) == {"torn": False, "newer_than_durable": False, "unflushed_lost": True}
    assert o.block_facts(1, [1, 2] + [2] * (SPB - 2))["torn"]
    # a sector that failed its check (-1) is reported as such, not also as a lost write
    assert not o.block_facts(1, [-1] + [1] * (SPB - 1))["unflushed_lost"]


# -- the sabotage self-tests: each breaks the journal, and the oracle must notice -------------

def test_a_lost_write_journaled_durable_is_caught():
    j = Journal()
    j.write_sent([1], 1)  # never reaches the server
    j.sabotage_lose_write([1], 1)
    o = oracle(j)
    assert not o.sector_ok(1, 0, 0)  # the image still holds the baseline


def test_a_write_journaled_durable_early_is_caught_when_the_crash_loses_it():
    j = Journal()
    j.write_sent([1], 1)
    j.sabotage_early_durable([1], 1)
    o = oracle(j)
    assert not o.sector_ok(1, 0, 0)  # not flushed, lost by the crash: legal, but the journal says durable


# -- the sector records -----------------------------------------------------------------------

def test_records_round_trip():
    rec = Records(0x1234)
    buf = rec.blocks(5, 2, 77)
    assert len(buf) == 2 * BLOCK
    mv = memoryview(buf)
    for i in range(2):
        for s in range(SPB):
            assert rec.parse(mv, i * BLOCK + s * SECTOR, 5 + i, s) == 77


@pytest.mark.parametrize("damage, words", [
    (lambda b: b.__setitem__(slice(0, SECTOR), bytes(SECTOR)), "all zeroes"),
    (lambda b: b.__setitem__(100, b[100] ^ 1), "CRC mismatch"),
    (lambda b: b.__setitem__(slice(0, 8), b"XXXXXXXX"), "no record"),
])
def test_records_damage_is_named(damage, words):
    rec = Records(1)
    buf = rec.blocks(0, 1, 3)
    damage(buf)
    got = rec.parse(memoryview(buf), 0, 0, 0)
    assert isinstance(got, str) and words in got


def test_records_of_another_run_or_place_are_named():
    buf = Records(1).blocks(0, 1, 3)
    assert "another run" in Records(2).parse(memoryview(buf), 0, 0, 0)
    assert "misplaced" in Records(1).parse(memoryview(buf), 0, 1, 0)
    assert "misplaced" in Records(1).parse(memoryview(buf), SECTOR, 0, 0)
