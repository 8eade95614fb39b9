//! SIEVE: one FIFO queue, a visited bit per page and a hand that sweeps from
//! the oldest page towards the newest (Zhang et al., NSDI'24).
//!
//! - a hit sets the page's visited bit; nothing moves;
//! - a miss inserts the page at the head (newest end), unvisited;
//! - to make room, the hand (starting at the tail the first time, and after
//!   passing the head) clears visited bits as it moves towards the head and
//!   evicts the first unvisited page; it then rests on that page's newer
//!   neighbour.
//!
//! This is the paper's algorithm and libCacheSim's `Sieve` (`Sieve.c`) alike;
//! miss counts agree exactly. Removing the page under the hand moves the hand
//! to the page's newer neighbour, as libCacheSim does.
//!
//! Memory per resident page: a 16-byte arena node, one byte of visited bit in
//! a side array, and the arena's hash index.

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

pub struct Sieve {
    arena: Arena<()>,
    /// Visited bit of the page in arena node `i`.
    visited: Vec<bool>,
    /// Front = newest (head), back = oldest (tail).
    queue: List,
    /// The next page the hand looks at; `None`: start at the tail.
    hand: Option<u32>,
    capacity: usize,
}

impl Sieve {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Sieve {
            arena: Arena::with_capacity(capacity),
            visited: upfront(capacity),
            queue: List::new(),
            hand: None,
            capacity,
        }
    }

    /// Moves the hand to the page to evict and takes it off the queue (its
    /// node still holds it).
    fn take_victim(&mut self) -> Option<u32> {
        let mut idx = self.hand.or(self.queue.back())?;
        while self.visited[idx as usize] {
            self.visited[idx as usize] = false;
            idx = self.queue.prev_of(&self.arena, idx).or(self.queue.back()).expect("queue is not empty");
        }
        self.hand = self.queue.prev_of(&self.arena, idx);
        self.queue.unlink(&mut self.arena, idx);
        Some(idx)
    }

    fn evict(&mut self, evicted: &mut Vec<u64>) {
        if let Some(idx) = self.take_victim() {
            evicted.push(self.arena.remove(idx));
        }
    }

    /// Keys front (newest) to back, with their visited bits (for tests).
    pub fn pages(&self) -> Vec<(u64, bool)> {
        self.queue.nodes(&self.arena).map(|i| (self.arena.key(i), self.visited[i as usize])).collect()
    }
}

impl Replacement for Sieve {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => {
                self.visited[idx as usize] = true;
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        // (a full cache evicts one page, whose node becomes the new page's)
        let victim = if self.queue.len() >= self.capacity { self.take_victim() } else { None };
        let idx = match victim {
            Some(v) => {
                evicted.push(self.arena.rekey(v, a.key, ()));
                v
            }
            None => {
                let idx = self.arena.insert(a.key, ());
                cover(&mut self.visited, idx as usize, self.arena.limit(), false);
                idx
            }
        };
        self.visited[idx as usize] = false;
        self.queue.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        if self.hand == Some(idx) {
            self.hand = self.queue.prev_of(&self.arena, idx);
        }
        self.queue.unlink(&mut self.arena, idx);
        self.arena.remove(idx);
        true
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
    /// Shrinking evicts with the hand, as misses would.
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        self.capacity = capacity;
        while self.queue.len() > capacity {
            self.evict(evicted);
        }
        true
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Sieve, SpecError> {
    Ok(Sieve::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "sieve",
    about: "SIEVE: FIFO queue with visited bits and a sweeping hand (Zhang et al.; libCacheSim Sieve)",
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
        let mut s = Sieve::new(3);
        // 1 2 3 fill; 1 hit (visited). 4: hand at the tail (1, visited) clears it and
        // moves to 2, unvisited: 2 leaves; hand rests on 3.
        assert_eq!(run_keys(&mut s, &[1, 2, 3, 1, 4]), vec![false, false, false, true, false]);
        assert_eq!(s.pages(), vec![(4, false), (3, false), (1, false)]);
        // 3 hit; 5: hand at 3 (visited) clears it, moves to 4 (unvisited): 4 leaves,
        // hand passes the head -> None.
        assert_eq!(run_keys(&mut s, &[3, 5]), vec![true, false]);
        assert_eq!(s.pages(), vec![(5, false), (3, false), (1, false)]);
        assert_eq!(s.hand, None);
        // 6: from the tail: 1 unvisited leaves.
        assert_eq!(run_keys(&mut s, &[6, 1]), vec![false, false]);
        assert_eq!(s.pages().iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 6, 5]);
    }

    #[test]
    fn removing_the_page_under_the_hand_moves_the_hand() {
        let mut s = Sieve::new(3);
        run_keys(&mut s, &[1, 2, 3, 1, 4]); // hand on 3
        let mut ev = Vec::new();
        assert!(s.remove(3, &mut ev));
        assert_eq!(s.hand, s.arena.find(4));
        assert!(!s.remove(3, &mut ev));
        assert!(ev.is_empty());
        assert_eq!(run_keys(&mut s, &[5, 6]), vec![false, false]);
        // 5 fits; 6: hand at 4 (unvisited) evicts it.
        assert_eq!(s.pages().iter().map(|p| p.0).collect::<Vec<_>>(), vec![6, 5, 1]);
    }
}
