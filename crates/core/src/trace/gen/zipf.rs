//! Zipf keys: rank k in 1..=n with P(k) = k^-alpha / Σ_{j=1..n} j^-alpha, mapped to keys
//! through a seeded permutation.
//!
//! `rand_distr::Zipf` (0.4) samples this exactly by rejection from a continuous envelope
//! (each integer k owns [k-1, k) of the envelope, accepted with probability k^-s over the
//! envelope's density there), in O(1) time and memory; acceptance is above 90 % for the
//! usual alphas, so it beats a CDF table + binary search and needs no table.

use super::spec::Params;
use super::{GenError, Rng};
use rand::Rng as _;
use rand_distr::Distribution;

pub(super) struct ZipfKeys {
    dist: rand_distr::Zipf<f64>,
    keys: u64,
    perm: Option<Permutation>,
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
        let dist = rand_distr::Zipf::new(keys, alpha).map_err(|e| p.bad("alpha", e.to_string()))?;
        let perm = p.boolean("permute")?.then(|| Permutation::new(keys, rng));
        Ok(ZipfKeys { dist, keys, perm })
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        // ranks are 1..=n; float rounding could give n+1 at the very edge
        let rank = (self.dist.sample(rng) as u64).clamp(1, self.keys);
        match &self.perm {
            Some(p) => p.apply(rank - 1),
            None => rank - 1,
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
