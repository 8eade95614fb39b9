//! A buffer cache of DRAM plus NVRAM in front of a disk (paper 003: Lee, Choi,
//! Lee & Noh, "Reconsidering performance measurement when non-volatile RAM is
//! used in the buffer cache", after Akyürek & Salem, "Management of partially
//! safe buffers", IEEE TC 44(3), 1995).
//!
//! NVRAM is persistent, so dirty data there is as safe as on disk: every write
//! is cached in NVRAM and stays dirty until NVRAM replaces it (or the run
//! ends: [`Policy::drain`]). DRAM only ever holds clean pages. Two policies
//! differ in where a read miss goes (paper 003 §3):
//!
//! - **Read Volatile** (`read-volatile`, Akyürek & Salem's *LRU Volatile*):
//!   reads are cached in DRAM only. A read hit in NVRAM is served there.
//! - **Read Global** (`read-global`, *LRU Global*): a read miss replaces a page
//!   chosen from both memories together — the less recently used of the two
//!   tiers' LRU pages — and takes that page's frame, so reads can displace
//!   dirty NVRAM pages (a read-replace-dirty: two disk accesses).
//!
//! In both, as the paper describes:
//!
//! - **Write Global**: a page NVRAM replaces is written to disk (if dirty) and
//!   then "has the chance" to move to DRAM. The paper does not spell out the
//!   chance; here it is the global-LRU reading of it: the page moves if DRAM
//!   has a free frame or if it was used more recently than DRAM's LRU page
//!   (which it then displaces, clean, at no disk cost); otherwise it leaves.
//! - **Write Purge**: a write to a page in DRAM writes it into NVRAM and drops
//!   the DRAM copy. Paper 003 Table 1 processes such a write hit as a write
//!   miss: it replaces an NVRAM page like one.
//!
//! Each tier is managed by its own replacement rule (paper 003: "separate LRU
//! policies"), `tier=lru` by default; `tier=` takes any classic rule as a
//! spec, with parameters or with its catalogue defaults (`tier=2q(kin=30%)`,
//! `tier=arc`), built by the registry; the same for both tiers. A page that enters
//! a tier — miss, Write Purge, Write Global — is inserted by that tier's rule
//! as any new page is (for LRU: at the MRU end). The cross-tier decisions
//! (which tier a Read Global miss replaces in, whether a Write Global page
//! moves) compare recency: each tier also keeps its pages in the order they
//! were last used or arrived in it. With `tier=lru` those orders are exactly
//! the rules' own, so the decisions are between the pages the rules would
//! evict; with other rules they compare the tiers' least recently used pages
//! while the rule still picks the victim inside the tier.
//!
//! Per-access classification (paper 003 Table 1, counted by the simulator):
//! read miss = read-replace-dirty (the replaced page was dirty: write it back,
//! then read: 2 disk accesses) or read-overwrite-clean (1); read hit, in DRAM
//! or NVRAM (0); write miss = write-replace-dirty (1) or write-overwrite-clean
//! (0); write hit in NVRAM (0); write hit in DRAM = processed as a write miss.
//! The policy reports the tier of a hit, Write Purges, Write Global moves and
//! whether a dirty page was replaced in [`Effects::tier`]. A Write Global page
//! that was dirty is written back without an [`Io::Evict`] (it stays cached);
//! a page that leaves gets its `Evict` as usual.
//!
//! Parameters:
//! - `nvram` (default 30 %): NVRAM's share of the cache; DRAM has the rest. The
//!   paper sweeps 10–90 % of a fixed total (169 MB, a tenth of the TPC-C
//!   footprint) and names no default; 30 % is where its Table 2 shows Read
//!   Global starting to replace dirty pages. 0 % and 100 % are accepted: with
//!   no NVRAM, writes stay dirty in DRAM and the cache is exactly the tier
//!   rule as a write-back cache (`lru` in `write-back` mode); with no DRAM,
//!   Read Global is the rule as a write-back cache over NVRAM and Read
//!   Volatile caches no reads (`lru` in `write-only` mode). A share above 0
//!   gets at least one page, one below 100 % leaves DRAM at least one.
//! - `tier` (default `lru`, paper 003 §3): the rule of both tiers.
//!
//! Only `write-back` mode: the policy has its own write semantics, and the
//! others (write-through, write-around, write-only, read-only) would defeat
//! the point of NVRAM; they are refused.
//!
//! Choices where the papers are silent: which frame a read miss takes while
//! frames are free (Read Global: DRAM's first, then NVRAM's); ties in recency
//! go to DRAM; a page's recency in a tier starts when it arrives there (as a
//! rule inserting it sees it); a partial write that hits in DRAM needs no
//! read-for-write (the old contents are in DRAM); a page a rule declines
//! (none of the `paper` variants does) is written through, as in
//! [`ModeCache`](crate::policy::ModeCache).

use crate::list::{Arena, List};
use crate::policy::{
    check_mode, Access, BuildCtx, Effects, Io, Mode, ParamInfo, Policy, PolicyInfo, PolicyStats, Replacement, Rules,
    Spec, SpecError, Tier,
};
use crate::trace::Op;

const DRAM: usize = 0;
const NVRAM: usize = 1;

fn tier_of(i: usize) -> Tier {
    if i == DRAM {
        Tier::Dram
    } else {
        Tier::Nvram
    }
}

/// A resident page.
#[derive(Clone, Copy, Debug)]
struct Meta {
    /// `DRAM` or `NVRAM`.
    tier: usize,
    dirty: bool,
    /// `seq` of the page's last use, or of its arrival in this tier.
    stamp: u64,
    /// `next_use` of the page's last access (for Belady, when the page moves).
    next_use: u64,
}

/// One memory: its rule (none if it has no pages) and its pages by recency.
struct Part {
    rule: Option<Box<dyn Replacement>>,
    /// Front = most recent.
    order: List,
}

impl Part {
    fn full(&self) -> bool {
        self.rule.as_ref().is_none_or(|r| r.len() >= r.capacity())
    }
}

/// Paper 003's DRAM + NVRAM buffer cache (see the module documentation).
pub struct NvramCache {
    read_global: bool,
    /// Indexed by `DRAM` / `NVRAM`.
    parts: [Part; 2],
    /// Every resident page, in one of the two orders.
    pages: Arena<Meta>,
    dirty: usize,
    capacity: usize,
    /// Keys the rule call in progress evicted.
    evicted: Vec<u64>,
    /// Keys DRAM evicted to take in a page from NVRAM (Write Global).
    evicted_dram: Vec<u64>,
    future: bool,
}

impl NvramCache {
    /// `dram` + `nvram` pages (at least one in all), each tier under the
    /// rule `tier` builds for its pages; `read_global` picks Read Global over
    /// Read Volatile.
    pub fn new<E>(
        tier: &mut dyn FnMut(usize) -> Result<Box<dyn Replacement>, E>,
        dram: usize,
        nvram: usize,
        read_global: bool,
    ) -> Result<NvramCache, E> {
        assert!(dram + nvram > 0, "a cache needs a page");
        let mut part = |pages: usize| -> Result<Part, E> {
            let rule = if pages == 0 { None } else { Some(tier(pages)?) };
            Ok(Part { rule, order: List::new() })
        };
        let parts = [part(dram)?, part(nvram)?];
        let future = parts.iter().any(|p| p.rule.as_ref().is_some_and(|r| r.needs_future()));
        Ok(NvramCache {
            read_global,
            parts,
            pages: Arena::with_capacity(dram + nvram),
            dirty: 0,
            capacity: dram + nvram,
            evicted: Vec::with_capacity(8),
            evicted_dram: Vec::with_capacity(8),
            future,
        })
    }

    /// Pages in DRAM and in NVRAM.
    pub fn sizes(&self) -> (usize, usize) {
        let cap = |p: &Part| p.rule.as_ref().map_or(0, |r| r.capacity());
        (cap(&self.parts[DRAM]), cap(&self.parts[NVRAM]))
    }

    /// The tier a page is in, if resident.
    pub fn tier(&self, key: u64) -> Option<Tier> {
        self.pages.find(key).map(|i| tier_of(self.pages.val(i).tier))
    }

    /// Where writes are cached: NVRAM, or DRAM if there is no NVRAM.
    fn write_tier(&self) -> usize {
        if self.parts[NVRAM].rule.is_some() {
            NVRAM
        } else {
            DRAM
        }
    }

    /// The tier a read miss is cached in, if any.
    fn read_tier(&self) -> Option<usize> {
        let (d, n) = (&self.parts[DRAM], &self.parts[NVRAM]);
        if !self.read_global || n.rule.is_none() {
            return d.rule.is_some().then_some(DRAM);
        }
        if d.rule.is_none() {
            return Some(NVRAM);
        }
        if !d.full() {
            return Some(DRAM);
        }
        if !n.full() {
            return Some(NVRAM);
        }
        // Both full: replace the less recently used of the two tiers' LRU pages.
        let lru = |p: &Part| p.order.back().map_or(0, |i| self.pages.val(i).stamp);
        Some(if lru(n) < lru(d) { NVRAM } else { DRAM })
    }

    /// Marks a resident page used now.
    fn used(&mut self, idx: u32, a: &Access) {
        let t = self.pages.val(idx).tier;
        self.parts[t].order.move_to_front(&mut self.pages, idx);
        let m = self.pages.val_mut(idx);
        m.stamp = a.seq;
        m.next_use = a.next_use;
    }

    /// Handles the pages tier `t`'s rule just evicted (in `self.evicted`).
    fn evictions(&mut self, t: usize, a: &Access, fx: &mut Effects) {
        if self.evicted.is_empty() {
            return;
        }
        let mut evicted = std::mem::take(&mut self.evicted);
        for &key in &evicted {
            let idx = self.pages.find(key).expect("a rule evicts only resident pages");
            let m = *self.pages.val(idx);
            debug_assert_eq!(m.tier, t, "page {key} evicted by the other tier's rule");
            self.parts[t].order.unlink(&mut self.pages, idx);
            if m.dirty {
                self.dirty -= 1;
                fx.tier.replaced_dirty = true;
            }
            if t == NVRAM && self.write_global(idx, m, a, fx) {
                continue;
            }
            self.pages.remove(idx);
            fx.push(Io::Evict { key, dirty: m.dirty });
            if m.dirty {
                fx.push(Io::WriteBack { key, pages: 1 });
            }
        }
        evicted.clear();
        self.evicted = evicted;
    }

    /// Write Global: page `idx` (unlinked, described by `m`) left NVRAM; it
    /// moves to DRAM if DRAM has a free frame or its LRU page is older.
    /// Returns whether it moved (then it has been written back if dirty).
    fn write_global(&mut self, idx: u32, m: Meta, a: &Access, fx: &mut Effects) -> bool {
        let dram = &self.parts[DRAM];
        let Some(rule) = dram.rule.as_ref() else { return false };
        if rule.len() >= rule.capacity() {
            let lru = dram.order.back().map_or(0, |i| self.pages.val(i).stamp);
            if m.stamp <= lru {
                return false;
            }
        }
        let key = self.pages.key(idx);
        let mv = Access {
            time: a.time,
            key,
            op: Op::Read,
            partial: false,
            seq: a.seq,
            next_use: m.next_use,
            request_pages: a.request_pages,
        };
        let rule = self.parts[DRAM].rule.as_mut().expect("checked above");
        let mut evicted = std::mem::take(&mut self.evicted_dram);
        let resident = rule.touch(&mv, false, &mut evicted);
        debug_assert!(!resident, "page {key} in both tiers");
        let moved = rule.insert(&mv, false, &mut evicted);
        if m.dirty && moved {
            fx.push(Io::WriteBack { key, pages: 1 });
        }
        // DRAM's victims leave (clean: DRAM holds dirty pages only without NVRAM).
        for &d in &evicted {
            let di = self.pages.find(d).expect("a rule evicts only resident pages");
            let dm = *self.pages.val(di);
            self.parts[DRAM].order.unlink(&mut self.pages, di);
            self.pages.remove(di);
            if dm.dirty {
                self.dirty -= 1;
            }
            fx.push(Io::Evict { key: d, dirty: dm.dirty });
            if dm.dirty {
                fx.push(Io::WriteBack { key: d, pages: 1 });
            }
        }
        evicted.clear();
        self.evicted_dram = evicted;
        if moved {
            *self.pages.val_mut(idx) = Meta { tier: DRAM, dirty: false, stamp: a.seq, next_use: m.next_use };
            self.parts[DRAM].order.push_front(&mut self.pages, idx);
            fx.tier.to_dram += 1;
        }
        moved
    }

    /// A hit on page `idx` in tier `t`: the rule's touch (which may evict others).
    fn touch(&mut self, t: usize, a: &Access, dirty: bool, fx: &mut Effects) {
        let rule = self.parts[t].rule.as_mut().expect("a tier with pages has a rule");
        let hit = rule.touch(a, dirty, &mut self.evicted);
        debug_assert!(hit, "page {} resident but not in its tier's rule", a.key);
        self.evictions(t, a, fx);
    }

    /// Offers a page that is in neither tier to tier `t`; returns whether it is cached.
    fn admit(&mut self, t: usize, a: &Access, dirty: bool, fx: &mut Effects) -> bool {
        let rule = self.parts[t].rule.as_mut().expect("a tier with pages has a rule");
        // The rule sees the miss first (ARC and 2Q learn from ghosts there).
        let resident = rule.touch(a, dirty, &mut self.evicted);
        debug_assert!(!resident, "page {} in a rule but not in the cache", a.key);
        self.evictions(t, a, fx);
        let at = fx.io.len();
        let rule = self.parts[t].rule.as_mut().expect("a tier with pages has a rule");
        let admitted = rule.insert(a, dirty, &mut self.evicted);
        if admitted && a.partial {
            // Before the evictions, as the old contents are read first.
            fx.io.insert(at, Io::ReadForWrite { key: a.key });
        }
        self.evictions(t, a, fx);
        if admitted {
            let idx = self.pages.insert(a.key, Meta { tier: t, dirty, stamp: a.seq, next_use: a.next_use });
            self.parts[t].order.push_front(&mut self.pages, idx);
            self.dirty += dirty as usize;
            fx.push(Io::CacheWrite { key: a.key });
        }
        admitted
    }

    /// Drops page `idx` from the cache and from its tier's rule.
    fn drop_page(&mut self, idx: u32, a: &Access, fx: &mut Effects) -> Meta {
        let m = *self.pages.val(idx);
        self.parts[m.tier].order.unlink(&mut self.pages, idx);
        self.pages.remove(idx);
        self.dirty -= m.dirty as usize;
        let rule = self.parts[m.tier].rule.as_mut().expect("a tier with pages has a rule");
        let was = rule.remove(a.key, &mut self.evicted);
        debug_assert!(was, "page {} resident but not in its tier's rule", a.key);
        self.evictions(m.tier, a, fx);
        m
    }

    fn read(&mut self, a: &Access, fx: &mut Effects) {
        if let Some(idx) = self.pages.find(a.key) {
            let m = *self.pages.val(idx);
            self.touch(m.tier, a, m.dirty, fx);
            self.used(idx, a);
            fx.hit = true;
            fx.tier.hit_in = Some(tier_of(m.tier));
            return;
        }
        fx.push(Io::Fetch { key: a.key, pages: 1 });
        if let Some(t) = self.read_tier() {
            self.admit(t, a, false, fx);
        }
    }

    fn write(&mut self, a: &Access, fx: &mut Effects) {
        let w = self.write_tier();
        let Some(idx) = self.pages.find(a.key) else {
            if !self.admit(w, a, true, fx) {
                fx.push(Io::WriteThrough { key: a.key });
            }
            return;
        };
        let m = *self.pages.val(idx);
        fx.hit = true;
        fx.tier.hit_in = Some(tier_of(m.tier));
        if m.tier == w {
            self.touch(w, a, true, fx);
            self.used(idx, a);
            if !m.dirty {
                self.pages.val_mut(idx).dirty = true;
                self.dirty += 1;
            }
            fx.push(Io::CacheWrite { key: a.key });
            return;
        }
        // Write Purge: the DRAM copy goes, the new contents go to NVRAM (whole:
        // a partial write has the rest of the page from DRAM).
        self.drop_page(idx, a, fx);
        let whole = Access { partial: false, ..*a };
        if self.admit(NVRAM, &whole, true, fx) {
            fx.tier.write_purge = true;
        } else {
            fx.push(Io::WriteThrough { key: a.key });
        }
    }

    fn trim(&mut self, a: &Access, fx: &mut Effects) {
        let found = self.pages.find(a.key).map(|idx| self.drop_page(idx, a, fx));
        // Every rule forgets the key, also the history it keeps of non-resident ones.
        for t in [DRAM, NVRAM] {
            if found.is_none_or(|m| m.tier != t) {
                if let Some(rule) = self.parts[t].rule.as_mut() {
                    let was = rule.remove(a.key, &mut self.evicted);
                    debug_assert!(!was, "page {} in a rule but not in the cache", a.key);
                    self.evictions(t, a, fx);
                }
            }
        }
        if let Some(m) = found {
            fx.hit = true;
            fx.push(Io::Invalidate { key: a.key, dirty: m.dirty });
        }
    }
}

impl Policy for NvramCache {
    #[inline]
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        fx.tiered = true;
        match a.op {
            Op::Read => self.read(a, fx),
            Op::Write => self.write(a, fx),
            Op::Trim => self.trim(a, fx),
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        if self.dirty == 0 {
            return;
        }
        // Sorted, so write-back order (and anything charged by address) is deterministic.
        let mut keys: Vec<u64> = Vec::with_capacity(self.dirty);
        for p in &self.parts {
            keys.extend(p.order.keys(&self.pages).into_iter().filter(|&k| {
                let idx = self.pages.find(k).expect("listed pages are resident");
                self.pages.val(idx).dirty
            }));
        }
        keys.sort_unstable();
        for key in keys {
            let idx = self.pages.find(key).expect("listed pages are resident");
            let m = self.pages.val_mut(idx);
            m.dirty = false;
            if let Some(r) = self.parts[m.tier].rule.as_mut() {
                r.cleaned(key);
            }
            fx.push(Io::WriteBack { key, pages: 1 });
        }
        self.dirty = 0;
    }

    fn stats(&self) -> PolicyStats {
        let sum = |f: fn(&dyn Replacement) -> usize| {
            self.parts.iter().filter_map(|p| p.rule.as_deref()).map(f).sum::<usize>() as u64
        };
        PolicyStats {
            capacity: self.capacity as u64,
            resident: sum(|r| r.len()),
            dirty: self.dirty as u64,
            ghosts: sum(|r| r.ghosts()),
        }
    }

    fn needs_future(&self) -> bool {
        self.future
    }
}

/// NVRAM and DRAM pages for `capacity` pages and NVRAM share `share`.
pub fn split(capacity: usize, share: f64) -> (usize, usize) {
    let mut nvram = ((capacity as f64 * share).round() as usize).min(capacity);
    if share > 0.0 && nvram == 0 {
        nvram = 1;
    }
    if share < 1.0 && nvram == capacity && capacity > 1 {
        nvram = capacity - 1;
    }
    (capacity - nvram, nvram)
}

const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "nvram",
        default: "30%",
        about: "NVRAM's share of the cache, 0-100% (paper 003 sweeps 10-90%); DRAM has the rest",
    },
    ParamInfo {
        name: "tier",
        default: "lru",
        about:
            "replacement rule of each tier, a spec: lru (paper 003), fifo, clock, lfu, 2q, arc, lirs, s3fifo, belady \
                (e.g. 2q(kin=30%))",
    },
];

fn build(spec: &Spec, ctx: &BuildCtx, rules: &Rules, read_global: bool) -> Result<Box<dyn Policy>, SpecError> {
    check_mode(
        spec,
        ctx,
        &[Mode::WriteBack],
        "the DRAM + NVRAM cache has its own write semantics (writes stay in NVRAM until it replaces them): \
         only write-back",
    )?;
    let share = spec.ratio("nvram")?;
    let (dram, nvram) = split(ctx.capacity.max(1), share);
    let cache = NvramCache::new(&mut |pages| rules.nested(spec, "tier", None, pages, ctx), dram, nvram, read_global)?;
    Ok(Box::new(cache))
}

fn build_volatile(spec: &Spec, ctx: &BuildCtx, rules: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    build(spec, ctx, rules, false)
}

fn build_global(spec: &Spec, ctx: &BuildCtx, rules: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    build(spec, ctx, rules, true)
}

pub const READ_VOLATILE: PolicyInfo = PolicyInfo {
    name: "read-volatile",
    about: "paper 003 DRAM + NVRAM cache: writes cached in NVRAM, reads in DRAM only (LRU Volatile); \
            Write Global, Write Purge",
    params: PARAMS,
    build: build_volatile,
    rule: None,
};

pub const READ_GLOBAL: PolicyInfo = PolicyInfo {
    name: "read-global",
    about: "paper 003 DRAM + NVRAM cache: writes cached in NVRAM, a read miss replaces the least recent page of \
            either tier (LRU Global); Write Global, Write Purge",
    params: PARAMS,
    build: build_global,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Counters;
    use crate::policy::registry::build as build_spec;
    use crate::policy::NEVER;
    use crate::sim::{SimConfig, Simulator};
    use crate::trace::{MemoryReader, Request, Unit};

    fn ctx(capacity: usize) -> BuildCtx {
        BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 }
    }

    fn policy(spec: &str, capacity: usize) -> Box<dyn Policy> {
        build_spec(spec, &ctx(capacity)).unwrap_or_else(|e| panic!("{spec}: {e}")).0
    }

    /// (op, key) steps: 'R' / 'W' / 'T'.
    fn steps(text: &str) -> Vec<(Op, u64)> {
        text.split_whitespace()
            .map(|w| {
                let op = match &w[..1] {
                    "R" => Op::Read,
                    "W" => Op::Write,
                    _ => Op::Trim,
                };
                (op, w[1..].parse().unwrap())
            })
            .collect()
    }

    /// Each step's (hit, effects, tier side) through the policy directly.
    fn run(p: &mut dyn Policy, steps: &[(Op, u64)]) -> Vec<(bool, Vec<Io>, crate::policy::TierFx)> {
        let mut fx = Effects::new();
        steps
            .iter()
            .enumerate()
            .map(|(i, &(op, key))| {
                let a = Access {
                    time: i as u64,
                    key,
                    op,
                    partial: false,
                    seq: i as u64,
                    next_use: NEVER,
                    request_pages: 1,
                };
                fx.clear();
                p.access(&a, &mut fx);
                (fx.hit, fx.io.clone(), fx.tier)
            })
            .collect()
    }

    /// The simulator's counters for `steps` (one page per request), drain included.
    fn counters(spec: &str, capacity: usize, steps: &[(Op, u64)]) -> Counters {
        let reqs: Vec<Request> =
            steps.iter().map(|&(op, key)| Request { time: 0, addr: key, len: 1, dev: 0, op }).collect();
        let mut p = policy(spec, capacity);
        let mut reader = MemoryReader::new(reqs.into(), Unit::Pages);
        Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).run(&mut reader).unwrap()
    }

    use Io::{CacheWrite as Cw, Evict as Ev, Fetch as F, WriteBack as Wb};

    /// Paper 003 Table 1 by hand, Read Volatile, 2 DRAM + 2 NVRAM pages: every
    /// class but read-replace-dirty, which Read Volatile never has (DRAM is clean).
    #[test]
    fn table1_by_hand_read_volatile() {
        let spec = "read-volatile(nvram=50%)";
        let trace = steps("W1 W2 W3 R1 R3 R4 R5 W4 W3 R2");
        let mut p = policy(spec, 4);
        let got = run(p.as_mut(), &trace);
        let io: Vec<(bool, Vec<Io>)> = got.iter().map(|(h, io, _)| (*h, io.clone())).collect();
        assert_eq!(
            io,
            vec![
                // W1, W2: write misses into free NVRAM frames: write-overwrite-clean (0 disk accesses)
                (false, vec![Cw { key: 1 }]),
                (false, vec![Cw { key: 2 }]),
                // W3: NVRAM full, its LRU page 1 is dirty: written back (write-replace-dirty, 1),
                // then moved to the free DRAM (Write Global): no Evict, it stays cached
                (false, vec![Wb { key: 1, pages: 1 }, Cw { key: 3 }]),
                // R1: read hit in DRAM; R3: read hit in NVRAM (0)
                (true, vec![]),
                (true, vec![]),
                // R4: read miss, DRAM has a free frame: read-overwrite-clean (1)
                (false, vec![F { key: 4, pages: 1 }, Cw { key: 4 }]),
                // R5: read miss replacing DRAM's clean LRU page 1: read-overwrite-clean (1)
                (false, vec![F { key: 5, pages: 1 }, Ev { key: 1, dirty: false }, Cw { key: 5 }]),
                // W4: write hit in DRAM: Write Purge to NVRAM, whose LRU page 2 is dirty:
                // processed as a write miss, write-replace-dirty (1); 2 moves to the frame 4 left
                (true, vec![Wb { key: 2, pages: 1 }, Cw { key: 4 }]),
                // W3: write hit in NVRAM (0)
                (true, vec![Cw { key: 3 }]),
                // R2: read hit in DRAM, where Write Global put it
                (true, vec![]),
            ]
        );
        let tiers: Vec<Option<Tier>> = got.iter().map(|(_, _, t)| t.hit_in).collect();
        let (d, n) = (Some(Tier::Dram), Some(Tier::Nvram));
        assert_eq!(tiers, vec![None, None, None, d, n, None, None, d, n, d]);
        assert!(got[7].2.write_purge && got[7].2.to_dram == 1 && got[7].2.replaced_dirty);
        assert!(got[2].2.to_dram == 1 && got[2].2.replaced_dirty && !got[2].2.write_purge);

        let c = counters(spec, 4, &trace);
        let classes = (c.read_replace_dirty, c.read_overwrite_clean, c.write_replace_dirty, c.write_overwrite_clean);
        assert_eq!(classes, (0, 2, 2, 2));
        assert_eq!((c.read_hits_dram, c.read_hits_nvram, c.write_hits_dram, c.write_hits_nvram), (2, 1, 1, 1));
        assert_eq!((c.migrations_to_nvram, c.migrations_to_dram), (1, 2));
        assert_eq!((c.backing_reads, c.backing_writes), (2, 2));
        assert_eq!(c.backing_accesses(), 4);
        assert_eq!(c.hits, 5);
        // 3 and 4 are dirty in NVRAM at the end
        assert_eq!(c.drain_writes, 2);
    }

    /// Table 1 by hand, Read Global, 2 DRAM + 2 NVRAM pages: a read miss that
    /// replaces a dirty NVRAM page costs two disk accesses.
    #[test]
    fn table1_by_hand_read_global() {
        let spec = "read-global(nvram=50%)";
        let trace = steps("W1 W2 R3 R4 R5 W6 W7 R5 R6 W4");
        let mut p = policy(spec, 4);
        let got = run(p.as_mut(), &trace);
        let io: Vec<(bool, Vec<Io>)> = got.iter().map(|(h, io, _)| (*h, io.clone())).collect();
        assert_eq!(
            io,
            vec![
                (false, vec![Cw { key: 1 }]),
                (false, vec![Cw { key: 2 }]),
                // R3, R4: DRAM's free frames first: read-overwrite-clean
                (false, vec![F { key: 3, pages: 1 }, Cw { key: 3 }]),
                (false, vec![F { key: 4, pages: 1 }, Cw { key: 4 }]),
                // R5: both full; NVRAM's LRU page 1 (used at 0) is older than DRAM's 3 (used
                // at 2): the read replaces dirty page 1: read-replace-dirty (2). Page 1 is
                // older than DRAM's LRU page too, so Write Global does not keep it.
                (
                    false,
                    vec![F { key: 5, pages: 1 }, Ev { key: 1, dirty: true }, Wb { key: 1, pages: 1 }, Cw { key: 5 }]
                ),
                // W6: NVRAM's LRU page 2 is dirty: write-replace-dirty (1)
                (false, vec![Ev { key: 2, dirty: true }, Wb { key: 2, pages: 1 }, Cw { key: 6 }]),
                // W7: NVRAM's LRU page 5 is clean (a read): write-overwrite-clean (0); 5 is more
                // recent than DRAM's LRU page 3, so it moves to DRAM and 3 leaves
                (false, vec![Ev { key: 3, dirty: false }, Cw { key: 7 }]),
                (true, vec![]),
                (true, vec![]),
                // W4: write hit in DRAM, Write Purge replacing dirty 7 in NVRAM: write-replace-dirty
                (true, vec![Wb { key: 7, pages: 1 }, Cw { key: 4 }]),
            ]
        );
        assert_eq!(got[7].2.hit_in, Some(Tier::Dram));
        assert_eq!(got[8].2.hit_in, Some(Tier::Nvram));
        assert!(got[6].2.to_dram == 1 && !got[6].2.replaced_dirty);

        let c = counters(spec, 4, &trace);
        let classes = (c.read_replace_dirty, c.read_overwrite_clean, c.write_replace_dirty, c.write_overwrite_clean);
        assert_eq!(classes, (1, 2, 2, 3));
        assert_eq!((c.read_hits_dram, c.read_hits_nvram, c.write_hits_dram, c.write_hits_nvram), (1, 1, 1, 0));
        assert_eq!((c.migrations_to_nvram, c.migrations_to_dram), (1, 2));
        assert_eq!((c.backing_reads, c.backing_writes), (3, 3));
        assert_eq!(c.backing_accesses(), 2 + 2 + 2);
    }

    /// A seeded random trace: reads, writes and trims over a skewed key set.
    fn random_trace(seed: u64, len: usize, keys: u64, trims: bool) -> Vec<(Op, u64, bool)> {
        let mut x = seed | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..len)
            .map(|_| {
                let r = next();
                // half the accesses to a hot eighth of the keys
                let key = if r & 1 == 0 { (r >> 8) % (keys / 8).max(1) } else { (r >> 8) % keys };
                let op = match (r >> 40) % 20 {
                    0..=11 => Op::Read,
                    19 if trims => Op::Trim,
                    _ => Op::Write,
                };
                (op, key, (r >> 50) % 5 == 0)
            })
            .collect()
    }

    fn requests(trace: &[(Op, u64, bool)], partial: bool) -> (Vec<Request>, Unit) {
        if !partial {
            let reqs = trace.iter().map(|&(op, key, _)| Request { time: 0, addr: key, len: 1, dev: 0, op }).collect();
            return (reqs, Unit::Pages);
        }
        // Bytes: a partial write covers the first half of its page.
        let reqs = trace
            .iter()
            .map(|&(op, key, half)| {
                let len = if half && op == Op::Write { 2048 } else { 4096 };
                Request { time: 0, addr: key * 4096, len, dev: 0, op }
            })
            .collect();
        (reqs, Unit::Bytes)
    }

    fn sim(spec: &str, capacity: usize, reqs: &[Request], unit: Unit) -> Counters {
        let mut p = policy(spec, capacity);
        let mut reader = MemoryReader::new(reqs.to_vec().into(), unit);
        Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).run(&mut reader).unwrap()
    }

    /// Formula (1) over random traces, both policies, shares from 0 to 100 %: 2·RRD + ROC + WRD is exactly the disk reads and writes the
    /// policy made during the run (read-for-write aside, which Table 1 does not
    /// know: its blocks are written whole); and the classes partition the accesses.
    #[test]
    fn formula_1_counts_every_disk_access() {
        for seed in 1..=3u64 {
            let trace = random_trace(seed * 7919, 3000, 80, seed % 2 == 0);
            for partial in [false, true] {
                let (reqs, unit) = requests(&trace, partial);
                for policy in ["read-volatile", "read-global"] {
                    for tier in ["lru", "fifo", "clock", "arc"] {
                        for share in [0, 10, 20, 30, 50, 70, 90, 100] {
                            for capacity in [3, 16, 40] {
                                let spec = format!("{policy}(nvram={share}%,tier={tier})");
                                let c = sim(&spec, capacity, &reqs, unit);
                                let ctx = format!("{spec} at {capacity} pages, seed {seed}, partial {partial}");
                                assert_eq!(
                                    c.backing_reads + c.backing_writes,
                                    c.backing_accesses() + c.read_for_write,
                                    "{ctx}: {c:?}"
                                );
                                let rc = c.read_replace_dirty + c.read_overwrite_clean;
                                assert_eq!(c.read_pages, rc + c.read_hits, "{ctx}");
                                let wc = c.write_replace_dirty + c.write_overwrite_clean;
                                assert_eq!(c.write_pages, wc + c.write_hits - c.migrations_to_nvram, "{ctx}");
                                assert_eq!(c.read_hits, c.read_hits_dram + c.read_hits_nvram, "{ctx}");
                                assert_eq!(c.write_hits, c.write_hits_dram + c.write_hits_nvram, "{ctx}");
                                if share == 0 {
                                    assert_eq!(c.migrations_to_nvram + c.migrations_to_dram + c.read_hits_nvram, 0);
                                }
                                if policy == "read-volatile" && share > 0 && share < 100 {
                                    // DRAM is always clean: no read replaces a dirty page
                                    assert_eq!(c.read_replace_dirty, 0, "{ctx}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Paper 003 Table 2's Read Volatile column: without trims, NVRAM holds only
    /// dirty pages, so write-overwrite-clean happens exactly once per NVRAM frame
    /// (2217 per 10 % in the paper) and read-replace-dirty never.
    #[test]
    fn read_volatile_overwrites_clean_once_per_nvram_frame() {
        let trace = random_trace(99, 5000, 200, false);
        let (reqs, unit) = requests(&trace, false);
        for share in [10, 20, 30, 50, 90] {
            let c = sim(&format!("read-volatile(nvram={share}%)"), 100, &reqs, unit);
            assert_eq!((c.read_replace_dirty, c.write_overwrite_clean), (0, share), "{share}%");
        }
    }

    /// Effects of `a` and `b` agree access by access (and so do their drains).
    fn same_effects(a: &str, b: &str, capacity: usize, trace: &[(Op, u64, bool)]) {
        let (mut p, mut q) = (policy(a, capacity), policy(b, capacity));
        let (mut fp, mut fq) = (Effects::new(), Effects::new());
        let mut next = vec![NEVER; trace.len()];
        let mut seen = hashbrown::HashMap::new();
        for (i, &(op, k, _)) in trace.iter().enumerate().rev() {
            if op != Op::Trim {
                if let Some(j) = seen.insert(k, i as u64) {
                    next[i] = j;
                }
            }
        }
        for (i, &(op, key, partial)) in trace.iter().enumerate() {
            let acc = Access {
                time: i as u64,
                key,
                op,
                partial: partial && op == Op::Write,
                seq: i as u64,
                next_use: next[i],
                request_pages: 1,
            };
            fp.clear();
            fq.clear();
            p.access(&acc, &mut fp);
            q.access(&acc, &mut fq);
            assert_eq!((fp.hit, &fp.io), (fq.hit, &fq.io), "{a} vs {b} at {capacity} pages, step {i} {op:?} {key}");
            assert_eq!(p.stats(), q.stats(), "{a} vs {b}, step {i}");
        }
        fp.clear();
        fq.clear();
        p.drain(&mut fp);
        q.drain(&mut fq);
        assert_eq!(fp.io, fq.io, "{a} vs {b}: drain");
    }

    /// With no NVRAM the hierarchy is exactly a DRAM-only write-back cache under
    /// the same rule: same hits, same evictions, same write-backs, every rule.
    /// With no DRAM, Read Global is the rule as a write-back cache over NVRAM,
    /// and Read Volatile caches no reads (write-only mode).
    #[test]
    fn degenerate_shares_equal_single_tier_caches() {
        for seed in 1..=4u64 {
            let trace = random_trace(seed * 104_729, 2500, 60, true);
            for capacity in [1, 2, 5, 17, 40] {
                for rule in crate::policy::registry::rule_names() {
                    for policy in ["read-volatile", "read-global"] {
                        same_effects(&format!("{policy}(nvram=0%,tier={rule})"), rule, capacity, &trace);
                    }
                    same_effects(&format!("read-global(nvram=100%,tier={rule})"), rule, capacity, &trace);
                }
                for rule in ["lru", "fifo", "clock", "lfu"] {
                    let wo = format!("{rule}(mode=write-only)");
                    same_effects(&format!("read-volatile(nvram=100%,tier={rule})"), &wo, capacity, &trace);
                }
            }
        }
    }

    /// Read Global keeps reads in NVRAM too, so it hits more than Read Volatile
    /// when NVRAM is large; and a page is never in both tiers.
    #[test]
    fn read_global_caches_reads_in_nvram() {
        let trace = steps("W1 W2 W3 R4 R5 R6 R4 R5 R6");
        // 1 DRAM page, 3 NVRAM pages
        let hits = |spec: &str| run(policy(spec, 4).as_mut(), &trace).iter().filter(|s| s.0).count();
        assert_eq!(hits("read-volatile(nvram=75%)"), 0);
        assert_eq!(hits("read-global(nvram=75%)"), 3);
    }

    #[test]
    fn tiers_hold_disjoint_pages() {
        let trace = random_trace(5, 4000, 50, true);
        for policy in ["read-volatile", "read-global"] {
            let mut lru = |pages| crate::policy::registry::build_rule("lru", &ctx(pages)).map(|(r, _)| r);
            let mut c = NvramCache::new(&mut lru, 6, 4, policy == "read-global").unwrap();
            let mut fx = Effects::new();
            for (i, &(op, key, _)) in trace.iter().enumerate() {
                let a = Access {
                    time: i as u64,
                    key,
                    op,
                    partial: false,
                    seq: i as u64,
                    next_use: NEVER,
                    request_pages: 1,
                };
                fx.clear();
                c.access(&a, &mut fx);
                let (d, n) = (c.parts[DRAM].rule.as_ref().unwrap(), c.parts[NVRAM].rule.as_ref().unwrap());
                for k in 0..50 {
                    assert!(!(d.contains(k) && n.contains(k)), "{policy}: {k} in both tiers at step {i}");
                    assert_eq!(c.tier(k).is_some(), d.contains(k) || n.contains(k), "{policy}: {k} at step {i}");
                    if c.tier(k) == Some(Tier::Dram) {
                        assert!(!c.pages.val(c.pages.find(k).unwrap()).dirty, "{policy}: dirty {k} in DRAM");
                    }
                }
                assert!(d.len() <= 6 && n.len() <= 4);
                if op == Op::Write {
                    assert_eq!(c.tier(key), Some(Tier::Nvram), "{policy}: a write is cached in NVRAM");
                }
                if op == Op::Read && policy == "read-volatile" && !fx.hit {
                    assert_eq!(c.tier(key), Some(Tier::Dram), "{policy}: a read miss goes to DRAM");
                }
            }
        }
    }

    #[test]
    fn shares_and_errors() {
        assert_eq!(split(10, 0.0), (10, 0));
        assert_eq!(split(10, 0.3), (7, 3));
        assert_eq!(split(10, 1.0), (0, 10));
        assert_eq!(split(10, 0.01), (9, 1));
        assert_eq!(split(10, 0.99), (1, 9));
        assert_eq!(split(1, 0.5), (0, 1));
        for spec in ["read-volatile", "read-global(nvram=0%)", "read-global(nvram=100%,tier=arc)"] {
            assert_eq!(policy(spec, 10).stats().capacity, 10, "{spec}");
        }
        let err = |spec: &str| build_spec(spec, &ctx(10)).err().unwrap().to_string();
        assert!(err("read-global(nvram=150%)").contains("nvram"));
        assert!(err("read-global(tier=mru)").contains("tier"));
        let e = err("read-volatile(mode=write-through)");
        assert!(e.contains("mode") && e.contains("only write-back"), "{e}");
        let e = build_spec("read-volatile", &BuildCtx { capacity: 10, mode: Mode::ReadOnly, page_bytes: 4096 })
            .err()
            .unwrap();
        assert!(matches!(e, SpecError::BadValue { ref param, .. } if param == "mode"), "{e}");
    }
}
