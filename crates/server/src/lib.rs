//! ssdcache-server: the tokio NBD server: accepts connections, negotiates with
//! [`Negotiation`], then serves requests concurrently.
//!
//! Accepting, negotiating and shutting down are async (tokio). Requests are
//! read and run by a server-wide pool of blocking worker threads
//! (`conn.rs`, nbdkit's model): a thread reads one request, runs the
//! backend call itself and writes the whole reply, so a request costs no
//! thread hop and the backend's blocking calls never block the async
//! runtime. Several threads serve a connection at once, so replies may
//! overtake each other (the cookie tells the client which is which).
//!
//! Limits (all with back-pressure: a connection at a limit stops reading its
//! socket, which pushes back on the client through TCP, rather than fail):
//! - per connection, at most [`ServerConfig::max_inflight_requests`]
//!   requests in flight and [`ServerConfig::max_inflight_bytes`] bytes of
//!   write payloads and read buffers;
//! - across the server, at most [`ServerConfig::buffer_memory`] bytes of
//!   them and of TLS handshakes in progress (first come first served, at
//!   least `max_block`, so any single request fits) and
//!   [`ServerConfig::max_threads`] worker threads. An idle
//!   connection holds no thread (the async side watches its socket), and a
//!   busy one gives its thread back when others wait for one.
//! - A transfer (the rest of a request, or a reply) slower than 256 KiB/s
//!   over [`ServerConfig::stall_timeout`] while another connection waits for
//!   memory or a thread ends its connection, so clients that stop reading
//!   replies (or trickle a request's payload) hold memory and threads only
//!   until someone else needs them.
//!
//! Connections: at most [`ServerConfig::max_connections`]. A connection still
//! negotiating after [`ServerConfig::handshake_timeout`] is closed. When the
//! server is full, a new connection is admitted by closing the connection
//! that has been negotiating longest, else the negotiated connection idle
//! longest (no request in flight, none read or answered) if it has been
//! idle for [`ServerConfig::idle_timeout`]; else the new one is refused.
//! An idle connection is not otherwise closed (clients keep them).
//!
//! TLS (`tls.rs`, [`ServerConfig::tls`]): `NBD_OPT_STARTTLS` upgrades the
//! negotiation to a rustls session (offered, or required before any other
//! option); in transmission an async pump carries the session to the worker
//! threads through a socket pair. Listening on TCP or a Unix socket
//! (`socket.rs`).
//!
//! A connection that breaks the protocol (bad magic, a WRITE payload larger
//! than the maximum block size, bad handshake) is closed; the others carry
//! on.
//!
//! Shutdown ([`ServerHandle::shutdown`]): stop accepting; connections still
//! negotiating are closed; connections in transmission stop reading new
//! requests (a request whose header or payload is only partly received, or
//! still only in the connection's read buffer, is dropped unanswered, which
//! the spec allows on shutdown), finish every
//! request already read, send its reply and close. Connections that have not
//! finished after [`ServerConfig::drain_timeout`] (e.g. a client that stopped
//! reading replies) are aborted. Then the server waits until every backend
//! call has returned, even of aborted connections, and calls
//! [`Backend::shutdown`] once per distinct backend.

use conn::{Activity, Negotiated};
use limits::{lock, Budget, Pool};
use socket::{Accepted, Peer, Stream};
use ssdcache_block::Backend;
use ssdcache_nbd::consts::*;
use ssdcache_nbd::handshake::{ExportInfo, HandshakeError, Negotiation, Progress, TlsMode};
use ssdcache_nbd::request::ExportParams;
use ssdcache_nbd::structured::Session;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod conn;
mod limits;
pub mod socket;
pub mod stderr_log;
pub mod tls;
pub mod unix_socket;

pub use socket::{ListenAddr, Listener};
pub use tls::{TlsError, TlsSettings};

/// One export: a name clients ask for and the backend behind it.
#[derive(Clone)]
pub struct Export {
    pub name: String,
    pub description: String,
    pub backend: Arc<dyn Backend>,
    /// Refuse writes, trims and write-zeroes with EPERM and advertise
    /// `NBD_FLAG_READ_ONLY`, even if the backend could write (`serve
    /// --read-only`). A backend that is read-only itself always is.
    pub read_only: bool,
}

impl Export {
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>) -> Self {
        Export { name: name.into(), description: String::new(), backend, read_only: false }
    }

    /// The same export, read-only for its clients.
    pub fn into_read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Whether clients may not write.
    pub fn is_read_only(&self) -> bool {
        self.read_only || self.backend.read_only()
    }

    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("size", &self.backend.size())
            .field("read_only", &self.is_read_only())
            .finish()
    }
}

/// Limits and timeouts.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest READ/WRITE payload (advertised maximum block size). Default 32 MiB.
    pub max_block: u32,
    /// Requests in flight per connection. Default 64.
    pub max_inflight_requests: usize,
    /// Bytes of write payloads and read buffers in flight per connection; at
    /// least `max_block`. Default 64 MiB.
    pub max_inflight_bytes: usize,
    /// Bytes of write payloads and read buffers in flight across all
    /// connections (requests received and replies not yet sent), and of TLS
    /// handshakes in progress ([`TlsSettings::handshake_memory`] each); at
    /// least `max_block`. Default 256 MiB.
    pub buffer_memory: usize,
    /// Worker threads across all connections (started on demand; an idle
    /// connection holds none). Default 128.
    pub max_threads: usize,
    /// Connections served at once. When full, a new connection closes the
    /// one negotiating longest, else one idle for `idle_timeout`, else it is
    /// refused. Default 256.
    pub max_connections: usize,
    /// Time a client has to finish negotiating. Default 30 s.
    pub handshake_timeout: Duration,
    /// When the server is full, a negotiated connection with no request in
    /// flight and none for this long may be closed to admit a new one.
    /// Default 60 s.
    pub idle_timeout: Duration,
    /// While another connection waits for memory or a worker thread, a
    /// connection whose request or reply transfer has moved less than
    /// 256 KiB/s over this long is closed (a client that stops reading its
    /// replies, or sends a request's payload a byte at a time). Default 30 s.
    pub stall_timeout: Duration,
    /// On shutdown, time connections get to finish in-flight requests. Default 30 s.
    pub drain_timeout: Duration,
    /// TLS offered or required (`NBD_OPT_STARTTLS`); `None`: clear text only.
    pub tls: Option<TlsSettings>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_block: DEFAULT_MAX_BLOCK,
            max_inflight_requests: 64,
            max_inflight_bytes: 64 << 20,
            buffer_memory: 256 << 20,
            max_threads: 128,
            max_connections: 256,
            handshake_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            stall_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            tls: None,
        }
    }
}

/// Errors building or stopping a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("a server needs at least one export")]
    NoExports,
    #[error("two exports are named {0:?}")]
    DuplicateName(String),
    #[error("export name of {0} bytes (limit 4096)")]
    NameTooLong(usize),
    #[error("invalid configuration: {0}")]
    Config(&'static str),
    #[error("backend shutdown failed: {0}")]
    BackendShutdown(io::Error),
    #[error("server task failed: {0}")]
    Task(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What a stopped server did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Connections accepted over the server's life.
    pub connections: u64,
    /// Connections aborted because they did not drain within `drain_timeout`.
    pub aborted: usize,
    /// Backends whose `shutdown` was called.
    pub backends_shut_down: usize,
}

/// What a running server holds now (for tests and monitoring).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections open (negotiating or in transmission).
    pub connections: usize,
    /// Of them, still negotiating.
    pub negotiating: usize,
    /// Bytes of the server-wide buffer budget taken now.
    pub buffered: usize,
    /// Most bytes of it taken at once so far.
    pub buffered_peak: usize,
    /// Worker threads alive.
    pub threads: usize,
    /// Most worker threads alive at once so far.
    pub threads_peak: usize,
    /// Connections admitted since start.
    pub accepted: u64,
    /// Connections refused since start (full, nobody to close).
    pub refused: u64,
    /// Connections closed since start to admit a newer one.
    pub displaced: u64,
    /// Requests answered with an error by the protocol layer, without
    /// reaching the backend (out of range, unknown command, bad flags, over
    /// the maximum block size).
    pub rejected: u64,
}

/// The server-wide resources connections draw from.
pub(crate) struct Global {
    budget: Budget,
    pool: Pool,
    stall_timeout: Duration,
    /// Bytes a transfer must move per `stall_timeout` while others wait.
    stall_bytes: usize,
    epoch: Instant,
    /// Requests rejected before reaching the backend (see [`ServerStats::rejected`]).
    rejected: AtomicU64,
}

impl Global {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Whether a connection other than `id` waits for memory or a thread.
    fn contended(&self, id: u64) -> bool {
        self.budget.others_waiting(id) || self.pool.pressure(id)
    }
}

/// The open connections, for admission when the server is full.
#[derive(Default)]
struct Table {
    next_id: u64,
    entries: HashMap<u64, Entry>,
}

struct Entry {
    peer: Peer,
    accepted: Instant,
    /// Set once negotiated.
    activity: Option<Arc<Activity>>,
    /// Cancelled to close the connection (gracefully once negotiated).
    kick: CancellationToken,
}

impl Table {
    /// The connection to close to admit a new one into a full server: the
    /// one negotiating longest, else the one idle longest if idle for at
    /// least `idle_ms`.
    fn victim(&self, now_ms: u64, idle_ms: u64) -> Option<(u64, &'static str)> {
        let negotiating = self.entries.iter().filter(|(_, e)| e.activity.is_none()).min_by_key(|(_, e)| e.accepted);
        if let Some((id, _)) = negotiating {
            return Some((*id, "still negotiating"));
        }
        self.entries
            .iter()
            .filter_map(|(id, e)| Some((*id, e.activity.as_ref()?.idle_ms(now_ms)?)))
            .filter(|(_, idle)| *idle >= idle_ms)
            .max_by_key(|(_, idle)| *idle)
            .map(|(id, _)| (id, "idle"))
    }
}

/// Takes a connection out of the table when its task ends.
struct Registered {
    shared: Arc<Shared>,
    id: u64,
    kick: CancellationToken,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.shared.table).entries.remove(&self.id);
    }
}

struct Shared {
    exports: Vec<Export>,
    infos: Vec<ExportInfo>,
    params: Vec<ExportParams>,
    config: ServerConfig,
    connections: AtomicU64,
    refused: AtomicU64,
    displaced: AtomicU64,
    global: Arc<Global>,
    table: Mutex<Table>,
}

impl Shared {
    /// Admits a new connection, closing another if the server is full
    /// (see the module docs); `None` if it is refused.
    fn admit(self: &Arc<Self>, peer: &Peer) -> Option<Registered> {
        let mut t = lock(&self.table);
        if t.entries.len() >= self.config.max_connections {
            let idle_ms = self.config.idle_timeout.as_millis() as u64;
            let Some((victim, why)) = t.victim(self.global.now_ms(), idle_ms) else {
                log::warn!("{peer}: refused: {} connections, none negotiating or idle", t.entries.len());
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            let e = t.entries.remove(&victim).expect("victim in the table");
            log::info!("{}: closing a connection {why} to admit {peer}", e.peer);
            e.kick.cancel();
            self.displaced.fetch_add(1, Ordering::Relaxed);
        }
        let id = t.next_id;
        t.next_id += 1;
        let kick = CancellationToken::new();
        t.entries
            .insert(id, Entry { peer: peer.clone(), accepted: Instant::now(), activity: None, kick: kick.clone() });
        Some(Registered { shared: self.clone(), id, kick })
    }

    fn stats(&self) -> ServerStats {
        let (connections, negotiating) = {
            let t = lock(&self.table);
            (t.entries.len(), t.entries.values().filter(|e| e.activity.is_none()).count())
        };
        let (threads, threads_peak) = self.global.pool.threads();
        ServerStats {
            connections,
            negotiating,
            buffered: self.global.budget.in_use(),
            buffered_peak: self.global.budget.peak(),
            threads,
            threads_peak,
            accepted: self.connections.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            displaced: self.displaced.load(Ordering::Relaxed),
            rejected: self.global.rejected.load(Ordering::Relaxed),
        }
    }
}

/// Reads a server's [`ServerStats`] from elsewhere (metrics, `status`);
/// cheap to clone, usable before the server starts.
#[derive(Clone)]
pub struct StatsHandle(Arc<Shared>);

impl StatsHandle {
    pub fn stats(&self) -> ServerStats {
        self.0.stats()
    }
}

/// A configured server, not yet listening.
pub struct Server {
    shared: Arc<Shared>,
}

/// Transmission flags for an export: everything this server implements,
/// `CAN_MULTI_CONN` only when the backend says a flush covers all connections.
/// A read-only export says so and, as qemu-nbd does, offers no trim or write
/// zeroes (they would only fail with EPERM). A writable one offers fast
/// zeroes too: a backend that cannot do them fast answers ENOTSUP, which the
/// spec allows. `SEND_DF` is added per connection, once structured replies
/// are on.
pub fn transmission_flags(backend: &dyn Backend, read_only: bool) -> u16 {
    let mut f = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_SEND_CACHE;
    if read_only || backend.read_only() {
        f |= FLAG_READ_ONLY;
    } else {
        f |= FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES | FLAG_SEND_FAST_ZERO;
    }
    if backend.multi_conn() {
        f |= FLAG_CAN_MULTI_CONN;
    }
    f
}

impl Server {
    /// Checks the exports and the configuration.
    pub fn new(exports: Vec<Export>, config: ServerConfig) -> Result<Self, ServerError> {
        if exports.is_empty() {
            return Err(ServerError::NoExports);
        }
        if config.max_block == 0
            || config.max_inflight_requests == 0
            || config.max_connections == 0
            || config.max_threads == 0
        {
            return Err(ServerError::Config("limits must be positive"));
        }
        if config.max_inflight_bytes < config.max_block as usize {
            return Err(ServerError::Config("max_inflight_bytes must be at least max_block"));
        }
        // Any single request must fit, or its connection would wait for ever.
        if config.buffer_memory < config.max_block as usize {
            return Err(ServerError::Config("buffer_memory must be at least max_block"));
        }
        for (i, e) in exports.iter().enumerate() {
            if e.name.len() > MAX_STRING_LEN {
                return Err(ServerError::NameTooLong(e.name.len()));
            }
            if exports[..i].iter().any(|o| o.name == e.name) {
                return Err(ServerError::DuplicateName(e.name.clone()));
            }
        }
        let infos = exports
            .iter()
            .map(|e| ExportInfo {
                name: e.name.clone(),
                // keep the whole option reply within the string limit
                description: truncate(&e.description, MAX_STRING_LEN),
                size: e.backend.size(),
                flags: transmission_flags(&*e.backend, e.read_only),
                max_block: config.max_block,
            })
            .collect();
        let params = exports
            .iter()
            .map(|e| ExportParams {
                size: e.backend.size(),
                max_block: config.max_block,
                read_only: e.is_read_only(),
                structured: false,
                block_status: false,
                extended: false,
            })
            .collect();
        let global = Arc::new(Global {
            budget: Budget::new(config.buffer_memory),
            pool: Pool::new(config.max_threads),
            stall_timeout: config.stall_timeout,
            stall_bytes: (conn::STALL_MIN_RATE as f64 * config.stall_timeout.as_secs_f64()).max(1.0) as usize,
            epoch: Instant::now(),
            rejected: AtomicU64::new(0),
        });
        let shared = Shared {
            exports,
            infos,
            params,
            config,
            connections: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            displaced: AtomicU64::new(0),
            global,
            table: Mutex::new(Table::default()),
        };
        Ok(Server { shared: Arc::new(shared) })
    }

    /// A reader of the server's stats, for monitoring set up before it starts.
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(self.shared.clone())
    }

    /// Starts serving on `listener`, TCP or Unix (call from inside a tokio runtime).
    pub fn start(self, listener: impl Into<Listener>) -> io::Result<ServerHandle> {
        let listener = listener.into();
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run(self.shared.clone(), listener, stop_rx));
        Ok(ServerHandle { addr, stop: Arc::new(stop_tx), task, shared: self.shared })
    }
}

fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// A running server. Dropping the handle stops the server as
/// [`shutdown`](Self::shutdown) would, without waiting for it.
pub struct ServerHandle {
    addr: ListenAddr,
    stop: Arc<watch::Sender<bool>>,
    task: JoinHandle<Result<ShutdownReport, ServerError>>,
    shared: Arc<Shared>,
}

/// Asks a server to stop; cheap to clone (e.g. into a signal handler).
#[derive(Clone)]
pub struct StopTrigger(Arc<watch::Sender<bool>>);

impl StopTrigger {
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

impl ServerHandle {
    /// The TCP address the server listens on (`0.0.0.0:0` for a Unix
    /// socket: see [`listen_addr`](Self::listen_addr)).
    pub fn local_addr(&self) -> SocketAddr {
        match &self.addr {
            ListenAddr::Tcp(a) => *a,
            ListenAddr::Unix(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    /// Where the server listens, TCP or Unix.
    pub fn listen_addr(&self) -> &ListenAddr {
        &self.addr
    }

    /// Connections, buffered bytes and worker threads now.
    pub fn stats(&self) -> ServerStats {
        self.shared.stats()
    }

    /// A trigger that starts the shutdown from elsewhere.
    pub fn trigger(&self) -> StopTrigger {
        StopTrigger(self.stop.clone())
    }

    /// Stops accepting, drains in-flight requests, then shuts the backends down.
    pub async fn shutdown(self) -> Result<ShutdownReport, ServerError> {
        self.stop.send_replace(true);
        self.wait().await
    }

    /// Waits until the server has stopped (after a [`StopTrigger`] fired).
    pub async fn wait(self) -> Result<ShutdownReport, ServerError> {
        self.task.await.map_err(|e| ServerError::Task(e.to_string()))?
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    // A closed channel (every handle and trigger dropped) also means stop.
    let _ = stop.wait_for(|s| *s).await;
}

async fn run(
    shared: Arc<Shared>,
    listener: Listener,
    mut stop: watch::Receiver<bool>,
) -> Result<ShutdownReport, ServerError> {
    let tracker = TaskTracker::new();
    let mut conns: JoinSet<()> = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((sock, peer)) => {
                    let Some(reg) = shared.admit(&peer) else { continue };
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    conns.spawn(connection(shared.clone(), sock, peer, stop.clone(), tracker.clone(), reg));
                }
                Err(e) => {
                    // e.g. EMFILE: back off instead of spinning
                    log::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener); // a Unix socket file goes with it
    log::info!("shutting down: draining {} connection(s)", conns.len());
    let deadline = tokio::time::sleep(shared.config.drain_timeout);
    tokio::pin!(deadline);
    let mut aborted = 0;
    loop {
        tokio::select! {
            next = conns.join_next() => if next.is_none() { break },
            _ = &mut deadline => {
                aborted = conns.len();
                log::warn!("aborting {aborted} connection(s) that did not drain");
                conns.shutdown().await;
                break;
            }
        }
    }
    // Backend calls of aborted connections may still run on their workers.
    tracker.close();
    tracker.wait().await;
    shared.global.pool.close();
    let mut done: Vec<usize> = Vec::new(); // backend addresses, to shut each down once
    let mut first_err = None;
    for e in &shared.exports {
        let ptr = Arc::as_ptr(&e.backend) as *const () as usize;
        if done.contains(&ptr) {
            continue;
        }
        done.push(ptr);
        let b = e.backend.clone();
        let r =
            tokio::task::spawn_blocking(move || b.shutdown()).await.map_err(|e| ServerError::Task(e.to_string()))?;
        if let Err(err) = r {
            log::error!("backend of export {:?}: shutdown failed: {err}", e.name);
            first_err.get_or_insert(err);
        }
    }
    if let Some(err) = first_err {
        return Err(ServerError::BackendShutdown(err));
    }
    Ok(ShutdownReport {
        connections: shared.connections.load(Ordering::Relaxed),
        aborted,
        backends_shut_down: done.len(),
    })
}

#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
}

async fn connection(
    shared: Arc<Shared>,
    sock: Accepted,
    peer: Peer,
    mut stop: watch::Receiver<bool>,
    tracker: TaskTracker,
    reg: Registered,
) {
    sock.set_nodelay();
    let mut tls_started = false;
    let negotiated = tokio::select! {
        r = tokio::time::timeout(shared.config.handshake_timeout, negotiate(sock, &shared, reg.id, &mut tls_started)) => Some(r),
        _ = stopped(&mut stop) => None,
        _ = reg.kick.cancelled() => None,
    };
    // The handshake's memory is free now, whatever became of it; a large
    // one (a large certificate chain) is given back to the system.
    if tls_started && shared.config.tls.as_ref().is_some_and(|t| t.handshake_memory >= limits::TRIM_AFTER) {
        limits::return_freed_memory();
    }
    let Some(negotiated) = negotiated else { return };
    let (export, session, transport) = match negotiated {
        Ok(Ok(Some(n))) => n,
        Ok(Ok(None)) => {
            log::debug!("{peer}: client aborted the negotiation");
            return;
        }
        Ok(Err(e)) => {
            log::info!("{peer}: negotiation failed: {e}");
            return;
        }
        Err(_) => {
            log::info!("{peer}: negotiation timed out");
            return;
        }
    };
    let (sock, pump) = match transport {
        Transport::Plain(s) => (s.into_std(), None),
        Transport::Tls(s) => match std::os::unix::net::UnixStream::pair() {
            Ok((ours, theirs)) => {
                let theirs = theirs.set_nonblocking(true).and_then(|()| tokio::net::UnixStream::from_std(theirs));
                match theirs {
                    Ok(theirs) => (Ok(Stream::Unix(ours)), Some(tls::pump(s, theirs))),
                    Err(e) => (Err(e), None),
                }
            }
            Err(e) => (Err(e), None),
        },
    };
    let sock = match sock {
        Ok(s) => s,
        Err(e) => {
            log::warn!("{peer}: cannot set the connection up: {e}");
            return;
        }
    };
    let over = if pump.is_some() { " over TLS" } else { "" };
    let headers = if session.extended {
        "extended headers"
    } else if session.structured {
        "structured replies"
    } else {
        "simple replies"
    };
    log::debug!("{peer}: serving export {:?}{over} with {headers}", shared.exports[export].name);
    let activity = Arc::new(Activity::new(shared.global.now_ms()));
    if let Some(e) = lock(&shared.table).entries.get_mut(&reg.id) {
        e.activity = Some(activity.clone());
    }
    let n = Negotiated {
        sock,
        peer,
        id: reg.id,
        backend: shared.exports[export].backend.clone(),
        params: shared.params[export],
        session,
        activity,
        kick: reg.kick.clone(),
    };
    let serve = conn::transmission(n, &shared.config, shared.global.clone(), stop, tracker);
    match pump {
        None => serve.await,
        Some(pump) => {
            tokio::pin!(serve, pump);
            tokio::select! {
                // Done: the pump sends what is left, but a client that reads
                // nothing does not hold the connection for ever.
                _ = &mut serve => {
                    let _ = tokio::time::timeout(shared.config.stall_timeout, pump).await;
                }
                // The client is gone: the threads see EOF (or EPIPE) and finish.
                _ = &mut pump => serve.await,
            }
        }
    }
    drop(reg);
}

/// The socket a negotiation ends on.
enum Transport {
    Plain(Accepted),
    // Boxed: a TLS session is over a kilobyte, and moves a few times.
    Tls(Box<tokio_rustls::server::TlsStream<Accepted>>),
}

/// Runs the negotiation of connection `id`, upgrading to TLS when the
/// client asks for it (`tls_started` then set); `Some((export, what was
/// negotiated, socket))` to enter transmission, `None` on abort.
///
/// The TLS handshake's memory ([`TlsSettings::handshake_memory`]: above all
/// the server's flight, which holds the whole certificate chain until the
/// client reads it) is taken from the buffer budget before the handshake
/// starts, in turn with requests, and given back when it ends, so clients
/// that send a ClientHello and read nothing hold at most `buffer_memory`.
async fn negotiate(
    mut sock: Accepted,
    shared: &Shared,
    id: u64,
    tls_started: &mut bool,
) -> Result<Option<(usize, Session, Transport)>, ConnError> {
    let tls = shared.config.tls.as_ref();
    let mut n = Negotiation::with_tls(&shared.infos, tls.map_or(TlsMode::Off, |t| t.mode));
    match exchange(&mut sock, &mut n).await? {
        Step::Abort => Ok(None),
        Step::Transmit(i) => Ok(Some((i, n.session(), Transport::Plain(sock)))),
        Step::StartTls => {
            // Negotiation::with_tls(Off) never accepts STARTTLS.
            let Some(tls) = tls else { return Err(io::Error::other("STARTTLS accepted without TLS settings").into()) };
            let held = shared.global.budget.take_async(tls.handshake_memory, id).await;
            *tls_started = true;
            let mut s = tls.acceptor.accept(sock).await.map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))?;
            drop(held);
            n.tls_started();
            match exchange(&mut s, &mut n).await? {
                Step::Abort => Ok(None),
                Step::Transmit(i) => Ok(Some((i, n.session(), Transport::Tls(Box::new(s))))),
                Step::StartTls => Err(io::Error::other("a second STARTTLS was accepted").into()),
            }
        }
    }
}

enum Step {
    Abort,
    Transmit(usize),
    StartTls,
}

/// Feeds the negotiation from `sock` until it ends or asks for TLS.
async fn exchange<S>(sock: &mut S, n: &mut Negotiation<'_>) -> Result<Step, ConnError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    loop {
        if !n.output().is_empty() {
            sock.write_all(n.output()).await?;
            sock.flush().await?; // a TLS stream holds what it was given until flushed
            n.clear_output();
        }
        // need() is at most MAX_OPTION_DATA, checked by the parser
        buf.resize(n.need(), 0);
        sock.read_exact(&mut buf).await?;
        let step = match n.feed(&buf)? {
            Progress::Continue => continue,
            Progress::Abort => Step::Abort,
            Progress::Transmit { export } => Step::Transmit(export),
            Progress::StartTls => Step::StartTls,
        };
        sock.write_all(n.output()).await?;
        sock.flush().await?;
        n.clear_output();
        if matches!(step, Step::Abort) {
            let _ = sock.shutdown().await;
        }
        return Ok(step);
    }
}
