//! SLRU: segmented LRU, `n` LRU segments of equal size; a hit moves a page up
//! one segment, and a segment over its size pushes its LRU page down one
//! segment, the lowest one out of the cache (Karedla et al., IEEE Computer
//! '94, generalised to `n` segments as libCacheSim's `SLRU`).
//!
//! Rules and sizes are libCacheSim's `SLRU` (`SLRU.c`), so miss counts agree
//! exactly; its choices, kept here:
//! - `segments=4` by default, each `⌊C/n⌋` pages (libCacheSim: `cache_size/n`
//!   bytes, for 4 KiB pages the same);
//! - a miss first makes room in the cache as a whole (evicting the LRU page of
//!   the lowest non-empty segment), then enters the lowest segment with room
//!   for it, or segment 0 if none has: before the cache first fills, pages land
//!   in higher segments, and segment 0 may run over its size;
//! - a hit in the top segment moves the page to that segment's MRU end; a hit
//!   below moves it to the MRU end of the next segment up, which, if over its
//!   size, sends its LRU page down, and so on; a page pushed out of an
//!   over-full segment 0 leaves the cache — so a hit may evict other pages;
//! - **nothing is cached when a segment is under one page** (`C < n`):
//!   libCacheSim refuses every object then, and so does this rule
//!   ([`Replacement::insert`] returns false).
//!
//! Memory per resident page: a 16-byte arena node, one byte of segment number
//! in a side array, and the arena's hash index.

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The most segments (libCacheSim: `SLRU_MAX_N_SEG`).
const MAX_SEGMENTS: u64 = 16;

pub struct Slru {
    arena: Arena<()>,
    /// Segment of the page in arena node `i`.
    seg_of: Vec<u8>,
    /// Segment 0 is the lowest (probationary); front = MRU.
    segs: Vec<List>,
    /// Pages per segment.
    seg_size: usize,
    /// Pages in all segments (kept, not summed: a miss asks for it).
    resident: usize,
    capacity: usize,
}

impl Slru {
    pub fn new(capacity: usize, segments: usize) -> Self {
        let capacity = capacity.max(1);
        let segments = segments.clamp(1, MAX_SEGMENTS as usize);
        Slru {
            arena: Arena::with_capacity(capacity),
            seg_of: upfront(capacity),
            segs: vec![List::new(); segments],
            seg_size: capacity / segments,
            resident: 0,
            capacity,
        }
    }

    /// Takes the LRU page of the lowest non-empty segment off its list (its
    /// node still holds it).
    fn pop_victim(&mut self) -> Option<u32> {
        let s = self.segs.iter().position(|s| !s.is_empty())?;
        self.segs[s].pop_back(&mut self.arena)
    }

    /// Evicts the LRU page of the lowest non-empty segment.
    fn evict(&mut self, evicted: &mut Vec<u64>) {
        if let Some(idx) = self.pop_victim() {
            evicted.push(self.arena.remove(idx));
            self.resident -= 1;
        }
    }

    /// Segment `s` is over its size: its LRU page goes down one segment (out of
    /// the cache from segment 0), and so on down (libCacheSim's `SLRU_cool`).
    fn cool(&mut self, s: usize, evicted: &mut Vec<u64>) {
        if s == 0 {
            self.evict(evicted);
            return;
        }
        let idx = self.segs[s].pop_back(&mut self.arena).expect("over-full segment");
        self.segs[s - 1].push_front(&mut self.arena, idx);
        self.seg_of[idx as usize] = (s - 1) as u8;
        while self.segs[s - 1].len() > self.seg_size {
            self.cool(s - 1, evicted);
        }
    }

    /// Keys of each segment, MRU first, lowest segment first (for tests).
    pub fn segments(&self) -> Vec<Vec<u64>> {
        self.segs.iter().map(|s| s.keys(&self.arena)).collect()
    }
}

impl Replacement for Slru {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        let s = self.seg_of[idx as usize] as usize;
        if s + 1 == self.segs.len() {
            self.segs[s].move_to_front(&mut self.arena, idx);
        } else {
            self.segs[s].unlink(&mut self.arena, idx);
            self.segs[s + 1].push_front(&mut self.arena, idx);
            self.seg_of[idx as usize] = (s + 1) as u8;
            while self.segs[s + 1].len() > self.seg_size {
                self.cool(s + 1, evicted);
            }
        }
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.seg_size == 0 {
            return false;
        }
        // (never over capacity, so a full cache evicts one page, whose node
        // becomes the new page's)
        let victim = if self.resident >= self.capacity { self.pop_victim() } else { None };
        let s = self.segs.iter().position(|l| l.len() < self.seg_size).unwrap_or(0);
        let idx = match victim {
            Some(v) => {
                evicted.push(self.arena.rekey(v, a.key, ()));
                v
            }
            None => {
                let idx = self.arena.insert(a.key, ());
                cover(&mut self.seg_of, idx as usize, self.arena.limit(), 0);
                self.resident += 1;
                idx
            }
        };
        self.seg_of[idx as usize] = s as u8;
        self.segs[s].push_front(&mut self.arena, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.segs[self.seg_of[idx as usize] as usize].unlink(&mut self.arena, idx);
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
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<Slru, SpecError> {
    let segments = spec.uint("segments")?;
    if !(1..=MAX_SEGMENTS).contains(&segments) {
        return Err(spec.invalid("segments", format!("between 1 and {MAX_SEGMENTS}")));
    }
    Ok(Slru::new(ctx.capacity, segments as usize))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "slru",
    about: "segmented LRU, equal segments; a hit moves a page up one (libCacheSim SLRU; caches nothing below one page a segment)",
    params: &[ParamInfo { name: "segments", default: "4", about: "number of equal LRU segments (n-seg), 1 to 16" }],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{misses, run_keys};
    use crate::policy::Mode;

    #[test]
    fn by_hand() {
        // 4 pages, 2 segments of 2.
        let mut s = Slru::new(4, 2);
        // 1 2 fill segment 0; 3 4 find it full and land in segment 1.
        assert_eq!(run_keys(&mut s, &[1, 2, 3, 4]), vec![false; 4]);
        assert_eq!(s.segments(), vec![vec![2, 1], vec![4, 3]]);
        // 1 hit: up to segment 1, which is over (3 > 2): its LRU (3) goes down.
        assert_eq!(run_keys(&mut s, &[1]), vec![true]);
        assert_eq!(s.segments(), vec![vec![3, 2], vec![1, 4]]);
        // 5: the cache is full, the LRU of segment 0 (2) leaves; 5 enters segment 0.
        assert_eq!(run_keys(&mut s, &[5]), vec![false]);
        assert_eq!(s.segments(), vec![vec![5, 3], vec![1, 4]]);
        // 4 hit in the top segment: MRU there.
        assert_eq!(run_keys(&mut s, &[4, 2]), vec![true, false]);
        assert_eq!(s.segments(), vec![vec![2, 5], vec![4, 1]]);
    }

    #[test]
    fn a_hit_can_evict_when_segment_0_is_over_its_size() {
        // 5 pages, 2 segments of 2: segment 0 runs over once all are full.
        let mut s = Slru::new(5, 2);
        run_keys(&mut s, &[1, 2, 3, 4, 5]);
        assert_eq!(s.segments(), vec![vec![5, 2, 1], vec![4, 3]]);
        // 5 goes up; 3 comes down to segment 0 (now 3 pages > 2): its LRU (1) leaves.
        let mut ev = Vec::new();
        assert!(s.touch(&crate::policy::testing::read(5, 9), false, &mut ev));
        assert_eq!(ev, vec![1]);
        assert_eq!(s.segments(), vec![vec![3, 2], vec![5, 4]]);
    }

    #[test]
    fn caches_nothing_below_a_page_per_segment() {
        let keys: Vec<u64> = [1, 1, 2, 2, 1].repeat(4);
        let ctx = BuildCtx { capacity: 3, mode: Mode::WriteBack, page_bytes: 4096 };
        let (mut p, _) = build_spec("slru", &ctx).unwrap();
        assert_eq!(misses(p.as_mut(), &keys), keys.len());
        let (mut p, _) = build_spec("slru(segments=3)", &ctx).unwrap();
        // one page a segment: only the first access of each key misses
        assert_eq!(misses(p.as_mut(), &keys), 2);
        for bad in ["slru(segments=0)", "slru(segments=17)", "slru(segments=x)"] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
    }

    /// Segment `t` of the reference is over its size: its LRU page goes down
    /// one segment (out of the cache from segment 0), and so on down.
    fn cool(segs: &mut [Vec<u64>], t: usize, size: usize, evicted: &mut Vec<u64>) {
        let lru = segs[t].pop().unwrap();
        if t == 0 {
            evicted.push(lru);
            return;
        }
        segs[t - 1].insert(0, lru);
        while segs[t - 1].len() > size {
            cool(segs, t - 1, size, evicted);
        }
    }

    proptest::proptest! {
        /// The rules of the module's text, by brute force: a vector per
        /// segment (MRU first), a page moved by value.
        #[test]
        fn same_choices_as_the_brute_force_reference(
            capacity in 1usize..12,
            n in 1usize..5,
            // key, and what happens: 0 remove, 1 a miss is not cached, else an access
            ops in proptest::collection::vec((0u64..24, 0u8..12), 1..500),
        ) {
            let mut slru = Slru::new(capacity, n);
            let size = capacity / n;
            let mut segs: Vec<Vec<u64>> = vec![Vec::new(); n];
            let (mut ev, mut ev_ref) = (Vec::new(), Vec::new());
            for (i, (key, what)) in ops.into_iter().enumerate() {
                ev.clear();
                ev_ref.clear();
                let at = segs.iter().position(|s| s.contains(&key));
                if what == 0 {
                    proptest::prop_assert_eq!(slru.remove(key, &mut ev), at.is_some());
                    segs.iter_mut().for_each(|s| s.retain(|&k| k != key));
                } else {
                    let a = crate::policy::testing::read(key, i as u64);
                    let hit = slru.touch(&a, false, &mut ev);
                    proptest::prop_assert_eq!(hit, at.is_some(), "key {} at {}", key, i);
                    if let Some(s) = at {
                        segs[s].retain(|&k| k != key);
                        segs[(s + 1).min(n - 1)].insert(0, key);
                        if s + 1 < n {
                            while segs[s + 1].len() > size {
                                cool(&mut segs, s + 1, size, &mut ev_ref);
                            }
                        }
                    } else if what > 1 {
                        proptest::prop_assert_eq!(slru.insert(&a, false, &mut ev), size > 0);
                        if size > 0 {
                            while segs.iter().map(Vec::len).sum::<usize>() >= capacity {
                                let low = segs.iter().position(|s| !s.is_empty()).unwrap();
                                ev_ref.push(segs[low].pop().unwrap());
                            }
                            let s = (0..n).find(|&s| segs[s].len() < size).unwrap_or(0);
                            segs[s].insert(0, key);
                        }
                    }
                }
                proptest::prop_assert_eq!(&ev, &ev_ref, "evicted at {}", i);
                proptest::prop_assert_eq!(slru.segments(), segs.clone(), "segments after {}", i);
                proptest::prop_assert_eq!(slru.len(), segs.iter().map(Vec::len).sum::<usize>());
            }
        }
    }
}
