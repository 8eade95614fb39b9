//! `--cache N%` and `--warmup` on the command line (`sim`, `mrc`): bad values
//! and impossible ones are one-line errors with exit status 2, and the
//! reports say what was skipped and how the cache was sized.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const GEN: &str = "zipf(keys=500,requests=2k,read=70%)";

fn ssdcache(command: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ssdcache"))
        .arg(command)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ssdcache");
    if let Some(bytes) = stdin {
        // (the command may refuse before reading: a broken pipe is fine)
        let _ = child.stdin.take().unwrap().write_all(bytes);
    }
    child.wait_with_output().unwrap()
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn bad_sizes_and_warmups_are_one_line_errors() {
    let trace = "128166372003061629,hm,0,Read,0,4096,10\n128166372003061639,hm,0,Write,4096,4096,10\n128166372003061649,hm,0,Read,0,4096,10\n";
    let path = std::env::temp_dir().join(format!("ssdcache-sizes-{}.txt", std::process::id()));
    std::fs::write(&path, trace).unwrap();
    let file = path.to_str().unwrap();
    for command in ["sim", "mrc"] {
        for (args, says, stdin) in [
            (&["--gen", GEN, "--cache", "0%"][..], "--cache 0%: must be more than 0%", None),
            (&["--gen", GEN, "--cache", "150%"][..], "--cache 150%: must be at most 100%", None),
            (&["--gen", GEN, "--cache", "lots%"][..], "--cache lots%", None),
            (&["--gen", GEN, "--cache", "1%,64XB"][..], "--cache", None),
            (&["--gen", GEN, "--warmup", "0%"][..], "--warmup 0%", None),
            (&["--gen", GEN, "--warmup", "100%"][..], "--warmup 100%: must be less than 100%", None),
            (&["--gen", GEN, "--warmup", "5m"][..], "ambiguous", None),
            (&["--gen", GEN, "--warmup", "soon"][..], "--warmup soon", None),
            (&["--gen", GEN, "--warmup", "2k"][..], "leave none", None),
            (&["--gen", GEN, "--warmup", "3000"][..], "leave none", None),
            (&["--gen", GEN, "--warmup", "1000d"][..], "leave none", None),
            (&["--trace", file, "--format", "msr", "--warmup", "3"][..], "leave none", None),
            (&["--trace", "/dev/stdin", "--format", "msr", "--warmup", "50%"][..], "stream", Some(trace)),
        ] {
            let o = ssdcache(command, args, stdin.map(str::as_bytes));
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(2), "{command} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{command} {args:?}: {err}");
            assert!(err.contains(says), "{command} {args:?}: {err}");
        }
    }
    // sim needs the footprint before it runs; mrc counts it in its own pass
    let stdin_share = ["--trace", "/dev/stdin", "--format", "msr", "--cache", "5%"];
    let o = ssdcache("sim", &stdin_share, Some(trace.as_bytes()));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("share of the footprint") && err.contains("stdin") && err.lines().count() == 1, "{err}");
    let curve = &json_lines(&ssdcache("mrc", &[&stdin_share[..], &["--json"]].concat(), Some(trace.as_bytes())))[0];
    assert_eq!((curve["footprint_pages"].as_u64(), curve["points"][0]["cache_pages"].as_u64()), (Some(2), Some(1)));
    let o = ssdcache("sim", &["--gen", GEN, "--device", "ssd", "--queue-depth", "4", "--warmup", "10"], None);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--warmup with a queueing replay") && err.lines().count() == 1, "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn values_out_of_range_say_so() {
    // Each used to be clamped to 2^64 - 1 without a word, or refused for
    // something else ("at most 6 decimals", "not a whole number").
    for command in ["sim", "mrc"] {
        for (args, says) in [
            (&["--cache", "1e9%"][..], "--cache 1e9%: must be at most 100%"),
            (&["--cache", "1234%"][..], "--cache 1234%: must be at most 100%"),
            (&["--cache", "18446744073709551616"][..], "too large: a size is at most 2^64 - 1 bytes (16 EiB)"),
            (
                &["--warmup", "18446744073709551616"][..],
                "--warmup 18446744073709551616: too large: a request count is at most 2^64 - 1",
            ),
            (&["--warmup", "18446744073709551616ns"][..], "too long: a duration is at most 2^64 - 1 ns"),
            (&["--warmup", "1e9%"][..], "--warmup 1e9%: must be less than 100%"),
            (&["--page", "3"][..], "--page: size \"3\": a page must be a multiple of 512 B from 512 B to 1 MiB"),
            (&["--page", "1B"][..], "a page must be a multiple of 512 B"),
            (&["--page", "2MiB"][..], "a page must be a multiple of 512 B"),
        ] {
            let o = ssdcache(command, &[&["--gen", GEN][..], args].concat(), None);
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert_eq!(o.status.code(), Some(2), "{command} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{command} {args:?}: {err}");
            assert!(err.contains(says), "{command} {args:?}: {err}");
        }
    }
    for (args, says) in [
        (
            &["sim", "--interval", "18446744073709551616ns"][..],
            "--interval: duration \"18446744073709551616ns\": too long",
        ),
        (
            &["sim", "--device", "ssd", "--queue-depth", "99999999999"][..],
            "--queue-depth 99999999999: out of range 1..=512",
        ),
        (&["trace", "analyze", "--page", "3"][..], "a page must be a multiple of 512 B"),
    ] {
        let o = ssdcache(args[0], &[&args[1..], &["--gen", GEN][..]].concat(), None);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The bounds themselves are fine.
    for args in [&["--page", "512"][..], &["--page", "1MiB", "--cache", "4MiB"], &["--cache", "100%"]] {
        let o = ssdcache("sim", &[&["--gen", GEN, "-p", "lru"][..], args].concat(), None);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn reports_say_how_the_cache_was_sized_and_what_was_skipped() {
    let runs = json_lines(&ssdcache(
        "sim",
        &["--gen", GEN, "-p", "lru,arc", "--cache", "10%,64KiB", "--warmup", "25%", "--json"],
        None,
    ));
    assert_eq!(runs.len(), 4);
    let footprint = runs[0]["footprint_pages"].as_u64().unwrap();
    assert!(footprint > 100 && footprint <= 500, "{footprint}");
    for r in &runs {
        assert_eq!(r["warmup"], "25%");
        assert_eq!(r["warmup_requests"], 500);
        assert_eq!(r["requests"], 1500);
        assert_eq!(r["footprint_pages"].as_u64(), Some(footprint));
    }
    // policy-major order as before: lru 10%, lru 64KiB, arc 10%, arc 64KiB
    assert_eq!(runs[0]["cache_share"], 0.1);
    assert_eq!(runs[0]["capacity_pages"].as_u64(), Some(footprint.div_ceil(10)));
    assert!(runs[1]["cache_share"].is_null());
    assert_eq!(runs[1]["capacity_pages"], 16);
    // mrc at the same sizes and warm-up agrees with sim's LRU runs
    let curve =
        &json_lines(&ssdcache("mrc", &["--gen", GEN, "--cache", "10%,64KiB", "--warmup", "25%", "--json"], None))[0];
    assert_eq!((curve["warmup"].as_str(), curve["warmup_requests"].as_u64()), (Some("25%"), Some(500)));
    assert_eq!(curve["footprint_pages"].as_u64(), Some(footprint));
    for (point, run) in curve["points"].as_array().unwrap().iter().zip(&runs[..2]) {
        assert_eq!(point["cache_pages"], run["capacity_pages"]);
        assert_eq!(point["cache_share"], run["cache_share"]);
        assert_eq!(point["hits"], run["hits"]);
        assert_eq!(point["dirty_writebacks"], run["dirty_writebacks"]);
    }
}
