use super::values::parse_count;
use super::zipf::{Alias, Permutation, ZipfKeys};
use super::*;
use crate::trace::{read_all, Op};

fn gen(spec: &str) -> Vec<Request> {
    let mut r = open(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    read_all(r.as_mut()).unwrap()
}

fn err(spec: &str) -> String {
    match Generator::new(spec) {
        Ok(_) => panic!("{spec} should be rejected"),
        Err(e) => e.to_string(),
    }
}

fn frac(reqs: &[Request], f: impl Fn(&Request) -> bool) -> f64 {
    reqs.iter().filter(|r| f(r)).count() as f64 / reqs.len() as f64
}

#[test]
fn grammar() {
    let p = parse("mix( zipf(alpha=1.0,keys=1M), scan(length=100k), weights=90%/10%)").unwrap();
    assert_eq!(p.name, "mix");
    assert_eq!(p.components.len(), 2);
    assert_eq!(p.components[0].params, vec![("alpha".into(), "1.0".into()), ("keys".into(), "1M".into())]);
    assert_eq!(p.params, vec![("weights".into(), "90%/10%".into())]);
    // a list value continues after its commas
    let p = parse("uniform(size=4KiB:70%,64KiB:30%,read=50%)").unwrap();
    assert_eq!(p.params[0], ("size".into(), "4KiB:70%,64KiB:30%".into()));
    assert_eq!(p.params[1], ("read".into(), "50%".into()));
    assert_eq!(parse_count("10M"), Some(10_000_000));
    assert_eq!(parse_count("100k"), Some(100_000));
    assert_eq!(parse_count("1.5M"), Some(1_500_000));
    assert_eq!(parse_count("1_000"), Some(1000));
    assert_eq!(parse_count("1.5"), None);
    assert_eq!(parse_count("-3"), None);
    assert_eq!(parse_count("M"), None);
}

#[test]
fn every_listed_generator_opens_with_its_defaults() {
    for (name, params, about) in list().iter().map(|g| (&g.name, g.defaults(), &g.about)) {
        assert!(!about.is_empty());
        let spec = if *name == "mix" {
            "mix(zipf,uniform,requests=1000)".to_string()
        } else if *name == "desktop" {
            "desktop(days=1,per_day=1000)".to_string()
        } else {
            format!("{name}(requests=1000)")
        };
        assert_eq!(gen(&spec).len(), 1000, "{name} ({params})");
    }
    assert_eq!(Generator::new("zipf").unwrap().remaining(), 1_000_000);
}

#[test]
fn same_seed_same_stream_different_seed_different_stream() {
    for spec in [
        "zipf(alpha=0.9,keys=10k,requests=20k,seed=7,read=70%,iat=exp(10us))",
        "uniform(keys=10k,requests=20k,seed=7,size=4KiB..64KiB)",
        "mix(zipf(keys=10k),uniform(keys=5k),weights=3/1,requests=20k,seed=7)",
        "iometer-b(requests=20k,seed=7)",
    ] {
        let a = gen(spec);
        assert_eq!(a, gen(spec), "{spec}");
        assert_ne!(a, gen(&spec.replace("seed=7", "seed=8")), "{spec}");
    }
}

#[test]
fn batches_stream_the_same_requests() {
    let spec = "zipf(keys=1000,requests=10001,seed=3)";
    let whole = gen(spec);
    let mut r = open(spec).unwrap();
    let (mut got, mut batch) = (Vec::new(), Vec::new());
    while r.read_batch(&mut batch, 333).unwrap() > 0 {
        assert!(batch.len() <= 333);
        got.extend_from_slice(&batch);
    }
    assert_eq!(got, whole);
}

#[test]
fn read_ratio_and_sizes() {
    let reqs = gen("uniform(keys=100k,requests=100k,read=70%,size=4KiB:70%,64KiB:30%)");
    assert!((frac(&reqs, |r| r.op == Op::Read) - 0.7).abs() < 0.01);
    assert!((frac(&reqs, |r| r.len == 4096) - 0.7).abs() < 0.01);
    assert!(reqs.iter().all(|r| r.len == 4096 || r.len == 65536));
    assert!(reqs.iter().all(|r| r.addr % 4096 == 0 && r.addr < 100_000 * 4096));
    assert_eq!(open("uniform(size=4KiB)").unwrap().unit(), Unit::Bytes);

    // a range: whole sectors, uniform: mean (8 + 128) / 2 sectors
    let reqs = gen("uniform(requests=100k,size=4KiB..64KiB,align=512)");
    assert!(reqs.iter().all(|r| r.len % 512 == 0 && (4096..=65536).contains(&r.len)));
    let mean = reqs.iter().map(|r| r.len as f64).sum::<f64>() / reqs.len() as f64;
    assert!((mean / (68.0 * 512.0) - 1.0).abs() < 0.01, "mean {mean}");
    assert!(reqs.iter().any(|r| r.addr % 4096 != 0));

    // keys: one page per request, reads by default
    let mut r = open("uniform(keys=1000,requests=10k)").unwrap();
    assert_eq!(r.unit(), Unit::Pages);
    let reqs = read_all(r.as_mut()).unwrap();
    assert!(reqs.iter().all(|r| r.len == 1 && r.addr < 1000 && r.op == Op::Read && r.dev == 0 && r.time == 0));
}

/// Counts of each key for a zipf spec with `permute=false` (key = rank - 1).
fn zipf_counts(alpha: f64, keys: usize, requests: usize) -> Vec<f64> {
    let mut counts = vec![0.0; keys];
    for r in gen(&format!("zipf(alpha={alpha},keys={keys},requests={requests},permute=false,seed=11)")) {
        counts[r.addr as usize] += 1.0;
    }
    counts
}

#[test]
fn zipf_follows_its_law() {
    for alpha in [0.0, 0.6, 0.9, 1.0, 1.2] {
        let (keys, n) = (1000, 1_000_000);
        let counts = zipf_counts(alpha, keys, n);
        let h: f64 = (1..=keys).map(|k| (k as f64).powf(-alpha)).sum();
        // chi-square over all keys: 999 degrees of freedom, mean 999, sd ≈ 45
        let chi2: f64 = (1..=keys)
            .map(|k| {
                let e = n as f64 * (k as f64).powf(-alpha) / h;
                (counts[k - 1] - e).powi(2) / e
            })
            .sum();
        assert!(chi2 < 999.0 + 5.0 * 45.0, "alpha {alpha}: chi2 {chi2}");
        // and the head: count(1)/count(k) ≈ k^alpha
        for k in [2usize, 4, 10] {
            let ratio = counts[0] / counts[k - 1];
            // 4 standard deviations of a ratio of two Poisson counts
            let (e1, ek) = (n as f64 / h, n as f64 * (k as f64).powf(-alpha) / h);
            let tol = 4.0 * (1.0 / e1 + 1.0 / ek).sqrt();
            assert!((ratio / (k as f64).powf(alpha) - 1.0).abs() < tol, "alpha {alpha} k {k}: {ratio}");
        }
    }
}

#[test]
fn both_rank_samplers_follow_the_law() {
    let (n, draws, alpha) = (500u64, 500_000, 0.8);
    let h: f64 = (1..=n).map(|k| (k as f64).powf(-alpha)).sum();
    let table = ZipfKeys::new(n, alpha, None);
    let rejection = ZipfKeys::Rejection { dist: rand_distr::Zipf::new(n, alpha).unwrap(), n, perm: None };
    for keys in [table, rejection] {
        let mut rng = Rng::seed_from_u64(2);
        let mut counts = vec![0.0; n as usize];
        for _ in 0..draws {
            counts[keys.next(&mut rng) as usize] += 1.0;
        }
        let chi2: f64 = (0..n as usize)
            .map(|i| {
                let e = draws as f64 * ((i + 1) as f64).powf(-alpha) / h;
                (counts[i] - e).powi(2) / e
            })
            .sum();
        // 499 degrees of freedom: sd ≈ 32
        assert!(chi2 < 499.0 + 5.0 * 32.0, "chi2 {chi2}");
    }
}

#[test]
fn both_samplers_permute_ranks_alike() {
    let n = 300u64;
    let perm = Permutation::new(n, &mut Rng::seed_from_u64(4));
    let table = ZipfKeys::new(n, 1.5, Some(perm.clone()));
    let rejection = ZipfKeys::Rejection { dist: rand_distr::Zipf::new(n, 1.5).unwrap(), n, perm: Some(perm.clone()) };
    for keys in [table, rejection] {
        let mut rng = Rng::seed_from_u64(6);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..100_000 {
            counts[keys.next(&mut rng) as usize] += 1;
        }
        let hottest = (0..n).max_by_key(|&k| counts[k as usize]).unwrap();
        assert_eq!(hottest, perm.apply(0));
        // rank 2 is 2^1.5 ≈ 2.8 times rarer
        let ratio = counts[hottest as usize] as f64 / counts[perm.apply(1) as usize] as f64;
        assert!((ratio / 2f64.powf(1.5) - 1.0).abs() < 0.05, "{ratio}");
    }
}

#[test]
fn alias_table_is_exact_on_small_weights() {
    let t = Alias::new(vec![1.0, 0.0, 3.0, 4.0]);
    let mut rng = Rng::seed_from_u64(9);
    let mut counts = [0u32; 4];
    for _ in 0..80_000 {
        counts[t.sample(&mut rng) as usize] += 1;
    }
    assert_eq!(counts[1], 0);
    for (i, w) in [(0, 1.0), (2, 3.0), (3, 4.0)] {
        assert!((counts[i] as f64 / 10_000.0 / w - 1.0).abs() < 0.05, "{counts:?}");
    }
}

#[test]
fn zipf_permutation_scatters_hot_keys_keeping_the_law() {
    let keys = 1000;
    let mut counts = vec![0.0; keys];
    for r in gen("zipf(alpha=1.0,keys=1000,requests=1M,seed=11)") {
        counts[r.addr as usize] += 1.0;
    }
    let mut order: Vec<usize> = (0..keys).collect();
    order.sort_by(|&a, &b| counts[b].partial_cmp(&counts[a]).unwrap());
    // hot keys are not the first keys
    assert!(order[..10].iter().filter(|&&k| k < 10).count() <= 2, "{:?}", &order[..10]);
    // the sorted frequencies still follow 1/k
    let (mut sorted, plain) = (counts.clone(), zipf_counts(1.0, keys, 1_000_000));
    sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
    for k in [0, 1, 9, 99] {
        assert!((sorted[k] / plain[k] - 1.0).abs() < 0.1, "rank {}: {} vs {}", k + 1, sorted[k], plain[k]);
    }
}

#[test]
fn permutation_is_a_bijection() {
    let mut rng = Rng::seed_from_u64(5);
    for n in [1u64, 2, 3, 7, 64, 100, 1000, 4097] {
        let p = Permutation::new(n, &mut rng);
        let mut seen = vec![false; n as usize];
        for x in 0..n {
            let y = p.apply(x);
            assert!(y < n && !seen[y as usize], "n {n}");
            seen[y as usize] = true;
        }
    }
}

#[test]
fn scan_and_loop_are_sequential() {
    let reqs = gen("scan(start=100,length=5,requests=12)");
    let keys: Vec<u64> = reqs.iter().map(|r| r.addr).collect();
    assert_eq!(keys, [100, 101, 102, 103, 104, 100, 101, 102, 103, 104, 100, 101]);
    let reqs = gen("loop(keys=3,requests=7)");
    assert_eq!(reqs.iter().map(|r| r.addr).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2, 0]);
    // bytes: each request starts where the previous one ended (in whole blocks)
    let reqs = gen("scan(length=1000,requests=100,size=4KiB/8KiB)");
    for w in reqs.windows(2) {
        assert_eq!(w[1].addr, w[0].addr + w[0].len as u64);
    }
}

#[test]
fn mix_draws_components_by_weight() {
    let reqs = gen("mix(zipf(alpha=1.0,keys=1M),scan(start=1M,length=100k),weights=90%/10%,requests=100k)");
    let scans: Vec<u64> = reqs.iter().filter(|r| r.addr >= 1_000_000).map(|r| r.addr).collect();
    assert!((scans.len() as f64 / 1e5 - 0.1).abs() < 0.01);
    // the scan component keeps its own cursor between its turns
    assert!(scans.windows(2).all(|w| w[1] == w[0] + 1));
    // components keep their own op and size settings
    let reqs = gen("mix(uniform(read=100%,size=4KiB),uniform(read=0%,size=64KiB),requests=10k)");
    assert!(reqs.iter().all(|r| (r.op == Op::Read) == (r.len == 4096)));
}

#[test]
fn devices_split_the_key_space() {
    let reqs = gen("uniform(keys=1000,devices=4,requests=10k)");
    assert!(reqs.iter().all(|r| r.dev < 4 && r.addr < 250));
    assert!((frac(&reqs, |r| r.dev == 3) - 0.25).abs() < 0.02);
}

#[test]
fn inter_arrival_times() {
    let reqs = gen("uniform(requests=4,iat=100us)");
    assert_eq!(reqs.iter().map(|r| r.time).collect::<Vec<_>>(), [0, 100_000, 200_000, 300_000]);
    let reqs = gen("uniform(requests=100k,iat=exp(1ms))");
    let mean = reqs.last().unwrap().time as f64 / (reqs.len() - 1) as f64;
    assert!((mean / 1e6 - 1.0).abs() < 0.02, "mean gap {mean}");
    assert!(reqs.windows(2).all(|w| w[0].time <= w[1].time));
}

/// Thread of a byte address in the default iometer layout: file t is 512KiB·2^t at 512KiB·(2^t - 1).
fn thread_of(addr: u64) -> usize {
    (63 - (addr / (512 << 10) + 1).leading_zeros()) as usize
}

#[test]
fn iometer_workloads_match_paper_002_table_2() {
    for (name, random, iat_ms) in [("iometer-a", 1.0, 158.0), ("iometer-b", 0.5, 90.0), ("iometer-c", 0.0, 72.0)] {
        let g = Generator::new(name).unwrap();
        assert_eq!(g.remaining(), 500_000, "{name}");
        assert_eq!(g.unit(), Unit::Bytes);
        let reqs = gen(&format!("{name}(requests=100k)"));
        // write-only, records 4KiB..512KiB powers of two, 12 threads each within its own file
        assert!(reqs.iter().all(|r| r.op == Op::Write && r.dev == 0));
        assert!(reqs.iter().all(|r| r.len.is_power_of_two() && (4096..=512 << 10).contains(&r.len)));
        let mut per_thread = [0u64; 12];
        let mut last_end = [None::<u64>; 12];
        let (mut big, mut sequential) = (0, 0);
        for r in &reqs {
            let t = thread_of(r.addr);
            assert!(t < 12 && thread_of(r.addr + r.len as u64 - 1) == t, "{name}: {r:?} crosses its file");
            per_thread[t] += 1;
            let (file_start, file_end) = ((512u64 << 10) * ((1 << t) - 1), (512u64 << 10) * ((2 << t) - 1));
            // sequential: right after this thread's last request, or back at the start when it didn't fit
            let seq = last_end[t].is_some_and(|e| e == r.addr || (r.addr == file_start && e + r.len as u64 > file_end));
            if random == 0.0 {
                assert!(seq || last_end[t].is_none(), "{name}: {r:?} is not sequential");
            }
            // in files of 128MiB and more, a random request almost never looks sequential
            if t >= 8 {
                big += 1;
                sequential += seq as u64;
            }
            last_end[t] = Some(r.addr + r.len as u64);
        }
        // equal I/O rates
        assert!(per_thread.iter().all(|&c| (c as f64 / (reqs.len() as f64 / 12.0) - 1.0).abs() < 0.05));
        let seq = sequential as f64 / big as f64;
        assert!((seq - (1.0 - random)).abs() < 0.05, "{name}: sequential share {seq}");
        let mean_iat = reqs.last().unwrap().time as f64 / (reqs.len() - 1) as f64 / 1e6;
        assert!((mean_iat / iat_ms - 1.0).abs() < 0.02, "{name}: mean gap {mean_iat} ms");
        if random == 1.0 {
            assert!(reqs.iter().all(|r| r.addr % r.len as u64 == 0), "{name}: random I/O aligned to its size");
        }
    }
    // every parameter can be overridden
    let reqs =
        gen("iometer-a(threads=2,file_min=1MiB,file_max=1MiB,size=4KiB,read=100%,iat=0,requests=1000,devices=2)");
    assert!(reqs.iter().all(|r| r.op == Op::Read && r.len == 4096 && r.addr < 1 << 20 && r.dev < 2 && r.time == 0));
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let e = err("zipff(alpha=1)");
    assert!(e.contains("unknown workload \"zipff\"") && e.contains("zipf, uniform"), "{e}");
    let e = err("zipf(alpah=1)");
    assert!(e.contains("no parameter \"alpah\"") && e.contains("alpha"), "{e}");
    let e = err("zipf(alpha=-1)");
    assert!(e.contains("alpha=-1"), "{e}");
    let e = err("zipf(keys=lots)");
    assert!(e.contains("keys=lots") && e.contains("count"), "{e}");
    let e = err("uniform(read=150%)");
    assert!(e.contains("read=150%"), "{e}");
    let e = err("uniform(size=4KiB:70%,64KiB)");
    assert!(e.contains("size=4KiB:70%,64KiB") && e.contains("weight"), "{e}");
    let e = err("uniform(size=64KiB..4KiB)");
    assert!(e.contains("size=64KiB..4KiB"), "{e}");
    let e = err("uniform(unit=keys,size=4KiB)");
    assert!(e.contains("size=4KiB") && e.contains("unit=bytes"), "{e}");
    let e = err("uniform(iat=soon)");
    assert!(e.contains("iat=soon"), "{e}");
    let e = err("mix(zipf,uniform(size=4KiB))");
    assert!(e.contains("same unit"), "{e}");
    let e = err("mix(zipf(seed=3),uniform)");
    assert!(e.contains("seed=3") && e.contains("inside mix"), "{e}");
    let e = err("mix(zipf,uniform,weights=1/2/3)");
    assert!(e.contains("3 weights for 2 components"), "{e}");
    let e = err("mix(weights=1)");
    assert!(e.contains("at least one component"), "{e}");
    let e = err("zipf(uniform)");
    assert!(e.contains("components go in mix"), "{e}");
    let e = err("zipf(alpha=1");
    assert!(e.contains("parentheses"), "{e}");
    let e = err("zipf(alpha=1,alpha=2)");
    assert!(e.contains("given twice"), "{e}");
    let e = err("iometer-a(unit=keys)");
    assert!(e.contains("no parameter \"unit\""), "{e}");
    let e = err("uniform(keys=0)");
    assert!(e.contains("keys=0") && e.contains("at least 1"), "{e}");
}

// ---- desktop ----

const DAY: u64 = 86_400_000_000_000;
const HOUR: u64 = 3_600_000_000_000;

/// A small desktop: 1 GiB disk, 64 MiB working set.
const SMALL: &str = "desktop(days=3,per_day=20k,disk=1GiB,hot=64MiB,seed=5)";

fn with(spec: &str, extra: &str) -> String {
    format!("{},{extra})", spec.strip_suffix(')').unwrap())
}

/// Distinct 4 KiB blocks (device, block) touched on each day.
fn blocks_per_day(reqs: &[Request], days: usize) -> Vec<hashbrown::HashSet<(u32, u64)>> {
    let mut sets = vec![hashbrown::HashSet::new(); days];
    for r in reqs {
        let set = &mut sets[(r.time / DAY) as usize];
        for b in r.addr / 4096..(r.addr + r.len as u64) / 4096 {
            set.insert((r.dev, b));
        }
    }
    sets
}

#[test]
#[ignore]
fn desktop_diagnostics() {
    let spec = std::env::var("DESKTOP").unwrap_or("desktop(days=3)".into());
    let reqs = gen(&spec);
    let days = (reqs.last().unwrap().time / DAY + 1) as usize;
    let sets = blocks_per_day(&reqs, days);
    for d in 0..days {
        let overlap =
            if d > 0 { sets[d].intersection(&sets[d - 1]).count() as f64 / sets[d].len() as f64 } else { 0.0 };
        println!(
            "day {d}: {} blocks ({} MiB) touched, overlap with the day before {overlap:.3}",
            sets[d].len(),
            sets[d].len() / 256
        );
    }
    // block accesses of each day that hit a block touched the day before
    let (mut hits, mut total) = (vec![0u64; days], vec![0u64; days]);
    for r in &reqs {
        let d = (r.time / DAY) as usize;
        for b in r.addr / 4096..(r.addr + r.len as u64) / 4096 {
            total[d] += 1;
            hits[d] += (d > 0 && sets[d - 1].contains(&(r.dev, b))) as u64;
        }
    }
    println!(
        "block accesses hitting yesterday's blocks: {:?}",
        (0..days).map(|d| format!("{:.3}", hits[d] as f64 / total[d] as f64)).collect::<Vec<_>>()
    );
    let w = frac(&reqs, |r| r.op == Op::Write);
    let bytes: f64 = reqs.iter().map(|r| r.len as f64).sum();
    let wb: f64 = reqs.iter().filter(|r| r.op == Op::Write).map(|r| r.len as f64).sum();
    println!(
        "writes {w:.4} of requests, {:.4} of bytes; mean size {:.1} KiB",
        wb / bytes,
        bytes / reqs.len() as f64 / 1024.0
    );
    let mut hours = [0u64; 24];
    for r in &reqs {
        hours[((r.time % DAY) / HOUR) as usize] += 1;
    }
    println!("by hour {hours:?}");
    let gaps: Vec<u64> = reqs.windows(2).map(|w| w[1].time - w[0].time).collect();
    let short = gaps.iter().filter(|&&g| g < 1_000_000).count() as f64 / gaps.len() as f64;
    println!("gaps under 1ms: {short:.3}");
}

#[test]
fn desktop_is_deterministic_streams_in_batches_and_depends_on_its_seed() {
    let a = gen(SMALL);
    assert_eq!(a.len(), 60_000);
    assert_eq!(a, gen(SMALL));
    assert_ne!(a, gen(&SMALL.replace("seed=5", "seed=6")));
    let mut r = open(SMALL).unwrap();
    assert_eq!(r.unit(), Unit::Bytes);
    let (mut got, mut batch) = (Vec::new(), Vec::new());
    while r.read_batch(&mut batch, 333).unwrap() > 0 {
        got.extend_from_slice(&batch);
    }
    assert_eq!(got, a);
    // defaults: 10 days of 200k requests
    assert_eq!(Generator::new("desktop").unwrap().remaining(), 2_000_000);
    assert_eq!(Generator::new("desktop(days=3,per_day=1k)").unwrap().remaining(), 3000);
}

#[test]
fn desktop_write_share_matches_its_parameter() {
    for write in [0.25, 0.30, 0.35] {
        let reqs = gen(&format!("desktop(days=2,per_day=50k,write={write},seed=9)"));
        let by_count = frac(&reqs, |r| r.op == Op::Write);
        let bytes: f64 = reqs.iter().map(|r| r.len as f64).sum();
        let by_bytes = reqs.iter().filter(|r| r.op == Op::Write).map(|r| r.len as f64).sum::<f64>() / bytes;
        assert!((by_count - write).abs() < 0.02, "write={write}: {by_count} of requests");
        assert!((by_bytes - write).abs() < 0.02, "write={write}: {by_bytes} of bytes");
    }
    assert!(gen(&with(SMALL, "write=0")).iter().all(|r| r.op == Op::Read));
    assert!(gen(&with(SMALL, "write=100%")).iter().all(|r| r.op == Op::Write));
}

#[test]
fn desktop_requests_stay_on_their_disks_in_whole_blocks() {
    let disk = 256u64 << 20;
    let reqs = gen("desktop(days=2,per_day=20k,disk=256MiB,hot=16MiB,devices=3,file=1MiB,cold=30%,seed=2)");
    for r in &reqs {
        assert!(r.dev < 3 && r.addr + r.len as u64 <= disk, "{r:?} outside the 256MiB disks");
        assert!(r.addr % 4096 == 0 && r.len % 4096 == 0 && r.len > 0 && r.len <= 1 << 20, "{r:?}");
    }
    for dev in 0..3 {
        assert!((frac(&reqs, |r| r.dev == dev) - 1.0 / 3.0).abs() < 0.1, "device {dev}");
    }
    // a working set as large as the disk (its extents may overlap) and a one-block disk
    assert!(gen("desktop(days=1,per_day=5k,disk=8MiB,hot=8MiB)").iter().all(|r| r.addr + r.len as u64 <= 8 << 20));
    let reqs = gen("desktop(days=1,per_day=1k,disk=4KiB,hot=4KiB)");
    assert!(reqs.iter().all(|r| r.addr == 0 && r.len == 4096));
}

#[test]
fn desktop_days_busy_hours_and_idle_nights() {
    let reqs = gen("desktop(days=4,per_day=50k,seed=3)");
    assert!(reqs.windows(2).all(|w| w[0].time <= w[1].time), "arrival times go back");
    // exactly per_day requests on each of the 4 days, and none on a fifth
    let mut per_day = [0u64; 5];
    let mut per_hour = [0u64; 24];
    for r in &reqs {
        per_day[(r.time / DAY) as usize] += 1;
        per_hour[((r.time % DAY) / HOUR) as usize] += 1;
    }
    assert_eq!(per_day, [50_000, 50_000, 50_000, 50_000, 0]);
    // idle nights: nothing 23:00-7:00; the first request after 7:00 of day 0, the last before 23:00 of day 3
    for h in (0..7).chain([23]) {
        assert_eq!(per_hour[h], 0, "requests at {h}:00");
    }
    assert!(reqs[0].time >= 7 * HOUR && reqs.last().unwrap().time < 3 * DAY + 23 * HOUR);
    // the profile: 9:00-18:00 carry 79 of its 96 weights; the two 10-weight hours alike
    let busy = per_hour[9..18].iter().sum::<u64>() as f64 / reqs.len() as f64;
    assert!((busy - 79.0 / 96.0).abs() < 0.02, "busy share {busy}");
    assert!((per_hour[10] as f64 / per_hour[22] as f64 / 10.0 - 1.0).abs() < 0.15, "{per_hour:?}");
    // bursts: requests come in clusters, so most gaps are far below the mean gap
    let gaps: Vec<u64> = reqs.windows(2).map(|w| w[1].time - w[0].time).collect();
    assert!(gaps.iter().filter(|&&g| g < 1_000_000).count() as f64 / gaps.len() as f64 > 0.4);

    // night=10%: that share of every day in 23:00-7:00
    let reqs = gen("desktop(days=2,per_day=50k,night=10%,seed=3)");
    let night = frac(&reqs, |r| {
        let h = (r.time % DAY) / HOUR;
        !(7..23).contains(&h)
    });
    assert!((night - 0.1).abs() < 0.01, "night share {night}");
    assert!(reqs.iter().all(|r| r.time < 2 * DAY) && reqs.windows(2).all(|w| w[0].time <= w[1].time));
}

#[test]
fn desktop_working_set_drifts_by_drift_a_day() {
    // no cold data, whole extents read sequentially, a flat popularity: every day touches
    // (nearly) all of the working set, so day-to-day overlap shows the drift alone
    let overlaps = |drift: &str| -> Vec<f64> {
        let reqs = gen(&format!(
            "desktop(days=4,per_day=20k,disk=1GiB,hot=64MiB,cold=0,seq=100%,alpha=0.5,drift={drift},seed=5)"
        ));
        let sets = blocks_per_day(&reqs, 4);
        (1..4).map(|d| sets[d].intersection(&sets[d - 1]).count() as f64 / sets[d - 1].len() as f64).collect()
    };
    for o in overlaps("0") {
        assert!(o > 0.99, "drift=0: overlap {o}");
    }
    for (drift, lo, hi) in [(0.1, 0.85, 0.97), (0.2, 0.7, 0.9), (0.5, 0.35, 0.65)] {
        let o = overlaps(&drift.to_string());
        let mean = o.iter().sum::<f64>() / 3.0;
        assert!(o.iter().all(|&x| x < 0.99) && lo < mean && mean < hi, "drift={drift}: overlaps {o:?}");
    }
    // the default mix (Zipf, random and sequential I/O): drift still shows
    let mean_overlap = |drift: &str| {
        let reqs = gen(&format!("desktop(days=3,per_day=20k,disk=1GiB,hot=64MiB,cold=0,drift={drift},seed=5)"));
        let sets = blocks_per_day(&reqs, 3);
        (1..3).map(|d| sets[d].intersection(&sets[d - 1]).count() as f64 / sets[d - 1].len() as f64).sum::<f64>() / 2.0
    };
    let (still, drifting) = (mean_overlap("0"), mean_overlap("30%"));
    assert!(still > 0.9 && drifting < still - 0.15, "overlap {still} without drift, {drifting} with 30%");
}

#[test]
fn desktop_request_sizes() {
    let reqs = gen("desktop(days=2,per_day=50k,seed=4)");
    assert!(reqs.iter().all(|r| r.len % 4096 == 0 && r.len <= 1 << 20));
    let small = frac(&reqs, |r| r.len == 4096);
    let mid = frac(&reqs, |r| (8192..=65536).contains(&r.len));
    let large = frac(&reqs, |r| r.len > 65536);
    // 4 KiB dominant, 8-64 KiB common, large requests from sequential runs only
    assert!(
        (0.35..0.6).contains(&small) && (0.25..0.5).contains(&mid) && (0.03..0.15).contains(&large),
        "{small} {mid} {large}"
    );
    // extents longer than every request: random requests follow `size` exactly ...
    let reqs = gen("desktop(days=1,per_day=50k,file=1GiB,seq=0,size=4KiB:70%/64KiB:30%,seed=4)");
    assert!(reqs.iter().all(|r| r.len == 4096 || r.len == 65536));
    assert!((frac(&reqs, |r| r.len == 4096) - 0.7).abs() < 0.01);
    // ... and sequential runs `seq_size`, each request starting where the one before ended
    let reqs = gen("desktop(days=1,per_day=50k,file=1GiB,seq=100%,run=1GiB,seq_size=64KiB/1MiB,seed=4)");
    assert!((frac(&reqs, |r| r.len == 1 << 20) - 0.5).abs() < 0.01);
    assert!(reqs.windows(2).filter(|w| w[1].addr == w[0].addr + w[0].len as u64).count() as f64 / 50e3 > 0.99);
    // small extents cut requests to their length
    let reqs = gen("desktop(days=1,per_day=10k,file=4KiB,hot=1MiB,cold=0,size=64KiB,seq_size=64KiB,seed=4)");
    assert!(frac(&reqs, |r| r.len < 65536) > 0.3);
}

#[test]
fn desktop_rejects_bad_parameters() {
    for (spec, what) in [
        ("desktop(days=0)", "days=0"),
        ("desktop(per_day=0)", "per_day=0"),
        ("desktop(write=130%)", "write=130%"),
        ("desktop(drift=-1)", "drift=-1"),
        ("desktop(disk=100GiB,hot=200GiB)", "larger than"),
        ("desktop(disk=1000)", "4KiB block"),
        ("desktop(hot=2TiB,disk=4TiB)", "at most 1TiB"),
        ("desktop(size=6KiB)", "whole 4KiB blocks"),
        ("desktop(seq_size=4KiB..6KiB)", "whole 4KiB blocks"),
        ("desktop(alpha=-0.5)", "alpha=-0.5"),
        ("desktop(gap=soon)", "gap=soon"),
        ("desktop(devices=0)", "devices=0"),
        ("desktop(days=1000000)", "too many days"),
        ("desktop(requests=1M)", "no parameter \"requests\""),
        ("desktop(iat=1ms)", "no parameter \"iat\""),
        ("mix(desktop,zipf)", "cannot be a component of mix"),
    ] {
        let e = err(spec);
        assert!(e.contains(what), "{spec}: {e}");
    }
}

/// `fin`: reads keep to their population except the share `rw` on the write
/// population; writes keep to theirs except the share `update` that rewrites
/// the page just read; the mix of ops is `read`.
#[test]
fn fin_populations_and_their_overlap() {
    let reqs = gen("fin(wkeys=1000,rkeys=3000,rw=30%,update=20%,read=60%,requests=200k,seed=7)");
    let is_w = |r: &Request| r.addr < 1000;
    assert!(reqs.iter().all(|r| r.addr < 4000 && r.len == 1));
    let reads: Vec<Request> = reqs.iter().filter(|r| r.op == Op::Read).cloned().collect();
    assert!((reads.len() as f64 / reqs.len() as f64 - 0.6).abs() < 0.01);
    assert!((frac(&reads, is_w) - 0.30).abs() < 0.01, "{}", frac(&reads, is_w));
    // writes off the write population are exactly rewrites of the last read
    let (mut last_read, mut off, mut rewrites, mut writes) = (None, 0, 0, 0);
    for r in &reqs {
        if r.op == Op::Read {
            last_read = Some(r.addr);
            continue;
        }
        writes += 1;
        rewrites += (Some(r.addr) == last_read) as u32;
        if !is_w(r) {
            off += 1;
            assert_eq!(Some(r.addr), last_read);
        }
    }
    // a rewrite of a write-population page can also be an ordinary draw: ≥ 20 %, barely
    let share = rewrites as f64 / writes as f64;
    assert!((0.2..0.22).contains(&share), "{share}");
    assert!(off > 0);
    // rw = update = 0: disjoint; rw = 100 %: reads only what is written
    let reqs = gen("fin(wkeys=500,rkeys=500,rw=0,update=0,read=50%,requests=20k)");
    assert!(reqs.iter().all(|r| (r.op == Op::Write) == (r.addr < 500)));
    let reqs = gen("fin(wkeys=500,rkeys=500,rw=100%,read=50%,requests=20k)");
    assert!(reqs.iter().all(|r| r.addr < 500));
    // each population is Zipf: its hottest key takes 1/H(n) of its draws
    let reqs = gen("fin(wkeys=100,rkeys=100,rw=0,update=0,read=0,requests=200k,alpha=1)");
    let mut counts = [0u32; 100];
    reqs.iter().for_each(|r| counts[r.addr as usize] += 1);
    let h: f64 = (1..=100).map(|k| 1.0 / k as f64).sum();
    let top = *counts.iter().max().unwrap() as f64 / reqs.len() as f64;
    assert!((top - 1.0 / h).abs() < 0.01, "{top}");
    // bytes: key k starts at k × align
    let reqs = gen("fin(wkeys=10,rkeys=10,size=8KiB,align=8KiB,requests=1000)");
    assert!(reqs.iter().all(|r| r.addr % 8192 == 0 && r.addr < 20 * 8192 && r.len == 8192));
    assert!(err("fin(rw=150%)").contains("rw"));
    assert!(err("fin(wkeys=0)").contains("wkeys"));
}
