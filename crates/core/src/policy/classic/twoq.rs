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
//! ## `variant=paper` (default): Johnson & Shasha's full 2Q
//!
//! `kin = ⌊C·kin⌋` and `kout = ⌊C·kout⌋` pages; `Am` is bounded only by the
//! capacity. Every miss is cached, at any capacity of at least one page.
//!
//! ## `variant=libcachesim`: libCacheSim's `TwoQ` (`TwoQ.c`)
//!
//! Miss counts equal libCacheSim's `TwoQ` for unit-size objects, at every
//! capacity. Sizes are worked out as libCacheSim does in bytes for 4 KiB
//! objects: with `C` pages, `ain = trunc(C·4096·kin)` bytes, `A1in` sheds pages
//! while it holds more than `ain` bytes; `A1out` keeps `⌊trunc(C·4096·kout)/4096⌋`
//! keys. Where libCacheSim departs from the paper:
//! - `Am` is a separate LRU cache of `⌊(C·4096 − ain)/4096⌋` pages (about
//!   `C − kin`): when a page comes back from `A1out` and `Am` is at that size,
//!   `Am` drops its own LRU page even if `A1in` is small and the whole cache is
//!   not full. In the paper `Am` may use every slot `A1in` does not.
//! - **Nothing is cached when `A1in`'s share is under one page** (`kin=25%` of
//!   fewer than 4 pages): libCacheSim refuses every object (`TwoQ_can_insert`),
//!   so every miss is declined ([`Replacement::insert`] returns false) and
//!   every access misses.
//! - When `Am`'s share is under one page (`kin` above `1 − 1/C`), `A1in` and
//!   `A1out` work as usual but a page coming back from `A1out` is declined: its
//!   ghost is dropped and room is made for it (`A1in`'s oldest page leaves, to
//!   `A1out`) before `Am` refuses it, as in libCacheSim.

use crate::list::{Arena, List, NIL};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

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
    /// Largest size of `Am`; 0 (libCacheSim only): `Am` refuses every page.
    pub am: usize,
    /// Whether a miss is cached at all (libCacheSim: not when `A1in`'s share is
    /// under one page).
    pub admit: bool,
}

impl TwoQSizes {
    /// libCacheSim's sizes for `capacity` pages (`kin` below 1).
    pub fn libcachesim(capacity: usize, kin: f64, kout: f64) -> TwoQSizes {
        let ain = lcs_share_bytes(capacity, kin);
        let total = capacity as u64 * LCS_PAGE;
        TwoQSizes {
            kin: (ain / LCS_PAGE) as usize,
            kout: (lcs_share_bytes(capacity, kout) / LCS_PAGE) as usize,
            am: (total.saturating_sub(ain) / LCS_PAGE) as usize,
            admit: ain >= LCS_PAGE,
        }
    }

    /// The paper's sizes for `capacity` pages: `Am` limited only by the capacity.
    pub fn paper(capacity: usize, kin: f64, kout: f64) -> TwoQSizes {
        let c = capacity as f64;
        TwoQSizes { kin: (c * kin) as usize, kout: (c * kout) as usize, am: capacity, admit: true }
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
    /// The last `touch` that missed: its key and node (a ghost, or `NIL`: not
    /// tracked), so that `insert`, called right after it for the same key,
    /// needs no lookup.
    missed: Option<(u64, u32)>,
}

impl TwoQ {
    /// `sizes.kin` must be below `capacity` (so `Am` is never asked for a page it lacks).
    pub fn new(capacity: usize, sizes: TwoQSizes) -> Self {
        let capacity = capacity.max(1);
        assert!(sizes.kin < capacity || capacity == 1, "kin must leave room for Am");
        TwoQ {
            arena: Arena::with_capacity(capacity + sizes.kout),
            a1in: List::new(),
            am: List::new(),
            a1out: List::new(),
            capacity,
            sizes,
            missed: None,
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
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        self.missed = None;
        match self.arena.find(a.key) {
            Some(idx) => match *self.arena.val(idx) {
                Q::In => true,
                Q::Main => {
                    self.am.move_to_front(&mut self.arena, idx);
                    true
                }
                Q::Out => {
                    self.missed = Some((a.key, idx));
                    false
                }
            },
            None => {
                self.missed = Some((a.key, NIL));
                false
            }
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        let missed = self.missed.take();
        if !self.sizes.admit {
            // libCacheSim: A1in cannot hold the page, so it is refused outright
            // (and as nothing is ever cached, there are no ghosts either).
            return false;
        }
        let ghost = match missed {
            Some((key, idx)) if key == a.key => idx,
            _ => self.arena.find(a.key).unwrap_or(NIL),
        };
        // A remembered key leaves A1out before anything is evicted (as in
        // libCacheSim, where the lookup itself removes it), so it is neither
        // pushed out of A1out by this miss's eviction nor takes a ghost slot.
        // Its node stays, off every list, for the page.
        if ghost != NIL {
            debug_assert_eq!(*self.arena.val(ghost), Q::Out, "insert of a resident key");
            self.a1out.unlink(&mut self.arena, ghost);
        }
        while self.resident() >= self.capacity {
            self.reclaim(evicted);
        }
        if ghost != NIL {
            if self.sizes.am == 0 {
                // libCacheSim: Am cannot hold a page; it refuses the page after
                // the room for it was made.
                self.arena.remove(ghost);
                return false;
            }
            while self.am.len() >= self.sizes.am {
                self.evict_am(evicted);
            }
            *self.arena.val_mut(ghost) = Q::Main;
            self.am.push_front(&mut self.arena, ghost);
        } else {
            let idx = self.arena.insert(a.key, Q::In);
            self.a1in.push_front(&mut self.arena, idx);
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        self.missed = None;
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

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<TwoQ, SpecError> {
    let kin = spec.ratio("kin")?;
    let kout = spec.ratio("kout")?;
    if kin >= 1.0 {
        return Err(spec.invalid("kin", "must be below 100% (Am needs room)"));
    }
    let capacity = ctx.capacity.max(1);
    let sizes = match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => TwoQSizes::libcachesim(capacity, kin, kout),
        _ => TwoQSizes::paper(capacity, kin, kout),
    };
    Ok(TwoQ::new(capacity, sizes))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "2q",
    about: "2Q: FIFO A1in + LRU Am + ghost A1out (Johnson & Shasha)",
    params: &[
        ParamInfo { name: "kin", default: "25%", about: "A1in share of the capacity (libCacheSim Ain-size-ratio)" },
        ParamInfo {
            name: "kout",
            default: "50%",
            about: "A1out ghost keys as a share of the capacity (Aout-size-ratio)",
        },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper (Am uses any free slot) or libcachesim (libCacheSim TwoQ: Am capped at its own share; \
                    caches nothing when A1in's share is under a page)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{assert_bad_values, misses, read, run_keys};
    use crate::policy::Mode;

    #[test]
    fn sizes_follow_libcachesim_rounding() {
        // 10 pages, 25%: A1in threshold 2 pages (2.5 truncated), Am 7 pages (7.5 truncated), A1out 5.
        assert_eq!(TwoQSizes::libcachesim(10, 0.25, 0.5), TwoQSizes { kin: 2, kout: 5, am: 7, admit: true });
        assert_eq!(TwoQSizes::libcachesim(4, 0.25, 0.5), TwoQSizes { kin: 1, kout: 2, am: 3, admit: true });
        // 3 pages: A1in's share is 3072 bytes, under one page: nothing is admitted.
        assert!(!TwoQSizes::libcachesim(3, 0.25, 0.5).admit);
        // 2 pages at kin=75%: A1in 6144 bytes, Am 2048 bytes (no page).
        assert_eq!(TwoQSizes::libcachesim(2, 0.75, 0.5), TwoQSizes { kin: 1, kout: 1, am: 0, admit: true });
        assert_eq!(TwoQSizes::paper(3, 0.25, 0.5), TwoQSizes { kin: 0, kout: 1, am: 3, admit: true });
    }

    #[test]
    fn full_2q_by_hand() {
        // 4 pages: kin 1, kout 2, Am 3.
        let mut q = TwoQ::new(4, TwoQSizes::libcachesim(4, 0.25, 0.5));
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
        let lcs = TwoQSizes::libcachesim(6, 0.25, 0.5);
        assert_eq!(lcs, TwoQSizes { kin: 1, kout: 3, am: 4, admit: true });
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
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        assert_bad_values(&["2q(kin=100%)", "2q(kin=120%)", "2q(kout=x)", "2q(variant=textbook)"], &ctx);
        // Every capacity builds, in both variants.
        for capacity in 1..=4 {
            let tiny = BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 };
            for ok in ["2q", "2q(variant=paper)", "2q(variant=libcachesim)", "2q(kin=99%,variant=libcachesim)"] {
                assert!(build_spec(ok, &tiny).is_ok(), "{ok} at {capacity} pages");
            }
        }
        assert!(build_spec("2q(kin=0.5,kout=0)", &ctx).is_ok());
        assert!(build_spec("2q(kin=10%,variant=libcachesim)", &ctx).is_ok());
    }

    #[test]
    fn libcachesim_declines_everything_without_an_a1in_page() {
        // 2 pages (libCacheSim's TwoQ(8192) with 4096-byte objects): every access misses.
        let mut q = TwoQ::new(2, TwoQSizes::libcachesim(2, 0.25, 0.5));
        let keys = [1, 2, 1, 1, 3, 2, 2, 1];
        assert_eq!(run_keys(&mut q, &keys), vec![false; 8]);
        assert_eq!((q.len(), q.ghosts()), (0, 0));
        let ctx = BuildCtx { capacity: 2, mode: Mode::WriteBack, page_bytes: 4096 };
        let (mut p, _) = build_spec("2q(variant=libcachesim)", &ctx).unwrap();
        assert_eq!(misses(p.as_mut(), &keys), 8);
        // The paper's 2Q caches at the same size.
        let (mut p, _) = build_spec("2q", &ctx).unwrap();
        assert_eq!(misses(p.as_mut(), &keys), 4);
    }

    #[test]
    fn libcachesim_without_an_am_page_declines_ghost_hits() {
        // 2 pages at kin=75%: A1in threshold 1 page, A1out 1 key, Am no page.
        let mut q = TwoQ::new(2, TwoQSizes::libcachesim(2, 0.75, 0.5));
        // 1 2 fill A1in; 3: A1in over kin, 1 leaves to A1out.
        assert_eq!(run_keys(&mut q, &[1, 2, 3]), vec![false; 3]);
        assert_eq!(q.queues(), (vec![3, 2], vec![], vec![1]));
        // 1 comes back: its ghost goes, room is made (2 leaves to A1out), and Am refuses it.
        let mut ev = Vec::new();
        assert!(!q.touch(&read(1, 3), false, &mut ev));
        assert!(!q.insert(&read(1, 3), false, &mut ev));
        assert_eq!(ev, vec![2]);
        assert_eq!(q.queues(), (vec![3], vec![], vec![2]));
        // 3 hits; 4 fills the free slot; 2 is declined the same way, pushing 3 out.
        assert_eq!(run_keys(&mut q, &[3, 4, 2, 4]), vec![true, false, false, true]);
        assert_eq!(q.queues(), (vec![4], vec![], vec![3]));
    }
}
