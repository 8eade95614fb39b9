//! The Unix socket file a server binds, treated alike by both servers that
//! bind one (NBD on `unix:PATH`, the control socket): what is at the path
//! before binding, whether a server still listens on a socket found there,
//! and removing the file at stop only if it is still the socket bound. What
//! each does with the answers (its error messages) stays with it.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::UnixStream;

/// What is at a path, the path itself (a symbolic link is not followed).
pub enum Found {
    Nothing,
    Socket,
    /// Anything else, named for an error message: "a regular file", ...
    Other(&'static str),
}

/// What is at `path`; an error only if its metadata cannot be read for
/// another reason than its absence.
pub fn found_at(path: &Path) -> io::Result<Found> {
    let t = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    Ok(if t.is_socket() {
        Found::Socket
    } else if t.is_symlink() {
        Found::Other("a symbolic link")
    } else if t.is_file() {
        Found::Other("a regular file")
    } else if t.is_dir() {
        Found::Other("a directory")
    } else {
        Found::Other("not a socket")
    })
}

/// Whether a server listens on a socket, as connecting to it tells.
pub enum Listening {
    /// It accepted the connection.
    Yes,
    /// Connecting was refused: a stale socket, safe to replace.
    No,
    /// Connecting failed otherwise: nobody can tell.
    Unknown(io::Error),
    /// No answer within [`PROBE_TIMEOUT`]: a server that is stopped or stuck.
    Silent,
}

/// How long [`probe`] waits for a connection.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to the socket at `path` to learn whether a server listens on it.
pub async fn probe(path: &Path) -> Listening {
    match tokio::time::timeout(PROBE_TIMEOUT, UnixStream::connect(path)).await {
        Ok(Ok(_)) => Listening::Yes,
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Listening::No,
        Ok(Err(e)) => Listening::Unknown(e),
        Err(_) => Listening::Silent,
    }
}

/// The socket file a server bound (its device and inode), so that stopping
/// removes it only if the path still holds that socket, not whatever
/// another server or a user has put there since.
pub struct BoundSocket {
    path: PathBuf,
    id: (u64, u64),
}

impl BoundSocket {
    /// The socket just bound at `path`.
    pub fn at(path: &Path) -> io::Result<BoundSocket> {
        let m = std::fs::symlink_metadata(path)?;
        Ok(BoundSocket { path: path.to_owned(), id: (m.dev(), m.ino()) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket unless something else has taken its path.
    pub fn remove(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if m.file_type().is_socket() && (m.dev(), m.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}
