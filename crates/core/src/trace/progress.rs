//! How far a run has read its input: a shared counter of the trace file's
//! bytes read (compressed bytes for a compressed file, so the fraction is of
//! the file on disk), over every pass the run makes. A front end polls
//! [`Progress::fraction`] from another thread to draw a bar; the reading side
//! pays one relaxed atomic add per buffer fill (256 KiB), not per request.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A run's progress over its trace file, shared between the reader(s) and
/// whoever draws it. Cloning shares the counters.
#[derive(Clone, Debug, Default)]
pub struct Progress(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    /// Bytes read from the file, summed over passes.
    read: AtomicU64,
    /// The file's length in bytes (0 until a reader opened it).
    len: AtomicU64,
    /// Passes the run makes over the file (0 is taken as 1).
    passes: AtomicU64,
}

impl Progress {
    pub fn new() -> Progress {
        Progress::default()
    }

    /// The run will read the file `passes` times (a first pass for a device
    /// layout or Belady's next uses, then the run).
    pub fn set_passes(&self, passes: u64) {
        self.0.passes.store(passes, Relaxed);
    }

    /// Bytes read so far and bytes to read in all (0 if unknown yet).
    pub fn position(&self) -> (u64, u64) {
        let c = &self.0;
        (c.read.load(Relaxed), c.len.load(Relaxed).saturating_mul(c.passes.load(Relaxed).max(1)))
    }

    /// Share of the input read, in 0..=1; `None` before a file is opened.
    pub fn fraction(&self) -> Option<f64> {
        match self.position() {
            (_, 0) => None,
            (read, total) => Some((read as f64 / total as f64).min(1.0)),
        }
    }

    fn opened(&self, len: u64) {
        self.0.len.store(len, Relaxed);
    }

    fn advance(&self, n: u64) {
        self.0.read.fetch_add(n, Relaxed);
    }
}

/// A reader that adds what it reads to a [`Progress`].
pub struct CountingReader<R> {
    inner: R,
    progress: Progress,
}

impl<R: Read> CountingReader<R> {
    /// Wraps `inner`, the start of a file of `len` bytes.
    pub fn new(inner: R, len: u64, progress: Progress) -> CountingReader<R> {
        progress.opened(len);
        CountingReader { inner, progress }
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bytes_over_passes() {
        let p = Progress::new();
        assert_eq!(p.fraction(), None);
        p.set_passes(2);
        let mut out = Vec::new();
        CountingReader::new(&[7u8; 100][..], 100, p.clone()).read_to_end(&mut out).unwrap();
        assert_eq!(p.position(), (100, 200));
        assert_eq!(p.fraction(), Some(0.5));
        CountingReader::new(&[7u8; 100][..], 100, p.clone()).read_to_end(&mut out).unwrap();
        assert_eq!(p.fraction(), Some(1.0));
    }
}
