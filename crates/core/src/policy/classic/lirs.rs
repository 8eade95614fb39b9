//! LIRS: low inter-reference recency set (Jiang & Zhang, SIGMETRICS'02).
//!
//! Pages are LIR (reused within a short distance; they hold most of the cache)
//! or HIR. A small share of the cache, `hir` (1% by default), holds resident HIR
//! pages in a FIFO queue `Q`; misses evict from `Q`'s front. A recency stack `S`
//! holds LIR pages, resident HIR pages, and the keys of non-resident HIR pages
//! recently seen; its bottom is always an LIR page ("pruning" drops the HIR
//! entries below the lowest LIR page). An HIR page accessed while still in `S`
//! has a shorter reuse distance than the bottom LIR page: it becomes LIR and that
//! LIR page becomes a resident HIR page at the end of `Q`. `S` may hold at most
//! `stack` times the capacity in entries (2 by default); beyond that the oldest
//! non-resident keys are forgotten (0 = no bound).
//!
//! ## `variant=paper` (default): the algorithm as published
//!
//! `max(1, ⌊hir · capacity⌋)` pages for HIR, the rest for LIR. A miss evicts
//! `Q`'s front only when the cache is full; while more than the HIR share is
//! free, a missed page becomes LIR (warm-up). A hit on an HIR page in `S` makes
//! it LIR and demotes the bottom LIR page to `Q`'s end; a hit on an HIR page not
//! in `S` keeps it HIR, moves it to `Q`'s end and puts it on top of `S`. No
//! eviction happens on a hit, every miss is cached, and at most `capacity` pages
//! are resident, at any capacity. The paper does not bound `S` (`stack=0`; the
//! default `stack=2` bounds it here too, as libCacheSim does); the authors' code
//! bounds it at 2500 times the cache size, keeps at least 2 HIR pages, and
//! ignores an immediate re-reference of the same block.
//!
//! ## `variant=libcachesim`: libCacheSim's `LIRS` (`LIRS.c`)
//!
//! Miss counts equal libCacheSim's `LIRS` run on the same keys as 4 KiB objects.
//! libCacheSim builds LIRS from three LRU lists (`S`, `Q`, and `NH`, the
//! non-resident entries of `S` in the order they left `Q`, which the stack bound
//! forgets first) and sizes the HIR share in bytes: `hl = max(1, trunc(hir ·
//! capacity · 4096))` bytes for HIR pages, the rest for LIR pages. Where it
//! departs from the paper:
//! - **Nothing is cached below 100 pages** (at `hir=1%`): the HIR share is then
//!   smaller than one 4 KiB object and libCacheSim refuses every new object
//!   (`LIRS_can_insert`). Every miss is declined ([`Replacement::insert`]
//!   returns false, keeping no history), so every access misses.
//! - A new page becomes LIR whenever the LIR share has room, not only while the
//!   cache warms up; after an LIR page is demoted, the next new page takes its
//!   LIR slot.
//! - A hit on a resident HIR page that is not in `S` demotes the bottom LIR page
//!   to `Q` when the LIR share is full, although the hit page stays HIR; the
//!   demoted page can push `Q`'s front page out of the cache during the hit
//!   (reported by [`Replacement::touch`]).
//! - When `Q` has room for one page only, such a hit can push the hit page itself
//!   out of `Q` while it re-enters `S` as resident: libCacheSim keeps answering
//!   hits for it without counting it in the cache's size, so a page or a few more
//!   than the capacity can be resident until it is hit again or pruned from `S`.
//!   [`Replacement::len`] counts them. Pruning (on a hit, or when a trim
//!   removes an LIR page) can later drop such a page from `S`, and with it from
//!   the cache: it is reported evicted by that `touch` or `remove`.
//! - Pruning keeps the top entry of `S` even when it is not LIR.
//!
//! libCacheSim fixes `hir` at 1% and the stack bound at 2 (`limitStack`: while `S`
//! holds more than twice the cache size, drop the oldest non-resident entry).
//! Each tracked key (an entry in `S` or `Q`) costs one 24-byte arena node, a
//! flag byte and a hash slot; a hit or a miss is amortised `O(1)`.

use crate::list::{reserve_for, upfront, Arena, InVal, Links, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages).
const LCS_PAGE: u64 = 4096;

// Flags of a tracked key. A node exists while its key is in `S` or `Q`.
/// The key has an entry in `S`.
const IN_S: u8 = 1;
/// The `S` entry is LIR.
const LIR: u8 = 2;
/// The `S` entry is resident (an LIR page, or an HIR page that is cached).
const RES: u8 = 4;
/// The key is in `Q` (a resident HIR page).
const IN_Q: u8 = 8;
/// The key is in `NH` (its `S` entry is non-resident).
const IN_NH: u8 = 16;

// A node's own links thread it on `S`; its value is a second pair of
// [`Links`], for `Q` or `NH` (a key is never in both): those two are
// `List<InVal>`s over the same arena.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    LibCacheSim,
    Paper,
}

/// Sizes, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LirsSizes {
    /// LIR pages allowed.
    pub lir: usize,
    /// HIR pages `Q` may hold.
    pub hir: usize,
    /// libCacheSim only: `Q` sheds pages on a non-resident hit while it holds
    /// at least this many (`⌈hl/4096⌉`, one more than `hir` when `hl` is not a
    /// whole number of pages).
    pub hir_ceil: usize,
}

impl LirsSizes {
    /// libCacheSim's byte arithmetic for 4 KiB objects.
    pub fn libcachesim(capacity: usize, hir: f64) -> Self {
        let total = capacity as u64 * LCS_PAGE;
        let hl = ((hir * total as f64) as u64).max(1);
        let ll = total - hl;
        LirsSizes {
            lir: (ll / LCS_PAGE) as usize,
            hir: (hl / LCS_PAGE) as usize,
            hir_ceil: hl.div_ceil(LCS_PAGE) as usize,
        }
    }

    pub fn paper(capacity: usize, hir: f64) -> Self {
        let h = ((hir * capacity as f64) as usize).clamp(1, capacity);
        LirsSizes { lir: capacity - h, hir: h, hir_ceil: h }
    }
}

pub struct Lirs {
    arena: Arena<Links>,
    /// Flags of each node, by node index.
    flags: Vec<u8>,
    s: List,
    q: List<InVal>,
    nh: List<InVal>,
    variant: Variant,
    sizes: LirsSizes,
    capacity: usize,
    /// `S` may hold this many entries (`usize::MAX`: no bound).
    s_max: usize,
    /// libCacheSim's count of LIR pages (it can drift from the true count in
    /// corner cases; decisions follow libCacheSim's count).
    lir: usize,
    /// Resident pages (what a hit would be answered for).
    resident: usize,
    /// Pages that left the cache during the current call; handed to the
    /// caller's `evicted` before it returns (empty between calls).
    gone: Vec<u64>,
    /// The `hir` share and `stack` factor the sizes came from, to rescale
    /// them on [`Replacement::set_capacity`] (`None`: sizes given by hand, no resizing).
    share: Option<(f64, f64)>,
}

impl Lirs {
    pub fn new(capacity: usize, variant: Variant, sizes: LirsSizes, stack: f64) -> Self {
        let capacity = capacity.max(1);
        let s_max = if stack <= 0.0 { usize::MAX } else { (stack * capacity as f64).min(usize::MAX as f64) as usize };
        // S (LIR, resident and non-resident HIR entries) plus HIR pages only in Q.
        let tracked = capacity.saturating_mul(2).min(s_max).max(capacity) + sizes.hir + 2;
        Lirs {
            arena: Arena::with_capacity(tracked),
            flags: upfront(tracked),
            s: List::new(),
            q: List::default(),
            nh: List::default(),
            variant,
            sizes,
            capacity,
            s_max,
            lir: 0,
            resident: 0,
            gone: Vec::with_capacity(4),
            share: None,
        }
    }

    /// Remembers the `hir` share and the `stack` factor the sizes were made
    /// from, so that the paper variant can be resized (ABM's read buffer).
    pub fn resizable(mut self, hir: f64, stack: f64) -> Self {
        self.share = Some((hir, stack));
        self
    }

    #[inline]
    fn f(&self, idx: u32) -> u8 {
        self.flags[idx as usize]
    }
    #[inline]
    fn set(&mut self, idx: u32, bits: u8) {
        self.flags[idx as usize] |= bits;
    }
    #[inline]
    fn clear(&mut self, idx: u32, bits: u8) {
        self.flags[idx as usize] &= !bits;
    }

    fn new_node(&mut self, key: u64, flags: u8) -> u32 {
        let idx = self.arena.insert(key, Links::NONE);
        let i = idx as usize;
        if i < self.flags.len() {
            self.flags[i] = flags;
        } else {
            debug_assert_eq!(i, self.flags.len());
            reserve_for(&mut self.flags, i + 1, self.arena.limit());
            self.flags.push(flags);
        }
        idx
    }

    /// Frees a node that is on no list.
    #[inline]
    fn free(&mut self, idx: u32) {
        debug_assert_eq!(self.f(idx) & (IN_S | IN_Q | IN_NH), 0);
        self.flags[idx as usize] = 0;
        self.arena.remove(idx);
    }

    /// A resident page left the cache.
    #[inline]
    fn evicted(&mut self, key: u64) {
        self.resident -= 1;
        self.gone.push(key);
    }

    /// Takes an entry off `S`; frees the node unless it is still in `Q`.
    fn drop_from_s(&mut self, idx: u32) {
        self.s.unlink(&mut self.arena, idx);
        if self.f(idx) & IN_NH != 0 {
            self.nh.unlink(&mut self.arena, idx);
        }
        let f = self.f(idx);
        self.clear(idx, IN_S | LIR | RES | IN_NH);
        if f & IN_Q == 0 {
            if f & RES != 0 {
                // A resident HIR page outside Q (libCacheSim only): it leaves the cache.
                let key = self.arena.key(idx);
                self.evicted(key);
            }
            self.free(idx);
        }
    }

    /// Drops HIR entries from the bottom of `S` until an LIR entry is there
    /// (keeping the top entry, as libCacheSim does).
    fn prune(&mut self) {
        while self.s.len() > 1 {
            let idx = self.s.back().expect("S is not empty");
            if self.f(idx) & LIR != 0 {
                break;
            }
            self.drop_from_s(idx);
        }
    }

    /// `Q`'s front page leaves the cache; its `S` entry, if any, turns non-resident.
    fn evict_hir(&mut self) {
        let Some(idx) = self.q.back() else { return };
        self.q.unlink(&mut self.arena, idx);
        self.clear(idx, IN_Q);
        let key = self.arena.key(idx);
        self.evicted(key);
        if self.f(idx) & IN_S != 0 {
            self.clear(idx, RES);
            self.set(idx, IN_NH);
            self.nh.push_front(&mut self.arena, idx);
        } else {
            self.free(idx);
        }
    }

    /// libCacheSim's `evictLIR`: the bottom of `S` goes to `Q` (or out, if `Q` has
    /// no room for a page at all), then `S` is pruned.
    fn evict_lir(&mut self) {
        let Some(idx) = self.s.back() else { return };
        let f = self.f(idx);
        // The bottom of S is LIR but for corner cases libCacheSim does not guard
        // against either: whatever is there moves to Q.
        debug_assert!(f & IN_Q == 0, "bottom of S already in Q");
        let was_resident = f & (LIR | RES) != 0;
        self.lir = self.lir.saturating_sub(1);
        self.s.unlink(&mut self.arena, idx);
        if f & IN_NH != 0 {
            self.nh.unlink(&mut self.arena, idx);
        }
        self.clear(idx, IN_S | LIR | RES | IN_NH);
        if self.sizes.hir >= 1 {
            while self.q.len() + 1 > self.sizes.hir {
                self.evict_hir();
            }
            self.set(idx, IN_Q);
            self.q.push_front(&mut self.arena, idx);
            if !was_resident {
                self.resident += 1;
            }
        } else {
            if was_resident {
                let key = self.arena.key(idx);
                self.evicted(key);
            }
            self.free(idx);
        }
        self.prune();
    }

    /// Forgets the oldest non-resident entries while `S` is over its bound.
    fn limit_stack(&mut self) {
        while self.s.len() > self.s_max {
            let Some(idx) = self.nh.back() else { break };
            self.drop_from_s(idx);
        }
    }

    /// Paper: the bottom LIR page of `S` becomes a resident HIR page at `Q`'s end.
    fn demote_bottom(&mut self) {
        self.prune();
        let Some(idx) = self.s.back() else { return };
        debug_assert!(self.f(idx) & LIR != 0);
        self.s.unlink(&mut self.arena, idx);
        self.clear(idx, IN_S | LIR | RES);
        self.lir -= 1;
        self.set(idx, IN_Q);
        self.q.push_front(&mut self.arena, idx);
        self.prune();
    }

    fn touch_libcachesim(&mut self, idx: u32) -> bool {
        let f = self.f(idx);
        if f & IN_S != 0 {
            self.s.move_to_front(&mut self.arena, idx);
        }
        if f & IN_Q != 0 {
            self.q.move_to_front(&mut self.arena, idx);
        }
        if f & IN_S != 0 {
            if f & LIR != 0 {
                self.prune();
            } else if f & RES != 0 {
                // A resident HIR page in S becomes LIR.
                if f & IN_Q != 0 {
                    self.q.unlink(&mut self.arena, idx);
                    self.clear(idx, IN_Q);
                }
                while self.lir + 1 > self.sizes.lir {
                    self.evict_lir();
                }
                self.set(idx, LIR);
                self.lir += 1;
            } else {
                return false;
            }
        } else {
            // A resident HIR page only in Q: it stays HIR and goes on top of S,
            // after the LIR share makes room for a page it does not take.
            let key = self.arena.key(idx);
            while self.lir + 1 > self.sizes.lir {
                self.evict_lir();
            }
            let idx = if self.f(idx) == 0 {
                // Q's front was this page: it left Q, yet libCacheSim keeps it resident.
                let at = self.gone.iter().rposition(|&k| k == key).expect("evicted during this hit");
                self.gone.remove(at);
                self.resident += 1;
                self.new_node(key, 0)
            } else {
                idx
            };
            self.set(idx, IN_S | RES);
            self.s.push_front(&mut self.arena, idx);
        }
        self.limit_stack();
        true
    }

    /// Returns false if libCacheSim would not admit the page.
    fn insert_libcachesim(&mut self, key: u64) -> bool {
        let sz = self.sizes;
        match self.arena.find(key) {
            Some(idx) => {
                // A non-resident HIR page in S (already on top of S): it becomes LIR.
                debug_assert_eq!(self.f(idx) & (IN_S | LIR | RES | IN_Q), IN_S);
                while self.lir + 1 > sz.lir {
                    self.evict_lir();
                }
                if self.f(idx) & IN_NH != 0 {
                    self.nh.unlink(&mut self.arena, idx);
                    self.clear(idx, IN_NH);
                }
                while self.lir + self.q.len() + 1 > self.capacity {
                    while self.q.len() >= sz.hir_ceil && !self.q.is_empty() {
                        self.evict_hir();
                    }
                    self.evict_lir();
                }
                self.set(idx, LIR | RES);
                self.lir += 1;
                self.resident += 1;
            }
            None => {
                if sz.lir == 0 || sz.hir == 0 {
                    // Smaller than the HIR or the LIR share: libCacheSim refuses
                    // the page before changing anything (LIRS_can_insert).
                    return false;
                }
                if self.lir + 1 > sz.lir && self.q.len() + 1 > sz.hir {
                    while self.q.len() + 1 > sz.hir {
                        self.evict_hir();
                    }
                }
                while self.lir + self.q.len() + 1 > self.capacity {
                    if self.lir + 1 > sz.lir && self.q.len() + 1 > sz.hir {
                        self.evict_hir();
                    } else {
                        debug_assert!(false, "libCacheSim would loop forever here");
                        break;
                    }
                }
                if self.lir < sz.lir {
                    let idx = self.new_node(key, IN_S | LIR | RES);
                    self.s.push_front(&mut self.arena, idx);
                    self.lir += 1;
                } else {
                    let idx = self.new_node(key, IN_S | RES | IN_Q);
                    self.s.push_front(&mut self.arena, idx);
                    self.q.push_front(&mut self.arena, idx);
                }
                self.resident += 1;
            }
        }
        true
    }

    fn touch_paper(&mut self, idx: u32) -> bool {
        let f = self.f(idx);
        if f & LIR != 0 {
            self.s.move_to_front(&mut self.arena, idx);
            self.prune();
        } else if f & IN_Q != 0 {
            self.q.move_to_front(&mut self.arena, idx);
            if f & IN_S != 0 {
                self.s.move_to_front(&mut self.arena, idx);
                self.q.unlink(&mut self.arena, idx);
                self.clear(idx, IN_Q);
                self.set(idx, LIR);
                self.lir += 1;
                if self.lir > self.sizes.lir {
                    self.demote_bottom();
                }
            } else {
                self.set(idx, IN_S | RES);
                self.s.push_front(&mut self.arena, idx);
            }
        } else {
            // A non-resident HIR page in S: its recency still counts.
            self.s.move_to_front(&mut self.arena, idx);
            return false;
        }
        self.limit_stack();
        true
    }

    fn insert_paper(&mut self, key: u64) {
        let free = self.capacity.saturating_sub(self.resident);
        let mut warm = false;
        if free == 0 {
            if self.q.is_empty() {
                self.demote_bottom();
            }
            self.evict_hir();
        } else if free > self.sizes.hir {
            warm = true;
        }
        match self.arena.find(key) {
            Some(idx) => {
                debug_assert_eq!(self.f(idx) & (IN_S | LIR | RES | IN_Q), IN_S);
                if self.f(idx) & IN_NH != 0 {
                    self.nh.unlink(&mut self.arena, idx);
                    self.clear(idx, IN_NH);
                }
                self.set(idx, LIR | RES);
                self.lir += 1;
                if !warm && self.lir > self.sizes.lir {
                    self.demote_bottom();
                }
            }
            None if warm => {
                let idx = self.new_node(key, IN_S | LIR | RES);
                self.s.push_front(&mut self.arena, idx);
                self.lir += 1;
            }
            None => {
                let idx = self.new_node(key, IN_S | RES | IN_Q);
                self.s.push_front(&mut self.arena, idx);
                self.q.push_front(&mut self.arena, idx);
            }
        }
        self.resident += 1;
    }

    #[cfg(test)]
    fn state(&self) -> (Vec<String>, Vec<u64>) {
        let mut s = Vec::new();
        let mut cur = self.s.front();
        while let Some(idx) = cur {
            let f = self.f(idx);
            let tag = if f & LIR != 0 {
                "L"
            } else if f & RES != 0 {
                "H"
            } else {
                "N"
            };
            s.push(format!("{}{}", self.arena.key(idx), tag));
            cur = self.s.next_of(&self.arena, idx);
        }
        (s, self.q.keys(&self.arena))
    }
}

impl Replacement for Lirs {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        debug_assert!(self.gone.is_empty());
        let Some(idx) = self.arena.find(a.key) else { return false };
        let hit = match self.variant {
            Variant::LibCacheSim => self.touch_libcachesim(idx),
            Variant::Paper => self.touch_paper(idx),
        };
        // Pages the hit pushed out of the cache (libCacheSim only).
        debug_assert!(!self.gone.contains(&a.key));
        evicted.append(&mut self.gone);
        hit
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        debug_assert!(self.gone.is_empty());
        let admitted = match self.variant {
            Variant::LibCacheSim => self.insert_libcachesim(a.key),
            Variant::Paper => {
                self.insert_paper(a.key);
                true
            }
        };
        self.limit_stack();
        evicted.append(&mut self.gone);
        admitted
    }

    fn remove(&mut self, key: u64, evicted: &mut Vec<u64>) -> bool {
        let resident = self.remove_key(key);
        // Pages pruning dropped from S along with their residency (libCacheSim only).
        evicted.append(&mut self.gone);
        resident
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| self.f(idx) & (LIR | RES | IN_Q) != 0)
    }
    fn len(&self) -> usize {
        self.resident
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.nh.len()
    }
    /// The paper variant only (libCacheSim's has no resizing to follow). The
    /// LIR/HIR split is rescaled with the paper's ratio (`hir` of the new
    /// capacity for HIR pages, the stack bound `stack` times it); LIR pages
    /// over the new LIR share are demoted from the bottom of `S` to `Q`'s end,
    /// as a hit demotes them; then `Q`'s front pages leave until the pages
    /// fit. Growing evicts nothing; the room is filled as in warm-up.
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        let (Variant::Paper, Some((hir, stack))) = (self.variant, self.share) else { return false };
        debug_assert!(self.gone.is_empty());
        self.capacity = capacity;
        self.sizes =
            if capacity == 0 { LirsSizes { lir: 0, hir: 0, hir_ceil: 0 } } else { LirsSizes::paper(capacity, hir) };
        self.s_max = if stack <= 0.0 { usize::MAX } else { (stack * capacity as f64).min(usize::MAX as f64) as usize };
        while self.lir > self.sizes.lir {
            self.demote_bottom();
        }
        while self.resident > capacity && !self.q.is_empty() {
            self.evict_hir();
        }
        debug_assert!(self.resident <= capacity);
        self.limit_stack();
        evicted.append(&mut self.gone);
        true
    }
}

impl Lirs {
    /// Forgets `key`; returns whether it was resident.
    fn remove_key(&mut self, key: u64) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        let f = self.f(idx);
        let resident = f & (LIR | RES | IN_Q) != 0;
        if resident {
            self.resident -= 1;
        }
        if f & LIR != 0 {
            self.lir -= 1;
        }
        if f & IN_Q != 0 {
            self.q.unlink(&mut self.arena, idx);
        }
        if f & IN_S != 0 {
            self.s.unlink(&mut self.arena, idx);
        }
        if f & IN_NH != 0 {
            self.nh.unlink(&mut self.arena, idx);
        }
        self.flags[idx as usize] = 0;
        self.arena.remove(idx);
        if f & LIR != 0 {
            self.prune();
        }
        resident
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<Lirs, SpecError> {
    let hir = spec.ratio("hir")?;
    if hir >= 1.0 {
        return Err(spec.invalid("hir", "must be below 100% (LIR pages need room)"));
    }
    let stack = spec.float("stack")?;
    if stack < 0.0 || (stack > 0.0 && stack < 1.0) {
        return Err(spec.invalid("stack", "must be 0 (no bound) or at least 1"));
    }
    let capacity = ctx.capacity.max(1);
    let (variant, sizes) = match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => (Variant::LibCacheSim, LirsSizes::libcachesim(capacity, hir)),
        _ => (Variant::Paper, LirsSizes::paper(capacity, hir)),
    };
    Ok(Lirs::new(capacity, variant, sizes, stack).resizable(hir, stack))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lirs",
    about: "LIRS: LIR pages by reuse distance, a small FIFO of HIR pages (Jiang & Zhang)",
    params: &[
        ParamInfo {
            name: "hir",
            default: "1%",
            about: "share of the capacity for resident HIR pages (libCacheSim: 1%)",
        },
        ParamInfo {
            name: "stack",
            default: "2",
            about: "stack S holds at most this many times the capacity in entries; 0 = unbounded (paper)",
        },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper or libcachesim (libCacheSim LIRS: byte-sized HIR share, caches nothing under 100 pages \
                    at 1%; can evict during hits)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{misses, read, run_keys};
    use crate::policy::{Mode, SpecError};

    fn paper(capacity: usize, hir_pages: usize) -> Lirs {
        let sizes = LirsSizes { lir: capacity - hir_pages, hir: hir_pages, hir_ceil: hir_pages };
        Lirs::new(capacity, Variant::Paper, sizes, 0.0)
    }

    /// Like `run_keys`, but allows libCacheSim's extra resident pages.
    fn run_loose(l: &mut Lirs, keys: &[u64]) -> Vec<bool> {
        let mut evicted = Vec::new();
        keys.iter()
            .map(|&k| {
                let a = read(k, 0);
                let hit = l.touch(&a, false, &mut evicted);
                if !hit {
                    l.insert(&a, false, &mut evicted);
                }
                hit
            })
            .collect()
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sizes_follow_libcachesim_bytes() {
        // 1% of 100 pages is exactly one page; under 100 pages it is less than one.
        assert_eq!(LirsSizes::libcachesim(100, 0.01), LirsSizes { lir: 99, hir: 1, hir_ceil: 1 });
        assert_eq!(LirsSizes::libcachesim(99, 0.01), LirsSizes { lir: 98, hir: 0, hir_ceil: 1 });
        // 150 pages: 6144 bytes, one and a half pages.
        assert_eq!(LirsSizes::libcachesim(150, 0.01), LirsSizes { lir: 148, hir: 1, hir_ceil: 2 });
        assert_eq!(LirsSizes::paper(99, 0.01), LirsSizes { lir: 98, hir: 1, hir_ceil: 1 });
        assert_eq!(LirsSizes::paper(1000, 0.01), LirsSizes { lir: 990, hir: 10, hir_ceil: 10 });
    }

    #[test]
    fn paper_example_sequence() {
        // The reference string of the paper's Table 1: A D B C B A D A E, with
        // Llirs = 2 and Lhirs = 1 (A=1 … E=5).
        let (a, b, c, d, e) = (1, 2, 3, 4, 5);
        let mut l = paper(3, 1);
        // A and D warm up as LIR; B enters Q as HIR.
        assert_eq!(run_keys(&mut l, &[a, d, b]), vec![false; 3]);
        assert_eq!(l.state(), (strs(&["2H", "4L", "1L"]), vec![b]));
        // C misses: B leaves Q (non-resident in S), C is HIR.
        run_keys(&mut l, &[c]);
        assert_eq!(l.state(), (strs(&["3H", "2N", "4L", "1L"]), vec![c]));
        // B misses while still in S: it becomes LIR; C is evicted; the bottom LIR
        // page A turns HIR in Q, and pruning leaves D at the bottom.
        assert_eq!(run_keys(&mut l, &[b]), vec![false]);
        assert_eq!(l.state(), (strs(&["2L", "3N", "4L"]), vec![a]));
        // A hits in Q (not in S): stays HIR, goes on top of S.
        assert_eq!(run_keys(&mut l, &[a]), vec![true]);
        assert_eq!(l.state(), (strs(&["1H", "2L", "3N", "4L"]), vec![a]));
        // D hits (LIR at the bottom): moves up; pruning drops the non-resident C.
        assert_eq!(run_keys(&mut l, &[d]), vec![true]);
        assert_eq!(l.state(), (strs(&["4L", "1H", "2L"]), vec![a]));
        // A hits in S: becomes LIR; B, at the bottom, is demoted to Q.
        assert_eq!(run_keys(&mut l, &[a]), vec![true]);
        assert_eq!(l.state(), (strs(&["1L", "4L"]), vec![b]));
        // E misses: B is evicted (and forgotten, being out of S); E is HIR.
        assert_eq!(run_keys(&mut l, &[e]), vec![false]);
        assert_eq!(l.state(), (strs(&["5H", "1L", "4L"]), vec![e]));
        // Time 10: D (LIR) hits; C is new and evicts E, whose S entry stays non-resident.
        assert_eq!(run_keys(&mut l, &[d, c]), vec![true, false]);
        assert_eq!(l.state(), (strs(&["3H", "4L", "5N", "1L"]), vec![c]));
        assert_eq!(l.ghosts(), 1);
    }

    #[test]
    fn libcachesim_differs_on_the_same_sequence() {
        // The same string through libCacheSim's rules, with an LIR share of 2
        // pages and an HIR share of 1 (as libCacheSim has with 1-byte objects).
        let sizes = LirsSizes { lir: 2, hir: 1, hir_ceil: 1 };
        let mut l = Lirs::new(3, Variant::LibCacheSim, sizes, 2.0);
        assert_eq!(run_loose(&mut l, &[1, 4, 2, 3, 2]), vec![false; 5]);
        // As in the paper so far.
        assert_eq!(l.state(), (strs(&["2L", "3N", "4L"]), vec![1]));
        // A (1) hits in Q. The LIR share is full, so libCacheSim first demotes the
        // bottom LIR page D to Q, which pushes A itself out of Q; A still goes on
        // top of S as a resident HIR page.
        assert_eq!(run_loose(&mut l, &[1]), vec![true]);
        assert_eq!(l.state(), (strs(&["1H", "2L"]), vec![4]));
        // The LIR share has room again: the next new page becomes LIR directly,
        // and the cache now answers for 4 pages.
        assert_eq!(run_loose(&mut l, &[6]), vec![false]);
        assert_eq!(l.state(), (strs(&["6L", "1H", "2L"]), vec![4]));
        assert_eq!(l.len(), 4);
        // D hits in Q: the LIR share is full again, so 2 is demoted into Q, which
        // pushes D out of Q during the hit, and pruning then drops A (resident,
        // but in neither Q nor the LIR set) from S and from the cache. D goes on
        // top of S, resident; the hit reports A as evicted.
        let mut ev = Vec::new();
        assert!(l.touch(&read(4, 7), false, &mut ev));
        assert_eq!(l.state(), (strs(&["4H", "6L"]), vec![2]));
        assert_eq!(ev, vec![1]);
        // A misses now, and takes the free LIR slot.
        assert_eq!(run_loose(&mut l, &[1]), vec![false]);
        assert_eq!(l.state(), (strs(&["1L", "4H", "6L"]), vec![2]));
        assert_eq!(l.len(), 4);
    }

    #[test]
    fn evictions_during_hits_are_reported_by_the_hit() {
        // 4 pages: LIR share 2, HIR share 2. 1 and 2 become LIR, 3 and 4 HIR.
        let sizes = LirsSizes { lir: 2, hir: 2, hir_ceil: 2 };
        let mut l = Lirs::new(4, Variant::LibCacheSim, sizes, 2.0);
        run_keys(&mut l, &[1, 2, 3, 4]);
        assert_eq!(l.state(), (strs(&["4H", "3H", "2L", "1L"]), vec![4, 3]));
        // 5: Q full; 3 leaves (its S entry turns non-resident).
        let mut ev = Vec::new();
        run_keys(&mut l, &[5]);
        assert_eq!(l.state(), (strs(&["5H", "4H", "3N", "2L", "1L"]), vec![5, 4]));
        // 4 hits in S: it becomes LIR, 1 is demoted to Q (4 left Q, so Q had room).
        assert!(l.touch(&read(4, 5), false, &mut ev));
        assert_eq!(l.state(), (strs(&["4L", "5H", "3N", "2L"]), vec![1, 5]));
        assert!(ev.is_empty());
        // A hit on a page only in Q (1) with the LIR share full: 2 (bottom) is
        // demoted into Q, which evicts Q's front (5) during the hit; pruning then
        // drops the non-resident entries 3 and 5 from S.
        assert!(l.touch(&read(1, 6), false, &mut ev));
        assert!(!l.contains(5));
        assert_eq!(l.state(), (strs(&["1H", "4L"]), vec![2, 1]));
        assert_eq!(ev, vec![5], "the hit reports the page it evicted");
        // The next insert reports nothing more (the LIR share has room for 9).
        ev.clear();
        assert!(l.insert(&read(9, 7), false, &mut ev));
        assert!(ev.is_empty());
        assert_eq!(l.state(), (strs(&["9L", "1H", "4L"]), vec![2, 1]));
    }

    #[test]
    fn trim_reports_pages_pruning_drops() {
        // As in `libcachesim_differs_on_the_same_sequence`: A (1) is resident but
        // neither LIR nor in Q, between the LIR pages 6 and 2.
        let sizes = LirsSizes { lir: 2, hir: 1, hir_ceil: 1 };
        let mut l = Lirs::new(3, Variant::LibCacheSim, sizes, 2.0);
        run_loose(&mut l, &[1, 4, 2, 3, 2, 1, 6]);
        assert_eq!(l.state(), (strs(&["6L", "1H", "2L"]), vec![4]));
        // Trimming 2 (LIR, at the bottom) prunes A from S and from the cache.
        let mut ev = Vec::new();
        assert!(l.remove(2, &mut ev));
        assert_eq!(ev, vec![1]);
        assert_eq!(l.state(), (strs(&["6L"]), vec![4]));
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn nothing_cached_below_one_hir_page() {
        let mut l = Lirs::new(50, Variant::LibCacheSim, LirsSizes::libcachesim(50, 0.01), 2.0);
        let keys: Vec<u64> = (0..20).chain(0..20).collect();
        assert_eq!(run_keys(&mut l, &keys), vec![false; keys.len()]);
        assert_eq!((l.len(), l.ghosts(), l.s.len(), l.q.len()), (0, 0, 0, 0));
        // Through the registry, in every mode: every access misses, nothing is
        // cached, and nothing overruns the capacity.
        for (_, mode, _) in crate::policy::MODES {
            let ctx = BuildCtx { capacity: 50, mode: *mode, page_bytes: 4096 };
            let (mut p, _) = build_spec("lirs(variant=libcachesim)", &ctx).unwrap();
            assert_eq!(misses(p.as_mut(), &keys), keys.len(), "{mode}");
            let st = p.stats();
            assert_eq!((st.resident, st.dirty, st.capacity), (0, 0, 50), "{mode}");
            // The paper's LIRS caches them all.
            let (mut p, _) = build_spec("lirs", &ctx).unwrap();
            let expect = if *mode == Mode::WriteOnly { keys.len() } else { 20 };
            assert_eq!(misses(p.as_mut(), &keys), expect, "{mode}");
        }
    }

    #[test]
    fn stack_bound_forgets_oldest_non_resident() {
        let mut l = paper(4, 1);
        let sizes = l.sizes;
        l.s_max = 6;
        assert_eq!(sizes.lir, 3);
        // 1 2 3 LIR, then a scan: each new page evicts the previous one, which stays
        // in S as non-resident until S holds 6 entries.
        run_keys(&mut l, &[1, 2, 3, 10, 11, 12, 13, 14]);
        assert_eq!(l.state().0, strs(&["14H", "13N", "12N", "3L", "2L", "1L"]));
        assert_eq!(l.ghosts(), 2);
    }

    #[test]
    fn capacity_holds() {
        let mut x: u64 = 99;
        let keys: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 300).min(x % 1000)
            })
            .collect();
        for c in [1, 2, 3, 10, 57] {
            let mut l = Lirs::new(c, Variant::Paper, LirsSizes::paper(c, 0.01), 2.0);
            run_keys(&mut l, &keys);
            assert!(l.s.len() <= 2 * c);
        }
        for c in [200, 333, 1000] {
            // HIR share of two pages or more: no page outside Q stays resident.
            let mut l = Lirs::new(c, Variant::LibCacheSim, LirsSizes::libcachesim(c, 0.01), 2.0);
            run_keys(&mut l, &keys);
            assert!(l.s.len() <= 2 * c);
        }
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        // Every access's effects report exactly the pages that left the cache
        // (during hits and trims too), so the caller's view is always the rule's.
        let configs = [
            (Variant::Paper, LirsSizes::paper(7, 0.3), 2.0),
            (Variant::Paper, LirsSizes::paper(1, 0.01), 0.0),
            (Variant::LibCacheSim, LirsSizes { lir: 5, hir: 2, hir_ceil: 2 }, 2.0),
            (Variant::LibCacheSim, LirsSizes { lir: 5, hir: 1, hir_ceil: 2 }, 2.0),
            (Variant::LibCacheSim, LirsSizes { lir: 6, hir: 1, hir_ceil: 1 }, 3.0),
            (Variant::LibCacheSim, LirsSizes::libcachesim(7, 0.01), 2.0),
        ];
        for (variant, sizes, stack) in configs {
            let c = sizes.lir + sizes.hir_ceil.max(1);
            crate::policy::testing::churn(
                || Lirs::new(c, variant, sizes, stack),
                40,
                |l, shadow| {
                    let live: Vec<u64> = (0..40).filter(|&k| l.contains(k)).collect();
                    assert_eq!(live.len(), l.len());
                    assert!(l.gone.is_empty());
                    assert!(live.iter().all(|k| shadow.contains(k)));
                    assert_eq!(shadow.len(), live.len());
                    if variant == Variant::Paper {
                        assert!(l.len() <= c);
                    }
                    assert!(l.s.len() <= (stack * c as f64) as usize || stack == 0.0);
                },
            );
        }
    }

    #[test]
    fn shrinking_demotes_bottom_lir_then_evicts_q_front() {
        // 10 pages, hir 20%: 8 LIR + 2 HIR.
        let mut l = Lirs::new(10, Variant::Paper, LirsSizes::paper(10, 0.2), 0.0).resizable(0.2, 0.0);
        // 1..8 warm up as LIR; 9, 10 enter Q (HIR); 1 is hit and goes on top of S.
        run_keys(&mut l, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1]);
        assert_eq!((l.lir, l.q.keys(&l.arena)), (8, vec![10, 9]));
        let mut ev = Vec::new();
        // 5 pages, 20%: 4 LIR + 1 HIR. LIR 2, 3, 4, 5 (the bottom of S, 1 was
        // hit) go to Q's end; then Q's front pages leave: 9, 10, 2, 3, 4.
        assert!(l.set_capacity(5, &mut ev));
        assert_eq!(ev, vec![9, 10, 2, 3, 4]);
        assert_eq!((l.lir, l.len(), l.sizes), (4, 5, LirsSizes { lir: 4, hir: 1, hir_ceil: 1 }));
        assert_eq!(l.q.keys(&l.arena), vec![5]);
        assert!([1, 5, 6, 7, 8].iter().all(|&k| l.contains(k)));
        // Growing evicts nothing; new pages warm up as LIR while room is left.
        ev.clear();
        assert!(l.set_capacity(10, &mut ev));
        assert!(ev.is_empty());
        assert_eq!(run_keys(&mut l, &[20, 21, 22]), vec![false; 3]);
        assert_eq!((l.lir, l.len()), (7, 8));
        // To nothing and back.
        assert!(l.set_capacity(0, &mut ev));
        assert_eq!((l.len(), l.lir, l.q.len()), (0, 0, 0));
        assert!(l.set_capacity(3, &mut ev));
        assert_eq!(run_keys(&mut l, &[1, 2, 3, 4]), vec![false; 4]);
        assert_eq!(l.len(), 3);
        // libCacheSim's variant, and hand-made sizes, do not resize.
        let mut lcs = Lirs::new(200, Variant::LibCacheSim, LirsSizes::libcachesim(200, 0.01), 2.0);
        assert!(!lcs.set_capacity(100, &mut ev) && lcs.capacity() == 200);
        assert!(!paper(3, 1).set_capacity(2, &mut ev));
    }

    proptest::proptest! {
        #[test]
        fn resized_lirs_never_exceeds_its_capacity(
            hir in proptest::sample::select(vec![0.01, 0.2, 0.5]),
            stack in proptest::sample::select(vec![0.0, 2.0]),
            ops in proptest::collection::vec((0u64..40, 0u8..12, 0usize..20), 1..400),
        ) {
            let mut l = Lirs::new(8, Variant::Paper, LirsSizes::paper(8, hir), stack).resizable(hir, stack);
            let mut ev = Vec::new();
            let mut resident = std::collections::HashSet::new();
            for (i, (key, what, size)) in ops.into_iter().enumerate() {
                ev.clear();
                if what == 0 {
                    proptest::prop_assert!(l.set_capacity(size, &mut ev));
                } else if what == 1 {
                    if l.remove(key, &mut ev) {
                        resident.remove(&key);
                    }
                } else {
                    if l.capacity() == 0 {
                        l.set_capacity(1, &mut ev);
                    }
                    let a = read(key, i as u64);
                    if !l.touch(&a, false, &mut ev) {
                        proptest::prop_assert!(l.insert(&a, false, &mut ev));
                        resident.insert(key);
                    }
                }
                for k in &ev {
                    proptest::prop_assert!(resident.remove(k), "evicted {} was not resident", k);
                }
                let c = l.capacity();
                proptest::prop_assert!(l.len() <= c && l.len() == resident.len(), "{} pages, capacity {}", l.len(), c);
                proptest::prop_assert!(resident.iter().all(|&k| l.contains(k)));
                proptest::prop_assert!(l.lir <= l.sizes.lir.max(1) && l.lir + l.q.len() == l.len());
                if stack > 0.0 {
                    proptest::prop_assert!(l.s.len() <= (stack * c as f64) as usize);
                }
            }
        }
    }

    #[test]
    fn remove_and_params() {
        let mut l = paper(3, 1);
        run_keys(&mut l, &[1, 2, 3]);
        let mut ev = Vec::new();
        assert!(l.remove(1, &mut ev) && !l.remove(1, &mut ev));
        assert!(ev.is_empty());
        assert_eq!(l.len(), 2);
        assert_eq!(run_keys(&mut l, &[4, 2]), vec![false, true]);
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        for ok in ["lirs", "lirs(variant=paper)", "lirs(hir=10%,stack=0)", "lirs(stack=3)"] {
            assert!(build_spec(ok, &ctx).is_ok(), "{ok}");
        }
        for bad in ["lirs(hir=100%)", "lirs(stack=-1)", "lirs(stack=0.5)", "lirs(variant=v2)", "lirs(hir=x)"] {
            assert!(matches!(build_spec(bad, &ctx), Err(SpecError::BadValue { .. })), "{bad}");
        }
    }
}
