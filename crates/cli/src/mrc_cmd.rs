//! `ssdcache mrc`: a miss-ratio curve in one pass over a trace.

use crate::output;
use crate::run::TraceInput;
use anyhow::{bail, Result};
use clap::Args;
use ssdcache::mrc::miniature::{sampled_curves, Sizes};
use ssdcache::mrc::sample::{check_sample_keys, parse_sample_rate, SampleSpec};
use ssdcache::mrc::{exact_lru, Curve, Point};
use ssdcache::sim::run::{parse_cache, parse_page, with_trace_name};
use ssdcache::spec::split_list;
use ssdcache::units::format_bytes;

#[derive(Args, Debug)]
pub struct MrcArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// Policies, comma-separated: lru alone is exact (stack distances, one
    /// pass); with --sample, lru is estimated by SHARDS and any other policy
    /// (write modes in its spec: lru(mode=wt)) by miniature simulation.
    #[arg(long, short, default_value = "lru")]
    pub policy: String,
    /// Sample page keys by hash at this rate (1%, 0.001): SHARDS for lru,
    /// miniature simulation (caches scaled by the rate) for other policies.
    #[arg(long, allow_hyphen_values = true)]
    pub sample: Option<String>,
    /// Fixed-size SHARDS for lru: track at most N sampled keys, lowering the
    /// rate (from --sample, or 100%) as more appear.
    #[arg(long, value_name = "N")]
    pub sample_keys: Option<u64>,
    /// Seed of the sampling hash.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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
    policy: &'a str,
    method: &'static str,
    sample_rate: f64,
    #[serde(flatten)]
    point: &'a Point,
}

pub fn run(args: MrcArgs) -> Result<()> {
    let policies = split_list(&args.policy);
    if policies.is_empty() {
        bail!("--policy: name at least one policy");
    }
    let sampling = sampling(&args)?;
    if sampling.is_none() && policies.iter().any(|p| !p.trim().eq_ignore_ascii_case("lru")) {
        bail!(
            "--policy {}: without --sample mrc computes exact curves for lru only (one pass, stack \
             distances); add --sample 1% for other policies, or run `ssdcache sim --cache` with a list of sizes",
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
        let given = match &caches {
            Some(bytes) => Some(bytes.iter().map(|b| pages_in(*b, page_bytes, &name)).collect::<Result<Vec<u64>>>()?),
            None => None,
        };
        let Some(spec) = sampling else {
            let profile = exact_lru(&source, page_bytes).map_err(|e| with_trace_name(e, &source))?;
            let sizes = given.unwrap_or_else(|| profile.even_sizes(args.points));
            curves.push(profile.curve(name, &sizes));
            continue;
        };
        let sizes = given.map_or(Sizes::Even(args.points), Sizes::Pages);
        curves.extend(sampled_curves(&source, page_bytes, &policies, &sizes, &spec)?);
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
        curves.iter().for_each(print);
        Ok(())
    }
}

/// The sampling asked for, if any.
fn sampling(args: &MrcArgs) -> Result<Option<SampleSpec>> {
    if args.sample.is_none() && args.sample_keys.is_none() {
        return Ok(None);
    }
    let rate = args.sample.as_deref().map(parse_sample_rate).transpose()?.unwrap_or(1.0);
    if let Some(n) = args.sample_keys {
        check_sample_keys(n)?;
    }
    Ok(Some(SampleSpec { rate, max_keys: args.sample_keys, seed: args.seed }))
}

fn pages_in(bytes: u64, page_bytes: u64, trace: &str) -> Result<u64> {
    if bytes < page_bytes {
        bail!("{trace}: --cache {}: smaller than one page ({})", format_bytes(bytes), format_bytes(page_bytes));
    }
    Ok(bytes / page_bytes)
}

fn method_text(c: &Curve) -> String {
    match (c.method, c.sample_rate) {
        ("shards", r) => format!("{}, SHARDS estimate from a {}% sample of keys", c.policy, percent(r)),
        ("miniature", r) => format!(
            "{}, miniature simulation on a {}% sample (caches scaled by it; write-backs scaled back)",
            c.policy,
            percent(r)
        ),
        _ => format!("{}, exact (one pass)", c.policy.to_uppercase()),
    }
}

fn percent(rate: f64) -> String {
    format!("{:.4}", rate * 100.0).trim_end_matches('0').trim_end_matches('.').to_string()
}

fn print(c: &Curve) {
    println!("trace: {}", c.trace);
    println!(
        "{} requests, {} page accesses ({} reads, {} writes), footprint {}{} pages ({}); {}",
        c.counts.requests,
        c.counts.read_pages + c.counts.write_pages,
        c.counts.read_pages,
        c.counts.write_pages,
        if c.method != "exact" { "~" } else { "" },
        c.counts.footprint_pages,
        format_bytes(c.counts.footprint_pages * c.counts.page_bytes),
        method_text(c)
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
