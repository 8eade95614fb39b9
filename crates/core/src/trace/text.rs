//! The shared driver of all line-oriented trace formats: reads lines, counts
//! them, rebases timestamps, and turns a [`FieldError`] into an error that names
//! file, line and field (or counts and skips it under `--skip-bad`).

use super::lines::{LineError, LineSplitter};
use super::{FieldError, Request, TraceError, TraceReader, Unit};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Longest line accepted; anything longer is malformed, not a reason to allocate.
pub const MAX_LINE: usize = 64 * 1024;

/// One line-oriented trace format.
pub trait LineFormat: Send {
    /// Parses one line (newline and trailing `\r` removed, never empty).
    /// `Ok(None)` for lines that carry no request: headers, comments, completion events.
    /// Times are returned absolute; the reader rebases them to the first request.
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError>;
    /// Parses one line given as bytes, whose first byte is printable ASCII (so not
    /// blank). The same result as [`LineFormat::parse`] of the text; a format may
    /// override it with a fast path for its common lines that falls back to `parse`.
    fn parse_bytes(&mut self, line: &[u8]) -> Result<Option<Request>, FieldError> {
        parse_text(self, line)
    }
    fn unit(&self) -> Unit {
        Unit::Bytes
    }
}

/// [`LineFormat::parse`] of `line` if it is UTF-8 text (the slow path of a `parse_bytes`).
pub fn parse_text<F: LineFormat + ?Sized>(format: &mut F, line: &[u8]) -> Result<Option<Request>, FieldError> {
    match std::str::from_utf8(line) {
        Ok(text) => format.parse(text),
        Err(_) => Err(not_utf8()),
    }
}

fn not_utf8() -> FieldError {
    FieldError::new("line", "not UTF-8 text")
}

pub struct TextReader<F: LineFormat> {
    lines: LineSplitter,
    format: F,
    path: PathBuf,
    line_no: u64,
    skip_bad: bool,
    skipped: u64,
    t0: Option<u64>,
}

impl<F: LineFormat> TextReader<F> {
    pub fn new(src: Box<dyn BufRead + Send>, format: F, path: &Path, skip_bad: bool) -> Self {
        TextReader {
            lines: LineSplitter::new(src, MAX_LINE),
            format,
            path: path.to_path_buf(),
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

impl<F: LineFormat> TraceReader for TextReader<F> {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        while out.len() < max {
            let mut line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(LineError::Io(e)) => return Err(TraceError::Io { path: self.path.clone(), error: e }),
                Err(LineError::TooLong) => {
                    self.line_no += 1;
                    return Err(self.parse_error(FieldError::new("line", format!("longer than {MAX_LINE} bytes"))));
                }
            };
            self.line_no += 1;
            while let [rest @ .., b'\r'] = line {
                line = rest;
            }
            let parsed = match line.first() {
                Some(b) if b.is_ascii_graphic() => self.format.parse_bytes(line),
                _ => match std::str::from_utf8(line) {
                    Ok(text) if text.trim().is_empty() => continue,
                    Ok(text) => self.format.parse(text),
                    Err(_) => Err(not_utf8()),
                },
            };
            match parsed {
                Ok(Some(mut req)) => {
                    let t0 = *self.t0.get_or_insert(req.time);
                    req.time = req.time.saturating_sub(t0);
                    out.push(req);
                }
                Ok(None) => {}
                Err(_) if self.skip_bad => self.skipped += 1,
                Err(e) => return Err(self.parse_error(e)),
            }
        }
        Ok(out.len())
    }

    fn unit(&self) -> Unit {
        self.format.unit()
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }
}

// Field helpers shared by the formats.

/// Parses an unsigned integer field.
pub fn u64_field(field: &'static str, s: Option<&str>) -> Result<u64, FieldError> {
    let s = s.ok_or_else(|| FieldError::new(field, "missing"))?.trim();
    s.parse::<u64>().map_err(|_| FieldError::new(field, format!("{s:?} is not a non-negative integer")))
}

/// Parses a non-negative decimal number field (timestamps in seconds or milliseconds).
pub fn f64_field(field: &'static str, s: Option<&str>) -> Result<f64, FieldError> {
    let s = s.ok_or_else(|| FieldError::new(field, "missing"))?.trim();
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(FieldError::new(field, format!("{s:?} is not a non-negative number"))),
    }
}

/// Converts a non-negative time in `unit_ns` units to nanoseconds, rejecting overflow.
pub fn to_nanos(field: &'static str, value: f64, unit_ns: f64) -> Result<u64, FieldError> {
    let ns = value * unit_ns;
    if ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64 {
        Ok(ns.round() as u64)
    } else {
        Err(FieldError::new(field, format!("{value} is out of range")))
    }
}

/// Checks a request size: positive and at most `u32::MAX` units.
pub fn size_field(field: &'static str, size: u64) -> Result<u32, FieldError> {
    match u32::try_from(size) {
        Ok(0) => Err(FieldError::new(field, "size is zero")),
        Ok(n) => Ok(n),
        Err(_) => Err(FieldError::new(field, format!("size {size} is larger than 4 GiB"))),
    }
}

/// Multiplies a sector count or LBA by the sector size, rejecting overflow.
pub fn mul_field(field: &'static str, value: u64, by: u64) -> Result<u64, FieldError> {
    value.checked_mul(by).ok_or_else(|| FieldError::new(field, format!("{value} overflows")))
}

/// Checks a device number fits the 20 bits a page key gives it.
pub fn dev_field(field: &'static str, dev: u64) -> Result<u32, FieldError> {
    if dev < crate::key::MAX_DEVICES {
        Ok(dev as u32)
    } else {
        Err(FieldError::new(field, format!("device {dev} is out of range (at most {})", crate::key::MAX_DEVICES - 1)))
    }
}
