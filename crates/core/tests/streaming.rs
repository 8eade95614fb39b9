//! Runs that need the whole trace before they start — a device (its layout
//! is the trace's footprint), Belady (next uses), a queueing replay — stream
//! a trace file: a first pass for the layout and the next uses (spilled to a
//! temporary file), then the run. Their reports must equal those of the same
//! runs on the trace loaded into memory, where the layout is scanned from the
//! slice and the next uses computed in memory (the code path of before
//! streaming), on every sample trace.

mod common;

use common::{not_sniffed, traces_dir};
use ssdcache::sim::run::{run, RunSpec};
use ssdcache::sim::QueueSpec;
use ssdcache::sim::TraceSource;
use ssdcache::trace::Format;
use std::path::PathBuf;

fn sample_traces() -> Vec<PathBuf> {
    let Some(dir) = traces_dir() else { return Vec::new() };
    let mut out = Vec::new();
    for d in std::fs::read_dir(dir).unwrap() {
        let d = d.unwrap().path();
        if !d.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&d).unwrap() {
            let f = f.unwrap().path();
            if f.file_name().is_some_and(|n| n != "SOURCE.txt") && !not_sniffed(&f) {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

fn specs() -> Vec<RunSpec> {
    let with = |policy: &str, device: Option<&str>, cache_device: Option<&str>, queue: Option<u32>| RunSpec {
        device: device.map(String::from),
        cache_device: cache_device.map(String::from),
        queue: queue.map(|depth| QueueSpec { depth, iat_scale: 1.0 }),
        ..RunSpec::new(policy, 1 << 20)
    };
    vec![
        with("belady", None, None, None),
        with("belady", Some("ftl(nand=mlc2)"), None, None),
        with("lru", Some("ftl(nand=ull,size=footprint)"), Some("ssd"), None),
        with("lru", Some("hdd"), None, Some(8)),
        with("belady", Some("ftl(nand=slc)"), None, Some(32)),
    ]
}

#[test]
fn streamed_runs_equal_runs_on_the_trace_in_memory() {
    let traces = sample_traces();
    for path in &traces {
        let file = TraceSource::file(path, Format::Auto, false, None).unwrap();
        let memory = file.load().unwrap();
        for spec in specs() {
            let streamed = run(&file, &spec).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let loaded = run(&memory, &spec).unwrap();
            let (a, b) = (serde_json::to_value(&streamed).unwrap(), serde_json::to_value(&loaded).unwrap());
            assert_eq!(a, b, "{} {spec:?}", path.display());
            assert!(streamed.counters.requests > 0, "{}", path.display());
        }
    }
}

/// The same on generated traces with trims and multi-page requests.
#[test]
fn streamed_runs_equal_runs_in_memory_on_generated_traces() {
    for gen in [
        "mix(zipf(alpha=0.9,keys=3000,read=60%,unit=bytes),scan(length=300,read=90%,unit=bytes),weights=80%/20%,requests=30k,seed=3)",
        "zipf(keys=500,requests=20k,seed=9)",
    ] {
        let source = TraceSource::Gen(gen.into());
        let memory = source.load().unwrap();
        for spec in specs() {
            let a = serde_json::to_value(run(&source, &spec).unwrap()).unwrap();
            let b = serde_json::to_value(run(&memory, &spec).unwrap()).unwrap();
            assert_eq!(a, b, "{gen} {spec:?}");
        }
    }
}
