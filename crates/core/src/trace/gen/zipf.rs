//! Zipf keys: rank k in 1..=n with P(k) = k^-alpha / Σ_{j=1..n} j^-alpha, mapped to keys
//! through a seeded permutation.
//!
//! Up to [`TABLE_MAX_KEYS`] keys, ranks come from an alias table (Vose): one uniform index
//! and one coin per draw, 12 bytes per key. `rand_distr::Zipf` (0.4) samples the same law
//! exactly with no table (rejection from a continuous envelope: integer k owns [k-1, k) of
//! it and is accepted with probability k^-s over the envelope's density there), but its
//! three `powf` per draw make it ~3x slower (10M draws over 1M keys: 1.8 s against 0.5 s),
//! so it only serves key spaces too large for a table.

use super::spec::Params;
use super::{GenError, Rng};
use rand::Rng as _;
use rand_distr::Distribution;

/// Largest key space sampled through a table (192 MiB at this size).
const TABLE_MAX_KEYS: u64 = 1 << 24;

pub(super) struct ZipfKeys {
    ranks: Ranks,
    perm: Option<Permutation>,
}

/// Draws ranks 0..n (rank k+1 of the law).
pub(super) enum Ranks {
    Table(Alias),
    Rejection { dist: rand_distr::Zipf<f64>, n: u64 },
}

impl Ranks {
    pub fn new(n: u64, alpha: f64) -> Ranks {
        if n <= TABLE_MAX_KEYS {
            Ranks::Table(Alias::new((1..=n).map(|k| (k as f64).powf(-alpha)).collect()))
        } else {
            Ranks::Rejection { dist: rand_distr::Zipf::new(n, alpha).expect("n >= 1, alpha >= 0"), n }
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Ranks::Table(t) => t.sample(rng),
            // ranks are 1..=n; float rounding could give n+1 at the very edge
            Ranks::Rejection { dist, n } => (dist.sample(rng) as u64).clamp(1, *n) - 1,
        }
    }
}

/// Walker's alias method (Vose's construction): index i with probability w_i / Σw.
pub(super) struct Alias {
    /// Keep index i with this probability, else take `alias[i]`.
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl Alias {
    pub fn new(weights: Vec<f64>) -> Alias {
        let n = weights.len();
        assert!(n > 0 && n <= u32::MAX as usize);
        let total: f64 = weights.iter().sum();
        // scaled so the mean is 1: below 1 a column has room for an alias
        let mut prob: Vec<f64> = weights.into_iter().map(|w| w * n as f64 / total).collect();
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) = (0..n as u32).partition(|&i| prob[i as usize] < 1.0);
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            alias[s as usize] = l;
            prob[l as usize] -= 1.0 - prob[s as usize];
            if prob[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // what is left is 1 up to rounding
        for i in small.into_iter().chain(large) {
            prob[i as usize] = 1.0;
        }
        Alias { prob, alias }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let i = rng.gen_range(0..self.prob.len());
        if rng.gen::<f64>() < self.prob[i] {
            i as u64
        } else {
            self.alias[i] as u64
        }
    }
}

impl ZipfKeys {
    pub fn build(p: &Params, keys: u64, rng: &mut Rng) -> Result<ZipfKeys, GenError> {
        let alpha = p.float("alpha")?;
        if alpha < 0.0 {
            return Err(p.bad("alpha", "must be 0 or more (0 is uniform)"));
        }
        if keys > 1 << 53 {
            return Err(p.bad("keys", "at most 2^53 keys (ranks are exact in f64 only that far)"));
        }
        let perm = p.boolean("permute")?.then(|| Permutation::new(keys, rng));
        Ok(ZipfKeys { ranks: Ranks::new(keys, alpha), perm })
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let rank = self.ranks.sample(rng);
        match &self.perm {
            Some(p) => p.apply(rank),
            None => rank,
        }
    }
}

/// A pseudo-random bijection of `0..n` without a table: a 4-round Feistel network on the
/// smallest even-bit power of two ≥ n, walking the cycle until the value falls inside
/// `0..n` (fewer than 4 steps on average since that power is < 4n).
pub(super) struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    round_keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, rng: &mut Rng) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let mask = if half >= 64 { u64::MAX } else { (1u64 << half) - 1 };
        Permutation { n, half, mask, round_keys: rng.gen() }
    }

    fn feistel(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for k in self.round_keys {
            let f = splitmix(r ^ k) & self.mask;
            (l, r) = (r, l ^ f);
        }
        l << self.half | r
    }

    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        debug_assert!(x < self.n);
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// The splitmix64 finalizer: a fast, well-mixing 64-bit hash.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
