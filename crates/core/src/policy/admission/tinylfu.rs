//! `tinylfu`: TinyLFU admission (Einziger, Friedman & Manes, ACM TOS'17):
//! a miss is cached only if its estimated frequency is strictly higher than
//! that of the page the rule would evict for it; while the rule has room,
//! every miss is cached.
//!
//! Frequencies are TinyLFU's approximate, aging histogram — the count-min
//! sketch with a doorkeeper that W-TinyLFU uses (`policy/sketch.rs`), sized for
//! the cache and counting every access that reaches the rule, hits and misses
//! (a sample of `10 × capacity` accesses, then every count is halved). The
//! rule must name its victim without evicting it (`Replacement::victim`: lru
//! and lfu do); a spec with a rule that cannot is refused.

use super::{Admitter, AdmitterInfo};
use crate::policy::sketch::Sketch;
use crate::policy::{Access, BuildCtx, Spec, SpecError};

pub struct TinyLfu {
    sketch: Sketch,
}

impl TinyLfu {
    pub fn new(capacity: usize) -> Self {
        TinyLfu { sketch: Sketch::new(capacity) }
    }
}

impl Admitter for TinyLfu {
    fn seen(&mut self, a: &Access) {
        self.sketch.record(a.key);
    }
    fn admit(&mut self, a: &Access, victim: Option<u64>, resident: usize, _capacity: usize) -> bool {
        self.sketch.ensure(resident + 1);
        victim.is_none_or(|v| self.sketch.estimate(a.key) > self.sketch.estimate(v))
    }
    fn needs_victim(&self) -> bool {
        true
    }
}

fn build(_spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    Ok(Box::new(TinyLfu::new(ctx.capacity)))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "tinylfu",
    about: "cache a miss only if it is estimated more frequent than the rule's victim (TinyLFU; rule: lru, lfu)",
    params: &[],
    build,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{read, run_keys};
    use crate::policy::Mode;

    fn ctx(capacity: usize) -> BuildCtx {
        BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }
    }

    #[test]
    fn admits_with_room_then_only_above_the_victims_frequency() {
        let mut by = TinyLfu::new(100);
        let (a, b) = (read(1, 0), read(2, 1));
        assert!(by.admit(&a, None, 0, 100), "room: admitted");
        for _ in 0..3 {
            by.seen(&b);
        }
        by.seen(&a);
        assert!(!by.admit(&a, Some(2), 100, 100), "seen once against three times");
        for _ in 0..2 {
            by.seen(&a);
        }
        assert!(!by.admit(&a, Some(2), 100, 100), "a tie is not enough");
        by.seen(&a);
        assert!(by.admit(&a, Some(2), 100, 100), "four times against three");
    }

    #[test]
    fn a_scan_does_not_flush_a_frequently_used_set() {
        let c = ctx(100);
        let (mut lru, _) = crate::policy::registry::build_rule("lru", &c).unwrap();
        let (mut tiny, _) = crate::policy::registry::build_rule("admit(by=tinylfu,rule=lru)", &c).unwrap();
        let hot: Vec<u64> = (0..60).collect();
        let scan: Vec<u64> = (1000..1200).collect();
        for r in [&mut lru, &mut tiny] {
            for _ in 0..3 {
                run_keys(r, &hot);
            }
            run_keys(r, &scan);
        }
        let hits = |r: &mut Box<dyn crate::policy::Replacement>| run_keys(r, &hot).iter().filter(|&&h| h).count();
        assert_eq!(hits(&mut lru), 0, "LRU lost the set to the scan");
        assert_eq!(hits(&mut tiny), 60, "no scan page beat a hot page's frequency");
    }

    /// The rules that name their victim name the page `insert` then evicts.
    #[test]
    fn victims_are_what_insert_evicts() {
        for rule in ["lru", "lfu"] {
            let (mut r, _) = crate::policy::registry::build_rule(rule, &ctx(16)).unwrap();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            let mut evicted = Vec::new();
            for i in 0..5_000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = read(if i % 4 == 0 { x % 8 } else { x % 64 }, i);
                evicted.clear();
                if r.touch(&a, false, &mut evicted) {
                    continue;
                }
                let victim = r.victim();
                assert_eq!(victim.is_some(), r.len() >= r.capacity(), "{rule}: a victim only when full");
                assert!(r.insert(&a, false, &mut evicted));
                assert_eq!(evicted.first().copied(), victim, "{rule} at access {i}");
            }
        }
    }

    #[test]
    fn a_rule_must_name_its_victim() {
        for ok in
            ["admit(by=tinylfu,rule=lru)", "admit(by=tinylfu,rule=lfu)", "admit(by=seqcut,rule=admit(by=tinylfu))"]
        {
            assert!(build_spec(ok, &ctx(10)).is_ok(), "{ok}");
        }
        for bad in [
            "admit(by=tinylfu,rule=wtinylfu)",
            "admit(by=tinylfu,rule=admit(by=bloom,rule=lru))",
            "admit(by=tinylfu(x=1))",
        ] {
            let e = build_spec(bad, &ctx(10)).err().unwrap_or_else(|| panic!("{bad} built")).to_string();
            assert!(!e.contains('\n') && (e.contains("by") || e.contains("rule")), "{bad}: {e}");
        }
    }
}
