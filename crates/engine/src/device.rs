//! The block devices a persistent cache runs on: the SSD (cache) and the HDD
//! (backing store), each a byte-addressed store with an explicit durability
//! barrier.
//!
//! Unlike [`ssdcache_block::Backend`] (what an NBD export serves), a [`BlockDevice`]
//! has no FUA, trim or multi-connection semantics: the cache engine orders
//! its writes itself with [`BlockDevice::sync`], and every correctness
//! argument of the cache (see [`crate::recover`]) is phrased in terms of "this
//! write was followed by a `sync` that returned".

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ssdcache_block::extents::{self, Extent};

/// A fixed-size byte-addressed device with a durability barrier.
///
/// Writes that have returned are visible to later reads at once, but only
/// those followed by a [`sync`](Self::sync) that returned survive a power
/// cut; a write in flight at the cut may be torn at sector granularity (see
/// [`crate::faulty`]).
pub trait BlockDevice: Send + Sync {
    /// Size in bytes; fixed for the device's lifetime.
    fn len(&self) -> u64;
    /// Whether the device holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` from `offset`; a range past the end is an error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes `data` at `offset`; a range past the end is an error.
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every write that has returned durable.
    fn sync(&self) -> io::Result<()>;
    /// The allocation of `offset..offset+len` (holes read as zeroes), at most
    /// `max` extents covering the range or a nonempty prefix of it; see
    /// [`ssdcache_block::Backend::block_status`]. Default: all data.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let _ = (offset, max);
        Ok(vec![Extent::data(len)])
    }
    /// Makes `offset..offset+len` read as zeroes without writing them, the
    /// space given back (a regular file's hole, a block device's
    /// `fallocate(PUNCH_HOLE)`). `Ok(false)`: this device cannot, nothing
    /// changed. Like a write: durable only after a [`sync`](Self::sync).
    fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
        let _ = (offset, len);
        Ok(false)
    }
    /// The same keeping the space allocated (`FALLOC_FL_ZERO_RANGE`).
    fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
        let _ = (offset, len);
        Ok(false)
    }
    /// Discards `offset..offset+len` (a trim): a hole in a regular file,
    /// `BLKDISCARD` on a block device, after which the range's contents are
    /// whatever the device says (often zeroes, not always). `Ok(false)`:
    /// this device cannot, nothing changed.
    fn discard(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.punch_hole(offset, len)
    }
}

/// The devices' forwarding impls: every method passes through.
macro_rules! forward_device {
    () => {
        fn len(&self) -> u64 {
            (**self).len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            (**self).read_at(buf, offset)
        }
        fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            (**self).write_at(data, offset)
        }
        fn sync(&self) -> io::Result<()> {
            (**self).sync()
        }
        fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
            (**self).extents(offset, len, max)
        }
        fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
            (**self).punch_hole(offset, len)
        }
        fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
            (**self).zero_range(offset, len)
        }
        fn discard(&self, offset: u64, len: u64) -> io::Result<bool> {
            (**self).discard(offset, len)
        }
    };
}

impl<T: BlockDevice + ?Sized> BlockDevice for &T {
    forward_device!();
}

impl<T: BlockDevice + ?Sized> BlockDevice for Arc<T> {
    forward_device!();
}

/// Checks `offset..offset+len` against a device of `size` bytes.
pub(crate) fn check_range(size: u64, offset: u64, len: usize) -> io::Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("range {offset}+{len} past the end of a {size}-byte device"),
        )),
    }
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
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        check_range(self.len, offset, len as usize)?;
        self.dev.extents(self.base + offset, len, max)
    }
    fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
        check_len(self.len, offset, len)?;
        self.dev.punch_hole(self.base + offset, len)
    }
    fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
        check_len(self.len, offset, len)?;
        self.dev.zero_range(self.base + offset, len)
    }
    fn discard(&self, offset: u64, len: u64) -> io::Result<bool> {
        check_len(self.len, offset, len)?;
        self.dev.discard(self.base + offset, len)
    }
}

/// [`check_range`] for a 64-bit length.
pub(crate) fn check_len(size: u64, offset: u64, len: u64) -> io::Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("range {offset}+{len} past the end of a {size}-byte device"),
        )),
    }
}

/// A regular file or a block device node. `sync` is `fdatasync`.
///
/// Its size is fixed at open. A regular file that shrinks underneath (a
/// `truncate` while a server runs) is an error, never silently re-extended:
/// a read past the new end is a short read, and a write first checks the
/// file still reaches that far (`pwrite` would otherwise extend it with a
/// hole, and later reads of the hole would return zeroes as if they were
/// data).
#[derive(Debug)]
pub struct FileDevice {
    file: File,
    size: u64,
    regular: bool,
}

impl FileDevice {
    /// Opens `path` read-write; its current size is the device size.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Self::from_file(file)
    }

    /// Creates (or truncates) `path` as a zero-filled file of `size` bytes.
    pub fn create(path: impl AsRef<Path>, size: u64) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        file.set_len(size)?;
        Ok(FileDevice { file, size, regular: true })
    }

    /// Wraps an open file; block devices report their size through seeking.
    pub fn from_file(mut file: File) -> io::Result<Self> {
        use std::io::{Seek, SeekFrom};
        let size = file.seek(SeekFrom::End(0))?;
        let regular = file.metadata()?.is_file();
        Ok(FileDevice { file, size, regular })
    }

    /// The open file's metadata (fstat).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// An error unless the file still has its size (regular files only).
    fn check_not_shrunk(&self) -> io::Result<()> {
        if self.regular {
            let now = self.file.metadata()?.len();
            if now < self.size {
                return Err(shrunk(self.size, now));
            }
        }
        Ok(())
    }
}

impl std::os::fd::AsRawFd for FileDevice {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }
}

impl BlockDevice for FileDevice {
    fn len(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.size, offset, buf.len())?;
        self.file.read_exact_at(buf, offset).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                let now = self.file.metadata().map(|m| m.len()).unwrap_or(0);
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short read at offset {offset}: {}", shrunk(self.size, now)),
                )
            }
            _ => e,
        })
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        check_range(self.size, offset, data.len())?;
        self.check_not_shrunk()?;
        self.file.write_all_at(data, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        check_range(self.size, offset, len as usize)?;
        extents::file_extents(&self.file, offset, len, max)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
        check_len(self.size, offset, len)?;
        self.check_not_shrunk()?;
        self.fallocate(FALLOC_PUNCH_HOLE, offset, len)
    }

    fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
        check_len(self.size, offset, len)?;
        self.check_not_shrunk()?;
        self.fallocate(FALLOC_ZERO_RANGE, offset, len)
    }

    /// A hole in a regular file; `BLKDISCARD` on a block device.
    fn discard(&self, offset: u64, len: u64) -> io::Result<bool> {
        if self.regular {
            return self.punch_hole(offset, len);
        }
        check_len(self.size, offset, len)?;
        if len == 0 {
            return Ok(true);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // BLKDISCARD = _IO(0x12, 119); its argument: {start, length} in bytes.
            const BLKDISCARD: libc::c_ulong = 0x1277;
            let range: [u64; 2] = [offset, len];
            // SAFETY: the ioctl reads two u64 from a pointer valid for the call.
            let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), BLKDISCARD as _, range.as_ptr()) };
            if rc == 0 {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // A device without discard, or a range not on its sector grid.
                Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY) | Some(libc::EINVAL) => Ok(false),
                _ => Err(e),
            }
        }
        #[cfg(not(target_os = "linux"))]
        Ok(false)
    }
}

#[cfg(target_os = "linux")]
const FALLOC_PUNCH_HOLE: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
#[cfg(target_os = "linux")]
const FALLOC_ZERO_RANGE: i32 = libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE;
#[cfg(not(target_os = "linux"))]
const FALLOC_PUNCH_HOLE: i32 = 0;
#[cfg(not(target_os = "linux"))]
const FALLOC_ZERO_RANGE: i32 = 0;

impl FileDevice {
    /// `fallocate(mode)`; `Ok(false)` where the file system or device does
    /// not support that mode (or, on a block device, that alignment).
    fn fallocate(&self, mode: i32, offset: u64, len: u64) -> io::Result<bool> {
        if len == 0 {
            return Ok(true);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
                return Ok(false);
            };
            // SAFETY: plain syscall on a descriptor we own; no memory is passed.
            if unsafe { libc::fallocate(self.file.as_raw_fd(), mode, off, l) } == 0 {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::ENODEV) | Some(libc::EINVAL) => Ok(false),
                _ => Err(e),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (mode, offset);
            Ok(false)
        }
    }
}

fn shrunk(was: u64, now: u64) -> io::Error {
    io::Error::other(format!("the device shrank from {was} to {now} bytes underneath (truncated?)"))
}

/// An in-memory device (tests, and building images before wrapping them in
/// [`crate::faulty::FaultyDevice`]). `sync` does nothing: nothing is lost.
#[derive(Debug, Default)]
pub struct MemDevice {
    data: Mutex<Vec<u8>>,
}

impl MemDevice {
    /// A zero-filled device of `size` bytes.
    pub fn new(size: usize) -> Self {
        Self::from_vec(vec![0; size])
    }

    /// A device holding `data`.
    pub fn from_vec(data: Vec<u8>) -> Self {
        MemDevice { data: Mutex::new(data) }
    }

    /// A copy of the contents.
    pub fn contents(&self) -> Vec<u8> {
        self.lock().clone()
    }

    /// The contents, consuming the device.
    pub fn into_vec(self) -> Vec<u8> {
        self.data.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BlockDevice for MemDevice {
    fn len(&self) -> u64 {
        self.lock().len() as u64
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.lock();
        check_range(data.len() as u64, offset, buf.len())?;
        buf.copy_from_slice(&data[offset as usize..offset as usize + buf.len()]);
        Ok(())
    }

    fn write_at(&self, src: &[u8], offset: u64) -> io::Result<()> {
        let mut data = self.lock();
        check_range(data.len() as u64, offset, src.len())?;
        data[offset as usize..offset as usize + src.len()].copy_from_slice(src);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    /// Blocks of [`MEM_HOLE_BLOCK`] bytes (aligned to the device's start,
    /// the range's ends cut them) holding only zeroes are holes: what a
    /// sparse file whose zero blocks were never written would report, so
    /// tests of block status run on memory.
    fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let data = self.lock();
        check_range(data.len() as u64, offset, len as usize)?;
        Ok(extents::zero_block_extents(&data, offset, len, MEM_HOLE_BLOCK, max))
    }

    /// Zeroes (which the block status above then reports as holes).
    fn punch_hole(&self, offset: u64, len: u64) -> io::Result<bool> {
        let mut data = self.lock();
        check_len(data.len() as u64, offset, len)?;
        data[offset as usize..(offset + len) as usize].fill(0);
        Ok(true)
    }

    fn zero_range(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.punch_hole(offset, len)
    }
}

/// The block size at which a [`MemDevice`] reports holes.
pub const MEM_HOLE_BLOCK: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_device_round_trip_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let dev = FileDevice::create(&path, 8192).unwrap();
        assert_eq!(dev.len(), 8192);
        dev.write_at(b"hello", 4090).unwrap();
        dev.sync().unwrap();
        drop(dev);
        let dev = FileDevice::open(&path).unwrap();
        let mut buf = [0u8; 5];
        dev.read_at(&mut buf, 4090).unwrap();
        assert_eq!(&buf, b"hello");
        assert!(dev.write_at(b"xy", 8191).is_err());
        assert!(dev.read_at(&mut buf, u64::MAX).is_err());
        // Truncated underneath: reads are short-read errors, writes do not
        // re-extend the file.
        std::fs::File::options().write(true).open(&path).unwrap().set_len(0).unwrap();
        let e = dev.read_at(&mut buf, 4090).unwrap_err();
        assert!(e.to_string().contains("short read") && e.to_string().contains("shrank"), "{e}");
        let e = dev.write_at(b"x", 100).unwrap_err();
        assert!(e.to_string().contains("shrank from 8192 to 0"), "{e}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }

    #[test]
    fn mem_device_reports_zero_blocks_as_holes() {
        let dev = MemDevice::new(5 * 4096);
        dev.write_at(&[1], 4096 + 7).unwrap();
        let v = dev.extents(0, 5 * 4096, 10).unwrap();
        assert_eq!(v, vec![Extent::hole(4096), Extent::data(4096), Extent::hole(3 * 4096)]);
        assert_eq!(dev.extents(100, 4096, 1).unwrap(), vec![Extent::hole(3996)]);
        assert_eq!(dev.extents(4100, 10, 10).unwrap(), vec![Extent::data(10)]);
        assert!(dev.extents(5 * 4096, 1, 10).is_err());
        // through a Region, shifted
        let r = Region::new(&dev, 4096, 2 * 4096).unwrap();
        assert_eq!(r.extents(0, 2 * 4096, 10).unwrap(), vec![Extent::data(4096), Extent::hole(4096)]);
        assert!(r.extents(4096, 4097, 10).is_err());
    }

    #[test]
    fn mem_device_round_trip_and_bounds() {
        let dev = MemDevice::new(16);
        dev.write_at(&[1, 2, 3], 13).unwrap();
        let mut b = [0u8; 4];
        dev.read_at(&mut b, 12).unwrap();
        assert_eq!(b, [0, 1, 2, 3]);
        assert!(dev.write_at(&[1, 2], 15).is_err());
        assert_eq!(BlockDevice::len(&&dev), 16);
    }
}
