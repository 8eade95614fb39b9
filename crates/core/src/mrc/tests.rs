use super::*;
use crate::sim::run::{run, RunSpec};

fn spec(cache_pages: u64) -> RunSpec {
    RunSpec::new("lru", cache_pages * 4096)
}

/// The profile at every size from 1 page to past the footprint equals a
/// separate `sim` run of LRU at that size: page, read, write and request hits,
/// and dirty write-backs.
fn equals_sim_at_every_size(workload: &str) {
    let source = TraceSource::Gen(workload.into()).load().unwrap();
    let profile = exact_lru(&source, 4096).unwrap();
    assert!(profile.counts.footprint_pages > 20, "{workload}: too small to test");
    for pages in 1..=profile.counts.footprint_pages + 2 {
        let r = run(&source, &spec(pages)).unwrap();
        let p = profile.at(pages);
        let c = &r.counters;
        let sim = (c.hits, c.read_hits, c.write_hits, c.request_hits, c.dirty_writebacks, c.drain_writes);
        let ours = (p.hits, p.read_hits, p.write_hits, p.request_hits, p.dirty_writebacks, p.dirty_at_end);
        assert_eq!(
            ours, sim,
            "{workload} at {pages} pages: (hits, read, write, request hits, write-backs, drained at the end)"
        );
    }
}

#[test]
fn single_pages_with_reads_and_writes() {
    equals_sim_at_every_size("zipf(alpha=0.8,keys=300,requests=4000,read=70%,seed=3)");
}

#[test]
fn multi_page_requests_and_partial_writes() {
    // byte-addressed requests of 1–5 pages, misaligned: request hits need every page,
    // partial writes read before writing (which changes no hit)
    equals_sim_at_every_size("uniform(keys=200,requests=1500,read=60%,size=1KiB..20KiB,align=1KiB,seed=5)");
}

#[test]
fn a_scan_loop_misses_until_it_fits() {
    equals_sim_at_every_size("mix(loop(keys=60,read=50%),zipf(keys=100,read=0%),weights=50%/50%,requests=1200,seed=2)");
}

#[test]
fn sizes_are_even_and_reach_the_footprint() {
    let source = TraceSource::Gen("zipf(keys=1000,requests=5000,seed=1)".into());
    let p = exact_lru(&source, 4096).unwrap();
    let sizes = p.even_sizes(4);
    assert_eq!(sizes.len(), 4);
    assert_eq!(*sizes.last().unwrap(), p.counts.footprint_pages);
    assert!(sizes.windows(2).all(|w| w[0] < w[1]));
    let full = p.at(p.counts.footprint_pages);
    assert_eq!(full.misses, p.counts.footprint_pages, "at the footprint only first uses miss");
    assert_eq!(full.dirty_writebacks, 0, "nothing is evicted");
}

/// A trace with no requests, as if `skipped` malformed lines were all it had.
fn empty(skipped: u64) -> TraceSource {
    let requests: Vec<crate::trace::Request> = Vec::new();
    TraceSource::Memory {
        name: "empty".into(),
        format: "mem".into(),
        requests: requests.into(),
        unit: crate::trace::Unit::Bytes,
        skipped,
    }
}

#[test]
fn a_trace_without_requests_is_an_error_not_a_curve_of_zeros() {
    // (it used to give every size a miss ratio of 0)
    let e = exact_lru(&empty(0), 4096).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some("no requests for a miss-ratio curve"));
    let e = crate::mrc::sized::exact_lru_sized(&empty(3), 4096, None, 20, None).err().map(|e| e.to_string());
    assert_eq!(e.as_deref(), Some("no requests for a miss-ratio curve (3 malformed lines skipped)"));
    // Sampled curves, SHARDS and miniature alike, name the trace too.
    let spec = crate::mrc::sample::SampleSpec { rate: 0.5, max_keys: None, seed: 0 };
    let sizes = crate::mrc::miniature::Sizes::Even(4);
    for policy in ["lru", "arc"] {
        let e = crate::mrc::miniature::sampled_curves(&empty(0), 4096, &[policy.to_string()], &sizes, &spec)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("empty: no requests for a miss-ratio curve"), "{policy}");
    }
}

#[test]
fn a_zero_page_is_refused() {
    let source = TraceSource::Gen("zipf(keys=10,requests=10)".into());
    assert!(matches!(exact_lru(&source, 0), Err(SimError::Config(_))));
}

#[test]
fn dirty_pages_at_the_end_are_those_not_yet_evicted() {
    // write A, write B: a one-page cache evicts A dirty (one write-back) and
    // ends with B dirty; a two-page cache ends with both dirty.
    let source = TraceSource::Gen("mix(scan(length=2,read=0%),weights=100%,requests=2,seed=1)".into());
    let p = exact_lru(&source, 4096).unwrap();
    assert_eq!((p.at(1).dirty_writebacks, p.at(1).dirty_at_end), (1, 1));
    assert_eq!((p.at(2).dirty_writebacks, p.at(2).dirty_at_end), (0, 2));
}

#[test]
fn live_lru_equals_an_lru_run_at_every_size_at_every_moment() {
    use crate::policy::registry::{self, BuildCtx};
    use crate::policy::Mode;
    use crate::sim::{SimConfig, Simulator};
    use crate::trace::Unit;
    let mut x = 3u64;
    let uses: Vec<(u64, bool)> = (0..5000)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (((x >> 33) % 300).min((x >> 13) % 300), x.is_multiple_of(3))
        })
        .collect();
    // Unbounded, and bounded to the largest size asked about (keys deeper
    // than twice it are forgotten as they pile up).
    let mut live = LiveLru::default();
    let mut bounded = LiveLru::bounded(40);
    for (i, &(k, w)) in uses.iter().enumerate() {
        live.access(k, w);
        bounded.access(k, w);
        if i % 1000 != 999 {
            continue;
        }
        for pages in [1, 7, 40, 150, 400] {
            let ctx = BuildCtx { capacity: pages, mode: Mode::WriteBack, page_bytes: 1 };
            let mut lru = registry::build("lru", &ctx).unwrap().0;
            let mut sim = Simulator::new(lru.as_mut(), SimConfig { page_bytes: 1 });
            for (t, &(k, w)) in uses[..=i].iter().enumerate() {
                let op = if w { Op::Write } else { Op::Read };
                sim.request(&Request { time: t as u64, addr: k, len: 1, dev: 0, op }, Unit::Pages).unwrap();
            }
            let c = &sim.counters;
            let want = LiveCounts {
                read_pages: c.read_pages,
                read_hits: c.read_hits,
                write_pages: c.write_pages,
                write_hits: c.write_hits,
                writebacks: c.dirty_writebacks,
            };
            assert_eq!(live.at(&[pages as u64])[0], want, "{pages} pages after {} uses", i + 1);
            if pages <= 40 {
                assert_eq!(bounded.at(&[pages as u64])[0], want, "bounded: {pages} pages after {} uses", i + 1);
            }
        }
    }
}
