//! `ssdcache sim` on compressed traces, run as the built binary: a whole .gz or
//! .zst reads every request (decoded on its own thread), and one cut short or
//! with a byte changed ends in a one-line error and exit status 2, never a hang.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LINES: usize = 30_000;

/// MSR lines, about 1.6 MB: several of the decoder thread's 256 KiB buffers.
fn msr_text() -> Vec<u8> {
    let mut out = String::new();
    let mut x: u64 = 88172645463325252;
    for i in 0..LINES as u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let op = ["Read", "Write", "Write"][(x % 3) as usize];
        out.push_str(&format!(
            "{},hm,0,{op},{},{},{}\n",
            128166372000000000 + i * 977,
            x % (1 << 25) * 512,
            512 << (x % 7),
            x % 9000
        ));
    }
    out.into_bytes()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8]) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Runs `ssdcache sim` on `path`; exit code, stdout, stderr. Fails the test if
/// the run has not ended after a minute (a hang, not a slow run: it takes well under a second).
fn sim(path: &std::path::Path) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ssdcache"))
        .args(["sim", "--trace"])
        .arg(path)
        .args(["--format", "msr", "--policy", "lru", "--cache", "1MiB", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("ssdcache sim on {} still runs after a minute", path.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn whole_damaged_and_cut_short_gz_and_zst() {
    let text = msr_text();
    let dir = tempfile::tempdir().unwrap();
    for (codec, packed) in [("gz", gz(&text)), ("zst", zst(&text))] {
        let path = dir.path().join(format!("trace.csv.{codec}"));
        std::fs::write(&path, &packed).unwrap();
        let (code, out, err) = sim(&path);
        assert_eq!(code, Some(0), "{codec}: {err}");
        let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(report["requests"], LINES as u64, "{codec}");

        let mut flipped = packed.clone();
        flipped[packed.len() / 2] ^= 0x55;
        for (what, bytes) in [("cut short", packed[..packed.len() / 2].to_vec()), ("a byte changed", flipped)] {
            std::fs::write(&path, &bytes).unwrap();
            let (code, out, err) = sim(&path);
            assert_eq!(code, Some(2), "{codec}, {what}: stdout {out:?}, stderr {err:?}");
            assert_eq!(err.lines().count(), 1, "{codec}, {what}: not one line: {err:?}");
            assert!(err.starts_with("ssdcache: error: ") && err.contains("trace.csv."), "{codec}, {what}: {err:?}");
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}
