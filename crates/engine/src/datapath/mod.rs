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
//! - [`CacheMap::discard`]: trims and zeroes passed to the backing device,
//!   dropping the cached segments they cover wholly (dirty ones too, never
//!   written back); its module doc says what a crash may find.
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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
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
#[repr(u8)]
pub enum WriteMode {
    /// To the SSD only, dirty until written back (PWC).
    Back,
    /// To the HDD and to the cached copy; never dirty.
    Through,
    /// To the HDD only; a cached copy is dropped (invalidated). Never dirty.
    Invalidate,
}

impl WriteMode {
    fn from_u8(v: u8) -> WriteMode {
        [WriteMode::Back, WriteMode::Through, WriteMode::Invalidate][v as usize]
    }
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
    /// The picked slot moved (or was written back) before its segment's
    /// lock was taken: nothing to do, pick again.
    Moved,
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

mod clean;
mod degraded;
mod discard;
mod procedure;
mod read;
mod status;
mod switch;
#[cfg(test)]
mod tests;
mod write;

pub use discard::Discard;
pub use status::{MapCounters, MapStatus, Tally};

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
    /// A [`WriteMode`] (changed at run time by [`CacheMap::set_mode`]).
    mode: AtomicU8,
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
    /// Held by the one flush that runs.
    flush_one: Mutex<()>,
    /// A procedure is running.
    in_procedure: AtomicBool,
    /// Cache-device errors that make the cache degraded.
    error_limit: AtomicU64,
    /// Degraded (mirrors `meta.degraded`, readable without the lock).
    degraded: AtomicBool,
    /// Write-back with a replacement policy: slots are filled on misses and
    /// evicted at any time, so a save keeps only the slots that may be dirty
    /// (see [`CacheMap::set_fills_on_miss`]).
    fills_on_miss: AtomicBool,
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
            mode: AtomicU8::new(mode as u8),
            state: Mutex::new(state),
            saves: Mutex::new(saves),
            locks: SegmentLocks::new(),
            admin: Mutex::new(()),
            counters: MapCounters::default(),
            interrupted: Default::default(),
            flushing: Default::default(),
            flush: Default::default(),
            flush_stop: Default::default(),
            flush_one: Mutex::new(()),
            in_procedure: Default::default(),
            error_limit: AtomicU64::new(DEFAULT_ERROR_LIMIT),
            degraded,
            fills_on_miss: AtomicBool::new(false),
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
        WriteMode::from_u8(self.mode.load(Relaxed))
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
    /// Saves the in-memory metadata as the next version, after `edit`. A
    /// write-through or invalidate map saves an empty map unless `edit` set
    /// the clean bit.
    /// A write-back map that fills on misses saves only its dirty slots
    /// (after syncing BACKING, which then holds every slot written back).
    fn save(&self, edit: impl FnOnce(&mut Meta)) -> io::Result<()> {
        let mut saves = lock(&self.saves);
        let fills = self.fills_on_miss();
        let mut m = {
            let mut st = lock(&self.state);
            st.meta.version = saves.saved.version.wrapping_add(1);
            edit(&mut st.meta);
            let mut m = st.meta.clone();
            if fills && !m.clean {
                for (slot, dirty) in m.map.iter_mut().zip(&st.dirty) {
                    if !dirty {
                        *slot = None;
                    }
                }
            }
            m
        };
        if self.mode() != WriteMode::Back && !m.clean {
            m.map.iter_mut().for_each(|s| *s = None);
        }
        if fills {
            // A slot left out may have been cleaned by a write-back not yet
            // synced: once unmapped, no unclean start copies it back.
            self.hdd.sync().map_err(|e| self.hdd_failed(e))?;
        }
        saves.saving = Some(m);
        saves.store.write(saves.saving.as_ref().expect("set above"))?;
        saves.saved = saves.saving.take().expect("set above");
        Ok(())
    }

    /// Write-back with a replacement policy (not PWC): from now on segments
    /// are filled on misses ([`replace`](Self::replace)) and evicted at any
    /// time ([`evict`](Self::evict)). What a crash may find stays what the
    /// recovery rule needs: every slot the durable map names holds a whole,
    /// durable image of its segment, at least as new as BACKING's.
    /// - a fill is synced on the SSD before its slot is mapped in memory;
    /// - a save names only dirty slots (clean ones are on BACKING, synced
    ///   by the save first), and a write that dirties a slot the durable map
    ///   does not name saves before it returns;
    /// - a slot the durable map names is written back (if dirty), then
    ///   unmapped by a save, before anything else is copied into it.
    ///
    /// Turned off again (a write-back cache going back to PWC), every mapped
    /// slot (each a synced fill, or dirty) is saved at once, with every
    /// segment locked, because PWC's writes never save.
    pub fn set_fills_on_miss(&self, on: bool) -> io::Result<()> {
        assert_eq!(self.mode(), WriteMode::Back, "only a write-back map keeps dirty slots");
        if on {
            self.fills_on_miss.store(true, Relaxed);
            return Ok(());
        }
        let _admin = lock(&self.admin);
        let _all = self.locks.lock_all();
        self.fills_on_miss.store(false, Relaxed);
        self.save(|_| {})
    }

    /// Whether the map fills on misses ([`set_fills_on_miss`](Self::set_fills_on_miss)).
    pub fn fills_on_miss(&self) -> bool {
        self.fills_on_miss.load(Relaxed)
    }

    /// Whether the last durable save names `slot` (a save in progress
    /// holds the lock, so this waits for it).
    fn durably_mapped(&self, slot: u32) -> bool {
        lock(&self.saves).saved.map[slot as usize].is_some()
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
