//! The cache engine: paper 000's persistent write-back SSD cache (PWC) served
//! as an NBD [`Backend`], its hot-segment decisions taken by the simulator's
//! own PWC policy (`ssdcache::policy::tiered::pwc::Pwc`).
//!
//! - **Data path**: every request goes through a [`CacheMap`] (SSD slot map,
//!   dirty bitmap, write-back), all behind one mutex — simple and correct
//!   first; requests of all connections are serialised.
//! - **Flush / FUA** = [`CacheMap::flush`], which syncs both devices, so a
//!   flush on one connection covers every connection: `multi_conn` is true.
//! - **Trim and write-zeroes** write zeroes through the map (exact; a trim is
//!   only a hint, so zeroing is allowed). A trim is not a PWC reference (as in
//!   the simulator); write-zeroes is a write.
//! - **Decisions**: each request's segments are fed to a [`Pwc`] instance,
//!   one [`Access`] per segment touched. The simulator keys pages as
//!   `dev<<44 | page` and PWC groups them as `key / pages_per_segment`; with
//!   one device that is `byte offset / segment size`, which is the key we
//!   feed, to a `Pwc` configured with one "page" per segment. The frequency
//!   behaviour is identical: PWC counts consecutive references to one segment
//!   once, so a request's pages (or several requests in a row) in one segment
//!   are one reference either way. [`CachedBackend::maintain`] runs
//!   [`Pwc::procedure`] and turns the slot→segment [`Pwc::mapping`] it leaves
//!   into the plan of [`CacheMap::caching_and_eviction`]: the slots whose
//!   segment changed, in the order PWC's evict clock visited them (from the
//!   slot after its previous position), so the persisted evict clock is PWC's.
//! - **Period**: [`CachedBackend::start_period`] runs `maintain` from a
//!   background thread every `period` (paper 000 §4.1: once a day); it can
//!   also be called on demand.
//! - **Shutdown** ([`Backend::shutdown`]): stops the period thread, then
//!   [`CacheMap::shutdown`]: every dirty segment written back, metadata saved
//!   with the clean bit.
//!
//! **Restart.** `Pwc` is seeded ([`Pwc::restore`]) from the loaded metadata:
//! the address map, the evict clock and the frequency of every touched
//! segment. The frequency table persisted by [`CacheMap`] is
//! PWC's own table (reads and writes, decayed at each procedure): the engine
//! hands it to the map before each procedure and at shutdown. After a crash
//! the table is the one of the last procedure or clean stop.
//!
//! **On-disk layout of a cache file** (ours; the paper keeps the metadata "on
//! the HDD or the SSD", §3.2): bytes `0..4096` are a [`Superblock`] written
//! once by `create` and never again (so no later save can tear it): it names
//! the geometry and where the rest lives; then the two metadata slots
//! ([`super::meta`]) at [`META_OFFSET`]; then the SSD slots, slot `s` at
//! `data_offset + s·segment`. The backing file is the HDD as it is: segment
//! `h` at `h·segment`, so it stays a plain image usable without the cache
//! after a clean shutdown.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ssdcache::policy::tiered::pwc::{Pwc, PwcConfig};
use ssdcache::policy::{Access, Effects, Policy, NEVER};
use ssdcache::trace::Op;

use super::device::{check_range, BlockDevice, FileDevice};
use super::map::CacheMap;
use super::meta::{region_len, Geometry, MetaStore, SLOT_ALIGN};
use super::recover::{RecoverError, Started};
use crate::Backend;

/// A window of another device: `len` bytes from `base`.
#[derive(Debug)]
pub struct Region<D> {
    dev: D,
    base: u64,
    len: u64,
}

impl<D: BlockDevice> Region<D> {
    /// The bytes `base..base+len` of `dev`.
    pub fn new(dev: D, base: u64, len: u64) -> io::Result<Self> {
        check_range(dev.len(), base, len as usize)?;
        Ok(Region { dev, base, len })
    }
}

impl<D: BlockDevice> BlockDevice for Region<D> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
        self.dev.read_at(buf, self.base + offset)
    }
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, data.len())?;
        self.dev.write_at(data, self.base + offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.dev.sync()
    }
}

/// First bytes of a cache file.
pub const SUPER_MAGIC: [u8; 8] = *b"SSDCACHE";
/// Superblock layout version.
pub const SUPER_FORMAT: u16 = 1;
/// Where the metadata region starts in a cache file (after the superblock).
pub const META_OFFSET: u64 = 4096;

/// The fixed header of a cache file. Layout (little-endian): magic (8),
/// format u16, reserved u16, segment size u32, SSD segments u32, reserved
/// u32, HDD segments u64, metadata offset u64, data offset u64, CRC-32C of
/// bytes 0..48 (u32); zero to 4096.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// The cache's shape.
    pub geometry: Geometry,
    /// Offset of the two-slot metadata region.
    pub meta_offset: u64,
    /// Offset of SSD slot 0.
    pub data_offset: u64,
}

impl Superblock {
    /// The largest cache that fits a `cache_len`-byte file for a
    /// `backing_len`-byte backing store in `segment`-byte segments.
    pub fn plan(cache_len: u64, backing_len: u64, segment: u32) -> Result<Superblock, String> {
        let seg = segment as u64;
        if segment == 0 || !seg.is_multiple_of(4096) {
            return Err(format!("segment size {segment} must be a positive multiple of 4096"));
        }
        if backing_len == 0 || !backing_len.is_multiple_of(seg) {
            return Err(format!(
                "the backing store's size {backing_len} is not a positive multiple of the segment size {segment}"
            ));
        }
        let hdd = backing_len / seg;
        let layout = |s: u32| {
            let g = Geometry { segment_size: segment, ssd_segments: s, hdd_segments: hdd };
            let data_offset = META_OFFSET + region_len(&g);
            Superblock { geometry: g, meta_offset: META_OFFSET, data_offset }
        };
        let mut s = (cache_len.saturating_sub(META_OFFSET) / seg).min(u32::MAX as u64) as u32;
        while s > 0 && layout(s).end() > cache_len {
            s -= 1;
        }
        if s == 0 {
            return Err(format!(
                "a {cache_len}-byte cache file holds no {segment}-byte segment after its metadata ({} bytes)",
                layout(1).data_offset
            ));
        }
        Ok(layout(s))
    }

    /// Bytes of the cache file used.
    pub fn end(&self) -> u64 {
        self.data_offset + self.geometry.ssd_segments as u64 * self.geometry.segment_size as u64
    }

    /// The 4096-byte encoding.
    pub fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        let mut b = vec![0u8; SLOT_ALIGN as usize];
        b[0..8].copy_from_slice(&SUPER_MAGIC);
        b[8..10].copy_from_slice(&SUPER_FORMAT.to_le_bytes());
        b[12..16].copy_from_slice(&g.segment_size.to_le_bytes());
        b[16..20].copy_from_slice(&g.ssd_segments.to_le_bytes());
        b[24..32].copy_from_slice(&g.hdd_segments.to_le_bytes());
        b[32..40].copy_from_slice(&self.meta_offset.to_le_bytes());
        b[40..48].copy_from_slice(&self.data_offset.to_le_bytes());
        let crc = crc32c::crc32c(&b[..48]);
        b[48..52].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a superblock; `None` if `b` does not start with the magic.
    pub fn decode(b: &[u8]) -> Option<Result<Superblock, String>> {
        if b.len() < 52 || b[0..8] != SUPER_MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let format = u16::from_le_bytes([b[8], b[9]]);
        Some(if crc32c::crc32c(&b[..48]) != u32_at(48) {
            Err("superblock checksum mismatch".into())
        } else if format != SUPER_FORMAT {
            Err(format!("unknown superblock format {format}"))
        } else {
            let g = Geometry { segment_size: u32_at(12), ssd_segments: u32_at(16), hdd_segments: u64_at(24) };
            let sb = Superblock { geometry: g, meta_offset: u64_at(32), data_offset: u64_at(40) };
            if g.segment_size == 0 || sb.meta_offset + region_len(&g) > sb.data_offset {
                Err(format!("inconsistent superblock {sb:?}"))
            } else {
                Ok(sb)
            }
        })
    }

    /// Reads the superblock of a cache file.
    pub fn read(dev: &dyn BlockDevice) -> io::Result<Superblock> {
        let mut b = vec![0u8; 52.min(dev.len() as usize)];
        dev.read_at(&mut b, 0)?;
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        match Superblock::decode(&b) {
            None => Err(bad("not an ssdcache cache file (no superblock; create it with `ssdcache create`)".into())),
            Some(Err(e)) => Err(bad(e)),
            Some(Ok(sb)) if sb.end() > dev.len() => {
                Err(bad(format!("the cache file has {} bytes, its superblock needs {}", dev.len(), sb.end())))
            }
            Some(Ok(sb)) => Ok(sb),
        }
    }

    /// The metadata region of a cache file.
    pub fn store<D: BlockDevice>(&self, dev: D) -> io::Result<MetaStore<D>> {
        MetaStore::new(dev, self.meta_offset, self.geometry)
    }
}

/// Formats `cache` as a cache for `backing` (whose size fixes the HDD
/// segments): superblock zeroed, both metadata slots written empty, then the
/// superblock, each step synced (a cut leaves no superblock, i.e. no cache).
/// Refuses a file that already holds a cache unless `force`.
pub fn create(cache: &Path, backing: &Path, segment: u32, force: bool) -> io::Result<Superblock> {
    let dev = FileDevice::open(cache)?;
    let hdd = FileDevice::open(backing)?;
    let sb =
        Superblock::plan(dev.len(), hdd.len(), segment).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut head = vec![0u8; 52.min(dev.len() as usize)];
    dev.read_at(&mut head, 0)?;
    if Superblock::decode(&head).is_some() && !force {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} already holds an ssdcache cache; --force overwrites it, discarding what it caches \
                 (including writes not yet written back if it was not shut down cleanly: see `ssdcache check`)",
                cache.display()
            ),
        ));
    }
    dev.write_at(&vec![0u8; SLOT_ALIGN as usize], 0)?;
    dev.sync()?;
    sb.store(&dev)?.format()?;
    dev.write_at(&sb.encode(), 0)?;
    dev.sync()?;
    Ok(sb)
}

/// The engine over files: SSD slots in a window of the cache file, metadata
/// through a second handle on it, the backing file as the HDD.
pub type FileCache = CachedBackend<Region<FileDevice>, FileDevice, FileDevice>;

/// Why a cache could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A file could not be opened or is not a cache.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The start procedure refused.
    #[error("{0}")]
    Recover(#[from] RecoverError),
}

/// Opens a cache file and its backing file and runs the start procedure.
pub fn open_files(cache: &Path, backing: &Path, force: bool) -> Result<(FileCache, Started), OpenError> {
    let open =
        |p: &Path| -> io::Result<FileDevice> { FileDevice::from_file(File::options().read(true).write(true).open(p)?) };
    let meta_dev = open(cache)?;
    let sb = Superblock::read(&meta_dev)?;
    let g = sb.geometry;
    let ssd = Region::new(open(cache)?, sb.data_offset, g.ssd_segments as u64 * g.segment_size as u64)?;
    let hdd = open(backing)?;
    let want = g.hdd_segments * g.segment_size as u64;
    if hdd.len() != want {
        return Err(OpenError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the backing store has {} bytes; this cache was created for one of {want}", hdd.len()),
        )));
    }
    let (map, started) = CacheMap::open(ssd, hdd, sb.store(meta_dev)?, force)?;
    Ok((CachedBackend::new(map), started))
}

/// What one maintenance run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaintainReport {
    /// `(slot, segment)` newly cached, in evict-clock order.
    pub plan: Vec<(u32, u64)>,
    /// Slots holding a segment afterwards.
    pub cached: usize,
}

struct State<S, H, M> {
    /// `None` once shut down.
    map: Option<CacheMap<S, H, M>>,
    pwc: Pwc,
    fx: Effects,
    seq: u64,
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> State<S, H, M> {
    fn map(&mut self) -> io::Result<&mut CacheMap<S, H, M>> {
        self.map.as_mut().ok_or_else(|| io::Error::other("the cache has been shut down"))
    }

    /// Feeds the segments of `offset..offset+len` to PWC.
    fn reference(&mut self, op: Op, offset: u64, len: u64, seg: u64) {
        if len == 0 {
            return;
        }
        for key in offset / seg..=(offset + len - 1) / seg {
            let a = Access { time: 0, key, op, partial: false, seq: self.seq, next_use: NEVER };
            self.seq += 1;
            self.fx.clear();
            self.pwc.access(&a, &mut self.fx);
        }
    }

    fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        let map = self.map()?;
        let zeros = vec![0u8; len.min(1 << 20) as usize];
        let mut at = offset;
        while at < offset + len {
            let n = (offset + len - at).min(zeros.len() as u64) as usize;
            map.write(&zeros[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }

    /// Seeds PWC from the map's metadata.
    fn resync(&mut self) {
        if let Some(map) = &self.map {
            let m = map.meta();
            let freq =
                m.touched.iter().zip(&m.freq).enumerate().filter(|(_, (t, _))| **t).map(|(h, (_, f))| (h as u64, *f));
            self.pwc.restore(&m.map, freq, m.evict_hand as usize);
        }
    }
}

struct Shared<S, H, M> {
    state: Mutex<State<S, H, M>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl<S: BlockDevice, H: BlockDevice, M: BlockDevice> Shared<S, H, M> {
    fn lock(&self) -> MutexGuard<'_, State<S, H, M>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn maintain(&self) -> io::Result<MaintainReport> {
        let mut st = self.lock();
        st.map()?;
        let n = st.pwc.slots();
        let hand = st.pwc.evict_clock();
        st.fx.clear();
        let State { pwc, fx, map, .. } = &mut *st;
        pwc.procedure(fx);
        let new = pwc.mapping();
        let map = map.as_mut().expect("checked above");
        let old = &map.meta().map;
        // The slots PWC refilled, in the order its evict clock met them.
        let plan: Vec<(u32, u64)> = (1..=n)
            .map(|i| (hand + i) % n)
            .filter(|&s| new[s] != old[s])
            .map(|s| (s as u32, new[s].expect("PWC empties no slot")))
            .collect();
        // Persist PWC's (decayed) frequencies with the procedure's saves, so a
        // restart resumes its decisions.
        map.set_frequencies(|h| pwc.touched_frequency(h));
        let r = map.caching_and_eviction(&plan);
        if r.is_err() {
            // The map may be half done: make PWC agree with it again.
            st.resync();
        }
        r?;
        let cached = new.iter().filter(|m| m.is_some()).count();
        log::info!("caching and eviction: {} segment(s) newly cached, {cached} cached", plan.len());
        Ok(MaintainReport { plan, cached })
    }
}

/// Paper 000's write-back SSD cache as an NBD backend (see the module doc).
pub struct CachedBackend<S, H, M> {
    shared: Arc<Shared<S, H, M>>,
    size: u64,
    segment: u64,
    ticker: Mutex<Option<JoinHandle<()>>>,
}

impl<S, H, M> CachedBackend<S, H, M>
where
    S: BlockDevice + 'static,
    H: BlockDevice + 'static,
    M: BlockDevice + 'static,
{
    /// The engine over an opened map; PWC (paper 000's parameters) is seeded
    /// from the map's metadata.
    pub fn new(map: CacheMap<S, H, M>) -> Self {
        let g = map.meta().geometry;
        let slots = g.ssd_segments as usize;
        let pwc = Pwc::new(slots, PwcConfig { period: 0, idle: 0, ..PwcConfig::paper(1) });
        let (size, segment) = (map.len(), g.segment_size as u64);
        let mut state = State { map: Some(map), pwc, fx: Effects::new(), seq: 0 };
        state.resync();
        let shared = Arc::new(Shared { state: Mutex::new(state), stop: Mutex::new(false), wake: Condvar::new() });
        CachedBackend { shared, size, segment, ticker: Mutex::new(None) }
    }

    /// Runs [`maintain`](Self::maintain) every `period` from a background
    /// thread until [`Backend::shutdown`] (or drop).
    pub fn start_period(&self, period: Duration) {
        let shared = Arc::clone(&self.shared);
        let handle = std::thread::Builder::new()
            .name("ssdcache-maintain".into())
            .spawn(move || {
                let mut next = Instant::now() + period;
                let mut stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
                while !*stop {
                    let now = Instant::now();
                    if now >= next {
                        drop(stop);
                        if let Err(e) = shared.maintain() {
                            log::error!("periodic caching and eviction failed: {e}");
                        }
                        next = Instant::now() + period;
                        stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
                        continue;
                    }
                    stop = shared.wake.wait_timeout(stop, next - now).unwrap_or_else(|e| e.into_inner()).0;
                }
            })
            .expect("spawn the maintenance thread");
        // A second call detaches the first thread; both stop together.
        let _first = self.ticker.lock().unwrap_or_else(|e| e.into_inner()).replace(handle);
    }

    /// The caching-and-eviction procedure now: PWC chooses, the map moves.
    pub fn maintain(&self) -> io::Result<MaintainReport> {
        self.shared.maintain()
    }

    /// The address map (HDD segment per SSD slot), as the map holds it.
    pub fn mapping(&self) -> Vec<Option<u64>> {
        self.shared.lock().map.as_ref().map(|m| m.meta().map.clone()).unwrap_or_default()
    }

    /// PWC's frequency of HDD segment `seg`.
    pub fn frequency(&self, seg: u64) -> u16 {
        self.shared.lock().pwc.frequency(seg)
    }

    fn stop_ticker(&self) {
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.ticker.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl<S, H, M> Drop for CachedBackend<S, H, M> {
    fn drop(&mut self) {
        // Without shutdown this is a crash as far as the metadata goes; the
        // next start recovers. Only the thread is stopped.
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.ticker.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = h.join();
        }
    }
}

impl<S, H, M> Backend for CachedBackend<S, H, M>
where
    S: BlockDevice + 'static,
    H: BlockDevice + 'static,
    M: BlockDevice + 'static,
{
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut st = self.shared.lock();
        st.map()?;
        st.reference(Op::Read, offset, buf.len() as u64, self.segment);
        st.map()?.read(buf, offset)
    }

    fn write_at(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        let mut st = self.shared.lock();
        st.map()?;
        st.reference(Op::Write, offset, data.len() as u64, self.segment);
        let map = st.map()?;
        map.write(data, offset)?;
        if fua {
            map.flush()?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.shared.lock().map()?.flush()
    }

    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        let mut st = self.shared.lock();
        st.map()?;
        st.reference(Op::Trim, offset, len, self.segment);
        st.zero(offset, len)?;
        if fua {
            st.map()?.flush()?;
        }
        Ok(())
    }

    fn write_zeroes(&self, offset: u64, len: u64, _no_hole: bool, fua: bool) -> io::Result<()> {
        let mut st = self.shared.lock();
        st.map()?;
        st.reference(Op::Write, offset, len, self.segment);
        st.zero(offset, len)?;
        if fua {
            st.map()?.flush()?;
        }
        Ok(())
    }

    fn multi_conn(&self) -> bool {
        true // one map behind one lock; flush syncs both devices
    }

    fn shutdown(&self) -> io::Result<()> {
        self.stop_ticker();
        let map = {
            let mut st = self.shared.lock();
            let State { pwc, map, .. } = &mut *st;
            if let Some(m) = map.as_mut() {
                m.set_frequencies(|h| pwc.touched_frequency(h));
            }
            map.take()
        };
        match map {
            Some(map) => map.shutdown().map(|m| log::info!("cache shut down cleanly (metadata version {})", m.version)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::device::MemDevice;
    use crate::cache::recover::StartKind;

    const SEG: u64 = 8192;
    const SLOTS: u32 = 4;
    const HDD_SEGS: u64 = 32;

    type Mem = Arc<MemDevice>;
    type Engine = CachedBackend<Mem, Mem, Mem>;

    struct Rig {
        ssd: Mem,
        hdd: Mem,
        meta: Mem,
    }

    fn geom() -> Geometry {
        Geometry { segment_size: SEG as u32, ssd_segments: SLOTS, hdd_segments: HDD_SEGS }
    }

    impl Rig {
        /// A formatted cache; the HDD holds byte `h` in segment `h`.
        fn new() -> Rig {
            let hdd: Vec<u8> = (0..SEG * HDD_SEGS).map(|i| (i / SEG) as u8).collect();
            let rig = Rig {
                ssd: Arc::new(MemDevice::new((SEG * SLOTS as u64) as usize)),
                hdd: Arc::new(MemDevice::from_vec(hdd)),
                meta: Arc::new(MemDevice::new(region_len(&geom()) as usize)),
            };
            MetaStore::new(rig.meta.clone(), 0, geom()).unwrap().format().unwrap();
            rig
        }

        fn open(&self) -> (Engine, Started) {
            let store = MetaStore::new(self.meta.clone(), 0, geom()).unwrap();
            let (map, st) = CacheMap::open(self.ssd.clone(), self.hdd.clone(), store, false).unwrap();
            (CachedBackend::new(map), st)
        }

        fn hdd_seg(&self, h: u64) -> Vec<u8> {
            self.hdd.contents()[(h * SEG) as usize..((h + 1) * SEG) as usize].to_vec()
        }

        fn ssd_slot(&self, s: usize) -> Vec<u8> {
            self.ssd.contents()[s * SEG as usize..(s + 1) * SEG as usize].to_vec()
        }
    }

    fn read(e: &Engine, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        e.read_at(&mut b, off).unwrap();
        b
    }

    /// References segment `h` `n` times, each separated by a reference to
    /// another segment (consecutive references count once).
    fn reference(e: &Engine, h: u64, n: usize) {
        for _ in 0..n {
            read(e, h * SEG, 1);
            read(e, (HDD_SEGS - 1) * SEG, 1);
        }
    }

    #[test]
    fn write_read_flush_through_the_hdd_when_nothing_is_cached() {
        let rig = Rig::new();
        let (e, st) = rig.open();
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!(e.size(), SEG * HDD_SEGS);
        assert!(e.multi_conn());
        // A write straddling segments 2 and 3.
        e.write_at(&[0xAB; 100], 3 * SEG - 50, false).unwrap();
        e.flush().unwrap();
        assert_eq!(read(&e, 3 * SEG - 60, 120)[10..110], [0xAB; 100]);
        assert_eq!(rig.hdd_seg(3)[..50], [0xAB; 50]);
        assert_eq!(rig.hdd_seg(2)[SEG as usize - 50..], [0xAB; 50]);
        e.write_zeroes(5 * SEG + 10, 20, false, true).unwrap();
        e.trim(6 * SEG, SEG, false).unwrap();
        assert_eq!(read(&e, 5 * SEG + 9, 22), [&[5u8][..], &[0; 20], &[5]].concat());
        assert_eq!(read(&e, 6 * SEG, SEG as usize), vec![0; SEG as usize]);
        assert!(e.read_at(&mut [0u8; 2], SEG * HDD_SEGS - 1).is_err());
    }

    #[test]
    fn maintenance_caches_hot_segments_and_reads_come_from_the_ssd() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        // More segments touched than slots: only hot ones (frequency >= 20,
        // i.e. 4 references of 5) are cached.
        reference(&e, 7, 4);
        reference(&e, 9, 5);
        reference(&e, 11, 1);
        reference(&e, 12, 2);
        reference(&e, 13, 3);
        assert_eq!(e.frequency(7), 20);
        assert_eq!(e.frequency(11), 5);
        let r = e.maintain().unwrap();
        let cached: Vec<u64> = e.mapping().into_iter().flatten().collect();
        // Segment 31 (referenced between every other) is the hottest of all.
        let mut sorted = cached.clone();
        sorted.sort();
        assert_eq!(sorted, vec![7, 9, 31]);
        assert_eq!(r.cached, 3);
        assert_eq!(r.plan.len(), 3);
        // The evict clock started at the last slot, so slots 0, 1, 2 in
        // order, segments in address order (the cache clock).
        assert_eq!(r.plan, vec![(0, 7), (1, 9), (2, 31)]);
        assert_eq!(rig.ssd_slot(0), vec![7; SEG as usize], "segment copied into its slot");
        // A write to a cached segment goes to the SSD only; reads see it.
        e.write_at(&[0xEE; 16], 7 * SEG + 100, false).unwrap();
        assert_eq!(rig.hdd_seg(7)[100..116], [7; 16], "the HDD is not written");
        assert_eq!(rig.ssd_slot(0)[100..116], [0xEE; 16]);
        // Reads of a cached segment are served by the SSD: change the SSD
        // behind the engine's back and read it back.
        rig.ssd.write_at(&[0x55; 4], SEG + 8).unwrap();
        assert_eq!(read(&e, 9 * SEG + 8, 4), [0x55; 4]);
        rig.ssd.write_at(&[9; 4], SEG + 8).unwrap();
        // Shutdown writes the dirty segment back and marks the cache clean,
        // persisting PWC's own (decayed, read-counting) frequencies.
        let freqs: Vec<u16> = (0..HDD_SEGS).map(|h| e.frequency(h)).collect();
        assert!(freqs[11] > 0, "reads count for PWC");
        e.shutdown().unwrap();
        assert_eq!(rig.hdd_seg(7)[100..116], [0xEE; 16]);
        assert!(e.read_at(&mut [0u8; 1], 0).is_err(), "no I/O after shutdown");
        e.shutdown().unwrap(); // idempotent
        let (e2, st) = rig.open();
        assert_eq!(st.kind, StartKind::Clean);
        assert_eq!((0..HDD_SEGS).map(|h| e2.frequency(h)).collect::<Vec<_>>(), freqs, "PWC resumes its table");
        assert_eq!(e2.mapping(), saved_mapping(&rig));
        assert_eq!(e2.mapping().iter().flatten().count(), 3);
        assert_eq!(read(&e2, 7 * SEG + 99, 18), [&[7u8][..], &[0xEE; 16], &[7]].concat());
    }

    /// The map as the last durable save holds it.
    fn saved_mapping(rig: &Rig) -> Vec<Option<u64>> {
        let store = MetaStore::new(rig.meta.clone(), 0, geom()).unwrap();
        crate::cache::recover::load(&store).unwrap().meta.map
    }

    #[test]
    fn restart_seeds_pwc_so_the_next_procedure_keeps_cached_segments() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        for h in [1, 2] {
            e.write_at(&[h as u8 + 100; 8], h * SEG, false).unwrap();
        }
        // First fill: everything touched is hot.
        let r = e.maintain().unwrap();
        assert_eq!(r.plan, vec![(0, 1), (1, 2)]);
        e.write_at(&[0xC1; 8], SEG, false).unwrap();
        e.flush().unwrap();
        drop(e); // a crash: no shutdown
        let (e, st) = rig.open();
        assert_eq!(st.kind, StartKind::Unclean);
        assert_eq!(e.mapping(), vec![Some(1), Some(2), None, None]);
        assert_eq!(read(&e, SEG, 8), [0xC1; 8]);
        // The next procedure caches a new segment in an empty slot and
        // leaves the others where they are (PWC knows they are cached).
        e.write_at(&[1; 8], 20 * SEG, false).unwrap();
        let r = e.maintain().unwrap();
        assert_eq!(r.plan, vec![(2, 20)]);
        assert_eq!(e.mapping(), vec![Some(1), Some(2), Some(20), None]);
        e.shutdown().unwrap();
    }

    #[test]
    fn periodic_maintenance_runs_and_stops_at_shutdown() {
        let rig = Rig::new();
        let (e, _) = rig.open();
        e.write_at(&[3; 8], 4 * SEG, false).unwrap();
        e.start_period(Duration::from_millis(5));
        let t = Instant::now();
        while e.mapping().iter().all(|m| m.is_none()) {
            assert!(t.elapsed() < Duration::from_secs(10), "the period never ran");
            std::thread::sleep(Duration::from_millis(2));
        }
        e.shutdown().unwrap();
        let m = crate::cache::recover::load(&MetaStore::new(rig.meta.clone(), 0, geom()).unwrap()).unwrap().meta;
        assert!(m.clean && m.procedures >= 1 && m.map.contains(&Some(4)));
    }

    #[test]
    fn superblock_plan_round_trip_and_create_refuses_to_overwrite() {
        let sb = Superblock::plan(64 << 20, 256 << 20, 1 << 20).unwrap();
        assert_eq!(sb.geometry.hdd_segments, 256);
        assert_eq!(sb.geometry.ssd_segments, 63, "one segment's worth goes to the superblock and metadata");
        assert!(sb.end() <= 64 << 20);
        assert_eq!(Superblock::decode(&sb.encode()), Some(Ok(sb)));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert!(matches!(Superblock::decode(&bad), Some(Err(_))));
        assert_eq!(Superblock::decode(&[0; 4096]), None);
        assert!(Superblock::plan(64 << 20, (256 << 20) + 1, 1 << 20).is_err());
        assert!(Superblock::plan(1 << 20, 256 << 20, 1 << 20).is_err());

        let dir = tempfile::tempdir().unwrap();
        let (c, b) = (dir.path().join("cache"), dir.path().join("backing"));
        File::create(&c).unwrap().set_len(4 << 20).unwrap();
        File::create(&b).unwrap().set_len(16 << 20).unwrap();
        let sb = create(&c, &b, 1 << 20, false).unwrap();
        assert_eq!(sb.geometry.ssd_segments, 3);
        assert_eq!(create(&c, &b, 1 << 20, false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        create(&c, &b, 1 << 20, true).unwrap();
        let (e, st) = open_files(&c, &b, false).unwrap();
        assert_eq!(st.kind, StartKind::Clean);
        e.write_at(b"hello", (5 << 20) + 3, true).unwrap();
        e.maintain().unwrap();
        assert_eq!(e.mapping().iter().flatten().count(), 1);
        e.write_at(b"world", (5 << 20) + 3, true).unwrap();
        e.shutdown().unwrap();
        let backing = std::fs::read(&b).unwrap();
        assert_eq!(&backing[(5 << 20) + 3..(5 << 20) + 8], b"world");
        File::create(&b).unwrap().set_len(8 << 20).unwrap();
        assert!(open_files(&c, &b, false).is_err(), "a backing store of another size is refused");
    }
}
