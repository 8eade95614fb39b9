//! What the data path counts ([`MapCounters`], atomics read at any time) and the
//! point-in-time [`MapStatus`] built from them and the map's shape.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{CacheMap, FlushProgress};
use crate::device::BlockDevice;
use ssdcache_block::sync::lock;

/// Byte and request counts of the data path since open (atomics: read them
/// any time).
#[derive(Debug, Default)]
pub struct MapCounters {
    /// Request pieces (one per segment touched) read from a cached segment.
    pub read_hits: AtomicU64,
    /// Request pieces read from the HDD.
    pub read_misses: AtomicU64,
    /// Write pieces that found their segment cached.
    pub write_hits: AtomicU64,
    /// Write pieces that did not.
    pub write_misses: AtomicU64,
    /// Bytes read from / written to the SSD by requests.
    pub ssd_read: AtomicU64,
    pub ssd_written: AtomicU64,
    /// Bytes read from / written to the HDD by requests.
    pub hdd_read: AtomicU64,
    pub hdd_written: AtomicU64,
    /// Segments copied HDD → SSD (fills) and SSD → HDD (write-backs).
    pub filled: AtomicU64,
    pub written_back: AtomicU64,
    /// Write-back with a replacement policy: evictions whose victim was
    /// dirty, so the miss that evicted it waited for its write-back.
    pub dirty_evictions: AtomicU64,
    /// Cache-device (SSD) and backing-device (HDD) I/O errors.
    pub ssd_errors: AtomicU64,
    pub hdd_errors: AtomicU64,
    /// Bytes requests asked to read or write.
    pub request_bytes: AtomicU64,
    /// Request pieces, and their bytes, served without touching the HDD: a
    /// read from a segment cached before the request (not filled for it), a
    /// write to a cached segment that went to the SSD only (write-back).
    pub served_pieces: AtomicU64,
    pub served_bytes: AtomicU64,
    /// Write hits that wrote the HDD all the same (write-through,
    /// write-around, double writes during a procedure, degraded; in a
    /// read-only cache the write that invalidated the segment).
    pub write_hits_to_backing: AtomicU64,
    /// Bytes trims discarded on the backing device (`--trim pass`).
    pub trimmed_bytes: AtomicU64,
    /// Bytes write-zeroes made zero on the backing device without writing
    /// them (a hole or a zeroed range).
    pub zeroed_bytes: AtomicU64,
    /// Cached segments dropped because a trim or zeroes covered them wholly
    /// (dirty ones included: never written back).
    pub trim_dropped_segments: AtomicU64,
}

/// A point-in-time copy of [`MapCounters`] plus the map's shape.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MapStatus {
    pub read_hits: u64,
    pub read_misses: u64,
    pub write_hits: u64,
    pub write_misses: u64,
    pub ssd_read: u64,
    pub ssd_written: u64,
    pub hdd_read: u64,
    pub hdd_written: u64,
    pub filled: u64,
    pub written_back: u64,
    /// Misses that waited for a dirty victim's write-back ([`MapCounters::dirty_evictions`]).
    pub dirty_evictions: u64,
    /// Slots holding a segment.
    pub cached: u64,
    /// Dirty slots, and their bytes (whole segments).
    pub dirty: u64,
    pub dirty_bytes: u64,
    /// The last durable metadata version.
    pub version: u32,
    /// A flush (`ssdcache flush`) running now: how far it is.
    pub flush: Option<FlushProgress>,
    /// Caching-and-eviction procedures completed (ever).
    pub procedures: u64,
    /// A procedure is running (writes go to both devices).
    pub in_procedure: bool,
    /// Cache-device and backing-device I/O errors since open.
    pub ssd_errors: u64,
    pub hdd_errors: u64,
    /// The cache device failed: nothing new is cached (see the module doc).
    pub degraded: bool,
    /// Bytes requests asked to read or write.
    pub request_bytes: u64,
    /// Request pieces and bytes served without touching the backing device
    /// (see [`MapCounters::served_pieces`]), and their shares.
    pub served_pieces: u64,
    pub served_pieces_ratio: Option<f64>,
    pub served_bytes: u64,
    pub served_bytes_ratio: Option<f64>,
    /// Write hits that wrote the backing device all the same.
    pub write_hits_to_backing: u64,
    /// See [`MapCounters::trimmed_bytes`], [`MapCounters::zeroed_bytes`],
    /// [`MapCounters::trim_dropped_segments`].
    pub trimmed_bytes: u64,
    pub zeroed_bytes: u64,
    pub trim_dropped_segments: u64,
}

/// How one request's pieces were served (the engine turns it into the
/// request's outcome for the metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Pieces whose segment was cached before the request arrived.
    pub hits: u32,
    /// Pieces served by the backing device, or from a segment filled for
    /// this very request.
    pub misses: u32,
}

/// Parts of the same request add up.
impl std::ops::Add for Tally {
    type Output = Tally;
    fn add(self, o: Tally) -> Tally {
        Tally { hits: self.hits + o.hits, misses: self.misses + o.misses }
    }
}

/// `part / whole`, or `None` when nothing was counted.
fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Counters and shape, now.
    pub fn status(&self) -> MapStatus {
        let c = &self.counters;
        let version = lock(&self.saves).saved.version; // saves before state, as in `save`
        let st = lock(&self.state);
        let (pieces, bytes) = (
            [&c.read_hits, &c.read_misses, &c.write_hits, &c.write_misses].iter().map(|a| a.load(Relaxed)).sum(),
            c.request_bytes.load(Relaxed),
        );
        let (served_pieces, served_bytes) = (c.served_pieces.load(Relaxed), c.served_bytes.load(Relaxed));
        MapStatus {
            request_bytes: bytes,
            served_pieces,
            served_pieces_ratio: ratio(served_pieces, pieces),
            served_bytes,
            served_bytes_ratio: ratio(served_bytes, bytes),
            write_hits_to_backing: c.write_hits_to_backing.load(Relaxed),
            trimmed_bytes: c.trimmed_bytes.load(Relaxed),
            zeroed_bytes: c.zeroed_bytes.load(Relaxed),
            trim_dropped_segments: c.trim_dropped_segments.load(Relaxed),
            read_hits: c.read_hits.load(Relaxed),
            read_misses: c.read_misses.load(Relaxed),
            write_hits: c.write_hits.load(Relaxed),
            write_misses: c.write_misses.load(Relaxed),
            ssd_read: c.ssd_read.load(Relaxed),
            ssd_written: c.ssd_written.load(Relaxed),
            hdd_read: c.hdd_read.load(Relaxed),
            hdd_written: c.hdd_written.load(Relaxed),
            filled: c.filled.load(Relaxed),
            written_back: c.written_back.load(Relaxed),
            dirty_evictions: c.dirty_evictions.load(Relaxed),
            cached: st.rev.len() as u64,
            dirty: st.dirty.iter().filter(|d| **d).count() as u64,
            dirty_bytes: st.dirty.iter().filter(|d| **d).count() as u64 * self.seg,
            version,
            flush: lock(&self.flush).filter(|_| self.flushing.load(Relaxed)),
            procedures: st.meta.procedures,
            in_procedure: self.in_procedure.load(Relaxed),
            ssd_errors: c.ssd_errors.load(Relaxed),
            hdd_errors: c.hdd_errors.load(Relaxed),
            degraded: self.degraded.load(Relaxed),
        }
    }
}
