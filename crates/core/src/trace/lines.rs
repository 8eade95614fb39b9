//! Splits a byte stream into lines in place, for the text formats: a line that
//! lies inside the source's buffer is handed out as a slice of that buffer (no
//! copy, no allocation); only a line cut by the buffer's end is gathered into a
//! reused carry buffer, at most `max_line` bytes, so a line without an end never
//! grows memory.

use std::io::{self, BufRead};

/// Why [`LineSplitter::next_line`] gave no line.
#[derive(Debug)]
pub enum LineError {
    /// The line is longer than the limit (its newline not counted).
    TooLong,
    Io(io::Error),
}

impl From<io::Error> for LineError {
    fn from(e: io::Error) -> Self {
        LineError::Io(e)
    }
}

/// Lines of a [`BufRead`], without their `\n` (a `\r` before it is kept: the
/// caller decides). The last line needs no final newline.
pub struct LineSplitter {
    src: Box<dyn BufRead + Send>,
    /// Bytes of the line handed out last, still to be consumed from `src`.
    pending: usize,
    /// The start of a line cut by the end of `src`'s buffer.
    carry: Vec<u8>,
    max_line: usize,
}

/// Where the next line is, found before it is borrowed (the borrow checker does
/// not allow returning a slice of `src`'s buffer from inside the search loop).
enum Found {
    /// The first `len` bytes of `src`'s buffer, then a newline.
    InBuffer(usize),
    /// In `carry`.
    Carried,
    End,
}

impl LineSplitter {
    pub fn new(src: Box<dyn BufRead + Send>, max_line: usize) -> Self {
        LineSplitter { src, pending: 0, carry: Vec::new(), max_line }
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, LineError> {
        match self.find()? {
            Found::InBuffer(len) => {
                // fill_buf again returns the same buffered bytes without reading
                let buf = self.src.fill_buf()?;
                self.pending = len + 1;
                Ok(Some(&buf[..len]))
            }
            Found::Carried => Ok(Some(&self.carry)),
            Found::End => Ok(None),
        }
    }

    fn find(&mut self) -> Result<Found, LineError> {
        self.src.consume(std::mem::take(&mut self.pending));
        self.carry.clear();
        loop {
            let buf = match self.src.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if buf.is_empty() {
                return Ok(if self.carry.is_empty() { Found::End } else { Found::Carried });
            }
            match memchr::memchr(b'\n', buf) {
                Some(len) if self.carry.is_empty() => {
                    return if len > self.max_line { Err(LineError::TooLong) } else { Ok(Found::InBuffer(len)) };
                }
                Some(len) => {
                    if self.carry.len() + len > self.max_line {
                        return Err(LineError::TooLong);
                    }
                    self.carry.extend_from_slice(&buf[..len]);
                    self.src.consume(len + 1);
                    return Ok(Found::Carried);
                }
                None => {
                    let n = buf.len();
                    if self.carry.len() + n > self.max_line {
                        return Err(LineError::TooLong);
                    }
                    self.carry.extend_from_slice(buf);
                    self.src.consume(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::{BufReader, Read};

    /// A source that returns at most the next of `cuts` bytes per read (then the rest).
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        cuts: Vec<usize>,
    }

    impl Read for Chunked {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let cut = if self.cuts.is_empty() { usize::MAX } else { self.cuts.remove(0).max(1) };
            let n = cut.min(out.len()).min(self.data.len() - self.pos);
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    /// The reference: split on every `\n`; a final piece without one is a line if not empty.
    fn plain_lines(data: &[u8], max_line: usize) -> (Vec<Vec<u8>>, bool) {
        let mut lines = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let (line, next) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            if line.len() > max_line {
                return (lines, true);
            }
            lines.push(line.to_vec());
            rest = next;
        }
        (lines, false)
    }

    fn split(data: &[u8], cuts: Vec<usize>, capacity: usize, max_line: usize) -> (Vec<Vec<u8>>, bool) {
        let src = Chunked { data: data.to_vec(), pos: 0, cuts };
        let mut lines = LineSplitter::new(Box::new(BufReader::with_capacity(capacity, src)), max_line);
        let mut out = Vec::new();
        loop {
            match lines.next_line() {
                Ok(Some(line)) => out.push(line.to_vec()),
                Ok(None) => return (out, false),
                Err(LineError::TooLong) => return (out, true),
                Err(LineError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn examples() {
        let (lines, long) = split(b"a,b\r\n\ncd\nlast", vec![], 4, 10);
        assert!(!long);
        assert_eq!(lines, vec![b"a,b\r".to_vec(), vec![], b"cd".to_vec(), b"last".to_vec()]);
        assert_eq!(split(b"", vec![], 4, 10), (vec![], false));
        assert_eq!(split(b"\n", vec![], 4, 10), (vec![vec![]], false));
        // exactly the limit is fine, one more byte is not, with or without a newline
        assert_eq!(split(b"0123456789\n", vec![3], 4, 10).0, vec![b"0123456789".to_vec()]);
        assert!(split(b"0123456789a\nb\n", vec![3], 4, 10).1);
        assert!(split(b"ok\n0123456789a", vec![], 64, 10).1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Whatever the buffer size and wherever reads stop (inside a line, inside
        /// a CRLF, lines longer than the buffer, no final newline), the lines are
        /// those of a plain split.
        #[test]
        fn agrees_with_a_plain_split(
            pieces in proptest::collection::vec(
                prop_oneof![
                    Just(b"\n".to_vec()), Just(b"\r\n".to_vec()), Just(b"\r".to_vec()), Just(b",".to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..12),
                    proptest::collection::vec(b'a'..=b'z', 20..90),
                ],
                0..60,
            ),
            cuts in proptest::collection::vec(1usize..40, 0..40),
            capacity in 1usize..48,
            max_line in 1usize..120,
        ) {
            let data: Vec<u8> = pieces.concat();
            prop_assert_eq!(split(&data, cuts, capacity, max_line), plain_lines(&data, max_line));
        }
    }
}
