//! The cache file: where the superblock, the metadata and the SSD slots
//! live, how a cache is created, and how one is opened over files.
//!
//! **Layout** (ours; the paper keeps the metadata "on the HDD or the SSD",
//! §3.2): bytes `0..4096` are a [`Superblock`] written once by [`create`]
//! and never again (so no later save can tear it): it names the geometry,
//! the cache mode and where the rest lives; then the two metadata slots
//! ([`super::meta`]) at [`META_OFFSET`]; then the SSD slots, slot `s` at
//! `data_offset + s·segment`. The backing file is the HDD as it is: segment
//! `h` at `h·segment`, so it stays a plain image usable without the cache
//! after a clean shutdown.
//!
//! **One server per cache**: [`create`] and [`open_files`] take an exclusive
//! `flock` on the cache file (held as long as the engine lives), so a second
//! server, or a `create --force` under a running one, is refused instead of
//! corrupting the cache.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use super::device::{check_range, BlockDevice, FileDevice};
use super::engine::{CachedBackend, EngineConfig};
use super::map::WriteMode;
use super::meta::{region_len, Geometry, MetaStore, SLOT_ALIGN};
use super::recover::{RecoverError, Started};

/// How a cache treats writes and misses (`ssdcache create --mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(u16)]
pub enum CacheMode {
    /// Paper 000's PWC: hot segments cached by the caching-and-eviction
    /// procedure; writes to them stay on the SSD (dirty) until the next one.
    #[default]
    WriteBack = 0,
    /// The paper's baseline: a replacement policy (LRU by default) fills
    /// segments on every miss, in real time; writes go to the HDD and to the
    /// cached copy. Nothing is ever dirty.
    WriteThrough = 1,
    /// Like write-through, but a write miss is not cached (only reads fill).
    WriteAround = 2,
    /// No caching: every request goes to the backing store.
    Passthrough = 3,
}

/// The modes, their names and what they do (`create --help`).
pub const CACHE_MODES: &[(&str, CacheMode)] = &[
    ("write-back", CacheMode::WriteBack),
    ("write-through", CacheMode::WriteThrough),
    ("write-around", CacheMode::WriteAround),
    ("passthrough", CacheMode::Passthrough),
];

impl CacheMode {
    fn from_u16(v: u16) -> Option<CacheMode> {
        CACHE_MODES.iter().map(|(_, m)| *m).find(|m| *m as u16 == v)
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        CACHE_MODES.iter().find(|(_, m)| *m == self).map(|(n, _)| *n).expect("every mode is listed")
    }

    /// How the data path writes in this mode.
    pub fn write_mode(self) -> WriteMode {
        match self {
            CacheMode::WriteBack => WriteMode::Back,
            _ => WriteMode::Through,
        }
    }
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.to_ascii_lowercase().replace('_', "-");
        let alias = match s.as_str() {
            "writeback" | "wb" | "pwc" => "write-back",
            "writethrough" | "wt" => "write-through",
            "writearound" | "wa" => "write-around",
            "pass-through" | "none" => "passthrough",
            other => other,
        };
        CACHE_MODES.iter().find(|(n, _)| *n == alias).map(|(_, m)| *m).ok_or_else(|| {
            let names: Vec<&str> = CACHE_MODES.iter().map(|(n, _)| *n).collect();
            format!("unknown cache mode `{s}` (one of: {})", names.join(", "))
        })
    }
}

/// Takes an exclusive, non-blocking `flock` on `dev`'s file.
fn lock_exclusive(dev: &FileDevice, path: &Path) -> io::Result<()> {
    // SAFETY: flock on a descriptor we own; no memory is involved.
    if unsafe { libc::flock(dev.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!("{} is in use by another ssdcache process (a running `ssdcache serve`?)", path.display()),
        ));
    }
    Err(e)
}

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
/// format u16, cache mode u16 ([`CacheMode`]; 0 = write-back, which files
/// written before modes existed hold), segment size u32, SSD segments u32,
/// reserved u32, HDD segments u64, metadata offset u64, data offset u64,
/// CRC-32C of bytes 0..48 (u32); zero to 4096.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// The cache's shape.
    pub geometry: Geometry,
    /// How the cache treats writes; fixed at `create` because recovery
    /// depends on it (a write-through cache never holds dirty data).
    pub mode: CacheMode,
    /// Offset of the two-slot metadata region.
    pub meta_offset: u64,
    /// Offset of SSD slot 0.
    pub data_offset: u64,
}

impl Superblock {
    /// The largest cache that fits a `cache_len`-byte file for a
    /// `backing_len`-byte backing store in `segment`-byte segments.
    pub fn plan(cache_len: u64, backing_len: u64, segment: u32, mode: CacheMode) -> Result<Superblock, String> {
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
            Superblock { geometry: g, mode, meta_offset: META_OFFSET, data_offset }
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
        b[10..12].copy_from_slice(&(self.mode as u16).to_le_bytes());
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
        let mode = u16::from_le_bytes([b[10], b[11]]);
        Some(if crc32c::crc32c(&b[..48]) != u32_at(48) {
            Err("superblock checksum mismatch".into())
        } else if format != SUPER_FORMAT {
            Err(format!("unknown superblock format {format}"))
        } else if CacheMode::from_u16(mode).is_none() {
            Err(format!("unknown cache mode {mode} in the superblock"))
        } else {
            let g = Geometry { segment_size: u32_at(12), ssd_segments: u32_at(16), hdd_segments: u64_at(24) };
            let mode = CacheMode::from_u16(mode).expect("checked above");
            let sb = Superblock { geometry: g, mode, meta_offset: u64_at(32), data_offset: u64_at(40) };
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
pub fn create(cache: &Path, backing: &Path, segment: u32, mode: CacheMode, force: bool) -> io::Result<Superblock> {
    let dev = FileDevice::open(cache)?;
    lock_exclusive(&dev, cache)?;
    let hdd = FileDevice::open(backing)?;
    let sb = Superblock::plan(dev.len(), hdd.len(), segment, mode)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
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
/// through a second handle on it, the backing store as the HDD (any device:
/// a file, or the benchmark's latency-injecting model around one).
pub type FileCache = CachedBackend<Region<FileDevice>, Arc<dyn BlockDevice>, FileDevice>;

/// Why a cache could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A file could not be opened or is not a cache.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The start procedure refused.
    #[error("{0}")]
    Recover(#[from] RecoverError),
    /// The engine's configuration is wrong (e.g. an unknown policy).
    #[error("{0}")]
    Config(String),
}

/// Opens a cache file over its backing store, runs the start procedure and
/// builds the engine. The cache file stays locked while the engine lives.
pub fn open_files(
    cache: &Path,
    backing: Arc<dyn BlockDevice>,
    config: &EngineConfig,
    force: bool,
) -> Result<(FileCache, Started, Superblock), OpenError> {
    let meta_dev = FileDevice::open(cache)?;
    lock_exclusive(&meta_dev, cache)?;
    let sb = Superblock::read(&meta_dev)?;
    let g = sb.geometry;
    let ssd = Region::new(FileDevice::open(cache)?, sb.data_offset, g.ssd_segments as u64 * g.segment_size as u64)?;
    let want = g.hdd_segments * g.segment_size as u64;
    if backing.len() != want {
        return Err(OpenError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the backing store has {} bytes; this cache was created for one of {want}", backing.len()),
        )));
    }
    let (map, started) =
        super::map::CacheMap::open_with(ssd, backing, sb.store(meta_dev)?, force, sb.mode.write_mode())?;
    let engine = CachedBackend::new(map, sb.mode, config).map_err(OpenError::Config)?;
    Ok((engine, started, sb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::recover::StartKind;
    use std::fs::File;
    use crate::Backend;

    #[test]
    fn superblock_plan_round_trip_and_create_refuses_to_overwrite() {
        let sb = Superblock::plan(64 << 20, 256 << 20, 1 << 20, CacheMode::WriteThrough).unwrap();
        assert_eq!(sb.geometry.hdd_segments, 256);
        assert_eq!(sb.geometry.ssd_segments, 63, "one segment's worth goes to the superblock and metadata");
        assert!(sb.end() <= 64 << 20);
        assert_eq!(Superblock::decode(&sb.encode()), Some(Ok(sb)));
        assert_eq!(Superblock::decode(&sb.encode()).unwrap().unwrap().mode, CacheMode::WriteThrough);
        // A superblock from before modes existed (bytes 10..12 zero) is write-back.
        let mut old = Superblock { mode: CacheMode::WriteBack, ..sb }.encode();
        assert_eq!(old[10..12], [0, 0]);
        old[10] = 9;
        let crc = crc32c::crc32c(&old[..48]);
        old[48..52].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(Superblock::decode(&old), Some(Err(e)) if e.contains("unknown cache mode 9")));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert!(matches!(Superblock::decode(&bad), Some(Err(_))));
        assert_eq!(Superblock::decode(&[0; 4096]), None);
        assert!(Superblock::plan(64 << 20, (256 << 20) + 1, 1 << 20, CacheMode::WriteBack).is_err());
        assert!(Superblock::plan(1 << 20, 256 << 20, 1 << 20, CacheMode::WriteBack).is_err());

        let dir = tempfile::tempdir().unwrap();
        let (c, b) = (dir.path().join("cache"), dir.path().join("backing"));
        File::create(&c).unwrap().set_len(4 << 20).unwrap();
        File::create(&b).unwrap().set_len(16 << 20).unwrap();
        let sb = create(&c, &b, 1 << 20, CacheMode::WriteBack, false).unwrap();
        assert_eq!(sb.geometry.ssd_segments, 3);
        let again = create(&c, &b, 1 << 20, CacheMode::WriteBack, false).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        create(&c, &b, 1 << 20, CacheMode::WriteBack, true).unwrap();
        let (e, st, sb) = open_files(&c, backing(&b), &EngineConfig::default(), false).unwrap();
        assert_eq!((st.kind, sb.mode), (StartKind::Clean, CacheMode::WriteBack));
        // One server per cache: a second open and a create under it are refused.
        let busy = open_files(&c, backing(&b), &EngineConfig::default(), false).err().unwrap();
        assert!(busy.to_string().contains("in use by another ssdcache process"), "{busy}");
        let busy = create(&c, &b, 1 << 20, CacheMode::WriteBack, true).unwrap_err();
        assert_eq!(busy.kind(), io::ErrorKind::WouldBlock);
        e.write_at(b"hello", (5 << 20) + 3, true).unwrap();
        e.maintain().unwrap();
        assert_eq!(e.mapping().iter().flatten().count(), 1);
        e.write_at(b"world", (5 << 20) + 3, true).unwrap();
        e.shutdown().unwrap();
        drop(e);
        let image = std::fs::read(&b).unwrap();
        assert_eq!(&image[(5 << 20) + 3..(5 << 20) + 8], b"world");
        File::create(&b).unwrap().set_len(8 << 20).unwrap();
        let other = open_files(&c, backing(&b), &EngineConfig::default(), false);
        assert!(other.is_err(), "a backing store of another size is refused");
    }

    fn backing(p: &Path) -> Arc<dyn BlockDevice> {
        Arc::new(FileDevice::open(p).unwrap())
    }

    #[test]
    fn mode_names_parse_and_unknown_ones_are_refused() {
        for (name, m) in CACHE_MODES {
            assert_eq!(name.parse::<CacheMode>(), Ok(*m));
            assert_eq!(m.name(), *name);
        }
        assert_eq!("writethrough".parse::<CacheMode>(), Ok(CacheMode::WriteThrough));
        assert!("write-sideways".parse::<CacheMode>().unwrap_err().contains("one of: write-back"));
    }
}
