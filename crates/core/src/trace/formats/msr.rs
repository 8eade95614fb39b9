//! MSR Cambridge block traces (SNIA IOTTA 388, Narayanan et al., FAST 2008):
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166385295514663,hm,0,Write,9056014336,2048,2833
//! ```
//!
//! Timestamp is a Windows filetime (100 ns ticks since 1601), read exactly as an
//! integer; Type is `Read` or `Write` (any case); Offset and Size are bytes;
//! ResponseTime (100 ns ticks) is checked but not used. The files carry no header,
//! but a header line with the names above is accepted.
//!
//! Each (hostname, disk number) pair is one device. It gets a small id in order
//! of first appearance (0 for the first pair seen, 1 for the next new one …), so
//! one file per volume always reads as device 0 and a concatenation of volumes
//! keeps them apart.

use super::common::{decimal_time, is_header, probe, Cursor, DevMap};
use crate::trace::text::{parse_text, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

const HEADER: &[&str] = &["timestamp", "hostname", "disknumber", "type", "offset", "size", "responsetime"];
/// Longest host name accepted (DNS's limit), so the device table stays small.
const MAX_HOST: usize = 255;

#[derive(Default)]
pub struct Msr {
    devs: DevMap<(String, u64)>,
}

impl Msr {
    /// The usual line (`128166385295514663,hm,0,Write,9056014336,2048,2833`) without
    /// `&str` splitting; `None` for anything else (header, spaces, bad values).
    fn parse_plain(&mut self, line: &[u8]) -> Option<Request> {
        let mut f = Cursor::new(line);
        let time = f.decimal(2)?;
        f.comma()?;
        let host = f.field();
        if host.is_empty() || host.len() > MAX_HOST || !host.iter().all(u8::is_ascii_graphic) {
            return None;
        }
        f.comma()?;
        let disk = f.uint()?;
        f.comma()?;
        let op = match f.field() {
            t if t.eq_ignore_ascii_case(b"read") => Op::Read,
            t if t.eq_ignore_ascii_case(b"write") => Op::Write,
            _ => return None,
        };
        f.comma()?;
        let addr = f.uint()?;
        f.comma()?;
        let len = u32::try_from(f.uint()?).ok().filter(|&n| n > 0)?;
        f.comma()?;
        f.uint()?;
        if !f.at_end() {
            return None;
        }
        // (an error here changes nothing: the slow path repeats it)
        let new_key = || (host.iter().map(|&b| b as char).collect(), disk); // ASCII, checked above
        let dev = self.devs.id("disknumber", |k| k.0.as_bytes() == host && k.1 == disk, new_key).ok()?;
        Some(Request { time, addr, len, dev, op })
    }
}

impl LineFormat for Msr {
    fn parse_bytes(&mut self, line: &[u8]) -> Result<Option<Request>, FieldError> {
        match self.parse_plain(line) {
            Some(req) => Ok(Some(req)),
            None => parse_text(self, line),
        }
    }

    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split(',');
        let first = f.next().unwrap_or("");
        if first.trim().eq_ignore_ascii_case("timestamp") && is_header(line, HEADER) {
            return Ok(None);
        }
        let time = decimal_time("timestamp", Some(first), 2)?;
        let host = f.next().ok_or_else(|| FieldError::new("hostname", "missing"))?.trim();
        if host.is_empty() || host.len() > MAX_HOST {
            return Err(FieldError::new("hostname", format!("must be 1 to {MAX_HOST} characters")));
        }
        let disk = u64_field("disknumber", f.next())?;
        let op = match f.next().map(str::trim) {
            Some(t) if t.eq_ignore_ascii_case("read") => Op::Read,
            Some(t) if t.eq_ignore_ascii_case("write") => Op::Write,
            Some(t) => return Err(FieldError::new("type", format!("{t:?} is neither Read nor Write"))),
            None => return Err(FieldError::new("type", "missing")),
        };
        let addr = u64_field("offset", f.next())?;
        let len = size_field("size", u64_field("size", f.next())?)?;
        u64_field("responsetime", f.next())?;
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than seven columns"));
        }
        let dev = self.devs.id("disknumber", |k| k.0 == host && k.1 == disk, || (host.to_string(), disk))?;
        Ok(Some(Request { time, addr, len, dev, op }))
    }
}

/// The lines parse as MSR (seven columns, `Read`/`Write` in the fourth).
pub fn sniff(lines: &[&str]) -> Option<Format> {
    probe(Msr::default(), lines).fits().then_some(Format::Msr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines() {
        let mut m = Msr::default();
        let r = m.parse("128166385295514663,hm,0,Write,9056014336,2048,2833").unwrap().unwrap();
        assert_eq!(r, Request { time: 12_816_638_529_551_466_300, addr: 9056014336, len: 2048, dev: 0, op: Op::Write });
        let r = m.parse("128166386567849449,hm,0,Read,11946262528,4096,3654").unwrap().unwrap();
        assert_eq!(r.op, Op::Read);
        assert_eq!(r.dev, 0);
        // a new (host, disk) pair gets the next id; old pairs keep theirs
        assert_eq!(m.parse("1,hm,1,read,0,512,1").unwrap().unwrap().dev, 1);
        assert_eq!(m.parse("1,src1,0,read,0,512,1").unwrap().unwrap().dev, 2);
        assert_eq!(m.parse("1,hm,0,READ,0,512,1").unwrap().unwrap().dev, 0);
        assert_eq!(m.parse("1,src1,0,read,0,512,1").unwrap().unwrap().dev, 2);
        assert_eq!(m.parse("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime").unwrap(), None);
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| Msr::default().parse(l).unwrap_err().field;
        assert_eq!(field("x,hm,0,Write,0,512,1"), "timestamp");
        assert_eq!(field("1,,0,Write,0,512,1"), "hostname");
        assert_eq!(field("1"), "hostname");
        assert_eq!(field("1,hm,a,Write,0,512,1"), "disknumber");
        assert_eq!(field("1,hm,0,Trim,0,512,1"), "type");
        assert_eq!(field("1,hm,0,Write,-4,512,1"), "offset");
        assert_eq!(field("1,hm,0,Write,0,0,1"), "size");
        assert_eq!(field("1,hm,0,Write,0,512"), "responsetime");
        assert_eq!(field("1,hm,0,Write,0,512,1,9"), "line");
        assert_eq!(field("999999999999999999999,hm,0,Write,0,512,1"), "timestamp");
        assert_eq!(field(&format!("1,{},0,Write,0,512,1", "h".repeat(300))), "hostname");
    }

    proptest::proptest! {
        /// The byte fast path gives what the `&str` parser gives, line after line
        /// (device ids included), on plain lines and odd ones.
        #[test]
        fn fast_path_agrees_with_the_text_parser(lines in proptest::collection::vec(super::super::common::odd_lines(), 1..20)) {
            let (mut fast, mut slow) = (Msr::default(), Msr::default());
            for line in &lines {
                let want = match std::str::from_utf8(line) {
                    Ok(t) => slow.parse(t),
                    Err(_) => Err(FieldError::new("line", "not UTF-8 text")),
                };
                proptest::prop_assert_eq!(fast.parse_bytes(line), want, "{:?}", String::from_utf8_lossy(line));
            }
        }

        #[test]
        fn fast_path_reads_plain_lines(t in 0u64..184_467_440_737_095_516, host in "[a-z0-9]{1,8}", disk in 0u64..5,
                                       read: bool, off in 0u64..10_000_000_000_000_000_000, size in 1u32.., resp in 0u64..1 << 40) {
            let line = format!("{t},{host},{disk},{},{off},{size},{resp}", if read { "Read" } else { "Write" });
            let mut m = Msr::default();
            let r = m.parse_plain(line.as_bytes()).expect("the fast path takes a plain line");
            proptest::prop_assert_eq!(Some(r), Msr::default().parse(&line).unwrap());
        }
    }

    #[test]
    fn sniffs() {
        assert_eq!(sniff(&["128166385295514663,hm,0,Write,9056014336,2048,2833"]), Some(Format::Msr));
        assert_eq!(sniff(&["Timestamp,Response,IOType,LUN,Offset,Size"]), None);
    }
}
