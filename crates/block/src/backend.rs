//! Block backends: what an export reads from and writes to.
//!
//! The server calls a [`Backend`] from blocking worker threads, several
//! requests of one or more connections at once, so implementations are
//! `Send + Sync` and do their own locking. Offsets and lengths handed to a
//! backend are already checked against [`Backend::size`].

use crate::extents::{self, Extent};
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A byte-addressed block store behind an export.
pub trait Backend: Send + Sync + 'static {
    /// Size in bytes; fixed for the backend's lifetime.
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes `data` at `offset`; with `fua` it is durable before returning.
    fn write_at(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<()>;
    /// Makes every write that has returned durable. With
    /// [`multi_conn`](Self::multi_conn) true this covers writes made through
    /// every connection, not only the caller's.
    fn flush(&self) -> io::Result<()>;
    /// Discards a range (a hint: contents afterwards are unspecified until rewritten).
    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()>;
    /// Makes a range read as zeroes; `no_hole` asks that the space stay allocated.
    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()>;
    /// [`write_zeroes`](Self::write_zeroes) only if it is fast (no zeroes
    /// written out: a hole punched, a range zeroed by the file system or
    /// device, cached copies dropped), else an `EOPNOTSUPP` error, ideally
    /// before anything changed (`NBD_CMD_FLAG_FAST_ZERO`: the client then
    /// writes the zeroes some other way). The default can never be fast.
    fn fast_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        let _ = (offset, len, no_hole, fua);
        Err(not_fast())
    }
    /// Whether a flush or FUA through one connection is visible to and covers
    /// all connections (advertised as `NBD_FLAG_CAN_MULTI_CONN`).
    fn multi_conn(&self) -> bool {
        false
    }
    /// Whether writes are refused (advertised as `NBD_FLAG_READ_ONLY`; the
    /// server answers writes with EPERM without calling the backend).
    fn read_only(&self) -> bool {
        false
    }
    /// Called once when the server stops, after every in-flight request has
    /// finished: the place for a write-back cache to drain its dirty data.
    fn shutdown(&self) -> io::Result<()> {
        Ok(())
    }
    /// The allocation of `offset..offset+len` (`NBD_CMD_BLOCK_STATUS`,
    /// `base:allocation`): extents in order from `offset`, at most `max`,
    /// covering the range or a nonempty prefix of it. A hole must read as
    /// zeroes. The default says "all data", which is always true enough.
    fn block_status(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let _ = (offset, max);
        Ok(vec![Extent::data(len)])
    }
    /// `NBD_CMD_CACHE`: the client will access this range soon. A hint: the
    /// default does nothing, which the protocol allows.
    fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
}

/// The error of a [`Backend::fast_zeroes`] that cannot be fast (`NBD_ENOTSUP` on the wire).
pub fn not_fast() -> io::Error {
    io::Error::from_raw_os_error(libc::EOPNOTSUPP)
}

/// An in-memory backend for tests. Trim zeroes the range (so tests can see
/// it happened); it counts flushes, FUA writes and shutdowns; block status
/// reports zero 4 KiB blocks as holes.
#[derive(Debug)]
pub struct MemBackend {
    data: Mutex<Vec<u8>>,
    read_only: bool,
    /// Number of `flush` calls.
    pub flushes: AtomicU64,
    /// Number of writes, trims and zeroings with FUA.
    pub fua_ops: AtomicU64,
    /// Number of `shutdown` calls.
    pub shutdowns: AtomicU64,
}

impl MemBackend {
    /// A zero-filled backend of `size` bytes.
    pub fn new(size: usize) -> Self {
        Self::from_vec(vec![0; size])
    }

    /// A backend holding `data`.
    pub fn from_vec(data: Vec<u8>) -> Self {
        MemBackend {
            data: Mutex::new(data),
            read_only: false,
            flushes: AtomicU64::new(0),
            fua_ops: AtomicU64::new(0),
            shutdowns: AtomicU64::new(0),
        }
    }

    /// The same, refusing writes.
    pub fn into_read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// A copy of the contents.
    pub fn contents(&self) -> Vec<u8> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A panic while holding the lock leaves plain bytes behind; keep going.
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn range(&self, len_total: usize, offset: u64, len: u64) -> io::Result<std::ops::Range<usize>> {
        let end = offset.checked_add(len).filter(|&e| e <= len_total as u64);
        match end {
            Some(end) => Ok(offset as usize..end as usize),
            None => Err(io::Error::new(io::ErrorKind::InvalidInput, "range past the end")),
        }
    }

    fn count_fua(&self, fua: bool) {
        if fua {
            self.fua_ops.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Backend for MemBackend {
    fn size(&self) -> u64 {
        self.lock().len() as u64
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.lock();
        let r = self.range(data.len(), offset, buf.len() as u64)?;
        buf.copy_from_slice(&data[r]);
        Ok(())
    }

    fn write_at(&self, src: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        let mut data = self.lock();
        let r = self.range(data.len(), offset, src.len() as u64)?;
        data[r].copy_from_slice(src);
        self.count_fua(fua);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        self.write_zeroes(offset, len, false, fua)
    }

    fn fast_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        self.write_zeroes(offset, len, no_hole, fua) // memory: always fast
    }

    fn write_zeroes(&self, offset: u64, len: u64, _no_hole: bool, fua: bool) -> io::Result<()> {
        let mut data = self.lock();
        let r = self.range(data.len(), offset, len)?;
        data[r].fill(0);
        self.count_fua(fua);
        Ok(())
    }

    fn multi_conn(&self) -> bool {
        true // no cache: every connection sees the same bytes at once
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn shutdown(&self) -> io::Result<()> {
        self.shutdowns.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Zero 4 KiB blocks are holes (see [`extents::zero_block_extents`]).
    fn block_status(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        let data = self.lock();
        self.range(data.len(), offset, len)?;
        Ok(extents::zero_block_extents(&data, offset, len, 4096, max))
    }
}

/// A regular file or block device, through positional I/O on one shared
/// `File` (no cache of its own, so `multi_conn` is true).
///
/// - flush = `fdatasync`; FUA = the write, then `fdatasync`.
/// - trim = `fallocate(PUNCH_HOLE | KEEP_SIZE)` where the file system (or, on
///   Linux 4.9+, the block device) supports it; where it does not, trim is a
///   no-op, which the protocol allows (trim is only a hint).
/// - write zeroes = punch a hole (unless `no_hole`), else
///   `fallocate(ZERO_RANGE | KEEP_SIZE)`, else writing zero buffers of 1 MiB.
///   A punched range reads back as zeroes, so all three are exact. Fast
///   zeroes are the first two only (`EOPNOTSUPP` otherwise).
/// - shutdown = a final `fdatasync`, so a clean stop leaves the data durable.
#[derive(Debug)]
pub struct FileBackend {
    file: File,
    size: u64,
    read_only: bool,
    no_punch: AtomicBool,
    no_zero_range: AtomicBool,
}

impl FileBackend {
    /// Opens `path` read-write (or read-only). Its size is read once, here.
    pub fn open(path: impl AsRef<Path>, read_only: bool) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(!read_only).open(path)?;
        Self::from_file(file, read_only)
    }

    /// Wraps an open file; for a block device the size comes from seeking to its end.
    pub fn from_file(mut file: File, read_only: bool) -> io::Result<Self> {
        let size = file.seek(SeekFrom::End(0))?;
        Ok(FileBackend {
            file,
            size,
            read_only,
            no_punch: AtomicBool::new(false),
            no_zero_range: AtomicBool::new(false),
        })
    }

    /// `fallocate` with `mode`; `Ok(false)` when the file or platform does not
    /// support that mode (remembered in `flag` so it is not retried).
    fn fallocate(&self, mode: i32, offset: u64, len: u64, flag: &AtomicBool) -> io::Result<bool> {
        if flag.load(Ordering::Relaxed) || len == 0 {
            return Ok(len == 0);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "range beyond off_t"));
            };
            // SAFETY: plain syscall on a file descriptor we own; no memory is passed.
            let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), mode, off, l) };
            if rc == 0 {
                return Ok(true);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::ENODEV) => {
                    flag.store(true, Ordering::Relaxed);
                    Ok(false)
                }
                // e.g. a block device refusing a range not aligned to its sectors:
                // fall back for this request only.
                Some(libc::EINVAL) => Ok(false),
                _ => Err(err),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (mode, offset);
            flag.store(true, Ordering::Relaxed);
            Ok(false)
        }
    }

    fn write_zero_buffers(&self, mut offset: u64, len: u64) -> io::Result<()> {
        const CHUNK: u64 = 1 << 20;
        let zeroes = vec![0u8; len.min(CHUNK) as usize];
        let end = offset + len;
        while offset < end {
            let n = (end - offset).min(CHUNK) as usize;
            self.file.write_all_at(&zeroes[..n], offset)?;
            offset += n as u64;
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
const PUNCH_HOLE: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
#[cfg(target_os = "linux")]
const ZERO_RANGE: i32 = libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE;
#[cfg(not(target_os = "linux"))]
const PUNCH_HOLE: i32 = 0;
#[cfg(not(target_os = "linux"))]
const ZERO_RANGE: i32 = 0;

impl Backend for FileBackend {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        self.file.write_all_at(data, offset)?;
        if fua {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn trim(&self, offset: u64, len: u64, fua: bool) -> io::Result<()> {
        if self.fallocate(PUNCH_HOLE, offset, len, &self.no_punch)? && fua {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn write_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        let done = (!no_hole && self.fallocate(PUNCH_HOLE, offset, len, &self.no_punch)?)
            || self.fallocate(ZERO_RANGE, offset, len, &self.no_zero_range)?;
        if !done {
            self.write_zero_buffers(offset, len)?;
        }
        if fua {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn fast_zeroes(&self, offset: u64, len: u64, no_hole: bool, fua: bool) -> io::Result<()> {
        let done = (!no_hole && self.fallocate(PUNCH_HOLE, offset, len, &self.no_punch)?)
            || self.fallocate(ZERO_RANGE, offset, len, &self.no_zero_range)?;
        if !done {
            return Err(not_fast());
        }
        if fua {
            self.file.sync_data()?;
        }
        Ok(())
    }

    fn multi_conn(&self) -> bool {
        true
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn shutdown(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn block_status(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
        extents::file_extents(&self.file, offset, len, max)
    }

    fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
        // POSIX_FADV_WILLNEED: the kernel reads the range ahead into the page cache.
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            if let (Ok(off), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) {
                // SAFETY: plain syscall on a descriptor we own; no memory is passed.
                let rc = unsafe { libc::posix_fadvise(self.file.as_raw_fd(), off, l, libc::POSIX_FADV_WILLNEED) };
                if rc != 0 {
                    log::debug!("posix_fadvise(WILLNEED) failed: {}", io::Error::from_raw_os_error(rc));
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn mem_backend_basics() {
        let m = MemBackend::new(16);
        assert_eq!(m.size(), 16);
        m.write_at(b"abcd", 4, true).unwrap();
        let mut b = [0u8; 6];
        m.read_at(&mut b, 2).unwrap();
        assert_eq!(&b, b"\0\0abcd");
        m.trim(5, 2, false).unwrap();
        m.read_at(&mut b, 2).unwrap();
        assert_eq!(&b, b"\0\0a\0\0d");
        assert!(m.read_at(&mut b, 12).is_err());
        assert!(m.write_at(b"x", u64::MAX, false).is_err());
        assert!(m.write_zeroes(10, u64::MAX, false, false).is_err());
        m.flush().unwrap();
        m.shutdown().unwrap();
        assert_eq!(m.flushes.load(Ordering::Relaxed), 1);
        assert_eq!(m.fua_ops.load(Ordering::Relaxed), 1);
        assert_eq!(m.shutdowns.load(Ordering::Relaxed), 1);
        assert!(m.multi_conn() && !m.read_only());
        assert!(MemBackend::new(1).into_read_only().read_only());
    }

    #[test]
    fn file_backend_roundtrip() {
        let mut tmp = tempfile::NamedTempFile::new().unwrap();
        tmp.write_all(&vec![0xAAu8; 3 << 20]).unwrap();
        tmp.flush().unwrap();
        let f = FileBackend::open(tmp.path(), false).unwrap();
        assert_eq!(f.size(), 3 << 20);
        f.write_at(b"hello", 100, true).unwrap();
        let mut b = [0u8; 5];
        f.read_at(&mut b, 100).unwrap();
        assert_eq!(&b, b"hello");
        // zeroes through whichever mechanism the file system has, and the fallback
        for no_hole in [false, true] {
            f.write_zeroes(4096, 8192, no_hole, true).unwrap();
            let mut z = vec![1u8; 8192];
            f.read_at(&mut z, 4096).unwrap();
            assert!(z.iter().all(|&x| x == 0));
        }
        f.write_zero_buffers(1 << 20, (1 << 20) + 7).unwrap();
        let mut z = vec![1u8; (1 << 20) + 9];
        f.read_at(&mut z, 1 << 20).unwrap();
        assert!(z[..(1 << 20) + 7].iter().all(|&x| x == 0));
        assert_eq!(&z[(1 << 20) + 7..], &[0xAA, 0xAA]);
        f.trim(0, 4096, false).unwrap();
        f.flush().unwrap();
        f.shutdown().unwrap();
        // reading past the end of the file is an error, not short data
        let mut b = [0u8; 8];
        assert!(f.read_at(&mut b, (3 << 20) - 4).is_err());
        let ro = FileBackend::open(tmp.path(), true).unwrap();
        assert!(ro.read_only());
        assert!(ro.write_at(b"x", 0, false).is_err());
    }
}
