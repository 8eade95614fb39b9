"""The sector records of the crash tests: building and parsing them (pure, no I/O).

Every 512-byte sector of the export holds a self-describing record:

    magic "CRSHSECT" | block u32 | sector u16 | 0 u16 | generation u64 |
    run nonce u64 | 476 payload bytes (from the generation) | CRC-32 of the rest
"""

import random
import struct
import zlib

BLOCK = 4096
SECTOR = 512
SPB = BLOCK // SECTOR
MAGIC = b"CRSHSECT"
HDR = struct.Struct("<8sIHHQQ")  # 32 bytes
CRC = struct.Struct("<I")
PAYLOAD = SECTOR - HDR.size - CRC.size  # 476
GEN_AT = 16  # offset of the generation in a sector
POOL_LEN = 8192


class Records:
    """Builds and parses the sector records of one run (one nonce)."""

    def __init__(self, nonce):
        self.nonce = nonce
        self.pool = random.Random(nonce).randbytes(POOL_LEN)

    def fill(self, buf, at, block, gen):
        """Writes the 8 sector records of `block` at generation `gen` into buf[at:at+4096]."""
        mv = memoryview(buf)
        for s in range(SPB):
            o = at + s * SECTOR
            HDR.pack_into(buf, o, MAGIC, block, s, 0, gen, self.nonce)
            p = ((gen * SPB + s) * 67) % (POOL_LEN - PAYLOAD)
            buf[o + HDR.size : o + HDR.size + PAYLOAD] = self.pool[p : p + PAYLOAD]
            CRC.pack_into(buf, o + SECTOR - 4, zlib.crc32(mv[o : o + SECTOR - 4]))

    def blocks(self, first, count, gen):
        buf = bytearray(count * BLOCK)
        for i in range(count):
            self.fill(buf, i * BLOCK, first + i, gen)
        return buf

    def parse(self, mv, o, block, s):
        """The generation of the sector at mv[o:o+512], expected to be sector
        `s` of `block`; a string saying what is wrong if it is not a valid
        record of that sector."""
        magic, b, si, z, gen, nonce = HDR.unpack_from(mv, o)
        if magic != MAGIC:
            if not any(mv[o : o + SECTOR]):
                return "all zeroes"
            return f"no record (starts {bytes(mv[o : o + 16]).hex()})"
        if CRC.unpack_from(mv, o + SECTOR - 4)[0] != zlib.crc32(mv[o : o + SECTOR - 4]):
            return f"CRC mismatch (header says block {b} sector {si} gen {gen})"
        if nonce != self.nonce:
            return f"record of another run (nonce {nonce:#x})"
        if b != block or si != s or z != 0:
            return f"record of block {b} sector {si} gen {gen} (misplaced)"
        p = ((gen * SPB + s) * 67) % (POOL_LEN - PAYLOAD)
        if mv[o + HDR.size : o + HDR.size + PAYLOAD] != self.pool[p : p + PAYLOAD]:
            return f"payload does not match gen {gen} (CRC ok)"
        return gen
