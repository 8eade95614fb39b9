#!/usr/bin/python3
"""Damages the cache file's superblock or metadata on purpose, for
scripts/test/test_integrity.sh. Stdlib only.

Where things are comes from `ssdcache check CACHE --json` (saved to a file):

    "layout": {"superblock": [[offset, len], [offset, len]],
               "metadata":   [[offset, len], x4]}   # slot 0 copy 0, slot 0 copy 1,
                                                     # slot 1 copy 0, slot 1 copy 1
so nothing here knows the layout.

Subcommands:

  layout    validates the layout of a check --json file (two superblock
            copies, four metadata copies, none overlapping, all inside CACHE)
            and prints START:END of the metadata primaries (copy 0 of both
            slots), the range crash_client.py watches for the caching-and-
            eviction procedure's first metadata save.
  corrupt   damages ONE thing, chosen from --seed: one of the six copies
            (two superblock, four metadata; uniformly), and in it either one
            byte flipped (all 8 bits), or one 512-byte sector (aligned on the
            device, clipped to the copy so no other copy is touched)
            overwritten with random bytes or with zeroes (--prefer-slot S:
            3 times in 4, one of slot S's two copies). Half of the byte
            flips land in the copy's first 128 bytes and half of the sector
            hits on its first sector (headers, flags, checksums live there;
            the rest of a copy is mostly payload and padding, which a
            checksum may not cover). Prints one line saying what it did and
            whether any byte changed.
  sabotage  corrupt-two: zeroes the first sector of BOTH copies of the newest
            metadata slot (the newer version, as check --json's "copies" say),
            i.e. two faults, which the single-fault guarantee does not cover.
  describe  one line about a check --json: how many copies are unusable
            (superblock included), a slot holding two different versions (a
            save cut between its primary and its mirror, -1 if none), and the
            copies in words.

Every write is fsynced.
"""

import argparse
import json
import os
import random
import sys

SECTOR = 512
HEAD = 128  # half the byte flips land in a copy's first HEAD bytes (headers, checksums)


def die(msg):
    print(f"FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def load_layout(path, cache):
    with open(path) as f:
        try:
            j = json.load(f)
        except json.JSONDecodeError as e:
            die(f"{path}: `check --json` did not print JSON: {e}")
    lay = j.get("layout")
    if not isinstance(lay, dict):
        die(f"{path}: no \"layout\" object in `check --json`")
    sb, meta = lay.get("superblock"), lay.get("metadata")
    if not (isinstance(sb, list) and len(sb) == 2 and isinstance(meta, list) and len(meta) == 4):
        die(f"{path}: layout must have 2 superblock and 4 metadata [offset, len] pairs: {lay}")
    size = os.path.getsize(cache)
    regions = [("superblock", i, o, n) for i, (o, n) in enumerate(sb)]
    regions += [("metadata", i, o, n) for i, (o, n) in enumerate(meta)]
    spans = []
    for kind, i, o, n in regions:
        if not (isinstance(o, int) and isinstance(n, int) and o >= 0 and n > 0 and o + n <= size):
            die(f"{path}: {kind} copy {i} [{o}, +{n}] is not inside the {size}-byte cache file")
        spans.append((o, o + n, f"{kind} {i}"))
    spans.sort()
    for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
        if b0 < a1:
            die(f"{path}: {an} [{a0}, {a1}) overlaps {bn} [{b0}, {b1})")
    return j, regions


def name(kind, i):
    """slot 0 copy 0 ... for metadata, copy 0/1 for the superblock."""
    if kind == "superblock":
        return f"superblock copy {i}"
    return f"metadata slot {i // 2} copy {i % 2}"


def write(path, off, data):
    fd = os.open(path, os.O_RDWR)
    try:
        old = os.pread(fd, len(data), off)
        os.pwrite(fd, data, off)
        os.fsync(fd)
    finally:
        os.close(fd)
    return old != data


def cmd_layout(a):
    _, regions = load_layout(a.check_json, a.cache)
    prim = [(o, o + n) for kind, i, o, n in regions if kind == "metadata" and i % 2 == 0]
    print(f"{min(p[0] for p in prim)}:{max(p[1] for p in prim)}")


def cmd_corrupt(a):
    _, regions = load_layout(a.check_json, a.cache)
    rng = random.Random(a.seed)
    if a.prefer_slot is not None and rng.random() < 0.75:
        # Aim at a slot whose save was cut between its copies (still ONE copy).
        kind, i, o, n = rng.choice([r for r in regions if r[0] == "metadata" and r[1] // 2 == a.prefer_slot])
    else:
        kind, i, o, n = rng.choice(regions)
    what = rng.choice(["flip", "random", "zero"])
    head = rng.random() < 0.5  # aim at the copy's start
    if what == "flip":
        off = o + rng.randrange(min(n, HEAD) if head else n)
        fd = os.open(a.cache, os.O_RDONLY)
        b = os.pread(fd, 1, off)[0]
        os.close(fd)
        write(a.cache, off, bytes([b ^ 0xFF]))
        desc = f"flipped byte {off} ({off - o} into {name(kind, i)}: {b:#04x} -> {b ^ 0xFF:#04x})"
        changed = True
    else:
        # Device-aligned sectors overlapping the copy, each clipped to it.
        first, last = o // SECTOR, (o + n - 1) // SECTOR
        s = first if head else rng.randint(first, last)
        lo, hi = max(s * SECTOR, o), min((s + 1) * SECTOR, o + n)
        data = rng.randbytes(hi - lo) if what == "random" else bytes(hi - lo)
        changed = write(a.cache, lo, data)
        desc = (
            f"overwrote bytes [{lo}, {hi}) ({lo - o} into {name(kind, i)}) with "
            f"{'random bytes' if what == 'random' else 'zeroes'}"
        )
    print(f"{desc}{'' if changed else ' (no byte changed: they were zero already)'}")
    if a.record:
        with open(a.record, "a") as f:
            f.write(json.dumps({"region": kind, "copy": i, "kind": what, "changed": changed, "desc": desc}) + "\n")


def newer(a, b):
    """Serial-number order of u32 versions (RFC 1982), as the cache uses."""
    return 0 < (a - b) % (1 << 32) < (1 << 31)


def copies(j):
    """[slot][copy] -> version, or None for a copy check found unusable."""
    out = [[None, None], [None, None]]
    for c in j.get("copies") or []:
        out[c["slot"]][c["copy"]] = None if "error" in c else c.get("version")
    return out


def cmd_describe(a):
    """One line: DAMAGED CUT TEXT -- how many copies check found unusable
    (superblock included), a slot whose two copies hold different versions
    (a save cut between its primary and its mirror; -1 if none), and the
    copies in words."""
    with open(a.check_json) as f:
        j = json.load(f)
    v = copies(j)
    sb = j.get("superblock_damaged")
    damaged = (sb is not None) + sum(x is None for pair in v for x in pair)
    torn = [s for s, (p, m) in enumerate(v) if p is not None and m is not None and p != m]
    words = " | ".join(
        f"slot {s}: " + ", ".join("unusable" if x is None else f"v{x}" for x in v[s]) for s in (0, 1)
    )
    words += "; superblock " + ("intact" if sb is None else f"copy at {sb.get('offset')} damaged")
    print(f"{damaged} {torn[0] if torn else -1} {words}")


def cmd_sabotage(a):
    j, regions = load_layout(a.check_json, a.cache)
    meta = [(o, n) for kind, _, o, n in regions if kind == "metadata"]
    vers = [max((x for x in pair if x is not None), default=None) for pair in copies(j)]
    if None in vers:
        die(f"sabotage: check --json does not give both slots' versions: {j.get('copies')}")
    slot = 1 if newer(vers[1], vers[0]) else 0
    for c in (0, 1):
        o, n = meta[2 * slot + c]
        write(a.cache, o, bytes(min(n, SECTOR)))
    print(
        f"zeroed the first sector of BOTH copies of metadata slot {slot} (version {vers[slot]}, the newest; "
        f"slot {1 - slot} holds version {vers[1 - slot]})"
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for c in ("layout", "corrupt", "sabotage", "describe"):
        q = sub.add_parser(c)
        if c != "describe":
            q.add_argument("--cache", required=True)
        q.add_argument("--check-json", required=True, help="what `ssdcache check CACHE --json` printed")
        if c == "corrupt":
            q.add_argument("--seed", type=int, required=True)
            q.add_argument("--record", help="append a JSON line describing the damage to this file")
            q.add_argument("--prefer-slot", type=int, choices=[0, 1], help="3 times in 4, damage a copy of this metadata slot")
    a = p.parse_args()
    {"layout": cmd_layout, "corrupt": cmd_corrupt, "sabotage": cmd_sabotage, "describe": cmd_describe}[a.cmd](a)


if __name__ == "__main__":
    main()
