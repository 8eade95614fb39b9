//! `serve --whatif` and `ssdcache whatif`: the shadow's curves, checked
//! against what the server measured; and the mistakes an operator makes.

mod common;

use common::{make_cache, one_line_error, require_libnbd, Server, BIN, PY};
use serde_json::Value;
use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// Zipf-skewed 4 KiB reads and writes over 256 segments of 128 KiB.
fn skewed_io(nbd: std::net::SocketAddr, requests: u32) {
    let script = format!(
        "import nbd, random\nh = nbd.NBD()\nh.connect_uri('nbd://{nbd}')\nrandom.seed(5)\n\
         for i in range({requests}):\n\
         \x20   s = min(int(random.paretovariate(0.9)), 256) - 1\n\
         \x20   off = s * 131072 + random.randrange(32) * 4096\n\
         \x20   if random.random() < 0.3: h.pwrite(b'w' * 4096, off)\n\
         \x20   else: h.pread(4096, off)\n\
         h.flush()\nh.shutdown()\n"
    );
    let out = Command::new(PY).args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// With memory for every slot (rate 1), the shadow of the running policy at
/// the cache's own size is the cache: the same miss ratio as measured, for
/// LRU and S3-FIFO in write-back, and a bigger cache never misses more.
#[test]
fn the_shadow_at_the_cache_s_own_size_is_what_the_cache_measured() {
    require_libnbd();
    for policy in ["lru", "s3fifo"] {
        let dir = tempfile::tempdir().unwrap();
        let (cache, backing) = make_cache(dir.path(), 32 << 20, &["--size", "4MiB"]);
        let mut serve = Command::new(BIN);
        serve.arg("serve").arg(&cache).arg(&backing).args(["--listen", "127.0.0.1:0", "--policy", policy]);
        let server = Server::start(&mut serve, &dir.path().join("serve.err"));
        skewed_io(server.nbd(), 6000);
        // The shadow's thread publishes twice a second.
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let out = run(&["whatif", cache.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{out:?}");
        let w: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!((w["sample_rate"].as_f64(), w["dropped"].as_u64()), (Some(1.0), Some(0)), "{w}");
        assert_eq!(w["requests"].as_u64(), Some(6000), "every read and write (a flush moves no data): {w}");
        let own = w["cache_bytes"].as_u64().unwrap();
        let curve = w["curves"].as_array().unwrap().iter().find(|c| c["policy"] == policy).expect("the running policy");
        let points = curve["points"].as_array().unwrap();
        let at =
            |bytes: u64| points.iter().find(|p| p["cache_bytes"] == bytes).unwrap()["miss_ratio"].as_f64().unwrap();
        let measured = w["measured"]["miss_ratio"].as_f64().unwrap();
        println!("{policy}: shadow {} measured {measured}", at(own));
        assert!((at(own) - measured).abs() < 1e-9, "{policy}: shadow {} vs measured {measured}", at(own));
        let ratios: Vec<f64> = points.iter().map(|p| p["miss_ratio"].as_f64().unwrap()).collect();
        assert!(ratios.first() > ratios.last(), "{policy}: {ratios:?}");
        // The text form marks the running policy and the cache's size.
        let text = String::from_utf8(run(&["whatif", cache.to_str().unwrap()]).stdout).unwrap();
        assert!(text.contains(&format!("{policy}  (running)")) && text.contains("\n* "), "{text}");
        assert_eq!(server.stop(), 0);
    }
}

#[test]
fn whatif_mistakes_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, backing) = make_cache(dir.path(), 16 << 20, &["--size", "4MiB"]);
    let serve = |extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&cache).arg(&backing).args(["--listen", "127.0.0.1:0"]).args(extra);
        c
    };
    // Refused at the start, with the reason.
    for (flags, want) in [
        (&["--whatif", "belady"][..], "belady"),
        (&["--whatif", "nosuch"][..], "nosuch"),
        (&["--whatif", "lru", "--whatif-memory", "10"][..], "--whatif-memory 10"),
        (&["--whatif", " , "][..], "comma-separated"),
    ] {
        let out = serve(flags).output().unwrap();
        one_line_error(&out, &[want]);
    }
    // Off: `whatif` says how to turn it on; no server: says so.
    let server = Server::start(&mut serve(&["--whatif", "off"]), &dir.path().join("serve.err"));
    one_line_error(&run(&["whatif", cache.to_str().unwrap()]), &["runs no what-if", "--whatif"]);
    assert_eq!(server.stop(), 0);
    one_line_error(&run(&["whatif", cache.to_str().unwrap()]), &["no server is running"]);
}
