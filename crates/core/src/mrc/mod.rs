//! Miss-ratio curves: every cache size's result from one pass over a trace.
//!
//! [`exact_lru`] profiles LRU (write-back, the `sim` default) exactly, from
//! stack distances ([`stack`]): for every cache size at once, the page hits
//! (read and write apart), the request hits (a request hits when all its pages
//! do), the dirty write-backs, and the dirty pages left at the end. Its numbers equal those of `ssdcache sim
//! --policy lru` at each size, with two exceptions it reports: trims (LRU with
//! deletions is no longer a stack algorithm, see [`LruProfile::trims`]) and
//! nothing else.
//!
//! Write-backs in the same pass: a dirty page is written back when it is
//! evicted, and in a cache of C pages it is evicted before its next use exactly
//! when that use's stack distance exceeds C. Each key keeps the smallest size
//! from which it is still dirty (`dirty_from`: 1 after a write, then the largest
//! distance it has reached since); a use at distance d ends the dirty life of
//! the sizes `dirty_from..d`, which is one write-back each, added to a
//! difference array over sizes.

pub mod miniature;
pub mod objects;
pub mod sample;
pub mod sized;
pub mod stack;

use crate::sim::source::TraceSource;
use crate::sim::{pages_of, SimError};
use crate::trace::{Op, Request, BATCH};
use serde::Serialize;
use stack::Stack;

/// Counts over distances: `hist[d]` uses at stack distance d (index 0 unused).
#[derive(Default)]
struct Histogram(Vec<u64>);

impl Histogram {
    fn add(&mut self, d: u64) {
        let d = d as usize;
        if d >= self.0.len() {
            self.0.resize(d + 1, 0);
        }
        self.0[d] += 1;
    }

    /// `out[c]` = uses at distance ≤ c, for c in 0..len.
    fn cumulative(&self, len: usize) -> Vec<u64> {
        let mut sum = 0;
        (0..len)
            .map(|c| {
                sum += self.0.get(c).copied().unwrap_or(0);
                sum
            })
            .collect()
    }
}

/// Changes over sizes: `diff[c]` is added to every size ≥ c.
#[derive(Default)]
struct SizeDiff(Vec<i64>);

impl SizeDiff {
    fn add(&mut self, from: u64, delta: i64) {
        let c = from as usize;
        if c >= self.0.len() {
            self.0.resize(c + 1, 0);
        }
        self.0[c] += delta;
    }

    fn cumulative(&self, len: usize) -> Vec<u64> {
        let mut sum = 0i64;
        (0..len)
            .map(|c| {
                sum += self.0.get(c).copied().unwrap_or(0);
                sum as u64
            })
            .collect()
    }
}

/// One pass's worth of counting (see the module doc).
#[derive(Default)]
struct Profiler {
    stack: Stack,
    read: Histogram,
    write: Histogram,
    request: Histogram,
    writebacks: SizeDiff,
    counts: TraceCounts,
}

impl Profiler {
    /// One page use; returns its stack distance (`u64::MAX` on a first use).
    fn access(&mut self, key: u64, write: bool) -> u64 {
        let (distance, e) = self.stack.access(key);
        let d = match distance {
            Some(d) => {
                if e.dirty_from != 0 && d > e.dirty_from {
                    // evicted dirty, so written back, in every cache of dirty_from..d pages
                    self.writebacks.add(e.dirty_from, 1);
                    self.writebacks.add(d, -1);
                }
                e.dirty_from = if write {
                    1
                } else if e.dirty_from != 0 {
                    e.dirty_from.max(d)
                } else {
                    0
                };
                d
            }
            None => {
                e.dirty_from = u64::from(write);
                self.counts.footprint_pages += 1;
                u64::MAX
            }
        };
        if d != u64::MAX {
            if write { &mut self.write } else { &mut self.read }.add(d);
        }
        d
    }

    fn request(&mut self, r: &Request, keys: impl Iterator<Item = u64>) {
        self.counts.requests += 1;
        match r.op {
            Op::Trim => {
                self.counts.trims += 1;
                for key in keys {
                    self.stack.remove(key);
                }
            }
            op => {
                let write = op == Op::Write;
                let mut worst = 0;
                for key in keys {
                    worst = worst.max(self.access(key, write));
                    *if write { &mut self.counts.write_pages } else { &mut self.counts.read_pages } += 1;
                }
                if worst != u64::MAX {
                    self.request.add(worst);
                }
            }
        }
    }

    /// The warm-up ends: what it counted is forgotten, the stack (recency and
    /// dirtiness at every size) stays warm. The footprint counts the whole trace.
    fn end_warmup(&mut self) {
        self.stack.settle_dirty();
        self.read = Histogram::default();
        self.write = Histogram::default();
        self.request = Histogram::default();
        self.writebacks = SizeDiff::default();
        self.counts = TraceCounts {
            footprint_pages: self.counts.footprint_pages,
            warmup_requests: self.counts.requests,
            ..TraceCounts::default()
        };
    }

    fn finish(mut self, page_bytes: u64, skipped: u64) -> LruProfile {
        let len = self.stack.len().max(self.counts.footprint_pages as usize) + 2;
        // A page dirty from size `from` and now at depth `depth` was evicted, so
        // written back, in caches of from..depth pages; it is still dirty in larger ones.
        let mut dirty_end = SizeDiff::default();
        for (e, depth) in self.stack.entries().filter(|(e, _)| e.dirty_from != 0) {
            let still = e.dirty_from.max(depth);
            self.writebacks.add(e.dirty_from, 1);
            self.writebacks.add(still, -1);
            dirty_end.add(still, 1);
        }
        LruProfile {
            counts: TraceCounts { page_bytes, skipped, ..self.counts },
            read_hits: self.read.cumulative(len),
            write_hits: self.write.cumulative(len),
            request_hits: self.request.cumulative(len),
            writebacks: self.writebacks.cumulative(len),
            dirty_at_end: dirty_end.cumulative(len),
        }
    }
}

/// LRU at every cache size at once, fed one page use at a time and readable
/// at any moment: [`exact_lru`]'s counting, for a live stream (`serve`'s
/// what-if), where it replaces one LRU run per size.
/// Its memory is bounded by the largest size asked about
/// ([`LiveLru::bounded`]): keys deeper than twice that are forgotten, their
/// write-backs counted first.
#[derive(Default)]
pub struct LiveLru {
    profiler: Profiler,
    /// Only caches of at most this many pages are asked about.
    max_pages: Option<u64>,
}

/// What a cache of some size would have done so far ([`LiveLru::at`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveCounts {
    pub read_pages: u64,
    pub read_hits: u64,
    pub write_pages: u64,
    pub write_hits: u64,
    /// Dirty pages evicted and written back (write-back, write-allocate).
    pub writebacks: u64,
}

impl LiveLru {
    /// For caches of at most `max_pages` pages, in memory proportional to it.
    pub fn bounded(max_pages: u64) -> LiveLru {
        LiveLru { profiler: Profiler::default(), max_pages: Some(max_pages.max(1)) }
    }

    /// A use of page `key` (a write dirties it).
    pub fn access(&mut self, key: u64, write: bool) {
        let p = &mut self.profiler;
        p.access(key, write);
        *if write { &mut p.counts.write_pages } else { &mut p.counts.read_pages } += 1;
        if let Some(max) = self.max_pages.filter(|&m| p.stack.len() as u64 > 2 * m) {
            // Deeper than every size asked about: a dirty one was evicted, so
            // written back, in the sizes from its dirty_from up.
            for (e, depth) in p.stack.keep_top(max) {
                if e.dirty_from != 0 && depth > e.dirty_from {
                    p.writebacks.add(e.dirty_from, 1);
                    p.writebacks.add(depth, -1);
                }
            }
        }
    }

    /// The counts so far of LRU caches of each of `sizes` pages. A dirty
    /// page evicted and not used since is written back already: counted
    /// from its place in the stack (one pass over it), as [`exact_lru`]
    /// counts them at the end.
    pub fn at(&self, sizes: &[u64]) -> Vec<LiveCounts> {
        let mut pending = SizeDiff::default();
        let p = &self.profiler;
        for (e, depth) in p.stack.entries().filter(|(e, depth)| e.dirty_from != 0 && *depth > e.dirty_from) {
            pending.add(e.dirty_from, 1);
            pending.add(depth, -1);
        }
        let upto = |v: &[u64], pages: u64| v.iter().take(pages as usize + 1).sum::<u64>();
        let upto_i = |v: &[i64], pages: u64| v.iter().take(pages as usize + 1).sum::<i64>();
        sizes
            .iter()
            .map(|&pages| LiveCounts {
                read_pages: p.counts.read_pages,
                read_hits: upto(&p.read.0, pages),
                write_pages: p.counts.write_pages,
                write_hits: upto(&p.write.0, pages),
                writebacks: (upto_i(&p.writebacks.0, pages) + upto_i(&pending.0, pages)).max(0) as u64,
            })
            .collect()
    }
}

/// What a curve is of: the trace's requests and pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TraceCounts {
    pub page_bytes: u64,
    pub requests: u64,
    pub read_pages: u64,
    pub write_pages: u64,
    /// Trim requests. A trim removes its pages from the cache, which leaves
    /// a free slot that only sizes holding the page have; LRU with deletions
    /// is not a stack algorithm, so with trims the curve (which drops the page
    /// from the stack) is exact only at sizes ≥ the footprint.
    pub trims: u64,
    /// Distinct pages used (trimmed and reused pages count once per life).
    pub footprint_pages: u64,
    /// Malformed records skipped (`--skip-bad`).
    pub skipped: u64,
    /// Leading requests that warmed the stack uncounted (`--warmup`): the
    /// counts above (but the footprint) and every point are of the rest.
    pub warmup_requests: u64,
}

/// Every cache size's LRU result, from [`exact_lru`].
pub struct LruProfile {
    pub counts: TraceCounts,
    read_hits: Vec<u64>,
    write_hits: Vec<u64>,
    request_hits: Vec<u64>,
    writebacks: Vec<u64>,
    dirty_at_end: Vec<u64>,
}

/// One cache size's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub cache_pages: u64,
    pub cache_bytes: u64,
    pub hits: u64,
    pub read_hits: u64,
    pub write_hits: u64,
    pub misses: u64,
    pub miss_ratio: f64,
    pub read_miss_ratio: f64,
    pub write_miss_ratio: f64,
    pub request_hits: u64,
    pub request_miss_ratio: f64,
    /// Dirty pages evicted and written back during the run (`sim`'s `dirty_writebacks`).
    pub dirty_writebacks: u64,
    /// Pages still dirty when the trace ends (`sim` drains them: its `drain_writes`).
    pub dirty_at_end: u64,
}

/// part / whole, 0 for an empty whole (no writes: no write misses).
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl LruProfile {
    /// The result of a cache of `pages` pages.
    pub fn at(&self, pages: u64) -> Point {
        let last = self.read_hits.len() - 1;
        let c = (pages as usize).min(last);
        let (read_hits, write_hits) = (self.read_hits[c], self.write_hits[c]);
        let hits = read_hits + write_hits;
        let n = &self.counts;
        let all = n.read_pages + n.write_pages;
        let page_requests = n.requests - n.trims;
        Point {
            cache_pages: pages,
            cache_bytes: pages * n.page_bytes,
            hits,
            read_hits,
            write_hits,
            misses: all - hits,
            miss_ratio: ratio(all - hits, all),
            read_miss_ratio: ratio(n.read_pages - read_hits, n.read_pages),
            write_miss_ratio: ratio(n.write_pages - write_hits, n.write_pages),
            request_hits: self.request_hits[c],
            request_miss_ratio: ratio(page_requests - self.request_hits[c], page_requests),
            dirty_writebacks: self.writebacks[c],
            dirty_at_end: self.dirty_at_end[c],
        }
    }

    /// The curve at `sizes` (pages), as `ssdcache mrc --json` prints it.
    pub fn curve(&self, trace: String, sizes: &[u64]) -> Curve {
        let points = sizes.iter().map(|&s| self.at(s)).collect();
        Curve { trace, policy: "lru".into(), method: "exact", sample_rate: 1.0, counts: self.counts, points }
    }

    /// `n` sizes evenly spaced up to the footprint (at least one page each).
    pub fn even_sizes(&self, n: u64) -> Vec<u64> {
        let top = self.counts.footprint_pages.max(1);
        let mut sizes: Vec<u64> = (1..=n).map(|i| (top * i).div_ceil(n).max(1)).collect();
        sizes.dedup();
        sizes
    }
}

/// One trace's curve: what it was, and a [`Point`] per size.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    pub trace: String,
    pub policy: String,
    /// "exact": from stack distances, equal to a `sim` run at every size;
    /// "shards": LRU from a hashed sample ([`sample`]); "miniature": the
    /// policy run on a sample with the cache scaled ([`miniature`]).
    pub method: &'static str,
    /// The share of keys the curve comes from: the sampling rate of "shards"
    /// and "miniature" (the final one with a fixed-size sample); 1 for "exact".
    pub sample_rate: f64,
    #[serde(flatten)]
    pub counts: TraceCounts,
    pub points: Vec<Point>,
}

/// Profiles LRU on `source` with pages of `page_bytes`, in one streaming pass.
pub fn exact_lru(source: &TraceSource, page_bytes: u64) -> Result<LruProfile, SimError> {
    exact_lru_warm(source, page_bytes, 0)
}

/// [`exact_lru`] after a warm-up of `warmup_requests` leading requests: their
/// stack distances warm the stack but are not counted, as `sim --warmup`.
pub fn exact_lru_warm(source: &TraceSource, page_bytes: u64, warmup_requests: u64) -> Result<LruProfile, SimError> {
    if page_bytes == 0 {
        return Err(SimError::Config("--page: a page has at least one byte".into()));
    }
    let (mut reader, _format) = source.open()?;
    let unit = reader.unit();
    let mut p = Profiler::default();
    let mut batch = Vec::with_capacity(BATCH);
    let mut index = 0;
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        for r in &batch {
            if index == warmup_requests && index > 0 {
                p.end_warmup();
            }
            let pages = pages_of(r, unit, page_bytes, index)?;
            p.request(r, pages.keys());
            index += 1;
        }
    }
    if index == 0 {
        return Err(SimError::no_requests("for a miss-ratio curve", reader.skipped()));
    }
    if warmup_requests > 0 && index <= warmup_requests {
        return Err(SimError::Config(format!(
            "--warmup: {warmup_requests} warm-up requests leave none of the trace's {index} to count; give a shorter warm-up"
        )));
    }
    Ok(p.finish(page_bytes, reader.skipped()))
}

#[cfg(test)]
mod tests;
