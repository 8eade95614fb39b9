//! Per-request counters of the cache engine: requests, bytes and latency
//! per operation and outcome, counted where the engine decides the outcome
//! (`cache::engine`). Atomics only, so recording costs a few relaxed adds and
//! never a lock on the request path.
//!
//! Hand-written rather than prometheus-client's `Family<_, Histogram>`: that
//! histogram keeps its buckets private (readable only by its own encoder)
//! and takes a lock per observation, while `ssdcache status --json` must
//! show the very numbers `/metrics` shows. Both read [`RequestCounters::snapshot`];
//! the exposition format itself is written by prometheus-client
//! (`metrics::exposition`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// An NBD command as the engine sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    WriteZeroes,
    Trim,
    Flush,
    /// `NBD_CMD_CACHE`: a client's hint to bring a range into the cache.
    Cache,
    /// `NBD_CMD_BLOCK_STATUS`: which ranges are data and which are holes.
    BlockStatus,
}

impl Op {
    pub const ALL: [Op; 7] = [Op::Read, Op::Write, Op::WriteZeroes, Op::Trim, Op::Flush, Op::Cache, Op::BlockStatus];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::WriteZeroes => "write_zeroes",
            Op::Trim => "trim",
            Op::Flush => "flush",
            Op::Cache => "cache",
            Op::BlockStatus => "block_status",
        }
    }

    /// Whether the request moves data through the map (hit, miss or
    /// bypass); the others (trim, flush, cache hints, block status) are just `ok`.
    pub fn moves_data(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::WriteZeroes)
    }

    /// The outcomes this operation can have.
    pub fn outcomes(self) -> &'static [Outcome] {
        if self.moves_data() {
            &[Outcome::Hit, Outcome::Miss, Outcome::Bypass, Outcome::Error]
        } else {
            &[Outcome::Ok, Outcome::Error]
        }
    }
}

/// How the engine served a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every segment it touched was cached before it arrived.
    Hit,
    /// At least one segment it touched was not (a piece went to the backing
    /// device, or its segment was filled for it).
    Miss,
    /// The cache was not consulted (passthrough mode, a degraded cache), or
    /// the policy declined to cache a miss (`--seq-cutoff`, `--promote-after`).
    Bypass,
    /// A trim, flush, cache hint or block status that succeeded.
    Ok,
    /// Answered with an error.
    Error,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [Outcome::Hit, Outcome::Miss, Outcome::Bypass, Outcome::Ok, Outcome::Error];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::Miss => "miss",
            Outcome::Bypass => "bypass",
            Outcome::Ok => "ok",
            Outcome::Error => "error",
        }
    }
}

/// Upper bounds (seconds) of the latency buckets: 50 µs (a cached 4 KiB
/// read) to 10 s (a request queued behind a slow backing device); above it,
/// `+Inf`.
pub const LATENCY_BUCKETS: [f64; 17] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// A histogram of durations with fixed buckets; the sum in nanoseconds.
#[derive(Debug)]
pub struct Latency {
    bounds: &'static [f64],
    /// Per bucket of `bounds`, then the `+Inf` one (not cumulative).
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new(&LATENCY_BUCKETS)
    }
}

impl Latency {
    /// With these upper bounds (seconds, increasing).
    pub fn new(bounds: &'static [f64]) -> Self {
        Latency { bounds, buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(), sum_ns: AtomicU64::new(0) }
    }

    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        let i = self.bounds.iter().position(|&le| s <= le).unwrap_or(self.bounds.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(d.as_nanos().min(u64::MAX as u128) as u64, Relaxed);
    }

    pub fn snapshot(&self) -> LatencySnapshot {
        let buckets: Vec<u64> = self.buckets.iter().map(|b| b.load(Relaxed)).collect();
        LatencySnapshot {
            count: buckets.iter().sum(),
            sum_seconds: self.sum_ns.load(Relaxed) as f64 / 1e9,
            buckets: self.bounds.iter().copied().chain([f64::INFINITY]).zip(buckets).collect(),
        }
    }
}

/// A histogram's state.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencySnapshot {
    pub count: u64,
    pub sum_seconds: f64,
    /// `(upper bound in seconds, observations in this bucket)`, not
    /// cumulative; the last bound is infinite (`null` in JSON).
    pub buckets: Vec<(f64, u64)>,
}

#[derive(Debug, Default)]
struct Cell {
    count: AtomicU64,
    bytes: AtomicU64,
    latency: Latency,
}

/// Requests, bytes and latency per (operation, outcome).
#[derive(Debug, Default)]
pub struct RequestCounters {
    cells: [[Cell; Outcome::ALL.len()]; Op::ALL.len()],
}

/// One (operation, outcome) pair's numbers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RequestSnapshot {
    pub op: &'static str,
    pub outcome: &'static str,
    pub count: u64,
    /// Bytes the requests asked to read, write, zero or trim.
    pub bytes: u64,
    /// Seconds from the engine receiving each request to its answer (segment
    /// locks, fills and device I/O; not the network).
    pub latency: LatencySnapshot,
}

impl RequestCounters {
    /// Counts one request of `bytes` answered after `took`.
    pub fn record(&self, op: Op, outcome: Outcome, bytes: u64, took: Duration) {
        let c = &self.cells[op as usize][outcome as usize];
        c.count.fetch_add(1, Relaxed);
        c.bytes.fetch_add(bytes, Relaxed);
        c.latency.observe(took);
    }

    /// Every pair an operation can have (zeros included, so that a series
    /// exists from the start), in a fixed order.
    pub fn snapshot(&self) -> Vec<RequestSnapshot> {
        let mut out = Vec::new();
        for op in Op::ALL {
            for &outcome in op.outcomes() {
                let c = &self.cells[op as usize][outcome as usize];
                out.push(RequestSnapshot {
                    op: op.name(),
                    outcome: outcome.name(),
                    count: c.count.load(Relaxed),
                    bytes: c.bytes.load(Relaxed),
                    latency: c.latency.snapshot(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_land_in_their_cell_and_bucket() {
        let c = RequestCounters::default();
        c.record(Op::Read, Outcome::Hit, 4096, Duration::from_micros(30));
        c.record(Op::Read, Outcome::Hit, 4096, Duration::from_millis(2));
        c.record(Op::Write, Outcome::Miss, 512, Duration::from_secs(20));
        c.record(Op::Flush, Outcome::Ok, 0, Duration::from_micros(100));
        let s = c.snapshot();
        // read and write and write_zeroes: 4 outcomes; trim and flush: 2.
        assert_eq!(s.len(), 3 * 4 + 4 * 2);
        let get = |op, outcome| s.iter().find(|r| r.op == op && r.outcome == outcome).unwrap();
        let rh = get("read", "hit");
        assert_eq!((rh.count, rh.bytes, rh.latency.count), (2, 8192, 2));
        assert_eq!(rh.latency.buckets[0], (0.00005, 1), "30 µs <= 50 µs");
        assert_eq!(rh.latency.buckets[5], (0.0025, 1), "2 ms <= 2.5 ms");
        assert!((rh.latency.sum_seconds - 0.00203).abs() < 1e-9);
        let wm = get("write", "miss");
        assert_eq!(wm.latency.buckets.last().unwrap(), &(f64::INFINITY, 1), "20 s is above every bound");
        assert_eq!(get("flush", "ok").count, 1);
        assert_eq!(get("read", "miss").count, 0);
        assert!(!s.iter().any(|r| r.op == "flush" && r.outcome == "hit"), "a flush is never a hit");
    }
}
