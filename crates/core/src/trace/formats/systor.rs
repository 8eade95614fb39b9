//! SYSTOR'17 enterprise VDI traces (SNIA IOTTA, Lee et al., SYSTOR 2017):
//!
//! ```text
//! Timestamp,Response,IOType,LUN,Offset,Size
//! 1455591804.310701000,0.006475000,R,0,203468398592,32768
//! ```
//!
//! Timestamp is Unix seconds with nanosecond digits (read exactly), Response the
//! service time in seconds (checked, not used), IOType `R` or `W` (any case), LUN
//! the device, Offset and Size bytes. The header line is skipped wherever it is.
//!
//! The records are logged in completion order, so the timestamps (issue times)
//! are not monotonic. They are kept in the given order: the reader rebases times
//! to the first record, and a record issued before the first one gets time 0.

use super::common::{decimal_time, is_header, probe};
use crate::trace::text::{dev_field, f64_field, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

const HEADER: &[&str] = &["timestamp", "response", "iotype", "lun", "offset", "size"];

#[derive(Clone, Copy, Debug, Default)]
pub struct Systor;

impl LineFormat for Systor {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split(',');
        let first = f.next().unwrap_or("");
        if first.trim().eq_ignore_ascii_case("timestamp") && is_header(line, HEADER) {
            return Ok(None);
        }
        let time = decimal_time("timestamp", Some(first), 9)?;
        f64_field("response", f.next())?;
        let op = match f.next().map(str::trim) {
            Some("R" | "r") => Op::Read,
            Some("W" | "w") => Op::Write,
            Some(t) => return Err(FieldError::new("iotype", format!("{t:?} is neither R nor W"))),
            None => return Err(FieldError::new("iotype", "missing")),
        };
        let dev = dev_field("lun", u64_field("lun", f.next())?)?;
        let addr = u64_field("offset", f.next())?;
        let len = size_field("size", u64_field("size", f.next())?)?;
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than six columns"));
        }
        Ok(Some(Request { time, addr, len, dev, op }))
    }
}

/// The lines parse as SYSTOR'17 (six columns, `R`/`W` in the third).
pub fn sniff(lines: &[&str]) -> Option<Format> {
    probe(Systor, lines).fits().then_some(Format::Systor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines() {
        let r = Systor.parse("1455591804.310701000,0.006475000,R,0,203468398592,32768").unwrap().unwrap();
        assert_eq!(
            r,
            Request { time: 1_455_591_804_310_701_000, addr: 203468398592, len: 32768, dev: 0, op: Op::Read }
        );
        let r = Systor.parse("1455591804.325909000,0.000170000,W,3,3772221901312,4096").unwrap().unwrap();
        assert_eq!((r.op, r.dev, r.len), (Op::Write, 3, 4096));
        assert_eq!(Systor.parse("Timestamp,Response,IOType,LUN,Offset,Size").unwrap(), None);
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| Systor.parse(l).unwrap_err().field;
        assert_eq!(field("x,0.1,R,0,0,512"), "timestamp");
        assert_eq!(field("1.5,-0.1,R,0,0,512"), "response");
        assert_eq!(field("1.5,0.1,D,0,0,512"), "iotype");
        assert_eq!(field("1.5,0.1,R,lun,0,512"), "lun");
        assert_eq!(field("1.5,0.1,R,0,x,512"), "offset");
        assert_eq!(field("1.5,0.1,R,0,0,0"), "size");
        assert_eq!(field("1.5,0.1,R,0,0"), "size");
        assert_eq!(field("1.5,0.1,R,0,0,512,7"), "line");
        assert_eq!(field("Timestamp,Response,IOType"), "timestamp");
    }

    #[test]
    fn sniffs() {
        let lines =
            ["Timestamp,Response,IOType,LUN,Offset,Size", "1455591804.310701000,0.006475000,R,0,203468398592,32768"];
        assert_eq!(sniff(&lines), Some(Format::Systor));
        assert_eq!(sniff(&lines[..1]), None);
    }
}
