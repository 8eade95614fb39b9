//! The `/metrics` endpoint of `serve --metrics ADDR`: `GET /metrics` answers
//! the exposition text, anything else a short error; every connection is
//! closed after one answer.
//!
//! A tiny responder rather than hyper: one GET of one page, and hyper is not
//! a dependency here; what matters is that hostile clients cannot hurt the
//! server, and each bound is explicit:
//! - memory: a request head of at most [`MAX_HEAD`] bytes is read (more is
//!   answered 431 and the connection closed, the rest never read), and at
//!   most [`MAX_CONNECTIONS`] are served at once (more are closed at
//!   accept), so the endpoint holds at most `MAX_CONNECTIONS` heads and pages;
//! - time: a connection gets [`EXCHANGE_TIMEOUT`] for its whole exchange
//!   (sending the head and taking the answer), then it is closed;
//! - the NBD side shares nothing with it but the runtime and a snapshot's
//!   short locks (taken on a blocking thread).
//!
//! No authentication: bind it to loopback, or a network you trust.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::exposition;

/// Largest request head read (request line and headers).
pub const MAX_HEAD: usize = 8 << 10;
/// Connections served at once; more are closed at accept.
pub const MAX_CONNECTIONS: usize = 8;
/// Time a connection has to send its head and take the answer.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the endpoint turned away (for tests and logs).
#[derive(Debug, Default)]
pub struct EndpointStats {
    /// Closed at accept: [`MAX_CONNECTIONS`] were being served.
    pub refused: AtomicU64,
    /// Closed after [`EXCHANGE_TIMEOUT`].
    pub timed_out: AtomicU64,
    /// Answered 431: a head longer than [`MAX_HEAD`].
    pub too_large: AtomicU64,
    /// Pages served.
    pub served: AtomicU64,
}

/// Serves `/metrics` on `listener` until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, registry: Arc<Registry>, stats: Arc<EndpointStats>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
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
        let (registry, stats) = (registry.clone(), stats.clone());
        tokio::spawn(async move {
            let _slot = slot;
            match tokio::time::timeout(EXCHANGE_TIMEOUT, exchange(sock, &registry, &stats)).await {
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
    if path == "/metrics" {
        Asked::Metrics
    } else {
        Asked::NotFound
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

async fn exchange(mut sock: TcpStream, registry: &Arc<Registry>, stats: &EndpointStats) -> std::io::Result<()> {
    let Some(head) = read_head(&mut sock).await? else {
        stats.too_large.fetch_add(1, Relaxed);
        return respond(&mut sock, "431 Request Header Fields Too Large", "text/plain", b"request head too large\n")
            .await;
    };
    match parse(&head) {
        Asked::Metrics => {
            // A snapshot takes the engine's locks, which a fill may hold
            // during device I/O: not on the async runtime.
            let r = registry.clone();
            let page =
                tokio::task::spawn_blocking(move || exposition::render(&r)).await.map_err(std::io::Error::other)?;
            stats.served.fetch_add(1, Relaxed);
            // Prometheus asks for OpenMetrics; others get the classic format.
            if wants_openmetrics(&head) {
                respond(&mut sock, "200 OK", exposition::CONTENT_TYPE, page.as_bytes()).await
            } else {
                let page = exposition::to_classic(&page);
                respond(&mut sock, "200 OK", exposition::CLASSIC_CONTENT_TYPE, page.as_bytes()).await
            }
        }
        Asked::NotFound => respond(&mut sock, "404 Not Found", "text/plain", b"only /metrics is served here\n").await,
        Asked::NotGet => respond(&mut sock, "405 Method Not Allowed", "text/plain", b"only GET\n").await,
        Asked::Malformed => respond(&mut sock, "400 Bad Request", "text/plain", b"not an HTTP/1 request\n").await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_read_strictly() {
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Asked::Metrics);
        assert_eq!(parse(b"GET /metrics?x=1 HTTP/1.0\n\n"), Asked::Metrics);
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Asked::NotFound);
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
