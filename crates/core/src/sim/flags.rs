//! Every simulation option parsed from text, in one place: cache sizes (bytes or
//! a share of the footprint), pages, modes, intervals, warm-ups, queue depths
//! and repeats. The command line and the Python package both parse with these,
//! so a bad value gets the same message from both (named after the command
//! line's flag); what a share or a warm-up resolves to is `relative`'s job.

use super::queue::{self, QueueSpec};
use super::SimError;
use crate::policy::Mode;
use crate::units::{parse_bytes, parse_duration_ns, parse_page_bytes, scaled, Scaled};
use crate::Nanos;

/// A cache size (`--cache`): `64MiB`, `1.5GiB`, `4096` (bytes).
pub fn parse_cache(text: &str) -> Result<u64, SimError> {
    parse_bytes(text).map_err(|e| SimError::Config(format!("--cache: {e}")))
}

/// A cache page size (`--page`): `4KiB`; a multiple of 512 B from 512 B to
/// 1 MiB ([`parse_page_bytes`]).
pub fn parse_page(text: &str) -> Result<u64, SimError> {
    parse_page_bytes(text).map_err(|e| SimError::Config(format!("--page: {e}")))
}

/// A cache mode (`--mode`): `write-back`, `wb`, `write_through`…
pub fn parse_mode(text: &str) -> Result<Mode, SimError> {
    text.parse::<Mode>().map_err(|e| SimError::Config(format!("--mode: {e}")))
}

/// A series interval (`--interval`): `1d`, `1h`, `500ms`; bare numbers are seconds.
pub fn parse_interval(text: &str) -> Result<crate::Nanos, SimError> {
    parse_duration_ns(text).map_err(|e| SimError::Config(format!("--interval: {e}")))
}

/// A queue depth (`--queue-depth 32`; from Python, an int's digits): a
/// number too large for 32 bits is out of range, not "not a whole number".
pub fn parse_queue_depth(text: &str) -> Result<u32, SimError> {
    let t = text.trim();
    t.parse::<u32>().map_err(|_| {
        SimError::Config(if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            format!("--queue-depth {t}: out of range 1..={}", queue::MAX_DEPTH)
        } else {
            format!("--queue-depth: {t:?} is not a whole number")
        })
    })
}

/// Queue depth of a queueing replay asked for by an inter-arrival scale alone.
pub const DEFAULT_QUEUE_DEPTH: u32 = 32;

/// The queueing replay asked for: none without a depth or a scale; either one
/// alone implies the other's default (depth [`DEFAULT_QUEUE_DEPTH`], scale 1 =
/// the trace's own timing).
pub fn queue_spec(depth: Option<u32>, iat_scale: Option<f64>) -> Result<Option<QueueSpec>, SimError> {
    if depth.is_none() && iat_scale.is_none() {
        return Ok(None);
    }
    let q = QueueSpec { depth: depth.unwrap_or(DEFAULT_QUEUE_DEPTH), iat_scale: iat_scale.unwrap_or(1.0) };
    q.check().map_err(|e| SimError::Config(format!("--queue-depth/--iat-scale: {e}")))?;
    Ok(Some(q))
}

/// An exact fraction in (0, 1] (`12.5%` is 125/1000), so that a share of a
/// count rounds the same way everywhere, with no floating-point surprise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    num: u64,
    den: u64,
}

impl Share {
    /// `text` is a percentage, `"12.5%"`; `flag` names the option in errors.
    /// `upto_whole`: whether 100% is allowed.
    fn parse(flag: &str, text: &str, upto_whole: bool) -> Result<Share, SimError> {
        let bad = |why: &str| SimError::Config(format!("{flag} {text}: {why}"));
        let digits = text.trim().strip_suffix('%').ok_or_else(|| bad("a share needs a % sign"))?.trim();
        // Out of range first: 1e9% and 1234% are more than 100%, whatever
        // else is wrong with how they are written.
        if let Ok(v) = digits.parse::<f64>() {
            if v <= 0.0 {
                return Err(bad("must be more than 0%"));
            }
            if v > 100.0 || (!upto_whole && v >= 100.0) {
                return Err(bad(if upto_whole { "must be at most 100%" } else { "must be less than 100%" }));
            }
        }
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
            || frac.len() > 6
            || int.len() > 3
        {
            return Err(bad("expected a percentage such as 5% or 12.5% (at most 6 decimals)"));
        }
        let scale = 10u64.pow(frac.len() as u32);
        let num = format!("{int}{frac}").parse::<u64>().unwrap_or(0);
        let share = Share { num, den: 100 * scale };
        if num == 0 {
            return Err(bad("must be more than 0%"));
        }
        if num > share.den || (!upto_whole && num == share.den) {
            return Err(bad(if upto_whole { "must be at most 100%" } else { "must be less than 100%" }));
        }
        Ok(share)
    }

    /// The share as a number in (0, 1].
    pub fn value(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// ⌈share × n⌉: a cache of 1% of 50 pages holds 1 page, not 0.
    pub fn of_ceil(self, n: u64) -> u64 {
        (n as u128 * self.num as u128).div_ceil(self.den as u128) as u64
    }

    /// ⌊share × n⌋.
    pub fn of_floor(self, n: u64) -> u64 {
        (n as u128 * self.num as u128 / self.den as u128) as u64
    }
}

/// One `--cache` value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CacheSize {
    Bytes(u64),
    /// A share of the trace's footprint (distinct pages read or written).
    Share(Share),
}

impl CacheSize {
    pub fn is_share(&self) -> bool {
        matches!(self, CacheSize::Share(_))
    }
}

/// A cache size (`--cache`): `64MiB`, `4096` (bytes), or `5%` of the footprint.
pub fn parse_cache_size(text: &str) -> Result<CacheSize, SimError> {
    if text.trim().ends_with('%') {
        return Share::parse("--cache", text, true).map(CacheSize::Share);
    }
    parse_bytes(text).map(CacheSize::Bytes).map_err(|e| SimError::Config(format!("--cache: {e}")))
}

/// A comma-separated list of sizes, `1%,5%,64MiB`; at least one.
pub fn parse_cache_sizes(list: &str) -> Result<Vec<CacheSize>, SimError> {
    let sizes = crate::spec::split_list(list).iter().map(|c| parse_cache_size(c)).collect::<Result<Vec<_>, _>>()?;
    if sizes.is_empty() {
        return Err(SimError::Config("--cache: give at least one size".into()));
    }
    Ok(sizes)
}

/// How much of the trace's head warms the cache (`--warmup`).
#[derive(Clone, Debug, PartialEq)]
pub struct Warmup {
    /// As given, for reports.
    pub text: String,
    pub kind: WarmupKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WarmupKind {
    /// ⌊share × requests⌋ requests: `20%`.
    Share(Share),
    /// The requests before the first at or past the first request's time + this: `1h`.
    Duration(Nanos),
    /// This many requests: `5M`, `500k`, `1000`.
    Requests(u64),
}

/// A warm-up: `20%` (of the requests), `1h`/`30min`/`90s` (of trace time), or
/// `5M`/`500k`/`1000` (requests; a bare number is a count, not seconds).
/// `5m` is refused as ambiguous (minutes or millions?).
pub fn parse_warmup(text: &str) -> Result<Warmup, SimError> {
    let t = text.trim();
    let bad = |why: String| SimError::Config(format!("--warmup {t}: {why}"));
    let kind = if t.ends_with('%') {
        WarmupKind::Share(Share::parse("--warmup", t, false)?)
    } else {
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let count_mult = match unit.trim() {
            "" => Some(1u64),
            "k" | "K" => Some(1_000),
            "M" => Some(1_000_000),
            "G" => Some(1_000_000_000),
            "m" => return Err(bad("ambiguous: write 5min for minutes or 5M for millions of requests".into())),
            _ => None,
        };
        match count_mult {
            Some(mult) => WarmupKind::Requests(scaled(num, mult, false).map_err(|e| {
                bad(match e {
                    Scaled::NotANumber => {
                        "expected a share (20%), a duration (1h, 30min) or a request count (5M, 500k, 1000)".into()
                    }
                    Scaled::NotWhole => "a request count must be a whole number".into(),
                    // (2^64 used to be taken as 2^64 - 1 without a word)
                    Scaled::TooLarge => "too large: a request count is at most 2^64 - 1".into(),
                })
            })?),
            None => WarmupKind::Duration(parse_duration_ns(t).map_err(|e| {
                bad(format!("{e}; expected a share (20%), a duration (1h, 30min) or a request count (5M, 500k, 1000)"))
            })?),
        }
    };
    if matches!(kind, WarmupKind::Requests(0) | WarmupKind::Duration(0)) {
        return Err(bad("must be more than zero".into()));
    }
    Ok(Warmup { text: t.to_string(), kind })
}

/// A repeat count (`--repeat`): at least 1; 0 would replay nothing, and used
/// to run the trace once without a word.
pub fn check_repeat(times: u32) -> Result<(), SimError> {
    if times == 0 {
        return Err(SimError::Config("--repeat: must be at least 1, not 0".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_exactly_and_round_up_to_pages() {
        let CacheSize::Share(s) = parse_cache_size("12.5%").unwrap() else { panic!() };
        assert_eq!((s.of_ceil(1000), s.of_ceil(1001), s.of_floor(1001)), (125, 126, 125));
        let CacheSize::Share(s) = parse_cache_size("10%").unwrap() else { panic!() };
        assert_eq!(s.of_ceil(1000), 100, "no floating-point 100.00000000000001");
        assert_eq!(parse_cache_size("100%").unwrap(), CacheSize::Share(Share { num: 100, den: 100 }));
        assert_eq!(parse_cache_size("64MiB").unwrap(), CacheSize::Bytes(64 << 20));
        let list = parse_cache_sizes("1%,64MiB").unwrap();
        assert!(list[0].is_share() && !list[1].is_share());
    }

    #[test]
    fn bad_shares_name_the_flag() {
        for bad in ["0%", "0.000%", "100.5%", "250%", "%", "-5%", "abc%", "1e3%", "5.1234567%", ""] {
            let e = parse_cache_sizes(bad).unwrap_err().to_string();
            assert!(e.starts_with("--cache"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_share_out_of_range_says_so_before_how_it_is_written() {
        // (1e9% used to be told "at most 6 decimals", 1234% and -5% likewise)
        for (text, says) in [
            ("1e9%", "--cache 1e9%: must be at most 100%"),
            ("1234%", "--cache 1234%: must be at most 100%"),
            ("100.0000001%", "--cache 100.0000001%: must be at most 100%"),
            ("-5%", "--cache -5%: must be more than 0%"),
            ("5.1234567%", "--cache 5.1234567%: expected a percentage such as 5% or 12.5% (at most 6 decimals)"),
            ("1e-9%", "--cache 1e-9%: expected a percentage such as 5% or 12.5% (at most 6 decimals)"),
        ] {
            assert_eq!(parse_cache_size(text).unwrap_err().to_string(), says);
        }
        let e = parse_warmup("1e9%").unwrap_err().to_string();
        assert_eq!(e, "--warmup 1e9%: must be less than 100%");
    }

    #[test]
    fn warmups_of_2_to_the_64_are_refused_not_clamped() {
        // (each used to become 2^64 - 1 requests or ns without a word)
        for text in ["18446744073709551616", "18446744073709552k", "18446744073.709551616G"] {
            let e = parse_warmup(text).unwrap_err().to_string();
            assert_eq!(e, format!("--warmup {text}: too large: a request count is at most 2^64 - 1"));
        }
        for text in ["18446744073709551616ns", "213504d"] {
            let e = parse_warmup(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--warmup {text}: duration")) && e.contains("too long"), "{e}");
        }
        // Counts are read exactly, not through a float.
        let kind = |t: &str| parse_warmup(t).unwrap().kind;
        assert_eq!(kind("18446744073709551615"), WarmupKind::Requests(u64::MAX));
        assert_eq!(kind("9007199254740993"), WarmupKind::Requests(9_007_199_254_740_993));
        assert_eq!(kind("18446744073709551615ns"), WarmupKind::Duration(u64::MAX));
    }

    #[test]
    fn warmups_are_shares_durations_or_counts() {
        let kind = |t: &str| parse_warmup(t).unwrap().kind;
        assert!(matches!(kind("20%"), WarmupKind::Share(_)));
        assert_eq!(kind("1h"), WarmupKind::Duration(3_600_000_000_000));
        assert_eq!(kind("30min"), WarmupKind::Duration(1_800_000_000_000));
        assert_eq!(kind("5M"), WarmupKind::Requests(5_000_000));
        assert_eq!(kind("1.5k"), WarmupKind::Requests(1500));
        assert_eq!(kind("1000"), WarmupKind::Requests(1000));
        for bad in ["0", "0%", "100%", "120%", "5m", "soon", "1.5", "0s", "-3", ""] {
            let e = parse_warmup(bad).unwrap_err().to_string();
            assert!(e.starts_with("--warmup"), "{bad}: {e}");
        }
    }

    #[test]
    fn text_values_parse_and_errors_name_the_flag() {
        assert_eq!(parse_cache("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_page("4096").unwrap(), 4096);
        assert_eq!(parse_mode("wt").unwrap(), Mode::WriteThrough);
        assert_eq!(parse_interval("1h").unwrap(), 3_600_000_000_000);
        for (e, flag) in [
            (parse_cache("lots").unwrap_err(), "--cache: "),
            (parse_page("0").unwrap_err(), "--page: "),
            (parse_mode("sideways").unwrap_err(), "--mode: "),
            (parse_interval("soon").unwrap_err(), "--interval: "),
        ] {
            assert!(e.to_string().starts_with(flag), "{e}");
        }
    }

    #[test]
    fn a_queue_depth_too_large_is_out_of_range() {
        // (it used to say "not a whole number")
        let e = parse_queue_depth("99999999999").unwrap_err().to_string();
        assert_eq!(e, "--queue-depth 99999999999: out of range 1..=512");
        assert_eq!(parse_queue_depth("deep").unwrap_err().to_string(), "--queue-depth: \"deep\" is not a whole number");
        assert_eq!(parse_queue_depth(" 32 ").unwrap(), 32);
    }

    #[test]
    fn pages_are_sectors_to_a_mebibyte() {
        // (any size was taken: 1 B and 3 B pages multiplied memory by thousands)
        for ok in ["512", "512B", "1s", "2KiB", "4KiB", "8KiB", "16KiB", "132KiB", "1MiB", "1536"] {
            assert!(parse_page(ok).is_ok(), "{ok}");
        }
        for bad in ["1B", "3", "511", "1000", "4097", "2MiB", "1GiB"] {
            let e = parse_page(bad).unwrap_err().to_string();
            assert_eq!(e, format!("--page: size {bad:?}: a page must be a multiple of 512 B from 512 B to 1 MiB"));
        }
        assert!(parse_page("0").unwrap_err().to_string().contains("greater than zero"));
    }

    #[test]
    fn either_queue_setting_implies_the_other_default() {
        assert_eq!(queue_spec(None, None).unwrap(), None);
        assert_eq!(
            queue_spec(None, Some(2.0)).unwrap(),
            Some(QueueSpec { depth: DEFAULT_QUEUE_DEPTH, iat_scale: 2.0 })
        );
        assert_eq!(queue_spec(Some(8), None).unwrap(), Some(QueueSpec { depth: 8, iat_scale: 1.0 }));
        let e = queue_spec(Some(0), None).unwrap_err().to_string();
        assert!(e.starts_with("--queue-depth/--iat-scale: ") && e.contains("1..=512"), "{e}");
    }
}
