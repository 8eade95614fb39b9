//! `ssdcache serve --metrics`: after a known workload from a real NBD client
//! (qemu-io), `/metrics` and `ssdcache status --json` agree with the
//! workload and with each other, `/status.json` is `status --json`'s status
//! and `/` the page (scripts/test/test_page.sh renders it in chromium); Prometheus's own parser (`promtool check
//! metrics`) accepts the page, and an OpenMetrics parser (the Python
//! `prometheus_client`'s) the OpenMetrics form; hostile metrics clients
//! (silent, 100 MB of headers, hundreds of connections) neither grow the
//! server nor disturb NBD clients. Loopback only; every wait is bounded.

use serde_json::Value;
use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{make_cache, one_line_error, require_libnbd, Server, BIN, PY};

/// A 2 MiB cache (128 KiB segments) for a 4 MiB backing file.
struct Fixture {
    dir: tempfile::TempDir,
    cache: PathBuf,
    backing: PathBuf,
}

impl Fixture {
    fn new(mode: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (cache, backing) = make_cache(dir.path(), 4 << 20, &["--size", "2MiB", "--mode", mode]);
        Fixture { dir, cache, backing }
    }

    fn serve_cmd(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&self.cache).arg(&self.backing).args(["--listen", "127.0.0.1:0"]).args(extra);
        c
    }

    /// Starts a server with metrics on a free port; waits (up to 20 s) for
    /// its address.
    fn serve(&self) -> Server {
        Server::start(&mut self.serve_cmd(&["--metrics", "127.0.0.1:0"]), &self.dir.path().join("serve.err"))
    }
}

/// Runs `cmd` to completion (at most 60 s); its stdout. Panics on failure.
fn run_ok(mut cmd: Command, input: Option<&str>) -> String {
    let mut child = cmd
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    if let Some(text) = input {
        let mut stdin = child.stdin.take().unwrap();
        let text = text.to_owned();
        std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    }
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{cmd:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out_t.join().unwrap(), err_t.join().unwrap());
    assert!(status.success(), "{cmd:?} failed ({status}): {out}{err}");
    out
}

/// One `GET /metrics`; (status line, Content-Type, body).
fn scrape(addr: SocketAddr, accept: Option<&str>) -> (String, String, String) {
    http_get(addr, "/metrics", accept)
}

/// One `GET path`; (status line, Content-Type, body).
fn http_get(addr: SocketAddr, path: &str, accept: Option<&str>) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n{accept}\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.lines().next().unwrap().to_string();
    let ctype = head.lines().find_map(|l| l.strip_prefix("Content-Type: ")).map(str::to_string).unwrap_or_default();
    (status, ctype, body.to_string())
}

/// Samples of a classic text page: `name{labels}` → value.
fn samples(page: &str) -> HashMap<String, f64> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse::<f64>().unwrap_or_else(|e| panic!("{l}: {e}")))
        })
        .collect()
}

fn get(m: &HashMap<String, f64>, key: &str) -> u64 {
    let v = *m.get(key).unwrap_or_else(|| panic!("no sample {key}"));
    assert!(v >= 0.0 && v.fract() == 0.0, "{key} = {v}");
    v as u64
}

fn status_json(f: &Fixture) -> Value {
    let out = run_ok(
        {
            let mut c = Command::new(BIN);
            c.arg("status").arg("--json").arg(&f.cache);
            c
        },
        None,
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["running"], true);
    v["status"].clone()
}

fn qemu_io(addr: SocketAddr, cmds: &[&str]) {
    let mut c = Command::new("qemu-io");
    c.args(["-f", "raw"]);
    for cmd in cmds {
        c.args(["-c", cmd]);
    }
    c.arg(format!("nbd://{addr}"));
    run_ok(c, None);
}

/// Connects, negotiates the default export, sends a READ past the end of
/// the export and returns the errno of its reply.
fn nbd_read_past_the_end(addr: SocketAddr) -> u32 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    let mut m = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
    m.extend_from_slice(&IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&OPT_GO.to_be_bytes());
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&[0; 6]);
    s.write_all(&m).unwrap();
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut data = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut data).unwrap();
        if reply == REP_ACK {
            break;
        }
        assert_eq!(reply & REP_FLAG_ERROR, 0, "option error {reply:#x}");
    }
    let h = RequestHeader { flags: 0, kind: CMD_READ, cookie: 9, offset: 4 << 20, length: 4096 };
    s.write_all(&encode_request_header(&h)).unwrap();
    let mut r = [0u8; 16];
    s.read_exact(&mut r).unwrap();
    parse_simple_reply(&r).unwrap().errno
}

fn require(tool: &str, package: &str) {
    let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap().status.success();
    assert!(found, "{tool} missing: apt-get install {package} (scripts/test.sh installs it)");
}

/// N = 6 reads and M = 4 writes on a write-through LRU cache, whose every
/// miss fills its segment at once, so each request's outcome is known.
#[test]
fn metrics_and_status_json_agree_with_a_qemu_io_workload() {
    require("qemu-io", "qemu-utils");
    require("promtool", "prometheus");
    let f = Fixture::new("write-through");
    let s = f.serve();
    qemu_io(
        s.nbd(),
        &[
            "read 0 4k",      // miss: fills segment 0
            "read 4k 4k",     // hit
            "read 64k 4k",    // hit
            "read 1M 4k",     // miss: fills segment 8
            "read 1032k 4k",  // hit
            "read 124k 8k",   // miss: segment 0 cached, segment 1 filled
            "write 0 8k",     // hit
            "write 2M 4k",    // miss: a write-through write miss fills too
            "write 2052k 4k", // hit
            "write 3M 16k",   // miss
        ],
    );
    // Refused by the protocol layer: counted apart, not as an engine request.
    assert_ne!(nbd_read_past_the_end(s.nbd()), 0);
    let (status, ctype, page) = scrape(s.metrics(), None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let st = status_json(&f);

    // The real parser: promtool reads the classic format and lints it.
    let lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin.as_ref().unwrap().write_all(page.as_bytes()).unwrap();
    let out = lint.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics: {said}");

    let m = samples(&page);
    let req = |op: &str, outcome: &str, what: &str| {
        get(&m, &format!("ssdcache_request{what}{{op=\"{op}\",outcome=\"{outcome}\"}}"))
    };
    // The workload, as the client sent it.
    let want = [
        ("read", "hit", 3, 12 << 10),
        ("read", "miss", 3, 16 << 10),
        ("write", "hit", 2, 12 << 10),
        ("write", "miss", 2, 20 << 10),
        ("read", "bypass", 0, 0),
        ("read", "error", 0, 0),
        ("write", "bypass", 0, 0),
        ("write", "error", 0, 0),
    ];
    for (op, outcome, n, bytes) in want {
        assert_eq!(req(op, outcome, "s_total"), n, "{op} {outcome}");
        assert_eq!(req(op, outcome, "_bytes_total"), bytes, "{op} {outcome} bytes");
    }
    // qemu-io flushes as it closes the export.
    assert!(req("flush", "ok", "s_total") >= 1);

    // status --json carries the same numbers, request by request, bucket by bucket.
    let reqs = st["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 20, "every (op, outcome) pair: 3 data ops x 4, 4 others x 2");
    for r in reqs {
        let (op, outcome) = (r["op"].as_str().unwrap(), r["outcome"].as_str().unwrap());
        assert_eq!(r["count"].as_u64().unwrap(), req(op, outcome, "s_total"), "{op} {outcome}");
        assert_eq!(r["bytes"].as_u64().unwrap(), req(op, outcome, "_bytes_total"), "{op} {outcome}");
        let lat = &r["latency"];
        assert_eq!(lat["count"].as_u64().unwrap(), req(op, outcome, "_duration_seconds_count"));
        assert_eq!(lat["count"], r["count"]);
        let mut cumulative = 0;
        for b in lat["buckets"].as_array().unwrap() {
            cumulative += b[1].as_u64().unwrap();
            // `le` as a number (the page writes 0.00005, Rust's Debug 5e-5).
            let le = b[0].as_f64().unwrap_or(f64::INFINITY);
            let tail = format!("\",op=\"{op}\",outcome=\"{outcome}\"}}");
            let (key, v) = m
                .iter()
                .find(|(k, _)| {
                    k.strip_prefix("ssdcache_request_duration_seconds_bucket{le=\"")
                        .and_then(|r| r.strip_suffix(&tail))
                        .is_some_and(|x| x.replace("+Inf", "inf").parse::<f64>() == Ok(le))
                })
                .unwrap_or_else(|| panic!("no bucket le={le} for {op} {outcome}"));
            assert_eq!(*v as u64, cumulative, "{key}");
        }
        let sum = m[&format!("ssdcache_request_duration_seconds_sum{{op=\"{op}\",outcome=\"{outcome}\"}}")];
        assert!((sum - lat["sum_seconds"].as_f64().unwrap()).abs() < 1e-9);
    }
    let u = |k: &str| st[k].as_u64().unwrap_or_else(|| panic!("status has no {k}"));
    for (key, field) in [
        ("ssdcache_request_pieces_total{op=\"read\",result=\"hit\"}", "read_hits"),
        ("ssdcache_request_pieces_total{op=\"read\",result=\"miss\"}", "read_misses"),
        ("ssdcache_request_pieces_total{op=\"write\",result=\"hit\"}", "write_hits"),
        ("ssdcache_request_pieces_total{op=\"write\",result=\"miss\"}", "write_misses"),
        ("ssdcache_device_request_bytes_total{device=\"cache\",direction=\"read\"}", "ssd_read"),
        ("ssdcache_device_request_bytes_total{device=\"cache\",direction=\"write\"}", "ssd_written"),
        ("ssdcache_device_request_bytes_total{device=\"backing\",direction=\"read\"}", "hdd_read"),
        ("ssdcache_device_request_bytes_total{device=\"backing\",direction=\"write\"}", "hdd_written"),
        ("ssdcache_segment_copies_total{kind=\"fill\"}", "filled"),
        ("ssdcache_segment_copies_total{kind=\"write_back\"}", "written_back"),
        ("ssdcache_device_errors_total{device=\"cache\"}", "ssd_errors"),
        ("ssdcache_device_errors_total{device=\"backing\"}", "hdd_errors"),
        ("ssdcache_served_bytes_total", "served_bytes"),
        ("ssdcache_cached_segments", "cached"),
        ("ssdcache_dirty_segments", "dirty"),
    ] {
        assert_eq!(get(&m, key), u(field), "{key} against status {field}");
    }
    // Pieces: the read of 124k..132k is two (segment 0 hit, segment 1 filled).
    assert_eq!((u("read_hits"), u("read_misses"), u("write_hits"), u("write_misses")), (4, 3, 2, 2));
    assert_eq!(u("filled"), 5, "segments 0, 8, 1, 16, 24");
    // The write hits also wrote the backing device (write-through): 12 KiB
    // of hits plus 20 KiB of misses; only the read hit pieces spared it
    // (3 hits of 4 KiB, and the cached 4 KiB half of the 8 KiB miss).
    assert_eq!((u("hdd_written"), u("served_bytes")), (32 << 10, 16 << 10));
    assert_eq!(get(&m, "ssdcache_degraded"), 0);
    let conns = &st["connections"];
    assert_eq!(get(&m, "ssdcache_connections_accepted_total"), conns["accepted"].as_u64().unwrap());
    assert_eq!(conns["accepted"], 2, "qemu-io's connection and the raw one");
    assert_eq!(get(&m, "ssdcache_connections_refused_total"), 0);
    assert_eq!(get(&m, "ssdcache_requests_rejected_total"), 1);
    assert_eq!(conns["rejected"], 1);

    // OpenMetrics (what Prometheus asks for), read by an OpenMetrics parser.
    let (status, ctype, om) = scrape(s.metrics(), Some("application/openmetrics-text;version=1.0.0"));
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(om.ends_with("# EOF\n"));
    let parsed = run_ok(
        {
            let mut c = Command::new("python3");
            c.arg("-c").arg(
                "import sys\n\
                 from prometheus_client.openmetrics.parser import text_string_to_metric_families as p\n\
                 fams = list(p(sys.stdin.read()))\n\
                 s = {x.name + str(sorted(x.labels.items())): x.value for f in fams for x in f.samples}\n\
                 print(len(fams), int(s[\"ssdcache_requests_total[('op', 'read'), ('outcome', 'hit')]\"]))",
            );
            c
        },
        Some(&om),
    );
    let families = page.lines().filter(|l| l.starts_with("# TYPE ")).count();
    assert_eq!(parsed.trim(), format!("{families} 3"), "families, and read hits, as the OpenMetrics parser sees them");
    assert_eq!(s.stop(), 0);
}

/// Drives hostile clients at the metrics port while an NBD client works.
/// Whether `a` and `b` have the same shape: the same keys at every level,
/// the same kinds of values (null, which a value may become between two
/// reads, matches anything), arrays' elements alike.
fn same_shape(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => {}
        (Value::Object(x), Value::Object(y)) => {
            let (kx, ky): (Vec<_>, Vec<_>) = (x.keys().collect(), y.keys().collect());
            assert_eq!(kx, ky, "keys of {at}");
            for (k, v) in x {
                same_shape(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                same_shape(u, v, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_)) => {}
        _ => panic!("{at}: {a} vs {b}"),
    }
}

/// The endpoint's other paths: `/` the page (HTML, compiled in), and
/// `/status.json` what `status --json` prints under `status`; anything else
/// 404, and `/metrics` as before.
#[test]
fn the_page_and_status_json_beside_metrics() {
    require("qemu-io", "qemu-utils");
    let f = Fixture::new("write-through");
    let s = f.serve();
    qemu_io(s.nbd(), &["read 0 4k", "read 4k 4k", "write 1M 4k", "read 1M 4k"]);

    let (status, ctype, page) = http_get(s.metrics(), "/", None);
    assert_eq!((status.as_str(), ctype.as_str()), ("HTTP/1.1 200 OK", "text/html; charset=utf-8"));
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("status.json"), "{page}");
    // Self-contained: nothing fetched from elsewhere.
    for external in ["src=\"http", "href=\"http", "@import", "<link"] {
        assert!(!page.contains(external), "the page refers to {external}");
    }

    let (status, ctype, body) = http_get(s.metrics(), "/status.json", None);
    assert_eq!((status.as_str(), ctype.as_str()), ("HTTP/1.1 200 OK", "application/json"));
    let served: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let printed = status_json(&f);
    same_shape(&served, &printed, "status");
    // No I/O between the two: the counters are equal.
    for k in ["read_hits", "read_misses", "write_hits", "write_misses", "cached", "dirty", "requests"] {
        assert_eq!(served[k], printed[k], "{k}");
    }
    assert_eq!((served["read_hits"].as_u64(), served["read_misses"].as_u64()), (Some(2), Some(1)));

    for path in ["/nope", "/metrics/", "/status.json/x", "/index.html"] {
        let (status, ctype, _) = http_get(s.metrics(), path, None);
        assert_eq!((status.as_str(), ctype.as_str()), ("HTTP/1.1 404 Not Found", "text/plain"), "{path}");
    }
    let (status, ctype, _) = scrape(s.metrics(), None);
    assert_eq!((status.as_str(), ctype.as_str()), ("HTTP/1.1 200 OK", "text/plain; version=0.0.4; charset=utf-8"));
}

#[test]
fn hostile_metrics_clients_are_bounded_and_nbd_is_unaffected() {
    require("qemu-io", "qemu-utils");
    let f = Fixture::new("write-back");
    let s = f.serve();
    qemu_io(s.nbd(), &["write -P 7 0 64k"]);
    let (status, _, _) = scrape(s.metrics(), None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let rss0 = s.rss_kib();

    // 300 connections at once, silent: at most 8 are kept (for 5 s each),
    // the rest closed at accept.
    let silent: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(s.metrics()).ok()).collect();
    // NBD meanwhile.
    qemu_io(s.nbd(), &["read -P 7 0 64k", "write -P 8 64k 64k"]);
    // Every silent connection is closed by the server (the kept ones after
    // their 5 s): a read sees the end, not a 60 s timeout.
    for mut c in silent {
        c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut b = [0u8; 64];
        match c.read(&mut b) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("a silent metrics client was not closed: {e}"),
        }
    }

    // 100 MB of headers: the server stops reading at 8 KiB and closes.
    let mut big = TcpStream::connect(s.metrics()).unwrap();
    big.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    big.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let line = format!("X-Filler: {}\r\n", "a".repeat(1000));
    let mut sent = 0usize;
    while sent < 100 << 20 {
        match big.write(line.as_bytes()) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    assert!(sent < 100 << 20, "the server read 100 MB of headers");
    drop(big);
    qemu_io(s.nbd(), &["read -P 8 64k 64k"]);

    // Still serving, and no bigger for it.
    let (status, _, page) = scrape(s.metrics(), None);
    assert_eq!(status, "HTTP/1.1 200 OK");
    let m = samples(&page);
    assert_eq!(get(&m, "ssdcache_requests_total{op=\"read\",outcome=\"miss\"}"), 2, "both NBD reads counted");
    let grown = s.rss_kib().saturating_sub(rss0);
    println!(
        "hostile metrics clients: {sent} header bytes taken before the close; server RSS {rss0} KiB, grew {grown} KiB"
    );
    assert!(grown < 32 << 10, "the server grew by {grown} KiB under hostile metrics clients");
    assert_eq!(s.stop(), 0);
}

/// A bad or unusable `--metrics` address: one line, exit status 2, before the
/// cache is touched.
#[test]
fn bad_metrics_addresses_are_one_line_errors() {
    let f = Fixture::new("write-back");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (addr, want) in [
        ("nonsense", "--metrics \"nonsense\""),
        ("127.0.0.1:99999", "--metrics \"127.0.0.1:99999\""),
        (taken.as_str(), "--metrics: listening on"),
    ] {
        let out = f.serve_cmd(&["--metrics", addr]).stdout(Stdio::null()).output().unwrap();
        one_line_error(&out, &[want]);
    }
    // Nothing was started: the cache is still clean, no socket left.
    let check = Command::new(BIN).arg("check").arg(&f.cache).output().unwrap();
    assert!(check.status.success());
    assert!(!f.dir.path().join("cache.img.ctl").exists());
}

/// `--metrics-max-clients` and `--metrics-timeout` set the endpoint's
/// limits: with 10 and 60 s, ten silent clients are all kept (an eleventh is
/// closed at accept) and still answered when they ask after 6 s. Before,
/// the limits were fixed at 8 and 5 s, so eight slow clients held the
/// endpoint for 5 s each.
#[test]
fn metrics_limits_are_set_by_flags() {
    let f = Fixture::new("write-back");
    let flags = ["--metrics", "127.0.0.1:0", "--metrics-max-clients", "10", "--metrics-timeout", "60s"];
    let s = Server::start(&mut f.serve_cmd(&flags), &f.dir.path().join("serve.err"));
    let mut silent: Vec<TcpStream> = (0..10).map(|_| TcpStream::connect(s.metrics()).unwrap()).collect();
    // (accepted in order: the ten hold every slot when the eleventh comes)
    let mut extra = TcpStream::connect(s.metrics()).unwrap();
    extra.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = extra.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
    let mut got = Vec::new();
    let _ = extra.read_to_end(&mut got); // closed: the end, or a reset
    assert!(got.is_empty(), "an eleventh client was answered: {}", String::from_utf8_lossy(&got));
    std::thread::sleep(Duration::from_secs(6)); // past the old fixed 5 s
    for (i, c) in silent.iter_mut().enumerate() {
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut page = String::new();
        c.read_to_string(&mut page).unwrap();
        assert!(page.starts_with("HTTP/1.1 200 OK"), "silent client {i} after 6 s: {page:?}");
    }
    assert_eq!(s.stop(), 0);
}

/// Absurd metrics limits, or limits without `--metrics`: one line, exit
/// status 2.
#[test]
fn bad_metrics_limits_are_one_line_errors() {
    let f = Fixture::new("write-back");
    let m = ["--metrics", "127.0.0.1:0"];
    for (flags, want) in [
        (&["--metrics-max-clients", "0"][..], "--metrics-max-clients 0: must be from 1 to 256"),
        (&["--metrics-max-clients", "100000"][..], "--metrics-max-clients 100000: must be from 1 to 256"),
        (&["--metrics-timeout", "0s"][..], "--metrics-timeout 0s: must be from 100ms to 10min"),
        (&["--metrics-timeout", "1ms"][..], "--metrics-timeout 1ms: must be from 100ms to 10min"),
        (&["--metrics-timeout", "2h"][..], "--metrics-timeout 2h: must be from 100ms to 10min"),
        (&["--metrics-timeout", "soon"][..], "--metrics-timeout: "),
    ] {
        let out = f.serve_cmd(&[&m[..], flags].concat()).stdout(Stdio::null()).output().unwrap();
        one_line_error(&out, &[want]);
    }
    let out = f.serve_cmd(&["--metrics-timeout", "10s"]).stdout(Stdio::null()).output().unwrap();
    one_line_error(&out, &["--metrics-max-clients and --metrics-timeout limit the metrics endpoint: add --metrics"]);
}

/// `--seq-cutoff` and `--promote-after`: bad values, and a mode they do not
/// apply to, are one-line errors with exit status 2.
#[test]
fn bad_admission_flags_are_one_line_errors() {
    let f = Fixture::new("write-back");
    for (flags, want) in [
        (&["--seq-cutoff", "0"][..], "--seq-cutoff: size \"0\": must be greater than zero"),
        (&["--seq-cutoff", "lots"][..], "--seq-cutoff: "),
        (&["--promote-after", "0"][..], "--promote-after must be at least 1"),
        (&["--seq-cutoff", "4MiB"][..], "--seq-cutoff and --promote-after apply to caches that fill on misses"),
        (&["--promote-after", "2"][..], "not to a write-back PWC cache"),
    ] {
        let out = f.serve_cmd(flags).stdout(Stdio::null()).output().unwrap();
        one_line_error(&out, &[want]);
    }
    // Refused before the start procedure: the cache is still clean.
    let check = Command::new(BIN).arg("check").arg(&f.cache).output().unwrap();
    assert!(String::from_utf8_lossy(&check.stdout).contains("clean: shut down cleanly"));
}

/// Stops the server's recording (`ssdcache record CACHE stop`) and replays
/// it through `sim` with the arguments its header names: sim's report, and
/// the recording's request lines counted by outcome letter.
fn sim_on_recording(f: &Fixture, rec: &Path) -> (Value, HashMap<String, u64>) {
    let mut c = Command::new(BIN);
    c.arg("record").arg(&f.cache).arg("stop");
    assert!(run_ok(c, None).starts_with("recording to "));
    let text = String::from_utf8(zstd::decode_all(std::fs::File::open(rec).unwrap()).unwrap()).unwrap();
    let header = text.lines().next().unwrap().strip_prefix("# ssdcache-record 1 ").expect("a recording's header");
    let header: Value = serde_json::from_str(header).unwrap();
    assert!(text.lines().last().unwrap().starts_with("# end "), "stopped cleanly: the end marker");
    let mut outcomes = HashMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split(' ').collect();
        *outcomes.entry(format!("{}{}", f[2], f[5])).or_insert(0) += 1;
    }
    let mut c = Command::new(BIN);
    c.args(["sim", "--json", "-t"]).arg(rec);
    // The header's arguments: `--policy 'SPEC'` quoted for a shell.
    let sim_args = header["sim"].as_str().unwrap();
    let (plain, spec) = sim_args.split_once(" --policy ").unwrap();
    c.args(plain.split(' ')).args(["--policy", spec.trim_matches('\'')]);
    (serde_json::from_str(run_ok(c, None).lines().next().unwrap()).unwrap(), outcomes)
}

/// `sim` predicts `serve`: one trace (Zipf reads, then two sequential
/// scans), 128 KiB requests on 128 KiB segments, replayed in order through
/// `ssdcache sim` (pages of one segment) and through a read-only `serve
/// --seq-cutoff 256KiB --promote-after 2` (scripts/tools/replay_nbd.py, queue
/// depth 1): the same hits, misses, fills, and so the same bypasses.
#[test]
fn sim_predicts_the_bypasses_and_hits_of_serve() {
    require_libnbd();
    let py = PY;
    let f = Fixture::new("read-only");
    let trace = f.dir.path().join("trace.txt");
    let mut text = String::new();
    for spec in [
        "zipf(alpha=0.8,keys=32,requests=3000,unit=bytes,size=128KiB,align=128KiB,seed=3)",
        "scan(start=0,length=32,requests=64,unit=bytes,size=128KiB,align=128KiB)",
    ] {
        let part = f.dir.path().join("part.txt");
        let mut c = Command::new(BIN);
        c.args(["trace", "gen", spec]).arg(&part).args(["--to", "ssdsim", "--force"]);
        run_ok(c, None);
        text.push_str(&std::fs::read_to_string(&part).unwrap());
    }
    std::fs::write(&trace, text).unwrap();

    let err = f.dir.path().join("serve.err");
    let rec = f.dir.path().join("rec.zst");
    let rec_arg = rec.to_str().unwrap();
    let s =
        Server::start(&mut f.serve_cmd(&["--seq-cutoff", "256KiB", "--promote-after", "2", "--record", rec_arg]), &err);
    let replay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tools/replay_nbd.py");
    let mut c = Command::new(py);
    c.arg(&replay).arg(format!("nbd://{}", s.nbd())).arg(&trace).args(["--qd", "1"]);
    run_ok(c, None);
    let st = status_json(&f);
    let policy = st["policy"].as_str().unwrap().to_string();
    assert!(policy.contains("seqcut") && policy.contains("nhit"), "{policy}");
    let slots = st["ssd_segments"].as_u64().unwrap();

    let mut c = Command::new(BIN);
    c.args(["sim", "--format", "ssdsim", "--page", "128KiB", "--mode", "read-only", "--json"])
        .arg("-t")
        .arg(&trace)
        .args(["--cache", &format!("{}KiB", slots * 128), "--policy", &policy]);
    let sim: Value = serde_json::from_str(run_ok(c, None).lines().next().unwrap()).unwrap();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    let (hits, misses, fills) = (n(&sim, "read_hits"), n(&sim, "misses"), n(&sim, "cache_writes"));
    println!("sim: {hits} hits, {misses} misses, {fills} fills, {} bypasses", misses - fills);
    assert!(misses > fills && fills > 0 && hits > 0, "the trace exercises every outcome");
    assert_eq!((n(&st, "read_hits"), n(&st, "read_misses"), n(&st, "filled")), (hits, misses, fills));
    let req = |outcome: &str| {
        let r = st["requests"].as_array().unwrap().iter().find(|r| r["op"] == "read" && r["outcome"] == outcome);
        n(r.unwrap(), "count")
    };
    // One segment per request: a request is a bypass where sim declined its page.
    assert_eq!((req("hit"), req("miss"), req("bypass")), (hits, fills, misses - fills));
    // The recording, replayed through sim as its header says, predicts the
    // same; and its outcome letters are the server's counts.
    let (replayed, outcomes) = sim_on_recording(&f, &rec);
    assert_eq!(
        (n(&replayed, "read_hits"), n(&replayed, "misses"), n(&replayed, "cache_writes")),
        (hits, misses, fills)
    );
    let o = |k: &str| outcomes.get(k).copied().unwrap_or(0);
    assert_eq!((o("RH"), o("RM"), o("RB")), (hits, fills, misses - fills), "{outcomes:?}");
    assert_eq!(s.stop(), 0);
}

/// `sim` predicts `serve` in write-back with a replacement policy: a trace
/// of 128 KiB reads and writes (Zipf, 40 % writes) on 128 KiB segments,
/// replayed in order through `serve --policy P` on a write-back cache and
/// through `ssdcache sim --mode write-back --policy P` (pages of one
/// segment), gives the same read and write hits and misses, the same fills
/// (every miss fills: write-allocate) and the same write-backs of dirty
/// victims, for LRU, S3-FIFO and SIEVE.
#[test]
fn sim_predicts_serve_in_write_back_with_a_replacement_policy() {
    require_libnbd();
    let py = PY;
    for policy in ["lru", "s3fifo", "sieve"] {
        let f = Fixture::new("write-back");
        let trace = f.dir.path().join("trace.txt");
        let mut c = Command::new(BIN);
        c.args([
            "trace",
            "gen",
            "zipf(alpha=0.7,keys=32,requests=3000,read=60%,unit=bytes,size=128KiB,align=128KiB,seed=7)",
        ])
        .arg(&trace)
        .args(["--to", "ssdsim", "--force"]);
        run_ok(c, None);

        let err = f.dir.path().join("serve.err");
        let rec = f.dir.path().join("rec.zst");
        let s = Server::start(&mut f.serve_cmd(&["--policy", policy, "--record", rec.to_str().unwrap()]), &err);
        let replay = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tools/replay_nbd.py");
        let mut c = Command::new(py);
        c.arg(&replay).arg(format!("nbd://{}", s.nbd())).arg(&trace).args(["--qd", "1"]);
        run_ok(c, None);
        let st = status_json(&f);
        assert_eq!(st["policy"].as_str(), Some(policy), "{st}");
        let slots = st["ssd_segments"].as_u64().unwrap();

        let mut c = Command::new(BIN);
        c.args(["sim", "--format", "ssdsim", "--page", "128KiB", "--mode", "write-back", "--json"])
            .arg("-t")
            .arg(&trace)
            .args(["--cache", &format!("{}KiB", slots * 128), "--policy", policy]);
        let sim: Value = serde_json::from_str(run_ok(c, None).lines().next().unwrap()).unwrap();
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
        let predicted = (
            n(&sim, "read_hits"),
            n(&sim, "read_pages") - n(&sim, "read_hits"),
            n(&sim, "write_hits"),
            n(&sim, "write_pages") - n(&sim, "write_hits"),
            // The simulator's cache writes are fills and write hits.
            n(&sim, "cache_writes") - n(&sim, "write_hits"),
            n(&sim, "dirty_writebacks"),
        );
        let served = (
            n(&st, "read_hits"),
            n(&st, "read_misses"),
            n(&st, "write_hits"),
            n(&st, "write_misses"),
            n(&st, "filled"),
            n(&st, "written_back"),
        );
        println!("{policy}: (read hits, read misses, write hits, write misses, fills, write-backs): sim {predicted:?}, serve {served:?}");
        assert!(predicted.0 > 0 && predicted.2 > 0 && predicted.5 > 0, "{policy}: the trace exercises every outcome");
        assert_eq!(served, predicted, "{policy}");
        // The recording, replayed through sim as its header says: the same.
        let (replayed, _) = sim_on_recording(&f, &rec);
        let from_recording = (
            n(&replayed, "read_hits"),
            n(&replayed, "read_pages") - n(&replayed, "read_hits"),
            n(&replayed, "write_hits"),
            n(&replayed, "write_pages") - n(&replayed, "write_hits"),
            n(&replayed, "cache_writes") - n(&replayed, "write_hits"),
            n(&replayed, "dirty_writebacks"),
        );
        assert_eq!(from_recording, predicted, "{policy}: sim on the recording");
        assert_eq!(s.stop(), 0);
    }
}
