//! CCF-LRU: Cold-Clean-First LRU (Z. Li, P. Jin, X. Su, K. Cui, L. Yue,
//! "CCF-LRU: a new buffer replacement algorithm for flash memory", IEEE Trans.
//! Consumer Electronics 55(3), 2009).
//!
//! CCF-LRU extends LRU-WSR's cold flag to clean pages, so a page is one of
//! cold clean, hot clean, cold dirty or hot dirty, and evicts cold clean pages
//! first while *delaying* the eviction of hot clean pages. It keeps two LRU
//! lists:
//! - the **cold clean list**: clean pages read once (a read miss enters here)
//!   and hot clean pages demoted from the mixed list;
//! - the **mixed list**: dirty pages and hot clean pages. A write miss enters
//!   here (hot, as a new dirty page in LRU-WSR); any hit moves the page to the
//!   MRU end of the mixed list and makes it hot (clears its cold flag).
//!
//! To make room: the LRU page of the cold clean list goes, if there is one.
//! Otherwise the mixed list is scanned from its LRU end, as LRU-WSR does:
//! - a hot dirty page is marked cold and moved to the MRU end (second chance);
//! - a hot clean page is marked cold and **moved to the cold clean list** (its
//!   MRU end) — clean pages shuttle between the two lists (paper 001 §2.2 3));
//! - a cold dirty page is evicted.
//!
//! So the order of eviction is cold clean, then cold dirty, with hot clean and
//! hot dirty pages given a second chance first.
//!
//! Where we had to choose (the original's text was not available to us here;
//! the above follows its abstract, paper 001's description and the published
//! simulator implementations we could inspect):
//! - after demoting a hot clean page the scan *continues* in the mixed list
//!   (the demoted page is not evicted at once); this is what "delaying the
//!   eviction of hot clean pages" and both implementations we read do;
//! - if the scan empties the mixed list (it held only clean pages), the LRU
//!   page of the cold clean list, i.e. the oldest demoted page, is evicted
//!   (the implementations we read crash or loop there);
//! - a page cleaned by [`Replacement::cleaned`] stays where it is; the scan
//!   demotes it like a hot clean page when it reaches the LRU end.
//!
//! No parameters. Paper 001 describes CCF-LRU (§2.2) but reports no runs of it.
//!
//! Identities: with only dirty pages (every access a write, write-back) the
//! cold clean list stays empty and CCF-LRU is LRU-WSR exactly; with only clean
//! pages it is the two-list rule "evict the cold clean LRU page, else demote the
//! whole mixed list and evict its oldest page" (tested against a plain model).

use crate::list::{Arena, List};
use crate::policy::mode::with_mode;
use crate::policy::{Access, BuildCtx, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};

#[derive(Clone, Copy, Debug, Default)]
pub struct Page {
    dirty: bool,
    cold: bool,
    /// In the cold clean list (else in the mixed list).
    ccl: bool,
}

pub struct CcfLru {
    arena: Arena<Page>,
    /// Cold clean list, front = MRU.
    ccl: List,
    /// Mixed list, front = MRU.
    mixed: List,
    capacity: usize,
}

impl CcfLru {
    pub fn new(capacity: usize) -> Self {
        CcfLru {
            arena: Arena::with_capacity(capacity),
            ccl: List::new(),
            mixed: List::new(),
            capacity: capacity.max(1),
        }
    }

    fn unlink(&mut self, idx: u32) {
        if self.arena.val(idx).ccl {
            self.ccl.unlink(&mut self.arena, idx);
        } else {
            self.mixed.unlink(&mut self.arena, idx);
        }
    }

    /// The page to evict, unlinked.
    fn victim(&mut self) -> Option<u32> {
        if let Some(idx) = self.ccl.pop_back(&mut self.arena) {
            return Some(idx);
        }
        // Ends: a dirty page is passed over at most once before it is cold, a
        // clean page leaves the mixed list.
        while let Some(idx) = self.mixed.back() {
            let p = self.arena.val_mut(idx);
            match (p.dirty, p.cold) {
                (true, true) => {
                    self.mixed.unlink(&mut self.arena, idx);
                    return Some(idx);
                }
                (true, false) => {
                    p.cold = true;
                    self.mixed.move_to_front(&mut self.arena, idx);
                }
                (false, _) => {
                    p.cold = true;
                    p.ccl = true;
                    self.mixed.unlink(&mut self.arena, idx);
                    self.ccl.push_front(&mut self.arena, idx);
                }
            }
        }
        self.ccl.pop_back(&mut self.arena)
    }

    #[cfg(test)]
    fn lists(&self) -> (Vec<u64>, Vec<u64>) {
        (self.ccl.keys(&self.arena), self.mixed.keys(&self.arena))
    }
}

impl Replacement for CcfLru {
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        self.unlink(idx);
        *self.arena.val_mut(idx) = Page { dirty, cold: false, ccl: false };
        self.mixed.push_front(&mut self.arena, idx);
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.arena.len() >= self.capacity {
            if let Some(v) = self.victim() {
                evicted.push(self.arena.remove(v));
            }
        }
        if dirty {
            let idx = self.arena.insert(a.key, Page { dirty, cold: false, ccl: false });
            self.mixed.push_front(&mut self.arena, idx);
        } else {
            let idx = self.arena.insert(a.key, Page { dirty, cold: true, ccl: true });
            self.ccl.push_front(&mut self.arena, idx);
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.unlink(idx);
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }

    fn cleaned(&mut self, key: u64) {
        if let Some(idx) = self.arena.find(key) {
            self.arena.val_mut(idx).dirty = false;
        }
    }

    fn len(&self) -> usize {
        self.arena.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn build(_spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    Ok(with_mode(CcfLru::new(ctx.capacity), ctx))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "ccf-lru",
    about: "CCF-LRU: cold clean pages first, then cold dirty; hot pages get a second chance (Li et al. 2009)",
    params: &[],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::flash::lru_wsr::LruWsr;
    use crate::policy::flash::testing::{churn_resident, skewed_keys, WriteBack};
    use crate::policy::testing::run_keys;

    #[test]
    fn cold_clean_first_then_cold_dirty() {
        // Capacity 4. Lists MRU→LRU: CCL (cold clean) | mixed.
        let mut c = WriteBack::new(CcfLru::new(4));
        // R1 R2 W3 R1: CCL [2] | mixed [1c hot, 3d hot]
        let ev = c.run(&[(1, false), (2, false), (3, true), (1, false)]);
        assert!(ev.iter().all(|e| e.is_empty()));
        assert_eq!(c.rule.lists(), (vec![2], vec![1, 3]));
        // R4: CCL [4 2] | [1 3]. W5: full, CCL's LRU page 2 goes.
        assert_eq!(c.run(&[(4, false), (5, true)]), vec![vec![], vec![2]]);
        assert_eq!(c.rule.lists(), (vec![4], vec![5, 1, 3]));
        // W6: CCL's 4 goes.
        assert_eq!(c.run(&[(6, true)]), vec![vec![4]]);
        assert_eq!(c.rule.lists(), (vec![], vec![6, 5, 1, 3]));
        // R7: CCL empty, scan mixed from LRU: 3 hot dirty → cold, MRU [3 6 5 1];
        // 1 hot clean → cold, to CCL [1]; 5 hot dirty → cold, MRU [5 3 6];
        // 6 hot dirty → cold, MRU [6 5 3]; 3 cold dirty → evicted. 7 enters CCL.
        assert_eq!(c.run(&[(7, false)]), vec![vec![3]]);
        assert_eq!(c.rule.lists(), (vec![7, 1], vec![6, 5]));
        // The demoted hot clean page 1 goes next (CCL's LRU), before the cold dirty 5.
        assert_eq!(c.run(&[(8, false)]), vec![vec![1]]);
        // A hit on 5 makes it hot again; W9 evicts CCL's LRU 7.
        assert_eq!(c.run(&[(5, false), (9, true)]), vec![vec![], vec![7]]);
        assert_eq!(c.rule.lists(), (vec![8], vec![9, 5, 6]));
    }

    #[test]
    fn dirty_pages_only_is_lru_wsr() {
        let steps: Vec<(u64, bool)> = skewed_keys(5000, 0x1234_5678, 45, 71).into_iter().map(|k| (k, true)).collect();
        for cap in [1, 2, 6, 17, 33] {
            let (mut c, mut w) = (WriteBack::new(CcfLru::new(cap)), WriteBack::new(LruWsr::new(cap)));
            assert_eq!(c.run(&steps), w.run(&steps), "capacity {cap}");
        }
    }

    /// CCF-LRU on clean pages, as plain vectors (front = LRU).
    fn reference_clean(capacity: usize, keys: &[u64]) -> Vec<bool> {
        let (mut ccl, mut mixed): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        keys.iter()
            .map(|&k| {
                if let Some(p) = ccl.iter().position(|&x| x == k) {
                    ccl.remove(p);
                    mixed.push(k);
                    return true;
                }
                if let Some(p) = mixed.iter().position(|&x| x == k) {
                    mixed.remove(p);
                    mixed.push(k);
                    return true;
                }
                if ccl.len() + mixed.len() == capacity {
                    if ccl.is_empty() {
                        // every mixed page is hot clean: all demoted, oldest first
                        ccl.append(&mut mixed);
                    }
                    ccl.remove(0);
                }
                ccl.push(k);
                false
            })
            .collect()
    }

    #[test]
    fn clean_pages_only_matches_a_plain_model() {
        let keys = skewed_keys(4000, 99, 40, 67);
        for cap in [1, 2, 5, 12, 30] {
            assert_eq!(run_keys(&mut CcfLru::new(cap), &keys), reference_clean(cap, &keys), "capacity {cap}");
        }
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        churn_resident(|| CcfLru::new(7), 7, |c| assert_eq!(c.ccl.len() + c.mixed.len(), c.len()));
    }
}
