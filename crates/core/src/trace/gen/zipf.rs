//! Zipf keys: rank k in 1..=n with P(k) = k^-alpha / Σ_{j=1..n} j^-alpha, rank k being key
//! π(k-1) for a seeded permutation π (or key k-1 without one).
//!
//! Up to [`TABLE_MAX_KEYS`] keys, keys come from an alias table (Vose) built over the keys
//! themselves, so the permutation costs nothing per draw: one uniform column and one coin,
//! 8 bytes per key. Each column's split is kept to 32 bits, so a key's probability is off by
//! at most 2^-32 of 1/n, far below anything a simulation can see.
//!
//! `rand_distr::Zipf` (0.4) samples the same law exactly with no table (rejection from a
//! continuous envelope: integer k owns [k-1, k) of it and is accepted with probability k^-s
//! over the envelope's density there), but its three `powf` per draw make it several times
//! slower, so it only serves key spaces too large for a table.

use super::values::Rng;
use crate::spec::{Spec, SpecError};
use rand::Rng as _;
use rand_distr::Distribution;

/// Largest key space sampled through a table: 32 MiB of table, ~100 MiB while building.
const TABLE_MAX_KEYS: u64 = 1 << 22;

pub(super) enum ZipfKeys {
    /// Draws keys directly, the permutation baked into the table.
    Table(Alias),
    /// Draws ranks, then permutes them.
    Rejection { dist: rand_distr::Zipf<f64>, n: u64, perm: Option<Permutation> },
}

impl ZipfKeys {
    pub fn build(p: &Spec, keys: u64, rng: &mut Rng) -> Result<ZipfKeys, SpecError> {
        let alpha = p.float("alpha")?;
        if alpha < 0.0 {
            return Err(p.invalid("alpha", "must be 0 or more (0 is uniform)"));
        }
        if keys > 1 << 53 {
            return Err(p.invalid("keys", "at most 2^53 keys (ranks are exact in f64 only that far)"));
        }
        let perm = p.flag("permute")?.then(|| Permutation::new(keys, rng));
        Ok(ZipfKeys::new(keys, alpha, perm))
    }

    pub fn new(n: u64, alpha: f64, perm: Option<Permutation>) -> ZipfKeys {
        if n > TABLE_MAX_KEYS {
            let dist = rand_distr::Zipf::new(n, alpha).expect("n >= 1 and alpha >= 0");
            return ZipfKeys::Rejection { dist, n, perm };
        }
        let mut weights = vec![0.0; n as usize];
        for rank in 1..=n {
            let key = perm.as_ref().map_or(rank - 1, |p| p.apply(rank - 1));
            weights[key as usize] = (rank as f64).powf(-alpha);
        }
        ZipfKeys::Table(Alias::new(weights))
    }

    #[inline]
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match self {
            ZipfKeys::Table(t) => t.sample(rng),
            ZipfKeys::Rejection { dist, n, perm } => {
                // ranks are 1..=n; float rounding could give n+1 at the very edge
                let rank0 = (dist.sample(rng) as u64).clamp(1, *n) - 1;
                perm.as_ref().map_or(rank0, |p| p.apply(rank0))
            }
        }
    }
}

/// Walker's alias method (Vose's construction): index i with probability w_i / Σw.
/// Column i keeps i when a 32-bit coin falls below `keep`, else gives `alias`.
pub(super) struct Alias {
    columns: Vec<(u32, u32)>,
}

impl Alias {
    pub fn new(weights: Vec<f64>) -> Alias {
        let n = weights.len();
        assert!(n > 0 && n <= u32::MAX as usize);
        let total: f64 = weights.iter().sum();
        // scaled so the mean is 1: a column below 1 has room for an alias
        let mut prob = weights;
        prob.iter_mut().for_each(|p| *p *= n as f64 / total);
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
        // what is left is full up to rounding: keep itself
        for i in small.into_iter().chain(large) {
            alias[i as usize] = i;
        }
        let scale = u32::MAX as f64 + 1.0;
        let columns = (0..n).map(|i| (((prob[i] * scale).round().min(u32::MAX as f64)) as u32, alias[i])).collect();
        Alias { columns }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let i = rng.gen_range(0..self.columns.len());
        let (keep, alias) = self.columns[i];
        if rng.gen::<u32>() < keep {
            i as u64
        } else {
            alias as u64
        }
    }
}

/// A pseudo-random bijection of `0..n` without a table: a 4-round Feistel network on the
/// smallest even-bit power of two ≥ n, walking the cycle until the value falls inside
/// `0..n` (fewer than 4 steps on average since that power is < 4n).
#[derive(Clone)]
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
