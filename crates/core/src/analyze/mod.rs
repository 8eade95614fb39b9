//! The trace analyzer (`ssdcache trace analyze`, `ssdcache.analyze`): what a
//! workload is, in one streaming pass with memory proportional to its
//! footprint (a hash-map entry and an LRU-stack entry per distinct page, plus
//! fixed-size histograms and grids).
//!
//! Per page access (a request covers the pages `sim` would: see
//! [`crate::sim::pages_of`]; trims are counted as requests but use no page):
//! - reuse distance: the LRU stack distance ([`crate::mrc::stack`]), 1 + the
//!   distinct pages used since the page's last use;
//! - reuse time: page accesses since its last use (libCacheSim's "virtual
//!   time"), and trace time since then;
//! - popularity: uses per page, as a frequency table (which is the
//!   rank-frequency curve) and a Zipf α fitted by least squares to
//!   ln(frequency) = c − α ln(rank) over every rank, as libCacheSim's analyzer does.
//!
//! Per request: read/write/trim mix, request rate, working set (distinct
//! pages) and footprint per interval, the LBA × time heatmap ([`timeline`]),
//! sequential runs and a per-device breakdown.

pub mod bins;
pub mod timeline;

use crate::mrc::stack::Stack;
use crate::sim::source::TraceSource;
use crate::sim::{pages_of, SimError};
use crate::trace::{Op, Request, Unit, BATCH};
use crate::units::{parse_duration_ns, scaled, Scaled};
use bins::{Histogram, LogHistogram};
use hashbrown::HashMap;
use serde::Serialize;
use std::str::FromStr;
use timeline::{Axis, Timeline};

/// The widest interval: every interval's start and end then fit a signed
/// 64-bit integer (pandas' int64 columns; Python's `analyze` adds the width to
/// each start).
const MAX_WIDTH: u64 = i64::MAX as u64;

/// How wide the timeline's intervals are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IntervalSpec {
    /// Trace time if the trace has any, else requests; the width doubles to
    /// keep at most [`timeline::AUTO_MAX`] intervals.
    #[default]
    Auto,
    /// A fixed width of trace time, ns.
    Time(u64),
    /// A fixed number of requests.
    Requests(u64),
}

impl FromStr for IntervalSpec {
    type Err = String;

    /// `auto`, a duration (`60s`, `1h`, `500ms`) or a request count (`100000req`, `1Mreq`).
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(IntervalSpec::Auto);
        }
        let spec = if let Some(n) = t.strip_suffix("req") {
            let (num, mult) = match n.trim().char_indices().last() {
                Some((i, 'k' | 'K')) => (&n[..i], 1_000),
                Some((i, 'M')) => (&n[..i], 1_000_000),
                Some((i, 'G')) => (&n[..i], 1_000_000_000),
                _ => (n, 1),
            };
            match scaled(num.trim(), mult, false) {
                Ok(0) | Err(Scaled::NotWhole) => {
                    return Err(format!("interval {text:?}: a whole number of requests, at least 1"))
                }
                Err(Scaled::NotANumber) => {
                    return Err(format!("interval {text:?}: expected a count such as 100000req or 1Mreq"))
                }
                // (2^64 used to be taken as 2^64 - 1 without a word)
                Err(Scaled::TooLarge) => {
                    return Err(format!("interval {text:?}: too large: a request count is at most 2^64 - 1"))
                }
                Ok(v) => IntervalSpec::Requests(v),
            }
        } else {
            let ns = parse_duration_ns(t).map_err(|e| format!("interval: {e} (or a count such as 1Mreq, or auto)"))?;
            IntervalSpec::Time(ns)
        };
        match spec {
            IntervalSpec::Time(0) => Err(format!("interval {text:?}: must be longer than 0")),
            IntervalSpec::Time(w) if w > MAX_WIDTH => Err(format!("interval {text:?}: must be below 2^63 ns")),
            IntervalSpec::Requests(n) if n > MAX_WIDTH => {
                Err(format!("interval {text:?}: must be below 2^63 requests"))
            }
            s => Ok(s),
        }
    }
}

/// What to analyze and how.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub page_bytes: u64,
    pub interval: IntervalSpec,
    /// Base of the reuse histograms' logarithmic bins (> 1; 2 by default;
    /// libCacheSim's analyzer uses 1.5 for reuse in accesses).
    pub log_base: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { page_bytes: 4096, interval: IntervalSpec::Auto, log_base: 2.0 }
    }
}

impl Options {
    pub fn check(&self) -> Result<(), SimError> {
        if self.page_bytes == 0 {
            return Err(SimError::Config("--page: a page has at least one byte".into()));
        }
        if !(self.log_base.is_finite() && self.log_base > 1.0 && self.log_base <= 1e6) {
            return Err(SimError::Config(format!("--log-base {}: give a number above 1", self.log_base)));
        }
        if bins::bins_needed(self.log_base) > bins::MAX_BINS as f64 {
            return Err(SimError::Config(format!(
                "--log-base {}: bins so narrow would number {:.0} over the range of values, more than {}: \
                 give a base of at least {}",
                self.log_base,
                bins::bins_needed(self.log_base),
                bins::MAX_BINS,
                bins::min_base()
            )));
        }
        Ok(())
    }
}

/// Rows of the frequency table: `pages` pages were used `frequency` times
/// each; they hold ranks `first_rank..=last_rank` (1 = most used).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Frequency {
    pub frequency: u64,
    pub pages: u64,
    pub first_rank: u64,
    pub last_rank: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Popularity {
    /// α of ln(frequency) = c − α ln(rank), least squares over `fit_ranks`
    /// (None with fewer than two pages).
    pub zipf_alpha: Option<f64>,
    /// R² of that fit.
    pub zipf_r2: Option<f64>,
    /// The ranks fitted: first and last (every rank).
    pub fit_ranks: [u64; 2],
    /// Most used first.
    pub frequencies: Vec<Frequency>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sequentiality {
    /// Maximal runs of requests, each starting where the previous request
    /// on its device ended (a lone request is a run of 1).
    pub runs: u64,
    /// Requests that continue a run (start where their device's previous one ended).
    pub sequential_requests: u64,
    /// Run lengths in requests, base-2 bins.
    pub run_lengths: Histogram,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Device {
    pub dev: u32,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub footprint_pages: u64,
    /// Lowest and highest page used (trims included).
    pub first_page: u64,
    pub last_page: u64,
    pub sequential_requests: u64,
    #[serde(skip)]
    run: u64,
    #[serde(skip)]
    next_addr: u64,
}

/// Everything `trace analyze` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    pub trace: String,
    pub format: String,
    /// "bytes" or "pages" (key traces).
    pub unit: &'static str,
    pub page_bytes: u64,
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_pages: u64,
    pub write_pages: u64,
    /// Distinct pages used.
    pub footprint_pages: u64,
    /// Last request's time (the first is at 0).
    pub duration_ns: u64,
    /// Malformed records skipped (`--skip-bad`).
    pub skipped: u64,
    /// LRU stack distances of the page accesses that are not first uses.
    pub reuse_distance: Histogram,
    /// Page accesses since the page's last use (1 = the access just before).
    pub reuse_accesses: Histogram,
    /// Trace time since the page's last use, ns (0 in `zero`).
    pub reuse_time_ns: Histogram,
    pub popularity: Popularity,
    pub sequentiality: Sequentiality,
    /// By device number.
    pub devices: Vec<Device>,
    pub timeline: timeline::Report,
}

#[derive(Clone, Copy)]
struct PageState {
    last_access: u64,
    last_time: u64,
    last_request: u64,
    uses: u64,
}

/// One pass's state (see the module doc).
pub struct Analyzer {
    opts: Options,
    unit: Unit,
    stack: Stack,
    pages: HashMap<u64, PageState>,
    devices: HashMap<u32, Device>,
    /// One timeline, or with [`IntervalSpec::Auto`] a time one and a request one.
    timelines: Vec<Timeline>,
    reuse_distance: LogHistogram,
    reuse_accesses: LogHistogram,
    reuse_time: LogHistogram,
    run_lengths: LogHistogram,
    requests: u64,
    accesses: u64,
    totals: timeline::Counts,
    read_pages: u64,
    duration: u64,
}

impl Analyzer {
    pub fn new(opts: Options, unit: Unit) -> Result<Self, SimError> {
        opts.check()?;
        let timelines = match opts.interval {
            IntervalSpec::Auto => vec![Timeline::new(Axis::Time, None), Timeline::new(Axis::Requests, None)],
            IntervalSpec::Time(ns) => vec![Timeline::new(Axis::Time, Some(ns))],
            IntervalSpec::Requests(n) => vec![Timeline::new(Axis::Requests, Some(n))],
        };
        Ok(Analyzer {
            opts,
            unit,
            stack: Stack::default(),
            pages: HashMap::new(),
            devices: HashMap::new(),
            timelines,
            reuse_distance: LogHistogram::new(opts.log_base),
            reuse_accesses: LogHistogram::new(opts.log_base),
            reuse_time: LogHistogram::new(opts.log_base),
            run_lengths: LogHistogram::new(2.0),
            requests: 0,
            accesses: 0,
            totals: timeline::Counts::default(),
            read_pages: 0,
            duration: 0,
        })
    }

    pub fn request(&mut self, r: &Request) -> Result<(), SimError> {
        let index = self.requests;
        let pages = pages_of(r, self.unit, self.opts.page_bytes, index)?;
        self.requests += 1;
        self.duration = self.duration.max(r.time);
        let (first_page, bytes) = match self.unit {
            Unit::Bytes => (r.addr / self.opts.page_bytes, r.len as u64),
            Unit::Pages => (r.addr, r.len as u64 * self.opts.page_bytes),
        };
        // pages_of checked that this does not overflow
        let n = match self.unit {
            Unit::Bytes => (r.addr + r.len as u64 - 1) / self.opts.page_bytes - first_page + 1,
            Unit::Pages => r.len as u64,
        };

        let dev = self.devices.entry(r.dev).or_insert_with(|| Device {
            dev: r.dev,
            first_page,
            last_page: first_page,
            ..Device::default()
        });
        dev.first_page = dev.first_page.min(first_page);
        dev.last_page = dev.last_page.max(first_page + (n - 1));
        if dev.run > 0 && r.addr == dev.next_addr {
            dev.run += 1;
            dev.sequential_requests += 1;
        } else {
            if dev.run > 0 {
                self.run_lengths.add(dev.run);
            }
            dev.run = 1;
        }
        dev.next_addr = r.addr.saturating_add(r.len as u64);
        let mut c = timeline::Counts { requests: 1, ..Default::default() };
        match r.op {
            Op::Read => (c.reads, c.read_bytes, c.page_accesses) = (1, bytes, n),
            Op::Write => (c.writes, c.write_bytes, c.page_accesses) = (1, bytes, n),
            Op::Trim => c.trims = 1,
        }
        dev.requests += 1;
        dev.reads += c.reads;
        dev.writes += c.writes;
        dev.trims += c.trims;
        dev.read_bytes += c.read_bytes;
        dev.write_bytes += c.write_bytes;
        self.totals.merge(&c);
        if r.op == Op::Read {
            self.read_pages += n;
        }

        let mut slots = [0usize; 2];
        for (tl, slot) in self.timelines.iter_mut().zip(&mut slots) {
            let x = if tl.axis() == Axis::Time { r.time } else { index };
            *slot = tl.slot(x).map_err(|e| SimError::Config(format!("--interval: {e}")))?;
            tl.counts(*slot).merge(&c);
            if r.op != Op::Trim {
                tl.heat(*slot, first_page, n);
            }
        }
        if r.op == Op::Trim {
            return Ok(());
        }

        let mut new_pages = 0;
        for key in pages.keys() {
            let (distance, _) = self.stack.access(key);
            if let Some(d) = distance {
                self.reuse_distance.add(d);
            }
            let now = PageState { last_access: self.accesses, last_time: r.time, last_request: index, uses: 1 };
            self.accesses += 1;
            let prev = match self.pages.entry(key) {
                hashbrown::hash_map::Entry::Occupied(mut o) => {
                    let p = *o.get();
                    *o.get_mut() = PageState { uses: p.uses + 1, ..now };
                    Some(p)
                }
                hashbrown::hash_map::Entry::Vacant(v) => {
                    v.insert(now);
                    None
                }
            };
            if let Some(p) = prev {
                self.reuse_accesses.add(now.last_access - p.last_access);
                self.reuse_time.add(r.time.saturating_sub(p.last_time));
            } else {
                new_pages += 1;
            }
            for tl in &mut self.timelines {
                let (x, p) = match tl.axis() {
                    Axis::Time => (r.time, prev.map(|p| p.last_time)),
                    Axis::Requests => (index, prev.map(|p| p.last_request)),
                };
                tl.page(x, p);
            }
        }
        if new_pages > 0 {
            self.totals.new_pages += new_pages;
            if let Some(dev) = self.devices.get_mut(&r.dev) {
                dev.footprint_pages += new_pages;
            }
            for (tl, &slot) in self.timelines.iter_mut().zip(&slots) {
                tl.counts(slot).new_pages += new_pages;
            }
        }
        Ok(())
    }

    pub fn finish(mut self, trace: String, format: String, skipped: u64) -> Analysis {
        let mut devices: Vec<Device> = self.devices.into_values().collect();
        devices.sort_by_key(|d| d.dev);
        for d in &devices {
            if d.run > 0 {
                self.run_lengths.add(d.run);
            }
        }
        let runs = self.run_lengths.total();
        let sequential_requests = devices.iter().map(|d| d.sequential_requests).sum();
        let mut uses: Vec<u64> = self.pages.values().map(|p| p.uses).collect();
        drop(self.pages);
        let popularity = popularity(&mut uses);
        // auto: time if the trace has any, else requests
        let timeline = if self.timelines.len() == 2 && self.duration == 0 {
            self.timelines.pop().unwrap()
        } else {
            self.timelines.swap_remove(0)
        };
        let t = &self.totals;
        Analysis {
            trace,
            format,
            unit: if self.unit == Unit::Pages { "pages" } else { "bytes" },
            page_bytes: self.opts.page_bytes,
            requests: t.requests,
            reads: t.reads,
            writes: t.writes,
            trims: t.trims,
            read_bytes: t.read_bytes,
            write_bytes: t.write_bytes,
            read_pages: self.read_pages,
            write_pages: t.page_accesses - self.read_pages,
            footprint_pages: t.new_pages,
            duration_ns: self.duration,
            skipped,
            reuse_distance: self.reuse_distance.report(),
            reuse_accesses: self.reuse_accesses.report(),
            reuse_time_ns: self.reuse_time.report(),
            popularity,
            sequentiality: Sequentiality { runs, sequential_requests, run_lengths: self.run_lengths.report() },
            devices,
            timeline: timeline.report(),
        }
    }
}

/// The frequency table and the Zipf fit of the pages' use counts.
fn popularity(uses: &mut [u64]) -> Popularity {
    uses.sort_unstable_by(|a, b| b.cmp(a));
    let mut frequencies: Vec<Frequency> = Vec::new();
    for (i, &u) in uses.iter().enumerate() {
        let rank = i as u64 + 1;
        match frequencies.last_mut() {
            Some(f) if f.frequency == u => {
                f.pages += 1;
                f.last_rank = rank;
            }
            _ => frequencies.push(Frequency { frequency: u, pages: 1, first_rank: rank, last_rank: rank }),
        }
    }
    let n = uses.len();
    let (mut sx, mut sy, mut sxx, mut syy, mut sxy) = (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (i, &u) in uses.iter().enumerate() {
        let (x, y) = (((i + 1) as f64).ln(), (u as f64).ln());
        sx += x;
        sy += y;
        sxx += x * x;
        syy += y * y;
        sxy += x * y;
    }
    let nf = n as f64;
    let (vx, vy, cov) = (nf * sxx - sx * sx, nf * syy - sy * sy, nf * sxy - sx * sy);
    let (alpha, r2) = if n >= 2 && vx > 0.0 {
        let r2 = if vy > 0.0 { cov * cov / (vx * vy) } else { 0.0 };
        (Some(-cov / vx), Some(r2))
    } else {
        (None, None)
    };
    Popularity { zipf_alpha: alpha, zipf_r2: r2, fit_ranks: [1.min(n as u64), n as u64], frequencies }
}

/// Analyzes `source` in one streaming pass; a trace without requests is an error.
pub fn analyze(source: &TraceSource, opts: Options) -> Result<Analysis, SimError> {
    opts.check()?;
    let (mut reader, format) = source.open()?;
    let mut a = Analyzer::new(opts, reader.unit())?;
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        for r in &batch {
            a.request(r)?;
        }
    }
    if a.requests == 0 {
        return Err(SimError::no_requests("to analyze", reader.skipped()));
    }
    Ok(a.finish(source.name(), format, reader.skipped()))
}

#[cfg(test)]
mod tests;
