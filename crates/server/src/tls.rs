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
//! per byte and an async task per TLS connection; `scripts/bench_serve.sh`
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
use std::io;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_rustls::TlsAcceptor;

/// Bytes a pump moves per read (TLS records are at most 16 KiB; several
/// fit, so a large READ reply crosses in few calls).
const PUMP_BUFFER: usize = 256 << 10;

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
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings").field("mode", &self.mode).field("verify_peer", &self.verify_peer).finish()
    }
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|err| TlsError::Read { what, path: path.display().to_string(), err })
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(what, path)?;
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
    /// chains to it. Every defect (missing, unreadable, not PEM, a key that
    /// is not the certificate's) is an error naming the file.
    pub fn load(mode: TlsMode, cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Self, TlsError> {
        let chain = certificates("TLS certificate", cert)?;
        let key_bytes = read("TLS key", key)?;
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
        Ok(Self::from_config(mode, Arc::new(config), client_ca.is_some()))
    }

    /// From a ready rustls configuration (tests, embedders).
    pub fn from_config(mode: TlsMode, config: Arc<rustls::ServerConfig>, verify_peer: bool) -> Self {
        TlsSettings { mode, acceptor: TlsAcceptor::from(config), verify_peer }
    }
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
