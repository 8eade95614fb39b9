//! Counts over time in fixed intervals, streaming: requests, reads, writes,
//! bytes, distinct pages (the working set) and new pages (the footprint's
//! growth) per interval, and the LBA × time heatmap.
//!
//! Without a given width the intervals start one unit wide (1 ns, or one
//! request) and double whenever there would be more than [`AUTO_MAX`] of them:
//! neighbouring counts add up, so the merge is exact. Distinct pages do not
//! add up, so they are counted at every width at once: interval widths are
//! `width · 2^L`, the intervals of level L+1 are pairs of level L's, and a page
//! used at x and before at p is new to its level-L interval iff p and x fall
//! in different intervals of that level, which holds for the levels below
//! some L* and for none above. So a use adds one to the levels from the
//! current one up to L*, usually a few (and all levels on a first use).

use serde::Serialize;

/// At most this many intervals with an automatic width (at least half as many
/// once the trace is long enough to double the width once).
pub const AUTO_MAX: usize = 256;
/// At most this many intervals with a given width: a guard against `--interval
/// 1ns` or `1req`, as each interval costs about 1 KiB of counts and heatmap
/// column, and its row and column in the report (at 2^20: 1.9 GB of memory
/// and 366 MB of JSON). A week at one-minute intervals is 10,080.
pub const FIXED_MAX: usize = 1 << 16;
/// Rows of the heatmap: page ranges of equal size, doubled as addresses grow.
pub const HEAT_ROWS: usize = 128;
/// Levels of width doubling: width · 2^63 covers any u64 position.
const LEVELS: usize = 64;

/// What the timeline's position is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Trace time in ns since the first request.
    Time,
    /// Request number (0 = the first request).
    Requests,
}

/// One interval's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub page_accesses: u64,
    /// Pages used for the first time (the footprint's growth).
    pub new_pages: u64,
}

impl Counts {
    /// Adds `o`'s counts to these.
    pub(super) fn merge(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.reads += o.reads;
        self.writes += o.writes;
        self.trims += o.trims;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.page_accesses += o.page_accesses;
        self.new_pages += o.new_pages;
    }
}

/// One interval as reports show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// Start on the axis (ns or request number).
    pub start: u64,
    #[serde(flatten)]
    pub counts: Counts,
    /// Distinct pages used in the interval (its working set).
    pub distinct_pages: u64,
    /// Distinct pages used from the start to the interval's end.
    pub footprint_pages: u64,
}

/// The heatmap as reports show it: `counts[row][column]` page accesses of
/// pages `row·pages_per_row ..` in interval `column`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Heatmap {
    pub pages_per_row: u64,
    pub interval: u64,
    pub counts: Vec<Vec<u64>>,
}

/// The timeline as reports show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub axis: Axis,
    /// Interval width on the axis (ns or requests).
    pub interval: u64,
    pub intervals: Vec<Interval>,
    pub heatmap: Heatmap,
}

pub struct Timeline {
    axis: Axis,
    base: u64,
    fixed: bool,
    level: usize,
    counts: Vec<Counts>,
    /// `distinct[L][i]`: distinct pages in interval i of width base·2^L (levels ≥ `level`).
    distinct: Vec<Vec<u64>>,
    /// `heat[column][row]`.
    heat: Vec<[u64; HEAT_ROWS]>,
    row_shift: u32,
}

impl Timeline {
    /// Intervals of `width` (fixed), or automatic ones (`None`).
    pub fn new(axis: Axis, width: Option<u64>) -> Self {
        Timeline {
            axis,
            base: width.unwrap_or(1).max(1),
            fixed: width.is_some(),
            level: 0,
            counts: Vec::new(),
            distinct: vec![Vec::new(); if width.is_some() { 1 } else { LEVELS }],
            heat: Vec::new(),
            row_shift: 0,
        }
    }

    pub fn axis(&self) -> Axis {
        self.axis
    }

    fn width_at(&self, level: usize) -> u64 {
        self.base.saturating_mul(1u64 << level)
    }

    /// The interval of position `x`, after merging intervals as needed; an
    /// error when a fixed width would make too many.
    pub fn slot(&mut self, x: u64) -> Result<usize, String> {
        loop {
            let i = (x / self.width_at(self.level)) as usize;
            if self.fixed && i >= FIXED_MAX {
                let (what, unit) = if self.axis == Axis::Time { ("trace time", "ns") } else { ("request", "") };
                return Err(format!(
                    "more than {FIXED_MAX} intervals of {}{unit} ({what} reaches {x}{unit})",
                    self.base
                ));
            }
            if self.fixed || i < AUTO_MAX {
                if i >= self.counts.len() {
                    self.counts.resize(i + 1, Counts::default());
                    self.heat.resize(i + 1, [0; HEAT_ROWS]);
                }
                return Ok(i);
            }
            self.double();
        }
    }

    fn double(&mut self) {
        let n = self.counts.len().div_ceil(2);
        for i in 0..n {
            let mut c = self.counts[2 * i];
            let mut h = self.heat[2 * i];
            if let Some(o) = self.counts.get(2 * i + 1) {
                c.merge(o);
                for (a, b) in h.iter_mut().zip(self.heat[2 * i + 1]) {
                    *a += b;
                }
            }
            self.counts[i] = c;
            self.heat[i] = h;
        }
        self.counts.truncate(n);
        self.heat.truncate(n);
        self.distinct[self.level] = Vec::new();
        self.level += 1;
    }

    /// The counts of the interval `slot` (from [`Timeline::slot`]).
    #[inline]
    pub fn counts(&mut self, slot: usize) -> &mut Counts {
        &mut self.counts[slot]
    }

    /// A page used at `x`, last used at `prev` (None: its first use).
    #[inline]
    pub fn page(&mut self, x: u64, prev: Option<u64>) {
        for level in self.level..self.distinct.len() {
            let w = self.width_at(level);
            let i = (x / w) as usize;
            if prev.is_some_and(|p| p / w == x / w) {
                break; // same interval here, so at every wider level too
            }
            let d = &mut self.distinct[level];
            if i >= d.len() {
                d.resize(i + 1, 0);
            }
            d[i] += 1;
        }
    }

    /// `n` page accesses from page `first` on, in interval `slot` of the heatmap.
    pub fn heat(&mut self, slot: usize, first: u64, n: u64) {
        let last = first.saturating_add(n - 1);
        while (last >> self.row_shift) as usize >= HEAT_ROWS {
            for col in &mut self.heat {
                let mut merged = [0; HEAT_ROWS];
                for (r, c) in col.iter().enumerate() {
                    merged[r / 2] += c;
                }
                *col = merged;
            }
            self.row_shift += 1;
        }
        let (r0, r1) = ((first >> self.row_shift) as usize, (last >> self.row_shift) as usize);
        let col = &mut self.heat[slot];
        if r0 == r1 {
            col[r0] += n;
        } else {
            for (r, cell) in col.iter_mut().enumerate().take(r1 + 1).skip(r0) {
                let start = (r as u64) << self.row_shift;
                let lo = start.max(first);
                let hi = start.saturating_add((1u64 << self.row_shift) - 1).min(last);
                *cell += hi - lo + 1;
            }
        }
    }

    pub fn report(&self) -> Report {
        let distinct = &self.distinct[self.level];
        let mut footprint = 0;
        let intervals = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                footprint += c.new_pages;
                Interval {
                    start: i as u64 * self.width_at(self.level),
                    counts: *c,
                    distinct_pages: distinct.get(i).copied().unwrap_or(0),
                    footprint_pages: footprint,
                }
            })
            .collect();
        let used_rows = self.heat.iter().flat_map(|c| c.iter().rposition(|&v| v > 0)).max().map_or(0, |r| r + 1);
        let counts = (0..used_rows).map(|r| self.heat.iter().map(|col| col[r]).collect()).collect();
        Report {
            axis: self.axis,
            interval: self.width_at(self.level),
            intervals,
            heatmap: Heatmap { pages_per_row: 1 << self.row_shift, interval: self.width_at(self.level), counts },
        }
    }
}
