//! `ssdcache._core`: the simulator for Python. Every run goes through
//! `ssdcache::sim::run::run`, the function `ssdcache sim` calls, so the same
//! inputs give the same report; `run` returns it as the JSON text
//! `ssdcache sim --json` prints. The GIL is released while a trace loads and
//! while a simulation runs, so threads run simulations in parallel — except a
//! run of a policy written in Python (`policy.rs`), which holds it.
//!
//! The API is fixed by the contract with the Python package
//! (`python/ssdcache`); `python/ssdcache/_core.pyi` types it.

mod convert;
mod objects;
mod policy;

use convert::{Columns, SpecText};
use numpy::{Element, PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use ssdcache::device::catalog::DEVICES;
use ssdcache::mrc::sized::{exact_lru_sized, SizedCurve};
use ssdcache::policy::registry::POLICIES;
use ssdcache::policy::{MODES, MODE_PARAM};
use ssdcache::sim::flags::{parse_cache_size, parse_warmup, CacheSize, Warmup};
use ssdcache::sim::run::with_trace_name;
use ssdcache::sim::TraceSource;
use ssdcache::spec::ParamInfo;
use ssdcache::trace::{Format, Unit};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// Runs `f`, turning a panic (a bug) into an error instead of unwinding into
/// Python. Safe to call with the GIL released.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(Failure::Input),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Failure::Panic(msg))
        }
    }
}

/// Why a call failed: bad input (ValueError) or a bug (RuntimeError).
enum Failure {
    Input(String),
    Panic(String),
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Input(msg) => value_error(msg),
            Failure::Panic(msg) => {
                PyRuntimeError::new_err(format!("ssdcache panicked (a bug, please report it): {msg}"))
            }
        }
    }
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// `d[key]`, with `None` as absent.
fn get<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(d.get_item(key)?.filter(|v| !v.is_none()))
}

fn keys(what: &str, d: &Bound<'_, PyDict>, known: &[&str]) -> PyResult<()> {
    let mut given = Vec::new();
    for k in d.keys() {
        let k = k
            .cast::<PyString>()
            .map_err(|_| value_error(format!("{what}: keys must be str, got {}", type_name(&k))))?;
        given.push(k.to_string());
    }
    convert::check_keys(what, given.iter().map(String::as_str), known).map_err(value_error)
}

fn text(what: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_string()),
        Err(_) => Err(value_error(format!("{what} must be a str, got {}", type_name(v)))),
    }
}

fn is_int(v: &Bound<'_, PyAny>) -> bool {
    v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>()
}

/// `v` as a Python int: an `int` (not a `bool`) or an integer that indexes like
/// one (numpy's `int64`…); `None` for anything else.
fn as_index<'py>(v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if is_int(v) {
        return Ok(Some(v.clone()));
    }
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() || !v.hasattr("__index__")? {
        return Ok(None);
    }
    Ok(v.call_method0("__index__").ok().filter(is_int))
}

fn int(what: &str, v: &Bound<'_, PyAny>) -> PyResult<i64> {
    let i = as_index(v)?.ok_or_else(|| value_error(format!("{what} must be an int, got {}", type_name(v))))?;
    i.extract::<i64>().map_err(|_| value_error(format!("{what} = {i}: out of range")))
}

/// A size: bytes as an int, or text with a unit.
fn size(what: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Some(i) = as_index(v)? {
        return Ok(i.str()?.to_string());
    }
    text(what, v).map_err(|_| {
        value_error(format!("{what} must be an int (bytes) or a str like \"64MiB\", got {}", type_name(v)))
    })
}

/// `run`'s spec dict, as the command line's text.
fn spec_text(spec: &Bound<'_, PyAny>) -> PyResult<SpecText> {
    let d = spec.cast::<PyDict>().map_err(|_| value_error(format!("spec must be a dict, got {}", type_name(spec))))?;
    keys("spec", d, convert::SPEC_KEYS)?;
    let policy = get(d, "policy")?.ok_or_else(|| value_error("spec needs \"policy\""))?;
    let cache = get(d, "cache")?.ok_or_else(|| value_error("spec needs \"cache\""))?;
    let mut s = SpecText::new(&text("spec[\"policy\"]", &policy)?, &size("spec[\"cache\"]", &cache)?);
    if let Some(v) = get(d, "page")? {
        s.page = Some(size("spec[\"page\"]", &v)?);
    }
    if let Some(v) = get(d, "mode")? {
        s.mode = Some(text("spec[\"mode\"]", &v)?);
    }
    if let Some(v) = get(d, "device")? {
        s.device = Some(text("spec[\"device\"]", &v)?);
    }
    if let Some(v) = get(d, "cache_device")? {
        s.cache_device = Some(text("spec[\"cache_device\"]", &v)?);
    }
    if let Some(v) = get(d, "interval")? {
        // an int is nanoseconds; text is a duration with a unit ("1d")
        s.interval = Some(if let Some(i) = as_index(&v)? {
            format!("{}ns", i.str()?)
        } else {
            text("spec[\"interval\"]", &v).map_err(|_| {
                value_error(format!(
                    "spec[\"interval\"] must be an int (ns) or a str like \"1d\", got {}",
                    type_name(&v)
                ))
            })?
        });
    }
    if let Some(v) = get(d, "queue_depth")? {
        s.queue_depth = Some(int("spec[\"queue_depth\"]", &v)?);
    }
    if let Some(v) = get(d, "iat_scale")? {
        let err = || value_error(format!("spec[\"iat_scale\"] must be a float, got {}", type_name(&v)));
        if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyString>() {
            return Err(err());
        }
        s.iat_scale = Some(v.extract::<f64>().map_err(|_| err())?);
    }
    if let Some(v) = get(d, "align_pages")? {
        if !v.is_instance_of::<PyBool>() {
            return Err(value_error(format!("spec[\"align_pages\"] must be a bool, got {}", type_name(&v))));
        }
        s.align_pages = Some(v.extract::<bool>()?);
    }
    if let Some(v) = get(d, "repeat")? {
        s.repeat = Some(int("spec[\"repeat\"]", &v)?);
    }
    if let Some(v) = get(d, "warmup")? {
        // an int is a request count; text is a share, duration or count ("20%", "1h", "5M")
        s.warmup = Some(match as_index(&v)? {
            Some(i) => i.str()?.to_string(),
            None => text("spec[\"warmup\"]", &v)?,
        });
    }
    Ok(s)
}

/// One column of an arrays trace: a 1-d numpy array of exactly `T`.
fn column<'py, T: Element>(
    arrays: &Bound<'py, PyDict>,
    name: &str,
    dtype_name: &str,
) -> PyResult<Option<numpy::PyReadonlyArray1<'py, T>>> {
    let Some(v) = get(arrays, name)? else { return Ok(None) };
    let what = format!("arrays[{name:?}]");
    let arr = v
        .cast::<PyUntypedArray>()
        .map_err(|_| value_error(format!("{what} must be a numpy array of {dtype_name}, got {}", type_name(&v))))?;
    if arr.ndim() != 1 {
        return Err(value_error(format!("{what} must be one-dimensional, got {} dimensions", arr.ndim())));
    }
    let dtype = arr.dtype();
    if !dtype.is_equiv_to(&numpy::dtype::<T>(v.py())) {
        return Err(value_error(format!("{what} must have dtype {dtype_name}, got {}", dtype.str()?)));
    }
    let typed = v.cast::<PyArray1<T>>().map_err(|_| value_error(format!("{what} must have dtype {dtype_name}")))?;
    typed.try_readonly().map(Some).map_err(|e| value_error(format!("{what}: {e}")))
}

fn dtype_of(name: &str) -> &'static str {
    convert::COLUMNS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap_or("?")
}

/// A trace dict (see the contract) as a source: files and generators are
/// read when run; arrays are copied into requests now.
fn source_from_dict(d: &Bound<'_, PyDict>) -> PyResult<TraceSource> {
    let kinds = ["path", "gen", "arrays"];
    let given: Vec<&str> = kinds.iter().copied().filter(|k| d.contains(*k).unwrap_or(false)).collect();
    if given.len() != 1 {
        return Err(value_error(format!(
            "a trace dict needs exactly one of \"path\", \"gen\" or \"arrays\", got {}",
            if given.is_empty() { "none".to_string() } else { given.join(" and ") }
        )));
    }
    match given[0] {
        "path" => {
            keys("trace", d, convert::PATH_KEYS)?;
            let p = get(d, "path")?.ok_or_else(|| value_error("trace[\"path\"] is None"))?;
            let path: PathBuf = p.extract().map_err(|_| {
                value_error(format!("trace[\"path\"] must be a str or os.PathLike, got {}", type_name(&p)))
            })?;
            let format = match get(d, "format")? {
                Some(f) => text("trace[\"format\"]", &f)?
                    .parse::<Format>()
                    .map_err(|e| value_error(format!("--format: {e}")))?,
                None => Format::Auto,
            };
            let skip_bad = match get(d, "skip_bad")? {
                Some(b) => b
                    .extract::<bool>()
                    .map_err(|_| value_error(format!("trace[\"skip_bad\"] must be a bool, got {}", type_name(&b))))?,
                None => false,
            };
            let cols = get(d, "csv_columns")?.map(|c| text("trace[\"csv_columns\"]", &c)).transpose()?;
            TraceSource::file(path, format, skip_bad, cols.as_deref()).map_err(|e| value_error(convert::one_line(&e)))
        }
        "gen" => {
            keys("trace", d, convert::GEN_KEYS)?;
            let g = get(d, "gen")?.ok_or_else(|| value_error("trace[\"gen\"] is None"))?;
            Ok(TraceSource::Gen(text("trace[\"gen\"]", &g)?))
        }
        _ => {
            keys("trace", d, convert::ARRAYS_KEYS)?;
            let a = get(d, "arrays")?.ok_or_else(|| value_error("trace[\"arrays\"] is None"))?;
            let arrays = a.cast::<PyDict>().map_err(|_| {
                value_error(format!("trace[\"arrays\"] must be a dict of numpy arrays, got {}", type_name(&a)))
            })?;
            let names: Vec<&str> = convert::COLUMNS.iter().map(|(n, _)| *n).collect();
            keys("trace[\"arrays\"]", arrays, &names)?;
            let unit = match get(d, "unit")? {
                Some(u) => convert::parse_unit(&text("trace[\"unit\"]", &u)?).map_err(value_error)?,
                None => Unit::Pages,
            };
            let name = match get(d, "name")? {
                Some(n) => text("trace[\"name\"]", &n)?,
                None => convert::DEFAULT_ARRAYS_NAME.to_string(),
            };
            let addr = column::<u64>(arrays, "addr", dtype_of("addr"))?
                .ok_or_else(|| value_error("trace[\"arrays\"] needs \"addr\" (uint64) and \"op\" (uint8)"))?;
            let op = column::<u8>(arrays, "op", dtype_of("op"))?
                .ok_or_else(|| value_error("trace[\"arrays\"] needs \"addr\" (uint64) and \"op\" (uint8)"))?;
            let len = column::<u32>(arrays, "len", dtype_of("len"))?;
            let time = column::<u64>(arrays, "time", dtype_of("time"))?;
            let dev = column::<u32>(arrays, "dev", dtype_of("dev"))?;
            // Copied with the GIL held: no other thread can change the arrays meanwhile.
            let requests = guarded(|| {
                convert::requests(&Columns {
                    addr: addr.as_array(),
                    op: op.as_array(),
                    len: len.as_ref().map(|a| a.as_array()),
                    time: time.as_ref().map(|a| a.as_array()),
                    dev: dev.as_ref().map(|a| a.as_array()),
                })
            })?;
            Ok(convert::arrays_source(requests, unit, &name))
        }
    }
}

/// A trace argument: a loaded [`Trace`] or a trace dict.
fn source_of(trace: &Bound<'_, PyAny>) -> PyResult<TraceSource> {
    if let Ok(t) = trace.cast::<Trace>() {
        return Ok(t.get().source.clone());
    }
    match trace.cast::<PyDict>() {
        Ok(d) => source_from_dict(d),
        Err(_) => Err(value_error(format!(
            "trace must be a dict ({{\"path\": …}}, {{\"gen\": …}} or {{\"arrays\": …}}) or a Trace from load(), got {}",
            type_name(trace)
        ))),
    }
}

/// Runs one simulation and returns its report as the JSON text `ssdcache sim
/// --json` prints for the same inputs. The GIL is released while it runs.
#[pyfunction]
fn run(py: Python<'_>, trace: &Bound<'_, PyAny>, spec: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = spec_text(spec)?;
    let (spec, repeat) = text.parse().map_err(|e| value_error(convert::one_line(&e)))?;
    let rel = text.relative().map_err(|e| value_error(convert::one_line(&e)))?;
    // A Python policy runs with the GIL held throughout: cheaper than taking
    // it back for each of its calls (the simulator calls it on this thread).
    let python = policy::names_python(&spec.policy);
    let scope = policy::CallScope::enter();
    // The spec first, before any trace is read, as the command line does.
    let checked = attached_if(py, python, || guarded(|| convert::check_spec(&spec)));
    if let Some(broken) = scope.take() {
        return Err(broken.into_err(py, None, ""));
    }
    checked?;
    let source = source_of(trace)?;
    let report = attached_if(py, python, || {
        guarded(|| convert::run_json_sized(&source, &spec, repeat, &rel).map_err(|e| convert::one_line(&e)))
    });
    if let Some(broken) = scope.take() {
        // (an NCQ replay serves requests out of trace order: no request number then)
        let request = broken
            .seq()
            .filter(|_| spec.queue.is_none())
            .and_then(|seq| py.detach(|| convert::request_of_access(&source, spec.page_bytes, repeat, seq)));
        return Err(broken.into_err(py, request, ""));
    }
    Ok(report?)
}

/// `f()` with the GIL held if `attached`, else with the GIL released.
fn attached_if<T: Send>(py: Python<'_>, attached: bool, f: impl FnOnce() -> T + Send) -> T {
    if attached {
        f()
    } else {
        py.detach(f)
    }
}

/// The exact LRU miss-ratio curve of a trace in one pass, as the JSON text
/// `ssdcache mrc --json` prints: at `cache` sizes (bytes, "64MiB" or a share
/// of the footprint, "5%", each), or at `points` sizes evenly spaced up to the
/// footprint; after `warmup` ("20%", "1h", "5M" or a request count).
#[pyfunction]
#[pyo3(signature = (trace, page, cache=None, points=20, warmup=None, policy="lru", sample=None, sample_keys=None, seed=0))]
#[allow(clippy::too_many_arguments)]
fn mrc(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    page: &Bound<'_, PyAny>,
    cache: Option<Vec<Bound<'_, PyAny>>>,
    points: u64,
    warmup: Option<Bound<'_, PyAny>>,
    policy: &str,
    sample: Option<String>,
    sample_keys: Option<u64>,
    seed: u64,
) -> PyResult<String> {
    let page = ssdcache::sim::flags::parse_page(&size("page", page)?).map_err(|e| value_error(e.to_string()))?;
    let sizes = curve_sizes(cache, points)?;
    let warmup = warmup.as_ref().map(warmup_of).transpose()?;
    let source = source_of(trace)?;
    // sampled curves (SHARDS, miniature): a JSON list, one curve per policy
    if sample.is_some() || sample_keys.is_some() {
        use ssdcache::mrc::{miniature, sample as shards};
        let rate =
            sample.as_deref().map(shards::parse_sample_rate).transpose().map_err(|e| value_error(e.to_string()))?;
        if let Some(n) = sample_keys {
            shards::check_sample_keys(n).map_err(|e| value_error(e.to_string()))?;
        }
        let spec = shards::SampleSpec { rate: rate.unwrap_or(1.0), max_keys: sample_keys, seed };
        if warmup.is_some() {
            return Err(value_error(
                "warmup with sample is not supported: sampled curves count from the first request",
            ));
        }
        let policies = ssdcache::spec::split_list(policy);
        let pages = |c: &CacheSize| match *c {
            CacheSize::Bytes(bytes) if bytes >= page => Ok(bytes / page),
            CacheSize::Bytes(bytes) => {
                Err(value_error(format!("cache: {bytes} bytes is smaller than one page ({page})")))
            }
            CacheSize::Share(_) => Err(value_error("cache: a share of the footprint with sample is not supported")),
        };
        let sizes = match sizes {
            Some(list) => miniature::Sizes::Pages(list.iter().map(pages).collect::<PyResult<_>>()?),
            None => miniature::Sizes::Even(points),
        };
        // (the minis run on rayon's threads: a Python policy takes the GIL per call there)
        let scope = policy::CallScope::enter();
        let curves = py.detach(|| {
            guarded(|| {
                let curves = miniature::sampled_curves(&source, page, &policies, &sizes, &spec)
                    .and_then(|curves| {
                        curves.into_iter().map(|c| SizedCurve::plain(c).to_json()).collect::<Result<Vec<_>, _>>()
                    })
                    .map_err(|e| convert::one_line(&e))?;
                serde_json::to_string(&curves).map_err(|e| e.to_string())
            })
        });
        if let Some(broken) = scope.take() {
            return Err(broken.into_err(py, None, " of a sampled miniature run"));
        }
        return Ok(curves?);
    }
    Ok(py.detach(|| {
        guarded(|| {
            let curve = exact_lru_sized(&source, page, sizes.as_deref(), points, warmup.as_ref())
                .and_then(|c| c.to_json())
                .map_err(|e| convert::one_line(&ssdcache::sim::run::with_trace_name(e, &source)))?;
            serde_json::to_string(&curve).map_err(|e| e.to_string())
        })
    })?)
}

/// A curve's `cache` sizes (bytes, "64MiB" or a share, each), checked with its `points`.
fn curve_sizes(cache: Option<Vec<Bound<'_, PyAny>>>, points: u64) -> PyResult<Option<Vec<CacheSize>>> {
    if !(1..=100_000).contains(&points) {
        return Err(value_error(format!("points must be 1 to 100000, not {points}")));
    }
    cache
        .map(|list| {
            list.iter()
                .map(|c| parse_cache_size(&size("cache", c)?).map_err(|e| value_error(e.to_string())))
                .collect::<PyResult<Vec<_>>>()
        })
        .transpose()
}

/// The trace analyzer's report as the JSON text `ssdcache trace analyze --json`
/// prints. `interval` is "auto", a duration ("60s") or a request count ("1Mreq").
#[pyfunction]
#[pyo3(signature = (trace, page, interval="auto", log_base=2.0))]
fn analyze(
    py: Python<'_>,
    trace: &Bound<'_, PyAny>,
    page: &Bound<'_, PyAny>,
    interval: &str,
    log_base: f64,
) -> PyResult<String> {
    let page_bytes = ssdcache::sim::flags::parse_page(&size("page", page)?).map_err(|e| value_error(e.to_string()))?;
    let interval = interval.parse::<ssdcache::analyze::IntervalSpec>().map_err(value_error)?;
    let opts = ssdcache::analyze::Options { page_bytes, interval, log_base };
    opts.check().map_err(|e| value_error(e.to_string()))?;
    let source = source_of(trace)?;
    Ok(py.detach(|| {
        guarded(|| {
            let a = ssdcache::analyze::analyze(&source, opts)
                .map_err(|e| convert::one_line(&with_trace_name(e, &source)))?;
            serde_json::to_string(&a).map_err(|e| e.to_string())
        })
    })?)
}

/// A warm-up: an int (a request count) or text ("20%", "1h", "5M").
fn warmup_of(v: &Bound<'_, PyAny>) -> PyResult<Warmup> {
    let text = match as_index(v)? {
        Some(i) => i.str()?.to_string(),
        None => text("warmup", v).map_err(|_| {
            value_error(format!(
                "warmup must be an int (requests) or a str like \"20%\", \"1h\" or \"5M\", got {}",
                type_name(v)
            ))
        })?,
    };
    parse_warmup(&text).map_err(|e| value_error(e.to_string()))
}

/// Checks a warm-up without a trace (a sweep checks its arguments first).
#[pyfunction]
fn check_warmup(warmup: &Bound<'_, PyAny>) -> PyResult<()> {
    warmup_of(warmup).map(|_| ())
}

/// A trace read into memory once, to replay many times without reparsing.
#[pyclass(module = "ssdcache._core", name = "Trace", frozen)]
struct Trace {
    /// Always [`TraceSource::Memory`].
    source: TraceSource,
    /// The dict it was loaded from, to pickle it by (see `__reduce__`).
    origin: Py<PyDict>,
}

impl Trace {
    fn memory(&self) -> (&str, &str, usize, Unit, u64) {
        match &self.source {
            TraceSource::Memory { name, format, requests, unit, skipped } => {
                (name, format, requests.len(), *unit, *skipped)
            }
            _ => unreachable!("a Trace holds a loaded trace"),
        }
    }
}

#[pymethods]
impl Trace {
    /// The name reports carry: the path, the generator spec or the arrays' name.
    #[getter]
    fn name(&self) -> &str {
        self.memory().0
    }
    /// The reader used (`msr`, `spc`, … for files; `gen`; `arrays`).
    #[getter]
    fn format(&self) -> &str {
        self.memory().1
    }
    /// Number of requests.
    #[getter]
    fn requests(&self) -> usize {
        self.memory().2
    }
    /// `"bytes"` (byte offsets and lengths) or `"pages"` (page numbers and counts).
    #[getter]
    fn unit(&self) -> &'static str {
        convert::unit_name(self.memory().3)
    }
    /// Malformed lines skipped (with `skip_bad`).
    #[getter]
    fn skipped(&self) -> u64 {
        self.memory().4
    }
    fn __len__(&self) -> usize {
        self.memory().2
    }
    fn __repr__(&self) -> String {
        let (name, format, n, unit, _) = self.memory();
        format!("Trace({name:?}, format={format:?}, requests={n}, unit={:?})", convert::unit_name(unit))
    }
    /// Pickles as `load(original_dict)`: the receiver parses the trace again.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (Py<PyDict>,))> {
        let load = py.import("ssdcache._core")?.getattr("load")?;
        Ok((load, (self.origin.clone_ref(py),)))
    }
}

/// Reads a trace dict (a file, a generator or arrays) into memory once; the
/// GIL is released while it reads. A `Trace` is returned as it is.
#[pyfunction]
fn load(py: Python<'_>, trace: &Bound<'_, PyAny>) -> PyResult<Py<Trace>> {
    if let Ok(t) = trace.cast::<Trace>() {
        return Ok(t.clone().unbind());
    }
    let source = source_of(trace)?;
    let origin = trace.cast::<PyDict>()?.copy()?.unbind();
    let source =
        py.detach(|| guarded(|| source.load().map_err(|e| convert::one_line(&with_trace_name(e, &source)))))?;
    Py::new(py, Trace { source, origin })
}

fn params<'py>(py: Python<'py>, params: impl Iterator<Item = &'static ParamInfo>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for p in params {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("default", p.default)?;
        d.set_item("about", p.about)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every policy: `{"name", "about", "params": [{"name", "default", "about"}]}`
/// (`params` ends with `mode`, which every policy takes), as `ssdcache policies` lists them.
#[pyfunction]
fn policies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for p in POLICIES {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("about", p.about)?;
        d.set_item("params", params(py, p.params.iter().chain(std::iter::once(&MODE_PARAM)))?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every device kind, as `ssdcache devices` lists them: the same shape as `policies()`.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for dev in DEVICES {
        let d = PyDict::new(py);
        d.set_item("name", dev.name)?;
        d.set_item("about", dev.about)?;
        d.set_item("params", params(py, dev.params.iter())?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every workload generator, as `ssdcache trace gen --list` lists them: the
/// same shape as `policies()`.
#[pyfunction]
fn generators(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for g in ssdcache::trace::gen::GENERATORS {
        let d = PyDict::new(py);
        d.set_item("name", g.name)?;
        d.set_item("about", g.about)?;
        d.set_item("params", params(py, g.params.iter())?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// The cache modes, by name.
#[pyfunction]
fn modes() -> Vec<&'static str> {
    MODES.iter().map(|(name, _, _)| *name).collect()
}

#[pymodule(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(mrc, m)?)?;
    m.add_function(wrap_pyfunction!(objects::run_objects, m)?)?;
    m.add_function(wrap_pyfunction!(objects::mrc_objects, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(check_warmup, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(generators, m)?)?;
    m.add_function(wrap_pyfunction!(modes, m)?)?;
    m.add_function(wrap_pyfunction!(policy::register_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy::unregister_policy, m)?)?;
    m.add_class::<Trace>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
