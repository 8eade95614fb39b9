//! ARC: adaptive replacement cache (Megiddo & Modha, FAST'03).
//!
//! Two LRU lists of resident pages, `T1` (seen once recently) and `T2` (seen at
//! least twice), each backed by a ghost list of keys recently evicted from it,
//! `B1` and `B2`. A target size `p` for `T1` moves towards `T1` on a hit in `B1`
//! and towards `T2` on a hit in `B2`; when a page must leave, `REPLACE` takes
//! `T1`'s LRU page if `T1` is over target, otherwise `T2`'s, and remembers the key
//! in the matching ghost list. Together `T1 ∪ B1` holds at most `c` keys and all
//! four lists at most `2c`.
//!
//! - hit in `T1` or `T2`: the page moves to the MRU end of `T2`;
//! - miss with the key in `B1`: `p += max(|B2|/|B1|, 1)` (at most `c`), `REPLACE`,
//!   the page enters `T2`;
//! - miss with the key in `B2`: `p -= max(|B1|/|B2|, 1)` (at least 0), `REPLACE`
//!   (preferring `T1` when `|T1| = p`), the page enters `T2`;
//! - any other miss: if `|T1| + |B1| = c`, drop `B1`'s LRU key and `REPLACE`, or,
//!   if `B1` is empty, drop `T1`'s LRU page without a ghost; otherwise, when all
//!   four lists hold `2c` keys, drop `B2`'s LRU key, then `REPLACE`. The page
//!   enters `T1`.
//!
//! Pages are only replaced while the cache is full, so after a trim the cache
//! fills its free slots first. `p` and the steps are real numbers, not rounded.
//! Each access is `O(1)`; each tracked key (page or ghost) costs a 16-byte arena
//! node, a list tag byte and a hash slot.
//!
//! ## `variant=paper` (default)
//!
//! `p` in pages and steps of `δ` pages, as in the paper. This is what libCacheSim
//! computes when every object is one byte.
//!
//! ## `variant=libcachesim`: libCacheSim's `ARC` (`ARC.c`)
//!
//! Miss counts equal libCacheSim's `ARC` run on the same keys as 4 KiB objects.
//! libCacheSim keeps `p` and the list sizes in bytes but steps `p` by the ratio
//! of the ghost list sizes, a pure number: with 4096-byte objects one ghost hit
//! moves `p` by `δ/4096` of a page instead of `δ` pages, so its ARC adapts 4096
//! times more slowly than the paper's: `p` stays below one page, and `REPLACE`
//! takes `T1`'s page whenever `T1` is not empty, until hits in `B1` outnumber
//! those in `B2` by thousands. This variant keeps `p` in 1/4096 page units to
//! reproduce it exactly. Otherwise libCacheSim follows the paper, with two harmless
//! rewrites: case IV(A) tests "`B1` is not empty" instead of `|T1| < c` (the
//! same for unit-size pages), and `REPLACE` falls back to `T1` when `T2` is
//! empty. Both variants work at every capacity.

use crate::list::{reserve_for, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages).
const LCS_PAGE: u64 = 4096;

// Which list a node is on.
const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;
/// Off every list: a ghost that was just hit, waiting for `insert` (or to be dropped).
const DETACHED: u8 = 4;

pub struct Arc {
    arena: Arena<()>,
    /// List of each arena node, by node index.
    tag: Vec<u8>,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
    capacity: usize,
    /// `p` counts pages times `unit` (libCacheSim: bytes, `unit` = 4096; paper: pages, 1).
    unit: f64,
    p: f64,
    /// The capacity in `unit`s, the upper bound of `p`.
    cap_units: f64,
    /// A ghost node hit by the last `touch`, off its list; `NIL`-like when `None`.
    pending: Option<(u32, u8)>,
}

impl Arc {
    /// `unit`: `p` counts pages times `unit`; each ghost hit moves it by δ units.
    pub fn new(capacity: usize, unit: u64) -> Self {
        let capacity = capacity.max(1);
        let tracked = 2 * capacity + 2;
        Arc {
            arena: Arena::with_capacity(tracked),
            tag: upfront(tracked),
            t1: List::new(),
            t2: List::new(),
            b1: List::new(),
            b2: List::new(),
            capacity,
            unit: unit as f64,
            p: 0.0,
            cap_units: (capacity as u64 * unit) as f64,
            pending: None,
        }
    }

    /// The target size of `T1`, in pages.
    pub fn target(&self) -> f64 {
        self.p / self.unit
    }

    #[inline]
    fn set_tag(&mut self, idx: u32, tag: u8) {
        let i = idx as usize;
        if i < self.tag.len() {
            self.tag[i] = tag;
        } else {
            debug_assert_eq!(i, self.tag.len());
            reserve_for(&mut self.tag, i + 1, self.arena.limit());
            self.tag.push(tag);
        }
    }

    /// Forgets a ghost hit that was not followed by an insert.
    #[inline]
    fn settle(&mut self) {
        if let Some((idx, _)) = self.pending.take() {
            self.arena.remove(idx);
        }
    }

    /// The paper's REPLACE: the LRU page of `T1` or `T2` becomes a ghost.
    #[inline]
    fn replace(&mut self, hit_in_b2: bool, evicted: &mut Vec<u64>) {
        let t1_units = self.t1.len() as f64 * self.unit;
        let from_t1 =
            (!self.t1.is_empty() && (t1_units > self.p || (t1_units == self.p && hit_in_b2))) || self.t2.is_empty();
        let idx = if from_t1 {
            let idx = self.t1.pop_back(&mut self.arena).expect("T1 is not empty");
            self.b1.push_front(&mut self.arena, idx);
            self.tag[idx as usize] = B1;
            idx
        } else {
            let idx = self.t2.pop_back(&mut self.arena).expect("T2 is not empty");
            self.b2.push_front(&mut self.arena, idx);
            self.tag[idx as usize] = B2;
            idx
        };
        evicted.push(self.arena.key(idx));
    }

    /// Drops the LRU key of a ghost list.
    #[inline]
    fn drop_ghost(&mut self, which: u8) {
        let list = if which == B1 { &mut self.b1 } else { &mut self.b2 };
        if let Some(idx) = list.pop_back(&mut self.arena) {
            self.arena.remove(idx);
        }
    }

    /// Case IV of the paper: makes room for a key found in no list. Returns the
    /// node of the ghost or page it dropped, if any, off every list and still
    /// indexed under its old key: the new key takes it over (`Arena::rekey`), so
    /// a miss frees and allocates no node.
    #[inline]
    fn make_room_for_new(&mut self, evicted: &mut Vec<u64>) -> Option<u32> {
        let c = self.capacity;
        if self.t1.len() + self.b1.len() + 1 > c {
            if let Some(ghost) = self.b1.pop_back(&mut self.arena) {
                self.replace(false, evicted);
                Some(ghost)
            } else {
                let idx = self.t1.pop_back(&mut self.arena).expect("T1 holds the whole cache");
                evicted.push(self.arena.key(idx));
                Some(idx)
            }
        } else {
            let ghost = if self.t1.len() + self.b1.len() + self.t2.len() + self.b2.len() >= 2 * c {
                self.b2.pop_back(&mut self.arena)
            } else {
                None
            };
            self.replace(false, evicted);
            ghost
        }
    }

    #[cfg(test)]
    fn lists(&self) -> [Vec<u64>; 4] {
        [self.t1.keys(&self.arena), self.t2.keys(&self.arena), self.b1.keys(&self.arena), self.b2.keys(&self.arena)]
    }
}

impl Replacement for Arc {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        self.settle();
        let Some(idx) = self.arena.find(a.key) else { return false };
        match self.tag[idx as usize] {
            T1 => {
                self.t1.unlink(&mut self.arena, idx);
                self.t2.push_front(&mut self.arena, idx);
                self.tag[idx as usize] = T2;
                true
            }
            T2 => {
                self.t2.move_to_front(&mut self.arena, idx);
                true
            }
            B1 => {
                let delta = (self.b2.len() as f64 / self.b1.len() as f64).max(1.0);
                self.p = (self.p + delta).min(self.cap_units);
                self.b1.unlink(&mut self.arena, idx);
                self.tag[idx as usize] = DETACHED;
                self.pending = Some((idx, B1));
                false
            }
            _ => {
                debug_assert_eq!(self.tag[idx as usize], B2);
                let delta = (self.b1.len() as f64 / self.b2.len() as f64).max(1.0);
                self.p = (self.p - delta).max(0.0);
                self.b2.unlink(&mut self.arena, idx);
                self.tag[idx as usize] = DETACHED;
                self.pending = Some((idx, B2));
                false
            }
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let ghost = match self.pending.take() {
            Some((idx, list)) if self.arena.key(idx) == a.key => Some((idx, list)),
            Some((idx, _)) => {
                self.arena.remove(idx);
                None
            }
            None => None,
        };
        let mut spare = None;
        if self.t1.len() + self.t2.len() >= self.capacity {
            match ghost {
                Some((_, list)) => self.replace(list == B2, evicted),
                None => spare = self.make_room_for_new(evicted),
            }
        }
        match (ghost, spare) {
            (Some((idx, _)), _) => {
                self.t2.push_front(&mut self.arena, idx);
                self.tag[idx as usize] = T2;
            }
            (None, Some(idx)) => {
                self.arena.rekey(idx, a.key, ());
                self.tag[idx as usize] = T1;
                self.t1.push_front(&mut self.arena, idx);
            }
            (None, None) => {
                let idx = self.arena.insert(a.key, ());
                self.set_tag(idx, T1);
                self.t1.push_front(&mut self.arena, idx);
            }
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.settle();
        let Some(idx) = self.arena.find(key) else { return false };
        let tag = self.tag[idx as usize];
        match tag {
            T1 => self.t1.unlink(&mut self.arena, idx),
            T2 => self.t2.unlink(&mut self.arena, idx),
            B1 => self.b1.unlink(&mut self.arena, idx),
            _ => self.b2.unlink(&mut self.arena, idx),
        }
        // Like libCacheSim, a trimmed key's ghost goes too.
        self.arena.remove(idx);
        tag == T1 || tag == T2
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| self.tag[idx as usize] <= T2)
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
    /// As if ARC had been run at `capacity` all along as far as its bounds go:
    /// `p` is cut to the new `c`, `REPLACE` runs until the pages fit (each
    /// victim becomes a ghost, as any replacement does), then the oldest
    /// ghosts go until `|T1| + |B1| ≤ c` and all four lists hold at most `2c`.
    /// Growing changes nothing but the bounds. A ghost hit waiting for its
    /// `insert` stays pending. At capacity 0 nothing stays, not even ghosts;
    /// the caller must grow it again before the next `insert`.
    fn set_capacity(&mut self, capacity: usize, evicted: &mut Vec<u64>) -> bool {
        self.capacity = capacity;
        self.cap_units = capacity as f64 * self.unit;
        self.p = self.p.min(self.cap_units);
        while self.t1.len() + self.t2.len() > capacity {
            self.replace(false, evicted);
        }
        while self.t1.len() + self.b1.len() > capacity && !self.b1.is_empty() {
            self.drop_ghost(B1);
        }
        while self.t1.len() + self.b1.len() + self.t2.len() + self.b2.len() > 2 * capacity && !self.b2.is_empty() {
            self.drop_ghost(B2);
        }
        true
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<Arc, SpecError> {
    let unit = match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => LCS_PAGE,
        _ => 1,
    };
    Ok(Arc::new(ctx.capacity, unit))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "arc",
    about: "ARC: adaptive split between recency (T1) and frequency (T2), with ghosts (Megiddo & Modha)",
    params: &[ParamInfo {
        name: "variant",
        default: "paper",
        about: "paper (p steps by δ pages) or libcachesim (δ/4096 page, as libCacheSim's ARC with 4 KiB objects)",
    }],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{read, run_keys};
    use crate::policy::{Mode, SpecError};

    #[test]
    fn lists_by_hand() {
        let mut arc = Arc::new(3, 1);
        // 1 2 3 fill T1; 1 hits and moves to T2. 4: |T1|+|B1| = 2 < 3 and T1 (3 2)
        // is over p = 0, so 2 goes to B1. 5: |T1|+|B1| = 3 = c, so B1's LRU key (2)
        // is forgotten and 3 goes to B1.
        let hits = run_keys(&mut arc, &[1, 2, 3, 1, 4, 5]);
        assert_eq!(hits, vec![false, false, false, true, false, false]);
        assert_eq!(arc.lists(), [vec![5, 4], vec![1], vec![3], vec![]]);
        assert_eq!(run_keys(&mut arc, &[6]), vec![false]);
        assert_eq!(arc.lists(), [vec![6, 5], vec![1], vec![4], vec![]]);
        assert_eq!(arc.ghosts(), 1);
        // T1 alone fills the cache with B1 empty: its LRU page leaves without a ghost.
        let mut arc = Arc::new(2, 1);
        run_keys(&mut arc, &[1, 2, 3]);
        assert_eq!(arc.lists(), [vec![3, 2], vec![], vec![], vec![]]);
    }

    #[test]
    fn ghost_hits_adapt_p() {
        let mut arc = Arc::new(3, 1);
        run_keys(&mut arc, &[1, 2, 3, 1, 4, 5]);
        // T1 5 4, T2 1, B1 3. A hit in B1: δ = max(0/1, 1) = 1, p = 1. REPLACE:
        // |T1| = 2 > p, so 4 goes to B1; 3 enters T2.
        let mut ev = Vec::new();
        assert!(!arc.touch(&read(3, 6), false, &mut ev));
        assert_eq!(arc.target(), 1.0);
        arc.insert(&read(3, 6), false, &mut ev);
        assert_eq!(ev, vec![4]);
        assert_eq!(arc.lists(), [vec![5], vec![3, 1], vec![4], vec![]]);
        // 6: |T1| = 1 = p and 6 is not from B2, so T2's LRU page (1) goes to B2.
        // 7: |T1|+|B1| = 3 = c: 4 is forgotten; |T1| = 2 > p, so 5 goes to B1.
        run_keys(&mut arc, &[6, 7]);
        assert_eq!(arc.lists(), [vec![7, 6], vec![3], vec![5], vec![1]]);
        // 8: |T1|+|B1| = 3 again: 5 is forgotten, 6 goes to B1.
        run_keys(&mut arc, &[8]);
        assert_eq!(arc.lists(), [vec![8, 7], vec![3], vec![6], vec![1]]);
        // A hit in B2: δ = max(1/1, 1) = 1, p = 0; |T1| = 2 > p: 7 goes to B1.
        assert!(!arc.touch(&read(1, 9), false, &mut ev));
        assert_eq!(arc.target(), 0.0);
        ev.clear();
        arc.insert(&read(1, 9), false, &mut ev);
        assert_eq!(ev, vec![7]);
        assert_eq!(arc.lists(), [vec![8], vec![1, 3], vec![7, 6], vec![]]);
        // A hit in B1 with |B2| = 0: δ = 1, p = 1. |T1| = 1 = p, the key is not
        // from B2, so T2's LRU page (3) goes to B2 and T1 keeps 8.
        assert!(!arc.touch(&read(6, 10), false, &mut ev));
        ev.clear();
        arc.insert(&read(6, 10), false, &mut ev);
        assert_eq!(ev, vec![3]);
        assert_eq!(arc.lists(), [vec![8], vec![6, 1], vec![7], vec![3]]);
        // Another hit in B1: δ = max(1/1, 1) = 1, p = 2; |T1| = 1 < p: 1 goes to B2.
        assert!(!arc.touch(&read(7, 11), false, &mut ev));
        ev.clear();
        arc.insert(&read(7, 11), false, &mut ev);
        assert_eq!(ev, vec![1]);
        assert_eq!(arc.lists(), [vec![8], vec![7, 6], vec![], vec![1, 3]]);
        assert_eq!(arc.target(), 2.0);
        // A hit in B2: δ = max(0/2, 1) = 1, p = 1 = |T1|, and for a key from B2
        // REPLACE then takes T1's page (8), where a new key took T2's above.
        assert!(!arc.touch(&read(3, 12), false, &mut ev));
        ev.clear();
        arc.insert(&read(3, 12), false, &mut ev);
        assert_eq!(ev, vec![8]);
        assert_eq!(arc.lists(), [vec![], vec![3, 7, 6], vec![8], vec![1]]);
    }

    #[test]
    fn libcachesim_steps_p_in_bytes() {
        // The same B1 hit moves p by 1/4096 page: p stays below one page.
        let mut arc = Arc::new(3, LCS_PAGE);
        run_keys(&mut arc, &[1, 2, 3, 1, 4, 5, 3]);
        assert_eq!(arc.target(), 1.0 / 4096.0);
        assert_eq!(arc.lists(), [vec![5], vec![3, 1], vec![4], vec![]]);
        // 6: |T1| = 1 page > p, so (unlike the paper's p = 1) T1's page 5 goes to B1.
        run_keys(&mut arc, &[6]);
        assert_eq!(arc.lists(), [vec![6], vec![3, 1], vec![5, 4], vec![]]);
    }

    #[test]
    fn unused_ghost_hit_is_dropped() {
        let mut arc = Arc::new(2, 1);
        run_keys(&mut arc, &[1, 2, 1, 3]);
        assert_eq!(arc.lists(), [vec![3], vec![1], vec![2], vec![]]);
        // A ghost hit not followed by an insert (write-around) forgets the ghost.
        let mut ev = Vec::new();
        assert!(!arc.touch(&read(2, 4), false, &mut ev));
        assert!(!arc.contains(2));
        assert!(arc.touch(&read(3, 5), false, &mut ev));
        assert_eq!(arc.lists(), [vec![], vec![3, 1], vec![], vec![]]);
        assert_eq!(arc.target(), 1.0);
        // 2 is new again: |T1| = 0, so T2's LRU page goes to B2.
        assert_eq!(run_keys(&mut arc, &[2]), vec![false]);
        assert_eq!(arc.lists(), [vec![2], vec![3], vec![], vec![1]]);
        assert!(arc.remove(2, &mut ev) && !arc.remove(2, &mut ev));
        assert!(!arc.remove(1, &mut ev), "a ghost is not resident");
        assert!(ev.is_empty());
        assert_eq!((arc.len(), arc.ghosts()), (1, 0));
    }

    #[test]
    fn capacity_and_ghost_bounds_hold() {
        let mut x: u64 = 7;
        let keys: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 64).min(x % 97)
            })
            .collect();
        for unit in [1, LCS_PAGE] {
            for c in [1, 2, 5, 17, 40] {
                let mut arc = Arc::new(c, unit);
                let mut ev = Vec::new();
                for (i, &k) in keys.iter().enumerate() {
                    let a = read(k, i as u64);
                    if !arc.touch(&a, false, &mut ev) {
                        ev.clear();
                        arc.insert(&a, false, &mut ev);
                        assert!(ev.len() <= 1);
                    }
                    assert!(arc.len() <= c);
                    assert!(arc.t1.len() + arc.b1.len() <= c);
                    assert!(arc.len() + arc.ghosts() <= 2 * c);
                    assert!(arc.p >= 0.0 && arc.p <= arc.cap_units);
                }
            }
        }
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        for unit in [1, LCS_PAGE] {
            crate::policy::testing::churn(
                || Arc::new(7, unit),
                40,
                |arc, shadow| {
                    assert!(arc.len() <= 7 && arc.len() == shadow.len());
                    assert!(shadow.iter().all(|&k| arc.contains(k)));
                },
            );
        }
    }

    #[test]
    fn shrinking_replaces_as_arc_and_keeps_its_bounds() {
        let mut arc = Arc::new(4, 1);
        // T1 5 4, T2 1 3 ... build: 1 2 3 4 fill T1; 1, 3 hit -> T2 3 1, T1 4 2.
        run_keys(&mut arc, &[1, 2, 3, 4, 1, 3]);
        assert_eq!(arc.lists(), [vec![4, 2], vec![3, 1], vec![], vec![]]);
        let mut ev = Vec::new();
        // c = 2: |T1| = 2 > p = 0, so REPLACE takes T1's LRU pages 2 then 4 (to B1),
        // then |T1| + |B1| = 2 ≤ 2 and four lists 4 ≤ 4.
        assert!(arc.set_capacity(2, &mut ev));
        assert_eq!(ev, vec![2, 4]);
        assert_eq!(arc.lists(), [vec![], vec![3, 1], vec![4, 2], vec![]]);
        // c = 1: T2's LRU page 1 goes to B2; then |T1| + |B1| = 2 > 1 drops B1's
        // oldest (2), and the lists (3 | 4 | 1 = 3 keys > 2) drop B2's 1.
        ev.clear();
        assert!(arc.set_capacity(1, &mut ev));
        assert_eq!(ev, vec![1]);
        assert_eq!(arc.lists(), [vec![], vec![3], vec![4], vec![]]);
        // p is bounded by the new c.
        let mut arc = Arc::new(4, 1);
        run_keys(&mut arc, &[1, 2, 3, 4, 1, 5, 2, 6, 3]);
        assert!(arc.target() > 1.0, "{}", arc.target());
        arc.set_capacity(1, &mut ev);
        assert!(arc.target() <= 1.0 && arc.len() <= 1);
        // Growing evicts nothing and the room is used before replacing.
        ev.clear();
        arc.set_capacity(3, &mut ev);
        assert!(ev.is_empty());
        assert_eq!(run_keys(&mut arc, &[10, 11]), vec![false, false]);
        assert_eq!(arc.len(), 3);
    }

    proptest::proptest! {
        #[test]
        fn resized_arc_never_exceeds_its_bounds(
            unit in proptest::sample::select(vec![1u64, LCS_PAGE]),
            ops in proptest::collection::vec((0u64..40, 0u8..12, 0usize..20), 1..400),
        ) {
            let mut arc = Arc::new(8, unit);
            let mut ev = Vec::new();
            let mut resident = std::collections::HashSet::new();
            for (i, (key, what, size)) in ops.into_iter().enumerate() {
                ev.clear();
                if what == 0 {
                    arc.set_capacity(size, &mut ev);
                } else {
                    if arc.capacity() == 0 {
                        arc.set_capacity(1, &mut ev);
                    }
                    let a = read(key, i as u64);
                    if !arc.touch(&a, false, &mut ev) {
                        proptest::prop_assert!(arc.insert(&a, false, &mut ev));
                        resident.insert(key);
                    }
                }
                for k in &ev {
                    proptest::prop_assert!(resident.remove(k), "evicted {} was not resident", k);
                }
                let c = arc.capacity();
                proptest::prop_assert!(arc.len() <= c && arc.len() == resident.len());
                proptest::prop_assert!(resident.iter().all(|&k| arc.contains(k)));
                proptest::prop_assert!(arc.t1.len() + arc.b1.len() <= c);
                proptest::prop_assert!(arc.len() + arc.ghosts() <= 2 * c);
                proptest::prop_assert!(arc.p >= 0.0 && arc.p <= arc.cap_units);
            }
        }
    }

    #[test]
    fn variant_parameter() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        assert!(build_spec("arc(variant=paper)", &ctx).is_ok());
        assert!(matches!(build_spec("arc(variant=v0)", &ctx), Err(SpecError::BadValue { .. })));
        assert!(matches!(build_spec("arc(p=3)", &ctx), Err(SpecError::UnknownParam { .. })));
    }
}
