//! `desktop(...)`: multi-day, desktop-like block traces, the kind of workload paper 000
//! (a persistent read/write SSD cache) was evaluated on.
//!
//! # What paper 000 says about its workload
//!
//! Ten days of disk I/O of three real desktop users, captured with Windows XPerf and replayed
//! with direct I/O (no page cache, no prefetching); writes were about 25–35 % of the whole
//! workload (its Figure 15, write volume against read volume); its cache (PWC) fills and
//! evicts once a day in idle time, and first pays off on the second or third day, so the
//! data a user touches today is largely what they touched yesterday. The traces are not
//! public and the paper gives nothing else (no sizes, request counts, working sets or disk
//! sizes beyond a 2 TB HDD and a 32 GB SSD cache). Everything below is chosen to be
//! desktop-like and is a parameter.
//!
//! # The model
//!
//! The disk (each of `devices` disks of `disk` bytes) is addressed in 4 KiB blocks; every
//! request starts on a block and covers whole blocks (NTFS clusters are 4 KiB).
//!
//! - **Extents.** Data is touched as extents (files or parts of files) whose lengths are
//!   lognormal with median `file` and log-spread σ = 2 (natural log), rounded up to whole
//!   blocks and cut at 1/32 of `hot` (at most 256 MiB): heavy-tailed, most extents small,
//!   most bytes in large ones. Desktop file sizes are roughly lognormal with a median of a
//!   few KiB (Douceur & Bolosky, SIGMETRICS '99; Downey, MASCOTS '01); the median here is
//!   larger because it is a median of *accessed* extents.
//! - **Working set.** `hot` bytes of extents at random places (random device, random block
//!   offset), with Zipf(`alpha`) popularity by extent: rank k is chosen with probability
//!   ∝ k^-alpha. At the start of every day after the first, a fraction `drift` of the hot
//!   extents (chosen uniformly) move to new random places, keeping their length and their
//!   rank: the working set keeps its size exactly and slowly drifts, about `drift` of it
//!   per day. With `drift=0` every day works on the same data.
//! - **Cold background.** A fraction `cold` of operations touches a fresh extent (same
//!   length law) at a uniformly random place on the disk: rarely used files, scans, installs.
//! - **Operations.** Each operation is a read or, with probability `write`, a write, for all
//!   its requests. With probability `seq` it is a sequential run: it reads (or writes) its
//!   extent from the start, or, when the extent is longer than `run`, `run` bytes from a
//!   random block of it, in consecutive requests of `seq_size` each (the last one cut at the
//!   end). Otherwise it is a single request of `size` at a random block of the extent, cut
//!   at the extent's end. Reads and writes use the same laws, so `write` is both the share
//!   of requests and (in expectation) of bytes that are writes.
//! - **Request sizes.** `size` (random requests) defaults to 4 KiB dominant with 8–64 KiB
//!   common (64 KiB is Windows' usual read-ahead and copy unit); `seq_size` (sequential runs)
//!   to 64 KiB–1 MiB. Small extents cut requests to their length, so 4–60 KiB requests
//!   appear in runs too.
//! - **Days.** Every day has exactly `per_day` requests; the trace has `days × per_day`.
//!   Time 0 is midnight of day 0; `Request::time` is in ns.
//! - **Diurnal profile.** Each request has a *slot*: the day's slots are the sorted times of
//!   `per_day` independent draws from the day profile below (an inhomogeneous Poisson
//!   process conditioned on its count), generated in order one at a time (ascending order
//!   statistics: the next of the m draws still to come after u is 1 − (1 − u)·V^(1/m), V
//!   uniform), so nothing is materialised. Hourly weights, busy 9:00–18:00 with a lunch dip,
//!   a light evening, nothing between 23:00 and 7:00:
//!
//!   ```text
//!   hour    7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22
//!   weight  1  3  8 10 10  5  8 10 10 10  8  4  3  3  2  1
//!   ```
//!
//!   `night` moves that share of each day's requests into 23:00–7:00, spread evenly (night
//!   background jobs); with the default 0 the nights are idle: no request at all.
//! - **Bursts.** The first request of an operation arrives at its slot, except that with
//!   probability `burst` the operation follows the previous one at once (an application
//!   opening many files). Requests after the first of an operation, and chained operations,
//!   arrive `gap` after the previous request (default exponential, mean 100 µs), but never
//!   later than their own slot. Arrival times therefore never decrease, every request is at
//!   or before its slot, and the day's traffic comes in bursts separated by idle gaps.
//!
//! # Parameters (defaults)
//!
//! | parameter | default | meaning; why this default |
//! |---|---|---|
//! | `days` | 10 | days in the trace; paper 000's traces span 10 days |
//! | `per_day` | 200k | requests in each day, exactly (not `requests`: other generators use that for the whole stream, so `desktop(requests=…)` is rejected rather than misread); 2M in all keeps a simulation at seconds |
//! | `write` | 30 % | share of operations (so of requests, and of bytes in expectation) that write; paper 000 saw 25–35 % |
//! | `disk` | 100 GiB | size of each device; a desktop system volume (rounded down to 4 KiB blocks) |
//! | `hot` | 4 GiB | working set: total length of the hot extents; a few GiB, below paper 000's 32 GB cache |
//! | `drift` | 10 % | share of hot extents moved each day: a slowly changing working set |
//! | `alpha` | 1.0 | Zipf exponent of hot-extent popularity |
//! | `cold` | 10 % | share of operations on fresh random extents |
//! | `seq` | 30 % | share of operations that are sequential runs |
//! | `run` | 4 MiB | longest sequential run (one operation) |
//! | `file` | 16 KiB | median extent length |
//! | `size` | 4KiB:60%/8KiB:10%/16KiB:10%/32KiB:8%/64KiB:12% | sizes of random requests (whole 4 KiB blocks) |
//! | `seq_size` | 64KiB:40%/128KiB:20%/256KiB:20%/512KiB:10%/1MiB:10% | sizes of the requests of sequential runs |
//! | `burst` | 50 % | share of operations that follow the previous one at once |
//! | `gap` | exp(100us) | gap inside a burst: `0`, fixed `100us` or exponential `exp(100us)` |
//! | `night` | 0 % | share of each day's requests issued 23:00–7:00 |
//! | `devices` | 1 | disks; every extent (hot or cold) lies on a uniformly chosen one |
//! | `seed` | 1 | ChaCha8 seed: the same spec gives the same trace |
//!
//! Also chosen where nothing says otherwise: 4 KiB alignment rather than 512-byte sectors
//! (Windows issues cluster-aligned I/O, and caches here use 4 KiB pages); time 0 at
//! midnight rather than at the first request, so `time % 1 day` is the time of day.
//!
//! With the defaults a day has 200k requests (2M in the 10 days), about 7 GiB of traffic
//! (mean request 37 KiB, 30 % writes) and 2 GiB of distinct blocks, 0.6 GiB of them cold;
//! only about a third of a day's distinct blocks were touched the day before, but about
//! 75 % of its block accesses go to blocks touched the day before (the Zipf head): what a
//! cache filled overnight with yesterday's data could serve.
//!
//! Not modelled: weekends, per-day volume variation, file creation/deletion (trims),
//! metadata hot spots other than through the Zipf head, and read-after-write correlation.

use super::values::{Iat, Rng, Sizes, Values};
use super::zipf::ZipfKeys;
use crate::spec::{Spec, SpecError};
use crate::trace::{Op, Request};
use rand::Rng as _;
use rand_distr::{Distribution, Exp1, StandardNormal};

/// Blocks of 4 KiB: the unit of every address and length.
const BLOCK: u64 = 4096;
const HOUR_NS: u64 = 3_600_000_000_000;
const DAY_NS: u64 = 24 * HOUR_NS;
/// Log-spread (natural log) of extent lengths.
const FILE_SIGMA: f64 = 2.0;
/// Largest extent, and the share of `hot` one extent may take at most.
const MAX_EXTENT_BYTES: u64 = 256 << 20;
const MAX_EXTENT_SHARE: u64 = 32;
/// Largest working set: its extent table is kept in memory.
const MAX_HOT: u64 = 1 << 40;

/// Weights of the hours of a day outside the night (23:00–7:00).
const DAY_PROFILE: [f64; 24] =
    [0., 0., 0., 0., 0., 0., 0., 1., 3., 8., 10., 10., 5., 8., 10., 10., 10., 8., 4., 3., 3., 2., 1., 0.];

/// Whether `hour` (0..24) is a night hour.
fn is_night(hour: u64) -> bool {
    !(7..23).contains(&hour)
}

/// One extent: `len` blocks from block `start` of device `dev`.
#[derive(Clone, Copy, Debug)]
struct Extent {
    dev: u32,
    start: u64,
    len: u64,
}

/// The operation in progress: requests still to come cover blocks `next..end`.
struct Running {
    dev: u32,
    next: u64,
    end: u64,
    op: Op,
    /// A sequential run (requests of `seq_size`) rather than one request.
    seq: bool,
}

pub(super) struct Desktop {
    per_day: u64,
    days: u64,
    write: f64,
    disk_blocks: u64,
    devices: u32,
    drift: f64,
    cold: f64,
    seq: f64,
    run_blocks: u64,
    file_mu: f64,
    max_extent: u64,
    sizes: Sizes,
    seq_sizes: Sizes,
    burst: f64,
    gap: Iat,
    /// Cumulative share of the day's requests by the end of each hour (`cum[24]` = 1).
    cum: [f64; 25],
    /// The last hour with any requests.
    last_hour: usize,

    hot: Vec<Extent>,
    /// Zipf ranks over `hot`: rank k is extent k-1.
    popularity: ZipfKeys,

    /// Day of the next request, and requests of that day already issued.
    day: u64,
    issued: u64,
    /// The last slot's uniform draw, and the hour it fell in.
    u: f64,
    hour: usize,
    /// Arrival time of the previous request, in ns.
    last: u64,
    running: Option<Running>,
}

/// Rounds a byte count down to whole blocks, at least one.
fn blocks(bytes: u64) -> u64 {
    (bytes / BLOCK).max(1)
}

/// Request sizes that are whole blocks; ranges step by blocks.
fn block_sizes(p: &Spec, key: &str) -> Result<Sizes, SpecError> {
    let whole = |s: u32| (s as u64).is_multiple_of(BLOCK);
    let bad = || p.invalid(key, "request sizes must be whole 4KiB blocks (4KiB, 8KiB, …)");
    Ok(match p.sizes(key)? {
        Sizes::Fixed(s) if whole(s) => Sizes::Fixed(s),
        Sizes::Range { lo, hi, .. } if whole(lo) && whole(hi) => Sizes::Range { lo, hi, step: BLOCK as u32 },
        Sizes::List { sizes, cum } if sizes.iter().all(|&s| whole(s)) => Sizes::List { sizes, cum },
        _ => return Err(bad()),
    })
}

impl Desktop {
    pub fn build(p: &Spec, rng: &mut Rng) -> Result<Desktop, SpecError> {
        let days = p.positive("days")?;
        let per_day = p.positive("per_day")?;
        if days.checked_mul(DAY_NS).is_none() {
            return Err(p.invalid("days", "too many days for 64-bit nanosecond times"));
        }
        if days.checked_mul(per_day).is_none() {
            return Err(p.invalid("per_day", "days × per_day overflows"));
        }
        let devices = p.positive("devices")?;
        if devices > crate::key::MAX_DEVICES {
            return Err(p.invalid("devices", format!("at most {} devices", crate::key::MAX_DEVICES)));
        }
        let disk = p.bytes("disk")?;
        if disk < BLOCK {
            return Err(p.invalid("disk", "must hold at least one 4KiB block"));
        }
        let disk_blocks = disk / BLOCK;
        let hot = p.bytes("hot")?;
        if hot < BLOCK {
            return Err(p.invalid("hot", "must be at least one 4KiB block"));
        }
        if hot > MAX_HOT {
            return Err(p.invalid("hot", "at most 1TiB (its extents are kept in memory)"));
        }
        if hot / BLOCK > disk_blocks * devices {
            return Err(p.invalid("hot", format!("is larger than the {} disk(s) of {}", devices, p.raw("disk"))));
        }
        let hot_blocks = hot / BLOCK;
        let alpha = p.float("alpha")?;
        if alpha < 0.0 {
            return Err(p.invalid("alpha", "must be 0 or more (0: every hot extent equally popular)"));
        }
        let file = p.bytes("file")?;
        if file < BLOCK {
            return Err(p.invalid("file", "the median extent is at least one 4KiB block"));
        }
        let run = p.bytes("run")?;
        if run < BLOCK {
            return Err(p.invalid("run", "a sequential run is at least one 4KiB block"));
        }
        let gap = p.iat("gap")?;
        let night = p.ratio("night")?;

        // the day profile, with `night` of the requests spread evenly over the night hours
        let day_total: f64 = DAY_PROFILE.iter().sum();
        let mut cum = [0.0; 25];
        let mut last_hour = 0;
        for h in 0..24 {
            let w = if is_night(h as u64) { night / 8.0 } else { (1.0 - night) * DAY_PROFILE[h] / day_total };
            cum[h + 1] = cum[h] + w;
            if w > 0.0 {
                last_hour = h;
            }
        }
        // exactly 1 from the end of the last busy hour on, despite rounding
        cum[last_hour + 1..].fill(1.0);

        let max_extent = (hot_blocks / MAX_EXTENT_SHARE).clamp(1, MAX_EXTENT_BYTES / BLOCK).min(disk_blocks);
        let mut d = Desktop {
            per_day,
            days,
            write: p.ratio("write")?,
            disk_blocks,
            devices: devices as u32,
            drift: p.ratio("drift")?,
            cold: p.ratio("cold")?,
            seq: p.ratio("seq")?,
            run_blocks: blocks(run),
            file_mu: (file as f64 / BLOCK as f64).ln(),
            max_extent,
            sizes: block_sizes(p, "size")?,
            seq_sizes: block_sizes(p, "seq_size")?,
            burst: p.ratio("burst")?,
            gap,
            cum,
            last_hour,
            hot: Vec::new(),
            popularity: ZipfKeys::new(1, 0.0, None),
            day: 0,
            issued: 0,
            u: 0.0,
            hour: 0,
            last: 0,
            running: None,
        };
        // the working set: extents until `hot` is full, the last one cut to fit
        let mut left = hot_blocks;
        while left > 0 {
            let len = d.extent_len(rng).min(left);
            left -= len;
            let e = d.place(len, rng);
            d.hot.push(e);
        }
        d.popularity = ZipfKeys::new(d.hot.len() as u64, alpha, None);
        Ok(d)
    }

    /// Requests in the whole trace.
    pub fn total(&self) -> u64 {
        self.days * self.per_day
    }

    /// A lognormal extent length in blocks.
    fn extent_len(&self, rng: &mut Rng) -> u64 {
        let z: f64 = StandardNormal.sample(rng);
        let len = (self.file_mu + FILE_SIGMA * z).exp().ceil();
        // (a NaN or huge value saturates in the cast, then the cap applies)
        (len as u64).clamp(1, self.max_extent)
    }

    /// An extent of `len` blocks at a random place.
    fn place(&self, len: u64, rng: &mut Rng) -> Extent {
        let dev = if self.devices == 1 { 0 } else { rng.gen_range(0..self.devices) };
        let len = len.min(self.disk_blocks);
        Extent { dev, start: rng.gen_range(0..=self.disk_blocks - len), len }
    }

    /// Moves a share `drift` of the hot extents to new places (a new day).
    fn drift(&mut self, rng: &mut Rng) {
        let n = self.hot.len();
        let k = (self.drift * n as f64).round() as usize;
        for i in rand::seq::index::sample(rng, n, k.min(n)) {
            self.hot[i] = self.place(self.hot[i].len, rng);
        }
    }

    /// The next slot: the next of the day's sorted profile draws, as a time in ns.
    fn slot(&mut self, rng: &mut Rng) -> u64 {
        let m = (self.per_day - self.issued) as f64;
        let v = 1.0 - rng.gen::<f64>(); // (0, 1]
        self.u = 1.0 - (1.0 - self.u) * v.powf(1.0 / m);
        // the hour whose share of the day holds u (u only grows within a day); hours
        // without requests have no width and are skipped
        while self.hour < self.last_hour && self.u >= self.cum[self.hour + 1] {
            self.hour += 1;
        }
        let (lo, hi) = (self.cum[self.hour], self.cum[self.hour + 1]);
        let within = ((self.u - lo) / (hi - lo)).clamp(0.0, 1.0);
        let ns = ((within * HOUR_NS as f64) as u64).min(HOUR_NS - 1);
        self.day * DAY_NS + self.hour as u64 * HOUR_NS + ns
    }

    fn gap(&self, rng: &mut Rng) -> u64 {
        match self.gap {
            Iat::Zero => 0,
            Iat::Fixed(ns) => ns,
            Iat::Exp(mean) => (mean * rng.sample::<f64, _>(Exp1)) as u64,
        }
    }

    /// Starts an operation: read or write, on which extent, sequential or not.
    fn start(&mut self, rng: &mut Rng) -> Running {
        let op = if rng.gen::<f64>() < self.write { Op::Write } else { Op::Read };
        let e = if rng.gen::<f64>() < self.cold {
            let len = self.extent_len(rng);
            self.place(len, rng)
        } else {
            self.hot[self.popularity.next(rng) as usize]
        };
        if rng.gen::<f64>() < self.seq {
            let run = self.run_blocks.min(e.len);
            let next = e.start + rng.gen_range(0..=e.len - run);
            Running { dev: e.dev, next, end: next + run, op, seq: true }
        } else {
            let len = (self.sizes.sample(rng) as u64 / BLOCK).min(e.len);
            let next = e.start + rng.gen_range(0..=e.len - len);
            Running { dev: e.dev, next, end: next + len, op, seq: false }
        }
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> Request {
        if self.issued == self.per_day {
            self.day += 1;
            self.issued = 0;
            self.u = 0.0;
            self.hour = 0;
            self.running = None;
            self.drift(rng);
        }
        let first_of_day = self.issued == 0;
        let slot = self.slot(rng);
        let follows = match self.running {
            Some(_) => true,
            None => {
                let r = self.start(rng);
                self.running = Some(r);
                rng.gen::<f64>() < self.burst
            }
        };
        let time = if follows && !first_of_day { slot.min(self.last.saturating_add(self.gap(rng))) } else { slot };
        let r = self.running.as_mut().expect("started above");
        let len = if r.seq { (self.seq_sizes.sample(rng) as u64 / BLOCK).min(r.end - r.next) } else { r.end - r.next };
        let req = Request { time, addr: r.next * BLOCK, len: (len * BLOCK) as u32, dev: r.dev, op: r.op };
        r.next += len;
        if r.next == r.end {
            self.running = None;
        }
        self.issued += 1;
        self.last = time;
        req
    }
}
