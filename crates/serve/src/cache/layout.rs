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
use super::meta::{copy_len, slot_len, Geometry, MetaStore};
use super::recover::{RecoverError, StartOptions, Started};

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
/// Superblock layout version (2: two superblock copies, mirrored metadata).
pub const SUPER_FORMAT: u16 = 2;
/// Bytes of a superblock copy.
pub const SUPER_LEN: u64 = 4096;
/// Where the metadata primaries start in a cache file (after the superblock).
pub const META_OFFSET: u64 = SUPER_LEN;
/// Bytes of the superblock covered by its checksum.
const SUPER_CRC_AT: usize = 72;

/// The fixed header of a cache file, kept twice: at the start of the file
/// and in its last 4 KiB (where a tool that clobbers the first megabytes of
/// a device does not reach; found there by the file's length when the first
/// copy is gone). Layout (little-endian): magic (8), format u16, cache mode
/// u16 ([`CacheMode`]), segment size u32, SSD segments u32, reserved u32,
/// HDD segments u64, then the offsets of the metadata primaries, the data,
/// the metadata mirrors and the second superblock copy, and the file's size
/// at `create` (u64 each), CRC-32C of bytes 0..72 (u32); zero to 4096.
///
/// The file: superblock | metadata primaries | SSD slots | … | metadata
/// mirrors | superblock copy. The mirrors sit far from the primaries so one
/// clobbered range does not take both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// The cache's shape.
    pub geometry: Geometry,
    /// How the cache treats writes; fixed at `create` because recovery
    /// depends on it (a write-through cache never holds dirty data).
    pub mode: CacheMode,
    /// Offset of the metadata primaries (both slots).
    pub meta_offset: u64,
    /// Offset of SSD slot 0.
    pub data_offset: u64,
    /// Offset of the metadata mirrors.
    pub mirror_offset: u64,
    /// Offset of the second superblock copy.
    pub backup_offset: u64,
    /// The cache file's size when it was created.
    pub device_len: u64,
}

/// What reading a cache file's superblock found.
#[derive(Debug)]
pub struct SuperRead {
    /// The superblock in use.
    pub sb: Superblock,
    /// The copy that is damaged, if one is (`serve` rewrites it).
    pub damaged: Option<(u64, String)>,
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
        let tail = cache_len / SUPER_LEN * SUPER_LEN;
        let layout = |s: u32| {
            let g = Geometry { segment_size: segment, ssd_segments: s, hdd_segments: hdd };
            let backup_offset = tail.saturating_sub(SUPER_LEN);
            Superblock {
                geometry: g,
                mode,
                meta_offset: META_OFFSET,
                data_offset: META_OFFSET.saturating_add(copy_len(&g)),
                mirror_offset: backup_offset.saturating_sub(copy_len(&g)),
                backup_offset,
                device_len: cache_len,
            }
        };
        let mut s = (cache_len.saturating_sub(META_OFFSET) / seg).min(u32::MAX as u64) as u32;
        while s > 0 && layout(s).check().is_err() {
            s -= 1;
        }
        if s == 0 {
            return Err(format!(
                "a {cache_len}-byte cache file holds no {segment}-byte segment beside its two superblock \
                 copies and two metadata copies ({} bytes)",
                2 * SUPER_LEN + 2 * copy_len(&layout(1).geometry)
            ));
        }
        Ok(layout(s))
    }

    /// End of the SSD slots.
    pub fn data_end(&self) -> u64 {
        let g = &self.geometry;
        self.data_offset.saturating_add((g.ssd_segments as u64).saturating_mul(g.segment_size as u64))
    }

    /// Bytes of the cache file used.
    pub fn end(&self) -> u64 {
        self.backup_offset.saturating_add(SUPER_LEN)
    }

    /// Every size and offset is consistent and in order (checked with
    /// overflow-safe arithmetic: the numbers may come from a damaged file).
    fn check(&self) -> Result<(), String> {
        let g = &self.geometry;
        let seg = g.segment_size as u64;
        let bad = |what: &str| Err(format!("inconsistent superblock ({what}): {self:?}"));
        if seg < 4096 || !seg.is_multiple_of(4096) || g.ssd_segments == 0 || g.hdd_segments == 0 {
            return bad("segment size or counts");
        }
        if g.hdd_segments.checked_mul(seg).is_none() || copy_len(g) >= u64::MAX / 4 {
            return bad("backing size overflows");
        }
        let ordered = self.meta_offset == META_OFFSET
            && self.data_offset == META_OFFSET + copy_len(g)
            && self.data_end() <= self.mirror_offset
            && self.mirror_offset.checked_add(copy_len(g)) == Some(self.backup_offset)
            && self.end() <= self.device_len;
        if !ordered {
            return bad("regions overlap or run past the file");
        }
        Ok(())
    }

    /// The 4096-byte encoding.
    pub fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        let mut b = vec![0u8; SUPER_LEN as usize];
        b[0..8].copy_from_slice(&SUPER_MAGIC);
        b[8..10].copy_from_slice(&SUPER_FORMAT.to_le_bytes());
        b[10..12].copy_from_slice(&(self.mode as u16).to_le_bytes());
        b[12..16].copy_from_slice(&g.segment_size.to_le_bytes());
        b[16..20].copy_from_slice(&g.ssd_segments.to_le_bytes());
        b[24..32].copy_from_slice(&g.hdd_segments.to_le_bytes());
        for (i, v) in [self.meta_offset, self.data_offset, self.mirror_offset, self.backup_offset, self.device_len]
            .iter()
            .enumerate()
        {
            b[32 + 8 * i..40 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[..SUPER_CRC_AT]);
        b[SUPER_CRC_AT..SUPER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a superblock copy; `None` if `b` does not start with the magic.
    pub fn decode(b: &[u8]) -> Option<Result<Superblock, String>> {
        if b.len() < SUPER_CRC_AT + 4 || b[0..8] != SUPER_MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let format = u16::from_le_bytes([b[8], b[9]]);
        let mode = u16::from_le_bytes([b[10], b[11]]);
        Some(if format != SUPER_FORMAT {
            Err(format!(
                "superblock format {format}, this build reads {SUPER_FORMAT} (a cache made by another ssdcache \
                 version: drain it with that version)"
            ))
        } else if crc32c::crc32c(&b[..SUPER_CRC_AT]) != u32_at(SUPER_CRC_AT) {
            Err("superblock checksum mismatch".into())
        } else if b[SUPER_CRC_AT + 4..].iter().any(|&x| x != 0) {
            // Not covered by the checksum, but written as zeroes: damage here
            // is still damage to this copy (and `serve` rewrites it).
            Err("non-zero bytes after the superblock's checksummed header".into())
        } else if let Some(mode) = CacheMode::from_u16(mode) {
            let g = Geometry { segment_size: u32_at(12), ssd_segments: u32_at(16), hdd_segments: u64_at(24) };
            let sb = Superblock {
                geometry: g,
                mode,
                meta_offset: u64_at(32),
                data_offset: u64_at(40),
                mirror_offset: u64_at(48),
                backup_offset: u64_at(56),
                device_len: u64_at(64),
            };
            sb.check().map(|()| sb)
        } else {
            Err(format!("unknown cache mode {mode} in the superblock"))
        })
    }

    /// Reads one copy at `at`: `None` if no superblock is there.
    fn read_copy(dev: &dyn BlockDevice, at: u64) -> Option<Result<Superblock, String>> {
        let mut b = vec![0u8; SUPER_LEN as usize];
        match dev.read_at(&mut b, at) {
            Ok(()) => Superblock::decode(&b),
            Err(e) => Some(Err(format!("unreadable: {e}"))),
        }
    }

    /// Reads the superblock of a cache file from either copy: the first if
    /// it is valid, else the one in the file's last 4 KiB.
    pub fn read_either(dev: &dyn BlockDevice) -> io::Result<SuperRead> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let len = dev.len();
        let first = if len >= SUPER_LEN { Superblock::read_copy(dev, 0) } else { None };
        let (sb, damaged) = match first {
            Some(Ok(sb)) => {
                let backup = match Superblock::read_copy(dev, sb.backup_offset) {
                    Some(Ok(b)) if b == sb => None,
                    Some(Ok(_)) => Some("differs from the first copy".to_string()),
                    Some(Err(e)) => Some(e),
                    None => Some("missing".to_string()),
                };
                (sb, backup.map(|e| (sb.backup_offset, e)))
            }
            first => {
                let what = match first {
                    Some(Err(e)) => e,
                    _ => "missing (no magic)".to_string(),
                };
                let tail = (len / SUPER_LEN * SUPER_LEN).checked_sub(SUPER_LEN);
                match tail.and_then(|at| Superblock::read_copy(dev, at).map(|r| (at, r))) {
                    Some((at, Ok(sb))) if sb.backup_offset == at => (sb, Some((0, what))),
                    other => {
                        let second = match other {
                            Some((_, Err(e))) => e,
                            Some((_, Ok(_))) => "a copy for another file size".to_string(),
                            None => "missing".to_string(),
                        };
                        if holds_cache_metadata(dev) || first_is_ours(dev) {
                            return Err(bad(format!(
                                "both superblock copies are damaged (first: {what}; last 4 KiB: {second}), but \
                                 the file holds ssdcache metadata: do NOT run `ssdcache create` on it (that \
                                 discards any writes the cache holds); restore the file's original size if it \
                                 changed, or keep it for recovery"
                            )));
                        }
                        return Err(bad(format!(
                            "not an ssdcache cache file (no superblock in its first or last 4 KiB; make one \
                             with `ssdcache create`)"
                        )));
                    }
                }
            }
        };
        if sb.end() > len {
            return Err(bad(format!(
                "the cache file has {len} bytes, its superblock needs {} (was it truncated?)",
                sb.end()
            )));
        }
        Ok(SuperRead { sb, damaged })
    }

    /// Reads the superblock, from either copy.
    pub fn read(dev: &dyn BlockDevice) -> io::Result<Superblock> {
        Superblock::read_either(dev).map(|r| r.sb)
    }

    /// The metadata of a cache file.
    pub fn store<D: BlockDevice>(&self, dev: D) -> io::Result<MetaStore<D>> {
        MetaStore::with_mirror(dev, self.meta_offset, self.mirror_offset, self.geometry)
    }

    /// The byte ranges `(offset, len)` of both superblock copies and of the
    /// four metadata copies (slot 0 primary, mirror, slot 1 primary, mirror).
    pub fn regions(&self) -> (Vec<(u64, u64)>, Vec<(u64, u64)>) {
        let l = slot_len(&self.geometry);
        let meta = [0, 1]
            .into_iter()
            .flat_map(|slot| [self.meta_offset, self.mirror_offset].map(|at| (at + slot * l, l)))
            .collect();
        (vec![(0, SUPER_LEN), (self.backup_offset, SUPER_LEN)], meta)
    }
}

/// Whether the first bytes look like a (damaged) superblock of ours.
fn first_is_ours(dev: &dyn BlockDevice) -> bool {
    let mut b = [0u8; 8];
    dev.read_at(&mut b, 0).is_ok() && (b == SUPER_MAGIC || b[..6] == SUPER_MAGIC[..6])
}

/// Whether a metadata slot header sits where the first primary lives.
fn holds_cache_metadata(dev: &dyn BlockDevice) -> bool {
    let mut b = [0u8; 8];
    dev.read_at(&mut b, META_OFFSET).is_ok() && b == super::meta::MAGIC
}

/// Whether two opened files are the same file or device.
fn same_file(a: &FileDevice, b: &FileDevice) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (ma, mb) = (a.metadata()?, b.metadata()?);
    let dev_node = |m: &std::fs::Metadata| m.rdev() != 0 && !m.is_file();
    Ok((ma.dev(), ma.ino()) == (mb.dev(), mb.ino()) || (dev_node(&ma) && dev_node(&mb) && ma.rdev() == mb.rdev()))
}

/// Opens CACHE and BACKING for exclusive use: not the same file, each
/// `flock`ed (a second server on either, or a `create` under a running
/// server, is refused).
pub(crate) fn open_pair(cache: &Path, backing: &Path) -> io::Result<(FileDevice, FileDevice)> {
    let c = FileDevice::open(cache).map_err(|e| named(e, "the cache", cache))?;
    let b = FileDevice::open(backing).map_err(|e| named(e, "the backing store", backing))?;
    if same_file(&c, &b)? {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the cache {} and the backing store {} are the same file or device",
                cache.display(),
                backing.display()
            ),
        ));
    }
    lock_exclusive(&c, cache)?;
    lock_exclusive(&b, backing)?;
    Ok((c, b))
}

fn named(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("opening {what} {}: {e}", path.display()))
}

/// Options of [`create`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CreateOptions {
    /// Overwrite a file that holds data or a cache.
    pub force: bool,
    /// ... even one whose metadata says it may hold dirty data.
    pub discard_dirty: bool,
}

/// Formats `cache` as a cache for `backing` (whose size fixes the HDD
/// segments): both superblock copies zeroed, the metadata formatted (both
/// copies), then the second superblock copy and the first, each step synced
/// (a cut leaves no superblock, i.e. no cache). Refuses, unless `force`, a
/// file that holds anything where this writes (a cache, or any data: the
/// arguments may be swapped); with `force`, still refuses a cache whose
/// metadata says it may hold dirty data unless `discard_dirty`.
pub fn create(cache: &Path, backing: &Path, segment: u32, mode: CacheMode, opts: CreateOptions) -> io::Result<Superblock> {
    let (dev, hdd) = open_pair(cache, backing)?;
    let sb = Superblock::plan(dev.len(), hdd.len(), segment, mode)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let refuse = |kind, msg: String| Err(io::Error::new(kind, msg));
    match Superblock::read_either(&dev) {
        Ok(old) if !opts.discard_dirty => {
            let exposure = old.sb.store(&dev).ok().and_then(|st| super::recover::dirty_exposure(&st));
            match (opts.force, exposure) {
                (false, _) => {
                    return refuse(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "{} already holds an ssdcache cache; --force overwrites it, discarding what it caches \
                             (see `ssdcache check`)",
                            cache.display()
                        ),
                    )
                }
                (true, Some(lost)) => {
                    return refuse(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "{} holds a cache with {lost}; --discard-dirty overwrites it anyway, or run \
                             `ssdcache drain` first",
                            cache.display()
                        ),
                    )
                }
                (true, None) => {}
            }
        }
        Err(e) if e.to_string().contains("do NOT run") && !opts.discard_dirty => {
            return refuse(io::ErrorKind::AlreadyExists, format!("{e}; --force --discard-dirty overwrites it anyway"));
        }
        _ if opts.force => {}
        _ => {
            // Not a cache: refuse to overwrite data (swapped arguments).
            for (at, len) in [(0, sb.data_offset), (sb.mirror_offset, sb.end() - sb.mirror_offset)] {
                if let Some(off) = first_nonzero(&dev, at, len)? {
                    return refuse(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "{} holds data (a non-zero byte at offset {off}) where the cache's metadata would \
                             go: is it the backing store? Give the cache first, then the backing store; \
                             --force overwrites it",
                            cache.display()
                        ),
                    );
                }
            }
        }
    }
    let zero = vec![0u8; SUPER_LEN as usize];
    dev.write_at(&zero, 0)?;
    dev.write_at(&zero, sb.backup_offset)?;
    dev.sync()?;
    sb.store(&dev)?.format()?;
    dev.write_at(&sb.encode(), sb.backup_offset)?;
    dev.sync()?;
    dev.write_at(&sb.encode(), 0)?;
    dev.sync()?;
    Ok(sb)
}

/// The offset of the first non-zero byte of `dev[at..at+len]`.
fn first_nonzero(dev: &dyn BlockDevice, at: u64, len: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        dev.read_at(&mut buf[..n], at + done)?;
        if let Some(i) = buf[..n].iter().position(|&x| x != 0) {
            return Ok(Some(at + done + i as u64));
        }
        done += n as u64;
    }
    Ok(None)
}

/// The engine over files: SSD slots in a window of the cache file (behind
/// whatever wrapper the caller chose), metadata through a second handle on
/// it, the backing store (a file, or the benchmark's latency-injecting
/// model around one).
pub type FileCache = CachedBackend<Arc<dyn BlockDevice>, Arc<dyn BlockDevice>, FileDevice>;

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

/// Wraps the opened devices (SSD window, backing file) before the engine
/// uses them: fault injection and benchmark models go here.
pub type Wrap<'a> = &'a dyn Fn(Arc<dyn BlockDevice>, FileDevice) -> io::Result<(Arc<dyn BlockDevice>, Arc<dyn BlockDevice>)>;

/// The devices as they are.
pub fn no_wrap(ssd: Arc<dyn BlockDevice>, backing: FileDevice) -> io::Result<(Arc<dyn BlockDevice>, Arc<dyn BlockDevice>)> {
    Ok((ssd, Arc::new(backing)))
}

/// Opens a cache file over its backing store, runs the start procedure and
/// builds the engine. Both files stay locked while the engine lives. A
/// damaged superblock copy is rewritten from the intact one.
pub fn open_files(
    cache: &Path,
    backing: &Path,
    wrap: Wrap<'_>,
    config: &EngineConfig,
    opts: StartOptions,
) -> Result<(FileCache, Started, Superblock), OpenError> {
    let (meta_dev, hdd) = open_pair(cache, backing)?;
    let SuperRead { sb, damaged } = Superblock::read_either(&meta_dev)?;
    let g = sb.geometry;
    let want = g.hdd_segments * g.segment_size as u64;
    if hdd.len() != want {
        return Err(OpenError::Io(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the backing store {} has {} bytes; this cache was created for one of {want}",
                backing.display(),
                hdd.len()
            ),
        )));
    }
    let ssd = Region::new(FileDevice::open(cache)?, sb.data_offset, sb.data_end() - sb.data_offset)?;
    let (ssd, hdd) = wrap(Arc::new(ssd), hdd)?;
    let (map, started) = super::map::CacheMap::open_with(ssd, hdd, sb.store(meta_dev)?, opts, sb.mode.write_mode())?;
    if let Some((at, what)) = damaged {
        // The start procedure accepted the cache: make both copies good again.
        log::warn!("superblock copy at offset {at} was damaged ({what}); rewritten");
        let dev = FileDevice::open(cache)?;
        dev.write_at(&sb.encode(), at)?;
        dev.sync()?;
    }
    let engine = CachedBackend::new(map, sb.mode, config).map_err(OpenError::Config)?;
    Ok((engine, started, sb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::recover::StartKind;
    use std::fs::File;
    use crate::Backend;

    const NO: CreateOptions = CreateOptions { force: false, discard_dirty: false };
    const FORCE: CreateOptions = CreateOptions { force: true, discard_dirty: false };

    fn files(dir: &Path, cache: u64, backing: u64) -> (std::path::PathBuf, std::path::PathBuf) {
        let (c, b) = (dir.join("cache"), dir.join("backing"));
        File::create(&c).unwrap().set_len(cache).unwrap();
        File::create(&b).unwrap().set_len(backing).unwrap();
        (c, b)
    }

    fn open(c: &Path, b: &Path) -> Result<(FileCache, Started, Superblock), OpenError> {
        open_files(c, b, &no_wrap, &EngineConfig::default(), StartOptions::default())
    }

    #[test]
    fn superblock_plan_round_trip_and_bounds() {
        let sb = Superblock::plan(64 << 20, 256 << 20, 1 << 20, CacheMode::WriteThrough).unwrap();
        assert_eq!(sb.geometry.hdd_segments, 256);
        assert_eq!(sb.geometry.ssd_segments, 63, "one segment's worth goes to the superblocks and metadata");
        assert_eq!(sb.end(), 64 << 20, "the second superblock copy is the file's last 4 KiB");
        assert!(sb.data_end() <= sb.mirror_offset);
        assert_eq!(Superblock::decode(&sb.encode()), Some(Ok(sb)));
        assert_eq!(Superblock::decode(&sb.encode()).unwrap().unwrap().mode, CacheMode::WriteThrough);
        let with_crc = |mut b: Vec<u8>| {
            let crc = crc32c::crc32c(&b[..SUPER_CRC_AT]);
            b[SUPER_CRC_AT..SUPER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut odd = sb.encode();
        odd[10] = 9;
        assert!(matches!(Superblock::decode(&with_crc(odd)), Some(Err(e)) if e.contains("unknown cache mode 9")));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert!(matches!(Superblock::decode(&bad), Some(Err(_))));
        assert_eq!(Superblock::decode(&[0; 4096]), None);
        // Crafted sizes with a valid checksum are refused, never allocated.
        for (at, v) in [(16usize, u32::MAX as u64), (24, u64::MAX / 2), (24, u64::MAX), (56, 1u64 << 62)] {
            let mut b = sb.encode();
            if at == 16 {
                b[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            assert!(matches!(Superblock::decode(&with_crc(b)), Some(Err(e)) if e.contains("inconsistent")));
        }
        let mut old = sb.encode();
        old[8] = 1;
        assert!(matches!(Superblock::decode(&old), Some(Err(e)) if e.contains("format 1")));
        assert!(Superblock::plan(64 << 20, (256 << 20) + 1, 1 << 20, CacheMode::WriteBack).is_err());
        assert!(Superblock::plan(1 << 20, 256 << 20, 1 << 20, CacheMode::WriteBack).is_err());
    }

    #[test]
    fn create_refuses_data_swapped_arguments_and_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let (c, b) = files(dir.path(), 4 << 20, 16 << 20);
        // The backing store holds data: `create BACKING CACHE` is refused.
        std::fs::write(&b, vec![7u8; 16 << 20]).unwrap();
        let e = create(&b, &c, 1 << 20, CacheMode::WriteBack, NO).unwrap_err();
        assert!(e.to_string().contains("holds data (a non-zero byte at offset 0)"), "{e}");
        assert_eq!(std::fs::read(&b).unwrap(), vec![7u8; 16 << 20], "nothing was written");
        // The same file twice, also through a symlink.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&c, &link).unwrap();
        for (x, y) in [(&c, &c), (&c, &link)] {
            let e = create(x, y, 1 << 20, CacheMode::WriteBack, FORCE).unwrap_err();
            assert!(e.to_string().contains("are the same file or device"), "{e}");
        }
    }

    #[test]
    fn create_open_and_the_one_server_rules() {
        let dir = tempfile::tempdir().unwrap();
        let (c, b) = files(dir.path(), 4 << 20, 16 << 20);
        let sb = create(&c, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap();
        assert_eq!(sb.geometry.ssd_segments, 3);
        let again = create(&c, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        create(&c, &b, 1 << 20, CacheMode::WriteBack, FORCE).unwrap();
        let (e, st, sb) = open(&c, &b).unwrap();
        assert_eq!((st.kind, sb.mode), (StartKind::Clean, CacheMode::WriteBack));
        // One server per cache and per backing store.
        let busy = open(&c, &b).err().unwrap();
        assert!(busy.to_string().contains("in use by another ssdcache process"), "{busy}");
        let busy = create(&c, &b, 1 << 20, CacheMode::WriteBack, FORCE).unwrap_err();
        assert_eq!(busy.kind(), io::ErrorKind::WouldBlock);
        let c2 = dir.path().join("cache2");
        File::create(&c2).unwrap().set_len(4 << 20).unwrap();
        let busy = create(&c2, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap_err();
        assert!(busy.to_string().contains(&format!("{} is in use", b.display())), "{busy}");
        e.write_at(b"hello", (5 << 20) + 3, true).unwrap();
        e.maintain().unwrap();
        assert_eq!(e.mapping().iter().flatten().count(), 1);
        e.write_at(b"world", (5 << 20) + 3, true).unwrap();
        // Crashed with a dirty segment: create --force refuses without --discard-dirty.
        drop(e);
        let e = create(&c, &b, 1 << 20, CacheMode::WriteBack, FORCE).unwrap_err();
        assert!(e.to_string().contains("up to 1 cached segment(s) (1048576 bytes)"), "{e}");
        let (e, st, _) = open(&c, &b).unwrap();
        assert_eq!(st.kind, StartKind::Unclean);
        e.shutdown().unwrap();
        drop(e);
        let image = std::fs::read(&b).unwrap();
        assert_eq!(&image[(5 << 20) + 3..(5 << 20) + 8], b"world");
        File::create(&b).unwrap().set_len(8 << 20).unwrap();
        let other = open(&c, &b);
        assert!(other.is_err(), "a backing store of another size is refused");
    }

    #[test]
    fn either_superblock_copy_opens_the_cache_and_the_damaged_one_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let (c, b) = files(dir.path(), 4 << 20, 16 << 20);
        let sb = create(&c, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap();
        let pristine = std::fs::read(&c).unwrap();
        for (at, damage) in [(0u64, 8usize), (20, 1), (sb.backup_offset, 8), (sb.backup_offset + 40, 1)] {
            let mut img = pristine.clone();
            img[at as usize..at as usize + damage].iter_mut().for_each(|x| *x ^= 0x5A);
            std::fs::write(&c, &img).unwrap();
            let r = Superblock::read_either(&FileDevice::open(&c).unwrap()).unwrap();
            assert_eq!(r.sb, sb);
            assert_eq!(r.damaged.as_ref().map(|d| d.0), Some(at / SUPER_LEN * SUPER_LEN), "damage at {at}");
            let e = create(&c, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap_err();
            assert!(e.to_string().contains("already holds an ssdcache cache"), "{e}");
            let (e, ..) = open(&c, &b).unwrap();
            e.shutdown().unwrap();
            drop(e);
            assert!(Superblock::read_either(&FileDevice::open(&c).unwrap()).unwrap().damaged.is_none());
        }
        // Both copies gone: never "create it", and create refuses.
        let mut img = pristine.clone();
        img[..8].fill(0);
        let at = sb.backup_offset as usize;
        img[at..at + 8].fill(0);
        std::fs::write(&c, &img).unwrap();
        let e = Superblock::read(&FileDevice::open(&c).unwrap()).unwrap_err().to_string();
        assert!(e.contains("do NOT run `ssdcache create`") && !e.contains("make one"), "{e}");
        let e = create(&c, &b, 1 << 20, CacheMode::WriteBack, FORCE).unwrap_err();
        assert!(e.to_string().contains("--discard-dirty"), "{e}");
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
