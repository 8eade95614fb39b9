//! `ssdcache set CACHE KEY=VALUE…`: change a cache's settings now (through
//! its running server's control socket) and keep them in the cache file; with
//! no server running, keep them for its next start. `--list` shows the keys
//! and the values kept.

use anyhow::{bail, Result};
use clap::Args;
use ssdcache_daemon::control::socket::{self as control, Reply};
use ssdcache_engine::settings::KEYS;
use ssdcache_engine::{files, FileDevice, Superblock};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct SetArgs {
    /// The cache file.
    cache: PathBuf,
    /// Settings to change, KEY=VALUE each (KEY=none, or policy=default: back to the default); `--list` names the keys.
    assignments: Vec<String>,
    /// List the keys and the values the cache file keeps, and change nothing.
    #[arg(long)]
    list: bool,
    /// The server's control socket (default: CACHE.ctl).
    #[arg(long)]
    control: Option<PathBuf>,
}

pub fn run(a: SetArgs) -> Result<()> {
    if a.list || a.assignments.is_empty() {
        return list(&a);
    }
    let path = a.control.clone().unwrap_or_else(|| control::default_path(&a.cache));
    let line = format!("set {}", serde_json::to_string(&a.assignments)?);
    // Leaving write-back writes every dirty segment back first: that may
    // take as long as the disk needs, shown as it goes and stopped by Ctrl-C.
    let reply = if a.assignments.iter().any(|s| s.trim_start().starts_with("mode")) {
        let (reply, interrupted) = crate::serve_cmd::with_write_back_progress(&path, "set", || {
            control::request(&path, &line, Duration::from_secs(30 * 24 * 3600))
        });
        if interrupted {
            // Stopped by Ctrl-C: say what the server answered, and exit as
            // a command ended by SIGINT does (the cache stays write-back).
            if let Err(e) = &reply {
                eprintln!("ssdcache: error: {e:#}");
            }
            std::process::exit(130);
        }
        reply?
    } else {
        control::request(&path, &line, Duration::from_secs(600))?
    };
    match reply {
        Reply::Ok(v) => {
            let kept: Vec<String> = serde_json::from_value(v["settings"].clone()).unwrap_or_default();
            println!("set and kept in {}: {}", a.cache.display(), kept_text(&kept));
            Ok(())
        }
        Reply::NotRunning(_) => {
            let kept = files::set_offline(&a.cache, &a.assignments).map_err(anyhow::Error::msg)?;
            println!("no server runs for {}: kept for its next start: {}", a.cache.display(), kept_text(&kept));
            Ok(())
        }
    }
}

/// The settings kept, `KEY=VALUE` each, or "nothing set".
fn kept_text(kept: &[String]) -> String {
    if kept.is_empty() {
        "nothing set".into()
    } else {
        kept.join(" ")
    }
}

fn list(a: &SetArgs) -> Result<()> {
    if !a.assignments.is_empty() {
        bail!("--list changes nothing: give it no KEY=VALUE");
    }
    let dev = FileDevice::open(&a.cache).map_err(|e| anyhow::anyhow!("{}: {e}", a.cache.display()))?;
    let sb = Superblock::read(&dev).map_err(|e| anyhow::anyhow!("{}: {e}", a.cache.display()))?;
    println!(
        "keys (ssdcache set {} KEY=VALUE…; KEY=none, or policy=default, goes back to the default):",
        a.cache.display()
    );
    for (k, about) in KEYS {
        println!("  {k:<14} {about}");
    }
    let kept = sb.settings.get().describe();
    println!("kept in the cache file: {}", if kept.is_empty() { "nothing".into() } else { kept.join(" ") });
    Ok(())
}
