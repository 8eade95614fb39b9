//! The start procedure of paper 000 (Fig. 5 lines 30–48, §3.5, §3.6):
//! find the newest valid metadata, repair the cache according to how the
//! previous run ended, and save a new version with the clean bit cleared.
//!
//! Rules, with where they come from:
//! 1. **Newest valid save** (line 32; §3.2 ¶4–5, §3.7): all four copies are
//!    read (two slots, each a primary and a mirror, [`crate::meta`]); a copy
//!    is valid if its CRC-32C matches, its geometry is the configured one and
//!    its version's parity is its slot. The newest valid version `M` (serial
//!    order, wrapping) is used — but only once it is *proven* current: a
//!    newer save would live in the other slot, so that slot must still hold
//!    a valid older copy. A save that completed writes both copies, so a
//!    valid older copy there proves no newer save completed (a torn save
//!    leaves its mirror old; damage makes a copy invalid, never validly
//!    older). If both copies of the other slot are unusable — a torn save
//!    plus a damaged copy, or a newer save damaged twice, which look the same
//!    — the cache refuses to start ([`RecoverError::Ambiguous`]); two valid
//!    copies of one version that differ are refused too. The paper's rule
//!    ("if power fails while saving, the previous area's metadata can be
//!    used") is the case where the newer slot's primary is torn.
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

use crate::device::BlockDevice;
use crate::meta::{newer, Geometry, Meta, MetaStore, SlotError};

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

/// What one metadata copy holds, as `load` judged it.
#[derive(Debug)]
pub enum CopyState {
    /// A valid copy of the save in use.
    Current,
    /// A valid copy of an older save (the other slot, or a mirror whose
    /// rewrite a crash cut short).
    Older(u32),
    /// Unusable: torn, damaged, blank or unreadable.
    Bad(SlotError),
}

/// Every copy's state, `[slot][copy]`, in words.
pub fn describe_copies(copies: &[[CopyState; 2]; 2]) -> Vec<String> {
    let mut out = Vec::new();
    for (slot, pair) in copies.iter().enumerate() {
        for (copy, st) in pair.iter().enumerate() {
            let what = match st {
                CopyState::Current => "current".to_string(),
                CopyState::Older(v) => format!("older save, version {v}"),
                CopyState::Bad(e) => format!("unusable: {e}"),
            };
            out.push(format!("slot {slot} {}: {what}", crate::meta::COPIES[copy]));
        }
    }
    out
}

/// The metadata chosen by rule 1.
#[derive(Debug)]
pub struct Loaded {
    /// The newest valid save, proven current.
    pub meta: Meta,
    /// Its slot.
    pub slot: usize,
    /// What each copy held.
    pub copies: [[CopyState; 2]; 2],
}

impl Loaded {
    /// The copies that are unusable (torn or damaged): a start rewrites them.
    pub fn bad_copies(&self) -> Vec<String> {
        describe_copies(&self.copies).into_iter().filter(|d| d.contains("unusable")).collect()
    }
}

/// The outcome of [`start`].
#[derive(Debug)]
pub struct Started {
    /// The in-memory metadata to run with; already saved (clean bit 0).
    pub meta: Meta,
    /// What the previous run's end required.
    pub kind: StartKind,
    /// The version loaded.
    pub loaded_version: Option<u32>,
    /// Metadata copies found torn or damaged (rewritten by this start).
    pub repaired: Vec<String>,
    /// Segments copied (SSD→HDD or HDD→SSD).
    pub copied: u64,
}

/// Why the cache cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// No copy usable.
    #[error(
        "no usable cache metadata ({}). The SSD cache may hold writes that are not on the HDD \
         yet, so the cache refuses to start. `--force --discard-dirty` would write new, empty \
         metadata and discard the SSD cache: its {ssd_segments} segments of {segment_size} bytes, \
         including any write cached there but not yet written back to the HDD; the HDD would be \
         used as it is", .defects.join("; ")
    )]
    NoValidMetadata {
        /// Each copy's defect.
        defects: Vec<String>,
        /// SSD segments that `--force` discards.
        ssd_segments: u32,
        /// Their size.
        segment_size: u32,
    },
    /// The newest valid save cannot be proven current.
    #[error(
        "cannot prove which cache metadata is current: the newest valid save is version {version} \
         (slot {slot}, {state}), but both copies of slot {other} are unusable ({}), which is either \
         a save torn by a crash plus a damaged copy (then version {version} is current) or a newer \
         save damaged twice (then it is stale). Refusing to start. `ssdcache drain --assume-torn CACHE \
         BACKING` writes back the SSD segments as version {version} maps them (right in the first \
         case), after which the cache starts clean", .defects.join("; ")
    )]
    Ambiguous {
        /// The newest valid version.
        version: u32,
        /// Its slot.
        slot: usize,
        /// The slot with no usable copy.
        other: usize,
        /// What the newest valid save says (clean, unclean, …).
        state: String,
        /// Each copy's defect.
        defects: Vec<String>,
    },
    /// Valid copies contradict each other.
    #[error("cache metadata copies contradict each other: {0}. Refusing to start; see `ssdcache check`")]
    Inconsistent(String),
    /// Starting would discard dirty data.
    #[error("--force would discard {0}; add --discard-dirty to accept that, or run `ssdcache drain` first")]
    WouldDiscardDirty(String),
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
    Io(io::Error),
}

/// By hand, not `#[from]`: that would also make the I/O error this one's
/// source, and a chain of causes (`{:#}`) would print it twice.
impl From<io::Error> for RecoverError {
    fn from(e: io::Error) -> Self {
        RecoverError::Io(e)
    }
}

/// What a save says about the state it describes, in words.
pub fn state_words(m: &Meta) -> &'static str {
    if m.update {
        "saved during caching and eviction"
    } else if m.clean {
        "clean"
    } else {
        "not clean: may hold dirty segments"
    }
}

/// Rule 1: the newest valid save, proven current (module doc).
pub fn load<D: BlockDevice>(store: &MetaStore<D>) -> Result<Loaded, RecoverError> {
    let read = store.read_all();
    let newest = read.iter().flatten().filter_map(|r| r.as_ref().ok()).map(|m| m.version).reduce(|a, b| {
        if newer(b, a) {
            b
        } else {
            a
        }
    });
    let Some(version) = newest else {
        if read.iter().flatten().all(|r| matches!(r, Err(SlotError::Blank))) {
            return Err(RecoverError::NotFormatted);
        }
        let g = store.geometry();
        let copies = read.map(|pair| pair.map(|r| CopyState::Bad(r.expect_err("no copy is valid"))));
        return Err(RecoverError::NoValidMetadata {
            defects: describe_copies(&copies),
            ssd_segments: g.ssd_segments,
            segment_size: g.segment_size,
        });
    };
    let slot = (version & 1) as usize;
    let [[p0, m0], [p1, m1]] = read;
    let mut current: Option<Meta> = None;
    let mut judge = |r: Result<Meta, SlotError>| -> Result<CopyState, RecoverError> {
        Ok(match r {
            Err(e) => CopyState::Bad(e),
            Ok(m) if m.version != version => CopyState::Older(m.version),
            Ok(m) => {
                if let Some(c) = &current {
                    if *c != m {
                        return Err(RecoverError::Inconsistent(format!(
                            "both copies of slot {slot} hold version {version} with different contents"
                        )));
                    }
                }
                current = Some(m);
                CopyState::Current
            }
        })
    };
    let copies = [[judge(p0)?, judge(m0)?], [judge(p1)?, judge(m1)?]];
    let meta = current.expect("the newest version was read from some copy");
    let other = 1 - slot;
    if copies[other].iter().all(|c| matches!(c, CopyState::Bad(_))) {
        return Err(RecoverError::Ambiguous {
            version,
            slot,
            other,
            state: state_words(&meta).to_string(),
            defects: describe_copies(&copies).into_iter().filter(|d| d.starts_with(&format!("slot {other}"))).collect(),
        });
    }
    Ok(Loaded { meta, slot, copies })
}

/// What `--force` would throw away: `None` if the SSD holds no dirty data,
/// else a description. From the proven-current save when there is one (an
/// older save superseded by a clean stop says nothing), else from every
/// valid copy, since any of them may be the current one.
pub fn dirty_exposure<D: BlockDevice>(store: &MetaStore<D>) -> Option<String> {
    let g = *store.geometry();
    let dirty = |m: &Meta| !m.clean && !m.update;
    let read = match load(store) {
        Ok(l) => [[Ok(l.meta), Err(SlotError::Blank)], [Err(SlotError::Blank), Err(SlotError::Blank)]],
        Err(_) => store.read_all(),
    };
    if read.iter().flatten().all(|r| matches!(r, Err(SlotError::Blank))) {
        return None;
    }
    let most = read
        .iter()
        .flatten()
        .filter_map(|r| r.as_ref().ok())
        .filter(|m| dirty(m))
        .map(|m| m.map.iter().flatten().count())
        .max();
    let bytes = |n: u64| n * g.segment_size as u64;
    match most {
        Some(0) => None,
        Some(n) => Some(format!(
            "up to {n} cached segment(s) ({} bytes) that a metadata copy says may hold writes not yet on the backing store",
            bytes(n as u64)
        )),
        None if read.iter().flatten().any(|r| r.is_ok()) => None,
        None => Some(format!(
            "an unknown amount of dirty data: no metadata copy is readable, and any of the {} SSD segments ({} bytes) may hold writes not yet on the backing store",
            g.ssd_segments,
            bytes(g.ssd_segments as u64)
        )),
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

/// What the operator allows the start procedure to do.
#[derive(Clone, Copy, Debug, Default)]
pub struct StartOptions {
    /// Format afresh when no save can be used (discards the SSD cache).
    pub force: bool,
    /// ... even when a metadata copy says the SSD may hold dirty data.
    pub discard_dirty: bool,
    /// Clear the degraded bit: the operator replaced or checked the device.
    pub clear_degraded: bool,
    /// BACKING is the disk the cache was created for, though its identity
    /// changed (copied, or a renumbered device): accept and record it.
    pub backing_moved: bool,
}

/// The start procedure (Fig. 5 lines 30–48); see the module doc.
pub fn start<M: BlockDevice>(
    store: &MetaStore<M>,
    ssd: &dyn BlockDevice,
    hdd: &dyn BlockDevice,
    opts: StartOptions,
) -> Result<Started, RecoverError> {
    let g: Geometry = *store.geometry();
    let seg = g.segment_size as u64;
    check_size("SSD", ssd, g.ssd_segments as u64 * seg)?;
    check_size("HDD", hdd, g.hdd_segments * seg)?;
    let loaded = match load(store) {
        Ok(l) => l,
        Err(
            RecoverError::NotFormatted
            | RecoverError::NoValidMetadata { .. }
            | RecoverError::Ambiguous { .. }
            | RecoverError::Inconsistent(_),
        ) if opts.force => {
            if let (Some(lost), false) = (dirty_exposure(store), opts.discard_dirty) {
                return Err(RecoverError::WouldDiscardDirty(lost));
            }
            // Format the slots from a base that makes the save below land on a
            // fresh version in both slots.
            let mut meta = store.format()?;
            log::warn!("cache metadata formatted afresh (--force): SSD cache discarded");
            meta.version = meta.version.wrapping_add(1);
            meta.clean = false;
            store.write(&meta)?;
            return Ok(Started {
                meta,
                kind: StartKind::Forced,
                loaded_version: None,
                repaired: Vec::new(),
                copied: 0,
            });
        }
        Err(e) => return Err(e),
    };
    let repaired = loaded.bad_copies();
    if !repaired.is_empty() {
        log::warn!(
            "cache metadata: using version {} (slot {}); repairing {}",
            loaded.meta.version,
            loaded.slot,
            repaired.join("; ")
        );
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
    if meta.degraded && opts.clear_degraded {
        log::warn!("the degraded bit is cleared (--clear-degraded): caching resumes");
        meta.degraded = false;
    }
    // Lines 46–47; a second save when a copy was bad rewrites both slots.
    meta.clean = false;
    meta.update = false;
    for _ in 0..if repaired.is_empty() { 1 } else { 2 } {
        meta.version = meta.version.wrapping_add(1);
        store.write(&meta)?;
    }
    Ok(Started { meta, kind, loaded_version, repaired, copied })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use crate::meta::region_len;

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

        /// Formats the metadata, then saves version 2 (not clean) mapping `map`'s
        /// `(slot, segment)`s.
        fn saved_v2(&self, st: &MetaStore<&MemDevice>, map: &[(usize, u64)]) -> Meta {
            let mut m = st.format().unwrap();
            m.version = 2;
            m.clean = false;
            map.iter().for_each(|&(s, h)| m.map[s] = Some(h));
            st.write(&m).unwrap();
            m
        }
    }

    /// Overwrites bytes `start..end` of one metadata copy with junk; whether that changed anything.
    fn junk(rig: &Rig, st: &MetaStore<&MemDevice>, slot: usize, copy: usize, start: u64, end: u64) -> bool {
        let off = st.offset(slot, copy) + start;
        let mut old = vec![0; (end - start) as usize];
        rig.hdd.read_at(&mut old, off).unwrap();
        let new: Vec<u8> = (start..end).map(|i| (i as u8) ^ 0xA5).collect();
        rig.hdd.write_at(&new, off).unwrap();
        old != new
    }

    #[test]
    fn any_single_damaged_copy_or_torn_save_loads_the_current_save() {
        let covered = 64 + geom().payload_len();
        let mut tried = 0;
        // Every start and several lengths, including running to the end of
        // the slot (a truncated save: the tail still holds old bytes).
        for start in (0..covered).step_by(7) {
            for len in [1u64, 3, 64, 513, covered] {
                let end = (start + len).min(covered);
                for (slot, copy) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    let rig = Rig::new();
                    let st = rig.store();
                    let m = rig.saved_v2(&st, &[(0, 5)]);
                    if !junk(&rig, &st, slot, copy, start, end) {
                        continue;
                    }
                    // Damage to any one copy: version 2 is still proven.
                    let l =
                        load(&st).unwrap_or_else(|e| panic!("start {start} len {len} slot {slot} copy {copy}: {e}"));
                    assert_eq!((l.slot, l.meta.version), (0, 2));
                    assert_eq!(l.meta, m);
                    assert_eq!(l.bad_copies().len(), 1);
                    tried += 1;
                }
            }
        }
        assert!(tried > 500, "{tried}");
    }

    #[test]
    fn torn_save_falls_back_and_torn_plus_damage_is_refused() {
        let rig = Rig::new();
        let st = rig.store();
        let mut m = st.format().unwrap();
        m.version = 2;
        m.clean = true;
        st.write(&m).unwrap();
        // Version 3 torn in its primary (slot 1), the mirror still holding v1.
        m.version = 3;
        m.clean = false;
        m.map[1] = Some(9);
        let b = m.encode();
        rig.hdd.write_at(&b[..64], st.offset(1, 0)).unwrap();
        let l = load(&st).unwrap();
        assert_eq!((l.meta.version, l.meta.clean), (2, true), "the torn save was never acknowledged");
        assert!(matches!(l.copies[1][1], CopyState::Older(1)));
        // The primary of v3 complete, its mirror torn: v3 is used.
        rig.hdd.write_at(&b, st.offset(1, 0)).unwrap();
        rig.hdd.write_at(&b[..64], st.offset(1, 1)).unwrap();
        assert_eq!(load(&st).unwrap().meta.version, 3);
        // Torn primary plus a damaged mirror: v2 might be stale; refused.
        rig.hdd.write_at(&[0xEE; 16], st.offset(1, 0) + 100).unwrap();
        let err = load(&st).unwrap_err();
        assert!(matches!(err, RecoverError::Ambiguous { version: 2, other: 1, .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("drain") && msg.contains("slot 1 primary: unusable"), "{msg}");
        // --force may format here: the only valid copies (v2, v1) say clean.
        let s = start(&st, &rig.ssd, &rig.hdd, StartOptions { force: true, ..Default::default() }).unwrap();
        assert_eq!(s.kind, StartKind::Forced);
    }

    #[test]
    fn both_bad_is_refused_with_a_clear_error_and_force_formats() {
        let rig = Rig::new();
        let st = rig.store();
        rig.saved_v2(&st, &[(0, 3)]);
        for (slot, copy) in [(0, 0), (0, 1), (1, 0)] {
            rig.hdd.write_at(&[0xFF; 100], st.offset(slot, copy) + 70).unwrap();
        }
        rig.hdd.write_at(&[0x00; 8], st.offset(1, 1)).unwrap();
        let no = StartOptions::default();
        let err = start(&st, &rig.ssd, &rig.hdd, no).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, RecoverError::NoValidMetadata { .. }));
        assert!(msg.contains("slot 0 primary: unusable: checksum mismatch"), "{msg}");
        assert!(msg.contains("slot 1 mirror: unusable: bad magic"), "{msg}");
        assert!(msg.contains("`--force --discard-dirty`") && msg.contains("8 segments of 8192 bytes"), "{msg}");
        let err = start(&st, &rig.ssd, &rig.hdd, StartOptions { force: true, ..Default::default() }).unwrap_err();
        assert!(matches!(err, RecoverError::WouldDiscardDirty(_)), "{err}");
        assert!(err.to_string().contains("unknown amount"), "{err}");
        let s = start(&st, &rig.ssd, &rig.hdd, StartOptions { force: true, discard_dirty: true, ..Default::default() })
            .unwrap();
        assert_eq!(s.kind, StartKind::Forced);
        assert!(s.meta.map.iter().all(Option::is_none));
        assert_eq!(start(&st, &rig.ssd, &rig.hdd, no).unwrap().kind, StartKind::Unclean);
    }

    #[test]
    fn force_refuses_while_a_valid_copy_says_dirty() {
        let rig = Rig::new();
        let st = rig.store();
        let m = rig.saved_v2(&st, &[(0, 3), (4, 6)]);
        // Contradicting copies make load refuse; the dirty copy still counts.
        let mut other = m.clone();
        other.map[4] = None;
        rig.hdd.write_at(&other.encode(), st.offset(0, 1)).unwrap();
        assert!(matches!(load(&st), Err(RecoverError::Inconsistent(_))));
        let err = start(&st, &rig.ssd, &rig.hdd, StartOptions { force: true, ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("up to 2 cached segment(s) (16384 bytes)"), "{err}");
    }

    #[test]
    fn blank_is_not_formatted() {
        let rig = Rig::new();
        let err = start(&rig.store(), &rig.ssd, &rig.hdd, StartOptions::default()).unwrap_err();
        assert!(matches!(err, RecoverError::NotFormatted), "{err}");
        assert_eq!(
            start(&rig.store(), &rig.ssd, &rig.hdd, StartOptions { force: true, ..Default::default() }).unwrap().kind,
            StartKind::Forced
        );
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
        let s = start(&st, &rig.ssd, &rig.hdd, StartOptions::default()).unwrap();
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
            let s = start(&st, &rig.ssd, &rig.hdd, StartOptions::default()).unwrap();
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
