//! Cache sizes and warm-ups as users think of them: `--cache 1%,5%,64MiB` (a
//! share of the trace's footprint, or bytes) and `--warmup 20%|1h|5M` (a
//! share of the requests, a duration of trace time, or a request count).
//!
//! The command line and the Python package both parse with these functions
//! and resolve against the same [`TraceFacts`], found by one streaming pass
//! over a trace ([`scan`]; memory ∝ the footprint) and shared by every run on
//! it. A run is then told plain numbers ([`Sizing`]): bytes, and how many
//! leading requests warm the cache without being counted.

use super::{pages_of, SimError};
use crate::device::DeviceStats;
use crate::metrics::Report;
use crate::sim::source::TraceSource;
use crate::trace::{Op, BATCH};
use crate::units::{format_bytes, parse_bytes, parse_duration_ns, scaled, Scaled};
use crate::Nanos;
use hashbrown::HashSet;

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

/// What one pass over a trace found: what sizes and warm-ups resolve against.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TraceFacts {
    pub requests: u64,
    /// Distinct pages read or written (keys carry the device), if asked for.
    pub footprint_pages: Option<u64>,
    /// The warm-up asked for, in requests (0 without one).
    pub warmup_requests: u64,
}

/// Whether resolving these needs a pass over the trace first: a share of the
/// footprint, or a warm-up given as a share or a duration.
pub fn needs_scan(sizes: &[CacheSize], warmup: Option<&Warmup>) -> bool {
    sizes.iter().any(CacheSize::is_share) || warmup.is_some_and(|w| !matches!(w.kind, WarmupKind::Requests(_)))
}

/// Fails at once, before any reading, if `source` is a stream (stdin, a
/// pipe) and these sizes or this warm-up need a first pass over it.
pub fn check_source(source: &TraceSource, sizes: &[CacheSize], warmup: Option<&Warmup>) -> Result<(), SimError> {
    if !needs_scan(sizes, warmup) {
        return Ok(());
    }
    let why = if sizes.iter().any(CacheSize::is_share) {
        "a cache size as a share of the footprint (--cache N%)"
    } else {
        "a warm-up as a share or a duration (--warmup)"
    };
    check_rereadable(source, why)
}

/// A file that cannot be read twice (stdin, a pipe) cannot be scanned first.
fn check_rereadable(source: &TraceSource, why: &str) -> Result<(), SimError> {
    if let TraceSource::File { path, .. } = source {
        let regular = path.as_os_str() != "-" && std::fs::metadata(path).map(|m| m.is_file()).unwrap_or(true);
        if !regular {
            return Err(SimError::Config(format!(
                "{}: {why} needs a first pass over the trace, and this is a stream (stdin or a pipe) that can be read only once; give a file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// One streaming pass over `source`: its requests, its footprint in pages of
/// `page_bytes` (with `footprint`) and the warm-up in requests. Errors if the
/// warm-up is not shorter than the trace.
pub fn scan(
    source: &TraceSource,
    page_bytes: u64,
    footprint: bool,
    warmup: Option<&Warmup>,
) -> Result<TraceFacts, SimError> {
    check_rereadable(
        source,
        if footprint {
            "a cache size as a share of the footprint (--cache N%)"
        } else {
            "a warm-up as a share or a duration (--warmup)"
        },
    )?;
    if page_bytes == 0 {
        return Err(SimError::Config("--page: a page has at least one byte".into()));
    }
    let (mut reader, _) = source.open()?;
    let unit = reader.unit();
    let mut keys: HashSet<u64> = HashSet::new();
    let mut requests = 0u64;
    let mut first_time = None;
    // Leading requests before the warm-up's end time (a duration warm-up).
    let mut before_end = 0u64;
    let mut past_end = false;
    let mut batch = Vec::with_capacity(BATCH);
    while reader.read_batch(&mut batch, BATCH)? > 0 {
        for r in &batch {
            if footprint && r.op != Op::Trim {
                keys.extend(pages_of(r, unit, page_bytes, requests)?.keys());
            }
            if let Some(WarmupKind::Duration(d)) = warmup.map(|w| w.kind) {
                let start = *first_time.get_or_insert(r.time);
                past_end |= r.time >= start.saturating_add(d);
                before_end += u64::from(!past_end);
            }
            requests += 1;
        }
    }
    let facts = TraceFacts {
        requests,
        footprint_pages: footprint.then_some(keys.len() as u64),
        warmup_requests: match warmup.map(|w| w.kind) {
            None => 0,
            Some(WarmupKind::Share(s)) => s.of_floor(requests),
            Some(WarmupKind::Duration(_)) => before_end,
            Some(WarmupKind::Requests(n)) => n,
        },
    };
    if let Some(w) = warmup {
        check_warmup_fits(w, facts.warmup_requests, requests)?;
    }
    Ok(facts)
}

/// A warm-up must leave at least one request to count (and take at least one).
pub fn check_warmup_fits(warmup: &Warmup, warmup_requests: u64, requests: u64) -> Result<(), SimError> {
    if warmup_requests >= requests {
        return Err(SimError::Config(format!(
            "--warmup {}: {warmup_requests} warm-up requests leave none of the trace's {requests} to count; give a shorter warm-up",
            warmup.text
        )));
    }
    if warmup_requests == 0 {
        return Err(SimError::Config(format!(
            "--warmup {}: takes no request of the trace's {requests}; give a longer warm-up",
            warmup.text
        )));
    }
    Ok(())
}

/// What a run knows of its size and warm-up beyond plain bytes: set by
/// [`plan`], reported by [`Sizing::annotate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sizing {
    /// The `--warmup` text.
    pub warmup: Option<String>,
    /// Leading requests that warm the cache and devices without being counted.
    pub warmup_requests: u64,
    /// The cache's share of the footprint, when given as one.
    pub cache_share: Option<f64>,
    /// The trace's footprint in pages, when it was measured.
    pub footprint_pages: Option<u64>,
}

impl Sizing {
    /// Puts what the run skipped and how its cache was sized into its report.
    pub fn annotate(&self, report: &mut Report) {
        report.warmup = self.warmup.clone();
        report.warmup_requests = self.warmup_requests;
        report.cache_share = self.cache_share;
        report.footprint_pages = self.footprint_pages;
    }

    /// A warm-up the run could not finish: it covered every request.
    pub fn check_counted(&self, counted_requests: u64) -> Result<(), SimError> {
        match &self.warmup {
            Some(w) if counted_requests == 0 => Err(SimError::Config(format!(
                "--warmup {w}: {} warm-up requests leave none of the trace to count; give a shorter warm-up",
                self.warmup_requests
            ))),
            _ => Ok(()),
        }
    }
}

/// A device's stats since the end of a warm-up (`warm`): the counts and
/// times less those of the warm-up; the state (pages, spare) as it is now.
pub fn since_warm(now: DeviceStats, warm: Option<&DeviceStats>) -> DeviceStats {
    let Some(w) = warm else { return now };
    DeviceStats {
        host_page_reads: now.host_page_reads - w.host_page_reads,
        host_page_writes: now.host_page_writes - w.host_page_writes,
        extra_page_writes: now.extra_page_writes - w.extra_page_writes,
        erases: now.erases - w.erases,
        switch_merges: now.switch_merges - w.switch_merges,
        partial_merges: now.partial_merges - w.partial_merges,
        full_merges: now.full_merges - w.full_merges,
        out_of_range_pages: now.out_of_range_pages - w.out_of_range_pages,
        read_time: now.read_time - w.read_time,
        write_time: now.write_time - w.write_time,
        extra_write_time: now.extra_write_time - w.extra_write_time,
        erase_time: now.erase_time - w.erase_time,
        ..now
    }
    .finish()
}

/// Pages of a size on a trace with `footprint` pages: bytes / page, or the
/// share of the footprint rounded up; at least one page.
pub fn pages_of_size(size: CacheSize, page_bytes: u64, footprint: u64, trace: &str) -> Result<u64, SimError> {
    let pages = match size {
        CacheSize::Bytes(b) => b / page_bytes,
        CacheSize::Share(s) => s.of_ceil(footprint),
    };
    if pages == 0 {
        return Err(SimError::Config(match size {
            CacheSize::Bytes(b) => {
                format!("{trace}: --cache {}: smaller than one page ({})", format_bytes(b), format_bytes(page_bytes))
            }
            CacheSize::Share(s) => {
                format!("{trace}: --cache {}%: the trace touches no page, so a share of it is empty", s.value() * 100.0)
            }
        }));
    }
    Ok(pages)
}

/// Every size's bytes and [`Sizing`] on `source`, after at most one pass over
/// it (only if a share or a share/duration warm-up asks for one). Sizes in
/// bytes stay as given (a run rounds them down to pages); shares become whole
/// pages.
pub fn plan(
    source: &TraceSource,
    page_bytes: u64,
    sizes: &[CacheSize],
    warmup: Option<&Warmup>,
) -> Result<Vec<(u64, Sizing)>, SimError> {
    let facts = facts(source, page_bytes, sizes, warmup)?;
    resolve(&facts, page_bytes, sizes, warmup, &source.name())
}

/// What [`plan`] needs to know of the trace: a [`scan`] if a share or a
/// share/duration warm-up asks for one, else nothing read.
pub fn facts(
    source: &TraceSource,
    page_bytes: u64,
    sizes: &[CacheSize],
    warmup: Option<&Warmup>,
) -> Result<TraceFacts, SimError> {
    if needs_scan(sizes, warmup) {
        return scan(source, page_bytes, sizes.iter().any(CacheSize::is_share), warmup);
    }
    let n = match warmup.map(|w| w.kind) {
        Some(WarmupKind::Requests(n)) => n,
        _ => 0,
    };
    Ok(TraceFacts { warmup_requests: n, ..Default::default() })
}

/// [`plan`] with the trace's facts known (`trace` names it in errors).
pub fn resolve(
    facts: &TraceFacts,
    page_bytes: u64,
    sizes: &[CacheSize],
    warmup: Option<&Warmup>,
    trace: &str,
) -> Result<Vec<(u64, Sizing)>, SimError> {
    sizes
        .iter()
        .map(|&size| {
            let sizing = Sizing {
                warmup: warmup.map(|w| w.text.clone()),
                warmup_requests: facts.warmup_requests,
                cache_share: match size {
                    CacheSize::Share(s) => Some(s.value()),
                    CacheSize::Bytes(_) => None,
                },
                footprint_pages: facts.footprint_pages,
            };
            let bytes = match size {
                CacheSize::Bytes(b) => b,
                CacheSize::Share(_) => pages_of_size(size, page_bytes, facts.footprint_pages.unwrap_or(0), trace)?
                    .saturating_mul(page_bytes),
            };
            Ok((bytes, sizing))
        })
        .collect()
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
    fn scan_counts_distinct_pages_per_device_and_resolves_warmups() {
        use crate::trace::{Request, Unit};
        let req = |time, dev, addr| Request { time, op: Op::Read, dev, addr, len: 1 };
        // page 7 on two devices is two pages; trims touch nothing
        let mut requests = vec![req(0, 0, 7), req(10, 1, 7), req(20, 0, 7), req(30, 0, 8)];
        requests.push(Request { op: Op::Trim, ..req(40, 0, 99) });
        let source = TraceSource::Memory {
            name: "t".into(),
            format: "mem".into(),
            requests: requests.into(),
            unit: Unit::Pages,
            skipped: 0,
        };
        let facts = scan(&source, 4096, true, Some(&parse_warmup("25ns").unwrap())).unwrap();
        assert_eq!(facts, TraceFacts { requests: 5, footprint_pages: Some(3), warmup_requests: 3 });
        let facts = scan(&source, 4096, false, Some(&parse_warmup("15ns").unwrap())).unwrap();
        assert_eq!((facts.footprint_pages, facts.warmup_requests), (None, 2));
        assert_eq!(scan(&source, 4096, false, Some(&parse_warmup("40%").unwrap())).unwrap().warmup_requests, 2);
        let e = scan(&source, 4096, false, Some(&parse_warmup("5").unwrap())).unwrap_err().to_string();
        assert!(e.starts_with("--warmup 5: 5 warm-up requests leave none"), "{e}");
        let plan = plan(&source, 4096, &parse_cache_sizes("34%,8KiB").unwrap(), None).unwrap();
        assert_eq!(plan[0].0, 2 * 4096, "34% of 3 pages rounds up to 2");
        assert_eq!(plan[0].1.footprint_pages, Some(3));
        assert_eq!(plan[1].0, 8192);
    }
}
