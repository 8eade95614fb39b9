//! LFUDA: LFU with dynamic aging (Arlitt, Cherkasova, Dilley, Friedrich & Jin,
//! "Evaluating content management techniques for Web proxy caches", 2000;
//! as in Squid's heap LFUDA). Each page has a key `K = F + L`: `F` its
//! reference count while resident, `L` the cache age — the key of the last
//! page evicted. A hit adds one to `F` and recomputes `K` with the current
//! `L`; a new page gets `F = 1`; the page with the smallest `K` leaves, the
//! least recently (re)keyed first among equals, and sets `L` to its key. Pages
//! that were popular long ago age out as `L` grows past their keys.
//!
//! libCacheSim's `LFUDA` (`LFUDA.c`, PyPI libcachesim 0.3.5) crashes
//! (segmentation fault) on every trace we tried, and its source adds `L`
//! rather than one on a hit (and nothing before the first eviction), so there
//! is no `variant=libcachesim`: the agreement suite checks this rule against an
//! independent brute-force reference instead.
//!
//! Memory per resident page: a 16-byte arena node, 12 bytes of count and key
//! in a side array, its key's bucket in a B-tree (one list head per distinct
//! key), and the arena's hash index.

use std::collections::BTreeMap;

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    /// References while resident (saturating).
    count: u32,
    /// `count + L` when last keyed.
    key: u64,
}

pub struct Lfuda {
    arena: Arena<()>,
    meta: Vec<Meta>,
    /// Pages by key; each bucket's front = most recently keyed.
    buckets: BTreeMap<u64, List>,
    /// The cache age `L`.
    age: u64,
    resident: usize,
    capacity: usize,
}

impl Lfuda {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Lfuda {
            arena: Arena::with_capacity(capacity),
            meta: upfront(capacity),
            buckets: BTreeMap::new(),
            age: 0,
            resident: 0,
            capacity,
        }
    }

    fn file(&mut self, idx: u32, count: u32) {
        let key = count as u64 + self.age;
        self.meta[idx as usize] = Meta { count, key };
        self.buckets.entry(key).or_default().push_front(&mut self.arena, idx);
    }

    fn unfile(&mut self, idx: u32) {
        let key = self.meta[idx as usize].key;
        let bucket = self.buckets.get_mut(&key).expect("page's bucket exists");
        bucket.unlink(&mut self.arena, idx);
        if bucket.is_empty() {
            self.buckets.remove(&key);
        }
    }

    fn evict(&mut self, evicted: &mut Vec<u64>) {
        let Some(mut entry) = self.buckets.first_entry() else { return };
        let key = *entry.key();
        let idx = entry.get_mut().pop_back(&mut self.arena).expect("buckets are never empty");
        if entry.get().is_empty() {
            entry.remove();
        }
        self.age = key;
        self.resident -= 1;
        evicted.push(self.arena.remove(idx));
    }

    /// (page, K) from the next victim on (for tests).
    pub fn order(&self) -> Vec<(u64, u64)> {
        self.buckets.iter().flat_map(|(&k, b)| b.keys(&self.arena).into_iter().rev().map(move |p| (p, k))).collect()
    }
}

impl Replacement for Lfuda {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        self.unfile(idx);
        let count = self.meta[idx as usize].count.saturating_add(1);
        self.file(idx, count);
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        while self.resident >= self.capacity {
            self.evict(evicted);
        }
        let idx = self.arena.insert(a.key, ());
        cover(&mut self.meta, idx as usize, self.arena.limit(), Meta::default());
        self.file(idx, 1);
        self.resident += 1;
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.unfile(idx);
        self.arena.remove(idx);
        self.resident -= 1;
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.resident
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    /// Shrinking evicts by key, as misses would (raising the age).
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        self.capacity = capacity;
        while self.resident > capacity {
            self.evict(evicted);
        }
        true
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Lfuda, SpecError> {
    Ok(Lfuda::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lfuda",
    about: "LFU with dynamic aging: evict the smallest count + age (Arlitt et al.)",
    params: &[],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::run_keys;

    #[test]
    fn by_hand() {
        let mut l = Lfuda::new(2);
        // 1 twice (K 2), 2 once (K 1). 3 evicts 2, L = 1; 3 gets K 2, keyed after 1.
        assert_eq!(run_keys(&mut l, &[1, 1, 2, 3]), vec![false, true, false, false]);
        assert_eq!(l.order(), vec![(1, 2), (3, 2)]);
        // 4: 1 and 3 tie at 2; 1 was keyed first and leaves; L = 2, 4 gets K 3.
        assert_eq!(run_keys(&mut l, &[4]), vec![false]);
        assert_eq!(l.order(), vec![(3, 2), (4, 3)]);
        // 3 hit: K = 2 + 2 = 4. 5: 4 (K 3) leaves, L = 3, 5 gets K 4, after 3.
        assert_eq!(run_keys(&mut l, &[3, 5]), vec![true, false]);
        assert_eq!(l.order(), vec![(3, 4), (5, 4)]);
    }

    #[test]
    fn old_popularity_ages_out() {
        // 1 is hit 5 times, then never again; a stream of pairs (each key twice)
        // raises the age until 1's key is the smallest and 1 leaves (plain LFU
        // would keep it for ever).
        let mut l = Lfuda::new(3);
        run_keys(&mut l, &[1; 6]);
        let pairs: Vec<u64> = (10..40).flat_map(|k| [k, k]).collect();
        run_keys(&mut l, &pairs);
        assert!(!l.contains(1));
    }
}
