//! `sim --unit object` and `mrc --unit object`: caches of variable-size
//! objects (parsing and printing only; the work is in the core's
//! `sim::objects` and `mrc::objects`).

use crate::mrc_cmd::MrcArgs;
use crate::output;
use crate::run::SimArgs;
use anyhow::{bail, Result};
use rayon::prelude::*;
use ssdcache::metrics::ObjectReport;
use ssdcache::mrc::objects::{exact_lru_bytes, sampled_objects, ObjectCurve, ObjectSizes};
use ssdcache::sim::flags::parse_cache_sizes;
use ssdcache::sim::objects::{capacities, run_objects, ObjectSource};
use ssdcache::sim::TraceSource;
use ssdcache::spec::split_list;
use ssdcache::units::format_bytes;

/// Size-aware policies `sim --unit object` runs when --policy is not given.
const DEFAULT_POLICIES: &str = "lru,fifo,s3fifo,sieve,gdsf";

/// The trace files, in object mode (a generated workload has no sizes).
fn sources(input: &crate::run::TraceInput) -> Result<Vec<ObjectSource>> {
    if !input.gen.is_empty() || input.trace.is_empty() {
        bail!("--unit object needs --trace with object sizes (oracle-general, lcs, twr, webcachesim, csv); generated workloads have none");
    }
    input
        .trace
        .iter()
        .map(|p| {
            let t = TraceSource::file(p, input.format, input.skip_bad, input.csv_columns.as_deref())?;
            Ok(ObjectSource::of(&t)?)
        })
        .collect()
}

/// Options of page mode that mean nothing for objects: refused, not ignored.
fn refuse_page_options(args: &SimArgs) -> Result<()> {
    let given = [
        ("--device", args.device.is_some()),
        ("--cache-device", args.cache_device.is_some()),
        ("--queue-depth", args.queue_depth.is_some()),
        ("--iat-scale", args.iat_scale.is_some()),
        ("--interval", args.interval.is_some()),
        ("--warmup", args.warmup.is_some()),
        ("--repeat", args.repeat != 1),
        ("--align-pages", args.align_pages),
        ("--mode", args.mode != "write-back"),
        ("--page", args.page != "4KiB"),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
        bail!("{flag} is not supported with --unit object (objects are cached whole, reads and writes alike)");
    }
    Ok(())
}

fn object_error(e: ssdcache::sim::SimError, source: &ObjectSource) -> anyhow::Error {
    anyhow::Error::new(source.named(e))
}

pub fn sim(args: &SimArgs) -> Result<()> {
    refuse_page_options(args)?;
    let policies = split_list(args.policy.as_deref().unwrap_or(DEFAULT_POLICIES));
    let caches = parse_cache_sizes(args.cache.as_deref().unwrap_or("10%"))?;
    if policies.is_empty() || caches.is_empty() {
        bail!("--policy and --cache each need at least one value");
    }
    // Every spec checked before any trace is read.
    for p in &policies {
        ssdcache::policy::registry::build_sized(p, 1)?;
    }
    let mut sources = sources(&args.input)?;
    let runs_per_trace = policies.len() * caches.len();
    let mut grid = Vec::new();
    for (s, source) in sources.iter_mut().enumerate() {
        if runs_per_trace > 1 {
            *source = source.load().map_err(|e| object_error(e, source))?;
        }
        for p in &policies {
            for c in capacities(&caches, source).map_err(|e| object_error(e, source))? {
                grid.push((s, p.clone(), c));
            }
        }
    }
    let pool = crate::run::pool(args.jobs, grid.len())?;
    let reports: Vec<ObjectReport> = pool.install(|| {
        grid.par_iter()
            .map(|(s, p, c)| run_objects(&sources[*s], p, *c).map_err(|e| object_error(e, &sources[*s])))
            .collect::<Result<Vec<_>>>()
    })?;
    if args.json {
        output::json(&reports)
    } else if args.csv {
        output::csv_rows(&reports, &[])
    } else {
        table(&reports);
        Ok(())
    }
}

fn table(reports: &[ObjectReport]) {
    if let Some(r) = reports.first() {
        println!("trace: {} ({}), object mode", r.trace, r.format);
    }
    println!(
        "{:<22} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "policy", "cache", "requests", "miss", "byte miss", "too large", "evictions"
    );
    for r in reports {
        println!(
            "{:<22} {:>11} {:>10} {:>10.4} {:>10.4} {:>10} {:>10}",
            r.policy,
            format_bytes(r.cache_bytes),
            r.counters.requests,
            r.miss_ratio,
            r.byte_miss_ratio,
            r.counters.too_large,
            r.counters.evictions
        );
    }
}

pub fn mrc(args: &MrcArgs) -> Result<()> {
    let (policies, sampling) = crate::mrc_cmd::policies_and_sampling(args)?;
    if args.warmup.is_some() || args.sample_keys.is_some() || args.page != "4KiB" {
        bail!("--warmup, --sample-keys and --page are not supported with --unit object");
    }
    let caches = args.cache.as_deref().map(parse_cache_sizes).transpose()?;
    let sizes = ObjectSizes::of(caches.as_deref(), args.points)?;
    let mut curves: Vec<ObjectCurve> = Vec::new();
    for source in sources(&args.input)? {
        match &sampling {
            None => curves.push(exact_lru_bytes(&source, &sizes).map_err(|e| object_error(e, &source))?),
            Some(spec) => curves.extend(
                sampled_objects(&source, &policies, &sizes, spec.rate, spec.seed)
                    .map_err(|e| object_error(e, &source))?,
            ),
        }
    }
    if args.json {
        output::json(&curves)
    } else if args.csv {
        #[derive(serde::Serialize)]
        struct Row<'a> {
            trace: &'a str,
            policy: &'a str,
            method: &'static str,
            sample_rate: f64,
            #[serde(flatten)]
            point: &'a ssdcache::mrc::objects::ObjectPoint,
        }
        let rows: Vec<Row> = curves
            .iter()
            .flat_map(|c| {
                c.points.iter().map(|point| Row {
                    trace: &c.trace,
                    policy: &c.policy,
                    method: c.method,
                    sample_rate: c.sample_rate,
                    point,
                })
            })
            .collect();
        output::csv_rows(&rows, &[])
    } else {
        for c in &curves {
            println!("trace: {}", c.trace);
            println!(
                "{} requests ({}), footprint {} objects ({}); {} {}",
                c.totals.requests,
                format_bytes(c.totals.bytes),
                c.totals.footprint_objects,
                format_bytes(c.totals.footprint_bytes),
                c.policy,
                if c.method == "exact" {
                    "exact (byte stack distances, one pass)".to_string()
                } else {
                    format!("miniature on a {}% sample", c.sample_rate * 100.0)
                }
            );
            if c.totals.deletes > 0 {
                println!("{} deletes: LRU with deletions is not a stack algorithm; the curve treats each as leaving every cache", c.totals.deletes);
            }
            println!("{:>12} {:>10} {:>10} {:>10}", "cache", "miss", "byte miss", "too large");
            for p in &c.points {
                println!(
                    "{:>12} {:>10.4} {:>10.4} {:>10}",
                    format_bytes(p.cache_bytes),
                    p.miss_ratio,
                    p.byte_miss_ratio,
                    p.too_large
                );
            }
        }
        Ok(())
    }
}
