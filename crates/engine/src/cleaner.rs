//! The background cleaner of a write-back cache (`serve --max-dirty
//! --dirty-age --clean-rate`; beyond paper 000, whose only write-back is the
//! daily procedure's): operators' bounds on dirty data.
//!
//! **Which slot, when**: the simulator's own rule,
//! [`ssdcache::policy::tiered::cleaner::Cleaner`], in wall-clock nanoseconds
//! since the engine opened. It sits in the map as its [`DirtyWatch`], so it
//! hears of every clean → dirty change and every write-back (procedure,
//! flush, degraded settling, shutdown, itself) under the map's mutex, in step
//! with the dirty bitmap. A slot is due when more than `max_dirty` of the
//! slots are dirty (oldest dirtied first) or when it has been dirty for
//! `dirty_age`; at most `rate` bytes per second are written back (a token
//! bucket of one second, charged whole segments).
//!
//! **How** ([`run`], one thread): before each segment it yields to
//! foreground I/O: it waits until no request is in flight and none has
//! arrived for [`GAP`] (idle: it cleans at once, back to back), but at most
//! as long as its [`Pace`] says ([`Pace::max_yield`]), so a busy server still
//! cleans. The default pace, `adaptive`, is a proportional controller: the
//! further the dirty slots are over their target, and the nearer the dirty
//! share is to all of the cache, the shorter it yields, down to not at all,
//! so the cache never fills with dirty data (a miss would then wait for a
//! write-back); it never yields longer than the old fixed pace, `gap`
//! ([`MAX_YIELD`] per segment). Then [`CacheMap::clean_one`] writes the slot
//! back under the segment's lock (not the admin mutex: misses fill
//! meanwhile), with the procedure's code. After [`BATCH`] segments, or
//! when nothing more is due, it syncs the backing device. With nothing due
//! it looks again every [`POLL`], or at once when a write takes the dirty
//! share over `max_dirty` ([`Nudge`]). A failed write-back (the slot stays dirty)
//! makes it back off, 1 s doubling to 30 s; a degraded cache is left to the
//! engine's settling.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ssdcache::policy::tiered::cleaner::{Cleaner, CleanerConfig, CleanerStats};
use ssdcache::Nanos;

use crate::datapath::{CacheMap, CleanOne, DirtyWatch};
use crate::device::BlockDevice;
use ssdcache_block::sync::lock;

/// A request-free gap the cleaner waits for before each segment.
pub const GAP: Duration = Duration::from_millis(2);
/// The longest it waits for that gap.
pub const MAX_YIELD: Duration = Duration::from_millis(50);
/// Segments written back between syncs of the backing device.
pub const BATCH: u32 = 16;
/// How often it looks for due slots when none is.
pub const POLL: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How long the cleaner may wait for a gap in the requests before its next
/// segment (`serve --clean-pace`, `ssdcache set clean-pace=…`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pace {
    /// Proportional to how far the dirty slots are over their target, and
    /// faster as the dirty share nears the whole cache (see the module doc).
    #[default]
    Adaptive,
    /// The fixed pace of the first cleaner: a gap, or [`MAX_YIELD`] at most.
    Gap,
    /// No yielding: back-to-back write-backs while requests run (what a
    /// flush does; for comparison, or to drain as fast as the disk allows).
    Full,
}

/// In `adaptive`, the time in which the cleaner aims to clear the dirty
/// slots over the target while requests run, at a dirty share of
/// `max-dirty`; it shrinks to nothing as the share nears 100 %.
pub const HORIZON: Duration = Duration::from_secs(30);

impl Pace {
    pub const NAMES: &'static str = "adaptive, gap, full";

    pub fn parse(s: &str) -> Result<Pace, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "adaptive" => Ok(Pace::Adaptive),
            "gap" => Ok(Pace::Gap),
            "full" => Ok(Pace::Full),
            _ => Err(format!("a pace: {}", Pace::NAMES)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pace::Adaptive => "adaptive",
            Pace::Gap => "gap",
            Pace::Full => "full",
        }
    }

    /// The longest the cleaner waits for a gap before its next segment, with
    /// `dirty` of `slots` slots dirty under `cfg`. In `adaptive`: with `u`
    /// the urgency, how far the dirty share is from `max-dirty` to 100 %
    /// (0 to 1), and `excess` the dirty slots over the target (`clean-to`,
    /// else `max-dirty`), `HORIZON × (1 − u)² / excess`, at most
    /// [`MAX_YIELD`]. Cleaning for age alone keeps the `gap` pace.
    pub fn max_yield(self, dirty: usize, slots: usize, cfg: &CleanerConfig) -> Duration {
        match self {
            Pace::Full => Duration::ZERO,
            Pace::Gap => MAX_YIELD,
            Pace::Adaptive => {
                let Some(max) = cfg.max_dirty.filter(|_| slots > 0) else { return MAX_YIELD };
                let share = dirty as f64 / slots as f64;
                let target = cfg.clean_to.unwrap_or(max) * slots as f64;
                let excess = (dirty as f64 - target).max(1.0);
                let urgency = if max >= 1.0 { 0.0 } else { ((share - max) / (1.0 - max)).clamp(0.0, 1.0) };
                let horizon = HORIZON.as_secs_f64() * (1.0 - urgency).powi(2);
                Duration::from_secs_f64(horizon / excess).min(MAX_YIELD)
            }
        }
    }
}

/// Wakes the idle cleaner thread early: a write took the dirty share over
/// `max_dirty` (or the engine stops).
#[derive(Debug, Default)]
pub struct Nudge {
    nudged: Mutex<bool>,
    cv: Condvar,
}

impl Nudge {
    pub fn nudge(&self) {
        *lock(&self.nudged) = true;
        self.cv.notify_all();
    }

    /// Waits until nudged or `d` passed; clears the nudge.
    fn wait(&self, d: Duration) {
        let g = lock(&self.nudged);
        let (mut g, _) = self.cv.wait_timeout_while(g, d, |n| !*n).unwrap_or_else(|e| e.into_inner());
        *g = false;
    }
}

/// The [`Cleaner`] as the map's watch, on the engine's wall clock.
pub struct CleanerWatch {
    pub cleaner: Cleaner,
    clock: Instant,
    slots: usize,
    nudge: Arc<Nudge>,
}

impl CleanerWatch {
    /// For a cache of `slots` slots; `nudge` wakes the thread.
    pub fn new(cfg: CleanerConfig, clock: Instant, slots: usize, nudge: Arc<Nudge>) -> Self {
        CleanerWatch { cleaner: Cleaner::new(cfg), clock, slots, nudge }
    }

    fn now(&self) -> Nanos {
        self.clock.elapsed().as_nanos() as Nanos
    }
}

impl DirtyWatch for CleanerWatch {
    fn dirtied(&mut self, slot: u32) {
        let now = self.now();
        self.cleaner.dirtied(slot, now);
        if self.cleaner.config().max_dirty.is_some_and(|m| self.cleaner.dirty() as f64 > m * self.slots as f64) {
            self.nudge.nudge();
        }
    }
    fn cleaned(&mut self, slot: u32) {
        self.cleaner.cleaned(slot);
    }
}

/// What the cleaner thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// Nothing is due.
    Idle,
    /// Something is due; waiting for a gap in the requests.
    Yielding,
    /// Writing a segment back.
    Cleaning,
    /// Something is due, but the rate says wait.
    RateLimited,
    /// A write-back failed; waiting to retry.
    BackingOff,
    /// The thread has ended (shutdown).
    Stopped,
}

impl Activity {
    const ALL: [Activity; 6] = [
        Activity::Idle,
        Activity::Yielding,
        Activity::Cleaning,
        Activity::RateLimited,
        Activity::BackingOff,
        Activity::Stopped,
    ];
}

/// The thread's state, readable at any time.
#[derive(Debug, Default)]
pub struct CleanerState {
    activity: AtomicU8,
}

impl CleanerState {
    fn set(&self, a: Activity) {
        self.activity.store(a as u8, Relaxed);
    }
    pub fn activity(&self) -> Activity {
        Activity::ALL[self.activity.load(Relaxed) as usize]
    }
}

/// The cleaner's part of `ssdcache status` (and the metrics).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CleanerStatus {
    /// The bounds: share of slots, seconds, bytes per second (`None`: none).
    pub max_dirty: Option<f64>,
    pub dirty_age: Option<f64>,
    pub clean_rate: Option<u64>,
    /// The low watermark it cleans down to once over `max_dirty`.
    pub clean_to: Option<f64>,
    /// How it yields to requests.
    pub pace: Pace,
    /// What it is doing now; `running` is true while it writes back or waits
    /// to (yielding, rate-limited, backing off).
    pub activity: Activity,
    pub running: bool,
    /// Slots it wrote back, by reason, and their bytes (whole segments).
    pub cleaned_too_many: u64,
    pub cleaned_too_old: u64,
    pub cleaned_bytes: u64,
    /// Seconds the oldest dirty slot has been dirty (`None`: nothing dirty).
    pub oldest_dirty_age: Option<f64>,
}

/// The status of `map`'s cleaner (`None` without one).
pub fn status<S: BlockDevice, H: BlockDevice, M: BlockDevice>(
    map: &CacheMap<S, H, M>,
    state: &CleanerState,
    pace: Pace,
) -> Option<CleanerStatus> {
    let (cfg, stats, oldest, now): (CleanerConfig, CleanerStats, Option<Nanos>, Nanos) =
        map.with_watch(|w: &mut CleanerWatch| {
            (*w.cleaner.config(), w.cleaner.stats(), w.cleaner.oldest_since(), w.now())
        })?;
    let activity = state.activity();
    Some(CleanerStatus {
        max_dirty: cfg.max_dirty,
        dirty_age: cfg.dirty_age.map(|n| n as f64 / 1e9),
        clean_rate: cfg.rate,
        clean_to: cfg.clean_to,
        pace,
        activity,
        running: !matches!(activity, Activity::Idle | Activity::Stopped),
        cleaned_too_many: stats.cleaned_too_many,
        cleaned_too_old: stats.cleaned_too_old,
        cleaned_bytes: stats.bytes,
        oldest_dirty_age: oldest.map(|t| now.saturating_sub(t) as f64 / 1e9),
    })
}

/// What the thread needs from the engine besides the map.
pub struct Hooks<'a> {
    /// Whether the foreground has been quiet for `gap`: no request in
    /// flight and none arrived since.
    pub quiet_for: &'a (dyn Fn(Duration) -> bool + Sync),
    /// The engine's stop flag and the condition variable that announces it.
    pub stop: &'a Mutex<bool>,
    pub wake: &'a Condvar,
    /// Wakes the idle thread (see [`CleanerWatch`]); the engine nudges it at stop too.
    pub nudge: &'a Nudge,
    /// The pace now (a setting that may change at run time).
    pub pace: &'a (dyn Fn() -> Pace + Sync),
}

impl Hooks<'_> {
    /// Waits up to `d` unless stopped; returns whether stopped.
    fn sleep(&self, d: Duration) -> bool {
        let stop = lock(self.stop);
        if *stop {
            return true;
        }
        *self.wake.wait_timeout(stop, d).unwrap_or_else(|e| e.into_inner()).0
    }
}

/// The cleaner thread's loop (see the module doc); returns at stop.
pub fn run<S: BlockDevice, H: BlockDevice, M: BlockDevice>(
    map: &CacheMap<S, H, M>,
    state: &CleanerState,
    hooks: &Hooks,
) {
    let seg = map.segment_size();
    let slots = map.with_meta(|m| m.map.len());
    let mut buf = vec![0u8; seg as usize];
    let mut unsynced = 0u32;
    let mut backoff = Duration::from_secs(1);
    let sync = |unsynced: &mut u32| {
        if *unsynced > 0 {
            if let Err(e) = map.sync_backing() {
                log::error!("cleaner: syncing the backing device failed: {e}");
            }
            *unsynced = 0;
        }
    };
    loop {
        let due = map.with_watch(|w: &mut CleanerWatch| {
            let now = w.now();
            let max_yield = (hooks.pace)().max_yield(w.cleaner.dirty(), slots, w.cleaner.config());
            (w.cleaner.due(now, slots).is_some(), w.cleaner.oldest_since().map(|t| (t, now)), max_yield)
        });
        let Some((due, oldest, max_yield)) = due else { break };
        if !due || map.is_degraded() {
            sync(&mut unsynced);
            state.set(Activity::Idle);
            // Until the oldest dirty slot comes of age, at most POLL.
            let age = map.with_watch(|w: &mut CleanerWatch| w.cleaner.config().dirty_age).flatten();
            let wait = match (age, oldest) {
                (Some(age), Some((t, now))) => Duration::from_nanos((t + age).saturating_sub(now)).min(POLL),
                _ => POLL,
            };
            hooks.nudge.wait(wait.max(Duration::from_millis(1)));
            if *lock(hooks.stop) {
                break;
            }
            continue;
        }
        // Yield to foreground I/O: a gap, or the pace's longest wait.
        state.set(Activity::Yielding);
        let t0 = Instant::now();
        while !(hooks.quiet_for)(GAP) && t0.elapsed() < max_yield {
            if hooks.sleep(Duration::from_millis(1)) {
                sync(&mut unsynced);
                state.set(Activity::Stopped);
                return;
            }
        }
        state.set(Activity::Cleaning);
        let picked = map.clean_one(
            |w: &mut CleanerWatch| {
                let now = w.now();
                w.cleaner.next(now, slots, seg).map(|(slot, _)| slot)
            },
            &mut buf,
        );
        match picked {
            Ok(CleanOne::Cleaned { .. }) => {
                backoff = Duration::from_secs(1);
                unsynced += 1;
                if unsynced >= BATCH {
                    sync(&mut unsynced);
                }
            }
            Ok(CleanOne::Nothing) => {
                // Due (we looked), so the rate says wait: a segment's worth.
                sync(&mut unsynced);
                state.set(Activity::RateLimited);
                let rate = map.with_watch(|w: &mut CleanerWatch| w.cleaner.config().rate).flatten();
                let wait = rate.map_or(Duration::from_millis(1), |r| Duration::from_secs_f64(seg as f64 / r as f64));
                if hooks.sleep(wait.clamp(Duration::from_millis(1), Duration::from_secs(1))) {
                    break;
                }
            }
            Ok(CleanOne::Moved) => {}
            Ok(CleanOne::Stopped) => {
                sync(&mut unsynced);
                state.set(Activity::Idle);
                if hooks.sleep(POLL) {
                    break;
                }
            }
            Err(e) => {
                log::error!("cleaner: write-back failed (the slot stays dirty), retrying in {backoff:?}: {e}");
                sync(&mut unsynced);
                state.set(Activity::BackingOff);
                if hooks.sleep(backoff) {
                    break;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
        if *lock(hooks.stop) {
            break;
        }
    }
    sync(&mut unsynced);
    state.set(Activity::Stopped);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_adaptive_pace_yields_less_the_more_is_dirty_and_not_at_all_when_full() {
        let cfg = CleanerConfig { max_dirty: Some(0.2), ..Default::default() };
        let y = |dirty| Pace::Adaptive.max_yield(dirty, 1000, &cfg);
        // Just over the bound: as the first cleaner, a gap or 50 ms.
        assert_eq!(y(210), MAX_YIELD);
        // 600 of 1000 dirty: urgency 0.5, 400 over: 30 s x 0.25 / 400.
        assert!(y(600).abs_diff(Duration::from_secs_f64(30.0 * 0.25 / 400.0)) < MS / 1000);
        assert_eq!(y(1000), Duration::ZERO, "all dirty: no yielding at all");
        let mut last = MAX_YIELD;
        for dirty in 0..=1000 {
            let w = y(dirty);
            assert!(w <= last, "{dirty} dirty: {w:?} after {last:?}");
            last = w;
        }
        // A low watermark counts the excess from it.
        let to = CleanerConfig { clean_to: Some(0.1), ..cfg };
        assert!(Pace::Adaptive.max_yield(600, 1000, &to) < y(600));
        // Age alone, or nothing to go by: the gap pace.
        let age = CleanerConfig { dirty_age: Some(1_000_000_000), ..Default::default() };
        assert_eq!(Pace::Adaptive.max_yield(900, 1000, &age), MAX_YIELD);
        assert_eq!(Pace::Adaptive.max_yield(0, 0, &cfg), MAX_YIELD);
        assert_eq!(Pace::Gap.max_yield(1000, 1000, &cfg), MAX_YIELD);
        assert_eq!(Pace::Full.max_yield(201, 1000, &cfg), Duration::ZERO);
    }

    #[test]
    fn paces_parse_by_name() {
        for p in [Pace::Adaptive, Pace::Gap, Pace::Full] {
            assert_eq!(Pace::parse(p.name()), Ok(p));
            assert!(Pace::NAMES.contains(p.name()));
        }
        assert_eq!(Pace::parse(" FULL "), Ok(Pace::Full));
        assert!(Pace::parse("fast").unwrap_err().contains("adaptive, gap, full"));
    }
}
