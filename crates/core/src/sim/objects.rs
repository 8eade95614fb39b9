//! Object mode (`--unit object`): requests are keys with sizes, the capacity
//! is in bytes, and a size-aware policy ([`crate::policy::sized`]) decides.
//! One request is one lookup: a hit, or a miss that the policy caches
//! (evicting until it fits) unless the object is larger than the whole cache
//! (`too_large`, never cached) or the policy declines it.

use super::{SimError, TraceSource};
use crate::metrics::{ObjectCounters, ObjectReport};
use crate::policy::registry::build_sized;
use crate::policy::sized::SizedPolicy;
use crate::trace::objects::{read_all_objects, MemoryObjects, ObjectReader, ObjectRequest};
use crate::trace::{self, Op, BATCH};
use std::sync::Arc;

/// Where an object-mode run's requests come from.
#[derive(Clone)]
pub enum ObjectSource {
    File { path: std::path::PathBuf, format: trace::Format, opts: trace::ReadOptions },
    Memory { name: String, format: String, requests: Arc<[ObjectRequest]>, skipped: u64 },
}

impl ObjectSource {
    /// The object view of a trace source: files only (a generated workload or
    /// a page trace in memory has no sizes).
    pub fn of(source: &TraceSource) -> Result<ObjectSource, SimError> {
        match source {
            TraceSource::File { path, format, opts } => {
                Ok(ObjectSource::File { path: path.clone(), format: *format, opts: opts.clone() })
            }
            TraceSource::Gen(spec) => Err(SimError::Config(format!(
                "object mode needs a trace with object sizes; the workload {spec:?} has none"
            ))),
            TraceSource::Memory { name, .. } => Err(SimError::Config(format!(
                "object mode needs a trace with object sizes; {name} was loaded as pages"
            ))),
        }
    }

    pub fn name(&self) -> String {
        match self {
            ObjectSource::File { path, .. } => path.display().to_string(),
            ObjectSource::Memory { name, .. } => name.clone(),
        }
    }

    /// A run's error as reported: trace errors name their file already, others
    /// get the trace's name in front (as [`super::run::with_trace_name`]).
    pub fn named(&self, e: SimError) -> SimError {
        match e {
            SimError::Trace(_) => e,
            other => SimError::Config(format!("{}: {other}", self.name())),
        }
    }

    /// A reader and the name of the format it reads.
    pub fn open(&self) -> Result<(Box<dyn ObjectReader>, String), SimError> {
        Ok(match self {
            ObjectSource::File { path, format, opts } => {
                let (reader, used) = trace::open_objects(path, *format, opts)?;
                (reader, used.name().to_string())
            }
            ObjectSource::Memory { requests, format, .. } => {
                (Box::new(MemoryObjects::new(requests.clone())), format.clone())
            }
        })
    }

    /// The requests `keep` keeps, in memory (a sample for miniature runs).
    pub fn filtered(&self, keep: &dyn Fn(&ObjectRequest) -> bool) -> Result<ObjectSource, SimError> {
        let (mut reader, format) = self.open()?;
        let mut kept = Vec::new();
        let mut batch = Vec::with_capacity(BATCH);
        while reader.read_objects(&mut batch, BATCH)? > 0 {
            kept.extend(batch.iter().filter(|r| keep(r)));
        }
        Ok(ObjectSource::Memory { name: self.name(), format, requests: kept.into(), skipped: reader.skipped() })
    }

    /// The whole trace in memory, so that many runs share one parse.
    pub fn load(&self) -> Result<ObjectSource, SimError> {
        if let ObjectSource::Memory { .. } = self {
            return Ok(self.clone());
        }
        let (mut reader, format) = self.open()?;
        let requests = read_all_objects(reader.as_mut())?;
        Ok(ObjectSource::Memory { name: self.name(), format, requests: requests.into(), skipped: reader.skipped() })
    }
}

/// Requests, bytes and footprint of an object trace, counted request by request.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ObjectTotals {
    pub requests: u64,
    pub bytes: u64,
    /// Distinct objects, and their bytes (each at its first size).
    pub footprint_objects: u64,
    pub footprint_bytes: u64,
    pub deletes: u64,
    pub skipped: u64,
    #[serde(skip)]
    seen: hashbrown::HashSet<u64>,
}

impl ObjectTotals {
    /// Counts one request; whether it is a delete.
    pub fn count(&mut self, r: &ObjectRequest) -> bool {
        if r.op == Op::Trim {
            self.deletes += 1;
            return true;
        }
        self.requests += 1;
        self.bytes += r.size;
        if self.seen.insert(r.key) {
            self.footprint_objects += 1;
            self.footprint_bytes += r.size;
        }
        false
    }

    /// The totals of a sample taken at `rate`, scaled up to the whole trace.
    pub fn scaled_up(&self, rate: f64) -> ObjectTotals {
        let up = |n: u64| (n as f64 / rate).round() as u64;
        ObjectTotals {
            requests: up(self.requests),
            bytes: up(self.bytes),
            footprint_objects: up(self.footprint_objects),
            footprint_bytes: up(self.footprint_bytes),
            deletes: up(self.deletes),
            skipped: self.skipped,
            seen: Default::default(),
        }
    }
}

/// [`ObjectTotals`] of `source`, in one pass (memory: one entry per object).
pub fn object_totals(source: &ObjectSource) -> Result<ObjectTotals, SimError> {
    let (mut reader, _) = source.open()?;
    let mut t = ObjectTotals::default();
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_objects(&mut batch, BATCH)? > 0 {
        batch.iter().for_each(|r| {
            t.count(r);
        });
    }
    t.skipped = reader.skipped();
    Ok(t)
}

/// Capacities in bytes for `source`: sizes in bytes as they are, shares of
/// its footprint in bytes resolved by one pass over it (rounded up, at least 1).
pub fn capacities(sizes: &[super::flags::CacheSize], source: &ObjectSource) -> Result<Vec<u64>, SimError> {
    use super::flags::CacheSize;
    let footprint =
        if sizes.iter().any(|c| matches!(c, CacheSize::Share(_))) { object_totals(source)?.footprint_bytes } else { 0 };
    Ok(sizes
        .iter()
        .map(|c| match *c {
            CacheSize::Bytes(b) => b,
            CacheSize::Share(f) => f.of_ceil(footprint).max(1),
        })
        .collect())
}

/// Replays object requests through a size-aware policy of `capacity` bytes.
pub struct ObjectSimulator<'p> {
    policy: &'p mut dyn SizedPolicy,
    capacity: u64,
    pub counters: ObjectCounters,
}

impl<'p> ObjectSimulator<'p> {
    pub fn new(policy: &'p mut dyn SizedPolicy, capacity: u64) -> Self {
        ObjectSimulator { policy, capacity, counters: ObjectCounters::default() }
    }

    /// One request; whether it hit.
    #[inline]
    pub fn request(&mut self, r: &ObjectRequest) -> bool {
        let c = &mut self.counters;
        if r.op == Op::Trim {
            c.deletes += 1;
            c.deletes_cached += self.policy.remove(r.key) as u64;
            return false;
        }
        let hit = self.policy.lookup(r.key, r.size);
        if !hit {
            if r.size > self.capacity {
                c.too_large += 1;
                c.too_large_bytes += r.size;
            } else if !self.policy.insert(r.key, r.size) {
                c.declined += 1;
            }
        }
        let hit_bytes = if hit { r.size } else { 0 };
        c.requests += 1;
        c.hits += hit as u64;
        c.bytes += r.size;
        c.hit_bytes += hit_bytes;
        if r.op == Op::Write {
            c.write_requests += 1;
            c.write_hits += hit as u64;
            c.write_bytes += r.size;
            c.write_hit_bytes += hit_bytes;
        } else {
            c.read_requests += 1;
            c.read_hits += hit as u64;
            c.read_bytes += r.size;
            c.read_hit_bytes += hit_bytes;
        }
        hit
    }

    /// Replays a whole trace and returns the counters.
    pub fn run(mut self, reader: &mut dyn ObjectReader) -> Result<ObjectCounters, SimError> {
        let mut batch = Vec::with_capacity(BATCH);
        while reader.read_objects(&mut batch, BATCH)? > 0 {
            for r in &batch {
                self.request(r);
            }
        }
        self.counters.evictions = self.policy.evictions();
        Ok(self.counters)
    }
}

/// One object-mode run: `policy` (a spec of [`crate::policy::registry::SIZED_POLICIES`])
/// with `cache_bytes` of room over `source`.
pub fn run_objects(source: &ObjectSource, policy: &str, cache_bytes: u64) -> Result<ObjectReport, SimError> {
    if cache_bytes == 0 {
        return Err(SimError::Config("object mode needs a cache of at least 1 byte".into()));
    }
    let (mut p, spec) = build_sized(policy, cache_bytes)?;
    let (mut reader, format) = source.open()?;
    let counters = ObjectSimulator::new(p.as_mut(), cache_bytes).run(reader.as_mut())?;
    if counters.requests == 0 {
        return Err(SimError::no_requests("to simulate", reader.skipped()));
    }
    let mut report = ObjectReport::new(spec.canonical(), source.name(), format, cache_bytes, counters);
    report.objects_cached = p.len() as u64;
    report.bytes_cached = p.used_bytes();
    report.skipped = reader.skipped();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::SIZED_POLICIES;

    fn req(key: u64, size: u64) -> ObjectRequest {
        ObjectRequest { time: 0, key, size, op: Op::Read }
    }

    fn memory(reqs: Vec<ObjectRequest>) -> ObjectSource {
        ObjectSource::Memory { name: "t".into(), format: "test".into(), requests: reqs.into(), skipped: 0 }
    }

    #[test]
    fn objects_larger_than_the_cache_are_never_cached() {
        let src = memory(vec![req(1, 50), req(2, 200), req(2, 200), req(1, 50)]);
        for info in SIZED_POLICIES {
            let r = run_objects(&src, info.name, 100).unwrap();
            assert_eq!((r.counters.too_large, r.counters.too_large_bytes), (2, 400), "{}", info.name);
            // (S3-FIFO declines the 50-byte object too: more than its 10-byte small queue)
            let (misses, declined) = if info.name == "s3fifo" { (4, 2) } else { (3, 0) };
            assert_eq!((r.counters.requests, r.misses, r.counters.declined), (4, misses, declined), "{}", info.name);
            assert!(r.bytes_cached <= 100);
        }
    }

    #[test]
    fn page_policies_are_refused_naming_the_sized_ones() {
        let e = run_objects(&memory(vec![req(1, 1)]), "arc", 10).err().unwrap().to_string();
        assert!(e.contains("arc") && e.contains("lru") && e.contains("gdsf") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn lru_evicts_until_the_new_object_fits() {
        // 60 + 30 fit in 100; 40 more evicts 60 (the oldest) only
        let src = memory(vec![req(1, 60), req(2, 30), req(3, 40), req(2, 30), req(1, 60)]);
        let r = run_objects(&src, "lru", 100).unwrap();
        assert_eq!((r.counters.hits, r.counters.evictions), (1, 2));
        assert_eq!(r.byte_miss_ratio, 190.0 / 220.0);
    }
}
