//! The start procedure of paper 000 (Fig. 5 lines 30–48, §3.5, §3.6):
//! find the newest valid metadata, repair the cache according to how the
//! previous run ended, and save a new version with the clean bit cleared.
//!
//! Rules, with where they come from:
//! 1. **Newest valid slot** (line 32; §3.2 ¶4–5, §3.7): both slots are read;
//!    a slot is valid if its CRC-32C matches, its geometry is the configured
//!    one and its version's parity is its slot ([`super::meta`]). Of two
//!    valid slots the newer version (serial order, wrapping) wins; if the
//!    newer save is torn or corrupt, the other slot is used ("if power fails
//!    while saving, the previous area's metadata can be used").
//! 2. **Update bit 1** (lines 39–44; §3.5 ¶5, §3.7 last ¶): the power failed
//!    during the caching-and-eviction procedure, so the SSD's contents do not
//!    match the map; but that procedure starts by writing every dirty segment
//!    back (line 4) and creates no dirty data while it runs (writes to cached
//!    segments go to both devices, §3.6), so the HDD holds everything. The SSD
//!    contents are ignored and refilled from the HDD by the loaded map (a
//!    *warm start*: each mapped HDD segment is copied to its SSD slot).
//!    The paper's pseudo-code puts this `ELSE` at the clean-bit `IF`'s
//!    indentation; its prose (§3.7: "갱신비트가 1이면 … (40~44행)") says it is
//!    the update-bit branch, which is what we follow.
//! 3. **Update bit 0, clean bit 0** (lines 35–38; §3.5 ¶4, §3.6 last ¶): an
//!    unclean stop outside the procedure; the SSD holds dirty segments but
//!    which is unknown (the data bitmap is not stored), so every mapped SSD
//!    segment is copied to its HDD segment. The map is then used as is.
//! 4. **Update bit 0, clean bit 1** (lines 37–38, §3.5 ¶2): a clean
//!    shutdown; the map is used as is, nothing is copied.
//! 5. Then (lines 46–47) the clean bit is cleared and the metadata saved (as
//!    the next version, into the other slot), and the data bitmap starts all
//!    clean. We also clear the update bit in that save (the paper is silent;
//!    after a warm start the SSD matches the map again, so keeping it would
//!    only force another warm start).
//!
//! Our additions (the paper is silent):
//! - Every copy is followed by a `sync` of the device written before the
//!   metadata is saved, and the save itself is synced ([`MetaStore::write`]):
//!   a cut during recovery leaves the loaded metadata in place, and recovery
//!   is idempotent (the copies are redone).
//! - **Both slots unusable**: we refuse to start ([`RecoverError::NoValidMetadata`]),
//!   naming each slot's defect, because the SSD may hold writes the HDD does
//!   not. With `force`, new empty metadata is formatted, which discards the
//!   SSD cache (see the error text). Both slots blank is reported as
//!   [`RecoverError::NotFormatted`]; `force` formats it too.
//! - Data layout: SSD slot `s` is bytes `s·seg..(s+1)·seg` of the SSD device,
//!   HDD segment `h` is bytes `h·seg..` of the HDD device; the metadata region
//!   lives wherever its [`MetaStore`] says (outside those ranges).

use std::io;

use super::device::BlockDevice;
use super::meta::{newer, Geometry, Meta, MetaStore, SlotError};

/// How the previous run ended, as read from the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartKind {
    /// Clean shutdown (rule 4): nothing copied.
    Clean,
    /// Power cut outside the procedure (rule 3): SSD copied to the HDD.
    Unclean,
    /// Power cut during the procedure (rule 2): SSD refilled from the HDD.
    WarmStart,
    /// No usable metadata and `force`: formatted afresh, SSD discarded.
    Forced,
}

/// The metadata chosen by rule 1.
#[derive(Debug)]
pub struct Loaded {
    /// The newest valid save.
    pub meta: Meta,
    /// Its slot.
    pub slot: usize,
    /// Why the other slot was not used: `None` if it holds a valid older save,
    /// else its defect (e.g. the newer save was torn).
    pub other: Option<SlotError>,
}

/// The outcome of [`start`].
#[derive(Debug)]
pub struct Started {
    /// The in-memory metadata to run with; already saved (clean bit 0).
    pub meta: Meta,
    /// What the previous run's end required.
    pub kind: StartKind,
    /// The version loaded, and the defect of the other slot if any.
    pub loaded_version: Option<u32>,
    /// Why the other slot was not used (if it was not).
    pub fallback: Option<SlotError>,
    /// Segments copied (SSD→HDD or HDD→SSD).
    pub copied: u64,
}

/// Why the cache cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// Both slots unusable.
    #[error(
        "no usable cache metadata: slot 0: {slot0}; slot 1: {slot1}. The SSD cache may hold writes \
         that are not on the HDD yet, so the cache refuses to start. `--force` would write new, \
         empty metadata and discard the SSD cache: its {ssd_segments} segments of {segment_size} \
         bytes, including any write cached there but not yet written back to the HDD; the HDD \
         would be used as it is"
    )]
    NoValidMetadata {
        /// Defect of slot 0.
        slot0: SlotError,
        /// Defect of slot 1.
        slot1: SlotError,
        /// SSD segments that `--force` discards.
        ssd_segments: u32,
        /// Their size.
        segment_size: u32,
    },
    /// Both slots blank.
    #[error(
        "no cache metadata (both slots are blank): this cache was never formatted; `--force` \
         formats it, treating the SSD as empty and the HDD as authoritative"
    )]
    NotFormatted,
    /// A device is too small for the geometry.
    #[error("the {which} device has {have} bytes, the geometry needs {need}")]
    DeviceTooSmall {
        /// "SSD" or "HDD".
        which: &'static str,
        /// Its size.
        have: u64,
        /// Needed.
        need: u64,
    },
    /// A device failed during recovery (e.g. the power went again): nothing
    /// was lost, the next start redoes the recovery.
    #[error("I/O error during recovery: {0}")]
    Io(#[from] io::Error),
}

/// Rule 1: the newest valid slot.
pub fn load<D: BlockDevice>(store: &MetaStore<D>) -> Result<Loaded, RecoverError> {
    let [a, b] = store.read_both();
    match (a, b) {
        (Ok(a), Ok(b)) => {
            let (meta, slot) = if newer(b.version, a.version) { (b, 1) } else { (a, 0) };
            Ok(Loaded { meta, slot, other: None })
        }
        (Ok(meta), Err(e)) => Ok(Loaded { meta, slot: 0, other: Some(e) }),
        (Err(e), Ok(meta)) => Ok(Loaded { meta, slot: 1, other: Some(e) }),
        (Err(SlotError::Blank), Err(SlotError::Blank)) => Err(RecoverError::NotFormatted),
        (Err(slot0), Err(slot1)) => {
            let g = store.geometry();
            Err(RecoverError::NoValidMetadata {
                slot0,
                slot1,
                ssd_segments: g.ssd_segments,
                segment_size: g.segment_size,
            })
        }
    }
}

fn check_size(which: &'static str, dev: &dyn BlockDevice, need: u64) -> Result<(), RecoverError> {
    if dev.len() < need {
        return Err(RecoverError::DeviceTooSmall { which, have: dev.len(), need });
    }
    Ok(())
}

/// Copies segment-sized data from `src` at `from` to `dst` at `to`.
pub fn copy_segment(
    src: &dyn BlockDevice,
    from: u64,
    dst: &dyn BlockDevice,
    to: u64,
    buf: &mut [u8],
) -> io::Result<()> {
    src.read_at(buf, from)?;
    dst.write_at(buf, to)
}

/// The start procedure (Fig. 5 lines 30–48); see the module doc.
pub fn start<M: BlockDevice>(
    store: &MetaStore<M>,
    ssd: &dyn BlockDevice,
    hdd: &dyn BlockDevice,
    force: bool,
) -> Result<Started, RecoverError> {
    let g: Geometry = *store.geometry();
    let seg = g.segment_size as u64;
    check_size("SSD", ssd, g.ssd_segments as u64 * seg)?;
    check_size("HDD", hdd, g.hdd_segments * seg)?;
    let loaded = match load(store) {
        Ok(l) => l,
        Err(RecoverError::NotFormatted | RecoverError::NoValidMetadata { .. }) if force => {
            // Format the slots from a base that makes the save below land on a
            // fresh version in both slots.
            let meta = store.format()?;
            log::warn!("cache metadata formatted afresh (--force): SSD cache discarded");
            let mut meta = meta;
            meta.version = meta.version.wrapping_add(1);
            meta.clean = false;
            store.write(&meta)?;
            return Ok(Started { meta, kind: StartKind::Forced, loaded_version: None, fallback: None, copied: 0 });
        }
        Err(e) => return Err(e),
    };
    if let Some(e) = &loaded.other {
        log::warn!("cache metadata: using slot {} (version {}); other slot: {e}", loaded.slot, loaded.meta.version);
    }
    let mut meta = loaded.meta;
    let mut buf = vec![0u8; seg as usize];
    let mut copied = 0;
    let kind = if meta.update {
        // Rule 2: warm start, lines 40–44.
        for (s, h) in meta.map.iter().enumerate() {
            if let Some(h) = *h {
                copy_segment(hdd, h * seg, ssd, s as u64 * seg, &mut buf)?;
                copied += 1;
            }
        }
        ssd.sync()?;
        StartKind::WarmStart
    } else if !meta.clean {
        // Rule 3: lines 35–36.
        for (s, h) in meta.map.iter().enumerate() {
            if let Some(h) = *h {
                copy_segment(ssd, s as u64 * seg, hdd, h * seg, &mut buf)?;
                copied += 1;
            }
        }
        hdd.sync()?;
        StartKind::Unclean
    } else {
        StartKind::Clean
    };
    let loaded_version = Some(meta.version);
    // Lines 46–47.
    meta.version = meta.version.wrapping_add(1);
    meta.clean = false;
    meta.update = false;
    store.write(&meta)?;
    Ok(Started { meta, kind, loaded_version, fallback: loaded.other, copied })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::device::MemDevice;
    use crate::cache::meta::{region_len, slot_len};

    const SEG: u64 = 8192;

    fn geom() -> Geometry {
        Geometry { segment_size: SEG as u32, ssd_segments: 8, hdd_segments: 32 }
    }

    struct Rig {
        ssd: MemDevice,
        hdd: MemDevice,
    }

    impl Rig {
        fn new() -> Rig {
            let g = geom();
            Rig { ssd: MemDevice::new((8 * SEG) as usize), hdd: MemDevice::new((32 * SEG + region_len(&g)) as usize) }
        }
        fn store(&self) -> MetaStore<&MemDevice> {
            MetaStore::new(&self.hdd, 32 * SEG, geom()).unwrap()
        }
        fn slot_at(&self, slot: usize) -> u64 {
            32 * SEG + slot as u64 * slot_len(&geom())
        }
    }

    #[test]
    fn torn_newest_slot_falls_back_to_the_other_for_any_byte_range() {
        let rig = Rig::new();
        let st = rig.store();
        let mut m = st.format().unwrap();
        m.version = 2;
        m.map[0] = Some(5);
        m.freq[5] = 20;
        st.write(&m).unwrap();
        let newest = rig.hdd.contents();
        let covered = 64 + geom().payload_len();
        let mut tried = 0;
        // Every start and several lengths, including running to the end of
        // the slot (a truncated save: the tail still holds old bytes).
        for start in 0..covered {
            for len in [1u64, 3, 64, 513, covered] {
                let end = (start + len).min(covered);
                let dev = MemDevice::from_vec(newest.clone());
                let junk: Vec<u8> = (start..end).map(|i| (i as u8) ^ 0xA5).collect();
                let off = rig.slot_at(0) + start;
                let mut old = vec![0; junk.len()];
                dev.read_at(&mut old, off).unwrap();
                if old == junk {
                    continue;
                }
                dev.write_at(&junk, off).unwrap();
                let st = MetaStore::new(&dev, 32 * SEG, geom()).unwrap();
                let l = load(&st).unwrap();
                assert_eq!(l.slot, 1, "start {start} len {len}");
                assert_eq!(l.meta.version, 1);
                assert!(l.other.is_some());
                tried += 1;
            }
        }
        assert!(tried > 500);
    }

    #[test]
    fn both_bad_is_refused_with_a_clear_error_and_force_formats() {
        let rig = Rig::new();
        let st = rig.store();
        st.format().unwrap();
        rig.hdd.write_at(&[0xFF; 100], rig.slot_at(0) + 70).unwrap();
        rig.hdd.write_at(&[0x00; 8], rig.slot_at(1)).unwrap();
        let err = start(&st, &rig.ssd, &rig.hdd, false).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, RecoverError::NoValidMetadata { .. }));
        assert!(msg.contains("slot 0: checksum mismatch"), "{msg}");
        assert!(msg.contains("slot 1: bad magic"), "{msg}");
        assert!(msg.contains("`--force`") && msg.contains("8 segments of 8192 bytes"), "{msg}");
        let s = start(&st, &rig.ssd, &rig.hdd, true).unwrap();
        assert_eq!(s.kind, StartKind::Forced);
        assert!(s.meta.map.iter().all(Option::is_none));
        assert_eq!(start(&st, &rig.ssd, &rig.hdd, false).unwrap().kind, StartKind::Unclean);
    }

    #[test]
    fn blank_is_not_formatted() {
        let rig = Rig::new();
        let err = start(&rig.store(), &rig.ssd, &rig.hdd, false).unwrap_err();
        assert!(matches!(err, RecoverError::NotFormatted), "{err}");
        assert_eq!(start(&rig.store(), &rig.ssd, &rig.hdd, true).unwrap().kind, StartKind::Forced);
    }

    #[test]
    fn version_wraps_around() {
        let rig = Rig::new();
        let st = rig.store();
        let mut m = Meta::empty(geom());
        m.version = u32::MAX - 1;
        st.write(&m).unwrap();
        m.version = u32::MAX;
        m.clean = true;
        st.write(&m).unwrap();
        let s = start(&st, &rig.ssd, &rig.hdd, false).unwrap();
        assert_eq!(s.loaded_version, Some(u32::MAX));
        assert_eq!(s.kind, StartKind::Clean);
        assert_eq!(s.meta.version, 0);
        assert_eq!(s.meta.slot(), 0);
        // 0 is now newer than u32::MAX.
        let l = load(&st).unwrap();
        assert_eq!((l.meta.version, l.slot), (0, 0));
        assert!(!l.meta.clean);
    }

    #[test]
    fn start_follows_the_clean_and_update_bits() {
        let g = geom();
        let fill = |d: &MemDevice, off: u64, b: u8| d.write_at(&vec![b; SEG as usize], off).unwrap();
        let seg_of = |d: &MemDevice, off: u64| {
            let mut v = vec![0; SEG as usize];
            d.read_at(&mut v, off).unwrap();
            v[0]
        };
        for (clean, update, kind) in [
            (true, false, StartKind::Clean),
            (false, false, StartKind::Unclean),
            (false, true, StartKind::WarmStart),
            (true, true, StartKind::WarmStart),
        ] {
            let rig = Rig::new();
            let st = rig.store();
            let mut m = st.format().unwrap();
            m.version = 2;
            m.map[3] = Some(7);
            m.clean = clean;
            m.update = update;
            st.write(&m).unwrap();
            fill(&rig.ssd, 3 * SEG, 0xAA);
            fill(&rig.hdd, 7 * SEG, 0xBB);
            let s = start(&st, &rig.ssd, &rig.hdd, false).unwrap();
            assert_eq!(s.kind, kind);
            let (ssd_b, hdd_b) = (seg_of(&rig.ssd, 3 * SEG), seg_of(&rig.hdd, 7 * SEG));
            match kind {
                StartKind::Clean => assert_eq!((ssd_b, hdd_b, s.copied), (0xAA, 0xBB, 0)),
                StartKind::Unclean => assert_eq!((ssd_b, hdd_b, s.copied), (0xAA, 0xAA, 1)),
                StartKind::WarmStart => assert_eq!((ssd_b, hdd_b, s.copied), (0xBB, 0xBB, 1)),
                StartKind::Forced => unreachable!(),
            }
            assert_eq!((s.meta.version, s.meta.clean, s.meta.update), (3, false, false));
            assert_eq!(load(&st).unwrap().meta, s.meta, "line 46: saved");
            assert_eq!(s.meta.geometry, g);
        }
    }
}
