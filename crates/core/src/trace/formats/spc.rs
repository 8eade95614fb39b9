//! UMass / Storage Performance Council (SPC) trace format, as in the UMass Trace
//! Repository's Financial1/2 and WebSearch1-3 traces:
//!
//! ```text
//! ASU,LBA,Size,Opcode,Timestamp[,optional fields…]
//! 0,303567,3584,w,0.000000
//! ```
//!
//! ASU (application specific unit) is the device: each ASU is its own address
//! space. LBA is in 512-byte sectors, Size in bytes, Opcode `r`/`R` (read) or
//! `w`/`W` (write), Timestamp in seconds since the trace started (decimal, read
//! exactly). The SPC specification allows optional fields after the timestamp;
//! they are ignored. There is no header.

use super::common::{decimal_time, probe, Cursor};
use crate::trace::text::{dev_field, mul_field, parse_text, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

#[derive(Clone, Copy, Debug, Default)]
pub struct Spc;

impl Spc {
    /// The usual line (`0,303567,3584,w,0.000000`) without `&str` splitting;
    /// `None` for anything else (spaces, bad values).
    fn parse_plain(line: &[u8]) -> Option<Request> {
        let mut f = Cursor::new(line);
        let dev = f.uint().filter(|&d| d < crate::key::MAX_DEVICES)? as u32;
        f.comma()?;
        let addr = f.uint()?.checked_mul(512)?;
        f.comma()?;
        let len = u32::try_from(f.uint()?).ok().filter(|&n| n > 0)?;
        f.comma()?;
        let op = match f.byte()? {
            b'r' | b'R' => Op::Read,
            b'w' | b'W' => Op::Write,
            _ => return None,
        };
        f.comma()?;
        let time = f.decimal(9)?;
        // optional fields after the timestamp are ignored (but must be text)
        if !(f.at_end() || f.comma().is_some() && f.rest().is_ascii()) {
            return None;
        }
        Some(Request { time, addr, len, dev, op })
    }
}

impl LineFormat for Spc {
    fn parse_bytes(&mut self, line: &[u8]) -> Result<Option<Request>, FieldError> {
        match Spc::parse_plain(line) {
            Some(req) => Ok(Some(req)),
            None => parse_text(self, line),
        }
    }

    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split(',');
        let dev = dev_field("asu", u64_field("asu", f.next())?)?;
        let addr = mul_field("lba", u64_field("lba", f.next())?, 512)?;
        let len = size_field("size", u64_field("size", f.next())?)?;
        let op = match f.next().map(str::trim) {
            Some("r" | "R") => Op::Read,
            Some("w" | "W") => Op::Write,
            Some(o) => return Err(FieldError::new("opcode", format!("{o:?} is neither r nor w"))),
            None => return Err(FieldError::new("opcode", "missing")),
        };
        let time = decimal_time("timestamp", f.next(), 9)?;
        Ok(Some(Request { time, addr, len, dev, op }))
    }
}

/// The lines parse as SPC (the `r`/`w` opcode column makes this unambiguous).
pub fn sniff(lines: &[&str]) -> Option<Format> {
    probe(Spc, lines).fits().then_some(Format::Spc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines() {
        let r = Spc.parse("0,303567,3584,w,0.000000").unwrap().unwrap();
        assert_eq!(r, Request { time: 0, addr: 303567 * 512, len: 3584, dev: 0, op: Op::Write });
        let r = Spc.parse("21,55590,3072,R,259.601203125").unwrap().unwrap();
        assert_eq!(r, Request { time: 259_601_203_125, addr: 55590 * 512, len: 3072, dev: 21, op: Op::Read });
        // spaces around fields and optional trailing fields are fine
        let r = Spc.parse(" 1 , 8 , 512 , r , 0.5 ,extra,fields").unwrap().unwrap();
        assert_eq!(r, Request { time: 500_000_000, addr: 4096, len: 512, dev: 1, op: Op::Read });
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| Spc.parse(l).unwrap_err().field;
        assert_eq!(field("x,1,512,r,0"), "asu");
        assert_eq!(field("2000000,1,512,r,0"), "asu");
        assert_eq!(field("0,-1,512,r,0"), "lba");
        assert_eq!(field("0,99999999999999999999,512,r,0"), "lba");
        assert_eq!(field("0,36028797018963968,512,r,0"), "lba"); // * 512 overflows
        assert_eq!(field("0,1,0,r,0"), "size");
        assert_eq!(field("0,1,5000000000,r,0"), "size");
        assert_eq!(field("0,1,512,x,0"), "opcode");
        assert_eq!(field("0,1,512"), "opcode");
        assert_eq!(field("0,1,512,w"), "timestamp");
        assert_eq!(field("0,1,512,w,-3"), "timestamp");
        assert_eq!(field("0"), "lba");
    }

    proptest::proptest! {
        /// The byte fast path gives what the `&str` parser gives, on plain lines and odd ones.
        #[test]
        fn fast_path_agrees_with_the_text_parser(line in super::super::common::odd_lines()) {
            let want = match std::str::from_utf8(&line) {
                Ok(t) => Spc.parse(t),
                Err(_) => Err(FieldError::new("line", "not UTF-8 text")),
            };
            proptest::prop_assert_eq!(Spc.parse_bytes(&line), want, "{:?}", String::from_utf8_lossy(&line));
        }

        #[test]
        fn fast_path_reads_plain_lines(asu in 0u32..1000, lba in 0u64..(1 << 54), size in 1u32.., read: bool,
                                       secs in 0u64..10_000_000_000, frac in "[0-9]{0,12}", extra: bool) {
            let op = if read { "r" } else { "W" };
            let dot = if frac.is_empty() { String::new() } else { format!(".{frac}") };
            let line = format!("{asu},{lba},{size},{op},{secs}{dot}{}", if extra { ",x,y" } else { "" });
            let r = Spc::parse_plain(line.as_bytes()).expect("the fast path takes a plain line");
            proptest::prop_assert_eq!(Some(r), Spc.parse(&line).unwrap());
        }
    }

    #[test]
    fn sniffs() {
        assert_eq!(sniff(&["0,303567,3584,w,0.000000", "1,55590,3072,w,0.000000"]), Some(Format::Spc));
        assert_eq!(sniff(&["0,303567,3584,1,0.000000"]), None);
    }
}
