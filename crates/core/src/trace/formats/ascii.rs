//! Whitespace-separated five-column traces: SSDsim, MQSim and DiskSim ascii
//! (`time dev lba_sectors size_sectors op`), and the byte-addressed variant of
//! the Heimdall MSR cuts (`time_ms dev offset_bytes size_bytes op`).

use crate::trace::text::{dev_field, f64_field, mul_field, size_field, to_nanos, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

#[derive(Clone, Copy, Debug)]
pub struct Ascii {
    /// Nanoseconds per unit of the time column.
    time_ns: f64,
    /// Bytes per unit of the address and size columns.
    unit_bytes: u64,
    /// DiskSim's flags column: only bit 0 (1 = read) matters.
    flags: bool,
}

impl Ascii {
    pub fn ssdsim() -> Self {
        Ascii { time_ns: 1.0, unit_bytes: 512, flags: false }
    }
    pub fn disksim() -> Self {
        Ascii { time_ns: 1e6, unit_bytes: 512, flags: true }
    }
    pub fn heimdall() -> Self {
        Ascii { time_ns: 1e6, unit_bytes: 1, flags: false }
    }
}

impl LineFormat for Ascii {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split_ascii_whitespace();
        let time = to_nanos("time", f64_field("time", f.next())?, self.time_ns)?;
        let dev = dev_field("device", u64_field("device", f.next())?)?;
        let addr = mul_field("lba", u64_field("lba", f.next())?, self.unit_bytes)?;
        let size = size_field("size", mul_field("size", u64_field("size", f.next())?, self.unit_bytes)?)?;
        let flag = u64_field("op", f.next())?;
        let op = if self.flags {
            if flag & 1 == 1 {
                Op::Read
            } else {
                Op::Write
            }
        } else {
            match flag {
                1 => Op::Read,
                0 => Op::Write,
                _ => return Err(FieldError::new("op", format!("{flag} is neither 1 (read) nor 0 (write)"))),
            }
        };
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than five columns"));
        }
        Ok(Some(Request { time, addr, len: size, dev, op }))
    }
}

/// Recognises five numeric columns. Integer nanosecond times mean SSDsim/MQSim;
/// fractional times are milliseconds: byte-sized (multiple-of-512) address and
/// size columns mean the Heimdall cuts, else DiskSim.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    let mut fractional = false;
    let mut byte_sized = true;
    for line in lines {
        let cols: Vec<&str> = line.split_ascii_whitespace().collect();
        if cols.len() != 5 || cols[1..].iter().any(|c| c.parse::<u64>().is_err()) {
            return None;
        }
        if cols[0].parse::<f64>().is_err() {
            return None;
        }
        fractional |= cols[0].contains('.');
        let addr: u64 = cols[2].parse().ok()?;
        let size: u64 = cols[3].parse().ok()?;
        byte_sized &= addr.is_multiple_of(512) && size.is_multiple_of(512) && size > 0;
    }
    Some(match (fractional, byte_sized) {
        (false, _) => Format::Ssdsim,
        (true, true) => Format::Heimdall,
        (true, false) => Format::Disksim,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssdsim_line() {
        let r = Ascii::ssdsim().parse("78643005 1 55596 6 1").unwrap().unwrap();
        assert_eq!(r, Request { time: 78643005, addr: 55596 * 512, len: 3072, dev: 1, op: Op::Read });
    }

    #[test]
    fn heimdall_line() {
        let r = Ascii::heimdall().parse("223.412 0 3159347200 36864 0").unwrap().unwrap();
        assert_eq!(r, Request { time: 223_412_000, addr: 3159347200, len: 36864, dev: 0, op: Op::Write });
    }

    #[test]
    fn bad_lines_name_the_field() {
        assert_eq!(Ascii::ssdsim().parse("0 0 12 x 1").unwrap_err().field, "size");
        assert_eq!(Ascii::ssdsim().parse("0 0 12 0 1").unwrap_err().field, "size");
        assert_eq!(Ascii::ssdsim().parse("0 0 12 8 7").unwrap_err().field, "op");
        assert_eq!(Ascii::ssdsim().parse("0 0 12").unwrap_err().field, "size");
        assert_eq!(Ascii::ssdsim().parse("-5 0 12 8 1").unwrap_err().field, "time");
    }
}
