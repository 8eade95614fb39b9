//! Device faults under the cache engine (issue: "nothing acknowledged is
//! ever lost"): cache-device and backing-device errors, short I/O, a cache
//! file truncated under a running cache. Every case checks that what was
//! acknowledged (and flushed) reads back, or that the request failed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ssdcache_block::Backend;
use ssdcache_engine::files::{self, CreateOptions};
use ssdcache_engine::inject::{FaultPlan, InjectDevice};
use ssdcache_engine::meta::{region_len, Geometry};
use ssdcache_engine::CacheMode;
use ssdcache_engine::{BlockDevice, CacheMap, CachedBackend, EngineConfig, MemDevice, MetaStore, StartOptions};

const SEG: u64 = 8192;
const SLOTS: u32 = 4;
const HDD_SEGS: u64 = 32;

type Dev = Arc<InjectDevice<MemDevice>>;

struct Rig {
    ssd: Dev,
    hdd: Dev,
    meta: Arc<MemDevice>,
}

fn geom() -> Geometry {
    Geometry { segment_size: SEG as u32, ssd_segments: SLOTS, hdd_segments: HDD_SEGS }
}

impl Rig {
    /// A formatted cache whose HDD holds byte `h` in segment `h`; faults
    /// from the two plans, switched off until [`Rig::faults`].
    fn new(ssd_plan: &str, hdd_plan: &str) -> Rig {
        let hdd: Vec<u8> = (0..SEG * HDD_SEGS).map(|i| (i / SEG) as u8).collect();
        let wrap = |d: MemDevice, plan: &str| {
            let d = InjectDevice::new(d, plan.parse::<FaultPlan>().unwrap());
            d.set_enabled(false);
            Arc::new(d)
        };
        let rig = Rig {
            ssd: wrap(MemDevice::new((SEG * SLOTS as u64) as usize), ssd_plan),
            hdd: wrap(MemDevice::from_vec(hdd), hdd_plan),
            meta: Arc::new(MemDevice::new(region_len(&geom()) as usize)),
        };
        MetaStore::new(rig.meta.clone(), 0, geom()).unwrap().format().unwrap();
        rig
    }

    fn open(&self, mode: CacheMode, opts: StartOptions, limit: u64) -> CachedBackend<Dev, Dev, Arc<MemDevice>> {
        let store = MetaStore::new(self.meta.clone(), 0, geom()).unwrap();
        let (map, _) = CacheMap::open_with(self.ssd.clone(), self.hdd.clone(), store, opts, mode.write_mode()).unwrap();
        CachedBackend::new(map, mode, &EngineConfig { error_limit: limit, ..Default::default() }).unwrap()
    }

    fn faults(&self, ssd: bool, hdd: bool) {
        self.ssd.set_enabled(ssd);
        self.hdd.set_enabled(hdd);
    }

    fn hdd_byte(&self, off: u64) -> u8 {
        let mut b = [0u8];
        self.hdd.inner().read_at(&mut b, off).unwrap();
        b[0]
    }
}

fn read(e: &dyn Backend, off: u64, len: usize) -> std::io::Result<Vec<u8>> {
    let mut b = vec![0u8; len];
    e.read_at(&mut b, off).map(|()| b)
}

/// Makes PWC cache segments `segs` (each referenced often enough, §3.3).
fn cache_segments(e: &CachedBackend<Dev, Dev, Arc<MemDevice>>, segs: &[u64]) {
    for _ in 0..5 {
        for &h in segs {
            read(e, h * SEG, 1).unwrap();
            read(e, (HDD_SEGS - 1) * SEG, 1).unwrap();
        }
    }
    e.maintain().unwrap();
    let cached: Vec<u64> = e.mapping().into_iter().flatten().collect();
    for h in segs {
        assert!(cached.contains(h), "segment {h} cached ({cached:?})");
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cache_read_errors_serve_clean_segments_from_backing_and_fail_dirty_ones_then_degrade_and_settle() {
    let rig = Rig::new("read:eio", "");
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 3);
    cache_segments(&e, &[1, 2, 3]);
    e.write_at(&[0xD1; 100], 2 * SEG + 10, false).unwrap(); // segment 2 dirty
    e.flush().unwrap();
    rig.faults(true, false);
    // Clean cached segments come from the backing store, intact.
    assert_eq!(read(&e, SEG, 64).unwrap(), vec![1u8; 64]);
    assert_eq!(read(&e, 3 * SEG, 64).unwrap(), vec![3u8; 64]);
    // The dirty one's newest data is only on the cache: an error, never stale data.
    let err = read(&e, 2 * SEG, 200).unwrap_err();
    assert!(err.to_string().contains("not yet on the backing store"), "{err}");
    let st = e.status();
    assert_eq!((st.map.ssd_errors, st.map.degraded), (3, true), "three errors reach the limit");
    // Degraded: writes go through to the backing store as well.
    e.write_at(&[0xAB; 10], 5 * SEG, false).unwrap();
    e.write_at(&[0xCD; 10], 3 * SEG, false).unwrap();
    assert_eq!(rig.hdd_byte(3 * SEG), 0xCD);
    // The settling thread cannot write segment 2 back while reads fail...
    e.start_period(Duration::from_secs(3600), None);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(e.status().map.dirty, 1);
    assert_eq!(rig.hdd_byte(2 * SEG + 10), 2, "never written back blindly");
    // ...and does once the device answers again, then caches nothing.
    rig.faults(false, false);
    wait_for("the degraded cache to settle", || e.status().map.cached == 0);
    assert_eq!(rig.hdd_byte(2 * SEG + 10), 0xD1);
    assert_eq!(e.maintain().unwrap_err().to_string(), "the cache is degraded: nothing new is cached");
    e.shutdown().unwrap();
    drop(e);
    // Degraded survives a restart until the operator clears it.
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 3);
    assert!(e.status().map.degraded);
    e.shutdown().unwrap();
    drop(e);
    let clear = StartOptions { clear_degraded: true, ..Default::default() };
    let e = rig.open(CacheMode::WriteBack, clear, 3);
    assert!(!e.status().map.degraded);
    assert_eq!(read(&e, 2 * SEG + 10, 100).unwrap(), vec![0xD1; 100]);
}

#[test]
fn a_failed_cache_write_is_an_error_unless_the_backing_store_has_it() {
    let rig = Rig::new("write:eio:count=1;write:short:count=1", "");
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 100);
    cache_segments(&e, &[4]);
    rig.faults(true, false);
    // Write-back: the write would go to the cache only, so it fails (twice:
    // an error, then a short write).
    assert!(e.write_at(&[9; 4096], 4 * SEG, false).is_err());
    assert!(e.write_at(&[9; 4096], 4 * SEG, false).is_err());
    assert_eq!(e.status().map.ssd_errors, 2);
    let rig = Rig::new("write:enospc", "");
    let e = rig.open(CacheMode::WriteThrough, StartOptions::default(), 1000);
    read(&e, 6 * SEG, 1).unwrap(); // filled on the miss
    assert!(e.mapping().contains(&Some(6)));
    rig.faults(true, false);
    // Write-through: the backing store has the write, so the stale slot is
    // dropped (and the map saved) and the write acknowledged.
    e.write_at(&[0x77; 512], 6 * SEG, false).unwrap();
    assert!(!e.mapping().contains(&Some(6)));
    assert_eq!(read(&e, 6 * SEG, 512).unwrap(), vec![0x77; 512]);
}

#[test]
fn write_through_fills_that_fail_are_skipped_and_requests_are_served_from_backing() {
    let rig = Rig::new("write:enospc", "");
    let e = rig.open(CacheMode::WriteThrough, StartOptions::default(), 1_000_000);
    rig.faults(true, false);
    // 100 reads of intact data and 40 write misses over 30 segments: every
    // fill fails (cache full), every request succeeds from the backing store.
    for i in 0..100u64 {
        let h = i % 30;
        assert_eq!(read(&e, h * SEG + 7, 33).unwrap(), vec![h as u8; 33], "read {i}");
    }
    for i in 0..40u64 {
        let h = (i * 7) % 30;
        e.write_at(&[0xE0 | (i as u8 & 15); 64], h * SEG + 100, false).unwrap();
        assert_eq!(rig.hdd_byte(h * SEG + 100), 0xE0 | (i as u8 & 15), "write {i} reached the backing store");
    }
    assert!(e.mapping().iter().all(Option::is_none));
    assert!(e.status().map.ssd_errors >= 100);
}

#[test]
fn backing_errors_fail_requests_and_a_failed_write_back_keeps_the_segment_dirty() {
    let rig = Rig::new("", "write:eio");
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 8);
    cache_segments(&e, &[7]);
    e.write_at(&[0x42; 64], 7 * SEG, false).unwrap();
    rig.faults(false, true);
    assert!(e.write_at(&[1; 64], 9 * SEG, false).is_err(), "an uncached write to a failing backing store fails");
    // The procedure writes back first: it fails, the segment stays dirty, and
    // status does not say a procedure is running.
    for _ in 0..5 {
        read(&e, 8 * SEG, 1).unwrap();
        read(&e, (HDD_SEGS - 1) * SEG, 1).unwrap();
    }
    assert!(e.maintain().is_err());
    let st = e.status();
    assert_eq!((st.map.dirty, st.map.in_procedure), (1, false));
    // The failed procedure moved nothing: a write to the cached segment
    // stays on the cache (it went through to the failing BACKING, EIO).
    e.write_at(&[0x42; 64], 7 * SEG + 64, false).unwrap();
    assert!(e.write_back().is_err());
    assert!(e.shutdown().unwrap_err().to_string().contains("could not be written back"));
    assert_eq!(rig.hdd_byte(7 * SEG), 7, "nothing written back");
    drop(e); // the server exits here
    rig.faults(false, false);
    // The save still says not clean: the next start writes segment 7 back.
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 8);
    assert_eq!(rig.hdd_byte(7 * SEG), 0x42);
    assert_eq!(read(&e, 7 * SEG, 128).unwrap(), vec![0x42; 128]);
}

/// The cache file truncated under a running cache: reads of cached segments
/// fail, a write does not re-extend the file, and shutdown writes nothing
/// over the backing store (it used to write zero segments over good data).
#[test]
fn a_cache_file_truncated_underneath_never_reaches_the_backing_store() {
    let dir = tempfile::tempdir().unwrap();
    let (c, b) = (dir.path().join("cache"), dir.path().join("backing"));
    std::fs::File::create(&c).unwrap().set_len(8 << 20).unwrap();
    let pattern: Vec<u8> = (0..32u64 << 20).map(|i| (i >> 17) as u8 ^ 0x5A).collect();
    std::fs::write(&b, &pattern).unwrap();
    files::create(&c, &b, 128 << 10, CacheMode::WriteBack, CreateOptions::default()).unwrap();
    let config = EngineConfig::default();
    let (e, ..) = files::open_files(&c, &b, &files::no_wrap, &config, StartOptions::default()).unwrap();
    let seg = 128u64 << 10;
    for _ in 0..5 {
        for h in 0..20u64 {
            read(&e, h * seg, 1).unwrap();
        }
    }
    e.maintain().unwrap();
    assert_eq!(e.mapping().iter().flatten().count(), 20);
    std::fs::OpenOptions::new().write(true).open(&c).unwrap().set_len(0).unwrap();
    assert!(read(&e, 0, 4096).is_err() || e.status().map.degraded);
    assert!(e.write_at(&[1; 4096], 3 * seg, false).is_err());
    assert_eq!(std::fs::metadata(&c).unwrap().len(), 0, "not re-extended");
    assert!(e.status().map.degraded, "a device that shrank degrades the cache at once");
    let _ = e.shutdown();
    drop(e);
    // The failed write went through to the backing store first (allowed: a
    // failed write leaves its bytes unspecified); every other byte is as it was.
    let mut after = std::fs::read(&b).unwrap();
    let w = (3 * seg) as usize..(3 * seg) as usize + 4096;
    assert!(after[w.clone()] == pattern[w.clone()] || after[w.clone()].iter().all(|&x| x == 1));
    after[w.clone()].copy_from_slice(&pattern[w]);
    assert!(after == pattern, "the backing store is untouched (no zero segments written back)");
}

/// A failed cache write whose unmapping cannot be saved either (the
/// metadata lives on the failing device too): the write is not
/// acknowledged, and the segment is read from the backing store and refuses
/// writes until a save drops the stale slot — else a crash would copy the
/// stale slot back over acknowledged writes.
#[test]
fn a_stale_slot_that_cannot_be_unmapped_durably_refuses_writes() {
    let rig = Rig::new("write:eio", "");
    let meta = Arc::new(InjectDevice::new(MemDevice::new(region_len(&geom()) as usize), "write:eio".parse().unwrap()));
    meta.set_enabled(false);
    let store = MetaStore::new(meta.clone(), 0, geom()).unwrap();
    store.format().unwrap();
    let (map, _) = CacheMap::open_with(
        rig.ssd.clone(),
        rig.hdd.clone(),
        store,
        StartOptions::default(),
        CacheMode::WriteThrough.write_mode(),
    )
    .unwrap();
    let e = CachedBackend::new(map, CacheMode::WriteThrough, &EngineConfig::default()).unwrap();
    read(&e, 6 * SEG, 1).unwrap();
    assert!(e.mapping().contains(&Some(6)));
    rig.faults(true, false);
    meta.set_enabled(true);
    let err = e.write_at(&[0x77; 512], 6 * SEG, false).unwrap_err();
    assert!(err.to_string().contains("could not be saved"), "{err}");
    assert!(e.write_at(&[0x78; 512], 6 * SEG + 4096, false).unwrap_err().to_string().contains("cannot be written"));
    // Reads see the backing store (which the failed write reached first).
    assert_eq!(read(&e, 6 * SEG, 512).unwrap(), vec![0x77; 512]);
    assert_eq!(read(&e, 6 * SEG + 4096, 4).unwrap(), vec![6; 4]);
}

/// A degraded write-back cache still holding dirty slots (its settling not
/// yet run): a write to a dirty segment goes to the backing store together
/// with the slot's dirty bytes, and is acknowledged — it used to fail with
/// EIO until the settling thread had written that slot back (issue 26: a
/// burst of failed writes growing with the dirty count).
#[test]
fn a_degraded_cache_writes_dirty_segments_through_without_an_error_burst() {
    let rig = Rig::new("write:eio", "");
    let e = rig.open(CacheMode::WriteBack, StartOptions::default(), 2);
    cache_segments(&e, &[1, 2, 3]);
    for h in [1u64, 2, 3] {
        e.write_at(&[0xD0 | h as u8; 64], h * SEG + 100, false).unwrap(); // dirty, on the cache only
    }
    e.flush().unwrap();
    assert_eq!(e.status().map.dirty, 3);
    rig.faults(true, false);
    // The two allowed errors (write-back: the cache is the only copy).
    assert!(e.write_at(&[1; 16], SEG, false).is_err());
    assert!(e.write_at(&[1; 16], SEG, false).is_err());
    assert!(e.status().map.degraded);
    // Degraded, nothing settled yet: not one failed write.
    let mut failed = 0;
    for i in 0..60u64 {
        let h = 1 + i % 3;
        let at = h * SEG + 1024 + (i % 7) * 512;
        failed += e.write_at(&[0xA0 | (i % 16) as u8; 512], at, false).is_err() as u32;
    }
    assert_eq!(failed, 0, "writes to dirty segments of a degraded cache failed");
    e.flush().unwrap();
    assert_eq!(e.status().map.dirty, 0);
    let cached: Vec<u64> = e.mapping().into_iter().flatten().collect();
    assert!(![1, 2, 3].iter().any(|h| cached.contains(h)), "each slot written back and dropped: {cached:?}");
    // Every acknowledged byte is on the backing store: the dirty bytes of
    // before, the new writes, the rest untouched.
    for h in [1u64, 2, 3] {
        let mut want = vec![h as u8; SEG as usize];
        want[100..164].fill(0xD0 | h as u8);
        for i in (0..60u64).filter(|i| 1 + i % 3 == h) {
            let at = (1024 + (i % 7) * 512) as usize;
            want[at..at + 512].fill(0xA0 | (i % 16) as u8);
        }
        assert_eq!(read(&e, h * SEG, SEG as usize).unwrap(), want, "segment {h} read back");
        let mut on_hdd = vec![0u8; SEG as usize];
        rig.hdd.inner().read_at(&mut on_hdd, h * SEG).unwrap();
        assert!(on_hdd == want, "segment {h} on the backing store");
    }
}
