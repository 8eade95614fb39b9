//! Which segments the cache holds, decided by the simulator's own policies
//! (`ssdcache::policy`), so that `serve` and `sim` run the same code.
//!
//! - **PWC** (write-back): each request's segments are fed to
//!   [`Pwc`](ssdcache::policy::tiered::pwc::Pwc), one [`Access`] per segment
//!   touched. The simulator keys pages as `dev<<44 | page` and PWC groups
//!   them as `key / pages_per_segment`; with one device that is `byte offset
//!   / segment size`, which is the key we feed, to a PWC configured with one
//!   "page" per segment. PWC counts consecutive references to one segment
//!   once, so a request's pages in one segment are one reference either way.
//!   Nothing moves on access: the caching-and-eviction procedure
//!   ([`Decider::procedure`]) turns PWC's new slot→segment mapping into a plan.
//!   From then until [`Decider::procedure_done`] the frequencies are frozen
//!   (Fig. 5 lines 3 and 27): requests are served meanwhile, but their
//!   references are not counted.
//! - **Replacement** (write-through, write-around, read-only): a classic
//!   policy (LRU by default) built by the simulator's registry with one page
//!   per segment and the cache's slots as capacity, in the simulator's
//!   `write-through`, `write-around` or `read-only` mode. Its effects become
//!   slot moves at once: an `Evict` (or, read-only, the `Invalidate` of a
//!   write) frees the segment's slot, and the engine drops the segment from
//!   its map before any fill ([`Decider::take_evicted`],
//!   [`Decider::take_dropped`]); a `CacheWrite` of a segment not yet held
//!   fills a free slot ([`Decider::reference`] returns the fills).
//!   Trims are not fed to it (the engine ignores trims; see `engine`).
//! - **None** (passthrough).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use ssdcache::policy::registry::{self, BuildCtx};
use ssdcache::policy::tiered::pwc::{Pwc, PwcConfig};
use ssdcache::policy::{Access, Effects, Io, Mode, Policy, NEVER};
use ssdcache::trace::Op;

use crate::meta::Meta;
use crate::mode::CacheMode;

/// The policy name that means paper 000's PWC (write-back only, and its default).
pub const PWC: &str = "pwc";

/// The policy behind a cache, with its effect buffer.
pub struct Decider {
    kind: Kind,
    /// The policy's canonical spec, for status.
    name: String,
    fx: Effects,
    seq: u64,
    /// PWC's frequencies may not change: a procedure is running (Fig. 5 line 3).
    frozen: bool,
    /// A write miss fills its segment in this mode (write-through), as a
    /// read miss does in every replacement mode.
    fills_writes: bool,
    /// Segments whose miss the policy declined to cache since the last
    /// [`take_declined`](Self::take_declined) (an admission layer: `seqcut`,
    /// `nhit`): bypasses, where the mode would have filled.
    declined: u32,
    /// What it was built from, to build it again ([`Decider::resync`]).
    mode: CacheMode,
    spec: String,
}

enum Kind {
    Pwc(Box<Pwc>),
    Replace {
        policy: Box<dyn Policy>,
        /// Segment → slot, as the policy sees it.
        slot_of: HashMap<u64, u32>,
        free: Vec<u32>,
        /// Segments a write just invalidated (read-only mode), for the engine
        /// to drop from the map before any fill may reuse their slots.
        dropped: Vec<u64>,
        /// Segments the policy evicted: likewise dropped from the map first.
        /// (Most evictions make room for a fill into the same slot, but not
        /// all: S3-FIFO or CLOCK may evict a segment and fill nothing, and a
        /// later fill of that segment into another slot must not find the
        /// map still holding it.)
        evicted: Vec<u64>,
    },
    None,
}

impl Decider {
    /// The decider of `mode`, seeded from `meta` ([`Decider::restore`]). For
    /// the replacement modes, `policy` is a simulator policy spec (e.g.
    /// `lru`, `arc`).
    pub fn new(mode: CacheMode, policy: &str, meta: &Meta) -> Result<Decider, String> {
        let slots = meta.map.len();
        let segment = meta.geometry.segment_size as u64;
        let mut name = "none".to_string();
        let kind = match mode {
            CacheMode::WriteBack if policy == PWC => {
                let pwc = Pwc::new(slots, PwcConfig { period: 0, idle: 0, ..PwcConfig::paper(1) });
                name = "pwc (paper 000)".into();
                Kind::Pwc(Box::new(pwc))
            }
            CacheMode::WriteBack | CacheMode::WriteThrough | CacheMode::WriteAround | CacheMode::ReadOnly => {
                let sim_mode = mode.sim_mode().unwrap_or(Mode::ReadOnly);
                let ctx = BuildCtx { capacity: slots.max(1), mode: sim_mode, page_bytes: segment };
                let (policy, spec) = registry::build(policy, &ctx).map_err(|e| format!("--policy: {e}"))?;
                name = spec.canonical();
                if policy.needs_future() || policy.has_maintenance() || groups_flash_blocks(&spec.name) {
                    return Err(format!(
                        "--policy {name}: a {mode} cache needs a replacement policy that decides on each \
                         access (lru, fifo, clock, lfu, 2q, arc, lirs, s3fifo, sieve, ...{pwc}; `ssdcache policies` \
                         lists them)",
                        mode = mode.name(),
                        pwc = if mode == CacheMode::WriteBack { ", or pwc" } else { "" },
                    ));
                }
                Kind::Replace {
                    policy,
                    slot_of: HashMap::new(),
                    free: Vec::new(),
                    dropped: Vec::new(),
                    evicted: Vec::new(),
                }
            }
            CacheMode::Passthrough => Kind::None,
        };
        let fills_writes = matches!(mode, CacheMode::WriteThrough | CacheMode::WriteBack);
        let mut d = Decider {
            kind,
            name,
            fx: Effects::new(),
            seq: 0,
            frozen: false,
            fills_writes,
            declined: 0,
            mode,
            spec: policy.to_string(),
        };
        d.restore(meta);
        Ok(d)
    }

    /// Whether the policy fills on misses (a replacement policy), rather
    /// than PWC's procedure or no caching at all.
    pub fn fills_on_miss(&self) -> bool {
        matches!(self.kind, Kind::Replace { .. })
    }

    /// The policy's name, for status.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn access(&mut self, op: Op, key: u64) {
        let a = Access { time: 0, key, op, partial: false, seq: self.seq, next_use: NEVER, request_pages: 1 };
        self.seq += 1;
        self.fx.clear();
        match &mut self.kind {
            Kind::Pwc(p) => p.access(&a, &mut self.fx),
            Kind::Replace { policy, .. } => policy.access(&a, &mut self.fx),
            Kind::None => {}
        }
    }

    /// Feeds a request on segments `first..=last` to the policy; returns
    /// the fills to do now, `(slot, segment)` (replacement modes only).
    pub fn reference(&mut self, op: Op, first: u64, last: u64) -> Vec<(u32, u64)> {
        let mut fills = Vec::new();
        if matches!(self.kind, Kind::None) || (op == Op::Trim && !matches!(self.kind, Kind::Pwc(_))) || self.frozen {
            return fills;
        }
        for key in first..=last {
            self.access(op, key);
            if let Kind::Replace { slot_of, free, dropped, evicted, .. } = &mut self.kind {
                let would_fill = op == Op::Read || (op == Op::Write && self.fills_writes);
                if !self.fx.hit && would_fill && !self.fx.io.contains(&Io::CacheWrite { key }) {
                    self.declined += 1;
                }
                take_effects(&self.fx, slot_of, free, &mut fills, dropped, evicted);
            }
        }
        fills
    }

    /// How many segments' misses the policy declined to cache since the last
    /// call (see `declined`).
    pub fn take_declined(&mut self) -> u32 {
        std::mem::take(&mut self.declined)
    }

    /// The segments writes invalidated since the last call (read-only
    /// mode): the engine drops them from the map at once, under the same
    /// lock as the fills, so a fill never meets a segment the policy has
    /// dropped but the map still holds.
    pub fn take_dropped(&mut self) -> Vec<u64> {
        match &mut self.kind {
            Kind::Replace { dropped, .. } => std::mem::take(dropped),
            _ => Vec::new(),
        }
    }

    /// The segments the policy evicted since the last call: the engine drops
    /// them from the map before the fills, as [`take_dropped`](Self::take_dropped)'s.
    pub fn take_evicted(&mut self) -> Vec<u64> {
        match &mut self.kind {
            Kind::Replace { evicted, .. } => std::mem::take(evicted),
            _ => Vec::new(),
        }
    }

    /// Seeds the policy from the metadata: PWC gets the address map, the
    /// frequency of every touched segment and the evict clock; a replacement
    /// policy gets the cached segments, in slot order (a warm restart keeps
    /// them). Call it on a fresh decider or, for PWC, to resync after a
    /// failed procedure.
    pub fn restore(&mut self, meta: &Meta) {
        let map = &meta.map;
        match &mut self.kind {
            Kind::Pwc(p) => {
                let touched = meta.touched.iter().zip(&meta.freq).enumerate().filter(|(_, (t, _))| **t);
                p.restore(map, touched.map(|(h, (_, f))| (h as u64, *f)), meta.evict_hand as usize)
            }
            Kind::Replace { .. } => {
                let cached: Vec<(u32, u64)> =
                    map.iter().enumerate().filter_map(|(s, h)| h.map(|h| (s as u32, h))).collect();
                for (slot, h) in cached {
                    self.access(Op::Read, h);
                    if let Kind::Replace { slot_of, .. } = &mut self.kind {
                        // Capacity = slots, so nothing is evicted while seeding.
                        slot_of.insert(h, slot);
                    }
                }
                if let Kind::Replace { slot_of, free, .. } = &mut self.kind {
                    let used: std::collections::HashSet<u32> = slot_of.values().copied().collect();
                    *free = (0..map.len() as u32).rev().filter(|s| !used.contains(s)).collect();
                }
            }
            Kind::None => {}
        }
    }

    /// Makes the policy agree with the map again after a fill or an eviction
    /// failed half way: PWC is restored from `meta`; a replacement policy is
    /// built afresh and seeded with the segments `meta` maps (its history
    /// is lost, the map's contents are kept).
    pub fn resync(&mut self, meta: &Meta) {
        if matches!(self.kind, Kind::Replace { .. }) {
            let declined = self.declined;
            *self = Decider::new(self.mode, &self.spec.clone(), meta).expect("it was built from this spec before");
            self.declined = declined;
        } else {
            self.restore(meta);
        }
    }

    /// PWC only: runs its caching-and-eviction procedure and returns the
    /// plan against `current` (slot → segment as the map holds it): the
    /// slots whose segment changed, in the order PWC's evict clock met them
    /// (from the slot after its previous position), so the persisted evict
    /// clock is PWC's. `None` for the other modes.
    ///
    /// It freezes the frequencies (Fig. 5 line 3: references are not counted
    /// until [`procedure_done`](Self::procedure_done), line 27), so the hot
    /// set the plan was made from does not drift while it is carried out.
    pub fn procedure(&mut self, current: &[Option<u64>]) -> Option<Vec<(u32, u64)>> {
        let Kind::Pwc(pwc) = &mut self.kind else { return None };
        self.frozen = true;
        let n = pwc.slots();
        let hand = pwc.evict_clock();
        self.fx.clear();
        pwc.procedure(&mut self.fx);
        let new = pwc.mapping();
        Some(
            (1..=n)
                .map(|i| (hand + i) % n)
                .filter(|&s| new[s] != current[s])
                .map(|s| (s as u32, new[s].expect("PWC empties no slot")))
                .collect(),
        )
    }

    /// The procedure is over (done, failed or interrupted): references count
    /// again (Fig. 5 line 27).
    pub fn procedure_done(&mut self) {
        self.frozen = false;
    }

    /// Whether references are not being counted (a procedure runs).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// PWC's frequency table as the metadata stores it (`None` = never
    /// touched); `None` for the other modes.
    pub fn frequencies(&self) -> Option<impl Fn(u64) -> Option<u16> + '_> {
        match &self.kind {
            Kind::Pwc(p) => Some(move |h| p.touched_frequency(h)),
            _ => None,
        }
    }

    /// PWC's frequency of segment `h` (0 for other modes).
    pub fn frequency(&self, h: u64) -> u16 {
        match &self.kind {
            Kind::Pwc(p) => p.frequency(h),
            _ => 0,
        }
    }
}

/// A flash write buffer that groups pages into flash blocks (FAB, BPLRU,
/// CLC: their `block` parameter; ABM's write buffer is one of them): a
/// slot of `serve` is a segment, not a flash page, so they do not apply.
fn groups_flash_blocks(name: &str) -> bool {
    name == "abm" || registry::find(name).is_some_and(|info| info.params.iter().any(|p| p.name == "block"))
}

/// Turns a replacement policy's effects into slot moves: evictions free
/// slots, insertions of segments not held take one.
fn take_effects(
    fx: &Effects,
    slot_of: &mut HashMap<u64, u32>,
    free: &mut Vec<u32>,
    fills: &mut Vec<(u32, u64)>,
    dropped: &mut Vec<u64>,
    evicted: &mut Vec<u64>,
) {
    for io in &fx.io {
        if let Io::Evict { key, .. } | Io::Invalidate { key, .. } = *io {
            if let Some(s) = slot_of.remove(&key) {
                free.push(s);
                fills.retain(|&(_, h)| h != key);
                if matches!(io, Io::Invalidate { .. }) {
                    dropped.push(key);
                } else {
                    evicted.push(key);
                }
            }
        }
    }
    for io in &fx.io {
        if let Io::CacheWrite { key } = *io {
            if let Entry::Vacant(v) = slot_of.entry(key) {
                let s = free.pop().expect("the policy holds no more segments than there are slots");
                v.insert(s);
                fills.push((s, key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Geometry;

    /// Metadata of a cache with `map` as its address map (4 KiB segments).
    fn meta(map: &[Option<u64>]) -> Meta {
        let g = Geometry { segment_size: 4096, ssd_segments: map.len() as u32, hdd_segments: 64 };
        Meta { map: map.to_vec(), ..Meta::empty(g) }
    }

    #[test]
    fn lru_fills_on_read_misses_and_reuses_the_evicted_slot() {
        let mut d = Decider::new(CacheMode::WriteThrough, "lru", &meta(&[None, None])).unwrap();
        assert_eq!(d.reference(Op::Read, 5, 5), vec![(0, 5)]);
        assert_eq!(d.reference(Op::Read, 5, 6), vec![(1, 6)], "5 hits, 6 fills the other slot");
        assert_eq!(d.reference(Op::Read, 5, 5), vec![]);
        // 6 is the least recently used: 7 takes its slot.
        assert_eq!(d.reference(Op::Read, 7, 7), vec![(1, 7)]);
        // Write-through allocates on a write miss; write-around does not.
        assert_eq!(d.reference(Op::Write, 8, 8), vec![(0, 8)]);
        assert_eq!(d.reference(Op::Trim, 9, 9), vec![], "trims are not fed");
        let mut a = Decider::new(CacheMode::WriteAround, "lru", &meta(&[None, None])).unwrap();
        assert_eq!(a.reference(Op::Write, 8, 8), vec![]);
        assert_eq!(a.reference(Op::Read, 8, 8), vec![(0, 8)]);
    }

    /// Every policy of the registry, by its default spec (`admit` with an
    /// admitter and a rule): those a replacement mode accepts, which is every
    /// policy that decides on each access. Taken from the registry so that a
    /// new policy is tested under serve without an edit here; a refusal must
    /// be for that reason, not a spec error.
    fn serve_policies() -> Vec<String> {
        let mut accepted = Vec::new();
        for info in registry::POLICIES {
            let spec = match info.name {
                "admit" => "admit(by=nhit(n=2),rule=s3fifo)".to_string(),
                name => name.to_string(),
            };
            match Decider::new(CacheMode::WriteThrough, &spec, &meta(&[None; 4])) {
                Ok(_) => accepted.push(spec),
                // A policy with a future, maintenance or a write buffer (the flash
                // policies refuse a write-through mode) is not a serve policy.
                Err(e) => assert!(
                    e.contains("decides on each") || e.contains("parameter mode=write-through"),
                    "{spec}: refused for another reason: {e}"
                ),
            }
        }
        for must in
            ["lru", "arc", "s3fifo", "sieve", "wtinylfu", "lecar", "clockpro", "admit(by=nhit(n=2),rule=s3fifo)"]
        {
            assert!(accepted.iter().any(|a| a == must), "{must} is not accepted: {accepted:?}");
        }
        accepted
    }

    /// Every such policy in every replacement mode, driven as the engine
    /// drives it: the segments it drops leave the map first, then each fill
    /// must be of a segment the map does not hold (the data path asserts it),
    /// into a slot in range; the map never holds more than the slots.
    #[test]
    fn fills_never_meet_a_segment_the_map_still_holds() {
        let slots = 6usize;
        for policy in serve_policies() {
            let policy = policy.as_str();
            for mode in [CacheMode::WriteThrough, CacheMode::WriteAround, CacheMode::ReadOnly] {
                let mut d = Decider::new(mode, policy, &meta(&vec![None; slots])).unwrap();
                let mut map: Vec<Option<u64>> = vec![None; slots];
                let mut x: u64 = 0x2545_f491;
                for i in 0..20_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let op = if (x >> 61) < 2 { Op::Write } else { Op::Read };
                    // a skewed mix over 40 segments, some requests spanning two
                    let first = ((x >> 20) % 40).min((x >> 40) % 40);
                    let last = (first + (x >> 10) % 2).min(39);
                    let fills = d.reference(op, first, last);
                    for h in d.take_dropped().into_iter().chain(d.take_evicted()) {
                        map.iter_mut().filter(|m| **m == Some(h)).for_each(|m| *m = None);
                    }
                    for (slot, h) in fills {
                        assert!(
                            !map.contains(&Some(h)),
                            "{policy} {}: request {i} fills segment {h} into slot {slot}, but the map holds it",
                            mode.name()
                        );
                        map[slot as usize] = Some(h);
                    }
                }
            }
        }
    }

    #[test]
    fn read_only_fills_on_read_misses_and_a_write_frees_the_slot() {
        let mut d = Decider::new(CacheMode::ReadOnly, "lru", &meta(&[None, None])).unwrap();
        assert_eq!(d.reference(Op::Write, 4, 4), vec![], "a write miss is not cached");
        assert_eq!(d.reference(Op::Read, 4, 5), vec![(0, 4), (1, 5)]);
        assert_eq!(d.reference(Op::Read, 4, 4), vec![], "a hit");
        // A write to cached 4 invalidates it: its slot is free for the next miss,
        // and 5 (least recent, but still cached) stays.
        assert_eq!(d.take_dropped(), Vec::<u64>::new());
        assert_eq!(d.reference(Op::Write, 4, 4), vec![]);
        assert_eq!(d.take_dropped(), vec![4], "for the engine to drop from the map");
        assert_eq!(d.take_dropped(), Vec::<u64>::new());
        assert_eq!(d.reference(Op::Read, 6, 6), vec![(0, 6)]);
        assert_eq!(d.reference(Op::Read, 4, 4), vec![(1, 4)], "4 misses again; 5 was the LRU");
    }

    #[test]
    fn pwc_references_during_a_procedure_leave_frequencies_unchanged() {
        let mut d = Decider::new(CacheMode::WriteBack, PWC, &meta(&[None, None])).unwrap();
        for _ in 0..3 {
            d.reference(Op::Read, 1, 1);
            d.reference(Op::Write, 2, 2);
        }
        assert_eq!((d.frequency(1), d.frequency(2)), (15, 15));
        let plan = d.procedure(&[None, None]).unwrap();
        assert_eq!(plan.len(), 2);
        let during: Vec<u16> = (0..8).map(|h| d.frequency(h)).collect();
        assert!(d.is_frozen());
        for h in [1, 2, 3, 1, 3] {
            assert_eq!(d.reference(Op::Read, h, h + 1), vec![]);
            d.reference(Op::Write, h, h);
        }
        assert_eq!((0..8).map(|h| d.frequency(h)).collect::<Vec<_>>(), during, "frozen (Fig. 5 line 3)");
        d.procedure_done();
        assert!(!d.is_frozen());
        d.reference(Op::Read, 3, 3);
        d.reference(Op::Read, 1, 1);
        assert_eq!((d.frequency(3), d.frequency(1)), (during[3] + 5, during[1] + 5), "counted again (line 27)");
    }

    #[test]
    fn a_warm_restart_keeps_the_cached_segments_in_their_slots() {
        let mut d = Decider::new(CacheMode::WriteThrough, "lru", &meta(&[Some(3), None, Some(9)])).unwrap();
        assert_eq!(d.reference(Op::Read, 3, 3), vec![]);
        assert_eq!(d.reference(Op::Read, 9, 9), vec![]);
        assert_eq!(d.reference(Op::Read, 4, 4), vec![(1, 4)], "the one free slot");
        // Full: the LRU segment is 3 (seeded first, touched before 9).
        assert_eq!(d.reference(Op::Read, 10, 10), vec![(0, 10)]);
    }

    #[test]
    fn every_policy_drives_slots_and_bad_ones_are_refused() {
        for p in serve_policies() {
            let p = p.as_str();
            let mut d = Decider::new(CacheMode::WriteThrough, p, &meta(&[None; 4])).unwrap();
            let mut held: HashMap<u32, u64> = HashMap::new();
            for i in 0..200u64 {
                let key = (i * 7919) % 13;
                for (s, h) in d.reference(Op::Read, key, key) {
                    held.insert(s, h);
                }
                assert!(held.len() <= 4, "{p}");
            }
            // Every slot the decider thinks full holds what it says.
            if let Kind::Replace { slot_of, .. } = &d.kind {
                for (h, s) in slot_of {
                    assert_eq!(held.get(s), Some(h), "{p}");
                }
            }
        }
        assert!(Decider::new(CacheMode::WriteThrough, "belady", &meta(&[None; 4])).is_err());
        assert!(Decider::new(CacheMode::WriteThrough, "nosuch", &meta(&[None; 4])).is_err());
        let mut n = Decider::new(CacheMode::Passthrough, "lru", &meta(&[None; 4])).unwrap();
        assert_eq!(n.reference(Op::Read, 1, 3), vec![]);
        assert!(n.procedure(&[None; 4]).is_none());
    }
}
