//! Sizes and durations with units, as every interface takes them (`32MiB`, `4KiB`, `10ms`).

use thiserror::Error;

/// (The text is quoted through [`excerpt`](crate::excerpt::excerpt): a number
/// of 300 digits from Python is clipped, not printed whole.)
#[derive(Debug, Error, PartialEq)]
#[error("{what} {}: {why}", crate::excerpt::excerpt(text))]
pub struct UnitError {
    pub what: &'static str,
    pub text: String,
    pub why: String,
}

fn err(what: &'static str, text: &str, why: impl Into<String>) -> UnitError {
    UnitError { what, text: text.to_string(), why: why.into() }
}

/// Splits `"64MiB"` into `("64", "MiB")`: the number (digits, `_`, `.`) and the unit.
fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    (num, unit.trim())
}

/// Why [`scaled`] found no `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaled {
    /// Not a number: digits with `_` separators and at most one `.`.
    NotANumber,
    /// Not a whole number once scaled (`0.3B`, `1.5` requests).
    NotWhole,
    /// 2^64 or more.
    TooLarge,
}

/// `num` (digits, `_` separators, at most one `.`) times `mult`, as a whole
/// `u64`. A whole `num` is read exactly, so a 20-digit value is neither
/// rounded through a float nor clamped: 2^64 and more are [`Scaled::TooLarge`].
/// With `round`, a fraction is rounded to the nearest whole (durations in
/// ns); without, it must come out whole.
pub fn scaled(num: &str, mult: u64, round: bool) -> Result<u64, Scaled> {
    let digits = num.replace('_', "");
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // (only more than 38 digits fail to parse; that is too large too)
        let n = digits.parse::<u128>().ok().and_then(|n| n.checked_mul(mult as u128));
        return n.and_then(|n| u64::try_from(n).ok()).ok_or(Scaled::TooLarge);
    }
    let x = digits.parse::<f64>().ok().filter(|x| !x.is_nan()).ok_or(Scaled::NotANumber)? * mult as f64;
    let x = if round { x.round() } else { x };
    // (2^64 is the first float a u64 cannot hold; `as u64` would clamp it)
    if !x.is_finite() || x >= 18_446_744_073_709_551_616.0 {
        return Err(Scaled::TooLarge);
    }
    if x.fract() != 0.0 {
        return Err(Scaled::NotWhole);
    }
    Ok(x as u64)
}

/// Parses a byte size: `4096`, `4KiB`, `64MiB`, `1.5GiB`, `10KB` (decimal), `512B`.
/// Sizes must be positive whole numbers of bytes, below 2^64.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text);
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "s" | "sector" | "sectors" => 512,
        _ if num.is_empty() => return Err(err("size", text, "expected a number with a unit, e.g. 64MiB")),
        _ => return Err(err("size", text, format!("unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB)"))),
    };
    match scaled(num, mult, false) {
        Ok(0) => Err(err("size", text, "must be greater than zero")),
        Ok(bytes) => Ok(bytes),
        Err(Scaled::NotANumber) => Err(err("size", text, "expected a number with a unit, e.g. 64MiB")),
        Err(Scaled::NotWhole) => Err(err("size", text, "must be a whole number of bytes")),
        Err(Scaled::TooLarge) => Err(err("size", text, "too large: a size is at most 2^64 - 1 bytes (16 EiB)")),
    }
}

/// Smallest page anything is simulated with (a cache page, `--page`; a NAND
/// page, `ftl(page=)`): one disk sector.
pub const MIN_PAGE_BYTES: u64 = 512;
/// Largest page: 1 MiB, the largest `serve --segment` (so `sim --page` can
/// model every cache `serve` runs) and 64 times the largest NAND page of the
/// presets (16 KiB).
pub const MAX_PAGE_BYTES: u64 = 1 << 20;

/// Parses a page size: a multiple of 512 B from 512 B to 1 MiB. Per-page
/// state (maps, footprints) grows as the page shrinks, so a page of a few
/// bytes, which no device has, would multiply memory by thousands.
pub fn parse_page_bytes(text: &str) -> Result<u64, UnitError> {
    let bytes = parse_bytes(text)?;
    if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&bytes) || !bytes.is_multiple_of(MIN_PAGE_BYTES) {
        return Err(err("size", text, "a page must be a multiple of 512 B from 512 B to 1 MiB"));
    }
    Ok(bytes)
}

/// Parses a ratio: `25%` or `0.25`. Must lie in [0, 1].
pub fn parse_ratio(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let value =
        if let Some(p) = t.strip_suffix('%') { p.trim().parse::<f64>().map(|v| v / 100.0) } else { t.parse::<f64>() }
            .map_err(|_| err("ratio", text, "expected a percentage like 25% or a fraction like 0.25"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(err("ratio", text, "must lie between 0% and 100%"));
    }
    Ok(value)
}

/// Parses a duration: `10ms`, `1.5s`, `250us`, `100ns`, `2min`, `24h`, `1d`. Bare numbers are seconds.
/// Rounded to whole ns; at most 2^64 - 1 ns.
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text);
    let mult: u64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "" | "s" => 1_000_000_000,
        "min" | "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ if num.is_empty() => return Err(err("duration", text, "expected a number with a unit, e.g. 10ms")),
        _ => return Err(err("duration", text, format!("unknown unit {unit:?} (use ns, us, ms, s, min, h, d)"))),
    };
    match scaled(num, mult, true) {
        Ok(ns) => Ok(ns),
        Err(Scaled::TooLarge) => {
            Err(err("duration", text, "too long: a duration is at most 2^64 - 1 ns (about 584 years)"))
        }
        Err(_) => Err(err("duration", text, "expected a number with a unit, e.g. 10ms")),
    }
}

/// Formats bytes with the largest binary unit that divides them exactly: 65536 -> "64KiB".
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{}", bytes / size, name);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("10KB").unwrap(), 10_000);
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("-4KiB").is_err());
        assert!(parse_bytes("4 furlongs").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("0.3B").is_err());
    }

    #[test]
    fn ratios_and_durations() {
        assert_eq!(parse_ratio("25%").unwrap(), 0.25);
        assert_eq!(parse_ratio("0.5").unwrap(), 0.5);
        assert!(parse_ratio("150%").is_err());
        assert_eq!(parse_duration_ns("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_duration_ns("24h").unwrap(), 86_400_000_000_000);
        assert!(parse_duration_ns("3 fortnights").is_err());
    }

    #[test]
    fn values_of_2_to_the_64_and_more_are_refused_not_clamped() {
        // (each used to parse as 2^64 - 1, or say "whole number" of a whole number)
        let max = u64::MAX.to_string();
        assert_eq!(parse_bytes(&max).unwrap(), u64::MAX, "read exactly, not through a float");
        assert_eq!(parse_bytes("9007199254740993").unwrap(), 9_007_199_254_740_993);
        for big in ["18446744073709551616", "1180591620717411303424", "16777216TiB", "20000000TB"] {
            let e = parse_bytes(big).unwrap_err().to_string();
            assert!(e.contains("too large") && e.contains("at most 2^64 - 1 bytes"), "{big}: {e}");
        }
        let huge = format!("1{}", "0".repeat(300));
        let e = parse_bytes(&huge).unwrap_err().to_string();
        assert!(e.contains("too large") && e.len() < 200, "the number is clipped: {e}");
        assert_eq!(parse_duration_ns("18446744073709551615ns").unwrap(), u64::MAX);
        for long in ["18446744073709551616ns", "18446744073.709551616s", "213504d", "1e3"] {
            let e = parse_duration_ns(long).unwrap_err().to_string();
            assert!(e.starts_with(&format!("duration {long:?}: ")), "{long}: {e}");
        }
        let e = parse_duration_ns("213504d").unwrap_err().to_string();
        assert!(e.contains("too long") && e.contains("2^64 - 1 ns"), "{e}");
        assert_eq!(parse_duration_ns("1.5ns").unwrap(), 2);
    }

    #[test]
    fn scaled_reads_whole_numbers_exactly() {
        assert_eq!(scaled("1_000", 1000, false), Ok(1_000_000));
        assert_eq!(scaled("9007199254740993", 1, false), Ok(9_007_199_254_740_993));
        assert_eq!(scaled("1.5", 1000, false), Ok(1500));
        assert_eq!(scaled("1.5", 1, false), Err(Scaled::NotWhole));
        assert_eq!(scaled("1.5.", 1, false), Err(Scaled::NotANumber));
        assert_eq!(scaled("18446744073709551616", 1, false), Err(Scaled::TooLarge));
        assert_eq!(scaled("18446744073709551616.0", 1, false), Err(Scaled::TooLarge));
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(65536), "64KiB");
        assert_eq!(format_bytes(64 << 20), "64MiB");
        assert_eq!(format_bytes(1000), "1000B");
    }
}
