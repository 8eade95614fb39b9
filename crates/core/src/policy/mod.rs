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
//! [`registry`] names them for the command line and builds them.
//!
//! This file is the interface, and only the interface: what a policy is
//! ([`Policy`], [`Replacement`]), what it sees and emits ([`Access`], [`Io`],
//! [`Effects`]), how it is catalogued and built ([`PolicyInfo`], [`BuildCtx`],
//! [`Rules`]) and the write [`Mode`]s. Layers, bottom up: the interface; the
//! building blocks ([`crate::list`], [`mode::ModeCache`], `flash::block`, …); one file
//! per policy, importing only those two; the [`registry`], which alone knows
//! every policy. Nothing here imports a policy.

pub mod admission;
pub mod classic;
pub mod flash;
pub mod mode;
pub mod registry;
pub mod sized;
pub mod sketch;
#[cfg(test)]
pub mod testing;
pub mod tiered;

pub use crate::spec::{ParamInfo, Spec, SpecError};

use crate::trace::Op;
use crate::Nanos;

/// `next_use` of a page that is never accessed again.
pub const NEVER: u64 = u64::MAX;

/// One page access, as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub time: Nanos,
    /// The page key: device and page number in one (see [`crate::key::page_key`]).
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
    /// Pages of the request this access is part of (1 where no request is
    /// known): what a size-threshold admission looks at.
    pub request_pages: u32,
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

/// An adaptive split of the cache in two (ABM's pointer `P`, paper 004 §3.3):
/// where it is now and its running sum, for its mean over a run or an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// The cache's pages.
    pub capacity: u64,
    /// The second part's share now, in pages (ABM: the write buffer's).
    pub now: u64,
    /// Σ of `now` as each page access found it, over `accesses` accesses.
    pub sum: u64,
    pub accesses: u64,
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
    /// Policies that split the cache adaptively report the split (ABM's `P`).
    fn split(&self) -> Option<Split> {
        None
    }
    /// Offline policies need [`Access::next_use`].
    fn needs_future(&self) -> bool {
        false
    }
    /// Serves `reads`, in order, as [`access`](Policy::access) would serve each,
    /// the first with [`Access::seq`] `seq`, and tallies what their effects
    /// would have been. An optional fast path for runs that only count: it
    /// skips the [`Effects`] list. Returns false, having done nothing, when
    /// this policy has no such path (the default) or cannot take it now (a
    /// dirty page might be evicted and need a write-back).
    fn read_pages(&mut self, _reads: &[PageRead], _seq: u64, _tally: &mut ReadTally) -> bool {
        false
    }
}

/// A read request of one page, for [`Policy::read_pages`].
#[derive(Clone, Copy, Debug)]
pub struct PageRead {
    pub key: u64,
    pub time: Nanos,
    /// The request's bytes in the page, counted as served on a hit.
    pub bytes: u64,
}

/// What [`Policy::read_pages`] did. Each read either hit, or missed and was
/// fetched from backing (and, if `fills` counts it, cached); no page was dirty,
/// so every eviction was clean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadTally {
    pub hits: u64,
    /// Sum of [`PageRead::bytes`] over the hits.
    pub hit_bytes: u64,
    /// Misses the policy cached.
    pub fills: u64,
    pub evictions: u64,
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
    /// Changes the capacity to `capacity` pages (0 allowed: the rule then
    /// holds nothing until grown), pushing every page that must leave into
    /// `evicted`, chosen by the rule's own order; the rule's adaptive state
    /// follows the new size as its paper would have it at that size. Returns
    /// false, changing nothing, if the rule cannot resize (the default): a
    /// policy that needs it (ABM's read buffer under dynamic sizing) refuses
    /// such a rule. A rule never resized behaves exactly as without this method.
    fn set_capacity(&mut self, _capacity: usize, _evicted: &mut Vec<u64>) -> bool {
        false
    }
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
    /// `key` will be accessed soon: a rule whose lookups miss the CPU's caches
    /// may start loading its entry now (a hint; changes nothing).
    fn prefetch(&self, _key: u64) {}
    /// The page the next `insert` would evict first, without changing
    /// anything (TinyLFU admission weighs a miss against it); `None` if it
    /// would evict nothing, or the rule cannot tell (the default).
    fn victim(&self) -> Option<u64> {
        None
    }
}

/// A boxed rule is a rule: policies that hold a rule chosen by a spec
/// (ABM's read buffer, a tier) hold it boxed.
impl<R: Replacement + ?Sized> Replacement for Box<R> {
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        (**self).touch(a, dirty, evicted)
    }
    #[inline]
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        (**self).insert(a, dirty, evicted)
    }
    #[inline]
    fn remove(&mut self, key: u64, evicted: &mut Vec<u64>) -> bool {
        (**self).remove(key, evicted)
    }
    #[inline]
    fn contains(&self, key: u64) -> bool {
        (**self).contains(key)
    }
    #[inline]
    fn cleaned(&mut self, key: u64) {
        (**self).cleaned(key)
    }
    #[inline]
    fn prefetch(&self, key: u64) {
        (**self).prefetch(key)
    }
    #[inline]
    fn queued(&mut self, a: &Access) {
        (**self).queued(a)
    }
    #[inline]
    fn len(&self) -> usize {
        (**self).len()
    }
    #[inline]
    fn capacity(&self) -> usize {
        (**self).capacity()
    }
    #[inline]
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        (**self).set_capacity(capacity, evicted)
    }
    #[inline]
    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }
    #[inline]
    fn ghosts(&self) -> usize {
        (**self).ghosts()
    }
    #[inline]
    fn needs_future(&self) -> bool {
        (**self).needs_future()
    }
    #[inline]
    fn victim(&self) -> Option<u64> {
        (**self).victim()
    }
}

// ---- write modes ----

/// How a cache treats writes and read misses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Writes go to the cache and stay dirty until evicted or drained.
    #[default]
    WriteBack,
    /// Writes go to the cache and to backing at once; nothing is ever dirty.
    WriteThrough,
    /// Writes go to backing; a cached copy is updated, a miss is not inserted.
    WriteAround,
    /// Paper 001's write-only cache: write-back for writes, and a read miss is
    /// served from backing without being inserted.
    WriteOnly,
    /// Caches reads only: a write goes to backing and invalidates a cached copy
    /// (paper 000's LRU SSD cache).
    ReadOnly,
}

pub const MODES: &[(&str, Mode, &str)] = &[
    ("write-back", Mode::WriteBack, "writes stay dirty in the cache until evicted or drained"),
    ("write-through", Mode::WriteThrough, "writes go to cache and backing; nothing is dirty"),
    ("write-around", Mode::WriteAround, "writes go to backing; cached copies updated, misses not inserted"),
    ("write-only", Mode::WriteOnly, "write-back for writes; read misses not inserted (paper 001 WO)"),
    ("read-only", Mode::ReadOnly, "only reads are cached; a write invalidates the cached copy"),
];

impl Mode {
    pub fn name(self) -> &'static str {
        MODES.iter().find(|(_, m, _)| *m == self).map(|(n, _, _)| *n).unwrap()
    }
    /// Whether writes leave dirty pages in the cache.
    pub fn keeps_dirty(self) -> bool {
        matches!(self, Mode::WriteBack | Mode::WriteOnly)
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        let s = s.to_ascii_lowercase().replace('_', "-");
        let alias = match s.as_str() {
            "wb" | "writeback" => "write-back",
            "wt" | "writethrough" => "write-through",
            "wa" | "writearound" => "write-around",
            "wo" | "writeonly" => "write-only",
            "ro" | "readonly" => "read-only",
            other => other,
        };
        MODES.iter().find(|(n, _, _)| *n == alias).map(|(_, m, _)| *m).ok_or_else(|| {
            format!("unknown mode {s:?} (known: write-back, write-through, write-around, write-only, read-only)")
        })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `mode=`, accepted by every policy.
pub const MODE_PARAM: ParamInfo = ParamInfo {
    name: "mode",
    default: "(from --mode)",
    about: "write-back, write-through, write-around, write-only or read-only",
};

/// For policies with write semantics of their own (block-unit buffers, the
/// tiered caches): the mode is one of `allowed`, else an error that says `why`.
pub fn check_mode(spec: &Spec, ctx: &BuildCtx, allowed: &[Mode], why: &str) -> Result<(), SpecError> {
    if allowed.contains(&ctx.mode) {
        return Ok(());
    }
    Err(SpecError::BadValue {
        kind: "policy",
        name: spec.name.clone(),
        param: "mode".into(),
        value: ctx.mode.name().into(),
        why: why.into(),
    })
}

// ---- the catalogue's shape ----

/// What a builder needs besides the spec.
#[derive(Clone, Copy, Debug)]
pub struct BuildCtx {
    /// Cache capacity in pages (at least 1).
    pub capacity: usize,
    /// Mode from the command line, unless the spec sets `mode=`.
    pub mode: Mode,
    /// Bytes per page (the unit of `capacity` and of page keys); segment-unit
    /// policies (PWC) need it to turn a segment size in bytes into pages.
    pub page_bytes: u64,
}

/// Builds a policy from its spec (already checked against the entry's `params`).
pub type Builder = fn(&Spec, &BuildCtx, &Rules) -> Result<Box<dyn Policy>, SpecError>;

/// Builds a policy's bare replacement rule, without write semantics: for
/// policies that hold rules inside (a tier, ABM's read buffer).
pub type RuleBuilder = fn(&Spec, &BuildCtx) -> Result<Box<dyn Replacement>, SpecError>;

/// A policy in the catalogue.
pub struct PolicyInfo {
    pub name: &'static str,
    pub about: &'static str,
    /// Parameters besides `mode`, which every page policy takes.
    pub params: &'static [ParamInfo],
    pub build: Builder,
    /// Set for policies that are a replacement rule (the classic ones): such
    /// a rule can be nested in another policy's spec (`tier=2q(kin=30%)`).
    pub rule: Option<RuleBuilder>,
}

/// Builds the rule a spec text names, for `ctx.capacity` pages.
pub type RuleFromText = fn(&str, &BuildCtx) -> Result<Box<dyn Replacement>, SpecError>;

/// The registry's rule builder, handed to every [`Builder`], so that a policy
/// holding rules builds them from nested specs the way everything else is
/// built, without importing the registry (which imports every policy).
#[derive(Clone, Copy)]
pub struct Rules {
    /// Builds the rule a spec names, for `ctx.capacity` pages.
    pub build: RuleFromText,
    /// The names of the policies that are rules, in catalogue order.
    pub names: fn() -> Vec<&'static str>,
}

impl Rules {
    /// The rule that `spec`'s parameter `key` names (`tier=2q(kin=30%)`), for
    /// `capacity` pages; it must be one of `allowed`, or of every rule if `None`.
    pub fn nested(
        &self,
        spec: &Spec,
        key: &str,
        allowed: Option<&[&str]>,
        capacity: usize,
        ctx: &BuildCtx,
    ) -> Result<Box<dyn Replacement>, SpecError> {
        let every = (self.names)();
        let text = spec.nested(key, "policy", allowed.unwrap_or(&every))?;
        (self.build)(&text, &BuildCtx { capacity, ..*ctx })
    }
}
