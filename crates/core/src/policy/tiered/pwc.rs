//! PWC: the persistent read/write SSD cache of paper 000 (Baek & Park, "A
//! Persistent Read/Write Cache using General Flash-based SSDs"), as a policy
//! for the simulator: an SSD caching an HDD in whole segments, refilled only by
//! a periodic caching-and-eviction procedure, caching writes in between.
//!
//! **Segments.** Both devices are managed in segments of `segment` bytes
//! (§3.1). The segment of a page key is `key / pages_per_segment`; segments are
//! a power-of-two number of pages, so a segment never straddles devices (2^44
//! pages per device is a multiple of it) and the device bits of the key stay in
//! the segment number.
//!
//! **Frequency table** (§3.3). Every HDD segment has a `u16` frequency. Every
//! reference to a segment — read or write, cached or not: the table learns the
//! use of the whole HDD — adds `increment` (5 in the paper), saturating at
//! 2^16-1; references that follow each other to the same segment count once
//! (the paper's "consecutive hits are one hit", which also makes a multi-page
//! request one reference). A segment whose frequency is at least `threshold`
//! (20) is *hot*. **First fill:** while fewer HDD segments have ever been
//! touched than the SSD has segments, every touched segment counts as hot.
//!
//! **Normal operation** (§3.1, §3.6). A read of a page whose segment is
//! cached hits (served by the SSD, no effect); any other read is served by the
//! HDD (`Io::Fetch` of that page) and caches nothing — PWC fills only at the
//! procedure. A write to a cached segment goes to the SSD only (`CacheWrite`,
//! the page becomes dirty); a write to an uncached segment goes to the HDD
//! (`WriteThrough`).
//!
//! **Caching and eviction** (§3.4, Fig. 5), run from [`Policy::tick`]:
//! 1. every dirty page is written back to the HDD (line 4), one
//!    `Io::WriteBack` per contiguous dirty run of a segment, segments in address
//!    order; from here on nothing is dirty;
//! 2. while more segments are hot than the SSD holds, every frequency is
//!    multiplied by `decay` (4/5, floor) (lines 6–7);
//! 3. the *cache clock* walks the frequency table from segment 0 once round
//!    (line 8); at each hot segment that is not cached it stops, and the
//!    *evict clock*, a hand over the SSD's segment slots that keeps its
//!    position between procedures, moves on from its last position to the next
//!    slot holding a segment that is not hot; that segment is evicted
//!    (`Io::Evict { dirty: false }` per page) and the hot one is copied into the
//!    slot (`Io::Fetch` of the whole segment, then `Io::CacheWrite` per page).
//!
//! Step 2 guarantees at most as many hot segments as slots, so the evict clock
//! always finds a slot; hot segments already cached stay where they are, and a
//! cached segment that is no longer hot stays until a hot one needs its slot.
//!
//! **The cleaner** (beyond the paper; off by default): operators' bounds on
//! dirty data between procedures, `max_dirty` (a share of the slots),
//! `dirty_age` and `clean_rate` ([`super::cleaner`], the same rule `ssdcache
//! serve --max-dirty/--dirty-age/--clean-rate` follows). At every tick, before
//! any procedure, the slots it finds due are written back (one `WriteBack` per
//! dirty run, counted as maintenance I/O) and stay cached, clean. Its rate is
//! charged whole segments, as `serve` writes them; `sim` writes back only the
//! dirty pages of each.
//!
//! **Parameters** (defaults from paper 000): `segment` = 1MiB (§3.1: the
//! experiments used 128 KiB to 1 MiB, and larger segments did better),
//! `threshold` = 20 (§3.3, Fig. 4), `increment` = 5 (§3.3), `decay` = 0.8
//! (§3.3: 4/5), `period` = 24h (§3.2 and §4.1: the experiments ran the
//! procedure once a day), `idle` = 0, i.e. off (§3.2, §3.4 allow running at
//! idle times; see below).
//!
//! **When the procedure runs.** The simulator calls `tick(now)` before every
//! request, `now` being its arrival time. With `period` only, the procedure
//! runs at the first tick at or after each `origin + k·period` (`origin` = the
//! first tick): once a day by default, the first run after a day, so day one
//! caches nothing, as in the paper's Fig. 6–14. With `idle` only, it runs at
//! every tick that ends a gap of at least `idle` since the previous request.
//! With both, a due procedure waits for such a gap: the paper's experiment,
//! "once a day, in idle time" (§4.1). A due procedure runs once however many
//! periods a gap spans. The effects are returned by the tick of the request
//! that ends the gap; the procedure is instantaneous here.
//!
//! **Modes.** `write-back` is PWC. `write-through` is accepted as an ablation
//! (a write to a cached segment goes to both devices, as PWC itself does while
//! the procedure runs, §3.6; nothing is ever dirty). Other modes are refused:
//! write-around is the same as write-through here (PWC never caches a miss),
//! and write-only / read-only contradict the segment cache.
//!
//! The paper's baseline, "an LRU SSD cache that cannot cache writes" (a write
//! to a cached block evicts it from the SSD and goes to the HDD, §1, §4.1),
//! managed in segments and filled in real time (§4.2), is
//! `segment-lru(mode=read-only)` (`tiered::segment_lru`); its page-unit
//! variant, whose fills cost nearly nothing, is `lru(mode=read-only)` (tested
//! below).
//!
//! **Choices where the paper is silent** (our reading):
//! - Hot is `frequency >= threshold` (§3.4 and Fig. 4 say "20 or more"; §3.3
//!   once says "exceeds").
//! - First fill applies when the segments ever touched are *at most* as many
//!   as the SSD's (the paper says "fewer"; at equality they all fit as well).
//!   Segments decayed to 0 still count as touched.
//! - When frequencies decay (`aging`): the paper says both. §3.3: "for
//!   recency, the decay procedure runs *whenever* the number of hot segments
//!   exceeds the number of cacheable (SSD) segments … it runs in a thread
//!   apart from I/O service" — a background task, continuous. Fig. 4 (나) and
//!   Fig. 5 lines 6–7 (and §3.4: "when the procedure starts, decay is run so
//!   that the hot segments do not outnumber the SSD's") show it inside the
//!   procedure. `aging=procedure` (the default, as before) decays only there;
//!   `aging=continuous` also decays, until the hot segments fit, at every
//!   reference that makes one more segment hot than the SSD has slots (the
//!   background thread taken as instantaneous). With a cache smaller than one
//!   segment nothing ever decays continuously (there is nothing to fit).
//! - The evict clock starts at the last slot, so its first search begins at
//!   slot 0, as in Fig. 4 (c); an empty slot counts as a slot to fill (no
//!   eviction).
//! - The cache clock's table is all devices' segments in key order (device,
//!   then address); segments never touched are absent (frequency 0, never hot).
//! - A trim is not a reference: it does not change frequencies; a trimmed
//!   dirty page of a cached segment is just no longer dirty (its contents are
//!   undefined, so nothing is written back); no I/O.
//! - A partial write to a cached segment needs no read first (the whole segment
//!   is in the SSD); one to an uncached segment is a plain write-through.
//! - The cache is `capacity / pages_per_segment` whole segments; a cache
//!   smaller than one segment caches nothing. `stats().capacity` reports the
//!   cache size given, in pages.
//! - The paper's segment locks, persisted metadata (two slots with version and
//!   hash, clean and update bits) and recovery are not simulated; the crash
//!   consistency they buy is why writes are cached only between procedures,
//!   and the procedure itself is instantaneous here.
//!
//! Cost: an access is one hash lookup (none when it stays in the previous
//! access's segment); memory is 16 bytes plus a hash slot per touched segment,
//! 8 bytes per SSD slot filled so far and one dirty bit per cached page (slots
//! are materialised as the evict clock first reaches them, so a huge cache on
//! a small trace costs what the trace fills). The procedure is
//! `O(touched segments)` per decay round, as in the paper.

use hashbrown::HashMap;

use super::cleaner::{Cleaner, CleanerConfig, CleanerStats};
use crate::policy::{
    check_mode, Access, BuildCtx, Effects, Io, Mode, ParamInfo, Policy, PolicyInfo, PolicyStats, Rules, Spec, SpecError,
};
use crate::trace::Op;
use crate::units::parse_duration_ns;
use crate::Nanos;

/// Marks a segment that is not cached / a slot that holds nothing.
const NONE: u32 = u32::MAX;

/// Largest segment, in pages (a `Fetch` carries a `u32` page count).
const MAX_SEGMENT_PAGES: u64 = 1 << 20;

/// What PWC is told to do; defaults are paper 000's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PwcConfig {
    /// Pages per segment, a power of two.
    pub segment_pages: u64,
    pub threshold: u16,
    pub increment: u16,
    /// Decay factor in thousandths, below 1000.
    pub decay_permille: u32,
    /// Procedure schedule; 0 = none.
    pub period: Nanos,
    /// Idle gap that runs (or lets a due) procedure; 0 = none.
    pub idle: Nanos,
    /// Write-back (PWC) or write-through (no dirty data).
    pub write_back: bool,
    /// Decay also whenever a reference makes more segments hot than the SSD
    /// has slots (§3.3's background task), not only inside the procedure.
    pub continuous_decay: bool,
    /// Bounds on dirty data between procedures (beyond the paper; none by default).
    pub cleaner: CleanerConfig,
    /// Bytes per page, to charge the cleaner's rate whole segments.
    pub page_bytes: u64,
}

impl PwcConfig {
    /// Paper 000's settings for `segment_pages`-page segments.
    pub fn paper(segment_pages: u64) -> Self {
        PwcConfig {
            segment_pages,
            threshold: 20,
            increment: 5,
            decay_permille: 800,
            period: 86_400_000_000_000,
            idle: 0,
            write_back: true,
            continuous_decay: false,
            cleaner: CleanerConfig::default(),
            page_bytes: 4096,
        }
    }
}

/// One row of the frequency table: an HDD segment that has been referenced.
#[derive(Clone, Copy, Debug)]
struct Entry {
    seg: u64,
    freq: u16,
    /// The SSD slot caching it, or [`NONE`].
    slot: u32,
}

pub struct Pwc {
    cfg: PwcConfig,
    shift: u32,
    /// Cache size given, in pages.
    capacity: usize,
    /// The frequency table (touched segments, in first-touch order) and its index.
    table: Vec<Entry>,
    index: HashMap<u64, u32>,
    /// The segment referenced last and its row: consecutive references count
    /// once, and stay off the hash.
    last: Option<(u64, u32)>,
    /// Segments whose frequency is at least the threshold.
    hot: usize,
    /// Decay rounds run so far (at procedures and continuously).
    decays: u64,
    /// SSD segment slots.
    nslots: usize,
    /// The address map: the row each SSD slot caches, or [`NONE`]. Grown as
    /// slots are first filled; slots past its end are empty.
    slots: Vec<u32>,
    /// Dirty bits, `words` per slot.
    dirty_bits: Vec<u64>,
    words: usize,
    slot_dirty: Vec<u32>,
    dirty: usize,
    cached: usize,
    evict_hand: usize,
    /// First tick, previous tick, next scheduled procedure.
    origin: Option<Nanos>,
    prev: Option<Nanos>,
    next_due: Nanos,
    procedures: u64,
    /// Reused at the procedure.
    scratch: Vec<u32>,
    cleaner: Cleaner,
}

impl Pwc {
    /// A PWC cache of `capacity` pages (whole segments of it are used).
    pub fn new(capacity: usize, cfg: PwcConfig) -> Self {
        assert!(cfg.segment_pages.is_power_of_two() && cfg.segment_pages <= MAX_SEGMENT_PAGES);
        assert!(cfg.threshold >= 1 && cfg.decay_permille < 1000);
        let nslots = capacity / cfg.segment_pages as usize;
        let words = (cfg.segment_pages as usize).div_ceil(64);
        Pwc {
            cfg,
            shift: cfg.segment_pages.trailing_zeros(),
            capacity,
            table: Vec::new(),
            index: HashMap::new(),
            last: None,
            hot: 0,
            decays: 0,
            nslots,
            slots: Vec::new(),
            dirty_bits: Vec::new(),
            words,
            slot_dirty: Vec::new(),
            dirty: 0,
            cached: 0,
            evict_hand: nslots.saturating_sub(1),
            origin: None,
            prev: None,
            next_due: 0,
            procedures: 0,
            scratch: Vec::new(),
            cleaner: Cleaner::new(cfg.cleaner),
        }
    }

    /// What the cleaner wrote back so far.
    pub fn cleaner_stats(&self) -> CleanerStats {
        self.cleaner.stats()
    }

    /// SSD segment slots.
    pub fn slots(&self) -> usize {
        self.nslots
    }

    /// The row slot `s` caches, or [`NONE`].
    #[inline]
    fn slot_row(&self, s: usize) -> u32 {
        self.slots.get(s).copied().unwrap_or(NONE)
    }

    /// Materialises slot `s` (and those before it) as empty, if not yet.
    fn open_slot(&mut self, s: usize) {
        if s >= self.slots.len() {
            self.slots.resize(s + 1, NONE);
            self.slot_dirty.resize(s + 1, 0);
            self.dirty_bits.resize((s + 1) * self.words, 0);
        }
    }

    /// The frequency of HDD segment `seg` (0 if never referenced).
    pub fn frequency(&self, seg: u64) -> u16 {
        self.index.get(&seg).map_or(0, |&i| self.table[i as usize].freq)
    }

    /// The frequency of HDD segment `seg` if it was ever referenced (decayed to
    /// 0 or not), `None` if never: what a persistent cache saves.
    pub fn touched_frequency(&self, seg: u64) -> Option<u16> {
        self.index.get(&seg).map(|&i| self.table[i as usize].freq)
    }

    /// The HDD segment each SSD slot caches (the paper's address map).
    pub fn mapping(&self) -> Vec<Option<u64>> {
        (0..self.nslots).map(|s| self.slot_row(s)).map(|r| (r != NONE).then(|| self.table[r as usize].seg)).collect()
    }

    /// The evict clock's position: the slot it stopped at last.
    pub fn evict_clock(&self) -> usize {
        self.evict_hand
    }

    /// Caching-and-eviction procedures run so far.
    pub fn procedures(&self) -> u64 {
        self.procedures
    }

    /// Decay rounds run so far (each multiplies every frequency once).
    pub fn decays(&self) -> u64 {
        self.decays
    }

    /// Seeds the state a persistent cache saved (for the cache engine in
    /// `crates/engine`, which restarts from its metadata; the simulator never
    /// calls this): the HDD segment each slot caches, the frequency of each
    /// touched segment, and the evict clock. Nothing is dirty afterwards and
    /// the procedure count is kept.
    pub fn restore(&mut self, map: &[Option<u64>], freq: impl IntoIterator<Item = (u64, u16)>, evict_clock: usize) {
        assert_eq!(map.len(), self.nslots, "one map entry per slot");
        self.table.clear();
        self.index.clear();
        self.last = None;
        for (seg, f) in freq {
            let row = self.row(seg);
            self.table[row as usize].freq = f;
        }
        self.slots.fill(NONE);
        self.cached = 0;
        for (slot, seg) in map.iter().enumerate() {
            if let Some(seg) = *seg {
                let row = self.row(seg);
                assert_eq!(self.table[row as usize].slot, NONE, "segment {seg} mapped twice");
                self.open_slot(slot);
                self.table[row as usize].slot = slot as u32;
                self.slots[slot] = row;
                self.cached += 1;
            }
        }
        self.dirty_bits.fill(0);
        self.slot_dirty.fill(0);
        self.dirty = 0;
        self.cleaner.all_cleaned();
        self.evict_hand = evict_clock.min(self.nslots.saturating_sub(1));
        self.hot = self.hot_count();
    }

    /// The row of `seg`, added with frequency 0 if absent (no reference counted).
    fn row(&mut self, seg: u64) -> u32 {
        let table = &mut self.table;
        *self.index.entry(seg).or_insert_with(|| {
            table.push(Entry { seg, freq: 0, slot: NONE });
            (table.len() - 1) as u32
        })
    }

    /// Whether page `key` is dirty in the SSD.
    pub fn is_dirty(&self, key: u64) -> bool {
        self.cached_slot(key >> self.shift).is_some_and(|slot| {
            let (w, bit) = self.bit(slot, key);
            self.dirty_bits[w] & bit != 0
        })
    }

    /// The slot caching segment `seg`, without counting a reference.
    fn cached_slot(&self, seg: u64) -> Option<u32> {
        let row = match self.last {
            Some((s, r)) if s == seg => r,
            _ => *self.index.get(&seg)?,
        };
        let slot = self.table[row as usize].slot;
        (slot != NONE).then_some(slot)
    }

    #[inline]
    fn bit(&self, slot: u32, key: u64) -> (usize, u64) {
        let off = (key & (self.cfg.segment_pages - 1)) as usize;
        (slot as usize * self.words + off / 64, 1u64 << (off % 64))
    }

    /// Counts a reference to `seg` and returns its row.
    #[inline]
    fn reference(&mut self, seg: u64) -> u32 {
        if let Some((s, row)) = self.last {
            if s == seg {
                return row;
            }
        }
        let table = &mut self.table;
        let row = *self.index.entry(seg).or_insert_with(|| {
            table.push(Entry { seg, freq: 0, slot: NONE });
            (table.len() - 1) as u32
        });
        let e = &mut self.table[row as usize];
        let before = e.freq;
        e.freq = e.freq.saturating_add(self.cfg.increment);
        self.last = Some((seg, row));
        if before < self.cfg.threshold && e.freq >= self.cfg.threshold {
            self.hot += 1;
            // §3.3: "whenever the hot segments outnumber the SSD's segments".
            if self.cfg.continuous_decay && self.nslots > 0 {
                while self.hot > self.nslots {
                    self.decay();
                }
            }
        }
        row
    }

    /// Writes back every dirty page, segments in address order.
    fn write_back_all(&mut self, fx: &mut Effects) {
        if self.dirty == 0 {
            return;
        }
        let mut dirty_slots = std::mem::take(&mut self.scratch);
        dirty_slots.clear();
        dirty_slots.extend((0..self.slots.len() as u32).filter(|&s| self.slot_dirty[s as usize] > 0));
        dirty_slots.sort_unstable_by_key(|&s| self.table[self.slots[s as usize] as usize].seg);
        for &slot in &dirty_slots {
            self.write_back_slot(slot as usize, fx);
        }
        self.scratch = dirty_slots;
        debug_assert_eq!(self.dirty, 0);
    }

    /// One `WriteBack` per contiguous dirty run of the slot's segment.
    fn write_back_slot(&mut self, slot: usize, fx: &mut Effects) {
        let base = self.table[self.slots[slot] as usize].seg << self.shift;
        let words = &mut self.dirty_bits[slot * self.words..(slot + 1) * self.words];
        super::write_back_runs(words, base, self.cfg.segment_pages, fx);
        self.dirty -= self.slot_dirty[slot] as usize;
        self.slot_dirty[slot] = 0;
        self.cleaner.cleaned(slot as u32);
    }

    /// Writes back what the cleaner says is due at `now`, as its rate allows.
    fn clean(&mut self, now: Nanos, fx: &mut Effects) {
        let segment_bytes = self.cfg.segment_pages * self.cfg.page_bytes;
        while let Some((slot, _)) = self.cleaner.next(now, self.nslots, segment_bytes) {
            self.write_back_slot(slot as usize, fx);
        }
    }

    #[inline]
    fn is_hot(&self, row: u32, first_fill: bool) -> bool {
        first_fill || self.table[row as usize].freq >= self.cfg.threshold
    }

    fn hot_count(&self) -> usize {
        self.table.iter().filter(|e| e.freq >= self.cfg.threshold).count()
    }

    /// Multiplies every frequency by the decay factor (and recounts the hot ones).
    fn decay(&mut self) {
        let (m, threshold) = (self.cfg.decay_permille, self.cfg.threshold);
        let mut hot = 0;
        for e in &mut self.table {
            e.freq = (e.freq as u32 * m / 1000) as u16;
            hot += (e.freq >= threshold) as usize;
        }
        self.hot = hot;
        self.decays += 1;
    }

    /// Moves the evict clock to the next slot that is empty or holds a segment
    /// that is not hot, and returns it.
    fn next_victim(&mut self, first_fill: bool) -> Option<usize> {
        let n = self.nslots;
        for step in 1..=n {
            let s = (self.evict_hand + step) % n;
            let row = self.slot_row(s);
            if row == NONE || !self.is_hot(row, first_fill) {
                self.evict_hand = s;
                return Some(s);
            }
        }
        None
    }

    /// The caching-and-eviction procedure (Fig. 5, lines 1–28).
    pub fn procedure(&mut self, fx: &mut Effects) {
        self.procedures += 1;
        self.write_back_all(fx);
        let n = self.nslots;
        if n == 0 {
            return;
        }
        let first_fill = self.table.len() <= n;
        debug_assert_eq!(self.hot, self.hot_count());
        if !first_fill {
            while self.hot > n {
                self.decay();
            }
        }
        // The cache clock's stops, in table (address) order.
        let mut stops = std::mem::take(&mut self.scratch);
        stops.clear();
        stops.extend(
            (0..self.table.len() as u32).filter(|&r| self.table[r as usize].slot == NONE && self.is_hot(r, first_fill)),
        );
        stops.sort_unstable_by_key(|&r| self.table[r as usize].seg);
        let pages = self.cfg.segment_pages;
        for &row in &stops {
            let Some(slot) = self.next_victim(first_fill) else {
                debug_assert!(false, "more hot segments than slots after decay");
                break;
            };
            self.open_slot(slot);
            let old = self.slots[slot];
            if old == NONE {
                self.cached += 1;
            } else {
                let e = &mut self.table[old as usize];
                e.slot = NONE;
                let base = e.seg << self.shift;
                for p in 0..pages {
                    fx.push(Io::Evict { key: base + p, dirty: false });
                }
            }
            self.slots[slot] = row;
            let e = &mut self.table[row as usize];
            e.slot = slot as u32;
            let base = e.seg << self.shift;
            fx.push(Io::Fetch { key: base, pages: pages as u32 });
            for p in 0..pages {
                fx.push(Io::CacheWrite { key: base + p });
            }
        }
        self.scratch = stops;
    }
}

impl Policy for Pwc {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        let key = a.key;
        let seg = key >> self.shift;
        if a.op == Op::Trim {
            if let Some(slot) = self.cached_slot(seg) {
                fx.hit = true;
                let (w, bit) = self.bit(slot, key);
                if self.dirty_bits[w] & bit != 0 {
                    self.dirty_bits[w] &= !bit;
                    self.slot_dirty[slot as usize] -= 1;
                    self.dirty -= 1;
                    if self.slot_dirty[slot as usize] == 0 {
                        self.cleaner.cleaned(slot);
                    }
                }
            }
            return;
        }
        let row = self.reference(seg);
        let slot = self.table[row as usize].slot;
        fx.hit = slot != NONE;
        match (a.op, fx.hit) {
            (Op::Read, true) => {}
            (Op::Read, false) => fx.push(Io::Fetch { key, pages: 1 }),
            (_, true) => {
                fx.push(Io::CacheWrite { key });
                if self.cfg.write_back {
                    let (w, bit) = self.bit(slot, key);
                    if self.dirty_bits[w] & bit == 0 {
                        self.dirty_bits[w] |= bit;
                        self.slot_dirty[slot as usize] += 1;
                        self.dirty += 1;
                        if self.slot_dirty[slot as usize] == 1 {
                            self.cleaner.dirtied(slot, a.time);
                        }
                    }
                } else {
                    fx.push(Io::WriteThrough { key });
                }
            }
            (_, false) => fx.push(Io::WriteThrough { key }),
        }
    }

    fn has_maintenance(&self) -> bool {
        true
    }

    fn tick(&mut self, now: Nanos, fx: &mut Effects) {
        let prev = self.prev.replace(now);
        let (period, idle) = (self.cfg.period, self.cfg.idle);
        let origin = *self.origin.get_or_insert_with(|| {
            self.next_due = now.saturating_add(period);
            now
        });
        let due = period > 0 && now >= self.next_due;
        let idle_gap = idle > 0 && prev.is_some_and(|p| now.saturating_sub(p) >= idle);
        let run = if period > 0 && idle > 0 { due && idle_gap } else { due || idle_gap };
        if self.cfg.cleaner.is_active() && self.dirty > 0 {
            self.clean(now, fx);
        }
        if run {
            self.procedure(fx);
            // The next boundary of the schedule after now (none without one).
            if let Some(k) = now.saturating_sub(origin).checked_div(period) {
                self.next_due = origin.saturating_add((k + 1).saturating_mul(period));
            }
        }
    }

    fn drain(&mut self, fx: &mut Effects) {
        self.write_back_all(fx);
    }

    fn stats(&self) -> PolicyStats {
        PolicyStats {
            capacity: self.capacity as u64,
            resident: (self.cached as u64) << self.shift,
            dirty: self.dirty as u64,
            ghosts: 0,
        }
    }
}

fn duration(spec: &Spec, key: &str) -> Result<Nanos, SpecError> {
    parse_duration_ns(spec.raw(key)).map_err(|e| spec.invalid(key, e.why))
}

/// The cleaner's bounds: `max_dirty` of 100%, `dirty_age` of 0 and
/// `clean_rate=unlimited` mean none.
fn cleaner_config(spec: &Spec) -> Result<CleanerConfig, SpecError> {
    let max_dirty = spec.ratio("max_dirty")?;
    let dirty_age = duration(spec, "dirty_age")?;
    let rate = match spec.raw("clean_rate") {
        "unlimited" => None,
        _ => Some(spec.bytes("clean_rate")?),
    };
    let clean_to = match spec.raw("clean_to") {
        "max_dirty" => None,
        _ => Some(spec.ratio("clean_to")?),
    };
    let cfg = CleanerConfig {
        max_dirty: (max_dirty < 1.0).then_some(max_dirty),
        dirty_age: (dirty_age > 0).then_some(dirty_age),
        rate,
        clean_to,
    };
    cfg.check().map_err(|why| spec.malformed(why))?;
    Ok(cfg)
}

fn build(spec: &Spec, ctx: &BuildCtx, _: &Rules) -> Result<Box<dyn Policy>, SpecError> {
    check_mode(
        spec,
        ctx,
        &[Mode::WriteBack, Mode::WriteThrough],
        "pwc caches writes in its segments (write-back) or, as an ablation, sends them to both devices \
         (write-through)",
    )?;
    let seg_bytes = spec.bytes("segment")?;
    let pages = seg_bytes / ctx.page_bytes.max(1);
    if seg_bytes % ctx.page_bytes.max(1) != 0 || !pages.is_power_of_two() || pages > MAX_SEGMENT_PAGES {
        return Err(spec.invalid(
            "segment",
            format!("must be a power-of-two number of {}-byte pages, at most {MAX_SEGMENT_PAGES}", ctx.page_bytes),
        ));
    }
    let small = |key: &str, min: u64| -> Result<u16, SpecError> {
        let v = spec.uint(key)?;
        if v < min || v > u16::MAX as u64 {
            return Err(spec.invalid(key, format!("must lie between {min} and {}", u16::MAX)));
        }
        Ok(v as u16)
    };
    let decay = spec.ratio("decay")?;
    let decay_permille = (decay * 1000.0).round() as u32;
    if decay_permille >= 1000 {
        return Err(spec.invalid("decay", "must be below 1, or decay never ends"));
    }
    let cfg = PwcConfig {
        segment_pages: pages,
        threshold: small("threshold", 1)?,
        increment: small("increment", 1)?,
        decay_permille,
        period: duration(spec, "period")?,
        idle: duration(spec, "idle")?,
        write_back: ctx.mode == Mode::WriteBack,
        continuous_decay: spec.choice("aging", &["procedure", "continuous"])? == "continuous",
        cleaner: cleaner_config(spec)?,
        page_bytes: ctx.page_bytes,
    };
    if !cfg.write_back && cfg.cleaner.is_active() {
        return Err(spec.malformed("max_dirty and dirty_age bound dirty data, and write-through has none"));
    }
    Ok(Box::new(Pwc::new(ctx.capacity, cfg)))
}

pub const INFO: PolicyInfo = PolicyInfo {
    name: "pwc",
    about: "PWC: persistent write-back SSD segment cache refilled by a periodic hot-segment procedure (paper 000)",
    params: &[
        ParamInfo {
            name: "segment",
            default: "1MiB",
            about: "segment size, a power-of-two number of pages (paper 000 §3.1: 128KiB-1MiB, larger did better)",
        },
        ParamInfo {
            name: "threshold",
            default: "20",
            about: "a segment with at least this frequency is hot (paper 000 §3.3, Fig. 4: 20)",
        },
        ParamInfo {
            name: "increment",
            default: "5",
            about: "frequency added per reference, consecutive ones counted once (paper 000 §3.3: 5)",
        },
        ParamInfo {
            name: "decay",
            default: "0.8",
            about: "factor applied to every frequency until the hot segments fit (paper 000 §3.3: 4/5)",
        },
        ParamInfo {
            name: "period",
            default: "24h",
            about: "run the caching-and-eviction procedure on this schedule; 0 = no schedule (paper 000 §4.1: daily)",
        },
        ParamInfo {
            name: "idle",
            default: "0",
            about: "a gap between requests this long runs the procedure (with period: the due one); 0 = off",
        },
        ParamInfo {
            name: "aging",
            default: "procedure",
            about: "when frequencies decay: procedure (only there, Fig. 4-5) or continuous (also whenever the hot \
                    segments outnumber the SSD's, §3.3)",
        },
        ParamInfo {
            name: "max_dirty",
            default: "100%",
            about: "cleaner: above this share of dirty segments the oldest dirty ones are written back before the \
                    procedure (beyond the paper; 100% = no bound)",
        },
        ParamInfo {
            name: "dirty_age",
            default: "0",
            about: "cleaner: no segment stays dirty longer than this (trace time; beyond the paper; 0 = no bound)",
        },
        ParamInfo {
            name: "clean_rate",
            default: "unlimited",
            about: "cleaner: bytes per second of trace time it writes back at most, charged whole segments",
        },
        ParamInfo {
            name: "clean_to",
            default: "max_dirty",
            about: "cleaner: once over max_dirty, it cleans down to this share (a low watermark; serve --clean-to)",
        },
    ],
    build,
    rule: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{read, run, write};
    use crate::policy::NEVER;

    fn procedure(p: &mut Pwc) -> Vec<Io> {
        let mut fx = Effects::new();
        p.procedure(&mut fx);
        fx.io
    }

    fn tick(p: &mut Pwc, now: Nanos) -> Vec<Io> {
        let mut fx = Effects::new();
        p.tick(now, &mut fx);
        fx.io
    }

    fn trim(key: u64, seq: u64) -> Access {
        Access { op: Op::Trim, ..read(key, seq) }
    }

    /// A cache of `slots` segments of `pages` pages, paper settings, no schedule.
    fn pwc(slots: usize, pages: u64) -> Pwc {
        Pwc::new(slots * pages as usize, PwcConfig { period: 0, ..PwcConfig::paper(pages) })
    }

    /// Effects of caching segment `seg` (of `pages` pages).
    fn caching(seg: u64, pages: u64) -> Vec<Io> {
        let mut v = vec![Io::Fetch { key: seg * pages, pages: pages as u32 }];
        v.extend((0..pages).map(|p| Io::CacheWrite { key: seg * pages + p }));
        v
    }

    fn evicting(seg: u64, pages: u64) -> Vec<Io> {
        (0..pages).map(|p| Io::Evict { key: seg * pages + p, dirty: false }).collect()
    }

    fn freqs(p: &Pwc, segs: u64) -> Vec<u16> {
        (0..segs).map(|s| p.frequency(s)).collect()
    }

    /// Paper 000 Fig. 4: 4 SSD segments, 16 HDD segments, hot at 20 or more.
    /// (The figure's frequencies are not in the text; these reproduce every
    /// step its caption and §3.4 describe.) Segments of 2 pages: HDD segment
    /// `s` is pages `2s` and `2s+1`.
    #[test]
    fn paper_figure_4() {
        let mut p = pwc(4, 2);
        let mut seq = 0;
        let mut next = || {
            seq += 1;
            seq
        };
        // Before: SSD holds HDD 0, 3, 7, 12. Four segments touched, as many as
        // the SSD holds: the first-fill rule makes them all hot; the cache
        // clock caches them in order, the evict clock going round from slot 0.
        for s in [0u64, 3, 7, 12] {
            assert_eq!(run(&mut p, read(2 * s, next())), (false, vec![Io::Fetch { key: 2 * s, pages: 1 }]));
        }
        let io = procedure(&mut p);
        let expect: Vec<Io> = [0u64, 3, 7, 12].iter().flat_map(|&s| caching(s, 2)).collect();
        assert_eq!(io, expect);
        assert_eq!(p.mapping(), vec![Some(0), Some(3), Some(7), Some(12)]);
        assert_eq!(p.evict_clock(), 3);
        assert_eq!(freqs(&p, 16), [5, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 0, 5, 0, 0, 0]);

        // (a) The workload changes: HDD 6, 9 and 14 become hot without being
        // cached. References round-robin, so none repeats the one before it.
        let mut want: Vec<(u64, u32)> = vec![(0, 3), (3, 7), (6, 6), (7, 2), (9, 5), (12, 6), (14, 4)];
        while want.iter().any(|w| w.1 > 0) {
            for (s, left) in want.iter_mut().filter(|w| w.1 > 0) {
                *left -= 1;
                // HDD 12's last reference is a write to its second page: absorbed by the SSD.
                let a = if *s == 12 && *left == 0 { write(2 * *s + 1, next()) } else { read(2 * *s, next()) };
                let (hit, io) = run(&mut p, a);
                let cached = [0, 3, 7, 12].contains(s);
                assert_eq!(hit, cached, "segment {s}");
                let expect = match (cached, a.op) {
                    (true, Op::Read) => vec![],
                    (true, _) => vec![Io::CacheWrite { key: a.key }],
                    (false, _) => vec![Io::Fetch { key: a.key, pages: 1 }],
                };
                assert_eq!(io, expect);
            }
        }
        assert_eq!(freqs(&p, 16), [20, 0, 0, 40, 0, 0, 30, 15, 0, 25, 0, 0, 35, 0, 20, 0]);
        assert_eq!(p.hot_count(), 6);
        assert_eq!(p.stats().dirty, 1);

        let io = procedure(&mut p);
        // Line 4: the dirty page is written back first.
        assert_eq!(io[0], Io::WriteBack { key: 25, pages: 1 });
        // (b) Six hot segments, four slots: one decay by 4/5 leaves four hot (3, 6, 9, 12).
        assert_eq!(freqs(&p, 16), [16, 0, 0, 32, 0, 0, 24, 12, 0, 20, 0, 0, 28, 0, 16, 0]);
        assert_eq!(p.hot_count(), 4);
        // (c) The cache clock stops at HDD 6; the evict clock moves on from
        // slot 3 to slot 0 (HDD 0, not hot): HDD 0 out, HDD 6 into slot 0.
        // (d) The cache clock stops at HDD 9; the evict clock passes slot 1
        // (HDD 3, hot) and stops at slot 2 (HDD 7): HDD 7 out, HDD 9 in.
        let mut expect = vec![Io::WriteBack { key: 25, pages: 1 }];
        expect.extend(evicting(0, 2));
        expect.extend(caching(6, 2));
        expect.extend(evicting(7, 2));
        expect.extend(caching(9, 2));
        assert_eq!(io, expect);
        assert_eq!(p.mapping(), vec![Some(6), Some(3), Some(9), Some(12)]);
        // The evict clock's last position is kept for next time.
        assert_eq!(p.evict_clock(), 2);
        assert_eq!((p.stats().resident, p.stats().dirty), (8, 0));
        // HDD 14 (16) stays out; HDD 6 and 9 hit now, HDD 0 and 7 miss.
        assert!(run(&mut p, read(12, next())).0 && run(&mut p, read(19, next())).0);
        assert!(!run(&mut p, read(0, next())).0 && !run(&mut p, read(14, next())).0);
        // HDD 0 is hot again (21): five hot segments, so the next procedure
        // decays once more, after which the four hot ones are those cached:
        // nothing moves.
        assert_eq!(freqs(&p, 16), [21, 0, 0, 32, 0, 0, 29, 17, 0, 25, 0, 0, 28, 0, 16, 0]);
        assert!(procedure(&mut p).is_empty());
        assert_eq!(freqs(&p, 16), [16, 0, 0, 25, 0, 0, 23, 13, 0, 20, 0, 0, 22, 0, 12, 0]);
        assert_eq!(p.mapping(), vec![Some(6), Some(3), Some(9), Some(12)]);
        assert_eq!(p.evict_clock(), 2);
    }

    /// `aging=continuous` (§3.3): the reference that makes more segments hot
    /// than the SSD has slots decays every frequency at once, until they fit;
    /// `aging=procedure` lets them outnumber the slots until the procedure.
    #[test]
    fn continuous_aging_decays_as_soon_as_the_hot_segments_outnumber_the_slots() {
        let cfg = PwcConfig { period: 0, continuous_decay: true, ..PwcConfig::paper(1) };
        let mut cont = Pwc::new(2, cfg);
        let mut proc = pwc(2, 1);
        // Round-robin over segments 0, 1, 2: after 4 rounds each is at 20.
        let mut seq = 0;
        for _ in 0..4 {
            for s in 0..3u64 {
                run(&mut cont, read(s, seq));
                run(&mut proc, read(s, seq));
                seq += 1;
                assert!(cont.hot <= 2 && cont.hot == cont.hot_count(), "hot {} at access {seq}", cont.hot);
            }
        }
        // The third reference to reach 20 made 3 hot > 2 slots: 20·0.8 = 16
        // each, no longer hot; once.
        assert_eq!(freqs(&cont, 3), [16, 16, 16]);
        assert_eq!(cont.decays(), 1);
        assert_eq!((freqs(&proc, 3), proc.decays(), proc.hot), (vec![20, 20, 20], 0, 3));
        // The procedure decays the other one the same way, later.
        run(&mut proc, read(3, seq));
        run(&mut cont, read(3, seq));
        procedure(&mut proc);
        assert_eq!((freqs(&proc, 3), proc.decays()), (vec![16, 16, 16], 1));
        // Nothing hot: the continuous cache's procedure has nothing to cache.
        assert!(procedure(&mut cont).is_empty());
        // A cache of no slot never decays continuously.
        let mut none = Pwc::new(0, cfg);
        for i in 0..8 {
            run(&mut none, read(i % 2, i));
        }
        assert_eq!((none.decays(), freqs(&none, 2)), (0, vec![20, 20]));
    }

    #[test]
    fn decay_repeats_until_the_hot_segments_fit() {
        let mut p = pwc(2, 1);
        // Frequencies 40, 35, 30 (round-robin references), and a fourth
        // segment referenced once, so first fill is off.
        let mut seq = 0;
        for round in 0..8 {
            for (s, n) in [(0u64, 8), (1, 7), (2, 6)] {
                if round < n {
                    run(&mut p, read(s, seq));
                    seq += 1;
                }
            }
        }
        run(&mut p, read(3, seq));
        assert_eq!(freqs(&p, 4), [40, 35, 30, 5]);
        let io = procedure(&mut p);
        // 40 35 30 -> 32 28 24 (3 hot) -> 25 22 19 (2 hot).
        assert_eq!(freqs(&p, 4), [25, 22, 19, 3]);
        let expect: Vec<Io> = [0u64, 1].iter().flat_map(|&s| caching(s, 1)).collect();
        assert_eq!(io, expect);
    }

    #[test]
    fn first_fill_caches_every_touched_segment_then_stops() {
        let mut p = pwc(4, 4);
        // Three segments, one reference each (5 < 20): all cached.
        for (i, s) in [9u64, 2, 5].into_iter().enumerate() {
            run(&mut p, read(s * 4, i as u64));
        }
        let io = procedure(&mut p);
        let expect: Vec<Io> = [2u64, 5, 9].iter().flat_map(|&s| caching(s, 4)).collect();
        assert_eq!(io, expect);
        assert_eq!(p.stats().resident, 12);
        // A fourth: still as many as fit (at most, our reading), so cached too.
        run(&mut p, read(0, 10));
        assert_eq!(procedure(&mut p), caching(0, 4));
        // A fifth: the rule no longer applies, nothing is hot, nothing moves
        // (segments that are not hot stay until a hot one needs the slot).
        run(&mut p, read(40, 11));
        assert!(procedure(&mut p).is_empty());
        assert_eq!(p.mapping(), vec![Some(2), Some(5), Some(9), Some(0)]);
        // Until segment 10 gets hot: it takes the evict clock's next slot.
        for i in 0..4 {
            run(&mut p, read(1, 20 + 2 * i));
            run(&mut p, read(40, 21 + 2 * i));
        }
        let mut expect = evicting(2, 4);
        expect.extend(caching(10, 4));
        assert_eq!(procedure(&mut p), expect);
        assert_eq!(p.mapping(), vec![Some(10), Some(5), Some(9), Some(0)]);
    }

    #[test]
    fn slots_are_materialised_as_they_are_filled() {
        // 2^31 one-page slots (8 TiB of 4 KiB pages): nothing per slot up front.
        let mut p = pwc(1 << 31, 1);
        assert_eq!((p.slots(), p.slots.len(), p.dirty_bits.len()), (1 << 31, 0, 0));
        for (i, s) in [7u64, 3].into_iter().enumerate() {
            run(&mut p, write(s, i as u64));
        }
        assert_eq!(procedure(&mut p), [3u64, 7].iter().flat_map(|&s| caching(s, 1)).collect::<Vec<_>>());
        assert_eq!((p.slots.len(), p.slot_row(2), p.evict_clock()), (2, NONE, 1));
        run(&mut p, write(7, 2));
        assert!(p.is_dirty(7) && !p.is_dirty(3));
        // A restore seeds slots anywhere; those before stay empty.
        let mut p = pwc(6, 1);
        p.restore(&[None, None, None, Some(4), None, None], [(4, 30)], 3);
        assert_eq!(p.slots.len(), 4);
        assert_eq!(p.mapping(), vec![None, None, None, Some(4), None, None]);
        run(&mut p, read(8, 0));
        assert_eq!(procedure(&mut p), caching(8, 1));
        assert_eq!(p.mapping(), vec![None, None, None, Some(4), Some(8), None]);
    }

    #[test]
    fn a_write_to_a_cached_segment_is_absorbed_and_written_back_once() {
        let mut p = pwc(1, 4);
        run(&mut p, read(4, 0));
        procedure(&mut p);
        // Pages 4, 5 and 7 written (5 twice, 4 partially): SSD only, no HDD I/O.
        for (i, k) in [4u64, 5, 7, 5].into_iter().enumerate() {
            let a = Access { partial: k == 4, ..write(k, 1 + i as u64) };
            assert_eq!(run(&mut p, a), (true, vec![Io::CacheWrite { key: k }]));
        }
        assert!(p.is_dirty(4) && p.is_dirty(5) && !p.is_dirty(6) && p.is_dirty(7));
        assert_eq!(p.stats().dirty, 3);
        // A write to an uncached segment goes to the HDD (and segment 2, not
        // hot, will not be cached).
        assert_eq!(run(&mut p, write(9, 9)), (false, vec![Io::WriteThrough { key: 9 }]));
        // The next procedure writes the dirty runs back, in address order, once;
        // nothing is dirty afterwards and the next one has nothing to write.
        assert_eq!(procedure(&mut p), vec![Io::WriteBack { key: 4, pages: 2 }, Io::WriteBack { key: 7, pages: 1 }]);
        assert_eq!(p.stats().dirty, 0);
        assert!(procedure(&mut p).is_empty());
        // Drain writes back what is dirty, and only that.
        run(&mut p, write(6, 20));
        let mut fx = Effects::new();
        p.drain(&mut fx);
        assert_eq!(fx.io, vec![Io::WriteBack { key: 6, pages: 1 }]);
        assert_eq!(p.stats().dirty, 0);
        // A trimmed dirty page is not written back.
        run(&mut p, write(6, 21));
        assert_eq!(run(&mut p, trim(6, 22)), (true, vec![]));
        assert_eq!(p.stats().dirty, 0);
        assert!(procedure(&mut p).is_empty());
    }

    #[test]
    fn write_through_mode_keeps_nothing_dirty() {
        let mut p = Pwc::new(4, PwcConfig { period: 0, write_back: false, ..PwcConfig::paper(4) });
        run(&mut p, read(0, 0));
        procedure(&mut p);
        assert_eq!(run(&mut p, write(1, 1)), (true, vec![Io::CacheWrite { key: 1 }, Io::WriteThrough { key: 1 }]));
        assert_eq!(p.stats().dirty, 0);
    }

    #[test]
    fn consecutive_references_count_once_and_trims_not_at_all() {
        let mut p = pwc(4, 4);
        // Pages 0..3 are one segment: one reference (a 4-page request).
        for k in 0..4 {
            run(&mut p, read(k, k));
        }
        assert_eq!(p.frequency(0), 5);
        run(&mut p, write(3, 4));
        assert_eq!(p.frequency(0), 5);
        run(&mut p, read(4, 5));
        run(&mut p, write(2, 6));
        assert_eq!((p.frequency(0), p.frequency(1)), (10, 5));
        run(&mut p, trim(5, 7));
        run(&mut p, trim(1, 8));
        assert_eq!((p.frequency(0), p.frequency(1)), (10, 5));
    }

    #[test]
    fn frequencies_saturate_at_u16_max() {
        let mut p = pwc(1, 1);
        for i in 0..14_000u64 {
            run(&mut p, read(0, 2 * i));
            run(&mut p, read(1, 2 * i + 1));
        }
        assert_eq!((p.frequency(0), p.frequency(1)), (u16::MAX, u16::MAX));
        run(&mut p, read(0, 1 << 20));
        assert_eq!(p.frequency(0), u16::MAX);
    }

    #[test]
    fn the_procedure_runs_on_its_period() {
        let mut p = Pwc::new(4, PwcConfig { period: 10, ..PwcConfig::paper(1) });
        let runs = |p: &mut Pwc, now| {
            tick(p, now);
            p.procedures()
        };
        // The schedule starts at the first tick: due at 10, 20, 30 …
        assert_eq!(runs(&mut p, 100), 0);
        assert_eq!(runs(&mut p, 105), 0);
        assert_eq!(runs(&mut p, 110), 1);
        assert_eq!(runs(&mut p, 119), 1);
        assert_eq!(runs(&mut p, 120), 2);
        // A long gap: one run, and the schedule goes on from its boundaries.
        assert_eq!(runs(&mut p, 165), 3);
        assert_eq!(runs(&mut p, 169), 3);
        assert_eq!(runs(&mut p, 170), 4);
        // The tick carries the procedure's effects.
        run(&mut p, read(3, 0));
        assert_eq!(tick(&mut p, 180), caching(3, 1));
        // The default is once a day.
        let mut p = Pwc::new(4, PwcConfig::paper(1));
        let day = 86_400_000_000_000;
        assert_eq!((runs(&mut p, 5), runs(&mut p, day), runs(&mut p, day + 5)), (0, 0, 1));
    }

    #[test]
    fn the_procedure_runs_when_idle() {
        // Idle only: every gap of 100 or more.
        let mut p = Pwc::new(4, PwcConfig { period: 0, idle: 100, ..PwcConfig::paper(1) });
        let runs = |p: &mut Pwc, now| {
            tick(p, now);
            p.procedures()
        };
        assert_eq!(runs(&mut p, 1000), 0);
        assert_eq!(runs(&mut p, 1099), 0);
        assert_eq!(runs(&mut p, 1199), 1);
        assert_eq!(runs(&mut p, 1200), 1);
        assert_eq!(runs(&mut p, 1500), 2);
        // Both: a due procedure waits for an idle gap (the paper's "daily, in idle time").
        let mut p = Pwc::new(4, PwcConfig { period: 1000, idle: 100, ..PwcConfig::paper(1) });
        assert_eq!(runs(&mut p, 0), 0);
        assert_eq!(runs(&mut p, 500), 0); // idle, but not due
        for t in (550..=1500).step_by(50) {
            assert_eq!(runs(&mut p, t), 0, "busy at {t}");
        }
        assert_eq!(runs(&mut p, 1600), 1);
        assert_eq!(runs(&mut p, 1900), 1); // idle, next due at 2000
        assert_eq!(runs(&mut p, 2100), 2);
        // Neither: never.
        let mut p = Pwc::new(4, PwcConfig { period: 0, idle: 0, ..PwcConfig::paper(1) });
        for t in [0, 10u64.pow(15), 10u64.pow(18)] {
            assert_eq!(runs(&mut p, t), 0);
        }
    }

    #[test]
    fn builds_with_paper_defaults_and_checks_parameters() {
        let ctx = BuildCtx { capacity: 1024, mode: Mode::WriteBack, page_bytes: 4096 };
        let (p, spec) = build_spec("pwc", &ctx).unwrap();
        assert_eq!(spec.canonical(), "pwc");
        assert_eq!(p.stats(), PolicyStats { capacity: 1024, resident: 0, dirty: 0, ghosts: 0 });
        assert!(build_spec("pwc(segment=128KiB,threshold=10,idle=30min,period=0)", &ctx).is_ok());
        assert!(build_spec("pwc(mode=wt)", &ctx).is_ok());
        assert!(build_spec("pwc(aging=continuous)", &ctx).is_ok());
        assert!(build_spec("pwc(max_dirty=20%,dirty_age=1h,clean_rate=50MB)", &ctx).is_ok());
        for (bad, what) in [
            ("pwc(aging=sometimes)", "aging"),
            ("pwc(segment=12KiB)", "power-of-two"),
            ("pwc(segment=6000)", "power-of-two"),
            ("pwc(threshold=0)", "between 1"),
            ("pwc(increment=70000)", "between 1"),
            ("pwc(decay=1)", "below 1"),
            ("pwc(period=soon)", "period"),
            ("pwc(mode=read-only)", "mode=read-only"),
            ("pwc(mode=write-around)", "mode=write-around"),
            ("pwc(max_dirty=120%)", "max_dirty"),
            ("pwc(dirty_age=often)", "dirty_age"),
            ("pwc(clean_rate=0)", "clean_rate"),
            ("pwc(clean_rate=fast)", "clean_rate"),
            ("pwc(mode=wt,dirty_age=1h)", "write-through has none"),
        ] {
            let e = build_spec(bad, &ctx).err().unwrap_or_else(|| panic!("{bad} built")).to_string();
            assert!(e.contains(what), "{bad}: {e}");
        }
        // Segments follow the page size: 1 MiB of 512-byte pages.
        let ctx = BuildCtx { capacity: 4096, mode: Mode::WriteBack, page_bytes: 512 };
        assert!(build_spec("pwc", &ctx).is_ok());
    }

    #[test]
    fn segments_keep_the_device_bits() {
        // Same page number on two devices: two segments.
        let mut p = pwc(2, 4);
        let (a, b) = (1u64 << 44, 2u64 << 44);
        run(&mut p, read(a + 1, 0));
        run(&mut p, read(b + 1, 1));
        assert_eq!((p.frequency(a >> 2), p.frequency(b >> 2)), (5, 5));
        let mut expect = caching(a >> 2, 4);
        expect.extend(caching(b >> 2, 4));
        assert_eq!(procedure(&mut p), expect);
    }

    /// Paper 000's baseline in page units, `lru(mode=read-only)`: reads are
    /// cached; a write to a cached block evicts it and goes to the HDD (not a
    /// hit); a write miss goes to the HDD uncached.
    #[test]
    fn the_papers_lru_baseline_is_lru_read_only() {
        let ctx = BuildCtx { capacity: 2, mode: Mode::ReadOnly, page_bytes: 4096 };
        let (mut p, _) = build_spec("lru", &ctx).unwrap();
        let mut go = |a: Access| {
            let mut fx = Effects::new();
            p.access(&a, &mut fx);
            (fx.hit, fx.io, p.stats().resident, p.stats().dirty)
        };
        assert_eq!(go(read(1, 0)), (false, vec![Io::Fetch { key: 1, pages: 1 }, Io::CacheWrite { key: 1 }], 1, 0));
        assert_eq!(go(read(1, 1)), (true, vec![], 1, 0));
        assert_eq!(
            go(write(1, 2)),
            (false, vec![Io::Invalidate { key: 1, dirty: false }, Io::WriteThrough { key: 1 }], 0, 0)
        );
        assert!(!go(read(1, 3)).0);
        assert_eq!(go(write(2, 4)), (false, vec![Io::WriteThrough { key: 2 }], 1, 0));
        assert!(!go(read(2, 5)).0);
        // LRU order among reads.
        go(read(3, 6));
        assert!(!go(read(1, 7)).0);
    }

    mod props {
        use super::*;
        use hashbrown::{HashMap, HashSet};
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Step {
            Access(Op, u64),
            /// Time passes, then the tick before the next request.
            Tick(u64),
        }

        fn steps() -> impl Strategy<Value = Vec<Step>> {
            let op = prop_oneof![6 => Just(Op::Read), 4 => Just(Op::Write), 1 => Just(Op::Trim)];
            // Two devices, 24 pages each.
            let key = (0u64..2, 0u64..24).prop_map(|(d, p)| d << 44 | p);
            let step = prop_oneof![
                8 => (op, key).prop_map(|(o, k)| Step::Access(o, k)),
                2 => (0u64..40).prop_map(Step::Tick),
            ];
            prop::collection::vec(step, 1..500)
        }

        /// Data versions: the latest write of each page, what the HDD and the SSD hold.
        #[derive(Default)]
        struct Model {
            latest: HashMap<u64, u64>,
            hdd: HashMap<u64, u64>,
            ssd: HashMap<u64, u64>,
            dirty: HashSet<u64>,
            /// When each segment with dirty pages became dirty.
            since: HashMap<u64, u64>,
        }

        impl Model {
            fn fresh_on_hdd(&self, k: u64) -> bool {
                self.hdd.get(&k) == self.latest.get(&k)
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            /// Random accesses and ticks: the capacity holds, reads are never
            /// stale, every write is on the HDD or dirty in the SSD, a
            /// procedure leaves nothing dirty, and so does the drain.
            #[test]
            fn writes_are_never_lost(
                trace in steps(),
                seg_log in 0u32..3,
                capacity in 1usize..20,
                threshold in 1u16..25,
                increment in 1u16..8,
                period in 0u64..60,
                idle in 0u64..30,
                write_back in any::<bool>(),
                continuous_decay in any::<bool>(),
                max_dirty in prop::option::of(0u32..=100),
                dirty_age in prop::option::of(0u64..50),
                rate in prop::option::of(1u64..8),
            ) {
                // (the cleaner: only in write-back mode; a rate in pages per time unit)
                let cleaner = if write_back {
                    CleanerConfig {
                        max_dirty: max_dirty.map(|m| m as f64 / 100.0),
                        dirty_age,
                        rate: rate.map(|r| r * 1_000_000_000),
                        clean_to: None,
                    }
                } else {
                    CleanerConfig::default()
                };
                let cfg = PwcConfig {
                    segment_pages: 1 << seg_log,
                    threshold,
                    increment,
                    decay_permille: 800,
                    period,
                    idle,
                    write_back,
                    continuous_decay,
                    cleaner,
                    page_bytes: 1,
                };
                let mut p = Pwc::new(capacity, cfg);
                let mut m = Model::default();
                let mut fx = Effects::new();
                let mut now = 0u64;
                for (i, step) in trace.iter().enumerate() {
                    fx.clear();
                    let before = p.procedures();
                    let ctx = format!("step {i} {step:?}");
                    match *step {
                        Step::Tick(dt) => {
                            now += dt;
                            p.tick(now, &mut fx);
                            let mut fetched = HashSet::new();
                            for io in &fx.io {
                                match *io {
                                    Io::WriteBack { key, pages } => {
                                        for k in key..key + pages as u64 {
                                            prop_assert!(m.dirty.remove(&k), "{ctx}: write-back of clean {k}");
                                            m.hdd.insert(k, m.ssd[&k]);
                                        }
                                    }
                                    Io::Evict { key, dirty } => {
                                        prop_assert!(!dirty && !m.dirty.contains(&key), "{ctx}: dirty eviction");
                                        prop_assert!(m.ssd.remove(&key).is_some(), "{ctx}: evicted {key} not cached");
                                    }
                                    Io::Fetch { key, pages } => {
                                        prop_assert_eq!(pages as u64, cfg.segment_pages);
                                        prop_assert_eq!(key % cfg.segment_pages, 0);
                                        for k in key..key + pages as u64 {
                                            prop_assert!(m.fresh_on_hdd(k), "{}: stale fetch of {}", ctx, k);
                                            fetched.insert(k);
                                        }
                                    }
                                    Io::CacheWrite { key } => {
                                        prop_assert!(fetched.contains(&key), "{ctx}: caching unfetched {key}");
                                        prop_assert!(m.ssd.insert(key, m.hdd.get(&key).copied().unwrap_or(0)).is_none());
                                    }
                                    other => prop_assert!(false, "{ctx}: {other:?} at a tick"),
                                }
                            }
                            if p.procedures() > before {
                                prop_assert_eq!(p.stats().dirty, 0, "{}: dirty after the procedure", ctx);
                            } else {
                                prop_assert!(fx.io.iter().all(|io| matches!(io, Io::WriteBack { .. })), "{ctx}: {:?}", fx.io);
                            }
                            // The cleaner's bounds hold after every tick (rate permitting).
                            let segs: HashSet<u64> = m.dirty.iter().map(|k| k / cfg.segment_pages).collect();
                            m.since.retain(|seg, _| segs.contains(seg));
                            if cleaner.rate.is_none() {
                                if let Some(share) = cleaner.max_dirty {
                                    prop_assert!(segs.len() as f64 <= share * p.slots() as f64, "{ctx}: {} dirty segments", segs.len());
                                }
                                if let Some(age) = cleaner.dirty_age {
                                    prop_assert!(m.since.values().all(|&t| now - t < age), "{ctx}: dirty {:?} at {now}", m.since);
                                }
                            }
                        }
                        Step::Access(op, key) => {
                            let a = Access { time: now, key, op, partial: false, seq: i as u64, next_use: NEVER, request_pages: 1 };
                            match op {
                                Op::Write => *m.latest.entry(key).or_insert(0) += 1,
                                Op::Trim => {
                                    // Contents undefined: whatever each device holds is current.
                                    if let Some(&v) = m.latest.get(&key) {
                                        m.hdd.insert(key, v);
                                        if let Some(c) = m.ssd.get_mut(&key) {
                                            *c = v;
                                        }
                                    }
                                    m.dirty.remove(&key);
                                    let seg = key / cfg.segment_pages;
                                    if !m.dirty.iter().any(|k| k / cfg.segment_pages == seg) {
                                        m.since.remove(&seg);
                                    }
                                }
                                Op::Read => {}
                            }
                            p.access(&a, &mut fx);
                            let cached = m.ssd.contains_key(&key);
                            prop_assert_eq!(fx.hit, cached, "{}", ctx);
                            match (op, cached) {
                                (Op::Read, true) => {
                                    prop_assert!(fx.io.is_empty());
                                    prop_assert_eq!(m.ssd.get(&key), m.latest.get(&key).or(Some(&0)), "{}", ctx);
                                }
                                (Op::Read, false) => {
                                    prop_assert_eq!(&fx.io, &vec![Io::Fetch { key, pages: 1 }]);
                                    prop_assert!(m.fresh_on_hdd(key), "{ctx}: stale read");
                                }
                                (Op::Write, true) => {
                                    prop_assert_eq!(fx.io[0], Io::CacheWrite { key });
                                    m.ssd.insert(key, m.latest[&key]);
                                    if write_back {
                                        prop_assert_eq!(fx.io.len(), 1);
                                        m.dirty.insert(key);
                                        m.since.entry(key / cfg.segment_pages).or_insert(now);
                                    } else {
                                        prop_assert_eq!(&fx.io[1..], &[Io::WriteThrough { key }]);
                                        m.hdd.insert(key, m.latest[&key]);
                                    }
                                }
                                (Op::Write, false) => {
                                    prop_assert_eq!(&fx.io, &vec![Io::WriteThrough { key }]);
                                    m.hdd.insert(key, m.latest[&key]);
                                }
                                (Op::Trim, _) => prop_assert!(fx.io.is_empty()),
                            }
                        }
                    }
                    let st = p.stats();
                    prop_assert!(st.resident <= st.capacity, "{}: {} resident > {}", ctx, st.resident, st.capacity);
                    prop_assert_eq!(st.resident, m.ssd.len() as u64, "{}", ctx);
                    prop_assert_eq!(st.dirty, m.dirty.len() as u64, "{}", ctx);
                    for (&k, v) in &m.latest {
                        let on_hdd = m.hdd.get(&k) == Some(v);
                        let dirty_in_ssd = m.dirty.contains(&k) && m.ssd.get(&k) == Some(v) && p.is_dirty(k);
                        prop_assert!(on_hdd || dirty_in_ssd, "{}: write to {} lost", ctx, k);
                    }
                }
                fx.clear();
                p.drain(&mut fx);
                for io in &fx.io {
                    let Io::WriteBack { key, pages } = *io else {
                        return Err(TestCaseError::fail(format!("drain emitted {io:?}")));
                    };
                    for k in key..key + pages as u64 {
                        prop_assert!(m.dirty.remove(&k), "drain wrote back clean {}", k);
                        m.hdd.insert(k, m.ssd[&k]);
                    }
                }
                prop_assert_eq!(p.stats().dirty, 0);
                for (k, v) in &m.latest {
                    prop_assert_eq!(m.hdd.get(k), Some(v), "after drain: {} not on the HDD", k);
                }
            }
        }
    }

    #[test]
    fn restore_equals_the_state_it_was_taken_from() {
        // Build a state by running, then restore it into a fresh instance:
        // both must take the same decisions from then on.
        let mut a = pwc(2, 1);
        for (i, k) in [0u64, 1, 0, 1, 2, 0, 3, 0, 1, 2, 2, 4].into_iter().enumerate() {
            run(&mut a, write(k, i as u64));
        }
        procedure(&mut a);
        let mut b = pwc(2, 1);
        b.restore(&a.mapping(), (0..5).map(|k| (k, a.frequency(k))), a.evict_clock());
        assert_eq!(b.mapping(), a.mapping());
        assert_eq!(b.evict_clock(), a.evict_clock());
        for (i, k) in [3u64, 4, 3, 4, 3, 4, 3, 4, 2, 1].into_iter().enumerate() {
            assert_eq!(run(&mut a, read(k, i as u64)), run(&mut b, read(k, i as u64)));
        }
        assert_eq!(procedure(&mut a), procedure(&mut b));
        assert_eq!(b.mapping(), a.mapping());
        assert_eq!(b.evict_clock(), a.evict_clock());
    }
}
