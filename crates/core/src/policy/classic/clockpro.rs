//! CLOCK-Pro (Jiang, Chen & Zhang, USENIX ATC'05): CLOCK with LIRS's reuse
//! distance. One clock holds hot pages, resident cold pages and non-resident
//! cold pages (keys whose *test period* is still running), swept by three hands:
//!
//! - a hit sets the page's reference bit; nothing moves;
//! - a miss first frees a page with `HAND_cold`, then: if the key is a
//!   non-resident cold page still in its test period, its reuse distance beat
//!   the cold pages': the cold target `m_c` grows by one (at most `m`) and the
//!   page comes back **hot** at the list head; any other key comes in as a
//!   resident cold page at the head, in its test period;
//! - `HAND_cold`, at a resident cold page: referenced and in its test period →
//!   `m_c` grows by one, the page turns hot and moves to the head (then
//!   `HAND_hot` runs); referenced otherwise
//!   → a new test period, moves to the head; unreferenced → leaves the cache,
//!   and stays in the clock as a non-resident cold page if it was in its test
//!   period (else it leaves the clock). It stops after one page has left;
//! - `HAND_hot` runs while hot pages exceed `m − m_c`: a referenced hot page is
//!   cleared and passed, an unreferenced one turns cold (without a test period)
//!   and the hand stops; on its way it ends the test period of each cold page
//!   it passes and removes non-resident ones from the clock;
//! - `HAND_test` runs while non-resident pages exceed `m`: it ends test
//!   periods and removes non-resident pages in the same way;
//! - a test period a hand ends shrinks `m_c` by one (at least 1) if the page
//!   was not re-accessed in it, and grows it by one if it was (a resident
//!   cold page with its reference bit set): the paper adapts `m_c` on "a cold
//!   page", and says these include resident and non-resident ones.
//!
//! "The head" is the position `HAND_hot` reaches last. `cold=` is the initial
//! `m_c` as a share of the capacity (the paper adapts it from there; its
//! default, 100%, is the C default of libCacheSim's ClockPro and pyclockpro's).
//!
//! Cost: `HAND_cold` passes pages that are not resident cold without
//! touching them, so instead of walking it jumps to its next resident cold
//! page, kept with a second list threading the resident cold pages in clock
//! order (the walk made it O(hot pages) per miss when the cold target is
//! small: 90× LRU's instructions). What changes that page — a cold page
//! leaving, or one appearing between the hand and it at the head or where
//! `HAND_hot` demotes — is O(1) to tell from `HAND_hot`'s own next cold page
//! and one flag. `HAND_hot` and `HAND_test` do work at nearly every page they
//! pass and still walk. Measured (callgrind, whole `sim` run, 1 M requests):
//! 1.1× LRU's instructions on Zipf 0.9 over 100 K keys (599 M against 538 M;
//! 596 M with `cold=1%`), 1.01× on a loop over 12 K keys in 10 K pages (736 M
//! against 728 M); the jump left misses unchanged (the tests check it
//! against a walk, and the Python model walks).
//!
//! Until 2026-11-26 `m_c` grew only for non-resident pages and shrank at
//! every ended test period, referenced or not; the test
//! `a_resident_cold_page_reaccessed_in_its_test_period_grows_the_cold_target`
//! shows the paper's rule.
//!
//! ## libCacheSim
//!
//! libCacheSim's `ClockPro` (`ClockPro.c`, libcachesim 0.3.5) is not an
//! agreement peer: it holds more pages than its size — on a loop of 5 keys
//! through 4 pages it misses 24 of 100 accesses, fewer than Belady's 28 —
//! since a page back in its test period is promoted in the clock without
//! being added to the cache's index or byte count; and it refuses every
//! object while its cold target is under one object (a 1-page cache at the
//! Python default `init_ratio_cold=0.5`). There is no `variant=libcachesim`.
//! Instead `tests/agreement/test_reference_models.py` transcribes the paper's
//! hands walking page by page and checks miss-for-miss equality on synthetic
//! and real streams (and the loop above).

use crate::list::{Arena, InVal, LinkStore, Links, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Hot,
    Cold,
    /// Non-resident cold page in its test period.
    Test,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    status: Status,
    referenced: bool,
    /// A resident cold page's test period is running.
    in_test: bool,
    /// Links on the list of resident cold pages.
    cold: Links,
}

impl Meta {
    fn new(status: Status, in_test: bool) -> Meta {
        Meta { status, referenced: false, in_test, cold: Links::NONE }
    }
}

impl LinkStore<InVal> for Arena<Meta> {
    #[inline]
    fn links(&self, idx: u32) -> &Links {
        &self.val(idx).cold
    }
    #[inline]
    fn links_mut(&mut self, idx: u32) -> &mut Links {
        &mut self.val_mut(idx).cold
    }
}

pub struct ClockPro {
    arena: Arena<Meta>,
    /// The clock, in the hands' direction (front to back, then round).
    clock: List,
    /// The resident cold pages in clock order (front to back and round, from
    /// any of them): where `HAND_cold` stops next without walking.
    colds: List<InVal>,
    hand_hot: u32,
    hand_cold: u32,
    hand_test: u32,
    /// The first resident cold page at or after `HAND_hot` (`NONE`: none).
    hot_next_cold: u32,
    /// The first resident cold page at or after `HAND_cold` (`NONE`: none).
    cold_next_cold: u32,
    /// `HAND_cold` is on a page that is not resident cold, and `HAND_hot` is
    /// after it up to its next cold page: a page placed at the head lands
    /// between `HAND_cold` and `cold_next_cold`.
    cold_behind_hot: bool,
    hot: usize,
    cold: usize,
    test: usize,
    capacity: usize,
    /// `m_c`: the target number of resident cold pages.
    cold_target: usize,
}

const NONE: u32 = crate::list::NIL;

impl ClockPro {
    pub fn new(capacity: usize, cold: f64) -> Self {
        let capacity = capacity.max(1);
        ClockPro {
            arena: Arena::with_capacity(2 * capacity),
            clock: List::new(),
            colds: List::default(),
            hand_hot: NONE,
            hand_cold: NONE,
            hand_test: NONE,
            hot_next_cold: NONE,
            cold_next_cold: NONE,
            cold_behind_hot: false,
            hot: 0,
            cold: 0,
            test: 0,
            capacity,
            cold_target: ((capacity as f64 * cold).round() as usize).clamp(1, capacity),
        }
    }

    /// (hot, resident cold, non-resident, m_c).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (self.hot, self.cold, self.test, self.cold_target)
    }

    #[inline]
    fn next(&self, idx: u32) -> u32 {
        self.clock.next_of(&self.arena, idx).or_else(|| self.clock.front()).expect("clock is not empty")
    }

    /// The resident cold page after `idx` (itself if it is the only one).
    #[inline]
    fn next_cold(&self, idx: u32) -> u32 {
        self.colds.next_of(&self.arena, idx).or_else(|| self.colds.front()).expect("a cold page")
    }

    fn status(&self, idx: u32) -> Status {
        self.arena.val(idx).status
    }

    // ---- the list of resident cold pages and the hands' next cold page ----
    //
    // `HAND_cold` passes pages that are not resident cold without touching
    // them, so it may jump to `cold_next_cold`. That page changes when a cold
    // page leaves (`cold_leaves`) or one appears between the hand and it: at
    // the head (`cold_at_head`, just behind `HAND_hot`) or where `HAND_hot`
    // demotes a hot page (`cold_at_hot_hand`); `HAND_hot`'s own next cold page
    // and `cold_behind_hot` tell which.

    /// `x`, just placed at the head, becomes a resident cold page.
    fn cold_at_head(&mut self, x: u32) {
        self.arena.val_mut(x).status = Status::Cold;
        self.cold += 1;
        if self.colds.is_empty() {
            self.colds.push_back(&mut self.arena, x);
            self.hot_next_cold = x;
            self.cold_next_cold = x;
            self.cold_behind_hot = false;
            return;
        }
        // Just behind HAND_hot: just before its next cold page.
        match self.colds.prev_of(&self.arena, self.hot_next_cold) {
            Some(p) => self.colds.insert_after(&mut self.arena, p, x),
            None => self.colds.push_back(&mut self.arena, x),
        }
        if self.cold_behind_hot {
            self.cold_next_cold = x;
            self.cold_behind_hot = false;
        }
    }

    /// The hot page under `HAND_hot` becomes a resident cold page (the hand
    /// then steps past it).
    fn cold_at_hot_hand(&mut self) {
        let x = self.hand_hot;
        let was_empty = self.colds.is_empty();
        if was_empty {
            self.colds.push_back(&mut self.arena, x);
        } else {
            match self.colds.prev_of(&self.arena, self.hot_next_cold) {
                Some(p) => self.colds.insert_after(&mut self.arena, p, x),
                None => self.colds.push_back(&mut self.arena, x),
            }
        }
        self.arena.val_mut(x).status = Status::Cold;
        self.cold += 1;
        if was_empty || self.cold_behind_hot || self.hand_cold == x {
            self.cold_next_cold = x;
        }
        self.hot_next_cold = x;
        self.cold_behind_hot = false;
    }

    /// Resident cold page `c` stops being one (it stays in the clock, where
    /// it is, as a page of another status, until the caller moves it).
    fn cold_leaves(&mut self, c: u32) {
        let nx = if self.colds.len() == 1 { NONE } else { self.next_cold(c) };
        if nx == NONE {
            self.cold_behind_hot = false;
        } else if self.hand_cold == c {
            self.cold_behind_hot = self.hand_hot != c && self.hot_next_cold == nx;
        } else if self.cold_next_cold == c && !self.cold_behind_hot {
            self.cold_behind_hot = self.hand_hot == c || self.hot_next_cold == nx;
        }
        if self.hot_next_cold == c {
            self.hot_next_cold = nx;
        }
        if self.cold_next_cold == c {
            self.cold_next_cold = nx;
        }
        self.colds.unlink(&mut self.arena, c);
        self.cold -= 1;
    }

    /// `HAND_hot` steps past `p` (which stays in the clock).
    #[inline]
    fn step_hot(&mut self, p: u32) {
        let n = self.next(p);
        if self.status(p) == Status::Cold {
            self.hot_next_cold = self.next_cold(p);
            self.cold_behind_hot = false;
        } else if p == self.hand_cold {
            self.cold_behind_hot = n != p;
        }
        self.hand_hot = n;
    }

    /// `HAND_cold` steps past `p`, no longer a resident cold page, which stays.
    fn step_cold(&mut self, p: u32) {
        self.hand_cold = self.next(p);
        if self.hand_cold == self.hand_hot {
            self.cold_behind_hot = false;
        }
    }

    /// Takes `idx`, not a resident cold page, out of the clock, moving any
    /// hand on it forward.
    fn detach(&mut self, idx: u32) {
        debug_assert_ne!(self.status(idx), Status::Cold);
        let next = if self.clock.len() == 1 { NONE } else { self.next(idx) };
        if self.hand_hot == idx {
            self.hand_hot = next;
        }
        if self.hand_cold == idx {
            self.hand_cold = next;
            if self.hand_cold == self.hand_hot {
                self.cold_behind_hot = false;
            }
        }
        if self.hand_test == idx {
            self.hand_test = next;
        }
        self.clock.unlink(&mut self.arena, idx);
    }

    /// Puts `idx` at the head: just behind `HAND_hot`, the last place it reaches.
    fn place_at_head(&mut self, idx: u32) {
        if self.hand_hot == NONE {
            self.clock.push_front(&mut self.arena, idx);
            self.hand_hot = idx;
            self.hand_cold = idx;
            self.hand_test = idx;
            return;
        }
        match self.clock.prev_of(&self.arena, self.hand_hot) {
            Some(prev) => self.clock.insert_after(&mut self.arena, prev, idx),
            None => self.clock.push_back(&mut self.arena, idx),
        }
    }

    fn move_to_head(&mut self, idx: u32) {
        self.detach(idx);
        self.place_at_head(idx);
    }

    fn forget(&mut self, idx: u32) {
        self.detach(idx);
        self.arena.remove(idx);
    }

    /// A test period ended without a re-access: fewer cold pages are worth it.
    fn test_expired(&mut self) {
        self.cold_target = self.cold_target.saturating_sub(1).max(1);
    }

    /// A cold page was re-accessed in its test period: its reuse distance beat
    /// the hot pages', more cold pages are worth it.
    fn test_hit(&mut self) {
        self.cold_target = (self.cold_target + 1).min(self.capacity);
    }

    /// One step of `HAND_test`'s work at `idx` (shared by `HAND_hot`); returns
    /// whether `idx` left the clock (the hand then already points past it).
    fn end_test(&mut self, idx: u32) -> bool {
        let m = *self.arena.val(idx);
        match m.status {
            Status::Test => {
                self.test -= 1;
                self.test_expired();
                self.forget(idx);
                true
            }
            Status::Cold if m.in_test => {
                self.arena.val_mut(idx).in_test = false;
                if m.referenced {
                    self.test_hit();
                } else {
                    self.test_expired();
                }
                false
            }
            _ => false,
        }
    }

    fn run_hand_hot(&mut self) {
        while self.hot > self.capacity - self.cold_target {
            let idx = self.hand_hot;
            let m = *self.arena.val(idx);
            if m.status == Status::Hot {
                if m.referenced {
                    self.arena.val_mut(idx).referenced = false;
                } else {
                    self.hot -= 1;
                    self.cold_at_hot_hand();
                }
                self.step_hot(idx);
            } else if !self.end_test(idx) {
                self.step_hot(idx);
            }
        }
    }

    fn run_hand_test(&mut self) {
        while self.test > self.capacity {
            let idx = self.hand_test;
            if !self.end_test(idx) {
                self.hand_test = self.next(idx);
            }
        }
    }

    /// `HAND_cold`: frees one resident page.
    fn run_hand_cold(&mut self, evicted: &mut Vec<u64>) {
        loop {
            if self.cold == 0 {
                // Every resident page is hot (only after the target moved):
                // let HAND_hot make one cold.
                let target = self.cold_target;
                self.cold_target = self.capacity;
                self.run_hand_hot();
                self.cold_target = target;
            }
            // The hand passes the other pages untouched: jump.
            let idx = self.cold_next_cold;
            self.hand_cold = idx;
            self.cold_behind_hot = false;
            let m = *self.arena.val(idx);
            debug_assert_eq!(m.status, Status::Cold);
            self.cold_leaves(idx);
            if m.referenced {
                if m.in_test {
                    self.test_hit();
                    *self.arena.val_mut(idx) = Meta::new(Status::Hot, false);
                    self.hot += 1;
                    self.move_to_head(idx);
                    self.run_hand_hot();
                } else {
                    *self.arena.val_mut(idx) = Meta::new(Status::Hot, true);
                    self.move_to_head(idx);
                    self.cold_at_head(idx);
                }
                continue;
            }
            evicted.push(self.arena.key(idx));
            if m.in_test {
                *self.arena.val_mut(idx) = Meta::new(Status::Test, true);
                self.test += 1;
                self.step_cold(idx);
                self.run_hand_test();
            } else {
                self.arena.val_mut(idx).status = Status::Test;
                self.forget(idx);
            }
            return;
        }
    }
}

impl Replacement for ClockPro {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => {
                let m = self.arena.val_mut(idx);
                if m.status == Status::Test {
                    return false;
                }
                m.referenced = true;
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if self.arena.find(a.key).is_some() {
            // A re-access within the test period: cold pages' reuse distance lost.
            self.test_hit();
        }
        while self.hot + self.cold >= self.capacity {
            self.run_hand_cold(evicted);
        }
        // (Freeing a page may have ended this key's test period.)
        match self.arena.find(a.key) {
            Some(idx) => {
                debug_assert_eq!(self.arena.val(idx).status, Status::Test, "insert of a resident key");
                self.test -= 1;
                self.hot += 1;
                *self.arena.val_mut(idx) = Meta::new(Status::Hot, false);
                self.move_to_head(idx);
                self.run_hand_hot();
            }
            None => {
                let idx = self.arena.insert(a.key, Meta::new(Status::Hot, true));
                self.place_at_head(idx);
                self.cold_at_head(idx);
            }
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        match self.arena.val(idx).status {
            Status::Test => return false,
            Status::Hot => self.hot -= 1,
            Status::Cold => self.cold_leaves(idx),
        }
        self.arena.val_mut(idx).status = Status::Test;
        self.forget(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| self.arena.val(idx).status != Status::Test)
    }
    fn len(&self) -> usize {
        self.hot + self.cold
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.test
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<ClockPro, SpecError> {
    let cold = spec.ratio("cold")?;
    Ok(ClockPro::new(ctx.capacity, cold))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "clockpro",
    about: "CLOCK-Pro: hot/cold/test pages on one clock with three hands, adaptive cold target (Jiang et al.)",
    params: &[ParamInfo {
        name: "cold",
        default: "100%",
        about: "initial cold target m_c as a share of the capacity (adapts; kept within 1..capacity pages)",
    }],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::run_keys;
    use crate::policy::Mode;

    /// Counts agree with the clock's contents, the hands are on it, and the
    /// non-resident pages stay within the capacity.
    fn check(c: &ClockPro) {
        let (mut hot, mut cold, mut test) = (0, 0, 0);
        for idx in c.clock.nodes(&c.arena) {
            match c.arena.val(idx).status {
                Status::Hot => hot += 1,
                Status::Cold => cold += 1,
                Status::Test => test += 1,
            }
        }
        assert_eq!((hot, cold, test), (c.hot, c.cold, c.test));
        assert!(c.test <= c.capacity && c.hot + c.cold <= c.capacity);
        assert!((1..=c.capacity).contains(&c.cold_target));
        let on: Vec<u32> = c.clock.nodes(&c.arena).collect();
        for h in [c.hand_hot, c.hand_cold, c.hand_test] {
            assert!(on.contains(&h) || (on.is_empty() && h == NONE));
        }
        // The cold list is the clock's resident cold pages in clock order
        // (rotated), and the hands' next cold pages are what a walk finds.
        let colds: Vec<u32> = on.iter().copied().filter(|&i| c.arena.val(i).status == Status::Cold).collect();
        let listed: Vec<u32> = c.colds.nodes(&c.arena).collect();
        assert_eq!(listed.len(), colds.len());
        if let Some(&first) = listed.first() {
            let at = colds.iter().position(|&i| i == first).expect("listed page is cold");
            let rotated: Vec<u32> = colds[at..].iter().chain(&colds[..at]).copied().collect();
            assert_eq!(listed, rotated, "cold list out of clock order");
        }
        let pos = |idx: u32| on.iter().position(|&i| i == idx).expect("on the clock");
        let walk_to_cold = |from: u32| -> (u32, bool) {
            // (first cold page at or after `from`, whether HAND_hot is passed after `from` up to it)
            let mut i = pos(from);
            let mut passed_hot = false;
            for step in 0..on.len() {
                let idx = on[i];
                if step > 0 && idx == c.hand_hot {
                    passed_hot = true;
                }
                if c.arena.val(idx).status == Status::Cold {
                    return (idx, passed_hot);
                }
                i = (i + 1) % on.len();
            }
            (NONE, false)
        };
        if !on.is_empty() {
            assert_eq!(walk_to_cold(c.hand_hot).0, c.hot_next_cold, "HAND_hot's next cold page");
            let (next, behind) = walk_to_cold(c.hand_cold);
            assert_eq!(next, c.cold_next_cold, "HAND_cold's next cold page");
            if next != NONE && next != c.hand_cold {
                assert_eq!(behind, c.cold_behind_hot, "HAND_hot between HAND_cold and its next cold page");
            }
        }
    }

    #[test]
    fn by_hand() {
        let mut c = ClockPro::new(3, 1.0);
        // 1 2 3 fill as cold pages in test; 1 is hit.
        assert_eq!(run_keys(&mut c, &[1, 2, 3, 1]), vec![false, false, false, true]);
        assert_eq!(c.counts(), (0, 3, 0, 3));
        // 4: HAND_cold at 1 (referenced, in test) -> hot, to the head; then
        // HAND_hot (hot 1 > 3 - 3) demotes it again (unreferenced) and ends the
        // test periods it passes; HAND_cold goes on and evicts 2 (in test ->
        // stays as a non-resident page).
        assert_eq!(run_keys(&mut c, &[4]), vec![false]);
        assert!(c.contains(1) && !c.contains(2) && c.contains(3) && c.contains(4));
        assert_eq!(c.ghosts() + c.len(), c.clock.len());
        check(&c);
    }

    #[test]
    fn test_period_hit_comes_back_hot_and_grows_the_cold_target() {
        let mut c = ClockPro::new(4, 0.25);
        run_keys(&mut c, &[1, 2, 3, 4, 5]); // 1 leaves, stays non-resident in test
        assert_eq!(c.counts(), (0, 4, 1, 1));
        run_keys(&mut c, &[1]); // back within its test period
        let (hot, _, _, target) = c.counts();
        assert_eq!((hot, target), (1, 2));
        assert!(c.contains(1));
        check(&c);
    }

    /// The paper adapts `m_c` on resident cold pages too: a page found
    /// referenced in its test period grows it (it used to grow only for a
    /// non-resident page's return), and a test period ended on a referenced
    /// page does not shrink it.
    #[test]
    fn a_resident_cold_page_reaccessed_in_its_test_period_grows_the_cold_target() {
        let mut c = ClockPro::new(4, 0.25);
        run_keys(&mut c, &[1, 2, 3, 4, 1]); // 1..4 cold in test; 1 referenced
        assert_eq!(c.counts(), (0, 4, 0, 1));
        // 5: HAND_cold finds 1 referenced in its test period: m_c 1 -> 2, 1
        // turns hot; then it evicts 2 (in test: stays non-resident).
        run_keys(&mut c, &[5]);
        assert_eq!(c.counts(), (1, 3, 1, 2));
        check(&c);
        // HAND_hot ending a referenced page's test period grows m_c too; an
        // unreferenced one shrinks it.
        let mut c = ClockPro::new(3, 1.0);
        run_keys(&mut c, &[1, 2, 3]); // all cold, in test
        c.cold_target = 2;
        let one = c.arena.find(1).unwrap();
        c.arena.val_mut(one).referenced = true;
        assert!(!c.end_test(one));
        assert_eq!(c.counts().3, 3, "referenced: grows");
        assert!(!c.end_test(c.arena.find(2).unwrap()));
        assert_eq!(c.counts().3, 2, "unreferenced: shrinks");
        check(&c);
    }

    #[test]
    fn beats_lru_on_a_loop_slightly_larger_than_the_cache() {
        // LRU misses every access of a loop over 120 keys in 100 pages.
        let keys: Vec<u64> = (0..20_000).map(|i| i % 120).collect();
        let mut c = ClockPro::new(100, 1.0);
        let hits = run_keys(&mut c, &keys).iter().filter(|&&h| h).count();
        assert!(hits > 5_000, "{hits} {:?}", c.counts());
        let mut lru = crate::policy::classic::lru::Lru::new(100);
        assert_eq!(run_keys(&mut lru, &keys).iter().filter(|&&h| h).count(), 0);
        check(&c);
    }

    #[test]
    fn invariants_under_churn() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for (cap, cold) in [(1, 0.5), (2, 0.5), (5, 0.5), (17, 0.5), (17, 0.01), (40, 0.01), (40, 1.0)] {
            let mut c = ClockPro::new(cap, cold);
            for i in 0..5000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = if i % 3 == 0 { i % 23 } else { (x >> 20) % (3 * cap as u64 + 4) };
                run_keys(&mut c, &[k]);
                if i % 97 == 0 {
                    c.remove(k, &mut Vec::new());
                }
                check(&c);
            }
        }
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 10, mode: Mode::WriteBack, page_bytes: 4096 };
        for bad in ["clockpro(cold=2)", "clockpro(cold=-1%)", "clockpro(variant=libcachesim)"] {
            assert!(build_spec(bad, &ctx).is_err(), "{bad}");
        }
        assert!(build_spec("clockpro(cold=0)", &ctx).is_ok());
    }
}
