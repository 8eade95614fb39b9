//! `ssdcache create | serve | check | status | flush | maintain`: the
//! persistent SSD cache of paper 000 (PWC write-back, or a write-through /
//! write-around / passthrough baseline) served over NBD
//! (`ssdcache_serve::cache`).
//!
//! A cache is a file (or device) CACHE in front of a backing file BACKING.
//! CACHE holds a 4 KiB superblock, the two metadata slots, then the SSD
//! segment slots; BACKING stays a plain image (see `cache::layout`).

use crate::control::{self, Reply};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::Value;
use ssdcache::units::{format_bytes, parse_bytes, parse_duration_ns};
use ssdcache_serve::cache::layout::{self, CacheMode, Superblock};
use ssdcache_serve::cache::slow::ModelDevice;
use ssdcache_serve::cache::{recover, BlockDevice, EngineConfig, FileDevice};
use ssdcache_serve::{Backend, Export, Server};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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
    /// cached; passthrough: no caching. Fixed for the cache's life (recovery depends on it).
    #[arg(long, default_value = "write-back")]
    mode: String,
    /// Create CACHE as a file of this size first (e.g. 32GiB) if it does not exist.
    #[arg(long)]
    size: Option<String>,
    /// Overwrite a cache CACHE already holds (discarding what it caches).
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Cache file made by `ssdcache create`.
    cache: PathBuf,
    /// The backing file it was created for.
    backing: PathBuf,
    /// Address to listen on (port 0 picks a free one; `listening on ADDR` tells which).
    #[arg(long, default_value = "127.0.0.1:10809")]
    listen: SocketAddr,
    /// Export name (the empty default name also selects it).
    #[arg(long, default_value = "")]
    export: String,
    /// Run the caching-and-eviction procedure this often (paper 000 §4.1: daily).
    /// `ssdcache maintain` or SIGUSR1 runs it now.
    #[arg(long, default_value = "24h")]
    period: String,
    /// Let a due procedure wait until no request has arrived for this long (paper 000: "in idle time").
    #[arg(long)]
    idle: Option<String>,
    /// Replacement policy of a write-through or write-around cache (any of `ssdcache policies`
    /// that decides on access: lru, fifo, clock, lfu, 2q, arc, lirs, s3fifo).
    #[arg(long, default_value = "lru")]
    policy: String,
    /// Control socket for `ssdcache status | flush | maintain` (default: CACHE.ctl). Only a
    /// stale socket there is replaced; anything else is refused.
    #[arg(long)]
    control: Option<PathBuf>,
    #[command(flatten)]
    limits: crate::serve_limits::LimitArgs,
    /// Benchmarks only: make BACKING as slow as the simulator's HDD model says
    /// (`hdd(model=rpm7200,scale=0.2)`; see `cache::slow`).
    #[arg(long, hide = true)]
    backing_model: Option<String>,
    /// Start even if both metadata slots are unusable, formatting them afresh
    /// (discards the SSD cache, including writes not yet written back).
    #[arg(long)]
    force: bool,
    /// Log more (-v: info, -vv: debug) to stderr.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Args)]
pub struct CheckArgs {
    /// Cache file made by `ssdcache create`.
    cache: PathBuf,
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
    if !a.cache.exists() {
        let Some(size) = &a.size else {
            bail!("{} does not exist: give its size with --size (e.g. --size 32GiB)", a.cache.display());
        };
        let size = parse_bytes(size).map_err(|e| anyhow::anyhow!("--size: {e}"))?;
        let f = std::fs::File::options()
            .write(true)
            .create_new(true)
            .open(&a.cache)
            .with_context(|| format!("creating {}", a.cache.display()))?;
        f.set_len(size).with_context(|| format!("sizing {}", a.cache.display()))?;
    }
    let sb = layout::create(&a.cache, &a.backing, seg, mode, a.force)
        .with_context(|| format!("creating a cache in {}", a.cache.display()))?;
    let g = sb.geometry;
    println!(
        "created a {} cache: {} SSD segments of {} ({}) for {} HDD segments ({}); metadata {} bytes at {}, data at {}",
        sb.mode.name(),
        g.ssd_segments,
        format_bytes(g.segment_size as u64),
        format_bytes(g.ssd_segments as u64 * g.segment_size as u64),
        g.hdd_segments,
        format_bytes(g.hdd_segments * g.segment_size as u64),
        sb.data_offset - sb.meta_offset,
        sb.meta_offset,
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

pub fn serve(a: ServeArgs) -> Result<()> {
    let period = duration("--period", &a.period)?;
    let idle = a.idle.as_deref().map(|t| duration("--idle", t)).transpose()?;
    let server_config = a.limits.server_config()?;
    let control_path = a.control.clone().unwrap_or_else(|| control::default_path(&a.cache));
    control::check_path(&control_path)?;
    ssdcache_serve::stderr_log::init("ssdcache serve", a.verbose);

    let backing_file =
        FileDevice::open(&a.backing).with_context(|| format!("opening the backing store {}", a.backing.display()))?;
    let (backing, model): (Arc<dyn BlockDevice>, _) = match &a.backing_model {
        None => (Arc::new(backing_file), None),
        Some(spec) => {
            let slow = ModelDevice::from_spec(spec, backing_file).map_err(|e| anyhow::anyhow!("--backing-model: {e}"))?;
            eprintln!("ssdcache serve: BENCHMARK backing model {}", slow.describe());
            let slow = Arc::new(slow);
            (slow.clone(), Some(slow))
        }
    };
    let config = EngineConfig { policy: a.policy.clone() };
    let (backend, started, sb) = layout::open_files(&a.cache, backing, &config, a.force)
        .with_context(|| format!("opening cache {} over {}", a.cache.display(), a.backing.display()))?;
    eprintln!(
        "ssdcache serve: started a {} cache ({:?}; loaded metadata version {:?}, {} segment(s) copied)",
        sb.mode.name(),
        started.kind,
        started.loaded_version,
        started.copied
    );
    if let Some(e) = &started.fallback {
        eprintln!("ssdcache serve: warning: the newer metadata slot was unusable ({e}); the older one was used");
    }
    let backend = Arc::new(backend);
    if sb.mode == CacheMode::WriteBack {
        backend.start_period(period, idle);
    }
    let export = Export::new(a.export.clone(), backend.clone() as Arc<dyn Backend>)
        .with_description(format!("ssdcache {} cache", sb.mode.name()));
    let server = Server::new(vec![export], server_config)?;

    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let (control_listener, control_file) = control::bind(&control_path).await?;
        let control_task = tokio::spawn(control::accept_loop(control_listener, backend.clone(), model));
        let listener = tokio::net::TcpListener::bind(a.listen).await?;
        let handle = server.start(listener)?;
        println!("listening on {}", handle.local_addr());
        eprintln!("ssdcache serve: control socket {}", control_path.display());
        std::io::stdout().flush()?;
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut usr1 = signal(SignalKind::user_defined1())?;
        loop {
            tokio::select! {
                _ = int.recv() => break,
                _ = term.recv() => break,
                _ = usr1.recv() => {
                    let b = backend.clone();
                    match tokio::task::spawn_blocking(move || b.maintain()).await? {
                        Ok(r) => eprintln!("ssdcache serve: maintenance: {} segment(s) newly cached, {} cached", r.plan.len(), r.cached),
                        Err(e) => eprintln!("ssdcache serve: maintenance failed: {e}"),
                    }
                }
            }
        }
        eprintln!("ssdcache serve: stopping");
        control_task.abort();
        control_file.remove();
        // Drains the connections, then Backend::shutdown: write back, clean bit.
        let report = handle.shutdown().await?;
        eprintln!("ssdcache serve: stopped cleanly after {} connection(s), {} aborted", report.connections, report.aborted);
        anyhow::Ok(())
    })
}

/// Prints both metadata slots; exits 1 unless the cache can start.
pub fn check(a: CheckArgs) -> Result<()> {
    let dev = FileDevice::open(&a.cache).with_context(|| format!("opening {}", a.cache.display()))?;
    let sb = match Superblock::read(&dev) {
        Ok(sb) => sb,
        Err(e) => {
            println!("superblock: {e}");
            println!("unhealthy");
            std::process::exit(1);
        }
    };
    let g = sb.geometry;
    println!(
        "superblock: {} cache, segment {} bytes, {} SSD segments, {} HDD segments, metadata at {}, data at {}",
        sb.mode.name(),
        g.segment_size,
        g.ssd_segments,
        g.hdd_segments,
        sb.meta_offset,
        sb.data_offset
    );
    let store = sb.store(&dev)?;
    for (i, slot) in store.read_both().into_iter().enumerate() {
        match slot {
            Ok(m) => println!(
                "slot {i}: version {} checksum ok, clean {}, update {}, procedures {}, evict clock {}, {} of {} slots mapped (map consistent)",
                m.version,
                m.clean as u8,
                m.update as u8,
                m.procedures,
                m.evict_hand,
                m.map.iter().flatten().count(),
                m.map.len()
            ),
            Err(e) => println!("slot {i}: {e}"),
        }
    }
    match recover::load(&store) {
        Ok(l) => {
            let m = &l.meta;
            let state = if m.update {
                "interrupted during caching and eviction: the next start refills the SSD from the backing store"
            } else if m.clean {
                "clean: shut down cleanly, the backing store holds every write"
            } else {
                "not clean: the next start writes every cached segment back"
            };
            println!("in use: slot {} version {}; {state}", l.slot, m.version);
            println!("healthy");
            Ok(())
        }
        Err(e) => {
            println!("{e}");
            println!("unhealthy");
            std::process::exit(1);
        }
    }
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

pub fn flush(a: ControlArgs) -> Result<()> {
    let v = server_command(&a, "flush")?;
    println!("written back: {} segment(s); both devices synced", v["written_back"]);
    Ok(())
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
    println!("writes       {} piece(s), to cached segments {}", wh + wm, pct(wh, wh + wm));
    println!(
        "bytes        SSD read {} written {}; backing read {} written {}",
        format_bytes(u("ssd_read")),
        format_bytes(u("ssd_written")),
        format_bytes(u("hdd_read")),
        format_bytes(u("hdd_written"))
    );
    println!("copies       {} segment(s) filled, {} written back", u("filled"), u("written_back"));
    println!("metadata     version {}, {} procedure(s) completed", u("version"), u("procedures"));
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
    println!("uptime       {:.0} s", s["uptime"].as_f64().unwrap_or(0.0));
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
