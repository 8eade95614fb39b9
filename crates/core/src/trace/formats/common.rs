//! Helpers the format readers share beyond [`crate::trace::text`]'s field
//! helpers: exact decimal timestamps, device-id assignment, and the check the
//! sniffers run ("does every line parse in this format?").

use crate::trace::text::LineFormat;
use crate::trace::FieldError;
use hashbrown::HashMap;
use std::hash::Hash;

/// Parses a non-negative decimal time such as `1455591804.310701000` in units of
/// `10^pow10` nanoseconds (9: seconds, 6: ms, 3: µs, 2: Windows filetime ticks,
/// 0: ns) into nanoseconds, exactly: no `f64` rounding, so nanosecond digits of
/// Unix-epoch timestamps survive. Digits below a nanosecond are rounded half up.
/// Exponent forms (`3.021e-06`) go through `f64`.
pub fn decimal_time(field: &'static str, s: Option<&str>, pow10: u32) -> Result<u64, FieldError> {
    let s = s.ok_or_else(|| FieldError::new(field, "missing"))?.trim();
    let bad = || FieldError::new(field, format!("{s:?} is not a non-negative number"));
    let range = || FieldError::new(field, format!("{s} is out of range"));
    if s.contains(['e', 'E']) {
        let v: f64 = s.parse().map_err(|_| bad())?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad());
        }
        let ns = v * 10f64.powi(pow10 as i32);
        return if ns < u64::MAX as f64 { Ok(ns.round() as u64) } else { Err(range()) };
    }
    let digits = s.strip_prefix('+').unwrap_or(s);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, f),
        None => (digits, ""),
    };
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let scale = 10u64.pow(pow10);
    let mut ns: u64 = 0;
    for b in int.bytes() {
        ns = ns.checked_mul(10).and_then(|v| v.checked_add((b - b'0') as u64)).ok_or_else(range)?;
    }
    ns = ns.checked_mul(scale).ok_or_else(range)?;
    let mut frac_ns: u64 = 0;
    let fb = frac.as_bytes();
    for i in 0..pow10 as usize {
        frac_ns = frac_ns * 10 + fb.get(i).map_or(0, |b| (b - b'0') as u64);
    }
    if fb.get(pow10 as usize).is_some_and(|&b| b >= b'5') {
        frac_ns += 1;
    }
    ns.checked_add(frac_ns).ok_or_else(range)
}

/// The value of the leading ASCII digits of `s` (wrapping past 19 digits) and their count.
#[inline]
fn digits(s: &[u8]) -> (u64, usize) {
    let mut v: u64 = 0;
    for (i, &b) in s.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return (v, i);
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
    }
    (v, s.len())
}

/// A cursor over a line's bytes for the formats' fast paths ([`LineFormat::parse_bytes`]).
/// Each step accepts only the plain form of a field (ASCII digits, no sign, no
/// spaces) and gives `None` for anything else, so that the caller falls back to
/// its `&str` parser, which then gives the same result or words the error.
pub struct Cursor<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(line: &'a [u8]) -> Self {
        Cursor { line, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.line.get(self.pos).copied()
    }

    /// The next byte, whatever it is.
    #[inline]
    pub fn byte(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    /// Digits as an integer: 1 to 19 of them (so no overflow; longer numbers take the slow path).
    #[inline]
    pub fn uint(&mut self) -> Option<u64> {
        let (v, n) = digits(&self.line[self.pos..]);
        if n == 0 || n > 19 {
            return None;
        }
        self.pos += n;
        Some(v)
    }

    /// `int[.frac]` in units of 10^pow10 ns (pow10 ≤ 9), as [`decimal_time`] reads it.
    #[inline]
    pub fn decimal(&mut self, pow10: u32) -> Option<u64> {
        const POW10: [u64; 10] =
            [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];
        let pow10 = pow10 as usize;
        let mut ns = self.uint()?.checked_mul(*POW10.get(pow10)?)?;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let rest = &self.line[self.pos..];
            // the first pow10 digits are units, the next one rounds, the rest only count
            let (mut frac, mut n, mut round_up) = (0u64, 0usize, false);
            for &b in rest {
                let d = b.wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                if n < pow10 {
                    frac = frac * 10 + d as u64;
                } else if n == pow10 {
                    round_up = d >= 5;
                }
                n += 1;
            }
            ns = ns.checked_add(frac * POW10[pow10 - n.min(pow10)] + round_up as u64)?;
            self.pos += n;
        }
        Some(ns)
    }

    /// The bytes up to the next comma (or the end), not consuming the comma.
    #[inline]
    pub fn field(&mut self) -> &'a [u8] {
        let rest = &self.line[self.pos..];
        let n = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    /// Steps over a comma; `None` if there is none here.
    #[inline]
    pub fn comma(&mut self) -> Option<()> {
        (self.byte()? == b',').then_some(())
    }

    /// The rest of the line.
    pub fn rest(&self) -> &'a [u8] {
        &self.line[self.pos..]
    }

    /// True at the end of the line.
    pub fn at_end(&self) -> bool {
        self.pos == self.line.len()
    }
}

/// Assigns small device ids (0, 1, 2 …) to device names in order of first
/// appearance, at most [`crate::key::MAX_DEVICES`] of them.
pub struct DevMap<K> {
    ids: HashMap<K, u32>,
    last: Option<(K, u32)>,
}

impl<K> Default for DevMap<K> {
    fn default() -> Self {
        DevMap { ids: HashMap::new(), last: None }
    }
}

impl<K: Hash + Eq + Clone> DevMap<K> {
    /// The id of the device `is_key` recognises; `make` builds its owned key, called
    /// only when the device differs from the previous line's (so a trace that stays
    /// on one device allocates nothing per line).
    pub fn id(
        &mut self,
        field: &'static str,
        is_key: impl Fn(&K) -> bool,
        make: impl FnOnce() -> K,
    ) -> Result<u32, FieldError> {
        if let Some((k, id)) = &self.last {
            if is_key(k) {
                return Ok(*id);
            }
        }
        let key = make();
        let id = match self.ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.ids.len() as u64;
                if id >= crate::key::MAX_DEVICES {
                    return Err(FieldError::new(
                        field,
                        format!("more than {} distinct devices", crate::key::MAX_DEVICES),
                    ));
                }
                self.ids.insert(key.clone(), id as u32);
                id as u32
            }
        };
        self.last = Some((key, id));
        Ok(id)
    }
}

/// What a format's parser made of a sample of lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// Lines that gave a request.
    pub requests: usize,
    /// Lines that parsed but carry no request (headers, comments, other events).
    pub other: usize,
    /// Lines the parser rejected.
    pub bad: usize,
}

impl Probe {
    /// The format fits: some requests, and at most one line in ten rejected.
    pub fn fits(&self) -> bool {
        self.requests > 0 && self.bad * 10 <= self.requests + self.other + self.bad
    }
}

/// Runs `format`'s own parser over `lines` and counts what they held. Sniffers
/// build on this so that whatever they accept, the reader then reads.
pub fn probe<F: LineFormat>(mut format: F, lines: &[&str]) -> Probe {
    let mut p = Probe::default();
    for line in lines {
        match format.parse(line) {
            Ok(Some(_)) => p.requests += 1,
            Ok(None) => p.other += 1,
            Err(_) => p.bad += 1,
        }
    }
    p
}

/// True if `line`'s comma-separated fields are `names`, ignoring case and spaces.
pub fn is_header(line: &str, names: &[&str]) -> bool {
    let mut fields = line.split(',');
    names.iter().all(|n| fields.next().is_some_and(|f| f.trim().eq_ignore_ascii_case(n))) && fields.next().is_none()
}

/// Lines for the tests that hold a format's fast path to its `&str` parser:
/// comma-separated fields that are often plain and sometimes not (signs, spaces,
/// exponents, long numbers, other words, non-ASCII and non-UTF-8 bytes).
#[cfg(test)]
pub fn odd_lines() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let field = prop_oneof![
        4 => "[0-9]{1,6}",
        2 => "[0-9]{15,22}",
        3 => "[0-9]{1,12}\\.[0-9]{0,12}",
        2 => "(Read|Write|read|WRITE|Trim|r|w|R|W|x|hm|src1|timestamp)",
        1 => "[ +eE.0-9a-z-]{0,6}",
        1 => "(ü|h{250,260}| hm|0x1f|\\t1)",
    ];
    (proptest::collection::vec(field, 1..10), proptest::collection::vec(any::<u8>(), 0..3), any::<bool>()).prop_map(
        |(fields, junk, add_junk)| {
            let mut line = fields.join(",").into_bytes();
            if add_junk {
                line.extend(junk);
            }
            line
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_times_are_exact() {
        assert_eq!(decimal_time("t", Some("1455591804.310701000"), 9).unwrap(), 1_455_591_804_310_701_000);
        assert_eq!(decimal_time("t", Some("0.000003021"), 9).unwrap(), 3021);
        assert_eq!(decimal_time("t", Some("223.412"), 6).unwrap(), 223_412_000);
        assert_eq!(decimal_time("t", Some("128166385295514663"), 2).unwrap(), 12_816_638_529_551_466_300);
        assert_eq!(decimal_time("t", Some("5"), 9).unwrap(), 5_000_000_000);
        assert_eq!(decimal_time("t", Some(".5"), 9).unwrap(), 500_000_000);
        assert_eq!(decimal_time("t", Some("7."), 0).unwrap(), 7);
        assert_eq!(decimal_time("t", Some("1.0000000005"), 9).unwrap(), 1_000_000_001); // rounds half up
        assert_eq!(decimal_time("t", Some("1.00000000049"), 9).unwrap(), 1_000_000_000);
        assert_eq!(decimal_time("t", Some("3.021e-06"), 9).unwrap(), 3021);
        for bad in ["", ".", "-1", "1.2.3", "x", "1e999", "-1e3", "nan", "99999999999999999999"] {
            let e = decimal_time("stamp", Some(bad), 9).unwrap_err();
            assert_eq!(e.field, "stamp", "{bad}");
        }
        assert_eq!(decimal_time("t", None, 9).unwrap_err().msg, "missing");
    }

    #[test]
    fn dev_map_assigns_in_order() {
        let mut m: DevMap<(String, u64)> = DevMap::default();
        let mut id = |h: &str, d: u64| m.id("dev", |k| k.0 == h && k.1 == d, || (h.to_string(), d)).unwrap();
        assert_eq!(id("hm", 0), 0);
        assert_eq!(id("hm", 0), 0);
        assert_eq!(id("hm", 1), 1);
        assert_eq!(id("src", 0), 2);
        assert_eq!(id("hm", 0), 0);
        assert_eq!(id("hm", 1), 1);
    }

    #[test]
    fn headers() {
        assert!(is_header("version,time,op,size,lbn", &["version", "time", "op", "size", "lbn"]));
        assert!(is_header(" Version , TIME,op,size,lbn", &["version", "time", "op", "size", "lbn"]));
        assert!(!is_header("version,time,op,size", &["version", "time", "op", "size", "lbn"]));
        assert!(!is_header("version,time,op,size,lbn,x", &["version", "time", "op", "size", "lbn"]));
    }
}
