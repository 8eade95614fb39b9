//! `ssdcache record CACHE start PATH | stop`: a running server records every
//! request it answers to a trace `sim` reads (`serve --record` from the
//! start); and the flags both share.

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use ssdcache::units::{format_bytes, parse_bytes};
use ssdcache_daemon::control::socket::{self as control, Reply};
use ssdcache_engine::record::{RecordConfig, DEFAULT_KEEP};
use std::path::PathBuf;
use std::time::Duration;

/// How big a recording may grow (`serve --record-max-size`, `record start --max-size`).
#[derive(Args, Debug, Clone)]
pub struct RecordBounds {
    /// Rotate the recording once its file reaches this size (e.g. 1GiB; at least 1 MiB): it is
    /// renamed PATH.1 (older ones PATH.2, …) and a new PATH begins. Default: no rotation.
    #[arg(long = "record-max-size", value_name = "SIZE")]
    pub max_size: Option<String>,
    /// Older recording files kept when rotating (the disk holds at most (KEEP + 1) x SIZE).
    #[arg(long = "record-keep", value_name = "N", default_value_t = DEFAULT_KEEP)]
    pub keep: u32,
}

impl RecordBounds {
    /// The recording to `path` within these bounds (checked by the server).
    pub fn config(&self, path: PathBuf) -> Result<RecordConfig> {
        let max_size = self
            .max_size
            .as_deref()
            .map(parse_bytes)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--record-max-size: {e}"))?;
        // An absolute path: the server resolves it, from another directory.
        let path = std::path::absolute(&path).unwrap_or(path);
        Ok(RecordConfig { path, max_size, keep: self.keep })
    }
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The cache file a running `ssdcache serve` serves.
    cache: PathBuf,
    #[command(subcommand)]
    action: RecordAction,
    /// The server's control socket (default: CACHE.ctl).
    #[arg(long, global = true)]
    control: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum RecordAction {
    /// Start recording to PATH (zstd-compressed; created, or truncated).
    Start {
        path: PathBuf,
        #[command(flatten)]
        bounds: RecordBounds,
    },
    /// Stop the recording (what is queued is written, then its end marker).
    Stop,
}

pub fn run(a: RecordArgs) -> Result<()> {
    let path = a.control.clone().unwrap_or_else(|| control::default_path(&a.cache));
    let line = match &a.action {
        RecordAction::Start { path, bounds } => {
            format!("record-start {}", serde_json::to_string(&bounds.config(path.clone())?)?)
        }
        RecordAction::Stop => "record-stop".to_string(),
    };
    match control::request(&path, &line, Duration::from_secs(60))? {
        Reply::Ok(v) => {
            let r = &v["recording"];
            let n = |k: &str| r[k].as_u64().unwrap_or(0);
            match a.action {
                RecordAction::Start { .. } => println!("recording to {}", r["path"].as_str().unwrap_or("?")),
                RecordAction::Stop => println!(
                    "recording to {} stopped: {} record(s), {} dropped, {} written",
                    r["path"].as_str().unwrap_or("?"),
                    n("records"),
                    n("dropped"),
                    format_bytes(n("bytes"))
                ),
            }
            Ok(())
        }
        Reply::NotRunning(e) => bail!(
            "no server is running for {} (control socket {}: {e}); `serve --record PATH` records from the start",
            a.cache.display(),
            path.display()
        ),
    }
}
