//! `nhit`: cache a page only after it missed `n` times (Open CAS's NHIT
//! promotion policy), and only once the cache is `trigger` full — until then
//! every miss is cached, as a cold cache has room to spare.
//!
//! Misses are counted in a table of at most `history` keys (default: the
//! cache's capacity); when it is full the key counted longest ago is
//! forgotten. A page that is admitted starts from zero again: evicted, it
//! must earn its place anew. (Open CAS's defaults: n=3, trigger=80%.)

use super::{Admitter, AdmitterInfo};
use crate::policy::{Access, BuildCtx, ParamInfo, Spec, SpecError};
use hashbrown::HashMap;
use std::collections::VecDeque;

pub struct Nhit {
    n: u32,
    /// Occupancy (in pages) from which the threshold applies.
    trigger: f64,
    history: usize,
    /// key → (misses, stamp of its entry in `order`).
    counts: HashMap<u64, (u32, u64)>,
    /// Keys in the order they were first counted, with their stamps; an entry
    /// whose stamp no longer matches `counts` is stale (the key was admitted).
    order: VecDeque<(u64, u64)>,
    stamp: u64,
}

impl Nhit {
    fn new(n: u32, trigger: f64, history: usize) -> Self {
        Nhit { n, trigger, history: history.max(1), counts: HashMap::new(), order: VecDeque::new(), stamp: 0 }
    }

    /// Counts a miss on `key`; returns its count.
    fn count(&mut self, key: u64) -> u32 {
        if let Some((c, _)) = self.counts.get_mut(&key) {
            *c += 1;
            return *c;
        }
        while self.order.len() >= self.history {
            let (old, stamp) = self.order.pop_front().expect("history is at least 1");
            if self.counts.get(&old).is_some_and(|&(_, s)| s == stamp) {
                self.counts.remove(&old);
            }
        }
        self.stamp += 1;
        self.counts.insert(key, (1, self.stamp));
        self.order.push_back((key, self.stamp));
        1
    }
}

impl Admitter for Nhit {
    fn admit(&mut self, a: &Access, _victim: Option<u64>, resident: usize, capacity: usize) -> bool {
        let misses = self.count(a.key);
        let active = resident as f64 >= self.trigger * capacity as f64;
        let admit = !active || misses >= self.n;
        if admit {
            self.counts.remove(&a.key);
        }
        admit
    }
    fn history(&self) -> usize {
        self.counts.len()
    }
}

fn build(spec: &Spec, ctx: &BuildCtx) -> Result<Box<dyn Admitter>, SpecError> {
    let n = spec.uint("n")?;
    if !(1..=1_000_000).contains(&n) {
        return Err(spec.invalid("n", "1 to 1000000 misses"));
    }
    let trigger = spec.ratio("trigger")?;
    let history = if spec.raw("history") == "capacity" { ctx.capacity as u64 } else { spec.uint("history")? };
    if history == 0 || history > 1 << 32 {
        return Err(spec.invalid("history", "1 to 2^32 keys, or capacity"));
    }
    Ok(Box::new(Nhit::new(n as u32, trigger, history as usize)))
}

pub const INFO: AdmitterInfo = AdmitterInfo {
    name: "nhit",
    about: "cache a page after n misses, once the cache is trigger full (Open CAS's NHIT)",
    params: &[
        ParamInfo { name: "n", default: "3", about: "misses before a page is cached (1 = cache every miss)" },
        ParamInfo { name: "trigger", default: "80%", about: "occupancy from which the threshold applies" },
        ParamInfo { name: "history", default: "capacity", about: "keys whose misses are counted (oldest forgotten)" },
    ],
    build,
};

#[cfg(test)]
mod tests {
    use super::super::testing::admitted;
    use super::*;

    #[test]
    fn the_nth_miss_is_cached_and_counting_starts_again() {
        let mut by = Nhit::new(3, 0.0, 100);
        let got = admitted(&mut by, &[1, 2, 1, 1, 2, 2, 1]);
        assert_eq!(got, [false, false, false, true, false, true, false]);
    }

    #[test]
    fn below_the_trigger_every_miss_is_cached() {
        let mut by = Nhit::new(3, 0.8, 100);
        let a = crate::policy::testing::read(7, 0);
        assert!(by.admit(&a, None, 79, 100), "79% full: below the trigger");
        assert!(!by.admit(&a, None, 80, 100), "80% full: the threshold applies");
    }

    #[test]
    fn history_is_bounded_and_forgets_the_oldest() {
        let mut by = Nhit::new(2, 0.0, 3);
        admitted(&mut by, &[1, 2, 3, 4]); // 1 is forgotten
        assert!(by.history() <= 3);
        assert_eq!(admitted(&mut by, &[1, 4]), [false, true]);
        // Admitted keys leave stale order entries behind; the table still holds ≤ 3.
        admitted(&mut by, &(10..100).collect::<Vec<u64>>());
        assert!(by.history() <= 3 && by.order.len() <= 3);
    }
}
