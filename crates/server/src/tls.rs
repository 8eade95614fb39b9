//! TLS for NBD (`NBD_OPT_STARTTLS`) with rustls: the server's certificate
//! and key, optional client authentication against a CA, and the pump that
//! carries a TLS session to the blocking worker threads.
//!
//! Transport: the worker threads (`conn.rs`) read and write a blocking
//! socket with short timeouts. A TLS session cannot be shared that way, so
//! after the handshake an async task ([`pump`]) copies between the TLS
//! stream and one end of a Unix socket pair; the threads serve the other
//! end exactly as they serve a plain socket (flow control, stall detection,
//! shutdown all unchanged). The cost is one more copy through the kernel
//! per byte and an async task per TLS connection; `scripts/bench/bench_serve.sh`
//! measures it against nbdkit's TLS. (Kernel TLS would avoid the copy but
//! needs the session's secrets handed to the kernel: not done.)
//!
//! The crypto provider is *ring* (no C toolchain beyond cc, fast to build).
//! External pre-shared keys (nbdkit's and qemu's `--tls-psk`) are not
//! supported by rustls 0.23 (rustls issue #174), so there is none here.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use ssdcache_nbd::handshake::TlsMode;
use std::fmt;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_rustls::TlsAcceptor;

/// Bytes a pump moves per read (TLS records are at most 16 KiB; several
/// fit, so a large READ reply crosses in few calls).
const PUMP_BUFFER: usize = 256 << 10;

/// The largest TLS handshake message: its length is 24 bits (RFC 8446
/// §4, RFC 5246 §7.4), so a certificate chain whose Certificate message is
/// longer cannot be sent at all.
pub const MAX_HANDSHAKE_MESSAGE: usize = (1 << 24) - 1;

/// Most bytes read from a certificate file (`--tls-cert`, `--tls-ca`): the
/// PEM of the largest chain TLS can send (16 MiB of DER is about 22 MiB of
/// base64 lines) and room for comments. Anything larger is refused unread.
pub const MAX_CERT_FILE: u64 = 32 << 20;

/// Most bytes read from a key file (`--tls-key`): the largest keys in use
/// (RSA 16384) are 13 KiB of PEM.
pub const MAX_KEY_FILE: u64 = 1 << 20;

/// How long a file that is not a regular file (a FIFO, `/dev/stdin`) may
/// take to deliver its bytes.
pub const SLOW_FILE: Duration = Duration::from_secs(10);

/// Above this size a Certificate message is refused by common clients:
/// rustls accepts handshake messages of at most 64 KiB; by default OpenSSL
/// certificate lists of at most 100 KiB, GnuTLS (libnbd's and qemu's TLS)
/// handshake messages of at most 128 KiB. Warned about.
const CLIENTS_ACCEPT: usize = 64 << 10;

/// A handshake's memory besides its certificate chain: rustls's state, the
/// client's messages (rustls reads handshake messages of at most 64 KiB),
/// the other messages of the server's flight.
const HANDSHAKE_BASE: usize = 96 << 10;

/// A TLS configuration that cannot be used, named with the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{what} {path}: {err}")]
    Read { what: &'static str, path: String, err: io::Error },
    #[error("{what} {path}: not PEM, or no {kind} in it ({detail})")]
    Pem { what: &'static str, path: String, kind: &'static str, detail: String },
    #[error("{what} {path}: {detail}")]
    Invalid { what: &'static str, path: String, detail: String },
    #[error("TLS certificate {cert} and key {key} do not go together: {detail}")]
    Mismatch { cert: String, key: String, detail: String },
}

/// Whether TLS is offered or required, and the rustls configuration.
#[derive(Clone)]
pub struct TlsSettings {
    pub mode: TlsMode,
    pub(super) acceptor: TlsAcceptor,
    /// Whether clients must present a certificate from the CA.
    pub verify_peer: bool,
    /// Bytes of the server's buffer budget (`ServerConfig::buffer_memory`)
    /// a TLS handshake takes until it ends: twice the Certificate message
    /// (rustls encodes the whole message, then a copy in records waits in
    /// its send buffer until the client reads it) and [`HANDSHAKE_BASE`].
    pub handshake_memory: usize,
    /// What is wrong but does not stop the server (a certificate out of its
    /// validity dates, a chain too large for common clients): for the log.
    pub warnings: Vec<String>,
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("mode", &self.mode)
            .field("verify_peer", &self.verify_peer)
            .field("handshake_memory", &self.handshake_memory)
            .field("warnings", &self.warnings)
            .finish()
    }
}

/// Reads `path`, refusing it past `limit` bytes without reading on: a
/// regular file by its size, anything else (a FIFO, a device such as
/// `/dev/zero`) as it is read. Opened non-blocking, so a FIFO with no writer
/// is an empty file rather than a hang, and one whose writer neither writes
/// nor closes is given up after [`SLOW_FILE`].
fn read(what: &'static str, path: &Path, limit: u64, why: &str) -> Result<Vec<u8>, TlsError> {
    let at = || path.display().to_string();
    let io_err = |err: io::Error| TlsError::Read { what, path: at(), err };
    let too_large =
        || TlsError::Invalid { what, path: at(), detail: format!("larger than {} MiB: {why}", limit >> 20) };
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(io_err)?;
    let regular = file.metadata().map_err(io_err)?.is_file();
    if regular && file.metadata().map_err(io_err)?.len() > limit {
        return Err(too_large());
    }
    let deadline = Instant::now() + SLOW_FILE;
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        if !regular && Instant::now() > deadline {
            return Err(TlsError::Invalid {
                what,
                path: at(),
                detail: format!(
                    "still not read whole after {} s (a FIFO or device that does not end?)",
                    SLOW_FILE.as_secs()
                ),
            });
        }
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.len() as u64 > limit {
                    return Err(too_large());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                let mut p = libc::pollfd { fd: file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one valid pollfd; the result is only a hint (the
                // loop reads again, or finds the deadline passed).
                unsafe { libc::poll(&mut p, 1, left.as_millis().clamp(1, 1000) as libc::c_int) };
            }
            Err(e) => return Err(io_err(e)),
        }
    }
}

/// The length of the TLS 1.3 Certificate message carrying `chain` (the
/// larger of the two versions': each entry has an extensions field).
pub fn certificate_message_len(chain: &[CertificateDer<'_>]) -> usize {
    // type (1), length (3), context (1 + 0), list length (3); per entry:
    // length (3), the DER, extensions length (2)
    8 + chain.iter().map(|c| 3 + c.len() + 2).sum::<usize>()
}

/// Whether each certificate of `chain` is within its validity dates now:
/// a warning for the server's own, and for the first other one that is not.
fn validity_warnings(path: &str, chain: &[CertificateDer<'_>]) -> Vec<String> {
    use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate};
    let now = ASN1Time::now();
    let mut warnings = Vec::new();
    for (i, der) in chain.iter().enumerate() {
        let which = if i == 0 {
            "the server's certificate".to_string()
        } else {
            format!("certificate {} of {}", i + 1, chain.len())
        };
        let v = match X509Certificate::from_der(der) {
            Ok((_, c)) => c.validity().clone(),
            Err(e) => {
                warnings.push(format!("TLS certificate {path}: {which}: its validity dates cannot be read ({e})"));
                break;
            }
        };
        let problem = if now < v.not_before {
            format!("is not valid before {}", v.not_before)
        } else if now > v.not_after {
            format!("expired on {}", v.not_after)
        } else {
            continue;
        };
        warnings.push(format!(
            "TLS certificate {path}: {which} {problem} (now {now}): clients that check it will refuse the handshake"
        ));
        if i > 0 {
            break; // one is enough to say the chain needs renewing
        }
    }
    warnings
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes =
        read(what, path, MAX_CERT_FILE, "more than the PEM of the largest certificate chain TLS can send (16 MiB)")?;
    let pem = |detail: String| TlsError::Pem { what, path: path.display().to_string(), kind: "CERTIFICATE", detail };
    let certs =
        CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>().map_err(|e| pem(e.to_string()))?;
    if certs.is_empty() {
        return Err(pem("no certificate found".into()));
    }
    Ok(certs)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsSettings {
    /// Reads the server's certificate chain and key (PEM), and with
    /// `client_ca` requires every client to present a certificate that
    /// chains to it. Every defect (missing, unreadable, larger than
    /// [`MAX_CERT_FILE`] or [`MAX_KEY_FILE`], not PEM, a chain over the TLS
    /// limit of [`MAX_HANDSHAKE_MESSAGE`], a key that is not the
    /// certificate's) is an error naming the file; certificates out of their
    /// validity dates, and chains too large for common clients, are
    /// [`warnings`](Self::warnings).
    pub fn load(mode: TlsMode, cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Self, TlsError> {
        let chain = certificates("TLS certificate", cert)?;
        let message = certificate_message_len(&chain);
        let cert_path = cert.display().to_string();
        if message > MAX_HANDSHAKE_MESSAGE {
            return Err(TlsError::Invalid {
                what: "TLS certificate",
                path: cert_path,
                detail: format!(
                    "a chain of {} certificate(s), {message} bytes as a TLS Certificate message: over the \
                     {MAX_HANDSHAKE_MESSAGE}-byte (16 MiB) limit of a TLS handshake message, so no client \
                     could ever receive it",
                    chain.len()
                ),
            });
        }
        let mut warnings = validity_warnings(&cert_path, &chain);
        if message > CLIENTS_ACCEPT {
            warnings.push(format!(
                "TLS certificate {cert_path}: a chain of {} certificate(s), {} KiB as a TLS Certificate message: \
                 clients refuse one over 64 KiB (rustls), 100 KiB (OpenSSL) or 128 KiB (GnuTLS: libnbd, \
                 qemu) by default, and each handshake holds about {} KiB of the buffer memory",
                chain.len(),
                message.div_ceil(1024),
                handshake_memory(message).div_ceil(1024)
            ));
        }
        let key_bytes = read("TLS key", key, MAX_KEY_FILE, "not a key file (a private key is a few KiB of PEM)")?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| TlsError::Pem {
            what: "TLS key",
            path: key.display().to_string(),
            kind: "PRIVATE KEY",
            detail: e.to_string(),
        })?;
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions");
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in certificates("TLS CA", ca)? {
                    roots.add(c).map_err(|e| TlsError::Invalid {
                        what: "TLS CA",
                        path: ca.display().to_string(),
                        detail: e.to_string(),
                    })?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider()).build().map_err(|e| {
                        TlsError::Invalid { what: "TLS CA", path: ca.display().to_string(), detail: e.to_string() }
                    })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        // rustls checks that the key is the certificate's (InconsistentKeys).
        let config = builder.with_single_cert(chain, key_der).map_err(|e| TlsError::Mismatch {
            cert: cert.display().to_string(),
            key: key.display().to_string(),
            detail: e.to_string(),
        })?;
        let mut s = Self::from_config(mode, Arc::new(config), client_ca.is_some());
        s.handshake_memory = handshake_memory(message);
        s.warnings = warnings;
        Ok(s)
    }

    /// From a ready rustls configuration (tests, embedders). Its handshakes
    /// are counted as with a small certificate chain: set
    /// [`handshake_memory`](Self::handshake_memory) for a large one.
    pub fn from_config(mode: TlsMode, config: Arc<rustls::ServerConfig>, verify_peer: bool) -> Self {
        TlsSettings {
            mode,
            acceptor: TlsAcceptor::from(config),
            verify_peer,
            handshake_memory: handshake_memory(4 << 10),
            warnings: Vec::new(),
        }
    }
}

/// What a handshake whose Certificate message is `message` bytes holds (see
/// [`TlsSettings::handshake_memory`]).
fn handshake_memory(message: usize) -> usize {
    2 * message + HANDSHAKE_BASE
}

/// Copies between a TLS session and the worker threads' end of a socket
/// pair until the threads close theirs (every reply sent): client bytes are
/// decrypted into `plain`, replies read from `plain` are encrypted out.
/// When the client closes, the threads see EOF and finish; when the threads
/// close, the session is closed (close_notify). Back-pressure passes through:
/// a full pair stops the pump reading the client, and a client that does
/// not read stops the pump reading replies.
pub(super) async fn pump<S>(tls: S, plain: tokio::net::UnixStream)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (tls_rd, mut tls_wr) = tokio::io::split(tls);
    let (plain_rd, mut plain_wr) = plain.into_split();
    let requests = async {
        let r = tokio::io::copy_buf(&mut BufReader::with_capacity(PUMP_BUFFER, tls_rd), &mut plain_wr).await;
        let _ = plain_wr.shutdown().await; // EOF for the reading thread
        r
    };
    let replies = async {
        let r = tokio::io::copy_buf(&mut BufReader::with_capacity(PUMP_BUFFER, plain_rd), &mut tls_wr).await;
        let _ = tls_wr.shutdown().await;
        r
    };
    tokio::pin!(requests, replies);
    let mut requests_done = false;
    loop {
        tokio::select! {
            r = &mut requests, if !requests_done => {
                requests_done = true;
                if let Err(e) = r {
                    log::debug!("TLS session: reading the client ended: {e}");
                }
            }
            r = &mut replies => {
                if let Err(e) = r {
                    log::debug!("TLS session: sending replies ended: {e}");
                }
                return;
            }
        }
    }
}
