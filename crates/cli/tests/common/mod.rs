//! What the `ssdcache serve` test files share: a cache over a fresh backing
//! file, and starting and stopping a server as a user would.
#![allow(dead_code)] // each test file uses part of it

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
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

/// A one-line CLI error: exit status `code` 2, and one line of `stderr`,
/// `ssdcache: error: ...`, that names each of `want`.
pub fn assert_one_line_error(code: i32, stderr: &str, want: &[&str]) {
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("ssdcache: error: "), "{stderr}");
    for w in want {
        assert!(stderr.contains(w), "{stderr:?} lacks {w:?}");
    }
}

/// [`assert_one_line_error`] of a finished command.
pub fn one_line_error(o: &Output, want: &[&str]) {
    assert_one_line_error(o.status.code().unwrap_or(-1), &String::from_utf8_lossy(&o.stderr), want);
}

/// Sends signal `sig` (TERM, INT, STOP, ...) to process `pid`.
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap();
    assert!(ok.success(), "kill -{sig} {pid}");
}

/// SIGTERM, then waits (at most 30 s) for the exit: its status.
pub fn terminate(child: &mut Child) -> i32 {
    signal(child.id(), "TERM");
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `ssdcache serve`, started by [`Server::start`]. Dropping it kills
/// (SIGKILL, which ends a stopped process too) and reaps the process, so a
/// failing test leaves no server behind.
pub struct Server {
    pub child: Child,
    /// What the server printed after `listening on `: HOST:PORT, or a Unix socket path.
    pub addr: String,
    /// What it printed after `metrics on ` before that, if anything.
    metrics: Option<String>,
}

impl Server {
    /// Starts `cmd` (a `serve`), its stderr to `err`, and waits (at most 20 s)
    /// for `listening on ADDR` on its stdout, which is drained after that (the
    /// server keeps it open). Panics with the server's stderr if it exits or
    /// stays silent instead.
    pub fn start(cmd: &mut Command, err: &Path) -> Server {
        let mut child = cmd.stdout(Stdio::piped()).stderr(std::fs::File::create(err).unwrap()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut metrics = None;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(a) = line.strip_prefix("metrics on ") {
                    metrics = Some(a.to_string());
                }
                if let Some(a) = line.strip_prefix("listening on ") {
                    let _ = tx.send((a.to_string(), metrics.take()));
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok((addr, metrics)) => Server { child, addr, metrics },
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not start: {}", std::fs::read_to_string(err).unwrap_or_default());
            }
        }
    }

    /// The NBD address, for a server listening on TCP.
    pub fn nbd(&self) -> SocketAddr {
        self.addr.parse().unwrap_or_else(|e| panic!("listening on {:?}: {e}", self.addr))
    }

    pub fn port(&self) -> u16 {
        self.nbd().port()
    }

    /// The `/metrics` address; panics if the server printed none.
    pub fn metrics(&self) -> SocketAddr {
        let m = self.metrics.as_deref().expect("the server printed no `metrics on` line");
        m.parse().unwrap_or_else(|e| panic!("metrics on {m:?}: {e}"))
    }

    /// Sends signal `sig` (TERM, STOP, ...).
    pub fn signal(&self, sig: &str) {
        signal(self.child.id(), sig);
    }

    /// Resident memory (VmRSS) in KiB.
    pub fn rss_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// SIGTERM, then the exit status (see [`terminate`]).
    pub fn stop(mut self) -> i32 {
        terminate(&mut self.child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's Python, where python3-libnbd installs its `nbd` module.
pub const PY: &str = "/usr/bin/python3";

/// Panics, saying how to get it, unless [`PY`] has the `nbd` module.
pub fn require_libnbd() {
    let has = Command::new(PY).args(["-c", "import nbd"]).output().is_ok_and(|o| o.status.success());
    assert!(has, "{PY} has no nbd module: apt-get install python3-libnbd (scripts/test/test_nbd.sh installs it)");
}

/// A server (with `flags`) over a 32 MiB cache of a 64 MiB BACKING made slow
/// by the benchmark's HDD model, so that writing segments back takes a while.
pub fn slow_server(dir: &Path, flags: &[&str]) -> (PathBuf, Server) {
    let (cache, backing) = make_cache(dir, 64 << 20, &["--size", "32MiB"]);
    let mut serve = Command::new(BIN);
    serve.arg("serve").arg(&cache).arg(&backing);
    serve.args(["--listen", "127.0.0.1:0", "--backing-model", "hdd(model=rpm7200,scale=1)"]).args(flags);
    let server = Server::start(&mut serve, &dir.join("serve.err"));
    (cache, server)
}

/// Writes 4 KiB into each of the first 200 segments of 128 KiB, `passes`
/// times, then flushes (python3-libnbd).
pub fn write_200_segments(nbd: SocketAddr, passes: u32) {
    let script = format!(
        "import nbd\nh = nbd.NBD()\nh.connect_uri('nbd://{nbd}')\n\
         for p in range({passes}):\n\
         \x20   for s in range(200): h.pwrite(bytes([s % 251 + 1]) * 4096, s * 131072)\nh.flush()\nh.shutdown()\n"
    );
    let out = Command::new(PY).args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "the writing client failed: {}", String::from_utf8_lossy(&out.stderr));
}
