//! `ssdcache set`: a running write-back cache's policy and cleaner changed
//! without a restart while a real client (python3-libnbd) writes through
//! every switch and reads everything back; the settings kept across a
//! restart; offline changes; refusals that change nothing.

mod common;

use common::{make_cache, one_line_error, require_libnbd, slow_server, write_200_segments, Server, BIN, PY};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn set(cache: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN).arg("set").arg(cache).args(args).output().unwrap()
}

fn status(cache: &Path) -> Value {
    let mut c = Command::new(BIN);
    c.arg("status").arg(cache).arg("--json");
    serde_json::from_str::<Value>(&run_ok(c)).unwrap()["status"].clone()
}

/// Writes round `r`'s pattern into 48 segments of 128 KiB (4 KiB each, at
/// an offset that moves with `r`), flushes, and reads back every round so far.
fn client(nbd: std::net::SocketAddr, r: u8) {
    let script = format!(
        "import nbd\nh = nbd.NBD()\nh.connect_uri('nbd://{nbd}')\n\
         for s in range(48): h.pwrite(bytes([(s * 7 + {r}) % 251 + 1]) * 4096, s * 131072 + {r} * 4096)\n\
         h.flush()\n\
         for q in range({r} + 1):\n\
         \x20   for s in range(48):\n\
         \x20       got = h.pread(4096, s * 131072 + q * 4096)\n\
         \x20       assert got == bytes([(s * 7 + q) % 251 + 1]) * 4096, (q, s)\n\
         h.shutdown()\n"
    );
    let mut c = Command::new(PY);
    c.args(["-c", &script]);
    run_ok(c);
}

#[test]
fn policy_and_cleaner_change_at_run_time_and_are_kept() {
    require_libnbd();
    let dir = tempfile::tempdir().unwrap();
    // 6 MiB of backing, 2 MiB of cache: 16 slots of 128 KiB for 48 segments.
    let (cache, backing) = make_cache(dir.path(), 6 << 20, &["--size", "2MiB"]);
    let err = dir.path().join("serve.err");
    let serve = || {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&cache).arg(&backing).args(["--listen", "127.0.0.1:0"]);
        c
    };
    let server = Server::start(&mut serve(), &err);
    assert!(status(&cache)["policy"].as_str().unwrap().starts_with("pwc"));
    client(server.nbd(), 0);

    let out = set(&cache, &["policy=lru", "max-dirty=25%"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("policy=lru max-dirty=25%"), "{out:?}");
    let st = status(&cache);
    assert_eq!(st["policy"], "lru");
    assert!(!st["cleaner"].is_null(), "the cleaner started with its bound: {st}");
    assert_eq!(st["cleaner"]["pace"], "adaptive", "the default pace: {st}");
    // Every cleaner key, the low watermark and the pace among them.
    let out = set(&cache, &["clean-to=10%", "clean-pace=gap", "clean-rate=64MiB", "dirty-age=1h"]);
    assert!(out.status.success(), "{out:?}");
    let c = &status(&cache)["cleaner"];
    assert_eq!((c["pace"].as_str(), c["clean_to"].as_f64()), (Some("gap"), Some(0.1)), "{c}");
    let out = set(&cache, &["clean-to=none", "clean-pace=default", "clean-rate=none", "dirty-age=none"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(status(&cache)["cleaner"]["pace"], "adaptive");
    client(server.nbd(), 1);
    let st = status(&cache);
    assert!(st["filled"].as_u64().unwrap() > 16, "LRU fills on misses: {st}");

    // Refused, nothing changed: an unknown key, a bad value, a policy that
    // does not decide on access, a flash block buffer.
    for (args, want) in [
        (&["colour=red"][..], "unknown setting `colour`"),
        (&["max-dirty=150%"][..], "max-dirty=150%"),
        (&["policy=belady"][..], "--policy belady"),
        (&["policy=fab"][..], "--policy fab"),
        (&["policy=s3fifo", "promote-after=0"][..], "promote-after=0"),
        (&["clean-pace=fast"][..], "clean-pace=fast: a pace: adaptive, gap, full"),
        (&["clean-to=30%"][..], "clean-to"),
    ] {
        one_line_error(&set(&cache, args), &[want]);
        assert_eq!(status(&cache)["policy"], "lru", "{args:?}");
    }

    let out = set(&cache, &["policy=s3fifo"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(status(&cache)["policy"], "s3fifo");
    client(server.nbd(), 2);
    let out = set(&cache, &["policy=pwc"]);
    assert!(out.status.success(), "{out:?}");
    client(server.nbd(), 3);
    // The mode at run time: write-back -> write-through writes every dirty
    // segment back first. Refused while the policy (PWC now) or the
    // cleaner's bound does not fit the new mode.
    one_line_error(&set(&cache, &["mode=write-through"]), &["--policy pwc: a write-through cache needs"]);
    one_line_error(&set(&cache, &["mode=write-through", "policy=lru"]), &["the cleaner's bounds apply to write-back"]);
    assert_eq!(status(&cache)["mode"], "write-back");
    let out = set(&cache, &["mode=write-through", "policy=lru", "max-dirty=none"]);
    assert!(out.status.success(), "{out:?}");
    let st = status(&cache);
    assert_eq!((st["mode"].as_str(), st["dirty"].as_u64()), (Some("write-through"), Some(0)), "{st}");
    client(server.nbd(), 4);
    assert_eq!(server.stop(), 0);
    // Kept across a restart, and back to write-back.
    let server = Server::start(&mut serve(), &err);
    assert_eq!(status(&cache)["mode"], "write-through");
    let out = set(&cache, &["mode=write-back", "policy=sieve", "max-dirty=25%"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(status(&cache)["mode"], "write-back");
    client(server.nbd(), 5);
    assert_eq!(server.stop(), 0);

    // Kept: a restart without flags runs SIEVE with the cleaner's bound.
    let server = Server::start(&mut serve(), &err);
    let st = status(&cache);
    assert_eq!((st["policy"].as_str(), st["mode"].as_str()), (Some("sieve"), Some("write-back")), "{st}");
    client(server.nbd(), 6);
    // A flag wins over the kept value for this run.
    assert_eq!(server.stop(), 0);
    let mut with_flag = serve();
    with_flag.args(["--policy", "arc"]);
    let server = Server::start(&mut with_flag, &err);
    assert_eq!(status(&cache)["policy"], "arc");
    client(server.nbd(), 7);
    assert_eq!(server.stop(), 0);

    // No server: kept for the next start, after the same checks.
    one_line_error(&set(&cache, &["mode=write-through"]), &["only under a running server"]);
    let out = set(&cache, &["policy=2q", "max-dirty=none"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no server runs"), "{out:?}");
    one_line_error(&set(&cache, &["policy=belady"]), &["--policy belady"]);
    let list = set(&cache, &["--list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("kept in the cache file: policy=2q") && !text.contains("max-dirty=25"), "{text}");
    let server = Server::start(&mut serve(), &err);
    assert_eq!(status(&cache)["policy"], "2q");
    client(server.nbd(), 8);
    assert_eq!(server.stop(), 0);
    let check = Command::new(BIN).arg("check").arg(&cache).output().unwrap();
    assert!(String::from_utf8_lossy(&check.stdout).contains("healthy"), "{check:?}");
}

/// A mode switch writing 200 dirty segments back to a slow BACKING (the
/// benchmark's HDD model) takes a while: a second `set` meanwhile is refused
/// at once, with the reason, and changes nothing; the switch completes.
#[test]
fn a_set_while_a_mode_switch_runs_is_refused() {
    require_libnbd();
    let dir = tempfile::tempdir().unwrap();
    let (cache, server) = slow_server(dir.path(), &["--policy", "lru"]);
    // Two passes: the first fills the 200 segments, the second dirties them.
    write_200_segments(server.nbd(), 2);
    assert!(status(&cache)["dirty"].as_u64().unwrap() >= 100, "{}", status(&cache));
    let switch = Command::new(BIN).arg("set").arg(&cache).args(["mode=write-through"]).spawn().unwrap();
    let t = std::time::Instant::now();
    while status(&cache)["flush"].is_null() {
        assert!(t.elapsed() < std::time::Duration::from_secs(30), "the switch's write-back never showed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    one_line_error(&set(&cache, &["policy=arc"]), &["another `set` is running"]);
    let done = switch.wait_with_output().unwrap();
    assert!(done.status.success(), "{done:?}");
    let st = status(&cache);
    assert_eq!(
        (st["mode"].as_str(), st["policy"].as_str(), st["dirty"].as_u64()),
        (Some("write-through"), Some("lru"), Some(0)),
        "{st}"
    );
    assert_eq!(server.stop(), 0);
}

/// `set mode=write-through` on a cache with 200 dirty segments over a slow
/// BACKING shows its drain in `status`, and Ctrl-C stops it cleanly: exit
/// 130 with the server's one line, the cache still write-back, what was
/// written back no longer dirty, and writes dirty again afterwards.
#[test]
fn a_mode_switch_stops_cleanly_on_sigint_and_stays_write_back() {
    require_libnbd();
    let dir = tempfile::tempdir().unwrap();
    let (cache, server) = slow_server(dir.path(), &["--policy", "lru"]);
    write_200_segments(server.nbd(), 2);
    let dirty = status(&cache)["dirty"].as_u64().unwrap();
    assert!(dirty >= 100, "{}", status(&cache));
    let switch = Command::new(BIN)
        .arg("set")
        .arg(&cache)
        .args(["mode=write-through"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while status(&cache)["flush"]["written_back"].as_u64().unwrap_or(0) == 0 {
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "the switch's write-back never showed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = Command::new("kill").args(["-INT", &switch.id().to_string()]).status();
    let out = switch.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("ssdcache: error:")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("stopped after writing back") && line.contains("still write-back"), "{err}");
    let st = status(&cache);
    assert_eq!(st["mode"], "write-back", "{st}");
    let left = st["dirty"].as_u64().unwrap();
    assert!(left > 0 && left < dirty, "{left} of {dirty} still dirty: {st}");
    // Dirtying resumed: a write to a cached segment is dirty again.
    write_200_segments(server.nbd(), 1);
    assert!(status(&cache)["dirty"].as_u64().unwrap() > left, "{}", status(&cache));
    assert_eq!(server.stop(), 0);
}
