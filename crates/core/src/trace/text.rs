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
    /// Called once at the end of the text: a note on how it ended, if that
    /// matters (a recording cut off before its end marker).
    fn at_end(&mut self) -> Option<String> {
        None
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
    /// What the format said at the end ([`LineFormat::at_end`]), once there.
    end_note: Option<Option<String>>,
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
            end_note: None,
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
                Ok(None) => {
                    if self.end_note.is_none() {
                        self.end_note = Some(self.format.at_end());
                    }
                    break;
                }
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
            if let Err(e) = keep_parsed(parsed, &mut self.t0, out, self.skip_bad, &mut self.skipped) {
                return Err(self.parse_error(e));
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

    fn end_note(&self) -> Option<String> {
        self.end_note.clone().flatten()
    }
}

/// A record with an arrival time, which text readers rebase to the first record's.
pub trait Timed {
    fn time_mut(&mut self) -> &mut crate::Nanos;
}

impl Timed for Request {
    fn time_mut(&mut self) -> &mut crate::Nanos {
        &mut self.time
    }
}

/// What a text reader does with one parsed line: keeps its record (its time
/// rebased to the first record's, `t0`), skips a line without one, counts a
/// bad line with `skip_bad`, or returns the error.
#[inline]
pub fn keep_parsed<T: Timed>(
    parsed: Result<Option<T>, FieldError>,
    t0: &mut Option<crate::Nanos>,
    out: &mut Vec<T>,
    skip_bad: bool,
    skipped: &mut u64,
) -> Result<(), FieldError> {
    match parsed {
        Ok(Some(mut rec)) => {
            let time = rec.time_mut();
            let base = *t0.get_or_insert(*time);
            *time = time.saturating_sub(base);
            out.push(rec);
        }
        Ok(None) => {}
        Err(_) if skip_bad => *skipped += 1,
        Err(e) => return Err(e),
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::formats::{common::odd_lines, msr::Msr, spc::Spc};
    use proptest::prelude::*;
    use std::io::{BufReader, Read};

    /// Reads `data` through a buffer of `capacity` bytes from a source that
    /// returns at most `chunk` bytes a read: every request, or the error.
    fn read<F: LineFormat>(
        format: F,
        data: &[u8],
        capacity: usize,
        chunk: usize,
        skip_bad: bool,
    ) -> (Vec<Request>, u64, Option<String>) {
        struct Chunked(Vec<u8>, usize, usize);
        impl Read for Chunked {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = out.len().min(self.2).min(self.0.len() - self.1);
                out[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
                self.1 += n;
                Ok(n)
            }
        }
        let src = BufReader::with_capacity(capacity, Chunked(data.to_vec(), 0, chunk.max(1)));
        let mut r = TextReader::new(Box::new(src), format, Path::new("t"), skip_bad);
        let mut all = Vec::new();
        let mut batch = Vec::new();
        loop {
            // batches of one: a batch that ends in an error is not returned
            match r.read_batch(&mut batch, 1) {
                Ok(0) => return (all, r.skipped(), None),
                Ok(_) => all.extend_from_slice(&batch),
                Err(e) => return (all, r.skipped(), Some(e.to_string())),
            }
        }
    }

    /// The reader as it was: one line at a time, as text, through `parse`.
    fn reference<F: LineFormat>(mut format: F, data: &[u8], skip_bad: bool) -> (Vec<Request>, u64, Option<String>) {
        let (mut out, mut skipped, mut t0) = (Vec::new(), 0, None);
        let mut pieces: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
        if data.ends_with(b"\n") || data.is_empty() {
            pieces.pop();
        }
        for (i, mut line) in pieces.into_iter().enumerate() {
            let no = i as u64 + 1;
            if line.len() > MAX_LINE {
                return (out, skipped, Some(format!("t:{no}: field line: longer than {MAX_LINE} bytes")));
            }
            while let [rest @ .., b'\r'] = line {
                line = rest;
            }
            let parsed = match std::str::from_utf8(line) {
                Ok(t) if t.trim().is_empty() => continue,
                Ok(t) => format.parse(t),
                Err(_) => Err(not_utf8()),
            };
            match parsed {
                Ok(Some(mut r)) => {
                    let t = *t0.get_or_insert(r.time);
                    r.time = r.time.saturating_sub(t);
                    out.push(r);
                }
                Ok(None) => {}
                Err(_) if skip_bad => skipped += 1,
                Err(e) => return (out, skipped, Some(format!("t:{no}: field {}: {}", e.field, e.msg))),
            }
        }
        (out, skipped, None)
    }

    #[test]
    fn errors_name_the_line() {
        let data = b"0,1,512,r,0.5\r\n\n \t\r\n\xc2\xa0\n0,2,512,w,1\nbad\n";
        // (the batch that ends in the error is not returned)
        let (_, _, err) = read(Spc, data, 8, 3, false);
        assert_eq!(err.as_deref(), Some("t:6: field asu: \"bad\" is not a non-negative integer"));
        let (reqs, skipped, err) = read(Spc, data, 8, 3, true);
        assert_eq!((reqs.len(), skipped, err), (2, 1, None));
        let (_, _, err) = read(Spc, b"0,1,512,r,0\n\xff\xfe,1\n", 64, 64, false);
        assert_eq!(err.as_deref(), Some("t:2: field line: not UTF-8 text"));
        let (reqs, skipped, err) = read(Spc, b"0,1,512,r,0\n\xff\xfe,1\nbad\n1,1,512,w,0", 64, 64, true);
        assert_eq!((reqs.len(), skipped, err), (2, 2, None));
    }

    #[test]
    fn a_line_longer_than_the_limit_is_an_error_not_memory() {
        // exactly the limit: an ordinary bad line; one byte more: too long
        let mut data = b"0,1,512,r,0\n".to_vec();
        data.extend(std::iter::repeat_n(b'7', MAX_LINE));
        data.push(b'\n');
        let (_, _, err) = read(Spc, &data, 4096, 1000, false);
        assert!(err.as_deref().unwrap().starts_with("t:2: field asu: \"7777"));
        data.insert(20, b'7');
        let (_, _, err) = read(Spc, &data, 4096, 1000, true);
        assert_eq!(err.as_deref(), Some(&*format!("t:2: field line: longer than {MAX_LINE} bytes")));
        // 8 MB without a newline stops at the limit, under --skip-bad too
        let (_, _, err) = read(Spc, &vec![b'1'; 8 << 20], 1 << 16, 1 << 16, true);
        assert_eq!(err.as_deref(), Some(&*format!("t:1: field line: longer than {MAX_LINE} bytes")));
    }

    fn text(lines: &[Vec<u8>], endings: &[u8], last_newline: bool) -> Vec<u8> {
        let mut data = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            data.extend_from_slice(line);
            if i + 1 < lines.len() || last_newline {
                data.extend_from_slice(if endings.get(i).is_some_and(|&e| e % 3 == 0) { b"\r\n" } else { b"\n" });
            }
        }
        data
    }

    proptest! {
        /// Splitting in place and the byte fast paths give exactly what the plain
        /// line-by-line text reader gave: requests, skipped lines, errors and
        /// their line numbers, wherever the buffer and the reads cut the input
        /// (CRLF, blank lines, no final newline, lines longer than the buffer).
        #[test]
        fn agrees_with_the_line_by_line_reader(
            lines in proptest::collection::vec(prop_oneof![4 => odd_lines(), 1 => Just(Vec::new()), 1 => Just(b" \t".to_vec())], 0..40),
            endings in proptest::collection::vec(any::<u8>(), 40),
            last_newline: bool, skip_bad: bool,
            capacity in 1usize..200, chunk in 1usize..300,
        ) {
            let data = text(&lines, &endings, last_newline);
            prop_assert_eq!(read(Spc, &data, capacity, chunk, skip_bad), reference(Spc, &data, skip_bad));
            prop_assert_eq!(read(Msr::default(), &data, capacity, chunk, skip_bad), reference(Msr::default(), &data, skip_bad));
        }

        /// Plain MSR and SPC lines (the fast paths' own), cut anywhere.
        #[test]
        fn plain_lines_cut_anywhere(
            rows in proptest::collection::vec((0u64..1 << 40, 0u32..30, 0u64..1 << 36, 1u32..1 << 20, any::<bool>()), 1..60),
            capacity in 1usize..300, chunk in 1usize..500, last_newline: bool,
        ) {
            let msr: Vec<Vec<u8>> = rows.iter().map(|(t, d, o, s, r)|
                format!("{t},h{},{d},{},{o},{s},1", d % 3, if *r { "Read" } else { "write" }).into_bytes()).collect();
            let spc: Vec<Vec<u8>> = rows.iter().map(|(t, d, o, s, r)|
                format!("{d},{o},{s},{},{}.{:06}", if *r { "r" } else { "w" }, t / 1_000_000, t % 1_000_000).into_bytes()).collect();
            for (data, msr_format) in [(text(&msr, &[], last_newline), true), (text(&spc, &[], last_newline), false)] {
                let (got, want) = if msr_format {
                    (read(Msr::default(), &data, capacity, chunk, false), reference(Msr::default(), &data, false))
                } else {
                    (read(Spc, &data, capacity, chunk, false), reference(Spc, &data, false))
                };
                prop_assert_eq!(got.0.len(), rows.len());
                prop_assert_eq!(got, want);
            }
        }
    }
}
