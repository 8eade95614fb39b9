//! `ssdcache sim`: one run or a sweep over traces × policies × caches × modes.

use crate::output;
use anyhow::{bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use ssdcache::metrics::Report;
use ssdcache::policy::Mode;
use ssdcache::sim::flags::{check_repeat, parse_interval, parse_mode, parse_page, parse_queue_depth, queue_spec};
use ssdcache::sim::flags::{parse_cache_sizes, parse_warmup, CacheSize};
use ssdcache::sim::relative::{self, Sizing};
use ssdcache::sim::run;
use ssdcache::sim::{QueueSpec, RunSpec, SimError, TraceSource};
use ssdcache::spec::split_list;
use ssdcache::trace::Format;
use std::io::IsTerminal;
use std::path::PathBuf;

/// The bundled default workload: a skewed mix of reads and writes over 64 MiB
/// of 4 KiB blocks with a periodic scan, so policies differ visibly.
pub const DEFAULT_GEN: &str = "mix(zipf(alpha=0.9,keys=16384,read=70%,unit=bytes),scan(length=4096,read=90%,unit=bytes),weights=85%/15%,requests=200k,seed=1)";
const DEFAULT_POLICIES: &str = "lru,fifo,clock,lfu,2q,arc,lirs,s3fifo,belady";
const DEFAULT_CACHES: &str = "4MiB,16MiB";

/// Where requests come from: trace files or generator specs, and how to read them.
#[derive(Args, Debug)]
pub struct TraceInput {
    /// Trace file(s); repeat for several. Compressed (gz, xz, bz2, zstd) files read transparently.
    #[arg(long, short)]
    pub trace: Vec<PathBuf>,
    /// Synthetic workload spec(s) instead of a file, e.g. 'zipf(alpha=0.9,keys=1M,requests=10M)'.
    #[arg(long)]
    pub gen: Vec<String>,
    /// Trace format (see `ssdcache trace formats`); auto sniffs and says what it chose.
    #[arg(long, short, default_value = "auto")]
    pub format: Format,
    /// Count and skip malformed lines instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Column mapping for --format csv, e.g. 'time=0,op=1,offset=2,size=3'.
    #[arg(long)]
    pub csv_columns: Option<String>,
    /// What a request is: `page` (byte ranges or keys split into cache pages) or
    /// `object` (a key with a size in bytes: oracle-general, lcs, twr,
    /// webcachesim, csv; capacities in bytes, object and byte miss ratios).
    #[arg(long, value_enum, default_value = "page")]
    pub unit: RequestUnit,
}

/// `--unit`: what a request is.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestUnit {
    Page,
    Object,
}

impl TraceInput {
    /// The sources named, or the bundled default workload when none is.
    pub fn sources(&self) -> Result<Vec<TraceSource>> {
        let mut out = self
            .trace
            .iter()
            .map(|p| TraceSource::file(p, self.format, self.skip_bad, self.csv_columns.as_deref()))
            .collect::<Result<Vec<TraceSource>, SimError>>()?;
        out.extend(self.gen.iter().map(|g| TraceSource::Gen(g.clone())));
        if out.is_empty() {
            out.push(TraceSource::Gen(DEFAULT_GEN.to_string()));
        }
        Ok(out)
    }
}

#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    pub input: TraceInput,
    /// Policy spec(s), comma-separated: NAME or NAME(key=value,...). `ssdcache policies` lists them.
    #[arg(long, short)]
    pub policy: Option<String>,
    /// Cache size(s), comma-separated, e.g. 16MiB,64MiB, or shares of the trace's
    /// footprint (distinct pages touched), e.g. 1%,5%,10% (rounded up to whole pages;
    /// needs a first pass over each trace, so not on stdin). Mixed lists are fine.
    #[arg(long, short)]
    pub cache: Option<String>,
    /// Run the head of each trace through the cache and devices without counting it:
    /// a share of the requests (20%), a duration of trace time (1h, 30min) or a request
    /// count (5M, 500k, 1000). Reports say what was skipped (warmup, warmup_requests).
    #[arg(long)]
    pub warmup: Option<String>,
    /// Cache unit (page size): a multiple of 512 B from 512 B to 1 MiB.
    #[arg(long, default_value = "4KiB")]
    pub page: String,
    /// Cache mode(s), comma-separated: write-back, write-through, write-around, write-only, read-only.
    #[arg(long, default_value = "write-back")]
    pub mode: String,
    /// Backing device model charged with the cache's I/O, e.g. 'ftl(type=page,nand=mlc2,op=7%)',
    /// 'hdd(model=rpm7200)', 'ssd'. `ssdcache devices` lists them and their parameters.
    #[arg(long, short)]
    pub device: Option<String>,
    /// The cache's own device, charged with hits, fills and write-back reads,
    /// e.g. 'ssd' for an SSD caching an HDD (--device hdd). Without it, cache hits are free.
    #[arg(long)]
    pub cache_device: Option<String>,
    /// Replay each trace this many times back to back (short traces over many simulated days); at least 1.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Report a time series per interval of trace time, e.g. 1d or 1h: requests,
    /// hit ratio, mean device time per request, device-limited throughput. Only
    /// intervals with requests are listed (at most 1,000,000 of them).
    #[arg(long)]
    pub interval: Option<String>,
    /// Replay as an open queueing system with this NCQ depth (1..=512), comma-separated
    /// for a sweep, e.g. 32,512: arrivals at the trace's timestamps, FIFO service by the
    /// --device model; reports latency, IOPS, MB/s, average queue length. Needs --device.
    #[arg(long)]
    pub queue_depth: Option<String>,
    /// Factor(s) on the trace's inter-arrival times for the queueing replay, comma-separated
    /// (default 1 = the trace's own timing; 0 = all at once). Implies a queue (depth 32 unless given).
    #[arg(long)]
    pub iat_scale: Option<String>,
    /// Take every request as page-aligned (rounded out to whole pages), so no
    /// write is partial and none costs a read-for-write: the view of an FTL fed
    /// page-aligned LBAs, as paper 001's simulator is. Off by default.
    #[arg(long)]
    pub align_pages: bool,
    /// Print one JSON object per run (one per line).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV, one row per run.
    #[arg(long)]
    pub csv: bool,
    /// Worker threads for sweeps (default or 0: all cores); never more than there
    /// are runs, nor more than 4 per core.
    #[arg(long, short)]
    pub jobs: Option<usize>,
}

pub fn sim(args: SimArgs) -> Result<()> {
    check_repeat(args.repeat)?;
    let page_bytes = parse_page(&args.page)?;
    let policies = split_list(args.policy.as_deref().unwrap_or(DEFAULT_POLICIES));
    let caches = parse_cache_sizes(args.cache.as_deref().unwrap_or(DEFAULT_CACHES))?;
    let warmup = args.warmup.as_deref().map(parse_warmup).transpose()?;
    let modes = split_list(&args.mode).iter().map(|m| parse_mode(m)).collect::<Result<Vec<Mode>, SimError>>()?;
    if policies.is_empty() || caches.is_empty() || modes.is_empty() {
        bail!("--policy, --cache and --mode each need at least one value");
    }
    let queues = queues(&args)?;
    let interval = args.interval.as_deref().map(parse_interval).transpose()?;
    let mut sources = args.input.sources()?;
    let spec_of = |policy: &str, cache_bytes: u64, mode: Mode, queue: Option<QueueSpec>, sizing: Sizing| RunSpec {
        policy: policy.to_string(),
        cache_bytes,
        page_bytes,
        mode,
        device: args.device.clone(),
        cache_device: args.cache_device.clone(),
        interval,
        queue,
        align_pages: args.align_pages,
        sizing,
    };
    // Check every spec before reading any trace, so a typo fails at once (a
    // share is checked as one page: its size is known only on the trace).
    let warm_only = Sizing { warmup: warmup.as_ref().map(|w| w.text.clone()), ..Default::default() };
    for p in &policies {
        for c in &caches {
            let bytes = match c {
                CacheSize::Bytes(b) => *b,
                CacheSize::Share(_) => page_bytes,
            };
            for &m in &modes {
                for &q in &queues {
                    run::check(&spec_of(p, bytes, m, q, warm_only.clone()))?;
                }
            }
        }
    }
    for s in &sources {
        relative::check_source(s, &caches, warmup.as_ref())?;
    }
    let runs_per_trace = policies.len() * caches.len() * modes.len() * queues.len();
    if args.repeat > 1 {
        for s in sources.iter_mut() {
            *s = s.repeat(args.repeat).map_err(|e| with_trace_name(e, s))?;
        }
    }
    if runs_per_trace > 1 {
        // Several runs per trace: parse each trace once, share it.
        for s in sources.iter_mut() {
            let was_file = matches!(s, TraceSource::File { .. });
            *s = s.load().map_err(|e| with_trace_name(e, s))?;
            if let TraceSource::Memory { format, name, skipped, .. } = s {
                if was_file && args.input.format == Format::Auto {
                    eprintln!("{name}: format {format} (auto)");
                }
                if *skipped > 0 {
                    eprintln!("{name}: skipped {skipped} malformed lines");
                }
            }
        }
    }
    let mut grid = Vec::new();
    for (s, source) in sources.iter().enumerate() {
        // each trace's sizes resolved on it, in one pass at most
        let plan =
            relative::plan(source, page_bytes, &caches, warmup.as_ref()).map_err(|e| with_trace_name(e, source))?;
        for p in &policies {
            for (bytes, sizing) in &plan {
                for &m in &modes {
                    for &q in &queues {
                        grid.push((s, spec_of(p, *bytes, m, q, sizing.clone())));
                    }
                }
            }
        }
    }
    let reports = run_grid(&sources, &grid, args.jobs)?;
    if args.json {
        output::json(&reports)
    } else if args.csv {
        output::csv(&reports)
    } else if reports.len() == 1 {
        output::detail(&reports[0]);
        Ok(())
    } else {
        output::table(&reports);
        Ok(())
    }
}

/// The queue settings to sweep: none, or every depth × scale given.
fn queues(args: &SimArgs) -> Result<Vec<Option<QueueSpec>>> {
    if args.queue_depth.is_none() && args.iat_scale.is_none() {
        return Ok(vec![None]);
    }
    let depths = split_list(args.queue_depth.as_deref().unwrap_or("32"))
        .iter()
        .map(|d| parse_queue_depth(d))
        .collect::<Result<Vec<u32>, SimError>>()?;
    let scales = split_list(args.iat_scale.as_deref().unwrap_or("1"))
        .iter()
        .map(|f| f.parse::<f64>().map_err(|_| anyhow::anyhow!("--iat-scale: {f:?} is not a number")))
        .collect::<Result<Vec<f64>>>()?;
    if depths.is_empty() || scales.is_empty() {
        bail!("--queue-depth and --iat-scale each need at least one value");
    }
    let mut out = Vec::new();
    for &depth in &depths {
        for &iat_scale in &scales {
            out.push(queue_spec(Some(depth), Some(iat_scale))?);
        }
    }
    Ok(out)
}

/// Trace errors name their file already; others get the trace's name in front.
fn with_trace_name(e: SimError, source: &TraceSource) -> anyhow::Error {
    anyhow::Error::new(run::with_trace_name(e, source))
}

fn run_grid(sources: &[TraceSource], grid: &[(usize, RunSpec)], jobs: Option<usize>) -> Result<Vec<Report>> {
    let bar = if grid.len() > 1 && std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(grid.len() as u64);
        bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed} {msg}").unwrap());
        bar
    } else {
        ProgressBar::hidden()
    };
    if let [(s, spec)] = grid {
        // One run: a bar over its reading of the trace file, with an ETA.
        let bar = crate::progress::Bar::new(&sources[*s].name());
        let report = run::run_with_progress(&sources[*s], spec, bar.progress());
        return Ok(vec![report.map_err(|e| with_trace_name(e, &sources[*s]))?]);
    }
    let pool = pool(jobs, grid.len())?;
    let results: Vec<Result<Report>> = pool.install(|| {
        grid.par_iter()
            .map(|(s, spec)| {
                let r = run::run(&sources[*s], spec).map_err(|e| with_trace_name(e, &sources[*s]));
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    results.into_iter().collect()
}

/// Most worker threads per core: more only cost memory (each run holds its
/// own cache) and a thread each.
const THREADS_PER_CORE: usize = 4;

/// Worker threads for `runs` runs on `cores` cores: `-j` (none or 0: one per
/// core), but at most one per run and [`THREADS_PER_CORE`] per core, so
/// `-j 5000` on one run starts one thread, not 5000.
fn threads(jobs: Option<usize>, runs: usize, cores: usize) -> usize {
    let cores = cores.max(1);
    let asked = match jobs {
        None | Some(0) => cores,
        Some(j) => j,
    };
    asked.min(runs).min(THREADS_PER_CORE * cores).max(1)
}

/// The thread pool for `runs` runs (see [`threads`]).
pub fn pool(jobs: Option<usize>, runs: usize) -> Result<rayon::ThreadPool> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(rayon::ThreadPoolBuilder::new().num_threads(threads(jobs, runs, cores)).build()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn queues_of(args: &[&str]) -> Result<Vec<Option<QueueSpec>>> {
        let cmd = Cmd::try_parse_from(std::iter::once("sim").chain(args.iter().copied()))?;
        queues(&cmd.sim)
    }

    #[test]
    fn queue_flags_sweep_depth_by_scale() {
        assert_eq!(queues_of(&[]).unwrap(), vec![None]);
        let q = queues_of(&["--queue-depth", "32,512", "--iat-scale", "1,0.5"]).unwrap();
        let got: Vec<(u32, f64)> = q.iter().map(|q| q.map(|q| (q.depth, q.iat_scale)).unwrap()).collect();
        assert_eq!(got, vec![(32, 1.0), (32, 0.5), (512, 1.0), (512, 0.5)]);
        // Either flag alone implies a queue: depth 32, scale 1 by default.
        let q = queues_of(&["--iat-scale", "4"]).unwrap();
        assert_eq!(q, vec![Some(QueueSpec { depth: 32, iat_scale: 4.0 })]);
        let q = queues_of(&["--queue-depth", "1"]).unwrap();
        assert_eq!(q, vec![Some(QueueSpec { depth: 1, iat_scale: 1.0 })]);
    }

    #[test]
    fn jobs_are_bounded_by_runs_and_cores() {
        assert_eq!(threads(Some(5000), 1, 2), 1);
        assert_eq!(threads(Some(5000), 100, 2), 8);
        assert_eq!(threads(Some(3), 100, 2), 3);
        assert_eq!(threads(None, 100, 2), 2);
        assert_eq!(threads(Some(0), 100, 2), 2);
        assert_eq!(threads(None, 1, 16), 1);
        assert_eq!(threads(Some(1), 0, 0), 1);
        // The pool itself: one thread for one run, whatever -j says.
        assert_eq!(pool(Some(5000), 1).unwrap().current_num_threads(), 1);
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(pool(Some(5000), 100_000).unwrap().current_num_threads(), (4 * cores).min(5000));
    }

    #[test]
    fn bad_queue_flags_say_which() {
        let e = queues_of(&["--queue-depth", "0"]).unwrap_err().to_string();
        assert!(e.contains("--queue-depth") && e.contains("1..=512"), "{e}");
        let e = queues_of(&["--queue-depth", "deep"]).unwrap_err().to_string();
        assert!(e.contains("--queue-depth") && e.contains("deep"), "{e}");
        let e = queues_of(&["--iat-scale=-1"]).unwrap_err().to_string();
        assert!(e.contains("scale"), "{e}");
        let e = queues_of(&["--iat-scale", "fast"]).unwrap_err().to_string();
        assert!(e.contains("--iat-scale"), "{e}");
    }
}
