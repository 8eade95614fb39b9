//! ssdcache-daemon: the `ssdcache serve` daemon: its whole life, from validation to a clean
//! stop, in the library so that tests can run it in-process. The CLI parses
//! arguments into a [`DaemonConfig`] and maps signals to [`Event`]s
//! ([`signal_events`]); everything else is here.
//!
//! Order of a start: everything that can fail without touching the cache
//! (the listening port, the control socket) first, because a start that fails
//! after the recovery procedure would leave the cache marked unclean; then
//! the cache is opened (recovery); a failure after that shuts the cache down
//! cleanly. A stop interrupts a running procedure at its next slot boundary,
//! drains the connections, writes every dirty segment back and saves the
//! clean bit.
//!
//! - [`control`]: the control channel (`ssdcache status | flush | maintain`);
//! - [`metrics`]: what `status --json` and the Prometheus endpoint show.

pub mod control;
pub mod metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

use crate::control::protocol::Served;
use crate::control::socket as control_socket;
use crate::metrics::{http, snapshot::Source};
use ssdcache_block::Backend;
use ssdcache_engine::engine::TrimMode;
use ssdcache_engine::inject::{FaultPlan, InjectDevice};
use ssdcache_engine::model_device::ModelDevice;
use ssdcache_engine::record::RecordConfig;
use ssdcache_engine::{files, BlockDevice, EngineConfig, FileDevice, StartOptions};
use ssdcache_server::{Export, Server, ServerConfig};
use ssdcache_server::{ListenAddr, Listener};

/// Everything a daemon runs with.
#[derive(Clone, Debug)]
pub struct DaemonConfig {
    /// The cache file and its backing store.
    pub cache: PathBuf,
    pub backing: PathBuf,
    /// Where NBD clients connect (TCP or a Unix socket), and the export's name.
    pub listen: ListenAddr,
    pub export: String,
    /// The caching-and-eviction procedure's period, and the idle time it waits for.
    pub period: Duration,
    pub idle: Option<Duration>,
    /// The engine's policy and error limit; what the start procedure may do.
    pub engine: EngineConfig,
    pub start: StartOptions,
    /// The control socket's path.
    pub control: PathBuf,
    /// The NBD server's limits and TLS.
    pub server: ServerConfig,
    /// Where to serve Prometheus metrics (`/metrics`), if anywhere.
    pub metrics: Option<SocketAddr>,
    /// How many metrics clients are served at once, and for how long.
    pub metrics_limits: http::EndpointLimits,
    /// Benchmarks: BACKING made as slow as this HDD model spec.
    pub backing_model: Option<String>,
    /// Tests: faults injected into the cache device and BACKING.
    pub inject_cache: Option<FaultPlan>,
    pub inject_backing: Option<FaultPlan>,
    /// Serve the export read-only (`NBD_FLAG_READ_ONLY`; writes, trims and
    /// write-zeroes get EPERM). The cache still fills on reads as its mode does.
    pub read_only: bool,
    /// Record every request from the start (`--record`).
    pub record: Option<RecordConfig>,
    /// The live what-if (`--whatif`): `None` off; else the policies (`None`:
    /// the default list) and the memory it may use.
    pub whatif: Option<(Option<Vec<String>>, u64)>,
    /// What clients' trims do: passed to the backing store (default), or ignored.
    pub trim: TrimMode,
}

/// What the daemon is asked to do while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Stop cleanly (SIGTERM, SIGINT).
    Stop,
    /// Run the caching-and-eviction procedure now (SIGUSR1).
    Maintain,
}

/// SIGTERM and SIGINT as [`Event::Stop`], SIGUSR1 as [`Event::Maintain`]
/// (call inside a tokio runtime).
pub fn signal_events() -> std::io::Result<mpsc::UnboundedReceiver<Event>> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = mpsc::unbounded_channel();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut usr1 = signal(SignalKind::user_defined1())?;
    tokio::spawn(async move {
        loop {
            let e = tokio::select! {
                _ = term.recv() => Event::Stop,
                _ = int.recv() => Event::Stop,
                _ = usr1.recv() => Event::Maintain,
            };
            if tx.send(e).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

/// Runs the daemon until an [`Event::Stop`] (or the sender's end); `ready`
/// is told the listening address once clients can connect.
pub async fn run(
    cfg: DaemonConfig,
    mut events: mpsc::UnboundedReceiver<Event>,
    ready: impl FnOnce(ListenAddr),
) -> Result<()> {
    if let ListenAddr::Unix(nbd) = &cfg.listen {
        // Else the control socket would find the NBD listener bound there a
        // moment before, and blame "a running server".
        if same_path(nbd, &cfg.control) {
            anyhow::bail!(
                "--listen unix:{} is also the control socket's path (--control, by default CACHE.ctl): each needs its own",
                nbd.display()
            );
        }
    }
    control_socket::check_path(&cfg.control)?;
    // A Unix socket is removed with the listener, on every exit path.
    let listener = Listener::bind(&cfg.listen).await?;
    let metrics_listener = match cfg.metrics {
        None => None,
        Some(addr) => {
            Some(tokio::net::TcpListener::bind(addr).await.with_context(|| format!("--metrics: listening on {addr}"))?)
        }
    };
    let (control_listener, control_file) = control_socket::bind(&cfg.control).await?;
    // Removed on every exit path (if still ours).
    let _socket = RemoveOnDrop(control_file);

    let model = Mutex::new(None);
    let wrap = |ssd: Arc<dyn BlockDevice>, backing: FileDevice| {
        let backing: Arc<dyn BlockDevice> = match &cfg.backing_model {
            None => Arc::new(backing),
            Some(spec) => {
                let slow = Arc::new(ModelDevice::from_spec(spec, backing).map_err(std::io::Error::other)?);
                eprintln!("ssdcache serve: BENCHMARK backing model {}", slow.describe());
                *ssdcache_block::sync::lock(&model) = Some(slow.clone());
                slow
            }
        };
        let inject = |d: Arc<dyn BlockDevice>, p: &Option<FaultPlan>, what: &str| -> Arc<dyn BlockDevice> {
            match p {
                None => d,
                Some(p) => {
                    eprintln!("ssdcache serve: TEST fault injection on the {what}: {p}");
                    Arc::new(InjectDevice::new(d, p.clone()))
                }
            }
        };
        Ok((inject(ssd, &cfg.inject_cache, "cache device"), inject(backing, &cfg.inject_backing, "backing device")))
    };
    // The files a recording must not overwrite; the recording's path is
    // checked before the start procedure runs.
    let protected: Vec<(u64, u64)> = [&cfg.cache, &cfg.backing]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m)))
        .collect();
    if let Some(r) = &cfg.record {
        r.check(&protected).map_err(|e| anyhow::anyhow!("--record: {e}"))?;
    }
    let (backend, started, sb) = files::open_files(&cfg.cache, &cfg.backing, &wrap, &cfg.engine, cfg.start)
        .with_context(|| format!("opening cache {} over {}", cfg.cache.display(), cfg.backing.display()))?;
    let model = model.into_inner().unwrap_or_else(|e| e.into_inner());
    eprintln!(
        "ssdcache serve: started a {} cache ({:?}; loaded metadata version {:?}, {} segment(s) copied)",
        sb.mode.name(),
        started.kind,
        started.loaded_version,
        started.copied
    );
    for r in &started.repaired {
        eprintln!("ssdcache serve: warning: metadata copy repaired: {r}");
    }
    backend.set_protected_files(protected);
    backend.set_trim_mode(cfg.trim);
    let backend = Arc::new(backend);
    let serving = async {
        if let Some(r) = &cfg.record {
            backend.start_recording(r.clone()).map_err(|e| anyhow::anyhow!("--record: {e}"))?;
        }
        match &cfg.whatif {
            None => {}
            // Asked for by name: it must run.
            Some((Some(p), memory)) => {
                backend.start_whatif(Some(p.clone()), *memory).map_err(|e| anyhow::anyhow!("--whatif: {e}"))?;
            }
            // On by default: said, not fatal, where it cannot run.
            Some((None, memory)) => match backend.start_whatif(None, *memory) {
                Ok(p) => log::info!("what-if: shadowing {}", p.join(", ")),
                Err(e) => log::warn!("what-if off: {e}"),
            },
        }
        // Every mode: the thread also settles a cache gone degraded.
        backend.start_period(cfg.period, cfg.idle);
        if started.meta.degraded {
            eprintln!(
                "ssdcache serve: warning: the cache is DEGRADED (a cache-device failure): nothing is cached; \
                 `--clear-degraded` resumes caching"
            );
        }
        let mut export = Export::new(cfg.export.clone(), backend.clone() as Arc<dyn Backend>)
            .with_description(format!("ssdcache {} cache", sb.mode.name()));
        if cfg.read_only {
            export = export.into_read_only();
        }
        let server = Server::new(vec![export], cfg.server.clone())?;
        // status and /metrics: one source.
        let b = backend.clone();
        let source = Source::new(move || b.status(), Some(server.stats_handle()));
        let served = Arc::new(Served {
            cache: backend.clone(),
            path: cfg.cache.clone(),
            source: source.clone(),
            setting: Default::default(),
        });
        let control_task = tokio::spawn(control_socket::accept_loop(control_listener, served, model));
        let metrics_task = match metrics_listener {
            None => None,
            Some(l) => {
                let addr = l.local_addr()?;
                let task = tokio::spawn(http::serve(l, source, Default::default(), cfg.metrics_limits));
                eprintln!(
                    "ssdcache serve: metrics on http://{addr}/metrics, a live page at http://{addr}/{}",
                    if addr.ip().is_loopback() { "" } else { " (unauthenticated: anyone who can reach it reads them)" }
                );
                println!("metrics on {addr}");
                Some(task)
            }
        };
        let handle = server.start(listener)?;
        ready(handle.listen_addr().clone());
        eprintln!("ssdcache serve: control socket {}", cfg.control.display());
        while let Some(Event::Maintain) = events.recv().await {
            // Not awaited here: a stop must be heard while it runs.
            let b = backend.clone();
            tokio::task::spawn_blocking(move || match b.maintain() {
                Ok(r) => {
                    eprintln!(
                        "ssdcache serve: maintenance: {} segment(s) newly cached, {} cached",
                        r.plan.len(),
                        r.cached
                    )
                }
                Err(e) => eprintln!("ssdcache serve: maintenance failed: {e}"),
            });
        }
        eprintln!("ssdcache serve: stopping");
        // A running procedure stops at its next safe point.
        backend.interrupt_maintenance();
        control_task.abort();
        if let Some(t) = metrics_task {
            t.abort();
        }
        // Drains the connections, then Backend::shutdown: write back, clean bit.
        let report = handle.shutdown().await?;
        eprintln!(
            "ssdcache serve: stopped cleanly after {} connection(s), {} aborted",
            report.connections, report.aborted
        );
        anyhow::Ok(())
    };
    let result = serving.await;
    if result.is_err() {
        // Failed after recovery: still leave the cache clean if possible.
        backend.interrupt_maintenance();
        if let Err(e) = backend.shutdown() {
            eprintln!("ssdcache serve: the cache could not be shut down cleanly: {e}");
        }
    }
    result
}

/// Whether two socket paths (which need not exist) name the same file: their
/// directories resolved, their names compared.
fn same_path(a: &std::path::Path, b: &std::path::Path) -> bool {
    let resolve = |p: &std::path::Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
        match (abs.parent().and_then(|d| d.canonicalize().ok()), abs.file_name()) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => abs,
        }
    };
    resolve(a) == resolve(b)
}

/// Removes the control socket when dropped (on every exit path).
struct RemoveOnDrop(control_socket::SocketFile);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        self.0.remove();
    }
}
