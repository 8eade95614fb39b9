//! W-TinyLFU (Einziger, Friedman & Manes, ACM TOS'17): a small window LRU in
//! front of a segmented-LRU main cache, with TinyLFU admission between them.
//!
//! - every miss enters the window (1% of the capacity, at least one page);
//! - when the window overflows, its LRU page is the *candidate*: while the
//!   cache is not full it moves into the main cache's probation segment;
//!   otherwise it is compared with the main cache's victim (the probation
//!   LRU page, or protected's if probation is empty) and enters main, evicting
//!   the victim, only if its estimated frequency is strictly higher; else it leaves;
//! - main is an SLRU: 80% protected, 20% probation; a hit in probation moves
//!   the page to protected, whose overflow goes back to the probation front;
//! - the frequency estimate is a count-min sketch (4 rows of 4-bit counters,
//!   width the next power of two ≥ the capacity) behind a doorkeeper bloom
//!   filter: an access first sets the key's doorkeeper bits, and only once it
//!   is there increments the sketch; the estimate adds one for a doorkeeper
//!   hit. Every access counts as a sample; after `10 × capacity` samples all
//!   counters are halved, the doorkeeper is cleared and the sample count halved.
//!
//! The sketch and doorkeeper hash keys with fixed seeds, so runs are deterministic.
//!
//! ## `variant=libcachesim`: libCacheSim's `WTinyLFU` (`WTinyLFU.c`, `SLRU.c`)
//!
//! Miss counts equal libCacheSim's for unit-size objects (4 KiB pages) on the
//! agreement suite. Its departures from the paper, kept here:
//! - sizes are worked out in bytes and truncated: the window gets
//!   `trunc(C·4096·1%)` bytes, so **nothing is cached below 100 pages** (it
//!   refuses objects larger than the window); main gets the rest, split 1:4 into
//!   probation and protected (`trunc` of each share);
//! - the window is not bounded on its own: misses enter it until the whole
//!   cache is full, and only then does the window give up candidates (moving
//!   them to main while main has room, so the window shrinks to its share);
//! - a page moved into main goes to the lowest segment with room (so probation,
//!   then protected while the cache first fills);
//! - a hit in protected's overflow demotes to probation, and probation's
//!   overflow there is evicted from the cache;
//! - frequencies count a miss's insertion, each hit in main (not in the
//!   window), and each time a window page is considered for main; no doorkeeper,
//!   no 4-bit cap, and counters are halved only after `32 × main bytes` hits in
//!   main. libCacheSim keeps them in a counting bloom filter sized for 0.1%
//!   false positives; this variant keeps exact counts (a key's count lives as
//!   long as the run).

use hashbrown::HashMap;

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::sketch::Sketch;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages).
const LCS_PAGE: u64 = 4096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Seg {
    Window,
    Probation,
    Protected,
}

/// libCacheSim's frequency: exact counts (see the module doc).
struct Counts {
    counts: HashMap<u64, u32>,
    main_hits: u64,
    decay_after: u64,
}

impl Counts {
    fn add(&mut self, key: u64) {
        *self.counts.entry(key).or_insert(0) += 1;
    }
    fn get(&self, key: u64) -> u32 {
        self.counts.get(&key).copied().unwrap_or(0)
    }
    fn main_hit(&mut self, key: u64) {
        self.add(key);
        self.main_hits += 1;
        if self.main_hits >= self.decay_after {
            self.main_hits = 0;
            self.counts.retain(|_, c| {
                *c >>= 1;
                *c > 0
            });
        }
    }
}

enum Freq {
    Paper(Sketch),
    Lcs(Counts),
}

/// Segment sizes in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub window: usize,
    pub main: usize,
    pub probation: usize,
    pub protected: usize,
    /// libCacheSim caches nothing when the window or probation cannot hold a page.
    pub admit: bool,
}

impl Sizes {
    pub fn paper(capacity: usize, window: f64, protected: f64) -> Sizes {
        let capacity = capacity.max(1);
        let w = ((capacity as f64 * window).round() as usize).clamp(1, capacity);
        let main = capacity - w;
        let prot = (main as f64 * protected) as usize;
        Sizes { window: w, main, probation: main - prot, protected: prot, admit: true }
    }

    /// libCacheSim's byte arithmetic, for 4 KiB objects, back in whole pages.
    pub fn libcachesim(capacity: usize, window: f64) -> Sizes {
        let total = capacity.max(1) as u64 * LCS_PAGE;
        let w = (total as f64 * window) as u64;
        let main = total - w;
        let prob = (0.2 * main as f64) as u64;
        let prot = (0.8 * main as f64) as u64;
        let pages = |b: u64| (b / LCS_PAGE) as usize;
        Sizes {
            window: pages(w),
            main: pages(main),
            probation: pages(prob),
            protected: pages(prot),
            admit: w >= LCS_PAGE && prob >= LCS_PAGE,
        }
    }
}

pub struct WTinyLfu {
    arena: Arena<()>,
    /// Segment of the key in arena node `i`.
    seg: Vec<Seg>,
    /// Front = most recent.
    window: List,
    probation: List,
    protected: List,
    capacity: usize,
    sizes: Sizes,
    freq: Freq,
}

impl WTinyLfu {
    pub fn paper(capacity: usize, window: f64, protected: f64) -> Self {
        let capacity = capacity.max(1);
        Self::with(capacity, Sizes::paper(capacity, window, protected), Freq::Paper(Sketch::new(capacity)))
    }

    pub fn libcachesim(capacity: usize, window: f64) -> Self {
        let capacity = capacity.max(1);
        let sizes = Sizes::libcachesim(capacity, window);
        let total = capacity as u64 * LCS_PAGE;
        let main_bytes = total - (total as f64 * window) as u64;
        let counts = Counts { counts: HashMap::new(), main_hits: 0, decay_after: 32 * main_bytes.max(1) };
        Self::with(capacity, sizes, Freq::Lcs(counts))
    }

    fn with(capacity: usize, sizes: Sizes, freq: Freq) -> Self {
        WTinyLfu {
            arena: Arena::with_capacity(capacity),
            seg: upfront(capacity),
            window: List::new(),
            probation: List::new(),
            protected: List::new(),
            capacity,
            sizes,
            freq,
        }
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    fn main_len(&self) -> usize {
        self.probation.len() + self.protected.len()
    }

    fn list(&mut self, s: Seg) -> &mut List {
        match s {
            Seg::Window => &mut self.window,
            Seg::Probation => &mut self.probation,
            Seg::Protected => &mut self.protected,
        }
    }

    fn put(&mut self, idx: u32, s: Seg) {
        self.seg[idx as usize] = s;
        let (arena, list) = match s {
            Seg::Window => (&mut self.arena, &mut self.window),
            Seg::Probation => (&mut self.arena, &mut self.probation),
            Seg::Protected => (&mut self.arena, &mut self.protected),
        };
        list.push_front(arena, idx);
    }

    fn take(&mut self, idx: u32) {
        let s = self.seg[idx as usize];
        let mut l = std::mem::take(self.list(s));
        l.unlink(&mut self.arena, idx);
        *self.list(s) = l;
    }

    fn drop_page(&mut self, idx: u32, evicted: &mut Vec<u64>) {
        self.take(idx);
        evicted.push(self.arena.remove(idx));
    }

    /// Main's victim: probation's LRU page, else protected's.
    fn main_victim(&self) -> Option<u32> {
        self.probation.back().or_else(|| self.protected.back())
    }

    /// Keys in each segment, front to back (for tests).
    pub fn segments(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        (self.window.keys(&self.arena), self.probation.keys(&self.arena), self.protected.keys(&self.arena))
    }

    // ---- the paper's algorithm ----

    fn paper_hit(&mut self, idx: u32) {
        match self.seg[idx as usize] {
            Seg::Window => self.window.move_to_front(&mut self.arena, idx),
            Seg::Protected => self.protected.move_to_front(&mut self.arena, idx),
            Seg::Probation => {
                self.take(idx);
                self.put(idx, Seg::Protected);
                if self.protected.len() > self.sizes.protected {
                    let demoted = self.protected.pop_back(&mut self.arena).expect("protected is not empty");
                    self.put(demoted, Seg::Probation);
                }
            }
        }
    }

    fn paper_insert(&mut self, idx: u32, evicted: &mut Vec<u64>) {
        self.put(idx, Seg::Window);
        if self.window.len() <= self.sizes.window {
            return;
        }
        let cand = self.window.back().expect("window is not empty");
        if self.window.len() + self.main_len() <= self.capacity {
            // Room in main: no contest.
            self.take(cand);
            self.put(cand, Seg::Probation);
            return;
        }
        let Freq::Paper(sketch) = &self.freq else { unreachable!("paper insert with libCacheSim counts") };
        match self.main_victim() {
            Some(victim) if sketch.estimate(self.arena.key(cand)) > sketch.estimate(self.arena.key(victim)) => {
                self.drop_page(victim, evicted);
                self.take(cand);
                self.put(cand, Seg::Probation);
            }
            _ => self.drop_page(cand, evicted),
        }
    }

    // ---- libCacheSim's ----

    /// SLRU insert: the lowest segment with room, else probation.
    fn lcs_main_insert(&mut self, idx: u32) {
        if self.probation.len() < self.sizes.probation {
            self.put(idx, Seg::Probation);
        } else if self.protected.len() < self.sizes.protected {
            self.put(idx, Seg::Protected);
        } else {
            self.put(idx, Seg::Probation);
        }
    }

    fn lcs_hit(&mut self, idx: u32, evicted: &mut Vec<u64>) {
        let key = self.arena.key(idx);
        match self.seg[idx as usize] {
            Seg::Window => {
                self.window.move_to_front(&mut self.arena, idx);
                return;
            }
            Seg::Protected => self.protected.move_to_front(&mut self.arena, idx),
            Seg::Probation => {
                self.take(idx);
                self.put(idx, Seg::Protected);
                while self.protected.len() > self.sizes.protected {
                    let demoted = self.protected.pop_back(&mut self.arena).expect("protected is not empty");
                    self.put(demoted, Seg::Probation);
                    while self.probation.len() > self.sizes.probation {
                        let victim = self.main_victim().expect("main is not empty");
                        self.drop_page(victim, evicted);
                    }
                }
            }
        }
        if let Freq::Lcs(c) = &mut self.freq {
            c.main_hit(key);
        }
    }

    /// One round of libCacheSim's `WTinyLFU_evict`: frees one page.
    fn lcs_evict(&mut self, evicted: &mut Vec<u64>) {
        loop {
            let Some(cand) = self.window.back() else {
                let victim = self.main_victim().expect("evicting from an empty cache");
                self.drop_page(victim, evicted);
                return;
            };
            let key = self.arena.key(cand);
            let Freq::Lcs(counts) = &self.freq else { unreachable!("libCacheSim evict with a sketch") };
            let done = if self.main_len() < self.sizes.main {
                self.take(cand);
                self.lcs_main_insert(cand);
                false
            } else {
                let victim = self.main_victim().expect("main is full");
                if counts.get(key) > counts.get(self.arena.key(victim)) {
                    self.drop_page(victim, evicted);
                    self.take(cand);
                    self.lcs_main_insert(cand);
                } else {
                    self.drop_page(cand, evicted);
                }
                true
            };
            if let Freq::Lcs(c) = &mut self.freq {
                c.add(key);
            }
            if done {
                return;
            }
        }
    }
}

impl Replacement for WTinyLfu {
    fn touch(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if let Freq::Paper(s) = &mut self.freq {
            s.record(a.key);
        }
        let Some(idx) = self.arena.find(a.key) else { return false };
        match self.freq {
            Freq::Paper(_) => self.paper_hit(idx),
            Freq::Lcs(_) => self.lcs_hit(idx, evicted),
        }
        true
    }

    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if !self.sizes.admit {
            return false;
        }
        if matches!(self.freq, Freq::Lcs(_)) {
            while self.window.len() + self.main_len() >= self.capacity {
                self.lcs_evict(evicted);
            }
        }
        let idx = self.arena.insert(a.key, ());
        cover(&mut self.seg, idx as usize, self.arena.limit(), Seg::Window);
        match &mut self.freq {
            Freq::Paper(sketch) => {
                sketch.ensure(self.window.len() + self.probation.len() + self.protected.len() + 1);
                self.paper_insert(idx, evicted)
            }
            Freq::Lcs(c) => {
                c.add(a.key);
                self.put(idx, Seg::Window);
            }
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        self.take(idx);
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }
    fn len(&self) -> usize {
        self.window.len() + self.main_len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<WTinyLfu, SpecError> {
    let window = spec.ratio("window")?;
    if window >= 1.0 {
        return Err(spec.invalid("window", "must be below 100% (the main cache needs room)"));
    }
    let protected = spec.ratio("protected")?;
    Ok(match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => {
            if spec.is_given("protected") {
                return Err(spec.invalid("protected", "libCacheSim's main SLRU is fixed at 1:4"));
            }
            WTinyLfu::libcachesim(ctx.capacity, window)
        }
        _ => WTinyLfu::paper(ctx.capacity, window, protected),
    })
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "wtinylfu",
    about: "W-TinyLFU: window LRU + SLRU main, count-min sketch admission (Einziger et al.)",
    params: &[
        ParamInfo { name: "window", default: "1%", about: "window LRU share of the capacity" },
        ParamInfo {
            name: "protected",
            default: "80%",
            about: "protected share of the main SLRU (the rest is probation)",
        },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper or libcachesim (WTinyLFU.c: byte-rounded sizes, nothing cached under 100 pages, \
                    exact counts)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::Mode;

    #[test]
    fn sizes() {
        assert_eq!(
            Sizes::paper(1000, 0.01, 0.8),
            Sizes { window: 10, main: 990, probation: 198, protected: 792, admit: true }
        );
        assert_eq!(Sizes::paper(1, 0.01, 0.8).window, 1);
        let l = Sizes::libcachesim(200, 0.01);
        // window 8192 bytes, main 811008: probation 162201 (39.6 pages), protected 648806 (158.4)
        assert_eq!((l.window, l.main, l.probation, l.protected, l.admit), (2, 198, 39, 158, true));
        assert!(!Sizes::libcachesim(99, 0.01).admit);
        assert!(Sizes::libcachesim(100, 0.01).admit);
    }

    #[test]
    fn frequent_pages_survive_a_scan() {
        // 100 pages: window 1, probation 20, protected 79.
        let mut c = WTinyLfu::paper(100, 0.01, 0.8);
        let hot: Vec<u64> = (0..50).collect();
        for _ in 0..4 {
            run_keys(&mut c, &hot);
        }
        let scan: Vec<u64> = (1000..1500).collect(); // 700 samples: no aging yet
        run_keys(&mut c, &scan);
        let hits = run_keys(&mut c, &hot).iter().filter(|&&h| h).count();
        assert_eq!(hits, 50, "a one-pass scan does not get past the admission filter");
        let mut lru = crate::policy::classic::lru::Lru::new(100);
        for _ in 0..4 {
            run_keys(&mut lru, &hot);
        }
        run_keys(&mut lru, &scan);
        assert_eq!(run_keys(&mut lru, &hot).iter().filter(|&&h| h).count(), 0);
    }

    #[test]
    fn by_hand_paper() {
        // 10 pages: window 1 (10% -> 1), main 9: protected 7, probation 2.
        let mut c = WTinyLfu::paper(10, 0.1, 0.8);
        let keys: Vec<u64> = (1..=10).collect();
        run_keys(&mut c, &keys);
        // the cache filled: 10 in the window, 1..9 moved to probation in turn
        let (w, prob, prot) = c.segments();
        assert_eq!((w, prot.len()), (vec![10], 0));
        assert_eq!(prob, (1..=9).rev().collect::<Vec<_>>());
        // a hit in probation moves to protected
        run_keys(&mut c, &[3]);
        assert_eq!(c.segments().2, vec![3]);
        // 11: candidate 10 (seen once) vs victim 1 (seen once): not higher, 10 leaves
        run_keys(&mut c, &[11]);
        assert!(!c.contains(10) && c.contains(1));
        // 2 accessed often, 12 once: make 11's candidate lose again
        run_keys(&mut c, &[11, 11, 11, 12]);
        // 11 was hit in the window three times: candidate 11 beats victim 1
        assert!(c.contains(11) && !c.contains(1) && c.contains(12));
    }

    #[test]
    fn by_hand_libcachesim() {
        // 100 pages: window 1 page (4096 bytes), main 99 pages: probation 19, protected 79.
        let mut c = WTinyLfu::libcachesim(100, 0.01);
        assert_eq!((c.sizes.window, c.sizes.probation, c.sizes.protected), (1, 19, 79));
        let keys: Vec<u64> = (1..=100).collect();
        run_keys(&mut c, &keys);
        // nothing left the window before the cache was full
        assert_eq!(c.segments().0.len(), 100);
        // 101: the window gives 1..19 to probation, 20..98 to protected, 99 to
        // probation (overflowing it), then 100 (counted once) is compared with
        // probation's LRU page 1 (counted at its miss and its move): 100 leaves.
        run_keys(&mut c, &[101]);
        let (w, prob, prot) = c.segments();
        assert_eq!(w, vec![101]);
        assert_eq!(prot.len(), 79);
        assert_eq!(prob.len(), 20);
        assert!(!c.contains(100));
        // every capacity under 100 pages caches nothing
        let mut small = WTinyLfu::libcachesim(99, 0.01);
        assert_eq!(run_keys(&mut small, &[1, 1, 1]), vec![false; 3]);
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 100, mode: Mode::WriteBack, page_bytes: 4096 };
        for bad in [
            "wtinylfu(window=100%)",
            "wtinylfu(window=2)",
            "wtinylfu(protected=120%)",
            "wtinylfu(variant=x)",
            "wtinylfu(variant=libcachesim,protected=50%)",
        ] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
        for capacity in 1..=5 {
            let tiny = BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 };
            for ok in ["wtinylfu", "wtinylfu(variant=libcachesim)", "wtinylfu(window=0,protected=0)"] {
                assert!(build_spec(ok, &tiny).is_ok(), "{ok} at {capacity}");
            }
        }
    }
}
