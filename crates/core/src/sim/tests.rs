use super::*;
use crate::policy::registry::build;
use crate::policy::BuildCtx;
use crate::policy::Mode;
use crate::trace::{MemoryReader, Request};

fn req(op: Op, addr: u64, len: u32) -> Request {
    Request { time: 0, addr, len, dev: 0, op }
}

fn sim(policy: &str, mode: Mode, capacity: usize, reqs: Vec<Request>) -> Counters {
    let (mut p, _) = build(policy, &BuildCtx { capacity, mode, page_bytes: 4096 }).unwrap();
    let mut rd = MemoryReader::new(reqs.into(), Unit::Bytes);
    Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).run(&mut rd).unwrap()
}

#[test]
fn request_touches_pages_off_over_p_through_end_minus_one_over_p() {
    // bytes [4000, 8193) touch pages 0, 1 and 2
    let c = sim("lru", Mode::WriteBack, 8, vec![req(Op::Read, 4000, 4193)]);
    assert_eq!((c.pages, c.backing_reads, c.requests), (3, 3, 1));
}

#[test]
fn paper_003_classification_on_a_hand_built_sequence() {
    // capacity 1 page, write-back LRU
    let c = sim(
        "lru",
        Mode::WriteBack,
        1,
        vec![
            req(Op::Write, 0, 4096),    // write miss, empty slot: write-overwrite-clean
            req(Op::Read, 4096, 4096),  // read miss evicting dirty page 0: read-replace-dirty
            req(Op::Write, 8192, 4096), // write miss evicting clean page 1: write-overwrite-clean
            req(Op::Write, 0, 4096),    // write miss evicting dirty page 2: write-replace-dirty
            req(Op::Read, 4096, 4096),  // read miss evicting dirty page 0: read-replace-dirty
            req(Op::Read, 8192, 4096),  // read miss evicting clean page 1: read-overwrite-clean
            req(Op::Read, 8192, 4096),  // hit
        ],
    );
    assert_eq!(
        (c.read_replace_dirty, c.read_overwrite_clean, c.write_replace_dirty, c.write_overwrite_clean),
        (2, 1, 1, 2)
    );
    assert_eq!(c.hits, 1);
    assert_eq!(c.backing_accesses(), 2 * 2 + 1 + 1);
    assert_eq!(c.backing_reads + c.backing_writes, c.backing_accesses());
    assert_eq!(c.drain_writes, 0);
}

#[test]
fn partial_write_miss_reads_the_old_page_first() {
    let c = sim("lru", Mode::WriteBack, 8, vec![req(Op::Write, 512, 1024), req(Op::Write, 4096, 4096)]);
    assert_eq!((c.read_for_write, c.backing_reads), (1, 1));
    assert_eq!(c.drain_writes, 2);
    // write-around never caches the write, so it needs no old contents
    let c = sim("lru", Mode::WriteAround, 8, vec![req(Op::Write, 512, 1024)]);
    assert_eq!((c.read_for_write, c.backing_writes), (0, 1));
}

#[test]
fn modes_differ_as_documented() {
    let reqs =
        vec![req(Op::Read, 0, 4096), req(Op::Write, 0, 4096), req(Op::Read, 0, 4096), req(Op::Write, 4096, 4096)];
    let wb = sim("lru", Mode::WriteBack, 8, reqs.clone());
    assert_eq!((wb.hits, wb.backing_writes, wb.drain_writes), (2, 0, 2));
    let wt = sim("lru", Mode::WriteThrough, 8, reqs.clone());
    assert_eq!((wt.hits, wt.backing_writes, wt.drain_writes), (2, 2, 0));
    let ro = sim("lru", Mode::ReadOnly, 8, reqs.clone());
    // the write invalidates page 0 (not a hit), so the second read misses
    assert_eq!((ro.hits, ro.backing_reads, ro.backing_writes, ro.invalidations), (0, 2, 2, 1));
    let wo = sim("lru", Mode::WriteOnly, 8, reqs.clone());
    // the first read is not inserted, the write is; the second read hits the written page
    assert_eq!((wo.hits, wo.backing_reads, wo.drain_writes), (1, 1, 2));
    let wa = sim("lru", Mode::WriteAround, 8, reqs);
    assert_eq!((wa.hits, wa.backing_writes, wa.cache_writes), (2, 2, 2));
}

#[test]
fn devices_are_separate_address_spaces() {
    let mut a = req(Op::Read, 0, 4096);
    let mut b = a;
    a.dev = 1;
    b.dev = 2;
    let c = sim("lru", Mode::WriteBack, 8, vec![a, b, a, b]);
    assert_eq!((c.hits, c.misses()), (2, 2));
}

#[test]
fn trim_drops_dirty_pages_without_write_back() {
    let c = sim("lru", Mode::WriteBack, 8, vec![req(Op::Write, 0, 8192), req(Op::Trim, 0, 4096)]);
    assert_eq!((c.invalidations, c.dirty_discarded, c.drain_writes, c.trim_pages), (1, 1, 1, 1));
    assert_eq!(c.pages, 2, "trims are not page accesses for hit ratio");
}

#[test]
fn huge_offsets_are_an_error_not_a_wrong_number() {
    let (mut p, _) = build("lru", &BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
    let mut rd = MemoryReader::new(vec![req(Op::Read, u64::MAX - 10, 4096)].into(), Unit::Bytes);
    let e = Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).run(&mut rd).unwrap_err();
    assert!(e.to_string().contains("request 0"), "{e}");
}

#[test]
fn each_bad_range_is_named_with_its_request_number() {
    let beyond = 1u64 << PAGE_BITS;
    let cases = [
        (
            Unit::Bytes,
            Request { time: 0, addr: u64::MAX - 10, len: 4096, dev: 0, op: Op::Read },
            "offset + size overflows",
        ),
        (Unit::Pages, Request { time: 0, addr: u64::MAX, len: 2, dev: 0, op: Op::Read }, "page range overflows"),
        (
            Unit::Pages,
            Request { time: 0, addr: beyond, len: 1, dev: 3, op: Op::Write },
            "of device 3 is beyond the 2^44",
        ),
        (
            Unit::Bytes,
            Request { time: 0, addr: beyond * 4096, len: 1, dev: 0, op: Op::Read },
            "page 17592186044416 of device 0",
        ),
    ];
    for (unit, bad, msg) in cases {
        let good = Request { time: 0, addr: 0, len: 1, dev: 0, op: Op::Read };
        // (the plain loop, then the one with a series: both name request 2)
        for series in [false, true] {
            let (mut p, _) = build("lru", &BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
            let mut rd = MemoryReader::new(vec![good, good, bad].into(), unit);
            let mut s = Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 });
            if series {
                s = s.with_series(1_000_000_000);
            }
            let e = s.run(&mut rd).unwrap_err().to_string();
            assert!(e.starts_with("request 2: ") && e.contains(msg), "{unit:?} series={series}: {e}");
        }
        // (and where the other callers get it)
        let e = pages_of(&bad, unit, 4096, 9).unwrap_err().to_string();
        assert!(e.starts_with("request 9: ") && e.contains(msg), "{unit:?}: {e}");
    }
}

#[test]
fn key_traces_on_device_zero_take_any_key() {
    // a page stream from `trace convert --to keys` carries device bits in its keys
    let big = (5u64 << PAGE_BITS) | 7;
    for policy in ["lru", "belady"] {
        let (mut p, _) = build(policy, &BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
        let reqs = vec![Request { time: 0, addr: big, len: 1, dev: 0, op: Op::Read }; 2];
        let mut rd = MemoryReader::new(reqs.into(), Unit::Pages);
        let c = Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).run(&mut rd).unwrap();
        assert_eq!((c.pages, c.hits), (2, 1), "{policy}");
    }
}

/// A policy that caches nothing on access but, on every tick after time 0,
/// fills page 7 and writes back page 3 — maintenance as PWC does it.
struct Maintainer;

impl Policy for Maintainer {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        fx.hit = a.key == 7 && a.op == Op::Read;
        if !fx.hit {
            fx.push(Io::Fetch { key: a.key, pages: 1 });
        }
    }
    fn has_maintenance(&self) -> bool {
        true
    }
    fn tick(&mut self, now: Nanos, fx: &mut Effects) {
        if now > 0 {
            fx.push(Io::Fetch { key: 7, pages: 1 });
            fx.push(Io::CacheWrite { key: 7 });
            fx.push(Io::WriteBack { key: 3, pages: 1 });
        }
    }
    fn drain(&mut self, _fx: &mut Effects) {}
    fn stats(&self) -> crate::policy::PolicyStats {
        crate::policy::PolicyStats::default()
    }
}

#[test]
fn maintenance_and_the_cache_device_are_charged_and_series_kept() {
    let reqs: Vec<Request> =
        (0..4u64).map(|i| Request { time: i * 100, addr: 7 * 4096, len: 4096, dev: 0, op: Op::Read }).collect();
    let mut b = Backing::new("dram(read=10ns,write=20ns)", &reqs, Unit::Bytes, 4096).unwrap();
    let mut c = Backing::new("nvram(read=1ns,write=2ns)", &reqs, Unit::Bytes, 4096).unwrap();
    let mut p = Maintainer;
    let mut rd = MemoryReader::new(reqs.into(), Unit::Bytes);
    let (counters, series) = Simulator::new(&mut p, SimConfig { page_bytes: 4096 })
        .with_backing(&mut b)
        .with_cache_device(&mut c)
        .with_series(200)
        .run_with_series(&mut rd)
        .unwrap();
    // Ticks at 100, 200, 300: each a fetch, a fill and a write-back.
    assert_eq!((counters.maintenance_reads, counters.maintenance_writes, counters.maintenance_cache_writes), (3, 3, 3));
    // backing: 3 × (read 10 + write 20); cache: 3 × (write 2 + write-back read 1)
    assert_eq!(counters.maintenance_ns, 3 * 30 + 3 * 3);
    // All four reads hit: each reads the cache device once.
    assert_eq!(counters.hits, 4);
    assert_eq!(c.stats().host_page_reads, 4 + 3);
    assert_eq!(b.stats().host_page_reads, 3);
    assert_eq!(series.len(), 2);
    assert_eq!((series[0].requests, series[1].requests), (2, 2));
    assert_eq!((series[0].maintenance_ns, series[1].maintenance_ns), (33, 66));
    assert_eq!(series[0].service_ns, 2);
}

#[test]
fn repeat_replays_back_to_back_one_mean_gap_apart() {
    let reqs: Vec<Request> =
        [10u64, 20, 40].iter().map(|&t| Request { time: t, addr: 0, len: 512, dev: 0, op: Op::Read }).collect();
    let src = TraceSource::Memory {
        name: "t".into(),
        format: "x".into(),
        requests: reqs.into(),
        unit: Unit::Bytes,
        skipped: 0,
    };
    let TraceSource::Memory { requests, name, .. } = src.repeat(3).unwrap() else { panic!() };
    // span 30, mean gap 10: copies start at 0, 40, 80
    let times: Vec<u64> = requests.iter().map(|r| r.time).collect();
    assert_eq!(times, vec![0, 10, 30, 40, 50, 70, 80, 90, 110]);
    assert_eq!(name, "t x3");
}

/// What "served without the backing device" means in each mode: the access's
/// own data neither read from backing nor written to it. Hits are counted
/// apart: a write-through write hit is a hit but is not served.
#[test]
fn served_pages_and_bytes_per_mode() {
    // read miss, read hit, write hit, write miss (of a new page), read of it.
    let reqs = vec![
        req(Op::Read, 0, 4096),
        req(Op::Read, 0, 4096),
        req(Op::Write, 0, 4096),
        req(Op::Write, 4096, 4096),
        req(Op::Read, 4096, 4096),
    ];
    let served = |mode| {
        let c = sim("lru", mode, 8, reqs.clone());
        (c.hits, c.served_pages, c.write_hits_to_backing, c.served_bytes)
    };
    // write-back: both writes absorbed, the read hit and the read of the written page served.
    assert_eq!(served(Mode::WriteBack), (3, 4, 0, 4 * 4096));
    // write-through: every write goes to backing; the write hit still counts as a hit.
    assert_eq!(served(Mode::WriteThrough), (3, 2, 1, 2 * 4096));
    // write-around: as write-through, and the write miss is not cached.
    assert_eq!(served(Mode::WriteAround), (2, 1, 1, 4096));
    // write-only: reads are not cached (both miss); both writes absorbed, the
    // second read hits the written page.
    assert_eq!(served(Mode::WriteOnly), (1, 3, 0, 3 * 4096));
    // read-only: the write to the cached page invalidates it: no hit, not served.
    assert_eq!(served(Mode::ReadOnly), (1, 1, 0, 4096));
    // A partial write miss that must read the old page first is not served.
    let c = sim("lru", Mode::WriteBack, 8, vec![req(Op::Write, 100, 200)]);
    assert_eq!((c.read_for_write, c.served_pages), (1, 0));
}

#[test]
fn served_bytes_are_the_request_bytes_in_each_served_page() {
    // Bytes [4000, 8200) over pages 0–2: 96 + 4096 + 8 bytes; read twice.
    let c = sim("lru", Mode::WriteBack, 8, vec![req(Op::Read, 4000, 4200), req(Op::Read, 4000, 4200)]);
    assert_eq!((c.served_pages, c.served_bytes, c.read_bytes), (3, 4200, 8400));
    let (mut p, _) = build("lru", &BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
    let reqs = vec![req(Op::Read, 4000, 4200), req(Op::Read, 4000, 4200), req(Op::Trim, 0, 4096)];
    let mut rd = MemoryReader::new(reqs.into(), Unit::Bytes);
    let (c, series) =
        Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).with_series(1000).run_with_series(&mut rd).unwrap();
    // trims are not page accesses and serve nothing
    assert_eq!((c.served_pages, c.trim_pages), (3, 1));
    let r = crate::metrics::Report::new(crate::metrics::RunInfo::default(), c, 0);
    assert_eq!((r.served_ratio, r.served_bytes_ratio), (0.5, 0.5));
    assert_eq!((series[0].served_pages, series[0].served_bytes, series[0].served_ratio), (3, 4200, 0.5));
}

/// Paper 000's baselines: the segment LRU fills whole segments on a read
/// miss (the next pages then hit), charged to both devices; an invalidating
/// write is neither a hit nor served.
#[test]
fn the_segment_baseline_serves_the_rest_of_a_filled_segment() {
    // 4-page (16 KiB) segments, 2 of them.
    let reqs = vec![req(Op::Read, 0, 4096), req(Op::Read, 4096, 8192), req(Op::Write, 0, 4096), req(Op::Read, 0, 4096)];
    let c = sim("segment-lru(segment=16KiB)", Mode::ReadOnly, 8, reqs);
    assert_eq!((c.pages, c.hits, c.served_pages, c.write_hits), (5, 2, 2, 0));
    // two fills of 4 pages read from backing and written to the cache; the write invalidated 4 pages
    assert_eq!((c.backing_reads, c.cache_writes, c.invalidations, c.backing_writes), (8, 8, 4, 1));
}

fn sim_aligned(policy: &str, mode: Mode, capacity: usize, reqs: Vec<Request>, align: bool) -> Counters {
    let (mut p, _) = build(policy, &BuildCtx { capacity, mode, page_bytes: 4096 }).unwrap();
    let mut rd = MemoryReader::new(reqs.into(), Unit::Bytes);
    Simulator::new(p.as_mut(), SimConfig { page_bytes: 4096 }).align_pages(align).run(&mut rd).unwrap()
}

/// Unaligned writes of every shape, over few pages so there are misses and hits.
fn unaligned_writes() -> Vec<Request> {
    let mut x: u64 = 0x9e37_79b9;
    (0..5_000)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let op = if (x >> 62) == 0 { Op::Read } else { Op::Write };
            req(op, (x >> 20) % (64 * 4096), 1 + ((x >> 40) % 12_000) as u32)
        })
        .collect()
}

#[test]
fn align_pages_has_no_read_for_write_and_off_is_unchanged() {
    for policy in ["lru", "cflru", "dpw-lru"] {
        for mode in [Mode::WriteBack, Mode::WriteOnly, Mode::WriteThrough] {
            let reqs = unaligned_writes();
            let default = sim("lru", Mode::WriteBack, 16, reqs.clone());
            let off = sim_aligned("lru", Mode::WriteBack, 16, reqs.clone(), false);
            assert_eq!(format!("{default:?}"), format!("{off:?}"), "off must be the default");
            assert!(default.read_for_write > 0, "the workload must have partial write misses");
            let on = sim_aligned(policy, mode, 16, reqs.clone(), true);
            assert_eq!(on.read_for_write, 0, "{policy} {mode}");
            // The same pages are touched either way; only the old-contents reads go.
            let off = sim_aligned(policy, mode, 16, reqs, false);
            assert_eq!((on.pages, on.write_pages, on.hits), (off.pages, off.write_pages, off.hits), "{policy} {mode}");
            assert_eq!(on.backing_reads, off.backing_reads - off.read_for_write, "{policy} {mode}");
        }
    }
}

/// A policy that passes everything on and records what its fast path answered.
struct Recording {
    inner: Box<dyn Policy>,
    fast: Vec<(usize, bool)>,
}

impl Policy for Recording {
    fn access(&mut self, a: &Access, fx: &mut Effects) {
        self.inner.access(a, fx)
    }
    fn drain(&mut self, fx: &mut Effects) {
        self.inner.drain(fx)
    }
    fn stats(&self) -> crate::policy::PolicyStats {
        self.inner.stats()
    }
    fn read_pages(&mut self, reads: &[PageRead], seq: u64, tally: &mut ReadTally) -> bool {
        let took = self.inner.read_pages(reads, seq, tally);
        self.fast.push((reads.len(), took));
        took
    }
}

// `sim`'s usual run takes a read-only stretch through the fast path in one
// call; once a page is dirty, the mode layer declines and is not asked again.
#[test]
fn read_runs_take_the_fast_path_until_a_page_is_dirty() {
    let (inner, _) = build("lru", &BuildCtx { capacity: 4, mode: Mode::WriteBack, page_bytes: 4096 }).unwrap();
    let mut p = Recording { inner, fast: Vec::new() };
    let mut reqs: Vec<Request> = (0..10).map(|i| req(Op::Read, i % 6, 1)).collect();
    reqs.push(req(Op::Write, 1, 1));
    reqs.extend((0..5).map(|i| req(Op::Read, i, 1)));
    reqs.push(req(Op::Read, 7, 1));
    let mut rd = MemoryReader::new(reqs.into(), Unit::Pages);
    let c = Simulator::new(&mut p, SimConfig { page_bytes: 4096 }).run(&mut rd).unwrap();
    assert_eq!(p.fast, vec![(10, true), (6, false)]);
    assert_eq!((c.requests, c.pages, c.hits), (17, 17, 5));
}
