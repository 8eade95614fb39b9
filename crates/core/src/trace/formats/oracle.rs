//! libCacheSim's `oracleGeneral` binary traces: 24-byte little-endian records
//!
//! ```text
//! u32 clock_time   seconds
//! u64 obj_id
//! u32 obj_size     bytes
//! i64 next_access_vtime   1-based position of the next request for obj_id, or -1
//! ```
//!
//! with no header (files are often zstd-compressed; decompression is by magic).
//!
//! Reading: ssdcache treats each object as one cache page, so a record is a
//! one-page [`Op::Read`] of page `obj_id` ([`Unit::Pages`], device 0) and
//! `obj_size` is ignored, except that records with `obj_size == 0` are skipped as
//! libCacheSim skips them by default (`ignore_size_zero_req`), so both see the
//! same requests. `next_access_vtime` is not needed (ssdcache's Belady computes
//! its own future) and is not checked. Times are `clock_time` seconds, rebased to
//! the first record.
//!
//! Writing ([`OracleWriter`]) produces what libCacheSim's `traceConv` would, so
//! its Belady and other oracle policies can run on ssdcache's page accesses:
//! `next_access_vtime` of the request at 0-based position `i` is `j + 1` where
//! `j > i` is the position of the next request for the same key ("reference count
//! starts with 1"), and -1 when there is none.

use crate::trace::{Format, Op, Request, TraceError, TraceReader, Unit};
use crate::Nanos;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Bytes per record.
pub const RECORD: usize = 24;

/// Records per buffered chunk when writing.
const WRITE_CHUNK: usize = 4096;
/// Most records decoded per `read_batch` call, whatever the caller asks (bounds the buffer).
const MAX_CHUNK: usize = 1 << 16;

pub struct OracleGeneral {
    src: Box<dyn BufRead + Send>,
    path: PathBuf,
    /// The start of a record split across two of the source's buffers.
    carry: Vec<u8>,
    /// Records consumed so far (for error messages).
    record: u64,
    t0: Option<u32>,
    done: bool,
}

impl OracleGeneral {
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> Self {
        OracleGeneral { src, path: path.into(), carry: Vec::with_capacity(RECORD), record: 0, t0: None, done: false }
    }
}

/// Decodes whole records of `bytes` into `out` (appending), skipping zero-size ones.
/// `t0` is the clock time of the trace's first request, set from the first record kept.
#[inline]
fn decode(bytes: &[u8], out: &mut Vec<Request>, t0: &mut Option<u32>) {
    out.reserve(bytes.len() / RECORD);
    for rec in bytes.chunks_exact(RECORD) {
        let clock = u32::from_le_bytes(rec[0..4].try_into().unwrap());
        let id = u64::from_le_bytes(rec[4..12].try_into().unwrap());
        let size = u32::from_le_bytes(rec[12..16].try_into().unwrap());
        if size == 0 {
            continue;
        }
        let base = *t0.get_or_insert(clock);
        let time = (clock.saturating_sub(base) as u64) * 1_000_000_000;
        out.push(Request { time, addr: id, len: 1, dev: 0, op: Op::Read });
    }
}

impl TraceReader for OracleGeneral {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        let max = max.min(MAX_CHUNK);
        // Records are decoded in place from the source's own buffer (no copy of
        // the file's bytes); with zero-size records skipped a chunk can yield
        // nothing, so keep going until something is read or the file ends.
        while out.is_empty() && !self.done && max > 0 {
            let path = &self.path;
            let chunk = self.src.fill_buf().map_err(|error| TraceError::Io { path: path.clone(), error })?;
            if chunk.is_empty() {
                self.done = true;
                if !self.carry.is_empty() {
                    return Err(TraceError::Format {
                        path: self.path.clone(),
                        msg: format!(
                            "record {}: file ends inside a record ({} stray bytes; oracleGeneral records are {RECORD} bytes)",
                            self.record,
                            self.carry.len()
                        ),
                    });
                }
                break;
            }
            if !self.carry.is_empty() || chunk.len() < RECORD {
                // a record split across buffers: gather it byte-exact
                let take = (RECORD - self.carry.len()).min(chunk.len());
                self.carry.extend_from_slice(&chunk[..take]);
                self.src.consume(take);
                if self.carry.len() == RECORD {
                    decode(&self.carry, out, &mut self.t0);
                    self.carry.clear();
                    self.record += 1;
                }
                continue;
            }
            let whole = (chunk.len() / RECORD).min(max) * RECORD;
            decode(&chunk[..whole], out, &mut self.t0);
            self.src.consume(whole);
            self.record += (whole / RECORD) as u64;
        }
        Ok(out.len())
    }

    fn unit(&self) -> Unit {
        Unit::Pages
    }
}

/// Plausible oracleGeneral records: every record's `next_access_vtime` is -1 (or
/// `i64::MAX`) or a later 1-based position, where that position falls inside
/// `head` the record there is for the same object, and no position lies beyond
/// the file (when `head` is the whole file) or beyond 2^40 records (a 26 TB
/// trace). Random or text data fails at once; big-endian u32 key files fail the
/// bound. `head` is the file's first bytes; if it is shorter than a full sniff
/// window it is the whole file and must be whole records.
pub fn sniff(head: &[u8]) -> Option<Format> {
    let n = head.len() / RECORD;
    let whole = head.len() < super::SNIFF_BYTES;
    if n == 0 || (whole && !head.len().is_multiple_of(RECORD)) {
        return None;
    }
    let limit: u64 = if whole { n as u64 } else { 1 << 40 };
    let rec = |i: usize| &head[i * RECORD..(i + 1) * RECORD];
    let id = |i: usize| u64::from_le_bytes(rec(i)[4..12].try_into().unwrap());
    let mut sized = false;
    for i in 0..n {
        let next = i64::from_le_bytes(rec(i)[16..24].try_into().unwrap());
        sized |= u32::from_le_bytes(rec(i)[12..16].try_into().unwrap()) > 0;
        if next == -1 || next == i64::MAX {
            continue;
        }
        if next < i as i64 + 2 {
            return None;
        }
        let j = (next - 1) as u64;
        if j >= limit || (j < n as u64 && id(j as usize) != id(i)) {
            return None;
        }
    }
    sized.then_some(Format::OracleGeneral)
}

/// Writes page accesses as an oracleGeneral trace. Next-access positions need the
/// whole future, so accesses are collected by [`OracleWriter::push`] (16 bytes
/// each) and written by [`OracleWriter::finish`]; [`write_oracle`] does both for
/// accesses already in slices.
pub struct OracleWriter<W: Write> {
    out: W,
    page_size: u32,
    times: Vec<Nanos>,
    keys: Vec<u64>,
}

impl<W: Write> OracleWriter<W> {
    /// Every record gets `obj_size = page_size` (which must not be zero: libCacheSim
    /// skips zero-size records).
    pub fn new(out: W, page_size: u32) -> std::io::Result<Self> {
        if page_size == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "oracleGeneral page size must not be zero",
            ));
        }
        Ok(OracleWriter { out, page_size, times: Vec::new(), keys: Vec::new() })
    }

    /// One access to page `key` at `time` (nanoseconds since the trace start).
    pub fn push(&mut self, time: Nanos, key: u64) {
        self.times.push(time);
        self.keys.push(key);
    }

    /// Every page of a [`Unit::Pages`] request (`addr .. addr + len`; the device is
    /// not part of the key: use [`OracleWriter::push`] with your own keys to keep
    /// devices apart).
    pub fn push_request(&mut self, r: &Request) {
        for k in 0..r.len as u64 {
            self.push(r.time, r.addr.wrapping_add(k));
        }
    }

    /// Computes the next-access positions and writes every record.
    pub fn finish(mut self) -> std::io::Result<W> {
        write_records(&mut self.out, self.page_size, &self.times, &self.keys)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes `keys[i]` accessed at `times[i]` (nanoseconds; `clock_time` is whole
/// seconds, saturating at `u32::MAX`) as oracleGeneral records of `page_size` bytes.
pub fn write_oracle<W: Write>(mut out: W, page_size: u32, times: &[Nanos], keys: &[u64]) -> std::io::Result<W> {
    if page_size == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "oracleGeneral page size must not be zero"));
    }
    write_records(&mut out, page_size, times, keys)?;
    out.flush()?;
    Ok(out)
}

/// `next[i]` = 1-based position of the next access to `keys[i]`, or -1.
pub fn next_access_vtimes(keys: &[u64]) -> Vec<i64> {
    let mut next = vec![-1i64; keys.len()];
    let mut seen: hashbrown::HashMap<u64, i64> = hashbrown::HashMap::with_capacity(keys.len().min(1 << 20));
    for i in (0..keys.len()).rev() {
        if let Some(j) = seen.insert(keys[i], i as i64 + 1) {
            next[i] = j;
        }
    }
    next
}

fn write_records<W: Write>(out: &mut W, page_size: u32, times: &[Nanos], keys: &[u64]) -> std::io::Result<()> {
    if times.len() != keys.len() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "times and keys differ in length"));
    }
    let next = next_access_vtimes(keys);
    let mut buf = Vec::with_capacity(WRITE_CHUNK * RECORD);
    for i in 0..keys.len() {
        let secs = u32::try_from(times[i] / 1_000_000_000).unwrap_or(u32::MAX);
        buf.extend_from_slice(&secs.to_le_bytes());
        buf.extend_from_slice(&keys[i].to_le_bytes());
        buf.extend_from_slice(&page_size.to_le_bytes());
        buf.extend_from_slice(&next[i].to_le_bytes());
        if buf.len() >= WRITE_CHUNK * RECORD {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// oracleGeneral in object mode: each record a read of `obj_size` bytes of
/// object `obj_id`. A zero size is an error here (page mode skips such
/// records as libCacheSim does): an object cache has no use for them, and a
/// silent skip would hide a trace that carries no sizes at all.
pub struct OracleObjects {
    src: Box<dyn BufRead + Send>,
    path: PathBuf,
    record: u64,
    t0: Option<u32>,
}

impl OracleObjects {
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> Self {
        OracleObjects { src, path: path.into(), record: 0, t0: None }
    }
}

impl crate::trace::objects::ObjectReader for OracleObjects {
    fn read_objects(
        &mut self,
        out: &mut Vec<crate::trace::objects::ObjectRequest>,
        max: usize,
    ) -> Result<usize, TraceError> {
        use crate::trace::objects::{object_size, read_record, ObjectRequest};
        out.clear();
        let mut rec = [0u8; RECORD];
        while out.len() < max && read_record(self.src.as_mut(), &mut rec, &self.path, self.record, "oracleGeneral")? {
            let clock = u32::from_le_bytes(rec[0..4].try_into().unwrap());
            let key = u64::from_le_bytes(rec[4..12].try_into().unwrap());
            let size = u32::from_le_bytes(rec[12..16].try_into().unwrap()) as u64;
            let size = object_size("obj_size", size).map_err(|e| TraceError::Format {
                path: self.path.clone(),
                msg: format!("record {}: field {}: {}", self.record, e.field, e.msg),
            })?;
            self.record += 1;
            let base = *self.t0.get_or_insert(clock);
            let time = clock.saturating_sub(base) as u64 * 1_000_000_000;
            out.push(ObjectRequest { time, key, size, op: Op::Read });
        }
        Ok(out.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::read_all;
    use std::io::Cursor;

    fn record(clock: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&clock.to_le_bytes());
        r.extend_from_slice(&id.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        r.extend_from_slice(&next.to_le_bytes());
        r
    }

    fn reader(bytes: Vec<u8>) -> OracleGeneral {
        OracleGeneral::new(Box::new(Cursor::new(bytes)), Path::new("t.oracleGeneral"))
    }

    #[test]
    fn records_decode_exactly() {
        let mut bytes = record(100, 7, 4096, 3);
        bytes.extend(record(101, 8, 512, -1));
        bytes.extend(record(103, 7, 4096, -1));
        let reqs = read_all(&mut reader(bytes)).unwrap();
        assert_eq!(
            reqs,
            vec![
                Request { time: 0, addr: 7, len: 1, dev: 0, op: Op::Read },
                Request { time: 1_000_000_000, addr: 8, len: 1, dev: 0, op: Op::Read },
                Request { time: 3_000_000_000, addr: 7, len: 1, dev: 0, op: Op::Read },
            ]
        );
    }

    #[test]
    fn zero_size_records_are_skipped_even_a_whole_batch() {
        let mut bytes = Vec::new();
        for i in 0..10 {
            bytes.extend(record(i, i as u64, 0, -1));
        }
        bytes.extend(record(50, 99, 1, -1));
        let mut r = reader(bytes);
        let mut out = Vec::new();
        assert_eq!(r.read_batch(&mut out, 3).unwrap(), 1);
        assert_eq!(out[0], Request { time: 0, addr: 99, len: 1, dev: 0, op: Op::Read });
        assert_eq!(r.read_batch(&mut out, 3).unwrap(), 0);
    }

    #[test]
    fn torn_record_is_an_error_naming_the_record() {
        let mut bytes = record(1, 1, 1, -1);
        bytes.extend(record(1, 2, 1, -1));
        bytes.truncate(24 + 10);
        let e = read_all(&mut reader(bytes)).unwrap_err().to_string();
        assert!(e.contains("t.oracleGeneral") && e.contains("record 1") && e.contains("10 stray bytes"), "{e}");
    }

    #[test]
    fn records_split_across_source_buffers_decode_the_same() {
        // every buffer size, small ones splitting each record, and batch sizes
        // that end batches inside a buffer
        let mut bytes = Vec::new();
        for i in 0..40u32 {
            bytes.extend(record(i, (i % 7) as u64, i % 3, -1));
        }
        let whole = read_all(&mut reader(bytes.clone())).unwrap();
        assert_eq!(whole.len(), 40 - 14);
        for cap in [1, 5, 23, 24, 25, 47, 48, 100, 1000] {
            for max in [1, 3, 64] {
                let src = std::io::BufReader::with_capacity(cap, Cursor::new(bytes.clone()));
                let mut r = OracleGeneral::new(Box::new(src), Path::new("t"));
                let (mut got, mut batch) = (Vec::new(), Vec::new());
                while r.read_batch(&mut batch, max).unwrap() > 0 {
                    assert!(batch.len() <= max);
                    got.extend_from_slice(&batch);
                }
                assert_eq!(got, whole, "buffer {cap}, batch {max}");
            }
            let mut torn = bytes.clone();
            torn.truncate(30 * RECORD + 11);
            let src = std::io::BufReader::with_capacity(cap, Cursor::new(torn));
            let e = read_all(&mut OracleGeneral::new(Box::new(src), Path::new("t"))).unwrap_err().to_string();
            assert!(e.contains("record 30") && e.contains("11 stray bytes"), "buffer {cap}: {e}");
        }
    }

    #[test]
    fn next_access_matches_libcachesim() {
        // positions are 1-based: key 5 at 0 is next seen at position 2 (0-based) -> 3
        assert_eq!(next_access_vtimes(&[5, 6, 5, 6, 7, 5]), vec![3, 4, 6, -1, -1, -1]);
        assert_eq!(next_access_vtimes(&[]), Vec::<i64>::new());
    }

    #[test]
    fn writer_round_trips_and_sniffs() {
        let keys = [5u64, 6, 5, 6, 7, 5];
        let times = [0, 1_500_000_000, 2_000_000_000, 3_000_000_000, 4_000_000_000, 5_000_000_000];
        let mut w = OracleWriter::new(Vec::new(), 4096).unwrap();
        for (&t, &k) in times.iter().zip(&keys) {
            w.push(t, k);
        }
        let bytes = w.finish().unwrap();
        assert_eq!(bytes, write_oracle(Vec::new(), 4096, &times, &keys).unwrap());
        assert_eq!(bytes.len(), 6 * RECORD);
        assert_eq!(&bytes[24..48], &record(1, 6, 4096, 4)[..]);
        assert_eq!(sniff(&bytes), Some(Format::OracleGeneral));
        let reqs = read_all(&mut reader(bytes)).unwrap();
        assert_eq!(reqs.iter().map(|r| r.addr).collect::<Vec<_>>(), keys);
        assert_eq!(reqs.iter().map(|r| r.time).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5].map(|s| s * 1_000_000_000));
        assert!(OracleWriter::new(Vec::new(), 0).is_err());
        assert!(write_oracle(Vec::new(), 1, &[0], &[]).is_err());
    }

    #[test]
    fn push_request_expands_pages() {
        let mut w = OracleWriter::new(Vec::new(), 4096).unwrap();
        w.push_request(&Request { time: 0, addr: 10, len: 3, dev: 0, op: Op::Write });
        let reqs = read_all(&mut reader(w.finish().unwrap())).unwrap();
        assert_eq!(reqs.iter().map(|r| r.addr).collect::<Vec<_>>(), [10, 11, 12]);
    }

    #[test]
    fn sniff_rejects_implausible_data() {
        assert_eq!(sniff(b""), None);
        assert_eq!(sniff(&[0u8; 23]), None);
        // a next-access that points backwards
        assert_eq!(sniff(&record(0, 1, 1, 1)), None);
        // a next-access whose target holds another object
        let mut b = record(0, 1, 1, 2);
        b.extend(record(0, 2, 1, -1));
        assert_eq!(sniff(&b), None);
        // a next-access beyond the end of a whole file
        assert_eq!(sniff(&record(0, 1, 1, 2)), None);
        // whole file that is not whole records
        let mut b = record(0, 1, 1, -1);
        b.push(0);
        assert_eq!(sniff(&b), None);
        // big-endian u32 keys 0..60
        let keys: Vec<u8> = (0u32..60).flat_map(|k| k.to_be_bytes()).collect();
        assert_eq!(sniff(&keys), None);
    }
}
