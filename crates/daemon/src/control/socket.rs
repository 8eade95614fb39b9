//! The control socket of a running `ssdcache serve`: a Unix socket beside the
//! cache (`CACHE.ctl` by default) through which `ssdcache status | flush |
//! maintain` talk to the server: the socket, its server loop and its client.
//! The protocol itself (one command line in, one JSON line out) is
//! [`super::protocol`]. Only the owner of the socket file (and root) can
//! connect: it is created mode 0600.
//!
//! Timeouts: a client must send its line within [`COMMAND_TIMEOUT`] or the
//! server closes the connection; the CLI gives up on a server that does not
//! answer within its `--timeout` (a stopped or stuck server) with a one-line
//! error.
//!
//! The socket path: only a stale socket (one nobody listens on) is replaced.
//! Anything else there (a regular file, a symbolic link, a directory) is
//! refused, never followed or deleted; at stop the server removes the socket
//! only if it is still the one it bound.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::protocol::{self, Command, Served};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use ssdcache_engine::model_device::ModelDevice;
use ssdcache_engine::FileDevice;
use ssdcache_server::unix_socket::{found_at, probe, BoundSocket, Found, Listening};
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

/// Whether `path` holds a socket (false: nothing there), without following
/// a symbolic link; anything but a socket is an error.
fn existing_socket(path: &Path) -> Result<bool> {
    match found_at(path) {
        Ok(Found::Nothing) => Ok(false),
        Ok(Found::Socket) => Ok(true),
        Ok(Found::Other(what)) => bail!(
            "control socket path {} exists and is {what}, not a socket: refusing to replace it \
             (remove it, or choose another path with --control)",
            path.display()
        ),
        Err(e) => bail!("control socket path {}: {e}", path.display()),
    }
}

/// Refuses early (before the cache is opened) a control path that holds
/// something other than a socket.
pub fn check_path(path: &Path) -> Result<()> {
    existing_socket(path).map(drop)
}

/// The socket file a server bound, removed at stop only if still the same.
pub type SocketFile = BoundSocket;

/// Binds the socket, replacing a stale one (nobody listens); refuses if a
/// server answers or may still listen, and refuses anything that is not a
/// socket.
pub async fn bind(path: &Path) -> Result<(UnixListener, SocketFile)> {
    if existing_socket(path)? {
        match probe(path).await {
            Listening::Yes => bail!("{} is the control socket of a running server", path.display()),
            Listening::No => {
                std::fs::remove_file(path).with_context(|| format!("removing the stale socket {}", path.display()))?
            }
            Listening::Unknown(e) => bail!(
                "{}: cannot tell whether a server still listens on this control socket ({e}); remove it if none does",
                path.display()
            ),
            Listening::Silent => bail!("{} is the control socket of a server that does not answer", path.display()),
        }
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding the control socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let file = BoundSocket::at(path).with_context(|| format!("control socket {}", path.display()))?;
    Ok((listener, file))
}

/// The benchmark's slow backing (`serve --backing-model`), whose modelled
/// busy time `status` reports.
pub type Model = Option<Arc<ModelDevice<FileDevice>>>;

/// Serves control connections until the listener is dropped.
pub async fn accept_loop(listener: UnixListener, cache: Arc<Served>, model: Model) {
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

/// Reads the client's command line; `None` if it closed without one, an
/// `Err` line if it was longer than the socket takes.
async fn read_command(r: impl AsyncRead + Unpin, within: Duration) -> Result<Option<Result<String, String>>> {
    let mut line = String::new();
    // One command (a `set` of a few settings at most); a client sending more is cut off.
    let mut reader = BufReader::new(r.take(protocol::MAX_LINE));
    match tokio::time::timeout(within, reader.read_line(&mut line)).await {
        Err(_) => bail!("no command within {} s: closed", within.as_secs_f64()),
        // Cut off before its end: not a command to run half of.
        Ok(Ok(n)) if n as u64 >= protocol::MAX_LINE && !line.ends_with('\n') => {
            Ok(Some(Err(format!("a command longer than {} bytes: not run", protocol::MAX_LINE - 1))))
        }
        Ok(n) => Ok((n? > 0).then(|| Ok(line.trim().to_string()))),
    }
}

async fn handle(stream: UnixStream, cache: Arc<Served>, model: Model) -> Result<()> {
    let (r, mut w) = stream.into_split();
    let Some(line) = read_command(r, COMMAND_TIMEOUT).await? else { return Ok(()) };
    let answer = tokio::task::spawn_blocking(move || {
        let model = model.as_deref().map(|m| m as &dyn protocol::BackingModel);
        protocol::answer(line.and_then(|l| Command::parse(&l)), &*cache, model)
    })
    .await?;
    w.write_all(&protocol::encode(&answer)).await?;
    Ok(())
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

/// `cmd` as errors quote it: its first 100 characters.
fn shortened(cmd: &str) -> String {
    match cmd.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &cmd[..i]),
        None => cmd.to_string(),
    }
}

/// Sends `cmd` to the server behind `path` and waits up to `timeout` for the
/// answer (blocking; for the CLI). A server that does not answer in time is
/// an error naming the socket.
pub fn request(path: &Path, cmd: &str, timeout: Duration) -> Result<Reply> {
    let full = cmd;
    // Errors quote the command, shortened: one line, whatever was asked.
    let cmd = &shortened(full);
    if full.len() as u64 >= protocol::MAX_LINE || full.contains('\n') {
        bail!(
            "`{cmd}` takes {} bytes on one line; the control socket takes at most {} (ask for less at a time)",
            full.len(),
            protocol::MAX_LINE - 1
        );
    }
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
    if let Err(e) = stream.write_all(format!("{full}\n").as_bytes()) {
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
    match protocol::decode(&line) {
        Ok(Ok(v)) => Ok(Reply::Ok(v)),
        Ok(Err(why)) => bail!("the server refused `{cmd}`: {why}"),
        Err(e) => bail!("the server behind {} answered {line:?}: {e}", path.display()),
    }
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
        assert_eq!(read_command(server, Duration::from_secs(5)).await.unwrap(), Some(Ok("status".into())));
        let (client, server) = UnixStream::pair().unwrap();
        drop(client);
        assert_eq!(read_command(server, Duration::from_secs(5)).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_command_longer_than_the_line_limit_is_refused_not_cut_and_run() {
        // `set ["max-dirty=1%", …]` cut at 4096 bytes would be a shorter,
        // valid-looking list; it is refused whole.
        let (mut client, server) = UnixStream::pair().unwrap();
        let long = format!("set [{}\"max-dirty=1%\"]\n", "\"seq-cutoff=1MiB\",".repeat(300));
        let writer = tokio::spawn(async move {
            let _ = client.write_all(long.as_bytes()).await;
            client
        });
        let got = read_command(server, Duration::from_secs(5)).await.unwrap();
        assert_eq!(got, Some(Err("a command longer than 4095 bytes: not run".into())));
        drop(writer.await);
        // The client refuses to send one, quoting it shortened, on one line.
        let dir = tmp();
        let path = dir.path().join("c.ctl");
        let cmd = format!("set [{}]", "\"policy=lru\",".repeat(500));
        let e = request(&path, &cmd, Duration::from_secs(1)).err().expect("refused").to_string();
        assert!(e.contains("takes 6506 bytes on one line; the control socket takes at most 4095"), "{e}");
        assert!(e.len() < 300 && !e.contains('\n'), "{e}");
        assert!(request(&path, "status\nflush", Duration::from_secs(1)).is_err(), "one line, one command");
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

    #[tokio::test]
    async fn only_a_stale_socket_is_replaced() {
        let dir = tmp();
        // a regular file is refused and kept
        let file = dir.path().join("file.ctl");
        std::fs::write(&file, b"precious").unwrap();
        let e = bind(&file).await.err().expect("refused").to_string();
        assert!(e.contains("is a regular file, not a socket"), "{e}");
        assert!(e.contains(&file.display().to_string()), "{e}");
        assert!(check_path(&file).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
        // a symbolic link (to a file, or dangling) is refused, not followed
        let link = dir.path().join("link.ctl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let e = bind(&link).await.err().expect("refused").to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let dangling = dir.path().join("dangling.ctl");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(bind(&dangling).await.is_err());
        assert!(!dir.path().join("nowhere").exists());
        // a directory is refused
        let sub = dir.path().join("dir.ctl");
        std::fs::create_dir(&sub).unwrap();
        assert!(bind(&sub).await.is_err());
        // a stale socket is replaced; a live one is refused
        let sock = dir.path().join("sock.ctl");
        drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
        assert!(check_path(&sock).is_ok());
        let (listener, file_of) = bind(&sock).await.unwrap();
        let e = bind(&sock).await.err().expect("refused").to_string();
        assert!(e.contains("running server"), "{e}");
        // at stop, the socket is removed only if it is still ours
        drop(listener);
        std::fs::remove_file(&sock).unwrap();
        std::fs::write(&sock, b"someone else's").unwrap();
        file_of.remove();
        assert_eq!(std::fs::read(&sock).unwrap(), b"someone else's");
        std::fs::remove_file(&sock).unwrap();
        let (_l, file_of) = bind(&sock).await.unwrap();
        file_of.remove();
        assert!(!sock.exists());
    }
}
