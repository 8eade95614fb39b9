//! Transparent decompression: a file is recognised as gzip, xz, bzip2 or zstd by
//! its magic bytes (not its name), so a renamed file still reads. A compressed
//! file is decoded on a thread of its own ([`super::readahead`]), overlapping
//! the parsing.

use super::progress::{CountingReader, Progress};
use super::readahead::{ReadAhead, BUFFERS, BUF_SIZE};
use super::TraceError;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Compression of a file, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Bzip2,
    Zstd,
}

impl Compression {
    pub fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if head.starts_with(b"BZh") {
            Compression::Bzip2
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

const BUF: usize = 1 << 18;

fn io_err(path: &Path, source: std::io::Error) -> TraceError {
    TraceError::Io { path: path.to_path_buf(), error: source }
}

/// Opens `path` and returns a buffered reader over its decompressed bytes.
pub fn open_decompressed(path: &Path) -> Result<Box<dyn BufRead + Send>, TraceError> {
    open_counted(path, None)
}

/// As [`open_decompressed`], adding the file's bytes to `progress` as they are read.
pub fn open_counted(path: &Path, progress: Option<&Progress>) -> Result<Box<dyn BufRead + Send>, TraceError> {
    open_with(path, progress, true)
}

/// Opens `path`, decoding on another thread if `thread` and the file is compressed.
fn open_with(path: &Path, progress: Option<&Progress>, thread: bool) -> Result<Box<dyn BufRead + Send>, TraceError> {
    let file = File::open(path).map_err(|e| io_err(path, e))?;
    let meta = file.metadata().ok();
    if meta.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(TraceError::Format { path: path.to_path_buf(), msg: "is a directory, not a trace file".into() });
    }
    let file: Box<dyn Read + Send> = match progress {
        Some(p) => Box::new(CountingReader::new(file, meta.map_or(0, |m| m.len()), p.clone())),
        None => Box::new(file),
    };
    let mut raw = BufReader::with_capacity(BUF, file);
    let head = raw.fill_buf().map_err(|e| io_err(path, e))?.to_vec();
    let inner: Box<dyn Read + Send> = match Compression::from_magic(&head) {
        Compression::None => return Ok(Box::new(raw)),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(raw)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| io_err(path, e))?),
    };
    if thread {
        Ok(Box::new(ReadAhead::spawn(inner, BUFFERS, BUF_SIZE).map_err(|e| io_err(path, e))?))
    } else {
        Ok(Box::new(BufReader::with_capacity(BUF, inner)))
    }
}

/// The first `n` decompressed bytes of `path` (fewer if the file is shorter), for sniffing.
pub fn peek(path: &Path, n: usize) -> Result<Vec<u8>, TraceError> {
    // no thread: it would decode up to a megabyte ahead for a 64 KiB look
    let reader = open_with(path, None, false)?;
    let mut head = Vec::with_capacity(n);
    reader.take(n as u64).read_to_end(&mut head).map_err(|e| io_err(path, e))?;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn roundtrip(name: &str, bytes: Vec<u8>) {
        let dir = std::env::temp_dir().join(format!("ssdcache-compress-{}-{name}", std::process::id()));
        std::fs::write(&dir, bytes).unwrap();
        let mut out = String::new();
        open_decompressed(&dir).unwrap().read_to_string(&mut out).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(out, "hello\nworld\n", "{name}");
    }

    #[test]
    fn every_codec_reads_back() {
        let text = b"hello\nworld\n";
        roundtrip("plain", text.to_vec());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(text).unwrap();
        roundtrip("gz", gz.finish().unwrap());
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 6);
        xz.write_all(text).unwrap();
        roundtrip("xz", xz.finish().unwrap());
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        bz.write_all(text).unwrap();
        roundtrip("bz2", bz.finish().unwrap());
        roundtrip("zst", zstd::encode_all(&text[..], 3).unwrap());
    }
}
