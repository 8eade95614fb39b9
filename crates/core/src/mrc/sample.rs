//! Spatially hashed sampling of page keys (SHARDS, Waldspurger et al., FAST
//! 2015) and the LRU curve estimated from the sample.
//!
//! A key is kept when its 64-bit hash (the SplitMix64 finalizer of the key
//! mixed with `--seed`) is at most a threshold `T`; the sampling rate is
//! `R = (T + 1) / 2^64`. Every use of a kept key is kept, so reuse is seen
//! whole and an LRU stack distance `d` in the sample stands for `d / R` in the
//! trace: a cache of `C` pages hits the sampled uses with `d ≤ C·R`.
//!
//! - **Fixed rate** (`--sample 1%`): `T` is fixed. [`shards_lru`] runs the exact
//!   profiler on the sampled stream and reads it at `⌊C·R⌋`, so at 100 % it is
//!   the exact curve.
//! - **Fixed size** (`--sample-keys N`): at most N keys are tracked; when a new
//!   key makes N + 1, the keys with the largest hash leave the sample and `T`
//!   drops below their hash. A use counts with weight `1/R` at the time it was
//!   seen (the histogram rescaling of the paper, done per event).
//!
//! Both report misses the SHARDS-adj way: estimated misses (sampled misses
//! over R) divided by the trace's true number of page accesses, which every
//! request is counted towards. That corrects the sample's share of accesses
//! (a hot key in or out of the sample moves it) the way SHARDS-adj's first
//! bucket does.

use super::stack::Stack;
use super::{Curve, Point, Profiler, TraceCounts};
use crate::sim::source::TraceSource;
use crate::sim::{pages_of, SimError};
use crate::trace::{Op, BATCH};
use std::collections::BinaryHeap;

/// How a curve is sampled: a fixed rate, or at most `max_keys` keys (starting
/// from `rate`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleSpec {
    pub rate: f64,
    pub max_keys: Option<u64>,
    pub seed: u64,
}

impl SampleSpec {
    pub fn rate(rate: f64, seed: u64) -> SampleSpec {
        SampleSpec { rate, max_keys: None, seed }
    }
}

/// A sampling rate (`--sample`): `1%`, `0.5 %`, or a fraction `0.01`; more than
/// 0 and at most 100 %.
pub fn parse_sample_rate(text: &str) -> Result<f64, SimError> {
    let t = text.trim();
    let bad = |why: &str| SimError::Config(format!("--sample {text}: {why}"));
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| bad("not a rate; give a percentage like 1% or a fraction like 0.01"))?;
    let rate = v / scale;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(bad("the rate must be more than 0"));
    }
    if rate > 1.0 {
        return Err(bad("the rate is at most 100%"));
    }
    Ok(rate)
}

/// A fixed-size sample's key count (`--sample-keys`): at least 1, at most 2^32.
pub fn check_sample_keys(n: u64) -> Result<(), SimError> {
    if n == 0 || n > 1 << 32 {
        return Err(SimError::Config(format!("--sample-keys {n}: give 1 to 4294967296 keys")));
    }
    Ok(())
}

/// The key's hash: SplitMix64's finalizer over the key offset by the seed.
#[inline]
pub fn hash(key: u64, seed: u64) -> u64 {
    let mut z = key.wrapping_add(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const TWO_64: f64 = 18_446_744_073_709_551_616.0;

/// Keeps a key iff its hash ≤ `limit`; `shift` hashes the key's block
/// (`key >> shift`) instead of the page, so a block is kept or dropped whole.
#[derive(Clone, Copy, Debug)]
pub struct Sampler {
    limit: u64,
    seed: u64,
    shift: u32,
}

impl Sampler {
    pub fn new(rate: f64, seed: u64) -> Sampler {
        let limit = if rate >= 1.0 { u64::MAX } else { ((rate * TWO_64) as u64).saturating_sub(1) };
        Sampler { limit, seed, shift: 0 }
    }

    /// The same rate, deciding per block of `block_pages` pages (a power of two).
    pub fn by_block(self, block_pages: u32) -> Sampler {
        Sampler { shift: block_pages.trailing_zeros(), ..self }
    }

    #[inline]
    pub fn keep(&self, key: u64) -> bool {
        hash(key >> self.shift, self.seed) <= self.limit
    }

    /// The rate the threshold gives (what estimates scale by).
    pub fn rate(&self) -> f64 {
        (self.limit as f64 + 1.0) / TWO_64
    }
}

/// The trace's own counts, from every request (the sample sees only some).
pub(super) fn count_request(c: &mut TraceCounts, op: Op, pages: u64) {
    c.requests += 1;
    match op {
        Op::Read => c.read_pages += pages,
        Op::Write => c.write_pages += pages,
        Op::Trim => c.trims += 1,
    }
}

/// A SHARDS estimate of the LRU curve, from [`shards_lru`].
pub struct ShardsProfile {
    /// The whole trace's counts; `footprint_pages` is estimated (sampled keys / R).
    pub counts: TraceCounts,
    pub rate: f64,
    estimate: Estimate,
}

enum Estimate {
    /// Fixed rate: the exact profile of the sampled stream.
    Rate(super::LruProfile),
    /// Fixed size: weighted hits by distance.
    Size(Weighted),
}

/// An estimated point, from estimated misses and the trace's true totals.
pub(super) struct Estimated {
    pub read_misses: f64,
    pub write_misses: f64,
    pub request_misses: f64,
    pub sampled_requests: f64,
    /// The sampled stream's own page misses and accesses (for the request ratio).
    pub sampled_misses: f64,
    pub sampled_uses: f64,
    pub writebacks: f64,
    pub dirty_at_end: f64,
}

impl ShardsProfile {
    /// The estimated result of an LRU cache of `pages` pages.
    pub fn at(&self, pages: u64) -> Point {
        let e = match &self.estimate {
            Estimate::Rate(p) => {
                let q = p.at((pages as f64 * self.rate).floor() as u64);
                let c = &p.counts;
                let r = self.rate;
                Estimated {
                    read_misses: (c.read_pages - q.read_hits) as f64 / r,
                    write_misses: (c.write_pages - q.write_hits) as f64 / r,
                    request_misses: (c.requests - c.trims - q.request_hits) as f64,
                    sampled_requests: (c.requests - c.trims) as f64,
                    sampled_misses: q.misses as f64,
                    sampled_uses: (c.read_pages + c.write_pages) as f64,
                    writebacks: q.dirty_writebacks as f64 / r,
                    dirty_at_end: q.dirty_at_end as f64 / r,
                }
            }
            Estimate::Size(w) => w.at(pages),
        };
        estimated_point(&self.counts, pages, &e)
    }

    /// The curve at `sizes` (pages).
    pub fn curve(&self, trace: String, sizes: &[u64]) -> Curve {
        let points = sizes.iter().map(|&s| self.at(s)).collect();
        Curve { trace, policy: "lru".into(), method: "shards", sample_rate: self.rate, counts: self.counts, points }
    }
}

/// `n` sizes evenly spaced up to `footprint` pages (at least one page each).
pub fn even_sizes(footprint: u64, n: u64) -> Vec<u64> {
    let top = footprint.max(1);
    let mut sizes: Vec<u64> = (1..=n).map(|i| (top * i).div_ceil(n).max(1)).collect();
    sizes.dedup();
    sizes
}

/// A point from estimated misses over the trace's true totals (SHARDS-adj);
/// ratios are clamped to [0, 1], counts rounded.
pub(super) fn estimated_point(n: &TraceCounts, pages: u64, e: &Estimated) -> Point {
    let clamp = |m: f64, whole: u64| m.clamp(0.0, whole as f64);
    let read_misses = clamp(e.read_misses, n.read_pages);
    let write_misses = clamp(e.write_misses, n.write_pages);
    let misses = read_misses + write_misses;
    let all = n.read_pages + n.write_pages;
    let read_hits = n.read_pages - read_misses.round() as u64;
    let write_hits = n.write_pages - write_misses.round() as u64;
    let page_requests = n.requests - n.trims;
    // Requests are not sampled at a known rate (a request of many pages is
    // likelier to have one sampled), so the sampled requests' miss ratio is
    // corrected by the factor SHARDS-adj moved the page miss ratio (exact for
    // one-page requests, and at 100 %).
    let sampled_request = if e.sampled_requests > 0.0 { e.request_misses / e.sampled_requests } else { 0.0 };
    let sampled_page = if e.sampled_uses > 0.0 { e.sampled_misses / e.sampled_uses } else { 0.0 };
    let adj_page = if all == 0 { 0.0 } else { misses / all as f64 };
    let request_miss_ratio =
        if sampled_page > 0.0 { (sampled_request * (adj_page / sampled_page)).min(1.0) } else { sampled_request };
    let request_hits = page_requests - (request_miss_ratio * page_requests as f64).round() as u64;
    let r = |m: f64, whole: u64| if whole == 0 { 0.0 } else { m / whole as f64 };
    Point {
        cache_pages: pages,
        cache_bytes: pages * n.page_bytes,
        hits: read_hits + write_hits,
        read_hits,
        write_hits,
        misses: misses.round() as u64,
        miss_ratio: r(misses, all),
        read_miss_ratio: r(read_misses, n.read_pages),
        write_miss_ratio: r(write_misses, n.write_pages),
        request_hits,
        request_miss_ratio,
        dirty_writebacks: e.writebacks.round() as u64,
        dirty_at_end: e.dirty_at_end.round() as u64,
    }
}

/// Estimates LRU's curve on `source` from a sample, in one streaming pass.
pub fn shards_lru(source: &TraceSource, page_bytes: u64, spec: &SampleSpec) -> Result<ShardsProfile, SimError> {
    if page_bytes == 0 {
        return Err(SimError::Config("--page: a page has at least one byte".into()));
    }
    let (mut reader, _format) = source.open()?;
    let unit = reader.unit();
    let mut counts = TraceCounts { page_bytes, ..Default::default() };
    let mut batch = Vec::with_capacity(BATCH);
    let mut keys = Vec::new();
    let estimate = match spec.max_keys {
        None => {
            let sampler = Sampler::new(spec.rate, spec.seed);
            let mut p = Profiler::default();
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    let pages = pages_of(r, unit, page_bytes, counts.requests)?;
                    keys.clear();
                    keys.extend(pages.keys().filter(|&k| sampler.keep(k)));
                    count_request(&mut counts, r.op, keys_len(&pages));
                    if !keys.is_empty() {
                        p.request(r, keys.iter().copied());
                    }
                }
            }
            let profile = p.finish(page_bytes, 0);
            counts.footprint_pages = (profile.counts.footprint_pages as f64 / sampler.rate()).round() as u64;
            Estimate::Rate(profile)
        }
        Some(max_keys) => {
            let mut w = Weighted::new(spec, max_keys);
            while reader.read_batch(&mut batch, BATCH)? > 0 {
                for r in &batch {
                    let pages = pages_of(r, unit, page_bytes, counts.requests)?;
                    count_request(&mut counts, r.op, keys_len(&pages));
                    w.request(r.op, pages.keys());
                }
            }
            counts.footprint_pages = w.footprint.round() as u64;
            Estimate::Size(w)
        }
    };
    counts.skipped = reader.skipped();
    let rate = match &estimate {
        Estimate::Rate(_) => Sampler::new(spec.rate, spec.seed).rate(),
        Estimate::Size(w) => w.rate(),
    };
    Ok(ShardsProfile { counts, rate, estimate })
}

fn keys_len(pages: &crate::sim::PageRange) -> u64 {
    pages.keys().size_hint().0 as u64
}

/// Fixed-size SHARDS: weighted hits by (real, scaled) stack distance.
struct Weighted {
    stack: Stack,
    /// The sampled keys by hash, largest on top (stale entries of trimmed keys skipped).
    heap: BinaryHeap<(u64, u64)>,
    limit: u64,
    seed: u64,
    max_keys: u64,
    read: Bins,
    write: Bins,
    request: Bins,
    read_uses: f64,
    write_uses: f64,
    sampled_requests: f64,
    footprint: f64,
}

impl Weighted {
    fn new(spec: &SampleSpec, max_keys: u64) -> Weighted {
        Weighted {
            stack: Stack::default(),
            heap: BinaryHeap::new(),
            limit: Sampler::new(spec.rate, spec.seed).limit,
            seed: spec.seed,
            max_keys,
            read: Bins::default(),
            write: Bins::default(),
            request: Bins::default(),
            read_uses: 0.0,
            write_uses: 0.0,
            sampled_requests: 0.0,
            footprint: 0.0,
        }
    }

    fn rate(&self) -> f64 {
        (self.limit as f64 + 1.0) / TWO_64
    }

    fn request(&mut self, op: Op, keys: impl Iterator<Item = u64>) {
        let mut worst = 0.0f64;
        let mut any = false;
        for key in keys {
            let h = hash(key, self.seed);
            if h > self.limit {
                continue;
            }
            if op == Op::Trim {
                self.stack.remove(key);
                continue;
            }
            any = true;
            let weight = 1.0 / self.rate();
            let (distance, _) = self.stack.access(key);
            match distance {
                Some(d) => {
                    let real = d as f64 * weight;
                    worst = worst.max(real);
                    if op == Op::Write { &mut self.write } else { &mut self.read }.add(real, weight);
                }
                None => {
                    worst = f64::INFINITY;
                    self.footprint += weight;
                    self.heap.push((h, key));
                    self.shrink();
                }
            }
            *if op == Op::Write { &mut self.write_uses } else { &mut self.read_uses } += weight;
        }
        if any {
            // the request's weight: its sampled pages' rate (as for pages)
            let weight = 1.0 / self.rate();
            self.sampled_requests += weight;
            if worst.is_finite() {
                self.request.add(worst, weight);
            }
        }
    }

    /// Drops the largest-hash keys until at most `max_keys` remain.
    fn shrink(&mut self) {
        while self.stack.len() as u64 > self.max_keys {
            let Some((h, _)) = self.heap.peek().copied() else { break };
            while let Some(&(h2, key)) = self.heap.peek() {
                if h2 != h {
                    break;
                }
                self.heap.pop();
                self.stack.remove(key);
            }
            self.limit = h.saturating_sub(1);
        }
    }

    fn at(&self, pages: u64) -> Estimated {
        let c = pages as f64;
        Estimated {
            read_misses: self.read_uses - self.read.up_to(c),
            write_misses: self.write_uses - self.write.up_to(c),
            request_misses: self.sampled_requests - self.request.up_to(c),
            sampled_requests: self.sampled_requests,
            sampled_misses: self.read_uses + self.write_uses - self.read.up_to(c) - self.write.up_to(c),
            sampled_uses: self.read_uses + self.write_uses,
            writebacks: 0.0,
            dirty_at_end: 0.0,
        }
    }
}

/// Weights by distance: whole pages up to [`EXACT_BINS`], then bins 0.05 % wide.
#[derive(Default)]
struct Bins(Vec<f64>);

const EXACT_BINS: f64 = 4096.0;
const GROWTH: f64 = 1.0005;

impl Bins {
    fn index(x: f64) -> usize {
        if x <= EXACT_BINS {
            x.ceil() as usize
        } else {
            EXACT_BINS as usize + ((x / EXACT_BINS).ln() / GROWTH.ln()).ceil() as usize
        }
    }

    /// The largest distance bin `i` holds.
    fn upper(i: usize) -> f64 {
        if i as f64 <= EXACT_BINS {
            i as f64
        } else {
            EXACT_BINS * GROWTH.powi((i - EXACT_BINS as usize) as i32)
        }
    }

    fn add(&mut self, x: f64, w: f64) {
        let i = Self::index(x);
        if i >= self.0.len() {
            self.0.resize(i + 1, 0.0);
        }
        self.0[i] += w;
    }

    /// Weight at distances ≤ `c` (bins wholly below it).
    fn up_to(&self, c: f64) -> f64 {
        self.0.iter().enumerate().take_while(|(i, _)| Self::upper(*i) <= c * (1.0 + 1e-12)).map(|(_, w)| w).sum()
    }
}

#[cfg(test)]
mod tests;
