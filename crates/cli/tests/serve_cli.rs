//! `ssdcache serve | status | flush` as a user runs them, against hostile
//! surroundings: a control path that is not a socket, a server that is
//! stopped (SIGSTOP), a control client that never sends its command, a
//! server full of idle connections. Loopback only; every wait is bounded.

use ssdcache_nbd::consts::*;
use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{assert_one_line_error, make_cache, Server, BIN};

/// A 2 MiB write-back cache for a 4 MiB backing file in a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    cache: PathBuf,
    backing: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (cache, backing) = make_cache(dir.path(), 4 << 20, &["--size", "2MiB"]);
        Fixture { dir, cache, backing }
    }

    fn ctl(&self) -> PathBuf {
        let mut p = self.cache.as_os_str().to_owned();
        p.push(".ctl");
        PathBuf::from(p)
    }

    fn serve_cmd(&self, extra: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&self.cache).arg(&self.backing).args(["--listen", "127.0.0.1:0"]).args(extra);
        c
    }

    /// Starts a server; waits (up to 20 s) for its address.
    fn serve(&self, extra: &[&str]) -> Server {
        let err = self.dir.path().join(format!("serve{}.err", std::process::id()));
        Server::start(&mut self.serve_cmd(extra), &err)
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

fn cli(args: &[&str], paths: &[&Path]) -> Command {
    let mut c = Command::new(BIN);
    c.args(&args[..1]).args(paths).args(&args[1..]);
    c
}

/// Audit item 4: `serve` deleted whatever regular file was at the control
/// path (CACHE.ctl by default). Now it refuses, and the file stays.
#[test]
fn serve_refuses_a_control_path_that_is_not_a_socket() {
    let f = Fixture::new();
    let ctl = f.ctl();
    std::fs::write(&ctl, b"precious").unwrap();
    let (code, err, _) = run(f.serve_cmd(&[]), Duration::from_secs(20));
    assert_one_line_error(code, &err, &[&ctl.display().to_string(), "is a regular file, not a socket"]);
    assert_eq!(std::fs::read(&ctl).unwrap(), b"precious");

    // a symbolic link given with --control: neither it nor its target is touched
    let target = f.dir.path().join("target.txt");
    std::fs::write(&target, b"also precious").unwrap();
    let link = f.dir.path().join("link.ctl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (code, err, _) = run(f.serve_cmd(&["--control", link.to_str().unwrap()]), Duration::from_secs(20));
    assert_one_line_error(code, &err, &[&link.display().to_string(), "is a symbolic link"]);
    assert_eq!(std::fs::read(&target).unwrap(), b"also precious");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());

    // a stale socket is replaced, and removed at a clean stop
    std::fs::remove_file(&ctl).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&ctl).unwrap());
    let s = f.serve(&[]);
    let (code, err, _) = run(cli(&["status"], &[&f.cache]), Duration::from_secs(20));
    assert_eq!(code, 0, "{err}");
    assert_eq!(s.stop(), 0);
    assert!(!ctl.exists());
}

/// The NBD listener on the control socket's path (given, or CACHE.ctl by
/// default): refused as such; it used to blame "a running server" (its own
/// listener, bound a moment before).
#[test]
fn serve_refuses_a_unix_listener_on_the_control_socket_path() {
    let f = Fixture::new();
    let ctl = f.ctl();
    let serve = |extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.arg("serve").arg(&f.cache).arg(&f.backing).args(extra);
        run(c, Duration::from_secs(20))
    };
    let listen = format!("unix:{}", ctl.display());
    let (code, err, _) = serve(&["--listen", &listen]);
    assert_one_line_error(code, &err, &["is also the control socket's path"]);
    let other = f.dir.path().join("x.sock");
    let listen = format!("unix:{}", other.display());
    // The same file named two ways.
    let dotted = f.dir.path().join(".").join("x.sock");
    let (code, err, _) = serve(&["--listen", &listen, "--control", dotted.to_str().unwrap()]);
    assert_one_line_error(code, &err, &["is also the control socket's path"]);
    assert!(!ctl.exists() && !other.exists(), "nothing left behind");
}

/// A `create --size` that is refused (too small for any slot, larger than
/// the file system allows, a missing backing store) leaves no file behind;
/// an existing cache file is never removed.
#[test]
fn a_refused_create_leaves_no_new_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("backing.img");
    std::fs::File::create(&backing).unwrap().set_len(4 << 20).unwrap();
    let cache = dir.path().join("new.img");
    for (size, back, want) in [
        ("64KiB", &backing, "creating a cache in"),
        ("1000TiB", &backing, "new.img"),
        ("2MiB", &dir.path().join("missing.img"), "missing.img"),
    ] {
        let mut c = Command::new(BIN);
        c.args(["create", "--segment", "128KiB", "--size", size]).arg(&cache).arg(back);
        let (code, err, _) = run(c, Duration::from_secs(20));
        assert_one_line_error(code, &err, &[want]);
        assert!(!cache.exists(), "--size {size}: {} left behind", cache.display());
    }
    // An existing file given to a refused create stays.
    std::fs::write(&cache, b"mine").unwrap();
    let mut c = Command::new(BIN);
    c.args(["create", "--segment", "128KiB"]).arg(&cache).arg(&backing);
    let (code, _, _) = run(c, Duration::from_secs(20));
    assert_eq!(code, 2);
    assert_eq!(std::fs::read(&cache).unwrap(), b"mine");
}

/// `--clean-rate` of 2^64 B/s or more: refused as too large (it was clamped
/// to 2^64 - 1 without a word); the server never starts.
#[test]
fn a_clean_rate_past_2_to_the_64_is_refused_not_clamped() {
    let f = Fixture::new();
    for rate in ["18446744073709551616", "16777216TiB"] {
        let (code, err, _) = run(f.serve_cmd(&["--max-dirty", "5%", "--clean-rate", rate]), Duration::from_secs(20));
        assert_one_line_error(code, &err, &["--clean-rate", "too large"]);
    }
}

/// The cache named as its own backing store: one line, said once (the
/// chain of causes used to repeat it).
#[test]
fn serve_with_the_cache_as_its_own_backing_store_says_so_once() {
    let f = Fixture::new();
    let (code, err, _) = run(cli(&["serve"], &[&f.cache, &f.cache]), Duration::from_secs(20));
    assert_one_line_error(code, &err, &["are the same file or device"]);
    assert_eq!(err.matches("are the same file or device").count(), 1, "{err}");
}

/// Audit item 3: `status` and `flush` hung for ever on a stopped server.
/// Now they give up after `--timeout` with a one-line error naming the socket.
#[test]
fn status_and_flush_give_up_on_a_stopped_server() {
    let f = Fixture::new();
    let s = f.serve(&[]);
    let ctl = f.ctl().display().to_string();
    s.signal("STOP");
    let (code, err, took) = run(cli(&["status", "--timeout", "1s"], &[&f.cache]), Duration::from_secs(15));
    assert_one_line_error(code, &err, &[&format!("the server behind {ctl} did not answer `status` within 1 s")]);
    assert!(took < Duration::from_secs(5), "{took:?}");
    let (code, err, _) = run(cli(&["flush", "--timeout", "1s"], &[&f.cache]), Duration::from_secs(15));
    assert_one_line_error(code, &err, &["did not answer `flush` within 1 s", "--timeout"]);
    s.signal("CONT");
    let (code, err, _) = run(cli(&["status"], &[&f.cache]), Duration::from_secs(20));
    assert_eq!(code, 0, "{err}");
    let (code, err, _) = run(cli(&["flush"], &[&f.cache]), Duration::from_secs(20));
    assert_eq!(code, 0, "{err}");
    assert_eq!(s.stop(), 0);
}

/// Audit item 3: a control client that never sent its line was held for
/// ever. Now the server closes it within a few seconds and carries on.
#[test]
fn a_control_client_that_sends_nothing_is_cut_off() {
    let f = Fixture::new();
    let s = f.serve(&[]);
    let mut silent = std::os::unix::net::UnixStream::connect(f.ctl()).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let t = Instant::now();
    let mut b = [0u8; 64];
    let n = silent.read(&mut b).expect("closed by the server within 15 s");
    assert_eq!(n, 0);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let (code, err, _) = run(cli(&["status"], &[&f.cache]), Duration::from_secs(20));
    assert_eq!(code, 0, "{err}");
    assert_eq!(s.stop(), 0);
}

/// Connects and negotiates the default export.
fn nbd_ready(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut g = [0u8; 18];
    s.read_exact(&mut g)?;
    let mut m = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes().to_vec();
    m.extend_from_slice(&IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&OPT_GO.to_be_bytes());
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&[0; 6]);
    s.write_all(&m)?;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h)?;
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let mut data = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut data)?;
        if reply == REP_ACK {
            return Ok(s);
        }
        assert_eq!(reply & REP_FLAG_ERROR, 0, "option error {reply:#x}");
    }
}

fn nbd_read(s: &mut TcpStream) -> std::io::Result<()> {
    let h = RequestHeader { flags: 0, kind: CMD_READ, cookie: 9, offset: 0, length: 4096 };
    s.write_all(&encode_request_header(&h))?;
    let mut r = [0u8; 16];
    s.read_exact(&mut r)?;
    assert_eq!(parse_simple_reply(&r).unwrap().errno, 0);
    let mut d = vec![0u8; 4096];
    s.read_exact(&mut d)
}

/// True once the server has closed `s` (within 10 s).
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

/// Audit item 2: the connection limit, the handshake timeout and the idle
/// timeout are flags of `serve`; a server full of idle connections still
/// serves a new client.
#[test]
fn serve_limit_flags_keep_a_full_server_open_to_new_clients() {
    let f = Fixture::new();
    let s = f.serve(&["--max-connections", "2", "--handshake-timeout", "1s", "--idle-timeout", "1s"]);
    // a connection that never negotiates is closed after the handshake timeout
    let mut silent = TcpStream::connect(s.nbd()).unwrap();
    silent.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t = Instant::now();
    let mut g = [0u8; 18];
    silent.read_exact(&mut g).unwrap();
    assert!(closed(&mut silent));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // two idle clients fill the server
    let mut a = nbd_ready(s.nbd()).unwrap();
    let mut b = nbd_ready(s.nbd()).unwrap();
    nbd_read(&mut a).unwrap();
    nbd_read(&mut b).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    nbd_read(&mut b).unwrap(); // b is busy, a has been idle for 1.5 s
    let t = Instant::now();
    let mut c = loop {
        match nbd_ready(s.nbd()) {
            Ok(c) => break c,
            Err(_) if t.elapsed() < Duration::from_secs(5) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("no new client served within 5 s: {e}"),
        }
    };
    nbd_read(&mut c).unwrap();
    assert!(closed(&mut a), "the idle connection was not the one closed");
    nbd_read(&mut b).unwrap();
    assert_eq!(s.stop(), 0);
}

#[test]
fn bad_limit_flags_are_one_line_errors() {
    let f = Fixture::new();
    for (flags, want) in [
        (&["--max-connections", "0"][..], "--max-connections must be at least 1"),
        (&["--max-threads", "0"][..], "--max-threads must be at least 1"),
        (&["--idle-timeout", "0s"][..], "--idle-timeout must be positive"),
        (&["--handshake-timeout", "soon"][..], "--handshake-timeout"),
        (&["--buffer-memory", "1MiB"][..], "--buffer-memory 1MiB: must be at least the maximum block size"),
    ] {
        let (code, err, _) = run(f.serve_cmd(flags), Duration::from_secs(20));
        assert_one_line_error(code, &err, &[want]);
    }
    let (code, err, _) = run(cli(&["status", "--timeout", "0s"], &[&f.cache]), Duration::from_secs(20));
    assert_one_line_error(code, &err, &["--timeout must be positive"]);
}

#[test]
fn bad_cleaner_flags_are_one_line_errors() {
    let f = Fixture::new();
    for (flags, want) in [
        (&["--max-dirty", "150%"][..], "--max-dirty"),
        (&["--max-dirty", "lots"][..], "--max-dirty"),
        (&["--dirty-age", "0s"][..], "--dirty-age must be positive"),
        (&["--dirty-age", "soon"][..], "--dirty-age"),
        (&["--max-dirty", "10%", "--clean-rate", "0"][..], "--clean-rate"),
        (&["--max-dirty", "10%", "--clean-rate", "fast"][..], "--clean-rate"),
        (
            &["--clean-rate", "50MB"][..],
            "--clean-rate limits the cleaner, which runs only with --max-dirty or --dirty-age",
        ),
    ] {
        let (code, err, _) = run(f.serve_cmd(flags), Duration::from_secs(20));
        assert_one_line_error(code, &err, &[want]);
    }
    // Another mode has no dirty data: refused, naming the cache and its mode.
    let dir = tempfile::tempdir().unwrap();
    let (cache, backing) = make_cache(dir.path(), 4 << 20, &["--size", "2MiB", "--mode", "write-through"]);
    let mut c = Command::new(BIN);
    c.arg("serve").arg(&cache).arg(&backing).args(["--listen", "127.0.0.1:0", "--dirty-age", "10min"]);
    let (code, err, _) = run(c, Duration::from_secs(20));
    let named = cache.display().to_string();
    assert_one_line_error(code, &err, &["write-through cache, which never holds dirty data (only", &named]);
}
