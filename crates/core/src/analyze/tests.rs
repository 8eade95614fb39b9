//! The analyzer against brute-force computations on small random traces.

use super::timeline::{Axis, FIXED_MAX};
use super::*;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Requests over 3 devices, byte addresses, some sequential runs, some trims.
fn random_trace(seed: u64, n: usize) -> Vec<Request> {
    let mut g = Lcg(seed);
    let mut time = 0;
    let mut next = [0u64; 3];
    (0..n)
        .map(|_| {
            time += g.next(3) * 1_000_000 * g.next(2); // ties too
            let dev = g.next(3) as u32;
            let addr = if g.next(3) == 0 { next[dev as usize] } else { g.next(200) * 2048 };
            let len = (1 + g.next(6)) as u32 * 1024;
            next[dev as usize] = addr + len as u64;
            let op = match g.next(10) {
                0 => Op::Trim,
                1..=4 => Op::Write,
                _ => Op::Read,
            };
            Request { time, addr, len, dev, op }
        })
        .collect()
}

fn source(reqs: &[Request]) -> TraceSource {
    TraceSource::Memory {
        name: "t".into(),
        format: "memory".into(),
        requests: Arc::from(reqs),
        unit: Unit::Bytes,
        skipped: 0,
    }
}

/// (request index, time, key, dev, first page of its request) of every page access, trims left out.
fn accesses(reqs: &[Request], page: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        if r.op == Op::Trim {
            continue;
        }
        for key in pages_of(r, Unit::Bytes, page, i as u64).unwrap().keys() {
            out.push((i as u64, r.time, key));
        }
    }
    out
}

fn histogram(base: f64, values: impl Iterator<Item = u64>) -> Histogram {
    let mut h = LogHistogram::new(base);
    values.for_each(|v| h.add(v));
    h.report()
}

#[test]
fn reuse_and_popularity_match_brute_force() {
    for seed in 1..6 {
        let reqs = random_trace(seed, 1500);
        for base in [2.0, 1.5] {
            let opts = Options { page_bytes: 4096, log_base: base, ..Options::default() };
            let a = analyze(&source(&reqs), opts).unwrap();
            let acc = accesses(&reqs, 4096);
            // reuse distance by scanning back to the previous use
            let mut distances = Vec::new();
            let mut gaps = Vec::new();
            let mut times = Vec::new();
            for (i, &(_, t, k)) in acc.iter().enumerate() {
                if let Some(j) = acc[..i].iter().rposition(|a| a.2 == k) {
                    let between: HashSet<u64> = acc[j + 1..i].iter().map(|a| a.2).collect();
                    distances.push(between.len() as u64 + 1);
                    gaps.push((i - j) as u64);
                    times.push(t - acc[j].1);
                }
            }
            assert_eq!(a.reuse_distance, histogram(base, distances.into_iter()), "seed {seed}");
            assert_eq!(a.reuse_accesses, histogram(base, gaps.into_iter()));
            assert_eq!(a.reuse_time_ns, histogram(base, times.into_iter()));
            // popularity: counts per key, then the table
            let mut uses: BTreeMap<u64, u64> = BTreeMap::new();
            acc.iter().for_each(|a| *uses.entry(a.2).or_default() += 1);
            assert_eq!(a.footprint_pages, uses.len() as u64);
            let mut by_freq: BTreeMap<u64, u64> = BTreeMap::new();
            uses.values().for_each(|&u| *by_freq.entry(u).or_default() += 1);
            let table: Vec<(u64, u64)> = a.popularity.frequencies.iter().map(|f| (f.frequency, f.pages)).collect();
            assert_eq!(table, by_freq.into_iter().rev().collect::<Vec<_>>());
            let last = a.popularity.frequencies.last().unwrap().last_rank;
            assert_eq!(last, uses.len() as u64);
            // α by the centred formula, a different computation of the same least squares
            let mut f: Vec<f64> = uses.values().map(|&u| u as f64).collect();
            f.sort_by(|a, b| b.total_cmp(a));
            let xs: Vec<f64> = (1..=f.len()).map(|r| (r as f64).ln()).collect();
            let ys: Vec<f64> = f.iter().map(|v| v.ln()).collect();
            let (mx, my) = (xs.iter().sum::<f64>() / xs.len() as f64, ys.iter().sum::<f64>() / ys.len() as f64);
            let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
            let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
            assert!((a.popularity.zipf_alpha.unwrap() + sxy / sxx).abs() < 1e-9);
        }
    }
}

/// The working set, footprint, counts and heatmap of each interval, by sets.
fn check_timeline(reqs: &[Request], a: &Analysis) {
    let tl = &a.timeline;
    let w = tl.interval;
    let x = |i: u64, t: u64| if tl.axis == Axis::Time { t } else { i };
    let acc = accesses(reqs, a.page_bytes);
    let n = tl.intervals.len();
    let mut sets = vec![HashSet::new(); n];
    let mut seen = HashSet::new();
    let mut new = vec![0u64; n];
    for &(i, t, k) in &acc {
        let slot = (x(i, t) / w) as usize;
        sets[slot].insert(k);
        if seen.insert(k) {
            new[slot] += 1;
        }
    }
    let mut footprint = 0;
    for (s, iv) in tl.intervals.iter().enumerate() {
        footprint += new[s];
        assert_eq!(iv.start, s as u64 * w);
        assert_eq!(iv.distinct_pages, sets[s].len() as u64, "interval {s} of {w}");
        assert_eq!(iv.counts.new_pages, new[s]);
        assert_eq!(iv.footprint_pages, footprint);
        let in_slot = reqs.iter().enumerate().filter(|(i, r)| x(*i as u64, r.time) / w == s as u64);
        let (mut reqs_n, mut writes, mut read_bytes) = (0, 0, 0);
        for (_, r) in in_slot {
            reqs_n += 1;
            writes += (r.op == Op::Write) as u64;
            read_bytes += if r.op == Op::Read { r.len as u64 } else { 0 };
        }
        assert_eq!((iv.counts.requests, iv.counts.writes, iv.counts.read_bytes), (reqs_n, writes, read_bytes));
    }
    // heatmap: page accesses by (page / pages_per_row, interval)
    let h = &tl.heatmap;
    let mut grid: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for &(i, t, k) in &acc {
        let page = crate::key::split_key(k).1;
        *grid.entry((page / h.pages_per_row, x(i, t) / w)).or_default() += 1;
    }
    for (row, cols) in h.counts.iter().enumerate() {
        for (col, &c) in cols.iter().enumerate() {
            assert_eq!(c, grid.remove(&(row as u64, col as u64)).unwrap_or(0), "cell {row},{col}");
        }
    }
    assert!(grid.values().all(|&c| c == 0), "cells left out: {grid:?}");
}

#[test]
fn timelines_match_brute_force_at_fixed_and_automatic_widths() {
    let reqs = random_trace(7, 3000);
    for interval in [IntervalSpec::Auto, IntervalSpec::Time(7_000_000), IntervalSpec::Requests(37)] {
        let a = analyze(&source(&reqs), Options { interval, ..Options::default() }).unwrap();
        assert_eq!(a.timeline.axis, if interval == IntervalSpec::Requests(37) { Axis::Requests } else { Axis::Time });
        if interval == IntervalSpec::Auto {
            assert!(a.timeline.intervals.len() > timeline::AUTO_MAX / 2 - 2, "{}", a.timeline.intervals.len());
            assert!(a.timeline.intervals.len() <= timeline::AUTO_MAX);
        }
        check_timeline(&reqs, &a);
    }
    // without times, auto counts requests
    let untimed: Vec<Request> = reqs.iter().map(|r| Request { time: 0, ..*r }).collect();
    let a = analyze(&source(&untimed), Options::default()).unwrap();
    assert_eq!(a.timeline.axis, Axis::Requests);
    check_timeline(&untimed, &a);
}

#[test]
fn sequential_runs_and_devices_match_brute_force() {
    let reqs = random_trace(3, 2000);
    let a = analyze(&source(&reqs), Options::default()).unwrap();
    let mut runs = Vec::new();
    let mut open: BTreeMap<u32, (u64, u64)> = BTreeMap::new(); // dev -> (next addr, run)
    for r in &reqs {
        match open.get_mut(&r.dev) {
            Some((next, run)) if *next == r.addr => {
                *run += 1;
                *next = r.addr + r.len as u64;
            }
            _ => {
                if let Some((_, run)) = open.insert(r.dev, (r.addr + r.len as u64, 1)) {
                    runs.push(run);
                }
            }
        }
    }
    runs.extend(open.values().map(|v| v.1));
    assert_eq!(a.sequentiality.runs, runs.len() as u64);
    assert_eq!(a.sequentiality.sequential_requests, runs.iter().map(|r| r - 1).sum::<u64>());
    assert_eq!(a.sequentiality.run_lengths, histogram(2.0, runs.into_iter()));
    assert_eq!(a.devices.len(), 3);
    for d in &a.devices {
        let mine: Vec<&Request> = reqs.iter().filter(|r| r.dev == d.dev).collect();
        assert_eq!(d.requests, mine.len() as u64);
        assert_eq!(d.trims, mine.iter().filter(|r| r.op == Op::Trim).count() as u64);
        let keys: HashSet<u64> = mine
            .iter()
            .filter(|r| r.op != Op::Trim)
            .flat_map(|r| pages_of(r, Unit::Bytes, 4096, 0).unwrap().keys())
            .collect();
        assert_eq!(d.footprint_pages, keys.len() as u64);
        assert_eq!(d.first_page, mine.iter().map(|r| r.addr / 4096).min().unwrap());
    }
    assert_eq!(a.devices.iter().map(|d| d.footprint_pages).sum::<u64>(), a.footprint_pages);
    assert_eq!(a.reads + a.writes + a.trims, a.requests);
}

#[test]
fn empty_trace_and_bad_options() {
    let e = analyze(&source(&[]), Options::default()).unwrap_err();
    assert_eq!(e.to_string(), "no requests to analyze");
    let a = Analyzer::new(Options::default(), Unit::Bytes).unwrap().finish("t".into(), "memory".into(), 0);
    assert_eq!((a.requests, a.footprint_pages), (0, 0));
    assert_eq!(a.popularity.zipf_alpha, None);
    assert!(a.timeline.intervals.is_empty() && a.timeline.heatmap.counts.is_empty());
    for bad in ["0s", "0req", "-1s", "1.5req", "soon", "", "1e30req"] {
        assert!(bad.parse::<IntervalSpec>().is_err(), "{bad}");
    }
    assert_eq!("1Mreq".parse::<IntervalSpec>(), Ok(IntervalSpec::Requests(1_000_000)));
    // 2^64 requests used to become 2^64 - 1 without a word
    for big in ["18446744073709551616req", "18446744073709552Kreq"] {
        let e = big.parse::<IntervalSpec>().unwrap_err();
        assert!(e.contains("too large: a request count is at most 2^64 - 1"), "{big}: {e}");
    }
    // 2^64 - 1 is a count, but no interval width (below 2^63, see the next test)
    let e = "18446744073709551615req".parse::<IntervalSpec>().unwrap_err();
    assert!(e.contains("must be below 2^63"), "{e}");
    assert_eq!("60s".parse::<IntervalSpec>(), Ok(IntervalSpec::Time(60_000_000_000)));
    assert_eq!("auto".parse::<IntervalSpec>(), Ok(IntervalSpec::Auto));
    for base in [1.0, 0.5, f64::NAN, f64::INFINITY] {
        assert!(analyze(&source(&[]), Options { log_base: base, ..Options::default() }).is_err());
    }
    assert!(analyze(&source(&[]), Options { page_bytes: 0, ..Options::default() }).is_err());
    // a width that would make too many intervals is an error, not a huge allocation
    let reqs = [Request { time: 10_000_000_000, addr: 0, len: 512, dev: 0, op: Op::Read }];
    let e = analyze(&source(&reqs), Options { interval: IntervalSpec::Time(1), ..Options::default() }).unwrap_err();
    assert!(e.to_string().contains(&FIXED_MAX.to_string()), "{e}");
}

#[test]
fn far_addresses_and_huge_requests_fit_the_heatmap() {
    let reqs = [
        Request { time: 0, addr: 0, len: 4096, dev: 0, op: Op::Read },
        Request { time: 1, addr: (1 << 55) - 4096, len: 4096, dev: 0, op: Op::Write },
        Request { time: 2, addr: 1 << 30, len: u32::MAX, dev: 1, op: Op::Read },
    ];
    let a = analyze(&source(&reqs), Options::default()).unwrap();
    check_timeline(&reqs, &a);
    assert!(a.timeline.heatmap.counts.len() <= timeline::HEAT_ROWS);
}

#[test]
fn log_bases_near_1_are_refused_not_binned() {
    // Base 1.000001 needed 44 million bins over the range of a u64 (1.55 GB
    // and 1.1 GB of JSON on 25 k requests); bins are capped at 65,536.
    let reqs = random_trace(1, 50);
    for base in [1.000001, 1.0000001, 1.0 + f64::EPSILON, 1.0006] {
        let e = analyze(&source(&reqs), Options { log_base: base, ..Options::default() }).unwrap_err();
        assert!(e.to_string().starts_with(&format!("--log-base {base}:")), "{e}");
        assert!(e.to_string().contains("65536"), "{e}");
    }
    // The least base accepted (bins::min_base): its bins fit the cap whatever the values.
    let a = analyze(&source(&reqs), Options { log_base: 1.000678, ..Options::default() }).unwrap();
    assert!(a.reuse_time_ns.bins.len() <= 65_536 && !a.reuse_time_ns.bins.is_empty());
}

#[test]
fn fixed_intervals_are_capped_at_65536() {
    // A request at 65,536 ns with 1 ns intervals needs 65,537 of them: an
    // error before any is made (the cap was 2^20, 1.9 GB at `--interval 1req`).
    let first = Request { time: 0, addr: 0, len: 512, dev: 0, op: Op::Read };
    let at = |t: u64| [first, Request { time: t, ..first }];
    let one_ns = Options { interval: IntervalSpec::Time(1), ..Options::default() };
    let e = analyze(&source(&at(65_536)), one_ns).unwrap_err();
    assert!(e.to_string().contains("more than 65536 intervals"), "{e}");
    assert_eq!(analyze(&source(&at(65_535)), one_ns).unwrap().timeline.intervals.len(), 65_536);
}

#[test]
fn interval_widths_fit_a_signed_64_bit_integer() {
    // Python's analyze adds the width to each start in int64 columns: a width
    // of 2^63 or more (interval=2**64 gave an OverflowError there) is refused.
    // past 2^64 - 1 it is no number of nanoseconds at all
    let e = "18446744073709551616ns".parse::<IntervalSpec>().unwrap_err();
    assert!(e.contains("too long: a duration is at most 2^64 - 1 ns"), "{e}");
    for bad in ["18446744073709551615ns", "9223372036854775808ns", "1e19req", "10000000000000000000req"] {
        let e = bad.parse::<IntervalSpec>().unwrap_err();
        assert!(e.starts_with(&format!("interval {bad:?}: must be below 2^63")), "{e}");
    }
    assert_eq!("9000000000000000000ns".parse::<IntervalSpec>(), Ok(IntervalSpec::Time(9_000_000_000_000_000_000)));
    assert_eq!("9000000000000000000req".parse::<IntervalSpec>(), Ok(IntervalSpec::Requests(9_000_000_000_000_000_000)));
}
