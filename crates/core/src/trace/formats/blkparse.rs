//! Linux block-layer traces in two text forms, told apart line by line:
//!
//! **blkparse's default output** (`blkparse -i trace`):
//!
//! ```text
//!   8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
//!   8,0    3        6     0.000008096   697  D  WS 223490 + 8 [kjournald]
//! ```
//!
//! `major,minor cpu sequence time(s) pid action RWBS sector + sectors [process]`.
//! One event type stands for the requests: `D` (issued to the driver) by default,
//! or `Q` (queued by the file system) with [`BlkEvent::Queue`]; every other action
//! (G, I, M, P, U, C, A, m …) is skipped. RWBS: a `D` in it is a discard (→
//! [`Op::Trim`]), else `W` a write, else `R` a read; events with none of these
//! (a pure flush `F`, `N`) carry no data and are skipped, as is an empty
//! preflush (`FWS 0 + 0`). Sectors are 512 bytes. Each `major,minor` device gets
//! a small id in order of first appearance. The summary blkparse prints at the
//! end (from the first `CPU<n> (…):` or `Total (…):` line on) is skipped, and so
//! are its `Input file … added` notes.
//!
//! **WiscSee event lists** (`blkparse-events-for-ftlsim.txt`, He et al.,
//! EuroSys 2017):
//!
//! ```text
//! 35181 D read 136318976 4096 0.000000000 0 False
//! 0 C read 136327168 4096 0.000149700 0.0001454 False
//! ```
//!
//! `pid D|C read|write|discard offset_bytes size_bytes time_s delta_s sync`.
//! `D` (issue) lines are the requests, whatever [`BlkEvent`] says; `C`
//! (completion) lines are skipped. All on device 0.

use super::common::{decimal_time, DevMap};
use crate::trace::text::{mul_field, size_field, u64_field, LineFormat};
use crate::trace::{FieldError, Format, Op, Request};

/// Which blkparse event marks a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlkEvent {
    /// `D`: issued to the device driver (what the device sees).
    #[default]
    Issue,
    /// `Q`: queued by the file system (before merging and scheduling).
    Queue,
}

impl std::str::FromStr for BlkEvent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "d" | "issue" => Ok(BlkEvent::Issue),
            "q" | "queue" => Ok(BlkEvent::Queue),
            _ => Err(format!("unknown blkparse event {s:?} (known: D or issue, Q or queue)")),
        }
    }
}

#[derive(Default)]
pub struct Blkparse {
    event: BlkEvent,
    devs: DevMap<(u32, u32)>,
    /// blkparse's closing summary has started: free text from here on.
    in_summary: bool,
    /// Event lines seen (of any action), for sniffing.
    events: u64,
}

impl Blkparse {
    pub fn new(event: BlkEvent) -> Self {
        Blkparse { event, ..Default::default() }
    }

    fn blkparse_event(
        &mut self,
        dev: &str,
        f: &mut std::str::SplitAsciiWhitespace,
    ) -> Result<Option<Request>, FieldError> {
        let bad_dev = || FieldError::new("device", format!("{dev:?} is not major,minor"));
        let (major, minor) = dev.split_once(',').ok_or_else(bad_dev)?;
        let major: u32 = major.parse().map_err(|_| bad_dev())?;
        let minor: u32 = minor.parse().map_err(|_| bad_dev())?;
        u64_field("cpu", f.next())?;
        u64_field("sequence", f.next())?;
        let time = decimal_time("time", f.next(), 9)?;
        u64_field("pid", f.next())?;
        let action = f.next().ok_or_else(|| FieldError::new("action", "missing"))?;
        if !action.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(FieldError::new("action", format!("{action:?} is not an event letter")));
        }
        self.events += 1;
        let wanted = match self.event {
            BlkEvent::Issue => "D",
            BlkEvent::Queue => "Q",
        };
        if action != wanted {
            return Ok(None);
        }
        let rwbs = f.next().ok_or_else(|| FieldError::new("rwbs", "missing"))?;
        if !rwbs.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(FieldError::new("rwbs", format!("{rwbs:?} is not an RWBS string")));
        }
        let op = if rwbs.contains('D') {
            Op::Trim
        } else if rwbs.contains('W') {
            Op::Write
        } else if rwbs.contains('R') {
            Op::Read
        } else {
            return Ok(None); // flush or no-data command
        };
        let sector = u64_field("sector", f.next())?;
        if f.next() != Some("+") {
            return Err(FieldError::new("sector", "not followed by \"+ sectors\""));
        }
        let sectors = u64_field("size", f.next())?;
        if sectors == 0 && rwbs.contains('F') {
            return Ok(None); // an empty preflush
        }
        let len = size_field("size", mul_field("size", sectors, 512)?)?;
        let addr = mul_field("sector", sector, 512)?;
        let dev = self.devs.id("device", |&k| k == (major, minor), || (major, minor))?;
        Ok(Some(Request { time, addr, len, dev, op }))
    }

    fn wiscsee_event(
        &mut self,
        pid: &str,
        f: &mut std::str::SplitAsciiWhitespace,
    ) -> Result<Option<Request>, FieldError> {
        u64_field("pid", Some(pid))?;
        let issue = match f.next() {
            Some("D") => true,
            Some("C") => false,
            Some(a) => return Err(FieldError::new("action", format!("{a:?} is neither D nor C"))),
            None => return Err(FieldError::new("action", "missing")),
        };
        let op = match f.next() {
            Some("read") => Op::Read,
            Some("write") => Op::Write,
            Some("discard") => Op::Trim,
            Some(o) => return Err(FieldError::new("op", format!("{o:?} is not read, write or discard"))),
            None => return Err(FieldError::new("op", "missing")),
        };
        let addr = u64_field("offset", f.next())?;
        let len = size_field("size", u64_field("size", f.next())?)?;
        let time = decimal_time("time", f.next(), 9)?;
        self.events += 1;
        Ok(issue.then_some(Request { time, addr, len, dev: 0, op }))
    }
}

impl LineFormat for Blkparse {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let mut f = line.split_ascii_whitespace();
        let Some(first) = f.next() else { return Ok(None) };
        if first.contains(',') {
            return self.blkparse_event(first, &mut f);
        }
        if first.bytes().all(|b| b.is_ascii_digit()) && !self.in_summary {
            return self.wiscsee_event(first, &mut f);
        }
        let summary_start = (first == "Total" || first.strip_prefix("CPU").is_some_and(|n| n.parse::<u32>().is_ok()))
            && f.next().is_some_and(|d| d.starts_with('(') && d.ends_with("):"));
        if summary_start {
            self.in_summary = true;
        }
        if self.in_summary || line.trim_start().starts_with("Input file ") {
            return Ok(None);
        }
        Err(FieldError::new(
            "line",
            "neither a blkparse event (major,minor cpu seq time pid action …) nor a WiscSee event (pid D|C op offset size time …)",
        ))
    }
}

/// Nine lines in ten parse and at least one is an event (of any action): blkparse
/// output filtered to `Q` events still sniffs as blkparse.
pub fn sniff(lines: &[&str]) -> Option<Format> {
    let mut b = Blkparse::default();
    let bad = lines.iter().filter(|l| b.parse(l).is_err()).count();
    (b.events > 0 && bad * 10 <= lines.len()).then_some(Format::Blkparse)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Input file sda.blktrace.0 added
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000001829   697  G   W 223490 + 8 [kjournald]
  8,0    3        3     0.000002898   697  P   N [kjournald]
  8,0    3        4     0.000004009   697  I   W 223490 + 8 [kjournald]
  8,0    3        5     0.000005064   697  U   N [kjournald] 1
  8,0    3        6     0.000008096   697  D  WS 223490 + 8 [kjournald]
  8,0    1        1     0.000152662     0  C  WS 223490 + 8 [0]
  8,16   0        7     0.001000000   700  D   R 100 + 16 [cat]
  8,0    0        8     0.002000000   700  D  FWS 0 + 0 [jbd2]
  8,0    0        9     0.002100000   700  D   F [jbd2]
  8,16   0       10     0.003000000   700  D   D 2048 + 2048 [fstrim]
  8,0    0       11     0.004000000   700  A   W 12912077 + 8 <- (8,2) 606224
CPU0 (8,0):
 Reads Queued:           0,        0KiB\t Writes Queued:           1,        4KiB
 Read Dispatches:        0,        0KiB\t Write Dispatches:        1,        4KiB
Total (8,0):
Throughput (R/W): 0KiB/s / 4KiB/s
Events (8,0): 7 entries
Skips: 0 forward (0 -   0.0%)";

    fn parse_all(mut b: Blkparse, text: &str) -> Vec<Request> {
        text.lines().filter_map(|l| b.parse(l).unwrap()).collect()
    }

    #[test]
    fn issue_events() {
        let reqs = parse_all(Blkparse::default(), SAMPLE);
        assert_eq!(
            reqs,
            vec![
                Request { time: 8096, addr: 223490 * 512, len: 4096, dev: 0, op: Op::Write },
                Request { time: 1_000_000, addr: 100 * 512, len: 8192, dev: 1, op: Op::Read },
                Request { time: 3_000_000, addr: 2048 * 512, len: 1 << 20, dev: 1, op: Op::Trim },
            ]
        );
    }

    #[test]
    fn queue_events() {
        let reqs = parse_all(Blkparse::new(BlkEvent::Queue), SAMPLE);
        assert_eq!(reqs, vec![Request { time: 0, addr: 223490 * 512, len: 4096, dev: 0, op: Op::Write }]);
        assert_eq!("q".parse::<BlkEvent>(), Ok(BlkEvent::Queue));
        assert_eq!("Issue".parse::<BlkEvent>(), Ok(BlkEvent::Issue));
        assert!("x".parse::<BlkEvent>().is_err());
    }

    #[test]
    fn wiscsee_events() {
        let mut b = Blkparse::default();
        let r = b.parse("35181 D read 136318976 4096 0.000003021 3.021e-06 False").unwrap().unwrap();
        assert_eq!(r, Request { time: 3021, addr: 136318976, len: 4096, dev: 0, op: Op::Read });
        assert_eq!(b.parse("0 C read 136327168 4096 0.000149700 0.0001454 False").unwrap(), None);
        let r = b.parse("1386 D discard 136314880 4096 0.439239477 4.43e-06 False").unwrap().unwrap();
        assert_eq!((r.op, r.time), (Op::Trim, 439_239_477));
        assert_eq!(b.parse("1 D write 0 512 1.5 0 True").unwrap().unwrap().op, Op::Write);
    }

    #[test]
    fn bad_lines_name_the_field() {
        let field = |l: &str| Blkparse::default().parse(l).unwrap_err().field;
        assert_eq!(field("8,x 0 1 0.0 1 D W 1 + 8 [a]"), "device");
        assert_eq!(field("8,0,1 0 1 0.0 1 D W 1 + 8 [a]"), "device");
        assert_eq!(field("8,0 c 1 0.0 1 D W 1 + 8 [a]"), "cpu");
        assert_eq!(field("8,0 0 s 0.0 1 D W 1 + 8 [a]"), "sequence");
        assert_eq!(field("8,0 0 1 -1 1 D W 1 + 8 [a]"), "time");
        assert_eq!(field("8,0 0 1 0.0 p D W 1 + 8 [a]"), "pid");
        assert_eq!(field("8,0 0 1 0.0 1"), "action");
        assert_eq!(field("8,0 0 1 0.0 1 D"), "rwbs");
        assert_eq!(field("8,0 0 1 0.0 1 D w 1 + 8"), "rwbs");
        assert_eq!(field("8,0 0 1 0.0 1 D W x + 8"), "sector");
        assert_eq!(field("8,0 0 1 0.0 1 D W 1 8"), "sector");
        assert_eq!(field("8,0 0 1 0.0 1 D W 1 + 0"), "size");
        assert_eq!(field("8,0 0 1 0.0 1 D W 1 +"), "size");
        assert_eq!(field("1 X read 0 4096 0.0 0 False"), "action");
        assert_eq!(field("1 D flush 0 4096 0.0 0 False"), "op");
        assert_eq!(field("1 D read x 4096 0.0 0 False"), "offset");
        assert_eq!(field("1 D read 0 0 0.0 0 False"), "size");
        assert_eq!(field("1 D read 0 4096 x 0 False"), "time");
        assert_eq!(field("hello world"), "line");
        assert_eq!(field("Reads Queued: 0"), "line"); // summary text before any summary header
    }

    #[test]
    fn sniffs() {
        let lines: Vec<&str> = SAMPLE.lines().collect();
        assert_eq!(sniff(&lines), Some(Format::Blkparse));
        assert_eq!(sniff(&["35181 D read 136318976 4096 0.000000000 0 False"]), Some(Format::Blkparse));
        // Q-only output still sniffs
        assert_eq!(sniff(&["8,0 3 1 0.0 697 Q W 223490 + 8 [k]"]), Some(Format::Blkparse));
        assert_eq!(sniff(&["Total (8,0):"]), None);
        assert_eq!(sniff(&["0 0 1 8 1"]), None);
    }
}
