//! LRU: evict the least recently used page.

use crate::list::{Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

pub struct Lru {
    arena: Arena<()>,
    list: List,
    capacity: usize,
}

impl Lru {
    pub fn new(capacity: usize) -> Self {
        Lru { arena: Arena::with_capacity(capacity), list: List::new(), capacity: capacity.max(1) }
    }
}

impl Replacement for Lru {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => {
                self.list.move_to_front(&mut self.arena, idx);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.list.len() >= self.capacity {
            if let Some(victim) = self.list.pop_back(&mut self.arena) {
                // (the victim's node becomes the new page's)
                evicted.push(self.arena.rekey(victim, a.key, ()));
                self.list.push_front(&mut self.arena, victim);
                return true;
            }
        }
        let idx = self.arena.insert(a.key, ());
        self.list.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.list.remove_key(&mut self.arena, key)
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.list.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn victim(&self) -> Option<u64> {
        let back = self.list.back().filter(|_| self.list.len() >= self.capacity)?;
        Some(self.arena.key(back))
    }
    /// Shrinking drops pages from the LRU end.
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        self.capacity = capacity;
        while self.list.len() > capacity {
            let victim = self.list.pop_back(&mut self.arena).expect("longer than the capacity");
            evicted.push(self.arena.remove(victim));
        }
        true
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Lru, SpecError> {
    Ok(Lru::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo =
    PolicyInfo { name: "lru", about: "least recently used", params: &[], build, rule: Some(rule) };

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::testing::{keys_of, run_keys};

    #[test]
    fn evicts_least_recent() {
        let mut lru = Lru::new(3);
        // 1 2 3 1 4 -> evicts 2; then 2 misses and evicts 3
        let hits = run_keys(&mut lru, &[1, 2, 3, 1, 4, 2, 1]);
        assert_eq!(hits, vec![false, false, false, true, false, false, true]);
        assert_eq!(keys_of(&lru.list, &lru.arena), vec![1, 2, 4]);
    }

    #[test]
    fn shrinking_drops_the_least_recent_and_growing_keeps_all() {
        let mut lru = Lru::new(4);
        run_keys(&mut lru, &[1, 2, 3, 4, 1]);
        let mut ev = Vec::new();
        assert!(lru.set_capacity(2, &mut ev));
        assert_eq!(ev, vec![2, 3]);
        assert_eq!((keys_of(&lru.list, &lru.arena), lru.capacity()), (vec![1, 4], 2));
        ev.clear();
        assert!(lru.set_capacity(3, &mut ev));
        assert!(ev.is_empty());
        // room for one more before the next eviction
        assert_eq!(run_keys(&mut lru, &[5, 6]), vec![false, false]);
        assert_eq!(keys_of(&lru.list, &lru.arena), vec![6, 5, 1]);
    }
}
