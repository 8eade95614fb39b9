//! Runs that need the whole trace first (a device's layout, Belady's next
//! uses, a queueing replay) stream it: on a generated 10 M-request trace
//! their peak heap stays in proportion to the footprint (10,000 pages), far
//! below the trace (10 M requests of 24 bytes = 240 MB in memory; Belady's
//! next uses alone 80 MB more).

use std::process::{Command, Output};

/// Runs `ssdcache sim ARGS` with heap statistics on.
fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ssdcache"))
        .arg("sim")
        .args(args)
        .env("SSDCACHE_HEAP_STATS", "1")
        .output()
        .expect("run ssdcache")
}

fn heap_peak(o: &Output) -> u64 {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = err.lines().find_map(|l| l.strip_prefix("heap peak bytes: ")).expect("heap statistics on stderr");
    line.trim().parse().unwrap()
}

const MB: u64 = 1 << 20;
const TEN_M: &str = "zipf(keys=10000,requests=10M,seed=1)";

#[test]
fn device_and_belady_runs_on_10m_requests_stream() {
    for args in [
        &["-p", "lru", "--device", "ftl(nand=mlc2)"][..],
        &["-p", "belady", "--device", "ftl(nand=slc,size=footprint)", "--cache-device", "ssd"],
    ] {
        let o = sim(&[&["--gen", TEN_M, "-c", "16MiB", "--json"][..], args].concat());
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON report");
        assert_eq!(report["requests"], 10_000_000, "{args:?}");
        assert!(heap_peak(&o) < 20 * MB, "{args:?}: heap peak {}", heap_peak(&o));
    }
}

#[test]
fn a_queueing_replay_of_2m_requests_streams() {
    let o = sim(&["--gen", "zipf(keys=10000,requests=2M,seed=1)", "-p", "lru", "-c", "16MiB"]
        .into_iter()
        .chain(["--device", "ftl(nand=ull)", "--queue-depth", "32", "--json"])
        .collect::<Vec<_>>());
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a JSON report");
    assert_eq!(report["completed_requests"], 2_000_000);
    assert!(heap_peak(&o) < 20 * MB, "heap peak {}", heap_peak(&o));
}

#[test]
fn no_room_for_the_next_use_spill_is_a_one_line_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_ssdcache"))
        .args(["sim", "--gen", "zipf(keys=100,requests=1000)", "-p", "belady", "-c", "64KiB"])
        .env("TMPDIR", "/nonexistent/ssdcache-test")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ssdcache: error: ") && err.contains("next-use spill file") && err.contains("$TMPDIR"),
        "{err}"
    );
}
