//! The on-disk metadata of paper 000's persistent read/write SSD cache (PWC;
//! Baek & Park, "A Persistent Read/Write Cache using General Flash-based
//! SSDs"), §3.2 and Fig. 2.
//!
//! What the paper stores (§3.2): a *meta-info* part — version, hash (we use
//! CRC-32C), clean bit, update bit — then the *frequency table* (one
//! frequency per HDD segment) and the *address map* (one entry per SSD
//! segment holding the HDD segment it caches). It is written alternately to
//! two areas, "metadata 1" and "metadata 2", the version growing by one per
//! save, so that a save torn by a power cut leaves the previous one usable
//! (§3.2 ¶4–5). The data bitmap (which SSD segments are dirty) and the radix
//! tree (HDD → SSD) are *not* stored: after a clean shutdown nothing is dirty
//! and after an unclean one everything is treated as dirty (§3.2 last ¶s).
//!
//! Slot `i` (0 or 1) holds the versions `v` with `v % 2 == i`; the parity
//! is checked on load, so alternation is implied by the version and two
//! valid slots never carry the same version. Versions are `u32` and wrap;
//! "newer" is serial-number arithmetic (RFC 1982): `a` is newer than `b`
//! when `a - b` (wrapping) is in `1..2^31`.
//!
//! **Two copies of every save** (ours): alternating slots survive a torn
//! save, but not a damaged one — if the newest slot is later hit by a flipped
//! bit or a lost sector, falling back to the older slot silently loads a
//! stale state (an older clean bit, an older map) and loses flushed writes.
//! So each slot has a primary and a mirror copy, kept far apart (the
//! [`MetaStore`] says where), and a save writes the primary, syncs, then the
//! mirror, and syncs. A torn save then leaves its slot's *other* copy intact
//! (the previous version while the primary is torn, the new one while the
//! mirror is), and one damaged copy leaves its twin. `recover::load` uses
//! that to tell a torn save from later damage.
//!
//! Layout of a slot (little-endian; [`slot_len`] bytes, a multiple of 4 KiB):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"SSDCPWC\0"` |
//! | 8 | 2 | format = 1 |
//! | 10 | 2 | flags: bit 0 clean, bit 1 update, bit 2 degraded; others 0 |
//! | 12 | 4 | version |
//! | 16 | 4 | segment size in bytes |
//! | 20 | 4 | SSD segments `S` |
//! | 24 | 8 | HDD segments `H` |
//! | 32 | 4 | evict clock (an SSD slot, `< S`) |
//! | 36 | 4 | when the last procedure completed, Unix seconds (0 = never; was reserved) |
//! | 40 | 8 | procedures run (caching-and-eviction count) |
//! | 48 | 8 | payload length = `8S + 2H + ceil(H/8)` |
//! | 56 | 4 | reserved, 0 |
//! | 60 | 4 | CRC-32C of bytes 0..60 then of the payload |
//! | 64 | 8·S | address map: HDD segment per SSD slot, `u64::MAX` = empty |
//! | … | 2·H | frequency table: `u16` per HDD segment |
//! | … | ⌈H/8⌉ | touched bitmap: bit `h` set once segment `h` was referenced |
//! | … | pad | zero to the slot length (not checksummed) |
//!
//! Our additions to Fig. 2 (the paper is silent): geometry (so a changed
//! configuration is refused rather than misread), the evict clock and the
//! procedure count (the simulator's PWC keeps its evict clock between
//! procedures, `crates/core/src/policy/tiered/pwc.rs`; the cache clock
//! restarts at 0 every procedure, Fig. 5 line 8, so it is not stored), and
//! the touched bitmap (that policy's first-fill rule counts segments ever
//! touched, which a frequency of 0 cannot tell), and the time of the last
//! procedure (for `ssdcache status` when no server runs).

use std::io;

use crate::device::BlockDevice;

/// First bytes of a slot.
pub const MAGIC: [u8; 8] = *b"SSDCPWC\0";
/// The layout version in this file.
pub const FORMAT: u16 = 2;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 64;
/// Slots are padded to this.
pub const SLOT_ALIGN: u64 = 4096;
/// Map entry of an empty SSD slot.
pub const EMPTY: u64 = u64::MAX;

const FLAG_CLEAN: u16 = 1;
const FLAG_UPDATE: u16 = 2;
const FLAG_DEGRADED: u16 = 4;
const CRC_AT: usize = 60;

/// The shape of a cache: fixed at format time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Segment size in bytes (the paper used 128 KiB–1 MiB, §3.1).
    pub segment_size: u32,
    /// Segments of the SSD (cache slots).
    pub ssd_segments: u32,
    /// Segments of the HDD.
    pub hdd_segments: u64,
}

impl Geometry {
    /// Payload bytes of a slot (saturating: a geometry read from disk may be
    /// absurd, and is refused by whoever compares this with a device size).
    pub fn payload_len(&self) -> u64 {
        (8 * self.ssd_segments as u64)
            .saturating_add(self.hdd_segments.saturating_mul(2))
            .saturating_add(self.hdd_segments.div_ceil(8))
    }
}

/// Bytes of one metadata slot for `g`.
pub fn slot_len(g: &Geometry) -> u64 {
    (HEADER_LEN as u64).saturating_add(g.payload_len()).div_ceil(SLOT_ALIGN).saturating_mul(SLOT_ALIGN)
}

/// Bytes of one copy of both slots.
pub fn copy_len(g: &Geometry) -> u64 {
    slot_len(g).saturating_mul(2)
}

/// Bytes of both copies of both slots laid end to end ([`MetaStore::new`]).
pub fn region_len(g: &Geometry) -> u64 {
    copy_len(g).saturating_mul(2)
}

/// One saved state of the cache (Fig. 2, plus our additions listed above).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Grows by one (wrapping) per save; its parity is the slot.
    pub version: u32,
    /// Set by a clean shutdown (Fig. 5 line 53), cleared at start (line 46).
    pub clean: bool,
    /// Set while the caching-and-eviction procedure runs (lines 5, 26).
    pub update: bool,
    /// The cache device failed: no new caching until the operator clears it
    /// (ours; kept across restarts).
    pub degraded: bool,
    /// The cache's shape.
    pub geometry: Geometry,
    /// Evict clock: the SSD slot it last stopped at.
    pub evict_hand: u32,
    /// Caching-and-eviction procedures completed.
    pub procedures: u64,
    /// When the last one completed (Unix seconds; 0 = never).
    pub last_procedure: u32,
    /// Address map: the HDD segment each SSD slot caches.
    pub map: Vec<Option<u64>>,
    /// Frequency of each HDD segment.
    pub freq: Vec<u16>,
    /// Whether each HDD segment was ever referenced.
    pub touched: Vec<bool>,
}

impl Meta {
    /// A fresh, empty, clean cache: nothing cached, all frequencies 0.
    pub fn empty(geometry: Geometry) -> Meta {
        Meta {
            version: 0,
            clean: true,
            update: false,
            degraded: false,
            geometry,
            evict_hand: geometry.ssd_segments.saturating_sub(1),
            procedures: 0,
            last_procedure: 0,
            map: vec![None; geometry.ssd_segments as usize],
            freq: vec![0; geometry.hdd_segments as usize],
            touched: vec![false; geometry.hdd_segments as usize],
        }
    }

    /// The slot this version lives in.
    pub fn slot(&self) -> usize {
        (self.version & 1) as usize
    }

    /// Serialises into exactly [`slot_len`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        assert_eq!(self.map.len(), g.ssd_segments as usize, "map length");
        assert_eq!(self.freq.len(), g.hdd_segments as usize, "frequency table length");
        assert_eq!(self.touched.len(), g.hdd_segments as usize, "touched length");
        let mut b = vec![0u8; slot_len(g) as usize];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&FORMAT.to_le_bytes());
        let flags = if self.clean { FLAG_CLEAN } else { 0 }
            | if self.update { FLAG_UPDATE } else { 0 }
            | if self.degraded { FLAG_DEGRADED } else { 0 };
        b[10..12].copy_from_slice(&flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.version.to_le_bytes());
        b[16..20].copy_from_slice(&g.segment_size.to_le_bytes());
        b[20..24].copy_from_slice(&g.ssd_segments.to_le_bytes());
        b[24..32].copy_from_slice(&g.hdd_segments.to_le_bytes());
        b[32..36].copy_from_slice(&self.evict_hand.to_le_bytes());
        b[36..40].copy_from_slice(&self.last_procedure.to_le_bytes());
        b[40..48].copy_from_slice(&self.procedures.to_le_bytes());
        b[48..56].copy_from_slice(&g.payload_len().to_le_bytes());
        let mut at = HEADER_LEN;
        for m in &self.map {
            b[at..at + 8].copy_from_slice(&m.unwrap_or(EMPTY).to_le_bytes());
            at += 8;
        }
        for f in &self.freq {
            b[at..at + 2].copy_from_slice(&f.to_le_bytes());
            at += 2;
        }
        for (h, &t) in self.touched.iter().enumerate() {
            if t {
                b[at + h / 8] |= 1 << (h % 8);
            }
        }
        at += self.touched.len().div_ceil(8);
        let crc = checksum(&b[..CRC_AT], &b[HEADER_LEN..at]);
        b[CRC_AT..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a slot, checking everything it can; `expected` is the
    /// configured geometry (a slot of another shape is refused).
    pub fn decode(b: &[u8], expected: Option<&Geometry>) -> Result<Meta, SlotError> {
        if b.len() < HEADER_LEN {
            return Err(SlotError::Truncated { have: b.len() as u64, need: HEADER_LEN as u64 });
        }
        if b[0..8] != MAGIC {
            return Err(if b[..HEADER_LEN].iter().all(|&x| x == 0) { SlotError::Blank } else { SlotError::BadMagic });
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let format = u16_at(8);
        if format != FORMAT {
            return Err(SlotError::Format(format));
        }
        let g = Geometry { segment_size: u32_at(16), ssd_segments: u32_at(20), hdd_segments: u64_at(24) };
        let payload = u64_at(48);
        // The header is not yet trusted: check its checksum before believing
        // any length in it, but never index past the buffer.
        let need = (HEADER_LEN as u64).saturating_add(payload);
        if need > b.len() as u64 {
            return Err(SlotError::Truncated { have: b.len() as u64, need });
        }
        let stored = u32_at(CRC_AT);
        let computed = checksum(&b[..CRC_AT], &b[HEADER_LEN..need as usize]);
        if stored != computed {
            return Err(SlotError::Checksum { stored, computed });
        }
        if b[need as usize..].iter().any(|&x| x != 0) {
            return Err(SlotError::Invalid("non-zero bytes in the padding after the payload".into()));
        }
        if payload != g.payload_len() || g.segment_size == 0 || need > usize::MAX as u64 {
            return Err(SlotError::Invalid(format!("payload length {payload} does not match geometry {g:?}")));
        }
        if let Some(e) = expected {
            if *e != g {
                return Err(SlotError::Geometry { found: g, expected: *e });
            }
        }
        let flags = u16_at(10);
        if flags & !(FLAG_CLEAN | FLAG_UPDATE | FLAG_DEGRADED) != 0 || u32_at(56) != 0 {
            return Err(SlotError::Invalid(format!("unknown flags {flags:#x} or reserved bytes set")));
        }
        let evict_hand = u32_at(32);
        if evict_hand >= g.ssd_segments.max(1) {
            return Err(SlotError::Invalid(format!("evict clock {evict_hand} out of {} slots", g.ssd_segments)));
        }
        let mut at = HEADER_LEN;
        let mut map = Vec::with_capacity(g.ssd_segments as usize);
        let mut seen = std::collections::HashSet::new();
        for s in 0..g.ssd_segments {
            let h = u64_at(at);
            at += 8;
            if h == EMPTY {
                map.push(None);
            } else if h >= g.hdd_segments || !seen.insert(h) {
                return Err(SlotError::Invalid(format!("SSD slot {s} maps HDD segment {h} (out of range or twice)")));
            } else {
                map.push(Some(h));
            }
        }
        let freq = (0..g.hdd_segments as usize).map(|i| u16_at(at + 2 * i)).collect();
        at += 2 * g.hdd_segments as usize;
        let touched = (0..g.hdd_segments as usize).map(|h| b[at + h / 8] & (1 << (h % 8)) != 0).collect();
        Ok(Meta {
            version: u32_at(12),
            clean: flags & FLAG_CLEAN != 0,
            update: flags & FLAG_UPDATE != 0,
            degraded: flags & FLAG_DEGRADED != 0,
            geometry: g,
            evict_hand,
            procedures: u64_at(40),
            last_procedure: u32_at(36),
            map,
            freq,
            touched,
        })
    }
}

fn checksum(header: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(header), payload)
}

/// Whether version `a` is newer than `b` (serial-number arithmetic).
pub fn newer(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b);
    d != 0 && d < 1 << 31
}

/// Why one slot cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    /// All zero: never written.
    #[error("never written (blank)")]
    Blank,
    /// Not a PWC metadata slot (or its first sector was torn).
    #[error("bad magic: not PWC metadata, or its first sector is torn")]
    BadMagic,
    /// A layout version this build does not read.
    #[error("unknown metadata format {0}")]
    Format(u16),
    /// Shorter than its header says.
    #[error("truncated: {have} bytes where {need} are needed")]
    Truncated {
        /// Bytes available.
        have: u64,
        /// Bytes needed.
        need: u64,
    },
    /// A torn or corrupted save.
    #[error("checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): torn or corrupted save")]
    Checksum {
        /// CRC in the slot.
        stored: u32,
        /// CRC of its contents.
        computed: u32,
    },
    /// Written for another cache shape.
    #[error("geometry {found:?} differs from the configured {expected:?}")]
    Geometry {
        /// In the slot.
        found: Geometry,
        /// Configured.
        expected: Geometry,
    },
    /// A version in the wrong slot.
    #[error("version {version} cannot live in slot {slot} (versions alternate by parity)")]
    Parity {
        /// The version found.
        version: u32,
        /// The slot it was in.
        slot: usize,
    },
    /// Checksummed but inconsistent (a bug, or a collision).
    #[error("inconsistent contents: {0}")]
    Invalid(String),
    /// The device failed.
    #[error("read failed: {0}")]
    Io(io::Error),
}

/// By hand, not `#[from]`: that would also make the I/O error this one's
/// source, and a chain of causes (`{:#}`) would print it twice.
impl From<io::Error> for SlotError {
    fn from(e: io::Error) -> Self {
        SlotError::Io(e)
    }
}

/// Which copy of a slot.
pub const COPIES: [&str; 2] = ["primary", "mirror"];

/// The metadata on a device: two slots, each in two copies, the primaries
/// at `base` and the mirrors at `mirror` (the paper keeps one copy "on the
/// HDD or the SSD", §3.2).
#[derive(Debug)]
pub struct MetaStore<D> {
    dev: D,
    base: u64,
    mirror: u64,
    geometry: Geometry,
}

impl<D: BlockDevice> MetaStore<D> {
    /// Both copies end to end: [`region_len`]`(&geometry)` bytes at `base`.
    pub fn new(dev: D, base: u64, geometry: Geometry) -> io::Result<Self> {
        let mirror = base.saturating_add(copy_len(&geometry));
        Self::with_mirror(dev, base, mirror, geometry)
    }

    /// Primaries at `base`, mirrors at `mirror`, [`copy_len`] bytes each.
    pub fn with_mirror(dev: D, base: u64, mirror: u64, geometry: Geometry) -> io::Result<Self> {
        let len = copy_len(&geometry);
        let fits = |at: u64| at.checked_add(len).is_some_and(|end| end <= dev.len());
        if len > usize::MAX as u64 / 2 || !fits(base) || !fits(mirror) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("metadata of {len} bytes at {base} and {mirror} does not fit a {}-byte device", dev.len()),
            ));
        }
        Ok(MetaStore { dev, base, mirror, geometry })
    }

    /// The configured geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The device holding the region.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Where copy `copy` (0 primary, 1 mirror) of `slot` lives.
    pub fn offset(&self, slot: usize, copy: usize) -> u64 {
        [self.base, self.mirror][copy] + slot as u64 * slot_len(&self.geometry)
    }

    /// Reads and validates one copy of slot 0 or 1.
    pub fn read_copy(&self, slot: usize, copy: usize) -> Result<Meta, SlotError> {
        let mut b = vec![0u8; slot_len(&self.geometry) as usize];
        self.dev.read_at(&mut b, self.offset(slot, copy))?;
        let m = Meta::decode(&b, Some(&self.geometry))?;
        if m.slot() != slot {
            return Err(SlotError::Parity { version: m.version, slot });
        }
        Ok(m)
    }

    /// Saves `meta` into its slot (by version parity): the primary, a sync,
    /// the mirror, a sync. When this returns `meta` is durable twice and the
    /// other slot is untouched; a cut tears at most one of the two copies.
    pub fn write(&self, meta: &Meta) -> io::Result<()> {
        assert_eq!(meta.geometry, self.geometry, "metadata of another geometry");
        let b = meta.encode();
        for copy in 0..2 {
            self.dev.write_at(&b, self.offset(meta.slot(), copy))?;
            self.dev.sync()?;
        }
        Ok(())
    }

    /// Formats a fresh cache: `Meta::empty` saved as versions 0 then 1, so
    /// both slots are valid. Discards whatever the region held.
    pub fn format(&self) -> io::Result<Meta> {
        let mut m = Meta::empty(self.geometry);
        self.write(&m)?;
        m.version = 1;
        self.write(&m)?;
        Ok(m)
    }

    /// Every copy, validated: `[slot][copy]`.
    pub fn read_all(&self) -> [[Result<Meta, SlotError>; 2]; 2] {
        [0, 1].map(|slot| [0, 1].map(|copy| self.read_copy(slot, copy)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use proptest::prelude::*;

    fn geom() -> Geometry {
        Geometry { segment_size: 8192, ssd_segments: 8, hdd_segments: 32 }
    }

    fn arb_meta() -> impl Strategy<Value = Meta> {
        (1u32..20, 1u64..200, any::<u32>(), any::<bool>(), any::<bool>(), any::<u64>(), any::<u32>())
            .prop_flat_map(|(s, h, version, clean, update, procedures, seg)| {
                let g = Geometry { segment_size: seg.max(1), ssd_segments: s, hdd_segments: h };
                (
                    Just(g),
                    Just((version, clean, update, procedures)),
                    0..s,
                    Just(proptest::sample::subsequence((0..h).collect::<Vec<_>>(), 0..=(s as usize).min(h as usize))),
                    proptest::collection::vec(any::<u16>(), h as usize),
                    proptest::collection::vec(any::<bool>(), h as usize),
                    proptest::collection::vec(any::<bool>(), s as usize),
                )
            })
            .prop_flat_map(|(g, v, hand, segs, freq, touched, empties)| {
                (Just(g), Just(v), Just(hand), segs, Just(freq), Just(touched), Just(empties))
            })
            .prop_map(|(g, (version, clean, update, procedures), evict_hand, segs, freq, touched, empties)| {
                let mut it = segs.into_iter();
                let map = empties.iter().map(|&e| if e { None } else { it.next() }).collect();
                let last_procedure = version.rotate_left(7); // any value round-trips
                let degraded = procedures % 3 == 0;
                Meta {
                    version,
                    clean,
                    update,
                    degraded,
                    geometry: g,
                    evict_hand,
                    procedures,
                    last_procedure,
                    map,
                    freq,
                    touched,
                }
            })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(m in arb_meta()) {
            let b = m.encode();
            prop_assert_eq!(b.len() as u64, slot_len(&m.geometry));
            prop_assert_eq!(b.len() as u64 % SLOT_ALIGN, 0);
            let d = Meta::decode(&b, Some(&m.geometry)).unwrap();
            prop_assert_eq!(d, m);
        }

        /// Any byte range of the checksummed part overwritten with other bytes
        /// is detected (CRC-32C catches every burst of at most 32 bits and,
        /// for longer ranges, all but ~2^-32 of them).
        #[test]
        fn corruption_is_detected(m in arb_meta(), start in any::<prop::sample::Index>(), len in 1usize..64, fill in any::<u8>()) {
            let mut b = m.encode();
            let covered = HEADER_LEN + m.geometry.payload_len() as usize;
            let s = start.index(covered);
            let e = (s + len).min(covered);
            let before = b.clone();
            for x in &mut b[s..e] { *x = fill; }
            prop_assume!(b != before);
            prop_assert!(Meta::decode(&b, Some(&m.geometry)).is_err());
        }

        #[test]
        fn truncation_is_detected(m in arb_meta(), cut in any::<prop::sample::Index>()) {
            let b = m.encode();
            let covered = HEADER_LEN + m.geometry.payload_len() as usize;
            let n = cut.index(covered);
            prop_assert!(Meta::decode(&b[..n], Some(&m.geometry)).is_err());
        }
    }

    #[test]
    fn wrong_geometry_and_blank_are_named() {
        let m = Meta::empty(geom());
        let other = Geometry { ssd_segments: 9, ..geom() };
        assert!(matches!(Meta::decode(&m.encode(), Some(&other)), Err(SlotError::Geometry { .. })));
        assert!(matches!(Meta::decode(&[0; 4096], None), Err(SlotError::Blank)));
        assert!(matches!(Meta::decode(&[1; 4096], None), Err(SlotError::BadMagic)));
    }

    #[test]
    fn serial_order_wraps() {
        assert!(newer(1, 0));
        assert!(!newer(0, 1));
        assert!(newer(0, u32::MAX));
        assert!(!newer(u32::MAX, 0));
        assert!(newer(5, u32::MAX - 5));
        assert!(!newer(7, 7));
    }

    #[test]
    fn store_alternates_by_parity_and_refuses_misplaced_versions() {
        let g = geom();
        let dev = MemDevice::new(4096 + region_len(&g) as usize);
        let st = MetaStore::new(&dev, 4096, g).unwrap();
        let mut m = st.format().unwrap();
        for copy in 0..2 {
            assert_eq!(st.read_copy(0, copy).unwrap().version, 0);
            assert_eq!(st.read_copy(1, copy).unwrap().version, 1);
        }
        for v in 2..6u32 {
            m.version = v;
            m.freq[3] = v as u16;
            st.write(&m).unwrap();
            for copy in 0..2 {
                assert_eq!(st.read_copy(m.slot(), copy).unwrap(), m);
                let other = st.read_copy(1 - m.slot(), copy).unwrap();
                assert_eq!(other.version, v - 1, "the other slot keeps the previous save");
            }
        }
        // A version copied into the wrong slot is refused.
        let mut b = vec![0u8; slot_len(&g) as usize];
        dev.read_at(&mut b, st.offset(0, 0)).unwrap();
        dev.write_at(&b, st.offset(1, 0)).unwrap();
        assert!(matches!(st.read_copy(1, 0), Err(SlotError::Parity { slot: 1, .. })));
        assert!(st.read_copy(1, 1).is_ok(), "the mirror is a separate copy");
    }
}
