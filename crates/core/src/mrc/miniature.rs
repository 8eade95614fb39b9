//! Miniature simulation (Waldspurger et al., USENIX ATC 2017): any policy's
//! curve from runs of the real policy on a hashed sample of the trace
//! ([`super::sample`]), each cache scaled down by the sampling rate R.
//!
//! One pass over the trace feeds every (policy, size) mini: each request is
//! cut to its sampled pages (a run of consecutive sampled pages stays one
//! request, with its partial-page ends and its time, so write modes,
//! read-for-write and maintenance behave as in `sim`), and each batch is
//! replayed through the minis in parallel (rayon). A mini of a `C`-page cache
//! has `max(1, ⌊C·R⌋)` pages. Misses, write-backs and drained pages are scaled
//! back by 1/R and divided by the trace's true totals (SHARDS-adj); the request
//! miss ratio is that of the requests with a sampled page (a request hits when
//! all its sampled pages do). At R = 100 % every mini is the `sim` run itself.
//!
//! Block-unit policies (FAB, BPLRU, CLC, ABM: anything with a `block`
//! parameter) order and flush whole flash blocks, so a sample of scattered
//! pages would change what they see; they are sampled by block (the hash of
//! `key / block`), keeping or dropping a block with all its pages, and the
//! cache is scaled by R as for the others. Policies that need the future
//! (Belady) are refused: a one-pass mini has none.
//!
//! When the sizes are not given, they are spread up to the footprint, which is
//! only known after the trace: a first, cheap pass counts the sampled pages.

use super::sample::{count_request, estimated_point, even_sizes, Estimated, SampleSpec, Sampler};
use super::{Curve, TraceCounts};
use crate::policy::registry::build;
use crate::policy::{BuildCtx, Mode, Policy};
use crate::sim::source::TraceSource;
use crate::sim::{pages_of, SimConfig, SimError, Simulator};
use crate::trace::{Op, Request, Unit, BATCH};
use hashbrown::HashSet;
use rayon::prelude::*;

/// The cache sizes of a curve, in pages.
#[derive(Clone, Debug)]
pub enum Sizes {
    Pages(Vec<u64>),
    /// This many sizes evenly spaced up to the (estimated) footprint.
    Even(u64),
}

/// What sampling does to one policy.
struct Plan {
    spec: String,
    /// Pages per flash block for a block-unit policy (sampled by block), else 1.
    block: u32,
}

fn plan(text: &str, page_bytes: u64) -> Result<Plan, SimError> {
    let ctx = BuildCtx { capacity: 1024, mode: Mode::WriteBack, page_bytes };
    let (policy, spec) = build(text, &ctx)?;
    if policy.needs_future() {
        return Err(SimError::Config(format!(
            "--policy {text}: needs the future (offline), which a one-pass sampled run does not have; \
             run `ssdcache sim` for it"
        )));
    }
    let declared =
        crate::policy::registry::find(&spec.name).is_some_and(|i| i.params.iter().any(|p| p.name == "block"));
    let block = if declared { spec.uint("block")? as u32 } else { 1 };
    Ok(Plan { spec: spec.canonical(), block })
}

/// One mini: a policy at one scaled size, fed the sample of its granularity.
struct Mini<'p> {
    sim: Simulator<'p>,
    /// Index of its sampled stream in the batch's streams.
    stream: usize,
    request_hits: u64,
    requests: u64,
}

/// A batch cut to one granularity's sample: the sub-requests, and how many of
/// them each original request (with a sampled page) became.
#[derive(Default)]
struct Stream {
    sampler: Option<Sampler>,
    subs: Vec<Request>,
    groups: Vec<u32>,
    /// Sampled keys seen (for the footprint estimate; page granularity only).
    seen: Option<HashSet<u64>>,
}

impl Stream {
    /// Cuts `r` (whose pages start at page number `first`) to its sampled pages.
    fn cut(&mut self, r: &Request, unit: Unit, page_bytes: u64, keys: impl Iterator<Item = u64>) {
        let sampler = self.sampler.expect("a stream has a sampler");
        let first = match unit {
            Unit::Pages => r.addr,
            Unit::Bytes => r.addr / page_bytes,
        };
        let end = r.addr + r.len as u64;
        let before = self.subs.len();
        let mut run: Option<u64> = None;
        let emit = |from: u64, to: u64, subs: &mut Vec<Request>| {
            // pages from..to of the request (indices), as a request of their own
            let sub = match unit {
                Unit::Pages => Request { addr: first + from, len: (to - from) as u32, ..*r },
                Unit::Bytes => {
                    let lo = r.addr.max((first + from) * page_bytes);
                    let hi = end.min((first + to).saturating_mul(page_bytes));
                    Request { addr: lo, len: (hi - lo) as u32, ..*r }
                }
            };
            subs.push(sub);
        };
        let mut n = 0;
        for (i, key) in keys.enumerate() {
            let i = i as u64;
            n = i + 1;
            if sampler.keep(key) {
                if let Some(seen) = self.seen.as_mut() {
                    if r.op != Op::Trim {
                        seen.insert(key);
                    }
                }
                run.get_or_insert(i);
            } else if let Some(from) = run.take() {
                emit(from, i, &mut self.subs);
            }
        }
        if let Some(from) = run.take() {
            emit(from, n, &mut self.subs);
        }
        let made = self.subs.len() - before;
        if made > 0 {
            self.groups.push(made as u32);
        }
    }

    fn clear(&mut self) {
        self.subs.clear();
        self.groups.clear();
    }
}

impl Mini<'_> {
    fn feed(&mut self, s: &Stream, unit: Unit) -> Result<(), SimError> {
        let mut at = 0;
        for &g in &s.groups {
            let subs = &s.subs[at..at + g as usize];
            at += g as usize;
            let before = self.sim.counters.request_hits;
            for r in subs {
                self.sim.request(r, unit)?;
            }
            if subs[0].op != Op::Trim {
                self.requests += 1;
                self.request_hits += (self.sim.counters.request_hits - before == g as u64) as u64;
            }
        }
        Ok(())
    }
}

/// The trace's counts and the sampled footprint (pages), from a pass that only hashes.
fn count_pass(source: &TraceSource, page_bytes: u64, sampler: Sampler) -> Result<(TraceCounts, u64), SimError> {
    let (mut reader, _) = source.open()?;
    let unit = reader.unit();
    let mut counts = TraceCounts { page_bytes, ..Default::default() };
    let mut seen = HashSet::new();
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        for r in &batch {
            let pages = pages_of(r, unit, page_bytes, counts.requests)?;
            count_request(&mut counts, r.op, pages.keys().size_hint().0 as u64);
            if r.op != Op::Trim {
                seen.extend(pages.keys().filter(|&k| sampler.keep(k)));
            }
        }
    }
    counts.skipped = reader.skipped();
    Ok((counts, seen.len() as u64))
}

/// Curves of `policies` (specs, write modes in them: `lru(mode=wt)`) at
/// `sizes`, by miniature simulation at a fixed rate.
pub fn miniature(
    source: &TraceSource,
    page_bytes: u64,
    policies: &[String],
    sizes: &Sizes,
    spec: &SampleSpec,
) -> Result<Vec<Curve>, SimError> {
    if page_bytes == 0 {
        return Err(SimError::Config("--page: a page has at least one byte".into()));
    }
    if spec.max_keys.is_some() {
        return Err(SimError::Config(
            "--sample-keys (fixed-size SHARDS) estimates plain lru only; other policies run miniature \
             simulations, which need a fixed rate (--sample)"
                .into(),
        ));
    }
    let plans = policies.iter().map(|p| plan(p, page_bytes)).collect::<Result<Vec<_>, _>>()?;
    let sampler = Sampler::new(spec.rate, spec.seed);
    let rate = sampler.rate();
    let (sizes, footprint) = match sizes {
        Sizes::Pages(s) => (s.clone(), None),
        Sizes::Even(n) => {
            let (_, sampled) = count_pass(source, page_bytes, sampler)?;
            let footprint = (sampled as f64 / rate).round() as u64;
            (even_sizes(footprint, *n), Some(footprint))
        }
    };
    // one stream per granularity (page, and each block size)
    let mut blocks: Vec<u32> = plans.iter().map(|p| p.block).collect();
    blocks.push(1);
    blocks.sort_unstable();
    blocks.dedup();
    let mut streams: Vec<Stream> = blocks
        .iter()
        .map(|&b| Stream {
            sampler: Some(if b == 1 { sampler } else { sampler.by_block(b) }),
            seen: (b == 1).then(HashSet::new),
            ..Default::default()
        })
        .collect();
    let mut slots: Vec<(usize, usize)> = Vec::new();
    let mut policies: Vec<Box<dyn Policy>> = Vec::new();
    for (pi, p) in plans.iter().enumerate() {
        for (si, &c) in sizes.iter().enumerate() {
            let capacity = ((c as f64 * rate).floor() as u64).max(1);
            let capacity = usize::try_from(capacity)
                .ok()
                .filter(|&c| c < u32::MAX as usize)
                .ok_or_else(|| SimError::Config(format!("cache of {c} pages is too large")))?;
            let (policy, _) = build(&p.spec, &BuildCtx { capacity, mode: Mode::WriteBack, page_bytes })?;
            slots.push((pi, si));
            policies.push(policy);
        }
    }
    let mut minis: Vec<Mini> = policies
        .iter_mut()
        .zip(&slots)
        .map(|(policy, &(pi, _))| Mini {
            sim: Simulator::new(policy.as_mut(), SimConfig { page_bytes }),
            stream: blocks.iter().position(|&b| b == plans[pi].block).unwrap_or(0),
            request_hits: 0,
            requests: 0,
        })
        .collect();
    let (mut reader, _) = source.open()?;
    let unit = reader.unit();
    let mut counts = TraceCounts { page_bytes, ..Default::default() };
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        streams.iter_mut().for_each(Stream::clear);
        for r in &batch {
            let pages = pages_of(r, unit, page_bytes, counts.requests)?;
            count_request(&mut counts, r.op, pages.keys().size_hint().0 as u64);
            for s in &mut streams {
                s.cut(r, unit, page_bytes, pages.keys());
            }
        }
        let streams = &streams;
        minis.par_iter_mut().map(|m| m.feed(&streams[m.stream], unit)).collect::<Result<(), SimError>>()?;
    }
    counts.skipped = reader.skipped();
    let sampled_footprint = streams[0].seen.as_ref().map_or(0, |s| s.len() as u64);
    counts.footprint_pages = footprint.unwrap_or_else(|| (sampled_footprint as f64 / rate).round() as u64);
    let mut curves: Vec<Curve> = plans
        .iter()
        .map(|p| Curve {
            trace: source.name(),
            policy: p.spec.clone(),
            method: "miniature",
            sample_rate: rate,
            counts,
            points: Vec::with_capacity(sizes.len()),
        })
        .collect();
    for (m, &(pi, si)) in minis.into_iter().zip(&slots) {
        let (request_hits, requests) = (m.request_hits, m.requests);
        let c = m.sim.finish();
        let e = Estimated {
            read_misses: (c.read_pages - c.read_hits) as f64 / rate,
            write_misses: (c.write_pages - c.write_hits) as f64 / rate,
            request_misses: (requests - request_hits) as f64,
            sampled_requests: requests as f64,
            sampled_misses: (c.pages - c.hits) as f64,
            sampled_uses: c.pages as f64,
            writebacks: c.dirty_writebacks as f64 / rate,
            dirty_at_end: c.drain_writes as f64 / rate,
        };
        curves[pi].points.push(estimated_point(&counts, sizes[si], &e));
    }
    Ok(curves)
}

fn is_lru(policy: &str) -> bool {
    policy.trim().eq_ignore_ascii_case("lru")
}

/// Sampled curves of `policies`, in their order: SHARDS for plain `lru`, one
/// miniature pass for the rest. Errors carry the trace's name.
pub fn sampled_curves(
    source: &TraceSource,
    page_bytes: u64,
    policies: &[String],
    sizes: &Sizes,
    spec: &SampleSpec,
) -> Result<Vec<Curve>, SimError> {
    let named = |e| crate::sim::run::with_trace_name(e, source);
    let others: Vec<String> = policies.iter().filter(|p| !is_lru(p)).cloned().collect();
    let mut minis = if others.is_empty() {
        Vec::new()
    } else {
        miniature(source, page_bytes, &others, sizes, spec).map_err(named)?
    }
    .into_iter();
    let shards = if policies.iter().any(|p| is_lru(p)) {
        let profile = super::sample::shards_lru(source, page_bytes, spec).map_err(named)?;
        let sizes = match sizes {
            Sizes::Pages(s) => s.clone(),
            Sizes::Even(n) => even_sizes(profile.counts.footprint_pages, *n),
        };
        Some(profile.curve(source.name(), &sizes))
    } else {
        None
    };
    let curves: Vec<Curve> =
        policies.iter().filter_map(|p| if is_lru(p) { shards.clone() } else { minis.next() }).collect();
    if let Some(c) = curves.iter().find(|c| c.counts.requests == 0) {
        return Err(named(SimError::no_requests("for a miss-ratio curve", c.counts.skipped)));
    }
    // A rate so low that no key was drawn gives curves of zeros, which would read as no misses.
    if let Some(c) =
        curves.iter().find(|c| c.counts.footprint_pages == 0 && c.counts.read_pages + c.counts.write_pages > 0)
    {
        let why = format!("no page of the trace fell in the sample (rate {:.2e}): raise --sample", c.sample_rate);
        return Err(named(SimError::Config(why)));
    }
    Ok(curves)
}

#[cfg(test)]
mod tests;
