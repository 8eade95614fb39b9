//! Decompression on a thread of its own, so that it overlaps the parsing: the
//! thread reads the decoder into fixed-size buffers and passes them over a
//! bounded channel; the reader hands each buffer back when done with it. At most
//! [`BUFFERS`] buffers of [`BUF_SIZE`] bytes exist per open file, however far the
//! thread gets ahead. An error on the thread reaches the reader as the same
//! `io::Error`, after the bytes decoded before it.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};

pub const BUF_SIZE: usize = 256 * 1024;
pub const BUFFERS: usize = 4;

/// What the thread sends: a buffer and how many of its bytes are data (0: the
/// input has ended), or the error that ended decoding.
type Chunk = io::Result<(Vec<u8>, usize)>;

/// The reading end: a [`BufRead`] over the buffers the thread decodes.
pub struct ReadAhead {
    filled: Receiver<Chunk>,
    empty: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    len: usize,
    /// Set at the end of the input or after an error (kept to repeat it).
    finished: Option<Option<(io::ErrorKind, String)>>,
}

impl ReadAhead {
    /// Starts a thread reading `src` into buffers of `buf_size` bytes, at most `buffers` of them.
    pub fn spawn(src: Box<dyn Read + Send>, buffers: usize, buf_size: usize) -> io::Result<ReadAhead> {
        let buffers = buffers.max(2);
        let (filled_tx, filled) = sync_channel(buffers);
        let (empty, empty_rx) = sync_channel(buffers);
        std::thread::Builder::new()
            .name("decompress".into())
            .spawn(move || decode(src, filled_tx, empty_rx, buffers, buf_size.max(1)))?;
        Ok(ReadAhead { filled, empty, current: Vec::new(), pos: 0, len: 0, finished: None })
    }

    fn next_chunk(&mut self) -> io::Result<()> {
        if !self.current.is_empty() {
            // never blocks: the channel holds as many buffers as exist
            let _ = self.empty.try_send(std::mem::take(&mut self.current));
        }
        self.pos = 0;
        self.len = 0;
        match self.filled.recv() {
            Ok(Ok((_, 0))) => self.finished = Some(None),
            Ok(Ok((buf, n))) => {
                self.current = buf;
                self.len = n;
            }
            Ok(Err(e)) => {
                self.finished = Some(Some((e.kind(), e.to_string())));
                return Err(e);
            }
            Err(_) => {
                let e = io::Error::other("decompression stopped without an error (its thread panicked)");
                self.finished = Some(Some((e.kind(), e.to_string())));
                return Err(e);
            }
        }
        Ok(())
    }
}

/// The thread: fill a buffer (a new one while fewer than `buffers` exist, else
/// one handed back), send it; stop at the end of the input, at an error, or when
/// the reader is gone.
fn decode(
    mut src: Box<dyn Read + Send>,
    filled: SyncSender<Chunk>,
    empty: Receiver<Vec<u8>>,
    buffers: usize,
    buf_size: usize,
) {
    let mut made = 0;
    loop {
        let mut buf = match empty.try_recv() {
            Ok(buf) => buf,
            Err(TryRecvError::Empty) if made < buffers => {
                made += 1;
                vec![0; buf_size]
            }
            Err(TryRecvError::Empty) => match empty.recv() {
                Ok(buf) => buf,
                Err(_) => return,
            },
            Err(TryRecvError::Disconnected) => return,
        };
        let mut n = 0;
        let mut error = None;
        while n < buf.len() {
            match src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let end = n < buf.len();
        if n > 0 && filled.send(Ok((buf, n))).is_err() {
            return;
        }
        match error {
            Some(e) => {
                let _ = filled.send(Err(e));
                return;
            }
            None if end => {
                let _ = filled.send(Ok((Vec::new(), 0)));
                return;
            }
            None => {}
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len {
            match &self.finished {
                Some(None) => return Ok(&[]),
                Some(Some((kind, msg))) => return Err(io::Error::new(*kind, msg.clone())),
                None => self.next_chunk()?,
            }
        }
        Ok(&self.current[self.pos..self.len])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `data`, then fails with `fail` (if any), in reads of at most 1000 bytes.
    struct Source {
        data: Vec<u8>,
        pos: usize,
        fail: Option<io::ErrorKind>,
    }

    impl Read for Source {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pos == self.data.len() {
                return match self.fail {
                    Some(kind) => Err(io::Error::new(kind, "broken stream")),
                    None => Ok(0),
                };
            }
            let n = out.len().min(1000).min(self.data.len() - self.pos);
            out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn data(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn passes_every_byte_in_order() {
        for len in [0, 1, 4095, 4096, 4097, 100_000] {
            let src = Source { data: data(len), pos: 0, fail: None };
            let mut out = Vec::new();
            ReadAhead::spawn(Box::new(src), 3, 4096).unwrap().read_to_end(&mut out).unwrap();
            assert_eq!(out, data(len), "{len}");
        }
    }

    #[test]
    fn an_error_comes_after_the_bytes_before_it_and_stays() {
        let src = Source { data: data(10_000), pos: 0, fail: Some(io::ErrorKind::InvalidData) };
        let mut r = ReadAhead::spawn(Box::new(src), 2, 4096).unwrap();
        let mut out = vec![0; 10_000];
        r.read_exact(&mut out).unwrap();
        assert_eq!(out, data(10_000));
        let e = r.read(&mut out).unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (io::ErrorKind::InvalidData, "broken stream".to_string()));
        assert_eq!(r.fill_buf().unwrap_err().to_string(), "broken stream");
    }

    #[test]
    fn dropping_the_reader_ends_the_thread() {
        // an endless source: the thread must stop once the reader is gone
        struct Endless(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Read for Endless {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                out.fill(b'x');
                Ok(out.len())
            }
        }
        impl Drop for Endless {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut r = ReadAhead::spawn(Box::new(Endless(dropped.clone())), 2, 1024).unwrap();
        let mut out = [0; 10];
        r.read_exact(&mut out).unwrap();
        drop(r);
        for _ in 0..1000 {
            if dropped.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the decoding thread still runs 10 s after its reader was dropped");
    }
}
