//! `ssdcache serve | status | flush` as a user runs them, against hostile
//! surroundings. Loopback only; every wait is bounded.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ssdcache");

/// A 2 MiB write-back cache for a 4 MiB backing file in a temporary directory.
struct Fixture {
    _dir: tempfile::TempDir,
    cache: PathBuf,
    backing: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache.img");
        let backing = dir.path().join("backing.img");
        std::fs::File::create(&backing).unwrap().set_len(4 << 20).unwrap();
        let out = Command::new(BIN)
            .args(["create", "--size", "2MiB", "--segment", "128KiB"])
            .arg(&cache)
            .arg(&backing)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Fixture { _dir: dir, cache, backing }
    }

    fn serve_cmd(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&self.cache).arg(&self.backing).args(["--listen", "127.0.0.1:0"]).args(extra);
        c
    }
}

/// Runs a command for at most `limit`; (exit status, stderr, time taken).
/// A command still running at the limit is killed and reported as hung.
fn run(mut cmd: Command, limit: Duration) -> (i32, String, Duration) {
    let t = Instant::now();
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s.code().unwrap_or(-1), reader.join().unwrap(), t.elapsed());
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}: {}", reader.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A one-line CLI error: `ssdcache: error: ...`, exit status 2.
fn assert_one_line_error(code: i32, stderr: &str, want: &[&str]) {
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("ssdcache: error: "), "{stderr}");
    for w in want {
        assert!(stderr.contains(w), "{stderr:?} lacks {w:?}");
    }
}

#[test]
fn bad_limit_flags_are_one_line_errors() {
    let f = Fixture::new();
    for (flags, want) in [
        (&["--max-threads", "0"][..], "--max-threads must be at least 1"),
        (&["--stall-timeout", "0s"][..], "--stall-timeout must be positive"),
        (&["--stall-timeout", "soon"][..], "--stall-timeout"),
        (&["--buffer-memory", "1MiB"][..], "--buffer-memory 1MiB: must be at least the maximum block size"),
    ] {
        let (code, err, _) = run(f.serve_cmd(flags), Duration::from_secs(20));
        assert_one_line_error(code, &err, &[want]);
    }
}
