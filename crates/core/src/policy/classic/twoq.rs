//! 2Q (full version): a FIFO `A1in` for pages seen once, an LRU `Am` for pages
//! seen again, and a ghost FIFO `A1out` remembering pages recently dropped from
//! `A1in` (Johnson & Shasha, VLDB'94).
//!
//! - a hit in `Am` moves the page to the MRU end; a hit in `A1in` changes nothing
//!   (correlated references);
//! - a miss on a page remembered in `A1out` brings it into `Am`; any other miss
//!   puts it at the head of `A1in`;
//! - to make room once the cache is full: if `A1in` holds more than `kin` pages
//!   its oldest page leaves and its key goes to the head of `A1out` (which keeps
//!   at most `kout` keys, FIFO); otherwise `Am`'s LRU page leaves.
//!
//! `kin` and `kout` are fractions of the capacity, 25% and 50% by default (the
//! paper's recommendation and libCacheSim's `Ain-size-ratio=0.25,
//! Aout-size-ratio=0.5`). `A1in` may grow past `kin` while there is free room;
//! ghosts do not count towards the capacity.
//!
//! ## `variant=libcachesim` (default): libCacheSim's `TwoQ` (`TwoQ.c`)
//!
//! Miss counts equal libCacheSim's `TwoQ` for unit-size objects. Sizes are
//! worked out as libCacheSim does in bytes for 4 KiB objects: with `C` pages,
//! `ain = trunc(C·4096·kin)` bytes, `A1in` sheds pages while it holds more than
//! `ain` bytes; `A1out` keeps `⌊trunc(C·4096·kout)/4096⌋` keys. Where libCacheSim
//! departs from the paper:
//! - `Am` is a separate LRU cache of `⌊(C·4096 − ain)/4096⌋` pages (about
//!   `C − kin`): when a page comes back from `A1out` and `Am` is at that size,
//!   `Am` drops its own LRU page even if `A1in` is small and the whole cache is
//!   not full. In the paper `Am` may use every slot `A1in` does not.
//! - libCacheSim admits nothing at all when `A1in`'s share is under one page
//!   (e.g. `kin=25%` of fewer than 4 pages), and would never admit to `Am` if its
//!   share were under one page. A replacement rule here must admit every miss,
//!   so these configurations are rejected with an error instead.
//!
//! ## `variant=paper`: Johnson & Shasha's full 2Q
//!
//! `kin = ⌊C·kin⌋` and `kout = ⌊C·kout⌋` pages; `Am` is bounded only by the
//! capacity. Any capacity of at least one page works.

use crate::policy::list::{Arena, List};
use crate::policy::registry::{BuildCtx, ParamInfo, PolicyInfo};
use crate::policy::{Access, ModeCache, Policy, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages);
/// only used to reproduce its byte rounding of queue sizes.
const LCS_PAGE: u64 = 4096;

/// `trunc(capacity·4096·ratio)`: libCacheSim's size in bytes of a `ratio` share.
fn lcs_share_bytes(capacity: usize, ratio: f64) -> u64 {
    ((capacity as u64 * LCS_PAGE) as f64 * ratio) as u64
}

/// Which queue a tracked key is in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Q {
    In,
    Main,
    Out,
}

/// Queue sizes, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TwoQSizes {
    /// `A1in` sheds its oldest page only while it holds more than this.
    pub kin: usize,
    /// Ghost keys kept in `A1out`.
    pub kout: usize,
    /// Largest size of `Am`.
    pub am: usize,
}

impl TwoQSizes {
    /// libCacheSim's sizes for `capacity` pages; `Err` names the parameter that
    /// leaves a queue without a whole page.
    pub fn libcachesim(capacity: usize, kin: f64, kout: f64) -> Result<TwoQSizes, (&'static str, String)> {
        let ain = lcs_share_bytes(capacity, kin);
        let total = capacity as u64 * LCS_PAGE;
        let am = total.saturating_sub(ain) / LCS_PAGE;
        if ain < LCS_PAGE {
            return Err((
                "kin",
                format!(
                    "A1in gets less than one page of a {capacity}-page cache, and libCacheSim's 2Q then caches \
                     nothing; use a larger kin or capacity, or variant=paper"
                ),
            ));
        }
        if am < 1 {
            return Err((
                "kin",
                format!("Am gets less than one page of a {capacity}-page cache; use a smaller kin or variant=paper"),
            ));
        }
        Ok(TwoQSizes {
            kin: (ain / LCS_PAGE) as usize,
            kout: (lcs_share_bytes(capacity, kout) / LCS_PAGE) as usize,
            am: am as usize,
        })
    }

    /// The paper's sizes for `capacity` pages: `Am` limited only by the capacity.
    pub fn paper(capacity: usize, kin: f64, kout: f64) -> TwoQSizes {
        let c = capacity as f64;
        TwoQSizes { kin: (c * kin) as usize, kout: (c * kout) as usize, am: capacity }
    }
}

pub struct TwoQ {
    arena: Arena<Q>,
    /// Front = newest; back = next to leave.
    a1in: List,
    /// Front = MRU.
    am: List,
    /// Ghost keys, front = newest.
    a1out: List,
    capacity: usize,
    sizes: TwoQSizes,
}

impl TwoQ {
    /// `sizes.kin` must be below `capacity` (so `Am` is never asked for a page it lacks).
    pub fn new(capacity: usize, sizes: TwoQSizes) -> Self {
        let capacity = capacity.max(1);
        assert!(sizes.kin < capacity || capacity == 1, "kin must leave room for Am");
        assert!(sizes.am >= 1, "Am needs at least one page");
        TwoQ {
            arena: Arena::with_capacity(capacity + sizes.kout),
            a1in: List::new(),
            am: List::new(),
            a1out: List::new(),
            capacity,
            sizes,
        }
    }

    fn resident(&self) -> usize {
        self.a1in.len() + self.am.len()
    }

    /// Evicts the LRU page of `Am`.
    fn evict_am(&mut self, evicted: &mut Vec<u64>) {
        if let Some(v) = self.am.pop_back(&mut self.arena) {
            evicted.push(self.arena.remove(v));
        }
    }

    /// Frees one page: `A1in`'s oldest if it is over `kin`, else `Am`'s LRU.
    fn reclaim(&mut self, evicted: &mut Vec<u64>) {
        if self.a1in.len() > self.sizes.kin || self.am.is_empty() {
            let Some(v) = self.a1in.pop_back(&mut self.arena) else { return };
            evicted.push(self.arena.key(v));
            if self.sizes.kout == 0 {
                self.arena.remove(v);
                return;
            }
            *self.arena.val_mut(v) = Q::Out;
            self.a1out.push_front(&mut self.arena, v);
            if self.a1out.len() > self.sizes.kout {
                let old = self.a1out.pop_back(&mut self.arena).expect("A1out is not empty");
                self.arena.remove(old);
            }
        } else {
            self.evict_am(evicted);
        }
    }

    /// Keys in each queue, front to back (for tests).
    pub fn queues(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        (self.a1in.keys(&self.arena), self.am.keys(&self.arena), self.a1out.keys(&self.arena))
    }
}

impl Replacement for TwoQ {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => match *self.arena.val(idx) {
                Q::In => true,
                Q::Main => {
                    self.am.move_to_front(&mut self.arena, idx);
                    true
                }
                Q::Out => false,
            },
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) {
        // A remembered key leaves A1out before anything is evicted (as in
        // libCacheSim, where the lookup itself removes it), so it is neither
        // pushed out of A1out by this miss's eviction nor takes a ghost slot.
        let ghost = match self.arena.find(a.key) {
            Some(idx) => {
                debug_assert_eq!(*self.arena.val(idx), Q::Out, "insert of a resident key");
                self.a1out.unlink(&mut self.arena, idx);
                self.arena.remove(idx);
                true
            }
            None => false,
        };
        while self.resident() >= self.capacity {
            self.reclaim(evicted);
        }
        if ghost {
            while self.am.len() >= self.sizes.am {
                self.evict_am(evicted);
            }
            let idx = self.arena.insert(a.key, Q::Main);
            self.am.push_front(&mut self.arena, idx);
        } else {
            let idx = self.arena.insert(a.key, Q::In);
            self.a1in.push_front(&mut self.arena, idx);
        }
    }

    fn remove(&mut self, key: u64) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        match *self.arena.val(idx) {
            Q::In => self.a1in.unlink(&mut self.arena, idx),
            Q::Main => self.am.unlink(&mut self.arena, idx),
            Q::Out => return false,
        }
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| *self.arena.val(idx) != Q::Out)
    }
    fn len(&self) -> usize {
        self.resident()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.a1out.len()
    }
}

fn build(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Policy>, SpecError> {
    let kin = spec.ratio("kin")?;
    let kout = spec.ratio("kout")?;
    if kin >= 1.0 {
        return Err(spec.invalid("kin", "must be below 100% (Am needs room)"));
    }
    let capacity = ctx.capacity.max(1);
    let sizes = match spec.choice("variant", &["libcachesim", "paper"])?.as_str() {
        "paper" => TwoQSizes::paper(capacity, kin, kout),
        _ => TwoQSizes::libcachesim(capacity, kin, kout).map_err(|(p, why)| spec.invalid(p, why))?,
    };
    Ok(Box::new(ModeCache::new(TwoQ::new(capacity, sizes), ctx.mode)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "2q",
    about: "2Q: FIFO A1in + LRU Am + ghost A1out (libCacheSim TwoQ)",
    params: &[
        ParamInfo { name: "kin", default: "25%", about: "A1in share of the capacity (libCacheSim Ain-size-ratio)" },
        ParamInfo {
            name: "kout",
            default: "50%",
            about: "A1out ghost keys as a share of the capacity (Aout-size-ratio)",
        },
        ParamInfo {
            name: "variant",
            default: "libcachesim",
            about: "libcachesim (Am capped at its own share) or paper (Am uses any free slot)",
        },
    ],
    build,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::{Mode, SpecError};

    #[test]
    fn sizes_follow_libcachesim_rounding() {
        // 10 pages, 25%: A1in threshold 2 pages (2.5 truncated), Am 7 pages (7.5 truncated), A1out 5.
        assert_eq!(TwoQSizes::libcachesim(10, 0.25, 0.5).unwrap(), TwoQSizes { kin: 2, kout: 5, am: 7 });
        assert_eq!(TwoQSizes::libcachesim(4, 0.25, 0.5).unwrap(), TwoQSizes { kin: 1, kout: 2, am: 3 });
        assert!(TwoQSizes::libcachesim(3, 0.25, 0.5).is_err());
        assert_eq!(TwoQSizes::paper(3, 0.25, 0.5), TwoQSizes { kin: 0, kout: 1, am: 3 });
    }

    #[test]
    fn full_2q_by_hand() {
        // 4 pages: kin 1, kout 2, Am 3.
        let mut q = TwoQ::new(4, TwoQSizes::libcachesim(4, 0.25, 0.5).unwrap());
        // 1 2 3 4 fill A1in (free slots). 1 hits in A1in: no change.
        // 5: full; A1in has 4 > 1 -> 1 leaves to A1out. A1in 5 4 3 2, A1out 1.
        // 6: 2 leaves -> A1out 2 1. 7: 3 leaves -> A1out 3 2 (1 forgotten).
        // 2: ghost -> Am. Room: A1in (7 6 5 4) over kin -> 4 leaves, A1out 4 3.
        // 3: ghost -> Am. 5 leaves, A1out 5 4. Am 3 2.
        // 2: hit in Am (moves to MRU). 1: plain miss (forgotten): 6 leaves.
        let hits = run_keys(&mut q, &[1, 2, 3, 4, 1, 5, 6, 7, 2, 3, 2, 1]);
        assert_eq!(hits, vec![false, false, false, false, true, false, false, false, false, false, true, false]);
        assert_eq!(q.queues(), (vec![1, 7], vec![2, 3], vec![6, 5]));
        // 8: A1in (1 7) is over kin -> 7 leaves; A1out 7 6. 9: 1 leaves; A1out 1 7.
        assert_eq!(run_keys(&mut q, &[8, 9]), vec![false, false]);
        assert_eq!(q.queues(), (vec![9, 8], vec![2, 3], vec![1, 7]));
        // 7: ghost -> Am; room: A1in (9 8) over kin, 8 leaves; A1out 8 1. Am 7 2 3.
        // 1: ghost -> Am; room: A1in (9) not over kin, so Am's LRU page 3 leaves.
        assert_eq!(run_keys(&mut q, &[7, 1]), vec![false, false]);
        assert_eq!(q.queues(), (vec![9], vec![1, 7, 2], vec![8]));
        assert_eq!(q.ghosts(), 1);
    }

    #[test]
    fn am_cap_differs_between_variants() {
        // 6 pages, kin 25% = 1.5 pages: libCacheSim's A1in threshold is 1 page and
        // Am is capped at 4 pages (4.5 truncated); kout 3. The paper lets Am use 6.
        let lcs = TwoQSizes::libcachesim(6, 0.25, 0.5).unwrap();
        assert_eq!(lcs, TwoQSizes { kin: 1, kout: 3, am: 4 });
        let paper = TwoQSizes::paper(6, 0.25, 0.5);
        // 1..6 fill A1in; 7..10 push 1..4 out (A1out keeps 4 3 2). Ghost hits
        // 4 3 2 each push A1in's oldest (5 6 7) to A1out and enter Am; 5 and 6
        // come back too (8, 9 leave A1in). On 6, libCacheSim's Am is at its cap
        // of 4, so it drops its LRU page (4) although the cache is not full.
        let keys: Vec<u64> = (1..=10).chain([4, 3, 2, 5, 6]).collect();
        let mut a = TwoQ::new(6, lcs);
        let mut b = TwoQ::new(6, paper);
        assert_eq!(run_keys(&mut a, &keys), vec![false; 15]);
        assert_eq!(run_keys(&mut b, &keys), vec![false; 15]);
        assert_eq!(a.queues(), (vec![10], vec![6, 5, 2, 3], vec![9, 8, 7]));
        assert_eq!(b.queues(), (vec![10], vec![6, 5, 2, 3, 4], vec![9, 8, 7]));
        assert_eq!((a.len(), b.len()), (5, 6));
        assert_eq!(run_keys(&mut a, &[4]), vec![false]);
        assert_eq!(run_keys(&mut b, &[4]), vec![true]);
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack };
        for spec in ["2q(kin=100%)", "2q(kin=120%)", "2q(kout=x)", "2q(variant=textbook)", "2q(kin=10%)"] {
            match build_spec(spec, &ctx) {
                Err(SpecError::BadValue { .. }) => {}
                Err(e) => panic!("{spec}: wrong error {e}"),
                Ok(_) => panic!("{spec}: accepted"),
            }
        }
        let tiny = BuildCtx { capacity: 3, mode: Mode::WriteBack };
        assert!(matches!(build_spec("2q", &tiny), Err(SpecError::BadValue { .. })));
        assert!(build_spec("2q(variant=paper)", &tiny).is_ok());
        assert!(build_spec("2q(kin=0.5,kout=0)", &ctx).is_ok());
    }
}
