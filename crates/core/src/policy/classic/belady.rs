//! Belady's MIN (Belady, IBM Systems Journal 1966): the offline optimum for
//! demand paging. On a miss with the cache full, the resident page whose next
//! use lies farthest in the future leaves; pages never used again go first.
//!
//! Needs the future: the simulator fills [`Access::next_use`] for this policy.
//! Each resident page sits in a binary max-heap keyed by its next use, so an
//! access costs `O(log n)`.
//!
//! Like libCacheSim's `Belady` (`Belady.c`) and like demand paging in Belady's
//! paper, every missed page is admitted, even one that is never used again or
//! whose next use is farther than every resident page's: the victim is chosen
//! among the pages already resident. (An optimum that may bypass the cache would
//! sometimes miss less.) Miss counts equal libCacheSim's `Belady` on the same
//! keys. Which of several never-used-again pages leaves differs from
//! libCacheSim's heap order, but cannot change any hit or miss.

use crate::list::{reserve_for, upfront, UPFRONT};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError, NEVER};
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// A resident page: its key and the position of its next use.
#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u64,
    next: u64,
}

pub struct Belady {
    slots: Vec<Slot>,
    /// Heap position of each slot.
    pos: Vec<u32>,
    /// Max-heap of slot numbers by `next`.
    heap: Vec<u32>,
    /// Key → slot.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// Slots freed by `remove`.
    free: Vec<u32>,
    capacity: usize,
}

impl Belady {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Belady {
            // (room for the pages as they come: see `list::upfront`)
            slots: upfront(capacity),
            pos: upfront(capacity),
            heap: upfront(capacity),
            index: HashTable::with_capacity(capacity.min(UPFRONT)),
            hasher: DefaultHashBuilder::default(),
            free: Vec::new(),
            capacity,
        }
    }

    #[inline]
    fn find(&self, key: u64) -> Option<u32> {
        let slots = &self.slots;
        self.index.find(self.hasher.hash_one(key), |&s| slots[s as usize].key == key).copied()
    }

    #[inline]
    fn index_insert(&mut self, slot: u32) {
        let slots = &self.slots;
        let hasher = &self.hasher;
        let hash = hasher.hash_one(slots[slot as usize].key);
        self.index.insert_unique(hash, slot, |&s| hasher.hash_one(slots[s as usize].key));
    }

    #[inline]
    fn index_remove(&mut self, slot: u32) {
        let hash = self.hasher.hash_one(self.slots[slot as usize].key);
        if let Ok(entry) = self.index.find_entry(hash, |&s| s == slot) {
            entry.remove();
        }
    }

    #[inline]
    fn next_at(&self, i: usize) -> u64 {
        self.slots[self.heap[i] as usize].next
    }

    #[inline]
    fn place(&mut self, i: usize, slot: u32) {
        self.heap[i] = slot;
        self.pos[slot as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let next = self.slots[slot as usize].next;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.next_at(parent) >= next {
                break;
            }
            let up = self.heap[parent];
            self.place(i, up);
            i = parent;
        }
        self.place(i, slot);
    }

    fn sift_down(&mut self, mut i: usize) {
        let slot = self.heap[i];
        let next = self.slots[slot as usize].next;
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.next_at(right) > self.next_at(left) { right } else { left };
            if self.next_at(child) <= next {
                break;
            }
            let down = self.heap[child];
            self.place(i, down);
            i = child;
        }
        self.place(i, slot);
    }

    /// Takes slot `slot` out of the heap.
    fn heap_remove(&mut self, slot: u32) {
        let i = self.pos[slot as usize] as usize;
        let last = self.heap.pop().expect("heap holds the slot");
        if last != slot {
            self.place(i, last);
            self.sift_down(i);
            self.sift_up(self.pos[last as usize] as usize);
        }
    }

    /// The resident key with the farthest next use.
    pub fn victim(&self) -> Option<u64> {
        self.heap.first().map(|&s| self.slots[s as usize].key)
    }
}

impl Replacement for Belady {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.find(a.key) {
            Some(slot) => {
                let old = self.slots[slot as usize].next;
                self.slots[slot as usize].next = a.next_use;
                let i = self.pos[slot as usize] as usize;
                // The next use only moves later as the stream advances (unless
                // the caller's positions are not in order).
                if a.next_use >= old {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let entry = Slot { key: a.key, next: a.next_use };
        if self.heap.len() >= self.capacity {
            // The farthest page leaves; the new page takes over its slot and heap place.
            let slot = self.heap[0];
            self.index_remove(slot);
            evicted.push(self.slots[slot as usize].key);
            self.slots[slot as usize] = entry;
            self.index_insert(slot);
            self.sift_down(0);
            return true;
        }
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                let n = self.slots.len() + 1;
                reserve_for(&mut self.slots, n, self.capacity);
                reserve_for(&mut self.pos, n, self.capacity);
                self.slots.push(entry);
                self.pos.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.index_insert(slot);
        let n = self.heap.len() + 1;
        reserve_for(&mut self.heap, n, self.capacity);
        self.heap.push(slot);
        self.pos[slot as usize] = (self.heap.len() - 1) as u32;
        self.sift_up(self.heap.len() - 1);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        match self.find(key) {
            Some(slot) => {
                self.index_remove(slot);
                self.heap_remove(slot);
                self.slots[slot as usize].next = NEVER;
                self.free.push(slot);
                true
            }
            None => false,
        }
    }

    fn contains(&self, key: u64) -> bool {
        self.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.heap.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn needs_future(&self) -> bool {
        true
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Belady, SpecError> {
    Ok(Belady::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "belady",
    about: "Belady's MIN: evicts the page used farthest in the future (offline bound; libCacheSim Belady)",
    params: &[],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::read;

    /// Replays reads of `keys` with their next uses filled in, like the simulator does.
    fn run(b: &mut Belady, keys: &[u64]) -> Vec<bool> {
        let mut next = vec![NEVER; keys.len()];
        for i in 0..keys.len() {
            next[i] = (i + 1..keys.len()).find(|&j| keys[j] == keys[i]).map_or(NEVER, |j| j as u64);
        }
        let mut evicted = Vec::new();
        keys.iter()
            .enumerate()
            .map(|(i, &k)| {
                let a = Access { next_use: next[i], ..read(k, i as u64) };
                let hit = b.touch(&a, false, &mut evicted);
                if !hit {
                    b.insert(&a, false, &mut evicted);
                }
                assert!(b.len() <= b.capacity());
                assert!(b.contains(k));
                hit
            })
            .collect()
    }

    #[test]
    fn evicts_farthest_next_use() {
        let mut b = Belady::new(3);
        // 1 2 3 fill. 4 (at 3) misses: next uses 1@4, 2@5, 3@10 -> 3 leaves. 1 2
        // hit. 5 (at 6) misses: 1@7, 2@8, 4@9 -> 4 leaves. 1 2 hit. 4 misses: 1, 2
        // and 5 are never used again; one of them leaves. 3 misses.
        let keys = [1, 2, 3, 4, 1, 2, 5, 1, 2, 4, 3];
        let hits = run(&mut b, &keys);
        assert_eq!(hits, vec![false, false, false, false, true, true, false, true, true, false, false]);
    }

    #[test]
    fn optimal_on_a_loop() {
        // A loop of 5 pages in a 4-page cache: LRU misses every access; MIN
        // misses 5 times in the first pass, then once in every 4 accesses (each
        // miss evicts the page just before the missed one in the loop).
        let keys: Vec<u64> = (0..10).flat_map(|_| 0..5).collect();
        let mut b = Belady::new(4);
        let misses = run(&mut b, &keys).iter().filter(|&&h| !h).count();
        assert_eq!(misses, 5 + 45 / 4);
    }

    #[test]
    fn remove_and_reuse_slots() {
        let mut b = Belady::new(3);
        run(&mut b, &[1, 2, 3]);
        let mut ev = Vec::new();
        assert!(b.remove(2, &mut ev) && !b.remove(2, &mut ev));
        assert_eq!(b.len(), 2);
        // 7 takes the free slot. Then 1 and 3, never used again, leave before 7
        // (next use 100), which leaves before 9 (next use 60).
        b.insert(&Access { next_use: 100, ..read(7, 3) }, false, &mut ev);
        assert!(ev.is_empty());
        b.insert(&Access { next_use: 50, ..read(8, 4) }, false, &mut ev);
        b.insert(&Access { next_use: 60, ..read(9, 5) }, false, &mut ev);
        ev.sort();
        assert_eq!(ev, vec![1, 3]);
        assert_eq!(b.victim(), Some(7));
        b.insert(&Access { next_use: 70, ..read(10, 6) }, false, &mut ev);
        assert_eq!(ev[2], 7);
        assert_eq!(b.victim(), Some(10));
        // A hit moves a page's next use later.
        assert!(b.touch(&Access { next_use: 200, ..read(8, 50) }, false, &mut ev));
        assert_eq!(b.victim(), Some(8));
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        crate::policy::testing::churn(
            || Belady::new(7),
            40,
            |b, shadow| {
                assert!(b.len() <= 7 && b.len() == shadow.len());
                assert!(shadow.iter().all(|&k| b.contains(k)));
            },
        );
    }

    #[test]
    fn needs_the_future() {
        let ctx = BuildCtx { capacity: 4, mode: crate::policy::Mode::WriteBack, page_bytes: 4096 };
        let (p, _) = crate::policy::registry::build("belady", &ctx).unwrap();
        assert!(p.needs_future());
        assert_eq!(p.stats().capacity, 4);
    }
}
