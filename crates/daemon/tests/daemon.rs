//! The `ssdcache serve` daemon run in-process: its control channel, a
//! procedure on demand, a clean stop, and a start that fails before it
//! touches the cache.

use std::path::Path;
use std::time::Duration;

use ssdcache_daemon::control::socket::{request, Reply};
use ssdcache_daemon::{DaemonConfig, Event};
use ssdcache_engine::files::{self, CreateOptions};
use ssdcache_engine::{recover, CacheMode, EngineConfig, FileDevice, StartOptions, Superblock};
use ssdcache_server::ServerConfig;
use tokio::sync::mpsc;

fn config(dir: &Path, listen: &str) -> DaemonConfig {
    let (cache, backing) = (dir.join("cache"), dir.join("backing"));
    if !cache.exists() {
        std::fs::File::create(&cache).unwrap().set_len(8 << 20).unwrap();
        std::fs::File::create(&backing).unwrap().set_len(32 << 20).unwrap();
        files::create(&cache, &backing, 128 << 10, CacheMode::WriteBack, CreateOptions::default()).unwrap();
    }
    DaemonConfig {
        cache,
        backing,
        listen: listen.parse().unwrap(),
        export: "disk".into(),
        period: Duration::from_secs(3600),
        idle: None,
        engine: EngineConfig::default(),
        start: StartOptions::default(),
        control: dir.join("cache.ctl"),
        server: ServerConfig::default(),
        metrics: None,
        metrics_limits: Default::default(),
        backing_model: None,
        inject_cache: None,
        inject_backing: None,
        read_only: false,
        record: None,
        whatif: None,
        trim: Default::default(),
    }
}

/// Whether the newest proven save says clean.
fn clean(cache: &Path) -> bool {
    let dev = FileDevice::open(cache).unwrap();
    let sb = Superblock::read(&dev).unwrap();
    recover::load(&sb.store(&dev).unwrap()).unwrap().meta.clean
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_answers_its_control_socket_and_stops_clean() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "127.0.0.1:0");
    let (cache, ctl) = (cfg.cache.clone(), cfg.control.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let daemon = tokio::spawn(ssdcache_daemon::run(cfg, rx, move |a| addr_tx.send(a).unwrap()));
    let addr = addr_rx.await.expect("the daemon listens");
    let ssdcache_server::ListenAddr::Tcp(addr) = addr else { panic!("{addr} is not TCP") };
    assert_ne!(addr.port(), 0);
    assert!(!clean(&cache), "running: not clean");
    let status = {
        let ctl = ctl.clone();
        tokio::task::spawn_blocking(move || request(&ctl, "status", Duration::from_secs(10))).await.unwrap().unwrap()
    };
    let Reply::Ok(v) = status else { panic!("no answer") };
    assert_eq!(v["status"]["mode"], "write-back");
    tx.send(Event::Maintain).unwrap();
    tx.send(Event::Stop).unwrap();
    tokio::time::timeout(Duration::from_secs(30), daemon).await.expect("stops").unwrap().unwrap();
    assert!(clean(&cache), "a stop saves the clean bit");
    assert!(!ctl.exists(), "the control socket is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_that_fails_leaves_the_cache_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cfg = config(dir.path(), &busy.local_addr().unwrap().to_string());
    let (cache, ctl) = (cfg.cache.clone(), cfg.control.clone());
    let before = std::fs::read(&cache).unwrap();
    let (_tx, rx) = mpsc::unbounded_channel();
    let e = ssdcache_daemon::run(cfg, rx, |_| panic!("not ready")).await.unwrap_err();
    assert!(format!("{e:#}").contains("listening on"), "{e:#}");
    assert!(std::fs::read(&cache).unwrap() == before, "the cache file is untouched");
    assert!(!ctl.exists());
    // A regular file where the control socket would go: refused, kept.
    let mut cfg = config(dir.path(), "127.0.0.1:0");
    std::fs::write(&ctl, b"precious").unwrap();
    cfg.control = ctl.clone();
    let (_tx, rx) = mpsc::unbounded_channel();
    assert!(ssdcache_daemon::run(cfg, rx, |_| panic!("not ready")).await.is_err());
    assert_eq!(std::fs::read(&ctl).unwrap(), b"precious");
    assert!(std::fs::read(&cache).unwrap() == before);
}

/// `serve --read-only`: the export says read-only and a write is refused with
/// EPERM (a raw client: NBD_OPT_GO, then one write and one read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_daemon_refuses_writes() {
    use ssdcache_nbd::consts::*;
    use ssdcache_nbd::request::{encode_request_header, parse_simple_reply, RequestHeader};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), "127.0.0.1:0");
    cfg.read_only = true;
    let backing = cfg.backing.clone();
    let (tx, rx) = mpsc::unbounded_channel();
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let daemon = tokio::spawn(ssdcache_daemon::run(cfg, rx, move |a| addr_tx.send(a).unwrap()));
    let addr = addr_rx.await.expect("the daemon listens");
    let ssdcache_server::ListenAddr::Tcp(addr) = addr else { panic!("{addr} is not TCP") };
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).await.unwrap();
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).await.unwrap();
    let mut go = IHAVEOPT.to_be_bytes().to_vec();
    go.extend_from_slice(&OPT_GO.to_be_bytes());
    go.extend_from_slice(&10u32.to_be_bytes());
    go.extend_from_slice(&4u32.to_be_bytes());
    go.extend_from_slice(b"disk");
    go.extend_from_slice(&0u16.to_be_bytes());
    s.write_all(&go).await.unwrap();
    let mut flags = None;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).await.unwrap();
        let mut d = vec![0u8; u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize];
        s.read_exact(&mut d).await.unwrap();
        match u32::from_be_bytes(h[12..16].try_into().unwrap()) {
            REP_INFO if d[0..2] == INFO_EXPORT.to_be_bytes() => flags = Some(u16::from_be_bytes([d[10], d[11]])),
            REP_INFO => {}
            r => {
                assert_eq!(r, REP_ACK);
                break;
            }
        }
    }
    assert_eq!(flags.unwrap() & FLAG_READ_ONLY, FLAG_READ_ONLY);
    for (kind, len, payload) in [(CMD_WRITE, 4u32, &b"abcd"[..]), (CMD_READ, 4, &[][..])] {
        let mut m =
            encode_request_header(&RequestHeader { flags: 0, kind, cookie: 1, offset: 0, length: len as u64 }).to_vec();
        m.extend_from_slice(payload);
        s.write_all(&m).await.unwrap();
        let mut r = [0u8; 16];
        s.read_exact(&mut r).await.unwrap();
        let want = if kind == CMD_WRITE { EPERM } else { 0 };
        assert_eq!(parse_simple_reply(&r).unwrap().errno, want);
        if kind == CMD_READ {
            let mut d = [0u8; 4];
            s.read_exact(&mut d).await.unwrap();
            assert_eq!(d, [0; 4]);
        }
    }
    drop(s);
    tx.send(Event::Stop).unwrap();
    tokio::time::timeout(Duration::from_secs(30), daemon).await.expect("stops").unwrap().unwrap();
    assert!(std::fs::read(&backing).unwrap().iter().all(|&b| b == 0), "nothing was written");
}
