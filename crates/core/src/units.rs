//! Sizes and durations with units, as every interface takes them (`32MiB`, `4KiB`, `10ms`).

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
#[error("{what} {text:?}: {why}")]
pub struct UnitError {
    pub what: &'static str,
    pub text: String,
    pub why: String,
}

fn err(what: &'static str, text: &str, why: impl Into<String>) -> UnitError {
    UnitError { what, text: text.to_string(), why: why.into() }
}

/// Splits `"64MiB"` into `(64.0, "MiB")`.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    let num: f64 = num.replace('_', "").parse().ok()?;
    Some((num, unit.trim()))
}

/// Parses a byte size: `4096`, `4KiB`, `64MiB`, `1.5GiB`, `10KB` (decimal), `512B`.
/// Sizes must be positive whole numbers of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let (num, unit) =
        split_number(text).ok_or_else(|| err("size", text, "expected a number with a unit, e.g. 64MiB"))?;
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "s" | "sector" | "sectors" => 512.0,
        _ => return Err(err("size", text, format!("unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB)"))),
    };
    let bytes = num * mult;
    if !(bytes.is_finite()) || bytes <= 0.0 {
        return Err(err("size", text, "must be greater than zero"));
    }
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(err("size", text, "must be a whole number of bytes"));
    }
    Ok(bytes as u64)
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
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let (num, unit) =
        split_number(text).ok_or_else(|| err("duration", text, "expected a number with a unit, e.g. 10ms"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "min" | "m" => 60e9,
        "h" => 3600e9,
        "d" => 86400e9,
        _ => return Err(err("duration", text, format!("unknown unit {unit:?} (use ns, us, ms, s, min, h, d)"))),
    };
    let ns = num * mult;
    if !ns.is_finite() || ns < 0.0 || ns > u64::MAX as f64 {
        return Err(err("duration", text, "out of range"));
    }
    Ok(ns.round() as u64)
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
    fn formatting() {
        assert_eq!(format_bytes(65536), "64KiB");
        assert_eq!(format_bytes(64 << 20), "64MiB");
        assert_eq!(format_bytes(1000), "1000B");
    }
}
