//! The control socket of a running `ssdcache serve`: a Unix socket beside the
//! cache (`CACHE.ctl` by default) through which `ssdcache status | flush |
//! maintain` talk to the server.
//!
//! Protocol: the client sends one line, `status`, `flush` or `maintain`;
//! the server answers one line of JSON, `{"ok":true,...}` with the command's
//! result, or `{"ok":false,"error":"..."}`, and closes. Only the owner of
//! the socket file (and root) can connect: it is created mode 0600.
//!
//! Timeouts: a client must send its line within [`COMMAND_TIMEOUT`] or the
//! server closes the connection; the CLI gives up on a server that does not
//! answer within its `--timeout` (a stopped or stuck server) with a one-line
//! error.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use ssdcache_serve::cache::slow::ModelDevice;
use ssdcache_serve::cache::{FileCache, FileDevice};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// Time a control client has to send its command line.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The default socket of a cache: `CACHE.ctl` beside a regular file; for a
/// block device, `/run/ssdcache-NAME.ctl` (`/tmp` if `/run` is not writable).
pub fn default_path(cache: &Path) -> PathBuf {
    let is_file = std::fs::metadata(cache).map(|m| m.is_file()).unwrap_or(true);
    if is_file {
        let mut p = cache.as_os_str().to_owned();
        p.push(".ctl");
        return PathBuf::from(p);
    }
    let name = cache.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "cache".into());
    let dir =
        if std::fs::metadata("/run").map(|m| !m.permissions().readonly()).unwrap_or(false) { "/run" } else { "/tmp" };
    PathBuf::from(format!("{dir}/ssdcache-{name}.ctl"))
}

/// Binds the socket, replacing a stale one; refuses if a server answers.
pub async fn bind(path: &Path) -> Result<UnixListener> {
    if path.exists() {
        if UnixStream::connect(path).await.is_ok() {
            bail!("{} is the control socket of a running server", path.display());
        }
        std::fs::remove_file(path).with_context(|| format!("removing the stale socket {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding the control socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The benchmark's slow backing (`serve --backing-model`), whose modelled
/// busy time `status` reports.
pub type Model = Option<Arc<ModelDevice<FileDevice>>>;

/// Serves control connections until the listener is dropped.
pub async fn accept_loop(listener: UnixListener, cache: Arc<FileCache>, model: Model) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // e.g. EMFILE: back off instead of spinning
                log::warn!("control socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (cache, model) = (cache.clone(), model.clone());
        tokio::spawn(async move {
            if let Err(e) = handle(stream, cache, model).await {
                log::warn!("control connection: {e}");
            }
        });
    }
}

/// Reads the client's command line; `None` if it closed without one.
async fn read_command(r: impl AsyncRead + Unpin, within: Duration) -> Result<Option<String>> {
    let mut line = String::new();
    // One short command; a client sending more is cut off.
    let mut reader = BufReader::new(r.take(256));
    match tokio::time::timeout(within, reader.read_line(&mut line)).await {
        Err(_) => bail!("no command within {} s: closed", within.as_secs_f64()),
        Ok(n) => Ok((n? > 0).then(|| line.trim().to_string())),
    }
}

async fn handle(stream: UnixStream, cache: Arc<FileCache>, model: Model) -> Result<()> {
    let (r, mut w) = stream.into_split();
    let Some(cmd) = read_command(r, COMMAND_TIMEOUT).await? else { return Ok(()) };
    let answer = tokio::task::spawn_blocking(move || run(&cmd, &cache, &model)).await?;
    let mut out = serde_json::to_vec(&answer)?;
    out.push(b'\n');
    w.write_all(&out).await?;
    Ok(())
}

/// Runs one command against the engine (blocking: flush and maintain copy data).
fn run(cmd: &str, cache: &FileCache, model: &Model) -> Value {
    let fail = |e: std::io::Error| json!({"ok": false, "error": e.to_string()});
    match cmd {
        "status" => {
            let mut status = serde_json::to_value(cache.status()).unwrap_or(Value::Null);
            if let Some(m) = model {
                let s = m.stats();
                status["backing_model"] = json!({
                    "spec": m.describe(), "reads": s.reads, "writes": s.writes,
                    "busy_s": s.busy_ns as f64 / 1e9, "queued_s": s.queued_ns as f64 / 1e9,
                });
            }
            json!({"ok": true, "pid": std::process::id(), "status": status})
        }
        "flush" => match cache.write_back() {
            Ok(n) => {
                log::info!("control: flush wrote back {n} segment(s)");
                json!({"ok": true, "written_back": n})
            }
            Err(e) => fail(e),
        },
        "maintain" => match cache.maintain() {
            Ok(r) => json!({"ok": true, "report": r}),
            Err(e) => fail(e),
        },
        other => json!({"ok": false, "error": format!("unknown command `{other}` (status, flush, maintain)")}),
    }
}

/// What connecting found.
pub enum Reply {
    /// The server's answer (`ok` was true).
    Ok(Value),
    /// No server listens there.
    NotRunning(std::io::Error),
}

/// `10 s`, `1.5 s`, `250 ms`.
fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

/// Connects, or fails with `Err` after `timeout` (a stopped server whose
/// listen queue is full). The inner error: no server listens.
fn connect_within(
    path: &Path,
    timeout: Duration,
) -> std::result::Result<std::io::Result<std::os::unix::net::UnixStream>, ()> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_owned();
    // A blocking connect has no timeout of its own; the thread is left behind
    // if it never returns (the command exits with an error anyway).
    std::thread::spawn(move || {
        let _ = tx.send(std::os::unix::net::UnixStream::connect(p));
    });
    rx.recv_timeout(timeout).map_err(drop)
}

/// Sends `cmd` to the server behind `path` and waits up to `timeout` for the
/// answer (blocking; for the CLI). A server that does not answer in time is
/// an error naming the socket.
pub fn request(path: &Path, cmd: &str, timeout: Duration) -> Result<Reply> {
    let deadline = Instant::now() + timeout;
    let late = || {
        anyhow::anyhow!(
            "the server behind {} did not answer `{cmd}` within {} (is it stopped or stuck? --timeout waits longer)",
            path.display(),
            secs(timeout)
        )
    };
    let mut stream = match connect_within(path, timeout) {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Ok(Reply::NotRunning(e)),
        Err(()) => return Err(late()),
    };
    let left = |d: Instant| d.checked_duration_since(Instant::now()).filter(|l| !l.is_zero());
    let timed_out =
        |e: &std::io::Error| matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
    stream.set_write_timeout(Some(left(deadline).ok_or_else(late)?))?;
    if let Err(e) = stream.write_all(format!("{cmd}\n").as_bytes()) {
        if timed_out(&e) {
            return Err(late());
        }
        return Err(e).with_context(|| format!("sending `{cmd}` to the server behind {}", path.display()));
    }
    // The answer is one line; read until its newline or the deadline.
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !answer.contains(&b'\n') {
        stream.set_read_timeout(Some(left(deadline).ok_or_else(late)?))?;
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) => return Err(late()),
            Err(e) => {
                return Err(e).with_context(|| format!("reading the answer of the server behind {}", path.display()))
            }
        }
    }
    let line = String::from_utf8_lossy(&answer);
    let v: Value = serde_json::from_str(line.trim())
        .with_context(|| format!("the server behind {} answered {line:?}", path.display()))?;
    if v["ok"] != json!(true) {
        bail!("the server refused `{cmd}`: {}", v["error"].as_str().unwrap_or("no reason given"));
    }
    Ok(Reply::Ok(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[tokio::test]
    async fn a_silent_control_client_is_cut_off() {
        let (_client, server) = UnixStream::pair().unwrap();
        let t = Instant::now();
        let e = read_command(server, Duration::from_millis(200)).await.unwrap_err();
        assert!(e.to_string().contains("no command within"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2));
        // a partial line without its newline is cut off too
        let (mut client, server) = UnixStream::pair().unwrap();
        client.write_all(b"sta").await.unwrap();
        assert!(read_command(server, Duration::from_millis(200)).await.is_err());
        let (mut client, server) = UnixStream::pair().unwrap();
        client.write_all(b"status\n").await.unwrap();
        assert_eq!(read_command(server, Duration::from_secs(5)).await.unwrap().as_deref(), Some("status"));
        let (client, server) = UnixStream::pair().unwrap();
        drop(client);
        assert_eq!(read_command(server, Duration::from_secs(5)).await.unwrap(), None);
    }

    #[test]
    fn a_server_that_does_not_answer_times_out() {
        let dir = tmp();
        let path = dir.path().join("c.ctl");
        // listening, but nobody ever accepts or answers (a stopped server)
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let t = Instant::now();
        let e = request(&path, "status", Duration::from_millis(300)).err().expect("an error");
        assert!(t.elapsed() < Duration::from_secs(3));
        let msg = e.to_string();
        assert!(msg.contains("did not answer `status` within 300 ms"), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'));
        // nobody listening: not running, no error
        drop(_listener);
        assert!(matches!(request(&path, "status", Duration::from_secs(1)).unwrap(), Reply::NotRunning(_)));
    }
}
