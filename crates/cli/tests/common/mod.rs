//! What the `ssdcache serve` test files share: a cache over a fresh backing
//! file, and stopping a server as a user would.
#![allow(dead_code)] // each test file uses part of it

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_ssdcache");

/// `ssdcache create --segment 128KiB ARGS` of `cache.img` over a new
/// `backing_bytes` `backing.img` in `dir`; (cache, backing). Panics with
/// create's stderr if it fails.
pub fn make_cache(dir: &Path, backing_bytes: u64, args: &[&str]) -> (PathBuf, PathBuf) {
    let cache = dir.join("cache.img");
    let backing = dir.join("backing.img");
    std::fs::File::create(&backing).unwrap().set_len(backing_bytes).unwrap();
    let out = Command::new(BIN)
        .args(["create", "--segment", "128KiB"])
        .args(args)
        .arg(&cache)
        .arg(&backing)
        .output()
        .unwrap();
    assert!(out.status.success(), "create: {}", String::from_utf8_lossy(&out.stderr));
    (cache, backing)
}

/// SIGTERM, then waits (at most 30 s) for the exit: its status.
pub fn terminate(child: &mut Child) -> i32 {
    let ok = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status().unwrap();
    assert!(ok.success(), "kill -TERM {}", child.id());
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
