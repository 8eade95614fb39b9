//! CAR: Clock with Adaptive Replacement (Bansal & Modha, FAST'04) — ARC's
//! adaptation with CLOCKs instead of LRU lists, so a hit only sets a bit.
//!
//! Two clocks hold the resident pages: `T1` (seen once recently) and `T2`
//! (seen at least twice); two LRU ghost lists `B1`, `B2` hold keys recently
//! evicted from each; `p` is the adaptive target size of `T1`. Exactly as the
//! paper's Figure 2:
//! - a hit sets the page's reference bit;
//! - a miss with the cache full runs `replace`: while no victim is found, if
//!   `|T1| ≥ max(1, p)`, look at `T1`'s head: reference bit 0 → it leaves for
//!   `B1`'s MRU end; 1 → clear it and move the page to `T2`'s tail; otherwise
//!   the same on `T2`'s head (leaving for `B2`, or back to `T2`'s tail). Then,
//!   for a key in neither ghost list, the directory is trimmed: `B1`'s LRU key
//!   goes if `|T1| + |B1| = c`, else `B2`'s if all four lists hold `2c`;
//! - a key in neither ghost list enters `T1`'s tail; a key in `B1` raises `p`
//!   by `max(1, |B2|/|B1|)` (at most `c`) and enters `T2`'s tail; a key in `B2`
//!   lowers it by `max(1, |B1|/|B2|)` (at least 0) and enters `T2`'s tail; all
//!   with the reference bit 0. `p` is real-valued, as in the paper.
//!
//! libCacheSim's Python package has no `CAR` class; its source (`CAR.c`,
//! reachable through the raw `CAR_init` binding) inverts the condition for
//! trimming the directory (it trims only on ghost hits) and adapts with
//! integer division, so its miss counts differ from the paper's; no
//! `variant=libcachesim` is offered. The agreement suite checks this rule
//! against an independent transcription of Figure 2 instead.
//!
//! Memory per tracked key (resident or ghost): a 16-byte arena node, one byte
//! of list tag and reference bit in a side array, and the arena's hash index.

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, PolicyInfo, Replacement, Spec, SpecError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    T1,
    T2,
    B1,
    B2,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    at: Where,
    referenced: bool,
}

pub struct Car {
    arena: Arena<()>,
    meta: Vec<Meta>,
    /// Clocks: back = head (oldest, next looked at), front = tail (newest).
    t1: List,
    t2: List,
    /// Ghost LRU lists: front = MRU.
    b1: List,
    b2: List,
    /// Target size of `T1`, in pages.
    p: f64,
    capacity: usize,
}

impl Car {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Car {
            arena: Arena::with_capacity(2 * capacity),
            meta: upfront(2 * capacity),
            t1: List::new(),
            t2: List::new(),
            b1: List::new(),
            b2: List::new(),
            p: 0.0,
            capacity,
        }
    }

    fn set(&mut self, idx: u32, at: Where) {
        self.meta[idx as usize] = Meta { at, referenced: false };
    }

    /// The paper's `replace()`: demotes one resident page to a ghost list.
    fn replace(&mut self, evicted: &mut Vec<u64>) {
        loop {
            if self.t1.len() as f64 >= self.p.max(1.0) {
                let idx = self.t1.pop_back(&mut self.arena).expect("T1 holds at least max(1, p) pages");
                if self.meta[idx as usize].referenced {
                    self.set(idx, Where::T2);
                    self.t2.push_front(&mut self.arena, idx);
                } else {
                    self.set(idx, Where::B1);
                    self.b1.push_front(&mut self.arena, idx);
                    evicted.push(self.arena.key(idx));
                    return;
                }
            } else {
                let idx = self.t2.pop_back(&mut self.arena).expect("T2 is not empty when T1 is under p");
                if self.meta[idx as usize].referenced {
                    self.set(idx, Where::T2);
                    self.t2.push_front(&mut self.arena, idx);
                } else {
                    self.set(idx, Where::B2);
                    self.b2.push_front(&mut self.arena, idx);
                    evicted.push(self.arena.key(idx));
                    return;
                }
            }
        }
    }

    fn discard(list: &mut List, arena: &mut Arena<()>) {
        if let Some(idx) = list.pop_back(arena) {
            arena.remove(idx);
        }
    }

    /// (T1, T2, B1, B2) keys, and p (for tests): clocks head first, ghosts MRU first.
    pub fn lists(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>, f64) {
        let rev = |l: &List| l.keys(&self.arena).into_iter().rev().collect::<Vec<_>>();
        (rev(&self.t1), rev(&self.t2), self.b1.keys(&self.arena), self.b2.keys(&self.arena), self.p)
    }
}

impl Replacement for Car {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        let m = &mut self.meta[idx as usize];
        if matches!(m.at, Where::B1 | Where::B2) {
            return false;
        }
        m.referenced = true;
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let c = self.capacity;
        let ghost = self.arena.find(a.key).map(|idx| (idx, self.meta[idx as usize].at));
        debug_assert!(ghost.is_none_or(|(_, at)| matches!(at, Where::B1 | Where::B2)), "insert of a resident key");
        if self.t1.len() + self.t2.len() >= c {
            self.replace(evicted);
            if ghost.is_none() {
                if self.t1.len() + self.b1.len() >= c {
                    Self::discard(&mut self.b1, &mut self.arena);
                } else if self.t1.len() + self.t2.len() + self.b1.len() + self.b2.len() >= 2 * c {
                    Self::discard(&mut self.b2, &mut self.arena);
                }
            }
        }
        let c = c as f64;
        let idx = match ghost {
            None => {
                let idx = self.arena.insert(a.key, ());
                cover(&mut self.meta, idx as usize, self.arena.limit(), Meta { at: Where::T1, referenced: false });
                self.set(idx, Where::T1);
                self.t1.push_front(&mut self.arena, idx);
                return true;
            }
            Some((idx, Where::B1)) => {
                let delta = (self.b2.len() as f64 / self.b1.len() as f64).max(1.0);
                self.p = (self.p + delta).min(c);
                self.b1.unlink(&mut self.arena, idx);
                idx
            }
            Some((idx, _)) => {
                let delta = (self.b1.len() as f64 / self.b2.len() as f64).max(1.0);
                self.p = (self.p - delta).max(0.0);
                self.b2.unlink(&mut self.arena, idx);
                idx
            }
        };
        self.set(idx, Where::T2);
        self.t2.push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        let at = self.meta[idx as usize].at;
        match at {
            Where::T1 => self.t1.unlink(&mut self.arena, idx),
            Where::T2 => self.t2.unlink(&mut self.arena, idx),
            // A trimmed key's history stays: it was not evicted by the rule.
            Where::B1 | Where::B2 => return false,
        }
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| matches!(self.meta[idx as usize].at, Where::T1 | Where::T2))
    }
    fn len(&self) -> usize {
        self.t1.len() + self.t2.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.b1.len() + self.b2.len()
    }
}

fn make(_spec: &Spec, ctx: &BuildCtx) -> Result<Car, SpecError> {
    Ok(Car::new(ctx.capacity))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "car",
    about: "CAR: clock with adaptive replacement, ARC's adaptation over two CLOCKs (Bansal & Modha)",
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
        let mut c = Car::new(2);
        // 1 2 fill T1; 1 hit sets its bit. 3: |T1| = 2 >= max(1, 0): head 1 is
        // referenced -> T2's tail, bit cleared; head 2 is not -> B1. |T1|+|B1| = 1 < c
        // and all lists hold 2 < 2c: no trim. 3 enters T1.
        assert_eq!(run_keys(&mut c, &[1, 2, 1, 3]), vec![false, false, true, false]);
        assert_eq!(c.lists(), (vec![3], vec![1], vec![2], vec![], 0.0));
        // 4: |T1| = 1 >= 1: 3 unreferenced -> B1; now |T1|+|B1| = 2 = c: B1's LRU (2)
        // is discarded. 4 -> T1.
        assert_eq!(run_keys(&mut c, &[4]), vec![false]);
        assert_eq!(c.lists(), (vec![4], vec![1], vec![3], vec![], 0.0));
        // 3 again, from B1: replace takes 4 (-> B1); p = 0 + max(1, 0/2) = 1; 3 -> T2.
        assert_eq!(run_keys(&mut c, &[3]), vec![false]);
        assert_eq!(c.lists(), (vec![], vec![1, 3], vec![4], vec![], 1.0));
        // 5: |T1| = 0 < max(1, p): T2's head 1 (bit 0) -> B2. |T1|+|B1| = 1 < c and
        // all lists hold 3 < 2c: no trim. 5 -> T1.
        assert_eq!(run_keys(&mut c, &[5]), vec![false]);
        assert_eq!(c.lists(), (vec![5], vec![3], vec![4], vec![1], 1.0));
        // 1 from B2: replace takes 5 (|T1| = 1 >= p) to B1; then p = max(1 - max(1, 2/1), 0) = 0.
        assert_eq!(run_keys(&mut c, &[1]), vec![false]);
        assert_eq!(c.lists(), (vec![], vec![3, 1], vec![5, 4], vec![], 0.0));
    }
}
