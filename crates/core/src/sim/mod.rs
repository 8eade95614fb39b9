//! The engine that drives a policy over a trace: splits requests into page
//! accesses, hands each to the policy, and charges the effects to counters.

use crate::key::{page_key, PAGE_BITS};
use crate::metrics::Counters;
use crate::policy::{Access, Effects, Io, PageRead, Policy, ReadTally, Tier, NEVER};
use crate::trace::{Op, Request, TraceError, TraceReader, Unit, BATCH};
use thiserror::Error;

pub mod backing;
pub mod flags;
pub mod future;
pub mod objects;
pub mod queue;
pub mod relative;
pub mod run;
pub mod series;
pub mod source;
use crate::Nanos;
pub use backing::{Backing, Devices, Layout, LayoutScan};
pub use future::NextUses;
pub use queue::QueueSpec;
pub use run::{run, RunSpec};
pub use series::Series;
pub use source::TraceSource;

#[derive(Debug, Error)]
pub enum SimError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("request {request}: {msg}")]
    Request { request: u64, msg: String },
    #[error(transparent)]
    Spec(#[from] crate::policy::SpecError),
    /// Bad settings: a cache smaller than a page, a generator spec that does not parse…
    #[error("{0}")]
    Config(String),
}

impl SimError {
    /// A trace that gave no request, empty or every line skipped as malformed
    /// (`skipped`): there is nothing `to` do (`"to analyze"`, `"to simulate"`),
    /// and a report of zeros would read as a result.
    pub fn no_requests(to: &str, skipped: u64) -> SimError {
        let skipped = match skipped {
            0 => String::new(),
            n => format!(" ({n} malformed lines skipped)"),
        };
        SimError::Config(format!("no requests {to}{skipped}"))
    }
}

/// The page accesses of one request: keys and whether each page is only partly written.
#[derive(Clone, Copy, Debug)]
pub struct PageRange {
    first: u64,
    count: u64,
    /// A write leaves the first / last page partly uncovered.
    head_partial: bool,
    tail_partial: bool,
    dev: u32,
}

impl PageRange {
    /// Key of the `i`-th page (range checked by [`pages_of`]).
    #[inline]
    fn key(&self, i: u64) -> u64 {
        (self.dev as u64) << PAGE_BITS | (self.first + i)
    }

    /// The request's length in pages, for [`Access::request_pages`] (saturating).
    #[inline]
    fn request_pages(&self) -> u32 {
        u32::try_from(self.count).unwrap_or(u32::MAX)
    }

    /// The page keys, in address order.
    pub fn keys(self) -> impl Iterator<Item = u64> {
        (0..self.count).map(move |i| self.key(i))
    }
}

/// The pages request number `index` touches, with `page_bytes` pages; an error if
/// they do not fit a page key.
pub fn pages_of(r: &Request, unit: Unit, page_bytes: u64, index: u64) -> Result<PageRange, SimError> {
    page_range(r, unit, page_bytes).map_err(|fault| fault.error(r, index))
}

/// Why a request's pages do not fit page keys: small, so that [`page_range`]'s
/// result stays out of memory on the hot path (one holding a [`SimError`] does not).
#[derive(Clone, Copy, Debug)]
enum RangeFault {
    EndOverflows,
    PagesOverflow,
    BeyondDevice { last: u64 },
}

impl RangeFault {
    /// The error for request number `index`, `r`.
    #[cold]
    fn error(self, r: &Request, index: u64) -> SimError {
        let msg = match self {
            RangeFault::EndOverflows => "offset + size overflows".to_string(),
            RangeFault::PagesOverflow => "page range overflows".to_string(),
            RangeFault::BeyondDevice { last } => {
                format!("page {last} of device {} is beyond the 2^{PAGE_BITS} pages a device may have", r.dev)
            }
        };
        SimError::Request { request: index, msg }
    }
}

/// [`pages_of`] with the error still to be worded.
#[inline(always)]
fn page_range(r: &Request, unit: Unit, page_bytes: u64) -> Result<PageRange, RangeFault> {
    let (first, count, head_partial, tail_partial) = match unit {
        Unit::Pages => (r.addr, r.len as u64, false, false),
        Unit::Bytes => {
            let end = r.addr.checked_add(r.len as u64).ok_or(RangeFault::EndOverflows)?;
            let first = r.addr / page_bytes;
            let last = (end - 1) / page_bytes;
            let is_write = r.op == Op::Write;
            (first, last - first + 1, is_write && !r.addr.is_multiple_of(page_bytes), is_write && end % page_bytes != 0)
        }
    };
    let last = first.checked_add(count - 1).ok_or(RangeFault::PagesOverflow)?;
    // Key traces on device 0 use their keys as they are (any u64: e.g. a page
    // stream written by `trace convert --to keys` carries device bits already).
    let raw_keys = unit == Unit::Pages && r.dev == 0;
    if !raw_keys && page_key(r.dev, last).is_none() {
        return Err(RangeFault::BeyondDevice { last });
    }
    Ok(PageRange { first, count, head_partial, tail_partial, dev: r.dev })
}

/// Simulation settings.
#[derive(Clone, Copy, Debug)]
pub struct SimConfig {
    pub page_bytes: u64,
}

/// Replays requests through a policy and counts; with a [`Backing`], charges
/// the policy's I/O to a device model too.
pub struct Simulator<'p> {
    policy: &'p mut dyn Policy,
    /// The policy's [`Policy::has_maintenance`], asked once.
    maintains: bool,
    devices: Devices<'p>,
    series: Option<Series>,
    cfg: SimConfig,
    fx: Effects,
    seq: u64,
    requests: u64,
    /// Treat every request as page-aligned: no access is partial.
    align_pages: bool,
    /// Leading requests that warm the cache and devices uncounted (`--warmup`).
    warmup: u64,
    /// The request count at which the warm-up ends (`u64::MAX` without one):
    /// one compare per request.
    warmup_ends: u64,
    /// Next uses, for offline policies (Belady).
    future: Option<NextUses>,
    /// Whether to try the policy's [`Policy::read_pages`] (until it declines once).
    fast_reads: bool,
    /// The pending run of one-page reads (kept to reuse its allocation).
    reads: Vec<PageRead>,
    pub counters: Counters,
}

impl<'p> Simulator<'p> {
    pub fn new(policy: &'p mut dyn Policy, cfg: SimConfig) -> Self {
        assert!(cfg.page_bytes > 0);
        Simulator {
            maintains: policy.has_maintenance(),
            policy,
            devices: Devices::default(),
            series: None,
            cfg,
            fx: Effects::new(),
            seq: 0,
            requests: 0,
            align_pages: false,
            warmup: 0,
            warmup_ends: u64::MAX,
            future: None,
            fast_reads: true,
            reads: Vec::with_capacity(BATCH),
            counters: Counters::default(),
        }
    }

    /// Charges every backing read and write (and trims) to `backing`'s device.
    pub fn with_backing(mut self, backing: &'p mut Backing) -> Self {
        self.devices.backing = Some(backing);
        self
    }

    /// Charges read hits, fills and write-back reads to the cache's own device.
    pub fn with_cache_device(mut self, cache: &'p mut Backing) -> Self {
        self.devices.cache = Some(cache);
        self
    }

    /// Gives an offline policy its next uses, one per page access in trace
    /// order ([`future`]). Without them, [`run`](Self::run) computes them in
    /// memory from the whole trace.
    pub fn with_future(mut self, next: NextUses) -> Self {
        self.future = Some(next);
        self
    }

    /// With `on`, every request is taken as covering its pages whole (rounded
    /// out to page boundaries), so no write is partial and none needs a
    /// read-for-write: the view of an FTL whose host sends page-aligned LBAs
    /// (paper 001's simulator). Off by default.
    pub fn align_pages(mut self, on: bool) -> Self {
        self.align_pages = on;
        self
    }

    /// Runs the first `requests` requests through the policy and devices
    /// without counting them (`--warmup`): counters, series and device stats
    /// start at the first request after them.
    pub fn with_warmup(mut self, requests: u64) -> Self {
        self.warmup = requests;
        self.warmup_ends = if requests > 0 { requests } else { u64::MAX };
        self
    }

    /// Forgets what the warm-up counted: counters and series start over, and
    /// the devices count from here ([`Backing::warm`]).
    #[cold]
    fn end_warmup(&mut self) {
        self.counters = Counters::default();
        self.series = self.series.as_ref().map(Series::emptied);
        for d in [self.devices.backing.as_deref_mut(), self.devices.cache.as_deref_mut()].into_iter().flatten() {
            d.warm = Some(d.device.stats());
        }
    }

    /// Keeps a time series with intervals of `interval` ns of trace time (at
    /// most [`series::MAX_INTERVALS`] of them with requests, or the run fails).
    pub fn with_series(mut self, interval: Nanos) -> Self {
        self.series = Some(Series::new(interval));
        self
    }

    /// The series so far (empty without [`with_series`](Self::with_series)).
    pub fn take_series(&mut self) -> Vec<crate::metrics::IntervalStats> {
        self.series.take().map(Series::finish).unwrap_or_default()
    }

    /// Fails once the series has more busy intervals than it keeps, or the
    /// next uses could not be read (checked per batch and per request, off
    /// the per-page path).
    fn check_after(&mut self) -> Result<(), SimError> {
        if let Some(e) = self.future.as_mut().and_then(NextUses::take_error) {
            return Err(e);
        }
        match &self.series {
            Some(s) if s.overflowed() => Err(SimError::Config(s.overflow_error())),
            _ => Ok(()),
        }
    }

    /// Runs the policy's periodic work due at `now` (PWC's procedure): its I/O
    /// is charged to the devices and counted as maintenance.
    fn maintain(&mut self, now: Nanos) {
        self.fx.clear();
        self.policy.tick(now, &mut self.fx);
        if self.fx.io.is_empty() {
            return;
        }
        let t = self.devices.charge(&self.fx, None);
        let c = &mut self.counters;
        for io in &self.fx.io {
            match *io {
                Io::Fetch { pages, .. } | Io::PadRead { pages, .. } => c.maintenance_reads += pages as u64,
                Io::ReadForWrite { .. } => c.maintenance_reads += 1,
                Io::WriteBack { pages, .. } => c.maintenance_writes += pages as u64,
                Io::WriteThrough { .. } => c.maintenance_writes += 1,
                Io::CacheWrite { .. } => c.maintenance_cache_writes += 1,
                Io::Evict { .. } | Io::Invalidate { .. } => {}
            }
        }
        c.maintenance_ns += t;
        if let Some(s) = self.series.as_mut() {
            s.maintenance(now, t);
        }
    }

    /// Replays a whole trace, drains, and returns the counters.
    pub fn run(self, reader: &mut dyn TraceReader) -> Result<Counters, SimError> {
        self.run_with_series(reader).map(|(c, _)| c)
    }

    /// As [`run`](Self::run), and the time series if one was asked for.
    pub fn run_with_series(
        mut self,
        reader: &mut dyn TraceReader,
    ) -> Result<(Counters, Vec<crate::metrics::IntervalStats>), SimError> {
        if self.policy.needs_future() && self.future.is_none() {
            let requests = crate::trace::read_all(reader)?;
            let next = future::next_uses(&requests, reader.unit(), self.cfg.page_bytes)?;
            self.future = Some(NextUses::in_memory(next));
            self.replay(&requests, reader.unit())?;
        } else {
            let unit = reader.unit();
            let mut batch = Vec::with_capacity(BATCH);
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                self.replay(&batch, unit)?;
            }
        }
        let series = self.take_series();
        Ok((self.finish(), series))
    }

    /// Replays a batch of requests.
    pub fn replay(&mut self, requests: &[Request], unit: Unit) -> Result<(), SimError> {
        // One branch per batch picks the loop: a run with nothing but a policy
        // (the usual `sim`) gets one with the device, series, future and
        // maintenance paths compiled out.
        if self.plain() {
            self.replay_plain(requests, unit)?;
        } else {
            for r in requests {
                let pr = page_range(r, unit, self.cfg.page_bytes).map_err(|fault| fault.error(r, self.requests))?;
                self.serve::<false>(r, pr, unit);
            }
        }
        self.check_after()
    }

    /// The loop of a [`plain`](Self::plain) run: runs of one-page read requests
    /// go to the policy's [`Policy::read_pages`] in one call, the rest (and
    /// everything, if the policy has no such path) one by one.
    fn replay_plain(&mut self, requests: &[Request], unit: Unit) -> Result<(), SimError> {
        let mut reads = std::mem::take(&mut self.reads);
        // The pending run is requests[start..i], its pages in `reads`.
        let mut start = 0;
        // Every request counts one whichever way it goes, so requests[i] is
        // number `self.requests + i`: the one that ends the warm-up is at
        // `warm_at`, and goes the slow way, which ends it.
        let warm_at =
            self.warmup_ends.checked_sub(self.requests).map_or(usize::MAX, |d| d.min(usize::MAX as u64) as usize);
        for (i, r) in requests.iter().enumerate() {
            let pr = match page_range(r, unit, self.cfg.page_bytes) {
                Ok(pr) => pr,
                Err(fault) => {
                    self.read_run(&requests[start..i], &mut reads, unit);
                    self.reads = reads;
                    return Err(fault.error(r, self.requests));
                }
            };
            let fast = self.fast_reads && r.op == Op::Read && pr.count == 1 && i != warm_at;
            if fast {
                let bytes = page_share(r, unit, &pr, 0, self.cfg.page_bytes);
                reads.push(PageRead { key: pr.key(0), time: r.time, bytes });
                continue;
            }
            self.read_run(&requests[start..i], &mut reads, unit);
            start = i + 1;
            self.serve::<true>(r, pr, unit);
        }
        self.read_run(&requests[start..], &mut reads, unit);
        self.reads = reads;
        Ok(())
    }

    /// Serves and counts `run`, one-page read requests whose pages are in
    /// `reads`, as [`serve`](Self::serve) would: through the policy's fast path
    /// if it takes it, else one by one. Empties `reads`.
    fn read_run(&mut self, run: &[Request], reads: &mut Vec<PageRead>, unit: Unit) {
        if reads.is_empty() {
            return;
        }
        let mut t = ReadTally::default();
        if !self.policy.read_pages(reads, self.seq, &mut t) {
            // (no fast path: not asked again in this run)
            self.fast_reads = false;
            for r in run {
                // (their ranges were checked when the run was gathered)
                if let Ok(pr) = page_range(r, unit, self.cfg.page_bytes) {
                    self.serve::<true>(r, pr, unit);
                }
            }
            reads.clear();
            return;
        }
        let n = reads.len() as u64;
        let misses = n - t.hits;
        let c = &mut self.counters;
        c.requests += n;
        c.read_requests += n;
        c.read_bytes += match unit {
            Unit::Pages => n * self.cfg.page_bytes,
            Unit::Bytes => run.iter().map(|r| r.len as u64).sum::<u64>(),
        };
        c.request_hits += t.hits;
        c.pages += n;
        c.read_pages += n;
        c.hits += t.hits;
        c.read_hits += t.hits;
        // (each miss is a one-page fetch, and a miss whose evictions were all clean)
        c.backing_reads += misses;
        c.read_overwrite_clean += misses;
        c.cache_writes += t.fills;
        c.evictions += t.evictions;
        c.served_pages += t.hits;
        c.served_bytes += t.hit_bytes;
        self.requests += n;
        self.seq += n;
        reads.clear();
    }

    /// Whether this run is only a policy and counters: no devices, no series,
    /// no next uses, no periodic work.
    fn plain(&self) -> bool {
        !self.maintains && !self.devices.any() && self.series.is_none() && self.future.is_none()
    }

    /// Tells the policy a request entered the device queue (QLRU's lookahead):
    /// each of its pages, as [`Policy::queued`].
    pub fn queued(&mut self, r: &Request, unit: Unit, index: u64) -> Result<(), SimError> {
        let pr = pages_of(r, unit, self.cfg.page_bytes, index)?;
        for key in pr.keys() {
            let a = Access {
                time: r.time,
                key,
                op: r.op,
                partial: false,
                seq: self.seq,
                next_use: NEVER,
                request_pages: pr.request_pages(),
            };
            self.policy.queued(&a);
        }
        Ok(())
    }

    /// Serves one request: the policy's maintenance due by its arrival, then
    /// every page through the policy, the policy's I/O charged to the devices.
    /// Returns the device time the request cost (0 without devices).
    pub fn request(&mut self, r: &Request, unit: Unit) -> Result<Nanos, SimError> {
        let pr = pages_of(r, unit, self.cfg.page_bytes, self.requests)?;
        let busy = self.serve::<false>(r, pr, unit);
        self.check_after()?;
        Ok(busy)
    }

    /// [`request`](Self::request) once its pages are known (the hot loop: no
    /// error path per request). `PLAIN`: the run is [`plain`](Self::plain), so
    /// its device, series, future and maintenance paths are left out.
    #[inline(always)]
    fn serve<const PLAIN: bool>(&mut self, r: &Request, pr: PageRange, unit: Unit) -> Nanos {
        let mut busy = 0;
        if !PLAIN && self.maintains {
            self.maintain(r.time);
        }
        if self.requests == self.warmup_ends {
            self.end_warmup();
        }
        let keeps_series = !PLAIN && self.series.is_some();
        let c = &self.counters;
        let before = if keeps_series {
            (c.pages, c.hits, c.read_pages, c.read_hits, c.served_pages, c.served_bytes)
        } else {
            Default::default()
        };
        // (an adaptive split, ABM's P, only when a series is kept: off the hot path otherwise)
        let split_before = if keeps_series { self.policy.split() } else { None };
        self.requests += 1;
        // (page-unit traces give lengths in pages)
        let bytes = match unit {
            Unit::Bytes => r.len as u64,
            Unit::Pages => r.len as u64 * self.cfg.page_bytes,
        };
        let c = &mut self.counters;
        c.requests += 1;
        match r.op {
            Op::Read => {
                c.read_requests += 1;
                c.read_bytes += bytes;
            }
            Op::Write => {
                c.write_requests += 1;
                c.write_bytes += bytes;
            }
            Op::Trim => c.trim_requests += 1,
        }
        // (most requests are one page: that case gets no loop)
        let all_hit = if pr.count == 1 {
            let partial = !self.align_pages && (pr.head_partial || pr.tail_partial);
            self.serve_page::<PLAIN>(r, &pr, 0, partial, unit, &mut busy)
        } else {
            let mut all_hit = true;
            for p in 0..pr.count {
                let partial =
                    !self.align_pages && ((p == 0 && pr.head_partial) || (p == pr.count - 1 && pr.tail_partial));
                all_hit &= self.serve_page::<PLAIN>(r, &pr, p, partial, unit, &mut busy);
            }
            all_hit
        };
        if all_hit && r.op != Op::Trim {
            self.counters.request_hits += 1;
        }
        if let Some(s) = self.series.as_mut().filter(|_| keeps_series) {
            let c = &self.counters;
            let bytes = if r.op == Op::Trim { 0 } else { bytes };
            let delta = crate::metrics::IntervalStats {
                bytes,
                pages: c.pages - before.0,
                hits: c.hits - before.1,
                read_pages: c.read_pages - before.2,
                read_hits: c.read_hits - before.3,
                served_pages: c.served_pages - before.4,
                served_bytes: c.served_bytes - before.5,
                service_ns: busy,
                ..Default::default()
            };
            s.request(r.time, &delta);
            if let (Some(a), Some(b)) = (split_before, self.policy.split()) {
                s.split(r.time, b.sum - a.sum, b.accesses - a.accesses, b.capacity);
            }
        }
        busy
    }

    /// Page `p` of request `r` through the policy, counted and charged; whether it hit.
    #[inline(always)]
    fn serve_page<const PLAIN: bool>(
        &mut self,
        r: &Request,
        pr: &PageRange,
        p: u64,
        partial: bool,
        unit: Unit,
        busy: &mut Nanos,
    ) -> bool {
        let next_use = if PLAIN { NEVER } else { self.future.as_mut().map_or(NEVER, NextUses::next_use) };
        let a = Access {
            time: r.time,
            key: pr.key(p),
            op: r.op,
            partial,
            seq: self.seq,
            next_use,
            request_pages: pr.request_pages(),
        };
        self.seq += 1;
        self.fx.clear();
        self.policy.access(&a, &mut self.fx);
        account(&mut self.counters, &a, &self.fx, page_share(r, unit, pr, p, self.cfg.page_bytes));
        if !PLAIN && self.devices.any() {
            let read_hit = (self.fx.hit && r.op == Op::Read).then_some(a.key);
            *busy += self.devices.charge(&self.fx, read_hit);
            if r.op == Op::Trim {
                self.devices.trim(a.key);
            }
        }
        self.fx.hit
    }

    /// Drains dirty data (counted as `drain_writes`) and returns the counters.
    pub fn finish(mut self) -> Counters {
        if self.warmup > 0 && self.requests <= self.warmup {
            // the warm-up took the whole trace: nothing was counted
            self.counters = Counters::default();
            self.fx.clear();
            self.policy.drain(&mut self.fx);
            return self.counters;
        }
        self.fx.clear();
        self.policy.drain(&mut self.fx);
        for io in &self.fx.io {
            if let Io::WriteBack { pages, .. } = io {
                self.counters.drain_writes += *pages as u64;
            }
        }
        self.devices.charge(&self.fx, None);
        self.counters
    }
}

/// The bytes of request `r` that fall in its `p`-th page (of `pr`).
#[inline(always)]
fn page_share(r: &Request, unit: Unit, pr: &PageRange, p: u64, page_bytes: u64) -> u64 {
    if unit == Unit::Pages {
        return page_bytes;
    }
    let lo = (pr.first + p).saturating_mul(page_bytes);
    let end = r.addr.saturating_add(r.len as u64);
    end.min(lo.saturating_add(page_bytes)).saturating_sub(r.addr.max(lo))
}

/// Charges one access's effects to the counters; `bytes` is the request's
/// share in the page.
#[inline(always)]
fn account(c: &mut Counters, a: &Access, fx: &Effects, bytes: u64) {
    let hit = fx.hit as u64;
    match a.op {
        Op::Read => {
            c.pages += 1;
            c.read_pages += 1;
            c.hits += hit;
            c.read_hits += hit;
        }
        Op::Write => {
            c.pages += 1;
            c.write_pages += 1;
            c.hits += hit;
            c.write_hits += hit;
        }
        Op::Trim => c.trim_pages += 1,
    }
    let mut evicted_dirty = false;
    // Whether the access's own data came from or went to the backing device.
    let mut own_backing = false;
    let mut wrote_through = false;
    for io in &fx.io {
        match *io {
            Io::Fetch { pages, .. } => {
                c.backing_reads += pages as u64;
                own_backing = true;
            }
            Io::ReadForWrite { .. } => {
                c.backing_reads += 1;
                c.read_for_write += 1;
                own_backing = true;
            }
            Io::PadRead { pages, .. } => {
                c.backing_reads += pages as u64;
                c.padding_reads += pages as u64;
            }
            Io::WriteThrough { .. } => {
                c.backing_writes += 1;
                wrote_through = true;
            }
            Io::WriteBack { pages, .. } => {
                c.backing_writes += pages as u64;
                c.dirty_writebacks += pages as u64;
            }
            Io::CacheWrite { .. } => c.cache_writes += 1,
            Io::Evict { dirty, .. } => {
                c.evictions += 1;
                evicted_dirty |= dirty;
            }
            Io::Invalidate { dirty, .. } => {
                c.invalidations += 1;
                c.dirty_discarded += dirty as u64;
            }
        }
    }
    if a.op != Op::Trim && !own_backing && !wrote_through {
        c.served_pages += 1;
        c.served_bytes += bytes;
    }
    c.write_hits_to_backing += (a.op == Op::Write && fx.hit && wrote_through) as u64;
    // Paper 003's DRAM + NVRAM caches: hits by tier, moves between tiers, and
    // the dirty page a move keeps in the cache (Write Global) but wrote back.
    let t = &fx.tier;
    if fx.tiered {
        match (a.op, t.hit_in) {
            (Op::Read, Some(Tier::Dram)) => c.read_hits_dram += 1,
            (Op::Read, Some(Tier::Nvram)) => c.read_hits_nvram += 1,
            (Op::Write, Some(Tier::Dram)) => c.write_hits_dram += 1,
            (Op::Write, Some(Tier::Nvram)) => c.write_hits_nvram += 1,
            _ => {}
        }
        c.migrations_to_nvram += t.write_purge as u64;
        c.migrations_to_dram += t.to_dram as u64;
        evicted_dirty |= t.replaced_dirty;
    }
    // (Table 1: a write hit in DRAM that moves the page to NVRAM is a write miss)
    if !fx.hit || t.write_purge {
        match (a.op, evicted_dirty) {
            (Op::Read, true) => c.read_replace_dirty += 1,
            (Op::Read, false) => c.read_overwrite_clean += 1,
            (Op::Write, true) => c.write_replace_dirty += 1,
            (Op::Write, false) => c.write_overwrite_clean += 1,
            (Op::Trim, _) => {}
        }
    }
}

#[cfg(test)]
mod tests;
