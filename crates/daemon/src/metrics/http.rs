//! The endpoint of `serve --metrics ADDR`: `GET /metrics` answers the
//! exposition text, `GET /status.json` the snapshot `status --json` prints
//! under `status`, `GET /` a page for people that polls it (`page.html`,
//! compiled in: no assets, no build step, works without a network);
//! anything else a short error. Every connection is closed after one answer.
//!
//! A tiny responder rather than hyper: a few GETs of fixed paths, and hyper
//! is not a dependency here; what matters is that hostile clients cannot
//! hurt the server, and each bound is explicit (the same for every path):
//! - memory: a request head of at most [`MAX_HEAD`] bytes is read (more is
//!   answered 431 and the connection closed, the rest never read), and at
//!   most [`EndpointLimits::max_clients`] are served at once (more are
//!   closed at accept), so the endpoint holds at most that many heads and
//!   pages;
//! - time: a connection gets [`EndpointLimits::timeout`] for its whole
//!   exchange (sending the head and taking the answer), then it is closed;
//! - the NBD side shares nothing with it but the runtime and a snapshot's
//!   short locks (taken on a blocking thread, which keeps its connection's
//!   slot until it returns: an engine stuck behind a hung device ties up
//!   at most `max_clients` threads, and scrapes are refused meanwhile).
//!
//! The two limits are `serve --metrics-max-clients` and `--metrics-timeout`,
//! within [`MAX_CLIENTS_RANGE`] and [`TIMEOUT_RANGE`].
//!
//! No authentication: bind it to loopback, or a network you trust.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::exposition;
use super::snapshot::Source;

/// The page served at `/`: inline CSS and JS, polling `/status.json`.
pub const PAGE: &str = include_str!("page.html");
/// The Content-Type of [`PAGE`].
pub const PAGE_CONTENT_TYPE: &str = "text/html; charset=utf-8";
/// The Content-Type of `/status.json`.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// Largest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 << 10;
/// Connections served at once by default; more are closed at accept.
pub const MAX_CONNECTIONS: usize = 8;
/// Time a connection has by default to send its head and take the answer.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);
/// The connections that may be served at once: each may hold a blocking
/// thread while a page renders (tokio has 512 for the whole process).
pub const MAX_CLIENTS_RANGE: std::ops::RangeInclusive<usize> = 1..=256;
/// A connection's time for its exchange: long enough to send a head, short
/// enough that a client holding its slot gives it back.
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> = Duration::from_millis(100)..=Duration::from_secs(600);

/// How many connections the endpoint serves at once, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointLimits {
    /// Connections served at once; more are closed at accept.
    pub max_clients: usize,
    /// Time a connection has to send its head and take the answer.
    pub timeout: Duration,
}

impl Default for EndpointLimits {
    fn default() -> Self {
        EndpointLimits { max_clients: MAX_CONNECTIONS, timeout: EXCHANGE_TIMEOUT }
    }
}

/// What the endpoint turned away (for tests and logs).
#[derive(Debug, Default)]
pub struct EndpointStats {
    /// Closed at accept: `max_clients` were being served.
    pub refused: AtomicU64,
    /// Closed after the timeout.
    pub timed_out: AtomicU64,
    /// Answered 431: a head longer than [`MAX_HEAD`].
    pub too_large: AtomicU64,
    /// Pages served.
    pub served: AtomicU64,
}

/// What every connection reads from: the snapshots, and the registry that
/// encodes them for `/metrics`.
struct Pages {
    registry: Registry,
    source: Source,
}

/// Serves `/metrics`, `/status.json` and `/` on `listener`, from `source`,
/// until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, source: Source, stats: Arc<EndpointStats>, limits: EndpointLimits) {
    let pages = Arc::new(Pages { registry: exposition::registry(source.clone()), source });
    let slots = Arc::new(Semaphore::new(limits.max_clients));
    loop {
        let sock = match listener.accept().await {
            Ok((sock, _)) => sock,
            Err(e) => {
                // e.g. EMFILE: back off instead of spinning
                log::warn!("metrics endpoint: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            stats.refused.fetch_add(1, Relaxed);
            continue; // dropped: closed
        };
        let (pages, stats) = (pages.clone(), stats.clone());
        tokio::spawn(async move {
            match tokio::time::timeout(limits.timeout, exchange(sock, &pages, &stats, slot)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => log::debug!("metrics endpoint: {e}"),
                Err(_) => {
                    stats.timed_out.fetch_add(1, Relaxed);
                }
            }
        });
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics,
    Status,
    Page,
    NotFound,
    NotGet,
    Malformed,
}

/// Reads the head: `Ok(None)` if it grew past [`MAX_HEAD`] first.
async fn read_head(sock: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(head));
        }
        if head.len() >= MAX_HEAD {
            return Ok(None);
        }
        let want = chunk.len().min(MAX_HEAD - head.len());
        let n = sock.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before the end of its head"));
        }
        head.extend_from_slice(&chunk[..n]);
    }
}

fn parse(head: &[u8]) -> Asked {
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_ascii_whitespace();
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next()) else {
        return Asked::Malformed;
    };
    if !version.starts_with("HTTP/1.") {
        return Asked::Malformed;
    }
    if method != "GET" {
        return Asked::NotGet;
    }
    let path = target.split('?').next().unwrap_or_default();
    match path {
        "/metrics" => Asked::Metrics,
        "/status.json" => Asked::Status,
        "/" => Asked::Page,
        _ => Asked::NotFound,
    }
}

/// Whether an `Accept` header names OpenMetrics (Prometheus's does).
fn wants_openmetrics(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().any(|l| {
        l.split_once(':').is_some_and(|(k, v)| {
            k.trim().eq_ignore_ascii_case("accept") && v.to_ascii_lowercase().contains("application/openmetrics-text")
        })
    })
}

async fn respond(sock: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body).await?;
    sock.shutdown().await
}

/// Runs `render` on a blocking thread that keeps `slot` until it returns.
/// A snapshot takes the engine's locks, which a fill may hold during device
/// I/O: not on the async runtime. The rendering keeps the connection's slot
/// even past the timeout, so a stuck engine holds at most max_clients
/// blocking threads.
async fn render_blocking<T: Send + 'static>(
    slot: OwnedSemaphorePermit,
    render: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(move || {
        let _slot = slot;
        render()
    })
    .await
    .map_err(std::io::Error::other)
}

/// One connection's exchange; it holds `slot` until done, or (a page being
/// rendered) until the rendering ends.
async fn exchange(
    mut sock: TcpStream,
    pages: &Arc<Pages>,
    stats: &EndpointStats,
    slot: OwnedSemaphorePermit,
) -> std::io::Result<()> {
    let Some(head) = read_head(&mut sock).await? else {
        stats.too_large.fetch_add(1, Relaxed);
        return respond(&mut sock, "431 Request Header Fields Too Large", "text/plain", b"request head too large\n")
            .await;
    };
    match parse(&head) {
        Asked::Metrics => {
            let p = pages.clone();
            let page = render_blocking(slot, move || exposition::render(&p.registry)).await?;
            stats.served.fetch_add(1, Relaxed);
            // Prometheus asks for OpenMetrics; others get the classic format.
            if wants_openmetrics(&head) {
                respond(&mut sock, "200 OK", exposition::CONTENT_TYPE, page.as_bytes()).await
            } else {
                let page = exposition::to_classic(&page);
                respond(&mut sock, "200 OK", exposition::CLASSIC_CONTENT_TYPE, page.as_bytes()).await
            }
        }
        Asked::Status => {
            let p = pages.clone();
            // Serialising plain data cannot fail.
            let body =
                render_blocking(slot, move || serde_json::to_vec(&p.source.snapshot()).expect("a snapshot as JSON"))
                    .await?;
            stats.served.fetch_add(1, Relaxed);
            respond(&mut sock, "200 OK", JSON_CONTENT_TYPE, &body).await
        }
        Asked::Page => {
            stats.served.fetch_add(1, Relaxed);
            respond(&mut sock, "200 OK", PAGE_CONTENT_TYPE, PAGE.as_bytes()).await
        }
        Asked::NotFound => {
            respond(&mut sock, "404 Not Found", "text/plain", b"served here: /, /status.json, /metrics\n").await
        }
        Asked::NotGet => respond(&mut sock, "405 Method Not Allowed", "text/plain", b"only GET\n").await,
        Asked::Malformed => respond(&mut sock, "400 Bad Request", "text/plain", b"not an HTTP/1 request\n").await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::snapshot::Source;
    use ssdcache_engine::datapath::MapStatus;
    use ssdcache_engine::{CacheMode, EngineStatus};
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Condvar, Mutex};

    fn status() -> EngineStatus {
        EngineStatus {
            mode: CacheMode::WriteBack,
            policy: "pwc".into(),
            segment_size: 1 << 20,
            ssd_segments: 8,
            hdd_segments: 64,
            map: MapStatus::default(),
            last_maintenance: None,
            last_report: None,
            next_maintenance: None,
            idle: None,
            uptime: 1.0,
            cache_hints: 0,
            cache_hint_fills: 0,
            requests: Vec::new(),
            procedure_runs: Vec::new(),
            cleaner: None,
            recording: None,
            whatif: None,
        }
    }

    /// An engine stuck behind a hung device (its status blocks): scrapes of
    /// /metrics and /status.json time out, and the renderings stuck in it never exceed
    /// MAX_CONNECTIONS, however many scrapes come, before or after the
    /// timeouts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stuck_engine_ties_up_at_most_max_connections_threads() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let started = Arc::new(AtomicUsize::new(0));
        let (g, n) = (gate.clone(), started.clone());
        let source = Source::new(
            move || {
                n.fetch_add(1, Relaxed);
                let (open, cv) = &*g;
                let mut o = open.lock().unwrap();
                while !*o {
                    o = cv.wait(o).unwrap();
                }
                status()
            },
            None,
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stats = Arc::new(EndpointStats::default());
        let limits = EndpointLimits::default();
        let server = tokio::spawn(serve(listener, source, stats.clone(), limits));
        // Both paths that take a snapshot: the same bounds.
        let scrape = |path: &'static str| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let _ = s.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes()).await;
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out).await; // closed: refused, or timed out
            out
        };
        for round in 0..2 {
            let all: Vec<_> =
                (0..20).map(|i| tokio::spawn(scrape(if i % 2 == 0 { "/metrics" } else { "/status.json" }))).collect();
            for t in all {
                assert!(t.await.unwrap().is_empty(), "round {round}: a page from a stuck engine");
            }
        }
        assert!(started.load(Relaxed) <= MAX_CONNECTIONS, "{} renderings started", started.load(Relaxed));
        assert!(stats.refused.load(Relaxed) >= 40 - MAX_CONNECTIONS as u64);
        // Unstuck: served again.
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        for path in ["/metrics", "/status.json", "/"] {
            let mut page = Vec::new();
            for _ in 0..100 {
                page = scrape(path).await;
                if !page.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(String::from_utf8_lossy(&page).starts_with("HTTP/1.1 200 OK"), "{path}");
        }
        server.abort();
    }

    #[test]
    fn request_lines_are_read_strictly() {
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Asked::Metrics);
        assert_eq!(parse(b"GET /metrics?x=1 HTTP/1.0\n\n"), Asked::Metrics);
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Asked::Page);
        assert_eq!(parse(b"GET /?x HTTP/1.1\r\n\r\n"), Asked::Page);
        assert_eq!(parse(b"GET /status.json HTTP/1.1\r\n\r\n"), Asked::Status);
        assert_eq!(parse(b"GET /status.jsonx HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(parse(b"GET /index.html HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(parse(b"GET /metricsX HTTP/1.1\r\n\r\n"), Asked::NotFound);
        assert_eq!(parse(b"POST /metrics HTTP/1.1\r\n\r\n"), Asked::NotGet);
        assert_eq!(parse(b"GET /metrics\r\n\r\n"), Asked::Malformed);
        assert_eq!(parse(b"GET /metrics SPDY/3\r\n\r\n"), Asked::Malformed);
        assert_eq!(parse(b"\xff\xfe\r\n\r\n"), Asked::Malformed);
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        let prometheus = b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n";
        assert!(wants_openmetrics(prometheus));
        assert!(wants_openmetrics(b"GET /metrics HTTP/1.1\r\naccept:APPLICATION/OPENMETRICS-TEXT\r\n\r\n"));
        assert!(!wants_openmetrics(b"GET /metrics HTTP/1.1\r\nAccept: */*\r\n\r\n"));
        assert!(!wants_openmetrics(b"GET /metrics HTTP/1.1\r\nX-Accept: application/openmetrics-text\r\n\r\n"));
    }
}
