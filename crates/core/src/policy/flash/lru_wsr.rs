//! LRU-WSR: LRU with Writes Sequence Reordering (H. Jung, H. Shim, S. Park,
//! S. Kang, J. Cha, "LRU-WSR: integration of LRU and writes sequence reordering
//! for flash memory", IEEE Trans. Consumer Electronics 54(3), 2008).
//!
//! One LRU list; every page carries a *cold* flag, which only matters for
//! dirty pages. To make room LRU-WSR looks at the LRU page:
//! - a clean page is evicted at once;
//! - a dirty page whose cold flag is set is evicted (written back);
//! - a dirty page whose cold flag is clear gets a second chance: its flag is
//!   set and it moves to the MRU end; the next LRU page is examined.
//!
//! A hit moves the page to the MRU end and clears its flag; a new page enters
//! at the MRU end with the flag clear. So a dirty page is written back only if
//! it went a whole trip through the list without being referenced since it was
//! last passed over. The loop ends within one pass: every dirty page it passes
//! over is marked cold.
//!
//! No parameters. Paper 001 (Lee & Chung 2023) describes LRU-WSR among the FTL
//! cache algorithms (§2.2) but does not report runs of it.
//!
//! With no dirty pages (read-only traces; write-through, write-around and
//! read-only modes) LRU-WSR is LRU exactly. Where the paper is silent: a page
//! cleaned by [`Replacement::cleaned`] keeps its place and flag (as a clean
//! page it is evicted at once when it reaches the LRU end).

use crate::list::{Arena, List};
use crate::policy::mode::ModeCache;
use crate::policy::{Access, BuildCtx, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};

#[derive(Clone, Copy, Debug, Default)]
pub struct Flags {
    dirty: bool,
    cold: bool,
}

pub struct LruWsr {
    arena: Arena<Flags>,
    /// Front = MRU.
    list: List,
    capacity: usize,
}

impl LruWsr {
    pub fn new(capacity: usize) -> Self {
        LruWsr { arena: Arena::with_capacity(capacity), list: List::new(), capacity: capacity.max(1) }
    }

    /// The page to evict, unlinked (second chances given on the way).
    fn victim(&mut self) -> Option<u32> {
        while let Some(idx) = self.list.back() {
            let f = self.arena.val_mut(idx);
            if !f.dirty || f.cold {
                self.list.unlink(&mut self.arena, idx);
                return Some(idx);
            }
            f.cold = true;
            self.list.move_to_front(&mut self.arena, idx);
        }
        None
    }
}

impl Replacement for LruWsr {
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        *self.arena.val_mut(idx) = Flags { dirty, cold: false };
        self.list.move_to_front(&mut self.arena, idx);
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.list.len() >= self.capacity {
            if let Some(v) = self.victim() {
                evicted.push(self.arena.remove(v));
            }
        }
        let idx = self.arena.insert(a.key, Flags { dirty, cold: false });
        self.list.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.list.remove_key(&mut self.arena, key)
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
        self.list.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn build(_spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    Ok(Box::new(ModeCache::new(LruWsr::new(ctx.capacity), ctx.mode)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lru-wsr",
    about: "LRU-WSR: LRU, but a dirty page not marked cold gets a second chance (Jung et al. 2008)",
    params: &[],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::flash::testing::{churn_resident, skewed_keys, WriteBack};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{misses, read, write};
    use crate::policy::Mode;

    fn flags(w: &LruWsr) -> Vec<(u64, bool, bool)> {
        w.list
            .keys(&w.arena)
            .into_iter()
            .map(|k| {
                let f = w.arena.val(w.arena.find(k).unwrap());
                (k, f.dirty, f.cold)
            })
            .collect()
    }

    #[test]
    fn dirty_pages_get_a_second_chance() {
        // Capacity 3. MRU→LRU with (dirty, cold).
        let mut w = WriteBack::new(LruWsr::new(3));
        let ev = w.run(&[(1, true), (2, false), (3, true)]);
        assert!(ev.iter().all(|e| e.is_empty()));
        // 3d 2c 1d. R4: LRU page 1 is dirty and not cold → cold, to MRU: 1d* 3d 2c;
        // LRU page 2 is clean → evicted.
        assert_eq!(w.run(&[(4, false)]), vec![vec![2]]);
        assert_eq!(flags(&w.rule), vec![(4, false, false), (1, true, true), (3, true, false)]);
        // R5: LRU page 3 dirty, not cold → 3d* to MRU; LRU page 1 dirty and cold → evicted.
        assert_eq!(w.run(&[(5, false)]), vec![vec![1]]);
        assert_eq!(flags(&w.rule), vec![(5, false, false), (3, true, true), (4, false, false)]);
        // A hit clears the cold flag: R3 → 3d 5c 4c; then W6 evicts 4 (clean LRU page).
        assert_eq!(w.run(&[(3, false), (6, true)]), vec![vec![], vec![4]]);
        assert_eq!(flags(&w.rule), vec![(6, true, false), (3, true, false), (5, false, false)]);
        // W7: 5 is clean → evicted at once, 3 keeps its chance.
        assert_eq!(w.run(&[(7, true)]), vec![vec![5]]);
        // W8: 3d → cold, MRU; 6d → cold, MRU; 7d → cold, MRU; then 3 (cold) is evicted.
        assert_eq!(w.run(&[(8, true)]), vec![vec![3]]);
        assert_eq!(flags(&w.rule), vec![(8, true, false), (7, true, true), (6, true, true)]);
    }

    #[test]
    fn clean_pages_only_is_lru() {
        let keys = skewed_keys(5000, 0x2545_f491, 50, 83);
        for cap in [1, 2, 7, 19, 40] {
            let ctx = BuildCtx { capacity: cap, mode: Mode::WriteBack, page_bytes: 4096 };
            let lru = misses(&mut *build_spec("lru", &ctx).unwrap().0, &keys);
            assert_eq!(misses(&mut *build_spec("lru-wsr", &ctx).unwrap().0, &keys), lru, "capacity {cap}");
        }
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        churn_resident(|| LruWsr::new(7), 7, |_| {});
    }

    #[test]
    fn drain_cleans_pages() {
        let mut p = ModeCache::new(LruWsr::new(2), Mode::WriteBack);
        let mut fx = crate::policy::Effects::new();
        for (i, k) in [1, 2].into_iter().enumerate() {
            p.access(&write(k, i as u64), &mut fx);
        }
        fx.clear();
        p.drain(&mut fx);
        // Both clean now: the LRU page 1 goes at once, with no second chance.
        fx.clear();
        p.access(&read(3, 2), &mut fx);
        assert_eq!(fx.io[1], crate::policy::Io::Evict { key: 1, dirty: false });
        assert_eq!(flags(p.replacement()), vec![(3, false, false), (2, false, false)]);
    }
}
