//! Cache policies as state machines that emit I/O effects.
//!
//! A [`Policy`] never touches a device: the simulator (or the real engine) tells
//! it about each page access and it answers by pushing [`Io`] effects into a
//! reusable [`Effects`] buffer. Most policies are only a replacement rule; they
//! implement [`Replacement`] and get write semantics (dirty pages, write-back,
//! the [`Mode`]s) from [`ModeCache`], so every mode works with every policy.
//!
//! Policies live one per file, grouped by family: [`classic`] (LRU … Belady),
//! [`flash`] (the flash-aware buffers of papers 001, 002 and 004), [`tiered`]
//! (the DRAM + NVRAM buffer cache of paper 003).
//! [`registry`] names them for the command line.

pub mod classic;
pub mod flash;
pub mod list;
pub mod mode;
pub mod registry;
pub mod spec;
pub mod tiered;
#[cfg(test)]
pub mod testing;

pub use mode::{Mode, ModeCache};
pub use registry::{build, PolicyInfo, POLICIES};
pub use spec::{Spec, SpecError};

use crate::trace::Op;
use crate::Nanos;

/// `next_use` of a page that is never accessed again.
pub const NEVER: u64 = u64::MAX;

/// One page access, as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub time: Nanos,
    /// The page key: device and page number in one (see [`crate::sim::page_key`]).
    pub key: u64,
    pub op: Op,
    /// A write that covers only part of the page: caching it needs the old
    /// contents first (read-for-write, paper 001 §3.3).
    pub partial: bool,
    /// Position of this access in the page-access stream (0, 1, 2, …).
    pub seq: u64,
    /// `seq` of the next access to the same key, or [`NEVER`]. Filled only for
    /// policies whose [`Policy::needs_future`] is true (offline bounds).
    pub next_use: u64,
}

/// What happened on an access and what must move between devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// Read `pages` pages from `key` on the backing device (a read miss being served).
    Fetch { key: u64, pages: u32 },
    /// Read the old page from backing so that a partial write can be cached.
    ReadForWrite { key: u64 },
    /// Read `pages` clean pages from `key` on backing so that a block flush can
    /// be written as one full block (BPLRU's page padding).
    PadRead { key: u64, pages: u32 },
    /// A write sent on to the backing device now (write-through, write-around, read-only).
    WriteThrough { key: u64 },
    /// A dirty run of `pages` pages from `key` written back to the backing device.
    WriteBack { key: u64, pages: u32 },
    /// A page written into the cache (fill after a miss, or a write hit).
    CacheWrite { key: u64 },
    /// A page left the cache by replacement; if dirty, a `WriteBack` accompanies it.
    Evict { key: u64, dirty: bool },
    /// A page dropped without write-back (trim, or a write invalidating a read-only copy).
    Invalidate { key: u64, dirty: bool },
}

/// The reusable effect buffer a policy writes into. The simulator clears it
/// before each access.
#[derive(Debug, Default)]
pub struct Effects {
    /// Whether the access hit (the page was resident when it arrived).
    pub hit: bool,
    pub io: Vec<Io>,
    /// What a cache with a DRAM and an NVRAM tier (paper 003) adds; left at its
    /// default by single-tier policies. Read only when `tiered` is set.
    pub tier: TierFx,
    /// Set by tiered policies on every access, so that the simulator's hot
    /// path checks one flag instead of the whole of `tier`.
    pub tiered: bool,
}

/// A memory tier of a hybrid buffer cache (paper 003).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Volatile: only clean data may stay there for long.
    Dram,
    /// Persistent: dirty data there is safe and need not be written back.
    Nvram,
}

/// The tier side of an access, for paper 003's Table 1 classification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierFx {
    /// On a hit: the tier the page was found in.
    pub hit_in: Option<Tier>,
    /// A write hit in DRAM moved the page to NVRAM, dropping the DRAM copy
    /// (Write Purge). Table 1 processes such a hit as a write miss: whether it
    /// costs a disk access depends on the NVRAM page it replaced.
    pub write_purge: bool,
    /// Pages that left NVRAM and moved to DRAM (Write Global) during the access.
    pub to_dram: u32,
    /// A dirty page was written back to make room, whether it then left the
    /// cache (with an `Evict`) or moved to DRAM (without one).
    pub replaced_dirty: bool,
}

impl Effects {
    pub fn new() -> Self {
        Effects { hit: false, io: Vec::with_capacity(16), tier: TierFx::default(), tiered: false }
    }
    #[inline]
    pub fn clear(&mut self) {
        self.hit = false;
        self.io.clear();
        if self.tiered {
            self.tier = TierFx::default();
            self.tiered = false;
        }
    }
    #[inline]
    pub fn push(&mut self, io: Io) {
        self.io.push(io);
    }
}

/// Occupancy a policy reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PolicyStats {
    pub capacity: u64,
    pub resident: u64,
    pub dirty: u64,
    /// Non-resident history entries (ARC/LIRS/2Q/S3-FIFO ghosts).
    pub ghosts: u64,
}

/// A cache policy with write semantics: the unit the simulator drives.
pub trait Policy: Send {
    /// One page access. Sets `fx.hit` and pushes the I/O it causes.
    fn access(&mut self, a: &Access, fx: &mut Effects);
    /// Lookahead: a command for this page entered the device queue (QLRU).
    fn queued(&mut self, _a: &Access) {}
    /// Periodic work (PWC maintenance, background cleaning).
    fn tick(&mut self, _now: Nanos, _fx: &mut Effects) {}
    /// Whether [`tick`](Policy::tick) does anything: the simulator calls it
    /// before every request only for policies that say so.
    fn has_maintenance(&self) -> bool {
        false
    }
    /// Write back everything dirty (end of run, shutdown). Pages stay resident and become clean.
    fn drain(&mut self, fx: &mut Effects);
    fn stats(&self) -> PolicyStats;
    /// Offline policies need [`Access::next_use`].
    fn needs_future(&self) -> bool {
        false
    }
}

/// A page-replacement rule: which resident page leaves. Knows nothing of devices
/// or dirtiness beyond the hints it is given; [`ModeCache`] adds write semantics.
///
/// `touch`, `insert` and `remove` report every page that leaves the cache (other
/// than the page `remove` was asked to drop) by pushing its key into `evicted`
/// during the same call, never later, so that [`ModeCache`] writes a dirty page
/// back within the access that evicted it. A rule only appends to `evicted`; it
/// reports a key once, and only one that was resident.
///
/// Caller's guarantees: `insert` is only called for a key that is not resident,
/// right after `touch` returned false for the same access (or never, if the
/// caller does not cache the miss: the rule must cope with `touch` alone).
///
/// The rule's guarantees: after `touch` returns true the page is resident; after
/// `insert` returns true it is resident, after it returns false it is not;
/// [`len`](Replacement::len) counts the resident pages and stays within
/// [`capacity`](Replacement::capacity) (unless the rule documents otherwise:
/// libCacheSim's LIRS can briefly keep a few pages more).
pub trait Replacement: Send {
    /// An access to `a.key`. If resident, update recency/frequency and return true;
    /// otherwise return false and change nothing but history the rule keeps
    /// for non-resident keys. `dirty` says whether the page is dirty after this
    /// access. A rule may evict other pages while handling a hit (libCacheSim's
    /// LIRS does): it pushes them into `evicted`; never `a.key` itself.
    fn touch(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool;
    /// Admit `a.key` after a miss, pushing every key evicted to make room into
    /// `evicted`. Returns false if the rule declines to cache the page (libCacheSim's
    /// 2Q, S3-FIFO and LIRS do at tiny capacities): then the page is not resident
    /// and nothing changes but what the rule keeps as history, and whatever it
    /// evicted before deciding (reported in `evicted` all the same).
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool;
    /// Drop `key` if resident (trim, invalidation). Returns whether it was. Other
    /// pages that leave as a consequence (libCacheSim's LIRS pruning) go into `evicted`.
    fn remove(&mut self, key: u64, evicted: &mut Vec<u64>) -> bool;
    /// Whether `key` is resident, without changing any state.
    fn contains(&self, key: u64) -> bool;
    /// A dirty resident page was written back and is clean now.
    fn cleaned(&mut self, _key: u64) {}
    /// Lookahead: a command that will access `a.key` entered the device queue
    /// (NCQ) and will be served later, through `touch` (QLRU's virtual MRU,
    /// paper 002). [`ModeCache`] forwards only notices whose access will reach
    /// `touch` (reads and writes; not trims, nor writes in read-only mode), one
    /// per page access to come. Rules that do not look ahead ignore it; without
    /// notices every rule must behave as if this method did not exist.
    fn queued(&mut self, _a: &Access) {}
    fn len(&self) -> usize;
    fn capacity(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Non-resident history entries.
    fn ghosts(&self) -> usize {
        0
    }
    fn needs_future(&self) -> bool {
        false
    }
}
