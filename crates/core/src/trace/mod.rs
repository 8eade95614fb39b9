//! Block traces: the [`Request`] every reader produces, the readers for each
//! format (one file each), transparent decompression, format sniffing and the
//! synthetic generators.
//!
//! A reader fills batches of requests ([`TraceReader::read_batch`]) so the
//! simulator's loop never allocates. Text formats implement [`text::LineFormat`]
//! (parse one line) and get line numbers, `--skip-bad` and header handling from
//! [`text::TextReader`].

pub mod binary;
pub mod compress;
pub mod formats;
pub mod gen;
pub mod info;
pub mod lines;
pub mod objects;
pub mod progress;
pub mod readahead;
pub mod text;

use crate::Nanos;
use std::path::{Path, PathBuf};
use thiserror::Error;

pub use formats::Format;

/// What a request does to its pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Op {
    Read,
    Write,
    /// Discard / TRIM / UNMAP: the pages' contents no longer matter.
    Trim,
}

/// The unit of [`Request::addr`] and [`Request::len`] for a whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Byte offset and byte length (block traces).
    Bytes,
    /// Page number and page count (key traces: `keys`, `keys-u32be`, `oracle-general`):
    /// each key is one cache page whatever `--page` says.
    Pages,
}

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Arrival time since the trace's first request (readers rebase to 0 where the
    /// format has absolute timestamps).
    pub time: Nanos,
    /// Start: a byte offset, or a page number for [`Unit::Pages`] traces.
    pub addr: u64,
    /// Length in bytes, or in pages for [`Unit::Pages`] traces. Never zero.
    pub len: u32,
    /// The device (ASU, disk, LUN, volume) the request addresses: each device is its
    /// own address space.
    pub dev: u32,
    pub op: Op,
}

/// Reader settings that come from the command line.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Count and skip malformed lines instead of stopping at the first.
    pub skip_bad: bool,
    /// Column mapping for the generic `csv` format.
    pub csv: Option<formats::csv::CsvMapping>,
    /// Which blkparse event marks a request: `D` (issue, the default) or `Q` (queue).
    pub blk_event: formats::blkparse::BlkEvent,
    /// Counts the file's bytes as readers read them (a progress bar).
    pub progress: Option<progress::Progress>,
}

/// Everything that can go wrong reading a trace. Messages name file, line and field.
#[derive(Debug, Error)]
pub enum TraceError {
    // (`error`, not `source`: the message already carries it, and error chains would print it twice)
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path}:{line}: field {field}: {msg}")]
    Parse { path: PathBuf, line: u64, field: &'static str, msg: String },
    #[error("{path}: {msg}")]
    Format { path: PathBuf, msg: String },
}

/// Error from parsing one line or record, before the reader adds file and line.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: &'static str,
    pub msg: String,
}

impl FieldError {
    pub fn new(field: &'static str, msg: impl Into<String>) -> Self {
        FieldError { field, msg: msg.into() }
    }
}

/// A source of requests, read in batches.
pub trait TraceReader: Send {
    /// Clears `out`, then appends up to `max` requests. Returns how many were read;
    /// 0 means the trace has ended.
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError>;
    /// Unit of `addr` and `len` for this trace.
    fn unit(&self) -> Unit {
        Unit::Bytes
    }
    /// Malformed records skipped so far (only with `skip_bad`).
    fn skipped(&self) -> u64 {
        0
    }
    /// Once the trace has ended: a note on how (a recording cut off by a crash).
    fn end_note(&self) -> Option<String> {
        None
    }
}

/// Default batch size used by consumers of [`TraceReader`].
pub const BATCH: usize = 4096;

/// Opens `path` in `format` (or sniffs it with [`Format::Auto`]), decompressing
/// gz/xz/bz2/zstd transparently. Returns the reader and the format actually used.
pub fn open(path: &Path, format: Format, opts: &ReadOptions) -> Result<(Box<dyn TraceReader>, Format), TraceError> {
    let format = match format {
        Format::Auto => formats::sniff(path)?,
        f => f,
    };
    let reader = formats::open_as(path, format, opts)?;
    Ok((reader, format))
}

/// Opens `path` in object mode (`--unit object`): each request a key with a
/// size in bytes. `format` may be `Auto`; a format without sizes is an error
/// naming the ones with sizes.
pub fn open_objects(
    path: &Path,
    format: Format,
    opts: &ReadOptions,
) -> Result<(Box<dyn objects::ObjectReader>, Format), TraceError> {
    let format = match format {
        Format::Auto => formats::sniff(path)?,
        f => f,
    };
    Ok((formats::open_objects_as(path, format, opts)?, format))
}

/// A reader over a trace already in memory (uncompressed bytes), in `format` or
/// sniffed with [`Format::Auto`]; errors name the source `<memory>`. The same
/// readers as [`open`], so fuzzers and tests can drive them without files.
pub fn from_bytes(
    bytes: Vec<u8>,
    format: Format,
    opts: &ReadOptions,
) -> Result<(Box<dyn TraceReader>, Format), TraceError> {
    let path = Path::new("<memory>");
    let format = match format {
        Format::Auto => {
            let head = &bytes[..bytes.len().min(formats::SNIFF_BYTES)];
            formats::sniff_bytes(head)
                .ok_or_else(|| TraceError::Format { path: path.into(), msg: formats::unknown_format(head) })?
        }
        f => f,
    };
    let reader = formats::reader_over(Box::new(std::io::Cursor::new(bytes)), path, format, opts)?;
    Ok((reader, format))
}

/// Reads a whole trace into memory.
pub fn read_all(reader: &mut dyn TraceReader) -> Result<Vec<Request>, TraceError> {
    let mut all = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        all.extend_from_slice(&batch);
    }
    Ok(all)
}

/// The next batch of at most `max` records of `all` from `pos` into `out`
/// (cleared first); advances `pos`; returns how many (0 at the end).
pub fn next_slice_batch<T: Copy>(all: &[T], pos: &mut usize, out: &mut Vec<T>, max: usize) -> usize {
    out.clear();
    let end = (*pos + max).min(all.len());
    out.extend_from_slice(&all[*pos..end]);
    let n = end - *pos;
    *pos = end;
    n
}

/// A reader over requests already in memory (generated traces, Python arrays, sweeps).
pub struct MemoryReader {
    requests: std::sync::Arc<[Request]>,
    pos: usize,
    unit: Unit,
    skipped: u64,
}

impl MemoryReader {
    pub fn new(requests: std::sync::Arc<[Request]>, unit: Unit) -> Self {
        MemoryReader { requests, pos: 0, unit, skipped: 0 }
    }

    /// Reports `skipped` malformed lines: those of the file the requests were loaded from.
    pub fn with_skipped(mut self, skipped: u64) -> Self {
        self.skipped = skipped;
        self
    }
}

impl TraceReader for MemoryReader {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        Ok(next_slice_batch(&self.requests, &mut self.pos, out, max))
    }
    fn unit(&self) -> Unit {
        self.unit
    }
    fn skipped(&self) -> u64 {
        self.skipped
    }
}
