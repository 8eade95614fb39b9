//! The background cleaner of a write-back segment cache: operators' bounds on
//! dirty data, beyond paper 000 (which writes dirty segments back only at its
//! daily procedure). One decision rule, used by the simulator's PWC
//! (`pwc.rs`, in trace time) and by `ssdcache serve` (in wall time), so `sim`
//! predicts what the cleaner of `serve` writes back.
//!
//! A dirty slot is *due* for cleaning when
//! - more slots than `max_dirty` of the cache's are dirty (the oldest dirty
//!   slot is due, until the share is back under the bound), or
//! - it has been dirty for `dirty_age` or longer.
//!
//! Slots are cleaned oldest-dirtied first, one whole segment at a time, at
//! most `rate` bytes per second: a token bucket that holds at most one
//! second of the rate (or one segment, if larger), so a long idle spell does
//! not turn into a burst. Age counts from the write that made a clean slot
//! dirty; writes to a dirty slot do not reset it.

use std::collections::VecDeque;

use crate::Nanos;

const SECOND: Nanos = 1_000_000_000;

/// An operator's bounds; the default bounds nothing (paper 000's PWC).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CleanerConfig {
    /// Most dirty slots, as a share of the cache's slots in [0, 1]; None: no bound.
    pub max_dirty: Option<f64>,
    /// Longest a slot stays dirty; None: no bound.
    pub dirty_age: Option<Nanos>,
    /// Most bytes written back per second; None: as fast as the device goes.
    pub rate: Option<u64>,
    /// The low watermark: once more than `max_dirty` are dirty, clean until
    /// at most this share is (dm-writecache's 45/50 %), so that a burst of
    /// write-backs leaves clean victims at hand; None: `max_dirty` itself.
    pub clean_to: Option<f64>,
}

impl CleanerConfig {
    /// Whether the cleaner ever cleans anything.
    pub fn is_active(&self) -> bool {
        self.max_dirty.is_some() || self.dirty_age.is_some()
    }

    /// `clean_to` needs `max_dirty`, and is at most it.
    pub fn check(&self) -> Result<(), String> {
        match (self.clean_to, self.max_dirty) {
            (Some(_), None) => Err("clean_to is the low watermark under max_dirty: give max_dirty too".into()),
            (Some(low), Some(high)) if low > high => Err(format!(
                "clean_to {}% is above max_dirty {}%: the low watermark must be at most the high one",
                low * 100.0,
                high * 100.0
            )),
            _ => Ok(()),
        }
    }
}

/// Why a slot is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// More slots are dirty than `max_dirty` allows.
    TooMany,
    /// The slot has been dirty for `dirty_age`.
    TooOld,
}

/// What the cleaner has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CleanerStats {
    /// Slots written back by the cleaner, for each reason.
    pub cleaned_too_many: u64,
    pub cleaned_too_old: u64,
    /// Bytes the cleaner's write-backs were charged (whole segments).
    pub bytes: u64,
}

pub struct Cleaner {
    cfg: CleanerConfig,
    /// When each slot became dirty, [`CLEAN`] if it is not.
    since: Vec<Nanos>,
    /// (since, slot) in the order slots became dirty; entries whose slot was
    /// cleaned (and maybe dirtied again) since are stale and skipped.
    order: VecDeque<(Nanos, u32)>,
    dirty: usize,
    tokens: f64,
    refilled: Option<Nanos>,
    stats: CleanerStats,
    /// Over `max_dirty` since the share was last at `clean_to`.
    draining: bool,
}

const CLEAN: Nanos = Nanos::MAX;

impl Cleaner {
    pub fn new(cfg: CleanerConfig) -> Self {
        Cleaner {
            cfg,
            since: Vec::new(),
            order: VecDeque::new(),
            dirty: 0,
            tokens: 0.0,
            refilled: None,
            stats: CleanerStats::default(),
            draining: false,
        }
    }

    pub fn config(&self) -> &CleanerConfig {
        &self.cfg
    }

    /// New bounds from now on (`ssdcache set`); which slots are dirty, and
    /// since when, is kept. The rate's bucket starts empty again.
    pub fn set_config(&mut self, cfg: CleanerConfig) {
        self.cfg = cfg;
        self.tokens = 0.0;
        self.refilled = None;
        self.draining = false;
    }

    pub fn stats(&self) -> CleanerStats {
        self.stats
    }

    /// Dirty slots known to the cleaner.
    pub fn dirty(&self) -> usize {
        self.dirty
    }

    /// Slot `slot` went from clean to dirty at `now` (a repeat is ignored).
    pub fn dirtied(&mut self, slot: u32, now: Nanos) {
        let s = slot as usize;
        if s >= self.since.len() {
            self.since.resize(s + 1, CLEAN);
        }
        if self.since[s] == CLEAN {
            self.since[s] = now;
            self.order.push_back((now, slot));
            self.dirty += 1;
        }
    }

    /// Slot `slot` was written back (by the cleaner or anything else), or
    /// its dirty data discarded.
    pub fn cleaned(&mut self, slot: u32) {
        if let Some(t) = self.since.get_mut(slot as usize) {
            if *t != CLEAN {
                *t = CLEAN;
                self.dirty -= 1;
            }
        }
        if self.dirty == 0 {
            self.order.clear();
        }
    }

    /// Every slot is clean (a procedure wrote them all back).
    pub fn all_cleaned(&mut self) {
        self.since.fill(CLEAN);
        self.order.clear();
        self.dirty = 0;
    }

    /// The oldest dirty slot and when it became dirty.
    fn oldest(&mut self) -> Option<(Nanos, u32)> {
        while let Some(&(t, slot)) = self.order.front() {
            if self.since[slot as usize] == t {
                return Some((t, slot));
            }
            self.order.pop_front();
        }
        None
    }

    /// When the oldest dirty slot became dirty (for `ssdcache status`'s
    /// oldest dirty age, and to know when the next one becomes due).
    pub fn oldest_since(&mut self) -> Option<Nanos> {
        self.oldest().map(|(t, _)| t)
    }

    /// The slot due for cleaning at `now` in a cache of `slots` slots, if any,
    /// and why; nothing about the rate.
    pub fn due(&mut self, now: Nanos, slots: usize) -> Option<(u32, Due)> {
        let (t, slot) = self.oldest()?;
        if let Some(high) = self.cfg.max_dirty {
            let over = |share: f64| self.dirty as f64 > share * slots as f64;
            // Over the high mark: clean down to the low one (hysteresis).
            self.draining |= over(high);
            if self.draining && over(self.cfg.clean_to.unwrap_or(high).min(high)) {
                return Some((slot, Due::TooMany));
            }
            self.draining = false;
        }
        let too_old = self.cfg.dirty_age.is_some_and(|age| now.saturating_sub(t) >= age);
        too_old.then_some((slot, Due::TooOld))
    }

    /// [`due`](Self::due), if the rate allows `segment_bytes` more now: the
    /// bytes are then taken, and the cleaning counted (the caller writes the
    /// slot back and calls [`cleaned`](Self::cleaned); a slot that fails to
    /// write back stays dirty and comes up again, at the rate).
    pub fn next(&mut self, now: Nanos, slots: usize, segment_bytes: u64) -> Option<(u32, Due)> {
        let (slot, why) = self.due(now, slots)?;
        if let Some(rate) = self.cfg.rate {
            // (the bucket starts full)
            let cap = (rate as f64).max(segment_bytes as f64);
            self.tokens = match self.refilled {
                None => cap,
                Some(r) => (self.tokens + rate as f64 * now.saturating_sub(r) as f64 / SECOND as f64).min(cap),
            };
            self.refilled = Some(now);
            if self.tokens < segment_bytes as f64 {
                return None;
            }
            self.tokens -= segment_bytes as f64;
        }
        match why {
            Due::TooMany => self.stats.cleaned_too_many += 1,
            Due::TooOld => self.stats.cleaned_too_old += 1,
        }
        self.stats.bytes += segment_bytes;
        Some((slot, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = SECOND;

    fn cleaner(max_dirty: Option<f64>, dirty_age: Option<Nanos>, rate: Option<u64>) -> Cleaner {
        Cleaner::new(CleanerConfig { max_dirty, dirty_age, rate, clean_to: None })
    }

    /// Slots `next` hands out at `now` until it stops, each cleaned at once.
    fn drain(c: &mut Cleaner, now: Nanos, slots: usize, seg: u64) -> Vec<(u32, Due)> {
        let mut out = Vec::new();
        while let Some((slot, why)) = c.next(now, slots, seg) {
            c.cleaned(slot);
            out.push((slot, why));
        }
        out
    }

    #[test]
    fn without_bounds_nothing_is_ever_due() {
        let mut c = cleaner(None, None, None);
        for s in 0..10 {
            c.dirtied(s, 0);
        }
        assert!(!c.config().is_active());
        assert_eq!(c.next(1 << 62, 10, 1), None);
    }

    #[test]
    fn above_the_share_the_oldest_dirty_slots_are_due_until_it_is_met() {
        let mut c = cleaner(Some(0.3), None, None);
        for (t, s) in [(5, 7), (1, 2), (9, 4), (3, 1)] {
            c.dirtied(s, t); // 4 of 10 slots: one over 30 %
        }
        c.dirtied(2, 20); // already dirty: keeps its first time
        assert_eq!(drain(&mut c, 100, 10, 1), vec![(7, Due::TooMany)], "dirtied first, at 5");
        assert_eq!(c.dirty(), 3);
    }

    #[test]
    fn a_slot_is_due_once_dirty_for_the_age_and_a_new_dirtying_starts_over() {
        let mut c = cleaner(None, Some(10 * S), None);
        c.dirtied(3, 0);
        c.dirtied(4, 5 * S);
        assert_eq!(drain(&mut c, 10 * S - 1, 8, 1), vec![]);
        assert_eq!(drain(&mut c, 10 * S, 8, 1), vec![(3, Due::TooOld)]);
        c.dirtied(3, 12 * S); // dirty again: its age counts from here
        assert_eq!(drain(&mut c, 15 * S, 8, 1), vec![(4, Due::TooOld)]);
        assert_eq!(drain(&mut c, 21 * S, 8, 1), vec![]);
        assert_eq!(drain(&mut c, 22 * S, 8, 1), vec![(3, Due::TooOld)]);
        let st = c.stats();
        assert_eq!((st.cleaned_too_old, st.cleaned_too_many, st.bytes), (3, 0, 3));
    }

    #[test]
    fn a_slot_cleaned_elsewhere_is_not_due_and_a_failed_one_comes_back() {
        let mut c = cleaner(None, Some(1), None);
        c.dirtied(0, 0);
        c.dirtied(1, 0);
        c.cleaned(0); // the procedure wrote it back
        assert_eq!(c.next(5, 4, 1), Some((1, Due::TooOld)));
        // not cleaned (the write-back failed): still due
        assert_eq!(c.next(6, 4, 1), Some((1, Due::TooOld)));
        c.all_cleaned();
        assert_eq!(c.next(7, 4, 1), None);
        assert_eq!(c.dirty(), 0);
    }

    #[test]
    fn the_rate_limits_bytes_per_second_with_a_bucket_of_one_second() {
        // 1 MB/s, 250 kB segments: the full bucket gives 4 at once, then one
        // each quarter second; a long pause refills one second only
        let mut c = cleaner(None, Some(0), Some(1_000_000));
        for s in 0..40 {
            c.dirtied(s, 0);
        }
        let seg = 250_000;
        assert_eq!(drain(&mut c, 0, 40, seg).len(), 4);
        assert_eq!(drain(&mut c, S / 4 - 1, 40, seg).len(), 0);
        assert_eq!(drain(&mut c, S / 4, 40, seg).len(), 1);
        assert_eq!(drain(&mut c, 100 * S, 40, seg).len(), 4);
        assert_eq!(c.stats().bytes, 9 * seg);
        // a segment larger than a second of the rate still goes, one per its time
        let mut c = cleaner(None, Some(0), Some(100));
        c.dirtied(0, 0);
        c.dirtied(1, 0);
        assert_eq!(drain(&mut c, 0, 2, 1000).len(), 1);
        assert_eq!(drain(&mut c, 9 * S, 2, 1000).len(), 0);
        assert_eq!(drain(&mut c, 10 * S, 2, 1000).len(), 1);
    }

    #[test]
    fn over_the_high_mark_it_cleans_down_to_the_low_one() {
        // 100 slots, high 50 %, low 45 %: nothing due until 51 are dirty,
        // then 6 in a row (down to 45), then nothing until over 50 again.
        let cfg = CleanerConfig { max_dirty: Some(0.5), clean_to: Some(0.45), ..Default::default() };
        let mut c = Cleaner::new(cfg);
        for s in 0..50 {
            c.dirtied(s, s as Nanos);
        }
        assert_eq!(drain(&mut c, 100, 100, 1).len(), 0, "at the high mark: nothing due");
        c.dirtied(50, 60);
        let cleaned = drain(&mut c, 100, 100, 1);
        assert_eq!(cleaned.len(), 6, "down to 45 dirty");
        assert!(cleaned.iter().all(|&(_, why)| why == Due::TooMany));
        assert_eq!(c.dirty(), 45);
        for s in 51..55 {
            c.dirtied(s, 70);
        }
        assert_eq!(drain(&mut c, 100, 100, 1).len(), 0, "49 dirty: under the high mark again");
        // Without a low mark, only the excess.
        let mut plain = Cleaner::new(CleanerConfig { max_dirty: Some(0.5), ..Default::default() });
        for s in 0..53 {
            plain.dirtied(s, s as Nanos);
        }
        assert_eq!(drain(&mut plain, 100, 100, 1).len(), 3);
        assert!(CleanerConfig { clean_to: Some(0.4), ..Default::default() }.check().is_err());
        assert!(CleanerConfig { max_dirty: Some(0.3), clean_to: Some(0.4), ..Default::default() }.check().is_err());
        assert!(cfg.check().is_ok());
    }
}
