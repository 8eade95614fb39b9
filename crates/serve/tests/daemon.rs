//! The `ssdcache serve` daemon run in-process: its control channel, a
//! procedure on demand, a clean stop, and a start that fails before it
//! touches the cache.

use std::path::Path;
use std::time::Duration;

use ssdcache_serve::cache::files::{self, CreateOptions};
use ssdcache_serve::cache::{recover, CacheMode, EngineConfig, FileDevice, StartOptions, Superblock};
use ssdcache_serve::control::socket::{request, Reply};
use ssdcache_serve::daemon::{self, DaemonConfig, Event};
use ssdcache_serve::ServerConfig;
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
        backing_model: None,
        inject_cache: None,
        inject_backing: None,
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
    let daemon = tokio::spawn(daemon::run(cfg, rx, move |a| addr_tx.send(a).unwrap()));
    let addr = addr_rx.await.expect("the daemon listens");
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
    let e = daemon::run(cfg, rx, |_| panic!("not ready")).await.unwrap_err();
    assert!(format!("{e:#}").contains("listening on"), "{e:#}");
    assert!(std::fs::read(&cache).unwrap() == before, "the cache file is untouched");
    assert!(!ctl.exists());
    // A regular file where the control socket would go: refused, kept.
    let mut cfg = config(dir.path(), "127.0.0.1:0");
    std::fs::write(&ctl, b"precious").unwrap();
    cfg.control = ctl.clone();
    let (_tx, rx) = mpsc::unbounded_channel();
    assert!(daemon::run(cfg, rx, |_| panic!("not ready")).await.is_err());
    assert_eq!(std::fs::read(&ctl).unwrap(), b"precious");
    assert!(std::fs::read(&cache).unwrap() == before);
}
