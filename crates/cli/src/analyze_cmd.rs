//! `ssdcache trace analyze`: what a workload is, in one pass (see `ssdcache::analyze`).

use crate::plot;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use ssdcache::analyze::bins::Histogram;
use ssdcache::analyze::timeline::Axis;
use ssdcache::analyze::{analyze, Analysis, IntervalSpec, Options};
use ssdcache::sim::flags::parse_page;
use ssdcache::sim::run::with_trace_name;
use ssdcache::sim::TraceSource;
use ssdcache::trace::info::{human_bytes, human_ns};
use ssdcache::trace::Format;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlotFormat {
    Png,
    Svg,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Trace file; or a workload spec with --gen.
    input: String,
    /// Input format.
    #[arg(long, short, default_value = "auto")]
    format: Format,
    /// Treat INPUT as a workload generator spec.
    #[arg(long)]
    gen: bool,
    /// Count and skip malformed lines instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Column mapping for --format csv, e.g. 'time=0,op=1,offset=2,size=3'.
    #[arg(long)]
    csv_columns: Option<String>,
    /// Page size: reuse, popularity and footprint count pages of this size (512 B to 1 MiB,
    /// a multiple of 512 B).
    #[arg(long, default_value = "4KiB")]
    page: String,
    /// Interval of the series and the heatmap: a duration of trace time (60s, 1h), a request
    /// count (100000req, 1Mreq), or auto (trace time if the trace has any, else requests;
    /// at most 256 intervals, widths doubling from 1 ns or 1 request). A fixed width may make
    /// at most 65,536 intervals.
    #[arg(long, default_value = "auto")]
    interval: String,
    /// Base of the reuse histograms' logarithmic bins (libCacheSim's analyzer uses 1.5); at
    /// least 1.000678, which makes 65,536 bins over the range of a u64.
    #[arg(long, default_value_t = 2.0)]
    log_base: f64,
    /// Print one JSON object, every table in it.
    #[arg(long)]
    json: bool,
    /// Draw one chart per analysis into this directory (needs the Python package and matplotlib).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Chart file format for --plot.
    #[arg(long, value_enum, default_value = "png")]
    plot_format: PlotFormat,
}

pub fn run(args: AnalyzeArgs) -> Result<()> {
    let source = if args.gen {
        TraceSource::Gen(args.input.clone())
    } else {
        TraceSource::file(&args.input, args.format, args.skip_bad, args.csv_columns.as_deref())?
    };
    let interval = args.interval.parse::<IntervalSpec>().map_err(|e| anyhow::anyhow!("--{e}"))?;
    let opts = Options { page_bytes: parse_page(&args.page)?, interval, log_base: args.log_base };
    if let Some(dir) = &args.plot {
        if dir.exists() && !dir.is_dir() {
            bail!("--plot {}: not a directory", dir.display());
        }
    }
    let a = analyze(&source, opts).map_err(|e| with_trace_name(e, &source))?;
    if args.json {
        println!("{}", serde_json::to_string(&a)?);
    } else {
        print(&a);
    }
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).with_context(|| format!("--plot {}", dir.display()))?;
        let json = dir.join("analysis.json");
        std::fs::write(&json, serde_json::to_string(&a)?).with_context(|| format!("writing {}", json.display()))?;
        let ext = if args.plot_format == PlotFormat::Svg { "svg" } else { "png" };
        let argv: Vec<OsString> =
            vec!["analysis".into(), json.into(), "-o".into(), dir.into(), "--plot-format".into(), ext.into()];
        plot::run_child(&argv)?;
    }
    Ok(())
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Value below which `q` of the histogram's values lie, as the upper edge of its bin.
fn quantile(h: &Histogram, q: f64) -> Option<f64> {
    let total: u64 = h.zero + h.bins.iter().map(|b| b.count).sum::<u64>();
    if total == 0 {
        return None;
    }
    let want = (q * total as f64).ceil() as u64;
    let mut seen = h.zero;
    if seen >= want {
        return Some(0.0);
    }
    h.bins
        .iter()
        .find(|b| {
            seen += b.count;
            seen >= want
        })
        .map(|b| b.hi)
}

/// Median, p90 and p99 as the upper edges of their bins, shown by `show`.
fn quantiles(h: &Histogram, show: impl Fn(f64) -> String) -> String {
    [0.5, 0.9, 0.99]
        .iter()
        .map(|&q| format!("p{:.0} < {}", q * 100.0, quantile(h, q).map_or("-".into(), &show)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn whole(v: f64) -> String {
    format!("{}", v.ceil())
}

fn print(a: &Analysis) {
    let accesses = a.read_pages + a.write_pages;
    println!("{:<18} {} ({}, {} unit)", "trace", a.trace, a.format, a.unit);
    println!(
        "{:<18} {} ({} reads {:.2}%, {} writes {:.2}%, {} trims)",
        "requests",
        a.requests,
        a.reads,
        pct(a.reads, a.requests),
        a.writes,
        pct(a.writes, a.requests),
        a.trims
    );
    println!("{:<18} read {}, written {}", "bytes", human_bytes(a.read_bytes), human_bytes(a.write_bytes));
    println!(
        "{:<18} {} ({} read, {} write) of {}",
        "page accesses",
        accesses,
        a.read_pages,
        a.write_pages,
        human_bytes(a.page_bytes)
    );
    println!(
        "{:<18} {} pages ({}); {:.2} accesses per page",
        "footprint",
        a.footprint_pages,
        human_bytes(a.footprint_pages * a.page_bytes),
        accesses as f64 / a.footprint_pages.max(1) as f64
    );
    println!("{:<18} {}", "duration", human_ns(a.duration_ns as f64));
    if a.skipped > 0 {
        println!("{:<18} {}", "skipped (bad)", a.skipped);
    }
    println!("{:<18} {} ({} first uses)", "reuse distance", quantiles(&a.reuse_distance, whole), a.footprint_pages);
    println!("{:<18} {} page accesses", "reuse time", quantiles(&a.reuse_accesses, whole));
    println!("{:<18} {} of trace time", "", quantiles(&a.reuse_time_ns, human_ns));
    let p = &a.popularity;
    match (p.zipf_alpha, p.zipf_r2) {
        (Some(alpha), Some(r2)) => println!(
            "{:<18} Zipf α = {alpha:.4} (R² {r2:.4}, least squares on log-log, ranks {}..{})",
            "popularity", p.fit_ranks[0], p.fit_ranks[1]
        ),
        _ => println!("{:<18} too few pages to fit", "popularity"),
    }
    let once = p.frequencies.iter().find(|f| f.frequency == 1).map_or(0, |f| f.pages);
    let top: Vec<String> = p.frequencies.iter().take(5).map(|f| format!("{}×{}", f.frequency, f.pages)).collect();
    println!(
        "{:<18} used once: {once} pages ({:.2}%); most used (uses×pages): {}",
        "",
        pct(once, a.footprint_pages),
        top.join(" ")
    );
    let s = &a.sequentiality;
    println!(
        "{:<18} {} runs, {} requests continue a run ({:.2}%), mean run {:.2} requests",
        "sequentiality",
        s.runs,
        s.sequential_requests,
        pct(s.sequential_requests, a.requests),
        a.requests as f64 / s.runs.max(1) as f64
    );
    let t = &a.timeline;
    let width = if t.axis == Axis::Time { human_ns(t.interval as f64) } else { format!("{} requests", t.interval) };
    let peak_ws = t.intervals.iter().map(|i| i.distinct_pages).max().unwrap_or(0);
    let peak_rate = t.intervals.iter().map(|i| i.counts.requests).max().unwrap_or(0);
    println!(
        "{:<18} {} intervals of {width}; working set up to {peak_ws} pages, up to {peak_rate} requests per interval{}",
        "timeline",
        t.intervals.len(),
        if t.axis == Axis::Time {
            format!(" ({:.1}/s)", peak_rate as f64 * 1e9 / t.interval as f64)
        } else {
            String::new()
        }
    );
    println!(
        "{:<18} {} rows of {} pages × {} intervals",
        "heatmap",
        t.heatmap.counts.len(),
        t.heatmap.pages_per_row,
        t.intervals.len()
    );
    println!("devices ({}):", a.devices.len());
    println!(
        "  {:>6} {:>10} {:>7} {:>12} {:>12} {:>12}",
        "dev", "requests", "reads", "footprint", "pages", "sequential"
    );
    for d in a.devices.iter().take(20) {
        println!(
            "  {:>6} {:>10} {:>6.1}% {:>12} {:>12} {:>11.1}%",
            d.dev,
            d.requests,
            pct(d.reads, d.requests),
            d.footprint_pages,
            format!("{}..{}", d.first_page, d.last_page),
            pct(d.sequential_requests, d.requests)
        );
    }
    if a.devices.len() > 20 {
        println!("  … {} more (--json has them all)", a.devices.len() - 20);
    }
}
