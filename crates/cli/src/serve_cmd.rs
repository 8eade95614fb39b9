//! `ssdcache create | serve | check | status | flush | maintain`: the
//! persistent SSD cache of paper 000 (PWC write-back, or a read-only /
//! write-through / write-around / passthrough baseline) served over NBD
//! (`ssdcache_engine`).
//!
//! A cache is a file (or device) CACHE in front of a backing file BACKING.
//! CACHE holds a 4 KiB superblock, the two metadata slots, then the SSD
//! segment slots; BACKING stays a plain image (see `cache::layout`).

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;
use ssdcache::policy::tiered::cleaner::CleanerConfig;
use ssdcache::units::{format_bytes, parse_bytes, parse_duration_ns, parse_ratio};
use ssdcache_daemon::control::socket::{self as control, Reply};
use ssdcache_daemon::metrics::http::{self, EndpointLimits};
use ssdcache_daemon::DaemonConfig;
use ssdcache_engine::cleaner::Pace;
use ssdcache_engine::engine::TrimMode;
use ssdcache_engine::inject::FaultPlan;
use ssdcache_engine::model_device::ModelDevice;
use ssdcache_engine::{check, files};
use ssdcache_engine::{recover, EngineConfig, FileDevice, StartOptions};
use ssdcache_engine::{CacheMode, Superblock};
use ssdcache_nbd::consts::MAX_STRING_LEN;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Paper 000 §3.1: segments of 128 KiB to 1 MiB.
const SEGMENT_RANGE: std::ops::RangeInclusive<u64> = (128 << 10)..=(1 << 20);

#[derive(Args)]
pub struct CreateArgs {
    /// Cache file or device; its size is the cache size (a missing file is created with `--size`).
    cache: PathBuf,
    /// Backing file or device (its size must be a multiple of the segment size).
    backing: PathBuf,
    /// Segment size (paper 000 §3.1: 128 KiB to 1 MiB; a multiple of 4 KiB).
    #[arg(long, default_value = "1MiB")]
    segment: String,
    /// write-back: paper 000's PWC (hot segments cached once a day, writes to them stay on the
    /// SSD); write-through: a replacement policy (`serve --policy`, LRU by default) fills on
    /// every miss, writes go to both devices; write-around: the same, but write misses are not
    /// cached; read-only (alias write-invalidate): paper 000's LRU baseline, read misses fill,
    /// a write goes to BACKING only and drops the segment from the cache (clients still write:
    /// this is not a read-only export); passthrough: no caching. Fixed for the cache's life
    /// (recovery depends on it).
    #[arg(long, default_value = "write-back")]
    mode: String,
    /// Create CACHE as a file of this size first (e.g. 32GiB) if it does not exist.
    #[arg(long)]
    size: Option<String>,
    /// Overwrite a CACHE that holds data or a cache (discarding what it caches); still refused
    /// while its metadata says it may hold writes not yet on the backing store.
    #[arg(long)]
    force: bool,
    /// With --force: overwrite even a cache that may hold writes not yet on the backing store
    /// (they are lost; `ssdcache drain` writes them back first).
    #[arg(long, requires = "force")]
    discard_dirty: bool,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Cache file made by `ssdcache create`.
    cache: PathBuf,
    /// The backing file it was created for.
    backing: PathBuf,
    #[command(flatten)]
    net: crate::serve_net::NetArgs,
    /// Export name (the empty default name also selects it).
    #[arg(long, default_value = "")]
    export: String,
    /// Serve the export read-only: clients see NBD_FLAG_READ_ONLY, and writes, trims and
    /// write-zeroes are refused with EPERM. Reads still fill the cache as its mode does, and
    /// dirty segments are still written back to BACKING.
    #[arg(long)]
    read_only: bool,
    /// Record every request the server answers (time, op, range, hit/miss/bypass) to this file,
    /// zstd-compressed, a trace `ssdcache sim` replays (its header says how); `ssdcache record`
    /// starts and stops one at run time.
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    #[command(flatten)]
    record_bounds: crate::record_cmd::RecordBounds,
    /// The live what-if: miss-ratio curves of these policies (comma-separated specs) at 1/4x to
    /// 4x this cache, on the workload served (`ssdcache whatif CACHE`). Default: the running
    /// policy, lru and s3fifo; `off`: none.
    #[arg(long, value_name = "POLICIES")]
    whatif: Option<String>,
    /// Memory the what-if may use (it samples segments to stay within it), e.g. 64MiB.
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    whatif_memory: String,
    /// What clients' trims do. pass (default): the backing store discards the range (a hole
    /// punched in a file, BLKDISCARD on a block device) and cached segments it covers wholly are
    /// dropped, dirty ones too (never written back); write-zeroes punch holes too unless the
    /// client says NO_HOLE. ignore: trims are ignored (a hint, as NBD allows) and write-zeroes
    /// never punch holes.
    #[arg(long, default_value = "pass", value_name = "pass|ignore")]
    trim: String,
    /// Run the caching-and-eviction procedure this often (paper 000 §4.1: daily).
    /// `ssdcache maintain` or SIGUSR1 runs it now.
    #[arg(long, default_value = "24h")]
    period: String,
    /// Let a due procedure wait until no request has arrived for this long (paper 000: "in idle time").
    #[arg(long)]
    idle: Option<String>,
    /// The cache's policy: any of `ssdcache policies` that decides on each access (lru, s3fifo, sieve,
    /// arc, 2q, wtinylfu, admit(...), ...), in every mode; for a write-back cache also `pwc`, paper 000's
    /// procedure. Default: pwc for write-back, lru for the other modes.
    #[arg(long)]
    policy: Option<String>,
    /// Write-back only: above this share of dirty slots (e.g. 20%), a background cleaner writes the
    /// oldest dirty segments back until the share is met (docs/serve.md, "Bounded dirty data").
    #[arg(long, value_name = "SHARE")]
    max_dirty: Option<String>,
    /// Write-back only: no segment stays dirty longer than this (e.g. 10min); the cleaner writes it back.
    #[arg(long, value_name = "DURATION")]
    dirty_age: Option<String>,
    /// Write-back only: the cleaner writes back at most this many bytes per second (e.g. 50MB;
    /// whole segments). Default: unlimited.
    #[arg(long, value_name = "BYTES")]
    clean_rate: Option<String>,
    /// Write-back only: once over --max-dirty, the cleaner writes back until at most this share is
    /// dirty (a low watermark, e.g. --max-dirty 50% --clean-to 45%), so clean victims stay at hand.
    /// Default: --max-dirty itself.
    #[arg(long, value_name = "SHARE")]
    clean_to: Option<String>,
    /// Write-back only: how the cleaner yields to requests. adaptive (default): the further the
    /// dirty slots are over their target and the nearer the cache is to all dirty, the less it
    /// waits for a gap in the requests; gap: waits for a 2 ms gap, at most 50 ms per segment (the
    /// first cleaner); full: never waits (a flush storm, for comparison).
    #[arg(long, value_name = "PACE")]
    clean_pace: Option<String>,
    /// Write-through, write-around and read-only caches: a sequential stream longer than this
    /// (e.g. 4MiB; followed segment by segment) bypasses the cache (bcache's sequential_cutoff).
    #[arg(long, value_name = "SIZE")]
    seq_cutoff: Option<String>,
    /// Write-through, write-around and read-only caches: fill a segment only at its N-th miss
    /// (Open CAS's NHIT promotion); the misses before it bypass the cache.
    #[arg(long, value_name = "N")]
    promote_after: Option<u32>,
    /// Control socket for `ssdcache status | flush | maintain` (default: CACHE.ctl). Only a
    /// stale socket there is replaced; anything else is refused.
    #[arg(long)]
    control: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics, a live page at http://ADDR/ and the status
    /// at http://ADDR/status.json (e.g. 127.0.0.1:9100; port 0 picks a free one, `metrics on ADDR`
    /// tells which). Unauthenticated: keep it on loopback or a trusted network.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Metrics connections served at once, 1 to 256; more are closed at accept [default: 8].
    #[arg(long, value_name = "N")]
    metrics_max_clients: Option<usize>,
    /// Time a metrics connection has to send its request and take the page, 100ms to 10min
    /// [default: 5s].
    #[arg(long, value_name = "DURATION")]
    metrics_timeout: Option<String>,
    #[command(flatten)]
    limits: crate::serve_limits::LimitArgs,
    /// Benchmarks only: make BACKING as slow as the simulator's HDD model says
    /// (`hdd(model=rpm7200,scale=0.2)`; see `cache::model_device`).
    #[arg(long, hide = true)]
    backing_model: Option<String>,
    /// Tests only: inject faults into the cache device's data region (`cache::inject` spec,
    /// e.g. `read:eio:after=100;write:enospc:count=5`).
    #[arg(long, hide = true)]
    inject_cache: Option<String>,
    /// Tests only: inject faults into the backing device (`cache::inject` spec).
    #[arg(long, hide = true)]
    inject_backing: Option<String>,
    /// Start even if no metadata can be used, formatting it afresh (discards the SSD cache);
    /// refused while a metadata copy says the SSD may hold writes not yet on BACKING.
    #[arg(long)]
    force: bool,
    /// With --force: discard even writes not yet written back (`ssdcache drain` saves them first).
    #[arg(long, requires = "force")]
    discard_dirty: bool,
    /// Cache-device I/O errors before the cache goes degraded (writes go to BACKING, nothing new
    /// is cached, dirty segments are written back); a device that shrinks degrades it at once.
    #[arg(long, default_value_t = ssdcache_engine::datapath::DEFAULT_ERROR_LIMIT)]
    max_cache_errors: u64,
    /// Clear a degraded cache's degraded state (after replacing or checking the cache device).
    #[arg(long)]
    clear_degraded: bool,
    /// BACKING is the disk this cache was created for although it was copied or renumbered
    /// (its inode or device number changed): accept it and record its new identity.
    #[arg(long)]
    backing_moved: bool,
    /// Log more (-v: info, -vv: debug) to stderr.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Cache file made by `ssdcache create`.
    cache: PathBuf,
    /// Print JSON (the verdict, every copy's state, and where each copy lives).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct DrainArgs {
    /// Cache file made by `ssdcache create` (no server may be running on it).
    cache: PathBuf,
    /// The backing file it was created for.
    backing: PathBuf,
    /// When the newest metadata cannot be proven current (a slot unusable in both copies), drain
    /// by the newest valid save anyway, assuming the unusable slot held a save torn by a crash.
    #[arg(long)]
    assume_torn: bool,
    /// BACKING is this cache's disk although it was copied or renumbered (see `serve --backing-moved`).
    #[arg(long)]
    backing_moved: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct StatusArgs {
    /// Cache file made by `ssdcache create`.
    cache: PathBuf,
    /// The server's control socket (default: CACHE.ctl).
    #[arg(long)]
    control: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Give up on a running server that does not answer within this long.
    #[arg(long, default_value = "10s")]
    timeout: String,
}

#[derive(Args)]
pub struct ControlArgs {
    /// Cache file a running `ssdcache serve` serves.
    cache: PathBuf,
    /// The server's control socket (default: CACHE.ctl).
    #[arg(long)]
    control: Option<PathBuf>,
    /// Give up if the server has not finished within this long (writing back or copying
    /// segments can take minutes).
    #[arg(long, default_value = "30min")]
    timeout: String,
}

pub fn create(a: CreateArgs) -> Result<()> {
    let seg = parse_bytes(&a.segment).map_err(|e| anyhow::anyhow!("--segment: {e}"))?;
    if !SEGMENT_RANGE.contains(&seg) || seg % 4096 != 0 {
        bail!("--segment {}: must be a multiple of 4 KiB from 128 KiB to 1 MiB (paper 000 §3.1)", a.segment);
    }
    let seg = seg as u32;
    let mode: CacheMode = a.mode.parse().map_err(|e| anyhow::anyhow!("--mode: {e}"))?;
    let size = match (a.cache.exists(), &a.size) {
        (true, _) => None,
        (false, None) => bail!("{} does not exist: give its size with --size (e.g. --size 32GiB)", a.cache.display()),
        (false, Some(size)) => Some(parse_bytes(size).map_err(|e| anyhow::anyhow!("--size: {e}"))?),
    };
    if let Some(size) = size {
        let f = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&a.cache)
            .with_context(|| format!("creating {}", a.cache.display()))?;
        // A refusal from here on leaves no file behind.
        if let Err(e) = f.set_len(size) {
            let _ = std::fs::remove_file(&a.cache);
            return Err(e).with_context(|| format!("sizing {} to {size} bytes", a.cache.display()));
        }
    }
    let opts = files::CreateOptions { force: a.force, discard_dirty: a.discard_dirty };
    let sb = files::create(&a.cache, &a.backing, seg, mode, opts)
        .inspect_err(|_| {
            if size.is_some() {
                let _ = std::fs::remove_file(&a.cache);
            }
        })
        .with_context(|| format!("creating a cache in {}", a.cache.display()))?;
    let g = sb.geometry;
    println!(
        "created a {} cache: {} SSD segments of {} ({}) for {} HDD segments ({}); metadata 2 × {} bytes at {} and {}, data at {}",
        sb.mode.name(),
        g.ssd_segments,
        format_bytes(g.segment_size as u64),
        format_bytes(g.ssd_segments as u64 * g.segment_size as u64),
        g.hdd_segments,
        format_bytes(g.hdd_segments * g.segment_size as u64),
        sb.data_offset - sb.meta_offset,
        sb.meta_offset,
        sb.mirror_offset,
        sb.data_offset
    );
    Ok(())
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let ns = parse_duration_ns(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    if ns == 0 {
        bail!("{flag} must be positive");
    }
    Ok(Duration::from_nanos(ns))
}

/// The cleaner's bounds from `--max-dirty`, `--dirty-age`, `--clean-rate`
/// (as the simulator's `pwc(max_dirty=…,dirty_age=…,clean_rate=…)`, except
/// that a zero age is refused rather than meaning "no bound").
fn cleaner_config(a: &ServeArgs) -> Result<CleanerConfig> {
    let max_dirty = a
        .max_dirty
        .as_deref()
        .map(|t| parse_ratio(t).map_err(|e| anyhow::anyhow!("--max-dirty: {e}")))
        .transpose()?
        .filter(|&m| m < 1.0);
    let dirty_age = a.dirty_age.as_deref().map(|t| duration("--dirty-age", t)).transpose()?;
    let rate = match a.clean_rate.as_deref() {
        None | Some("unlimited") => None,
        Some(t) => Some(parse_bytes(t).map_err(|e| anyhow::anyhow!("--clean-rate: {e}"))?),
    };
    if rate.is_some() && max_dirty.is_none() && dirty_age.is_none() {
        bail!("--clean-rate limits the cleaner, which runs only with --max-dirty or --dirty-age");
    }
    let clean_to =
        a.clean_to.as_deref().map(|t| parse_ratio(t).map_err(|e| anyhow::anyhow!("--clean-to: {e}"))).transpose()?;
    let cfg = CleanerConfig { max_dirty, dirty_age: dirty_age.map(|d| d.as_nanos() as u64), rate, clean_to };
    cfg.check().map_err(|e| {
        anyhow::anyhow!("--clean-to: {}", e.replace("clean_to", "--clean-to").replace("max_dirty", "--max-dirty"))
    })?;
    Ok(cfg)
}

/// Refuses cleaner flags for a cache that is not write-back (read from its superblock).
fn check_cleaner_mode(a: &ServeArgs, cfg: &CleanerConfig) -> Result<()> {
    if !cfg.is_active() && a.clean_rate.is_none() && a.max_dirty.is_none() && a.clean_pace.is_none() {
        return Ok(());
    }
    let Ok(dev) = FileDevice::open(&a.cache) else {
        return Ok(()); // opening the cache reports it
    };
    match Superblock::read_either(&dev).map(|r| r.sb) {
        Ok(sb) if sb.mode != CacheMode::WriteBack => bail!(
            "--max-dirty/--dirty-age/--clean-rate/--clean-pace: {} is a {} cache, which never holds dirty data (only write-back caches have a cleaner)",
            a.cache.display(),
            sb.mode.name()
        ),
        _ => Ok(()),
    }
}

/// `--metrics-max-clients` and `--metrics-timeout`, within their bounds.
fn metrics_limits(a: &ServeArgs) -> Result<EndpointLimits> {
    let mut l = EndpointLimits::default();
    if a.metrics.is_none() && (a.metrics_max_clients.is_some() || a.metrics_timeout.is_some()) {
        bail!("--metrics-max-clients and --metrics-timeout limit the metrics endpoint: add --metrics ADDR");
    }
    if let Some(n) = a.metrics_max_clients {
        let r = http::MAX_CLIENTS_RANGE;
        if !r.contains(&n) {
            bail!("--metrics-max-clients {n}: must be from {} to {}", r.start(), r.end());
        }
        l.max_clients = n;
    }
    if let Some(t) = &a.metrics_timeout {
        let d = Duration::from_nanos(parse_duration_ns(t).map_err(|e| anyhow::anyhow!("--metrics-timeout: {e}"))?);
        let r = http::TIMEOUT_RANGE;
        if !r.contains(&d) {
            bail!("--metrics-timeout {t}: must be from 100ms to 10min");
        }
        l.timeout = d;
    }
    Ok(l)
}

/// `--metrics HOST:PORT` (a name is resolved once, here).
fn metrics_addr(text: &str) -> Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    let bad = |why: String| anyhow::anyhow!("--metrics {text:?}: {why} (want HOST:PORT, e.g. 127.0.0.1:9100)");
    let mut addrs = text.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
    addrs.next().ok_or_else(|| bad("resolves to no address".into()))
}

pub fn serve(a: ServeArgs) -> Result<()> {
    let period = duration("--period", &a.period)?;
    let cleaner = cleaner_config(&a)?;
    check_cleaner_mode(&a, &cleaner)?;
    let idle = a.idle.as_deref().map(|t| duration("--idle", t)).transpose()?;
    if a.export.len() > MAX_STRING_LEN {
        bail!("--export: a name of {} bytes (the NBD limit is {MAX_STRING_LEN})", a.export.len());
    }
    let model_spec = a.backing_model.clone();
    if let Some(spec) = &model_spec {
        // Parsed once here so a bad spec fails before the cache is touched.
        let probe = ssdcache_engine::MemDevice::new(4096);
        ModelDevice::from_spec(spec, probe).map_err(|e| anyhow::anyhow!("--backing-model: {e}"))?;
    }
    let plan = |flag: &str, spec: &Option<String>| -> Result<Option<FaultPlan>> {
        spec.as_deref().map(|s| s.parse::<FaultPlan>().map_err(|e| anyhow::anyhow!("{flag}: {e}"))).transpose()
    };
    let (inject_cache, inject_backing) =
        (plan("--inject-cache", &a.inject_cache)?, plan("--inject-backing", &a.inject_backing)?);
    let mut server = a.limits.server_config()?;
    let (listen, tls) = a.net.resolve()?;
    server.tls = tls;
    let metrics = a.metrics.as_deref().map(metrics_addr).transpose()?;
    let metrics_limits = metrics_limits(&a)?;
    let seq_cutoff = a
        .seq_cutoff
        .as_deref()
        .map(|t| parse_bytes(t).map_err(|e| anyhow::anyhow!("--seq-cutoff: {e}")))
        .transpose()?;
    if a.promote_after == Some(0) {
        bail!("--promote-after must be at least 1");
    }
    let control = a.control.clone().unwrap_or_else(|| control::default_path(&a.cache));
    let flags = EngineConfig {
        policy: a.policy,
        error_limit: a.max_cache_errors,
        seq_cutoff,
        promote_after: a.promote_after,
        clean_pace: a
            .clean_pace
            .as_deref()
            .map(|p| Pace::parse(p).map_err(|e| anyhow::anyhow!("--clean-pace {p}: {e}")))
            .transpose()?,
        cleaner,
    };
    // The settings `ssdcache set` kept in the cache file, under the flags
    // given now; checked before the start procedure runs (a start that fails
    // after it leaves the cache marked unclean), and by the engine again.
    let sb = FileDevice::open(&a.cache).ok().and_then(|d| Superblock::read_either(&d).ok()).map(|r| r.sb);
    let engine = match sb {
        Some(sb) => {
            let engine = sb.settings.get().under(&flags);
            ssdcache_engine::engine::check_config_for(sb.mode, &engine, sb.geometry)
                .map_err(|e| anyhow::anyhow!("{}: {e}", a.cache.display()))?;
            engine
        }
        None => flags,
    };
    let whatif_memory = parse_bytes(&a.whatif_memory).map_err(|e| anyhow::anyhow!("--whatif-memory: {e}"))?;
    if !(1 << 20..=1 << 40).contains(&whatif_memory) {
        bail!("--whatif-memory {}: from 1MiB to 1TiB", a.whatif_memory);
    }
    let whatif = match a.whatif.as_deref().map(str::trim) {
        Some("off") => None,
        None => Some((None, whatif_memory)),
        Some(list) => {
            let p = ssdcache::spec::split_list(list);
            if p.is_empty() {
                bail!("--whatif {list:?}: policy specs, comma-separated, or off");
            }
            Some((Some(p), whatif_memory))
        }
    };
    let record = match &a.record {
        Some(p) => Some(a.record_bounds.config(p.clone())?),
        None if a.record_bounds.max_size.is_some() => bail!("--record-max-size bounds a recording: add --record PATH"),
        None => None,
    };
    // A what-if asked for by name is checked before the start procedure runs.
    if let (Some((Some(policies), memory)), Some(sb)) = (&whatif, &sb) {
        let w = ssdcache_engine::whatif::WhatIfConfig {
            policies: policies.clone(),
            memory: *memory,
            slots: sb.geometry.ssd_segments as u64,
            segment_bytes: sb.geometry.segment_size as u64,
            mode: sb.mode.sim_mode().unwrap_or(ssdcache::policy::Mode::WriteBack),
        };
        w.check().map_err(|e| anyhow::anyhow!("--whatif: {e}"))?;
    }
    let cfg = DaemonConfig {
        cache: a.cache,
        backing: a.backing,
        listen,
        export: a.export,
        period,
        idle,
        engine,
        start: StartOptions {
            force: a.force,
            discard_dirty: a.discard_dirty,
            clear_degraded: a.clear_degraded,
            backing_moved: a.backing_moved,
        },
        control,
        server,
        metrics,
        metrics_limits,
        backing_model: model_spec,
        inject_cache,
        inject_backing,
        read_only: a.read_only,
        record,
        whatif,
        trim: TrimMode::parse(&a.trim).map_err(|e| anyhow::anyhow!("--trim: {e}"))?,
    };
    ssdcache_server::stderr_log::init("ssdcache serve", a.verbose);
    for w in cfg.server.tls.iter().flat_map(|t| &t.warnings) {
        log::warn!("{w}");
    }
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let events = ssdcache_daemon::signal_events()?;
        ssdcache_daemon::run(cfg, events, |addr| {
            println!("listening on {addr}");
            let _ = std::io::stdout().flush();
        })
        .await
    })
}

/// `ssdcache check`: every superblock and metadata copy; exit 1 unless the
/// cache can start. Says "clean" only when a proven-current save says so.
pub fn check(a: CheckArgs) -> Result<()> {
    let dev = FileDevice::open(&a.cache).with_context(|| format!("opening {}", a.cache.display()))?;
    let report = check::check(&dev);
    if a.json {
        println!("{}", Value::Object(report.json));
    } else {
        for l in report.lines {
            println!("{l}");
        }
        println!("{}", if report.healthy { "healthy" } else { "unhealthy" });
    }
    if !report.healthy {
        std::process::exit(1);
    }
    Ok(())
}

/// `ssdcache drain`: write every possibly dirty segment back, offline.
pub fn drain(a: DrainArgs) -> Result<()> {
    let bar = indicatif::ProgressBar::new(0);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let r = ssdcache_engine::drain::drain(&a.cache, &a.backing, a.assume_torn, a.backing_moved, |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .with_context(|| format!("draining {} into {}", a.cache.display(), a.backing.display()))?;
    bar.finish_and_clear();
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!("drained metadata version {} ({})", r.version, r.state);
        if let Some(x) = &r.assumption {
            println!("warning: {x}");
        }
        println!("written back and verified: {} segment(s)", r.written_back);
        for x in &r.repaired {
            println!("rewritten: {x}");
        }
        for (off, len) in &r.unreadable {
            println!("UNREADABLE on the cache device: backing bytes {off}..{} hold older data", off + len);
        }
        println!("the cache is now clean (`ssdcache check` says so)");
    }
    if !r.unreadable.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

fn control_path(cache: &Path, given: &Option<PathBuf>) -> PathBuf {
    given.clone().unwrap_or_else(|| control::default_path(cache))
}

/// `ssdcache flush` / `ssdcache maintain`: a command the running server must execute.
fn server_command(a: &ControlArgs, cmd: &str) -> Result<Value> {
    let path = control_path(&a.cache, &a.control);
    let timeout = duration("--timeout", &a.timeout)?;
    match control::request(&path, cmd, timeout)? {
        Reply::Ok(v) => Ok(v),
        Reply::NotRunning(e) => bail!(
            "no server is running for {} (control socket {}: {e}); `{cmd}` needs one \
             (a stopped cache is already written back if `ssdcache check` says clean)",
            a.cache.display(),
            path.display()
        ),
    }
}

/// `ssdcache flush`: the server writes every dirty segment back while this
/// shows its progress (from `status`, on stderr when it is a terminal).
/// Ctrl-C (SIGINT) asks the server to stop at its next segment: what was
/// written back stays written back, and both devices are synced. Returns
/// whether every dirty segment was written back (an interrupted flush exits
/// non-zero, so `flush && backup` never backs up an unflushed disk).
pub fn flush(a: ControlArgs) -> Result<bool> {
    let path = control_path(&a.cache, &a.control);
    let v = with_write_back_progress(&path, "flush", || server_command(&a, "flush")).0?;
    if v["interrupted"] == true {
        println!(
            "interrupted: written back {} of {} segment(s) (synced; the rest stay dirty)",
            v["written_back"], v["total"]
        );
        return Ok(false);
    }
    println!("written back: {} segment(s); both devices synced", v["written_back"]);
    Ok(true)
}

/// Runs `job` (a control request that writes dirty segments back: `flush`,
/// or `set mode=…` leaving write-back) while drawing its progress from
/// `status` (on stderr, when it is a terminal). Ctrl-C (SIGINT) does not end
/// us: it asks the server to stop the write-back after its current segment
/// (`flush-stop`), and `job`'s answer then says what was done. Returns that
/// answer and whether a SIGINT came.
pub fn with_write_back_progress<T: Send>(
    path: &Path,
    what: &str,
    job: impl FnOnce() -> Result<T> + Send,
) -> (Result<T>, bool) {
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return (Err(e.into()), false),
    };
    {
        // tokio's SIGINT handler, on a thread of its own.
        let (path, what, interrupted) = (path.to_path_buf(), what.to_string(), interrupted.clone());
        std::thread::spawn(move || {
            rt.block_on(async {
                while tokio::signal::ctrl_c().await.is_ok() {
                    interrupted.store(true, std::sync::atomic::Ordering::Relaxed);
                    eprintln!("ssdcache {what}: interrupted, asking the server to stop after the current segment");
                    let _ = control::request(&path, "flush-stop", Duration::from_secs(5));
                }
            })
        });
    }
    let bar = indicatif::ProgressBar::new(0);
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        indicatif::ProgressStyle::with_template("writing back {pos}/{len} segment(s) {wide_bar} {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let v = std::thread::scope(|sc| {
        let job = sc.spawn(job);
        while !job.is_finished() {
            std::thread::sleep(Duration::from_millis(200));
            if let Ok(Reply::Ok(s)) = control::request(path, "status", Duration::from_secs(2)) {
                let f = &s["status"]["flush"];
                if let (Some(done), Some(total)) = (f["written_back"].as_u64(), f["total"].as_u64()) {
                    bar.set_length(total);
                    bar.set_position(done);
                }
            }
        }
        job.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the {what} client thread panicked")))
    });
    bar.finish_and_clear();
    (v, interrupted.load(std::sync::atomic::Ordering::Relaxed))
}

pub fn maintain(a: ControlArgs) -> Result<()> {
    let v = server_command(&a, "maintain")?;
    let r = &v["report"];
    let newly = r["plan"].as_array().map_or(0, |p| p.len());
    println!(
        "caching and eviction: {newly} segment(s) newly cached, {} cached, {:.3} s",
        r["cached"],
        r["seconds"].as_f64().unwrap_or(0.0)
    );
    Ok(())
}

/// `ssdcache status`: from the running server, else from the files.
pub fn status(a: StatusArgs) -> Result<()> {
    let path = control_path(&a.cache, &a.control);
    let timeout = duration("--timeout", &a.timeout)?;
    match control::request(&path, "status", timeout)? {
        Reply::Ok(v) => {
            if a.json {
                println!("{}", serde_json::json!({"running": true, "pid": v["pid"], "status": v["status"]}));
            } else {
                print_live_status(&a.cache, &v);
            }
            if v["status"]["degraded"] == true {
                // Monitoring reads the exit status: degraded is not healthy.
                std::process::exit(1);
            }
            Ok(())
        }
        Reply::NotRunning(_) => offline_status(&a.cache, a.json),
    }
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * part as f64 / whole as f64)
    }
}

fn when(unix: Option<f64>) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    match unix {
        None => "never".into(),
        Some(t) if t <= now => format!("{:.0} s ago", now - t),
        Some(t) => format!("in {:.0} s", t - now),
    }
}

fn print_live_status(cache: &Path, v: &Value) {
    let s = &v["status"];
    let u = |k: &str| s[k].as_u64().unwrap_or(0);
    let seg = u("segment_size");
    println!("cache        {} — served by pid {}", cache.display(), v["pid"]);
    println!("mode         {} (policy {})", s["mode"].as_str().unwrap_or("?"), s["policy"].as_str().unwrap_or("?"));
    println!(
        "geometry     {} SSD slots of {} ({}) for {} HDD segments ({})",
        u("ssd_segments"),
        format_bytes(seg),
        format_bytes(u("ssd_segments") * seg),
        u("hdd_segments"),
        format_bytes(u("hdd_segments") * seg)
    );
    println!(
        "cached       {} segment(s) ({}), {} dirty ({})",
        u("cached"),
        format_bytes(u("cached") * seg),
        u("dirty"),
        format_bytes(u("dirty") * seg)
    );
    let (rh, rm, wh, wm) = (u("read_hits"), u("read_misses"), u("write_hits"), u("write_misses"));
    println!("reads        {} piece(s), hit ratio {}", rh + rm, pct(rh, rh + rm));
    println!(
        "writes       {} piece(s), to cached segments {} ({} of them written to the backing too)",
        wh + wm,
        pct(wh, wh + wm),
        u("write_hits_to_backing")
    );
    // The share the backing device never saw: the point of a cache (paper 000
    // counts write hits only where they stay on the SSD).
    println!(
        "served       without the backing device: {} of {} ({}), {} of {} piece(s) ({})",
        format_bytes(u("served_bytes")),
        format_bytes(u("request_bytes")),
        pct(u("served_bytes"), u("request_bytes")),
        u("served_pieces"),
        rh + rm + wh + wm,
        pct(u("served_pieces"), rh + rm + wh + wm)
    );
    println!(
        "bytes        SSD read {} written {}; backing read {} written {}",
        format_bytes(u("ssd_read")),
        format_bytes(u("ssd_written")),
        format_bytes(u("hdd_read")),
        format_bytes(u("hdd_written"))
    );
    println!(
        "copies       {} segment(s) filled, {} written back ({} by misses waiting for a dirty victim)",
        u("filled"),
        u("written_back"),
        u("dirty_evictions")
    );
    println!(
        "trims        {} discarded on the backing store, {} zeroed there in place; {} cached segment(s) dropped",
        format_bytes(u("trimmed_bytes")),
        format_bytes(u("zeroed_bytes")),
        u("trim_dropped_segments")
    );
    println!(
        "cache hints  {} NBD_CMD_CACHE request(s), {} segment(s) filled by them",
        u("cache_hints"),
        u("cache_hint_fills")
    );
    print_requests(s);
    println!("metadata     version {}, {} procedure(s) completed", u("version"), u("procedures"));
    print_cleaner(s, seg);
    print_recording(s);
    if s["mode"] == "write-back" {
        let last = &s["last_report"];
        let what = if last.is_null() {
            String::new()
        } else {
            format!(
                " ({} newly cached, {:.3} s)",
                last["plan"].as_array().map_or(0, |p| p.len()),
                last["seconds"].as_f64().unwrap_or(0.0)
            )
        };
        let idle = s["idle"].as_f64().map(|i| format!(", after {i:.0} s idle")).unwrap_or_default();
        println!(
            "maintenance  last {}{what}; next due {}{idle}{}",
            when(s["last_maintenance"].as_f64()),
            when(s["next_maintenance"].as_f64()),
            if s["in_procedure"] == true { "; RUNNING NOW" } else { "" }
        );
    }
    println!("errors       cache device {}, backing device {}", u("ssd_errors"), u("hdd_errors"));
    if s["degraded"] == true {
        println!(
            "DEGRADED     the cache device failed: writes go to the backing store, nothing new is cached, \
             dirty segments are written back (restart with --clear-degraded once the device is fixed)"
        );
    }
    println!("uptime       {:.0} s", s["uptime"].as_f64().unwrap_or(0.0));
}

/// The `requests` line: per operation, its outcomes and mean latency (the
/// full histograms are in `--json` and the metrics).
fn print_requests(s: &Value) {
    let Some(reqs) = s["requests"].as_array() else { return };
    let mut parts = Vec::new();
    for op in ["read", "write", "write_zeroes", "trim", "flush"] {
        let of_op: Vec<&Value> = reqs.iter().filter(|r| r["op"] == op).collect();
        let n: u64 = of_op.iter().filter_map(|r| r["count"].as_u64()).sum();
        if n == 0 {
            continue;
        }
        let secs: f64 = of_op.iter().filter_map(|r| r["latency"]["sum_seconds"].as_f64()).sum();
        let outcomes: Vec<String> = of_op
            .iter()
            .filter(|r| r["count"].as_u64().unwrap_or(0) > 0)
            .map(|r| format!("{} {}", r["count"], r["outcome"].as_str().unwrap_or("?")))
            .collect();
        parts.push(format!("{op} {n} ({}, mean {:.0} µs)", outcomes.join(", "), secs / n as f64 * 1e6));
    }
    let conns = &s["connections"];
    println!("requests     {}", if parts.is_empty() { "none yet".to_string() } else { parts.join("; ") });
    println!(
        "connections  {} open, {} accepted, {} refused",
        conns["open"].as_u64().unwrap_or(0),
        conns["accepted"].as_u64().unwrap_or(0),
        conns["refused"].as_u64().unwrap_or(0)
    );
}

/// The background cleaner's and a running flush's lines of `status`.
fn print_cleaner(s: &Value, seg: u64) {
    let f = &s["flush"];
    if let (Some(done), Some(total)) = (f["written_back"].as_u64(), f["total"].as_u64()) {
        println!("flush        RUNNING: {done} of {total} segment(s) written back");
    }
    let c = &s["cleaner"];
    if c.is_null() {
        return;
    }
    let mut bounds = Vec::new();
    if let Some(m) = c["max_dirty"].as_f64() {
        bounds.push(format!("max dirty {:.1} %", 100.0 * m));
    }
    if let Some(a) = c["dirty_age"].as_f64() {
        bounds.push(format!("dirty age {a} s"));
    }
    bounds.push(match c["clean_rate"].as_u64() {
        Some(r) => format!("at most {}/s", format_bytes(r)),
        None => "unlimited rate".into(),
    });
    if let Some(p) = c["pace"].as_str() {
        bounds.push(format!("{p} pace"));
    }
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    let oldest = c["oldest_dirty_age"].as_f64().map_or("nothing dirty".into(), |a| format!("oldest dirty {a:.1} s"));
    println!(
        "cleaner      {} ({}); cleaned {} segment(s) ({}): {} above max dirty, {} too old; {oldest}",
        c["activity"].as_str().unwrap_or("?"),
        bounds.join(", "),
        n("cleaned_too_many") + n("cleaned_too_old"),
        format_bytes((n("cleaned_too_many") + n("cleaned_too_old")) * seg),
        n("cleaned_too_many"),
        n("cleaned_too_old"),
    );
}

/// The recording's line of `status`.
fn print_recording(s: &Value) {
    let r = &s["recording"];
    if r.is_null() {
        return;
    }
    let n = |k: &str| r[k].as_u64().unwrap_or(0);
    let state = match (r["running"].as_bool(), r["failed"].as_str()) {
        (_, Some(e)) => format!("STOPPED by an error ({e})"),
        (Some(true), _) => "recording".into(),
        _ => "stopped".into(),
    };
    println!(
        "recording    {state} to {}: {} record(s), {} dropped, {} written, {} rotation(s)",
        r["path"].as_str().unwrap_or("?"),
        n("records"),
        n("dropped"),
        format_bytes(n("bytes")),
        n("rotations")
    );
}

/// Status read from the cache file when no server runs.
fn offline_status(cache: &Path, json: bool) -> Result<()> {
    let dev = FileDevice::open(cache).with_context(|| format!("opening {}", cache.display()))?;
    let sb = Superblock::read(&dev).with_context(|| format!("reading {}", cache.display()))?;
    let g = sb.geometry;
    let loaded = recover::load(&sb.store(&dev)?);
    let seg = g.segment_size as u64;
    if json {
        let meta = match &loaded {
            Ok(l) => serde_json::json!({
                "slot": l.slot, "version": l.meta.version, "clean": l.meta.clean, "update": l.meta.update,
                "procedures": l.meta.procedures, "cached": l.meta.map.iter().flatten().count(),
                "last_maintenance": (l.meta.last_procedure > 0).then_some(l.meta.last_procedure),
            }),
            Err(e) => serde_json::json!({"error": e.to_string()}),
        };
        let out = serde_json::json!({
            "running": false, "mode": sb.mode, "segment_size": seg, "ssd_segments": g.ssd_segments,
            "hdd_segments": g.hdd_segments, "metadata": meta,
        });
        println!("{out}");
        return Ok(());
    }
    println!("cache        {} — no server running", cache.display());
    println!("mode         {}", sb.mode.name());
    println!(
        "geometry     {} SSD slots of {} for {} HDD segments ({})",
        g.ssd_segments,
        format_bytes(seg),
        g.hdd_segments,
        format_bytes(g.hdd_segments * seg)
    );
    match loaded {
        Ok(l) => {
            let m = &l.meta;
            let cached = m.map.iter().flatten().count() as u64;
            println!("cached       {cached} segment(s) ({})", format_bytes(cached * seg));
            let state = if m.update {
                "interrupted during caching and eviction (the next start refills the SSD)"
            } else if m.clean {
                "clean (the backing store holds every write)"
            } else {
                "not clean (the next start writes every cached segment back)"
            };
            println!("metadata     version {} in slot {}, {} procedure(s); {state}", m.version, l.slot, m.procedures);
            let last = (m.last_procedure > 0).then_some(m.last_procedure as f64);
            println!("maintenance  last {}", when(last));
        }
        Err(e) => println!("metadata     unusable: {e}"),
    }
    Ok(())
}
