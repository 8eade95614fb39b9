//! Object mode for Python (`unit="object"`): `run_objects` and `mrc_objects`,
//! the functions `ssdcache sim --unit object` and `mrc --unit object` call, so
//! their numbers are the CLI's.

use super::{curve_sizes, guarded, size, source_of, value_error};
use crate::convert::one_line;
use pyo3::prelude::*;
use ssdcache::mrc::objects::{exact_lru_bytes, sampled_objects, ObjectSizes};
use ssdcache::sim::flags::parse_cache_size;
use ssdcache::sim::objects::{capacities, run_objects as run_one, ObjectSource};

/// The object view of a trace argument (a file: arrays and generators have no sizes).
fn object_source(trace: &Bound<'_, PyAny>) -> PyResult<ObjectSource> {
    let source = source_of(trace)?;
    ObjectSource::of(&source).map_err(|e| value_error(one_line(&e)))
}

/// One object-mode run's report as the JSON text `ssdcache sim --unit object
/// --json` prints; `cache` in bytes, "64MiB" or a share of the footprint in bytes ("5%").
#[pyfunction]
pub fn run_objects(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    policy: &str,
    cache: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let cache = parse_cache_size(&size("cache", cache)?).map_err(|e| value_error(e.to_string()))?;
    // (the spec first, before any trace is read, as the command line does)
    ssdcache::policy::registry::build_sized(policy, 1).map_err(|e| value_error(one_line(&e)))?;
    let source = object_source(trace)?;
    Ok(py.detach(|| {
        guarded(|| {
            let named = |e| one_line(&source.named(e));
            let capacity = capacities(&[cache], &source).map_err(named)?[0];
            let report = run_one(&source, policy, capacity).map_err(named)?;
            serde_json::to_string(&report).map_err(|e| e.to_string())
        })
    })?)
}

/// Object-mode miss-ratio curves as a JSON list: the exact byte-LRU curve, or
/// with `sample` miniature curves of each size-aware policy in `policy`.
#[pyfunction]
#[pyo3(signature = (trace, cache=None, points=20, policy="lru", sample=None, seed=0))]
pub fn mrc_objects(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    cache: Option<Vec<Bound<'_, PyAny>>>,
    points: u64,
    policy: &str,
    sample: Option<String>,
    seed: u64,
) -> PyResult<String> {
    let caches = curve_sizes(cache, points)?;
    let sizes = ObjectSizes::of(caches.as_deref(), points).map_err(|e| value_error(one_line(&e)))?;
    let policies = ssdcache::spec::split_list(policy);
    let rate = sample
        .as_deref()
        .map(ssdcache::mrc::sample::parse_sample_rate)
        .transpose()
        .map_err(|e| value_error(e.to_string()))?;
    if rate.is_none() && policies.iter().any(|p| !p.trim().eq_ignore_ascii_case("lru")) {
        return Err(value_error(format!(
            "policy {policy}: without sample the object-mode curve is exact for lru only; give sample=\"10%\" for others"
        )));
    }
    let source = object_source(trace)?;
    Ok(py.detach(|| {
        guarded(|| {
            let named = |e| one_line(&source.named(e));
            let curves = match rate {
                None => vec![exact_lru_bytes(&source, &sizes).map_err(named)?],
                Some(rate) => sampled_objects(&source, &policies, &sizes, rate, seed).map_err(named)?,
            };
            serde_json::to_string(&curves).map_err(|e| e.to_string())
        })
    })?)
}
