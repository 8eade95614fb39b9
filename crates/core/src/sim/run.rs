//! One simulation run from its description: a trace source, a policy spec, a
//! cache size, a page size and a mode. The CLI and the Python package both go
//! through [`run`], so the same inputs give the same numbers everywhere.

use super::future::{next_uses, Spill};
use super::relative::Sizing;
use super::source::TraceSource;
use super::{queue, Backing, LayoutScan, NextUses, QueueSpec, SimConfig, SimError, Simulator};
use crate::metrics::{CacheDeviceReport, DeviceReport, Report, RunInfo};
use crate::policy::registry::build;
use crate::policy::{BuildCtx, Mode};
use crate::trace;
use crate::trace::progress::Progress;
use crate::units::format_bytes;

/// What to simulate on a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    pub policy: String,
    pub cache_bytes: u64,
    pub page_bytes: u64,
    pub mode: Mode,
    /// Backing device spec (`ftl(nand=mlc2)`), charged with the policy's I/O.
    pub device: Option<String>,
    /// The cache's own device (`ssd`), charged with hits, fills and write-back reads.
    pub cache_device: Option<String>,
    /// Interval of the per-interval time series, ns of trace time.
    pub interval: Option<crate::Nanos>,
    /// Replay as an open queueing system (NCQ depth, inter-arrival scale):
    /// see [`queue`]. Needs `device`.
    pub queue: Option<QueueSpec>,
    /// Take requests as page-aligned (`--align-pages`): no partial-page
    /// accesses, so no read-for-write (see [`Simulator::align_pages`]).
    pub align_pages: bool,
    /// Warm-up and footprint-relative size, resolved on the trace
    /// ([`relative::plan`](super::relative::plan)).
    pub sizing: Sizing,
}

impl RunSpec {
    /// `policy` on a cache of `cache_bytes` with 4 KiB pages, write-back, and
    /// nothing else: no device, no series, no queue, requests as they come.
    pub fn new(policy: impl Into<String>, cache_bytes: u64) -> RunSpec {
        RunSpec {
            policy: policy.into(),
            cache_bytes,
            page_bytes: 4096,
            mode: Mode::WriteBack,
            device: None,
            cache_device: None,
            interval: None,
            queue: None,
            align_pages: false,
            sizing: Sizing::default(),
        }
    }
}

/// A run's error as it is reported: trace errors name their file already,
/// others get the trace's name in front.
pub fn with_trace_name(e: SimError, source: &TraceSource) -> SimError {
    match e {
        SimError::Trace(_) => e,
        other => SimError::Config(format!("{}: {other}", source.name())),
    }
}

/// Checks a run description without reading any trace: sizes and the policy spec.
pub fn check(spec: &RunSpec) -> Result<(), SimError> {
    for d in spec.device.iter().chain(&spec.cache_device) {
        crate::device::catalog::parse(d)?;
    }
    if spec.interval == Some(0) {
        return Err(SimError::Config("the series interval must be longer than zero".into()));
    }
    check_queue(spec)?;
    build_policy(spec).map(|_| ())
}

/// A queueing replay needs sane settings and a device to time the service.
fn check_queue(spec: &RunSpec) -> Result<(), SimError> {
    if let Some(q) = &spec.queue {
        q.check()?;
        if spec.sizing.warmup.is_some() {
            return Err(SimError::Config(
                "--warmup with a queueing replay (--queue-depth, --iat-scale) is not implemented: the queue's latencies would mix warm-up and counted requests".into(),
            ));
        }
        if spec.device.is_none() {
            return Err(SimError::Config(
                "a queueing replay (queue depth, inter-arrival scale) needs a backing device (--device) to time the service".into(),
            ));
        }
    }
    Ok(())
}

/// A run's policy, ready to go.
struct Built {
    policy: Box<dyn crate::policy::Policy>,
    /// Canonical spec text.
    spec: String,
    mode: String,
    capacity: usize,
}

/// Most pages a cache may hold (page keys are numbered in 32 bits).
pub const MAX_CACHE_PAGES: u64 = u32::MAX as u64 - 1;

fn build_policy(spec: &RunSpec) -> Result<Built, SimError> {
    if spec.page_bytes == 0 {
        return Err(SimError::Config("page size must be greater than zero".into()));
    }
    let capacity = spec.cache_bytes / spec.page_bytes;
    if capacity == 0 {
        return Err(SimError::Config(format!(
            "cache {} is smaller than one page of {}",
            format_bytes(spec.cache_bytes),
            format_bytes(spec.page_bytes)
        )));
    }
    let capacity = usize::try_from(capacity).ok().filter(|&c| c <= MAX_CACHE_PAGES as usize).ok_or_else(|| {
        SimError::Config(format!(
            "cache {} is too large: {capacity} pages of {}, more than the {MAX_CACHE_PAGES} (2^32 - 2) a cache may hold",
            format_bytes(spec.cache_bytes),
            format_bytes(spec.page_bytes)
        ))
    })?;
    let (policy, canonical) =
        build(&spec.policy, &BuildCtx { capacity, mode: spec.mode, page_bytes: spec.page_bytes })?;
    let mode = canonical
        .params
        .iter()
        .find(|(k, _)| k == "mode")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| spec.mode.name().to_string());
    Ok(Built { policy, spec: canonical.canonical(), mode, capacity })
}

/// Runs one simulation and returns its report.
pub fn run(source: &TraceSource, spec: &RunSpec) -> Result<Report, SimError> {
    check_queue(spec)?;
    let Built { mut policy, spec: canonical, mode, capacity } = build_policy(spec)?;
    let needs_future = policy.needs_future();
    let first = needs_future || spec.device.is_some() || spec.cache_device.is_some();
    if let Some(p) = source.progress() {
        p.set_passes(if first { 2 } else { 1 });
    }
    let FirstPass { mut backing, mut cache_device, future } =
        if first { first_pass(source, spec, needs_future)? } else { FirstPass::default() };
    let (mut reader, format) = source.open()?;
    let mut sim = Simulator::new(policy.as_mut(), SimConfig { page_bytes: spec.page_bytes })
        .align_pages(spec.align_pages)
        .with_warmup(spec.sizing.warmup_requests);
    if let Some(b) = backing.as_mut() {
        sim = sim.with_backing(b);
    }
    if let Some(c) = cache_device.as_mut() {
        sim = sim.with_cache_device(c);
    }
    if let Some(interval) = spec.interval {
        sim = sim.with_series(interval);
    }
    if let Some(f) = future {
        sim = sim.with_future(f);
    }
    let (counters, queue, series) = match &spec.queue {
        Some(q) => {
            let report = queue::replay_reader(&mut sim, reader.as_mut(), q)?;
            let series = sim.take_series();
            (sim.finish(), Some(report), series)
        }
        None => {
            let (counters, series) = sim.run_with_series(reader.as_mut())?;
            (counters, None, series)
        }
    };
    let skipped = reader.skipped();
    let info = RunInfo {
        policy: canonical,
        mode,
        trace: source.name(),
        format,
        cache_bytes: spec.cache_bytes,
        page_bytes: spec.page_bytes,
        capacity_pages: capacity as u64,
    };
    if counters.requests == 0 && spec.sizing.warmup_requests == 0 {
        return Err(SimError::no_requests("to simulate", skipped));
    }
    spec.sizing.check_counted(counters.requests)?;
    let mut report = Report::new(info, counters, skipped);
    report.trace_note = reader.end_note();
    spec.sizing.annotate(&mut report);
    report.write_share_mean = policy
        .split()
        .filter(|s| s.accesses > 0 && s.capacity > 0)
        .map(|s| s.sum as f64 / (s.accesses as f64 * s.capacity as f64));
    report.device = backing.map(|b| DeviceReport::new(b.spec.clone(), b.stats()));
    report.queue = queue;
    report.cache_device = cache_device.map(|c| CacheDeviceReport::new(c.spec.clone(), c.stats()));
    report.series = series;
    Ok(report)
}

/// [`run`] with its reading of a trace file counted in `progress` (over
/// every pass: a run with a device or an offline policy reads the file twice).
pub fn run_with_progress(source: &TraceSource, spec: &RunSpec, progress: &Progress) -> Result<Report, SimError> {
    run(&source.with_progress(progress), spec)
}

/// What a run needs to know of the whole trace before it starts: the layout
/// of its devices, an offline policy's next uses.
#[derive(Default)]
struct FirstPass {
    backing: Option<Backing>,
    cache_device: Option<Backing>,
    future: Option<NextUses>,
}

/// One streaming pass over the trace for everything [`FirstPass`] holds;
/// memory in proportion to the footprint (next uses go to a temporary
/// file, see [`super::future`]). A trace in memory is used as it is.
fn first_pass(source: &TraceSource, spec: &RunSpec, needs_future: bool) -> Result<FirstPass, SimError> {
    let pb = spec.page_bytes;
    if let TraceSource::Memory { requests, unit, .. } = source {
        let device = |d: &Option<String>| d.as_deref().map(|d| Backing::new(d, requests, *unit, pb)).transpose();
        return Ok(FirstPass {
            backing: device(&spec.device)?,
            cache_device: device(&spec.cache_device)?,
            future: if needs_future { Some(NextUses::in_memory(next_uses(requests, *unit, pb)?)) } else { None },
        });
    }
    let (mut reader, _) = source.open()?;
    let unit = reader.unit();
    let scan = |d: &Option<String>| d.as_deref().map(|d| LayoutScan::for_device(d, unit, pb)).transpose();
    let (mut backing, mut cache_device) = (scan(&spec.device)?, scan(&spec.cache_device)?);
    let mut spill = if needs_future { Some(Spill::new()?) } else { None };
    let mut batch = Vec::with_capacity(trace::BATCH);
    let mut index = 0u64;
    while reader.read_batch(&mut batch, trace::BATCH)? > 0 {
        for r in &batch {
            for s in backing.iter_mut().chain(cache_device.iter_mut()) {
                s.add(r)?;
            }
            if let Some(s) = spill.as_mut() {
                s.push(r.op, super::pages_of(r, unit, pb, index)?)?;
            }
            index += 1;
        }
    }
    let device = |d: &Option<String>, s: Option<LayoutScan>| match (d, s) {
        (Some(d), Some(s)) => Backing::with_layout(d, s.finish(), pb).map(Some),
        _ => Ok(None),
    };
    Ok(FirstPass {
        backing: device(&spec.device, backing)?,
        cache_device: device(&spec.cache_device, cache_device)?,
        future: spill.map(Spill::finish).transpose()?,
    })
}

#[cfg(test)]
mod text_tests {
    use super::*;
    use crate::sim::flags::{check_repeat, queue_spec};
    use crate::trace::{Format, Unit};

    #[test]
    fn a_trace_without_requests_is_an_error_not_a_report_of_zeros() {
        // (it used to report a hit ratio of 0 on 0 requests)
        let empty = |skipped| TraceSource::Memory {
            name: "empty".into(),
            format: "mem".into(),
            requests: Vec::new().into(),
            unit: Unit::Bytes,
            skipped,
        };
        let said = |spec: &RunSpec, skipped| run(&empty(skipped), spec).err().map(|e| e.to_string());
        let plain = RunSpec::new("lru", 1 << 20);
        assert_eq!(said(&plain, 0).as_deref(), Some("no requests to simulate"));
        assert_eq!(said(&plain, 2).as_deref(), Some("no requests to simulate (2 malformed lines skipped)"));
        let devices = RunSpec { device: Some("ftl".into()), cache_device: Some("ssd".into()), ..plain.clone() };
        assert_eq!(said(&devices, 0).as_deref(), Some("no requests to simulate"));
        let queued = RunSpec { queue: queue_spec(Some(4), None).unwrap(), ..devices };
        assert_eq!(said(&queued, 0).as_deref(), Some("no requests to simulate"));
        assert_eq!(said(&RunSpec::new("belady", 1 << 20), 0).as_deref(), Some("no requests to simulate"));
    }

    #[test]
    fn a_cache_too_large_says_the_bound() {
        // (it used to say "cache of 274877906944 pages is too large", and no more)
        let e = build_policy(&RunSpec::new("lru", 1 << 50)).err().unwrap().to_string();
        assert_eq!(
            e,
            "cache 1024TiB is too large: 274877906944 pages of 4KiB, more than the 4294967294 (2^32 - 2) a cache may hold"
        );
        assert!(build_policy(&RunSpec::new("lru", 4294967294 * 4096)).is_ok());
    }

    #[test]
    fn repeat_zero_is_an_error_naming_the_flag() {
        assert!(check_repeat(1).is_ok() && check_repeat(7).is_ok());
        assert_eq!(check_repeat(0).unwrap_err().to_string(), "--repeat: must be at least 1, not 0");
        let gen = TraceSource::Gen("zipf(keys=10,requests=5)".into());
        let e = gen.repeat(0).err().unwrap().to_string();
        assert!(e.starts_with("--repeat: "), "{e}");
        let TraceSource::Memory { requests, .. } = gen.repeat(1).unwrap() else { panic!() };
        assert_eq!(requests.len(), 5);
    }

    #[test]
    fn file_sources_take_the_reader_options() {
        let s = TraceSource::file("t.csv", Format::Csv, true, Some("time=0,op=1,offset=2,size=3")).unwrap();
        let TraceSource::File { opts, .. } = &s else { panic!() };
        assert!(opts.skip_bad && opts.csv.is_some());
        let e = TraceSource::file("t.csv", Format::Csv, false, Some("nonsense")).err().unwrap().to_string();
        assert!(e.starts_with("--csv-columns: "), "{e}");
    }

    #[test]
    fn errors_other_than_the_traces_get_its_name() {
        let gen = TraceSource::Gen("zipf".into());
        let e = with_trace_name(SimError::Config("bad".into()), &gen);
        assert_eq!(e.to_string(), "zipf: bad");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = with_trace_name(trace::TraceError::Io { path: "f".into(), error: io }.into(), &gen);
        assert_eq!(e.to_string(), "f: gone");
    }
}
