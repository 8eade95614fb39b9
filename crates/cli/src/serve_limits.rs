//! `ssdcache serve`'s limits on connections, memory and threads (flattened
//! into `ServeArgs`; see docs/serve.md "Limits"). A flag left out keeps
//! [`ServerConfig::default`]'s value.

use anyhow::{bail, Result};
use clap::Args;
use ssdcache::units::{format_bytes, parse_bytes, parse_duration_ns};
use ssdcache_server::ServerConfig;
use std::time::Duration;

#[derive(Args, Debug, Default)]
pub struct LimitArgs {
    /// Connections served at once [default: 256]. When full, a new client takes the place of
    /// the connection negotiating longest, else of one idle for --idle-timeout, else it is refused.
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Time a client has to finish the NBD handshake [default: 30s].
    #[arg(long, value_name = "DURATION")]
    handshake_timeout: Option<String>,
    /// When the server is full, a connection with no request for this long may be closed to
    /// admit a new client [default: 60s].
    #[arg(long, value_name = "DURATION")]
    idle_timeout: Option<String>,
    /// Memory for request payloads and reply data in flight across all connections, and for
    /// TLS handshakes in progress (at least the 32 MiB maximum block size) [default: 256MiB].
    #[arg(long, value_name = "SIZE")]
    buffer_memory: Option<String>,
    /// Worker threads across all connections [default: 128].
    #[arg(long, value_name = "N")]
    max_threads: Option<usize>,
    /// A connection whose request or reply makes no progress for this long while other
    /// connections wait for memory or a thread is closed [default: 30s].
    #[arg(long, value_name = "DURATION")]
    stall_timeout: Option<String>,
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let ns = parse_duration_ns(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    if ns == 0 {
        bail!("{flag} must be positive");
    }
    Ok(Duration::from_nanos(ns))
}

fn count(flag: &str, n: usize) -> Result<usize> {
    if n == 0 {
        bail!("{flag} must be at least 1");
    }
    Ok(n)
}

impl LimitArgs {
    /// The server's configuration, checked.
    pub fn server_config(&self) -> Result<ServerConfig> {
        let mut c = ServerConfig::default();
        if let Some(n) = self.max_connections {
            c.max_connections = count("--max-connections", n)?;
        }
        if let Some(n) = self.max_threads {
            c.max_threads = count("--max-threads", n)?;
        }
        if let Some(t) = &self.handshake_timeout {
            c.handshake_timeout = duration("--handshake-timeout", t)?;
        }
        if let Some(t) = &self.idle_timeout {
            c.idle_timeout = duration("--idle-timeout", t)?;
        }
        if let Some(t) = &self.stall_timeout {
            c.stall_timeout = duration("--stall-timeout", t)?;
        }
        if let Some(b) = &self.buffer_memory {
            let n = parse_bytes(b).map_err(|e| anyhow::anyhow!("--buffer-memory: {e}"))?;
            if n < c.max_block as u64 {
                bail!(
                    "--buffer-memory {b}: must be at least the maximum block size ({}), or a request of that size could never be served",
                    format_bytes(c.max_block as u64)
                );
            }
            c.buffer_memory = usize::try_from(n).unwrap_or(usize::MAX);
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_servers() {
        let c = LimitArgs::default().server_config().unwrap();
        let d = ServerConfig::default();
        assert_eq!(
            (c.max_connections, c.handshake_timeout, c.idle_timeout, c.buffer_memory, c.max_threads, c.stall_timeout),
            (d.max_connections, d.handshake_timeout, d.idle_timeout, d.buffer_memory, d.max_threads, d.stall_timeout)
        );
    }

    #[test]
    fn flags_are_checked() {
        let a = LimitArgs {
            max_connections: Some(4),
            handshake_timeout: Some("2s".into()),
            idle_timeout: Some("5m".into()),
            buffer_memory: Some("1GiB".into()),
            max_threads: Some(8),
            stall_timeout: Some("10s".into()),
        };
        let c = a.server_config().unwrap();
        assert_eq!(c.max_connections, 4);
        assert_eq!(c.handshake_timeout, Duration::from_secs(2));
        assert_eq!(c.idle_timeout, Duration::from_secs(300));
        assert_eq!(c.buffer_memory, 1 << 30);
        assert_eq!(c.max_threads, 8);
        assert_eq!(c.stall_timeout, Duration::from_secs(10));
        let bad = |a: LimitArgs| a.server_config().unwrap_err().to_string();
        assert!(bad(LimitArgs { max_connections: Some(0), ..Default::default() }).contains("--max-connections"));
        assert!(bad(LimitArgs { max_threads: Some(0), ..Default::default() }).contains("--max-threads"));
        assert!(bad(LimitArgs { idle_timeout: Some("0s".into()), ..Default::default() }).contains("--idle-timeout"));
        assert!(bad(LimitArgs { handshake_timeout: Some("x".into()), ..Default::default() })
            .contains("--handshake-timeout"));
        assert!(bad(LimitArgs { buffer_memory: Some("16MiB".into()), ..Default::default() })
            .contains("at least the maximum block size"));
    }
}
