//! `sim` predicts what the background cleaner of `serve` writes back: one
//! trace replayed through `ssdcache sim --policy 'pwc(max_dirty=25%)'` and
//! through `ssdcache serve --max-dirty 25%` (scripts/tools/replay_nbd.py).
//!
//! The trace: day 0 writes 12 segments once (none cached: they go to the
//! backing file); the procedure between the days (`sim`: PWC's period of
//! 24 h; `serve`: `ssdcache maintain`) caches all 12 (the first fill takes
//! everything touched); day 1 writes 4 KiB blocks into them (skewed), 400
//! times, then reads once. `sim` cleans at every request, before serving
//! it; `serve`'s cleaner runs in the background, so the replay goes one
//! request at a time and waits after each until the dirty share is back
//! within the bound (`--settle`). Then the decisions are the same, and so
//! are the segments written back (none is dirty at the procedure, so every
//! maintenance write of `sim` is the cleaner's).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{make_cache, require_libnbd, slow_server, write_200_segments, Server, BIN, PY};
const SEG_SECTORS: u64 = 256; // 128 KiB

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The trace of the module doc, in SSDsim text (`time_ns dev lba size op`).
fn trace(path: &Path) {
    let mut lines = Vec::new();
    for s in 0..12u64 {
        lines.push(format!("{} 0 {} 8 0", s * 1_000_000_000, s * SEG_SECTORS));
    }
    let day = 86_400_000_000_000u64;
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..400u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let seg = ((x >> 33) % 12).min((x >> 45) % 12);
        let block = (x >> 20) % 32;
        lines.push(format!("{} 0 {} 8 0", day + i * 1_000_000, seg * SEG_SECTORS + block * 8));
    }
    lines.push(format!("{} 0 0 8 1", day + 500 * 1_000_000));
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn sim_predicts_the_segments_the_cleaner_writes_back() {
    cleaner_agrees(&["--max-dirty", "25%"], "pwc(segment=128KiB,max_dirty=25%)", true);
}

/// The same with a low watermark: over 25 % dirty, the cleaner writes back
/// until at most 10 % are (`--clean-to`, the simulator's `clean_to`).
#[test]
fn sim_predicts_the_write_backs_of_a_cleaner_with_a_low_watermark() {
    cleaner_agrees(
        &["--max-dirty", "25%", "--clean-to", "10%"],
        "pwc(segment=128KiB,max_dirty=25%,clean_to=10%)",
        false,
    );
}

/// The trace replayed through `serve FLAGS` (one request at a time, each
/// followed by waiting until the cleaner is idle within the bound) and
/// through `sim --policy SPEC`: the cleaner wrote back the same segments.
/// `ends_at_bound`: the trace's last writes leave exactly the bound dirty.
fn cleaner_agrees(flags: &[&str], spec: &str, ends_at_bound: bool) {
    require_libnbd();
    let py = PY;
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.txt");
    let (cache, backing) = make_cache(dir.path(), 4 << 20, &["--size", "2MiB"]);
    trace(&t);

    let err = dir.path().join("serve.err");
    let mut serve = Command::new(BIN);
    serve.arg("serve").arg(&cache).arg(&backing).args(["--listen", "127.0.0.1:0"]).args(flags);
    let server = Server::start(&mut serve, &err);
    let nbd = server.nbd();
    let status = || -> Value {
        let mut c = Command::new(BIN);
        c.arg("status").arg(&cache).arg("--json");
        serde_json::from_str::<Value>(&run_ok(c)).unwrap()["status"].clone()
    };
    let slots = status()["ssd_segments"].as_u64().unwrap();
    let bound = slots / 4; // dirty > 25 % of the slots is over it
    let within: Vec<String> = (0..=bound).map(|n| n.to_string()).collect();
    // Within the bound, and the cleaner idle (with a low watermark it goes on
    // below the bound once it has started).
    let settle = format!(
        "s=$('{BIN}' status '{}' --json) && echo \"$s\" | grep -Eq '\"dirty\":({})[,}}]' && echo \"$s\" | grep -q '\"running\":false'",
        cache.display(),
        within.join("|")
    );
    let replay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tools/replay_nbd.py");
    let mut c = Command::new(py);
    c.arg(&replay).arg(format!("nbd://{nbd}")).arg(&t);
    c.arg("--between").arg(format!("'{BIN}' maintain '{}'", cache.display())).arg("--settle").arg(&settle);
    run_ok(c);
    let st = status();
    assert_eq!(server.stop(), 0);

    let mut c = Command::new(BIN);
    c.args(["sim", "--format", "ssdsim", "--page", "128KiB", "--mode", "write-back", "--json", "-t"]).arg(&t).args([
        "--cache",
        &format!("{}KiB", slots * 128),
        "--policy",
        spec,
    ]);
    let sim: Value = serde_json::from_str(run_ok(c).lines().next().unwrap()).unwrap();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    let cl = &st["cleaner"];
    println!(
        "sim: {} segments written back by maintenance (the cleaner), {} dirty at the end; serve: {} cleaned \
         ({} too many, {} too old), {} written back, {} dirty",
        n(&sim, "maintenance_writes"),
        n(&sim, "drain_writes"),
        n(cl, "cleaned_too_many") + n(cl, "cleaned_too_old"),
        n(cl, "cleaned_too_many"),
        n(cl, "cleaned_too_old"),
        n(&st, "written_back"),
        n(&st, "dirty")
    );
    assert_eq!(n(&st, "filled"), 12, "the procedure cached the 12 segments");
    assert!(n(&sim, "maintenance_writes") > 100, "the trace keeps the cleaner busy");
    assert_eq!(n(cl, "cleaned_too_old"), 0);
    assert_eq!(n(cl, "cleaned_too_many"), n(&sim, "maintenance_writes"), "segments the cleaner wrote back");
    assert_eq!(n(&st, "written_back"), n(cl, "cleaned_too_many"), "nothing else wrote back");
    assert_eq!(n(&st, "dirty"), n(&sim, "drain_writes"), "dirty at the end (sim drains them)");
    assert!(n(&st, "dirty") <= bound);
    if ends_at_bound {
        assert_eq!(n(&st, "dirty"), bound);
    }
}

/// `ssdcache flush` shows its progress in `status` and stops cleanly on
/// SIGINT: what was written back stays written back (and is no longer
/// dirty), the rest stays dirty. BACKING is made slow (the benchmark's HDD
/// model) so that the flush is still running when the signal comes.
#[test]
fn flush_shows_progress_and_stops_cleanly_on_sigint() {
    require_libnbd();
    let dir = tempfile::tempdir().unwrap();
    let (cache, server) = slow_server(dir.path(), &["-v"]);
    write_200_segments(server.nbd(), 1);
    let mut c = Command::new(BIN);
    c.arg("maintain").arg(&cache);
    run_ok(c); // caches the 200 segments
    write_200_segments(server.nbd(), 1); // now dirty
    let status = || -> Value {
        let mut c = Command::new(BIN);
        c.arg("status").arg(&cache).arg("--json");
        serde_json::from_str::<Value>(&run_ok(c)).unwrap()["status"].clone()
    };
    assert_eq!(status()["dirty"], 200);

    let mut flush = Command::new(BIN).arg("flush").arg(&cache).stdout(Stdio::piped()).spawn().unwrap();
    let t = std::time::Instant::now();
    let progress = loop {
        let f = status()["flush"].clone();
        if f["written_back"].as_u64().is_some_and(|n| n > 0) {
            break f;
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "no flush progress in status");
        assert!(flush.try_wait().unwrap().is_none(), "the flush ended before any progress was seen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(progress["total"], 200);
    let _ = Command::new("kill").args(["-INT", &flush.id().to_string()]).status();
    let out = flush.wait_with_output().unwrap();
    // Not finished: never exit 0 (`flush && backup` would back up an unflushed disk).
    assert_eq!(out.status.code(), Some(130), "an interrupted flush exited {:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let done: u64 = text
        .strip_prefix("interrupted: written back ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not an interrupted flush: {text:?}"));
    assert!(done < 200 && done >= progress["written_back"].as_u64().unwrap(), "{text}");
    let st = status();
    assert_eq!(st["dirty"].as_u64().unwrap(), 200 - done, "written back is no longer dirty, the rest is");
    assert!(st["flush"].is_null(), "no flush runs any more");
    // A flush to the end afterwards writes back the rest.
    let mut c = Command::new(BIN);
    c.arg("flush").arg(&cache);
    assert_eq!(run_ok(c).trim(), format!("written back: {} segment(s); both devices synced", 200 - done));
    assert_eq!(server.stop(), 0);
}
