//! LRU-K: evict the page whose K-th most recent reference is oldest (largest
//! backward K-distance); pages with fewer than K known references count as
//! infinitely distant and go first (O'Neil, O'Neil & Weikum, SIGMOD'93).
//!
//! The paper's refinements are parameters, in accesses:
//! - `crp` (Correlated Reference Period): a hit within `crp` accesses of the
//!   page's last reference is correlated — it updates only `LAST`, and the
//!   page's history times move by the correlated period when the next
//!   uncorrelated hit comes; pages referenced within the last `crp` accesses
//!   are not eligible for eviction (if all are, the first in order goes);
//! - `rip` (Retained Information Period): the history of an evicted page is
//!   kept for `rip` accesses after its last reference, and a page coming back
//!   in time resumes it (so it may be K-referenced at once). Ghost histories
//!   are thus bounded by `rip` entries.
//!
//! Among infinitely distant pages the paper leaves the choice to a subsidiary
//! policy; `variant=paper` (default) takes the least recently used
//! (`LAST`). Defaults: `k=2`, `crp=0`, `rip=0` — the paper's LRU-2, without
//! the refinements, which it leaves to the administrator.
//!
//! ## `variant=libcachesim`: libCacheSim's `LRUK` (`LRU_K.cpp`)
//!
//! Pages with fewer than K references leave in FIFO order of insertion (for
//! `k=2`, the same as LRU); no correlated period and no retained history (so
//! `crp` and `rip` must be 0). Miss counts equal libCacheSim's. For `k ≤ 2`
//! both variants are the same algorithm.
//!
//! Eviction is O(log n) whatever `crp` is: a page within its correlated
//! period sorts after every eligible page in the heap (its key carries a
//! [`YOUNG`] bit), and such pages are also listed by last reference, from
//! which each is put back in order as its period ends. (Popping the heap until
//! an eligible page came up cost O(n log n) per eviction when all were within
//! their period: quadratic with a large `crp`.)
//!
//! Memory per tracked page: a 16-byte arena node (its links thread the list),
//! `8·k + 24` bytes of history and times in side arrays, a 24-byte heap entry
//! and 4 bytes of heap position, and the arena's hash index.

use std::collections::BTreeSet;

use crate::heap::IndexedHeap;
use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The largest K accepted.
const MAX_K: u64 = 64;

/// Added to the heap key's K-th reference time of a page within its
/// correlated period, so it sorts after every eligible page (times, counted
/// in accesses, stay far below 2^63).
const YOUNG: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    /// Time of the page's last reference (correlated or not).
    last: u64,
    /// Order among infinitely distant pages (`last` or the insertion time).
    tie: u64,
    ghost: bool,
    /// Within its correlated period as far as `age` knows: on `recent`, keyed with [`YOUNG`].
    young: bool,
}

pub struct LruK {
    arena: Arena<()>,
    meta: Vec<Meta>,
    /// `hist[i·k + j]`: time of the page's (j+1)-th most recent uncorrelated
    /// reference, 0 if unknown.
    hist: Vec<u64>,
    /// Residents by (K-th reference time, tie), young ones after the others
    /// ([`YOUNG`]): least = next victim. Ties are access times, unique among
    /// residents, so the order is total.
    order: IndexedHeap<(u64, u64)>,
    /// The young pages by last reference, most recent at the front, through
    /// the arena's own links: the back is the next to leave its period.
    recent: List,
    /// Ghost histories by (last reference, key).
    ghosts: BTreeSet<(u64, u64)>,
    k: usize,
    crp: u64,
    rip: u64,
    fifo_ties: bool,
    now: u64,
    resident: usize,
    capacity: usize,
}

impl LruK {
    pub fn new(capacity: usize, k: usize, crp: u64, rip: u64, fifo_ties: bool) -> Self {
        let capacity = capacity.max(1);
        LruK {
            arena: Arena::with_capacity(capacity),
            meta: upfront(capacity),
            hist: upfront(capacity * k),
            order: IndexedHeap::new(),
            recent: List::new(),
            ghosts: BTreeSet::new(),
            k: k.max(1),
            crp,
            rip,
            fifo_ties,
            now: 0,
            resident: 0,
            capacity,
        }
    }

    /// `idx`'s place in the eviction order: (K-th reference time, tie).
    fn priority(&self, idx: u32) -> (u64, u64) {
        (self.hist[idx as usize * self.k + self.k - 1], self.meta[idx as usize].tie)
    }

    /// `idx`'s heap key: its priority, after every eligible page's if young.
    fn key(&self, idx: u32) -> (u64, u64) {
        let (kth, tie) = self.priority(idx);
        (if self.meta[idx as usize].young { kth | YOUNG } else { kth }, tie)
    }

    /// Marks `idx` (just referenced) young and puts it at the front of `recent`.
    fn make_young(&mut self, idx: u32) {
        if self.meta[idx as usize].young {
            self.recent.move_to_front(&mut self.arena, idx);
        } else {
            self.meta[idx as usize].young = true;
            self.recent.push_front(&mut self.arena, idx);
        }
    }

    /// Puts the young pages whose correlated period has ended back in order.
    fn age(&mut self) {
        while let Some(idx) = self.recent.back() {
            if self.now - self.meta[idx as usize].last <= self.crp {
                break;
            }
            self.recent.unlink(&mut self.arena, idx);
            self.meta[idx as usize].young = false;
            self.order.update(idx, self.key(idx));
        }
    }

    /// Evicts the least resident referenced more than `crp` accesses ago,
    /// else (all within their period) the least resident.
    fn evict(&mut self, evicted: &mut Vec<u64>) {
        if self.crp > 0 {
            self.age();
        }
        let Some(victim) = self.order.pop() else { return };
        if self.meta[victim as usize].young {
            self.recent.unlink(&mut self.arena, victim);
            self.meta[victim as usize].young = false;
        }
        self.resident -= 1;
        let key = self.arena.key(victim);
        evicted.push(key);
        if self.rip == 0 {
            self.arena.remove(victim);
        } else {
            self.meta[victim as usize].ghost = true;
            self.ghosts.insert((self.meta[victim as usize].last, key));
        }
    }

    /// Forgets ghost histories whose last reference is over `rip` accesses old.
    fn purge(&mut self) {
        while let Some(&(last, key)) = self.ghosts.first() {
            if self.now - last <= self.rip {
                break;
            }
            self.ghosts.pop_first();
            let idx = self.arena.find(key).expect("ghost is in the arena");
            self.arena.remove(idx);
        }
    }

    /// Resident keys, next victim first (for tests).
    pub fn order(&self) -> Vec<u64> {
        let mut entries: Vec<_> = self.order.iter().collect();
        entries.sort_unstable();
        entries.into_iter().map(|(_, idx)| self.arena.key(idx)).collect()
    }
}

impl Replacement for LruK {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        self.now += 1;
        let Some(idx) = self.arena.find(a.key) else { return false };
        if self.meta[idx as usize].ghost {
            return false;
        }
        let (i, k, now) = (idx as usize, self.k, self.now);
        let m = self.meta[i];
        if now - m.last > self.crp {
            // An uncorrelated reference: close the correlated period and shift.
            let h = &mut self.hist[i * k..(i + 1) * k];
            let correl = m.last - h[0];
            for j in (1..k).rev() {
                h[j] = if h[j - 1] == 0 { 0 } else { h[j - 1] + correl };
            }
            h[0] = now;
        }
        self.meta[i].last = now;
        if !self.fifo_ties {
            self.meta[i].tie = now;
        }
        if self.crp > 0 {
            self.make_young(idx);
        }
        self.order.update(idx, self.key(idx));
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let now = self.now.max(1);
        let k = self.k;
        let back = self.arena.find(a.key);
        if let Some(idx) = back {
            debug_assert!(self.meta[idx as usize].ghost, "insert of a resident key");
            self.ghosts.remove(&(self.meta[idx as usize].last, a.key));
        }
        while self.resident >= self.capacity {
            self.evict(evicted);
        }
        let idx = match back {
            Some(idx) => {
                let h = &mut self.hist[idx as usize * k..(idx as usize + 1) * k];
                h.copy_within(0..k - 1, 1);
                h[0] = now;
                idx
            }
            None => {
                let idx = self.arena.insert(a.key, ());
                let i = idx as usize;
                cover(&mut self.meta, i, self.arena.limit(), Meta::default());
                cover(&mut self.hist, (i + 1) * k - 1, self.arena.limit() * k, 0);
                let h = &mut self.hist[i * k..(i + 1) * k];
                h.fill(0);
                h[0] = now;
                idx
            }
        };
        self.meta[idx as usize] = Meta { last: now, tie: now, ghost: false, young: false };
        if self.crp > 0 {
            self.make_young(idx);
        }
        self.order.push(idx, self.key(idx));
        self.resident += 1;
        if self.rip > 0 {
            self.purge();
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        let m = self.meta[idx as usize];
        if m.ghost {
            self.ghosts.remove(&(m.last, key));
            self.arena.remove(idx);
            return false;
        }
        if m.young {
            self.recent.unlink(&mut self.arena, idx);
        }
        self.order.remove(idx);
        self.arena.remove(idx);
        self.resident -= 1;
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| !self.meta[idx as usize].ghost)
    }
    fn len(&self) -> usize {
        self.resident
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.ghosts.len()
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<LruK, SpecError> {
    let k = spec.uint("k")?;
    if !(1..=MAX_K).contains(&k) {
        return Err(spec.invalid("k", format!("between 1 and {MAX_K}")));
    }
    let crp = spec.uint("crp")?;
    let rip = spec.uint("rip")?;
    let fifo_ties = spec.choice("variant", &["paper", "libcachesim"])? == "libcachesim";
    if fifo_ties && crp != 0 {
        return Err(spec.invalid("crp", "libCacheSim's LRU-K has no correlated reference period: must be 0"));
    }
    if fifo_ties && rip != 0 {
        return Err(spec.invalid("rip", "libCacheSim's LRU-K keeps no history of evicted pages: must be 0"));
    }
    Ok(LruK::new(ctx.capacity, k as usize, crp, rip, fifo_ties))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-k",
    about: "LRU-K: evict the oldest K-th most recent reference (O'Neil et al.; libCacheSim LRUK)",
    params: &[
        ParamInfo { name: "k", default: "2", about: "references remembered per page, 1 to 64" },
        ParamInfo { name: "crp", default: "0", about: "correlated reference period, in accesses" },
        ParamInfo { name: "rip", default: "0", about: "retained information period for evicted pages, in accesses" },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper (pages with < K references leave LRU first) or libcachesim (FIFO first; crp=rip=0)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::Mode;

    #[test]
    fn lru_2_by_hand() {
        let mut l = LruK::new(3, 2, 0, 0, false);
        // 1 2 1 3: 1 has two references (times 1, 3); 2 and 3 one each.
        assert_eq!(run_keys(&mut l, &[1, 2, 1, 3]), vec![false, false, true, false]);
        assert_eq!(l.order(), vec![2, 3, 1]);
        // 4: 2 (infinite distance, least recent) leaves, even though 1 is older at its 2nd reference.
        assert_eq!(run_keys(&mut l, &[4, 3, 4]), vec![false, true, true]);
        // 3: refs 4, 6 ; 4: refs 5, 7 ; 1: refs 1, 3 -> 1 has the oldest 2nd reference.
        assert_eq!(l.order(), vec![1, 3, 4]);
        assert_eq!(run_keys(&mut l, &[5]), vec![false]);
        assert!(!l.contains(1));
    }

    #[test]
    fn k1_is_lru_and_fifo_ties_differ_from_lru_ties_for_k3() {
        let keys: Vec<u64> = (0..400u64).map(|i| (i * i + 3 * i) % 13).collect();
        let mut lru = crate::policy::classic::lru::Lru::new(5);
        let mut k1 = LruK::new(5, 1, 0, 0, false);
        assert_eq!(run_keys(&mut k1, &keys), run_keys(&mut lru, &keys));
        // K=3: 1 and 2 are each referenced twice (< 3), 1 most recently; FIFO
        // ties evict 1 (inserted first), LRU ties evict 2.
        let trace = [1, 2, 2, 1, 3, 3, 3, 4];
        let mut paper = LruK::new(3, 3, 0, 0, false);
        let mut lcs = LruK::new(3, 3, 0, 0, true);
        run_keys(&mut paper, &trace);
        run_keys(&mut lcs, &trace);
        assert!(paper.contains(1) && !paper.contains(2));
        assert!(!lcs.contains(1) && lcs.contains(2));
    }

    #[test]
    fn retained_history() {
        // 1 is referenced twice (times 1, 2), evicted at 5 and back at 6: with
        // rip it resumes its history, so its 2nd reference is at time 2.
        let trace = [1, 1, 2, 2, 3, 1];
        let mut l = LruK::new(2, 2, 0, 100, false);
        run_keys(&mut l, &trace);
        assert_eq!(l.priority(l.arena.find(1).unwrap()).0, 2);
        assert_eq!(l.ghosts(), 1);
        let mut l = LruK::new(2, 2, 0, 0, false);
        run_keys(&mut l, &trace);
        assert_eq!((l.priority(l.arena.find(1).unwrap()).0, l.ghosts()), (0, 0));
        // rip bounds the ghosts kept.
        let mut l = LruK::new(1, 2, 0, 3, false);
        run_keys(&mut l, &(0..50).collect::<Vec<u64>>());
        assert_eq!(l.ghosts(), 3);
    }

    #[test]
    fn correlated_references() {
        // crp=1: 2's burst (times 2, 3) is one reference, so 2 still has an
        // infinite distance and leaves before 1 (times 1, 4).
        let trace = [1, 2, 2, 1, 3];
        let mut l = LruK::new(2, 2, 1, 0, false);
        run_keys(&mut l, &trace);
        assert!(l.contains(1) && !l.contains(2));
        let mut l = LruK::new(2, 2, 0, 0, false);
        run_keys(&mut l, &trace);
        assert!(!l.contains(1) && l.contains(2));
        // A page referenced within crp is not eligible: at 5, 3 (referenced at 4,
        // infinite distance) is skipped and 1 (times 1, 3) goes.
        let trace = [1, 2, 1, 3, 4];
        let mut l = LruK::new(2, 2, 1, 0, false);
        run_keys(&mut l, &trace);
        assert!(l.contains(3) && !l.contains(1));
        let mut l = LruK::new(2, 2, 0, 0, false);
        run_keys(&mut l, &trace);
        assert!(!l.contains(3) && l.contains(1));
    }

    /// Heap pushes, removals and updates so far.
    fn heap_ops(l: &LruK) -> u64 {
        l.order.ops
    }

    #[test]
    fn eviction_work_is_bounded_whatever_crp() {
        // 1,000 pages, 20,000 accesses to 5,000 keys in a loop: every access
        // misses. With crp above the trace's length every resident is within
        // its period at each eviction (the least resident goes); with crp=3000
        // pages leave their period as the loop goes on. A scan of the heap per
        // eviction made ~2,000 heap operations an access; a few are needed.
        let keys: Vec<u64> = (0..20_000).map(|i| i % 5_000).collect();
        for crp in [0, 500, 3_000, 1_000_000] {
            let mut l = LruK::new(1_000, 2, crp, 0, false);
            assert!(run_keys(&mut l, &keys).iter().all(|&hit| !hit));
            let per_access = heap_ops(&l) as f64 / keys.len() as f64;
            assert!(per_access <= 4.0, "crp={crp}: {per_access} heap operations an access");
        }
    }

    /// LRU-K as the module doc states it, by brute force: each eviction scans
    /// every resident (the rule the heaps must give, checked below).
    struct Naive {
        k: usize,
        crp: u64,
        rip: u64,
        capacity: usize,
        now: u64,
        /// key -> (history, last reference, resident)
        pages: std::collections::HashMap<u64, (Vec<u64>, u64, bool)>,
    }

    impl Naive {
        fn access(&mut self, key: u64) -> bool {
            self.now += 1;
            let (now, k, crp) = (self.now, self.k, self.crp);
            if let Some((h, last, true)) = self.pages.get_mut(&key) {
                if now - *last > crp {
                    let correl = *last - h[0];
                    for j in (1..k).rev() {
                        h[j] = if h[j - 1] == 0 { 0 } else { h[j - 1] + correl };
                    }
                    h[0] = now;
                }
                *last = now;
                return true;
            }
            while self.pages.values().filter(|p| p.2).count() >= self.capacity {
                let least = |eligible: bool| {
                    self.pages
                        .iter()
                        .filter(|(_, p)| p.2 && (!eligible || now - p.1 > crp))
                        .min_by_key(|(_, p)| (p.0[k - 1], p.1))
                        .map(|(&key, _)| key)
                };
                let victim = least(true).or_else(|| least(false)).unwrap();
                if self.rip == 0 {
                    self.pages.remove(&victim);
                } else {
                    self.pages.get_mut(&victim).unwrap().2 = false;
                }
            }
            let p = self.pages.entry(key).or_insert_with(|| (vec![0; k], 0, false));
            p.0.copy_within(0..k - 1, 1);
            p.0[0] = now;
            *p = (p.0.clone(), now, true);
            let rip = self.rip;
            self.pages.retain(|_, p| p.2 || now - p.1 <= rip);
            false
        }
    }

    proptest::proptest! {
        /// The heaps give the victims of a scan of every resident, for any k,
        /// crp and rip.
        #[test]
        fn evicts_as_a_scan_would(
            keys in proptest::collection::vec(0u64..40, 1..400),
            capacity in 1usize..12,
            k in 1usize..4,
            crp in proptest::prop_oneof![0u64..30, proptest::strategy::Just(u64::MAX / 2)],
            rip in proptest::prop_oneof![proptest::strategy::Just(0u64), 0u64..50],
        ) {
            let mut l = LruK::new(capacity, k, crp, rip, false);
            let mut naive = Naive { k, crp, rip, capacity, now: 0, pages: Default::default() };
            let want: Vec<bool> = keys.iter().map(|&key| naive.access(key)).collect();
            proptest::prop_assert_eq!(run_keys(&mut l, &keys), want);
        }
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 10, mode: Mode::WriteBack, page_bytes: 4096 };
        for bad in [
            "lru-k(k=0)",
            "lru-k(k=65)",
            "lru-k(crp=-1)",
            "lru-k(variant=libcachesim,rip=5)",
            "lru-k(variant=libcachesim,crp=1)",
            "lru-k(variant=x)",
        ] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
        assert!(build_spec("lru-k(k=3,crp=10,rip=1000)", &ctx).is_ok());
    }
}
