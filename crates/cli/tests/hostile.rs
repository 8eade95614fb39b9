//! `ssdcache sim`, `mrc` and `trace` on hostile input, run as the built binary: bad values are
//! one-line errors with exit status 2, and odd but valid input does not make
//! memory or threads grow without bound.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A file in the temp directory that removes itself.
struct Temp(PathBuf);

impl Temp {
    fn new(name: &str, bytes: &[u8]) -> Temp {
        let p = std::env::temp_dir().join(format!("ssdcache-hostile-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        Temp(p)
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `ssdcache sim ARGS` with heap statistics on.
fn sim(args: &[&str]) -> Output {
    ssdcache("sim", args)
}

/// Runs `ssdcache COMMAND ARGS` with heap statistics on.
fn ssdcache(command: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ssdcache"))
        .arg(command)
        .args(args)
        .env("SSDCACHE_HEAP_STATS", "1")
        .output()
        .expect("run ssdcache")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error without the heap statistics line.
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| !l.starts_with("heap peak bytes:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The peak heap the run reported.
fn heap_peak(o: &Output) -> u64 {
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().find_map(|l| l.strip_prefix("heap peak bytes: ")).expect("heap statistics on stderr");
    line.trim().parse().unwrap()
}

const MB: u64 = 1 << 20;

/// Exit status 0; the JSON report(s).
fn ok_json(o: &Output) -> Vec<serde_json::Value> {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    stdout(o).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Exit status 2 and a one-line error naming `what`.
fn one_line_error(o: &Output, what: &str) -> String {
    assert_eq!(o.status.code(), Some(2), "stdout: {}\nstderr: {}", stdout(o), stderr(o));
    let err = stderr(o);
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("ssdcache: error: ") && err.contains(what), "{err:?} does not name {what}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// (interval number, start_ns) of each row of a report's series.
fn rows(report: &serde_json::Value) -> Vec<(u64, u64)> {
    report["series"]
        .as_array()
        .expect("a series")
        .iter()
        .map(|b| (b["interval"].as_u64().unwrap(), b["start_ns"].as_u64().unwrap()))
        .collect()
}

const DAY_NS: u64 = 86_400_000_000_000;

#[test]
fn interval_1ns_over_a_day_keeps_only_the_busy_intervals() {
    // SSDsim ascii: time_ns dev lba size op. Dense, this series had 8.6e13 rows.
    let t = Temp::new("day", format!("0 0 100 8 1\n{DAY_NS} 0 200 8 0\n").as_bytes());
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "--interval", "1ns", "--json"]);
    let r = &ok_json(&o)[0];
    assert_eq!(rows(r), vec![(0, 0), (DAY_NS, DAY_NS)]);
    assert_eq!(r["series"][1]["requests"], 1);
    assert!(heap_peak(&o) < 50 * MB, "heap peak {}", heap_peak(&o));
    // The detail view numbers its rows by interval.
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "--interval", "1ns"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let numbers: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("interval"))
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(numbers, vec!["0", &DAY_NS.to_string()]);
}

#[test]
fn a_corrupt_far_future_timestamp_costs_one_row() {
    let t = Temp::new("future", b"0 0 100 8 1\n1000000000 0 200 8 0\n18000000000000000000 0 300 8 1\n");
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "--interval", "1s", "--json"]);
    let r = &ok_json(&o)[0];
    let far = 18_000_000_000_000_000_000u64;
    assert_eq!(rows(r), vec![(0, 0), (1, 1_000_000_000), (far / 1_000_000_000, far)]);
    assert!(heap_peak(&o) < 50 * MB, "heap peak {}", heap_peak(&o));
}

#[test]
fn more_busy_intervals_than_kept_is_a_one_line_error() {
    // 1,000,001 requests 1 µs apart, each in its own 1 ns interval.
    let gen = "zipf(keys=1000,requests=1000001,iat=1us,seed=1)";
    let o = sim(&["--gen", gen, "-p", "lru", "-c", "1MiB", "--interval", "1ns", "--json"]);
    let e = one_line_error(&o, "--interval");
    assert!(e.contains("more than 1000000") && e.contains("longer interval"), "{e}");
    assert!(stdout(&o).is_empty());
    // bounded by the cap: 1,000,000 intervals of 13 counters in a BTreeMap (210 MB measured)
    assert!(heap_peak(&o) < 300 * MB, "heap peak {}", heap_peak(&o));
}

/// Every policy the binary lists, and variants with the largest per-slot state.
fn every_policy() -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_ssdcache")).arg("policies").output().unwrap();
    let text = stdout(&o);
    let mut names: Vec<String> = text
        .lines()
        .take_while(|l| !l.starts_with("Admitters") && !l.starts_with("Modes"))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert!(names.len() > 20 && names.contains(&"pwc".to_string()), "{names:?}");
    names.extend(["pwc(segment=4KiB)", "bplru(block=65536)", "lirs(stack=0)"].map(String::from));
    names.extend(
        ["nhit", "bloom(bits=1000000)", "prob", "size", "seqcut"].map(|by| format!("admit(by={by},rule=wtinylfu)")),
    );
    names
}

#[test]
fn a_huge_cache_on_a_tiny_trace_allocates_what_the_trace_touches() {
    // 8 TiB is 2^31 pages of 4 KiB: sized up front, it aborted ("memory
    // allocation failed"); 1 TiB took 7 GB of heap for three requests.
    let t = Temp::new("three", b"0 0 100 8 1\n1000000000 0 200 8 0\n2000000000 0 300 8 1\n");
    for policy in every_policy() {
        let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", &policy, "-c", "8TiB", "--json"]);
        let r = &ok_json(&o)[0];
        assert_eq!(r["capacity_pages"], 1u64 << 31, "{policy}");
        assert!(heap_peak(&o) < 50 * MB, "{policy}: heap peak {}", heap_peak(&o));
    }
}

#[test]
fn auto_does_not_read_an_executable_or_random_bytes_as_keys() {
    // The ssdcache executable itself used to run as a keys-u32be trace.
    let exe = env!("CARGO_BIN_EXE_ssdcache");
    let o = sim(&["-t", exe, "-p", "lru", "-c", "1MiB"]);
    let e = one_line_error(&o, "--format");
    assert!(e.contains(exe) && e.contains("ELF executable"), "{e}");
    // Random bytes, a multiple of 4 long.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let random: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect();
    let t = Temp::new("random", &random);
    let o = sim(&["-t", t.path(), "-p", "lru", "-c", "1MiB"]);
    let e = one_line_error(&o, "--format");
    assert!(e.contains("cannot tell the trace format"), "{e}");
    // Named, the same bytes read as keys.
    let o = sim(&["-t", t.path(), "-f", "keys-u32be", "-p", "lru", "-c", "1MiB", "--json"]);
    assert_eq!(ok_json(&o)[0]["requests"], 16 * 1024);
    // Keys that behave like page accesses are still recognised.
    let keys: Vec<u8> = (0u32..4000).flat_map(|i| (1000 + (i * 7) % 500).to_be_bytes()).collect();
    let t = Temp::new("keys", &keys);
    let o = sim(&["-t", t.path(), "-p", "lru", "-c", "1MiB", "--json"]);
    assert_eq!(ok_json(&o)[0]["format"], "keys-u32be");
}

#[test]
fn repeat_zero_is_a_one_line_error() {
    // It used to run the trace once without a word.
    let t = Temp::new("repeat", b"0 0 100 8 1\n1000 0 200 8 0\n");
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "--repeat", "0"]);
    let e = one_line_error(&o, "--repeat");
    assert!(e.contains("at least 1"), "{e}");
    assert!(stdout(&o).is_empty());
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "--repeat", "3", "--json"]);
    assert_eq!(ok_json(&o)[0]["requests"], 6);
}

#[test]
fn jobs_5000_on_one_run_does_not_start_5000_threads() {
    // Each rayon worker costs some heap: 5000 of them took 34 MB and 13 s.
    let t = Temp::new("jobs", b"0 0 100 8 1\n1000 0 200 8 0\n");
    let base = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "-j", "1", "--json"]);
    let many = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru", "-c", "1MiB", "-j", "5000", "--json"]);
    assert_eq!(ok_json(&many)[0]["requests"], 2);
    assert_eq!(ok_json(&base)[0]["requests"], 2);
    assert!(
        heap_peak(&many) < heap_peak(&base) + MB,
        "heap peak {} against {} with -j 1",
        heap_peak(&many),
        heap_peak(&base)
    );
    // A sweep still runs every combination.
    let o = sim(&["-t", t.path(), "-f", "ssdsim", "-p", "lru,fifo,arc", "-c", "1MiB,2MiB", "-j", "5000", "--json"]);
    assert_eq!(ok_json(&o).len(), 6);
}

#[test]
fn mrc_memory_follows_the_footprint_not_the_trace() {
    // 2 M requests over 5,000 keys: a tree grown with the trace would take 8 MB;
    // compacted, it and everything else stay under 2 MB (0.9 MB measured).
    let o = ssdcache("mrc", &["--gen", "zipf(keys=5000,requests=2M,read=60%)", "--points", "3", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(heap_peak(&o) < 2 * MB, "peak heap {} bytes", heap_peak(&o));
}

#[test]
fn device_parameters_that_would_explode_memory_are_one_line_errors() {
    // Each used to be built: op=99.99% sized the flash at 10,000 times the
    // footprint (4 GB on a 400 MB one), page=1B gave every byte a map entry.
    let gen = "zipf(keys=1000,requests=2000)";
    for (device, says) in [
        ("ftl(op=99.99%)", "device ftl, parameter op=99.99%: must be at most 90%"),
        ("ftl(page=1B)", "device ftl, parameter page=1B: a page must be a multiple of 512 B from 512 B to 1 MiB"),
        ("ftl(type=hybrid,page=3)", "parameter page=3: a page must be"),
        ("ftl(page=1B,size=footprint)", "parameter page=1B: a page must be"),
        (
            "ftl(size=2TiB)",
            "parameter size=2TiB: the device would have 536870912 pages of 4KiB, more than the 268435456 (2^28)",
        ),
        ("ftl(block=1TiB)", "parameter block=1TiB: the device would have"),
        ("ftl(type=hybrid,log_blocks=4000000)", "parameter log_blocks=4000000: the device would have"),
        ("ssd(read_iops=0)", "parameter read_iops=0: must be at least 1"),
    ] {
        one_line_error(&sim(&["--gen", gen, "-p", "lru", "-c", "1MiB", "--device", device]), says);
        one_line_error(&sim(&["--gen", gen, "-p", "lru", "-c", "1MiB", "--cache-device", device]), says);
    }
    // At the bound, the flash is ten times the footprint (one 16 MiB chunk), 0.4 MB of heap.
    let o = sim(&["--gen", gen, "-p", "lru", "-c", "1MiB", "--device", "ftl(op=90%)", "--json"]);
    let r = &ok_json(&o)[0];
    let pages = r["physical_pages"].as_u64().unwrap();
    assert_eq!(r["logical_pages"], 4096, "one 16 MiB chunk of 4 KiB pages");
    assert!((40 * 1024..=41 * 1024).contains(&pages), "{pages}");
    assert!(heap_peak(&o) < 2 * MB, "heap peak {}", heap_peak(&o));
}

#[test]
fn a_trace_without_requests_is_a_one_line_error() {
    // (sim used to report a hit ratio of 0 on 0 requests, mrc a curve of 0 misses)
    let empty = Temp::new("no-requests.txt", b"");
    let bad = Temp::new("all-malformed.txt", b"not a request\nnor this\n");
    let (e, b) = (empty.path(), bad.path());
    for (command, args, says) in [
        ("sim", vec!["-t", e, "-f", "ssdsim", "-p", "lru", "-c", "1MiB"], "no requests to simulate"),
        (
            "sim",
            vec!["-t", e, "-f", "ssdsim", "-p", "lru,arc,belady", "-c", "1MiB", "--json"],
            "no requests to simulate",
        ),
        ("sim", vec!["-t", e, "-f", "ssdsim", "-c", "1MiB", "--device", "ftl", "--queue-depth", "4"], "no requests"),
        (
            "sim",
            vec!["-t", b, "-f", "ssdsim", "--skip-bad", "-p", "lru", "-c", "1MiB"],
            "no requests to simulate (2 malformed lines skipped)",
        ),
        ("mrc", vec!["--trace", e, "-f", "ssdsim"], "no requests for a miss-ratio curve"),
        ("mrc", vec!["--trace", e, "-f", "ssdsim", "--cache", "1MiB", "--json"], "no requests for a miss-ratio curve"),
        (
            "mrc",
            vec!["--trace", b, "-f", "ssdsim", "--skip-bad"],
            "no requests for a miss-ratio curve (2 malformed lines skipped)",
        ),
        ("mrc", vec!["--trace", e, "-f", "ssdsim", "--sample", "50%"], "no requests for a miss-ratio curve"),
        (
            "mrc",
            vec!["--trace", e, "-f", "ssdsim", "--sample", "50%", "--policy", "arc"],
            "no requests for a miss-ratio curve",
        ),
    ] {
        let err = one_line_error(&ssdcache(command, &args), says);
        assert!(err.contains(args[1]), "names the trace: {err}");
    }
}

#[test]
fn mrc_bad_arguments_are_one_line_errors() {
    for (args, says) in [
        (&["--gen", "zipf(keys=10,requests=10)", "--policy", "arc"][..], "lru only"),
        (&["--gen", "zipf(keys=10,requests=10)", "--points", "0"][..], "--points 0"),
        (&["--gen", "zipf(keys=10,requests=10)", "--cache", "100B"][..], "smaller than one page"),
        (&["--gen", "zipf(keys=10,requests=10)", "--page", "0"][..], "--page"),
        (&["--trace", "/nonexistent/trace.csv"][..], "/nonexistent/trace.csv"),
    ] {
        one_line_error(&ssdcache("mrc", args), says);
    }
}

#[test]
fn analyze_memory_follows_the_footprint_not_the_trace() {
    // 2 M requests over 5,000 keys: per-page state, fixed grids and histograms only.
    let o = ssdcache("trace", &["analyze", "--gen", "zipf(keys=5000,requests=2M,read=60%)", "--json"]);
    assert_eq!(ok_json(&o).len(), 1);
    assert!(heap_peak(&o) < 4 * MB, "peak heap {} bytes", heap_peak(&o));
}

#[test]
fn analyze_bad_input_is_a_one_line_error() {
    let empty = Temp::new("analyze-empty.txt", b"");
    let late = Temp::new("analyze-late.txt", b"0 0 0 8 1\n86400000000000 0 8 8 1\n");
    for (args, says) in [
        (vec!["analyze", "--format", "ssdsim", empty.path()], "no requests to analyze"),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--interval", "0s"], "--interval"),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--interval", "0req"], "--interval"),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--interval", "soon"], "--interval"),
        (vec!["analyze", "--format", "ssdsim", late.path(), "--interval", "1ns"], "more than 65536 intervals"),
        (
            vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--interval", "18446744073709551616ns"],
            "too long: a duration is at most 2^64 - 1 ns",
        ),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--log-base", "1"], "--log-base"),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--page", "0"], "--page"),
        (vec!["analyze", "/nonexistent/trace.csv"], "/nonexistent/trace.csv"),
        (vec!["analyze", "--gen", "zipf(keys=10,requests=10)", "--plot", late.path()], "not a directory"),
    ] {
        one_line_error(&ssdcache("trace", &args), says);
    }
}

#[test]
fn analyze_bins_and_intervals_are_bounded() {
    // --log-base 1.000001 made 44 million bins a histogram (1.55 GB on 25 k
    // requests): refused, naming the least base and the bound on bins.
    let o = ssdcache("trace", &["analyze", "--gen", "zipf(keys=10,requests=10)", "--log-base", "1.000001"]);
    let err = one_line_error(&o, "--log-base 1.000001:");
    assert!(err.contains("65536") && err.contains("1.000678"), "{err}");
    // --interval 1req on 1 M requests took 1.9 GB and wrote 366 MB of JSON
    // under the old cap of 2^20 intervals: now an error at the 65,537th.
    let o = ssdcache("trace", &["analyze", "--gen", "zipf(keys=5000,requests=1M)", "--interval", "1req", "--json"]);
    one_line_error(&o, "more than 65536 intervals of 1 (request reaches 65536)");
    assert!(heap_peak(&o) < 160 * MB, "peak heap {} bytes", heap_peak(&o));
    // At the cap, memory and output stay bounded.
    let o = ssdcache("trace", &["analyze", "--gen", "zipf(keys=5000,requests=65536)", "--interval", "1req", "--json"]);
    assert_eq!(ok_json(&o)[0]["timeline"]["intervals"].as_array().unwrap().len(), 65_536);
    assert!(heap_peak(&o) < 160 * MB, "peak heap {} bytes", heap_peak(&o));
    assert!(o.stdout.len() < 64 * MB as usize, "{} bytes of JSON", o.stdout.len());
}

#[test]
fn mrc_sampling_bad_arguments_are_one_line_errors() {
    let gen = "zipf(keys=100,requests=1000)";
    for (args, says) in [
        (&["--gen", gen, "--sample", "0"][..], "--sample 0: the rate must be more than 0"),
        (&["--gen", gen, "--sample", "0%"][..], "more than 0"),
        (&["--gen", gen, "--sample", "150%"][..], "at most 100%"),
        (&["--gen", gen, "--sample", "1.5"][..], "at most 100%"),
        (&["--gen", gen, "--sample", "lots"][..], "--sample lots: not a rate"),
        (&["--gen", gen, "--sample", "-1%"][..], "more than 0"),
        (&["--gen", gen, "--sample-keys", "0"][..], "--sample-keys 0"),
        (&["--gen", gen, "--sample", "1%", "--policy", "arc", "--sample-keys", "10"][..], "--sample-keys"),
        (&["--gen", gen, "--sample", "1%", "--policy", "belady"][..], "future"),
        (&["--gen", gen, "--sample", "1%", "--policy", "arc,nosuch"][..], "nosuch"),
        (&["--gen", gen, "--sample", "1%", "--policy", ","][..], "--policy"),
        (&["--gen", gen, "--sample", "1%", "--warmup", "10%"][..], "--warmup with --sample"),
        (&["--gen", gen, "--sample", "1%", "--cache", "5%"][..], "--cache N% with --sample"),
        // No key drawn: the curve would be all zeros, read as no misses.
        (&["--gen", gen, "--sample", "1e-300"][..], "no page of the trace fell in the sample"),
        (&["--gen", gen, "--sample", "1e-300", "--policy", "arc"][..], "raise --sample"),
    ] {
        one_line_error(&ssdcache("mrc", args), says);
    }
}

#[test]
fn mrc_sampled_json_and_csv_say_method_and_rate() {
    let gen = "zipf(keys=2000,requests=20000,seed=1)";
    let o = ssdcache("mrc", &["--gen", gen, "--sample", "10%", "--policy", "lru,arc", "--points", "4", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains("\"policy\":\"lru\"") && lines[0].contains("\"method\":\"shards\""), "{}", lines[0]);
    assert!(lines[1].contains("\"policy\":\"arc\"") && lines[1].contains("\"method\":\"miniature\""), "{}", lines[1]);
    assert!(lines.iter().all(|l| l.contains("\"sample_rate\":0.1")), "{out}");
    let o = ssdcache("mrc", &["--gen", gen, "--sample", "10%", "--policy", "s3fifo", "--points", "4", "--csv"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().next().unwrap().starts_with("trace,policy,method,sample_rate,"), "{out}");
    assert_eq!(out.lines().filter(|l| l.contains(",s3fifo,miniature,0.1,")).count(), 4, "{out}");
}

#[test]
fn a_deeply_nested_or_huge_spec_is_a_one_line_error() {
    let gen = "zipf(alpha=0.9,keys=100,requests=100)";
    // 5000 nested admission layers used to overflow the stack (abort, exit 134).
    let deep = format!("{}lru{}", "admit(by=bloom,rule=".repeat(5000), ")".repeat(5000));
    let e = one_line_error(&sim(&["--gen", gen, "-p", &deep, "-c", "1MiB"]), "nested more than 32 deep");
    assert!(e.len() < 300, "the spec is quoted in part: {} bytes", e.len());
    // The same in a workload's and a device's spec.
    let deep_gen = format!("{}zipf{}", "mix(".repeat(5000), ")".repeat(5000));
    one_line_error(&sim(&["--gen", &deep_gen, "-p", "lru", "-c", "1MiB"]), "nested more than 32 deep");
    let deep_dev = format!("ssd(x={}1{})", "(".repeat(5000), ")".repeat(5000));
    one_line_error(&sim(&["--gen", gen, "-p", "lru", "-c", "1MiB", "--device", &deep_dev]), "nested more than 32 deep");
    // A 100 KB name is named, not printed whole.
    let name = "x".repeat(100_000);
    let e = one_line_error(&sim(&["--gen", gen, "-p", &name, "-c", "1MiB"]), "unknown policy");
    assert!(e.contains("(100000 bytes)") && e.len() < 2000, "{} bytes: {}", e.len(), &e[..200]);
    // Nesting a real spec needs still works: 10 admission layers.
    let ten = format!("{}lru{}", "admit(by=nhit(n=2),rule=".repeat(10), ")".repeat(10));
    assert_eq!(ok_json(&sim(&["--gen", gen, "-p", &ten, "-c", "1MiB", "--json"]))[0]["requests"], 100);
}

#[test]
fn trace_output_never_overwrites_by_mistake_nor_leaves_a_partial_file() {
    let dir = std::env::temp_dir().join(format!("ssdcache-hostile-{}-out", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let at = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let gen = "zipf(alpha=0.9,keys=100,requests=1000,unit=bytes,size=4KiB,align=4KiB,seed=1)";
    // Two arguments swapped or a typo: an existing file is refused, untouched.
    std::fs::write(at("notes.md"), "my notes\n").unwrap();
    let o = ssdcache("trace", &["gen", gen, &at("notes.md"), "--to", "ssdsim"]);
    one_line_error(&o, "exists; --force replaces it");
    assert_eq!(std::fs::read_to_string(at("notes.md")).unwrap(), "my notes\n");
    // Converting a trace onto itself used to truncate it while it was read.
    assert_eq!(ssdcache("trace", &["gen", gen, &at("t.txt"), "--to", "ssdsim"]).status.code(), Some(0));
    let before = ssdcache("trace", &["info", &at("t.txt"), "-f", "ssdsim", "--json"]);
    let o = ssdcache("trace", &["convert", &at("t.txt"), &at("t.txt"), "-f", "ssdsim", "--to", "ssdsim", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = ssdcache("trace", &["info", &at("t.txt"), "-f", "ssdsim", "--json"]);
    assert_eq!(stdout(&before), stdout(&after));
    assert!(stdout(&after).contains("\"requests\":1000"), "{}", stdout(&after));
    // A conversion that fails leaves neither the output nor its temporary file.
    assert_eq!(ssdcache("trace", &["convert", &at("t.txt"), &at("k.txt"), "--to", "keys"]).status.code(), Some(0));
    let o = ssdcache("trace", &["convert", &at("k.txt"), &at("s.txt"), "-f", "keys", "--to", "ssdsim"]);
    one_line_error(&o, "no byte addresses");
    let mut left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["k.txt", "notes.md", "t.txt"]);
    // --force replaces; a device is written as it is.
    let o = ssdcache("trace", &["gen", gen, &at("notes.md"), "--to", "ssdsim", "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(at("notes.md")).unwrap().lines().count(), 1000);
    assert_eq!(ssdcache("trace", &["gen", gen, "/dev/null", "--to", "ssdsim"]).status.code(), Some(0));
    one_line_error(&ssdcache("trace", &["gen", gen, dir.to_str().unwrap(), "--force"]), "is a directory");
    std::fs::remove_dir_all(&dir).unwrap();
}
