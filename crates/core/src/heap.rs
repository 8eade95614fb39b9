//! An indexed min-heap of arena indices ([`crate::list::Arena`]) with their
//! priorities: each index's position is kept, so an entry whose priority
//! changed is put right (or removed) in O(log n). For policies that evict by
//! a priority that is not a recency order (LRU-K's K-th reference time).
//!
//! Written here rather than taken from a crate: `std`'s `BinaryHeap` cannot
//! move or remove an entry, and the crates that can (`priority-queue`,
//! `keyed_priority_queue`) hash their keys; here the key is the arena index
//! the policy already has, so a position is one array lookup.

const ABSENT: u32 = u32::MAX;

/// Entries `(priority, idx)`, least priority first; the priority is kept
/// inline so that comparisons touch only the heap's own array.
pub struct IndexedHeap<P> {
    heap: Vec<(P, u32)>,
    /// `pos[idx]`: where `idx` sits in `heap`, [`ABSENT`] if not there.
    pos: Vec<u32>,
    /// Pushes, removals and updates so far: tests bound a policy's work by it.
    #[cfg(test)]
    pub ops: u64,
}

impl<P: Ord + Copy> Default for IndexedHeap<P> {
    fn default() -> Self {
        IndexedHeap {
            heap: Vec::new(),
            pos: Vec::new(),
            #[cfg(test)]
            ops: 0,
        }
    }
}

impl<P: Ord + Copy> IndexedHeap<P> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn contains(&self, idx: u32) -> bool {
        self.pos.get(idx as usize).is_some_and(|&p| p != ABSENT)
    }

    /// The entry of least priority.
    pub fn peek(&self) -> Option<u32> {
        self.heap.first().map(|&(_, idx)| idx)
    }

    /// Every entry with its priority, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (P, u32)> + '_ {
        self.heap.iter().copied()
    }

    /// Adds `idx` (not in the heap) with `prio`.
    pub fn push(&mut self, idx: u32, prio: P) {
        let i = idx as usize;
        if i >= self.pos.len() {
            self.pos.resize(i + 1, ABSENT);
        }
        debug_assert_eq!(self.pos[i], ABSENT, "pushed twice");
        self.count();
        self.heap.push((prio, idx));
        self.pos[i] = (self.heap.len() - 1) as u32;
        self.up(self.heap.len() - 1);
    }

    /// Removes and returns the entry of least priority.
    pub fn pop(&mut self) -> Option<u32> {
        let top = self.peek()?;
        self.remove(top);
        Some(top)
    }

    /// Removes `idx`; false if it was not there.
    pub fn remove(&mut self, idx: u32) -> bool {
        if !self.contains(idx) {
            return false;
        }
        self.count();
        let at = self.pos[idx as usize] as usize;
        let last = self.heap.len() - 1;
        self.swap(at, last);
        self.heap.pop();
        self.pos[idx as usize] = ABSENT;
        if at < self.heap.len() {
            self.fix(at);
        }
        true
    }

    /// Gives `idx` (in the heap) a new priority.
    pub fn update(&mut self, idx: u32, prio: P) {
        debug_assert!(self.contains(idx));
        self.count();
        let at = self.pos[idx as usize] as usize;
        self.heap[at].0 = prio;
        self.fix(at);
    }

    #[cfg(test)]
    fn count(&mut self) {
        self.ops += 1;
    }
    #[cfg(not(test))]
    #[inline(always)]
    fn count(&mut self) {}

    fn fix(&mut self, at: usize) {
        if at > 0 && self.heap[at].0 < self.heap[(at - 1) / 2].0 {
            self.up(at);
        } else {
            self.down(at);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a].1 as usize] = a as u32;
        self.pos[self.heap[b].1 as usize] = b as u32;
    }

    fn up(&mut self, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.heap[at].0 >= self.heap[parent].0 {
                break;
            }
            self.swap(at, parent);
            at = parent;
        }
    }

    fn down(&mut self, mut at: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if l < n && self.heap[l].0 < self.heap[least].0 {
                least = l;
            }
            if r < n && self.heap[r].0 < self.heap[least].0 {
                least = r;
            }
            if least == at {
                break;
            }
            self.swap(at, least);
            at = least;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Against a BTreeSet of (priority, idx): pushes, pops, removals and
        /// priority changes in any order (priorities made unique by the idx).
        #[test]
        fn behaves_as_an_ordered_set(ops in prop::collection::vec((0u8..4, 0u32..40, 0u64..30), 1..400)) {
            let mut prio = [0u64; 40];
            let mut h = IndexedHeap::new();
            let mut model = BTreeSet::new();
            for (op, idx, p) in ops {
                match op {
                    0 if !h.contains(idx) => {
                        prio[idx as usize] = p;
                        h.push(idx, (p, idx));
                        model.insert((p, idx));
                    }
                    1 => prop_assert_eq!(h.pop(), model.pop_first().map(|(_, i)| i)),
                    2 => {
                        let was = model.remove(&(prio[idx as usize], idx));
                        prop_assert_eq!(h.remove(idx), was);
                    }
                    3 if h.contains(idx) => {
                        model.remove(&(prio[idx as usize], idx));
                        prio[idx as usize] = p;
                        model.insert((p, idx));
                        h.update(idx, (p, idx));
                    }
                    _ => {}
                }
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.peek(), model.first().map(|&(_, i)| i));
            }
        }
    }
}
