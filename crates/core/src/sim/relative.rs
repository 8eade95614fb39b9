//! Cache sizes and warm-ups as users think of them: `--cache 1%,5%,64MiB` (a
//! share of the trace's footprint, or bytes) and `--warmup 20%|1h|5M` (a
//! share of the requests, a duration of trace time, or a request count).
//!
//! The command line and the Python package both parse them with [`super::flags`]
//! and resolve against the same [`TraceFacts`], found by one streaming pass
//! over a trace ([`scan`]; memory ∝ the footprint) and shared by every run on
//! it. A run is then told plain numbers ([`Sizing`]): bytes, and how many
//! leading requests warm the cache without being counted.

use super::flags::{CacheSize, Warmup, WarmupKind};
use super::{pages_of, SimError};
use crate::device::DeviceStats;
use crate::metrics::Report;
use crate::sim::source::TraceSource;
use crate::trace::{Op, BATCH};
use crate::units::format_bytes;
use hashbrown::HashSet;

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
    use crate::sim::flags::{parse_cache_sizes, parse_warmup};

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
