//! libCacheSim's CSV form of the CloudPhysics VMware vSCSI traces
//! (Waldspurger et al., SHARDS, FAST 2015):
//!
//! ```text
//! version,time,op,size,lbn
//! 1,5633898,2a,512,42932745
//! ```
//!
//! `version` is the vSCSI record version (checked to be an integer, not used);
//! `time` is in seconds: libCacheSim's binary vSCSI reader turns the records'
//! microsecond stamps into seconds (`ts / 1000000`), its FAQ gives the CSV's time
//! unit as seconds, and the sample spans 7,200 units, a two-hour window. `op` is
//! the SCSI command's opcode in hex (optionally `0x`-prefixed). `size` is bytes,
//! `lbn` 512-byte sectors.
//!
//! Opcodes: READ(6/10/12/16) = 08/28/a8/88 are reads, WRITE(6/10/12/16) =
//! 0a/2a/aa/8a are writes. Any other opcode (TEST UNIT READY, INQUIRY, SYNCHRONIZE
//! CACHE, UNMAP, …) moves no data the trace can place, so its line is skipped
//! silently, like a header; an op that is not a hex byte is an error.

use super::common::{decimal_time, is_header, probe};
use crate::trace::text::{mul_field, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

const HEADER: &[&str] = &["version", "time", "op", "size", "lbn"];

#[derive(Clone, Copy, Debug, Default)]
pub struct VscsiCsv;

/// Read or write for a SCSI opcode; `None` for commands that move no data.
pub fn scsi_op(code: u8) -> Option<Op> {
    match code {
        0x08 | 0x28 | 0xa8 | 0x88 => Some(Op::Read),
        0x0a | 0x2a | 0xaa | 0x8a => Some(Op::Write),
        _ => None,
    }
}

impl LineFormat for VscsiCsv {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split(',');
        let first = f.next().unwrap_or("");
        if first.trim().eq_ignore_ascii_case("version") && is_header(line, HEADER) {
            return Ok(None);
        }
        u64_field("version", Some(first))?;
        let time = decimal_time("time", f.next(), 9)?;
        let code = f.next().ok_or_else(|| FieldError::new("op", "missing"))?.trim();
        let hex = code.strip_prefix("0x").or_else(|| code.strip_prefix("0X")).unwrap_or(code);
        let code = match u8::from_str_radix(hex, 16) {
            Ok(c) if !hex.starts_with('+') => c,
            _ => return Err(FieldError::new("op", format!("{code:?} is not a SCSI opcode in hex"))),
        };
        let size = u64_field("size", f.next())?;
        let lbn = u64_field("lbn", f.next())?;
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than five columns"));
        }
        let Some(op) = scsi_op(code) else { return Ok(None) };
        let len = size_field("size", size)?;
        let addr = mul_field("lbn", lbn, 512)?;
        Ok(Some(Request { time, addr, len, dev: 0, op }))
    }
}

/// The lines parse as vSCSI CSV and at least one is a read or write.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    probe(VscsiCsv, lines).fits().then_some(Format::VscsiCsv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines() {
        assert_eq!(VscsiCsv.parse("version,time,op,size,lbn").unwrap(), None);
        let r = VscsiCsv.parse("1,5633898,2a,512,42932745").unwrap().unwrap();
        assert_eq!(r, Request { time: 5_633_898_000_000_000, addr: 42932745 * 512, len: 512, dev: 0, op: Op::Write });
        let r = VscsiCsv.parse("2,5633899,0x28,6656,40409911").unwrap().unwrap();
        assert_eq!((r.op, r.len, r.addr), (Op::Read, 6656, 40409911 * 512));
        assert_eq!(VscsiCsv.parse("1,5,A8,4096,0").unwrap().unwrap().op, Op::Read);
        assert_eq!(VscsiCsv.parse("1,5,8a,4096,0").unwrap().unwrap().op, Op::Write);
        // SYNCHRONIZE CACHE: no data, skipped even with size 0
        assert_eq!(VscsiCsv.parse("1,5,35,0,0").unwrap(), None);
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| VscsiCsv.parse(l).unwrap_err().field;
        assert_eq!(field("v,5,2a,512,1"), "version");
        assert_eq!(field("1,-5,2a,512,1"), "time");
        assert_eq!(field("1,5,2g,512,1"), "op");
        assert_eq!(field("1,5,+2a,512,1"), "op");
        assert_eq!(field("1,5,1ff,512,1"), "op");
        assert_eq!(field("1,5"), "op");
        assert_eq!(field("1,5,2a,0,1"), "size");
        assert_eq!(field("1,5,2a,512"), "lbn");
        assert_eq!(field("1,5,2a,512,1,1"), "line");
    }

    #[test]
    fn sniffs() {
        let lines = ["version,time,op,size,lbn", "1,5633898,2a,512,42932745", "1,5633898,28,512,42932746"];
        assert_eq!(sniff(&lines), Some(Format::VscsiCsv));
        assert_eq!(sniff(&lines[..1]), None);
        assert_eq!(sniff(&["1,5633898,00,512,42932745"]), None); // no data commands at all
    }
}
