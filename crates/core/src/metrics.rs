//! What a run counts and reports. Counters are per page access unless named
//! `*_requests`; the paper 003 classification counts page misses.

use crate::device::DeviceStats;
use crate::Nanos;
use serde::Serialize;

/// Raw counters accumulated by the simulator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub requests: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub trim_requests: u64,
    /// Requests all of whose pages hit.
    pub request_hits: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,

    /// Page accesses by reads and writes (trims are counted apart).
    pub pages: u64,
    pub read_pages: u64,
    pub write_pages: u64,
    pub trim_pages: u64,
    pub hits: u64,
    pub read_hits: u64,
    pub write_hits: u64,
    /// Page accesses (reads and writes) served without the backing device:
    /// the access's own data neither came from it (no `Fetch`, no
    /// `ReadForWrite`) nor went to it (no `WriteThrough`) — a read hit, or a
    /// write the cache absorbed (write-back / write-only, hit or admitted
    /// miss). Not served: a read miss, any write in write-through,
    /// write-around or read-only mode, a partial write miss that needs the old
    /// page first. Write-backs and padding reads that replacement causes are
    /// charged to the devices but do not make the access itself unserved.
    pub served_pages: u64,
    /// The request bytes that fell in served page accesses.
    pub served_bytes: u64,
    /// Write hits that still wrote the backing device (write-through,
    /// write-around): hits in `write_hits`, but not served.
    pub write_hits_to_backing: u64,

    /// Pages read from the backing device (misses served, read-for-write).
    pub backing_reads: u64,
    /// Pages written to the backing device during the run (write-through and write-back; not the drain).
    pub backing_writes: u64,
    /// Backing reads made so a partial write could be cached (paper 001 §3.3).
    pub read_for_write: u64,
    /// Clean pages read from backing to pad a block flush (BPLRU).
    pub padding_reads: u64,
    /// Dirty pages written back on eviction.
    pub dirty_writebacks: u64,
    pub evictions: u64,
    /// Pages written into the cache (fills and write hits).
    pub cache_writes: u64,
    /// Pages dropped by trims or invalidating writes.
    pub invalidations: u64,
    /// Dirty pages whose data a trim made obsolete (never written back).
    pub dirty_discarded: u64,

    /// Paper 003 Table 1: a read miss that evicted a dirty page (2 disk accesses).
    pub read_replace_dirty: u64,
    /// A read miss that evicted a clean page or none (1 disk access).
    pub read_overwrite_clean: u64,
    /// A write miss that evicted a dirty page (1 disk access).
    pub write_replace_dirty: u64,
    /// A write miss that evicted a clean page or none (no disk access).
    pub write_overwrite_clean: u64,

    /// Paper 003's DRAM + NVRAM caches: hits by the tier that held the page.
    /// A write hit in DRAM moves the page to NVRAM (Write Purge) and Table 1
    /// processes it as a write miss, so each such hit is also counted in
    /// `write_replace_dirty` or `write_overwrite_clean` (and in
    /// `migrations_to_nvram`); with no NVRAM it is a plain hit.
    pub read_hits_dram: u64,
    pub read_hits_nvram: u64,
    pub write_hits_dram: u64,
    pub write_hits_nvram: u64,
    /// Pages moved DRAM → NVRAM by a write (Write Purge).
    pub migrations_to_nvram: u64,
    /// Pages moved NVRAM → DRAM after their write-back (Write Global).
    pub migrations_to_dram: u64,

    /// Pages written back by the final drain.
    pub drain_writes: u64,

    /// Maintenance (`Policy::tick`, e.g. PWC's caching-and-eviction procedure):
    /// pages read from backing to fill the cache, pages written back, pages
    /// written into the cache, and the device time it all took.
    pub maintenance_reads: u64,
    pub maintenance_writes: u64,
    pub maintenance_cache_writes: u64,
    pub maintenance_ns: u64,
}

impl Counters {
    pub fn misses(&self) -> u64 {
        self.pages - self.hits
    }
    /// Paper 003 formula (1): 2·ReadReplaceDirty + ReadOverwriteClean + WriteReplaceDirty.
    pub fn backing_accesses(&self) -> u64 {
        2 * self.read_replace_dirty + self.read_overwrite_clean + self.write_replace_dirty
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// One run's report: what `ssdcache sim --json` prints, one object per run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Canonical policy spec.
    pub policy: String,
    pub mode: String,
    pub trace: String,
    pub format: String,
    pub cache_bytes: u64,
    pub page_bytes: u64,
    pub capacity_pages: u64,
    #[serde(flatten)]
    pub counters: Counters,
    pub misses: u64,
    pub hit_ratio: f64,
    pub read_hit_ratio: f64,
    pub write_hit_ratio: f64,
    pub request_hit_ratio: f64,
    /// `served_pages / pages`: what paper 000's hit-ratio figures measure.
    pub served_ratio: f64,
    /// `served_bytes / (read_bytes + write_bytes)`.
    pub served_bytes_ratio: f64,
    /// Paper 003 formula (1) over the classification above.
    pub backing_accesses: u64,
    /// Lines skipped as malformed (`--skip-bad`).
    pub skipped: u64,
    /// How the trace ended, when that matters (a recording cut off by a crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_note: Option<String>,
    /// Policies with an adaptive split (ABM): the mean share of the cache
    /// its second part was given (ABM's `P`, the write buffer's), over every
    /// page access; `null` for other policies.
    pub write_share_mean: Option<f64>,
    /// The cache's share of the trace's footprint (`--cache 5%`); `null` for a size in bytes.
    pub cache_share: Option<f64>,
    /// The trace's footprint in pages, when it was measured (`--cache N%`).
    pub footprint_pages: Option<u64>,
    /// The `--warmup` given, and the leading requests it ran uncounted: every
    /// counter above is of the requests after them.
    pub warmup: Option<String>,
    pub warmup_requests: u64,
    /// What the backing device model did (`--device`).
    #[serde(flatten)]
    pub device: Option<DeviceReport>,
    /// The queueing replay (`--queue-depth`, `--iat-scale`).
    #[serde(flatten)]
    pub queue: Option<QueueReport>,
    /// What the cache's own device did (`--cache-device`).
    #[serde(flatten)]
    pub cache_device: Option<CacheDeviceReport>,
    /// Per-interval series (`--interval`): the intervals that had requests,
    /// in time order; not in CSV output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<IntervalStats>,
}

/// The cache device's side of a run (hits read from it, fills and write hits
/// written to it, write-backs read from it).
#[derive(Clone, Debug, Serialize)]
pub struct CacheDeviceReport {
    pub cache_device: String,
    pub cache_device_page_reads: u64,
    pub cache_device_page_writes: u64,
    pub cache_device_extra_page_writes: u64,
    pub cache_device_erases: u64,
    pub cache_device_time_ns: Nanos,
}

impl CacheDeviceReport {
    pub fn new(device: String, s: DeviceStats) -> CacheDeviceReport {
        CacheDeviceReport {
            cache_device: device,
            cache_device_page_reads: s.host_page_reads,
            cache_device_page_writes: s.host_page_writes,
            cache_device_extra_page_writes: s.extra_page_writes,
            cache_device_erases: s.erases,
            cache_device_time_ns: s.total_time(),
        }
    }
}

/// The open-loop queueing replay of a run (see [`crate::sim::queue`]): what
/// the host saw. Times are from the first arrival; the final drain is not in
/// them. MB are 10^6 bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueReport {
    /// NCQ depth: commands the device holds at once.
    pub queue_depth: u32,
    /// Factor on the trace's inter-arrival times.
    pub iat_scale: f64,
    /// Every request had the same timestamp, so all arrived at once.
    pub all_at_once: bool,
    /// Requests served (trims included).
    pub completed_requests: u64,
    /// First arrival to last completion.
    pub makespan_ns: Nanos,
    /// Time the device spent serving (the sum of service times).
    pub device_busy_ns: Nanos,
    /// `device_busy_ns / makespan_ns`.
    pub utilization: f64,
    /// `completed_requests / makespan`.
    pub iops: f64,
    /// Bytes read and written per second of makespan, in MB/s.
    pub bandwidth_mb_s: f64,
    pub write_bandwidth_mb_s: f64,
    /// Completion − arrival.
    pub latency_mean_ns: f64,
    /// Percentiles from an HDR histogram: within 0.1 % of the exact value.
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_max_ns: u64,
    /// Time-weighted mean number of commands in the NCQ (the one in service included).
    pub avg_queue_length: f64,
    /// Time an arrival waited in the host FIFO for a free NCQ slot.
    pub mean_host_wait_ns: f64,
    pub max_host_wait_ns: u64,
}

/// One interval of a run's time series (`--interval`). A series lists only
/// intervals that had requests; `interval` says which one each row is.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IntervalStats {
    /// Index of the interval, counted from the one the first request falls in (0).
    pub interval: u64,
    /// Trace time the interval starts at: the first request's time + `interval` × the length.
    pub start_ns: Nanos,
    pub requests: u64,
    /// Bytes read and written by the requests.
    pub bytes: u64,
    pub pages: u64,
    pub hits: u64,
    pub read_pages: u64,
    pub read_hits: u64,
    /// Page accesses and bytes served without the backing device (see
    /// [`Counters::served_pages`]).
    pub served_pages: u64,
    pub served_bytes: u64,
    /// Device time the requests cost (backing and cache device).
    pub service_ns: Nanos,
    /// Device time maintenance cost in the interval.
    pub maintenance_ns: Nanos,
    pub hit_ratio: f64,
    pub read_hit_ratio: f64,
    pub served_ratio: f64,
    pub served_bytes_ratio: f64,
    /// Mean device time per request.
    pub mean_latency_ns: f64,
    /// Bytes over the device time spent (requests and maintenance): what the
    /// devices could sustain, in MB (10^6 B) per second.
    pub throughput_mb_s: f64,
    /// Policies with an adaptive split (ABM's `P`): its mean share of the
    /// cache over the interval's page accesses; `null` for other policies.
    pub write_share: Option<f64>,
}

impl IntervalStats {
    /// Fills in the ratios.
    pub fn finish(mut self) -> IntervalStats {
        self.hit_ratio = ratio(self.hits, self.pages);
        self.read_hit_ratio = ratio(self.read_hits, self.read_pages);
        self.served_ratio = ratio(self.served_pages, self.pages);
        self.served_bytes_ratio = ratio(self.served_bytes, self.bytes);
        self.mean_latency_ns = ratio(self.service_ns, self.requests);
        let busy = self.service_ns + self.maintenance_ns;
        self.throughput_mb_s = if busy == 0 { 0.0 } else { self.bytes as f64 / 1e6 / (busy as f64 / 1e9) };
        self
    }
}

/// The backing device's side of a run: flash writes, erases, time.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    /// Canonical device spec.
    pub device: String,
    #[serde(flatten)]
    pub stats: DeviceStats,
    /// Cost-model execution time: Σ count × cost over reads, writes, extra
    /// (GC) writes and erases (paper 004), the final drain included.
    pub execution_time_ns: Nanos,
}

impl DeviceReport {
    pub fn new(device: String, stats: DeviceStats) -> DeviceReport {
        DeviceReport { device, execution_time_ns: stats.total_time(), stats }
    }
}

/// What a run was: the parts of a report that are not counters.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub policy: String,
    pub mode: String,
    pub trace: String,
    pub format: String,
    pub cache_bytes: u64,
    pub page_bytes: u64,
    pub capacity_pages: u64,
}

impl Report {
    pub fn new(info: RunInfo, c: Counters, skipped: u64) -> Report {
        Report {
            policy: info.policy,
            mode: info.mode,
            trace: info.trace,
            format: info.format,
            cache_bytes: info.cache_bytes,
            page_bytes: info.page_bytes,
            capacity_pages: info.capacity_pages,
            misses: c.misses(),
            hit_ratio: ratio(c.hits, c.pages),
            read_hit_ratio: ratio(c.read_hits, c.read_pages),
            write_hit_ratio: ratio(c.write_hits, c.write_pages),
            request_hit_ratio: ratio(c.request_hits, c.requests - c.trim_requests),
            served_ratio: ratio(c.served_pages, c.pages),
            served_bytes_ratio: ratio(c.served_bytes, c.read_bytes + c.write_bytes),
            backing_accesses: c.backing_accesses(),
            skipped,
            trace_note: None,
            write_share_mean: None,
            cache_share: None,
            footprint_pages: None,
            warmup: None,
            warmup_requests: 0,
            counters: c,
            device: None,
            queue: None,
            cache_device: None,
            series: Vec::new(),
        }
    }
}

/// What an object-mode run counts (`--unit object`): requests and their bytes,
/// hits and hit bytes by operation. Deletes are not requests for the ratios.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ObjectCounters {
    pub requests: u64,
    pub hits: u64,
    /// Bytes requested (each request's object size) and those that hit.
    pub bytes: u64,
    pub hit_bytes: u64,
    pub read_requests: u64,
    pub read_hits: u64,
    pub read_bytes: u64,
    pub read_hit_bytes: u64,
    pub write_requests: u64,
    pub write_hits: u64,
    pub write_bytes: u64,
    pub write_hit_bytes: u64,
    /// Deletes (trims) seen, and those that found the object cached.
    pub deletes: u64,
    pub deletes_cached: u64,
    /// Misses on objects larger than the whole cache: never cached.
    pub too_large: u64,
    pub too_large_bytes: u64,
    /// Misses the policy declined to cache (admission).
    pub declined: u64,
    pub evictions: u64,
}

/// One object-mode run's report: what `ssdcache sim --unit object --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectReport {
    pub policy: String,
    /// Always `"object"`.
    pub unit: String,
    pub trace: String,
    pub format: String,
    pub cache_bytes: u64,
    #[serde(flatten)]
    pub counters: ObjectCounters,
    pub misses: u64,
    pub miss_bytes: u64,
    /// Object miss ratio: misses / requests.
    pub miss_ratio: f64,
    /// Byte miss ratio: bytes of the misses / bytes requested.
    pub byte_miss_ratio: f64,
    pub hit_ratio: f64,
    pub byte_hit_ratio: f64,
    /// Byte-weighted hit ratios of reads and of writes (`null` without any).
    pub read_byte_hit_ratio: Option<f64>,
    pub write_byte_hit_ratio: Option<f64>,
    /// Objects and bytes cached at the end.
    pub objects_cached: u64,
    pub bytes_cached: u64,
    pub skipped: u64,
}

impl ObjectReport {
    pub fn new(policy: String, trace: String, format: String, cache_bytes: u64, c: ObjectCounters) -> Self {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let misses = c.requests - c.hits;
        let miss_bytes = c.bytes - c.hit_bytes;
        ObjectReport {
            policy,
            unit: "object".into(),
            trace,
            format,
            cache_bytes,
            counters: c,
            misses,
            miss_bytes,
            miss_ratio: ratio(misses, c.requests),
            byte_miss_ratio: ratio(miss_bytes, c.bytes),
            hit_ratio: ratio(c.hits, c.requests),
            byte_hit_ratio: ratio(c.hit_bytes, c.bytes),
            read_byte_hit_ratio: (c.read_bytes > 0).then(|| ratio(c.read_hit_bytes, c.read_bytes)),
            write_byte_hit_ratio: (c.write_bytes > 0).then(|| ratio(c.write_hit_bytes, c.write_bytes)),
            objects_cached: 0,
            bytes_cached: 0,
            skipped: 0,
        }
    }
}
