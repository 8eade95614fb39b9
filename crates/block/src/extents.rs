//! Allocation of a byte range (what `NBD_CMD_BLOCK_STATUS` reports for
//! `base:allocation`): a list of [`Extent`]s, each data or a hole, and how a
//! sparse regular file's holes are found (`lseek` with `SEEK_DATA` /
//! `SEEK_HOLE`).
//!
//! An extent reported as data is always safe (the protocol's status 0: "allocated,
//! contents unknown"); a hole is a promise that the range reads as zeroes, so
//! only a range the file system says is unallocated is ever one.

use std::fs::File;
use std::io;

/// A run of bytes with one allocation state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Length in bytes (never 0 in a list this module builds).
    pub len: u64,
    /// Unallocated: reads as zeroes, and a write may need new space.
    pub hole: bool,
}

impl Extent {
    pub fn data(len: u64) -> Self {
        Extent { len, hole: false }
    }

    pub fn hole(len: u64) -> Self {
        Extent { len, hole: true }
    }
}

/// Appends `e`, merging it into the last extent when both have the same state.
pub fn push(list: &mut Vec<Extent>, e: Extent) {
    if e.len == 0 {
        return;
    }
    match list.last_mut() {
        Some(last) if last.hole == e.hole => last.len += e.len,
        _ => list.push(e),
    }
}

/// The allocation of `offset..offset+len` of an in-memory disk `data`
/// (tests): blocks of `block` bytes (aligned to the disk's start, cut by the
/// range's ends) holding only zeroes are holes, as in a sparse file whose
/// zero blocks were never written. At most `max` extents. The range must lie
/// within `data`.
pub fn zero_block_extents(data: &[u8], offset: u64, len: u64, block: u64, max: usize) -> Vec<Extent> {
    let (mut at, end) = (offset, offset + len);
    let mut out: Vec<Extent> = Vec::new();
    while at < end {
        let stop = ((at / block + 1) * block).min(end);
        let zero = data[at as usize..stop as usize].iter().all(|&b| b == 0);
        let e = if zero { Extent::hole(stop - at) } else { Extent::data(stop - at) };
        if out.len() == max.max(1) && out.last().is_some_and(|l| l.hole != e.hole) {
            break;
        }
        push(&mut out, e);
        at = stop;
    }
    out
}

/// The allocation of `offset..offset+len` of a file, in order from `offset`,
/// at most `max` extents (they then cover only a prefix of the range, never
/// less than one byte when `len > 0`).
///
/// A file system or device that cannot tell (`lseek` answers `EINVAL`,
/// `ENXIO` at the very start of a block device, `EOPNOTSUPP`) is all data.
pub fn file_extents(file: &File, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
    let mut out = Vec::new();
    let Some(end) = offset.checked_add(len) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "range overflows"));
    };
    let mut pos = offset;
    while pos < end && out.len() < max.max(1) {
        match seek(file, pos, Whence::Data)? {
            // No data from here to the end of the file: one hole. A file
            // shorter than the range (it shrank underneath) is data past its
            // end: safe, and its reads fail anyway.
            None => {
                let size = file.metadata()?.len();
                if size > pos {
                    push(&mut out, Extent::hole(end.min(size) - pos));
                    pos = end.min(size);
                }
                push(&mut out, Extent::data(end - pos));
                pos = end;
            }
            Some(Seek::Unsupported) => {
                push(&mut out, Extent::data(end - pos));
                pos = end;
            }
            Some(Seek::At(data)) if data > pos => {
                let stop = data.min(end);
                push(&mut out, Extent::hole(stop - pos));
                pos = stop;
            }
            Some(Seek::At(_)) => {
                // Data at pos: it runs to the next hole (EOF counts as one).
                let stop = match seek(file, pos, Whence::Hole)? {
                    Some(Seek::At(h)) if h > pos => h.min(end),
                    _ => end,
                };
                push(&mut out, Extent::data(stop - pos));
                pos = stop;
            }
        }
    }
    Ok(out)
}

enum Whence {
    Data,
    Hole,
}

enum Seek {
    At(u64),
    Unsupported,
}

/// `lseek(SEEK_DATA | SEEK_HOLE)` from `pos`; `None` on `ENXIO` (nothing of
/// that kind after `pos`).
fn seek(file: &File, pos: u64, whence: Whence) -> io::Result<Option<Seek>> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let w = match whence {
            Whence::Data => libc::SEEK_DATA,
            Whence::Hole => libc::SEEK_HOLE,
        };
        let Ok(off) = libc::off_t::try_from(pos) else {
            return Ok(Some(Seek::Unsupported));
        };
        // SAFETY: plain syscall on a descriptor we own; no memory is passed.
        // The file position it moves is never used (all I/O is positional).
        let r = unsafe { libc::lseek(file.as_raw_fd(), off, w) };
        if r >= 0 {
            return Ok(Some(Seek::At(r as u64)));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENXIO) if file.metadata()?.is_file() => Ok(None),
            Some(libc::ENXIO) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Ok(Some(Seek::Unsupported)),
            _ => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, pos, whence);
        Ok(Some(Seek::Unsupported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn total(v: &[Extent]) -> u64 {
        v.iter().map(|e| e.len).sum()
    }

    #[test]
    fn push_merges_and_drops_empty() {
        let mut v = Vec::new();
        push(&mut v, Extent::data(3));
        push(&mut v, Extent::data(4));
        push(&mut v, Extent::hole(0));
        push(&mut v, Extent::hole(5));
        assert_eq!(v, vec![Extent::data(7), Extent::hole(5)]);
    }

    /// A file with data at 1 MiB..1 MiB+4 KiB in 4 MiB of holes: the file
    /// system may round to its own block size, so the checks allow that.
    #[test]
    fn sparse_file_holes_and_data() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::options().read(true).write(true).create(true).truncate(true).open(dir.path().join("s")).unwrap();
        f.set_len(4 << 20).unwrap();
        f.write_all_at(&[7u8; 4096], 1 << 20).unwrap();
        let v = file_extents(&f, 0, 4 << 20, 100).unwrap();
        assert_eq!(total(&v), 4 << 20, "{v:?}");
        // Whatever the file system, the written bytes are data and most of the rest is hole.
        let mut at = 0;
        for e in &v {
            if e.hole {
                assert!(at + e.len <= 1 << 20 || at >= (1 << 20) + 4096, "hole over the data: {v:?}");
            }
            at += e.len;
        }
        let holes: u64 = v.iter().filter(|e| e.hole).map(|e| e.len).sum();
        if holes > 0 {
            // A file system that reports holes at all: the 4 MiB are mostly hole.
            assert!(holes >= 3 << 20, "{v:?}");
            assert_eq!(v.len(), 3, "{v:?}");
            assert!(v[0].hole && !v[1].hole && v[2].hole, "{v:?}");
        }
        // A range inside the data, one inside a hole, an unaligned one, a cap of one extent.
        assert_eq!(file_extents(&f, (1 << 20) + 100, 200, 100).unwrap(), vec![Extent::data(200)]);
        let h = file_extents(&f, 3 << 20, 1000, 100).unwrap();
        assert_eq!(total(&h), 1000);
        let one = file_extents(&f, 0, 4 << 20, 1).unwrap();
        assert_eq!(one.len(), 1);
        assert!(one[0].len > 0 && one[0].len <= 4 << 20);
        assert!(file_extents(&f, u64::MAX, 2, 10).is_err());
        assert_eq!(file_extents(&f, 5, 0, 10).unwrap(), vec![]);
    }

    #[test]
    fn fully_written_file_is_data_and_past_the_end_is_data() {
        let dir = tempfile::tempdir().unwrap();
        let f = File::options().read(true).write(true).create(true).truncate(true).open(dir.path().join("d")).unwrap();
        f.write_all_at(&[1u8; 8192], 0).unwrap();
        assert_eq!(file_extents(&f, 0, 8192, 10).unwrap(), vec![Extent::data(8192)]);
        // Past the end of a file that shrank underneath: never reported as a hole.
        let v = file_extents(&f, 4096, 16384, 10).unwrap();
        assert_eq!(total(&v), 16384);
        assert!(v.iter().all(|e| !e.hole), "{v:?}");
    }
}
