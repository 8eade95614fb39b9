//! `ssdcache serve`'s network flags (flattened into `ServeArgs`; see
//! docs/serve.md "Serving over a network"): where to listen (TCP or a Unix
//! socket), TLS with rustls, client certificates, and the refusal to serve
//! clear text beyond loopback unless `--insecure`.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use ssdcache_nbd::handshake::TlsMode;
use ssdcache_server::{ListenAddr, TlsSettings};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum TlsFlag {
    /// Clear text only (NBD_OPT_STARTTLS unsupported).
    #[default]
    Off,
    /// TLS offered; clients may also connect in clear text.
    On,
    /// TLS before anything else: other options are refused and the export list is hidden.
    Require,
}

#[derive(Args, Debug)]
pub struct NetArgs {
    /// Where to listen: IP:PORT (loopback unless told otherwise; port 0 picks a free one and
    /// `listening on ADDR` tells which) or unix:PATH (a Unix socket created mode 0600, removed
    /// at a clean stop; clients use nbd+unix:///EXPORT?socket=PATH).
    #[arg(long, default_value = "127.0.0.1:10809", value_parser = parse_listen)]
    listen: ListenAddr,
    /// TLS (NBD_OPT_STARTTLS, rustls): off, on (offered) or require (nothing but STARTTLS before it).
    #[arg(long, value_enum, default_value_t = TlsFlag::Off)]
    tls: TlsFlag,
    /// The server's certificate chain (PEM), with --tls on|require.
    #[arg(long, value_name = "PEM")]
    tls_cert: Option<PathBuf>,
    /// The server's private key (PEM), with --tls on|require.
    #[arg(long, value_name = "PEM")]
    tls_key: Option<PathBuf>,
    /// CA certificate(s) (PEM) that client certificates must chain to (with --tls-verify-peer).
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Only clients presenting a certificate signed by --tls-ca get in.
    #[arg(long)]
    tls_verify_peer: bool,
    /// Pre-shared keys (nbdkit/qemu `username:hexkey` file): NOT SUPPORTED (rustls has no TLS 1.3
    /// external PSK); refused with an explanation.
    #[arg(long, value_name = "FILE")]
    tls_psk: Option<PathBuf>,
    /// Serve clear text on an address other machines can reach (without TLS anyone who can
    /// reach the port can read and overwrite the whole disk).
    #[arg(long)]
    insecure: bool,
}

fn parse_listen(s: &str) -> Result<ListenAddr, String> {
    s.parse()
}

/// Why `--tls-psk` is refused.
pub const PSK_UNSUPPORTED: &str = "--tls-psk: TLS pre-shared keys are not supported: rustls 0.23, the TLS \
library used here, has no TLS 1.3 external PSK (rustls issue #174); use certificates instead \
(--tls-cert/--tls-key, and --tls-ca with --tls-verify-peer to authenticate clients)";

impl NetArgs {
    /// The address to listen on and the TLS settings, checked and loaded
    /// (every file read now, so a bad one fails before the cache is opened).
    pub fn resolve(&self) -> Result<(ListenAddr, Option<TlsSettings>)> {
        let listen = self.listen.clone();
        if self.tls_psk.is_some() {
            bail!("{PSK_UNSUPPORTED}");
        }
        // (checked here rather than by clap's `requires`, whose error is a usage block, not one line)
        match (self.tls_ca.is_some(), self.tls_verify_peer) {
            (true, false) => bail!("--tls-ca is only used with --tls-verify-peer: add it, or leave --tls-ca out"),
            (false, true) => bail!("--tls-verify-peer needs --tls-ca, the CA client certificates must chain to"),
            _ => {}
        }
        let mode = match self.tls {
            TlsFlag::Off => TlsMode::Off,
            TlsFlag::On => TlsMode::On,
            TlsFlag::Require => TlsMode::Require,
        };
        let tls = match (mode, &self.tls_cert, &self.tls_key) {
            (TlsMode::Off, None, None) if !self.tls_verify_peer => None,
            (TlsMode::Off, ..) => {
                bail!("--tls-cert, --tls-key and --tls-verify-peer need --tls on or --tls require")
            }
            (_, Some(cert), Some(key)) => Some(TlsSettings::load(mode, cert, key, self.tls_ca.as_deref())?),
            _ => bail!("--tls on|require needs both --tls-cert and --tls-key"),
        };
        if tls.is_none() && listen.reachable_from_network() && !self.insecure {
            bail!(
                "--listen {listen}: refusing to serve clear text beyond loopback (anyone who can reach the port \
                 could read and overwrite the disk): use --tls require with --tls-cert/--tls-key, listen on \
                 loopback or unix:PATH, or pass --insecure"
            );
        }
        Ok((listen, tls))
    }
}
