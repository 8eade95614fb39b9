//! The control socket of a running `ssdcache serve`: a Unix socket beside the
//! cache (`CACHE.ctl` by default) through which `ssdcache status | flush |
//! maintain` talk to the server.
//!
//! Protocol: the client sends one line, `status`, `flush` or `maintain`;
//! the server answers one line of JSON, `{"ok":true,...}` with the command's
//! result, or `{"ok":false,"error":"..."}`, and closes. Only the owner of
//! the socket file (and root) can connect: it is created mode 0600.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use ssdcache_serve::cache::model_device::ModelDevice;
use ssdcache_serve::cache::{FileCache, FileDevice};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

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
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (cache, model) = (cache.clone(), model.clone());
        tokio::spawn(async move {
            if let Err(e) = handle(stream, cache, model).await {
                log::warn!("control connection: {e}");
            }
        });
    }
}

async fn handle(stream: UnixStream, cache: Arc<FileCache>, model: Model) -> Result<()> {
    let (r, mut w) = stream.into_split();
    let mut line = String::new();
    // One short command; a client sending more is cut off.
    let n = BufReader::new(r.take(256)).read_line(&mut line).await?;
    let cmd = line.trim().to_string();
    let answer = if n == 0 {
        return Ok(());
    } else {
        tokio::task::spawn_blocking(move || run(&cmd, &cache, &model)).await?
    };
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

/// Sends `cmd` to the server behind `path` (blocking; for the CLI).
pub fn request(path: &Path, cmd: &str) -> Result<Reply> {
    use std::io::{BufRead, Write};
    let mut stream = match std::os::unix::net::UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => return Ok(Reply::NotRunning(e)),
    };
    stream.write_all(format!("{cmd}\n").as_bytes())?;
    let mut line = String::new();
    std::io::BufReader::new(stream).read_line(&mut line).context("reading the server's answer")?;
    let v: Value = serde_json::from_str(&line).with_context(|| format!("the server answered {line:?}"))?;
    if v["ok"] != json!(true) {
        bail!("the server refused `{cmd}`: {}", v["error"].as_str().unwrap_or("no reason given"));
    }
    Ok(Reply::Ok(v))
}
