//! `ssdcache whatif CACHE`: what the running server's shadow says another
//! policy, or a cache from ¼× to 4× this one, would do with the workload it
//! serves (`serve --whatif`), beside what the cache measured.

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use ssdcache::units::format_bytes;
use ssdcache_daemon::control::socket::{self as control, Reply};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct WhatIfArgs {
    /// The cache file a running `ssdcache serve` serves.
    cache: PathBuf,
    /// Print JSON: the shadow's curves, the running policy and size, the measured miss ratios.
    #[arg(long)]
    json: bool,
    /// Which counts: since the server started, or over the last hour.
    #[arg(long, value_enum, default_value = "start")]
    window: Window,
    /// The server's control socket (default: CACHE.ctl).
    #[arg(long)]
    control: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Window {
    Start,
    Hour,
}

pub fn run(a: WhatIfArgs) -> Result<()> {
    let path = a.control.clone().unwrap_or_else(|| control::default_path(&a.cache));
    let st = match control::request(&path, "status", Duration::from_secs(10))? {
        Reply::Ok(v) => v["status"].clone(),
        Reply::NotRunning(e) => bail!(
            "no server is running for {} (control socket {}: {e}); the what-if lives in a running server",
            a.cache.display(),
            path.display()
        ),
    };
    let w = &st["whatif"];
    if w.is_null() {
        bail!("the server of {} runs no what-if: start it with `serve --whatif` (on by default; `--whatif off` turns it off)", a.cache.display());
    }
    let n = |k: &str| st[k].as_u64().unwrap_or(0);
    let (hits, misses) = (n("read_hits") + n("write_hits"), n("read_misses") + n("write_misses"));
    let measured = (hits + misses > 0).then(|| misses as f64 / (hits + misses) as f64);
    let ratio = |m: u64, h: u64| (m + h > 0).then(|| m as f64 / (m + h) as f64);
    let curves = match a.window {
        Window::Start => &w["since_start"],
        Window::Hour => &w["last_hour"],
    };
    let cache_bytes = w["cache_bytes"].as_u64().unwrap_or(0);
    let running = st["policy"].as_str().unwrap_or("?");
    if a.json {
        let out = json!({
            "policy": running, "cache_bytes": cache_bytes,
            "window": match a.window { Window::Start => "since start", Window::Hour => "last hour" },
            "window_seconds": match a.window { Window::Start => st["uptime"].clone(), Window::Hour => w["last_hour_seconds"].clone() },
            "sample_rate": w["sample_rate"], "memory_bytes": w["memory_bytes"],
            "requests": w["requests"], "dropped": w["dropped"],
            "measured": {
                "miss_ratio": measured,
                "read_miss_ratio": ratio(n("read_misses"), n("read_hits")),
                "write_miss_ratio": ratio(n("write_misses"), n("write_hits")),
            },
            "curves": curves,
        });
        println!("{out}");
        return Ok(());
    }
    let pct = |v: &Value| v.as_f64().map_or("-".to_string(), |r| format!("{:.2} %", 100.0 * r));
    let window = match a.window {
        Window::Start => format!("since the start ({:.0} s)", st["uptime"].as_f64().unwrap_or(0.0)),
        Window::Hour => format!("over the last {:.0} s", w["last_hour_seconds"].as_f64().unwrap_or(0.0)),
    };
    println!(
        "what-if {window}: {} request(s) seen, {} dropped; segments sampled at {:.4} ({} of memory)",
        w["requests"],
        w["dropped"],
        w["sample_rate"].as_f64().unwrap_or(0.0),
        format_bytes(w["memory_bytes"].as_u64().unwrap_or(0))
    );
    println!(
        "this cache: {running}, {}; measured miss ratio {} since the start",
        format_bytes(cache_bytes),
        pct(&json!(measured))
    );
    for c in curves.as_array().into_iter().flatten() {
        let policy = c["policy"].as_str().unwrap_or("?");
        println!();
        println!("{policy}{}", if policy == running { "  (running)" } else { "" });
        println!(
            "  {:>10}  {:>9}  {:>9}  {:>9}  {:>12}  {:>12}",
            "cache", "miss", "read", "write", "backing rd", "backing wr"
        );
        for p in c["points"].as_array().into_iter().flatten() {
            let bytes = p["cache_bytes"].as_u64().unwrap_or(0);
            let mark = if bytes == cache_bytes { "*" } else { " " };
            let b = |k: &str| format_bytes(p[k].as_f64().unwrap_or(0.0) as u64);
            println!(
                "{mark} {:>10}  {:>9}  {:>9}  {:>9}  {:>12}  {:>12}",
                format_bytes(bytes),
                pct(&p["miss_ratio"]),
                pct(&p["read_miss_ratio"]),
                pct(&p["write_miss_ratio"]),
                b("backing_read_bytes"),
                b("backing_write_bytes")
            );
        }
    }
    println!("\n(* this cache's size; miss ratios over segment accesses; backing traffic estimated over the window)");
    Ok(())
}
