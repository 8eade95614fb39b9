//! `ssdcache drain`: write every segment the cache may hold dirty back to
//! the backing store, offline, from whatever metadata can still be read —
//! after a kill -9, on a cache whose server refuses to start (a damaged
//! superblock copy, metadata that cannot be proven current), on a degraded
//! cache whose device returns errors.
//!
//! What it does, by the state of the newest valid save:
//! - clean: nothing to write back;
//! - saved during caching and eviction (update bit): the backing store
//!   already holds every write (the procedure wrote back first and
//!   double-wrote after), and the SSD slots may be half moved, so the map is
//!   emptied;
//! - not clean: every mapped slot is read from the SSD and written to its
//!   segment of the backing store, the backing store synced, and each
//!   segment read back and compared. A slot that cannot be read is unmapped
//!   and reported: its bytes on the backing store are older than what the
//!   cache held, and nothing better exists.
//!
//! Then the metadata is saved clean twice (so both slots, in both copies,
//! are rewritten) and a damaged superblock copy is rewritten: `check` then
//! calls the cache clean and `serve` starts it warm (the written-back map is
//! kept).

use std::io;
use std::path::Path;

use crate::device::Region;
use crate::device::{BlockDevice, FileDevice};
use crate::files::{check_backing, open_pair, BOTH_COPIES};
use crate::meta::{newer, Meta, MetaStore};
use crate::recover::{self, RecoverError};
use crate::superblock::{SuperRead, Superblock};

/// What a drain did.
#[derive(Debug, Default, serde::Serialize)]
pub struct DrainReport {
    /// The metadata version drained from.
    pub version: u32,
    /// Its state before the drain (clean, not clean, …).
    pub state: String,
    /// A caveat about the metadata used (it could not be proven current).
    pub assumption: Option<String>,
    /// Segments written back and verified.
    pub written_back: u64,
    /// Backing-store byte ranges `(offset, len)` whose newest data was on an
    /// unreadable SSD slot: they hold older data.
    pub unreadable: Vec<(u64, u64)>,
    /// Metadata copies or superblock copies that were rewritten.
    pub repaired: Vec<String>,
}

/// The newest valid save, proven or not (the caller says which).
fn newest_valid<D: BlockDevice>(store: &MetaStore<D>) -> Option<Meta> {
    store.read_all().into_iter().flatten().filter_map(Result::ok).reduce(|a, b| {
        if newer(b.version, a.version) {
            b
        } else {
            a
        }
    })
}

/// Drains `cache` into `backing` (see the module doc). `backing_moved`: BACKING is
/// the cache's own disk although its identity changed. `assume_torn`: when
/// the newest valid save cannot be proven current (a slot unusable in both
/// copies, [`RecoverError::Ambiguous`]), drain by it anyway — right if that
/// slot holds a save torn by a crash plus one damaged copy, wrong if it held
/// a newer save damaged twice; without it such a cache is refused.
/// `progress(done, total)` is called after each segment.
pub fn drain(
    cache: &Path,
    backing: &Path,
    assume_torn: bool,
    backing_moved: bool,
    mut progress: impl FnMut(u64, u64),
) -> io::Result<DrainReport> {
    let (dev, hdd) = open_pair(cache, backing)?;
    let SuperRead { mut sb, mut damaged } = Superblock::read_either(&dev)?;
    if let Some(moved) = check_backing(&mut sb, &hdd, backing, backing_moved)? {
        damaged = Some(moved);
    }
    let g = sb.geometry;
    let seg = g.segment_size as u64;
    if hdd.len() != g.hdd_segments * seg {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the backing store has {} bytes; this cache was created for one of {}",
                hdd.len(),
                g.hdd_segments * seg
            ),
        ));
    }
    let store = sb.store(FileDevice::open(cache)?)?;
    let mut report = DrainReport::default();
    let (mut meta, repaired) = match recover::load(&store) {
        Ok(l) => {
            let bad = l.bad_copies();
            (l.meta, bad)
        }
        Err(e @ RecoverError::Ambiguous { .. }) if !assume_torn => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{e}. `drain --assume-torn` drains by that save if you accept that the unusable slot \
                     held a save torn by a crash (one damaged copy on top); keep a copy of the cache file first"
                ),
            ))
        }
        Err(e @ RecoverError::Ambiguous { .. }) => {
            report.assumption = Some(format!(
                "assumed the unusable slot held a save torn by a crash, so the newest valid save is current ({e})"
            ));
            (newest_valid(&store).expect("an ambiguous load has a valid save"), vec!["the unusable slot".into()])
        }
        Err(RecoverError::NotFormatted) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the cache's metadata was never written: nothing to drain",
            ))
        }
        Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("cannot drain: {e}"))),
    };
    report.version = meta.version;
    report.state = recover::state_words(&meta).to_string();
    report.repaired = repaired;
    let ssd = Region::new(&dev, sb.data_offset, sb.data_end() - sb.data_offset)?;
    if meta.update {
        meta.map.iter_mut().for_each(|m| *m = None);
    } else if !meta.clean {
        let mapped: Vec<(usize, u64)> = meta.map.iter().enumerate().filter_map(|(s, h)| h.map(|h| (s, h))).collect();
        let total = mapped.len() as u64 * 2;
        let mut data = vec![0u8; seg as usize];
        let mut written = Vec::new();
        for (i, &(s, h)) in mapped.iter().enumerate() {
            progress(i as u64, total);
            match ssd.read_at(&mut data, s as u64 * seg) {
                Ok(()) => {
                    hdd.write_at(&data, h * seg)?;
                    written.push((s, h));
                }
                Err(e) => {
                    log::error!("SSD slot {s} (backing bytes {}..{}) unreadable: {e}", h * seg, (h + 1) * seg);
                    report.unreadable.push((h * seg, seg));
                    meta.map[s] = None;
                }
            }
        }
        hdd.sync()?;
        // Verify what was written against the SSD, read again.
        let mut back = vec![0u8; seg as usize];
        for (i, &(s, h)) in written.iter().enumerate() {
            progress(mapped.len() as u64 + i as u64, total);
            ssd.read_at(&mut data, s as u64 * seg)?;
            hdd.read_at(&mut back, h * seg)?;
            if back != data {
                return Err(io::Error::other(format!(
                    "verification failed: backing bytes {}..{} differ from SSD slot {s} after writing them back",
                    h * seg,
                    (h + 1) * seg
                )));
            }
        }
        report.written_back = written.len() as u64;
        progress(total, total);
    }
    meta.clean = true;
    meta.update = false;
    for _ in 0..2 {
        meta.version = meta.version.wrapping_add(1);
        store.write(&meta)?;
    }
    if let Some((at, what)) = damaged {
        for at in if at == BOTH_COPIES { vec![0, sb.backup_offset] } else { vec![at] } {
            dev.write_at(&sb.encode(), at)?;
            report.repaired.push(format!("superblock copy at offset {at} ({what})"));
        }
        dev.sync()?;
    }
    Ok(report)
}
