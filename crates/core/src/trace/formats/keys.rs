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

/// Fewest keys that can show a key trace's locality.
const SNIFF_MIN_KEYS: usize = 16;
/// A key within this many pages of the previous one continues a run or a loop.
const SNIFF_NEAR: u64 = 1024;

/// Binary data that looks like big-endian u32 page numbers. Any binary whose
/// length is a multiple of 4 is readable as keys (executables included), so
/// `auto` guesses this format only when the keys behave like page accesses:
/// - at least [`SNIFF_MIN_KEYS`] whole keys (when `head` is the whole file,
///   nothing left over);
/// - locality: at least a quarter of the keys after the first repeat a key
///   seen before or lie within [`SNIFF_NEAR`] pages of the previous key. Key
///   traces do (the LIRS traces 69–100 %, Zipf 0.9 over 1 M keys 33 %); random,
///   compressed or encrypted data almost never does;
/// - at most a quarter of the keys are one value: zero words, which
///   executables, images and databases are full of, would otherwise pass as
///   reuse (the first 64 KiB of the ssdcache executable: 49 % zero words, of
///   python3 34 %, of libc 23 %). The traces above: at most 3.3 % for their
///   most common key.
///
/// Known file types (an ELF executable…) are refused before this, by
/// [`super::file_kind`]. `head` is the file's first bytes; if it is shorter
/// than a full sniff window it is the whole file.
pub fn sniff_u32be(head: &[u8]) -> Option<Format> {
    let whole = head.len() < super::SNIFF_BYTES;
    if (whole && !head.len().is_multiple_of(4)) || head.len() / 4 < SNIFF_MIN_KEYS {
        return None;
    }
    let keys: Vec<u64> = head.chunks_exact(4).map(|c| u32::from_be_bytes(c.try_into().unwrap()) as u64).collect();
    let mut count: hashbrown::HashMap<u64, usize> = hashbrown::HashMap::with_capacity(keys.len());
    let mut local = 0;
    for (i, &k) in keys.iter().enumerate() {
        let seen = count.contains_key(&k);
        if i > 0 && (seen || k.abs_diff(keys[i - 1]) <= SNIFF_NEAR) {
            local += 1;
        }
        *count.entry(k).or_insert(0) += 1;
    }
    let top = count.values().copied().max().unwrap_or(0);
    (4 * local >= keys.len() - 1 && 4 * top <= keys.len()).then_some(Format::KeysU32be)
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

    fn be(keys: impl IntoIterator<Item = u32>) -> Vec<u8> {
        keys.into_iter().flat_map(u32::to_be_bytes).collect()
    }

    #[test]
    fn u32be_sniffs_only_keys_that_behave_like_page_accesses() {
        // Loops, sequential runs, skewed reuse
        assert_eq!(sniff_u32be(&be((0..1000).map(|k| k % 37))), Some(Format::KeysU32be));
        assert_eq!(sniff_u32be(&be(5_000_000..5_000_100)), Some(Format::KeysU32be));
        let hashed = (0..4000u32).map(|i| {
            if i % 2 == 0 {
                0x9e37_79b9u32.wrapping_mul(i % 50)
            } else {
                i.wrapping_mul(0x85eb_ca6b)
            }
        });
        assert_eq!(sniff_u32be(&be(hashed)), Some(Format::KeysU32be), "half reuse of hashed ids");
        // Random-looking values: no reuse, no runs
        let scattered = (1..4000u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ (i << 7));
        assert_eq!(sniff_u32be(&be(scattered)), None);
        // Mostly zero words
        assert_eq!(sniff_u32be(&be((0..100).map(|i| if i % 3 == 0 { i * 7919 } else { 0 }))), None);
        // Too short to tell, or torn
        assert_eq!(sniff_u32be(&be(0..15)), None);
        assert_eq!(sniff_u32be(&be(0..16)), Some(Format::KeysU32be));
        assert_eq!(sniff_u32be(&be(0..16)[..63]), None);
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
