"""Miss counts of the policies libCacheSim cannot check equal independent
transcriptions of their papers, written here in plain Python.

- LFUDA: libCacheSim's `LFUDA` crashes (segmentation fault) in PyPI
  libcachesim 0.3.5, so the reference is Arlitt et al.'s rule, by brute force:
  K = count + L, evict the smallest K (least recently keyed first), L = its K.
- CAR: libCacheSim's Python package has no CAR class (its C `CAR_init` departs
  from the paper, see car.rs); the reference is Figure 2 of Bansal & Modha
  (FAST'04), line by line. CAR is also checked to stay close to ARC.
- CLOCK-Pro: libCacheSim's `ClockPro` is no peer — it holds more pages than
  its size (on a loop it misses less than Belady, see the test below); the
  reference is Section 3 of Jiang, Chen & Zhang (USENIX ATC'05) with its hands
  walking the clock page by page (ssdcache's HAND_cold jumps), and the readings
  clockpro.rs documents (a referenced cold page out of its test period starts a
  new one at the head; the cold target starts at the whole cache, within 1..m,
  and moves on resident and non-resident cold pages alike, as the paper says).
- TinyLFU admission in front of LRU: libCacheSim has no TinyLFU admissioner;
  the reference is the TinyLFU paper's rule (Einziger, Friedman & Manes, TOS'17:
  admit a miss only if its estimate beats the victim's) over LRU, with the
  count-min sketch and doorkeeper transcribed from policy/sketch.rs, hashes
  and aging included (the estimates are approximate, so equality needs the
  same hashes).

Streams: the synthetic ones of test_libcachesim.py, shortened, and the first
real trace's page stream, at several cache sizes.
"""

import pathlib
from collections import OrderedDict

import numpy as np
import pytest

from conftest import TRACES_MISSING, have_traces, shared_traces, sim_json, ssdcache
from test_libcachesim import PAGE, SYNTHETIC, synthetic_keys


def lfuda_misses(keys, c: int) -> int:
    prio, stamp, count = {}, {}, {}
    age, clock, misses = 0, 0, 0
    for k in keys:
        clock += 1
        if k in prio:
            count[k] += 1
        else:
            misses += 1
            if len(prio) >= c:
                victim = min(prio, key=lambda q: (prio[q], stamp[q]))
                age = prio.pop(victim)
                del stamp[victim], count[victim]
            count[k] = 1
        prio[k], stamp[k] = count[k] + age, clock
    return misses


def car_misses(keys, c: int) -> int:
    t1, t2 = OrderedDict(), OrderedDict()  # page -> reference bit; first = head
    b1, b2 = OrderedDict(), OrderedDict()  # first = LRU
    p, misses = 0.0, 0

    def replace():
        while True:
            if len(t1) >= max(1.0, p):
                x, bit = t1.popitem(last=False)
                if not bit:
                    b1[x] = None
                    return
                t2[x] = False
            else:
                x, bit = t2.popitem(last=False)
                if not bit:
                    b2[x] = None
                    return
                t2[x] = False

    for x in keys:
        if x in t1:
            t1[x] = True
        elif x in t2:
            t2[x] = True
        else:
            misses += 1
            if len(t1) + len(t2) == c:
                replace()
                if x not in b1 and x not in b2:
                    if len(t1) + len(b1) == c:
                        b1.popitem(last=False)
                    elif len(t1) + len(t2) + len(b1) + len(b2) == 2 * c:
                        b2.popitem(last=False)
            if x not in b1 and x not in b2:
                t1[x] = False
            elif x in b1:
                p = min(p + max(1.0, len(b2) / len(b1)), c)
                del b1[x]
                t2[x] = False
            else:
                p = max(p - max(1.0, len(b1) / len(b2)), 0.0)
                del b2[x]
                t2[x] = False
    return misses


def clockpro_misses(keys, m: int) -> int:
    nxt, prv = {}, {}  # the clock, circular
    status = {}  # "hot", "cold" (resident), "test" (non-resident, in its test period)
    ref, in_test = {}, {}  # reference bit; a resident cold page's test period runs
    hand = {"hot": None, "cold": None, "test": None}
    count = {"hot": 0, "cold": 0, "test": 0}
    mc = m  # the cold target
    misses = 0

    def unlink(x):  # hands on x move on
        after = nxt[x] if nxt[x] != x else None
        for h in hand:
            if hand[h] == x:
                hand[h] = after
        if after is not None:
            before = prv[x]
            nxt[before], prv[after] = after, before
        del nxt[x], prv[x]

    def to_head(x):  # just behind HAND_hot: the last page it reaches
        if hand["hot"] is None:
            nxt[x] = prv[x] = x
            hand.update(hot=x, cold=x, test=x)
            return
        after = hand["hot"]
        before = prv[after]
        nxt[before], prv[x], nxt[x], prv[after] = x, before, after, x

    def end_test(x) -> bool:  # m_c shrinks, or grows if x was re-accessed; True if x left the clock
        nonlocal mc
        if status[x] == "test":
            count["test"] -= 1
            mc = max(1, mc - 1)
            unlink(x)
            del status[x], ref[x], in_test[x]
            return True
        if status[x] == "cold" and in_test[x]:
            in_test[x] = False
            mc = min(m, mc + 1) if ref[x] else max(1, mc - 1)
        return False

    def run_hot():
        while count["hot"] > m - mc:
            x = hand["hot"]
            if status[x] == "hot":
                if ref[x]:
                    ref[x] = False
                else:
                    status[x], in_test[x] = "cold", False
                    count["hot"] -= 1
                    count["cold"] += 1
                hand["hot"] = nxt[x]
            elif not end_test(x):
                hand["hot"] = nxt[x]

    def run_test():
        while count["test"] > m:
            x = hand["test"]
            if not end_test(x):
                hand["test"] = nxt[x]

    def run_cold():  # frees one resident page
        nonlocal mc
        while True:
            if count["cold"] == 0:  # all hot: HAND_hot demotes one
                kept, mc = mc, m
                run_hot()
                mc = kept
            x = hand["cold"]
            if status[x] != "cold":
                hand["cold"] = nxt[x]
                continue
            if ref[x]:
                ref[x] = False
                unlink(x)
                to_head(x)
                if in_test[x]:  # accessed in its test period: m_c grows
                    mc = min(m, mc + 1)
                    status[x], in_test[x] = "hot", False
                    count["cold"] -= 1
                    count["hot"] += 1
                    run_hot()
                else:
                    in_test[x] = True
                continue
            count["cold"] -= 1
            if in_test[x]:
                status[x] = "test"
                count["test"] += 1
                hand["cold"] = nxt[x]
                run_test()
            else:
                unlink(x)
                del status[x], ref[x], in_test[x]
            return

    for k in keys:
        if status.get(k) in ("hot", "cold"):
            ref[k] = True
            continue
        misses += 1
        if k in status:  # re-accessed in its test period: cold pages lost
            mc = min(m, mc + 1)
        while count["hot"] + count["cold"] >= m:
            run_cold()
        if k in status:  # still in its test period: comes back hot
            status[k], ref[k], in_test[k] = "hot", False, False
            count["test"] -= 1
            count["hot"] += 1
            unlink(k)
            to_head(k)
            run_hot()
        else:
            status[k], ref[k], in_test[k] = "cold", False, True
            count["cold"] += 1
            to_head(k)
    return misses


M64 = (1 << 64) - 1


def mix64(x: int) -> int:  # splitmix64's finaliser
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def tinylfu_lru_misses(keys, c: int) -> int:
    assert c <= 4096, "a bigger sketch grows as the cache fills; not transcribed"
    width = 1 << (max(c, 16) - 1).bit_length()
    door_bits = 1 << (max(c, 8) * 100 - 1).bit_length()
    counters = [0] * (4 * width)
    door = set()
    samples = 0

    def slots(k):
        return [r * width + (mix64(k ^ (((r + 1) * 0x9E3779B97F4A7C15) & M64)) & (width - 1)) for r in range(4)]

    def door_of(k):
        return [mix64((k + (i + 11) * 0xC2B2AE3D27D4EB4F) & M64) & (door_bits - 1) for i in range(3)]

    def estimate(k):
        return min(counters[s] for s in slots(k)) + all(b in door for b in door_of(k))

    def record(k):
        nonlocal samples, door
        if all(b in door for b in door_of(k)):
            for s in slots(k):
                counters[s] = min(15, counters[s] + 1)
        else:
            door.update(door_of(k))
        samples += 1
        if samples >= 10 * c:  # age: halve every count, empty the doorkeeper
            counters[:] = [v >> 1 for v in counters]
            door = set()
            samples //= 2

    lru = OrderedDict()  # first = least recent
    misses = 0
    for k in keys:
        record(k)
        if k in lru:
            lru.move_to_end(k)
            continue
        misses += 1
        if len(lru) >= c:
            victim = next(iter(lru))
            if estimate(k) <= estimate(victim):
                continue  # not admitted
            del lru[victim]
        lru[k] = None
    return misses


MODELS = {
    "lfuda": lfuda_misses,
    "car": car_misses,
    "clockpro": clockpro_misses,
    "admit(by=tinylfu,rule=lru)": tinylfu_lru_misses,
}


def compare(keys_file: pathlib.Path, keys: np.ndarray) -> list[str]:
    footprint = len(np.unique(keys))
    sizes = sorted({max(2, int(f * footprint)) for f in (0.01, 0.1, 0.4)} | {1, 3})
    reports = sim_json(
        "--trace", keys_file, "--format", "keys",
        "--policy", ",".join(MODELS) + ",arc", "--cache", ",".join(f"{s * PAGE}B" for s in sizes),
    )
    stream = [int(k) for k in keys]
    mismatches = []
    arc = {r["capacity_pages"]: r["misses"] for r in reports if r["policy"] == "arc"}
    for r in reports:
        if r["policy"] == "arc":
            continue
        theirs = MODELS[r["policy"]](stream, r["capacity_pages"])
        if r["misses"] != theirs:
            mismatches.append(f"{r['policy']} @ {r['capacity_pages']} pages: ssdcache {r['misses']} reference {theirs}")
        # CAR approximates ARC: within 10 % of ARC's misses beyond a few pages
        if r["policy"] == "car" and r["capacity_pages"] >= 10:
            assert abs(r["misses"] - arc[r["capacity_pages"]]) <= 0.1 * arc[r["capacity_pages"]], r
    return mismatches


@pytest.mark.parametrize("name,alpha,seed", SYNTHETIC, ids=[s[0] for s in SYNTHETIC])
def test_synthetic_streams_match_the_papers(name: str, alpha: float, seed: int, tmp_path: pathlib.Path):
    keys = synthetic_keys(alpha, seed, n=15_000, universe=3_000)
    keys_file = tmp_path / "stream.keys"
    np.savetxt(keys_file, keys, fmt="%d")
    assert compare(keys_file, keys) == []


@pytest.mark.skipif(not have_traces(), reason=TRACES_MISSING)
def test_a_real_trace_matches_the_papers(tmp_path: pathlib.Path):
    keys_file = tmp_path / "stream.keys"
    ssdcache("trace", "convert", shared_traces()[0], keys_file, "--to", "keys", "--page", f"{PAGE}B")
    keys = np.loadtxt(keys_file, dtype=np.uint64, ndmin=1)[:12_000]
    np.savetxt(keys_file, keys, fmt="%d")
    assert compare(keys_file, keys) == []


def test_libcachesim_clockpro_is_no_peer(tmp_path: pathlib.Path):
    """Why CLOCK-Pro has no libCacheSim peer, on one concrete stream: a loop of
    5 keys through 4 pages. No 4-page cache can miss less than Belady (28 of
    100); libCacheSim 0.3.5's ClockPro misses 24, so it holds more than its
    size. (Reading ClockPro.c: a page back in its test period is promoted in
    the clock without cache_insert_base, so the cache's byte count never
    includes it, and evicting it later subtracts bytes never added.) Ours stays
    above the bound and equals the paper's model."""
    import libcachesim as lcs

    from test_libcachesim import libcachesim_misses, write_oracle_general

    keys = np.array([i % 5 + 1 for i in range(100)], dtype=np.uint64)
    oracle = tmp_path / "loop.oracleGeneral.bin"
    write_oracle_general(keys, oracle, PAGE)
    belady = libcachesim_misses(lcs.Belady, 4, PAGE, oracle, len(keys))
    theirs = libcachesim_misses(lambda size: lcs.ClockPro(size, init_ratio_cold=1.0), 4, PAGE, oracle, len(keys))
    assert (belady, theirs) == (28, 24)
    keys_file = tmp_path / "loop.keys"
    np.savetxt(keys_file, keys, fmt="%d")
    (ours,) = sim_json("--trace", keys_file, "--format", "keys", "--policy", "clockpro", "--cache", f"{4 * PAGE}B")
    assert belady <= ours["misses"] == clockpro_misses([int(k) for k in keys], 4)
