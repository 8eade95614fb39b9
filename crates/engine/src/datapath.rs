//! The data path through the persistent map (paper 000 §3.1, §3.6, Fig. 5),
//! safe to call from many threads at once.
//!
//! - A read or write is split at segment boundaries; a segment cached in SSD
//!   slot `s` is served by the SSD, any other by the HDD (§3.1).
//! - **Write-back** ([`WriteMode::Back`], PWC): a write to a cached segment
//!   goes to the SSD only and marks the slot dirty in the in-memory data
//!   bitmap (Fig. 3; never stored, §3.2). **Write-through**
//!   ([`WriteMode::Through`]): every write goes to the HDD, and to the SSD
//!   too when the segment is cached; nothing is ever dirty.
//!   **Invalidate** ([`WriteMode::Invalidate`], the read-only cache of paper
//!   000's LRU baseline): every write goes to the HDD only, and a cached
//!   segment it touches is dropped from the map first (under its lock, so no
//!   read sees the stale copy); nothing is ever dirty.
//! - [`CacheMap::caching_and_eviction`] runs Fig. 5 lines 4–26 for a *plan*
//!   (which HDD segment goes to which slot; the engine takes it from the PWC
//!   policy): from its start writes are *double writes* to both devices
//!   (§3.6), so nothing becomes dirty while it runs; every dirty slot is
//!   written back and the HDD synced (line 4); save with the update bit
//!   (line 5); each planned slot is remapped and refilled holding the locks
//!   of the segment leaving and the one arriving (lines 12–23); the SSD is
//!   synced; save with the update bit cleared (line 26). Requests on other
//!   segments go on meanwhile.
//! - [`CacheMap::replace`]: one slot refilled at once (write-through caches
//!   fill on a miss, in real time).
//! - [`CacheMap::shutdown`] is lines 50–54.
//!
//! **Device failures** (ours; the paper assumes devices that do not fail).
//! A cache-device error never turns into stale data or a lost
//! acknowledged write:
//! - a read of a *clean* cached segment that fails is served from the HDD
//!   (clean means the HDD holds the same bytes); of a *dirty* one, it is an
//!   error reply — its newest data exists only on the SSD;
//! - a failed SSD write is an error reply, except in a write that went
//!   through to the HDD first (degraded, or during a procedure): a dirty
//!   slot's bytes are written back with the new piece laid over them, then
//!   the slot, clean now, is unmapped and the map saved (so no later
//!   unclean start copies the stale slot back) before the write is
//!   acknowledged;
//! - after `error_limit` cache-device errors, or at once when the device
//!   shrank, the cache is **degraded**: writes go through to the HDD, nothing
//!   new is cached, and [`CacheMap::settle_degraded`] (called by the engine,
//!   with back-off) writes every dirty slot back and then saves an empty map
//!   with the degraded bit, which survives restarts until the operator
//!   clears it. A dirty slot that cannot be read is never written back with
//!   whatever bytes are there: it stays dirty, shutdown does not save the
//!   clean bit, and `ssdcache drain` reports its range.
//! - HDD errors are error replies; a failed write-back leaves its slot dirty.
//!
//! **Concurrency.** The map's state (address map, radix tree, dirty bitmap)
//! sits behind one short-held mutex; device I/O runs outside it, under the
//! [`SegmentLocks`] of the segments involved. A request resolves its
//! targets (slot or HDD, and marks dirty) while holding its segments' locks,
//! so it and any slot move or write-back of those segments are ordered.
//! Saves are serialised by their own mutex; procedures, write-backs and
//! shutdown by another ("admin").
//!
//! **The background cleaner** (write-back; beyond the paper, see
//! `cache::cleaner`). A [`DirtyWatch`] set with [`CacheMap::set_watch`] is
//! told, under the map's mutex, of every slot that goes clean → dirty and
//! of every write-back that cleans one (whoever does it), so the dirty
//! bitmap stays the one source of truth and the watch never disagrees with
//! it. [`CacheMap::clean_one`] writes back the slot the watch picks, holding
//! the admin mutex (no slot moves meanwhile) and the segment's lock (no
//! write to it meanwhile), with the procedure's own [`write_back_slot`]: the
//! slot is marked clean only after its bytes reached the backing device, and
//! a write after that marks it dirty again. The cleaner syncs the backing
//! device after each batch ([`CacheMap::sync_backing`]); until then a
//! crash loses nothing either, since dirty state is never saved and an
//! unclean start copies every mapped slot back (Fig. 5 line 47).
//!
//! **What a write-through map persists.** Its slots change at every miss, so
//! a map saved while it runs would be stale after a crash, and the unclean
//! start (rule 3) would copy stale slots over the HDD. It therefore saves an
//! *empty* map while running (at open, before serving) and the real one only
//! with the clean bit at shutdown, after syncing the SSD: after a crash it
//! restarts empty (the HDD has every write), after a clean stop it restarts
//! warm. An invalidate (read-only) map does the same, for one more reason: a
//! write drops its segment from the map in memory only, so no saved map
//! must outlive a crash, or a restart would serve the dropped slot's stale
//! copy; the clean save at shutdown holds every segment lock, so it comes
//! after every acknowledged write's invalidation.

use std::any::Any;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use crate::device::BlockDevice;
use crate::locks::SegmentLocks;
use crate::meta::{Meta, MetaStore};
use crate::recover::{self, RecoverError, StartOptions, Started};
use ssdcache_block::sync::lock;

/// Paper 000's frequency increment per reference (§3.3).
const INCREMENT: u16 = 5;

/// How writes to cached segments are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// To the SSD only, dirty until written back (PWC).
    Back,
    /// To the HDD and to the cached copy; never dirty.
    Through,
    /// To the HDD only; a cached copy is dropped (invalidated). Never dirty.
    Invalidate,
}

/// Told of every change of a slot's dirty state, under the map's mutex (the
/// background cleaner's bookkeeping; see the module doc).
pub trait DirtyWatch: Any + Send {
    /// Slot `slot` went from clean to dirty.
    fn dirtied(&mut self, slot: u32);
    /// Slot `slot`'s data was written to the backing device (not yet synced).
    fn cleaned(&mut self, slot: u32);
}

/// What [`CacheMap::clean_one`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CleanOne {
    /// The watch picked nothing (nothing due, or its rate says wait).
    Nothing,
    /// Slot `slot`, caching segment `segment`, was written back.
    Cleaned { slot: u32, segment: u64 },
    /// Shut down or degraded (degraded: `settle_degraded` writes back).
    Stopped,
}

/// What a flush (`ssdcache flush`) did, or is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FlushProgress {
    /// Slots written back so far, of those dirty when it started.
    pub written_back: u64,
    pub total: u64,
    /// Stopped early by [`CacheMap::stop_write_back`] (what was written back
    /// stays written back, and synced).
    pub interrupted: bool,
}

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

struct State {
    /// In-memory metadata (Fig. 3); `meta.version` is the last saved one.
    meta: Meta,
    /// The radix tree of §3.1: HDD segment → SSD slot.
    rev: HashMap<u64, u32>,
    /// Data bitmap (Fig. 3): dirty SSD slots.
    dirty: Vec<bool>,
    /// Writes go to both devices: always in write-through mode, and during
    /// the procedure in write-back mode (§3.6). Left set if a procedure
    /// fails half way, so that nothing becomes dirty until one completes.
    through: bool,
    /// Set by shutdown: no more requests.
    closed: bool,
    /// Slots whose SSD copy is stale while the durable map still maps them
    /// (a failed write whose unmapping could not be saved): read from the
    /// HDD, and writes to them fail, until a save unmaps them.
    poisoned: Vec<bool>,
    /// Told of every change of `dirty` (the background cleaner).
    watch: Option<Box<dyn DirtyWatch>>,
}

impl State {
    fn set_dirty(&mut self, s: u32) {
        if !std::mem::replace(&mut self.dirty[s as usize], true) {
            if let Some(w) = &mut self.watch {
                w.dirtied(s);
            }
        }
    }

    fn set_clean(&mut self, s: u32) {
        if std::mem::replace(&mut self.dirty[s as usize], false) {
            if let Some(w) = &mut self.watch {
                w.cleaned(s);
            }
        }
    }
}

struct Saves<M> {
    store: MetaStore<M>,
    /// The last save that completed (durable).
    saved: Meta,
    /// A save in progress (set until it is durable).
    saving: Option<Meta>,
}

/// Where one piece of a request goes.
#[derive(Clone, Copy)]
struct Piece {
    hdd_seg: u64,
    within: u64,
    pos: usize,
    len: usize,
    slot: Option<u32>,
}

/// A persistent SSD cache over an HDD, reading and writing through the map.
pub struct CacheMap<S, H, M> {
    ssd: S,
    hdd: H,
    seg: u64,
    /// Logical size (the HDD's segments), fixed.
    len: u64,
    mode: WriteMode,
    state: Mutex<State>,
    saves: Mutex<Saves<M>>,
    locks: SegmentLocks,
    admin: Mutex<()>,
    counters: MapCounters,
    /// Set by [`CacheMap::interrupt`]: a running procedure stops at its next
    /// slot boundary.
    interrupted: AtomicBool,
    /// A flush runs; its progress; asked to stop.
    flushing: AtomicBool,
    flush: Mutex<Option<FlushProgress>>,
    flush_stop: AtomicBool,
    /// A procedure is running.
    in_procedure: AtomicBool,
    /// Cache-device errors that make the cache degraded.
    error_limit: AtomicU64,
    /// Degraded (mirrors `meta.degraded`, readable without the lock).
    degraded: AtomicBool,
}

/// Segments one block status query looks at, at most.
const MAX_STATUS_SEGMENTS: u64 = 4096;

/// Cache-device errors before the cache goes degraded, unless configured.
pub const DEFAULT_ERROR_LIMIT: u64 = 8;

fn closed() -> io::Error {
    io::Error::other("the cache has been shut down")
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> CacheMap<S, H, M> {
    /// Runs the start procedure ([`recover::start`]) and opens the cache in
    /// write-back mode.
    pub fn open(ssd: S, hdd: H, store: MetaStore<M>, force: bool) -> Result<(Self, Started), RecoverError> {
        Self::open_with(ssd, hdd, store, StartOptions { force, ..Default::default() }, WriteMode::Back)
    }

    /// Runs the start procedure and opens the cache in `mode`. A
    /// write-through or invalidate map then saves an empty map before serving
    /// (module doc).
    pub fn open_with(
        ssd: S,
        hdd: H,
        store: MetaStore<M>,
        opts: StartOptions,
        mode: WriteMode,
    ) -> Result<(Self, Started), RecoverError> {
        let started = recover::start(&store, &ssd, &hdd, opts)?;
        let meta = started.meta.clone();
        let rev = meta.map.iter().enumerate().filter_map(|(s, h)| h.map(|h| (h, s as u32))).collect();
        let dirty = vec![false; meta.map.len()];
        let seg = meta.geometry.segment_size as u64;
        let len = meta.geometry.hdd_segments * seg;
        let through = mode != WriteMode::Back || meta.degraded;
        let degraded = AtomicBool::new(meta.degraded);
        let poisoned = vec![false; meta.map.len()];
        let state = State { meta: meta.clone(), rev, dirty, through, closed: false, poisoned, watch: None };
        let saves = Saves { store, saved: meta, saving: None };
        let map = CacheMap {
            ssd,
            hdd,
            seg,
            len,
            mode,
            state: Mutex::new(state),
            saves: Mutex::new(saves),
            locks: SegmentLocks::new(),
            admin: Mutex::new(()),
            counters: MapCounters::default(),
            interrupted: Default::default(),
            flushing: Default::default(),
            flush: Default::default(),
            flush_stop: Default::default(),
            in_procedure: Default::default(),
            error_limit: AtomicU64::new(DEFAULT_ERROR_LIMIT),
            degraded,
        };
        if mode != WriteMode::Back && started.meta.map.iter().any(|m| m.is_some()) {
            map.save(|_| {})?;
        }
        Ok((map, started))
    }

    /// A copy of the in-memory metadata.
    pub fn meta(&self) -> Meta {
        lock(&self.state).meta.clone()
    }

    /// Reads the in-memory metadata without copying it.
    pub fn with_meta<T>(&self, f: impl FnOnce(&Meta) -> T) -> T {
        f(&lock(&self.state).meta)
    }

    /// The last durable save.
    pub fn saved(&self) -> Meta {
        lock(&self.saves).saved.clone()
    }

    /// A save that was started but has not completed.
    pub fn saving(&self) -> Option<Meta> {
        lock(&self.saves).saving.clone()
    }

    /// The slot caching HDD segment `h`, if any.
    pub fn slot_of(&self, h: u64) -> Option<u32> {
        lock(&self.state).rev.get(&h).copied()
    }

    /// Whether [`shutdown`](Self::shutdown) has completed.
    pub fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// The write mode.
    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    /// Logical size: the HDD's segments.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Segment size in bytes.
    pub fn segment_size(&self) -> u64 {
        self.seg
    }

    /// Whether the logical device is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

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

    /// Splits `offset..offset+len` at segment boundaries (slots unresolved).
    fn pieces(&self, offset: u64, len: usize) -> io::Result<Vec<Piece>> {
        crate::device::check_range(self.len(), offset, len)?;
        let seg = self.seg;
        let mut out = Vec::with_capacity(2);
        let (mut at, end) = (offset, offset + len as u64);
        while at < end {
            let n = (seg - at % seg).min(end - at);
            out.push(Piece {
                hdd_seg: at / seg,
                within: at % seg,
                pos: (at - offset) as usize,
                len: n as usize,
                slot: None,
            });
            at += n;
        }
        Ok(out)
    }

    /// The allocation of `offset..offset+len` as a reader sees it: a segment
    /// the cache holds (clean or dirty) is data, whatever the HDD says (a
    /// dirty segment over an HDD hole holds data the HDD has not seen yet);
    /// any other piece is what the HDD reports. At most `max` extents, then
    /// a prefix of the range. Each segment is looked at under its lock, so a
    /// write-back or a slot move of it cannot fall between the two looks.
    pub fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<ssdcache_block::Extent>> {
        use ssdcache_block::extents::{push, Extent};
        crate::device::check_range(self.len(), offset, len as usize)?;
        let (seg, end) = (self.seg, offset + len);
        let mut out: Vec<Extent> = Vec::new();
        let mut at = offset;
        // Bounded work per query (a lock and two lseeks per segment): at most
        // this many segments, then the prefix so far (the client asks again).
        let stop = end.min(offset.saturating_add(MAX_STATUS_SEGMENTS * seg - offset % seg));
        while at < stop && out.len() < max.max(1) {
            let h = at / seg;
            let n = (seg - at % seg).min(stop - at);
            let _held = self.locks.lock([h]);
            let cached = {
                let st = lock(&self.state);
                if st.closed {
                    return Err(closed());
                }
                st.rev.contains_key(&h)
            };
            if cached {
                push(&mut out, Extent::data(n));
            } else {
                // Room for this piece's extents, keeping the merged list within `max`.
                let room = (max.max(1) - out.len()).max(1);
                let piece = self.hdd.extents(at, n, room).map_err(|e| self.hdd_failed(e))?;
                let covered: u64 = piece.iter().map(|e| e.len).sum();
                for e in piece {
                    push(&mut out, e);
                }
                if covered < n {
                    break; // the device stopped early: report the prefix
                }
            }
            at += n;
        }
        out.truncate(max.max(1));
        Ok(out)
    }

    /// Reads through the map.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_filled(buf, offset, &[]).map(drop)
    }

    /// Reads through the map; pieces of the segments in `filled` (copied
    /// from the HDD for this very request: a real-time fill) are counted as
    /// misses, not as hits served without the backing device.
    pub fn read_filled(&self, buf: &mut [u8], offset: u64, filled: &[u64]) -> io::Result<Tally> {
        let mut pieces = self.pieces(offset, buf.len())?;
        let _held = self.locks.lock(pieces.iter().map(|p| p.hdd_seg));
        {
            let st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            for p in &mut pieces {
                p.slot = st.rev.get(&p.hdd_seg).copied().filter(|&s| !st.poisoned[s as usize]);
            }
        }
        let c = &self.counters;
        c.request_bytes.fetch_add(buf.len() as u64, Relaxed);
        let mut tally = Tally::default();
        for p in &pieces {
            let b = &mut buf[p.pos..p.pos + p.len];
            if let Some(s) = p.slot {
                match self.ssd.read_at(b, s as u64 * self.seg + p.within) {
                    Ok(()) => {
                        c.ssd_read.fetch_add(p.len as u64, Relaxed);
                        if filled.contains(&p.hdd_seg) {
                            c.read_misses.fetch_add(1, Relaxed);
                            tally.misses += 1;
                        } else {
                            c.read_hits.fetch_add(1, Relaxed);
                            tally.hits += 1;
                            c.served_pieces.fetch_add(1, Relaxed);
                            c.served_bytes.fetch_add(p.len as u64, Relaxed);
                        }
                        continue;
                    }
                    Err(e) => {
                        self.ssd_failed(&e);
                        // We hold the segment's lock: its dirty bit is stable.
                        if lock(&self.state).dirty[s as usize] {
                            return Err(io::Error::new(
                                e.kind(),
                                format!(
                                    "segment {} holds writes not yet on the backing store, and the cache device \
                                     failed to read them: {e}",
                                    p.hdd_seg
                                ),
                            ));
                        }
                        // Clean: the HDD holds the same bytes.
                    }
                }
            }
            self.hdd.read_at(b, p.hdd_seg * self.seg + p.within).map_err(|e| self.hdd_failed(e))?;
            c.read_misses.fetch_add(1, Relaxed);
            c.hdd_read.fetch_add(p.len as u64, Relaxed);
            tally.misses += 1;
        }
        Ok(tally)
    }

    /// Counts a cache-device error; enough of them (or a device that
    /// shrank) make the cache degraded.
    fn ssd_failed(&self, e: &io::Error) {
        let n = self.counters.ssd_errors.fetch_add(1, Relaxed) + 1;
        let shrunk = e.to_string().contains("shrank");
        log::error!("cache device error #{n}: {e}");
        if (shrunk || n >= self.error_limit.load(Relaxed)) && !self.degraded.swap(true, Relaxed) {
            log::error!("the cache is now DEGRADED: writes go to the backing store, nothing new is cached");
            let mut st = lock(&self.state);
            st.through = true;
            st.meta.degraded = true;
        }
    }

    /// Counts a backing-device error and passes it on.
    fn hdd_failed(&self, e: io::Error) -> io::Error {
        let n = self.counters.hdd_errors.fetch_add(1, Relaxed) + 1;
        log::error!("backing device error #{n}: {e}");
        e
    }

    /// Whether the cache is degraded.
    pub fn is_degraded(&self) -> bool {
        self.degraded.load(Relaxed)
    }

    /// Cache-device errors before the cache goes degraded (at least 1).
    pub fn set_error_limit(&self, n: u64) {
        self.error_limit.store(n.max(1), Relaxed);
    }

    /// Whether a degraded cache still maps slots (dirty or not): the engine
    /// calls [`settle_degraded`](Self::settle_degraded) until it does not.
    pub fn needs_settling(&self) -> bool {
        self.is_degraded() && !lock(&self.state).rev.is_empty()
    }

    /// Replaces the frequency table (and the touched bits) the next save
    /// persists: the engine keeps its policy's there (PWC's, counting reads
    /// and decayed at each procedure) instead of the map's own count of
    /// writes. `freq(h)` is `None` for a segment never referenced.
    pub fn set_frequencies(&self, freq: impl Fn(u64) -> Option<u16>) {
        let mut st = lock(&self.state);
        let m = &mut st.meta;
        for (h, (f, t)) in m.freq.iter_mut().zip(m.touched.iter_mut()).enumerate() {
            let v = freq(h as u64);
            *t = v.is_some();
            *f = v.unwrap_or(0);
        }
    }

    /// Writes through the map: to the SSD only for a cached segment in
    /// write-back mode (dirty); to the HDD only, dropping any cached copy, in
    /// invalidate mode; to the HDD and any cached copy otherwise.
    pub fn write(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.write_filled(data, offset, &[], &[]).map(drop)
    }

    /// Invalidate mode: drops HDD segment `h` from the map now (under its
    /// lock, so after any request reading its slot), for a write about to
    /// go to the HDD. Like the write's own drop, never persisted while
    /// running. Returns whether it was cached.
    pub fn invalidate(&self, h: u64) -> bool {
        let _held = self.locks.lock([h]);
        let mut st = lock(&self.state);
        if st.closed {
            return false;
        }
        match st.rev.remove(&h) {
            Some(s) => {
                st.meta.map[s as usize] = None;
                true
            }
            None => false,
        }
    }

    /// [`write`](Self::write); pieces of the segments in `filled` (filled
    /// from the HDD for this request: a write-through cache's write miss)
    /// are counted as misses, those in `dropped` (invalidated for this
    /// write by [`invalidate`](Self::invalidate)) as write hits.
    pub fn write_filled(&self, data: &[u8], offset: u64, filled: &[u64], dropped: &[u64]) -> io::Result<Tally> {
        let mut pieces = self.pieces(offset, data.len())?;
        let invalidate = self.mode == WriteMode::Invalidate;
        // Pieces whose segment was cached when the write arrived.
        let mut found = vec![false; pieces.len()];
        let _held = self.locks.lock(pieces.iter().map(|p| p.hdd_seg));
        let through = {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            let through = st.through;
            if let Some(p) = pieces.iter().find(|p| st.rev.get(&p.hdd_seg).is_some_and(|&s| st.poisoned[s as usize])) {
                return Err(io::Error::other(format!(
                    "segment {} cannot be written: its stale cached copy could not be dropped from the saved map",
                    p.hdd_seg
                )));
            }
            for (p, found) in pieces.iter_mut().zip(&mut found) {
                let h = p.hdd_seg as usize;
                st.meta.freq[h] = st.meta.freq[h].saturating_add(INCREMENT);
                st.meta.touched[h] = true;
                p.slot = st.rev.get(&p.hdd_seg).copied();
                *found = (p.slot.is_some() && !filled.contains(&p.hdd_seg)) || dropped.contains(&p.hdd_seg);
                if let (Some(s), true) = (p.slot, invalidate) {
                    // Dropped before the write reaches the HDD, under the
                    // segment's lock: no read can see the old copy after it.
                    // Never persisted while running (see `save`), so a crash
                    // cannot bring the slot back either.
                    st.rev.remove(&p.hdd_seg);
                    st.meta.map[s as usize] = None;
                    p.slot = None;
                } else if let (Some(s), false) = (p.slot, through) {
                    st.set_dirty(s);
                }
            }
            through
        };
        let c = &self.counters;
        c.request_bytes.fetch_add(data.len() as u64, Relaxed);
        let mut tally = Tally::default();
        for (p, &found) in pieces.iter().zip(&found) {
            if found {
                tally.hits += 1;
            } else {
                tally.misses += 1;
            }
            let d = &data[p.pos..p.pos + p.len];
            let n = p.len as u64;
            if through || p.slot.is_none() {
                self.hdd.write_at(d, p.hdd_seg * self.seg + p.within).map_err(|e| self.hdd_failed(e))?;
                c.hdd_written.fetch_add(n, Relaxed);
            }
            match p.slot {
                Some(s) => {
                    if let Err(e) = self.ssd.write_at(d, s as u64 * self.seg + p.within) {
                        self.ssd_failed(&e);
                        if through {
                            // The backing store has this piece; a dirty slot's
                            // other bytes go there too, so the slot is clean
                            // (and then dropped) instead of failing the write.
                            self.merge_back(s, p.hdd_seg, d, p.within).map_err(|me| {
                                io::Error::new(
                                    e.kind(),
                                    format!("{e}; and the segment could not be written back: {me}"),
                                )
                            })?;
                        }
                        self.drop_stale_slot(s, p.hdd_seg, through, e)?;
                        continue;
                    }
                    c.ssd_written.fetch_add(n, Relaxed);
                    if !found {
                        c.write_misses.fetch_add(1, Relaxed);
                    } else if through {
                        c.write_hits.fetch_add(1, Relaxed);
                        c.write_hits_to_backing.fetch_add(1, Relaxed);
                    } else {
                        c.write_hits.fetch_add(1, Relaxed);
                        c.served_pieces.fetch_add(1, Relaxed);
                        c.served_bytes.fetch_add(n, Relaxed);
                    }
                }
                None if found => {
                    // Invalidate mode: the segment was cached and is dropped.
                    c.write_hits.fetch_add(1, Relaxed);
                    c.write_hits_to_backing.fetch_add(1, Relaxed);
                }
                None => {
                    c.write_misses.fetch_add(1, Relaxed);
                }
            }
        }
        Ok(tally)
    }

    /// After a failed SSD write of `piece` (at `within` of segment `h`, whose
    /// lock the caller holds) that already reached the HDD: if slot `s` is
    /// dirty, its bytes with `piece` laid over them are written to the HDD
    /// and the slot marked clean, so a degraded cache (or a procedure's
    /// double writes) serves the write instead of failing it while the slot
    /// waits for its write-back. A slot that cannot be read stays dirty.
    fn merge_back(&self, s: u32, h: u64, piece: &[u8], within: u64) -> io::Result<()> {
        if !lock(&self.state).dirty[s as usize] {
            return Ok(());
        }
        let mut buf = vec![0u8; self.seg as usize];
        self.ssd.read_at(&mut buf, s as u64 * self.seg).inspect_err(|e| self.ssd_failed(e))?;
        buf[within as usize..within as usize + piece.len()].copy_from_slice(piece);
        self.hdd.write_at(&buf, h * self.seg).map_err(|e| self.hdd_failed(e))?;
        lock(&self.state).set_clean(s);
        self.counters.written_back.fetch_add(1, Relaxed);
        Ok(())
    }

    /// After a failed SSD write to slot `s` (caching `h`, whose lock the
    /// caller holds): if the write went to the HDD too and the slot is clean,
    /// the HDD is right and the slot stale, so the slot is unmapped and the
    /// map saved before the write is acknowledged; otherwise the write fails.
    fn drop_stale_slot(&self, s: u32, h: u64, through: bool, e: io::Error) -> io::Result<()> {
        if !through || lock(&self.state).dirty[s as usize] {
            return Err(e);
        }
        // Saved first, unmapped in memory after: until the save is durable a
        // crash would copy the stale slot back, so nothing may be
        // acknowledged on the HDD alone. The HDD is synced before: the slot
        // may be clean by a write-back (cleaner, flush) not yet synced, and
        // once unmapped no unclean start copies it back.
        let saved =
            self.hdd.sync().map_err(|e| self.hdd_failed(e)).and_then(|()| self.save(|m| m.map[s as usize] = None));
        let mut st = lock(&self.state);
        match saved {
            Ok(()) => {
                st.rev.remove(&h);
                log::warn!("slot {s} (segment {h}) dropped from the cache after a failed write to it");
                Ok(())
            }
            Err(se) => {
                st.meta.map[s as usize] = Some(h);
                st.poisoned[s as usize] = true;
                Err(io::Error::new(e.kind(), format!("{e}; and the map could not be saved: {se}")))
            }
        }
    }

    /// Makes every returned write durable (an NBD flush). Every write that
    /// returned has reached both devices' files, so syncing both covers it.
    pub fn flush(&self) -> io::Result<()> {
        self.ssd.sync()?;
        self.hdd.sync()
    }

    /// Saves the in-memory metadata as the next version, after `edit`. A
    /// write-through or invalidate map saves an empty map unless `edit` set
    /// the clean bit.
    fn save(&self, edit: impl FnOnce(&mut Meta)) -> io::Result<()> {
        let mut saves = lock(&self.saves);
        let mut m = {
            let mut st = lock(&self.state);
            st.meta.version = saves.saved.version.wrapping_add(1);
            edit(&mut st.meta);
            st.meta.clone()
        };
        if self.mode != WriteMode::Back && !m.clean {
            m.map.iter_mut().for_each(|s| *s = None);
        }
        saves.saving = Some(m);
        saves.store.write(saves.saving.as_ref().expect("set above"))?;
        saves.saved = saves.saving.take().expect("set above");
        Ok(())
    }

    /// The dirty slots and the segments they cache.
    fn dirty_slots(&self) -> io::Result<Vec<(u32, u64)>> {
        let st = lock(&self.state);
        if st.closed {
            return Err(closed());
        }
        let slots = st.dirty.iter().enumerate().filter(|(_, d)| **d);
        Ok(slots.map(|(s, _)| (s as u32, st.meta.map[s].expect("a dirty slot caches a segment"))).collect())
    }

    /// Copies dirty slot `s` to HDD segment `h`; the caller holds `h`.
    fn write_back_slot(&self, s: u32, h: u64, buf: &mut [u8]) -> io::Result<()> {
        self.ssd.read_at(buf, s as u64 * self.seg).inspect_err(|e| self.ssd_failed(e))?;
        self.hdd.write_at(buf, h * self.seg).map_err(|e| self.hdd_failed(e))?;
        // Only now, with the bytes on the backing device (a crash before its
        // sync loses nothing: dirty state is never saved, see the module doc).
        lock(&self.state).set_clean(s);
        self.counters.written_back.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Sets the watch told of every dirty-state change, first told of the
    /// slots dirty now.
    pub fn set_watch(&self, mut w: Box<dyn DirtyWatch>) {
        let mut st = lock(&self.state);
        for (s, _) in st.dirty.iter().enumerate().filter(|(_, d)| **d) {
            w.dirtied(s as u32);
        }
        st.watch = Some(w);
    }

    /// Runs `f` on the watch (downcast to `W`) under the map's mutex;
    /// `None` without a watch of that type.
    pub fn with_watch<W: DirtyWatch, T>(&self, f: impl FnOnce(&mut W) -> T) -> Option<T> {
        let mut st = lock(&self.state);
        let w: &mut dyn Any = st.watch.as_deref_mut()?;
        w.downcast_mut::<W>().map(f)
    }

    /// The background cleaner's step: under the admin mutex, `pick` (run on
    /// the watch under the map's mutex) names a dirty slot, which is
    /// written back under its segment's lock by the procedure's own code.
    /// A failed write-back leaves the slot dirty. Not synced: see
    /// [`sync_backing`](Self::sync_backing).
    pub fn clean_one<W: DirtyWatch>(
        &self,
        pick: impl FnOnce(&mut W) -> Option<u32>,
        buf: &mut [u8],
    ) -> io::Result<CleanOne> {
        let _admin = lock(&self.admin);
        if self.is_degraded() {
            return Ok(CleanOne::Stopped);
        }
        let (slot, h) = {
            let mut st = lock(&self.state);
            if st.closed {
                return Ok(CleanOne::Stopped);
            }
            let w: Option<&mut dyn Any> = st.watch.as_deref_mut().map(|w| w as &mut dyn Any);
            let Some(slot) = w.and_then(|w| w.downcast_mut::<W>()).and_then(pick) else {
                return Ok(CleanOne::Nothing);
            };
            if !st.dirty[slot as usize] {
                // Cannot happen (the watch hears of every change); heal it.
                log::warn!("cleaner picked slot {slot}, which is clean");
                if let Some(w) = &mut st.watch {
                    w.cleaned(slot);
                }
                return Ok(CleanOne::Nothing);
            }
            (slot, st.meta.map[slot as usize].expect("a dirty slot caches a segment"))
        };
        // Holding admin: slots do not move, and only writes (which only
        // dirty) run on `h` until we hold it.
        let _held = self.locks.lock([h]);
        self.write_back_slot(slot, h, buf)?;
        Ok(CleanOne::Cleaned { slot, segment: h })
    }

    /// Syncs the backing device (after a batch of [`clean_one`](Self::clean_one)).
    pub fn sync_backing(&self) -> io::Result<()> {
        self.hdd.sync().map_err(|e| self.hdd_failed(e))
    }

    /// Copies every dirty slot to its HDD segment (under that segment's
    /// lock) and syncs both devices. Writes arriving meanwhile may dirty
    /// slots again unless writes go through.
    fn write_back_dirty(&self) -> io::Result<()> {
        let mut buf = vec![0u8; self.seg as usize];
        for (s, h) in self.dirty_slots()? {
            let _held = self.locks.lock([h]);
            // Only admin operations move slots, and they are serialised with us.
            self.write_back_slot(s, h, &mut buf)?;
        }
        self.ssd.sync()?;
        self.hdd.sync()
    }

    /// Writes every dirty slot back now (`ssdcache flush`) and syncs both
    /// devices; requests go on (and may dirty slots again). Its progress is
    /// in [`status`](Self::status) while it runs; [`stop_write_back`]
    /// (Self::stop_write_back) ends it at the next slot, synced.
    pub fn write_back(&self) -> io::Result<FlushProgress> {
        let _admin = lock(&self.admin);
        self.flush_stop.store(false, Relaxed);
        let todo = self.dirty_slots()?;
        let mut p = FlushProgress { total: todo.len() as u64, ..Default::default() };
        *lock(&self.flush) = Some(p);
        self.flushing.store(true, Relaxed);
        let mut buf = vec![0u8; self.seg as usize];
        let copy = || -> io::Result<()> {
            for (s, h) in todo {
                if self.flush_stop.load(Relaxed) {
                    p.interrupted = true;
                    log::warn!("flush stopped on request after {} of {} segment(s)", p.written_back, p.total);
                    break;
                }
                let _held = self.locks.lock([h]);
                // Only admin operations move slots, and they are serialised
                // with us; the cleaner (also admin) cannot have cleaned it, but
                // a write may have dirtied it again: written back either way.
                self.write_back_slot(s, h, &mut buf)?;
                p.written_back += 1;
                *lock(&self.flush) = Some(p);
            }
            Ok(())
        };
        let r = copy().and_then(|()| self.ssd.sync()).and_then(|()| self.hdd.sync());
        self.flushing.store(false, Relaxed);
        *lock(&self.flush) = Some(p);
        r.map(|()| p)
    }

    /// Asks a running [`write_back`](Self::write_back) to stop at its next
    /// slot; returns whether one was running.
    pub fn stop_write_back(&self) -> bool {
        self.flush_stop.store(true, Relaxed);
        self.flushing.load(Relaxed)
    }

    /// Evicts whatever `slot` holds and caches HDD segment `h` there: the
    /// slot's segment (written back first if dirty) and `h` are locked, the
    /// map updated, `h` copied in. The map is not saved (a write-through map
    /// never saves it while running; the procedure saves around its moves).
    fn move_slot(&self, slot: u32, h: u64, buf: &mut [u8]) -> io::Result<()> {
        let old = lock(&self.state).meta.map[slot as usize];
        let _held = self.locks.lock(old.into_iter().chain([h]));
        let seg = self.seg;
        if let Some(old) = old {
            if lock(&self.state).dirty[slot as usize] {
                self.write_back_slot(slot, old, buf)?;
                self.hdd.sync()?;
            }
        }
        {
            let mut st = lock(&self.state);
            assert!(!st.rev.contains_key(&h), "segment {h} is already cached");
            if let Some(old) = st.meta.map[slot as usize].take() {
                st.rev.remove(&old); // lines 13–16
            }
        }
        // Line 20 (errors counted per device).
        self.hdd.read_at(buf, h * seg).map_err(|e| self.hdd_failed(e))?;
        self.ssd.write_at(buf, slot as u64 * seg).inspect_err(|e| self.ssd_failed(e))?;
        let mut st = lock(&self.state);
        st.meta.map[slot as usize] = Some(h); // line 18
        st.rev.insert(h, slot); // line 21
        st.poisoned[slot as usize] = false; // refilled from the HDD
        self.counters.filled.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A write-through cache's fill: segment `h` into `slot` now (evicting
    /// what it holds). Panics if `h` is cached already.
    pub fn replace(&self, slot: u32, h: u64) -> io::Result<()> {
        let _admin = lock(&self.admin);
        if lock(&self.state).closed {
            return Err(closed());
        }
        if self.is_degraded() {
            return Err(io::Error::other("the cache is degraded: nothing new is cached"));
        }
        let mut buf = vec![0u8; self.seg as usize];
        self.move_slot(slot, h, &mut buf)
    }

    /// Fig. 5 lines 4–26 for `plan`: each `(slot, hdd_segment)` evicts what
    /// the slot holds and caches the segment there. Requests go on meanwhile,
    /// writing through to both devices. Panics if a planned segment is
    /// already cached or a slot is out of range.
    pub fn caching_and_eviction(&self, plan: &[(u32, u64)]) -> io::Result<()> {
        let _admin = lock(&self.admin);
        if self.is_degraded() {
            return Err(io::Error::other("the cache is degraded: nothing new is cached"));
        }
        {
            let mut st = lock(&self.state);
            if st.closed {
                return Err(closed());
            }
            st.through = true; // §3.6: double writes from now on
        }
        self.in_procedure.store(true, Relaxed);
        let r = self.procedure(plan);
        self.in_procedure.store(false, Relaxed);
        if r.is_err() && !lock(&self.saves).saved.update {
            // Failed before the update bit was saved (its write-back, say, on
            // a BACKING that refuses writes): nothing moved, so writes may
            // stay on the cache. Once that bit is saved they must not, since
            // a start after a crash then trusts BACKING to hold every write.
            lock(&self.state).through = self.mode != WriteMode::Back || self.is_degraded();
        }
        r
    }

    fn procedure(&self, plan: &[(u32, u64)]) -> io::Result<()> {
        self.write_back_dirty()?; // line 4
        self.save(|m| m.update = true)?; // line 5
        let mut buf = vec![0u8; self.seg as usize];
        for &(slot, h) in plan {
            if self.interrupted.load(Relaxed) {
                // A stop was asked for: the moves done so far are complete, so
                // ending here (synced and saved below) is a consistent state.
                log::warn!("caching and eviction interrupted by a stop request");
                break;
            }
            self.move_slot(slot, h, &mut buf)?; // lines 12–23
            lock(&self.state).meta.evict_hand = slot;
        }
        // The copies must be durable before a save says they are there.
        self.ssd.sync()?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        self.save(|m| {
            m.update = false; // line 26
            m.procedures += 1;
            m.last_procedure = now.min(u32::MAX as u64) as u32;
        })?;
        lock(&self.state).through = self.mode != WriteMode::Back || self.is_degraded();
        Ok(())
    }

    /// Writes every dirty slot back that can be; returns the `(slot,
    /// segment)`s that could not be (they stay dirty). Holds each segment's
    /// lock unless `all_locked` (the caller holds every lock).
    fn write_back_each(&self, all_locked: bool) -> io::Result<Vec<(u32, u64)>> {
        let mut buf = vec![0u8; self.seg as usize];
        let mut failed = Vec::new();
        for (s, h) in self.dirty_slots()? {
            let _held = (!all_locked).then(|| self.locks.lock([h]));
            if let Err(e) = self.write_back_slot(s, h, &mut buf) {
                log::error!("write-back of slot {s} (segment {h}) failed, it stays dirty: {e}");
                failed.push((s, h));
            }
        }
        Ok(failed)
    }

    /// A degraded cache's clean-up: every dirty slot written back, then
    /// (once none is left) the map emptied and saved with the degraded bit.
    /// Returns how many dirty slots remain (retry later).
    pub fn settle_degraded(&self) -> io::Result<usize> {
        let _admin = lock(&self.admin);
        let failed = self.write_back_each(false)?;
        self.ssd.sync().inspect_err(|e| self.ssd_failed(e))?;
        self.hdd.sync().map_err(|e| self.hdd_failed(e))?;
        if !failed.is_empty() {
            return Ok(failed.len());
        }
        // Unmap every clean slot: writes go through and no dirty slot is
        // left, so the HDD holds everything. The empty map is saved first
        // and only then are requests sent to the HDD alone (the in-memory
        // reverse map keeps writes going to both devices until then).
        let clean: Vec<(u32, u64)> = {
            let st = lock(&self.state);
            st.rev.iter().map(|(&h, &s)| (s, h)).filter(|&(s, _)| !st.dirty[s as usize]).collect()
        };
        let saved = self.save(|m| {
            m.degraded = true;
            clean.iter().for_each(|&(s, _)| m.map[s as usize] = None);
        });
        {
            let mut st = lock(&self.state);
            for &(s, h) in &clean {
                if saved.is_ok() {
                    st.rev.remove(&h);
                    st.poisoned[s as usize] = false;
                } else if st.rev.get(&h) == Some(&s) {
                    // Still cached (a read-only cache's write may have
                    // dropped it meanwhile: that must stay dropped).
                    st.meta.map[s as usize] = Some(h);
                }
            }
        }
        saved?;
        let left = lock(&self.state).dirty.iter().filter(|d| **d).count();
        log::warn!("degraded cache settled: nothing cached, {left} dirty slot(s) left");
        Ok(left)
    }

    /// Makes a running (and any later) procedure stop at its next slot
    /// boundary: a stop request should not wait for a whole procedure.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Relaxed);
    }

    /// Whether [`interrupt`](Self::interrupt) was called.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Relaxed)
    }

    /// Fig. 5 lines 50–54: waits for requests in flight, refuses new ones,
    /// writes back, then saves with the clean bit set. Returns the saved
    /// metadata; a second call fails.
    pub fn shutdown(&self) -> io::Result<Meta> {
        let _admin = lock(&self.admin);
        let _all = self.locks.lock_all();
        // Holding every segment lock: the write-back below takes none.
        let failed = self.write_back_each(true)?;
        self.ssd.sync()?;
        self.hdd.sync()?;
        if !failed.is_empty() {
            // Never claim clean: the next start (or `ssdcache drain`) retries.
            let segs: Vec<String> = failed.iter().map(|(_, h)| h.to_string()).collect();
            return Err(io::Error::other(format!(
                "{} dirty segment(s) could not be written back (segments {}); the cache stays marked unclean: \
                 run `ssdcache drain` to retry and list what is unreadable",
                failed.len(),
                segs.join(", ")
            )));
        }
        self.save(|m| m.clean = true)?;
        let mut st = lock(&self.state);
        st.closed = true;
        Ok(st.meta.clone())
    }
}

#[cfg(test)]
mod tests {
    //! The power-cut proof: a scripted workload on a small cache, cut at
    //! every write point.
    use super::*;
    use crate::device::MemDevice;
    use crate::faulty::{CutMode, FaultyDevice, PowerDomain, SECTOR};
    use crate::meta::{region_len, Geometry};
    use crate::recover::{load, StartKind};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    const SEG: u64 = 8192; // two 4 KiB blocks
    const BLOCK: u64 = 4096;
    const SSD_SEGS: u32 = 8;
    const HDD_SEGS: u64 = 32;
    const LOGICAL: u64 = SEG * HDD_SEGS;

    fn geom() -> Geometry {
        Geometry { segment_size: SEG as u32, ssd_segments: SSD_SEGS, hdd_segments: HDD_SEGS }
    }

    type Cache = CacheMap<FaultyDevice, FaultyDevice, FaultyDevice>;

    struct Env {
        dom: std::sync::Arc<PowerDomain>,
        ssd: FaultyDevice,
        hdd: FaultyDevice,
        /// The workload runs a cleaner step after every write.
        cleaner: bool,
    }

    /// A cleaner's watch that finds every dirty slot due at once (as
    /// `--max-dirty 0%` does), oldest dirtied first.
    #[derive(Default)]
    struct AllDue(std::collections::VecDeque<u32>);

    impl DirtyWatch for AllDue {
        fn dirtied(&mut self, slot: u32) {
            assert!(!self.0.contains(&slot), "slot {slot} dirtied twice without a clean between");
            self.0.push_back(slot);
        }
        fn cleaned(&mut self, slot: u32) {
            let before = self.0.len();
            self.0.retain(|&s| s != slot);
            assert_eq!(self.0.len() + 1, before, "slot {slot} cleaned but not dirty");
        }
    }

    /// The cleaner's step: the oldest dirty slot written back.
    fn clean_oldest(c: &Cache) -> io::Result<CleanOne> {
        let mut buf = vec![0u8; SEG as usize];
        c.clean_one(|w: &mut AllDue| w.0.front().copied(), &mut buf)
    }

    /// The watch agrees with the dirty bitmap.
    fn assert_watch_in_step<S: BlockDevice, H: BlockDevice, M: BlockDevice>(c: &CacheMap<S, H, M>) {
        let mut known: Vec<u32> = c.with_watch(|w: &mut AllDue| w.0.iter().copied().collect()).unwrap();
        known.sort_unstable();
        let st = lock(&c.state);
        let dirty: Vec<u32> = (0..SSD_SEGS).filter(|&s| st.dirty[s as usize]).collect();
        assert_eq!(known, dirty, "the cleaner's watch and the dirty bitmap disagree");
    }

    impl Env {
        /// A formatted cache whose HDD holds a known pattern.
        fn new(seed: u64, mode: CutMode) -> Env {
            let hdd = MemDevice::new((LOGICAL + region_len(&geom())) as usize);
            let pattern: Vec<u8> = (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect();
            hdd.write_at(&pattern, 0).unwrap();
            MetaStore::new(&hdd, LOGICAL, geom()).unwrap().format().unwrap();
            Env::from_images(seed, mode, vec![0; (SEG * SSD_SEGS as u64) as usize], hdd.into_vec())
        }

        fn from_images(seed: u64, mode: CutMode, ssd: Vec<u8>, hdd: Vec<u8>) -> Env {
            let dom = PowerDomain::new(seed, mode);
            let ssd = dom.attach(ssd);
            let hdd = dom.attach(hdd);
            Env { dom, ssd, hdd, cleaner: false }
        }

        fn store(&self) -> MetaStore<FaultyDevice> {
            MetaStore::new(self.hdd.clone(), LOGICAL, geom()).unwrap()
        }

        fn open(&self) -> Result<(Cache, Started), RecoverError> {
            let (c, st) = CacheMap::open(self.ssd.clone(), self.hdd.clone(), self.store(), false)?;
            if self.cleaner {
                c.set_watch(Box::<AllDue>::default());
            }
            Ok((c, st))
        }

        fn with_cleaner(mut self) -> Env {
            self.cleaner = true;
            self
        }
    }

    /// What the logical device may hold: the contents as of the last
    /// completed flush, plus the writes issued since (each may or may not
    /// have persisted, sector by sector).
    struct Model {
        durable: Vec<u8>,
        since: Vec<(u64, Vec<u8>)>,
    }

    impl Model {
        fn new() -> Model {
            Model { durable: (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect(), since: Vec::new() }
        }
        fn commit(&mut self) {
            for (off, d) in self.since.drain(..) {
                self.durable[off as usize..off as usize + d.len()].copy_from_slice(&d);
            }
        }
        /// Panics unless every sector of `img` is allowed.
        fn check(&self, img: &[u8], ctx: &str) {
            let s = SECTOR as usize;
            for i in (0..LOGICAL as usize).step_by(s) {
                let got = &img[i..i + s];
                if got == &self.durable[i..i + s] {
                    continue;
                }
                let ok = self.since.iter().any(|(off, d)| {
                    let off = *off as usize;
                    off <= i && i + s <= off + d.len() && got == &d[i - off..i - off + s]
                });
                assert!(
                    ok,
                    "{ctx}: sector {} (segment {}) lost an acknowledged-and-flushed write",
                    i / s,
                    i as u64 / SEG
                );
            }
        }
    }

    /// The metadata states a cut may leave: the last durable save and the
    /// one being written.
    #[derive(Default)]
    struct Metas {
        durable: Option<Meta>,
        inflight: Option<Meta>,
    }

    impl Metas {
        fn after(&mut self, c: &Cache) {
            self.durable = Some(c.saved().clone());
            self.inflight = c.saving();
        }
        /// Before a start: it may leave the loaded save or its successor.
        fn before_open(&mut self, env: &Env) {
            let m = load(&env.store()).unwrap().meta;
            let mut next = m.clone();
            next.version = next.version.wrapping_add(1);
            next.clean = false;
            next.update = false;
            self.durable = Some(m);
            self.inflight = Some(next);
        }
        fn allows(&self, m: &Meta) -> bool {
            self.durable.as_ref() == Some(m) || self.inflight.as_ref() == Some(m)
        }
    }

    /// A write; with a cleaner, then the cleaner's step (and a sync of the
    /// backing device every other write), so cuts land in its write-backs.
    fn step(
        env: &Env,
        c: &Cache,
        model: &mut Model,
        metas: &mut Metas,
        rng: &mut StdRng,
        tag: &mut u8,
    ) -> io::Result<()> {
        write(c, model, metas, rng, tag)?;
        if env.cleaner {
            clean_oldest(c)?;
            if tag.is_multiple_of(2) {
                c.sync_backing()?;
            }
            assert_watch_in_step(c);
        }
        Ok(())
    }

    fn write(c: &Cache, model: &mut Model, metas: &mut Metas, rng: &mut StdRng, tag: &mut u8) -> io::Result<()> {
        // Blocks concentrate on the first 12 segments so that cached ones are hit.
        let block = rng.gen_range(0..(12 * SEG / BLOCK));
        *tag = tag.wrapping_add(1).max(1);
        let data: Vec<u8> = (0..BLOCK).map(|i| tag.wrapping_mul(31) ^ (i / SECTOR) as u8 ^ 0x80).collect();
        model.since.push((block * BLOCK, data.clone()));
        let r = c.write(&data, block * BLOCK);
        metas.after(c);
        r
    }

    /// The scripted workload; stops at the first error (the power cut).
    fn workload(env: &Env, model: &mut Model, metas: &mut Metas, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut tag = 0u8;
        metas.before_open(env);
        let (c, _) = env.open()?;
        metas.after(&c);
        for round in 0..3 {
            for _ in 0..5 {
                step(env, &c, model, metas, &mut rng, &mut tag)?;
            }
            c.flush()?;
            model.commit();
            // Unflushed writes just before the procedure: its write-back
            // (line 4) must not lose the flushed data under them.
            for _ in 0..2 {
                step(env, &c, model, metas, &mut rng, &mut tag)?;
            }
            // A plan: 3 slots get 3 uncached segments (round-robin slots,
            // like the evict clock).
            let mut plan = Vec::new();
            let mut s = (round * 3) as u32 % SSD_SEGS;
            while plan.len() < 3 {
                let h = rng.gen_range(0..12u64);
                if c.slot_of(h).is_none() && !plan.iter().any(|&(_, p)| p == h) {
                    plan.push((s, h));
                    s = (s + 1) % SSD_SEGS;
                }
            }
            let r = c.caching_and_eviction(&plan);
            metas.after(&c);
            r?;
            for _ in 0..4 {
                step(env, &c, model, metas, &mut rng, &mut tag)?;
            }
            c.flush()?;
            model.commit();
        }
        step(env, &c, model, metas, &mut rng, &mut tag)?;
        let saved = c.saved().clone();
        let mut shadow = c.meta().clone();
        shadow.version = shadow.version.wrapping_add(1);
        shadow.clean = true;
        metas.durable = Some(saved);
        metas.inflight = Some(shadow.clone());
        // Shutdown makes everything durable once it returns.
        let done = c.shutdown()?;
        assert_eq!(done, shadow);
        model.commit();
        metas.durable = Some(done);
        metas.inflight = None;
        // Restart after a clean shutdown and do a little more.
        metas.before_open(env);
        let (c, st) = env.open()?;
        assert_eq!(st.kind, StartKind::Clean);
        metas.after(&c);
        for _ in 0..3 {
            step(env, &c, model, metas, &mut rng, &mut tag)?;
        }
        c.flush()?;
        model.commit();
        step(env, &c, model, metas, &mut rng, &mut tag)?;
        Ok(())
    }

    /// Opens after a cut and checks the data through the recovered map.
    fn recover_and_check(env: &Env, model: &Model, ctx: &str) -> StartKind {
        let (c, st) = env.open().unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
        let mut img = vec![0u8; LOGICAL as usize];
        c.read(&mut img, 0).unwrap();
        model.check(&img, ctx);
        // Recovery starts with an all-clean data bitmap (line 47), which is
        // right only if the HDD now holds everything the SSD had: evict every
        // slot (no write-back happens) and check again through the HDD.
        let uncached: Vec<u64> = (0..HDD_SEGS).filter(|h| c.slot_of(*h).is_none()).take(SSD_SEGS as usize).collect();
        let plan: Vec<(u32, u64)> = uncached.into_iter().enumerate().map(|(s, h)| (s as u32, h)).collect();
        c.caching_and_eviction(&plan).unwrap();
        c.read(&mut img, 0).unwrap();
        model.check(&img, &format!("{ctx}, after evicting every slot"));
        st.kind
    }

    /// Runs the workload cut at every write point, checks each recovery, and
    /// (with `nested`) also cuts the first recovery at each of its writes.
    fn cut_everywhere(seed: u64, mode: CutMode, nested: bool) -> (u64, u64) {
        cut_everywhere_with(seed, mode, nested, false)
    }

    /// [`cut_everywhere`], with a cleaner step after every write if `cleaner`.
    fn cut_everywhere_with(seed: u64, mode: CutMode, nested: bool, cleaner: bool) -> (u64, u64) {
        let with = |e: Env| if cleaner { e.with_cleaner() } else { e };
        let env = with(Env::new(seed, mode));
        let (mut model, mut metas) = (Model::new(), Metas::default());
        workload(&env, &mut model, &mut metas, seed).unwrap();
        let total = env.dom.writes();
        let (mut cuts, mut nested_cuts) = (0, 0);
        let mut kinds = HashMap::new();
        for k in 0..total {
            let ctx = format!("seed {seed} {mode:?} cut at write {k}/{total}");
            let env = with(Env::new(seed ^ k.wrapping_mul(0x9E37), mode));
            env.dom.schedule_power_cut(Some(k));
            let (mut model, mut metas) = (Model::new(), Metas::default());
            let r = workload(&env, &mut model, &mut metas, seed);
            assert!(r.is_err() && env.dom.is_off(), "{ctx}: the workload did not hit the cut");
            env.dom.restore_power();
            cuts += 1;
            // The metadata is one of the last two durable states.
            let loaded = load(&env.store()).unwrap_or_else(|e| panic!("{ctx}: {e}")).meta;
            assert!(metas.allows(&loaded), "{ctx}: loaded v{} not among the allowed states", loaded.version);
            if nested {
                // Cut the recovery itself at each of its writes, then recover again.
                let images = (env.dom.durable_image(&env.ssd), env.dom.durable_image(&env.hdd));
                for j in 0.. {
                    let e2 = Env::from_images(seed ^ j, mode, images.0.clone(), images.1.clone());
                    e2.dom.schedule_power_cut(Some(j));
                    if e2.open().is_ok() {
                        break;
                    }
                    e2.dom.restore_power();
                    nested_cuts += 1;
                    recover_and_check(&e2, &model, &format!("{ctx}, recovery cut at its write {j}"));
                }
            }
            *kinds.entry(format!("{:?}", recover_and_check(&env, &model, &ctx))).or_insert(0u32) += 1;
        }
        println!("seed {seed} {mode:?}: {total} write points, {cuts} cuts tried, {nested_cuts} nested recovery cuts; starts: {kinds:?}");
        (cuts, nested_cuts)
    }

    /// One writer thread's view: the blocks it owns, what each held at its
    /// last completed flush, and what it wrote since.
    #[derive(Default)]
    struct Writer {
        durable: HashMap<u64, Vec<u8>>,
        since: Vec<(u64, Vec<u8>)>,
    }

    /// Writers on interleaved blocks (so they share segments) while the
    /// procedure runs again and again: the power is cut at write `cut` (or
    /// never), then the cache is recovered and every block checked against
    /// its writer. Returns the write points the run had.
    fn concurrent_run(seed: u64, cut: Option<u64>) -> u64 {
        concurrent_run_with(seed, cut, false)
    }

    /// [`concurrent_run`]; with `cleaner`, a cleaner thread writes back
    /// every dirty slot as soon as it can, racing the writers on their
    /// segments and the procedures.
    fn concurrent_run_with(seed: u64, cut: Option<u64>, cleaner: bool) -> u64 {
        const WRITERS: u64 = 3;
        let env = Env::new(seed, CutMode::DropUnsynced);
        let env = if cleaner { env.with_cleaner() } else { env };
        let writing = AtomicU64::new(WRITERS);
        env.dom.schedule_power_cut(cut);
        let writers: Vec<Mutex<Writer>> = (0..WRITERS).map(|_| Mutex::new(Writer::default())).collect();
        if let Ok((c, _)) = env.open() {
            // Cache half the hot segments first so that writes hit the SSD.
            let _ = c.caching_and_eviction(&[(0, 0), (1, 3), (2, 6), (3, 9)]);
            std::thread::scope(|sc| {
                for (t, w) in writers.iter().enumerate() {
                    let (c, writing) = (&c, &writing);
                    sc.spawn(move || {
                        let _done = Done(writing);
                        let mut rng = StdRng::seed_from_u64(seed * 31 + t as u64);
                        for i in 0..40u32 {
                            let block = rng.gen_range(0..(12 * SEG / BLOCK) / WRITERS) * WRITERS + t as u64;
                            let data: Vec<u8> = (0..BLOCK)
                                .map(|k| (i as u8).wrapping_mul(7) ^ (t as u8) << 5 ^ (k / SECTOR) as u8)
                                .collect();
                            lock(w).since.push((block, data.clone()));
                            if c.write(&data, block * BLOCK).is_err() {
                                return;
                            }
                            if i % 5 == 4 {
                                if c.flush().is_err() {
                                    return;
                                }
                                let mut w = lock(w);
                                let done: Vec<_> = w.since.drain(..).collect();
                                w.durable.extend(done);
                            }
                        }
                    });
                }
                if cleaner {
                    let (c, writing) = (&c, &writing);
                    sc.spawn(move || {
                        let mut cleaned = 0u32;
                        while writing.load(Relaxed) > 0 {
                            match clean_oldest(c) {
                                Err(_) => return, // the power cut
                                Ok(CleanOne::Cleaned { .. }) => {
                                    cleaned += 1;
                                    if cleaned.is_multiple_of(2) && c.sync_backing().is_err() {
                                        return;
                                    }
                                }
                                Ok(_) => std::thread::yield_now(),
                            }
                        }
                    });
                }
                // The procedure, again and again, with plans moving slots
                // between the writers' segments.
                let mut rng = StdRng::seed_from_u64(seed);
                for _ in 0..6 {
                    let cached: Vec<u64> = c.meta().map.iter().flatten().copied().collect();
                    let free: Vec<u64> = (0..12u64).filter(|h| !cached.contains(h)).collect();
                    let plan: Vec<(u32, u64)> = (0..2)
                        .map(|k| (rng.gen_range(0..SSD_SEGS / 2) * 2 + k, free[rng.gen_range(0..free.len())]))
                        .collect();
                    let plan = if plan[0].1 == plan[1].1 { vec![plan[0]] } else { plan };
                    if c.caching_and_eviction(&plan).is_err() {
                        return;
                    }
                }
            });
            if cleaner && cut.is_none() {
                assert_watch_in_step(&c);
            }
        }
        let writes = env.dom.writes();
        // Interleavings differ from run to run: a cut past this run's end
        // must not land in the recovery.
        env.dom.schedule_power_cut(None);
        env.dom.restore_power();
        let ctx = format!("seed {seed}, cut at {cut:?} of {writes}");
        let (c, _) = env.open().unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
        let mut img = vec![0u8; LOGICAL as usize];
        c.read(&mut img, 0).unwrap();
        let initial: Vec<u8> = (0..LOGICAL).map(|i| (i / SECTOR) as u8).collect();
        let s = SECTOR as usize;
        for (t, w) in writers.iter().enumerate() {
            let w = lock(w);
            for block in (t as u64..12 * SEG / BLOCK).step_by(WRITERS as usize) {
                let at = (block * BLOCK) as usize;
                let base = w.durable.get(&block).map_or(&initial[at..at + BLOCK as usize], |d| &d[..]);
                for k in (0..BLOCK as usize).step_by(s) {
                    let got = &img[at + k..at + k + s];
                    let ok = got == &base[k..k + s] || w.since.iter().any(|(b, d)| *b == block && got == &d[k..k + s]);
                    assert!(ok, "{ctx}: block {block} sector {} lost a flushed write (writer {t})", k / s);
                }
            }
        }
        writes
    }

    /// Counts a writer thread out when it ends, however it ends.
    struct Done<'a>(&'a AtomicU64);

    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Relaxed);
        }
    }

    #[test]
    fn concurrent_writers_and_the_cleaner_during_procedures_survive_power_cuts() {
        let mut cuts = 0;
        for seed in 0..16u64 {
            let total = concurrent_run_with(seed, None, true);
            let mut rng = StdRng::seed_from_u64(seed ^ 0xC1EA);
            for _ in 0..8 {
                concurrent_run_with(seed, Some(rng.gen_range(0..total)), true);
                cuts += 1;
            }
        }
        println!("{cuts} cuts of concurrent runs with the cleaner");
    }

    #[test]
    fn power_cut_at_every_write_point_with_the_cleaner_active() {
        for (seed, mode) in [(21, CutMode::DropUnsynced), (22, CutMode::Reorder)] {
            let (cuts, nested) = cut_everywhere_with(seed, mode, seed == 21, true);
            assert!(cuts > 50 && (seed != 21 || nested > 0));
        }
    }

    #[test]
    fn the_cleaner_writes_back_only_dirty_slots_and_a_later_write_dirties_again() {
        let env = Env::new(3, CutMode::DropUnsynced).with_cleaner();
        let (c, _) = env.open().unwrap();
        c.caching_and_eviction(&[(0, 0), (1, 1)]).unwrap();
        assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Nothing, "nothing dirty");
        c.write(&[7; 100], SEG + 10).unwrap();
        c.write(&[8; 100], 10).unwrap();
        assert_eq!(c.status().dirty, 2);
        let hdd_byte = |at: u64| {
            let mut b = [0u8];
            env.hdd.read_at(&mut b, at).unwrap();
            b[0]
        };
        assert_ne!(hdd_byte(SEG + 10), 7, "write-back: the HDD has not seen it");
        // Oldest dirtied first: segment 1 (slot 1).
        assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 1, segment: 1 });
        assert_eq!(hdd_byte(SEG + 10), 7);
        assert_eq!(c.status().dirty, 1);
        c.write(&[9; 1], SEG).unwrap();
        assert_watch_in_step(&c);
        assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 0, segment: 0 });
        assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Cleaned { slot: 1, segment: 1 });
        assert_eq!((hdd_byte(10), hdd_byte(SEG)), (8, 9));
        assert_eq!(c.status().dirty, 0);
        assert_eq!(c.status().written_back, 3);
        c.shutdown().unwrap();
        assert_eq!(clean_oldest(&c).unwrap(), CleanOne::Stopped);
    }

    /// An SSD whose whole-segment reads (the write-back's) stop after
    /// reading, at a gate the test opens.
    struct GatedSsd {
        dev: MemDevice,
        gate: Mutex<(bool, bool)>, // (a reader waits, open)
        changed: std::sync::Condvar,
    }

    impl BlockDevice for GatedSsd {
        fn len(&self) -> u64 {
            self.dev.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.dev.read_at(buf, offset)?;
            if buf.len() == SEG as usize {
                let mut g = lock(&self.gate);
                g.0 = true;
                self.changed.notify_all();
                while !g.1 {
                    g = self.changed.wait(g).unwrap();
                }
            }
            Ok(())
        }
        fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            self.dev.write_at(data, offset)
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_racing_the_cleaner_on_its_segment_ends_dirty_or_on_the_backing_device() {
        let hdd = std::sync::Arc::new(MemDevice::new((LOGICAL + region_len(&geom())) as usize));
        MetaStore::new(hdd.clone(), LOGICAL, geom()).unwrap().format().unwrap();
        let ssd = std::sync::Arc::new(GatedSsd {
            dev: MemDevice::new((SEG * SSD_SEGS as u64) as usize),
            gate: Mutex::new((false, true)),
            changed: Default::default(),
        });
        let store = MetaStore::new(hdd.clone(), LOGICAL, geom()).unwrap();
        let (c, _) = CacheMap::open(ssd.clone(), hdd.clone(), store, false).unwrap();
        c.set_watch(Box::<AllDue>::default());
        c.caching_and_eviction(&[(0, 2)]).unwrap();
        c.write(&[1; 64], 2 * SEG).unwrap();
        lock(&ssd.gate).1 = false;
        std::thread::scope(|sc| {
            let cleaner = sc.spawn(|| {
                let mut buf = vec![0u8; SEG as usize];
                c.clean_one(|w: &mut AllDue| w.0.front().copied(), &mut buf).unwrap()
            });
            // The cleaner has read the slot and waits at the gate.
            let mut g = lock(&ssd.gate);
            while !g.0 {
                g = ssd.changed.wait(g).unwrap();
            }
            drop(g);
            let writer = sc.spawn(|| c.write(&[2; 64], 2 * SEG).unwrap());
            // Give an unordered write the time to land under the cleaner.
            std::thread::sleep(std::time::Duration::from_millis(30));
            lock(&ssd.gate).1 = true;
            ssd.changed.notify_all();
            assert_eq!(cleaner.join().unwrap(), CleanOne::Cleaned { slot: 0, segment: 2 });
            writer.join().unwrap();
        });
        let mut b = [0u8; 64];
        hdd.read_at(&mut b, 2 * SEG).unwrap();
        let dirty = lock(&c.state).dirty[0];
        assert!(dirty || b == [2; 64], "the racing write is neither dirty nor on the backing device");
        assert_watch_in_step(&c);
    }

    #[test]
    fn concurrent_writers_during_procedures_survive_power_cuts() {
        let mut cuts = 0;
        for seed in 0..24u64 {
            let total = concurrent_run(seed, None);
            let mut rng = StdRng::seed_from_u64(seed ^ 0xC0FFEE);
            for _ in 0..8 {
                concurrent_run(seed, Some(rng.gen_range(0..total)));
                cuts += 1;
            }
        }
        println!("{cuts} cuts of concurrent runs");
    }

    #[test]
    fn workload_without_cut_reads_back_everything() {
        let env = Env::new(1, CutMode::DropUnsynced);
        let (mut model, mut metas) = (Model::new(), Metas::default());
        workload(&env, &mut model, &mut metas, 1).unwrap();
        let (c, _) = env.open().unwrap();
        let mut img = vec![0u8; LOGICAL as usize];
        c.read(&mut img, 0).unwrap();
        model.check(&img, "no cut");
        assert_eq!(c.meta().procedures, 3);
        assert!(c.meta().map.iter().filter(|m| m.is_some()).count() >= 3);
    }

    #[test]
    fn power_cut_at_every_write_point_drop_unsynced() {
        let (cuts, nested) = cut_everywhere(7, CutMode::DropUnsynced, true);
        assert!(cuts > 50 && nested > 0);
    }

    #[test]
    fn power_cut_at_every_write_point_reordered_cache() {
        for seed in [11, 12] {
            let (cuts, _) = cut_everywhere(seed, CutMode::Reorder, seed == 11);
            assert!(cuts > 50);
        }
    }
}
