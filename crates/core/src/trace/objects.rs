//! Variable-size objects (`--unit object`): a request is a key with a size in
//! bytes, as in key-value and CDN caches, rather than a byte range of a block
//! device. The readers of formats that carry sizes (oracleGeneral, lcs, twr,
//! webcachesim, csv) produce [`ObjectRequest`]s through [`ObjectReader`];
//! the same readers serve page mode through [`ObjectsAsPages`] (each key one
//! page, the size ignored), so a format is written once.

use super::lines::{LineError, LineSplitter};
use super::text::{keep_parsed, Timed};
use super::{FieldError, Op, Request, TraceError, TraceReader, Unit};
use crate::Nanos;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The largest object size accepted: 256 TiB. Larger values are corrupt
/// fields, not objects, and would overflow byte counters summed over a trace.
pub const MAX_OBJECT_BYTES: u64 = 1 << 48;

/// One request for an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRequest {
    /// Since the trace's first request.
    pub time: Nanos,
    pub key: u64,
    /// Bytes, 1 ..= [`MAX_OBJECT_BYTES`].
    pub size: u64,
    /// Read (get), write (set and the other updates) or trim (delete).
    pub op: Op,
}

impl Timed for ObjectRequest {
    fn time_mut(&mut self) -> &mut Nanos {
        &mut self.time
    }
}

/// Checks an object size from a trace: zero and sizes above [`MAX_OBJECT_BYTES`]
/// are errors naming the value (the reader adds file and line).
pub fn object_size(field: &'static str, size: u64) -> Result<u64, FieldError> {
    match size {
        0 => Err(FieldError::new(field, "object size 0: every object needs a size of at least 1 byte")),
        s if s > MAX_OBJECT_BYTES => {
            Err(FieldError::new(field, format!("object size {s} is larger than 2^48 bytes (256 TiB)")))
        }
        s => Ok(s),
    }
}

/// A key given as text that is not a number (Twitter's anonymized keys): its
/// 64-bit FNV-1a hash, stable across runs and machines.
pub fn text_key(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// A key column: a decimal number as it is, anything else hashed ([`text_key`]).
pub fn key_field(field: &'static str, s: Option<&str>) -> Result<u64, FieldError> {
    let s = s.ok_or_else(|| FieldError::new(field, "missing"))?.trim();
    if s.is_empty() {
        return Err(FieldError::new(field, "empty key"));
    }
    Ok(s.parse::<u64>().unwrap_or_else(|_| text_key(s)))
}

/// Whether `fits` holds for at least nine lines in ten (and one): a text
/// sniffer's test, tolerating a header or a bad line.
pub fn nine_in_ten(lines: &[&str], fits: impl Fn(&str) -> bool) -> bool {
    let good = lines.iter().filter(|l| fits(l)).count();
    good > 0 && good * 10 >= lines.len() * 9
}

/// A source of object requests, read in batches.
pub trait ObjectReader: Send {
    /// Clears `out`, then appends up to `max` requests; 0 means the trace has ended.
    fn read_objects(&mut self, out: &mut Vec<ObjectRequest>, max: usize) -> Result<usize, TraceError>;
    /// Malformed records skipped so far (only with `skip_bad`).
    fn skipped(&self) -> u64 {
        0
    }
}

/// One line of a text object format.
pub trait ObjectLineFormat: Send {
    /// Parses one line (newline removed, never blank); `Ok(None)` for headers.
    /// Times are absolute: the reader rebases them to the first request.
    fn parse(&mut self, line: &str) -> Result<Option<ObjectRequest>, FieldError>;
}

/// Most bytes in one line of an object trace.
const MAX_LINE: usize = 64 * 1024;

/// Reads a text object format line by line, with line numbers in errors and `--skip-bad`.
pub struct ObjectLines<F: ObjectLineFormat> {
    lines: LineSplitter,
    format: F,
    path: PathBuf,
    line_no: u64,
    skip_bad: bool,
    skipped: u64,
    t0: Option<Nanos>,
}

impl<F: ObjectLineFormat> ObjectLines<F> {
    pub fn new(src: Box<dyn BufRead + Send>, format: F, path: &Path, skip_bad: bool) -> Self {
        ObjectLines {
            lines: LineSplitter::new(src, MAX_LINE),
            format,
            path: path.into(),
            line_no: 0,
            skip_bad,
            skipped: 0,
            t0: None,
        }
    }

    fn parse_error(&self, e: FieldError) -> TraceError {
        TraceError::Parse { path: self.path.clone(), line: self.line_no, field: e.field, msg: e.msg }
    }
}

impl<F: ObjectLineFormat> ObjectReader for ObjectLines<F> {
    fn read_objects(&mut self, out: &mut Vec<ObjectRequest>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        while out.len() < max {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(LineError::Io(error)) => return Err(TraceError::Io { path: self.path.clone(), error }),
                Err(LineError::TooLong) => {
                    self.line_no += 1;
                    return Err(self.parse_error(FieldError::new("line", format!("longer than {MAX_LINE} bytes"))));
                }
            };
            self.line_no += 1;
            let parsed = match std::str::from_utf8(line) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => self.format.parse(text.trim_end_matches('\r')),
                Err(_) => Err(FieldError::new("line", "not UTF-8 text")),
            };
            if let Err(e) = keep_parsed(parsed, &mut self.t0, out, self.skip_bad, &mut self.skipped) {
                return Err(self.parse_error(e));
            }
        }
        Ok(out.len())
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }
}

/// Reads one fixed-size binary record into `buf`: `Ok(true)` when read, `Ok(false)`
/// at a clean end of file, and an error naming `record` when the file ends inside one.
pub fn read_record(
    src: &mut dyn BufRead,
    buf: &mut [u8],
    path: &Path,
    record: u64,
    format: &str,
) -> Result<bool, TraceError> {
    let mut got = 0;
    while got < buf.len() {
        let chunk = src.fill_buf().map_err(|error| TraceError::Io { path: path.into(), error })?;
        if chunk.is_empty() {
            if got == 0 {
                return Ok(false);
            }
            return Err(TraceError::Format {
                path: path.into(),
                msg: format!(
                    "record {record}: file ends inside a record ({got} stray bytes; {format} records are {} bytes)",
                    buf.len()
                ),
            });
        }
        let take = chunk.len().min(buf.len() - got);
        buf[got..got + take].copy_from_slice(&chunk[..take]);
        src.consume(take);
        got += take;
    }
    Ok(true)
}

/// Page mode over an object reader: each key is one cache page ([`Unit::Pages`],
/// device 0, one page per request), the size ignored.
pub struct ObjectsAsPages {
    objects: Box<dyn ObjectReader>,
    batch: Vec<ObjectRequest>,
}

impl ObjectsAsPages {
    pub fn new(objects: Box<dyn ObjectReader>) -> Self {
        ObjectsAsPages { objects, batch: Vec::new() }
    }
}

impl TraceReader for ObjectsAsPages {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        self.objects.read_objects(&mut self.batch, max)?;
        out.extend(self.batch.iter().map(|o| Request { time: o.time, addr: o.key, len: 1, dev: 0, op: o.op }));
        Ok(out.len())
    }
    fn unit(&self) -> Unit {
        Unit::Pages
    }
    fn skipped(&self) -> u64 {
        self.objects.skipped()
    }
}

/// Reads a whole object trace into memory.
pub fn read_all_objects(reader: &mut dyn ObjectReader) -> Result<Vec<ObjectRequest>, TraceError> {
    let mut all = Vec::new();
    let mut batch = Vec::with_capacity(super::BATCH);
    while reader.read_objects(&mut batch, super::BATCH)? > 0 {
        all.extend_from_slice(&batch);
    }
    Ok(all)
}

/// A reader over object requests already in memory (Python arrays, tests, sweeps).
pub struct MemoryObjects {
    requests: std::sync::Arc<[ObjectRequest]>,
    pos: usize,
}

impl MemoryObjects {
    pub fn new(requests: std::sync::Arc<[ObjectRequest]>) -> Self {
        MemoryObjects { requests, pos: 0 }
    }
}

impl ObjectReader for MemoryObjects {
    fn read_objects(&mut self, out: &mut Vec<ObjectRequest>, max: usize) -> Result<usize, TraceError> {
        Ok(super::next_slice_batch(&self.requests, &mut self.pos, out, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked_naming_the_value() {
        assert_eq!(object_size("size", 1), Ok(1));
        assert_eq!(object_size("size", MAX_OBJECT_BYTES), Ok(MAX_OBJECT_BYTES));
        assert!(object_size("size", 0).unwrap_err().msg.contains("size 0"));
        let e = object_size("size", MAX_OBJECT_BYTES + 1).unwrap_err().msg;
        assert!(e.contains(&(MAX_OBJECT_BYTES + 1).to_string()) && e.contains("2^48"), "{e}");
    }

    #[test]
    fn keys_are_numbers_or_hashed_text() {
        assert_eq!(key_field("key", Some(" 42 ")), Ok(42));
        assert_eq!(key_field("key", Some("nz:u:eeW511")), Ok(text_key("nz:u:eeW511")));
        assert_ne!(text_key("a"), text_key("b"));
        assert!(key_field("key", Some("")).is_err() && key_field("key", None).is_err());
    }

    #[test]
    fn a_torn_record_names_its_number() {
        let bytes = [1u8; 30];
        let mut src = std::io::Cursor::new(&bytes[..]);
        let mut buf = [0u8; 24];
        assert!(read_record(&mut src, &mut buf, Path::new("t"), 0, "x").unwrap());
        let e = read_record(&mut src, &mut buf, Path::new("t"), 1, "x").unwrap_err().to_string();
        assert!(e.contains("record 1") && e.contains("6 stray bytes"), "{e}");
    }
}
