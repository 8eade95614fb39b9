//! Per-interval time series (`--interval 1d`): paper 000 reports throughput,
//! latency and hit ratio per day, which totals hide (a cache that fills at
//! night looks different on day 1 and day 5).

use crate::metrics::IntervalStats;
use crate::Nanos;
use std::collections::BTreeMap;

/// Most intervals one series keeps. The series is sparse (only intervals with
/// requests have a row), so this bounds what a fine interval over a long or
/// busy trace costs — about 140 MB while running, 110 MB of rows at the end —
/// and a run that needs more fails with an error asking for a longer interval
/// rather than growing without end. (A week at 1 s intervals fits.)
pub const MAX_INTERVALS: usize = 1_000_000;

/// What an interval adds up while the run goes: the counted fields of
/// [`IntervalStats`] (its index, start and ratios follow from them), to keep
/// the map small.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    requests: u64,
    bytes: u64,
    pages: u64,
    hits: u64,
    read_pages: u64,
    read_hits: u64,
    served_pages: u64,
    served_bytes: u64,
    service_ns: Nanos,
    maintenance_ns: Nanos,
    /// An adaptive split's running sum over the interval's page accesses (ABM's `P`).
    split_sum: u64,
    split_accesses: u64,
    capacity: u64,
}

/// Accumulates requests into fixed intervals of trace time, counted from the
/// first request's arrival. Only intervals that had requests are kept, each
/// with its index and start: idle stretches (a quiet day, a 1 ns interval over
/// a day, one corrupt far-future timestamp) cost nothing.
#[derive(Clone, Debug)]
pub struct Series {
    interval: Nanos,
    origin: Option<Nanos>,
    /// Busy intervals by index. (A map, not a vector scanned from the back:
    /// unordered traces may go back to any earlier interval.)
    buckets: BTreeMap<u64, Counts>,
    limit: usize,
    /// A request fell in an interval beyond the `limit` kept: the run must fail.
    overflowed: bool,
}

impl Series {
    pub fn new(interval: Nanos) -> Series {
        Series::with_limit(interval, MAX_INTERVALS)
    }

    /// A series that keeps at most `limit` intervals.
    pub fn with_limit(interval: Nanos, limit: usize) -> Series {
        assert!(interval > 0);
        Series { interval, origin: None, buckets: BTreeMap::new(), limit, overflowed: false }
    }

    /// The same series with nothing in it yet (after a warm-up).
    pub fn emptied(&self) -> Series {
        Series::with_limit(self.interval, self.limit)
    }

    /// Whether a request fell in an interval past the limit (and was not counted).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// The error a run reports once the series [`overflowed`](Self::overflowed).
    pub fn overflow_error(&self) -> String {
        format!(
            "--interval: requests fall in more than {} different intervals of {} ns; choose a longer interval",
            self.limit, self.interval
        )
    }

    fn bucket(&mut self, time: Nanos) -> Option<&mut Counts> {
        let origin = *self.origin.get_or_insert(time);
        // (requests earlier than the first one, in unordered traces, count in the first interval)
        let i = time.saturating_sub(origin) / self.interval;
        if self.buckets.len() >= self.limit && !self.buckets.contains_key(&i) {
            self.overflowed = true;
            return None;
        }
        Some(self.buckets.entry(i).or_default())
    }

    /// One served request: its bytes, page accesses and hits, and the device
    /// time it cost.
    pub fn request(&mut self, time: Nanos, delta: &IntervalStats) {
        let Some(b) = self.bucket(time) else { return };
        b.requests += 1;
        b.bytes += delta.bytes;
        b.pages += delta.pages;
        b.hits += delta.hits;
        b.read_pages += delta.read_pages;
        b.read_hits += delta.read_hits;
        b.served_pages += delta.served_pages;
        b.served_bytes += delta.served_bytes;
        b.service_ns += delta.service_ns;
    }

    /// What a policy's adaptive split (ABM's `P`) added up over a request's
    /// page accesses at `time`: `sum` pages over `accesses`, of `capacity`.
    pub fn split(&mut self, time: Nanos, sum: u64, accesses: u64, capacity: u64) {
        if let Some(b) = self.bucket(time) {
            b.split_sum += sum;
            b.split_accesses += accesses;
            b.capacity = capacity;
        }
    }

    /// Device time spent on maintenance (PWC's procedure) at `time`.
    pub fn maintenance(&mut self, time: Nanos, ns: Nanos) {
        if let Some(b) = self.bucket(time) {
            b.maintenance_ns += ns;
        }
    }

    /// The busy intervals in time order, with their ratios filled in.
    pub fn finish(self) -> Vec<IntervalStats> {
        let origin = self.origin.unwrap_or(0);
        let interval = self.interval;
        self.buckets
            .into_iter()
            .map(|(i, c)| {
                IntervalStats {
                    interval: i,
                    start_ns: origin + i * interval, // at most the request's time: no overflow
                    requests: c.requests,
                    bytes: c.bytes,
                    pages: c.pages,
                    hits: c.hits,
                    read_pages: c.read_pages,
                    read_hits: c.read_hits,
                    served_pages: c.served_pages,
                    served_bytes: c.served_bytes,
                    service_ns: c.service_ns,
                    maintenance_ns: c.maintenance_ns,
                    write_share: (c.split_accesses > 0 && c.capacity > 0)
                        .then(|| c.split_sum as f64 / (c.split_accesses as f64 * c.capacity as f64)),
                    ..Default::default()
                }
                .finish()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(bytes: u64, hits: u64, service_ns: Nanos) -> IntervalStats {
        IntervalStats { bytes, pages: 2, hits, read_pages: 2, read_hits: hits, service_ns, ..Default::default() }
    }

    #[test]
    fn intervals_from_the_first_request_idle_ones_left_out() {
        let mut s = Series::new(100);
        s.request(1000, &req(4096, 2, 10));
        s.request(1050, &req(4096, 0, 30));
        s.request(1350, &req(8192, 1, 40));
        s.maintenance(1360, 60);
        let v = s.finish();
        assert_eq!(v.len(), 2);
        assert_eq!(v.iter().map(|b| (b.interval, b.start_ns)).collect::<Vec<_>>(), vec![(0, 1000), (3, 1300)]);
        assert_eq!((v[0].requests, v[0].hits, v[0].pages), (2, 2, 4));
        assert_eq!(v[0].hit_ratio, 0.5);
        assert_eq!(v[0].mean_latency_ns, 20.0);
        // 8192 bytes over 40 ns of service: 8192e-6 MB / 40e-9 s
        assert_eq!(v[0].throughput_mb_s, 8192.0 / 1e6 / 40e-9);
        // maintenance time counts against the interval's throughput, not its latency
        assert_eq!(v[1].mean_latency_ns, 40.0);
        assert_eq!(v[1].throughput_mb_s, 8192.0 / 1e6 / 100e-9);
        assert_eq!((v[0].write_share, v[1].write_share), (None, None));
        // an adaptive split: its mean over the interval's page accesses
        let mut s = Series::new(100);
        s.request(0, &req(4096, 0, 1));
        s.split(0, 2 * 30, 2, 100);
        s.request(10, &req(4096, 0, 1));
        s.split(10, 50 + 70, 2, 100);
        s.request(150, &req(4096, 0, 1));
        s.split(150, 2 * 10, 2, 100);
        let v = s.finish();
        assert_eq!((v[0].write_share, v[1].write_share), (Some(0.45), Some(0.1)));
    }

    #[test]
    fn a_fine_interval_over_a_long_span_keeps_only_busy_intervals() {
        // Once a day with a 1 ns interval, and a far-future timestamp with 1 s:
        // two rows each (a dense series would need 8.6e13 and 1.8e10 of them).
        let day = 86_400_000_000_000;
        for (interval, times) in [(1, [0, day]), (1_000_000_000, [5, u64::MAX - 1])] {
            let mut s = Series::new(interval);
            for t in times {
                s.request(t, &req(4096, 1, 10));
            }
            assert!(!s.overflowed());
            let v = s.finish();
            let want: Vec<(u64, u64)> =
                times.iter().map(|&t| ((t - times[0]) / interval, t - (t - times[0]) % interval)).collect();
            assert_eq!(v.iter().map(|b| (b.interval, b.start_ns)).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn out_of_order_requests_find_their_interval_and_earlier_ones_count_in_the_first() {
        let mut s = Series::new(10);
        for t in [100, 150, 120, 90, 151] {
            s.request(t, &req(1, 0, 0));
        }
        let v = s.finish();
        assert_eq!(v.iter().map(|b| (b.interval, b.requests)).collect::<Vec<_>>(), vec![(0, 2), (2, 1), (5, 2)]);
    }

    #[test]
    fn more_busy_intervals_than_the_limit_overflow_without_growing() {
        let mut s = Series::with_limit(10, 3);
        for t in [0, 10, 20, 25, 0] {
            s.request(t, &req(1, 0, 0));
        }
        assert!(!s.overflowed());
        s.request(30, &req(1, 0, 0));
        s.maintenance(40, 5);
        assert!(s.overflowed());
        assert!(s.overflow_error().starts_with("--interval: requests fall in more than 3 different intervals"));
        // the intervals already kept still count; the rest is dropped
        s.request(20, &req(1, 0, 0));
        let v = s.finish();
        assert_eq!(v.iter().map(|b| (b.interval, b.requests)).collect::<Vec<_>>(), vec![(0, 2), (1, 1), (2, 3)]);
    }
}
