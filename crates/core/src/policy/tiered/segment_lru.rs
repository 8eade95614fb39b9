//! Segment LRU: an SSD cache that manages whole segments under LRU and fills
//! a missed segment at once — the baseline paper 000 compares PWC against
//! ("an LRU SSD cache that caches reads only", §1, §4.1–4.2).
//!
//! Paper 000 puts its ≈2× gap down to this baseline's real-time fills: "LRU
//! caches and evicts in real time: the extra work of copying data to the SSD
//! takes SSD bandwidth" (§4.2). A page-unit LRU (`lru(mode=read-only)`) makes
//! a fill nearly free — the page it writes to the cache is the page the miss
//! read anyway — so that cost only appears when the unit is the segment, as in
//! the paper's system (§3.1: 128 KiB – 1 MiB segments) and in `ssdcache serve`.
//!
//! **Segments.** As in PWC: `segment` bytes, a power-of-two number of pages;
//! segment of a page key = `key >> log2(pages per segment)` (device bits kept).
//! The cache holds `capacity / pages_per_segment` segments under LRU.
//!
//! **Read.** A read of a page in a cached segment hits (the segment moves to
//! the MRU end). A read miss reads the *whole segment* from backing (one
//! `Fetch` of the segment) and, unless the mode is `write-only`, writes it to
//! the cache (`CacheWrite` per page); the LRU segment leaves first if the
//! cache is full (`Evict` per page, then one `WriteBack` per dirty run).
//!
//! **Write**, by mode:
//! - `read-only` (the paper's baseline, and the default of `paper000.py`): a
//!   write to a cached segment drops the whole segment (`Invalidate` per
//!   page) and goes to backing (`WriteThrough`); a write miss goes to backing.
//!   Neither is a hit: the cache serves nothing.
//! - `write-around`: a write to a cached segment updates the cached page and
//!   goes to backing; a miss goes to backing, nothing is filled.
//! - `write-through`: as write-around, but a write miss fills its segment
//!   first (as a read miss does) so the cache keeps the written page.
//! - `write-back` / `write-only`: a write to a cached segment stays in the
//!   cache (dirty); a write miss fills its segment first, then writes the
//!   page into the cache (dirty). Dirty pages are written back when their
//!   segment leaves, and by the drain.
//!
//! **Choices where nothing says otherwise.** A write miss that fills its
//! segment needs no read-for-write (the fill brings the old page); the fill
//! writes every page but the written one, which the write itself puts in the
//! cache. A trim changes nothing but a dirty bit (the trimmed contents are
//! undefined, so the page need not be written back); it is not a reference.
//! A cache smaller than one segment caches nothing.
//!
//! Cost: a hash lookup and a list move per access; memory is an arena node
//! per cached segment and one dirty bit per cached page (slots are allocated
//! as they are first filled).

use crate::list::{Arena, List};
use crate::policy::{
    Access, BuildCtx, Effects, Io, Mode, ParamInfo, Policy, PolicyInfo, PolicyStats, Rules, Spec, SpecError,
};
use crate::trace::Op;

/// Largest segment, in pages (a `Fetch` carries a `u32` page count).
const MAX_SEGMENT_PAGES: u64 = 1 << 20;

pub struct SegmentLru {
    mode: Mode,
    /// Pages per segment (a power of two) and its log2.
    seg_pages: u64,
    shift: u32,
    /// Cache size given, in pages.
    capacity: usize,
    nslots: usize,
    /// Cached segments, each with its slot (the index of its dirty bits).
    arena: Arena<u32>,
    lru: List,
    /// Slots freed by an invalidation, reused before new ones.
    free: Vec<u32>,
    /// Dirty bits, `words` per slot, and dirty pages per slot.
    dirty_bits: Vec<u64>,
    words: usize,
    slot_dirty: Vec<u32>,
    dirty: usize,
}

impl SegmentLru {
    /// A cache of `capacity` pages in segments of `seg_pages` pages (a power of two).
    pub fn new(capacity: usize, seg_pages: u64, mode: Mode) -> Self {
        assert!(seg_pages.is_power_of_two() && seg_pages <= MAX_SEGMENT_PAGES);
        let nslots = capacity / seg_pages as usize;
        SegmentLru {
            mode,
            seg_pages,
            shift: seg_pages.trailing_zeros(),
            capacity,
            nslots,
            arena: Arena::with_capacity(nslots),
            lru: List::new(),
            free: Vec::new(),
            dirty_bits: Vec::new(),
            words: (seg_pages as usize).div_ceil(64),
            slot_dirty: Vec::new(),
            dirty: 0,
        }
    }

    /// Segments the cache holds at most.
    pub fn slots(&self) -> usize {
        self.nslots
    }

    #[inline]
    fn bit(&self, slot: u32, key: u64) -> (usize, u64) {
        let off = (key & (self.seg_pages - 1)) as usize;
        (slot as usize * self.words + off / 64, 1u64 << (off % 64))
    }

    fn is_dirty_in(&self, slot: u32, key: u64) -> bool {
        let (w, bit) = self.bit(slot, key);
        self.dirty_bits[w] & bit != 0
    }

    fn set_dirty(&mut self, slot: u32, key: u64) {
        let (w, bit) = self.bit(slot, key);
        if self.dirty_bits[w] & bit == 0 {
            self.dirty_bits[w] |= bit;
            self.slot_dirty[slot as usize] += 1;
            self.dirty += 1;
        }
    }

    /// A slot for a new segment: a freed one, a new one, or the LRU segment's
    /// (which leaves first, its dirty pages written back).
    fn take_slot(&mut self, fx: &mut Effects) -> u32 {
        if let Some(s) = self.free.pop() {
            return s;
        }
        if self.lru.len() < self.nslots {
            let s = self.slot_dirty.len() as u32;
            self.slot_dirty.push(0);
            self.dirty_bits.resize(self.dirty_bits.len() + self.words, 0);
            return s;
        }
        let victim = self.lru.pop_back(&mut self.arena).expect("a full cache has an LRU segment");
        let slot = *self.arena.val(victim);
        let seg = self.arena.remove(victim);
        let base = seg << self.shift;
        for p in 0..self.seg_pages {
            let dirty = self.slot_dirty[slot as usize] > 0 && self.is_dirty_in(slot, base + p);
            fx.push(Io::Evict { key: base + p, dirty });
        }
        self.write_back_slot(slot, base, fx);
        slot
    }

    /// One `WriteBack` per contiguous dirty run of the segment at `base` in `slot`.
    fn write_back_slot(&mut self, slot: u32, base: u64, fx: &mut Effects) {
        if self.slot_dirty[slot as usize] == 0 {
            return;
        }
        let s = slot as usize;
        let words = &mut self.dirty_bits[s * self.words..(s + 1) * self.words];
        super::write_back_runs(words, base, self.seg_pages, fx);
        self.dirty -= self.slot_dirty[s] as usize;
        self.slot_dirty[s] = 0;
    }

    /// Reads segment `seg` from backing and caches it (every page but `skip`,
    /// which the caller writes itself); returns its slot, or `None` (and does
    /// nothing) if the cache holds no segment at all.
    fn fill(&mut self, seg: u64, skip: Option<u64>, fx: &mut Effects) -> Option<u32> {
        if self.nslots == 0 {
            return None;
        }
        let base = seg << self.shift;
        fx.push(Io::Fetch { key: base, pages: self.seg_pages as u32 });
        let slot = self.take_slot(fx);
        let idx = self.arena.insert(seg, slot);
        self.lru.push_front(&mut self.arena, idx);
        for p in 0..self.seg_pages {
            if Some(base + p) != skip {
                fx.push(Io::CacheWrite { key: base + p });
            }
        }
        Some(slot)
    }

    /// The cached segment `seg`, moved to the MRU end: its slot.
    #[inline]
    fn touch(&mut self, seg: u64) -> Option<u32> {
        let idx = self.arena.find(seg)?;
        self.lru.move_to_front(&mut self.arena, idx);
        Some(*self.arena.val(idx))
    }

    /// Drops cached segment `seg` without write-back (read-only mode keeps
    /// nothing dirty).
    fn invalidate(&mut self, seg: u64, fx: &mut Effects) {
        let Some(idx) = self.arena.find(seg) else { return };
        self.lru.unlink(&mut self.arena, idx);
        let slot = *self.arena.val(idx);
        self.arena.remove(idx);
        debug_assert_eq!(self.slot_dirty[slot as usize], 0);
        self.free.push(slot);
        let base = seg << self.shift;
        for p in 0..self.seg_pages {
            fx.push(Io::Invalidate { key: base + p, dirty: false });
        }
    }

    fn read(&mut self, a: &Access, seg: u64, fx: &mut Effects) {
        fx.hit = self.touch(seg).is_some();
        if fx.hit {
            return;
        }
        // (nothing to fill: the page alone is read)
        if self.mode == Mode::WriteOnly || self.fill(seg, None, fx).is_none() {
            fx.push(Io::Fetch { key: a.key, pages: 1 });
        }
    }

    fn write(&mut self, a: &Access, seg: u64, fx: &mut Effects) {
        let key = a.key;
        if self.mode == Mode::ReadOnly {
            self.invalidate(seg, fx);
            fx.push(Io::WriteThrough { key });
            return;
        }
        let slot = self.touch(seg);
        fx.hit = slot.is_some();
        let slot = match (slot, self.mode) {
            (Some(s), _) => Some(s),
            (None, Mode::WriteAround) => None,
            (None, _) => self.fill(seg, Some(key), fx),
        };
        if let Some(slot) = slot {
            fx.push(Io::CacheWrite { key });
            if self.mode.keeps_dirty() {
                self.set_dirty(slot, key);
                return;
            }
        }
        fx.push(Io::WriteThrough { key });
    }
}

impl Policy for SegmentLru {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        let seg = a.key >> self.shift;
        match a.op {
            Op::Read => self.read(a, seg, fx),
            Op::Write => self.write(a, seg, fx),
            Op::Trim => {
                if let Some(idx) = self.arena.find(seg) {
                    let slot = *self.arena.val(idx);
                    if self.is_dirty_in(slot, a.key) {
                        let (w, bit) = self.bit(slot, a.key);
                        self.dirty_bits[w] &= !bit;
                        self.slot_dirty[slot as usize] -= 1;
                        self.dirty -= 1;
                    }
                }
            }
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        if self.dirty == 0 {
            return;
        }
        // Segments in address order, so write-back order is deterministic.
        let mut segs: Vec<(u64, u32)> =
            self.lru.nodes(&self.arena).map(|i| (self.arena.key(i), *self.arena.val(i))).collect();
        segs.sort_unstable();
        for (seg, slot) in segs {
            self.write_back_slot(slot, seg << self.shift, fx);
        }
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats {
            capacity: self.capacity as u64,
            resident: (self.lru.len() as u64) << self.shift,
            dirty: self.dirty as u64,
            ghosts: 0,
        }
    }
}

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    let seg_bytes = spec.bytes("segment")?;
    let pages = seg_bytes / ctx.page_bytes.max(1);
    if seg_bytes % ctx.page_bytes.max(1) != 0 || !pages.is_power_of_two() || pages > MAX_SEGMENT_PAGES {
        return Err(spec.invalid(
            "segment",
            format!("must be a power-of-two number of {}-byte pages, at most {MAX_SEGMENT_PAGES}", ctx.page_bytes),
        ));
    }
    Ok(Box::new(SegmentLru::new(ctx.capacity, pages, ctx.mode)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "segment-lru",
    about: "LRU over whole segments, a missed segment filled from backing at once (paper 000's baseline \
            with mode=read-only)",
    params: &[ParamInfo {
        name: "segment",
        default: "1MiB",
        about: "segment size, a power-of-two number of pages (paper 000 §3.1: PWC's segments, 128KiB-1MiB)",
    }],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{read, run, write};

    fn fill(seg: u64, pages: u64) -> Vec<Io> {
        let mut v = vec![Io::Fetch { key: seg * pages, pages: pages as u32 }];
        v.extend((0..pages).map(|p| Io::CacheWrite { key: seg * pages + p }));
        v
    }

    /// The paper's baseline: reads fill whole segments, LRU over segments, a
    /// write drops its segment and goes to the HDD, and is never a hit.
    #[test]
    fn read_only_fills_segments_and_writes_invalidate_them() {
        let mut p = SegmentLru::new(8, 4, Mode::ReadOnly); // 2 segments of 4 pages
        assert_eq!(run(&mut p, read(1, 0)), (false, fill(0, 4)));
        // The other pages of the segment came with it.
        assert_eq!(run(&mut p, read(3, 1)), (true, vec![]));
        assert_eq!(run(&mut p, read(4, 2)), (false, fill(1, 4)));
        // A write to a cached segment drops all of it and goes to backing.
        let mut expect: Vec<Io> = (0..4).map(|k| Io::Invalidate { key: k, dirty: false }).collect();
        expect.push(Io::WriteThrough { key: 2 });
        assert_eq!(run(&mut p, write(2, 3)), (false, expect));
        assert_eq!(p.stats().resident, 4);
        assert!(!run(&mut p, read(0, 4)).0);
        // A write miss goes to backing, caching nothing.
        assert_eq!(run(&mut p, write(9, 5)), (false, vec![Io::WriteThrough { key: 9 }]));
        // LRU order: segment 1 (pages 4–7) is least recent now, so reading
        // segment 2 evicts it.
        let (hit, io) = run(&mut p, read(8, 6));
        assert!(!hit);
        let mut expect = vec![Io::Fetch { key: 8, pages: 4 }];
        expect.extend((4..8).map(|k| Io::Evict { key: k, dirty: false }));
        expect.extend((8..12).map(|k| Io::CacheWrite { key: k }));
        assert_eq!(io, expect);
        assert!(run(&mut p, read(1, 7)).0);
        assert_eq!(p.stats().dirty, 0);
    }

    #[test]
    fn write_back_keeps_dirty_pages_and_writes_back_runs() {
        let mut p = SegmentLru::new(4, 4, Mode::WriteBack); // 1 segment of 4 pages
                                                            // A write miss fills the segment (but the written page), then writes it.
        let (hit, io) = run(&mut p, write(1, 0));
        assert!(!hit);
        let mut expect = vec![Io::Fetch { key: 0, pages: 4 }];
        expect.extend([0, 2, 3].map(|k| Io::CacheWrite { key: k }));
        expect.push(Io::CacheWrite { key: 1 });
        assert_eq!(io, expect);
        assert_eq!(run(&mut p, write(2, 1)), (true, vec![Io::CacheWrite { key: 2 }]));
        assert_eq!(p.stats().dirty, 2);
        // A read of another segment evicts this one: pages 1–2 written back as one run.
        let (_, io) = run(&mut p, read(5, 2));
        let evicted: Vec<Io> =
            io.iter().copied().filter(|io| !matches!(io, Io::Fetch { .. } | Io::CacheWrite { .. })).collect();
        assert_eq!(
            evicted,
            vec![
                Io::Evict { key: 0, dirty: false },
                Io::Evict { key: 1, dirty: true },
                Io::Evict { key: 2, dirty: true },
                Io::Evict { key: 3, dirty: false },
                Io::WriteBack { key: 1, pages: 2 },
            ]
        );
        assert_eq!(p.stats().dirty, 0);
        run(&mut p, write(6, 3));
        let mut fx = Effects::new();
        p.drain(&mut fx);
        assert_eq!(fx.io, vec![Io::WriteBack { key: 6, pages: 1 }]);
    }

    #[test]
    fn write_through_and_around_always_write_backing() {
        let mut wt = SegmentLru::new(4, 4, Mode::WriteThrough);
        let (hit, io) = run(&mut wt, write(1, 0));
        assert!(
            !hit && io.contains(&Io::Fetch { key: 0, pages: 4 })
                && io.ends_with(&[Io::CacheWrite { key: 1 }, Io::WriteThrough { key: 1 }])
        );
        assert_eq!(run(&mut wt, write(1, 1)), (true, vec![Io::CacheWrite { key: 1 }, Io::WriteThrough { key: 1 }]));
        let mut wa = SegmentLru::new(4, 4, Mode::WriteAround);
        assert_eq!(run(&mut wa, write(1, 0)), (false, vec![Io::WriteThrough { key: 1 }]));
        assert_eq!(run(&mut wa, read(1, 1)).1, fill(0, 4));
        assert_eq!(run(&mut wa, write(1, 2)), (true, vec![Io::CacheWrite { key: 1 }, Io::WriteThrough { key: 1 }]));
        assert_eq!((wt.stats().dirty, wa.stats().dirty), (0, 0));
    }

    #[test]
    fn write_only_does_not_fill_on_reads_and_a_small_cache_holds_nothing() {
        let mut wo = SegmentLru::new(4, 4, Mode::WriteOnly);
        assert_eq!(run(&mut wo, read(1, 0)), (false, vec![Io::Fetch { key: 1, pages: 1 }]));
        assert!(!run(&mut wo, read(1, 1)).0);
        let mut tiny = SegmentLru::new(3, 4, Mode::WriteBack);
        assert_eq!(run(&mut tiny, read(1, 0)), (false, vec![Io::Fetch { key: 1, pages: 1 }]));
        assert_eq!(run(&mut tiny, write(1, 1)), (false, vec![Io::WriteThrough { key: 1 }]));
        assert_eq!(tiny.stats().resident, 0);
    }

    #[test]
    fn builds_with_the_papers_segment_and_checks_it() {
        let ctx = BuildCtx { capacity: 1024, mode: Mode::ReadOnly, page_bytes: 4096 };
        let (p, spec) = build_spec("segment-lru", &ctx).unwrap();
        assert_eq!(spec.canonical(), "segment-lru");
        assert_eq!(p.stats().capacity, 1024);
        let (mut p, _) = build_spec("segment-lru(segment=128KiB)", &ctx).unwrap();
        let mut fx = Effects::new();
        p.access(&read(40, 0), &mut fx);
        assert_eq!(fx.io[0], Io::Fetch { key: 32, pages: 32 });
        for bad in ["segment-lru(segment=12KiB)", "segment-lru(segment=6000)", "segment-lru(segment=8GiB)"] {
            let e = build_spec(bad, &ctx).err().unwrap().to_string();
            assert!(e.contains("segment") && e.contains("power-of-two"), "{bad}: {e}");
        }
    }
}
