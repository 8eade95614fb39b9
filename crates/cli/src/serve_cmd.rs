//! `ssdcache create | serve | check`: the persistent write-back SSD cache of
//! paper 000 (PWC) served over NBD (`ssdcache_serve::cache::engine`).
//!
//! A cache is a file (or device) CACHE in front of a backing file BACKING.
//! CACHE holds a 4 KiB superblock, the two metadata slots, then the SSD
//! segment slots; BACKING stays a plain image (see the engine's module doc).

use anyhow::{bail, Context, Result};
use clap::Args;
use ssdcache::units::{format_bytes, parse_bytes, parse_duration_ns};
use ssdcache_serve::cache::engine::{self, Superblock};
use ssdcache_serve::cache::{recover, FileDevice};
use ssdcache_serve::{Backend, Export, Server, ServerConfig};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct CreateArgs {
    /// Cache file or device (must exist; its size is the cache size, e.g. `truncate -s 64M`).
    cache: PathBuf,
    /// Backing file or device (its size must be a multiple of the segment size).
    backing: PathBuf,
    /// Segment size (paper 000 §3.1: 128 KiB to 1 MiB; a multiple of 4 KiB).
    #[arg(long, default_value = "1MiB")]
    segment: String,
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
    /// Run the caching-and-eviction procedure this often (paper 000 §4.1: daily). SIGUSR1 runs it now.
    #[arg(long, default_value = "24h")]
    period: String,
    /// Cache mode. Only write-back (PWC) is implemented.
    #[arg(long, default_value = "write-back")]
    mode: String,
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

pub fn create(a: CreateArgs) -> Result<()> {
    let seg = parse_bytes(&a.segment).map_err(|e| anyhow::anyhow!("--segment: {e}"))?;
    let seg = u32::try_from(seg).context("--segment is too large")?;
    if !a.cache.exists() {
        bail!(
            "{} does not exist: create it with its size first (e.g. `truncate -s 64M {}`)",
            a.cache.display(),
            a.cache.display()
        );
    }
    let sb = engine::create(&a.cache, &a.backing, seg, a.force)
        .with_context(|| format!("creating a cache in {}", a.cache.display()))?;
    let g = sb.geometry;
    println!(
        "created: {} SSD segments of {} ({}) for {} HDD segments ({}); metadata {} bytes at {}, data at {}",
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

/// Minimal stderr logger for `serve`.
struct Stderr(log::LevelFilter);

impl log::Log for Stderr {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= self.0
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            eprintln!("ssdcache serve: {}: {}", r.level(), r.args());
        }
    }
    fn flush(&self) {}
}

pub fn serve(a: ServeArgs) -> Result<()> {
    match a.mode.as_str() {
        "write-back" | "wb" | "pwc" => {}
        "write-through" | "write-around" | "read-only" | "write-only" => {
            bail!("--mode {}: not implemented yet (only write-back, paper 000's PWC, is)", a.mode)
        }
        m => bail!("--mode {m}: unknown mode (write-back is the only one implemented)"),
    }
    let period = parse_duration_ns(&a.period).map_err(|e| anyhow::anyhow!("--period: {e}"))?;
    if period == 0 {
        bail!("--period must be positive");
    }
    let level = match a.verbose {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        _ => log::LevelFilter::Debug,
    };
    log::set_logger(Box::leak(Box::new(Stderr(level)))).expect("logger set once");
    log::set_max_level(level);

    let (backend, started) = engine::open_files(&a.cache, &a.backing, a.force)
        .with_context(|| format!("opening cache {} over {}", a.cache.display(), a.backing.display()))?;
    eprintln!(
        "ssdcache serve: started ({:?}; loaded metadata version {:?}, {} segment(s) copied)",
        started.kind, started.loaded_version, started.copied
    );
    if let Some(e) = &started.fallback {
        eprintln!("ssdcache serve: warning: the newer metadata slot was unusable ({e}); the older one was used");
    }
    let backend = Arc::new(backend);
    backend.start_period(Duration::from_nanos(period));
    let export = Export::new(a.export.clone(), backend.clone() as Arc<dyn Backend>)
        .with_description("ssdcache PWC write-back cache".to_string());
    let server = Server::new(vec![export], ServerConfig::default())?;

    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.listen).await?;
        let handle = server.start(listener)?;
        println!("listening on {}", handle.local_addr());
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
        "superblock: segment {} bytes, {} SSD segments, {} HDD segments, metadata at {}, data at {}",
        g.segment_size, g.ssd_segments, g.hdd_segments, sb.meta_offset, sb.data_offset
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
