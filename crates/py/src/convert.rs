//! The Python-free half of the extension: numpy columns to requests, a spec
//! given as text to a [`RunSpec`], one run to its JSON report, and errors to
//! one line. Kept apart from the PyO3 glue so `cargo test` checks it without
//! an interpreter.

use numpy::ndarray::ArrayView1;
use ssdcache::sim::flags::{check_repeat, parse_interval, parse_mode, parse_page, parse_queue_depth, queue_spec};
use ssdcache::sim::flags::{parse_cache_size, parse_warmup, CacheSize, Warmup};
use ssdcache::sim::relative::{self, Sizing, TraceFacts};
use ssdcache::sim::run::{check, run, with_trace_name};
use ssdcache::sim::{pages_of, RunSpec, SimError, TraceSource};
use ssdcache::trace::{Op, Request, Unit, BATCH};
use std::error::Error;
use std::sync::{Arc, Mutex, Weak};

/// Keys of `run`'s spec dict.
pub const SPEC_KEYS: &[&str] = &[
    "policy",
    "cache",
    "page",
    "mode",
    "device",
    "cache_device",
    "interval",
    "queue_depth",
    "iat_scale",
    "repeat",
    "align_pages",
    "warmup",
];

/// Keys of a trace dict of each kind (the first names the kind).
pub const PATH_KEYS: &[&str] = &["path", "format", "skip_bad", "csv_columns"];
pub const GEN_KEYS: &[&str] = &["gen"];
pub const ARRAYS_KEYS: &[&str] = &["arrays", "unit", "name"];
/// Columns of an arrays trace: name and numpy dtype.
pub const COLUMNS: &[(&str, &str)] =
    &[("addr", "uint64"), ("op", "uint8"), ("len", "uint32"), ("time", "uint64"), ("dev", "uint32")];

/// Name of an arrays trace without a `name`.
pub const DEFAULT_ARRAYS_NAME: &str = "arrays";
/// Format reports give an arrays trace.
pub const ARRAYS_FORMAT: &str = "arrays";

/// An error as the command line prints it (`{e:#}`): the message and its
/// sources, on one line.
pub fn one_line(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The first key in `given` that is not in `known`, as an error naming the
/// known ones.
pub fn check_keys<'a>(what: &str, given: impl IntoIterator<Item = &'a str>, known: &[&str]) -> Result<(), String> {
    match given.into_iter().find(|k| !known.contains(k)) {
        Some(k) => Err(format!("{what}: unknown key {k:?} (known: {})", known.join(", "))),
        None => Ok(()),
    }
}

pub fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Pages => "pages",
        Unit::Bytes => "bytes",
    }
}

pub fn parse_unit(text: &str) -> Result<Unit, String> {
    match text {
        "pages" => Ok(Unit::Pages),
        "bytes" => Ok(Unit::Bytes),
        _ => Err(format!("unit {text:?}: expected \"pages\" or \"bytes\"")),
    }
}

/// `run`'s spec with every value as the command line would take it: sizes,
/// durations and modes as text (Python ints become `"4096"` and `"10ns"`).
#[derive(Clone, Debug, PartialEq)]
pub struct SpecText {
    pub policy: String,
    pub cache: String,
    pub page: Option<String>,
    pub mode: Option<String>,
    pub device: Option<String>,
    pub cache_device: Option<String>,
    pub interval: Option<String>,
    pub queue_depth: Option<i64>,
    pub iat_scale: Option<f64>,
    pub repeat: Option<i64>,
    pub align_pages: Option<bool>,
    /// `--warmup`: `20%`, `1h`, `5M`.
    pub warmup: Option<String>,
}

/// What of a run is relative to its trace: a size given as a share of the
/// footprint, a warm-up given as a share or a duration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Relative {
    pub size: Option<CacheSize>,
    pub warmup: Option<Warmup>,
}

impl SpecText {
    pub fn new(policy: &str, cache: &str) -> SpecText {
        SpecText {
            policy: policy.to_string(),
            cache: cache.to_string(),
            page: None,
            mode: None,
            device: None,
            cache_device: None,
            interval: None,
            queue_depth: None,
            iat_scale: None,
            repeat: None,
            align_pages: None,
            warmup: None,
        }
    }

    /// The cache size and warm-up as given, resolved on the trace by [`run_json_sized`].
    pub fn relative(&self) -> Result<Relative, SimError> {
        Ok(Relative {
            size: Some(parse_cache_size(&self.cache)?),
            warmup: self.warmup.as_deref().map(parse_warmup).transpose()?,
        })
    }

    /// The run this describes, and how many times to replay the trace; the same
    /// defaults and messages as `ssdcache sim`.
    pub fn parse(&self) -> Result<(RunSpec, u32), SimError> {
        let depth = self.queue_depth.map(|d| parse_queue_depth(&d.to_string())).transpose()?;
        let repeat = match self.repeat {
            None => 1,
            Some(r) => u32::try_from(r).map_err(|_| {
                SimError::Config(if r < 0 {
                    format!("--repeat: {r} is not a whole number ≥ 1")
                } else {
                    format!("--repeat {r}: too large: at most {}", u32::MAX)
                })
            })?,
        };
        check_repeat(repeat)?;
        let page_bytes = parse_page(self.page.as_deref().unwrap_or("4KiB"))?;
        let spec = RunSpec {
            policy: self.policy.clone(),
            // (a share is checked as one page until the trace is known)
            cache_bytes: match parse_cache_size(&self.cache)? {
                CacheSize::Bytes(b) => b,
                CacheSize::Share(_) => page_bytes,
            },
            page_bytes,
            mode: parse_mode(self.mode.as_deref().unwrap_or("write-back"))?,
            device: self.device.clone(),
            cache_device: self.cache_device.clone(),
            interval: self.interval.as_deref().map(parse_interval).transpose()?,
            queue: queue_spec(depth, self.iat_scale)?,
            align_pages: self.align_pages.unwrap_or(false),
            sizing: Sizing { warmup: self.warmup.as_ref().map(|w| w.trim().to_string()), ..Sizing::default() },
        };
        Ok((spec, repeat))
    }
}

/// One run as `ssdcache sim --json` does it, after [`check`]ing the spec:
/// the trace repeated, simulated, and the report as one JSON object.
#[cfg(test)]
pub fn run_json(source: &TraceSource, spec: &RunSpec, repeat: u32) -> Result<String, SimError> {
    run_json_sized(source, spec, repeat, &Relative::default())
}

/// [`run_json`] with the size and warm-up resolved on the (repeated) trace
/// first, as `ssdcache sim` does; the trace's facts are found once per loaded
/// trace and reused by every run on it (a sweep).
pub fn run_json_sized(source: &TraceSource, spec: &RunSpec, repeat: u32, rel: &Relative) -> Result<String, SimError> {
    let repeated;
    let source = if repeat > 1 {
        repeated = source.repeat(repeat).map_err(|e| with_trace_name(e, source))?;
        &repeated
    } else {
        source
    };
    let mut spec = spec.clone();
    if let Some(size) = rel.size {
        let sizes = [size];
        relative::check_source(source, &sizes, rel.warmup.as_ref())?;
        let facts =
            facts_once(source, spec.page_bytes, &sizes, rel.warmup.as_ref()).map_err(|e| with_trace_name(e, source))?;
        let (bytes, sizing) =
            relative::resolve(&facts, spec.page_bytes, &sizes, rel.warmup.as_ref(), &source.name())?.remove(0);
        spec.cache_bytes = bytes;
        spec.sizing = sizing;
    }
    let report = run(source, &spec).map_err(|e| with_trace_name(e, source))?;
    serde_json::to_string(&report).map_err(|e| SimError::Config(format!("report to JSON: {e}")))
}

/// A loaded trace's facts, by what they were found for (page size,
/// footprint, warm-up text); held while the trace lives.
type FactsKey = (u64, bool, Option<String>);
type FactsEntry = (Weak<[Request]>, FactsKey, TraceFacts);
static FACTS: Mutex<Vec<FactsEntry>> = Mutex::new(Vec::new());

/// [`relative::facts`], found once per loaded trace ([`TraceSource::Memory`])
/// and then reused; other sources are scanned each time.
fn facts_once(
    source: &TraceSource,
    page_bytes: u64,
    sizes: &[CacheSize],
    warmup: Option<&Warmup>,
) -> Result<TraceFacts, SimError> {
    let TraceSource::Memory { requests, .. } = source else {
        return relative::facts(source, page_bytes, sizes, warmup);
    };
    let key: FactsKey = (page_bytes, sizes.iter().any(CacheSize::is_share), warmup.map(|w| w.text.clone()));
    let found = {
        let mut cache = FACTS.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|(w, _, _)| w.strong_count() > 0);
        cache.iter().find(|(w, k, _)| *k == key && w.upgrade().is_some_and(|r| Arc::ptr_eq(&r, requests))).map(|e| e.2)
    };
    if let Some(f) = found {
        return Ok(f);
    }
    let facts = relative::facts(source, page_bytes, sizes, warmup)?;
    FACTS.lock().unwrap_or_else(|e| e.into_inner()).push((Arc::downgrade(requests), key, facts));
    Ok(facts)
}

/// The request (0-based, in trace order, over the `repeat`ed trace) that page
/// access `seq` of a run belongs to: the simulator numbers page accesses, and
/// a policy's error names the request. `None` if the trace ends before it.
pub fn request_of_access(source: &TraceSource, page_bytes: u64, repeat: u32, seq: u64) -> Option<u64> {
    let repeated;
    let source = if repeat > 1 {
        repeated = source.repeat(repeat).ok()?;
        &repeated
    } else {
        source
    };
    let (mut reader, _) = source.open().ok()?;
    let unit = reader.unit();
    let mut batch = Vec::with_capacity(BATCH);
    let (mut pages, mut index) = (0u64, 0u64);
    while reader.read_batch(&mut batch, BATCH).ok()? > 0 {
        for r in &batch {
            pages += pages_of(r, unit, page_bytes, index).ok()?.keys().size_hint().0 as u64;
            if pages > seq {
                return Some(index);
            }
            index += 1;
        }
    }
    None
}

/// [`check`] as a one-line message.
pub fn check_spec(spec: &RunSpec) -> Result<(), String> {
    check(spec).map_err(|e| one_line(&e))
}

/// The columns of an arrays trace, checked for dtype and shape already.
pub struct Columns<'a> {
    pub addr: ArrayView1<'a, u64>,
    pub op: ArrayView1<'a, u8>,
    pub len: Option<ArrayView1<'a, u32>>,
    pub time: Option<ArrayView1<'a, u64>>,
    pub dev: Option<ArrayView1<'a, u32>>,
}

/// The requests of an arrays trace: `len` defaults to 1, `time` and `dev` to 0;
/// times are rebased to the first request's, as the file readers do.
pub fn requests(c: &Columns) -> Result<Vec<Request>, String> {
    let n = c.addr.len();
    let lens = [
        ("op", Some(c.op.len())),
        ("len", c.len.map(|a| a.len())),
        ("time", c.time.map(|a| a.len())),
        ("dev", c.dev.map(|a| a.len())),
    ];
    for (name, len) in lens {
        if let Some(len) = len.filter(|&l| l != n) {
            return Err(format!(
                "arrays[{name:?}] has {len} elements but arrays[\"addr\"] has {n}: all must be the same length"
            ));
        }
    }
    let t0 = c.time.as_ref().and_then(|t| t.first().copied()).unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let op = match c.op[i] {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Trim,
            other => return Err(format!("arrays[\"op\"][{i}] = {other}: expected 0 (read), 1 (write) or 2 (trim)")),
        };
        let len = c.len.as_ref().map_or(1, |l| l[i]);
        if len == 0 {
            return Err(format!("arrays[\"len\"][{i}] = 0: a request covers at least one page or byte"));
        }
        out.push(Request {
            time: c.time.as_ref().map_or(0, |t| t[i].saturating_sub(t0)),
            addr: c.addr[i],
            len,
            dev: c.dev.as_ref().map_or(0, |d| d[i]),
            op,
        });
    }
    Ok(out)
}

/// An arrays trace in memory, ready to run.
pub fn arrays_source(requests: Vec<Request>, unit: Unit, name: &str) -> TraceSource {
    TraceSource::Memory {
        name: name.to_string(),
        format: ARRAYS_FORMAT.to_string(),
        requests: requests.into(),
        unit,
        skipped: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numpy::ndarray::Array1;
    use ssdcache::policy::Mode;
    use ssdcache::sim::QueueSpec;

    fn spec(f: impl FnOnce(&mut SpecText)) -> Result<(RunSpec, u32), String> {
        let mut s = SpecText::new("lru", "64MiB");
        f(&mut s);
        s.parse().map_err(|e| one_line(&e))
    }

    #[test]
    fn spec_defaults_are_the_command_lines() {
        let (s, repeat) = spec(|_| {}).unwrap();
        assert_eq!(repeat, 1);
        assert_eq!(s, RunSpec::new("lru", 64 << 20));
    }

    #[test]
    fn spec_values_parse_as_on_the_command_line() {
        let (s, repeat) = spec(|s| {
            s.cache = "1048576".into();
            s.page = Some("8KiB".into());
            s.mode = Some("wt".into());
            s.device = Some("ssd".into());
            s.interval = Some("1h".into());
            s.iat_scale = Some(0.5);
            s.repeat = Some(3);
        })
        .unwrap();
        assert_eq!((s.cache_bytes, s.page_bytes, s.mode), (1 << 20, 8192, Mode::WriteThrough));
        assert_eq!(s.interval, Some(3_600_000_000_000));
        assert_eq!(s.queue, Some(QueueSpec { depth: 32, iat_scale: 0.5 }));
        assert_eq!(repeat, 3);
        let (s, _) = spec(|s| s.interval = Some("250ns".into())).unwrap();
        assert_eq!(s.interval, Some(250));
        let (s, _) = spec(|s| s.queue_depth = Some(512)).unwrap();
        assert_eq!(s.queue, Some(QueueSpec { depth: 512, iat_scale: 1.0 }));
    }

    #[test]
    fn bad_spec_values_say_which_flag() {
        let e = spec(|s| s.cache = "lots".into()).unwrap_err();
        assert!(e.starts_with("--cache: size \"lots\""), "{e}");
        let e = spec(|s| s.page = Some("0".into())).unwrap_err();
        assert!(e.starts_with("--page: "), "{e}");
        let e = spec(|s| s.mode = Some("sideways".into())).unwrap_err();
        assert!(e.starts_with("--mode: unknown mode"), "{e}");
        let e = spec(|s| s.interval = Some("1 fortnight".into())).unwrap_err();
        assert!(e.starts_with("--interval: "), "{e}");
        let e = spec(|s| s.queue_depth = Some(0)).unwrap_err();
        assert!(e.contains("1..=512"), "{e}");
        let e = spec(|s| s.queue_depth = Some(-1)).unwrap_err();
        assert!(e.starts_with("--queue-depth: \"-1\""), "{e}");
        let e = spec(|s| s.iat_scale = Some(f64::NAN)).unwrap_err();
        assert!(e.contains("scale"), "{e}");
        let e = spec(|s| s.repeat = Some(-2)).unwrap_err();
        assert!(e.starts_with("--repeat: "), "{e}");
        let e = spec(|s| s.repeat = Some(0)).unwrap_err();
        assert_eq!(e, "--repeat: must be at least 1, not 0");
        // The policy is checked by `check`, as the command line does before reading traces.
        let (s, _) = spec(|s| s.policy = "lru(bogus=1)".into()).unwrap();
        assert!(check_spec(&s).is_err());
        let (s, _) = spec(|s| s.cache = "1KiB".into()).unwrap();
        let e = check_spec(&s).unwrap_err();
        assert!(e.contains("smaller than one page"), "{e}");
    }

    #[test]
    fn values_too_large_say_so() {
        // (2^70 bytes was "not a whole number of bytes"; 2^40 queue slots and
        // repeats "not a whole number"; a 2^64 warm-up became 2^64 - 1 requests)
        let e = spec(|s| s.cache = (1u128 << 70).to_string()).unwrap_err();
        assert_eq!(e, "--cache: size \"1180591620717411303424\": too large: a size is at most 2^64 - 1 bytes (16 EiB)");
        let e = spec(|s| s.queue_depth = Some(1 << 40)).unwrap_err();
        assert_eq!(e, "--queue-depth 1099511627776: out of range 1..=512");
        let e = spec(|s| s.repeat = Some(1 << 40)).unwrap_err();
        assert_eq!(e, "--repeat 1099511627776: too large: at most 4294967295");
        let e = spec(|s| s.page = Some("3".into())).unwrap_err();
        assert_eq!(e, "--page: size \"3\": a page must be a multiple of 512 B from 512 B to 1 MiB");
        let mut text = SpecText::new("lru", "1MiB");
        text.warmup = Some("18446744073709551616".into());
        let e = one_line(&text.relative().unwrap_err());
        assert_eq!(e, "--warmup 18446744073709551616: too large: a request count is at most 2^64 - 1");
    }

    #[test]
    fn unknown_keys_are_named() {
        assert!(check_keys("spec", ["policy", "cache"], SPEC_KEYS).is_ok());
        let e = check_keys("spec", ["policy", "size"], SPEC_KEYS).unwrap_err();
        assert!(e.starts_with("spec: unknown key \"size\" (known: policy, cache"), "{e}");
    }

    #[test]
    fn columns_become_requests() {
        let addr = Array1::from(vec![10u64, 11, 12]);
        let op = Array1::from(vec![0u8, 1, 2]);
        let len = Array1::from(vec![1u32, 2, 3]);
        let time = Array1::from(vec![100u64, 150, 90]);
        let dev = Array1::from(vec![0u32, 1, 2]);
        let got = requests(&Columns {
            addr: addr.view(),
            op: op.view(),
            len: Some(len.view()),
            time: Some(time.view()),
            dev: Some(dev.view()),
        })
        .unwrap();
        let want = vec![
            Request { time: 0, addr: 10, len: 1, dev: 0, op: Op::Read },
            Request { time: 50, addr: 11, len: 2, dev: 1, op: Op::Write },
            // earlier than the first: clamped to 0 as the readers do
            Request { time: 0, addr: 12, len: 3, dev: 2, op: Op::Trim },
        ];
        assert_eq!(got, want);
        // Optional columns default: one page, time 0, device 0.
        let got = requests(&Columns { addr: addr.view(), op: op.view(), len: None, time: None, dev: None }).unwrap();
        assert!(got.iter().all(|r| r.len == 1 && r.time == 0 && r.dev == 0));
        // Strided views (a numpy slice a[::2]) read the right elements.
        let wide = Array1::from(vec![1u64, 99, 2, 99, 3, 99]);
        let strided = wide.slice(numpy::ndarray::s![..;2]);
        let got = requests(&Columns { addr: strided, op: op.view(), len: None, time: None, dev: None }).unwrap();
        assert_eq!(got.iter().map(|r| r.addr).collect::<Vec<_>>(), vec![1, 2, 3]);
        let empty_a = Array1::<u64>::from(vec![]);
        let empty_o = Array1::<u8>::from(vec![]);
        let none = Columns { addr: empty_a.view(), op: empty_o.view(), len: None, time: None, dev: None };
        assert_eq!(requests(&none).unwrap(), vec![]);
    }

    #[test]
    fn bad_columns_name_the_array() {
        let addr = Array1::from(vec![10u64, 11]);
        let op = Array1::from(vec![0u8, 1]);
        let short = Array1::from(vec![1u32]);
        let e = requests(&Columns { addr: addr.view(), op: op.view(), len: Some(short.view()), time: None, dev: None })
            .unwrap_err();
        assert!(e.starts_with("arrays[\"len\"] has 1 elements but arrays[\"addr\"] has 2"), "{e}");
        let e = requests(&Columns { addr: addr.view(), op: op.view(), len: None, time: None, dev: Some(short.view()) })
            .unwrap_err();
        assert!(e.starts_with("arrays[\"dev\"]"), "{e}");
        let bad_op = Array1::from(vec![0u8, 3]);
        let e =
            requests(&Columns { addr: addr.view(), op: bad_op.view(), len: None, time: None, dev: None }).unwrap_err();
        assert!(e.starts_with("arrays[\"op\"][1] = 3"), "{e}");
        let zero = Array1::from(vec![1u32, 0]);
        let e = requests(&Columns { addr: addr.view(), op: op.view(), len: Some(zero.view()), time: None, dev: None })
            .unwrap_err();
        assert!(e.starts_with("arrays[\"len\"][1] = 0"), "{e}");
    }

    /// An arrays trace runs exactly as the same requests read from a key
    /// trace file would, through the same `run`.
    #[test]
    fn arrays_run_like_the_simulator() {
        let keys: Vec<u64> = (0..2000u64).map(|i| if i % 2 == 0 { i % 40 } else { 1000 + i % 900 }).collect();
        let ops: Vec<u8> = (0..2000u64).map(|i| u8::from(i % 3 == 0)).collect();
        let addr = Array1::from(keys);
        let op = Array1::from(ops);
        let reqs = requests(&Columns { addr: addr.view(), op: op.view(), len: None, time: None, dev: None }).unwrap();
        let source = arrays_source(reqs.clone(), Unit::Pages, "t");
        let (spec, _) = SpecText::new("lru", "400KiB").parse().unwrap();
        let json = run_json(&source, &spec, 1).unwrap();
        let report: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(report["trace"], "t");
        assert_eq!(report["format"], ARRAYS_FORMAT);
        assert_eq!(report["capacity_pages"], 100);
        let direct = serde_json::to_string(&run(&source, &spec).unwrap()).unwrap();
        assert_eq!(json, direct);
        let hits = report["hits"].as_u64().unwrap();
        assert!(hits > 0 && hits < 2000, "{report}");
        // repeat = 2 replays the requests twice.
        let twice = run_json(&source, &spec, 2).unwrap();
        let twice: serde_json::Value = serde_json::from_str(&twice).unwrap();
        assert_eq!(twice["trace"], "t x2");
        assert_eq!(twice["requests"], 4000);
    }

    #[test]
    fn run_errors_name_the_trace() {
        let source = TraceSource::Gen("zipf(alpha=nope)".into());
        let (spec, _) = SpecText::new("lru", "64MiB").parse().unwrap();
        let e = one_line(&run_json(&source, &spec, 1).unwrap_err());
        assert!(e.starts_with("zipf(alpha=nope): "), "{e}");
        let source = TraceSource::file("/nonexistent/trace.csv", ssdcache::trace::Format::Auto, false, None).unwrap();
        let e = one_line(&run_json(&source, &spec, 1).unwrap_err());
        assert!(e.starts_with("/nonexistent/trace.csv: "), "{e}");
    }
}
