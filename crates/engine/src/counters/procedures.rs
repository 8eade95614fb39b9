//! Runs and durations of the engine's long procedures: the
//! caching-and-eviction procedure (`ssdcache maintain`, the period) and the
//! write-back of every dirty segment (`ssdcache flush`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::requests::{Latency, LatencySnapshot};

/// A long procedure of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Procedure {
    /// Paper 000's caching-and-eviction procedure (write-back mode only).
    CachingAndEviction,
    /// Every dirty segment written back and both devices synced (`flush`).
    WriteBack,
}

impl Procedure {
    pub const ALL: [Procedure; 2] = [Procedure::CachingAndEviction, Procedure::WriteBack];

    pub fn name(self) -> &'static str {
        match self {
            Procedure::CachingAndEviction => "caching_and_eviction",
            Procedure::WriteBack => "write_back",
        }
    }
}

/// Upper bounds (seconds) of the duration buckets: 10 ms (nothing to do)
/// to 4 h (writing back a large cache to a slow disk).
pub const DURATION_BUCKETS: [f64; 10] = [0.01, 0.1, 1.0, 10.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 14400.0];

#[derive(Debug)]
struct Runs {
    ok: AtomicU64,
    failed: AtomicU64,
    duration: Latency,
}

/// Runs (completed, failed) and durations per procedure.
#[derive(Debug)]
pub struct ProcedureCounters {
    runs: [Runs; Procedure::ALL.len()],
}

impl Default for ProcedureCounters {
    fn default() -> Self {
        let runs =
            || Runs { ok: AtomicU64::new(0), failed: AtomicU64::new(0), duration: Latency::new(&DURATION_BUCKETS) };
        ProcedureCounters { runs: [runs(), runs()] }
    }
}

/// One procedure's numbers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ProcedureSnapshot {
    pub procedure: &'static str,
    /// Runs that completed.
    pub completed: u64,
    /// Runs that failed (or were interrupted by a stop).
    pub failed: u64,
    /// Durations of every run, completed or not.
    pub duration: LatencySnapshot,
}

impl ProcedureCounters {
    pub fn record(&self, p: Procedure, ok: bool, took: Duration) {
        let r = &self.runs[p as usize];
        if ok { &r.ok } else { &r.failed }.fetch_add(1, Relaxed);
        r.duration.observe(took);
    }

    pub fn snapshot(&self) -> Vec<ProcedureSnapshot> {
        Procedure::ALL
            .iter()
            .map(|&p| {
                let r = &self.runs[p as usize];
                ProcedureSnapshot {
                    procedure: p.name(),
                    completed: r.ok.load(Relaxed),
                    failed: r.failed.load(Relaxed),
                    duration: r.duration.snapshot(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_by_result() {
        let c = ProcedureCounters::default();
        c.record(Procedure::WriteBack, true, Duration::from_millis(3));
        c.record(Procedure::WriteBack, false, Duration::from_secs(1));
        let s = c.snapshot();
        assert_eq!((s[0].procedure, s[0].completed, s[0].failed), ("caching_and_eviction", 0, 0));
        assert_eq!((s[1].procedure, s[1].completed, s[1].failed, s[1].duration.count), ("write_back", 1, 1, 2));
    }
}
