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
//! Memory per tracked page: a 16-byte arena node, `8·k + 24` bytes of history
//! and times in side arrays, 8 bytes of indexed heap for the eviction order,
//! and the arena's hash index.

use std::collections::BTreeSet;

use crate::heap::IndexedHeap;
use crate::list::{cover, upfront, Arena};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The largest K accepted.
const MAX_K: u64 = 64;

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    /// Time of the page's last reference (correlated or not).
    last: u64,
    /// Order among infinitely distant pages (`last` or the insertion time).
    tie: u64,
    ghost: bool,
}

pub struct LruK {
    arena: Arena<()>,
    meta: Vec<Meta>,
    /// `hist[i·k + j]`: time of the page's (j+1)-th most recent uncorrelated
    /// reference, 0 if unknown.
    hist: Vec<u64>,
    /// Residents by (K-th reference time, tie): least = next victim. Ties
    /// are access times, unique among residents, so the order is total.
    order: IndexedHeap<(u64, u64)>,
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

    fn evict(&mut self, evicted: &mut Vec<u64>) {
        let Some(first) = self.order.peek() else { return };
        let victim = if self.crp == 0 {
            first
        } else {
            // The least entry referenced more than `crp` accesses ago, else the least.
            let mut passed = Vec::new();
            let found = loop {
                match self.order.pop() {
                    Some(idx) if self.now - self.meta[idx as usize].last > self.crp => break Some(idx),
                    Some(idx) => passed.push(idx),
                    None => break None,
                }
            };
            for idx in passed {
                self.order.push(idx, self.priority(idx));
            }
            found.unwrap_or(first)
        };
        self.order.remove(victim); // (a no-op for one popped above)
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
        self.order.update(idx, self.priority(idx));
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
        self.meta[idx as usize] = Meta { last: now, tie: now, ghost: false };
        self.order.push(idx, self.priority(idx));
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
