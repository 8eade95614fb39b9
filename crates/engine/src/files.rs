//! A cache over files: how one is created ([`create`]) and opened
//! ([`open_files`]) over a cache file and a backing file.
//!
//! **The cache file** (ours; the paper keeps the metadata "on the HDD or the
//! SSD", §3.2): a [`Superblock`] (in two copies) names the geometry, the cache
//! mode and where the rest lives: the metadata primaries ([`crate::meta`]),
//! the SSD slots (slot `s` at `data_offset + s·segment`), the metadata
//! mirrors. The backing file is the HDD as it is: segment `h` at
//! `h·segment`, so it stays a plain image usable without the cache after a
//! clean shutdown.
//!
//! **One server per cache and per backing store**: [`create`],
//! [`open_files`] and `drain` take an exclusive `flock` on both files (held
//! as long as the engine lives), so a second server, or a `create --force`
//! under a running one, is refused instead of corrupting the cache.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use crate::device::{BlockDevice, FileDevice, Region};
use crate::engine::{CachedBackend, EngineConfig};
use crate::mode::CacheMode;
use crate::recover::{RecoverError, StartOptions, Started};
use crate::superblock::{backing_identity, SuperRead, Superblock, SUPER_LEN};

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
pub fn create(
    cache: &Path,
    backing: &Path,
    segment: u32,
    mode: CacheMode,
    opts: CreateOptions,
) -> io::Result<Superblock> {
    let (dev, hdd) = open_pair(cache, backing)?;
    let mut sb = Superblock::plan(dev.len(), hdd.len(), segment, mode)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    sb.backing_id = backing_identity(&hdd.metadata()?);
    let refuse = |kind, msg: String| Err(io::Error::new(kind, msg));
    match Superblock::read_either(&dev) {
        Ok(old) if !opts.discard_dirty => {
            let exposure = old.sb.store(&dev).ok().and_then(|st| crate::recover::dirty_exposure(&st));
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

/// Says "rewrite both superblock copies" in a [`SuperRead::damaged`] slot.
pub(crate) const BOTH_COPIES: u64 = u64::MAX;

/// Refuses a BACKING that is not the one the cache was created for, unless
/// `moved` (the operator says it is the same disk, copied or renumbered):
/// then `sb` takes its identity, and both copies are to be rewritten.
pub(crate) fn check_backing(
    sb: &mut Superblock,
    hdd: &FileDevice,
    path: &Path,
    moved: bool,
) -> io::Result<Option<(u64, String)>> {
    let id = backing_identity(&hdd.metadata()?);
    if sb.backing_id == id {
        return Ok(None);
    }
    if !moved {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not the backing store this cache was created for (identity {:#x}, this one {id:#x}: \
                 another file, or a disk renumbered). Serving or draining it would put the cache's segments \
                 on the wrong disk. If it is the same disk, copied or renumbered, pass --backing-moved",
                path.display(),
                sb.backing_id
            ),
        ));
    }
    log::warn!("--backing-moved: the cache now belongs to {} (identity {id:#x})", path.display());
    sb.backing_id = id;
    Ok(Some((BOTH_COPIES, "--backing-moved".into())))
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
    /// A file could not be opened or is not a cache. (Transparent: with the
    /// error as its source too, a message chain would say it twice.)
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The start procedure refused.
    #[error(transparent)]
    Recover(#[from] RecoverError),
    /// The engine's configuration is wrong (e.g. an unknown policy).
    #[error("{0}")]
    Config(String),
}

/// Wraps the opened devices (SSD window, backing file) before the engine
/// uses them: fault injection and benchmark models go here.
pub type Wrap<'a> =
    &'a dyn Fn(Arc<dyn BlockDevice>, FileDevice) -> io::Result<(Arc<dyn BlockDevice>, Arc<dyn BlockDevice>)>;

/// The devices as they are.
pub fn no_wrap(
    ssd: Arc<dyn BlockDevice>,
    backing: FileDevice,
) -> io::Result<(Arc<dyn BlockDevice>, Arc<dyn BlockDevice>)> {
    Ok((ssd, Arc::new(backing)))
}

/// Keeps `settings` in both superblock copies of the cache file on `dev`.
/// The caller holds the file's lock (a running server, or `ssdcache set`
/// offline).
pub fn write_settings(dev: &FileDevice, settings: &crate::settings::CacheSettings) -> io::Result<Superblock> {
    let stored = crate::superblock::StoredSettings::new(settings).map_err(io::Error::other)?;
    rewrite_superblock(dev, |sb| sb.settings = stored)
}

/// Records `mode` in both superblock copies (a running server's mode switch).
pub fn write_mode(dev: &FileDevice, mode: CacheMode) -> io::Result<Superblock> {
    rewrite_superblock(dev, |sb| sb.mode = mode)
}

/// Both superblock copies, changed by `edit`: the first copy, a sync, the
/// other, a sync, so a cut leaves one copy whole (the start procedure then
/// uses it and rewrites the other).
fn rewrite_superblock(dev: &FileDevice, edit: impl FnOnce(&mut Superblock)) -> io::Result<Superblock> {
    let SuperRead { mut sb, .. } = Superblock::read_either(dev)?;
    edit(&mut sb);
    dev.write_at(&sb.encode(), 0)?;
    dev.sync()?;
    dev.write_at(&sb.encode(), sb.backup_offset)?;
    dev.sync()?;
    Ok(sb)
}

/// `ssdcache set` with no server running: the checks a running server
/// makes, then the settings kept, under the cache file's lock (so no server
/// starts meanwhile). Returns the settings kept.
pub fn set_offline(cache: &Path, assignments: &[String]) -> Result<Vec<String>, String> {
    let dev = FileDevice::open(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    lock_exclusive(&dev, cache).map_err(|e| e.to_string())?;
    let SuperRead { sb, .. } = Superblock::read_either(&dev).map_err(|e| format!("{}: {e}", cache.display()))?;
    let mut kept = sb.settings.get();
    for a in assignments {
        if a.trim_start().starts_with("mode=") {
            return Err(format!(
                "{a}: a mode changes only under a running server (it writes dirty segments back first); \
                 start `ssdcache serve` and set it again"
            ));
        }
        kept.assign(a)?;
    }
    crate::engine::check_config_for(sb.mode, &kept.under(&EngineConfig::default()), sb.geometry)?;
    write_settings(&dev, &kept).map_err(|e| format!("{}: the settings could not be kept: {e}", cache.display()))?;
    Ok(kept.describe())
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
    let SuperRead { mut sb, mut damaged } = Superblock::read_either(&meta_dev)?;
    if let Some(moved) = check_backing(&mut sb, &hdd, backing, opts.backing_moved)? {
        damaged = Some(moved);
    }
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
    let (map, started) =
        crate::datapath::CacheMap::open_with(ssd, hdd, sb.store(meta_dev)?, opts, sb.mode.write_mode())?;
    if let Some((at, what)) = damaged {
        // The start procedure accepted the cache: make both copies good again.
        log::warn!("superblock copy at offset {at} rewritten ({what})");
        let dev = FileDevice::open(cache)?;
        for at in if at == BOTH_COPIES { vec![0, sb.backup_offset] } else { vec![at] } {
            dev.write_at(&sb.encode(), at)?;
        }
        dev.sync()?;
    }
    let engine = CachedBackend::new(map, sb.mode, config).map_err(OpenError::Config)?;
    Ok((engine, started, sb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recover::StartKind;
    use crate::superblock::SUPER_LEN;
    use ssdcache_block::Backend;
    use std::fs::File;

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
        // Shut down cleanly: nothing dirty, so --force alone may format it
        // (the older save in the other slot, not clean, is superseded).
        create(&c, &b, 1 << 20, CacheMode::WriteBack, FORCE).unwrap();
        File::create(&b).unwrap().set_len(8 << 20).unwrap();
        let other = open(&c, &b);
        assert!(other.is_err(), "a backing store of another size is refused");
    }

    #[test]
    fn another_backing_store_of_the_same_size_is_refused_unless_moved() {
        let dir = tempfile::tempdir().unwrap();
        let (c, b) = files(dir.path(), 4 << 20, 16 << 20);
        create(&c, &b, 1 << 20, CacheMode::WriteBack, NO).unwrap();
        let (e, ..) = open(&c, &b).unwrap();
        e.write_at(b"dirty", 1 << 20, true).unwrap();
        drop(e); // a crash: the cache may hold dirty segments
                 // Another disk of the same size (a copy has a new inode).
        let other = dir.path().join("other");
        std::fs::copy(&b, &other).unwrap();
        let err = open(&c, &other).err().unwrap().to_string();
        assert!(err.contains("not the backing store this cache was created for"), "{err}");
        assert!(crate::drain::drain(&c, &other, false, false, |_, _| {}).is_err());
        let moved = StartOptions { backing_moved: true, ..Default::default() };
        let (e, ..) = open_files(&c, &other, &no_wrap, &EngineConfig::default(), moved).unwrap();
        e.shutdown().unwrap();
        drop(e);
        // Recorded: the copy is now the cache's disk, the original is not.
        open(&c, &other).unwrap().0.shutdown().unwrap();
        assert!(open(&c, &b).is_err());
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

    /// An error's chain of causes, as `{:#}` prints it.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut s = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            s += &format!(": {c}");
            cause = c.source();
        }
        s
    }

    #[test]
    fn a_cause_is_said_once_in_the_chain() {
        for e in
            [OpenError::from(io::Error::other("boom")), OpenError::from(RecoverError::from(io::Error::other("boom")))]
        {
            assert_eq!(chain(&e).matches("boom").count(), 1, "{}", chain(&e));
        }
        let e = crate::meta::SlotError::from(io::Error::other("boom"));
        assert_eq!(chain(&e).matches("boom").count(), 1, "{}", chain(&e));
    }
}
