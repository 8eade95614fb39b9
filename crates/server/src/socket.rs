//! Where the server listens (TCP or a Unix socket) and the connections it
//! accepts, in the two shapes the server needs them: async while
//! negotiating ([`Accepted`]), blocking with short timeouts in transmission
//! ([`Stream`], read and written by the worker threads of `conn.rs`).
//!
//! A Unix socket path: nothing there → created; a stale socket (nobody
//! listens: connecting is refused) → replaced; a socket a server answers
//! on → refused; anything else (a regular file, a directory, a symbolic
//! link, never followed) → refused and left alone. The socket is created
//! mode 0600 (`fchmod` on the socket before `bind`, so it is never
//! reachable by others, whatever the umask) and removed when the listener
//! is dropped (a clean stop), only if the path still holds the socket it
//! bound.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::unix_socket::{found_at, probe, BoundSocket, Found, Listening};

/// Where to listen: `HOST:PORT` (an IP address) or `unix:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddr {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a path (unix:/run/ssdcache/disk.sock)".into());
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        s.parse()
            .map(ListenAddr::Tcp)
            .map_err(|_| format!("{s:?} is neither IP:PORT (127.0.0.1:10809, [::1]:10809) nor unix:PATH"))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

impl ListenAddr {
    /// Whether clients on other machines can reach it (a TCP address that
    /// is not loopback): clear text there exposes the disk.
    pub fn reachable_from_network(&self) -> bool {
        match self {
            ListenAddr::Tcp(a) => !a.ip().to_canonical().is_loopback(),
            ListenAddr::Unix(_) => false,
        }
    }
}

/// A bound listening socket.
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, SocketFile),
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Listener::Tcp(l)
    }
}

impl Listener {
    /// Binds `addr` (call inside a tokio runtime). Errors name the address.
    pub async fn bind(addr: &ListenAddr) -> io::Result<Listener> {
        match addr {
            ListenAddr::Tcp(a) => TcpListener::bind(a)
                .await
                .map(Listener::Tcp)
                .map_err(|e| io::Error::new(e.kind(), format!("listening on {a}: {e}"))),
            ListenAddr::Unix(p) => bind_unix(p).await,
        }
    }

    /// Where it listens (the port the kernel picked for port 0).
    pub fn local_addr(&self) -> io::Result<ListenAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr().map(ListenAddr::Tcp),
            Listener::Unix(_, f) => Ok(ListenAddr::Unix(f.0.path().to_owned())),
        }
    }

    pub(super) async fn accept(&self) -> io::Result<(Accepted, Peer)> {
        match self {
            Listener::Tcp(l) => {
                let (s, a) = l.accept().await?;
                Ok((Accepted::Tcp(s), Peer(a.to_string().into())))
            }
            Listener::Unix(l, f) => {
                let (s, _) = l.accept().await?;
                let pid = s.peer_cred().ok().and_then(|c| c.pid());
                let who = match pid {
                    Some(pid) => format!("unix:{} (pid {pid})", f.0.path().display()),
                    None => format!("unix:{}", f.0.path().display()),
                };
                Ok((Accepted::Unix(s), Peer(who.into())))
            }
        }
    }
}

/// The Unix socket file a listener bound; removed when dropped if the path
/// still holds it.
pub struct SocketFile(BoundSocket);

impl Drop for SocketFile {
    fn drop(&mut self) {
        self.0.remove();
    }
}

fn path_error(path: &Path, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, format!("listening on unix:{}: {what}", path.display()))
}

/// Refuses what must not be replaced; removes a stale socket.
async fn clear_unix_path(path: &Path) -> io::Result<()> {
    match found_at(path) {
        Ok(Found::Nothing) => return Ok(()),
        Ok(Found::Socket) => {}
        Ok(Found::Other(what)) => {
            return Err(path_error(path, &format!("the path exists and is {what}: refusing to replace it")))
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("listening on unix:{}: {e}", path.display()))),
    }
    match probe(path).await {
        Listening::Yes => Err(path_error(path, "a server already listens on this socket")),
        Listening::No => std::fs::remove_file(path)
            .map_err(|e| io::Error::new(e.kind(), format!("removing the stale socket {}: {e}", path.display()))),
        Listening::Unknown(e) => Err(path_error(
            path,
            &format!("cannot tell whether a server still listens on this socket ({e}); remove it if none does"),
        )),
        Listening::Silent => Err(path_error(path, "a server that does not answer holds this socket")),
    }
}

async fn bind_unix(path: &Path) -> io::Result<Listener> {
    clear_unix_path(path).await?;
    let fail = |e: io::Error| io::Error::new(e.kind(), format!("listening on unix:{}: {e}", path.display()));
    let sock = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).map_err(fail)?;
    // Linux gives the socket file the socket's own mode (less the umask):
    // set before bind, the file never exists with wider permissions.
    // SAFETY: fchmod on a descriptor we own.
    if unsafe { libc::fchmod(sock.as_raw_fd(), 0o600) } != 0 {
        return Err(fail(io::Error::last_os_error()));
    }
    sock.bind(&socket2::SockAddr::unix(path).map_err(fail)?).map_err(fail)?;
    let file = SocketFile(BoundSocket::at(path).map_err(fail)?);
    sock.listen(1024).map_err(fail)?;
    sock.set_nonblocking(true).map_err(fail)?;
    let listener = UnixListener::from_std(std::os::unix::net::UnixListener::from(sock)).map_err(fail)?;
    Ok(Listener::Unix(listener, file))
}

/// Who a connection is, for the logs.
#[derive(Debug, Clone)]
pub(crate) struct Peer(Arc<str>);

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An accepted connection while it negotiates (async).
pub(crate) enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Accepted {
    pub(super) fn set_nodelay(&self) {
        if let Accepted::Tcp(s) = self {
            let _ = s.set_nodelay(true);
        }
    }

    /// The blocking socket the worker threads serve.
    pub(super) fn into_std(self) -> io::Result<Stream> {
        Ok(match self {
            Accepted::Tcp(s) => Stream::Tcp(s.into_std()?),
            Accepted::Unix(s) => Stream::Unix(s.into_std()?),
        })
    }
}

macro_rules! both {
    ($self:expr, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Accepted::Tcp($s) => $e,
            Accepted::Unix($s) => $e,
        }
    };
}

impl AsyncRead for Accepted {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        both!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Accepted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        both!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        both!(self, s => Pin::new(s).poll_shutdown(cx))
    }
}

/// A connection in transmission: a TCP socket, a Unix socket, or the
/// server's end of the socket pair a TLS session is pumped through
/// (`tls.rs`). Threads use it in blocking mode, each call bounded by a
/// timeout.
pub(crate) enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    /// Blocking, each read and write returning after at most `slice`.
    pub(super) fn set_blocking_slices(&self, slice: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(slice))?;
                s.set_write_timeout(Some(slice))
            }
            Stream::Unix(s) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(slice))?;
                s.set_write_timeout(Some(slice))
            }
        }
    }

    pub(super) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }

    pub(super) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match *self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match *self {
            Stream::Tcp(s) => (&*s).write(buf),
            Stream::Unix(s) => (&*s).write(buf),
        }
    }

    // A reply's header and data in one sendmsg, as on the sockets themselves.
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match *self {
            Stream::Tcp(s) => (&*s).write_vectored(bufs),
            Stream::Unix(s) => (&*s).write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse() {
        assert_eq!("127.0.0.1:10809".parse(), Ok(ListenAddr::Tcp("127.0.0.1:10809".parse().unwrap())));
        assert_eq!("unix:/run/x.sock".parse(), Ok(ListenAddr::Unix("/run/x.sock".into())));
        assert!("unix:".parse::<ListenAddr>().is_err());
        assert!("localhost:10809".parse::<ListenAddr>().unwrap_err().contains("neither IP:PORT"));
        assert_eq!(ListenAddr::Unix("/a b".into()).to_string(), "unix:/a b");
    }

    #[test]
    fn which_addresses_reach_the_network() {
        let net = |s: &str| s.parse::<ListenAddr>().unwrap().reachable_from_network();
        assert!(!net("127.0.0.1:1"));
        assert!(!net("127.8.9.10:1"));
        assert!(!net("[::1]:1"));
        assert!(!net("[::ffff:127.0.0.1]:1"));
        assert!(!net("unix:/tmp/x"));
        assert!(net("0.0.0.0:1"));
        assert!(net("[::]:1"));
        assert!(net("192.0.2.1:1"));
    }
}
