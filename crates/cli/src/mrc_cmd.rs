//! `ssdcache mrc`: a miss-ratio curve in one pass over a trace.

use crate::output;
use crate::run::TraceInput;
use anyhow::{bail, Result};
use clap::Args;
use ssdcache::mrc::sized::{exact_lru_sized, SizedCurve};
use ssdcache::mrc::{Curve, Point};
use ssdcache::sim::relative::{parse_cache_sizes, parse_warmup};
use ssdcache::sim::run::{parse_page, with_trace_name};
use ssdcache::units::format_bytes;

#[derive(Args, Debug)]
pub struct MrcArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// Policy: lru (exact, from stack distances in one pass). Sampled curves for
    /// other policies are not implemented yet.
    #[arg(long, short, default_value = "lru")]
    pub policy: String,
    /// Cache sizes to report, comma-separated, e.g. 16MiB,64MiB, or shares of the
    /// footprint, e.g. 1%,5%,10% (default: --points sizes evenly spaced up to the footprint).
    #[arg(long, short)]
    pub cache: Option<String>,
    /// Warm the LRU stack with the head of the trace without counting it: a share of
    /// the requests (20%), a duration of trace time (1h) or a request count (5M).
    #[arg(long)]
    pub warmup: Option<String>,
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
    cache_share: Option<f64>,
    warmup: Option<&'a str>,
    warmup_requests: u64,
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
    let caches = args.cache.as_deref().map(parse_cache_sizes).transpose()?;
    let warmup = args.warmup.as_deref().map(parse_warmup).transpose()?;
    let mut curves = Vec::new();
    for source in args.input.sources()? {
        let bar = crate::progress::Bar::new(&source.name());
        let curve = exact_lru_sized(
            &source.with_progress(bar.progress()),
            page_bytes,
            caches.as_deref(),
            args.points,
            warmup.as_ref(),
        )
        .map_err(|e| with_trace_name(e, &source))?;
        drop(bar);
        curves.push(curve);
    }
    if args.json {
        for c in &curves {
            println!("{}", serde_json::to_string(&c.to_json()?)?);
        }
        Ok(())
    } else if args.csv {
        let rows: Vec<Row> = curves
            .iter()
            .flat_map(|s| {
                let c = &s.curve;
                c.points.iter().zip(&s.shares).map(|(point, &cache_share)| Row {
                    trace: &c.trace,
                    policy: c.policy,
                    method: c.method,
                    point,
                    cache_share,
                    warmup: s.warmup.as_deref(),
                    warmup_requests: c.counts.warmup_requests,
                })
            })
            .collect();
        output::csv_rows(&rows, &[])
    } else {
        curves.iter().for_each(print);
        Ok(())
    }
}

fn print(s: &SizedCurve) {
    let c: &Curve = &s.curve;
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
    if let Some(w) = &s.warmup {
        println!("warm-up {w}: the first {} requests warmed the stack uncounted", c.counts.warmup_requests);
    }
    if c.counts.skipped > 0 {
        println!("{} malformed lines skipped", c.counts.skipped);
    }
    println!(
        "{:>7} {:>12} {:>10} {:>8} {:>8} {:>8} {:>9} {:>12} {:>12}",
        "share", "cache", "pages", "miss", "read", "write", "request", "write-backs", "dirty at end"
    );
    for (p, share) in c.points.iter().zip(&s.shares) {
        // (the share of the footprint, given or not)
        let share = share.unwrap_or(p.cache_pages as f64 / c.counts.footprint_pages.max(1) as f64);
        println!(
            "{:>7} {:>12} {:>10} {:>8.4} {:>8.4} {:>8.4} {:>9.4} {:>12} {:>12}",
            format!("{:.1}%", share * 100.0),
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
