//! `bloom`: cache a page on its second miss (the one-hit-wonder filter).
//!
//! libCacheSim's `bloomfilter` admissioner remembers, exactly, every object
//! that ever missed and admits it from its second miss on; that is the
//! default here (`bits=0`), so the two agree miss for miss. `bits=N` uses a
//! real Bloom filter of N bits instead (3 hashes; cleared when half its bits
//! are set, so memory stays bounded and old history fades): false positives
//! admit a few first-time pages.

use super::{Admitter, AdmitterInfo};
use crate::policy::{Access, BuildCtx, ParamInfo, Spec, SpecError};
use hashbrown::HashSet;

enum Seen {
    Exact(HashSet<u64>),
    Filter { bits: Vec<u64>, len: u64, set: u64 },
}

pub struct Bloom {
    seen: Seen,
}

/// Three bit positions from one 64-bit mix of the key (Kirsch–Mitzenmacher).
fn positions(key: u64, len: u64) -> [u64; 3] {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let (h1, h2) = (z & 0xffff_ffff, (z >> 32) | 1);
    [h1 % len, h1.wrapping_add(h2) % len, h1.wrapping_add(h2.wrapping_mul(2)) % len]
}

impl Admitter for Bloom {
    fn admit(&mut self, a: &Access, _victim: Option<u64>, _resident: usize, _capacity: usize) -> bool {
        match &mut self.seen {
            Seen::Exact(set) => !set.insert(a.key),
            Seen::Filter { bits, len, set } => {
                let ps = positions(a.key, *len);
                let known = ps.iter().all(|&p| bits[(p / 64) as usize] >> (p % 64) & 1 == 1);
                if !known {
                    if *set * 2 >= *len {
                        bits.fill(0);
                        *set = 0;
                    }
                    for p in ps {
                        let w = &mut bits[(p / 64) as usize];
                        *set += u64::from(*w >> (p % 64) & 1 == 0);
                        *w |= 1 << (p % 64);
                    }
                }
                known
            }
        }
    }
    fn history(&self) -> usize {
        match &self.seen {
            Seen::Exact(set) => set.len(),
            Seen::Filter { .. } => 0,
        }
    }
}

impl Bloom {
    /// Exact history with `bits == 0`, else a filter of `bits` bits (at least 64).
    fn new(bits: u64) -> Self {
        let seen = if bits == 0 {
            Seen::Exact(HashSet::new())
        } else {
            let len = bits.max(64);
            Seen::Filter { bits: vec![0; len.div_ceil(64) as usize], len, set: 0 }
        };
        Bloom { seen }
    }
}

fn build(spec: &Spec, _ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    let bits = spec.uint("bits")?;
    if bits > 1 << 36 {
        return Err(spec.invalid("bits", "at most 2^36 bits (8 GiB)"));
    }
    Ok(Box::new(Bloom::new(bits)))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "bloom",
    about: "cache a page on its second miss (libCacheSim's bloomfilter admissioner)",
    params: &[ParamInfo {
        name: "bits",
        default: "0",
        about: "0: remember every missed page exactly; N: a Bloom filter of N bits, cleared when half full",
    }],
    build,
};

#[cfg(test)]
mod tests {
    use super::super::testing::admitted;
    use super::*;

    #[test]
    fn exact_admits_from_the_second_miss() {
        let got = admitted(&mut Bloom::new(0), &[1, 2, 1, 3, 2, 1]);
        assert_eq!(got, [false, false, true, false, true, true]);
    }

    #[test]
    fn a_filter_has_no_false_negatives_until_it_is_cleared() {
        let mut by = Bloom::new(4096);
        let keys: Vec<u64> = (0..200).collect();
        assert!(admitted(&mut by, &keys).iter().filter(|&&a| a).count() < 10);
        // 200 keys × 3 bits set at most 600 of 4096: no clearing yet.
        assert!(admitted(&mut by, &keys).iter().all(|&a| a));
        // Fresh keys: mostly unknown (false positives are rare at this load).
        let fresh: Vec<u64> = (10_000..10_200).collect();
        let fp = admitted(&mut by, &fresh).iter().filter(|&&a| a).count();
        assert!(fp < 10, "{fp} false positives of 200");
    }

    #[test]
    fn a_full_filter_is_cleared_so_memory_stays_bounded() {
        let mut by = Bloom::new(64);
        admitted(&mut by, &(0..1000).collect::<Vec<u64>>());
        let Seen::Filter { set, len, .. } = by.seen else { panic!("a filter") };
        assert!(set * 2 <= len + 3, "{set} of {len} bits set");
        assert_eq!(by.history(), 0);
    }
}
