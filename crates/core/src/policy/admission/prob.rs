//! `prob`: cache each miss with probability `p` (libCacheSim's `prob`
//! admissioner), from a seeded generator so a run repeats exactly.

use super::{Admitter, AdmitterInfo};
use crate::policy::{Access, BuildCtx, ParamInfo, Spec, SpecError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub struct Prob {
    p: f64,
    rng: ChaCha8Rng,
}

impl Admitter for Prob {
    fn admit(&mut self, _a: &Access, _victim: Option<u64>, _resident: usize, _capacity: usize) -> bool {
        self.rng.gen::<f64>() < self.p
    }
}

fn build(spec: &Spec, _ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    let p = spec.ratio("p")?;
    Ok(Box::new(Prob { p, rng: ChaCha8Rng::seed_from_u64(spec.uint("seed")?) }))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "prob",
    about: "cache each miss with probability p (libCacheSim's prob admissioner)",
    params: &[
        ParamInfo { name: "p", default: "50%", about: "probability a miss is cached" },
        ParamInfo { name: "seed", default: "1", about: "seed of the generator (runs repeat exactly)" },
    ],
    build,
};

#[cfg(test)]
mod tests {
    use super::super::testing::admitted;
    use super::*;

    fn prob(p: f64, seed: u64) -> Prob {
        Prob { p, rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    #[test]
    fn admits_about_p_of_the_misses_and_repeats_with_its_seed() {
        let keys: Vec<u64> = (0..20_000).collect();
        let a = admitted(&mut prob(0.3, 7), &keys);
        let share = a.iter().filter(|&&x| x).count() as f64 / keys.len() as f64;
        assert!((share - 0.3).abs() < 0.02, "{share}");
        assert_eq!(a, admitted(&mut prob(0.3, 7), &keys));
        assert_ne!(a, admitted(&mut prob(0.3, 8), &keys));
        assert!(admitted(&mut prob(0.0, 1), &keys).iter().all(|&x| !x));
        assert!(admitted(&mut prob(1.0, 1), &keys).iter().all(|&x| x));
    }
}
