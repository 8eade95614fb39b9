//! The live what-if (`serve --whatif POLICIES`): what another policy, or a
//! cache from ¼× to 4× this one, would do with the workload being served.
//!
//! **How.** Miniature simulations (SHARDS's spatial sampling, Waldspurger
//! et al., FAST'15, as `mrc --sample` runs them): a segment is kept when
//! the hash of its number falls under the sample rate `R`, and each policy
//! at each size `C` runs the simulator's own code over the kept segments in a
//! cache of `R × C` slots; its misses, write-backs and backing traffic,
//! divided by `R`, estimate the full cache's, and a miss ratio is that
//! estimate over the accesses of *every* segment (counted, not sampled), as
//! `mrc`'s miniature runs do: dividing by the sampled accesses instead is
//! biased whenever the sample holds more or fewer of the hot segments than
//! its share (on an MSR cut at R = 0.6, +0.09 at every size). With `R = 1`
//! (small caches, or enough memory) the runs are exact simulations of the
//! live stream.
//! Segments are the pages; every access is taken whole (a write of part of
//! a segment counts as a write of it, as `serve` decides per segment). Plain
//! `lru` in write-back runs once for every size, from stack distances
//! ([`ssdcache::mrc::LiveLru`], exactly an LRU run at each size), instead of
//! once per size: the shadow's work per access, measured at ~8.5 µs for
//! `lru` and `s3fifo` at eight sizes each, was what it took from the hit path.
//!
//! **Fixed memory.** `R` is chosen once, from `--whatif-memory` and the
//! number of slots the runs hold in all (their sizes summed, per policy):
//! [`BYTES_PER_SLOT`] each, a generous figure for a simulator's entry and its
//! ghost. **Off the request path**: requests reach the shadow's thread
//! through a bounded queue ([`crate::tap_queue`]), dropped (and counted)
//! when it is full.
//!
//! **Windows.** Counts since the start, and over the last hour: the thread
//! keeps one snapshot of every run's counters per minute, 60 at most.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ssdcache::metrics::Counters;
use ssdcache::mrc::sample::Sampler;
use ssdcache::mrc::LiveLru;
use ssdcache::policy::registry::{self, BuildCtx};
use ssdcache::policy::{Mode, Policy};
use ssdcache::sim::{SimConfig, Simulator};
use ssdcache::trace::{Op, Request, Unit};
use ssdcache_block::sync::lock;

use crate::tap_queue::{drain, TapQueue};

/// The sizes simulated, as multiples of the cache's own.
pub const SIZES: [f64; 8] = [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0];
/// Memory charged per simulated slot when choosing the sample rate.
pub const BYTES_PER_SLOT: u64 = 400;
/// The default `--whatif-memory`.
pub const DEFAULT_MEMORY: u64 = 64 << 20;
/// Requests the queue holds before it drops.
pub const QUEUE: usize = 65_536;
/// At most this many policies shadowed.
pub const MAX_POLICIES: usize = 8;
/// The hash seed (any fixed one; the same every run, so runs compare).
const SEED: u64 = 0x5eed_ca5e;

/// What the shadow runs: policy specs (the running one among them, or not),
/// in the cache's geometry and mode.
#[derive(Clone, Debug)]
pub struct WhatIfConfig {
    pub policies: Vec<String>,
    pub memory: u64,
    pub slots: u64,
    pub segment_bytes: u64,
    pub mode: Mode,
}

/// One request as the shadow sees it.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub op: Op,
    pub offset: u64,
    pub len: u64,
}

/// One policy at one size.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Point {
    pub cache_bytes: u64,
    /// Miss ratios over segment accesses (`None`: none seen).
    pub miss_ratio: Option<f64>,
    pub read_miss_ratio: Option<f64>,
    pub write_miss_ratio: Option<f64>,
    /// Estimated traffic to the backing store, in bytes: segments read in
    /// (fills, read misses) and written (write-backs, write-through).
    pub backing_read_bytes: f64,
    pub backing_write_bytes: f64,
}

/// Every size of one policy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Curve {
    pub policy: String,
    pub points: Vec<Point>,
}

/// What `ssdcache whatif` and `status --json` show.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct WhatIfReport {
    pub sample_rate: f64,
    /// What the runs are charged ([`BYTES_PER_SLOT`] per slot they hold).
    pub memory_bytes: u64,
    pub cache_bytes: u64,
    /// Requests seen, and dropped because the queue was full.
    pub requests: u64,
    pub dropped: u64,
    pub since_start: Vec<Curve>,
    /// Over the last hour (since the start, if that is less).
    pub last_hour: Vec<Curve>,
    /// Seconds the last-hour window spans.
    pub last_hour_seconds: f64,
}

#[derive(Default)]
struct Published {
    report: WhatIfReport,
}

/// The running shadow: its queue and thread.
pub struct Shadow {
    queue: Arc<TapQueue<Access>>,
    published: Arc<Mutex<Published>>,
    thread: Option<JoinHandle<()>>,
}

impl WhatIfConfig {
    /// The sample rate that keeps the runs within `memory`.
    pub fn sample_rate(&self) -> f64 {
        let slots: f64 = SIZES.iter().map(|m| m * self.slots as f64).sum::<f64>() * self.policies.len() as f64;
        (self.memory as f64 / (slots * BYTES_PER_SLOT as f64)).min(1.0)
    }

    /// Checks the list (known policies that decide per access, at most
    /// [`MAX_POLICIES`]) and the memory (enough for a run of a few slots).
    pub fn check(&self) -> Result<(), String> {
        if self.policies.is_empty() || self.policies.len() > MAX_POLICIES {
            return Err(format!("1 to {MAX_POLICIES} policies, not {}", self.policies.len()));
        }
        for p in &self.policies {
            let ctx = BuildCtx { capacity: 16, mode: self.mode, page_bytes: self.segment_bytes };
            let (policy, _) = registry::build(p, &ctx).map_err(|e| format!("{p}: {e}"))?;
            if policy.needs_future() || policy.has_maintenance() {
                return Err(format!(
                    "{p}: the what-if runs policies that decide on each access (not offline bounds or PWC's procedures)"
                ));
            }
        }
        let rate = self.sample_rate();
        if rate < 1.0 && rate * self.slots as f64 * SIZES[0] < 8.0 {
            return Err(format!(
                "{} bytes of what-if memory sample 1 segment in {:.0}: too few for a quarter of this cache; give more",
                self.memory,
                1.0 / rate
            ));
        }
        Ok(())
    }
}

impl Shadow {
    /// Starts the shadow's thread; `config` must have passed [`WhatIfConfig::check`].
    pub fn start(config: WhatIfConfig) -> std::io::Result<Shadow> {
        let queue = Arc::new(TapQueue::new(QUEUE));
        let published = Arc::new(Mutex::new(Published::default()));
        let (p, q) = (published.clone(), queue.clone());
        let thread = std::thread::Builder::new().name("ssdcache-whatif".into()).spawn(move || run(config, &q, p))?;
        Ok(Shadow { queue, published, thread: Some(thread) })
    }

    /// Hands a request over; drops (and counts) it if the queue is full.
    pub fn push(&self, a: Access) {
        self.queue.push(a);
    }

    pub fn report(&self) -> WhatIfReport {
        let mut r = lock(&self.published).report.clone();
        r.dropped = self.queue.dropped();
        r
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        self.queue.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: every run fed every sampled segment, the report published
/// twice a second, a snapshot kept every minute.
fn run(cfg: WhatIfConfig, q: &TapQueue<Access>, published: Arc<Mutex<Published>>) {
    let rate = cfg.sample_rate();
    let sampler = Sampler::new(rate, SEED);
    let rate = sampler.rate();
    let sizes: Vec<u64> = SIZES.iter().map(|m| ((m * cfg.slots as f64).round() as u64).max(1)).collect();
    // The runs' capacities: each size scaled by the rate.
    let scaled: Vec<u64> = sizes.iter().map(|&c| ((c as f64 * rate).round() as u64).max(1)).collect();
    let stacked = |p: &str| p.trim() == "lru" && cfg.mode == Mode::WriteBack;
    let mut stacks: Vec<LiveLru> = Vec::new();
    let mut policies: Vec<Box<dyn Policy>> = Vec::new();
    let mut held = 0u64;
    for p in &cfg.policies {
        if stacked(p) {
            let max = *scaled.iter().max().expect("sizes");
            stacks.push(LiveLru::bounded(max));
            held += 2 * max;
            continue;
        }
        for (&c, &capacity) in sizes.iter().zip(&scaled) {
            let capacity = capacity as usize;
            held += capacity as u64;
            let ctx = BuildCtx { capacity, mode: cfg.mode, page_bytes: cfg.segment_bytes };
            match registry::build(p, &ctx) {
                Ok((policy, _)) => policies.push(policy),
                Err(e) => {
                    log::error!("what-if: {p} at {c} slots: {e}; the what-if stops");
                    return;
                }
            }
        }
    }
    let mut sims: Vec<Simulator> =
        policies.iter_mut().map(|p| Simulator::new(p.as_mut(), SimConfig { page_bytes: 1 })).collect();
    let base = Report0 { rate, memory: held * BYTES_PER_SLOT, sizes: &sizes, cfg: &cfg };
    // Every segment access, sampled or not: (reads, writes).
    let mut all = Totals::default();
    let mut minutes: VecDeque<(Instant, Vec<Counters>, Totals)> = VecDeque::new();
    let started = Instant::now();
    minutes.push_back((started, vec![Counters::default(); cfg.policies.len() * sizes.len()], all));
    let (mut requests, mut last_publish) = (0u64, Instant::now());
    let mut time = 0u64;
    drain(q, |batch, _closed| {
        for a in batch.drain(..) {
            requests += 1;
            let seg = cfg.segment_bytes;
            let (first, last) = (a.offset / seg, (a.offset + a.len.max(1) - 1) / seg);
            match a.op {
                Op::Read => all.reads += last - first + 1,
                Op::Write => all.writes += last - first + 1,
                Op::Trim => {}
            }
            for key in (first..=last).filter(|&k| sampler.keep(k)) {
                time += 1;
                let r = Request { time, addr: key, len: 1, dev: 0, op: a.op };
                if a.op != Op::Trim {
                    // (a trim is not a stack operation: LRU ignores it here)
                    stacks.iter_mut().for_each(|l| l.access(key, a.op == Op::Write));
                }
                for s in &mut sims {
                    // (a key too large for the simulator's page keys is
                    // beyond any disk served here)
                    let _ = s.request(&r, Unit::Pages);
                }
            }
        }
        if last_publish.elapsed() >= Duration::from_millis(500) {
            last_publish = Instant::now();
            // Every policy's counters at every size, in the list's order.
            let (mut si, mut li) = (0, 0);
            let mut now: Vec<Counters> = Vec::with_capacity(cfg.policies.len() * sizes.len());
            for p in &cfg.policies {
                if stacked(p) {
                    now.extend(stacks[li].at(&scaled).into_iter().map(stack_counters));
                    li += 1;
                } else {
                    now.extend(sims[si..si + sizes.len()].iter().map(|s| s.counters.clone()));
                    si += sizes.len();
                }
            }
            if minutes.back().is_some_and(|(t, _, _)| t.elapsed() >= Duration::from_secs(60)) {
                minutes.push_back((Instant::now(), now.clone(), all));
                if minutes.len() > 61 {
                    minutes.pop_front();
                }
            }
            let (t0, hour_ago, all_then) =
                minutes.front().map(|(t, c, a)| (*t, c.clone(), *a)).unwrap_or((started, now.clone(), all));
            let report = WhatIfReport {
                sample_rate: rate,
                memory_bytes: base.memory,
                cache_bytes: cfg.slots * cfg.segment_bytes,
                requests,
                dropped: 0,
                since_start: base.curves(&now, None, all),
                last_hour: base.curves(&now, Some(&hour_ago), all.minus(all_then)),
                last_hour_seconds: t0.elapsed().as_secs_f64(),
            };
            lock(&published).report = report;
        }
    });
}

/// An LRU run's counters, from its stack: write-back, write-allocate, whole
/// segments, so a read miss is one fetch and a write miss none.
fn stack_counters(l: ssdcache::mrc::LiveCounts) -> Counters {
    Counters {
        pages: l.read_pages + l.write_pages,
        hits: l.read_hits + l.write_hits,
        read_pages: l.read_pages,
        read_hits: l.read_hits,
        write_pages: l.write_pages,
        write_hits: l.write_hits,
        backing_reads: l.read_pages - l.read_hits,
        backing_writes: l.writebacks,
        dirty_writebacks: l.writebacks,
        ..Default::default()
    }
}

/// Segment accesses of every request, sampled or not.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    reads: u64,
    writes: u64,
}

impl Totals {
    fn minus(self, then: Totals) -> Totals {
        Totals { reads: self.reads - then.reads, writes: self.writes - then.writes }
    }
}

/// What turns counters into curves.
struct Report0<'a> {
    rate: f64,
    memory: u64,
    sizes: &'a [u64],
    cfg: &'a WhatIfConfig,
}

impl Report0<'_> {
    /// The curves of `now`'s counters, minus `since`'s; `all`: the
    /// accesses in that window.
    fn curves(&self, now: &[Counters], since: Option<&[Counters]>, all: Totals) -> Vec<Curve> {
        // Sampled misses scaled back, over every access (at most 1).
        let ratio = |miss: u64, all: u64| (all > 0).then(|| (miss as f64 / self.rate / all as f64).min(1.0));
        let seg = self.cfg.segment_bytes as f64;
        self.cfg
            .policies
            .iter()
            .enumerate()
            .map(|(pi, p)| Curve {
                policy: p.clone(),
                points: self
                    .sizes
                    .iter()
                    .enumerate()
                    .map(|(si, &c)| {
                        let i = pi * self.sizes.len() + si;
                        let d = delta(&now[i], since.map(|s| &s[i]));
                        Point {
                            cache_bytes: c * self.cfg.segment_bytes,
                            miss_ratio: ratio(d.pages - d.hits, all.reads + all.writes),
                            read_miss_ratio: ratio(d.read_pages - d.read_hits, all.reads),
                            write_miss_ratio: ratio(d.write_pages - d.write_hits, all.writes),
                            backing_read_bytes: d.backing_reads as f64 * seg / self.rate,
                            backing_write_bytes: d.backing_writes as f64 * seg / self.rate,
                        }
                    })
                    .collect(),
            })
            .collect()
    }
}

/// The counts `a` added after `b`.
fn delta(a: &Counters, b: Option<&Counters>) -> Counters {
    let Some(b) = b else { return a.clone() };
    Counters {
        pages: a.pages - b.pages,
        hits: a.hits - b.hits,
        read_pages: a.read_pages - b.read_pages,
        read_hits: a.read_hits - b.read_hits,
        write_pages: a.write_pages - b.write_pages,
        write_hits: a.write_hits - b.write_hits,
        backing_reads: a.backing_reads - b.backing_reads,
        backing_writes: a.backing_writes - b.backing_writes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(policies: &[&str], slots: u64, memory: u64) -> WhatIfConfig {
        WhatIfConfig {
            policies: policies.iter().map(|s| s.to_string()).collect(),
            memory,
            slots,
            segment_bytes: 1 << 20,
            mode: Mode::WriteBack,
        }
    }

    fn wait_for(s: &Shadow, requests: u64) -> WhatIfReport {
        let t = Instant::now();
        loop {
            let r = s.report();
            if r.requests >= requests || t.elapsed() > Duration::from_secs(30) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn an_exact_shadow_equals_the_simulator() {
        // 64 slots, plenty of memory: rate 1, every run exact.
        let c = cfg(&["lru", "s3fifo"], 64, DEFAULT_MEMORY);
        c.check().unwrap();
        assert_eq!(c.sample_rate(), 1.0);
        let s = Shadow::start(c).unwrap();
        let mut x = 7u64;
        let mut keys = Vec::new();
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // A skewed key over 200 segments.
            let k = ((x >> 33) % 200).min((x >> 20) % 200);
            keys.push(k);
            s.push(Access { op: if x.is_multiple_of(5) { Op::Write } else { Op::Read }, offset: k << 20, len: 4096 });
        }
        let r = wait_for(&s, 20_000);
        assert_eq!((r.requests, r.dropped), (20_000, 0));
        // The simulator, run here on the same keys at every size, for both
        // policies (lru through the shadow's stack, s3fifo through its runs):
        // the same miss ratio and write-backs.
        let ops: Vec<Op> = {
            let mut x = 7u64;
            (0..keys.len())
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if x.is_multiple_of(5) {
                        Op::Write
                    } else {
                        Op::Read
                    }
                })
                .collect()
        };
        for (pi, policy) in ["lru", "s3fifo"].iter().enumerate() {
            for p in &r.since_start[pi].points {
                let capacity = (p.cache_bytes >> 20) as usize;
                let ctx = BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 1 };
                let mut built = registry::build(policy, &ctx).unwrap().0;
                let mut sim = Simulator::new(built.as_mut(), SimConfig { page_bytes: 1 });
                for (i, (&k, &op)) in keys.iter().zip(&ops).enumerate() {
                    sim.request(&Request { time: i as u64 + 1, addr: k, len: 1, dev: 0, op }, Unit::Pages).unwrap();
                }
                let c = &sim.counters;
                let want = (c.pages - c.hits) as f64 / c.pages as f64;
                assert_eq!(p.miss_ratio, Some(want), "{policy} at {capacity} slots");
                assert_eq!(p.backing_write_bytes, (c.dirty_writebacks << 20) as f64, "{policy} at {capacity} slots");
            }
        }
        // Bigger caches miss less; the hour window holds everything so far.
        let lru_curve: Vec<f64> = r.since_start[0].points.iter().map(|p| p.miss_ratio.unwrap()).collect();
        assert!(lru_curve.windows(2).all(|w| w[1] <= w[0]), "{lru_curve:?}");
        assert_eq!(r.last_hour, r.since_start);
    }

    #[test]
    fn policies_and_memory_are_checked() {
        assert!(cfg(&["belady"], 64, DEFAULT_MEMORY).check().unwrap_err().contains("decide on each access"));
        assert!(cfg(&["pwc"], 64, DEFAULT_MEMORY).check().unwrap_err().contains("decide on each access"));
        assert!(cfg(&["nosuch"], 64, DEFAULT_MEMORY).check().unwrap_err().contains("nosuch"));
        assert!(cfg(&[], 64, DEFAULT_MEMORY).check().unwrap_err().contains("1 to 8 policies"));
        let many = ["lru"; 9];
        assert!(cfg(&many, 64, DEFAULT_MEMORY).check().is_err());
        assert!(cfg(&["lru"], 1 << 20, 64 << 10).check().unwrap_err().contains("too few"));
        let big = cfg(&["lru", "s3fifo", "arc"], 1 << 20, DEFAULT_MEMORY);
        assert!(big.sample_rate() < 0.01 && big.check().is_ok(), "a large cache is sampled");
    }
}
