//! `ssdcache mrc`: a miss-ratio curve in one pass over a trace.

use crate::output;
use crate::run::TraceInput;
use anyhow::{bail, Result};
use clap::Args;
use ssdcache::mrc::miniature::{sampled_curves, Sizes};
use ssdcache::mrc::sample::{check_sample_keys, parse_sample_rate, SampleSpec};
use ssdcache::mrc::sized::{exact_lru_sized, SizedCurve};
use ssdcache::mrc::{Curve, Point};
use ssdcache::sim::flags::parse_page;
use ssdcache::sim::flags::{parse_cache_sizes, parse_warmup, CacheSize};
use ssdcache::sim::run::with_trace_name;
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
    /// Cache unit (page size): a multiple of 512 B from 512 B to 1 MiB.
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
    cache_share: Option<f64>,
    warmup: Option<&'a str>,
    warmup_requests: u64,
}

pub fn run(args: MrcArgs) -> Result<()> {
    let (policies, sampling) = policies_and_sampling(&args)?;
    let page_bytes = parse_page(&args.page)?;
    let caches = args.cache.as_deref().map(parse_cache_sizes).transpose()?;
    let warmup = args.warmup.as_deref().map(parse_warmup).transpose()?;
    if sampling.is_some() && warmup.is_some() {
        bail!("--warmup with --sample is not supported: sampled curves count from the first request");
    }
    let mut curves = Vec::new();
    for source in args.input.sources()? {
        let Some(spec) = &sampling else {
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
            continue;
        };
        let name = source.name();
        let sizes = match &caches {
            Some(list) => {
                Sizes::Pages(list.iter().map(|c| sampled_pages(c, page_bytes, &name)).collect::<Result<_>>()?)
            }
            None => Sizes::Even(args.points),
        };
        let sampled = sampled_curves(&source, page_bytes, &policies, &sizes, spec)?;
        curves.extend(sampled.into_iter().map(SizedCurve::plain));
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
                    policy: &c.policy,
                    method: c.method,
                    sample_rate: c.sample_rate,
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

/// The policies and the sampling asked for, checked: only lru is exact (one
/// pass, stack distances) without sampling; 1 to 100000 points.
pub fn policies_and_sampling(args: &MrcArgs) -> Result<(Vec<String>, Option<SampleSpec>)> {
    let policies = split_list(&args.policy);
    if policies.is_empty() {
        bail!("--policy: name at least one policy");
    }
    let sampling = sampling(args)?;
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
    Ok((policies, sampling))
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

/// A `--cache` size for a sampled curve, in pages: a share of the footprint
/// is not resolved there (the footprint is only estimated from the sample).
fn sampled_pages(size: &CacheSize, page_bytes: u64, trace: &str) -> Result<u64> {
    let CacheSize::Bytes(bytes) = *size else {
        bail!("{trace}: --cache N% with --sample is not supported: give sizes in bytes (16MiB)");
    };
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

fn print(s: &SizedCurve) {
    let c: &Curve = &s.curve;
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
