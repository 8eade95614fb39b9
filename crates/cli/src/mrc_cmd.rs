//! `ssdcache mrc`: a miss-ratio curve in one pass over a trace.

use crate::output;
use crate::run::TraceInput;
use anyhow::{bail, Result};
use clap::Args;
use ssdcache::mrc::{exact_lru, Curve, Point};
use ssdcache::sim::run::{parse_cache, parse_page, with_trace_name};
use ssdcache::spec::split_list;
use ssdcache::units::format_bytes;

#[derive(Args, Debug)]
pub struct MrcArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// Policy: lru (exact, from stack distances in one pass). Sampled curves for
    /// other policies are not implemented yet.
    #[arg(long, short, default_value = "lru")]
    pub policy: String,
    /// Cache sizes to report, comma-separated, e.g. 16MiB,64MiB (default: --points
    /// sizes evenly spaced up to the footprint).
    #[arg(long, short)]
    pub cache: Option<String>,
    /// Number of evenly spaced sizes when --cache is not given (1..=100000).
    #[arg(long, default_value_t = 20)]
    pub points: u64,
    /// Cache unit (page size).
    #[arg(long, default_value = "4KiB")]
    pub page: String,
    /// Print one JSON object per trace (one per line), every point in it.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV, one row per trace and size.
    #[arg(long)]
    pub csv: bool,
}

/// A CSV row: the trace, policy and method beside each point's fields (the
/// columns of Python's `ssdcache.mrc`).
#[derive(serde::Serialize)]
struct Row<'a> {
    trace: &'a str,
    policy: &'static str,
    method: &'static str,
    #[serde(flatten)]
    point: &'a Point,
}

pub fn run(args: MrcArgs) -> Result<()> {
    if !args.policy.trim().eq_ignore_ascii_case("lru") {
        bail!(
            "--policy {}: mrc computes exact curves for lru only (one pass, stack distances); \
             for another policy run `ssdcache sim --cache` with a list of sizes",
            args.policy
        );
    }
    if !(1..=100_000).contains(&args.points) {
        bail!("--points {}: give 1 to 100000 sizes", args.points);
    }
    let page_bytes = parse_page(&args.page)?;
    let caches = args
        .cache
        .as_deref()
        .map(|list| split_list(list).iter().map(|c| parse_cache(c)).collect::<Result<Vec<u64>, _>>())
        .transpose()?;
    let mut curves = Vec::new();
    for source in args.input.sources()? {
        let name = source.name();
        let bar = crate::progress::Bar::new(&name);
        let profile =
            exact_lru(&source.with_progress(bar.progress()), page_bytes).map_err(|e| with_trace_name(e, &source))?;
        drop(bar);
        let sizes = match &caches {
            Some(bytes) => bytes.iter().map(|b| pages_in(*b, page_bytes, &name)).collect::<Result<Vec<u64>>>()?,
            None => profile.even_sizes(args.points),
        };
        curves.push(profile.curve(name, &sizes));
    }
    if args.json {
        for c in &curves {
            println!("{}", serde_json::to_string(c)?);
        }
        Ok(())
    } else if args.csv {
        let rows: Vec<Row> = curves
            .iter()
            .flat_map(|c| {
                c.points.iter().map(|point| Row { trace: &c.trace, policy: c.policy, method: c.method, point })
            })
            .collect();
        output::csv_rows(&rows, &[])
    } else {
        curves.iter().for_each(print);
        Ok(())
    }
}

fn pages_in(bytes: u64, page_bytes: u64, trace: &str) -> Result<u64> {
    if bytes < page_bytes {
        bail!("{trace}: --cache {}: smaller than one page ({})", format_bytes(bytes), format_bytes(page_bytes));
    }
    Ok(bytes / page_bytes)
}

fn print(c: &Curve) {
    println!("trace: {}", c.trace);
    println!(
        "{} requests, {} page accesses ({} reads, {} writes), footprint {} pages ({}); LRU, exact (one pass)",
        c.counts.requests,
        c.counts.read_pages + c.counts.write_pages,
        c.counts.read_pages,
        c.counts.write_pages,
        c.counts.footprint_pages,
        format_bytes(c.counts.footprint_pages * c.counts.page_bytes)
    );
    if c.counts.trims > 0 {
        println!(
            "{} trims: exact only from the footprint up (LRU with deletions is not a stack algorithm)",
            c.counts.trims
        );
    }
    if c.counts.skipped > 0 {
        println!("{} malformed lines skipped", c.counts.skipped);
    }
    println!(
        "{:>12} {:>10} {:>8} {:>8} {:>8} {:>9} {:>12} {:>12}",
        "cache", "pages", "miss", "read", "write", "request", "write-backs", "dirty at end"
    );
    for p in &c.points {
        println!(
            "{:>12} {:>10} {:>8.4} {:>8.4} {:>8.4} {:>9.4} {:>12} {:>12}",
            format_bytes(p.cache_bytes),
            p.cache_pages,
            p.miss_ratio,
            p.read_miss_ratio,
            p.write_miss_ratio,
            p.request_miss_ratio,
            p.dirty_writebacks,
            p.dirty_at_end
        );
    }
}
