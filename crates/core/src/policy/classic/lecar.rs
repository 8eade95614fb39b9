//! LeCaR: Learning Cache Replacement (Vietri et al., HotStorage'18). Two
//! experts, LRU and LFU, each propose a victim; one is chosen at random with
//! the experts' weights, and the evicted key goes into a history that
//! remembers which expert evicted it. A miss on a key in the history means
//! that expert was wrong: its weight is cut by `e^(-λ·d^t)` (then both are
//! normalised), where `t` is the number of accesses since the eviction.
//!
//! Paper defaults: learning rate `λ = 0.45`, discount `d = 0.005^(1/N)` for a
//! cache of `N` pages, a history of `N` keys, weights starting at ½ each. The
//! random draws come from a seeded ChaCha8 generator (`seed=`), so a run is
//! deterministic and two runs with the same seed are equal.
//!
//! - a hit moves the page to the LRU front and adds one to its frequency;
//! - LFU's victim is the page of least frequency that reached that frequency
//!   first; a page (re)entering the cache starts at frequency 1 (`lfu.rs`'s
//!   rule and its bucket chain, over the same nodes as the LRU list);
//! - the history is `N` keys: each expert has a FIFO of `⌊N/2⌋` keys it
//!   evicted; a key found there leaves it when it is accessed again;
//! - when both experts propose the same page it is evicted without a draw and
//!   without a history entry (neither expert can be blamed for it).
//!
//! The paper rewards the expert that was right (`w ← w·e^(λ·r)`), libCacheSim
//! penalises the one that was wrong (`w ← w·e^(−λ·r)`); after normalisation the
//! two are the same, and this file penalises.
//!
//! ## `variant=libcachesim`: libCacheSim's `LeCaR` (`LeCaR.c`)
//!
//! libCacheSim computes the discount from the cache size in **bytes**
//! (`0.005^(1/(N·4096))` with 4 KiB pages, so the regret hardly decays) and adds
//! `1e-10` to both weights at each update, and draws in steps of 1%
//! (`next_rand() % 100 / 100 < w_lru`); this variant does the same. Its draws
//! come from a process-global generator that cannot be seeded from outside (two
//! runs in one process differ), so miss counts cannot be matched run for run:
//! the agreement suite compares the mean miss count over seeds with libCacheSim's.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::lfu::{BucketStore, FreqChain};
use crate::list::{Arena, InVal, LinkStore, Links, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages).
const LCS_PAGE: f64 = 4096.0;

/// A tracked key: one node per key, on the LRU list or a history through the
/// node's own links, and (resident) on an LFU bucket through the links here,
/// so a hit looks the key up once for both experts.
#[derive(Clone, Copy, Debug)]
enum Meta {
    Resident {
        /// Its LFU bucket.
        bucket: u32,
        /// Links in that bucket's page list.
        lfu: Links,
    },
    /// In the history of the expert that evicted it (LRU's if `by_lru`),
    /// since `evicted_at` (in accesses).
    Ghost { by_lru: bool, evicted_at: u64 },
}

// Node = key + links + Meta: 32 bytes, two to a cache line.
const _: () = assert!(std::mem::size_of::<Meta>() == 16);

impl LinkStore<InVal> for Arena<Meta> {
    #[inline]
    fn links(&self, idx: u32) -> &Links {
        match self.val(idx) {
            Meta::Resident { lfu, .. } => lfu,
            Meta::Ghost { .. } => unreachable!("a ghost is in no LFU bucket"),
        }
    }
    #[inline]
    fn links_mut(&mut self, idx: u32) -> &mut Links {
        match self.val_mut(idx) {
            Meta::Resident { lfu, .. } => lfu,
            Meta::Ghost { .. } => unreachable!("a ghost is in no LFU bucket"),
        }
    }
}

impl BucketStore<InVal> for Arena<Meta> {
    #[inline]
    fn bucket(&self, idx: u32) -> u32 {
        match self.val(idx) {
            Meta::Resident { bucket, .. } => *bucket,
            Meta::Ghost { .. } => unreachable!("a ghost is in no LFU bucket"),
        }
    }
    #[inline]
    fn set_bucket(&mut self, idx: u32, b: u32) {
        if let Meta::Resident { bucket, .. } = self.val_mut(idx) {
            *bucket = b;
        }
    }
}

pub struct LeCaR {
    arena: Arena<Meta>,
    /// Resident pages, front = most recent.
    lru: List,
    /// Resident pages in LFU's order: `lfu.rs`'s bucket chain (its victim
    /// rule is the one above) over the same nodes.
    lfu: FreqChain<InVal>,
    /// Keys each expert evicted, front = newest.
    hist_lru: List,
    hist_lfu: List,
    /// Keys kept in each history.
    history_len: usize,
    /// libCacheSim's draws are whole percents.
    percent_draws: bool,
    capacity: usize,
    learning_rate: f64,
    discount: f64,
    /// libCacheSim adds 1e-10 to each weight at each update.
    epsilon: f64,
    w_lru: f64,
    rng: ChaCha8Rng,
    /// Accesses so far (the `t` of the regret).
    now: u64,
}

impl LeCaR {
    /// The paper's LeCaR over `capacity` pages (`d = 0.005^(1/capacity)`).
    pub fn new(capacity: usize, seed: u64) -> Self {
        let capacity = capacity.max(1);
        Self::with(capacity, seed, 0.005f64.powf(1.0 / capacity as f64), 0.0, false)
    }

    /// libCacheSim's: the discount from the size in bytes, and the epsilons.
    pub fn libcachesim(capacity: usize, seed: u64) -> Self {
        let capacity = capacity.max(1);
        Self::with(capacity, seed, 0.005f64.powf(1.0 / (capacity as f64 * LCS_PAGE)), 1e-10, true)
    }

    fn with(capacity: usize, seed: u64, discount: f64, epsilon: f64, percent_draws: bool) -> Self {
        LeCaR {
            arena: Arena::with_capacity(2 * capacity),
            lru: List::new(),
            lfu: FreqChain::default(),
            hist_lru: List::new(),
            hist_lfu: List::new(),
            history_len: capacity / 2,
            percent_draws,
            capacity,
            learning_rate: 0.45,
            discount,
            epsilon,
            w_lru: 0.5,
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: 0,
        }
    }

    /// LRU's weight (LFU's is `1 - w_lru`).
    pub fn w_lru(&self) -> f64 {
        self.w_lru
    }

    /// The expert that evicted a key `t` accesses ago was wrong: cut its weight.
    fn regret(&mut self, wrong_was_lru: bool, t: u64) {
        let r = self.discount.powf(t as f64);
        let (mut wrong, mut right) =
            if wrong_was_lru { (self.w_lru, 1.0 - self.w_lru) } else { (1.0 - self.w_lru, self.w_lru) };
        wrong = wrong * (-self.learning_rate * r).exp() + self.epsilon;
        let sum = wrong + right + 2.0 * self.epsilon;
        wrong /= sum;
        right = (right + self.epsilon) / sum;
        self.w_lru = if wrong_was_lru { wrong } else { right };
    }

    fn draw(&mut self) -> f64 {
        if self.percent_draws {
            self.rng.gen_range(0..100u32) as f64 / 100.0
        } else {
            self.rng.gen::<f64>()
        }
    }

    /// Evicts one page. Returns a node that left every list (the evicted page's
    /// or the history's oldest), still indexed under its old key: the caller
    /// gives it to the new page ([`Arena::rekey`]) rather than free it and
    /// take a node again.
    fn evict_one(&mut self, evicted: &mut Vec<u64>) -> Option<u32> {
        let lru_choice = self.lru.back().expect("evicting from an empty cache");
        let lfu_choice = self.lfu.least_frequent().expect("evicting from an empty cache");
        let (idx, by_lru) = if lru_choice == lfu_choice {
            (lru_choice, None)
        } else if self.draw() < self.w_lru {
            (lru_choice, Some(true))
        } else {
            (lfu_choice, Some(false))
        };
        self.lfu.leave(&mut self.arena, idx);
        self.lru.unlink(&mut self.arena, idx);
        evicted.push(self.arena.key(idx));
        let Some(by_lru) = by_lru.filter(|_| self.history_len > 0) else {
            return Some(idx);
        };
        *self.arena.val_mut(idx) = Meta::Ghost { by_lru, evicted_at: self.now };
        let history = if by_lru { &mut self.hist_lru } else { &mut self.hist_lfu };
        history.push_front(&mut self.arena, idx);
        if history.len() > self.history_len {
            return history.pop_back(&mut self.arena);
        }
        None
    }
}

impl Replacement for LeCaR {
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        self.now += 1;
        let Some(idx) = self.arena.find(a.key) else { return false };
        match *self.arena.val(idx) {
            Meta::Resident { .. } => {
                self.lru.move_to_front(&mut self.arena, idx);
                self.lfu.bump(&mut self.arena, idx);
                true
            }
            Meta::Ghost { by_lru, evicted_at } => {
                // The regret is taken on the access itself (libCacheSim does it
                // in its lookup), whether or not the page is then cached.
                self.regret(by_lru, self.now - evicted_at);
                if by_lru {
                    self.hist_lru.unlink(&mut self.arena, idx);
                } else {
                    self.hist_lfu.unlink(&mut self.arena, idx);
                }
                self.arena.remove(idx);
                false
            }
        }
    }

    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        debug_assert!(self.arena.find(a.key).is_none(), "insert of a tracked key");
        let mut spare = None;
        while self.lru.len() >= self.capacity {
            if let Some(old) = spare.take() {
                self.arena.remove(old);
            }
            spare = self.evict_one(evicted);
        }
        let bucket = self.lfu.one();
        let meta = Meta::Resident { bucket, lfu: Links::NONE };
        let idx = match spare {
            Some(idx) => {
                self.arena.rekey(idx, a.key, meta);
                idx
            }
            None => self.arena.insert(a.key, meta),
        };
        self.lru.push_front(&mut self.arena, idx);
        self.lfu.push(&mut self.arena, bucket, idx);
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        let Meta::Resident { .. } = self.arena.val(idx) else { return false };
        self.lfu.leave(&mut self.arena, idx);
        self.lru.unlink(&mut self.arena, idx);
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| matches!(self.arena.val(idx), Meta::Resident { .. }))
    }
    fn len(&self) -> usize {
        self.lru.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.hist_lru.len() + self.hist_lfu.len()
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<LeCaR, SpecError> {
    let seed = spec.uint("seed")?;
    Ok(match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => LeCaR::libcachesim(ctx.capacity, seed),
        _ => LeCaR::new(ctx.capacity, seed),
    })
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "lecar",
    about: "LeCaR: LRU and LFU experts chosen at random by regret-learned weights (Vietri et al.)",
    params: &[
        ParamInfo { name: "seed", default: "1", about: "seed of the random expert choice (runs are deterministic)" },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper (discount 0.005^(1/pages)) or libcachesim (discount from the size in bytes, as LeCaR.c)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{misses, run_keys};
    use crate::policy::Mode;

    fn zipfish(n: usize, universe: u64, seed: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| (rng.gen::<f64>().powi(3) * universe as f64) as u64).collect()
    }

    #[test]
    fn same_seed_same_run_other_seed_other_run() {
        let keys = zipfish(20_000, 500, 7);
        let run = |seed| {
            let mut c = LeCaR::new(50, seed);
            run_keys(&mut c, &keys)
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn lfu_victim_is_least_frequent_then_oldest() {
        // With all weight on LFU (w_lru = 0) the victim is always LFU's.
        let mut c = LeCaR::new(3, 1);
        c.w_lru = 0.0;
        // 1 (x3), 2 (x2), 3 (x1): 4 evicts 3; 5 evicts 4 (freq 1, newest-but-only).
        let hits = run_keys(&mut c, &[1, 1, 1, 2, 2, 3, 4, 5, 2, 1]);
        assert_eq!(hits, vec![false, true, true, false, true, false, false, false, true, true]);
        assert!(!c.contains(3) && !c.contains(4) && c.contains(5));
        // Both went to LFU's history, which keeps ⌊3/2⌋ = 1 key.
        assert_eq!(c.hist_lfu.keys(&c.arena), vec![4]);
        // With all weight on LRU the victim is the least recent.
        let mut c = LeCaR::new(3, 1);
        c.w_lru = 1.0;
        run_keys(&mut c, &[1, 1, 1, 2, 3, 1, 4]);
        assert!(!c.contains(2) && c.contains(1) && c.contains(3) && c.contains(4));
    }

    #[test]
    fn regret_moves_weight_away_from_the_wrong_expert() {
        let mut c = LeCaR::new(2, 1);
        c.w_lru = 1.0 - 1e-9; // LRU evicts (almost surely)
                              // 3 evicts: LRU proposes 1, LFU proposes 2 (1 was hit): LRU's 1 goes.
        run_keys(&mut c, &[1, 1, 2, 3]);
        assert_eq!(c.hist_lru.keys(&c.arena), vec![1]);
        c.w_lru = 0.5;
        run_keys(&mut c, &[1]); // 1 came back: LRU was wrong, t = 1
        let r = c.discount.powf(1.0);
        let wrong = 0.5 * (-0.45 * r).exp();
        assert!((c.w_lru() - wrong / (wrong + 0.5)).abs() < 1e-12, "{}", c.w_lru());
        // A history hit leaves the history (and 1's insertion evicted 2, which
        // both experts proposed: no history entry).
        assert_eq!(c.ghosts(), 0);
    }

    #[test]
    fn histories_hold_half_the_capacity_each() {
        let mut c = LeCaR::new(4, 9);
        // 1 and 2 frequent but not recent: LRU and LFU disagree on victims.
        let cycles = (0..300).flat_map(|i| [1, 2, 1000 + 3 * i, 1001 + 3 * i, 1002 + 3 * i]);
        let keys: Vec<u64> = [1, 2, 1, 2].into_iter().chain(cycles).collect();
        run_keys(&mut c, &keys);
        assert!(c.hist_lru.len() <= 2 && c.hist_lfu.len() <= 2);
        assert!(c.ghosts() > 0, "{} {} {}", c.hist_lru.len(), c.hist_lfu.len(), c.w_lru);
        // Same-choice evictions leave no history: a pure scan has LRU = LFU.
        let mut c = LeCaR::new(4, 9);
        run_keys(&mut c, &(0..100).collect::<Vec<u64>>());
        assert_eq!((c.len(), c.ghosts()), (4, 0));
    }

    #[test]
    fn params_and_modes() {
        let ctx = BuildCtx { capacity: 16, mode: Mode::WriteBack, page_bytes: 4096 };
        for bad in ["lecar(seed=-1)", "lecar(seed=x)", "lecar(variant=v2)", "lecar(lr=1)"] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
        let keys = zipfish(5_000, 100, 3);
        let (mut a, _) = build_spec("lecar(seed=5)", &ctx).unwrap();
        let (mut b, _) = build_spec("lecar(seed=5)", &ctx).unwrap();
        assert_eq!(misses(a.as_mut(), &keys), misses(b.as_mut(), &keys));
        assert!(build_spec("lecar(variant=libcachesim)", &ctx).is_ok());
    }
}
