//! `ssdcache serve --record`'s recordings: every request a server answered,
//! one text line each (zstd-compressed by the server; any compression reads):
//!
//! ```text
//! # ssdcache-record 1 {"segment_bytes":131072,"slots":16,"mode":"write-back","policy":"lru",…}
//! 1732871234000000000 0 R 1048576 4096 H
//! 1732871234000100000 0 W 0 131072 M
//! # mark 1732871234500000000 policy s3fifo
//! 1732871234600000000 0 F 0 0 O
//! # end 1732871240000000000 {"records":3,"dropped":0}
//! ```
//!
//! A request line is `time_ns dev op offset bytes outcome`: the time in Unix
//! nanoseconds, the backing store (0 today), the op (`R` read, `W` write, `Z`
//! write-zeroes, `T` trim, `F` flush), the byte range, and what the cache did
//! (`H` hit, `M` miss, `B` bypass, `O` done without data, `E` error). The
//! simulator replays reads, writes (write-zeroes are writes) and trims;
//! flushes and the outcome are for people and `trace analyze`. Lines starting
//! with `#` are the header (the cache's geometry, mode, policy spec and
//! settings, and the `ssdcache sim` arguments that replay it), markers (a
//! procedure, a change of mode or policy) and the end marker a recording
//! stopped cleanly ends with; a recording without it was cut off (the server
//! crashed or was killed) and reads as the prefix it is ([`Record::at_end`]).

use super::common::probe;
use crate::trace::text::{dev_field, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

/// The first line's start.
pub const HEADER: &str = "# ssdcache-record 1 ";
/// A marker line's start (`# mark TIME TEXT`).
pub const MARK: &str = "# mark ";
/// The end marker's start (`# end TIME JSON`).
pub const END: &str = "# end ";

/// What the cache did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    Miss,
    Bypass,
    /// Done, with no data to cache (a flush).
    Done,
    Error,
}

impl Outcome {
    pub fn letter(self) -> char {
        match self {
            Outcome::Hit => 'H',
            Outcome::Miss => 'M',
            Outcome::Bypass => 'B',
            Outcome::Done => 'O',
            Outcome::Error => 'E',
        }
    }
}

/// A request's op as a recording writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordOp {
    Read,
    Write,
    WriteZeroes,
    Trim,
    Flush,
}

impl RecordOp {
    pub fn letter(self) -> char {
        match self {
            RecordOp::Read => 'R',
            RecordOp::Write => 'W',
            RecordOp::WriteZeroes => 'Z',
            RecordOp::Trim => 'T',
            RecordOp::Flush => 'F',
        }
    }
}

/// Appends one request line to `out`.
pub fn write_line(out: &mut String, time_ns: u64, dev: u32, op: RecordOp, offset: u64, bytes: u64, o: Outcome) {
    use std::fmt::Write;
    let _ = writeln!(out, "{time_ns} {dev} {} {offset} {bytes} {}", op.letter(), o.letter());
}

/// The reader: request lines become requests; `#` lines are skipped, and the
/// end marker is noted.
#[derive(Clone, Copy, Debug, Default)]
pub struct Record {
    ended: bool,
    /// A line came after the end marker (recordings appended to each other).
    reopened: bool,
    lines: u64,
}

impl LineFormat for Record {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        self.lines += 1;
        if let Some(rest) = line.strip_prefix('#') {
            if line.starts_with(END) {
                self.ended = true;
            } else if self.lines == 1 && !line.starts_with(HEADER.trim_end()) {
                let shown: String = rest.chars().take(40).collect();
                return Err(FieldError::new("header", format!("`#{shown}` is not an ssdcache recording's header")));
            }
            return Ok(None);
        }
        if self.ended {
            self.reopened = true;
            self.ended = false;
        }
        let mut f = line.split_ascii_whitespace();
        let time = u64_field("time", f.next())?;
        let dev = dev_field("dev", u64_field("dev", f.next())?)?;
        let op = f.next().ok_or_else(|| FieldError::new("op", "missing"))?;
        let addr = u64_field("offset", f.next())?;
        let bytes = u64_field("bytes", f.next())?;
        match f.next() {
            Some("H" | "M" | "B" | "O" | "E") => {}
            Some(o) => return Err(FieldError::new("outcome", format!("{o:?} is none of H, M, B, O, E"))),
            None => return Err(FieldError::new("outcome", "missing")),
        }
        if f.next().is_some() {
            return Err(FieldError::new("line", "more than six columns"));
        }
        let op = match op {
            "R" => Op::Read,
            "W" | "Z" => Op::Write,
            "T" => Op::Trim,
            "F" => return Ok(None),
            o => return Err(FieldError::new("op", format!("{o:?} is none of R, W, Z, T, F"))),
        };
        if bytes == 0 {
            return Ok(None);
        }
        let len = size_field("bytes", bytes)?;
        Ok(Some(Request { time, addr, len, dev, op }))
    }

    fn at_end(&mut self) -> Option<String> {
        (!self.ended && self.lines > 0).then(|| {
            "a recording without its end marker: cut off (the server crashed or was killed); read up to there".into()
        })
    }
}

/// The lines are a recording: the header first.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    let first = lines.first()?;
    (first.starts_with(HEADER.trim_end()) && probe(Record::default(), lines).fits()).then_some(Format::Record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> (Vec<Request>, Option<String>) {
        let mut r = Record::default();
        let reqs = text.lines().filter_map(|l| r.parse(l).unwrap()).collect();
        (reqs, r.at_end())
    }

    #[test]
    fn requests_replay_and_the_rest_is_skipped() {
        let mut text = format!("{HEADER}{{\"slots\":16}}\n");
        write_line(&mut text, 10, 0, RecordOp::Read, 4096, 4096, Outcome::Hit);
        write_line(&mut text, 20, 0, RecordOp::Write, 0, 131072, Outcome::Miss);
        write_line(&mut text, 25, 0, RecordOp::Flush, 0, 0, Outcome::Done);
        text.push_str("# mark 26 policy s3fifo\n");
        write_line(&mut text, 30, 0, RecordOp::WriteZeroes, 8192, 512, Outcome::Bypass);
        write_line(&mut text, 40, 0, RecordOp::Trim, 0, 1 << 20, Outcome::Done);
        let (reqs, note) = all(&text);
        let ops: Vec<(u64, Op, u64, u32)> = reqs.iter().map(|r| (r.time, r.op, r.addr, r.len)).collect();
        assert_eq!(
            ops,
            [
                (10, Op::Read, 4096, 4096),
                (20, Op::Write, 0, 131072),
                (30, Op::Write, 8192, 512),
                (40, Op::Trim, 0, 1 << 20)
            ]
        );
        assert!(note.unwrap().contains("cut off"), "no end marker");
        text.push_str("# end 50 {}\n");
        assert_eq!(all(&text).1, None, "ended cleanly");
        assert_eq!(sniff(&text.lines().collect::<Vec<_>>()), Some(Format::Record));
    }

    #[test]
    fn bad_lines_name_their_field() {
        let mut r = Record::default();
        assert_eq!(r.parse("# something else").unwrap_err().field, "header");
        let mut r = Record::default();
        r.parse(HEADER.trim_end()).unwrap();
        for (line, field) in [
            ("1 0 X 0 1 H", "op"),
            ("1 0 R 0 1 Q", "outcome"),
            ("1 0 R 0 1", "outcome"),
            ("1 0 R 0 1 H 7", "line"),
            ("x 0 R 0 1 H", "time"),
            ("1 0 R 0 99999999999 H", "bytes"),
        ] {
            let e = r.parse(line).unwrap_err();
            assert_eq!(e.field, field, "{line}: {}", e.msg);
        }
    }
}
