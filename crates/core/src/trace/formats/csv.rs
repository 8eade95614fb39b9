//! Generic delimited text with a column mapping, for the formats ssdcache has no
//! reader for. The mapping is one string (`--csv-columns`), comma-separated
//! `key=value` pairs:
//!
//! ```text
//! time=0,op=3,offset=4,size=5,dev=2,header=1,sep=',',time_unit=s,offset_unit=B,size_unit=B,read=R,write=W
//! ```
//!
//! | key | value | default |
//! |---|---|---|
//! | `offset` | column (0-based) of the start address | required |
//! | `size` | column of the length | required |
//! | `time` | column of the timestamp | none: every request at time 0 |
//! | `op` | column of the operation | none: every request a read |
//! | `dev` | column of the device number (below 2^20) | none: device 0 |
//! | `header` | lines to skip at the start of the file | 0 |
//! | `sep` | one character, or `tab`, `space`, `comma`, `semicolon`, `pipe`, `whitespace` (runs of blanks) | `,` |
//! | `time_unit` | `s`, `ms`, `us`, `ns`, `100ns` (any duration, e.g. `10us`) | `s` |
//! | `offset_unit`, `size_unit` | `B`, `sector` (512 B), or a size such as `4KiB` | `B` |
//! | `read`, `write`, `trim` | the op values meaning each, `\|`-separated, any case | `r\|read`, `w\|write`, `d\|discard\|trim` |
//! | `skip` | op values whose lines carry no request and are skipped | none |
//!
//! A value holding a comma or `=` is quoted with `'…'` or `"…"` (`sep=','`).
//! Fields are trimmed of blanks and of one pair of surrounding double quotes;
//! quoted fields containing the separator are not supported. A line with fewer
//! columns than the mapping needs is an error naming the missing field; extra
//! columns are ignored.

use super::common::decimal_time;
use crate::trace::objects::{key_field, object_size, ObjectLineFormat, ObjectRequest};
use crate::trace::text::{dev_field, f64_field, mul_field, size_field, to_nanos, u64_field, LineFormat};
use crate::trace::{FieldError, Op, Request};
use std::fmt;

/// How a line is split into fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sep {
    Char(char),
    /// Runs of spaces and tabs.
    Whitespace,
}

/// Which columns of a delimited file hold what, and in which units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvMapping {
    pub time: Option<usize>,
    pub op: Option<usize>,
    pub offset: usize,
    pub size: usize,
    pub dev: Option<usize>,
    /// Lines to skip at the start.
    pub header: u64,
    pub sep: Sep,
    /// Nanoseconds per unit of the time column.
    pub time_unit_ns: u64,
    /// Bytes per unit of the offset column.
    pub offset_unit: u64,
    /// Bytes per unit of the size column.
    pub size_unit: u64,
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub trim: Vec<String>,
    pub skip: Vec<String>,
}

const KEYS: &[&str] = &[
    "time",
    "op",
    "offset",
    "size",
    "dev",
    "header",
    "sep",
    "time_unit",
    "offset_unit",
    "size_unit",
    "read",
    "write",
    "trim",
    "skip",
];

fn list(s: &str) -> Vec<String> {
    s.split('|').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect()
}

/// Splits `text` at commas outside quotes into `key=value` pairs, keys lower-cased,
/// values trimmed and unquoted (`'…'` or `"…"`).
fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ',') => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if let Some(q) = quote {
        return Err(format!("unclosed quote {q} in column mapping"));
    }
    items.push(&text[start..]);
    let mut out = Vec::new();
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            continue; // tolerate "a=1,,b=2" and a trailing comma
        }
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("{item:?} is not key=value (known keys: {})", KEYS.join(", ")))?;
        let v = v.trim();
        let v = ['\'', '"'].iter().find_map(|&q| v.strip_prefix(q).and_then(|v| v.strip_suffix(q))).unwrap_or(v);
        out.push((k.trim().to_ascii_lowercase(), v.to_string()));
    }
    Ok(out)
}

fn parse_sep(v: &str) -> Result<Sep, String> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "tab" | "\\t" => Sep::Char('\t'),
        "space" => Sep::Char(' '),
        "comma" => Sep::Char(','),
        "semicolon" => Sep::Char(';'),
        "pipe" => Sep::Char('|'),
        "whitespace" | "ws" | "blank" | "blanks" => Sep::Whitespace,
        _ => {
            let mut chars = v.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c != '\n' && c != '\r' => Sep::Char(c),
                _ => {
                    return Err(format!(
                        "sep={v:?}: give one character or tab, space, comma, semicolon, pipe, whitespace"
                    ))
                }
            }
        }
    })
}

impl std::str::FromStr for CsvMapping {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut m = CsvMapping {
            time: None,
            op: None,
            offset: usize::MAX,
            size: usize::MAX,
            dev: None,
            header: 0,
            sep: Sep::Char(','),
            time_unit_ns: 1_000_000_000,
            offset_unit: 1,
            size_unit: 1,
            read: list("r|read"),
            write: list("w|write"),
            trim: list("d|discard|trim"),
            skip: Vec::new(),
        };
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in pairs(text)? {
            if !KEYS.contains(&k.as_str()) {
                return Err(format!("unknown key {k:?} in column mapping (known keys: {})", KEYS.join(", ")));
            }
            if seen.contains(&k) {
                return Err(format!("{k} is given twice in the column mapping"));
            }
            seen.push(k.clone());
            let column = || {
                v.parse::<usize>()
                    .ok()
                    .filter(|&c| c < 1024)
                    .ok_or_else(|| format!("{k}={v:?}: a column is a number from 0 (the first column) to 1023"))
            };
            let bytes = || {
                let with_number = if v.starts_with(|c: char| c.is_ascii_digit()) { v.clone() } else { format!("1{v}") };
                crate::units::parse_bytes(&with_number)
                    .map_err(|e| format!("{k}={v:?}: {} (e.g. B, sector, 4KiB)", e.why))
            };
            match k.as_str() {
                "time" => m.time = Some(column()?),
                "op" => m.op = Some(column()?),
                "offset" => m.offset = column()?,
                "size" => m.size = column()?,
                "dev" => m.dev = Some(column()?),
                "header" => {
                    m.header = match v.to_ascii_lowercase().as_str() {
                        "true" | "yes" => 1,
                        "false" | "no" => 0,
                        n => n.parse().map_err(|_| format!("header={v:?}: give the number of header lines"))?,
                    }
                }
                "sep" => m.sep = parse_sep(&v)?,
                "time_unit" => {
                    let with_number =
                        if v.starts_with(|c: char| c.is_ascii_digit()) { v.clone() } else { format!("1{v}") };
                    m.time_unit_ns = match crate::units::parse_duration_ns(&with_number) {
                        Ok(ns) if ns > 0 && !v.trim().is_empty() => ns,
                        _ => return Err(format!("time_unit={v:?}: use s, ms, us, ns or 100ns")),
                    }
                }
                "offset_unit" => m.offset_unit = bytes()?,
                "size_unit" => m.size_unit = bytes()?,
                "read" => m.read = list(&v),
                "write" => m.write = list(&v),
                "trim" => m.trim = list(&v),
                "skip" => m.skip = list(&v),
                _ => unreachable!(),
            }
        }
        if m.offset == usize::MAX {
            return Err("the column mapping needs offset=COLUMN".into());
        }
        if m.size == usize::MAX {
            return Err("the column mapping needs size=COLUMN".into());
        }
        let roles =
            [("time", m.time), ("op", m.op), ("offset", Some(m.offset)), ("size", Some(m.size)), ("dev", m.dev)];
        for (i, (a, ca)) in roles.iter().enumerate() {
            for (b, cb) in &roles[i + 1..] {
                if ca.is_some() && ca == cb {
                    return Err(format!("{a} and {b} both name column {}", ca.unwrap()));
                }
            }
        }
        let ops = [("read", &m.read), ("write", &m.write), ("trim", &m.trim), ("skip", &m.skip)];
        for (k, values) in ops {
            if let Some(v) = values.iter().find(|v| v.contains(['\'', '"']) || v.contains(char::is_control)) {
                return Err(format!("{k}: op value {v:?} holds a quote or control character"));
            }
        }
        for (i, (a, va)) in ops.iter().enumerate() {
            for (b, vb) in &ops[i + 1..] {
                if let Some(v) = va.iter().find(|v| vb.iter().any(|w| w.eq_ignore_ascii_case(v))) {
                    return Err(format!("op value {v:?} is both {a} and {b}"));
                }
            }
        }
        Ok(m)
    }
}

impl fmt::Display for CsvMapping {
    /// The canonical mapping string; parsing it gives the same mapping back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.time {
            write!(f, "time={c},")?;
        }
        if let Some(c) = self.op {
            write!(f, "op={c},")?;
        }
        write!(f, "offset={},size={},", self.offset, self.size)?;
        if let Some(c) = self.dev {
            write!(f, "dev={c},")?;
        }
        let sep = match self.sep {
            Sep::Whitespace => "whitespace".to_string(),
            Sep::Char('\t') => "tab".to_string(),
            Sep::Char('\'') => "\"'\"".to_string(),
            Sep::Char(c) => format!("'{c}'"),
        };
        write!(
            f,
            "header={},sep={sep},time_unit={}ns,offset_unit={}B,size_unit={}B",
            self.header, self.time_unit_ns, self.offset_unit, self.size_unit
        )?;
        for (k, v) in [("read", &self.read), ("write", &self.write), ("trim", &self.trim), ("skip", &self.skip)] {
            write!(f, ",{k}='{}'", v.join("|"))?;
        }
        Ok(())
    }
}

/// The generic CSV reader.
pub struct Csv {
    m: CsvMapping,
    /// Header lines still to skip.
    header_left: u64,
    /// Columns the mapping needs, to size the field table.
    ncols: usize,
    /// `10^k` when the time unit is a power of ten nanoseconds (exact decimal path).
    pow10: Option<u32>,
    fields: Vec<(usize, usize)>,
}

impl Csv {
    pub fn new(m: CsvMapping) -> Self {
        let ncols = [m.time, m.op, Some(m.offset), Some(m.size), m.dev].iter().flatten().max().unwrap() + 1;
        let pow10 = (0..=19).find(|&k| 10u64.checked_pow(k) == Some(m.time_unit_ns));
        Csv { header_left: m.header, m, ncols, pow10, fields: Vec::with_capacity(ncols) }
    }

    fn field<'a>(&self, line: &'a str, col: usize) -> Option<&'a str> {
        self.fields.get(col).map(|&(a, b)| {
            let f = line[a..b].trim();
            f.strip_prefix('"').and_then(|f| f.strip_suffix('"')).unwrap_or(f)
        })
    }
}

fn matches(values: &[String], v: &str) -> bool {
    values.iter().any(|x| x.eq_ignore_ascii_case(v))
}

impl Csv {
    /// Splits `line` into the mapped fields and reads its time and op: `None`
    /// for a header line or a skipped op (shared by block and object mode).
    fn time_and_op(&mut self, line: &str) -> Result<Option<(u64, Op)>, FieldError> {
        if self.header_left > 0 {
            self.header_left -= 1;
            return Ok(None);
        }
        // Field boundaries of the columns the mapping needs (no allocation per line).
        self.fields.clear();
        let base = line.as_ptr() as usize;
        match self.m.sep {
            Sep::Char(c) => {
                for f in line.split(c).take(self.ncols) {
                    let a = f.as_ptr() as usize - base;
                    self.fields.push((a, a + f.len()));
                }
            }
            Sep::Whitespace => {
                for f in line.split([' ', '\t']).filter(|f| !f.is_empty()).take(self.ncols) {
                    let a = f.as_ptr() as usize - base;
                    self.fields.push((a, a + f.len()));
                }
            }
        }
        let m = &self.m;
        let op = match m.op {
            None => Op::Read,
            Some(c) => {
                let v = self.field(line, c).ok_or_else(|| FieldError::new("op", "missing"))?;
                if matches(&m.read, v) {
                    Op::Read
                } else if matches(&m.write, v) {
                    Op::Write
                } else if matches(&m.trim, v) {
                    Op::Trim
                } else if matches(&m.skip, v) {
                    return Ok(None);
                } else {
                    return Err(FieldError::new(
                        "op",
                        format!(
                            "{v:?} is not a read ({}), write ({}) or trim ({})",
                            m.read.join("|"),
                            m.write.join("|"),
                            m.trim.join("|")
                        ),
                    ));
                }
            }
        };
        let time = match (m.time, self.pow10) {
            (None, _) => 0,
            (Some(c), Some(k)) => decimal_time("time", self.field(line, c), k)?,
            (Some(c), None) => to_nanos("time", f64_field("time", self.field(line, c))?, m.time_unit_ns as f64)?,
        };
        Ok(Some((time, op)))
    }

    /// A line in object mode: the `offset` column is the object's key (a number,
    /// or text hashed), `size` its size in bytes (times `size_unit`).
    pub fn parse_object(&mut self, line: &str) -> Result<Option<ObjectRequest>, FieldError> {
        let Some((time, op)) = self.time_and_op(line)? else { return Ok(None) };
        let key = key_field("offset", self.field(line, self.m.offset))?;
        let size = mul_field("size", u64_field("size", self.field(line, self.m.size))?, self.m.size_unit)?;
        Ok(Some(ObjectRequest { time, key, size: object_size("size", size)?, op }))
    }
}

/// The generic CSV reader in object mode ([`Csv::parse_object`]).
pub struct CsvObjects(pub Csv);

impl ObjectLineFormat for CsvObjects {
    fn parse(&mut self, line: &str) -> Result<Option<ObjectRequest>, FieldError> {
        self.0.parse_object(line)
    }
}

impl LineFormat for Csv {
    fn parse(&mut self, line: &str) -> Result<Option<Request>, FieldError> {
        let Some((time, op)) = self.time_and_op(line)? else { return Ok(None) };
        let m = &self.m;
        let addr = mul_field("offset", u64_field("offset", self.field(line, m.offset))?, m.offset_unit)?;
        let len = size_field("size", mul_field("size", u64_field("size", self.field(line, m.size))?, m.size_unit)?)?;
        let dev = match m.dev {
            None => 0,
            Some(c) => dev_field("dev", u64_field("dev", self.field(line, c))?)?,
        };
        Ok(Some(Request { time, addr, len, dev, op }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(s: &str) -> CsvMapping {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_the_documented_example() {
        let m = mapping(
            "time=0,op=3,offset=4,size=5,dev=2,header=1,sep=',',time_unit=s,offset_unit=B,size_unit=B,read=R,write=W",
        );
        assert_eq!((m.time, m.op, m.offset, m.size, m.dev, m.header), (Some(0), Some(3), 4, 5, Some(2), 1));
        assert_eq!((m.sep, m.time_unit_ns, m.offset_unit, m.size_unit), (Sep::Char(','), 1_000_000_000, 1, 1));
        assert_eq!((m.read.clone(), m.write.clone()), (vec!["R".to_string()], vec!["W".to_string()]));
        let mut c = Csv::new(m);
        assert_eq!(c.parse("time,x,dev,op,offset,size").unwrap(), None);
        let r = c.parse("1.5,hm,3,w,4096,512").unwrap().unwrap();
        assert_eq!(r, Request { time: 1_500_000_000, addr: 4096, len: 512, dev: 3, op: Op::Write });
        let r = c.parse(" 2 ,hm, 0 ,\"R\",0,4096,extra").unwrap().unwrap();
        assert_eq!(r, Request { time: 2_000_000_000, addr: 0, len: 4096, dev: 0, op: Op::Read });
    }

    #[test]
    fn units_separators_and_defaults() {
        let mut c = Csv::new(mapping("offset=1,size=2,sep=whitespace,offset_unit=sector,size_unit=4KiB"));
        let r = c.parse("x   8\t2").unwrap().unwrap();
        assert_eq!(r, Request { time: 0, addr: 4096, len: 8192, dev: 0, op: Op::Read });
        let mut c = Csv::new(mapping("time=0,offset=1,size=2,sep=tab,time_unit=100ns,op=3,read=1,write=0,skip=9"));
        assert_eq!(c.parse("128166385295514663\t0\t1\t0").unwrap().unwrap().time, 12_816_638_529_551_466_300);
        assert_eq!(c.parse("1\t0\t1\t1").unwrap().unwrap().op, Op::Read);
        assert_eq!(c.parse("1\t0\t1\t9").unwrap(), None);
        let mut c = Csv::new(mapping("time=0,offset=1,size=2,time_unit=min"));
        assert_eq!(c.parse("1.5,0,1").unwrap().unwrap().time, 90_000_000_000);
        let mut c = Csv::new(mapping("time=0, offset=1 ,size=2,op=3, sep=';' ,time_unit=ms"));
        assert_eq!(
            c.parse("2.5;0;1;DISCARD").unwrap().unwrap(),
            Request { time: 2_500_000, addr: 0, len: 1, dev: 0, op: Op::Trim }
        );
        assert_eq!(mapping("offset=0,size=1,header=true").header, 1);
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "time=0,op=3,offset=4,size=5,dev=2,header=1,sep=',',time_unit=s,offset_unit=B,size_unit=B,read=R,write=W",
            "offset=1,size=2,sep=whitespace,offset_unit=sector,size_unit=4KiB,skip=x|y",
            "offset=1,size=0,sep=tab,time_unit=100ns,time=2",
            "offset=1,size=0,sep='|'",
        ] {
            let m = mapping(s);
            assert_eq!(mapping(&m.to_string()), m, "{s} -> {m}");
        }
    }

    /// Fuzz crash (csv target): an op value holding quotes printed as a mapping
    /// that did not parse back. Such values are now rejected.
    #[test]
    fn regression_quoted_op_value_round_trip() {
        let text = "time=0,op=3,offset=4,size=5,dev=2,header=1,sep=',',time_unit=s,offset_unit=B,size_unit=B,\
                    read=||||?|\u{f}\0\0\0\0\0\0\0ep=',m,1,W,04,,'0t";
        assert!(text.parse::<CsvMapping>().unwrap_err().contains("read"));
        let text = "offset=4,size=5,read='a,b|c=d'";
        let m = mapping(text);
        assert_eq!(m.read, ["a,b", "c=d"]);
        assert_eq!(mapping(&m.to_string()), m);
    }

    #[test]
    fn bad_mappings_say_why() {
        let err = |s: &str| s.parse::<CsvMapping>().unwrap_err();
        assert!(err("size=1").contains("offset"), "{}", err("size=1"));
        assert!(err("offset=1").contains("size"));
        assert!(err("offset=1,size=2,colour=3").contains("unknown key \"colour\""));
        assert!(err("offset=1,size=2,offset=3").contains("twice"));
        assert!(err("offset=x,size=2").contains("column"));
        assert!(err("offset=1,size=1").contains("both name column 1"));
        assert!(err("offset=1,size=2,sep=ab").contains("sep"));
        assert!(err("offset=1,size=2,sep='").contains("unclosed quote"));
        assert!(err("offset=1,size=2,time_unit=parsec").contains("time_unit"));
        assert!(err("offset=1,size=2,time_unit=").contains("time_unit"));
        assert!(err("offset=1,size=2,size_unit=0").contains("size_unit"));
        assert!(err("offset=1,size=2,read=x,write=X").contains("both read and write"));
        assert!(err("offset=1,size=2,header=some").contains("header"));
        assert!(err("offset=1,size=2,nonsense").contains("key=value"));
        assert!(err("offset=1,size=2,read=a'b'c").contains("quote"));
        assert!(err("offset=1,size=2,write=\"'\"").contains("quote"));
        assert!(err("offset=1,size=2,trim=a\u{0}b").contains("control"));
    }

    #[test]
    fn bad_lines_name_the_field() {
        let mut c = Csv::new(mapping("time=0,op=1,offset=2,size=3,dev=4"));
        let mut field = |l: &str| c.parse(l).unwrap_err().field;
        assert_eq!(field("x,r,0,1,0"), "time");
        assert_eq!(field("0,q,0,1,0"), "op");
        assert_eq!(field("0,r,-1,1,0"), "offset");
        assert_eq!(field("0,r,0,0,0"), "size");
        assert_eq!(field("0,r,0,1,9999999"), "dev");
        assert_eq!(field("0,r,0,1"), "dev");
        assert_eq!(field("0"), "op");
        let mut c = Csv::new(mapping("offset=0,size=1,offset_unit=sector"));
        assert_eq!(c.parse("36028797018963968,1").unwrap_err().field, "offset");
    }
}
