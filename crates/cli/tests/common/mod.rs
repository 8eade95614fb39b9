//! What the `ssdcache serve` test files share: a cache over a fresh backing
//! file, and stopping a server as a user would.
#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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

/// Starts `cmd` (a `serve`), its stderr to `err`, and reads its stdout up to
/// `listening on ADDR` (then goes on draining it, as the server keeps it
/// open): the child and ADDR. Panics with the server's stderr if it exits first.
pub fn spawn_listening(cmd: &mut Command, err: &Path) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(std::fs::File::create(err).unwrap()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.by_ref().map_while(Result::ok).find(|l| l.starts_with("listening on "));
    std::thread::spawn(move || lines.for_each(drop));
    let Some(line) = line else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the server did not start: {}", std::fs::read_to_string(err).unwrap_or_default());
    };
    (child, line["listening on ".len()..].to_string())
}
