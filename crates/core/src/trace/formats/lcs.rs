//! libCacheSim's `lcs` binary traces: an 8 KiB header, then fixed-size
//! little-endian records whose layout the header's version gives.
//!
//! ```text
//! header (8192 bytes): u64 start magic 0x123456789abcdef0, u64 version (1..=8),
//!                      trace statistics, …, u64 end magic (the last 8 bytes)
//! v1 (24 B): u32 clock_time, u64 obj_id, u32 obj_size, i64 next_access_vtime   (= oracleGeneral)
//! v2 (28 B): u32 clock_time, u64 obj_id, u32 obj_size, u32 op:8|tenant:24, i64 next_access_vtime
//! v3 (36 B): u32 clock_time, u64 obj_id, i64 obj_size, u32 op:8|tenant:24, u32 ttl, i64 next_access_vtime
//! v4..v8: v3 and 1, 2, 4, 8, 16 u32 features
//! ```
//!
//! Operations are libCacheSim's `req_op_e`: get, gets, read and nop read;
//! set, add, cas, replace, append, prepend, incr, decr, write and update write;
//! delete removes (a trim). An unknown op is an error naming it. Times are
//! `clock_time` seconds, rebased to the first record.

use crate::trace::objects::{object_size, read_record, ObjectReader, ObjectRequest};
use crate::trace::{FieldError, Format, Op, TraceError};
use std::io::BufRead;
use std::path::{Path, PathBuf};

pub const MAGIC: u64 = 0x1234_5678_9abc_def0;
pub const HEADER: usize = 8192;

/// Bytes per record of `version`, or `None` for a version libCacheSim does not define.
pub fn record_len(version: u64) -> Option<usize> {
    Some(match version {
        1 => 24,
        2 => 28,
        3 => 36,
        4..=8 => 36 + 4 * [1, 2, 4, 8, 16][version as usize - 4],
        _ => return None,
    })
}

fn op_of(code: u8) -> Option<Op> {
    Some(match code {
        0 | 1 | 2 | 12 => Op::Read,
        3..=8 | 10 | 11 | 13 | 14 => Op::Write,
        9 => Op::Trim,
        _ => return None,
    })
}

pub struct Lcs {
    src: Box<dyn BufRead + Send>,
    path: PathBuf,
    version: u64,
    record: Vec<u8>,
    /// Records read so far (for error messages).
    index: u64,
    t0: Option<u32>,
}

impl Lcs {
    /// Reads and checks the header.
    pub fn new(mut src: Box<dyn BufRead + Send>, path: &Path) -> Result<Self, TraceError> {
        let bad = |msg: String| TraceError::Format { path: path.into(), msg };
        let mut header = vec![0u8; HEADER];
        if !read_record(src.as_mut(), &mut header, path, 0, "lcs header")? {
            return Err(bad("empty file: an lcs trace starts with an 8192-byte header".into()));
        }
        let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        if word(0) != MAGIC || word(HEADER - 8) != MAGIC {
            return Err(bad("not an lcs trace: the header's magic numbers are missing".into()));
        }
        let version = word(8);
        let len = record_len(version).ok_or_else(|| bad(format!("lcs version {version} is unknown (1 to 8)")))?;
        Ok(Lcs { src, path: path.into(), version, record: vec![0; len], index: 0, t0: None })
    }

    fn decode(&mut self) -> Result<ObjectRequest, FieldError> {
        let r = &self.record;
        let u32_at = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap());
        let clock = u32_at(0);
        let key = u64::from_le_bytes(r[4..12].try_into().unwrap());
        let (size, op_code) = match self.version {
            1 => (u32_at(12) as u64, 1),
            2 => (u32_at(12) as u64, r[16]),
            _ => {
                let size = i64::from_le_bytes(r[12..20].try_into().unwrap());
                (u64::try_from(size).map_err(|_| FieldError::new("obj_size", format!("negative size {size}")))?, r[20])
            }
        };
        let op = op_of(op_code).ok_or_else(|| FieldError::new("op", format!("unknown operation code {op_code}")))?;
        let size = object_size("obj_size", size)?;
        let base = *self.t0.get_or_insert(clock);
        let time = clock.saturating_sub(base) as u64 * 1_000_000_000;
        Ok(ObjectRequest { time, key, size, op })
    }
}

impl ObjectReader for Lcs {
    fn read_objects(&mut self, out: &mut Vec<ObjectRequest>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        while out.len() < max && read_record(self.src.as_mut(), &mut self.record, &self.path, self.index, "lcs")? {
            let req = self.decode().map_err(|e| TraceError::Format {
                path: self.path.clone(),
                msg: format!("record {}: field {}: {}", self.index, e.field, e.msg),
            })?;
            self.index += 1;
            out.push(req);
        }
        Ok(out.len())
    }
}

/// The start magic.
pub fn sniff(head: &[u8]) -> Option<Format> {
    (head.len() >= 16 && head[..8] == MAGIC.to_le_bytes()).then_some(Format::Lcs)
}

/// An lcs trace of `version` 1 or 2 holding `records` (time, key, size, op code):
/// for tests and fuzz seeds.
pub fn write_lcs(version: u64, records: &[(u32, u64, u32, u8)]) -> Vec<u8> {
    let mut out = vec![0u8; HEADER];
    out[..8].copy_from_slice(&MAGIC.to_le_bytes());
    out[8..16].copy_from_slice(&version.to_le_bytes());
    out[HEADER - 8..].copy_from_slice(&MAGIC.to_le_bytes());
    for &(time, key, size, op) in records {
        out.extend_from_slice(&time.to_le_bytes());
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        if version == 2 {
            out.extend_from_slice(&(op as u32).to_le_bytes());
        }
        out.extend_from_slice(&(-1i64).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::objects::read_all_objects;
    use std::io::Cursor;

    fn read(bytes: Vec<u8>) -> Result<Vec<ObjectRequest>, TraceError> {
        let mut r = Lcs::new(Box::new(Cursor::new(bytes)), Path::new("t.lcs"))?;
        read_all_objects(&mut r)
    }

    #[test]
    fn versions_one_and_two_decode() {
        let v1 = read(write_lcs(1, &[(10, 7, 100, 0), (12, 8, 5, 0)])).unwrap();
        assert_eq!(v1[1], ObjectRequest { time: 2_000_000_000, key: 8, size: 5, op: Op::Read });
        let v2 = read(write_lcs(2, &[(0, 7, 100, 3), (0, 7, 100, 9), (0, 7, 100, 1)])).unwrap();
        assert_eq!(v2.iter().map(|r| r.op).collect::<Vec<_>>(), [Op::Write, Op::Trim, Op::Read]);
        assert_eq!(sniff(&write_lcs(1, &[])), Some(Format::Lcs));
    }

    #[test]
    fn bad_input_is_named() {
        let e = read(write_lcs(1, &[(0, 1, 0, 0)])).unwrap_err().to_string();
        assert!(e.contains("record 0") && e.contains("object size 0"), "{e}");
        let e = read(write_lcs(2, &[(0, 1, 1, 77)])).unwrap_err().to_string();
        assert!(e.contains("operation code 77"), "{e}");
        let e = read(write_lcs(9, &[])).unwrap_err().to_string();
        assert!(e.contains("version 9"), "{e}");
        let mut torn = write_lcs(1, &[(0, 1, 1, 0)]);
        torn.truncate(torn.len() - 3);
        assert!(read(torn).unwrap_err().to_string().contains("21 stray bytes"));
        assert!(read(vec![1; 100]).is_err());
    }
}
