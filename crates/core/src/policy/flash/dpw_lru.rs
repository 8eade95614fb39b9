//! DPW-LRU: Dynamic Page Weight LRU (Y. Yuan, J. Zhang, G. Han, G. Jia, L. Yan,
//! W. Li, "DPW-LRU: an efficient buffer management policy based on dynamic
//! page weight for flash memory in cyber-physical systems", IEEE Access 7,
//! 2019) — the algorithm paper 001 (Lee & Chung 2023) cites as \[14\] and runs,
//! with LRU and CFLRU, as an RW and a WO FTL cache (its Fig. 6).
//!
//! **Caveat.** The original's full text was not available to us here; this
//! file follows paper 001's description of it (§2.2 5), §3.2) and the
//! original's abstract. The *structure* below is as they describe it; the
//! *formula* of the page weight and the region and candidate sizes are our
//! reconstruction (marked below) and should be checked against the original.
//!
//! ## Structure (paper 001 §2.2 5))
//!
//! AD-LRU's cold and hot queues become the **exchange region** ER (pages that
//! may be evicted) and the **working region** WR (pages that are not):
//! - a first reference that is a read enters ER; a first reference that is a
//!   write enters WR (by the access, not the dirty hint: a write-through
//!   cache's written page goes to WR too);
//! - a hit in ER moves the page to WR; a hit in WR moves it to WR's MRU end;
//! - when WR grows past its threshold, the page weight (DPW) of some pages at
//!   WR's LRU end — the *candidates* — is computed and the one of least
//!   weight moves to ER's MRU end. So a dirty page of low weight may leave WR
//!   while a clean page of higher weight stays (paper 001 §3.2);
//! - ER evicts by pure LRU.
//!
//! DPW combines three measures of a page: TLI, its temporal locality interval
//! (how far apart its references are in the whole I/O sequence); EC, its
//! eviction cost (the I/O latency its eviction is expected to cause); and RE,
//! its recency.
//!
//! ## Our reconstruction
//!
//! - Time is the position in the page-access stream ([`Access::seq`]).
//!   `TLI = (now − first + 1) / refs` (mean interval between the references
//!   since the page entered the cache), `RE = now − last + 1`, and
//!   `EC = 1 + write_cost·[dirty]` (a clean page costs a read if it is needed
//!   again, a dirty one a write now and that read). The weight is
//!   `DPW = EC / (TLI · RE)`: frequent, recent, dirty pages weigh more; ties go
//!   to the LRU-most candidate.
//! - Thresholds: WR may hold at most `C − ⌊C·er⌋` pages; ER is not capped by a
//!   threshold of its own but by the capacity, i.e. it may use what WR leaves
//!   free and never holds fewer than `⌊C·er⌋` pages when the cache is full
//!   (the ER threshold plays the role of AD-LRU's `min_lc`). Eviction happens
//!   only when the cache is full, so no capacity is left unused. Paper 001's
//!   wording ("when ER exceeds its threshold on an insertion, its LRU page is
//!   evicted") would, read literally, leave WR's unused share empty on
//!   read-mostly workloads; we take the threshold as binding when the cache is
//!   full. If ER is empty when a page must go, the least-weight candidate of
//!   WR goes.
//!
//! ## Parameters (defaults are ours, see the caveat)
//!
//! - `er` = **10%**: ER's share, as AD-LRU's `min_lc` default (DPW-LRU renames
//!   AD-LRU's queues).
//! - `candidates` = **8**: pages at WR's LRU end whose weight is compared.
//! - `write_cost` = **8**: the cost of a write relative to a read in EC
//!   (200 µs / 25 µs, the SLC page timings common in the flash-buffer
//!   literature; paper 001's Table 1 SLC ratio is 380/65 ≈ 5.8, its MLC_2 one
//!   1300/78 ≈ 17).
//! - Paper 001 does not state the parameters it ran DPW-LRU with (it follows
//!   the setup of its ref. \[10\], Lee & Chung 2020, an analysis of DPW-LRU in
//!   an FTL).
//!
//! Identities: `er=100%` leaves WR no room, every page passes straight to ER's
//! MRU end and DPW-LRU is LRU exactly (any trace); with `candidates=1` and only
//! reads it is segmented LRU with a protected segment of `C − ⌊C·er⌋` pages.

use crate::list::{Arena, List};
use crate::policy::mode::with_mode;
use crate::policy::{Access, BuildCtx, ParamInfo, Policy, PolicyInfo, Replacement, Rules, Spec, SpecError};
use crate::trace::Op;

#[derive(Clone, Copy, Debug)]
pub struct Page {
    /// `seq` of the access that brought the page in.
    first: u64,
    /// `seq` of its latest access.
    last: u64,
    /// References since it came in.
    refs: u32,
    dirty: bool,
    /// In WR (else in ER).
    wr: bool,
}

pub struct DpwLru {
    arena: Arena<Page>,
    /// Exchange region, front = MRU.
    er: List,
    /// Working region, front = MRU.
    wr: List,
    wr_max: usize,
    candidates: usize,
    write_cost: f64,
    capacity: usize,
}

impl DpwLru {
    /// A DPW-LRU of `capacity` pages whose WR holds at most `wr_max` pages,
    /// comparing `candidates` pages (at least 1) when one must leave WR.
    pub fn new(capacity: usize, wr_max: usize, candidates: usize, write_cost: f64) -> Self {
        let capacity = capacity.max(1);
        DpwLru {
            arena: Arena::with_capacity(capacity),
            er: List::new(),
            wr: List::new(),
            wr_max: wr_max.min(capacity),
            candidates: candidates.max(1),
            write_cost,
            capacity,
        }
    }

    /// The dynamic page weight at time `now`.
    fn weight(&self, p: &Page, now: u64) -> f64 {
        let ec = 1.0 + if p.dirty { self.write_cost } else { 0.0 };
        let tli = (now.saturating_sub(p.first) + 1) as f64 / p.refs as f64;
        let re = (now.saturating_sub(p.last) + 1) as f64;
        ec / (tli * re)
    }

    /// Moves the least-weight candidate at WR's LRU end to ER's MRU end.
    fn demote(&mut self, now: u64) {
        let Some(mut idx) = self.wr.back() else { return };
        let mut best = (idx, self.weight(self.arena.val(idx), now));
        for _ in 1..self.candidates {
            match self.wr.prev_of(&self.arena, idx) {
                Some(prev) => idx = prev,
                None => break,
            }
            let w = self.weight(self.arena.val(idx), now);
            if w < best.1 {
                best = (idx, w);
            }
        }
        self.wr.unlink(&mut self.arena, best.0);
        self.arena.val_mut(best.0).wr = false;
        self.er.push_front(&mut self.arena, best.0);
    }

    fn fit_wr(&mut self, now: u64) {
        while self.wr.len() > self.wr_max {
            self.demote(now);
        }
    }

    #[cfg(test)]
    fn regions(&self) -> (Vec<u64>, Vec<u64>) {
        (self.er.keys(&self.arena), self.wr.keys(&self.arena))
    }
}

impl Replacement for DpwLru {
    #[inline]
    fn touch(&mut self, a: &Access, dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(a.key) else { return false };
        let p = self.arena.val_mut(idx);
        p.last = a.seq;
        p.refs = p.refs.saturating_add(1);
        p.dirty = dirty;
        if p.wr {
            self.wr.move_to_front(&mut self.arena, idx);
        } else {
            p.wr = true;
            self.er.unlink(&mut self.arena, idx);
            self.wr.push_front(&mut self.arena, idx);
            self.fit_wr(a.seq);
        }
        true
    }

    #[inline]
    fn insert(&mut self, a: &Access, dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.arena.len() >= self.capacity {
            if self.er.is_empty() {
                self.demote(a.seq);
            }
            if let Some(v) = self.er.pop_back(&mut self.arena) {
                evicted.push(self.arena.remove(v));
            }
        }
        let wr = a.op == Op::Write;
        let idx = self.arena.insert(a.key, Page { first: a.seq, last: a.seq, refs: 1, dirty, wr });
        if wr {
            self.wr.push_front(&mut self.arena, idx);
            self.fit_wr(a.seq);
        } else {
            self.er.push_front(&mut self.arena, idx);
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        if self.arena.val(idx).wr {
            self.wr.unlink(&mut self.arena, idx);
        } else {
            self.er.unlink(&mut self.arena, idx);
        }
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some()
    }

    fn cleaned(&mut self, key: u64) {
        if let Some(idx) = self.arena.find(key) {
            self.arena.val_mut(idx).dirty = false;
        }
    }

    fn len(&self) -> usize {
        self.arena.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    let capacity = ctx.capacity.max(1);
    let er = (capacity as f64 * spec.ratio("er")?) as usize;
    let candidates = spec.uint("candidates")?;
    if candidates == 0 {
        return Err(spec.invalid("candidates", "must be at least 1"));
    }
    let write_cost = spec.float("write_cost")?;
    if write_cost < 0.0 {
        return Err(spec.invalid("write_cost", "must not be negative"));
    }
    let candidates = usize::try_from(candidates).unwrap_or(usize::MAX);
    Ok(with_mode(DpwLru::new(capacity, capacity - er, candidates, write_cost), ctx))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "dpw-lru",
    about: "DPW-LRU: exchange and working regions; the least-weight page of WR's LRU end moves to ER \
            (Yuan et al. 2019; weight formula reconstructed)",
    params: &[
        ParamInfo {
            name: "er",
            default: "10%",
            about: "exchange region's share of the capacity; WR holds at most the rest (100% = LRU)",
        },
        ParamInfo { name: "candidates", default: "8", about: "pages at WR's LRU end whose weight is compared" },
        ParamInfo { name: "write_cost", default: "8", about: "cost of a write relative to a read, in the weight" },
    ],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::classic::lru::Lru;
    use crate::policy::flash::testing::{churn_resident, rw_steps, WriteBack};
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::Mode;

    #[test]
    fn the_least_weight_candidate_leaves_wr() {
        // Capacity 4, WR at most 2 pages, 2 candidates, write cost 8. Time = step.
        // DPW = EC / (TLI·RE), EC = 1 (clean) or 9 (dirty), TLI = (now−first+1)/refs, RE = now−last+1.
        let mut d = WriteBack::new(DpwLru::new(4, 2, 2, 8.0));
        // 0 W1, 1 W1, 2 W1: WR [1d] (first 0, last 2, 3 refs). 3 R2: ER [2].
        // 4 R2: hit in ER → WR [2c 1d] (2: first 3, last 4, 2 refs).
        let ev = d.run(&[(1, true), (1, true), (1, true), (2, false), (2, false)]);
        assert!(ev.iter().all(|e| e.is_empty()));
        assert_eq!(d.rule.regions(), (vec![], vec![2, 1]));
        // 5 W3: WR [3 2 1] is over. Candidates 1 and 2 at now = 5:
        //   1: 9 / ((6/3)·4) = 1.125;  2: 1 / ((3/2)·2) = 0.333 → 2 (clean, not the LRU) moves to ER.
        assert_eq!(d.run(&[(3, true)]), vec![Vec::<u64>::new()]);
        assert_eq!(d.rule.regions(), (vec![2], vec![3, 1]));
        // 6 R4: ER [4 2]. 7 R5: full, ER's LRU page 2 goes. 8 W6: full, ER's LRU 4 goes;
        // WR [6 3 1] over: candidates 1 and 3 at now = 8:
        //   1: 9 / ((9/3)·7) = 0.429;  3: 9 / (4·4) = 0.5625 → 1 moves to ER [1 5].
        assert_eq!(d.run(&[(4, false), (5, false), (6, true)]), vec![vec![], vec![2], vec![4]]);
        assert_eq!(d.rule.regions(), (vec![1, 5], vec![6, 3]));
        // 9 R7: ER's LRU 5 goes. 10 R1: hit in ER → WR [1 6 3] over: candidates 3 and 6:
        //   3: 9 / (6·6) = 0.25;  6: 9 / (3·3) = 1 → 3 moves to ER.
        assert_eq!(d.run(&[(7, false), (1, false)]), vec![vec![5], vec![]]);
        assert_eq!(d.rule.regions(), (vec![3, 7], vec![1, 6]));
    }

    #[test]
    fn a_dirty_page_of_less_weight_leaves_before_a_clean_one() {
        let mut d = WriteBack::new(DpwLru::new(4, 2, 2, 8.0));
        // 0 W1: WR [1d]. 1 R2: ER [2]. 2, 3 R2: WR [2c 1d] (2: first 1, last 3, 3 refs).
        d.run(&[(1, true), (2, false), (2, false), (2, false)]);
        // 4 W3: candidates at now = 4:  1: 9 / (5·5) = 0.36;  2: 1 / ((4/3)·2) = 0.375 → 1 (dirty) moves.
        d.run(&[(3, true)]);
        assert_eq!(d.rule.regions(), (vec![1], vec![3, 2]));
    }

    #[test]
    fn er_100_percent_is_lru_on_any_trace() {
        for cap in [1, 2, 5, 16] {
            for candidates in [1, 4] {
                let steps = rw_steps(5000, 40, 4, cap as u64 * 7 + candidates as u64);
                let mut d = WriteBack::new(DpwLru::new(cap, 0, candidates, 8.0));
                let mut l = WriteBack::new(Lru::new(cap));
                assert_eq!(d.run(&steps), l.run(&steps), "capacity {cap}");
            }
        }
    }

    /// Segmented LRU over plain vectors (front = LRU): misses enter probation,
    /// hits go to protected (at most `protected` pages, overflow back to probation's MRU end).
    fn reference_slru(capacity: usize, protected: usize, keys: &[u64]) -> Vec<bool> {
        let (mut prob, mut prot): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
        keys.iter()
            .map(|&k| {
                let hit = if let Some(p) = prob.iter().position(|&x| x == k) {
                    prob.remove(p);
                    true
                } else if let Some(p) = prot.iter().position(|&x| x == k) {
                    prot.remove(p);
                    true
                } else {
                    false
                };
                if hit {
                    prot.push(k);
                    if prot.len() > protected {
                        prob.push(prot.remove(0));
                    }
                } else {
                    if prob.len() + prot.len() == capacity {
                        if prob.is_empty() {
                            prot.remove(0);
                        } else {
                            prob.remove(0);
                        }
                    }
                    prob.push(k);
                }
                hit
            })
            .collect()
    }

    #[test]
    fn one_candidate_and_reads_only_is_segmented_lru() {
        let keys: Vec<u64> = rw_steps(4000, 50, 0, 77).into_iter().map(|(k, _)| k).collect();
        for cap in [1, 2, 5, 12, 30] {
            for prot in [0, 1, cap / 2, cap] {
                let got = run_keys(&mut DpwLru::new(cap, prot, 1, 8.0), &keys);
                assert_eq!(got, reference_slru(cap, prot, &keys), "capacity {cap} protected {prot}");
            }
        }
    }

    #[test]
    fn effects_match_residency_in_every_mode() {
        churn_resident(
            || DpwLru::new(7, 5, 3, 8.0),
            7,
            |d| assert!(d.wr.len() <= 5 && d.wr.len() + d.er.len() == d.len()),
        );
    }

    #[test]
    fn parameters() {
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        assert!(build_spec("dpw-lru(er=25%,candidates=1,write_cost=0)", &ctx).is_ok());
        for bad in ["dpw-lru(candidates=0)", "dpw-lru(write_cost=-1)", "dpw-lru(er=2)"] {
            assert!(matches!(build_spec(bad, &ctx), Err(SpecError::BadValue { .. })), "{bad}");
        }
    }
}
