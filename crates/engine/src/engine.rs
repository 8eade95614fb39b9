//! The cache engine: paper 000's persistent SSD cache served as an NBD
//! [`Backend`], its decisions taken by the simulator's own policies
//! ([`crate::decide`]).
//!
//! - **Data path**: a [`CacheMap`] (slot map, dirty bitmap, segment locks);
//!   requests of all connections run in parallel except on the same
//!   segments. Each request first goes through the [`Decider`] (one short
//!   lock): PWC counts the reference (not while a procedure runs: Fig. 5
//!   lines 3 and 27); a write-through/write-around/read-only replacement
//!   policy may fill a slot now (a real-time fill, the cost paper 000 §4
//!   blames LRU's for), done before the request's own I/O, whose pieces in
//!   the filled segments are then counted as misses.
//! - **Flush / FUA** = [`CacheMap::flush`], which syncs both devices, so a
//!   flush on one connection covers every connection: `multi_conn` is true.
//! - **Trim** ([`TrimMode::Pass`], the default): passed to the backing store
//!   (a hole punched in a file, `BLKDISCARD` on a block device) and the
//!   cached segments it covers wholly dropped, dirty ones too
//!   ([`CacheMap::discard`], whose doc says what a crash may find);
//!   [`TrimMode::Ignore`]: ignored, as the protocol allows (never written as
//!   zeroes: that would turn `mkfs`'s whole-device discard into a write of
//!   the whole backing disk). Either way a PWC reference (as in the
//!   simulator). **Write-zeroes** go the same way: a hole where allowed (not
//!   with `NO_HOLE`, nor with trims ignored), else a zeroed range, else
//!   zeroes written to the backing store; cached segments covered wholly are
//!   dropped, a partly covered one written as zeroes through the map.
//!   **Fast zeroes** are the same without the written zeroes (ENOTSUP).
//! - **Maintenance** (write-back): [`CachedBackend::maintain`] runs PWC's
//!   procedure and hands its plan to [`CacheMap::caching_and_eviction`],
//!   which runs while requests go on (writes go to both devices meanwhile).
//!   It runs every `period`, optionally only once the device has been idle
//!   for `idle` (paper 000 §4.1: once a day, in idle time), and on demand.
//! - **Cleaner** (write-back, `EngineConfig::cleaner`): a background thread
//!   bounding dirty data ([`crate::cleaner`]), yielding to the requests in
//!   flight counted here.
//! - **Shutdown** ([`Backend::shutdown`]): stops the period and cleaner threads, hands PWC's
//!   frequencies to the map, then [`CacheMap::shutdown`]: every dirty segment
//!   written back, metadata saved with the clean bit.
//!
//! **Restart.** The decider is seeded from the loaded metadata: PWC gets the
//! address map, the evict clock and the frequency of every touched segment
//! (the table persisted is PWC's own, decayed at each procedure: the engine
//! hands it to the map before each procedure and at shutdown); a replacement
//! policy gets the cached segments (after a clean stop; a write-through cache
//! restarts empty after a crash, see [`crate::map`]).

use std::io;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ssdcache::trace::Op;

use ssdcache::policy::tiered::cleaner::CleanerConfig;

use crate::cleaner::{self, CleanerState, CleanerStatus, CleanerWatch, Pace};
use crate::counters::procedures::{Procedure, ProcedureCounters, ProcedureSnapshot};
use crate::counters::requests::{Op as RequestOp, Outcome, RequestCounters, RequestSnapshot};
use crate::datapath::{CacheMap, Discard, FlushProgress, MapStatus, Tally};
use crate::decide::{Decider, PWC};
use crate::device::BlockDevice;
use crate::mode::CacheMode;
use crate::record::{RecordConfig, RecordStatus};
use crate::taps::Taps;
use crate::whatif::{WhatIfConfig, WhatIfReport};
use ssdcache_block::sync::lock;
use ssdcache_block::Backend;

/// What the engine is asked to run with besides what the cache file says.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The policy: a simulator policy spec that decides on each access
    /// (`lru`, `arc`, `s3fifo`, ...) in any mode but passthrough, or, for a
    /// write-back cache, `pwc` (paper 000's procedure). `None`: the mode's
    /// default, `pwc` for write-back and `lru` for the others.
    pub policy: Option<String>,
    /// Cache-device errors before the cache goes degraded.
    pub error_limit: u64,
    /// The background cleaner's bounds (write-back only; the default: none,
    /// no cleaner).
    pub cleaner: CleanerConfig,
    /// Replacement modes: a sequential stream longer than this many bytes
    /// bypasses the cache (bcache's `sequential_cutoff`; the simulator's
    /// `seqcut` admitter, streams followed segment by segment).
    pub seq_cutoff: Option<u64>,
    /// Replacement modes: a segment is filled only at its N-th miss (Open
    /// CAS's NHIT; the simulator's `nhit` admitter, applied from the first
    /// miss: `trigger=0%`).
    pub promote_after: Option<u32>,
    /// How the cleaner yields to requests (`None`: [`Pace::default`]).
    pub clean_pace: Option<Pace>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            policy: None,
            error_limit: crate::datapath::DEFAULT_ERROR_LIMIT,
            seq_cutoff: None,
            promote_after: None,
            cleaner: CleanerConfig::default(),
            clean_pace: None,
        }
    }
}

impl EngineConfig {
    /// The policy spec the decider builds: `policy` behind the admission
    /// layers the options ask for, the same spec `ssdcache sim --policy`
    /// takes, so `sim` predicts what `serve` does.
    pub fn policy_spec(&self, mode: CacheMode) -> Result<String, String> {
        let mut spec = match (&self.policy, mode) {
            (Some(p), _) => p.clone(),
            (None, CacheMode::WriteBack) => PWC.to_string(),
            (None, _) => "lru".to_string(),
        };
        let replacement = match mode {
            CacheMode::WriteBack => spec != PWC,
            CacheMode::Passthrough => false,
            _ => true,
        };
        if !replacement && (self.seq_cutoff.is_some() || self.promote_after.is_some()) {
            return Err(format!(
                "--seq-cutoff and --promote-after apply to caches that fill on misses (a replacement policy), \
                 not to a {} cache",
                if mode == CacheMode::WriteBack { "write-back PWC" } else { mode.name() }
            ));
        }
        if let Some(n) = self.promote_after {
            spec = format!("admit(by=nhit(n={n},trigger=0%),rule={spec})");
        }
        if let Some(bytes) = self.seq_cutoff {
            spec = format!("admit(by=seqcut(cutoff={bytes}),rule={spec})");
        }
        Ok(spec)
    }
}

/// Whether `config` could run a `mode` cache of `geometry` (offline checks:
/// `serve` before its start procedure, `ssdcache set` with no server).
pub fn check_config_for(mode: CacheMode, config: &EngineConfig, geometry: crate::meta::Geometry) -> Result<(), String> {
    decider_for(mode, config, &crate::meta::Meta::empty(geometry)).map(drop)
}

/// The decider `config` asks for in `mode`, seeded from `meta`; an error if
/// the policy or the cleaner's bounds do not fit the mode.
fn decider_for(mode: CacheMode, config: &EngineConfig, meta: &crate::meta::Meta) -> Result<Decider, String> {
    let decider = Decider::new(mode, &config.policy_spec(mode)?, meta)?;
    config.cleaner.check().map_err(|e| e.replace("clean_to", "clean-to").replace("max_dirty", "max-dirty"))?;
    if config.cleaner.is_active() && mode != CacheMode::WriteBack {
        return Err(format!(
            "a {} cache has no dirty data: the cleaner's bounds apply to write-back caches only",
            mode.name()
        ));
    }
    Ok(decider)
}

/// What one maintenance run did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MaintainReport {
    /// `(slot, segment)` newly cached, in evict-clock order.
    pub plan: Vec<(u32, u64)>,
    /// Slots holding a segment afterwards.
    pub cached: usize,
    /// Seconds it took.
    pub seconds: f64,
}

/// Everything `ssdcache status` shows of a running engine.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineStatus {
    pub mode: CacheMode,
    pub policy: String,
    pub segment_size: u64,
    pub ssd_segments: u64,
    pub hdd_segments: u64,
    #[serde(flatten)]
    pub map: MapStatus,
    /// Unix seconds of the last completed procedure of this run.
    pub last_maintenance: Option<f64>,
    /// What the last procedure did.
    pub last_report: Option<MaintainReport>,
    /// Unix seconds when the next scheduled procedure becomes due.
    pub next_maintenance: Option<f64>,
    /// The procedure also waits for this much idle time (seconds).
    pub idle: Option<f64>,
    /// Seconds since the engine opened.
    pub uptime: f64,
    /// `NBD_CMD_CACHE` requests (a client's hint to bring a range in), and
    /// the segments they filled at once (replacement modes; PWC counts them
    /// as references for its next procedure instead).
    pub cache_hints: u64,
    pub cache_hint_fills: u64,
    /// Requests, bytes and latency per operation and outcome since open.
    pub requests: Vec<RequestSnapshot>,
    /// Runs and durations of the long procedures since open.
    pub procedure_runs: Vec<ProcedureSnapshot>,
    /// The background cleaner (`None`: none runs); `metrics::exposition`
    /// exports it.
    pub cleaner: Option<CleanerStatus>,
    /// The recording running, or the last one (`None`: never recorded).
    pub recording: Option<RecordStatus>,
    /// The live what-if's curves (`None`: no shadow runs).
    pub whatif: Option<WhatIfReport>,
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

#[derive(Default)]
struct Schedule {
    last: Option<SystemTime>,
    last_report: Option<MaintainReport>,
    next: Option<SystemTime>,
    idle: Option<Duration>,
}

struct Shared<S, H, M> {
    map: CacheMap<S, H, M>,
    decider: Mutex<Decider>,
    /// Serialises procedures (PWC's plan is computed against the map as it
    /// is when the previous one finished).
    maintaining: Mutex<()>,
    schedule: Mutex<Schedule>,
    opened: Instant,
    /// Nanoseconds after `opened` of the last request's arrival.
    last_request: AtomicU64,
    /// `NBD_CMD_CACHE` requests, and the segments they filled.
    hints: AtomicU64,
    hint_fills: AtomicU64,
    /// Requests being served now (the cleaner yields to them).
    in_flight: AtomicU64,
    cleaner: CleanerState,
    nudge: Arc<cleaner::Nudge>,
    /// What the metrics and `status` show of requests and procedures.
    requests: RequestCounters,
    procedures: ProcedureCounters,
    stop: Mutex<bool>,
    wake: Condvar,
    /// The configuration in effect (changed by [`CachedBackend::reconfigure`]).
    config: Mutex<EngineConfig>,
    /// The recording, watching every request.
    taps: Taps,
    /// The cache and backing files (device, inode): never recorded over.
    protected: Mutex<Vec<(u64, u64)>>,
}

/// Counts a request in flight while alive.
struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// What the decider made of a request.
#[derive(Debug, Default)]
struct Referenced {
    /// Segments filled for it (the map counts their pieces as misses).
    filled: Vec<u64>,
    /// Segments it invalidated (read-only mode: write hits).
    dropped: Vec<u64>,
    /// Segments whose miss the policy declined to cache (admission).
    declined: u32,
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> Shared<S, H, M> {
    /// Feeds a request to the decider and performs the fills it asks for,
    /// and (read-only mode) the invalidations.
    fn reference(&self, op: Op, offset: u64, len: u64) -> io::Result<Referenced> {
        if len == 0 || offset.checked_add(len).is_none_or(|end| end > self.map.len()) {
            return Ok(Default::default()); // the map reports the range error
        }
        if self.map.is_degraded() {
            return Ok(Default::default()); // nothing new is cached
        }
        let seg = self.map.segment_size();
        let mut d = lock(&self.decider);
        let fills = d.reference(op, offset / seg, (offset + len - 1) / seg);
        let declined = d.take_declined();
        // Dropped from the map under the decider's lock, before any fill:
        // a later request's fill may reuse the slot or re-cache the segment.
        let dropped: Vec<u64> = d.take_dropped().into_iter().filter(|&h| self.map.invalidate(h)).collect();
        // Likewise what the policy evicted: in write-back, written back first
        // (the others are never dirty).
        for h in d.take_evicted() {
            if !self.map.fills_on_miss() {
                self.map.invalidate(h);
            } else if let Err(e) = self.map.evict(h) {
                // The segment stays cached (and dirty): the policy learns so,
                // and nothing is filled for this request.
                log::warn!("eviction of segment {h} failed, nothing filled for this request: {e}");
                d.resync(&self.map.meta());
                return Ok(Referenced { filled: Vec::new(), dropped, declined });
            }
        }
        // Fills happen under the decider's lock, so its slot bookkeeping and
        // the map's moves happen in the same order.
        for (i, &(slot, h)) in fills.iter().enumerate() {
            if let Err(e) = self.map.replace(slot, h) {
                // A fill is an optimisation: the request is served from the
                // backing store instead. The policy learns what is cached.
                log::warn!("fill of segment {h} into slot {slot} failed, served from the backing store: {e}");
                d.resync(&self.map.meta());
                return Ok(Referenced { filled: fills[..i].iter().map(|&(_, h)| h).collect(), dropped, declined });
            }
        }
        Ok(Referenced { filled: fills.into_iter().map(|(_, h)| h).collect(), dropped, declined })
    }

    fn maintain(&self) -> io::Result<MaintainReport> {
        let _one = lock(&self.maintaining);
        let t0 = Instant::now();
        let plan = {
            let mut d = lock(&self.decider);
            let current = self.map.with_meta(|m| m.map.clone());
            let Some(plan) = d.procedure(&current) else {
                // Only PWC has a procedure; the others fill on access.
                return Ok(MaintainReport {
                    plan: Vec::new(),
                    cached: self.map.status().cached as usize,
                    seconds: 0.0,
                });
            };
            // Persist PWC's (decayed) frequencies with the procedure's saves,
            // so a restart resumes its decisions.
            if let Some(f) = d.frequencies() {
                self.map.set_frequencies(f);
            }
            plan
        };
        self.taps.mark(format!("procedure {} segment(s) newly cached", plan.len()));
        let done = self.map.caching_and_eviction(&plan);
        let completed = done.is_ok() && !self.map.is_interrupted();
        self.procedures.record(Procedure::CachingAndEviction, completed, t0.elapsed());
        {
            let mut d = lock(&self.decider);
            if done.is_err() || self.map.is_interrupted() {
                // The map may be half done: make PWC agree with it again.
                d.restore(&self.map.meta());
            }
            d.procedure_done(); // Fig. 5 line 27: references count again
        }
        done?;
        let cached = self.map.status().cached as usize;
        let r = MaintainReport { plan, cached, seconds: t0.elapsed().as_secs_f64() };
        log::info!("caching and eviction: {} segment(s) newly cached, {cached} cached", r.plan.len());
        let mut s = lock(&self.schedule);
        s.last = Some(SystemTime::now());
        s.last_report = Some(r.clone());
        Ok(r)
    }

    /// Time since the last request arrived.
    fn idle_for(&self) -> Duration {
        self.opened.elapsed().saturating_sub(Duration::from_nanos(self.last_request.load(Relaxed)))
    }

    /// A request arrives (and counts as in flight until the guard drops).
    fn arrive(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Relaxed);
        self.last_request.store(self.opened.elapsed().as_nanos() as u64, Relaxed);
        InFlight(&self.in_flight)
    }

    /// No request in flight, and none arrived for `gap`.
    fn quiet_for(&self, gap: Duration) -> bool {
        self.in_flight.load(Relaxed) == 0 && self.idle_for() >= gap
    }
}

/// What a client's trim does (`serve --trim`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrimMode {
    /// Passed to the backing store; covered cached segments dropped.
    #[default]
    Pass,
    /// Ignored (a hint); write-zeroes punch no holes either.
    Ignore,
}

impl TrimMode {
    pub fn parse(s: &str) -> Result<TrimMode, String> {
        match s {
            "pass" => Ok(TrimMode::Pass),
            "ignore" => Ok(TrimMode::Ignore),
            _ => Err(format!("{s:?} is not a trim mode (pass or ignore)")),
        }
    }
}

/// Paper 000's SSD cache as an NBD backend (see the module doc).
pub struct CachedBackend<S, H, M> {
    shared: Arc<Shared<S, H, M>>,
    size: u64,
    /// Trims reach the backing store ([`TrimMode::Pass`]).
    trim_passes: std::sync::atomic::AtomicBool,
    /// A [`CacheMode`] (changed at run time by [`CachedBackend::switch_mode`]).
    mode: AtomicU16,
    ticker: Mutex<Option<JoinHandle<()>>>,
    cleaner: Mutex<Option<JoinHandle<()>>>,
}

impl<S, H, M> CachedBackend<S, H, M>
where
    S: BlockDevice + 'static,
    H: BlockDevice + 'static,
    M: BlockDevice + 'static,
{
    /// The engine over an opened map, its decider seeded from the map's
    /// metadata; with `config.cleaner` bounds, its cleaner thread started.
    /// Fails on a bad `config.policy`, or cleaner bounds outside write-back.
    pub fn new(map: CacheMap<S, H, M>, mode: CacheMode, config: &EngineConfig) -> Result<Self, String> {
        let decider = decider_for(mode, config, &map.meta())?;
        if mode == CacheMode::WriteBack && decider.fills_on_miss() {
            map.set_fills_on_miss(true).map_err(|e| e.to_string())?;
        }
        map.set_error_limit(config.error_limit);
        let shared = Arc::new(Shared {
            map,
            decider: Mutex::new(decider),
            maintaining: Mutex::new(()),
            schedule: Mutex::new(Schedule::default()),
            opened: Instant::now(),
            last_request: AtomicU64::new(0),
            hints: AtomicU64::new(0),
            hint_fills: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            cleaner: CleanerState::default(),
            nudge: Default::default(),
            requests: RequestCounters::default(),
            procedures: ProcedureCounters::default(),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            config: Mutex::new(config.clone()),
            taps: Taps::default(),
            protected: Mutex::new(Vec::new()),
        });
        let size = shared.map.len();
        let backend = CachedBackend {
            shared,
            size,
            trim_passes: std::sync::atomic::AtomicBool::new(true),
            mode: AtomicU16::new(mode as u16),
            ticker: Mutex::new(None),
            cleaner: Mutex::new(None),
        };
        if config.cleaner.is_active() {
            backend.start_cleaner(config.cleaner);
        }
        Ok(backend)
    }

    /// What trims do from now on.
    pub fn set_trim_mode(&self, mode: TrimMode) {
        self.trim_passes.store(mode == TrimMode::Pass, Relaxed);
    }

    /// What trims do.
    pub fn trim_mode(&self) -> TrimMode {
        if self.trim_passes.load(Relaxed) {
            TrimMode::Pass
        } else {
            TrimMode::Ignore
        }
    }

    /// Zeroes through [`CacheMap::discard`]: a PWC reference (a replacement
    /// policy fills nothing for them), holes where allowed.
    fn zeroes(&self, offset: u64, len: u64, no_hole: bool, fast: bool, fua: bool) -> io::Result<()> {
        self.counted(RequestOp::WriteZeroes, offset, len, || {
            self.shared.reference(Op::Trim, offset, len)?;
            let punch = !no_hole && self.trim_mode() == TrimMode::Pass;
            let how = if fast { Discard::FastZero { punch } } else { Discard::Zero { punch } };
            let tally = self.shared.map.discard(offset, len, how)?;
            if fua {
                self.shared.map.flush()?;
            }
            Ok((tally, 0))
        })
    }

    /// The configuration in effect.
    pub fn config(&self) -> EngineConfig {
        lock(&self.shared.config).clone()
    }

    /// Whether `config` could run this cache (the policy builds for its
    /// mode, the cleaner's bounds fit it), changing nothing.
    pub fn check_config(&self, config: &EngineConfig) -> Result<(), String> {
        decider_for(self.mode(), config, &self.shared.map.meta()).map(drop)
    }

    /// Runs with `config` from now on, without a restart (`ssdcache set`):
    /// a new policy is built from the segments cached now (none is evicted
    /// or dropped); a write-back cache switching between PWC and a
    /// replacement policy changes how its map is saved
    /// ([`CacheMap::set_fills_on_miss`]); the cleaner takes its new bounds
    /// (started if it was not running). Refused, with nothing changed, if
    /// `config` does not fit the cache.
    pub fn reconfigure(&self, config: &EngineConfig) -> Result<(), String> {
        let _no_procedure = lock(&self.shared.maintaining);
        self.reconfigure_now(config)
    }

    /// [`reconfigure`](Self::reconfigure), no procedure running.
    fn reconfigure_now(&self, config: &EngineConfig) -> Result<(), String> {
        let mode = self.mode();
        let mut d = lock(&self.shared.decider);
        let new = decider_for(mode, config, &self.shared.map.meta())?;
        if mode == CacheMode::WriteBack && new.fills_on_miss() != self.shared.map.fills_on_miss() {
            self.shared
                .map
                .set_fills_on_miss(new.fills_on_miss())
                .map_err(|e| format!("the metadata could not be saved, nothing changed: {e}"))?;
        }
        log::info!("policy {} -> {}", d.name(), new.name());
        self.shared.taps.mark(format!("policy {}", config.policy_spec(mode).unwrap_or_default()));
        *d = new;
        drop(d);
        self.take_config(config);
        Ok(())
    }

    /// The last step of a run-time change: the cleaner takes `config`'s
    /// bounds (started if it was not running, woken to look again if it
    /// was), and `config` is what `config()` reports from now on.
    fn take_config(&self, config: &EngineConfig) {
        if lock(&self.cleaner).is_some() {
            self.shared.map.with_watch(|w: &mut CleanerWatch| w.cleaner.set_config(config.cleaner));
            self.shared.nudge.nudge();
        } else if config.cleaner.is_active() {
            self.start_cleaner(config.cleaner);
        }
        *lock(&self.shared.config) = config.clone();
    }

    /// Switches the cache to mode `to`, running with `config` (whose policy
    /// must fit `to`), without a restart (`ssdcache set mode=…`):
    /// - leaving write-back, no new write becomes dirty from the start, every
    ///   dirty segment is written back (`status` shows it as a flush, and
    ///   `ssdcache flush`'s Ctrl-C stops it: the cache then stays write-back,
    ///   as does any failure), and only then the mode changes;
    /// - `persist` records the mode (the superblock) where a crash is safe
    ///   either side of it: before the map changes when entering write-back,
    ///   after it when leaving (the map saved then is empty, which a start
    ///   in either mode reads right). If it fails the map goes back.
    ///
    /// The new policy starts from the segments cached now (passthrough drops
    /// them: its requests bypass the map).
    pub fn switch_mode(
        &self,
        to: CacheMode,
        config: &EngineConfig,
        persist: &dyn Fn(CacheMode) -> io::Result<()>,
    ) -> Result<(), String> {
        let _no_procedure = lock(&self.shared.maintaining);
        let from = self.mode();
        if from == to {
            return self.reconfigure_now(config);
        }
        let map = &self.shared.map;
        decider_for(to, config, &map.meta())?;
        if map.is_degraded() {
            return Err("the cache is degraded: its mode cannot change until `serve --clear-degraded`".into());
        }
        if from == CacheMode::WriteBack {
            map.stop_dirtying();
            let drained = match map.write_back() {
                Ok(p) if p.interrupted => Err(format!(
                    "stopped after writing back {} of {} dirty segment(s); still {}",
                    p.written_back,
                    p.total,
                    from.name()
                )),
                Ok(_) => Ok(()),
                Err(e) => Err(format!("writing the dirty segments back failed, still {}: {e}", from.name())),
            };
            if let Err(e) = drained {
                map.resume_dirtying();
                return Err(e);
            }
        }
        let mut d = lock(&self.shared.decider);
        let undo = |e: String| {
            map.resume_dirtying();
            e
        };
        if to == CacheMode::WriteBack {
            persist(to).map_err(|e| undo(format!("the mode could not be kept, nothing changed: {e}")))?;
        }
        map.set_mode(to.write_mode(), to == CacheMode::Passthrough)
            .map_err(|e| undo(format!("the metadata could not be saved, still {}: {e}", from.name())))?;
        if to != CacheMode::WriteBack {
            if let Err(e) = persist(to) {
                let back = map.set_mode(from.write_mode(), false);
                return Err(undo(format!("the mode could not be kept, still {} ({back:?}): {e}", from.name())));
            }
        }
        let new = decider_for(to, config, &map.meta())?;
        if to == CacheMode::WriteBack && new.fills_on_miss() {
            map.set_fills_on_miss(true).map_err(|e| e.to_string())?;
        }
        log::info!("mode {} -> {}, policy {} -> {}", from.name(), to.name(), d.name(), new.name());
        self.shared.taps.mark(format!("mode {} policy {}", to.name(), config.policy_spec(to).unwrap_or_default()));
        *d = new;
        drop(d);
        self.mode.store(to as u16, Relaxed);
        self.take_config(config);
        Ok(())
    }

    /// Sets the map's watch and starts the cleaner thread.
    fn start_cleaner(&self, cfg: CleanerConfig) {
        let slots = self.shared.map.with_meta(|m| m.map.len());
        let nudge = self.shared.nudge.clone();
        self.shared.map.set_watch(Box::new(CleanerWatch::new(cfg, self.shared.opened, slots, nudge)));
        let shared = Arc::clone(&self.shared);
        let handle = std::thread::Builder::new()
            .name("ssdcache-cleaner".into())
            .spawn(move || {
                let quiet = |gap| shared.quiet_for(gap);
                let pace = || lock(&shared.config).clean_pace.unwrap_or_default();
                let hooks = cleaner::Hooks {
                    quiet_for: &quiet,
                    stop: &shared.stop,
                    wake: &shared.wake,
                    nudge: &shared.nudge,
                    pace: &pace,
                };
                cleaner::run(&shared.map, &shared.cleaner, &hooks);
            })
            .expect("spawn the cleaner thread");
        *lock(&self.cleaner) = Some(handle);
    }

    /// Runs [`maintain`](Self::maintain) every `period` from a background
    /// thread until [`Backend::shutdown`] (or drop). With `idle`, a due
    /// procedure waits until no request has arrived for that long.
    pub fn start_period(&self, period: Duration, idle: Option<Duration>) {
        let shared = Arc::clone(&self.shared);
        let due = move |from: Instant| from + period;
        lock(&shared.schedule).idle = idle;
        let handle = std::thread::Builder::new()
            .name("ssdcache-maintain".into())
            .spawn(move || {
                let mut next = due(Instant::now());
                // After a failure, retry sooner: 1 s, doubling up to the period.
                let mut backoff = Duration::from_secs(1);
                let mut stop = lock(&shared.stop);
                while !*stop {
                    if shared.map.needs_settling() {
                        drop(stop);
                        let left = shared.map.settle_degraded();
                        stop = lock(&shared.stop);
                        if !matches!(left, Ok(0)) {
                            log::error!("degraded cache: dirty segments not yet written back ({left:?}); retrying in {backoff:?}");
                            stop = shared.wake.wait_timeout(stop, backoff).unwrap_or_else(|e| e.into_inner()).0;
                            backoff = (backoff * 2).min(period);
                            continue;
                        }
                    }
                    let now = Instant::now();
                    lock(&shared.schedule).next = Some(SystemTime::now() + next.saturating_duration_since(now));
                    let wait = match idle {
                        _ if now < next => next - now,
                        // Degraded: nothing new is cached, so no procedure.
                        _ if shared.map.is_degraded() => period,
                        Some(idle) if shared.idle_for() < idle => idle - shared.idle_for(),
                        _ => {
                            drop(stop);
                            next = match shared.maintain() {
                                Ok(_) => {
                                    backoff = Duration::from_secs(1);
                                    due(Instant::now())
                                }
                                Err(e) => {
                                    log::error!("scheduled caching and eviction failed, retrying in {backoff:?}: {e}");
                                    let retry = Instant::now() + backoff;
                                    backoff = (backoff * 2).min(period);
                                    retry
                                }
                            };
                            stop = lock(&shared.stop);
                            continue;
                        }
                    };
                    // Wake at least every second to notice a cache gone degraded.
                    let wait = wait.min(Duration::from_secs(1));
                    stop = shared.wake.wait_timeout(stop, wait).unwrap_or_else(|e| e.into_inner()).0;
                }
            })
            .expect("spawn the maintenance thread");
        // A second call detaches the first thread; both stop together.
        let _first = lock(&self.ticker).replace(handle);
    }

    /// The caching-and-eviction procedure now (write-back; the other modes
    /// have none and report what is cached). Requests go on meanwhile.
    pub fn maintain(&self) -> io::Result<MaintainReport> {
        self.shared.maintain()
    }

    /// Makes a running flush ([`write_back`](Self::write_back)) stop at its
    /// next segment; returns whether one was running.
    pub fn stop_write_back(&self) -> bool {
        self.shared.map.stop_write_back()
    }

    /// Makes a running procedure stop at its next safe point (shutdown).
    pub fn interrupt_maintenance(&self) {
        self.shared.map.interrupt();
    }

    /// Writes every dirty segment back and syncs both devices now
    /// (`ssdcache flush`); returns how far it got.
    pub fn write_back(&self) -> io::Result<FlushProgress> {
        let t0 = Instant::now();
        let r = self.shared.map.write_back();
        self.shared.procedures.record(Procedure::WriteBack, r.is_ok(), t0.elapsed());
        r
    }

    /// The cache mode.
    pub fn mode(&self) -> CacheMode {
        CacheMode::from_u16(self.mode.load(Relaxed)).expect("only modes are stored")
    }

    /// What `ssdcache status` shows.
    pub fn status(&self) -> EngineStatus {
        let g = self.shared.map.with_meta(|m| m.geometry);
        let s = lock(&self.shared.schedule);
        EngineStatus {
            mode: self.mode(),
            policy: lock(&self.shared.decider).name().to_string(),
            segment_size: g.segment_size as u64,
            ssd_segments: g.ssd_segments as u64,
            hdd_segments: g.hdd_segments,
            map: self.shared.map.status(),
            // This run's, else the last one the metadata remembers.
            last_maintenance: s.last.map(unix).or_else(|| {
                let t = self.shared.map.with_meta(|m| m.last_procedure);
                (t > 0).then_some(t as f64)
            }),
            last_report: s.last_report.clone(),
            next_maintenance: s.next.filter(|_| self.mode() == CacheMode::WriteBack).map(unix),
            idle: s.idle.map(|d| d.as_secs_f64()),
            uptime: self.shared.opened.elapsed().as_secs_f64(),
            cache_hints: self.shared.hints.load(Relaxed),
            cache_hint_fills: self.shared.hint_fills.load(Relaxed),
            requests: self.shared.requests.snapshot(),
            procedure_runs: self.shared.procedures.snapshot(),
            cleaner: cleaner::status(
                &self.shared.map,
                &self.shared.cleaner,
                self.config().clean_pace.unwrap_or_default(),
            ),
            recording: self.shared.taps.status(),
            whatif: self.shared.taps.whatif(),
        }
    }

    /// The files a recording must never overwrite (the cache's and the
    /// backing store's, as device and inode).
    pub fn set_protected_files(&self, files: Vec<(u64, u64)>) {
        *lock(&self.shared.protected) = files;
    }

    /// Starts recording every request to `config.path` (`serve --record`,
    /// `ssdcache record CACHE start`), its header naming the cache's
    /// geometry, mode, policy spec and settings, and the `ssdcache sim`
    /// arguments that replay it.
    pub fn start_recording(&self, config: RecordConfig) -> Result<RecordStatus, String> {
        config.check(&lock(&self.shared.protected))?;
        self.shared.taps.start(config, self.record_header()?)
    }

    /// Stops the recording.
    pub fn stop_recording(&self) -> Result<RecordStatus, String> {
        self.shared.taps.stop()
    }

    /// Starts the live what-if (`serve --whatif`): `policies`, or by default
    /// the running policy (if it decides on each access) with lru and
    /// s3fifo, shadowed at ¼× to 4× this cache within `memory` bytes.
    /// Passthrough caches nothing, so has nothing to compare: refused.
    pub fn start_whatif(&self, policies: Option<Vec<String>>, memory: u64) -> Result<Vec<String>, String> {
        let mode = self.mode().sim_mode().ok_or("a passthrough cache caches nothing to compare with")?;
        let g = self.shared.map.with_meta(|m| m.geometry);
        let cfg = |policies: Vec<String>| WhatIfConfig {
            policies,
            memory,
            slots: g.ssd_segments as u64,
            segment_bytes: g.segment_size as u64,
            mode,
        };
        let policies = match policies {
            Some(p) => p,
            None => {
                // The running policy unless the shadow cannot run it (PWC's procedures).
                let running = self.config().policy_spec(self.mode())?;
                let mut p: Vec<String> = Vec::new();
                if cfg(vec![running.clone()]).check().is_ok() {
                    p.push(running);
                }
                for s in ["lru", "s3fifo"] {
                    if !p.iter().any(|q| q == s) {
                        p.push(s.to_string());
                    }
                }
                p
            }
        };
        self.shared.taps.start_whatif(cfg(policies.clone()))?;
        Ok(policies)
    }

    fn record_header(&self) -> Result<String, String> {
        let g = self.shared.map.with_meta(|m| m.geometry);
        let mode = self.mode();
        let config = self.config();
        let spec = config.policy_spec(mode)?;
        let c = config.cleaner;
        let seg = g.segment_size as u64;
        let cache = seg * g.ssd_segments as u64;
        let sim = format!("--format record --page {seg} --cache {cache} --mode {} --policy '{spec}'", mode.name());
        Ok(serde_json::json!({
            "segment_bytes": seg, "slots": g.ssd_segments, "logical_bytes": self.size,
            "mode": mode.name(), "policy": spec,
            "cleaner": {
                "max_dirty": c.max_dirty, "dirty_age_ns": c.dirty_age, "clean_rate": c.rate, "clean_to": c.clean_to,
                "pace": config.clean_pace.unwrap_or_default().name(),
            },
            "started_ns": crate::record::now_ns(), "sim": sim,
        })
        .to_string())
    }

    /// The address map (HDD segment per SSD slot), as the map holds it.
    pub fn mapping(&self) -> Vec<Option<u64>> {
        self.shared.map.with_meta(|m| m.map.clone())
    }

    /// PWC's frequency of HDD segment `seg` (0 in other modes).
    pub fn frequency(&self, seg: u64) -> u16 {
        lock(&self.shared.decider).frequency(seg)
    }

    fn stop_ticker(&self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        self.shared.nudge.nudge();
        for t in [&self.ticker, &self.cleaner] {
            if let Some(h) = lock(t).take() {
                let _ = h.join();
            }
        }
    }

    /// Runs one request and counts it for the metrics: its outcome is
    /// decided here, from what the decider declined and how the map served
    /// its pieces. `f` returns the map's tally and the segments whose miss
    /// the policy declined to cache.
    fn counted(
        &self,
        op: RequestOp,
        offset: u64,
        bytes: u64,
        f: impl FnOnce() -> io::Result<(Tally, u32)>,
    ) -> io::Result<()> {
        let t0 = Instant::now();
        let _busy = self.shared.arrive();
        // Decided as the request arrives: nothing new is cached from then on.
        let bypass = self.mode() == CacheMode::Passthrough || self.shared.map.is_degraded();
        let r = f();
        let outcome = match &r {
            Err(_) => Outcome::Error,
            Ok(_) if !op.moves_data() => Outcome::Ok,
            // The cache was not consulted, or the policy declined a miss
            // (--seq-cutoff, --promote-after): a bypass.
            Ok((_, declined)) if bypass || *declined > 0 => Outcome::Bypass,
            Ok((t, _)) if t.misses > 0 => Outcome::Miss,
            Ok(_) => Outcome::Hit,
        };
        self.shared.requests.record(op, outcome, bytes, t0.elapsed());
        self.shared.taps.request(op, offset, bytes, outcome);
        r.map(drop)
    }
}

impl<S, H, M> Drop for CachedBackend<S, H, M> {
    fn drop(&mut self) {
        // Without shutdown this is a crash as far as the metadata goes; the
        // next start recovers. Only the thread is stopped.
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        self.shared.nudge.nudge();
        for t in [&mut self.ticker, &mut self.cleaner] {
            if let Some(h) = t.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = h.join();
            }
        }
    }
}

impl<S, H, M> Backend for CachedBackend<S, H, M>
where
    S: BlockDevice + 'static,
    H: BlockDevice + 'static,
    M: BlockDevice + 'static,
{
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let len = buf.len() as u64;
        self.counted(RequestOp::Read, offset, len, || {
            let r = self.shared.reference(Op::Read, offset, len)?;
            Ok((self.shared.map.read_filled(buf, offset, &r.filled)?, r.declined))
        })
    }

    fn write_at(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        self.counted(RequestOp::Write, offset, data.len() as u64, || {
            let r = self.shared.reference(Op::Write, offset, data.len() as u64)?;
            let tally = self.shared.map.write_filled(data, offset, &r.filled, &r.dropped)?;
            if fua {
                self.shared.map.flush()?;
            }
            Ok((tally, r.declined))
        })
    }

    fn flush(&self) -> io::Result<()> {
        self.counted(RequestOp::Flush, 0, 0, || self.shared.map.flush().map(|()| Default::default()))
    }

    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        self.counted(RequestOp::Trim, offset, len, || {
            self.shared.reference(Op::Trim, offset, len)?;
            if self.trim_mode() == TrimMode::Pass {
                self.shared.map.discard(offset, len, Discard::Trim)?;
            }
            if fua {
                self.shared.map.flush()?;
            }
            Ok(Default::default())
        })
    }

    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        self.zeroes(offset, len, no_hole, false, fua)
    }

    fn fast_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        self.zeroes(offset, len, no_hole, true, fua)
    }

    fn multi_conn(&self) -> bool {
        true // flush syncs both devices, covering every connection's writes
    }

    fn block_status(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<ssdcache_block::Extent>> {
        let t0 = Instant::now();
        let r = self.shared.map.extents(offset, len, max);
        let outcome = if r.is_ok() { Outcome::Ok } else { Outcome::Error };
        self.shared.requests.record(RequestOp::BlockStatus, outcome, len, t0.elapsed());
        r
    }

    /// A read reference without the read: a replacement policy fills the
    /// segments it would fill on a read miss (so the next read is a hit);
    /// PWC counts the reference, and its next procedure decides. A hint: a
    /// failed fill is logged by `reference` and the range served as before.
    fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
        self.counted(RequestOp::Cache, offset, len, || {
            self.shared.hints.fetch_add(1, Relaxed);
            let filled = self.shared.reference(Op::Read, offset, len)?.filled;
            self.shared.hint_fills.fetch_add(filled.len() as u64, Relaxed);
            Ok(Default::default())
        })
    }

    fn shutdown(&self) -> io::Result<()> {
        self.stop_ticker();
        // Every request has been answered: the recording ends complete.
        let _ = self.shared.taps.stop();
        let _one = lock(&self.shared.maintaining);
        if let Some(f) = lock(&self.shared.decider).frequencies() {
            self.shared.map.set_frequencies(f);
        }
        match self.shared.map.shutdown() {
            Ok(m) => {
                log::info!("cache shut down cleanly (metadata version {})", m.version);
                Ok(())
            }
            // Already shut down: nothing left to do.
            Err(_) if self.shared.map.is_closed() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemDevice;
    use crate::meta::{region_len, Geometry, MetaStore};
    use crate::recover::{StartKind, Started};

    const SEG: u64 = 8192;
    const SLOTS: u32 = 4;
    const HDD_SEGS: u64 = 32;

    type Mem = Arc<MemDevice>;
    type Engine = CachedBackend<Mem, Mem, Mem>;

    struct Rig {
        ssd: Mem,
        hdd: Mem,
        meta: Mem,
    }

    fn geom() -> Geometry {
        Geometry { segment_size: SEG as u32, ssd_segments: SLOTS, hdd_segments: HDD_SEGS }
    }

    impl Rig {
        /// A formatted cache; the HDD holds byte `h` in segment `h`.
        fn new() -> Rig {
            let hdd: Vec<u8> = (0..SEG * HDD_SEGS).map(|i| (i / SEG) as u8).collect();
            let rig = Rig {
                ssd: Arc::new(MemDevice::new((SEG * SLOTS as u64) as usize)),
                hdd: Arc::new(MemDevice::from_vec(hdd)),
                meta: Arc::new(MemDevice::new(region_len(&geom()) as usize)),
            };
            MetaStore::new(rig.meta.clone(), 0, geom()).unwrap().format().unwrap();
            rig
        }

        fn open(&self) -> (Engine, Started) {
            self.open_as(CacheMode::WriteBack)
        }

        fn open_as(&self, mode: CacheMode) -> (Engine, Started) {
            self.open_with(mode, if mode == CacheMode::WriteBack { PWC } else { "lru" })
        }

        /// A cache of `mode` whose replacement modes run `policy`.
        /// The map of a `mode` cache, started.
        fn map(&self, mode: CacheMode) -> CacheMap<Mem, Mem, Mem> {
            self.map_started(mode).0
        }

        fn map_started(&self, mode: CacheMode) -> (CacheMap<Mem, Mem, Mem>, Started) {
            let store = MetaStore::new(self.meta.clone(), 0, geom()).unwrap();
            CacheMap::open_with(self.ssd.clone(), self.hdd.clone(), store, Default::default(), mode.write_mode())
                .unwrap()
        }

        fn open_with(&self, mode: CacheMode, policy: &str) -> (Engine, Started) {
            let (map, st) = self.map_started(mode);
            let cfg = EngineConfig { policy: Some(policy.into()), ..EngineConfig::default() };
            (CachedBackend::new(map, mode, &cfg).unwrap(), st)
        }

        fn hdd_seg(&self, h: u64) -> Vec<u8> {
            self.hdd.contents()[(h * SEG) as usize..((h + 1) * SEG) as usize].to_vec()
        }

        fn ssd_slot(&self, s: usize) -> Vec<u8> {
            self.ssd.contents()[s * SEG as usize..(s + 1) * SEG as usize].to_vec()
        }
    }

    fn read(e: &dyn Backend, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        e.read_at(&mut b, off).unwrap();
        b
    }

    /// References segment `h` `n` times, each separated by a reference to
    /// another segment (consecutive references count once).
    fn reference(e: &dyn Backend, h: u64, n: usize) {
        for _ in 0..n {
            read(e, h * SEG, 1);
            read(e, (HDD_SEGS - 1) * SEG, 1);
        }
    }

    fn allocation(e: &dyn Backend, off: u64, len: u64) -> Vec<(u64, bool)> {
        e.block_status(off, len, 1000).unwrap().into_iter().map(|x| (x.len, x.hole)).collect()
    }

    #[test]
    fn block_status_is_the_hdds_holes_except_where_the_cache_holds_the_segment() {
        let rig = Rig::new();
        // HDD segments 1..=3 zero (holes; segment 0 already is), the rest data.
        rig.hdd.write_at(&vec![0u8; 3 * SEG as usize], SEG).unwrap();
        let (e, _) = rig.open();
        assert_eq!(allocation(&e, 0, 6 * SEG), vec![(4 * SEG, true), (2 * SEG, false)]);
        // A write to an uncached segment goes to the HDD: data there now.
        e.write_at(&[1], 3 * SEG + 5, false).unwrap();
        assert_eq!(allocation(&e, 2 * SEG, 2 * SEG), vec![(SEG, true), (4096, false), (SEG - 4096, true)]);
        // Cache segments 1 and 2 (zero on the HDD): cached, clean, data.
        reference(&e, 1, 5);
        reference(&e, 2, 5);
        e.maintain().unwrap();
        let cached: Vec<u64> = e.mapping().into_iter().flatten().collect();
        assert!(cached.contains(&1) && cached.contains(&2), "{cached:?}");
        assert_eq!(allocation(&e, 0, 3 * SEG), vec![(SEG, true), (2 * SEG, false)]);
        // A dirty write over the HDD's hole (the SSD only): still data, and the HDD still a hole.
        e.write_at(&[9; 10], SEG + 100, false).unwrap();
        assert_eq!(rig.hdd.extents(SEG, SEG, 10).unwrap(), vec![ssdcache_block::Extent::hole(SEG)]);
        assert_eq!(allocation(&e, SEG, 10), vec![(10, false)]);
        assert_eq!(e.status().map.dirty, 1);
        // The cap: at most `max` extents, a prefix of the range.
        let one = e.block_status(0, 6 * SEG, 1).unwrap();
        assert_eq!(one, vec![ssdcache_block::Extent::hole(SEG)]);
        assert!(e.block_status(HDD_SEGS * SEG - 1, 2, 10).is_err(), "past the end");
        e.shutdown().unwrap();
        assert!(e.block_status(0, 1, 10).is_err(), "no status after shutdown");
    }

    #[test]
    fn cache_hint_fills_like_a_read_miss_in_replacement_modes_and_counts_for_pwc() {
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::ReadOnly);
        e.cache(5 * SEG + 10, 2 * SEG).unwrap(); // segments 5, 6, 7
        assert_eq!(e.mapping().into_iter().flatten().collect::<Vec<_>>(), vec![5, 6, 7]);
        let st = e.status();
        assert_eq!((st.cache_hints, st.cache_hint_fills, st.map.read_hits, st.map.read_misses), (1, 3, 0, 0));
        // the next read is a hit, served without the HDD
        assert_eq!(read(&e, 6 * SEG, 4), [6; 4]);
        assert_eq!((e.status().map.read_hits, e.status().map.read_misses), (1, 0));
        e.cache(5 * SEG, 1).unwrap(); // already cached: no fill
        assert_eq!((e.status().cache_hints, e.status().cache_hint_fills), (2, 3));
        e.shutdown().unwrap();
        // PWC: a hint is a reference (frequency), nothing moves until the procedure.
        let rig = Rig::new();
        let (e, _) = rig.open();
        e.cache(9 * SEG, 1).unwrap();
        assert_eq!(e.frequency(9), 5);
        assert_eq!(e.mapping().into_iter().flatten().count(), 0);
        assert_eq!((e.status().cache_hints, e.status().cache_hint_fills), (1, 0));
        e.shutdown().unwrap();
        // Passthrough: counted, nothing else.
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::Passthrough);
        e.cache(0, SEG).unwrap();
        assert_eq!((e.status().cache_hints, e.status().cache_hint_fills, e.status().map.cached), (1, 0, 0));
    }

    #[test]
    fn write_read_flush_through_the_hdd_when_nothing_is_cached() {
        let rig = Rig::new();
        let (e, st) = rig.open();
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!(e.size(), SEG * HDD_SEGS);
        assert!(e.multi_conn());
        // A write straddling segments 2 and 3.
        e.write_at(&[0xAB; 100], 3 * SEG - 50, false).unwrap();
        e.flush().unwrap();
        assert_eq!(read(&e, 3 * SEG - 60, 120)[10..110], [0xAB; 100]);
        assert_eq!(rig.hdd_seg(3)[..50], [0xAB; 50]);
        assert_eq!(rig.hdd_seg(2)[SEG as usize - 50..], [0xAB; 50]);
        e.write_zeroes(5 * SEG + 10, 20, false, true).unwrap();
        assert_eq!(e.trim_mode(), TrimMode::Pass);
        e.set_trim_mode(TrimMode::Ignore);
        e.trim(6 * SEG, SEG, true).unwrap();
        assert_eq!(read(&e, 5 * SEG + 9, 22), [&[5u8][..], &[0; 20], &[5]].concat());
        assert_eq!(read(&e, 6 * SEG, SEG as usize), vec![6; SEG as usize], "--trim ignore: a trim is ignored");
        e.set_trim_mode(TrimMode::Pass);
        e.trim(6 * SEG + 100, SEG, true).unwrap();
        assert_eq!(read(&e, 6 * SEG, 100), vec![6; 100], "outside the trim");
        assert_eq!(
            read(&e, 6 * SEG + 100, SEG as usize),
            vec![0; SEG as usize],
            "--trim pass: the hole reads as zeroes"
        );
        assert_eq!(e.status().map.trimmed_bytes, SEG);
        assert!(e.read_at(&mut [0u8; 2], SEG * HDD_SEGS - 1).is_err());
    }

    #[test]
    fn maintenance_caches_hot_segments_and_reads_come_from_the_ssd() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        // More segments touched than slots: only hot ones (frequency >= 20,
        // i.e. 4 references of 5) are cached.
        reference(&e, 7, 4);
        reference(&e, 9, 5);
        reference(&e, 11, 1);
        reference(&e, 12, 2);
        reference(&e, 13, 3);
        assert_eq!(e.frequency(7), 20);
        assert_eq!(e.frequency(11), 5);
        let r = e.maintain().unwrap();
        let cached: Vec<u64> = e.mapping().into_iter().flatten().collect();
        // Segment 31 (referenced between every other) is the hottest of all.
        let mut sorted = cached.clone();
        sorted.sort();
        assert_eq!(sorted, vec![7, 9, 31]);
        assert_eq!(r.cached, 3);
        assert_eq!(r.plan.len(), 3);
        // The evict clock started at the last slot, so slots 0, 1, 2 in
        // order, segments in address order (the cache clock).
        assert_eq!(r.plan, vec![(0, 7), (1, 9), (2, 31)]);
        assert_eq!(rig.ssd_slot(0), vec![7; SEG as usize], "segment copied into its slot");
        // A write to a cached segment goes to the SSD only; reads see it.
        e.write_at(&[0xEE; 16], 7 * SEG + 100, false).unwrap();
        assert_eq!(rig.hdd_seg(7)[100..116], [7; 16], "the HDD is not written");
        assert_eq!(rig.ssd_slot(0)[100..116], [0xEE; 16]);
        // Reads of a cached segment are served by the SSD: change the SSD
        // behind the engine's back and read it back.
        rig.ssd.write_at(&[0x55; 4], SEG + 8).unwrap();
        assert_eq!(read(&e, 9 * SEG + 8, 4), [0x55; 4]);
        rig.ssd.write_at(&[9; 4], SEG + 8).unwrap();
        // Shutdown writes the dirty segment back and marks the cache clean,
        // persisting PWC's own (decayed, read-counting) frequencies.
        let freqs: Vec<u16> = (0..HDD_SEGS).map(|h| e.frequency(h)).collect();
        assert!(freqs[11] > 0, "reads count for PWC");
        e.shutdown().unwrap();
        assert_eq!(rig.hdd_seg(7)[100..116], [0xEE; 16]);
        assert!(e.read_at(&mut [0u8; 1], 0).is_err(), "no I/O after shutdown");
        e.shutdown().unwrap(); // idempotent
        let (e2, st) = rig.open();
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!((0..HDD_SEGS).map(|h| e2.frequency(h)).collect::<Vec<_>>(), freqs, "PWC resumes its table");
        assert_eq!(e2.mapping(), saved_mapping(&rig));
        assert_eq!(e2.mapping().iter().flatten().count(), 3);
        assert_eq!(read(&e2, 7 * SEG + 99, 18), [&[7u8][..], &[0xEE; 16], &[7]].concat());
    }

    #[test]
    fn write_back_with_a_replacement_policy_fills_on_misses_and_writes_back_its_victims() {
        for policy in ["lru", "s3fifo", "sieve", "admit(by=nhit(n=2),rule=lru)"] {
            let rig = Rig::new();
            let (e, _) = rig.open_with(CacheMode::WriteBack, policy);
            assert!(!e.status().policy.contains("pwc"), "{policy}: {}", e.status().policy);
            // 8 segments written through 4 slots, each twice (a second
            // miss admits under nhit): every cached write stays on the SSD.
            for round in 0..2u8 {
                for h in 0..8u64 {
                    e.write_at(&[0xA0 + h as u8 + round; 64], h * SEG + 64, false).unwrap();
                }
            }
            let st = e.status();
            assert!(st.map.filled >= 4 && st.map.written_back > 0, "{policy}: {:?}", st.map);
            assert!(st.map.dirty > 0, "{policy}: write hits stay dirty");
            assert_eq!(st.map.dirty_evictions, st.map.written_back, "{policy}: every write-back was a dirty victim's");
            // What the durable map names is dirty, and all of it is.
            let dirty_saved = saved_mapping(&rig).iter().flatten().count() as u64;
            assert_eq!(dirty_saved, st.map.dirty, "{policy}: the durable map names exactly the dirty slots");
            for h in 0..8u64 {
                assert_eq!(read(&e, h * SEG + 64, 64), [0xA1 + h as u8; 64], "{policy}: segment {h}");
                assert_eq!(read(&e, h * SEG, 1), [h as u8], "{policy}: the filled segment's other bytes");
            }
            e.shutdown().unwrap();
            for h in 0..8u64 {
                assert_eq!(rig.hdd_seg(h)[64..128], [0xA1 + h as u8; 64], "{policy}: written back at shutdown");
            }
            // A warm restart keeps the cached segments (clean now).
            let (e2, st) = rig.open_with(CacheMode::WriteBack, policy);
            assert_eq!(st.kind, StartKind::Clean);
            assert_eq!(e2.mapping(), saved_mapping(&rig), "{policy}");
            assert!(e2.mapping().iter().flatten().count() > 0, "{policy}");
        }
        // Policies that do not decide on each access are refused, with what is.
        let rig = Rig::new();
        for bad in ["belady", "fab", "bplru", "clc", "abm", "pwc(period=1)"] {
            let map = rig.map(CacheMode::WriteBack);
            let cfg = EngineConfig { policy: Some(bad.into()), ..EngineConfig::default() };
            let err =
                CachedBackend::new(map, CacheMode::WriteBack, &cfg).err().unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(err.starts_with("--policy"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_policy_changed_at_run_time_keeps_what_is_cached_and_every_write() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        let with = |policy: &str| EngineConfig { policy: Some(policy.into()), ..EngineConfig::default() };
        reference(&e, 7, 5);
        reference(&e, 9, 5);
        e.maintain().unwrap();
        e.write_at(&[0x11; 32], 7 * SEG, false).unwrap();
        let cached = e.mapping();
        // PWC -> LRU: the cached segments stay where they are, and LRU knows them.
        e.reconfigure(&with("lru")).unwrap();
        assert_eq!(e.mapping(), cached);
        assert_eq!(e.status().policy, "lru");
        assert_eq!(e.config().policy.as_deref(), Some("lru"));
        for h in 20..26u64 {
            e.write_at(&[h as u8 ^ 0x80; 32], h * SEG, false).unwrap();
        }
        assert!(e.status().map.written_back > 0, "LRU evicted dirty segments, written back first");
        // A read miss: filled clean, so no save names it.
        assert_eq!(read(&e, 27 * SEG, 1), [27]);
        // LRU -> PWC: every mapped slot saved at once, since PWC's writes
        // never save; a write to a slot LRU filled, then a crash (dropped
        // without a shutdown), and it is still there.
        e.reconfigure(&with("pwc")).unwrap();
        assert!(e.status().policy.starts_with("pwc"));
        let lru_slot_seg = 27;
        assert!(e.mapping().contains(&Some(27)));
        e.write_at(&[0x22; 32], lru_slot_seg * SEG + 64, false).unwrap();
        e.flush().unwrap();
        // Refused, and nothing changes: a policy that does not decide on
        // access, the cleaner's bounds in a mode without dirty data.
        assert!(e.reconfigure(&with("belady")).unwrap_err().contains("--policy belady"));
        assert!(e.status().policy.starts_with("pwc"));
        drop(e);
        let (e, st) = rig.open();
        assert_eq!(st.kind, StartKind::Unclean);
        assert_eq!(read(&e, 7 * SEG, 32), [0x11; 32]);
        assert_eq!(read(&e, lru_slot_seg * SEG + 64, 32), [0x22; 32], "written after the switch back to PWC");
        for h in 20..26u64 {
            assert_eq!(read(&e, h * SEG, 32), [h as u8 ^ 0x80; 32], "segment {h}");
        }
        let (wt, _) = rig.open_with(CacheMode::WriteThrough, "lru");
        let cleaning = EngineConfig {
            cleaner: CleanerConfig { max_dirty: Some(0.2), ..Default::default() },
            ..EngineConfig::default()
        };
        assert!(wt.reconfigure(&cleaning).unwrap_err().contains("write-back caches only"));
    }

    #[test]
    fn the_mode_changes_at_run_time_writing_dirty_data_back_first() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        let kept = Mutex::new(Vec::new());
        let persist = |m: CacheMode| -> io::Result<()> {
            lock(&kept).push(m);
            Ok(())
        };
        reference(&e, 7, 5);
        e.maintain().unwrap();
        e.write_at(&[0x33; 64], 7 * SEG, false).unwrap();
        assert_eq!(e.status().map.dirty, 1);
        // PWC does not fit write-through: refused, nothing changed.
        let pwc = EngineConfig { policy: Some("pwc".into()), ..EngineConfig::default() };
        assert!(e.switch_mode(CacheMode::WriteThrough, &pwc, &persist).is_err());
        assert_eq!((e.mode(), e.status().map.dirty), (CacheMode::WriteBack, 1));
        // Write-back -> write-through: written back first, kept after.
        e.switch_mode(CacheMode::WriteThrough, &EngineConfig::default(), &persist).unwrap();
        assert_eq!(e.mode(), CacheMode::WriteThrough);
        assert_eq!(e.status().map.dirty, 0);
        assert_eq!(rig.hdd_seg(7)[..64], [0x33; 64], "on BACKING before the switch");
        assert_eq!(e.status().policy, "lru");
        e.write_at(&[0x44; 64], 9 * SEG, false).unwrap();
        assert_eq!(rig.hdd_seg(9)[..64], [0x44; 64], "write-through");
        assert!(saved_mapping(&rig).iter().all(|m| m.is_none()), "a write-through map saves an empty map");
        // -> write-back with LRU: a write stays on the SSD, and survives a crash.
        let lru = EngineConfig { policy: Some("lru".into()), ..EngineConfig::default() };
        e.switch_mode(CacheMode::WriteBack, &lru, &persist).unwrap();
        e.write_at(&[0x55; 64], 9 * SEG, false).unwrap();
        assert_eq!(rig.hdd_seg(9)[..64], [0x44; 64], "write-back again");
        assert_eq!(*lock(&kept), vec![CacheMode::WriteThrough, CacheMode::WriteBack]);
        // -> passthrough: drained, nothing cached (its requests bypass the map).
        e.switch_mode(CacheMode::Passthrough, &EngineConfig::default(), &persist).unwrap();
        assert!(e.mapping().iter().all(|m| m.is_none()));
        assert_eq!(read(&e, 9 * SEG, 64), [0x55; 64]);
        // A failing persist leaves the mode as it was.
        let failing = |_: CacheMode| -> io::Result<()> { Err(io::Error::other("disk full")) };
        assert!(e.switch_mode(CacheMode::WriteBack, &lru, &failing).unwrap_err().contains("disk full"));
        assert_eq!(e.mode(), CacheMode::Passthrough);
        drop(e);
        let (e, _) = rig.open_with(CacheMode::WriteBack, "lru");
        assert_eq!(read(&e, 7 * SEG, 64), [0x33; 64]);
        assert_eq!(read(&e, 9 * SEG, 64), [0x55; 64]);
    }

    /// The map as the last durable save holds it.
    fn saved_mapping(rig: &Rig) -> Vec<Option<u64>> {
        let store = MetaStore::new(rig.meta.clone(), 0, geom()).unwrap();
        crate::recover::load(&store).unwrap().meta.map
    }

    #[test]
    fn restart_seeds_pwc_so_the_next_procedure_keeps_cached_segments() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        for h in [1, 2] {
            e.write_at(&[h as u8 + 100; 8], h * SEG, false).unwrap();
        }
        // First fill: everything touched is hot.
        let r = e.maintain().unwrap();
        assert_eq!(r.plan, vec![(0, 1), (1, 2)]);
        e.write_at(&[0xC1; 8], SEG, false).unwrap();
        e.flush().unwrap();
        drop(e); // a crash: no shutdown
        let (e, st) = rig.open();
        assert_eq!(st.kind, StartKind::Unclean);
        assert_eq!(e.mapping(), vec![Some(1), Some(2), None, None]);
        assert_eq!(read(&e, SEG, 8), [0xC1; 8]);
        // The next procedure caches a new segment in an empty slot and
        // leaves the others where they are (PWC knows they are cached).
        e.write_at(&[1; 8], 20 * SEG, false).unwrap();
        let r = e.maintain().unwrap();
        assert_eq!(r.plan, vec![(2, 20)]);
        assert_eq!(e.mapping(), vec![Some(1), Some(2), Some(20), None]);
        e.shutdown().unwrap();
    }

    #[test]
    fn with_idle_a_due_procedure_waits_until_requests_stop() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        e.start_period(Duration::from_millis(1), Some(Duration::from_secs(2)));
        // Due at once, but a request arrives every 10 ms for half a second.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(500) {
            e.write_at(&[3; 8], 4 * SEG, false).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(e.status().map.procedures, 0, "the procedure ran while requests kept coming");
        // Requests stop: it runs once the device has been idle for 2 s.
        while e.status().map.procedures == 0 {
            assert!(t.elapsed() < Duration::from_secs(20), "the idle procedure never ran");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(e.mapping().contains(&Some(4)));
        e.shutdown().unwrap();
    }

    #[test]
    fn periodic_maintenance_runs_and_stops_at_shutdown() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        e.write_at(&[3; 8], 4 * SEG, false).unwrap();
        e.start_period(Duration::from_millis(5), None);
        let t = Instant::now();
        while e.mapping().iter().all(|m| m.is_none()) {
            assert!(t.elapsed() < Duration::from_secs(10), "the period never ran");
            std::thread::sleep(Duration::from_millis(2));
        }
        e.shutdown().unwrap();
        let m = crate::recover::load(&MetaStore::new(rig.meta.clone(), 0, geom()).unwrap()).unwrap().meta;
        assert!(m.clean && m.procedures >= 1 && m.map.contains(&Some(4)));
    }

    #[test]
    fn write_through_lru_fills_on_misses_never_dirties_and_restarts_empty_after_a_crash() {
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::WriteThrough);
        assert_eq!(read(&e, 5 * SEG + 3, 2), [5, 5]);
        assert_eq!(e.mapping(), vec![Some(5), None, None, None], "a read miss fills a slot at once");
        assert_eq!(rig.ssd_slot(0), vec![5; SEG as usize]);
        e.write_at(&[0xAA; 4], 5 * SEG, false).unwrap();
        assert_eq!(rig.hdd_seg(5)[..4], [0xAA; 4], "writes reach the HDD");
        assert_eq!(rig.ssd_slot(0)[..4], [0xAA; 4], "and the cached copy");
        e.write_at(&[0xBB; 4], 9 * SEG, false).unwrap(); // a write miss allocates
        for h in [10, 11, 12] {
            read(&e, h * SEG, 1);
        }
        // LRU: 5 was the least recent when 12 arrived.
        assert_eq!(e.mapping(), vec![Some(12), Some(9), Some(10), Some(11)]);
        let st = e.status();
        assert_eq!((st.map.dirty, st.map.filled, st.map.cached), (0, 5, 4));
        assert_eq!(e.maintain().unwrap().plan, vec![], "no procedure outside write-back");
        e.flush().unwrap();
        // While it runs, the saved map is empty: a crash restarts cold and
        // copies nothing (the HDD has every write).
        assert_eq!(saved_mapping(&rig), vec![None; 4]);
        drop(e);
        let (e, st) = rig.open_as(CacheMode::WriteThrough);
        assert_eq!((st.kind, st.copied), (StartKind::Unclean, 0));
        assert_eq!(e.mapping(), vec![None; 4]);
        assert_eq!(read(&e, 9 * SEG, 5), [0xBB, 0xBB, 0xBB, 0xBB, 9]);
        read(&e, 7 * SEG, 1);
        e.shutdown().unwrap();
        // A clean stop saves the map: the next start is warm.
        assert_eq!(saved_mapping(&rig), vec![Some(9), Some(7), None, None]);
        let (e, st) = rig.open_as(CacheMode::WriteThrough);
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!(e.mapping(), vec![Some(9), Some(7), None, None]);
        assert_eq!(saved_mapping(&rig), vec![None; 4], "and saves an empty map again before serving");
        assert_eq!(read(&e, 9 * SEG, 1), [0xBB]);
        assert_eq!((e.status().map.read_hits, e.status().map.read_misses), (1, 0));
        read(&e, 30 * SEG, 1);
        assert_eq!((e.status().map.read_hits, e.status().map.read_misses), (1, 1), "a fill is a miss");
    }

    #[test]
    fn read_only_fills_on_read_misses_and_a_write_invalidates_durably_enough() {
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::ReadOnly);
        e.write_at(&[0xA1; 4], 3 * SEG, false).unwrap();
        assert_eq!(e.mapping(), vec![None; 4], "a write miss is not cached");
        assert_eq!(read(&e, 3 * SEG, 5), [0xA1, 0xA1, 0xA1, 0xA1, 3]);
        assert_eq!(read(&e, 4 * SEG, 1), [4]);
        assert_eq!(e.mapping(), vec![Some(3), Some(4), None, None], "read misses fill at once");
        assert_eq!(rig.ssd_slot(0)[..5], [0xA1, 0xA1, 0xA1, 0xA1, 3]);
        assert_eq!(read(&e, 3 * SEG, 1), [0xA1], "a hit");
        // A write to cached segment 3 goes to the HDD only and drops the slot.
        e.write_at(&[0xB2; 4], 3 * SEG, false).unwrap();
        assert_eq!(rig.hdd_seg(3)[..4], [0xB2; 4]);
        assert_eq!(rig.ssd_slot(0)[..4], [0xA1; 4], "the SSD copy is not written");
        assert_eq!(e.mapping(), vec![None, Some(4), None, None], "but no longer mapped");
        let st = e.status().map;
        assert_eq!((st.write_hits, st.write_hits_to_backing, st.write_misses), (1, 1, 1));
        assert_eq!((st.read_hits, st.read_misses, st.dirty, st.ssd_written), (1, 2, 0, 0));
        // The stale copy is never served: the next read misses and refills.
        assert_eq!(read(&e, 3 * SEG, 5), [0xB2, 0xB2, 0xB2, 0xB2, 3]);
        assert!(e.mapping().contains(&Some(3)));
        e.write_at(&[0xC3; 4], 4 * SEG, false).unwrap(); // invalidates 4
        e.flush().unwrap();
        // While it runs the saved map is empty, so a crash cannot bring back
        // an invalidated slot (here 4's, whose SSD copy is stale).
        assert_eq!(saved_mapping(&rig), vec![None; 4]);
        drop(e); // a crash
        let (e, st) = rig.open_as(CacheMode::ReadOnly);
        assert_eq!((st.kind, st.copied), (StartKind::Unclean, 0));
        assert_eq!(e.mapping(), vec![None; 4]);
        assert_eq!(read(&e, 4 * SEG, 5), [0xC3, 0xC3, 0xC3, 0xC3, 4]);
        assert_eq!(read(&e, 3 * SEG, 1), [0xB2]);
        e.write_at(&[0xD4; 1], 3 * SEG, false).unwrap(); // invalidated before the clean stop
        e.shutdown().unwrap();
        assert_eq!(saved_mapping(&rig).into_iter().flatten().collect::<Vec<_>>(), vec![4], "warm, minus 3");
        let (e, st) = rig.open_as(CacheMode::ReadOnly);
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!(saved_mapping(&rig), vec![None; 4], "an empty map saved again before serving");
        assert_eq!(read(&e, 4 * SEG, 1), [0xC3]);
        assert_eq!(read(&e, 3 * SEG, 1), [0xD4]);
        let st = e.status().map;
        assert_eq!((st.read_hits, st.read_misses), (1, 1));
    }

    /// Policies that evict without filling the freed slot at once (CLOCK,
    /// 2Q, S3-FIFO, ARC, LIRS), in every replacement mode: no fill meets a
    /// segment the map still holds (that panicked), and every read returns
    /// the last data written.
    #[test]
    fn every_replacement_policy_and_mode_keeps_the_map_and_the_data_right() {
        for policy in ["clock", "2q", "s3fifo", "arc", "lirs", "lfu"] {
            for mode in [CacheMode::WriteThrough, CacheMode::WriteAround, CacheMode::ReadOnly] {
                let (e, _) = Rig::new().open_with(mode, policy);
                let mut model: Vec<u8> = (0..HDD_SEGS).map(|h| h as u8).collect();
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
                for i in 0..20_000u32 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // a skewed mix, some requests spanning two segments
                    let h = ((x >> 20) % HDD_SEGS).min((x >> 40) % HDD_SEGS).min(HDD_SEGS - 2);
                    let n = 1 + (x >> 10) % 2;
                    if (x >> 61) < 2 {
                        let v = (i % 251) as u8;
                        let data: Vec<u8> = (0..n * SEG).map(|_| v).collect();
                        e.write_at(&data, h * SEG, false).unwrap();
                        (h..h + n).for_each(|s| model[s as usize] = v);
                    } else {
                        let got = read(&e, h * SEG, (n * SEG) as usize);
                        for s in 0..n {
                            let want = model[(h + s) as usize];
                            assert_eq!(
                                got[(s * SEG) as usize],
                                want,
                                "{policy} {}: read {i}, segment {}",
                                mode.name(),
                                h + s
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn read_only_a_read_between_a_writes_invalidation_and_its_data_refills_safely() {
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::ReadOnly);
        read(&e, 3 * SEG, 1);
        assert_eq!(e.mapping(), vec![Some(3), None, None, None]);
        // A write's reference: the policy invalidates 3, and the map drops it
        // at once, under the same lock, not later with the write's data.
        let r = e.shared.reference(Op::Write, 3 * SEG, 4).unwrap();
        let dropped = r.dropped.clone();
        assert_eq!((r.filled, r.dropped), (Vec::<u64>::new(), vec![3u64]));
        assert_eq!(e.mapping(), vec![None; 4]);
        // A read comes in before the write's data: it refills 3 (old bytes)
        // without meeting a segment the map still holds.
        assert_eq!(read(&e, 3 * SEG, 1), [3]);
        assert!(e.mapping().contains(&Some(3)));
        e.shared.map.write_filled(&[0xE5; 4], 3 * SEG, &[], &dropped).unwrap();
        assert_eq!(e.mapping(), vec![None; 4], "the write drops the refilled copy too");
        assert_eq!(read(&e, 3 * SEG, 5), [0xE5, 0xE5, 0xE5, 0xE5, 3]);
        let st = e.status().map;
        assert_eq!((st.write_hits, st.write_hits_to_backing, st.write_misses), (1, 1, 0));
    }

    #[test]
    fn status_counts_what_was_served_without_the_backing_device() {
        // Write-back: a write to a cached segment and a read of one are
        // served by the SSD alone; misses are not.
        let rig = Rig::new();
        let (e, _) = rig.open();
        e.write_at(&[1; 100], 2 * SEG, false).unwrap(); // miss: 100 bytes to the HDD
        e.maintain().unwrap(); // caches 2
        e.write_at(&[2; 300], 2 * SEG, false).unwrap(); // hit, SSD only
        read(&e, 2 * SEG, 50); // hit
        read(&e, 2 * SEG - 10, 30); // 10 bytes from HDD segment 1, 20 from cached 2
        let st = e.status().map;
        assert_eq!(st.request_bytes, 100 + 300 + 50 + 30);
        assert_eq!((st.served_pieces, st.served_bytes, st.write_hits_to_backing), (3, 300 + 50 + 20, 0));
        assert_eq!(st.served_bytes_ratio, Some(370.0 / 480.0));
        assert_eq!(st.served_pieces_ratio, Some(3.0 / 5.0));
        assert_eq!(st.served_bytes + st.hdd_read + 100, st.request_bytes, "the rest touched the HDD");
        // Write-through: write hits still write the HDD; a read that fills is
        // a miss; only reads of segments cached before them are served.
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::WriteThrough);
        read(&e, 5 * SEG, 10); // fill: a miss
        e.write_at(&[3; 20], 5 * SEG, false).unwrap(); // hit, to both devices
        e.write_at(&[3; 20], 6 * SEG, false).unwrap(); // miss that fills
        read(&e, 6 * SEG, 40); // hit
        let st = e.status().map;
        assert_eq!((st.read_hits, st.read_misses, st.write_hits, st.write_misses), (1, 1, 1, 1));
        assert_eq!((st.served_pieces, st.served_bytes, st.write_hits_to_backing), (1, 40, 1));
        assert_eq!(st.served_bytes_ratio, Some(40.0 / 90.0));
        // Nothing counted yet: no ratio.
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::Passthrough);
        assert_eq!((e.status().map.served_bytes_ratio, e.status().map.served_pieces_ratio), (None, None));
        read(&e, 0, 8);
        assert_eq!(e.status().map.served_bytes_ratio, Some(0.0));
    }

    /// The metrics' outcome of each request, as the engine decides it.
    #[test]
    fn requests_are_counted_by_operation_and_outcome() {
        let count = |e: &Engine, op: &str, outcome: &str| {
            let s = e.status().requests;
            let r = s.iter().find(|r| r.op == op && r.outcome == outcome).unwrap();
            (r.count, r.bytes, r.latency.count)
        };
        let rig = Rig::new();
        let (e, _) = rig.open();
        for h in 0..2 {
            reference(&e, h, 5); // hot: cached by the procedure
        }
        assert_eq!(count(&e, "read", "miss"), (20, 20, 20));
        e.maintain().unwrap();
        read(&e, 0, 100); // hit
        read(&e, SEG - 10, 20); // segments 0 and 1: both cached, a hit
        read(&e, SEG + 10, (SEG + 10) as usize); // segments 1 and 2: 2 is not cached, a miss
        e.write_at(&[1; 8], 0, false).unwrap(); // hit (dirty)
        e.write_zeroes(3 * SEG, 2 * SEG, false, false).unwrap(); // miss
        e.trim(0, SEG, false).unwrap();
        e.flush().unwrap();
        let mut buf = [0u8; 8];
        assert!(e.read_at(&mut buf, HDD_SEGS * SEG).is_err(), "past the end");
        assert_eq!(count(&e, "read", "hit"), (2, 120, 2));
        assert_eq!(count(&e, "read", "miss"), (21, 20 + SEG + 10, 21));
        assert_eq!(count(&e, "read", "error"), (1, 8, 1));
        assert_eq!(count(&e, "write", "hit"), (1, 8, 1));
        assert_eq!(count(&e, "write_zeroes", "miss"), (1, 2 * SEG, 1));
        assert_eq!(count(&e, "trim", "ok"), (1, SEG, 1));
        assert_eq!(count(&e, "flush", "ok"), (1, 0, 1));
        assert_eq!(count(&e, "read", "bypass"), (0, 0, 0));
        e.write_back().unwrap();
        let runs = e.status().procedure_runs;
        assert_eq!((runs[0].procedure, runs[0].completed, runs[0].failed), ("caching_and_eviction", 1, 0));
        assert_eq!((runs[1].procedure, runs[1].completed, runs[1].duration.count), ("write_back", 1, 1));
        // Passthrough never consults the cache: every data request bypasses it.
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::Passthrough);
        read(&e, 0, 10);
        e.write_at(&[2; 4], SEG, false).unwrap();
        assert_eq!((count(&e, "read", "bypass").0, count(&e, "write", "bypass").0), (1, 1));
        assert_eq!((count(&e, "read", "miss").0, count(&e, "write", "miss").0), (0, 0));
        // Write-back with no plan (other modes): maintain is not a procedure run.
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::WriteThrough);
        e.maintain().unwrap();
        assert_eq!(e.status().procedure_runs[0].completed, 0);
    }

    /// `--seq-cutoff` and `--promote-after`: the simulator's admitters in
    /// front of the replacement policy; what they decline is a bypass.
    #[test]
    fn admission_options_make_bypasses() {
        let bypass = |e: &Engine, op: &str| {
            let s = e.status().requests;
            s.iter().find(|r| r.op == op && r.outcome == "bypass").unwrap().count
        };
        let open = |mode, seq_cutoff, promote_after| {
            let map = Rig::new().map(mode);
            let cfg = EngineConfig { seq_cutoff, promote_after, ..EngineConfig::default() };
            CachedBackend::new(map, mode, &cfg)
        };
        // A stream of 6 segments with a cutoff of 2: 2 filled, 4 bypass; the
        // filled ones hit afterwards.
        let e = open(CacheMode::ReadOnly, Some(2 * SEG), None).unwrap();
        assert!(e.status().policy.contains("seqcut"), "{}", e.status().policy);
        for h in 10..16 {
            read(&e, h * SEG, SEG as usize);
        }
        assert_eq!(e.mapping().into_iter().flatten().collect::<Vec<_>>(), vec![10, 11]);
        assert_eq!(bypass(&e, "read"), 4);
        read(&e, 10 * SEG, 8);
        let s = e.status().requests;
        assert_eq!(s.iter().find(|r| r.op == "read" && r.outcome == "hit").unwrap().count, 1);
        assert_eq!(s.iter().find(|r| r.op == "read" && r.outcome == "miss").unwrap().count, 2);
        // The third miss of a segment fills it; a write-through write miss is
        // declined like a read miss.
        let e = open(CacheMode::WriteThrough, None, Some(3)).unwrap();
        read(&e, 5 * SEG, 1);
        e.write_at(&[1; 4], 5 * SEG, false).unwrap();
        assert_eq!(e.mapping(), vec![None; 4]);
        assert_eq!((bypass(&e, "read"), bypass(&e, "write")), (1, 1));
        read(&e, 5 * SEG, 1);
        assert_eq!(e.mapping()[0], Some(5), "filled at its third miss");
        assert_eq!(bypass(&e, "read"), 1);
        // Write-around: a write miss is never filled, so it is a miss, not a bypass.
        let e = open(CacheMode::WriteAround, None, Some(2)).unwrap();
        e.write_at(&[1; 4], 5 * SEG, false).unwrap();
        assert_eq!(bypass(&e, "write"), 0);
        // Not for write-back PWC or passthrough.
        let err = open(CacheMode::WriteBack, Some(SEG), None).err().unwrap();
        assert!(err.contains("--seq-cutoff and --promote-after apply to caches that fill on misses"), "{err}");
        assert!(err.contains("not to a write-back PWC cache"), "{err}");
        assert!(open(CacheMode::Passthrough, None, Some(2)).is_err());
    }

    #[test]
    fn write_around_and_passthrough() {
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::WriteAround);
        e.write_at(&[1; 4], 3 * SEG, false).unwrap();
        assert_eq!(e.mapping(), vec![None; 4], "a write miss is not cached");
        read(&e, 3 * SEG, 4);
        assert_eq!(e.mapping()[0], Some(3));
        e.write_at(&[2; 4], 3 * SEG, false).unwrap();
        assert_eq!((rig.hdd_seg(3)[..4].to_vec(), rig.ssd_slot(0)[..4].to_vec()), (vec![2; 4], vec![2; 4]));
        e.shutdown().unwrap();
        let rig = Rig::new();
        let (e, _) = rig.open_as(CacheMode::Passthrough);
        read(&e, 3 * SEG, 4);
        e.write_at(&[7; 4], 3 * SEG, false).unwrap();
        assert_eq!(e.mapping(), vec![None; 4]);
        assert_eq!(rig.hdd_seg(3)[..4], [7; 4]);
        assert_eq!(e.status().map.hdd_read, 4);
    }

    impl Rig {
        /// A write-back cache with the cleaner's bounds `cleaner`.
        fn open_cleaning(&self, cleaner: CleanerConfig) -> Engine {
            let store = MetaStore::new(self.meta.clone(), 0, geom()).unwrap();
            let (map, _) = CacheMap::open(self.ssd.clone(), self.hdd.clone(), store, false).unwrap();
            let cfg = EngineConfig { cleaner, ..EngineConfig::default() };
            CachedBackend::new(map, CacheMode::WriteBack, &cfg).unwrap()
        }
    }

    /// Waits (up to 20 s, then fails) until `done`, running `meanwhile`.
    fn wait_until(what: &str, mut done: impl FnMut() -> bool, mut meanwhile: impl FnMut()) {
        let t = Instant::now();
        while !done() {
            assert!(t.elapsed() < Duration::from_secs(20), "{what} never happened");
            meanwhile();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn above_max_dirty_the_cleaner_writes_back_even_while_requests_keep_coming() {
        let rig = Rig::new();
        let e = rig.open_cleaning(CleanerConfig { max_dirty: Some(0.25), ..Default::default() });
        for h in 0..4 {
            e.write_at(&[1; 8], h * SEG, false).unwrap();
        }
        e.maintain().unwrap(); // 0..4 cached
                               // One dirty slot of 4 is the bound: not above it, nothing cleaned.
        e.write_at(&[0xA0; 8], 0, false).unwrap();
        // A second (and a third) is above it: the oldest go until one is left,
        // while another segment is read without pause (it still cleans).
        e.write_at(&[0xA1; 8], SEG, false).unwrap();
        e.write_at(&[0xA2; 8], 2 * SEG, false).unwrap();
        wait_until("cleaning down to max_dirty", || e.status().map.dirty == 1, || drop(read(&e, 20 * SEG, 512)));
        assert_eq!(rig.hdd_seg(0)[..8], [0xA0; 8], "the oldest dirtied first");
        assert_eq!(rig.hdd_seg(1)[..8], [0xA1; 8]);
        assert_eq!(rig.hdd_seg(2)[..8], [1; 8], "the newest stays dirty");
        let c = e.status().cleaner.unwrap();
        assert_eq!((c.cleaned_too_many, c.cleaned_too_old, c.cleaned_bytes), (2, 0, 2 * SEG));
        assert_eq!((c.max_dirty, c.dirty_age, c.clean_rate), (Some(0.25), None, None));
        assert!(c.oldest_dirty_age.is_some());
        assert_eq!(e.status().map.dirty_bytes, SEG);
        e.shutdown().unwrap();
        assert_eq!(e.status().cleaner.unwrap().activity, cleaner::Activity::Stopped);
        assert_eq!(rig.hdd_seg(2)[..8], [0xA2; 8], "shutdown wrote back the rest");
    }

    #[test]
    fn with_dirty_age_a_slot_is_written_back_once_old_enough() {
        let rig = Rig::new();
        let age = Duration::from_millis(300);
        let e = rig.open_cleaning(CleanerConfig { dirty_age: Some(age.as_nanos() as u64), ..Default::default() });
        e.write_at(&[1; 8], 3 * SEG, false).unwrap();
        e.maintain().unwrap();
        let t = Instant::now();
        e.write_at(&[0xB3; 8], 3 * SEG, false).unwrap();
        wait_until("cleaning of an old slot", || e.status().map.dirty == 0, || {});
        assert!(t.elapsed() >= age, "written back before it was {age:?} old");
        assert_eq!(rig.hdd_seg(3)[..8], [0xB3; 8]);
        let c = e.status().cleaner.unwrap();
        assert_eq!((c.cleaned_too_many, c.cleaned_too_old, c.oldest_dirty_age), (0, 1, None));
        e.shutdown().unwrap();
    }

    #[test]
    fn cleaner_bounds_are_refused_outside_write_back() {
        let rig = Rig::new();
        let map = rig.map(CacheMode::WriteThrough);
        let cfg = EngineConfig {
            cleaner: CleanerConfig { max_dirty: Some(0.1), ..Default::default() },
            ..Default::default()
        };
        let err = CachedBackend::new(map, CacheMode::WriteThrough, &cfg).err().unwrap();
        assert!(err.contains("write-back caches only"), "{err}");
        // Without bounds there is no cleaner, and status says so.
        assert!(rig.open().0.status().cleaner.is_none());
    }

    /// An SSD whose segment copies wait at a gate until the test opens it,
    /// so the procedure is certainly still running while requests arrive.
    struct GatedSsd {
        dev: Mem,
        open: Mutex<bool>,
        opened: Condvar,
    }
    impl Rig {
        /// A write-back cache on a [`GatedSsd`] (open), and the gate.
        fn open_gated(&self) -> (CachedBackend<Arc<GatedSsd>, Mem, Mem>, Arc<GatedSsd>) {
            let store = MetaStore::new(self.meta.clone(), 0, geom()).unwrap();
            let ssd = Arc::new(GatedSsd { dev: self.ssd.clone(), open: Mutex::new(true), opened: Condvar::new() });
            let (map, _) = CacheMap::open(ssd.clone(), self.hdd.clone(), store, false).unwrap();
            (CachedBackend::new(map, CacheMode::WriteBack, &EngineConfig::default()).unwrap(), ssd)
        }
    }

    impl BlockDevice for GatedSsd {
        fn len(&self) -> u64 {
            self.dev.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.dev.read_at(buf, offset)
        }
        fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            if data.len() == SEG as usize {
                let mut open = lock(&self.open);
                while !*open {
                    open = self.opened.wait(open).unwrap();
                }
            }
            self.dev.write_at(data, offset)
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn requests_go_on_during_the_procedure_and_write_to_both_devices() {
        let rig = Rig::new();
        let (e, ssd) = rig.open_gated();
        for h in 0..4 {
            e.write_at(&[h as u8 + 50; 8], h * SEG, false).unwrap();
        }
        e.maintain().unwrap(); // first fill: 0..4 cached
        e.write_at(&[0xD1; 8], SEG, false).unwrap();
        assert_eq!(e.status().map.dirty, 1);
        for h in 4..8 {
            reference(&e, h, 5);
        }
        *lock(&ssd.open) = false;
        let kept = std::thread::scope(|sc| {
            let t = sc.spawn(|| e.maintain().unwrap());
            // The procedure is now stuck in its first segment copy: requests
            // on other segments must still be served.
            while !e.status().map.in_procedure {
                std::thread::yield_now();
            }
            // A segment still cached (the one being moved out is unmapped
            // and locked; the procedure waits at its first copy).
            let moved: Vec<u64> = (0..4).filter(|h| !e.mapping().contains(&Some(*h))).collect();
            let kept = e.mapping().into_iter().flatten().next().unwrap();
            e.write_at(&[0xD2; 8], kept * SEG + 8, false).unwrap();
            assert_eq!(rig.hdd_seg(kept)[8..16], [0xD2; 8], "a write during the procedure reaches the HDD too");
            assert_eq!(read(&e, 20 * SEG, 1), [20]);
            assert!(e.status().map.in_procedure && !t.is_finished(), "the requests ran during the procedure");
            assert!(moved.len() <= 1, "at most the slot being refilled is unmapped");
            *lock(&ssd.open) = true;
            ssd.opened.notify_all();
            let r = t.join().unwrap();
            assert!(!r.plan.is_empty());
            kept
        });
        let st = e.status();
        assert_eq!((st.map.dirty, st.map.in_procedure), (0, false), "nothing is dirty after the procedure");
        assert_eq!(read(&e, kept * SEG + 8, 8), [0xD2; 8]);
        assert_eq!(rig.hdd_seg(1)[..8], [0xD1; 8], "dirty data written back by line 4");
        e.shutdown().unwrap();
    }

    #[test]
    fn references_during_the_procedure_do_not_change_frequencies() {
        let rig = Rig::new();
        let (e, ssd) = rig.open_gated();
        for h in 0..4 {
            reference(&e, h, 1);
        }
        *lock(&ssd.open) = false;
        std::thread::scope(|sc| {
            let t = sc.spawn(|| e.maintain().unwrap());
            while !e.status().map.in_procedure {
                std::thread::yield_now();
            }
            let before: Vec<u16> = (0..HDD_SEGS).map(|h| e.frequency(h)).collect();
            // Served, not counted (segment 31 is being moved in: its lock is held).
            for _ in 0..3 {
                read(&e, 20 * SEG, 1);
                read(&e, 22 * SEG, 1);
            }
            e.write_at(&[9; 8], 21 * SEG, false).unwrap();
            assert_eq!(read(&e, 20 * SEG, 1), [20]);
            let during: Vec<u16> = (0..HDD_SEGS).map(|h| e.frequency(h)).collect();
            let still_running = !t.is_finished();
            // Open the gate before asserting: a failed assertion must not
            // leave the procedure blocked (the scope would wait for it).
            *lock(&ssd.open) = true;
            ssd.opened.notify_all();
            t.join().unwrap();
            assert!(still_running);
            assert_eq!(during, before, "a reference changed a frequency during the procedure (Fig. 5 line 3)");
        });
        // Line 27: they count again.
        let f20 = e.frequency(20);
        reference(&e, 20, 2);
        assert_eq!(e.frequency(20), f20 + 10);
        e.write_at(&[9; 8], 21 * SEG, false).unwrap();
        assert!(e.frequency(21) > 0);
        e.shutdown().unwrap();
    }
}
