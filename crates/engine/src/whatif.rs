//! The live what-if (`serve --whatif POLICIES`): what another policy, or a
//! cache from ¼× to 4× this one, would do with the workload being served.
//!
//! **How.** Miniature simulations (SHARDS's spatial sampling, Waldspurger
//! et al., FAST'15, as `mrc --sample` runs them): a segment is kept when
//! the hash of its number falls under the sample rate `R`, and each policy
//! at each size `C` runs the simulator's own code over the kept segments in a
//! cache of `R × C` slots; its misses, write-backs and backing traffic,
//! divided by `R`, estimate the full cache's. With `R = 1` (small caches,
//! or enough memory) the runs are exact simulations of the live stream.
//! Segments are the pages; every access is taken whole (a write of part of
//! a segment counts as a write of it, as `serve` decides per segment).
//!
//! **Fixed memory.** `R` is chosen once, from `--whatif-memory` and the
//! number of slots the runs hold in all (their sizes summed, per policy):
//! [`BYTES_PER_SLOT`] each, a generous figure for a simulator's entry and its
//! ghost. **Off the request path**: requests reach the shadow's thread
//! through a bounded queue, dropped (and counted) when it is full.
//!
//! **Windows.** Counts since the start, and over the last hour: the thread
//! keeps one snapshot of every run's counters per minute, 60 at most.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ssdcache::metrics::Counters;
use ssdcache::mrc::sample::Sampler;
use ssdcache::policy::registry::{self, BuildCtx};
use ssdcache::policy::{Mode, Policy};
use ssdcache::sim::{SimConfig, Simulator};
use ssdcache::trace::{Op, Request, Unit};
use ssdcache_block::sync::lock;

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
    tx: Option<SyncSender<Access>>,
    published: Arc<Mutex<Published>>,
    dropped: Arc<AtomicU64>,
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
        if rate * self.slots as f64 * SIZES[0] < 8.0 {
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
        let (tx, rx) = sync_channel(QUEUE);
        let published = Arc::new(Mutex::new(Published::default()));
        let dropped = Arc::new(AtomicU64::new(0));
        let (p, d) = (published.clone(), dropped.clone());
        let thread = std::thread::Builder::new().name("ssdcache-whatif".into()).spawn(move || run(config, rx, p, d))?;
        Ok(Shadow { tx: Some(tx), published, dropped, thread: Some(thread) })
    }

    /// Hands a request over; drops (and counts) it if the queue is full.
    pub fn push(&self, a: Access) {
        if let Some(tx) = &self.tx {
            if let Err(TrySendError::Full(_)) = tx.try_send(a) {
                self.dropped.fetch_add(1, Relaxed);
            }
        }
    }

    pub fn report(&self) -> WhatIfReport {
        let mut r = lock(&self.published).report.clone();
        r.dropped = self.dropped.load(Relaxed);
        r
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: every run fed every sampled segment, the report published
/// twice a second, a snapshot kept every minute.
fn run(cfg: WhatIfConfig, rx: Receiver<Access>, published: Arc<Mutex<Published>>, _dropped: Arc<AtomicU64>) {
    let rate = cfg.sample_rate();
    let sampler = Sampler::new(rate, SEED);
    let rate = sampler.rate();
    let sizes: Vec<u64> = SIZES.iter().map(|m| ((m * cfg.slots as f64).round() as u64).max(1)).collect();
    let mut policies: Vec<Box<dyn Policy>> = Vec::new();
    let mut held = 0u64;
    for p in &cfg.policies {
        for &c in &sizes {
            let capacity = ((c as f64 * rate).round() as usize).max(1);
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
    let mut minutes: VecDeque<(Instant, Vec<Counters>)> = VecDeque::new();
    let started = Instant::now();
    minutes.push_back((started, vec![Counters::default(); sims.len()]));
    let (mut requests, mut last_publish) = (0u64, Instant::now());
    let mut time = 0u64;
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(a) => {
                requests += 1;
                let seg = cfg.segment_bytes;
                let (first, last) = (a.offset / seg, (a.offset + a.len.max(1) - 1) / seg);
                for key in (first..=last).filter(|&k| sampler.keep(k)) {
                    time += 1;
                    let r = Request { time, addr: key, len: 1, dev: 0, op: a.op };
                    for s in &mut sims {
                        // (a key too large for the simulator's page keys is
                        // beyond any disk served here)
                        let _ = s.request(&r, Unit::Pages);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if last_publish.elapsed() >= Duration::from_millis(500) {
            last_publish = Instant::now();
            let now: Vec<Counters> = sims.iter().map(|s| s.counters.clone()).collect();
            if minutes.back().is_some_and(|(t, _)| t.elapsed() >= Duration::from_secs(60)) {
                minutes.push_back((Instant::now(), now.clone()));
                if minutes.len() > 61 {
                    minutes.pop_front();
                }
            }
            let (t0, hour_ago) = minutes.front().map(|(t, c)| (*t, c.clone())).unwrap_or((started, now.clone()));
            let report = WhatIfReport {
                sample_rate: rate,
                memory_bytes: base.memory,
                cache_bytes: cfg.slots * cfg.segment_bytes,
                requests,
                dropped: 0,
                since_start: base.curves(&now, None),
                last_hour: base.curves(&now, Some(&hour_ago)),
                last_hour_seconds: t0.elapsed().as_secs_f64(),
            };
            lock(&published).report = report;
        }
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
    /// The curves of `now`'s counters, minus `since`'s.
    fn curves(&self, now: &[Counters], since: Option<&[Counters]>) -> Vec<Curve> {
        let ratio = |miss: u64, all: u64| (all > 0).then(|| miss as f64 / all as f64);
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
                            miss_ratio: ratio(d.pages - d.hits, d.pages),
                            read_miss_ratio: ratio(d.read_pages - d.read_hits, d.read_pages),
                            write_miss_ratio: ratio(d.write_pages - d.write_hits, d.write_pages),
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
        // The simulator, run here on the same keys at 64 slots (1x).
        let mut lru =
            registry::build("lru", &BuildCtx { capacity: 64, mode: Mode::WriteBack, page_bytes: 1 }).unwrap().0;
        let mut sim = Simulator::new(lru.as_mut(), SimConfig { page_bytes: 1 });
        let mut x = 7u64;
        for (i, &k) in keys.iter().enumerate() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = if x.is_multiple_of(5) { Op::Write } else { Op::Read };
            sim.request(&Request { time: i as u64 + 1, addr: k, len: 1, dev: 0, op }, Unit::Pages).unwrap();
        }
        let want = (sim.counters.pages - sim.counters.hits) as f64 / sim.counters.pages as f64;
        let at_1x = r.since_start[0].points.iter().find(|p| p.cache_bytes == 64 << 20).unwrap();
        assert_eq!(at_1x.miss_ratio, Some(want));
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
