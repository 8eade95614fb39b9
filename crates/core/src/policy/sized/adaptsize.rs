//! AdaptSize admission (Berger, Sitaraman, Harchol-Balter, NSDI'17) in front
//! of a size-aware rule: a missed object of `s` bytes is admitted with
//! probability `e^(-s/c)`, so small objects almost always enter and large
//! ones rarely, and `c` is retuned every `interval` requests to the value a
//! model of the cache predicts gives the highest object hit ratio.
//!
//! The model (the paper's, solved here directly rather than by its Padé
//! approximation): each object `i` seen recently has a request rate `λ_i`
//! (per request; an exponentially weighted mean over intervals, old rates
//! weighing 0.3) and a size `s_i`. With admission probability `p_i = e^(-s_i/c)`
//! and the cache's characteristic time `T`, the chance that `i` is cached is
//! `h_i = p_i (e^(λ_i T) - 1) / (1 + p_i (e^(λ_i T) - 1))`; `T` is the time at
//! which the expected bytes cached `Σ s_i h_i` fill the capacity (found by
//! bisection, and at most one interval: see [`HORIZON`]), and the predicted hit ratio is `Σ λ_i h_i / Σ λ_i`. `c` is
//! searched by golden section over `log2 c` from 1 byte to 4× the capacity.
//! Objects whose rate has decayed below 0.1 requests per interval are
//! forgotten. Draws come from a generator seeded by `seed`, so runs repeat;
//! libCacheSim's AdaptSize draws from its own generator, so the two agree in
//! distribution, not miss for miss.

use super::SizedPolicy;
use crate::spec::ParamInfo;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The parameters `adaptsize(...)` takes (the registry builds it: `rule=` names a size-aware rule).
pub const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "rule", default: "lru", about: "the size-aware rule behind the admission" },
    ParamInfo { name: "interval", default: "500000", about: "requests between retunings of c (the paper's 500k)" },
    ParamInfo { name: "c", default: "32768", about: "c, in bytes, until the first retuning" },
    ParamInfo { name: "seed", default: "1", about: "seed of the admission draws" },
];

/// Weight of the old rates in each interval's update.
const DECAY: f64 = 0.3;
/// How far the model looks ahead, in intervals: the characteristic time is
/// capped there. Rates measured over an interval say nothing of longer stays,
/// and an uncapped time lets every admitted object count as cached: on the
/// CDN sample (10 MiB, retuning every 10k requests) an uncapped model picks
/// c ≈ 60 B and misses 80 % of requests where LRU misses 74.5 %; capped at one
/// interval it picks c of a few KB and misses 71 %.
const HORIZON: f64 = 1.0;
/// Rates below this (requests per interval) are forgotten.
const FORGET: f64 = 0.1;

pub struct AdaptSize {
    rule: Box<dyn SizedPolicy>,
    capacity: u64,
    /// The admission parameter, in bytes.
    c: f64,
    interval: u64,
    seen: u64,
    /// Requests per object in the current interval, with its size.
    counts: hashbrown::HashMap<u64, (f64, u64)>,
    /// Weighted request rates per interval, with sizes.
    rates: hashbrown::HashMap<u64, (f64, u64)>,
    rng: ChaCha8Rng,
    declined: u64,
}

impl AdaptSize {
    pub fn new(rule: Box<dyn SizedPolicy>, capacity: u64, interval: u64, c: f64, seed: u64) -> Self {
        AdaptSize {
            rule,
            capacity,
            c,
            interval: interval.max(1),
            seen: 0,
            counts: hashbrown::HashMap::new(),
            rates: hashbrown::HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            declined: 0,
        }
    }

    /// The admission parameter now (for tests and reports).
    pub fn c(&self) -> f64 {
        self.c
    }

    /// Folds the interval's counts into the rates and retunes `c`.
    fn retune(&mut self) {
        for (rate, _) in self.rates.values_mut() {
            *rate *= DECAY;
        }
        for (key, (count, size)) in self.counts.drain() {
            let entry = self.rates.entry(key).or_insert((0.0, size));
            entry.0 += (1.0 - DECAY) * count;
            entry.1 = size;
        }
        self.rates.retain(|_, (rate, _)| *rate >= FORGET);
        let objects: Vec<(f64, f64)> =
            self.rates.values().map(|&(rate, size)| (rate / self.interval as f64, size as f64)).collect();
        if let Some(c) = best_c(&objects, self.capacity as f64, self.interval as f64 * HORIZON) {
            self.c = c;
        }
    }
}

/// The predicted object hit ratio with admission parameter `c` (objects: (rate, size)).
fn hit_ratio(objects: &[(f64, f64)], capacity: f64, c: f64, horizon: f64) -> f64 {
    let cached = |t: f64| -> (f64, f64) {
        let (mut bytes, mut hits) = (0.0, 0.0);
        for &(rate, size) in objects {
            let p = (-size / c).exp();
            let grow = (rate * t).min(700.0).exp_m1();
            let h = p * grow / (1.0 + p * grow);
            bytes += size * h;
            hits += rate * h;
        }
        (bytes, hits)
    };
    let total_rate: f64 = objects.iter().map(|o| o.0).sum();
    // T: where the expected bytes cached reach the capacity (or everything is cached)
    let mut hi = 1.0;
    while cached(hi).0 < capacity && hi < horizon {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..50 {
        let mid = (lo + hi) / 2.0;
        if cached(mid).0 < capacity {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    cached(lo).1 / total_rate
}

/// `c` maximising the predicted hit ratio, by golden-section search on `log2 c`.
fn best_c(objects: &[(f64, f64)], capacity: f64, horizon: f64) -> Option<f64> {
    if objects.is_empty() {
        return None;
    }
    if objects.iter().map(|o| o.1).sum::<f64>() <= capacity {
        // (everything fits: every c predicts the same, so admit all but the outsized)
        return Some(4.0 * capacity);
    }
    let f = |x: f64| -hit_ratio(objects, capacity, x.exp2(), horizon);
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (0.0, (4.0 * capacity).log2());
    let (mut x1, mut x2) = (b - ratio * (b - a), a + ratio * (b - a));
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..24 {
        if f1 <= f2 {
            b = x2;
            (x2, f2) = (x1, f1);
            x1 = b - ratio * (b - a);
            f1 = f(x1);
        } else {
            a = x1;
            (x1, f1) = (x2, f2);
            x2 = a + ratio * (b - a);
            f2 = f(x2);
        }
    }
    Some(((a + b) / 2.0).exp2())
}

impl SizedPolicy for AdaptSize {
    fn lookup(&mut self, key: u64, size: u64) -> bool {
        let count = self.counts.entry(key).or_insert((0.0, size));
        count.0 += 1.0;
        count.1 = size;
        self.seen += 1;
        if self.seen.is_multiple_of(self.interval) {
            self.retune();
        }
        self.rule.lookup(key, size)
    }
    fn insert(&mut self, key: u64, size: u64) -> bool {
        let admit = self.rng.gen::<f64>() < (-(size as f64) / self.c).exp();
        if !admit {
            self.declined += 1;
            return false;
        }
        self.rule.insert(key, size)
    }
    fn remove(&mut self, key: u64) -> bool {
        self.rule.remove(key)
    }
    fn used_bytes(&self) -> u64 {
        self.rule.used_bytes()
    }
    fn len(&self) -> usize {
        self.rule.len()
    }
    fn evictions(&self) -> u64 {
        self.rule.evictions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::sized::lru::SizedLru;

    #[test]
    fn small_objects_enter_large_ones_rarely() {
        let mut a = AdaptSize::new(Box::new(SizedLru::new(1 << 30, true)), 1 << 30, u64::MAX, 1000.0, 7);
        let small = (0..1000).filter(|&k| a.insert(k, 10)).count();
        let large = (1000..2000).filter(|&k| a.insert(k, 10_000)).count();
        assert!(small > 980 && large < 5, "{small} {large}");
    }

    #[test]
    fn the_model_prefers_small_popular_objects() {
        // 100 small objects requested often, 100 large ones requested once in a while,
        // a cache for the small ones only: c must fall below the large size
        let mut objects: Vec<(f64, f64)> = (0..100).map(|_| (0.005, 1_000.0)).collect();
        objects.extend((0..100).map(|_| (0.0005, 1_000_000.0)));
        let c = best_c(&objects, 200_000.0, 1e9).unwrap();
        assert!(c < 1_000_000.0 / 4.0, "c = {c}");
        // a cache that holds everything admits everything
        let c = best_c(&objects, 1e12, 1e9).unwrap();
        assert!(c > 1e10, "c = {c}");
        // and the retuning runs on a trace
        let mut a = AdaptSize::new(Box::new(SizedLru::new(200_000, true)), 200_000, 1000, 32768.0, 1);
        for i in 0..20_000u64 {
            let (key, size) = if i % 10 == 0 { (1000 + i % 1000, 1_000_000) } else { (i % 100, 1_000) };
            if !a.lookup(key, size) && size <= 200_000 {
                a.insert(key, size);
            }
        }
        assert!(a.c() < 250_000.0, "c = {}", a.c());
    }
}
