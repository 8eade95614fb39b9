//! SNIA Tencent CBS block traces (SNIA IOTTA 27917, Zhang et al., "OSCA", ATC 2020):
//!
//! ```text
//! Timestamp,Offset,Size,IOType,VolumeID
//! 1538323200,12910952,8,1,1283
//! ```
//!
//! Timestamp is Unix seconds, Offset and Size are 512-byte sectors, IOType is 0
//! (read) or 1 (write), VolumeID the device (each volume its own address space).
//! Volume ids are kept as they are (the published traces number volumes below
//! 2^20, the device limit); a larger id is an error naming the field. The files
//! have no header; a header line with the names above is accepted.

use super::common::{decimal_time, is_header, probe};
use crate::trace::text::{dev_field, mul_field, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

const HEADER: &[&str] = &["timestamp", "offset", "size", "iotype", "volumeid"];

#[derive(Clone, Copy, Debug, Default)]
pub struct Tencent;

impl LineFormat for Tencent {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split(',');
        let first = f.next().unwrap_or("");
        if first.trim().eq_ignore_ascii_case("timestamp") && is_header(line, HEADER) {
            return Ok(None);
        }
        let time = decimal_time("timestamp", Some(first), 9)?;
        let addr = mul_field("offset", u64_field("offset", f.next())?, 512)?;
        let len = size_field("size", mul_field("size", u64_field("size", f.next())?, 512)?)?;
        let op = match u64_field("iotype", f.next())? {
            0 => Op::Read,
            1 => Op::Write,
            t => return Err(FieldError::new("iotype", format!("{t} is neither 0 (read) nor 1 (write)"))),
        };
        let dev = dev_field("volumeid", u64_field("volumeid", f.next())?)?;
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than five columns"));
        }
        Ok(Some(Request { time, addr, len, dev, op }))
    }
}

/// The lines parse as Tencent CBS (five integer columns, the fourth 0 or 1).
pub fn sniff(lines: &[&str]) -> Option<Format> {
    probe(Tencent, lines).fits().then_some(Format::Tencent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines() {
        let r = Tencent.parse("1538323200,12910952,8,1,1283").unwrap().unwrap();
        assert_eq!(
            r,
            Request { time: 1_538_323_200_000_000_000, addr: 12910952 * 512, len: 4096, dev: 1283, op: Op::Write }
        );
        assert_eq!(Tencent.parse("1538323201,0,1,0,0").unwrap().unwrap().op, Op::Read);
        assert_eq!(Tencent.parse("Timestamp,Offset,Size,IOType,VolumeID").unwrap(), None);
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| Tencent.parse(l).unwrap_err().field;
        assert_eq!(field("t,0,8,1,1"), "timestamp");
        assert_eq!(field("1,x,8,1,1"), "offset");
        assert_eq!(field("1,0,0,1,1"), "size");
        assert_eq!(field("1,0,8388608,1,1"), "size"); // 4 GiB
        assert_eq!(field("1,0,8,2,1"), "iotype");
        assert_eq!(field("1,0,8,1,1048576"), "volumeid");
        assert_eq!(field("1,0,8,1"), "volumeid");
        assert_eq!(field("1,0,8,1,1,1"), "line");
    }

    #[test]
    fn sniffs() {
        assert_eq!(sniff(&["1538323200,12910952,8,1,1283", "1538323200,12910960,8,0,12"]), Some(Format::Tencent));
        // vSCSI lines do not pass (the fourth column is a byte size)
        assert_eq!(sniff(&["1,5633898,28,512,42932745"]), None);
    }
}
