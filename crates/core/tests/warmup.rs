//! Warm-up and footprint-relative cache sizes (`--warmup`, `--cache N%`),
//! checked against constructions that do not go through `sim::run`:
//!
//! - a warmed run's counters equal counts taken by hand over the trace's tail,
//!   the policy driven access by access after its head warmed it;
//! - the exact LRU curve with a warm-up equals warmed `sim` runs at every size;
//! - a share of the footprint runs exactly as the page count ⌈share × distinct
//!   pages⌉ given in bytes, the distinct pages counted here with a set.

use proptest::prelude::*;
use ssdcache::mrc::exact_lru_warm;
use ssdcache::policy::registry::{build, BuildCtx, POLICIES};
use ssdcache::policy::{Access, Effects, Io, Mode, NEVER};
use ssdcache::sim::flags::{parse_cache_sizes, parse_warmup};
use ssdcache::sim::relative::plan;
use ssdcache::sim::run::{run, RunSpec};
use ssdcache::sim::TraceSource;
use ssdcache::trace::{Op, Request, Unit};
use std::collections::BTreeSet;

const PAGE: u64 = 4096;

/// Requests in pages (1 to 3 each) over a small key universe, reads and writes.
fn requests(max_key: u64, len: usize) -> impl Strategy<Value = Vec<Request>> {
    let op = prop_oneof![3 => Just(Op::Read), 2 => Just(Op::Write)];
    prop::collection::vec((op, 0..max_key, 1u32..4), 2..len).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (op, addr, len))| Request { time: i as u64 * 1000, op, dev: 0, addr, len })
            .collect()
    })
}

fn memory(requests: &[Request]) -> TraceSource {
    TraceSource::Memory {
        name: "prop".into(),
        format: "mem".into(),
        requests: requests.to_vec().into(),
        unit: Unit::Pages,
        skipped: 0,
    }
}

/// What the hand count keeps: requests, pages, hits (read, write), backing
/// reads and writes, dirty write-backs, drain writes.
#[derive(Debug, Default, PartialEq)]
struct Tally {
    requests: u64,
    pages: u64,
    hits: u64,
    read_hits: u64,
    write_hits: u64,
    backing_reads: u64,
    backing_writes: u64,
    dirty_writebacks: u64,
    drain_writes: u64,
}

/// Drives `spec` over the head uncounted, then over the tail counting by
/// hand, then drains. None for policies this cannot drive (offline ones need
/// next uses; maintenance ones need ticks).
fn by_hand(spec: &str, mode: Mode, capacity: usize, head: &[Request], tail: &[Request]) -> Option<Tally> {
    let (mut policy, _) = build(spec, &BuildCtx { capacity, mode, page_bytes: PAGE }).ok()?;
    if policy.needs_future() || policy.has_maintenance() {
        return None;
    }
    let mut fx = Effects::new();
    let mut seq = 0;
    let mut t = Tally::default();
    for (counted, r) in head.iter().map(|r| (false, r)).chain(tail.iter().map(|r| (true, r))) {
        t.requests += counted as u64;
        for key in r.addr..r.addr + r.len as u64 {
            let a = Access { time: r.time, key, op: r.op, partial: false, seq, next_use: NEVER, request_pages: 1 };
            seq += 1;
            fx.clear();
            policy.access(&a, &mut fx);
            if !counted {
                continue;
            }
            t.pages += 1;
            t.hits += fx.hit as u64;
            t.read_hits += (fx.hit && r.op == Op::Read) as u64;
            t.write_hits += (fx.hit && r.op == Op::Write) as u64;
            for io in &fx.io {
                match *io {
                    Io::Fetch { pages, .. } | Io::PadRead { pages, .. } => t.backing_reads += pages as u64,
                    Io::ReadForWrite { .. } => t.backing_reads += 1,
                    Io::WriteThrough { .. } => t.backing_writes += 1,
                    Io::WriteBack { pages, .. } => {
                        t.backing_writes += pages as u64;
                        t.dirty_writebacks += pages as u64;
                    }
                    _ => {}
                }
            }
        }
    }
    fx.clear();
    policy.drain(&mut fx);
    for io in &fx.io {
        if let Io::WriteBack { pages, .. } = io {
            t.drain_writes += *pages as u64;
        }
    }
    Some(t)
}

fn warmed(source: &TraceSource, spec: &str, mode: Mode, capacity: u64, warmup: u64) -> Tally {
    let mut run_spec = RunSpec::new(spec, capacity * PAGE);
    run_spec.mode = mode;
    run_spec.sizing.warmup = Some(warmup.to_string());
    run_spec.sizing.warmup_requests = warmup;
    let r = run(source, &run_spec).unwrap();
    assert_eq!((r.warmup.as_deref(), r.warmup_requests), (Some(warmup.to_string().as_str()), warmup));
    let c = r.counters;
    Tally {
        requests: c.requests,
        pages: c.pages,
        hits: c.hits,
        read_hits: c.read_hits,
        write_hits: c.write_hits,
        backing_reads: c.backing_reads,
        backing_writes: c.backing_writes,
        dirty_writebacks: c.dirty_writebacks,
        drain_writes: c.drain_writes,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_warmed_run_counts_the_tail_of_a_cache_warmed_by_the_head(
        trace in requests(40, 300),
        cut in 1usize..1000,
        capacity in 2u64..24,
    ) {
        let warmup = (cut % (trace.len() - 1) + 1) as u64;
        let (head, tail) = trace.split_at(warmup as usize);
        let source = memory(&trace);
        let mut checked = 0;
        for p in POLICIES {
            for mode in [Mode::WriteBack, Mode::WriteThrough] {
                let Some(expected) = by_hand(p.name, mode, capacity as usize, head, tail) else { continue };
                let got = warmed(&source, p.name, mode, capacity, warmup);
                prop_assert_eq!(got, expected, "{} {:?} cache {} warm-up {}", p.name, mode, capacity, warmup);
                checked += 1;
            }
        }
        prop_assert!(checked > 20, "only {checked} policy × mode pairs checked");
    }

    #[test]
    fn the_warmed_lru_curve_equals_warmed_runs_at_every_size(
        trace in requests(60, 400),
        cut in 1usize..1000,
    ) {
        let warmup = (cut % (trace.len() - 1) + 1) as u64;
        let source = memory(&trace);
        let profile = exact_lru_warm(&source, PAGE, warmup).unwrap();
        prop_assert_eq!(profile.counts.warmup_requests, warmup);
        prop_assert_eq!(profile.counts.requests, trace.len() as u64 - warmup);
        for pages in 1..=profile.counts.footprint_pages + 1 {
            let mut spec = RunSpec::new("lru", pages * PAGE);
            spec.sizing.warmup_requests = warmup;
            let c = run(&source, &spec).unwrap().counters;
            let p = profile.at(pages);
            prop_assert_eq!(
                (p.hits, p.read_hits, p.write_hits, p.request_hits, p.dirty_writebacks, p.dirty_at_end),
                (c.hits, c.read_hits, c.write_hits, c.request_hits, c.dirty_writebacks, c.drain_writes),
                "cache of {} pages, warm-up {}", pages, warmup
            );
        }
    }

    #[test]
    fn a_share_of_the_footprint_runs_as_its_page_count(
        trace in requests(500, 300),
        tenths in 1u64..=1000,
        dev in 0u32..3,
    ) {
        // pages on several devices are distinct pages
        let trace: Vec<Request> = trace.into_iter().enumerate()
            .map(|(i, r)| Request { dev: if i % 2 == 0 { dev } else { 0 }, addr: r.addr + 1, ..r }).collect();
        let distinct: BTreeSet<(u32, u64)> =
            trace.iter().flat_map(|r| (r.addr..r.addr + r.len as u64).map(move |a| (r.dev, a))).collect();
        let f = distinct.len() as u64;
        let share = format!("{}.{}%", tenths / 10, tenths % 10);
        let expected_pages = (f * tenths).div_ceil(1000).max(1);
        let source = memory(&trace);
        let sizes = parse_cache_sizes(&format!("{share},{}", expected_pages * PAGE)).unwrap();
        let planned = plan(&source, PAGE, &sizes, None).unwrap();
        prop_assert_eq!(planned[0].0, expected_pages * PAGE, "{} of {} pages", share, f);
        prop_assert_eq!(planned[0].1.footprint_pages, Some(f));
        let mut by_share = RunSpec::new("arc", planned[0].0);
        by_share.sizing = planned[0].1.clone();
        let a = run(&source, &by_share).unwrap();
        let b = run(&source, &RunSpec::new("arc", expected_pages * PAGE)).unwrap();
        prop_assert_eq!(a.capacity_pages, expected_pages);
        prop_assert_eq!(a.cache_share, Some(tenths as f64 / 1000.0));
        prop_assert_eq!(a.footprint_pages, Some(f));
        prop_assert_eq!(&a.counters, &b.counters);
        prop_assert_eq!(b.cache_share, None);
    }
}

#[test]
fn warmups_resolve_on_the_trace_and_longer_ones_are_refused() {
    let trace: Vec<Request> =
        (0..100).map(|i| Request { time: i * 1_000_000_000, op: Op::Read, dev: 0, addr: i % 7, len: 1 }).collect();
    let source = memory(&trace);
    let sizes = parse_cache_sizes("8KiB").unwrap();
    let warm = |text: &str| plan(&source, PAGE, &sizes, Some(&parse_warmup(text).unwrap())).map(|p| p[0].1.clone());
    assert_eq!(warm("20%").unwrap().warmup_requests, 20);
    assert_eq!(warm("30s").unwrap().warmup_requests, 30, "requests at 0..29 s come before 30 s");
    assert_eq!(warm("1min").unwrap().warmup_requests, 60);
    assert_eq!(warm("99").unwrap().warmup_requests, 99);
    assert_eq!(warm("99.9%").unwrap().warmup_requests, 99, "a share rounds down");
    let e = warm("2min").unwrap_err().to_string();
    assert!(e.contains("leave none"), "{e}");
    // a count is checked when the run ends (no pass over the trace before)
    let mut spec = RunSpec::new("lru", 8192);
    spec.sizing = warm("100").unwrap();
    let e = run(&source, &spec).unwrap_err().to_string();
    assert!(e.starts_with("--warmup 100: 100 warm-up requests leave none"), "{e}");
    let e = exact_lru_warm(&source, PAGE, 100).err().unwrap().to_string();
    assert!(e.contains("leave none"), "{e}");
}

#[test]
fn a_warmed_device_counts_only_the_tail() {
    // Every request writes a new page: the device's host writes after the
    // warm-up are the tail's write-backs and drains, not the head's.
    let trace: Vec<Request> =
        (0..200).map(|i| Request { time: i * 1000, op: Op::Write, dev: 0, addr: i * PAGE, len: PAGE as u32 }).collect();
    let source = TraceSource::Memory {
        name: "writes".into(),
        format: "mem".into(),
        requests: trace.into(),
        unit: Unit::Bytes,
        skipped: 0,
    };
    let mut spec = RunSpec::new("lru", 10 * PAGE);
    spec.device = Some("ftl(nand=mlc2)".into());
    let whole = run(&source, &spec).unwrap();
    spec.sizing.warmup_requests = 150;
    spec.sizing.warmup = Some("150".into());
    let tail = run(&source, &spec).unwrap();
    let (w, t) = (whole.device.unwrap().stats, tail.device.unwrap().stats);
    assert_eq!(w.host_page_writes, 200);
    // the head wrote back 150 - 10 pages; the tail the other 50 + 10
    assert_eq!(t.host_page_writes, 60);
    assert_eq!((tail.counters.backing_writes, tail.counters.drain_writes), (50, 10));
    assert!(t.write_time < w.write_time);
}
