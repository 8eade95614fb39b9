//! LRU stack distances in one pass (Mattson et al., 1970), counted with a
//! Fenwick tree over access times (the method of Almási et al., MSP 2002, and
//! of PyMimircache/libCacheSim's exact LRU profilers): O(log M) per access and
//! memory proportional to the live keys M, not to the trace.
//!
//! The stack distance of an access is its key's depth in the LRU stack: 1 + the
//! number of distinct keys used since the key's previous use. An LRU cache of
//! C pages hits exactly the accesses with distance ≤ C (LRU is a stack
//! algorithm: a cache of C pages holds the top C of the stack).
//!
//! The tree has a mark at the last-use time of every live key, so the keys
//! used since time `t` are the marks after `t`. Times grow with every access;
//! when they reach the tree's end, the live keys' times are renumbered
//! 0..M in order and the tree rebuilt (four times M slots), which keeps memory
//! bounded and costs O(M) once per 3·M accesses.

use hashbrown::HashMap;

/// What the stack knows of a live key.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// When the key was last used (a slot of the tree).
    time: u32,
    /// Write-back state for every cache size at once: the key is dirty in a
    /// cache of C pages iff `dirty_from != 0 && C >= dirty_from` (see
    /// `super::Profiler::access`).
    pub dirty_from: u64,
}

/// The LRU stack of the keys seen so far.
pub struct Stack {
    entries: HashMap<u64, Entry>,
    /// Fenwick tree (1-based inside) over time slots 0..len.
    tree: Vec<u32>,
    /// The next access's time slot.
    now: u32,
}

const MIN_SLOTS: usize = 1024;

impl Default for Stack {
    fn default() -> Self {
        Stack { entries: HashMap::new(), tree: vec![0; MIN_SLOTS + 1], now: 0 }
    }
}

impl Stack {
    /// Number of live keys (the footprint so far, less removed keys).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Uses `key`: returns its stack distance (None on its first use, or first
    /// since a removal) and its entry, now at the top of the stack.
    pub fn access(&mut self, key: u64) -> (Option<u64>, &mut Entry) {
        if self.now as usize + 1 >= self.tree.len() {
            self.compact();
        }
        let now = self.now;
        self.now += 1;
        let live = self.entries.len() as u64;
        let (distance, entry) = match self.entries.entry(key) {
            hashbrown::hash_map::Entry::Occupied(o) => {
                let e = o.into_mut();
                // marks after e.time: every live key's mark is at or before now - 1
                let newer = live - prefix(&self.tree, e.time as usize);
                add(&mut self.tree, e.time as usize, -1);
                e.time = now;
                (Some(newer + 1), e)
            }
            hashbrown::hash_map::Entry::Vacant(v) => (None, v.insert(Entry { time: now, dirty_from: 0 })),
        };
        add(&mut self.tree, now as usize, 1);
        (distance, entry)
    }

    /// Forgets `key` (a trim): its next use is a first use. Returns its entry.
    pub fn remove(&mut self, key: u64) -> Option<Entry> {
        let e = self.entries.remove(&key)?;
        add(&mut self.tree, e.time as usize, -1);
        Some(e)
    }

    /// Forgets every key deeper than `n` (a profile that only asks about
    /// caches of at most `n` pages): their next use is a first use, a miss in
    /// all of them anyway. Returns their entries with their depths.
    pub fn keep_top(&mut self, n: u64) -> Vec<(Entry, u64)> {
        let live = self.entries.len() as u64;
        let deep: Vec<(u64, u64)> = self
            .entries
            .iter()
            .map(|(&k, e)| (k, live - prefix(&self.tree, e.time as usize) + 1))
            .filter(|&(_, depth)| depth > n)
            .collect();
        deep.into_iter().filter_map(|(k, depth)| self.remove(k).map(|e| (e, depth))).collect()
    }

    /// The live keys' entries with their depth in the stack now (1 = the
    /// most recently used): what is dirty at the end, and where.
    pub fn entries(&self) -> impl Iterator<Item = (&Entry, u64)> {
        let live = self.entries.len() as u64;
        self.entries.values().map(move |e| (e, live - prefix(&self.tree, e.time as usize) + 1))
    }

    /// At the end of a warm-up: every dirty key's `dirty_from` moves up to
    /// its depth now, for caches smaller than that depth evicted it (and
    /// wrote it back) during the warm-up; the counting starts from here.
    pub fn settle_dirty(&mut self) {
        let live = self.entries.len() as u64;
        for e in self.entries.values_mut().filter(|e| e.dirty_from != 0) {
            let depth = live - prefix(&self.tree, e.time as usize) + 1;
            e.dirty_from = e.dirty_from.max(depth);
        }
    }

    /// Renumbers the live keys' times 0..M in order and rebuilds the tree
    /// with room for three times as many accesses again. Linear: a key's new
    /// time is the number of live times before its old one.
    fn compact(&mut self) {
        let mut rank = vec![0u32; self.now as usize + 1];
        for e in self.entries.values() {
            rank[e.time as usize + 1] = 1;
        }
        for t in 1..rank.len() {
            rank[t] += rank[t - 1];
        }
        for e in self.entries.values_mut() {
            e.time = rank[e.time as usize];
        }
        let live = self.entries.len();
        let slots = (4 * live).max(MIN_SLOTS);
        assert!(slots < u32::MAX as usize, "more than 2^30 distinct live keys");
        // Build in O(n): ones at 0..live, then push each node's sum to its parent.
        let mut tree = vec![0u32; slots + 1];
        tree.iter_mut().skip(1).take(live).for_each(|node| *node = 1);
        for i in 1..=slots {
            let parent = i + (i & i.wrapping_neg());
            if parent <= slots {
                tree[parent] += tree[i];
            }
        }
        self.tree = tree;
        self.now = live as u32;
    }
}

/// Sum of the marks at slots 0..=slot.
fn prefix(tree: &[u32], slot: usize) -> u64 {
    let mut i = slot + 1;
    let mut sum = 0u64;
    while i > 0 {
        sum += tree[i] as u64;
        i &= i - 1;
    }
    sum
}

fn add(tree: &mut [u32], slot: usize, delta: i32) {
    let mut i = slot + 1;
    while i < tree.len() {
        tree[i] = tree[i].wrapping_add_signed(delta);
        i += i & i.wrapping_neg();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stack distances the slow way: the position in an explicit LRU list.
    fn naive(keys: &[u64]) -> Vec<Option<u64>> {
        let mut stack: Vec<u64> = Vec::new();
        keys.iter()
            .map(|&k| {
                let d = stack.iter().position(|&x| x == k).map(|p| p as u64 + 1);
                if let Some(p) = d {
                    stack.remove(p as usize - 1);
                }
                stack.insert(0, k);
                d
            })
            .collect()
    }

    #[test]
    fn distances_match_an_explicit_stack_across_compactions() {
        // 5,000 accesses over 300 keys: the tree (1,024 slots) compacts several times.
        let mut x = 12345u64;
        let keys: Vec<u64> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % 300
            })
            .collect();
        let mut s = Stack::default();
        let ours: Vec<Option<u64>> = keys.iter().map(|&k| s.access(k).0).collect();
        assert_eq!(ours, naive(&keys));
        assert_eq!(s.len(), 300);
    }

    #[test]
    fn a_removed_key_starts_over_and_no_longer_counts() {
        let mut s = Stack::default();
        for k in [1, 2, 3] {
            s.access(k);
        }
        assert!(s.remove(2).is_some());
        assert_eq!(s.access(1).0, Some(2), "3 is above 1; 2 is gone");
        assert_eq!(s.access(2).0, None);
        assert!(s.remove(9).is_none());
    }
}
