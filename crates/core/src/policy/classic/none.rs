//! No cache at all: every read goes to the backing device, every write too.
//! The baseline of paper 000's comparison (HDD only), and a floor for any
//! other: a rule that declines every page, so through [`ModeCache`] a read
//! miss is a fetch and a write is written through, in every mode.

use crate::policy::mode::ModeCache;
use crate::policy::{Access, BuildCtx, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};

pub struct NoCache;

impl Replacement for NoCache {
    fn touch(&mut self, _a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        false
    }
    fn insert(&mut self, _a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        false
    }
    fn remove(&mut self, _key: u64, _evicted: &mut Vec<u64>) -> bool {
        false
    }
    fn contains(&self, _key: u64) -> bool {
        false
    }
    fn len(&self) -> usize {
        0
    }
    fn capacity(&self) -> usize {
        0
    }
}

fn build(_spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    Ok(Box::new(ModeCache::new(NoCache, ctx.mode)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "none",
    about: "no cache: every read and write goes to the backing device (baseline)",
    params: &[],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use crate::policy::registry::build;
    use crate::policy::testing::{read, write};
    use crate::policy::BuildCtx;
    use crate::policy::{Effects, Io};

    #[test]
    fn everything_goes_to_backing() {
        for (_, mode, _) in crate::policy::MODES {
            let (mut p, _) = build("none", &BuildCtx { capacity: 8, mode: *mode, page_bytes: 4096 }).unwrap();
            let mut fx = Effects::new();
            p.access(&read(1, 0), &mut fx);
            assert_eq!((fx.hit, fx.io.clone()), (false, vec![Io::Fetch { key: 1, pages: 1 }]), "{mode}");
            fx.clear();
            p.access(&write(1, 1), &mut fx);
            assert_eq!((fx.hit, fx.io.clone()), (false, vec![Io::WriteThrough { key: 1 }]), "{mode}");
            assert_eq!(p.stats().resident, 0);
        }
    }
}
