//! ssdcache's compact binary trace: what `ssdcache trace convert` writes and the
//! simulator reads at full speed (no parsing, 24 bytes a request).
//!
//! Layout, little-endian: the 8-byte [`MAGIC`], one byte unit (0 = bytes,
//! 1 = pages), 7 reserved zero bytes, then records of
//! `u64 time_ns, u64 addr, u32 len, u32 dev | op << 28` (op 0 read, 1 write, 2 trim).
//! The file may be compressed like any trace.

use super::{Op, Request, TraceError, TraceReader, Unit};
use std::io::{BufRead, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 8] = b"SSDCTRC1";
const HEADER: usize = 16;
const RECORD: usize = 24;
const DEV_MASK: u32 = (1 << 28) - 1;

pub struct BinaryReader {
    src: Box<dyn BufRead + Send>,
    path: PathBuf,
    unit: Unit,
    buf: Vec<u8>,
    record: u64,
}

fn io(path: &Path, e: std::io::Error) -> TraceError {
    TraceError::Io { path: path.to_path_buf(), error: e }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(crate) fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl BinaryReader {
    pub fn new(mut src: Box<dyn BufRead + Send>, path: &Path) -> Result<Self, TraceError> {
        let mut header = [0u8; HEADER];
        let got = read_full(&mut src, &mut header).map_err(|e| io(path, e))?;
        let bad = |msg: &str| TraceError::Format { path: path.to_path_buf(), msg: msg.to_string() };
        if got < HEADER || &header[..8] != MAGIC {
            return Err(bad("not an ssdcache binary trace (bad magic or short header)"));
        }
        let unit = match header[8] {
            0 => Unit::Bytes,
            1 => Unit::Pages,
            u => return Err(bad(&format!("unknown unit byte {u} in header"))),
        };
        Ok(BinaryReader { src, path: path.to_path_buf(), unit, buf: Vec::new(), record: 0 })
    }

    fn decode(&self, rec: &[u8]) -> Result<Request, TraceError> {
        let u64_at = |i: usize| u64::from_le_bytes(rec[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(rec[i..i + 4].try_into().unwrap());
        let dev_op = u32_at(20);
        let op = match dev_op >> 28 {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::Trim,
            o => return Err(self.bad_record(&format!("unknown op code {o}"))),
        };
        let len = u32_at(16);
        let dev = dev_op & DEV_MASK;
        if len == 0 {
            return Err(self.bad_record("zero length"));
        }
        if dev as u64 >= crate::key::MAX_DEVICES {
            return Err(self.bad_record(&format!("device {dev} out of range")));
        }
        Ok(Request { time: u64_at(0), addr: u64_at(8), len, dev, op })
    }

    fn bad_record(&self, msg: &str) -> TraceError {
        TraceError::Format { path: self.path.clone(), msg: format!("record {}: {msg}", self.record) }
    }
}

impl TraceReader for BinaryReader {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        self.buf.resize(max * RECORD, 0);
        let mut buf = std::mem::take(&mut self.buf);
        let got = read_full(&mut self.src, &mut buf).map_err(|e| io(&self.path, e));
        let result = got.and_then(|got| {
            if got % RECORD != 0 {
                return Err(self.bad_record(&format!("file ends inside a record ({} stray bytes)", got % RECORD)));
            }
            for rec in buf[..got].chunks_exact(RECORD) {
                out.push(self.decode(rec)?);
                self.record += 1;
            }
            Ok(out.len())
        });
        self.buf = buf;
        result
    }
    fn unit(&self) -> Unit {
        self.unit
    }
}

/// Writes the binary form.
pub struct BinaryWriter<W: Write> {
    out: W,
}

impl<W: Write> BinaryWriter<W> {
    pub fn new(mut out: W, unit: Unit) -> std::io::Result<Self> {
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8] = match unit {
            Unit::Bytes => 0,
            Unit::Pages => 1,
        };
        out.write_all(&header)?;
        Ok(BinaryWriter { out })
    }

    pub fn write(&mut self, r: &Request) -> std::io::Result<()> {
        let op = match r.op {
            Op::Read => 0u32,
            Op::Write => 1,
            Op::Trim => 2,
        };
        let mut rec = [0u8; RECORD];
        rec[0..8].copy_from_slice(&r.time.to_le_bytes());
        rec[8..16].copy_from_slice(&r.addr.to_le_bytes());
        rec[16..20].copy_from_slice(&r.len.to_le_bytes());
        rec[20..24].copy_from_slice(&((r.dev & DEV_MASK) | op << 28).to_le_bytes());
        self.out.write_all(&rec)
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let reqs = vec![
            Request { time: 5, addr: 4096, len: 8192, dev: 3, op: Op::Write },
            Request { time: 9, addr: 0, len: 512, dev: 0, op: Op::Read },
            Request { time: 10, addr: 1 << 40, len: 1, dev: (1 << 20) - 1, op: Op::Trim },
        ];
        let mut w = BinaryWriter::new(Vec::new(), Unit::Bytes).unwrap();
        for r in &reqs {
            w.write(r).unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut rd = BinaryReader::new(Box::new(std::io::Cursor::new(bytes.clone())), Path::new("t")).unwrap();
        let mut out = Vec::new();
        assert_eq!(rd.read_batch(&mut out, 100).unwrap(), 3);
        assert_eq!(out, reqs);
        assert_eq!(rd.read_batch(&mut out, 100).unwrap(), 0);
        // a torn last record is an error that says where
        let torn = bytes[..bytes.len() - 3].to_vec();
        let mut rd = BinaryReader::new(Box::new(std::io::Cursor::new(torn)), Path::new("t")).unwrap();
        let e = rd.read_batch(&mut out, 100).unwrap_err().to_string();
        assert!(e.contains("ends inside a record"), "{e}");
    }
}
