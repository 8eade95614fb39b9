//! Key traces: one page number per record, each a one-page read. `keys` is
//! decimal text, one per line; `keys-u32be` is big-endian u32 (the LIRS, ARC and
//! CloudPhysics key traces).
//!
//! `keys` is strict: a line is one unsigned integer, or a comment starting with
//! `#`, or a lone `*`. The LIRS distribution's traces (`cs`, `2_pools`) hold `*`
//! lines as separators between phases; like caffeine's LIRS reader, they are
//! skipped and carry no request.

use crate::trace::text::{u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request, TraceError, TraceReader, Unit};
use std::io::{BufRead, ErrorKind, Read};
use std::path::{Path, PathBuf};

pub struct Keys;

impl LineFormat for Keys {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let line = line.trim();
        if line.starts_with('#') || line == "*" {
            return Ok(None);
        }
        let key = u64_field("key", Some(line))?;
        Ok(Some(Request { time: 0, addr: key, len: 1, dev: 0, op: Op::Read }))
    }
    fn unit(&self) -> Unit {
        Unit::Pages
    }
}

pub struct KeysU32be {
    src: Box<dyn BufRead + Send>,
    path: PathBuf,
}

impl KeysU32be {
    pub fn new(src: Box<dyn BufRead + Send>, path: &Path) -> Self {
        KeysU32be { src, path: path.to_path_buf() }
    }
}

impl TraceReader for KeysU32be {
    fn read_batch(&mut self, out: &mut Vec<Request>, max: usize) -> Result<usize, TraceError> {
        out.clear();
        let mut rec = [0u8; 4];
        while out.len() < max {
            let mut got = 0;
            while got < 4 {
                match self.src.read(&mut rec[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(TraceError::Io { path: self.path.clone(), error: e }),
                }
            }
            match got {
                0 => break,
                4 => {}
                _ => {
                    return Err(TraceError::Format {
                        path: self.path.clone(),
                        msg: format!("ends inside a record: {got} stray bytes after the last whole u32 key"),
                    })
                }
            }
            let key = u32::from_be_bytes(rec) as u64;
            out.push(Request { time: 0, addr: key, len: 1, dev: 0, op: Op::Read });
        }
        Ok(out.len())
    }
    fn unit(&self) -> Unit {
        Unit::Pages
    }
}

/// Lines of one unsigned integer (or a LIRS `*` separator), at least one integer.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    super::common::probe(Keys, lines).fits().then_some(Format::Keys)
}

/// Binary data whose length is a multiple of 4 and not another known format.
pub fn sniff_u32be(head: &[u8]) -> Option<Format> {
    (head.len().is_multiple_of(4) && !head.is_empty()).then_some(Format::KeysU32be)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(Keys.parse("2819").unwrap().unwrap(), Request { time: 0, addr: 2819, len: 1, dev: 0, op: Op::Read });
        assert_eq!(Keys.parse(" 7 ").unwrap().unwrap().addr, 7);
        assert_eq!(Keys.parse("*").unwrap(), None);
        assert_eq!(Keys.parse("# comment").unwrap(), None);
        assert_eq!(Keys.parse("x").unwrap_err().field, "key");
        assert_eq!(Keys.parse("1 2").unwrap_err().field, "key");
        assert_eq!(Keys.parse("**").unwrap_err().field, "key");
        assert_eq!(Keys.parse("-1").unwrap_err().field, "key");
    }

    #[test]
    fn sniffs() {
        assert_eq!(sniff(&["0", "1", "*", "2"]), Some(Format::Keys));
        assert_eq!(sniff(&["*"]), None);
        assert_eq!(sniff(&["1", "2 3"]), None);
    }

    #[test]
    fn u32be_reads_and_rejects_torn_records() {
        let bytes: Vec<u8> = [1u32, 0xdead_beef].iter().flat_map(|k| k.to_be_bytes()).collect();
        let mut r = KeysU32be::new(Box::new(std::io::Cursor::new(bytes.clone())), Path::new("k"));
        let all = crate::trace::read_all(&mut r).unwrap();
        assert_eq!(all.iter().map(|r| r.addr).collect::<Vec<_>>(), [1, 0xdead_beef]);
        let mut r = KeysU32be::new(Box::new(std::io::Cursor::new(bytes[..6].to_vec())), Path::new("k"));
        assert!(crate::trace::read_all(&mut r).unwrap_err().to_string().contains("2 stray bytes"));
    }
}
