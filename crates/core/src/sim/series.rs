//! Per-interval time series (`--interval 1d`): paper 000 reports throughput,
//! latency and hit ratio per day, which totals hide (a cache that fills at
//! night looks different on day 1 and day 5).

use crate::metrics::IntervalStats;
use crate::Nanos;

/// Accumulates requests into fixed intervals of trace time, counted from the
/// first request's arrival. Empty intervals (idle days) are kept.
#[derive(Clone, Debug)]
pub struct Series {
    interval: Nanos,
    origin: Option<Nanos>,
    buckets: Vec<IntervalStats>,
}

impl Series {
    pub fn new(interval: Nanos) -> Series {
        assert!(interval > 0);
        Series { interval, origin: None, buckets: Vec::new() }
    }

    fn bucket(&mut self, time: Nanos) -> &mut IntervalStats {
        let origin = *self.origin.get_or_insert(time);
        // (requests earlier than the first one, in unordered traces, count in the first interval)
        let i = (time.saturating_sub(origin) / self.interval) as usize;
        while self.buckets.len() <= i {
            let start = origin + self.buckets.len() as Nanos * self.interval;
            self.buckets.push(IntervalStats { start_ns: start, ..IntervalStats::default() });
        }
        &mut self.buckets[i]
    }

    /// One served request: its bytes, page accesses and hits, and the device
    /// time it cost.
    pub fn request(&mut self, time: Nanos, delta: &IntervalStats) {
        let b = self.bucket(time);
        b.requests += 1;
        b.bytes += delta.bytes;
        b.pages += delta.pages;
        b.hits += delta.hits;
        b.read_pages += delta.read_pages;
        b.read_hits += delta.read_hits;
        b.service_ns += delta.service_ns;
    }

    /// Device time spent on maintenance (PWC's procedure) at `time`.
    pub fn maintenance(&mut self, time: Nanos, ns: Nanos) {
        self.bucket(time).maintenance_ns += ns;
    }

    /// The intervals with their ratios filled in.
    pub fn finish(self) -> Vec<IntervalStats> {
        self.buckets.into_iter().map(IntervalStats::finish).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(bytes: u64, hits: u64, service_ns: Nanos) -> IntervalStats {
        IntervalStats { bytes, pages: 2, hits, read_pages: 2, read_hits: hits, service_ns, ..Default::default() }
    }

    #[test]
    fn intervals_from_the_first_request_with_idle_ones_kept() {
        let mut s = Series::new(100);
        s.request(1000, &req(4096, 2, 10));
        s.request(1050, &req(4096, 0, 30));
        s.request(1350, &req(8192, 1, 40));
        s.maintenance(1360, 60);
        let v = s.finish();
        assert_eq!(v.len(), 4);
        assert_eq!(v.iter().map(|b| b.start_ns).collect::<Vec<_>>(), vec![1000, 1100, 1200, 1300]);
        assert_eq!((v[0].requests, v[0].hits, v[0].pages), (2, 2, 4));
        assert_eq!(v[0].hit_ratio, 0.5);
        assert_eq!(v[0].mean_latency_ns, 20.0);
        // 8192 bytes over 40 ns of service: 8192e-6 MB / 40e-9 s
        assert_eq!(v[0].throughput_mb_s, 8192.0 / 1e6 / 40e-9);
        assert_eq!((v[1].requests, v[1].hit_ratio, v[1].throughput_mb_s), (0, 0.0, 0.0));
        // maintenance time counts against the interval's throughput, not its latency
        assert_eq!(v[3].mean_latency_ns, 40.0);
        assert_eq!(v[3].throughput_mb_s, 8192.0 / 1e6 / 100e-9);
    }
}
