//! FIFO: evict the page that entered the cache first; hits change nothing.
//!
//! Matches libCacheSim's `FIFO` (`FIFO.c`): a miss evicts the oldest page
//! (only once the cache is full) and inserts the new page at the head; a hit
//! leaves the order alone.
//!
//! Memory per resident page: one 16-byte arena node plus the hash index.

use crate::list::{Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

pub struct Fifo {
    arena: Arena<()>,
    /// Front = newest, back = oldest (the next victim).
    queue: List,
    capacity: usize,
}

impl Fifo {
    pub fn new(capacity: usize) -> Self {
        Fifo { arena: Arena::with_capacity(capacity), queue: List::new(), capacity: capacity.max(1) }
    }
}

impl Replacement for Fifo {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        self.arena.find(a.key).is_some()
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.queue.len() >= self.capacity {
            if let Some(victim) = self.queue.pop_back(&mut self.arena) {
                // (the victim's node becomes the new page's)
                evicted.push(self.arena.rekey(victim, a.key, ()));
                self.queue.push_front(&mut self.arena, victim);
                return true;
            }
        }
        let idx = self.arena.insert(a.key, ());
        self.queue.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.queue.remove_key(&mut self.arena, key)
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.queue.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Fifo, SpecError> {
    Ok(Fifo::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo =
    PolicyInfo { name: "fifo", about: "first in, first out (libCacheSim FIFO)", params: &[], build, rule: Some(rule) };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{keys_of, run_keys};

    #[test]
    fn evicts_oldest_regardless_of_hits() {
        let mut f = Fifo::new(3);
        // 1 2 3 fill; 1 hits (no reorder); 4 evicts 1 (oldest); 1 misses and evicts 2;
        // 3 hits; 2 misses and evicts 3.
        let hits = run_keys(&mut f, &[1, 2, 3, 1, 4, 1, 3, 2]);
        assert_eq!(hits, vec![false, false, false, true, false, false, true, false]);
        assert_eq!(keys_of(&f.queue, &f.arena), vec![2, 1, 4]);
    }

    #[test]
    fn remove_frees_a_slot() {
        let mut f = Fifo::new(2);
        run_keys(&mut f, &[1, 2]);
        let mut ev = Vec::new();
        assert!(f.remove(1, &mut ev));
        assert!(!f.remove(1, &mut ev));
        assert!(ev.is_empty());
        assert_eq!(run_keys(&mut f, &[3, 2]), vec![false, true]);
        assert_eq!(keys_of(&f.queue, &f.arena), vec![3, 2]);
    }
}
